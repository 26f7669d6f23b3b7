/*
 * annotation_remover.c - "annotation-remover": removes the custom-calls that
 * only annotate their operand (lib/hlo/custom_call_targets.c: Sharding and
 * the SPMD and Shardy shape markers, as XLA's ShardingRemover does, and the
 * host offloading and device placement markers MoveToHost, MoveToDevice,
 * annotate_device_placement, ...), and domain instructions (sharding
 * domains' boundaries, as XLA's DomainRemover removes them).  xhloc
 * compiles for one device with no host offloading, where each of them is
 * the identity: users take the operand instead.  When the annotation's result has another layout than
 * its operand, a copy into that layout takes its place.
 *
 * A marker whose result shape differs from its operand's (an SPMD shard
 * shape on several partitions) is no identity; it is left alone and the
 * backend reports it by name.
 */
#include "passes.h"

#include "../lib/hlo/ir_edit.h"

static bool same_layouts(const Shape *a, const Shape *b) {
  if (a->et == ET_TUPLE) {
    for (int k = 0; k < a->ntuple; k++)
      if (!same_layouts(a->tuple[k], b->tuple[k]))
        return false;
    return true;
  }
  if (!a->layout || !b->layout)
    return !a->layout == !b->layout ||
           layout_is_default(a->layout ? a->layout : b->layout, a->rank);
  return shape_equal(a, b);
}

bool pass_annotation_remover(HloModule *m, PassContext *ctx) {
  (void)ctx;
  IrEdit *e = ir_begin(m);
  bool changed = false;
  for (int ci = 0; ci < m->ncomps; ci++) {
    HloComp *c = m->comps[ci];
    for (int k = 0; k < c->ninstrs; k++) {
      HloInstr *i = c->instrs[k];
      bool annotation = i->op == HLO_DOMAIN ||
                        (i->op == HLO_CUSTOM_CALL && i->cc &&
                         custom_call_is_annotation(i->cc->target));
      if (ir_removed(i) || !annotation || i->nops != 1 ||
          !shape_compatible(i->shape, i->ops[0]->shape) ||
          ir_has_control_deps(e, i))
        continue;
      HloInstr *v = i->ops[0];
      if (!same_layouts(i->shape, v->shape)) {
        if (i->shape->et == ET_TUPLE)
          continue;
        v = ir_new(e, c, HLO_COPY, i->shape, 1, &v);
      }
      ir_replace(e, i, v);
      changed = true;
    }
  }
  return ir_end(e, changed);
}
