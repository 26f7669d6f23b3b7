/*
 * test_libcall_ref.c - the library-call reference loops (libcall_ref.c)
 * against small cases computed by hand: GEMMs in every layout, batch and
 * epilogue, rounding once to bf16/f16/f8, integers; convolutions forward,
 * backward-input and backward-filter in 1-D, 2-D (grouped, NHWC) and 3-D;
 * the adjoint identities between the three kinds; and the refusals.
 */
#include <criterion/criterion.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../../lib/runtime/libcall.h"

static void put(ElemType t, void *p, int64_t k, double v) {
  int n = et_bytes(t);
  uint64_t bits = fp_from_double(et_fp_format(t), v);
  memcpy((uint8_t *)p + k * n, &bits, (size_t)n);
}

static double get(ElemType t, const void *p, int64_t k) {
  int n = et_bytes(t);
  uint64_t bits = 0;
  memcpy(&bits, (const uint8_t *)p + k * n, (size_t)n);
  return fp_to_double(et_fp_format(t), bits);
}

/* A buffer of type t holding vals[0..n-1] (each exactly representable in
 * the tests below). */
static void *buf(ElemType t, int n, const double *vals) {
  void *p = calloc((size_t)n + 1, (size_t)et_bytes(t));
  for (int k = 0; k < n; k++) put(t, p, k, vals[k]);
  return p;
}

static GemmMatrix rowmaj(ElemType t, int64_t r, int64_t c) {
  return (GemmMatrix){t, r, c, 0, c, 1};
}

static GemmMatrix colmaj(ElemType t, int64_t r, int64_t c) {
  return (GemmMatrix){t, r, c, 0, 1, r};
}

static GemmDesc gemm_desc(GemmMatrix a, GemmMatrix b, GemmMatrix dm) {
  GemmDesc g = {.batch = 1, .m = a.rows, .n = b.cols, .k = a.cols, .alpha_re = 1};
  g.a = a;
  g.b = b;
  g.c = dm;
  g.d = dm;
  return g;
}

static void run_gemm(const GemmDesc *g, void *p[GEMM_NSLICES]) {
  Diag d = {0};
  cr_assert(libcall_ref_gemm(g, p, &d), "%s", d.msg ? d.msg : "");
}

/* [[1,2,3],[4,5,6]] @ [[7,8],[9,10],[11,12]] = [[58,64],[139,154]] in all
 * eight storage orders of A, B and D. */
Test(libcall_ref, gemm_2x3x2_every_layout) {
  static const double A_rm[] = {1, 2, 3, 4, 5, 6}, A_cm[] = {1, 4, 2, 5, 3, 6};
  static const double B_rm[] = {7, 8, 9, 10, 11, 12}, B_cm[] = {7, 9, 11, 8, 10, 12};
  static const double D_rm[] = {58, 64, 139, 154}, D_cm[] = {58, 139, 64, 154};
  for (int lay = 0; lay < 8; lay++) {
    bool ta = lay & 1, tb = lay & 2, td = lay & 4;
    GemmDesc g = gemm_desc(ta ? colmaj(ET_F32, 2, 3) : rowmaj(ET_F32, 2, 3),
                           tb ? colmaj(ET_F32, 3, 2) : rowmaj(ET_F32, 3, 2),
                           td ? colmaj(ET_F32, 2, 2) : rowmaj(ET_F32, 2, 2));
    void *p[GEMM_NSLICES] = {0};
    p[GEMM_A] = buf(ET_F32, 6, ta ? A_cm : A_rm);
    p[GEMM_B] = buf(ET_F32, 6, tb ? B_cm : B_rm);
    p[GEMM_D] = calloc(4, sizeof(float));
    run_gemm(&g, p);
    const double *want = td ? D_cm : D_rm;
    for (int k = 0; k < 4; k++)
      cr_assert_eq(get(ET_F32, p[GEMM_D], k), want[k], "layout %d element %d: %g", lay, k,
                   get(ET_F32, p[GEMM_D], k));
    for (int k = 0; k < GEMM_NSLICES; k++) free(p[k]);
  }
}

/* Two batches with padded rows and a gap between batches; the padding is
 * left alone. */
