/*
 * sort_kernel.c - the sort kernel (hero a sort, a lone fusion after
 * fusion-wrapper) on the host, and the row addressing and comparator calls
 * it shares with the GPU sort (sort_kernel_gpu.c) and top-k
 * (topk_kernel.c).
 *
 * A row is the 1-D slice along the sort dimension; its element j of an
 * array s sits at base(row) + j * stride, both from s's own layout, so any
 * sort dimension (minor or not) and any layout of each operand and result
 * is addressed the same way.  Rows are numbered row-major over the other
 * dimensions.
 *
 * Host: one work unit is one or more rows.  A row sorts a permutation of
 * its positions (i32; a single operand's values themselves) with lib/eval's
 * stable merge sort, comparison for comparison: bottom-up merges of runs
 * of 1, 2, 4, ... between two arrays in the kernel's scratch buffer (2 *
 * len elements per work unit), taking
 * from the right run only when the comparator says strictly less,
 * branch-free.  The same comparisons in the same order give the
 * interpreter's result even for a comparator that is no strict weak order
 * (IEEE less-than with NaNs).  The comparator computation is emitted
 * inline (the elemental emitter) on the values at the two positions.  Then
 * each result is gathered through the permutation.  A stable sort is a
 * valid answer for is_stable=false too.
 */
#include <stdlib.h>
#include <string.h>

#include "cg_internal.h"

/* ---- shared helpers ------------------------------------------------------ */

static bool sort_fail(Diag *d, const HloInstr *x, const char *why) {
  return diag_error(d, x->loc, "codegen: %s '%s' (%s)", why, hlo_op_name(x->op),
                    x->name ? x->name : "?");
}

int64_t cg_dim_stride(const Shape *s, int dim) {
  int64_t st = 1;
  for (int j = 0; j < s->rank; j++) {
    int64_t d = s->layout && s->layout->rank == s->rank ? s->layout->minor_to_major[j]
                                                         : s->rank - 1 - j;
    if (d == dim)
      return st;
    st *= s->dims[d];
  }
  return st;
}

LLVMValueRef cg_row_base(Codegen *cg, const Shape *s, int dim, LLVMValueRef row) {
  LLVMValueRef idx[64];
  int dsel[64], nd = 0;
  for (int j = 0; j < s->rank; j++)
    if (j != dim)
      dsel[nd++] = j;
  if (nd > 0)
    cg_split_index(cg, row, nd, dsel, s->dims, idx);
  idx[dim] = cg_const_i64(cg, 0);
  return cg_linear_index(cg, s, idx);
}

