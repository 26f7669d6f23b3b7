/*
 * elemental_ops.c - one elementwise HLO op on register values: the
 * dispatcher cg_emit_elementwise, integer and pred arithmetic with lib/eval's
 * (XLA's) semantics for division by zero, over-wide shifts and integer
 * power, compares with every direction and comparison type, select, clamp,
 * convert and bitcast-convert.
 */
#include "cg_internal.h"

static LLVMValueRef iconst(LLVMValueRef like, int64_t v) {
  return LLVMConstInt(LLVMTypeOf(like), (unsigned long long)v, true);
}

static LLVMValueRef call_int_intrinsic(Codegen *cg, const char *name,
                                       LLVMValueRef x, bool extra_false) {
  LLVMTypeRef t = LLVMTypeOf(x);
  char full[64];
  snprintf(full, sizeof full, "llvm.%s.i%u", name, LLVMGetIntTypeWidth(t));
  LLVMTypeRef tys[2] = {t, LLVMInt1TypeInContext(cg->ctx)};
  LLVMValueRef a[2] = {x, LLVMConstInt(tys[1], 0, false)};
  return cg_call_named(cg, full, t, extra_false ? 2 : 1, tys, a);
}

static LLVMValueRef int_unary(Codegen *cg, HloOp op, bool sg, LLVMValueRef a) {
  LLVMBuilderRef b = cg->b;
  switch (op) {
  case HLO_ABS:
    if (!sg) return a;
    return LLVMBuildSelect(b, LLVMBuildICmp(b, LLVMIntSLT, a, iconst(a, 0), ""),
                           LLVMBuildNeg(b, a, ""), a, "");
  case HLO_NEGATE: return LLVMBuildNeg(b, a, "");
  case HLO_SIGN:
    if (!sg)
      return LLVMBuildZExt(b, LLVMBuildICmp(b, LLVMIntNE, a, iconst(a, 0), ""),
                           LLVMTypeOf(a), "");
    return LLVMBuildSub(b,
                        LLVMBuildZExt(b, LLVMBuildICmp(b, LLVMIntSGT, a, iconst(a, 0), ""),
                                      LLVMTypeOf(a), ""),
                        LLVMBuildZExt(b, LLVMBuildICmp(b, LLVMIntSLT, a, iconst(a, 0), ""),
                                      LLVMTypeOf(a), ""), "");
  case HLO_NOT: return LLVMBuildNot(b, a, "");
  case HLO_POPCNT: return call_int_intrinsic(cg, "ctpop", a, false);
  case HLO_CLZ: return call_int_intrinsic(cg, "ctlz", a, true);
  case HLO_REAL: return a;
  case HLO_IMAG: return iconst(a, 0);
  default: return NULL;
  }
}

/* a ** e by square-and-multiply over the w bits of e (ipow of lib/eval). */
static LLVMValueRef int_pow(Codegen *cg, bool sg, LLVMValueRef a,
                            LLVMValueRef e) {
  LLVMBuilderRef b = cg->b;
  unsigned w = LLVMGetIntTypeWidth(LLVMTypeOf(a));
  LLVMValueRef r = iconst(a, 1), base = a;
  for (unsigned k = 0; k < w; k++) {
    LLVMValueRef bit = LLVMBuildAnd(b, LLVMBuildLShr(b, e, iconst(e, k), ""),
                                    iconst(e, 1), "");
    LLVMValueRef on = LLVMBuildICmp(b, LLVMIntNE, bit, iconst(e, 0), "");
    r = LLVMBuildSelect(b, on, LLVMBuildMul(b, r, base, ""), r, "");
    base = LLVMBuildMul(b, base, base, "");
  }
  if (!sg)
    return r;
  /* a negative exponent: 0, 1 for a base of 1, +-1 for a base of -1 (the
   * power computed above is right for +-1) */
  LLVMValueRef neg = LLVMBuildICmp(b, LLVMIntSLT, e, iconst(e, 0), "");
  LLVMValueRef unit = LLVMBuildOr(b, LLVMBuildICmp(b, LLVMIntEQ, a, iconst(a, 1), ""),
                                  LLVMBuildICmp(b, LLVMIntEQ, a, iconst(a, -1), ""), "");
  LLVMValueRef small = LLVMBuildSelect(b, unit, r, iconst(a, 0), "");
  return LLVMBuildSelect(b, neg, small, r, "");
}

