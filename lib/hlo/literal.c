/*
 * literal.c - constant values: storage, typed access with XLA's conversion
 * rules, and XLA's text form.
 *
 * Storage.  An array literal holds shape_elements() elements in logical
 * row-major order, et_bytes() bytes each, little-endian, the raw bits kept
 * exactly (NaN payloads and -0 survive).  Like XLA's literals (ml_dtypes'
 * intN and float4), a sub-byte type takes one byte whose low bits hold the
 * value; the upper bits are written as zero and ignored when read.  pred is
 * one byte, 0 or 1 (any non-zero byte reads as true).  Complex elements are
 * (real, imag) pairs of f32 or f64.  A tuple literal holds one literal per
 * element.  An elided literal ({...} in the text) has no data and prints as
 * {...}; what it stands for when run is literal_elided_fill's placeholder.
 *
 * Elided values.  XLA's parser (ParseDenseLiteral) does not refuse {...}: it
 * fills the literal with a deterministic placeholder, and xhloc fills it the
 * same way, so that both run such a module alike.  The literal's bytes are
 * taken as u32 words (little-endian) that count up 0, 1, 2, ... through the
 * elided literals of the module in text order; when the byte size is not a
 * multiple of 4, its last size%4 counter values come from a second, 8-bit
 * counter and are written from byte size/4 on (XLA's index, which lands
 * inside the words, not after them; the bytes past the words stay zero).
 * pred keeps only bit 0 of each byte.  XLA's counters live for the whole
 * process; xhloc's restart with each module, which is what XLA does for a
 * module parsed first in a fresh process.
 *
 * Conversions on store follow XLA's convert (LiteralBase::Convert, which is
 * also what the runtime does):
 *   float -> float     rounding to nearest even, via fp_from_double;
 *   float -> int       truncation toward zero, saturating at the type's
 *                      bounds, NaN -> 0;
 *   float -> pred      v != 0 (NaN is true);
 *   int -> int         two's-complement wrap to the type's width;
 *   int -> float       one rounding to nearest even (64-bit values beyond
 *                      2^53 are rounded to odd first, so nothing is
 *                      rounded twice);
 *   complex -> real    the real part.
 *
 * Text.  literal_print writes what XLA's HloConstantInstruction prints
 * (LiteralBase::PrintWithoutShapeOneline): a scalar bare; an array in
 * nested braces with XLA's spacing, e.g. {1, 2}, { { 1, 2 }, { 3, 4 } },
 * "/\*i0=1*\/" markers on inner dimensions when the rank is above 3, pred
 * elements of arrays as 0/1; a tuple "( a, b )"; a token "token".
 * Floats use fp_format (shortest round-trip); a NaN whose payload is not
 * the quiet bit alone prints as nan(0x<payload>) in formats that have
 * payloads (f16, bf16, f32, f64, f8e5m2, f8e4m3, f8e3m4), as XLA does.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "hlo.h"

Literal *literal_new(Arena *a, Shape *shape) {
  if (!shape)
    return NULL;
  Literal *l = ARENA_NEW(a, Literal);
  l->shape = shape;
  if (shape->et == ET_TUPLE) {
    l->ntuple = shape->ntuple;
    l->tuple = ARENA_ARRAY(a, Literal *, shape->ntuple);
    for (int i = 0; i < shape->ntuple; i++) {
      l->tuple[i] = literal_new(a, shape->tuple[i]);
      if (!l->tuple[i])
        return NULL;
    }
    return l;
  }
  if (!et_is_array(shape->et))
    return l;                                 /* token, opaque: no data */
  int64_t n = shape_elements(shape);
  int64_t eb = et_bytes(shape->et);
  if (n < 0 || (eb > 0 && n > INT64_MAX / eb) || (uint64_t)(n * eb) > SIZE_MAX)
    return NULL;
  if (n * eb > 0)
    l->data = arena_alloc(a, (size_t)(n * eb));
  return l;
}

/*
 * Raw element access
 */

static ElemType lit_et(const Literal *l) { return l->shape->et; }

