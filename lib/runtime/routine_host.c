/*
 * routine_host.c - the routines of routine.h on the host CPU.
 *
 * The loops are written with GNU C vector types of 64 bytes (16 floats),
 * which any GCC or Clang target lowers to its own vector instructions (four
 * SSE2 registers on a baseline x86-64, NEON on AArch64), so that xhlo-run
 * needs no compiler flags for them; on x86-64 they are compiled again for
 * AVX2 and AVX-512, the CPU's best chosen at load time (ROUTINE_CLONES).  The work splits into units of at least GRAIN
 * elements (whole rows; a column reduction's tiles of TILE columns) run on
 * the thread pool; every unit computes its own outputs, so the bits do not
 * depend on the number of threads.
 *
 * Reduce.  A row (inner == 1) goes into 64 partial results, 16 lanes of
 * four vectors, combined in a fixed order, then with the init value.  A
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
 * ties keep the lower position first.  Once k are kept, a vector of
 * elements at a time is compared with the last one and skipped together
 * when none beats it, which is almost all of a long row.
 */
#include "routine.h"

#include <stdlib.h>
#include <string.h>

#include "thread_pool.h"

typedef float vf __attribute__((vector_size(64)));
typedef int32_t vi __attribute__((vector_size(64)));

enum { L = 16 };                  /* floats in a vector */
enum { GRAIN = 32768, TILE = 256, BLOCK = 8, TOPK_STACK = 64 };

/* The routines' loops again for AVX2 and AVX-512 on x86-64, chosen when
 * xhlo-run starts (GCC's and Clang's function multiversioning). */
#if defined(__x86_64__) && defined(__GNUC__)
#define ROUTINE_CLONES __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", \
                                                    "default")))
#else
#define ROUTINE_CLONES
#endif

/* The helpers take vectors by pointer (by value, the ABI of a 64-byte
 * vector would depend on the target) and are always inlined, into each
 * clone. */
#define INLINE static inline __attribute__((always_inline))

INLINE void vload(vf *v, const float *p) {
  memcpy(v, p, sizeof *v);
}

INLINE void vsplat(vf *v, float x) {
  for (int l = 0; l < L; l++)
    (*v)[l] = x;
}

/* *a = op(*a, *x) lane by lane; maximum and minimum keep *a where *x is NaN
 * (the caller notes the NaN).  *nan: lanes where *x is NaN (maximum and
 * minimum only). */
INLINE void vop(RoutineOp op, vf *a, const vf *x, vi *nan) {
  if (op == ROUTINE_ADD) {
    *a += *x;
    return;
  }
  *nan |= *x != *x;
  vi take = op == ROUTINE_MAX ? (*a < *x) : (*x < *a);
  *a = (vf)(((vi)*x & take) | ((vi)*a & ~take));
}

