/*
 * libcall_lower.c - from a library custom-call (backend_config.h) whose
 * shapes have their final layouts to the descriptor the runtime executes
 * (libcall.h), and which operand or result leaf feeds each of its slices.
 *
 * GEMM: each operand's dimensions fall into groups (batch, the
 * non-contracting "rows" or "cols" side, contracting); a group becomes one
 * strided dimension of the [batch, rows, cols] view when its dimensions,
 * taken in the group's order, are nested in memory (each one's stride is
 * the next one's stride times its size; size-1 dimensions are skipped).
 * The contracting group is ordered by lhs_contracting_dimensions on the lhs
 * and by the paired rhs_contracting_dimensions on the rhs, the
 * non-contracting groups by dimension number, the result's dimensions are
 * [batch..., lhs non-contracting..., rhs non-contracting...] as for a dot.
 * A view must be row- or column-major (the innermost dimension belongs to
 * the rows or the cols group).  gemm-rewriter only emits calls that pass;
 * a call from the input that does not is an error naming the operand.
 *
 * Convolution: the call carries the forward convolution's window and
 * dim_labels; each of x, w, y is read through its own layout's strides.
 */
#include "thunks.h"

#include "../hlo/backend_config.h"

#include <string.h>

/* Element strides of every logical dimension of an array shape. */
static void dim_strides(const Shape *s, int64_t *stride) {
  int64_t step = 1;
  for (int k = 0; k < s->rank; k++) {
    int dim = s->layout && s->layout->rank == s->rank
                  ? (int)s->layout->minor_to_major[k]
                  : s->rank - 1 - k;
    stride[dim] = step;
    step *= s->dims[dim];
  }
}

/* Merges dims[0..n) of s (outermost first) into one extent and stride;
 * false when they are not nested in memory. */
static bool merge_group(const Shape *s, const int64_t *stride,
                        const int64_t *dims, int n, int64_t *extent,
                        int64_t *out_stride) {
  int64_t ext = 1, st = 0;
  bool have = false;
  for (int k = n - 1; k >= 0; k--) {
    int64_t size = s->dims[dims[k]];
    if (size == 1)
      continue;
    if (have && stride[dims[k]] != st * ext)
      return false;
    if (!have)
      st = stride[dims[k]];
    have = true;
    ext *= size;
  }
  *extent = ext;
  *out_stride = st;
  return true;
}

/* One operand's view from its batch, row and col dimension groups. */
static bool matrix_view(const Shape *s, const I64List *batch,
                        const int64_t *rows, int nrows, const int64_t *cols,
                        int ncols, GemmMatrix *out) {
  int64_t stride[64];
  if (s->rank > 64 || !shape_is_array(s))
    return false;
  dim_strides(s, stride);
  int64_t bext, bst;
  out->et = s->et;
  if (!merge_group(s, stride, batch->v, batch->n, &bext, &bst) ||
      !merge_group(s, stride, rows, nrows, &out->rows, &out->row_stride) ||
      !merge_group(s, stride, cols, ncols, &out->cols, &out->col_stride))
    return false;
  out->batch_stride = bext > 1 ? bst : 0;
  /* A side of extent 1 has no stride of its own: choose it so the view is
   * row- or column-major with a leading dimension covering the other side. */
  if (out->rows == 1 && out->cols == 1) {
    out->row_stride = out->col_stride = 1;
  } else if (out->rows == 1) {
    out->row_stride = out->col_stride == 1 ? out->cols : 1;
  } else if (out->cols == 1) {
    out->col_stride = out->row_stride == 1 ? out->rows : 1;
  }
  return out->row_stride == 1 || out->col_stride == 1;
}

/* The dimensions of a rank-r operand in none of the lists, ascending. */
static int free_dims(int rank, const I64List *x, const I64List *y,
                     int64_t *out) {
  int n = 0;
  for (int d = 0; d < rank; d++) {
    bool used = false;
    for (int k = 0; k < x->n; k++)
      used |= x->v[k] == d;
    for (int k = 0; k < y->n; k++)
      used |= y->v[k] == d;
    if (!used)
      out[n++] = d;
  }
  return n;
}

static int64_t product(const Shape *s, const int64_t *dims, int n) {
  int64_t p = 1;
  for (int k = 0; k < n; k++)
    p *= s->dims[dims[k]];
  return p;
}

