/*
 * norm_kernel.c - the GPU kernel of a row normalization (a fusion that
 * lib/analysis/row_norm.h accepts: softmax, layer norm, RMS norm with
 * their elementwise prologue and epilogue), in one pass over HBM: every
 * input element is read once and every output element written once.
 *
 * The output's rows lie along its minor-most physical dimension; each
 * output row has one reduce row (a row of S, the reduces' operand shape,
 * given by the analysis's map: the same row when the output is S, the
 * same elements under another shape when the epilogue reshapes or
 * transposes).  T threads (a power of two from 32 to 1024, about 8
 * elements each) take one row of n elements; a block of 128 threads holds
 * R = 128 / T rows when T is smaller.  Thread t of a row holds the
 * positions j = k*T*V + t*V + v (k < K, v < V) of both rows: runs of V
 * consecutive elements (4 or 2 when n allows, so that a run is one vector
 * access), K of them, K*V <= 16.  The kernel is straight-line code over
 * those positions:
 *
 *  1. For each reduce, producers first: every position's operand value
 *     in the reduce row from the elemental emitter, folded into the
 *     thread's accumulator (started from the init value, as the reduction
 *     kernel does: XLA's contract is that init is the reducer's identity);
 *     a butterfly of warp shuffles combines the warp; with several warps
 *     per row each warp's value goes through shared memory and, after a
 *     barrier, every thread of the row combines them in warp order.  Every
 *     thread of the row then holds the row's value, which is bound
 *     (cg_elemental_bind) for everything emitted after it.
 *  2. Every position's root value in the output row, stored.
 *
 * The elemental emitter's cache keeps each position's values (the loaded
 * inputs, exp(x - max), ...) for the rest of the kernel: they stay in
 * registers between the reduces and the epilogue instead of being read
 * again (when the epilogue reaches them at the same index values, always
 * when the output is S).  Positions past the row's end (n not a multiple
 * of T*V) compute on the row's last element and are left out of the
 * reduces and the stores; rows past the last one (in the last block of
 * short rows) compute on the last row and store nothing: there is no
 * branch around the shuffles and barriers, which every thread of the
 * block executes.
 *
 * Rows longer than ROW_NORM_MAX_ROW are refused (an error; codegen_kernel
 * then falls back to the loop kernel); normalization-fusion does not form
 * fusions of them.
 */
#include <stdlib.h>
#include <string.h>

#include "../lib/analysis/row_norm.h"
#include "cg_internal.h"

enum {
  WARP = 32,
  NORM_BLOCK = 128,               /* threads of a block of short rows */
  NORM_MAX_THREADS = 1024,
  NORM_PER_THREAD = 8,            /* elements per thread wanted */
  NORM_MAX_PER_THREAD = 16,       /* positions per thread at most */
  NORM_MAX_RANK = 64,
};

typedef struct Norm {
  Codegen *cg;
  Diag *d;
  CgKernel k;
  CgElemental *el;
  RowNorm rn;
  int orank, srank;               /* ranks of the output and of S */
  int kept[NORM_MAX_RANK], nkept; /* output dims but its row dimension,
                                     physical major to minor */
  int64_t t, r, v, chunks;        /* T, R, V, K */
  int npos;
  LLVMValueRef *oidx;             /* npos * orank output indices (i64) */
  LLVMValueRef *sidx;             /* npos * srank indices into S */
  LLVMValueRef *valid;            /* npos: i1, NULL when always in the row */
  LLVMValueRef row_ok;            /* i1, NULL when every row is real */
  LLVMValueRef rr, lane, warp;    /* row in the block, lane, warp in the row */
  LLVMValueRef red_row[NORM_MAX_RANK]; /* the reduce row's index (i64) */
  LLVMValueRef red_val[ROW_NORM_MAX_REDUCES]; /* the row's reduce values */
} Norm;

static LLVMValueRef sreg64(Codegen *cg, const char *reg) {
  return LLVMBuildZExt(cg->b, cg_sreg(cg, reg), cg_i64(cg), reg);
}

