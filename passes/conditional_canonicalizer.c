/*
 * conditional_canonicalizer.c - "conditional-canonicalizer" (XLA's
 * ConditionalCanonicalizer): every conditional gets a tuple result.  A
 * conditional of shape S becomes one of shape (S), each branch returning
 * tuple(old root), and its users read get-tuple-element 0.
 *
 * A branch computation used anywhere else is cloned first, so that changing
 * its root changes no other caller.
 */
#include "passes.h"

#include "../lib/hlo/ir_edit.h"

bool pass_conditional_canonicalizer(HloModule *m, PassContext *ctx) {
  (void)ctx;
  IrEdit *e = ir_begin(m);
  Arena *a = ir_arena(e);
  bool changed = false;
  int ncomps = m->ncomps;
  for (int ci = 0; ci < ncomps; ci++) {
    HloComp *c = m->comps[ci];
    int ninstrs = c->ninstrs;
    for (int k = 0; k < ninstrs; k++) {
      HloInstr *i = c->instrs[k];
      if (ir_removed(i) || i->op != HLO_CONDITIONAL ||
          shape_is_tuple(i->shape) || ir_has_control_deps(e, i))
        continue;
      HloComp **branches = ARENA_ARRAY(a, HloComp *, i->ncalled);
      for (int b = 0; b < i->ncalled; b++) {
        HloComp *br = i->called[b];
        /* The same branch twice in one conditional counts twice. */
        bool earlier = false;
        for (int q = 0; q < b; q++)
          earlier |= i->called[q] == br;
        if (ir_call_count(e, br) > 1 || earlier) {
          ir_note_calls(e, br, -1);
          br = ir_clone_comp(e, br, ".clone");
          ir_note_calls(e, br, +1);
        }
        branches[b] = br;
        br->root = ir_tuple(e, br, 1, &br->root);
      }
      Shape *elem = shape_clone(a, i->shape);
      Shape *ts = shape_tuple(a, 1, &elem);
      HloInstr *nc = ir_clone(e, c, i, ts, i->nops, i->ops);
      nc->called = branches;
      HloInstr *g = ir_gte(e, c, nc, 0);
      ir_replace(e, i, g);
      changed = true;
    }
  }
  return ir_end(e, changed);
}