/* nb bytes at p as a little-endian integer, and back. */
static uint64_t get_le(const uint8_t *p, int nb) {
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
  switch (nb) {
  case 1: return p[0];
  case 2: { uint16_t v; memcpy(&v, p, 2); return v; }
  case 4: { uint32_t v; memcpy(&v, p, 4); return v; }
  case 8: { uint64_t v; memcpy(&v, p, 8); return v; }
  }
#endif
  uint64_t v = 0;
  for (int k = nb - 1; k >= 0; k--)
    v = v << 8 | p[k];
  return v;
}

static void put_le(uint8_t *p, int nb, uint64_t v) {
  for (int k = 0; k < nb; k++, v >>= 8)
    p[k] = (uint8_t)v;
}

static uint64_t load(const Literal *l, int64_t i) {
  if (!l->data)
    return 0;
  int nb = et_bytes(lit_et(l));
  return get_le(l->data + i * nb, nb);
}

static void store(Literal *l, int64_t i, uint64_t v) {
  if (!l->data)
    return;
  int nb = et_bytes(lit_et(l));
  put_le(l->data + i * nb, nb, v);
}

/* The low `bits` bits of v. */
static uint64_t low_bits(uint64_t v, int bits) {
  return bits >= 64 ? v : v & ((1ull << bits) - 1);
}

/* The low `bits` bits of v, sign-extended. */
static int64_t sign_extend(uint64_t v, int bits) {
  if (bits >= 64)
    return (int64_t)v;
  uint64_t m = 1ull << (bits - 1);
  v = low_bits(v, bits);
  return (int64_t)((v ^ m) - m);
}

/* Raw bits of part `part` (0 real, 1 imaginary) of complex element i. */
static uint64_t load_part(const Literal *l, int64_t i, int part) {
  if (!l->data)
    return 0;
  int half = et_bytes(lit_et(l)) / 2;
  return get_le(l->data + (i * 2 + part) * half, half);
}

static void store_part(Literal *l, int64_t i, int part, uint64_t v) {
  if (!l->data)
    return;
  int half = et_bytes(lit_et(l)) / 2;
  put_le(l->data + (i * 2 + part) * half, half, v);
}

static FpFormat part_format(ElemType t) {
  return t == ET_C64 ? FP_F32 : FP_F64;
}

/*
 * Conversions
 */

/* float -> signed integer of `bits` bits: truncate, saturate, NaN -> 0. */
static int64_t f64_to_sint(double v, int bits) {
  if (isnan(v))
    return 0;
  int64_t hi = bits >= 64 ? INT64_MAX : (int64_t)((1ull << (bits - 1)) - 1);
  int64_t lo = -hi - 1;
  if (v >= (double)hi)
    return hi;
  if (v <= (double)lo)
    return lo;
  return (int64_t)v;                          /* in range: truncates */
}

/* float -> unsigned integer of `bits` bits: truncate, saturate, NaN -> 0. */
static uint64_t f64_to_uint(double v, int bits) {
  if (isnan(v) || v <= 0)
    return 0;
  uint64_t hi = bits >= 64 ? UINT64_MAX : (1ull << bits) - 1;
  if (v >= (double)hi)
    return hi;
  return (uint64_t)v;
}

/* u as a double that rounds like u itself to any format of at most 51
 * significant bits: exact below 2^53, else rounded to odd at 53 bits. */
static double u64_to_double_odd(uint64_t u) {
  if (u < (1ull << 53))
    return (double)u;
  int shift = 64 - 53 - __builtin_clzll(u);   /* bits to drop, 1..11 */
  uint64_t kept = u >> shift;
  if (u & ((1ull << shift) - 1))
    kept |= 1;                                /* sticky into the last bit */
  return ldexp((double)kept, shift);
}

/* Store an integer value (given as sign and magnitude) into a float
 * element with a single rounding. */
static void store_int_as_float(Literal *l, int64_t i, bool neg, uint64_t mag) {
  ElemType t = lit_et(l);
  FpFormat f = et_fp_format(t);
  uint64_t bits;
  if (f == FP_F32) {
    float x = (float)mag;                     /* one rounding */
    uint32_t u;
    memcpy(&u, &x, sizeof u);
    bits = u | (neg ? 0x80000000u : 0);
  } else if (f == FP_F64) {
    double d = (double)mag;
    memcpy(&bits, &d, sizeof bits);
    bits |= neg ? 1ull << 63 : 0;
  } else {
    double d = u64_to_double_odd(mag);
    bits = fp_from_double(f, neg ? -d : d);
  }
  store(l, i, bits);
}

