/*
 * shape_inference_collective.c - all-reduce, all-gather, reduce-scatter,
 * all-to-all, ragged-all-to-all, collective-permute, collective-broadcast,
 * collective-reduce and their -start/-done forms.
 *
 * As in XLA's verifier, all-gather and reduce-scatter take their shard count
 * from the declared shape (output size over input size, or the reverse) and
 * check it against the group size the replica groups give when that is known.
 * The replica groups themselves are checked as XLA's CheckReplicaGroups does.
 *
 * Forms XLA's parser takes that older or framework dumps use: a scalar
 * operand of all-gather or reduce-scatter (PyTorch/XLA pairs a value with a
 * scalar) has no dimension to gather or scatter and keeps its shape; the old
 * all-reduce-start of one operand shaped (operand, result), whose
 * all-reduce-done gives the result; all-gather-start and
 * collective-permute-start of one operand shaped as their result (XLA's
 * older exporter), whose -done forwards it; an all-to-all without dimensions= may
 * have fewer operands than its groups have members (each operand is passed
 * on as a whole).
 */
#include "shape_inference_internal.h"

#include <string.h>

static bool is_array(const Shape *s) {
  return s->et != ET_TUPLE && si_et_array(s->et);
}

/* XLA's GetCollectiveOpGroupMode (collective_groups.c); a channel-less
 * use_global_device_ids=true is refused by check_replica_groups. */
static CollectiveGroupMode group_mode(const HloInstr *i) {
  CollectiveGroupMode m;
  if (!hlo_collective_group_mode(i, &m))
    return CGM_CROSS_REPLICA;
  return m;
}

static const HloModule *module_of(const HloInstr *i) {
  return i->parent ? i->parent->module : NULL;
}

static int64_t replica_count(const HloInstr *i) {
  const HloModule *m = module_of(i);
  return m && m->replica_count > 0 ? m->replica_count : 1;
}

static int64_t partition_count(const HloInstr *i) {
  const HloModule *m = module_of(i);
  return m && m->num_partitions > 0 ? m->num_partitions : 1;
}

/* Number of groups and the size of the first, or false when empty. */
static bool first_group_size(const ReplicaGroups *rg, int64_t *size) {
  if (!rg)
    return false;
  if (rg->iota) {
    if (rg->iota_group_shape.n != 2)
      return false;
    *size = rg->iota_group_shape.v[1];
    return true;
  }
  if (rg->ngroups == 0)
    return false;
  *size = rg->groups[0].n;
  return true;
}

int64_t si_subgroup_size(const HloInstr *i) {
  int64_t size;
  bool known = first_group_size(i->replica_groups, &size);
  switch (group_mode(i)) {
  case CGM_CROSS_REPLICA:
    return known ? size : replica_count(i);
  case CGM_CROSS_REPLICA_AND_PARTITION:
    return (known ? size : replica_count(i)) * partition_count(i);
  case CGM_CROSS_PARTITION:
    return known ? size : partition_count(i);
  case CGM_FLATTENED_ID:
    return known ? size : 1;
  }
  return 1;
}

