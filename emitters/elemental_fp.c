/*
 * elemental_fp.c - float operations of the elemental emitter done on the
 * bits: stochastic-convert (lib/eval's rounding with random bits),
 * reduce-precision (lib/support/fp_reduce.c's algorithm, in the
 * operand's own format; bf16 NaNs quieted as lib/eval does), and decoding and encoding of the floats without an
 * LLVM type (the f8 types and f4e2m1fn, held as iN encodings; see
 * cg_et_is_bitfloat) with fp.c's semantics, which are ml_dtypes' and
 * XLA's:
 *
 *  - decoding is a lookup in a table of the 2^N values as f32, built from
 *    fp_to_double (every such value is an f32);
 *  - encoding takes a double (an f32 widens exactly) and rounds to nearest
 *    even in one step, subnormals included, exactly as fp.c's encode: the
 *    quantum is 2^(max(e, emin) - mbits); a magnitude past the largest
 *    finite encoding and infinities give the format's overflow encoding,
 *    NaN and zero theirs (all taken from fp_from_double, so signed NaNs,
 *    unsigned fnuz zero and f8e8m0fnu's missing sign follow fp.c).
 */
#include <math.h>
#include <string.h>

#include "cg_internal.h"

static LLVMValueRef ci(LLVMTypeRef t, uint64_t v) {
  return LLVMConstInt(t, v, false);
}

static uint64_t mask_of(int w) {
  return w >= 64 ? UINT64_MAX : ((uint64_t)1 << w) - 1;
}

LLVMValueRef cg_emit_reduce_precision(Codegen *cg, ElemType et, LLVMValueRef v,
                                      int dst_e, int dst_m) {
  LLVMBuilderRef b = cg->b;
  int total = et_bits(et), src_e, src_m;
  fp_widths(et_fp_format(et), &src_e, &src_m);
  LLVMTypeRef it = LLVMIntTypeInContext(cg->ctx, (unsigned)total);
  LLVMValueRef x = cg_et_is_bitfloat(et) ? v : LLVMBuildBitCast(b, v, it, "");
  LLVMValueRef orig = x;
  uint64_t sign = (uint64_t)1 << (total - 1);
  uint64_t exp_mask = mask_of(src_e) << src_m;
  LLVMValueRef mag = LLVMBuildAnd(b, x, ci(it, ~sign & mask_of(total)), "");
  LLVMValueRef is_nan = LLVMBuildICmp(b, LLVMIntUGT, mag, ci(it, exp_mask), "");
  if (dst_m < src_m) {
    int drop = src_m - dst_m;
    uint64_t last = (uint64_t)1 << drop;
    LLVMValueRef lastbit = LLVMBuildLShr(b, LLVMBuildAnd(b, x, ci(it, last), ""),
                                         ci(it, (uint64_t)drop), "");
    LLVMValueRef bias = LLVMBuildAdd(b, lastbit, ci(it, (last >> 1) - 1), "");
    x = LLVMBuildAdd(b, x, bias, "");
    x = LLVMBuildAnd(b, x, ci(it, ~(last - 1) & mask_of(total)), "");
  }
  if (dst_e < src_e) {
    uint64_t bb = mask_of(src_e - 1), rb = mask_of(dst_e - 1);
    LLVMValueRef xe = LLVMBuildAnd(b, x, ci(it, exp_mask), "");
    LLVMValueRef zero = LLVMBuildAnd(b, x, ci(it, sign), "");
    LLVMValueRef inf = LLVMBuildOr(b, zero, ci(it, exp_mask), "");
    LLVMValueRef over = LLVMBuildICmp(b, LLVMIntUGT, xe, ci(it, (bb + rb) << src_m), "");
    LLVMValueRef under = LLVMBuildICmp(b, LLVMIntULE, xe, ci(it, (bb - rb) << src_m), "");
    x = LLVMBuildSelect(b, over, inf, x, "");
    x = LLVMBuildSelect(b, under, zero, x, "");
  }
  LLVMValueRef nan = orig;
  if (et == ET_BF16)      /* quiet, payload dropped (fp_reduce.c) */
    nan = LLVMBuildOr(b, LLVMBuildAnd(b, orig, ci(it, 0x8000), ""), ci(it, 0x7fc0), "");
  x = LLVMBuildSelect(b, is_nan, nan, x, "");
  return cg_et_is_bitfloat(et) ? x : LLVMBuildBitCast(b, x, cg_reg_type(cg, et), "");
}