Test(libcall_ref, gemm_batched_strided) {
  GemmDesc g = gemm_desc(rowmaj(ET_F64, 2, 2), rowmaj(ET_F64, 2, 1), rowmaj(ET_F64, 2, 1));
  g.batch = 2;
  g.a.row_stride = 3, g.a.batch_stride = 7;     /* rows padded to 3, batch gap */
  g.b.batch_stride = 2;
  g.d.row_stride = 2, g.d.batch_stride = 5;
  static const double A[] = {1, 2, -9, 3, 4, -9, -9, /* batch 1 */ 5, 6, -9, 7, 8};
  static const double B[] = {1, 1, /* batch 1 */ 2, -1};
  static const double D0[10] = {-5, -5, -5, -5, -5, -5, -5, -5, -5, -5};
  void *p[GEMM_NSLICES] = {0};
  p[GEMM_A] = buf(ET_F64, 12, A);
  p[GEMM_B] = buf(ET_F64, 4, B);
  p[GEMM_D] = buf(ET_F64, 10, D0);
  run_gemm(&g, p);
  /* batch 0: [1+2, 3+4] = [3, 7]; batch 1: [10-6, 14-8] = [4, 6] */
  static const double want[10] = {3, -5, 7, -5, -5, 4, -5, 6, -5, -5};
  for (int k = 0; k < 10; k++)
    cr_assert_eq(get(ET_F64, p[GEMM_D], k), want[k], "element %d: %g", k,
                 get(ET_F64, p[GEMM_D], k));
  for (int k = 0; k < GEMM_NSLICES; k++) free(p[k]);
}

/* D = relu(2 * A@B + 0.5 * C + bias), C column-major and distinct from D. */
Test(libcall_ref, gemm_epilogue_alpha_beta_bias_relu) {
  GemmDesc g = gemm_desc(rowmaj(ET_F32, 2, 2), rowmaj(ET_F32, 2, 2), rowmaj(ET_F32, 2, 2));
  g.c = colmaj(ET_F32, 2, 2);
  g.alpha_re = 2, g.beta = 0.5, g.has_bias = true, g.bias_et = ET_F32, g.act = LIB_ACT_RELU;
  static const double A[] = {1, 2, 3, 4}, B[] = {1, 0, 0, -1};   /* A@B = [[1,-2],[3,-4]] */
  static const double C[] = {4, 8, -2, 6};                       /* [[4,-2],[8,6]] */
  static const double bias[] = {-1, 3};
  void *p[GEMM_NSLICES] = {0};
  p[GEMM_A] = buf(ET_F32, 4, A);
  p[GEMM_B] = buf(ET_F32, 4, B);
  p[GEMM_C] = buf(ET_F32, 4, C);
  p[GEMM_BIAS] = buf(ET_F32, 2, bias);
  p[GEMM_D] = calloc(4, sizeof(float));
  run_gemm(&g, p);
  /* [[2+2-1, -4-1+3], [6+4-1, -8+3+3]] = [[3,-2],[9,-2]] -> relu [[3,0],[9,0]] */
  static const double want[] = {3, 0, 9, 0};
  for (int k = 0; k < 4; k++) cr_assert_eq(get(ET_F32, p[GEMM_D], k), want[k], "element %d", k);
  for (int k = 0; k < GEMM_NSLICES; k++) free(p[k]);
}

/* beta accumulation in place: C and D are the same buffer. */
Test(libcall_ref, gemm_beta_in_place) {
  GemmDesc g = gemm_desc(rowmaj(ET_F32, 1, 2), rowmaj(ET_F32, 2, 2), rowmaj(ET_F32, 1, 2));
  g.beta = 1;
  static const double A[] = {1, 1}, B[] = {1, 2, 3, 4}, D[] = {10, 20};
  void *p[GEMM_NSLICES] = {0};
  p[GEMM_A] = buf(ET_F32, 2, A);
  p[GEMM_B] = buf(ET_F32, 4, B);
  p[GEMM_D] = p[GEMM_C] = buf(ET_F32, 2, D);
  run_gemm(&g, p);
  cr_assert_eq(get(ET_F32, p[GEMM_D], 0), 14);
  cr_assert_eq(get(ET_F32, p[GEMM_D], 1), 26);
  free(p[GEMM_A]), free(p[GEMM_B]), free(p[GEMM_D]);
}