static bool check_replica_groups(SiCtx *c, bool uniform) {
  const HloInstr *i = c->i;
  const ReplicaGroups *rg = i->replica_groups;
  CollectiveGroupMode mode = group_mode(i);
  if (!i->has_channel_id && i->use_global_device_ids) {
    si_fail(c, "use_global_device_ids=true needs a channel_id");
    return false;
  }
  int64_t n = 0;
  if (rg && rg->iota) {
    if (rg->iota_group_shape.n != 2 || rg->iota_group_shape.v[0] <= 0 ||
        rg->iota_group_shape.v[1] <= 0) {
      si_fail(c, "iota replica groups need a [groups,size] shape");
      return false;
    }
    n = rg->iota_group_shape.v[0] * rg->iota_group_shape.v[1];
  } else if (rg && rg->ngroups > 0) {
    for (int g = 0; g < rg->ngroups; g++) {
      if (rg->groups[g].n == 0) {
        si_fail(c, "replica group %d is empty", g);
        return false;
      }
      n += rg->groups[g].n;
    }
    uint8_t *seen = ARENA_ARRAY(c->a, uint8_t, n);
    for (int g = 0; g < rg->ngroups; g++) {
      for (int k = 0; k < rg->groups[g].n; k++) {
        int64_t id = rg->groups[g].v[k];
        if (id < 0 || id >= n) {
          si_fail(c, "replica %lld is out of range [0, %lld) in the replica "
                  "groups", (long long)id, (long long)n);
          return false;
        }
        if (seen[id]) {
          si_fail(c, "replica %lld appears twice in the replica groups",
                  (long long)id);
          return false;
        }
        seen[id] = 1;
      }
      if (uniform && rg->groups[g].n != rg->groups[0].n) {
        si_fail(c, "replica groups must all have the same size");
        return false;
      }
    }
  } else {
    if (mode == CGM_FLATTENED_ID) {
      si_fail(c, "replica groups must be given with use_global_device_ids");
      return false;
    }
    return true;
  }
  int64_t rc = replica_count(i), pc = partition_count(i), want = 1;
  const char *what = "replicas";
  switch (mode) {
  case CGM_CROSS_REPLICA: case CGM_CROSS_REPLICA_AND_PARTITION:
    want = rc;
    break;
  case CGM_CROSS_PARTITION:
    want = pc, what = "partitions";
    break;
  case CGM_FLATTENED_ID:
    want = rc * pc, what = "replicas times partitions";
    break;
  }
  if (want != 1 && n != want) {
    si_fail(c, "replica groups name %lld devices but there are %lld %s",
            (long long)n, (long long)want, what);
    return false;
  }
  return true;
}

static bool all_arrays(SiCtx *c) {
  for (int k = 0; k < c->i->nops; k++) {
    if (!is_array(si_op(c, k))) {
      si_fail(c, "operand %d must be an array, not %s", k,
              si_str(c, si_op(c, k)));
      return false;
    }
  }
  return true;
}

/* The operand shapes, or a tuple of them when there are several. */
static Shape *operands_or_tuple(SiCtx *c, int n) {
  if (n == 1)
    return si_result(c, si_op(c, 0));
  Shape **el = ARENA_ARRAY(c->a, Shape *, n + 1);
  for (int k = 0; k < n; k++)
    el[k] = si_result(c, si_op(c, k));
  return shape_tuple(c->a, n, el);
}

/* Element k of a declared single-or-tuple result. */
static const Shape *declared_part(const Shape *d, int n, int k) {
  if (n == 1)
    return d;
  if (d->et != ET_TUPLE || d->ntuple != n)
    return NULL;
  return d->tuple[k];
}

/* The first operand that is not a scalar, or -1. */
static int first_nonscalar(SiCtx *c) {
  for (int k = 0; k < c->i->nops; k++)
    if (si_op(c, k)->rank > 0)
      return k;
  return -1;
}

static bool scatter_dimension(SiCtx *c, int64_t *d) {
  if (c->i->dims.n != 1) {
    si_fail(c, "needs exactly one dimension in dimensions=, has %d",
            c->i->dims.n);
    return false;
  }
  *d = c->i->dims.v[0];
  for (int k = 0; k < c->i->nops; k++) {
    if (si_op(c, k)->rank == 0 && *d >= 0)
      continue; /* a scalar passes through */
    if (*d < 0 || *d >= si_op(c, k)->rank) {
      si_fail(c, "dimension %lld is out of range for operand %d %s",
              (long long)*d, k, si_str(c, si_op(c, k)));
      return false;
    }
  }
  return true;
}

static int64_t ceil_div(int64_t x, int64_t y) { return y ? (x + y - 1) / y : 0; }

/* all-gather: dimension d of each operand grows by the shard count.
 * `declared` is the gathered part of the declared shape. */
