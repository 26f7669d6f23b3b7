/*
 * parse_literal.c - constant literals in HLO text, and hlo_parse_literal.
 *
 *   literal ::= '(' [literal (',' literal)*] ')'          (tuple shape)
 *             | value                                      (rank 0)
 *             | '{' items '}'  nested exactly rank deep    (rank >= 1)
 *             | '{' '...' '}'                              (elided)
 *   value   ::= int | decimal | inf | -inf | nan | -nan | nan(0x..)
 *             | true | false | '(' real ',' imag ')'       (complex)
 *
 * Commas between items are optional, as in XLA.  Values are converted to
 * the element type as XLA's parser converts them: integers must fit the type
 * (an out-of-range value is an error), floats round to nearest even and a
 * finite value that would become infinite is an error, NaN payloads are
 * carried into the type's mantissa (quiet NaN when none is given).  Data is
 * written dense, row-major, little-endian, et_bytes() per element.
 */
#include "parse_internal.h"

#include <math.h>
#include <string.h>

static const struct {
  int bits, bytes;
  ElemClass cls;
} et_info[ET_COUNT] = {
    [ET_INVALID] = {0, 0, ETC_NONE},
#define ET(id, name, bits, bytes, cls) [ET_##id] = {bits, bytes, cls},
#include "types.def"
#undef ET
};

/* Floating-point formats: exponent and mantissa widths, and whether the
 * format has signalling NaNs (and so NaN payloads). */
static const struct {
  ElemType et;
  FpFormat fmt;
  int ebits, mbits;
  bool payload;
} float_info[] = {
    {ET_F16, FP_F16, 5, 10, true},
    {ET_BF16, FP_BF16, 8, 7, true},
    {ET_F32, FP_F32, 8, 23, true},
    {ET_F64, FP_F64, 11, 52, true},
    {ET_F8E5M2, FP_F8E5M2, 5, 2, true},
    {ET_F8E4M3, FP_F8E4M3, 4, 3, true},
    {ET_F8E3M4, FP_F8E3M4, 3, 4, true},
    {ET_F8E4M3FN, FP_F8E4M3FN, 4, 3, false},
    {ET_F8E4M3FNUZ, FP_F8E4M3FNUZ, 4, 3, false},
    {ET_F8E5M2FNUZ, FP_F8E5M2FNUZ, 5, 2, false},
    {ET_F8E4M3B11FNUZ, FP_F8E4M3B11FNUZ, 4, 3, false},
    {ET_F8E8M0FNU, FP_F8E8M0FNU, 8, 0, false},
    {ET_F4E2M1FN, FP_F4E2M1FN, 2, 1, false},
};

static int float_index(ElemType et) {
  for (size_t i = 0; i < ARRAY_LEN(float_info); i++)
    if (float_info[i].et == et)
      return (int)i;
  return -1;
}

static void put_le(uint8_t *dst, uint64_t v, int n) {
  for (int i = 0; i < n; i++)
    dst[i] = (uint8_t)(v >> (8 * i));
}

static uint64_t double_bits(double v) {
  uint64_t b;
  memcpy(&b, &v, sizeof b);
  return b;
}

/* Encodes v as element type et (a real float type). */
static bool encode_float(Parser *p, const char *at, ElemType et, double v,
                         uint64_t *out) {
  int fi = float_index(et);
  if (fi < 0)
    return perr_at(p, at, "internal: %s is not a float type", et_name(et));
  const char *tn = et_name(et);
  if (isnan(v)) {
    uint64_t b = double_bits(v);
    bool neg = b >> 63;
    uint64_t payload = b & ((1ull << 52) - 1);
    const uint64_t quiet_double = 1ull << 51;
    if (payload == 0)
      payload = quiet_double;
    if (!float_info[fi].payload) {
      if (payload != quiet_double)
        return perr_at(p, at, "%s does not support NaN payloads", tn);
      *out = fp_from_double(float_info[fi].fmt, neg ? -NAN : NAN);
      return true;
    }
    int e = float_info[fi].ebits, m = float_info[fi].mbits;
    uint64_t mask = (1ull << m) - 1;
    if (payload == quiet_double)
      payload = 1ull << (m - 1);
    else if (payload > mask)
      return perr_at(p, at,
                     "NaN payload 0x%llx is out of range for %s (at most 0x%llx)",
                     (unsigned long long)payload, tn, (unsigned long long)mask);
    *out = ((uint64_t)neg << (e + m)) | (((1ull << e) - 1) << m) | payload;
    return true;
  }
  bool finite_out;
  if (et == ET_F64) {
    *out = double_bits(v);
    finite_out = isfinite(v);
  } else if (et == ET_F32) {
    float f = (float)v;
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    *out = u;
    finite_out = isfinite(f);
  } else {
    *out = fp_from_double(float_info[fi].fmt, v);
    finite_out = isfinite(fp_to_double(float_info[fi].fmt, *out));
  }
  if (isfinite(v) && !finite_out)
    return perr_at(p, at, "value %.17g is out of range for %s", v, tn);
  return true;
}

