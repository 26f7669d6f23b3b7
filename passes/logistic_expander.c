/*
 * logistic_expander.c - "logistic-expander" (XLA's LogisticExpander, exp
 * form):
 *
 *   logistic(x)  =>  1 / (1 + exp(-x))
 *
 * with 1 broadcast to x's shape.
 */
#include "passes.h"

#include "../lib/hlo/ir_edit.h"

bool pass_logistic_expander(HloModule *m, PassContext *ctx) {
  (void)ctx;
  IrEdit *e = ir_begin(m);
  bool changed = false;
  for (int ci = 0; ci < m->ncomps; ci++) {
    HloComp *c = m->comps[ci];
    for (int k = 0; k < c->ninstrs; k++) {
      HloInstr *i = c->instrs[k];
      if (ir_removed(i) || i->op != HLO_LOGISTIC || ir_has_control_deps(e, i))
        continue;
      HloInstr *x = i->ops[0];
      HloInstr *one = ir_scalar_like(e, c, x->shape, 1.0);
      HloInstr *neg = ir_unary(e, c, HLO_NEGATE, x);
      HloInstr *ex = ir_unary(e, c, HLO_EXP, neg);
      HloInstr *den = ir_binary(e, c, HLO_ADD, one, ex);
      HloInstr *r = ir_binary(e, c, HLO_DIVIDE, one, den);
      r->metadata = i->metadata;
      ir_replace(e, i, r);
      changed = true;
    }
  }
  return ir_end(e, changed);
}
