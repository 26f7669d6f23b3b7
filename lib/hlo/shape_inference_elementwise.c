/*
 * shape_inference_elementwise.c - elementwise unary and binary ops, select,
 * clamp, the conversions, reduce-precision and map.
 *
 * HLO has no implicit broadcasting: XLA's verifier requires every operand of
 * an elementwise op to have the result's dimensions, so the operands must
 * have equal dimensions here.  Floating-point operands must also agree on
 * their type: XLA's default verifier rejects mixed precision
 * (CheckMixedPrecisionOperands) for these ops.
 */
#include "shape_inference_internal.h"

static bool is_array(const Shape *s) {
  return s->et != ET_TUPLE && si_et_array(s->et);
}

static Shape *need_array(SiCtx *c, int k) {
  const Shape *s = si_op(c, k);
  if (!is_array(s))
    return si_fail(c, "operand %d must be an array, not %s", k, si_str(c, s));
  return (Shape *)s;
}

static Shape *bad_type(SiCtx *c, const char *want, ElemType got) {
  return si_fail(c, "operand element type must be %s, not %s", want,
                 et_name(got));
}

Shape *si_infer_unary(SiCtx *c) {
  const Shape *s = si_op(c, 0);
  HloOp op = c->i->op;
  if (op == HLO_COPY || op == HLO_DOMAIN || op == HLO_OPTIMIZATION_BARRIER ||
      op == HLO_SHUFFLE)
    return si_result(c, s);
  if (!need_array(c, 0))
    return NULL;
  ElemType et = s->et;
  bool fl = et_is_float(et), cx = et_is_complex(et), in = et_is_int(et);
  switch (op) {
  case HLO_FLOOR: case HLO_CEIL: case HLO_CBRT: case HLO_ERF:
  case HLO_ROUND_NEAREST_AFZ: case HLO_ROUND_NEAREST_EVEN:
    if (!fl)
      return bad_type(c, "floating point", et);
    return si_result(c, s);
  case HLO_ACOS: case HLO_ACOSH: case HLO_ASIN: case HLO_ASINH: case HLO_ATAN:
  case HLO_ATANH: case HLO_COS: case HLO_COSH: case HLO_SIN: case HLO_SINH:
  case HLO_EXP: case HLO_EXPM1: case HLO_LOG: case HLO_LOG1P:
  case HLO_LOGISTIC: case HLO_RSQRT: case HLO_SQRT: case HLO_TAN:
  case HLO_TANH:
    if (!fl && !cx)
      return bad_type(c, "floating point or complex", et);
    return si_result(c, s);
  case HLO_REAL: case HLO_IMAG:
    if (!fl && !cx)
      return bad_type(c, "floating point or complex", et);
    return si_with_et(c, s, et_complex_component(et));
  case HLO_ABS:
    if (cx)
      return si_with_et(c, s, et_complex_component(et));
    if (!fl && !et_is_signed_int(et))
      return bad_type(c, "signed integer, floating point or complex", et);
    return si_result(c, s);
  case HLO_SIGN:
    if (!fl && !cx && !et_is_signed_int(et))
      return bad_type(c, "signed integer, floating point or complex", et);
    return si_result(c, s);
  case HLO_CLZ: case HLO_POPCNT:
    if (!in)
      return bad_type(c, "integer", et);
    return si_result(c, s);
  case HLO_NEGATE:
    if (!in && !fl && !cx)
      return bad_type(c, "integer, floating point or complex", et);
    return si_result(c, s);
  case HLO_NOT:
    if (!in && et != ET_PRED)
      return bad_type(c, "pred or integer", et);
    return si_result(c, s);
  case HLO_IS_FINITE:
    if (!fl)
      return bad_type(c, "floating point", et);
    return si_with_et(c, s, ET_PRED);
  default:
    break;
  }
  return si_fail(c, "not a unary elementwise op");
}

/* Result dimensions of two same-shaped operands: a dimension is dynamic
 * when it is dynamic in either. */
