/*
 * test_literal.c - unit tests of lib/hlo/literal.c: storage, conversions on
 * store and load (XLA's convert rules), element and literal text (XLA's
 * one-line form, spacing checked against real dumps) and equality.
 */
#include <criterion/criterion.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../../lib/hlo/hlo.h"

static Arena *arena;

static void setup(void) { arena = arena_new(); }
static void teardown(void) { arena_free(arena); }

TestSuite(literal, .init = setup, .fini = teardown);

static Literal *lit(ElemType et, int rank, const int64_t *dims) {
  Literal *l = literal_new(arena, shape_array(arena, et, rank, dims));
  cr_assert_not_null(l);
  return l;
}

static Literal *scalar(ElemType et) { return lit(et, 0, NULL); }

static char *print_lit(const Literal *l) {
  StrBuf b;
  sb_init(&b);
  literal_print(&b, l);
  return sb_detach(&b);
}

static char *print_elem(const Literal *l, int64_t i) {
  StrBuf b;
  sb_init(&b);
  literal_print_element(&b, l, i);
  return sb_detach(&b);
}

static void expect_text(const Literal *l, const char *want) {
  char *got = print_lit(l);
  cr_expect_str_eq(got, want, "got '%s' want '%s'", got, want);
  free(got);
}

static void expect_elem(const Literal *l, int64_t i, const char *want) {
  char *got = print_elem(l, i);
  cr_expect_str_eq(got, want, "got '%s' want '%s'", got, want);
  free(got);
}

/* Raw little-endian bits of element i. */
static uint64_t raw(const Literal *l, int64_t i) {
  int nb = et_bytes(l->shape->et);
  uint64_t v = 0;
  for (int k = nb - 1; k >= 0; k--)
    v = v << 8 | l->data[i * nb + k];
  return v;
}

static void set_raw(Literal *l, int64_t i, uint64_t v) {
  int nb = et_bytes(l->shape->et);
  for (int k = 0; k < nb; k++, v >>= 8)
    l->data[i * nb + k] = (uint8_t)v;
}

/*
 * Allocation
 */

Test(literal, new_is_zeroed) {
  int64_t dims[] = {3, 5};
  Literal *l = lit(ET_F32, 2, dims);
  cr_assert_not_null(l->data);
  for (int i = 0; i < 60; i++)
    cr_assert_eq(l->data[i], 0);
  cr_assert(!l->elided);
  cr_assert_eq(l->ntuple, 0);
  Literal *c = lit(ET_C128, 1, (int64_t[]){2});
  for (int i = 0; i < 32; i++)
    cr_assert_eq(c->data[i], 0);
  Literal *z = lit(ET_S32, 2, (int64_t[]){4, 0});
  expect_text(z, "{ {}, {}, {}, {} }");
}

Test(literal, new_tuple_and_token) {
  Shape *elems[] = {shape_scalar(arena, ET_S32),
                    shape_array(arena, ET_F16, 1, (int64_t[]){2}),
                    shape_token(arena)};
  Literal *t = literal_new(arena, shape_tuple(arena, 3, elems));
  cr_assert_not_null(t);
  cr_assert_null(t->data);
  cr_assert_eq(t->ntuple, 3);
  cr_assert_not_null(t->tuple[0]->data);
  cr_assert_eq(t->tuple[1]->shape, elems[1]);
  cr_assert_null(t->tuple[2]->data);
  expect_text(t, "( 0, {0, 0}, token )");
  Literal *e = literal_new(arena, shape_tuple(arena, 0, NULL));
  expect_text(e, "(  )");
}

Test(literal, new_rejects_unsized_shapes) {
  Shape *s = shape_array(arena, ET_F32, 2, (int64_t[]){-1, 4});
  cr_assert_null(literal_new(arena, s));
  Shape *huge = shape_array(arena, ET_F64, 3,
                            (int64_t[]){INT64_MAX / 4, 4, 4});
  cr_assert_null(literal_new(arena, huge));
  cr_assert_null(literal_new(arena, NULL));
}

/*
 * Conversions
 */

