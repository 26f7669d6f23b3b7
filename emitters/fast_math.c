/*
 * fast_math.c - branch-free, call-free f32 approximations of exp, expm1,
 * log, log1p, tanh, logistic, erf, sin and cos for the host target
 * (CodegenOptions.fast_math, xhloc --host-math=fast), built as plain LLVM IR
 * the loop vectorizer can widen: fmuladd, selects, integer bit tricks,
 * fabs and copysign.  No floor/rint intrinsic is used: on the baseline
 * x86-64 cpu (SSE2, no roundps) those would become libm calls again;
 * rounding to an integer is done by adding and subtracting 1.5*2^23
 * (1.5*2^52 in double).  The approach is the one of XLA's CPU polynomial
 * approximations (range reduction, a minimax polynomial or rational
 * function, reconstruction); the code and the coefficients are our own
 * (fitted by scripts/fast_math_fit.py).
 *
 * Error in ulps of the f32 result against the exact value (libm in
 * double): the maximum measured over all 2^32 inputs, with llvm.fmuladd
 * unfused (the baseline x86-64 cpu) / fused (-march=haswell), and the bound
 * tests/unit/test_fast_math.c asserts on a strided sweep:
 *
 *             measured     bound  inputs
 *   exp       0.98 / 1.01   1.5   all; results below 2^-126 are rounded
 *                                 subnormals (never flushed)
 *   expm1     1.74 / 1.61   2     all
 *   log       0.95 / 0.95   1     all (subnormals included)
 *   log1p     0.97 / 0.97   1.5   all
 *   tanh      2.55 / 2.52   3     all (relative, also near 0)
 *   logistic  2.40 / 2.40   3     all; logistic(x) itself, which the HLO
 *                                 pass logistic-expander usually rewrites
 *                                 to 1/(1+exp(-x)) first
 *   erf       0.53 / 0.53   1     all (the rational function runs in
 *                                 double)
 *   sin       1.57 / 1.56   2     |x| <= 3e6 (|x|*2/pi < 2^21, where the
 *   cos       1.59 / 1.56   2     reduction by pi/2 in double is exact);
 *                                 beyond, the reduction loses accuracy
 *                                 but results stay in [-1, 1]
 *   rsqrt     1.49 / 1.49   1.5   all; not here: 1/llvm.sqrt vectorizes
 *
 * Special values: NaN gives NaN everywhere; exp(-inf) = 0, exp(+inf) =
 * +inf; expm1(-inf) = -1; log(0) = -inf, log(x < 0) = NaN, log(+inf) =
 * +inf; log1p(-1) = -inf, log1p(x < -1) = NaN; tanh, erf(+-inf) = +-1;
 * logistic(-inf) = 0, logistic(+inf) = 1 (no NaN at large |x|); sin,
 * cos(+-inf) = NaN.  Zeros keep their sign in expm1, log1p, tanh, erf, sin.
 */
#include "cg_internal.h"

/* The builder and the types one approximation uses. */
typedef struct Fm {
  Codegen *cg;
  LLVMBuilderRef b;
  LLVMTypeRef f32, f64, i32, i64;
} Fm;

static Fm fm_new(Codegen *cg) {
  return (Fm){cg, cg->b, LLVMFloatTypeInContext(cg->ctx),
              LLVMDoubleTypeInContext(cg->ctx), cg_i32(cg), cg_i64(cg)};
}

/* Constants. */
static LLVMValueRef kf(Fm *m, float v) { return LLVMConstReal(m->f32, v); }
static LLVMValueRef kd(Fm *m, double v) { return LLVMConstReal(m->f64, v); }
static LLVMValueRef ki(Fm *m, int32_t v) {
  return LLVMConstInt(m->i32, (uint64_t)(int64_t)v, true);
}

