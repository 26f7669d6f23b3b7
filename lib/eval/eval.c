/*
 * eval.c - the interpreter's driver: evaluates computations instruction by
 * instruction and dispatches each opcode to its handler; control flow
 * (while, conditional, call, fusion, async wrappers), tuples and constants
 * live here.
 *
 * A computation is evaluated from a plan, built once per computation and
 * cached: the instructions reachable from the root in a topological order
 * (operands first, as XLA's DFS visitor reaches them), each with its operand
 * slots and its number of uses.  A value is dropped as soon as its last user
 * has run, so the live set stays close to the program's working set and the
 * memory budget measures something meaningful.  Values are immutable, so
 * copy, optimization-barrier and friends share their operand's buffer.
 *
 * Every value an instruction produces is checked against the instruction's
 * shape (element bytes and tuple arity) before anyone reads it; handlers can
 * then trust operand shapes and never read out of bounds, even on a module
 * the verifier never saw.
 *
 * Loop-invariant values: in a computation that is called (a while body or
 * condition, a call, a branch; not the entry, which runs once), an
 * instruction that reads no parameter and whose op and called computations
 * are pure (no rng, collective, custom-call, infeed, outfeed, send or recv)
 * computes the same value on every call.  The first complete call keeps
 * the invariant values that a parameter-dependent instruction (or the
 * root) reads; later calls take them and skip the invariant instructions
 * altogether, as XLA's while-loop-invariant code motion would have hoisted
 * them.  The kept values stay counted in the live bytes; a computation
 * whose kept values would pass PLAN_CACHE_BYTES keeps none.
 */
#include <stdlib.h>
#include <string.h>

#include "evalp.h"

#define MAX_CALL_DEPTH 256

enum { PLAN_CACHE_BYTES = 64 << 20 };

typedef struct Plan {
  const HloComp *c;
  int n;                          /* instructions evaluated, in order */
  const HloInstr **order;
  int **opslot;                   /* per slot: operand slots */
  int *uses;                      /* operand occurrences (+1 for the root) */
  int root;
  bool *inv;                      /* per slot: invariant across calls */
  bool *keep;                     /* invariant, read by a non-invariant slot */
  EvalValue **kept;               /* their values after a complete call */
  bool any_keep, warm, no_keep;   /* warm: kept holds every keep slot */
  int64_t kept_bytes;
} Plan;

typedef struct PlanCache {
  HashMap by_name;                /* computation name -> Plan* */
  PtrVec all;
} PlanCache;

/* The cache hangs off the Eval through a side pointer kept here so that
 * evalp.h need not know Plan. */
typedef struct EvalCtx {
  Eval ev;
  PlanCache plans;
} EvalCtx;

ThreadPool *ev_pool(Eval *ev) {
  if (!ev->pool_made) {
    ev->pool_made = true;
    int n = ev->o.threads > 0 ? ev->o.threads
            : ev->o.world || ev->o.exchange ? 1
                                             : thread_pool_default_threads(0);
    ev->pool = thread_pool_new(n);
  }
  return ev->pool;
}

void eval_options_default(EvalOptions *o) {
  memset(o, 0, sizeof *o);
  o->rng_seed = 42;
}

/*
 * Plans
 */
typedef struct PtrSlot {
  const void *key;
  int val;
} PtrSlot;

static uint64_t ptr_hash(const void *p) {
  uint64_t x = (uint64_t)(uintptr_t)p;
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdULL;
  x ^= x >> 33;
  return x;
}

static int ptrmap_find(PtrSlot *t, int cap, const void *k) {
  uint64_t h = ptr_hash(k) & (uint64_t)(cap - 1);
  while (t[h].key && t[h].key != k) h = (h + 1) & (uint64_t)(cap - 1);
  return (int)h;
}

static void plan_free(Plan *p) {
  for (int s = 0; s < p->n; s++) free(p->opslot[s]);
  free(p->opslot);
  free(p->order);
  free(p->uses);
  free(p->inv);
  free(p->keep);
  free(p->kept);
  free(p);
}

/* An operand that is get-tuple-element of a tuple instruction is the
 * tuple's operand itself (the same value): the other elements of such a
 * tuple are then not evaluated unless something else uses them, as XLA's
 * simplifier and DCE drop them before anything runs. */
static const HloInstr *forwarded(const HloInstr *o) {
  while (o && o->op == HLO_GET_TUPLE_ELEMENT && o->nops == 1 && o->ops[0] &&
         o->ops[0]->op == HLO_TUPLE && o->ops[0]->parent == o->parent &&
         o->tuple_index >= 0 && o->tuple_index < o->ops[0]->nops)
    o = o->ops[0]->ops[o->tuple_index];
  return o;
}

