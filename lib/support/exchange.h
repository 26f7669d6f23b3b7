/*
 * exchange.h - how the devices of a multi-device run move bytes to each
 * other at a collective.  The interface is one operation, exchange: every
 * member of a group hands a buffer to each member and receives one from
 * each (the shape of MPI_Alltoallv; a size of zero moves nothing).  Every
 * compiled collective (lib/runtime/collective_exec.c) is built on it:
 * all-reduce is an exchange of chunks, a fold, and an exchange of the
 * folded chunks; all-gather sends the same buffer to every member; a
 * permute sends to one.  Two transports, both in host memory:
 *
 *   threads  every device is a thread of this process (exchange_threads.c,
 *            over rendezvous.h): the members meet and copy from each
 *            other's buffers
 *   mpi      one device per process of an MPI job (exchange_mpi.c): libmpi
 *            (OpenMPI's ABI) opened with dlopen, nonblocking sends and
 *            receives between the members' ranks; device d is rank d
 *
 * A platform's own collectives on device memory (NCCL on CUDA:
 * lib/runtime/collective_exec.h, platform.h's coll_run) sit beside these
 * and need the exchange only to start and to meet: member 0 of a group
 * makes the NCCL unique id and xchg_bcast carries its bytes to the other
 * members, and before each collective the members meet through an
 * exchange of one byte each.
 *
 * Every transport keeps a run from hanging where it can: a device whose
 * run ends (end) is no longer waited for, a failure abandons the others'
 * pending exchanges, and members that disagree about a collective fail with
 * a message.
 */
#ifndef XHLOC_EXCHANGE_H
#define XHLOC_EXCHANGE_H

#include "support.h"

/* The members of one exchange, as each of them sees it. */
typedef struct XchgGroup {
  const void *key;                 /* the collective: one object shared by
                                      the threads of a process */
  const char *name;                /* its name, the same in every process
                                      (messages; MPI's message tag) */
  const int64_t *members;          /* device ids, in group order */
  int n;
  int me;                          /* this device's position in members */
  void *bg;                        /* NULL: the device's own thread; else the
                                      background thread (waiter_new) that
                                      exchanges for it */
} XchgGroup;

typedef struct Exchange Exchange;
struct Exchange {
  const char *name;                /* "threads", "mpi" */
  int ndev;                        /* devices of the run */
  int self;                        /* mpi: this process's device; -1: every
                                      device is a thread of this process */
  void *impl;

  /* Member g->me sends send[j] (send_bytes[j] bytes) to member j and
   * receives recv[j] (recv_bytes[j] bytes) from member j, for every j, itself
   * included (a copy; none when the two pointers are the same).  Each size
   * must be what the other side says.  Returns when this member's buffers
   * are received and its send buffers free again; false with a message in
   * why when the run was abandoned, a member cannot arrive, or the members
   * disagree. */
  bool (*exchange)(Exchange *x, const XchgGroup *g, const void *const *send,
                   const size_t *send_bytes, void *const *recv,
                   const size_t *recv_bytes, char *why, size_t nwhy);
  /* Device dev's run has ended (failed: with the message why; a failure
   * abandons the pending exchanges of the others).  mpi: dev is self, and
   * this returns once every process's device has ended too. */
  void (*end)(Exchange *x, int dev, bool failed, const char *why);
  /* After every device's end: the device whose failure ended the run (the
   * first, or the lowest one that failed), -1 when none did; its message
   * into why (mpi: another process's device's). */
  int (*first_failed)(Exchange *x, char *why, size_t nwhy);
  /* Device dev is failing: its pending exchanges, a background thread's
   * too, fail now (its end comes later). */
  void (*abandon)(Exchange *x, int dev, const char *why);
  /* Asynchronous collectives: a background thread that exchanges for
   * device dev (passing the waiter in XchgGroup.bg) while the device's own
   * thread goes on; it calls waiter_done when it is over, and the device's
   * thread waits for that with waiter_await, which frees the waiter.  A
   * device waiting so counts as waiting for what its background thread
   * waits for (threads: no hang when the devices ran different
   * collectives). */
  void *(*waiter_new)(Exchange *x, int dev);
  void (*waiter_done)(Exchange *x, void *waiter);
  void (*waiter_await)(Exchange *x, void *waiter);
  void (*destroy)(Exchange *x);
};

/* A run of ndev devices as threads of this process. */
Exchange *xchg_threads_new(int ndev);
/* This process as one device of an MPI job: libmpi (OpenMPI,
 * libmpi.so.40, or $XHLO_MPI_LIB) opened and MPI_Init called; NULL with a
 * message in why when it cannot be. */
Exchange *xchg_mpi_new(char *why, size_t nwhy);
void xchg_free(Exchange *x);       /* NULL is fine; MPI_Finalize for mpi */

/* Whether this process was started by an MPI launcher (mpirun, mpiexec,
 * srun: OMPI_COMM_WORLD_RANK/SIZE, else PMI_RANK/PMI_SIZE in the
 * environment), and its rank and the job's size. */
bool xchg_launched(int *rank, int *size);

/* Member 0's n bytes of buf to every member's buf (an NCCL unique id, say):
 * an exchange in which only member 0 sends. */
bool xchg_bcast(Exchange *x, const XchgGroup *g, void *buf, size_t n,
                char *why, size_t nwhy);

#endif
