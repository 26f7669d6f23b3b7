/*
 * spmd_partitioner.c - "spmd-partitioning" (XLA's SpmdPartitioner): turns
 * the entry computation of a global program whose instructions carry
 * shardings (sharding-propagation gives them) into the program each of the
 * module's num_partitions devices runs on its shards, with the collectives
 * that bring shards together.  The result is an ordinary per-device module
 * (like XLA's after-optimizations dumps): parameters of shard shapes that
 * keep their sharding= attributes, partition-id where devices differ,
 * collectives with channel_id and explicit groups of partitions.
 *
 * Instructions are taken in order; each gets a local value and the tiling
 * that value actually has (which may differ from its annotated one: users
 * reshard what they get into what they need, spmd_reshard.c):
 *
 *   parameter            its shard shape
 *   Sharding, xla.sdy.FuncResultSharding   the operand resharded
 *   shard_map            SPMDFullToShardShape / xla.sdy.GlobalToLocalShape:
 *                        the operands resharded to the shard_map's
 *                        in-shardings, whose shards are the body's values;
 *                        the body (inlined or a call) is copied as it is;
 *                        SPMDShardToFullShape / xla.sdy.LocalToGlobalShape:
 *                        the body's values are the shards of the result
 *   dot, convolution     spmd_dot.c's choice, an all-reduce of partial sums
 *                        over tiled contracting dimensions
 *   reduce               tiled reduced dimensions reduced on each device,
 *                        then across devices with an all-reduce
 *   scatter (add)        indices tiled over the batch: each device scatters
 *                        its updates into zeros, an all-reduce adds them up
 *   iota                 the local iota plus the shard's offset
 *   while                the loop on shards: its state tiled as its initial
 *                        value is (sharding-propagation's choice), its body
 *                        and condition partitioned in turn, the body's
 *                        result resharded back to the state's tiling
 *   the ops of spmd_rules.c   operands resharded as the rule says, the op
 *                        on local shapes
 *   anything else        computed whole: its operands replicated (all-
 *                        gathered), its result replicated
 *
 * The root ends in the output sharding.  The module records what the
 * global program looked like for the runtime (xhlo-run takes global inputs
 * and gives global results): frontend attributes
 * xhlo.global_parameter_shapes, xhlo.global_result_shape and
 * xhlo.result_sharding.  The entry computation and the loops it runs are
 * partitioned (the computations other instructions call run whole); only
 * partitions (replica_count 1) are supported.
 */
#include "spmd.h"

#include <stdlib.h>
#include <string.h>

typedef struct Part {
  Spmd s;
  const SdyMeshes *meshes;
  int nold;                       /* ids below this are the global program's */
  HloInstr **local;               /* by old id: the local value */
  Shd **sh;                       /* by old id: its tiling */
  Shape **global;                 /* by old id: the global shape (parameters'
                                     shapes become their shards') */
} Part;

static Arena *scratch(Part *p) { return p->s.a; }

static bool fail(Part *p, const HloInstr *i, const char *fmt, const char *arg) {
  char msg[512];
  snprintf(msg, sizeof msg, fmt, arg);
  diag_error(p->s.d, i->loc, "spmd-partitioning: '%s' (%s): %s", i->name,
             hlo_op_name(i->op), msg);
  return false;
}

/* The sharding propagation gave i (replicated if none). */
static Shd *target(Part *p, const HloInstr *i) {
  Shd *s;
  char why[256];
  if (i->sharding && shd_from_sharding(scratch(p), i->sharding, i->shape,
                                       p->s.ndev, &s, why, sizeof why))
    return s;
  return shd_replicated(scratch(p), i->shape, p->s.ndev);
}

static Tiling *first_leaf(const Shd *s) {
  while (s && !s->t && s->n > 0)
    s = s->el[0];
  return s ? s->t : NULL;
}

/* Shard shape of every leaf. */
static Shape *shard_shape(Part *p, const Shd *s, const Shape *g) {
  Arena *ma = p->s.m->arena;
  if (g->et == ET_TUPLE) {
    Shape **el = ARENA_ARRAY(ma, Shape *, g->ntuple > 0 ? g->ntuple : 1);
    for (int k = 0; k < g->ntuple; k++)
      el[k] = shard_shape(p, s && !s->t && k < s->n ? s->el[k] : NULL,
                          g->tuple[k]);
    return shape_tuple(ma, g->ntuple, el);
  }
  if (!shape_is_array(g) || !s || !s->t)
    return shape_clone(ma, g);
  return tiling_shard_shape(ma, s->t, g);
}

