/*
 * fp.c - exact conversions between the small floating-point formats and
 * double, and their shortest round-trip decimal form.
 *
 * Every format is described by one row of a table (exponent and mantissa
 * widths, bias, how it spells NaN and infinity, its largest finite
 * encoding), and one encoder and one decoder work from that row.  The
 * semantics are those of ml_dtypes (which XLA uses for its literals and for
 * constant folding), checked against ml_dtypes 0.6 and its float8.h:
 *
 *  - Decoding is exact: every value of every format is a double.
 *  - Encoding rounds the exact double to nearest, ties to even, subnormals
 *    included, in one step (never through float, so nothing is rounded twice).
 *  - Out-of-range finite values and infinities become:
 *      inf (signed)        f16, bf16, f8e5m2, f8e4m3, f8e3m4 (IEEE-like);
 *      NaN, signed         f8e4m3fn (S.1111.111);
 *      NaN 0x80            the fnuz formats;
 *      NaN 0xff            f8e8m0fnu;
 *      +-6, saturated      f4e2m1fn, which has neither inf nor NaN.
 *  - NaN becomes the format's quiet NaN with the NaN's sign where NaNs are
 *    signed (IEEE-like, e4m3fn), 0x80 for fnuz, 0xff for e8m0fnu.  f4e2m1fn
 *    has no NaN: ml_dtypes maps +NaN to 0x8 (-0) and -NaN to 0x0, and so do we.
 *  - -0 (and negative values that round to zero) become +0 in fnuz formats.
 *  - f8e8m0fnu (2^(e-127), unsigned, no zero): 0 and negative values become
 *    NaN; a value between two powers of two goes to the nearer in linear
 *    distance, ties up; positive values up to 2^-127 go to 2^-127 (0x00),
 *    and (2^-127, 1.5*2^-127) goes to 2^-126, as ml_dtypes' rounding does.
 *  - Decoded NaNs carry the encoding's sign bit (fnuz NaN 0x80 is -nan, as
 *    ml_dtypes' conversion to double gives); payloads are not kept, except
 *    that f32 -> double keeps the f32 payload as the hardware does.
 *  - f32 encoding is the C conversion (double) -> (float), which is the same
 *    rounding; f64 is the identity on bits.
 *
 * fp_format prints what XLA's RoundTripFpToString prints, so our dumps read
 * like XLA's: the formats of 16 bits or fewer as %.{max_digits10}g (5 for
 * f16, 4 for bf16, 3 for e4m3*, e3m4, 2 for e5m2*, e8m0, e2m1); f32 and f64
 * as %.6g / %.15g when that reads back (strtod, then fp_from_double, as the
 * parser reads it) and %.9g / %.17g otherwise.  NaN payloads are
 * literal.c's business: here a NaN is "nan" or "-nan".  Normal f32/f64 whose
 * shortest digits fit in 6/15 take a fast digit search (long double with an
 * exact check) instead of printf; the result is the same string.
 */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "support.h"

/* How a format spells its special values. */
enum {
  SPEC_IEEE,  /* exponent all ones: inf (mantissa 0) or NaN */
  SPEC_FN,    /* no inf; NaN is S.1111.111 only */
  SPEC_FNUZ,  /* no inf, no -0; NaN is 0x80 only */
  SPEC_E8M0,  /* unsigned, no zero, NaN 0xff */
  SPEC_NONE,  /* no inf, no NaN: saturates */
};

typedef struct FpInfo {
  int nbits;            /* total width */
  int ebits, mbits;     /* exponent and stored mantissa widths */
  int bias;
  int spec;             /* SPEC_* */
  uint32_t max_enc;     /* largest finite magnitude */
  uint32_t qnan;        /* canonical quiet NaN, sign clear */
  int max_digits10;     /* digits that always round-trip */
} FpInfo;

