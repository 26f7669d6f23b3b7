/*
 * conv_rewriter.c - "conv-rewriter" (XLA's GpuConvRewriter and
 * CudnnFusedConvRewriter, for what the libraries take): convolutions become
 * library custom-calls after layout assignment.
 *
 *   convolution(lhs, rhs)  =>  get-tuple-element(custom-call(...), 0)
 *
 * Every call describes the *forward* convolution x * w = y (window,
 * dim_labels, feature_group_count) and computes one of its tensors:
 *   - forward: a convolution without lhs dilation and with the
 *     window no larger than the padded input: x = lhs, w = rhs, y = result;
 *   - backward filter (the weight gradient JAX writes: a window larger than
 *     the result, which is the filter): x = lhs with its batch and feature
 *     roles swapped, y = rhs (the output gradient), w = the result; the
 *     forward stride is the HLO rhs dilation, the forward dilation the HLO
 *     window stride;
 *   - backward input (the input gradient: lhs dilation d, window stride 1):
 *     y = lhs, w = reverse(rhs) with its feature roles swapped, x = the
 *     result; forward stride d, forward low padding (K-1)*dilation - pad_lo.
 * The high padding is what makes the sizes agree; a derived padding below
 * zero, window reversal, batch_group_count > 1, feature groups on a gradient,
 * element types other than f32, f16, bf16, f64 (one type for all three), or
 * more than 3 spatial dimensions keep the convolution (xhloc's own kernel).
 * Every call is checked by the runtime's own lowering (libcall_conv_desc)
 * before it replaces the convolution.
 *
 * On the GPU the three tensors x, w and y are put in one layout, channels
 * last (NHWC for x and y, OHWI for w: batch or output feature outermost, the
 * spatial dims in order, the feature innermost), by layout-changing copies of
 * the operands and of the result where they have another (as XLA's cuDNN
 * layout assignment does).  cuDNN's engines take the tensors' strides but
 * assume one layout: on an H200 with cuDNN 9, an HWIO filter beside an NHWC
 * input, described with its own strides, was read as if it were OHWI.
 *
 * Targets: __cudnn$convForward, __cudnn$convBiasActivationForward,
 * __cudnn$convBackwardInput, __cudnn$convBackwardFilter on the GPU (scratch
 * u8[0]: cuDNN's workspace is the runtime's); __onednn$convolution on the
 * host with conv_kind and has_bias in its config.
 *
 * Forward epilogue, on the convolution's single-user chain: multiply by a
 * broadcast scalar constant (conv_result_scale), add of a broadcast of a
 * vector along the output feature dimension of the result's type (bias),
 * maximum with broadcast zero (kRelu).  On the GPU a ReLU without a bias
 * gets a zero bias (cuDNN's fused call always has one).
 */
#include "passes.h"

#include <string.h>

#include "../lib/hlo/backend_config.h"
#include "../lib/hlo/ir_edit.h"
#include "../lib/runtime/libcall.h"
#include "match_util.h"

typedef enum { K_FWD, K_BWD_INPUT, K_BWD_FILTER } Kind;

static bool conv_type(ElemType t) {
  return t == ET_F32 || t == ET_F16 || t == ET_BF16 || t == ET_F64;
}

static int64_t *copy_dims(Arena *a, const int64_t *v, int n) {
  int64_t *r = ARENA_ARRAY(a, int64_t, n > 0 ? n : 1);
  memcpy(r, v, (size_t)n * sizeof *r);
  return r;
}

/* The forward convolution's window and dim_labels for kind k of conv i;
 * false when a padding would be negative. */
