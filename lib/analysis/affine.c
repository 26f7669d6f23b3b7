/*
 * affine.c - hash-consed quasi-affine expressions.
 *
 * Every expression is interned in its AffCtx's table, so structurally equal
 * expressions are one pointer.  A sum is kept flat (terms over atoms plus a
 * constant) in a canonical order, which makes most equal-meaning expressions
 * the same pointer and gives the printer MLIR's familiar forms:
 * "d0 * 2 + d1 floordiv 2", "d2 + (d1 mod 2) * 4".
 *
 * Sums are built in a LinBuf: terms are appended as they come, then sorted,
 * like terms merged, zero terms dropped and the pair rule
 *   k*c * (x floordiv c) + k * (x mod c)  ->  k * x
 * applied before the result is interned.
 *
 * The constructors only apply rewrites valid for all variable values (see
 * affine.h); bounds-aware rewrites are in indexing_simplify.c.
 */
#include "affine.h"
#include "affine_internal.h"

#include <stdlib.h>
#include <string.h>

struct AffCtx {
  Arena *arena;
  const AffExpr **slots;          /* intern table, open addressing */
  uint32_t cap, len;
  bool overflow;
  AffMemo replace_memo;
  BoundsCache bounds_cache;
  const AffExpr *dims[32], *syms[32]; /* small-index caches */
};

/*
 * Interning
 */

static uint64_t mix(uint64_t h, uint64_t v) {
  h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
  return h * 0xff51afd7ed558ccdull;
}

static uint32_t expr_hash(const AffExpr *e) {
  uint64_t h = mix((uint64_t)e->kind, (uint64_t)e->value);
  if (e->lhs)
    h = mix(h, e->lhs->hash);
  for (int i = 0; i < e->nterms; i++)
    h = mix(mix(h, (uint64_t)e->terms[i].coef), e->terms[i].atom->hash);
  return (uint32_t)(h ^ (h >> 32));
}

static bool expr_same(const AffExpr *a, const AffExpr *b) {
  if (a->hash != b->hash || a->kind != b->kind || a->value != b->value ||
      a->lhs != b->lhs || a->nterms != b->nterms)
    return false;
  for (int i = 0; i < a->nterms; i++)
    if (a->terms[i].coef != b->terms[i].coef ||
        a->terms[i].atom != b->terms[i].atom)
      return false;
  return true;
}

static void table_grow(AffCtx *c) {
  uint32_t ncap = c->cap ? c->cap * 2 : 1024;
  const AffExpr **ns = xcalloc(ncap, sizeof(*ns));
  for (uint32_t i = 0; i < c->cap; i++) {
    const AffExpr *e = c->slots[i];
    if (!e)
      continue;
    uint32_t j = e->hash & (ncap - 1);
    while (ns[j])
      j = (j + 1) & (ncap - 1);
    ns[j] = e;
  }
  free(c->slots);
  c->slots = ns;
  c->cap = ncap;
}

/* The interned copy of *key (whose hash, masks and depth are computed here). */
static const AffExpr *intern(AffCtx *c, AffExpr *key) {
  key->hash = expr_hash(key);
  if ((c->len + 1) * 2 > c->cap)
    table_grow(c);
  uint32_t j = key->hash & (c->cap - 1);
  for (const AffExpr *e; (e = c->slots[j]); j = (j + 1) & (c->cap - 1))
    if (expr_same(e, key))
      return e;
  AffExpr *n = ARENA_NEW(c->arena, AffExpr);
  *n = *key;
  switch (n->kind) {
  case AFF_DIM:
    n->dim_mask = 1ull << (n->value < 63 ? n->value : 63);
    break;
  case AFF_SYM:
    n->sym_mask = 1ull << (n->value < 63 ? n->value : 63);
    break;
  case AFF_FLOORDIV: case AFF_CEILDIV: case AFF_MOD:
    n->dim_mask = n->lhs->dim_mask;
    n->sym_mask = n->lhs->sym_mask;
    n->depth = n->lhs->depth + 1;
    break;
  case AFF_SUM: {
    AffTerm *t = arena_memdup(c->arena, key->terms,
                              sizeof(AffTerm) * (size_t)key->nterms);
    n->terms = t;
    for (int i = 0; i < n->nterms; i++) {
      n->dim_mask |= t[i].atom->dim_mask;
      n->sym_mask |= t[i].atom->sym_mask;
      if (t[i].atom->depth + 1 > n->depth)
        n->depth = t[i].atom->depth + 1;
    }
    break;
  }
  case AFF_CONST:
    break;
  }
  c->slots[j] = n;
  c->len++;
  return n;
}

