/*
 * scatter_kernel.c - the scatter kernel (hero a scatter, a lone fusion
 * after fusion-wrapper), with lib/eval's (XLA's) semantics: general
 * dimension numbers with batching dimensions, variadic scatter, update
 * windows whose start is out of [0, dim - window size] in any dimension
 * skipped whole, updates combined by to_apply(outputs..., updates...) in
 * the interpreter's order (row-major over the scatter dimensions, then over
 * the window), so duplicate indices combine exactly as it does.
 *
 * Two phases: the operands are copied into the outputs, then the updates
 * are applied.  A scatter of one operand whose result buffer is that
 * operand's (written in place: codegen_set_in_place_operand, the operand
 * read nowhere else in the fusion) skips the copy: the output already
 * holds the operand.  Host: two serial loops.  GPU: ONE block (up to 1024
 * threads); the copy is block-strided, __syncthreads separates it from the
 * updates (a grid-wide order would need a grid sync), then:
 *   - unique_indices=true (no two updates reach the same element): the
 *     update elements are block-strided over the threads;
 *   - otherwise thread 0 applies every update serially, in order, which
 *     keeps float combiners bit-exact and "set" deterministic.
 * Correctness first: a single block is slow for large operands.
 */
#include <stdlib.h>
#include <string.h>

#include "cg_internal.h"

enum { S_MAX_RANK = 64, S_MAX_VARIADIC = 16, S_GPU_BLOCK = 1024 };

typedef struct ScatterPlan {
  const HloInstr *x;              /* the scatter */
  int n;                          /* operands (= updates = outputs) */
  const Shape *os, *is, *us;      /* operand 0, indices, update 0 */
  int64_t ivd;
  int nsd;                        /* scatter dimensions of the updates */
  int64_t sdims[S_MAX_RANK], sshape[S_MAX_RANK];
  int64_t wdim_of_operand[S_MAX_RANK], wsize[S_MAX_RANK];
  int64_t ns, nw;                 /* scatter positions, window elements */
} ScatterPlan;

static bool in_list(const I64List *l, int64_t v) {
  for (int k = 0; k < l->n; k++)
    if (l->v[k] == v)
      return true;
  return false;
}

static bool sfail(Diag *d, const HloInstr *x, const char *why) {
  return diag_error(d, x->loc, "codegen: %s '%s' (%s)", why, hlo_op_name(x->op),
                    x->name ? x->name : "?");
}

/* Checks the scatter's shapes and dimension numbers as lib/eval does and
 * fills p. */
static bool plan_scatter(const HloInstr *x, ScatterPlan *p, Diag *d) {
  memset(p, 0, sizeof *p);
  p->x = x;
  const ScatterDnums *g = x->scatter;
  if (!g || x->nops < 3 || x->nops % 2 == 0 || x->ncalled < 1 || !x->called[0])
    return sfail(d, x, "malformed");
  int n = p->n = (x->nops - 1) / 2;
  if (n > S_MAX_VARIADIC)
    return sfail(d, x, "more than 16 operands in");
  const Shape *os = p->os = x->ops[0]->shape, *is = p->is = x->ops[n]->shape;
  const Shape *us = p->us = x->ops[n + 1]->shape;
  if (!shape_is_array(os) || !shape_is_array(is) || !shape_is_array(us) ||
      os->rank > S_MAX_RANK || is->rank >= S_MAX_RANK || us->rank > S_MAX_RANK ||
      !et_is_int(is->et))
    return sfail(d, x, "unsupported shapes in");
  for (int k = 0; k < n; k++) {
    const Shape *ok = x->ops[k]->shape, *uk = x->ops[n + 1 + k]->shape;
    if (!shape_is_array(ok) || !shape_is_array(uk) || ok->rank != os->rank ||
        uk->rank != us->rank || uk->et != ok->et ||
        memcmp(ok->dims, os->dims, (size_t)os->rank * sizeof *os->dims) ||
        memcmp(uk->dims, us->dims, (size_t)us->rank * sizeof *us->dims))
      return sfail(d, x, "operands or updates of different shapes in");
  }
  int64_t ivd = p->ivd = g->index_vector_dim;
  if (ivd < 0 || ivd > is->rank)
    return sfail(d, x, "bad index_vector_dim in");
  int64_t nvec = ivd < is->rank ? is->dims[ivd] : 1;
  if (nvec != g->scatter_dims_to_operand_dims.n ||
      g->input_batching_dims.n != g->scatter_indices_batching_dims.n)
    return sfail(d, x, "dimension numbers do not match the indices of");
  for (int k = 0; k < nvec; k++)
    if (g->scatter_dims_to_operand_dims.v[k] < 0 ||
        g->scatter_dims_to_operand_dims.v[k] >= os->rank)
      return sfail(d, x, "bad scatter_dims_to_operand_dims in");
  for (int k = 0; k < g->input_batching_dims.n; k++) {
    int64_t od = g->input_batching_dims.v[k], id = g->scatter_indices_batching_dims.v[k];
    if (od < 0 || od >= os->rank || id < 0 || id >= is->rank || id == ivd)
      return sfail(d, x, "bad batching dimensions in");
  }
  p->ns = 1;
  for (int dm = 0; dm < us->rank; dm++)
    if (!in_list(&g->update_window_dims, dm)) {
      p->sdims[p->nsd] = dm;
      p->sshape[p->nsd++] = us->dims[dm];
      p->ns *= us->dims[dm];
    }
  if (p->nsd != is->rank - (ivd < is->rank ? 1 : 0))
    return sfail(d, x, "update scatter dimensions do not match the indices of");
  for (int dm = 0, j = 0; dm < is->rank; dm++) {
    if (dm == ivd)
      continue;
    if (p->sshape[j++] != is->dims[dm])
      return sfail(d, x, "update scatter dimensions do not match the indices of");
  }
  int nw = 0;
  p->nw = 1;
  for (int dm = 0; dm < os->rank; dm++) {
    p->wdim_of_operand[dm] = -1;
    p->wsize[dm] = 1;
    if (in_list(&g->inserted_window_dims, dm) || in_list(&g->input_batching_dims, dm))
      continue;
    if (nw >= g->update_window_dims.n)
      return sfail(d, x, "window dimensions do not match the operand of");
    int64_t ud = g->update_window_dims.v[nw++];
    if (ud < 0 || ud >= us->rank || us->dims[ud] > os->dims[dm])
      return sfail(d, x, "window dimensions do not match the operand of");
    p->wdim_of_operand[dm] = ud;
    p->wsize[dm] = us->dims[ud];
    p->nw *= us->dims[ud];
  }
  if (nw != g->update_window_dims.n)
    return sfail(d, x, "window dimensions do not match the operand of");
  return true;
}