/* Arithmetic. */
static LLVMValueRef fadd(Fm *m, LLVMValueRef a, LLVMValueRef b) {
  return LLVMBuildFAdd(m->b, a, b, "");
}
static LLVMValueRef fsub(Fm *m, LLVMValueRef a, LLVMValueRef b) {
  return LLVMBuildFSub(m->b, a, b, "");
}
static LLVMValueRef fmul(Fm *m, LLVMValueRef a, LLVMValueRef b) {
  return LLVMBuildFMul(m->b, a, b, "");
}
static LLVMValueRef fdiv(Fm *m, LLVMValueRef a, LLVMValueRef b) {
  return LLVMBuildFDiv(m->b, a, b, "");
}

static LLVMValueRef intrinsic(Fm *m, const char *base, int n,
                              LLVMValueRef const *args) {
  LLVMTypeRef t = LLVMTypeOf(args[0]);
  char name[48];
  snprintf(name, sizeof name, "llvm.%s.%s", base, t == m->f64 ? "f64" : "f32");
  LLVMTypeRef tys[3] = {t, t, t};
  return cg_call_named(m->cg, name, t, n, tys, args);
}

/* a*b + c, fused or not as the target likes (llvm.fmuladd): every bound
 * in the header holds both ways. */
static LLVMValueRef mad(Fm *m, LLVMValueRef a, LLVMValueRef b, LLVMValueRef c) {
  LLVMValueRef args[3] = {a, b, c};
  return intrinsic(m, "fmuladd", 3, args);
}

static LLVMValueRef fabs_(Fm *m, LLVMValueRef x) { return intrinsic(m, "fabs", 1, &x); }

static LLVMValueRef copysign_(Fm *m, LLVMValueRef mag, LLVMValueRef sign) {
  LLVMValueRef args[2] = {mag, sign};
  return intrinsic(m, "copysign", 2, args);
}

/* Selects on a float compare.  The ordered compares are false for NaN, so
 * min_/max_ let a NaN x through. */
static LLVMValueRef cmp(Fm *m, LLVMRealPredicate p, LLVMValueRef a, LLVMValueRef b) {
  return LLVMBuildFCmp(m->b, p, a, b, "");
}
static LLVMValueRef sel(Fm *m, LLVMValueRef c, LLVMValueRef a, LLVMValueRef b) {
  return LLVMBuildSelect(m->b, c, a, b, "");
}
static LLVMValueRef min_(Fm *m, LLVMValueRef x, LLVMValueRef hi) {
  return sel(m, cmp(m, LLVMRealOGT, x, hi), hi, x);
}
static LLVMValueRef max_(Fm *m, LLVMValueRef x, LLVMValueRef lo) {
  return sel(m, cmp(m, LLVMRealOLT, x, lo), lo, x);
}

/* Bit casts and integer operations on i32. */
static LLVMValueRef as_int(Fm *m, LLVMValueRef f) {
  return LLVMBuildBitCast(m->b, f, LLVMTypeOf(f) == m->f64 ? m->i64 : m->i32, "");
}
static LLVMValueRef as_float(Fm *m, LLVMValueRef i) {
  return LLVMBuildBitCast(m->b, i, m->f32, "");
}
static LLVMValueRef iadd(Fm *m, LLVMValueRef a, LLVMValueRef b) {
  return LLVMBuildAdd(m->b, a, b, "");
}

/* c[0] + x*(c[1] + x*(... + x*c[n-1])), in x's type. */
static LLVMValueRef horner(Fm *m, LLVMValueRef x, const double *c, int n) {
  LLVMTypeRef t = LLVMTypeOf(x);
  LLVMValueRef p = LLVMConstReal(t, c[n - 1]);
  for (int k = n - 2; k >= 0; k--)
    p = mad(m, p, x, LLVMConstReal(t, c[k]));
  return p;
}

/* 2^n as an f32 for an i32 n in [-126, 127]. */
static LLVMValueRef pow2i(Fm *m, LLVMValueRef n) {
  LLVMValueRef e = iadd(m, n, ki(m, 127));
  return as_float(m, LLVMBuildShl(m->b, e, ki(m, 23), ""));
}

/*
 * exp and expm1: x = n*ln2 + r with |r| <= ln2/2 (Cody-Waite: ln2 split
 * into a 16-bit head, so n*LN2_HI is exact for |n| < 2^8, and a tail), and
 * expm1(r) = r + r^2*P(r).  n = round(x/ln2) comes from adding 1.5*2^23:
 * the sum's low mantissa bits are n as an integer.
 */