static void plan_drop_kept(Eval *ev, Plan *p) {
  for (int s = 0; s < p->n && p->kept; s++) {
    ev_unref(ev, p->kept[s]);
    p->kept[s] = NULL;
  }
  p->warm = false;
  p->kept_bytes = 0;
}

/* Whether op i and the computations it calls have no effect beyond their
 * value and give the same value for the same operands. */
static bool pure_comp(const HloComp *c, int depth);

static bool pure_op(const HloInstr *i, int depth) {
  switch (i->op) {
  case HLO_PARAMETER: case HLO_RNG: case HLO_RNG_GET_AND_UPDATE_STATE:
  case HLO_INFEED: case HLO_OUTFEED: case HLO_SEND: case HLO_SEND_DONE:
  case HLO_RECV: case HLO_RECV_DONE: case HLO_CUSTOM_CALL: case HLO_AFTER_ALL:
  case HLO_ASYNC_START: case HLO_ASYNC_UPDATE: case HLO_ASYNC_DONE:
  case HLO_REPLICA_ID: case HLO_PARTITION_ID: case HLO_RAGGED_ALL_TO_ALL:
  case HLO_ALL_REDUCE_DONE: case HLO_COLLECTIVE_REDUCE:
    return false;
  default:
    break;
  }
  if (ev_is_collective_op(i->op))
    return false;
  for (int k = 0; k < i->ncalled; k++)
    if (!i->called[k] || !pure_comp(i->called[k], depth + 1))
      return false;
  return true;
}

static bool pure_comp(const HloComp *c, int depth) {
  if (depth > 32)
    return false;
  for (int k = 0; k < c->ninstrs; k++)
    if (c->instrs[k]->op != HLO_PARAMETER && !pure_op(c->instrs[k], depth))
      return false;
  return true;
}

/* The invariant slots of p and the ones to keep. */
static void plan_invariants(Plan *p) {
  p->inv = xcalloc((size_t)p->n + 1, sizeof *p->inv);
  p->keep = xcalloc((size_t)p->n + 1, sizeof *p->keep);
  p->kept = xcalloc((size_t)p->n + 1, sizeof *p->kept);
  for (int s = 0; s < p->n; s++) {
    const HloInstr *i = p->order[s];
    /* constants cost nothing to make again */
    bool inv = i->op != HLO_CONSTANT && pure_op(i, 0);
    for (int k = 0; k < i->nops && inv; k++) {
      const HloInstr *o = i->ops[k];
      inv = p->inv[p->opslot[s][k]] || o->op == HLO_CONSTANT;
    }
    p->inv[s] = inv;
  }
  for (int s = 0; s < p->n; s++) {
    const HloInstr *i = p->order[s];
    if (p->inv[s])
      continue;
    for (int k = 0; k < i->nops; k++)
      p->keep[p->opslot[s][k]] |= p->inv[p->opslot[s][k]];
  }
  p->keep[p->root] |= p->inv[p->root];
  for (int s = 0; s < p->n; s++)
    p->any_keep |= p->keep[s];
}

static int64_t value_bytes(const EvalValue *v) {
  int64_t n = v->data ? v->nbytes : 0;
  for (int k = 0; k < v->ntuple; k++) n += value_bytes(v->tuple[k]);
  return n;
}

