/*
 * elemental_sas.c - select-and-scatter (max-pool backward) in the elemental
 * emitter, with lib/eval's semantics (XLA's CPU and GPU back ends'), as the
 * value of one output element (an element of the operand's shape):
 *
 *   The interpreter walks the source elements s in row-major order; for
 *   each it scans s's window over the operand (row-major, skipping padding)
 *   keeping `best`, replaced by an element e whenever select(best, e) is
 *   false; then out[best] = scatter(out[best], source[s]), out starting as
 *   the init value everywhere (XLA's evaluator passes scatter's operands
 *   the other way round; its compiled back ends, which jax runs, this way).
 *
 * Output element o therefore is init combined, in row-major order of s,
 * with source[s] for every s whose window holds o and selects it.  Along a
 * dimension, window position w of source index s reads operand index
 * s * stride - pad_lo + w * dilation, so the s whose windows hold o are
 * (o + pad_lo - w * dilation) / stride where that divides and lies in the
 * source; s falls as w rises, so walking w from the last position to the
 * first in every dimension visits them in row-major order of s.  Each
 * candidate's window is rescanned for its selection (window^2 select calls
 * per output element, fine for pooling windows).  Base dilation is refused.
 */
#include "cg_internal.h"

enum { SAS_MAX_RANK = 64 };

static LLVMValueRef sfail(Diag *d, const HloInstr *x, const char *why) {
  diag_error(d, x->loc, "codegen: %s '%s' (%s)", why, hlo_op_name(x->op),
             x->name ? x->name : "?");
  return NULL;
}

static LLVMValueRef alloca_entry(Codegen *cg, LLVMTypeRef t, const char *name) {
  LLVMValueRef fn = LLVMGetBasicBlockParent(LLVMGetInsertBlock(cg->b));
  LLVMBasicBlockRef entry = LLVMGetEntryBasicBlock(fn);
  LLVMBuilderRef tb = LLVMCreateBuilderInContext(cg->ctx);
  LLVMValueRef first = LLVMGetFirstInstruction(entry);
  if (first)
    LLVMPositionBuilderBefore(tb, first);
  else
    LLVMPositionBuilderAtEnd(tb, entry);
  LLVMValueRef a = LLVMBuildAlloca(tb, t, name);
  LLVMDisposeBuilder(tb);
  return a;
}

/* Splits lin (i64) into row-major digits over the window sizes. */
static void digits(Codegen *cg, const WindowDim *wd, int rank, LLVMValueRef lin,
                   LLVMValueRef *out) {
  for (int dm = rank - 1; dm >= 0; dm--) {
    if (wd[dm].size <= 1) {
      out[dm] = cg_const_i64(cg, 0);
      continue;
    }
    LLVMValueRef sz = cg_const_i64(cg, wd[dm].size);
    out[dm] = LLVMBuildURem(cg->b, lin, sz, "");
    lin = LLVMBuildUDiv(cg->b, lin, sz, "");
  }
}

/* Branches to a new block when cond holds; returns the join block. */
static LLVMBasicBlockRef begin_if(Codegen *cg, LLVMValueRef cond, const char *name) {
  LLVMValueRef fn = LLVMGetBasicBlockParent(LLVMGetInsertBlock(cg->b));
  LLVMBasicBlockRef then = LLVMAppendBasicBlockInContext(cg->ctx, fn, name);
  LLVMBasicBlockRef join = LLVMAppendBasicBlockInContext(cg->ctx, fn, "sas.join");
  LLVMBuildCondBr(cg->b, cond, then, join);
  LLVMPositionBuilderAtEnd(cg->b, then);
  return join;
}

static void end_if(Codegen *cg, LLVMBasicBlockRef join) {
  LLVMBuildBr(cg->b, join);
  LLVMPositionBuilderAtEnd(cg->b, join);
}

