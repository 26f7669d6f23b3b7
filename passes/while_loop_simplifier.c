/*
 * while_loop_simplifier.c - "while-loop-simplifier" (XLA's
 * WhileLoopSimplifier):
 *
 *   - a loop that runs zero times is its initial state;
 *   - a loop that runs once is its body applied to the initial state,
 *     inlined;
 *   - loop-state elements nothing reads are dropped: an element is dead when
 *     no get-tuple-element of the loop's result reads it, the condition does
 *     not read it, and in the body it only feeds its own next value.
 *
 * The trip count is known when the loop has the shape frontends emit for a
 * counted loop: state element k starts as an integer constant, the body
 * sets it to gte(state, k) + step (a constant), and the condition is
 * compare(gte(state, k), limit) against a constant (either side).  Loops
 * with side effects anywhere (condition or body) keep their iterations.
 * Only loops whose condition and body are called by that loop alone are
 * changed (flatten-call-graph makes it so).
 */
#include "passes.h"

#include <stdlib.h>
#include <string.h>

#include "../lib/hlo/ir_edit.h"

/* gte(param0 of c, k)? */
static bool is_state_elem(const HloInstr *i, const HloComp *c, int64_t *k) {
  if (i->op != HLO_GET_TUPLE_ELEMENT || i->ops[0] != c->params[0])
    return false;
  *k = i->tuple_index;
  return true;
}

static bool int_scalar_constant(const HloInstr *i, int64_t *v) {
  return i->op == HLO_CONSTANT && i->shape->rank == 0 &&
         et_is_int(i->shape->et) && ir_is_int_constant(i, v);
}

static bool holds(CmpDir dir, int64_t a, int64_t b) {
  switch (dir) {
  case CMP_LT: return a < b;
  case CMP_LE: return a <= b;
  case CMP_GT: return a > b;
  case CMP_GE: return a >= b;
  case CMP_EQ: return a == b;
  case CMP_NE: return a != b;
  default: return false;
  }
}

/* Fits in the element type (the loop counter must not wrap). */
static bool fits(ElemType et, int64_t v) {
  int bits = et_bits(et);
  if (bits >= 64)
    return !et_is_unsigned_int(et) || v >= 0;
  if (et_is_unsigned_int(et))
    return v >= 0 && v < ((int64_t)1 << bits);
  return v >= -((int64_t)1 << (bits - 1)) && v < ((int64_t)1 << (bits - 1));
}

/* 0, 1, or -1 (two or more, or unknown). */
static int trip_count(const HloInstr *w) {
  const HloComp *cond = w->called[0], *body = w->called[1];
  const HloInstr *init = w->ops[0], *cr = cond->root, *br = body->root;
  if (init->op != HLO_TUPLE || !cr || cr->op != HLO_COMPARE || !br ||
      br->op != HLO_TUPLE)
    return -1;
  int64_t k, k2, lim, start, step;
  CmpDir dir = cr->cmp_dir;
  if (is_state_elem(cr->ops[0], cond, &k) &&
      int_scalar_constant(cr->ops[1], &lim)) {
    /* i < limit */
  } else if (is_state_elem(cr->ops[1], cond, &k) &&
             int_scalar_constant(cr->ops[0], &lim)) {
    switch (dir) { /* limit < i  ==  i > limit */
    case CMP_LT: dir = CMP_GT; break;
    case CMP_LE: dir = CMP_GE; break;
    case CMP_GT: dir = CMP_LT; break;
    case CMP_GE: dir = CMP_LE; break;
    default: break;
    }
  } else {
    return -1;
  }
  ElemType et = cr->ops[0]->shape->et;
  if (k < 0 || k >= init->nops || k >= br->nops ||
      !int_scalar_constant(init->ops[k], &start))
    return -1;
  if (et_is_unsigned_int(et) && (start < 0 || lim < 0))
    return -1;
  if (!holds(dir, start, lim))
    return 0;
  const HloInstr *next = br->ops[k];
  if (next->op != HLO_ADD)
    return -1;
  if (is_state_elem(next->ops[0], body, &k2) &&
      int_scalar_constant(next->ops[1], &step)) {
  } else if (is_state_elem(next->ops[1], body, &k2) &&
             int_scalar_constant(next->ops[0], &step)) {
  } else {
    return -1;
  }
  if (k2 != k || step > INT32_MAX || step < INT32_MIN)
    return -1;
  int64_t second = start + step;
  if (!fits(et, second))
    return -1;
  return holds(dir, second, lim) ? -1 : 1;
}

