/*
 * spmd_reshard.c - the pieces of a per-device program that depend on the
 * device: offsets read from a table by partition-id, collectives over
 * groups of partitions, masks for the padding of uneven shards, and the
 * move of a value from one tiling to another.
 *
 * A reshard that only moves the tiles to other devices (the same grid) is
 * a collective-permute from a holder of each device's new tile.  Any other
 * all-gathers each dimension along which some device's new shard
 * is not inside its old one (the devices of a group hold the other tiles
 * of that dimension, the same tiles in the others) - or, when the new
 * tiling cuts another dimension the way the old one cut this one, swaps
 * the two with an all-to-all (sequence-split to feature-split) - then cuts every
 * device's new shard out of what it holds with one dynamic-slice at
 * offsets read by partition-id (padding first where the new shards reach
 * past the end).  So replicated -> tiled costs no communication, tiled ->
 * replicated is an all-gather, and any tiling reaches any other.  The
 * collectives name their groups by partition (channel_id,
 * use_global_device_ids=true, explicit replica groups), as XLA's
 * partitioner writes them for a module of one replica.
 */
#include "spmd.h"

#include <stdlib.h>
#include <string.h>

static HloInstr *pid(Spmd *s) {
  if (!s->pid) {
    HloInstr *p = ir_new(s->e, s->c, HLO_PARTITION_ID,
                         shape_scalar(s->m->arena, ET_U32), 0, NULL);
    s->pid = ir_convert(s->e, s->c, p, ET_S32);
  }
  return s->pid;
}

HloInstr *spmd_per_device(Spmd *s, const int64_t *v) {
  bool same = true;
  for (int64_t d = 1; d < s->ndev && same; d++)
    same = v[d] == v[0];
  if (same)
    return ir_scalar(s->e, s->c, ET_S32, (double)v[0]);
  Arena *ma = s->m->arena;
  int64_t n = s->ndev, one = 1;
  Literal *l = literal_new(ma, shape_array(ma, ET_S32, 1, &n));
  for (int64_t d = 0; d < n; d++)
    literal_set_s64(l, d, v[d]);
  HloInstr *ops[2] = {ir_constant(s->e, s->c, l), pid(s)};
  HloInstr *ds = ir_new(s->e, s->c, HLO_DYNAMIC_SLICE,
                        shape_array(ma, ET_S32, 1, &one), 2, ops);
  ds->dynamic_slice_sizes.n = 1;
  ds->dynamic_slice_sizes.v = ARENA_ARRAY(ma, int64_t, 1);
  ds->dynamic_slice_sizes.v[0] = 1;
  return ir_reshape(s->e, s->c, ds, 0, NULL);
}

static ReplicaGroups *groups_attr(Spmd *s, int ngroups, int size,
                                  const int64_t *groups) {
  Arena *ma = s->m->arena;
  ReplicaGroups *g = ARENA_NEW(ma, ReplicaGroups);
  g->ngroups = ngroups;
  g->groups = ARENA_ARRAY(ma, I64List, ngroups > 0 ? ngroups : 1);
  for (int k = 0; k < ngroups; k++) {
    g->groups[k].n = size;
    g->groups[k].v = arena_memdup(ma, groups + (size_t)k * (size_t)size,
                                  sizeof(int64_t) * (size_t)size);
  }
  return g;
}

static void collective(Spmd *s, HloInstr *i, int ngroups, int size,
                       const int64_t *groups) {
  i->replica_groups = groups_attr(s, ngroups, size, groups);
  i->channel_id = ++s->channel;
  i->has_channel_id = true;
  i->use_global_device_ids = true;
}

HloComp *spmd_reducer(Spmd *s, HloOp op, ElemType et) {
  const char *name = op == HLO_ADD ? "add" : op == HLO_MAXIMUM ? "max"
                     : op == HLO_MINIMUM ? "min" : op == HLO_OR ? "or"
                     : op == HLO_AND ? "and" : "multiply";
  for (int k = 0; k < s->m->ncomps; k++) {
    HloComp *c = s->m->comps[k];
    if (c->nparams == 2 && c->root && c->root->op == op && c->ninstrs == 3 &&
        c->root->shape->et == et && c->root->shape->rank == 0 &&
        c->root->ops[0] == c->params[0] && c->root->ops[1] == c->params[1] &&
        strncmp(c->name, "spmd_", 5) == 0)
      return c;
  }
  char buf[64];
  snprintf(buf, sizeof buf, "spmd_%s.%s", name, et_name(et));
  return ir_scalar_binary_comp(s->e, buf, op, et);
}

