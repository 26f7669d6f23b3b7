/*
 * dus_kernel.c - the in-place dynamic-update-slice kernel (XLA's
 * in-place DUS emitter): a dynamic-update-slice, or a fusion whose root is
 * one (through bitcasts), whose result buffer is its updated operand's
 * buffer (buffer assignment wrote it over the operand; the thunk emitter
 * saw equal slices and said so with codegen_set_in_place_operand).  Every
 * element outside the update's window already holds the operand's value,
 * so the kernel writes the update only and never reads the operand:
 *
 *   start[d] = clamp(start index d, 0, dim d - update dim d)   (HLO's rule)
 *   result[start + u] = update[u]    for every index u of the update
 *
 * The update and the start indices are computed by the elemental emitter,
 * their fused producers included.  GPU: one thread per update element,
 * consecutive threads on consecutive elements of the result's minor-most
 * physical dimension (coalesced stores), the launch sized to the update.
 * Host: rows of the update along the result's minor-most physical
 * dimension, split into work units (cg_host_range); the units are not
 * rows of the result (LaunchDims.row_dims 0), so no kernel chain joins it.
 *
 * The fusion's operand k, the one overwritten, reaches the dynamic-update-
 * slice's operand 0 through bitcasts alone, each with no other user, and
 * has the dynamic-update-slice's dimensions and physical order, as has the
 * result: then the result's bytes outside the window are the operand's.
 * Anything else is left to the loop kernel (codegen.c).
 */
#include <stdlib.h>

#include "cg_internal.h"

/* GPU blocks as loop_kernel.c's: 64 to 256 threads, smaller ones to spread
 * a mid-sized update over an H200's 132 SMs; host rows of this many
 * elements keep their loop (loop_kernel.c's HOST_ROW_LOOP_*). */
enum { DUS_MAX_RANK = 64, DUS_BLOCK = 256, DUS_MIN_BLOCK = 64, DUS_SMS = 132 };
enum { DUS_ROW_LOOP_MIN = 16, DUS_ROW_LOOP_MAX = 64 };

/* The physical order of s's dimensions, major to minor, into pd. */
static void physical_order(const Shape *s, int *pd) {
  const Layout *l = s->layout;
  bool use_layout = l && l->rank == s->rank && l->minor_to_major;
  for (int j = 0; j < s->rank; j++)
    pd[j] = use_layout ? (int)l->minor_to_major[s->rank - 1 - j] : j;
}

bool cg_same_bytes(const Shape *a, const Shape *b) {
  if (!shape_is_array(a) || !shape_is_array(b) || a->et != b->et || a->rank != b->rank ||
      a->rank > DUS_MAX_RANK || shape_is_dynamic(a) || shape_is_dynamic(b))
    return false;
  int pa[DUS_MAX_RANK], pb[DUS_MAX_RANK];
  physical_order(a, pa);
  physical_order(b, pb);
  for (int j = 0; j < a->rank; j++)
    if (a->dims[j] != b->dims[j] || pa[j] != pb[j])
      return false;
  return true;
}

/* Whether a bitcast from `from` to `to` keeps the elements' bytes where
 * they are: one element type, as many elements. */
static bool plain_bitcast(const Shape *from, const Shape *to) {
  return shape_is_array(from) && shape_is_array(to) && from->et == to->et &&
         !shape_is_dynamic(from) && !shape_is_dynamic(to) &&
         shape_elements(from) == shape_elements(to) && shape_elements(to) >= 0;
}

int cg_uses(const HloComp *c, const HloInstr *x) {
  int n = 0;
  for (int k = 0; k < c->ninstrs; k++)
    for (int j = 0; c->instrs[k]->parent && j < c->instrs[k]->nops; j++)
      n += c->instrs[k]->ops[j] == x;
  return n;
}

/* Checks x's operands as cg_elemental_dus does; *vector_form: the start
 * indices are one rank-1 operand. */
static bool dus_shapes_ok(const HloInstr *x, bool *vector_form) {
  if (x->op != HLO_DYNAMIC_UPDATE_SLICE || x->nops < 2)
    return false;
  const Shape *s = x->shape, *us = x->ops[1]->shape;
  if (!shape_is_array(s) || !shape_is_array(us) || us->rank != s->rank || us->et != s->et ||
      s->rank > DUS_MAX_RANK || shape_is_dynamic(s) || shape_is_dynamic(us) ||
      !cg_et_supported(s->et))
    return false;
  int n = x->nops - 2;
  bool vf = n == 1 && s->rank != 1 && x->ops[2]->shape->rank == 1;
  if (vf ? x->ops[2]->shape->dims[0] != s->rank : n != s->rank)
    return false;
  for (int k = 0; k < n; k++) {
    const Shape *is = x->ops[2 + k]->shape;
    if (!shape_is_array(is) || !et_is_int(is->et) || (!vf && is->rank != 0))
      return false;
  }
  for (int k = 0; k < s->rank; k++)
    if (us->dims[k] < 0 || us->dims[k] > s->dims[k])
      return false;
  *vector_form = vf;
  return true;
}

