/*
 * algsimp_shape.c - the algebraic simplifier's rules for data-movement ops:
 *
 *   reshape(x) of x's own shape                 =>  x
 *   reshape(reshape(x))                          =>  reshape(x)
 *   reshape/transpose/slice(broadcast(scalar))   =>  broadcast(scalar)
 *   transpose(x), identity permutation           =>  x
 *   transpose(transpose(x))                      =>  transpose(x), composed
 *   broadcast(x), same shape, identity dims      =>  x
 *   broadcast(broadcast(x))                      =>  broadcast(x), composed
 *   bitcast(x) of x's shape, bitcast(bitcast(x)) =>  x, bitcast(x)
 *   slice(x), the whole of x                     =>  x
 *   slice(slice(x))                              =>  slice(x), combined
 *   slice(concatenate(..., x, ...)) within x     =>  slice(x)
 *   slice(pad(x)) within x (no interior pad)     =>  slice(x)
 *   concatenate(x)                               =>  x
 *   concatenate(..., empty, ...)                 =>  concatenate without it
 *   concatenate(slice(x)[a:b], slice(x)[b:c])    =>  slice(x)[a:c]
 *   pad(x) with no padding                       =>  x
 *   reverse(reverse(x)) over the same dims       =>  x
 *   reverse(x) over size-1 dims only             =>  x
 *   dynamic-slice(x) with constant starts        =>  slice(x), starts clamped
 *   dynamic-update-slice(x, u) with u as big as x => u
 */
#include "algsimp.h"

#include <string.h>

static bool same_dims(const Shape *a, const Shape *b) {
  if (a->rank != b->rank)
    return false;
  for (int k = 0; k < a->rank; k++)
    if (a->dims[k] != b->dims[k])
      return false;
  return true;
}

/* broadcast(x) of a scalar x into i's shape. */
static HloInstr *bcast_scalar(Simp *s, const HloInstr *i, HloInstr *x) {
  if (x->shape->rank != 0)
    return NULL;
  return ir_broadcast(s->e, s->c, x, i->shape, 0, NULL);
}

static bool is_scalar_broadcast(const HloInstr *x) {
  return x->op == HLO_BROADCAST && x->ops[0]->shape->rank == 0;
}

static HloInstr *simp_reshape(Simp *s, HloInstr *i) {
  HloInstr *a = i->ops[0];
  if (same_dims(a->shape, i->shape))
    return as_is(i, a);
  if (a->op == HLO_RESHAPE) {
    HloInstr *x = a->ops[0];
    if (same_dims(x->shape, i->shape))
      return as_is(i, x);
    return with_operands(s, i, 1, &x);
  }
  if (is_scalar_broadcast(a))
    return bcast_scalar(s, i, a->ops[0]);
  return NULL;
}

static bool identity_perm(const I64List *p) {
  for (int k = 0; k < p->n; k++)
    if (p->v[k] != k)
      return false;
  return true;
}

static HloInstr *simp_transpose(Simp *s, HloInstr *i) {
  HloInstr *a = i->ops[0];
  if (identity_perm(&i->dims))
    return as_is(i, a);
  if (a->op == HLO_TRANSPOSE) {
    int r = i->shape->rank;
    int64_t *p = dup_dims(s, i->dims.v, r);
    for (int k = 0; k < r; k++)
      p[k] = a->dims.v[i->dims.v[k]];
    HloInstr *x = a->ops[0];
    I64List perm = {r, p};
    if (identity_perm(&perm))
      return as_is(i, x);
    HloInstr *t = with_operands(s, i, 1, &x);
    t->dims = perm;
    return t;
  }
  if (is_scalar_broadcast(a))
    return bcast_scalar(s, i, a->ops[0]);
  return NULL;
}

static HloInstr *simp_broadcast(Simp *s, HloInstr *i) {
  HloInstr *a = i->ops[0];
  if (a->shape->rank == i->shape->rank && identity_perm(&i->dims))
    return as_is(i, a);
  if (a->op == HLO_BROADCAST) {
    HloInstr *x = a->ops[0];
    int n = a->dims.n;
    int64_t *d = dup_dims(s, a->dims.v, n);
    for (int k = 0; k < n; k++)
      d[k] = i->dims.v[a->dims.v[k]];
    HloInstr *b = with_operands(s, i, 1, &x);
    b->dims = (I64List){n, d};
    return b;
  }
  return NULL;
}

static HloInstr *simp_bitcast(Simp *s, HloInstr *i) {
  HloInstr *a = i->ops[0];
  if (shape_equal(a->shape, i->shape))
    return a;
  if (a->op == HLO_BITCAST) {
    HloInstr *x = a->ops[0];
    if (shape_equal(x->shape, i->shape))
      return x;
    return with_operands(s, i, 1, &x);
  }
  return NULL;
}