AffCtx *aff_ctx_new(void) {
  AffCtx *c = xcalloc(1, sizeof(AffCtx));
  c->arena = arena_new();
  table_grow(c);
  return c;
}

void aff_ctx_free(AffCtx *c) {
  if (!c)
    return;
  arena_free(c->arena);
  free(c->slots);
  aff_memo_free(&c->replace_memo);
  aff_memo_free(&c->bounds_cache.simp);
  range_memo_free(&c->bounds_cache.range);
  free(c->bounds_cache.bounds);
  free(c);
}

Arena *aff_ctx_arena(AffCtx *c) { return c->arena; }
BoundsCache *aff_ctx_bounds_cache(AffCtx *c) { return &c->bounds_cache; }
bool *aff_ctx_overflow_flag(AffCtx *c) { return &c->overflow; }
bool aff_ctx_overflowed(const AffCtx *c) { return c->overflow; }
void aff_ctx_clear_overflow(AffCtx *c) { c->overflow = false; }

static int64_t sat_add(AffCtx *c, int64_t a, int64_t b) {
  return i64_sat_add(a, b, &c->overflow);
}

static int64_t sat_mul(AffCtx *c, int64_t a, int64_t b) {
  return i64_sat_mul(a, b, &c->overflow);
}

/*
 * Leaves
 */

const AffExpr *aff_const(AffCtx *c, int64_t v) {
  AffExpr k = {.kind = AFF_CONST, .value = v};
  return intern(c, &k);
}

const AffExpr *aff_dim(AffCtx *c, int i) {
  if (i >= 0 && i < 32 && c->dims[i])
    return c->dims[i];
  AffExpr k = {.kind = AFF_DIM, .value = i};
  const AffExpr *e = intern(c, &k);
  if (i >= 0 && i < 32)
    c->dims[i] = e;
  return e;
}

const AffExpr *aff_sym(AffCtx *c, int i) {
  if (i >= 0 && i < 32 && c->syms[i])
    return c->syms[i];
  AffExpr k = {.kind = AFF_SYM, .value = i};
  const AffExpr *e = intern(c, &k);
  if (i >= 0 && i < 32)
    c->syms[i] = e;
  return e;
}

bool aff_uses_dim(const AffExpr *e, int i) {
  if (i < 63 && !(e->dim_mask & (1ull << i)))
    return false;
  switch (e->kind) {
  case AFF_DIM:
    return e->value == i;
  case AFF_FLOORDIV: case AFF_CEILDIV: case AFF_MOD:
    return aff_uses_dim(e->lhs, i);
  case AFF_SUM:
    for (int j = 0; j < e->nterms; j++)
      if (aff_uses_dim(e->terms[j].atom, i))
        return true;
    return false;
  default:
    return false;
  }
}

bool aff_uses_sym(const AffExpr *e, int i) {
  if (i < 63 && !(e->sym_mask & (1ull << i)))
    return false;
  switch (e->kind) {
  case AFF_SYM:
    return e->value == i;
  case AFF_FLOORDIV: case AFF_CEILDIV: case AFF_MOD:
    return aff_uses_sym(e->lhs, i);
  case AFF_SUM:
    for (int j = 0; j < e->nterms; j++)
      if (aff_uses_sym(e->terms[j].atom, i))
        return true;
    return false;
  default:
    return false;
  }
}

/*
 * Ordering
 */

static int cmp_i64(int64_t a, int64_t b) { return a < b ? -1 : a > b; }

int aff_compare(const AffExpr *a, const AffExpr *b) {
  if (a == b)
    return 0;
  if (a->kind != b->kind)
    return a->kind < b->kind ? -1 : 1;
  switch (a->kind) {
  case AFF_CONST: case AFF_DIM: case AFF_SYM:
    return cmp_i64(a->value, b->value);
  case AFF_FLOORDIV: case AFF_CEILDIV: case AFF_MOD: {
    int r = aff_compare(a->lhs, b->lhs);
    return r ? r : cmp_i64(a->value, b->value);
  }
  case AFF_SUM:
    for (int i = 0; i < a->nterms && i < b->nterms; i++) {
      int r = aff_compare(a->terms[i].atom, b->terms[i].atom);
      if (r)
        return r;
      r = cmp_i64(a->terms[i].coef, b->terms[i].coef);
      if (r)
        return r;
    }
    if (a->nterms != b->nterms)
      return a->nterms < b->nterms ? -1 : 1;
    return cmp_i64(a->value, b->value);
  }
  return 0;
}

