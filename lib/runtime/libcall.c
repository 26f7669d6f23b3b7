/*
 * libcall.c - library-call descriptors (libcall.h): their names, the
 * structural checks the thunk file reader and writer run on them (sizes
 * agree, every operand fits in its slice), and their one-line text for
 * --stage=thunks and xhlo-run --describe.
 */
#include "thunks.h"

#include <math.h>
#include <string.h>

const char *lib_activation_name(LibActivation a) {
  switch (a) {
  case LIB_ACT_NONE: return "none";
  case LIB_ACT_RELU: return "relu";
  case LIB_ACT_GELU_TANH: return "gelu_tanh";
  case LIB_ACT_GELU_ERF: return "gelu_erf";
  }
  return "?";
}

double lib_activation_apply(LibActivation a, double x) {
  switch (a) {
  case LIB_ACT_RELU: return x > 0 ? x : 0;
  case LIB_ACT_GELU_TANH:
    return 0.5 * x * (1 + tanh(0.7978845608028654 * (x + 0.044715 * x * x * x)));
  case LIB_ACT_GELU_ERF: return 0.5 * x * (1 + erf(x * 0.7071067811865476));
  default: return x;
  }
}

const char *conv_kind_name(ConvKind k) {
  switch (k) {
  case CONV_FORWARD: return "forward";
  case CONV_BACKWARD_INPUT: return "backward_input";
  case CONV_BACKWARD_FILTER: return "backward_filter";
  }
  return "?";
}

static Loc noloc(void) { return (Loc){0}; }

static bool is_data_type(ElemType t) {
  return t > ET_INVALID && t < ET_COUNT && et_is_array(t) && t != ET_TOKEN &&
         et_bytes(t) > 0;
}

/* The number of elements from the first to one past the last element a
 * strided view spans: 1 + sum (extent-1)*stride; -1 on overflow. */
static int64_t span(int n, const int64_t *extent, const int64_t *stride) {
  int64_t s = 1;
  for (int k = 0; k < n; k++) {
    if (extent[k] < 1 || stride[k] < 0)
      return -1;
    if (stride[k] != 0 && extent[k] - 1 > (INT64_MAX - s) / stride[k])
      return -1;
    s += (extent[k] - 1) * stride[k];
  }
  return s;
}

/* Checks that `elems` elements of type et fit in slice s of a slice table
 * entry `what`. */
static bool fits(const char *who, const char *what, BufSlice s, ElemType et,
                 int64_t elems, Diag *d) {
  if (s.alloc < 0)
    return diag_error(d, noloc(), "%s: the %s slice is missing", who, what);
  if (elems < 0 || elems > INT64_MAX / et_bytes(et))
    return diag_error(d, noloc(), "%s: the %s operand's strides overflow", who,
                      what);
  if (elems * et_bytes(et) > s.size)
    return diag_error(d, noloc(),
                      "%s: the %s operand spans %lld bytes but its slice "
                      "has %lld",
                      who, what, (long long)(elems * et_bytes(et)),
                      (long long)s.size);
  return true;
}

static bool absent(const char *who, const char *what, BufSlice s, Diag *d) {
  if (s.alloc >= 0)
    return diag_error(d, noloc(), "%s: a %s slice it does not use", who, what);
  return true;
}

static bool check_matrix(const char *who, const char *what, const GemmMatrix *x,
                         int64_t rows, int64_t cols, int64_t batch,
                         BufSlice s, Diag *d) {
  if (!is_data_type(x->et))
    return diag_error(d, noloc(), "%s: the %s operand has no element type",
                      who, what);
  if (x->rows != rows || x->cols != cols)
    return diag_error(d, noloc(),
                      "%s: the %s operand is %lldx%lld, expected %lldx%lld",
                      who, what, (long long)x->rows, (long long)x->cols,
                      (long long)rows, (long long)cols);
  if (x->row_stride != 1 && x->col_stride != 1)
    return diag_error(d, noloc(),
                      "%s: the %s operand is neither row- nor column-major",
                      who, what);
  int64_t ext[3] = {batch, rows, cols};
  int64_t str[3] = {x->batch_stride, x->row_stride, x->col_stride};
  return fits(who, what, s, x->et, span(3, ext, str), d);
}