/* The literal being filled by parse_dense. */
typedef struct Dense {
  Literal *lit;
  ElemType et;
  int bytes;
  int64_t total;   /* elements; -1 when too many to store */
  int64_t index;   /* next row-major element */
} Dense;

/* Where element ds->index goes; storage is allocated with the first value
 * (an elided literal never gets any). */
static uint8_t *slot(Parser *p, Dense *ds) {
  if (ds->index < 0 || ds->index >= ds->total)
    return NULL;
  if (!ds->lit->data)
    ds->lit->data = arena_alloc(p->a, (size_t)ds->total * (size_t)ds->bytes);
  return ds->lit->data + ds->index * ds->bytes;
}

/* A double from an int, decimal, inf or -inf token (NaNs included). */
static bool value_double(Parser *p, double *out) {
  const Token *t = &p->lx.tok;
  switch (t->kind) {
  case TK_INT:
    *out = t->neg ? -(double)t->u : (double)t->u;
    break;
  case TK_DECIMAL:
    if (isinf(t->d))
      return perr(p, "constant is out of range for a double");
    *out = t->d;
    break;
  case TK_KW_INF:
    *out = INFINITY;
    break;
  case TK_NEGINF:
    *out = -INFINITY;
    break;
  default:
    return perr(p, "expected a floating-point value");
  }
  padvance(p);
  return true;
}

/* '(' real ',' imag ')' */
static bool parse_complex(Parser *p, Dense *ds) {
  ElemType comp = ds->et == ET_C64 ? ET_F32 : ET_F64;
  int half = ds->bytes / 2;
  padvance(p);
  double re, im;
  const char *re_at = p->lx.tok.s;
  if (!value_double(p, &re))
    return false;
  if (!pexpect(p, TK_COMMA, "complex value (real, imag)"))
    return false;
  const char *im_at = p->lx.tok.s;
  if (!value_double(p, &im))
    return false;
  if (!pexpect(p, TK_RPAREN, "complex value (real, imag)"))
    return false;
  uint64_t rb, ib;
  if (!encode_float(p, re_at, comp, re, &rb) ||
      !encode_float(p, im_at, comp, im, &ib))
    return false;
  uint8_t *dst = slot(p, ds);
  if (dst) {
    put_le(dst, rb, half);
    put_le(dst + half, ib, half);
  }
  return true;
}

static bool parse_value(Parser *p, Dense *ds) {
  const Token *t = &p->lx.tok;
  const char *at = t->s;
  ElemClass cls = et_info[ds->et].cls;
  const char *tn = et_name(ds->et);
  uint64_t bits = 0;
  switch (cls) {
  case ETC_PRED:
    if (t->kind == TK_KW_TRUE || t->kind == TK_KW_FALSE)
      bits = t->kind == TK_KW_TRUE;
    else if (t->kind == TK_INT)
      bits = t->u != 0;
    else
      return perr(p, "expected true, false or an integer for pred");
    padvance(p);
    break;
  case ETC_SINT:
  case ETC_UINT: {
    if (t->kind != TK_INT)
      return perr(p, "expected an integer for %s", tn);
    int b = et_info[ds->et].bits;
    uint64_t u = t->u;
    bool ok;
    long long lo, hi_s;
    unsigned long long hi_u;
    if (cls == ETC_SINT) {
      uint64_t lim = 1ull << (b - 1); /* |min| */
      ok = t->neg ? u <= lim : u < lim;
      lo = (long long)(0 - lim);
      hi_s = (long long)(lim - 1);
      if (!ok)
        return perr_at(p, at, "value %s%llu is out of range for %s [%lld, %lld]",
                       t->neg ? "-" : "", (unsigned long long)u, tn, lo, hi_s);
      bits = t->neg ? 0 - u : u;
    } else {
      hi_u = b >= 64 ? UINT64_MAX : (1ull << b) - 1;
      ok = (!t->neg || u == 0) && u <= hi_u;
      if (!ok)
        return perr_at(p, at, "value %s%llu is out of range for %s [0, %llu]",
                       t->neg ? "-" : "", (unsigned long long)u, tn, hi_u);
      bits = u;
    }
    padvance(p);
    break;
  }
  case ETC_FLOAT: {
    double v;
    if (t->kind == TK_KW_TRUE || t->kind == TK_KW_FALSE)
      return perr(p, "expected a floating-point value for %s", tn);
    if (!value_double(p, &v) || !encode_float(p, at, ds->et, v, &bits))
      return false;
    break;
  }
  case ETC_COMPLEX:
    return perr(p, "complex values are written as (real, imag)");
  default:
    return perr(p, "%s values cannot be written as literals", tn);
  }
  uint8_t *dst = slot(p, ds);
  if (dst)
    put_le(dst, bits, ds->bytes);
  return true;
}