static Plan *plan_build(Eval *ev, const HloComp *c) {
  if (!c->root) {
    ev_fail(ev, NULL, EVAL_ERR_INVALID, "computation '%s' has no root",
            c->name ? c->name : "");
    return NULL;
  }
  int cap = 16;
  while (cap < 2 * (c->ninstrs + 1)) cap *= 2;
  PtrSlot *map = xcalloc((size_t)cap, sizeof *map);
  Plan *p = xcalloc(1, sizeof *p);
  p->c = c;
  p->order = xcalloc((size_t)c->ninstrs + 1, sizeof *p->order);
  /* Iterative post-order DFS from the root. state: 0 new, 1 open, 2 done */
  typedef struct Frame { const HloInstr *i; int next; } Frame;
  Frame *stack = xcalloc((size_t)c->ninstrs + 2, sizeof *stack);
  int *state = xcalloc((size_t)cap, sizeof *state);
  int sp = 0;
  stack[sp++] = (Frame){c->root, 0};
  bool bad = false;
  while (sp > 0 && !bad) {
    Frame *f = &stack[sp - 1];
    int h = ptrmap_find(map, cap, f->i);
    if (f->next == 0 && !map[h].key) {
      map[h].key = f->i;
      map[h].val = -1;
      state[h] = 1;
    }
    if (f->next < f->i->nops) {
      const HloInstr *o = forwarded(f->i->ops[f->next++]);
      if (!o || o->parent != c) { bad = true; break; }
      int oh = ptrmap_find(map, cap, o);
      if (map[oh].key) {
        if (state[oh] == 1) { bad = true; break; }   /* cycle */
        continue;
      }
      if (sp >= c->ninstrs + 1) { bad = true; break; }
      stack[sp++] = (Frame){o, 0};
      continue;
    }
    state[h] = 2;
    if (p->n >= c->ninstrs + 1) { bad = true; break; }
    map[h].val = p->n;
    p->order[p->n++] = f->i;
    sp--;
  }
  free(stack);
  if (bad) {
    free(state);
    free(map);
    plan_free(p);
    ev_fail(ev, NULL, EVAL_ERR_INVALID,
            "computation '%s' has a cycle or a foreign operand", c->name);
    return NULL;
  }
  /* Parameters and the get-tuple-elements of parameters first: a tuple
   * parameter then dies early and its elements' buffers become reusable. */
  {
    const HloInstr **o2 = xcalloc((size_t)p->n + 1, sizeof *o2);
    int m = 0;
    for (int pass = 0; pass < 3; pass++)
      for (int s = 0; s < p->n; s++) {
        const HloInstr *i = p->order[s];
        bool is_param = i->op == HLO_PARAMETER;
        bool is_pgte = i->op == HLO_GET_TUPLE_ELEMENT && i->nops == 1 &&
                       i->ops[0]->op == HLO_PARAMETER;
        if ((pass == 0 && is_param) || (pass == 1 && is_pgte) ||
            (pass == 2 && !is_param && !is_pgte))
          o2[m++] = i;
      }
    /* the root stays last */
    for (int s = 0; s < m; s++)
      if (o2[s] == c->root && s != m - 1) {
        memmove(&o2[s], &o2[s + 1], sizeof *o2 * (size_t)(m - 1 - s));
        o2[m - 1] = c->root;
        break;
      }
    for (int s = 0; s < p->n; s++) {
      map[ptrmap_find(map, cap, o2[s])].val = s;
      p->order[s] = o2[s];
    }
    free(o2);
  }
  p->opslot = xcalloc((size_t)p->n, sizeof *p->opslot);
  p->uses = xcalloc((size_t)p->n, sizeof *p->uses);
  for (int s = 0; s < p->n; s++) {
    const HloInstr *i = p->order[s];
    p->opslot[s] = xcalloc((size_t)i->nops + 1, sizeof(int));
    for (int k = 0; k < i->nops; k++) {
      int slot = map[ptrmap_find(map, cap, forwarded(i->ops[k]))].val;
      p->opslot[s][k] = slot;
      p->uses[slot]++;
    }
  }
  p->root = p->n - 1;
  p->uses[p->root]++;
  plan_invariants(p);
  free(state);
  free(map);
  return p;
}

static Plan *plan_get(Eval *ev, const HloComp *c) {
  PlanCache *pc = &((EvalCtx *)ev)->plans;
  Plan *p = c->name ? hashmap_get(&pc->by_name, c->name) : NULL;
  if (p && p->c == c) return p;
  p = plan_build(ev, c);
  if (!p) return NULL;
  if (c->name) hashmap_put(&pc->by_name, c->name, p);
  vec_push(&pc->all, p);
  return p;
}

/*
 * Value shape checks
 */
static bool value_matches(const EvalValue *v, const Shape *s) {
  if (!v || !s) return false;
  if (s->et == ET_TUPLE) {
    if (v->ntuple != s->ntuple || v->data) return false;
    for (int k = 0; k < s->ntuple; k++)
      if (!value_matches(v->tuple[k], s->tuple[k])) return false;
    return true;
  }
  if (s->et == ET_TOKEN || s->et == ET_OPAQUE) return !v->data && !v->ntuple;
  if (v->ntuple || !v->data) return false;
  int64_t n = ev_elems(s);
  return n >= 0 && v->nbytes == n * et_bytes(s->et);
}

/*
 * Literals <-> values
 */
