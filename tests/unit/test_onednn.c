/*
 * test_onednn.c - the host's library calls (lib/runtime/onednn.c): the
 * minimal oneDNN ABI header against oneDNN's own, then GEMMs and
 * convolutions in every dtype, layout and epilogue the host takes, against
 * plain reference loops written here (sums in double), the errors, and
 * OpenMP's wait policy (passive unless the environment chose one).
 */
#include <criterion/criterion.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../../lib/runtime/onednn.h"

#ifdef XHLO_HAVE_DNNL_H
#include <oneapi/dnnl/dnnl.h>

#include "../../lib/runtime/dnnl_min.h"

_Static_assert(sizeof(xdnnl_memory_desc_t) == sizeof(dnnl_memory_desc_t), "md");
_Static_assert(_Alignof(xdnnl_memory_desc_t) == _Alignof(dnnl_memory_desc_t), "md");
_Static_assert(sizeof(xdnnl_matmul_desc_t) == sizeof(dnnl_matmul_desc_t), "mm");
_Static_assert(sizeof(xdnnl_convolution_desc_t) == sizeof(dnnl_convolution_desc_t), "conv");
_Static_assert(sizeof(xdnnl_exec_arg_t) == sizeof(dnnl_exec_arg_t), "arg");
_Static_assert((int)XDNNL_F16 == (int)dnnl_f16 && (int)XDNNL_BF16 == (int)dnnl_bf16 && (int)XDNNL_F32 == (int)dnnl_f32 &&
               (int)XDNNL_S32 == (int)dnnl_s32 && (int)XDNNL_S8 == (int)dnnl_s8 && (int)XDNNL_U8 == (int)dnnl_u8, "types");
_Static_assert((int)XDNNL_FORMAT_TAG_ANY == (int)dnnl_format_tag_any && (int)XDNNL_CPU == (int)dnnl_cpu, "tags");
_Static_assert((int)XDNNL_FORWARD_TRAINING == (int)dnnl_forward_training &&
               (int)XDNNL_FORWARD_INFERENCE == (int)dnnl_forward_inference &&
               (int)XDNNL_BACKWARD_DATA == (int)dnnl_backward_data &&
               (int)XDNNL_BACKWARD_WEIGHTS == (int)dnnl_backward_weights, "props");
_Static_assert((int)XDNNL_CONVOLUTION_DIRECT == (int)dnnl_convolution_direct &&
               (int)XDNNL_CONVOLUTION_AUTO == (int)dnnl_convolution_auto &&
               (int)XDNNL_ELTWISE_RELU == (int)dnnl_eltwise_relu &&
               (int)XDNNL_ELTWISE_GELU_ERF == (int)dnnl_eltwise_gelu_erf &&
               (int)XDNNL_ELTWISE_GELU_TANH == (int)dnnl_eltwise_gelu_tanh &&
               (int)XDNNL_ELTWISE_LINEAR == (int)dnnl_eltwise_linear &&
               (int)XDNNL_BINARY_ADD == (int)dnnl_binary_add, "algs");
_Static_assert((int)XDNNL_ARG_SRC == (int)DNNL_ARG_SRC && (int)XDNNL_ARG_SRC_1 == (int)DNNL_ARG_SRC_1 &&
               (int)XDNNL_ARG_DST == (int)DNNL_ARG_DST && (int)XDNNL_ARG_WEIGHTS == (int)DNNL_ARG_WEIGHTS &&
               (int)XDNNL_ARG_BIAS == (int)DNNL_ARG_BIAS && (int)XDNNL_ARG_SCRATCHPAD == (int)DNNL_ARG_SCRATCHPAD &&
               (int)XDNNL_ARG_DIFF_SRC == (int)DNNL_ARG_DIFF_SRC &&
               (int)XDNNL_ARG_DIFF_DST == (int)DNNL_ARG_DIFF_DST &&
               (int)XDNNL_ARG_DIFF_WEIGHTS == (int)DNNL_ARG_DIFF_WEIGHTS &&
               (int)XDNNL_ARG_FROM == (int)DNNL_ARG_FROM && (int)XDNNL_ARG_TO == (int)DNNL_ARG_TO &&
               (int)XDNNL_ARG_ATTR_MULTIPLE_POST_OP(1) == (int)DNNL_ARG_ATTR_MULTIPLE_POST_OP(1),
               "args");
