/*
 * spmd_rules.c - how a sharding passes through each kind of instruction,
 * for the propagation (forward: from operands to the result; backward: from
 * the result to an operand) and for the partitioner, which computes an
 * instruction on every device's shards (spmd_exact: the result tiling the
 * local instruction gives; spmd_backward of that: what each operand must
 * be tiled by for it).
 *
 *   elementwise, map        the same tiling everywhere (scalars replicated)
 *   broadcast, transpose    dimensions carried along
 *   reshape                 each group of dimensions keeps the tiles of its
 *                           most major dimension where both sides divide
 *   reduce, reduce-window   reduced / windowed dimensions untiled (the
 *                           partitioner reduces tiled ones with an
 *                           all-reduce)
 *   slice, pad, reverse, dynamic-slice, dynamic-update-slice,
 *   concatenate, sort       the dimensions they change untiled
 *   gather, scatter         index (batch) dimensions and whole-slice
 *                           (passthrough) operand dimensions
 *   dot, convolution        spmd_dot.c
 *
 * Anything else has no rule: the partitioner computes it replicated.
 */
#include "spmd.h"

#include <string.h>

SpmdRole spmd_role(const HloInstr *i) {
  if (i->op != HLO_CUSTOM_CALL || !i->cc || !i->cc->target)
    return SPMD_ROLE_NONE;
  const char *t = i->cc->target;
  if (strcmp(t, "Sharding") == 0 || strcmp(t, "xla.sdy.FuncResultSharding") == 0)
    return SPMD_ROLE_SHARDING;
  if (strcmp(t, "SPMDFullToShardShape") == 0 ||
      strcmp(t, "xla.sdy.GlobalToLocalShape") == 0)
    return SPMD_ROLE_TO_MANUAL;
  if (strcmp(t, "SPMDShardToFullShape") == 0 ||
      strcmp(t, "xla.sdy.LocalToGlobalShape") == 0)
    return SPMD_ROLE_FROM_MANUAL;
  return SPMD_ROLE_NONE;
}

static bool has_sdy(const HloInstr *i) {
  const KVList *l = i->frontend_attrs;
  for (int k = 0; l && k < l->n; k++)
    if (strncmp(l->kv[k].key, "xla.sdy.", 8) == 0)
      return true;
  return false;
}

bool spmd_done(const HloModule *m) {
  const KVList *l = m->frontend_attrs;
  for (int k = 0; l && k < l->n; k++)
    if (strcmp(l->kv[k].key, "xhlo.global_result_shape") == 0)
      return true;
  return false;
}

bool spmd_wanted(const HloModule *m) {
  /* a scheduled module (XLA's after-optimizations dumps, run with
   * --force-passes) is past its partitioning: its shardings describe the
   * per-device program it already is */
  if (m->num_partitions <= 1 || spmd_done(m) || m->is_scheduled || !m->entry)
    return false;
  for (int ci = 0; ci < m->ncomps; ci++) {
    const HloComp *c = m->comps[ci];
    for (int k = 0; k < c->ninstrs; k++) {
      const HloInstr *i = c->instrs[k];
      if (i->sharding || has_sdy(i) || spmd_role(i) != SPMD_ROLE_NONE)
        return true;
    }
  }
  return false;
}

static bool in_list(const I64List *l, int64_t v) {
  for (int k = 0; k < l->n; k++)
    if (l->v[k] == v)
      return true;
  return false;
}

static Tiling *drop_all(Arena *a, const Tiling *t, const bool *drop) {
  Tiling *r = tiling_clone(a, t);
  for (int k = 0; k < t->rank; k++)
    if (drop[k])
      r = tiling_drop(a, r, k);
  return r;
}

/* The dimensions an instruction changes (for the ops that keep the rank),
 * marked in drop[]; false when i is not such an op. */
