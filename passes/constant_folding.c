/*
 * constant_folding.c - "constant_folding" (XLA's HloConstantFolding): an
 * instruction whose operands are known constants is evaluated now, by the
 * reference interpreter (lib/eval), and replaced by a constant holding its
 * value.  The interpreter is the ground truth every compiled result is
 * checked against, so a folded value is exactly what the program computes.
 *
 * Folded, as XLA does: instructions with at least one constant operand and
 * every operand a constant, a broadcast of a constant or an iota (through
 * tuples).  Not folded:
 *   - parameters, constants, tuples, and results that are not arrays;
 *   - broadcast and iota (folding would only grow constants; algsimp moves
 *     ops on broadcasts before the broadcast instead), fft, while loops;
 *   - collectives and other communication (their values come from other
 *     devices), optimization barriers and domains;
 *   - anything with a side effect or calling computations with one (rng,
 *     after-all included), or in a control dependency;
 *   - pad of a broadcast by a constant (XLA skips it for compile time);
 *   - results or operands of more than 45M elements;
 *   - instructions the interpreter cannot evaluate, or not within a budget
 *     of time and memory: those are left as they are.
 * Fusion computations are left alone.  Each fold evaluates a scratch module
 * holding copies of the instruction and its constant operands; the
 * instruction's called computations are shared, not copied.
 */
#include "passes.h"

#include <string.h>

#include "../lib/eval/eval.h"
#include "../lib/hlo/ir_edit.h"

enum { MAX_ELEMENTS = 45 * 1000 * 1000 };

/* Operand kinds constant folding accepts. */
static bool is_constant_like(const HloInstr *o) {
  switch (o->op) {
  case HLO_CONSTANT:
    return o->literal && !o->literal->elided &&
           (o->literal->data || shape_elements(o->shape) == 0 ||
            shape_is_tuple(o->shape));
  case HLO_BROADCAST:
    return is_constant_like(o->ops[0]) && o->ops[0]->op == HLO_CONSTANT;
  case HLO_IOTA:
    return true;
  case HLO_TUPLE:
    for (int k = 0; k < o->nops; k++)
      if (!is_constant_like(o->ops[k]))
        return false;
    return true;
  default:
    return false;
  }
}

static bool any_constant(const HloInstr *i) {
  for (int k = 0; k < i->nops; k++) {
    const HloInstr *o = i->ops[k];
    if (o->op == HLO_CONSTANT || (o->op == HLO_TUPLE && any_constant(o)))
      return true;
  }
  return false;
}

/* Ops never evaluated at compile time, wherever they are: random numbers,
 * tokens, opaque calls, loops (compile time), device communication. */
static bool never_folded(HloOp op) {
  switch (op) {
  case HLO_FFT: case HLO_WHILE: case HLO_AFTER_ALL: case HLO_RNG:
  case HLO_RNG_BIT_GENERATOR: case HLO_RNG_GET_AND_UPDATE_STATE:
  case HLO_CUSTOM_CALL: case HLO_ASYNC_START: case HLO_ASYNC_UPDATE:
  case HLO_ASYNC_DONE: case HLO_PARTITION_ID: case HLO_REPLICA_ID:
  case HLO_ALL_GATHER: case HLO_ALL_GATHER_START: case HLO_ALL_GATHER_DONE:
  case HLO_ALL_REDUCE: case HLO_ALL_REDUCE_START: case HLO_ALL_REDUCE_DONE:
  case HLO_ALL_TO_ALL: case HLO_RAGGED_ALL_TO_ALL: case HLO_REDUCE_SCATTER:
  case HLO_COLLECTIVE_BROADCAST: case HLO_COLLECTIVE_PERMUTE:
  case HLO_COLLECTIVE_PERMUTE_START: case HLO_COLLECTIVE_PERMUTE_DONE:
  case HLO_COLLECTIVE_REDUCE: case HLO_SEND: case HLO_SEND_DONE:
  case HLO_RECV: case HLO_RECV_DONE: case HLO_INFEED: case HLO_OUTFEED:
  case HLO_DOMAIN: case HLO_OPTIMIZATION_BARRIER:
    return true;
  default:
    return false;
  }
}

/* Nothing in c or below it is never_folded. */
static bool comp_foldable(const HloComp *c, int depth) {
  if (depth > 32)
    return false;
  for (int k = 0; k < c->ninstrs; k++) {
    const HloInstr *i = c->instrs[k];
    if (ir_removed(i))
      continue;
    if (never_folded(i->op))
      return false;
    for (int j = 0; j < i->ncalled; j++)
      if (!comp_foldable(i->called[j], depth + 1))
        return false;
  }
  return true;
}