Test(literal, pred) {
  Literal *l = lit(ET_PRED, 1, (int64_t[]){6});
  literal_set_f64(l, 0, NAN);
  literal_set_f64(l, 1, 0.0);
  literal_set_s64(l, 2, -5);
  literal_set_u64(l, 3, 0);
  literal_set_f64(l, 4, -0.0);
  literal_set_complex(l, 5, 0.5, 0);
  cr_assert_eq(raw(l, 0), 1);
  cr_assert_eq(raw(l, 1), 0);
  cr_assert_eq(raw(l, 2), 1);
  cr_assert_eq(raw(l, 3), 0);
  cr_assert_eq(raw(l, 4), 0);
  cr_assert_eq(raw(l, 5), 1);
  cr_assert_eq(literal_get_s64(l, 2), 1);
  cr_assert_eq(literal_get_f64(l, 0), 1.0);
  expect_elem(l, 0, "true");
  expect_elem(l, 1, "false");
  expect_text(l, "{1, 0, 1, 0, 0, 1}");     /* arrays print 0/1 like XLA */
  set_raw(l, 1, 7);                          /* any non-zero byte is true */
  cr_assert_eq(literal_get_u64(l, 1), 1);
  Literal *s = scalar(ET_PRED);
  literal_set_s64(s, 0, 1);
  expect_text(s, "true");
}

Test(literal, sub_byte_integers) {
  Literal *s4 = lit(ET_S4, 1, (int64_t[]){6});
  literal_set_s64(s4, 0, -8);
  literal_set_s64(s4, 1, 7);
  literal_set_s64(s4, 2, 9);                 /* wraps to -7 */
  literal_set_f64(s4, 3, 100);               /* saturates to 7 */
  literal_set_f64(s4, 4, -100);              /* saturates to -8 */
  literal_set_f64(s4, 5, -1.9);              /* truncates to -1 */
  cr_assert_eq(raw(s4, 0), 0x8);             /* low bits only */
  cr_assert_eq(raw(s4, 2), 0x9);
  cr_assert_eq(raw(s4, 5), 0xf);
  cr_assert_eq(literal_get_s64(s4, 0), -8);
  cr_assert_eq(literal_get_s64(s4, 1), 7);
  cr_assert_eq(literal_get_s64(s4, 2), -7);
  cr_assert_eq(literal_get_s64(s4, 3), 7);
  cr_assert_eq(literal_get_s64(s4, 4), -8);
  cr_assert_eq(literal_get_f64(s4, 5), -1.0);
  expect_text(s4, "{-8, 7, -7, 7, -8, -1}");
  set_raw(s4, 1, 0xf7);                      /* upper bits are ignored */
  cr_assert_eq(literal_get_s64(s4, 1), 7);

  Literal *s2 = lit(ET_S2, 1, (int64_t[]){4});
  for (int i = 0; i < 4; i++)
    literal_set_s64(s2, i, i - 2);
  expect_text(s2, "{-2, -1, 0, 1}");
  literal_set_f64(s2, 0, 5);
  cr_assert_eq(literal_get_s64(s2, 0), 1);

  Literal *u4 = lit(ET_U4, 1, (int64_t[]){5});
  literal_set_s64(u4, 0, -1);                /* wraps to 15 */
  literal_set_f64(u4, 1, -3.5);              /* saturates to 0 */
  literal_set_f64(u4, 2, 100);               /* saturates to 15 */
  literal_set_f64(u4, 3, NAN);               /* 0 */
  literal_set_u64(u4, 4, 18);                /* wraps to 2 */
  expect_text(u4, "{15, 0, 15, 0, 2}");
  Literal *u2 = scalar(ET_U2);
  literal_set_u64(u2, 0, 3);
  cr_assert_eq(literal_get_u64(u2, 0), 3);
  cr_assert_eq(literal_get_s64(u2, 0), 3);
}