HloInstr *spmd_all_reduce(Spmd *s, HloInstr *v, int ngroups, int size,
                          const int64_t *groups, HloComp *fn) {
  HloInstr *r = ir_new(s->e, s->c, HLO_ALL_REDUCE,
                       shape_clone(s->m->arena, v->shape), 1, &v);
  r->ncalled = 1;
  r->called = ARENA_ARRAY(s->m->arena, HloComp *, 1);
  r->called[0] = fn;
  collective(s, r, ngroups, size, groups);
  return r;
}

HloInstr *spmd_reduce_scatter(Spmd *s, HloInstr *v, int dim, int ngroups,
                              int size, const int64_t *groups, HloComp *fn) {
  Shape *sh = shape_clone(s->m->arena, v->shape);
  sh->dims[dim] /= size;
  HloInstr *r = ir_new(s->e, s->c, HLO_REDUCE_SCATTER, sh, 1, &v);
  r->dims.n = 1;
  r->dims.v = ARENA_ARRAY(s->m->arena, int64_t, 1);
  r->dims.v[0] = dim;
  r->has_dims = true;
  r->ncalled = 1;
  r->called = ARENA_ARRAY(s->m->arena, HloComp *, 1);
  r->called[0] = fn;
  collective(s, r, ngroups, size, groups);
  return r;
}

/* All-gather along dimension k of v, tiled by t. */
static HloInstr *all_gather(Spmd *s, HloInstr *v, const Tiling *t, int k) {
  bool vary[64] = {false};
  vary[k] = true;
  int64_t *groups;
  int size;
  int ng = tiling_groups(t, vary, &groups, &size);
  if (ng == 0)
    return v;
  Shape *sh = shape_clone(s->m->arena, v->shape);
  sh->dims[k] *= size;
  HloInstr *g = ir_new(s->e, s->c, HLO_ALL_GATHER, sh, 1, &v);
  g->dims.n = 1;
  g->dims.v = ARENA_ARRAY(s->m->arena, int64_t, 1);
  g->dims.v[0] = k;
  g->has_dims = true;
  collective(s, g, ng, size, groups);
  free(groups);
  return g;
}

/* An all-to-all among the devices along dimension k of v (tiled by t):
 * dimension j (untiled) is cut into as many pieces as k has tiles, piece p
 * going to the device with tile p along k, which puts what it receives
 * together along k (through a new dimension of the pieces, moved next to
 * k and merged into it). */
static HloInstr *all_to_all(Spmd *s, HloInstr *v, const Tiling *t, int k,
                            int j) {
  bool vary[64] = {false};
  vary[k] = true;
  int64_t *groups;
  int n;
  int ng = tiling_groups(t, vary, &groups, &n);
  int r = v->shape->rank;
  int64_t dims[65];
  int q = 0;
  for (int a = 0; a < r; a++) {
    if (a == j) {
      dims[q++] = n;
      dims[q++] = v->shape->dims[j] / n;
    } else {
      dims[q++] = v->shape->dims[a];
    }
  }
  HloInstr *x = ir_reshape(s->e, s->c, v, r + 1, dims);
  HloInstr *a2a = ir_new(s->e, s->c, HLO_ALL_TO_ALL,
                         shape_clone(s->m->arena, x->shape), 1, &x);
  a2a->dims.n = 1;
  a2a->dims.v = ARENA_ARRAY(s->m->arena, int64_t, 1);
  a2a->dims.v[0] = j;
  a2a->has_dims = true;
  collective(s, a2a, ng, n, groups);
  free(groups);
  /* the pieces' dimension (at j) goes just before k's */
  int64_t perm[65];
  q = 0;
  for (int a = 0; a <= r; a++) {
    if (q == k)
      perm[q++] = j;
    if (a != j)
      perm[q++] = a;
  }
  if (q == k)
    perm[q++] = j;
  HloInstr *tr = ir_transpose(s->e, s->c, a2a, perm);
  for (int a = 0, b = 0; a < r; a++, b++) {
    dims[a] = tr->shape->dims[b];
    if (a == k)
      dims[a] *= tr->shape->dims[++b];
  }
  return ir_reshape(s->e, s->c, tr, r, dims);
}