bool libcall_gemm_shapes(const Shape *a, const Shape *b, const Shape *out,
                         const DotDnums *dn, GemmDesc *g, const char **why) {
  static const char *const msgs[] = {
      "the operands are not arrays of rank at most 64",
      "the batch or contracting dimensions do not pair up",
      "the lhs is not a row- or column-major batch of matrices in memory",
      "the rhs is not a row- or column-major batch of matrices in memory",
      "the result is not a row- or column-major batch of matrices in memory",
      "the result's dimensions are not the dot's",
  };
  *why = NULL;
  if (!shape_is_array(a) || !shape_is_array(b) || !shape_is_array(out) ||
      a->rank > 64 || b->rank > 64 || out->rank > 64) {
    *why = msgs[0];
    return false;
  }
  if (dn->lhs_batch.n != dn->rhs_batch.n ||
      dn->lhs_contracting.n != dn->rhs_contracting.n) {
    *why = msgs[1];
    return false;
  }
  for (int k = 0; k < dn->lhs_batch.n; k++)
    if (a->dims[dn->lhs_batch.v[k]] != b->dims[dn->rhs_batch.v[k]]) {
      *why = msgs[1];
      return false;
    }
  for (int k = 0; k < dn->lhs_contracting.n; k++)
    if (a->dims[dn->lhs_contracting.v[k]] != b->dims[dn->rhs_contracting.v[k]]) {
      *why = msgs[1];
      return false;
    }
  int64_t lnc[64], rnc[64];
  int nl = free_dims(a->rank, &dn->lhs_batch, &dn->lhs_contracting, lnc);
  int nr = free_dims(b->rank, &dn->rhs_batch, &dn->rhs_contracting, rnc);
  int nb = dn->lhs_batch.n;
  if (out->rank != nb + nl + nr) {
    *why = msgs[5];
    return false;
  }
  int64_t obatch[64], om[64], on[64];
  for (int k = 0; k < nb; k++)
    obatch[k] = k;
  for (int k = 0; k < nl; k++)
    om[k] = nb + k;
  for (int k = 0; k < nr; k++)
    on[k] = nb + nl + k;
  for (int k = 0; k < nb; k++)
    if (out->dims[k] != a->dims[dn->lhs_batch.v[k]]) {
      *why = msgs[5];
      return false;
    }
  for (int k = 0; k < nl; k++)
    if (out->dims[nb + k] != a->dims[lnc[k]]) {
      *why = msgs[5];
      return false;
    }
  for (int k = 0; k < nr; k++)
    if (out->dims[nb + nl + k] != b->dims[rnc[k]]) {
      *why = msgs[5];
      return false;
    }
  memset(g, 0, sizeof *g);
  g->batch = product(a, dn->lhs_batch.v, nb);
  g->m = product(a, lnc, nl);
  g->n = product(b, rnc, nr);
  g->k = product(a, dn->lhs_contracting.v, dn->lhs_contracting.n);
  I64List ob = {nb, obatch};
  if (!matrix_view(a, &dn->lhs_batch, lnc, nl, dn->lhs_contracting.v,
                   dn->lhs_contracting.n, &g->a)) {
    *why = msgs[2];
    return false;
  }
  if (!matrix_view(b, &dn->rhs_batch, dn->rhs_contracting.v,
                   dn->rhs_contracting.n, rnc, nr, &g->b)) {
    *why = msgs[3];
    return false;
  }
  if (!matrix_view(out, &ob, om, nl, on, nr, &g->d)) {
    *why = msgs[4];
    return false;
  }
  g->alpha_re = 1;
  return true;
}

/* The array leaf k of a call's result (the result itself when it is an
 * array and k == 0). */
static const Shape *result_leaf(const HloInstr *i, int k) {
  if (shape_is_array(i->shape))
    return k == 0 ? i->shape : NULL;
  if (shape_is_tuple(i->shape) && k < i->shape->ntuple &&
      shape_is_array(i->shape->tuple[k]))
    return i->shape->tuple[k];
  return NULL;
}

static void no_sources(LibSources *src) {
  for (int k = 0; k < LIB_MAX_SLICES; k++)
    src->operand[k] = src->result_leaf[k] = -1;
}

/* The workspace: the second leaf of a tuple result, when it has bytes. */
static int64_t workspace_of(const HloInstr *i, LibSources *src, int slot) {
  const Shape *w = result_leaf(i, 1);
  int64_t bytes = w ? shape_byte_size(w) : 0;
  if (bytes > 0)
    src->result_leaf[slot] = 1;
  return bytes > 0 ? bytes : 0;
}

static bool gemm_float_type(ElemType t) {
  return t == ET_F32 || t == ET_F64 || t == ET_F16 || t == ET_BF16 ||
         t == ET_F8E4M3FN || t == ET_F8E5M2;
}