LLVMValueRef cg_var(Codegen *cg, LLVMTypeRef t, const char *name) {
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

LLVMValueRef cg_min_i64(Codegen *cg, LLVMValueRef a, LLVMValueRef b) {
  return LLVMBuildSelect(cg->b, LLVMBuildICmp(cg->b, LLVMIntSLT, a, b, ""), a, b, "min");
}

bool cg_sort_plan(const HloInstr *instr, const HloInstr *x, CgSortPlan *p, Diag *d) {
  memset(p, 0, sizeof *p);
  p->x = x;
  int n = p->n = x->nops;
  if (n < 1 || x->ncalled < 1 || !x->called[0])
    return sort_fail(d, x, "malformed");
  if (n > CG_SORT_MAX_OPS)
    return sort_fail(d, x, "more than 16 operands in");
  const HloComp *fc = cg_fusion_comp(instr);
  if (fc && fc->root != x)
    return sort_fail(d, x, "a fusion with more than the sort around");
  const Shape *s0 = x->ops[0]->shape;
  if (!shape_is_array(s0) || s0->rank < 1 || s0->rank > 64)
    return sort_fail(d, x, "unsupported operand shape of");
  p->dim = x->dims.n >= 1 ? (int)x->dims.v[0] : s0->rank - 1;
  if (p->dim < 0 || p->dim >= s0->rank)
    return sort_fail(d, x, "bad dimension of");
  const Shape *rs = x->shape;
  if ((n > 1 || shape_is_tuple(rs)) && (!shape_is_tuple(rs) || rs->ntuple != n))
    return sort_fail(d, x, "result does not match the operands of");
  for (int k = 0; k < n; k++) {
    const HloInstr *o = x->ops[k];
    const Shape *sk = o->shape, *ok = shape_is_tuple(rs) ? rs->tuple[k] : rs;
    if (!shape_is_array(sk) || !shape_is_array(ok) || sk->rank != s0->rank ||
        ok->rank != s0->rank || sk->et != ok->et ||
        memcmp(sk->dims, s0->dims, (size_t)s0->rank * sizeof *s0->dims) ||
        memcmp(ok->dims, s0->dims, (size_t)s0->rank * sizeof *s0->dims))
      return sort_fail(d, x, "operands or results of different shapes in");
    if (fc) {
      if (o->op != HLO_PARAMETER)
        return sort_fail(d, x, "a fused operand computed in the fusion of");
      for (int j = 0; j < instr->nops; j++)
        if (!shape_is_array(instr->ops[j]->shape))
          return sort_fail(d, x, "a tuple operand of the fusion of");
      p->in_leaf[k] = (int)o->param_number;
    } else {
      if (!shape_is_array(instr->ops[k]->shape))
        return sort_fail(d, x, "a tuple operand of");
      p->in_leaf[k] = k;
    }
    p->in[k] = sk;
    p->out[k] = ok;
  }
  p->len = s0->dims[p->dim];
  int64_t total = shape_elements(s0);
  p->rows = p->len > 0 ? total / p->len : 0;
  if (p->len > INT32_MAX / 2)
    return sort_fail(d, x, "a row longer than 2^30 elements in");
  return true;
}

void cg_sort_src(Codegen *cg, const CgSortPlan *p, const CgKernel *k, LLVMValueRef row,
                 CgSortSrc *src) {
  for (int j = 0; j < p->n; j++) {
    src->ptr[j] = k->in[p->in_leaf[j]];
    src->base[j] = cg_row_base(cg, p->in[j], p->dim, row);
    src->stride[j] = cg_dim_stride(p->in[j], p->dim);
  }
}

void cg_sort_out_bases(Codegen *cg, const CgSortPlan *p, LLVMValueRef row,
                       LLVMValueRef *out_base) {
  for (int j = 0; j < p->n; j++)
    out_base[j] = cg_row_base(cg, p->out[j], p->dim, row);
}

void cg_sort_load(Codegen *cg, const CgSortPlan *p, const CgSortSrc *src, LLVMValueRef pos,
                  LLVMValueRef *vals) {
  for (int j = 0; j < p->n; j++) {
    LLVMValueRef off = src->stride[j] == 1
                           ? pos
                           : LLVMBuildNSWMul(cg->b, pos, cg_const_i64(cg, src->stride[j]), "");
    off = LLVMBuildNSWAdd(cg->b, src->base[j], off, "");
    vals[j] = cg_load_linear(cg, src->ptr[j], p->in[j]->et, off);
  }
}

LLVMValueRef cg_sort_less(Codegen *cg, const CgSortPlan *p, LLVMValueRef const *xv,
                          LLVMValueRef const *yv, Diag *d) {
  LLVMValueRef args[2 * CG_SORT_MAX_OPS], out;
  for (int k = 0; k < p->n; k++) {
    args[2 * k] = xv[k];
    args[2 * k + 1] = yv[k];
  }
  if (!cg_emit_scalar_comp(cg, p->x->called[0], 2 * p->n, args, &out, d))
    return NULL;
  if (LLVMTypeOf(out) != LLVMInt1TypeInContext(cg->ctx))
    return sort_fail(d, p->x, "a comparator not returning pred in"), NULL;
  return out;
}

/* Writes result row `row` of every operand: out_k[j] = in_k[perm[j]]. */
void cg_sort_gather(Codegen *cg, const CgSortPlan *p, const CgKernel *k,
                    const CgSortSrc *in, LLVMValueRef const *out_base,
                    LLVMValueRef perm, LLVMValueRef start, LLVMValueRef end,
                    LLVMValueRef step) {
  LLVMBuilderRef b = cg->b;
  CgLoop l;
  LLVMValueRef j = cg_loop_begin(cg, &l, start, end, step, "gather");
  LLVMValueRef pj = LLVMBuildInBoundsGEP2(b, cg_i32(cg), perm, &j, 1, "");
  LLVMValueRef src = LLVMBuildSExt(b, LLVMBuildLoad2(b, cg_i32(cg), pj, "p"), cg_i64(cg), "");
  LLVMValueRef vals[CG_SORT_MAX_OPS];
  cg_sort_load(cg, p, in, src, vals);
  for (int q = 0; q < p->n; q++) {
    LLVMValueRef off = LLVMBuildNSWMul(b, j, cg_const_i64(cg, cg_dim_stride(p->out[q], p->dim)), "");
    off = LLVMBuildNSWAdd(b, out_base[q], off, "");
    cg_store_linear(cg, k->out[q], p->out[q]->et, off, vals[q]);
  }
  cg_loop_end(cg, &l);
}

/* ---- host ---------------------------------------------------------------- */

static LLVMValueRef ld_i32(Codegen *cg, LLVMValueRef base, LLVMValueRef i) {
  LLVMValueRef q = LLVMBuildInBoundsGEP2(cg->b, cg_i32(cg), base, &i, 1, "");
  return LLVMBuildSExt(cg->b, LLVMBuildLoad2(cg->b, cg_i32(cg), q, ""), cg_i64(cg), "");
}

static void st_i32(Codegen *cg, LLVMValueRef base, LLVMValueRef i, LLVMValueRef v) {
  LLVMValueRef q = LLVMBuildInBoundsGEP2(cg->b, cg_i32(cg), base, &i, 1, "");
  LLVMBuildStore(cg->b, LLVMBuildTrunc(cg->b, v, cg_i32(cg), ""), q);
}

static LLVMBasicBlockRef new_block(Codegen *cg, const char *name) {
  LLVMValueRef fn = LLVMGetBasicBlockParent(LLVMGetInsertBlock(cg->b));
  return LLVMAppendBasicBlockInContext(cg->ctx, fn, name);
}

/* A host row sort's arrays hold positions (i32), or, for a single
 * operand, its values themselves ("direct", as integers of their width so
 * that moving them never touches their bits, NaN payloads included): the
 * same comparisons in the same order then move the values instead of their
 * positions, one load fewer per comparison, and give the same result. */
typedef struct HostSort {
  Codegen *cg;
  const CgSortPlan *p;
  const CgSortSrc *in;
  bool direct;
} HostSort;

static LLVMTypeRef raw_type(const HostSort *h) {
  return LLVMIntTypeInContext(h->cg->ctx, (unsigned)et_bytes(h->p->in[0]->et) * 8);
}

/* Element i of an array of raw values (direct) or of i32 positions. */
static LLVMValueRef el_load(const HostSort *h, LLVMValueRef arr, LLVMValueRef i) {
  if (!h->direct)
    return ld_i32(h->cg, arr, i);
  LLVMValueRef q = LLVMBuildInBoundsGEP2(h->cg->b, raw_type(h), arr, &i, 1, "");
  return LLVMBuildLoad2(h->cg->b, raw_type(h), q, "");
}

static void el_store(const HostSort *h, LLVMValueRef arr, LLVMValueRef i, LLVMValueRef v) {
  if (!h->direct) {
    st_i32(h->cg, arr, i, v);
    return;
  }
  LLVMValueRef q = LLVMBuildInBoundsGEP2(h->cg->b, raw_type(h), arr, &i, 1, "");
  LLVMBuildStore(h->cg->b, v, q);
}

/* The operand values of element e (a raw value, or a position). */
static void el_vals(const HostSort *h, LLVMValueRef e, LLVMValueRef *vals) {
  Codegen *cg = h->cg;
  ElemType et = h->p->in[0]->et;
  if (!h->direct)
    cg_sort_load(cg, h->p, h->in, e, vals);
  else if (et == ET_PRED)
    vals[0] = LLVMBuildICmp(cg->b, LLVMIntNE, e, LLVMConstInt(raw_type(h), 0, false), "");
  else
    vals[0] = LLVMBuildBitCast(cg->b, e, cg_reg_type(cg, et), "");
}

/* Element j of the row of operand 0, raw. */
static LLVMValueRef raw_operand(const HostSort *h, LLVMValueRef j) {
  Codegen *cg = h->cg;
  LLVMValueRef off = LLVMBuildNSWMul(cg->b, j, cg_const_i64(cg, h->in->stride[0]), "");
  off = LLVMBuildNSWAdd(cg->b, h->in->base[0], off, "");
  LLVMValueRef q = LLVMBuildInBoundsGEP2(cg->b, raw_type(h), h->in->ptr[0], &off, 1, "");
  return LLVMBuildLoad2(cg->b, raw_type(h), q, "");
}

/* The address of element `off` of an array of raw values. */
static LLVMValueRef raw_addr(const HostSort *h, LLVMValueRef base, LLVMValueRef off) {
  return LLVMBuildInBoundsGEP2(h->cg->b, raw_type(h), base, &off, 1, "");
}

/* arr[j] = element j of the row (its value, or j). */
static void identity(const HostSort *h, LLVMValueRef arr) {
  Codegen *cg = h->cg;
  if (h->direct && h->in->stride[0] == 1) {
    /* a contiguous row: libc's memcpy, no loop for LLVM to vectorize */
    LLVMBuildMemCpy(cg->b, arr, 1, raw_addr(h, h->in->ptr[0], h->in->base[0]), 1,
                    cg_const_i64(cg, h->p->len * et_bytes(h->p->in[0]->et)));
    return;
  }
  CgLoop l;
  LLVMValueRef j = cg_loop_begin(cg, &l, cg_const_i64(cg, 0), cg_const_i64(cg, h->p->len),
                                 cg_const_i64(cg, 1), "iota");
  el_store(h, arr, j, h->direct ? raw_operand(h, j) : j);
  cg_loop_end(cg, &l);
}

/* dst[o + t] = src[a + t] for t in [0, n). */
static void copy_run(const HostSort *h, LLVMValueRef src, LLVMValueRef a, LLVMValueRef dst,
                     LLVMValueRef o, LLVMValueRef n) {
  Codegen *cg = h->cg;
  CgLoop l;
  LLVMValueRef t = cg_loop_begin(cg, &l, cg_const_i64(cg, 0), n, cg_const_i64(cg, 1), "copy");
  el_store(h, dst, LLVMBuildNSWAdd(cg->b, o, t, ""),
           el_load(h, src, LLVMBuildNSWAdd(cg->b, a, t, "")));
  cg_loop_end_scalar(cg, &l);
}

/* One bottom-up pass: runs of w in src merged into dst. */
static bool merge_pass(const HostSort *h, LLVMValueRef src, LLVMValueRef dst, LLVMValueRef w,
                       Diag *d) {
  Codegen *cg = h->cg;
  const CgSortPlan *p = h->p;
  LLVMBuilderRef b = cg->b;
  LLVMTypeRef i64 = cg_i64(cg);
  LLVMValueRef len = cg_const_i64(cg, p->len), one = cg_const_i64(cg, 1);
  LLVMValueRef av = cg_var(cg, i64, "a"), bv = cg_var(cg, i64, "b"), ov = cg_var(cg, i64, "o");
  CgLoop l;
  LLVMValueRef w2 = LLVMBuildNSWAdd(b, w, w, "");
  LLVMValueRef lo = cg_loop_begin(cg, &l, cg_const_i64(cg, 0), len, w2, "pair");
  LLVMValueRef mid = cg_min_i64(cg, LLVMBuildNSWAdd(b, lo, w, ""), len);
  LLVMValueRef hi = cg_min_i64(cg, LLVMBuildNSWAdd(b, lo, w2, ""), len);
  LLVMBuildStore(b, lo, av);
  LLVMBuildStore(b, mid, bv);
  LLVMBuildStore(b, lo, ov);
  LLVMBasicBlockRef head = new_block(cg, "merge"), body = new_block(cg, "merge.body"),
                    tail = new_block(cg, "merge.tail");
  LLVMBuildBr(b, head);
  LLVMPositionBuilderAtEnd(b, head);
  LLVMValueRef a = LLVMBuildLoad2(b, i64, av, "");
  LLVMValueRef bb = LLVMBuildLoad2(b, i64, bv, "");
  LLVMValueRef go = LLVMBuildAnd(b, LLVMBuildICmp(b, LLVMIntSLT, a, mid, ""),
                                 LLVMBuildICmp(b, LLVMIntSLT, bb, hi, ""), "");
  LLVMBuildCondBr(b, go, body, tail);
  LLVMPositionBuilderAtEnd(b, body);
  LLVMValueRef pa = el_load(h, src, a), pb = el_load(h, src, bb);
  LLVMValueRef xv[CG_SORT_MAX_OPS], yv[CG_SORT_MAX_OPS];
  el_vals(h, pb, xv);
  el_vals(h, pa, yv);
  LLVMValueRef t = cg_sort_less(cg, p, xv, yv, d);
  if (!t)
    return false;
  LLVMValueRef o = LLVMBuildLoad2(b, i64, ov, "");
  el_store(h, dst, o, LLVMBuildSelect(b, t, pb, pa, ""));
  LLVMValueRef t64 = LLVMBuildZExt(b, t, i64, "");
  LLVMBuildStore(b, LLVMBuildNSWAdd(b, bb, t64, ""), bv);
  LLVMBuildStore(b, LLVMBuildNSWAdd(b, a, LLVMBuildXor(b, t64, one, ""), ""), av);
  LLVMBuildStore(b, LLVMBuildNSWAdd(b, o, one, ""), ov);
  LLVMBuildBr(b, head);
  /* what is left of either run, in order (short loops: most tails are a
   * few elements, a libc memcpy call each costs more) */
  LLVMPositionBuilderAtEnd(b, tail);
  LLVMValueRef o2 = LLVMBuildLoad2(b, i64, ov, "");
  LLVMValueRef a2 = LLVMBuildLoad2(b, i64, av, "");
  LLVMValueRef na = LLVMBuildNSWSub(b, mid, a2, "");
  copy_run(h, src, a2, dst, o2, na);
  LLVMValueRef o3 = LLVMBuildNSWAdd(b, o2, na, "");
  LLVMValueRef b2 = LLVMBuildLoad2(b, i64, bv, "");
  copy_run(h, src, b2, dst, o3, LLVMBuildNSWSub(b, hi, b2, ""));
  cg_loop_end(cg, &l);
  return true;
}

/* The results from the sorted array: the values, or gathered through the
 * positions. */
static void write_row(const HostSort *h, const CgKernel *k, LLVMValueRef const *out_base,
                      LLVMValueRef arr) {
  Codegen *cg = h->cg;
  const CgSortPlan *p = h->p;
  LLVMValueRef zero = cg_const_i64(cg, 0), lenv = cg_const_i64(cg, p->len);
  LLVMValueRef one = cg_const_i64(cg, 1);
  if (!h->direct) {
    cg_sort_gather(cg, p, k, h->in, out_base, arr, zero, lenv, one);
    return;
  }
  int64_t stride = cg_dim_stride(p->out[0], p->dim);
  if (stride == 1) {
    LLVMBuildMemCpy(cg->b, raw_addr(h, k->out[0], out_base[0]), 1, arr, 1,
                    cg_const_i64(cg, p->len * et_bytes(p->in[0]->et)));
    return;
  }
  CgLoop l;
  LLVMValueRef j = cg_loop_begin(cg, &l, zero, lenv, one, "out");
  LLVMValueRef off = LLVMBuildNSWMul(cg->b, j, cg_const_i64(cg, stride), "");
  off = LLVMBuildNSWAdd(cg->b, out_base[0], off, "");
  LLVMBuildStore(cg->b, el_load(h, arr, j), raw_addr(h, k->out[0], off));
  cg_loop_end(cg, &l);
}

static bool emit_host(Codegen *cg, const HloInstr *instr, const CgSortPlan *p,
                      const char *name, LaunchDims *ld, Diag *d) {
  CgKernel k;
  if (!cg_kernel_begin_temp(cg, instr, name, &k, d))
    return false;
  LLVMBuilderRef b = cg->b;
  LLVMTypeRef i64 = cg_i64(cg), pt = cg_ptr_type(cg);
  LLVMTypeRef i8 = LLVMInt8TypeInContext(cg->ctx);
  int64_t lg = 1;
  while (((int64_t)1 << lg) < p->len && lg < 62)
    lg++;
  LLVMValueRef start, end;
  cg_host_range(&k, p->rows, p->len * lg * 4 * p->n, ld, &start, &end);
  CgSortSrc in;
  HostSort h = {cg, p, &in, p->n == 1};
  /* a single contiguous operand and result: memcpy in and out, merges and
   * their tails, nothing for LLVM's vectorizer (a gather through positions
   * is a loop it may vectorize) */
  k.scalar = h.direct && cg_dim_stride(p->in[0], p->dim) == 1 &&
             cg_dim_stride(p->out[0], p->dim) == 1;
  int64_t es = h.direct ? et_bytes(p->in[0]->et) : 4;
  int64_t unit = (2 * p->len * es + 7) / 8 * 8;
  ld->temp_bytes = (int64_t)ld->grid[0] * unit;
  if (ld->temp_bytes < 64)
    ld->temp_bytes = 64;
  LLVMValueRef off = LLVMBuildNSWMul(b, k.lo, cg_const_i64(cg, unit), "");
  LLVMValueRef A = LLVMBuildInBoundsGEP2(b, i8, k.temp, &off, 1, "arrA");
  LLVMValueRef half = cg_const_i64(cg, p->len * es);
  LLVMValueRef B = LLVMBuildInBoundsGEP2(b, i8, A, &half, 1, "arrB");
  LLVMValueRef lenv = cg_const_i64(cg, p->len);
  LLVMValueRef srcv = cg_var(cg, pt, "src"), dstv = cg_var(cg, pt, "dst");
  LLVMValueRef wv = cg_var(cg, i64, "w");
  CgLoop lr;
  LLVMValueRef row = cg_loop_begin(cg, &lr, start, end, cg_const_i64(cg, 1), "row");
  LLVMValueRef out_base[CG_SORT_MAX_OPS];
  cg_sort_src(cg, p, &k, row, &in);
  cg_sort_out_bases(cg, p, row, out_base);
  identity(&h, A);
  LLVMBuildStore(b, A, srcv);
  LLVMBuildStore(b, B, dstv);
  LLVMBuildStore(b, cg_const_i64(cg, 1), wv);
  LLVMBasicBlockRef head = new_block(cg, "pass"), body = new_block(cg, "pass.body"),
                    done = new_block(cg, "pass.done");
  LLVMBuildBr(b, head);
  LLVMPositionBuilderAtEnd(b, head);
  LLVMValueRef w = LLVMBuildLoad2(b, i64, wv, "");
  LLVMBuildCondBr(b, LLVMBuildICmp(b, LLVMIntSLT, w, lenv, ""), body, done);
  LLVMPositionBuilderAtEnd(b, body);
  LLVMValueRef src = LLVMBuildLoad2(b, pt, srcv, ""), dst = LLVMBuildLoad2(b, pt, dstv, "");
  bool ok = merge_pass(&h, src, dst, w, d);
  LLVMBuildStore(b, dst, srcv);
  LLVMBuildStore(b, src, dstv);
  LLVMBuildStore(b, LLVMBuildNSWAdd(b, w, w, ""), wv);
  LLVMBuildBr(b, head);
  LLVMPositionBuilderAtEnd(b, done);
  if (ok)
    write_row(&h, &k, out_base, LLVMBuildLoad2(b, pt, srcv, "sorted"));
  cg_loop_end(cg, &lr);
  cg_kernel_end(&k);
  return ok;
}

bool cg_emit_sort_kernel(Codegen *cg, const HloInstr *instr, const HloInstr *hero,
                         const char *name, LaunchDims *ld, Diag *d) {
  CgSortPlan p;
  if (!cg_sort_plan(instr, hero, &p, d))
    return false;
  if (cg->is_gpu)
    return cg_emit_sort_kernel_gpu(cg, instr, &p, name, ld, d);
  return emit_host(cg, instr, &p, name, ld, d);
}