/* gelu(1) and gelu(-1) in both forms, known to 1e-15: 1x1x1 products. */
Test(libcall_ref, gemm_gelu_values) {
  struct { LibActivation act; double x, want; } cases[] = {
      {LIB_ACT_GELU_ERF, 1, 0.8413447460685429},
      {LIB_ACT_GELU_ERF, -1, -0.15865525393145707},
      {LIB_ACT_GELU_TANH, 1, 0.8411919906082768},
      {LIB_ACT_GELU_TANH, -1, -0.15880800939172324},
      {LIB_ACT_RELU, -1, 0},
  };
  for (size_t c = 0; c < ARRAY_LEN(cases); c++) {
    GemmDesc g = gemm_desc(rowmaj(ET_F64, 1, 1), rowmaj(ET_F64, 1, 1), rowmaj(ET_F64, 1, 1));
    g.act = cases[c].act;
    double one = 1;
    void *p[GEMM_NSLICES] = {0};
    p[GEMM_A] = buf(ET_F64, 1, &cases[c].x);
    p[GEMM_B] = buf(ET_F64, 1, &one);
    p[GEMM_D] = calloc(1, sizeof(double));
    run_gemm(&g, p);
    double got = get(ET_F64, p[GEMM_D], 0);
    cr_assert(fabs(got - cases[c].want) < 1e-15, "case %zu: %.17g", c, got);
    for (int k = 0; k < GEMM_NSLICES; k++) free(p[k]);
  }
}

/* One rounding at the end: 1 + 3 * 2^-9 is 1.0078125 in bf16 (nearest),
 * while rounding after every product would stay at 1.  In f16 it is exact
 * (1 + 3*2^-9 = 1.005859375, 10 fraction bits). */
Test(libcall_ref, gemm_rounds_once_bf16_f16) {
  ElemType outs[] = {ET_BF16, ET_F16};
  double wants[] = {1.0078125, 1.005859375};
  for (int t = 0; t < 2; t++) {
    GemmDesc g = gemm_desc(rowmaj(ET_F32, 1, 4), rowmaj(ET_F32, 4, 1), rowmaj(outs[t], 1, 1));
    const double s = 1.0 / 512;
    const double A[] = {1, 1, 1, 1}, B[] = {1, s, s, s};
    void *p[GEMM_NSLICES] = {0};
    p[GEMM_A] = buf(ET_F32, 4, A);
    p[GEMM_B] = buf(ET_F32, 4, B);
    p[GEMM_D] = calloc(1, 8);
    run_gemm(&g, p);
    cr_assert_eq(get(outs[t], p[GEMM_D], 0), wants[t], "%s: %.10g", et_name(outs[t]),
                 get(outs[t], p[GEMM_D], 0));
    for (int k = 0; k < GEMM_NSLICES; k++) free(p[k]);
  }
}

/* bf16, f16 and f8 inputs read exactly: 1.5*2 + 2*0.25 + (-0.5)*3 = 2 and
 * 1.5*(-1) + 2*4 + (-0.5)*0.5 = 6.25; f8e4m3fn result (3 mantissa bits)
 * keeps 2 and rounds 6.25 to 6. */
Test(libcall_ref, gemm_small_float_inputs) {
  ElemType ins[] = {ET_BF16, ET_F16, ET_F8E4M3FN, ET_F8E5M2};
  static const double A[] = {1.5, 2, -0.5}, B[] = {2, -1, 0.25, 4, 3, 0.5};
  for (size_t t = 0; t < ARRAY_LEN(ins); t++)
    for (int o = 0; o < 2; o++) {
      ElemType out = o ? ET_F8E4M3FN : ET_F32;
      GemmDesc g = gemm_desc(rowmaj(ins[t], 1, 3), rowmaj(ins[t], 3, 2), rowmaj(out, 1, 2));
      void *p[GEMM_NSLICES] = {0};
      p[GEMM_A] = buf(ins[t], 3, A);
      p[GEMM_B] = buf(ins[t], 6, B);
      p[GEMM_D] = calloc(2, 4);
      run_gemm(&g, p);
      cr_assert_eq(get(out, p[GEMM_D], 0), 2, "%s -> %s", et_name(ins[t]), et_name(out));
      cr_assert_eq(get(out, p[GEMM_D], 1), o ? 6 : 6.25, "%s -> %s: %g", et_name(ins[t]),
                   et_name(out), get(out, p[GEMM_D], 1));
      for (int k = 0; k < GEMM_NSLICES; k++) free(p[k]);
    }
}

