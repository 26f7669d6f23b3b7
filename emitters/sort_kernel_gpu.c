/*
 * sort_kernel_gpu.c - the GPU sort kernel: one thread block per row, a
 * bitonic sorting network over the row's positions padded to a power of
 * two P, then a gather of every result through the sorted positions.
 *
 * The network sorts an i32 permutation of the positions, in one of three
 * places by the row's size (XLA's GPU sort keeps rows in shared memory
 * the same way):
 *   - the permutation and a copy of the row of every operand in shared
 *     memory, when they fit in 48 KiB (f32 rows up to 4096);
 *   - the permutation in shared memory (P <= 8192), the values read from
 *     the operands;
 *   - the permutation in the kernel's scratch buffer (P i32 per row), the
 *     values read from the operands;
 * with __syncthreads between its steps (a block's barrier orders its
 * global memory too).  Positions >= len are padding and go after every
 * element.  Two elements are ordered by the comparator and,
 * when neither is less than the other, by position: a strict total order
 * when the comparator is a strict weak order (every comparator JAX
 * writes, total orders), so the network's result is then the stable
 * sort's, bit for bit the host's and the interpreter's, for
 * is_stable=false too.  A comparator that is no strict weak order (IEEE
 * less-than on NaNs) gets a valid but possibly different order.
 *
 *   for (k = 2; k <= P; k *= 2)
 *     for (j = k / 2; j > 0; j /= 2) {
 *       for (t = tid; t < P / 2; t += T) {
 *         i = 2 * t - (t & (j - 1)); l = i + j;    // the pair (i, i ^ j)
 *         ascending = (i & k) == 0;
 *         swap perm[i], perm[l] when the pair is out of that order
 *       }
 *       __syncthreads();
 *     }
 */
#include "cg_internal.h"

enum { SORT_SHARED_MAX = 8192, SORT_SHARED_BYTES = 48 * 1024, SORT_BLOCK = 1024 };

static LLVMBasicBlockRef new_block(Codegen *cg, const char *name) {
  LLVMValueRef fn = LLVMGetBasicBlockParent(LLVMGetInsertBlock(cg->b));
  return LLVMAppendBasicBlockInContext(cg->ctx, fn, name);
}

/* x before y (positions, i64): x real and (y padding, or less(x, y), or
 * neither less and x < y). */
static LLVMValueRef before(Codegen *cg, const CgSortPlan *p, const CgSortSrc *src,
                           LLVMValueRef x, LLVMValueRef y, Diag *d) {
  LLVMBuilderRef b = cg->b;
  LLVMValueRef len = cg_const_i64(cg, p->len), last = cg_const_i64(cg, p->len - 1);
  /* padding reads the last element instead (its result is not used) */
  LLVMValueRef xl = cg_min_i64(cg, x, last), yl = cg_min_i64(cg, y, last);
  LLVMValueRef xv[CG_SORT_MAX_OPS], yv[CG_SORT_MAX_OPS];
  cg_sort_load(cg, p, src, xl, xv);
  cg_sort_load(cg, p, src, yl, yv);
  LLVMValueRef lt = cg_sort_less(cg, p, xv, yv, d);
  LLVMValueRef gt = lt ? cg_sort_less(cg, p, yv, xv, d) : NULL;
  if (!gt)
    return NULL;
  LLVMValueRef tie = LLVMBuildAnd(b, LLVMBuildNot(b, gt, ""),
                                  LLVMBuildICmp(b, LLVMIntSLT, x, y, ""), "");
  LLVMValueRef ord = LLVMBuildOr(b, LLVMBuildOr(b, lt, tie, ""),
                                 LLVMBuildICmp(b, LLVMIntSGE, y, len, ""), "");
  return LLVMBuildAnd(b, LLVMBuildICmp(b, LLVMIntSLT, x, len, ""), ord, "before");
}

static LLVMValueRef perm_ptr(Codegen *cg, LLVMValueRef perm, LLVMValueRef i) {
  return LLVMBuildInBoundsGEP2(cg->b, cg_i32(cg), perm, &i, 1, "");
}

