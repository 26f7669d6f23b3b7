/*
 * elemental_math.c - scalar float math and conversions for the elemental
 * emitter, with XLA's semantics as lib/eval implements them: f16 and bf16
 * computed in f32 and rounded back, NaN-propagating max/min, saturating
 * float->int converts, libdevice on NVPTX and libm on the host (or, for
 * f32 compute with fast_math, the inline approximations of fast_math.c).
 */
#include <string.h>

#include "cg_internal.h"

static LLVMTypeRef f32t(Codegen *cg) { return LLVMFloatTypeInContext(cg->ctx); }
static LLVMTypeRef f64t(Codegen *cg) { return LLVMDoubleTypeInContext(cg->ctx); }

LLVMValueRef cg_math_call(Codegen *cg, const char *fn, ElemType et,
                          int nargs, LLVMValueRef const *args) {
  char name[64];
  bool f32 = et != ET_F64;
  snprintf(name, sizeof name, "%s%s%s", cg->is_gpu ? "__nv_" : "", fn,
           f32 ? "f" : "");
  LLVMTypeRef t = f32 ? f32t(cg) : f64t(cg);
  LLVMTypeRef tys[2] = {t, t};
  return cg_call_named(cg, name, t, nargs, tys, args);
}

/* Calls llvm.<name>.f32 / .f64 (or another overload suffix). */
static LLVMValueRef intrinsic1(Codegen *cg, const char *name, LLVMValueRef x) {
  LLVMTypeRef t = LLVMTypeOf(x);
  char full[80];
  const char *suffix = t == f64t(cg) ? "f64" : "f32";
  snprintf(full, sizeof full, "llvm.%s.%s", name, suffix);
  return cg_call_named(cg, full, t, 1, &t, &x);
}

static LLVMValueRef intrinsic2(Codegen *cg, const char *name, LLVMValueRef x,
                               LLVMValueRef y) {
  LLVMTypeRef t = LLVMTypeOf(x);
  char full[80];
  snprintf(full, sizeof full, "llvm.%s.%s", name,
           t == f64t(cg) ? "f64" : "f32");
  LLVMTypeRef tys[2] = {t, t};
  LLVMValueRef a[2] = {x, y};
  return cg_call_named(cg, full, t, 2, tys, a);
}

/* bf16 bits <-> f32, by integer operations (exact; round to nearest even,
 * NaN -> quiet NaN of the same sign, as lib/eval does). */
static LLVMValueRef bf16_to_f32(Codegen *cg, LLVMValueRef v) {
  LLVMTypeRef i16 = LLVMInt16TypeInContext(cg->ctx);
  LLVMValueRef bits = LLVMBuildBitCast(cg->b, v, i16, "");
  bits = LLVMBuildZExt(cg->b, bits, cg_i32(cg), "");
  bits = LLVMBuildShl(cg->b, bits, cg_const_i32(cg, 16), "");
  return LLVMBuildBitCast(cg->b, bits, f32t(cg), "");
}

static LLVMValueRef f32_to_bf16(Codegen *cg, LLVMValueRef f) {
  LLVMBuilderRef b = cg->b;
  LLVMTypeRef i32 = cg_i32(cg), i16 = LLVMInt16TypeInContext(cg->ctx);
  LLVMValueRef w = LLVMBuildBitCast(b, f, i32, "");
  LLVMValueRef mag = LLVMBuildAnd(b, w, LLVMConstInt(i32, 0x7fffffffu, false), "");
  LLVMValueRef isnan = LLVMBuildICmp(b, LLVMIntUGT, mag,
                                     LLVMConstInt(i32, 0x7f800000u, false), "");
  LLVMValueRef neg = LLVMBuildICmp(b, LLVMIntSLT, w, LLVMConstInt(i32, 0, false), "");
  LLVMValueRef nanv = LLVMBuildSelect(b, neg, LLVMConstInt(i16, 0xffc0, false),
                                      LLVMConstInt(i16, 0x7fc0, false), "");
  LLVMValueRef lsb = LLVMBuildAnd(b, LLVMBuildLShr(b, w, LLVMConstInt(i32, 16, false), ""),
                                  LLVMConstInt(i32, 1, false), "");
  LLVMValueRef r = LLVMBuildAdd(b, w, LLVMConstInt(i32, 0x7fff, false), "");
  r = LLVMBuildAdd(b, r, lsb, "");
  r = LLVMBuildTrunc(b, LLVMBuildLShr(b, r, LLVMConstInt(i32, 16, false), ""), i16, "");
  r = LLVMBuildSelect(b, isnan, nanv, r, "");
  return LLVMBuildBitCast(b, r, LLVMBFloatTypeInContext(cg->ctx), "");
}

