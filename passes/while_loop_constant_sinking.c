/*
 * while_loop_constant_sinking.c - "while-loop-constant-sinking" (XLA's
 * WhileLoopConstantSinking): a loop-state element that starts as a constant
 * and that the body passes through unchanged holds that constant on every
 * iteration, so its uses in the body and the condition read a copy of the
 * constant instead:
 *
 *   state = (..., constant, ...)
 *   while (cond(state)) { v = gte(state, k); use(v); state = (..., v, ...) }
 *     =>  use(constant), the pass-through kept
 *
 * The pass-through stays (the state element is then trivially invariant;
 * while-loop-simplifier drops it when nothing reads it).  This opens the
 * loop body to constant folding.  Only loops whose condition and body are
 * called by that loop alone are changed (flatten-call-graph makes it so).
 */
#include "passes.h"

#include <stdlib.h>

#include "../lib/hlo/ir_edit.h"

/* Replaces the uses of gte(param, k) in c by copies of constant k0, except
 * the uses by `keep`.  Returns whether any use changed. */
static bool sink_into(IrEdit *e, HloComp *c, int64_t k, const HloInstr *k0,
                      HloInstr *keep) {
  HloInstr *param = c->params[0];
  HloInstr **us;
  int n = ir_users(e, param, &us);
  HloInstr **gtes = xmalloc(sizeof *gtes * (size_t)(n + 1));
  int ng = 0;
  for (int j = 0; j < n; j++)
    if (us[j]->op == HLO_GET_TUPLE_ELEMENT && us[j]->tuple_index == k)
      gtes[ng++] = us[j];
  bool changed = false;
  for (int j = 0; j < ng; j++) {
    HloInstr *g = gtes[j];
    HloInstr **gu;
    int nu = ir_users(e, g, &gu);
    bool other = false;
    for (int q = 0; q < nu; q++)
      other |= gu[q] != keep;
    if (!other && !(ir_is_root(g) && keep == NULL))
      continue;
    HloInstr *copy = ir_clone(e, c, k0, NULL, 0, NULL);
    changed |= ir_replace_uses_except(e, g, copy, keep);
    if (ir_user_count(e, copy) == 0 && !ir_is_root(copy))
      ir_remove(e, copy);
  }
  free(gtes);
  return changed;
}

bool pass_while_loop_constant_sinking(HloModule *m, PassContext *ctx) {
  (void)ctx;
  IrEdit *e = ir_begin(m);
  bool changed = false;
  int ncomps = m->ncomps;
  for (int ci = 0; ci < ncomps; ci++) {
    HloComp *c = m->comps[ci];
    for (int k = 0; k < c->ninstrs; k++) {
      HloInstr *w = c->instrs[k];
      if (ir_removed(w) || w->op != HLO_WHILE || w->ncalled != 2 ||
          w->ops[0]->op != HLO_TUPLE || ir_has_control_deps(e, w))
        continue;
      HloComp *cond = w->called[0], *body = w->called[1];
      int cc = ir_call_count(e, cond), bc = ir_call_count(e, body);
      if (cc != 1 || bc != 1 || cond == body || body->nparams != 1 ||
          cond->nparams != 1 || !body->root || body->root->op != HLO_TUPLE)
        continue;
      HloInstr *init = w->ops[0], *root = body->root;
      for (int64_t j = 0; j < init->nops && j < root->nops; j++) {
        const HloInstr *k0 = init->ops[j];
        const HloInstr *pass = root->ops[j];
        if (k0->op != HLO_CONSTANT || pass->op != HLO_GET_TUPLE_ELEMENT ||
            pass->tuple_index != j || pass->ops[0] != body->params[0])
          continue;
        changed |= sink_into(e, body, j, k0, root);
        changed |= sink_into(e, cond, j, k0, NULL);
      }
    }
  }
  return ir_end(e, changed);
}
