/*
 * shape_inference_gather.c - gather and scatter with XLA's general dimension
 * numbers, batching dimensions included.
 *
 * The start indices are implicitly reshaped from [A,B,C] to [A,B,C,1] when
 * index_vector_dim equals their rank; "expanded" below is that shape.
 */
#include "shape_inference_internal.h"

static bool is_array(const Shape *s) {
  return s->et != ET_TUPLE && si_et_array(s->et);
}

static bool contains(const I64List *l, int64_t v) {
  for (int k = 0; k < l->n; k++)
    if (l->v[k] == v)
      return true;
  return false;
}

/* Sorted strictly increasing and within [0, bound). */
static bool sorted_in_range(SiCtx *c, const char *what, const I64List *l,
                            int64_t bound) {
  for (int k = 0; k < l->n; k++) {
    if (l->v[k] < 0 || l->v[k] >= bound) {
      si_fail(c, "%s=%s: %lld is out of range [0, %lld)", what,
              si_list_str(c, l->n, l->v), (long long)l->v[k],
              (long long)bound);
      return false;
    }
    if (k > 0 && l->v[k - 1] >= l->v[k]) {
      si_fail(c, "%s=%s must be sorted without repeats", what,
              si_list_str(c, l->n, l->v));
      return false;
    }
  }
  return true;
}

/* Index vector dimension check and the expanded index shape. */
static bool expand_indices(SiCtx *c, const Shape *ix, int64_t ivd,
                           int64_t **dims, int *rank) {
  if (!is_array(ix) || !et_is_int(ix->et)) {
    si_fail(c, "indices must be an integer array, not %s", si_str(c, ix));
    return false;
  }
  if (ivd < 0 || ivd > ix->rank) {
    si_fail(c, "index_vector_dim=%lld is out of range [0, %d]",
            (long long)ivd, ix->rank);
    return false;
  }
  *rank = ix->rank + (ivd == ix->rank);
  *dims = ARENA_ARRAY(c->a, int64_t, *rank);
  for (int d = 0; d < ix->rank; d++)
    (*dims)[d] = ix->dims[d];
  if (ivd == ix->rank)
    (*dims)[ix->rank] = 1;
  return true;
}

