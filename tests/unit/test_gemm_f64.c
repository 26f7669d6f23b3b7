/*
 * test_gemm_f64.c - the host's blocked GEMM in double (gemm_f64.c) against
 * the reference loops (libcall_ref.c): sizes around and across its blocks,
 * row- and column-major operands with padded rows, batches with gaps,
 * every epilogue, mixed element types, 1 to 3 threads; and its refusals.
 */
#include <criterion/criterion.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../../lib/runtime/gemm_f64.h"

static uint64_t rng = 7;

static double rnd(void) {
  rng = rng * 6364136223846793005ull + 1442695040888963407ull;
  return (double)((rng >> 11) % 2001) / 1000.0 - 1.0;
}

static double get(ElemType t, const void *p, int64_t k) {
  int n = et_bytes(t);
  uint64_t bits = 0;
  memcpy(&bits, (const uint8_t *)p + k * n, (size_t)n);
  return fp_to_double(et_fp_format(t), bits);
}

static void *random_buffer(ElemType t, int64_t n) {
  int eb = et_bytes(t);
  uint8_t *p = calloc((size_t)n + 1, (size_t)eb);
  for (int64_t k = 0; k < n; k++) {
    uint64_t bits = fp_from_double(et_fp_format(t), rnd());
    memcpy(p + k * eb, &bits, (size_t)eb);
  }
  return p;
}

/* A matrix of rows x cols, row- or column-major with pad extra elements per
 * row/column and a gap of 5 between batches. */
static GemmMatrix mat(ElemType t, int64_t rows, int64_t cols, bool col_major, int64_t pad,
                      int64_t batch) {
  GemmMatrix m = {t, rows, cols, 0, 0, 0};
  if (col_major) {
    m.row_stride = 1;
    m.col_stride = rows + pad;
    m.batch_stride = batch > 1 ? (rows + pad) * cols + 5 : 0;
  } else {
    m.col_stride = 1;
    m.row_stride = cols + pad;
    m.batch_stride = batch > 1 ? (cols + pad) * rows + 5 : 0;
  }
  return m;
}

static int64_t extent(const GemmMatrix *m, int64_t batch) {
  return (batch - 1) * m->batch_stride + (m->rows - 1) * m->row_stride +
         (m->cols - 1) * m->col_stride + 1;
}

/* One unit in the last place of type t, relative. */
static double ulp(ElemType t) {
  switch (t) {
  case ET_F64: return 0x1p-52;
  case ET_F32: return 0x1p-23;
  case ET_F16: return 0x1p-10;
  case ET_BF16: return 0x1p-7;
  default: return 0x1p-2;
  }
}

/* Runs g through gemm_f64 and libcall_ref on the same inputs (D starting
 * from the same random contents) and compares every element of D's
 * extent, the padding included. */
static void check(GemmDesc g, int threads) {
  void *p[GEMM_NSLICES] = {0}, *q[GEMM_NSLICES] = {0};
  int64_t nd = extent(&g.d, g.batch);
  p[GEMM_A] = q[GEMM_A] = random_buffer(g.a.et, extent(&g.a, g.batch));
  p[GEMM_B] = q[GEMM_B] = random_buffer(g.b.et, extent(&g.b, g.batch));
  p[GEMM_D] = random_buffer(g.d.et, nd);
  q[GEMM_D] = malloc((size_t)nd * (size_t)et_bytes(g.d.et));
  memcpy(q[GEMM_D], p[GEMM_D], (size_t)nd * (size_t)et_bytes(g.d.et));
  bool in_place = g.beta != 0 && g.c.row_stride == 0;   /* marker: C is D */
  if (in_place) {
    g.c = g.d;
    p[GEMM_C] = p[GEMM_D];
    q[GEMM_C] = q[GEMM_D];
  } else if (g.beta != 0) {
    p[GEMM_C] = q[GEMM_C] = random_buffer(g.c.et, extent(&g.c, g.batch));
  }
  if (g.has_bias) p[GEMM_BIAS] = q[GEMM_BIAS] = random_buffer(g.bias_et, g.n);
  Diag d = {0};
  cr_assert(gemm_f64(&g, p, threads, &d), "%s", d.msg ? d.msg : "");
  cr_assert(libcall_ref_gemm(&g, q, &d), "%s", d.msg ? d.msg : "");
  /* Both sum in double, in different orders: |error| <= (k+2) k eps for
   * products of magnitude <= 1, then one rounding to D's type each. */
  double sum_err = (double)(g.k + 2) * (double)g.k * 0x1p-52;
  for (int64_t k = 0; k < nd; k++) {
    double got = get(g.d.et, p[GEMM_D], k), want = get(g.d.et, q[GEMM_D], k);
    cr_assert(fabs(got - want) <= 2 * ulp(g.d.et) * (fabs(want) + 1) + sum_err,
              "%lldx%lldx%lld batch %lld, %d threads: D element %lld is %.17g, want %.17g",
              (long long)g.m, (long long)g.n, (long long)g.k, (long long)g.batch, threads,
              (long long)k, got, want);
  }
  free(p[GEMM_A]), free(p[GEMM_B]), free(p[GEMM_D]), free(q[GEMM_D]), free(p[GEMM_BIAS]);
  if (!in_place) free(p[GEMM_C]);
}