/* The module's table of the 2^N values of a bitfloat type as f32. */
static LLVMValueRef decode_table(Codegen *cg, ElemType et, int *n_out) {
  char name[64];
  snprintf(name, sizeof name, "xhlo.decode.%s", et_name(et));
  int n = 1 << et_bits(et);
  *n_out = n;
  LLVMValueRef g = LLVMGetNamedGlobal(cg->mod, name);
  if (g)
    return g;
  LLVMTypeRef f32 = LLVMFloatTypeInContext(cg->ctx);
  LLVMValueRef vals[256];
  for (int k = 0; k < n; k++)
    vals[k] = LLVMConstReal(f32, (double)(float)fp_to_double(et_fp_format(et),
                                                              (uint64_t)k));
  LLVMValueRef init = LLVMConstArray2(f32, vals, (uint64_t)n);
  g = LLVMAddGlobalInAddressSpace(cg->mod, LLVMTypeOf(init), name,
                                  cg->is_gpu ? CG_AS_GLOBAL : 0);
  LLVMSetInitializer(g, init);
  LLVMSetGlobalConstant(g, true);
  LLVMSetLinkage(g, LLVMPrivateLinkage);
  LLVMSetUnnamedAddr(g, true);
  LLVMSetAlignment(g, 16);
  return g;
}

LLVMValueRef cg_bitfloat_to_f32(Codegen *cg, ElemType et, LLVMValueRef v) {
  int n;
  LLVMValueRef g = decode_table(cg, et, &n);
  LLVMTypeRef f32 = LLVMFloatTypeInContext(cg->ctx);
  LLVMValueRef idx[2] = {cg_const_i64(cg, 0), LLVMBuildZExt(cg->b, v, cg_i64(cg), "")};
  LLVMValueRef p = LLVMBuildInBoundsGEP2(cg->b, LLVMArrayType2(f32, (uint64_t)n), g,
                                         idx, 2, "");
  LLVMValueRef r = LLVMBuildLoad2(cg->b, f32, p, "");
  LLVMSetAlignment(r, 4);
  return r;
}

/* The largest finite positive encoding of f (of `nbits` bits). */
static uint64_t max_finite(FpFormat f, int nbits) {
  uint64_t best = 0;
  double bv = -1;
  for (uint64_t k = 0; k < ((uint64_t)1 << nbits); k++) {
    double d = fp_to_double(f, k);
    if (d == d && d > bv && d != __builtin_inf()) {
      bv = d;
      best = k;
    }
  }
  return best;
}

