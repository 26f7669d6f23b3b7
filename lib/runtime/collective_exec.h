/*
 * collective_exec.h - collective thunks at run time (collective_exec.c),
 * for the executor, and what a platform's own collective library
 * (platform.h: coll_takes, coll_run; the CUDA platform's NCCL,
 * collective_nccl.c) sees of them.
 *
 * The devices of a run move bytes through an Exchange
 * (lib/support/exchange.h): threads of this process, or the processes of
 * an MPI job.  A collective the platform does not take is staged through
 * host memory and built on exchange alone, so any transport that can move
 * bytes runs it, and the results are the interpreter's bits.  One the
 * platform takes runs on device memory; the exchange only makes its
 * communicators (coll_group_share: the group's first member's unique id to
 * the others with xchg_bcast, through MPI when the devices are processes)
 * and has the members meet before each call, so that devices that run
 * different collectives fail with a message instead of waiting in the
 * library forever.
 */
#ifndef XHLOC_COLLECTIVE_EXEC_H
#define XHLOC_COLLECTIVE_EXEC_H

#include "../support/exchange.h"
#include "platform.h"

/* A prepared collective thunk. */
struct CollExec {
  const Thunk *t;
  Shape **in, **out;               /* parsed shapes, n each (ids: out[0]) */
  int64_t *in_bytes, *out_bytes;
  bool on_device;                  /* run by the platform's coll_run, not
                                      staged through host memory */
  void *dev;                       /* the platform's own (its communicator),
                                      set by its coll_run */
  struct CollSlots *slots;         /* host memory kept from run to run
                                      (heap; coll_free) */
};

/* A collective's group as the platform's coll_run sees it. */
struct CollGroup {
  const int64_t *members;          /* flattened device ids, in group order */
  int n, me;                       /* members; this device's place */
  int64_t self;                    /* this device's flattened id */
  int64_t ndev;                    /* devices of the run */
  Exchange *xg;                    /* how the members reach each other;
                                      NULL: this device alone */
  const void *key;                 /* the thunk: the same on every device */
  const char *name;                /* its name, the same in every process */
};

/* Shares len bytes from the group's first member with the others (an NCCL
 * unique id): xchg_bcast over g->xg; nothing to do for a group of one. */
bool coll_group_share(const CollGroup *g, void *bytes, size_t len, Diag *d);

/* Checks collective thunk t (its shapes against its slices, its element
 * types against its reduction) and parses what a run needs, in a; asks
 * platform p (may be NULL) whether it runs it itself.  One device runs it
 * (its host memory is kept from run to run): each device prepares its
 * own, from the same thunk. */
CollExec *coll_prepare(Arena *a, const Thunk *t, Platform *p, Diag *d);
/* Frees its host memory (the rest is in the arena); NULL is fine. */
void coll_free(CollExec *x);
/* Runs it as device (replica, partition) of the run whose devices meet
 * through xg (NULL: this device alone); in[k] and out[k] are the device
 * addresses of its operand and result slices. */
bool coll_run(CollExec *x, Platform *p, Exchange *xg, int64_t replica, int64_t partition,
              const DevPtr *in, const DevPtr *out, Diag *d);
/* The -start thunk of an asynchronous pair (async_id >= 0): starts the
 * collective as coll_run runs it.  On the host platform, staged through
 * host memory with an exchange that has background threads, the staged
 * operands are exchanged and the results written on a thread of their own
 * while the caller goes on, and *pending is for coll_wait (the pair's done
 * thunk).  Else it completes here and *pending is NULL: on a GPU the
 * platform's library (or the staging) runs the collective in stream order
 * at the -start, so the -done has nothing left to wait for. */
typedef struct CollPending CollPending;
bool coll_start(CollExec *x, Platform *p, Exchange *xg, int64_t replica, int64_t partition,
                const DevPtr *in, const DevPtr *out, CollPending **pending, Diag *d);
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
