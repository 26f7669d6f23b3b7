/*
 * single_device_collectives.c - "single-device-collectives": in a module
 * that runs on one device (replica_count and num_partitions both 1 or
 * absent), every collective has one participant, and each becomes what it
 * computes there:
 *
 *   all-reduce, reduce-scatter, all-gather, all-to-all,
 *   collective-broadcast                  -> the operand (a tuple of the
 *                                            operands when several)
 *   collective-permute with the pair 0->0 -> the operand
 *   collective-permute without it         -> zeros (XLA's value for a
 *                                            device nobody sends to)
 *   replica-id, partition-id              -> 0
 *
 *   all-gather whose result is S times    -> the operand padded with zeros
 *   its operand along dimensions={d}         to the result (XLA's verifier
 *                                            takes any S with one device;
 *                                            XLA's CPU runtime writes slot
 *                                            0 and leaves the rest unwritten)
 *
 * Otherwise only a collective whose result has its operands' shapes is
 * rewritten (on one device a reduce-scatter cannot change a shape); the
 * in-place collective-permute, the -start/-done forms (async-to-sync turns
 * them into these first) and every collective of a module with several
 * replicas or partitions stay as they are, for the backend to refuse by
 * name.
 */
#include "passes.h"

#include "../lib/hlo/ir_edit.h"

static bool one_device(const HloModule *m) {
  return m->replica_count <= 1 && m->num_partitions <= 1;
}

static bool is_identity_collective(HloOp op) {
  switch (op) {
  case HLO_ALL_REDUCE: case HLO_REDUCE_SCATTER: case HLO_ALL_GATHER:
  case HLO_ALL_TO_ALL: case HLO_COLLECTIVE_BROADCAST:
  case HLO_COLLECTIVE_PERMUTE:
    return true;
  default:
    return false;
  }
}

static bool permutes_to_self(const HloInstr *i) {
  for (int k = 0; k < i->npairs; k++)
    if (i->source_target_pairs[k][0] == 0 && i->source_target_pairs[k][1] == 0)
      return true;
  return false;
}

/* The operands as one value: the operand, or a tuple of them; NULL when
 * that does not have i's shape. */
static HloInstr *operands_value(IrEdit *e, HloComp *c, HloInstr *i) {
  for (int k = 0; k < i->nops; k++)
    if (!shape_is_array(i->ops[k]->shape))
      return NULL;
  HloInstr *v = i->nops == 1 && i->shape->et != ET_TUPLE ? i->ops[0] : NULL;
  if (!v && i->shape->et == ET_TUPLE && i->shape->ntuple == i->nops) {
    for (int k = 0; k < i->nops; k++)
      if (!shape_compatible(i->shape->tuple[k], i->ops[k]->shape))
        return NULL;
    return ir_tuple(e, c, i->nops, i->ops);
  }
  return v && shape_compatible(v->shape, i->shape) ? v : NULL;
}

/* Result leaf rs is operand shape s S times along d (S >= 1). */
static bool slots_shape(const Shape *s, const Shape *rs, int64_t d) {
  if (!shape_is_array(s) || !shape_is_array(rs) || shape_is_dynamic(s) ||
      shape_is_dynamic(rs) || rs->et != s->et || rs->rank != s->rank ||
      d < 0 || d >= s->rank || s->dims[d] <= 0 || rs->dims[d] % s->dims[d])
    return false;
  for (int k = 0; k < s->rank; k++)
    if (k != d && rs->dims[k] != s->dims[k])
      return false;
  return true;
}

/* all-gather of a device alone: x padded with zeros along d to rs. */
static HloInstr *gather_slots(IrEdit *e, HloComp *c, HloInstr *x,
                              const Shape *rs, int64_t d) {
  const Shape *s = x->shape;
  if (rs->dims[d] == s->dims[d])
    return x;
  Arena *a = ir_arena(e);
  PadDim *pd = ARENA_ARRAY(a, PadDim, s->rank);
  pd[d].hi = rs->dims[d] - s->dims[d];
  HloInstr *ops[2] = {x, ir_scalar(e, c, s->et, 0)};
  HloInstr *p = ir_new(e, c, HLO_PAD, shape_array(a, s->et, rs->rank, rs->dims),
                       2, ops);
  p->padding = pd;
  return p;
}

/* The all-gather's result on one device as padded operands (a tuple of
 * them when several); NULL when its shapes are not of that form. */
static HloInstr *gather_value(IrEdit *e, HloComp *c, HloInstr *i) {
  const Shape *rs = i->shape;
  bool tuple = rs->et == ET_TUPLE;
  if (i->dims.n != 1 || (tuple && rs->ntuple != i->nops) || (!tuple && i->nops != 1))
    return NULL;
  for (int k = 0; k < i->nops; k++)
    if (!slots_shape(i->ops[k]->shape, tuple ? rs->tuple[k] : rs, i->dims.v[0]))
      return NULL;
  HloInstr **el = ARENA_ARRAY(ir_arena(e), HloInstr *, i->nops);
  for (int k = 0; k < i->nops; k++)
    el[k] = gather_slots(e, c, i->ops[k], tuple ? rs->tuple[k] : rs, i->dims.v[0]);
  return tuple ? ir_tuple(e, c, i->nops, el) : el[0];
}

static HloInstr *zeros_like(IrEdit *e, HloComp *c, HloInstr *v) {
  if (v->shape->et != ET_TUPLE)
    return ir_scalar_like(e, c, v->shape, 0);
  HloInstr **el = ARENA_ARRAY(ir_arena(e), HloInstr *, v->nops);
  for (int k = 0; k < v->nops; k++)
    el[k] = ir_scalar_like(e, c, v->ops[k]->shape, 0);
  return ir_tuple(e, c, v->nops, el);
}

bool pass_single_device_collectives(HloModule *m, PassContext *ctx) {
  (void)ctx;
  if (!one_device(m))
    return false;
  IrEdit *e = ir_begin(m);
  bool changed = false;
  for (int ci = 0; ci < m->ncomps; ci++) {
    HloComp *c = m->comps[ci];
    int n = c->ninstrs;
    for (int k = 0; k < n; k++) {
      HloInstr *i = c->instrs[k];
      if (ir_removed(i) || ir_has_control_deps(e, i))
        continue;
      HloInstr *v = NULL;
      if (i->op == HLO_REPLICA_ID || i->op == HLO_PARTITION_ID) {
        v = ir_scalar_like(e, c, i->shape, 0);
      } else if (is_identity_collective(i->op) && i->nops > 0) {
        if (i->op == HLO_COLLECTIVE_PERMUTE && i->nops == 4 &&
            i->ops[2]->shape->et == ET_TUPLE)
          continue; /* in place */
        v = operands_value(e, c, i);
        if (!v && i->op == HLO_ALL_GATHER)
          v = gather_value(e, c, i);
        if (v && i->op == HLO_COLLECTIVE_PERMUTE && !permutes_to_self(i)) {
          HloInstr *z = zeros_like(e, c, v);
          if (v->op == HLO_TUPLE && v != i->ops[0])
            ir_remove(e, v);
          v = z;
        }
      }
      if (!v)
        continue;
      if (!shape_equal(v->shape, i->shape) && v->shape->et != ET_TUPLE)
        v = ir_new(e, c, HLO_COPY, i->shape, 1, &v);
      ir_replace(e, i, v);
      changed = true;
    }
  }
  if (changed)
    ir_remove_unused_comps(e); /* the reducers */
  return ir_end(e, changed);
}