/* The interpreter's step, NaN included. */
INLINE float sop(RoutineOp op, float a, float x) {
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

INLINE bool any_lane(const vi *m) {
  uint64_t w[sizeof *m / 8], o = 0;
  memcpy(w, m, sizeof w);
  for (size_t k = 0; k < sizeof w / 8; k++)
    o |= w[k];
  return o != 0;
}

/* The first NaN of n elements at stride st (there is one). */
static float first_nan(const float *p, int64_t n, int64_t st) {
  for (int64_t k = 0; k < n; k++)
    if (p[k * st] != p[k * st])
      return p[k * st];
  return p[0];
}

/* init op p[0] op ... op p[n-1], reassociated as the top comment says. */
INLINE float row_reduce(RoutineOp op, const float *p, int64_t n, float init) {
  vf a0, a1, a2, a3, x;
  vi nan = {0};
  vsplat(&a0, op == ROUTINE_ADD ? -0.0f : init);
  a1 = a2 = a3 = a0;
  int64_t i = 0;
  for (; i + 4 * L <= n; i += 4 * L) {
    vload(&x, p + i);
    vop(op, &a0, &x, &nan);
    vload(&x, p + i + L);
    vop(op, &a1, &x, &nan);
    vload(&x, p + i + 2 * L);
    vop(op, &a2, &x, &nan);
    vload(&x, p + i + 3 * L);
    vop(op, &a3, &x, &nan);
  }
  for (; i + L <= n; i += L) {
    vload(&x, p + i);
    vop(op, &a0, &x, &nan);
  }
  if (op != ROUTINE_ADD && any_lane(&nan))
    return first_nan(p, n, 1);
  vop(op, &a0, &a1, &nan);
  vop(op, &a2, &a3, &nan);
  vop(op, &a0, &a2, &nan);
  float s = a0[0];
  for (int l = 1; l < L; l++)
    s = sop(op, s, a0[l]);
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
INLINE void column_reduce(RoutineOp op, const float *x, float *y, int64_t size,
                          int64_t inner, int64_t w, float init, vf *buf) {
  uintptr_t want = ((uintptr_t)x + 2048) & 4095, have = (uintptr_t)buf & 4095;
  vf *acc = (vf *)(void *)((char *)buf + ((want - have) & 4095 & ~(uintptr_t)63));
  vi *nan = (vi *)(void *)(acc + TILE / L);
  int64_t nv = w / L, tail = w - nv * L;
  float tacc[L];
  for (int64_t j = 0; j < nv; j++) {
    vsplat(&acc[j], init);
    nan[j] = (vi){0};
  }
  for (int64_t j = 0; j < tail; j++)
    tacc[j] = init;
  int64_t r = 0;
  for (; r + BLOCK <= size; r += BLOCK) {
    const float *row = x + r * inner;
    for (int64_t j = 0; j < nv; j++) {
      vf a = acc[j], v;
      vi m = nan[j];
      for (int b = 0; b < BLOCK; b++) {
        vload(&v, row + b * inner + L * j);
        vop(op, &a, &v, &m);
      }
      acc[j] = a;
      nan[j] = m;
    }
    for (int b = 0; b < BLOCK; b++)
      for (int64_t j = 0; j < tail; j++)
        tacc[j] = sop(op, tacc[j], row[b * inner + L * nv + j]);
  }
  for (; r < size; r++) {
    const float *row = x + r * inner;
    for (int64_t j = 0; j < nv; j++) {
      vf v;
      vload(&v, row + L * j);
      vop(op, &acc[j], &v, &nan[j]);
    }
    for (int64_t j = 0; j < tail; j++)
      tacc[j] = sop(op, tacc[j], row[L * nv + j]);
  }
  memcpy(y, acc, (size_t)nv * sizeof(vf));
  memcpy(y + L * nv, tacc, (size_t)tail * sizeof(float));
  if (op == ROUTINE_ADD)
    return;
  for (int64_t j = 0; j < nv; j++)
    for (int l = 0; l < L; l++)
      if (nan[j][l])
        y[L * j + l] = first_nan(x + L * j + l, size, inner);
}

typedef struct Job {
  const RoutineDesc *r;
  void *const *s;
  int64_t per;                    /* rows of a unit (row reduce, top-k) */
  int64_t tiles;                  /* column tiles per outer index */
} Job;

ROUTINE_CLONES static void reduce_rows(const Job *j, int64_t lo, int64_t hi) {
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

ROUTINE_CLONES static void reduce_columns(const Job *j, int64_t lo, int64_t hi) {
  const RoutineDesc *r = j->r;
  float init = (float)r->init;
  vf buf[(4096 + 2 * TILE * 4) / sizeof(vf)];  /* room to place the accumulators */
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

/* A vector of keys at once. */
INLINE void keys(vi *k, const uint32_t *bits, bool largest) {
  vi b;
  memcpy(&b, bits, sizeof b);
  *k = b ^ ((b >> 31) & 0x7fffffff);
  if (!largest)
    *k = ~*k;
}

/* One row: the best k (>= 1) of n into values / indices. */
INLINE void topk_row(const float *x, int64_t n, int64_t k, bool largest, int32_t *key,
                     int32_t *pos, float *values, int32_t *indices) {
  const uint32_t *bits = (const uint32_t *)(const void *)x;
  int64_t m = 0;
  for (int64_t i = 0; i < n; i++) {
    if (m == k) {
      vi kv, gt, thr = {0};
      thr += key[k - 1];
      for (; i + L <= n; i += L) {
        keys(&kv, bits + i, largest);
        gt = kv > thr;
        if (any_lane(&gt))
          break;
      }
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

ROUTINE_CLONES static void topk_rows(const Job *j, int64_t lo, int64_t hi) {
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
