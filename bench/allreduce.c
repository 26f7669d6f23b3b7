/*
 * allreduce.c - all-reduce bandwidth of the runtime's collectives
 * (lib/runtime/collective_exec.c over lib/support/exchange.h), measured as
 * NCCL-tests measures it, beside a plain memcpy's bandwidth on the same
 * machine.
 *
 *   allreduce [--devices=N] [--min=BYTES] [--max=BYTES] [--iters=N]
 *   mpirun -np N allreduce [...]
 *
 * Without a launcher the N devices (default 4) are threads of this
 * process; under mpirun each process is one device and the collective goes
 * through MPI (rank 0 prints).  For each size from --min (default 1 KiB) to
 * --max (default 256 MiB), doubling: an f32 sum all-reduce of that many
 * bytes per device, a warm-up, then timed iterations (enough for about
 * 0.2 s, at least 3) between two barriers; the time is rank 0's mean.
 *   algbw = size / time
 *   busbw = algbw * 2(n-1)/n   (NCCL-tests' bus bandwidth: what each
 *                              device's link carries in a ring all-reduce)
 * and memcpy: one thread copying the same size between two buffers (the
 * best of a few), the bandwidth a single core gets from memory here.
 * Under MPI a last column gives OpenMPI's own MPI_Allreduce's busbw for
 * comparison.  Results are checked (every element is the sum of the
 * devices' values).
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../lib/runtime/collective_exec.h"
#include "../lib/support/mpi_min.h"

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* An all-reduce thunk (sum of f32[n] over every device) ready to run. */
typedef struct Op {
  Arena *a;
  Thunk t;
  CollDesc c;
  BufSlice in, out;
  char *shape;
  CollExec *x;
} Op;

static Op *op_new(int64_t n, int ndev) {
  Op *o = xcalloc(1, sizeof *o);
  o->a = arena_new();
  char text[48];
  snprintf(text, sizeof text, "f32[%lld]", (long long)n);
  o->shape = arena_strdup(o->a, text);
  o->t.kind = THUNK_COLLECTIVE;
  o->t.annotation = "all-reduce";
  o->t.coll = &o->c;
  o->c = (CollDesc){.kind = COLL_ALL_REDUCE, .reduction = COLL_SUM, .dim = -1,
                    .channel_id = -1, .mode = CGM_CROSS_REPLICA, .replica_count = ndev,
                    .num_partitions = 1, .n = 1, .in = &o->in, .out = &o->out,
                    .in_shape = &o->shape, .out_shape = &o->shape};
  o->in.size = o->out.size = n * 4;
  Diag d = {0};
  if (!(o->x = coll_prepare(o->a, &o->t, NULL, &d))) die("allreduce: %s", d.msg);
  return o;
}

static void op_free(Op *o) {
  coll_free(o->x);
  arena_free(o->a);
  free(o);
}

/* The barrier: a one-byte exchange among every device. */
static void barrier(Exchange *x, int dev, const int64_t *all) {
  uint8_t b[256] = {0}, r[256];
  const void *send[256];
  void *recv[256];
  size_t one[256];
  for (int j = 0; j < x->ndev; j++) {
    send[j] = &b[j];
    recv[j] = &r[j];
    one[j] = 1;
  }
  XchgGroup g = {.key = all, .name = "barrier", .members = all, .n = x->ndev, .me = dev};
  char why[256];
  if (!x->exchange(x, &g, send, one, recv, one, why, sizeof why)) die("allreduce: %s", why);
}

typedef struct Dev {
  pthread_t th;
  Exchange *x;
  const int64_t *all;
  int dev, iters;
  Op *op;
  CollExec *cx;                    /* its own (host memory kept per device) */
  float *in, *out;
  double sec;                      /* mean per iteration */
} Dev;