Shape *si_infer_gather(SiCtx *c) {
  const HloInstr *i = c->i;
  const GatherDnums *g = i->gather;
  const Shape *in = si_op(c, 0), *ix = si_op(c, 1);
  if (!g)
    return si_fail(c, "missing gather dimension numbers");
  if (!is_array(in))
    return si_fail(c, "operand must be an array, not %s", si_str(c, in));
  int64_t *ex;
  int exr;
  if (!expand_indices(c, ix, g->index_vector_dim, &ex, &exr))
    return NULL;
  int out_rank = g->offset_dims.n + exr - 1;
  if (!sorted_in_range(c, "offset_dims", &g->offset_dims, out_rank))
    return NULL;
  int64_t nidx = ex[g->index_vector_dim];
  if (nidx >= 0 && g->start_index_map.n != nidx)
    return si_fail(c, "start_index_map has %d entries but index vector "
                   "dimension %lld of the indices has size %lld",
                   g->start_index_map.n, (long long)g->index_vector_dim,
                   (long long)nidx);
  if (!si_check_dims(c, "start_index_map=", g->start_index_map.n,
                     g->start_index_map.v, in->rank) ||
      !sorted_in_range(c, "collapsed_slice_dims", &g->collapsed_slice_dims,
                       in->rank))
    return NULL;
  if (g->operand_batching_dims.n != g->start_indices_batching_dims.n)
    return si_fail(c, "operand_batching_dims and start_indices_batching_dims "
                   "differ in length (%d and %d)", g->operand_batching_dims.n,
                   g->start_indices_batching_dims.n);
  for (int k = 0; k < g->operand_batching_dims.n; k++)
    if (contains(&g->collapsed_slice_dims, g->operand_batching_dims.v[k]))
      return si_fail(c, "dimension %lld is both collapsed and batching",
                     (long long)g->operand_batching_dims.v[k]);
  if (!sorted_in_range(c, "operand_batching_dims", &g->operand_batching_dims,
                       in->rank) ||
      !si_check_dims(c, "start_indices_batching_dims=",
                     g->start_indices_batching_dims.n,
                     g->start_indices_batching_dims.v, exr))
    return NULL;
  const I64List *ss = &i->gather_slice_sizes;
  if (ss->n != in->rank)
    return si_fail(c, "slice_sizes=%s has %d entries but the operand has rank "
                   "%d", si_list_str(c, ss->n, ss->v), ss->n, in->rank);
  if (ss->n != g->offset_dims.n + g->collapsed_slice_dims.n +
                   g->operand_batching_dims.n)
    return si_fail(c, "every operand dimension must be an offset, collapsed or "
                   "batching dimension: %d slice sizes, %d offset_dims, %d "
                   "collapsed_slice_dims, %d operand_batching_dims", ss->n,
                   g->offset_dims.n, g->collapsed_slice_dims.n,
                   g->operand_batching_dims.n);
  for (int d = 0; d < ss->n; d++) {
    if (si_dim_unbounded(in, d))
      continue;
    if (ss->v[d] < 0 || ss->v[d] > in->dims[d])
      return si_fail(c, "slice size %lld for dimension %d is out of range [0, "
                     "%lld]", (long long)ss->v[d], d, (long long)in->dims[d]);
  }
  for (int k = 0; k < g->collapsed_slice_dims.n; k++)
    if (ss->v[g->collapsed_slice_dims.v[k]] > 1)
      return si_fail(c, "collapsed dimension %lld has slice size %lld, must "
                     "be 0 or 1", (long long)g->collapsed_slice_dims.v[k],
                     (long long)ss->v[g->collapsed_slice_dims.v[k]]);
  for (int k = 0; k < g->operand_batching_dims.n; k++)
    if (ss->v[g->operand_batching_dims.v[k]] > 1)
      return si_fail(c, "batching dimension %lld has slice size %lld, must be "
                     "0 or 1", (long long)g->operand_batching_dims.v[k],
                     (long long)ss->v[g->operand_batching_dims.v[k]]);

  int64_t *dims = ARENA_ARRAY(c->a, int64_t, out_rank + 1);
  uint8_t *dyn = ARENA_ARRAY(c->a, uint8_t, out_rank + 1);
  int offset_seen = 0, gather_seen = 0;
  for (int d = 0; d < out_rank; d++) {
    if (contains(&g->offset_dims, d)) {
      while (contains(&g->collapsed_slice_dims, offset_seen) ||
             contains(&g->operand_batching_dims, offset_seen))
        offset_seen++;
      dyn[d] = ss->v[offset_seen] == in->dims[offset_seen] &&
                       si_dim_dynamic(in, offset_seen)
                   ? in->dyn[offset_seen]
                   : DIM_STATIC;
      dims[d] = ss->v[offset_seen++];
    } else {
      if (gather_seen == g->index_vector_dim)
        gather_seen++;
      dyn[d] = gather_seen < ix->rank && si_dim_dynamic(ix, gather_seen)
                   ? ix->dyn[gather_seen]
                   : DIM_STATIC;
      dims[d] = ex[gather_seen++];
    }
  }
  return si_array(c, in->et, out_rank, dims, dyn);
}

