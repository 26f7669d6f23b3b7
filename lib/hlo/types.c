/*
 * types.c - element types: names, widths and classes, all read from the
 * table in types.def so that adding a type is one line there.
 */
#include <string.h>

#include "hlo.h"

typedef struct EtInfo {
  const char *name;
  int bits;        /* logical width */
  int bytes;       /* bytes per element in a literal */
  ElemClass cls;
} EtInfo;

static const EtInfo et_info[ET_COUNT] = {
  [ET_INVALID] = {"invalid", 0, 0, ETC_NONE},
#define ET(id, name, bits, bytes, cls) [ET_##id] = {name, bits, bytes, cls},
#include "types.def"
#undef ET
};

static const EtInfo *info(ElemType t) {
  return (unsigned)t < ET_COUNT ? &et_info[t] : &et_info[ET_INVALID];
}

const char *et_name(ElemType t) { return info(t)->name; }

/* "opaque_type" is the long spelling XLA's lexer also accepts for opaque. */
ElemType et_from_name(const char *s, size_t n) {
  if (!s)
    return ET_INVALID;
  for (int t = ET_INVALID + 1; t < ET_COUNT; t++) {
    const char *name = et_info[t].name;
    if (strlen(name) == n && memcmp(name, s, n) == 0)
      return (ElemType)t;
  }
  if (n == 11 && memcmp(s, "opaque_type", 11) == 0)
    return ET_OPAQUE;
  return ET_INVALID;
}

int et_bits(ElemType t) { return info(t)->bits; }

int et_bytes(ElemType t) { return info(t)->bytes; }

ElemClass et_class(ElemType t) { return info(t)->cls; }

bool et_is_float(ElemType t) { return et_class(t) == ETC_FLOAT; }

bool et_is_int(ElemType t) {
  ElemClass c = et_class(t);
  return c == ETC_SINT || c == ETC_UINT;
}

bool et_is_signed_int(ElemType t) { return et_class(t) == ETC_SINT; }

bool et_is_unsigned_int(ElemType t) { return et_class(t) == ETC_UINT; }

bool et_is_complex(ElemType t) { return et_class(t) == ETC_COMPLEX; }

bool et_is_array(ElemType t) {
  switch (et_class(t)) {
  case ETC_PRED:
  case ETC_SINT:
  case ETC_UINT:
  case ETC_FLOAT:
  case ETC_COMPLEX:
    return true;
  default:
    return false;
  }
}

/* Internal bug to ask for the format of a type that is not a real float. */
FpFormat et_fp_format(ElemType t) {
  switch (t) {
  case ET_F16: return FP_F16;
  case ET_BF16: return FP_BF16;
  case ET_F32: return FP_F32;
  case ET_F64: return FP_F64;
  case ET_F8E5M2: return FP_F8E5M2;
  case ET_F8E4M3FN: return FP_F8E4M3FN;
  case ET_F8E4M3: return FP_F8E4M3;
  case ET_F8E3M4: return FP_F8E3M4;
  case ET_F8E4M3FNUZ: return FP_F8E4M3FNUZ;
  case ET_F8E5M2FNUZ: return FP_F8E5M2FNUZ;
  case ET_F8E4M3B11FNUZ: return FP_F8E4M3B11FNUZ;
  case ET_F8E8M0FNU: return FP_F8E8M0FNU;
  case ET_F4E2M1FN: return FP_F4E2M1FN;
  default:
    die("et_fp_format: %s is not a floating-point type", et_name(t));
  }
}

ElemType et_complex_component(ElemType t) {
  switch (t) {
  case ET_C64: return ET_F32;
  case ET_C128: return ET_F64;
  default: return t;
  }
}