LLVMValueRef cg_bitfloat_from_double(Codegen *cg, ElemType et, LLVMValueRef x) {
  LLVMBuilderRef b = cg->b;
  FpFormat f = et_fp_format(et);
  int nbits = et_bits(et), ebits, mbits;
  fp_widths(f, &ebits, &mbits);
  /* bias from the encoding of 1.0: biased exponent field of 1.0 */
  int bias = (int)(fp_from_double(f, 1.0) >> mbits) & (int)mask_of(ebits);
  int emin = 1 - bias;
  bool e8m0 = f == FP_F8E8M0FNU;
  LLVMTypeRef i64 = cg_i64(cg), rt = cg_reg_type(cg, et);
  if (LLVMTypeOf(x) != LLVMDoubleTypeInContext(cg->ctx))
    x = LLVMBuildFPExt(b, x, LLVMDoubleTypeInContext(cg->ctx), "");
  LLVMValueRef u = LLVMBuildBitCast(b, x, i64, "");
  LLVMValueRef neg = LLVMBuildICmp(b, LLVMIntSLT, u, ci(i64, 0), "");
  LLVMValueRef absu = LLVMBuildAnd(b, u, ci(i64, mask_of(63)), "");
  LLVMValueRef E = LLVMBuildLShr(b, absu, ci(i64, 52), "");
  LLVMValueRef m53 = LLVMBuildOr(b, LLVMBuildAnd(b, absu, ci(i64, mask_of(52)), ""),
                                 ci(i64, (uint64_t)1 << 52), "");
  LLVMValueRef e2 = LLVMBuildSub(b, E, ci(i64, 1023), "");
  LLVMValueRef ge_min = LLVMBuildICmp(b, LLVMIntSGE, e2, cg_const_i64(cg, emin), "");
  LLVMValueRef qe = LLVMBuildSelect(b, ge_min, e2, cg_const_i64(cg, emin), "");
  /* shift = qe - mbits - (e2 - 52) */
  LLVMValueRef shift = LLVMBuildSub(b, LLVMBuildAdd(b, qe, cg_const_i64(cg, 52 - mbits), ""),
                                    e2, "");
  LLVMValueRef tiny = LLVMBuildOr(b, LLVMBuildICmp(b, LLVMIntEQ, E, ci(i64, 0), ""),
                                  LLVMBuildICmp(b, LLVMIntSGE, shift, ci(i64, 54), ""), "");
  LLVMValueRef sh = LLVMBuildSelect(b, tiny, ci(i64, 53), shift, "");
  LLVMValueRef n = LLVMBuildLShr(b, m53, sh, "");
  LLVMValueRef rem = LLVMBuildAnd(b, m53, LLVMBuildSub(b, LLVMBuildShl(b, ci(i64, 1), sh, ""),
                                                       ci(i64, 1), ""), "");
  LLVMValueRef half = LLVMBuildShl(b, ci(i64, 1), LLVMBuildSub(b, sh, ci(i64, 1), ""), "");
  LLVMValueRef odd = LLVMBuildICmp(b, LLVMIntNE, LLVMBuildAnd(b, n, ci(i64, 1), ""),
                                   ci(i64, 0), "");
  LLVMValueRef up = LLVMBuildOr(b, LLVMBuildICmp(b, LLVMIntUGT, rem, half, ""),
                                LLVMBuildAnd(b, LLVMBuildICmp(b, LLVMIntEQ, rem, half, ""),
                                             odd, ""), "");
  n = LLVMBuildAdd(b, n, LLVMBuildZExt(b, up, i64, ""), "");
  n = LLVMBuildSelect(b, tiny, ci(i64, 0), n, "");
  LLVMValueRef nexp = LLVMBuildShl(b, LLVMBuildAdd(b, e2, cg_const_i64(cg, bias - 1), ""),
                                   ci(i64, (uint64_t)mbits), "");
  LLVMValueRef enc = LLVMBuildSelect(b, ge_min, LLVMBuildAdd(b, nexp, n, ""), n, "");
  /* far beyond the largest: e2 + bias > 2^ebits; or past the largest finite */
  LLVMValueRef over = LLVMBuildOr(
      b, LLVMBuildICmp(b, LLVMIntSGT, e2, cg_const_i64(cg, (1 << ebits) - bias), ""),
      LLVMBuildICmp(b, LLVMIntUGT, enc, ci(i64, max_finite(f, nbits)), ""), "");
  /* the result, as i64, then the special cases */
  LLVMValueRef sbit = ci(i64, e8m0 ? 0 : (uint64_t)1 << (nbits - 1));
  LLVMValueRef signed_enc = LLVMBuildSelect(b, neg, LLVMBuildOr(b, enc, sbit, ""), enc, "");
  LLVMValueRef zero_neg = ci(i64, fp_from_double(f, -0.0));
  LLVMValueRef r = LLVMBuildSelect(
      b, LLVMBuildICmp(b, LLVMIntEQ, enc, ci(i64, 0), ""),
      LLVMBuildSelect(b, neg, zero_neg, ci(i64, 0), ""), signed_enc, "");
  LLVMValueRef ovf = LLVMBuildSelect(b, neg, ci(i64, fp_from_double(f, -__builtin_inf())),
                                     ci(i64, fp_from_double(f, __builtin_inf())), "");
  r = LLVMBuildSelect(b, over, ovf, r, "");
  if (e8m0)
    r = LLVMBuildSelect(b, neg, ci(i64, fp_from_double(f, -1.0)), r, "");
  LLVMValueRef zero = LLVMBuildSelect(b, neg, zero_neg, ci(i64, fp_from_double(f, 0.0)), "");
  r = LLVMBuildSelect(b, LLVMBuildICmp(b, LLVMIntEQ, absu, ci(i64, 0), ""), zero, r, "");
  LLVMValueRef nan = LLVMBuildSelect(b, neg, ci(i64, fp_from_double(f, -__builtin_nan(""))),
                                     ci(i64, fp_from_double(f, __builtin_nan(""))), "");
  LLVMValueRef is_nan = LLVMBuildICmp(b, LLVMIntUGT, absu, ci(i64, 0x7ff0000000000000ull), "");
  r = LLVMBuildSelect(b, is_nan, nan, r, "");
  return LLVMBuildTrunc(b, r, rt, "");
}

/* stochastic-convert of float x with same-width unsigned random bits r to
 * the integer type of i, as lib/eval computes it (XLA's elemental
 * emitter): infinities saturate by sign, NaN is 0, values past the type's
 * range clamp; otherwise |x| truncated, plus one when r is below the
 * fraction scaled to r's width, the sign put back. */
