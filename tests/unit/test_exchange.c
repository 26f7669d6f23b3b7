/*
 * test_exchange.c - the exchange of lib/support/exchange.h and the
 * collectives built on it (lib/runtime/collective_exec.c, coll_run_host):
 * the threads' transport moves what each member sends to each, refuses
 * members that disagree about sizes; every collective kind on 3 devices
 * (uneven chunks, dimensions with something before them, several
 * operands) gives the interpreter's results, all-reduce bit for bit its
 * left-to-right fold; a collective the platform takes (coll_takes: NCCL)
 * goes to its coll_run once the group's members have met, and the id its
 * communicator needs goes through the exchange (coll_group_share); the
 * launcher is found in the environment; a missing libmpi is a message; and
 * mpi_min.h is OpenMPI's ABI (checked against mpi.h where libopenmpi-dev
 * is).
 */
#include <criterion/criterion.h>

#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "../../lib/eval/eval.h"
#include "../../lib/runtime/collective_exec.h"
#include "../../lib/support/exchange.h"
#include "../../lib/support/mpi_min.h"

#ifdef XHLO_HAVE_MPI_H
#include <mpi.h>
_Static_assert(sizeof(XMPI_Status) == sizeof(MPI_Status), "status");
_Static_assert(offsetof(XMPI_Status, MPI_SOURCE) == offsetof(MPI_Status, MPI_SOURCE), "src");
_Static_assert(offsetof(XMPI_Status, MPI_TAG) == offsetof(MPI_Status, MPI_TAG), "tag");
_Static_assert(offsetof(XMPI_Status, MPI_ERROR) == offsetof(MPI_Status, MPI_ERROR), "err");
_Static_assert(sizeof(XMPI_Comm) == sizeof(MPI_Comm) && sizeof(XMPI_Request) == sizeof(MPI_Request),
               "handles");
_Static_assert(XMPI_SUCCESS == MPI_SUCCESS && XMPI_ANY_SOURCE == MPI_ANY_SOURCE &&
               XMPI_ANY_TAG == MPI_ANY_TAG, "constants");
_Static_assert(XMPI_MAX_ERROR_STRING >= MPI_MAX_ERROR_STRING, "error string");
_Static_assert(XMPI_THREAD_SERIALIZED == MPI_THREAD_SERIALIZED, "thread level");
/* the functions' types, as mpi.h declares them (typeof: no reference to
 * libmpi, which the test does not link) */
#define SAME(fn, xfn) __builtin_types_compatible_p(__typeof__(&fn), xfn)
#define MPI_TYPES_OK                                                          \
  (SAME(MPI_Init_thread, XMPI_Init_thread_fn) &&                              \
   SAME(MPI_Initialized, XMPI_Initialized_fn) &&                              \
   SAME(MPI_Finalize, XMPI_Finalize_fn) &&                                     \
   SAME(MPI_Comm_rank, XMPI_Comm_rank_fn) && SAME(MPI_Comm_size, XMPI_Comm_size_fn) && \
   SAME(MPI_Cancel, XMPI_Cancel_fn) && SAME(MPI_Request_free, XMPI_Request_free_fn) && \
   SAME(MPI_Error_string, XMPI_Error_string_fn))
/* the handle types differ only in their names (MPI_Comm vs XMPI_Comm are
 * the same struct pointers); these take them */
_Static_assert(__builtin_types_compatible_p(MPI_Comm, XMPI_Comm) &&
               __builtin_types_compatible_p(MPI_Datatype, XMPI_Datatype) &&
               __builtin_types_compatible_p(MPI_Request, XMPI_Request) &&
               __builtin_types_compatible_p(MPI_Op, XMPI_Op) &&
               __builtin_types_compatible_p(MPI_Errhandler, XMPI_Errhandler), "handles");
_Static_assert(SAME(MPI_Isend, XMPI_Isend_fn) && SAME(MPI_Irecv, XMPI_Irecv_fn) &&
               SAME(MPI_Allreduce, XMPI_Allreduce_fn), "messages");