_Static_assert((int)XDNNL_QUERY_SRC_MD == (int)dnnl_query_src_md &&
               (int)XDNNL_QUERY_DIFF_SRC_MD == (int)dnnl_query_diff_src_md &&
               (int)XDNNL_QUERY_WEIGHTS_MD == (int)dnnl_query_weights_md &&
               (int)XDNNL_QUERY_DIFF_WEIGHTS_MD == (int)dnnl_query_diff_weights_md &&
               (int)XDNNL_QUERY_DST_MD == (int)dnnl_query_dst_md &&
               (int)XDNNL_QUERY_DIFF_DST_MD == (int)dnnl_query_diff_dst_md &&
               (int)XDNNL_QUERY_SCRATCHPAD_MD == (int)dnnl_query_scratchpad_md &&
               (int)XDNNL_SCRATCHPAD_MODE_USER == (int)dnnl_scratchpad_mode_user &&
               (int)XDNNL_UNIMPLEMENTED == (int)dnnl_unimplemented, "queries");
/* Every function's type as the header declares it. */
#define X(name, ret, params) _Static_assert(sizeof(&name) == sizeof(void *), #name);
XDNNL_FUNCTIONS(X)
#undef X
#endif

Test(onednn, real_header_checked) {
#ifndef XHLO_HAVE_DNNL_H
  cr_assert_fail("oneDNN's header (libdnnl-dev) is missing, so dnnl_min.h is "
                 "unchecked: run scripts/setup.sh");
#endif
}

static OneDnn *X_;

static void setup(void) {
  Diag d = {0};
  X_ = onednn_open(NULL, &d);
  cr_assert_not_null(X_, "%s", d.msg ? d.msg : "");
}

static void teardown(void) { onednn_close(X_); }

TestSuite(onednn, .init = setup, .fini = teardown);

/* ---- values -------------------------------------------------------------- */

static double getv(ElemType t, const void *p, int64_t k) {
  int n = et_bytes(t);
  uint64_t bits = 0;
  memcpy(&bits, (const uint8_t *)p + k * n, (size_t)n);
  return fp_to_double(et_fp_format(t), bits);
}

static void putv(ElemType t, void *p, int64_t k, double v) {
  int n = et_bytes(t);
  uint64_t bits = fp_from_double(et_fp_format(t), v);
  memcpy((uint8_t *)p + k * n, &bits, (size_t)n);
}

static uint64_t rng = 12345;

static double rnd(void) {
  rng = rng * 6364136223846793005ull + 1442695040888963407ull;
  return (double)((rng >> 11) % 2001) / 1000.0 - 1.0;
}

/* A buffer of n elements of type t, random values (exactly representable). */
static void *buffer(ElemType t, int64_t n) {
  void *p = calloc((size_t)(n > 0 ? n : 1), (size_t)et_bytes(t));
  for (int64_t k = 0; k < n; k++)
    putv(t, p, k, rnd());
  return p;
}

static double act(LibActivation a, double v) {
  switch (a) {
  case LIB_ACT_RELU: return v > 0 ? v : 0;
  case LIB_ACT_GELU_TANH:
    return 0.5 * v * (1 + tanh(sqrt(2 / M_PI) * (v + 0.044715 * v * v * v)));
  case LIB_ACT_GELU_ERF: return 0.5 * v * (1 + erf(v / sqrt(2)));
  default: return v;
  }
}

static double tol(ElemType t) {
  return t == ET_BF16 ? 3e-2 : t == ET_F16 ? 4e-3 : t == ET_F64 ? 1e-12 : 2e-5;
}

/* ---- GEMM ---------------------------------------------------------------- */

static GemmMatrix mat(ElemType t, int64_t rows, int64_t cols, bool col_major,
                      int64_t pad, int64_t batch) {
  GemmMatrix m = {t, rows, cols, 0, 0, 0};
  if (col_major)
    m.row_stride = 1, m.col_stride = rows + pad;
  else
    m.col_stride = 1, m.row_stride = cols + pad;
  m.batch_stride = batch > 1 ? (col_major ? (rows + pad) * cols : (cols + pad) * rows) + 3 : 0;
  return m;
}

