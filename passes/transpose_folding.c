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
 */
#include "passes.h"

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

bool pass_transpose_folding(HloModule *m, PassContext *ctx) {
  (void)ctx;
  IrEdit *e = ir_begin(m);
  Arena *a = ir_arena(e);
  bool changed = false;
  for (int ci = 0; ci < m->ncomps; ci++) {
    HloComp *c = m->comps[ci];
    for (int k = 0; k < c->ninstrs; k++) {
      HloInstr *i = c->instrs[k];
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
