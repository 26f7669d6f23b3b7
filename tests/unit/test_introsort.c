/*
 * test_introsort.c - unit tests of lib/eval/introsort.c, the order of XLA's
 * CPU unstable sort (libstdc++'s std::sort on each row).
 *
 * XLA's own orders of rows full of ties (keys and XLA's permutations taken
 * from testdata/eval/xla_sort_unstable.hlo, which gen_xla_hlo.py got from
 * XLA's CPU through jax 0.10.2), the shape of the algorithm (rows of up to
 * 16 are an insertion sort, so stable; an adversary cannot make it
 * quadratic), and its safety with comparators that are no strict weak
 * order (it stays inside the row and keeps a permutation).
 */
#include <criterion/criterion.h>

#include <stdlib.h>
#include <string.h>

#include "../../lib/eval/introsort.h"

typedef struct Keys {
  const int32_t *k;
  int64_t ncmp;
} Keys;

static bool key_less(void *ctx, int64_t a, int64_t b) {
  Keys *c = ctx;
  c->ncmp++;
  return c->k[a] < c->k[b];
}

static void iota(int64_t *p, int64_t n) {
  for (int64_t i = 0; i < n; i++) p[i] = i;
}

/* p is a permutation of 0..n-1 */
static void expect_permutation(const int64_t *p, int64_t n) {
  char *seen = calloc((size_t)n + 1, 1);
  for (int64_t i = 0; i < n; i++) {
    cr_assert(p[i] >= 0 && p[i] < n, "p[%ld] = %ld out of range", (long)i, (long)p[i]);
    cr_assert(!seen[p[i]], "%ld twice", (long)p[i]);
    seen[p[i]] = 1;
  }
  free(seen);
}

static void sort_keys(const int32_t *k, int64_t n, int64_t *p) {
  Keys c = {.k = k};
  iota(p, n);
  introsort_perm(p, n, key_less, &c);
}

/*
 * XLA's orders
 */
Test(introsort, xla_order_of_a_row_of_17) {
  /* row 0 of the s32[5,17] keys: 17 elements, one partition, then the
   * insertion sort */
  static const int32_t k[17] = {0, 2, 2, 0, 1, 0, 1, 2, 1, 0, 2, 0, 0, 0, 2, 2, 2};
  static const int64_t xla[17] = {0, 3, 5, 9, 13, 11, 12, 4, 6, 8, 16, 15, 14, 10, 7, 2, 1};
  int64_t p[17];
  sort_keys(k, 17, p);
  for (int i = 0; i < 17; i++) cr_expect_eq(p[i], xla[i], "position %d: %ld, XLA %ld", i, (long)p[i], (long)xla[i]);
}

Test(introsort, xla_order_past_the_depth_limit) {
  /* keys from McIlroy's adversary against std::sort, halved so that pairs
   * tie: the first partitions peel off a few elements each, the depth budget
   * (2 * floor(log2 100) = 12) runs out and the rest is heapsorted */
  static const int32_t k[100] = {
      46, 0,  35, 1,  42, 2,  34, 3,  50, 4,  33, 5,  41, 6,  32, 7,  45, 8,  31, 9,
      40, 10, 12, 11, 49, 48, 47, 46, 45, 44, 43, 42, 41, 40, 39, 38, 37, 36, 35, 34,
      33, 32, 47, 39, 44, 38, 48, 37, 43, 36, 0,  1,  2,  3,  4,  5,  6,  7,  8,  9,
      10, 11, 31, 29, 30, 28, 29, 27, 28, 26, 27, 25, 26, 24, 25, 23, 24, 22, 23, 21,
      22, 20, 21, 19, 20, 18, 19, 17, 18, 16, 17, 15, 16, 14, 15, 13, 14, 12, 13, 30};
  static const int64_t xla[100] = {
      1,  50, 3,  51, 5,  52, 7,  53, 9,  54, 11, 55, 13, 56, 15, 57, 17, 58, 19, 59,
      21, 60, 23, 61, 97, 22, 98, 95, 93, 96, 94, 91, 89, 92, 87, 90, 85, 88, 83, 86,
      84, 81, 79, 82, 77, 80, 75, 78, 73, 76, 71, 74, 69, 72, 67, 70, 65, 68, 63, 66,
      99, 64, 18, 62, 14, 41, 10, 40, 39, 6,  2,  38, 49, 37, 47, 36, 45, 35, 43, 34,
      20, 33, 12, 32, 31, 4,  48, 30, 44, 29, 16, 28, 27, 0,  42, 26, 25, 46, 24, 8};
  int64_t p[100];
  sort_keys(k, 100, p);
  for (int i = 0; i < 100; i++) cr_expect_eq(p[i], xla[i], "position %d: %ld, XLA %ld", i, (long)p[i], (long)xla[i]);
}