/* those taking a status: XMPI_Status is laid out as MPI_Status (above) */
_Static_assert(SAME(MPI_Test, int (*)(MPI_Request *, int *, MPI_Status *)) &&
               SAME(MPI_Iprobe, int (*)(int, int, MPI_Comm, int *, MPI_Status *)) &&
               SAME(MPI_Get_count, int (*)(const MPI_Status *, MPI_Datatype, int *)),
               "status functions");
_Static_assert(MPI_TYPES_OK, "functions");
/* the predefined handles are the addresses of these objects */
_Static_assert(__builtin_types_compatible_p(__typeof__(MPI_COMM_WORLD), MPI_Comm), "world");
#endif

Test(exchange, mpi_min_matches_mpi_h) {
#ifndef XHLO_HAVE_MPI_H
  cr_assert_fail("OpenMPI's mpi.h (libopenmpi-dev) is missing, so mpi_min.h is "
                 "unchecked: run scripts/setup.sh");
#endif
}

Test(exchange, launcher_from_environment) {
  int rank = -1, size = -1;
  unsetenv("OMPI_COMM_WORLD_RANK");
  unsetenv("OMPI_COMM_WORLD_SIZE");
  unsetenv("PMI_RANK");
  unsetenv("PMI_SIZE");
  cr_assert(!xchg_launched(&rank, &size));
  setenv("PMI_RANK", "2", 1);
  setenv("PMI_SIZE", "4", 1);
  cr_assert(xchg_launched(&rank, &size));
  cr_assert_eq(rank, 2);
  cr_assert_eq(size, 4);
  setenv("OMPI_COMM_WORLD_RANK", "1", 1);
  setenv("OMPI_COMM_WORLD_SIZE", "3", 1);
  cr_assert(xchg_launched(&rank, &size));
  cr_assert_eq(rank, 1);
  cr_assert_eq(size, 3);
  setenv("OMPI_COMM_WORLD_SIZE", "x", 1);
  unsetenv("PMI_RANK");
  cr_assert(!xchg_launched(&rank, &size));
}

Test(exchange, missing_libmpi_is_a_message) {
  setenv("XHLO_MPI_LIB", "/nonexistent/libmpi.so", 1);
  char why[512] = "";
  cr_assert_null(xchg_mpi_new(why, sizeof why));
  cr_assert(strstr(why, "cannot load OpenMPI's /nonexistent/libmpi.so"), "%s", why);
  cr_assert(strstr(why, "scripts/setup.sh"), "%s", why);
}

/* ---- the threads' transport ---------------------------------------- */

#define N 3
static const int64_t members[N] = {0, 1, 2};

typedef struct Arg {
  Exchange *x;
  int me;
  bool ok;
  char why[256];
  int skew;                        /* member 1 expects this many bytes more */
  uint8_t got[N][8];
} Arg;

static void *member(void *p) {
  Arg *a = p;
  uint8_t out[N][8];
  const void *send[N];
  void *recv[N];
  size_t sb[N], rb[N];
  for (int j = 0; j < N; j++) {
    for (int b = 0; b < 8; b++) out[j][b] = (uint8_t)(a->me * 16 + j * 4 + b);
    send[j] = out[j];
    recv[j] = a->got[j];
    sb[j] = (size_t)(j + 1);       /* member j gets j+1 bytes from each */
    rb[j] = (size_t)(a->me + 1) + (a->me == 1 ? (size_t)a->skew : 0);
  }
  XchgGroup g = {.key = members, .name = "x", .members = members, .n = N, .me = a->me};
  a->ok = a->x->exchange(a->x, &g, send, sb, recv, rb, a->why, sizeof a->why);
  a->x->end(a->x, a->me, !a->ok, a->why);
  return NULL;
}

static void run_members(Arg *a, int skew) {
  Exchange *x = xchg_threads_new(N);
  pthread_t t[N];
  for (int k = 0; k < N; k++) {
    memset(&a[k], 0, sizeof a[k]);
    a[k].x = x;
    a[k].me = k;
    a[k].skew = skew;
    pthread_create(&t[k], NULL, member, &a[k]);
  }
  for (int k = 0; k < N; k++) pthread_join(t[k], NULL);
  xchg_free(x);
}

