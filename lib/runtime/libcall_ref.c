/*
 * libcall_ref.c - the reference for library calls (libcall.h): a GEMM or
 * convolution descriptor executed with plain loops over host memory.  Every
 * operand is read in its element type (real floats through lib/support's
 * exact conversions, integers as integers) into double, the sums are formed
 * in double, and each result is rounded once to its output type.  Tests
 * check the vendor libraries against it; it is written for clarity, not
 * speed (inputs are first copied into dense double arrays).
 */
#include "libcall.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Descriptors whose tensors hold more elements than this are refused
 * (the reference keeps dense double copies of them). */
#define REF_MAX_ELEMS ((int64_t)1 << 32)

static bool ref_err(Diag *d, const char *fmt, ...) PRINTF_LIKE(2, 3);
static bool ref_err(Diag *d, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  diag_verror(d, (Loc){0}, fmt, ap);
  va_end(ap);
  return false;
}

/* Real floats and integers; not pred, complex or the non-array types. */
static bool ref_type_ok(ElemType t) {
  return t > ET_INVALID && t < ET_COUNT && (et_is_float(t) || et_is_int(t));
}

static bool check_type(const char *call, const char *what, ElemType t, Diag *d) {
  if (ref_type_ok(t)) return true;
  return ref_err(d, "libcall reference %s: the %s has element type %s, which it does not take "
                 "(real floats and integers only)",
                 call, what, t > ET_INVALID && t < ET_COUNT ? et_name(t) : "invalid");
}

/* Element k of a buffer of type t, exactly, as double (64-bit integers
 * beyond 2^53 round). */
static double load(ElemType t, const void *base, int64_t k) {
  int n = et_bytes(t);
  const uint8_t *p = (const uint8_t *)base + k * n;
  if (et_is_float(t)) {
    uint64_t bits = 0;
    memcpy(&bits, p, (size_t)n);
    return fp_to_double(et_fp_format(t), bits);
  }
  uint64_t u = 0;
  memcpy(&u, p, (size_t)n);
  int bits = 8 * n;
  if (et_is_signed_int(t) && bits < 64 && (u >> (bits - 1)) & 1)
    return (double)(int64_t)(u | ~(((uint64_t)1 << bits) - 1));
  if (et_is_signed_int(t)) return (double)(int64_t)u;
  return (double)u;
}

/* Stores v rounded once to type t: to nearest even for floats; for
 * integers to the nearest integer, wrapped to the type's width (NaN: 0). */
static void store(ElemType t, void *base, int64_t k, double v) {
  int n = et_bytes(t);
  uint8_t *p = (uint8_t *)base + k * n;
  uint64_t bits;
  if (et_is_float(t)) {
    bits = fp_from_double(et_fp_format(t), v);
  } else {
    double r = nearbyint(v);
    if (r != r) r = 0;
    if (r >= 18446744073709551616.0 || r <= -9223372036854775808.0)
      bits = r > 0 ? UINT64_MAX : (uint64_t)INT64_MIN;
    else if (r >= 9223372036854775808.0)
      bits = (uint64_t)r;
    else
      bits = (uint64_t)(int64_t)r;
  }
  memcpy(p, &bits, (size_t)n);   /* little endian: the low bytes */
}

/* act(v) in double, with libcall.h's formulas. */
static double activate(LibActivation a, double v) {
  switch (a) {
  case LIB_ACT_NONE: return v;
  case LIB_ACT_RELU: return v > 0 ? v : 0;
  case LIB_ACT_GELU_TANH:
    return 0.5 * v * (1 + tanh(0.7978845608028654 * (v + 0.044715 * v * v * v)));
  case LIB_ACT_GELU_ERF: return 0.5 * v * (1 + erf(v * 0.7071067811865476));
  }
  return v;
}

static bool check_act(const char *call, LibActivation a, Diag *d) {
  if (a >= LIB_ACT_NONE && a <= LIB_ACT_GELU_ERF) return true;
  return ref_err(d, "libcall reference %s: unknown activation %d", call, (int)a);
}

/* n1 * n2 * ..., false when some factor is negative or the product exceeds
 * REF_MAX_ELEMS. */
static bool count(int n, const int64_t *f, int64_t *out) {
  int64_t c = 1;
  for (int k = 0; k < n; k++) {
    if (f[k] < 0) return false;
    if (f[k] != 0 && c > REF_MAX_ELEMS / f[k]) return false;
    c *= f[k];
  }
  *out = c;
  return c <= REF_MAX_ELEMS;
}

/* ---- GEMM --------------------------------------------------------------- */

