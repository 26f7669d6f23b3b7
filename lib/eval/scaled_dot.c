/*
 * scaled_dot.c - scaled-dot(lhs, rhs, lhs_scale, rhs_scale) with the
 * semantics of XLA's ScaledDotRewriter, the expansion XLA:GPU runs when no
 * block-scaled kernel takes the op:
 *
 *   for each side (operand x, scale s):
 *     T1 = target(x.type, s.type); x and s are converted to T1;
 *     if s has x's rank, every dimension of x is a multiple of s's and
 *       element x[j0, j1, ...] is multiplied by s[j0 / b0, j1 / b1, ...]
 *       with b_d = x.dims[d] / s.dims[d] (each scale covers a block of
 *       consecutive elements, the broadcast-and-reshape XLA builds);
 *     otherwise s must hold a single element (a rank-0 scale), which
 *       multiplies every element;
 *     the product is rounded to T1;
 *   T2 = target(T1(lhs), T1(rhs)); both dequantized operands convert to T2;
 *   T3 = target(T2, result type); dot(lhs, rhs) with the instruction's
 *     dimension numbers computes in T3 (as the dot handler does) and is
 *     converted to the result type.
 *
 * target(a, b) is the rewriter's GetTargetType: bf16 when both are narrower
 * than 16 bits, a when a == b, f32 when the widths match but the types
 * differ, else the wider type.
 */
#include <string.h>

#include "evalp.h"

#define MAX_RANK 64

static ElemType target_type(ElemType a, ElemType b) {
  int wa = et_bits(a), wb = et_bits(b);
  if (wa < 16 && wb < 16) return ET_BF16;
  if (a == b) return a;
  if (wa == wb) return ET_F32;
  return wa > wb ? a : b;
}

/* x * broadcast(scale) in type *t (set here); NULL on error. */
static EvalValue *dequantize(Eval *ev, const HloInstr *i, int k,
                             EvalValue *const *a, Shape *out, ElemType *t) {
  const Shape *xs = i->ops[k]->shape, *ss = i->ops[k + 2]->shape;
  if (!shape_is_array(xs) || !shape_is_array(ss) || xs->rank > MAX_RANK ||
      !et_is_float(xs->et) || !et_is_float(ss->et)) {
    ev_unsupported(ev, i, "scaled-dot of non-floating-point operands or scales");
    return NULL;
  }
  *t = target_type(xs->et, ss->et);
  int64_t block[MAX_RANK], sstr[MAX_RANK], xdims[MAX_RANK];
  bool same_rank = ss->rank == xs->rank;
  if (same_rank) {
    for (int d = 0; d < xs->rank; d++) {
      if (ss->dims[d] <= 0 || xs->dims[d] % ss->dims[d]) {
        ev_fail(ev, i, EVAL_ERR_INVALID, "dimension %d of operand %d is not a "
                "multiple of its scale's", d, k);
        return NULL;
      }
      block[d] = xs->dims[d] / ss->dims[d];
    }
    ev_strides(ss, sstr);
  } else if (ev_elems(ss) != 1) {
    ev_fail(ev, i, EVAL_ERR_INVALID, "scale %d has neither operand %d's rank nor "
            "a single element", k + 2, k);
    return NULL;
  }
  *out = *xs;
  out->et = *t;
  EvalValue *r = ev_array_nozero(ev, out);
  if (!r) return NULL;
  int64_t n = ev_elems(xs);
  int xb = et_bytes(xs->et), sb = et_bytes(ss->et), tb = et_bytes(*t);
  uint8_t xv[16], sv[16];
  memset(xdims, 0, sizeof xdims);
  for (int64_t e = 0; e < n; e++) {
    int64_t so = 0;
    if (same_rank)
      for (int d = 0; d < xs->rank; d++) so += xdims[d] / block[d] * sstr[d];
    /* both factors rounded to T1 first, as the rewriter's converts do */
    ev_convert_elems(xs->et, a[k]->data + e * xb, *t, xv, 1);
    ev_convert_elems(ss->et, a[k + 2]->data + so * sb, *t, sv, 1);
    ev_set_f64(*t, r->data + e * tb, ev_get_f64(*t, xv) * ev_get_f64(*t, sv));
    for (int d = xs->rank - 1; d >= 0; d--) {
      if (++xdims[d] < xs->dims[d]) break;
      xdims[d] = 0;
    }
  }
  return r;
}

/* v converted to type t (a new value of shape *s, which takes t). */
static EvalValue *convert_to(Eval *ev, EvalValue *v, Shape *s, ElemType t) {
  if (s->et == t) return v;
  ElemType from = s->et;
  s->et = t;
  EvalValue *r = ev_array_nozero(ev, s);
  if (r) ev_convert_elems(from, v->data, t, r->data, ev_elems(s));
  ev_unref(ev, v);
  return r;
}

EvalValue *eval_scaled_dot(Eval *ev, const HloInstr *i, EvalValue *const *a) {
  const Shape *s = i->shape;
  if (!shape_is_array(s) || et_is_complex(s->et) || !et_is_float(s->et)) {
    ev_fail(ev, i, EVAL_ERR_INVALID, "scaled-dot needs a real floating-point result");
    return NULL;
  }
  Shape ls, rs, ds;
  ElemType lt, rt;
  EvalValue *lhs = dequantize(ev, i, 0, a, &ls, &lt);
  if (!lhs) return NULL;
  EvalValue *rhs = dequantize(ev, i, 1, a, &rs, &rt);
  if (!rhs) {
    ev_unref(ev, lhs);
    return NULL;
  }
  ElemType t2 = target_type(lt, rt);
  lhs = convert_to(ev, lhs, &ls, t2);
  rhs = lhs ? convert_to(ev, rhs, &rs, t2) : rhs;
  if (!lhs || !rhs) {
    ev_unref(ev, lhs);
    ev_unref(ev, rhs);
    return NULL;
  }
  /* the dot as the rewriter builds it, on the dequantized operands */
  ds = *s;
  ds.et = target_type(t2, s->et);
  HloInstr lop = *i->ops[0], rop = *i->ops[1], dot = *i;
  lop.shape = &ls;
  rop.shape = &rs;
  HloInstr *dops[2] = {&lop, &rop};
  dot.op = HLO_DOT;
  dot.shape = &ds;
  dot.ops = dops;
  dot.nops = 2;
  EvalValue *da[2] = {lhs, rhs};
  uint64_t steal = ev->steal;
  ev->steal = 0;
  EvalValue *d = eval_dot(ev, &dot, da);
  ev->steal = steal;
  ev_unref(ev, lhs);
  ev_unref(ev, rhs);
  if (!d) return NULL;
  EvalValue *r = ev_array_nozero(ev, s);
  if (r) ev_convert_elems(ds.et, d->data, s->et, r->data, ev_elems(s));
  ev_unref(ev, d);
  return r;
}
