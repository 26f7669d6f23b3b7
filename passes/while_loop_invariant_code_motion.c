/*
 * while_loop_invariant_code_motion.c - "while-loop-invariant-code-motion"
 * (XLA's WhileLoopInvariantCodeMotion): computation in a loop body that
 * gives the same value on every iteration is done once, before the loop.
 *
 * A body instruction is invariant when every operand is: a loop-state
 * element the body passes through unchanged (gte(state, k) with root
 * element k that same gte), a constant, or another invariant instruction;
 * and it has no side effect, calls nothing with one, and is in no control
 * dependency.  Invariant instructions are cloned into the computation
 * holding the loop (state elements read from the loop's initial value), and
 * the values the rest of the body still needs become new loop-state
 * elements that the body passes through; the loop's users see the old
 * elements as before.
 *
 * Like XLA, data movement and constants (broadcast, reshape, transpose,
 * slice, ...) are not hoisted for their own sake: only when they feed an
 * invariant instruction that is worth hoisting, and then they are copied
 * out for it while the body keeps its own for its other users (XLA's
 * CreateLoopInvariantCopy): only the instructions worth hoisting become
 * state elements, never a materialized broadcast or transpose.
 *
 * Memory: a hoisted value lives through the whole loop, so nothing whose
 * result is larger than its operands together (a broadcast, an iota, a
 * gather or pad that grows its input) counts as invariant, and nothing
 * computed from it is hoisted either (XLA's size-inflation check, its
 * hoist_size_inflation_ratio of 1, formerly hoist_size_inflating_ops=false;
 * constants are exempt, as there).  A value carried instead of its operands
 * never makes the loop state larger.
 *
 * Only loops whose body and condition are called by that loop alone are
 * changed (flatten-call-graph makes it so).
 */
#include "passes.h"

#include <stdlib.h>

#include "../lib/hlo/ir_edit.h"

static bool cheap(HloOp op) {
  switch (op) {
  case HLO_BITCAST: case HLO_BROADCAST: case HLO_CONSTANT: case HLO_RESHAPE:
  case HLO_REVERSE: case HLO_SLICE: case HLO_TRANSPOSE: case HLO_TUPLE:
  case HLO_GET_TUPLE_ELEMENT: case HLO_IOTA: case HLO_COPY:
    return true;
  default:
    return false;
  }
}

static bool hoistable_op(const HloInstr *i) {
  switch (i->op) {
  case HLO_PARAMETER: case HLO_AFTER_ALL: case HLO_RNG: case HLO_WHILE:
  case HLO_CONDITIONAL: case HLO_CALL: case HLO_CUSTOM_CALL:
  case HLO_ASYNC_START: case HLO_ASYNC_UPDATE: case HLO_ASYNC_DONE:
  case HLO_RNG_BIT_GENERATOR: case HLO_RNG_GET_AND_UPDATE_STATE:
  case HLO_PARTITION_ID: case HLO_REPLICA_ID:
    return false;
  default:
    return !ir_has_side_effect_deep(i) && shape_is_array(i->shape);
  }
}

/* Bytes of the array leaves of s (saturating; a malformed size counts as
 * large). */
static int64_t leaf_bytes(const Shape *s) {
  if (!s)
    return 0;
  if (s->et == ET_TUPLE) {
    int64_t n = 0;
    for (int k = 0; k < s->ntuple; k++) {
      int64_t b = leaf_bytes(s->tuple[k]);
      n = b > INT64_MAX - n ? INT64_MAX : n + b;
    }
    return n;
  }
  if (!shape_is_array(s))
    return 0;
  int64_t b = shape_byte_size(s);
  return b < 0 ? INT64_MAX : b;
}

/* i's result is larger than its operands together: hoisting it would grow
 * what the loop keeps live.  Constants are exempt (no operands; the body
 * keeps its own, see below). */
static bool inflates(const HloInstr *i) {
  if (i->op == HLO_CONSTANT)
    return false;
  int64_t in = 0;
  for (int j = 0; j < i->nops; j++) {
    int64_t b = leaf_bytes(i->ops[j]->shape);
    in = b > INT64_MAX - in ? INT64_MAX : in + b;
  }
  return leaf_bytes(i->shape) > in;
}