/* A written matrix (D) may not repeat itself over the batch; inputs may. */
static bool check_matrix(const char *what, const GemmMatrix *m, int64_t rows, int64_t cols,
                         int64_t batch, bool written, Diag *d) {
  if (!check_type("gemm", what, m->et, d)) return false;
  if (m->rows != rows || m->cols != cols)
    return ref_err(d, "libcall reference gemm: the %s is %lldx%lld, expected %lldx%lld", what,
                   (long long)m->rows, (long long)m->cols, (long long)rows, (long long)cols);
  if (m->row_stride < 0 || m->col_stride < 0 || m->batch_stride < 0 ||
      (written && batch > 1 && m->batch_stride == 0))
    return ref_err(d, "libcall reference gemm: the %s has bad strides (%lld, %lld, %lld)", what,
                   (long long)m->batch_stride, (long long)m->row_stride,
                   (long long)m->col_stride);
  return true;
}

static int64_t mat_at(const GemmMatrix *m, int64_t b, int64_t r, int64_t c) {
  return b * m->batch_stride + r * m->row_stride + c * m->col_stride;
}

/* A dense [batch, rows, cols] double copy of a strided matrix batch. */
static double *mat_dense(const GemmMatrix *m, int64_t batch, const void *p) {
  double *o = xmalloc((size_t)(batch * m->rows * m->cols + 1) * sizeof *o);
  int64_t k = 0;
  for (int64_t b = 0; b < batch; b++)
    for (int64_t r = 0; r < m->rows; r++)
      for (int64_t c = 0; c < m->cols; c++) o[k++] = load(m->et, p, mat_at(m, b, r, c));
  return o;
}

bool libcall_ref_gemm(const GemmDesc *g, void *const ptrs[GEMM_NSLICES], Diag *d) {
  int64_t sizes[4] = {g->batch, g->m, g->n, g->k}, total;
  if (g->batch < 1 || g->m < 1 || g->n < 1 || g->k < 1 || !count(4, sizes, &total))
    return ref_err(d, "libcall reference gemm: bad sizes batch %lld, m %lld, n %lld, k %lld",
                   (long long)g->batch, (long long)g->m, (long long)g->n, (long long)g->k);
  if (g->alpha_im != 0)
    return ref_err(d, "libcall reference gemm: complex alpha (%g + %gi) is not supported",
                   g->alpha_re, g->alpha_im);
  if (!check_matrix("A operand", &g->a, g->m, g->k, g->batch, false, d) ||
      !check_matrix("B operand", &g->b, g->k, g->n, g->batch, false, d) ||
      !check_matrix("result D", &g->d, g->m, g->n, g->batch, true, d) ||
      (g->beta != 0 && !check_matrix("addend C", &g->c, g->m, g->n, g->batch, false, d)) ||
      (g->has_bias && !check_type("gemm", "bias", g->bias_et, d)) ||
      !check_act("gemm", g->act, d))
    return false;
  if (!ptrs[GEMM_A] || !ptrs[GEMM_B] || !ptrs[GEMM_D] || (g->beta != 0 && !ptrs[GEMM_C]) ||
      (g->has_bias && !ptrs[GEMM_BIAS]))
    return ref_err(d, "libcall reference gemm: an operand's buffer is missing");

  int64_t mn = g->m * g->n;
  double *a = mat_dense(&g->a, g->batch, ptrs[GEMM_A]);
  double *b = mat_dense(&g->b, g->batch, ptrs[GEMM_B]);
  /* Every value of C is read before any of D is written (they may alias). */
  double *out = g->beta != 0 ? mat_dense(&g->c, g->batch, ptrs[GEMM_C])
                             : xcalloc((size_t)(g->batch * mn), sizeof *out);
  double *bias = xcalloc((size_t)g->n, sizeof *bias);
  if (g->has_bias)
    for (int64_t j = 0; j < g->n; j++) bias[j] = load(g->bias_et, ptrs[GEMM_BIAS], j);
  for (int64_t bt = 0; bt < g->batch; bt++) {
    const double *ab = a + bt * g->m * g->k, *bb = b + bt * g->k * g->n;
    for (int64_t i = 0; i < g->m; i++)
      for (int64_t j = 0; j < g->n; j++) {
        double s = 0;
        for (int64_t q = 0; q < g->k; q++) s += ab[i * g->k + q] * bb[q * g->n + j];
        double *o = &out[bt * mn + i * g->n + j];
        double v = g->alpha_re * s + bias[j];
        if (g->beta != 0) v += g->beta * *o;
        *o = activate(g->act, v);
      }
  }
  for (int64_t bt = 0; bt < g->batch; bt++)
    for (int64_t i = 0; i < g->m; i++)
      for (int64_t j = 0; j < g->n; j++)
        store(g->d.et, ptrs[GEMM_D], mat_at(&g->d, bt, i, j), out[bt * mn + i * g->n + j]);
  free(a);
  free(b);
  free(out);
  free(bias);
  return true;
}

