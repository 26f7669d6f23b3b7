/*
 * kernel_chain.c - host kernels run as a chain: which bytes of each
 * argument one work unit of a kernel touches (its row footprint), and the
 * kernel that runs several kernels unit by unit (codegen.h).
 *
 * A kernel whose units compute rows of its first result leaf
 * (LaunchDims.row_dims) touches, in an argument, only the rows of its own
 * units when the argument is indexed by those rows: its leading physical
 * dimensions, as many as the row dimensions, are the result's row
 * dimensions in the same order and sizes, and its other dimensions do not
 * depend on them.  That is read off the indexing maps from the result to
 * each operand (indexing_out_to_in); a result leaf qualifies when it has
 * the first leaf's dimensions and the same row dimensions leading its
 * layout.  Unit u then touches bytes [u * p * rb, (u + 1) * p * rb) of the
 * argument's slice, p rows per unit of rb bytes each.
 *
 * Softmax's four kernels (row max, exp, row sum, divide) are such kernels,
 * on the same rows.  thunk_chain.c merges consecutive ones whose shared
 * buffers are touched row by row the same way into one kernel thunk, and
 * codegen_chain_kernel gives it a kernel that runs, for each unit in turn,
 * every member on that unit: the rows a unit writes are read back from the
 * core's own cache by the next member instead of from memory.
 */
#include <stdlib.h>
#include <string.h>

#include "../lib/eval/eval.h"
#include "cg_internal.h"

enum { CHAIN_MAX_RANK = 64 };

/* The physical order of s's dimensions, major to minor, into pd. */
static void physical_order(const Shape *s, int *pd) {
  const Layout *l = s->layout;
  bool use_layout = l && l->rank == s->rank && l->minor_to_major;
  for (int j = 0; j < s->rank; j++)
    pd[j] = use_layout ? (int)l->minor_to_major[s->rank - 1 - j] : j;
}

/* Whether every map of `set` (result -> an operand of shape p) pins p's
 * leading nrd physical dimensions to the result's row dimensions od
 * (sizes rs), leaving p's other dimensions free of them. */
static bool row_local(const IndexingMapSet *set, const Shape *p, int nrd,
                      const int *od, const int64_t *rs, int out_rank) {
  if (!set || set->n == 0 || !shape_is_array(p) || p->rank < nrd || p->rank > CHAIN_MAX_RANK)
    return false;
  uint64_t rowmask = 0;
  for (int j = 0; j < nrd; j++) {
    if (od[j] >= 63)
      return false;
    rowmask |= (uint64_t)1 << od[j];
  }
  int pd[CHAIN_MAX_RANK];
  physical_order(p, pd);
  for (int m = 0; m < set->n; m++) {
    const IndexingMap *im = set->maps[m];
    if (im->undefined || im->ndims != out_rank || im->nresults != p->rank)
      return false;
    for (int j = 0; j < p->rank; j++) {
      const AffExpr *e = im->results[pd[j]];
      if (j < nrd) {
        if (e->kind != AFF_DIM || e->value != od[j] || p->dims[pd[j]] != rs[j])
          return false;
      } else if (e->dim_mask & rowmask) {
        return false;
      }
    }
  }
  return true;
}

/* Whether result leaf s has the first leaf's dimensions, with the row
 * dimensions od leading its layout. */
static bool result_rows(const Shape *s, const Shape *first, int nrd, const int *od) {
  if (!shape_is_array(s) || s->rank != first->rank || s->rank > CHAIN_MAX_RANK ||
      (s->rank && memcmp(s->dims, first->dims, sizeof(int64_t) * (size_t)s->rank) != 0))
    return false;
  int pd[CHAIN_MAX_RANK];
  physical_order(s, pd);
  for (int j = 0; j < nrd; j++)
    if (pd[j] != od[j])
      return false;
  return true;
}