/* Hoists what it can out of w; returns whether anything moved. */
static bool hoist(IrEdit *e, HloComp *c, HloInstr *w) {
  Arena *a = ir_arena(e);
  HloComp *cond = w->called[0], *body = w->called[1];
  HloInstr *param = body->params[0], *root = body->root;
  int n = w->shape->ntuple;
  HloInstr **order;
  int no = ir_instr_post_order(body, &order);
  /* Tables by id over the body's id range only (not the module's, which
   * would make the pass quadratic in the number of loops). */
  int lo = INT32_MAX, hi = 0;
  for (int k = 0; k < body->ninstrs; k++) {
    lo = body->instrs[k]->id < lo ? body->instrs[k]->id : lo;
    hi = body->instrs[k]->id > hi ? body->instrs[k]->id : hi;
  }
  if (hi < lo)
    lo = hi = 0;
  /* inv[id - lo]: 1 invariant, 2 hoisted, 3 copied out for a hoisted
   * instruction, 4 the same and kept in the body for its other users. */
  uint8_t *inv = xcalloc((size_t)(hi - lo) + 1, 1);
  int ninv = 0;
  for (int k = 0; k < no; k++) {
    HloInstr *i = order[k];
    if (i == param || i == root || ir_has_control_deps(e, i))
      continue;
    if (i->op == HLO_GET_TUPLE_ELEMENT && i->ops[0] == param) {
      int64_t t = i->tuple_index;
      if (t >= 0 && t < root->nops && root->ops[t]->op == HLO_GET_TUPLE_ELEMENT &&
          root->ops[t]->ops[0] == param && root->ops[t]->tuple_index == t)
        inv[i->id - lo] = 1;
      continue;
    }
    if (!hoistable_op(i) || inflates(i))
      continue;
    bool all = true;
    for (int j = 0; j < i->nops && all; j++)
      all = i->ops[j]->parent == body && inv[i->ops[j]->id - lo];
    if (all) {
      inv[i->id - lo] = 1;
      ninv++;
    }
  }
  /* Worth hoisting (2): a non-cheap invariant instruction.  Copied out
   * with it (3): the cheap ones (data movement, constants) that feed one,
   * walking backwards so feeders are marked after their users. */
  bool any = false;
  for (int k = no - 1; k >= 0; k--) {
    HloInstr *i = order[k];
    if (!inv[i->id - lo] || i->op == HLO_GET_TUPLE_ELEMENT)
      continue;
    if (!cheap(i->op)) {
      inv[i->id - lo] = 2;
      any = true;
      continue;
    }
    HloInstr **us;
    int nu = ir_users(e, i, &us);
    for (int j = 0; j < nu; j++)
      if (inv[us[j]->id - lo] >= 2) {
        inv[i->id - lo] = 3;
        break;
      }
  }
  if (!any || ninv == 0) {
    free(inv);
    free(order);
    return false;
  }
  /* Clone the hoisted instructions before the loop. */
  HloInstr *init = w->ops[0];
  HloInstr **clone = xcalloc((size_t)(hi - lo) + 1, sizeof *clone);
  Vec(HloInstr *) ops = {0};
  for (int k = 0; k < no; k++) {
    HloInstr *i = order[k];
    if (inv[i->id - lo] < 2)
      continue;
    ops.len = 0;
    for (int j = 0; j < i->nops; j++) {
      HloInstr *o = i->ops[j];
      HloInstr *v = clone[o->id - lo];
      if (!v) { /* a pass-through state element */
        v = init->op == HLO_TUPLE ? init->ops[o->tuple_index]
                                  : ir_gte(e, c, init, o->tuple_index);
        clone[o->id - lo] = v;
      }
      vec_push(&ops, v);
    }
    clone[i->id - lo] = ir_clone(e, c, i, NULL, ops.len, ops.data);
  }
  vec_free(&ops);
  /* The hoisted values the rest of the body still reads become state
   * elements.  What was copied out for them stays in the body for its
   * other users: a state element carrying a materialized broadcast or
   * transpose would cost memory for the whole loop, and one carrying a
   * constant is what while-loop-constant-sinking undoes (the two passes
   * would take turns forever). */
  for (int k = no - 1; k >= 0; k--) { /* 4: copied out, and kept */
    HloInstr *i = order[k];
    if (inv[i->id - lo] != 3)
      continue;
    HloInstr **us;
    int nu = ir_users(e, i, &us);
    for (int j = 0; j < nu; j++)
      if (inv[us[j]->id - lo] < 2 || inv[us[j]->id - lo] == 4) {
        inv[i->id - lo] = 4;
        break;
      }
  }
  Vec(HloInstr *) out = {0}; /* hoisted body instructions still used */
  for (int k = 0; k < no; k++) {
    HloInstr *i = order[k];
    if (inv[i->id - lo] != 2)
      continue;
    HloInstr **us;
    int nu = ir_users(e, i, &us);
    bool outside = false;
    for (int j = 0; j < nu && !outside; j++)
      outside = inv[us[j]->id - lo] < 2 || inv[us[j]->id - lo] == 4;
    if (outside)
      vec_push(&out, i);
  }
  int nn = n + out.len;
  Shape **elems = ARENA_ARRAY(a, Shape *, nn);
  HloInstr **init_ops = ARENA_ARRAY(a, HloInstr *, nn);
  for (int k = 0; k < n; k++) {
    elems[k] = shape_clone(a, w->shape->tuple[k]);
    init_ops[k] = init->op == HLO_TUPLE ? init->ops[k] : ir_gte(e, c, init, k);
  }
  for (int k = 0; k < out.len; k++) {
    elems[n + k] = shape_clone(a, out.data[k]->shape);
    init_ops[n + k] = clone[out.data[k]->id - lo];
  }
  Shape *state = shape_tuple(a, nn, elems);
  param->shape = shape_clone(a, state);
  cond->params[0]->shape = shape_clone(a, state);
  HloInstr **root_ops = ARENA_ARRAY(a, HloInstr *, nn);
  for (int k = 0; k < out.len; k++) {
    HloInstr *g = ir_gte(e, body, param, n + k);
    ir_replace_all_uses(e, out.data[k], g);
    root_ops[n + k] = g;
  }
  /* read after the replacements: a hoisted value that the body returned
   * as an element is now returned from its new state element (taking the
   * root's operands before would keep the body computing it, and the
   * next run would hoist it again) */
  for (int k = 0; k < n; k++)
    root_ops[k] = root->ops[k];
  HloInstr *nr = ir_tuple(e, body, nn, root_ops);
  body->root = nr;
  ir_remove_dead(e, root);
  for (int k = no - 1; k >= 0; k--)
    if (inv[order[k]->id - lo] >= 2)
      ir_remove_dead(e, order[k]);
  /* The loop: the new state; users that are not get-tuple-elements see the
   * old elements. */
  HloInstr *ni = ir_tuple(e, c, nn, init_ops);
  HloInstr *old_init = w->ops[0];
  HloInstr **us;
  int nu = ir_users(e, w, &us);
  HloInstr **users = xmalloc(sizeof *users * (size_t)(nu + 1));
  for (int k = 0; k < nu; k++)
    users[k] = us[k];
  bool was_root = ir_is_root(w);
  Shape *old_shape = w->shape;
  w->shape = state;
  ir_set_operand(e, w, 0, ni);
  ir_remove_dead(e, old_init);
  HloInstr *prefix = NULL;
  for (int k = 0; k < nu || (was_root && k == nu); k++) {
    if (k < nu && users[k]->op == HLO_GET_TUPLE_ELEMENT)
      continue;
    if (!prefix) {
      HloInstr **g = ARENA_ARRAY(a, HloInstr *, n > 0 ? n : 1);
      for (int q = 0; q < n; q++)
        g[q] = ir_gte(e, c, w, q);
      prefix = ir_tuple(e, c, n, g);
      prefix->shape = shape_clone(a, old_shape);
    }
    if (k < nu) {
      for (int j = 0; j < users[k]->nops; j++)
        if (users[k]->ops[j] == w)
          ir_set_operand(e, users[k], j, prefix);
    } else {
      c->root = prefix;
    }
  }
  free(users);
  vec_free(&out);
  free(clone);
  free(inv);
  free(order);
  return true;
}

bool pass_while_loop_invariant_code_motion(HloModule *m, PassContext *ctx) {
  (void)ctx;
  IrEdit *e = ir_begin(m);
  bool changed = false;
  int ncomps = m->ncomps;
  for (int ci = 0; ci < ncomps; ci++) {
    HloComp *c = m->comps[ci];
    int ninstrs = c->ninstrs;
    for (int k = 0; k < ninstrs; k++) {
      HloInstr *w = c->instrs[k];
      if (ir_removed(w) || w->op != HLO_WHILE || w->ncalled != 2 ||
          w->nops != 1 || !shape_is_tuple(w->shape) ||
          ir_has_control_deps(e, w))
        continue;
      HloComp *cond = w->called[0], *body = w->called[1];
      if (cond == body || ir_call_count(e, cond) != 1 ||
          ir_call_count(e, body) != 1 || body->nparams != 1 ||
          cond->nparams != 1 || !body->root || body->root->op != HLO_TUPLE ||
          body->root->nops != w->shape->ntuple)
        continue;
      changed |= hoist(e, c, w);
    }
  }
  return ir_end(e, changed);
}
