/*
 * priority_fusion.c - "priority-fusion" (XLA's PriorityFusion, without the
 * GPU cost model): producer-consumer fusion into loop fusions (kind=kLoop)
 * and input fusions (kind=kInput, a reduce at the root).
 *
 * A producer is fused into all of its consumers or into none.  Producers are
 * visited from the root of a computation towards its parameters (the
 * reverse of a post order), so every consumer has already made its own
 * choice: when a producer is fusible and every user can take it, each user
 * that is not yet in a fusion becomes the root of a new one, and the
 * producer joins the fusion of every user.  With users in several fusions
 * the producer is duplicated, one copy per fusion; only cheap producers are
 * (constants, iota, broadcast, reshape, bitcast, convert, slice and cheap
 * elementwise ops) and at most MAX_DUPLICATES times (any number of times
 * for a broadcast of a scalar, an iota or a one-element constant).  An
 * expensive producer
 * of more than MAX_RECOMPUTED_ELEMENTS elements is not fused into a
 * broadcast that would recompute each of its elements many times.
 *
 * Fusible producers: elementwise ops, broadcast, reshape, bitcast,
 * transpose, slice, concatenate, pad, iota, constants with at most
 * MAX_CONST_ELEMENTS elements, dynamic-slice, reverse, gather.  Roots may
 * also be a reduce (kInput) or a dynamic-update-slice (whose updated operand
 * stays outside, for the in-place emitter).  A reduce is never fused into a
 * consumer; dot, convolution, sort, custom-call, rng, scatter, control flow
 * and collectives stay alone.  Each fusion has one output.
 *
 * Groups are decided first and built at the end of each computation: a
 * group's members other than its root are used only inside the group, so a
 * fusion never creates a cycle.  The fused computations are named
 * fused_computation, fused_computation.N, their parameters param_K.N, the
 * fusion instructions after their kind and root ("loop_add_fusion",
 * "input_reduce_fusion"), as XLA's RenameFusions does.
 *
 * Runs in the entry computation and the computations it reaches through
 * while, conditional and call; never inside fusions or the scalar
 * computations of reduce, sort and the like.  Linear in the size of the
 * module.
 */
#include "passes.h"

#include <stdlib.h>
#include <string.h>

#include "../lib/hlo/ir_edit.h"
#include "fusion_util.h"

enum {
  MAX_DUPLICATES = 8,             /* fusions one producer may be copied into */
  MAX_CONST_ELEMENTS = 64,        /* larger constants stay unfused */
  MAX_FUSION_SIZE = 256,          /* instructions per fusion */
  MAX_FUSION_OPERANDS = 96,       /* estimated operands per fusion */
  MAX_RECOMPUTED_ELEMENTS = 1024, /* expensive producers broadcast into a
                                     consumer: larger ones stay apart */
};

typedef struct Group {
  HloInstr *root;
  int size;                       /* instructions */
  int operands;                   /* upper bound on the fusion's operands */
} Group;

typedef struct Fuser {
  IrEdit *e;
  HloModule *m;
  Arena *a;
  int cap;
  int *group;                     /* by id: group index, -1 none */
  uint32_t *mark;                 /* by id: generation stamps */
  int *slot;                      /* by id: parameter number / scratch */
  HloInstr **clone_of;            /* by id: the member's clone */
  uint32_t gen;
  Vec(Group) groups;
  bool named_first;               /* "fused_computation" is taken */
} Fuser;

static void ensure_ids(Fuser *f, int id) {
  if (id < f->cap)
    return;
  int cap = f->cap ? f->cap : 256;
  while (cap <= id)
    cap *= 2;
  f->group = xreallocarray(f->group, (size_t)cap, sizeof *f->group);
  f->mark = xreallocarray(f->mark, (size_t)cap, sizeof *f->mark);
  f->slot = xreallocarray(f->slot, (size_t)cap, sizeof *f->slot);
  f->clone_of = xreallocarray(f->clone_of, (size_t)cap, sizeof *f->clone_of);
  for (int k = f->cap; k < cap; k++) {
    f->group[k] = -1;
    f->mark[k] = 0;
    f->slot[k] = 0;
    f->clone_of[k] = NULL;
  }
  f->cap = cap;
}

static int group_of(Fuser *f, const HloInstr *i) {
  return i->id < f->cap ? f->group[i->id] : -1;
}

static void set_group(Fuser *f, const HloInstr *i, int g) {
  ensure_ids(f, i->id);
  f->group[i->id] = g;
}