EvalValue *ev_from_literal(Eval *ev, const Literal *l, const Shape *s) {
  if (s->et == ET_TUPLE) {
    if (l->ntuple != s->ntuple) {
      ev_fail(ev, NULL, EVAL_ERR_INPUT, "tuple literal has %d elements, want %d",
              l->ntuple, s->ntuple);
      return NULL;
    }
    EvalValue **el = xcalloc((size_t)s->ntuple + 1, sizeof *el);
    for (int k = 0; k < s->ntuple; k++) {
      el[k] = ev_from_literal(ev, l->tuple[k], s->tuple[k]);
      if (!el[k]) {
        for (int j = 0; j < k; j++) ev_unref(ev, el[j]);
        free(el);
        return NULL;
      }
    }
    EvalValue *t = ev_tuple(ev, s, s->ntuple, el);
    for (int k = 0; k < s->ntuple; k++) ev_unref(ev, el[k]);
    free(el);
    return t;
  }
  if (s->et == ET_TOKEN || s->et == ET_OPAQUE) return ev_token(ev, s);
  if (!l->shape || l->shape->et != s->et || ev_elems(l->shape) != ev_elems(s)) {
    ev_fail(ev, NULL, EVAL_ERR_INPUT, "literal does not match shape");
    return NULL;
  }
  if (l->elided) {
    /* {...}: the placeholder XLA's parser fills in (literal.c). */
    EvalValue *v = ev_array_nozero(ev, s);
    if (v) literal_elided_fill(l, v->data);
    return v;
  }
  if (!l->data) {
    ev_fail(ev, NULL, EVAL_ERR_INPUT, "literal has no values");
    return NULL;
  }
  return ev_borrow(ev, s, l->data);
}

Literal *ev_to_literal(Arena *a, const EvalValue *v) {
  if (v->data && v->dsize) return ev_dynamic_to_literal(a, v);
  Literal *l = ARENA_NEW(a, Literal);
  l->shape = shape_clone(a, v->shape);
  if (v->shape->et == ET_TUPLE) {
    l->ntuple = v->ntuple;
    l->tuple = ARENA_ARRAY(a, Literal *, v->ntuple ? v->ntuple : 1);
    for (int k = 0; k < v->ntuple; k++) l->tuple[k] = ev_to_literal(a, v->tuple[k]);
    /* element shapes follow the values */
    for (int k = 0; k < v->ntuple && k < l->shape->ntuple; k++)
      l->shape->tuple[k] = l->tuple[k]->shape;
    return l;
  }
  if (v->data) {
    l->data = arena_alloc(a, (size_t)(v->nbytes ? v->nbytes : 1));
    memcpy(l->data, v->data, (size_t)v->nbytes);
  }
  return l;
}

/*
 * Control flow
 */
static bool pred_value(const EvalValue *v) { return v->data && v->data[0] != 0; }

static EvalValue *eval_while(Eval *ev, const HloInstr *i, EvalValue *init) {
  if (i->ncalled < 2) {
    ev_fail(ev, i, EVAL_ERR_INVALID, "while needs a condition and a body");
    return NULL;
  }
  const HloComp *cond = i->called[0], *body = i->called[1];
  EvalValue *state = ev_ref(init);
  for (;;) {
    if (!ev_check_time(ev, i)) { ev_unref(ev, state); return NULL; }
    EvalValue *p = ev_call(ev, cond, 1, &state);
    if (!p) { ev_unref(ev, state); return NULL; }
    if (!p->data || p->nbytes < 1) {
      ev_unref(ev, p);
      ev_unref(ev, state);
      ev_fail(ev, i, EVAL_ERR_INVALID, "while condition is not a pred");
      return NULL;
    }
    bool go = pred_value(p);
    ev_unref(ev, p);
    if (!go) return state;
    EvalValue *next = ev_call_consume(ev, body, 1, &state);
    if (!next) return NULL;
    state = next;
  }
}

static EvalValue *eval_conditional(Eval *ev, const HloInstr *i,
                                   EvalValue *const *a) {
  const Shape *ps = i->ops[0]->shape;
  int nb = i->ncalled;
  if (nb < 1 || i->nops != nb + 1) {
    ev_fail(ev, i, EVAL_ERR_INVALID, "conditional with %d branches and %d operands",
            nb, i->nops);
    return NULL;
  }
  int b;
  if (ps->et == ET_PRED) {
    if (nb != 2) {
      ev_fail(ev, i, EVAL_ERR_INVALID, "pred conditional needs two branches");
      return NULL;
    }
    b = pred_value(a[0]) ? 0 : 1;
  } else {
    int64_t k = ev_get_s64(ps->et, a[0]->data);
    b = (k < 0 || k >= nb) ? nb - 1 : (int)k;
  }
  return ev_call(ev, i->called[b], 1, &a[b + 1]);
}