/* s8 x s8 -> s32: [-128, 127] . [2, 3] = 125, and [127, 127] . [127, 127]
 * = 32258. */
Test(libcall_ref, gemm_s8_to_s32) {
  GemmDesc g = gemm_desc(rowmaj(ET_S8, 2, 2), colmaj(ET_S8, 2, 2), rowmaj(ET_S32, 2, 2));
  int8_t A[] = {-128, 127, 127, 127}, B[] = {2, 3, 127, 127};
  int32_t D[4] = {0};
  void *p[GEMM_NSLICES] = {A, B, NULL, NULL, D, NULL};
  run_gemm(&g, p);
  cr_assert_eq(D[0], 125);
  cr_assert_eq(D[1], -128 * 127 + 127 * 127);
  cr_assert_eq(D[2], 2 * 127 + 3 * 127);
  cr_assert_eq(D[3], 32258);
}

static void gemm_refused(GemmDesc g, const char *want) {
  float A[4] = {0}, B[4] = {0}, D[4] = {0};
  void *p[GEMM_NSLICES] = {A, B, NULL, NULL, D, NULL};
  Diag d = {0};
  cr_assert_not(libcall_ref_gemm(&g, p, &d));
  cr_assert(d.msg && strstr(d.msg, want), "want '%s' in: %s", want, d.msg ? d.msg : "");
  diag_clear(&d);
}

Test(libcall_ref, gemm_refusals) {
  GemmDesc ok = gemm_desc(rowmaj(ET_F32, 2, 2), rowmaj(ET_F32, 2, 2), rowmaj(ET_F32, 2, 2));
  GemmDesc g = ok;
  g.a.et = ET_C64;
  gemm_refused(g, "the A operand has element type c64, which it does not take");
  g = ok;
  g.d.et = ET_PRED;
  gemm_refused(g, "the result D has element type pred");
  g = ok;
  g.alpha_im = 1;
  gemm_refused(g, "complex alpha");
  g = ok;
  g.b.rows = 3;
  gemm_refused(g, "the B operand is 3x2, expected 2x2");
  g = ok;
  g.beta = 1;   /* no C buffer */
  gemm_refused(g, "buffer is missing");
  g = ok;
  g.k = 0;
  gemm_refused(g, "bad sizes");
  g = ok;
  g.batch = 2;
  gemm_refused(g, "the result D has bad strides");
}

/* ---- convolution ---------------------------------------------------------- */

/* Row-major strides for t's dims in the order perm lists them. */
static void set_strides(ConvTensor *t, int ns, const int *perm) {
  int64_t s = 1;
  for (int k = 1 + ns; k >= 0; k--) {
    t->strides[perm[k]] = s;
    s *= t->dims[perm[k]];
  }
}

static const int ORDER1[3] = {0, 1, 2}, ORDER2[4] = {0, 1, 2, 3}, ORDER3[5] = {0, 1, 2, 3, 4};

/* 1-D, N = C = O = 1: x of nx, w of nw, y of ny, all f32 and dense. */
static ConvDesc conv1(ConvKind kind, int64_t nx, int64_t nw, int64_t ny) {
  ConvDesc c = {.kind = kind, .nspatial = 1, .groups = 1, .alpha = 1};
  c.x = (ConvTensor){ET_F32, {1, 1, nx}, {0}};
  c.w = (ConvTensor){ET_F32, {1, 1, nw}, {0}};
  c.y = (ConvTensor){ET_F32, {1, 1, ny}, {0}};
  set_strides(&c.x, 1, ORDER1);
  set_strides(&c.w, 1, ORDER1);
  set_strides(&c.y, 1, ORDER1);
  c.stride[0] = c.dilation[0] = 1;
  return c;
}

static void run_conv(const ConvDesc *c, void *p[CONV_NSLICES]) {
  Diag d = {0};
  cr_assert(libcall_ref_conv(c, p, &d), "%s", d.msg ? d.msg : "");
}

