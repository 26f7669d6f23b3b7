/*
 * topk_kernel.c - top-k kernels: the `topk` op (k=, largest=; JAX's
 * lax.top_k) and custom-call "TopK" (XLA's form: values [batch, n] or [n],
 * result (values [batch, k], s32 indices [batch, k]), order given by its
 * to_apply comparator on (value, value) or (value, value, index, index),
 * greater-than by the total order when it has none).
 *
 * Each row (the last dimension) is a partial selection, not a sort: the k
 * best positions so far are kept in order in the result's index row, and
 * each element of the row is compared with the last of them; one that
 * goes before it is inserted by shifting the worse ones down.  An element
 * is inserted after every kept one it does not go strictly before, so ties
 * keep the lower position first: the first k of the stable sort, what
 * lib/eval computes, whenever the comparator is a strict weak order (the
 * total orders JAX and XLA write; not IEEE greater-than on NaNs, with
 * which any order is valid and the two may keep different elements).  Random rows insert about k ln(n / k) times, so a row
 * costs about n comparisons.  Then the values are gathered through the
 * indices.
 *
 * `topk` orders by the total order (floats: -NaN < -inf < ... < -0 < +0 <
 * ... < inf < NaN), greatest first when largest=true.
 *
 * Host: rows split into work units.  GPU: one thread per row.
 */
#include <string.h>

#include "cg_internal.h"

typedef struct TopkPlan {
  const HloInstr *x;
  int in_leaf;
  const Shape *is, *vs, *xs;      /* operand, values, indices */
  int dim;
  int64_t len, k, rows;
  const HloComp *comp;            /* NULL: the total order */
  bool largest;
} TopkPlan;

bool cg_is_topk(const HloInstr *i) {
  return i->op == HLO_TOPK ||
         (i->op == HLO_CUSTOM_CALL && i->cc && i->cc->target &&
          strcmp(i->cc->target, "TopK") == 0);
}

static bool tfail(Diag *d, const HloInstr *x, const char *why) {
  return diag_error(d, x->loc, "codegen: %s '%s' (%s)", why, hlo_op_name(x->op),
                    x->name ? x->name : "?");
}

static bool plan_topk(const HloInstr *instr, const HloInstr *x, TopkPlan *p, Diag *d) {
  memset(p, 0, sizeof *p);
  p->x = x;
  if (x->nops != 1)
    return tfail(d, x, "malformed");
  const HloComp *fc = cg_fusion_comp(instr);
  if (fc) {
    if (fc->root != x || x->ops[0]->op != HLO_PARAMETER)
      return tfail(d, x, "a fusion with more than the top-k around");
    p->in_leaf = (int)x->ops[0]->param_number;
    for (int j = 0; j < instr->nops; j++)
      if (!shape_is_array(instr->ops[j]->shape))
        return tfail(d, x, "a tuple operand of the fusion of");
  }
  const Shape *is = p->is = x->ops[0]->shape, *rs = x->shape;
  if (!shape_is_array(is) || is->rank < 1 || is->rank > 64 || !shape_is_tuple(rs) ||
      rs->ntuple != 2 || !shape_is_array(rs->tuple[0]) || !shape_is_array(rs->tuple[1]))
    return tfail(d, x, "unsupported shapes in");
  const Shape *vs = p->vs = rs->tuple[0], *xs = p->xs = rs->tuple[1];
  p->dim = is->rank - 1;
  p->len = is->dims[p->dim];
  if (vs->et != is->et || vs->rank != is->rank || xs->rank != is->rank ||
      !et_is_int(xs->et) || memcmp(vs->dims, xs->dims, (size_t)is->rank * sizeof *is->dims) ||
      memcmp(vs->dims, is->dims, (size_t)p->dim * sizeof *is->dims))
    return tfail(d, x, "result shapes that do not match the operand of");
  p->k = vs->dims[p->dim];
  if (x->op == HLO_TOPK && x->topk_k != p->k)
    return tfail(d, x, "k that does not match the result of");
  if (p->k > p->len)
    return tfail(d, x, "k larger than the row of");
  int w = et_bits(xs->et) - (et_is_signed_int(xs->et) ? 1 : 0);
  if (w < 62 && p->len > ((int64_t)1 << w))
    return tfail(d, x, "indices too narrow for the row of");
  int64_t total = shape_elements(is);
  p->rows = p->len > 0 ? total / p->len : 0;
  if (x->op == HLO_TOPK) {
    p->largest = x->topk_largest;
  } else if (x->ncalled >= 1 && x->called[0]) {
    p->comp = x->called[0];
    if (xs->et != ET_S32 || (p->comp->nparams != 2 && p->comp->nparams != 4))
      return tfail(d, x, "a comparator of unsupported arity in");
  } else {
    p->largest = true;
  }
  if (!p->comp && et_is_complex(is->et))
    return tfail(d, x, "complex values in");
  return true;
}

/* The total-order key of register value v of type et (an integer of the
 * same width, compared signed; unsigned and pred compared unsigned). */