Test(literal, float_to_int_saturates) {
  Literal *s8 = lit(ET_S8, 1, (int64_t[]){7});
  double in[] = {127.9, -128.5, 300, -1e300, NAN, -2.7, INFINITY};
  int64_t want[] = {127, -128, 127, -128, 0, -2, 127};
  for (int i = 0; i < 7; i++) {
    literal_set_f64(s8, i, in[i]);
    cr_assert_eq(literal_get_s64(s8, i), want[i], "%g", in[i]);
  }
  Literal *s32 = scalar(ET_S32);
  literal_set_f64(s32, 0, 2147483648.0);
  cr_assert_eq(literal_get_s64(s32, 0), INT32_MAX);
  literal_set_f64(s32, 0, -2147483649.0);
  cr_assert_eq(literal_get_s64(s32, 0), INT32_MIN);
  literal_set_s64(s32, 0, (1ll << 40) + 5);  /* wraps */
  cr_assert_eq(literal_get_s64(s32, 0), 5);
  Literal *s64 = scalar(ET_S64);
  literal_set_f64(s64, 0, 9.3e18);
  cr_assert_eq(literal_get_s64(s64, 0), INT64_MAX);
  literal_set_f64(s64, 0, -9.3e18);
  cr_assert_eq(literal_get_s64(s64, 0), INT64_MIN);
  literal_set_f64(s64, 0, 0x1p62);
  cr_assert_eq(literal_get_s64(s64, 0), 1ll << 62);
  literal_set_s64(s64, 0, INT64_MIN);
  expect_text(s64, "-9223372036854775808");
  Literal *u64 = scalar(ET_U64);
  literal_set_f64(u64, 0, 1.9e19);
  cr_assert_eq(literal_get_u64(u64, 0), UINT64_MAX);
  expect_text(u64, "18446744073709551615");
  literal_set_f64(u64, 0, 1.8e19);
  cr_assert_eq(literal_get_u64(u64, 0), 18000000000000000000ull);
  literal_set_f64(u64, 0, -1);
  cr_assert_eq(literal_get_u64(u64, 0), 0);
  Literal *u32 = scalar(ET_U32);
  literal_set_u64(u32, 0, UINT64_MAX);
  cr_assert_eq(literal_get_u64(u32, 0), 0xffffffffu);
  literal_set_s64(u32, 0, -1);
  cr_assert_eq(literal_get_s64(u32, 0), 0xffffffffll);
  /* Reading a float as an integer follows the same rule. */
  Literal *f = scalar(ET_F32);
  literal_set_f64(f, 0, -3.75);
  cr_assert_eq(literal_get_s64(f, 0), -3);
  cr_assert_eq(literal_get_u64(f, 0), 0);
  literal_set_f64(f, 0, NAN);
  cr_assert_eq(literal_get_s64(f, 0), 0);
}

Test(literal, int_to_float_rounds_once) {
  Literal *f = lit(ET_F32, 1, (int64_t[]){4});
  literal_set_u64(f, 0, UINT64_MAX);
  literal_set_s64(f, 1, INT64_MIN);
  literal_set_s64(f, 2, 16777217);           /* tie: to even */
  literal_set_s64(f, 3, -16777219);          /* tie: to even */
  cr_assert_eq(raw(f, 0), 0x5f800000);
  cr_assert_eq(raw(f, 1), 0xdf000000);
  cr_assert_eq(literal_get_f64(f, 2), 16777216.0);
  cr_assert_eq(literal_get_f64(f, 3), -16777220.0);
  /* 2^60 + 2^52 + 1 is just above a bf16 midpoint; through a plain double
   * it would land on the midpoint and round down. */
  Literal *b = scalar(ET_BF16);
  literal_set_u64(b, 0, (1ull << 60) + (1ull << 52) + 1);
  cr_assert_eq(raw(b, 0), 0x5d81);
  literal_set_s64(b, 0, -(int64_t)((1ull << 60) + (1ull << 52) + 1));
  cr_assert_eq(raw(b, 0), 0xdd81);
  literal_set_u64(b, 0, (1ull << 60) + (1ull << 52));
  cr_assert_eq(raw(b, 0), 0x5d80);
  Literal *h = scalar(ET_F16);
  literal_set_s64(h, 0, 70000);
  cr_assert_eq(raw(h, 0), 0x7c00);
  literal_set_s64(h, 0, -2048);
  cr_assert_eq(raw(h, 0), 0xe800);
  Literal *d = scalar(ET_F64);
  literal_set_s64(d, 0, (1ll << 53) + 1);
  cr_assert_eq(literal_get_f64(d, 0), 0x1p53);
  Literal *c = scalar(ET_C64);
  literal_set_u64(c, 0, (1ull << 60) + (1ull << 36) + 1); /* above f32 tie */
  double re, im;
  literal_get_complex(c, 0, &re, &im);
  cr_assert_eq(re, 0x1p60 + 0x1p37);
  cr_assert_eq(im, 0);
}