static void expect(ElemType t, const void *p, int n, const double *want, const char *what) {
  for (int k = 0; k < n; k++)
    cr_assert_eq(get(t, p, k), want[k], "%s element %d: %g, want %g", what, k, get(t, p, k),
                 want[k]);
}

static void free_all(void *p[CONV_NSLICES]) {
  for (int k = 0; k < CONV_NSLICES; k++) free(p[k]);
}

/* x = 1..5, w = [1, 0, -1]: y[s] = x[s] - x[s+2] = -2; with padding 1/1,
 * y[s] = x[s-1] - x[s+1] = [-2, -2, -2, -2, 4]. */
Test(libcall_ref, conv1d_forward_padding) {
  static const double X[] = {1, 2, 3, 4, 5}, W[] = {1, 0, -1};
  ConvDesc c = conv1(CONV_FORWARD, 5, 3, 3);
  void *p[CONV_NSLICES] = {buf(ET_F32, 5, X), buf(ET_F32, 3, W), calloc(8, 4)};
  run_conv(&c, p);
  static const double want[] = {-2, -2, -2};
  expect(ET_F32, p[CONV_Y], 3, want, "unpadded");
  free(p[CONV_Y]);
  c = conv1(CONV_FORWARD, 5, 3, 5);
  c.pad_lo[0] = c.pad_hi[0] = 1;
  p[CONV_Y] = calloc(8, 4);
  run_conv(&c, p);
  static const double want_pad[] = {-2, -2, -2, -2, 4};
  expect(ET_F32, p[CONV_Y], 5, want_pad, "padded");
  free_all(p);
}

/* Stride 2, dilation 2: y[s] = x[2s] + x[2s+2] over x = 1..7 = [4, 8, 12];
 * asymmetric padding lo 3, hi 0 with w = [1, 10]: y[s] = x[2s-3] + 10 x[2s-1]
 * = [0 + 0, 0 + 20, 2 + 40, 4 + 60] over the first positions. */
Test(libcall_ref, conv1d_stride_dilation_asymmetric_pad) {
  static const double X[] = {1, 2, 3, 4, 5, 6, 7}, W[] = {1, 1};
  ConvDesc c = conv1(CONV_FORWARD, 7, 2, 3);
  c.stride[0] = 2, c.dilation[0] = 2;
  void *p[CONV_NSLICES] = {buf(ET_F32, 7, X), buf(ET_F32, 2, W), calloc(8, 4)};
  run_conv(&c, p);
  static const double want[] = {4, 8, 12};
  expect(ET_F32, p[CONV_Y], 3, want, "strided dilated");
  free(p[CONV_W]);
  free(p[CONV_Y]);
  static const double W2[] = {1, 10};
  c = conv1(CONV_FORWARD, 7, 2, 4);
  c.stride[0] = 2, c.dilation[0] = 2, c.pad_lo[0] = 3;
  p[CONV_W] = buf(ET_F32, 2, W2);
  p[CONV_Y] = calloc(8, 4);
  run_conv(&c, p);
  /* s=0: x[-3] + 10 x[-1] = 0; s=1: x[-1] + 10 x[1] = 20; s=2: x[1] + 10 x[3]
   * = 2 + 40; s=3: x[3] + 10 x[5] = 4 + 60 */
  static const double want2[] = {0, 20, 42, 64};
  expect(ET_F32, p[CONV_Y], 4, want2, "asymmetric");
  free_all(p);
}

/* y = relu(0.5 * conv + 2 * side + bias) over the padded case above:
 * conv = [-2, -2, -2, -2, 4], side = [1, 0, 3, 0, -5], bias 1:
 * [-1+2+1, -1+0+1, -1+6+1, -1+0+1, 2-10+1] = [2, 0, 6, 0, -7] -> relu. */