static LLVMValueRef and_opt(Codegen *cg, LLVMValueRef a, LLVMValueRef b) {
  if (!a)
    return b;
  if (!b)
    return a;
  return LLVMBuildAnd(cg->b, a, b, "ok");
}

/* if (cond) { ... : the builder goes into the then-block; returns the join. */
static LLVMBasicBlockRef if_begin(Codegen *cg, LLVMValueRef cond, const char *name) {
  LLVMValueRef fn = LLVMGetBasicBlockParent(LLVMGetInsertBlock(cg->b));
  LLVMBasicBlockRef then = LLVMAppendBasicBlockInContext(cg->ctx, fn, name);
  LLVMBasicBlockRef join = LLVMAppendBasicBlockInContext(cg->ctx, fn, "endif");
  LLVMBuildCondBr(cg->b, cond, then, join);
  LLVMPositionBuilderAtEnd(cg->b, then);
  return join;
}

static void if_end(Codegen *cg, LLVMBasicBlockRef join) {
  LLVMBuildBr(cg->b, join);
  LLVMPositionBuilderAtEnd(cg->b, join);
}

/* T, R, V and K for rows of n elements; false when a thread would hold
 * more than NORM_MAX_PER_THREAD of them. */
static bool plan(Norm *nm) {
  int64_t n = nm->rn.n;
  nm->v = n % 4 == 0 ? 4 : n % 2 == 0 ? 2 : 1;
  nm->t = WARP;
  while (nm->t < NORM_MAX_THREADS && nm->t * NORM_PER_THREAD < n)
    nm->t *= 2;
  nm->chunks = (n + nm->t * nm->v - 1) / (nm->t * nm->v);
  nm->r = nm->t < NORM_BLOCK ? NORM_BLOCK / nm->t : 1;
  if (nm->r > nm->rn.rows)
    nm->r = nm->rn.rows;
  return nm->chunks * nm->v <= NORM_MAX_PER_THREAD;
}

/* Thread and row indices, and every position's multi-index in the output
 * and in S (the reduce row of the output row, from rn.row). */
static bool positions(Norm *nm) {
  Codegen *cg = nm->cg;
  LLVMBuilderRef b = cg->b;
  int64_t rows = nm->rn.rows, n = nm->rn.n;
  LLVMValueRef tid = sreg64(cg, "tid.x");
  LLVMValueRef t = tid;
  nm->rr = cg_const_i64(cg, 0);
  if (nm->r > 1) {
    nm->rr = LLVMBuildUDiv(b, tid, cg_const_i64(cg, nm->t), "rr");
    t = LLVMBuildURem(b, tid, cg_const_i64(cg, nm->t), "t");
  }
  nm->lane = LLVMBuildURem(b, t, cg_const_i64(cg, WARP), "lane");
  nm->warp = LLVMBuildUDiv(b, t, cg_const_i64(cg, WARP), "warp");
  LLVMValueRef row = LLVMBuildNUWAdd(b, LLVMBuildNUWMul(b, sreg64(cg, "ctaid.x"),
                                                        cg_const_i64(cg, nm->r), ""),
                                     nm->rr, "row");
  nm->row_ok = NULL;
  if (rows % nm->r != 0) {
    nm->row_ok = LLVMBuildICmp(b, LLVMIntULT, row, cg_const_i64(cg, rows), "row_ok");
    row = LLVMBuildSelect(b, nm->row_ok, row, cg_const_i64(cg, rows - 1), "row_c");
  }
  int od = nm->rn.out_dim, sd = nm->rn.dim;
  LLVMValueRef base[NORM_MAX_RANK];
  const LLVMValueRef *kept = nm->red_row;
  cg_split_index(cg, row, nm->nkept, nm->kept, nm->rn.out->dims, base);
  base[od] = cg_const_i64(cg, 0);
  /* the reduce row: the map's results do not use the output's row dim */
  if (!cg_emit_map_results(cg, nm->rn.row, base, nm->red_row))
    return diag_error(nm->d, nm->k.instr->loc, "codegen: no reduce row for the output rows");
  LLVMValueRef tv = LLVMBuildNUWMul(b, t, cg_const_i64(cg, nm->v), "tv");
  nm->npos = (int)(nm->chunks * nm->v);
  nm->oidx = xcalloc((size_t)nm->npos * (size_t)nm->orank + 1, sizeof *nm->oidx);
  nm->sidx = xcalloc((size_t)nm->npos * (size_t)nm->srank + 1, sizeof *nm->sidx);
  nm->valid = xcalloc((size_t)nm->npos + 1, sizeof *nm->valid);
  for (int64_t k = 0; k < nm->chunks; k++) {
    /* a run is in the row or past its end as a whole (V divides n) */
    LLVMValueRef js = LLVMBuildNUWAdd(b, tv, cg_const_i64(cg, k * nm->t * nm->v), "js");
    LLVMValueRef in_row = NULL;
    if ((k + 1) * nm->t * nm->v > n) {
      in_row = LLVMBuildICmp(b, LLVMIntULT, js, cg_const_i64(cg, n), "in_row");
      js = LLVMBuildSelect(b, in_row, js, cg_const_i64(cg, n - nm->v), "js_c");
    }
    for (int64_t v = 0; v < nm->v; v++) {
      int p = (int)(k * nm->v + v);
      LLVMValueRef j = v ? LLVMBuildNUWAdd(b, js, cg_const_i64(cg, v), "j") : js;
      nm->valid[p] = in_row;
      LLVMValueRef *ox = nm->oidx + (size_t)p * (size_t)nm->orank;
      for (int dd = 0; dd < nm->orank; dd++)
        ox[dd] = dd == od ? j : base[dd];
      LLVMValueRef *sx = nm->sidx + (size_t)p * (size_t)nm->srank;
      for (int dd = 0, q = 0; dd < nm->srank; dd++)
        sx[dd] = dd == sd ? j : kept[q++];
    }
  }
  return true;
}