static Shape *merge_dims(SiCtx *c, const Shape *x, const Shape *y,
                         ElemType et) {
  bool more = false;
  for (int d = 0; y->dyn && d < y->rank; d++)
    more = more || (si_dim_dynamic(y, d) && !si_dim_dynamic(x, d));
  if (!more)
    return si_with_et(c, x, et);
  Shape *r = si_array(c, et, x->rank, x->dims, x->dyn);
  for (int d = 0; d < y->rank; d++)
    if (si_dim_dynamic(y, d) && !si_dim_dynamic(r, d))
      si_set_dynamic(c->a, r, d, y->dyn[d]);
  return r;
}

Shape *si_infer_binary(SiCtx *c) {
  if (!need_array(c, 0) || !need_array(c, 1))
    return NULL;
  const Shape *x = si_op(c, 0), *y = si_op(c, 1);
  HloOp op = c->i->op;
  if (!si_compatible(x, y, SI_CMP_IGNORE_ET))
    return si_fail(c, "operands have different dimensions: %s and %s",
                   si_str(c, x), si_str(c, y));
  if (x->et != y->et)
    return si_fail(c, "operands have different element types: %s and %s",
                   si_str(c, x), si_str(c, y));
  ElemType et = x->et;
  switch (op) {
  case HLO_ADD: case HLO_MAXIMUM: case HLO_MINIMUM: case HLO_MULTIPLY:
    break;
  case HLO_SUBTRACT: case HLO_DIVIDE: case HLO_REMAINDER: case HLO_POWER:
    if (et == ET_PRED)
      return bad_type(c, "an arithmetic type", et);
    break;
  case HLO_ATAN2:
    if (!et_is_float(et) && !et_is_complex(et))
      return bad_type(c, "floating point or complex", et);
    break;
  case HLO_MULHI: case HLO_SHIFT_LEFT: case HLO_SHIFT_RIGHT_ARITHMETIC:
  case HLO_SHIFT_RIGHT_LOGICAL:
    if (!et_is_int(et))
      return bad_type(c, "integer", et);
    break;
  case HLO_AND: case HLO_OR: case HLO_XOR:
    if (!et_is_int(et) && et != ET_PRED)
      return bad_type(c, "pred or integer", et);
    break;
  case HLO_COMPLEX:
    if (et == ET_F32)
      return merge_dims(c, x, y, ET_C64);
    if (et == ET_F64)
      return merge_dims(c, x, y, ET_C128);
    return bad_type(c, "f32 or f64", et);
  case HLO_COMPARE: {
    CmpType t = c->i->cmp_type;
    if (c->i->cmp_dir == CMP_NONE)
      return si_fail(c, "missing comparison direction");
    if (t != CMPT_NONE) {
      bool ok;
      if (et_is_float(et))
        ok = t == CMPT_FLOAT || t == CMPT_TOTALORDER || t == CMPT_PARTIALORDER;
      else if (et_is_complex(et))
        ok = t == CMPT_FLOAT;
      else if (et_is_signed_int(et))
        ok = t == CMPT_SIGNED;
      else
        ok = t == CMPT_UNSIGNED;
      if (!ok)
        return si_fail(c, "comparison type does not suit element type %s",
                       et_name(et));
    }
    return merge_dims(c, x, y, ET_PRED);
  }
  default:
    return si_fail(c, "not a binary elementwise op");
  }
  return merge_dims(c, x, y, et);
}

