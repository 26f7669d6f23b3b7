/*
 * routine_host.c - the routines of routine.h on the host CPU.
 *
 * The loops are written with GNU C vector types of 16 bytes (4 floats),
 * which any GCC or Clang target lowers to its own vector instructions (SSE2
 * on a baseline x86-64, NEON on AArch64), so that xhlo-run needs no
 * compiler flags for them.  The work splits into units of at least GRAIN
 * elements (whole rows; a column reduction's tiles of TILE columns) run on
 * the thread pool; every unit computes its own outputs, so the bits do not
 * depend on the number of threads.
 *
 * Reduce.  A row (inner == 1) goes into 32 partial results, 4 lanes of
 * eight vectors, combined in a fixed tree, then with the init value.  A
 * column tile keeps one accumulator per column, starting at the init
 * value, and combines the rows into them in order, BLOCK rows at a time
 * (the loads of rows far apart in flight together; one row at a time ran
 * at half the speed of an LLVM kernel that holds the tile in registers).
 * Maximum and minimum select with a vector comparison; a NaN, which the
 * comparison would drop, is noted, and the output then takes the first NaN
 * of its elements, as the interpreter's in-order reduction does.
 *
 * Top-k.  The row's best k so far are kept in order (keys of the total
 * order as signed integers, with their positions); an element better than
 * the last of them is inserted after every kept one it does not beat, so
 * ties keep the lower position first.  Once k are kept, eight elements at a
 * time are compared with the last one and skipped together when none beats
 * it, which is almost all of a long row.
 */
#include "routine.h"

#include <stdlib.h>
#include <string.h>

#include "thread_pool.h"

typedef float v4f __attribute__((vector_size(16)));
typedef int32_t v4i __attribute__((vector_size(16)));

enum { GRAIN = 32768, TILE = 256, BLOCK = 8, TOPK_STACK = 64 };

static inline v4f load4(const float *p) {
  v4f v;
  memcpy(&v, p, sizeof v);
  return v;
}

static inline v4f splat4(float x) {
  return (v4f){x, x, x, x};
}

/* op(a, x) lane by lane; maximum and minimum keep a where x is NaN. */
static inline __attribute__((always_inline)) v4f vop(RoutineOp op, v4f a, v4f x) {
  if (op == ROUTINE_ADD)
    return a + x;
  v4i take = op == ROUTINE_MAX ? (a < x) : (x < a);
  return (v4f)(((v4i)x & take) | ((v4i)a & ~take));
}

/* The interpreter's step, NaN included. */
static inline __attribute__((always_inline)) float sop(RoutineOp op, float a, float x) {
  if (op == ROUTINE_ADD)
    return a + x;
  if (a != a)
    return a;
  if (x != x)
    return x;
  if (op == ROUTINE_MAX)
    return a < x ? x : a;
  return x < a ? x : a;
}

static inline bool any_lane(v4i m) {
  uint64_t w[2];
  memcpy(w, &m, sizeof w);
  return (w[0] | w[1]) != 0;
}

/* The first NaN of n elements at stride st (there is one). */
static float first_nan(const float *p, int64_t n, int64_t st) {
  for (int64_t k = 0; k < n; k++)
    if (p[k * st] != p[k * st])
      return p[k * st];
  return p[0];
}

/* init op p[0] op ... op p[n-1], reassociated as the top comment says. */
static inline __attribute__((always_inline)) float row_reduce(RoutineOp op, const float *p,
                                                              int64_t n, float init) {
  float id = op == ROUTINE_ADD ? -0.0f : init;
  v4f a[8];
  for (int j = 0; j < 8; j++)
    a[j] = splat4(id);
  v4i nan = {0};
  int64_t i = 0;
  for (; i + 32 <= n; i += 32) {
    for (int j = 0; j < 8; j++) {
      v4f x = load4(p + i + 4 * j);
      if (op != ROUTINE_ADD)
        nan |= x != x;
      a[j] = vop(op, a[j], x);
    }
  }
  for (; i + 4 <= n; i += 4) {
    v4f x = load4(p + i);
    if (op != ROUTINE_ADD)
      nan |= x != x;
    a[0] = vop(op, a[0], x);
  }
  if (op != ROUTINE_ADD && any_lane(nan))
    return first_nan(p, n, 1);
  v4f t = vop(op, vop(op, vop(op, a[0], a[1]), vop(op, a[2], a[3])),
              vop(op, vop(op, a[4], a[5]), vop(op, a[6], a[7])));
  float l[4];
  memcpy(l, &t, sizeof l);
  float s = sop(op, sop(op, l[0], l[2]), sop(op, l[1], l[3]));
  for (; i < n; i++)
    s = sop(op, s, p[i]);
  return sop(op, init, s);
}

