/*
 * async_collective_creator.c - "async-collective-creator" (XLA's
 * AsyncCollectiveCreator): each collective that has an asynchronous form
 * becomes its -start and -done, so that a scheduler can put work between
 * the two (latency_hiding_scheduler.c) and the runtime can run the
 * collective while that work runs:
 *
 *   all-reduce(xs)          -> all-reduce-start(xs), shaped as the result,
 *                              and all-reduce-done of it
 *   all-gather(xs)          -> all-gather-start(xs), shaped (operands,
 *                              results), and all-gather-done
 *   collective-permute(x)   -> collective-permute-start(x), shaped
 *                              (operand, result, u32[], u32[]), and
 *                              collective-permute-done
 *
 * The -start keeps every attribute; the -done has the collective's shape
 * and takes its place.  The in-place collective-permute (4 operands) and
 * instructions with control dependencies stay as they are, and so do
 * reduce-scatter and all-to-all, which XLA wraps in async-start/-done
 * computations (the backend runs them synchronously).  It is the opposite
 * of async-to-sync, which the pipeline runs first: the backend pipeline
 * makes its own pairs, after fusion.
 */
#include "passes.h"

#include "../lib/hlo/ir_edit.h"

/* The operands' shapes: the one, or a tuple of all. */
static Shape *operand_shapes(Arena *a, const HloInstr *i) {
  if (i->nops == 1) return i->ops[0]->shape;
  Shape **s = ARENA_ARRAY(a, Shape *, i->nops);
  for (int k = 0; k < i->nops; k++) s[k] = i->ops[k]->shape;
  return shape_tuple(a, i->nops, s);
}

static bool convert(IrEdit *e, HloComp *c, HloInstr *i) {
  Arena *a = ir_arena(e);
  HloOp start_op, done_op;
  Shape *start_shape;
  switch (i->op) {
  case HLO_ALL_REDUCE:
    start_op = HLO_ALL_REDUCE_START, done_op = HLO_ALL_REDUCE_DONE;
    start_shape = i->shape;
    break;
  case HLO_ALL_GATHER: {
    start_op = HLO_ALL_GATHER_START, done_op = HLO_ALL_GATHER_DONE;
    Shape *parts[2] = {operand_shapes(a, i), i->shape};
    start_shape = shape_tuple(a, 2, parts);
    break;
  }
  case HLO_COLLECTIVE_PERMUTE: {
    if (i->nops != 1) return false;
    start_op = HLO_COLLECTIVE_PERMUTE_START, done_op = HLO_COLLECTIVE_PERMUTE_DONE;
    Shape *ctx = shape_scalar(a, ET_U32);
    Shape *parts[4] = {i->ops[0]->shape, i->shape, ctx, ctx};
    start_shape = shape_tuple(a, 4, parts);
    break;
  }
  default:
    return false;
  }
  if (ir_has_control_deps(e, i)) return false;
  HloInstr *start = ir_clone(e, c, i, start_shape, i->nops, i->ops);
  start->op = start_op;
  start->name = ir_unique_name(e, hlo_op_name(start_op));
  HloInstr *done = ir_new(e, c, done_op, i->shape, 1, &start);
  ir_replace(e, i, done);
  return true;
}

bool pass_async_collective_creator(HloModule *m, PassContext *ctx) {
  (void)ctx;
  IrEdit *e = ir_begin(m);
  bool changed = false;
  for (int k = 0; k < m->ncomps; k++) {
    HloComp *c = m->comps[k];
    if (c->fusion_instr) continue;
    int n = c->ninstrs;
    for (int j = 0; j < n; j++)
      if (!ir_removed(c->instrs[j])) changed |= convert(e, c, c->instrs[j]);
  }
  return ir_end(e, changed);
}
