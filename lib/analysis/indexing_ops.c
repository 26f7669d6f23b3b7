/*
 * indexing_ops.c - the indexing maps of single instructions (seed 000).
 *
 * Output-to-input: for an element of output `output` of the instruction
 * (dimension variables over the output shape), which elements of each
 * operand it reads.  Input-to-output: for an element of one operand, which
 * elements of each output it contributes to.  Every map is built from the
 * instruction's attributes alone and then simplified; what an opcode does
 * not describe (or an instruction whose attributes do not fit its shapes) is
 * an UNDEFINED map, never an abort.
 *
 * Conventions follow XLA's indexing analysis: reduced, contracted and window
 * dimensions become range variables; dynamic offsets and gather indices
 * become runtime variables whose feasible values are those that keep the
 * slice in bounds (the values the op clamps to); scalar operands of
 * elementwise ops map every output element to "()".
 */
#include "indexing.h"
#include "affine_internal.h"

#include <string.h>

/*
 * Small helpers
 */

static int rank_of(const Shape *s) { return s && shape_is_array(s) ? s->rank : -1; }

int indexing_num_outputs(const HloInstr *i) {
  return i->shape && shape_is_tuple(i->shape) ? i->shape->ntuple : 1;
}

const Shape *indexing_output_shape(const HloInstr *i, int output) {
  if (!i->shape)
    return NULL;
  if (shape_is_tuple(i->shape))
    return output >= 0 && output < i->shape->ntuple ? i->shape->tuple[output]
                                                     : NULL;
  return output == 0 ? i->shape : NULL;
}

static bool is_array(const Shape *s) { return s && shape_is_array(s); }

static const AffExpr **exprs_new(AffCtx *c, int n) {
  return ARENA_ARRAY(aff_ctx_arena(c), const AffExpr *, n + 1);
}

/* (d0, ..., d<rank-1>) -> () over `s`. */
static IndexingMap *scalar_map(AffCtx *c, const Shape *s) {
  return imap_from_sizes(c, s->rank, s->dims, 0, NULL, 0, NULL);
}

/* ()[s0, ..] -> (s0, ..): every element of `s`. */
static IndexingMap *all_elements_map(AffCtx *c, const Shape *s) {
  const AffExpr **r = exprs_new(c, s->rank);
  for (int i = 0; i < s->rank; i++)
    r[i] = aff_sym(c, i);
  return imap_from_sizes(c, 0, NULL, s->rank, s->dims, s->rank, r);
}

static void add(AffCtx *c, InstrIndexing *ii, int k, const IndexingMap *m) {
  imap_set_add(c, &ii->sets[k], imap_simplify(c, m));
}

static InstrIndexing *all_undefined(AffCtx *c, int n) {
  InstrIndexing *ii = instr_indexing_new(c, n);
  for (int k = 0; k < n; k++)
    imap_set_add(c, &ii->sets[k], imap_undefined(c));
  return ii;
}

static bool in_list(const I64List *l, int64_t v) {
  for (int i = 0; i < l->n; i++)
    if (l->v[i] == v)
      return true;
  return false;
}

/* A permutation of [0, n)? */
static bool is_permutation(const I64List *p, int n) {
  if (p->n != n)
    return false;
  for (int i = 0; i < n; i++) {
    if (p->v[i] < 0 || p->v[i] >= n)
      return false;
    for (int j = 0; j < i; j++)
      if (p->v[j] == p->v[i])
        return false;
  }
  return true;
}

static bool dims_in_range(const I64List *l, int rank) {
  for (int i = 0; i < l->n; i++)
    if (l->v[i] < 0 || l->v[i] >= rank)
      return false;
  return true;
}

/*
 * Reshape and bitcast
 */

static const AffExpr *linearize(AffCtx *c, const int64_t *dims, int n,
                                const AffExpr *const *idx) {
  const AffExpr *l = aff_const(c, 0);
  int64_t stride = 1;
  for (int k = n - 1; k >= 0; k--) {
    l = aff_add(c, l, aff_scale(c, idx[k], stride));
    stride = i64_sat_mul(stride, dims[k], NULL);
  }
  return l;
}

static void delinearize(AffCtx *c, const AffExpr *l, const int64_t *dims, int n,
                        const AffExpr **out) {
  int64_t stride = 1;
  for (int k = 0; k < n; k++)
    stride = i64_sat_mul(stride, dims[k], NULL);
  const AffExpr *rem = l;
  for (int k = 0; k < n; k++) {
    stride /= dims[k];
    out[k] = aff_floordiv(c, rem, stride);
    rem = aff_mod(c, rem, stride);
  }
}

IndexingMap *indexing_reshape_map(AffCtx *c, int in_rank, const int64_t *in_dims,
                                  int out_rank, const int64_t *out_dims) {
  const AffExpr **res = exprs_new(c, in_rank);
  bool empty = false;
  for (int k = 0; k < in_rank; k++)
    empty |= in_dims[k] <= 0;
  for (int k = 0; k < out_rank; k++)
    empty |= out_dims[k] <= 0;
  if (empty) {
    for (int k = 0; k < in_rank; k++)
      res[k] = aff_const(c, 0);
    return imap_from_sizes(c, out_rank, out_dims, 0, NULL, in_rank, res);
  }
  /* Walk both shapes, cutting them into the smallest groups of consecutive
   * dimensions with equal element counts; size-1 dimensions between groups
   * are groups of their own (index 0 on the input side). */
  int i = 0, j = 0;
  while (i < in_rank || j < out_rank) {
    if (i < in_rank && in_dims[i] == 1) {
      res[i++] = aff_const(c, 0);
      continue;
    }
    if (j < out_rank && out_dims[j] == 1) {
      j++;
      continue;
    }
    if (i >= in_rank || j >= out_rank)
      return NULL; /* element counts differ */
    int gi = i, gj = j;
    bool ovf = false;
    int64_t pi = in_dims[i++], po = out_dims[j++];
    while (pi != po && !ovf) {
      if (pi < po) {
        if (i >= in_rank)
          return NULL;
        pi = i64_sat_mul(pi, in_dims[i++], &ovf);
      } else {
        if (j >= out_rank)
          return NULL;
        po = i64_sat_mul(po, out_dims[j++], &ovf);
      }
    }
    if (ovf)
      return NULL;
    int ni = i - gi, no = j - gj;
    const AffExpr **od = exprs_new(c, no);
    for (int k = 0; k < no; k++)
      od[k] = aff_dim(c, gj + k);
    if (ni == 1 && no == 1)
      res[gi] = od[0];
    else if (ni == 1)
      res[gi] = linearize(c, out_dims + gj, no, od);
    else if (no == 1)
      delinearize(c, od[0], in_dims + gi, ni, res + gi);
    else
      delinearize(c, linearize(c, out_dims + gj, no, od), in_dims + gi, ni,
                  res + gi);
  }
  return imap_from_sizes(c, out_rank, out_dims, 0, NULL, in_rank, res);
}