Test(literal, float_to_float) {
  Literal *f = lit(ET_F32, 1, (int64_t[]){2});
  literal_set_f64(f, 0, 0.1);
  cr_assert_eq(raw(f, 0), 0x3dcccccd);
  literal_set_f64(f, 1, 1e300);
  cr_assert_eq(raw(f, 1), 0x7f800000);
  Literal *h = scalar(ET_F16);
  literal_set_f64(h, 0, 65520);
  cr_assert_eq(raw(h, 0), 0x7c00);
  Literal *e = scalar(ET_F8E4M3FN);
  literal_set_f64(e, 0, 1000);
  expect_text(e, "nan");
  literal_set_f64(e, 0, -448);
  cr_assert_eq(raw(e, 0), 0xfe);
  expect_text(e, "-448");
  Literal *f4 = lit(ET_F4E2M1FN, 1, (int64_t[]){3});
  literal_set_f64(f4, 0, 100);
  literal_set_f64(f4, 1, -0.75);
  literal_set_f64(f4, 2, 0.25);
  expect_text(f4, "{6, -1, 0}");
  cr_assert_eq(raw(f4, 0), 0x7);
  set_raw(f4, 0, 0xf2);                      /* upper bits are ignored */
  cr_assert_eq(literal_get_f64(f4, 0), 1.0);
}

Test(literal, complex) {
  Literal *c = lit(ET_C64, 1, (int64_t[]){3});
  literal_set_complex(c, 0, 1.5, -2);
  literal_set_f64(c, 1, 3);
  literal_set_complex(c, 2, INFINITY, NAN);
  double re, im;
  literal_get_complex(c, 0, &re, &im);
  cr_assert(re == 1.5 && im == -2);
  cr_assert_eq(literal_get_f64(c, 1), 3);
  cr_assert_eq(literal_get_s64(c, 0), 1);
  expect_elem(c, 0, "(1.5, -2)");
  expect_text(c, "{(1.5, -2), (3, 0), (inf, nan)}");
  cr_assert_eq(raw(c, 0), 0xc00000003fc00000ull);  /* f32 re, then im */
  Literal *z = scalar(ET_C128);
  literal_set_complex(z, 0, 5.96e-08, 0);
  expect_text(z, "(5.96e-08, 0)");
  literal_set_s64(z, 0, -7);
  literal_get_complex(z, 0, &re, &im);
  cr_assert(re == -7 && im == 0);
  Literal *r = scalar(ET_F64);
  literal_set_complex(r, 0, 2.5, 9);         /* complex -> real: real part */
  literal_get_complex(r, 0, &re, &im);
  cr_assert(re == 2.5 && im == 0);
}

/*
 * Element text: NaN payloads as XLA prints them
 */

typedef struct NanCase {
  ElemType t;
  uint64_t bits;
  const char *text;
} NanCase;