/* Indexed by FpFormat; f32 and f64 rows serve fp_format's search. */
static const FpInfo fp_info[] = {
  [FP_F16] = {16, 5, 10, 15, SPEC_IEEE, 0x7bff, 0x7e00, 5},
  [FP_BF16] = {16, 8, 7, 127, SPEC_IEEE, 0x7f7f, 0x7fc0, 4},
  [FP_F8E5M2] = {8, 5, 2, 15, SPEC_IEEE, 0x7b, 0x7e, 2},
  [FP_F8E4M3FN] = {8, 4, 3, 7, SPEC_FN, 0x7e, 0x7f, 3},
  [FP_F8E4M3] = {8, 4, 3, 7, SPEC_IEEE, 0x77, 0x7c, 3},
  [FP_F8E3M4] = {8, 3, 4, 3, SPEC_IEEE, 0x6f, 0x78, 3},
  [FP_F8E4M3FNUZ] = {8, 4, 3, 8, SPEC_FNUZ, 0x7f, 0x80, 3},
  [FP_F8E5M2FNUZ] = {8, 5, 2, 16, SPEC_FNUZ, 0x7f, 0x80, 2},
  [FP_F8E4M3B11FNUZ] = {8, 4, 3, 11, SPEC_FNUZ, 0x7f, 0x80, 3},
  [FP_F8E8M0FNU] = {8, 8, 0, 127, SPEC_E8M0, 0xfe, 0xff, 2},
  [FP_F4E2M1FN] = {4, 2, 1, 1, SPEC_NONE, 0x7, 0x8, 2},
  [FP_F32] = {32, 8, 23, 127, SPEC_IEEE, 0x7f7fffff, 0x7fc00000, 9},
  [FP_F64] = {64, 11, 52, 1023, SPEC_IEEE, 0, 0, 17},
};

static const FpInfo *info_of(FpFormat f) {
  if ((unsigned)f >= ARRAY_LEN(fp_info))
    die("bad FpFormat %d", (int)f);
  return &fp_info[f];
}

bool fp_has_inf(FpFormat f) { return info_of(f)->spec == SPEC_IEEE; }

bool fp_has_nan(FpFormat f) { return info_of(f)->spec != SPEC_NONE; }

void fp_widths(FpFormat f, int *ebits, int *mbits) {
  *ebits = info_of(f)->ebits;
  *mbits = info_of(f)->mbits;
}

static double bits_to_f64(uint64_t u) {
  double d;
  memcpy(&d, &u, sizeof d);
  return d;
}

static uint64_t f64_to_bits(double d) {
  uint64_t u;
  memcpy(&u, &d, sizeof u);
  return u;
}

static double make_nan(bool neg) {
  return bits_to_f64(0x7ff8000000000000ull | (uint64_t)neg << 63);
}

/*
 * Decoding
 */

/* sign * mant * 2^exp2 as a double, built from bits (mant < 2^53, exact). */
static double compose(bool neg, uint64_t mant, int exp2) {
  if (mant == 0)
    return neg ? -0.0 : 0.0;
  int lead = 63 - __builtin_clzll(mant);       /* index of the top bit */
  int e = exp2 + lead;                         /* unbiased exponent */
  /* Every small-format value is a normal double: e is in [-160, 128]. */
  uint64_t frac = (mant << (52 - lead)) & ((1ull << 52) - 1);
  return bits_to_f64((uint64_t)neg << 63 | (uint64_t)(e + 1023) << 52 | frac);
}

double fp_to_double(FpFormat f, uint64_t bits) {
  if (f == FP_F64)
    return bits_to_f64(bits);
  if (f == FP_F32) {
    uint32_t u = (uint32_t)bits;
    float x;
    memcpy(&x, &u, sizeof x);
    return (double)x;
  }
  const FpInfo *fi = info_of(f);
  uint32_t v = (uint32_t)(bits & ((1u << fi->nbits) - 1));
  if (fi->spec == SPEC_E8M0)
    return v == 0xff ? make_nan(false) : ldexp(1.0, (int)v - 127);
  bool neg = v >> (fi->nbits - 1);
  uint32_t mag = v & ((1u << (fi->nbits - 1)) - 1);
  uint32_t expf = mag >> fi->mbits;
  uint32_t mant = mag & ((1u << fi->mbits) - 1);
  switch (fi->spec) {
  case SPEC_IEEE:
    if (expf == (1u << fi->ebits) - 1)
      return mant ? make_nan(neg) : (neg ? -INFINITY : INFINITY);
    break;
  case SPEC_FN:
    if (mag == fi->qnan)
      return make_nan(neg);
    break;
  case SPEC_FNUZ:
    if (v == 0x80)
      return make_nan(true);
    break;
  }
  if (expf == 0)                              /* zero or subnormal */
    return compose(neg, mant, 1 - fi->bias - fi->mbits);
  return compose(neg, (1u << fi->mbits) | mant,
                 (int)expf - fi->bias - fi->mbits);
}

/*
 * Encoding
 */