const HloInstr *cg_dus_in_place(const HloInstr *instr, int operand) {
  if (operand < 0 || operand >= instr->nops || !shape_is_array(instr->shape))
    return NULL;
  bool vf;
  if (instr->op == HLO_DYNAMIC_UPDATE_SLICE)
    return operand == 0 && dus_shapes_ok(instr, &vf) &&
           cg_same_bytes(instr->ops[0]->shape, instr->shape) ? instr : NULL;
  const HloComp *c = cg_fusion_comp(instr);
  if (!c || !c->root || operand >= c->nparams || !c->params[operand] ||
      !cg_same_bytes(c->root->shape, instr->shape) ||
      !cg_same_bytes(instr->ops[operand]->shape, c->params[operand]->shape))
    return NULL;
  /* the root: bitcasts of the dynamic-update-slice (each keeps every
   * element's bytes where they are) */
  const HloInstr *x = c->root;
  while (x->op == HLO_BITCAST && x->nops == 1) {
    if (!plain_bitcast(x->ops[0]->shape, x->shape))
      return NULL;
    x = x->ops[0];
  }
  if (!dus_shapes_ok(x, &vf) || !cg_same_bytes(x->ops[0]->shape, x->shape))
    return NULL;
  /* its operand 0: bitcasts, each read by the next only, of parameter k,
   * which nothing else reads */
  const HloInstr *p = x->ops[0];
  if (cg_uses(c, p) != 1)
    return NULL;
  while (p->op == HLO_BITCAST && p->nops == 1) {
    if (!plain_bitcast(p->ops[0]->shape, p->shape) || cg_uses(c, p->ops[0]) != 1)
      return NULL;
    p = p->ops[0];
  }
  return p == c->params[operand] && p->op == HLO_PARAMETER ? x : NULL;
}

/* The clamped start of every dimension of x, into start. */
static bool emit_starts(Codegen *cg, CgElemental *e, const HloInstr *x, bool vector_form,
                        LLVMValueRef *start) {
  const Shape *s = x->shape, *us = x->ops[1]->shape;
  for (int k = 0; k < s->rank; k++) {
    const HloInstr *si = x->ops[vector_form ? 2 : 2 + k];
    LLVMValueRef at = cg_const_i64(cg, k);
    LLVMValueRef v = cg_elemental_emit(e, si, vector_form ? &at : NULL);
    if (!v)
      return false;
    start[k] = cg_clamp_i64(cg, cg_index_to_i64(cg, si->shape->et, v), 0,
                            s->dims[k] - us->dims[k]);
  }
  return true;
}

/* Writes the update's element at its multi-index ui into the result. */
static bool emit_element(Codegen *cg, CgElemental *e, const HloInstr *x, LLVMValueRef out,
                         LLVMValueRef const *start, LLVMValueRef const *ui) {
  LLVMValueRef v = cg_elemental_emit(e, x->ops[1], ui);
  if (!v)
    return false;
  LLVMValueRef oi[DUS_MAX_RANK];
  for (int k = 0; k < x->shape->rank; k++)
    oi[k] = LLVMBuildNSWAdd(cg->b, start[k], ui[k], "");
  cg_store_elem(cg, out, x->shape, oi, v);
  return true;
}

/* GPU: thread t of the grid writes update element t, numbered in the
 * result's physical order (pd, major to minor). */
static bool emit_gpu(Codegen *cg, CgElemental *e, const HloInstr *instr, const HloInstr *x,
                     LLVMValueRef out, bool vector_form, const int *pd, LaunchDims *ld,
                     Diag *d) {
  const Shape *us = x->ops[1]->shape;
  int64_t n = shape_elements(us);
  int64_t block = n < DUS_BLOCK ? (n > 0 ? n : 1) : DUS_BLOCK;
  while (block > DUS_MIN_BLOCK && (n + block - 1) / block < DUS_SMS)
    block /= 2;
  int64_t grid = (n + block - 1) / block;
  if (grid < 1)
    grid = 1;
  if (grid > INT32_MAX)
    return diag_error(d, instr->loc, "codegen: update of '%s' too large for one launch",
                      instr->name);
  ld->grid[0] = (uint32_t)grid;
  ld->block[0] = (uint32_t)block;
  LLVMBuilderRef b = cg->b;
  LLVMValueRef tid = LLVMBuildZExt(b, cg_sreg(cg, "tid.x"), cg_i64(cg), "");
  LLVMValueRef bid = LLVMBuildZExt(b, cg_sreg(cg, "ctaid.x"), cg_i64(cg), "");
  LLVMValueRef t = LLVMBuildNUWAdd(b, LLVMBuildNUWMul(b, bid, cg_const_i64(cg, block), ""),
                                   tid, "");
  LLVMValueRef fn = LLVMGetBasicBlockParent(LLVMGetInsertBlock(b));
  LLVMBasicBlockRef body = LLVMAppendBasicBlockInContext(cg->ctx, fn, "body");
  LLVMBasicBlockRef done = LLVMAppendBasicBlockInContext(cg->ctx, fn, "done");
  LLVMBuildCondBr(b, LLVMBuildICmp(b, LLVMIntULT, t, cg_const_i64(cg, n), ""), body, done);
  LLVMPositionBuilderAtEnd(b, body);
  LLVMValueRef start[DUS_MAX_RANK], ui[DUS_MAX_RANK];
  if (!emit_starts(cg, e, x, vector_form, start))
    return false;
  cg_split_index(cg, t, us->rank, pd, us->dims, ui);
  if (!emit_element(cg, e, x, out, start, ui))
    return false;
  LLVMBuildBr(b, done);
  LLVMPositionBuilderAtEnd(b, done);
  return true;
}

