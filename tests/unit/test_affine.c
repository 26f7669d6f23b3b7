/*
 * test_affine.c - affine expressions, intervals and the bounds-aware
 * simplifier, with the simplifier examples of seed 000 as golden tests.
 */
#include <criterion/criterion.h>

#include "../../lib/analysis/indexing.h"

#include <stdlib.h>
#include <string.h>

static AffCtx *c;

static void setup(void) { c = aff_ctx_new(); }
static void teardown(void) { aff_ctx_free(c); }

TestSuite(affine, .init = setup, .fini = teardown);

#define D(i) aff_dim(c, i)
#define S(i) aff_sym(c, i)
#define K(v) aff_const(c, v)
#define ADD(a, b) aff_add(c, a, b)
#define MUL(a, k) aff_scale(c, a, k)
#define FDIV(a, k) aff_floordiv(c, a, k)
#define MOD(a, k) aff_mod(c, a, k)

static void expect_str(const AffExpr *e, const char *want) {
  char *got = aff_to_string(e);
  cr_expect_str_eq(got, want);
  free(got);
}

static void expect_map(const IndexingMap *m, const char *want) {
  char *got = imap_to_string(m);
  cr_expect_str_eq(got, want);
  free(got);
}

/*
 * Printing: MLIR's forms, as the seed shows them.
 */
Test(affine, prints_like_mlir) {
  expect_str(ADD(D(0), S(0)), "d0 + s0");
  expect_str(ADD(MUL(D(1), 7), K(3)), "d1 * 7 + 3");
  expect_str(ADD(MUL(D(1), -1), K(16)), "-d1 + 16");
  expect_str(FDIV(ADD(D(0), K(-1)), 2), "(d0 - 1) floordiv 2");
  expect_str(ADD(D(2), MUL(MOD(D(1), 2), 4)), "d2 + (d1 mod 2) * 4");
  expect_str(ADD(MUL(D(0), 2), FDIV(D(1), 2)), "d0 * 2 + d1 floordiv 2");
  expect_str(ADD(FDIV(D(1), 4), MUL(MOD(D(0), 2), 2)),
             "d1 floordiv 4 + (d0 mod 2) * 2");
  expect_str(aff_sub(c, D(0), S(0)), "d0 - s0");
  expect_str(aff_sub(c, D(0), MUL(D(1), 3)), "d0 - d1 * 3");
  expect_str(MUL(D(1), -2), "d1 * -2");
  expect_str(aff_neg(c, FDIV(D(0), 2)), "-(d0 floordiv 2)");
  expect_str(aff_sub(c, D(0), FDIV(D(1), 2)), "d0 - d1 floordiv 2");
  expect_str(aff_ceildiv(c, ADD(D(0), S(1)), 3), "(d0 + s1) ceildiv 3");
  expect_str(MOD(MUL(D(0), 3), 7), "(d0 * 3) mod 7");
  expect_str(K(-5), "-5");
  /* Terms keep one order whatever the order of construction: dims, symbols,
   * floordivs, ceildivs, mods, then the constant. */
  expect_str(ADD(ADD(MOD(D(0), 3), K(1)), ADD(S(0), D(1))),
             "d1 + s0 + d0 mod 3 + 1");
}

/*
 * Constructors: exact rewrites only.
 */
Test(affine, hash_consing_gives_one_pointer) {
  const AffExpr *a = ADD(MUL(D(0), 8), D(1));
  const AffExpr *b = ADD(D(1), MUL(D(0), 8));
  cr_expect_eq(a, b);
  cr_expect_eq(FDIV(a, 3), FDIV(b, 3));
  cr_expect_eq(ADD(D(0), D(0)), MUL(D(0), 2));
  cr_expect_eq(aff_sub(c, a, a), K(0));
  cr_expect_eq(aff_mul(c, D(0), D(1)), NULL);
  cr_expect_eq(aff_mul(c, K(3), D(1)), MUL(D(1), 3));
}