/* ---- convolution -------------------------------------------------------- */

/* A conv tensor's element count, or false when it is too large or has an
 * empty dimension or a negative stride. */
static bool tensor_count(const ConvTensor *t, int ns, int64_t *n) {
  for (int k = 0; k < 2 + ns; k++)
    if (t->dims[k] < 1 || t->strides[k] < 0) return false;
  return count(2 + ns, t->dims, n);
}

/* Dense (row-major over dims) index <-> strided offset walk: the offset of
 * dense element lin. */
static int64_t tensor_offset(const ConvTensor *t, int ns, int64_t lin) {
  int64_t off = 0;
  for (int k = 1 + ns; k >= 0; k--) {
    off += lin % t->dims[k] * t->strides[k];
    lin /= t->dims[k];
  }
  return off;
}

static double *tensor_dense(const ConvTensor *t, int ns, const void *p, int64_t n) {
  double *o = xmalloc((size_t)(n + 1) * sizeof *o);
  for (int64_t k = 0; k < n; k++) o[k] = load(t->et, p, tensor_offset(t, ns, k));
  return o;
}

static bool check_conv(const ConvDesc *c, void *const ptrs[CONV_NSLICES], int64_t n[3],
                       Diag *d) {
  const char *kind = c->kind == CONV_FORWARD           ? "forward convolution"
                     : c->kind == CONV_BACKWARD_INPUT  ? "backward-input convolution"
                     : c->kind == CONV_BACKWARD_FILTER ? "backward-filter convolution"
                                                       : NULL;
  if (!kind) return ref_err(d, "libcall reference: unknown convolution kind %d", (int)c->kind);
  int ns = c->nspatial;
  if (ns < 1 || ns > CONV_MAX_SPATIAL)
    return ref_err(d, "libcall reference %s: %d spatial dimensions (1 to %d are supported)",
                   kind, ns, CONV_MAX_SPATIAL);
  const ConvTensor *ts[3] = {&c->x, &c->w, &c->y};
  static const char *names[3] = {"input x", "filter w", "output y"};
  for (int k = 0; k < 3; k++) {
    if (!check_type(kind, names[k], ts[k]->et, d)) return false;
    if (!tensor_count(ts[k], ns, &n[k]))
      return ref_err(d, "libcall reference %s: the %s has bad dimensions or strides", kind,
                     names[k]);
  }
  int64_t G = c->groups;
  if (G < 1 || c->w.dims[0] % G != 0 || c->x.dims[1] != c->w.dims[1] * G ||
      c->y.dims[1] != c->w.dims[0] || c->y.dims[0] != c->x.dims[0])
    return ref_err(d,
                   "libcall reference %s: inconsistent dimensions (x [%lld, %lld], "
                   "w [%lld, %lld], y [%lld, %lld], %lld groups)",
                   kind, (long long)c->x.dims[0], (long long)c->x.dims[1],
                   (long long)c->w.dims[0], (long long)c->w.dims[1], (long long)c->y.dims[0],
                   (long long)c->y.dims[1], (long long)G);
  for (int k = 0; k < ns; k++)
    if (c->stride[k] < 1 || c->dilation[k] < 1 || c->pad_lo[k] < 0 || c->pad_hi[k] < 0)
      return ref_err(d,
                     "libcall reference %s: spatial dimension %d has stride %lld, dilation "
                     "%lld, padding %lld/%lld",
                     kind, k, (long long)c->stride[k], (long long)c->dilation[k],
                     (long long)c->pad_lo[k], (long long)c->pad_hi[k]);
  if (c->kind != CONV_FORWARD &&
      (c->alpha != 1 || c->side_scale != 0 || c->has_bias || c->act != LIB_ACT_NONE))
    return ref_err(d, "libcall reference %s: only the forward kind takes an epilogue", kind);
  if (c->has_bias && !check_type(kind, "bias", c->bias_et, d)) return false;
  if (!check_act(kind, c->act, d)) return false;
  if (!ptrs[CONV_X] || !ptrs[CONV_W] || !ptrs[CONV_Y] || (c->has_bias && !ptrs[CONV_BIAS]) ||
      (c->kind == CONV_FORWARD && c->side_scale != 0 && !ptrs[CONV_SIDE]))
    return ref_err(d, "libcall reference %s: an operand's buffer is missing", kind);
  return true;
}

/* Calls visit(ctx, xi, wi, yi) for every (input, filter, output) triple of
 * dense indices that the forward convolution multiplies together. */
