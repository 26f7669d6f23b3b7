/*
 * gemm.c - the blocked f32 and f64 matrix products under the interpreter's
 * dot and convolution.
 *
 *   C[m][n] += sum over k = 0, 1, ..., K-1 of A_m[k] * B[k][n]
 *
 * for the rows m whose valid flag is set (all when valid is NULL); other
 * rows of C are left as they are.  Row m of A is given by its own pointer
 * (a dot's rows are evenly spaced, a convolution's are gathered from the
 * window position), B by a row and a column stride.
 *
 * Exactness: every element of C receives its products one at a time, in
 * increasing k, each rounded to the element type and then added in it (a
 * multiply and an add, never a fused multiply-add: the vector code is built
 * for SSE2 and for AVX2 without FMA), exactly as the plain loop
 *   for k: c += a[k] * b[k][n]
 * does.  The blocking below only changes which elements are computed when:
 * the k range is cut into chunks of GEMM_KC, and an element's running sum
 * is kept in C between chunks (a store and a load of the same type, exact),
 * so the order of its additions never changes.  Callers start C at zero
 * for a plain product (0 + p is p, and -0 + ... is what the plain loop
 * gives too, since it also starts from +0).
 *
 * Threads: the row blocks of each (column panel, k chunk) step are shared
 * among the interpreter's threads (ev_pool) when the step is large; a
 * block writes only its own rows of C, each element still receives its
 * products in increasing k, so the bits are those of one thread.
 *
 * Blocking, as BLIS does it: columns in panels of GEMM_NC, k in chunks of
 * GEMM_KC whose B panel is packed into [chunk][GEMM_NR] strips (zero
 * padded past N), rows in blocks of GEMM_MC, and a GEMM_MR x GEMM_NR
 * register tile whose inner loop over k multiplies one broadcast element of
 * each of GEMM_MR rows with two vectors of a B strip.  Edge tiles run on a
 * copy of the tile (rows past M read row 0 and are not written back).
 */
#include <string.h>

#include "evalp.h"

enum { GEMM_MR = 6, GEMM_KC = 256, GEMM_MC = 96, GEMM_NC = 2048 };

/* Multiply-adds of one (column panel, k chunk) step from which its row
 * blocks are shared among the interpreter's threads (ev_pool). */
#define GEMM_THREADED_MACS ((int64_t)1 << 21)

/* One (column panel, k chunk) step of the product, for blocks_T. */
typedef struct GemmStep {
  const void *const *arows;
  const bool *valid;
  const void *bp;
  void *C;
  int64_t ldc, M, n0, nc, k0, kc;
} GemmStep;

typedef float vf32 __attribute__((vector_size(32), aligned(4)));
typedef double vf64 __attribute__((vector_size(32), aligned(8)));

/* T: element type, V: its 32-byte vector type, W: elements per vector,
 * NR = 2 W: columns of a tile.  Defines pack_T, kernel_T, gemm_T. */