/* Shardy's attributes and shardings do not belong to the local program. */
static void clean(Part *p, HloInstr *n) {
  if (n->op != HLO_PARAMETER)
    n->sharding = NULL;
  KVList *l = n->frontend_attrs;
  if (!l)
    return;
  int keep = 0;
  for (int k = 0; k < l->n; k++)
    keep += strncmp(l->kv[k].key, "xla.sdy.", 8) != 0;
  if (keep == l->n)
    return;
  KVList *c = ARENA_NEW(p->s.m->arena, KVList);
  c->kv = ARENA_ARRAY(p->s.m->arena, KeyValue, keep > 0 ? keep : 1);
  for (int k = 0; k < l->n; k++)
    if (strncmp(l->kv[k].key, "xla.sdy.", 8) != 0)
      c->kv[c->n++] = l->kv[k];
  n->frontend_attrs = c->n ? c : NULL;
}

static HloInstr *clone(Part *p, const HloInstr *i, Shape *shape, int nops,
                       HloInstr *const *ops) {
  HloInstr *n = ir_clone(p->s.e, p->s.c, i, shape, nops, ops);
  clean(p, n);
  return n;
}

static void set(Part *p, const HloInstr *i, HloInstr *v, Shd *s) {
  p->local[i->id] = v;
  p->sh[i->id] = s;
}

/* Operand k of i as a value tiled by want. */
static HloInstr *operand(Part *p, const HloInstr *i, int k, const Shd *want) {
  const HloInstr *o = i->ops[k];
  if (shd_any_manual(p->sh[o->id]) && !shd_any_manual(want)) {
    fail(p, i, "it uses '%s', a value of a shard_map body, outside the body "
         "(only SPMDShardToFullShape or xla.sdy.LocalToGlobalShape take one "
         "out)", o->name);
    return NULL;
  }
  return spmd_reshard_shd(&p->s, p->local[o->id], p->sh[o->id], want,
                          p->global[o->id]);
}

static HloInstr *operand_t(Part *p, const HloInstr *i, int k,
                           const Tiling *want) {
  const Shape *s = p->global[i->ops[k]->id];
  if (!want || !shape_is_array(s))
    return operand(p, i, k, shd_replicated(scratch(p), s, p->s.ndev));
  return operand(p, i, k, shd_array(scratch(p), (Tiling *)want));
}

static Tiling *cur_t(Part *p, const HloInstr *o) {
  Shd *s = p->sh[o->id];
  return s && s->t && shape_is_array(o->shape) ? s->t : NULL;
}

/* Which binary op a reducer computation applies (-1: none of the plain
 * ones). */
static int reducer_op(const HloComp *c) {
  if (!c || c->nparams != 2 || !c->root || c->root->nops != 2)
    return -1;
  const HloInstr *r = c->root;
  bool params = (r->ops[0] == c->params[0] && r->ops[1] == c->params[1]) ||
                (r->ops[0] == c->params[1] && r->ops[1] == c->params[0]);
  return params ? (int)r->op : -1;
}

/*
 * The instructions with rules of their own.
 */

static bool fallback(Part *p, HloInstr *i) {
  HloInstr **ops = ARENA_ARRAY(scratch(p), HloInstr *, i->nops > 0 ? i->nops : 1);
  for (int k = 0; k < i->nops; k++)
    if (!(ops[k] = operand(p, i, k, shd_replicated(scratch(p),
                                                   p->global[i->ops[k]->id],
                                                   p->s.ndev))))
      return false;
  set(p, i, clone(p, i, NULL, i->nops, ops),
      shd_replicated(scratch(p), i->shape, p->s.ndev));
  return true;
}

static bool manual(Part *p, HloInstr *i) {
  HloInstr **ops = ARENA_ARRAY(scratch(p), HloInstr *, i->nops > 0 ? i->nops : 1);
  for (int k = 0; k < i->nops; k++) {
    const HloInstr *o = i->ops[k];
    Shd *want = shd_any_manual(p->sh[o->id])
                    ? p->sh[o->id]
                    : shd_replicated(scratch(p), p->global[o->id], p->s.ndev);
    if (!(ops[k] = operand(p, i, k, want)))
      return false;
  }
  set(p, i, clone(p, i, NULL, i->nops, ops),
      shd_manual(scratch(p), i->shape, p->s.ndev));
  return true;
}

static bool same_dims(const Shape *a, const Shape *b) {
  return shape_compatible(a, b);
}