static void *dev_run(void *p) {
  Dev *v = p;
  Diag d = {0};
  uint8_t *in = (uint8_t *)v->in, *out = (uint8_t *)v->out;
  if (!coll_run_host(v->cx, v->x, v->dev, 0, &in, &out, &d))  /* warm-up */
    die("allreduce: device %d: %s", v->dev, d.msg);
  barrier(v->x, v->dev, v->all);
  double t0 = now();
  for (int k = 0; k < v->iters; k++)
    if (!coll_run_host(v->cx, v->x, v->dev, 0, &in, &out, &d))
      die("allreduce: device %d: %s", v->dev, d.msg);
  barrier(v->x, v->dev, v->all);
  v->sec = (now() - t0) / v->iters;
  return NULL;
}

static double memcpy_gbps(size_t bytes) {
  uint8_t *a = xmalloc(bytes), *b = xmalloc(bytes);
  memset(a, 1, bytes);
  memset(b, 2, bytes);
  int reps = bytes >= (1 << 26) ? 3 : (int)((1 << 28) / bytes);
  double best = 1e30;
  for (int r = 0; r < 3; r++) {
    double t0 = now();
    for (int k = 0; k < reps; k++) {
      memcpy(k & 1 ? a : b, k & 1 ? b : a, bytes);
      __asm__ volatile("" ::: "memory");
    }
    double t = (now() - t0) / reps;
    if (t < best) best = t;
  }
  free(a);
  free(b);
  return (double)bytes / best * 1e-9;
}

static int64_t parse_size(const char *s) {
  char *e;
  double v = strtod(s, &e);
  if (e == s || v <= 0) die("allreduce: bad size '%s'", s);
  if (*e == 'K' || *e == 'k') v *= 1024, e++;
  else if (*e == 'M' || *e == 'm') v *= 1024 * 1024, e++;
  else if (*e == 'G' || *e == 'g') v *= 1024.0 * 1024 * 1024, e++;
  if (*e == 'i') e++;
  if (*e == 'B') e++;
  if (*e) die("allreduce: bad size '%s'", s);
  return (int64_t)v;
}

static void size_text(char *b, size_t n, int64_t bytes) {
  if (bytes >= 1 << 20) snprintf(b, n, "%lld MiB", (long long)(bytes >> 20));
  else snprintf(b, n, "%lld KiB", (long long)(bytes >> 10));
}