/* minor_to_major of s, or the default one. */
static const int64_t *minor_to_major(AffCtx *c, const Shape *s) {
  if (s->layout && s->layout->rank == s->rank && s->layout->minor_to_major)
    return s->layout->minor_to_major;
  int64_t *m = ARENA_ARRAY(aff_ctx_arena(c), int64_t, s->rank + 1);
  for (int k = 0; k < s->rank; k++)
    m[k] = s->rank - 1 - k;
  return m;
}

/* Bitcast: a reshape of the physical (major-to-minor) shapes.  Maps indices
 * of `from` to indices of `to`: the caller passes (output, input) for
 * output-to-input, (input, output) for the reverse. */
static IndexingMap *bitcast_map(AffCtx *c, const Shape *from, const Shape *to) {
  if (shape_elements(from) != shape_elements(to))
    return NULL;
  const int64_t *mf = minor_to_major(c, from), *mt = minor_to_major(c, to);
  int rf = from->rank, rt = to->rank;
  int64_t *pf = ARENA_ARRAY(aff_ctx_arena(c), int64_t, rf + 1);
  int64_t *pt = ARENA_ARRAY(aff_ctx_arena(c), int64_t, rt + 1);
  const AffExpr **phys_idx = exprs_new(c, rf);
  for (int k = 0; k < rf; k++) {
    int64_t d = mf[rf - 1 - k];
    if (d < 0 || d >= rf)
      return NULL;
    pf[k] = from->dims[d];
    phys_idx[k] = aff_dim(c, (int)d);
  }
  for (int k = 0; k < rt; k++) {
    int64_t d = mt[rt - 1 - k];
    if (d < 0 || d >= rt)
      return NULL;
    pt[k] = to->dims[d];
  }
  IndexingMap *r = indexing_reshape_map(c, rt, pt, rf, pf);
  if (!r)
    return NULL;
  const AffExpr **res = exprs_new(c, rt);
  for (int k = 0; k < rt; k++)
    res[mt[rt - 1 - k]] = aff_replace(c, r->results[k], phys_idx, rf, NULL, 0);
  return imap_from_sizes(c, rf, from->dims, 0, NULL, rt, res);
}

/*
 * Output-to-input maps per opcode
 */

static bool elementwise_like(HloOp op) {
  switch (op) {
  case HLO_MAP: case HLO_DOMAIN: case HLO_REDUCE_PRECISION:
    return true;
  default:
    return hlo_op_is_elementwise(op) && op != HLO_BITCAST_CONVERT;
  }
}

static InstrIndexing *elementwise_out_to_in(AffCtx *c, const HloInstr *i,
                                            const Shape *os) {
  InstrIndexing *ii = instr_indexing_new(c, i->nops);
  for (int k = 0; k < i->nops; k++) {
    const Shape *s = i->ops[k]->shape;
    if (rank_of(s) == 0 && os->rank > 0)
      add(c, ii, k, scalar_map(c, os));
    else if (rank_of(s) == os->rank)
      add(c, ii, k, imap_identity(c, os->rank, os->dims));
    else
      imap_set_add(c, &ii->sets[k], imap_undefined(c));
  }
  return ii;
}

static const IndexingMap *bitcast_convert_out_to_in(AffCtx *c,
                                                    const HloInstr *i,
                                                    const Shape *os) {
  const Shape *is = i->ops[0]->shape;
  if (!is_array(is))
    return imap_undefined(c);
  int ri = is->rank, ro = os->rank;
  const AffExpr **r = exprs_new(c, ri);
  if (ri == ro) {
    return imap_identity(c, ro, os->dims);
  } else if (ro == ri + 1) { /* narrower output elements: drop the last dim */
    for (int k = 0; k < ri; k++)
      r[k] = aff_dim(c, k);
    return imap_from_sizes(c, ro, os->dims, 0, NULL, ri, r);
  } else if (ri == ro + 1) { /* wider output elements: a range of inputs */
    for (int k = 0; k < ro; k++)
      r[k] = aff_dim(c, k);
    r[ro] = aff_sym(c, 0);
    return imap_from_sizes(c, ro, os->dims, 1, &is->dims[ro], ri, r);
  }
  return imap_undefined(c);
}

/* An operand element to the result elements of its bits: the same one,
 * the range of narrower ones along the new minor dimension, or the wider
 * one its minor dimension is part of. */
static const IndexingMap *bitcast_convert_in_to_out(AffCtx *c, const Shape *is,
                                                    const Shape *os) {
  int ri = is->rank, ro = os->rank;
  if (ri == ro)
    return imap_identity(c, ri, is->dims);
  const AffExpr **r = exprs_new(c, ro);
  for (int k = 0; k < ro && k < ri; k++)
    r[k] = aff_dim(c, k);
  if (ro == ri + 1) {
    r[ri] = aff_sym(c, 0);
    return imap_from_sizes(c, ri, is->dims, 1, &os->dims[ri], ro, r);
  }
  if (ri == ro + 1)
    return imap_from_sizes(c, ri, is->dims, 0, NULL, ro, r);
  return imap_undefined(c);
}

