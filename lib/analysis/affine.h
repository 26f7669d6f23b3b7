/*
 * affine.h - quasi-affine expressions over dimension and symbol variables,
 * and integer intervals.
 *
 * An expression is a constant, a dimension d<i>, a symbol s<i>, a
 * floordiv/ceildiv/mod of an expression by a positive constant, or a sum
 * sum(coef * atom) + constant whose atoms are the non-constant, non-sum kinds
 * above.  Expressions live in an AffCtx, are immutable and hash-consed: two
 * expressions built the same way are the same pointer, so equality is `==`.
 *
 * The constructors apply only rewrites that hold for every value of the
 * variables: like terms are merged, terms are kept in one canonical order
 * (dims, symbols, floordivs, ceildivs, mods), multiples of the divisor are
 * pulled out of floordiv and dropped from mod, common factors are cancelled,
 * nested floordivs and mods are merged, and c * (x floordiv c) + x mod c
 * becomes x.  Rewrites that need the bounds of the variables live in the
 * simplifier (indexing.h).
 *
 * Sectioned by the file that implements each part.
 */
#ifndef XHLOC_AFFINE_H
#define XHLOC_AFFINE_H

#include "../support/support.h"

/*
 * interval.c: closed integer intervals [lo, hi]; empty when lo > hi.
 * Arithmetic saturates at INT64_MIN / INT64_MAX instead of overflowing.
 */
typedef struct Interval {
  int64_t lo, hi;
} Interval;

static inline Interval interval(int64_t lo, int64_t hi) {
  Interval r = {lo, hi};
  return r;
}
bool interval_is_empty(Interval a);
bool interval_is_point(Interval a);
bool interval_contains(Interval a, int64_t v);
bool interval_contains_interval(Interval outer, Interval inner);
Interval interval_intersect(Interval a, Interval b);
Interval interval_union(Interval a, Interval b);  /* the hull */
Interval interval_add(Interval a, Interval b);
Interval interval_scale(Interval a, int64_t k);
Interval interval_floordiv(Interval a, int64_t d); /* d > 0 */
Interval interval_ceildiv(Interval a, int64_t d);  /* d > 0 */
Interval interval_mod(Interval a, int64_t d);      /* d > 0: within [0, d-1] */
void interval_print(StrBuf *b, Interval a);        /* "[lo, hi]" */

/* Integer helpers with floor / ceiling rounding and a non-negative mod. */
int64_t i64_floordiv(int64_t a, int64_t b);        /* b > 0 */
int64_t i64_ceildiv(int64_t a, int64_t b);         /* b > 0 */
int64_t i64_mod(int64_t a, int64_t b);             /* b > 0: in [0, b-1] */
int64_t i64_gcd(int64_t a, int64_t b);             /* >= 0; gcd(0,0) = 0 */
/* Saturating arithmetic; *overflow (when not NULL) is set on saturation. */
int64_t i64_sat_add(int64_t a, int64_t b, bool *overflow);
int64_t i64_sat_mul(int64_t a, int64_t b, bool *overflow);

/*
 * affine.c: construction, evaluation, ordering, substitution.
 */
typedef enum AffKind {
  /* The order of the kinds is the canonical order of terms in a sum. */
  AFF_CONST,    /* value */
  AFF_DIM,      /* d<value> */
  AFF_SYM,      /* s<value> */
  AFF_FLOORDIV, /* lhs floordiv value */
  AFF_CEILDIV,  /* lhs ceildiv value */
  AFF_MOD,      /* lhs mod value */
  AFF_SUM,      /* terms + value; at least one term, never a lone 1*atom */
} AffKind;

typedef struct AffExpr AffExpr;
typedef struct AffCtx AffCtx;

typedef struct AffTerm {
  int64_t coef;                   /* never 0 */
  const AffExpr *atom;            /* DIM, SYM, FLOORDIV, CEILDIV or MOD */
} AffTerm;

struct AffExpr {
  AffKind kind;
  uint32_t hash;
  int64_t value;                  /* see AffKind */
  const AffExpr *lhs;             /* FLOORDIV, CEILDIV, MOD */
  int nterms;                     /* SUM */
  const AffTerm *terms;           /* SUM: canonical order, distinct atoms */
  uint64_t dim_mask, sym_mask;    /* bit min(i, 63) set when d<i> / s<i> occurs */
  int depth;                      /* 0 for leaves */
};

AffCtx *aff_ctx_new(void);
void aff_ctx_free(AffCtx *c);
Arena *aff_ctx_arena(AffCtx *c);  /* for maps and other analysis results */
/* Set when a coefficient or constant overflowed int64 since the last clear;
 * results built meanwhile are not exact. */
bool aff_ctx_overflowed(const AffCtx *c);
void aff_ctx_clear_overflow(AffCtx *c);

const AffExpr *aff_const(AffCtx *c, int64_t v);
const AffExpr *aff_dim(AffCtx *c, int i);
const AffExpr *aff_sym(AffCtx *c, int i);
const AffExpr *aff_add(AffCtx *c, const AffExpr *a, const AffExpr *b);
const AffExpr *aff_add_const(AffCtx *c, const AffExpr *a, int64_t k);
const AffExpr *aff_sub(AffCtx *c, const AffExpr *a, const AffExpr *b);
const AffExpr *aff_neg(AffCtx *c, const AffExpr *a);
const AffExpr *aff_scale(AffCtx *c, const AffExpr *a, int64_t k); /* a * k */
/* a * b where one of them is a constant; NULL when neither is. */
const AffExpr *aff_mul(AffCtx *c, const AffExpr *a, const AffExpr *b);
/* Division and remainder by a constant d > 0 (the callers guarantee it;
 * anything else is an internal bug and aborts). */
const AffExpr *aff_floordiv(AffCtx *c, const AffExpr *a, int64_t d);
const AffExpr *aff_ceildiv(AffCtx *c, const AffExpr *a, int64_t d);
const AffExpr *aff_mod(AffCtx *c, const AffExpr *a, int64_t d);
/* A sum of terms (any order, repeated atoms allowed) plus a constant. */
const AffExpr *aff_sum(AffCtx *c, const AffTerm *terms, int n, int64_t k);

static inline bool aff_is_const(const AffExpr *e) { return e->kind == AFF_CONST; }
static inline bool aff_uses_syms(const AffExpr *e) { return e->sym_mask != 0; }
bool aff_uses_dim(const AffExpr *e, int i);
bool aff_uses_sym(const AffExpr *e, int i);

/* Value at a point (floordiv and mod round toward -inf; mod >= 0). */
int64_t aff_eval(const AffExpr *e, const int64_t *dims, const int64_t *syms);
/* Total order used for canonical sums (structural; independent of
 * addresses, so printing is deterministic). */
int aff_compare(const AffExpr *a, const AffExpr *b);
/* Bounds of e over boxes of dims and syms (interval arithmetic). */
Interval aff_range(const AffExpr *e, const Interval *dims, const Interval *syms);

/* e with d<i> replaced by dims[i] and s<i> by syms[i] (a NULL array or NULL
 * entry leaves the variable as it is); rebuilt with the constructors. */
const AffExpr *aff_replace(AffCtx *c, const AffExpr *e,
                           const AffExpr *const *dims, int ndims,
                           const AffExpr *const *syms, int nsyms);

/* MLIR's affine text: "d0 * 8 + d1", "-d1 + 16", "(d0 - 1) floordiv 2",
 * "d2 + (d1 mod 2) * 4". */
void aff_print(StrBuf *b, const AffExpr *e);
char *aff_to_string(const AffExpr *e); /* heap; caller frees */

#endif