Test(exchange, threads_move_each_members_bytes) {
  Arg a[N];
  run_members(a, 0);
  for (int me = 0; me < N; me++) {
    cr_assert(a[me].ok, "%s", a[me].why);
    for (int j = 0; j < N; j++)
      for (int b = 0; b <= me; b++)
        cr_assert_eq(a[me].got[j][b], j * 16 + me * 4 + b);
  }
}

Test(exchange, threads_refuse_disagreeing_sizes) {
  Arg a[N];
  run_members(a, 2);
  cr_assert(!a[1].ok);
  cr_assert(strstr(a[1].why, "device 0 sends 2 bytes to device 1, which expects 4"), "%s",
            a[1].why);
}

/* ---- collectives on host buffers ----------------------------------- */

typedef struct Coll {
  Thunk t;
  CollDesc c;
  BufSlice sl[8];
  char *in_shape[4], *out_shape[4];
  CollExec *x;
  Arena *a;
} Coll;

/* A collective of kind k over all N replicas, n operands of shape in and
 * results of shape out. */
static Coll *make(CollKind k, int n, const char *in, const char *out, int64_t dim) {
  Coll *c = calloc(1, sizeof *c);
  c->a = arena_new();
  c->t.kind = THUNK_COLLECTIVE;
  c->t.annotation = "c";
  c->t.coll = &c->c;
  c->c.kind = k;
  c->c.dim = dim;
  c->c.channel_id = -1;
  c->c.mode = CGM_CROSS_REPLICA;
  c->c.replica_count = N;
  c->c.num_partitions = 1;
  c->c.n = n;
  c->c.in = c->sl;
  c->c.out = c->sl + 4;
  c->c.in_shape = c->in_shape;
  c->c.out_shape = c->out_shape;
  Diag d = {0};
  for (int j = 0; j < n; j++) {
    c->in_shape[j] = (char *)in;
    c->out_shape[j] = (char *)out;
    c->sl[j].size = shape_byte_size(hlo_parse_shape(c->a, in, &d));
    c->sl[4 + j].size = shape_byte_size(hlo_parse_shape(c->a, out, &d));
  }
  c->x = coll_prepare(c->a, &c->t, NULL, &d);
  cr_assert_not_null(c->x, "%s", d.msg ? d.msg : "");
  return c;
}

static void coll_done(Coll *c) {
  coll_free(c->x);
  arena_free(c->a);
  free(c);
}

typedef struct Dev {
  Coll *c;
  CollExec *cx;                    /* this device's, from the shared thunk */
  Exchange *x;
  int me;
  uint8_t *in[4], *out[4];
  bool ok;
  Diag d;
} Dev;

static void *dev_main(void *p) {
  Dev *v = p;
  v->ok = coll_run_host(v->cx, v->x, v->me, 0, v->in, v->out, &v->d);
  v->x->end(v->x, v->me, !v->ok, v->d.msg);
  return NULL;
}

/* Runs c on N threads; in[me][k] operand k of member me (nin bytes each,
 * side by side when contiguous), results into out[me][k]. */
static void run(Coll *c, float *in[N][4], float *out[N][4]) {
  Exchange *x = xchg_threads_new(N);
  Dev v[N];
  pthread_t t[N];
  for (int me = 0; me < N; me++) {
    Diag d = {0};
    v[me] = (Dev){.c = c, .x = x, .me = me, .cx = coll_prepare(c->a, &c->t, NULL, &d)};
    cr_assert_not_null(v[me].cx, "%s", d.msg ? d.msg : "");
    for (int k = 0; k < c->c.n; k++) {
      v[me].in[k] = (uint8_t *)in[me][k];
      v[me].out[k] = (uint8_t *)out[me][k];
    }
    pthread_create(&t[me], NULL, dev_main, &v[me]);
  }
  for (int me = 0; me < N; me++) pthread_join(t[me], NULL);
  for (int me = 0; me < N; me++) {
    cr_assert(v[me].ok, "device %d: %s", me, v[me].d.msg ? v[me].d.msg : "");
    diag_clear(&v[me].d);
    coll_free(v[me].cx);
  }
  xchg_free(x);
}

static float val(int me, int k, int e) {
  /* values whose sums round differently in different orders */
  return (float)((me + 1) * 0.1 + e * 1e-7 + k * 1000.0) * (me == 1 ? 1e8f : 1.0f);
}