/*
 * Linear buffers: a sum under construction.
 */

void lin_init(LinBuf *l) {
  l->t = l->inl;
  l->n = 0;
  l->cap = (int)ARRAY_LEN(l->inl);
  l->k = 0;
}

void lin_free(LinBuf *l) {
  if (l->t != l->inl)
    free(l->t);
  lin_init(l);
}

static void lin_push(LinBuf *l, int64_t coef, const AffExpr *atom) {
  if (l->n == l->cap) {
    int ncap = l->cap * 2;
    AffTerm *nt = xreallocarray(NULL, (size_t)ncap, sizeof(AffTerm));
    memcpy(nt, l->t, sizeof(AffTerm) * (size_t)l->n);
    if (l->t != l->inl)
      free(l->t);
    l->t = nt;
    l->cap = ncap;
  }
  l->t[l->n].coef = coef;
  l->t[l->n].atom = atom;
  l->n++;
}

void lin_add(AffCtx *c, LinBuf *l, const AffExpr *e, int64_t coef) {
  if (coef == 0)
    return;
  switch (e->kind) {
  case AFF_CONST:
    l->k = sat_add(c, l->k, sat_mul(c, e->value, coef));
    return;
  case AFF_SUM:
    for (int i = 0; i < e->nterms; i++)
      lin_push(l, sat_mul(c, e->terms[i].coef, coef), e->terms[i].atom);
    l->k = sat_add(c, l->k, sat_mul(c, e->value, coef));
    return;
  default:
    lin_push(l, coef, e);
  }
}

static int term_cmp(const void *a, const void *b) {
  return aff_compare(((const AffTerm *)a)->atom, ((const AffTerm *)b)->atom);
}

/* Sorts, merges like terms and drops zeros. */
static void lin_normalize(AffCtx *c, LinBuf *l) {
  if (l->n > 1) {
    if (l->n <= 8) {
      for (int i = 1; i < l->n; i++) {
        AffTerm t = l->t[i];
        int j = i;
        while (j > 0 && aff_compare(l->t[j - 1].atom, t.atom) > 0) {
          l->t[j] = l->t[j - 1];
          j--;
        }
        l->t[j] = t;
      }
    } else {
      qsort(l->t, (size_t)l->n, sizeof(AffTerm), term_cmp);
    }
  }
  int w = 0;
  for (int i = 0; i < l->n; i++) {
    if (w > 0 && l->t[w - 1].atom == l->t[i].atom) {
      l->t[w - 1].coef = sat_add(c, l->t[w - 1].coef, l->t[i].coef);
    } else {
      l->t[w++] = l->t[i];
    }
    if (l->t[w - 1].coef == 0)
      w--;
  }
  l->n = w;
}

/* Whether a and b differ by a constant only; sets *delta = a - b. */
static bool differ_by_constant(const AffExpr *a, const AffExpr *b,
                               int64_t *delta) {
  if (a == b) {
    *delta = 0;
    return true;
  }
  int64_t ka = a->kind == AFF_SUM ? a->value : 0;
  int64_t kb = b->kind == AFF_SUM ? b->value : 0;
  AffTerm one_a = {1, a}, one_b = {1, b};
  const AffTerm *ta = a->kind == AFF_SUM ? a->terms : &one_a;
  const AffTerm *tb = b->kind == AFF_SUM ? b->terms : &one_b;
  int na = a->kind == AFF_SUM ? a->nterms : 1;
  int nb = b->kind == AFF_SUM ? b->nterms : 1;
  if (a->kind == AFF_CONST || b->kind == AFF_CONST || na != nb)
    return false;
  for (int i = 0; i < na; i++)
    if (ta[i].coef != tb[i].coef || ta[i].atom != tb[i].atom)
      return false;
  bool ovf = false;
  *delta = i64_sat_add(ka, -kb, &ovf);
  return !ovf;
}

