/*
 * rng_expander.c - "rng-expander" (XLA's RngExpander): every `rng` becomes a
 * call of a computation that draws its numbers with Philox
 * (rng_philox.c), keyed and counted the way XLA's CPU compiler does:
 *
 *   key   = u64 constant: hlo_rng_key(k) for the k-th rng in XLA's
 *           expansion order (lib/hlo/rng_keys.c says where it comes from)
 *   state = rng-get-and-update-state, delta = the 32-bit words drawn
 *   rng   = call(key, state, a, b), to_apply=rng
 *
 * This is the expander of jaxlib 0.10.2's XLA; newer XLA reads the key
 * from a GetRngSeed custom-call (a fresh random value at every execution
 * on the CPU), which no other implementation can reproduce.  One
 * computation serves every rng with the same distribution and shapes.  f16
 * and bf16 rngs are drawn in f32 (a new f32 rng on converted operands,
 * expanded in turn) and converted back.  Operands after the first two (the
 * shape operand of the MHLO form, which XLA's HLO parser accepts) are
 * dropped, as XLA's import drops them.  Types XLA's expansion does not
 * handle (pred, 8- and 16-bit integers, normal integers) are an error
 * naming the rng.
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

static bool expand(IrEdit *e, HloComp *c, HloInstr *rng, uint64_t key_value,
                   CacheVec *cache, Diag *d) {
  Arena *a = ir_arena(e);
  const Shape *s = rng->shape;
  if (rng->nops < 2 || !shape_is_array(s) ||
      !shape_is_scalar(rng->ops[0]->shape) ||
      !shape_is_scalar(rng->ops[1]->shape) || rng->ops[0]->shape->et != s->et ||
      rng->ops[1]->shape->et != s->et)
    return diag_error(d, rng->loc,
                      "rng-expander: rng '%s' needs two scalar operands of its "
                      "element type (and ignores any further ones)",
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
  HloInstr *key = u64_const(e, c, key_value);
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
  HloInstr **rngs;
  int n = hlo_rng_order(m, &rngs);
  if (n == 0) {
    free(rngs);
    return false;
  }
  IrEdit *e = ir_begin(m);
  bool ok = true;
  CacheVec cache = {0};
  for (int k = 0; k < n && ok; k++)
    ok = expand(e, rngs[k]->parent, rngs[k], hlo_rng_key(k), &cache, ctx->diag);
  free(rngs);
  for (int j = 0; j < cache.len; j++)
    free(cache.data[j].key);
  vec_free(&cache);
  return ir_end(e, ok);
}
