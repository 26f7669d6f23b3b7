/*
 * rematerialization.h - meeting a memory limit by computing values again
 * instead of keeping them live (XLA's HloRematerialization), for
 * xhloc --memory-limit.
 */
#ifndef XHLOC_REMATERIALIZATION_H
#define XHLOC_REMATERIALIZATION_H

#include "buffer_assignment.h"

typedef struct RematStats {
  int64_t before, after;          /* Total bytes used, first and last */
  int rematerialized;             /* values computed again */
  int instructions;               /* instructions added */
  int rounds;                     /* buffer assignments made */
} RematStats;

/* Rewrites m (scheduled, after the backend preparation) until its buffer
 * assignment's Total bytes used is at most limit: at the peak of live
 * bytes, a value live across it whose later uses can read a copy computed
 * again just before them (with the producers that are dead by then, up to
 * a few levels) is computed again there, largest saving first.  Values
 * computed by fusions, elementwise and data-movement ops, and library
 * GEMMs and convolutions qualify; nothing with a side effect, no loop,
 * conditional, collective or random number.  True when the limit is met
 * (st tells how); false with an error in d that names the limit, the bytes
 * still needed, the peak and the largest buffers live there. */
bool rematerialize(HloModule *m, int64_t limit, RematStats *st, Diag *d);

#endif
