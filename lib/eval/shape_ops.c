/*
 * shape_ops.c - ops that move elements without computing: iota, broadcast,
 * reshape, bitcast (layout-aware), transpose, slice, dynamic-slice,
 * dynamic-update-slice, pad, concatenate, reverse.
 *
 * All of them reduce to one primitive, ev_copy_strided: walk a box of `dims`
 * in row-major order reading at source strides and writing at destination
 * strides (in elements, possibly zero or negative), with contiguous inner
 * runs done by memcpy.  Broadcast is a zero stride, transpose permuted
 * strides, reverse a negative stride, pad and concatenate strided writes.
 * Dynamic starts are clamped to [0, dim - size] as XLA does.
 */
#include <stdlib.h>
#include <string.h>

#include "evalp.h"

#define MAX_RANK 64

void ev_copy_strided(int rank, const int64_t *dims, const uint8_t *src,
                         const int64_t *sstr, uint8_t *dst,
                         const int64_t *dstr, int eb) {
  for (int k = 0; k < rank; k++)
    if (dims[k] <= 0) return;
  if (rank == 0) {
    memcpy(dst, src, (size_t)eb);
    return;
  }
  int64_t idx[MAX_RANK] = {0};
  int last = rank - 1;
  int64_t n = dims[last];
  int64_t ss = sstr[last] * eb, ds = dstr[last] * eb;
  for (;;) {
    const uint8_t *s = src;
    uint8_t *d = dst;
    if (sstr[last] == 1 && dstr[last] == 1) {
      memcpy(d, s, (size_t)(n * eb));
    } else if (eb == 4) {
      for (int64_t j = 0; j < n; j++, s += ss, d += ds) memcpy(d, s, 4);
    } else {
      for (int64_t j = 0; j < n; j++, s += ss, d += ds) memcpy(d, s, (size_t)eb);
    }
    int k = last - 1;
    for (; k >= 0; k--) {
      src += sstr[k] * eb;
      dst += dstr[k] * eb;
      if (++idx[k] < dims[k]) break;
      src -= sstr[k] * eb * dims[k];
      dst -= dstr[k] * eb * dims[k];
      idx[k] = 0;
    }
    if (k < 0) return;
  }
}

void ev_copy_box(int rank, const int64_t *sdims, const uint8_t *src,
                 const int64_t *start, const int64_t *size,
                 const int64_t *stride, uint8_t *dst, int eb) {
  int64_t sst[MAX_RANK], dst_st[MAX_RANK], sstr[MAX_RANK];
  int64_t st = 1, dt = 1;
  for (int k = rank - 1; k >= 0; k--) {
    sst[k] = st;
    st *= sdims[k];
    dst_st[k] = dt;
    dt *= size[k];
  }
  int64_t off = 0;
  for (int k = 0; k < rank; k++) {
    off += start[k] * sst[k];
    sstr[k] = sst[k] * (stride ? stride[k] : 1);
  }
  ev_copy_strided(rank, size, src + off * eb, sstr, dst, dst_st, eb);
}

static bool rank_ok(Eval *ev, const HloInstr *i, const Shape *s) {
  if (!shape_is_array(s)) return ev_fail(ev, i, EVAL_ERR_INVALID, "non-array shape");
  if (s->rank > MAX_RANK) return ev_fail(ev, i, EVAL_ERR_INVALID, "rank %d too large", s->rank);
  return true;
}

EvalValue *eval_copy_array(Eval *ev, const HloInstr *i, EvalValue *v) {
  return ev_copy(ev, v, i->shape);
}

EvalValue *eval_iota(Eval *ev, const HloInstr *i) {
  const Shape *s = i->shape;
  if (!rank_ok(ev, i, s)) return NULL;
  int64_t d = i->iota_dim;
  if (s->rank == 0 || d < 0 || d >= s->rank) {
    ev_fail(ev, i, EVAL_ERR_INVALID, "iota dimension %lld out of range", (long long)d);
    return NULL;
  }
  EvalValue *r = ev_array_nozero(ev, s);
  if (!r) return NULL;
  int eb = et_bytes(s->et);
  int64_t len = s->dims[d];
  uint8_t *row = xmalloc((size_t)(len * eb + 1));
  for (int64_t k = 0; k < len; k++) {
    int64_t v = k;
    ev_convert_elems(ET_S64, (const uint8_t *)&v, s->et, row + k * eb, 1);
  }
  int64_t strides[MAX_RANK], zero[MAX_RANK];
  ev_strides(s, strides);
  for (int k = 0; k < s->rank; k++) zero[k] = k == d ? 1 : 0;
  ev_copy_strided(s->rank, s->dims, row, zero, r->data, strides, eb);
  free(row);
  return r;
}