/*
 * The algorithm's shape
 */
Test(introsort, sorts_rows_full_of_ties) {
  int32_t k[300];
  int64_t p[300];
  srand(7);
  for (int64_t n = 0; n <= 300; n += (n < 40 ? 1 : 37)) {
    for (int64_t i = 0; i < n; i++) k[i] = rand() % 5;
    sort_keys(k, n, p);
    expect_permutation(p, n);
    for (int64_t i = 1; i < n; i++)
      cr_assert(k[p[i - 1]] <= k[p[i]], "n %ld: not sorted at %ld", (long)n, (long)i);
  }
}

Test(introsort, rows_of_sixteen_or_less_are_stable) {
  /* std::sort leaves rows of up to 16 to its insertion sort */
  int32_t k[17];
  int64_t p[17];
  srand(3);
  for (int rep = 0; rep < 50; rep++) {
    for (int i = 0; i < 16; i++) k[i] = rand() % 3;
    sort_keys(k, 16, p);
    for (int i = 1; i < 16; i++)
      cr_assert(k[p[i - 1]] < k[p[i]] || p[i - 1] < p[i], "tie out of order at %d", i);
  }
}

/* McIlroy's adversary: values are frozen only when compared, the pivot
 * candidate always small; a plain quicksort then makes ~n^2/4 comparisons. */
typedef struct Adversary {
  int64_t *val, gas, solid, cand, ncmp;
} Adversary;

static bool adversary_less(void *ctx, int64_t a, int64_t b) {
  Adversary *s = ctx;
  s->ncmp++;
  if (s->val[a] == s->gas && s->val[b] == s->gas) s->val[a == s->cand ? a : b] = s->solid++;
  if (s->val[a] == s->gas) s->cand = a;
  else if (s->val[b] == s->gas) s->cand = b;
  return s->val[a] < s->val[b];
}

Test(introsort, an_adversary_cannot_make_it_quadratic) {
  enum { N = 4096 };
  static int64_t val[N], p[N];
  Adversary s = {.val = val, .gas = N};
  for (int64_t i = 0; i < N; i++) val[i] = N;
  iota(p, N);
  introsort_perm(p, N, adversary_less, &s);
  expect_permutation(p, N);
  /* heapsort past depth 24: O(n log n); quicksort alone would need millions */
  cr_expect_lt(s.ncmp, 4 * N * 12, "%ld comparisons", (long)s.ncmp);
  for (int64_t i = 1; i < N; i++) cr_assert(val[p[i - 1]] <= val[p[i]]);
}

/*
 * Comparators that are no strict weak order
 */
typedef struct Odd {
  const int32_t *k;
  int mode;
  unsigned seed;
} Odd;

static bool odd_less(void *ctx, int64_t a, int64_t b) {
  Odd *c = ctx;
  switch (c->mode) {
  case 0: return true;                          /* always */
  case 1: return c->k[a] <= c->k[b];            /* reflexive on ties */
  default: return rand_r(&c->seed) & 1;         /* inconsistent */
  }
}

Test(introsort, stays_in_the_row_whatever_the_comparator_says) {
  int32_t k[200];
  int64_t p[200 + 2];
  for (int mode = 0; mode < 3; mode++) {
    for (int64_t n = 1; n <= 200; n += 13) {
      for (int64_t i = 0; i < n; i++) k[i] = (int32_t)(i % 3);
      Odd c = {.k = k, .mode = mode, .seed = (unsigned)n};
      p[n] = p[n + 1] = -7;   /* guards past the row */
      iota(p, n);
      introsort_perm(p, n, odd_less, &c);
      expect_permutation(p, n);
      cr_assert(p[n] == -7 && p[n + 1] == -7, "wrote past the row");
    }
  }
}
