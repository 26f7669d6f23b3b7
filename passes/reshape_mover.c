/*
 * reshape_mover.c - "reshape-mover" (XLA's ReshapeMover): moves reshapes
 * and transposes past elementwise operations, toward the outputs, so that
 * they meet and cancel (algsimp) or sink out of fusions:
 *
 *   op(reshape(a), reshape(b))          =>  reshape(op(a, b))
 *   op(transpose(a), broadcast(scalar)) =>  transpose(op(a, broadcast(scalar)))
 *
 * Every operand must be either an equivalent rearrangement (the same kind,
 * from the same input dimensions, the same permutation for transposes) or
 * a broadcast of a scalar (rebroadcast to the input shape), and at least one
 * must be a rearrangement.  Rearrangements used elsewhere are left alone, so
 * moving never adds a reshape.
 */
#include "passes.h"

#include "../lib/hlo/ir_edit.h"

static bool same_dims(const Shape *a, const Shape *b) {
  if (a->rank != b->rank)
    return false;
  for (int k = 0; k < a->rank; k++)
    if (a->dims[k] != b->dims[k])
      return false;
  return true;
}

static bool is_rearrange(const HloInstr *x) {
  if (x->op == HLO_RESHAPE)
    return !same_dims(x->shape, x->ops[0]->shape);
  if (x->op == HLO_TRANSPOSE) {
    for (int k = 0; k < x->dims.n; k++)
      if (x->dims.v[k] != k)
        return true;
  }
  return false;
}

static bool equivalent(const HloInstr *a, const HloInstr *b) {
  if (a->op != b->op || !same_dims(a->ops[0]->shape, b->ops[0]->shape))
    return false;
  if (a->op == HLO_TRANSPOSE)
    for (int k = 0; k < a->dims.n; k++)
      if (a->dims.v[k] != b->dims.v[k])
        return false;
  return true;
}

static bool scalar_broadcast(const HloInstr *x) {
  return x->op == HLO_BROADCAST && x->ops[0]->shape->rank == 0;
}

static bool movable_op(const HloInstr *i) {
  if (!hlo_op_is_elementwise(i->op) || i->nops == 0 || ir_has_side_effect(i))
    return false;
  switch (i->op) {
  case HLO_RNG: case HLO_STOCHASTIC_CONVERT: case HLO_BITCAST_CONVERT:
    return false; /* bitcast-convert may change the rank */
  default:
    return true;
  }
}

bool pass_reshape_mover(HloModule *m, PassContext *ctx) {
  (void)ctx;
  IrEdit *e = ir_begin(m);
  Arena *a = ir_arena(e);
  bool changed = false;
  for (int ci = 0; ci < m->ncomps; ci++) {
    HloComp *c = m->comps[ci];
    for (int k = 0; k < c->ninstrs; k++) {
      HloInstr *i = c->instrs[k];
      if (ir_removed(i) || !movable_op(i) || ir_has_control_deps(e, i))
        continue;
      const HloInstr *first = NULL;
      for (int j = 0; j < i->nops && !first; j++)
        if (is_rearrange(i->ops[j]))
          first = i->ops[j];
      if (!first)
        continue;
      const Shape *in = first->ops[0]->shape;
      bool ok = true;
      for (int j = 0; j < i->nops && ok; j++) {
        HloInstr *o = i->ops[j];
        if (scalar_broadcast(o))
          continue;
        ok = is_rearrange(o) && equivalent(o, first) &&
             ir_user_count(e, o) == 1 && !ir_has_control_deps(e, o);
      }
      if (!ok)
        continue;
      HloInstr *ops[8];
      if (i->nops > 8)
        continue;
      for (int j = 0; j < i->nops; j++) {
        HloInstr *o = i->ops[j];
        ops[j] = scalar_broadcast(o)
                     ? ir_broadcast(e, c, o->ops[0],
                                    ir_shape_with_et(a, in, o->shape->et), 0,
                                    NULL)
                     : o->ops[0];
      }
      Shape *s = shape_array(a, i->shape->et, in->rank, in->dims);
      HloInstr *op = ir_clone(e, c, i, s, i->nops, ops);
      HloInstr *r = ir_clone(e, c, first, shape_clone(a, i->shape), 1, &op);
      ir_replace(e, i, r);
      changed = true;
    }
  }
  return ir_end(e, changed);
}
