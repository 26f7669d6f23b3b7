/*
 * elemental_gather.c - the elemental emitter's gather and
 * dynamic-update-slice, with lib/eval's (XLA's) semantics.
 *
 * Gather, general dimension numbers: the output index splits into batch
 * dimensions (not in offset_dims, in order; they are the indices'
 * dimensions other than index_vector_dim) and offset dimensions (the
 * operand dimensions neither collapsed nor operand batching, in order).
 * The start vector is read from the indices at the batch position, put
 * into operand dimensions by start_index_map; operand batching dimensions
 * take the batch index of their start_indices_batching_dims dimension; each
 * start is clamped to [0, dim - slice size].  The value is the operand at
 * start + offset.  (The indexing analysis only maps the simplified gather,
 * so the general form is computed here directly.)
 *
 * Dynamic-update-slice, out of place: starts clamped to [0, dim - update
 * size]; an output element inside the window is the update's element, any
 * other the operand's (two branches merged by a phi).
 */
#include <string.h>

#include "cg_internal.h"

enum { G_MAX_RANK = 64 };

static LLVMValueRef gfail(Diag *d, const HloInstr *x, const char *why) {
  diag_error(d, x->loc, "codegen: %s '%s' (%s)", why, hlo_op_name(x->op),
             x->name ? x->name : "?");
  return NULL;
}

static bool in_list(const I64List *l, int64_t v) {
  for (int k = 0; k < l->n; k++)
    if (l->v[k] == v)
      return true;
  return false;
}

LLVMValueRef cg_index_to_i64(Codegen *cg, ElemType et, LLVMValueRef v) {
  LLVMBuilderRef b = cg->b;
  LLVMTypeRef i64 = cg_i64(cg);
  if (et == ET_S64)
    return v;
  if (et == ET_U64) {
    /* as ev_get_index: values over INT64_MAX saturate */
    LLVMValueRef big = LLVMBuildICmp(b, LLVMIntSLT, v, cg_const_i64(cg, 0), "");
    return LLVMBuildSelect(b, big, cg_const_i64(cg, INT64_MAX), v, "");
  }
  if (et == ET_PRED || !et_is_signed_int(et))
    return LLVMBuildZExt(b, v, i64, "");
  return LLVMBuildSExt(b, v, i64, "");
}

LLVMValueRef cg_clamp_i64(Codegen *cg, LLVMValueRef v, int64_t lo,
                          int64_t hi) {
  LLVMBuilderRef b = cg->b;
  LLVMValueRef l = cg_const_i64(cg, lo), h = cg_const_i64(cg, hi);
  v = LLVMBuildSelect(b, LLVMBuildICmp(b, LLVMIntSLT, v, l, ""), l, v, "");
  return LLVMBuildSelect(b, LLVMBuildICmp(b, LLVMIntSGT, v, h, ""), h, v, "");
}

/* Checks gather's dimension numbers against its shapes (as lib/eval does)
 * and fills the output's batch dimensions and each operand dimension's
 * offset dimension (-1 when collapsed or batching). */