static LLVMValueRef int_shift(Codegen *cg, HloOp op, bool sg, LLVMValueRef a,
                              LLVMValueRef s) {
  LLVMBuilderRef b = cg->b;
  unsigned w = LLVMGetIntTypeWidth(LLVMTypeOf(a));
  /* out of range: unsigned s >= w covers negative signed amounts too */
  LLVMValueRef oob = LLVMBuildICmp(b, LLVMIntUGE, s, iconst(s, w), "");
  (void)sg;
  LLVMValueRef safe = LLVMBuildSelect(b, oob, iconst(s, 0), s, "");
  LLVMValueRef r, over;
  switch (op) {
  case HLO_SHIFT_LEFT:
    r = LLVMBuildShl(b, a, safe, "");
    over = iconst(a, 0);
    break;
  case HLO_SHIFT_RIGHT_LOGICAL:
    r = LLVMBuildLShr(b, a, safe, "");
    over = iconst(a, 0);
    break;
  default:
    r = LLVMBuildAShr(b, a, safe, "");
    over = LLVMBuildAShr(b, a, iconst(a, w - 1), "");
    break;
  }
  return LLVMBuildSelect(b, oob, over, r, "");
}

static LLVMValueRef int_binary(Codegen *cg, HloOp op, ElemType et,
                               LLVMValueRef x, LLVMValueRef y) {
  LLVMBuilderRef b = cg->b;
  bool sg = et_is_signed_int(et);
  switch (op) {
  case HLO_ADD: return LLVMBuildAdd(b, x, y, "");
  case HLO_SUBTRACT: return LLVMBuildSub(b, x, y, "");
  case HLO_MULTIPLY: return LLVMBuildMul(b, x, y, "");
  case HLO_AND: return LLVMBuildAnd(b, x, y, "");
  case HLO_OR: return LLVMBuildOr(b, x, y, "");
  case HLO_XOR: return LLVMBuildXor(b, x, y, "");
  case HLO_MAXIMUM: return cg_emit_max(cg, et, x, y);
  case HLO_MINIMUM: return cg_emit_min(cg, et, x, y);
  case HLO_POWER: return int_pow(cg, sg, x, y);
  case HLO_SHIFT_LEFT: case HLO_SHIFT_RIGHT_LOGICAL:
  case HLO_SHIFT_RIGHT_ARITHMETIC:
    return int_shift(cg, op, sg, x, y);
  case HLO_DIVIDE: case HLO_REMAINDER: {
    LLVMValueRef y0 = LLVMBuildICmp(b, LLVMIntEQ, y, iconst(y, 0), "");
    LLVMValueRef bad = y0;
    LLVMValueRef ym1 = NULL;
    if (sg) {
      ym1 = LLVMBuildICmp(b, LLVMIntEQ, y, iconst(y, -1), "");
      bad = LLVMBuildOr(b, y0, ym1, "");
    }
    LLVMValueRef safe = LLVMBuildSelect(b, bad, iconst(y, 1), y, "");
    if (op == HLO_DIVIDE) {
      LLVMValueRef q = sg ? LLVMBuildSDiv(b, x, safe, "") : LLVMBuildUDiv(b, x, safe, "");
      if (sg)  /* x / -1 = -x (wrapping: MIN / -1 = MIN) */
        q = LLVMBuildSelect(b, ym1, LLVMBuildNeg(b, x, ""), q, "");
      return LLVMBuildSelect(b, y0, iconst(x, -1), q, "");
    }
    LLVMValueRef r = sg ? LLVMBuildSRem(b, x, safe, "") : LLVMBuildURem(b, x, safe, "");
    if (sg)
      r = LLVMBuildSelect(b, ym1, iconst(x, 0), r, "");
    return LLVMBuildSelect(b, y0, x, r, "");
  }
  case HLO_MULHI: {
    unsigned w = LLVMGetIntTypeWidth(LLVMTypeOf(x));
    LLVMTypeRef wide = LLVMIntTypeInContext(cg->ctx, 2 * w);
    LLVMValueRef xw = sg ? LLVMBuildSExt(b, x, wide, "") : LLVMBuildZExt(b, x, wide, "");
    LLVMValueRef yw = sg ? LLVMBuildSExt(b, y, wide, "") : LLVMBuildZExt(b, y, wide, "");
    LLVMValueRef p = LLVMBuildMul(b, xw, yw, "");
    p = sg ? LLVMBuildAShr(b, p, LLVMConstInt(wide, w, false), "")
           : LLVMBuildLShr(b, p, LLVMConstInt(wide, w, false), "");
    return LLVMBuildTrunc(b, p, LLVMTypeOf(x), "");
  }
  default: return NULL;
  }
}