EvalValue *eval_broadcast(Eval *ev, const HloInstr *i, EvalValue *const *a) {
  const Shape *s = i->shape, *os = i->ops[0]->shape;
  if (!rank_ok(ev, i, s) || !rank_ok(ev, i, os)) return NULL;
  if (i->dims.n != os->rank) {
    ev_fail(ev, i, EVAL_ERR_INVALID, "broadcast dimensions do not match operand rank");
    return NULL;
  }
  int64_t ostr[MAX_RANK], sstr[MAX_RANK] = {0}, dstr[MAX_RANK];
  ev_strides(os, ostr);
  for (int k = 0; k < os->rank; k++) {
    int64_t d = i->dims.v[k];
    if (d < 0 || d >= s->rank || s->dims[d] != os->dims[k]) {
      ev_fail(ev, i, EVAL_ERR_INVALID, "bad broadcast dimension %lld", (long long)d);
      return NULL;
    }
    sstr[d] = ostr[k];
  }
  if (s->et != os->et) {
    ev_fail(ev, i, EVAL_ERR_INVALID, "broadcast changes the element type");
    return NULL;
  }
  EvalValue *r = ev_array_nozero(ev, s);
  if (!r) return NULL;
  ev_strides(s, dstr);
  ev_copy_strided(s->rank, s->dims, a[0]->data, sstr, r->data, dstr, et_bytes(s->et));
  return r;
}

EvalValue *eval_reshape(Eval *ev, const HloInstr *i, EvalValue *const *a) {
  const Shape *s = i->shape;
  if (!rank_ok(ev, i, s)) return NULL;
  if (ev_elems(s) != ev_elems(i->ops[0]->shape) || s->et != i->ops[0]->shape->et) {
    ev_fail(ev, i, EVAL_ERR_INVALID, "reshape changes the element count or type");
    return NULL;
  }
  return ev_view(ev, a[0], s);
}

/* Physical order of a shape: dimensions from major to minor. */
static bool phys_order(const Shape *s, int64_t *order) {
  const Layout *l = s->layout;
  if (!l || l->rank != s->rank || !l->minor_to_major) {
    for (int k = 0; k < s->rank; k++) order[k] = k;
    return true;
  }
  bool seen[MAX_RANK] = {false};
  for (int k = 0; k < s->rank; k++) {
    int64_t d = l->minor_to_major[s->rank - 1 - k];
    if (d < 0 || d >= s->rank || seen[d]) return false;
    seen[d] = true;
    order[k] = d;
  }
  return true;
}

static bool is_identity(const int64_t *order, int rank) {
  for (int k = 0; k < rank; k++)
    if (order[k] != k) return false;
  return true;
}

