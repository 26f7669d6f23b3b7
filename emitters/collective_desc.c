/*
 * collective_desc.c - what a collective thunk does, from its HLO
 * instruction (thunk_emitter.c adds the slices and shapes): all-reduce,
 * all-gather, reduce-scatter, all-to-all (array and tuple forms),
 * collective-permute (and the -start forms of all-reduce, all-gather and
 * collective-permute), collective-broadcast, replica-id and partition-id.
 *
 * The reduction must be one XLA's runtimes know (MatchReductionComputation:
 * a root add, multiply, minimum or maximum of the two parameters, and/or of
 * pred as min/max); anything else is an error, as on XLA:CPU.  Replica groups
 * are stored as explicit lists (the iota and mesh forms expanded), with the
 * group mode that channel_id and use_global_device_ids give (lib/hlo).
 */
#include "collective_desc.h"

#include <string.h>

static bool reduction_of(const HloInstr *i, CollReduction *out, Diag *d) {
  const HloComp *c = i->ncalled == 1 ? i->called[0] : NULL;
  const HloInstr *r = c ? c->root : NULL;
  bool params = r && r->nops == 2 && r->ops[0]->op == HLO_PARAMETER &&
                r->ops[1]->op == HLO_PARAMETER &&
                r->ops[0]->param_number != r->ops[1]->param_number &&
                shape_is_scalar(r->shape);
  bool pred = r && r->shape->et == ET_PRED;
  if (params) {
    switch (r->op) {
    case HLO_ADD: *out = COLL_SUM; return true;
    case HLO_MULTIPLY: *out = COLL_PRODUCT; return true;
    case HLO_MINIMUM: *out = COLL_MIN; return true;
    case HLO_MAXIMUM: *out = COLL_MAX; return true;
    case HLO_AND: if (pred) { *out = COLL_MIN; return true; } break;
    case HLO_OR: if (pred) { *out = COLL_MAX; return true; } break;
    default: break;
    }
  }
  return diag_error(d, i->loc, "unsupported reduction computation %s in '%s': a "
                    "compiled %s takes add, multiply, minimum or maximum of its "
                    "two parameters (and, or of pred), as XLA's runtimes do",
                    c ? c->name : "(none)", i->name, hlo_op_name(i->op));
}

bool collective_desc(Arena *a, const HloModule *m, const HloInstr *i,
                     CollDesc *c, Diag *d) {
  memset(c, 0, sizeof *c);
  c->dim = -1;
  c->async_id = -1;
  c->channel_id = i->has_channel_id ? i->channel_id : -1;
  c->replica_count = m->replica_count > 0 ? m->replica_count : 1;
  c->num_partitions = m->num_partitions > 0 ? m->num_partitions : 1;
  switch (i->op) {
  case HLO_ALL_REDUCE: case HLO_ALL_REDUCE_START: c->kind = COLL_ALL_REDUCE; break;
  case HLO_ALL_GATHER: case HLO_ALL_GATHER_START: c->kind = COLL_ALL_GATHER; break;
  case HLO_REDUCE_SCATTER: c->kind = COLL_REDUCE_SCATTER; break;
  case HLO_ALL_TO_ALL: c->kind = COLL_ALL_TO_ALL; break;
  case HLO_COLLECTIVE_PERMUTE: case HLO_COLLECTIVE_PERMUTE_START:
    c->kind = COLL_COLLECTIVE_PERMUTE;
    break;
  case HLO_COLLECTIVE_BROADCAST: c->kind = COLL_COLLECTIVE_BROADCAST; break;
  case HLO_REPLICA_ID: c->kind = COLL_REPLICA_ID; return true;
  case HLO_PARTITION_ID: c->kind = COLL_PARTITION_ID; return true;
  default:
    return diag_error(d, i->loc, "unsupported op '%s': no thunk for it yet",
                      hlo_op_name(i->op));
  }
  if (i->op == HLO_ALL_REDUCE_START || i->op == HLO_ALL_GATHER_START ||
      i->op == HLO_COLLECTIVE_PERMUTE_START)
    c->async_id = i->id;
  CollectiveGroupMode mode;
  if (!hlo_collective_group_mode(i, &mode))
    return diag_error(d, i->loc, "'%s': use_global_device_ids=true needs a channel_id",
                      i->name);
  c->mode = mode;
  if ((c->kind == COLL_ALL_REDUCE || c->kind == COLL_REDUCE_SCATTER) &&
      !reduction_of(i, &c->reduction, d))
    return false;
  if (c->kind == COLL_ALL_GATHER || c->kind == COLL_REDUCE_SCATTER ||
      (c->kind == COLL_ALL_TO_ALL && i->dims.n)) {
    if (i->dims.n != 1)
      return diag_error(d, i->loc, "'%s' needs one dimension", i->name);
    c->dim = i->dims.v[0];
  }
  int64_t **groups, *sizes;
  int ng = hlo_replica_groups_expand(i->replica_groups, &groups, &sizes);
  c->ngroups = ng;
  c->groups = ARENA_ARRAY(a, int64_t *, ng + 1);
  c->group_sizes = ARENA_ARRAY(a, int64_t, ng + 1);
  for (int g = 0; g < ng; g++) {
    c->group_sizes[g] = sizes[g];
    c->groups[g] = ARENA_ARRAY(a, int64_t, sizes[g] + 1);
    memcpy(c->groups[g], groups[g], (size_t)sizes[g] * sizeof **groups);
  }
  hlo_replica_groups_free(ng, groups, sizes);
  c->npairs = i->npairs;
  c->pairs = arena_array(a, (size_t)i->npairs + 1, sizeof *c->pairs);
  for (int k = 0; k < i->npairs; k++) {
    c->pairs[k][0] = i->source_target_pairs[k][0];
    c->pairs[k][1] = i->source_target_pairs[k][1];
    if (c->pairs[k][0] < 0 || c->pairs[k][1] < 0)
      return diag_error(d, i->loc, "'%s': a negative id in source_target_pairs",
                        i->name);
  }
  for (int k = 0; k < i->nops; k++) {
    const Shape *s = i->ops[k]->shape;
    if (!shape_is_array(s) || et_is_complex(s->et) || et_bytes(s->et) <= 0)
      return diag_error(d, i->loc, "unsupported: '%s' takes real or integer arrays "
                        "only when compiled", i->name);
  }
  return true;
}