bool libcall_check_gemm(const GemmDesc *g, const BufSlice lib[], Diag *d) {
  const char *who = "GEMM thunk";
  if (!g)
    return diag_error(d, noloc(), "%s without its descriptor", who);
  if (g->batch < 1 || g->m < 1 || g->n < 1 || g->k < 1)
    return diag_error(d, noloc(), "%s: sizes batch %lld, m %lld, n %lld, k %lld",
                      who, (long long)g->batch, (long long)g->m,
                      (long long)g->n, (long long)g->k);
  if ((unsigned)g->act > LIB_ACT_GELU_ERF)
    return diag_error(d, noloc(), "%s: unknown activation %d", who, (int)g->act);
  if (!check_matrix(who, "A", &g->a, g->m, g->k, g->batch, lib[GEMM_A], d) ||
      !check_matrix(who, "B", &g->b, g->k, g->n, g->batch, lib[GEMM_B], d) ||
      !check_matrix(who, "D", &g->d, g->m, g->n, g->batch, lib[GEMM_D], d))
    return false;
  if (g->beta != 0) {
    if (!check_matrix(who, "C", &g->c, g->m, g->n, g->batch, lib[GEMM_C], d))
      return false;
  } else if (!absent(who, "C", lib[GEMM_C], d)) {
    return false;
  }
  if (g->has_bias) {
    if (!is_data_type(g->bias_et))
      return diag_error(d, noloc(), "%s: the bias has no element type", who);
    if (!fits(who, "bias", lib[GEMM_BIAS], g->bias_et, g->n, d))
      return false;
  } else if (!absent(who, "bias", lib[GEMM_BIAS], d)) {
    return false;
  }
  if (g->workspace_bytes < 0)
    return diag_error(d, noloc(), "%s: workspace of %lld bytes", who,
                      (long long)g->workspace_bytes);
  if (g->workspace_bytes > 0) {
    if (!fits(who, "workspace", lib[GEMM_WORKSPACE], ET_U8,
              g->workspace_bytes, d))
      return false;
  } else if (!absent(who, "workspace", lib[GEMM_WORKSPACE], d)) {
    return false;
  }
  return true;
}

static bool check_tensor(const char *who, const char *what, const ConvTensor *t,
                         int nspatial, BufSlice s, Diag *d) {
  if (!is_data_type(t->et))
    return diag_error(d, noloc(), "%s: the %s tensor has no element type", who,
                      what);
  return fits(who, what, s, t->et, span(2 + nspatial, t->dims, t->strides), d);
}

bool libcall_check_conv(const ConvDesc *c, const BufSlice lib[], Diag *d) {
  const char *who = "convolution thunk";
  if (!c)
    return diag_error(d, noloc(), "%s without its descriptor", who);
  if (c->nspatial < 1 || c->nspatial > CONV_MAX_SPATIAL)
    return diag_error(d, noloc(), "%s: %d spatial dimensions", who,
                      c->nspatial);
  if ((unsigned)c->kind > CONV_BACKWARD_FILTER ||
      (unsigned)c->act > LIB_ACT_GELU_ERF)
    return diag_error(d, noloc(), "%s: unknown kind or activation", who);
  if (c->groups < 1 || c->x.dims[1] != c->w.dims[1] * c->groups ||
      c->w.dims[0] % c->groups != 0 || c->y.dims[1] != c->w.dims[0] ||
      c->x.dims[0] != c->y.dims[0])
    return diag_error(d, noloc(),
                      "%s: x, w and y do not agree in batch, features and "
                      "groups",
                      who);
  for (int k = 0; k < c->nspatial; k++) {
    if (c->stride[k] < 1 || c->dilation[k] < 1 || c->pad_lo[k] < 0 ||
        c->pad_hi[k] < 0)
      return diag_error(d, noloc(), "%s: bad window in spatial dimension %d",
                        who, k);
    int64_t in = c->x.dims[2 + k], kk = c->w.dims[2 + k];
    int64_t eff = (kk - 1) * c->dilation[k] + 1;
    int64_t padded = in + c->pad_lo[k] + c->pad_hi[k];
    int64_t out = padded < eff ? 0 : (padded - eff) / c->stride[k] + 1;
    if (out != c->y.dims[2 + k])
      return diag_error(d, noloc(),
                        "%s: spatial dimension %d of y is %lld, the window "
                        "gives %lld",
                        who, k, (long long)c->y.dims[2 + k], (long long)out);
  }
  if (!check_tensor(who, "x", &c->x, c->nspatial, lib[CONV_X], d) ||
      !check_tensor(who, "w", &c->w, c->nspatial, lib[CONV_W], d) ||
      !check_tensor(who, "y", &c->y, c->nspatial, lib[CONV_Y], d))
    return false;
  bool fwd = c->kind == CONV_FORWARD;
  if ((c->has_bias || c->side_scale != 0 || c->act != LIB_ACT_NONE ||
       c->alpha != 1) &&
      !fwd)
    return diag_error(d, noloc(), "%s: an epilogue on a %s convolution", who,
                      conv_kind_name(c->kind));
  if (c->has_bias) {
    if (!is_data_type(c->bias_et))
      return diag_error(d, noloc(), "%s: the bias has no element type", who);
    if (!fits(who, "bias", lib[CONV_BIAS], c->bias_et, c->y.dims[1], d))
      return false;
  } else if (!absent(who, "bias", lib[CONV_BIAS], d)) {
    return false;
  }
  if (c->side_scale != 0) {
    if (!check_tensor(who, "side input", &c->y, c->nspatial, lib[CONV_SIDE], d))
      return false;
  } else if (!absent(who, "side input", lib[CONV_SIDE], d)) {
    return false;
  }
  if (c->workspace_bytes < 0)
    return diag_error(d, noloc(), "%s: workspace of %lld bytes", who,
                      (long long)c->workspace_bytes);
  if (c->workspace_bytes > 0) {
    if (!fits(who, "workspace", lib[CONV_WORKSPACE], ET_U8,
              c->workspace_bytes, d))
      return false;
  } else if (!absent(who, "workspace", lib[CONV_WORKSPACE], d)) {
    return false;
  }
  return true;
}

