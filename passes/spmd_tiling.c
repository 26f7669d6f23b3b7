/*
 * spmd_tiling.c - values' shardings (Shd: a tiling per array leaf) and the
 * operations the SPMD passes do on tilings: untiling a dimension, building
 * a tiling from dimensions of others, following a reshape, costing a
 * reshard, grouping devices for a collective.
 */
#include "spmd.h"

#include <stdlib.h>
#include <string.h>

Shd *shd_array(Arena *a, Tiling *t) {
  Shd *s = ARENA_NEW(a, Shd);
  s->t = t;
  return s;
}

Shd *shd_tuple(Arena *a, int n, Shd **el) {
  Shd *s = ARENA_NEW(a, Shd);
  s->n = n;
  s->el = ARENA_ARRAY(a, Shd *, n > 0 ? n : 1);
  for (int k = 0; k < n; k++)
    s->el[k] = el[k];
  return s;
}

static Shd *uniform(Arena *a, const Shape *s, int64_t ndev, bool manual) {
  if (s->et != ET_TUPLE) {
    int rank = shape_is_array(s) ? s->rank : 0;
    return shd_array(a, manual ? tiling_manual(a, rank, ndev)
                               : tiling_replicated(a, rank, ndev));
  }
  Shd *t = ARENA_NEW(a, Shd);
  t->n = s->ntuple;
  t->el = ARENA_ARRAY(a, Shd *, s->ntuple > 0 ? s->ntuple : 1);
  for (int k = 0; k < s->ntuple; k++)
    t->el[k] = uniform(a, s->tuple[k], ndev, manual);
  return t;
}

Shd *shd_replicated(Arena *a, const Shape *s, int64_t ndev) {
  return uniform(a, s, ndev, false);
}

Shd *shd_manual(Arena *a, const Shape *s, int64_t ndev) {
  return uniform(a, s, ndev, true);
}

/* last_tile_dims={manual, ...}: a value of a shard_map over some of the
 * mesh's axes (GSPMD's form), computed whole on every device of the others
 * as a manual value (its tiles over those only guide XLA's partitioner). */
static bool partly_manual(const Sharding *sh) {
  if (sh->kind != SHARD_TILED)
    return false;
  for (int k = 0; k < sh->nlast_tile_dims; k++)
    if (strcmp(sh->last_tile_dims[k], "manual") == 0)
      return true;
  return false;
}

/* Leaves of a tuple sharding are flattened, as XLA keeps them. */
static bool from_leaves(Arena *a, const Sharding *sh, int *next,
                        const Shape *s, int64_t ndev, Shd **out, char *why,
                        size_t nwhy) {
  if (s->et == ET_TUPLE) {
    Shd *t = ARENA_NEW(a, Shd);
    t->n = s->ntuple;
    t->el = ARENA_ARRAY(a, Shd *, s->ntuple > 0 ? s->ntuple : 1);
    for (int k = 0; k < s->ntuple; k++)
      if (!from_leaves(a, sh, next, s->tuple[k], ndev, &t->el[k], why, nwhy))
        return false;
    *out = t;
    return true;
  }
  const Sharding *leaf = sh;
  if (sh->kind == SHARD_TUPLE) {
    if (*next >= sh->ntuple) {
      snprintf(why, nwhy, "the tuple sharding has %d elements, fewer than "
               "the value's leaves", sh->ntuple);
      return false;
    }
    leaf = sh->tuple[(*next)++];
  }
  int rank = shape_is_array(s) ? s->rank : 0;
  Tiling *t;
  if (!shape_is_array(s))
    t = tiling_replicated(a, 0, ndev);
  else if (partly_manual(leaf))
    t = tiling_manual(a, rank, ndev);
  else if (!tiling_from_sharding(a, leaf, rank, ndev, &t, why, nwhy))
    return false;
  *out = shd_array(a, t);
  return true;
}

bool shd_from_sharding(Arena *a, const Sharding *sh, const Shape *s,
                       int64_t ndev, Shd **out, char *why, size_t nwhy) {
  int next = 0;
  if (sh->kind == SHARD_TUPLE && s->et != ET_TUPLE) {
    if (sh->ntuple != 1) {
      snprintf(why, nwhy, "a tuple sharding on an array");
      return false;
    }
    sh = sh->tuple[0];
  }
  if (!from_leaves(a, sh, &next, s, ndev, out, why, nwhy))
    return false;
  if (sh->kind == SHARD_TUPLE && next != sh->ntuple) {
    snprintf(why, nwhy, "the tuple sharding has %d elements, the value %d "
             "leaves", sh->ntuple, next);
    return false;
  }
  return true;
}

