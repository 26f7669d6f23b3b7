/*
 * elemental_window.c - the elemental emitter's reduce-window, with
 * lib/eval's (XLA's) semantics: an output element starts from the init
 * values and combines, with the reducer (to_apply), the operands' elements
 * at every window position in row-major order of the window, skipping the
 * positions that fall into padding or between base-dilated elements.
 *
 * Along each dimension, window position w of output index o reads the
 * (base-dilated, padded) input at
 *   x = o * stride - pad_lo + w * window_dilation;
 * with base dilation b it is an input element only when x % b == 0, at
 * x / b, and only when that lies in [0, dim).  The window positions are one
 * counted loop (per output element) split into per-dimension digits; a
 * position outside the input branches around the reducer.  Variadic
 * reduce-window (several operands, a tuple result) returns result `which`.
 */
#include <stdlib.h>

#include "cg_internal.h"

enum { W_MAX_RANK = 64, W_MAX_INPUTS = 16 };

static LLVMValueRef wfail(Diag *d, const HloInstr *x, const char *why) {
  diag_error(d, x->loc, "codegen: %s '%s' (%s)", why, hlo_op_name(x->op),
             x->name ? x->name : "?");
  return NULL;
}

/* An alloca of type t in the function's entry block (promoted to registers
 * by the optimizer). */
static LLVMValueRef entry_alloca(Codegen *cg, LLVMTypeRef t) {
  LLVMValueRef fn = LLVMGetBasicBlockParent(LLVMGetInsertBlock(cg->b));
  LLVMBasicBlockRef entry = LLVMGetEntryBasicBlock(fn);
  LLVMBuilderRef tb = LLVMCreateBuilderInContext(cg->ctx);
  LLVMValueRef first = LLVMGetFirstInstruction(entry);
  if (first)
    LLVMPositionBuilderBefore(tb, first);
  else
    LLVMPositionBuilderAtEnd(tb, entry);
  LLVMValueRef a = LLVMBuildAlloca(tb, t, "rw.acc");
  LLVMDisposeBuilder(tb);
  return a;
}

/* Element type of result k of x (a tuple for variadic reduce-window). */
static ElemType result_et(const HloInstr *x, int k, int n) {
  const Shape *s = x->shape;
  if (s->et == ET_TUPLE)
    return k < s->ntuple && s->tuple[k] ? s->tuple[k]->et : ET_TUPLE;
  return n == 1 ? s->et : ET_TUPLE;
}

/* Whether window dimension k can never leave the input for any output
 * index (no padding reached, no base dilation): no check needed. */
static bool always_inside(const WindowDim *wd, int64_t odim, int64_t idim) {
  int64_t stride = wd->stride > 0 ? wd->stride : 1;
  int64_t wdil = wd->window_dilation > 0 ? wd->window_dilation : 1;
  if (wd->base_dilation > 1 || wd->pad_lo > 0 || odim <= 0 || wd->size <= 0)
    return false;
  int64_t last = (odim - 1) * stride - wd->pad_lo + (wd->size - 1) * wdil;
  return last < idim;
}