/* k*c * (y floordiv c) + k * (x mod c) -> k * x + k * (y - x) when y - x is
 * a multiple of c (y = x + q*c makes y floordiv c = x floordiv c + q).
 * Returns true when a pair was found and replaced (the buffer then needs
 * normalizing again). */
static bool lin_cancel_divmod(AffCtx *c, LinBuf *l) {
  for (int i = 0; i < l->n; i++) {
    const AffExpr *m = l->t[i].atom;
    if (m->kind != AFF_MOD)
      continue;
    for (int j = 0; j < l->n; j++) {
      const AffExpr *f = l->t[j].atom;
      int64_t delta;
      if (f->kind != AFF_FLOORDIV || f->value != m->value ||
          !differ_by_constant(f->lhs, m->lhs, &delta) || delta % m->value)
        continue;
      bool ovf = false;
      if (i64_sat_mul(l->t[i].coef, m->value, &ovf) != l->t[j].coef || ovf)
        continue;
      int64_t k = l->t[i].coef;
      /* Remove both terms (j != i: their kinds differ), then add k * x. */
      int hi = i > j ? i : j, lo = i > j ? j : i;
      l->t[hi] = l->t[--l->n];
      l->t[lo] = l->t[--l->n];
      lin_add(c, l, m->lhs, k);
      l->k = sat_add(c, l->k, sat_mul(c, k, delta));
      return true;
    }
  }
  return false;
}

const AffExpr *lin_finish(AffCtx *c, LinBuf *l) {
  lin_normalize(c, l);
  while (lin_cancel_divmod(c, l))
    lin_normalize(c, l);
  const AffExpr *r;
  if (l->n == 0) {
    r = aff_const(c, l->k);
  } else if (l->n == 1 && l->t[0].coef == 1 && l->k == 0) {
    r = l->t[0].atom;
  } else {
    AffExpr key = {.kind = AFF_SUM, .value = l->k, .nterms = l->n,
                   .terms = l->t};
    r = intern(c, &key);
  }
  lin_free(l);
  return r;
}

/*
 * Sums and products
 */

const AffExpr *aff_sum(AffCtx *c, const AffTerm *terms, int n, int64_t k) {
  LinBuf l;
  lin_init(&l);
  for (int i = 0; i < n; i++)
    lin_add(c, &l, terms[i].atom, terms[i].coef);
  l.k = sat_add(c, l.k, k);
  return lin_finish(c, &l);
}

const AffExpr *aff_add(AffCtx *c, const AffExpr *a, const AffExpr *b) {
  if (a->kind == AFF_CONST && b->kind == AFF_CONST)
    return aff_const(c, sat_add(c, a->value, b->value));
  if (b->kind == AFF_CONST && b->value == 0)
    return a;
  if (a->kind == AFF_CONST && a->value == 0)
    return b;
  LinBuf l;
  lin_init(&l);
  lin_add(c, &l, a, 1);
  lin_add(c, &l, b, 1);
  return lin_finish(c, &l);
}

const AffExpr *aff_add_const(AffCtx *c, const AffExpr *a, int64_t k) {
  return aff_add(c, a, aff_const(c, k));
}

const AffExpr *aff_scale(AffCtx *c, const AffExpr *a, int64_t k) {
  if (k == 1)
    return a;
  if (k == 0)
    return aff_const(c, 0);
  if (a->kind == AFF_CONST)
    return aff_const(c, sat_mul(c, a->value, k));
  LinBuf l;
  lin_init(&l);
  lin_add(c, &l, a, k);
  return lin_finish(c, &l);
}

const AffExpr *aff_neg(AffCtx *c, const AffExpr *a) { return aff_scale(c, a, -1); }

const AffExpr *aff_sub(AffCtx *c, const AffExpr *a, const AffExpr *b) {
  return aff_add(c, a, aff_scale(c, b, -1));
}

const AffExpr *aff_mul(AffCtx *c, const AffExpr *a, const AffExpr *b) {
  if (b->kind == AFF_CONST)
    return aff_scale(c, a, b->value);
  if (a->kind == AFF_CONST)
    return aff_scale(c, b, a->value);
  return NULL;
}

