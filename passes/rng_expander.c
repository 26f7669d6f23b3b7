/*
 * rng_expander.c - "rng-expander" (XLA's RngExpander): every `rng` becomes a
 * call of a computation that draws its numbers with Philox
 * (rng_philox.c), keyed and counted the way XLA does:
 *
 *   seed  = custom-call() GetRngSeed, frontend_attributes=
 *           {_xla_cse_safe_zero_operand="true"}
 *   key   = seed ^ ((op_id * 0x9E3779B97F4A7C15) >> 32)
 *           ^ replica_id (when replica_count > 1)
 *           ^ (partition_id << 32) (when num_partitions > 1)
 *   state = rng-get-and-update-state, delta = the 32-bit words drawn
 *   rng   = call(key, state, a, b), to_apply=rng
 *
 * op_id is the rng's instruction id.  One computation serves every rng
 * with the same distribution and shapes.  f16 and bf16 rngs are drawn in f32
 * (a new f32 rng on converted operands, expanded in turn) and converted
 * back.  The values change (the interpreter's own `rng` draws differently),
 * as they do in XLA.  Types XLA's expansion does not handle (pred, 8- and
 * 16-bit integers, normal integers) are an error naming the rng.
 */
#include "passes.h"

#include <stdlib.h>
#include <string.h>

#include "rng_philox.h"

typedef struct Cached {
  char *key;
  HloComp *comp;
} Cached;

typedef Vec(Cached) CacheVec;

static HloInstr *u64_const(IrEdit *e, HloComp *c, uint64_t v) {
  Arena *a = ir_arena(e);
  Literal *l = literal_new(a, shape_scalar(a, ET_U64));
  literal_set_u64(l, 0, v);
  return ir_constant(e, c, l);
}

static HloInstr *seed_call(IrEdit *e, HloComp *c) {
  Arena *a = ir_arena(e);
  HloInstr *s = ir_new(e, c, HLO_CUSTOM_CALL, shape_scalar(a, ET_U64), 0, NULL);
  s->cc = ARENA_NEW(a, CustomCallAttrs);
  s->cc->target = arena_strdup(a, "GetRngSeed");
  s->frontend_attrs = ARENA_NEW(a, KVList);
  s->frontend_attrs->n = 1;
  s->frontend_attrs->kv = ARENA_NEW(a, KeyValue);
  s->frontend_attrs->kv[0].key = arena_strdup(a, "_xla_cse_safe_zero_operand");
  s->frontend_attrs->kv[0].value = arena_strdup(a, "true");
  return s;
}

/* The Philox key of the rng with id op_id, in c. */
static HloInstr *philox_key(IrEdit *e, HloComp *c, int64_t op_id) {
  HloModule *m = ir_module(e);
  Arena *a = ir_arena(e);
  HloInstr *seed = seed_call(e, c);
  HloInstr *mix = ir_binary(e, c, HLO_MULTIPLY, u64_const(e, c, (uint64_t)op_id),
                            u64_const(e, c, 0x9E3779B97F4A7C15ULL));
  HloInstr *shift = u64_const(e, c, 32);
  mix = ir_binary(e, c, HLO_SHIFT_RIGHT_LOGICAL, mix, shift);
  HloInstr *mixed = ir_binary(e, c, HLO_XOR, seed, mix);
  HloInstr *replica, *partition;
  if (m->replica_count > 1)
    replica = ir_convert(e, c, ir_new(e, c, HLO_REPLICA_ID,
                                      shape_scalar(a, ET_U32), 0, NULL),
                         ET_U64);
  else
    replica = u64_const(e, c, 0);
  /* The module config's use_spmd_partitioning is not in the text: XLA's
   * default (false) holds. */
  if (m->num_partitions > 1)
    partition = ir_convert(e, c, ir_new(e, c, HLO_PARTITION_ID,
                                        shape_scalar(a, ET_U32), 0, NULL),
                           ET_U64);
  else
    partition = u64_const(e, c, 0);
  HloInstr *k = ir_binary(e, c, HLO_XOR, mixed, replica);
  HloInstr *p = ir_binary(e, c, HLO_SHIFT_LEFT, partition, shift);
  return ir_binary(e, c, HLO_XOR, k, p);
}

/* Moves rng's control dependencies (both ends) to v. */
static void move_control_deps(IrEdit *e, HloComp *c, HloInstr *rng,
                              HloInstr *v) {
  if (!ir_has_control_deps(e, rng))
    return;
  Arena *a = ir_arena(e);
  if (rng->ncontrol_preds > 0) {
    v->control_preds = arena_memdup(a, rng->control_preds,
                                    sizeof(HloInstr *) * (size_t)rng->ncontrol_preds);
    v->ncontrol_preds = rng->ncontrol_preds;
    rng->ncontrol_preds = 0;
    rng->control_preds = NULL;
  }
  for (int k = 0; k < c->ninstrs; k++) {
    HloInstr *s = c->instrs[k];
    bool names = false;
    for (int j = 0; j < s->ncontrol_preds; j++)
      names |= s->control_preds[j] == rng;
    if (ir_removed(s) || !names)
      continue;
    HloInstr **preds = arena_memdup(a, s->control_preds,
                                    sizeof(HloInstr *) * (size_t)s->ncontrol_preds);
    for (int j = 0; j < s->ncontrol_preds; j++)
      if (preds[j] == rng)
        preds[j] = v;
    s->control_preds = preds;
  }
}

