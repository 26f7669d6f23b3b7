/*
 * ragged_all_to_all.c - ragged-all-to-all(input, output, input_offsets,
 * send_sizes, output_offsets, recv_sizes) on a single participant.
 *
 * XLA's semantics (jax.lax.ragged_all_to_all, XLA's ragged-all-to-all
 * thunk): the result starts as `output`; update e (an entry of the offset and
 * size arrays, row-major; with P participants and U updates per participant,
 * entry p*U + u goes to participant p) copies the rows
 * [input_offsets[e], input_offsets[e] + send_sizes[e]) of the input's leading
 * dimension into the receiver's result at rows [output_offsets[e], ...);
 * recv_sizes[e] is the receiver's count of the rows it gets from that sender.
 * With one participant every update goes to itself, in entry order, and
 * recv_sizes[e] must equal send_sizes[e].  A row range outside the input or
 * the output is an error, never a partial copy.
 *
 * The participants are the members of the replica group holding this
 * replica (all replicas when replica_groups is empty), times the partitions
 * when a channel_id is given without use_global_device_ids, XLA's
 * cross-replica-and-partition mode.  More than one is refused as
 * unsupported.
 */
#include <string.h>

#include "evalp.h"

/* Members of the group holding replica `id`; -1 when it is in none. */
static int64_t group_size(const ReplicaGroups *g, int64_t id, int64_t all) {
  if (!g) return all;
  if (g->iota) {
    if (g->iota_group_shape.n == 2) return g->iota_group_shape.v[1];
    return all;
  }
  if (g->ngroups == 0) return all;
  for (int k = 0; k < g->ngroups; k++)
    for (int j = 0; j < g->groups[k].n; j++)
      if (g->groups[k].v[j] == id) return g->groups[k].n;
  return -1;
}

static int64_t participants(Eval *ev, const HloInstr *i) {
  int64_t replicas = ev->m->replica_count > 0 ? ev->m->replica_count : 1;
  int64_t partitions = ev->m->num_partitions > 0 ? ev->m->num_partitions : 1;
  if (!i->has_channel_id) return group_size(i->replica_groups, ev->o.replica_id, replicas);
  if (i->use_global_device_ids)
    return group_size(i->replica_groups, ev->o.replica_id, replicas * partitions);
  int64_t n = group_size(i->replica_groups, ev->o.replica_id, replicas);
  return n < 0 ? n : n * partitions;
}

EvalValue *eval_ragged_all_to_all(Eval *ev, const HloInstr *i,
                                  EvalValue *const *a) {
  const Shape *is = i->ops[0]->shape, *os = i->ops[1]->shape, *s = i->shape;
  bool ok = shape_is_array(is) && shape_is_array(os) && shape_is_array(s) &&
            is->et == os->et && s->et == os->et && is->rank >= 1 &&
            is->rank == os->rank && ev_elems(s) == ev_elems(os);
  for (int k = 1; ok && k < is->rank; k++) ok = is->dims[k] == os->dims[k];
  int64_t n = ok ? ev_elems(i->ops[2]->shape) : 0;
  for (int k = 2; ok && k < 6; k++) {
    const Shape *ks = i->ops[k]->shape;
    ok = shape_is_array(ks) && et_is_int(ks->et) && ev_elems(ks) == n;
  }
  if (!ok) {
    ev_fail(ev, i, EVAL_ERR_INVALID, "malformed ragged-all-to-all operands");
    return NULL;
  }
  int64_t np = participants(ev, i);
  if (np != 1) {
    ev_unsupported(ev, i, np < 0 ? "ragged-all-to-all outside its replica groups"
                                 : "ragged-all-to-all across more than one participant");
    return NULL;
  }
  int eb = et_bytes(s->et);
  int64_t rows_in = is->dims[0], rows_out = os->dims[0];
  int64_t row = rows_in ? ev_elems(is) / rows_in * eb : 0;
  /* validate every update before writing anything */
  for (int64_t e = 0; e < n; e++) {
    int64_t v[4];
    for (int k = 0; k < 4; k++) {
      const Shape *ks = i->ops[2 + k]->shape;
      v[k] = ev_get_index(ks->et, a[2 + k]->data + e * et_bytes(ks->et));
    }
    if (v[1] != v[3]) {
      ev_fail_value(ev, i, "update %lld sends %lld rows but receives "
              "%lld on its only participant", (long long)e, (long long)v[1],
              (long long)v[3]);
      return NULL;
    }
    if (v[1] < 0 || v[0] < 0 || v[0] > rows_in - v[1] || v[2] < 0 ||
        v[2] > rows_out - v[1]) {
      ev_fail_value(ev, i, "update %lld: rows [%lld, +%lld) of the "
              "input to [%lld, +%lld) of the output are out of bounds (%lld and "
              "%lld rows)", (long long)e, (long long)v[0], (long long)v[1],
              (long long)v[2], (long long)v[1], (long long)rows_in,
              (long long)rows_out);
      return NULL;
    }
  }
  EvalValue *r = ev_steal(ev, a, 1, s);
  if (!r) r = ev_copy(ev, a[1], s);
  if (!r) return NULL;
  for (int64_t e = 0; e < n; e++) {
    int64_t io, sz, oo;
    const Shape *k0 = i->ops[2]->shape, *k1 = i->ops[3]->shape, *k2 = i->ops[4]->shape;
    io = ev_get_index(k0->et, a[2]->data + e * et_bytes(k0->et));
    sz = ev_get_index(k1->et, a[3]->data + e * et_bytes(k1->et));
    oo = ev_get_index(k2->et, a[4]->data + e * et_bytes(k2->et));
    memmove(r->data + oo * row, a[0]->data + io * row, (size_t)(sz * row));
  }
  return r;
}
