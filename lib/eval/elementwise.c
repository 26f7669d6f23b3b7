/*
 * elementwise.c - every elementwise op, with XLA's semantics per element
 * type.
 *
 * Operands are loaded a chunk at a time into lanes (evalp.h): f32 and all
 * smaller floats compute in float, f64 in double, as XLA's evaluator does
 * (HloEvaluatorTypedVisitor<bfloat16, float> and friends), so a bf16 add is a
 * float add rounded to bf16 on store.  Integers compute in 64 bits and are
 * truncated to their width on store, which gives two's-complement wrap.  The
 * integer edge cases are XLA's: x/0 is -1 (all ones unsigned), x%0 is x,
 * INT_MIN/-1 is INT_MIN and INT_MIN%-1 is 0; shifts by the width or more give
 * 0 (or the sign for arithmetic right shifts); max/min propagate NaN.
 */
#include <math.h>
#include <string.h>

#include "evalp.h"

bool ev_is_elementwise_op(HloOp op) {
  switch (op) {
  case HLO_ABS: case HLO_ACOS: case HLO_ACOSH: case HLO_ADD: case HLO_AND:
  case HLO_ASIN: case HLO_ASINH: case HLO_ATAN: case HLO_ATAN2:
  case HLO_ATANH: case HLO_BITCAST_CONVERT: case HLO_CBRT: case HLO_CEIL:
  case HLO_CLAMP: case HLO_CLZ: case HLO_COMPARE: case HLO_COMPLEX:
  case HLO_CONVERT: case HLO_COS: case HLO_COSH: case HLO_DIVIDE:
  case HLO_ERF: case HLO_EXP: case HLO_EXPM1: case HLO_FLOOR: case HLO_IMAG:
  case HLO_IS_FINITE: case HLO_LOG: case HLO_LOG1P: case HLO_LOGISTIC:
  case HLO_MAXIMUM: case HLO_MINIMUM: case HLO_MULHI: case HLO_MULTIPLY:
  case HLO_NEGATE: case HLO_NOT: case HLO_OR: case HLO_POPCNT:
  case HLO_POWER: case HLO_REAL: case HLO_REDUCE_PRECISION:
  case HLO_REMAINDER: case HLO_ROUND_NEAREST_AFZ:
  case HLO_ROUND_NEAREST_EVEN: case HLO_RSQRT: case HLO_SELECT:
  case HLO_SHIFT_LEFT: case HLO_SHIFT_RIGHT_ARITHMETIC:
  case HLO_SHIFT_RIGHT_LOGICAL: case HLO_SIGN: case HLO_SIN: case HLO_SINH:
  case HLO_SQRT: case HLO_SUBTRACT: case HLO_TAN: case HLO_TANH:
  case HLO_XOR: case HLO_STOCHASTIC_CONVERT:
    return true;
  default:
    return false;
  }
}

static bool bad_type(Eval *ev, const HloInstr *i, ElemType et) {
  return ev_fail(ev, i, EVAL_ERR_INVALID, "unsupported element type %s",
                 et_name(et));
}

/*
 * Unary
 */
static bool unary_f32(HloOp op, const float *a, float *r, int n) {
  switch (op) {
#define U(OP, EXPR) case OP: for (int k = 0; k < n; k++) { float x = a[k]; r[k] = (EXPR); } return true;
  U(HLO_ABS, fabsf(x))
  U(HLO_NEGATE, -x)
  U(HLO_EXP, expf(x))
  U(HLO_EXPM1, expm1f(x))
  U(HLO_LOG, logf(x))
  U(HLO_LOG1P, log1pf(x))
  U(HLO_LOGISTIC, 1.0f / (1.0f + expf(-x)))
  U(HLO_SQRT, sqrtf(x))
  U(HLO_RSQRT, 1.0f / sqrtf(x))
  U(HLO_CBRT, cbrtf(x))
  U(HLO_SIN, sinf(x))
  U(HLO_COS, cosf(x))
  U(HLO_TAN, tanf(x))
  U(HLO_TANH, tanhf(x))
  U(HLO_ERF, erff(x))
  U(HLO_CEIL, ceilf(x))
  U(HLO_FLOOR, floorf(x))
  U(HLO_ROUND_NEAREST_AFZ, roundf(x))
  U(HLO_ROUND_NEAREST_EVEN, rintf(x))
  U(HLO_SIGN, x != x ? x : copysignf(x != 0.0f ? 1.0f : 0.0f, x))
  U(HLO_ACOS, acosf(x))
  U(HLO_ASIN, asinf(x))
  U(HLO_ATAN, atanf(x))
  U(HLO_ACOSH, acoshf(x))
  U(HLO_ASINH, asinhf(x))
  U(HLO_ATANH, atanhf(x))
  U(HLO_COSH, coshf(x))
  U(HLO_SINH, sinhf(x))
  U(HLO_REAL, x)
  U(HLO_IMAG, ((void)x, 0.0f))
#undef U
  default: return false;
  }
}