bool libcall_gemm_desc(Arena *ar, const HloInstr *i, GemmDesc *g,
                       LibSources *src, Diag *d) {
  no_sources(src);
  LibCallTarget t = libcall_target(i);
  if (!libcall_is_gemm(t))
    return diag_error(d, i->loc, "'%s' is not a GEMM call", i->name);
  GemmBackendConfig cfg;
  if (!gemm_config_parse(ar, i, &cfg, d))
    return false;
  bool bias = gemm_epilogue_has_bias(cfg.epilogue);
  int need = 2 + (cfg.beta != 0) + bias;
  if (i->nops != need)
    return diag_error(d, i->loc,
                      "%s '%s' has %d operands; with beta %g and epilogue %s "
                      "it takes %d",
                      libcall_target_name(t), i->name, i->nops, cfg.beta,
                      gemm_epilogue_name(cfg.epilogue), need);
  const Shape *out = result_leaf(i, 0);
  if (!out || (shape_is_tuple(i->shape) && i->shape->ntuple > 2))
    return diag_error(d, i->loc,
                      "%s '%s': the result must be an array or a tuple "
                      "(array, workspace)",
                      libcall_target_name(t), i->name);
  const char *why;
  if (!libcall_gemm_shapes(i->ops[0]->shape, i->ops[1]->shape, out, &cfg.dnums,
                           g, &why))
    return diag_error(d, i->loc, "%s '%s': %s", libcall_target_name(t),
                      i->name, why);
  if (!gemm_float_type(g->a.et) || !gemm_float_type(g->b.et) ||
      !gemm_float_type(g->d.et))
    return diag_error(d, i->loc,
                      "%s '%s': element types %s x %s -> %s are not taken by "
                      "the GEMM libraries",
                      libcall_target_name(t), i->name, et_name(g->a.et),
                      et_name(g->b.et), et_name(g->d.et));
  g->alpha_re = cfg.alpha_real;
  g->alpha_im = cfg.alpha_imag;
  g->beta = cfg.beta;
  switch (cfg.epilogue) {
  case GEMM_EPILOGUE_RELU: case GEMM_EPILOGUE_BIAS_RELU:
    g->act = LIB_ACT_RELU;
    break;
  case GEMM_EPILOGUE_GELU: case GEMM_EPILOGUE_BIAS_GELU:
    g->act = LIB_ACT_GELU_TANH;
    break;
  case GEMM_EPILOGUE_GELU_ERF: case GEMM_EPILOGUE_BIAS_GELU_ERF:
    g->act = LIB_ACT_GELU_ERF;
    break;
  default:
    g->act = LIB_ACT_NONE;
  }
  g->allow_tf32 = g->a.et == ET_F32 && cfg.precision[0] == PREC_DEFAULT &&
                  cfg.precision[1] == PREC_DEFAULT;
  src->operand[GEMM_A] = 0;
  src->operand[GEMM_B] = 1;
  src->result_leaf[GEMM_D] = 0;
  int next = 2;
  if (cfg.beta != 0) {
    /* C is read with the result's grouping, in its own layout. */
    const Shape *c = i->ops[next]->shape;
    GemmDesc cd;
    DotDnums same = cfg.dnums;
    if (!shape_compatible(c, out) ||
        !libcall_gemm_shapes(i->ops[0]->shape, i->ops[1]->shape, c, &same, &cd,
                             &why))
      return diag_error(d, i->loc,
                        "%s '%s': the addend (operand %d) must have the "
                        "result's shape and be a row- or column-major matrix "
                        "batch",
                        libcall_target_name(t), i->name, next);
    g->c = cd.d;
    src->operand[GEMM_C] = next++;
  }
  if (bias) {
    const Shape *bs = i->ops[next]->shape;
    if (!shape_is_array(bs) || shape_elements(bs) != g->n)
      return diag_error(d, i->loc,
                        "%s '%s': the bias (operand %d) must have n = %lld "
                        "elements",
                        libcall_target_name(t), i->name, next,
                        (long long)g->n);
    int nontrivial = 0;
    for (int k = 0; k < bs->rank; k++)
      nontrivial += bs->dims[k] > 1;
    if (nontrivial > 1)
      return diag_error(d, i->loc,
                        "%s '%s': the bias (operand %d) must be a vector",
                        libcall_target_name(t), i->name, next);
    g->has_bias = true;
    g->bias_et = bs->et;
    src->operand[GEMM_BIAS] = next++;
  }
  g->workspace_bytes = workspace_of(i, src, GEMM_WORKSPACE);
  return true;
}