static HloComp *comp_for(IrEdit *e, CacheVec *cache, const HloInstr *rng) {
  StrBuf k;
  sb_init(&k);
  sb_printf(&k, "%d|", (int)rng->rng_dist);
  shape_print(&k, rng->shape, true);
  sb_putc(&k, '|');
  shape_print(&k, rng->ops[0]->shape, true);
  sb_putc(&k, '|');
  shape_print(&k, rng->ops[1]->shape, true);
  for (int j = 0; j < cache->len; j++)
    if (strcmp(cache->data[j].key, k.s) == 0) {
      sb_free(&k);
      return cache->data[j].comp;
    }
  HloComp *c = rng_philox_comp(e, rng->rng_dist, rng->shape,
                               rng->ops[0]->shape, rng->ops[1]->shape);
  if (c)
    vec_push(cache, ((Cached){sb_detach(&k), c}));
  else
    sb_free(&k);
  return c;
}

static bool expand(IrEdit *e, HloComp *c, HloInstr *rng, CacheVec *cache,
                   Diag *d) {
  Arena *a = ir_arena(e);
  const Shape *s = rng->shape;
  if (rng->nops != 2 || !shape_is_array(s) ||
      !shape_is_scalar(rng->ops[0]->shape) ||
      !shape_is_scalar(rng->ops[1]->shape) || rng->ops[0]->shape->et != s->et ||
      rng->ops[1]->shape->et != s->et)
    return diag_error(d, rng->loc,
                      "rng-expander: rng '%s' needs two scalar operands of its "
                      "element type",
                      rng->name),
           false;
  if (s->et == ET_F16 || s->et == ET_BF16) {
    /* ConvertSmallFpRngToF32Rng */
    HloInstr *ops[2];
    for (int k = 0; k < 2; k++)
      ops[k] = ir_convert(e, c, rng->ops[k], ET_F32);
    HloInstr *wide = ir_clone(e, c, rng, ir_shape_with_et(a, s, ET_F32), 2, ops);
    move_control_deps(e, c, rng, wide);
    ir_replace_all_uses(e, rng, ir_convert(e, c, wide, s->et));
    ir_remove(e, rng); /* its operands live on in the converts */
    rng = wide;
    s = rng->shape;
  }
  HloComp *fn = et_bits(s->et) >= 32 ? comp_for(e, cache, rng) : NULL;
  if (!fn)
    return diag_error(d, rng->loc,
                      "rng-expander: rng '%s' of type %s with distribution %s "
                      "is not supported (XLA's expansion takes f16, bf16, f32, "
                      "f64, and for rng_uniform s32, u32, s64, u64)",
                      rng->name, et_name(s->et),
                      rng->rng_dist == RNG_NORMAL ? "rng_normal" : "rng_uniform"),
           false;
  HloInstr *key = philox_key(e, c, rng->id);
  int64_t two = 2;
  HloInstr *state = ir_new(e, c, HLO_RNG_GET_AND_UPDATE_STATE,
                           shape_array(a, ET_U64, 1, &two), 0, NULL);
  state->rng_delta = shape_elements(s) * (et_bits(s->et) / 32);
  HloInstr *args[4] = {key, state, rng->ops[0], rng->ops[1]};
  HloInstr *call = ir_new(e, c, HLO_CALL, shape_clone(a, s), 4, args);
  call->ncalled = 1;
  call->called = ARENA_ARRAY(a, HloComp *, 1);
  call->called[0] = fn;
  move_control_deps(e, c, rng, call);
  /* The call carries the side effect now; the operands live on in it. */
  ir_replace_all_uses(e, rng, call);
  ir_remove(e, rng);
  return true;
}

bool pass_rng_expander(HloModule *m, PassContext *ctx) {
  IrEdit *e = ir_begin(m);
  bool changed = false, ok = true;
  CacheVec cache = {0};
  int ncomps = m->ncomps;
  for (int ci = 0; ci < ncomps && ok; ci++) {
    HloComp *c = m->comps[ci];
    int ninstrs = c->ninstrs;
    for (int k = 0; k < ninstrs && ok; k++) {
      HloInstr *i = c->instrs[k];
      if (ir_removed(i) || i->op != HLO_RNG)
        continue;
      ok = expand(e, c, i, &cache, ctx->diag);
      changed |= ok;
    }
  }
  for (int j = 0; j < cache.len; j++)
    free(cache.data[j].key);
  vec_free(&cache);
  return ir_end(e, changed && ok);
}