static Shape *all_gather(SiCtx *c, const Shape *declared) {
  int64_t d;
  if (!all_arrays(c) || !check_replica_groups(c, true) ||
      !scatter_dimension(c, &d))
    return NULL;
  int n = c->i->nops, r = first_nonscalar(c);
  if (r < 0)
    return operands_or_tuple(c, n);
  const Shape *out0 = declared ? declared_part(declared, n, r) : NULL;
  if (!out0 || !is_array(out0) || d >= out0->rank)
    return si_fail(c, "declared result does not fit %d gathered operands", n);
  int64_t in0 = si_op(c, r)->dims[d];
  int64_t shards = in0 > 0 ? ceil_div(out0->dims[d], in0) : 1;
  int64_t group = si_subgroup_size(c->i);
  if (group != 1 && shards != group)
    return si_fail(c, "the result gathers %lld shards but the replica groups "
                   "have %lld members", (long long)shards, (long long)group);
  Shape **el = ARENA_ARRAY(c->a, Shape *, n);
  for (int k = 0; k < n; k++) {
    Shape *s = si_copy(c->a, si_op(c, k));
    if (s->rank > 0 && s->dims[d] >= 0) {
      __int128 v = (__int128)s->dims[d] * shards;
      if (v > INT64_MAX)
        return si_fail(c, "gathered dimension overflows");
      s->dims[d] = (int64_t)v;
    }
    el[k] = s;
  }
  return n == 1 ? el[0] : shape_tuple(c->a, n, el);
}

static Shape *reduce_scatter(SiCtx *c) {
  int64_t d;
  if (!all_arrays(c) || !check_replica_groups(c, true) ||
      !scatter_dimension(c, &d))
    return NULL;
  if (c->i->ncalled != 1)
    return si_fail(c, "needs a to_apply reducer");
  int n = c->i->nops, r = first_nonscalar(c);
  if (r < 0)
    return operands_or_tuple(c, n);
  const Shape *out0 = declared_part(c->i->shape, n, r);
  if (!out0 || !is_array(out0) || d >= out0->rank)
    return si_fail(c, "declared result does not fit %d operands", n);
  int64_t shards = out0->dims[d] > 0
                       ? ceil_div(si_op(c, r)->dims[d], out0->dims[d])
                       : si_subgroup_size(c->i);
  int64_t group = si_subgroup_size(c->i);
  if (group != 1 && shards != group)
    return si_fail(c, "the result scatters into %lld shards but the replica "
                   "groups have %lld members", (long long)shards,
                   (long long)group);
  if (shards <= 0)
    return si_fail(c, "cannot tell the shard count");
  Shape **el = ARENA_ARRAY(c->a, Shape *, n);
  for (int k = 0; k < n; k++) {
    Shape *s = si_copy(c->a, si_op(c, k));
    if (s->rank > 0 && s->dims[d] >= 0) {
      if (s->dims[d] % shards)
        return si_fail(c, "operand %d dimension %lld (size %lld) is not a "
                       "multiple of the %lld shards", k, (long long)d,
                       (long long)s->dims[d], (long long)shards);
      s->dims[d] /= shards;
    }
    el[k] = s;
  }
  return n == 1 ? el[0] : shape_tuple(c->a, n, el);
}