static bool unary_f64(HloOp op, const double *a, double *r, int n) {
  switch (op) {
#define U(OP, EXPR) case OP: for (int k = 0; k < n; k++) { double x = a[k]; r[k] = (EXPR); } return true;
  U(HLO_ABS, fabs(x))
  U(HLO_NEGATE, -x)
  U(HLO_EXP, exp(x))
  U(HLO_EXPM1, expm1(x))
  U(HLO_LOG, log(x))
  U(HLO_LOG1P, log1p(x))
  U(HLO_LOGISTIC, 1.0 / (1.0 + exp(-x)))
  U(HLO_SQRT, sqrt(x))
  U(HLO_RSQRT, 1.0 / sqrt(x))
  U(HLO_CBRT, cbrt(x))
  U(HLO_SIN, sin(x))
  U(HLO_COS, cos(x))
  U(HLO_TAN, tan(x))
  U(HLO_TANH, tanh(x))
  U(HLO_ERF, erf(x))
  U(HLO_CEIL, ceil(x))
  U(HLO_FLOOR, floor(x))
  U(HLO_ROUND_NEAREST_AFZ, round(x))
  U(HLO_ROUND_NEAREST_EVEN, rint(x))
  U(HLO_SIGN, x != x ? x : copysign(x != 0.0 ? 1.0 : 0.0, x))
  U(HLO_ACOS, acos(x))
  U(HLO_ASIN, asin(x))
  U(HLO_ATAN, atan(x))
  U(HLO_ACOSH, acosh(x))
  U(HLO_ASINH, asinh(x))
  U(HLO_ATANH, atanh(x))
  U(HLO_COSH, cosh(x))
  U(HLO_SINH, sinh(x))
  U(HLO_REAL, x)
  U(HLO_IMAG, ((void)x, 0.0))
#undef U
  default: return false;
  }
}

static uint64_t width_mask(int w) {
  return w >= 64 ? UINT64_MAX : ((uint64_t)1 << w) - 1;
}

static int clz_w(uint64_t x, int w) {
  x &= width_mask(w);
  if (x == 0) return w;
  return __builtin_clzll(x) - (64 - w);
}

static bool unary_int(HloOp op, bool is_signed, bool is_pred, int w,
                      const uint64_t *a, uint64_t *r, int n) {
  switch (op) {
  case HLO_ABS:
    for (int k = 0; k < n; k++)
      r[k] = is_signed && (int64_t)a[k] < 0 ? (uint64_t)0 - a[k] : a[k];
    return true;
  case HLO_NEGATE:
    for (int k = 0; k < n; k++) r[k] = (uint64_t)0 - a[k];
    return true;
  case HLO_SIGN:
    for (int k = 0; k < n; k++) {
      if (is_signed) r[k] = (uint64_t)(int64_t)(((int64_t)a[k] > 0) - ((int64_t)a[k] < 0));
      else r[k] = a[k] != 0;
    }
    return true;
  case HLO_NOT:
    for (int k = 0; k < n; k++) r[k] = is_pred ? !a[k] : ~a[k];
    return true;
  case HLO_POPCNT:
    for (int k = 0; k < n; k++) r[k] = (uint64_t)__builtin_popcountll(a[k] & width_mask(w));
    return true;
  case HLO_CLZ:
    for (int k = 0; k < n; k++) r[k] = (uint64_t)clz_w(a[k], w);
    return true;
  case HLO_REAL:
    for (int k = 0; k < n; k++) r[k] = a[k];
    return true;
  case HLO_IMAG:
    for (int k = 0; k < n; k++) r[k] = 0;
    return true;
  default:
    return false;
  }
}

static bool unary_c64(HloOp op, const float _Complex *a, LaneBuf *r, int n) {
  switch (op) {
#define U(OP, EXPR) case OP: for (int k = 0; k < n; k++) { float _Complex x = a[k]; r->cf[k] = (EXPR); } return true;
  U(HLO_NEGATE, -x)
  U(HLO_EXP, cexpf(x))
  U(HLO_EXPM1, cexpf(x) - 1.0f)
  U(HLO_LOG, clogf(x))
  U(HLO_LOG1P, clogf(1.0f + x))
  U(HLO_LOGISTIC, 1.0f / (1.0f + cexpf(-x)))
  U(HLO_SQRT, csqrtf(x))
  U(HLO_RSQRT, 1.0f / csqrtf(x))
  U(HLO_SIN, csinf(x))
  U(HLO_COS, ccosf(x))
  U(HLO_TAN, ctanf(x))
  U(HLO_TANH, ctanhf(x))
  U(HLO_ACOS, cacosf(x))
  U(HLO_ASIN, casinf(x))
  U(HLO_ATAN, catanf(x))
  U(HLO_ACOSH, cacoshf(x))
  U(HLO_ASINH, casinhf(x))
  U(HLO_ATANH, catanhf(x))
  U(HLO_COSH, ccoshf(x))
  U(HLO_SINH, csinhf(x))
  U(HLO_SIGN, cabsf(x) == 0 ? 0 : x / cabsf(x))
#undef U
  case HLO_ABS: for (int k = 0; k < n; k++) r->f[k] = cabsf(a[k]); return true;
  case HLO_REAL: for (int k = 0; k < n; k++) r->f[k] = crealf(a[k]); return true;
  case HLO_IMAG: for (int k = 0; k < n; k++) r->f[k] = cimagf(a[k]); return true;
  default: return false;
  }
}

