/*
 * sharding_propagation.c - "sharding-propagation" (XLA's
 * ShardingPropagation, for the shardings JAX writes): gives every
 * instruction of the entry computation of a module to be partitioned
 * (num_partitions > 1 and shardings in it) a sharding, for
 * spmd-partitioning to follow.
 *
 * Where shardings come from (fixed; never changed):
 *   - sharding= attributes: parameters, the root, Sharding custom-calls
 *     (with_sharding_constraint), and Shardy's xla.sdy.sharding frontend
 *     attributes where there is no sharding= (xla.sdy.FuncResultSharding);
 *   - shard_map: the results of SPMDFullToShardShape and
 *     xla.sdy.GlobalToLocalShape and everything computed from them up to
 *     SPMDShardToFullShape / xla.sdy.LocalToGlobalShape are manual (each
 *     device's own value); the latter's results take the sharding given
 *     there (xla.sdy.out_shardings).  A shard_map over some of the mesh's
 *     axes (xla.sdy.manual_axes) is one over those: its operands are cut
 *     over them, and its body computes each value whole on every device
 *     of the other axes (Shardy's constraints in it, on those axes, are
 *     left out);
 *   - a parameter (the result) with no sharding whose
 *     allow_spmd_sharding_propagation_to_parameters (_to_output) is not
 *     true is replicated, as XLA has it.
 *
 * The rest is filled in rounds until nothing changes: forward (an
 * instruction takes the sharding its operands' give, by the rules of
 * spmd_rules.c), then backward (it takes what its users want of it: the
 * most tiled of their wishes).  An instruction takes a sharding when it has
 * none yet or when the new one refines its old one (more tiles, each
 * inside an old tile): a broadcast of a constant first found replicated
 * becomes tiled like the sum it feeds.  Shardings only grow finer, so the
 * rounds end.  What is left is replicated (tuples: their elements').  The
 * result only has to be good, not optimal: the partitioner computes
 * correct shards from any sharding.
 *
 * A while loop's state keeps the sharding its initial value has: its body
 * and condition are propagated in turn, their parameter (and the body's
 * root) fixed to it.  A partition-id outside a shard_map is each device's
 * own number, computed where it is written (XLA refuses it there).
 */
#include "spmd.h"

#include <stdlib.h>
#include <string.h>

typedef struct Prop {
  Arena *a;                       /* scratch */
  HloModule *m;
  const SdyMeshes *meshes;
  int64_t ndev;
  Shd **sh;                       /* by instruction id */
  bool *fixed;
  Diag *d;
} Prop;

static bool err(Prop *p, const HloInstr *i, const char *what, const char *why) {
  diag_error(p->d, i->loc, "sharding-propagation: %s of '%s': %s", what,
             i->name, why);
  return false;
}

/* The sharding given for i's value (sharding= or Shardy's attribute), in
 * *out (NULL: none). */
static bool given(Prop *p, const HloInstr *i, Shd **out) {
  char why[256];
  *out = NULL;
  if (i->sharding && i->sharding->kind != SHARD_UNKNOWN) {
    if (!shd_from_sharding(p->a, i->sharding, i->shape, p->ndev, out, why,
                           sizeof why))
      return err(p, i, "the sharding", why);
    return true;
  }
  const char *sdy = sdy_attr(i, "xla.sdy.sharding");
  if (!sdy)
    return true;
  if (strncmp(sdy, "#sdy.sharding_per_value", 23) == 0) {
    const Shape *s = i->shape;
    int n = s->et == ET_TUPLE ? s->ntuple : 1;
    Shd **el = ARENA_ARRAY(p->a, Shd *, n);
    for (int k = 0; k < n; k++) {
      const Shape *ls = s->et == ET_TUPLE ? s->tuple[k] : s;
      Tiling *t;
      if (ls->et == ET_TUPLE)
        return err(p, i, "the Shardy sharding", "a nested tuple");
      if (!sdy_tiling_per_value(p->a, p->meshes, sdy, k, ls, p->ndev, &t, why,
                                sizeof why))
        return err(p, i, "the Shardy sharding", why);
      el[k] = shd_array(p->a, t);
    }
    *out = s->et == ET_TUPLE ? shd_tuple(p->a, n, el) : el[0];
    return true;
  }
  if (i->shape->et == ET_TUPLE)
    return true;
  Tiling *t;
  if (!sdy_tiling(p->a, p->meshes, sdy, shape_is_array(i->shape) ? i->shape->rank : 0,
                  p->ndev, &t, why, sizeof why))
    return err(p, i, "the Shardy sharding", why);
  *out = shd_array(p->a, t);
  return true;
}