static bool changed_dims(const HloInstr *i, bool *drop) {
  const Shape *o = i->nops > 0 ? i->ops[0]->shape : NULL;
  int r = i->shape->et == ET_TUPLE ? (o ? o->rank : 0) : i->shape->rank;
  memset(drop, 0, sizeof(bool) * (size_t)(r > 0 ? r : 1));
  switch (i->op) {
  case HLO_SLICE:
    for (int k = 0; k < r; k++)
      drop[k] = i->slice[k].start != 0 || i->slice[k].limit != o->dims[k] ||
                i->slice[k].stride != 1;
    return true;
  case HLO_PAD:
    for (int k = 0; k < r; k++)
      drop[k] = i->padding[k].lo || i->padding[k].hi || i->padding[k].interior;
    return true;
  case HLO_REVERSE:
  case HLO_CONCATENATE:
  case HLO_SORT:
    for (int k = 0; k < i->dims.n; k++)
      if (i->dims.v[k] >= 0 && i->dims.v[k] < r)
        drop[i->dims.v[k]] = true;
    return true;
  case HLO_DYNAMIC_SLICE:
    for (int k = 0; k < r && k < i->dynamic_slice_sizes.n; k++)
      drop[k] = i->dynamic_slice_sizes.v[k] != o->dims[k];
    return true;
  case HLO_DYNAMIC_UPDATE_SLICE:
    for (int k = 0; k < r; k++)
      drop[k] = i->ops[1]->shape->dims[k] != o->dims[k];
    return true;
  case HLO_REDUCE_WINDOW:
    if (!i->window || i->window->ndims != r)
      return false;
    for (int k = 0; k < r; k++) {
      const WindowDim *w = &i->window->dims[k];
      drop[k] = w->size != 1 || w->stride != 1 || w->pad_lo || w->pad_hi ||
                w->base_dilation > 1 || w->window_dilation > 1 || w->reversal;
    }
    return true;
  default:
    return false;
  }
}

static bool is_elementwise(const HloInstr *i) {
  if (i->op == HLO_MAP)
    return true;
  if (!hlo_instr_is_elementwise(i) || i->shape->et == ET_TUPLE)
    return false;
  for (int k = 0; k < i->nops; k++) {
    const Shape *s = i->ops[k]->shape;
    if (!shape_is_array(s) || (s->rank != i->shape->rank && s->rank != 0))
      return false;
  }
  return true;
}

/* Number of data operands of a variadic reduce / reduce-window. */
static int reduce_inputs(const HloInstr *i) { return i->nops / 2; }

/*
 * Gather and scatter: which operand dimension each result (updates)
 * dimension comes from.
 */
typedef struct GatherMap {
  int out_rank;
  int out_operand[64];            /* out dim -> passthrough operand dim, -1 */
  int out_index[64];              /* out dim -> indices dim, -1 */
  int out_batching[64];           /* out dim -> operand batching dim, -1 */
} GatherMap;

static bool gather_map(const HloInstr *i, GatherMap *g) {
  const GatherDnums *dn = i->gather;
  const Shape *op = i->ops[0]->shape, *ix = i->ops[1]->shape;
  int r = i->shape->rank;
  if (!dn || r > 64 || op->rank > 64 || ix->rank > 64)
    return false;
  g->out_rank = r;
  int window[64], nw = 0, batch_ix[64], nb = 0;
  for (int p = 0; p < op->rank; p++)
    if (!in_list(&dn->collapsed_slice_dims, p) &&
        !in_list(&dn->operand_batching_dims, p))
      window[nw++] = p;
  for (int q = 0; q < ix->rank; q++)
    if (q != dn->index_vector_dim)
      batch_ix[nb++] = q;
  int wi = 0, bi = 0;
  for (int o = 0; o < r; o++) {
    g->out_operand[o] = g->out_index[o] = g->out_batching[o] = -1;
    if (in_list(&dn->offset_dims, o)) {
      if (wi >= nw)
        return false;
      int p = window[wi++];
      if (!in_list(&dn->start_index_map, p) && i->gather_slice_sizes.n > p &&
          i->gather_slice_sizes.v[p] == op->dims[p])
        g->out_operand[o] = p;
    } else {
      if (bi >= nb)
        return false;
      int q = batch_ix[bi++];
      g->out_index[o] = q;
      for (int k = 0; k < dn->start_indices_batching_dims.n; k++)
        if (dn->start_indices_batching_dims.v[k] == q &&
            k < dn->operand_batching_dims.n)
          g->out_batching[o] = (int)dn->operand_batching_dims.v[k];
    }
  }
  return true;
}

