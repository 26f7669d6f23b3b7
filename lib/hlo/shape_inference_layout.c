/*
 * shape_inference_layout.c - the data-movement ops: broadcast, reshape,
 * transpose, slices, pad, concatenate, reverse, iota, bitcast, dynamic
 * dimension sizes, sort and top-k.
 *
 * broadcast, reshape, dynamic-reshape, iota and bitcast take their output
 * dimensions from the declared shape (XLA's verifier checks them against the
 * operand rather than inferring them); the checks here are the ones XLA makes.
 */
#include "shape_inference_internal.h"

#include <string.h>

static bool is_array(const Shape *s) {
  return s->et != ET_TUPLE && si_et_array(s->et);
}

static const Shape *operand_array(SiCtx *c, int k) {
  const Shape *s = si_op(c, k);
  if (!is_array(s)) {
    si_fail(c, "operand %d must be an array, not %s", k, si_str(c, s));
    return NULL;
  }
  return s;
}

static const Shape *declared_array(SiCtx *c) {
  const Shape *s = c->i->shape;
  if (!is_array(s)) {
    si_fail(c, "result must be an array, not %s", si_str(c, s));
    return NULL;
  }
  return s;
}

/* broadcast: operand dimension k becomes result dimension dimensions[k]; the
 * other result dimensions are new. */
Shape *si_infer_broadcast(SiCtx *c) {
  const Shape *s = operand_array(c, 0);
  if (!s)
    return NULL;
  const I64List *dm = &c->i->dims;
  if (!c->i->shape) {
    /* Without a declared shape XLA's parser reads dimensions= as the sizes
     * of new major dimensions (ShapeInference::InferBroadcastShape). */
    int rank = dm->n + s->rank;
    int64_t *dims = ARENA_ARRAY(c->a, int64_t, rank + 1);
    uint8_t *dyn = ARENA_ARRAY(c->a, uint8_t, rank + 1);
    for (int k = 0; k < dm->n; k++) {
      if (dm->v[k] < 0)
        return si_fail(c, "negative broadcast size %lld", (long long)dm->v[k]);
      dims[k] = dm->v[k];
    }
    for (int k = 0; k < s->rank; k++) {
      dims[dm->n + k] = s->dims[k];
      dyn[dm->n + k] = s->dyn ? s->dyn[k] : DIM_STATIC;
    }
    return si_array(c, s->et, rank, dims, dyn);
  }
  const Shape *out = declared_array(c);
  if (!out)
    return NULL;
  if (dm->n != s->rank)
    return si_fail(c, "dimensions=%s has %d entries but the operand %s has "
                   "rank %d", si_list_str(c, dm->n, dm->v), dm->n,
                   si_str(c, s), s->rank);
  if (!si_check_dims(c, "dimensions=", dm->n, dm->v, out->rank))
    return NULL;
  for (int k = 0; k < dm->n; k++) {
    int64_t d = dm->v[k];
    if (out->dims[d] != s->dims[k])
      return si_fail(c, "operand dimension %d (size %lld) maps to result "
                     "dimension %lld of size %lld", k, (long long)s->dims[k],
                     (long long)d, (long long)out->dims[d]);
  }
  return si_with_et(c, out, s->et);
}

Shape *si_infer_reshape(SiCtx *c) {
  const Shape *s = operand_array(c, 0), *out = declared_array(c);
  if (!s || !out)
    return NULL;
  int64_t n_in = si_elements(s), n_out = si_elements(out);
  if (n_in >= 0 && n_out >= 0 && n_in != n_out)
    return si_fail(c, "operand %s has %lld elements but the result %s has "
                   "%lld", si_str(c, s), (long long)n_in, si_str(c, out),
                   (long long)n_out);
  return si_with_et(c, out, s->et);
}

/* dynamic-reshape(operand, size_0, ..., size_{r-1}): one s32 scalar per
 * result dimension. */
Shape *si_infer_dynamic_reshape(SiCtx *c) {
  const Shape *s = operand_array(c, 0), *out = declared_array(c);
  if (!s || !out)
    return NULL;
  if (c->i->nops != out->rank + 1)
    return si_fail(c, "needs one size operand per result dimension (%d), has "
                   "%d", out->rank, c->i->nops - 1);
  for (int k = 1; k < c->i->nops; k++) {
    const Shape *ks = si_op(c, k);
    if (ks->et != ET_S32 || ks->rank != 0)
      return si_fail(c, "size operand %d must be s32[], not %s", k,
                     si_str(c, ks));
  }
  int64_t n_in = si_elements(s), n_out = si_elements(out);
  if (n_in >= 0 && n_out >= 0 && n_in != n_out)
    return si_fail(c, "operand %s has %lld elements but the result bounds %s "
                   "hold %lld", si_str(c, s), (long long)n_in, si_str(c, out),
                   (long long)n_out);
  return si_with_et(c, out, s->et);
}