static bool to_manual(Part *p, HloInstr *i) {
  bool tuple = i->shape->et == ET_TUPLE;
  int n = tuple ? i->shape->ntuple : 1;
  if (i->nops != n)
    return fail(p, i, "%s", "its results do not match its operands");
  const char *in = sdy_attr(i, "xla.sdy.in_shardings");
  HloInstr **el = ARENA_ARRAY(scratch(p), HloInstr *, n);
  for (int k = 0; k < n; k++) {
    const HloInstr *o = i->ops[k];
    const Shape *want_shape = tuple ? i->shape->tuple[k] : i->shape;
    Tiling *t = NULL;
    char why[256];
    if (in) {
      if (!sdy_tiling_per_value(scratch(p), p->meshes, in, k, o->shape,
                                p->s.ndev, &t, why, sizeof why))
        return fail(p, i, "xla.sdy.in_shardings: %s", why);
    } else {
      t = first_leaf(target(p, o));
    }
    if (!(el[k] = operand_t(p, i, k, t)))
      return false;
    if (!same_dims(el[k]->shape, want_shape)) {
      char *a = shape_to_string(el[k]->shape, false);
      snprintf(why, sizeof why, "the shard of operand %d is %s, not the "
               "shard_map's %s", k, a, "local shape");
      free(a);
      return fail(p, i, "%s", why);
    }
  }
  HloInstr *v = tuple ? ir_tuple(p->s.e, p->s.c, n, el) : el[0];
  set(p, i, v, shd_manual(scratch(p), i->shape, p->s.ndev));
  return true;
}

static bool from_manual(Part *p, HloInstr *i, Shd *T) {
  bool tuple = i->shape->et == ET_TUPLE;
  HloInstr *v;
  if (tuple && i->nops == i->shape->ntuple) {
    HloInstr **el = ARENA_ARRAY(scratch(p), HloInstr *, i->nops);
    for (int k = 0; k < i->nops; k++)
      el[k] = p->local[i->ops[k]->id];
    v = ir_tuple(p->s.e, p->s.c, i->nops, el);
  } else if (i->nops == 1) {
    v = p->local[i->ops[0]->id];
  } else {
    return fail(p, i, "%s", "its results do not match its operands");
  }
  Shape *want = shard_shape(p, T, i->shape);
  if (!same_dims(v->shape, want)) {
    char *a = shape_to_string(v->shape, false), *b = shape_to_string(want, false);
    char why[256];
    snprintf(why, sizeof why, "the body gives %s, the shard of the result "
             "is %s", a, b);
    free(a);
    free(b);
    return fail(p, i, "%s", why);
  }
  set(p, i, v, T);
  return true;
}

static bool iota(Part *p, HloInstr *i, Shd *T) {
  Tiling *t = T->t;
  HloInstr *v = clone(p, i, shard_shape(p, T, i->shape), 0, NULL);
  int k = (int)i->iota_dim;
  if (t && !t->manual && k >= 0 && k < t->rank && t->tiles[k] > 1) {
    int64_t len = tiling_shard_dim(t, k, i->shape->dims[k]);
    int64_t *off = ARENA_ARRAY(scratch(p), int64_t, p->s.ndev);
    for (int64_t d = 0; d < p->s.ndev; d++)
      off[d] = t->coord[d * t->rank + k] * len;
    HloInstr *o = spmd_per_device(&p->s, off);
    if (i->shape->et != ET_S32)
      o = ir_convert(p->s.e, p->s.c, o, i->shape->et);
    o = ir_broadcast(p->s.e, p->s.c, o, v->shape, 0, NULL);
    v = ir_binary(p->s.e, p->s.c, HLO_ADD, v, o);
  }
  set(p, i, v, T);
  return true;
}

/* Partial sums v (tiled by `to` once summed over the groups) summed and
 * cut into `out`'s shards at once: a reduce-scatter, when `out` tiles one
 * more dimension than `to`, evenly, and each group's members are to hold
 * its pieces.  NULL when not. */
static HloInstr *reduce_scatter(Part *p, HloInstr *v, const Tiling *to,
                                const Tiling *out, int ng, int size,
                                const int64_t *groups, HloComp *fn,
                                const Shape *global) {
  if (!out || out->manual || out->rank != to->rank)
    return NULL;
  int j = -1;
  for (int k = 0; k < to->rank; k++) {
    bool same = to->tiles[k] == out->tiles[k];
    for (int64_t d = 0; d < to->ndev && same; d++)
      same = to->coord[d * to->rank + k] == out->coord[d * out->rank + k];
    if (same)
      continue;
    if (j >= 0 || to->tiles[k] != 1 || out->tiles[k] != size ||
        global->dims[k] % size != 0)
      return NULL;
    j = k;
  }
  if (j < 0)
    return NULL;
  /* each group, ordered by the piece its members keep */
  int64_t *ord = xmalloc(sizeof *ord * (size_t)ng * (size_t)size);
  for (int g = 0; g < ng * size; g++)
    ord[g] = -1;
  bool ok = true;
  for (int g = 0; g < ng && ok; g++)
    for (int m = 0; m < size && ok; m++) {
      int64_t d = groups[g * size + m], c = out->coord[d * out->rank + j];
      ok = ord[g * size + c] < 0;
      ord[g * size + c] = d;
    }
  HloInstr *r = ok ? spmd_reduce_scatter(&p->s, v, j, ng, size, ord, fn) : NULL;
  free(ord);
  return r;
}

