/*
 * elemental_complex.c - c64 and c128 elementwise ops of the elemental
 * emitter.  A complex register is a <2 x float> / <2 x double> vector
 * (real, imaginary), which is also its layout in memory.
 *
 * The formulas are the textbook ones lib/eval's C complex arithmetic
 * reduces to on finite values: (a+bi)(c+di) = (ac-bd) + (ad+bc)i; division
 * by Smith's method (the ratio of the smaller to the larger of |c|, |d|),
 * as libgcc's __divsc3 / __divdc3; abs by hypot, exp as e^a (cos b, sin b),
 * log as (log|z|, atan2(b, a)), sign as z / |z| (0 for 0).  The binary
 * ops built from those are lib/eval's (XLA's evaluator's) definitions:
 * power x^y = exp(y log x) with 0^0 = 1, and atan2(x, y) = -i log((y + ix) /
 * sqrt(y^2 + x^2)), the square root principal ((|a| + |z|) / 2 under the
 * root, as C's csqrt).  libm's and
 * libgcc's special cases for infinities and NaNs, and their last-ulp
 * choices, are not reproduced: results agree with the interpreter within
 * --compare's tolerance, not bit for bit.
 */
#include "cg_internal.h"

static LLVMValueRef re(Codegen *cg, LLVMValueRef z) {
  return LLVMBuildExtractElement(cg->b, z, cg_const_i32(cg, 0), "re");
}

static LLVMValueRef im(Codegen *cg, LLVMValueRef z) {
  return LLVMBuildExtractElement(cg->b, z, cg_const_i32(cg, 1), "im");
}

static LLVMValueRef make(Codegen *cg, ElemType ct, LLVMValueRef r, LLVMValueRef i) {
  LLVMValueRef z = LLVMGetUndef(cg_reg_type(cg, ct));
  z = LLVMBuildInsertElement(cg->b, z, r, cg_const_i32(cg, 0), "");
  return LLVMBuildInsertElement(cg->b, z, i, cg_const_i32(cg, 1), "");
}

static LLVMValueRef fabs_of(Codegen *cg, LLVMValueRef x) {
  LLVMTypeRef t = LLVMTypeOf(x);
  const char *n = t == LLVMDoubleTypeInContext(cg->ctx) ? "llvm.fabs.f64" : "llvm.fabs.f32";
  return cg_call_named(cg, n, t, 1, &t, &x);
}

LLVMValueRef cg_complex_mul(Codegen *cg, ElemType ct, LLVMValueRef x, LLVMValueRef y) {
  LLVMBuilderRef b = cg->b;
  LLVMValueRef a = re(cg, x), bb = im(cg, x), c = re(cg, y), d = im(cg, y);
  LLVMValueRef r = LLVMBuildFSub(b, LLVMBuildFMul(b, a, c, ""), LLVMBuildFMul(b, bb, d, ""), "");
  LLVMValueRef i = LLVMBuildFAdd(b, LLVMBuildFMul(b, a, d, ""), LLVMBuildFMul(b, bb, c, ""), "");
  return make(cg, ct, r, i);
}

LLVMValueRef cg_complex_div(Codegen *cg, ElemType ct, LLVMValueRef x, LLVMValueRef y) {
  LLVMBuilderRef b = cg->b;
  LLVMValueRef a = re(cg, x), bb = im(cg, x), c = re(cg, y), d = im(cg, y);
  LLVMValueRef small_c = LLVMBuildFCmp(b, LLVMRealOLT, fabs_of(cg, c), fabs_of(cg, d), "");
  /* |c| < |d|: ratio = c/d, denom = c*ratio + d,
   *            ((a*ratio + b) / denom, (b*ratio - a) / denom)
   * else:      ratio = d/c, denom = d*ratio + c,
   *            ((b*ratio + a) / denom, (b - a*ratio) / denom) */
  LLVMValueRef r1 = LLVMBuildFDiv(b, c, d, "");
  LLVMValueRef den1 = LLVMBuildFAdd(b, LLVMBuildFMul(b, c, r1, ""), d, "");
  LLVMValueRef x1 = LLVMBuildFDiv(b, LLVMBuildFAdd(b, LLVMBuildFMul(b, a, r1, ""), bb, ""),
                                  den1, "");
  LLVMValueRef y1 = LLVMBuildFDiv(b, LLVMBuildFSub(b, LLVMBuildFMul(b, bb, r1, ""), a, ""),
                                  den1, "");
  LLVMValueRef r2 = LLVMBuildFDiv(b, d, c, "");
  LLVMValueRef den2 = LLVMBuildFAdd(b, LLVMBuildFMul(b, d, r2, ""), c, "");
  LLVMValueRef x2 = LLVMBuildFDiv(b, LLVMBuildFAdd(b, LLVMBuildFMul(b, bb, r2, ""), a, ""),
                                  den2, "");
  LLVMValueRef y2 = LLVMBuildFDiv(b, LLVMBuildFSub(b, bb, LLVMBuildFMul(b, a, r2, ""), ""),
                                  den2, "");
  return make(cg, ct, LLVMBuildSelect(b, small_c, x1, x2, ""),
              LLVMBuildSelect(b, small_c, y1, y2, ""));
}