static const IndexingMap *broadcast_out_to_in(AffCtx *c, const HloInstr *i,
                                              const Shape *os) {
  const Shape *is = i->ops[0]->shape;
  if (!is_array(is) || i->dims.n != is->rank || !dims_in_range(&i->dims, os->rank))
    return imap_undefined(c);
  const AffExpr **r = exprs_new(c, is->rank);
  for (int k = 0; k < is->rank; k++)
    r[k] = aff_dim(c, (int)i->dims.v[k]);
  return imap_from_sizes(c, os->rank, os->dims, 0, NULL, is->rank, r);
}

static const IndexingMap *transpose_out_to_in(AffCtx *c, const HloInstr *i,
                                              const Shape *os) {
  if (!is_permutation(&i->dims, os->rank))
    return imap_undefined(c);
  const AffExpr **r = exprs_new(c, os->rank);
  for (int k = 0; k < os->rank; k++)
    r[i->dims.v[k]] = aff_dim(c, k);
  return imap_from_sizes(c, os->rank, os->dims, 0, NULL, os->rank, r);
}

static const IndexingMap *reverse_map(AffCtx *c, const HloInstr *i,
                                      const Shape *s) {
  if (!dims_in_range(&i->dims, s->rank))
    return imap_undefined(c);
  const AffExpr **r = exprs_new(c, s->rank);
  for (int k = 0; k < s->rank; k++)
    r[k] = in_list(&i->dims, k)
               ? aff_add_const(c, aff_neg(c, aff_dim(c, k)), s->dims[k] - 1)
               : aff_dim(c, k);
  return imap_from_sizes(c, s->rank, s->dims, 0, NULL, s->rank, r);
}

static const IndexingMap *slice_out_to_in(AffCtx *c, const HloInstr *i,
                                          const Shape *os) {
  if (!i->slice)
    return imap_undefined(c);
  const AffExpr **r = exprs_new(c, os->rank);
  for (int k = 0; k < os->rank; k++) {
    if (i->slice[k].stride <= 0)
      return imap_undefined(c);
    r[k] = aff_add_const(c, aff_scale(c, aff_dim(c, k), i->slice[k].stride),
                         i->slice[k].start);
  }
  return imap_from_sizes(c, os->rank, os->dims, 0, NULL, os->rank, r);
}

static const IndexingMap *reshape_out_to_in(AffCtx *c, const Shape *is,
                                            const Shape *os) {
  if (!is_array(is))
    return imap_undefined(c);
  IndexingMap *m = indexing_reshape_map(c, is->rank, is->dims, os->rank, os->dims);
  return m ? m : imap_undefined(c);
}

static const IndexingMap *bitcast_or_undefined(AffCtx *c, const Shape *from,
                                               const Shape *to) {
  if (!is_array(from) || !is_array(to))
    return imap_undefined(c);
  IndexingMap *m = bitcast_map(c, from, to);
  return m ? m : imap_undefined(c);
}

static InstrIndexing *concat_out_to_in(AffCtx *c, const HloInstr *i,
                                       const Shape *os) {
  InstrIndexing *ii = instr_indexing_new(c, i->nops);
  int64_t cat = i->dims.n == 1 ? i->dims.v[0] : -1;
  if (cat < 0 || cat >= os->rank)
    return all_undefined(c, i->nops);
  int64_t offset = 0;
  for (int k = 0; k < i->nops; k++) {
    const Shape *s = i->ops[k]->shape;
    if (rank_of(s) != os->rank)
      return all_undefined(c, i->nops);
    IndexingMap *m = imap_identity(c, os->rank, os->dims);
    m->results[cat] = aff_add_const(c, aff_dim(c, (int)cat), -offset);
    m->dims[cat] = interval(offset, offset + s->dims[cat] - 1);
    add(c, ii, k, m);
    offset += s->dims[cat];
  }
  return ii;
}

static InstrIndexing *dot_out_to_in(AffCtx *c, const HloInstr *i,
                                    const Shape *os) {
  const Shape *ls = i->ops[0]->shape, *rs = i->ops[1]->shape;
  const DotDnums *dn = i->dot;
  if (!dn || !is_array(ls) || !is_array(rs) ||
      dn->lhs_batch.n != dn->rhs_batch.n ||
      dn->lhs_contracting.n != dn->rhs_contracting.n ||
      !dims_in_range(&dn->lhs_batch, ls->rank) ||
      !dims_in_range(&dn->rhs_batch, rs->rank) ||
      !dims_in_range(&dn->lhs_contracting, ls->rank) ||
      !dims_in_range(&dn->rhs_contracting, rs->rank))
    return all_undefined(c, i->nops);
  const AffExpr **le = exprs_new(c, ls->rank), **re = exprs_new(c, rs->rank);
  int out = 0;
  for (int k = 0; k < dn->lhs_batch.n; k++, out++) {
    le[dn->lhs_batch.v[k]] = aff_dim(c, out);
    re[dn->rhs_batch.v[k]] = aff_dim(c, out);
  }
  for (int k = 0; k < ls->rank; k++)
    if (!in_list(&dn->lhs_batch, k) && !in_list(&dn->lhs_contracting, k))
      le[k] = aff_dim(c, out++);
  for (int k = 0; k < rs->rank; k++)
    if (!in_list(&dn->rhs_batch, k) && !in_list(&dn->rhs_contracting, k))
      re[k] = aff_dim(c, out++);
  if (out != os->rank)
    return all_undefined(c, i->nops);
  int nc = dn->lhs_contracting.n;
  int64_t *sizes = ARENA_ARRAY(aff_ctx_arena(c), int64_t, nc + 1);
  for (int k = 0; k < nc; k++) {
    le[dn->lhs_contracting.v[k]] = aff_sym(c, k);
    re[dn->rhs_contracting.v[k]] = aff_sym(c, k);
    sizes[k] = ls->dims[dn->lhs_contracting.v[k]];
  }
  InstrIndexing *ii = instr_indexing_new(c, i->nops);
  add(c, ii, 0, imap_from_sizes(c, os->rank, os->dims, nc, sizes, ls->rank, le));
  add(c, ii, 1, imap_from_sizes(c, os->rank, os->dims, nc, sizes, rs->rank, re));
  for (int k = 2; k < i->nops; k++)
    imap_set_add(c, &ii->sets[k], imap_undefined(c));
  return ii;
}

