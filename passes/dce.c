/*
 * dce.c - "dce" (XLA's HloDCE): removes dead instructions from every
 * computation, then the computations the entry no longer reaches.
 *
 * An instruction is dead when nothing uses it and it is not its
 * computation's root.  Parameters stay (removing one would renumber the
 * others), and so do instructions with a side effect (or calling
 * computations that have one) and instructions in a control dependency.  A
 * while loop whose body and condition have no side effect is removable like
 * any other instruction.
 *
 * Instructions are in topological order, so one backward sweep over each
 * computation sees every user before the instruction it uses.
 */
#include "passes.h"

#include "../lib/hlo/ir_edit.h"

bool pass_dce(HloModule *m, PassContext *ctx) {
  (void)ctx;
  IrEdit *e = ir_begin(m);
  bool changed = false;
  for (int ci = 0; ci < m->ncomps; ci++) {
    HloComp *c = m->comps[ci];
    for (int k = c->ninstrs - 1; k >= 0; k--) {
      HloInstr *i = c->instrs[k];
      if (ir_removable(e, i)) {
        ir_remove(e, i);
        changed = true;
      }
    }
  }
  changed |= ir_remove_unused_comps(e);
  return ir_end(e, changed);
}