/* The results of a LocalToGlobalShape: its xla.sdy.out_shardings. */
static bool out_shardings(Prop *p, const HloInstr *i, Shd **out) {
  const char *txt = sdy_attr(i, "xla.sdy.out_shardings");
  char why[256];
  if (!txt)
    return err(p, i, "xla.sdy.LocalToGlobalShape", "it has no "
               "xla.sdy.out_shardings");
  const Shape *s = i->shape;
  int n = s->et == ET_TUPLE ? s->ntuple : 1;
  Shd **el = ARENA_ARRAY(p->a, Shd *, n);
  for (int k = 0; k < n; k++) {
    Tiling *t;
    const Shape *ls = s->et == ET_TUPLE ? s->tuple[k] : s;
    if (!sdy_tiling_per_value(p->a, p->meshes, txt, k, ls, p->ndev, &t, why,
                              sizeof why))
      return err(p, i, "xla.sdy.out_shardings", why);
    el[k] = shd_array(p->a, t);
  }
  *out = s->et == ET_TUPLE ? shd_tuple(p->a, n, el) : el[0];
  return true;
}

static bool allowed(const bool *v, int n, int k) {
  if (n == 0)
    return false;
  return n == 1 ? v[0] : (k < n && v[k]);
}

static Shd *get(Prop *p, const HloInstr *i) { return p->sh[i->id]; }

/* Seeds: what is given, what is manual, parameters and root by default
 * (a loop body's: the loop state's, `params` and `root`). */
static bool seed(Prop *p, HloComp *c, Shd *const *params, Shd *root) {
  HloModule *m = p->m;
  for (int k = 0; k < c->ninstrs; k++) {
    HloInstr *i = c->instrs[k];
    Shd *s;
    SpmdRole role = spmd_role(i);
    char why[256];
    bool manual_in = false;
    for (int j = 0; j < i->nops; j++)
      manual_in |= shd_any_manual(get(p, i->ops[j]));
    if (role == SPMD_ROLE_TO_MANUAL) {
      const char *axes = sdy_attr(i, "xla.sdy.manual_axes");
      if (axes && !sdy_manual_axes_valid(p->meshes, axes, why, sizeof why))
        return err(p, i, "the shard_map", why);
      s = shd_manual(p->a, i->shape, p->ndev);
    } else if (role == SPMD_ROLE_FROM_MANUAL && !i->sharding) {
      if (!out_shardings(p, i, &s))
        return false;
    } else if (role == SPMD_ROLE_SHARDING && manual_in &&
               sdy_attr(i, "xla.sdy.sharding")) {
      /* Shardy's constraint in a shard_map body: over the axes the
       * shard_map leaves to the partitioner (a partly manual one), on
       * every device of which the body computes its values whole */
      s = NULL;
    } else if (!given(p, i, &s)) {
      return false;
    }
    if (!s && manual_in && role != SPMD_ROLE_FROM_MANUAL) {
      if (i->op == HLO_GET_TUPLE_ELEMENT && !get(p, i->ops[0])->t &&
          i->tuple_index < get(p, i->ops[0])->n)
        s = get(p, i->ops[0])->el[i->tuple_index];
      else
        s = shd_manual(p->a, i->shape, p->ndev);
    }
    if (!s && i->op == HLO_PARAMETER && params)
      s = params[i->param_number];
    else if (!s && i->op == HLO_PARAMETER &&
             !allowed(m->spmd_params, m->nspmd_params, (int)i->param_number))
      s = shd_replicated(p->a, i->shape, p->ndev);
    if (!s && i == c->root && root) {
      s = root;
    } else if (!s && i == c->root && c == m->entry) {
      bool any = false;
      for (int j = 0; j < m->nspmd_output; j++)
        any |= m->spmd_output[j];
      if (!any)
        s = shd_replicated(p->a, i->shape, p->ndev);
    }
    if (s) {
      p->sh[i->id] = s;
      p->fixed[i->id] = true;
    }
  }
  return true;
}

static Tiling *array_tiling(Prop *p, const HloInstr *i) {
  Shd *s = get(p, i);
  return s && s->t && shape_is_array(i->shape) ? s->t : NULL;
}