Test(collectives, all_reduce_is_the_left_to_right_fold) {
  /* 10 elements in 3 chunks: 3, 3, 4; two operands side by side: one flat
   * all-reduce; then the same two apart: one each */
  for (int apart = 0; apart < 2; apart++) {
    Coll *c = make(COLL_ALL_REDUCE, 2, "f32[10]", "f32[10]", -1);
    float buf[N][2][2][12], *in[N][4], *out[N][4];
    for (int me = 0; me < N; me++)
      for (int k = 0; k < 2; k++) {
        in[me][k] = apart ? buf[me][0][k] : buf[me][0][0] + 10 * k;
        out[me][k] = apart ? buf[me][1][k] : buf[me][1][0] + 10 * k;
        for (int e = 0; e < 10; e++) in[me][k][e] = val(me, k, e);
      }
    run(c, in, out);
    for (int me = 0; me < N; me++)
      for (int k = 0; k < 2; k++)
        for (int e = 0; e < 10; e++) {
          float want = val(0, k, e);
          want += val(1, k, e);
          want += val(2, k, e);
          cr_assert(memcmp(&out[me][k][e], &want, 4) == 0, "%g %g", out[me][k][e], want);
        }
    coll_done(c);
  }
}

Test(collectives, reduce_scatter_all_gather_all_to_all) {
  /* f32[2,6] along dimension 1: two outer rows, chunks of 2 */
  float ins[N][12], outs[N][12], *in[N][4], *out[N][4];
  for (int me = 0; me < N; me++) {
    for (int e = 0; e < 12; e++) ins[me][e] = (float)(me * 100 + e);
    in[me][0] = ins[me];
    out[me][0] = outs[me];
  }
  Coll *c = make(COLL_REDUCE_SCATTER, 1, "f32[2,6]", "f32[2,2]", 1);
  c->c.reduction = COLL_MAX;
  run(c, in, out);
  for (int me = 0; me < N; me++)
    for (int o = 0; o < 2; o++)
      for (int e = 0; e < 2; e++)
        cr_assert_eq(outs[me][o * 2 + e], 200 + o * 6 + me * 2 + e);
  coll_done(c);

  float big[N][36], *bout[N][4];
  for (int me = 0; me < N; me++) bout[me][0] = big[me];
  c = make(COLL_ALL_GATHER, 1, "f32[2,6]", "f32[2,18]", 1);
  run(c, in, bout);
  for (int me = 0; me < N; me++)
    for (int o = 0; o < 2; o++)
      for (int m = 0; m < N; m++)
        for (int e = 0; e < 6; e++) cr_assert_eq(big[me][o * 18 + m * 6 + e], m * 100 + o * 6 + e);
  coll_done(c);

  c = make(COLL_ALL_TO_ALL, 1, "f32[2,6]", "f32[2,6]", 1);
  run(c, in, out);
  for (int me = 0; me < N; me++)
    for (int o = 0; o < 2; o++)
      for (int m = 0; m < N; m++)
        for (int e = 0; e < 2; e++)
          cr_assert_eq(outs[me][o * 6 + m * 2 + e], m * 100 + o * 6 + me * 2 + e);
  coll_done(c);
}

Test(collectives, permute_broadcast_tuple_all_to_all) {
  float ins[N][3][2], outs[N][3][2], *in[N][4], *out[N][4];
  for (int me = 0; me < N; me++)
    for (int k = 0; k < 3; k++) {
      ins[me][k][0] = (float)(me * 10 + k);
      ins[me][k][1] = -1;
      in[me][k] = ins[me][k];
      out[me][k] = outs[me][k];
    }
  /* 0 -> 2, 2 -> 1: device 0 gets zeros */
  int64_t pairs[2][2] = {{0, 2}, {2, 1}};
  Coll *c = make(COLL_COLLECTIVE_PERMUTE, 1, "f32[2]", "f32[2]", -1);
  c->c.npairs = 2;
  c->c.pairs = pairs;
  run(c, in, out);
  cr_assert_eq(outs[0][0][0], 0);
  cr_assert_eq(outs[1][0][0], 20);
  cr_assert_eq(outs[2][0][0], 0 + 0);
  cr_assert_eq(outs[2][0][1], -1);
  coll_done(c);

  c = make(COLL_COLLECTIVE_BROADCAST, 1, "f32[2]", "f32[2]", -1);
  run(c, in, out);
  for (int me = 0; me < N; me++) cr_assert_eq(outs[me][0][0], 0);
  coll_done(c);

  c = make(COLL_ALL_TO_ALL, 3, "f32[2]", "f32[2]", -1);
  run(c, in, out);
  for (int me = 0; me < N; me++)
    for (int j = 0; j < N; j++) cr_assert_eq(outs[me][j][0], j * 10 + me);
  coll_done(c);
}

