/*
 * gather_simplifier.c - "gather-simplifier" (XLA's GatherSimplifier):
 * rewrites every gather into the one simple form codegen handles,
 *
 *   gather(operand, indices[N, k]), index_vector_dim=1,
 *          offset_dims={1..rank(operand)}, collapsed_slice_dims={}
 *
 * surrounded by plain data movement:
 *   - the indices get their index vector dimension last (a transpose, or a
 *     reshape adding it when it was implicit) and their other dimensions
 *     merged into one (a reshape to [N, k]);
 *   - after the gather, the collapsed slice dimensions are removed and the
 *     N dimension split back into the indices' dimensions (reshapes), and a
 *     transpose puts the offset dimensions where offset_dims says.
 * A gather with a zero slice size is a broadcast zero; one from a scalar a
 * broadcast of it.  Gathers with batching dimensions are left alone (XLA
 * normalizes them first, in another pass).
 */
#include "passes.h"

#include "../lib/hlo/ir_edit.h"

static bool in_list(const I64List *l, int64_t v) {
  for (int k = 0; k < l->n; k++)
    if (l->v[k] == v)
      return true;
  return false;
}

static bool is_simple(const HloInstr *g) {
  const GatherDnums *d = g->gather;
  const HloInstr *idx = g->ops[1];
  if (idx->shape->rank != 2 || d->index_vector_dim != 1 ||
      d->collapsed_slice_dims.n != 0 || d->offset_dims.n == 0)
    return false;
  for (int k = 0; k < d->offset_dims.n; k++)
    if (d->offset_dims.v[k] != k + 1)
      return false;
  return true;
}

static bool same_dims(const Shape *s, int n, const int64_t *dims) {
  if (s->rank != n)
    return false;
  for (int k = 0; k < n; k++)
    if (s->dims[k] != dims[k])
      return false;
  return true;
}

static HloInstr *reshape_to(IrEdit *e, HloComp *c, HloInstr *x, int n,
                            const int64_t *dims) {
  return same_dims(x->shape, n, dims) ? x : ir_reshape(e, c, x, n, dims);
}

static I64List seq(Arena *a, int from, int n) {
  I64List l = {n, ARENA_ARRAY(a, int64_t, n > 0 ? n : 1)};
  for (int k = 0; k < n; k++)
    l.v[k] = from + k;
  return l;
}

static HloInstr *simplify(IrEdit *e, HloComp *c, HloInstr *g) {
  Arena *a = ir_arena(e);
  const GatherDnums *d = g->gather;
  HloInstr *op = g->ops[0], *idx = g->ops[1];
  int r = op->shape->rank;
  for (int k = 0; k < g->gather_slice_sizes.n; k++)
    if (g->gather_slice_sizes.v[k] == 0)
      return ir_scalar_like(e, c, g->shape, 0);
  if (r == 0)
    return ir_broadcast(e, c, op, g->shape, 0, NULL);
  /* Indices: vector dim last, the others merged: [N, k]. */
  int ir = idx->shape->rank;
  int64_t ivd = d->index_vector_dim;
  HloInstr *ix = idx;
  if (ivd == ir) {
    int64_t dims[66];
    for (int k = 0; k < ir; k++)
      dims[k] = idx->shape->dims[k];
    dims[ir] = 1;
    ix = ir_reshape(e, c, idx, ir + 1, dims);
    ir++;
  } else if (ivd != ir - 1) {
    int64_t perm[66];
    int n = 0;
    for (int k = 0; k < ir; k++)
      if (k != ivd)
        perm[n++] = k;
    perm[n++] = ivd;
    ix = ir_transpose(e, c, idx, perm);
  }
  int64_t batch[66];
  int nbatch = 0;
  int64_t count = 1;
  for (int k = 0; k < idx->shape->rank; k++)
    if (k != ivd) {
      batch[nbatch++] = idx->shape->dims[k];
      count *= idx->shape->dims[k];
    }
  int64_t kdim = ix->shape->dims[ir - 1];
  int64_t two[2] = {count, kdim};
  ix = reshape_to(e, c, ix, 2, two);
  /* The simple gather: [N, slice sizes...]. */
  int64_t gdims[66];
  gdims[0] = count;
  for (int k = 0; k < r; k++)
    gdims[k + 1] = g->gather_slice_sizes.v[k];
  HloInstr *ops[2] = {op, ix};
  HloInstr *ng = ir_clone(e, c, g, shape_array(a, g->shape->et, r + 1, gdims),
                          2, ops);
  GatherDnums *nd = ARENA_NEW(a, GatherDnums);
  *nd = *d;
  nd->offset_dims = seq(a, 1, r);
  nd->collapsed_slice_dims = (I64List){0, NULL};
  nd->index_vector_dim = 1;
  ng->gather = nd;
  /* Collapsed slice dims go; N splits into the indices' batch dims. */
  int64_t rdims[130];
  int nr = 0;
  for (int k = 0; k < nbatch; k++)
    rdims[nr++] = batch[k];
  for (int k = 0; k < r; k++)
    if (!in_list(&d->collapsed_slice_dims, k))
      rdims[nr++] = g->gather_slice_sizes.v[k];
  HloInstr *res = reshape_to(e, c, ng, nr, rdims);
  /* Offset dims to where offset_dims puts them. */
  int64_t perm[130];
  int next_offset = nbatch, next_batch = 0;
  bool identity = true;
  for (int k = 0; k < nr; k++) {
    perm[k] = in_list(&d->offset_dims, k) ? next_offset++ : next_batch++;
    identity &= perm[k] == k;
  }
  if (!identity)
    res = ir_transpose(e, c, res, perm);
  return res;
}

bool pass_gather_simplifier(HloModule *m, PassContext *ctx) {
  (void)ctx;
  IrEdit *e = ir_begin(m);
  bool changed = false;
  for (int ci = 0; ci < m->ncomps; ci++) {
    HloComp *c = m->comps[ci];
    int ninstrs = c->ninstrs;
    for (int k = 0; k < ninstrs; k++) {
      HloInstr *g = c->instrs[k];
      if (ir_removed(g) || g->op != HLO_GATHER || !g->gather ||
          g->nops != 2 || ir_has_control_deps(e, g) ||
          g->gather->operand_batching_dims.n != 0 ||
          g->gather->start_indices_batching_dims.n != 0 ||
          g->ops[0]->shape->rank > 64 || g->ops[1]->shape->rank > 64 ||
          g->shape->rank > 64 || is_simple(g))
        continue;
      HloInstr *r = simplify(e, c, g);
      r->shape = shape_clone(ir_arena(e), g->shape);
      ir_replace(e, g, r);
      changed = true;
    }
  }
  return ir_end(e, changed);
}
