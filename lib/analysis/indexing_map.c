/*
 * indexing_map.c - indexing maps: construction, composition, equality,
 * evaluation, and sets of maps.
 *
 * Maps live in the AffCtx's arena.  They are built by the per-op code and by
 * composition, then simplified (indexing_simplify.c) and from then on only
 * read.  The symbols of a map are its range variables followed by its
 * runtime variables; composition keeps that order by renumbering.
 */
#include "indexing.h"

#include <string.h>

static Interval *copy_intervals(Arena *a, const Interval *v, int n) {
  if (!n)
    return NULL;
  if (!v)
    return ARENA_ARRAY(a, Interval, n);
  return arena_memdup(a, v, sizeof(Interval) * (size_t)n);
}

IndexingMap *imap_new(AffCtx *c, int ndims, const Interval *dims, int nrange,
                      const Interval *range, int nresults,
                      const AffExpr *const *results) {
  Arena *a = aff_ctx_arena(c);
  IndexingMap *m = ARENA_NEW(a, IndexingMap);
  m->ndims = ndims;
  m->dims = copy_intervals(a, dims, ndims);
  m->nrange = nrange;
  m->range = copy_intervals(a, range, nrange);
  m->nresults = nresults;
  if (nresults)
    m->results = arena_memdup(a, results, sizeof(AffExpr *) * (size_t)nresults);
  return m;
}

IndexingMap *imap_from_sizes(AffCtx *c, int ndims, const int64_t *dim_sizes,
                             int nrange, const int64_t *range_sizes,
                             int nresults, const AffExpr *const *results) {
  Arena *a = aff_ctx_arena(c);
  Interval *d = ARENA_ARRAY(a, Interval, ndims + 1);
  Interval *r = ARENA_ARRAY(a, Interval, nrange + 1);
  for (int i = 0; i < ndims; i++)
    d[i] = interval(0, dim_sizes[i] - 1);
  for (int i = 0; i < nrange; i++)
    r[i] = interval(0, range_sizes[i] - 1);
  return imap_new(c, ndims, d, nrange, r, nresults, results);
}

IndexingMap *imap_identity(AffCtx *c, int rank, const int64_t *sizes) {
  const AffExpr **r = ARENA_ARRAY(aff_ctx_arena(c), const AffExpr *, rank + 1);
  for (int i = 0; i < rank; i++)
    r[i] = aff_dim(c, i);
  return imap_from_sizes(c, rank, sizes, 0, NULL, rank, r);
}

const IndexingMap *imap_undefined(AffCtx *c) {
  IndexingMap *m = ARENA_NEW(aff_ctx_arena(c), IndexingMap);
  m->undefined = true;
  return m;
}

IndexingMap *imap_copy(AffCtx *c, const IndexingMap *m) {
  Arena *a = aff_ctx_arena(c);
  IndexingMap *n = ARENA_NEW(a, IndexingMap);
  *n = *m;
  n->dims = copy_intervals(a, m->dims, m->ndims);
  n->range = copy_intervals(a, m->range, m->nrange);
  if (m->nresults)
    n->results = arena_memdup(a, m->results, sizeof(AffExpr *) * (size_t)m->nresults);
  if (m->nrt) {
    n->rt = arena_memdup(a, m->rt, sizeof(RtVar) * (size_t)m->nrt);
    for (int i = 0; i < m->nrt; i++)
      if (m->rt[i].nexprs)
        n->rt[i].exprs = arena_memdup(a, m->rt[i].exprs,
                                      sizeof(AffExpr *) * (size_t)m->rt[i].nexprs);
  }
  if (m->ncons)
    n->cons = arena_memdup(a, m->cons, sizeof(Constraint) * (size_t)m->ncons);
  return n;
}

void imap_add_constraint(AffCtx *c, IndexingMap *m, const AffExpr *e,
                         Interval range) {
  Constraint *n = ARENA_ARRAY(aff_ctx_arena(c), Constraint, m->ncons + 1);
  if (m->ncons)
    memcpy(n, m->cons, sizeof(Constraint) * (size_t)m->ncons);
  n[m->ncons].expr = e;
  n[m->ncons].range = range;
  m->cons = n;
  m->ncons++;
}