/* A device alone in its group whose all-gather result is S times its
 * operand (XLA's verifier takes any S for a group of one): the operand in
 * slot 0 of each row, zeros in the others, as the interpreter gives. */
Test(collectives, all_gather_alone_pads_with_zeros) {
  Coll *c = make(COLL_ALL_GATHER, 1, "f32[2,2]", "f32[2,6]", 1);
  int64_t a0[1] = {0}, a1[1] = {1}, a2[1] = {2}, *groups[3] = {a0, a1, a2};
  int64_t sizes[3] = {1, 1, 1};
  c->c.ngroups = 3;
  c->c.groups = groups;
  c->c.group_sizes = sizes;
  float in[4] = {1, 2, 3, 4}, out[12];
  memset(out, 0x5a, sizeof out);
  uint8_t *ip[1] = {(uint8_t *)in}, *op[1] = {(uint8_t *)out};
  Diag d = {0};
  cr_assert(coll_run_host(c->x, NULL, 1, 0, ip, op, &d), "%s", d.msg ? d.msg : "");
  const float want[12] = {1, 2, 0, 0, 0, 0, 3, 4, 0, 0, 0, 0};
  for (int k = 0; k < 12; k++) cr_assert_eq(out[k], want[k], "element %d", k);
  coll_done(c);
}

/* ---- a platform's own collectives (NCCL on CUDA) ------------------ */

/* What the platform's coll_run saw, per device (flattened id). */
static struct Seen {
  pthread_mutex_t mu;
  int calls, n[N], me[N];
  DevPtr in[N], out[N];
  uint8_t id[N][8];
} seen = {.mu = PTHREAD_MUTEX_INITIALIZER};

static bool fake_takes(Platform *p, const CollExec *x) { return true; }

/* Records the group and shares an id from its first member, as NCCL's
 * communicators are made. */
static bool fake_run(Platform *p, CollExec *x, const CollGroup *g, const DevPtr *in,
                     const DevPtr *out, Diag *d) {
  uint8_t id[8];
  for (int k = 0; k < 8; k++) id[k] = g->me == 0 ? (uint8_t)(0x40 + k + g->self) : 0;
  bool ok = coll_group_share(g, id, sizeof id, d);
  pthread_mutex_lock(&seen.mu);
  seen.calls++;
  seen.n[g->self] = g->n;
  seen.me[g->self] = g->me;
  seen.in[g->self] = in[0];
  seen.out[g->self] = out[0];
  memcpy(seen.id[g->self], id, sizeof id);
  pthread_mutex_unlock(&seen.mu);
  return ok;
}

static Platform *fake_platform(void) {
  Diag d = {0};
  Platform *p = platform_host_new(NULL, &d);
  cr_assert_not_null(p, "%s", d.msg ? d.msg : "");
  p->coll_takes = fake_takes;
  p->coll_run = fake_run;
  return p;
}

typedef struct OnDev {
  Coll *c;
  Exchange *x;
  int me;
  bool ok;
  char msg[256];
} OnDev;

static void *on_device_main(void *arg) {
  OnDev *v = arg;
  Platform *p = fake_platform();
  Diag d = {0};
  CollExec *x = coll_prepare(v->c->a, &v->c->t, p, &d);
  DevPtr i = 0x1000 + (DevPtr)v->me, o = 0x2000 + (DevPtr)v->me;
  v->ok = x && x->on_device && coll_run(x, p, v->x, v->me, 0, &i, &o, &d);
  snprintf(v->msg, sizeof v->msg, "%s", d.msg ? d.msg : "");
  v->x->end(v->x, v->me, !v->ok, d.msg);
  coll_free(x);
  diag_clear(&d);
  platform_free(p);
  return NULL;
}