static void leaves(const Shd *s, PtrVec *v) {
  if (s->t) {
    vec_push(v, (void *)s);
    return;
  }
  for (int k = 0; k < s->n; k++)
    leaves(s->el[k], v);
}

Sharding *shd_to_sharding(Arena *a, const Shd *s) {
  if (s->t)
    return tiling_to_sharding(a, s->t);
  PtrVec v = {0};
  leaves(s, &v);
  Sharding *t = ARENA_NEW(a, Sharding);
  t->kind = SHARD_TUPLE;
  t->ntuple = v.len;
  t->tuple = ARENA_ARRAY(a, Sharding *, v.len > 0 ? v.len : 1);
  for (int k = 0; k < v.len; k++)
    t->tuple[k] = tiling_to_sharding(a, ((const Shd *)v.data[k])->t);
  vec_free(&v);
  return t;
}

bool shd_equal(const Shd *a, const Shd *b) {
  if (!a || !b)
    return a == b;
  if (a->t || b->t)
    return a->t && b->t && tiling_equal(a->t, b->t);
  if (a->n != b->n)
    return false;
  for (int k = 0; k < a->n; k++)
    if (!shd_equal(a->el[k], b->el[k]))
      return false;
  return true;
}

bool shd_any_manual(const Shd *s) {
  if (!s)
    return false;
  if (s->t)
    return s->t->manual;
  for (int k = 0; k < s->n; k++)
    if (shd_any_manual(s->el[k]))
      return true;
  return false;
}

Tiling *tiling_drop(Arena *a, const Tiling *t, int k) {
  Tiling *c = tiling_clone(a, t);
  if (t->manual || k < 0 || k >= t->rank)
    return c;
  c->tiles[k] = 1;
  for (int64_t d = 0; d < t->ndev; d++)
    c->coord[d * t->rank + k] = 0;
  return c;
}

Tiling *tiling_merge(Arena *a, int rank, int64_t ndev,
                     const Tiling *const *srcs, const int *which,
                     const int *dim) {
  Tiling *t = tiling_new(a, rank, ndev);
  for (int j = 0; j < rank; j++) {
    if (which[j] < 0)
      continue;
    const Tiling *s = srcs[which[j]];
    if (!s || s->manual || dim[j] < 0 || dim[j] >= s->rank)
      continue;
    t->tiles[j] = s->tiles[dim[j]];
    for (int64_t d = 0; d < ndev; d++)
      t->coord[d * rank + j] = s->coord[d * s->rank + dim[j]];
  }
  return tiling_valid(t) ? t : NULL;
}

Tiling *tiling_project(Arena *a, const Tiling *t, int rank,
                       const int *src_dim) {
  if (t->manual)
    return tiling_manual(a, rank, t->ndev);
  int which[64] = {0};
  for (int j = 0; j < rank && j < 64; j++)
    which[j] = src_dim[j] < 0 ? -1 : 0;
  Tiling *r = tiling_merge(a, rank, t->ndev, &t, which, src_dim);
  /* A projection of a valid tiling is valid unless a dimension repeats. */
  return r ? r : tiling_replicated(a, rank, t->ndev);
}

int tiling_tiled_dims(const Tiling *t) {
  int n = 0;
  for (int k = 0; k < t->rank; k++)
    n += t->tiles[k] > 1;
  return n;
}

/* The tiles of a group of dimensions [lo, hi) of t read as one tile index
 * over the group flattened: a prefix of dimensions each cut into single
 * elements, then one cut evenly (its tiles dividing its length), the rest
 * untiled.  Returns the number of tiles (1: none) and the last dimension
 * taken in *end; the dimensions past it that are tiled cannot be kept. */
static int64_t group_tiles(const Tiling *t, const Shape *s, int lo, int hi,
                           int *end) {
  int64_t n = 1;
  int k = lo;
  for (; k < hi; k++) {
    int64_t tk = t->tiles[k];
    if (tk == s->dims[k]) {
      n *= tk;
      continue;
    }
    if (tk > 1 && s->dims[k] % tk == 0) {
      n *= tk;
      k++;
    }
    break;
  }
  *end = k;
  return n;
}