Test(libcall_ref, conv_forward_epilogue) {
  static const double X[] = {1, 2, 3, 4, 5}, W[] = {1, 0, -1}, S[] = {1, 0, 3, 0, -5},
                      B[] = {1};
  ConvDesc c = conv1(CONV_FORWARD, 5, 3, 5);
  c.pad_lo[0] = c.pad_hi[0] = 1;
  c.alpha = 0.5, c.side_scale = 2, c.has_bias = true, c.bias_et = ET_BF16;
  c.act = LIB_ACT_RELU;
  void *p[CONV_NSLICES] = {buf(ET_F32, 5, X), buf(ET_F32, 3, W), calloc(8, 4),
                           buf(ET_BF16, 1, B), buf(ET_F32, 5, S)};
  run_conv(&c, p);
  static const double want[] = {2, 0, 6, 0, 0};
  expect(ET_F32, p[CONV_Y], 5, want, "epilogue");
  /* The side input may be y itself (accumulating in place). */
  free(p[CONV_SIDE]);
  p[CONV_SIDE] = NULL;
  c.act = LIB_ACT_NONE;
  put(ET_F32, p[CONV_Y], 4, -5);
  p[CONV_SIDE] = p[CONV_Y];
  run_conv(&c, p);
  static const double want2[] = {4, 0, 12, 0, -7};
  expect(ET_F32, p[CONV_Y], 5, want2, "in place");
  p[CONV_SIDE] = NULL;
  free_all(p);
}

/* Backward input: y = [1, 1, 1], w = [1, 0, -1], x of 5:
 * dx[p] = sum_{s+k=p} y[s] w[k] = [1, 1, 0, -1, -1].
 * Backward filter: x = 1..5, dy = [1, 0, 2]: dw[k] = x[k] + 2 x[k+2]
 * = [7, 10, 13]. */
Test(libcall_ref, conv1d_backward_input_and_filter) {
  static const double Y[] = {1, 1, 1}, W[] = {1, 0, -1};
  ConvDesc c = conv1(CONV_BACKWARD_INPUT, 5, 3, 3);
  void *p[CONV_NSLICES] = {calloc(8, 4), buf(ET_F32, 3, W), buf(ET_F32, 3, Y)};
  run_conv(&c, p);
  static const double want[] = {1, 1, 0, -1, -1};
  expect(ET_F32, p[CONV_X], 5, want, "backward input");
  free_all(p);

  static const double X[] = {1, 2, 3, 4, 5}, DY[] = {1, 0, 2};
  c = conv1(CONV_BACKWARD_FILTER, 5, 3, 3);
  void *q[CONV_NSLICES] = {buf(ET_F32, 5, X), calloc(4, 4), buf(ET_F32, 3, DY)};
  run_conv(&c, q);
  static const double want_w[] = {7, 10, 13};
  expect(ET_F32, q[CONV_W], 3, want_w, "backward filter");
  free_all(q);
}

/* 2-D, two groups of one channel (depthwise), x in NHWC:
 * x channel 0 = [[1,2],[3,4]], channel 1 = [[5,6],[7,8]];
 * w0 = [[1,0],[0,1]] (on channel 0), w1 = [[0,1],[1,0]] (on channel 1):
 * y = [1+4, 6+7] = [5, 13]. */
Test(libcall_ref, conv2d_grouped_nhwc) {
  ConvDesc c = {.kind = CONV_FORWARD, .nspatial = 2, .groups = 2, .alpha = 1};
  c.x = (ConvTensor){ET_F16, {1, 2, 2, 2}, {8, 1, 4, 2}};   /* NHWC */
  c.w = (ConvTensor){ET_F16, {2, 1, 2, 2}, {0}};
  c.y = (ConvTensor){ET_F16, {1, 2, 1, 1}, {0}};
  set_strides(&c.w, 2, ORDER2);
  set_strides(&c.y, 2, ORDER2);
  c.stride[0] = c.stride[1] = c.dilation[0] = c.dilation[1] = 1;
  /* NHWC memory: (h,w) major, channel minor */
  static const double X[] = {1, 5, 2, 6, 3, 7, 4, 8}, W[] = {1, 0, 0, 1, 0, 1, 1, 0};
  void *p[CONV_NSLICES] = {buf(ET_F16, 8, X), buf(ET_F16, 8, W), calloc(2, 2)};
  run_conv(&c, p);
  static const double want[] = {5, 13};
  expect(ET_F16, p[CONV_Y], 2, want, "grouped");
  free_all(p);
}

/* 2-D, 2 input channels, 1 output channel, 1x1 output from a 2x2 window:
 * y = sum x*w = 1*1 + 2*2 + ... with x channel c = 4c + [1..4] and
 * w = [1, 1, 1, 1] on channel 0, [1, -1, 1, -1] on channel 1:
 * channel 0: 1+2+3+4 = 10; channel 1: 5-6+7-8 = -2; y = 8. */