/* async-start: ((operands...), result, context...) */
static EvalValue *eval_async_start(Eval *ev, const HloInstr *i,
                                   EvalValue *const *a) {
  const Shape *s = i->shape;
  if (i->ncalled < 1 || s->et != ET_TUPLE || s->ntuple < 2) {
    ev_fail(ev, i, EVAL_ERR_INVALID, "async-start without a computation or tuple shape");
    return NULL;
  }
  EvalValue *res = ev_call(ev, i->called[0], i->nops, a);
  if (!res) return NULL;
  EvalValue **el = xcalloc((size_t)s->ntuple, sizeof *el);
  bool ok = true;
  el[0] = ev_tuple(ev, s->tuple[0], i->nops, a);
  el[1] = res;
  for (int k = 2; k < s->ntuple && ok; k++) {
    el[k] = shape_is_array(s->tuple[k]) ? ev_array(ev, s->tuple[k])
                                        : ev_token(ev, s->tuple[k]);
    ok = el[k] != NULL;
  }
  EvalValue *t = ok ? ev_tuple(ev, s, s->ntuple, el) : NULL;
  for (int k = 0; k < s->ntuple; k++) ev_unref(ev, el[k]);
  free(el);
  return t;
}

/* copy-start: (destination, source, context) */
static EvalValue *eval_copy_start(Eval *ev, const HloInstr *i, EvalValue *a) {
  const Shape *s = i->shape;
  if (s->et != ET_TUPLE || s->ntuple < 2) return ev_ref(a);
  EvalValue **el = xcalloc((size_t)s->ntuple, sizeof *el);
  bool ok = true;
  for (int k = 0; k < s->ntuple; k++) {
    el[k] = k < 2 ? ev_ref(a) : shape_is_array(s->tuple[k]) ? ev_array(ev, s->tuple[k])
                                                           : ev_token(ev, s->tuple[k]);
    if (!el[k]) ok = false;
  }
  EvalValue *t = ok ? ev_tuple(ev, s, s->ntuple, el) : NULL;
  for (int k = 0; k < s->ntuple; k++) ev_unref(ev, el[k]);
  free(el);
  return t;
}

static EvalValue *tuple_elem(Eval *ev, const HloInstr *i, EvalValue *t,
                             int64_t k) {
  if (k < 0 || k >= t->ntuple) {
    ev_fail(ev, i, EVAL_ERR_INVALID, "tuple index %lld out of range",
            (long long)k);
    return NULL;
  }
  return ev_ref(t->tuple[k]);
}

static EvalValue *scalar_u32(Eval *ev, const HloInstr *i, int64_t v) {
  EvalValue *r = ev_array(ev, i->shape);
  if (r && r->nbytes >= et_bytes(i->shape->et)) ev_set_s64(i->shape->et, r->data, v);
  return r;
}

/*
 * The dispatcher
 */
