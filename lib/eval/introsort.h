/*
 * introsort.h - the order XLA's CPU runtime gives an unstable sort (see
 * introsort.c).
 */
#ifndef XHLOC_INTROSORT_H
#define XHLOC_INTROSORT_H

#include <stdbool.h>
#include <stdint.h>

/* less(ctx, a, b): whether element a goes before element b (a and b are
 * the values held in the permutation, i.e. element ids). */
typedef bool (*IntroLess)(void *ctx, int64_t a, int64_t b);

/* Sorts p[0..n) (element ids) in the order libstdc++'s std::sort leaves
 * them with comparator less, comparison for comparison; never reads outside
 * p[0..n), whatever less answers. */
void introsort_perm(int64_t *p, int64_t n, IntroLess less, void *ctx);

#endif