/* ---- text ---------------------------------------------------------------- */

static void put_slice(StrBuf *b, const char *name, BufSlice s) {
  if (s.alloc < 0)
    return;
  sb_printf(b, ", %s = {index:%d, offset:%lld, size:%lld}", name, (int)s.alloc,
            (long long)s.offset, (long long)s.size);
}

static void put_matrix(StrBuf *b, const char *name, const GemmMatrix *x) {
  sb_printf(b, ", %s = %s[%lld,%lld] %s (ld %lld, batch stride %lld)", name,
            et_name(x->et), (long long)x->rows, (long long)x->cols,
            x->col_stride == 1 ? "row-major" : "col-major",
            (long long)(x->col_stride == 1 ? x->row_stride : x->col_stride),
            (long long)x->batch_stride);
}

void libcall_print_gemm(StrBuf *b, const GemmDesc *g, const BufSlice lib[]) {
  sb_printf(b, ", batch = %lld, m = %lld, n = %lld, k = %lld",
            (long long)g->batch, (long long)g->m, (long long)g->n,
            (long long)g->k);
  put_matrix(b, "a", &g->a);
  put_matrix(b, "b", &g->b);
  if (g->beta != 0)
    put_matrix(b, "c", &g->c);
  put_matrix(b, "d", &g->d);
  sb_printf(b, ", alpha = %g", g->alpha_re);
  if (g->alpha_im != 0)
    sb_printf(b, "%+gi", g->alpha_im);
  sb_printf(b, ", beta = %g, activation = %s", g->beta,
            lib_activation_name(g->act));
  if (g->has_bias)
    sb_printf(b, ", bias = %s[%lld]", et_name(g->bias_et), (long long)g->n);
  if (g->allow_tf32)
    sb_puts(b, ", tf32");
  put_slice(b, "lhs_buffer", lib[GEMM_A]);
  put_slice(b, "rhs_buffer", lib[GEMM_B]);
  put_slice(b, "c_buffer", lib[GEMM_C]);
  put_slice(b, "bias_buffer", lib[GEMM_BIAS]);
  put_slice(b, "output_buffer", lib[GEMM_D]);
  put_slice(b, "workspace", lib[GEMM_WORKSPACE]);
}

static void put_tensor(StrBuf *b, const char *name, const ConvTensor *t,
                       int nspatial) {
  sb_printf(b, ", %s = %s[", name, et_name(t->et));
  for (int k = 0; k < 2 + nspatial; k++)
    sb_printf(b, "%s%lld", k ? "," : "", (long long)t->dims[k]);
  sb_puts(b, "] strides [");
  for (int k = 0; k < 2 + nspatial; k++)
    sb_printf(b, "%s%lld", k ? "," : "", (long long)t->strides[k]);
  sb_putc(b, ']');
}

static void put_list(StrBuf *b, const char *name, const int64_t *v, int n) {
  sb_printf(b, " %s=", name);
  for (int k = 0; k < n; k++)
    sb_printf(b, "%s%lld", k ? "x" : "", (long long)v[k]);
}

void libcall_print_conv(StrBuf *b, const ConvDesc *c, const BufSlice lib[]) {
  sb_printf(b, ", kind = %s", conv_kind_name(c->kind));
  put_tensor(b, "x", &c->x, c->nspatial);
  put_tensor(b, "w", &c->w, c->nspatial);
  put_tensor(b, "y", &c->y, c->nspatial);
  sb_puts(b, ", window = {");
  put_list(b, "stride", c->stride, c->nspatial);
  put_list(b, "dilation", c->dilation, c->nspatial);
  put_list(b, "pad_lo", c->pad_lo, c->nspatial);
  put_list(b, "pad_hi", c->pad_hi, c->nspatial);
  sb_printf(b, " }, groups = %lld", (long long)c->groups);
  if (c->kind == CONV_FORWARD) {
    sb_printf(b, ", alpha = %g, activation = %s", c->alpha,
              lib_activation_name(c->act));
    if (c->side_scale != 0)
      sb_printf(b, ", side_input_scale = %g", c->side_scale);
    if (c->has_bias)
      sb_printf(b, ", bias = %s[%lld]", et_name(c->bias_et),
                (long long)c->y.dims[1]);
  }
  if (c->allow_tf32)
    sb_puts(b, ", tf32");
  put_slice(b, "input_buffer", lib[CONV_X]);
  put_slice(b, "filter_buffer", lib[CONV_W]);
  put_slice(b, "output_buffer", lib[CONV_Y]);
  put_slice(b, "bias_buffer", lib[CONV_BIAS]);
  put_slice(b, "side_input_buffer", lib[CONV_SIDE]);
  put_slice(b, "scratch_buffer", lib[CONV_WORKSPACE]);
}
