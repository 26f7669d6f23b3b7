/*
 * test_types.c - unit tests of lib/hlo/types.c: element type names, widths,
 * classes and the float formats behind them.
 */
#include <criterion/criterion.h>

#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "../../lib/hlo/hlo.h"

static ElemType by_name(const char *s) { return et_from_name(s, strlen(s)); }

Test(types, names_round_trip) {
  for (int t = ET_INVALID + 1; t < ET_COUNT; t++) {
    const char *name = et_name((ElemType)t);
    cr_assert_neq(strcmp(name, "invalid"), 0);
    cr_assert_eq(by_name(name), (ElemType)t, "%s", name);
  }
  cr_assert_str_eq(et_name(ET_INVALID), "invalid");
  cr_assert_str_eq(et_name((ElemType)ET_COUNT), "invalid");
  cr_assert_str_eq(et_name((ElemType)-1), "invalid");
}

Test(types, from_name) {
  cr_assert_eq(by_name("f32"), ET_F32);
  cr_assert_eq(by_name("bf16"), ET_BF16);
  cr_assert_eq(by_name("f8e4m3b11fnuz"), ET_F8E4M3B11FNUZ);
  cr_assert_eq(by_name("f4e2m1fn"), ET_F4E2M1FN);
  cr_assert_eq(by_name("pred"), ET_PRED);
  cr_assert_eq(by_name("token"), ET_TOKEN);
  cr_assert_eq(by_name("opaque"), ET_OPAQUE);
  cr_assert_eq(by_name("opaque_type"), ET_OPAQUE);
  cr_assert_eq(by_name("c128"), ET_C128);
  /* Only whole names: the length decides. */
  cr_assert_eq(et_from_name("f32[2]", 3), ET_F32);
  cr_assert_eq(et_from_name("f32", 2), ET_INVALID);
  cr_assert_eq(by_name("f31"), ET_INVALID);
  cr_assert_eq(by_name(""), ET_INVALID);
  cr_assert_eq(by_name("F32"), ET_INVALID);
  cr_assert_eq(by_name("invalid"), ET_INVALID);
  cr_assert_eq(et_from_name(NULL, 0), ET_INVALID);
}

Test(types, widths) {
  cr_assert_eq(et_bits(ET_PRED), 1);
  cr_assert_eq(et_bytes(ET_PRED), 1);
  cr_assert_eq(et_bits(ET_S4), 4);
  cr_assert_eq(et_bytes(ET_S4), 1);
  cr_assert_eq(et_bits(ET_U2), 2);
  cr_assert_eq(et_bytes(ET_U2), 1);
  cr_assert_eq(et_bits(ET_S16), 16);
  cr_assert_eq(et_bytes(ET_U64), 8);
  cr_assert_eq(et_bits(ET_F32), 32);
  cr_assert_eq(et_bytes(ET_BF16), 2);
  cr_assert_eq(et_bits(ET_F8E8M0FNU), 8);
  cr_assert_eq(et_bits(ET_F4E2M1FN), 4);
  cr_assert_eq(et_bytes(ET_F4E2M1FN), 1);
  cr_assert_eq(et_bits(ET_C64), 64);
  cr_assert_eq(et_bytes(ET_C128), 16);
  cr_assert_eq(et_bytes(ET_TUPLE), 0);
  cr_assert_eq(et_bytes(ET_TOKEN), 0);
  cr_assert_eq(et_bits(ET_INVALID), 0);
  /* Every array type has a width that fits its bytes. */
  for (int t = ET_INVALID + 1; t < ET_COUNT; t++)
    if (et_is_array((ElemType)t))
      cr_assert(et_bytes((ElemType)t) * 8 >= et_bits((ElemType)t) &&
                    et_bytes((ElemType)t) > 0,
                "%s", et_name((ElemType)t));
}

Test(types, classes) {
  for (int t = ET_INVALID + 1; t < ET_COUNT; t++) {
    ElemType e = (ElemType)t;
    ElemClass c = et_class(e);
    cr_assert_eq(et_is_float(e), c == ETC_FLOAT);
    cr_assert_eq(et_is_int(e), c == ETC_SINT || c == ETC_UINT);
    cr_assert_eq(et_is_signed_int(e), c == ETC_SINT);
    cr_assert_eq(et_is_unsigned_int(e), c == ETC_UINT);
    cr_assert_eq(et_is_complex(e), c == ETC_COMPLEX);
    cr_assert_eq(et_is_array(e), c != ETC_TOKEN && c != ETC_OPAQUE &&
                                     c != ETC_TUPLE && c != ETC_NONE);
  }
  cr_assert_eq(et_class(ET_PRED), ETC_PRED);
  cr_assert_eq(et_class(ET_S2), ETC_SINT);
  cr_assert_eq(et_class(ET_U4), ETC_UINT);
  cr_assert_eq(et_class(ET_F8E5M2), ETC_FLOAT);
  cr_assert_eq(et_class(ET_C64), ETC_COMPLEX);
  cr_assert_eq(et_class(ET_TOKEN), ETC_TOKEN);
  cr_assert_eq(et_class(ET_OPAQUE), ETC_OPAQUE);
  cr_assert_eq(et_class(ET_TUPLE), ETC_TUPLE);
  cr_assert_eq(et_class(ET_INVALID), ETC_NONE);
  cr_assert(!et_is_array(ET_INVALID));
  cr_assert(et_is_array(ET_PRED));
}

Test(types, float_formats) {
  static const struct { ElemType t; FpFormat f; } pairs[] = {
    {ET_F16, FP_F16}, {ET_BF16, FP_BF16}, {ET_F32, FP_F32}, {ET_F64, FP_F64},
    {ET_F8E5M2, FP_F8E5M2}, {ET_F8E4M3FN, FP_F8E4M3FN},
    {ET_F8E4M3, FP_F8E4M3}, {ET_F8E3M4, FP_F8E3M4},
    {ET_F8E4M3FNUZ, FP_F8E4M3FNUZ}, {ET_F8E5M2FNUZ, FP_F8E5M2FNUZ},
    {ET_F8E4M3B11FNUZ, FP_F8E4M3B11FNUZ}, {ET_F8E8M0FNU, FP_F8E8M0FNU},
    {ET_F4E2M1FN, FP_F4E2M1FN},
  };
  int nfloat = 0;
  for (int t = ET_INVALID + 1; t < ET_COUNT; t++)
    nfloat += et_is_float((ElemType)t);
  cr_assert_eq(nfloat, (int)ARRAY_LEN(pairs));
  for (size_t i = 0; i < ARRAY_LEN(pairs); i++)
    cr_assert_eq(et_fp_format(pairs[i].t), pairs[i].f, "%s", et_name(pairs[i].t));
  cr_assert_eq(et_complex_component(ET_C64), ET_F32);
  cr_assert_eq(et_complex_component(ET_C128), ET_F64);
  cr_assert_eq(et_complex_component(ET_F16), ET_F16);
  cr_assert_eq(et_complex_component(ET_S32), ET_S32);
}

Test(types, fp_format_of_non_float_is_a_bug, .signal = SIGABRT) {
  freopen("/dev/null", "w", stderr);
  et_fp_format(ET_S32);
}