static bool unary_c128(HloOp op, const double _Complex *a, LaneBuf *r, int n) {
  switch (op) {
#define U(OP, EXPR) case OP: for (int k = 0; k < n; k++) { double _Complex x = a[k]; r->cd[k] = (EXPR); } return true;
  U(HLO_NEGATE, -x)
  U(HLO_EXP, cexp(x))
  U(HLO_EXPM1, cexp(x) - 1.0)
  U(HLO_LOG, clog(x))
  U(HLO_LOG1P, clog(1.0 + x))
  U(HLO_LOGISTIC, 1.0 / (1.0 + cexp(-x)))
  U(HLO_SQRT, csqrt(x))
  U(HLO_RSQRT, 1.0 / csqrt(x))
  U(HLO_SIN, csin(x))
  U(HLO_COS, ccos(x))
  U(HLO_TAN, ctan(x))
  U(HLO_TANH, ctanh(x))
  U(HLO_ACOS, cacos(x))
  U(HLO_ASIN, casin(x))
  U(HLO_ATAN, catan(x))
  U(HLO_ACOSH, cacosh(x))
  U(HLO_ASINH, casinh(x))
  U(HLO_ATANH, catanh(x))
  U(HLO_COSH, ccosh(x))
  U(HLO_SINH, csinh(x))
  U(HLO_SIGN, cabs(x) == 0 ? 0 : x / cabs(x))
#undef U
  case HLO_ABS: for (int k = 0; k < n; k++) r->d[k] = cabs(a[k]); return true;
  case HLO_REAL: for (int k = 0; k < n; k++) r->d[k] = creal(a[k]); return true;
  case HLO_IMAG: for (int k = 0; k < n; k++) r->d[k] = cimag(a[k]); return true;
  default: return false;
  }
}

/*
 * Binary
 */
#define MAXF(a, b) ((a) != (a) ? (a) : (b) != (b) ? (b) : ((a) < (b) ? (b) : (a)))
#define MINF(a, b) ((a) != (a) ? (a) : (b) != (b) ? (b) : ((b) < (a) ? (b) : (a)))

static bool binary_f32(HloOp op, const float *a, const float *b, float *r,
                       int n) {
  switch (op) {
#define B(OP, EXPR) case OP: for (int k = 0; k < n; k++) { float x = a[k], y = b[k]; r[k] = (EXPR); } return true;
  B(HLO_ADD, x + y)
  B(HLO_SUBTRACT, x - y)
  B(HLO_MULTIPLY, x * y)
  B(HLO_DIVIDE, x / y)
  B(HLO_REMAINDER, fmodf(x, y))
  B(HLO_MAXIMUM, MAXF(x, y))
  B(HLO_MINIMUM, MINF(x, y))
  B(HLO_POWER, (x == 0 && y == 0) ? 1.0f : powf(x, y))
  B(HLO_ATAN2, atan2f(x, y))
#undef B
  default: return false;
  }
}

static bool binary_f64(HloOp op, const double *a, const double *b, double *r,
                       int n) {
  switch (op) {
#define B(OP, EXPR) case OP: for (int k = 0; k < n; k++) { double x = a[k], y = b[k]; r[k] = (EXPR); } return true;
  B(HLO_ADD, x + y)
  B(HLO_SUBTRACT, x - y)
  B(HLO_MULTIPLY, x * y)
  B(HLO_DIVIDE, x / y)
  B(HLO_REMAINDER, fmod(x, y))
  B(HLO_MAXIMUM, MAXF(x, y))
  B(HLO_MINIMUM, MINF(x, y))
  B(HLO_POWER, (x == 0 && y == 0) ? 1.0 : pow(x, y))
  B(HLO_ATAN2, atan2(x, y))
#undef B
  default: return false;
  }
}

static uint64_t ipow(uint64_t base, uint64_t e) {
  uint64_t r = 1;
  while (e) {
    if (e & 1) r *= base;
    e >>= 1;
    base *= base;
  }
  return r;
}

/* High half of the w-bit product. */
static uint64_t mulhi(uint64_t x, uint64_t y, bool is_signed, int w) {
  if (w >= 64) {
    if (is_signed) {
      __int128 p = (__int128)(int64_t)x * (__int128)(int64_t)y;
      return (uint64_t)(p >> 64);
    }
    unsigned __int128 p = (unsigned __int128)x * y;
    return (uint64_t)(p >> 64);
  }
  if (is_signed) {
    __int128 p = (__int128)(int64_t)x * (__int128)(int64_t)y;
    return (uint64_t)(int64_t)(p >> w);
  }
  unsigned __int128 p = (unsigned __int128)(x & width_mask(w)) * (y & width_mask(w));
  return (uint64_t)(p >> w);
}

