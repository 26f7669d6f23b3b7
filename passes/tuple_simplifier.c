/*
 * tuple_simplifier.c - "tuple-simplifier" (XLA's TupleSimplifier):
 *
 *   get-tuple-element(tuple(a0, ..., an), i)            =>  ai
 *   tuple(gte(x, 0), gte(x, 1), ..., gte(x, n-1))       =>  x
 *     (x's shape the tuple's, every element taken in order)
 *
 * Instructions are visited in topological order, so chains through nested
 * tuples collapse in one run.  Instructions in control dependencies are
 * left alone.
 */
#include "passes.h"

#include "../lib/hlo/ir_edit.h"

/* tuple(gte(x,0), ..., gte(x,n-1)) with x of the same shape: x. */
static HloInstr *rebuilt_tuple_source(const HloInstr *t) {
  if (t->nops == 0)
    return NULL;
  HloInstr *x = NULL;
  for (int k = 0; k < t->nops; k++) {
    const HloInstr *g = t->ops[k];
    if (g->op != HLO_GET_TUPLE_ELEMENT || g->tuple_index != k)
      return NULL;
    if (x && g->ops[0] != x)
      return NULL;
    x = g->ops[0];
  }
  if (!shape_is_tuple(x->shape) || x->shape->ntuple != t->nops ||
      !shape_compatible(x->shape, t->shape))
    return NULL;
  return x;
}

bool pass_tuple_simplifier(HloModule *m, PassContext *ctx) {
  (void)ctx;
  IrEdit *e = ir_begin(m);
  bool changed = false;
  for (int ci = 0; ci < m->ncomps; ci++) {
    HloComp *c = m->comps[ci];
    for (int k = 0; k < c->ninstrs; k++) {
      HloInstr *i = c->instrs[k];
      if (ir_removed(i) || ir_has_control_deps(e, i))
        continue;
      HloInstr *v = NULL;
      if (i->op == HLO_GET_TUPLE_ELEMENT && i->ops[0]->op == HLO_TUPLE &&
          i->tuple_index >= 0 && i->tuple_index < i->ops[0]->nops)
        v = i->ops[0]->ops[i->tuple_index];
      else if (i->op == HLO_TUPLE)
        v = rebuilt_tuple_source(i);
      if (!v)
        continue;
      ir_replace(e, i, v);
      changed = true;
    }
  }
  return ir_end(e, changed);
}