static Shape *all_to_all(SiCtx *c) {
  const HloInstr *i = c->i;
  if (!all_arrays(c) || !check_replica_groups(c, true))
    return NULL;
  int64_t split = si_subgroup_size(i);
  if (i->has_dims && i->dims.n > 0) {
    if (i->dims.n != 1 || i->nops != 1)
      return si_fail(c, "with dimensions= takes one operand and one "
                     "dimension");
    const Shape *s = si_op(c, 0);
    int64_t d = i->dims.v[0];
    if (d < 0 || d >= s->rank)
      return si_fail(c, "split dimension %lld is out of range for %s",
                     (long long)d, si_str(c, s));
    if (s->dims[d] >= 0 && split > 0 && s->dims[d] % split)
      return si_fail(c, "split dimension %lld (size %lld) is not a multiple "
                     "of the %lld group members", (long long)d,
                     (long long)s->dims[d], (long long)split);
    return si_result(c, s); /* split and concat on the same dimension */
  }
  if (split != 1 && i->nops > split)
    return si_fail(c, "has %d operands but the replica groups have %lld "
                   "members", i->nops, (long long)split);
  if (i->nops == 1 && c->i->shape->et != ET_TUPLE)
    return si_result(c, si_op(c, 0));
  for (int k = 1; k < i->nops; k++)
    if (!si_compatible(si_op(c, 0), si_op(c, k), 0))
      return si_fail(c, "operands differ: %s and %s", si_str(c, si_op(c, 0)),
                     si_str(c, si_op(c, k)));
  Shape **el = ARENA_ARRAY(c->a, Shape *, i->nops);
  for (int k = 0; k < i->nops; k++)
    el[k] = si_result(c, si_op(c, k));
  return shape_tuple(c->a, i->nops, el);
}

static bool check_pairs(SiCtx *c) {
  const HloInstr *i = c->i;
  for (int k = 0; k < i->npairs; k++) {
    for (int side = 0; side < 2; side++) {
      int64_t v = i->source_target_pairs[k][side];
      if (v < 0) {
        si_fail(c, "%s %lld in source_target_pairs is negative",
                side ? "target" : "source", (long long)v);
        return false;
      }
      for (int j = 0; j < k; j++) {
        if (i->source_target_pairs[j][side] == v) {
          si_fail(c, "%s %lld appears twice in source_target_pairs",
                  side ? "target" : "source", (long long)v);
          return false;
        }
      }
    }
  }
  return true;
}

/* In-place collective-permute: (input, output, input offsets, output
 * offsets), the offsets being tuples. */
static bool inplace_permute(const SiCtx *c) {
  return c->i->nops == 4 && si_op(c, 2)->et == ET_TUPLE;
}

static Shape *collective_permute(SiCtx *c) {
  if (!check_pairs(c))
    return NULL;
  if (inplace_permute(c))
    return si_result(c, si_op(c, 1));
  if (!all_arrays(c))
    return NULL;
  return operands_or_tuple(c, c->i->nops);
}

static Shape *collective_permute_start(SiCtx *c) {
  const Shape *d = c->i->shape;
  if (!check_pairs(c))
    return NULL;
  Shape *x, *y;
  if (d->et != ET_TUPLE && c->i->nops == 1) {
    if (!all_arrays(c))
      return NULL;
    return si_result(c, si_op(c, 0)); /* the older form: shaped as the result */
  }
  if (inplace_permute(c)) {
    x = si_result(c, si_op(c, 0));
    y = si_result(c, si_op(c, 1));
  } else {
    if (!all_arrays(c))
      return NULL;
    x = operands_or_tuple(c, c->i->nops);
    y = si_result(c, x);
  }
  int n = d->et == ET_TUPLE && d->ntuple > 2 ? d->ntuple : 2;
  Shape **el = ARENA_ARRAY(c->a, Shape *, n);
  el[0] = x, el[1] = y;
  for (int k = 2; k < n; k++)
    el[k] = si_result(c, d->tuple[k]);
  return shape_tuple(c->a, n, el);
}

/* The old all-reduce-start of one operand shaped (operand, result). */
static bool old_all_reduce_start(const HloInstr *i) {
  const Shape *s = i->shape;
  return i->op == HLO_ALL_REDUCE_START && i->nops == 1 && s->et == ET_TUPLE &&
         s->ntuple == 2 && shape_compatible(s->tuple[0], s->tuple[1]) &&
         shape_compatible(s->tuple[0], i->ops[0]->shape);
}