static bool dot(Part *p, HloInstr *i, Shd *T) {
  DotSpace sp;
  if (!dot_space(i, &sp) || !T->t)
    return fallback(p, i);
  Arena *a = scratch(p);
  const Shape *ls = i->ops[0]->shape, *rs = i->ops[1]->shape;
  Tiling *st = dot_choose(a, &sp, i, cur_t(p, i->ops[0]), cur_t(p, i->ops[1]),
                          T->t, p->s.ndev);
  Tiling *tl = dot_project(a, &sp, st, 0, ls->rank);
  Tiling *tr = dot_project(a, &sp, st, 1, rs->rank);
  Tiling *to = dot_project(a, &sp, st, 2, i->shape->rank);
  HloInstr *ops[2] = {operand_t(p, i, 0, tl), operand_t(p, i, 1, tr)};
  if (!ops[0] || !ops[1])
    return false;
  bool vary[64] = {false}, reduce = false;
  for (int d = 0; d < sp.rank; d++) {
    if (!sp.contracting[d] || st->tiles[d] == 1)
      continue;
    vary[d] = reduce = true;
    /* padding of uneven shards must add nothing */
    ops[0] = spmd_mask(&p->s, ops[0], tl, sp.lhs[d], ls->dims[sp.lhs[d]], NULL);
    ops[1] = spmd_mask(&p->s, ops[1], tr, sp.rhs[d], rs->dims[sp.rhs[d]], NULL);
  }
  Shd *res = shd_array(a, to);
  HloInstr *v = clone(p, i, shard_shape(p, res, i->shape), 2, ops);
  if (reduce) {
    int64_t *groups;
    int size;
    int ng = tiling_groups(st, vary, &groups, &size);
    ElemType et = i->shape->et;
    HloComp *fn = spmd_reducer(&p->s, et == ET_PRED ? HLO_OR : HLO_ADD, et);
    HloInstr *scat = reduce_scatter(p, v, to, T->t, ng, size, groups, fn, i->shape);
    if (scat)
      res = shd_array(a, T->t);
    v = scat ? scat : spmd_all_reduce(&p->s, v, ng, size, groups, fn);
    free(groups);
  }
  set(p, i, v, res);
  return true;
}

/* A reduce of one operand whose reduced dimensions stay tiled: each device
 * reduces its shard (padding masked with the init value), an all-reduce
 * with the same computation combines the devices'.  False when that is not
 * the cheaper way (the generic rule then applies). */
static bool reduce_tiled(Part *p, HloInstr *i, Shd *T, bool *done) {
  *done = false;
  Arena *a = scratch(p);
  Tiling *cur = cur_t(p, i->ops[0]), *out = T->t;
  if (i->nops != 2 || !cur || cur->manual || !out || out->manual ||
      i->ncalled != 1)
    return true;
  /* Each device's partial result folds the init value in once: fine for
   * max, min, and, or; a sum or product starts its devices from 0 or 1 and
   * takes the init value once at the end; other reducers are not split. */
  int op = reducer_op(i->called[0]);
  bool idempotent = op == HLO_MAXIMUM || op == HLO_MINIMUM || op == HLO_AND ||
                    op == HLO_OR;
  if (!idempotent && op != HLO_ADD && op != HLO_MULTIPLY)
    return true;
  const Shape *os = i->ops[0]->shape;
  Tiling *req = spmd_backward(a, i, 0, out, p->s.ndev);
  const Tiling *srcs[2] = {req, cur};
  int which[64], dim[64];
  bool vary[64] = {false}, any = false;
  for (int k = 0; k < os->rank; k++) {
    bool reduced = false;
    for (int j = 0; j < i->dims.n; j++)
      reduced |= i->dims.v[j] == k;
    which[k] = reduced ? 1 : 0;
    dim[k] = k;
    vary[k] = reduced && cur->tiles[k] > 1;
    any |= vary[k];
  }
  if (!any)
    return true;
  Tiling *cand = tiling_merge(a, os->rank, p->s.ndev, srcs, which, dim);
  if (!cand)
    return true;
  int64_t bytes = et_bytes(i->shape->et);
  for (int k = 0; k < i->shape->rank; k++)
    bytes *= tiling_shard_dim(out, k, i->shape->dims[k]);
  if (tiling_reshard_cost(cur, cand, os) + bytes >=
      tiling_reshard_cost(cur, req, os))
    return true;
  HloInstr *v = operand_t(p, i, 0, cand);
  HloInstr *init = operand_t(p, i, 1, NULL);
  if (!v || !init)
    return false;
  HloInstr *start = idempotent ? init
                    : ir_scalar(p->s.e, p->s.c, init->shape->et,
                                op == HLO_ADD ? 0 : 1);
  for (int k = 0; k < os->rank; k++)
    if (vary[k])
      v = spmd_mask(&p->s, v, cand, k, os->dims[k], start);
  HloInstr *ops[2] = {v, start};
  HloInstr *r = clone(p, i, shard_shape(p, T, i->shape), 2, ops);
  int64_t *groups;
  int size;
  int ng = tiling_groups(cand, vary, &groups, &size);
  r = spmd_all_reduce(&p->s, r, ng, size, groups, i->called[0]);
  free(groups);
  if (!idempotent && !ir_is_constant_value(init, op == HLO_ADD ? 0 : 1))
    r = ir_binary(p->s.e, p->s.c, (HloOp)op,
                  ir_broadcast(p->s.e, p->s.c, init, r->shape, 0, NULL), r);
  set(p, i, r, T);
  *done = true;
  return true;
}

