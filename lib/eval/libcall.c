/*
 * libcall.c - the interpreter's library custom-calls (backend_config.h):
 * GEMMs (__cublas$gemm, __cublas$lt$matmul, __onednn$matmul) and
 * convolutions (__cudnn$conv*, __onednn$convolution), as XLA defines them.
 *
 * GEMM: the dot of the config's dimension numbers, computed as XLA's
 * evaluator computes a dot whose result is f32 (f64 for f64 results), then
 * D = act(alpha * dot + beta * C + bias) in double and rounded once to the
 * result type; bias runs along the result's trailing (rhs non-contracting)
 * elements.
 *
 * Convolution: the forward convolution the call's window and dim_labels
 * describe (x * w = y, cross-correlation, feature groups), and whichever of
 * x, w, y the call computes from the other two (libcall.h's semantics).
 * The forward kind is XLA's evaluator's convolution with an f32 (f64)
 * result, then alpha, the side input, the bias and the activation in
 * double, rounded once; the backward kinds sum their products in double and
 * round once.
 *
 * A workspace leaf of the result is zeros.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../hlo/backend_config.h"
#include "../runtime/libcall.h"
#include "evalp.h"

/* The result leaf (the array, or the first element of a tuple result) and,
 * for a tuple, the value holding it with a zero workspace. */
static const Shape *result_array(const HloInstr *i) {
  if (shape_is_array(i->shape))
    return i->shape;
  if (shape_is_tuple(i->shape) && i->shape->ntuple == 2 &&
      shape_is_array(i->shape->tuple[0]) && shape_is_array(i->shape->tuple[1]))
    return i->shape->tuple[0];
  return NULL;
}

static EvalValue *wrap_result(Eval *ev, const HloInstr *i, EvalValue *out) {
  if (!out || shape_is_array(i->shape))
    return out;
  EvalValue *ws = ev_array(ev, i->shape->tuple[1]);
  if (!ws) {
    ev_unref(ev, out);
    return NULL;
  }
  EvalValue *el[2] = {out, ws};
  EvalValue *t = ev_tuple(ev, i->shape, 2, el);
  ev_unref(ev, out);
  ev_unref(ev, ws);
  return t;
}

static EvalValue *gemm(Eval *ev, const HloInstr *i, EvalValue *const *a) {
  const Shape *rs = result_array(i);
  Arena *ar = arena_new();
  GemmBackendConfig cfg;
  Diag d = {0};
  EvalValue *dot = NULL, *out = NULL;
  if (!gemm_config_parse(ar, i, &cfg, &d)) {
    ev_fail(ev, i, EVAL_ERR_INVALID, "%s", d.msg);
    goto done;
  }
  bool bias = gemm_epilogue_has_bias(cfg.epilogue);
  int need = 2 + (cfg.beta != 0) + bias;
  if (!rs || i->nops != need || !et_is_float(rs->et) || cfg.alpha_imag != 0) {
    ev_fail(ev, i, EVAL_ERR_INVALID,
            "malformed GEMM custom-call (needs %d operands, a real float "
            "result and a real alpha)",
            need);
    goto done;
  }
  /* The dot, accumulated as XLA's evaluator does for an f32 (f64) result. */
  HloInstr di = *i;
  di.op = HLO_DOT;
  di.nops = 2;
  di.dot = &cfg.dnums;
  di.nprecision = 0;
  di.precision = NULL;
  di.cc = NULL;
  ElemType acc = rs->et == ET_F64 ? ET_F64 : ET_F32;
  di.shape = shape_array(ar, acc, rs->rank, rs->dims);
  dot = eval_dot(ev, &di, a);
  if (!dot)
    goto done;
  out = ev_array_nozero(ev, rs);
  if (!out)
    goto done;
  int64_t n = ev_elems(rs);
  int64_t ncols = 1;
  const Shape *cs = cfg.beta != 0 ? i->ops[2]->shape : NULL;
  const Shape *bs = bias ? i->ops[need - 1]->shape : NULL;
  if ((cs && (!shape_compatible(cs, rs))) || (bs && n % (ncols = ev_elems(bs)) != 0)) {
    ev_fail(ev, i, EVAL_ERR_INVALID, "GEMM addend or bias does not fit the result");
    ev_unref(ev, out);
    out = NULL;
    goto done;
  }
  LibActivation act = LIB_ACT_NONE;
  switch (cfg.epilogue) {
  case GEMM_EPILOGUE_RELU: case GEMM_EPILOGUE_BIAS_RELU: act = LIB_ACT_RELU; break;
  case GEMM_EPILOGUE_GELU: case GEMM_EPILOGUE_BIAS_GELU: act = LIB_ACT_GELU_TANH; break;
  case GEMM_EPILOGUE_GELU_ERF: case GEMM_EPILOGUE_BIAS_GELU_ERF: act = LIB_ACT_GELU_ERF; break;
  default: break;
  }
  int ab = et_bytes(acc), ob = et_bytes(rs->et);
  for (int64_t k = 0; k < n; k++) {
    double v = cfg.alpha_real * ev_get_f64(acc, dot->data + k * ab);
    if (cs)
      v += cfg.beta * ev_get_f64(cs->et, a[2]->data + k * et_bytes(cs->et));
    if (bs)
      v += ev_get_f64(bs->et, a[need - 1]->data + (k % ncols) * et_bytes(bs->et));
    ev_set_f64(rs->et, out->data + k * ob, lib_activation_apply(act, v));
  }
done:
  if (dot)
    ev_unref(ev, dot);
  diag_clear(&d);
  arena_free(ar);
  return wrap_result(ev, i, out);
}