Test(literal, nan_payloads) {
  static const NanCase cases[] = {
    {ET_F32, 0x7fc00000, "nan"},
    {ET_F32, 0xffc00000, "-nan"},
    {ET_F32, 0x7f800001, "nan(0x1)"},
    {ET_F32, 0x7fc00001, "nan(0x400001)"},
    {ET_F32, 0xff800002, "-nan(0x2)"},
    {ET_F32, 0x7f800000, "inf"},
    {ET_F64, 0x7ff8000000000000ull, "nan"},
    {ET_F64, 0x7ff0000000000001ull, "nan(0x1)"},
    {ET_F64, 0xfff8000000000123ull, "-nan(0x8000000000123)"},
    {ET_F16, 0x7e00, "nan"},
    {ET_F16, 0x7c01, "nan(0x1)"},
    {ET_F16, 0xfd00, "-nan(0x100)"},
    {ET_BF16, 0x7fc0, "nan"},
    {ET_BF16, 0x7f81, "nan(0x1)"},
    {ET_F8E5M2, 0x7e, "nan"},
    {ET_F8E5M2, 0x7d, "nan(0x1)"},
    {ET_F8E4M3, 0x7c, "nan"},
    {ET_F8E4M3, 0x79, "nan(0x1)"},
    {ET_F8E3M4, 0xf9, "-nan(0x9)"},
    {ET_F8E4M3FN, 0x7f, "nan"},
    {ET_F8E4M3FN, 0xff, "-nan"},
    {ET_F8E4M3FNUZ, 0x80, "-nan"},
    {ET_F8E5M2FNUZ, 0x80, "-nan"},
    {ET_F8E4M3B11FNUZ, 0x80, "-nan"},
    {ET_F8E8M0FNU, 0xff, "nan"},
  };
  for (size_t i = 0; i < ARRAY_LEN(cases); i++) {
    Literal *l = scalar(cases[i].t);
    set_raw(l, 0, cases[i].bits);
    expect_elem(l, 0, cases[i].text);
    /* The payload is kept: a copy of the bits compares equal. */
    Literal *m = scalar(cases[i].t);
    set_raw(m, 0, cases[i].bits);
    cr_assert(literal_equal(l, m));
  }
}

/*
 * Literal text, as XLA's HloConstantInstruction prints it
 */

static Literal *iota(ElemType et, int rank, const int64_t *dims) {
  Literal *l = lit(et, rank, dims);
  int64_t n = shape_elements(l->shape);
  for (int64_t i = 0; i < n; i++)
    literal_set_s64(l, i, i + 1);
  return l;
}

Test(literal, scalars) {
  Literal *f = scalar(ET_F32);
  literal_set_f64(f, 0, 1.5);
  expect_text(f, "1.5");
  literal_set_f64(f, 0, -0.5);
  expect_text(f, "-0.5");
  literal_set_f64(f, 0, 1e-6);
  expect_text(f, "1e-06");
  literal_set_f64(f, 0, -INFINITY);
  expect_text(f, "-inf");
  Literal *s = scalar(ET_S32);
  literal_set_s64(s, 0, -3);
  expect_text(s, "-3");
  Literal *b = scalar(ET_BF16);
  literal_set_f64(b, 0, 0.62109375);
  expect_text(b, "0.6211");
}

Test(literal, arrays) {
  expect_text(iota(ET_S32, 1, (int64_t[]){3}), "{1, 2, 3}");
  expect_text(iota(ET_S32, 1, (int64_t[]){1}), "{1}");
  expect_text(iota(ET_S32, 1, (int64_t[]){0}), "{}");
  expect_text(iota(ET_S32, 2, (int64_t[]){2, 2}), "{ { 1, 2 }, { 3, 4 } }");
  expect_text(iota(ET_S32, 2, (int64_t[]){3, 1}), "{ {1}, {2}, {3} }");
  expect_text(iota(ET_S32, 2, (int64_t[]){1, 3}), "{ { 1, 2, 3 } }");
  expect_text(iota(ET_S32, 2, (int64_t[]){2, 0}), "{ {}, {} }");
  expect_text(iota(ET_S32, 2, (int64_t[]){0, 2}), "{  }");
  expect_text(iota(ET_S32, 3, (int64_t[]){2, 1, 2}),
              "{ { { 1, 2 } }, { { 3, 4 } } }");
  expect_text(iota(ET_S32, 3, (int64_t[]){1, 1, 1}), "{ { {1} } }");
  /* Rank above 3: index markers on the inner dimensions. */
  Literal *r4 = lit(ET_S32, 4, (int64_t[]){1, 1, 1, 1});
  literal_set_s64(r4, 0, 256);
  expect_text(r4, "{ { /*i0=0*/ { /*i1=0*/ {256} } } }");
  expect_text(iota(ET_S32, 4, (int64_t[]){2, 1, 1, 2}),
              "{ { /*i0=0*/ { /*i1=0*/ { 1, 2 } } }, "
              "{ /*i0=1*/ { /*i1=0*/ { 3, 4 } } } }");
  expect_text(iota(ET_S32, 4, (int64_t[]){2, 0, 1, 1}),
              "{ { /*i0=0*/ }, { /*i0=1*/ } }");
  Literal *f = lit(ET_F32, 1, (int64_t[]){9});
  double v[] = {NAN, NAN, INFINITY, INFINITY, INFINITY, 1, INFINITY, 3, 0};
  for (int i = 0; i < 9; i++)
    literal_set_f64(f, i, v[i]);
  expect_text(f, "{nan, nan, inf, inf, inf, 1, inf, 3, 0}");
}

