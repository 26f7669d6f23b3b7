/*
 * interval.c - closed integer intervals and the rounding integer helpers the
 * affine code shares.
 *
 * Interval bounds come from tensor shapes, so they are far from the int64
 * limits, but composed expressions multiply coefficients; every operation
 * here saturates instead of overflowing so that a range is never silently
 * wrong, only (at worst) wider than it could be.
 */
#include "affine.h"

int64_t i64_floordiv(int64_t a, int64_t b) {
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0)))
    q--;
  return q;
}

int64_t i64_ceildiv(int64_t a, int64_t b) {
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) == (b < 0)))
    q++;
  return q;
}

int64_t i64_mod(int64_t a, int64_t b) {
  int64_t r = a % b;
  return r < 0 ? r + b : r;
}

int64_t i64_gcd(int64_t a, int64_t b) {
  uint64_t x = a < 0 ? -(uint64_t)a : (uint64_t)a;
  uint64_t y = b < 0 ? -(uint64_t)b : (uint64_t)b;
  while (y) {
    uint64_t t = x % y;
    x = y;
    y = t;
  }
  return x > (uint64_t)INT64_MAX ? INT64_MAX : (int64_t)x;
}

int64_t i64_sat_add(int64_t a, int64_t b, bool *overflow) {
  int64_t r;
  if (!__builtin_add_overflow(a, b, &r))
    return r;
  if (overflow)
    *overflow = true;
  return a > 0 ? INT64_MAX : INT64_MIN;
}

int64_t i64_sat_mul(int64_t a, int64_t b, bool *overflow) {
  int64_t r;
  if (!__builtin_mul_overflow(a, b, &r))
    return r;
  if (overflow)
    *overflow = true;
  return ((a < 0) != (b < 0)) ? INT64_MIN : INT64_MAX;
}

bool interval_is_empty(Interval a) { return a.lo > a.hi; }
bool interval_is_point(Interval a) { return a.lo == a.hi; }
bool interval_contains(Interval a, int64_t v) { return a.lo <= v && v <= a.hi; }

bool interval_contains_interval(Interval outer, Interval inner) {
  return outer.lo <= inner.lo && inner.hi <= outer.hi;
}

Interval interval_intersect(Interval a, Interval b) {
  return interval(a.lo > b.lo ? a.lo : b.lo, a.hi < b.hi ? a.hi : b.hi);
}

Interval interval_union(Interval a, Interval b) {
  if (interval_is_empty(a))
    return b;
  if (interval_is_empty(b))
    return a;
  return interval(a.lo < b.lo ? a.lo : b.lo, a.hi > b.hi ? a.hi : b.hi);
}

Interval interval_add(Interval a, Interval b) {
  return interval(i64_sat_add(a.lo, b.lo, NULL), i64_sat_add(a.hi, b.hi, NULL));
}

Interval interval_scale(Interval a, int64_t k) {
  int64_t x = i64_sat_mul(a.lo, k, NULL), y = i64_sat_mul(a.hi, k, NULL);
  return k >= 0 ? interval(x, y) : interval(y, x);
}

Interval interval_floordiv(Interval a, int64_t d) {
  return interval(i64_floordiv(a.lo, d), i64_floordiv(a.hi, d));
}

Interval interval_ceildiv(Interval a, int64_t d) {
  return interval(i64_ceildiv(a.lo, d), i64_ceildiv(a.hi, d));
}

Interval interval_mod(Interval a, int64_t d) {
  /* Within one period the mod is a shift of the interval; otherwise the
   * whole residue range can occur. */
  if (!interval_is_empty(a) && i64_floordiv(a.lo, d) == i64_floordiv(a.hi, d))
    return interval(i64_mod(a.lo, d), i64_mod(a.hi, d));
  return interval(0, d - 1);
}

void interval_print(StrBuf *b, Interval a) {
  sb_putc(b, '[');
  sb_put_i64(b, a.lo);
  sb_puts(b, ", ");
  sb_put_i64(b, a.hi);
  sb_putc(b, ']');
}