/* v (tiled by from) on the devices `to` puts its tiles on: each device's
 * new tile sent by src[d] (self pairs included, as XLA writes them). */
static HloInstr *permute(Spmd *s, HloInstr *v, const int64_t *src) {
  Arena *ma = s->m->arena;
  HloInstr *cp = ir_new(s->e, s->c, HLO_COLLECTIVE_PERMUTE,
                        shape_clone(ma, v->shape), 1, &v);
  cp->source_target_pairs = arena_array(ma, (size_t)s->ndev, sizeof(int64_t[2]));
  cp->npairs = (int)s->ndev;
  for (int64_t d = 0; d < s->ndev; d++) {
    cp->source_target_pairs[d][0] = src[d];
    cp->source_target_pairs[d][1] = d;
  }
  cp->channel_id = ++s->channel;
  cp->has_channel_id = true;
  return cp;
}

HloInstr *spmd_mask(Spmd *s, HloInstr *v, const Tiling *t, int k,
                    int64_t global, HloInstr *fill) {
  if (t->manual || t->tiles[k] == 1 || global % t->tiles[k] == 0)
    return v;
  Arena *ma = s->m->arena;
  int64_t len = tiling_shard_dim(t, k, global);
  int64_t *off = ARENA_ARRAY(s->a, int64_t, s->ndev);
  for (int64_t d = 0; d < s->ndev; d++)
    off[d] = t->coord[d * t->rank + k] * len;
  Shape *is = ir_shape_with_et(ma, v->shape, ET_S32);
  HloInstr *iota = ir_new(s->e, s->c, HLO_IOTA, is, 0, NULL);
  iota->iota_dim = k;
  HloInstr *o = ir_broadcast(s->e, s->c, spmd_per_device(s, off), is, 0, NULL);
  HloInstr *idx = ir_binary(s->e, s->c, HLO_ADD, iota, o);
  HloInstr *lim = ir_broadcast(s->e, s->c,
                               ir_scalar(s->e, s->c, ET_S32, (double)global),
                               is, 0, NULL);
  HloInstr *in = ir_compare(s->e, s->c, CMP_LT, idx, lim);
  if (!fill)
    fill = ir_scalar(s->e, s->c, v->shape->et, 0);
  HloInstr *f = ir_broadcast(s->e, s->c, fill, v->shape, 0, NULL);
  return ir_select(s->e, s->c, in, v, f);
}