static HloInstr *new_slice(Simp *s, const HloInstr *i, HloInstr *x,
                           SliceDim *sl) {
  HloInstr *n = with_operands(s, i, 1, &x);
  n->slice = sl;
  return n;
}

static bool full_slice(const SliceDim *sl, const Shape *of) {
  for (int k = 0; k < of->rank; k++)
    if (sl[k].start != 0 || sl[k].stride != 1 || sl[k].limit != of->dims[k])
      return false;
  return true;
}

/* slice(concatenate(...)) that reads from one operand only. */
static HloInstr *slice_of_concat(Simp *s, HloInstr *i) {
  HloInstr *a = i->ops[0];
  int d = (int)a->dims.v[0];
  const SliceDim *sl = i->slice;
  int64_t n = i->shape->dims[d];
  if (n == 0)
    return NULL;
  int64_t first = sl[d].start, last = sl[d].start + (n - 1) * sl[d].stride;
  int64_t off = 0;
  for (int k = 0; k < a->nops; k++) {
    HloInstr *x = a->ops[k];
    int64_t size = x->shape->dims[d];
    if (first >= off && last < off + size) {
      SliceDim *ns = ARENA_ARRAY(s->a, SliceDim, i->shape->rank);
      memcpy(ns, sl, sizeof(SliceDim) * (size_t)i->shape->rank);
      ns[d].start -= off;
      ns[d].limit = ns[d].start + (n - 1) * ns[d].stride + 1;
      if (full_slice(ns, x->shape) && same_dims(x->shape, i->shape))
        return as_is(i, x);
      return new_slice(s, i, x, ns);
    }
    off += size;
  }
  return NULL;
}

/* slice(pad(x)) inside x's region, no interior padding. */
static HloInstr *slice_of_pad(Simp *s, HloInstr *i) {
  HloInstr *a = i->ops[0];
  HloInstr *x = a->ops[0];
  int r = i->shape->rank;
  SliceDim *ns = ARENA_ARRAY(s->a, SliceDim, r > 0 ? r : 1);
  for (int k = 0; k < r; k++) {
    const PadDim *p = &a->padding[k];
    const SliceDim *sl = &i->slice[k];
    int64_t n = i->shape->dims[k];
    if (p->interior != 0 || n == 0)
      return NULL;
    int64_t start = sl->start - p->lo;
    int64_t last = start + (n - 1) * sl->stride;
    if (start < 0 || last >= x->shape->dims[k])
      return NULL;
    ns[k] = (SliceDim){start, last + 1, sl->stride};
  }
  if (full_slice(ns, x->shape) && same_dims(x->shape, i->shape))
    return as_is(i, x);
  return new_slice(s, i, x, ns);
}

static HloInstr *simp_slice(Simp *s, HloInstr *i) {
  HloInstr *a = i->ops[0];
  int r = i->shape->rank;
  if (full_slice(i->slice, a->shape))
    return as_is(i, a);
  if (a->op == HLO_SLICE) {
    SliceDim *ns = ARENA_ARRAY(s->a, SliceDim, r > 0 ? r : 1);
    for (int k = 0; k < r; k++) {
      const SliceDim *in = &a->slice[k], *out = &i->slice[k];
      int64_t start = in->start + out->start * in->stride;
      int64_t stride = in->stride * out->stride;
      int64_t n = i->shape->dims[k];
      ns[k] = (SliceDim){start, n > 0 ? start + (n - 1) * stride + 1 : start,
                         stride};
    }
    return new_slice(s, i, a->ops[0], ns);
  }
  if (is_scalar_broadcast(a))
    return bcast_scalar(s, i, a->ops[0]);
  if (a->op == HLO_CONCATENATE && a->dims.n == 1)
    return slice_of_concat(s, i);
  if (a->op == HLO_PAD && a->padding)
    return slice_of_pad(s, i);
  return NULL;
}

/* Two stride-1 slices of the same operand that are adjacent along d and
 * equal in every other dimension. */
static bool adjacent_slices(const HloInstr *p, const HloInstr *q, int d) {
  if (p->op != HLO_SLICE || q->op != HLO_SLICE || p->ops[0] != q->ops[0])
    return false;
  int r = p->shape->rank;
  for (int k = 0; k < r; k++) {
    const SliceDim *a = &p->slice[k], *b = &q->slice[k];
    if (k == d) {
      if (a->stride != 1 || b->stride != 1 || a->limit != b->start)
        return false;
    } else if (a->start != b->start || a->limit != b->limit ||
               a->stride != b->stride) {
      return false;
    }
  }
  return true;
}

