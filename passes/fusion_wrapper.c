/*
 * fusion_wrapper.c - "fusion-wrapper" (XLA's FusionWrapper): wraps every
 * computing instruction that fusion left alone into a fusion of its own, so
 * that afterwards every instruction that produces a kernel is a fusion.
 *
 *   %wrapped_sort = ... fusion(...), kind=kLoop, calls=%wrapped_sort_computation
 *
 * A lone reduce gets kind=kInput, everything else kLoop.  Left as they are:
 * parameters, constants, tuples, get-tuple-element, bitcast, control flow
 * (while, conditional, call), fusions, custom-calls (the code generator
 * refuses them clearly), token and scheduling ops (after-all,
 * add-dependency, optimization-barrier, domain), asynchronous and
 * communication ops (async-*, copy-start/-done, send/recv, infeed/outfeed,
 * collectives) and anything with a side effect or a token.  partition-id
 * and replica-id compute a value and are wrapped.
 *
 * Runs where priority-fusion runs: the entry and the computations reached
 * from it through while, conditional and call.  Idempotent: the second run
 * finds only fusions.
 */
#include "passes.h"

#include <stdlib.h>
#include <string.h>

#include "../lib/hlo/ir_edit.h"
#include "fusion_util.h"

static bool has_token(const Shape *s) {
  if (s->et == ET_TUPLE) {
    for (int k = 0; k < s->ntuple; k++)
      if (has_token(s->tuple[k]))
        return true;
    return false;
  }
  return !et_is_array(s->et);
}

static bool should_wrap(const HloInstr *i) {
  switch (i->op) {
  case HLO_PARAMETER: case HLO_CONSTANT: case HLO_TUPLE:
  case HLO_GET_TUPLE_ELEMENT: case HLO_BITCAST: case HLO_WHILE:
  case HLO_CONDITIONAL: case HLO_CALL: case HLO_FUSION: case HLO_CUSTOM_CALL:
  case HLO_AFTER_ALL: case HLO_ADD_DEPENDENCY: case HLO_OPTIMIZATION_BARRIER:
  case HLO_DOMAIN: case HLO_ASYNC_START: case HLO_ASYNC_UPDATE:
  case HLO_ASYNC_DONE: case HLO_COPY_START: case HLO_COPY_DONE:
  case HLO_SEND: case HLO_SEND_DONE: case HLO_RECV: case HLO_RECV_DONE:
  case HLO_INFEED: case HLO_OUTFEED: case HLO_ALL_GATHER:
  case HLO_ALL_GATHER_START: case HLO_ALL_GATHER_DONE: case HLO_ALL_REDUCE:
  case HLO_ALL_REDUCE_START: case HLO_ALL_REDUCE_DONE: case HLO_ALL_TO_ALL:
  case HLO_RAGGED_ALL_TO_ALL: case HLO_COLLECTIVE_BROADCAST:
  case HLO_COLLECTIVE_PERMUTE: case HLO_COLLECTIVE_PERMUTE_START:
  case HLO_COLLECTIVE_PERMUTE_DONE: case HLO_COLLECTIVE_REDUCE:
  case HLO_REDUCE_SCATTER: case HLO_RNG_GET_AND_UPDATE_STATE:
  case HLO_GET_DIMENSION_SIZE: case HLO_SET_DIMENSION_SIZE:
  case HLO_DYNAMIC_RESHAPE: case HLO_REPLICA_ID: case HLO_PARTITION_ID:
    return false;
  default:
    break;
  }
  if (ir_has_side_effect(i) || has_token(i->shape))
    return false;
  for (int k = 0; k < i->nops; k++)
    if (has_token(i->ops[k]->shape))
      return false;
  return true;
}

/* "wrapped_<op>" with '-' as '_'. */
static char *wrapped_name(Arena *a, const HloInstr *i, const char *suffix) {
  StrBuf b;
  sb_init(&b);
  sb_printf(&b, "wrapped_");
  for (const char *s = hlo_op_name(i->op); *s; s++)
    sb_printf(&b, "%c", *s == '-' ? '_' : *s);
  sb_printf(&b, "%s", suffix);
  char *r = arena_strdup(a, b.s);
  sb_free(&b);
  return r;
}

static void wrap(IrEdit *e, HashMap *comp_names, HloComp *c, HloInstr *i) {
  HloModule *m = ir_module(e);
  Arena *a = ir_arena(e);
  /* Distinct operands, in order; parameter k of the fusion is ops[k]. */
  HloInstr **ops = ARENA_ARRAY(a, HloInstr *, i->nops > 0 ? i->nops : 1);
  int *slot = xmalloc(sizeof *slot * (size_t)(i->nops > 0 ? i->nops : 1));
  int n = 0;
  for (int k = 0; k < i->nops; k++) {
    int s = -1;
    for (int j = 0; j < n && s < 0; j++)
      if (ops[j] == i->ops[k])
        s = j;
    if (s < 0) {
      s = n;
      ops[n++] = i->ops[k];
    }
    slot[k] = s;
  }
  char *cname = wrapped_name(a, i, "_computation");
  HloComp *fc;
  if (hashmap_get(comp_names, cname))
    fc = hlo_comp_new(m, ir_unique_name(e, cname));
  else
    fc = hlo_comp_new(m, cname);
  hashmap_put(comp_names, fc->name, fc);
  fc->execution_thread = c->execution_thread;
  HloInstr **params = ARENA_ARRAY(a, HloInstr *, n > 0 ? n : 1);
  for (int k = 0; k < n; k++) {
    char name[32];
    snprintf(name, sizeof name, "param_%d", k);
    params[k] = ir_add_param(e, fc, shape_clone(a, ops[k]->shape), name);
  }
  HloInstr **args = ARENA_ARRAY(a, HloInstr *, i->nops > 0 ? i->nops : 1);
  for (int k = 0; k < i->nops; k++)
    args[k] = params[slot[k]];
  free(slot);
  HloInstr *inner = ir_clone(e, fc, i, i->shape, i->nops, args);
  fc->root = inner;
  HloInstr *fu = ir_new(e, c, HLO_FUSION, i->shape, n, ops);
  fu->name = ir_unique_name(e, wrapped_name(a, i, ""));
  fu->fusion_kind = i->op == HLO_REDUCE ? FUSION_INPUT : FUSION_LOOP;
  fu->ncalled = 1;
  fu->called = ARENA_ARRAY(a, HloComp *, 1);
  fu->called[0] = fc;
  fu->metadata = i->metadata;
  fu->sharding = i->sharding;
  fu->frontend_attrs = i->frontend_attrs;
  fc->fusion_instr = fu;
  ir_replace(e, i, fu);
  inner->name = i->name;
}

bool pass_fusion_wrapper(HloModule *m, PassContext *ctx) {
  (void)ctx;
  IrEdit *e = ir_begin(m);
  HloComp **comps;
  int n = fusion_control_comps(m, &comps);
  HashMap comp_names = {0};
  for (int k = 0; k < m->ncomps; k++)
    hashmap_put(&comp_names, m->comps[k]->name, m->comps[k]);
  bool changed = false;
  for (int k = 0; k < n; k++) {
    HloComp *c = comps[k];
    int ni = c->ninstrs;
    for (int j = 0; j < ni; j++) {
      HloInstr *i = c->instrs[j];
      if (ir_removed(i) || !should_wrap(i) || ir_has_control_deps(e, i))
        continue;
      wrap(e, &comp_names, c, i);
      changed = true;
    }
  }
  free(comps);
  hashmap_free(&comp_names);
  return ir_end(e, changed);
}