static int64_t extent(const GemmMatrix *m, int64_t batch) {
  return (batch - 1) * m->batch_stride + (m->rows - 1) * m->row_stride +
         (m->cols - 1) * m->col_stride + 1;
}

static int64_t at(const GemmMatrix *m, int64_t b, int64_t i, int64_t j) {
  return b * m->batch_stride + i * m->row_stride + j * m->col_stride;
}

static void check_gemm(GemmDesc g) {
  void *p[GEMM_NSLICES] = {0};
  p[GEMM_A] = buffer(g.a.et, extent(&g.a, g.batch));
  p[GEMM_B] = buffer(g.b.et, extent(&g.b, g.batch));
  p[GEMM_D] = buffer(g.d.et, extent(&g.d, g.batch));
  if (g.beta != 0)
    p[GEMM_C] = buffer(g.c.et, extent(&g.c, g.batch));
  if (g.has_bias)
    p[GEMM_BIAS] = buffer(g.bias_et, g.n);
  /* The reference, before the call overwrites D. */
  int64_t nd = g.batch * g.m * g.n;
  double *want = calloc((size_t)nd, sizeof *want);
  double *scale = calloc((size_t)nd, sizeof *scale);
  for (int64_t b = 0; b < g.batch; b++)
    for (int64_t i = 0; i < g.m; i++)
      for (int64_t j = 0; j < g.n; j++) {
        double s = 0, s_abs = 0;
        for (int64_t q = 0; q < g.k; q++) {
          double x = getv(g.a.et, p[GEMM_A], at(&g.a, b, i, q)) *
                     getv(g.b.et, p[GEMM_B], at(&g.b, b, q, j));
          s += x;
          s_abs += fabs(x);
        }
        double v = g.alpha_re * s;
        if (g.beta != 0)
          v += g.beta * getv(g.c.et, p[GEMM_C], at(&g.c, b, i, j));
        if (g.has_bias)
          v += getv(g.bias_et, p[GEMM_BIAS], j);
        int64_t k = (b * g.m + i) * g.n + j;
        want[k] = act(g.act, v);
        scale[k] = fabs(g.alpha_re) * s_abs + 1;
      }
  Diag d = {0};
  cr_assert(onednn_gemm(X_, &g, p, &d), "%s", d.msg ? d.msg : "");
  double t = tol(g.a.et) > tol(g.d.et) ? tol(g.a.et) : tol(g.d.et);
  for (int64_t b = 0; b < g.batch; b++)
    for (int64_t i = 0; i < g.m; i++)
      for (int64_t j = 0; j < g.n; j++) {
        int64_t k = (b * g.m + i) * g.n + j;
        double got = getv(g.d.et, p[GEMM_D], at(&g.d, b, i, j));
        cr_assert(fabs(got - want[k]) <= t * scale[k],
                  "%s gemm [%lld,%lld,%lld]: %g, want %g", et_name(g.a.et),
                  (long long)b, (long long)i, (long long)j, got, want[k]);
      }
  for (int k = 0; k < GEMM_NSLICES; k++)
    if (k != GEMM_C || p[GEMM_C] != p[GEMM_D])
      free(p[k]);
  free(want);
  free(scale);
}

static GemmDesc gemm(ElemType in, ElemType out, int64_t batch, int64_t m,
                     int64_t n, int64_t k, bool ta, bool tb, bool td) {
  GemmDesc g = {.batch = batch, .m = m, .n = n, .k = k, .alpha_re = 1};
  g.a = mat(in, m, k, ta, 1, batch);
  g.b = mat(in, k, n, tb, 0, batch);
  g.d = mat(out, m, n, td, 2, batch);
  g.c = g.d;
  return g;
}

Test(onednn, gemm_layouts_and_types) {
  ElemType types[][2] = {{ET_F32, ET_F32}, {ET_BF16, ET_BF16}, {ET_BF16, ET_F32},
                         {ET_F16, ET_F16}, {ET_F16, ET_F32}, {ET_F64, ET_F64}};
  for (size_t t = 0; t < ARRAY_LEN(types); t++)
    for (int lay = 0; lay < 8; lay++)
      check_gemm(gemm(types[t][0], types[t][1], lay == 5 ? 3 : 1, 17, 13, 29,
                      lay & 1, lay & 2, lay & 4));
}

