/*
 * zero_sized_hlo_elimination.c - "zero_sized_hlo_elimination" (XLA's
 * ZeroSizedHloElimination): an array instruction with no elements computes
 * nothing, so it is replaced by an empty constant of its shape.
 *
 * Left alone: constants, parameters, instructions with a side effect or in
 * a control dependency, dynamic shapes, and non-array results.
 */
#include "passes.h"

#include "../lib/hlo/ir_edit.h"

bool pass_zero_sized_hlo_elimination(HloModule *m, PassContext *ctx) {
  (void)ctx;
  IrEdit *e = ir_begin(m);
  bool changed = false;
  for (int ci = 0; ci < m->ncomps; ci++) {
    HloComp *c = m->comps[ci];
    if (c->fusion_instr)
      continue;
    for (int k = 0; k < c->ninstrs; k++) {
      HloInstr *i = c->instrs[k];
      if (ir_removed(i) || i->op == HLO_CONSTANT || i->op == HLO_PARAMETER ||
          !shape_is_array(i->shape) || shape_is_dynamic(i->shape) ||
          shape_elements(i->shape) != 0 || ir_has_control_deps(e, i) ||
          ir_has_side_effect_deep(i))
        continue;
      Literal *l = literal_new(ir_arena(e), shape_clone(ir_arena(e), i->shape));
      HloInstr *z = ir_constant(e, c, l);
      ir_replace(e, i, z);
      changed = true;
    }
  }
  return ir_end(e, changed);
}