/* The compute type of a float: f16, bf16 and the bitfloats (f8, f4) widen
 * to f32; a bitfloat result is encoded from the f32 (or f64) value in one
 * rounding. */
static LLVMValueRef to_compute(Codegen *cg, ElemType et, LLVMValueRef v) {
  if (cg_et_is_bitfloat(et))
    return cg_bitfloat_to_f32(cg, et, v);
  if (et == ET_F16)
    return LLVMBuildFPExt(cg->b, v, f32t(cg), "");
  if (et == ET_BF16)
    return bf16_to_f32(cg, v);
  return v;
}

static LLVMValueRef from_compute(Codegen *cg, ElemType et, LLVMValueRef v) {
  if (cg_et_is_bitfloat(et))
    return cg_bitfloat_from_double(cg, et, v);
  if (et == ET_F16)
    return LLVMBuildFPTrunc(cg->b, v, LLVMHalfTypeInContext(cg->ctx), "");
  if (et == ET_BF16)
    return f32_to_bf16(cg, v);
  return v;
}

static ElemType compute_et(ElemType et) { return et == ET_F64 ? ET_F64 : ET_F32; }

static LLVMValueRef fconst(Codegen *cg, LLVMValueRef like, double v) {
  return LLVMConstReal(LLVMTypeOf(like), v);
}

/* MAXF / MINF of lib/eval: a NaN operand (the first one) wins. */
static LLVMValueRef intrinsic2(Codegen *cg, const char *name, LLVMValueRef x,
                               LLVMValueRef y);

/* NaN-propagating max / min.  The host uses llvm.maximum / llvm.minimum,
 * which LLVM's vectorizers know as reductions (they order -0 below +0,
 * where the compare-and-select form returns the first operand of equal
 * zeros: the result differs only in the sign of a zero). */
static LLVMValueRef fmaxmin(Codegen *cg, bool is_max, LLVMValueRef a,
                            LLVMValueRef b) {
  if (!cg->is_gpu)
    return intrinsic2(cg, is_max ? "maximum" : "minimum", a, b);
  LLVMBuilderRef bl = cg->b;
  LLVMValueRef anan = LLVMBuildFCmp(bl, LLVMRealUNO, a, a, "");
  LLVMValueRef bnan = LLVMBuildFCmp(bl, LLVMRealUNO, b, b, "");
  LLVMValueRef pick = is_max ? LLVMBuildSelect(bl, LLVMBuildFCmp(bl, LLVMRealOLT, a, b, ""), b, a, "")
                             : LLVMBuildSelect(bl, LLVMBuildFCmp(bl, LLVMRealOLT, b, a, ""), b, a, "");
  LLVMValueRef r = LLVMBuildSelect(bl, bnan, b, pick, "");
  return LLVMBuildSelect(bl, anan, a, r, "");
}

static LLVMValueRef int_maxmin(Codegen *cg, ElemType et, bool is_max,
                               LLVMValueRef a, LLVMValueRef b) {
  bool sg = et_is_signed_int(et);
  LLVMValueRef c = is_max ? LLVMBuildICmp(cg->b, sg ? LLVMIntSLT : LLVMIntULT, a, b, "")
                          : LLVMBuildICmp(cg->b, sg ? LLVMIntSLT : LLVMIntULT, b, a, "");
  return LLVMBuildSelect(cg->b, c, b, a, "");
}

LLVMValueRef cg_emit_max(Codegen *cg, ElemType et, LLVMValueRef a,
                         LLVMValueRef b) {
  if (et == ET_PRED)
    return LLVMBuildOr(cg->b, a, b, "");
  if (et_is_float(et))
    return from_compute(cg, et, fmaxmin(cg, true, to_compute(cg, et, a),
                                        to_compute(cg, et, b)));
  return int_maxmin(cg, et, true, a, b);
}