/* Columns [0, w) (w <= TILE) at x (rows `inner` apart) into y: y[b] = init
 * op x[0][b] op x[1][b] ... in order.  The accumulators (and NaN marks)
 * live in buf, 2 KiB away from the row's addresses modulo 4 KiB, so that no
 * load of a row looks to the CPU as if it might read the accumulators'
 * last store (4 KiB aliasing: with rows a multiple of 4 KiB apart, every
 * load waited for that store, 4x slower). */
static inline __attribute__((always_inline)) void column_reduce(
    RoutineOp op, const float *x, float *y, int64_t size, int64_t inner, int64_t w,
    float init, v4f *buf) {
  uintptr_t want = ((uintptr_t)x + 2048) & 4095, have = (uintptr_t)buf & 4095;
  v4f *acc = (v4f *)(void *)((char *)buf + ((want - have) & 4095 & ~(uintptr_t)15));
  v4i *nan = (v4i *)(void *)(acc + TILE / 4);
  int64_t nv = w / 4, tail = w - nv * 4;
  float tacc[4];
  for (int64_t j = 0; j < nv; j++) {
    acc[j] = splat4(init);
    nan[j] = (v4i){0};
  }
  for (int64_t j = 0; j < tail; j++)
    tacc[j] = init;
  int64_t r = 0;
  for (; r + BLOCK <= size; r += BLOCK) {
    const float *row = x + r * inner;
    for (int64_t j = 0; j < nv; j++) {
      v4f a = acc[j];
      v4i m = nan[j];
      for (int b = 0; b < BLOCK; b++) {
        v4f v = load4(row + b * inner + 4 * j);
        if (op != ROUTINE_ADD)
          m |= v != v;
        a = vop(op, a, v);
      }
      acc[j] = a;
      nan[j] = m;
    }
    for (int b = 0; b < BLOCK; b++)
      for (int64_t j = 0; j < tail; j++)
        tacc[j] = sop(op, tacc[j], row[b * inner + 4 * nv + j]);
  }
  for (; r < size; r++) {
    const float *row = x + r * inner;
    if (op == ROUTINE_ADD) {
      for (int64_t j = 0; j < nv; j++)
        acc[j] += load4(row + 4 * j);
    } else {
      for (int64_t j = 0; j < nv; j++) {
        v4f v = load4(row + 4 * j);
        nan[j] |= v != v;
        acc[j] = vop(op, acc[j], v);
      }
    }
    for (int64_t j = 0; j < tail; j++)
      tacc[j] = sop(op, tacc[j], row[4 * nv + j]);
  }
  memcpy(y, acc, (size_t)nv * sizeof(v4f));
  memcpy(y + 4 * nv, tacc, (size_t)tail * sizeof(float));
  if (op == ROUTINE_ADD)
    return;
  for (int64_t j = 0; j < nv; j++) {
    int32_t m[4];
    memcpy(m, &nan[j], sizeof m);
    for (int l = 0; l < 4; l++)
      if (m[l])
        y[4 * j + l] = first_nan(x + 4 * j + l, size, inner);
  }
}

typedef struct Job {
  const RoutineDesc *r;
  void *const *s;
  int64_t per;                    /* rows of a unit (row reduce, top-k) */
  int64_t tiles;                  /* column tiles per outer index */
} Job;

static void reduce_rows(const Job *j, int64_t lo, int64_t hi) {
  const RoutineDesc *r = j->r;
  const float *x = j->s[ROUTINE_X];
  float *y = j->s[ROUTINE_Y];
  float init = (float)r->init;
  int64_t end = hi * j->per < r->outer ? hi * j->per : r->outer;
  for (int64_t a = lo * j->per; a < end; a++) {
    const float *p = x + a * r->size;
    switch (r->op) {
    case ROUTINE_ADD: y[a] = row_reduce(ROUTINE_ADD, p, r->size, init); break;
    case ROUTINE_MAX: y[a] = row_reduce(ROUTINE_MAX, p, r->size, init); break;
    case ROUTINE_MIN: y[a] = row_reduce(ROUTINE_MIN, p, r->size, init); break;
    }
  }
}