int main(int argc, char **argv) {
  int ndev = 4, iters = 0;
  int64_t lo = 1024, hi = (int64_t)256 << 20;
  for (int k = 1; k < argc; k++) {
    if (strncmp(argv[k], "--devices=", 10) == 0) ndev = atoi(argv[k] + 10);
    else if (strncmp(argv[k], "--min=", 6) == 0) lo = parse_size(argv[k] + 6);
    else if (strncmp(argv[k], "--max=", 6) == 0) hi = parse_size(argv[k] + 6);
    else if (strncmp(argv[k], "--iters=", 8) == 0) iters = atoi(argv[k] + 8);
    else {
      fprintf(stderr, "usage: allreduce [--devices=N] [--min=BYTES] [--max=BYTES] "
              "[--iters=N]\n");
      return 2;
    }
  }
  int rank, size;
  Exchange *x;
  char why[512];
  bool mpi = xchg_launched(&rank, &size);
  if (mpi) {
    if (!(x = xchg_mpi_new(why, sizeof why))) die("allreduce: %s", why);
    ndev = x->ndev;
  } else {
    if (ndev < 2 || ndev > 256) die("allreduce: --devices must be 2 to 256");
    x = xchg_threads_new(ndev);
  }
  int self = mpi ? x->self : 0, local = mpi ? 1 : ndev;
  int64_t *all = xcalloc((size_t)ndev, sizeof *all);
  for (int k = 0; k < ndev; k++) all[k] = k;
  /* OpenMPI's own all-reduce, for comparison (libmpi is loaded global) */
  XMPI_Allreduce_fn mpi_allreduce = mpi ? (XMPI_Allreduce_fn)dlsym(RTLD_DEFAULT, "MPI_Allreduce") : NULL;
  void *world = mpi ? dlsym(RTLD_DEFAULT, "ompi_mpi_comm_world") : NULL;
  void *f32 = mpi ? dlsym(RTLD_DEFAULT, "ompi_mpi_float") : NULL;
  void *sum = mpi ? dlsym(RTLD_DEFAULT, "ompi_mpi_op_sum") : NULL;
  bool ref = mpi_allreduce && world && f32 && sum;
  if (self == 0) {
    printf("all-reduce (f32 sum) over %d devices: %s; busbw = algbw * 2(n-1)/n "
           "(NCCL-tests)\n", ndev, mpi ? "one per MPI process, through MPI"
                                       : "threads of one process");
    printf("%10s %12s %10s %12s %12s %13s%s\n", "size", "elements", "time us", "algbw GB/s",
           "busbw GB/s", "memcpy GB/s", ref ? "  MPI_Allreduce busbw GB/s" : "");
  }
  double factor = 2.0 * (ndev - 1) / ndev;
  for (int64_t bytes = lo; bytes <= hi; bytes *= 2) {
    int64_t n = bytes / 4;
    Op *op = op_new(n, ndev);
    Dev *v = xcalloc((size_t)local, sizeof *v);
    int it = iters > 0 ? iters : bytes >= (1 << 24) ? 3 : (int)(((int64_t)1 << 27) / bytes);
    if (it < 3) it = 3;
    if (it > 2000) it = 2000;
    for (int k = 0; k < local; k++) {
      Diag d = {0};
      v[k] = (Dev){.x = x, .all = all, .dev = self + k, .iters = it, .op = op,
                   .cx = coll_prepare(op->a, &op->t, NULL, &d)};
      if (!v[k].cx) die("allreduce: %s", d.msg);
      v[k].in = xmalloc((size_t)bytes);
      v[k].out = xmalloc((size_t)bytes);
      for (int64_t e = 0; e < n; e++) v[k].in[e] = (float)((self + k + 1) * (e % 7));
      memset(v[k].out, 0, (size_t)bytes);
    }
    if (mpi) {
      dev_run(&v[0]);
    } else {
      for (int k = 0; k < local; k++) pthread_create(&v[k].th, NULL, dev_run, &v[k]);
      for (int k = 0; k < local; k++) pthread_join(v[k].th, NULL);
    }
    for (int k = 0; k < local; k++)
      for (int64_t e = 0; e < n; e++)
        if (v[k].out[e] != (float)(ndev * (ndev + 1) / 2 * (e % 7)))
          die("allreduce: device %d: element %lld is %g", self + k, (long long)e,
              v[k].out[e]);
    double ref_bus = 0;
    if (ref) {
      XMPI_Comm comm = world;
      barrier(x, self, all);
      mpi_allreduce(v[0].in, v[0].out, (int)n, f32, sum, comm);
      barrier(x, self, all);
      double t0 = now();
      for (int k = 0; k < it; k++) mpi_allreduce(v[0].in, v[0].out, (int)n, f32, sum, comm);
      barrier(x, self, all);
      ref_bus = (double)bytes / ((now() - t0) / it) * 1e-9 * factor;
    }
    if (self == 0) {
      char s[32];
      size_text(s, sizeof s, bytes);
      double t = v[0].sec, algbw = (double)bytes / t * 1e-9;
      printf("%10s %12lld %10.1f %12.2f %12.2f %13.2f", s, (long long)n, t * 1e6, algbw,
             algbw * factor, memcpy_gbps((size_t)bytes));
      if (ref) printf("  %12.2f", ref_bus);
      printf("\n");
      fflush(stdout);
    }
    for (int k = 0; k < local; k++) {
      free(v[k].in);
      free(v[k].out);
      coll_free(v[k].cx);
    }
    free(v);
    op_free(op);
  }
  free(all);
  xchg_free(x);
  return 0;
}