static bool binary_int(HloOp op, bool sg, int w, const uint64_t *a,
                       const uint64_t *b, uint64_t *r, int n) {
  uint64_t mask = width_mask(w);
  switch (op) {
  case HLO_ADD: for (int k = 0; k < n; k++) r[k] = a[k] + b[k]; return true;
  case HLO_SUBTRACT: for (int k = 0; k < n; k++) r[k] = a[k] - b[k]; return true;
  case HLO_MULTIPLY: for (int k = 0; k < n; k++) r[k] = a[k] * b[k]; return true;
  case HLO_AND: for (int k = 0; k < n; k++) r[k] = a[k] & b[k]; return true;
  case HLO_OR: for (int k = 0; k < n; k++) r[k] = a[k] | b[k]; return true;
  case HLO_XOR: for (int k = 0; k < n; k++) r[k] = a[k] ^ b[k]; return true;
  case HLO_DIVIDE:
    for (int k = 0; k < n; k++) {
      if (sg) {
        int64_t x = (int64_t)a[k], y = (int64_t)b[k];
        r[k] = y == 0 ? (uint64_t)-1
             : (y == -1 && x == INT64_MIN) ? (uint64_t)x : (uint64_t)(x / y);
      } else {
        r[k] = b[k] == 0 ? UINT64_MAX : a[k] / b[k];
      }
    }
    return true;
  case HLO_REMAINDER:
    for (int k = 0; k < n; k++) {
      if (sg) {
        int64_t x = (int64_t)a[k], y = (int64_t)b[k];
        r[k] = y == 0 ? (uint64_t)x : y == -1 ? 0 : (uint64_t)(x % y);
      } else {
        r[k] = b[k] == 0 ? a[k] : a[k] % b[k];
      }
    }
    return true;
  case HLO_MAXIMUM:
    for (int k = 0; k < n; k++)
      r[k] = sg ? ((int64_t)a[k] < (int64_t)b[k] ? b[k] : a[k])
                : (a[k] < b[k] ? b[k] : a[k]);
    return true;
  case HLO_MINIMUM:
    for (int k = 0; k < n; k++)
      r[k] = sg ? ((int64_t)b[k] < (int64_t)a[k] ? b[k] : a[k])
                : (b[k] < a[k] ? b[k] : a[k]);
    return true;
  case HLO_POWER:
    for (int k = 0; k < n; k++) {
      /* a negative exponent: 0, but 1 for a base of 1 and +-1 for a base
       * of -1, as XLA's compiled code gives (its evaluator gives 0) */
      if (sg && (int64_t)b[k] < 0)
        r[k] = a[k] == 1 ? 1 : (int64_t)a[k] == -1 ? ((b[k] & 1) ? a[k] : 1) : 0;
      else r[k] = ipow(a[k], b[k]);
    }
    return true;
  case HLO_SHIFT_LEFT:
    for (int k = 0; k < n; k++) {
      bool oob = sg ? ((int64_t)b[k] < 0 || (int64_t)b[k] >= w) : b[k] >= (uint64_t)w;
      r[k] = oob ? 0 : a[k] << b[k];
    }
    return true;
  case HLO_SHIFT_RIGHT_LOGICAL:
    for (int k = 0; k < n; k++) {
      bool oob = sg ? ((int64_t)b[k] < 0 || (int64_t)b[k] >= w) : b[k] >= (uint64_t)w;
      r[k] = oob ? 0 : (a[k] & mask) >> b[k];
    }
    return true;
  case HLO_SHIFT_RIGHT_ARITHMETIC:
    for (int k = 0; k < n; k++) {
      bool oob = sg ? ((int64_t)b[k] < 0 || (int64_t)b[k] >= w) : b[k] >= (uint64_t)w;
      uint64_t m = w >= 64 ? 0 : (uint64_t)1 << (w - 1);
      int64_t x = w >= 64 ? (int64_t)a[k] : (int64_t)(((a[k] & mask) ^ m) - m);
      r[k] = oob ? (x < 0 ? UINT64_MAX : 0) : (uint64_t)(x >> b[k]);
    }
    return true;
  case HLO_MULHI:
    for (int k = 0; k < n; k++) r[k] = mulhi(a[k], b[k], sg, w);
    return true;
  default:
    return false;
  }
}

static bool binary_c64(HloOp op, const float _Complex *a,
                       const float _Complex *b, float _Complex *r, int n) {
  switch (op) {
#define B(OP, EXPR) case OP: for (int k = 0; k < n; k++) { float _Complex x = a[k], y = b[k]; r[k] = (EXPR); } return true;
  B(HLO_ADD, x + y)
  B(HLO_SUBTRACT, x - y)
  B(HLO_MULTIPLY, x * y)
  B(HLO_DIVIDE, x / y)
  B(HLO_POWER, (x == 0 && y == 0) ? 1.0f : cpowf(x, y))
  B(HLO_ATAN2, -I * clogf((y + I * x) / csqrtf(y * y + x * x)))
#undef B
  default: return false;
  }
}

static bool binary_c128(HloOp op, const double _Complex *a,
                        const double _Complex *b, double _Complex *r, int n) {
  switch (op) {
#define B(OP, EXPR) case OP: for (int k = 0; k < n; k++) { double _Complex x = a[k], y = b[k]; r[k] = (EXPR); } return true;
  B(HLO_ADD, x + y)
  B(HLO_SUBTRACT, x - y)
  B(HLO_MULTIPLY, x * y)
  B(HLO_DIVIDE, x / y)
  B(HLO_POWER, (x == 0 && y == 0) ? 1.0 : cpow(x, y))
  B(HLO_ATAN2, -I * clog((y + I * x) / csqrt(y * y + x * x)))
#undef B
  default: return false;
  }
}

/*
 * Compare
 */
static bool cmp_result(CmpDir dir, int c) {
  switch (dir) {
  case CMP_EQ: return c == 0;
  case CMP_NE: return c != 0;
  case CMP_LT: return c < 0;
  case CMP_LE: return c <= 0;
  case CMP_GT: return c > 0;
  case CMP_GE: return c >= 0;
  default: return false;
  }
}

#define CMP_LOOP(X, Y)                                                         \
  for (int k = 0; k < n_; k++) {                                                \
    __typeof__(X[0]) x = X[k], y = Y[k];                                       \
    bool v;                                                                    \
    switch (dir) {                                                             \
    case CMP_EQ: v = x == y; break;                                            \
    case CMP_NE: v = x != y; break;                                            \
    case CMP_LT: v = x < y; break;                                             \
    case CMP_LE: v = x <= y; break;                                            \
    case CMP_GT: v = x > y; break;                                             \
    case CMP_GE: v = x >= y; break;                                            \
    default: v = false; break;                                                 \
    }                                                                          \
    r[k] = v;                                                                  \
  }

/* Total-order key of a float's raw bits: -NaN < -inf < ... < -0 < +0 < ...
 * < inf < NaN. */