/* A scatter-add whose indices are tiled over their batch dimensions: every
 * device scatters its own updates into zeros, an all-reduce sums them, and
 * the operand is added.  *done false when it does not apply. */
static bool scatter_add(Part *p, HloInstr *i, bool *done) {
  *done = false;
  Arena *a = scratch(p);
  if (i->nops != 3 || !i->scatter || i->ncalled != 1 ||
      reducer_op(i->called[0]) != HLO_ADD || !shape_is_array(i->shape))
    return true;
  Tiling *ix = cur_t(p, i->ops[1]);
  const Shape *is = i->ops[1]->shape, *us = i->ops[2]->shape;
  int ivd = (int)i->scatter->index_vector_dim;
  if (!ix || ix->manual)
    return true;
  if (ivd < is->rank)
    ix = tiling_drop(a, ix, ivd);
  if (tiling_num_tiles(ix) == 1)
    return true;
  int src[64], q = 0;
  for (int u = 0; u < us->rank; u++) {
    bool window = false;
    for (int j = 0; j < i->scatter->update_window_dims.n; j++)
      window |= i->scatter->update_window_dims.v[j] == u;
    if (window) {
      src[u] = -1;
      continue;
    }
    if (q == ivd)
      q++;
    src[u] = q++;
  }
  Tiling *tu = tiling_project(a, ix, us->rank, src);
  HloInstr *vi = operand_t(p, i, 1, ix), *vu = operand_t(p, i, 2, tu);
  HloInstr *base = operand_t(p, i, 0, NULL);
  if (!vi || !vu || !base)
    return false;
  for (int u = 0; u < us->rank; u++)
    if (tu->tiles[u] > 1)
      vu = spmd_mask(&p->s, vu, tu, u, us->dims[u], NULL);
  HloInstr *zeros = ir_scalar_like(p->s.e, p->s.c, i->shape, 0);
  HloInstr *ops[3] = {zeros, vi, vu};
  HloInstr *v = clone(p, i, NULL, 3, ops);
  bool vary[64] = {false};
  for (int k = 0; k < ix->rank; k++)
    vary[k] = ix->tiles[k] > 1;
  int64_t *groups;
  int size;
  int ng = tiling_groups(ix, vary, &groups, &size);
  v = spmd_all_reduce(&p->s, v, ng, size, groups, i->called[0]);
  free(groups);
  v = ir_binary(p->s.e, p->s.c, HLO_ADD, base, v);
  set(p, i, v, shd_replicated(a, i->shape, p->s.ndev));
  *done = true;
  return true;
}