static uint64_t encode_nan(const FpInfo *fi, bool neg) {
  switch (fi->spec) {
  case SPEC_IEEE:
  case SPEC_FN:
    return fi->qnan | (uint64_t)neg << (fi->nbits - 1);
  case SPEC_NONE:
    return neg ? 0 : fi->qnan;                /* ml_dtypes: -(-0) / -0 */
  default:
    return fi->qnan;
  }
}

/* What an out-of-range magnitude (or infinity) becomes. */
static uint64_t encode_overflow(const FpInfo *fi, bool neg) {
  uint64_t s = (uint64_t)neg << (fi->nbits - 1);
  switch (fi->spec) {
  case SPEC_IEEE:
    return s | (uint64_t)((1u << fi->ebits) - 1) << fi->mbits;
  case SPEC_NONE:
    return s | fi->max_enc;
  default:
    return encode_nan(fi, neg);
  }
}

static uint64_t encode(const FpInfo *fi, double v) {
  uint64_t u = f64_to_bits(v);
  bool neg = u >> 63;
  if (isnan(v))
    return encode_nan(fi, neg);
  if (fi->spec == SPEC_E8M0 && (neg || v == 0))
    return fi->qnan;
  if (isinf(v))
    return encode_overflow(fi, neg);
  if (v == 0)
    return fi->spec == SPEC_FNUZ ? 0 : (uint64_t)neg << (fi->nbits - 1);

  /* |v| = m53 * 2^(e2 - 52) with the top bit of m53 at 52. */
  int e2 = (int)((u >> 52) & 0x7ff);
  uint64_t m53 = u & ((1ull << 52) - 1);
  if (e2 == 0) {                              /* subnormal double */
    int lead = 63 - __builtin_clzll(m53);
    m53 <<= 52 - lead;
    e2 = 1 - 1023 - (52 - lead);
  } else {
    m53 |= 1ull << 52;
    e2 -= 1023;
  }
  if (e2 + fi->bias > (1 << fi->ebits))      /* far beyond the largest */
    return encode_overflow(fi, neg);

  /* Round to a multiple of the quantum 2^q, ties to even. */
  int emin = 1 - fi->bias;
  int q = (e2 >= emin ? e2 : emin) - fi->mbits;
  int shift = q - (e2 - 52);                  /* >= 52 - mbits > 0 */
  uint64_t n;
  if (shift >= 54) {
    n = 0;                                    /* below half a quantum */
  } else {
    n = m53 >> shift;
    uint64_t rem = m53 & ((1ull << shift) - 1);
    uint64_t half = 1ull << (shift - 1);
    if (rem > half || (rem == half && (n & 1)))
      n++;
  }
  /* Normal: the implicit bit of n adds one to the biased exponent e2+bias-1,
   * and a carry out of the mantissa moves on to the next binade. */
  uint64_t enc = e2 >= emin ? ((uint64_t)(e2 + fi->bias - 1) << fi->mbits) + n : n;
  if (enc > fi->max_enc)
    return encode_overflow(fi, neg);
  if (enc == 0 && fi->spec == SPEC_FNUZ)
    return 0;
  return enc | (uint64_t)neg << (fi->nbits - 1);
}

uint64_t fp_from_double(FpFormat f, double v) {
  if (f == FP_F64)
    return f64_to_bits(v);
  if (f == FP_F32) {
    float x = (float)v;
    uint32_t u;
    memcpy(&u, &x, sizeof u);
    return u;
  }
  return encode(info_of(f), v);
}

/*
 * Shortest decimal
 */

/* Powers of ten: exact up to 10^27 in long double (5^27 < 2^64), correctly
 * rounded by the compiler beyond. */
static const long double p10l[] = {
   1e0L, 1e1L, 1e2L, 1e3L, 1e4L, 1e5L, 1e6L, 1e7L,
   1e8L, 1e9L, 1e10L, 1e11L, 1e12L, 1e13L, 1e14L, 1e15L,
   1e16L, 1e17L, 1e18L, 1e19L, 1e20L, 1e21L, 1e22L, 1e23L,
   1e24L, 1e25L, 1e26L, 1e27L, 1e28L, 1e29L, 1e30L, 1e31L,
   1e32L, 1e33L, 1e34L, 1e35L, 1e36L, 1e37L, 1e38L, 1e39L,
   1e40L, 1e41L, 1e42L, 1e43L, 1e44L, 1e45L, 1e46L, 1e47L,
   1e48L, 1e49L, 1e50L, 1e51L, 1e52L, 1e53L, 1e54L, 1e55L,
   1e56L, 1e57L, 1e58L, 1e59L, 1e60L, 1e61L, 1e62L, 1e63L,
   1e64L
};