static const float SHIFT_F = 0x1.8p23f;
static const float LOG2E_F = 0x1.715476p0f;
static const float LN2_HI = 0x1.62e4p-1f;   /* 16 significant bits */
static const float LN2_LO = 0x1.7f7d1cp-20f; /* ln2 - LN2_HI */

/* P(r) of expm1(r) = r + r^2 P(r), |r| <= 0.3467: relative error 3e-9 of
 * exp(r), 1.3e-8 of expm1(r). */
static const double EXP_P[] = {0x1.fffffcp-2, 0x1.555492p-3, 0x1.5558f2p-5,
                               0x1.123a0cp-7, 0x1.6a23e8p-10};
static const double EXPM1_P[] = {0x1p-1, 0x1.5554b0p-3, 0x1.555486p-5,
                                 0x1.122824p-7, 0x1.6d9936p-10};

/* r and n (i32) of x (|x| <= 150*ln2). */
static LLVMValueRef exp_reduce(Fm *m, LLVMValueRef x, LLVMValueRef *n) {
  LLVMValueRef t = mad(m, x, kf(m, LOG2E_F), kf(m, SHIFT_F));
  LLVMValueRef nf = fsub(m, t, kf(m, SHIFT_F));
  LLVMValueRef r = mad(m, nf, kf(m, -LN2_HI), x);
  r = mad(m, nf, kf(m, -LN2_LO), r);
  *n = LLVMBuildSub(m->b, as_int(m, t), as_int(m, kf(m, SHIFT_F)), "");
  return r;
}

/* expm1(r) = r + r^2 P(r) for the reduced argument. */
static LLVMValueRef expm1_poly(Fm *m, LLVMValueRef r, const double *p, int np) {
  return mad(m, fmul(m, r, r), horner(m, r, p, np), r);
}

/* exp(x) for x <= 0 or any x: x is clamped to [-104, 88.8] (exp(-104) is
 * below half the smallest subnormal, exp(88.8) above FLT_MAX), and 2^n is
 * applied as two factors 2^(n/2) so that n in [-150, 128] needs no special
 * case: overflow gives +inf and small results round once into
 * subnormals. */
static LLVMValueRef fast_exp(Fm *m, LLVMValueRef x) {
  LLVMValueRef xc = max_(m, min_(m, x, kf(m, 88.8f)), kf(m, -104.0f));
  LLVMValueRef n;
  LLVMValueRef r = exp_reduce(m, xc, &n);
  LLVMValueRef p = fadd(m, kf(m, 1.0f), expm1_poly(m, r, EXP_P, ARRAY_LEN(EXP_P)));
  LLVMValueRef h = LLVMBuildAShr(m->b, n, ki(m, 1), "");
  LLVMValueRef l = LLVMBuildSub(m->b, n, h, "");
  return fmul(m, fmul(m, p, pow2i(m, h)), pow2i(m, l));
}

/* expm1 of x already in [-30, 88.8] (n in [-44, 128]): 2^n - 1 + 2^n q as
 * 2*((s - 1/2) + s*q) with s = 2^(n-1), exact but for the one rounding of
 * the sum.  For n = 0 that is q itself. */
static LLVMValueRef expm1_core(Fm *m, LLVMValueRef xc) {
  LLVMValueRef n;
  LLVMValueRef r = exp_reduce(m, xc, &n);
  LLVMValueRef q = expm1_poly(m, r, EXPM1_P, ARRAY_LEN(EXPM1_P));
  LLVMValueRef s = pow2i(m, iadd(m, n, ki(m, -1)));
  LLVMValueRef v = mad(m, s, q, fsub(m, s, kf(m, 0.5f)));
  return fmul(m, v, kf(m, 2.0f));
}

/* expm1(x): |x| < 2^-25 returns x (subnormals, -0); below -30 it is -1. */
static LLVMValueRef fast_expm1(Fm *m, LLVMValueRef x) {
  LLVMValueRef xc = max_(m, min_(m, x, kf(m, 88.8f)), kf(m, -30.0f));
  LLVMValueRef v = expm1_core(m, xc);
  return sel(m, cmp(m, LLVMRealOLT, fabs_(m, x), kf(m, 0x1p-25f)), x, v);
}