HloInstr *spmd_reshard(Spmd *s, HloInstr *v, const Tiling *from,
                       const Tiling *to, const Shape *global) {
  if (tiling_equal(from, to))
    return v;
  if (from->manual) {
    diag_error(s->d, v->loc, "spmd-partitioning: a value of a shard_map body "
               "('%s') is used outside it", v->name);
    return NULL;
  }
  if (to->manual) {
    Tiling *rep = tiling_replicated(s->a, from->rank, s->ndev);
    return spmd_reshard(s, v, from, rep, global);
  }
  int64_t *src = ARENA_ARRAY(s->a, int64_t, s->ndev);
  if (tiling_permutation(from, to, src))
    return permute(s, v, src);
  Arena *ma = s->m->arena;
  int r = global->rank;
  Tiling *cur = tiling_clone(s->a, from);
  /* 1. gather the dimensions whose shards do not nest */
  for (int k = 0; k < r; k++) {
    if (tiling_contained(cur, to, k, global->dims[k]))
      continue;
    int j = tiling_a2a_dim(cur, to, k, global);
    if (j >= 0) {
      int64_t *col = ARENA_ARRAY(s->a, int64_t, s->ndev);
      for (int64_t d = 0; d < s->ndev; d++)
        col[d] = cur->coord[d * r + k];
      v = all_to_all(s, v, cur, k, j);
      cur = tiling_drop(s->a, cur, k);
      cur->tiles[j] = to->tiles[j];
      for (int64_t d = 0; d < s->ndev; d++)
        cur->coord[d * r + j] = col[d];
    } else {
      v = all_gather(s, v, cur, k);
      cur = tiling_drop(s->a, cur, k);
    }
    if (v->shape->dims[k] != global->dims[k]) {
      SliceDim *sl = ARENA_ARRAY(ma, SliceDim, r);
      for (int q = 0; q < r; q++)
        sl[q] = (SliceDim){0, v->shape->dims[q], 1};
      sl[k].limit = global->dims[k];
      v = ir_slice(s->e, s->c, v, sl);
    }
  }
  /* 2. cut the new shards out */
  int64_t *off = ARENA_ARRAY(s->a, int64_t, s->ndev * (r > 0 ? r : 1));
  int64_t *size = ARENA_ARRAY(s->a, int64_t, r > 0 ? r : 1);
  PadDim *pad = ARENA_ARRAY(ma, PadDim, r > 0 ? r : 1);
  bool slicing = false, padding = false;
  bool *cut = ARENA_ARRAY(s->a, bool, r > 0 ? r : 1);
  for (int k = 0; k < r; k++) {
    int64_t g = global->dims[k], have = v->shape->dims[k];
    int64_t l = tiling_shard_dim(cur, k, g), l2 = tiling_shard_dim(to, k, g);
    size[k] = have;
    bool same = cur->tiles[k] == to->tiles[k];
    for (int64_t d = 0; d < s->ndev && same; d++)
      same = cur->coord[d * r + k] == to->coord[d * to->rank + k];
    if (same)
      continue;
    slicing = true;
    cut[k] = true;
    size[k] = l2;
    int64_t need = 0;
    for (int64_t d = 0; d < s->ndev; d++) {
      int64_t o = to->coord[d * to->rank + k] * l2 - cur->coord[d * r + k] * l;
      off[d * r + k] = o > 0 ? o : 0;
      if (off[d * r + k] + l2 > need)
        need = off[d * r + k] + l2;
    }
    if (need > have) {
      pad[k].hi = need - have;
      padding = true;
    }
  }
  if (!slicing)
    return v;
  if (padding) {
    HloInstr *zero = ir_scalar(s->e, s->c, v->shape->et, 0);
    Shape *ps = shape_clone(ma, v->shape);
    for (int k = 0; k < r; k++)
      ps->dims[k] += pad[k].hi;
    HloInstr *ops[2] = {v, zero};
    v = ir_new(s->e, s->c, HLO_PAD, ps, 2, ops);
    v->padding = pad;
  }
  HloInstr **ops = ARENA_ARRAY(s->a, HloInstr *, r + 1);
  ops[0] = v;
  int64_t *col = ARENA_ARRAY(s->a, int64_t, s->ndev);
  for (int k = 0; k < r; k++) {
    for (int64_t d = 0; d < s->ndev; d++)
      col[d] = cut[k] ? off[d * r + k] : 0;
    ops[k + 1] = spmd_per_device(s, col);
  }
  Shape *rs = shape_clone(ma, v->shape);
  for (int k = 0; k < r; k++)
    rs->dims[k] = size[k];
  HloInstr *ds = ir_new(s->e, s->c, HLO_DYNAMIC_SLICE, rs, r + 1, ops);
  ds->dynamic_slice_sizes.n = r;
  ds->dynamic_slice_sizes.v = arena_memdup(ma, size, sizeof(int64_t) * (size_t)r);
  return ds;
}

HloInstr *spmd_reshard_shd(Spmd *s, HloInstr *v, const Shd *from,
                           const Shd *to, const Shape *global) {
  if (shd_equal(from, to))
    return v;
  if (from->t && to->t) {
    if (!shape_is_array(global))
      return v;
    return spmd_reshard(s, v, from->t, to->t, global);
  }
  if (from->t || to->t || from->n != to->n || global->et != ET_TUPLE ||
      global->ntuple != from->n) {
    diag_error(s->d, v->loc, "spmd-partitioning: the sharding of '%s' does "
               "not fit its shape", v->name);
    return NULL;
  }
  HloInstr **el = ARENA_ARRAY(s->a, HloInstr *, from->n > 0 ? from->n : 1);
  for (int k = 0; k < from->n; k++) {
    el[k] = spmd_reshard_shd(s, ir_gte(s->e, s->c, v, k), from->el[k],
                             to->el[k], global->tuple[k]);
    if (!el[k])
      return NULL;
  }
  return ir_tuple(s->e, s->c, from->n, el);
}
