/*
 * nccl.c - a mock libnccl.so.2 for check-nccl.sh: communicators of the
 * mock libcuda.so.1's GPUs (cuda.c here) and the collectives performed on
 * their memory, which is host memory, with NCCL's semantics as the threads
 * of one process see them.
 *
 * ncclCommInitRank joins the communicator of a unique id as the device
 * current on the calling thread (the mock libcuda says which); it is done
 * when all ranks have joined.  A collective (all-reduce, all-gather,
 * reduce-scatter, broadcast) is the communicator's next in every rank's
 * order: it is done when every rank has called it, the last caller checking
 * that they agree (operation, count, type, operator, root) and that every
 * buffer is its rank's device's memory, and computing every rank's result
 * (reductions folded in rank order; float min and max drop NaN, as NCCL's
 * fminf and fmaxf).  ncclSend and ncclRecv pair up in order between two
 * ranks, and must agree on the size.  A call outside ncclGroupStart /
 * ncclGroupEnd returns when it is done; inside, ncclGroupEnd returns when
 * all the group's are, with the first failure.  (Real NCCL returns once the
 * work is queued on the stream; the results are the same for a caller that
 * waits for the stream.)
 *
 * Every call is logged (mock_log_take) with the device, the rank and its
 * arguments, one line each.  Failures: mock_fail(NAME, STATUS) from a test
 * driver, or MOCK_NCCL_FAIL=NAME:STATUS[:DEVICE] from the environment, makes
 * call NAME return STATUS (on that device's calls only, when given),
 * without taking part, so that the other ranks wait for it.
 * MOCK_NCCL_VERSION=N is ncclGetVersion's number (default 22105).
 * NCCL_DEBUG set prints "NCCL version 2.21.5+mock" when rank 0 joins, and
 * NCCL_DEBUG=INFO with NCCL_DEBUG_SUBSYS naming COLL prints each
 * collective, sends and receives too, as NCCL's INFO lines do.
 *
 * Ranks that are processes (xhlo-run under mpirun, one GPU each):
 * MOCK_NCCL_DIR=DIR makes every communicator's ranks meet through files in
 * DIR, which the caller removes afterwards.  A rank's part of collective
 * SEQ is DIR/ID.cSEQ.RANK (its arguments, then its send buffer; each rank
 * computes its own result from all the parts, checking that they agree),
 * message SEQ from rank S to rank R is DIR/ID.pS-R.SEQ (its receiver
 * removes it), and DIR/ID.jRANK says that a rank joined.  A file is written
 * whole under another name and renamed, so a reader sees all of it or
 * nothing.  Inside a group every part and message is written before any is
 * waited for.  A rank that waits 60 s for another (one that failed, and
 * whose job was not ended) gets ncclRemoteError.  The unique id carries the
 * process id of its maker, so it must reach the other processes through
 * the caller's own channel (MPI), as with real NCCL.
 */
#include <dlfcn.h>
#include <time.h>
#include <unistd.h>

#include "mock_util.h"

typedef int ncclResult_t;
typedef struct {
  char internal[128];
} ncclUniqueId;

enum { OP_INIT, OP_ALLREDUCE, OP_ALLGATHER, OP_REDUCESCATTER, OP_BROADCAST, OP_SEND, OP_RECV };
static const char *const op_names[] = {"Init", "AllReduce", "AllGather", "ReduceScatter",
                                       "Broadcast", "Send", "Recv"};

typedef struct Clique Clique;
typedef struct Comm {
  Clique *q;
  int rank, dev;
  long ncoll;                     /* collectives called */
  long *sent, *received;          /* per peer: sends and receives called */
} Comm;

typedef struct Op {
  struct Op *next;                /* the clique's pending operations */
  struct Op *gnext;               /* the calling thread's group */
  int kind;
  Comm *c;
  long seq;                       /* collective: its place; p2p: the pair's */
  int peer;
  const void *send;
  void *recv;
  size_t count;
  int type, red, root;
  bool done;
  int status;
} Op;

struct Clique {
  Clique *next;
  char id[128];
  int nranks, joined;
  Comm **comms;
  Op *pending;
  bool shared;                    /* ranks meet through files (MOCK_NCCL_DIR) */
};

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static Clique *cliques;
static int live_comms, ids_made;
static char last_error[256];
static __thread int depth;
static __thread Op *group;
static __thread int group_error;  /* a call of the group failed */