static bool gather_dims(const HloInstr *x, int64_t *bdims, int *nbatch,
                        int64_t *odim_of_operand) {
  const GatherDnums *g = x->gather;
  if (x->nops != 2 || !g)
    return false;
  const Shape *os = x->ops[0]->shape, *is = x->ops[1]->shape, *s = x->shape;
  const I64List *sizes = &x->gather_slice_sizes;
  if (!shape_is_array(os) || !shape_is_array(is) || os->rank > G_MAX_RANK ||
      is->rank >= G_MAX_RANK || s->rank > G_MAX_RANK || !et_is_int(is->et) ||
      sizes->n != os->rank || s->et != os->et)
    return false;
  int64_t ivd = g->index_vector_dim;
  if (ivd < 0 || ivd > is->rank)
    return false;
  int64_t nvec = ivd < is->rank ? is->dims[ivd] : 1;
  if (nvec != g->start_index_map.n ||
      g->operand_batching_dims.n != g->start_indices_batching_dims.n)
    return false;
  for (int k = 0; k < g->start_index_map.n; k++)
    if (g->start_index_map.v[k] < 0 || g->start_index_map.v[k] >= os->rank)
      return false;
  for (int k = 0; k < os->rank; k++)
    if (sizes->v[k] < 0 || sizes->v[k] > os->dims[k])
      return false;
  for (int k = 0; k < g->operand_batching_dims.n; k++) {
    int64_t od = g->operand_batching_dims.v[k], id = g->start_indices_batching_dims.v[k];
    if (od < 0 || od >= os->rank || id < 0 || id >= is->rank || id == ivd)
      return false;
  }
  int nb = 0, noff = 0;
  for (int dm = 0; dm < s->rank; dm++)
    if (!in_list(&g->offset_dims, dm))
      bdims[nb++] = dm;
  if (nb != is->rank - (ivd < is->rank ? 1 : 0))
    return false;
  for (int dm = 0, j = 0; dm < is->rank; dm++) {
    if (dm == ivd)
      continue;
    if (s->dims[bdims[j++]] != is->dims[dm])
      return false;
  }
  for (int dm = 0; dm < os->rank; dm++) {
    odim_of_operand[dm] = -1;
    if (in_list(&g->collapsed_slice_dims, dm) || in_list(&g->operand_batching_dims, dm))
      continue;
    if (noff >= g->offset_dims.n)
      return false;
    int64_t od = g->offset_dims.v[noff++];
    if (od < 0 || od >= s->rank || s->dims[od] != sizes->v[dm])
      return false;
    odim_of_operand[dm] = od;
  }
  *nbatch = nb;
  return noff == g->offset_dims.n;
}

LLVMValueRef cg_elemental_gather(CgElemental *e, Codegen *cg, Diag *d,
                                 const HloInstr *x, LLVMValueRef const *idx) {
  int64_t bdims[G_MAX_RANK], odim[G_MAX_RANK];
  int nbatch = 0;
  if (!gather_dims(x, bdims, &nbatch, odim))
    return gfail(d, x, "shapes and dimension numbers do not agree in");
  const GatherDnums *g = x->gather;
  const Shape *os = x->ops[0]->shape, *is = x->ops[1]->shape;
  int64_t ivd = g->index_vector_dim;
  LLVMValueRef start[G_MAX_RANK], ii[G_MAX_RANK];
  for (int dm = 0; dm < os->rank; dm++)
    start[dm] = cg_const_i64(cg, 0);
  /* the indices' multi-index at this batch position */
  for (int dm = 0, j = 0; dm < is->rank; dm++)
    if (dm != ivd)
      ii[dm] = idx[bdims[j++]];
  for (int k = 0; k < g->start_index_map.n; k++) {
    if (ivd < is->rank)
      ii[ivd] = cg_const_i64(cg, k);
    LLVMValueRef v = cg_elemental_emit(e, x->ops[1], ii);
    if (!v)
      return NULL;
    start[g->start_index_map.v[k]] = cg_index_to_i64(cg, is->et, v);
  }
  for (int k = 0; k < g->operand_batching_dims.n; k++) {
    int64_t id = g->start_indices_batching_dims.v[k];
    start[g->operand_batching_dims.v[k]] = idx[bdims[id < ivd ? id : id - 1]];
  }
  LLVMValueRef oi[G_MAX_RANK];
  for (int dm = 0; dm < os->rank; dm++) {
    LLVMValueRef s = cg_clamp_i64(cg, start[dm], 0, os->dims[dm] - x->gather_slice_sizes.v[dm]);
    oi[dm] = odim[dm] >= 0 ? LLVMBuildAdd(cg->b, s, idx[odim[dm]], "") : s;
  }
  return cg_elemental_emit(e, x->ops[0], oi);
}

