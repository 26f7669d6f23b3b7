/*
 * cse.c - "cse" (XLA's HloCSE): common-subexpression elimination.
 *
 * Within each computation, an instruction identical to an earlier one (same
 * opcode, shape with layout, operands, called computations and attributes;
 * constants with the same literal) is replaced by that earlier one.
 * Instructions are visited in topological order, so once the operands of two
 * expressions have been commoned the expressions themselves are too: common
 * subexpressions of any size are found in one run.
 *
 * Left alone: parameters, instructions with a side effect (rng, send, a
 * while whose body has one, ...) and instructions in a control dependency.
 * Called computations must be the same computation (the
 * computation-deduplicator merges equal ones first).
 */
#include "passes.h"

#include <stdlib.h>

#include "../lib/hlo/ir_edit.h"

typedef struct Table {
  int cap;                        /* power of two */
  int *head;                      /* bucket -> first entry, -1 none */
  Vec(HloInstr *) instr;
  Vec(uint64_t) hash;
  Vec(int) next;
} Table;

static HloInstr *find_or_add(Table *t, HloInstr *i) {
  uint64_t h = ir_instr_hash(i);
  int b = (int)(h & (uint64_t)(t->cap - 1));
  for (int k = t->head[b]; k >= 0; k = t->next.data[k])
    if (t->hash.data[k] == h && ir_same_instr(t->instr.data[k], i))
      return t->instr.data[k];
  vec_push(&t->instr, i);
  vec_push(&t->hash, h);
  vec_push(&t->next, t->head[b]);
  t->head[b] = t->instr.len - 1;
  return NULL;
}

static bool cse_comp(IrEdit *e, HloComp *c) {
  Table t = {0};
  t.cap = 16;
  while (t.cap < 2 * c->ninstrs)
    t.cap *= 2;
  t.head = xmalloc(sizeof *t.head * (size_t)t.cap);
  for (int k = 0; k < t.cap; k++)
    t.head[k] = -1;
  bool changed = false;
  for (int k = 0; k < c->ninstrs; k++) {
    HloInstr *i = c->instrs[k];
    if (ir_removed(i) || i->op == HLO_PARAMETER ||
        ir_has_control_deps(e, i) || ir_has_side_effect_deep(i))
      continue;
    HloInstr *same = find_or_add(&t, i);
    if (!same)
      continue;
    ir_replace_all_uses(e, i, same);
    ir_remove_dead(e, i);
    changed = true;
  }
  free(t.head);
  vec_free(&t.instr);
  vec_free(&t.hash);
  vec_free(&t.next);
  return changed;
}

bool pass_cse(HloModule *m, PassContext *ctx) {
  (void)ctx;
  IrEdit *e = ir_begin(m);
  bool changed = false;
  for (int ci = 0; ci < m->ncomps; ci++)
    changed |= cse_comp(e, m->comps[ci]);
  return ir_end(e, changed);
}