static InstrIndexing *reduce_out_to_in(AffCtx *c, const HloInstr *i,
                                       const Shape *os) {
  int nin = i->nops / 2;
  const Shape *is = nin ? i->ops[0]->shape : NULL;
  if (!is_array(is) || i->nops % 2 || !dims_in_range(&i->dims, is->rank) ||
      is->rank - i->dims.n != os->rank)
    return all_undefined(c, i->nops);
  const AffExpr **r = exprs_new(c, is->rank);
  int64_t *sizes = ARENA_ARRAY(aff_ctx_arena(c), int64_t, is->rank + 1);
  int nsym = 0, out = 0;
  for (int k = 0; k < is->rank; k++) {
    if (in_list(&i->dims, k)) {
      sizes[nsym] = is->dims[k];
      r[k] = aff_sym(c, nsym++);
    } else {
      r[k] = aff_dim(c, out++);
    }
  }
  InstrIndexing *ii = instr_indexing_new(c, i->nops);
  IndexingMap *in_map = imap_from_sizes(c, os->rank, os->dims, nsym, sizes,
                                        is->rank, r);
  for (int k = 0; k < nin; k++)
    add(c, ii, k, in_map);
  for (int k = nin; k < i->nops; k++)
    add(c, ii, k, scalar_map(c, os));
  return ii;
}

/* Output (of a pad with these sizes) to input: strided where there is
 * interior padding, limited to the positions that hold input elements. */
static IndexingMap *pad_map(AffCtx *c, int rank, const int64_t *out_dims,
                            const PadDim *pad) {
  const AffExpr **r = exprs_new(c, rank);
  IndexingMap *m = imap_from_sizes(c, rank, out_dims, 0, NULL, rank, r);
  for (int k = 0; k < rank; k++) {
    const AffExpr *d = aff_add_const(c, aff_dim(c, k), -pad[k].lo);
    int64_t step = pad[k].interior + 1;
    int64_t lo = pad[k].lo > 0 ? pad[k].lo : 0;
    int64_t hi = out_dims[k] - 1 - (pad[k].hi > 0 ? pad[k].hi : 0);
    m->dims[k] = interval(lo, hi);
    if (step == 1) {
      m->results[k] = d;
    } else {
      m->results[k] = aff_floordiv(c, d, step);
      imap_add_constraint(c, m, aff_mod(c, d, step), interval(0, 0));
    }
  }
  return m;
}

static bool pads_valid(const PadDim *p, int rank) {
  for (int k = 0; k < rank; k++)
    if (p[k].interior < 0)
      return false;
  return true;
}

static InstrIndexing *pad_out_to_in(AffCtx *c, const HloInstr *i,
                                    const Shape *os) {
  if (!i->padding || !pads_valid(i->padding, os->rank) || i->nops != 2)
    return all_undefined(c, i->nops);
  InstrIndexing *ii = instr_indexing_new(c, 2);
  add(c, ii, 0, pad_map(c, os->rank, os->dims, i->padding));
  add(c, ii, 1, scalar_map(c, os));
  return ii;
}

static InstrIndexing *reduce_window_out_to_in(AffCtx *c, const HloInstr *i,
                                              const Shape *os) {
  int nin = i->nops / 2;
  const Shape *is = nin ? i->ops[0]->shape : NULL;
  const Window *w = i->window;
  if (!is_array(is) || i->nops % 2 || !w || w->ndims != is->rank ||
      is->rank != os->rank)
    return all_undefined(c, i->nops);
  int rank = is->rank;
  Arena *a = aff_ctx_arena(c);
  int64_t *padded = ARENA_ARRAY(a, int64_t, rank + 1);
  int64_t *wsize = ARENA_ARRAY(a, int64_t, rank + 1);
  PadDim *pad = ARENA_ARRAY(a, PadDim, rank + 1);
  const AffExpr **r = exprs_new(c, rank);
  for (int k = 0; k < rank; k++) {
    const WindowDim *wd = &w->dims[k];
    if (wd->size <= 0 || wd->stride <= 0 || wd->base_dilation <= 0 ||
        wd->window_dilation <= 0)
      return all_undefined(c, i->nops);
    pad[k].lo = wd->pad_lo;
    pad[k].hi = wd->pad_hi;
    pad[k].interior = wd->base_dilation - 1;
    padded[k] = is->dims[k] + wd->pad_lo + wd->pad_hi +
                (is->dims[k] - 1) * (wd->base_dilation - 1);
    wsize[k] = wd->size;
    r[k] = aff_add(c, aff_scale(c, aff_dim(c, k), wd->stride),
                   aff_scale(c, aff_sym(c, k), wd->window_dilation));
  }
  /* The window over the padded input, then the pad. */
  IndexingMap *window = imap_from_sizes(c, rank, os->dims, rank, wsize, rank, r);
  const IndexingMap *m = imap_compose(c, window, pad_map(c, rank, padded, pad));
  InstrIndexing *ii = instr_indexing_new(c, i->nops);
  for (int k = 0; k < nin; k++)
    add(c, ii, k, m);
  for (int k = nin; k < i->nops; k++)
    add(c, ii, k, scalar_map(c, os));
  return ii;
}

/* The offset operands of dynamic-slice / dynamic-update-slice: one scalar
 * each, or (the old form) one vector.  Returns false if neither fits. */
