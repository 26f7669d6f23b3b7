/*
 * match_util.c - pattern helpers shared by the rewriting passes
 * (match_util.h).
 */
#include "match_util.h"

bool match_scalar_constant(const HloInstr *x, double *v) {
  while (x->op == HLO_BROADCAST && x->nops == 1)
    x = x->ops[0];
  if (x->op != HLO_CONSTANT || !x->literal || !shape_is_array(x->shape) ||
      shape_elements(x->shape) != 1 || !et_is_float(x->shape->et))
    return false;
  *v = literal_get_f64(x->literal, 0);
  return true;
}

HloInstr *match_other_operand(const HloInstr *u, const HloInstr *x) {
  if (u->nops != 2)
    return NULL;
  return u->ops[0] == x ? u->ops[1] : u->ops[1] == x ? u->ops[0] : NULL;
}

HloInstr *match_sole_user(IrEdit *e, HloInstr *x) {
  HloInstr **users;
  if (ir_is_root(x) || ir_user_count(e, x) != 1)
    return NULL;
  ir_users(e, x, &users);
  return users[0];
}
