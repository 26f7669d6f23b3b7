/*
 * indexing_simplify.c - the bounds-aware simplifier for expressions and maps.
 *
 * MLIR's own affine simplifier knows nothing of the ranges of dimensions and
 * symbols, so it cannot remove a floordiv or mod.  With bounds we can:
 *
 *   x floordiv d    -> q            when x stays within [q*d, q*d + d-1]
 *   x mod m         -> x - q*m      likewise
 *   (x mod m*d) floordiv d  -> (x floordiv d) mod m
 *   (g*P + N) floordiv d    -> P floordiv (d/g)      g | d, N in [0, g-1]
 *   (g*P + N) mod m         -> N + g * (P mod (m/g)) g | m, N in [0, g-1]
 *
 * where the g*P/N split is tried for g = gcd(d, coefficient) of each term,
 * largest first (the constant is split as g*q + r with r in [0, g-1]).
 * Together with the constructors' exact rules (multiples pulled out of
 * floordiv and dropped from mod, c * (x floordiv c) + x mod c -> x) this
 * turns composed reshapes back into plain dimensions, e.g.
 * ((100d0 + 10d1 + d2) mod 100) floordiv 10 -> d1 for d_i in [0, 9].
 *
 * Expressions are rewritten bottom-up in passes until a pass changes
 * nothing.  Results and ranges are memoized in the context's BoundsCache for
 * as long as the variable bounds stay the same: the DAG shares
 * subexpressions, and along a fusion the constraints carried over from one
 * composition to the next are the same expressions under the same bounds.
 *
 * Maps are simplified by folding runtime variables that are constants or
 * iotas, substituting range variables with a single value, rewriting each
 * constraint to a normal form (constant moved to the interval, common factor
 * divided out, floordiv undone), turning constraints on one variable into its
 * bounds, dropping constraints that always hold, detecting ones that never
 * do (the map is then known empty), simplifying the results, and removing
 * symbols no longer used.
 */
#include "indexing.h"
#include "affine_internal.h"

#include <stdlib.h>
#include <string.h>

typedef struct Simp {
  AffCtx *c;
  const Interval *dims, *syms;
  BoundsCache *bc;
} Simp;

/* Makes the context's cache valid for these bounds: kept when they are the
 * bounds it was filled under, else emptied. */
static Simp enter_bounds(AffCtx *c, const Interval *dims, int ndims,
                         const Interval *syms, int nsyms) {
  BoundsCache *bc = aff_ctx_bounds_cache(c);
  Simp s = {c, dims, syms, bc};
  int n = ndims + nsyms;
  if (bc->nbounds == n && bc->ndims == ndims && bc->epoch_valid &&
      (!ndims || memcmp(bc->bounds, dims, sizeof(Interval) * (size_t)ndims) == 0) &&
      (!nsyms || memcmp(bc->bounds + ndims, syms, sizeof(Interval) * (size_t)nsyms) == 0))
    return s;
  aff_memo_reset(&bc->simp);
  range_memo_reset(&bc->range);
  if (n > bc->cap) {
    bc->cap = n * 2;
    bc->bounds = xreallocarray(bc->bounds, (size_t)bc->cap, sizeof(Interval));
  }
  if (ndims)
    memcpy(bc->bounds, dims, sizeof(Interval) * (size_t)ndims);
  if (nsyms)
    memcpy(bc->bounds + ndims, syms, sizeof(Interval) * (size_t)nsyms);
  bc->ndims = ndims;
  bc->nbounds = n;
  bc->epoch_valid = true;
  return s;
}