Test(libcall_ref, conv2d_channels_sum) {
  ConvDesc c = {.kind = CONV_FORWARD, .nspatial = 2, .groups = 1, .alpha = 1};
  c.x = (ConvTensor){ET_F64, {1, 2, 2, 2}, {0}};
  c.w = (ConvTensor){ET_F64, {1, 2, 2, 2}, {0}};
  c.y = (ConvTensor){ET_F64, {1, 1, 1, 1}, {0}};
  set_strides(&c.x, 2, ORDER2);
  set_strides(&c.w, 2, ORDER2);
  set_strides(&c.y, 2, ORDER2);
  c.stride[0] = c.stride[1] = c.dilation[0] = c.dilation[1] = 1;
  static const double X[] = {1, 2, 3, 4, 5, 6, 7, 8}, W[] = {1, 1, 1, 1, 1, -1, 1, -1};
  void *p[CONV_NSLICES] = {buf(ET_F64, 8, X), buf(ET_F64, 8, W), calloc(1, 8)};
  run_conv(&c, p);
  static const double want[] = {8};
  expect(ET_F64, p[CONV_Y], 1, want, "channels");
  free_all(p);
}

/* 3-D: x all ones 2x2x2, w = 1..8, y = 36; with padding 1 on the first
 * spatial dimension only (y of 3x1x1), the outer positions see half the
 * filter: [5+6+7+8, 36, 1+2+3+4]. */
Test(libcall_ref, conv3d_forward) {
  ConvDesc c = {.kind = CONV_FORWARD, .nspatial = 3, .groups = 1, .alpha = 1};
  c.x = (ConvTensor){ET_F32, {1, 1, 2, 2, 2}, {0}};
  c.w = (ConvTensor){ET_F32, {1, 1, 2, 2, 2}, {0}};
  c.y = (ConvTensor){ET_F32, {1, 1, 3, 1, 1}, {0}};
  set_strides(&c.x, 3, ORDER3);
  set_strides(&c.w, 3, ORDER3);
  set_strides(&c.y, 3, ORDER3);
  for (int k = 0; k < 3; k++) c.stride[k] = c.dilation[k] = 1;
  c.pad_lo[0] = c.pad_hi[0] = 1;
  static const double X[] = {1, 1, 1, 1, 1, 1, 1, 1}, W[] = {1, 2, 3, 4, 5, 6, 7, 8};
  void *p[CONV_NSLICES] = {buf(ET_F32, 8, X), buf(ET_F32, 8, W), calloc(3, 4)};
  run_conv(&c, p);
  static const double want[] = {26, 36, 10};
  expect(ET_F32, p[CONV_Y], 3, want, "3-D");
  free_all(p);
}

/* The three kinds are one bilinear form: <conv(x, w), y> = <x, dx(y, w)> =
 * <w, dw(x, y)>, over random 2-D grouped, strided, dilated, padded cases in
 * f64 with NHWC/HWIO strides. */
static uint64_t rng = 99;

static double rnd(void) {
  rng = rng * 6364136223846793005ull + 1442695040888963407ull;
  return (double)((rng >> 11) % 2001) / 1000.0 - 1.0;
}

static int64_t span(const ConvTensor *t, int ns) {
  int64_t s = 1;
  for (int k = 0; k < 2 + ns; k++) s += (t->dims[k] - 1) * t->strides[k];
  return s;
}

/* sum over the elements of t of a[k] * b[k] (both in t's layout) */
static double dot(const ConvTensor *t, int ns, const double *a, const double *b) {
  double s = 0;
  int64_t n = 1;
  for (int k = 0; k < 2 + ns; k++) n *= t->dims[k];
  for (int64_t lin = 0; lin < n; lin++) {
    int64_t off = 0, r = lin;
    for (int k = 1 + ns; k >= 0; k--) {
      off += r % t->dims[k] * t->strides[k];
      r /= t->dims[k];
    }
    s += a[off] * b[off];
  }
  return s;
}

static double *rand_f64(int64_t n) {
  double *p = calloc((size_t)n, sizeof *p);
  for (int64_t k = 0; k < n; k++) p[k] = rnd();
  return p;
}