static bool is_value_token(TokKind k) {
  return k == TK_INT || k == TK_DECIMAL || k == TK_KW_INF || k == TK_NEGINF ||
         k == TK_KW_TRUE || k == TK_KW_FALSE;
}

/* Shape rank and dims checks, as XLA's ParseDenseLiteral: one walk over the
 * tokens, counting the items seen at each nesting level. */
static bool parse_dense(Parser *p, Shape *shape, Literal *lit) {
  Dense ds = {lit, shape->et, et_info[shape->et].bytes, 0, 0};
  int rank = shape->rank;
  int64_t total = 1;
  for (int i = 0; i < rank; i++) {
    if (shape->dims[i] != 0 && total > INT64_MAX / shape->dims[i]) {
      total = -1;
      break;
    }
    total *= shape->dims[i];
  }
  /* Each element takes at least one character of text, so a literal with
   * more elements than the rest of the input can only be elided: storage
   * is allocated only when the count is plausible. */
  size_t left = (size_t)(p->lx.end - p->lx.tok.s);
  ds.total = total >= 0 && (uint64_t)total <= left + 1 ? total : -1;

  int64_t *seen = xcalloc((size_t)rank + 1, sizeof(int64_t));
  const char **open_at = xcalloc((size_t)rank + 1, sizeof(char *));
  const char *start = p->lx.tok.s;
  int nest = 0;
  bool elided = false, any = false, ok = true;
  do {
    TokKind k = ptok(p);
    if (k == TK_LBRACE) {
      if (nest >= rank) {
        ok = perr(p, "literal is nested deeper than the rank %d of %s", rank,
                  parse_shape_str(p, shape));
        break;
      }
      if (nest > 0)
        seen[nest - 1]++;
      open_at[nest] = p->lx.tok.s;
      nest++;
      padvance(p);
    } else if (k == TK_RBRACE) {
      if (nest == 0) {
        ok = perr(p, "unexpected '}' in literal");
        break;
      }
      nest--;
      if (seen[nest] != shape->dims[nest]) {
        if (rank == 1)
          ok = perr_at(p, open_at[nest],
                       "literal has %lld elements but shape %s needs %lld",
                       (long long)seen[nest], parse_shape_str(p, shape),
                       (long long)shape->dims[nest]);
        else
          ok = perr_at(p, open_at[nest],
                       "literal has %lld elements in dimension %d but shape %s "
                       "needs %lld",
                       (long long)seen[nest], nest, parse_shape_str(p, shape),
                       (long long)shape->dims[nest]);
        break;
      }
      seen[nest] = 0;
      padvance(p);
    } else if (k == TK_DOTS) {
      if (nest != 1) {
        ok = perr(p, "'...' is only allowed directly inside the outer braces "
                     "of a literal");
        break;
      }
      seen[0] = shape->dims[0];
      elided = true;
      padvance(p);
    } else if (k == TK_COMMA) {
      padvance(p);
    } else if (k == TK_LPAREN || is_value_token(k)) {
      if (nest == 0 && rank > 0 && ds.total > 0) {
        /* XLA quirk kept for compatibility: a bare value for an array sets
         * element 0 and leaves the rest zero. */
        pwarn_at(p, p->lx.tok.s, "a single value for %s sets only its first "
                                 "element; write {...} with every element",
                 parse_shape_str(p, shape));
        ok = k == TK_LPAREN ? et_is_complex(shape->et) && parse_complex(p, &ds)
                            : parse_value(p, &ds);
        if (!ok && k == TK_LPAREN && !et_is_complex(shape->et))
          ok = perr(p, "unexpected '(' in literal");
        any = true;
        break;
      }
      if (nest != rank) {
        ok = perr(p, "literal value at nesting depth %d, but shape %s has rank %d",
                  nest, parse_shape_str(p, shape), rank);
        break;
      }
      if (rank > 0)
        seen[rank - 1]++;
      if (ds.total < 0) {
        ok = perr_at(p, start, "literal text is too short for shape %s",
                     parse_shape_str(p, shape));
        break;
      }
      if (k == TK_LPAREN) {
        if (!et_is_complex(shape->et)) {
          ok = perr(p, "unexpected '(' in literal: only complex values use "
                       "parentheses");
          break;
        }
        ok = parse_complex(p, &ds);
      } else {
        ok = parse_value(p, &ds);
      }
      if (!ok)
        break;
      ds.index++;
      any = true;
    } else {
      if (k == TK_ERROR)
        ok = perr(p, "invalid literal");
      else
        ok = perr(p, "unexpected token in literal");
      break;
    }
  } while (nest > 0);
  if (ok && rank == 0 && !any)
    ok = perr(p, "expected a literal value");
  free(seen);
  free(open_at);
  if (ok && elided) {
    /* As XLA's parser: accepted, standing for a placeholder pattern. */
    if (!p->elided_warned)
      pwarn_at(p, start, "constant values elided as {...}: %s is filled with "
                         "XLA's placeholder values (u32 words 0, 1, 2, ... "
                         "through the module), not the original data; later "
                         "elided constants of this module are not reported",
               parse_shape_str(p, shape));
    p->elided_warned = true;
    lit->elided = true;
    lit->data = NULL;
    lit->elided_word = p->elided_word;
    lit->elided_byte = p->elided_byte;
    literal_elided_advance(shape, &p->elided_word, &p->elided_byte);
  } else if (ok && !lit->data) {
    /* No values stored (no elements, or XLA's bare-scalar quirk): zeros. */
    if (ds.total < 0)
      return perr_at(p, start, "literal text is too short for shape %s",
                     parse_shape_str(p, shape));
    lit->data = arena_alloc(p->a, (size_t)ds.total * (size_t)ds.bytes);
  }
  return ok;
}

