/*
 * dot_decomposer.c - "dot-decomposer" (XLA's DotDecomposer): puts every
 * dot into the canonical form GEMM emitters expect,
 *
 *   lhs [batch..., M, K]  x  rhs [batch..., K, N]  ->  [batch..., M, N]
 *
 * with the batch dimensions first (in order 0..b-1 on both sides), one
 * contracting dimension and at most one non-contracting dimension per side.
 * A dot that is not canonical becomes: each operand transposed to batch,
 * then non-contracting, then contracting dims (rhs: contracting before
 * non-contracting), reshaped to merge the non-contracting dims into one
 * (left out when their product is 1) and the contracting dims into one
 * (always present, size 1 when there were none); the canonical dot; and a
 * reshape back to the original result shape.
 *
 * Contracting dimensions merge in the order the dimension numbers pair
 * them, so the dot sums the same products.  Sparse and ragged dots are left
 * alone.
 */
#include "passes.h"

#include "../lib/hlo/ir_edit.h"

static bool in_list(const I64List *l, int64_t v) {
  for (int k = 0; k < l->n; k++)
    if (l->v[k] == v)
      return true;
  return false;
}

static bool is_canonical(const HloInstr *d) {
  const DotDnums *dn = d->dot;
  int b = dn->lhs_batch.n;
  if (dn->lhs_contracting.n != 1)
    return false;
  if (b + 2 < d->ops[0]->shape->rank || b + 2 < d->ops[1]->shape->rank)
    return false;
  for (int k = 0; k < b; k++)
    if (dn->lhs_batch.v[k] != k || dn->rhs_batch.v[k] != k)
      return false;
  return true;
}

/* One operand in canonical form: [batch, (free), contract] for the lhs,
 * [batch, contract, (free)] for the rhs.  *free_size gets the product of
 * its free dims and *has_free whether that dim is kept. */
static HloInstr *canonical_operand(IrEdit *e, HloComp *c, HloInstr *x,
                                   const I64List *batch,
                                   const I64List *contract, bool lhs,
                                   int64_t *free_size, bool *has_free) {
  Arena *a = ir_arena(e);
  int r = x->shape->rank;
  int64_t *perm = ARENA_ARRAY(a, int64_t, r > 0 ? r : 1);
  int n = 0;
  for (int k = 0; k < batch->n; k++)
    perm[n++] = batch->v[k];
  int64_t fsize = 1, csize = 1;
  int nfree = 0;
  for (int k = 0; k < r; k++)
    if (!in_list(batch, k) && !in_list(contract, k)) {
      fsize *= x->shape->dims[k];
      nfree++;
    }
  for (int k = 0; k < contract->n; k++)
    csize *= x->shape->dims[contract->v[k]];
  /* lhs: free then contracting; rhs: contracting then free. */
  if (lhs) {
    for (int k = 0; k < r; k++)
      if (!in_list(batch, k) && !in_list(contract, k))
        perm[n++] = k;
    for (int k = 0; k < contract->n; k++)
      perm[n++] = contract->v[k];
  } else {
    for (int k = 0; k < contract->n; k++)
      perm[n++] = contract->v[k];
    for (int k = 0; k < r; k++)
      if (!in_list(batch, k) && !in_list(contract, k))
        perm[n++] = k;
  }
  bool identity = true;
  for (int k = 0; k < r; k++)
    identity &= perm[k] == k;
  HloInstr *y = identity ? x : ir_transpose(e, c, x, perm);
  *free_size = fsize;
  *has_free = nfree > 0 && fsize != 1;
  int64_t dims[66];
  int nd = 0;
  for (int k = 0; k < batch->n; k++)
    dims[nd++] = x->shape->dims[batch->v[k]];
  if (lhs && *has_free)
    dims[nd++] = fsize;
  dims[nd++] = csize;
  if (!lhs && *has_free)
    dims[nd++] = fsize;
  bool same = nd == y->shape->rank;
  for (int k = 0; same && k < nd; k++)
    same = dims[k] == y->shape->dims[k];
  return same ? y : ir_reshape(e, c, y, nd, dims);
}

bool pass_dot_decomposer(HloModule *m, PassContext *ctx) {
  (void)ctx;
  IrEdit *e = ir_begin(m);
  Arena *a = ir_arena(e);
  bool changed = false;
  for (int ci = 0; ci < m->ncomps; ci++) {
    HloComp *c = m->comps[ci];
    int ninstrs = c->ninstrs;
    for (int k = 0; k < ninstrs; k++) {
      HloInstr *i = c->instrs[k];
      if (ir_removed(i) || i->op != HLO_DOT || i->nops != 2 || !i->dot ||
          i->sparsity || i->dot->lhs_ragged.n || i->dot->rhs_group.n ||
          ir_has_control_deps(e, i) || !shape_is_array(i->shape) ||
          i->shape->rank > 64 || i->ops[0]->shape->rank > 64 ||
          i->ops[1]->shape->rank > 64 || is_canonical(i))
        continue;
      const DotDnums *dn = i->dot;
      int b = dn->lhs_batch.n;
      int64_t m_size, n_size;
      bool has_m, has_n;
      HloInstr *l = canonical_operand(e, c, i->ops[0], &dn->lhs_batch,
                                      &dn->lhs_contracting, true, &m_size,
                                      &has_m);
      HloInstr *r = canonical_operand(e, c, i->ops[1], &dn->rhs_batch,
                                      &dn->rhs_contracting, false, &n_size,
                                      &has_n);
      int64_t dims[66];
      int nd = 0;
      for (int q = 0; q < b; q++)
        dims[nd++] = i->shape->dims[q];
      if (has_m)
        dims[nd++] = m_size;
      if (has_n)
        dims[nd++] = n_size;
      HloInstr *ops[2] = {l, r};
      HloInstr *d = ir_clone(e, c, i, shape_array(a, i->shape->et, nd, dims),
                             2, ops);
      DotDnums *nn = ARENA_NEW(a, DotDnums);
      int64_t *seq = ARENA_ARRAY(a, int64_t, b + 2);
      for (int q = 0; q < b + 2; q++)
        seq[q] = q;
      nn->lhs_batch = (I64List){b, seq};
      nn->rhs_batch = (I64List){b, seq};
      nn->lhs_contracting = (I64List){1, &seq[l->shape->rank - 1]};
      nn->rhs_contracting = (I64List){1, &seq[b]};
      d->dot = nn;
      bool same = nd == i->shape->rank;
      for (int q = 0; same && q < nd; q++)
        same = dims[q] == i->shape->dims[q];
      HloInstr *res = same ? d
                           : ir_reshape(e, c, d, i->shape->rank,
                                        i->shape->dims);
      res->shape = shape_clone(a, i->shape);
      ir_replace(e, i, res);
      changed = true;
    }
  }
  return ir_end(e, changed);
}