/* reducer(a, x) */
static LLVMValueRef combine(Norm *nm, const HloInstr *r, LLVMValueRef a, LLVMValueRef x) {
  LLVMValueRef args[2] = {a, x}, out;
  if (!cg_emit_scalar_comp(nm->cg, r->called[0], 2, args, &out, nm->d))
    return NULL;
  return out;
}

/* The row's value of reduce r in every thread of the row; name for its
 * shared memory. */
static LLVMValueRef reduce_row(Norm *nm, const HloInstr *r, const char *name, int which) {
  Codegen *cg = nm->cg;
  LLVMBuilderRef b = cg->b;
  LLVMValueRef acc = cg_elemental_emit(nm->el, r->ops[1], NULL);
  if (!acc)
    return NULL;
  for (int p = 0; p < nm->npos; p++) {
    LLVMValueRef x = cg_elemental_emit(nm->el, r->ops[0], nm->sidx + (size_t)p * (size_t)nm->srank);
    LLVMValueRef nv = x ? combine(nm, r, acc, x) : NULL;
    if (!nv)
      return NULL;
    acc = nm->valid[p] ? LLVMBuildSelect(b, nm->valid[p], nv, acc, "acc") : nv;
  }
  for (int m = WARP / 2; m >= 1; m /= 2)
    if (!(acc = combine(nm, r, acc, cg_shfl_bfly(cg, acc, m))))
      return NULL;
  int64_t w = nm->t / WARP;
  if (w == 1)
    return acc;
  LLVMTypeRef ty = cg_reg_type(cg, r->shape->et);
  char buf[256];
  snprintf(buf, sizeof buf, "%s_row%d", name, which);
  LLVMValueRef shm = cg_shared_array(cg, ty, nm->r * w, buf);
  LLVMValueRef first = LLVMBuildNUWMul(b, nm->rr, cg_const_i64(cg, w), "first");
  LLVMValueRef slot = LLVMBuildNUWAdd(b, first, nm->warp, "slot");
  LLVMBasicBlockRef join = if_begin(cg, LLVMBuildICmp(b, LLVMIntEQ, nm->lane,
                                                      cg_const_i64(cg, 0), ""), "lane0");
  LLVMBuildStore(b, acc, LLVMBuildInBoundsGEP2(b, ty, shm, &slot, 1, ""));
  if_end(cg, join);
  cg_barrier(cg);
  acc = NULL;
  for (int64_t k = 0; k < w; k++) {
    LLVMValueRef s = LLVMBuildNUWAdd(b, first, cg_const_i64(cg, k), "");
    LLVMValueRef part = LLVMBuildLoad2(b, ty, LLVMBuildInBoundsGEP2(b, ty, shm, &s, 1, ""),
                                       "part");
    if (!(acc = acc ? combine(nm, r, acc, part) : part))
      return NULL;
  }
  return acc;
}