Test(libcall_ref, conv_kinds_are_adjoint) {
  static const int nhwc[4] = {0, 2, 3, 1}, hwio[4] = {2, 3, 1, 0};
  for (int trial = 0; trial < 6; trial++) {
    int64_t G = trial % 3 + 1, Cg = 2, Og = trial % 2 + 1, H = 7 + trial % 2, K = 3;
    int64_t s = 1 + trial % 2, dl = 1 + (trial / 2) % 2, lo = trial % 3, hi = (trial + 1) % 2;
    ConvDesc c = {.kind = CONV_FORWARD, .nspatial = 2, .groups = G, .alpha = 1};
    c.x = (ConvTensor){ET_F64, {2, G * Cg, H, H - 1}, {0}};
    c.w = (ConvTensor){ET_F64, {G * Og, Cg, K, K - 1}, {0}};
    int64_t oh = (H + lo + hi - ((K - 1) * dl + 1)) / s + 1;
    int64_t ow = (H - 1 + lo + hi - ((K - 2) * dl + 1)) / s + 1;
    c.y = (ConvTensor){ET_F64, {2, G * Og, oh, ow}, {0}};
    for (int k = 0; k < 2; k++) {
      c.stride[k] = s, c.dilation[k] = dl, c.pad_lo[k] = lo, c.pad_hi[k] = hi;
    }
    set_strides(&c.x, 2, nhwc);
    set_strides(&c.w, 2, hwio);
    set_strides(&c.y, 2, trial % 2 ? nhwc : ORDER2);
    double *x = rand_f64(span(&c.x, 2)), *w = rand_f64(span(&c.w, 2)),
           *y = rand_f64(span(&c.y, 2));
    double *fy = calloc((size_t)span(&c.y, 2), 8), *dx = calloc((size_t)span(&c.x, 2), 8),
           *dw = calloc((size_t)span(&c.w, 2), 8);
    void *pf[CONV_NSLICES] = {x, w, fy}, *pi[CONV_NSLICES] = {dx, w, y},
         *pw[CONV_NSLICES] = {x, dw, y};
    run_conv(&c, pf);
    c.kind = CONV_BACKWARD_INPUT;
    run_conv(&c, pi);
    c.kind = CONV_BACKWARD_FILTER;
    run_conv(&c, pw);
    double a = dot(&c.y, 2, fy, y), b = dot(&c.x, 2, x, dx), e = dot(&c.w, 2, w, dw);
    cr_assert(fabs(a) > 1e-3, "trial %d: a degenerate case", trial);
    cr_assert(fabs(a - b) < 1e-9 && fabs(a - e) < 1e-9, "trial %d: %.15g %.15g %.15g", trial,
              a, b, e);
    free(x), free(w), free(y), free(fy), free(dx), free(dw);
  }
}

static void conv_refused(ConvDesc c, const char *want) {
  float X[64] = {0}, W[64] = {0}, Y[64] = {0};
  void *p[CONV_NSLICES] = {X, W, Y};
  Diag d = {0};
  cr_assert_not(libcall_ref_conv(&c, p, &d));
  cr_assert(d.msg && strstr(d.msg, want), "want '%s' in: %s", want, d.msg ? d.msg : "");
  diag_clear(&d);
}

Test(libcall_ref, conv_refusals) {
  ConvDesc ok = conv1(CONV_FORWARD, 5, 3, 3), c = ok;
  c.w.et = ET_C128;
  conv_refused(c, "the filter w has element type c128");
  c = ok;
  c.nspatial = 4;
  conv_refused(c, "4 spatial dimensions");
  c = ok;
  c.groups = 2;
  conv_refused(c, "inconsistent dimensions");
  c = ok;
  c.dilation[0] = 0;
  conv_refused(c, "dilation 0");
  c = ok;
  c.kind = CONV_BACKWARD_FILTER;
  c.has_bias = true;
  c.bias_et = ET_F32;
  conv_refused(c, "backward-filter convolution: only the forward kind takes an epilogue");
  c = ok;
  c.side_scale = 1;
  conv_refused(c, "buffer is missing");
  c = ok;
  c.y.dims[2] = 0;
  conv_refused(c, "the output y has bad dimensions");
}