bool parse_literal(Parser *p, Shape *shape, Literal **out) {
  if (!parse_enter(p))
    return false;
  Literal *lit = ARENA_NEW(p->a, Literal);
  lit->shape = shape;
  bool ok = true;
  if (shape->et == ET_TUPLE) {
    const char *at = p->lx.tok.s;
    ok = pexpect(p, TK_LPAREN, "tuple literal");
    if (ok) {
      lit->ntuple = shape->ntuple;
      lit->tuple = ARENA_ARRAY(p->a, Literal *, shape->ntuple);
      int i = 0;
      if (ptok(p) != TK_RPAREN) {
        for (;; i++) {
          if (i >= shape->ntuple) {
            ok = perr_at(p, at, "tuple literal has more than the %d elements "
                                "of shape %s",
                         shape->ntuple, parse_shape_str(p, shape));
            break;
          }
          if (!(ok = parse_literal(p, shape->tuple[i], &lit->tuple[i])))
            break;
          if (!peat(p, TK_COMMA)) {
            i++;
            break;
          }
        }
      }
      if (ok && i != shape->ntuple)
        ok = perr_at(p, at, "tuple literal has %d elements but shape %s needs %d",
                     i, parse_shape_str(p, shape), shape->ntuple);
      if (ok)
        ok = pexpect(p, TK_RPAREN, "tuple literal");
    }
  } else if (et_is_array(shape->et)) {
    ok = parse_dense(p, shape, lit);
  } else {
    ok = perr(p, "a %s shape cannot have a literal", et_name(shape->et));
  }
  parse_leave(p);
  if (ok)
    *out = lit;
  return ok;
}

bool parse_literal_with_shape(Parser *p, Literal **out) {
  if (ptok(p) != TK_LPAREN) {
    Shape *s;
    return parse_shape(p, &s) && parse_literal(p, s, out);
  }
  /* A tuple of literals, each with its own shape. */
  if (!parse_enter(p))
    return false;
  padvance(p);
  PtrVec elems = {0};
  bool ok = true;
  while (ok && ptok(p) != TK_RPAREN) {
    Literal *e;
    if (!(ok = parse_literal_with_shape(p, &e)))
      break;
    vec_push(&elems, e);
    if (ptok(p) != TK_RPAREN)
      ok = pexpect(p, TK_COMMA, "tuple literal");
  }
  if (ok) {
    padvance(p);
    Literal *lit = ARENA_NEW(p->a, Literal);
    Shape *s = ARENA_NEW(p->a, Shape);
    s->et = ET_TUPLE;
    s->ntuple = elems.len;
    s->tuple = ARENA_ARRAY(p->a, Shape *, elems.len);
    lit->ntuple = elems.len;
    lit->tuple = vec_to_arena(p->a, &elems);
    for (int i = 0; i < elems.len; i++)
      s->tuple[i] = lit->tuple[i]->shape;
    lit->shape = s;
    *out = lit;
  }
  vec_free(&elems);
  parse_leave(p);
  return ok;
}

Literal *hlo_parse_literal(Arena *a, const Shape *shape, const char *text,
                           Diag *d) {
  Parser p;
  parser_init_text(&p, a, text, d);
  Literal *lit = NULL;
  bool ok = parse_literal(&p, shape_clone(a, shape), &lit);
  if (ok && ptok(&p) != TK_EOF)
    ok = perr(&p, "unexpected text after the literal");
  vec_free(&p.ints);
  vec_free(&p.opstack);
  return ok ? lit : NULL;
}