LLVMValueRef cg_elemental_reduce_window(CgElemental *e, Codegen *cg, Diag *d,
                                        const HloInstr *x, int which,
                                        LLVMValueRef const *idx) {
  int n = x->nops / 2;
  if (n < 1 || x->nops != 2 * n || x->ncalled != 1 || !x->window)
    return wfail(d, x, "malformed");
  if (n > W_MAX_INPUTS)
    return wfail(d, x, "too many operands in");
  if (which < 0 || which >= n)
    return wfail(d, x, "bad tuple index into");
  const Shape *in = x->ops[0]->shape;
  if (!shape_is_array(in) || in->rank > W_MAX_RANK || x->window->ndims != in->rank)
    return wfail(d, x, "unsupported operand shape or window of");
  const Shape *os = x->shape->et == ET_TUPLE ? x->shape->tuple[0] : x->shape;
  if (!os || !shape_is_array(os) || os->rank != in->rank)
    return wfail(d, x, "unsupported result shape of");
  ElemType ets[W_MAX_INPUTS];
  for (int k = 0; k < n; k++) {
    const Shape *ks = x->ops[k]->shape;
    ets[k] = result_et(x, k, n);
    if (!shape_is_array(ks) || ks->rank != in->rank || !cg_et_supported(ks->et) ||
        !cg_et_supported(ets[k]))
      return wfail(d, x, "unsupported operand or result type in");
    for (int dm = 0; dm < in->rank; dm++)
      if (ks->dims[dm] != in->dims[dm])
        return wfail(d, x, "operands of different shapes in");
  }
  const WindowDim *wd = x->window->dims;
  int64_t total = 1;
  for (int dm = 0; dm < in->rank; dm++) {
    if (wd[dm].size < 0)
      return wfail(d, x, "negative window size in");
    total *= wd[dm].size;
  }

  LLVMValueRef acc[W_MAX_INPUTS];
  for (int k = 0; k < n; k++) {
    LLVMValueRef init = cg_elemental_emit(e, x->ops[n + k], NULL);
    if (!init)
      return NULL;
    acc[k] = entry_alloca(cg, cg_reg_type(cg, ets[k]));
    LLVMBuildStore(cg->b, init, acc[k]);
  }
  int mark = cg_elemental_cache_mark(e);
  LLVMBuilderRef b = cg->b;
  CgLoop l;
  LLVMValueRef lin = cg_loop_begin(cg, &l, cg_const_i64(cg, 0), cg_const_i64(cg, total),
                                   cg_const_i64(cg, 1), "rwin");
  /* Window position digits, row-major over the window dims. */
  LLVMValueRef wpos[W_MAX_RANK], iidx[W_MAX_RANK];
  LLVMValueRef rest = lin;
  for (int dm = in->rank - 1; dm >= 0; dm--) {
    LLVMValueRef sz = cg_const_i64(cg, wd[dm].size);
    if (wd[dm].size <= 1) {      /* size 0: the loop body never runs */
      wpos[dm] = cg_const_i64(cg, 0);
      continue;
    }
    wpos[dm] = LLVMBuildURem(b, rest, sz, "");
    rest = LLVMBuildUDiv(b, rest, sz, "");
  }
  LLVMValueRef valid = NULL;
  for (int dm = 0; dm < in->rank; dm++) {
    int64_t stride = wd[dm].stride > 0 ? wd[dm].stride : 1;
    int64_t wdil = wd[dm].window_dilation > 0 ? wd[dm].window_dilation : 1;
    int64_t bdil = wd[dm].base_dilation > 0 ? wd[dm].base_dilation : 1;
    LLVMValueRef v = LLVMBuildMul(b, idx[dm], cg_const_i64(cg, stride), "");
    v = LLVMBuildAdd(b, v, LLVMBuildMul(b, wpos[dm], cg_const_i64(cg, wdil), ""), "");
    v = LLVMBuildSub(b, v, cg_const_i64(cg, wd[dm].pad_lo), "");
    if (always_inside(&wd[dm], os->dims[dm], in->dims[dm])) {
      iidx[dm] = v;
      continue;
    }
    LLVMValueRef ok = NULL;
    if (bdil > 1) {
      LLVMValueRef bd = cg_const_i64(cg, bdil);
      ok = LLVMBuildICmp(b, LLVMIntEQ, LLVMBuildSRem(b, v, bd, ""), cg_const_i64(cg, 0), "");
      v = LLVMBuildSDiv(b, v, bd, "");
    }
    LLVMValueRef ge = LLVMBuildICmp(b, LLVMIntSGE, v, cg_const_i64(cg, 0), "");
    LLVMValueRef lt = LLVMBuildICmp(b, LLVMIntSLT, v, cg_const_i64(cg, in->dims[dm]), "");
    LLVMValueRef inside = LLVMBuildAnd(b, ge, lt, "");
    ok = ok ? LLVMBuildAnd(b, ok, inside, "") : inside;
    valid = valid ? LLVMBuildAnd(b, valid, ok, "") : ok;
    iidx[dm] = v;
  }
  LLVMBasicBlockRef cont = NULL;
  if (valid) {
    LLVMValueRef fn = LLVMGetBasicBlockParent(LLVMGetInsertBlock(b));
    LLVMBasicBlockRef take = LLVMAppendBasicBlockInContext(cg->ctx, fn, "rwin.take");
    cont = LLVMAppendBasicBlockInContext(cg->ctx, fn, "rwin.cont");
    LLVMBuildCondBr(b, valid, take, cont);
    LLVMPositionBuilderAtEnd(b, take);
  }
  LLVMValueRef args[2 * W_MAX_INPUTS], res[W_MAX_INPUTS];
  bool ok = true;
  for (int k = 0; k < n && ok; k++) {
    args[k] = LLVMBuildLoad2(b, cg_reg_type(cg, ets[k]), acc[k], "");
    ok = (args[n + k] = cg_elemental_emit(e, x->ops[k], iidx)) != NULL;
  }
  ok = ok && cg_emit_scalar_comp(cg, x->called[0], 2 * n, args, res, d);
  for (int k = 0; k < n && ok; k++)
    LLVMBuildStore(b, res[k], acc[k]);
  if (cont) {
    LLVMBuildBr(b, cont);
    LLVMPositionBuilderAtEnd(b, cont);
  }
  cg_elemental_cache_reset(e, mark);
  cg_loop_end(cg, &l);
  cg_elemental_cache_reset(e, mark);
  if (!ok)
    return NULL;
  return LLVMBuildLoad2(b, cg_reg_type(cg, ets[which]), acc[which], "");
}