Shape *si_infer_select(SiCtx *c) {
  for (int k = 0; k < 3; k++)
    if (!need_array(c, k))
      return NULL;
  const Shape *p = si_op(c, 0), *t = si_op(c, 1), *f = si_op(c, 2);
  if (p->et != ET_PRED)
    return si_fail(c, "predicate must have element type pred, not %s",
                   si_str(c, p));
  if (!si_compatible(t, f, 0))
    return si_fail(c, "on-true and on-false operands differ: %s and %s",
                   si_str(c, t), si_str(c, f));
  if (p->rank != 0 && !si_compatible(p, t, SI_CMP_IGNORE_ET))
    return si_fail(c, "predicate %s does not match the operands %s",
                   si_str(c, p), si_str(c, t));
  Shape *r = merge_dims(c, t, f, t->et);
  bool more = false;
  for (int d = 0; p->rank != 0 && p->dyn && d < p->rank; d++)
    more = more || (si_dim_dynamic(p, d) && !si_dim_dynamic(r, d));
  if (!more)
    return r;
  r = si_array(c, r->et, r->rank, r->dims, r->dyn);
  for (int d = 0; d < p->rank; d++)
    if (si_dim_dynamic(p, d) && !si_dim_dynamic(r, d))
      si_set_dynamic(c->a, r, d, p->dyn[d]);
  return r;
}

Shape *si_infer_clamp(SiCtx *c) {
  for (int k = 0; k < 3; k++)
    if (!need_array(c, k))
      return NULL;
  const Shape *lo = si_op(c, 0), *x = si_op(c, 1), *hi = si_op(c, 2);
  if (lo->et != x->et || hi->et != x->et)
    return si_fail(c, "operands have different element types: %s, %s, %s",
                   si_str(c, lo), si_str(c, x), si_str(c, hi));
  if ((lo->rank != 0 && !si_compatible(lo, x, 0)) ||
      (hi->rank != 0 && !si_compatible(hi, x, 0)))
    return si_fail(c, "min and max must be scalars or match the operand: %s, "
                   "%s, %s", si_str(c, lo), si_str(c, x), si_str(c, hi));
  return si_result(c, x);
}

Shape *si_infer_convert(SiCtx *c) {
  const Shape *s = si_op(c, 0);
  ElemType to = c->i->shape->et;
  if (!is_array(s) || to == ET_TUPLE || !si_et_array(to))
    return si_fail(c, "converts arrays only, not %s to %s", si_str(c, s),
                   et_name(to));
  return si_with_et(c, s, to);
}

/* Bitcast-convert to a narrower type appends a minor dimension of size
 * (wide bits / narrow bits); to a wider type the operand's minor dimension
 * must be that ratio and is removed.  Widths are XLA's (pred counts 8
 * bits, as primitive_util::BitWidth has it). */
Shape *si_infer_bitcast_convert(SiCtx *c) {
  const Shape *s = si_op(c, 0);
  ElemType from = s->et, to = c->i->shape->et;
  if (!is_array(s) || to == ET_TUPLE || !si_et_array(to))
    return si_fail(c, "converts arrays only, not %s to %s", si_str(c, s),
                   et_name(to));
  if (et_is_complex(from) != et_is_complex(to))
    return si_fail(c, "cannot bitcast between complex and real types (%s to "
                   "%s)", et_name(from), et_name(to));
  int in_bits = hlo_bitcast_bits(from), out_bits = hlo_bitcast_bits(to);
  int big = in_bits > out_bits ? in_bits : out_bits;
  int small = in_bits > out_bits ? out_bits : in_bits;
  if (small <= 0 || big % small)
    return si_fail(c, "bit widths %d (%s) and %d (%s) do not divide", in_bits,
                   et_name(from), out_bits, et_name(to));
  int64_t ratio = big / small;
  if (in_bits == out_bits)
    return si_with_et(c, s, to);
  if (in_bits > out_bits) {
    int64_t *dims = ARENA_ARRAY(c->a, int64_t, s->rank + 1);
    uint8_t *dyn = ARENA_ARRAY(c->a, uint8_t, s->rank + 1);
    for (int d = 0; d < s->rank; d++)
      dims[d] = s->dims[d], dyn[d] = s->dyn ? s->dyn[d] : DIM_STATIC;
    dims[s->rank] = ratio;
    return si_array(c, to, s->rank + 1, dims, dyn);
  }
  if (s->rank == 0 || s->dims[s->rank - 1] != ratio)
    return si_fail(c, "converting %s to the wider %s needs a minor "
                   "dimension of size %lld", si_str(c, s), et_name(to),
                   (long long)ratio);
  return si_array(c, to, s->rank - 1, s->dims, s->dyn);
}

