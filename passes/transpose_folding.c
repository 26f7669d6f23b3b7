/*
 * transpose_folding.c - "transpose-folding" (XLA's TransposeFolding, for
 * dots): a transpose feeding a dot operand is folded into the dot's
 * dimension numbers, since a GEMM reads either operand transposed for free:
 *
 *   dot(transpose(x), y)  =>  dot(x, y) with the contracting dimensions
 *                             renamed through the permutation
 *
 * Folded only when the transpose keeps every batch dimension in place and
 * keeps the non-contracting dimensions in their order, so the dot's result
 * is laid out exactly as before.
 *
 * The loop case (JAX's scan over stacked layer weights): a transposed
 * weight stack passed into a while loop whose body reads it only through
 * slices of one layer,
 *
 *   w = while(tuple(..., transpose(x), ...))       element k passed through
 *   body: dynamic-slice(get-tuple-element(p, k), i, 0, ...)
 *     =>
 *   w = while(tuple(..., x, ...))
 *   body: reshape(dynamic-slice(get-tuple-element(p, k), 0, i, ...))
 *
 * The loop state carries x itself, and each slice reads x with its starts
 * and sizes permuted.  Done only when every such slice of the transpose
 * is a reshape of the slice of x (the transpose moves nothing but the
 * dimensions the slice cuts to size 1), so nothing is transposed at all:
 * before, the whole stack was materialized transposed once (JAX gives the
 * transpose a layout that makes it a bitcast; this backend's layouts are
 * row-major, so it would be a copy of the stack) and carried in the loop.
 * Element k must be passed through unchanged, be read by the body only by
 * such slices and by the condition not at all, and the loop's result be
 * read by get-tuple-element only (those of element k get the transpose
 * back, outside the loop).  Anything else keeps the old form.
 */
#include "passes.h"

#include <stdlib.h>
#include <string.h>

#include "../lib/hlo/ir_edit.h"

static bool in_list(const I64List *l, int64_t v) {
  for (int k = 0; k < l->n; k++)
    if (l->v[k] == v)
      return true;
  return false;
}

/* Whether transpose t can fold into the dot side with these dims; the new
 * contracting dims in *out (arena). */
static bool can_fold(Arena *a, const HloInstr *t, const I64List *batch,
                     const I64List *contract, I64List *out) {
  const int64_t *p = t->dims.v;
  int r = t->shape->rank;
  for (int k = 0; k < batch->n; k++)
    if (p[batch->v[k]] != batch->v[k])
      return false;
  int64_t last = -1;
  for (int k = 0; k < r; k++) {
    if (in_list(batch, k) || in_list(contract, k))
      continue;
    if (p[k] <= last)
      return false;
    last = p[k];
  }
  out->n = contract->n;
  out->v = ARENA_ARRAY(a, int64_t, contract->n > 0 ? contract->n : 1);
  for (int k = 0; k < contract->n; k++)
    out->v[k] = p[contract->v[k]];
  return true;
}

/* A slice of transpose(x, perm) with dimensions `dims` is a reshape of the
 * matching slice of x when its dimensions above size 1 keep their order in
 * x (perm[j] increasing over them). */
static bool slice_is_reshape(const int64_t *perm, const int64_t *dims,
                             int rank) {
  int64_t last = -1;
  for (int j = 0; j < rank; j++) {
    if (dims[j] == 1)
      continue;
    if (perm[j] <= last)
      return false;
    last = perm[j];
  }
  return true;
}

/* u reads the state element g (shape of transpose(x, perm)) as a slice
 * that is a reshape of the same slice of x. */
static bool loop_slice_ok(const HloInstr *u, const HloInstr *g,
                          const int64_t *perm, int rank) {
  if (u->ops[0] != g || !shape_is_array(u->shape) || u->shape->rank != rank ||
      shape_is_dynamic(u->shape) || ir_removed(u))
    return false;
  if (u->op == HLO_DYNAMIC_SLICE) {
    if (u->nops != rank + 1 || u->dynamic_slice_sizes.n != rank)
      return false;
    for (int j = 1; j < u->nops; j++)
      if (u->ops[j] == g)
        return false;
  } else if (u->op != HLO_SLICE || u->nops != 1 || !u->slice) {
    return false;
  }
  return slice_is_reshape(perm, u->shape->dims, rank);
}

/* Whether element k of loop w, initialized by transpose t, can carry t's
 * operand instead (see the file comment). */
