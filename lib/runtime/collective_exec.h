/*
 * collective_exec.h - collective thunks at run time (collective_exec.c),
 * for the executor.
 *
 * The devices of a run move bytes through an Exchange
 * (lib/support/exchange.h): threads of this process, or the processes of
 * an MPI job.  Collectives are staged through host memory and built on
 * exchange alone, so any transport that can move bytes runs every
 * collective, and the results are the interpreter's bits.
 */
#ifndef XHLOC_COLLECTIVE_EXEC_H
#define XHLOC_COLLECTIVE_EXEC_H

#include "../support/exchange.h"
#include "platform.h"

typedef struct CollExec CollExec;

/* A transport on device memory beside the host staging (NCCL on a GPU).
 * When the executor has one (executor_set_device_collectives), every
 * collective thunk with more than one participant goes to run instead:
 * it issues collective c for member g->me of group g (device ids in group
 * order) on the platform's stream, in order with the kernels, reading the
 * device addresses in[k] and writing out[k]; false with a message in d
 * when it cannot.  Its communicators are made with the host exchange:
 * member 0 of a group makes the unique id (ncclGetUniqueId) and xchg_bcast
 * (lib/support/exchange.h) carries it to the others, through MPI when the
 * devices are processes.  An asynchronous pair's -start goes to run too
 * (in stream order, so its done thunk has nothing more to wait for on the
 * host; a transport with a stream of its own for collectives would wait
 * there). */
typedef struct CollDeviceOps {
  void *impl;
  bool (*run)(void *impl, Platform *p, const CollDesc *c, const XchgGroup *g,
              const DevPtr *in, const DevPtr *out, Diag *d);
} CollDeviceOps;

/* Checks collective thunk t (its shapes against its slices, its element
 * types against its reduction) and parses what a run needs, in a.  One
 * device runs it (its host memory is kept from run to run): each device
 * prepares its own, from the same thunk. */
CollExec *coll_prepare(Arena *a, const Thunk *t, Diag *d);
/* Frees its host memory (the rest is in the arena); NULL is fine. */
void coll_free(CollExec *x);
/* Runs it as device (replica, partition) of the run whose devices meet
 * through xg (NULL: this device alone), or through dev when it is not
 * NULL; in[k] and out[k] are the device addresses of its operand and
 * result slices. */
bool coll_run(const CollExec *x, Platform *p, Exchange *xg, const CollDeviceOps *dev,
              int64_t replica, int64_t partition, const DevPtr *in, const DevPtr *out,
              Diag *d);
/* The -start thunk of an asynchronous pair (async_id >= 0): starts the
 * collective as coll_run runs it.  On the host platform, with an exchange
 * that has background threads, the staged operands are exchanged and the
 * results written on a thread of their own while the caller goes on, and
 * *pending is for coll_wait (the pair's done thunk); else it completes
 * here and *pending is NULL. */
typedef struct CollPending CollPending;
bool coll_start(const CollExec *x, Platform *p, Exchange *xg, const CollDeviceOps *dev,
                int64_t replica, int64_t partition, const DevPtr *in, const DevPtr *out,
                CollPending **pending, Diag *d);
/* Waits for a started collective (NULL: done already) and frees it; false
 * with its failure in d. */
bool coll_wait(CollPending *q, Diag *d);
/* The device's run is failing: the started collective stops waiting for
 * the other devices (coll_wait still follows). */
void coll_abandon(CollPending *q, const char *why);
/* The same on host buffers: in[k] and out[k] hold operand and result k,
 * row-major, in distinct memory (all-reduce operands of one element type
 * that lie side by side, results too, are reduced as one flat array).
 * The identity ops (replica-id, partition-id) are not for it. */
bool coll_run_host(const CollExec *x, Exchange *xg, int64_t replica, int64_t partition,
                   uint8_t *const *in, uint8_t *const *out, Diag *d);

#endif