static bool forward_attrs(Arena *a, const HloInstr *i, Kind k, ConvAttrs *out) {
  const ConvDnums *dn = i->conv->dnums;
  const Window *w = i->conv->window;
  int ns = dn->nspatial;
  const Shape *ls = i->ops[0]->shape, *rs = i->ops[1]->shape, *os = i->shape;
  ConvDnums *f = ARENA_NEW(a, ConvDnums);
  Window *fw = ARENA_NEW(a, Window);
  fw->ndims = ns;
  fw->dims = ARENA_ARRAY(a, WindowDim, ns);
  f->nspatial = ns;
  *out = *i->conv;
  out->dnums = f;
  out->window = fw;
  if (k == K_FWD) {
    *out = *i->conv;              /* the same window and dim_labels */
    return true;
  }
  if (k == K_BWD_INPUT) {
    f->input_batch = dn->output_batch, f->input_feature = dn->output_feature;
    f->input_spatial = copy_dims(a, dn->output_spatial, ns);
    f->output_batch = dn->input_batch, f->output_feature = dn->input_feature;
    f->output_spatial = copy_dims(a, dn->input_spatial, ns);
    f->kernel_output_feature = dn->kernel_input_feature;
    f->kernel_input_feature = dn->kernel_output_feature;
    f->kernel_spatial = copy_dims(a, dn->kernel_spatial, ns);
  } else {
    f->input_batch = dn->input_feature, f->input_feature = dn->input_batch;
    f->input_spatial = copy_dims(a, dn->input_spatial, ns);
    f->output_batch = dn->kernel_input_feature;
    f->output_feature = dn->kernel_output_feature;
    f->output_spatial = copy_dims(a, dn->kernel_spatial, ns);
    f->kernel_output_feature = dn->output_feature;
    f->kernel_input_feature = dn->output_batch;
    f->kernel_spatial = copy_dims(a, dn->output_spatial, ns);
  }
  for (int s = 0; s < ns; s++) {
    const WindowDim *h = &w->dims[s];
    WindowDim *d = &fw->dims[s];
    memset(d, 0, sizeof *d);
    d->base_dilation = 1;
    int64_t X, Y, K;
    if (k == K_BWD_INPUT) {
      X = os->dims[dn->output_spatial[s]];
      Y = ls->dims[dn->input_spatial[s]];
      K = rs->dims[dn->kernel_spatial[s]];
      d->stride = h->base_dilation;
      d->window_dilation = h->window_dilation;
      d->pad_lo = (K - 1) * h->window_dilation - h->pad_lo;
    } else {
      X = ls->dims[dn->input_spatial[s]];
      Y = rs->dims[dn->kernel_spatial[s]];
      K = os->dims[dn->output_spatial[s]];
      d->stride = h->window_dilation;
      d->window_dilation = h->stride;
      d->pad_lo = h->pad_lo;
    }
    d->size = K;
    int64_t eff = (K - 1) * d->window_dilation + 1;
    d->pad_hi = (Y - 1) * d->stride + eff - X - d->pad_lo;
    if (d->pad_lo < 0 || d->pad_hi < 0)
      return false;
  }
  return true;
}

static Kind kind_of(const HloInstr *i) {
  const Window *w = i->conv->window;
  const ConvDnums *dn = i->conv->dnums;
  bool lhs_dilated = false, window_larger = false;
  for (int s = 0; s < w->ndims; s++) {
    lhs_dilated |= w->dims[s].base_dilation > 1;
    window_larger |= i->ops[1]->shape->dims[dn->kernel_spatial[s]] >
                     i->shape->dims[dn->output_spatial[s]];
  }
  return lhs_dilated ? K_BWD_INPUT : window_larger ? K_BWD_FILTER : K_FWD;
}

static bool eligible(const HloInstr *i) {
  if (i->op != HLO_CONVOLUTION || i->nops != 2 || !i->conv ||
      !i->conv->window || !i->conv->dnums)
    return false;
  const ConvDnums *dn = i->conv->dnums;
  const Window *w = i->conv->window;
  ElemType t = i->shape->et;
  if (dn->nspatial < 1 || dn->nspatial > CONV_MAX_SPATIAL ||
      w->ndims != dn->nspatial || i->conv->batch_group_count > 1 ||
      !conv_type(t) || i->ops[0]->shape->et != t || i->ops[1]->shape->et != t ||
      shape_is_dynamic(i->shape))
    return false;
  bool lhs_dilated = false;
  for (int s = 0; s < w->ndims; s++) {
    const WindowDim *d = &w->dims[s];
    if (d->reversal || d->pad_lo < 0 || d->pad_hi < 0)
      return false;
    lhs_dilated |= d->base_dilation > 1;
    if (d->base_dilation > 1 && d->stride > 1)
      return false;
  }
  int64_t groups = i->conv->feature_group_count > 1 ? i->conv->feature_group_count : 1;
  return groups == 1 || (!lhs_dilated && kind_of(i) == K_FWD);
}

/* The bias vector of add(x, y) when y broadcasts a vector of the result's
 * type along the output feature dimension. */
static HloInstr *bias_vector(const HloInstr *y, const HloInstr *conv) {
  if (y->op != HLO_BROADCAST || y->nops != 1 || y->dims.n != 1 ||
      y->dims.v[0] != conv->conv->dnums->output_feature)
    return NULL;
  const HloInstr *v = y->ops[0];
  if (v->shape->rank != 1 || v->shape->et != conv->shape->et)
    return NULL;
  return (HloInstr *)v;
}