static bool check_scatter_dnums(SiCtx *c, const Shape *op, const int64_t *ex,
                                int exr, const Shape *up) {
  const ScatterDnums *s = c->i->scatter;
  if (!sorted_in_range(c, "update_window_dims", &s->update_window_dims,
                       up->rank) ||
      !sorted_in_range(c, "inserted_window_dims", &s->inserted_window_dims,
                       op->rank))
    return false;
  int window = s->update_window_dims.n + s->inserted_window_dims.n +
               s->input_batching_dims.n;
  if (window != op->rank) {
    si_fail(c, "update_window_dims, inserted_window_dims and "
            "input_batching_dims together have %d entries, but the operand "
            "has rank %d", window, op->rank);
    return false;
  }
  int64_t nidx = ex[s->index_vector_dim];
  if (!si_dims_compatible(s->scatter_dims_to_operand_dims.n, nidx)) {
    si_fail(c, "scatter_dims_to_operand_dims has %d entries but index vector "
            "dimension %lld of the indices has size %lld",
            s->scatter_dims_to_operand_dims.n, (long long)s->index_vector_dim,
            (long long)nidx);
    return false;
  }
  if (!si_check_dims(c, "scatter_dims_to_operand_dims=",
                     s->scatter_dims_to_operand_dims.n,
                     s->scatter_dims_to_operand_dims.v, op->rank))
    return false;
  for (int k = 0; k < s->input_batching_dims.n; k++) {
    if (contains(&s->inserted_window_dims, s->input_batching_dims.v[k])) {
      si_fail(c, "dimension %lld is both inserted and batching",
              (long long)s->input_batching_dims.v[k]);
      return false;
    }
  }
  if (s->input_batching_dims.n != s->scatter_indices_batching_dims.n) {
    si_fail(c, "input_batching_dims and scatter_indices_batching_dims differ "
            "in length (%d and %d)", s->input_batching_dims.n,
            s->scatter_indices_batching_dims.n);
    return false;
  }
  return sorted_in_range(c, "input_batching_dims", &s->input_batching_dims,
                         op->rank) &&
         si_check_dims(c, "scatter_indices_batching_dims=",
                       s->scatter_indices_batching_dims.n,
                       s->scatter_indices_batching_dims.v, exr);
}

/* scatter(operands..., indices, updates...): N operands, N updates, and a
 * reducer over N scalars; the result has the operands' shapes. */
Shape *si_infer_scatter(SiCtx *c) {
  const HloInstr *i = c->i;
  const ScatterDnums *s = i->scatter;
  int n = i->nops / 2;
  if (!s)
    return si_fail(c, "missing scatter dimension numbers");
  int64_t *ex;
  int exr;
  if (!expand_indices(c, si_op(c, n), s->index_vector_dim, &ex, &exr))
    return NULL;
  for (int k = 0; k < n; k++) {
    const Shape *op = si_op(c, k), *up = si_op(c, n + 1 + k);
    if (!is_array(op) || !is_array(up))
      return si_fail(c, "operand %d and update %d must be arrays", k, k);
    int want = exr - 1 + s->update_window_dims.n;
    if (up->rank != want)
      return si_fail(c, "update %d %s must have rank %d", k, si_str(c, up),
                     want);
    if (!check_scatter_dnums(c, op, ex, exr, up))
      return NULL;
    /* Window bounds of the updates fit the operand's remaining dims. */
    int w = 0;
    for (int d = 0; d < op->rank; d++) {
      if (contains(&s->inserted_window_dims, d) ||
          contains(&s->input_batching_dims, d))
        continue;
      int64_t ud = up->dims[s->update_window_dims.v[w]];
      if (ud > op->dims[d] && op->dims[d] >= 0)
        return si_fail(c, "update %d window dimension %lld (size %lld) "
                       "exceeds operand dimension %d (size %lld)", k,
                       (long long)s->update_window_dims.v[w], (long long)ud,
                       d, (long long)op->dims[d]);
      w++;
    }
    int seen = 0;
    for (int d = 0; d < up->rank; d++) {
      if (contains(&s->update_window_dims, d))
        continue;
      if (seen == s->index_vector_dim)
        seen++;
      if (!si_dims_compatible(up->dims[d], ex[seen]))
        return si_fail(c, "update %d scatter dimension %d has size %lld but "
                       "the indices give %lld", k, d, (long long)up->dims[d],
                       (long long)ex[seen]);
      seen++;
    }
  }
  SiProgram p;
  if (!si_program(c, 0, "update", &p))
    return NULL;
  const Shape **inits = ARENA_ARRAY(c->a, const Shape *, n);
  ElemType *ets = ARENA_ARRAY(c->a, ElemType, n);
  for (int k = 0; k < n; k++) {
    Shape *sc = ARENA_NEW(c->a, Shape);
    sc->et = si_op(c, k)->et;
    inits[k] = sc;
    ets[k] = si_op(c, n + 1 + k)->et;
  }
  if (!si_check_reducer(c, &p, n, inits, ets))
    return NULL;
  if (n == 1)
    return si_result(c, si_op(c, 0));
  Shape **el = ARENA_ARRAY(c->a, Shape *, n);
  for (int k = 0; k < n; k++)
    el[k] = si_result(c, si_op(c, k));
  return shape_tuple(c->a, n, el);
}