typedef struct ScatterMap {
  int rank;                       /* operand rank */
  int passthrough[64];            /* operand dim -> updates dim, -1 */
} ScatterMap;

static bool scatter_map(const HloInstr *i, ScatterMap *s) {
  const ScatterDnums *dn = i->scatter;
  int n = (i->nops - 1) / 2;
  if (!dn || n < 1)
    return false;
  const Shape *op = i->ops[0]->shape, *up = i->ops[n + 1]->shape;
  if (op->rank > 64 || up->rank > 64)
    return false;
  s->rank = op->rank;
  int wi = 0;
  for (int p = 0; p < op->rank; p++) {
    s->passthrough[p] = -1;
    if (in_list(&dn->inserted_window_dims, p) ||
        in_list(&dn->input_batching_dims, p))
      continue;
    if (wi >= dn->update_window_dims.n)
      return false;
    int u = (int)dn->update_window_dims.v[wi++];
    if (!in_list(&dn->scatter_dims_to_operand_dims, p) && u < up->rank &&
        up->dims[u] == op->dims[p])
      s->passthrough[p] = u;
  }
  return true;
}

static int first_known(Tiling *const *ops, int from, int to) {
  for (int k = from; k < to; k++)
    if (ops[k] && !ops[k]->manual)
      return k;
  return -1;
}

Tiling *spmd_forward(Arena *a, const HloInstr *i, Tiling *const *ops,
                     int64_t ndev) {
  int r = i->shape->rank;
  bool drop[64];
  if (is_elementwise(i)) {
    const Tiling *best = NULL;
    for (int k = 0; k < i->nops; k++)
      if (ops[k] && !ops[k]->manual && ops[k]->rank == r &&
          (!best || tiling_num_tiles(ops[k]) > tiling_num_tiles(best)))
        best = ops[k];
    return best ? tiling_clone(a, best) : NULL;
  }
  switch (i->op) {
  case HLO_BROADCAST: {
    if (!ops[0] || ops[0]->manual || r > 64)
      return NULL;
    int src[64];
    for (int q = 0; q < r; q++) {
      src[q] = -1;
      for (int j = 0; j < i->dims.n; j++)
        if (i->dims.v[j] == q)
          src[q] = j;
    }
    return tiling_project(a, ops[0], r, src);
  }
  case HLO_TRANSPOSE: {
    if (!ops[0] || ops[0]->manual || r > 64)
      return NULL;
    int src[64];
    for (int q = 0; q < r; q++)
      src[q] = (int)i->dims.v[q];
    return tiling_project(a, ops[0], r, src);
  }
  case HLO_RESHAPE: {
    if (!ops[0] || ops[0]->manual)
      return NULL;
    Tiling *out, *eff;
    tiling_reshape(a, ops[0], i->ops[0]->shape, i->shape, &out, &eff);
    return out;
  }
  case HLO_REDUCE: {
    int k = first_known(ops, 0, reduce_inputs(i));
    if (k < 0)
      return NULL;
    const Shape *s = i->ops[k]->shape;
    int src[64], n = 0;
    for (int p = 0; p < s->rank && n < 64; p++)
      if (!in_list(&i->dims, p))
        src[n++] = p;
    return tiling_project(a, ops[k], n, src);
  }
  case HLO_DOT:
  case HLO_CONVOLUTION: {
    DotSpace sp;
    if (!dot_space(i, &sp))
      return NULL;
    if ((!ops[0] || ops[0]->manual) && (!ops[1] || ops[1]->manual))
      return NULL;
    Tiling *st = dot_choose(a, &sp, i, ops[0], ops[1], NULL, ndev);
    return st ? dot_project(a, &sp, st, 2, r) : NULL;
  }
  case HLO_GATHER: {
    GatherMap g;
    if (!gather_map(i, &g))
      return NULL;
    const Tiling *srcs[2] = {ops[0], ops[1]};
    int which[64], dim[64];
    for (int pass = 0; pass < 3; pass++) {
      /* both operands, then the indices alone, then the operand alone */
      bool use_op = pass != 1 && ops[0] && !ops[0]->manual;
      bool use_ix = pass != 2 && ops[1] && !ops[1]->manual;
      if (!use_op && !use_ix)
        continue;
      for (int o = 0; o < r; o++) {
        which[o] = -1;
        dim[o] = 0;
        if (use_ix && g.out_index[o] >= 0) {
          which[o] = 1;
          dim[o] = g.out_index[o];
        } else if (use_op && g.out_operand[o] >= 0) {
          which[o] = 0;
          dim[o] = g.out_operand[o];
        }
      }
      Tiling *t = tiling_merge(a, r, ndev, srcs, which, dim);
      if (t)
        return t;
    }
    return NULL;
  }
  case HLO_SCATTER: {
    ScatterMap s;
    if (!ops[0] || ops[0]->manual || !scatter_map(i, &s))
      return NULL;
    bool d[64];
    for (int p = 0; p < s.rank; p++)
      d[p] = s.passthrough[p] < 0;
    return drop_all(a, ops[0], d);
  }
  case HLO_DYNAMIC_UPDATE_SLICE: {
    const Tiling *t = ops[0] && !ops[0]->manual ? ops[0]
                      : ops[1] && !ops[1]->manual ? ops[1] : NULL;
    if (!t || !changed_dims(i, drop))
      return NULL;
    return drop_all(a, t, drop);
  }
  case HLO_CONCATENATE:
  case HLO_SORT: {
    int k = first_known(ops, 0, i->nops);
    if (k < 0 || !changed_dims(i, drop) || ops[k]->rank != i->ops[0]->shape->rank)
      return NULL;
    return drop_all(a, ops[k], drop);
  }
  case HLO_REDUCE_WINDOW: {
    int k = first_known(ops, 0, reduce_inputs(i));
    if (k < 0 || !changed_dims(i, drop))
      return NULL;
    return drop_all(a, ops[k], drop);
  }
  case HLO_SLICE:
  case HLO_PAD:
  case HLO_REVERSE:
  case HLO_DYNAMIC_SLICE:
    if (!ops[0] || ops[0]->manual || !changed_dims(i, drop))
      return NULL;
    return drop_all(a, ops[0], drop);
  default:
    return NULL;
  }
}

