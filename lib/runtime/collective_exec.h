/*
 * collective_exec.h - collective thunks at run time (collective_exec.c),
 * for the executor.
 */
#ifndef XHLOC_COLLECTIVE_EXEC_H
#define XHLOC_COLLECTIVE_EXEC_H

#include "../support/rendezvous.h"
#include "platform.h"

typedef struct CollExec CollExec;

/* Checks collective thunk t (its shapes against its slices, its element
 * types against its reduction) and parses what a run needs, in a. */
CollExec *coll_prepare(Arena *a, const Thunk *t, Diag *d);
/* Runs it as device (replica, partition) of the run whose devices meet in
 * w (NULL: this device alone); in[k] and out[k] are the device addresses
 * of its operand and result slices. */
bool coll_run(const CollExec *x, Platform *p, Rendezvous *w, int64_t replica,
              int64_t partition, const DevPtr *in, const DevPtr *out, Diag *d);

#endif