static EvalValue *eval_instr(Eval *ev, const HloInstr *i, EvalValue *const *a) {
  int arity = hlo_op_arity(i->op);
  if (arity >= 0 && i->nops != arity &&
      !(i->op == HLO_RNG_BIT_GENERATOR || i->op == HLO_GATHER)) {
    ev_fail(ev, i, EVAL_ERR_INVALID, "%d operands, want %d", i->nops, arity);
    return NULL;
  }
  for (int k = 0; k < i->nops; k++)
    if (ev_is_dynamic(a[k])) {
      bool handled;
      EvalValue *r = eval_dynamic_operands(ev, i, a, &handled);
      if (handled) return r;
      break;
    }
  if (ev_is_elementwise_op(i->op)) return eval_elementwise(ev, i, a);
  if (ev_is_collective_op(i->op)) return eval_collective(ev, i, a);
  switch (i->op) {
  case HLO_CONSTANT:
    if (!i->literal) {
      ev_fail(ev, i, EVAL_ERR_INVALID, "constant without a literal");
      return NULL;
    }
    return ev_from_literal(ev, i->literal, i->shape);
  case HLO_TUPLE:
    return ev_tuple(ev, i->shape, i->nops, a);
  case HLO_GET_TUPLE_ELEMENT:
    return tuple_elem(ev, i, a[0], i->tuple_index);
  case HLO_CALL:
  case HLO_FUSION:
    if (i->ncalled < 1) break;
    return ev_call(ev, i->called[0], i->nops, a);
  case HLO_WHILE:
    return eval_while(ev, i, a[0]);
  case HLO_CONDITIONAL:
    if (i->nops < 1) break;
    return eval_conditional(ev, i, a);
  case HLO_COPY:
  case HLO_OPTIMIZATION_BARRIER:
  case HLO_DOMAIN:
  case HLO_ASYNC_UPDATE:
  case HLO_ALL_REDUCE_DONE:
  case HLO_COPY_DONE:
    if (i->op == HLO_COPY_DONE && a[0]->ntuple >= 1) return ev_ref(a[0]->tuple[0]);
    if (i->op == HLO_ALL_REDUCE_DONE && i->ops[0]->nops == 1 && a[0]->ntuple == 2)
      return ev_ref(a[0]->tuple[1]); /* the old (operand, result) start */
    if (i->op == HLO_ASYNC_UPDATE && i->nops != 1) break;
    return ev_ref(a[0]);
  case HLO_ADD_DEPENDENCY:
    return ev_ref(a[0]);
  case HLO_COPY_START:
    return eval_copy_start(ev, i, a[0]);
  case HLO_ASYNC_START:
    return eval_async_start(ev, i, a);
  case HLO_ASYNC_DONE:
    return tuple_elem(ev, i, a[0], 1);
  case HLO_AFTER_ALL:
    return ev_token(ev, i->shape);
  case HLO_REPLICA_ID:
    return scalar_u32(ev, i, ev->o.replica_id);
  case HLO_PARTITION_ID:
    return scalar_u32(ev, i, ev->o.partition_id);
  case HLO_GET_DIMENSION_SIZE: return eval_get_dimension_size(ev, i, a);
  case HLO_SET_DIMENSION_SIZE: return eval_set_dimension_size(ev, i, a);
  case HLO_DYNAMIC_RESHAPE: return eval_dynamic_reshape(ev, i, a);
  case HLO_RAGGED_ALL_TO_ALL: return eval_ragged_all_to_all(ev, i, a);
  case HLO_SCALED_DOT: return eval_scaled_dot(ev, i, a);
  case HLO_IOTA: return eval_iota(ev, i);
  case HLO_BROADCAST: return eval_broadcast(ev, i, a);
  case HLO_RESHAPE: return eval_reshape(ev, i, a);
  case HLO_BITCAST: return eval_bitcast(ev, i, a);
  case HLO_TRANSPOSE: return eval_transpose(ev, i, a);
  case HLO_SLICE: return eval_slice(ev, i, a);
  case HLO_DYNAMIC_SLICE: return eval_dynamic_slice(ev, i, a);
  case HLO_DYNAMIC_UPDATE_SLICE: return eval_dynamic_update_slice(ev, i, a);
  case HLO_PAD: return eval_pad(ev, i, a);
  case HLO_CONCATENATE: return eval_concatenate(ev, i, a);
  case HLO_REVERSE: return eval_reverse(ev, i, a);
  case HLO_REDUCE: return eval_reduce(ev, i, a);
  case HLO_REDUCE_WINDOW: return eval_reduce_window(ev, i, a);
  case HLO_SELECT_AND_SCATTER: return eval_select_and_scatter(ev, i, a);
  case HLO_MAP: return eval_map(ev, i, a);
  case HLO_DOT: return eval_dot(ev, i, a);
  case HLO_CONVOLUTION: return eval_convolution(ev, i, a);
  case HLO_RAGGED_DOT: return eval_ragged_dot(ev, i, a);
  case HLO_SCAN: return eval_scan(ev, i, a);
  case HLO_GATHER: return eval_gather(ev, i, a);
  case HLO_SCATTER: return eval_scatter(ev, i, a);
  case HLO_SORT: return eval_sort(ev, i, a);
  case HLO_TOPK: return eval_topk(ev, i, a);
  case HLO_RNG: return eval_rng(ev, i, a);
  case HLO_RNG_BIT_GENERATOR: return eval_rng_bit_generator(ev, i, a);
  case HLO_CHOLESKY: return eval_cholesky(ev, i, a);
  case HLO_TRIANGULAR_SOLVE: return eval_triangular_solve(ev, i, a);
  case HLO_FFT: return eval_fft(ev, i, a);
  case HLO_CUSTOM_CALL: return eval_custom_call(ev, i, a);
  case HLO_BATCH_NORM_INFERENCE:
  case HLO_BATCH_NORM_TRAINING:
  case HLO_BATCH_NORM_GRAD: return eval_batch_norm(ev, i, a);
  case HLO_RNG_GET_AND_UPDATE_STATE: return eval_rng_get_and_update_state(ev, i);
  default: {
    char what[64];
    snprintf(what, sizeof what, "%s", hlo_op_name(i->op));
    ev_unsupported(ev, i, what);
    return NULL;
  }
  }
  ev_fail(ev, i, EVAL_ERR_INVALID, "malformed instruction");
  return NULL;
}

static EvalValue *call_impl(Eval *ev, const HloComp *c, int nargs,
                            EvalValue *const *args, bool consume);

