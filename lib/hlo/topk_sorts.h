/*
 * topk_sorts.h - the sorts XLA's CPU compiler runs as its TopK (see
 * topk_sorts.c).
 */
#ifndef XHLO_TOPK_SORTS_H
#define XHLO_TOPK_SORTS_H

#include "hlo.h"

/* Marks stable every sort of m that XLA's CPU compiler turns into its TopK
 * (whose ties come out by index); whether any was marked. */
bool hlo_mark_topk_sorts(HloModule *m);

#endif
