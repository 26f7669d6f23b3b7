/*
 * device_counts.c - how many devices a module runs on.
 *
 * XLA takes replica_count and num_partitions from the module's config,
 * which its runners fill from their flags (--num_replicas,
 * --num_partitions) and JAX from its compile options; the header only
 * records them.  jax.jit(f).lower(...).as_text() of a sharded program
 * (NamedSharding, shard_map) writes its Shardy mesh and its shardings but
 * no num_partitions.  Without one in the header or on the command line,
 * the partitions are the devices the module names: the largest Shardy mesh
 * (the product of its axis sizes: xla.sdy.meshes, or a mesh written inline
 * in an xla.sdy.* attribute), else the devices its tiled shardings list,
 * when they all list the same number.
 */
#include <stdlib.h>
#include <string.h>

#include "hlo.h"

enum { MAX_DEVICES = 1 << 20 };

/* The devices of the mesh whose axis list starts at p (after "mesh<["):
 * the product of the sizes of `"name"=size` items up to ']'; 0 when it
 * does not read so. */
static int64_t mesh_devices(const char *p) {
  int64_t n = 1;
  for (;;) {
    while (*p == ' ')
      p++;
    if (*p == ']')
      return n;
    /* an axis name, quoted (the quotes maybe escaped) or bare */
    while (*p && *p != '=' && *p != ']' && *p != ',' && *p != '>')
      p++;
    if (*p != '=')
      return 0;
    char *end;
    long long v = strtoll(p + 1, &end, 10);
    if (end == p + 1 || v < 1 || v > MAX_DEVICES || n * v > MAX_DEVICES)
      return 0;
    n *= v;
    p = end;
    while (*p == ' ')
      p++;
    if (*p == ',')
      p++;
    else if (*p != ']')
      return 0;
  }
}

/* The most devices a mesh in text names (0: none). */
static int64_t text_mesh_devices(const char *text) {
  int64_t best = 0;
  for (const char *p = text; p && (p = strstr(p, "mesh<[")) != NULL; p += 6) {
    int64_t n = mesh_devices(p + 6);
    if (n > best)
      best = n;
  }
  return best;
}

static int64_t attrs_mesh_devices(const KVList *l, bool sdy_only) {
  int64_t best = 0;
  for (int k = 0; l && k < l->n; k++) {
    if (sdy_only && strncmp(l->kv[k].key, "xla.sdy.", 8) != 0)
      continue;
    int64_t n = l->kv[k].value ? text_mesh_devices(l->kv[k].value) : 0;
    if (n > best)
      best = n;
  }
  return best;
}

/* The devices a tiled sharding lists (the most of a tuple's), else 0. */
static int64_t sharding_devices(const Sharding *s) {
  if (!s)
    return 0;
  if (s->kind == SHARD_TUPLE) {
    int64_t best = 0;
    for (int k = 0; k < s->ntuple; k++) {
      int64_t n = sharding_devices(s->tuple[k]);
      if (n > best)
        best = n;
    }
    return best;
  }
  if (s->kind != SHARD_TILED)
    return 0;
  if (!s->iota_devices && s->devices.n > 0)
    return s->devices.n;
  int64_t n = 1;
  for (int k = 0; k < s->tile_dims.n; k++) {
    if (s->tile_dims.v[k] < 1 || n * s->tile_dims.v[k] > MAX_DEVICES)
      return 0;
    n *= s->tile_dims.v[k];
  }
  return n;
}

/* The most devices a Shardy mesh of m names, and the fewest and most a
 * tiled sharding of m lists (0: none). */
static void devices_named(const HloModule *m, int64_t *mesh, int64_t *lo,
                          int64_t *hi) {
  *mesh = attrs_mesh_devices(m->frontend_attrs, false);
  *lo = *hi = 0;
  for (int ci = 0; ci < m->ncomps; ci++) {
    const HloComp *c = m->comps[ci];
    for (int k = 0; k < c->ninstrs; k++) {
      const HloInstr *i = c->instrs[k];
      int64_t n = attrs_mesh_devices(i->frontend_attrs, true);
      if (n > *mesh)
        *mesh = n;
      n = sharding_devices(i->sharding);
      if (n > 1) {
        *lo = *lo == 0 || n < *lo ? n : *lo;
        *hi = n > *hi ? n : *hi;
      }
    }
  }
}

bool hlo_set_device_counts(HloModule *m, int64_t replicas, int64_t partitions,
                           StrBuf *note, Diag *d) {
  if (replicas > 0) {
    if (m->replica_count > 0 && m->replica_count != replicas)
      return diag_error(d, m->loc, "--num-replicas=%lld, but the module's "
                        "header has replica_count=%lld",
                        (long long)replicas, (long long)m->replica_count);
    m->replica_count = replicas;
  }
  if (partitions > 0) {
    if (m->num_partitions > 0 && m->num_partitions != partitions)
      return diag_error(d, m->loc, "--num-partitions=%lld, but the module's "
                        "header has num_partitions=%lld",
                        (long long)partitions, (long long)m->num_partitions);
    m->num_partitions = partitions;
    return true;
  }
  if (m->num_partitions > 0)
    return true;
  int64_t mesh, lo, hi;
  devices_named(m, &mesh, &lo, &hi);
  if (mesh > 1) {
    m->num_partitions = mesh;
    sb_printf(note, "the header gives no num_partitions: %lld, the devices of "
              "the module's Shardy mesh (--num-partitions=N sets it)",
              (long long)mesh);
  } else if (hi > 1 && lo == hi) {
    m->num_partitions = hi;
    sb_printf(note, "the header gives no num_partitions: %lld, the devices "
              "the module's shardings list (--num-partitions=N sets it)",
              (long long)hi);
  } else if (hi > 1) {
    sb_printf(note, "the header gives no num_partitions and the module's "
              "shardings list from %lld to %lld devices: one partition "
              "(--num-partitions=N sets it)", (long long)lo, (long long)hi);
  }
  return true;
}
