/*
 * affine_internal.h - helpers shared by the files of lib/analysis that build
 * expressions term by term: linear buffers (a sum under construction) and
 * pointer-keyed memo tables.  Not part of the public interface.
 */
#ifndef XHLOC_AFFINE_INTERNAL_H
#define XHLOC_AFFINE_INTERNAL_H

#include "affine.h"

/*
 * affine.c
 */

/* A sum under construction: terms in any order plus a constant. */
typedef struct LinBuf {
  AffTerm *t;
  int n, cap;
  int64_t k;
  AffTerm inl[16];
} LinBuf;

void lin_init(LinBuf *l);
void lin_free(LinBuf *l);
/* Adds coef * e (e of any kind: sums are flattened, constants folded). */
void lin_add(AffCtx *c, LinBuf *l, const AffExpr *e, int64_t coef);
/* The canonical expression for the buffer; frees the buffer. */
const AffExpr *lin_finish(AffCtx *c, LinBuf *l);

/*
 * memo.c
 */

/* Pointer -> pointer memo.  Lookups never iterate, so addresses never
 * influence results.  aff_memo_reset forgets everything in O(1). */
typedef struct AffMemo {
  const void **keys, **vals;
  uint32_t *epochs;
  uint32_t cap, len, epoch;
} AffMemo;

void aff_memo_reset(AffMemo *m);
const void *aff_memo_get(const AffMemo *m, const void *key);
void aff_memo_put(AffMemo *m, const void *key, const void *val);
void aff_memo_free(AffMemo *m);

/* Pointer -> Interval memo, the same way. */
typedef struct RangeMemo {
  const void **keys;
  Interval *vals;
  uint32_t *epochs;
  uint32_t cap, len, epoch;
} RangeMemo;

void range_memo_reset(RangeMemo *m);
bool range_memo_get(const RangeMemo *m, const void *key, Interval *out);
void range_memo_put(RangeMemo *m, const void *key, Interval val);
void range_memo_free(RangeMemo *m);

/* What the bounds-aware simplifier has learned under one set of variable
 * bounds: simplified forms and ranges of expressions.  It stays valid while
 * the bounds stay the same, which they mostly do from one composition to the
 * next along a fusion, so the work on unchanged constraints is not redone. */
typedef struct BoundsCache {
  AffMemo simp;
  RangeMemo range;
  Interval *bounds;               /* dims, then symbols (heap) */
  int ndims, nbounds, cap;
  bool epoch_valid;               /* the memos hold entries for `bounds` */
} BoundsCache;

/* affine.c: the context's cache for the simplifier, and its overflow flag
 * (for saturating arithmetic outside affine.c). */
BoundsCache *aff_ctx_bounds_cache(AffCtx *c);
bool *aff_ctx_overflow_flag(AffCtx *c);

#endif
