/*
 * test_libcall_host.c - the host platform's library calls (Platform.gemm /
 * .conv from platform_host_new, i.e. oneDNN and the f64 kernels) against
 * the reference loops (libcall_ref.c) over a few hundred random
 * descriptors: every dtype the host takes (f32, bf16, f16, f64, mixed
 * input/output), row- and column-major operands with padded rows and
 * batch gaps, every epilogue (alpha, beta with C distinct from D or in
 * place, bias, relu, gelu tanh/erf); convolutions 1-D to 3-D of each kind,
 * channels-first and channels-last and odd stride orders, groups
 * (depthwise too), stride, dilation, asymmetric padding, side inputs.
 * Tolerances follow the accumulation type (f32 for f32/bf16/f16, f64 for
 * f64) and one rounding of the output.  The host platform must have its
 * libraries: a missing libdnnl is a failure naming it, not a skip.
 */
#include <criterion/criterion.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../../lib/runtime/libcall.h"
#include "../../lib/runtime/platform.h"

static Platform *P;

static void setup(void) {
  Diag d = {0};
  P = platform_host_new(NULL, &d);
  cr_assert_not_null(P, "%s", d.msg ? d.msg : "");
  cr_assert(P->gemm && P->conv, "the host platform has no library calls (Platform.gemm/.conv)");
}

static void teardown(void) {
  platform_free(P);
}

TestSuite(libcall_host, .init = setup, .fini = teardown);

static uint64_t rng = 20261124;

static uint64_t next(void) {
  rng = rng * 6364136223846793005ull + 1442695040888963407ull;
  return rng >> 17;
}

static int64_t pick(int64_t lo, int64_t hi) {   /* lo..hi inclusive */
  return lo + (int64_t)(next() % (uint64_t)(hi - lo + 1));
}