static LLVMValueRef cabs_of(Codegen *cg, ElemType ct, LLVMValueRef z) {
  LLVMValueRef a[2] = {re(cg, z), im(cg, z)};
  return cg_math_call(cg, "hypot", et_complex_component(ct), 2, a);
}

static LLVMValueRef cexp_of(Codegen *cg, ElemType ct, LLVMValueRef z) {
  ElemType ft = et_complex_component(ct);
  LLVMValueRef a = re(cg, z), bb = im(cg, z);
  LLVMValueRef ea = cg_math_call(cg, "exp", ft, 1, &a);
  LLVMValueRef cs = cg_math_call(cg, "cos", ft, 1, &bb);
  LLVMValueRef sn = cg_math_call(cg, "sin", ft, 1, &bb);
  return make(cg, ct, LLVMBuildFMul(cg->b, ea, cs, ""), LLVMBuildFMul(cg->b, ea, sn, ""));
}

static LLVMValueRef clog_of(Codegen *cg, ElemType ct, LLVMValueRef z) {
  ElemType ft = et_complex_component(ct);
  LLVMValueRef m = cabs_of(cg, ct, z);
  LLVMValueRef at[2] = {im(cg, z), re(cg, z)};
  return make(cg, ct, cg_math_call(cg, "log", ft, 1, &m), cg_math_call(cg, "atan2", ft, 2, at));
}

/* The principal square root: t = sqrt((|a| + |z|) / 2), then (t, b / 2t)
 * for a >= 0, else (|b| / 2t, t with b's sign); 0 stays (0, b). */
static LLVMValueRef csqrt_of(Codegen *cg, ElemType ct, LLVMValueRef z) {
  LLVMBuilderRef b = cg->b;
  ElemType ft = et_complex_component(ct);
  LLVMValueRef a = re(cg, z), bb = im(cg, z);
  LLVMValueRef half = cg_const_f(cg, ft, 0.5), zero = cg_const_f(cg, ft, 0.0);
  LLVMValueRef s = LLVMBuildFMul(b, LLVMBuildFAdd(b, fabs_of(cg, a), cabs_of(cg, ct, z), ""),
                                 half, "");
  LLVMValueRef t = cg_math_call(cg, "sqrt", ft, 1, &s);
  LLVMValueRef t2 = LLVMBuildFAdd(b, t, t, "");
  LLVMTypeRef ty = LLVMTypeOf(t);
  LLVMValueRef cs[2] = {t, bb};
  LLVMValueRef signed_t = cg_call_named(cg, ty == LLVMDoubleTypeInContext(cg->ctx)
                                                ? "llvm.copysign.f64" : "llvm.copysign.f32",
                                        ty, 2, (LLVMTypeRef[]){ty, ty}, cs);
  LLVMValueRef pos = LLVMBuildFCmp(b, LLVMRealOGE, a, zero, "");
  LLVMValueRef r = LLVMBuildSelect(b, pos, t, LLVMBuildFDiv(b, fabs_of(cg, bb), t2, ""), "");
  LLVMValueRef i = LLVMBuildSelect(b, pos, LLVMBuildFDiv(b, bb, t2, ""), signed_t, "");
  LLVMValueRef is0 = LLVMBuildAnd(b, LLVMBuildFCmp(b, LLVMRealOEQ, a, zero, ""),
                                  LLVMBuildFCmp(b, LLVMRealOEQ, bb, zero, ""), "");
  return LLVMBuildSelect(b, is0, make(cg, ct, zero, bb), make(cg, ct, r, i), "");
}

static LLVMValueRef is_zero(Codegen *cg, LLVMValueRef z) {
  LLVMBuilderRef b = cg->b;
  LLVMValueRef zero = LLVMConstNull(LLVMTypeOf(re(cg, z)));
  return LLVMBuildAnd(b, LLVMBuildFCmp(b, LLVMRealOEQ, re(cg, z), zero, ""),
                      LLVMBuildFCmp(b, LLVMRealOEQ, im(cg, z), zero, ""), "");
}

/* x^y = exp(y log x), 1 when both are 0. */
static LLVMValueRef cpow_of(Codegen *cg, ElemType ct, LLVMValueRef x, LLVMValueRef y) {
  LLVMBuilderRef b = cg->b;
  LLVMValueRef p = cexp_of(cg, ct, cg_complex_mul(cg, ct, y, clog_of(cg, ct, x)));
  LLVMValueRef one = make(cg, ct, cg_const_f(cg, et_complex_component(ct), 1.0),
                          cg_const_f(cg, et_complex_component(ct), 0.0));
  return LLVMBuildSelect(b, LLVMBuildAnd(b, is_zero(cg, x), is_zero(cg, y), ""), one, p, "");
}

