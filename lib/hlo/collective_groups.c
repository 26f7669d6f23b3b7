/*
 * collective_groups.c - who takes part in a collective.
 *
 * XLA's rules (collective_ops_utils): channel_id and use_global_device_ids
 * choose what the ids in replica_groups mean (CollectiveOpGroupMode), and
 * the group holding the current device, read in that meaning, lists the
 * participants in order.  Empty replica groups mean one group of every
 * replica (or every partition, cross-partition).  The iota form
 * [G,S]<=[dims]T(perm) is iota(prod(dims)) reshaped to dims, transposed by
 * perm and read as G rows of S ids.  Devices are named by flattened id,
 * replica * partitions + partition.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hlo.h"

bool hlo_collective_has_global_ids(HloOp op) {
  switch (op) {
  case HLO_ALL_GATHER: case HLO_ALL_GATHER_START: case HLO_ALL_REDUCE:
  case HLO_ALL_REDUCE_START: case HLO_REDUCE_SCATTER:
  case HLO_COLLECTIVE_REDUCE:
    return true;
  default:
    return false;
  }
}

bool hlo_collective_group_mode(const HloInstr *i, CollectiveGroupMode *mode) {
  if (!i->has_channel_id) {
    *mode = CGM_CROSS_REPLICA;
    return !i->use_global_device_ids;
  }
  if (!hlo_collective_has_global_ids(i->op))
    *mode = CGM_CROSS_PARTITION;
  else
    *mode = i->use_global_device_ids ? CGM_FLATTENED_ID
                                     : CGM_CROSS_REPLICA_AND_PARTITION;
  return true;
}

const char *hlo_collective_group_mode_name(CollectiveGroupMode mode) {
  switch (mode) {
  case CGM_CROSS_REPLICA: return "cross-replica";
  case CGM_CROSS_PARTITION: return "cross-partition";
  case CGM_CROSS_REPLICA_AND_PARTITION: return "cross-replica-and-partition";
  case CGM_FLATTENED_ID: return "flattened-id";
  }
  return "?";
}

/* The iota form: G groups of S ids. */
static int expand_iota(const ReplicaGroups *g, int64_t ***groups,
                       int64_t **sizes) {
  int64_t ng = g->iota_group_shape.v[0], gs = g->iota_group_shape.v[1];
  int rank = g->iota_reshape_dims.n;
  const int64_t *dims = g->iota_reshape_dims.v;
  int64_t tdims[16], perm[16];
  if (rank > 16 || ng <= 0 || gs <= 0 || ng > INT32_MAX) return 0;
  for (int k = 0; k < rank; k++) {
    perm[k] = g->iota_transpose_perm.n ? g->iota_transpose_perm.v[k] : k;
    if (perm[k] < 0 || perm[k] >= rank) return 0;
    tdims[k] = dims[perm[k]];
  }
  int64_t **gr = xcalloc((size_t)ng, sizeof *gr);
  int64_t *sz = xcalloc((size_t)ng, sizeof *sz);
  for (int64_t o = 0; o < ng * gs; o++) {
    /* o's index in the transposed array, then the source element's value */
    int64_t idx[16], rest = o, src = 0;
    for (int k = rank - 1; k >= 0; k--) {
      idx[k] = rest % tdims[k];
      rest /= tdims[k];
    }
    int64_t sidx[16];
    for (int k = 0; k < rank; k++) sidx[perm[k]] = idx[k];
    for (int k = 0; k < rank; k++) src = src * dims[k] + sidx[k];
    int64_t gi = o / gs;
    if (!gr[gi]) gr[gi] = xcalloc((size_t)gs, sizeof **gr);
    gr[gi][sz[gi]++] = src;
  }
  *groups = gr;
  *sizes = sz;
  return (int)ng;
}

int hlo_replica_groups_expand(const ReplicaGroups *g, int64_t ***groups,
                              int64_t **sizes) {
  *groups = NULL;
  *sizes = NULL;
  if (!g) return 0;
  if (g->iota) {
    if (g->iota_group_shape.n != 2) return 0;
    return expand_iota(g, groups, sizes);
  }
  if (g->ngroups <= 0) return 0;
  int64_t **gr = xcalloc((size_t)g->ngroups, sizeof *gr);
  int64_t *sz = xcalloc((size_t)g->ngroups, sizeof *sz);
  for (int k = 0; k < g->ngroups; k++) {
    sz[k] = g->groups[k].n;
    gr[k] = xcalloc((size_t)sz[k] + 1, sizeof **gr);
    if (sz[k]) memcpy(gr[k], g->groups[k].v, (size_t)sz[k] * sizeof **gr);
  }
  *groups = gr;
  *sizes = sz;
  return g->ngroups;
}