static HloInstr *simp_concat(Simp *s, HloInstr *i) {
  if (i->nops == 1)
    return as_is(i, i->ops[0]);
  if (i->dims.n != 1)
    return NULL;
  int d = (int)i->dims.v[0];
  /* Drop empty operands, merge runs of adjacent slices. */
  HloInstr **ops = ARENA_ARRAY(s->a, HloInstr *, i->nops);
  int n = 0;
  bool changed = false;
  for (int k = 0; k < i->nops; k++) {
    HloInstr *x = i->ops[k];
    if (shape_elements(x->shape) == 0) {
      changed = true;
      continue;
    }
    if (n > 0 && adjacent_slices(ops[n - 1], x, d)) {
      HloInstr *p = ops[n - 1];
      int r = p->shape->rank;
      SliceDim *ns = ARENA_ARRAY(s->a, SliceDim, r);
      memcpy(ns, p->slice, sizeof(SliceDim) * (size_t)r);
      ns[d].limit = x->slice[d].limit;
      ops[n - 1] = ir_slice(s->e, s->c, p->ops[0], ns);
      changed = true;
      continue;
    }
    ops[n++] = x;
  }
  if (!changed || n == 0)
    return NULL;
  if (n == 1) {
    HloInstr *x = ops[0];
    if (x->op == HLO_SLICE && full_slice(x->slice, x->ops[0]->shape) &&
        as_is(i, x->ops[0]))
      return x->ops[0];
    if (shape_equal(x->shape, i->shape))
      return x;
    bool fresh = true;
    for (int k = 0; k < i->nops; k++)
      fresh &= i->ops[k] != x;
    if (fresh) {
      /* Made above, used nowhere else yet: give it i's layout. */
      x->shape = shape_clone(s->a, i->shape);
      return x;
    }
    return NULL;
  }
  return with_operands(s, i, n, ops);
}

static HloInstr *simp_pad(Simp *s, HloInstr *i) {
  (void)s;
  if (!i->padding)
    return NULL;
  for (int k = 0; k < i->shape->rank; k++) {
    const PadDim *p = &i->padding[k];
    if (p->lo != 0 || p->hi != 0 || p->interior != 0)
      return NULL;
  }
  return as_is(i, i->ops[0]);
}

static HloInstr *simp_reverse(Simp *s, HloInstr *i) {
  (void)s;
  HloInstr *a = i->ops[0];
  bool trivial = true;
  for (int k = 0; k < i->dims.n; k++)
    trivial &= a->shape->dims[i->dims.v[k]] <= 1;
  if (trivial)
    return as_is(i, a);
  if (a->op == HLO_REVERSE && a->dims.n == i->dims.n) {
    for (int k = 0; k < i->dims.n; k++) {
      bool found = false;
      for (int j = 0; j < a->dims.n; j++)
        found |= a->dims.v[j] == i->dims.v[k];
      if (!found)
        return NULL;
    }
    return as_is(i, a->ops[0]);
  }
  return NULL;
}

static HloInstr *simp_dynamic_slice(Simp *s, HloInstr *i) {
  HloInstr *x = i->ops[0];
  int r = x->shape->rank;
  if (i->nops != 1 + r || i->dynamic_slice_sizes.n != r)
    return NULL;
  SliceDim *sl = ARENA_ARRAY(s->a, SliceDim, r > 0 ? r : 1);
  for (int k = 0; k < r; k++) {
    const HloInstr *st = i->ops[1 + k];
    int64_t v;
    if (st->op != HLO_CONSTANT || st->shape->rank != 0 ||
        !ir_is_int_constant(st, &v))
      return NULL;
    int64_t size = i->dynamic_slice_sizes.v[k];
    int64_t hi = x->shape->dims[k] - size;
    if (v > hi)
      v = hi;
    if (v < 0)
      v = 0;
    sl[k] = (SliceDim){v, v + size, 1};
  }
  if (full_slice(sl, x->shape))
    return as_is(i, x);
  HloInstr *n = ir_slice(s->e, s->c, x, sl);
  n->shape = shape_clone(s->a, i->shape);
  return n;
}

static HloInstr *simp_dus(Simp *s, HloInstr *i) {
  (void)s;
  HloInstr *x = i->ops[0], *u = i->ops[1];
  if (same_dims(x->shape, u->shape))
    return as_is(i, u);
  return NULL;
}

HloInstr *simp_shape_op(Simp *s, HloInstr *i) {
  switch (i->op) {
  case HLO_RESHAPE: return simp_reshape(s, i);
  case HLO_TRANSPOSE: return simp_transpose(s, i);
  case HLO_BROADCAST: return simp_broadcast(s, i);
  case HLO_BITCAST: return simp_bitcast(s, i);
  case HLO_SLICE: return i->slice ? simp_slice(s, i) : NULL;
  case HLO_CONCATENATE: return simp_concat(s, i);
  case HLO_PAD: return simp_pad(s, i);
  case HLO_REVERSE: return simp_reverse(s, i);
  case HLO_DYNAMIC_SLICE: return simp_dynamic_slice(s, i);
  case HLO_DYNAMIC_UPDATE_SLICE: return simp_dus(s, i);
  default: return NULL;
  }
}