LLVMValueRef cg_emit_min(Codegen *cg, ElemType et, LLVMValueRef a,
                         LLVMValueRef b) {
  if (et == ET_PRED)
    return LLVMBuildAnd(cg->b, a, b, "");
  if (et_is_float(et))
    return from_compute(cg, et, fmaxmin(cg, false, to_compute(cg, et, a),
                                        to_compute(cg, et, b)));
  return int_maxmin(cg, et, false, a, b);
}

/* x rounded to f32 toward zero with the last bit set when inexact (round
 * to odd): rounding that to f16 to nearest even then rounds x once,
 * correctly (f32 keeps more than two bits beyond f16's).  The host has no
 * double-to-half instruction, and LLVM would call a compiler-rt routine
 * that our shared objects do not carry.  (bf16 from f64 goes through f32
 * rounded to nearest, as XLA's emitter does.) */
static LLVMValueRef f64_to_f32_odd(Codegen *cg, LLVMValueRef x) {
  LLVMBuilderRef b = cg->b;
  LLVMTypeRef i32 = LLVMInt32TypeInContext(cg->ctx), ft = f32t(cg), dt = f64t(cg);
  LLVMValueRef t = LLVMBuildFPTrunc(b, x, ft, "");
  LLVMValueRef back = LLVMBuildFPExt(b, t, dt, "");
  LLVMValueRef inexact = LLVMBuildFCmp(b, LLVMRealONE, back, x, "");
  LLVMValueRef ab = cg_call_named(cg, "llvm.fabs.f64", dt, 1, &dt, &back);
  LLVMValueRef ax = cg_call_named(cg, "llvm.fabs.f64", dt, 1, &dt, &x);
  LLVMValueRef away = LLVMBuildFCmp(b, LLVMRealOGT, ab, ax, "");
  LLVMValueRef bits = LLVMBuildBitCast(b, t, i32, "");
  LLVMValueRef one = LLVMConstInt(i32, 1, false);
  LLVMValueRef down = LLVMBuildSelect(b, away, LLVMBuildSub(b, bits, one, ""), bits, "");
  bits = LLVMBuildSelect(b, inexact, LLVMBuildOr(b, down, one, ""), bits, "");
  return LLVMBuildBitCast(b, bits, ft, "");
}

LLVMValueRef cg_emit_convert(Codegen *cg, ElemType from, ElemType to,
                             LLVMValueRef v) {
  LLVMBuilderRef b = cg->b;
  if (from == to)
    return v;
  ElemClass fc = et_class(from), tc = et_class(to);
  LLVMTypeRef tt = cg_reg_type(cg, to);
  if (tc == ETC_PRED) {
    if (fc == ETC_FLOAT) {
      LLVMValueRef x = to_compute(cg, from, v);
      return LLVMBuildFCmp(b, LLVMRealUNE, x, fconst(cg, x, 0.0), "");
    }
    return LLVMBuildICmp(b, LLVMIntNE, v, LLVMConstInt(LLVMTypeOf(v), 0, false), "");
  }
  if (tc == ETC_SINT || tc == ETC_UINT) {
    if (fc == ETC_PRED)
      return LLVMBuildZExt(b, v, tt, "");
    if (fc == ETC_FLOAT) {
      LLVMValueRef x = to_compute(cg, from, v);
      char name[64];
      snprintf(name, sizeof name, "llvm.fpto%ci.sat.i%d.%s",
               tc == ETC_SINT ? 's' : 'u', et_bits(to),
               from == ET_F64 ? "f64" : "f32");
      LLVMTypeRef xt = LLVMTypeOf(x);
      return cg_call_named(cg, name, tt, 1, &xt, &x);
    }
    int fw = et_bits(from), tw = et_bits(to);
    if (fw == tw)
      return v;
    if (fw > tw)
      return LLVMBuildTrunc(b, v, tt, "");
    return fc == ETC_SINT ? LLVMBuildSExt(b, v, tt, "")
                          : LLVMBuildZExt(b, v, tt, "");
  }
  /* to a float; a bitfloat is encoded from the exact double (integers of
   * up to 53 bits are exact there) */
  bool wide = to == ET_F64 || cg_et_is_bitfloat(to);
  LLVMTypeRef ct = wide ? f64t(cg) : f32t(cg);
  LLVMValueRef x;
  if (fc == ETC_PRED || fc == ETC_UINT) {
    x = LLVMBuildUIToFP(b, v, ct, "");
  } else if (fc == ETC_SINT) {
    x = LLVMBuildSIToFP(b, v, ct, "");
  } else {
    x = to_compute(cg, from, v);
    if (to == ET_F16 && from == ET_F64 && cg->is_gpu)
      return LLVMBuildFPTrunc(b, x, tt, "");
    if (to == ET_F16 && from == ET_F64)
      return from_compute(cg, to, f64_to_f32_odd(cg, x));
    if (LLVMTypeOf(x) != ct)
      x = wide ? LLVMBuildFPExt(b, x, ct, "") : LLVMBuildFPTrunc(b, x, ct, "");
  }
  return from_compute(cg, to, x);
}