static bool offsets_ok(const HloInstr *i, int first, int rank) {
  if (i->nops == first + rank) {
    for (int k = 0; k < rank; k++)
      if (rank_of(i->ops[first + k]->shape) != 0)
        return false;
    return true;
  }
  return i->nops == first + 1 && rank_of(i->ops[first]->shape) == 1 &&
         i->ops[first]->shape->dims[0] == rank;
}

/* Runtime variable for the offset along dimension k. */
static const AffExpr *offset_var(AffCtx *c, IndexingMap *m, const HloInstr *i,
                                 int first, int rank, int k, Interval range) {
  if (i->nops == first + rank)
    return imap_add_rt_var(c, m, range, i->ops[first + k], 0, NULL);
  const AffExpr *e = aff_const(c, k);
  return imap_add_rt_var(c, m, range, i->ops[first], 1, &e);
}

static InstrIndexing *dynamic_slice_out_to_in(AffCtx *c, const HloInstr *i,
                                              const Shape *os) {
  const Shape *is = i->nops ? i->ops[0]->shape : NULL;
  if (!is_array(is) || is->rank != os->rank || !offsets_ok(i, 1, os->rank))
    return all_undefined(c, i->nops);
  const AffExpr **r = exprs_new(c, os->rank);
  IndexingMap *m = imap_from_sizes(c, os->rank, os->dims, 0, NULL, os->rank, r);
  for (int k = 0; k < os->rank; k++) {
    const AffExpr *s = offset_var(c, m, i, 1, os->rank, k,
                                  interval(0, is->dims[k] - os->dims[k]));
    m->results[k] = aff_add(c, aff_dim(c, k), s);
  }
  InstrIndexing *ii = instr_indexing_new(c, i->nops);
  add(c, ii, 0, m);
  for (int k = 1; k < i->nops; k++)
    add(c, ii, k, scalar_map(c, os));
  return ii;
}

static InstrIndexing *dus_out_to_in(AffCtx *c, const HloInstr *i,
                                    const Shape *os) {
  const Shape *us = i->nops > 1 ? i->ops[1]->shape : NULL;
  if (!is_array(us) || us->rank != os->rank || rank_of(i->ops[0]->shape) != os->rank ||
      !offsets_ok(i, 2, os->rank))
    return all_undefined(c, i->nops);
  const AffExpr **r = exprs_new(c, os->rank);
  IndexingMap *m = imap_from_sizes(c, os->rank, os->dims, 0, NULL, os->rank, r);
  for (int k = 0; k < os->rank; k++) {
    const AffExpr *s = offset_var(c, m, i, 2, os->rank, k,
                                  interval(0, os->dims[k] - us->dims[k]));
    m->results[k] = aff_sub(c, aff_dim(c, k), s);
  }
  InstrIndexing *ii = instr_indexing_new(c, i->nops);
  add(c, ii, 0, imap_identity(c, os->rank, os->dims));
  add(c, ii, 1, m);
  for (int k = 2; k < i->nops; k++)
    add(c, ii, k, scalar_map(c, os));
  return ii;
}

/* The simplified gather of XLA's GatherSimplifier: indices [N, K] with the
 * index vector last, start_index_map = {0..K-1}, no collapsed or batching
 * dimensions, offset_dims = {1..rank-1}. */
static bool is_simplified_gather(const HloInstr *i, const Shape *os) {
  const GatherDnums *g = i->gather;
  const Shape *ops = i->ops[0]->shape, *ix = i->ops[1]->shape;
  if (!g || !is_array(ops) || rank_of(ix) != 2 || g->index_vector_dim != 1 ||
      g->collapsed_slice_dims.n || g->operand_batching_dims.n ||
      g->start_indices_batching_dims.n ||
      i->gather_slice_sizes.n != ops->rank || os->rank != ops->rank + 1 ||
      g->offset_dims.n != ops->rank || g->start_index_map.n != ix->dims[1] ||
      g->start_index_map.n > ops->rank)
    return false;
  for (int k = 0; k < g->start_index_map.n; k++)
    if (g->start_index_map.v[k] != k)
      return false;
  for (int k = 0; k < g->offset_dims.n; k++)
    if (g->offset_dims.v[k] != k + 1)
      return false;
  return true;
}

static InstrIndexing *gather_out_to_in(AffCtx *c, const HloInstr *i,
                                       const Shape *os) {
  if (i->nops != 2 || !is_simplified_gather(i, os))
    return all_undefined(c, i->nops);
  const Shape *ops = i->ops[0]->shape;
  int64_t nidx = i->ops[1]->shape->dims[1];
  const AffExpr **r = exprs_new(c, ops->rank);
  IndexingMap *m = imap_from_sizes(c, os->rank, os->dims, 0, NULL, ops->rank, r);
  for (int k = 0; k < ops->rank; k++) {
    m->results[k] = aff_dim(c, k + 1);
    if (k >= nidx)
      continue;
    const AffExpr *acc[2] = {aff_dim(c, 0), aff_const(c, k)};
    Interval feasible = interval(0, ops->dims[k] - i->gather_slice_sizes.v[k]);
    const AffExpr *s = imap_add_rt_var(c, m, feasible, i->ops[1], 2, acc);
    m->results[k] = aff_add(c, m->results[k], s);
  }
  const AffExpr *ir[2] = {aff_dim(c, 0), aff_sym(c, 0)};
  InstrIndexing *ii = instr_indexing_new(c, 2);
  add(c, ii, 0, m);
  add(c, ii, 1, imap_from_sizes(c, os->rank, os->dims, 1, &nidx, 2, ir));
  return ii;
}

