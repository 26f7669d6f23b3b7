/*
 * rng_philox.h - the computation rng-expander calls in place of an `rng`:
 * XLA's builder library (xla/hlo/builder/lib/prng.cc) spelled out as HLO:
 * Philox4x32-10 bits from (key, 128-bit counter state), then the uniform
 * float, uniform integer or Box-Muller normal distribution.
 */
#ifndef XHLOC_RNG_PHILOX_H
#define XHLOC_RNG_PHILOX_H

#include "../lib/hlo/ir_edit.h"

/* A new computation "rng(key: u64[], state: u64[2], a_or_mean, b_or_sigma)
 * -> shape" drawing `dist` over `shape` (f32/f64 for both distributions,
 * s32/u32/s64/u64 for uniform) with the operand shapes of the rng.  NULL
 * when the type is not one XLA's expansion supports. */
HloComp *rng_philox_comp(IrEdit *e, RngDist dist, const Shape *shape,
                         const Shape *a_shape, const Shape *b_shape);

#endif