/* x * 10^n with one rounding where 10^|n| is exact, a few ulps otherwise. */
static long double scale10(long double x, int n) {
  if (n >= 0)
    return n < (int)ARRAY_LEN(p10l) ? x * p10l[n] : x * powl(10.0L, n);
  return -n < (int)ARRAY_LEN(p10l) ? x / p10l[-n] : x * powl(10.0L, n);
}

/*
 * Does the decimal r * 10^k give back `bits` in format f when read with
 * strtod and fp_from_double?  Exact, and fast in the common cases:
 *  - Clinger's fast path (r < 2^53, |k| <= 22): both operands exact, one
 *    rounding, so the product or quotient is strtod's result;
 *  - formats of at most 32 bits: r * 10^k in long double is within 2^-61 of
 *    the decimal and strtod within 2^-53; the format's rounding boundaries
 *    are 2^-25 apart at least, so if c(1 - 2^-50) and c(1 + 2^-50) encode
 *    alike, the decimal encodes so too (encoding is monotonic);
 *  - otherwise strtod.
 */
static bool reads_back(FpFormat f, uint64_t bits, bool neg, uint64_t r, int k) {
  double d;
  if (r < (1ull << 53) && k >= -22 && k <= 22) {
    d = k >= 0 ? (double)r * (double)p10l[k] : (double)r / (double)p10l[-k];
    return fp_from_double(f, neg ? -d : d) == bits;
  }
  if (f != FP_F64 && r < (1ull << 60)) {
    long double c = scale10((long double)r, k);
    if (neg)
      c = -c;
    bool lo = fp_from_double(f, (double)(c * (1 - 0x1p-50L))) == bits;
    bool hi = fp_from_double(f, (double)(c * (1 + 0x1p-50L))) == bits;
    if (lo == hi)
      return lo;
  }
  char buf[48];
  snprintf(buf, sizeof buf, "%llue%d", (unsigned long long)r, k);
  d = strtod(buf, NULL);
  return fp_from_double(f, neg ? -d : d) == bits;
}

/* Significant digits: the value is r * 10^k, r has nd digits. */
typedef struct Digits {
  uint64_t r;
  int nd;
  int k;
} Digits;

static int ndigits(uint64_t r) {
  int n = 1;
  while (r >= 10) {
    r /= 10;
    n++;
  }
  return n;
}

/* Strip trailing zeros of r, keeping the value. */
static Digits normalize(uint64_t r, int k) {
  while (r != 0 && r % 10 == 0) {
    r /= 10;
    k++;
  }
  Digits d = {r, ndigits(r), k};
  return d;
}

/* Parse printf's "%.*e" output "d.ddde[+-]xx" (at most 19 digits). */
static Digits parse_e(const char *s, int *xp) {
  uint64_t r = 0;
  int nd = 0;
  for (; *s && *s != 'e'; s++) {
    if (*s >= '0' && *s <= '9') {
      r = r * 10 + (uint64_t)(*s - '0');
      nd++;
    }
  }
  int x = *s == 'e' ? atoi(s + 1) : 0;
  if (xp)
    *xp = x;
  Digits d = {r, nd, x - nd + 1};
  return d;
}

/* Exact but slow: the first precision whose printf rounding reads back. */
static Digits shortest_slow(FpFormat f, uint64_t bits, double a, bool neg) {
  char buf[64];
  for (int p = 1; p <= 17; p++) {
    snprintf(buf, sizeof buf, "%.*e", p - 1, a);
    Digits d = parse_e(buf, NULL);
    if (p == 17 || reads_back(f, bits, neg, d.r, d.k))
      return normalize(d.r, d.k);
  }
  unreachable();
}

/*
 * Formats of at most 32 bits.  Their values have at most 24 significant
 * bits.  The value is scaled once to max_digits10 digits in long double
 * (64 bits) and rounded to an integer t with the exact remainder; the
 * candidates for fewer digits are rounded from t and the remainder's sign.
 * The scaled value is exact when the power of ten is (|n| <= 27) and the
 * product fits 64 bits; otherwise it is within 2^-62 of the truth, which can
 * only mislead next to a rounding tie, and every candidate is checked by
 * reads_back anyway.  Where the accepting interval is lopsided (a binade's
 * first value, e8m0, the saturating maximum) the grid point on the far side
 * of the value is tried too.
 */