/* An op of spmd_rules.c on local shapes; *done false when it has no rule. */
static bool by_rule(Part *p, HloInstr *i, Shd *T, bool *done) {
  Arena *a = scratch(p);
  Tiling *out = first_leaf(T);
  *done = false;
  if (!out || out->manual)
    return true;
  Tiling *eff = spmd_exact(a, i, out);
  if (!eff)
    return true;
  HloInstr **ops = ARENA_ARRAY(a, HloInstr *, i->nops > 0 ? i->nops : 1);
  Tiling **req = ARENA_ARRAY(a, Tiling *, i->nops > 0 ? i->nops : 1);
  for (int k = 0; k < i->nops; k++) {
    req[k] = spmd_backward(a, i, k, eff, p->s.ndev);
    if (!(ops[k] = operand_t(p, i, k, req[k])))
      return false;
  }
  Shd *res = i->shape->et == ET_TUPLE ? NULL : shd_array(a, eff);
  if (!res) {
    Shd **el = ARENA_ARRAY(a, Shd *, i->shape->ntuple > 0 ? i->shape->ntuple : 1);
    for (int k = 0; k < i->shape->ntuple; k++)
      el[k] = shd_array(a, eff);
    res = shd_tuple(a, i->shape->ntuple, el);
  }
  HloInstr *v = clone(p, i, shard_shape(p, res, i->shape), i->nops, ops);
  Arena *ma = p->s.m->arena;
  if (i->op == HLO_SLICE) {
    v->slice = arena_memdup(ma, i->slice, sizeof(SliceDim) * (size_t)i->shape->rank);
    for (int k = 0; k < i->shape->rank; k++)
      if (eff->tiles[k] > 1)
        v->slice[k] = (SliceDim){0, v->shape->dims[k], 1};
  } else if (i->op == HLO_DYNAMIC_SLICE) {
    v->dynamic_slice_sizes.v = arena_memdup(ma, i->dynamic_slice_sizes.v,
                                            sizeof(int64_t) * (size_t)i->shape->rank);
    for (int k = 0; k < i->shape->rank; k++)
      v->dynamic_slice_sizes.v[k] = v->shape->dims[k];
  } else if (i->op == HLO_GATHER) {
    int n = i->gather_slice_sizes.n;
    v->gather_slice_sizes.v = arena_memdup(ma, i->gather_slice_sizes.v,
                                           sizeof(int64_t) * (size_t)(n > 0 ? n : 1));
    for (int k = 0; k < n; k++)
      if (req[0]->tiles[k] > 1 && i->gather_slice_sizes.v[k] > 1)
        v->gather_slice_sizes.v[k] = ops[0]->shape->dims[k];
  }
  set(p, i, v, res);
  *done = true;
  return true;
}

static bool partition(Part *p, HloInstr *i);

/* A copy of computation c (a loop's body or condition) computed on
 * shards: its parameter tiled by `param`, its root ending in `root` (NULL:
 * as it comes out).  NULL after an error. */
static HloComp *partition_comp(Part *p, HloComp *c, Shd *param, Shd *root) {
  HloComp *saved_c = p->s.c;
  HloInstr *saved_pid = p->s.pid;
  HloComp *n = ir_new_comp(p->s.e, c->name);
  p->s.c = n;
  p->s.pid = NULL;
  int count = c->ninstrs;
  HloInstr **instrs = xmalloc(sizeof *instrs * (size_t)(count > 0 ? count : 1));
  memcpy(instrs, c->instrs, sizeof *instrs * (size_t)count);
  bool ok = c->nparams == 1;
  if (ok) {
    HloInstr *prm = c->params[0];
    HloInstr *np = ir_add_param(p->s.e, n, shard_shape(p, param, prm->shape), prm->name);
    np->metadata = prm->metadata;
    set(p, prm, np, param);
  }
  for (int k = 0; ok && k < count; k++)
    if (instrs[k]->op != HLO_PARAMETER)
      ok = partition(p, instrs[k]);
  HloInstr *r = NULL;
  if (ok) {
    r = p->local[c->root->id];
    if (root)
      r = spmd_reshard_shd(&p->s, r, p->sh[c->root->id], root, p->global[c->root->id]);
    ok = r != NULL;
  }
  if (ok)
    n->root = r;
  free(instrs);
  p->s.c = saved_c;
  p->s.pid = saved_pid;
  return ok ? n : NULL;
}

/* A while loop on shards: its state resharded to the loop's sharding,
 * which its body keeps from trip to trip. */
static bool loop(Part *p, HloInstr *i, Shd *T) {
  if (i->nops != 1 || i->ncalled != 2 || T->t)
    return fallback(p, i);
  HloInstr *init = operand(p, i, 0, T);
  if (!init)
    return false;
  HloComp *cond = partition_comp(p, i->called[0], T, NULL);
  HloComp *body = cond ? partition_comp(p, i->called[1], T, T) : NULL;
  if (!body)
    return false;
  HloInstr *w = clone(p, i, shard_shape(p, T, i->shape), 1, &init);
  w->called = ARENA_ARRAY(p->s.m->arena, HloComp *, 2);
  w->called[0] = cond;
  w->called[1] = body;
  set(p, i, w, T);
  return true;
}

