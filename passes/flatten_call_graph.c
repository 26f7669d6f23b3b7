/*
 * flatten_call_graph.c - "flatten-call-graph" (XLA's FlattenCallGraph):
 * gives every control-flow call site (call, while, conditional) its own
 * computation, so that each computation called that way has exactly one
 * caller.  Buffer assignment and the dataflow analyses rely on it.
 *
 * Computations are visited callees first.  A computation with several
 * control-flow call sites keeps the first and is cloned for each of the
 * others; one also called from an embedded context (to_apply of reduce, map,
 * sort, ...) is cloned for every control-flow site, the original staying
 * with the embedded ones.  Cloning a computation clones the control-flow
 * computations under it too, so the clone's subtree is private.  Embedded
 * call sites are never flattened, and neither are async wrappers (their
 * start and done must share one computation).
 */
#include "passes.h"

#include <stdlib.h>

#include "../lib/hlo/ir_edit.h"

static bool control_flow(HloOp op) {
  return op == HLO_CALL || op == HLO_WHILE || op == HLO_CONDITIONAL;
}

/* Clones every control-flow callee of c's instructions, recursively. */
static void clone_subtree(IrEdit *e, HloComp *c) {
  for (int k = 0; k < c->ninstrs; k++) {
    HloInstr *i = c->instrs[k];
    if (ir_removed(i) || !control_flow(i->op))
      continue;
    for (int j = 0; j < i->ncalled; j++) {
      HloComp *orig = i->called[j];
      HloComp *clone = ir_clone_comp(e, orig, ".clone");
      /* The same computation in two slots (while cond == body) gets one
       * clone. */
      for (int q = j; q < i->ncalled; q++)
        if (i->called[q] == orig)
          i->called[q] = clone;
      clone_subtree(e, clone);
    }
  }
}

/* A call site: instruction i calling the computation in slot `slot`, or in
 * every slot that holds it when slot < 0. */
typedef struct Site {
  HloInstr *i;
  int slot;
  bool seq;
} Site;

bool pass_flatten_call_graph(HloModule *m, PassContext *ctx) {
  (void)ctx;
  IrEdit *e = ir_begin(m);
  bool changed = false;
  /* Call sites of each computation, by its index in the post order. */
  HloComp **order;
  int n = ir_comp_post_order(m, &order);
  HashMap index = {0};
  for (int k = 0; k < n; k++)
    hashmap_put(&index, order[k]->name, (void *)(intptr_t)(k + 1));
  Vec(Site) *sites = xcalloc((size_t)n + 1, sizeof *sites);
  for (int k = 0; k < n; k++) {
    HloComp *c = order[k];
    for (int q = 0; q < c->ninstrs; q++) {
      HloInstr *i = c->instrs[q];
      if (ir_removed(i))
        continue;
      for (int j = 0; j < i->ncalled; j++) {
        /* One site per instruction and callee, except that each branch of
         * a conditional is a site of its own (as in XLA: two branches
         * running the same computation get one each). */
        bool per_slot = i->op == HLO_CONDITIONAL;
        bool dup = false;
        for (int p = 0; p < j && !per_slot; p++)
          dup |= i->called[p] == i->called[j];
        intptr_t at = (intptr_t)hashmap_get(&index, i->called[j]->name);
        if (dup || at <= 0)
          continue;
        vec_push(&sites[at - 1],
                 ((Site){i, per_slot ? j : -1, control_flow(i->op)}));
      }
    }
  }
  for (int k = 0; k < n; k++) {
    HloComp *c = order[k];
    bool embedded = false;
    for (int s = 0; s < sites[k].len; s++)
      embedded |= !sites[k].data[s].seq;
    int seen_seq = 0;
    for (int s = 0; s < sites[k].len; s++) {
      Site site = sites[k].data[s];
      if (!site.seq)
        continue;
      if (!embedded && seen_seq++ == 0)
        continue;
      HloComp *clone = ir_clone_comp(e, c, ".clone");
      for (int j = 0; j < site.i->ncalled; j++)
        if (site.i->called[j] == c && (site.slot < 0 || site.slot == j))
          site.i->called[j] = clone;
      clone_subtree(e, clone);
      changed = true;
    }
  }
  for (int k = 0; k < n; k++)
    vec_free(&sites[k]);
  free(sites);
  free(order);
  hashmap_free(&index);
  return ir_end(e, changed);
}