static int64_t total_key(ElemType et, const uint8_t *p) {
  int w = et_bits(et);
  uint64_t raw = 0;
  memcpy(&raw, p, (size_t)et_bytes(et));
  raw &= width_mask(w);
  if (et == ET_F8E8M0FNU) return (int64_t)raw;     /* no sign bit */
  uint64_t sign = (uint64_t)1 << (w - 1);
  if (raw & sign) return -(int64_t)(raw & (sign - 1)) - 1;
  return (int64_t)raw;
}

static bool do_compare(Eval *ev, const HloInstr *i, const EwArg *args,
                       uint8_t *out, int64_t n) {
  ElemType et = args[0].et;
  CmpDir dir = i->cmp_dir;
  if (dir == CMP_NONE)
    return ev_fail(ev, i, EVAL_ERR_INVALID, "compare without a direction");
  Lane lane = ev_lane(et);
  if (i->cmp_type == CMPT_TOTALORDER && et_is_float(et)) {
    int eb = et_bytes(et);
    for (int64_t k = 0; k < n; k++) {
      int64_t x = total_key(et, args[0].p + (args[0].scalar ? 0 : k * eb));
      int64_t y = total_key(et, args[1].p + (args[1].scalar ? 0 : k * eb));
      out[k] = cmp_result(dir, (x > y) - (x < y));
    }
    return true;
  }
  if ((lane == LANE_C64 || lane == LANE_C128) && dir != CMP_EQ && dir != CMP_NE)
    return ev_fail(ev, i, EVAL_ERR_INVALID, "ordered compare of complex values");
  LaneBuf a, b;
  for (int64_t s = 0; s < n; s += LANE_CHUNK) {
    int c = n - s < LANE_CHUNK ? (int)(n - s) : LANE_CHUNK;
    ev_lane_load(et, args[0].p, s, c, args[0].scalar, &a);
    ev_lane_load(args[1].et, args[1].p, s, c, args[1].scalar, &b);
    uint8_t *r = out + s;
    int n_ = c;
    switch (lane) {
    case LANE_F32: CMP_LOOP(a.f, b.f) break;
    case LANE_F64: CMP_LOOP(a.d, b.d) break;
    case LANE_S64: CMP_LOOP(a.s, b.s) break;
    case LANE_U64: CMP_LOOP(a.u, b.u) break;
    case LANE_C64:
      for (int k = 0; k < c; k++) r[k] = (a.cf[k] == b.cf[k]) == (dir == CMP_EQ);
      break;
    case LANE_C128:
      for (int k = 0; k < c; k++) r[k] = (a.cd[k] == b.cd[k]) == (dir == CMP_EQ);
      break;
    }
  }
  return true;
}

/*
 * Reduce-precision on the raw bits, in the operand's own format (f16 is not
 * widened: XLA's compiled code rounds an f16 subnormal where a widened f32
 * would flush it), by fp_reduce_precision_bits; bf16 NaNs come back quiet,
 * as XLA's CPU, which computes bf16 in f32, gives them.
 */
static bool do_reduce_precision(Eval *ev, const HloInstr *i, const EwArg *a,
                                ElemType out_et, uint8_t *out, int64_t n) {
  ElemType et = a->et;
  if (!et_is_float(et) || et == ET_F8E8M0FNU || et == ET_F4E2M1FN || out_et != et)
    return bad_type(ev, i, et);
  int dm = (int)i->mantissa_bits, de = (int)i->exponent_bits;
  if (de < 1 || dm < 0 || de > 64 || dm > 64)
    return ev_fail(ev, i, EVAL_ERR_INVALID, "bad exponent/mantissa bits");
  int se, sm, eb = et_bytes(et);
  fp_widths(et_fp_format(et), &se, &sm);
  for (int64_t k = 0; k < n; k++) {
    uint64_t bits = 0;
    memcpy(&bits, a->p + (a->scalar ? 0 : k) * eb, (size_t)eb);
    bits = fp_reduce_precision_bits(et_bits(et), se, sm, bits, de, dm);
    if (et == ET_BF16 && (bits & 0x7fff) > 0x7f80)
      bits = (bits & 0x8000) | 0x7fc0;
    memcpy(out + k * eb, &bits, (size_t)eb);
  }
  return true;
}

/*
 * stochastic-convert(x, random): float to integer, rounding the magnitude
 * up when random < fraction * 2^bits(random); infinities and out-of-range
 * values saturate, NaN gives 0 (XLA's evaluator).
 */
static bool do_stochastic_convert(Eval *ev, const HloInstr *i, const EwArg *a,
                                  ElemType out_et, uint8_t *out, int64_t n) {
  ElemType ft = a[0].et, rt = a[1].et;
  if (!et_is_float(ft) || !et_is_unsigned_int(rt) || et_bits(rt) != et_bits(ft) ||
      !et_is_int(out_et))
    return ev_fail(ev, i, EVAL_ERR_INVALID, "stochastic-convert takes a float, its "
                   "same-width unsigned random bits, and gives an integer");
  int ob = et_bytes(out_et), bits = et_bits(out_et), rbits = et_bits(rt);
  bool sg = et_is_signed_int(out_et);
  int64_t lo = sg ? (bits >= 64 ? INT64_MIN : -((int64_t)1 << (bits - 1))) : 0;
  int64_t hi = sg ? (bits >= 64 ? INT64_MAX : ((int64_t)1 << (bits - 1)) - 1)
                  : (bits >= 63 ? INT64_MAX : ((int64_t)1 << bits) - 1);
  for (int64_t k = 0; k < n; k++) {
    double x = ev_get_f64(ft, a[0].p + (a[0].scalar ? 0 : k * et_bytes(ft)));
    uint64_t r = ev_get_u64(rt, a[1].p + (a[1].scalar ? 0 : k * et_bytes(rt)));
    int64_t v;
    bool neg = signbit(x);
    if (isinf(x)) v = neg ? lo : hi;
    else if (x != x) v = 0;
    else if (x >= (double)hi) v = hi;
    else if (x <= (double)lo) v = lo;
    else {
      double m = fabs(x);
      int64_t t = (int64_t)m;
      double frac = m - (double)t;
      if (frac != 0) {
        uint64_t fixed = (uint64_t)ldexp(frac, rbits);
        if (r < fixed) t = t == hi ? lo : t + 1;
      }
      v = neg ? -t : t;
    }
    ev_set_s64(out_et, out + k * ob, v);
  }
  return true;
}