Test(affine, exact_floordiv_and_mod_rules) {
  cr_expect_eq(FDIV(D(0), 1), D(0));
  cr_expect_eq(MOD(D(0), 1), K(0));
  cr_expect_eq(FDIV(K(-7), 2), K(-4));
  cr_expect_eq(MOD(K(-7), 2), K(1));
  cr_expect_eq(aff_ceildiv(c, K(-7), 2), K(-3));
  /* multiples pulled out / dropped */
  expect_str(FDIV(ADD(MUL(D(0), 16), ADD(MUL(D(1), 4), D(2))), 8),
             "d0 * 2 + (d1 * 4 + d2) floordiv 8");
  expect_str(MOD(ADD(MUL(D(0), 16), ADD(MUL(D(1), 4), D(2))), 8),
             "(d1 * 4 + d2) mod 8");
  /* common factors cancelled */
  expect_str(FDIV(MUL(D(0), 4), 8), "d0 floordiv 2");
  expect_str(MOD(MUL(D(1), 4), 8), "(d1 mod 2) * 4");
  /* nesting */
  cr_expect_eq(FDIV(FDIV(D(0), 2), 3), FDIV(D(0), 6));
  cr_expect_eq(MOD(MOD(D(0), 12), 4), MOD(D(0), 4));
  cr_expect_neq(MOD(MOD(D(0), 4), 12), MOD(D(0), 4)); /* not valid */
  /* c * (x floordiv c) + x mod c = x */
  const AffExpr *x = ADD(MUL(D(0), 3), S(1));
  cr_expect_eq(ADD(MUL(FDIV(x, 5), 5), MOD(x, 5)), x);
  cr_expect_eq(ADD(MUL(FDIV(x, 5), 10), MUL(MOD(x, 5), 2)), MUL(x, 2));
  /* ... also when the floordiv's dividend is shifted by a multiple of c */
  cr_expect_eq(ADD(MUL(FDIV(ADD(x, K(10)), 5), 5), MOD(x, 5)), ADD(x, K(10)));
  /* the constant of a mod keeps its sign */
  expect_str(MOD(ADD(D(1), K(-3)), 7), "(d1 - 3) mod 7");
  expect_str(MOD(ADD(D(1), K(-10)), 7), "(d1 - 3) mod 7");
}

Test(affine, evaluation_and_ranges) {
  const AffExpr *e = ADD(FDIV(ADD(D(0), K(-1)), 2), MUL(MOD(S(0), 3), -2));
  int64_t d[1] = {-4}, s[1] = {5};
  cr_expect_eq(aff_eval(e, d, s), -3 + -4);
  Interval db[1] = {interval(1, 7)}, sb[1] = {interval(0, 10)};
  Interval r = aff_range(e, db, sb);
  cr_expect_eq(r.lo, -4);
  cr_expect_eq(r.hi, 3);
  cr_expect(aff_uses_dim(e, 0));
  cr_expect(!aff_uses_dim(e, 1));
  cr_expect(aff_uses_sym(e, 0));
  cr_expect(aff_uses_syms(e));
}

Test(affine, substitution) {
  const AffExpr *e = ADD(MUL(D(0), 8), D(1)); /* linearize [?, 8] */
  const AffExpr *dims[2] = {FDIV(D(0), 8), MOD(D(0), 8)};
  cr_expect_eq(aff_replace(c, e, dims, 2, NULL, 0), D(0));
  const AffExpr *syms[1] = {K(4)};
  cr_expect_eq(aff_replace(c, ADD(D(0), S(0)), NULL, 0, syms, 1), ADD(D(0), K(4)));
}

Test(affine, intervals) {
  cr_expect_eq(i64_floordiv(-7, 2), -4);
  cr_expect_eq(i64_ceildiv(-7, 2), -3);
  cr_expect_eq(i64_mod(-7, 3), 2);
  cr_expect_eq(i64_gcd(-12, 18), 6);
  Interval a = interval(-3, 5);
  cr_expect_eq(interval_scale(a, -2).lo, -10);
  cr_expect_eq(interval_scale(a, -2).hi, 6);
  cr_expect_eq(interval_mod(interval(8, 10), 7).lo, 1);
  cr_expect_eq(interval_mod(interval(8, 10), 7).hi, 3);
  cr_expect_eq(interval_mod(interval(12, 15), 7).lo, 0);
  cr_expect_eq(interval_mod(interval(12, 15), 7).hi, 6);
  cr_expect(interval_is_empty(interval_intersect(interval(0, 3), interval(4, 9))));
  cr_expect_eq(i64_sat_add(INT64_MAX, 1, NULL), INT64_MAX);
  bool ovf = false;
  cr_expect_eq(i64_sat_mul(INT64_MIN, 2, &ovf), INT64_MIN);
  cr_expect(ovf);
}