Test(collectives, platform_runs_what_it_takes) {
  /* three devices meet through the exchange, then each calls the
   * platform, which shares member 0's id through it */
  Coll *c = make(COLL_ALL_REDUCE, 1, "f32[4]", "f32[4]", -1);
  int64_t g0[3] = {2, 0, 1}, *groups[1] = {g0}, sizes[1] = {3};
  c->c.ngroups = 1;
  c->c.groups = groups;
  c->c.group_sizes = sizes;
  Exchange *x = xchg_threads_new(N);
  OnDev v[N];
  pthread_t t[N];
  seen.calls = 0;
  for (int me = 0; me < N; me++) {
    v[me] = (OnDev){.c = c, .x = x, .me = me};
    pthread_create(&t[me], NULL, on_device_main, &v[me]);
  }
  for (int me = 0; me < N; me++) pthread_join(t[me], NULL);
  xchg_free(x);
  cr_assert_eq(seen.calls, N);
  for (int me = 0; me < N; me++) {
    cr_assert(v[me].ok, "device %d: %s", me, v[me].msg);
    cr_assert_eq(seen.n[me], N);
    cr_assert_eq(seen.me[me], me == 2 ? 0 : me + 1, "device %d's place in its group", me);
    cr_assert_eq(seen.in[me], 0x1000 + (DevPtr)me);
    cr_assert_eq(seen.out[me], 0x2000 + (DevPtr)me);
    for (int k = 0; k < 8; k++)
      cr_assert_eq(seen.id[me][k], 0x40 + k + 2, "device %d has device 2's id", me);
  }

  /* alone, a group of three cannot meet: no call */
  Platform *p = fake_platform();
  Diag d = {0};
  CollExec *cx = coll_prepare(c->a, &c->t, p, &d);
  cr_assert(cx && cx->on_device);
  DevPtr i = 1, o = 2;
  seen.calls = 0;
  cr_assert(!coll_run(cx, p, NULL, 0, 0, &i, &o, &d));
  cr_assert(d.msg && strstr(d.msg, "3 devices take part but the run has only this one"), "%s",
            d.msg ? d.msg : "");
  cr_assert_eq(seen.calls, 0);
  diag_clear(&d);
  coll_free(cx);
  /* a group of one goes to the platform too, with nobody to meet */
  int64_t a1[1] = {1}, a0[1] = {0}, a2[1] = {2}, *groups1[3] = {a1, a0, a2};
  int64_t sizes1[3] = {1, 1, 1};
  c->c.ngroups = 3;
  c->c.groups = groups1;
  c->c.group_sizes = sizes1;
  cx = coll_prepare(c->a, &c->t, p, &d);
  cr_assert(coll_run(cx, p, NULL, 1, 0, &i, &o, &d), "%s", d.msg ? d.msg : "");
  cr_assert_eq(seen.calls, 1);
  cr_assert_eq(seen.n[1], 1);
  cr_assert_eq(seen.me[1], 0);
  coll_free(cx);
  platform_free(p);
  coll_done(c);
}

/* ---- member 0's bytes to all (an NCCL unique id, say) ---------------- */

typedef struct Bc {
  Exchange *x;
  int me;
  bool ok;
  char why[256];
  uint8_t id[128];
} Bc;

static void *bcast_member(void *p) {
  Bc *b = p;
  for (int k = 0; k < 128; k++) b->id[k] = b->me == 0 ? (uint8_t)(k * 7 + 1) : 0;
  XchgGroup g = {.key = members, .name = "id", .members = members, .n = N, .me = b->me};
  b->ok = xchg_bcast(b->x, &g, b->id, sizeof b->id, b->why, sizeof b->why);
  b->x->end(b->x, b->me, !b->ok, b->why);
  return NULL;
}