/*
 * log and log1p: u = 2^e * mm with mm in [sqrt(1/2), sqrt(2)), f = mm - 1,
 * s = f/(2+f), log(1+f) = 2 atanh(s) = f - s*(f - z*T(z)) with z = s^2,
 * and log(u) = e*LN2_HI + (f - (s*(f - zT) - e*LN2_LO - c)) where c is
 * log1p's correction for the rounding of 1 + x.
 */
/* T(z) = (2 atanh(s) - 2s) / (s z), z <= 0.0295: error 8e-10 of log1p. */
static const double LOG_T[] = {0x1.55557ap-1, 0x1.995eb4p-2, 0x1.31e3acp-2};

/* log(u) + c/u for u > 0 normal (other u give garbage; the callers select
 * the special values); e_bias is added to the exponent (log's subnormal
 * scaling). */
static LLVMValueRef log_core(Fm *m, LLVMValueRef u, LLVMValueRef e_bias,
                             LLVMValueRef c) {
  LLVMBuilderRef b = m->b;
  LLVMValueRef sqrt_half = ki(m, 0x3f3504f3);
  LLVMValueRef ix = LLVMBuildSub(b, as_int(m, u), sqrt_half, "");
  LLVMValueRef e = LLVMBuildAShr(b, ix, ki(m, 23), "");
  LLVMValueRef mm = as_float(m, iadd(m, LLVMBuildAnd(b, ix, ki(m, 0x7fffff), ""),
                                     sqrt_half));
  LLVMValueRef f = fsub(m, mm, kf(m, 1.0f));
  LLVMValueRef s = fdiv(m, f, fadd(m, kf(m, 2.0f), f));
  LLVMValueRef z = fmul(m, s, s);
  LLVMValueRef zt = fmul(m, z, horner(m, z, LOG_T, ARRAY_LEN(LOG_T)));
  LLVMValueRef ef = LLVMBuildSIToFP(b, e, m->f32, "");
  if (e_bias)
    ef = fadd(m, ef, e_bias);
  LLVMValueRef lo;
  if (c) {
    /* c/u = c * 2^-e / mm, and 1/mm = (1-s)/(1+s) ~ 1 - 2s + 2s^2: c is
     * at most half an ulp of u, so that is plenty. */
    LLVMValueRef inv = mad(m, fadd(m, s, s), fsub(m, s, kf(m, 1.0f)), kf(m, 1.0f));
    LLVMValueRef ec = LLVMBuildSelect(b, LLVMBuildICmp(b, LLVMIntSGT, e, ki(m, 100), ""),
                                      ki(m, 100), e, "");
    LLVMValueRef scale = pow2i(m, LLVMBuildNeg(b, ec, ""));
    lo = mad(m, ef, kf(m, LN2_LO), fmul(m, fmul(m, c, inv), scale));
  } else {
    lo = fmul(m, ef, kf(m, LN2_LO));
  }
  LLVMValueRef tail = fsub(m, fmul(m, s, fsub(m, f, zt)), lo);
  return mad(m, ef, kf(m, LN2_HI), fsub(m, f, tail));
}

/* log(x): subnormal x are scaled by 2^23 first. */
static LLVMValueRef fast_log(Fm *m, LLVMValueRef x) {
  LLVMValueRef den = cmp(m, LLVMRealOLT, x, kf(m, 0x1p-126f));
  LLVMValueRef xs = sel(m, den, fmul(m, x, kf(m, 0x1p23f)), x);
  LLVMValueRef v = log_core(m, xs, sel(m, den, kf(m, -23.0f), kf(m, 0.0f)), NULL);
  LLVMValueRef special = sel(m, cmp(m, LLVMRealOEQ, x, kf(m, 0.0f)),
                             kf(m, -__builtin_inff()), kf(m, __builtin_nanf("")));
  v = sel(m, cmp(m, LLVMRealULE, x, kf(m, 0.0f)), special, v);
  return sel(m, cmp(m, LLVMRealOEQ, x, kf(m, __builtin_inff())), x, v);
}