/* Strings copied from real dumps in the corpus. */
Test(literal, corpus_examples) {
  Literal *a = lit(ET_S32, 2, (int64_t[]){3, 3});
  literal_set_s64(a, 0, 1);
  expect_text(a, "{ { 1, 0, 0 }, { 0, 0, 0 }, { 0, 0, 0 } }");
  Shape *elems[] = {shape_array(arena, ET_S32, 2, (int64_t[]){2, 1}),
                    shape_array(arena, ET_S32, 1, (int64_t[]){1})};
  Literal *t = literal_new(arena, shape_tuple(arena, 2, elems));
  literal_set_s64(t->tuple[0], 0, 1);
  literal_set_s64(t->tuple[0], 1, 2);
  literal_set_s64(t->tuple[1], 0, 2);
  /* The corpus has this tuple as "( { { 1 }, { 2 } }, {2} )" in a
   * hand-written test input; XLA itself prints a length-1 row without inner
   * spaces, as the dumps' "{ {0} }" for [1,1] show. */
  expect_text(t, "( { {1}, {2} }, {2} )");
  Literal *p = lit(ET_PRED, 3, (int64_t[]){2, 2, 4});
  for (int i = 0; i < 16; i++)
    literal_set_s64(p, i, i % 3 == 0);
  expect_text(p, "{ { { 1, 0, 0, 1 }, { 0, 0, 1, 0 } }, "
                 "{ { 0, 1, 0, 0 }, { 1, 0, 0, 1 } } }");
  Literal *c = scalar(ET_C64);
  literal_set_complex(c, 0, 0, 1);
  expect_text(c, "(0, 1)");
}

Test(literal, elided_and_nested_tuples) {
  Literal *e = lit(ET_F32, 1, (int64_t[]){100});
  e->elided = true;
  expect_text(e, "{...}");
  Shape *inner[] = {shape_scalar(arena, ET_S32), shape_scalar(arena, ET_F32)};
  Shape *outer[] = {shape_scalar(arena, ET_PRED), shape_tuple(arena, 2, inner)};
  Literal *t = literal_new(arena, shape_tuple(arena, 2, outer));
  literal_set_s64(t->tuple[0], 0, 1);
  literal_set_s64(t->tuple[1]->tuple[0], 0, 2);
  literal_set_f64(t->tuple[1]->tuple[1], 0, 0.25);
  expect_text(t, "( true, ( 2, 0.25 ) )");
}

/* Every printed float element reads back to the same bits. */
Test(literal, printed_floats_read_back) {
  static const ElemType types[] = {ET_F32, ET_F16, ET_BF16, ET_F64,
                                   ET_F8E4M3FN, ET_F8E5M2};
  uint64_t seed = 12345;
  for (size_t ti = 0; ti < ARRAY_LEN(types); ti++) {
    ElemType t = types[ti];
    FpFormat f = et_fp_format(t);
    int64_t n = 20000;
    Literal *l = lit(t, 1, &n);
    for (int64_t i = 0; i < n; i++) {
      seed = seed * 6364136223846793005ull + 1442695040888963407ull;
      uint64_t bits = seed >> (64 - et_bits(t));
      if (et_bits(t) == 64)
        bits = seed;
      if (isnan(fp_to_double(f, bits)))
        bits = 0;
      set_raw(l, i, bits);
    }
    char *text = print_lit(l);
    char *p = text + 1;                      /* after '{' */
    for (int64_t i = 0; i < n; i++) {
      char *end;
      double d = strtod(p, &end);
      cr_assert_neq(end, p);
      cr_assert_eq(fp_from_double(f, d), raw(l, i), "%s element %lld: %.30s",
                   et_name(t), (long long)i, p);
      p = end + 2;                           /* ", " */
    }
    free(text);
  }
}