/* r reverses exactly the kernel's spatial dimensions (keeping the layout). */
static bool reverses_spatial(const HloInstr *r, const ConvDnums *dn) {
  if (r->op != HLO_REVERSE || r->nops != 1 || r->dims.n != dn->nspatial ||
      !shape_equal(r->shape, r->ops[0]->shape))
    return false;
  for (int s = 0; s < dn->nspatial; s++) {
    bool found = false;
    for (int k = 0; k < r->dims.n; k++)
      found |= r->dims.v[k] == dn->kernel_spatial[s];
    if (!found)
      return false;
  }
  return true;
}

/* The channels-last minor_to_major of a tensor whose roles are the dims
 * outer (batch or output feature), spatial[0..ns) and inner (feature). */
static int64_t *channels_last(Arena *a, int64_t outer, const int64_t *spatial, int ns,
                              int64_t inner) {
  int64_t *m2m = ARENA_ARRAY(a, int64_t, ns + 2);
  m2m[0] = inner;
  for (int k = 0; k < ns; k++) m2m[1 + k] = spatial[ns - 1 - k];
  m2m[ns + 1] = outer;
  return m2m;
}

/* s with its array layout's minor_to_major replaced by m2m (the other
 * layout fields kept); s itself when it has that order already. */
static Shape *with_order(Arena *a, Shape *s, const int64_t *m2m) {
  if (s->layout &&
      memcmp(s->layout->minor_to_major, m2m, (size_t)s->rank * sizeof *m2m) == 0)
    return s;
  Shape *r = shape_clone(a, s);
  if (!r->layout) r->layout = layout_default(a, r->rank);
  memcpy(r->layout->minor_to_major, m2m, (size_t)r->rank * sizeof *m2m);
  return r;
}

/* x in the order m2m: x, or a layout-changing copy of it. */
static HloInstr *in_order(IrEdit *e, HloComp *c, HloInstr *x, const int64_t *m2m) {
  Shape *s = with_order(ir_arena(e), x->shape, m2m);
  return s == x->shape ? x : ir_new(e, c, HLO_COPY, s, 1, &x);
}