Test(onednn, gemm_epilogues) {
  LibActivation acts[] = {LIB_ACT_NONE, LIB_ACT_RELU, LIB_ACT_GELU_TANH,
                          LIB_ACT_GELU_ERF};
  ElemType types[] = {ET_F32, ET_BF16, ET_F16, ET_F64};
  for (size_t t = 0; t < ARRAY_LEN(types); t++)
    for (size_t a = 0; a < ARRAY_LEN(acts); a++)
      for (int v = 0; v < 4; v++) {
        GemmDesc g = gemm(types[t], types[t], v == 3 ? 2 : 1, 9, 11, 7, v & 1, 0, 0);
        g.act = acts[a];
        g.has_bias = v != 0;
        g.bias_et = types[t];
        g.alpha_re = v >= 2 ? -0.5 : 1;   /* the bias as a post-op */
        if (v == 3) {
          g.beta = 1;
          g.c = mat(types[t], 9, 11, true, 1, 2); /* C in another layout */
        }
        check_gemm(g);
      }
}

Test(onednn, gemm_large_batched) {
  check_gemm(gemm(ET_F32, ET_F32, 4, 96, 80, 112, false, true, false));
  check_gemm(gemm(ET_BF16, ET_F32, 2, 128, 64, 256, true, false, false));
}

Test(onednn, gemm_refused) {
  GemmDesc g = gemm(ET_S8, ET_S32, 1, 2, 2, 2, false, false, false);
  void *p[GEMM_NSLICES] = {0};
  Diag d = {0};
  cr_assert_not(onednn_gemm(X_, &g, p, &d));
  cr_assert(strstr(d.msg, "no GEMM of s8 x s8 -> s32"), "%s", d.msg);
  diag_clear(&d);
}

/* ---- convolution --------------------------------------------------------- */

/* Row-major strides for dims in the order perm lists them (outermost
 * first). */
static void strides(ConvTensor *t, int ns, const int *perm) {
  int64_t s = 1;
  for (int k = 1 + ns; k >= 0; k--) {
    t->strides[perm[k]] = s;
    s *= t->dims[perm[k]];
  }
}

static int64_t telems(const ConvTensor *t, int ns) {
  int64_t n = 1;
  for (int k = 0; k < 2 + ns; k++)
    n *= t->dims[k];
  return n;
}

static int64_t toff(const ConvTensor *t, int ns, const int64_t *idx) {
  int64_t o = 0;
  for (int k = 0; k < 2 + ns; k++)
    o += idx[k] * t->strides[k];
  return o;
}

/* The reference: x, w, y as double arrays, each kind by its definition. */
static void conv_ref(const ConvDesc *c, const double *x, const double *w,
                     const double *y, double *out) {
  int ns = c->nspatial;
  int64_t N = c->x.dims[0], C = c->x.dims[1], O = c->w.dims[0], G = c->groups;
  int64_t Cg = C / G, OG = O / G;
  int64_t ys = 1, ks = 1;
  for (int k = 0; k < ns; k++)
    ys *= c->y.dims[2 + k], ks *= c->w.dims[2 + k];
  int64_t nout = c->kind == CONV_FORWARD          ? telems(&c->y, ns)
                 : c->kind == CONV_BACKWARD_INPUT ? telems(&c->x, ns)
                                                  : telems(&c->w, ns);
  memset(out, 0, (size_t)nout * sizeof *out);
  for (int64_t n = 0; n < N; n++)
    for (int64_t o = 0; o < O; o++)
      for (int64_t s = 0; s < ys; s++) {
        int64_t yi[5] = {n, o}, r = s;
        for (int k = ns - 1; k >= 0; k--) {
          yi[2 + k] = r % c->y.dims[2 + k];
          r /= c->y.dims[2 + k];
        }
        /* dense (row-major [N, O, S]) index of y for out/y arrays */
        int64_t yd = 0;
        for (int k = 0; k < 2 + ns; k++)
          yd = yd * c->y.dims[k] + yi[k];
        for (int64_t q = 0; q < ks; q++) {
          int64_t wi[5] = {o, 0}, xi[5] = {n, 0}, rq = q;
          bool in = true;
          for (int k = ns - 1; k >= 0; k--) {
            wi[2 + k] = rq % c->w.dims[2 + k];
            rq /= c->w.dims[2 + k];
            xi[2 + k] = yi[2 + k] * c->stride[k] + wi[2 + k] * c->dilation[k] -
                        c->pad_lo[k];
            in &= xi[2 + k] >= 0 && xi[2 + k] < c->x.dims[2 + k];
          }
          if (!in)
            continue;
          for (int64_t ci = 0; ci < Cg; ci++) {
            wi[1] = ci;
            xi[1] = o / OG * Cg + ci;
            int64_t xd = 0, wd = 0;
            for (int k = 0; k < 2 + ns; k++) {
              xd = xd * c->x.dims[k] + xi[k];
              wd = wd * c->w.dims[k] + wi[k];
            }
            if (c->kind == CONV_FORWARD)
              out[yd] += x[xd] * w[wd];
            else if (c->kind == CONV_BACKWARD_INPUT)
              out[xd] += y[yd] * w[wd];
            else
              out[wd] += x[xd] * y[yd];
          }
        }
      }
}

