/*
 * optimization_barrier_expander.c - "optimization-barrier-expander" (XLA's
 * OptimizationBarrierExpander): removes opt-barrier instructions, whose
 * job (keeping passes from moving computation across them) is done once
 * the passes that would have moved it have run.  A barrier is the identity
 * on its operand, so its users use the operand instead.
 *
 * On a scheduled module the instruction order is the schedule and is kept
 * as it is: removing the barrier moves nothing.
 */
#include "passes.h"

#include "../lib/hlo/ir_edit.h"

bool pass_optimization_barrier_expander(HloModule *m, PassContext *ctx) {
  (void)ctx;
  IrEdit *e = ir_begin(m);
  bool changed = false;
  for (int ci = 0; ci < m->ncomps; ci++) {
    HloComp *c = m->comps[ci];
    for (int k = 0; k < c->ninstrs; k++) {
      HloInstr *i = c->instrs[k];
      if (ir_removed(i) || i->op != HLO_OPTIMIZATION_BARRIER ||
          ir_has_control_deps(e, i))
        continue;
      ir_replace_all_uses(e, i, i->ops[0]);
      ir_remove(e, i);
      changed = true;
    }
  }
  return ir_end(e, changed);
}