static bool partition(Part *p, HloInstr *i) {
  Shd *T = target(p, i);
  bool any_manual = shd_any_manual(T) && spmd_role(i) != SPMD_ROLE_FROM_MANUAL;
  for (int k = 0; k < i->nops; k++)
    any_manual |= shd_any_manual(p->sh[i->ops[k]->id]);
  switch (spmd_role(i)) {
  case SPMD_ROLE_SHARDING: {
    if (i->nops != 1)
      return fail(p, i, "%s", "a sharding annotation takes one operand");
    if (shd_any_manual(T) && shd_any_manual(p->sh[i->ops[0]->id])) {
      /* a manual value annotated manual: nothing to do */
      set(p, i, p->local[i->ops[0]->id], p->sh[i->ops[0]->id]);
      return true;
    }
    if (shd_any_manual(T))
      return manual(p, i);
    HloInstr *v = operand(p, i, 0, T);
    if (!v)
      return false;
    set(p, i, v, T);
    return true;
  }
  case SPMD_ROLE_TO_MANUAL:
    return to_manual(p, i);
  case SPMD_ROLE_FROM_MANUAL:
    return from_manual(p, i, T);
  default:
    break;
  }
  if (any_manual)
    return manual(p, i);
  bool done;
  switch (i->op) {
  case HLO_GET_TUPLE_ELEMENT: {
    Shd *t = p->sh[i->ops[0]->id];
    if (!t || t->t || i->tuple_index >= t->n)
      return fallback(p, i);
    set(p, i, ir_gte(p->s.e, p->s.c, p->local[i->ops[0]->id], i->tuple_index),
        t->el[i->tuple_index]);
    return true;
  }
  case HLO_TUPLE: {
    HloInstr **el = ARENA_ARRAY(scratch(p), HloInstr *, i->nops > 0 ? i->nops : 1);
    Shd **sh = ARENA_ARRAY(scratch(p), Shd *, i->nops > 0 ? i->nops : 1);
    for (int k = 0; k < i->nops; k++) {
      el[k] = p->local[i->ops[k]->id];
      sh[k] = p->sh[i->ops[k]->id];
    }
    set(p, i, clone(p, i, NULL, i->nops, el), shd_tuple(scratch(p), i->nops, sh));
    p->local[i->id]->shape = shape_clone(p->s.m->arena, p->local[i->id]->shape);
    for (int k = 0; k < i->nops; k++)
      p->local[i->id]->shape->tuple[k] = el[k]->shape;
    return true;
  }
  case HLO_CONSTANT: {
    HloInstr *v = clone(p, i, NULL, 0, NULL);
    Shd *rep = shd_replicated(scratch(p), i->shape, p->s.ndev);
    if (!(v = spmd_reshard_shd(&p->s, v, rep, T, i->shape)))
      return false;
    set(p, i, v, T);
    return true;
  }
  case HLO_IOTA:
    return iota(p, i, T);
  case HLO_WHILE:
    return loop(p, i, T);
  case HLO_DOT:
  case HLO_CONVOLUTION:
    return dot(p, i, T);
  case HLO_REDUCE:
    if (!reduce_tiled(p, i, T, &done))
      return false;
    if (done)
      return true;
    break;
  case HLO_SCATTER:
    if (!scatter_add(p, i, &done))
      return false;
    if (done)
      return true;
    break;
  default:
    break;
  }
  if (!by_rule(p, i, T, &done))
    return false;
  return done ? true : fallback(p, i);
}

/* The module's record of the global program, for the runtime. */
static void set_attr(HloModule *m, const char *key, const char *value) {
  KVList *old = m->frontend_attrs;
  KVList *l = ARENA_NEW(m->arena, KVList);
  int n = old ? old->n : 0;
  l->kv = ARENA_ARRAY(m->arena, KeyValue, n + 1);
  for (int k = 0; k < n; k++)
    if (strncmp(old->kv[k].key, "xla.sdy.", 8) != 0 &&
        strcmp(old->kv[k].key, key) != 0)
      l->kv[l->n++] = old->kv[k];
  if (value) {
    l->kv[l->n].key = arena_strdup(m->arena, key);
    l->kv[l->n].value = arena_strdup(m->arena, value);
    l->n++;
  }
  m->frontend_attrs = l->n ? l : NULL;
}

static void record(HloModule *m, Shape *params, const Shape *result,
                   const Sharding *out) {
  StrBuf b;
  sb_init(&b);
  shape_print(&b, params, true);
  set_attr(m, "xhlo.global_parameter_shapes", b.s);
  sb_clear(&b);
  shape_print(&b, result, true);
  set_attr(m, "xhlo.global_result_shape", b.s);
  sb_clear(&b);
  hlo_print_sharding(&b, out);
  set_attr(m, "xhlo.result_sharding", b.s);
  sb_free(&b);
}

/* Keeps the input/output aliases whose shards still have one shape. */
static void fix_aliases(HloModule *m) {
  int n = 0;
  for (int k = 0; k < m->nio_alias; k++) {
    const AliasEntry *a = &m->io_alias[k];
    const Shape *o = shape_subshape(m->entry->root->shape, a->output_index.n,
                                    a->output_index.v);
    const Shape *in = a->operand < m->entry->nparams
                          ? shape_subshape(m->entry->params[a->operand]->shape,
                                           a->operand_index.n, a->operand_index.v)
                          : NULL;
    if (o && in && shape_compatible(o, in))
      m->io_alias[n++] = *a;
  }
  m->nio_alias = n;
}