static LLVMValueRef total_key(Codegen *cg, ElemType et, LLVMValueRef v) {
  if (!et_is_float(et))
    return v;
  LLVMTypeRef it = LLVMIntTypeInContext(cg->ctx, (unsigned)et_bits(et));
  LLVMValueRef bits = LLVMBuildBitCast(cg->b, v, it, "");
  LLVMValueRef neg = LLVMBuildICmp(cg->b, LLVMIntSLT, bits, LLVMConstInt(it, 0, false), "");
  int w = et_bits(et);
  uint64_t max = w == 64 ? (uint64_t)INT64_MAX : ((uint64_t)1 << (w - 1)) - 1;
  LLVMValueRef flip = LLVMBuildXor(cg->b, bits, LLVMConstInt(it, max, false), "");
  return LLVMBuildSelect(cg->b, neg, flip, bits, "key");
}

/* x (value xv at position xi, i64) goes before y. */
static LLVMValueRef before(Codegen *cg, const TopkPlan *p, LLVMValueRef xv, LLVMValueRef xi,
                           LLVMValueRef yv, LLVMValueRef yi, Diag *d) {
  ElemType et = p->is->et;
  if (!p->comp) {
    LLVMValueRef a = total_key(cg, et, xv), c = total_key(cg, et, yv);
    bool uns = !et_is_float(et) && !et_is_signed_int(et);
    LLVMIntPredicate pr = p->largest ? (uns ? LLVMIntUGT : LLVMIntSGT)
                                     : (uns ? LLVMIntULT : LLVMIntSLT);
    return LLVMBuildICmp(cg->b, pr, a, c, "before");
  }
  LLVMValueRef args[4] = {xv, yv, LLVMBuildTrunc(cg->b, xi, cg_i32(cg), ""),
                          LLVMBuildTrunc(cg->b, yi, cg_i32(cg), "")};
  LLVMValueRef out;
  if (!cg_emit_scalar_comp(cg, p->comp, p->comp->nparams, args, &out, d))
    return NULL;
  if (LLVMTypeOf(out) != LLVMInt1TypeInContext(cg->ctx))
    return tfail(d, p->x, "a comparator not returning pred in"), NULL;
  return out;
}

static LLVMBasicBlockRef new_block(Codegen *cg, const char *name) {
  LLVMValueRef fn = LLVMGetBasicBlockParent(LLVMGetInsertBlock(cg->b));
  return LLVMAppendBasicBlockInContext(cg->ctx, fn, name);
}

typedef struct Row {
  const TopkPlan *p;
  const CgKernel *k;
  LLVMValueRef ib, vb, xb;        /* row bases of operand, values, indices */
} Row;

static LLVMValueRef at(Codegen *cg, LLVMValueRef base, const Shape *s, int dim,
                       LLVMValueRef j) {
  return LLVMBuildNSWAdd(cg->b, base,
                         LLVMBuildNSWMul(cg->b, j, cg_const_i64(cg, cg_dim_stride(s, dim)), ""), "");
}

static LLVMValueRef load_in(Codegen *cg, const Row *r, LLVMValueRef j) {
  const TopkPlan *p = r->p;
  return cg_load_linear(cg, r->k->in[p->in_leaf], p->is->et, at(cg, r->ib, p->is, p->dim, j));
}

static LLVMValueRef load_idx(Codegen *cg, const Row *r, LLVMValueRef t) {
  const TopkPlan *p = r->p;
  LLVMValueRef v = cg_load_linear(cg, r->k->out[1], p->xs->et, at(cg, r->xb, p->xs, p->dim, t));
  return et_is_signed_int(p->xs->et) ? LLVMBuildSExt(cg->b, v, cg_i64(cg), "")
                                     : LLVMBuildZExt(cg->b, v, cg_i64(cg), "");
}

static void store_idx(Codegen *cg, const Row *r, LLVMValueRef t, LLVMValueRef v) {
  const TopkPlan *p = r->p;
  LLVMValueRef c = LLVMBuildTrunc(cg->b, v, cg_reg_type(cg, p->xs->et), "");
  cg_store_linear(cg, r->k->out[1], p->xs->et, at(cg, r->xb, p->xs, p->dim, t), c);
}