LLVMValueRef cg_emit_stochastic_convert(Codegen *cg, const HloInstr *i, LLVMValueRef x,
                                        LLVMValueRef r, Diag *d) {
  LLVMBuilderRef b = cg->b;
  ElemType ft = i->ops[0]->shape->et, rt = i->ops[1]->shape->et, ot = i->shape->et;
  if (!et_is_float(ft) || cg_et_is_bitfloat(ft) || !et_is_unsigned_int(rt) ||
      et_bits(rt) != et_bits(ft) || !et_is_int(ot))
    return diag_error(d, i->loc,
                      "codegen: stochastic-convert '%s' of %s with %s bits to %s is not "
                      "supported",
                      i->name ? i->name : "?", et_name(ft), et_name(rt), et_name(ot)),
           NULL;
  int bits = et_bits(ot), rbits = et_bits(rt);
  bool sg = et_is_signed_int(ot);
  int64_t lo = sg ? (bits >= 64 ? INT64_MIN : -((int64_t)1 << (bits - 1))) : 0;
  int64_t hi = sg ? (bits >= 64 ? INT64_MAX : ((int64_t)1 << (bits - 1)) - 1)
                  : (bits >= 63 ? INT64_MAX : ((int64_t)1 << bits) - 1);
  LLVMTypeRef f64 = LLVMDoubleTypeInContext(cg->ctx), i64 = cg_i64(cg);
  LLVMValueRef xd = ft == ET_F64 ? x : LLVMBuildFPExt(b, x, f64, "");
  LLVMValueRef neg = LLVMBuildICmp(b, LLVMIntSLT, LLVMBuildBitCast(b, xd, i64, ""),
                                   ci(i64, 0), "");
  LLVMValueRef m = cg_call_named(cg, "llvm.fabs.f64", f64, 1, &f64, &xd);
  LLVMValueRef isinf = LLVMBuildFCmp(b, LLVMRealOEQ, m, LLVMConstReal(f64, INFINITY), "");
  LLVMValueRef isnan = LLVMBuildFCmp(b, LLVMRealUNO, xd, xd, "");
  LLVMValueRef ge_hi = LLVMBuildFCmp(b, LLVMRealOGE, xd, LLVMConstReal(f64, (double)hi), "");
  LLVMValueRef le_lo = LLVMBuildFCmp(b, LLVMRealOLE, xd, LLVMConstReal(f64, (double)lo), "");
  LLVMValueRef out = LLVMBuildOr(b, LLVMBuildOr(b, isinf, isnan, ""),
                                 LLVMBuildOr(b, ge_hi, le_lo, ""), "");
  /* in range: |x| < 2^63, so the conversions below are defined */
  LLVMValueRef ms = LLVMBuildSelect(b, out, LLVMConstReal(f64, 0), m, "");
  LLVMValueRef t = LLVMBuildFPToSI(b, ms, i64, "");
  LLVMValueRef frac = LLVMBuildFSub(b, ms, LLVMBuildSIToFP(b, t, f64, ""), "");
  LLVMValueRef fixed = LLVMBuildFPToUI(
      b, LLVMBuildFMul(b, frac, LLVMConstReal(f64, ldexp(1.0, rbits)), ""), i64, "");
  LLVMValueRef up = LLVMBuildICmp(b, LLVMIntULT, LLVMBuildZExt(b, r, i64, ""), fixed, "");
  LLVMValueRef at_hi = LLVMBuildICmp(b, LLVMIntEQ, t, ci(i64, (uint64_t)hi), "");
  LLVMValueRef t1 = LLVMBuildSelect(
      b, up, LLVMBuildSelect(b, at_hi, ci(i64, (uint64_t)lo), LLVMBuildAdd(b, t, ci(i64, 1), ""), ""),
      t, "");
  LLVMValueRef v = LLVMBuildSelect(b, neg, LLVMBuildNeg(b, t1, ""), t1, "");
  v = LLVMBuildSelect(b, le_lo, ci(i64, (uint64_t)lo), v, "");
  v = LLVMBuildSelect(b, ge_hi, ci(i64, (uint64_t)hi), v, "");
  v = LLVMBuildSelect(b, isnan, ci(i64, 0), v, "");
  v = LLVMBuildSelect(b, isinf,
                      LLVMBuildSelect(b, neg, ci(i64, (uint64_t)lo), ci(i64, (uint64_t)hi), ""),
                      v, "");
  return bits == 64 ? v : LLVMBuildTrunc(b, v, cg_reg_type(cg, ot), "");
}
