/*
 * collective_desc.h - a collective thunk's description from its HLO
 * instruction (collective_desc.c), for thunk_emitter.c.
 */
#ifndef XHLOC_COLLECTIVE_DESC_H
#define XHLOC_COLLECTIVE_DESC_H

#include "../lib/hlo/hlo.h"
#include "../lib/runtime/thunks.h"

/* Fills c (everything but the slices and shapes, n included) for an
 * all-reduce, all-gather, reduce-scatter, all-to-all, collective-permute,
 * replica-id or partition-id of module m; arrays in a.  An error at i for
 * what a compiled collective does not take. */
bool collective_desc(Arena *a, const HloModule *m, const HloInstr *i,
                     CollDesc *c, Diag *d);

#endif