typedef struct ScatterEmit {
  Codegen *cg;
  CgElemental *e;
  const ScatterPlan *p;
  LLVMValueRef *out;              /* n output pointers */
  const Shape **out_shapes;
  Diag *d;
} ScatterEmit;

/* Copies the operands into the outputs for physical linear indices
 * [start, N) step `step` of output 0's shape. */
static bool emit_copy(ScatterEmit *s, LLVMValueRef start, LLVMValueRef step) {
  Codegen *cg = s->cg;
  const Shape *os = s->out_shapes[0];
  int mark = cg_elemental_cache_mark(s->e);
  CgLoop l;
  LLVMValueRef lin = cg_loop_begin(cg, &l, start, cg_const_i64(cg, shape_elements(os)),
                                   step, "copy");
  LLVMValueRef idx[S_MAX_RANK];
  cg_delinearize(cg, os, lin, idx);
  bool ok = true;
  for (int k = 0; k < s->p->n && ok; k++) {
    LLVMValueRef v = cg_elemental_emit(s->e, s->p->x->ops[k], idx);
    if (v)
      cg_store_elem(cg, s->out[k], s->out_shapes[k], idx, v);
    ok = v != NULL;
  }
  cg_loop_end(cg, &l);
  cg_elemental_cache_reset(s->e, mark);
  return ok;
}

/* Row-major digits of t over dims[0..n). */
static void digits(Codegen *cg, LLVMValueRef t, int n, const int64_t *dims,
                   LLVMValueRef *out) {
  for (int k = n - 1; k >= 0; k--) {
    LLVMValueRef sz = cg_const_i64(cg, dims[k]);
    out[k] = k ? LLVMBuildURem(cg->b, t, sz, "") : t;
    if (k)
      t = LLVMBuildUDiv(cg->b, t, sz, "");
  }
}

/* Applies update element t (row-major over the scatter positions, then
 * over the window, as the interpreter orders them). */