/* atan2(x, y) = -i log((y + ix) / sqrt(y^2 + x^2)). */
static LLVMValueRef catan2_of(Codegen *cg, ElemType ct, LLVMValueRef x, LLVMValueRef y) {
  LLVMBuilderRef b = cg->b;
  LLVMValueRef ix = make(cg, ct, LLVMBuildFNeg(b, im(cg, x), ""), re(cg, x));
  LLVMValueRef num = LLVMBuildFAdd(b, y, ix, "");
  LLVMValueRef den = csqrt_of(cg, ct, LLVMBuildFAdd(b, cg_complex_mul(cg, ct, y, y), cg_complex_mul(cg, ct, x, x), ""));
  LLVMValueRef l = clog_of(cg, ct, cg_complex_div(cg, ct, num, den));
  /* -i (a + bi) = b - ai */
  return make(cg, ct, im(cg, l), LLVMBuildFNeg(b, re(cg, l), ""));
}

static LLVMValueRef cunary(Codegen *cg, HloOp op, ElemType ct, LLVMValueRef z) {
  LLVMBuilderRef b = cg->b;
  switch (op) {
  case HLO_NEGATE: return LLVMBuildFNeg(b, z, "");
  case HLO_REAL: return re(cg, z);
  case HLO_IMAG: return im(cg, z);
  case HLO_ABS: return cabs_of(cg, ct, z);
  case HLO_EXP: return cexp_of(cg, ct, z);
  case HLO_LOG: return clog_of(cg, ct, z);
  case HLO_SIGN: {
    LLVMValueRef m = cabs_of(cg, ct, z);
    LLVMValueRef zero = LLVMBuildFCmp(b, LLVMRealOEQ, m, LLVMConstReal(LLVMTypeOf(m), 0.0), "");
    LLVMValueRef q = make(cg, ct, LLVMBuildFDiv(b, re(cg, z), m, ""),
                          LLVMBuildFDiv(b, im(cg, z), m, ""));
    return LLVMBuildSelect(b, zero, LLVMConstNull(cg_reg_type(cg, ct)), q, "");
  }
  default: return NULL;
  }
}

/* A real or complex value of type from as complex type to. */
static LLVMValueRef to_complex(Codegen *cg, ElemType from, ElemType to, LLVMValueRef v) {
  ElemType ft = et_complex_component(to);
  if (et_is_complex(from)) {
    ElemType fc = et_complex_component(from);
    return make(cg, to, cg_emit_convert(cg, fc, ft, re(cg, v)),
                cg_emit_convert(cg, fc, ft, im(cg, v)));
  }
  return make(cg, to, cg_emit_convert(cg, from, ft, v), cg_const_f(cg, ft, 0.0));
}

LLVMValueRef cg_complex_op(Codegen *cg, const HloInstr *i, LLVMValueRef const *v) {
  LLVMBuilderRef b = cg->b;
  ElemType out = i->shape->et;
  ElemType et = i->nops ? i->ops[0]->shape->et : out;
  if (i->op == HLO_COMPLEX) {
    if (i->nops != 2 || !et_is_complex(out) || et != et_complex_component(out))
      return NULL;
    return make(cg, out, v[0], v[1]);
  }
  if (i->op == HLO_CONVERT) {
    if (et_is_complex(out))
      return to_complex(cg, et, out, v[0]);
    /* complex -> real: the real part */
    ElemType fc = et_complex_component(et);
    return cg_emit_convert(cg, fc, out, re(cg, v[0]));
  }
  if (!et_is_complex(et))
    return NULL;
  if (i->op == HLO_COMPARE) {
    if (i->cmp_dir != CMP_EQ && i->cmp_dir != CMP_NE)
      return NULL;
    LLVMValueRef r = LLVMBuildFCmp(b, LLVMRealOEQ, re(cg, v[0]), re(cg, v[1]), "");
    LLVMValueRef m = LLVMBuildFCmp(b, LLVMRealOEQ, im(cg, v[0]), im(cg, v[1]), "");
    LLVMValueRef eq = LLVMBuildAnd(b, r, m, "");
    return i->cmp_dir == CMP_EQ ? eq : LLVMBuildNot(b, eq, "");
  }
  if (i->nops == 1)
    return cunary(cg, i->op, et, v[0]);
  if (i->nops != 2)
    return NULL;
  switch (i->op) {
  case HLO_ADD: return LLVMBuildFAdd(b, v[0], v[1], "");
  case HLO_SUBTRACT: return LLVMBuildFSub(b, v[0], v[1], "");
  case HLO_MULTIPLY: return cg_complex_mul(cg, et, v[0], v[1]);
  case HLO_DIVIDE: return cg_complex_div(cg, et, v[0], v[1]);
  case HLO_POWER: return cpow_of(cg, et, v[0], v[1]);
  case HLO_ATAN2: return catan2_of(cg, et, v[0], v[1]);
  default: return NULL;
  }
}