/* A convolution tensor in row-major logical order: its [N|O, C|I, S...]
 * extents and element strides. */
typedef struct Tens {
  int64_t dims[2 + 3], str[2 + 3];
} Tens;

static void tens(const Shape *s, int64_t d0, int64_t d1, const int64_t *sp,
                 int ns, Tens *t) {
  int64_t st[64];
  ev_strides(s, st);
  int64_t idx[5] = {d0, d1};
  for (int k = 0; k < ns; k++)
    idx[2 + k] = sp[k];
  for (int k = 0; k < 2 + ns; k++) {
    t->dims[k] = s->dims[idx[k]];
    t->str[k] = st[idx[k]];
  }
}

static double *to_double(Eval *ev, const HloInstr *i, const Shape *s,
                         const uint8_t *data) {
  int64_t n = ev_elems(s);
  double *p = ev_scratch(ev, i, (n + 1) * 8);
  if (!p)
    return NULL;
  for (int64_t k = 0; k < n; k++)
    p[k] = data ? ev_get_f64(s->et, data + k * et_bytes(s->et)) : 0;
  return p;
}

/* The HLO convolution (attributes) of a gradient call, on the call's own
 * operands: backward input is conv(y, w) with lhs dilation = the forward
 * stride, the window reversed and the kernel's feature roles swapped;
 * backward filter is conv(x, y) with x's batch and feature roles swapped,
 * window = y's spatial size, stride = the forward dilation and rhs dilation
 * = the forward stride.  High paddings give the wanted sizes (HLO allows
 * them negative). */