/* The same tiling on every leaf of a tuple of arrays of one rank. */
static Shd *per_leaf(Prop *p, const Shape *s, Tiling *t) {
  if (s->et != ET_TUPLE)
    return shape_is_array(s) && s->rank == t->rank ? shd_array(p->a, t) : NULL;
  Shd **el = ARENA_ARRAY(p->a, Shd *, s->ntuple > 0 ? s->ntuple : 1);
  for (int k = 0; k < s->ntuple; k++)
    if (!(el[k] = per_leaf(p, s->tuple[k], t)))
      return NULL;
  return shd_tuple(p->a, s->ntuple, el);
}

/* Takes s for i when i has none yet, or when s refines what i has (more
 * tiles, each inside one of the old ones): shardings only grow finer, so
 * the rounds end. */
static bool offer(Prop *p, HloInstr *i, Shd *s) {
  Shd *cur = get(p, i);
  if (!s || p->fixed[i->id])
    return false;
  if (cur) {
    if (!cur->t || !s->t || !shape_is_array(i->shape) || s->t->manual ||
        cur->t->manual ||
        tiling_num_tiles(s->t) <= tiling_num_tiles(cur->t) ||
        tiling_reshard_cost(cur->t, s->t, i->shape) != 0)
      return false;
  }
  p->sh[i->id] = s;
  return true;
}

static bool forward(Prop *p, HloComp *c) {
  bool changed = false;
  Tiling *ops[256];
  for (int k = 0; k < c->ninstrs; k++) {
    HloInstr *i = c->instrs[k];
    if (p->fixed[i->id] || (get(p, i) && !get(p, i)->t))
      continue;
    Shd *s = NULL;
    if (i->op == HLO_GET_TUPLE_ELEMENT) {
      Shd *t = get(p, i->ops[0]);
      if (t && !t->t && i->tuple_index < t->n)
        s = t->el[i->tuple_index];
    } else if (i->op == HLO_WHILE) {
      s = get(p, i->ops[0]);      /* the loop state keeps its sharding */
    } else if (i->op == HLO_TUPLE) {
      Shd **el = ARENA_ARRAY(p->a, Shd *, i->nops > 0 ? i->nops : 1);
      bool all = true;
      for (int j = 0; j < i->nops && all; j++)
        all = (el[j] = get(p, i->ops[j])) != NULL;
      if (all)
        s = shd_tuple(p->a, i->nops, el);
    } else if (i->nops <= 256) {
      bool any = false;
      for (int j = 0; j < i->nops; j++)
        any |= (ops[j] = array_tiling(p, i->ops[j])) != NULL;
      Tiling *t = any ? spmd_forward(p->a, i, ops, p->ndev) : NULL;
      if (t)
        s = per_leaf(p, i->shape, t);
    }
    changed |= offer(p, i, s);
  }
  return changed;
}

/* What user u wants of its operand k (an array), or NULL. */
static Tiling *wish(Prop *p, HloInstr *u, int k) {
  Shd *us = get(p, u);
  const Shape *os = u->ops[k]->shape;
  if (!shape_is_array(os))
    return NULL;
  switch (spmd_role(u)) {
  case SPMD_ROLE_SHARDING:
    return us && us->t ? us->t : NULL;
  case SPMD_ROLE_TO_MANUAL: {
    const char *txt = sdy_attr(u, "xla.sdy.in_shardings");
    char why[256];
    Tiling *t;
    if (txt && sdy_tiling_per_value(p->a, p->meshes, txt, k, os, p->ndev, &t,
                                    why, sizeof why))
      return t;
    return NULL;
  }
  case SPMD_ROLE_FROM_MANUAL:
    return NULL;
  default:
    break;
  }
  if (!us)
    return NULL;
  if (u->op == HLO_TUPLE)
    return k < us->n && us->el[k]->t ? us->el[k]->t : NULL;
  if (!us->t) {
    /* a variadic reduce or sort: its first leaf speaks for all */
    const Shd *f = us;
    while (f && !f->t && f->n > 0)
      f = f->el[0];
    if (!f || !f->t || (u->op != HLO_REDUCE && u->op != HLO_SORT &&
                        u->op != HLO_REDUCE_WINDOW))
      return NULL;
    return spmd_backward(p->a, u, k, f->t, p->ndev);
  }
  return spmd_backward(p->a, u, k, us->t, p->ndev);
}