/* Loads, position after position, every parameter the root reads through
 * one plain map (gamma and beta of a layer norm), at the index values the
 * epilogue will reach it with: the elemental cache hands them over, and
 * consecutive positions' loads sit together, where the load/store
 * vectorizer makes them vector loads (emitted inside each position's
 * epilogue, they are too far apart). */
static void prefetch(Norm *nm) {
  Codegen *cg = nm->cg;
  const HloComp *c = cg_fusion_comp(nm->k.instr);
  CompIndexing *ci = indexing_comp_out_to_in(cg->aff, c, 0);
  for (int k = 0; k < c->nparams; k++) {
    const HloInstr *prm = c->params[k];
    const IndexingMapSet *set = prm ? comp_indexing_get(ci, prm, 0) : NULL;
    if (!set || set->n != 1 || !shape_is_array(prm->shape) || prm->shape->rank > NORM_MAX_RANK)
      continue;
    const IndexingMap *m = set->maps[0];
    if (m->undefined || m->empty || imap_nsyms(m) || m->ncons ||
        m->nresults != prm->shape->rank || m->ndims != nm->orank)
      continue;
    LLVMValueRef ix[NORM_MAX_RANK];
    for (int p = 0; p < nm->npos; p++)
      if (cg_emit_map_results(cg, m, nm->oidx + (size_t)p * (size_t)nm->orank, ix))
        cg_elemental_emit(nm->el, prm, ix);
  }
}

/* The reduce outputs (root tuple elements after the first): the row's
 * value, stored by the row's first thread. */
static void store_reduce_outputs(Norm *nm) {
  if (nm->rn.nouts < 2)
    return;
  Codegen *cg = nm->cg;
  LLVMBuilderRef b = cg->b;
  LLVMValueRef first = LLVMBuildAnd(b, LLVMBuildICmp(b, LLVMIntEQ, nm->lane, cg_const_i64(cg, 0), ""),
                                    LLVMBuildICmp(b, LLVMIntEQ, nm->warp, cg_const_i64(cg, 0), ""),
                                    "first");
  LLVMBasicBlockRef join = if_begin(cg, and_opt(cg, nm->row_ok, first), "reduce_out");
  for (int o = 1; o < nm->rn.nouts; o++)
    for (int k = 0; k < nm->rn.nreduces; k++)
      if (nm->rn.reduces[k] == nm->rn.outs[o])
        cg_store_elem(cg, nm->k.out[o], nm->k.out_shapes[o], nm->red_row, nm->red_val[k]);
  if_end(cg, join);
}