/* Ops that only move or recompute elements cheaply. */
static bool is_cheap(const HloInstr *i) {
  switch (i->op) {
  case HLO_CONSTANT: case HLO_IOTA: case HLO_BROADCAST: case HLO_RESHAPE:
  case HLO_BITCAST: case HLO_CONVERT: case HLO_SLICE: case HLO_COPY:
  case HLO_ADD: case HLO_SUBTRACT: case HLO_MULTIPLY: case HLO_NEGATE:
  case HLO_ABS: case HLO_MAXIMUM: case HLO_MINIMUM: case HLO_COMPARE:
  case HLO_SELECT: case HLO_CLAMP: case HLO_AND: case HLO_OR: case HLO_XOR:
  case HLO_NOT: case HLO_SIGN: case HLO_BITCAST_CONVERT:
  case HLO_SHIFT_LEFT: case HLO_SHIFT_RIGHT_ARITHMETIC:
  case HLO_SHIFT_RIGHT_LOGICAL: case HLO_REAL: case HLO_IMAG:
    return true;
  default:
    return false;
  }
}

/* A producer that costs nothing to recompute in each consumer (a
 * broadcast of a scalar, an iota, a one-element constant): duplicated into
 * any number of fusions, as XLA does, instead of being materialized for
 * the whole program (GELU's constants broadcast to every layer's shape). */
static bool trivial(const HloInstr *i) {
  return (i->op == HLO_BROADCAST && i->nops == 1 &&
          shape_is_scalar(i->ops[0]->shape)) ||
         i->op == HLO_IOTA ||
         (i->op == HLO_CONSTANT && shape_elements(i->shape) == 1);
}

static bool plain_array(const HloInstr *i) {
  return shape_is_array(i->shape) && !shape_is_dynamic(i->shape);
}

/* An op that may be fused into a consumer. */
static bool fusible_producer(Fuser *f, const HloInstr *i) {
  if (!plain_array(i) || ir_has_side_effect(i) ||
      ir_has_control_deps(f->e, i) || ir_is_root(i))
    return false;
  if (hlo_op_is_elementwise(i->op))
    return i->op != HLO_STOCHASTIC_CONVERT;
  switch (i->op) {
  case HLO_BROADCAST: case HLO_RESHAPE: case HLO_BITCAST: case HLO_TRANSPOSE:
  case HLO_SLICE: case HLO_CONCATENATE: case HLO_PAD: case HLO_IOTA:
  case HLO_DYNAMIC_SLICE: case HLO_REVERSE: case HLO_GATHER:
    return true;
  case HLO_CONSTANT: {
    int64_t n = shape_elements(i->shape);
    return n >= 0 && n <= MAX_CONST_ELEMENTS;
  }
  default:
    return false;
  }
}

/* An op that may be the root of a new fusion. */
static bool fusible_root(Fuser *f, const HloInstr *i) {
  if (ir_has_side_effect(i) || ir_has_control_deps(f->e, i) ||
      shape_is_dynamic(i->shape))
    return false;
  if (i->op == HLO_REDUCE) {
    for (int k = 0; k < i->nops; k++)
      if (!plain_array(i->ops[k]))
        return false;
    return i->ncalled == 1;
  }
  if (!plain_array(i) || i->op == HLO_CONSTANT)
    return false;
  if (i->op == HLO_DYNAMIC_UPDATE_SLICE)
    return true;
  if (hlo_op_is_elementwise(i->op))
    return i->op != HLO_STOCHASTIC_CONVERT;
  switch (i->op) {
  case HLO_BROADCAST: case HLO_RESHAPE: case HLO_BITCAST: case HLO_TRANSPOSE:
  case HLO_SLICE: case HLO_CONCATENATE: case HLO_PAD: case HLO_IOTA:
  case HLO_DYNAMIC_SLICE: case HLO_REVERSE: case HLO_GATHER:
    return true;
  default:
    return false;
  }
}