Shape *si_infer_transpose(SiCtx *c) {
  const Shape *s = operand_array(c, 0);
  if (!s)
    return NULL;
  const I64List *p = &c->i->dims;
  if (p->n != s->rank)
    return si_fail(c, "dimensions=%s is not a permutation of the %d "
                   "dimensions of %s", si_list_str(c, p->n, p->v), s->rank,
                   si_str(c, s));
  if (!si_check_dims(c, "dimensions=", p->n, p->v, s->rank))
    return NULL;
  int64_t *dims = ARENA_ARRAY(c->a, int64_t, s->rank + 1);
  uint8_t *dyn = ARENA_ARRAY(c->a, uint8_t, s->rank + 1);
  for (int d = 0; d < s->rank; d++) {
    dims[d] = s->dims[p->v[d]];
    dyn[d] = s->dyn ? s->dyn[p->v[d]] : DIM_STATIC;
  }
  return si_array(c, s->et, s->rank, dims, dyn);
}

Shape *si_infer_slice(SiCtx *c) {
  const Shape *s = operand_array(c, 0);
  if (!s)
    return NULL;
  if (s->rank > 0 && !c->i->slice)
    return si_fail(c, "missing slice={...}");
  int64_t *dims = ARENA_ARRAY(c->a, int64_t, s->rank + 1);
  uint8_t *dyn = ARENA_ARRAY(c->a, uint8_t, s->rank + 1);
  for (int d = 0; d < s->rank; d++) {
    SliceDim sd = c->i->slice[d];
    if (sd.start < 0)
      return si_fail(c, "dimension %d: negative start %lld", d,
                     (long long)sd.start);
    if (!si_dim_unbounded(s, d) && sd.limit > s->dims[d])
      return si_fail(c, "dimension %d: limit %lld exceeds the operand size "
                     "%lld", d, (long long)sd.limit, (long long)s->dims[d]);
    if (sd.start > sd.limit)
      return si_fail(c, "dimension %d: start %lld is greater than limit %lld",
                     d, (long long)sd.start, (long long)sd.limit);
    if (sd.stride <= 0)
      return si_fail(c, "dimension %d: stride %lld must be positive", d,
                     (long long)sd.stride);
    dims[d] = (sd.limit - sd.start + sd.stride - 1) / sd.stride;
    dyn[d] = dims[d] != 1 && s->dyn && s->dyn[d] == DIM_BOUNDED ? DIM_BOUNDED
                                                                : DIM_STATIC;
  }
  return si_array(c, s->et, s->rank, dims, dyn);
}

/* The start indices of dynamic-slice and dynamic-update-slice, operands
 * first..nops-1: one integer scalar per dimension (all of one type), or the
 * old form, a single rank-1 integer array. */
static bool check_start_indices(SiCtx *c, int first, const Shape *s) {
  int n = c->i->nops - first;
  if (n >= 1 && si_op(c, first)->rank == 1) {
    const Shape *ix = si_op(c, first);
    if (n != 1) {
      si_fail(c, "with a rank-1 start index operand there must be exactly "
              "one index operand, has %d", n);
      return false;
    }
    if (!is_array(ix) || !et_is_int(ix->et)) {
      si_fail(c, "start indices must be integers, not %s", si_str(c, ix));
      return false;
    }
    if (ix->dims[0] != s->rank) {
      si_fail(c, "start indices %s do not match the operand rank %d",
              si_str(c, ix), s->rank);
      return false;
    }
    return true;
  }
  if (n != s->rank) {
    si_fail(c, "needs %d start indices (the operand rank), has %d", s->rank,
            n);
    return false;
  }
  for (int k = first; k < c->i->nops; k++) {
    const Shape *ix = si_op(c, k);
    if (!is_array(ix) || ix->rank != 0 || !et_is_int(ix->et)) {
      si_fail(c, "start index operand %d must be an integer scalar, not %s",
              k, si_str(c, ix));
      return false;
    }
    if (ix->et != si_op(c, first)->et) {
      si_fail(c, "start indices must all have one type: %s and %s",
              si_str(c, si_op(c, first)), si_str(c, ix));
      return false;
    }
  }
  return true;
}

