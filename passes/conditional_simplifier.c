/*
 * conditional_simplifier.c - "conditional-simplifier" (XLA's
 * ConditionalSimplifier, its unused-output and branch-removing parts).
 *
 * Unused outputs (RemoveUnusedTupleElements): when a tuple-shaped
 * conditional is not its computation's root, every user is a
 * get-tuple-element and some elements are never read, each branch is
 * replaced by a clone whose root is a tuple of get-tuple-elements of the
 * old root for the used elements only; the conditional's shape shrinks to
 * match and its users' indices are renumbered.  (tuple-simplifier and dce
 * then remove what the dropped elements computed; the old branches go when
 * nothing else calls them.)
 *
 * Known branch (TryRemoveConditional): a conditional whose branch is known
 * is replaced by that branch's body, inlined.
 *
 *   - the selector is a constant: pred true takes branch 0, false branch 1;
 *     an s32 index takes that branch, or the last one when out of range;
 *   - there is only one branch.
 *
 * Left alone: conditionals in control dependencies, and for inlining ones
 * whose branches have side effects (XLA keeps those too, so that their
 * order with other side effects cannot change).
 */
#include "passes.h"

#include <stdlib.h>

#include "../lib/hlo/ir_edit.h"

/* The branch a conditional takes for sure, or -1. */
static int known_branch(const HloInstr *i) {
  if (i->ncalled == 1)
    return 0;
  const HloInstr *sel = i->ops[0];
  if (sel->op != HLO_CONSTANT || !sel->literal || sel->literal->elided ||
      !sel->literal->data || !shape_is_scalar(sel->shape))
    return -1;
  if (sel->shape->et == ET_PRED)
    return literal_get_s64(sel->literal, 0) ? 0 : 1;
  int64_t b = literal_get_s64(sel->literal, 0);
  return b >= 0 && b < i->ncalled ? (int)b : i->ncalled - 1;
}

/* Drops the elements of conditional i's tuple result no user reads; returns
 * whether it did. */
static bool remove_unused_elements(IrEdit *e, HloInstr *i) {
  if (!shape_is_tuple(i->shape) || ir_is_root(i))
    return false;
  HloInstr **us;
  int nu = ir_users(e, i, &us);
  int n = i->shape->ntuple;
  if (nu == 0)
    return false;
  bool *used = xcalloc((size_t)n + 1, sizeof *used);
  for (int j = 0; j < nu; j++) {
    if (us[j]->op != HLO_GET_TUPLE_ELEMENT || us[j]->tuple_index < 0 ||
        us[j]->tuple_index >= n) {
      free(used);
      return false;
    }
    used[us[j]->tuple_index] = true;
  }
  int *new_index = xcalloc((size_t)n + 1, sizeof *new_index);
  int kept = 0;
  for (int k = 0; k < n; k++)
    new_index[k] = used[k] ? kept++ : -1;
  bool changed = kept < n;
  if (changed) {
    Arena *a = ir_arena(e);
    Shape **elems = ARENA_ARRAY(a, Shape *, kept > 0 ? kept : 1);
    for (int k = 0; k < n; k++)
      if (used[k])
        elems[new_index[k]] = shape_clone(a, i->shape->tuple[k]);
    HloComp **called = ARENA_ARRAY(a, HloComp *, i->ncalled);
    HloInstr **ops = xcalloc((size_t)kept + 1, sizeof *ops);
    for (int b = 0; b < i->ncalled; b++) {
      HloComp *br = ir_clone_comp(e, i->called[b], ".clone");
      for (int k = 0; k < n; k++)
        if (used[k])
          ops[new_index[k]] = ir_gte(e, br, br->root, k);
      br->root = ir_tuple(e, br, kept, ops);
      called[b] = br;
    }
    free(ops);
    i->called = called;
    i->shape = shape_tuple(a, kept, elems);
    /* us stays valid: only i's users are read, and none is edited. */
    for (int j = 0; j < nu; j++)
      us[j]->tuple_index = new_index[us[j]->tuple_index];
  }
  free(new_index);
  free(used);
  return changed;
}

bool pass_conditional_simplifier(HloModule *m, PassContext *ctx) {
  (void)ctx;
  IrEdit *e = ir_begin(m);
  bool changed = false;
  for (int ci = 0; ci < m->ncomps; ci++) {
    HloComp *c = m->comps[ci];
    int ninstrs = c->ninstrs;
    for (int k = 0; k < ninstrs; k++) {
      HloInstr *i = c->instrs[k];
      if (ir_removed(i) || i->op != HLO_CONDITIONAL ||
          i->nops != i->ncalled + 1 || ir_has_control_deps(e, i))
        continue;
      if (remove_unused_elements(e, i))
        changed = true;
      if (ir_has_side_effect_deep(i))
        continue;
      int b = known_branch(i);
      if (b < 0)
        continue;
      HloInstr *arg = i->ops[1 + b];
      HloInstr *r = ir_inline(e, c, i->called[b], &arg);
      ir_replace(e, i, r);
      changed = true;
    }
  }
  if (changed)
    ir_remove_unused_comps(e);
  return ir_end(e, changed);
}