const AffExpr *imap_add_rt_var(AffCtx *c, IndexingMap *m, Interval range,
                               const HloInstr *hlo, int nexprs,
                               const AffExpr *const *exprs) {
  Arena *a = aff_ctx_arena(c);
  RtVar *n = ARENA_ARRAY(a, RtVar, m->nrt + 1);
  if (m->nrt)
    memcpy(n, m->rt, sizeof(RtVar) * (size_t)m->nrt);
  RtVar *v = &n[m->nrt];
  v->range = range;
  v->hlo = hlo;
  v->nexprs = nexprs;
  if (nexprs)
    v->exprs = arena_memdup(a, exprs, sizeof(AffExpr *) * (size_t)nexprs);
  m->rt = n;
  m->nrt++;
  return aff_sym(c, m->nrange + m->nrt - 1);
}

/*
 * Composition
 */

static const AffExpr **replace_all(AffCtx *c, const AffExpr *const *v, int n,
                                   const AffExpr *const *dims, int ndims,
                                   const AffExpr *const *syms, int nsyms) {
  if (!n)
    return NULL;
  const AffExpr **r = ARENA_ARRAY(aff_ctx_arena(c), const AffExpr *, n);
  for (int i = 0; i < n; i++)
    r[i] = aff_replace(c, v[i], dims, ndims, syms, nsyms);
  return r;
}

const IndexingMap *imap_compose(AffCtx *c, const IndexingMap *first,
                                const IndexingMap *second) {
  if (first->undefined || second->undefined ||
      first->nresults != second->ndims)
    return imap_undefined(c);
  Arena *a = aff_ctx_arena(c);
  int r1 = first->nrange, t1 = first->nrt;
  int r2 = second->nrange, t2 = second->nrt;

  /* first's symbols: range vars keep their numbers, runtime vars move past
   * second's range vars. */
  const AffExpr **fsym = ARENA_ARRAY(a, const AffExpr *, r1 + t1 + 1);
  bool renumber_first = r2 > 0 && t1 > 0;
  for (int i = 0; i < r1 + t1; i++)
    fsym[i] = aff_sym(c, i < r1 ? i : i + r2);
  const AffExpr **fres = (const AffExpr **)first->results;
  if (renumber_first)
    fres = replace_all(c, first->results, first->nresults, NULL, 0, fsym,
                       r1 + t1);

  /* second's variables: dims become first's results; range vars follow
   * first's; runtime vars go last. */
  const AffExpr **ssym = ARENA_ARRAY(a, const AffExpr *, r2 + t2 + 1);
  for (int i = 0; i < r2 + t2; i++)
    ssym[i] = aff_sym(c, i < r2 ? r1 + i : r1 + t1 + i);

  IndexingMap *m = ARENA_NEW(a, IndexingMap);
  m->empty = first->empty || second->empty;
  m->ndims = first->ndims;
  m->dims = copy_intervals(a, first->dims, first->ndims);
  m->nrange = r1 + r2;
  m->range = ARENA_ARRAY(a, Interval, m->nrange + 1);
  for (int i = 0; i < r1; i++)
    m->range[i] = first->range[i];
  for (int i = 0; i < r2; i++)
    m->range[r1 + i] = second->range[i];
  m->nresults = second->nresults;
  m->results = replace_all(c, second->results, second->nresults, fres,
                           first->nresults, ssym, r2 + t2);

  m->nrt = t1 + t2;
  m->rt = ARENA_ARRAY(a, RtVar, m->nrt + 1);
  for (int i = 0; i < t1; i++) {
    m->rt[i] = first->rt[i];
    if (renumber_first)
      m->rt[i].exprs = replace_all(c, first->rt[i].exprs, first->rt[i].nexprs,
                                   NULL, 0, fsym, r1 + t1);
  }
  for (int i = 0; i < t2; i++) {
    m->rt[t1 + i] = second->rt[i];
    m->rt[t1 + i].exprs = replace_all(c, second->rt[i].exprs,
                                      second->rt[i].nexprs, fres,
                                      first->nresults, ssym, r2 + t2);
  }

  /* Constraints: first's, second's (substituted), and second's domain on
   * first's results. */
  m->ncons = 0;
  m->cons = ARENA_ARRAY(a, Constraint,
                        first->ncons + second->ncons + second->ndims + 1);
  for (int i = 0; i < first->ncons; i++) {
    Constraint k = first->cons[i];
    if (renumber_first)
      k.expr = aff_replace(c, k.expr, NULL, 0, fsym, r1 + t1);
    m->cons[m->ncons++] = k;
  }
  for (int i = 0; i < second->ncons; i++) {
    Constraint k = second->cons[i];
    k.expr = aff_replace(c, k.expr, fres, first->nresults, ssym, r2 + t2);
    m->cons[m->ncons++] = k;
  }
  for (int j = 0; j < second->ndims; j++) {
    Constraint k = {fres[j], second->dims[j]};
    m->cons[m->ncons++] = k;
  }
  return m;
}

