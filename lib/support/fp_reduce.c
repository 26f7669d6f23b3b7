/*
 * fp_reduce.c - reduce-precision on the raw bits of a float, as XLA's
 * compiled code does it: in the operand's own format (f16 stays f16, an
 * f16 subnormal is rounded, not flushed, when the exponent is kept),
 * checked against XLA on the CPU through JAX.
 *
 *  - The mantissa, when narrowed, rounds to nearest even by adding half an
 *    ulp of the new width (minus one, plus the last kept bit) and masking;
 *    a carry may run into the exponent.
 *  - The exponent, when narrowed, sends values above the new range to a
 *    signed infinity (the exponent all ones) and values at or below the
 *    new minimum exponent (subnormals of the new format included) to a
 *    signed zero.
 *  - A NaN input gives itself back unchanged, payload included, even with
 *    no mantissa bits left (XLA 0.10's CPU code; older XLA documented +inf).
 *  - bf16, which XLA's CPU computes in f32, gives back a NaN as the quiet
 *    NaN of its sign (0x7fc0 / 0xffc0), as converting that f32 to bf16 does.
 */
#include "support.h"

static uint64_t low_mask(int w) {
  return w >= 64 ? UINT64_MAX : ((uint64_t)1 << w) - 1;
}

uint64_t fp_reduce_precision_bits(int total, int src_e, int src_m,
                                  uint64_t v, int dst_e, int dst_m) {
  uint64_t all = low_mask(total);
  uint64_t sign = (uint64_t)1 << (total - 1);
  uint64_t exp_mask = low_mask(src_e) << src_m;
  v &= all;
  bool is_nan = (v & ~sign & all) > exp_mask;
  uint64_t x = v;
  if (dst_m < src_m) {
    int drop = src_m - dst_m;
    uint64_t last = (uint64_t)1 << drop;
    uint64_t bias = (last >> 1) - 1 + ((x & last) >> drop);
    x = ((x + bias) & all) & ~(last - 1);
  }
  if (dst_e < src_e) {
    uint64_t b = low_mask(src_e - 1), rb = low_mask(dst_e - 1);
    uint64_t xe = x & exp_mask;
    uint64_t zero = x & sign;
    if (xe > (b + rb) << src_m)
      x = zero | exp_mask;
    else if (xe <= (b - rb) << src_m)
      x = zero;
  }
  if (is_nan)
    return v;
  return x;
}