/* Dense double copy of a strided tensor (row-major over its dims). */
static double *dense(const ConvTensor *t, int ns, const void *p) {
  int64_t n = telems(t, ns);
  double *r = malloc((size_t)n * sizeof *r);
  for (int64_t lin = 0; lin < n; lin++) {
    int64_t idx[5], q = lin;
    for (int k = 1 + ns; k >= 0; k--) {
      idx[k] = q % t->dims[k];
      q /= t->dims[k];
    }
    r[lin] = getv(t->et, p, toff(t, ns, idx));
  }
  return r;
}

static int64_t span(const ConvTensor *t, int ns) {
  int64_t s = 1;
  for (int k = 0; k < 2 + ns; k++)
    s += (t->dims[k] - 1) * t->strides[k];
  return s;
}

static void check_conv(ConvDesc c) {
  int ns = c.nspatial;
  void *p[CONV_NSLICES] = {0};
  p[CONV_X] = buffer(c.x.et, span(&c.x, ns));
  p[CONV_W] = buffer(c.w.et, span(&c.w, ns));
  p[CONV_Y] = buffer(c.y.et, span(&c.y, ns));
  if (c.has_bias)
    p[CONV_BIAS] = buffer(c.bias_et, c.y.dims[1]);
  if (c.side_scale != 0)
    p[CONV_SIDE] = buffer(c.y.et, span(&c.y, ns));
  double *x = dense(&c.x, ns, p[CONV_X]), *w = dense(&c.w, ns, p[CONV_W]),
         *y = dense(&c.y, ns, p[CONV_Y]);
  const ConvTensor *ot = c.kind == CONV_FORWARD          ? &c.y
                         : c.kind == CONV_BACKWARD_INPUT ? &c.x
                                                         : &c.w;
  int64_t no = telems(ot, ns);
  double *want = malloc((size_t)no * sizeof *want);
  conv_ref(&c, x, w, y, want);
  if (c.kind == CONV_FORWARD) {
    double *side = c.side_scale != 0 ? dense(&c.y, ns, p[CONV_SIDE]) : NULL;
    int64_t per = no / c.y.dims[0] / c.y.dims[1];
    for (int64_t k = 0; k < no; k++) {
      double v = c.alpha * want[k];
      if (side)
        v += c.side_scale * side[k];
      if (c.has_bias)
        v += getv(c.bias_et, p[CONV_BIAS], k / per % c.y.dims[1]);
      want[k] = act(c.act, v);
    }
    free(side);
  }
  Diag d = {0};
  int slot = c.kind == CONV_FORWARD ? CONV_Y : c.kind == CONV_BACKWARD_INPUT ? CONV_X : CONV_W;
  cr_assert(onednn_conv(X_, &c, p, &d), "%s", d.msg ? d.msg : "");
  double *got = dense(ot, ns, p[slot]);
  double t = tol(c.x.et) * 8;
  for (int64_t k = 0; k < no; k++)
    cr_assert(fabs(got[k] - want[k]) <= t * (1 + fabs(want[k])),
              "%s %s conv element %lld: %g, want %g", et_name(c.x.et),
              conv_kind_name(c.kind), (long long)k, got[k], want[k]);
  free(x), free(w), free(y), free(want), free(got);
  for (int k = 0; k < CONV_NSLICES; k++)
    free(p[k]);
}