static bool emit(Norm *nm, const char *name, LaunchDims *ld) {
  Codegen *cg = nm->cg;
  int64_t grid = (nm->rn.rows + nm->r - 1) / nm->r;
  if (grid > INT32_MAX)
    return diag_error(nm->d, nm->k.instr->loc, "codegen: %lld rows are too many for one launch",
                      (long long)nm->rn.rows);
  ld->grid[0] = (uint32_t)grid;
  ld->block[0] = (uint32_t)(nm->t * nm->r);
  /* a block of up to 256 threads launches whatever registers ptxas uses
   * (255 at most); a larger one must stay within 64K / threads each */
  if (ld->block[0] > 256)
    cg_kernel_max_threads(&nm->k, ld->block[0]);
  if (!positions(nm))
    return false;
  for (int k = 0; k < nm->rn.nreduces; k++) {
    const HloInstr *r = nm->rn.reduces[k];
    LLVMValueRef v = reduce_row(nm, r, name, k);
    if (!v)
      return false;
    cg_elemental_bind(nm->el, r, v);
    nm->red_val[k] = v;
  }
  store_reduce_outputs(nm);
  /* every value first, then the stores: the load/store vectorizer does
   * not move a load of an operand past a store that may alias it */
  prefetch(nm);
  const HloInstr *root = nm->rn.outs[0];
  const Shape *os = nm->k.out_shapes[0];
  LLVMValueRef *vals = xcalloc((size_t)nm->npos + 1, sizeof *vals);
  for (int p = 0; p < nm->npos; p++)
    if (!(vals[p] = cg_elemental_emit(nm->el, root, nm->oidx + (size_t)p * (size_t)nm->orank))) {
      free(vals);
      return false;
    }
  /* a run's stores under one branch (the run is in the row as a whole) */
  for (int64_t k = 0; k < nm->chunks; k++) {
    int p0 = (int)(k * nm->v);
    LLVMValueRef ok = and_opt(cg, nm->row_ok, nm->valid[p0]);
    LLVMBasicBlockRef join = ok ? if_begin(cg, ok, "store") : NULL;
    for (int p = p0; p < p0 + nm->v; p++)
      cg_store_elem(cg, nm->k.out[0], os, nm->oidx + (size_t)p * (size_t)nm->orank, vals[p]);
    if (join)
      if_end(cg, join);
  }
  free(vals);
  return true;
}

bool cg_is_norm_fusion(Codegen *cg, const HloInstr *instr, RowNorm *rn) {
  const HloComp *c = cg_fusion_comp(instr);
  if (!c || !c->root || c->root->op == HLO_REDUCE)
    return false;
  bool has_reduce = false;
  for (int k = 0; k < c->ninstrs && !has_reduce; k++)
    has_reduce = c->instrs[k]->op == HLO_REDUCE;
  return has_reduce && row_norm_analyze(cg->aff, c, rn, NULL);
}

bool cg_emit_norm_kernel(Codegen *cg, const HloInstr *instr, const RowNorm *rn,
                         const char *name, LaunchDims *ld, Diag *d) {
  Norm *nm = xcalloc(1, sizeof *nm);
  nm->cg = cg;
  nm->d = d;
  nm->rn = *rn;
  const Shape *os = rn->out;
  nm->orank = os->rank;
  nm->srank = rn->space->rank;
  bool ok = false, begun = false;
  if (!cg->is_gpu || nm->orank > NORM_MAX_RANK || nm->srank > NORM_MAX_RANK || !plan(nm)) {
    diag_error(d, instr->loc, "codegen: rows of %lld elements are too long for the "
               "normalization kernel", (long long)rn->n);
    goto done;
  }
  const Layout *l = os->layout;
  bool use_layout = l && l->rank == os->rank;
  for (int j = os->rank - 1; j >= 0; j--) {
    int dd = use_layout ? (int)l->minor_to_major[j] : os->rank - 1 - j;
    if (dd < 0 || dd >= os->rank) {
      diag_error(d, instr->loc, "codegen: bad layout of the normalization's output");
      goto done;
    }
    if (dd != rn->out_dim)
      nm->kept[nm->nkept++] = dd;
  }
  if (!cg_kernel_begin(cg, instr, name, &nm->k, d))
    goto done;
  begun = true;
  bool outs_ok = nm->k.nout == rn->nouts;
  for (int o = 0; o < rn->nouts && outs_ok; o++) {
    const Shape *want = rn->outs[o]->shape, *leaf = nm->k.out_shapes[o];
    outs_ok = leaf->rank == want->rank &&
              (want->rank == 0 ||
               memcmp(leaf->dims, want->dims, sizeof(int64_t) * (size_t)want->rank) == 0);
  }
  if (!outs_ok) {
    diag_error(d, instr->loc, "codegen: a normalization's outputs are not its rows");
    goto done;
  }
  nm->el = cg_elemental_new(cg, cg_fusion_comp(instr), NULL, nm->k.in, d);
  if (!nm->el)
    goto done;
  ok = emit(nm, name, ld);
done:
  if (nm->el)
    cg_elemental_free(nm->el);
  if (begun)
    cg_kernel_end(&nm->k);
  free(nm->oidx);
  free(nm->sidx);
  free(nm->valid);
  free(nm);
  return ok;
}