/* The selection of one row. */
static bool emit_row(Codegen *cg, const TopkPlan *p, const CgKernel *k, LLVMValueRef row,
                     Diag *d) {
  LLVMBuilderRef b = cg->b;
  LLVMTypeRef i64 = cg_i64(cg);
  Row r = {p, k, cg_row_base(cg, p->is, p->dim, row), cg_row_base(cg, p->vs, p->dim, row),
           cg_row_base(cg, p->xs, p->dim, row)};
  LLVMValueRef K = cg_const_i64(cg, p->k), one = cg_const_i64(cg, 1);
  LLVMValueRef zero = cg_const_i64(cg, 0);
  LLVMValueRef cntv = cg_var(cg, i64, "cnt"), posv = cg_var(cg, i64, "pos");
  LLVMBuildStore(b, zero, cntv);
  CgLoop l;
  LLVMValueRef j = cg_loop_begin(cg, &l, zero, cg_const_i64(cg, p->len), one, "elem");
  LLVMValueRef xv = load_in(cg, &r, j);
  LLVMValueRef cnt = LLVMBuildLoad2(b, i64, cntv, "");
  LLVMValueRef full = LLVMBuildICmp(b, LLVMIntEQ, cnt, K, "full");
  LLVMBasicBlockRef test = new_block(cg, "test"), ins = new_block(cg, "insert"),
                    next = new_block(cg, "next");
  LLVMBuildCondBr(b, full, test, ins);
  LLVMPositionBuilderAtEnd(b, test);
  LLVMValueRef km1 = cg_const_i64(cg, p->k - 1);
  LLVMValueRef wi = load_idx(cg, &r, km1);
  LLVMValueRef c = before(cg, p, xv, j, load_in(cg, &r, wi), wi, d);
  if (!c)
    return false;
  LLVMBuildCondBr(b, c, ins, next);
  LLVMPositionBuilderAtEnd(b, ins);
  LLVMBuildStore(b, LLVMBuildSelect(b, full, km1, cnt, ""), posv);
  LLVMBasicBlockRef head = new_block(cg, "shift"), cmp = new_block(cg, "shift.cmp"),
                    body = new_block(cg, "shift.body"), place = new_block(cg, "place");
  LLVMBuildBr(b, head);
  LLVMPositionBuilderAtEnd(b, head);
  LLVMValueRef pos = LLVMBuildLoad2(b, i64, posv, "");
  LLVMBuildCondBr(b, LLVMBuildICmp(b, LLVMIntSGT, pos, zero, ""), cmp, place);
  LLVMPositionBuilderAtEnd(b, cmp);
  LLVMValueRef pm = LLVMBuildNSWSub(b, pos, one, "");
  LLVMValueRef yi = load_idx(cg, &r, pm);
  c = before(cg, p, xv, j, load_in(cg, &r, yi), yi, d);
  if (!c)
    return false;
  LLVMBuildCondBr(b, c, body, place);
  LLVMPositionBuilderAtEnd(b, body);
  store_idx(cg, &r, pos, yi);
  LLVMBuildStore(b, pm, posv);
  LLVMBuildBr(b, head);
  LLVMPositionBuilderAtEnd(b, place);
  store_idx(cg, &r, LLVMBuildLoad2(b, i64, posv, ""), j);
  LLVMValueRef c1 = LLVMBuildNSWAdd(b, cnt, one, "");
  LLVMBuildStore(b, cg_min_i64(cg, c1, K), cntv);
  LLVMBuildBr(b, next);
  LLVMPositionBuilderAtEnd(b, next);
  cg_loop_end(cg, &l);
  /* the values of the k kept positions */
  LLVMValueRef t = cg_loop_begin(cg, &l, zero, K, one, "vals");
  LLVMValueRef v = load_in(cg, &r, load_idx(cg, &r, t));
  cg_store_linear(cg, k->out[0], p->vs->et, at(cg, r.vb, p->vs, p->dim, t), v);
  cg_loop_end(cg, &l);
  return true;
}

bool cg_emit_topk_kernel(Codegen *cg, const HloInstr *instr, const HloInstr *hero,
                         const char *name, LaunchDims *ld, Diag *d) {
  TopkPlan p;
  if (!plan_topk(instr, hero, &p, d))
    return false;
  CgKernel k;
  if (!cg_kernel_begin(cg, instr, name, &k, d))
    return false;
  LLVMBuilderRef b = cg->b;
  bool ok = true;
  if (p.rows == 0 || p.k == 0) {
    /* nothing to select */
  } else if (cg->is_gpu) {
    int64_t T = p.rows < 128 ? p.rows : 128;
    int64_t G = (p.rows + T - 1) / T;
    if (G > INT32_MAX) {
      cg_kernel_end(&k);
      return tfail(d, hero, "too many rows in");
    }
    ld->grid[0] = (uint32_t)G;
    ld->block[0] = (uint32_t)T;
    LLVMValueRef row = LLVMBuildAdd(
        b, LLVMBuildMul(b, LLVMBuildZExt(b, cg_sreg(cg, "ctaid.x"), cg_i64(cg), ""),
                        cg_const_i64(cg, T), ""),
        LLVMBuildZExt(b, cg_sreg(cg, "tid.x"), cg_i64(cg), ""), "row");
    LLVMBasicBlockRef body = new_block(cg, "row"), done = new_block(cg, "done");
    LLVMBuildCondBr(b, LLVMBuildICmp(b, LLVMIntSLT, row, cg_const_i64(cg, p.rows), ""), body,
                    done);
    LLVMPositionBuilderAtEnd(b, body);
    ok = emit_row(cg, &p, &k, row, d);
    LLVMBuildBr(b, done);
    LLVMPositionBuilderAtEnd(b, done);
  } else {
    LLVMValueRef start, end;
    cg_host_range(&k, p.rows, p.len * 4, ld, &start, &end);
    CgLoop l;
    LLVMValueRef row = cg_loop_begin(cg, &l, start, end, cg_const_i64(cg, 1), "rows");
    ok = emit_row(cg, &p, &k, row, d);
    cg_loop_end(cg, &l);
  }
  cg_kernel_end(&k);
  return ok;
}