/* A 2-D convolution N=2, C, O with groups, in NCHW (nhwc false) or NHWC. */
static ConvDesc conv2d(ElemType t, ConvKind kind, int64_t C, int64_t O,
                       int64_t G, int64_t H, int64_t K, int64_t s, int64_t dl,
                       int64_t lo, int64_t hi, bool nhwc) {
  ConvDesc c = {.kind = kind, .nspatial = 2, .groups = G, .alpha = 1};
  c.x = (ConvTensor){t, {2, C, H, H + 1}, {0}};
  c.w = (ConvTensor){t, {O, C / G, K, K}, {0}};
  int64_t eff = (K - 1) * dl + 1;
  int64_t oh = (H + lo + hi - eff) / s + 1, ow = (H + 1 + lo + hi - eff) / s + 1;
  c.y = (ConvTensor){t, {2, O, oh, ow}, {0}};
  for (int k = 0; k < 2; k++) {
    c.stride[k] = s;
    c.dilation[k] = dl;
    c.pad_lo[k] = lo;
    c.pad_hi[k] = hi;
  }
  static const int nchw[4] = {0, 1, 2, 3}, nhwc_order[4] = {0, 2, 3, 1},
                   hwio[4] = {2, 3, 1, 0};
  strides(&c.x, 2, nhwc ? nhwc_order : nchw);
  strides(&c.y, 2, nhwc ? nhwc_order : nchw);
  strides(&c.w, 2, nhwc ? hwio : nchw);
  return c;
}

Test(onednn, conv_forward) {
  ElemType types[] = {ET_F32, ET_BF16, ET_F16, ET_F64};
  for (size_t t = 0; t < ARRAY_LEN(types); t++)
    for (int nhwc = 0; nhwc < 2; nhwc++) {
      check_conv(conv2d(types[t], CONV_FORWARD, 4, 6, 1, 7, 3, 1, 1, 1, 1, nhwc));
      check_conv(conv2d(types[t], CONV_FORWARD, 4, 6, 2, 9, 3, 2, 2, 1, 2, nhwc));
      check_conv(conv2d(types[t], CONV_FORWARD, 6, 6, 6, 8, 3, 1, 1, 1, 1, nhwc));
    }
}

Test(onednn, conv_epilogues) {
  ElemType types[] = {ET_F32, ET_BF16, ET_F64};
  LibActivation acts[] = {LIB_ACT_NONE, LIB_ACT_RELU, LIB_ACT_GELU_ERF};
  for (size_t t = 0; t < ARRAY_LEN(types); t++)
    for (size_t a = 0; a < ARRAY_LEN(acts); a++)
      for (int v = 0; v < 3; v++) {
        ConvDesc c = conv2d(types[t], CONV_FORWARD, 4, 8, 1, 6, 3, 1, 1, 1, 1, v == 1);
        c.act = acts[a];
        c.has_bias = true;
        c.bias_et = types[t];
        c.alpha = v >= 1 ? 0.5 : 1;      /* bias as a post-op */
        c.side_scale = v == 2 ? -1.5 : 0;
        check_conv(c);
      }
}

Test(onednn, conv_backward) {
  ElemType types[] = {ET_F32, ET_BF16, ET_F64};
  for (size_t t = 0; t < ARRAY_LEN(types); t++)
    for (int nhwc = 0; nhwc < 2; nhwc++)
      for (int kind = CONV_BACKWARD_INPUT; kind <= CONV_BACKWARD_FILTER; kind++) {
        check_conv(conv2d(types[t], kind, 4, 6, 1, 8, 3, 2, 1, 1, 0, nhwc));
        check_conv(conv2d(types[t], kind, 3, 5, 1, 9, 3, 1, 2, 2, 2, nhwc));
      }
}