static bool loop_element_ok(IrEdit *e, HloInstr *w, int k, HloInstr *t) {
  HloComp *cond = w->called[0], *body = w->called[1];
  int rank = t->shape->rank;
  if (t->op != HLO_TRANSPOSE || t->dims.n != rank ||
      !shape_is_array(t->shape) || shape_is_dynamic(t->shape) ||
      shape_is_dynamic(t->ops[0]->shape) || rank > 64)
    return false;
  HloInstr *root = body->root, **us;
  HloInstr *pass = root->ops[k];
  if (pass->op != HLO_GET_TUPLE_ELEMENT || pass->ops[0] != body->params[0] ||
      pass->tuple_index != k)
    return false;
  for (int j = 0; j < root->nops; j++)
    if (j != k && root->ops[j] == pass)
      return false;
  int nu = ir_users(e, cond->params[0], &us);
  for (int j = 0; j < nu; j++)
    if (us[j]->op != HLO_GET_TUPLE_ELEMENT || us[j]->tuple_index == k)
      return false;
  HloInstr *param = body->params[0];
  nu = ir_users(e, param, &us);
  HloInstr **gs = xmalloc(sizeof *gs * (size_t)(nu > 0 ? nu : 1));
  int ng = 0;
  bool ok = true;
  for (int j = 0; j < nu && ok; j++) {
    if (us[j]->op != HLO_GET_TUPLE_ELEMENT)
      ok = false;
    else if (us[j]->tuple_index == k)
      gs[ng++] = us[j];
  }
  for (int q = 0; q < ng && ok; q++) {
    HloInstr *g = gs[q], **gu;
    if (ir_has_control_deps(e, g))
      ok = false;
    int ngu = ir_users(e, g, &gu);
    for (int j = 0; j < ngu && ok; j++)
      ok = gu[j] == root ? g == pass
                         : loop_slice_ok(gu[j], g, t->dims.v, rank) &&
                               !ir_has_control_deps(e, gu[j]);
  }
  free(gs);
  return ok;
}

/* shape s (a tuple) with element k replaced by el. */
static Shape *with_element(Arena *a, const Shape *s, int k, const Shape *el) {
  Shape **elems = ARENA_ARRAY(a, Shape *, s->ntuple);
  for (int j = 0; j < s->ntuple; j++)
    elems[j] = shape_clone(a, j == k ? el : s->tuple[j]);
  return shape_tuple(a, s->ntuple, elems);
}

/* Rewrites loop w to carry x = t's operand at element k. */
static void fold_into_loop(IrEdit *e, HloComp *c, HloInstr *w, int k,
                           HloInstr *t) {
  Arena *a = ir_arena(e);
  HloComp *cond = w->called[0], *body = w->called[1];
  HloInstr *x = t->ops[0], *param = body->params[0], *root = body->root;
  const int64_t *perm = t->dims.v;
  int rank = t->shape->rank;
  Shape *xs = x->shape;
  /* The state's shape, everywhere it is spelled. */
  Shape *state = with_element(a, w->shape, k, xs);
  w->shape = state;
  param->shape = shape_clone(a, state);
  cond->params[0]->shape = shape_clone(a, state);
  root->shape = shape_clone(a, state);
  /* The body: its get-tuple-elements of element k read x, and each slice
   * of them reads x's slice and reshapes it. */
  HloInstr **us;
  int nu = ir_users(e, param, &us);
  HloInstr **gs = xmalloc(sizeof *gs * (size_t)(nu > 0 ? nu : 1));
  int ng = 0;
  for (int j = 0; j < nu; j++)
    if (us[j]->tuple_index == k)
      gs[ng++] = us[j];
  for (int q = 0; q < ng; q++) {
    HloInstr *g = gs[q], **gu;
    g->shape = shape_clone(a, xs);
    int ngu = ir_users(e, g, &gu);
    HloInstr **slices = xmalloc(sizeof *slices * (size_t)(ngu > 0 ? ngu : 1));
    int ns = 0;
    for (int j = 0; j < ngu; j++)
      if (gu[j] != root)
        slices[ns++] = gu[j];
    for (int j = 0; j < ns; j++) {
      HloInstr *u = slices[j];
      int64_t dims[64];
      for (int d = 0; d < rank; d++)
        dims[perm[d]] = u->shape->dims[d];
      Shape *ss = shape_array(a, u->shape->et, rank, dims);
      HloInstr *ops[65];
      ops[0] = g;
      HloInstr *v;
      if (u->op == HLO_DYNAMIC_SLICE) {
        for (int d = 0; d < rank; d++)
          ops[1 + perm[d]] = u->ops[1 + d];
        v = ir_clone(e, body, u, ss, rank + 1, ops);
        I64List sizes = {rank, ARENA_ARRAY(a, int64_t, rank > 0 ? rank : 1)};
        for (int d = 0; d < rank; d++)
          sizes.v[perm[d]] = u->dynamic_slice_sizes.v[d];
        v->dynamic_slice_sizes = sizes;
      } else {
        v = ir_clone(e, body, u, ss, 1, ops);
        SliceDim *sl = ARENA_ARRAY(a, SliceDim, rank > 0 ? rank : 1);
        for (int d = 0; d < rank; d++)
          sl[perm[d]] = u->slice[d];
        v->slice = sl;
      }
      HloInstr *r = ir_reshape(e, body, v, rank, u->shape->dims);
      r->metadata = u->metadata;
      ir_replace(e, u, r);
    }
    free(slices);
  }
  free(gs);
  /* Outside: the loop's element k is x; its readers get the transpose. */
  nu = ir_users(e, w, &us);
  HloInstr **outs = xmalloc(sizeof *outs * (size_t)(nu > 0 ? nu : 1));
  int no = 0;
  for (int j = 0; j < nu; j++)
    if (us[j]->tuple_index == k)
      outs[no++] = us[j];
  for (int j = 0; j < no; j++) {
    HloInstr *g = outs[j];
    Shape *old = g->shape;
    g->shape = shape_clone(a, xs);
    HloInstr *tr = ir_transpose(e, c, g, perm);
    tr->shape = shape_clone(a, old);
    ir_replace_uses_except(e, g, tr, tr);
    ir_remove_dead(e, tr);
  }
  free(outs);
  /* The initial state holds x. */
  HloInstr *init = w->ops[0];
  HloInstr **el = ARENA_ARRAY(a, HloInstr *, init->nops);
  for (int j = 0; j < init->nops; j++)
    el[j] = j == k ? x : init->ops[j];
  ir_set_operand(e, w, 0, ir_tuple(e, c, init->nops, el));
  ir_remove_dead(e, init);
}