Shape *si_infer_dynamic_slice(SiCtx *c) {
  const Shape *s = operand_array(c, 0);
  if (!s || !check_start_indices(c, 1, s))
    return NULL;
  const I64List *sz = &c->i->dynamic_slice_sizes;
  if (sz->n != s->rank)
    return si_fail(c, "dynamic_slice_sizes=%s has %d entries but the operand "
                   "has rank %d", si_list_str(c, sz->n, sz->v), sz->n,
                   s->rank);
  uint8_t *dyn = ARENA_ARRAY(c->a, uint8_t, s->rank + 1);
  for (int d = 0; d < s->rank; d++) {
    if (sz->v[d] < 0)
      return si_fail(c, "negative slice size %lld", (long long)sz->v[d]);
    if (!si_dim_unbounded(s, d) && sz->v[d] > s->dims[d])
      return si_fail(c, "slice size %lld exceeds operand dimension %d of size "
                     "%lld", (long long)sz->v[d], d, (long long)s->dims[d]);
    dyn[d] = si_dim_dynamic(s, d) && sz->v[d] > 1 && sz->v[d] == s->dims[d]
                 ? s->dyn[d]
                 : DIM_STATIC;
  }
  return si_array(c, s->et, s->rank, sz->v, dyn);
}

Shape *si_infer_dynamic_update_slice(SiCtx *c) {
  const Shape *s = operand_array(c, 0), *u = s ? operand_array(c, 1) : NULL;
  if (!s || !u || !check_start_indices(c, 2, s))
    return NULL;
  if (u->rank != s->rank)
    return si_fail(c, "update %s and operand %s have different ranks",
                   si_str(c, u), si_str(c, s));
  if (u->et != s->et)
    return si_fail(c, "update element type %s differs from the operand's %s",
                   et_name(u->et), et_name(s->et));
  Shape *r = si_copy(c->a, s);
  for (int d = 0; d < s->rank; d++) {
    if (!si_dim_unbounded(s, d) && !si_dim_unbounded(u, d) &&
        u->dims[d] > s->dims[d])
      return si_fail(c, "update dimension %d (size %lld) exceeds the operand's "
                     "(size %lld)", d, (long long)u->dims[d],
                     (long long)s->dims[d]);
    if (si_dim_dynamic(u, d) && u->dims[d] == s->dims[d] &&
        !si_dim_dynamic(r, d))
      si_set_dynamic(c->a, r, d, u->dyn[d]);
  }
  return r;
}

Shape *si_infer_pad(SiCtx *c) {
  const Shape *s = operand_array(c, 0), *v = s ? operand_array(c, 1) : NULL;
  if (!s || !v)
    return NULL;
  if (v->rank != 0)
    return si_fail(c, "padding value must be a scalar, not %s", si_str(c, v));
  if (v->et != s->et)
    return si_fail(c, "padding value type %s differs from the operand's %s",
                   et_name(v->et), et_name(s->et));
  if (s->rank > 0 && !c->i->padding)
    return si_fail(c, "missing padding=");
  int64_t *dims = ARENA_ARRAY(c->a, int64_t, s->rank + 1);
  for (int d = 0; d < s->rank; d++) {
    PadDim p = c->i->padding[d];
    if (p.interior < 0)
      return si_fail(c, "dimension %d: negative interior padding %lld", d,
                     (long long)p.interior);
    if (si_dim_unbounded(s, d)) {
      dims[d] = -1;
      continue;
    }
    int64_t gaps = s->dims[d] > 0 ? s->dims[d] - 1 : 0;
    __int128 n = (__int128)s->dims[d] + p.lo + p.hi + (__int128)gaps * p.interior;
    if (n < 0)
      return si_fail(c, "dimension %d: padding gives a negative size", d);
    if (n > INT64_MAX)
      return si_fail(c, "dimension %d: padded size overflows", d);
    dims[d] = (int64_t)n;
  }
  return si_array(c, s->et, s->rank, dims, s->dyn);
}