static bool emit_update(ScatterEmit *s, LLVMValueRef t) {
  Codegen *cg = s->cg;
  LLVMBuilderRef b = cg->b;
  const ScatterPlan *p = s->p;
  const HloInstr *x = p->x;
  const ScatterDnums *g = x->scatter;
  int n = p->n;
  const Shape *os = p->os;
  LLVMValueRef nwv = cg_const_i64(cg, p->nw);
  LLVMValueRef si_lin = LLVMBuildUDiv(b, t, nwv, "");
  LLVMValueRef w_lin = LLVMBuildURem(b, t, nwv, "");
  LLVMValueRef sidx[S_MAX_RANK], wd[S_MAX_RANK], ui[S_MAX_RANK];
  digits(cg, si_lin, p->nsd, p->sshape, sidx);
  /* window digits over the window dims in operand order */
  int64_t wdims[S_MAX_RANK];
  int nwd = 0;
  for (int dm = 0; dm < os->rank; dm++)
    if (p->wdim_of_operand[dm] >= 0)
      wdims[nwd++] = p->wsize[dm];
  digits(cg, w_lin, nwd, wdims, wd);
  for (int k = 0; k < p->nsd; k++)
    ui[p->sdims[k]] = sidx[k];
  /* the index vector and the window start */
  LLVMValueRef start[S_MAX_RANK], ii[S_MAX_RANK];
  for (int dm = 0; dm < os->rank; dm++)
    start[dm] = cg_const_i64(cg, 0);
  for (int dm = 0, j = 0; dm < p->is->rank; dm++)
    if (dm != p->ivd)
      ii[dm] = sidx[j++];
  for (int k = 0; k < g->scatter_dims_to_operand_dims.n; k++) {
    if (p->ivd < p->is->rank)
      ii[p->ivd] = cg_const_i64(cg, k);
    LLVMValueRef v = cg_elemental_emit(s->e, x->ops[n], ii);
    if (!v)
      return false;
    start[g->scatter_dims_to_operand_dims.v[k]] = cg_index_to_i64(cg, p->is->et, v);
  }
  for (int k = 0; k < g->input_batching_dims.n; k++) {
    int64_t id = g->scatter_indices_batching_dims.v[k];
    start[g->input_batching_dims.v[k]] = sidx[id < p->ivd ? id : id - 1];
  }
  LLVMValueRef inb = LLVMConstInt(LLVMInt1TypeInContext(cg->ctx), 1, false);
  LLVMValueRef oi[S_MAX_RANK];
  for (int dm = 0, j = 0; dm < os->rank; dm++) {
    /* unsigned: start in [0, dim - window] */
    LLVMValueRef ok = LLVMBuildICmp(b, LLVMIntULE, start[dm],
                                    cg_const_i64(cg, os->dims[dm] - p->wsize[dm]), "");
    inb = LLVMBuildAnd(b, inb, ok, "");
    oi[dm] = start[dm];
    if (p->wdim_of_operand[dm] >= 0) {
      LLVMValueRef w = wd[j++];
      ui[p->wdim_of_operand[dm]] = w;
      oi[dm] = LLVMBuildAdd(b, start[dm], w, "");
    }
  }
  LLVMValueRef fn = LLVMGetBasicBlockParent(LLVMGetInsertBlock(b));
  LLVMBasicBlockRef apply = LLVMAppendBasicBlockInContext(cg->ctx, fn, "scatter.apply");
  LLVMBasicBlockRef skip = LLVMAppendBasicBlockInContext(cg->ctx, fn, "scatter.next");
  LLVMBuildCondBr(b, inb, apply, skip);
  LLVMPositionBuilderAtEnd(b, apply);
  int mark = cg_elemental_cache_mark(s->e);
  LLVMValueRef args[2 * S_MAX_VARIADIC], res[S_MAX_VARIADIC];
  bool ok = true;
  for (int k = 0; k < n && ok; k++) {
    args[k] = cg_load_elem(cg, s->out[k], s->out_shapes[k], oi);
    ok = (args[n + k] = cg_elemental_emit(s->e, x->ops[n + 1 + k], ui)) != NULL;
  }
  ok = ok && cg_emit_scalar_comp(cg, x->called[0], 2 * n, args, res, s->d);
  for (int k = 0; k < n && ok; k++) {
    if (LLVMTypeOf(res[k]) != cg_reg_type(cg, s->out_shapes[k]->et)) {
      ok = sfail(s->d, x, "combiner result type does not match the operand of");
      break;
    }
    cg_store_elem(cg, s->out[k], s->out_shapes[k], oi, res[k]);
  }
  cg_elemental_cache_reset(s->e, mark);
  LLVMBuildBr(b, skip);
  LLVMPositionBuilderAtEnd(b, skip);
  return ok;
}

/* Update elements [start, ns*nw) step `step`. */
static bool emit_updates(ScatterEmit *s, LLVMValueRef start, LLVMValueRef step) {
  Codegen *cg = s->cg;
  int mark = cg_elemental_cache_mark(s->e);
  CgLoop l;
  LLVMValueRef t = cg_loop_begin(cg, &l, start, cg_const_i64(cg, s->p->ns * s->p->nw),
                                 step, "update");
  bool ok = emit_update(s, t);
  cg_loop_end(cg, &l);
  cg_elemental_cache_reset(s->e, mark);
  return ok;
}

