/*
 * tiling.c - a sharding seen from the devices.
 *
 * An HLO sharding says how an array is cut into tiles and which devices hold
 * which tile: devices=[t0,t1,...(,R)] and a device list (explicit or iota),
 * in row-major order over the tile grid, the last R (last_tile_dim_replicate,
 * last_tile_dims={replicated}) being copies.  A Tiling turns that around:
 * for every device d of the module, the index of its tile along each
 * dimension (coord[d * rank + k]).  Devices with the same indices hold the
 * same tile.  The SPMD passes work on tilings (comparing two devices'
 * places, building collective groups), and xhlo-run cuts global arrays into
 * shards and puts results back together with them.
 *
 * A shard is ceil(dim / tiles) long in every tiled dimension; the last
 * shards of a dimension that does not divide are padded (XLA's layout of a
 * sharded array).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hlo.h"

Tiling *tiling_new(Arena *a, int rank, int64_t ndev) {
  Tiling *t = ARENA_NEW(a, Tiling);
  t->rank = rank;
  t->ndev = ndev;
  t->tiles = ARENA_ARRAY(a, int64_t, rank > 0 ? rank : 1);
  for (int k = 0; k < rank; k++)
    t->tiles[k] = 1;
  t->coord = ARENA_ARRAY(a, int64_t, ndev * (rank > 0 ? rank : 1));
  return t;
}

Tiling *tiling_replicated(Arena *a, int rank, int64_t ndev) {
  return tiling_new(a, rank, ndev);
}

Tiling *tiling_manual(Arena *a, int rank, int64_t ndev) {
  Tiling *t = tiling_new(a, rank, ndev);
  t->manual = true;
  return t;
}

Tiling *tiling_clone(Arena *a, const Tiling *t) {
  Tiling *c = tiling_new(a, t->rank, t->ndev);
  c->manual = t->manual;
  if (t->rank > 0) {
    memcpy(c->tiles, t->tiles, sizeof(int64_t) * (size_t)t->rank);
    memcpy(c->coord, t->coord, sizeof(int64_t) * (size_t)(t->ndev * t->rank));
  }
  return c;
}

static bool fail(char *why, size_t nwhy, const char *msg, long long v) {
  if (why && nwhy)
    snprintf(why, nwhy, msg, v);
  return false;
}

/* The device list of a tiled sharding, expanded (iota form included):
 * n entries. */
static int64_t *device_list(Arena *a, const Sharding *s, int64_t n) {
  int64_t *dev = ARENA_ARRAY(a, int64_t, n > 0 ? n : 1);
  if (!s->iota_devices) {
    memcpy(dev, s->devices.v, sizeof(int64_t) * (size_t)n);
    return dev;
  }
  /* transpose(reshape(iota(n), D), P): element j of the transposed array
   * (shape D[P[0]], D[P[1]], ...) is the iota value at the index whose
   * component P[q] is j's component q. */
  int m = s->iota_reshape_dims.n;
  const int64_t *D = s->iota_reshape_dims.v, *P = s->iota_transpose_perm.v;
  int64_t idx[64];
  for (int64_t j = 0; j < n; j++) {
    int64_t r = j;
    for (int q = m - 1; q >= 0; q--) {
      int64_t len = D[P[q]];
      idx[P[q]] = r % len;
      r /= len;
    }
    int64_t v = 0;
    for (int q = 0; q < m; q++)
      v = v * D[q] + idx[q];
    dev[j] = v;
  }
  return dev;
}

bool tiling_from_sharding(Arena *a, const Sharding *s, int rank, int64_t ndev,
                          Tiling **out, char *why, size_t nwhy) {
  switch (s->kind) {
  case SHARD_REPLICATED:
  case SHARD_MAXIMAL:   /* computed on every device: a copy everywhere */
  case SHARD_UNKNOWN:
    *out = tiling_replicated(a, rank, ndev);
    return true;
  case SHARD_MANUAL:
    *out = tiling_manual(a, rank, ndev);
    return true;
  case SHARD_UNREDUCED:
    return fail(why, nwhy, "unreduced shardings are not supported%.0lld", 0);
  case SHARD_TUPLE:
    return fail(why, nwhy, "a tuple sharding on an array%.0lld", 0);
  case SHARD_TILED:
    break;
  }
  int extra = s->last_tile_dim_replicate ? 1 : s->nlast_tile_dims;
  for (int k = 0; k < s->nlast_tile_dims; k++)
    if (strcmp(s->last_tile_dims[k], "replicated") != 0)
      return fail(why, nwhy, "shardings partly manual, unreduced or maximal "
                  "(last_tile_dims) are not supported%.0lld", 0);
  if (s->tile_dims.n != rank + extra)
    return fail(why, nwhy, "the sharding's tile assignment does not have the "
                "array's rank (%lld)", rank);
  if (s->tile_dims.n > 64 || (s->iota_devices && s->iota_reshape_dims.n > 64))
    return fail(why, nwhy, "a tile assignment of more than 64 dimensions%.0lld", 0);
  int64_t n = 1;
  for (int k = 0; k < s->tile_dims.n; k++)
    n *= s->tile_dims.v[k];
  if (n != ndev)
    return fail(why, nwhy, "the sharding's tile assignment has %lld devices, "
                "not the module's partitions", n);
  int64_t *dev = device_list(a, s, n);
  Tiling *t = tiling_new(a, rank, ndev);
  for (int k = 0; k < rank; k++)
    t->tiles[k] = s->tile_dims.v[k];
  uint8_t *seen = ARENA_ARRAY(a, uint8_t, ndev);
  for (int64_t j = 0; j < n; j++) {
    int64_t d = dev[j];
    if (d < 0 || d >= ndev)
      return fail(why, nwhy, "the sharding names device %lld, which the "
                  "module does not have", d);
    if (seen[d]++)
      return fail(why, nwhy, "the sharding names device %lld twice", d);
    /* unravel j over tile_dims; the replication dims come last */
    int64_t r = j;
    for (int k = s->tile_dims.n - 1; k >= 0; k--) {
      int64_t c = r % s->tile_dims.v[k];
      r /= s->tile_dims.v[k];
      if (k < rank)
        t->coord[d * rank + k] = c;
    }
  }
  *out = t;
  return true;
}