/* A unary float op in the compute type; NULL if not a float op. */
static LLVMValueRef float_unary(Codegen *cg, HloOp op, ElemType cet,
                                LLVMValueRef x) {
  LLVMBuilderRef b = cg->b;
  const char *m = NULL;
  if (cg->opts.fast_math && !cg->is_gpu && cet == ET_F32) {
    LLVMValueRef r = cg_fast_math(cg, op, x);
    if (r)
      return r;
  }
  switch (op) {
  case HLO_ABS: return intrinsic1(cg, "fabs", x);
  case HLO_NEGATE: return LLVMBuildFNeg(b, x, "");
  case HLO_SQRT: return intrinsic1(cg, "sqrt", x);
  case HLO_RSQRT:
    return LLVMBuildFDiv(b, fconst(cg, x, 1.0), intrinsic1(cg, "sqrt", x), "");
  case HLO_CEIL: return intrinsic1(cg, "ceil", x);
  case HLO_FLOOR: return intrinsic1(cg, "floor", x);
  case HLO_ROUND_NEAREST_AFZ: return intrinsic1(cg, "round", x);
  case HLO_ROUND_NEAREST_EVEN: return intrinsic1(cg, "rint", x);
  case HLO_REAL: return x;
  case HLO_IMAG: return fconst(cg, x, 0.0);
  case HLO_LOGISTIC: {
    LLVMValueRef nx = LLVMBuildFNeg(b, x, "");
    LLVMValueRef e = cg_math_call(cg, "exp", cet, 1, &nx);
    return LLVMBuildFDiv(b, fconst(cg, x, 1.0),
                         LLVMBuildFAdd(b, fconst(cg, x, 1.0), e, ""), "");
  }
  case HLO_SIGN: {
    LLVMValueRef nz = LLVMBuildFCmp(b, LLVMRealUNE, x, fconst(cg, x, 0.0), "");
    LLVMValueRef one = LLVMBuildSelect(b, nz, fconst(cg, x, 1.0), fconst(cg, x, 0.0), "");
    LLVMValueRef s = intrinsic2(cg, "copysign", one, x);
    LLVMValueRef nan = LLVMBuildFCmp(b, LLVMRealUNO, x, x, "");
    return LLVMBuildSelect(b, nan, x, s, "");
  }
  case HLO_EXP: m = "exp"; break;
  case HLO_EXPM1: m = "expm1"; break;
  case HLO_LOG: m = "log"; break;
  case HLO_LOG1P: m = "log1p"; break;
  case HLO_CBRT: m = "cbrt"; break;
  case HLO_SIN: m = "sin"; break;
  case HLO_COS: m = "cos"; break;
  case HLO_TAN: m = "tan"; break;
  case HLO_TANH: m = "tanh"; break;
  case HLO_ERF: m = "erf"; break;
  case HLO_ACOS: m = "acos"; break;
  case HLO_ASIN: m = "asin"; break;
  case HLO_ATAN: m = "atan"; break;
  case HLO_ACOSH: m = "acosh"; break;
  case HLO_ASINH: m = "asinh"; break;
  case HLO_ATANH: m = "atanh"; break;
  case HLO_COSH: m = "cosh"; break;
  case HLO_SINH: m = "sinh"; break;
  default: return NULL;
  }
  return cg_math_call(cg, m, cet, 1, &x);
}