/* aff_range, memoized under the current bounds. */
static Interval range_of(const Simp *s, const AffExpr *e) {
  switch (e->kind) {
  case AFF_CONST:
    return interval(e->value, e->value);
  case AFF_DIM:
    return s->dims[e->value];
  case AFF_SYM:
    return s->syms[e->value];
  default:
    break;
  }
  Interval r;
  if (range_memo_get(&s->bc->range, e, &r))
    return r;
  switch (e->kind) {
  case AFF_FLOORDIV:
    r = interval_floordiv(range_of(s, e->lhs), e->value);
    break;
  case AFF_CEILDIV:
    r = interval_ceildiv(range_of(s, e->lhs), e->value);
    break;
  case AFF_MOD:
    r = interval_mod(range_of(s, e->lhs), e->value);
    break;
  default:
    r = interval(e->value, e->value);
    for (int i = 0; i < e->nterms; i++)
      r = interval_add(r, interval_scale(range_of(s, e->terms[i].atom),
                                         e->terms[i].coef));
  }
  range_memo_put(&s->bc->range, e, r);
  return r;
}

/* Tries to write z (a sum) as g*P + N with g | d, g > 1 and N in [0, g-1].
 * On success returns g and sets *p = P and *n = N. */
static int64_t split_by_gcd(const Simp *s, const AffExpr *z, int64_t d,
                            const AffExpr **p, const AffExpr **n) {
  if (z->kind != AFF_SUM)
    return 0;
  int64_t cand[16];
  int ncand = 0;
  for (int i = 0; i < z->nterms && ncand < (int)ARRAY_LEN(cand); i++) {
    int64_t k = z->terms[i].coef;
    if (k == 1 || k == -1)
      continue;
    int64_t g = i64_gcd(k, d);
    if (g <= 1)
      continue;
    bool dup = false;
    for (int j = 0; j < ncand; j++)
      dup |= cand[j] == g;
    if (!dup)
      cand[ncand++] = g;
  }
  /* Largest first. */
  for (int i = 1; i < ncand; i++)
    for (int j = i; j > 0 && cand[j - 1] < cand[j]; j--) {
      int64_t t = cand[j];
      cand[j] = cand[j - 1];
      cand[j - 1] = t;
    }
  for (int ci = 0; ci < ncand; ci++) {
    int64_t g = cand[ci];
    LinBuf lp, ln;
    lin_init(&lp);
    lin_init(&ln);
    for (int i = 0; i < z->nterms; i++) {
      if (z->terms[i].coef % g == 0)
        lin_add(s->c, &lp, z->terms[i].atom, z->terms[i].coef / g);
      else
        lin_add(s->c, &ln, z->terms[i].atom, z->terms[i].coef);
    }
    lp.k = i64_floordiv(z->value, g);
    ln.k = i64_mod(z->value, g);
    const AffExpr *pe = lin_finish(s->c, &lp);
    const AffExpr *ne = lin_finish(s->c, &ln);
    Interval r = range_of(s, ne);
    if (r.lo >= 0 && r.hi < g) {
      *p = pe;
      *n = ne;
      return g;
    }
  }
  return 0;
}

static const AffExpr *bounded_mod(const Simp *s, const AffExpr *x, int64_t m) {
  AffCtx *c = s->c;
  Interval r = range_of(s, x);
  if (!interval_is_empty(r) && i64_floordiv(r.lo, m) == i64_floordiv(r.hi, m)) {
    bool ovf = false;
    int64_t q = i64_floordiv(r.lo, m);
    int64_t qm = i64_sat_mul(q, m, &ovf);
    if (!ovf)
      return aff_add_const(c, x, -qm);
  }
  const AffExpr *base = aff_mod(c, x, m);
  if (base->kind != AFF_MOD)
    return base;
  const AffExpr *z = base->lhs;
  int64_t mm = base->value;
  if (z != x) {
    r = range_of(s, z);
    if (!interval_is_empty(r) && r.lo >= 0 && r.hi < mm)
      return z;
  }
  const AffExpr *p, *n;
  int64_t g = split_by_gcd(s, z, mm, &p, &n);
  if (g)
    return aff_add(c, n, aff_scale(c, aff_mod(c, p, mm / g), g));
  return base;
}

