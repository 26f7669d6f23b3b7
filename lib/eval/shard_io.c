/*
 * shard_io.c - global arrays in and out of a program that every partition
 * runs on its shards, as JAX hands them over and gets them back.
 *
 * What the module says about its global view:
 *   - each entry parameter's sharding= attribute (spmd-partitioning keeps
 *     them, as XLA's partitioner does; XLA's own per-device dumps have
 *     them too): how a global input is cut into every device's shard;
 *   - spmd-partitioning's record of the global program (frontend
 *     attributes): xhlo.global_parameter_shapes (a tuple of the global
 *     parameter shapes), xhlo.global_result_shape and xhlo.result_sharding
 *     (how the devices' results make the global one).
 * A module without the record (XLA's dumps) still takes global inputs: a
 * global shape is one whose shards, ceil(dim / tiles) long, are the
 * parameter's shape.
 */
#include <stdlib.h>
#include <string.h>

#include "eval.h"

static const char *module_attr(const HloModule *m, const char *key) {
  const KVList *l = m->frontend_attrs;
  for (int k = 0; l && k < l->n; k++)
    if (strcmp(l->kv[k].key, key) == 0)
      return l->kv[k].value;
  return NULL;
}

/* The leaves of a value's sharding, in the order io_shape_leaves gives its
 * shape's (a single sharding applies to every leaf). */
static bool sharding_leaves(Arena *a, const Sharding *s, const Shape *shape,
                            int64_t ndev, int *next, PtrVec *out, Diag *d,
                            const char *what) {
  if (shape->et == ET_TUPLE) {
    for (int k = 0; k < shape->ntuple; k++)
      if (!sharding_leaves(a, s, shape->tuple[k], ndev, next, out, d, what))
        return false;
    return true;
  }
  if (!shape_is_array(shape)) {
    if (shape->et == ET_TOKEN)
      vec_push(out, NULL);
    return true;
  }
  const Sharding *leaf = s;
  if (s && s->kind == SHARD_TUPLE) {
    leaf = *next < s->ntuple ? s->tuple[*next] : NULL;
    (*next)++;
  }
  Tiling *t = NULL;
  char why[256];
  if (leaf && !tiling_from_sharding(a, leaf, shape->rank, ndev, &t, why, sizeof why)) {
    diag_error(d, (Loc){0}, "%s: %s", what, why);
    return false;
  }
  if (t && (t->manual || tiling_is_replicated(t)))
    t = NULL;
  vec_push(out, t);
  return true;
}

static bool global_shapes(Arena *a, const char *text, PtrVec *out, Diag *d,
                          const char *key) {
  Shape *s = hlo_parse_shape(a, text, d);
  if (!s) {
    diag_clear(d);
    diag_error(d, (Loc){0}, "the module's %s attribute is not a shape", key);
    return false;
  }
  io_shape_leaves(s, out);
  return true;
}

bool io_spmd(Arena *a, const HloModule *m, SpmdIo *io, Diag *d) {
  memset(io, 0, sizeof *io);
  io->ndev = m->num_partitions > 0 ? m->num_partitions : 1;
  const HloComp *e = m->entry;
  PtrVec pt = {0}, pg = {0}, rt = {0}, rg = {0};
  bool ok = true;
  for (int k = 0; ok && k < e->nparams; k++) {
    int next = 0;
    const HloInstr *p = e->params[k];
    ok = sharding_leaves(a, io->ndev > 1 && m->replica_count <= 1 ? p->sharding : NULL,
                         p->shape, io->ndev, &next, &pt, d,
                         "the sharding of an entry parameter");
  }
  const char *gp = module_attr(m, "xhlo.global_parameter_shapes");
  const char *gr = module_attr(m, "xhlo.global_result_shape");
  const char *rs = module_attr(m, "xhlo.result_sharding");
  if (ok && gp)
    ok = global_shapes(a, gp, &pg, d, "xhlo.global_parameter_shapes");
  if (ok && gp && pg.len != pt.len)
    ok = diag_error(d, (Loc){0}, "the module's xhlo.global_parameter_shapes has "
                    "%d leaves, its parameters %d", pg.len, pt.len);
  if (ok && gr && rs) {
    Shape *g = hlo_parse_shape(a, gr, d);
    Sharding *s = g ? hlo_parse_sharding(a, rs, d) : NULL;
    int next = 0;
    if (!s) {
      diag_clear(d);
      ok = diag_error(d, (Loc){0}, "the module's xhlo.global_result_shape or "
                      "xhlo.result_sharding cannot be read");
    } else {
      io_shape_leaves(g, &rg);
      ok = sharding_leaves(a, s, g, io->ndev, &next, &rt, d,
                           "the module's xhlo.result_sharding");
    }
  }
  if (ok) {
    io->nparams = pt.len;
    io->param_tiling = (Tiling **)vec_to_arena(a, &pt);
    io->param_global = pg.len ? (Shape **)vec_to_arena(a, &pg) : NULL;
    io->nresults = rg.len;
    io->result_tiling = (Tiling **)vec_to_arena(a, &rt);
    io->result_global = (Shape **)vec_to_arena(a, &rg);
  }
  vec_free(&pt);
  vec_free(&pg);
  vec_free(&rt);
  vec_free(&rg);
  return ok;
}

