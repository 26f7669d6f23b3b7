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
 * Host: rows split into work units.  GPU: a block per row when rows are
 * long and k small (emit_block_row), else one thread per row.
 */
#include <string.h>

#include "cg_internal.h"

/* GPU: rows of at least 256 with k <= 64 take a block of 128 threads each
 * (128 * 64 candidate slots, 32 KiB of shared memory). */
enum { TOPK_BLOCK = 128, TOPK_BLOCK_MIN_LEN = 256, TOPK_BLOCK_MAX_K = 64 };

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

/* Where kept positions live: the index result's row (sh NULL) or a block's
 * shared i32 array from element `base` on. */
typedef struct Keep {
  LLVMValueRef sh, base;
} Keep;

static LLVMValueRef load_idx(Codegen *cg, const Row *r, const Keep *kp, LLVMValueRef t) {
  const TopkPlan *p = r->p;
  if (kp->sh) {
    LLVMValueRef i = LLVMBuildNSWAdd(cg->b, kp->base, t, "");
    LLVMValueRef q = LLVMBuildInBoundsGEP2(cg->b, cg_i32(cg), kp->sh, &i, 1, "");
    return LLVMBuildSExt(cg->b, LLVMBuildLoad2(cg->b, cg_i32(cg), q, ""), cg_i64(cg), "");
  }
  LLVMValueRef v = cg_load_linear(cg, r->k->out[1], p->xs->et, at(cg, r->xb, p->xs, p->dim, t));
  return et_is_signed_int(p->xs->et) ? LLVMBuildSExt(cg->b, v, cg_i64(cg), "")
                                     : LLVMBuildZExt(cg->b, v, cg_i64(cg), "");
}

static void store_idx(Codegen *cg, const Row *r, const Keep *kp, LLVMValueRef t,
                      LLVMValueRef v) {
  const TopkPlan *p = r->p;
  if (kp->sh) {
    LLVMValueRef i = LLVMBuildNSWAdd(cg->b, kp->base, t, "");
    LLVMValueRef q = LLVMBuildInBoundsGEP2(cg->b, cg_i32(cg), kp->sh, &i, 1, "");
    LLVMBuildStore(cg->b, LLVMBuildTrunc(cg->b, v, cg_i32(cg), ""), q);
    return;
  }
  LLVMValueRef c = LLVMBuildTrunc(cg->b, v, cg_reg_type(cg, p->xs->et), "");
  cg_store_linear(cg, r->k->out[1], p->xs->et, at(cg, r->xb, p->xs, p->dim, t), c);
}

/* x before y, and with tiebreak, when neither goes before the other, the
 * lower position first (a strict total order for a strict weak order). */
static LLVMValueRef before_t(Codegen *cg, const TopkPlan *p, bool tiebreak, LLVMValueRef xv,
                             LLVMValueRef xi, LLVMValueRef yv, LLVMValueRef yi, Diag *d) {
  LLVMValueRef c = before(cg, p, xv, xi, yv, yi, d);
  if (!c || !tiebreak)
    return c;
  LLVMValueRef r = before(cg, p, yv, yi, xv, xi, d);
  if (!r)
    return NULL;
  LLVMValueRef tie = LLVMBuildAnd(cg->b, LLVMBuildNot(cg->b, r, ""),
                                  LLVMBuildICmp(cg->b, LLVMIntSLT, xi, yi, ""), "");
  return LLVMBuildOr(cg->b, c, tie, "");
}

/* The candidates of a selection: positions c in [start, end) step step,
 * or (list) the positions list[c] of a shared i32 array, < 0 for none. */
typedef struct Cands {
  LLVMValueRef start, end, step, list;
} Cands;

/* Keeps in kp, in order, the k best candidates: each is compared with the
 * last kept one and inserted, shifting worse ones down, when it goes
 * before it. */