/* The -done ops: the operand must be the matching -start; the result is
 * element 1 of its shape (all-reduce-done forwards the whole shape). */
static Shape *done(SiCtx *c, HloOp start) {
  const HloInstr *p = c->i->ops[0];
  if (p->op != start)
    return si_fail(c, "operand must be a %s, not %s", hlo_op_name(start),
                   hlo_op_name(p->op));
  if (start == HLO_ALL_REDUCE_START && !old_all_reduce_start(p))
    return si_result(c, p->shape);
  if (start != HLO_ALL_REDUCE_START && p->shape->et != ET_TUPLE)
    return si_result(c, p->shape); /* a start shaped as its result */
  if (p->shape->et != ET_TUPLE || p->shape->ntuple < 2)
    return si_fail(c, "operand has no (input, output) shape: %s",
                   si_str(c, p->shape));
  return si_result(c, p->shape->tuple[1]);
}

Shape *si_infer_collective(SiCtx *c) {
  const HloInstr *i = c->i;
  switch (i->op) {
  case HLO_ALL_REDUCE: case HLO_ALL_REDUCE_START: case HLO_COLLECTIVE_REDUCE:
    if (!all_arrays(c) || !check_replica_groups(c, false))
      return NULL;
    if (i->ncalled != 1)
      return si_fail(c, "needs a to_apply reducer");
    if (i->has_channel_id && i->channel_id <= 0 && i->op == HLO_ALL_REDUCE)
      return si_fail(c, "channel_id must be positive, is %lld",
                     (long long)i->channel_id);
    if (old_all_reduce_start(i))
      return si_tuple2(c, si_result(c, si_op(c, 0)), si_result(c, si_op(c, 0)));
    return operands_or_tuple(c, i->nops);
  case HLO_ALL_REDUCE_DONE:
    return done(c, HLO_ALL_REDUCE_START);
  case HLO_ALL_GATHER:
    return all_gather(c, i->shape);
  case HLO_ALL_GATHER_START: {
    const Shape *d = i->shape;
    if (d->et != ET_TUPLE && i->nops == 1)
      return all_gather(c, d); /* the older form: shaped as the result */
    if (d->et != ET_TUPLE || d->ntuple != 2)
      return si_fail(c, "shape must be (input, output), not %s", si_str(c, d));
    Shape *out = all_gather(c, d->tuple[1]);
    if (!out)
      return NULL;
    return si_tuple2(c, operands_or_tuple(c, i->nops), out);
  }
  case HLO_ALL_GATHER_DONE:
    return done(c, HLO_ALL_GATHER_START);
  case HLO_REDUCE_SCATTER:
    return reduce_scatter(c);
  case HLO_ALL_TO_ALL:
    return all_to_all(c);
  case HLO_RAGGED_ALL_TO_ALL: {
    if (!all_arrays(c) || !check_replica_groups(c, true))
      return NULL;
    for (int k = 2; k < 6; k++) {
      const Shape *s = si_op(c, k);
      if (s->rank != 1 && s->rank != 2)
        return si_fail(c, "operand %d %s must have rank 1 or 2", k,
                       si_str(c, s));
      if (k > 2 && !si_compatible(s, si_op(c, 2), 0))
        return si_fail(c, "offset and size operands differ: %s and %s",
                       si_str(c, si_op(c, 2)), si_str(c, s));
    }
    return si_result(c, si_op(c, 1));
  }
  case HLO_COLLECTIVE_BROADCAST:
    if (!all_arrays(c))
      return NULL;
    return si_result(c, si_op(c, 0));
  case HLO_COLLECTIVE_PERMUTE:
    return collective_permute(c);
  case HLO_COLLECTIVE_PERMUTE_START:
    return collective_permute_start(c);
  case HLO_COLLECTIVE_PERMUTE_DONE:
    return done(c, HLO_COLLECTIVE_PERMUTE_START);
  default:
    break;
  }
  return si_fail(c, "not a collective op");
}