bool io_is_global_of(const Shape *s, const Shape *local, const Tiling *t) {
  if (!shape_is_array(s) || !shape_is_array(local) || s->et != local->et ||
      s->rank != local->rank || (t && t->rank != s->rank))
    return false;
  for (int k = 0; k < s->rank; k++) {
    int64_t n = t ? tiling_shard_dim(t, k, s->dims[k]) : s->dims[k];
    if (n != local->dims[k])
      return false;
  }
  return true;
}

/* Calls f for every element of a `dims` box: its row-major number, and
 * its index. */
static void unravel(int rank, const int64_t *dims, int64_t i, int64_t *idx) {
  for (int k = rank - 1; k >= 0; k--) {
    idx[k] = dims[k] ? i % dims[k] : 0;
    i = dims[k] ? i / dims[k] : 0;
  }
}

Literal *io_shard(Arena *a, const Literal *global, const Tiling *t,
                  int64_t dev, const Shape *local) {
  Literal *l = literal_new(a, shape_clone(a, local));
  int64_t n = shape_elements(local), b = et_bytes(local->et);
  const Shape *g = global->shape;
  int r = g->rank;
  int64_t idx[64];
  for (int64_t i = 0; i < n; i++) {
    unravel(r, local->dims, i, idx);
    int64_t gi = 0;
    bool in = true;
    for (int k = 0; k < r; k++) {
      int64_t x = idx[k] + (t ? tiling_offset(t, dev, k, g->dims[k]) : 0);
      in &= x < g->dims[k];
      gi = gi * g->dims[k] + x;
    }
    if (in)
      memcpy(l->data + i * b, global->data + gi * b, (size_t)b);
  }
  return l;
}

Literal *io_unshard(Arena *a, Literal *const *shards, const Tiling *t,
                    const Shape *global) {
  Literal *l = literal_new(a, shape_clone(a, global));
  int64_t n = shape_elements(global), b = et_bytes(global->et);
  int r = global->rank;
  int64_t ntiles = t ? tiling_num_tiles(t) : 1;
  /* the first device holding each tile */
  int64_t *holder = xmalloc(sizeof *holder * (size_t)ntiles);
  for (int64_t j = 0; j < ntiles; j++)
    holder[j] = -1;
  for (int64_t d = 0; t && d < t->ndev; d++)
    if (holder[tiling_tile_index(t, d)] < 0)
      holder[tiling_tile_index(t, d)] = d;
  if (!t)
    holder[0] = 0;
  int64_t idx[64], len[64];
  for (int k = 0; k < r; k++)
    len[k] = t ? tiling_shard_dim(t, k, global->dims[k]) : global->dims[k];
  for (int64_t i = 0; i < n; i++) {
    unravel(r, global->dims, i, idx);
    int64_t tile = 0, li = 0;
    for (int k = 0; k < r; k++) {
      int64_t c = idx[k] / len[k];
      tile = tile * (t ? t->tiles[k] : 1) + c;
      li = li * len[k] + (idx[k] - c * len[k]);
    }
    int64_t dev = holder[tile];
    memcpy(l->data + i * b, shards[dev]->data + li * b, (size_t)b);
  }
  free(holder);
  return l;
}