static bool select_row(Codegen *cg, const TopkPlan *p, const Row *r, const Keep *kp,
                       const Cands *cs, bool tiebreak, Diag *d) {
  LLVMBuilderRef b = cg->b;
  LLVMTypeRef i64 = cg_i64(cg);
  LLVMValueRef K = cg_const_i64(cg, p->k), one = cg_const_i64(cg, 1);
  LLVMValueRef zero = cg_const_i64(cg, 0);
  LLVMValueRef cntv = cg_var(cg, i64, "cnt"), posv = cg_var(cg, i64, "pos");
  /* the last kept one, once k are kept (registers, not reloaded per
   * candidate) */
  LLVMValueRef wiv = cg_var(cg, i64, "worst.i");
  LLVMValueRef wvv = cg_var(cg, cg_reg_type(cg, p->is->et), "worst.v");
  LLVMBuildStore(b, zero, cntv);
  CgLoop l;
  LLVMValueRef c = cg_loop_begin(cg, &l, cs->start, cs->end, cs->step, "cand");
  LLVMBasicBlockRef next = new_block(cg, "next");
  LLVMValueRef j = c;
  if (cs->list) {
    LLVMValueRef q = LLVMBuildInBoundsGEP2(b, cg_i32(cg), cs->list, &c, 1, "");
    j = LLVMBuildSExt(b, LLVMBuildLoad2(b, cg_i32(cg), q, ""), i64, "");
    LLVMBasicBlockRef some = new_block(cg, "cand.some");
    LLVMBuildCondBr(b, LLVMBuildICmp(b, LLVMIntSGE, j, zero, ""), some, next);
    LLVMPositionBuilderAtEnd(b, some);
  }
  LLVMValueRef xv = load_in(cg, r, j);
  LLVMValueRef cnt = LLVMBuildLoad2(b, i64, cntv, "");
  LLVMValueRef full = LLVMBuildICmp(b, LLVMIntEQ, cnt, K, "full");
  LLVMBasicBlockRef test = new_block(cg, "test"), ins = new_block(cg, "insert");
  LLVMBuildCondBr(b, full, test, ins);
  LLVMPositionBuilderAtEnd(b, test);
  LLVMValueRef km1 = cg_const_i64(cg, p->k - 1);
  LLVMValueRef t = before_t(cg, p, tiebreak, xv, j,
                            LLVMBuildLoad2(b, cg_reg_type(cg, p->is->et), wvv, ""),
                            LLVMBuildLoad2(b, i64, wiv, ""), d);
  if (!t)
    return false;
  LLVMBuildCondBr(b, t, ins, next);
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
  LLVMValueRef yi = load_idx(cg, r, kp, pm);
  t = before_t(cg, p, tiebreak, xv, j, load_in(cg, r, yi), yi, d);
  if (!t)
    return false;
  LLVMBuildCondBr(b, t, body, place);
  LLVMPositionBuilderAtEnd(b, body);
  store_idx(cg, r, kp, pos, yi);
  LLVMBuildStore(b, pm, posv);
  LLVMBuildBr(b, head);
  LLVMPositionBuilderAtEnd(b, place);
  store_idx(cg, r, kp, LLVMBuildLoad2(b, i64, posv, ""), j);
  LLVMValueRef c1 = cg_min_i64(cg, LLVMBuildNSWAdd(b, cnt, one, ""), K);
  LLVMBuildStore(b, c1, cntv);
  LLVMBasicBlockRef reload = new_block(cg, "worst");
  LLVMBuildCondBr(b, LLVMBuildICmp(b, LLVMIntEQ, c1, K, ""), reload, next);
  LLVMPositionBuilderAtEnd(b, reload);
  LLVMValueRef wi = load_idx(cg, r, kp, km1);
  LLVMBuildStore(b, wi, wiv);
  LLVMBuildStore(b, load_in(cg, r, wi), wvv);
  LLVMBuildBr(b, next);
  LLVMPositionBuilderAtEnd(b, next);
  cg_loop_end_scalar(cg, &l);
  return true;
}

static Row row_of(Codegen *cg, const TopkPlan *p, const CgKernel *k, LLVMValueRef row) {
  Row r = {p, k, cg_row_base(cg, p->is, p->dim, row), cg_row_base(cg, p->vs, p->dim, row),
           cg_row_base(cg, p->xs, p->dim, row)};
  return r;
}