MOCK_EXPORT int mock_live_comms(void);
int mock_live_comms(void) { return live_comms; }

/* ---- the mock libcuda's hooks ---- */
static void *cuda_sym(const char *name) {
  void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
  return h ? dlsym(h, name) : NULL;
}
static int current_device(void) {
  int (*fn)(void) = (int (*)(void))cuda_sym("mock_cuda_current_device");
  return fn ? fn() : -1;
}
static int ptr_device(const void *p) {
  int (*fn)(unsigned long long) = (int (*)(unsigned long long))cuda_sym("mock_cuda_ptr_device");
  return fn ? fn((unsigned long long)(uintptr_t)p) : -1;
}

/* ---- failures ---- */
static char env_fail[128];
static int env_fail_status, env_fail_dev = -1;

static void read_env(void) {
  static bool done;
  if (done) return;
  done = true;
  const char *f = getenv("MOCK_NCCL_FAIL");
  if (!f || !strchr(f, ':')) return;
  snprintf(env_fail, sizeof env_fail, "%.*s", (int)(strchr(f, ':') - f), f);
  const char *rest = strchr(f, ':') + 1;
  env_fail_status = atoi(rest);
  if (strchr(rest, ':')) env_fail_dev = atoi(strchr(rest, ':') + 1);
}

/* The injected status of call `name` on device dev; 0: none.  (mu held) */
static int failing(const char *name, int dev) {
  read_env();
  int st = mock_failing(name);
  if (!st && env_fail[0] && strcmp(env_fail, name) == 0 &&
      (env_fail_dev < 0 || env_fail_dev == dev))
    st = env_fail_status;
  if (st) snprintf(last_error, sizeof last_error, "mock: injected failure of %s on device %d",
                   name, dev);
  return st;
}