/*
 * The dispatcher
 */
static bool lane_unary(Eval *ev, const HloInstr *i, const EwArg *a,
                       ElemType out_et, uint8_t *out, int64_t n) {
  ElemType et = a->et;
  Lane lane = ev_lane(et);
  HloOp op = i->op;
  LaneBuf x, r;
  if (op == HLO_IS_FINITE) {
    if (!et_is_float(et)) return bad_type(ev, i, et);
    for (int64_t s = 0; s < n; s += LANE_CHUNK) {
      int c = n - s < LANE_CHUNK ? (int)(n - s) : LANE_CHUNK;
      ev_lane_load(et, a->p, s, c, a->scalar, &x);
      for (int k = 0; k < c; k++)
        out[s + k] = lane == LANE_F64 ? isfinite(x.d[k]) : isfinite(x.f[k]);
    }
    return true;
  }
  bool is_pred = et == ET_PRED;
  int w = et_bits(et);
  for (int64_t s = 0; s < n; s += LANE_CHUNK) {
    int c = n - s < LANE_CHUNK ? (int)(n - s) : LANE_CHUNK;
    ev_lane_load(et, a->p, s, c, a->scalar, &x);
    bool ok;
    switch (lane) {
    case LANE_F32: ok = unary_f32(op, x.f, r.f, c); break;
    case LANE_F64: ok = unary_f64(op, x.d, r.d, c); break;
    case LANE_S64: ok = unary_int(op, true, false, w, x.u, r.u, c); break;
    case LANE_U64: ok = unary_int(op, false, is_pred, w, x.u, r.u, c); break;
    case LANE_C64: ok = unary_c64(op, x.cf, &r, c); break;
    case LANE_C128: ok = unary_c128(op, x.cd, &r, c); break;
    default: ok = false; break;
    }
    if (!ok) return bad_type(ev, i, et);
    if (ev_lane(out_et) != lane && !((lane == LANE_C64 && ev_lane(out_et) == LANE_F32) ||
                                     (lane == LANE_C128 && ev_lane(out_et) == LANE_F64)))
      return ev_fail(ev, i, EVAL_ERR_INVALID, "result type %s does not match operand type %s",
                     et_name(out_et), et_name(et));
    ev_lane_store(out_et, out, s, c, &r);
    if (!ev_check_time(ev, i)) return false;
  }
  return true;
}

static bool lane_binary(Eval *ev, const HloInstr *i, const EwArg *args,
                        ElemType out_et, uint8_t *out, int64_t n) {
  ElemType et = args[0].et;
  Lane lane = ev_lane(et);
  HloOp op = i->op;
  LaneBuf a, b, r;
  if (args[1].et != et && op != HLO_COMPLEX)
    return ev_fail(ev, i, EVAL_ERR_INVALID, "operand types %s and %s differ",
                   et_name(et), et_name(args[1].et));
  if (op == HLO_COMPLEX) {
    if (!et_is_float(et) || !et_is_complex(out_et)) return bad_type(ev, i, et);
    for (int64_t s = 0; s < n; s += LANE_CHUNK) {
      int c = n - s < LANE_CHUNK ? (int)(n - s) : LANE_CHUNK;
      ev_lane_load(et, args[0].p, s, c, args[0].scalar, &a);
      ev_lane_load(args[1].et, args[1].p, s, c, args[1].scalar, &b);
      for (int k = 0; k < c; k++) {
        if (out_et == ET_C64) r.cf[k] = CMPLXF(a.f[k], b.f[k]);
        else r.cd[k] = CMPLX(a.d[k], b.d[k]);
      }
      ev_lane_store(out_et, out, s, c, &r);
    }
    return true;
  }
  if (ev_lane(out_et) != lane)
    return ev_fail(ev, i, EVAL_ERR_INVALID, "result type %s does not match operand type %s",
                   et_name(out_et), et_name(et));
  int w = et_bits(et);
  for (int64_t s = 0; s < n; s += LANE_CHUNK) {
    int c = n - s < LANE_CHUNK ? (int)(n - s) : LANE_CHUNK;
    ev_lane_load(et, args[0].p, s, c, args[0].scalar, &a);
    ev_lane_load(et, args[1].p, s, c, args[1].scalar, &b);
    bool ok;
    switch (lane) {
    case LANE_F32: ok = binary_f32(op, a.f, b.f, r.f, c); break;
    case LANE_F64: ok = binary_f64(op, a.d, b.d, r.d, c); break;
    case LANE_S64: ok = binary_int(op, true, w, a.u, b.u, r.u, c); break;
    case LANE_U64:
      if (et == ET_PRED && (op == HLO_SHIFT_LEFT || op == HLO_SHIFT_RIGHT_LOGICAL ||
                            op == HLO_SHIFT_RIGHT_ARITHMETIC || op == HLO_DIVIDE ||
                            op == HLO_REMAINDER || op == HLO_MULHI)) {
        ok = false;
        break;
      }
      if (et == ET_PRED && op == HLO_POWER) {
        for (int k = 0; k < c; k++) r.u[k] = a.u[k] || !b.u[k];
        ok = true;
        break;
      }
      ok = binary_int(op, false, w, a.u, b.u, r.u, c);
      break;
    case LANE_C64: ok = binary_c64(op, a.cf, b.cf, r.cf, c); break;
    case LANE_C128: ok = binary_c128(op, a.cd, b.cd, r.cd, c); break;
    default: ok = false; break;
    }
    if (!ok) return bad_type(ev, i, et);
    ev_lane_store(out_et, out, s, c, &r);
    if (!ev_check_time(ev, i)) return false;
  }
  return true;
}