static LLVMValueRef float_binary(Codegen *cg, HloOp op, ElemType cet,
                                 LLVMValueRef x, LLVMValueRef y) {
  LLVMBuilderRef b = cg->b;
  LLVMValueRef a[2] = {x, y};
  switch (op) {
  case HLO_ADD: return LLVMBuildFAdd(b, x, y, "");
  case HLO_SUBTRACT: return LLVMBuildFSub(b, x, y, "");
  case HLO_MULTIPLY: return LLVMBuildFMul(b, x, y, "");
  case HLO_DIVIDE: return LLVMBuildFDiv(b, x, y, "");
  case HLO_REMAINDER: return LLVMBuildFRem(b, x, y, "");
  case HLO_MAXIMUM: return fmaxmin(cg, true, x, y);
  case HLO_MINIMUM: return fmaxmin(cg, false, x, y);
  case HLO_ATAN2: return cg_math_call(cg, "atan2", cet, 2, a);
  case HLO_POWER: {
    LLVMValueRef p = cg_math_call(cg, "pow", cet, 2, a);
    LLVMValueRef z0 = LLVMBuildFCmp(b, LLVMRealOEQ, x, fconst(cg, x, 0.0), "");
    LLVMValueRef z1 = LLVMBuildFCmp(b, LLVMRealOEQ, y, fconst(cg, y, 0.0), "");
    return LLVMBuildSelect(b, LLVMBuildAnd(b, z0, z1, ""), fconst(cg, x, 1.0), p, "");
  }
  default: return NULL;
  }
}

/* Float elementwise op (unary or binary) on values of type et; NULL if the
 * op is not one of these. */
LLVMValueRef cg_float_op(Codegen *cg, HloOp op, ElemType et, int n,
                         LLVMValueRef const *v) {
  ElemType cet = compute_et(et);
  LLVMValueRef x = to_compute(cg, et, v[0]), r;
  if (n == 1) {
    if (op == HLO_IS_FINITE) {
      LLVMValueRef ax = intrinsic1(cg, "fabs", x);
      return LLVMBuildFCmp(cg->b, LLVMRealONE, ax,
                           fconst(cg, x, __builtin_inf()), "");
    }
    r = float_unary(cg, op, cet, x);
  } else {
    r = float_binary(cg, op, cet, x, to_compute(cg, et, v[1]));
  }
  return r ? from_compute(cg, et, r) : NULL;
}

/* clamp(lo, x, hi) on floats as lib/eval does it. */
LLVMValueRef cg_float_clamp(Codegen *cg, ElemType et, LLVMValueRef lo,
                            LLVMValueRef x, LLVMValueRef hi) {
  LLVMBuilderRef b = cg->b;
  LLVMValueRef l = to_compute(cg, et, lo), v = to_compute(cg, et, x),
               h = to_compute(cg, et, hi);
  LLVMValueRef m = LLVMBuildSelect(b, LLVMBuildFCmp(b, LLVMRealOLT, v, l, ""), l, v, "");
  m = LLVMBuildSelect(b, LLVMBuildFCmp(b, LLVMRealOLT, m, h, ""), m, h, "");
  m = LLVMBuildSelect(b, LLVMBuildFCmp(b, LLVMRealUNO, h, h, ""), h, m, "");
  m = LLVMBuildSelect(b, LLVMBuildFCmp(b, LLVMRealUNO, v, v, ""), v, m, "");
  m = LLVMBuildSelect(b, LLVMBuildFCmp(b, LLVMRealUNO, l, l, ""), l, m, "");
  return from_compute(cg, et, m);
}

/* Float compare (non-total order) in the compute type. */
LLVMValueRef cg_float_compare(Codegen *cg, ElemType et, CmpDir dir,
                              LLVMValueRef x, LLVMValueRef y) {
  LLVMRealPredicate p;
  switch (dir) {
  case CMP_EQ: p = LLVMRealOEQ; break;
  case CMP_NE: p = LLVMRealUNE; break;
  case CMP_LT: p = LLVMRealOLT; break;
  case CMP_LE: p = LLVMRealOLE; break;
  case CMP_GT: p = LLVMRealOGT; break;
  default: p = LLVMRealOGE; break;
  }
  return LLVMBuildFCmp(cg->b, p, to_compute(cg, et, x), to_compute(cg, et, y), "");
}