bool codegen_row_bytes(Codegen *cg, const HloInstr *i, const LaunchDims *ld, int nargs,
                       const int64_t *arg_bytes, int64_t *row_bytes) {
  for (int k = 0; k < nargs; k++)
    row_bytes[k] = 0;
  if (cg->is_gpu || ld->row_dims <= 0 || ld->rows <= 0 || ld->rows_per_unit <= 0)
    return false;
  PtrVec results = {0};
  io_shape_leaves(i->shape, &results);
  const Shape *first = results.len ? results.data[0] : NULL;
  int nrd = ld->row_dims;
  bool ok = first && shape_is_array(first) && nrd <= first->rank && first->rank <= CHAIN_MAX_RANK;
  int od[CHAIN_MAX_RANK];
  int64_t rs[CHAIN_MAX_RANK], rows = 1;
  if (ok) {
    physical_order(first, od);
    for (int j = 0; j < nrd; j++) {
      rs[j] = first->dims[od[j]];
      rows *= rs[j];
    }
    ok = rows == ld->rows;
  }
  InstrIndexing *maps = ok ? indexing_out_to_in(cg->aff, i, 0) : NULL;
  ok = ok && maps && maps->n == i->nops;
  /* the arguments: operand leaves, result leaves, then scratch (whole) */
  int a = 0;
  PtrVec leaves = {0};
  for (int k = 0; ok && k < i->nops; k++) {
    leaves.len = 0;
    io_shape_leaves(i->ops[k]->shape, &leaves);
    bool local = shape_is_array(i->ops[k]->shape) &&
                 row_local(&maps->sets[k], i->ops[k]->shape, nrd, od, rs, first->rank);
    for (int j = 0; j < leaves.len && a < nargs; j++, a++)
      if (local && arg_bytes[a] % rows == 0)
        row_bytes[a] = arg_bytes[a] / rows;
  }
  for (int j = 0; ok && j < results.len && a < nargs; j++, a++)
    if (result_rows(results.data[j], first, nrd, od) && arg_bytes[a] % rows == 0)
      row_bytes[a] = arg_bytes[a] / rows;
  vec_free(&leaves);
  vec_free(&results);
  if (!ok) {
    for (int k = 0; k < nargs; k++)
      row_bytes[k] = 0;
  }
  return ok;
}

bool codegen_chain_kernel(Codegen *cg, const char *name, int n, const char *const *members,
                          const int *nargs, Diag *d) {
  if (cg->is_gpu)
    return diag_error(d, (Loc){0}, "codegen: kernel chains are for the host");
  if (cg->optimized)
    return diag_error(d, (Loc){0}, "codegen: module already finalized; cannot add kernel '%s'",
                      name);
  LLVMValueRef *fns = xcalloc((size_t)n + 1, sizeof *fns);
  for (int k = 0; k < n; k++) {
    if (!(fns[k] = LLVMGetNamedFunction(cg->mod, members[k]))) {
      free(fns);
      return diag_error(d, (Loc){0}, "codegen: kernel chain '%s': no kernel '%s'", name,
                        members[k]);
    }
  }
  /* void name(void **args, i64 lo, i64 hi):
   *   for (u = lo; u < hi; u++) { m0(args, u, u + 1); m1(args + n0, u, u + 1); ... } */
  LLVMBuilderRef b = cg->b;
  LLVMTypeRef p0 = LLVMPointerTypeInContext(cg->ctx, 0), i64 = cg_i64(cg);
  LLVMTypeRef wt[3] = {p0, i64, i64};
  LLVMTypeRef ft = LLVMFunctionType(LLVMVoidTypeInContext(cg->ctx), wt, 3, false);
  LLVMValueRef fn = LLVMAddFunction(cg->mod, name, ft);
  LLVMPositionBuilderAtEnd(b, LLVMAppendBasicBlockInContext(cg->ctx, fn, "entry"));
  LLVMValueRef args = LLVMGetParam(fn, 0);
  CgLoop loop;
  LLVMValueRef u = cg_loop_begin(cg, &loop, LLVMGetParam(fn, 1), LLVMGetParam(fn, 2),
                                 cg_const_i64(cg, 1), "u");
  LLVMValueRef u1 = LLVMBuildNUWAdd(b, u, cg_const_i64(cg, 1), "");
  unsigned always = LLVMGetEnumAttributeKindForName("alwaysinline", 12);
  int64_t at = 0;
  for (int k = 0; k < n; k++) {
    LLVMValueRef off = cg_const_i64(cg, at);
    LLVMValueRef call[3] = {LLVMBuildInBoundsGEP2(b, p0, args, &off, 1, ""), u, u1};
    LLVMBuildCall2(b, ft, fns[k], call, 3, "");
    at += nargs[k];
    /* members are called here only: inlined into the chain */
    LLVMSetLinkage(fns[k], LLVMInternalLinkage);
    LLVMAddAttributeAtIndex(fns[k], LLVMAttributeFunctionIndex,
                            LLVMCreateEnumAttribute(cg->ctx, always, 0));
  }
  cg_loop_end(cg, &loop);
  LLVMBuildRetVoid(b);
  free(fns);
  return true;
}