EvalValue *eval_bitcast(Eval *ev, const HloInstr *i, EvalValue *const *a) {
  const Shape *s = i->shape, *os = i->ops[0]->shape;
  if (!rank_ok(ev, i, s) || !rank_ok(ev, i, os)) return NULL;
  int64_t nb = ev_elems(s) * et_bytes(s->et);
  if (nb != a[0]->nbytes) {
    ev_fail(ev, i, EVAL_ERR_INVALID, "bitcast changes the byte size");
    return NULL;
  }
  int64_t in_order[MAX_RANK], out_order[MAX_RANK];
  if (!phys_order(s, out_order) || !phys_order(os, in_order)) {
    ev_fail(ev, i, EVAL_ERR_INVALID, "bad layout");
    return NULL;
  }
  bool in_id = is_identity(in_order, os->rank), out_id = is_identity(out_order, s->rank);
  if (in_id && out_id) return ev_view(ev, a[0], s);
  if (et_bytes(s->et) != et_bytes(os->et)) {
    ev_unsupported(ev, i, "bitcast changing element size with non-default layouts");
    return NULL;
  }
  int eb = et_bytes(s->et);
  /* 1. operand to its physical order */
  uint8_t *phys = a[0]->data;
  void *tmp = NULL;
  if (!in_id) {
    tmp = ev_scratch(ev, i, nb);
    if (!tmp) return NULL;
    int64_t ostr[MAX_RANK], pd[MAX_RANK], ps[MAX_RANK], pdst[MAX_RANK];
    ev_strides(os, ostr);
    for (int k = 0; k < os->rank; k++) {
      pd[k] = os->dims[in_order[k]];
      ps[k] = ostr[in_order[k]];
    }
    int64_t st = 1;
    for (int k = os->rank - 1; k >= 0; k--) {
      pdst[k] = st;
      st *= pd[k];
    }
    ev_copy_strided(os->rank, pd, a[0]->data, ps, tmp, pdst, eb);
    phys = tmp;
  }
  EvalValue *r = ev_array_nozero(ev, s);
  if (!r) {
    ev_scratch_free(ev, tmp, nb);
    return NULL;
  }
  /* 2. physical bytes read back in the result's logical order */
  if (out_id) {
    memcpy(r->data, phys, (size_t)nb);
  } else {
    int64_t rstr[MAX_RANK], pstr[MAX_RANK], sstr[MAX_RANK];
    ev_strides(s, rstr);
    int64_t st = 1;
    for (int k = s->rank - 1; k >= 0; k--) {
      pstr[out_order[k]] = st;           /* stride of logical dim in phys */
      st *= s->dims[out_order[k]];
    }
    for (int k = 0; k < s->rank; k++) sstr[k] = pstr[k];
    ev_copy_strided(s->rank, s->dims, phys, sstr, r->data, rstr, eb);
  }
  ev_scratch_free(ev, tmp, nb);
  return r;
}

EvalValue *eval_transpose(Eval *ev, const HloInstr *i, EvalValue *const *a) {
  const Shape *s = i->shape, *os = i->ops[0]->shape;
  if (!rank_ok(ev, i, s) || !rank_ok(ev, i, os)) return NULL;
  if (i->dims.n != s->rank || s->rank != os->rank) {
    ev_fail(ev, i, EVAL_ERR_INVALID, "transpose permutation has the wrong size");
    return NULL;
  }
  int64_t ostr[MAX_RANK], sstr[MAX_RANK], dstr[MAX_RANK];
  ev_strides(os, ostr);
  for (int k = 0; k < s->rank; k++) {
    int64_t d = i->dims.v[k];
    if (d < 0 || d >= os->rank || os->dims[d] != s->dims[k]) {
      ev_fail(ev, i, EVAL_ERR_INVALID, "bad transpose permutation");
      return NULL;
    }
    sstr[k] = ostr[d];
  }
  EvalValue *r = ev_array_nozero(ev, s);
  if (!r) return NULL;
  ev_strides(s, dstr);
  ev_copy_strided(s->rank, s->dims, a[0]->data, sstr, r->data, dstr, et_bytes(s->et));
  return r;
}

EvalValue *eval_slice(Eval *ev, const HloInstr *i, EvalValue *const *a) {
  const Shape *s = i->shape, *os = i->ops[0]->shape;
  if (!rank_ok(ev, i, s) || !rank_ok(ev, i, os)) return NULL;
  if (!i->slice || s->rank != os->rank) {
    ev_fail(ev, i, EVAL_ERR_INVALID, "slice without bounds");
    return NULL;
  }
  int64_t start[MAX_RANK], step[MAX_RANK];
  for (int k = 0; k < s->rank; k++) {
    SliceDim sd = i->slice[k];
    if (sd.stride < 1 || sd.start < 0 || sd.limit > os->dims[k] || sd.start > sd.limit ||
        (sd.limit - sd.start + sd.stride - 1) / sd.stride != s->dims[k]) {
      ev_fail(ev, i, EVAL_ERR_INVALID, "slice bounds do not fit dimension %d", k);
      return NULL;
    }
    start[k] = sd.start;
    step[k] = sd.stride;
  }
  EvalValue *r = ev_array_nozero(ev, s);
  if (!r) return NULL;
  ev_copy_box(s->rank, os->dims, a[0]->data, start, s->dims, step, r->data,
              et_bytes(s->et));
  return r;
}

/* Start indices of dynamic-slice / dynamic-update-slice, clamped so the box
 * of `size` fits. Operands from `first` on are the scalar starts (or one
 * rank-1 array in the old form). */