/* gcd of d and every coefficient and the constant of e. */
static int64_t common_factor(const AffExpr *e, int64_t d) {
  int64_t g = d;
  switch (e->kind) {
  case AFF_CONST:
    return i64_gcd(g, e->value);
  case AFF_SUM:
    g = i64_gcd(g, e->value);
    for (int i = 0; i < e->nterms && g > 1; i++)
      g = i64_gcd(g, e->terms[i].coef);
    return g;
  default:
    return 1;
  }
}

/* e / g, for g dividing every coefficient and the constant of e. */
static const AffExpr *exact_div(AffCtx *c, const AffExpr *e, int64_t g) {
  if (e->kind == AFF_CONST)
    return aff_const(c, e->value / g);
  LinBuf l;
  lin_init(&l);
  for (int i = 0; i < e->nterms; i++)
    lin_push(&l, e->terms[i].coef / g, e->terms[i].atom);
  l.k = e->value / g;
  return lin_finish(c, &l);
}

static const AffExpr *make_binary(AffCtx *c, AffKind kind, const AffExpr *lhs,
                                  int64_t d) {
  AffExpr key = {.kind = kind, .value = d, .lhs = lhs};
  return intern(c, &key);
}

/* Splits the sum e into the terms whose coefficient is a multiple of d
 * (divided by d, into *multiples) and the rest (*rest, with the constant).
 * Returns false when no term is a multiple. */
static bool split_multiples(AffCtx *c, const AffExpr *e, int64_t d,
                            const AffExpr **multiples, const AffExpr **rest) {
  if (e->kind != AFF_SUM)
    return false;
  int nm = 0;
  for (int i = 0; i < e->nterms; i++)
    nm += e->terms[i].coef % d == 0;
  if (nm == 0)
    return false;
  LinBuf m, r;
  lin_init(&m);
  lin_init(&r);
  for (int i = 0; i < e->nterms; i++) {
    if (e->terms[i].coef % d == 0)
      lin_push(&m, e->terms[i].coef / d, e->terms[i].atom);
    else
      lin_push(&r, e->terms[i].coef, e->terms[i].atom);
  }
  r.k = e->value;
  *multiples = lin_finish(c, &m);
  *rest = lin_finish(c, &r);
  return true;
}

static void check_divisor(int64_t d) {
  if (d <= 0)
    die("affine division by non-positive constant %lld", (long long)d);
}

const AffExpr *aff_floordiv(AffCtx *c, const AffExpr *a, int64_t d) {
  check_divisor(d);
  if (d == 1)
    return a;
  if (a->kind == AFF_CONST)
    return aff_const(c, i64_floordiv(a->value, d));
  /* (x floordiv a) floordiv b = x floordiv (a * b) */
  if (a->kind == AFF_FLOORDIV) {
    bool ovf = false;
    int64_t dd = i64_sat_mul(a->value, d, &ovf);
    if (!ovf)
      return aff_floordiv(c, a->lhs, dd);
  }
  int64_t g = common_factor(a, d);
  if (g > 1)
    return aff_floordiv(c, exact_div(c, a, g), d / g);
  const AffExpr *mult, *rest;
  if (split_multiples(c, a, d, &mult, &rest))
    return aff_add(c, mult, aff_floordiv(c, rest, d));
  return make_binary(c, AFF_FLOORDIV, a, d);
}

const AffExpr *aff_ceildiv(AffCtx *c, const AffExpr *a, int64_t d) {
  check_divisor(d);
  if (d == 1)
    return a;
  if (a->kind == AFF_CONST)
    return aff_const(c, i64_ceildiv(a->value, d));
  if (a->kind == AFF_CEILDIV) {
    bool ovf = false;
    int64_t dd = i64_sat_mul(a->value, d, &ovf);
    if (!ovf)
      return aff_ceildiv(c, a->lhs, dd);
  }
  int64_t g = common_factor(a, d);
  if (g > 1)
    return aff_ceildiv(c, exact_div(c, a, g), d / g);
  const AffExpr *mult, *rest;
  if (split_multiples(c, a, d, &mult, &rest))
    return aff_add(c, mult, aff_ceildiv(c, rest, d));
  return make_binary(c, AFF_CEILDIV, a, d);
}