/* The values of the k kept positions of the index result. */
static void write_values(Codegen *cg, const TopkPlan *p, const Row *r) {
  Keep out = {NULL, NULL};
  CgLoop l;
  LLVMValueRef t = cg_loop_begin(cg, &l, cg_const_i64(cg, 0), cg_const_i64(cg, p->k),
                                 cg_const_i64(cg, 1), "vals");
  LLVMValueRef v = load_in(cg, r, load_idx(cg, r, &out, t));
  cg_store_linear(cg, r->k->out[0], p->vs->et, at(cg, r->vb, p->vs, p->dim, t), v);
  cg_loop_end_scalar(cg, &l);
}

/* The selection of one row by one thread, straight into the results. */
static bool emit_row(Codegen *cg, const TopkPlan *p, const CgKernel *k, LLVMValueRef row,
                     Diag *d) {
  Row r = row_of(cg, p, k, row);
  Keep out = {NULL, NULL};
  Cands cs = {cg_const_i64(cg, 0), cg_const_i64(cg, p->len), cg_const_i64(cg, 1), NULL};
  if (!select_row(cg, p, &r, &out, &cs, false, d))
    return false;
  write_values(cg, p, &r);
  return true;
}

/* GPU, a block per row: thread t selects the k best of positions t, t + T,
 * ... (in order, so ties keep the lower position) into its k slots of a
 * shared array; after a barrier thread 0 selects the k best of those T * k
 * candidates, ties broken by position, into the results.  The row's k best
 * are among the candidates, so the result is the one-thread selection's. */
static bool emit_block_row(Codegen *cg, const TopkPlan *p, const CgKernel *k, int64_t T,
                           Diag *d) {
  LLVMBuilderRef b = cg->b;
  LLVMTypeRef i64 = cg_i64(cg);
  LLVMValueRef row = LLVMBuildZExt(b, cg_sreg(cg, "ctaid.x"), i64, "row");
  LLVMValueRef tid = LLVMBuildZExt(b, cg_sreg(cg, "tid.x"), i64, "tid");
  LLVMValueRef cand = cg_shared_array(cg, cg_i32(cg), T * p->k, "topk_cand");
  Row r = row_of(cg, p, k, row);
  LLVMValueRef K = cg_const_i64(cg, p->k), one = cg_const_i64(cg, 1);
  Keep mine = {cand, LLVMBuildNSWMul(b, tid, K, "")};
  CgLoop l;
  LLVMValueRef s = cg_loop_begin(cg, &l, cg_const_i64(cg, 0), K, one, "clear");
  store_idx(cg, &r, &mine, s, cg_const_i64(cg, -1));
  cg_loop_end(cg, &l);
  Cands part = {tid, cg_const_i64(cg, p->len), cg_const_i64(cg, T), NULL};
  if (!select_row(cg, p, &r, &mine, &part, false, d))
    return false;
  cg_barrier(cg);
  LLVMBasicBlockRef first = new_block(cg, "merge"), done = new_block(cg, "done");
  LLVMBuildCondBr(b, LLVMBuildICmp(b, LLVMIntEQ, tid, cg_const_i64(cg, 0), ""), first, done);
  LLVMPositionBuilderAtEnd(b, first);
  Keep out = {NULL, NULL};
  Cands all = {cg_const_i64(cg, 0), cg_const_i64(cg, T * p->k), one, cand};
  if (!select_row(cg, p, &r, &out, &all, true, d))
    return false;
  write_values(cg, p, &r);
  LLVMBuildBr(b, done);
  LLVMPositionBuilderAtEnd(b, done);
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
  } else if (cg->is_gpu && p.len >= TOPK_BLOCK_MIN_LEN && p.k <= TOPK_BLOCK_MAX_K &&
             p.rows <= INT32_MAX) {
    ld->grid[0] = (uint32_t)p.rows;
    ld->block[0] = TOPK_BLOCK;
    ok = emit_block_row(cg, &p, &k, TOPK_BLOCK, d);
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
    k.scalar = true;                /* rows, candidates and values: scalar loops */
    CgLoop l;
    LLVMValueRef row = cg_loop_begin(cg, &l, start, end, cg_const_i64(cg, 1), "rows");
    ok = emit_row(cg, &p, &k, row, d);
    cg_loop_end_scalar(cg, &l);
  }
  cg_kernel_end(&k);
  return ok;
}