/*
 * Typed getters
 */

double literal_get_f64(const Literal *l, int64_t i) {
  ElemType t = lit_et(l);
  switch (et_class(t)) {
  case ETC_PRED:
    return load(l, i) != 0;
  case ETC_SINT:
    return (double)sign_extend(load(l, i), et_bits(t));
  case ETC_UINT:
    return (double)low_bits(load(l, i), et_bits(t));
  case ETC_FLOAT:
    return fp_to_double(et_fp_format(t), load(l, i));
  case ETC_COMPLEX:
    return fp_to_double(part_format(t), load_part(l, i, 0));
  default:
    return 0;
  }
}

int64_t literal_get_s64(const Literal *l, int64_t i) {
  ElemType t = lit_et(l);
  switch (et_class(t)) {
  case ETC_PRED:
    return load(l, i) != 0;
  case ETC_SINT:
    return sign_extend(load(l, i), et_bits(t));
  case ETC_UINT:
    return (int64_t)low_bits(load(l, i), et_bits(t));
  case ETC_FLOAT:
  case ETC_COMPLEX:
    return f64_to_sint(literal_get_f64(l, i), 64);
  default:
    return 0;
  }
}

uint64_t literal_get_u64(const Literal *l, int64_t i) {
  ElemType t = lit_et(l);
  switch (et_class(t)) {
  case ETC_PRED:
    return load(l, i) != 0;
  case ETC_SINT:
    return (uint64_t)sign_extend(load(l, i), et_bits(t));
  case ETC_UINT:
    return low_bits(load(l, i), et_bits(t));
  case ETC_FLOAT:
  case ETC_COMPLEX:
    return f64_to_uint(literal_get_f64(l, i), 64);
  default:
    return 0;
  }
}

void literal_get_complex(const Literal *l, int64_t i, double *re, double *im) {
  ElemType t = lit_et(l);
  if (et_is_complex(t)) {
    *re = fp_to_double(part_format(t), load_part(l, i, 0));
    *im = fp_to_double(part_format(t), load_part(l, i, 1));
  } else {
    *re = literal_get_f64(l, i);
    *im = 0;
  }
}

/*
 * Typed setters
 */

void literal_set_f64(Literal *l, int64_t i, double v) {
  ElemType t = lit_et(l);
  switch (et_class(t)) {
  case ETC_PRED:
    store(l, i, v != 0);
    break;
  case ETC_SINT:
    store(l, i, low_bits((uint64_t)f64_to_sint(v, et_bits(t)), et_bits(t)));
    break;
  case ETC_UINT:
    store(l, i, f64_to_uint(v, et_bits(t)));
    break;
  case ETC_FLOAT:
    store(l, i, fp_from_double(et_fp_format(t), v));
    break;
  case ETC_COMPLEX:
    literal_set_complex(l, i, v, 0);
    break;
  default:
    break;
  }
}

void literal_set_s64(Literal *l, int64_t i, int64_t v) {
  ElemType t = lit_et(l);
  uint64_t mag = v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
  switch (et_class(t)) {
  case ETC_PRED:
    store(l, i, v != 0);
    break;
  case ETC_SINT:
  case ETC_UINT:
    store(l, i, low_bits((uint64_t)v, et_bits(t)));
    break;
  case ETC_FLOAT:
    store_int_as_float(l, i, v < 0, mag);
    break;
  case ETC_COMPLEX:
    /* c64: rounded to odd first so that the f32 rounding is the only one. */
    if (t == ET_C64)
      literal_set_complex(l, i, v < 0 ? -u64_to_double_odd(mag)
                                      : u64_to_double_odd(mag), 0);
    else
      literal_set_complex(l, i, (double)v, 0);
    break;
  default:
    break;
  }
}