/* ---- convolution --------------------------------------------------------- */

static bool conv_tensor(const Shape *s, int64_t d0, int64_t d1,
                        const int64_t *spatial, int ns, ConvTensor *t) {
  int64_t stride[64];
  if (!shape_is_array(s) || s->rank != 2 + ns || s->rank > 64)
    return false;
  dim_strides(s, stride);
  t->et = s->et;
  int64_t dims[2 + CONV_MAX_SPATIAL];
  dims[0] = d0, dims[1] = d1;
  for (int k = 0; k < ns; k++)
    dims[2 + k] = spatial[k];
  for (int k = 0; k < 2 + ns; k++) {
    if (dims[k] < 0 || dims[k] >= s->rank)
      return false;
    t->dims[k] = s->dims[dims[k]];
    t->strides[k] = stride[dims[k]];
  }
  return true;
}

static bool conv_float_type(ElemType t) {
  return t == ET_F32 || t == ET_F64 || t == ET_F16 || t == ET_BF16;
}

bool libcall_conv_desc(const HloInstr *i, ConvDesc *c, LibSources *src,
                       Diag *d) {
  no_sources(src);
  memset(c, 0, sizeof *c);
  LibCallTarget t = libcall_target(i);
  const char *tn = libcall_target_name(t);
  if (!libcall_is_conv(t))
    return diag_error(d, i->loc, "'%s' is not a convolution call", i->name);
  ConvBackendConfig cfg;
  if (!conv_config_parse(i, &cfg, d))
    return false;
  const ConvAttrs *ca = i->conv;
  if (!ca || !ca->window || !ca->dnums)
    return diag_error(d, i->loc, "%s '%s' has no window or dim_labels", tn,
                      i->name);
  const ConvDnums *dn = ca->dnums;
  int ns = dn->nspatial;
  if (ns < 1 || ns > CONV_MAX_SPATIAL || ca->window->ndims != ns)
    return diag_error(d, i->loc,
                      "%s '%s': %d spatial dimensions (the libraries take 1 "
                      "to %d)",
                      tn, i->name, ns, CONV_MAX_SPATIAL);
  if (ca->batch_group_count > 1)
    return diag_error(d, i->loc, "%s '%s': batch_group_count %lld", tn,
                      i->name, (long long)ca->batch_group_count);
  ConvCallKind kind = libcall_conv_kind(t, &cfg);
  c->kind = kind == CONV_CALL_BACKWARD_INPUT    ? CONV_BACKWARD_INPUT
            : kind == CONV_CALL_BACKWARD_FILTER ? CONV_BACKWARD_FILTER
                                                : CONV_FORWARD;
  c->nspatial = ns;
  c->groups = ca->feature_group_count > 0 ? ca->feature_group_count : 1;
  for (int k = 0; k < ns; k++) {
    const WindowDim *w = &ca->window->dims[k];
    if (w->base_dilation > 1 || w->reversal || w->pad_lo < 0 || w->pad_hi < 0)
      return diag_error(d, i->loc,
                        "%s '%s': the window of spatial dimension %d has lhs "
                        "dilation, reversal or negative padding",
                        tn, i->name, k);
    c->stride[k] = w->stride > 0 ? w->stride : 1;
    c->dilation[k] = w->window_dilation > 0 ? w->window_dilation : 1;
    c->pad_lo[k] = w->pad_lo;
    c->pad_hi[k] = w->pad_hi;
  }
  /* Which operand or result leaf holds x, w, y. */
  const Shape *out = result_leaf(i, 0);
  if (!out || (shape_is_tuple(i->shape) && i->shape->ntuple > 2))
    return diag_error(d, i->loc,
                      "%s '%s': the result must be an array or a tuple "
                      "(array, scratch)",
                      tn, i->name);
  const Shape *xs, *ws, *ys;
  int base = 2;
  if (i->nops < 2)
    return diag_error(d, i->loc, "%s '%s' has %d operands", tn, i->name,
                      i->nops);
  switch (c->kind) {
  case CONV_FORWARD:
    xs = i->ops[0]->shape, ws = i->ops[1]->shape, ys = out;
    src->operand[CONV_X] = 0, src->operand[CONV_W] = 1;
    src->result_leaf[CONV_Y] = 0;
    break;
  case CONV_BACKWARD_INPUT:
    ys = i->ops[0]->shape, ws = i->ops[1]->shape, xs = out;
    src->operand[CONV_Y] = 0, src->operand[CONV_W] = 1;
    src->result_leaf[CONV_X] = 0;
    break;
  default:
    xs = i->ops[0]->shape, ys = i->ops[1]->shape, ws = out;
    src->operand[CONV_X] = 0, src->operand[CONV_Y] = 1;
    src->result_leaf[CONV_W] = 0;
    break;
  }
  if (!conv_tensor(xs, dn->input_batch, dn->input_feature, dn->input_spatial,
                   ns, &c->x) ||
      !conv_tensor(ws, dn->kernel_output_feature, dn->kernel_input_feature,
                   dn->kernel_spatial, ns, &c->w) ||
      !conv_tensor(ys, dn->output_batch, dn->output_feature,
                   dn->output_spatial, ns, &c->y))
    return diag_error(d, i->loc,
                      "%s '%s': the operands do not have the ranks its "
                      "dim_labels give",
                      tn, i->name);
  if (!conv_float_type(c->x.et) || c->x.et != c->w.et || c->x.et != c->y.et)
    return diag_error(d, i->loc,
                      "%s '%s': element types %s, %s, %s (the libraries take "
                      "one of f32, f64, f16, bf16 for all three)",
                      tn, i->name, et_name(c->x.et), et_name(c->w.et),
                      et_name(c->y.et));
  c->alpha = cfg.conv_result_scale;
  c->side_scale = cfg.side_input_scale;
  switch (cfg.activation) {
  case CONV_ACT_NONE: c->act = LIB_ACT_NONE; break;
  case CONV_ACT_RELU: c->act = LIB_ACT_RELU; break;
  case CONV_ACT_GELU_EXACT: c->act = LIB_ACT_GELU_ERF; break;
  default:
    return diag_error(d, i->loc, "%s '%s': activation %s is not supported",
                      tn, i->name, conv_activation_name(cfg.activation));
  }
  bool with_bias = t == LIBCALL_CUDNN_CONV_BIAS_ACTIVATION_FORWARD ||
                   (t == LIBCALL_ONEDNN_CONV && cfg.has_bias);
  if (with_bias && c->kind == CONV_FORWARD) {
    if (i->nops <= base)
      return diag_error(d, i->loc, "%s '%s' has no bias operand", tn, i->name);
    const Shape *bs = i->ops[base]->shape;
    if (!shape_is_array(bs) || shape_elements(bs) != c->y.dims[1])
      return diag_error(d, i->loc,
                        "%s '%s': the bias must have one element per output "
                        "feature (%lld)",
                        tn, i->name, (long long)c->y.dims[1]);
    c->has_bias = true;
    c->bias_et = bs->et;
    src->operand[CONV_BIAS] = base++;
  }
  if (c->kind == CONV_FORWARD && i->nops > base) {
    const Shape *ss = i->ops[base]->shape;
    ConvTensor side;
    if (!conv_tensor(ss, dn->output_batch, dn->output_feature,
                     dn->output_spatial, ns, &side) ||
        memcmp(side.dims, c->y.dims, sizeof side.dims) != 0 ||
        memcmp(side.strides, c->y.strides, sizeof side.strides) != 0 ||
        side.et != c->y.et)
      return diag_error(d, i->loc,
                        "%s '%s': the side input must have the result's "
                        "shape and layout",
                        tn, i->name);
    if (c->side_scale != 0)
      src->operand[CONV_SIDE] = base;
    base++;
  } else if (c->kind == CONV_FORWARD) {
    c->side_scale = 0;
  }
  if (i->nops != base)
    return diag_error(d, i->loc, "%s '%s' has %d operands, %d expected", tn,
                      i->name, i->nops, base);
  if (c->kind != CONV_FORWARD) {
    c->alpha = 1;
    c->side_scale = 0;
  }
  c->allow_tf32 = c->x.et == ET_F32;
  for (int k = 0; k < i->nprecision; k++)
    c->allow_tf32 &= i->precision[k] == PREC_DEFAULT;
  c->workspace_bytes = workspace_of(i, src, CONV_WORKSPACE);
  /* The sizes must agree as the forward convolution says. */
  BufSlice any[LIB_MAX_SLICES];
  for (int k = 0; k < LIB_MAX_SLICES; k++)
    any[k] = (BufSlice){src->operand[k] >= 0 || src->result_leaf[k] >= 0 ? 0 : -1,
                        0, INT64_MAX};
  Diag why = {0};
  if (!libcall_check_conv(c, any, &why)) {
    diag_error(d, i->loc, "%s '%s': %s", tn, i->name, why.msg);
    diag_clear(&why);
    return false;
  }
  return true;
}