void tiling_reshape(Arena *a, const Tiling *t, const Shape *from,
                    const Shape *to, Tiling **out, Tiling **src_eff) {
  Tiling *res = tiling_new(a, to->rank, t->ndev);
  Tiling *eff = tiling_clone(a, t);
  *out = res;
  *src_eff = eff;
  if (t->manual) {
    *out = tiling_manual(a, to->rank, t->ndev);
    return;
  }
  if (shape_elements(from) <= 0) {
    *src_eff = tiling_replicated(a, from->rank, t->ndev);
    return;
  }
  int i = 0, j = 0;
  while (i < from->rank || j < to->rank) {
    /* one group: dimensions on both sides whose sizes multiply alike */
    int gi = i, gj = j;
    int64_t pa = i < from->rank ? from->dims[i++] : 1;
    int64_t pb = j < to->rank ? to->dims[j++] : 1;
    while (pa != pb) {
      if (pa < pb && i < from->rank)
        pa *= from->dims[i++];
      else if (pb < pa && j < to->rank)
        pb *= to->dims[j++];
      else
        break;
    }
    int end;
    int64_t n = pa == pb ? group_tiles(t, from, gi, i, &end) : 1;
    if (pa != pb)
      end = gi;
    /* spread the n tiles over the result's dimensions the same way */
    int64_t left = n, tiles[64];
    int stop = gj;
    for (int k = gj; k < j; k++)
      tiles[k - gj] = 1;
    for (int k = gj; k < j && left > 1; k++, stop = k) {
      if (to->dims[k] % left == 0) {
        tiles[k - gj] = left;
        left = 1;
      } else if (left % to->dims[k] == 0) {
        tiles[k - gj] = to->dims[k];
        left /= to->dims[k];
      } else {
        break;
      }
    }
    bool keep = n > 1 && left == 1;
    for (int k = gi; k < i; k++)
      if ((!keep || k >= end) && eff->tiles[k] > 1) {
        Tiling *d = tiling_drop(a, eff, k);
        *eff = *d;
      }
    if (!keep)
      continue;
    for (int64_t d = 0; d < t->ndev; d++) {
      int64_t f = 0;
      for (int k = gi; k < end; k++)
        f = f * t->tiles[k] + t->coord[d * t->rank + k];
      for (int k = stop - 1; k >= gj; k--) {
        res->coord[d * res->rank + k] = f % tiles[k - gj];
        f /= tiles[k - gj];
      }
    }
    for (int k = gj; k < stop; k++)
      res->tiles[k] = tiles[k - gj];
  }
}

/* Every device's new shard along dimension k lies in its old one. */
static bool contained(const Tiling *from, const Tiling *to, int k, int64_t g) {
  if (from->tiles[k] == 1)
    return true;
  int64_t l = tiling_shard_dim(from, k, g), l2 = tiling_shard_dim(to, k, g);
  for (int64_t d = 0; d < from->ndev; d++) {
    int64_t a0 = from->coord[d * from->rank + k] * l;
    int64_t a1 = a0 + l < g ? a0 + l : g;
    int64_t b0 = to->coord[d * to->rank + k] * l2;
    int64_t b1 = b0 + l2 < g ? b0 + l2 : g;
    if (b0 < b1 && (b0 < a0 || b1 > a1))
      return false;
  }
  return true;
}

int tiling_a2a_dim(const Tiling *cur, const Tiling *to, int k,
                   const Shape *global) {
  int64_t n = cur->tiles[k];
  for (int j = 0; j < cur->rank; j++) {
    if (j == k || cur->tiles[j] != 1 || to->tiles[j] != n ||
        global->dims[j] % n != 0)
      continue;
    bool same = true;
    for (int64_t d = 0; d < cur->ndev && same; d++)
      same = to->coord[d * to->rank + j] == cur->coord[d * cur->rank + k];
    if (same)
      return j;
  }
  return -1;
}