static const AffExpr *bounded_floordiv(const Simp *s, const AffExpr *x,
                                       int64_t d) {
  AffCtx *c = s->c;
  Interval r = range_of(s, x);
  if (!interval_is_empty(r) && i64_floordiv(r.lo, d) == i64_floordiv(r.hi, d))
    return aff_const(c, i64_floordiv(r.lo, d));
  /* (y mod m) floordiv d = (y floordiv d) mod (m/d) when d | m. */
  if (x->kind == AFF_MOD && x->value % d == 0)
    return aff_mod(c, aff_floordiv(c, x->lhs, d), x->value / d);
  const AffExpr *base = aff_floordiv(c, x, d);
  if (base->kind != AFF_FLOORDIV)
    return base;
  const AffExpr *p, *n;
  int64_t g = split_by_gcd(s, base->lhs, base->value, &p, &n);
  if (g)
    return aff_floordiv(c, p, base->value / g);
  return base;
}

static const AffExpr *bounded_ceildiv(const Simp *s, const AffExpr *x,
                                      int64_t d) {
  Interval r = range_of(s, x);
  if (!interval_is_empty(r) && i64_ceildiv(r.lo, d) == i64_ceildiv(r.hi, d))
    return aff_const(s->c, i64_ceildiv(r.lo, d));
  return aff_ceildiv(s->c, x, d);
}

static const AffExpr *simp_rec(const Simp *s, const AffExpr *e) {
  if (e->kind == AFF_CONST || e->kind == AFF_DIM || e->kind == AFF_SYM)
    return e;
  const AffExpr *r = aff_memo_get(&s->bc->simp, e);
  if (r)
    return r;
  switch (e->kind) {
  case AFF_SUM: {
    LinBuf l;
    lin_init(&l);
    bool changed = false;
    for (int i = 0; i < e->nterms; i++) {
      const AffExpr *a = simp_rec(s, e->terms[i].atom);
      changed |= a != e->terms[i].atom;
      lin_add(s->c, &l, a, e->terms[i].coef);
    }
    l.k = i64_sat_add(l.k, e->value, aff_ctx_overflow_flag(s->c));
    if (changed) {
      r = lin_finish(s->c, &l);
    } else {
      lin_free(&l);
      r = e;
    }
    break;
  }
  case AFF_FLOORDIV:
    r = bounded_floordiv(s, simp_rec(s, e->lhs), e->value);
    break;
  case AFF_CEILDIV:
    r = bounded_ceildiv(s, simp_rec(s, e->lhs), e->value);
    break;
  case AFF_MOD:
    r = bounded_mod(s, simp_rec(s, e->lhs), e->value);
    break;
  default:
    r = e;
  }
  aff_memo_put(&s->bc->simp, e, r);
  return r;
}

/* Passes until one changes nothing (the memo makes repeated passes over
 * unchanged parts free). */
static const AffExpr *simplify_fix(const Simp *s, const AffExpr *e) {
  for (int pass = 0; pass < 32; pass++) {
    const AffExpr *n = simp_rec(s, e);
    if (n == e)
      return e;
    e = n;
  }
  return e;
}

const AffExpr *aff_simplify(AffCtx *c, const AffExpr *e, const Interval *dims,
                            int ndims, const Interval *syms, int nsyms) {
  if (e->kind == AFF_CONST || e->kind == AFF_DIM || e->kind == AFF_SYM)
    return e;
  Simp s = enter_bounds(c, dims, ndims, syms, nsyms);
  return simplify_fix(&s, e);
}

/*
 * Maps
 */

/* Symbol bounds in one array: range variables, then runtime variables. */
static Interval *symbol_bounds(Arena *a, const IndexingMap *m) {
  Interval *v = ARENA_ARRAY(a, Interval, imap_nsyms(m) + 1);
  for (int i = 0; i < m->nrange; i++)
    v[i] = m->range[i];
  for (int i = 0; i < m->nrt; i++)
    v[m->nrange + i] = m->rt[i].range;
  return v;
}

static void set_symbol_bound(IndexingMap *m, int i, Interval r) {
  if (i < m->nrange)
    m->range[i] = r;
  else
    m->rt[i - m->nrange].range = r;
}

