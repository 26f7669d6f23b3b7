/*
 * computation_deduplicator.c - "computation-deduplicator" (XLA's
 * HloComputationDeduplicator, the "subcomputation unification" of seed
 * 001): computations that are the same (same instructions in the same order
 * with the same attributes; see ir_comp_key) are merged, every reference to
 * a later one going to the first.
 *
 * Computations are visited callees first, and references are redirected
 * before a computation's key is taken, so callers of merged callees merge in
 * turn.  The entry and fusion computations are never merged away; merged
 * computations, now unreferenced, are removed.
 */
#include "passes.h"

#include <stdlib.h>

#include "../lib/hlo/ir_edit.h"

bool pass_computation_deduplicator(HloModule *m, PassContext *ctx) {
  (void)ctx;
  IrEdit *e = ir_begin(m);
  bool changed = false;
  HloComp **order;
  int n = ir_comp_post_order(m, &order);
  HashMap by_key = {0};         /* key -> first computation */
  HashMap replaced = {0};       /* computation name -> replacement */
  PtrVec keys = {0};
  StrBuf b;
  sb_init(&b);
  for (int k = 0; k < n; k++) {
    HloComp *c = order[k];
    /* Redirect references to merged computations first. */
    for (int q = 0; q < c->ninstrs; q++) {
      HloInstr *i = c->instrs[q];
      if (ir_removed(i))
        continue;
      for (int j = 0; j < i->ncalled; j++) {
        HloComp *r = hashmap_get(&replaced, i->called[j]->name);
        if (!r)
          continue;
        HloComp **called = ARENA_ARRAY(ir_arena(e), HloComp *, i->ncalled);
        for (int p = 0; p < i->ncalled; p++) {
          HloComp *rp = hashmap_get(&replaced, i->called[p]->name);
          called[p] = rp ? rp : i->called[p];
        }
        i->called = called;
        break;
      }
    }
    if (c->is_entry || c == m->entry || c->fusion_instr)
      continue;
    sb_clear(&b);
    ir_comp_key(&b, c);
    HloComp *first = hashmap_get(&by_key, b.s);
    if (first) {
      hashmap_put(&replaced, c->name, first);
      changed = true;
    } else {
      char *key = sb_detach(&b);
      sb_init(&b);
      vec_push(&keys, key);
      hashmap_put(&by_key, key, c);
    }
  }
  if (changed)
    ir_remove_unused_comps(e);
  sb_free(&b);
  for (int k = 0; k < keys.len; k++)
    free(keys.data[k]);
  vec_free(&keys);
  hashmap_free(&by_key);
  hashmap_free(&replaced);
  free(order);
  return ir_end(e, changed);
}