static GemmDesc desc(ElemType t, int64_t batch, int64_t m, int64_t n, int64_t k, int lay) {
  GemmDesc g = {.batch = batch, .m = m, .n = n, .k = k, .alpha_re = 1};
  g.a = mat(t, m, k, lay & 1, 1, batch);
  g.b = mat(t, k, n, lay & 2, 3, batch);
  g.d = mat(t, m, n, lay & 4, 2, batch);
  g.c = g.d;
  return g;
}

/* Sizes below, at and across MR=6, NR=8, KC=256, MC=96, NC=256 and the
 * 384-row items, in all eight layouts. */
Test(gemm_f64, sizes_and_layouts) {
  static const int64_t sizes[][3] = {{1, 1, 1},    {6, 8, 1},    {7, 9, 5},    {13, 17, 300},
                                     {97, 33, 31}, {20, 257, 9}, {401, 11, 7}, {5, 3, 513}};
  for (size_t s = 0; s < ARRAY_LEN(sizes); s++)
    for (int lay = 0; lay < 8; lay++)
      check(desc(ET_F64, 1, sizes[s][0], sizes[s][1], sizes[s][2], lay), 1);
}

Test(gemm_f64, batches_and_threads) {
  for (int threads = 0; threads <= 3; threads++) {
    check(desc(ET_F64, 3, 37, 29, 41, 5), threads);
    check(desc(ET_F64, 2, 200, 300, 260, 2), threads);
    check(desc(ET_F64, 1, 800, 40, 64, 1), threads);   /* rows split across threads */
  }
}

Test(gemm_f64, epilogues) {
  LibActivation acts[] = {LIB_ACT_NONE, LIB_ACT_RELU, LIB_ACT_GELU_TANH, LIB_ACT_GELU_ERF};
  for (size_t a = 0; a < ARRAY_LEN(acts); a++)
    for (int v = 0; v < 4; v++) {
      GemmDesc g = desc(ET_F64, v == 3 ? 2 : 1, 19, 23, 70, v);
      g.act = acts[a];
      g.alpha_re = v & 1 ? -0.75 : 1;
      g.has_bias = v >= 1;
      g.bias_et = v == 2 ? ET_F32 : ET_F64;
      g.beta = v >= 2 ? 0.5 : 0;
      if (v == 2) g.c = mat(ET_F64, 19, 23, true, 4, 1);   /* C distinct, other layout */
      if (v == 3) g.c.row_stride = 0;                      /* C is D (see check) */
      check(g, 2);
    }
  /* The bias across two column items. */
  GemmDesc g = desc(ET_F64, 1, 10, 300, 20, 0);
  g.has_bias = true;
  g.bias_et = ET_F64;
  check(g, 2);
}

/* Any real float type is read exactly and D rounded once. */
Test(gemm_f64, mixed_types) {
  ElemType ts[][3] = {{ET_F32, ET_F32, ET_F64}, {ET_BF16, ET_F16, ET_F32},
                      {ET_F64, ET_F64, ET_BF16}, {ET_F8E4M3FN, ET_F8E5M2, ET_F16}};
  for (size_t t = 0; t < ARRAY_LEN(ts); t++) {
    GemmDesc g = desc(ET_F64, 2, 30, 20, 90, (int)t);
    g.a.et = ts[t][0];
    g.b.et = ts[t][1];
    g.d.et = g.c.et = ts[t][2];
    g.beta = 1;
    check(g, 2);
  }
}

static void refused(GemmDesc g, const char *want) {
  double A[4] = {0}, B[4] = {0}, D[4] = {0};
  void *p[GEMM_NSLICES] = {A, B, NULL, NULL, D, NULL};
  Diag d = {0};
  cr_assert_not(gemm_f64(&g, p, 1, &d));
  cr_assert(d.msg && strstr(d.msg, want), "want '%s' in: %s", want, d.msg ? d.msg : "");
  diag_clear(&d);
}

Test(gemm_f64, refusals) {
  GemmDesc ok = desc(ET_F64, 1, 2, 2, 2, 0), g = ok;
  g.a.et = ET_S8;
  refused(g, "the A operand has element type s8 (real floats only)");
  g = ok;
  g.alpha_im = 2;
  refused(g, "complex alpha");
  g = ok;
  g.d.cols = 3;
  refused(g, "the result D is 2x3, expected 2x2");
  g = ok;
  g.has_bias = true;
  g.bias_et = ET_F64;
  refused(g, "buffer is missing");
}