/* The canonical known-empty form of m (so that equal-shaped empty maps
 * compare equal). */
static const IndexingMap *make_empty(AffCtx *c, const IndexingMap *m) {
  Arena *a = aff_ctx_arena(c);
  IndexingMap *n = ARENA_NEW(a, IndexingMap);
  n->empty = true;
  n->ndims = m->ndims;
  n->dims = ARENA_ARRAY(a, Interval, m->ndims + 1);
  for (int i = 0; i < m->ndims; i++)
    n->dims[i] = interval(0, -1);
  n->nresults = m->nresults;
  n->results = ARENA_ARRAY(a, const AffExpr *, m->nresults + 1);
  for (int i = 0; i < m->nresults; i++)
    n->results[i] = aff_const(c, 0);
  return n;
}

/* Replaces every occurrence of the symbols in `syms` (NULL entries kept) in
 * results, constraints and runtime-variable accesses. */
static void replace_syms(AffCtx *c, IndexingMap *m, const AffExpr *const *syms,
                         int nsyms) {
  for (int i = 0; i < m->nresults; i++)
    m->results[i] = aff_replace(c, m->results[i], NULL, 0, syms, nsyms);
  for (int i = 0; i < m->ncons; i++)
    m->cons[i].expr = aff_replace(c, m->cons[i].expr, NULL, 0, syms, nsyms);
  for (int i = 0; i < m->nrt; i++)
    for (int j = 0; j < m->rt[i].nexprs; j++)
      m->rt[i].exprs[j] = aff_replace(c, m->rt[i].exprs[j], NULL, 0, syms, nsyms);
}

/* Folds runtime variables whose value is known from the HLO (a constant
 * read at a constant index, an iota) and range variables with one value. */
static void fold_known_symbols(AffCtx *c, IndexingMap *m) {
  int ns = imap_nsyms(m);
  if (!ns)
    return;
  Arena *a = aff_ctx_arena(c);
  const AffExpr **repl = ARENA_ARRAY(a, const AffExpr *, ns);
  bool any = false;
  for (int i = 0; i < m->nrange; i++)
    if (interval_is_point(m->range[i])) {
      repl[i] = aff_const(c, m->range[i].lo);
      any = true;
    }
  Interval *sb = symbol_bounds(a, m);
  for (int i = 0; i < m->nrt; i++) {
    const RtVar *v = &m->rt[i];
    const HloInstr *h = v->hlo;
    if (!h || !h->shape || !shape_is_array(h->shape) ||
        v->nexprs != h->shape->rank)
      continue;
    if (h->op == HLO_CONSTANT && h->literal && h->literal->data &&
        !h->literal->elided && et_is_int(h->shape->et)) {
      int64_t lin = 0;
      bool ok = true;
      for (int j = 0; j < v->nexprs && ok; j++) {
        const AffExpr *e = v->exprs[j];
        ok = e->kind == AFF_CONST && e->value >= 0 &&
             e->value < h->shape->dims[j];
        if (ok)
          lin = lin * h->shape->dims[j] + e->value;
      }
      if (!ok)
        continue;
      int64_t val = literal_get_s64(h->literal, lin);
      if (interval_contains(v->range, val)) {
        repl[m->nrange + i] = aff_const(c, val);
        any = true;
      }
    } else if (h->op == HLO_IOTA && h->iota_dim >= 0 && h->iota_dim < v->nexprs) {
      /* The iota's value is its index along iota_dimension; fold it only
       * when it cannot be clamped into the feasible range. */
      const AffExpr *e = v->exprs[h->iota_dim];
      if (interval_contains_interval(v->range, aff_range(e, m->dims, sb))) {
        repl[m->nrange + i] = e;
        any = true;
      }
    }
  }
  if (any)
    replace_syms(c, m, repl, ns);
}

/* Rewrites `e in r` to a normal form: the constant moved into r, a common
 * factor divided out (first coefficient positive), floordiv by a constant
 * undone.  Returns false when the constraint can never hold. */
