/*
 * fusion_util.h - what the fusion passes (priority-fusion, fusion-wrapper)
 * share: the computations they run in.
 */
#ifndef XHLOC_FUSION_UTIL_H
#define XHLOC_FUSION_UTIL_H

#include "../lib/hlo/hlo.h"

/* The entry and the computations reached from it through while,
 * conditional and call, less those also used as scalar functions
 * (to_apply, ...): fusing there would change them for those callers too.
 * Heap array in *out; returns the count. */
int fusion_control_comps(const HloModule *m, HloComp ***out);

#endif