static ConvAttrs *gradient_conv(Arena *ar, const ConvAttrs *ca, ConvCallKind kind,
                                const Tens *x, const Tens *y, const Tens *w,
                                int ns) {
  const ConvDnums *f = ca->dnums;
  ConvAttrs *c = ARENA_NEW(ar, ConvAttrs);
  ConvDnums *dn = ARENA_NEW(ar, ConvDnums);
  Window *win = ARENA_NEW(ar, Window);
  *c = *ca;
  c->dnums = dn;
  c->window = win;
  c->feature_group_count = 1;
  win->ndims = ns;
  win->dims = ARENA_ARRAY(ar, WindowDim, ns);
  dn->nspatial = ns;
  if (kind == CONV_CALL_BACKWARD_INPUT) {
    dn->input_batch = f->output_batch, dn->input_feature = f->output_feature;
    dn->input_spatial = f->output_spatial;
    dn->kernel_input_feature = f->kernel_output_feature;
    dn->kernel_output_feature = f->kernel_input_feature;
    dn->kernel_spatial = f->kernel_spatial;
    dn->output_batch = f->input_batch, dn->output_feature = f->input_feature;
    dn->output_spatial = f->input_spatial;
  } else {
    dn->input_batch = f->input_feature, dn->input_feature = f->input_batch;
    dn->input_spatial = f->input_spatial;
    dn->kernel_input_feature = f->output_batch;
    dn->kernel_output_feature = f->output_feature;
    dn->kernel_spatial = f->output_spatial;
    dn->output_batch = f->kernel_input_feature;
    dn->output_feature = f->kernel_output_feature;
    dn->output_spatial = f->kernel_spatial;
  }
  for (int k = 0; k < ns; k++) {
    const WindowDim *fw = &ca->window->dims[k];
    WindowDim *d = &win->dims[k];
    int64_t s = fw->stride > 0 ? fw->stride : 1;
    int64_t dl = fw->window_dilation > 0 ? fw->window_dilation : 1;
    int64_t X = x->dims[2 + k], Y = y->dims[2 + k], K = w->dims[2 + k];
    memset(d, 0, sizeof *d);
    if (kind == CONV_CALL_BACKWARD_INPUT) {
      int64_t eff = (K - 1) * dl + 1;
      d->size = K;
      d->stride = 1;
      d->base_dilation = s;
      d->window_dilation = dl;
      d->reversal = true;
      d->pad_lo = (K - 1) * dl - fw->pad_lo;
      d->pad_hi = X + eff - 2 - d->pad_lo - (Y - 1) * s;
    } else {
      int64_t eff = (Y - 1) * s + 1;
      d->size = Y;
      d->stride = dl;
      d->base_dilation = 1;
      d->window_dilation = s;
      d->pad_lo = fw->pad_lo;
      d->pad_hi = (K - 1) * dl + eff - X - d->pad_lo;
    }
  }
  return c;
}