static InstrIndexing *sort_out_to_in(AffCtx *c, const HloInstr *i,
                                     const Shape *os) {
  int64_t dim = i->dims.n == 1 ? i->dims.v[0] : -1;
  if (dim < 0 || dim >= os->rank)
    return all_undefined(c, i->nops);
  InstrIndexing *ii = instr_indexing_new(c, i->nops);
  for (int k = 0; k < i->nops; k++) {
    if (rank_of(i->ops[k]->shape) != os->rank) {
      imap_set_add(c, &ii->sets[k], imap_undefined(c));
      continue;
    }
    const AffExpr **r = exprs_new(c, os->rank);
    for (int d = 0; d < os->rank; d++)
      r[d] = d == dim ? aff_sym(c, 0) : aff_dim(c, d);
    add(c, ii, k, imap_from_sizes(c, os->rank, os->dims, 1, &os->dims[dim],
                                  os->rank, r));
  }
  return ii;
}

/* Fusion and call: compose through the called computation. */
static InstrIndexing *called_out_to_in(AffCtx *c, const HloInstr *i, int output) {
  if (i->ncalled < 1 || !i->called[0])
    return all_undefined(c, i->nops);
  const HloComp *comp = i->called[0];
  CompIndexing *ci = indexing_comp_out_to_in(c, comp, output);
  InstrIndexing *ii = instr_indexing_new(c, i->nops);
  for (int k = 0; k < comp->ninstrs; k++) {
    const HloInstr *p = comp->instrs[k];
    if (p->op != HLO_PARAMETER || p->param_number < 0 || p->param_number >= i->nops)
      continue;
    const IndexingMapSet *s = comp_indexing_get(ci, p, 0);
    for (int j = 0; s && j < s->n; j++)
      imap_set_add(c, &ii->sets[p->param_number], s->maps[j]);
  }
  return ii;
}

static InstrIndexing *out_to_in_dispatch(AffCtx *c, const HloInstr *i,
                                         int output) {
  const Shape *os = indexing_output_shape(i, output);
  if (i->nops == 0)
    return instr_indexing_new(c, 0);
  if (i->op == HLO_FUSION || i->op == HLO_CALL)
    return called_out_to_in(c, i, output);
  if (i->op == HLO_TUPLE) {
    InstrIndexing *ii = instr_indexing_new(c, i->nops);
    if (output < i->nops && is_array(os))
      add(c, ii, output, imap_identity(c, os->rank, os->dims));
    else if (output < i->nops)
      imap_set_add(c, &ii->sets[output], imap_undefined(c));
    return ii;
  }
  if (!is_array(os))
    return all_undefined(c, i->nops);
  InstrIndexing *ii;
  const IndexingMap *m = NULL;
  switch (i->op) {
  case HLO_GET_TUPLE_ELEMENT:
    m = imap_identity(c, os->rank, os->dims);
    break;
  case HLO_BITCAST_CONVERT:
    m = bitcast_convert_out_to_in(c, i, os);
    break;
  case HLO_BROADCAST:
    m = broadcast_out_to_in(c, i, os);
    break;
  case HLO_TRANSPOSE:
    m = transpose_out_to_in(c, i, os);
    break;
  case HLO_REVERSE:
    m = reverse_map(c, i, os);
    break;
  case HLO_SLICE:
    m = slice_out_to_in(c, i, os);
    break;
  case HLO_RESHAPE:
    m = reshape_out_to_in(c, i->ops[0]->shape, os);
    break;
  case HLO_BITCAST:
    m = bitcast_or_undefined(c, os, i->ops[0]->shape);
    break;
  case HLO_CONCATENATE:
    return concat_out_to_in(c, i, os);
  case HLO_DOT:
    return i->nops == 2 ? dot_out_to_in(c, i, os) : all_undefined(c, i->nops);
  case HLO_REDUCE:
    return reduce_out_to_in(c, i, os);
  case HLO_PAD:
    return pad_out_to_in(c, i, os);
  case HLO_REDUCE_WINDOW:
    return reduce_window_out_to_in(c, i, os);
  case HLO_DYNAMIC_SLICE:
    return dynamic_slice_out_to_in(c, i, os);
  case HLO_DYNAMIC_UPDATE_SLICE:
    return dus_out_to_in(c, i, os);
  case HLO_GATHER:
    return gather_out_to_in(c, i, os);
  case HLO_SORT:
    return sort_out_to_in(c, i, os);
  default:
    if (elementwise_like(i->op))
      return elementwise_out_to_in(c, i, os);
    return all_undefined(c, i->nops);
  }
  ii = instr_indexing_new(c, i->nops);
  add(c, ii, 0, m);
  for (int k = 1; k < i->nops; k++)
    imap_set_add(c, &ii->sets[k], imap_undefined(c));
  return ii;
}

/* Maps built while a coefficient overflowed are not exact: they become
 * UNDEFINED.  The flag is restored to what the caller had. */
static InstrIndexing *guard_overflow(AffCtx *c, InstrIndexing *ii, bool before) {
  if (aff_ctx_overflowed(c))
    ii = all_undefined(c, ii->n);
  aff_ctx_clear_overflow(c);
  if (before)
    *aff_ctx_overflow_flag(c) = true;
  return ii;
}

InstrIndexing *indexing_out_to_in(AffCtx *c, const HloInstr *i, int output) {
  bool before = aff_ctx_overflowed(c);
  aff_ctx_clear_overflow(c);
  return guard_overflow(c, out_to_in_dispatch(c, i, output), before);
}

/*
 * Input-to-output maps per opcode
 */

static const IndexingMap *broadcast_in_to_out(AffCtx *c, const HloInstr *i,
                                              const Shape *is, const Shape *os) {
  if (i->dims.n != is->rank || !dims_in_range(&i->dims, os->rank))
    return imap_undefined(c);
  const AffExpr **r = exprs_new(c, os->rank);
  int64_t *sizes = ARENA_ARRAY(aff_ctx_arena(c), int64_t, os->rank + 1);
  int nsym = 0;
  for (int k = 0; k < os->rank; k++) {
    int src = -1;
    for (int j = 0; j < i->dims.n; j++)
      if (i->dims.v[j] == k)
        src = j;
    if (src >= 0) {
      r[k] = aff_dim(c, src);
    } else {
      sizes[nsym] = os->dims[k];
      r[k] = aff_sym(c, nsym++);
    }
  }
  return imap_from_sizes(c, is->rank, is->dims, nsym, sizes, os->rank, r);
}