void literal_set_u64(Literal *l, int64_t i, uint64_t v) {
  ElemType t = lit_et(l);
  switch (et_class(t)) {
  case ETC_PRED:
    store(l, i, v != 0);
    break;
  case ETC_SINT:
  case ETC_UINT:
    store(l, i, low_bits(v, et_bits(t)));
    break;
  case ETC_FLOAT:
    store_int_as_float(l, i, false, v);
    break;
  case ETC_COMPLEX:
    literal_set_complex(l, i, t == ET_C64 ? u64_to_double_odd(v) : (double)v,
                        0);
    break;
  default:
    break;
  }
}

void literal_set_complex(Literal *l, int64_t i, double re, double im) {
  ElemType t = lit_et(l);
  if (!et_is_complex(t)) {
    literal_set_f64(l, i, re);
    return;
  }
  store_part(l, i, 0, fp_from_double(part_format(t), re));
  store_part(l, i, 1, fp_from_double(part_format(t), im));
}

/*
 * Printing
 */

static void put_u64(StrBuf *b, uint64_t u) {
  char tmp[24];
  int n = sizeof tmp;
  do {
    tmp[--n] = (char)('0' + u % 10);
    u /= 10;
  } while (u);
  sb_putn(b, tmp + n, sizeof tmp - (size_t)n);
}

/* Stored mantissa width of the formats whose NaNs carry a payload XLA
 * prints (those with signaling NaNs); 0 for the others. */
static int payload_bits(FpFormat f) {
  switch (f) {
  case FP_F16: return 10;
  case FP_BF16: return 7;
  case FP_F32: return 23;
  case FP_F64: return 52;
  case FP_F8E5M2: return 2;
  case FP_F8E4M3: return 3;
  case FP_F8E3M4: return 4;
  default: return 0;
  }
}

static void put_float(StrBuf *b, FpFormat f, uint64_t bits) {
  fp_format(b, f, bits);
  int pb = payload_bits(f);
  if (pb && isnan(fp_to_double(f, bits))) {
    uint64_t payload = bits & ((1ull << pb) - 1);
    if (payload != 1ull << (pb - 1)) {
      char tmp[32];
      int n = snprintf(tmp, sizeof tmp, "(0x%llx)", (unsigned long long)payload);
      sb_putn(b, tmp, (size_t)n);
    }
  }
}

/* One element; pred as `pred_text` ("true"/"false") or as 1/0. */
static void put_element(StrBuf *b, const Literal *l, int64_t i, bool pred_text) {
  ElemType t = lit_et(l);
  switch (et_class(t)) {
  case ETC_PRED:
    if (pred_text)
      sb_puts(b, load(l, i) ? "true" : "false");
    else
      sb_putc(b, load(l, i) ? '1' : '0');
    break;
  case ETC_SINT:
    sb_put_i64(b, sign_extend(load(l, i), et_bits(t)));
    break;
  case ETC_UINT:
    put_u64(b, low_bits(load(l, i), et_bits(t)));
    break;
  case ETC_FLOAT:
    put_float(b, et_fp_format(t), load(l, i));
    break;
  case ETC_COMPLEX:
    sb_putc(b, '(');
    put_float(b, part_format(t), load_part(l, i, 0));
    sb_puts(b, ", ");
    put_float(b, part_format(t), load_part(l, i, 1));
    sb_putc(b, ')');
    break;
  default:
    break;
  }
}

void literal_print_element(StrBuf *b, const Literal *l, int64_t i) {
  put_element(b, l, i, true);
}

/* Walks the dimensions in row-major order, printing braces the way XLA's
 * DenseArrayPrintHelper does in one-line mode. */
typedef struct ArrayPrinter {
  StrBuf *b;
  const Literal *l;
  int rank;
  const int64_t *dims;
  int64_t *index;                 /* current index, rank entries */
  int64_t next;                   /* next element, row-major */
} ArrayPrinter;