bool cg_emit_sort_kernel_gpu(Codegen *cg, const HloInstr *instr, const CgSortPlan *p,
                             const char *name, LaunchDims *ld, Diag *d) {
  int64_t P = 1;
  while (P < p->len)
    P *= 2;
  bool shared = P <= SORT_SHARED_MAX;
  int64_t bytes = 4 * P;
  for (int q = 0; q < p->n; q++)
    bytes += (int64_t)et_bytes(p->in[q]->et) * (p->len > 0 ? p->len : 1);
  bool staged = bytes <= SORT_SHARED_BYTES;
  if (p->rows > INT32_MAX)
    return diag_error(d, p->x->loc, "codegen: more than 2^31 rows in 'sort' (%s)",
                      p->x->name ? p->x->name : "?");
  CgKernel k;
  if (!(shared ? cg_kernel_begin(cg, instr, name, &k, d)
               : cg_kernel_begin_temp(cg, instr, name, &k, d)))
    return false;
  LLVMBuilderRef b = cg->b;
  if (p->rows == 0) {             /* an empty array: nothing to do */
    if (!shared)
      ld->temp_bytes = 64;
    cg_kernel_end(&k);
    return true;
  }
  LLVMTypeRef i64 = cg_i64(cg), i32 = cg_i32(cg);
  int64_t T = P / 2 < SORT_BLOCK ? (P / 2 > 0 ? P / 2 : 1) : SORT_BLOCK;
  ld->grid[0] = (uint32_t)(p->rows > 0 ? p->rows : 1);
  ld->block[0] = (uint32_t)T;
  LLVMValueRef row = LLVMBuildZExt(b, cg_sreg(cg, "ctaid.x"), i64, "row");
  LLVMValueRef tid = LLVMBuildZExt(b, cg_sreg(cg, "tid.x"), i64, "tid");
  LLVMValueRef perm;
  if (shared) {
    perm = cg_shared_array(cg, i32, P, "sort_perm");
  } else {
    ld->temp_bytes = (p->rows > 0 ? p->rows : 1) * P * 4;
    LLVMValueRef off = LLVMBuildNSWMul(b, row, cg_const_i64(cg, P), "");
    perm = LLVMBuildInBoundsGEP2(b, i32, k.temp, &off, 1, "perm");
  }
  CgSortSrc in, src;
  LLVMValueRef out_base[CG_SORT_MAX_OPS];
  LLVMValueRef Tv = cg_const_i64(cg, T), Pv = cg_const_i64(cg, P);
  LLVMValueRef half = cg_const_i64(cg, P / 2), one = cg_const_i64(cg, 1);
  CgLoop l;
  LLVMValueRef i = cg_loop_begin(cg, &l, tid, Pv, Tv, "init");
  LLVMBuildStore(b, LLVMBuildTrunc(b, i, i32, ""), perm_ptr(cg, perm, i));
  cg_loop_end(cg, &l);
  cg_sort_src(cg, p, &k, row, &in);
  cg_sort_out_bases(cg, p, row, out_base);
  src = in;
  if (staged) {
    /* the row of every operand into shared memory */
    for (int q = 0; q < p->n; q++) {
      src.ptr[q] = cg_shared_array(cg, cg_mem_type(cg, p->in[q]->et),
                                   p->len > 0 ? p->len : 1, "sort_row");
      src.base[q] = cg_const_i64(cg, 0);
      src.stride[q] = 1;
    }
    i = cg_loop_begin(cg, &l, tid, cg_const_i64(cg, p->len), Tv, "stage");
    LLVMValueRef v[CG_SORT_MAX_OPS];
    cg_sort_load(cg, p, &in, i, v);
    for (int q = 0; q < p->n; q++)
      cg_store_linear(cg, src.ptr[q], p->in[q]->et, i, v[q]);
    cg_loop_end(cg, &l);
  }
  cg_barrier(cg);
  LLVMValueRef kv = cg_var(cg, i64, "k"), jv = cg_var(cg, i64, "j");
  LLVMBuildStore(b, cg_const_i64(cg, 2), kv);
  LLVMBasicBlockRef khead = new_block(cg, "stage"), kbody = new_block(cg, "stage.body"),
                    kdone = new_block(cg, "stage.done");
  LLVMBuildBr(b, khead);
  LLVMPositionBuilderAtEnd(b, khead);
  LLVMValueRef kk = LLVMBuildLoad2(b, i64, kv, "");
  LLVMBuildCondBr(b, LLVMBuildICmp(b, LLVMIntSLE, kk, Pv, ""), kbody, kdone);
  LLVMPositionBuilderAtEnd(b, kbody);
  LLVMBuildStore(b, LLVMBuildLShr(b, kk, one, ""), jv);
  LLVMBasicBlockRef jhead = new_block(cg, "step"), jbody = new_block(cg, "step.body"),
                    jdone = new_block(cg, "step.done");
  LLVMBuildBr(b, jhead);
  LLVMPositionBuilderAtEnd(b, jhead);
  LLVMValueRef j = LLVMBuildLoad2(b, i64, jv, "");
  LLVMBuildCondBr(b, LLVMBuildICmp(b, LLVMIntSGT, j, cg_const_i64(cg, 0), ""), jbody, jdone);
  LLVMPositionBuilderAtEnd(b, jbody);
  LLVMValueRef t = cg_loop_begin(cg, &l, tid, half, Tv, "pair");
  LLVMValueRef lowbits = LLVMBuildAnd(b, t, LLVMBuildNSWSub(b, j, one, ""), "");
  LLVMValueRef ii = LLVMBuildNSWSub(b, LLVMBuildNSWAdd(b, t, t, ""), lowbits, "i");
  LLVMValueRef ll = LLVMBuildNSWAdd(b, ii, j, "l");
  LLVMValueRef asc = LLVMBuildICmp(b, LLVMIntEQ, LLVMBuildAnd(b, ii, kk, ""),
                                   cg_const_i64(cg, 0), "asc");
  LLVMValueRef qi = perm_ptr(cg, perm, ii), ql = perm_ptr(cg, perm, ll);
  LLVMValueRef pi = LLVMBuildLoad2(b, i32, qi, ""), pl = LLVMBuildLoad2(b, i32, ql, "");
  LLVMValueRef pi64 = LLVMBuildSExt(b, pi, i64, ""), pl64 = LLVMBuildSExt(b, pl, i64, "");
  /* ascending: swap when perm[l] goes before perm[i]; descending: the
   * other way round */
  LLVMValueRef x = LLVMBuildSelect(b, asc, pl64, pi64, "");
  LLVMValueRef y = LLVMBuildSelect(b, asc, pi64, pl64, "");
  LLVMValueRef sw = before(cg, p, &src, x, y, d);
  bool ok = sw != NULL;
  if (ok) {
    LLVMBasicBlockRef doswap = new_block(cg, "swap"), cont = new_block(cg, "swap.done");
    LLVMBuildCondBr(b, sw, doswap, cont);
    LLVMPositionBuilderAtEnd(b, doswap);
    LLVMBuildStore(b, pl, qi);
    LLVMBuildStore(b, pi, ql);
    LLVMBuildBr(b, cont);
    LLVMPositionBuilderAtEnd(b, cont);
  }
  cg_loop_end(cg, &l);
  cg_barrier(cg);
  LLVMBuildStore(b, LLVMBuildLShr(b, j, one, ""), jv);
  LLVMBuildBr(b, jhead);
  LLVMPositionBuilderAtEnd(b, jdone);
  LLVMBuildStore(b, LLVMBuildNSWAdd(b, kk, kk, ""), kv);
  LLVMBuildBr(b, khead);
  LLVMPositionBuilderAtEnd(b, kdone);
  if (ok)
    cg_sort_gather(cg, p, &k, &src, out_base, perm, tid, cg_const_i64(cg, p->len), Tv);
  cg_kernel_end(&k);
  return ok;
}