EvalValue *ev_call(Eval *ev, const HloComp *c, int nargs,
                   EvalValue *const *args) {
  return call_impl(ev, c, nargs, args, false);
}

EvalValue *ev_call_consume(Eval *ev, const HloComp *c, int nargs,
                           EvalValue *const *args) {
  return call_impl(ev, c, nargs, args, true);
}

EvalValue *ev_steal(Eval *ev, EvalValue *const *a, int k, const Shape *s) {
  if (k >= 64 || !(ev->steal & ((uint64_t)1 << k))) return NULL;
  EvalValue *v = a[k];
  if (!v || v->refs != 1 || v->owner || v->borrowed || !v->data || v->ntuple ||
      !shape_is_array(s))
    return NULL;
  int64_t n = ev_elems(s);
  if (n < 0 || n * et_bytes(s->et) != v->nbytes) return NULL;
  ev->steal &= ~((uint64_t)1 << k);
  v->shape = s;   /* nobody else holds v: it becomes the result */
  return ev_ref(v);
}

static EvalValue *call_impl(Eval *ev, const HloComp *c, int nargs,
                            EvalValue *const *args, bool consume) {
  /* consumed arguments are released on every path */
  Plan *p = NULL;
  if (!c) {
    ev_fail(ev, NULL, EVAL_ERR_INVALID, "call of a missing computation");
  } else if (ev->depth >= MAX_CALL_DEPTH) {
    ev_fail(ev, NULL, EVAL_ERR_INVALID, "calls nested deeper than %d (recursion?)",
            MAX_CALL_DEPTH);
  } else if (nargs != c->nparams) {
    ev_fail(ev, NULL, EVAL_ERR_INVALID, "computation '%s' takes %d parameters, given %d",
            c->name, c->nparams, nargs);
  } else {
    p = plan_get(ev, c);
  }
  if (!p) {
    if (consume)
      for (int k = 0; k < nargs; k++) ev_unref(ev, args[k]);
    return NULL;
  }
  /* parameters never evaluated (unreachable from the root) */
  bool *taken = consume ? xcalloc((size_t)nargs + 1, sizeof *taken) : NULL;
  bool keeping = p->any_keep && !p->no_keep && ev->depth > 0, warm = keeping && p->warm;
  ev->depth++;
  EvalValue **vals = xcalloc((size_t)p->n, sizeof *vals);
  int *left = xmalloc((size_t)p->n * sizeof *left);
  memcpy(left, p->uses, (size_t)p->n * sizeof *left);
  EvalValue *opv[8];
  EvalValue *result = NULL;
  bool ok = true;
  for (int s = 0; s < p->n && ok; s++) {
    const HloInstr *i = p->order[s];
    EvalValue *v;
    if (warm && p->inv[s] && !p->keep[s])
      continue;   /* only invariant slots read it, and they are skipped */
    if (warm && p->keep[s]) {
      v = ev_ref(p->kept[s]);
    } else if (i->op == HLO_PARAMETER) {
      if (i->param_number < 0 || i->param_number >= nargs) {
        ev_fail(ev, i, EVAL_ERR_INVALID, "parameter number out of range");
        ok = false;
        break;
      }
      if (consume && !taken[i->param_number]) {
        v = args[i->param_number];
        taken[i->param_number] = true;
      } else {
        v = ev_ref(args[i->param_number]);
      }
    } else {
      if (!ev_check_time(ev, i)) { ok = false; break; }
      EvalValue **a = i->nops <= 8 ? opv : xcalloc((size_t)i->nops, sizeof *a);
      ev->steal = 0;
      for (int k = 0; k < i->nops; k++) {
        int o = p->opslot[s][k];
        a[k] = vals[o];
        if (k < 64 && left[o] == 1) ev->steal |= (uint64_t)1 << k;
      }
      v = eval_instr(ev, i, a);
      ev->steal = 0;
      if (a != opv) free(a);
    }
    if (!v) { ok = false; break; }
    if (!value_matches(v, i->shape)) {
      ev_unref(ev, v);
      ev_fail(ev, i, EVAL_ERR_INVALID, i->op == HLO_PARAMETER
                  ? "argument does not match the parameter's shape"
                  : "value does not match the instruction's shape");
      ok = false;
      break;
    }
    vals[s] = v;
    if (keeping && !warm && p->keep[s]) {
      ev_unref(ev, p->kept[s]);
      p->kept[s] = ev_ref(v);
      p->kept_bytes += value_bytes(v);
      if (p->kept_bytes > PLAN_CACHE_BYTES) {
        plan_drop_kept(ev, p);
        p->no_keep = true;
        keeping = false;
      }
    }
    for (int k = 0; k < i->nops; k++) {
      int o = p->opslot[s][k];
      if (--left[o] == 0) {
        ev_unref(ev, vals[o]);
        vals[o] = NULL;
      }
    }
  }
  if (ok) {
    result = vals[p->root];
    vals[p->root] = NULL;
    if (keeping && !warm) p->warm = true;
  } else if (keeping && !warm) {
    plan_drop_kept(ev, p);
  }
  for (int s = 0; s < p->n; s++) ev_unref(ev, vals[s]);
  if (consume) {
    for (int k = 0; k < nargs; k++)
      if (!taken[k]) ev_unref(ev, args[k]);
    free(taken);
  }
  free(vals);
  free(left);
  ev->depth--;
  return result;
}

