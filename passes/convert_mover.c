/*
 * convert_mover.c - "convert-mover" (XLA's ConvertMover): moves converts
 * across the ops that only move data (concatenate, pad, reshape, slice,
 * transpose), for which convert(op(x)) == op(convert(x)):
 *
 *   - a precision-increasing convert moves down (later), so the data
 *     movement happens in the narrow type:
 *       op(convert(x), ...)      =>  convert(op(x, ...))
 *     when every operand is such a convert (from the same type, used only
 *     there) or a constant that the narrow type holds exactly;
 *   - a precision-decreasing convert moves up (earlier), so the data moves
 *     narrow:
 *       convert(op(x, ...))      =>  op(convert(x), ...)
 *     when op is used only by the convert.
 *
 * Sub-byte types (s4, u4, ...) are not moved into, as XLA does.
 */
#include "passes.h"

#include <stdlib.h>
#include <string.h>

#include "../lib/hlo/ir_edit.h"

static bool commutes(HloOp op) {
  return op == HLO_CONCATENATE || op == HLO_PAD || op == HLO_RESHAPE ||
         op == HLO_SLICE || op == HLO_TRANSPOSE;
}

static bool sub_byte(ElemType et) {
  return et != ET_PRED && et_bits(et) < 8;
}

/* The constant's values survive a round trip through type t. */
static bool holds_exactly(Arena *a, const HloInstr *k, ElemType t) {
  const Literal *l = k->literal;
  if (!l || l->elided || !l->data || !shape_is_array(l->shape) ||
      et_is_complex(t) || et_is_complex(l->shape->et))
    return false;
  int64_t n = shape_elements(l->shape);
  Literal *x = literal_new(a, shape_scalar(a, t));
  Literal *y = literal_new(a, shape_scalar(a, l->shape->et));
  int w = et_bytes(l->shape->et);
  for (int64_t i = 0; i < n; i++) {
    literal_set_f64(x, 0, literal_get_f64(l, i));
    literal_set_f64(y, 0, literal_get_f64(x, 0));
    if (memcmp(y->data, l->data + i * w, (size_t)w) != 0)
      return false;
  }
  return true;
}

/* op(convert(x), ...) => convert(op(x, ...)) */
static HloInstr *move_down(IrEdit *e, HloComp *c, HloInstr *i) {
  if (!commutes(i->op) || i->nops == 0)
    return NULL;
  const HloInstr *cv = NULL;
  for (int k = 0; k < i->nops; k++) {
    const HloInstr *o = i->ops[k];
    if (o->op == HLO_CONVERT) {
      if (ir_user_count(e, (HloInstr *)o) != 1)
        return NULL;
      if (!cv)
        cv = o;
      else if (o->ops[0]->shape->et != cv->ops[0]->shape->et)
        return NULL;
    } else if (o->op != HLO_CONSTANT) {
      return NULL;
    }
  }
  if (!cv)
    return NULL;
  ElemType src = cv->ops[0]->shape->et, dst = cv->shape->et;
  if (et_bits(src) >= et_bits(dst) || sub_byte(src))
    return NULL;
  for (int k = 0; k < i->nops; k++)
    if (i->ops[k]->op == HLO_CONSTANT &&
        !holds_exactly(ir_arena(e), i->ops[k], src))
      return NULL;
  HloInstr *ops[64];
  if (i->nops > 64)
    return NULL;
  for (int k = 0; k < i->nops; k++) {
    HloInstr *o = i->ops[k];
    ops[k] = o->op == HLO_CONVERT ? o->ops[0] : ir_convert(e, c, o, src);
  }
  HloInstr *n = ir_clone(e, c, i, ir_shape_with_et(ir_arena(e), i->shape, src),
                         i->nops, ops);
  HloInstr *r = ir_convert(e, c, n, dst);
  r->shape = shape_clone(ir_arena(e), i->shape);
  return r;
}

/* convert(op(x, ...)) => op(convert(x), ...) */
static HloInstr *move_up(IrEdit *e, HloComp *c, HloInstr *i) {
  if (i->op != HLO_CONVERT)
    return NULL;
  HloInstr *o = i->ops[0];
  if (!commutes(o->op) || ir_user_count(e, o) != 1 ||
      ir_has_control_deps(e, o) || o->nops > 64)
    return NULL;
  ElemType src = o->shape->et, dst = i->shape->et;
  if (et_bits(src) <= et_bits(dst) || sub_byte(dst))
    return NULL;
  HloInstr *ops[64];
  for (int k = 0; k < o->nops; k++)
    ops[k] = ir_convert(e, c, o->ops[k], dst);
  return ir_clone(e, c, o, shape_clone(ir_arena(e), i->shape), o->nops, ops);
}

bool pass_convert_mover(HloModule *m, PassContext *ctx) {
  (void)ctx;
  IrEdit *e = ir_begin(m);
  bool changed = false;
  for (int ci = 0; ci < m->ncomps; ci++) {
    HloComp *c = m->comps[ci];
    /* Down first, in topological order; then up, from the outputs. */
    for (int k = 0; k < c->ninstrs; k++) {
      HloInstr *i = c->instrs[k];
      if (ir_removed(i) || ir_has_control_deps(e, i))
        continue;
      HloInstr *r = move_down(e, c, i);
      if (r) {
        ir_replace(e, i, r);
        changed = true;
      }
    }
    HloInstr **order;
    int n = ir_instr_post_order(c, &order);
    PtrVec work = {0};
    for (int k = 0; k < n; k++)
      vec_push(&work, order[k]);
    free(order);
    while (work.len > 0) {
      HloInstr *i = vec_pop(&work);
      if (ir_removed(i) || ir_has_control_deps(e, i))
        continue;
      HloInstr *r = move_up(e, c, i);
      if (!r)
        continue;
      ir_replace(e, i, r);
      for (int k = 0; k < r->nops; k++)
        vec_push(&work, r->ops[k]);
      changed = true;
    }
    vec_free(&work);
  }
  return ir_end(e, changed);
}
