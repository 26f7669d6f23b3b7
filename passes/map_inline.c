/*
 * map_inline.c - "map-inline" (XLA's MapInliner): a map whose computation
 * is a single operation on its parameters becomes that operation on the
 * map's operands:
 *
 *   map(x, y), to_apply={ROOT add(p0, p1)}   =>  add(x, y)
 *   map(x, y), to_apply={ROOT p1}             =>  y
 *   map(x), to_apply={ROOT constant(c)}       =>  broadcast(constant(c))
 *
 * The operation keeps its attributes (comparison direction, ...) and takes
 * the map's shape.  Only elementwise operations qualify.
 */
#include "passes.h"

#include "../lib/hlo/ir_edit.h"

bool pass_map_inline(HloModule *m, PassContext *ctx) {
  (void)ctx;
  IrEdit *e = ir_begin(m);
  bool changed = false;
  for (int ci = 0; ci < m->ncomps; ci++) {
    HloComp *c = m->comps[ci];
    int ninstrs = c->ninstrs;
    for (int k = 0; k < ninstrs; k++) {
      HloInstr *i = c->instrs[k];
      if (ir_removed(i) || i->op != HLO_MAP || i->ncalled != 1 ||
          ir_has_control_deps(e, i))
        continue;
      const HloComp *f = i->called[0];
      const HloInstr *root = f->root;
      int live = 0;
      for (int q = 0; q < f->ninstrs; q++)
        live += !ir_removed(f->instrs[q]);
      if (!root || f->nparams != i->nops ||
          live != f->nparams + (root->op != HLO_PARAMETER))
        continue;
      HloInstr *r = NULL;
      if (root->op == HLO_PARAMETER) {
        r = i->ops[root->param_number];
      } else if (root->op == HLO_CONSTANT && shape_is_scalar(root->shape)) {
        HloInstr *k0 = ir_clone(e, c, root, NULL, 0, NULL);
        r = ir_broadcast(e, c, k0, i->shape, 0, NULL);
      } else if (hlo_op_is_elementwise(root->op) &&
                 !ir_has_side_effect(root)) {
        HloInstr *ops[8];
        bool ok = root->nops <= 8;
        for (int q = 0; ok && q < root->nops; q++) {
          ok = root->ops[q]->op == HLO_PARAMETER;
          if (ok)
            ops[q] = i->ops[root->ops[q]->param_number];
        }
        if (!ok)
          continue;
        r = ir_clone(e, c, root, shape_clone(ir_arena(e), i->shape),
                     root->nops, ops);
      }
      if (!r)
        continue;
      ir_replace(e, i, r);
      changed = true;
    }
  }
  return ir_end(e, changed);
}