/* Folds transposes in w's initial state into its body's slices. */
static bool fold_loop(IrEdit *e, HloComp *c, HloInstr *w) {
  if (w->ncalled != 2 || w->nops != 1 || !shape_is_tuple(w->shape) ||
      ir_is_root(w) || ir_has_control_deps(e, w))
    return false;
  HloComp *cond = w->called[0], *body = w->called[1];
  HloInstr *init = w->ops[0];
  int n = w->shape->ntuple;
  if (cond == body || ir_call_count(e, cond) != 1 ||
      ir_call_count(e, body) != 1 || body->nparams != 1 ||
      cond->nparams != 1 || !body->root || body->root->op != HLO_TUPLE ||
      body->root->nops != n || init->op != HLO_TUPLE || init->nops != n ||
      ir_has_control_deps(e, body->root))
    return false;
  HloInstr **us;
  int nu = ir_users(e, w, &us);
  for (int j = 0; j < nu; j++)
    if (us[j]->op != HLO_GET_TUPLE_ELEMENT)
      return false;
  bool changed = false;
  for (int k = 0; k < n; k++) {
    HloInstr *t = w->ops[0]->ops[k];
    if (loop_element_ok(e, w, k, t)) {
      fold_into_loop(e, c, w, k, t);
      changed = true;
    }
  }
  return changed;
}

bool pass_transpose_folding(HloModule *m, PassContext *ctx) {
  (void)ctx;
  IrEdit *e = ir_begin(m);
  Arena *a = ir_arena(e);
  bool changed = false;
  for (int ci = 0; ci < m->ncomps; ci++) {
    HloComp *c = m->comps[ci];
    for (int k = 0; k < c->ninstrs; k++) {
      HloInstr *i = c->instrs[k];
      if (!ir_removed(i) && i->op == HLO_WHILE) {
        changed |= fold_loop(e, c, i);
        continue;
      }
      if (ir_removed(i) || i->op != HLO_DOT || i->nops != 2 || !i->dot ||
          i->sparsity || i->dot->lhs_ragged.n || i->dot->rhs_group.n ||
          ir_has_control_deps(e, i))
        continue;
      DotDnums dn = *i->dot;
      HloInstr *ops[2] = {i->ops[0], i->ops[1]};
      bool folded = false;
      for (int side = 0; side < 2; side++) {
        HloInstr *t = ops[side];
        if (t->op != HLO_TRANSPOSE || t->dims.n != t->shape->rank)
          continue;
        I64List *batch = side == 0 ? &dn.lhs_batch : &dn.rhs_batch;
        I64List *contract = side == 0 ? &dn.lhs_contracting : &dn.rhs_contracting;
        I64List nc;
        if (!can_fold(a, t, batch, contract, &nc))
          continue;
        *contract = nc;
        ops[side] = t->ops[0];
        folded = true;
      }
      if (!folded)
        continue;
      HloInstr *d = ir_clone(e, c, i, NULL, 2, ops);
      d->dot = ARENA_NEW(a, DotDnums);
      *d->dot = dn;
      ir_replace(e, i, d);
      changed = true;
    }
  }
  return ir_end(e, changed);
}