static bool foldable(IrEdit *e, const HloInstr *i) {
  switch (i->op) {
  case HLO_PARAMETER: case HLO_CONSTANT: case HLO_TUPLE: case HLO_BROADCAST:
  case HLO_IOTA:
    return false;
  default:
    break;
  }
  if (never_folded(i->op) || !shape_is_array(i->shape) ||
      shape_is_dynamic(i->shape))
    return false;
  if (i->op == HLO_PAD && i->ops[0]->op == HLO_BROADCAST &&
      i->ops[1]->op == HLO_CONSTANT)
    return false;
  if (!any_constant(i))
    return false;
  int64_t in = 0;
  for (int k = 0; k < i->nops; k++) {
    if (!is_constant_like(i->ops[k]))
      return false;
    if (shape_is_array(i->ops[k]->shape))
      in += shape_elements(i->ops[k]->shape);
  }
  int64_t out = shape_elements(i->shape);
  if (out < 0 || out > MAX_ELEMENTS || in > MAX_ELEMENTS)
    return false;
  for (int k = 0; k < i->ncalled; k++)
    if (!comp_foldable(i->called[k], 0))
      return false;
  return !ir_has_control_deps(e, i) && !ir_has_side_effect_deep(i);
}

/* A copy of src in t with the given operands. */
static HloInstr *copy_into(HloComp *t, const HloInstr *src, int nops,
                           HloInstr **ops) {
  HloInstr *n = hlo_instr_new(t, src->op, src->shape, nops, ops);
  int id = n->id;
  HloInstr **o = n->ops;
  *n = *src;
  n->id = id;
  n->ops = o;
  n->nops = nops;
  n->parent = t;
  n->ncontrol_preds = 0;
  n->control_preds = NULL;
  return n;
}

/* Copies the constant-like operand tree of o into t. */
static HloInstr *copy_tree(HloComp *t, const HloInstr *o) {
  HloInstr *ops[64];
  int n = o->nops < 64 ? o->nops : 64;
  for (int k = 0; k < n; k++)
    ops[k] = copy_tree(t, o->ops[k]);
  return copy_into(t, o, n, ops);
}

/* Evaluates i; on success returns a literal of i's shape in `a`. */
static Literal *evaluate(HloModule *m, const HloInstr *i, Arena *a) {
  for (int k = 0; k < i->nops; k++)
    if (i->ops[k]->op == HLO_TUPLE && i->ops[k]->nops > 64)
      return NULL;
  HloModule *tmp = hlo_module_new("constant_folding");
  tmp->replica_count = m->replica_count;
  tmp->num_partitions = m->num_partitions;
  HloComp *t = hlo_comp_new(tmp, "__constant_folding__");
  t->is_entry = true;
  tmp->entry = t;
  HloInstr **ops = ARENA_ARRAY(tmp->arena, HloInstr *, i->nops + 1);
  for (int k = 0; k < i->nops; k++)
    ops[k] = copy_tree(t, i->ops[k]);
  t->root = copy_into(t, i, i->nops, ops);
  EvalOptions o;
  eval_options_default(&o);
  o.time_budget = 2.0;
  o.mem_budget = (int64_t)1 << 30;
  Diag d = {0};
  Literal *r = NULL;
  Arena *scratch = arena_new();
  bool ok = eval_computation(tmp, t, 0, NULL, scratch, &o, &r, &d, NULL);
  Literal *out = NULL;
  if (ok && r && r->shape && shape_is_array(r->shape) &&
      shape_compatible(r->shape, i->shape) && !r->elided) {
    out = literal_new(a, shape_clone(a, i->shape));
    int64_t bytes = shape_byte_size(r->shape);
    if (bytes > 0 && r->data)
      memcpy(out->data, r->data, (size_t)bytes);
    else if (bytes != 0)
      out = NULL;
  }
  diag_clear(&d);
  arena_free(scratch);
  hlo_module_free(tmp);
  return out;
}

bool pass_constant_folding(HloModule *m, PassContext *ctx) {
  (void)ctx;
  IrEdit *e = ir_begin(m);
  bool changed = false;
  for (int ci = 0; ci < m->ncomps; ci++) {
    HloComp *c = m->comps[ci];
    if (c->fusion_instr)
      continue;
    int ninstrs = c->ninstrs;
    for (int k = 0; k < ninstrs; k++) {
      HloInstr *i = c->instrs[k];
      if (ir_removed(i) || !foldable(e, i))
        continue;
      Literal *l = evaluate(m, i, ir_arena(e));
      if (!l)
        continue;
      HloInstr *k0 = ir_constant(e, c, l);
      ir_replace(e, i, k0);
      changed = true;
    }
  }
  return ir_end(e, changed);
}