static bool shortest_small(const FpInfo *fi, FpFormat f, uint64_t bits,
                           double a, bool neg, Digits *out) {
  if (LDBL_MANT_DIG < 64)
    return false;                             /* not precise enough here */
  int magbits = fi->spec == SPEC_E8M0 ? fi->nbits : fi->nbits - 1;
  uint64_t mag = bits & ((1ull << magbits) - 1);
  bool lopsided = fi->spec == SPEC_E8M0 ||
                  (mag & ((1ull << fi->mbits) - 1)) == 0 ||
                  (fi->spec == SPEC_NONE && mag == fi->max_enc);
  int maxp = fi->max_digits10;
  uint64_t pmax = 1;                          /* 10^(maxp - 1) */
  for (int i = 1; i < maxp; i++)
    pmax *= 10;
  int e2;
  frexp(a, &e2);                              /* a in [2^(e2-1), 2^e2) */
  int x = (int)floor((e2 - 1) * 0.30102999566398119521); /* x or x - 1 */
  long double scaled = 0;
  long long t;
  for (int tries = 0; tries < 3; tries++) {
    scaled = scale10((long double)a, maxp - 1 - x);
    if (scaled >= 10.0L * (long double)pmax)
      x++;                                    /* a >= 10^(x+1) */
    else if (scaled < (long double)pmax)
      x--;
    else
      break;
  }
  if (scaled < (long double)pmax || scaled >= 10.0L * (long double)pmax)
    return false;
  t = llrintl(scaled);                        /* to nearest, ties even */
  long double rest = scaled - (long double)t;  /* exact, in [-0.5, 0.5] */
  /* Half the gaps to the neighbours, in units: a cheap first filter. */
  long double unit = scale10(1.0L, x - maxp + 1);
  double down = mag == 0 ? 0 : fabs(fp_to_double(f, mag - 1));
  double hl = (a - down) / 2, hu;
  if (fi->spec == SPEC_E8M0)
    hl = mag == 0 ? a : a / 4, hu = a / 2;
  else if (mag != fi->max_enc)
    hu = (fabs(fp_to_double(f, mag + 1)) - a) / 2;
  else
    hu = fi->spec == SPEC_NONE ? INFINITY : hl;
  long double lim_lo = (long double)hl / unit * (1 + 0x1p-20L);
  long double lim_hi = (long double)hu / unit * (1 + 0x1p-20L);
  uint64_t div = pmax;                        /* 10^(maxp - p) */
  for (int p = 1; p <= maxp; p++, div /= 10) {
    /* The value is (t + rest) units; round it to a multiple of div. */
    uint64_t r = (uint64_t)t / div, tail = (uint64_t)t % div;
    bool above;                               /* r * div > the value */
    if (div == 1) {
      above = rest < 0;                       /* llrintl rounded already */
    } else {
      uint64_t half = div / 2;
      bool up = tail > half ||
                (tail == half && (rest > 0 || (rest == 0 && (r & 1))));
      if (up)
        r++;
      above = up || (tail == 0 && rest < 0);
    }
    bool exact = tail == 0 && rest == 0;
    int k = x - p + 1;
    long double dist = (long double)r * (long double)div - scaled;
    if (dist <= lim_hi && -dist <= lim_lo && reads_back(f, bits, neg, r, k)) {
      *out = normalize(r, k);
      return true;
    }
    if (lopsided && !exact) {
      uint64_t r2 = above ? r - 1 : r + 1;
      long double dist2 = above ? dist - (long double)div : dist + (long double)div;
      if (r2 > 0 && dist2 <= lim_hi && -dist2 <= lim_lo &&
          reads_back(f, bits, neg, r2, k)) {
        *out = normalize(r2, k);
        return true;
      }
    }
  }
  return false;
}

/*
 * f64.  A decimal of at most 15 digits reads back to the double nearest it,
 * which prints back as it (DBL_DIG), so if a shortest form has at most 15
 * digits, rounding to 15 gives it; else try 16, else 17.  The 17 digits come
 * from one printf; 15 and 16 are rounded from them unless the dropped digits
 * are exactly 5000..., where only printf knows which way the value goes.
 */