Test(onednn, conv_1d_and_3d) {
  ConvDesc c = {.kind = CONV_FORWARD, .nspatial = 1, .groups = 1, .alpha = 1};
  c.x = (ConvTensor){ET_F32, {2, 4, 30}, {0}};
  c.w = (ConvTensor){ET_F32, {6, 4, 5}, {0}};
  c.y = (ConvTensor){ET_F32, {2, 6, 18}, {0}};
  c.stride[0] = 1, c.dilation[0] = 3;
  static const int o3[3] = {0, 1, 2};
  strides(&c.x, 1, o3), strides(&c.w, 1, o3), strides(&c.y, 1, o3);
  check_conv(c);
  c.kind = CONV_BACKWARD_FILTER;
  check_conv(c);
  ConvDesc v = {.kind = CONV_FORWARD, .nspatial = 3, .groups = 1, .alpha = 1};
  v.x = (ConvTensor){ET_F32, {1, 2, 6, 7, 5}, {0}};
  v.w = (ConvTensor){ET_F32, {3, 2, 3, 3, 2}, {0}};
  v.y = (ConvTensor){ET_F32, {1, 3, 6, 4, 5}, {0}};
  for (int k = 0; k < 3; k++)
    v.stride[k] = k == 1 ? 2 : 1, v.dilation[k] = 1;
  v.pad_lo[0] = v.pad_hi[0] = 1, v.pad_lo[1] = v.pad_hi[1] = 1, v.pad_hi[2] = 1;
  static const int o5[5] = {0, 2, 3, 4, 1};
  strides(&v.x, 3, o5), strides(&v.w, 3, o5), strides(&v.y, 3, o5);
  check_conv(v);
}

Test(onednn, cached_primitives_rerun) {
  /* The same descriptor twice (the cached primitive) and a second
   * descriptor between them. */
  GemmDesc g = gemm(ET_F32, ET_F32, 1, 33, 17, 9, false, true, false);
  check_gemm(g);
  check_gemm(gemm(ET_F32, ET_F32, 1, 5, 5, 5, false, false, false));
  check_gemm(g);
}

Test(onednn_open, missing_library_named) {
  setenv("XHLO_ONEDNN_LIBRARY", "libdnnl-xhloc-missing.so.2", 1);
  PlatformOptions o = {.lib_path = "/nonexistent-a:/nonexistent-b"};
  Diag d = {0};
  OneDnn *x = onednn_open(&o, &d);
  unsetenv("XHLO_ONEDNN_LIBRARY");
  cr_assert_null(x);
  cr_assert(strstr(d.msg, "cannot load libdnnl-xhloc-missing.so.2"), "%s", d.msg);
  cr_assert(strstr(d.msg, "/nonexistent-a/libdnnl-xhloc-missing.so.2, "
                          "/nonexistent-b/libdnnl-xhloc-missing.so.2"),
            "%s", d.msg);
  cr_assert(strstr(d.msg, "libdnnl2") && strstr(d.msg, "--lib-path"), "%s", d.msg);
  diag_clear(&d);
}

/* OpenMP waits passively between primitives unless the user chose. */
static void open_and_close(void) {
  Diag d = {0};
  OneDnn *x = onednn_open(NULL, &d);
  cr_assert_not_null(x, "%s", d.msg ? d.msg : "");
  onednn_close(x);
}

Test(onednn_open, openmp_waits_passively) {
  unsetenv("OMP_WAIT_POLICY");
  unsetenv("GOMP_SPINCOUNT");
  open_and_close();
  const char *w = getenv("OMP_WAIT_POLICY");
  cr_assert(w && strcmp(w, "PASSIVE") == 0, "OMP_WAIT_POLICY=%s", w ? w : "(unset)");
}

Test(onednn_open, openmp_wait_policy_left_as_given) {
  setenv("OMP_WAIT_POLICY", "active", 1);
  unsetenv("GOMP_SPINCOUNT");
  open_and_close();
  cr_expect_str_eq(getenv("OMP_WAIT_POLICY"), "active");
  unsetenv("OMP_WAIT_POLICY");
  setenv("GOMP_SPINCOUNT", "1000", 1);
  open_and_close();
  cr_expect_null(getenv("OMP_WAIT_POLICY"));
}