static bool rewrite(IrEdit *e, HloComp *c, HloInstr *conv, bool gpu, Diag *d) {
  Arena *ar = ir_arena(e);
  Kind k = kind_of(conv);
  ConvAttrs *fa = ARENA_NEW(ar, ConvAttrs);
  if (!forward_attrs(ar, conv, k, fa))
    return false;
  ConvBackendConfig cfg;
  conv_config_default(&cfg);
  HloInstr *ops[4];
  int n = 2;
  HloInstr *out = conv, *rev = NULL;
  if (k == K_FWD) {
    ops[0] = conv->ops[0], ops[1] = conv->ops[1];
    /* The epilogue. */
    HloInstr *bias = NULL;
    for (;;) {
      HloInstr *u = match_sole_user(e, out);
      HloInstr *y = u ? match_other_operand(u, out) : NULL;
      double v;
      if (!u || !y || u->parent != c || !shape_compatible(u->shape, conv->shape))
        break;
      if (u->op == HLO_MULTIPLY && !bias && cfg.activation == CONV_ACT_NONE &&
          match_scalar_constant(y, &v)) {
        cfg.conv_result_scale *= v;
        out = u;
        continue;
      }
      if (u->op == HLO_ADD && !bias && cfg.activation == CONV_ACT_NONE &&
          bias_vector(y, conv)) {
        bias = bias_vector(y, conv);
        out = u;
        continue;
      }
      if (u->op == HLO_MAXIMUM && cfg.activation == CONV_ACT_NONE &&
          match_scalar_constant(y, &v) && v == 0) {
        cfg.activation = CONV_ACT_RELU;
        out = u;
      }
      break;
    }
    if (!bias && gpu && cfg.activation != CONV_ACT_NONE) {
      int64_t o = conv->shape->dims[conv->conv->dnums->output_feature];
      Shape *bs = shape_array(ar, conv->shape->et, 1, &o);
      shape_set_default_layout(ar, bs);
      bias = ir_scalar_like(e, c, bs, 0);
    }
    if (bias) {
      ops[n++] = bias;
      cfg.has_bias = !gpu;
    }
  } else if (k == K_BWD_INPUT) {
    int ns = conv->conv->dnums->nspatial;
    ops[0] = conv->ops[0];
    if (reverses_spatial(conv->ops[1], conv->conv->dnums)) {
      /* JAX's input gradient reverses the filter: the call takes it as is. */
      ops[1] = conv->ops[1]->ops[0];
    } else {
      rev = ir_new(e, c, HLO_REVERSE, conv->ops[1]->shape, 1, &conv->ops[1]);
      rev->dims.n = ns;
      rev->dims.v = copy_dims(ar, conv->conv->dnums->kernel_spatial, ns);
      ops[1] = rev;
    }
    cfg.kind = CONV_CALL_BACKWARD_INPUT;
  } else {
    ops[0] = conv->ops[0], ops[1] = conv->ops[1];
    cfg.kind = CONV_CALL_BACKWARD_FILTER;
  }
  LibCallTarget t = LIBCALL_ONEDNN_CONV;
  if (gpu)
    t = k == K_BWD_INPUT    ? LIBCALL_CUDNN_CONV_BACKWARD_INPUT
        : k == K_BWD_FILTER ? LIBCALL_CUDNN_CONV_BACKWARD_FILTER
        : n > 2             ? LIBCALL_CUDNN_CONV_BIAS_ACTIVATION_FORWARD
                            : LIBCALL_CUDNN_CONV_FORWARD;
  if (gpu)
    cfg.kind = CONV_CALL_FORWARD; /* the target says it */
  Shape *result = conv->shape;
  if (gpu) {
    /* x, w and y channels last; which of them are operands depends on k */
    const ConvDnums *f = fa->dnums;
    int ns = f->nspatial;
    int64_t *xo = channels_last(ar, f->input_batch, f->input_spatial, ns, f->input_feature);
    int64_t *wo = channels_last(ar, f->kernel_output_feature, f->kernel_spatial, ns,
                                f->kernel_input_feature);
    int64_t *yo = channels_last(ar, f->output_batch, f->output_spatial, ns, f->output_feature);
    int64_t *o0 = k == K_BWD_INPUT ? yo : xo, *o1 = k == K_BWD_FILTER ? yo : wo;
    int64_t *ro = k == K_FWD ? yo : k == K_BWD_INPUT ? xo : wo;
    ops[0] = in_order(e, c, ops[0], o0);
    ops[1] = in_order(e, c, ops[1], o1);
    result = with_order(ar, conv->shape, ro);
  }
  int64_t zero = 0;
  Shape *scratch = shape_array(ar, ET_U8, 1, &zero);
  shape_set_default_layout(ar, scratch);
  Shape *elems[2] = {result, scratch};
  HloInstr *call = ir_new(e, c, HLO_CUSTOM_CALL, shape_tuple(ar, 2, elems), n, ops);
  call->cc = ARENA_NEW(ar, CustomCallAttrs);
  call->cc->target = arena_strdup(ar, libcall_target_name(t));
  call->cc->api_version = CC_API_ORIGINAL;
  call->conv = fa;
  call->nprecision = conv->nprecision;
  call->precision = conv->precision;
  call->metadata = conv->metadata;
  StrBuf text;
  sb_init(&text);
  conv_config_print(&text, &cfg);
  call->backend_config = arena_strdup(ar, text.s);
  sb_free(&text);
  /* Only what the runtime's lowering takes replaces the convolution. */
  ConvDesc desc;
  LibSources src;
  Diag why = {0};
  bool ok = libcall_conv_desc(call, &desc, &src, &why);
  diag_clear(&why);
  (void)d;
  if (!ok) {
    ir_remove_dead(e, call);
    return false;
  }
  HloInstr *y = ir_gte(e, c, call, 0);
  if (result != conv->shape) y = ir_new(e, c, HLO_COPY, conv->shape, 1, &y);
  ir_replace(e, out, y);
  return true;
}

bool pass_conv_rewriter(HloModule *m, PassContext *ctx) {
  bool gpu = ctx->target == PASS_TARGET_GPU;
  IrEdit *e = ir_begin(m);
  bool changed = false;
  for (int ci = 0; ci < m->ncomps; ci++) {
    HloComp *c = m->comps[ci];
    if (c->fusion_instr)
      continue;
    for (int k = 0; k < c->ninstrs; k++) {
      HloInstr *i = c->instrs[k];
      if (ir_removed(i) || !eligible(i) || ir_has_control_deps(e, i))
        continue;
      changed |= rewrite(e, c, i, gpu, ctx->diag);
    }
  }
  return ir_end(e, changed);
}