Shape *si_infer_concatenate(SiCtx *c) {
  const HloInstr *i = c->i;
  const Shape *s0 = operand_array(c, 0);
  if (!s0)
    return NULL;
  if (i->dims.n != 1)
    return si_fail(c, "needs exactly one dimension in dimensions=, has %d",
                   i->dims.n);
  int64_t cd = i->dims.v[0];
  if (cd < 0 || cd >= s0->rank)
    return si_fail(c, "dimension %lld is out of range for %s", (long long)cd,
                   si_str(c, s0));
  int64_t *dims = ARENA_ARRAY(c->a, int64_t, s0->rank);
  uint8_t *dyn = ARENA_ARRAY(c->a, uint8_t, s0->rank);
  memcpy(dims, s0->dims, sizeof(int64_t) * (size_t)s0->rank);
  if (s0->dyn)
    memcpy(dyn, s0->dyn, (size_t)s0->rank);
  for (int k = 1; k < i->nops; k++) {
    const Shape *s = operand_array(c, k);
    if (!s)
      return NULL;
    if (s->rank != s0->rank)
      return si_fail(c, "operand %d %s and operand 0 %s have different ranks",
                     k, si_str(c, s), si_str(c, s0));
    if (s->et != s0->et)
      return si_fail(c, "operand %d %s and operand 0 %s have different element "
                     "types", k, si_str(c, s), si_str(c, s0));
    for (int d = 0; d < s0->rank; d++) {
      if (d == cd) {
        dims[d] = dims[d] < 0 || s->dims[d] < 0 ? -1 : dims[d] + s->dims[d];
        if (dims[d] < 0)
          dyn[d] = DIM_UNBOUNDED;
        else if (si_dim_dynamic(s, d))
          dyn[d] = DIM_BOUNDED;
        continue;
      }
      if (!si_dims_compatible(dims[d], s->dims[d]))
        return si_fail(c, "operand %d %s differs from operand 0 %s in "
                       "dimension %d", k, si_str(c, s), si_str(c, s0), d);
      if (dims[d] < 0 && s->dims[d] >= 0) {
        dims[d] = s->dims[d];
        dyn[d] = s->dyn ? s->dyn[d] : DIM_STATIC;
      } else if (si_dim_dynamic(s, d) && dyn[d] == DIM_STATIC) {
        dyn[d] = s->dyn[d];
      }
    }
  }
  return si_array(c, s0->et, s0->rank, dims, dyn);
}

Shape *si_infer_reverse(SiCtx *c) {
  const Shape *s = operand_array(c, 0);
  if (!s || !si_check_dims(c, "dimensions=", c->i->dims.n, c->i->dims.v,
                           s->rank))
    return NULL;
  return si_result(c, s);
}

Shape *si_infer_iota(SiCtx *c) {
  const Shape *out = declared_array(c);
  if (!out)
    return NULL;
  if (out->rank == 0)
    return si_fail(c, "result must not be a scalar");
  if (c->i->iota_dim < 0 || c->i->iota_dim >= out->rank)
    return si_fail(c, "iota_dimension=%lld is out of range for %s",
                   (long long)c->i->iota_dim, si_str(c, out));
  if (!et_is_int(out->et) && !et_is_float(out->et) && !et_is_complex(out->et))
    return si_fail(c, "element type must be integer, floating point or "
                   "complex, not %s", et_name(out->et));
  return si_result(c, out);
}

/* A bitcast reinterprets its operand's buffer: the result's shape is
 * declared.  XLA checks nothing more before layout assignment; we also
 * require equal buffer sizes for static arrays (what XLA's layout-sensitive
 * verifier checks), accepting equal logical bit counts or equal byte counts
 * so that sub-byte types pass either way. */
Shape *si_infer_bitcast(SiCtx *c) {
  const Shape *s = si_op(c, 0), *out = c->i->shape;
  if (is_array(s) && is_array(out)) {
    int64_t n_in = si_elements(s), n_out = si_elements(out);
    if (n_in >= 0 && n_out >= 0 && !shape_is_dynamic(s) &&
        !shape_is_dynamic(out)) {
      __int128 bits_in = (__int128)n_in * et_bits(s->et);
      __int128 bits_out = (__int128)n_out * et_bits(out->et);
      __int128 bytes_in = (__int128)n_in * et_bytes(s->et);
      __int128 bytes_out = (__int128)n_out * et_bytes(out->et);
      if (bits_in != bits_out && bytes_in != bytes_out)
        return si_fail(c, "operand %s and result %s have different sizes",
                       si_str(c, s), si_str(c, out));
    }
  }
  return si_result(c, out);
}