/*
 * Seed 000, "The simplifier can rewrite the following expressions".
 */
Test(affine, seed_simplifier_example_1) {
  /* (d0, d1) -> (d0 + d1 floordiv 16, d1 mod 16) for d in [0, 6] x [0, 14]
   * becomes (d0, d1) */
  Interval b[2] = {interval(0, 6), interval(0, 14)};
  cr_expect_eq(aff_simplify(c, ADD(D(0), FDIV(D(1), 16)), b, 2, NULL, 0), D(0));
  cr_expect_eq(aff_simplify(c, MOD(D(1), 16), b, 2, NULL, 0), D(1));
}

Test(affine, seed_simplifier_example_2) {
  /* ((100d0 + 10d1 + d2) floordiv 100, ((100d0 + 10d1 + d2) mod 100)
   * floordiv 10, d2 mod 10) for d_i in [0, 9] becomes (d0, d1, d2) */
  Interval b[3] = {interval(0, 9), interval(0, 9), interval(0, 9)};
  const AffExpr *l = ADD(ADD(MUL(D(0), 100), MUL(D(1), 10)), D(2));
  cr_expect_eq(aff_simplify(c, FDIV(l, 100), b, 3, NULL, 0), D(0));
  cr_expect_eq(aff_simplify(c, FDIV(MOD(l, 100), 10), b, 3, NULL, 0), D(1));
  cr_expect_eq(aff_simplify(c, MOD(D(2), 10), b, 3, NULL, 0), D(2));
}

Test(affine, seed_simplifier_example_3) {
  /* ((16d0 + 4d1 + d2) floordiv 8, (16d0 + 4d1 + d2) mod 8) for d_i in
   * [0, 9] becomes (2d0 + (4d1 + d2) floordiv 8, (4d1 + d2) mod 8) */
  Interval b[3] = {interval(0, 9), interval(0, 9), interval(0, 9)};
  const AffExpr *l = ADD(ADD(MUL(D(0), 16), MUL(D(1), 4)), D(2));
  const AffExpr *inner = ADD(MUL(D(1), 4), D(2));
  cr_expect_eq(aff_simplify(c, FDIV(l, 8), b, 3, NULL, 0),
               ADD(MUL(D(0), 2), FDIV(inner, 8)));
  cr_expect_eq(aff_simplify(c, MOD(l, 8), b, 3, NULL, 0), MOD(inner, 8));
  expect_str(aff_simplify(c, FDIV(l, 8), b, 3, NULL, 0),
             "d0 * 2 + (d1 * 4 + d2) floordiv 8");
  expect_str(aff_simplify(c, MOD(l, 8), b, 3, NULL, 0), "(d1 * 4 + d2) mod 8");
}

Test(affine, seed_simplifier_example_4) {
  /* (-(-11d0 - d1 + 109) floordiv 11 + 9) for d in [0, 9] x [0, 10]
   * becomes (d0) */
  Interval b[2] = {interval(0, 9), interval(0, 10)};
  const AffExpr *in = ADD(ADD(MUL(D(0), -11), MUL(D(1), -1)), K(109));
  const AffExpr *e = ADD(aff_neg(c, FDIV(in, 11)), K(9));
  cr_expect_eq(aff_simplify(c, e, b, 2, NULL, 0), D(0));
}

Test(affine, simplifier_gcd_split) {
  /* (4 d1 + d2) with d2 in [0, 3]: d2 cannot change the quotient by 8 */
  Interval b[3] = {interval(0, 1), interval(0, 3), interval(0, 3)};
  const AffExpr *l = ADD(MUL(D(1), 4), D(2));
  expect_str(aff_simplify(c, FDIV(l, 8), b, 3, NULL, 0), "d1 floordiv 2");
  expect_str(aff_simplify(c, MOD(l, 8), b, 3, NULL, 0), "d2 + (d1 mod 2) * 4");
  /* (y mod 12) floordiv 4 = (y floordiv 4) mod 3 */
  Interval w[1] = {interval(0, 100)};
  expect_str(aff_simplify(c, FDIV(MOD(D(0), 12), 4), w, 1, NULL, 0),
             "(d0 floordiv 4) mod 3");
  /* nothing to do without bounds that allow it */
  Interval wide[3] = {interval(0, 9), interval(0, 9), interval(0, 9)};
  cr_expect_eq(aff_simplify(c, MOD(l, 8), wide, 3, NULL, 0), MOD(l, 8));
}