/* Host: the update's rows along the result's minor-most physical dimension
 * (pd[rank - 1]), in work units of whole rows; a rank-0 update is one row
 * of one element. */
static bool emit_host(Codegen *cg, CgKernel *k, CgElemental *e, const HloInstr *x,
                      bool vector_form, const int *pd, LaunchDims *ld) {
  const Shape *us = x->ops[1]->shape;
  int rank = us->rank;
  int64_t n = shape_elements(us);
  int64_t minor = rank ? us->dims[pd[rank - 1]] : 1;
  int64_t nrows = n > 0 ? n / minor : 0;
  LLVMValueRef start[DUS_MAX_RANK], ui[DUS_MAX_RANK];
  if (!emit_starts(cg, e, x, vector_form, start))
    return false;
  LLVMValueRef first, end;
  cg_host_range(k, nrows, minor, ld, &first, &end);
  ld->row_dims = 0;               /* not rows of the result */
  CgLoop rows, cols;
  LLVMValueRef row = cg_loop_begin(cg, &rows, first, end, cg_const_i64(cg, 1), "row");
  if (rank == 0) {
    if (!emit_element(cg, e, x, k->out[0], start, ui))
      return false;
    cg_loop_end(cg, &rows);
    return true;
  }
  cg_split_index(cg, row, rank - 1, pd, us->dims, ui);
  ui[pd[rank - 1]] = cg_loop_begin(cg, &cols, cg_const_i64(cg, 0), cg_const_i64(cg, minor),
                                   cg_const_i64(cg, 1), "col");
  if (!emit_element(cg, e, x, k->out[0], start, ui))
    return false;
  /* a row of 16 to 64 elements stays a loop that LLVM vectorizes along
   * the row, as loop_kernel.c's rows do */
  cg_loop_end_hinted(cg, &cols, minor >= DUS_ROW_LOOP_MIN && minor <= DUS_ROW_LOOP_MAX
                                    ? CG_LOOP_NO_UNROLL : 0);
  cg_elemental_clear_cache(e);
  cg_loop_end(cg, &rows);
  return true;
}

bool cg_emit_dus_kernel(Codegen *cg, const HloInstr *instr, const HloInstr *x,
                        const char *name, LaunchDims *ld, Diag *d) {
  bool vector_form;
  if (!dus_shapes_ok(x, &vector_form))
    return diag_error(d, x->loc, "codegen: in-place dynamic-update-slice kernel: "
                      "unsupported operands of '%s'", x->name ? x->name : "?");
  /* The result shares its bytes with the operand it overwrites, which the
   * kernel never reads, and with no other argument (the thunk emitter
   * checked): every pointer it uses may be noalias. */
  bool may_alias = cg->args_may_alias;
  cg->args_may_alias = false;
  CgKernel k;
  bool ok = cg_kernel_begin(cg, instr, name, &k, d);
  cg->args_may_alias = may_alias;
  if (!ok)
    return false;
  const HloComp *comp = cg_fusion_comp(instr);
  CgElemental *e = NULL;
  ok = k.nout == 1;
  if (!ok)
    diag_error(d, instr->loc, "codegen: in-place dynamic-update-slice kernel of '%s': "
               "not one result", instr->name);
  int pd[DUS_MAX_RANK];
  physical_order(x->shape, pd);
  if (ok) {
    e = cg_elemental_new(cg, comp, comp ? NULL : instr, k.in, d);
    if (cg->is_gpu)
      ok = emit_gpu(cg, e, instr, x, k.out[0], vector_form, pd, ld, d);
    else
      ok = emit_host(cg, &k, e, x, vector_form, pd, ld);
  }
  cg_elemental_free(e);
  if (ok) {
    cg_kernel_end(&k);
  } else {
    free(k.in);
    free(k.in_shapes);
  }
  return ok;
}