static bool normalize_constraint(AffCtx *c, const AffExpr **pe, Interval *pr) {
  const AffExpr *e = *pe;
  Interval r = *pr;
  for (;;) {
    if (interval_is_empty(r))
      return false;
    if (e->kind == AFF_SUM && e->value != 0) {
      r = interval(i64_sat_add(r.lo, -e->value, NULL),
                   i64_sat_add(r.hi, -e->value, NULL));
      e = aff_add_const(c, e, -e->value);
      continue;
    }
    if (e->kind == AFF_SUM) {
      int64_t g = 0;
      for (int i = 0; i < e->nterms; i++)
        g = i64_gcd(g, e->terms[i].coef);
      if (e->terms[0].coef < 0)
        g = -g;
      if (g != 1) {
        /* e = g * e' */
        LinBuf l;
        lin_init(&l);
        for (int i = 0; i < e->nterms; i++)
          lin_add(c, &l, e->terms[i].atom, e->terms[i].coef / g);
        e = lin_finish(c, &l);
        if (g > 0) {
          r = interval(i64_ceildiv(r.lo, g), i64_floordiv(r.hi, g));
        } else {
          /* -h * x in [lo, hi]  <=>  x in [ceil(-hi / h), floor(-lo / h)] */
          int64_t h = -g;
          r = interval(i64_ceildiv(i64_sat_mul(r.hi, -1, NULL), h),
                       i64_floordiv(i64_sat_mul(r.lo, -1, NULL), h));
        }
        continue;
      }
    }
    if (e->kind == AFF_FLOORDIV) {
      bool ovf = false;
      int64_t lo = i64_sat_mul(r.lo, e->value, &ovf);
      int64_t hi = i64_sat_add(i64_sat_mul(r.hi, e->value, &ovf), e->value - 1,
                               &ovf);
      if (ovf)
        break;
      r = interval(lo, hi);
      e = e->lhs;
      continue;
    }
    break;
  }
  *pe = e;
  *pr = r;
  return !interval_is_empty(r);
}

static int constraint_cmp(const void *a, const void *b) {
  const Constraint *x = a, *y = b;
  int r = aff_compare(x->expr, y->expr);
  if (r)
    return r;
  if (x->range.lo != y->range.lo)
    return x->range.lo < y->range.lo ? -1 : 1;
  return (x->range.hi > y->range.hi) - (x->range.hi < y->range.hi);
}

/* Simplifies the constraints, moving what it can into variable bounds.
 * Returns false when the domain is found empty. */
static bool simplify_constraints(AffCtx *c, IndexingMap *m) {
  Arena *a = aff_ctx_arena(c);
  int ns = imap_nsyms(m);
  for (int iter = 0; iter < 16; iter++) {
    bool bounds_changed = false;
    Interval *sb = symbol_bounds(a, m);
    Constraint *out = ARENA_ARRAY(a, Constraint, m->ncons + 1);
    int nout = 0;
    for (int i = 0; i < m->ncons; i++) {
      Simp s = enter_bounds(c, m->dims, m->ndims, sb, ns);
      const AffExpr *e = simplify_fix(&s, m->cons[i].expr);
      Interval r = m->cons[i].range;
      if (!normalize_constraint(c, &e, &r))
        return false;
      e = simplify_fix(&s, e);
      if (e->kind == AFF_CONST) {
        if (!interval_contains(r, e->value))
          return false;
        continue;
      }
      if (e->kind == AFF_DIM || e->kind == AFF_SYM) {
        Interval *b = e->kind == AFF_DIM ? &m->dims[e->value] : &sb[e->value];
        Interval n = interval_intersect(*b, r);
        if (interval_is_empty(n))
          return false;
        if (n.lo != b->lo || n.hi != b->hi) {
          *b = n;
          if (e->kind == AFF_SYM)
            set_symbol_bound(m, (int)e->value, n);
          bounds_changed = true;
        }
        continue;
      }
      Interval er = range_of(&s, e);
      if (interval_contains_interval(r, er))
        continue;
      if (interval_is_empty(interval_intersect(r, er)))
        return false;
      bool merged = false;
      for (int j = 0; j < nout && !merged; j++)
        if (out[j].expr == e) {
          out[j].range = interval_intersect(out[j].range, r);
          if (interval_is_empty(out[j].range))
            return false;
          merged = true;
        }
      if (!merged) {
        out[nout].expr = e;
        out[nout].range = r;
        nout++;
      }
    }
    m->cons = out;
    m->ncons = nout;
    if (!bounds_changed)
      break;
  }
  for (int i = 0; i < m->ndims; i++)
    if (interval_is_empty(m->dims[i]))
      return false;
  for (int i = 0; i < m->nrange; i++)
    if (interval_is_empty(m->range[i]))
      return false;
  for (int i = 0; i < m->nrt; i++)
    if (interval_is_empty(m->rt[i].range))
      return false;
  return true;
}

