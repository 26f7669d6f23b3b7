/*
 * tree_reduction.h - XLA's CPU reduction order as an HLO rewrite (see
 * tree_reduction.c).
 */
#ifndef XHLO_TREE_REDUCTION_H
#define XHLO_TREE_REDUCTION_H

#include "hlo.h"

/* Rewrites every reduce of m that XLA's CPU reduces as a tree into
 * reduce-window + reduce, to a fixed point, and with library_too the ones
 * it gives its reduction library as well; whether anything changed. */
bool hlo_tree_reductions(HloModule *m, bool library_too);

/* Rewrites each float add reduce with one input element per result element
 * and a constant zero init into a reshape of its input, as XLA's
 * simplifier does (-0 stays -0); whether anything changed. */
bool hlo_one_element_sums(HloModule *m);

/* Whether XLA's CPU hands reduce r to its reduction library (and leaves it
 * whole): f32 or f64, a reducer that is add, maximum or minimum of its two
 * parameters, an input of at least 4096 elements. */
bool hlo_reduce_is_library(const HloInstr *r);

#endif