/* Whether every use of c's parameter is a get-tuple-element. */
static bool param_only_gtes(IrEdit *e, HloComp *c) {
  HloInstr *p = c->params[0];
  if (ir_is_root(p))
    return false;
  HloInstr **us;
  int n = ir_users(e, p, &us);
  for (int j = 0; j < n; j++)
    if (us[j]->op != HLO_GET_TUPLE_ELEMENT)
      return false;
  return true;
}

/* dead[k] for each state element of w; returns the number dead. */
static int dead_elements(IrEdit *e, HloInstr *w, bool *dead) {
  HloComp *cond = w->called[0], *body = w->called[1];
  int n = w->shape->ntuple;
  if (!shape_is_tuple(w->shape) || ir_is_root(w) || body->root->op != HLO_TUPLE ||
      !param_only_gtes(e, cond) || !param_only_gtes(e, body))
    return 0;
  for (int k = 0; k < n; k++)
    dead[k] = true;
  HloInstr **us;
  int nu = ir_users(e, w, &us);
  for (int j = 0; j < nu; j++) {
    if (us[j]->op != HLO_GET_TUPLE_ELEMENT)
      return 0;
    dead[us[j]->tuple_index] = false;
  }
  nu = ir_users(e, cond->params[0], &us);
  for (int j = 0; j < nu; j++)
    dead[us[j]->tuple_index] = false;
  /* In the body, element k may only flow into root operand k: propagate
   * "depends on element k" forward in topological order. */
  HloInstr **order;
  int no = ir_instr_post_order(body, &order);
  int64_t *from = xmalloc(sizeof *from * (size_t)(no + 1));
  /* Positions by id over the body's id range only (the module's would make
   * the pass quadratic in the number of loops). */
  int lo = INT32_MAX, hi = 0;
  for (int j = 0; j < no; j++) {
    lo = order[j]->id < lo ? order[j]->id : lo;
    hi = order[j]->id > hi ? order[j]->id : hi;
  }
  if (hi < lo)
    lo = hi = 0;
  int *slot = xmalloc(sizeof *slot * (size_t)(hi - lo + 1));
  for (int j = 0; j < no; j++)
    slot[order[j]->id - lo] = j;
  for (int k = 0; k < n; k++) {
    if (!dead[k])
      continue;
    /* from[j]: 1 when order[j] depends on element k. */
    for (int j = 0; j < no; j++) {
      HloInstr *i = order[j];
      int64_t idx;
      from[j] = is_state_elem(i, body, &idx) && idx == k;
      for (int q = 0; q < i->nops && !from[j]; q++)
        if (i->ops[q]->parent == body && i->ops[q] != body->params[0])
          from[j] = from[slot[i->ops[q]->id - lo]];
      if (from[j] && ir_has_side_effect_deep(i))
        dead[k] = false;
    }
    for (int q = 0; q < body->root->nops && dead[k]; q++)
      if (q != k && from[slot[body->root->ops[q]->id - lo]])
        dead[k] = false;
  }
  free(slot);
  free(from);
  free(order);
  int count = 0;
  for (int k = 0; k < n; k++)
    count += dead[k];
  return count == n ? 0 : count;
}