static bool dyn_starts(Eval *ev, const HloInstr *i, EvalValue *const *a,
                       int first, const Shape *os, const int64_t *size,
                       int64_t *start) {
  int n = i->nops - first;
  if (n == 1 && os->rank != 1 && i->ops[first]->shape->rank == 1) {
    const Shape *is = i->ops[first]->shape;
    if (is->dims[0] != os->rank) goto bad;
    int eb = et_bytes(is->et);
    for (int k = 0; k < os->rank; k++)
      start[k] = ev_get_index(is->et, a[first]->data + k * eb);
  } else {
    if (n != os->rank) goto bad;
    for (int k = 0; k < os->rank; k++) {
      const Shape *is = i->ops[first + k]->shape;
      if (!et_is_int(is->et) || ev_elems(is) != 1) goto bad;
      start[k] = ev_get_index(is->et, a[first + k]->data);
    }
  }
  for (int k = 0; k < os->rank; k++) {
    if (size[k] < 0 || size[k] > os->dims[k]) {
      ev_fail(ev, i, EVAL_ERR_INVALID, "slice size exceeds dimension %d", k);
      return false;
    }
    int64_t hi = os->dims[k] - size[k];
    if (start[k] < 0) start[k] = 0;
    if (start[k] > hi) start[k] = hi;
  }
  return true;
bad:
  ev_fail(ev, i, EVAL_ERR_INVALID, "bad start indices");
  return false;
}

EvalValue *eval_dynamic_slice(Eval *ev, const HloInstr *i, EvalValue *const *a) {
  const Shape *s = i->shape, *os = i->ops[0]->shape;
  if (!rank_ok(ev, i, s) || !rank_ok(ev, i, os) || s->rank != os->rank) {
    if (!ev->d->has_error) ev_fail(ev, i, EVAL_ERR_INVALID, "rank mismatch");
    return NULL;
  }
  int64_t start[MAX_RANK];
  if (!dyn_starts(ev, i, a, 1, os, s->dims, start)) return NULL;
  EvalValue *r = ev_array_nozero(ev, s);
  if (!r) return NULL;
  ev_copy_box(s->rank, os->dims, a[0]->data, start, s->dims, NULL, r->data,
              et_bytes(s->et));
  return r;
}

EvalValue *eval_dynamic_update_slice(Eval *ev, const HloInstr *i,
                                     EvalValue *const *a) {
  const Shape *s = i->shape, *us = i->ops[1]->shape;
  if (!rank_ok(ev, i, s) || !rank_ok(ev, i, us) || s->rank != us->rank ||
      us->et != s->et) {
    if (!ev->d->has_error) ev_fail(ev, i, EVAL_ERR_INVALID, "update does not match operand");
    return NULL;
  }
  int64_t start[MAX_RANK];
  if (!dyn_starts(ev, i, a, 2, s, us->dims, start)) return NULL;
  EvalValue *r = ev_steal(ev, a, 0, s);   /* in place when the operand dies here */
  if (!r) r = ev_copy(ev, a[0], s);
  if (!r) return NULL;
  int64_t sst[MAX_RANK], ust[MAX_RANK];
  ev_strides(s, sst);
  ev_strides(us, ust);
  int64_t off = 0;
  for (int k = 0; k < s->rank; k++) off += start[k] * sst[k];
  int eb = et_bytes(s->et);
  ev_copy_strided(s->rank, us->dims, a[1]->data, ust, r->data + off * eb, sst, eb);
  return r;
}