int64_t tiling_reshard_cost(const Tiling *from, const Tiling *to,
                            const Shape *global) {
  int64_t bytes = et_bytes(global->et);
  if (from->manual || to->manual) {
    if (from->manual == to->manual)
      return 0;
    int64_t n = shape_elements(global);
    return n < 0 ? INT64_MAX / 4 : n * bytes;
  }
  /* the steps spmd_reshard takes: a collective-permute or all-to-alls move
   * a shard's bytes, all-gathers bring in the whole dimension */
  int64_t *src = xmalloc(sizeof *src * (size_t)(from->ndev > 0 ? from->ndev : 1));
  bool perm = tiling_permutation(from, to, src);
  free(src);
  if (perm) {
    int64_t n = bytes;
    for (int q = 0; q < global->rank && n < INT64_MAX / 8; q++)
      n *= tiling_shard_dim(from, q, global->dims[q]);
    return n;
  }
  Arena *a = arena_new();
  Tiling *cur = tiling_clone(a, from);
  int64_t cost = 0;
  for (int k = 0; k < global->rank; k++) {
    if (contained(cur, to, k, global->dims[k]))
      continue;
    int j = tiling_a2a_dim(cur, to, k, global);
    int64_t n = bytes;
    for (int q = 0; q < global->rank && n < INT64_MAX / 8; q++)
      n *= j < 0 && q == k ? global->dims[q]
                           : tiling_shard_dim(cur, q, global->dims[q]);
    cost = cost + n > INT64_MAX / 8 ? INT64_MAX / 8 : cost + n;
    if (j >= 0) {
      int64_t *col = ARENA_ARRAY(a, int64_t, cur->ndev);
      for (int64_t d = 0; d < cur->ndev; d++)
        col[d] = cur->coord[d * cur->rank + k];
      cur = tiling_drop(a, cur, k);
      cur->tiles[j] = to->tiles[j];
      for (int64_t d = 0; d < cur->ndev; d++)
        cur->coord[d * cur->rank + j] = col[d];
    } else {
      cur = tiling_drop(a, cur, k);
    }
  }
  arena_free(a);
  return cost;
}

bool tiling_permutation(const Tiling *from, const Tiling *to, int64_t *src) {
  if (from->manual || to->manual || from->rank != to->rank ||
      from->ndev != to->ndev || tiling_equal(from, to))
    return false;
  for (int k = 0; k < from->rank; k++)
    if (from->tiles[k] != to->tiles[k])
      return false;
  int64_t n = from->ndev;
  bool *used = xcalloc((size_t)n, sizeof *used);
  bool ok = true, moves = false;
  for (int64_t d = 0; d < n; d++) {
    src[d] = -1;
    if (tiling_tile_index(from, d) == tiling_tile_index(to, d)) {
      src[d] = d;
      used[d] = true;
    }
  }
  /* the others from a holder not yet sending (every tile has as many
   * holders under both tilings, so one is left) */
  for (int64_t d = 0; d < n && ok; d++) {
    if (src[d] >= 0)
      continue;
    int64_t want = tiling_tile_index(to, d);
    for (int64_t q = 0; q < n && src[d] < 0; q++)
      if (!used[q] && tiling_tile_index(from, q) == want)
        src[d] = q;
    ok = src[d] >= 0;
    if (ok)
      used[src[d]] = moves = true;
  }
  free(used);
  return ok && moves;
}

bool tiling_contained(const Tiling *from, const Tiling *to, int k, int64_t g) {
  return contained(from, to, k, g);
}

int tiling_groups(const Tiling *t, const bool *vary, int64_t **groups,
                  int *size) {
  int64_t sz = 1, nonvary = 1;
  for (int k = 0; k < t->rank; k++) {
    if (vary[k])
      sz *= t->tiles[k];
    else
      nonvary *= t->tiles[k];
  }
  *groups = NULL;
  *size = (int)sz;
  if (sz <= 1)
    return 0;
  int64_t ntiles = tiling_num_tiles(t), rep = t->ndev / ntiles;
  int64_t ngroups = nonvary * rep;
  int64_t *g = xcalloc((size_t)(ngroups * sz), sizeof *g);
  int64_t *seen = xcalloc((size_t)ntiles, sizeof *seen);
  for (int64_t d = 0; d < t->ndev; d++) {
    int64_t rank_in_tile = seen[tiling_tile_index(t, d)]++;
    int64_t gi = 0, pos = 0;
    for (int k = 0; k < t->rank; k++) {
      int64_t c = t->coord[d * t->rank + k];
      if (vary[k])
        pos = pos * t->tiles[k] + c;
      else
        gi = gi * t->tiles[k] + c;
    }
    g[(gi * rep + rank_in_tile) * sz + pos] = d;
  }
  free(seen);
  *groups = g;
  return (int)ngroups;
}