/* Renumbers the gtes of c's parameter after dropping dead elements. */
static void renumber(IrEdit *e, HloComp *c, const int64_t *newidx,
                     Shape *state) {
  HloInstr *p = c->params[0];
  p->shape = state;
  HloInstr **us;
  int n = ir_users(e, p, &us);
  for (int j = 0; j < n; j++)
    if (newidx[us[j]->tuple_index] >= 0)
      us[j]->tuple_index = newidx[us[j]->tuple_index];
}

static void drop_dead(IrEdit *e, HloComp *c, HloInstr *w, const bool *dead) {
  Arena *a = ir_arena(e);
  HloComp *cond = w->called[0], *body = w->called[1];
  int n = w->shape->ntuple;
  int64_t *newidx = ARENA_ARRAY(a, int64_t, n);
  Shape **elems = ARENA_ARRAY(a, Shape *, n);
  HloInstr **keep_init = ARENA_ARRAY(a, HloInstr *, n);
  HloInstr **keep_root = ARENA_ARRAY(a, HloInstr *, n);
  HloInstr *init = w->ops[0], *root = body->root;
  int nn = 0;
  for (int k = 0; k < n; k++) {
    newidx[k] = dead[k] ? -1 : nn;
    if (dead[k])
      continue;
    elems[nn] = shape_clone(a, w->shape->tuple[k]);
    keep_init[nn] = init->op == HLO_TUPLE ? init->ops[k] : ir_gte(e, c, init, k);
    keep_root[nn] = root->ops[k];
    nn++;
  }
  Shape *state = shape_tuple(a, nn, elems);
  /* The body: new root first, so that the dropped parts die with it. */
  HloInstr *nr = ir_tuple(e, body, nn, keep_root);
  body->root = nr;
  ir_remove_dead(e, root);
  /* GTEs of dead elements in the body are dead now. */
  HloInstr **us;
  int nu = ir_users(e, body->params[0], &us);
  HloInstr **copy = xmalloc(sizeof *copy * (size_t)(nu + 1));
  memcpy(copy, us, sizeof *copy * (size_t)nu);
  for (int j = 0; j < nu; j++)
    if (dead[copy[j]->tuple_index])
      ir_remove_dead(e, copy[j]);
  free(copy);
  renumber(e, body, newidx, shape_clone(a, state));
  renumber(e, cond, newidx, shape_clone(a, state));
  /* The loop and its users. */
  HloInstr *ni = ir_tuple(e, c, nn, keep_init);
  nu = ir_users(e, w, &us);
  for (int j = 0; j < nu; j++)
    us[j]->tuple_index = newidx[us[j]->tuple_index];
  w->shape = state;
  HloInstr *old_init = w->ops[0];
  ir_set_operand(e, w, 0, ni);
  ir_remove_dead(e, old_init);
}

bool pass_while_loop_simplifier(HloModule *m, PassContext *ctx) {
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
          w->nops != 1 || ir_has_control_deps(e, w))
        continue;
      HloComp *cond = w->called[0], *body = w->called[1];
      int cc = ir_call_count(e, cond), bc = ir_call_count(e, body);
      if (cc != 1 || bc != 1 || cond == body || cond->nparams != 1 ||
          body->nparams != 1 || !cond->root || !body->root)
        continue;
      bool effects = ir_has_side_effect_deep(w);
      int trips = effects ? -1 : trip_count(w);
      if (trips == 0) {
        ir_replace(e, w, w->ops[0]);
        changed = true;
        continue;
      }
      if (trips == 1) {
        HloInstr *r = ir_inline(e, c, body, w->ops);
        ir_replace(e, w, r);
        changed = true;
        continue;
      }
      bool *dead = xcalloc((size_t)w->shape->ntuple + 1, sizeof *dead);
      if (shape_is_tuple(w->shape) && dead_elements(e, w, dead) > 0) {
        drop_dead(e, c, w, dead);
        changed = true;
      }
      free(dead);
    }
  }
  if (changed)
    ir_remove_unused_comps(e);
  return ir_end(e, changed);
}