const AffExpr *aff_mod(AffCtx *c, const AffExpr *a, int64_t d) {
  check_divisor(d);
  if (d == 1)
    return aff_const(c, 0);
  if (a->kind == AFF_CONST)
    return aff_const(c, i64_mod(a->value, d));
  /* (x mod a) mod b = x mod b when b divides a. */
  if (a->kind == AFF_MOD && a->value % d == 0)
    return aff_mod(c, a->lhs, d);
  if (a->kind == AFF_SUM) {
    /* Drop multiples of d; reduce the constant (keeping its sign, so that
     * "(d1 - 3) mod 7" stays as written). */
    bool changed = a->value % d != a->value;
    for (int i = 0; i < a->nterms && !changed; i++)
      changed = a->terms[i].coef % d == 0;
    if (changed) {
      LinBuf l;
      lin_init(&l);
      for (int i = 0; i < a->nterms; i++)
        if (a->terms[i].coef % d != 0)
          lin_push(&l, a->terms[i].coef, a->terms[i].atom);
      l.k = a->value % d;
      return aff_mod(c, lin_finish(c, &l), d);
    }
    /* (h * x) mod (h * m) = h * (x mod m) */
    int64_t g = common_factor(a, d);
    if (g > 1)
      return aff_scale(c, aff_mod(c, exact_div(c, a, g), d / g), g);
  }
  return make_binary(c, AFF_MOD, a, d);
}

/*
 * Evaluation and ranges
 */

int64_t aff_eval(const AffExpr *e, const int64_t *dims, const int64_t *syms) {
  switch (e->kind) {
  case AFF_CONST:
    return e->value;
  case AFF_DIM:
    return dims[e->value];
  case AFF_SYM:
    return syms[e->value];
  case AFF_FLOORDIV:
    return i64_floordiv(aff_eval(e->lhs, dims, syms), e->value);
  case AFF_CEILDIV:
    return i64_ceildiv(aff_eval(e->lhs, dims, syms), e->value);
  case AFF_MOD:
    return i64_mod(aff_eval(e->lhs, dims, syms), e->value);
  case AFF_SUM: {
    int64_t v = e->value;
    for (int i = 0; i < e->nterms; i++)
      v += e->terms[i].coef * aff_eval(e->terms[i].atom, dims, syms);
    return v;
  }
  }
  return 0;
}

Interval aff_range(const AffExpr *e, const Interval *dims, const Interval *syms) {
  switch (e->kind) {
  case AFF_CONST:
    return interval(e->value, e->value);
  case AFF_DIM:
    return dims[e->value];
  case AFF_SYM:
    return syms[e->value];
  case AFF_FLOORDIV:
    return interval_floordiv(aff_range(e->lhs, dims, syms), e->value);
  case AFF_CEILDIV:
    return interval_ceildiv(aff_range(e->lhs, dims, syms), e->value);
  case AFF_MOD:
    return interval_mod(aff_range(e->lhs, dims, syms), e->value);
  case AFF_SUM: {
    Interval r = interval(e->value, e->value);
    for (int i = 0; i < e->nterms; i++)
      r = interval_add(r, interval_scale(aff_range(e->terms[i].atom, dims, syms),
                                         e->terms[i].coef));
    return r;
  }
  }
  return interval(0, 0);
}

/*
 * Substitution
 */

static const AffExpr *replace_rec(AffCtx *c, const AffExpr *e,
                                  const AffExpr *const *dims, int ndims,
                                  const AffExpr *const *syms, int nsyms,
                                  uint64_t dmask, uint64_t smask) {
  if (!(e->dim_mask & dmask) && !(e->sym_mask & smask))
    return e;
  switch (e->kind) {
  case AFF_CONST:
    return e;
  case AFF_DIM:
    return e->value < ndims && dims[e->value] ? dims[e->value] : e;
  case AFF_SYM:
    return e->value < nsyms && syms[e->value] ? syms[e->value] : e;
  default:
    break;
  }
  const AffExpr *memo = aff_memo_get(&c->replace_memo, e);
  if (memo)
    return memo;
  const AffExpr *r = e;
  if (e->kind == AFF_SUM) {
    LinBuf l;
    lin_init(&l);
    bool changed = false;
    for (int i = 0; i < e->nterms; i++) {
      const AffExpr *a = replace_rec(c, e->terms[i].atom, dims, ndims, syms,
                                     nsyms, dmask, smask);
      changed |= a != e->terms[i].atom;
      lin_add(c, &l, a, e->terms[i].coef);
    }
    l.k = sat_add(c, l.k, e->value);
    if (changed)
      r = lin_finish(c, &l);
    else
      lin_free(&l);
  } else {
    const AffExpr *x = replace_rec(c, e->lhs, dims, ndims, syms, nsyms, dmask,
                                   smask);
    if (x != e->lhs) {
      if (e->kind == AFF_FLOORDIV)
        r = aff_floordiv(c, x, e->value);
      else if (e->kind == AFF_CEILDIV)
        r = aff_ceildiv(c, x, e->value);
      else
        r = aff_mod(c, x, e->value);
    }
  }
  aff_memo_put(&c->replace_memo, e, r);
  return r;
}