/* A million f32 elements print in one pass without per-element allocation;
 * this is a smoke test of size and shape (timings are in the report). */
Test(literal, large_f32_array) {
  int64_t n = 1000000;
  Literal *l = lit(ET_F32, 1, &n);
  for (int64_t i = 0; i < n; i++)
    literal_set_f64(l, i, (double)i * 0.001 - 17.5);
  char *text = print_lit(l);
  size_t len = strlen(text);
  cr_assert_gt(len, (size_t)n * 3);
  cr_assert_eq(text[0], '{');
  cr_assert_eq(text[len - 1], '}');
  cr_assert_eq(strncmp(text, "{-17.5, -17.499, -17.498, ", 26), 0);
  free(text);
}

/*
 * Equality
 */

Test(literal, equality) {
  Literal *a = iota(ET_F32, 2, (int64_t[]){2, 3});
  Literal *b = iota(ET_F32, 2, (int64_t[]){2, 3});
  cr_assert(literal_equal(a, b));
  cr_assert(literal_equal(a, a));
  literal_set_f64(b, 5, -0.0);
  literal_set_f64(a, 5, 0.0);
  cr_assert(!literal_equal(a, b));           /* bitwise: -0 != 0 */
  literal_set_f64(a, 5, NAN);
  literal_set_f64(b, 5, NAN);
  cr_assert(literal_equal(a, b));            /* same NaN bits */
  set_raw(b, 5, 0x7fc00001);
  cr_assert(!literal_equal(a, b));           /* other payload */
  Literal *c = iota(ET_F32, 2, (int64_t[]){3, 2});
  cr_assert(!literal_equal(iota(ET_F32, 2, (int64_t[]){2, 3}), c));
  cr_assert(!literal_equal(iota(ET_S32, 1, (int64_t[]){3}),
                           iota(ET_U32, 1, (int64_t[]){3})));
  /* Sub-byte values and pred compare by value, not by stray upper bits. */
  Literal *x = iota(ET_S4, 1, (int64_t[]){2}), *y = iota(ET_S4, 1, (int64_t[]){2});
  set_raw(y, 0, 0xf1);
  cr_assert(literal_equal(x, y));
  Literal *p = scalar(ET_PRED), *q = scalar(ET_PRED);
  set_raw(p, 0, 1);
  set_raw(q, 0, 2);
  cr_assert(literal_equal(p, q));
  /* Elided values are unknown: equal to nothing but themselves. */
  Literal *e1 = iota(ET_F32, 1, (int64_t[]){20}), *e2 = iota(ET_F32, 1, (int64_t[]){20});
  e1->elided = e2->elided = true;
  cr_assert(!literal_equal(e1, e2));
  cr_assert(literal_equal(e1, e1));
  cr_assert(!literal_equal(a, NULL));
  /* Tuples element by element. */
  Shape *el[] = {shape_scalar(arena, ET_S32), shape_scalar(arena, ET_F32)};
  Literal *t1 = literal_new(arena, shape_tuple(arena, 2, el));
  Literal *t2 = literal_new(arena, shape_tuple(arena, 2, el));
  cr_assert(literal_equal(t1, t2));
  literal_set_s64(t2->tuple[0], 0, 1);
  cr_assert(!literal_equal(t1, t2));
  /* Layouts do not matter: data is in logical order. */
  Literal *m = iota(ET_S32, 2, (int64_t[]){2, 2});
  Literal *n = iota(ET_S32, 2, (int64_t[]){2, 2});
  n->shape->layout->minor_to_major[0] = 0;
  n->shape->layout->minor_to_major[1] = 1;
  cr_assert(literal_equal(m, n));
}