static double rnd(void) {
  return (double)(next() % 2001) / 1000.0 - 1.0;
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

static double ulp(ElemType t) {
  return t == ET_F64 ? 0x1p-52 : t == ET_F32 ? 0x1p-23 : t == ET_F16 ? 0x1p-10 : 0x1p-7;
}

/* Machine epsilon of the sums: f64 for f64, else f32. */
static double acc_eps(ElemType t) {
  return t == ET_F64 ? 0x1p-52 : 0x1p-23;
}

/* Copies host buffers in and out of device memory (host memory on this
 * platform, but through its own operations). */
static DevPtr upload(const void *h, size_t bytes) {
  DevPtr p;
  Diag d = {0};
  cr_assert(P->alloc(P, bytes, &p, &d) && P->copy_h2d(P, p, h, bytes, &d), "%s", d.msg);
  return p;
}

static void download(void *h, DevPtr p, size_t bytes) {
  Diag d = {0};
  cr_assert(P->copy_d2h(P, h, p, bytes, &d), "%s", d.msg);
}

/* ---- GEMM --------------------------------------------------------------- */

static GemmMatrix random_matrix(ElemType t, int64_t rows, int64_t cols, int64_t batch) {
  GemmMatrix m = {t, rows, cols, 0, 0, 0};
  int64_t pad = pick(0, 3);
  if (next() & 1) {
    m.row_stride = 1;
    m.col_stride = rows + pad;
    m.batch_stride = batch > 1 ? (rows + pad) * cols + pick(0, 5) : 0;
  } else {
    m.col_stride = 1;
    m.row_stride = cols + pad;
    m.batch_stride = batch > 1 ? (cols + pad) * rows + pick(0, 5) : 0;
  }
  return m;
}

static int64_t extent(const GemmMatrix *m, int64_t batch) {
  return (batch - 1) * m->batch_stride + (m->rows - 1) * m->row_stride +
         (m->cols - 1) * m->col_stride + 1;
}

static void check_gemm(GemmDesc g, bool c_is_d, int trial) {
  int64_t na = extent(&g.a, g.batch), nb = extent(&g.b, g.batch), nd = extent(&g.d, g.batch);
  size_t bd = (size_t)nd * (size_t)et_bytes(g.d.et);
  void *h[GEMM_NSLICES] = {0};
  h[GEMM_A] = random_buffer(g.a.et, na);
  h[GEMM_B] = random_buffer(g.b.et, nb);
  h[GEMM_D] = random_buffer(g.d.et, nd);
  if (g.beta != 0 && !c_is_d) h[GEMM_C] = random_buffer(g.c.et, extent(&g.c, g.batch));
  if (c_is_d) g.c = g.d;
  if (g.has_bias) h[GEMM_BIAS] = random_buffer(g.bias_et, g.n);
  /* The reference on host copies (C aliasing D there too). */
  void *want = malloc(bd);
  memcpy(want, h[GEMM_D], bd);
  void *r[GEMM_NSLICES] = {h[GEMM_A], h[GEMM_B], c_is_d ? want : h[GEMM_C], h[GEMM_BIAS], want};
  Diag d = {0};
  cr_assert(libcall_ref_gemm(&g, r, &d), "trial %d: %s", trial, d.msg);
  DevPtr s[GEMM_NSLICES] = {0};
  s[GEMM_A] = upload(h[GEMM_A], (size_t)na * (size_t)et_bytes(g.a.et));
  s[GEMM_B] = upload(h[GEMM_B], (size_t)nb * (size_t)et_bytes(g.b.et));
  s[GEMM_D] = upload(h[GEMM_D], bd);
  if (c_is_d)
    s[GEMM_C] = s[GEMM_D];
  else if (h[GEMM_C])
    s[GEMM_C] = upload(h[GEMM_C], (size_t)extent(&g.c, g.batch) * (size_t)et_bytes(g.c.et));
  if (g.has_bias) s[GEMM_BIAS] = upload(h[GEMM_BIAS], (size_t)g.n * (size_t)et_bytes(g.bias_et));
  cr_assert(P->gemm(P, &g, s, &d) && P->synchronize(P, &d), "trial %d (%s x %s -> %s): %s",
            trial, et_name(g.a.et), et_name(g.b.et), et_name(g.d.et), d.msg);
  void *got = malloc(bd);
  download(got, s[GEMM_D], bd);
  /* Inputs lie in [-1, 1]: every sum is at most |alpha| k + |beta| + 1. */
  ElemType acc = g.a.et == ET_F64 ? ET_F64 : ET_F32;
  double mag = fabs(g.alpha_re) * (double)g.k + fabs(g.beta) + 1;
  double abs_tol = 4 * acc_eps(acc) * mag * (g.a.et == ET_F64 ? (double)g.k : 4.0);
  for (int64_t k = 0; k < nd; k++) {
    double x = get(g.d.et, got, k), w = get(g.d.et, want, k);
    cr_assert(fabs(x - w) <= 2 * ulp(g.d.et) * fabs(w) + abs_tol,
              "trial %d: %s x %s -> %s, batch %lld, %lldx%lldx%lld, alpha %g beta %g%s bias "
              "%s act %d: D element %lld is %.9g, want %.9g",
              trial, et_name(g.a.et), et_name(g.b.et), et_name(g.d.et), (long long)g.batch,
              (long long)g.m, (long long)g.n, (long long)g.k, g.alpha_re, g.beta,
              c_is_d ? " (C is D)" : "", g.has_bias ? et_name(g.bias_et) : "-", (int)g.act,
              (long long)k, x, w);
  }
  for (int k = 0; k < GEMM_NSLICES; k++) {
    if (s[k] && !(k == GEMM_C && c_is_d)) P->free(P, s[k]);
    free(h[k]);
  }
  free(want);
  free(got);
}

Test(libcall_host, gemm_random) {
  static const ElemType types[][2] = {{ET_F32, ET_F32}, {ET_BF16, ET_BF16}, {ET_BF16, ET_F32},
                                      {ET_F16, ET_F16}, {ET_F16, ET_F32},   {ET_F64, ET_F64}};
  static const double alphas[] = {1, 1, -0.5, 2}, betas[] = {0, 0, 1, 0.5};
  for (int trial = 0; trial < 240; trial++) {
    const ElemType *t = types[trial % ARRAY_LEN(types)];
    GemmDesc g = {.batch = pick(1, 3), .m = pick(1, 40), .n = pick(1, 40), .k = pick(1, 70)};
    g.a = random_matrix(t[0], g.m, g.k, g.batch);
    g.b = random_matrix(t[0], g.k, g.n, g.batch);
    g.d = random_matrix(t[1], g.m, g.n, g.batch);
    g.c = random_matrix(t[1], g.m, g.n, g.batch);
    g.alpha_re = alphas[next() % 4];
    g.beta = betas[next() % 4];
    g.has_bias = next() % 2;
    g.bias_et = next() % 2 ? t[1] : ET_F32;
    if (t[1] == ET_F64) g.bias_et = ET_F64;
    g.act = (LibActivation)(next() % 4);
    check_gemm(g, g.beta != 0 && next() % 3 == 0, trial);
  }
}

/* A few larger products, where the libraries block and thread. */
Test(libcall_host, gemm_large) {
  static const ElemType types[] = {ET_F32, ET_BF16, ET_F16, ET_F64};
  for (size_t t = 0; t < ARRAY_LEN(types); t++) {
    GemmDesc g = {.batch = 2, .m = 190, .n = 270, .k = 300, .alpha_re = 1};
    g.a = random_matrix(types[t], g.m, g.k, g.batch);
    g.b = random_matrix(types[t], g.k, g.n, g.batch);
    g.d = g.c = random_matrix(types[t], g.m, g.n, g.batch);
    g.has_bias = true;
    g.bias_et = types[t];
    g.act = LIB_ACT_GELU_ERF;
    check_gemm(g, false, (int)t);
  }
}

/* ---- convolution -------------------------------------------------------- */

/* Strides for t's dims in a random order, with a gap after the outermost
 * dimension now and then. */
static void random_strides(ConvTensor *t, int ns, int style) {
  int nd = 2 + ns, perm[5];
  /* style 0: [N/O, C, spatial] channels-first; 1: channels-last
   * ([N, spatial, C], or [spatial, I, O] for filters); 2: random. */
  for (int k = 0; k < nd; k++) perm[k] = k;
  if (style == 1) {
    for (int k = 1; k < nd - 1; k++) perm[k] = k + 1;
    perm[nd - 1] = 1;
  } else if (style == 2) {
    for (int k = nd - 1; k > 0; k--) {
      int j = (int)pick(0, k), tmp = perm[k];
      perm[k] = perm[j];
      perm[j] = tmp;
    }
  }
  int64_t s = 1;
  for (int k = nd - 1; k >= 0; k--) {
    t->strides[perm[k]] = s;
    s *= t->dims[perm[k]];
    if (k == 1 && next() % 4 == 0) s += pick(1, 3);
  }
}

static int64_t span(const ConvTensor *t, int ns) {
  int64_t s = 1;
  for (int k = 0; k < 2 + ns; k++) s += (t->dims[k] - 1) * t->strides[k];
  return s;
}

static int64_t elems(const ConvTensor *t, int ns) {
  int64_t n = 1;
  for (int k = 0; k < 2 + ns; k++) n *= t->dims[k];
  return n;
}

static int64_t offset(const ConvTensor *t, int ns, int64_t lin) {
  int64_t off = 0;
  for (int k = 1 + ns; k >= 0; k--) {
    off += lin % t->dims[k] * t->strides[k];
    lin /= t->dims[k];
  }
  return off;
}

/* A random descriptor (false: the sizes left no output; try again). */
static bool random_conv(ConvDesc *c, ElemType t, ConvKind kind) {
  int ns = (int)pick(1, 3);
  *c = (ConvDesc){.kind = kind, .nspatial = ns, .alpha = 1};
  int64_t G = pick(1, 3), Cg = pick(1, 4), Og = pick(1, 4);
  if (next() % 4 == 0) G = pick(2, 6), Cg = 1, Og = pick(1, 2);   /* depthwise */
  c->groups = G;
  int64_t N = pick(1, 2);
  c->x = (ConvTensor){t, {N, G * Cg}, {0}};
  c->w = (ConvTensor){t, {G * Og, Cg}, {0}};
  c->y = (ConvTensor){t, {N, G * Og}, {0}};
  for (int k = 0; k < ns; k++) {
    int64_t xs = ns == 3 ? pick(2, 6) : pick(3, 11);
    c->x.dims[2 + k] = xs;
    c->w.dims[2 + k] = pick(1, 3);
    c->stride[k] = pick(1, 2);
    c->dilation[k] = pick(1, 2);
    c->pad_lo[k] = pick(0, 2);
    c->pad_hi[k] = pick(0, 2);
    int64_t eff = (c->w.dims[2 + k] - 1) * c->dilation[k] + 1;
    int64_t span_in = xs + c->pad_lo[k] + c->pad_hi[k] - eff;
    if (span_in < 0) return false;
    c->y.dims[2 + k] = span_in / c->stride[k] + 1;
  }
  int style = (int)pick(0, 2);
  random_strides(&c->x, ns, style);
  random_strides(&c->y, ns, next() % 3 ? style : (int)pick(0, 2));
  random_strides(&c->w, ns, (int)pick(0, 2));
  if (kind == CONV_FORWARD) {
    c->alpha = next() % 2 ? 1 : 0.5;
    c->side_scale = next() % 3 == 0 ? (next() % 2 ? 1 : -0.5) : 0;
    c->has_bias = next() % 2;
    c->bias_et = t == ET_F64 ? ET_F64 : next() % 2 ? t : ET_F32;
    c->act = (LibActivation)(next() % 4);
  }
  return true;
}

static const char *kind_name(ConvKind k) {
  return k == CONV_FORWARD ? "forward" : k == CONV_BACKWARD_INPUT ? "backward-input" : "backward-filter";
}

static void check_conv(const ConvDesc *c, int trial) {
  int ns = c->nspatial;
  const ConvTensor *ts[3] = {&c->x, &c->w, &c->y};
  static const int slot[3] = {CONV_X, CONV_W, CONV_Y};
  int out = c->kind == CONV_FORWARD ? 2 : c->kind == CONV_BACKWARD_INPUT ? 0 : 1;
  void *h[CONV_NSLICES] = {0};
  for (int k = 0; k < 3; k++) h[slot[k]] = random_buffer(ts[k]->et, span(ts[k], ns));
  if (c->has_bias) h[CONV_BIAS] = random_buffer(c->bias_et, c->y.dims[1]);
  if (c->side_scale != 0) h[CONV_SIDE] = random_buffer(c->y.et, span(&c->y, ns));
  size_t ob = (size_t)span(ts[out], ns) * (size_t)et_bytes(ts[out]->et);
  void *want = malloc(ob);
  memcpy(want, h[slot[out]], ob);
  void *r[CONV_NSLICES];
  memcpy(r, h, sizeof r);
  r[slot[out]] = want;
  Diag d = {0};
  cr_assert(libcall_ref_conv(c, r, &d), "trial %d: %s", trial, d.msg);
  DevPtr s[CONV_NSLICES] = {0};
  for (int k = 0; k < 3; k++)
    s[slot[k]] =
        upload(h[slot[k]], (size_t)span(ts[k], ns) * (size_t)et_bytes(ts[k]->et));
  if (c->has_bias)
    s[CONV_BIAS] = upload(h[CONV_BIAS], (size_t)c->y.dims[1] * (size_t)et_bytes(c->bias_et));
  if (c->side_scale != 0)
    s[CONV_SIDE] = upload(h[CONV_SIDE], (size_t)span(&c->y, ns) * (size_t)et_bytes(c->y.et));
  cr_assert(P->conv(P, c, s, &d) && P->synchronize(P, &d), "trial %d (%s %s, %d-D): %s", trial,
            et_name(c->x.et), kind_name(c->kind), ns, d.msg);
  void *got = malloc(ob);
  download(got, s[slot[out]], ob);
  /* The longest sum: forward C/G * K, backward input O/G * K (at most),
   * backward filter N * output positions; terms of magnitude <= 1. */
  int64_t kvol = 1, yvol = 1;
  for (int k = 0; k < ns; k++) kvol *= c->w.dims[2 + k], yvol *= c->y.dims[2 + k];
  double terms = c->kind == CONV_FORWARD          ? (double)(c->w.dims[1] * kvol)
                 : c->kind == CONV_BACKWARD_INPUT ? (double)(c->w.dims[0] / c->groups * kvol)
                                                  : (double)(c->x.dims[0] * yvol);
  double mag = c->alpha * terms + fabs(c->side_scale) + 1;
  ElemType acc = c->x.et == ET_F64 ? ET_F64 : ET_F32;
  double abs_tol = 4 * acc_eps(acc) * mag * (acc == ET_F64 ? terms : 4.0);
  ElemType ot = ts[out]->et;
  for (int64_t k = 0; k < elems(ts[out], ns); k++) {
    int64_t off = offset(ts[out], ns, k);
    double x = get(ot, got, off), w = get(ot, want, off);
    cr_assert(fabs(x - w) <= 2 * ulp(ot) * fabs(w) + abs_tol,
              "trial %d: %s %s %d-D, groups %lld, alpha %g side %g bias %s act %d: element "
              "%lld is %.9g, want %.9g",
              trial, et_name(c->x.et), kind_name(c->kind), ns, (long long)c->groups,
              c->alpha, c->side_scale, c->has_bias ? et_name(c->bias_et) : "-", (int)c->act,
              (long long)k, x, w);
  }
  for (int k = 0; k < CONV_NSLICES; k++) {
    if (s[k]) P->free(P, s[k]);
    free(h[k]);
  }
  free(want);
  free(got);
}

static void conv_trials(ConvKind kind, int count) {
  static const ElemType types[] = {ET_F32, ET_BF16, ET_F16, ET_F64};
  for (int trial = 0; trial < count; trial++) {
    ConvDesc c;
    while (!random_conv(&c, types[trial % ARRAY_LEN(types)], kind)) {
    }
    check_conv(&c, trial);
  }
}

Test(libcall_host, conv_forward_random) {
  conv_trials(CONV_FORWARD, 120);
}

Test(libcall_host, conv_backward_input_random) {
  conv_trials(CONV_BACKWARD_INPUT, 80);
}

Test(libcall_host, conv_backward_filter_random) {
  conv_trials(CONV_BACKWARD_FILTER, 80);
}

/* Descriptors on which oneDNN 2.6 itself goes wrong, which the host
 * platform must route around (each was found by the random tests above). */
Test(libcall_host, onednn_pitfalls) {
  /* gemm-based matmul: a binary post-op (bias with alpha != 1) on a batched
   * D that is not dense lands at the wrong places. */
  GemmDesc g = {.batch = 2, .m = 23, .n = 17, .k = 63, .alpha_re = 2, .has_bias = true,
                .bias_et = ET_F32};
  g.a = (GemmMatrix){ET_F32, 23, 63, 23 * 63 + 1, 63, 1};
  g.b = (GemmMatrix){ET_F32, 63, 17, 63 * 17 + 1, 17, 1};
  g.d = g.c = (GemmMatrix){ET_F32, 23, 17, 23 * 17 + 1, 17, 1};
  check_gemm(g, false, 1000);
  /* A single-row D with both strides 1 is refused at execution. */
  GemmDesc r = {.batch = 3, .m = 1, .n = 22, .k = 69, .alpha_re = 1, .beta = 1,
                .act = LIB_ACT_GELU_ERF};
  r.a = (GemmMatrix){ET_BF16, 1, 69, 280, 1, 4};
  r.b = (GemmMatrix){ET_BF16, 69, 22, 1659, 24, 1};
  r.c = (GemmMatrix){ET_F32, 1, 22, 67, 1, 3};
  r.d = (GemmMatrix){ET_F32, 1, 22, 23, 1, 1};
  check_gemm(r, false, 1001);
  /* brgconv: linear (alpha) and sum (side input) post-ops crash on this 3-D
   * shape. */
  ConvDesc c = {.kind = CONV_FORWARD, .nspatial = 3, .groups = 1, .alpha = 0.5,
                .side_scale = 1};
  c.x = (ConvTensor){ET_BF16, {2, 3, 5, 5, 2}, {150, 1, 30, 6, 3}};
  c.w = (ConvTensor){ET_BF16, {2, 3, 2, 3, 1}, {18, 1, 9, 3, 36}};
  c.y = (ConvTensor){ET_BF16, {2, 2, 4, 4, 2}, {64, 1, 16, 4, 2}};
  static const int64_t st[3] = {2, 2, 1}, dl[3] = {1, 1, 2}, lo[3] = {2, 2, 0}, hi[3] = {1, 2, 0};
  for (int k = 0; k < 3; k++)
    c.stride[k] = st[k], c.dilation[k] = dl[k], c.pad_lo[k] = lo[k], c.pad_hi[k] = hi[k];
  check_conv(&c, 1002);
  c.x.et = c.w.et = c.y.et = ET_F32;
  c.alpha = 1;
  c.act = LIB_ACT_RELU;
  check_conv(&c, 1003);
  /* brgconv: with sum and the primitive's bias, an output whose window lies
   * wholly in the padding (a 1x1 filter, stride 2, padding 1) loses the
   * side input. */
  ConvDesc e = {.kind = CONV_FORWARD, .nspatial = 1, .groups = 1, .alpha = 1,
                .side_scale = -0.5, .has_bias = true, .bias_et = ET_F32};
  e.x = (ConvTensor){ET_F32, {1, 4, 7}, {28, 7, 1}};
  e.w = (ConvTensor){ET_F32, {2, 4, 1}, {4, 1, 1}};
  e.y = (ConvTensor){ET_F32, {1, 2, 4}, {8, 4, 1}};
  e.stride[0] = 2, e.dilation[0] = 1, e.pad_lo[0] = 1;
  check_conv(&e, 1004);
  e.x.et = e.w.et = e.y.et = ET_BF16;
  check_conv(&e, 1005);
}