/* pred arithmetic: values are 0/1 and results are "!= 0" of the integer
 * result, as lib/eval stores them. */
static LLVMValueRef pred_op(Codegen *cg, HloOp op, int n, LLVMValueRef const *v) {
  LLVMBuilderRef b = cg->b;
  if (n == 1) {
    switch (op) {
    case HLO_NOT: return LLVMBuildNot(b, v[0], "");
    case HLO_ABS: case HLO_NEGATE: case HLO_SIGN: case HLO_REAL:
      return v[0];
    case HLO_IMAG:
      return LLVMConstInt(LLVMInt1TypeInContext(cg->ctx), 0, false);
    default: return NULL;
    }
  }
  switch (op) {
  case HLO_ADD: case HLO_OR: case HLO_MAXIMUM: return LLVMBuildOr(b, v[0], v[1], "");
  case HLO_SUBTRACT: case HLO_XOR: return LLVMBuildXor(b, v[0], v[1], "");
  case HLO_MULTIPLY: case HLO_AND: case HLO_MINIMUM:
    return LLVMBuildAnd(b, v[0], v[1], "");
  case HLO_POWER: return LLVMBuildOr(b, v[0], LLVMBuildNot(b, v[1], ""), "");
  default: return NULL;
  }
}

static LLVMValueRef compare(Codegen *cg, const HloInstr *i, ElemType et,
                            LLVMValueRef x, LLVMValueRef y) {
  LLVMBuilderRef b = cg->b;
  CmpDir dir = i->cmp_dir;
  if (et_is_float(et) && i->cmp_type != CMPT_TOTALORDER)
    return cg_float_compare(cg, et, dir, x, y);
  bool sg = et_is_signed_int(et);
  if (et_is_float(et)) {
    /* total order: signed bits, negative values with the magnitude flipped */
    LLVMTypeRef it = LLVMIntTypeInContext(cg->ctx, (unsigned)et_bits(et));
    LLVMValueRef k[2];
    LLVMValueRef in[2] = {x, y};
    for (int j = 0; j < 2; j++) {
      LLVMValueRef s = LLVMBuildBitCast(b, in[j], it, "");
      LLVMValueRef neg = LLVMBuildICmp(b, LLVMIntSLT, s, LLVMConstInt(it, 0, false), "");
      LLVMValueRef flip = LLVMBuildXor(b, s, LLVMConstInt(it, ~0ULL >> (65 - et_bits(et)), false), "");
      k[j] = LLVMBuildSelect(b, neg, flip, s, "");
    }
    x = k[0];
    y = k[1];
    sg = true;
  }
  LLVMIntPredicate p;
  switch (dir) {
  case CMP_EQ: p = LLVMIntEQ; break;
  case CMP_NE: p = LLVMIntNE; break;
  case CMP_LT: p = sg ? LLVMIntSLT : LLVMIntULT; break;
  case CMP_LE: p = sg ? LLVMIntSLE : LLVMIntULE; break;
  case CMP_GT: p = sg ? LLVMIntSGT : LLVMIntUGT; break;
  default: p = sg ? LLVMIntSGE : LLVMIntUGE; break;
  }
  return LLVMBuildICmp(b, p, x, y, "");
}