static bool do_clamp(Eval *ev, const HloInstr *i, const EwArg *args,
                     ElemType out_et, uint8_t *out, int64_t n) {
  ElemType et = args[1].et;
  Lane lane = ev_lane(et);
  if (args[0].et != et || args[2].et != et)
    return ev_fail(ev, i, EVAL_ERR_INVALID, "clamp operand types differ");
  LaneBuf lo, x, hi;
  for (int64_t s = 0; s < n; s += LANE_CHUNK) {
    int c = n - s < LANE_CHUNK ? (int)(n - s) : LANE_CHUNK;
    ev_lane_load(et, args[0].p, s, c, args[0].scalar, &lo);
    ev_lane_load(et, args[1].p, s, c, args[1].scalar, &x);
    ev_lane_load(et, args[2].p, s, c, args[2].scalar, &hi);
    for (int k = 0; k < c; k++) {
      switch (lane) {
      case LANE_F32: {
        float l = lo.f[k], v = x.f[k], h = hi.f[k];
        if (l != l) v = l;
        else if (v != v) { /* a NaN operand stays NaN */ }
        else if (h != h) v = h;
        else { float m = v < l ? l : v; v = m < h ? m : h; }
        x.f[k] = v;
        break;
      }
      case LANE_F64: {
        double l = lo.d[k], v = x.d[k], h = hi.d[k];
        if (l != l) v = l;
        else if (v != v) { /* a NaN operand stays NaN */ }
        else if (h != h) v = h;
        else { double m = v < l ? l : v; v = m < h ? m : h; }
        x.d[k] = v;
        break;
      }
      case LANE_S64: {
        int64_t m = x.s[k] < lo.s[k] ? lo.s[k] : x.s[k];
        x.s[k] = m < hi.s[k] ? m : hi.s[k];
        break;
      }
      case LANE_U64: {
        uint64_t m = x.u[k] < lo.u[k] ? lo.u[k] : x.u[k];
        x.u[k] = m < hi.u[k] ? m : hi.u[k];
        break;
      }
      default: return bad_type(ev, i, et);
      }
    }
    ev_lane_store(out_et, out, s, c, &x);
  }
  return true;
}

static bool do_select(Eval *ev, const HloInstr *i, const EwArg *args,
                      ElemType out_et, uint8_t *out, int64_t n) {
  int eb = et_bytes(out_et);
  if (args[1].et != out_et || args[2].et != out_et)
    return ev_fail(ev, i, EVAL_ERR_INVALID, "select operand types differ");
  for (int64_t k = 0; k < n; k++) {
    bool p = args[0].p[args[0].scalar ? 0 : k] != 0;
    const EwArg *src = p ? &args[1] : &args[2];
    memcpy(out + k * eb, src->p + (src->scalar ? 0 : k * eb), (size_t)eb);
  }
  return true;
}

bool ev_elementwise(Eval *ev, const HloInstr *i, int nargs, const EwArg *args,
                    ElemType out_et, uint8_t *out, int64_t n) {
  if (n <= 0) return true;
  switch (i->op) {
  case HLO_CONVERT:
    if (args[0].scalar) {
      int ob = et_bytes(out_et);
      for (int64_t k = 0; k < n; k++)
        ev_convert_elems(args[0].et, args[0].p, out_et, out + k * ob, 1);
    } else {
      ev_convert_elems(args[0].et, args[0].p, out_et, out, n);
    }
    return true;
  case HLO_BITCAST_CONVERT: {
    /* the same width (eval_elementwise takes the others): the bits */
    const char *why = hlo_bitcast_convert_unsupported(args[0].et, out_et);
    if (why)
      return ev_fail(ev, i, EVAL_ERR_UNSUPPORTED,
                     "not supported between %s (%s to %s)", why,
                     et_name(args[0].et), et_name(out_et));
    if (et_bytes(args[0].et) != et_bytes(out_et) ||
        hlo_bitcast_bits(args[0].et) != hlo_bitcast_bits(out_et))
      return ev_fail(ev, i, EVAL_ERR_INVALID,
                     "bitcast-convert between widths needs array operands");
    int ob = et_bytes(out_et);
    for (int64_t k = 0; k < n; k++)
      memcpy(out + k * ob, args[0].p + (args[0].scalar ? 0 : k * ob), (size_t)ob);
    if (et_bits(out_et) < 8) /* s4 <-> u4 <-> f4e2m1fn: the low bits */
      for (int64_t k = 0; k < n; k++)
        out[k] &= (uint8_t)((1u << et_bits(out_et)) - 1);
    return true;
  }
  case HLO_SELECT:
    return do_select(ev, i, args, out_et, out, n);
  case HLO_CLAMP:
    return do_clamp(ev, i, args, out_et, out, n);
  case HLO_COMPARE:
    if (args[0].et != args[1].et)
      return ev_fail(ev, i, EVAL_ERR_INVALID, "compare operand types differ");
    return do_compare(ev, i, args, out, n);
  case HLO_REDUCE_PRECISION:
    return do_reduce_precision(ev, i, args, out_et, out, n);
  case HLO_STOCHASTIC_CONVERT:
    return do_stochastic_convert(ev, i, args, out_et, out, n);
  default:
    break;
  }
  if (nargs == 1) return lane_unary(ev, i, args, out_et, out, n);
  if (nargs == 2) return lane_binary(ev, i, args, out_et, out, n);
  return ev_fail(ev, i, EVAL_ERR_INVALID, "unexpected operand count %d", nargs);
}