static uint64_t repl_mask(const AffExpr *const *v, int n) {
  uint64_t m = 0;
  for (int i = 0; v && i < n; i++)
    if (v[i])
      m |= 1ull << (i < 63 ? i : 63);
  return m;
}

const AffExpr *aff_replace(AffCtx *c, const AffExpr *e,
                           const AffExpr *const *dims, int ndims,
                           const AffExpr *const *syms, int nsyms) {
  if (!dims)
    ndims = 0;
  if (!syms)
    nsyms = 0;
  aff_memo_reset(&c->replace_memo);
  return replace_rec(c, e, dims, ndims, syms, nsyms, repl_mask(dims, ndims),
                     repl_mask(syms, nsyms));
}

/*
 * Printing, as MLIR prints affine expressions.  `strong` is true where the
 * enclosing operator binds tighter than +, so a sum or a div/mod there gets
 * parentheses.
 */

static void print_rec(StrBuf *b, const AffExpr *e, bool strong);

static void print_scaled(StrBuf *b, const AffExpr *atom, int64_t coef) {
  print_rec(b, atom, true);
  sb_puts(b, " * ");
  sb_put_i64(b, coef);
}

static void print_rec(StrBuf *b, const AffExpr *e, bool strong) {
  switch (e->kind) {
  case AFF_CONST:
    sb_put_i64(b, e->value);
    return;
  case AFF_DIM:
    sb_putc(b, 'd');
    sb_put_i64(b, e->value);
    return;
  case AFF_SYM:
    sb_putc(b, 's');
    sb_put_i64(b, e->value);
    return;
  case AFF_FLOORDIV: case AFF_CEILDIV: case AFF_MOD:
    if (strong)
      sb_putc(b, '(');
    print_rec(b, e->lhs, true);
    sb_puts(b, e->kind == AFF_FLOORDIV ? " floordiv "
               : e->kind == AFF_CEILDIV ? " ceildiv " : " mod ");
    sb_put_i64(b, e->value);
    if (strong)
      sb_putc(b, ')');
    return;
  case AFF_SUM:
    break;
  }
  if (strong)
    sb_putc(b, '(');
  for (int i = 0; i < e->nterms; i++) {
    int64_t k = e->terms[i].coef;
    const AffExpr *a = e->terms[i].atom;
    if (i == 0) {
      if (k == 1) {
        print_rec(b, a, false);
      } else if (k == -1) {
        sb_putc(b, '-');
        print_rec(b, a, true);
      } else {
        print_scaled(b, a, k);
      }
    } else if (k == 1) {
      sb_puts(b, " + ");
      print_rec(b, a, false);
    } else if (k == -1) {
      sb_puts(b, " - ");
      print_rec(b, a, false);
    } else if (k > 0 || k == INT64_MIN) {
      sb_puts(b, " + ");
      print_scaled(b, a, k);
    } else {
      sb_puts(b, " - ");
      print_scaled(b, a, -k);
    }
  }
  if (e->value > 0) {
    sb_puts(b, " + ");
    sb_put_i64(b, e->value);
  } else if (e->value < 0 && e->value != INT64_MIN) {
    sb_puts(b, " - ");
    sb_put_i64(b, -e->value);
  } else if (e->value == INT64_MIN) {
    sb_puts(b, " + ");
    sb_put_i64(b, e->value);
  }
  if (strong)
    sb_putc(b, ')');
}

void aff_print(StrBuf *b, const AffExpr *e) { print_rec(b, e, false); }

char *aff_to_string(const AffExpr *e) {
  StrBuf b;
  sb_init(&b);
  aff_print(&b, e);
  return sb_detach(&b);
}