static ncclResult_t fail_with(int status, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static ncclResult_t fail_with(int status, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(last_error, sizeof last_error, fmt, ap);
  va_end(ap);
  mock_log("error: %s", last_error);
  return status;
}

/* fail_with from a thread that does not hold mu. */
static ncclResult_t fail_unlocked(int status, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static ncclResult_t fail_unlocked(int status, const char *fmt, ...) {
  pthread_mutex_lock(&mu);
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(last_error, sizeof last_error, fmt, ap);
  va_end(ap);
  mock_log("error: %s", last_error);
  pthread_mutex_unlock(&mu);
  return status;
}

/* ---- elements ---- */
static size_t type_size(int t) {
  static const size_t sz[] = {1, 1, 4, 4, 8, 8, 2, 4, 8, 2};
  return t >= 0 && t < 10 ? sz[t] : 0;
}
static bool is_float(int t) { return t >= 6; }

static double get_f(int t, const uint8_t *p) {
  switch (t) {
  case 6: return f16_get(p);
  case 7: return *(const float *)p;
  case 8: return *(const double *)p;
  default: return bf16_get(p);
  }
}
static void put_f(int t, uint8_t *p, double v) {
  switch (t) {
  case 6: f16_set(p, v); break;
  case 7: *(float *)p = (float)v; break;
  case 8: *(double *)p = v; break;
  default: bf16_set(p, v); break;
  }
}
static int64_t get_i(int t, const uint8_t *p) {
  switch (t) {
  case 0: return *(const int8_t *)p;
  case 1: return *(const uint8_t *)p;
  case 2: return *(const int32_t *)p;
  case 3: return *(const uint32_t *)p;
  default: return *(const int64_t *)p;
  }
}
static void put_i(int t, uint8_t *p, int64_t v) {
  memcpy(p, &v, type_size(t));   /* little-endian: the low bytes */
}

/* acc = acc red x, element by element (sum 0, prod 1, max 2, min 3). */
static void combine(int t, int red, uint8_t *acc, const uint8_t *x, size_t count) {
  size_t sz = type_size(t);
  for (size_t k = 0; k < count; k++) {
    uint8_t *a = acc + k * sz;
    const uint8_t *b = x + k * sz;
    if (is_float(t)) {
      double u = get_f(t, a), v = get_f(t, b);
      double r = red == 0 ? u + v : red == 1 ? u * v : red == 2 ? fmax(u, v) : fmin(u, v);
      put_f(t, a, r);
    } else if (t == 3 || t == 5 || t == 1) {
      uint64_t u = (uint64_t)get_i(t, a), v = (uint64_t)get_i(t, b);
      if (t == 3) u &= 0xffffffffu, v &= 0xffffffffu;
      uint64_t r = red == 0 ? u + v : red == 1 ? u * v : red == 2 ? (u > v ? u : v)
                                                                  : (u < v ? u : v);
      put_i(t, a, (int64_t)r);
    } else {
      int64_t u = get_i(t, a), v = get_i(t, b);
      int64_t r = red == 0   ? (int64_t)((uint64_t)u + (uint64_t)v)
                  : red == 1 ? (int64_t)((uint64_t)u * (uint64_t)v)
                  : red == 2 ? (u > v ? u : v)
                             : (u < v ? u : v);
      put_i(t, a, r);
    }
  }
}

/* ---- matching and performing (mu held) ---- */

/* The rank's buffer of n bytes must be its device's memory. */
static int check_buffer(const Op *o, const void *p, size_t n, const char *what) {
  if (!n) return 0;
  int dev = ptr_device(p);
  if (dev != o->c->dev)
    return fail_with(4, "mock: %s of %s on rank %d (device %d) is %s", what,
                     op_names[o->kind], o->c->rank, o->c->dev,
                     dev < 0 ? "not device memory" : "another device's memory");
  return 0;
}

static void finish(Op *o, int status) {
  o->status = status;
  o->done = true;
  for (Op **p = &o->c->q->pending; *p; p = &(*p)->next)
    if (*p == o) {
      *p = o->next;
      break;
    }
}

/* Rank r's result of collective a over n ranks, send[m] the send buffer
 * of rank m, into out. */
static void result_of(const Op *a, int n, int r, const void *const *send, uint8_t *out) {
  size_t sz = type_size(a->type), cnt = a->count;
  switch (a->kind) {
  case OP_ALLREDUCE:
    memcpy(out, send[0], cnt * sz);
    for (int m = 1; m < n; m++) combine(a->type, a->red, out, send[m], cnt);
    break;
  case OP_REDUCESCATTER:
    memcpy(out, (const uint8_t *)send[0] + (size_t)r * cnt * sz, cnt * sz);
    for (int m = 1; m < n; m++)
      combine(a->type, a->red, out, (const uint8_t *)send[m] + (size_t)r * cnt * sz, cnt);
    break;
  case OP_ALLGATHER:
    for (int m = 0; m < n; m++) memcpy(out + (size_t)m * cnt * sz, send[m], cnt * sz);
    break;
  case OP_BROADCAST:
    memcpy(out, send[a->root], cnt * sz);
    break;
  }
}

/* Bytes of a collective's send and receive buffers on a rank. */
static size_t in_bytes(const Op *o, int n) {
  return (o->kind == OP_REDUCESCATTER ? o->count * (size_t)n : o->count) * type_size(o->type);
}
static size_t out_bytes(const Op *o, int n) {
  return (o->kind == OP_ALLGATHER ? o->count * (size_t)n : o->count) * type_size(o->type);
}

/* Every rank's op of one collective: check they agree, compute, write. */
static void perform(Op **ops, int n) {
  const Op *a = ops[0];
  int status = 0;
  size_t sz = type_size(a->type), cnt = a->count;
  for (int r = 0; r < n && !status; r++) {
    const Op *o = ops[r];
    if (o->kind != a->kind || o->count != a->count || o->type != a->type ||
        o->red != a->red || o->root != a->root)
      status = fail_with(5, "mock: the ranks disagree: rank 0 calls %s count %zu type %d "
                         "op %d root %d, rank %d %s count %zu type %d op %d root %d",
                         op_names[a->kind], a->count, a->type, a->red, a->root, r,
                         op_names[o->kind], o->count, o->type, o->red, o->root);
  }
  size_t in_n = a->kind == OP_REDUCESCATTER ? cnt * (size_t)n : cnt;
  size_t out_n = a->kind == OP_ALLGATHER ? cnt * (size_t)n : cnt;
  for (int r = 0; r < n && !status; r++)
    status = check_buffer(ops[r], ops[r]->send, in_n * sz, "the send buffer") ||
             check_buffer(ops[r], ops[r]->recv, out_n * sz, "the receive buffer")
                 ? 4 : 0;
  uint8_t **res = calloc((size_t)n, sizeof *res);
  const void **sends = calloc((size_t)n, sizeof *sends);
  for (int m = 0; m < n; m++) sends[m] = ops[m]->send;
  for (int r = 0; r < n && !status; r++) {
    res[r] = malloc(out_n * sz + 1);
    result_of(a, n, r, sends, res[r]);
  }
  free(sends);
  for (int r = 0; r < n; r++) {
    if (!status) memcpy(ops[r]->recv, res[r], out_n * sz);
    free(res[r]);
  }
  free(res);
  for (int r = 0; r < n; r++) finish(ops[r], status);
}

/* Completes what o completes, if anything. */
static void match(Op *o) {
  Clique *q = o->c->q;
  if (o->kind == OP_INIT) {
    if (q->joined < q->nranks) return;
    for (Op *p = q->pending, *next; p; p = next) {
      next = p->next;
      if (p->kind == OP_INIT) finish(p, 0);
    }
    return;
  }
  if (o->kind == OP_SEND || o->kind == OP_RECV) {
    int want = o->kind == OP_SEND ? OP_RECV : OP_SEND;
    for (Op *p = q->pending; p; p = p->next) {
      if (p->kind != want || p->c->rank != o->peer || p->peer != o->c->rank || p->seq != o->seq)
        continue;
      Op *s = o->kind == OP_SEND ? o : p, *r = o->kind == OP_SEND ? p : o;
      size_t sb = s->count * type_size(s->type), rb = r->count * type_size(r->type);
      int status = sb != rb ? fail_with(5, "mock: rank %d sends %zu bytes to rank %d, which "
                                        "receives %zu", s->c->rank, sb, r->c->rank, rb)
                            : check_buffer(s, s->send, sb, "the send buffer") ? 4
                            : check_buffer(r, r->recv, rb, "the receive buffer") ? 4 : 0;
      if (!status) memmove(r->recv, s->send, sb);
      finish(s, status);
      finish(r, status);
      return;
    }
    return;
  }
  Op **ops = calloc((size_t)q->nranks, sizeof *ops);
  int found = 0;
  for (Op *p = q->pending; p; p = p->next)
    if (p->kind != OP_INIT && p->kind != OP_SEND && p->kind != OP_RECV && p->seq == o->seq &&
        !ops[p->c->rank]) {
      ops[p->c->rank] = p;
      found++;
    }
  if (found == q->nranks) perform(ops, q->nranks);
  free(ops);
}

/* ---- ranks that are processes (MOCK_NCCL_DIR) ---- */

#define SHARED_WAIT_S 60

/* The head of a rank's file. */
typedef struct Part {
  int kind, type, red, root, dev;
  size_t count, bytes;            /* bytes: of the data after it */
} Part;

static const char *shared_dir(void) {
  const char *d = getenv("MOCK_NCCL_DIR");
  return d && *d ? d : NULL;
}

static bool put_file(const char *path, const Part *h, const void *data) {
  char tmp[1100];
  snprintf(tmp, sizeof tmp, "%s.tmp%d", path, (int)getpid());
  FILE *f = fopen(tmp, "wb");
  if (!f) return false;
  bool ok = fwrite(h, sizeof *h, 1, f) == 1 && (!h->bytes || fwrite(data, 1, h->bytes, f) == h->bytes);
  ok = fclose(f) == 0 && ok;
  return ok && rename(tmp, path) == 0;
}

/* Waits for path (what: for the message) and reads it; *data malloc'd. */
static int take_file(const char *path, Part *h, uint8_t **data, int rank, const char *what) {
  for (long waited = 0;; waited++) {
    FILE *f = fopen(path, "rb");
    if (f) {
      bool ok = fread(h, sizeof *h, 1, f) == 1;
      *data = ok ? malloc(h->bytes + 1) : NULL;
      ok = ok && (!h->bytes || fread(*data, 1, h->bytes, f) == h->bytes);
      fclose(f);
      if (ok) return 0;
      free(*data);
      *data = NULL;
      return fail_unlocked(2, "mock: rank %d cannot read %s", rank, path);
    }
    if (waited >= SHARED_WAIT_S * 1000L)
      return fail_unlocked(6, "mock: rank %d waited %d s for %s", rank, SHARED_WAIT_S, what);
    nanosleep(&(struct timespec){0, 1000000}, NULL);
  }
}

static void part_path(char *out, size_t cap, const Comm *c, long seq, int rank) {
  snprintf(out, cap, "%s/%s.c%ld.%d", shared_dir(), c->q->id, seq, rank);
}
static void msg_path(char *out, size_t cap, const Comm *c, int from, int to, long seq) {
  snprintf(out, cap, "%s/%s.p%d-%d.%ld", shared_dir(), c->q->id, from, to, seq);
}

/* Writes what o gives the other ranks: its part of a collective, or its
 * message. */
static int shared_post(Op *o) {
  Comm *c = o->c;
  char path[1024];
  Part h = {.kind = o->kind, .type = o->type, .red = o->red, .root = o->root, .dev = c->dev,
            .count = o->count};
  if (o->kind == OP_RECV) return 0;
  if (o->kind == OP_SEND) {
    msg_path(path, sizeof path, c, c->rank, o->peer, o->seq);
    h.bytes = o->count * type_size(o->type);
  } else {
    part_path(path, sizeof path, c, o->seq, c->rank);
    h.bytes = in_bytes(o, c->q->nranks);
  }
  return put_file(path, &h, o->send) ? 0
         : fail_unlocked(2, "mock: rank %d cannot write %s", c->rank, path);
}

/* Completes o from the other ranks' files. */
static int shared_complete(Op *o) {
  Comm *c = o->c;
  int n = c->q->nranks, me = c->rank, st = 0;
  char path[1024], what[160];
  Part h;
  uint8_t *data = NULL;
  if (o->kind == OP_SEND) return 0;
  if (o->kind == OP_RECV) {
    msg_path(path, sizeof path, c, o->peer, me, o->seq);
    snprintf(what, sizeof what, "message %ld from rank %d", o->seq, o->peer);
    if ((st = take_file(path, &h, &data, me, what))) return st;
    size_t want = o->count * type_size(o->type);
    if (h.bytes != want)
      st = fail_unlocked(5, "mock: rank %d sends %zu bytes to rank %d, which receives %zu",
                         o->peer, h.bytes, me, want);
    else if (want)
      memcpy(o->recv, data, want);
    unlink(path);
    free(data);
    return st;
  }
  const void **sends = calloc((size_t)n, sizeof *sends);
  uint8_t **got = calloc((size_t)n, sizeof *got);
  for (int r = 0; r < n && !st; r++) {
    if (r == me) {
      sends[r] = o->send;
      continue;
    }
    part_path(path, sizeof path, c, o->seq, r);
    snprintf(what, sizeof what, "rank %d's part of collective %ld (%s)", r, o->seq,
             op_names[o->kind]);
    if ((st = take_file(path, &h, &got[r], me, what))) break;
    sends[r] = got[r];
    if (h.kind != o->kind || h.count != o->count || h.type != o->type || h.red != o->red ||
        h.root != o->root || h.bytes != in_bytes(o, n))
      st = fail_unlocked(5, "mock: the ranks disagree: rank %d calls %s count %zu type %d "
                         "op %d root %d, rank %d %s count %zu type %d op %d root %d", me,
                         op_names[o->kind], o->count, o->type, o->red, o->root, r,
                         op_names[h.kind < 7 && h.kind >= 0 ? h.kind : 0], h.count, h.type,
                         h.red, h.root);
  }
  if (!st) {
    /* (in place: the send buffer is read while the result is made) */
    size_t ob = out_bytes(o, n);
    uint8_t *res = malloc(ob + 1);
    result_of(o, n, me, sends, res);
    memcpy(o->recv, res, ob);
    free(res);
  }
  for (int r = 0; r < n; r++) free(got[r]);
  free(got);
  free(sends);
  return st;
}

/* Joins communicator c through the files: DIR/ID.jRANK, then every
 * rank's. */
static int shared_join(Comm *c) {
  char path[1024], what[96];
  Part h = {.kind = OP_INIT, .dev = c->dev};
  snprintf(path, sizeof path, "%s/%s.j%d", shared_dir(), c->q->id, c->rank);
  if (!put_file(path, &h, NULL))
    return fail_unlocked(2, "mock: rank %d cannot write %s", c->rank, path);
  for (int r = 0; r < c->q->nranks; r++) {
    uint8_t *data = NULL;
    snprintf(path, sizeof path, "%s/%s.j%d", shared_dir(), c->q->id, r);
    snprintf(what, sizeof what, "rank %d to join", r);
    int st = take_file(path, &h, &data, c->rank, what);
    free(data);
    if (st) return st;
  }
  return 0;
}

/* Posts o (mu held) and, outside a group, waits for it; returns its status
 * (0 inside a group: ncclGroupEnd reports). */
static ncclResult_t post(Op *o) {
  o->next = o->c->q->pending;
  o->c->q->pending = o;
  match(o);
  pthread_cond_broadcast(&cv);
  if (depth > 0) {
    o->gnext = group;
    group = o;
    return 0;
  }
  while (!o->done) pthread_cond_wait(&cv, &mu);
  int st = o->status;
  free(o);
  return st;
}

static bool debug_coll(void) {
  const char *lvl = getenv("NCCL_DEBUG"), *sub = getenv("NCCL_DEBUG_SUBSYS");
  return lvl && strcmp(lvl, "INFO") == 0 && sub && strstr(sub, "COLL");
}

/* A collective or p2p call on comm c. */
static ncclResult_t call(const char *name, int kind, Comm *c, const void *send, void *recv,
                         size_t count, int type, int red, int root, int peer, void *stream) {
  pthread_mutex_lock(&mu);
  if (!c || !c->q) {
    int st = fail_with(4, "mock: %s on no communicator", name);
    if (depth && !group_error) group_error = st;
    pthread_mutex_unlock(&mu);
    return st;
  }
  mock_log("%s dev=%d rank=%d/%d count=%zu type=%d op=%d root=%d peer=%d stream=%s", name,
           c->dev, c->rank, c->q->nranks, count, type, red, root, peer,
           stream ? "other" : "legacy");
  if (debug_coll()) {
    printf("mock:0:0 [%d] NCCL INFO %s: opCount %lx sendbuff %p recvbuff %p count %zu "
           "datatype %d op %d root %d comm %p [nranks=%d] stream %p\n", c->dev,
           op_names[kind], (unsigned long)c->ncoll, send, (void *)recv, count, type, red,
           kind == OP_SEND || kind == OP_RECV ? peer : root, (void *)c, c->q->nranks, stream);
    fflush(stdout);
  }
  int st = failing(name, c->dev);
  if (!st && type_size(type) == 0) st = fail_with(4, "mock: %s: bad datatype %d", name, type);
  if (!st && (kind == OP_SEND || kind == OP_RECV) && (peer < 0 || peer >= c->q->nranks))
    st = fail_with(4, "mock: %s: bad peer %d", name, peer);
  if (!st && kind == OP_BROADCAST && (root < 0 || root >= c->q->nranks))
    st = fail_with(4, "mock: %s: bad root %d", name, root);
  if (st) {
    if (depth && !group_error) group_error = st;
    pthread_mutex_unlock(&mu);
    return st;
  }
  Op *o = calloc(1, sizeof *o);
  *o = (Op){.kind = kind, .c = c, .peer = peer, .send = send, .recv = recv, .count = count,
            .type = type, .red = red, .root = root};
  o->seq = kind == OP_SEND ? c->sent[peer]++ : kind == OP_RECV ? c->received[peer]++
                                                                : c->ncoll++;
  if (c->q->shared) {
    /* this rank's buffers here; the others' in their processes */
    size_t ib = kind == OP_SEND ? count * type_size(type) : kind == OP_RECV ? 0
                : in_bytes(o, c->q->nranks);
    size_t ob = kind == OP_RECV ? count * type_size(type) : kind == OP_SEND ? 0
                : out_bytes(o, c->q->nranks);
    st = check_buffer(o, send, ib, "the send buffer") ||
         check_buffer(o, recv, ob, "the receive buffer") ? 4 : 0;
    if (st || depth > 0) {
      if (st && depth && !group_error) group_error = st;
      if (st) free(o);
      else {
        o->gnext = group;
        group = o;
      }
      pthread_mutex_unlock(&mu);
      return st;
    }
    pthread_mutex_unlock(&mu);
    st = shared_post(o);
    if (!st) st = shared_complete(o);
    free(o);
    return st;
  }
  st = post(o);
  pthread_mutex_unlock(&mu);
  return st;
}

/* ---- the API ---- */

ncclResult_t ncclGetVersion(int *v) {
  const char *e = getenv("MOCK_NCCL_VERSION");
  *v = e ? atoi(e) : 22105;
  return 0;
}

ncclResult_t ncclGetUniqueId(ncclUniqueId *id) {
  pthread_mutex_lock(&mu);
  int st = failing("ncclGetUniqueId", current_device());
  if (!st) {
    memset(id, 0, sizeof *id);
    if (shared_dir())
      snprintf(id->internal, sizeof id->internal, "mock-nccl-id-%d-%d", (int)getpid(),
               ++ids_made);
    else
      snprintf(id->internal, sizeof id->internal, "mock-nccl-id-%d", ++ids_made);
    mock_log("ncclGetUniqueId dev=%d -> %s", current_device(), id->internal);
  }
  pthread_mutex_unlock(&mu);
  return st;
}

ncclResult_t ncclCommInitRank(Comm **comm, int nranks, ncclUniqueId id, int rank) {
  pthread_mutex_lock(&mu);
  int dev = current_device();
  mock_log("ncclCommInitRank dev=%d rank=%d/%d id=%.32s%s", dev, rank, nranks, id.internal,
           depth ? " (in a group)" : "");
  int st = failing("ncclCommInitRank", dev);
  if (!st && dev < 0) st = fail_with(1, "mock: ncclCommInitRank with no current CUDA context");
  if (!st && (nranks < 1 || rank < 0 || rank >= nranks))
    st = fail_with(4, "mock: ncclCommInitRank: rank %d of %d", rank, nranks);
  bool shared = shared_dir() != NULL;
  Clique *q = shared ? NULL : cliques;
  while (!st && q && memcmp(q->id, id.internal, sizeof q->id) != 0) q = q->next;
  if (!st && !q && shared) {
    /* this rank's view of a communicator whose others are elsewhere */
    q = calloc(1, sizeof *q);
    memcpy(q->id, id.internal, sizeof q->id);
    q->id[sizeof q->id - 1] = 0;
    q->nranks = nranks;
    q->comms = calloc((size_t)nranks, sizeof *q->comms);
    q->shared = true;
    mock_keep(q);
    mock_keep(q->comms);
  } else if (!st && !q) {
    q = calloc(1, sizeof *q);
    memcpy(q->id, id.internal, sizeof q->id);
    q->nranks = nranks;
    q->comms = calloc((size_t)nranks, sizeof *q->comms);
    q->next = cliques;
    cliques = q;
    mock_keep(q);
    mock_keep(q->comms);
  }
  if (!st && (q->nranks != nranks || q->comms[rank]))
    st = fail_with(5, "mock: ncclCommInitRank: rank %d of %d of a communicator of %d, %s",
                   rank, nranks, q->nranks, q->comms[rank] ? "taken already" : "");
  if (!st && q->joined > 0)
    for (int r = 0; r < nranks; r++)
      if (q->comms[r] && q->comms[r]->dev == dev)
        st = fail_with(5, "mock: device %d joins one communicator twice (ranks %d and %d)",
                       dev, r, rank);
  if (st) {
    if (depth && !group_error) group_error = st;
    pthread_mutex_unlock(&mu);
    return st;
  }
  Comm *c = calloc(1, sizeof *c);
  c->q = q;
  c->rank = rank;
  c->dev = dev;
  c->sent = calloc((size_t)nranks, sizeof *c->sent);
  c->received = calloc((size_t)nranks, sizeof *c->received);
  q->comms[rank] = c;
  q->joined++;
  live_comms++;
  *comm = c;
  if (rank == 0 && getenv("NCCL_DEBUG")) {
    printf("NCCL version 2.21.5+mock\n");
    fflush(stdout);
  }
  if (shared) {
    pthread_mutex_unlock(&mu);
    return shared_join(c);
  }
  Op *o = calloc(1, sizeof *o);
  o->kind = OP_INIT;
  o->c = c;
  st = post(o);
  pthread_mutex_unlock(&mu);
  return st;
}

ncclResult_t ncclCommDestroy(Comm *c) {
  pthread_mutex_lock(&mu);
  if (!c || !c->q) {
    pthread_mutex_unlock(&mu);
    return 4;
  }
  mock_log("ncclCommDestroy dev=%d rank=%d/%d", c->dev, c->rank, c->q->nranks);
  c->q->comms[c->rank] = NULL;
  c->q = NULL;
  free(c->sent);
  free(c->received);
  free(c);
  live_comms--;
  pthread_mutex_unlock(&mu);
  return 0;
}

ncclResult_t ncclCommCount(const Comm *c, int *n) {
  *n = c && c->q ? c->q->nranks : 0;
  return c && c->q ? 0 : 4;
}

ncclResult_t ncclCommUserRank(const Comm *c, int *r) {
  *r = c ? c->rank : -1;
  return c ? 0 : 4;
}

const char *ncclGetErrorString(ncclResult_t r) {
  /* NCCL's texts */
  switch (r) {
  case 0: return "no error";
  case 1: return "unhandled cuda error (run with NCCL_DEBUG=INFO for details)";
  case 2: return "unhandled system error (run with NCCL_DEBUG=INFO for details)";
  case 3: return "internal error - please report this issue to the NCCL developers";
  case 4: return "invalid argument (run with NCCL_DEBUG=WARN for details)";
  case 5: return "invalid usage (run with NCCL_DEBUG=WARN for details)";
  case 6: return "remote process exited or there was a network error";
  case 7: return "NCCL operation in progress";
  default: return "unknown result code";
  }
}

const char *ncclGetLastError(const Comm *c) { return last_error; }

ncclResult_t ncclAllReduce(const void *s, void *r, size_t count, int type, int op, Comm *c,
                           void *stream) {
  return call("ncclAllReduce", OP_ALLREDUCE, c, s, r, count, type, op, 0, -1, stream);
}
ncclResult_t ncclAllGather(const void *s, void *r, size_t count, int type, Comm *c,
                           void *stream) {
  return call("ncclAllGather", OP_ALLGATHER, c, s, r, count, type, 0, 0, -1, stream);
}
ncclResult_t ncclReduceScatter(const void *s, void *r, size_t count, int type, int op,
                               Comm *c, void *stream) {
  return call("ncclReduceScatter", OP_REDUCESCATTER, c, s, r, count, type, op, 0, -1, stream);
}
ncclResult_t ncclBroadcast(const void *s, void *r, size_t count, int type, int root, Comm *c,
                           void *stream) {
  return call("ncclBroadcast", OP_BROADCAST, c, s, r, count, type, 0, root, -1, stream);
}
ncclResult_t ncclSend(const void *s, size_t count, int type, int peer, Comm *c, void *stream) {
  return call("ncclSend", OP_SEND, c, s, NULL, count, type, 0, 0, peer, stream);
}
ncclResult_t ncclRecv(void *r, size_t count, int type, int peer, Comm *c, void *stream) {
  return call("ncclRecv", OP_RECV, c, NULL, r, count, type, 0, 0, peer, stream);
}

ncclResult_t ncclGroupStart(void) {
  pthread_mutex_lock(&mu);
  mock_log("ncclGroupStart dev=%d", current_device());
  depth++;
  pthread_mutex_unlock(&mu);
  return 0;
}

ncclResult_t ncclGroupEnd(void) {
  pthread_mutex_lock(&mu);
  mock_log("ncclGroupEnd dev=%d", current_device());
  if (depth == 0) {
    pthread_mutex_unlock(&mu);
    return fail_with(5, "mock: ncclGroupEnd without ncclGroupStart");
  }
  int st = 0;
  if (--depth == 0) {
    /* a group with a failed call runs none of its calls (what is done is
     * done: a peer's may have matched already) */
    for (Op *o = group; o && group_error; o = o->gnext)
      if (!o->done) finish(o, group_error);
    st = group_error;
    group_error = 0;
    /* ranks elsewhere: every part and message written, then each op
     * completed from the others' */
    bool shared = false;
    for (Op *o = group; o; o = o->gnext) shared |= !o->done && o->c->q && o->c->q->shared;
    if (shared) {
      pthread_mutex_unlock(&mu);
      int sst = 0;
      for (Op *o = group; o && !sst; o = o->gnext)
        if (!o->done && o->c->q->shared) sst = shared_post(o);
      for (Op *o = group; o; o = o->gnext)
        if (!o->done && o->c->q->shared) {
          o->status = sst ? sst : shared_complete(o);
          o->done = true;
        }
      pthread_mutex_lock(&mu);
    }
    for (Op *o = group; o; o = o->gnext)
      while (!o->done) pthread_cond_wait(&cv, &mu);
    for (Op *o = group, *next; o; o = next) {
      next = o->gnext;
      if (!st) st = o->status;
      free(o);
    }
    group = NULL;
  }
  pthread_mutex_unlock(&mu);
  return st;
}