EvalValue *eval_pad(Eval *ev, const HloInstr *i, EvalValue *const *a) {
  const Shape *s = i->shape, *os = i->ops[0]->shape;
  if (!rank_ok(ev, i, s) || !rank_ok(ev, i, os)) return NULL;
  if (!i->padding || s->rank != os->rank || i->ops[1]->shape->et != s->et ||
      os->et != s->et) {
    ev_fail(ev, i, EVAL_ERR_INVALID, "pad without a padding config or mismatched types");
    return NULL;
  }
  for (int k = 0; k < s->rank; k++) {
    PadDim p = i->padding[k];
    int64_t want = os->dims[k] == 0 ? p.lo + p.hi
                                    : p.lo + p.hi + os->dims[k] + (os->dims[k] - 1) * p.interior;
    if (p.interior < 0 || want != s->dims[k]) {
      ev_fail(ev, i, EVAL_ERR_INVALID, "padding does not give dimension %d", k);
      return NULL;
    }
  }
  EvalValue *r = ev_array_nozero(ev, s);
  if (!r) return NULL;
  int eb = et_bytes(s->et);
  int64_t n = ev_elems(s);
  for (int64_t k = 0; k < n; k++) memcpy(r->data + k * eb, a[1]->data, (size_t)eb);
  /* operand index range [lo_k, hi_k) that lands inside the result */
  int64_t sst[MAX_RANK], ost[MAX_RANK], box[MAX_RANK], dstr[MAX_RANK];
  ev_strides(s, sst);
  ev_strides(os, ost);
  int64_t soff = 0, doff = 0;
  for (int k = 0; k < s->rank; k++) {
    PadDim p = i->padding[k];
    int64_t step = p.interior + 1;
    int64_t first = 0;
    if (p.lo < 0) first = (-p.lo + step - 1) / step;
    int64_t last = os->dims[k];   /* exclusive */
    /* target = lo + idx*step < s->dims[k] */
    if (s->dims[k] - p.lo <= 0) last = 0;
    else {
      int64_t lim = (s->dims[k] - p.lo + step - 1) / step;
      if (lim < last) last = lim;
    }
    box[k] = last > first ? last - first : 0;
    soff += first * ost[k];
    doff += (p.lo + first * step) * sst[k];
    dstr[k] = step * sst[k];
  }
  ev_copy_strided(s->rank, box, a[0]->data + soff * eb, ost, r->data + doff * eb, dstr, eb);
  return r;
}

EvalValue *eval_concatenate(Eval *ev, const HloInstr *i, EvalValue *const *a) {
  const Shape *s = i->shape;
  if (!rank_ok(ev, i, s)) return NULL;
  if (i->dims.n != 1 || i->dims.v[0] < 0 || i->dims.v[0] >= s->rank || i->nops < 1) {
    ev_fail(ev, i, EVAL_ERR_INVALID, "bad concatenate dimension");
    return NULL;
  }
  int d = (int)i->dims.v[0];
  int64_t total = 0;
  for (int k = 0; k < i->nops; k++) {
    const Shape *os = i->ops[k]->shape;
    if (!shape_is_array(os) || os->rank != s->rank || os->et != s->et) {
      ev_fail(ev, i, EVAL_ERR_INVALID, "operand %d does not match", k);
      return NULL;
    }
    for (int j = 0; j < s->rank; j++)
      if (j != d && os->dims[j] != s->dims[j]) {
        ev_fail(ev, i, EVAL_ERR_INVALID, "operand %d does not match", k);
        return NULL;
      }
    total += os->dims[d];
  }
  if (total != s->dims[d]) {
    ev_fail(ev, i, EVAL_ERR_INVALID, "operands do not add up to the result");
    return NULL;
  }
  EvalValue *r = ev_array_nozero(ev, s);
  if (!r) return NULL;
  int eb = et_bytes(s->et);
  int64_t sst[MAX_RANK], ost[MAX_RANK];
  ev_strides(s, sst);
  int64_t at = 0;
  for (int k = 0; k < i->nops; k++) {
    const Shape *os = i->ops[k]->shape;
    ev_strides(os, ost);
    ev_copy_strided(s->rank, os->dims, a[k]->data, ost, r->data + at * sst[d] * eb, sst, eb);
    at += os->dims[d];
  }
  return r;
}

EvalValue *eval_reverse(Eval *ev, const HloInstr *i, EvalValue *const *a) {
  const Shape *s = i->shape;
  if (!rank_ok(ev, i, s)) return NULL;
  int64_t st[MAX_RANK], sstr[MAX_RANK];
  ev_strides(s, st);
  int64_t off = 0;
  for (int k = 0; k < s->rank; k++) sstr[k] = st[k];
  for (int k = 0; k < i->dims.n; k++) {
    int64_t d = i->dims.v[k];
    if (d < 0 || d >= s->rank) {
      ev_fail(ev, i, EVAL_ERR_INVALID, "bad reverse dimension");
      return NULL;
    }
    if (sstr[d] < 0) continue;
    if (s->dims[d] > 0) off += (s->dims[d] - 1) * st[d];
    sstr[d] = -st[d];
  }
  EvalValue *r = ev_array_nozero(ev, s);
  if (!r) return NULL;
  int eb = et_bytes(s->et);
  ev_copy_strided(s->rank, s->dims, a[0]->data + off * eb, sstr, r->data, st, eb);
  return r;
}