static bool dimension_attr(SiCtx *c, const Shape *s, int64_t *d) {
  if (c->i->dims.n != 1) {
    si_fail(c, "needs exactly one dimension in dimensions=, has %d",
            c->i->dims.n);
    return false;
  }
  *d = c->i->dims.v[0];
  if (*d < 0 || *d >= s->rank) {
    si_fail(c, "dimension %lld is out of range for %s", (long long)*d,
            si_str(c, s));
    return false;
  }
  if (s->dims[*d] > INT32_MAX) {
    si_fail(c, "dimension %lld of %s exceeds the s32 range", (long long)*d,
            si_str(c, s));
    return false;
  }
  return true;
}

Shape *si_infer_get_dimension_size(SiCtx *c) {
  const Shape *s = operand_array(c, 0);
  int64_t d;
  if (!s || !dimension_attr(c, s, &d))
    return NULL;
  return shape_scalar(c->a, ET_S32);
}

Shape *si_infer_set_dimension_size(SiCtx *c) {
  const Shape *s = operand_array(c, 0);
  int64_t d;
  if (!s || !dimension_attr(c, s, &d))
    return NULL;
  const Shape *v = si_op(c, 1);
  if (v->et != ET_S32 || v->rank != 0)
    return si_fail(c, "size operand must be s32[], not %s", si_str(c, v));
  Shape *r = si_copy(c->a, s);
  if (!si_dim_dynamic(r, (int)d))
    si_set_dynamic(c->a, r, (int)d, DIM_BOUNDED);
  return r;
}

/* sort: operands share dimensions; the comparator takes two scalars per
 * operand (of its element type) and returns pred[]. */
Shape *si_infer_sort(SiCtx *c) {
  const HloInstr *i = c->i;
  const Shape *s0 = operand_array(c, 0);
  if (!s0)
    return NULL;
  for (int k = 1; k < i->nops; k++) {
    const Shape *s = operand_array(c, k);
    if (!s)
      return NULL;
    if (!si_same_dims(s0, s))
      return si_fail(c, "operand %d %s and operand 0 %s have different "
                     "dimensions", k, si_str(c, s), si_str(c, s0));
  }
  if (i->dims.n != 1)
    return si_fail(c, "needs exactly one dimension in dimensions=, has %d",
                   i->dims.n);
  if (i->dims.v[0] < 0 || i->dims.v[0] >= s0->rank)
    return si_fail(c, "sort dimension %lld is out of range for %s",
                   (long long)i->dims.v[0], si_str(c, s0));
  SiProgram p;
  if (!si_program(c, 0, "comparator", &p))
    return NULL;
  Shape pred = {.et = ET_PRED};
  if (!si_compatible(p.result, &pred, 0))
    return si_fail(c, "comparator '%s' must return pred[], returns %s",
                   p.comp->name, si_str(c, p.result));
  if (p.nparams != 2 * i->nops)
    return si_fail(c, "comparator '%s' must take %d parameters, takes %d",
                   p.comp->name, 2 * i->nops, p.nparams);
  for (int k = 0; k < p.nparams; k++) {
    Shape want = {.et = si_op(c, k / 2)->et};
    if (!si_compatible(&want, p.params[k], SI_CMP_IGNORE_FP))
      return si_fail(c, "comparator '%s' parameter %d must be %s, is %s",
                     p.comp->name, k, si_str(c, &want),
                     si_str(c, p.params[k]));
  }
  if (i->nops == 1)
    return si_result(c, s0);
  Shape **el = ARENA_ARRAY(c->a, Shape *, i->nops);
  for (int k = 0; k < i->nops; k++)
    el[k] = si_result(c, si_op(c, k));
  return shape_tuple(c->a, i->nops, el);
}

Shape *si_infer_topk(SiCtx *c) {
  const Shape *s = operand_array(c, 0);
  if (!s)
    return NULL;
  if (s->rank == 0)
    return si_fail(c, "operand must not be a scalar");
  int last = s->rank - 1;
  int64_t k = c->i->topk_k;
  if (k < 0 || (!si_dim_unbounded(s, last) && k > s->dims[last]))
    return si_fail(c, "k=%lld is larger than the last dimension of %s",
                   (long long)k, si_str(c, s));
  Shape *v = si_copy(c->a, s);
  v->dims[last] = k;
  if (v->dyn)
    v->dyn[last] = DIM_STATIC;
  return si_tuple2(c, v, si_with_et(c, v, ET_S32));
}