/* log1p(x) = log(u) + c/u with u = 1 + x and c = x - (u - 1), the
 * rounding error of u (exact for u < 2^24; c/u is negligible above). */
static LLVMValueRef fast_log1p(Fm *m, LLVMValueRef x) {
  LLVMValueRef u = fadd(m, kf(m, 1.0f), x);
  LLVMValueRef c = fsub(m, x, fsub(m, u, kf(m, 1.0f)));
  LLVMValueRef v = log_core(m, u, NULL, c);
  LLVMValueRef special = sel(m, cmp(m, LLVMRealOEQ, u, kf(m, 0.0f)),
                             kf(m, -__builtin_inff()), kf(m, __builtin_nanf("")));
  v = sel(m, cmp(m, LLVMRealULE, u, kf(m, 0.0f)), special, v);
  v = sel(m, cmp(m, LLVMRealOEQ, x, kf(m, __builtin_inff())), x, v);
  return sel(m, cmp(m, LLVMRealOEQ, x, kf(m, 0.0f)), x, v);
}

/* tanh(|x|) = t/(t+2) with t = expm1(2|x|), |x| clamped to 9 (tanh(9)
 * rounds to 1); the sign is copied back. */
static LLVMValueRef fast_tanh(Fm *m, LLVMValueRef x) {
  LLVMValueRef a = min_(m, fabs_(m, x), kf(m, 9.0f));
  LLVMValueRef a2 = fadd(m, a, a);
  LLVMValueRef t = expm1_core(m, a2);
  t = sel(m, cmp(m, LLVMRealOLT, a, kf(m, 0x1p-25f)), a2, t);
  return copysign_(m, fdiv(m, t, fadd(m, t, kf(m, 2.0f))), x);
}

/* logistic(x) = 1/(1+e) for x >= 0 and e/(1+e) for x < 0, e = exp(-|x|):
 * never overflows, and tiny results keep their accuracy. */
static LLVMValueRef fast_logistic(Fm *m, LLVMValueRef x) {
  LLVMValueRef e = fast_exp(m, LLVMBuildFNeg(m->b, fabs_(m, x), ""));
  LLVMValueRef num = sel(m, cmp(m, LLVMRealOLT, x, kf(m, 0.0f)), e, kf(m, 1.0f));
  return fdiv(m, num, fadd(m, kf(m, 1.0f), e));
}

/*
 * erf(x) = x P(x^2) / Q(x^2) on |x| <= 4 (erf(4) rounds to 1), evaluated in
 * double: in f32 the rounding of the two sums alone costs ~5 ulps near 1.
 * Fitted with relative weight: 2e-9.
 */
static const double ERF_P[] = {
  0x1.20dd750de1e8bp+0, 0x1.7b4c2cb15fb13p-3, 0x1.bcf6dd9d689e1p-5,
  0x1.f8942dd901eadp-9, 0x1.8e0bdd35295e5p-12, 0x1.3a627dbe0e489p-18,
  -0x1.c59cc40fee64ap-27,
};
static const double ERF_Q[] = {
  0x1p+0, 0x1.fd67bfbd0ee6dp-2, 0x1.d2c6496d9bca4p-4, 0x1.faa9a80355acbp-7,
  0x1.56c598b454985p-10, 0x1.08b3ab954cfb9p-14,
};

static LLVMValueRef fast_erf(Fm *m, LLVMValueRef x) {
  LLVMValueRef a = min_(m, fabs_(m, x), kf(m, 4.0f));
  LLVMValueRef ad = LLVMBuildFPExt(m->b, a, m->f64, "");
  LLVMValueRef u = fmul(m, ad, ad);
  LLVMValueRef p = horner(m, u, ERF_P, ARRAY_LEN(ERF_P));
  LLVMValueRef q = horner(m, u, ERF_Q, ARRAY_LEN(ERF_Q));
  LLVMValueRef r = LLVMBuildFPTrunc(m->b, fdiv(m, fmul(m, ad, p), q), m->f32, "");
  return copysign_(m, min_(m, r, kf(m, 1.0f)), x);
}