static Digits shortest_f64(uint64_t bits, double a, bool neg) {
  if (a < DBL_MIN)
    return shortest_slow(FP_F64, bits, a, neg);
  char buf[64];
  int x;
  snprintf(buf, sizeof buf, "%.16e", a);
  Digits d17 = parse_e(buf, &x);
  uint64_t div = 100;
  for (int p = 15; p <= 16; p++, div /= 10) {
    uint64_t r = d17.r / div, rem = d17.r % div;
    if (rem == div / 2) {
      snprintf(buf, sizeof buf, "%.*e", p - 1, a);
      Digits dp = parse_e(buf, NULL);
      if (reads_back(FP_F64, bits, neg, dp.r, dp.k))
        return normalize(dp.r, dp.k);
      continue;
    }
    if (rem > div / 2)
      r++;
    if (reads_back(FP_F64, bits, neg, r, x - p + 1))
      return normalize(r, x - p + 1);
  }
  return normalize(d17.r, d17.k);
}

/* %g layout of the digits with precision `prec`. */
static void put_digits(StrBuf *b, bool neg, Digits d, int prec) {
  char ds[24];
  char out[64];
  int n = 0;
  uint64_t r = d.r;
  for (int i = d.nd - 1; i >= 0; i--, r /= 10)
    ds[i] = (char)('0' + r % 10);
  int x = d.k + d.nd - 1;                     /* exponent of the first digit */
  if (neg)
    out[n++] = '-';
  if (x < -4 || x >= prec) {
    out[n++] = ds[0];
    if (d.nd > 1) {
      out[n++] = '.';
      memcpy(out + n, ds + 1, (size_t)d.nd - 1);
      n += d.nd - 1;
    }
    int ax = x < 0 ? -x : x;
    out[n++] = 'e';
    out[n++] = x < 0 ? '-' : '+';
    if (ax >= 100)
      out[n++] = (char)('0' + ax / 100);
    out[n++] = (char)('0' + ax / 10 % 10);
    out[n++] = (char)('0' + ax % 10);
  } else if (x >= 0) {
    for (int i = 0; i <= x; i++)
      out[n++] = i < d.nd ? ds[i] : '0';
    if (d.nd > x + 1) {
      out[n++] = '.';
      memcpy(out + n, ds + x + 1, (size_t)(d.nd - x - 1));
      n += d.nd - x - 1;
    }
  } else {
    out[n++] = '0';
    out[n++] = '.';
    for (int i = 0; i < -x - 1; i++)
      out[n++] = '0';
    memcpy(out + n, ds, (size_t)d.nd);
    n += d.nd;
  }
  sb_putn(b, out, (size_t)n);
}

void fp_format(StrBuf *b, FpFormat f, uint64_t bits) {
  const FpInfo *fi = info_of(f);
  if (fi->nbits < 64)
    bits &= (1ull << fi->nbits) - 1;
  double v = fp_to_double(f, bits);
  bool neg = signbit(v);
  if (isnan(v)) {
    sb_puts(b, neg ? "-nan" : "nan");
    return;
  }
  if (isinf(v)) {
    sb_puts(b, neg ? "-inf" : "inf");
    return;
  }
  if (v == 0) {
    sb_puts(b, neg ? "-0" : "0");
    return;
  }
  double a = fabs(v);
  char buf[48];
  if (fi->nbits <= 16) {
    /* XLA prints the small formats with %.{max_digits10}g of the value. */
    snprintf(buf, sizeof buf, "%.*g", fi->max_digits10, v);
    sb_puts(b, buf);
    return;
  }
  /* f32 and f64: XLA tries %.6g (%.15g) and falls back to %.9g (%.17g)
   * when that does not read back.  For a normal number whose shortest form
   * has at most 6 (15) digits, the %.6g (%.15g) text is that form padded
   * with zeros that %g strips: the read-back interval is narrower than the
   * spacing of 6-digit (15-digit) decimals, so only one can lie in it.  That
   * common case uses the fast digit search; the rest uses printf as XLA does. */
  bool is32 = f == FP_F32;
  int dig = is32 ? FLT_DIG : DBL_DIG;
  if (a >= (is32 ? FLT_MIN : DBL_MIN)) {
    Digits d;
    if (!is32)
      d = shortest_f64(bits, a, neg);
    else if (!shortest_small(fi, f, bits, a, neg, &d))
      d = shortest_slow(f, bits, a, neg);
    if (d.nd <= dig) {
      put_digits(b, neg, d, dig);
      return;
    }
  }
  snprintf(buf, sizeof buf, "%.*g", dig, v);
  if (fp_from_double(f, strtod(buf, NULL)) != bits)
    snprintf(buf, sizeof buf, "%.*g", fi->max_digits10, v);
  sb_puts(b, buf);
}
