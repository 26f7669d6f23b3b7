/*
 * introsort.c - the tie order of XLA's CPU sort for is_stable=false.
 *
 * XLA's CPU runtime (jaxlib 0.10.2: SortThunk, backends/cpu/runtime/
 * sort_lib.cc) sorts each 1-D slice along the sort dimension in place with
 * std::sort, the comparator's lhs being the element std::sort names first;
 * jaxlib is built against libstdc++, whose std::sort is an introsort:
 *
 *   - while a range has more than 16 elements: if the depth budget (2 *
 *     floor(log2 n) for the whole row) is spent, heapsort the range;
 *     otherwise move the median of (first+1, middle, last-1) to first as the
 *     pivot, partition [first+1, last) around it with two scans that stop at
 *     elements not less / not greater than the pivot (Hoare style, no bounds
 *     checks: the pivot and the median's neighbours are the sentinels), sort
 *     the right part recursively and loop on the left part;
 *   - then one insertion sort over the whole row: guarded over the first 16
 *     elements, unguarded after them (the row's minimum is in front by then).
 *
 * Which element of a group of ties ends where follows from exactly these
 * comparisons and moves, so they are reproduced here one for one on a
 * permutation of element ids.  The scans and inserts are bounded by the row:
 * for a comparator that is a strict weak order (or just irreflexive, as IEEE
 * less-than with NaNs) the bounds are never reached and every comparison is
 * XLA's; for one that is not (less-or-equal with ties) std::sort may read
 * outside the row, where XLA's result is undefined, and here the scan stops
 * at the row's end instead.
 */
#include "introsort.h"

#include <string.h>

enum { THRESHOLD = 16 };

typedef struct Intro {
  int64_t *p;
  int64_t n;
  IntroLess less;
  void *ctx;
} Intro;

static bool lt(const Intro *s, int64_t a, int64_t b) { return s->less(s->ctx, a, b); }

static void swap_at(int64_t *p, int64_t i, int64_t j) {
  int64_t t = p[i];
  p[i] = p[j];
  p[j] = t;
}

/* Moves p[i] left past every element it is less than (std::sort's
 * unguarded linear insert, bounded by the row start). */
static void insert_left(const Intro *s, int64_t i) {
  int64_t *p = s->p, v = p[i];
  while (i > 0 && lt(s, v, p[i - 1])) {
    p[i] = p[i - 1];
    i--;
  }
  p[i] = v;
}

/* Guarded insertion sort of p[0..m): an element less than the first goes to
 * the front at once, any other is inserted from the right. */
static void insertion_sort(const Intro *s, int64_t m) {
  int64_t *p = s->p;
  for (int64_t i = 1; i < m; i++) {
    int64_t v = p[i];
    if (lt(s, v, p[0])) {
      memmove(p + 1, p, (size_t)i * sizeof *p);
      p[0] = v;
    } else {
      insert_left(s, i);
    }
  }
}

/* Heap primitives on p[base..base+len), a max-heap under less. */
static void sift(const Intro *s, int64_t base, int64_t hole, int64_t len, int64_t v) {
  int64_t *h = s->p + base, top = hole, child = hole;
  /* down to a leaf along the larger children (the right one unless the
   * right is less than the left) */
  while (child < (len - 1) / 2) {
    child = 2 * (child + 1);
    if (lt(s, h[child], h[child - 1])) child--;
    h[hole] = h[child];
    hole = child;
  }
  if ((len & 1) == 0 && child == (len - 2) / 2) {
    child = 2 * (child + 1);
    h[hole] = h[child - 1];
    hole = child - 1;
  }
  /* then v back up while its parent is less than it */
  int64_t parent = (hole - 1) / 2;
  while (hole > top && lt(s, h[parent], v)) {
    h[hole] = h[parent];
    hole = parent;
    parent = (hole - 1) / 2;
  }
  h[hole] = v;
}

static void heap_sort(const Intro *s, int64_t lo, int64_t hi) {
  int64_t *p = s->p, len = hi - lo;
  if (len >= 2) {
    for (int64_t parent = (len - 2) / 2;; parent--) {
      sift(s, lo, parent, len, p[lo + parent]);
      if (parent == 0) break;
    }
  }
  while (len > 1) {
    len--;
    int64_t v = p[lo + len];
    p[lo + len] = p[lo];
    sift(s, lo, 0, len, v);
  }
}

/* Swaps the median of p[a], p[b], p[c] into p[at]. */
static void median_to(const Intro *s, int64_t at, int64_t a, int64_t b, int64_t c) {
  const int64_t *p = s->p;
  int64_t m;
  if (lt(s, p[a], p[b])) {
    if (lt(s, p[b], p[c])) m = b;
    else if (lt(s, p[a], p[c])) m = c;
    else m = a;
  } else if (lt(s, p[a], p[c])) {
    m = a;
  } else if (lt(s, p[b], p[c])) {
    m = c;
  } else {
    m = b;
  }
  swap_at(s->p, at, m);
}

/* Partitions [lo+1, hi) around the pivot moved to lo; the cut. */
static int64_t partition(const Intro *s, int64_t lo, int64_t hi) {
  int64_t *p = s->p;
  median_to(s, lo, lo + 1, lo + (hi - lo) / 2, hi - 1);
  int64_t pv = p[lo], f = lo + 1, l = hi;
  for (;;) {
    while (f < s->n && lt(s, p[f], pv)) f++;
    l--;
    while (l > 0 && lt(s, pv, p[l])) l--;
    if (f >= l) return f;
    swap_at(p, f, l);
    f++;
  }
}

static void intro_loop(const Intro *s, int64_t lo, int64_t hi, int64_t depth) {
  while (hi - lo > THRESHOLD) {
    if (depth == 0) {
      heap_sort(s, lo, hi);
      return;
    }
    depth--;
    int64_t cut = partition(s, lo, hi);
    intro_loop(s, cut, hi, depth);
    hi = cut;
  }
}

void introsort_perm(int64_t *p, int64_t n, IntroLess less, void *ctx) {
  if (n <= 0) return;
  Intro s = {.p = p, .n = n, .less = less, .ctx = ctx};
  int64_t lg = 63 - __builtin_clzll((unsigned long long)n);
  intro_loop(&s, 0, n, 2 * lg);
  if (n > THRESHOLD) {
    insertion_sort(&s, THRESHOLD);
    for (int64_t i = THRESHOLD; i < n; i++) insert_left(&s, i);
  } else {
    insertion_sort(&s, n);
  }
}