bool pass_spmd_partitioning(HloModule *m, PassContext *ctx) {
  if (!spmd_wanted(m))
    return false;
  if (m->replica_count > 1) {
    diag_error(ctx->diag, m->loc, "spmd-partitioning: a module with "
               "replica_count=%lld is not supported (only partitions)",
               (long long)m->replica_count);
    return false;
  }
  HloComp *c = m->entry;
  Part p = {0};
  p.s.e = ir_begin(m);
  p.s.m = m;
  p.s.c = c;
  p.s.a = arena_new();
  p.s.ndev = m->num_partitions;
  p.s.d = ctx->diag;
  for (int ci = 0; ci < m->ncomps; ci++)
    for (int k = 0; k < m->comps[ci]->ninstrs; k++) {
      const HloInstr *i = m->comps[ci]->instrs[k];
      if (i->has_channel_id && i->channel_id > p.s.channel)
        p.s.channel = i->channel_id;
    }
  bool ok = (p.meshes = sdy_meshes(p.s.a, m, ctx->diag)) != NULL;
  p.nold = m->next_id;
  p.local = xcalloc((size_t)p.nold + 1, sizeof *p.local);
  p.sh = xcalloc((size_t)p.nold + 1, sizeof *p.sh);
  p.global = xcalloc((size_t)p.nold + 1, sizeof *p.global);
  int nold = c->ninstrs;
  HloInstr **old = xmalloc(sizeof *old * (size_t)(nold > 0 ? nold : 1));
  memcpy(old, c->instrs, sizeof *old * (size_t)nold);
  for (int ci = 0; ci < m->ncomps; ci++)
    for (int k = 0; k < m->comps[ci]->ninstrs; k++)
      p.global[m->comps[ci]->instrs[k]->id] = m->comps[ci]->instrs[k]->shape;
  Shape **gparams = ARENA_ARRAY(m->arena, Shape *, c->nparams > 0 ? c->nparams : 1);
  for (int k = 0; k < c->nparams; k++)
    gparams[k] = c->params[k]->shape;
  HloInstr *old_root = c->root;
  const Shape *gresult = old_root->shape;
  Shd *out = NULL;
  for (int k = 0; ok && k < nold; k++) {
    HloInstr *i = old[k];
    if (i->op == HLO_PARAMETER) {
      /* a new parameter of the shard shape takes the old one's place at
       * the end; until then the global program keeps its shapes */
      Shd *T = target(&p, i);
      HloInstr *n = ir_clone(p.s.e, c, i, shard_shape(&p, T, i->shape), 0, NULL);
      clean(&p, n);
      set(&p, i, n, T);
      continue;
    }
    ok = partition(&p, i);
  }
  if (ok) {
    out = target(&p, old_root);
    if (shd_any_manual(p.sh[old_root->id]) && !shd_any_manual(out))
      fail(&p, old_root, "%s", "the entry's result is a value of a shard_map "
           "body (only SPMDShardToFullShape or xla.sdy.LocalToGlobalShape take "
           "one out)");
    HloInstr *root = ctx->diag->has_error ? NULL : spmd_reshard_shd(&p.s, p.local[old_root->id],
                                      p.sh[old_root->id], out, gresult);
    ok = root != NULL;
    if (ok) {
      if (root->op == HLO_PARAMETER || root->sharding) {
        /* keep the parameter's own attributes: the root is a copy */
        root = ir_new(p.s.e, c, HLO_COPY, shape_clone(m->arena, root->shape), 1,
                      &root);
      }
      root->sharding = shd_to_sharding(m->arena, out);
      c->root = root;
      for (int k = nold - 1; k >= 0; k--)
        ir_remove(p.s.e, old[k]);
      for (int k = 0; k < c->nparams; k++) {
        HloInstr *n = p.local[c->params[k]->id];
        n->name = c->params[k]->name;
        c->params[k] = n;
      }
      char *name = xmalloc(strlen(c->name) + 6);
      sprintf(name, "%s_spmd", c->name);
      c->name = arena_strdup(m->arena, name);
      free(name);
      record(m, shape_tuple(m->arena, c->nparams, gparams), gresult,
             shd_to_sharding(m->arena, out));
      if (m->entry_layout) {
        ProgramShape *ps = ARENA_NEW(m->arena, ProgramShape);
        *ps = *m->entry_layout;
        ps->params = ARENA_ARRAY(m->arena, Shape *, c->nparams > 0 ? c->nparams : 1);
        for (int k = 0; k < c->nparams && k < ps->nparams; k++)
          ps->params[k] = shape_clone(m->arena, c->params[k]->shape);
        ps->result = shape_clone(m->arena, root->shape);
        m->entry_layout = ps;
      }
      fix_aliases(m);
    }
  }
  free(old);
  free(p.local);
  free(p.sh);
  free(p.global);
  arena_free(p.s.a);
  ir_remove_unused_comps(p.s.e);
  return ir_end(p.s.e, ok) && ok;
}