/* Drops symbols that nothing refers to and renumbers the rest. */
static void remove_unused_symbols(AffCtx *c, IndexingMap *m) {
  int ns = imap_nsyms(m);
  if (!ns)
    return;
  Arena *a = aff_ctx_arena(c);
  bool *used = ARENA_ARRAY(a, bool, ns);
  uint64_t mask = 0;
  for (int i = 0; i < m->nresults; i++)
    mask |= m->results[i]->sym_mask;
  for (int i = 0; i < m->ncons; i++)
    mask |= m->cons[i].expr->sym_mask;
  for (int s = 0; s < ns; s++) {
    if (s < 63 && !(mask & (1ull << s)))
      continue;
    for (int i = 0; i < m->nresults && !used[s]; i++)
      used[s] = aff_uses_sym(m->results[i], s);
    for (int i = 0; i < m->ncons && !used[s]; i++)
      used[s] = aff_uses_sym(m->cons[i].expr, s);
  }
  /* Symbols read by the accesses of kept runtime variables stay too. */
  for (int i = 0; i < m->nrt; i++) {
    if (!used[m->nrange + i])
      continue;
    for (int j = 0; j < m->rt[i].nexprs; j++)
      for (int s = 0; s < ns; s++)
        if (!used[s] && aff_uses_sym(m->rt[i].exprs[j], s))
          used[s] = true;
  }
  int nkeep = 0;
  for (int s = 0; s < ns; s++)
    nkeep += used[s];
  if (nkeep == ns)
    return;
  const AffExpr **repl = ARENA_ARRAY(a, const AffExpr *, ns);
  int next = 0, nrange = 0, nrt = 0;
  for (int s = 0; s < ns; s++) {
    if (!used[s])
      continue;
    if (next != s)
      repl[s] = aff_sym(c, next);
    next++;
    if (s < m->nrange)
      m->range[nrange++] = m->range[s];
    else
      m->rt[nrt++] = m->rt[s - m->nrange];
  }
  m->nrange = nrange;
  m->nrt = nrt;
  replace_syms(c, m, repl, ns);
}

const IndexingMap *imap_simplify(AffCtx *c, const IndexingMap *orig) {
  if (orig->undefined || orig->empty)
    return orig;
  IndexingMap *m = imap_copy(c, orig);
  fold_known_symbols(c, m);
  if (!simplify_constraints(c, m))
    return make_empty(c, m);
  Interval *sb = symbol_bounds(aff_ctx_arena(c), m);
  Simp s = enter_bounds(c, m->dims, m->ndims, sb, imap_nsyms(m));
  for (int i = 0; i < m->nresults; i++)
    m->results[i] = simplify_fix(&s, m->results[i]);
  for (int i = 0; i < m->nrt; i++)
    for (int j = 0; j < m->rt[i].nexprs; j++)
      m->rt[i].exprs[j] = simplify_fix(&s, m->rt[i].exprs[j]);
  remove_unused_symbols(c, m);
  if (m->ncons > 1)
    qsort(m->cons, (size_t)m->ncons, sizeof(Constraint), constraint_cmp);
  return m;
}