bool tiling_is_replicated(const Tiling *t) {
  if (t->manual)
    return false;
  for (int k = 0; k < t->rank; k++)
    if (t->tiles[k] != 1)
      return false;
  return true;
}

int64_t tiling_num_tiles(const Tiling *t) {
  int64_t n = 1;
  for (int k = 0; k < t->rank; k++)
    n *= t->tiles[k];
  return n;
}

bool tiling_equal(const Tiling *a, const Tiling *b) {
  if (a->rank != b->rank || a->ndev != b->ndev || a->manual != b->manual)
    return false;
  if (a->rank == 0)
    return true;
  return memcmp(a->tiles, b->tiles, sizeof(int64_t) * (size_t)a->rank) == 0 &&
         memcmp(a->coord, b->coord,
                sizeof(int64_t) * (size_t)(a->rank * a->ndev)) == 0;
}

/* The tile of device d as one row-major number over the tile grid. */
int64_t tiling_tile_index(const Tiling *t, int64_t d) {
  int64_t v = 0;
  for (int k = 0; k < t->rank; k++)
    v = v * t->tiles[k] + t->coord[d * t->rank + k];
  return v;
}

bool tiling_valid(const Tiling *t) {
  if (t->manual)
    return true;
  int64_t n = tiling_num_tiles(t);
  if (n <= 0 || t->ndev % n != 0)
    return false;
  for (int64_t d = 0; d < t->ndev; d++)
    for (int k = 0; k < t->rank; k++)
      if (t->coord[d * t->rank + k] < 0 ||
          t->coord[d * t->rank + k] >= t->tiles[k])
        return false;
  int64_t *count = xcalloc((size_t)n, sizeof *count);
  for (int64_t d = 0; d < t->ndev; d++)
    count[tiling_tile_index(t, d)]++;
  bool ok = true;
  for (int64_t j = 0; j < n && ok; j++)
    ok = count[j] == t->ndev / n;
  free(count);
  return ok;
}

Sharding *tiling_to_sharding(Arena *a, const Tiling *t) {
  Sharding *s = ARENA_NEW(a, Sharding);
  if (t->manual) {
    s->kind = SHARD_MANUAL;
    return s;
  }
  int64_t n = tiling_num_tiles(t);
  if (n == 1 || t->ndev <= 1) {
    s->kind = SHARD_REPLICATED;
    return s;
  }
  int64_t rep = t->ndev / n;
  s->kind = SHARD_TILED;
  s->last_tile_dim_replicate = rep > 1;
  s->tile_dims.n = t->rank + (rep > 1);
  s->tile_dims.v = ARENA_ARRAY(a, int64_t, s->tile_dims.n);
  for (int k = 0; k < t->rank; k++)
    s->tile_dims.v[k] = t->tiles[k];
  if (rep > 1)
    s->tile_dims.v[t->rank] = rep;
  /* Tile by tile, each tile's devices in increasing order. */
  int64_t *fill = xcalloc((size_t)n, sizeof *fill);
  int64_t *dev = ARENA_ARRAY(a, int64_t, t->ndev);
  for (int64_t d = 0; d < t->ndev; d++) {
    int64_t j = tiling_tile_index(t, d);
    dev[j * rep + fill[j]++] = d;
  }
  free(fill);
  bool iota = true;
  for (int64_t d = 0; d < t->ndev && iota; d++)
    iota = dev[d] == d;
  if (iota) {
    s->iota_devices = true;
    s->iota_reshape_dims.n = 1;
    s->iota_reshape_dims.v = ARENA_ARRAY(a, int64_t, 1);
    s->iota_reshape_dims.v[0] = t->ndev;
    s->iota_transpose_perm.n = 1;
    s->iota_transpose_perm.v = ARENA_ARRAY(a, int64_t, 1);
  } else {
    s->devices.n = (int)t->ndev;
    s->devices.v = dev;
  }
  return s;
}

int64_t tiling_shard_dim(const Tiling *t, int k, int64_t global) {
  if (t->manual)
    return global;
  return (global + t->tiles[k] - 1) / t->tiles[k];
}

Shape *tiling_shard_shape(Arena *a, const Tiling *t, const Shape *global) {
  Shape *s = shape_clone(a, global);
  for (int k = 0; k < s->rank && k < t->rank; k++)
    s->dims[k] = tiling_shard_dim(t, k, global->dims[k]);
  return s;
}

int64_t tiling_offset(const Tiling *t, int64_t d, int k, int64_t global) {
  if (t->manual)
    return 0;
  return t->coord[d * t->rank + k] * tiling_shard_dim(t, k, global);
}