/*
 * sin and cos: x = n*pi/2 + r in double, pi/2 split into a 32-bit head (so
 * n*PIO2_1 is exact for |n| < 2^21) and a 53-bit tail, 85 bits in all; r
 * rounded to f32, then sin(r) = r + r^3 S(r^2) or cos(r) = 1 - r^2/2 +
 * r^4 C(r^2) by the quadrant n mod 4 (n+1 for cos).  r is clamped to
 * [-0.786, 0.786] so that arguments too big for the reduction still give
 * values in [-1, 1]; inf and NaN give NaN.
 */
static const double SHIFT_D = 0x1.8p52;
static const double TWO_OVER_PI = 0x1.45f306dc9c883p-1;
static const double PIO2_1 = 0x1.921fb544p0;
static const double PIO2_2 = 0x1.0b4611a626331p-34;
/* |r| <= pi/4: relative errors 3.8e-9 (sin), 1.2e-10 (cos). */
static const double SIN_S[] = {-0x1.555546p-3, 0x1.110730p-7, -0x1.99405ep-13};
static const double COS_C[] = {0x1.55554ap-5, -0x1.6c0c28p-10, 0x1.99e866p-16};

static LLVMValueRef fast_sincos(Fm *m, LLVMValueRef x, bool is_cos) {
  LLVMBuilderRef b = m->b;
  LLVMValueRef xd = LLVMBuildFPExt(b, x, m->f64, "");
  LLVMValueRef t = mad(m, xd, kd(m, TWO_OVER_PI), kd(m, SHIFT_D));
  LLVMValueRef nd = fsub(m, t, kd(m, SHIFT_D));
  LLVMValueRef rd = mad(m, nd, kd(m, -PIO2_1), xd);
  rd = mad(m, nd, kd(m, -PIO2_2), rd);
  LLVMValueRef r = LLVMBuildFPTrunc(b, rd, m->f32, "");
  r = max_(m, min_(m, r, kf(m, 0.786f)), kf(m, -0.786f));
  LLVMValueRef q = LLVMBuildTrunc(b, as_int(m, t), m->i32, "");
  if (is_cos)
    q = iadd(m, q, ki(m, 1));
  LLVMValueRef z = fmul(m, r, r);
  LLVMValueRef s = mad(m, fmul(m, r, z), horner(m, z, SIN_S, ARRAY_LEN(SIN_S)), r);
  LLVMValueRef c = mad(m, fmul(m, z, z), horner(m, z, COS_C, ARRAY_LEN(COS_C)),
                       mad(m, z, kf(m, -0.5f), kf(m, 1.0f)));
  LLVMValueRef odd = LLVMBuildTrunc(b, q, LLVMInt1TypeInContext(m->cg->ctx), "");
  LLVMValueRef v = sel(m, odd, c, s);
  LLVMValueRef flip = LLVMBuildShl(b, LLVMBuildAnd(b, q, ki(m, 2), ""), ki(m, 30), "");
  v = as_float(m, LLVMBuildXor(b, as_int(m, v), flip, ""));
  if (is_cos)
    return v;
  /* r + r^3 S gives +0 for r = -0 (S < 0). */
  return sel(m, cmp(m, LLVMRealOEQ, x, kf(m, 0.0f)), x, v);
}

LLVMValueRef cg_fast_math(Codegen *cg, HloOp op, LLVMValueRef x) {
  Fm m = fm_new(cg);
  switch (op) {
  case HLO_EXP: return fast_exp(&m, x);
  case HLO_EXPM1: return fast_expm1(&m, x);
  case HLO_LOG: return fast_log(&m, x);
  case HLO_LOG1P: return fast_log1p(&m, x);
  case HLO_TANH: return fast_tanh(&m, x);
  case HLO_LOGISTIC: return fast_logistic(&m, x);
  case HLO_ERF: return fast_erf(&m, x);
  case HLO_SIN: return fast_sincos(&m, x, false);
  case HLO_COS: return fast_sincos(&m, x, true);
  default: return NULL;
  }
}