static void reduce_columns(const Job *j, int64_t lo, int64_t hi) {
  const RoutineDesc *r = j->r;
  float init = (float)r->init;
  v4f buf[(4096 + 2 * TILE * 4) / sizeof(v4f)];  /* room to place the accumulators */
  for (int64_t u = lo; u < hi; u++) {
    int64_t a = u / j->tiles, b0 = u % j->tiles * TILE;
    int64_t w = r->inner - b0 < TILE ? r->inner - b0 : TILE;
    const float *x = (const float *)j->s[ROUTINE_X] + a * r->size * r->inner + b0;
    float *y = (float *)j->s[ROUTINE_Y] + a * r->inner + b0;
    switch (r->op) {
    case ROUTINE_ADD: column_reduce(ROUTINE_ADD, x, y, r->size, r->inner, w, init, buf); break;
    case ROUTINE_MAX: column_reduce(ROUTINE_MAX, x, y, r->size, r->inner, w, init, buf); break;
    case ROUTINE_MIN: column_reduce(ROUTINE_MIN, x, y, r->size, r->inner, w, init, buf); break;
    }
  }
}

/* The total order of floats as signed integers; reversed for the
 * smallest. */
static inline int32_t key_of(uint32_t bits, bool largest) {
  int32_t k = (int32_t)(bits ^ ((uint32_t)((int32_t)bits >> 31) & 0x7fffffffu));
  return largest ? k : ~k;
}

/* Four keys at once. */
static inline v4i keys4(const uint32_t *bits, bool largest) {
  v4i b;
  memcpy(&b, bits, sizeof b);
  v4i k = b ^ ((b >> 31) & 0x7fffffff);
  return largest ? k : ~k;
}

/* One row: the best k (>= 1) of n into values / indices. */
static void topk_row(const float *x, int64_t n, int64_t k, bool largest, int32_t *key,
                     int32_t *pos, float *values, int32_t *indices) {
  const uint32_t *bits = (const uint32_t *)(const void *)x;
  int64_t m = 0;
  for (int64_t i = 0; i < n; i++) {
    if (m == k) {
      int32_t t = key[k - 1];
      v4i thr = {t, t, t, t};
      while (i + 8 <= n && !any_lane((keys4(bits + i, largest) > thr) |
                                     (keys4(bits + i + 4, largest) > thr)))
        i += 8;
      if (i == n)
        break;
    }
    int32_t kk = key_of(bits[i], largest);
    if (m == k) {
      if (kk <= key[k - 1])
        continue;
      m--;                        /* the last one drops out */
    }
    int64_t p = m++;
    for (; p > 0 && key[p - 1] < kk; p--) {
      key[p] = key[p - 1];
      pos[p] = pos[p - 1];
    }
    key[p] = kk;
    pos[p] = (int32_t)i;
  }
  for (int64_t j = 0; j < k; j++) {
    values[j] = x[pos[j]];
    indices[j] = pos[j];
  }
}

static void topk_rows(const Job *j, int64_t lo, int64_t hi) {
  const RoutineDesc *r = j->r;
  int32_t kst[TOPK_STACK], pst[TOPK_STACK];
  int32_t *key = kst, *pos = pst;
  if (r->k > TOPK_STACK) {
    key = xmalloc(sizeof *key * (size_t)r->k);
    pos = xmalloc(sizeof *pos * (size_t)r->k);
  }
  const float *x = j->s[ROUTINE_X];
  float *v = j->s[ROUTINE_Y];
  int32_t *ix = j->s[ROUTINE_INDICES];
  int64_t end = hi * j->per < r->rows ? hi * j->per : r->rows;
  for (int64_t row = lo * j->per; row < end; row++)
    topk_row(x + row * r->n, r->n, r->k, r->largest, key, pos, v + row * r->k,
             ix + row * r->k);
  if (key != kst) {
    free(key);
    free(pos);
  }
}

static void run_units(void *ctx, int64_t lo, int64_t hi) {
  const Job *j = ctx;
  if (j->r->kind == ROUTINE_TOPK)
    topk_rows(j, lo, hi);
  else if (j->r->inner == 1)
    reduce_rows(j, lo, hi);
  else
    reduce_columns(j, lo, hi);
}

void routine_run(const RoutineDesc *r, void *const s[ROUTINE_NSLICES],
                 struct ThreadPool *pool) {
  Job j = {r, s, 1, 1};
  int64_t units;
  if (r->kind == ROUTINE_TOPK || r->inner == 1) {
    int64_t rows = r->kind == ROUTINE_TOPK ? r->rows : r->outer;
    int64_t len = r->kind == ROUTINE_TOPK ? r->n : r->size;
    j.per = len >= GRAIN ? 1 : GRAIN / len;
    units = (rows + j.per - 1) / j.per;
  } else {
    j.tiles = (r->inner + TILE - 1) / TILE;
    units = r->outer * j.tiles;
  }
  thread_pool_run(pool, units, run_units, &j);
}