static EvalValue *conv(Eval *ev, const HloInstr *i, EvalValue *const *a,
                       LibCallTarget t) {
  const Shape *rs = result_array(i);
  ConvBackendConfig cfg;
  Diag d = {0};
  const ConvAttrs *ca = i->conv;
  if (!conv_config_parse(i, &cfg, &d)) {
    ev_fail(ev, i, EVAL_ERR_INVALID, "%s", d.msg);
    diag_clear(&d);
    return NULL;
  }
  int ns = ca && ca->dnums ? ca->dnums->nspatial : 0;
  if (!rs || i->nops < 2 || !ca || !ca->window || !ca->dnums || ns < 1 ||
      ns > 3 || ca->window->ndims != ns || ca->batch_group_count > 1 ||
      !et_is_float(rs->et)) {
    ev_fail(ev, i, EVAL_ERR_INVALID,
            "malformed convolution custom-call (window, dim_labels, 1 to 3 "
            "spatial dimensions, no batch groups, a float result)");
    return NULL;
  }
  const ConvDnums *dn = ca->dnums;
  ConvCallKind kind = libcall_conv_kind(t, &cfg);
  const Shape *xs, *ws, *ys;
  const uint8_t *xd = NULL, *wd = NULL, *yd = NULL;
  if (kind == CONV_CALL_FORWARD)
    xs = i->ops[0]->shape, ws = i->ops[1]->shape, ys = rs, xd = a[0]->data,
    wd = a[1]->data;
  else if (kind == CONV_CALL_BACKWARD_INPUT)
    ys = i->ops[0]->shape, ws = i->ops[1]->shape, xs = rs, yd = a[0]->data,
    wd = a[1]->data;
  else
    xs = i->ops[0]->shape, ys = i->ops[1]->shape, ws = rs, xd = a[0]->data,
    yd = a[1]->data;
  int64_t G = ca->feature_group_count > 0 ? ca->feature_group_count : 1;
  Tens x, w, y;
  tens(xs, dn->input_batch, dn->input_feature, dn->input_spatial, ns, &x);
  tens(ws, dn->kernel_output_feature, dn->kernel_input_feature,
       dn->kernel_spatial, ns, &w);
  tens(ys, dn->output_batch, dn->output_feature, dn->output_spatial, ns, &y);
  int64_t N = x.dims[0], C = x.dims[1], O = w.dims[0], Cg = w.dims[1];
  if (C != Cg * G || O % G != 0 || y.dims[1] != O || y.dims[0] != N) {
    ev_fail(ev, i, EVAL_ERR_INVALID, "convolution tensors do not agree");
    return NULL;
  }
  int64_t stride[3], dil[3], lo[3];
  for (int k = 0; k < ns; k++) {
    const WindowDim *wd_ = &ca->window->dims[k];
    stride[k] = wd_->stride > 0 ? wd_->stride : 1;
    dil[k] = wd_->window_dilation > 0 ? wd_->window_dilation : 1;
    lo[k] = wd_->pad_lo;
  }
  double *X = to_double(ev, i, xs, xd), *W = to_double(ev, i, ws, wd),
         *Y = to_double(ev, i, ys, yd);
  EvalValue *out = NULL;
  if (!X || !W || !Y)
    goto done;
  int64_t ospat = 1, kspat = 1;
  for (int k = 0; k < ns; k++)
    ospat *= y.dims[2 + k], kspat *= w.dims[2 + k];
  double *T = kind == CONV_CALL_FORWARD          ? Y
              : kind == CONV_CALL_BACKWARD_INPUT ? X
                                                 : W;
  const Shape *ts = kind == CONV_CALL_FORWARD          ? ys
                    : kind == CONV_CALL_BACKWARD_INPUT ? xs
                                                       : ws;
  memset(T, 0, (size_t)ev_elems(ts) * sizeof *T);
  int64_t OG = O / G;
  bool as_hlo = kind == CONV_CALL_FORWARD || G == 1;
  if (as_hlo) {
    /* The HLO convolution that computes the wanted tensor (the forward one,
     * or the transposed convolution / weight-gradient convolution JAX
     * writes), as XLA's evaluator computes it with an f32 (f64) result, so
     * that a rewritten convolution gives the original's values. */
    Arena *ar = arena_new();
    HloInstr ci = *i;
    ci.op = HLO_CONVOLUTION;
    ci.nops = 2;
    ci.cc = NULL;
    ci.backend_config = NULL;
    ElemType acc = rs->et == ET_F64 ? ET_F64 : ET_F32;
    ci.shape = shape_array(ar, acc, rs->rank, rs->dims);
    if (kind != CONV_CALL_FORWARD)
      ci.conv = gradient_conv(ar, ca, kind, &x, &y, &w, ns);
    EvalValue *r = eval_convolution(ev, &ci, a);
    if (r) {
      for (int64_t e = 0; e < ev_elems(rs); e++)
        T[e] = ev_get_f64(acc, r->data + e * et_bytes(acc));
      ev_unref(ev, r);
    }
    arena_free(ar);
    if (!r)
      goto done;
  }
  for (int64_t nn = 0; nn < N && !as_hlo; nn++)
    for (int64_t o = 0; o < O; o++) {
      int64_t g = o / OG;
      for (int64_t os = 0; os < ospat; os++) {
        int64_t so[3], r = os, yoff = nn * y.str[0] + o * y.str[1];
        for (int k = ns - 1; k >= 0; k--) {
          so[k] = r % y.dims[2 + k];
          r /= y.dims[2 + k];
          yoff += so[k] * y.str[2 + k];
        }
        double acc = 0;
        for (int64_t ks = 0; ks < kspat; ks++) {
          int64_t kk[3], q = ks, woff = o * w.str[0], xoff = nn * x.str[0];
          bool in = true;
          for (int k = ns - 1; k >= 0; k--) {
            kk[k] = q % w.dims[2 + k];
            q /= w.dims[2 + k];
            int64_t pos = so[k] * stride[k] + kk[k] * dil[k] - lo[k];
            in &= pos >= 0 && pos < x.dims[2 + k];
            woff += kk[k] * w.str[2 + k];
            xoff += pos * x.str[2 + k];
          }
          if (!in)
            continue;
          for (int64_t c = 0; c < Cg; c++) {
            int64_t xo = xoff + (g * Cg + c) * x.str[1], wo = woff + c * w.str[1];
            if (kind == CONV_CALL_FORWARD)
              acc += X[xo] * W[wo];
            else if (kind == CONV_CALL_BACKWARD_INPUT)
              X[xo] += Y[yoff] * W[wo];
            else
              W[wo] += X[xo] * Y[yoff];
          }
        }
        if (kind == CONV_CALL_FORWARD)
          Y[yoff] = acc;
      }
    }
  if (kind == CONV_CALL_FORWARD) {
    LibActivation act = cfg.activation == CONV_ACT_RELU         ? LIB_ACT_RELU
                        : cfg.activation == CONV_ACT_GELU_EXACT ? LIB_ACT_GELU_ERF
                                                                : LIB_ACT_NONE;
    if (cfg.activation != CONV_ACT_NONE && act == LIB_ACT_NONE) {
      ev_fail(ev, i, EVAL_ERR_UNSUPPORTED, "convolution activation %s",
              conv_activation_name(cfg.activation));
      goto done;
    }
    bool bias = t == LIBCALL_CUDNN_CONV_BIAS_ACTIVATION_FORWARD ||
                (t == LIBCALL_ONEDNN_CONV && cfg.has_bias);
    int nb = 2 + (bias ? 1 : 0);
    const Shape *bsh = bias && i->nops > 2 ? i->ops[2]->shape : NULL;
    const Shape *ssh = i->nops > nb ? i->ops[nb]->shape : NULL;
    if ((bias && (!bsh || ev_elems(bsh) != O)) ||
        (ssh && !shape_compatible(ssh, ys))) {
      ev_fail(ev, i, EVAL_ERR_INVALID, "convolution bias or side input does not fit");
      goto done;
    }
    int64_t n = ev_elems(ys);
    for (int64_t e = 0; e < n; e++) {
      int64_t o = e / y.str[1] % O;
      double v = cfg.conv_result_scale * Y[e];
      if (ssh && cfg.side_input_scale != 0)
        v += cfg.side_input_scale *
             ev_get_f64(ssh->et, a[nb]->data + e * et_bytes(ssh->et));
      if (bsh)
        v += ev_get_f64(bsh->et, a[2]->data + o * et_bytes(bsh->et));
      Y[e] = lib_activation_apply(act, v);
    }
  }
  out = ev_array_nozero(ev, rs);
  if (out) {
    int64_t n = ev_elems(rs);
    for (int64_t e = 0; e < n; e++)
      ev_set_f64(rs->et, out->data + e * et_bytes(rs->et), T[e]);
  }
done:
  if (X)
    ev_scratch_free(ev, X, (ev_elems(xs) + 1) * 8);
  if (W)
    ev_scratch_free(ev, W, (ev_elems(ws) + 1) * 8);
  if (Y)
    ev_scratch_free(ev, Y, (ev_elems(ys) + 1) * 8);
  return wrap_result(ev, i, out);
}

EvalValue *eval_libcall(Eval *ev, const HloInstr *i, EvalValue *const *a) {
  LibCallTarget t = libcall_target(i);
  if (libcall_is_gemm(t))
    return gemm(ev, i, a);
  return conv(ev, i, a, t);
}