LLVMValueRef cg_elemental_dus(CgElemental *e, Codegen *cg, Diag *d,
                              const HloInstr *x, LLVMValueRef const *idx) {
  if (x->nops < 2)
    return gfail(d, x, "malformed");
  const Shape *s = x->shape, *us = x->ops[1]->shape;
  if (!shape_is_array(us) || us->rank != s->rank || us->et != s->et ||
      s->rank > G_MAX_RANK)
    return gfail(d, x, "update does not match the operand of");
  int n = x->nops - 2;
  bool vector_form = n == 1 && s->rank != 1 && x->ops[2]->shape->rank == 1;
  if (vector_form ? x->ops[2]->shape->dims[0] != s->rank : n != s->rank)
    return gfail(d, x, "bad start indices of");
  bool empty = false;
  for (int k = 0; k < s->rank; k++) {
    if (us->dims[k] > s->dims[k])
      return gfail(d, x, "update larger than the operand of");
    empty = empty || us->dims[k] == 0;
  }
  if (empty)
    return cg_elemental_emit(e, x->ops[0], idx);
  LLVMBuilderRef b = cg->b;
  LLVMValueRef inside = LLVMConstInt(LLVMInt1TypeInContext(cg->ctx), 1, false);
  LLVMValueRef ui[G_MAX_RANK];
  for (int k = 0; k < s->rank; k++) {
    const HloInstr *si = x->ops[vector_form ? 2 : 2 + k];
    if (!shape_is_array(si->shape) || !et_is_int(si->shape->et) ||
        (!vector_form && si->shape->rank != 0))
      return gfail(d, x, "bad start indices of");
    LLVMValueRef at = cg_const_i64(cg, k);
    LLVMValueRef v = cg_elemental_emit(e, si, vector_form ? &at : NULL);
    if (!v)
      return NULL;
    v = cg_clamp_i64(cg, cg_index_to_i64(cg, si->shape->et, v), 0,
                     s->dims[k] - us->dims[k]);
    ui[k] = LLVMBuildSub(b, idx[k], v, "");
    /* unsigned compare: idx - start in [0, update dim) */
    inside = LLVMBuildAnd(b, inside,
                          LLVMBuildICmp(b, LLVMIntULT, ui[k], cg_const_i64(cg, us->dims[k]), ""),
                          "");
  }
  LLVMValueRef fn = LLVMGetBasicBlockParent(LLVMGetInsertBlock(b));
  LLVMBasicBlockRef in_bb = LLVMAppendBasicBlockInContext(cg->ctx, fn, "dus.in");
  LLVMBasicBlockRef out_bb = LLVMAppendBasicBlockInContext(cg->ctx, fn, "dus.out");
  LLVMBasicBlockRef merge = LLVMAppendBasicBlockInContext(cg->ctx, fn, "dus.merge");
  LLVMBuildCondBr(b, inside, in_bb, out_bb);
  int mark = cg_elemental_cache_mark(e);
  LLVMPositionBuilderAtEnd(b, in_bb);
  LLVMValueRef vals[2];
  LLVMBasicBlockRef from[2];
  vals[0] = cg_elemental_emit(e, x->ops[1], ui);
  from[0] = LLVMGetInsertBlock(b);
  LLVMBuildBr(b, merge);
  cg_elemental_cache_reset(e, mark);
  LLVMPositionBuilderAtEnd(b, out_bb);
  vals[1] = vals[0] ? cg_elemental_emit(e, x->ops[0], idx) : NULL;
  from[1] = LLVMGetInsertBlock(b);
  LLVMBuildBr(b, merge);
  cg_elemental_cache_reset(e, mark);
  LLVMPositionBuilderAtEnd(b, merge);
  if (!vals[0] || !vals[1])
    return NULL;
  LLVMValueRef phi = LLVMBuildPhi(b, cg_reg_type(cg, s->et), "");
  LLVMAddIncoming(phi, vals, from, 2);
  return phi;
}