static const IndexingMap *transpose_in_to_out(AffCtx *c, const HloInstr *i,
                                              const Shape *is) {
  if (!is_permutation(&i->dims, is->rank))
    return imap_undefined(c);
  const AffExpr **r = exprs_new(c, is->rank);
  for (int k = 0; k < is->rank; k++)
    r[k] = aff_dim(c, (int)i->dims.v[k]);
  return imap_from_sizes(c, is->rank, is->dims, 0, NULL, is->rank, r);
}

static const IndexingMap *slice_in_to_out(AffCtx *c, const HloInstr *i,
                                          const Shape *is, const Shape *os) {
  if (!i->slice || is->rank != os->rank)
    return imap_undefined(c);
  const AffExpr **r = exprs_new(c, os->rank);
  IndexingMap *m = imap_from_sizes(c, is->rank, is->dims, 0, NULL, os->rank, r);
  for (int k = 0; k < os->rank; k++) {
    const SliceDim *sd = &i->slice[k];
    if (sd->stride <= 0)
      return imap_undefined(c);
    const AffExpr *d = aff_add_const(c, aff_dim(c, k), -sd->start);
    m->results[k] = aff_floordiv(c, d, sd->stride);
    m->dims[k] = interval_intersect(
        m->dims[k], interval(sd->start, sd->start + (os->dims[k] - 1) * sd->stride));
    if (sd->stride > 1)
      imap_add_constraint(c, m, aff_mod(c, d, sd->stride), interval(0, 0));
  }
  return m;
}

static const IndexingMap *concat_in_to_out(AffCtx *c, const HloInstr *i,
                                           int operand, const Shape *is) {
  int64_t cat = i->dims.n == 1 ? i->dims.v[0] : -1;
  if (cat < 0 || cat >= is->rank)
    return imap_undefined(c);
  int64_t offset = 0;
  for (int k = 0; k < operand; k++) {
    if (rank_of(i->ops[k]->shape) != is->rank)
      return imap_undefined(c);
    offset += i->ops[k]->shape->dims[cat];
  }
  IndexingMap *m = imap_identity(c, is->rank, is->dims);
  m->results[cat] = aff_add_const(c, aff_dim(c, (int)cat), offset);
  return m;
}

static const IndexingMap *dot_in_to_out(AffCtx *c, const HloInstr *i,
                                        int operand, const Shape *os) {
  const DotDnums *dn = i->dot;
  const Shape *ls = i->ops[0]->shape, *rs = i->ops[1]->shape;
  if (!dn || !is_array(ls) || !is_array(rs) ||
      dn->lhs_batch.n != dn->rhs_batch.n ||
      !dims_in_range(&dn->lhs_batch, ls->rank) ||
      !dims_in_range(&dn->rhs_batch, rs->rank))
    return imap_undefined(c);
  const Shape *is = operand == 0 ? ls : rs, *other = operand == 0 ? rs : ls;
  const I64List *batch = operand == 0 ? &dn->lhs_batch : &dn->rhs_batch;
  const I64List *contr = operand == 0 ? &dn->lhs_contracting : &dn->rhs_contracting;
  const I64List *obatch = operand == 0 ? &dn->rhs_batch : &dn->lhs_batch;
  const I64List *ocontr = operand == 0 ? &dn->rhs_contracting : &dn->lhs_contracting;
  const AffExpr **r = exprs_new(c, os->rank);
  int64_t *sizes = ARENA_ARRAY(aff_ctx_arena(c), int64_t, os->rank + 1);
  int out = 0, nsym = 0;
  for (int k = 0; k < batch->n; k++)
    r[out++] = aff_dim(c, (int)batch->v[k]);
  /* Free dims of lhs, then of rhs: ours are dims, the other's symbols. */
  for (int side = 0; side < 2; side++) {
    bool ours = (side == 0) == (operand == 0);
    const Shape *s = ours ? is : other;
    for (int k = 0; k < s->rank; k++) {
      bool free = ours ? !in_list(batch, k) && !in_list(contr, k)
                       : !in_list(obatch, k) && !in_list(ocontr, k);
      if (!free)
        continue;
      if (out >= os->rank)
        return imap_undefined(c);
      if (ours) {
        r[out++] = aff_dim(c, k);
      } else {
        sizes[nsym] = s->dims[k];
        r[out++] = aff_sym(c, nsym++);
      }
    }
  }
  if (out != os->rank)
    return imap_undefined(c);
  return imap_from_sizes(c, is->rank, is->dims, nsym, sizes, os->rank, r);
}

static const IndexingMap *reduce_in_to_out(AffCtx *c, const HloInstr *i,
                                           int operand, const Shape *is,
                                           const Shape *os) {
  int nin = i->nops / 2;
  if (operand >= nin)
    return all_elements_map(c, os);
  if (!dims_in_range(&i->dims, is->rank) || is->rank - i->dims.n != os->rank)
    return imap_undefined(c);
  const AffExpr **r = exprs_new(c, os->rank);
  int out = 0;
  for (int k = 0; k < is->rank; k++)
    if (!in_list(&i->dims, k))
      r[out++] = aff_dim(c, k);
  return imap_from_sizes(c, is->rank, is->dims, 0, NULL, os->rank, r);
}

static const IndexingMap *pad_in_to_out(AffCtx *c, const HloInstr *i,
                                        const Shape *is, const Shape *os) {
  if (!i->padding || !pads_valid(i->padding, os->rank) || is->rank != os->rank)
    return imap_undefined(c);
  const AffExpr **r = exprs_new(c, os->rank);
  IndexingMap *m = imap_from_sizes(c, is->rank, is->dims, 0, NULL, os->rank, r);
  for (int k = 0; k < os->rank; k++) {
    const PadDim *p = &i->padding[k];
    int64_t step = p->interior + 1;
    m->results[k] = aff_add_const(c, aff_scale(c, aff_dim(c, k), step), p->lo);
    /* Input elements that land inside the output (negative padding crops). */
    Interval keep = interval(i64_ceildiv(-p->lo, step),
                             i64_floordiv(os->dims[k] - 1 - p->lo, step));
    m->dims[k] = interval_intersect(m->dims[k], keep);
  }
  return m;
}