/*
 * Array-level handler
 */
/* A sub-element's bits: the element's raw bytes (sub-byte types hold
 * their bits at the bottom of a byte), masked to its width. */
static uint64_t elem_bits(ElemType et, const uint8_t *p) {
  uint64_t v = 0;
  memcpy(&v, p, (size_t)et_bytes(et));
  int b = et_bits(et);
  return b >= 64 ? v : v & (((uint64_t)1 << b) - 1);
}

static void put_elem_bits(ElemType et, uint8_t *p, uint64_t v) {
  memcpy(p, &v, (size_t)et_bytes(et)); /* little-endian: the low bytes */
}

/* Bitcast-convert between real types of different widths, as XLA's
 * BitcastDtypesExpander computes it: the narrow elements along the minor
 * dimension are the wide element's bits, least significant first (s4[8,2]
 * to s8[8]: element [i,0] is the low nibble of byte i). */
static EvalValue *bitcast_convert_widths(Eval *ev, const HloInstr *i,
                                         EvalValue *a) {
  const Shape *in = i->ops[0]->shape, *out = i->shape;
  const char *why = hlo_bitcast_convert_unsupported(in->et, out->et);
  if (why) {
    ev_fail(ev, i, EVAL_ERR_UNSUPPORTED, "not supported between %s (%s to %s)",
            why, et_name(in->et), et_name(out->et));
    return NULL;
  }
  int ib = et_bits(in->et), obits = et_bits(out->et);
  bool widen = ib < obits;
  int nb = widen ? ib : obits;
  int64_t ratio = widen ? obits / ib : ib / obits;
  int64_t nin = ev_elems(in), nout = ev_elems(out);
  if (ratio < 2 || (widen ? nin != nout * ratio : nout != nin * ratio)) {
    ev_fail(ev, i, EVAL_ERR_INVALID, "bitcast-convert of %lld elements of %s "
            "gives %lld of %s", (long long)nin, et_name(in->et),
            (long long)nout, et_name(out->et));
    return NULL;
  }
  EvalValue *r = ev_array_nozero(ev, out);
  if (!r) return NULL;
  int isz = et_bytes(in->et), osz = et_bytes(out->et);
  const uint8_t *src = a->data;
  uint8_t *dst = r->data;
  if (widen) {
    for (int64_t o = 0; o < nout; o++) {
      uint64_t w = 0;
      for (int64_t k = 0; k < ratio; k++)
        w |= elem_bits(in->et, src + (o * ratio + k) * isz) << (k * nb);
      put_elem_bits(out->et, dst + o * osz, w);
    }
  } else {
    uint64_t mask = ((uint64_t)1 << nb) - 1; /* nb < 64 */
    for (int64_t e = 0; e < nin; e++) {
      uint64_t w = elem_bits(in->et, src + e * isz);
      for (int64_t k = 0; k < ratio; k++)
        put_elem_bits(out->et, dst + (e * ratio + k) * osz, (w >> (k * nb)) & mask);
    }
  }
  return r;
}

EvalValue *eval_elementwise(Eval *ev, const HloInstr *i, EvalValue *const *a) {
  const Shape *s = i->shape;
  if (!shape_is_array(s)) {
    ev_fail(ev, i, EVAL_ERR_INVALID, "elementwise op with a non-array result");
    return NULL;
  }
  if (hlo_bitcast_convert_resizes(i))
    return bitcast_convert_widths(ev, i, a[0]);
  int64_t n = ev_elems(s);
  EwArg args[3];
  if (i->nops > 3 || i->nops < 1) {
    ev_fail(ev, i, EVAL_ERR_INVALID, "unexpected operand count %d", i->nops);
    return NULL;
  }
  for (int k = 0; k < i->nops; k++) {
    const Shape *os = i->ops[k]->shape;
    if (!shape_is_array(os) || !a[k]->data) {
      ev_fail(ev, i, EVAL_ERR_INVALID, "operand %d is not an array", k);
      return NULL;
    }
    int64_t on = ev_elems(os);
    args[k].et = os->et;
    args[k].p = a[k]->data;
    args[k].scalar = os->rank == 0 && s->rank > 0;
    if (!args[k].scalar && on != n) {
      ev_fail(ev, i, EVAL_ERR_INVALID, "operand %d has %lld elements, result %lld",
              k, (long long)on, (long long)n);
      return NULL;
    }
  }
  /* Write into a dying operand of the same element size: every kernel
   * reads element k of its operands before it writes element k. */
  EvalValue *r = NULL;
  for (int k = 0; k < i->nops && !r; k++)
    if (!args[k].scalar && et_bytes(args[k].et) == et_bytes(s->et)) r = ev_steal(ev, a, k, s);
  if (!r) r = ev_array_nozero(ev, s);
  if (!r) return NULL;
  if (!ev_elementwise(ev, i, i->nops, args, s->et, r->data, n)) {
    ev_unref(ev, r);
    return NULL;
  }
  return r;
}