typedef void (*ConvVisit)(void *ctx, int64_t xi, int64_t wi, int64_t yi);

static void conv_walk(const ConvDesc *c, ConvVisit visit, void *ctx) {
  int ns = c->nspatial;
  const int64_t *X = c->x.dims, *W = c->w.dims, *Y = c->y.dims;
  int64_t N = X[0], O = W[0], Cg = W[1], OG = O / c->groups;
  int64_t yspat = 1, kspat = 1, xspat = 1;
  for (int k = 0; k < ns; k++) {
    yspat *= Y[2 + k];
    kspat *= W[2 + k];
    xspat *= X[2 + k];
  }
  for (int64_t n = 0; n < N; n++)
    for (int64_t o = 0; o < O; o++) {
      int64_t g = o / OG;
      for (int64_t ys = 0; ys < yspat; ys++) {
        int64_t ypos[CONV_MAX_SPATIAL], r = ys;
        for (int k = ns - 1; k >= 0; k--) {
          ypos[k] = r % Y[2 + k];
          r /= Y[2 + k];
        }
        int64_t yi = (n * O + o) * yspat + ys;
        for (int64_t ks = 0; ks < kspat; ks++) {
          int64_t kpos[CONV_MAX_SPATIAL], q = ks, xs = 0;
          bool inside = true;
          for (int k = ns - 1; k >= 0; k--) {
            kpos[k] = q % W[2 + k];
            q /= W[2 + k];
          }
          for (int k = 0; k < ns; k++) {
            int64_t pos = ypos[k] * c->stride[k] + kpos[k] * c->dilation[k] - c->pad_lo[k];
            inside = inside && pos >= 0 && pos < X[2 + k];
            xs = xs * X[2 + k] + pos;
          }
          if (!inside) continue;
          for (int64_t ci = 0; ci < Cg; ci++) {
            int64_t xi = (n * X[1] + g * Cg + ci) * xspat + xs;
            int64_t wi = (o * Cg + ci) * kspat + ks;
            visit(ctx, xi, wi, yi);
          }
        }
      }
    }
}

typedef struct ConvSums {
  const double *x, *w, *y;
  double *out;
  ConvKind kind;
} ConvSums;

static void conv_accumulate(void *ctx, int64_t xi, int64_t wi, int64_t yi) {
  ConvSums *s = ctx;
  switch (s->kind) {
  case CONV_FORWARD: s->out[yi] += s->x[xi] * s->w[wi]; break;
  case CONV_BACKWARD_INPUT: s->out[xi] += s->y[yi] * s->w[wi]; break;
  case CONV_BACKWARD_FILTER: s->out[wi] += s->x[xi] * s->y[yi]; break;
  }
}

bool libcall_ref_conv(const ConvDesc *c, void *const ptrs[CONV_NSLICES], Diag *d) {
  int64_t n[3];
  if (!check_conv(c, ptrs, n, d)) return false;
  int ns = c->nspatial;
  const ConvTensor *ts[3] = {&c->x, &c->w, &c->y};
  static const int slot[3] = {CONV_X, CONV_W, CONV_Y};
  int out = c->kind == CONV_FORWARD ? 2 : c->kind == CONV_BACKWARD_INPUT ? 0 : 1;
  double *dense[3] = {NULL, NULL, NULL};
  for (int k = 0; k < 3; k++)
    if (k != out) dense[k] = tensor_dense(ts[k], ns, ptrs[slot[k]], n[k]);
  ConvSums s = {dense[0], dense[1], dense[2], xcalloc((size_t)n[out] + 1, sizeof(double)),
                c->kind};
  conv_walk(c, conv_accumulate, &s);
  if (c->kind == CONV_FORWARD) {
    /* y = act(alpha * conv + side_scale * side + bias); side has y's layout. */
    double *side = c->side_scale != 0 ? tensor_dense(&c->y, ns, ptrs[CONV_SIDE], n[2]) : NULL;
    int64_t O = c->y.dims[1], per_o = n[2] / (c->y.dims[0] * O);
    for (int64_t k = 0; k < n[2]; k++) {
      double v = c->alpha * s.out[k];
      if (side) v += c->side_scale * side[k];
      if (c->has_bias) v += load(c->bias_et, ptrs[CONV_BIAS], k / per_o % O);
      s.out[k] = activate(c->act, v);
    }
    free(side);
  }
  for (int64_t k = 0; k < n[out]; k++)
    store(ts[out]->et, ptrs[slot[out]], tensor_offset(ts[out], ns, k), s.out[k]);
  for (int k = 0; k < 3; k++) free(dense[k]);
  free(s.out);
  return true;
}
