/*
 * mpi.c - xhlo-run started by an MPI launcher (mpirun -np N xhlo-run ...):
 * each process runs one device of the module, device d being rank d, and
 * the collectives go through MPI (lib/support/exchange_mpi.c).  Here: the
 * checks before a run (the job's size against the module's devices,
 * libmpi there) and, after it, learning from the other processes how the
 * whole run went.  Messages are printed once, by one process.
 */
#include <stdlib.h>
#include <string.h>

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

int mpi_local_size(const RunOpts *o) {
  const char *s = getenv("OMPI_COMM_WORLD_LOCAL_SIZE");
  int v = s ? atoi(s) : 0;
  return v > 0 ? v : o->mpi_size > 0 ? o->mpi_size : 1;
}