static void print_dims(ArrayPrinter *p, int d) {
  StrBuf *b = p->b;
  int64_t n = p->dims[d];
  bool innermost = d == p->rank - 1;
  if (p->rank == 1) {
    sb_putc(b, '{');
  } else if (innermost) {
    sb_puts(b, n <= 1 ? "{" : "{ ");
  } else if (p->rank > 3 && d > 0) {
    sb_printf(b, "{ /*i%d=%lld*/%s", d - 1, (long long)p->index[d - 1],
              n > 0 ? " " : "");
  } else {
    sb_puts(b, "{ ");
  }
  for (int64_t i = 0; i < n; i++) {
    p->index[d] = i;
    if (innermost)
      put_element(b, p->l, p->next++, false);
    else
      print_dims(p, d + 1);
    if (i < n - 1)
      sb_puts(b, ", ");
  }
  if (p->rank == 1)
    sb_putc(b, '}');
  else if (innermost)
    sb_puts(b, n <= 1 ? "}" : " }");
  else
    sb_puts(b, " }");
}

void literal_print(StrBuf *b, const Literal *l) {
  if (!l || !l->shape)
    return;
  const Shape *s = l->shape;
  if (s->et == ET_TUPLE) {
    sb_puts(b, "( ");
    for (int i = 0; i < l->ntuple; i++) {
      if (i > 0)
        sb_puts(b, ", ");
      literal_print(b, l->tuple[i]);
    }
    sb_puts(b, " )");
    return;
  }
  if (s->et == ET_TOKEN) {
    sb_puts(b, "token");
    return;
  }
  if (!et_is_array(s->et))
    return;
  if (l->elided) {
    sb_puts(b, "{...}");
    return;
  }
  if (s->rank == 0) {
    put_element(b, l, 0, true);
    return;
  }
  int64_t small[16];
  int64_t *index = s->rank <= 16 ? small : xcalloc((size_t)s->rank, sizeof *index);
  ArrayPrinter p = {b, l, s->rank, s->dims, index, 0};
  print_dims(&p, 0);
  if (index != small)
    free(index);
}

/*
 * Equality
 */

void literal_elided_advance(const Shape *s, uint32_t *word, uint8_t *byte) {
  int64_t size = shape_byte_size(s);
  if (size <= 0)
    return;
  *word += (uint32_t)(size / 4);
  *byte += (uint8_t)(size % 4);
}

void literal_elided_fill(const Literal *l, uint8_t *dst) {
  int64_t size = shape_byte_size(l->shape);
  if (size <= 0)
    return;
  uint32_t mask = l->shape->et == ET_PRED ? 0x01010101u : 0xffffffffu;
  uint32_t w = l->elided_word;
  memset(dst, 0, (size_t)size);
  for (int64_t i = 0; i < size / 4; i++, w++) {
    uint32_t v = w & mask;
    for (int k = 0; k < 4; k++)
      dst[4 * i + k] = (uint8_t)(v >> (8 * k));
  }
  uint8_t b = l->elided_byte;
  for (int64_t i = 0; i < size % 4; i++, b++)
    dst[size / 4 + i] = (uint8_t)(b & mask);
}

bool literal_equal(const Literal *a, const Literal *b) {
  if (a == b)
    return true;
  if (!a || !b || !a->shape || !b->shape)
    return false;
  if (!shape_compatible(a->shape, b->shape))
    return false;
  if (a->shape->et == ET_TUPLE) {
    if (a->ntuple != b->ntuple)
      return false;
    for (int i = 0; i < a->ntuple; i++)
      if (!literal_equal(a->tuple[i], b->tuple[i]))
        return false;
    return true;
  }
  if (!et_is_array(a->shape->et))
    return true;                              /* tokens */
  if (a->elided || b->elided)
    return false;                             /* unknown values */
  int64_t n = shape_elements(a->shape);
  if (n != shape_elements(b->shape))
    return false;
  ElemType t = a->shape->et;
  int bits = et_bits(t);
  if (n <= 0)
    return true;
  if (!a->data || !b->data)
    return !a->data && !b->data;
  if (et_class(t) == ETC_PRED || bits < 8) {
    /* Only the low bits (pred: zero or not) carry the value. */
    for (int64_t i = 0; i < n; i++) {
      uint8_t x = a->data[i], y = b->data[i];
      if (et_class(t) == ETC_PRED ? (x != 0) != (y != 0)
                                  : low_bits(x, bits) != low_bits(y, bits))
        return false;
    }
    return true;
  }
  return memcmp(a->data, b->data, (size_t)(n * et_bytes(t))) == 0;
}