/* Whether consumer u (in group g, or a new root when g < 0) can take p. */
static bool can_take(Fuser *f, const HloInstr *p, const HloInstr *u, int g) {
  if (u->op == HLO_DYNAMIC_UPDATE_SLICE && u->ops[0] == p)
    return false;             /* the updated buffer stays a parameter */
  if (!is_cheap(p) && u->op == HLO_BROADCAST &&
      shape_elements(p->shape) > MAX_RECOMPUTED_ELEMENTS &&
      shape_elements(u->shape) > shape_elements(p->shape))
    return false;             /* would recompute a large p many times */
  int size = g >= 0 ? f->groups.data[g].size : 1;
  int ops = g >= 0 ? f->groups.data[g].operands : u->nops;
  if (size + 1 > MAX_FUSION_SIZE || ops + p->nops - 1 > MAX_FUSION_OPERANDS)
    return false;
  return g >= 0 || fusible_root(f, u);
}

static int new_group(Fuser *f, HloInstr *root) {
  Group gr = {root, 1, root->nops};
  vec_push(&f->groups, gr);
  int g = f->groups.len - 1;
  set_group(f, root, g);
  return g;
}

/* Fuses p into all its users when it can; returns whether it did. */
static bool try_fuse(Fuser *f, HloComp *c, HloInstr *p) {
  if (ir_removed(p) || !fusible_producer(f, p))
    return false;
  HloInstr **uv;
  int nu = ir_users(f->e, p, &uv);
  if (nu == 0)
    return false;
  HloInstr **users = xmalloc(sizeof *users * (size_t)nu);
  memcpy(users, uv, sizeof *users * (size_t)nu);
  /* Distinct groups among the users (a user without one counts alone). */
  int *ug = xmalloc(sizeof *ug * (size_t)nu);
  int ndistinct = 0;
  bool ok = true;
  f->gen++;
  for (int k = 0; k < nu && ok; k++) {
    HloInstr *u = users[k];
    int g = group_of(f, u);
    ug[k] = g;
    ok = u->parent == c && can_take(f, p, u, g);
    if (g < 0) {
      ndistinct++;
    } else {
      HloInstr *r = f->groups.data[g].root;
      ensure_ids(f, r->id);
      if (f->mark[r->id] != f->gen) {
        f->mark[r->id] = f->gen;
        ndistinct++;
      }
    }
  }
  if (ok && ndistinct > 1 && (!is_cheap(p) ||
                              (ndistinct > MAX_DUPLICATES && !trivial(p))))
    ok = false;
  if (!ok) {
    free(users);
    free(ug);
    return false;
  }
  for (int k = 0; k < nu; k++)
    if (ug[k] < 0)
      ug[k] = new_group(f, users[k]);
  /* One copy of p per distinct group, in the order of the users. */
  bool first = true;
  for (int k = 0; k < nu; k++) {
    int g = ug[k];
    if (g < 0)
      continue;
    HloInstr *copy = p;
    if (!first)
      copy = ir_clone(f->e, c, p, p->shape, p->nops, p->ops);
    first = false;
    set_group(f, copy, g);
    Group *gr = &f->groups.data[g];
    gr->size++;
    gr->operands += p->nops - 1;
    for (int j = k; j < nu; j++) {
      if (ug[j] != g)
        continue;
      HloInstr *u = users[j];
      if (copy != p)
        for (int s = 0; s < u->nops; s++)
          if (u->ops[s] == p)
            ir_set_operand(f->e, u, s, copy);
      if (j > k)
        ug[j] = -1;
    }
  }
  free(users);
  free(ug);
  return true;
}

static const char *fusion_base_name(Fuser *f, const HloInstr *root,
                                    FusionKind kind) {
  StrBuf b;
  sb_init(&b);
  sb_printf(&b, "%s_", kind == FUSION_INPUT ? "input" : "loop");
  for (const char *s = hlo_op_name(root->op); *s; s++)
    sb_printf(&b, "%c", *s == '-' ? '_' : *s);
  sb_printf(&b, "_fusion");
  char *name = arena_strdup(f->a, b.s);
  sb_free(&b);
  return name;
}

