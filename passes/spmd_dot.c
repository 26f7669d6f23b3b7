/*
 * spmd_dot.c - how to compute a dot or a convolution on shards.
 *
 * Both are seen as one space of dimensions: batch (in both operands and the
 * result), lhs-only and rhs-only (in one operand and the result) and
 * contracting (in both operands, summed over).  A tiling of that space
 * says every device's part of the whole computation; projected onto the
 * operands it says what shards each device needs, onto the result what
 * shard it computes.  Where a contracting dimension is tiled, each device
 * has a partial sum, and the devices that differ only there add theirs
 * with an all-reduce.
 *
 * The candidates come from the operands as they are tiled (keeping one
 * operand's tiling, or both where they fit together), from the result's
 * tiling, and all-replicated; each is costed by the bytes its reshards
 * gather plus the partial sums it reduces, and the cheapest wins (the
 * earliest on a tie).  So x[batch] . w gives a batch-tiled result with no
 * communication (data parallel), x . w[:, cols] a column-tiled one,
 * h[:, k] . w[k, :] partial sums and an all-reduce (the row-parallel half
 * of tensor parallelism, and the gradient all-reduce of data parallelism).
 *
 * A convolution's spatial dimensions stay untiled; its batch dimension is
 * lhs-only, its output features rhs-only and its input features
 * contracting.  Feature groups pin the feature dimensions, batch groups
 * the batch and output features, untiled.
 */
#include "spmd.h"

#include <string.h>

static bool in_list(const I64List *l, int64_t v) {
  for (int k = 0; k < l->n; k++)
    if (l->v[k] == v)
      return true;
  return false;
}

static void add(DotSpace *s, int lhs, int rhs, int out, bool contracting,
                bool pinned) {
  int k = s->rank++;
  s->lhs[k] = lhs;
  s->rhs[k] = rhs;
  s->out[k] = out;
  s->contracting[k] = contracting;
  s->pinned[k] = pinned;
}

bool dot_space(const HloInstr *i, DotSpace *s) {
  memset(s, 0, sizeof *s);
  if (i->nops != 2 || !shape_is_array(i->shape) ||
      !shape_is_array(i->ops[0]->shape) || !shape_is_array(i->ops[1]->shape))
    return false;
  const Shape *l = i->ops[0]->shape, *r = i->ops[1]->shape;
  if (l->rank + r->rank > 64)
    return false;
  if (i->op == HLO_DOT) {
    const DotDnums *d = i->dot;
    if (!d || d->lhs_ragged.n || d->rhs_group.n || i->sparsity)
      return false;
    int nb = d->lhs_batch.n, nl = 0;
    if (d->rhs_batch.n != nb || d->lhs_contracting.n != d->rhs_contracting.n)
      return false;
    for (int k = 0; k < nb; k++)
      add(s, (int)d->lhs_batch.v[k], (int)d->rhs_batch.v[k], k, false, false);
    for (int p = 0; p < l->rank; p++)
      if (!in_list(&d->lhs_batch, p) && !in_list(&d->lhs_contracting, p))
        add(s, p, -1, nb + nl++, false, false);
    int nr = 0;
    for (int p = 0; p < r->rank; p++)
      if (!in_list(&d->rhs_batch, p) && !in_list(&d->rhs_contracting, p))
        add(s, -1, p, nb + nl + nr++, false, false);
    for (int k = 0; k < d->lhs_contracting.n; k++)
      add(s, (int)d->lhs_contracting.v[k], (int)d->rhs_contracting.v[k], -1,
          true, false);
    return nb + nl + nr == i->shape->rank;
  }
  if (i->op == HLO_CONVOLUTION && i->conv && i->conv->dnums) {
    const ConvDnums *d = i->conv->dnums;
    bool fg = i->conv->feature_group_count > 1,
         bg = i->conv->batch_group_count > 1;
    add(s, (int)d->input_batch, -1, (int)d->output_batch, false, bg);
    add(s, -1, (int)d->kernel_output_feature, (int)d->output_feature, false,
        fg || bg);
    add(s, (int)d->input_feature, (int)d->kernel_input_feature, -1, true, fg);
    return true;
  }
  return false;
}