static bool backward(Prop *p, HloComp *c, IrEdit *e) {
  bool changed = false;
  for (int k = c->ninstrs - 1; k >= 0; k--) {
    HloInstr *i = c->instrs[k];
    if (p->fixed[i->id] || !shape_is_array(i->shape))
      continue;
    HloInstr **users;
    int nu = ir_users(e, i, &users);
    Tiling *best = NULL;
    for (int j = 0; j < nu; j++) {
      HloInstr *u = users[j];
      if (u->parent != c)
        continue;
      for (int q = 0; q < u->nops; q++) {
        if (u->ops[q] != i)
          continue;
        Tiling *t = wish(p, u, q);
        if (t && !t->manual && t->rank == i->shape->rank &&
            (!best || tiling_num_tiles(t) > tiling_num_tiles(best)))
          best = t;
      }
    }
    if (best)
      changed |= offer(p, i, shd_array(p->a, best));
  }
  return changed;
}

/* What is left: tuples of their elements, the rest replicated. */
static void fill(Prop *p, HloComp *c) {
  for (int k = 0; k < c->ninstrs; k++) {
    HloInstr *i = c->instrs[k];
    if (get(p, i))
      continue;
    Shd *s = NULL;
    if (i->op == HLO_TUPLE) {
      Shd **el = ARENA_ARRAY(p->a, Shd *, i->nops > 0 ? i->nops : 1);
      for (int j = 0; j < i->nops; j++)
        el[j] = get(p, i->ops[j]);
      s = shd_tuple(p->a, i->nops, el);
    } else if (i->op == HLO_GET_TUPLE_ELEMENT) {
      Shd *t = get(p, i->ops[0]);
      if (!t->t && i->tuple_index < t->n)
        s = t->el[i->tuple_index];
    } else if (i->op == HLO_WHILE) {
      s = get(p, i->ops[0]);
    }
    p->sh[i->id] = s ? s : shd_replicated(p->a, i->shape, p->ndev);
  }
}

/* Propagates through computation c (the entry, or a loop's body or
 * condition with its state's sharding on the parameter and, for a body,
 * the root), then into the loops it runs; writes every sharding. */
static bool propagate(Prop *p, HloComp *c, Shd *const *params, Shd *root,
                      IrEdit *e, bool *changed) {
  if (!seed(p, c, params, root))
    return false;
  for (int round = 0; round < 16; round++) {
    bool f = forward(p, c);
    bool b = backward(p, c, e);
    if (!f && !b)
      break;
  }
  fill(p, c);
  for (int k = 0; k < c->ninstrs; k++) {
    HloInstr *i = c->instrs[k];
    /* (a constraint left out in a shard_map body is manual there) */
    if (!p->fixed[i->id] || !i->sharding ||
        (spmd_role(i) == SPMD_ROLE_SHARDING && shd_any_manual(get(p, i)) &&
         i->sharding->kind != SHARD_MANUAL)) {
      i->sharding = shd_to_sharding(p->m->arena, get(p, i));
      *changed = true;
    }
  }
  /* Loops: their bodies keep the state's sharding from one trip to the
   * next (the partitioner computes a loop on shards as it does the rest). */
  for (int k = 0; k < c->ninstrs; k++) {
    HloInstr *i = c->instrs[k];
    Shd *st = get(p, i);
    if (i->op != HLO_WHILE || i->ncalled != 2 || shd_any_manual(st) ||
        i->called[0]->nparams != 1 || i->called[1]->nparams != 1)
      continue;
    if (!propagate(p, i->called[1], &st, st, e, changed) ||
        !propagate(p, i->called[0], &st, NULL, e, changed))
      return false;
  }
  return true;
}

bool pass_sharding_propagation(HloModule *m, PassContext *ctx) {
  if (!spmd_wanted(m))
    return false;
  if (m->replica_count > 1) {
    diag_error(ctx->diag, m->loc, "sharding-propagation: SPMD partitioning "
               "of a module with replica_count=%lld is not supported (only "
               "partitions)", (long long)m->replica_count);
    return false;
  }
  Prop p = {.a = arena_new(), .m = m, .ndev = m->num_partitions,
            .d = ctx->diag};
  bool ok = (p.meshes = sdy_meshes(p.a, m, ctx->diag)) != NULL;
  p.sh = xcalloc((size_t)m->next_id + 1, sizeof *p.sh);
  p.fixed = xcalloc((size_t)m->next_id + 1, sizeof *p.fixed);
  IrEdit *e = ir_begin(m);
  bool changed = false;
  if (ok)
    ok = propagate(&p, m->entry, NULL, NULL, e, &changed);
  free(p.sh);
  free(p.fixed);
  arena_free(p.a);
  ir_end(e, false);
  return ok && changed;
}
