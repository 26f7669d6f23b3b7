/*
 * async_to_sync.c - "async-to-sync": every asynchronous pair becomes the
 * synchronous op it stands for, so that the rest of the pipeline and both
 * backends see only plain ops (xhloc's thunks run in order on one stream,
 * where a pair has nothing to overlap):
 *
 *   copy-start(x) ... copy-done            -> copy(x)
 *   async-start(xs), calls=f ... [async-update ...] async-done
 *                                          -> f's body inlined on xs
 *   all-reduce-start / all-reduce-done     -> all-reduce
 *   all-gather-start / all-gather-done     -> all-gather
 *   collective-permute-start / -done       -> collective-permute
 *
 * The collective keeps every attribute of its -start and takes the shape of
 * the -done.  Only a chain start -> (update ->)* done whose every link has
 * the next as its only user, and no control dependencies, is rewritten;
 * anything else is left for the backend to report by name.  send/recv are
 * not pairs of this kind (they need a peer) and stay as they are.
 */
#include "passes.h"

#include "../lib/hlo/ir_edit.h"

static HloOp start_of(HloOp done) {
  switch (done) {
  case HLO_ASYNC_DONE: return HLO_ASYNC_START;
  case HLO_COPY_DONE: return HLO_COPY_START;
  case HLO_ALL_REDUCE_DONE: return HLO_ALL_REDUCE_START;
  case HLO_ALL_GATHER_DONE: return HLO_ALL_GATHER_START;
  case HLO_COLLECTIVE_PERMUTE_DONE: return HLO_COLLECTIVE_PERMUTE_START;
  default: return HLO_OP_COUNT;
  }
}

static HloOp sync_of(HloOp start) {
  switch (start) {
  case HLO_ALL_REDUCE_START: return HLO_ALL_REDUCE;
  case HLO_ALL_GATHER_START: return HLO_ALL_GATHER;
  case HLO_COLLECTIVE_PERMUTE_START: return HLO_COLLECTIVE_PERMUTE;
  default: return HLO_OP_COUNT;
  }
}

/* The -start of done's chain, or NULL when the chain is not rewritable. */
static HloInstr *chain_start(IrEdit *e, HloInstr *done) {
  HloOp want = start_of(done->op);
  if (want == HLO_OP_COUNT || done->nops != 1 || ir_has_control_deps(e, done))
    return NULL;
  HloInstr *s = done->ops[0];
  while (s->op == HLO_ASYNC_UPDATE && want == HLO_ASYNC_START) {
    if (s->nops != 1 || ir_user_count(e, s) != 1 || ir_has_control_deps(e, s))
      return NULL;
    s = s->ops[0];
  }
  if (s->op != want || ir_user_count(e, s) != 1 || ir_has_control_deps(e, s))
    return NULL;
  if (want == HLO_ASYNC_START && (s->ncalled != 1 || s->called[0]->nparams != s->nops))
    return NULL;
  if (want == HLO_COPY_START && s->nops != 1)
    return NULL;
  return s;
}

/* Removes done's chain down to s, once done has no users. */
static void remove_chain(IrEdit *e, HloInstr *done, HloInstr *s) {
  HloInstr *x = done;
  while (x) {
    HloInstr *next = x == s ? NULL : x->ops[0];
    ir_remove(e, x);
    x = next;
  }
}

bool pass_async_to_sync(HloModule *m, PassContext *ctx) {
  (void)ctx;
  IrEdit *e = ir_begin(m);
  bool changed = false;
  for (int ci = 0; ci < m->ncomps; ci++) {
    HloComp *c = m->comps[ci];
    int n = c->ninstrs;
    for (int k = 0; k < n; k++) {
      HloInstr *d = c->instrs[k];
      if (ir_removed(d))
        continue;
      HloInstr *s = chain_start(e, d);
      if (!s)
        continue;
      HloInstr *v;
      if (s->op == HLO_ASYNC_START)
        v = ir_inline(e, c, s->called[0], s->ops);
      else if (s->op == HLO_COPY_START)
        v = ir_new(e, c, HLO_COPY, d->shape, 1, s->ops);
      else {
        v = ir_clone(e, c, s, d->shape, s->nops, s->ops);
        v->op = sync_of(s->op);
      }
      ir_replace_all_uses(e, d, v);
      remove_chain(e, d, s);
      changed = true;
    }
  }
  if (changed)
    ir_remove_unused_comps(e);
  return ir_end(e, changed);
}