Tiling *spmd_exact(Arena *a, const HloInstr *i, const Tiling *out) {
  bool drop[64];
  if (out->manual)
    return NULL;
  if (is_elementwise(i))
    return tiling_clone(a, out);
  switch (i->op) {
  case HLO_BROADCAST:
  case HLO_TRANSPOSE:
  case HLO_REDUCE:
    return tiling_clone(a, out);
  case HLO_RESHAPE: {
    Tiling *in, *eff;
    tiling_reshape(a, out, i->shape, i->ops[0]->shape, &in, &eff);
    return eff;
  }
  case HLO_SLICE:
  case HLO_PAD:
  case HLO_REVERSE:
  case HLO_DYNAMIC_SLICE:
  case HLO_DYNAMIC_UPDATE_SLICE:
  case HLO_CONCATENATE:
  case HLO_SORT:
  case HLO_REDUCE_WINDOW:
    if (!changed_dims(i, drop))
      return NULL;
    return drop_all(a, out, drop);
  case HLO_GATHER: {
    GatherMap g;
    if (!gather_map(i, &g))
      return NULL;
    for (int o = 0; o < g.out_rank; o++)
      drop[o] = g.out_operand[o] < 0 && g.out_index[o] < 0;
    return drop_all(a, out, drop);
  }
  case HLO_SCATTER: {
    ScatterMap s;
    if (!scatter_map(i, &s))
      return NULL;
    for (int p = 0; p < s.rank; p++)
      drop[p] = s.passthrough[p] < 0;
    return drop_all(a, out, drop);
  }
  case HLO_CONVOLUTION: {
    DotSpace sp;
    if (!dot_space(i, &sp))
      return NULL;
    int src[64];
    for (int q = 0; q < i->shape->rank; q++)
      src[q] = -1;
    for (int s = 0; s < sp.rank; s++)
      if (sp.out[s] >= 0 && !sp.pinned[s])
        src[sp.out[s]] = sp.out[s];
    return tiling_project(a, out, i->shape->rank, src);
  }
  default:
    return NULL;
  }
}