Tiling *dot_project(Arena *a, const DotSpace *s, const Tiling *st, int which,
                    int rank) {
  int src[64];
  for (int k = 0; k < rank && k < 64; k++)
    src[k] = -1;
  for (int d = 0; d < s->rank; d++) {
    int k = which == 0 ? s->lhs[d] : which == 1 ? s->rhs[d] : s->out[d];
    if (k >= 0 && k < rank && !s->pinned[d])
      src[k] = d;
  }
  return tiling_project(a, st, rank, src);
}

/* The bytes of the shard of `global` under t. */
static int64_t shard_bytes(const Tiling *t, const Shape *global) {
  int64_t n = et_bytes(global->et);
  for (int k = 0; k < global->rank; k++) {
    n *= tiling_shard_dim(t, k, global->dims[k]);
    if (n > INT64_MAX / 8)
      return INT64_MAX / 8;
  }
  return n;
}

static int64_t cost(Arena *a, const DotSpace *s, const HloInstr *i,
                    const Tiling *st, const Tiling *lhs, const Tiling *rhs,
                    const Tiling *out) {
  const Shape *ls = i->ops[0]->shape, *rs = i->ops[1]->shape;
  Tiling *tl = dot_project(a, s, st, 0, ls->rank);
  Tiling *tr = dot_project(a, s, st, 1, rs->rank);
  Tiling *to = dot_project(a, s, st, 2, i->shape->rank);
  int64_t c = 0;
  if (lhs)
    c += tiling_reshard_cost(lhs, tl, ls);
  if (rhs)
    c += tiling_reshard_cost(rhs, tr, rs);
  bool reduce = false;
  for (int d = 0; d < s->rank; d++)
    reduce |= s->contracting[d] && st->tiles[d] > 1;
  int64_t moved = out ? tiling_reshard_cost(to, out, i->shape) : 0;
  if (reduce)   /* a reduce-scatter when the result is then only cut */
    c += moved == 0 && out ? shard_bytes(out, i->shape) : shard_bytes(to, i->shape);
  return c + moved;
}

Tiling *dot_choose(Arena *a, const DotSpace *s, const HloInstr *i,
                   const Tiling *lhs, const Tiling *rhs, const Tiling *out,
                   int64_t ndev) {
  if (lhs && lhs->manual)
    lhs = NULL;
  if (rhs && rhs->manual)
    rhs = NULL;
  if (out && out->manual)
    out = NULL;
  Tiling *cands[10];
  int nc = 0;
  int which[64], dim[64];
  if (out) {
    const Tiling *srcs[1] = {out};
    for (int d = 0; d < s->rank; d++) {
      which[d] = s->out[d] >= 0 && !s->pinned[d] ? 0 : -1;
      dim[d] = s->out[d];
    }
    Tiling *t = tiling_merge(a, s->rank, ndev, srcs, which, dim);
    if (t)
      cands[nc++] = t;
  }
  /* From the operands: policy bits: 1 take lhs dims, 2 take rhs dims,
   * 4 prefer rhs where both have the dimension, 8 leave contracting out. */
  static const int policies[] = {1 | 2, 1 | 2 | 4, 1, 2 | 4, 1 | 2 | 8,
                                 1 | 2 | 4 | 8};
  const Tiling *srcs[2] = {lhs, rhs};
  for (size_t pi = 0; pi < sizeof policies / sizeof *policies; pi++) {
    int p = policies[pi];
    for (int d = 0; d < s->rank; d++) {
      which[d] = -1;
      dim[d] = 0;
      if (s->pinned[d] || (s->contracting[d] && (p & 8)))
        continue;
      bool from_l = (p & 1) && lhs && s->lhs[d] >= 0;
      bool from_r = (p & 2) && rhs && s->rhs[d] >= 0;
      if (from_l && from_r) {
        if (p & 4)
          from_l = false;
        else
          from_r = false;
      }
      if (from_l) {
        which[d] = 0;
        dim[d] = s->lhs[d];
      } else if (from_r) {
        which[d] = 1;
        dim[d] = s->rhs[d];
      }
    }
    Tiling *t = tiling_merge(a, s->rank, ndev, srcs, which, dim);
    if (t)
      cands[nc++] = t;
  }
  cands[nc++] = tiling_replicated(a, s->rank, ndev);
  Tiling *best = NULL;
  int64_t best_cost = 0;
  for (int k = 0; k < nc; k++) {
    int64_t c = cost(a, s, i, cands[k], lhs, rhs, out);
    if (!best || c < best_cost) {
      best = cands[k];
      best_cost = c;
    }
  }
  return best;
}