#define GEMM_DEFINE(T, V, W)                                                   \
  enum { NR_##T = 2 * (W) };                                                   \
                                                                               \
  /* bp[k][j] = B[k0 + k][n0 + j] for j < nr, 0 past it. */                   \
  static void pack_##T(const T *B, int64_t sk, int64_t sn, int64_t k0,         \
                       int64_t kc, int64_t n0, int64_t nr, T *bp) {            \
    for (int64_t k = 0; k < kc; k++) {                                         \
      const T *row = B + (k0 + k) * sk + n0 * sn;                              \
      T *dst = bp + k * NR_##T;                                                \
      int64_t j = 0;                                                           \
      if (sn == 1)                                                             \
        for (; j < nr; j++) dst[j] = row[j];                                   \
      else                                                                     \
        for (; j < nr; j++) dst[j] = row[j * sn];                              \
      for (; j < NR_##T; j++) dst[j] = 0;                                      \
    }                                                                          \
  }                                                                            \
                                                                               \
  /* The full tile: c[r][0..NR) += sum_k a[r][k] * bp[k][0..NR). */           \
  __attribute__((target_clones("avx2", "default")))                            \
  static void kernel_##T(int64_t kc, const T *const *a, const T *bp, T *c,     \
                         int64_t ldc) {                                        \
    const T *a0 = a[0], *a1 = a[1], *a2 = a[2], *a3 = a[3], *a4 = a[4],        \
            *a5 = a[5];                                                        \
    V c00 = *(V *)(c), c01 = *(V *)(c + (W));                                  \
    V c10 = *(V *)(c + ldc), c11 = *(V *)(c + ldc + (W));                      \
    V c20 = *(V *)(c + 2 * ldc), c21 = *(V *)(c + 2 * ldc + (W));              \
    V c30 = *(V *)(c + 3 * ldc), c31 = *(V *)(c + 3 * ldc + (W));              \
    V c40 = *(V *)(c + 4 * ldc), c41 = *(V *)(c + 4 * ldc + (W));              \
    V c50 = *(V *)(c + 5 * ldc), c51 = *(V *)(c + 5 * ldc + (W));              \
    for (int64_t k = 0; k < kc; k++) {                                         \
      V b0 = *(const V *)(bp + k * NR_##T);                                    \
      V b1 = *(const V *)(bp + k * NR_##T + (W));                              \
      V x;                                                                     \
      x = (V){0} + a0[k]; c00 += x * b0; c01 += x * b1;                        \
      x = (V){0} + a1[k]; c10 += x * b0; c11 += x * b1;                        \
      x = (V){0} + a2[k]; c20 += x * b0; c21 += x * b1;                        \
      x = (V){0} + a3[k]; c30 += x * b0; c31 += x * b1;                        \
      x = (V){0} + a4[k]; c40 += x * b0; c41 += x * b1;                        \
      x = (V){0} + a5[k]; c50 += x * b0; c51 += x * b1;                        \
    }                                                                          \
    *(V *)(c) = c00; *(V *)(c + (W)) = c01;                                    \
    *(V *)(c + ldc) = c10; *(V *)(c + ldc + (W)) = c11;                        \
    *(V *)(c + 2 * ldc) = c20; *(V *)(c + 2 * ldc + (W)) = c21;                \
    *(V *)(c + 3 * ldc) = c30; *(V *)(c + 3 * ldc + (W)) = c31;                \
    *(V *)(c + 4 * ldc) = c40; *(V *)(c + 4 * ldc + (W)) = c41;                \
    *(V *)(c + 5 * ldc) = c50; *(V *)(c + 5 * ldc + (W)) = c51;                \
  }                                                                            \
                                                                               \
  /* A tile of mr rows and nr columns at c (rows m0..): the full kernel on    \
   * c itself, or on a copy for an edge or a tile with invalid rows. */       \
  static void tile_##T(int64_t kc, const T *const *arows, const bool *valid,   \
                       int64_t m0, int64_t mr, int64_t k0, const T *bp, T *c,  \
                       int64_t ldc, int64_t nr) {                              \
    const T *a[GEMM_MR];                                                       \
    bool all = mr == GEMM_MR && nr == NR_##T;                                  \
    for (int r = 0; r < GEMM_MR; r++) {                                        \
      a[r] = (r < mr ? arows[m0 + r] : arows[m0]) + k0;                        \
      if (r < mr && valid && !valid[m0 + r]) all = false;                      \
    }                                                                          \
    if (all) {                                                                 \
      kernel_##T(kc, a, bp, c, ldc);                                           \
      return;                                                                  \
    }                                                                          \
    T t[GEMM_MR * NR_##T];                                                     \
    memset(t, 0, sizeof t);                                                    \
    for (int64_t r = 0; r < mr; r++)                                           \
      memcpy(t + r * NR_##T, c + r * ldc, (size_t)nr * sizeof(T));            \
    kernel_##T(kc, a, bp, t, NR_##T);                                          \
    for (int64_t r = 0; r < mr; r++)                                           \
      if (!valid || valid[m0 + r])                                             \
        memcpy(c + r * ldc, t + r * NR_##T, (size_t)nr * sizeof(T));          \
  }                                                                            \
                                                                               \
  /* The row blocks [lo, hi) of one (column panel, k chunk) step. */         \
  static void blocks_##T(void *ctx, int64_t lo, int64_t hi) {                  \
    const GemmStep *g = ctx;                                                   \
    const T *bp = g->bp;                                                       \
    T *C = g->C;                                                               \
    for (int64_t b = lo; b < hi; b++) {                                        \
      int64_t m1 = b * GEMM_MC;                                                \
      int64_t mc = g->M - m1 < GEMM_MC ? g->M - m1 : GEMM_MC;                  \
      for (int64_t j = 0; j < g->nc; j += NR_##T) {                            \
        const T *panel = bp + (j / NR_##T) * NR_##T * g->kc;                   \
        int64_t nr = g->nc - j < NR_##T ? g->nc - j : NR_##T;                  \
        for (int64_t m = m1; m < m1 + mc; m += GEMM_MR)                        \
          tile_##T(g->kc, (const T *const *)g->arows, g->valid, m,             \
                   m1 + mc - m < GEMM_MR ? m1 + mc - m : GEMM_MR, g->k0,       \
                   panel, C + m * g->ldc + g->n0 + j, g->ldc, nr);             \
      }                                                                        \
    }                                                                          \
  }                                                                            \
                                                                               \
  bool ev_gemm_##T(Eval *ev, const HloInstr *i, int64_t M, int64_t N,          \
                   int64_t K, const T *const *arows, const bool *valid,        \
                   const T *B, int64_t sk, int64_t sn, T *C, int64_t ldc) {    \
    if (M <= 0 || N <= 0 || K <= 0) return true;                               \
    int64_t ncap = N < GEMM_NC ? N : GEMM_NC;                                  \
    int64_t npan = (ncap + NR_##T - 1) / NR_##T;                               \
    int64_t kcap = K < GEMM_KC ? K : GEMM_KC;                                  \
    int64_t bytes = npan * NR_##T * kcap * (int64_t)sizeof(T);                 \
    T *bp = ev_scratch(ev, i, bytes);                                          \
    if (!bp) return false;                                                     \
    int64_t nblocks = (M + GEMM_MC - 1) / GEMM_MC;                             \
    ThreadPool *pool =                                                         \
        nblocks > 1 && M * ncap * kcap >= GEMM_THREADED_MACS ? ev_pool(ev)     \
                                                             : NULL;           \
    bool ok = true;                                                            \
    for (int64_t n0 = 0; n0 < N && ok; n0 += GEMM_NC) {                        \
      int64_t nc = N - n0 < GEMM_NC ? N - n0 : GEMM_NC;                        \
      for (int64_t k0 = 0; k0 < K && ok; k0 += GEMM_KC) {                      \
        int64_t kc = K - k0 < GEMM_KC ? K - k0 : GEMM_KC;                      \
        for (int64_t j = 0; j < nc; j += NR_##T)                               \
          pack_##T(B, sk, sn, k0, kc, n0 + j,                                  \
                   nc - j < NR_##T ? nc - j : NR_##T,                          \
                   bp + (j / NR_##T) * NR_##T * kc);                           \
        GemmStep g = {.arows = (const void *const *)arows, .valid = valid,     \
                      .bp = bp, .C = C, .ldc = ldc, .M = M, .n0 = n0,          \
                      .nc = nc, .k0 = k0, .kc = kc};                           \
        if (pool) {                                                            \
          thread_pool_run(pool, nblocks, blocks_##T, &g);                      \
          ok = ev_check_time(ev, i);                                           \
        } else {                                                               \
          for (int64_t b = 0; b < nblocks && ok; b++) {                        \
            blocks_##T(&g, b, b + 1);                                          \
            ok = ev_check_time(ev, i);                                         \
          }                                                                    \
        }                                                                      \
      }                                                                        \
    }                                                                          \
    ev_scratch_free(ev, bp, bytes);                                            \
    return ok;                                                                 \
  }

GEMM_DEFINE(float, vf32, 8)
GEMM_DEFINE(double, vf64, 4)