Shape *si_infer_stochastic_convert(SiCtx *c) {
  if (!need_array(c, 0) || !need_array(c, 1))
    return NULL;
  const Shape *s = si_op(c, 0), *r = si_op(c, 1);
  ElemType to = c->i->shape->et;
  if (!et_is_unsigned_int(r->et))
    return si_fail(c, "random operand must be unsigned integers, not %s",
                   si_str(c, r));
  if (!et_is_float(s->et))
    return si_fail(c, "operand must be floating point, not %s", si_str(c, s));
  if (et_bits(s->et) != et_bits(r->et))
    return si_fail(c, "random operand must have the operand's %d bits, has "
                   "%d", et_bits(s->et), et_bits(r->et));
  if (!si_compatible(s, r, SI_CMP_IGNORE_ET))
    return si_fail(c, "operand %s and random operand %s differ in dimensions",
                   si_str(c, s), si_str(c, r));
  if (to == ET_TUPLE || !si_et_array(to))
    return si_fail(c, "result must be an array");
  return si_with_et(c, s, to);
}

Shape *si_infer_reduce_precision(SiCtx *c) {
  const Shape *s = si_op(c, 0);
  if (!is_array(s) || !et_is_float(s->et))
    return si_fail(c, "operand must be floating point, not %s", si_str(c, s));
  if (c->i->exponent_bits < 1)
    return si_fail(c, "exponent_bits must be at least 1, is %lld",
                   (long long)c->i->exponent_bits);
  if (c->i->mantissa_bits < 0)
    return si_fail(c, "mantissa_bits must not be negative, is %lld",
                   (long long)c->i->mantissa_bits);
  return si_result(c, s);
}

/* Map applies a scalar computation to every element: all operands have the
 * same dimensions (scalars excepted), the computation takes one scalar per
 * operand of the operand's element type and returns a scalar. */
Shape *si_infer_map(SiCtx *c) {
  const HloInstr *i = c->i;
  const Shape *arg = NULL;
  for (int k = 0; k < i->nops; k++) {
    const Shape *s = need_array(c, k);
    if (!s)
      return NULL;
    if (!arg || (arg->rank == 0 && s->rank != 0)) {
      arg = s;
      continue;
    }
    if (s->rank != 0 && !si_compatible(s, arg, SI_CMP_IGNORE_ET))
      return si_fail(c, "operands must have the same dimensions: %s and %s",
                     si_str(c, arg), si_str(c, s));
  }
  if (i->has_dims) {
    bool ok = i->dims.n == arg->rank;
    for (int d = 0; ok && d < i->dims.n; d++)
      ok = i->dims.v[d] == d;
    if (!ok)
      return si_fail(c, "dimensions=%s must list every operand dimension in "
                     "order", si_list_str(c, i->dims.n, i->dims.v));
  }
  SiProgram p;
  if (!si_program(c, 0, "mapped", &p))
    return NULL;
  if (p.nparams != i->nops)
    return si_fail(c, "computation '%s' takes %d parameters but map has %d "
                   "operands", p.comp->name, p.nparams, i->nops);
  if (!is_array(p.result) || p.result->rank != 0)
    return si_fail(c, "computation '%s' must return a scalar, returns %s",
                   p.comp->name, si_str(c, p.result));
  for (int k = 0; k < p.nparams; k++) {
    const Shape *ps = p.params[k];
    if (!is_array(ps) || ps->rank != 0 || ps->et != si_op(c, k)->et)
      return si_fail(c, "computation '%s' parameter %d is %s but operand %d "
                     "has element type %s", p.comp->name, k, si_str(c, ps), k,
                     et_name(si_op(c, k)->et));
  }
  return si_with_et(c, arg, p.result->et);
}