static const IndexingMap *dynamic_slice_in_to_out(AffCtx *c, const HloInstr *i,
                                                  const Shape *is,
                                                  const Shape *os) {
  if (is->rank != os->rank || !offsets_ok(i, 1, os->rank))
    return imap_undefined(c);
  const AffExpr **r = exprs_new(c, os->rank);
  IndexingMap *m = imap_from_sizes(c, is->rank, is->dims, 0, NULL, os->rank, r);
  for (int k = 0; k < os->rank; k++) {
    const AffExpr *s = offset_var(c, m, i, 1, os->rank, k,
                                  interval(0, is->dims[k] - os->dims[k]));
    m->results[k] = aff_sub(c, aff_dim(c, k), s);
    imap_add_constraint(c, m, m->results[k], interval(0, os->dims[k] - 1));
  }
  return m;
}

static const IndexingMap *dus_update_in_to_out(AffCtx *c, const HloInstr *i,
                                               const Shape *us,
                                               const Shape *os) {
  if (us->rank != os->rank || !offsets_ok(i, 2, os->rank))
    return imap_undefined(c);
  const AffExpr **r = exprs_new(c, os->rank);
  IndexingMap *m = imap_from_sizes(c, us->rank, us->dims, 0, NULL, os->rank, r);
  for (int k = 0; k < os->rank; k++) {
    const AffExpr *s = offset_var(c, m, i, 2, os->rank, k,
                                  interval(0, os->dims[k] - us->dims[k]));
    m->results[k] = aff_add(c, aff_dim(c, k), s);
  }
  return m;
}

static InstrIndexing *in_to_out_dispatch(AffCtx *c, const HloInstr *i,
                                         int operand) {
  int nout = indexing_num_outputs(i);
  if (operand < 0 || operand >= i->nops)
    return instr_indexing_new(c, nout);
  if (i->op == HLO_FUSION || i->op == HLO_CALL) {
    if (i->ncalled < 1 || !i->called[0])
      return all_undefined(c, nout);
    return indexing_comp_in_to_out(c, i->called[0], operand);
  }
  const Shape *is = i->ops[operand]->shape;
  if (i->op == HLO_TUPLE) {
    InstrIndexing *ii = instr_indexing_new(c, nout);
    if (operand < nout && is_array(is))
      add(c, ii, operand, imap_identity(c, is->rank, is->dims));
    else if (operand < nout)
      imap_set_add(c, &ii->sets[operand], imap_undefined(c));
    return ii;
  }
  InstrIndexing *ii = instr_indexing_new(c, nout);
  for (int t = 0; t < nout; t++) {
    const Shape *os = indexing_output_shape(i, t);
    const IndexingMap *m = NULL;
    if (!is_array(os)) {
      m = imap_undefined(c);
    } else if (i->op == HLO_GET_TUPLE_ELEMENT) {
      m = imap_identity(c, os->rank, os->dims);
    } else if (!is_array(is)) {
      m = imap_undefined(c);
    } else {
      switch (i->op) {
      case HLO_BROADCAST:
        m = broadcast_in_to_out(c, i, is, os);
        break;
      case HLO_TRANSPOSE:
        m = transpose_in_to_out(c, i, is);
        break;
      case HLO_REVERSE:
        m = reverse_map(c, i, is);
        break;
      case HLO_SLICE:
        m = slice_in_to_out(c, i, is, os);
        break;
      case HLO_RESHAPE:
        m = reshape_out_to_in(c, os, is);
        break;
      case HLO_BITCAST:
        m = bitcast_or_undefined(c, is, os);
        break;
      case HLO_CONCATENATE:
        m = concat_in_to_out(c, i, operand, is);
        break;
      case HLO_DOT:
        m = operand < 2 && i->nops == 2 ? dot_in_to_out(c, i, operand, os)
                                        : imap_undefined(c);
        break;
      case HLO_REDUCE:
        m = reduce_in_to_out(c, i, operand, is, os);
        break;
      case HLO_PAD:
        m = operand == 0 ? pad_in_to_out(c, i, is, os) : all_elements_map(c, os);
        break;
      case HLO_DYNAMIC_SLICE:
        m = operand == 0 ? dynamic_slice_in_to_out(c, i, is, os)
                         : all_elements_map(c, os);
        break;
      case HLO_DYNAMIC_UPDATE_SLICE:
        /* The operand maps to itself (over-approximating: the updated window
         * is overwritten); the update lands at the offsets. */
        if (operand == 0)
          m = is->rank == os->rank ? imap_identity(c, is->rank, is->dims)
                                   : imap_undefined(c);
        else if (operand == 1)
          m = dus_update_in_to_out(c, i, is, os);
        else
          m = all_elements_map(c, os);
        break;
      case HLO_BITCAST_CONVERT:
        m = bitcast_convert_in_to_out(c, is, os);
        break;
      default:
        if (elementwise_like(i->op)) {
          if (is->rank == 0 && os->rank > 0)
            m = all_elements_map(c, os);
          else if (is->rank == os->rank)
            m = imap_identity(c, is->rank, is->dims);
          else
            m = imap_undefined(c);
        } else {
          m = imap_undefined(c);
        }
      }
    }
    add(c, ii, t, m);
  }
  return ii;
}

InstrIndexing *indexing_in_to_out(AffCtx *c, const HloInstr *i, int operand) {
  bool before = aff_ctx_overflowed(c);
  aff_ctx_clear_overflow(c);
  InstrIndexing *ii = in_to_out_dispatch(c, i, operand);
  return guard_overflow(c, ii, before);
}