/*
 * Maps: constraint simplification (seed 000).
 */
Test(affine, always_true_constraint_is_removed) {
  /* d0 + s0 in [0, 20] for d0 in [0, 5] and s0 in [1, 3] is eliminated */
  Interval d[1] = {interval(0, 5)}, s[1] = {interval(1, 3)};
  const AffExpr *r[1] = {ADD(D(0), S(0))};
  IndexingMap *m = imap_new(c, 1, d, 1, s, 1, r);
  imap_add_constraint(c, m, ADD(D(0), S(0)), interval(0, 20));
  expect_map(imap_simplify(c, m),
             "(d0)[s0] -> (d0 + s0)\n"
             "domain:\n"
             "d0 in [0, 5]\n"
             "s0 in [1, 3]\n");
}

Test(affine, constraints_are_rewritten) {
  /* lb <= expr (floordiv, +, -, *) constant <= ub  ->  new lb <= expr <= new ub */
  Interval d[2] = {interval(0, 99), interval(0, 99)};
  const AffExpr *r[2] = {D(0), D(1)};
  IndexingMap *m = imap_new(c, 2, d, 0, NULL, 2, r);
  /* (d0 + d1) floordiv 4 in [2, 5]  ->  d0 + d1 in [8, 23] */
  imap_add_constraint(c, m, FDIV(ADD(D(0), D(1)), 4), interval(2, 5));
  /* 2 d0 - 4 d1 + 6 in [0, 10]  ->  d0 - d1 * 2 in [-3, 2] */
  imap_add_constraint(c, m, ADD(ADD(MUL(D(0), 2), MUL(D(1), -4)), K(6)),
                      interval(0, 10));
  /* d1 * 3 - 3 in [0, 30]  ->  d1 in [1, 11]: a bound */
  imap_add_constraint(c, m, ADD(MUL(D(1), 3), K(-3)), interval(0, 30));
  expect_map(imap_simplify(c, m),
             "(d0, d1) -> (d0, d1)\n"
             "domain:\n"
             "d0 in [0, 99]\n"
             "d1 in [1, 11]\n"
             "d0 + d1 in [8, 23]\n"
             "d0 - d1 * 2 in [-3, 2]\n");
}

Test(affine, impossible_constraint_makes_the_map_empty) {
  Interval d[1] = {interval(0, 9)};
  const AffExpr *r[1] = {D(0)};
  IndexingMap *m = imap_new(c, 1, d, 0, NULL, 1, r);
  imap_add_constraint(c, m, ADD(D(0), K(20)), interval(0, 5));
  const IndexingMap *s = imap_simplify(c, m);
  cr_expect(s->empty);
  expect_map(s, "KNOWN EMPTY\n");
}

Test(affine, point_range_variable_is_substituted) {
  Interval d[1] = {interval(0, 9)}, s[2] = {interval(3, 3), interval(0, 4)};
  const AffExpr *r[1] = {ADD(ADD(D(0), S(0)), S(1))};
  IndexingMap *m = imap_new(c, 1, d, 2, s, 1, r);
  expect_map(imap_simplify(c, m),
             "(d0)[s0] -> (d0 + s0 + 3)\n"
             "domain:\n"
             "d0 in [0, 9]\n"
             "s0 in [0, 4]\n");
}

Test(affine, composition_cancels_reshapes) {
  /* [10, 10, 10] -> [50, 20] -> [10, 10, 10]: the seed's example. */
  int64_t a[3] = {10, 10, 10}, b[2] = {50, 20};
  IndexingMap *r2 = indexing_reshape_map(c, 2, b, 3, a); /* out [10^3] -> in [50,20] */
  IndexingMap *r1 = indexing_reshape_map(c, 3, a, 2, b); /* out [50,20] -> in [10^3] */
  const IndexingMap *m = imap_simplify(c, imap_compose(c, r2, r1));
  cr_expect(imap_is_identity(m));
  expect_map(m, "(d0, d1, d2) -> (d0, d1, d2)\n"
                "domain:\n"
                "d0 in [0, 9]\n"
                "d1 in [0, 9]\n"
                "d2 in [0, 9]\n");
}