static LLVMValueRef bitcast_convert(Codegen *cg, ElemType from, ElemType to,
                                    LLVMValueRef v) {
  LLVMTypeRef i8 = LLVMInt8TypeInContext(cg->ctx);
  if (from == ET_PRED)
    v = LLVMBuildZExt(cg->b, v, i8, "");
  if (to == ET_PRED) {
    v = LLVMBuildBitCast(cg->b, v, i8, "");
    return LLVMBuildICmp(cg->b, LLVMIntNE, v, LLVMConstInt(i8, 0, false), "");
  }
  return LLVMBuildBitCast(cg->b, v, cg_reg_type(cg, to), "");
}

static LLVMValueRef unsupported(const HloInstr *i, ElemType et, Diag *d) {
  diag_error(d, i->loc, "codegen: unsupported elementwise op '%s' on %s",
             hlo_op_name(i->op), et_name(et));
  return NULL;
}

LLVMValueRef cg_emit_elementwise(Codegen *cg, const HloInstr *i,
                                 LLVMValueRef const *ops, Diag *d) {
  ElemType out = i->shape->et;
  ElemType et = i->nops ? i->ops[0]->shape->et : out;
  for (int k = 0; k < i->nops; k++)
    if (!cg_et_supported(i->ops[k]->shape->et))
      return unsupported(i, i->ops[k]->shape->et, d);
  if (!cg_et_supported(out))
    return unsupported(i, out, d);
  if (et_is_complex(et) || et_is_complex(out) || i->op == HLO_COMPLEX) {
    if (i->op == HLO_SELECT && i->nops == 3)
      return LLVMBuildSelect(cg->b, ops[0], ops[1], ops[2], "");
    LLVMValueRef r = cg_complex_op(cg, i, ops);
    return r ? r : unsupported(i, et_is_complex(et) ? et : out, d);
  }
  switch (i->op) {
  case HLO_CONVERT:
    return cg_emit_convert(cg, et, out, ops[0]);
  case HLO_REDUCE_PRECISION:
    if (!et_is_float(et) || et == ET_F8E8M0FNU || et == ET_F4E2M1FN ||
        i->exponent_bits < 1 || i->mantissa_bits < 0 || i->exponent_bits > 64 ||
        i->mantissa_bits > 64)
      return unsupported(i, et, d);
    return cg_emit_reduce_precision(cg, et, ops[0], (int)i->exponent_bits,
                                    (int)i->mantissa_bits);
  case HLO_BITCAST_CONVERT: {
    const char *why = hlo_bitcast_convert_unsupported(et, out);
    if (why) {
      diag_error(d, i->loc, "codegen: bitcast-convert between %s (%s to %s) "
                 "is not supported", why, et_name(et), et_name(out));
      return NULL;
    }
    if (et_bits(et) != et_bits(out)) /* of another width: see elemental.c */
      return unsupported(i, et, d);
    return bitcast_convert(cg, et, out, ops[0]);
  }
  case HLO_SELECT:
    if (i->nops != 3) return unsupported(i, et, d);
    return LLVMBuildSelect(cg->b, ops[0], ops[1], ops[2], "");
  case HLO_CLAMP: {
    if (i->nops != 3) return unsupported(i, et, d);
    ElemType ct = i->ops[1]->shape->et;
    if (et_is_float(ct))
      return cg_float_clamp(cg, ct, ops[0], ops[1], ops[2]);
    return cg_emit_min(cg, ct, cg_emit_max(cg, ct, ops[1], ops[0]), ops[2]);
  }
  case HLO_COMPARE:
    if (i->nops != 2 || i->cmp_dir == CMP_NONE) return unsupported(i, et, d);
    return compare(cg, i, et, ops[0], ops[1]);
  default:
    break;
  }
  if (i->nops < 1 || i->nops > 2 || !hlo_op_is_elementwise(i->op))
    return unsupported(i, et, d);
  LLVMValueRef r = NULL;
  if (et == ET_PRED) {
    r = pred_op(cg, i->op, i->nops, ops);
  } else if (et_is_float(et)) {
    r = cg_float_op(cg, i->op, et, i->nops, ops);
  } else if (i->nops == 1) {
    r = int_unary(cg, i->op, et_is_signed_int(et), ops[0]);
  } else {
    r = int_binary(cg, i->op, et, ops[0], ops[1]);
  }
  if (!r)
    return unsupported(i, et, d);
  if (LLVMTypeOf(r) != cg_reg_type(cg, out))
    return unsupported(i, out, d);
  return r;
}