/*
 * Entry points
 */
static bool literal_compatible(const Literal *l, const Shape *s) {
  if (!l || !l->shape) return false;
  if (s->et == ET_TUPLE) {
    if (l->ntuple != s->ntuple) return false;
    for (int k = 0; k < s->ntuple; k++)
      if (!literal_compatible(l->tuple[k], s->tuple[k])) return false;
    return true;
  }
  if (s->et == ET_TOKEN) return true;
  if (l->shape->et != s->et || l->shape->rank != s->rank) return false;
  for (int k = 0; k < s->rank; k++)
    if (l->shape->dims[k] != s->dims[k]) return false;
  return true;
}

bool eval_computation(const HloModule *m, const HloComp *c, int nargs,
                      Literal *const *args, Arena *out, const EvalOptions *o,
                      Literal **result, Diag *d, EvalStatus *st) {
  EvalCtx *ctx = xcalloc(1, sizeof *ctx);
  Eval *ev = &ctx->ev;
  EvalStatus dummy;
  if (!st) st = &dummy;
  memset(st, 0, sizeof *st);
  ev->m = m;
  if (o) ev->o = *o;
  else eval_options_default(&ev->o);
  ev->d = d;
  ev->st = st;
  ev->start_time = ev_now();
  ev->nrng_order = -1;
  *result = NULL;
  bool ok = true;
  if (!c) {
    ok = ev_fail(ev, NULL, EVAL_ERR_INVALID, "module has no entry computation");
  } else if (nargs != c->nparams) {
    ok = ev_fail(ev, NULL, EVAL_ERR_INPUT, "%d arguments given, the computation takes %d",
                 nargs, c->nparams);
  }
  EvalValue **vals = xcalloc((size_t)nargs + 1, sizeof *vals);
  for (int k = 0; ok && k < nargs; k++) {
    const Shape *ps = c->params[k] ? c->params[k]->shape : NULL;
    if (!ps) {
      ok = ev_fail(ev, NULL, EVAL_ERR_INVALID, "parameter %d is missing", k);
      break;
    }
    if (!literal_compatible(args[k], ps)) {
      char *want = shape_to_string(ps, false);
      char *got = args[k] && args[k]->shape ? shape_to_string(args[k]->shape, false)
                                            : xstrdup("nothing");
      ok = ev_fail(ev, NULL, EVAL_ERR_INPUT, "argument %d is %s, parameter %d wants %s",
                   k, got, k, want);
      free(want);
      free(got);
      break;
    }
    vals[k] = ev_from_literal(ev, args[k], ps);
    if (!vals[k]) ok = false;
  }
  if (ok) {
    EvalValue *r = ev_call(ev, c, nargs, vals);
    if (r) {
      *result = ev_to_literal(out, r);
      ev_unref(ev, r);
    } else {
      ok = false;
    }
  }
  for (int k = 0; k < nargs; k++) ev_unref(ev, vals[k]);
  free(vals);
  for (int k = 0; k < ctx->plans.all.len; k++) {
    plan_drop_kept(ev, ctx->plans.all.data[k]);
    plan_free(ctx->plans.all.data[k]);
  }
  vec_free(&ctx->plans.all);
  hashmap_free(&ctx->plans.by_name);
  ev_rng_free(ev);
  thread_pool_free(ev->pool);
  st->peak_bytes = ev->peak_bytes;
  if (ok) st->kind = EVAL_OK;
  else if (st->kind == EVAL_OK) st->kind = EVAL_ERR_INVALID;
  free(ctx);
  return ok;
}

bool eval_module(const HloModule *m, int nargs, Literal *const *args,
                 Arena *out, const EvalOptions *o, Literal **result, Diag *d,
                 EvalStatus *st) {
  return eval_computation(m, m ? m->entry : NULL, nargs, args, out, o, result,
                          d, st);
}
