/*
 * collective_exec.h - collective thunks at run time (collective_exec.c),
 * for the executor, and what a platform's own collective library
 * (platform.h: coll_takes, coll_run; the CUDA platform's NCCL,
 * collective_nccl.c) sees of them.
 */
#ifndef XHLOC_COLLECTIVE_EXEC_H
#define XHLOC_COLLECTIVE_EXEC_H

#include "../support/rendezvous.h"
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
};

/* The in-process CollShareFn (platform.h): ctx is the run's Rendezvous. */
bool coll_share_rendezvous(void *ctx, const void *key, const int64_t *members, int n,
                           int64_t self, void *bytes, size_t len, Diag *d);

/* Where a device runs its collectives: its place in the run and how its
 * groups meet.  Zero: a device alone. */
typedef struct CollEnv {
  Rendezvous *world;               /* the devices of this process; NULL:
                                      none other (alone, or one per process) */
  int64_t replica, partition;
  CollShareFn share;               /* NULL: only groups of one */
  void *share_ctx;
} CollEnv;

/* A collective's group as the platform's coll_run sees it. */
struct CollGroup {
  const int64_t *members;          /* flattened device ids, in group order */
  int n, me;                       /* members; this device's place */
  int64_t self;                    /* this device's flattened id */
  int64_t ndev;                    /* devices of the run */
  const CollEnv *env;
  const void *key;                 /* the thunk: the same on every device */
};

/* Shares bytes from the group's first member with the others (env's
 * share; nothing to do for a group of one). */
bool coll_group_share(const CollGroup *g, void *bytes, size_t len, Diag *d);

/* Checks collective thunk t (its shapes against its slices, its element
 * types against its reduction) and parses what a run needs, in a; asks
 * platform p (may be NULL) whether it runs it itself. */
CollExec *coll_prepare(Arena *a, const Thunk *t, Platform *p, Diag *d);
/* Runs it as the device env describes; in[k] and out[k] are the device
 * addresses of its operand and result slices. */
bool coll_run(CollExec *x, Platform *p, const CollEnv *env, const DevPtr *in,
              const DevPtr *out, Diag *d);

#endif