/*
 * Equality and evaluation
 */

static bool intervals_equal(const Interval *a, const Interval *b, int n) {
  for (int i = 0; i < n; i++)
    if (a[i].lo != b[i].lo || a[i].hi != b[i].hi)
      return false;
  return true;
}

static bool exprs_equal(const AffExpr *const *a, const AffExpr *const *b, int n) {
  for (int i = 0; i < n; i++)
    if (a[i] != b[i])
      return false;
  return true;
}

bool imap_equal(const IndexingMap *a, const IndexingMap *b) {
  if (a == b)
    return true;
  if (a->undefined || b->undefined)
    return a->undefined == b->undefined;
  if (a->empty != b->empty || a->ndims != b->ndims || a->nrange != b->nrange ||
      a->nrt != b->nrt || a->nresults != b->nresults || a->ncons != b->ncons)
    return false;
  if (!intervals_equal(a->dims, b->dims, a->ndims) ||
      !intervals_equal(a->range, b->range, a->nrange) ||
      !exprs_equal(a->results, b->results, a->nresults))
    return false;
  for (int i = 0; i < a->nrt; i++) {
    const RtVar *x = &a->rt[i], *y = &b->rt[i];
    if (x->hlo != y->hlo || x->nexprs != y->nexprs ||
        !intervals_equal(&x->range, &y->range, 1) ||
        !exprs_equal(x->exprs, y->exprs, x->nexprs))
      return false;
  }
  for (int i = 0; i < a->ncons; i++)
    if (a->cons[i].expr != b->cons[i].expr ||
        !intervals_equal(&a->cons[i].range, &b->cons[i].range, 1))
      return false;
  return true;
}

bool imap_is_identity(const IndexingMap *m) {
  if (m->undefined || m->empty || m->ncons || imap_nsyms(m) ||
      m->nresults != m->ndims)
    return false;
  for (int i = 0; i < m->nresults; i++)
    if (m->results[i]->kind != AFF_DIM || m->results[i]->value != i)
      return false;
  return true;
}

bool imap_in_domain(const IndexingMap *m, const int64_t *dims,
                    const int64_t *syms) {
  if (m->undefined || m->empty)
    return false;
  for (int i = 0; i < m->ndims; i++)
    if (!interval_contains(m->dims[i], dims[i]))
      return false;
  for (int i = 0; i < m->nrange; i++)
    if (!interval_contains(m->range[i], syms[i]))
      return false;
  for (int i = 0; i < m->nrt; i++)
    if (!interval_contains(m->rt[i].range, syms[m->nrange + i]))
      return false;
  for (int i = 0; i < m->ncons; i++)
    if (!interval_contains(m->cons[i].range, aff_eval(m->cons[i].expr, dims, syms)))
      return false;
  return true;
}

void imap_eval(const IndexingMap *m, const int64_t *dims, const int64_t *syms,
               int64_t *out) {
  for (int i = 0; i < m->nresults; i++)
    out[i] = aff_eval(m->results[i], dims, syms);
}

/*
 * Sets
 */

void imap_set_init(IndexingMapSet *s) { memset(s, 0, sizeof(*s)); }

bool imap_set_add(AffCtx *c, IndexingMapSet *s, const IndexingMap *m) {
  for (int i = 0; i < s->n; i++)
    if (imap_equal(s->maps[i], m))
      return false;
  if (s->n == s->cap) {
    int cap = s->cap ? s->cap * 2 : 4;
    const IndexingMap **n = ARENA_ARRAY(aff_ctx_arena(c), const IndexingMap *, cap);
    if (s->n)
      memcpy(n, s->maps, sizeof(*n) * (size_t)s->n);
    s->maps = n;
    s->cap = cap;
  }
  s->maps[s->n++] = m;
  return true;
}

InstrIndexing *instr_indexing_new(AffCtx *c, int n) {
  Arena *a = aff_ctx_arena(c);
  InstrIndexing *ii = ARENA_NEW(a, InstrIndexing);
  ii->n = n;
  ii->sets = ARENA_ARRAY(a, IndexingMapSet, n + 1);
  return ii;
}