Test(exchange, bcast_carries_member_0s_bytes) {
  Exchange *x = xchg_threads_new(N);
  Bc b[N];
  pthread_t t[N];
  for (int k = 0; k < N; k++) {
    b[k] = (Bc){.x = x, .me = k};
    pthread_create(&t[k], NULL, bcast_member, &b[k]);
  }
  for (int k = 0; k < N; k++) pthread_join(t[k], NULL);
  for (int k = 0; k < N; k++) {
    cr_assert(b[k].ok, "%s", b[k].why);
    for (int j = 0; j < 128; j++) cr_assert_eq(b[k].id[j], (uint8_t)(j * 7 + 1));
  }
  xchg_free(x);
}

/* ---- background threads of a device (asynchronous collectives) ------- */

#include <unistd.h>

static const int64_t pair[2] = {0, 1};

typedef struct Bg {
  Exchange *x;
  void *waiter;
  const char *name;
  const void *key;
  bool ok;
  char why[256];
} Bg;

/* One exchange of a byte between devices 0 and 1, as device `me`. */
static bool swap_byte(Exchange *x, const void *key, const char *name, int me, void *bg,
                      char *why, size_t nwhy) {
  uint8_t out[2] = {(uint8_t)me, (uint8_t)me}, in[2] = {9, 9};
  const void *send[2] = {&out[0], &out[1]};
  void *recv[2] = {&in[0], &in[1]};
  size_t one[2] = {1, 1};
  XchgGroup g = {.key = key, .name = name, .members = pair, .n = 2, .me = me, .bg = bg};
  if (!x->exchange(x, &g, send, one, recv, one, why, nwhy)) return false;
  return in[0] == 0 && in[1] == 1;
}

static void *bg_main(void *p) {
  Bg *b = p;
  b->ok = swap_byte(b->x, b->key, b->name, 0, b->waiter, b->why, sizeof b->why);
  b->x->waiter_done(b->x, b->waiter);
  return NULL;
}

typedef struct Dev1 {
  Exchange *x;
  bool run_a;                      /* false: it ends without collective a */
  bool ok;
  char why[256];
} Dev1;

static const char key_a[] = "a", key_b[] = "b";

static void *dev1_main(void *p) {
  Dev1 *v = p;
  usleep(50000);                   /* device 0 waits meanwhile */
  v->ok = !v->run_a || (swap_byte(v->x, key_a, "a", 1, NULL, v->why, sizeof v->why) &&
                        swap_byte(v->x, key_b, "b", 1, NULL, v->why, sizeof v->why));
  v->x->end(v->x, 1, !v->ok, v->why);
  return NULL;
}

/* Device 0 starts collective a in the background, then meets device 1 in
 * b on its own thread, then waits for a; device 1 (later) runs a then b.
 * With run_a false device 1 ends at once: device 0 must fail, not hang. */
static void run_background(bool run_a, bool *ok0, char *why0, size_t n) {
  Exchange *x = xchg_threads_new(2);
  Bg b = {.x = x, .key = key_a, .name = "a"};
  b.waiter = x->waiter_new(x, 0);
  Dev1 v = {.x = x, .run_a = run_a};
  pthread_t tb, t1;
  pthread_create(&tb, NULL, bg_main, &b);
  pthread_create(&t1, NULL, dev1_main, &v);
  bool ok = true;
  if (run_a) ok = swap_byte(x, key_b, "b", 0, NULL, why0, n);
  x->waiter_await(x, b.waiter);
  pthread_join(tb, NULL);
  if (ok && !b.ok) {
    ok = false;
    snprintf(why0, n, "%s", b.why);
  }
  x->end(x, 0, !ok, why0);
  pthread_join(t1, NULL);
  *ok0 = ok && (!run_a || v.ok);
  xchg_free(x);
}

Test(exchange, background_thread_meets_while_its_device_goes_on) {
  bool ok;
  char why[256] = "";
  run_background(true, &ok, why, sizeof why);
  cr_assert(ok, "%s", why);
}

Test(exchange, background_thread_that_cannot_meet_fails_its_device) {
  bool ok;
  char why[256] = "";
  run_background(false, &ok, why, sizeof why);
  cr_assert_not(ok);
  cr_assert(strstr(why, "the devices ran different collectives") ||
            strstr(why, "only 1 of its 2 devices arrived"), "%s", why);
}
