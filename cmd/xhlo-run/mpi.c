/*
 * mpi.c - xhlo-run started by an MPI launcher (mpirun -np N xhlo-run ...):
 * each process runs one device of the module, device d being rank d, and
 * the collectives go through MPI (lib/support/exchange_mpi.c).  Here: the
 * checks before a run (the job's size against the module's devices,
 * libmpi there) and, after it, learning from the other processes how the
 * whole run went, and gathering a partitioned program's results to the
 * first process, which writes the global ones.  Messages are printed once,
 * by one process.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "xhlo_run.h"

Exchange *mpi_join(const RunOpts *o, int64_t replicas, int64_t partitions,
                   const char *path) {
  int64_t n = replicas * partitions;
  if (o->mpi_size != n) {
    fprintf(stderr, "xhlo-run: %s: the module runs on %lld device%s (replica_count %lld x "
              "num_partitions %lld), one per MPI process, but the MPI job has %d "
              "process%s: start it with mpirun -np %lld\n", path, (long long)n,
              n == 1 ? "" : "s", (long long)replicas, (long long)partitions, o->mpi_size,
              o->mpi_size == 1 ? "" : "es", (long long)n);
    return NULL;
  }
  char why[512];
  Exchange *x = xchg_mpi_new(why, sizeof why);
  if (!x) {
    fprintf(stderr, "xhlo-run: %s: under an MPI launcher: %s\n", path, why);
    return NULL;
  }
  if (x->ndev != n || x->self != o->mpi_rank) {
    fprintf(stderr, "xhlo-run: %s: MPI says rank %d of %d where the launcher's "
              "environment says %d of %d\n", path, x->self, x->ndev, o->mpi_rank,
              o->mpi_size);
    xchg_free(x);
    return NULL;
  }
  return x;
}

bool mpi_finish(Exchange *x, bool ok, const char *why, const char *path,
                int64_t partitions) {
  int self = x->self;
  if (!ok && strncmp(why ? why : "", "the run was abandoned", 21) != 0)
    fprintf(stderr, "xhlo-run: %s: device %d (replica %lld, partition %lld): %s\n", path,
            self, (long long)(self / partitions), (long long)(self % partitions),
            why ? why : "failed");
  fflush(stderr);
  x->end(x, self, !ok, why);
  char first[256];
  return x->first_failed(x, first, sizeof first) < 0;
}

/* mpi_finish on a thread of its own, for a failed device's process that
 * does not wait for it forever. */
typedef struct Finish {
  pthread_mutex_t mu;
  pthread_cond_t cv;
  Exchange *x;
  const char *why, *path;
  int64_t partitions;
  bool done;
} Finish;

static void *finish_main(void *arg) {
  Finish *f = arg;
  mpi_finish(f->x, false, f->why, f->path, f->partitions);
  pthread_mutex_lock(&f->mu);
  f->done = true;
  pthread_cond_broadcast(&f->cv);
  pthread_mutex_unlock(&f->mu);
  return NULL;
}

bool mpi_finish_within(Exchange *x, bool ok, const char *why, const char *path,
                       int64_t partitions, int grace_s) {
  if (ok || grace_s <= 0) return mpi_finish(x, ok, why, path, partitions);
  Finish f = {.mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER, .x = x,
              .why = why, .path = path, .partitions = partitions};
  pthread_t th;
  if (pthread_create(&th, NULL, finish_main, &f) != 0)
    return mpi_finish(x, ok, why, path, partitions);
  struct timespec deadline;
  clock_gettime(CLOCK_REALTIME, &deadline);
  deadline.tv_sec += grace_s;
  pthread_mutex_lock(&f.mu);
  while (!f.done && pthread_cond_timedwait(&f.cv, &f.mu, &deadline) != ETIMEDOUT) {}
  bool done = f.done;
  pthread_mutex_unlock(&f.mu);
  if (!done) {
    /* the others wait for this device inside the collective library:
     * ending this process ends the job (the launcher stops the rest) */
    fprintf(stderr, "xhlo-run: (the other devices did not end within %d s of that failure: "
            "waiting for it in the collective library; the run is abandoned)\n", grace_s);
    fflush(stdout);
    fflush(stderr);
    _exit(1);
  }
  pthread_join(th, NULL);
  return false;
}

Literal ***mpi_gather_results(Exchange *x, Literal **mine, int nres, Arena *a, bool *ok) {
  int n = x->ndev, me = x->self;
  size_t total = 0;
  for (int k = 0; k < nres; k++)
    total += mine[k]->data ? (size_t)shape_byte_size(mine[k]->shape) : 0;
  uint8_t *buf = xmalloc(total + 1), *at = buf;
  for (int k = 0; k < nres; k++)
    if (mine[k]->data) {
      memcpy(at, mine[k]->data, (size_t)shape_byte_size(mine[k]->shape));
      at += shape_byte_size(mine[k]->shape);
    }
  int64_t *members = xcalloc((size_t)n, sizeof *members);
  const void **send = xcalloc((size_t)n, sizeof *send);
  void **recv = xcalloc((size_t)n, sizeof *recv);
  size_t *sb = xcalloc((size_t)n, sizeof *sb), *rb = xcalloc((size_t)n, sizeof *rb);
  uint8_t **got = xcalloc((size_t)n, sizeof *got);
  for (int j = 0; j < n; j++) {
    members[j] = j;
    send[j] = buf;
    /* the same artifact on every device: the same result shapes */
    sb[j] = j == 0 ? total : 0;
    rb[j] = me == 0 ? total : 0;
    got[j] = me == 0 ? (j == 0 ? buf : xmalloc(total + 1)) : NULL;
    recv[j] = got[j];
  }
  static const char key[] = "global results";
  XchgGroup g = {.key = key, .name = key, .members = members, .n = n, .me = me};
  char why[320];
  *ok = x->exchange(x, &g, send, sb, recv, rb, why, sizeof why);
  if (!*ok) fprintf(stderr, "xhlo-run: gathering the devices' results: %s\n", why);
  Literal ***all = NULL;
  if (*ok && me == 0) {
    all = xcalloc((size_t)n, sizeof *all);
    for (int j = 0; j < n; j++) {
      all[j] = xcalloc((size_t)nres + 1, sizeof **all);
      const uint8_t *from = got[j];
      for (int k = 0; k < nres; k++) {
        if (!mine[k]->data) {
          all[j][k] = mine[k];
          continue;
        }
        Literal *l = literal_new(a, mine[k]->shape);
        size_t b = (size_t)shape_byte_size(mine[k]->shape);
        memcpy(l->data, from, b);
        from += b;
        all[j][k] = l;
      }
    }
  }
  for (int j = 1; j < n; j++) free(got[j]);
  free(got);
  free(buf);
  free(members);
  free(send);
  free(recv);
  free(sb);
  free(rb);
  return all;
}

int mpi_local_rank(const RunOpts *o) {
  const char *s = getenv("OMPI_COMM_WORLD_LOCAL_RANK");
  if (!s || !*s) s = getenv("MPI_LOCALRANKID");
  int v = s && *s ? atoi(s) : -1;
  return v >= 0 ? v : o->mpi_rank;
}

int mpi_local_size(const RunOpts *o) {
  const char *s = getenv("OMPI_COMM_WORLD_LOCAL_SIZE");
  int v = s ? atoi(s) : 0;
  return v > 0 ? v : o->mpi_size > 0 ? o->mpi_size : 1;
}
