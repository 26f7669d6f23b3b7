/*
 * call_inliner.c - "call-inliner" (XLA's CallInliner): every `call` is
 * replaced by a copy of its callee's body in the caller.
 *
 * Computations are visited callees first, so a callee's own calls are
 * already inlined when it is copied into its callers.  The callee's
 * parameters become the call's operands, its instructions are cloned (with
 * their control dependencies among themselves) and the call's users use the
 * clone of the callee's root.  Then, as XLA does, dead code and the
 * computations nothing calls any more are removed (the dce pass).
 *
 * Left alone: calls in a control dependency themselves, calls the frontend
 * marked _xla_inline="false", and calls in computations on another
 * execution thread (async computations).
 */
#include "passes.h"

#include <stdlib.h>
#include <string.h>

#include "../lib/hlo/ir_edit.h"

static bool inlinable(IrEdit *e, const HloInstr *call) {
  if (call->op != HLO_CALL || call->ncalled != 1 || ir_has_control_deps(e, call))
    return false;
  const HloComp *c = call->parent;
  if (c->execution_thread && strcmp(c->execution_thread, "main") != 0)
    return false;
  const HloComp *callee = call->called[0];
  if (!callee->root || callee->nparams != call->nops)
    return false;
  if (call->frontend_attrs)
    for (int k = 0; k < call->frontend_attrs->n; k++)
      if (strcmp(call->frontend_attrs->kv[k].key, "_xla_inline") == 0 &&
          strcmp(call->frontend_attrs->kv[k].value, "false") == 0)
        return false;
  return true;
}

bool pass_call_inliner(HloModule *m, PassContext *ctx) {
  IrEdit *e = ir_begin(m);
  bool changed = false;
  HloComp **order;
  int n = ir_comp_post_order(m, &order);
  for (int ci = 0; ci < n; ci++) {
    HloComp *c = order[ci];
    int ninstrs = c->ninstrs; /* clones are appended after these */
    for (int k = 0; k < ninstrs; k++) {
      HloInstr *i = c->instrs[k];
      if (ir_removed(i) || !inlinable(e, i))
        continue;
      HloInstr *root = ir_inline(e, c, i->called[0], i->ops);
      ir_replace_all_uses(e, i, root);
      ir_remove(e, i);
      changed = true;
    }
  }
  free(order);
  ir_end(e, changed);
  if (changed)
    pass_dce(m, ctx);
  return changed;
}