void hlo_replica_groups_free(int n, int64_t **groups, int64_t *sizes) {
  for (int k = 0; k < n; k++) free(groups[k]);
  free(groups);
  free(sizes);
}

int hlo_group_participants(CollectiveGroupMode mode, int ng,
                           int64_t *const *groups, const int64_t *sizes,
                           int64_t replicas, int64_t partitions,
                           int64_t replica, int64_t partition,
                           int64_t **devices, char *why, size_t nwhy) {
  *devices = NULL;
  /* the id this device has in the groups' meaning, and how many there are */
  int64_t me = mode == CGM_CROSS_PARTITION ? partition
             : mode == CGM_FLATTENED_ID ? replica * partitions + partition
             : replica;
  int64_t nids = mode == CGM_CROSS_PARTITION ? partitions
               : mode == CGM_FLATTENED_ID ? replicas * partitions : replicas;
  const char *idname = mode == CGM_CROSS_PARTITION ? "partition"
                     : mode == CGM_FLATTENED_ID ? "device" : "replica";
  const int64_t *ids = NULL;
  int64_t n = 0, *all = NULL;
  if (ng == 0) {
    if (mode == CGM_FLATTENED_ID) {
      snprintf(why, nwhy, "use_global_device_ids=true needs replica groups");
      return -1;
    }
    all = xcalloc((size_t)nids, sizeof *all);
    for (int64_t k = 0; k < nids; k++) all[k] = k;
    ids = all;
    n = nids;
  } else {
    for (int g = 0; g < ng && !ids; g++)
      for (int64_t k = 0; k < sizes[g]; k++)
        if (groups[g][k] == me) {
          ids = groups[g];
          n = sizes[g];
          break;
        }
  }
  int64_t count = -1;
  if (!ids) {
    snprintf(why, nwhy, "the replica groups do not hold %s %lld (%s)", idname,
             (long long)me, hlo_collective_group_mode_name(mode));
    goto out;
  }
  int64_t per = mode == CGM_CROSS_REPLICA_AND_PARTITION ? partitions : 1;
  int64_t *dev = xcalloc((size_t)(n * per) + 1, sizeof *dev);
  int64_t kept = 0;
  for (int64_t k = 0; k < n; k++) {
    /* a member the run does not have takes no part, as on XLA's CPU
     * runtime (an all-reduce over {0,1} on one replica is the identity) */
    if (ids[k] < 0 || ids[k] >= nids)
      continue;
    for (int64_t q = 0; q < per; q++) {
      int64_t d;
      switch (mode) {
      case CGM_CROSS_REPLICA: d = ids[k] * partitions + partition; break;
      case CGM_CROSS_PARTITION: d = replica * partitions + ids[k]; break;
      case CGM_CROSS_REPLICA_AND_PARTITION: d = ids[k] * partitions + q; break;
      default: d = ids[k]; break;
      }
      dev[kept * per + q] = d;
    }
    kept++;
  }
  *devices = dev;
  count = kept * per;
out:
  free(all);
  return count;
}

int hlo_collective_participants(const HloInstr *i, int64_t replicas,
                                int64_t partitions, int64_t replica,
                                int64_t partition, int64_t **devices,
                                char *why, size_t nwhy) {
  *devices = NULL;
  CollectiveGroupMode mode;
  if (!hlo_collective_group_mode(i, &mode)) {
    snprintf(why, nwhy, "use_global_device_ids=true needs a channel_id");
    return -1;
  }
  int64_t **groups, *sizes;
  int ng = hlo_replica_groups_expand(i->replica_groups, &groups, &sizes);
  int n = hlo_group_participants(mode, ng, groups, sizes, replicas, partitions,
                                 replica, partition, devices, why, nwhy);
  hlo_replica_groups_free(ng, groups, sizes);
  return n;
}

int hlo_async_done_first_leaf(const HloInstr *start, const HloInstr *done) {
  int ns = shape_leaf_count(start->shape), nd = shape_leaf_count(done->shape);
  int first;
  if (start->op == HLO_ALL_REDUCE_START || !shape_is_tuple(start->shape) ||
      start->shape->ntuple < 2)
    first = ns - nd;
  else
    first = shape_leaf_count(start->shape->tuple[0]);
  return first >= 0 && first + nd <= ns ? first : -1;
}