/* Whether scatter x, the hero of instr, has its result written over its
 * one operand, instr's operand `operand`, which nothing else reads: the
 * output then holds the operand's values already. */
static bool scatter_in_place(const HloInstr *instr, const HloInstr *x, int operand) {
  if (operand < 0 || operand >= instr->nops || x->nops != 3 || !shape_is_array(instr->shape))
    return false;
  const HloComp *c = cg_fusion_comp(instr);
  if (!c)
    return x == instr && operand == 0 && cg_same_bytes(x->ops[0]->shape, x->shape);
  const HloInstr *p = operand < c->nparams ? c->params[operand] : NULL;
  return p && c->root == x && x->ops[0] == p && cg_uses(c, p) == 1 &&
         cg_same_bytes(instr->ops[operand]->shape, p->shape) &&
         cg_same_bytes(p->shape, x->shape) && cg_same_bytes(x->shape, instr->shape);
}

static bool emit_gpu(ScatterEmit *s, bool copy, LaunchDims *ld) {
  Codegen *cg = s->cg;
  LLVMBuilderRef b = cg->b;
  int64_t nel = copy ? shape_elements(s->out_shapes[0]) : 0;
  int64_t nupd = s->p->ns * s->p->nw;
  bool parallel = s->p->x->unique_indices;
  int64_t want = !copy ? (parallel ? nupd : 1) : nel > (parallel ? nupd : 0) ? nel : nupd;
  int64_t block = (want + 31) / 32 * 32;
  if (block < 32)
    block = 32;
  if (block > S_GPU_BLOCK)
    block = S_GPU_BLOCK;
  ld->grid[0] = 1;
  ld->block[0] = (uint32_t)block;
  LLVMValueRef tid = LLVMBuildZExt(b, cg_sreg(cg, "tid.x"), cg_i64(cg), "");
  LLVMValueRef ntid = cg_const_i64(cg, block);
  if (copy) {
    if (!emit_copy(s, tid, ntid))
      return false;
    cg_barrier(cg);
  }
  if (parallel)
    return emit_updates(s, tid, ntid);
  LLVMValueRef fn = LLVMGetBasicBlockParent(LLVMGetInsertBlock(b));
  LLVMBasicBlockRef serial = LLVMAppendBasicBlockInContext(cg->ctx, fn, "serial");
  LLVMBasicBlockRef done = LLVMAppendBasicBlockInContext(cg->ctx, fn, "done");
  LLVMBuildCondBr(b, LLVMBuildICmp(b, LLVMIntEQ, tid, cg_const_i64(cg, 0), ""), serial, done);
  LLVMPositionBuilderAtEnd(b, serial);
  if (!emit_updates(s, cg_const_i64(cg, 0), cg_const_i64(cg, 1)))
    return false;
  LLVMBuildBr(b, done);
  LLVMPositionBuilderAtEnd(b, done);
  return true;
}

bool cg_emit_scatter_kernel(Codegen *cg, const HloInstr *instr,
                            const HloInstr *hero, const char *name,
                            LaunchDims *ld, Diag *d) {
  const HloComp *comp = cg_fusion_comp(instr);
  const HloInstr *root = comp ? comp->root : instr;
  if (root != hero)
    return sfail(d, hero, "scatter kernel: the fusion root is not the scatter");
  ScatterPlan p;
  if (!plan_scatter(hero, &p, d))
    return false;
  CgKernel k;
  if (!cg_kernel_begin(cg, instr, name, &k, d))
    return false;
  bool ok = k.nout == p.n;
  if (!ok)
    sfail(d, hero, "outputs do not match the operands of");
  for (int j = 0; j < k.nout && ok; j++) {
    const Shape *o = k.out_shapes[j];
    ok = o->rank == p.os->rank && o->et == hero->ops[j]->shape->et &&
         !memcmp(o->dims, p.os->dims, (size_t)o->rank * sizeof *o->dims);
    if (!ok)
      sfail(d, hero, "outputs do not match the operands of");
  }
  CgElemental *e = NULL;
  if (ok) {
    e = cg_elemental_new(cg, comp, comp ? NULL : instr, k.in, d);
    ScatterEmit s = {cg, e, &p, k.out, k.out_shapes, d};
    bool copy = !scatter_in_place(instr, hero, cg->in_place_operand);
    if (cg->is_gpu)
      ok = emit_gpu(&s, copy, ld);
    else
      ok = (!copy || emit_copy(&s, cg_const_i64(cg, 0), cg_const_i64(cg, 1))) &&
           emit_updates(&s, cg_const_i64(cg, 0), cg_const_i64(cg, 1));
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