Tiling *spmd_backward(Arena *a, const HloInstr *i, int k, const Tiling *out,
                      int64_t ndev) {
  const Shape *os = i->ops[k]->shape;
  int orank = shape_is_array(os) ? os->rank : 0;
  bool drop[64];
  if (!out || out->manual || orank > 64)
    return NULL;
  if (is_elementwise(i))
    return orank == out->rank ? tiling_clone(a, out)
                              : tiling_replicated(a, orank, ndev);
  int src[64];
  switch (i->op) {
  case HLO_BROADCAST:
    for (int j = 0; j < orank; j++)
      src[j] = (int)i->dims.v[j];
    return tiling_project(a, out, orank, src);
  case HLO_TRANSPOSE:
    for (int q = 0; q < out->rank; q++)
      src[i->dims.v[q]] = q;
    return tiling_project(a, out, orank, src);
  case HLO_RESHAPE: {
    Tiling *in, *eff;
    tiling_reshape(a, out, i->shape, os, &in, &eff);
    return in;
  }
  case HLO_REDUCE:
  case HLO_REDUCE_WINDOW:
    if (k >= reduce_inputs(i))
      return tiling_replicated(a, orank, ndev);
    if (i->op == HLO_REDUCE_WINDOW) {
      if (!changed_dims(i, drop))
        return NULL;
      return drop_all(a, out, drop);
    } else {
      int n = 0;
      for (int p = 0; p < orank; p++)
        src[p] = in_list(&i->dims, p) ? -1 : n++;
      return tiling_project(a, out, orank, src);
    }
  case HLO_SLICE:
  case HLO_PAD:
  case HLO_REVERSE:
  case HLO_DYNAMIC_SLICE:
  case HLO_DYNAMIC_UPDATE_SLICE:
  case HLO_CONCATENATE:
  case HLO_SORT:
    if (orank != out->rank)
      return tiling_replicated(a, orank, ndev);   /* pad value, indices */
    if (!changed_dims(i, drop))
      return NULL;
    return drop_all(a, out, drop);
  case HLO_DOT:
  case HLO_CONVOLUTION: {
    DotSpace sp;
    if (k > 1 || !dot_space(i, &sp))
      return NULL;
    for (int s = 0; s < sp.rank; s++)
      src[s] = sp.out[s] >= 0 && !sp.pinned[s] ? sp.out[s] : -1;
    Tiling *st = tiling_project(a, out, sp.rank, src);
    return dot_project(a, &sp, st, k, orank);
  }
  case HLO_GATHER: {
    GatherMap g;
    if (!gather_map(i, &g))
      return NULL;
    for (int p = 0; p < orank; p++)
      src[p] = -1;
    for (int o = 0; o < g.out_rank; o++) {
      if (k == 0 && g.out_operand[o] >= 0)
        src[g.out_operand[o]] = o;
      if (k == 0 && g.out_batching[o] >= 0)
        src[g.out_batching[o]] = o;
      if (k == 1 && g.out_index[o] >= 0)
        src[g.out_index[o]] = o;
    }
    return tiling_project(a, out, orank, src);
  }
  case HLO_SCATTER: {
    ScatterMap s;
    int n = (i->nops - 1) / 2;
    if (!scatter_map(i, &s))
      return NULL;
    for (int p = 0; p < orank; p++)
      src[p] = -1;
    if (k < n) {
      for (int p = 0; p < orank; p++)
        src[p] = s.passthrough[p] >= 0 ? p : -1;
    } else if (k > n) {
      for (int p = 0; p < s.rank; p++)
        if (s.passthrough[p] >= 0)
          src[s.passthrough[p]] = p;
    }
    return tiling_project(a, out, orank, src);
  }
  default:
    return NULL;
  }
}
