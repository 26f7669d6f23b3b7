/*
 * loop_update_sinking.c - "loop-update-sinking": in every while body, a
 * small new value of the loop state that only the body's root reads (a
 * loop counter's i + 1) is computed last, just before the root.
 *
 * Buffer assignment writes the body's new value of state leaf k over the
 * old one only when nothing in the loop reads the old one after the new
 * one is made (buffer_sharing.c, rule 3).  JAX's loops compute the counter
 * first and read the old counter afterwards (the dynamic-update-slice of a
 * scan, the slices of a fori_loop), so without this the counter alone is
 * copied back on every iteration.  Computed last, the new counter is
 * written in place over the old one.
 *
 * Only values of at most SMALL bytes move: their operands then live to the
 * end of the body, which costs nothing worth counting; a larger value keeps
 * the memory scheduler's place.  An instruction moves only when it updates
 * its own leaf (it reads that leaf of the body's parameter), its sole user
 * is the root, and it is no copy (copy-insertion's copies of other leaves
 * stay put), has no side effect and no control dependency.
 * Runs after hlo-memory-scheduler (the order is the schedule).
 */
#include "passes.h"

#include <stdlib.h>
#include <string.h>

#include "../lib/hlo/ir_edit.h"

enum { SMALL = 64 };

/* Whether i, the root's operand `leaf`, is an update of that same leaf
 * (it reads get-tuple-element(parameter, leaf)) that may move last. */
static bool sinkable(IrEdit *e, HloInstr *i, const HloInstr *root,
                     const HloComp *body, int leaf) {
  if (ir_removed(i) || i == root || i->op == HLO_PARAMETER ||
      i->op == HLO_GET_TUPLE_ELEMENT || i->op == HLO_CONSTANT ||
      i->op == HLO_TUPLE || i->op == HLO_COPY || !shape_is_array(i->shape) ||
      shape_buffer_size(i->shape) > SMALL || ir_has_side_effect_deep(i) ||
      ir_has_control_deps(e, i) || body->nparams != 1)
    return false;
  bool own = false;
  for (int k = 0; k < i->nops; k++) {
    const HloInstr *o = i->ops[k];
    own |= o->op == HLO_GET_TUPLE_ELEMENT && o->ops[0] == body->params[0] &&
           o->tuple_index == leaf;
  }
  if (!own)
    return false;
  HloInstr **users;
  int n = ir_users(e, i, &users);
  return n == 1 && users[0] == root;
}

/* Moves the sinkable operands of body's root to just before it. */
static bool sink_body(IrEdit *e, HloComp *body) {
  HloInstr *root = body->root;
  if (!root || root->op != HLO_TUPLE)
    return false;
  int at = -1;
  for (int k = 0; k < body->ninstrs; k++)
    if (body->instrs[k] == root)
      at = k;
  if (at < 0)
    return false;
  bool changed = false;
  /* walk the root's operands; each moved one goes right before the root,
   * in operand order */
  for (int j = 0; j < root->nops; j++) {
    HloInstr *i = root->ops[j];
    if (!sinkable(e, i, root, body, j))
      continue;
    int from = -1;
    for (int k = 0; k < at; k++)
      if (body->instrs[k] == i)
        from = k;
    if (from < 0 || from == at - 1)
      continue;
    memmove(&body->instrs[from], &body->instrs[from + 1],
            sizeof *body->instrs * (size_t)(at - 1 - from));
    body->instrs[at - 1] = i;
    changed = true;
  }
  return changed;
}

bool pass_loop_update_sinking(HloModule *m, PassContext *ctx) {
  (void)ctx;
  IrEdit *e = ir_begin(m);
  bool changed = false;
  for (int c = 0; c < m->ncomps; c++) {
    HloComp *comp = m->comps[c];
    for (int k = 0; k < comp->ninstrs; k++) {
      HloInstr *w = comp->instrs[k];
      if (!ir_removed(w) && w->op == HLO_WHILE && w->ncalled == 2 &&
          w->called[1])
        changed |= sink_body(e, w->called[1]);
    }
  }
  return ir_end(e, changed);
}