LLVMValueRef cg_elemental_select_and_scatter(CgElemental *e, Codegen *cg, Diag *d,
                                             const HloInstr *x,
                                             LLVMValueRef const *idx) {
  if (x->nops != 3 || x->ncalled != 2 || !x->window)
    return sfail(d, x, "malformed");
  const Shape *os = x->ops[0]->shape, *ss = x->ops[1]->shape;
  int rank = os->rank;
  if (!shape_is_array(os) || !shape_is_array(ss) || ss->rank != rank ||
      rank > SAS_MAX_RANK || x->window->ndims != rank || !cg_et_supported(os->et))
    return sfail(d, x, "unsupported shapes of");
  const WindowDim *wd = x->window->dims;
  int64_t total = 1;
  for (int dm = 0; dm < rank; dm++) {
    if (wd[dm].base_dilation > 1)
      return sfail(d, x, "base dilation in");
    if (wd[dm].size <= 0)
      total = 0;
    else
      total *= wd[dm].size;
  }
  ElemType et = x->shape->et;
  LLVMBuilderRef b = cg->b;
  LLVMValueRef init = cg_elemental_emit(e, x->ops[2], NULL);
  if (!init)
    return NULL;
  LLVMValueRef acc = alloca_entry(cg, cg_reg_type(cg, et), "sas.acc");
  LLVMValueRef best = alloca_entry(cg, cg_i64(cg), "sas.best");
  LLVMValueRef bestv = alloca_entry(cg, cg_reg_type(cg, os->et), "sas.bestv");
  LLVMBuildStore(b, init, acc);
  if (total == 0)
    return LLVMBuildLoad2(b, cg_reg_type(cg, et), acc, "");
  /* o's row-major linear index over the operand, to compare with best */
  LLVMValueRef olin = NULL;
  for (int dm = 0; dm < rank; dm++)
    olin = olin ? LLVMBuildAdd(b, LLVMBuildMul(b, olin, cg_const_i64(cg, os->dims[dm]), ""),
                               idx[dm], "")
                : idx[dm];
  if (!olin)
    olin = cg_const_i64(cg, 0);
  int mark = cg_elemental_cache_mark(e);
  bool ok = true;

  /* candidates: window positions from last to first */
  CgLoop lc;
  LLVMValueRef t = cg_loop_begin(cg, &lc, cg_const_i64(cg, 0), cg_const_i64(cg, total),
                                 cg_const_i64(cg, 1), "sas.cand");
  LLVMValueRef w[SAS_MAX_RANK], sidx[SAS_MAX_RANK], valid = NULL;
  digits(cg, wd, rank, LLVMBuildSub(b, cg_const_i64(cg, total - 1), t, ""), w);
  for (int dm = 0; dm < rank; dm++) {
    int64_t stride = wd[dm].stride > 0 ? wd[dm].stride : 1;
    int64_t wdil = wd[dm].window_dilation > 0 ? wd[dm].window_dilation : 1;
    LLVMValueRef num = LLVMBuildSub(b, LLVMBuildAdd(b, idx[dm], cg_const_i64(cg, wd[dm].pad_lo), ""),
                                    LLVMBuildMul(b, w[dm], cg_const_i64(cg, wdil), ""), "");
    LLVMValueRef st = cg_const_i64(cg, stride);
    LLVMValueRef c = LLVMBuildICmp(b, LLVMIntSGE, num, cg_const_i64(cg, 0), "");
    if (stride > 1)
      c = LLVMBuildAnd(b, c, LLVMBuildICmp(b, LLVMIntEQ, LLVMBuildSRem(b, num, st, ""),
                                           cg_const_i64(cg, 0), ""), "");
    sidx[dm] = stride > 1 ? LLVMBuildSDiv(b, num, st, "") : num;
    c = LLVMBuildAnd(b, c, LLVMBuildICmp(b, LLVMIntSLT, sidx[dm],
                                         cg_const_i64(cg, ss->dims[dm]), ""), "");
    valid = valid ? LLVMBuildAnd(b, valid, c, "") : c;
  }
  LLVMBasicBlockRef cand_join = begin_if(cg, valid ? valid : LLVMConstInt(
                                             LLVMInt1TypeInContext(cg->ctx), 1, false),
                                         "sas.candidate");
  /* the selection in source element sidx's window */
  LLVMBuildStore(b, cg_const_i64(cg, -1), best);
  CgLoop ls;
  LLVMValueRef u = cg_loop_begin(cg, &ls, cg_const_i64(cg, 0), cg_const_i64(cg, total),
                                 cg_const_i64(cg, 1), "sas.scan");
  LLVMValueRef up[SAS_MAX_RANK], xi[SAS_MAX_RANK], inside = NULL, xlin = NULL;
  digits(cg, wd, rank, u, up);
  for (int dm = 0; dm < rank; dm++) {
    int64_t stride = wd[dm].stride > 0 ? wd[dm].stride : 1;
    int64_t wdil = wd[dm].window_dilation > 0 ? wd[dm].window_dilation : 1;
    LLVMValueRef v = LLVMBuildMul(b, sidx[dm], cg_const_i64(cg, stride), "");
    v = LLVMBuildAdd(b, v, LLVMBuildMul(b, up[dm], cg_const_i64(cg, wdil), ""), "");
    xi[dm] = LLVMBuildSub(b, v, cg_const_i64(cg, wd[dm].pad_lo), "");
    LLVMValueRef c = LLVMBuildAnd(
        b, LLVMBuildICmp(b, LLVMIntSGE, xi[dm], cg_const_i64(cg, 0), ""),
        LLVMBuildICmp(b, LLVMIntSLT, xi[dm], cg_const_i64(cg, os->dims[dm]), ""), "");
    inside = inside ? LLVMBuildAnd(b, inside, c, "") : c;
    xlin = xlin ? LLVMBuildAdd(b, LLVMBuildMul(b, xlin, cg_const_i64(cg, os->dims[dm]), ""),
                               xi[dm], "")
                : xi[dm];
  }
  LLVMBasicBlockRef in_join = begin_if(cg, inside, "sas.inside");
  LLVMValueRef v = cg_elemental_emit(e, x->ops[0], xi);
  ok = v != NULL;
  if (ok) {
    /* the first element inside becomes best; then select(best, v) */
    LLVMValueRef first = LLVMBuildICmp(b, LLVMIntSLT,
                                       LLVMBuildLoad2(b, cg_i64(cg), best, ""),
                                       cg_const_i64(cg, 0), "");
    LLVMValueRef bv = LLVMBuildSelect(b, first, v,
                                      LLVMBuildLoad2(b, cg_reg_type(cg, os->et), bestv, ""), "");
    LLVMValueRef args[2] = {bv, v}, keep;
    ok = cg_emit_scalar_comp(cg, x->called[0], 2, args, &keep, d);
    if (ok) {
      LLVMValueRef take = LLVMBuildOr(b, first, LLVMBuildNot(b, keep, ""), "");
      LLVMValueRef ob = LLVMBuildLoad2(b, cg_i64(cg), best, "");
      LLVMBuildStore(b, LLVMBuildSelect(b, take, xlin ? xlin : cg_const_i64(cg, 0), ob, ""),
                     best);
      LLVMBuildStore(b, LLVMBuildSelect(b, take, v, bv, ""), bestv);
    }
  }
  cg_elemental_cache_reset(e, mark);
  end_if(cg, in_join);
  cg_loop_end(cg, &ls);
  cg_elemental_cache_reset(e, mark);
  if (ok) {
    LLVMValueRef mine = LLVMBuildICmp(b, LLVMIntEQ, LLVMBuildLoad2(b, cg_i64(cg), best, ""),
                                      olin, "");
    LLVMBasicBlockRef mine_join = begin_if(cg, mine, "sas.scatter");
    LLVMValueRef src = cg_elemental_emit(e, x->ops[1], sidx);
    ok = src != NULL;
    if (ok) {
      LLVMValueRef args[2] = {LLVMBuildLoad2(b, cg_reg_type(cg, et), acc, ""), src}, r;
      ok = cg_emit_scalar_comp(cg, x->called[1], 2, args, &r, d);
      if (ok)
        LLVMBuildStore(b, r, acc);
    }
    cg_elemental_cache_reset(e, mark);
    end_if(cg, mine_join);
  }
  cg_elemental_cache_reset(e, mark);
  end_if(cg, cand_join);
  cg_loop_end(cg, &lc);
  cg_elemental_cache_reset(e, mark);
  if (!ok)
    return NULL;
  return LLVMBuildLoad2(b, cg_reg_type(cg, et), acc, "");
}
