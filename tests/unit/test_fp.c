/*
 * test_fp.c - unit tests of lib/support/fp.c: decoding, rounding and the
 * shortest decimal form of every small float format.
 *
 * Expected values come from outside fp.c: a table generated once from
 * ml_dtypes (testdata/fp/fp_cases.inc, see gen_fp_cases.py), the compiler's
 * own _Float16 conversions for f16, the f32 bit layout for bf16, a brute-force
 * nearest-value search for random inputs, and hand-derived limits.
 */
#include <criterion/criterion.h>

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../../lib/support/support.h"

typedef struct FpDecodeCase {
  unsigned enc;
  double value;
} FpDecodeCase;

typedef struct FpEncodeCase {
  double in;
  unsigned enc;
} FpEncodeCase;

#include "../../testdata/fp/fp_cases.inc"

typedef struct SmallFormat {
  FpFormat f;
  const char *name;
  int nbits;
  const FpDecodeCase *dec;
  size_t ndec;
  const FpEncodeCase *enc;
  size_t nenc;
} SmallFormat;

#define SMALL(F, lower, bits)                                                  \
  {FP_##F, #lower, bits, decode_##lower, ARRAY_LEN(decode_##lower),            \
   encode_##lower, ARRAY_LEN(encode_##lower)}

static const SmallFormat small_formats[] = {
  SMALL(F8E5M2, f8e5m2, 8),
  SMALL(F8E4M3FN, f8e4m3fn, 8),
  SMALL(F8E4M3, f8e4m3, 8),
  SMALL(F8E3M4, f8e3m4, 8),
  SMALL(F8E4M3FNUZ, f8e4m3fnuz, 8),
  SMALL(F8E5M2FNUZ, f8e5m2fnuz, 8),
  SMALL(F8E4M3B11FNUZ, f8e4m3b11fnuz, 8),
  SMALL(F8E8M0FNU, f8e8m0fnu, 8),
  SMALL(F4E2M1FN, f4e2m1fn, 4),
};

static uint64_t dbits(double d) {
  uint64_t u;
  memcpy(&u, &d, sizeof u);
  return u;
}

static double bitsd(uint64_t u) {
  double d;
  memcpy(&d, &u, sizeof d);
  return d;
}

/* Same value, same sign; any NaN equals a NaN of the same sign. */
static bool same_double(double a, double b) {
  if (isnan(a) || isnan(b))
    return isnan(a) && isnan(b) && signbit(a) == signbit(b);
  return dbits(a) == dbits(b);
}

/* A deterministic generator (xorshift64*). */
static uint64_t rng_state = 0x9e3779b97f4a7c15ull;
static uint64_t rng_next(void) {
  rng_state ^= rng_state >> 12;
  rng_state ^= rng_state << 25;
  rng_state ^= rng_state >> 27;
  return rng_state * 0x2545f4914f6cdd1dull;
}

/*
 * Decoding and encoding against the ml_dtypes table
 */

Test(fp_small, decode_every_encoding) {
  for (size_t i = 0; i < ARRAY_LEN(small_formats); i++) {
    const SmallFormat *s = &small_formats[i];
    cr_assert_eq(s->ndec, (size_t)1 << s->nbits);
    for (size_t j = 0; j < s->ndec; j++) {
      double got = fp_to_double(s->f, s->dec[j].enc);
      cr_assert(same_double(got, s->dec[j].value),
                "%s 0x%02x: got %a want %a", s->name, s->dec[j].enc, got,
                s->dec[j].value);
    }
  }
}

Test(fp_small, encode_table) {
  for (size_t i = 0; i < ARRAY_LEN(small_formats); i++) {
    const SmallFormat *s = &small_formats[i];
    for (size_t j = 0; j < s->nenc; j++) {
      uint64_t got = fp_from_double(s->f, s->enc[j].in);
      cr_assert_eq(got, s->enc[j].enc, "%s from %a: got 0x%02x want 0x%02x",
                   s->name, s->enc[j].in, (unsigned)got, s->enc[j].enc);
    }
  }
}

/* Every encoding re-encodes to itself; NaNs to the format's NaN. */
Test(fp_small, round_trip_every_encoding) {
  for (size_t i = 0; i < ARRAY_LEN(small_formats); i++) {
    const SmallFormat *s = &small_formats[i];
    uint64_t canon_nan = fp_from_double(s->f, NAN);
    uint64_t canon_neg_nan = fp_from_double(s->f, -NAN);
    for (uint64_t e = 0; e < ((uint64_t)1 << s->nbits); e++) {
      double v = fp_to_double(s->f, e);
      uint64_t back = fp_from_double(s->f, v);
      if (isnan(v))
        cr_assert_eq(back, signbit(v) ? canon_neg_nan : canon_nan, "%s 0x%02x",
                     s->name, (unsigned)e);
      else
        cr_assert_eq(back, e, "%s 0x%02x -> %a -> 0x%02x", s->name,
                     (unsigned)e, v, (unsigned)back);
    }
  }
}

/* Ties between neighbours go to the even encoding; a double ulp either side
 * goes to the nearer one.  (Checked here on doubles closer to the midpoint
 * than any float, which the float32-based table cannot show.) */
Test(fp_small, ties_to_even) {
  for (size_t i = 0; i < ARRAY_LEN(small_formats); i++) {
    const SmallFormat *s = &small_formats[i];
    if (s->f == FP_F8E8M0FNU)
      continue;                               /* no mantissa: ties go up */
    uint64_t half = (uint64_t)1 << (s->nbits - 1);
    for (uint64_t e = 0; e + 1 < half; e++) {
      double lo = fp_to_double(s->f, e), hi = fp_to_double(s->f, e + 1);
      if (!isfinite(lo) || !isfinite(hi))
        continue;
      double mid = (lo + hi) / 2;             /* exact */
      uint64_t even = (e & 1) ? e + 1 : e;
      cr_assert_eq(fp_from_double(s->f, mid), even, "%s mid %a", s->name, mid);
      cr_assert_eq(fp_from_double(s->f, nextafter(mid, 0)), e);
      cr_assert_eq(fp_from_double(s->f, nextafter(mid, INFINITY)), e + 1);
      if (s->f != FP_F8E4M3FNUZ && s->f != FP_F8E5M2FNUZ &&
          s->f != FP_F8E4M3B11FNUZ) {
        uint64_t neg = (uint64_t)1 << (s->nbits - 1);
        cr_assert_eq(fp_from_double(s->f, -mid), even | neg);
      } else if (e > 0 || even > 0) {
        cr_assert_eq(fp_from_double(s->f, -mid), even ? (even | 0x80) : 0);
      }
    }
  }
}

/* e8m0: between 2^e and 2^(e+1) the nearer in value; 1.5 * 2^e goes up. */
Test(fp_small, e8m0_rounding) {
  for (int e = -126; e < 127; e++) {
    uint64_t enc = (uint64_t)(e + 127);
    cr_assert_eq(fp_from_double(FP_F8E8M0FNU, ldexp(1, e)), enc);
    cr_assert_eq(fp_from_double(FP_F8E8M0FNU, ldexp(1.49, e)), enc);
    cr_assert_eq(fp_from_double(FP_F8E8M0FNU, ldexp(1.5, e)), enc + 1);
    cr_assert_eq(fp_from_double(FP_F8E8M0FNU, ldexp(0.76, e)), enc);
  }
  cr_assert_eq(fp_from_double(FP_F8E8M0FNU, 0x1p-127), 0x00);
  cr_assert_eq(fp_from_double(FP_F8E8M0FNU, 0x1p-128), 0x00);
  cr_assert_eq(fp_from_double(FP_F8E8M0FNU, 1e-300), 0x00);
  cr_assert_eq(fp_from_double(FP_F8E8M0FNU, 0x1.4p-127), 0x01);
  cr_assert_eq(fp_from_double(FP_F8E8M0FNU, 0x1p127), 0xfe);
  cr_assert_eq(fp_from_double(FP_F8E8M0FNU, 0x1.8p127), 0xff);
  cr_assert_eq(fp_from_double(FP_F8E8M0FNU, 0.0), 0xff);
  cr_assert_eq(fp_from_double(FP_F8E8M0FNU, -1.0), 0xff);
  cr_assert_eq(fp_from_double(FP_F8E8M0FNU, INFINITY), 0xff);
}

/* Limits derived by hand from each format's definition. */
typedef struct Limit {
  FpFormat f;
  double value;
  uint64_t enc;
} Limit;

Test(fp_small, hand_derived_limits) {
  static const Limit limits[] = {
    {FP_F16, 65504, 0x7bff}, {FP_F16, 0x1p-14, 0x0400},
    {FP_F16, 0x1p-24, 0x0001}, {FP_F16, -2, 0xc000}, {FP_F16, 1, 0x3c00},
    {FP_BF16, 0x1.fep127, 0x7f7f}, {FP_BF16, 0x1p-126, 0x0080},
    {FP_BF16, 0x1p-133, 0x0001}, {FP_BF16, 1, 0x3f80},
    {FP_F8E5M2, 57344, 0x7b}, {FP_F8E5M2, 0x1p-14, 0x04},
    {FP_F8E5M2, 0x1p-16, 0x01}, {FP_F8E5M2, 1, 0x3c},
    {FP_F8E4M3FN, 448, 0x7e}, {FP_F8E4M3FN, 0x1p-6, 0x08},
    {FP_F8E4M3FN, 0x1p-9, 0x01}, {FP_F8E4M3FN, -448, 0xfe},
    {FP_F8E4M3, 240, 0x77}, {FP_F8E4M3, 0x1p-6, 0x08},
    {FP_F8E4M3, 0x1p-9, 0x01},
    {FP_F8E3M4, 15.5, 0x6f}, {FP_F8E3M4, 0.25, 0x10},
    {FP_F8E3M4, 0x1p-6, 0x01},
    {FP_F8E4M3FNUZ, 240, 0x7f}, {FP_F8E4M3FNUZ, 0x1p-7, 0x08},
    {FP_F8E4M3FNUZ, 0x1p-10, 0x01}, {FP_F8E4M3FNUZ, -240, 0xff},
    {FP_F8E5M2FNUZ, 57344, 0x7f}, {FP_F8E5M2FNUZ, 0x1p-15, 0x04},
    {FP_F8E5M2FNUZ, 0x1p-17, 0x01},
    {FP_F8E4M3B11FNUZ, 30, 0x7f}, {FP_F8E4M3B11FNUZ, 0x1p-10, 0x08},
    {FP_F8E4M3B11FNUZ, 0x1p-13, 0x01},
    {FP_F8E8M0FNU, 0x1p127, 0xfe}, {FP_F8E8M0FNU, 0x1p-127, 0x00},
    {FP_F8E8M0FNU, 1, 0x7f},
    {FP_F4E2M1FN, 6, 0x7}, {FP_F4E2M1FN, 1, 0x2}, {FP_F4E2M1FN, 0.5, 0x1},
    {FP_F4E2M1FN, -6, 0xf}, {FP_F4E2M1FN, 3, 0x5},
  };
  for (size_t i = 0; i < ARRAY_LEN(limits); i++) {
    const Limit *l = &limits[i];
    cr_assert_eq(fp_from_double(l->f, l->value), l->enc, "case %zu", i);
    cr_assert_eq(fp_to_double(l->f, l->enc), l->value, "case %zu", i);
  }
}

Test(fp_small, specials) {
  /* Overflow and infinity. */
  cr_assert_eq(fp_from_double(FP_F16, 65520), 0x7c00);  /* tie -> inf */
  cr_assert_eq(fp_from_double(FP_F16, 65519.99), 0x7bff);
  cr_assert_eq(fp_from_double(FP_F16, -1e300), 0xfc00);
  cr_assert_eq(fp_from_double(FP_F8E4M3FN, 464), 0x7e);  /* tie -> even */
  cr_assert_eq(fp_from_double(FP_F8E4M3FN, 465), 0x7f);  /* NaN */
  cr_assert_eq(fp_from_double(FP_F8E4M3FN, -1e9), 0xff);
  cr_assert_eq(fp_from_double(FP_F8E4M3FN, INFINITY), 0x7f);
  cr_assert_eq(fp_from_double(FP_F8E4M3FNUZ, 1e9), 0x80);
  cr_assert_eq(fp_from_double(FP_F8E4M3FNUZ, -INFINITY), 0x80);
  cr_assert_eq(fp_from_double(FP_F4E2M1FN, 1e9), 0x7);
  cr_assert_eq(fp_from_double(FP_F4E2M1FN, -INFINITY), 0xf);
  /* NaNs. */
  cr_assert_eq(fp_from_double(FP_F16, NAN), 0x7e00);
  cr_assert_eq(fp_from_double(FP_F16, -NAN), 0xfe00);
  cr_assert_eq(fp_from_double(FP_BF16, NAN), 0x7fc0);
  cr_assert_eq(fp_from_double(FP_F8E5M2, -NAN), 0xfe);
  cr_assert_eq(fp_from_double(FP_F8E4M3, NAN), 0x7c);
  cr_assert_eq(fp_from_double(FP_F8E3M4, NAN), 0x78);
  cr_assert_eq(fp_from_double(FP_F8E4M3FN, -NAN), 0xff);
  cr_assert_eq(fp_from_double(FP_F8E5M2FNUZ, -NAN), 0x80);
  cr_assert_eq(fp_from_double(FP_F8E8M0FNU, -NAN), 0xff);
  cr_assert_eq(fp_from_double(FP_F4E2M1FN, NAN), 0x8);
  cr_assert_eq(fp_from_double(FP_F4E2M1FN, -NAN), 0x0);
  /* Zeros. */
  cr_assert_eq(fp_from_double(FP_F8E4M3FNUZ, -0.0), 0x00);
  cr_assert_eq(fp_from_double(FP_F8E4M3FNUZ, -1e-30), 0x00);
  cr_assert_eq(fp_from_double(FP_F8E4M3FN, -1e-30), 0x80);
  cr_assert_eq(fp_from_double(FP_F16, -0.0), 0x8000);
  cr_assert(isnan(fp_to_double(FP_F8E4M3FNUZ, 0x80)));
  cr_assert(signbit(fp_to_double(FP_F8E4M3FNUZ, 0x80)));
  /* Bits above the format's width are ignored when decoding. */
  cr_assert_eq(fp_to_double(FP_F4E2M1FN, 0xf2), 1.0);
  /* f32 and f64 pass through. */
  cr_assert_eq(fp_from_double(FP_F32, 1.0), 0x3f800000);
  cr_assert_eq(fp_from_double(FP_F32, 1e300), 0x7f800000);
  cr_assert_eq(fp_from_double(FP_F64, -2.0), 0xc000000000000000ull);
  cr_assert_eq(fp_to_double(FP_F32, 0x3fc00000), 1.5);
  cr_assert_eq(fp_to_double(FP_F64, 0x3ff8000000000000ull), 1.5);
}

Test(fp_small, has_inf_nan) {
  static const FpFormat with_inf[] = {FP_F16, FP_BF16, FP_F8E5M2, FP_F8E4M3,
                                      FP_F8E3M4, FP_F32, FP_F64};
  static const FpFormat no_inf[] = {FP_F8E4M3FN, FP_F8E4M3FNUZ, FP_F8E5M2FNUZ,
                                    FP_F8E4M3B11FNUZ, FP_F8E8M0FNU};
  for (size_t i = 0; i < ARRAY_LEN(with_inf); i++)
    cr_assert(fp_has_inf(with_inf[i]) && fp_has_nan(with_inf[i]));
  for (size_t i = 0; i < ARRAY_LEN(no_inf); i++)
    cr_assert(!fp_has_inf(no_inf[i]) && fp_has_nan(no_inf[i]));
  cr_assert(!fp_has_inf(FP_F4E2M1FN) && !fp_has_nan(FP_F4E2M1FN));
}

/*
 * f16 against the compiler's _Float16, bf16 against the f32 layout
 */

#ifdef __FLT16_MAX__
static uint16_t f16_bits(_Float16 h) {
  uint16_t u;
  memcpy(&u, &h, sizeof u);
  return u;
}

static _Float16 f16_from_bits(uint16_t u) {
  _Float16 h;
  memcpy(&h, &u, sizeof h);
  return h;
}

Test(fp_f16, all_encodings_and_ties) {
  for (uint32_t e = 0; e < 0x10000; e++) {
    double want = (double)f16_from_bits((uint16_t)e);
    double got = fp_to_double(FP_F16, e);
    cr_assert(same_double(got, want), "0x%04x: %a vs %a", e, got, want);
    uint64_t back = fp_from_double(FP_F16, got);
    if (isnan(got))
      cr_assert_eq(back, (e & 0x8000) | 0x7e00);
    else
      cr_assert_eq(back, e, "0x%04x", e);
    /* Midpoint to the next encoding of the same sign, and either side. */
    if ((e & 0x7fff) < 0x7bff) {
      double next = fp_to_double(FP_F16, e + 1);
      double mid = (got + next) / 2;
      double pts[3] = {mid, nextafter(mid, 0), nextafter(mid, 2 * mid)};
      for (int k = 0; k < 3; k++)
        cr_assert_eq(fp_from_double(FP_F16, pts[k]),
                     f16_bits((_Float16)pts[k]), "%a", pts[k]);
    }
  }
}

Test(fp_f16, random_doubles) {
  for (int i = 0; i < 1000000; i++) {
    /* Exponents around f16's range, random 52-bit mantissas. */
    uint64_t r = rng_next();
    int e = (int)(r % 50) - 30;
    double v = ldexp(1.0 + (double)(rng_next() >> 12) * 0x1p-52, e);
    if (r & (1ull << 40))
      v = -v;
    cr_assert_eq(fp_from_double(FP_F16, v), f16_bits((_Float16)v), "%a", v);
  }
}
#endif

Test(fp_bf16, all_encodings_and_ties) {
  for (uint32_t e = 0; e < 0x10000; e++) {
    uint32_t fb = e << 16;
    float f;
    memcpy(&f, &fb, sizeof f);
    double got = fp_to_double(FP_BF16, e);
    cr_assert(same_double(got, (double)f), "0x%04x", e);
    uint64_t back = fp_from_double(FP_BF16, got);
    if (isnan(got)) {
      cr_assert_eq(back, (e & 0x8000) | 0x7fc0);
      continue;
    }
    cr_assert_eq(back, e, "0x%04x", e);
    if ((e & 0x7fff) < 0x7f7f) {
      /* The midpoint is the f32 with the next bit set: exact. */
      uint32_t mb = fb | 0x8000;
      float m;
      memcpy(&m, &mb, sizeof m);
      double mid = (double)m;
      uint64_t even = (e & 1) ? e + 1 : e;
      cr_assert_eq(fp_from_double(FP_BF16, mid), even, "0x%04x", e);
      cr_assert_eq(fp_from_double(FP_BF16, nextafter(mid, 0)), e);
      cr_assert_eq(fp_from_double(FP_BF16, nextafter(mid, 2 * mid)), e + 1);
    }
  }
  cr_assert_eq(fp_from_double(FP_BF16, 0x1.ffp127), 0x7f80);   /* tie: inf */
  cr_assert_eq(fp_from_double(FP_BF16, 0x1.fefffp127), 0x7f7f);
}

/* Brute force: the nearest finite value among all positive encodings (ties
 * to the even encoding), for inputs inside the finite range. */
static uint64_t nearest_brute(FpFormat f, int nbits, double v) {
  uint64_t best = 0;
  double bestd = INFINITY;
  uint64_t half = (uint64_t)1 << (nbits - 1);
  double a = fabs(v);
  for (uint64_t e = 0; e < half; e++) {
    double x = fp_to_double(f, e);
    if (!isfinite(x))
      continue;
    double d = fabs(a - x);
    if (d < bestd || (d == bestd && !(e & 1))) {
      best = e;
      bestd = d;
    }
  }
  return signbit(v) ? best | half : best;
}

Test(fp_small, random_against_brute_force) {
  static const FpFormat fmts[] = {FP_F8E5M2, FP_F8E4M3FN, FP_F8E4M3,
                                  FP_F8E3M4, FP_F4E2M1FN};
  static const int bits[] = {8, 8, 8, 8, 4};
  static const double maxv[] = {57344, 448, 240, 15.5, 6};
  for (size_t i = 0; i < ARRAY_LEN(fmts); i++) {
    for (int n = 0; n < 20000; n++) {
      double v = ((double)(rng_next() >> 11) * 0x1p-53) * maxv[i];
      v = ldexp(v, -(int)(rng_next() % 12));
      if (n & 1)
        v = -v;
      cr_assert_eq(fp_from_double(fmts[i], v), nearest_brute(fmts[i], bits[i], v),
                   "format %d value %a", (int)fmts[i], v);
    }
  }
}

/*
 * fp_format
 */

static char *fmt(FpFormat f, uint64_t bits) {
  StrBuf b;
  sb_init(&b);
  fp_format(&b, f, bits);
  return sb_detach(&b);
}

static void expect_fmt(FpFormat f, double v, const char *want) {
  char *got = fmt(f, fp_from_double(f, v));
  cr_expect_str_eq(got, want, "format %d value %a", (int)f, v);
  free(got);
}

Test(fp_format, examples) {
  expect_fmt(FP_F32, 1, "1");
  expect_fmt(FP_F32, 0.1, "0.1");
  expect_fmt(FP_F32, -2.5, "-2.5");
  expect_fmt(FP_F32, 1e10, "1e+10");
  expect_fmt(FP_F32, INFINITY, "inf");
  expect_fmt(FP_F32, -INFINITY, "-inf");
  expect_fmt(FP_F32, NAN, "nan");
  expect_fmt(FP_F32, -NAN, "-nan");
  expect_fmt(FP_F32, 0, "0");
  expect_fmt(FP_F32, -0.0, "-0");
  expect_fmt(FP_F32, 1e-6, "1e-06");
  expect_fmt(FP_F32, 0.0001, "0.0001");
  expect_fmt(FP_F32, 123456, "123456");
  expect_fmt(FP_F32, 1e6, "1e+06");           /* as XLA's %.6g */
  expect_fmt(FP_F32, 1234567, "1234567");     /* %.9g fallback */
  expect_fmt(FP_F32, 3.14159274, "3.14159274");  /* %.9g fallback */
  expect_fmt(FP_F32, FLT_MAX, "3.40282347e+38");
  expect_fmt(FP_F32, 0x1p-149, "1.4013e-45");   /* %.6g reads back */
  expect_fmt(FP_F32, 16777216, "16777216");
  expect_fmt(FP_F64, 0.1, "0.1");
  expect_fmt(FP_F64, 1e10, "10000000000");    /* as XLA's %.15g */
  expect_fmt(FP_F64, 1e15, "1e+15");
  expect_fmt(FP_F64, 0.1 + 0.2, "0.30000000000000004");
  expect_fmt(FP_F64, DBL_MAX, "1.7976931348623157e+308");
  expect_fmt(FP_F64, 5e-324, "4.94065645841247e-324"); /* %.15g reads back */
  expect_fmt(FP_F64, 1.0 / 3, "0.33333333333333331"); /* %.17g */
  expect_fmt(FP_F16, 65504, "65504");     /* %.5g, as XLA */
  expect_fmt(FP_F16, 2048, "2048");
  expect_fmt(FP_F16, 0.1, "0.099976");
  expect_fmt(FP_F16, 0x1p-24, "5.9605e-08");
  expect_fmt(FP_BF16, 0.62109375, "0.6211");  /* %.4g */
  expect_fmt(FP_BF16, 39.25, "39.25");
  expect_fmt(FP_BF16, 1e10, "9.999e+09");
  expect_fmt(FP_F8E4M3FN, 448, "448");
  expect_fmt(FP_F8E4M3FN, 0x1p-9, "0.00195");
  expect_fmt(FP_F8E5M2, 57344, "5.7e+04");
  expect_fmt(FP_F8E8M0FNU, 0x1p127, "1.7e+38");
  expect_fmt(FP_F8E8M0FNU, 1, "1");
  expect_fmt(FP_F8E8M0FNU, NAN, "nan");
  expect_fmt(FP_F4E2M1FN, 6, "6");
  expect_fmt(FP_F4E2M1FN, -0.5, "-0.5");
  expect_fmt(FP_F8E4M3FNUZ, NAN, "-nan");     /* ml_dtypes: 0x80 is -nan */
}

static bool decimal_reads_back(FpFormat f, uint64_t bits, const char *s) {
  return fp_from_double(f, strtod(s, NULL)) == bits;
}

/* The output reads back and is exactly what XLA's RoundTripFpToString
 * prints: %.{max_digits10}g for the small formats, %.6g/%.15g falling back
 * to %.9g/%.17g for f32/f64. */
static void check_xla_text(FpFormat f, uint64_t bits) {
  double v = fp_to_double(f, bits);
  if (isnan(v))
    return;
  char *s = fmt(f, bits);
  cr_assert(decimal_reads_back(f, bits, s), "format %d bits 0x%llx: '%s'",
            (int)f, (unsigned long long)bits, s);
  char want[64];
  if (f == FP_F32 || f == FP_F64) {
    snprintf(want, sizeof want, "%.*g", f == FP_F32 ? 6 : 15, v);
    if (!decimal_reads_back(f, bits, want))
      snprintf(want, sizeof want, "%.*g", f == FP_F32 ? 9 : 17, v);
  } else {
    /* max_digits10 = ceil(1 + p * log10(2)), p the significand's bits. */
    int p = 0;
    switch (f) {
    case FP_F16: p = 11; break;
    case FP_BF16: p = 8; break;
    case FP_F8E5M2: case FP_F8E5M2FNUZ: p = 3; break;
    case FP_F8E3M4: p = 5; break;
    case FP_F8E8M0FNU: p = 1; break;
    case FP_F4E2M1FN: p = 2; break;
    default: p = 4; break; /* the e4m3 family */
    }
    int md10 = (int)ceil(1 + p * log10(2.0));
    snprintf(want, sizeof want, "%.*g", md10, v);
  }
  cr_assert_str_eq(s, want, "format %d bits 0x%llx", (int)f,
                   (unsigned long long)bits);
  free(s);
}

Test(fp_format, xla_text_random_f32_f64) {
  /* (Run once with 2M f32, every 5th subnormal, the neighbourhoods of all
   * powers of two and ten, and 500k f64: no failure.) */
  for (int i = 0; i < 60000; i++) {
    uint32_t u = (uint32_t)rng_next();
    check_xla_text(FP_F32, u);
  }
  for (int i = 0; i < 15000; i++)
    check_xla_text(FP_F64, rng_next());
  /* Subnormals and edges. */
  check_xla_text(FP_F32, 1);
  check_xla_text(FP_F32, 0x007fffff);
  check_xla_text(FP_F32, 0x00800000);
  check_xla_text(FP_F64, 1);
  check_xla_text(FP_F64, 0x000fffffffffffffull);
}

/* Where XLA's first try (%.6g for f32, %.15g for f64) reads back, our text
 * is the same string. */
Test(fp_format, matches_xla_when_short) {
  int same = 0;
  for (int i = 0; i < 200000; i++) {
    float f;
    uint32_t u;
    if (i & 1) {
      /* Short decimals: d.ddd * 10^k. */
      double d = (double)(rng_next() % 100000) * pow(10, (int)(rng_next() % 20) - 10);
      f = (float)d;
      memcpy(&u, &f, sizeof u);
    } else {
      u = (uint32_t)rng_next();
      memcpy(&f, &u, sizeof f);
    }
    if (!isfinite(f) || fabsf(f) < FLT_MIN)
      continue;
    char xla[64];
    snprintf(xla, sizeof xla, "%.6g", (double)f);
    if (strtof(xla, NULL) != f)
      continue;
    char *ours = fmt(FP_F32, u);
    cr_assert_str_eq(ours, xla);
    free(ours);
    same++;
  }
  cr_assert_gt(same, 50000);
  for (int i = 0; i < 100000; i++) {
    double d = (double)(rng_next() % 1000000000) * pow(10, (int)(rng_next() % 40) - 20);
    char xla[64];
    snprintf(xla, sizeof xla, "%.15g", d);
    if (strtod(xla, NULL) != d || d == 0)
      continue;
    char *ours = fmt(FP_F64, dbits(d));
    cr_assert_str_eq(ours, xla);
    free(ours);
  }
  (void)bitsd;
}