/* Builds the fusion of group g. */
static void build_group(Fuser *f, HloComp *c, int g) {
  HloInstr *root = f->groups.data[g].root;
  /* Members in post order (iterative DFS over operands in the group). */
  Vec(HloInstr *) members = {0}, stack = {0}, externals = {0};
  Vec(int) next = {0};
  f->gen++;
  uint32_t visit = f->gen;
  ensure_ids(f, root->id);
  f->mark[root->id] = visit;
  vec_push(&stack, root);
  vec_push(&next, 0);
  while (stack.len) {
    HloInstr *i = vec_last(&stack);
    int *k = &next.data[next.len - 1];
    if (*k < i->nops) {
      HloInstr *o = i->ops[(*k)++];
      ensure_ids(f, o->id);
      if (f->group[o->id] == g && f->mark[o->id] != visit) {
        f->mark[o->id] = visit;
        vec_push(&stack, o);
        vec_push(&next, 0);
      }
      continue;
    }
    stack.len--;
    next.len--;
    vec_push(&members, i);
  }
  /* External operands in order of first use; their parameter numbers. */
  f->gen++;
  uint32_t ext = f->gen;
  for (int k = 0; k < members.len; k++) {
    HloInstr *i = members.data[k];
    for (int j = 0; j < i->nops; j++) {
      HloInstr *o = i->ops[j];
      ensure_ids(f, o->id);
      if (f->group[o->id] == g || f->mark[o->id] == ext)
        continue;
      f->mark[o->id] = ext;
      f->slot[o->id] = externals.len;
      vec_push(&externals, o);
    }
  }
  HloComp *fc;
  if (!f->named_first) {
    fc = ir_new_comp(f->e, "fused_computation");
    f->named_first = true;
  } else {
    fc = hlo_comp_new(f->m, ir_unique_name(f->e, "fused_computation"));
  }
  fc->execution_thread = c->execution_thread;
  HloInstr **params = ARENA_ARRAY(f->a, HloInstr *,
                                  externals.len > 0 ? externals.len : 1);
  for (int k = 0; k < externals.len; k++) {
    char name[32];
    snprintf(name, sizeof name, "param_%d", k);
    params[k] = ir_add_param(f->e, fc,
                             shape_clone(f->a, externals.data[k]->shape), name);
  }
  HloInstr *opsbuf[16];
  for (int k = 0; k < members.len; k++) {
    HloInstr *i = members.data[k];
    HloInstr **ops = i->nops <= 16 ? opsbuf
                                   : xmalloc(sizeof *ops * (size_t)i->nops);
    for (int j = 0; j < i->nops; j++) {
      HloInstr *o = i->ops[j];
      ops[j] = f->group[o->id] == g ? f->clone_of[o->id] : params[f->slot[o->id]];
    }
    HloInstr *cl = ir_clone(f->e, fc, i, i->shape, i->nops, ops);
    if (ops != opsbuf)
      free(ops);
    ensure_ids(f, i->id);
    f->clone_of[i->id] = cl;
  }
  fc->root = f->clone_of[root->id];
  FusionKind kind = root->op == HLO_REDUCE ? FUSION_INPUT : FUSION_LOOP;
  HloInstr *fu = ir_new(f->e, c, HLO_FUSION, root->shape, externals.len,
                        externals.data);
  fu->name = ir_unique_name(f->e, fusion_base_name(f, root, kind));
  fu->fusion_kind = kind;
  fu->ncalled = 1;
  fu->called = ARENA_ARRAY(f->a, HloComp *, 1);
  fu->called[0] = fc;
  fu->metadata = root->metadata;
  fu->sharding = root->sharding;
  fu->frontend_attrs = root->frontend_attrs;
  fc->fusion_instr = fu;
  ir_replace(f->e, root, fu);
  /* The clones take the names of the instructions they replace. */
  for (int k = 0; k < members.len; k++) {
    HloInstr *i = members.data[k];
    if (ir_removed(i))
      f->clone_of[i->id]->name = i->name;
  }
  vec_free(&members);
  vec_free(&stack);
  vec_free(&next);
  vec_free(&externals);
}

static bool fuse_comp(Fuser *f, HloComp *c) {
  HloInstr **order;
  int n = ir_instr_post_order(c, &order);
  int first_group = f->groups.len;
  for (int k = n - 1; k >= 0; k--)
    try_fuse(f, c, order[k]);
  free(order);
  for (int g = first_group; g < f->groups.len; g++)
    build_group(f, c, g);
  return f->groups.len > first_group;
}

bool pass_priority_fusion(HloModule *m, PassContext *ctx) {
  (void)ctx;
  Fuser f = {0};
  f.e = ir_begin(m);
  f.m = m;
  f.a = m->arena;
  ensure_ids(&f, m->next_id);
  HloComp **comps;
  int n = fusion_control_comps(m, &comps);
  bool changed = false;
  for (int k = 0; k < n; k++)
    changed |= fuse_comp(&f, comps[k]);
  free(comps);
  free(f.group);
  free(f.mark);
  free(f.slot);
  free(f.clone_of);
  vec_free(&f.groups);
  return ir_end(f.e, changed);
}
