/*
 * conditional_simplifier.c - "conditional-simplifier" (XLA's
 * ConditionalSimplifier, its branch-removing part): a conditional whose
 * branch is known is replaced by that branch's body, inlined.
 *
 *   - the selector is a constant: pred true takes branch 0, false branch 1;
 *     an s32 index takes that branch, or the last one when out of range;
 *   - there is only one branch.
 *
 * Left alone: conditionals in control dependencies and ones whose branches
 * have side effects (XLA keeps those too, so that their order with other
 * side effects cannot change).
 */
#include "passes.h"

#include "../lib/hlo/ir_edit.h"

/* The branch a conditional takes for sure, or -1. */
static int known_branch(const HloInstr *i) {
  if (i->ncalled == 1)
    return 0;
  const HloInstr *sel = i->ops[0];
  if (sel->op != HLO_CONSTANT || !sel->literal || sel->literal->elided ||
      !sel->literal->data || !shape_is_scalar(sel->shape))
    return -1;
  if (sel->shape->et == ET_PRED)
    return literal_get_s64(sel->literal, 0) ? 0 : 1;
  int64_t b = literal_get_s64(sel->literal, 0);
  return b >= 0 && b < i->ncalled ? (int)b : i->ncalled - 1;
}

bool pass_conditional_simplifier(HloModule *m, PassContext *ctx) {
  (void)ctx;
  IrEdit *e = ir_begin(m);
  bool changed = false;
  for (int ci = 0; ci < m->ncomps; ci++) {
    HloComp *c = m->comps[ci];
    int ninstrs = c->ninstrs;
    for (int k = 0; k < ninstrs; k++) {
      HloInstr *i = c->instrs[k];
      if (ir_removed(i) || i->op != HLO_CONDITIONAL ||
          i->nops != i->ncalled + 1 || ir_has_control_deps(e, i) ||
          ir_has_side_effect_deep(i))
        continue;
      int b = known_branch(i);
      if (b < 0)
        continue;
      HloInstr *arg = i->ops[1 + b];
      HloInstr *r = ir_inline(e, c, i->called[b], &arg);
      ir_replace(e, i, r);
      changed = true;
    }
  }
  return ir_end(e, changed);
}
