/*
 * combine.c - the reductions XLA's runtimes apply in all-reduce and
 * reduce-scatter (ReductionKind: sum, product, min, max; and/or of pred are
 * min/max) on raw element buffers, for the compiled collectives
 * (lib/runtime/collective_exec.c).  The interpreter folds any to_apply
 * computation instead (collective.c).
 *
 * One step acc = acc op x per element, rounded to the element type:
 * floats are combined in double and rounded once, which gives the bits of
 * the operation in the type itself (double holds the exact sum or product
 * of two f32 or smaller values, or rounds it innocuously); f64 in double;
 * integers in 64 bits, wrapping and then truncated to the type.  min and max
 * propagate NaN.  f32, f64, s32 and s64 have loops of their own in the type
 * (the same bits: IEEE operations round correctly either way), which the
 * compiler vectorizes: the collectives of a large model go through here.
 */
#include <math.h>

#include "evalp.h"

bool eval_combine_supported(ElemType et) {
  return et == ET_PRED || et_is_int(et) || et_is_float(et);
}

#define COMBINE_LOOP(T, NANQ)                                                  \
  do {                                                                         \
    T *restrict a = (T *)(void *)acc;                                          \
    const T *restrict b = (const T *)(const void *)x;                          \
    switch (op) {                                                              \
    case EVAL_COMBINE_SUM: for (int64_t k = 0; k < n; k++) a[k] = a[k] + b[k]; break; \
    case EVAL_COMBINE_PRODUCT: for (int64_t k = 0; k < n; k++) a[k] = a[k] * b[k]; break; \
    case EVAL_COMBINE_MIN:                                                     \
      for (int64_t k = 0; k < n; k++)                                          \
        a[k] = NANQ(a[k], b[k]) ? (T)NAN : a[k] < b[k] ? a[k] : b[k];          \
      break;                                                                   \
    default:                                                                   \
      for (int64_t k = 0; k < n; k++)                                          \
        a[k] = NANQ(a[k], b[k]) ? (T)NAN : a[k] > b[k] ? a[k] : b[k];          \
      break;                                                                   \
    }                                                                          \
  } while (0)
#define ANY_NAN(u, v) (isnan(u) || isnan(v))
#define NO_NAN(u, v) 0

/* Element types with a loop of their own; false for the others. */
static bool combine_fast(ElemType et, EvalCombine op, uint8_t *acc, const uint8_t *x,
                         int64_t n) {
  switch (et) {
  case ET_F32: COMBINE_LOOP(float, ANY_NAN); return true;
  case ET_F64: COMBINE_LOOP(double, ANY_NAN); return true;
  default: break;
  }
  /* integers wrap: in the unsigned type of their width */
  if (et == ET_S32 && (op == EVAL_COMBINE_SUM || op == EVAL_COMBINE_PRODUCT)) {
    COMBINE_LOOP(uint32_t, NO_NAN);
    return true;
  }
  if (et == ET_S64 && (op == EVAL_COMBINE_SUM || op == EVAL_COMBINE_PRODUCT)) {
    COMBINE_LOOP(uint64_t, NO_NAN);
    return true;
  }
  if (et == ET_S32) {
    COMBINE_LOOP(int32_t, NO_NAN);
    return true;
  }
  return false;
}

void eval_combine(ElemType et, EvalCombine op, uint8_t *acc, const uint8_t *x,
                  int64_t n) {
  if (combine_fast(et, op, acc, x, n)) return;
  int eb = et_bytes(et);
  for (int64_t k = 0; k < n; k++) {
    uint8_t *a = acc + k * eb;
    const uint8_t *b = x + k * eb;
    if (et_is_float(et)) {
      double u = ev_get_f64(et, a), v = ev_get_f64(et, b), r;
      switch (op) {
      case EVAL_COMBINE_SUM: r = u + v; break;
      case EVAL_COMBINE_PRODUCT: r = u * v; break;
      case EVAL_COMBINE_MIN: r = isnan(u) || isnan(v) ? NAN : u < v ? u : v; break;
      default: r = isnan(u) || isnan(v) ? NAN : u > v ? u : v; break;
      }
      ev_set_f64(et, a, r);
    } else if (et_is_unsigned_int(et) || et == ET_PRED) {
      uint64_t u = ev_get_u64(et, a), v = ev_get_u64(et, b), r;
      switch (op) {
      case EVAL_COMBINE_SUM: r = u + v; break;
      case EVAL_COMBINE_PRODUCT: r = u * v; break;
      case EVAL_COMBINE_MIN: r = u < v ? u : v; break;
      default: r = u > v ? u : v; break;
      }
      if (et == ET_PRED) r = r != 0;
      ev_set_s64(et, a, (int64_t)r);
    } else {
      int64_t u = ev_get_s64(et, a), v = ev_get_s64(et, b), r;
      switch (op) {
      case EVAL_COMBINE_SUM: r = (int64_t)((uint64_t)u + (uint64_t)v); break;
      case EVAL_COMBINE_PRODUCT: r = (int64_t)((uint64_t)u * (uint64_t)v); break;
      case EVAL_COMBINE_MIN: r = u < v ? u : v; break;
      default: r = u > v ? u : v; break;
      }
      ev_set_s64(et, a, r);
    }
  }
}
