/*
 * lex.c - the HLO text lexer.
 *
 * The token grammar is XLA's (hlo_lexer.cc), matched by hand instead of by
 * regular expressions:
 *
 *   float    [-]?((\d+|\d+.\d*|\d*.\d+)([eE][+-]?\d+)) | [-]?(\d+.\d*|\d*.\d+)
 *   dimlabel [0-9bf?]{2,}_[0-9io?]{2,}->[0-9bf?]{2,}
 *   dxd      [0-9]+(x[0-9]+)+
 *   pad      [-]?\d+_[-]?\d+(_\d+)?(x[-]?\d+_[-]?\d+(_\d+)?)*
 *   int      [-]?\d+           (magnitude must fit in 64 bits)
 *   special  -inf  nan  -nan  nan(0x<hex>)
 *
 * tried in that order at a digit, '-' or '?'.  A plain integer is recognized
 * on a fast path first, since nearly every number in a dump is one.
 */
#include "lex.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* The token kinds that need real work are lexed out of line, so that
 * lex_next itself stays small (few registers to save on every call). */
#if defined(__GNUC__)
#define NOINLINE __attribute__((noinline))
#else
#define NOINLINE
#endif

/* Character classes, one table lookup each. */
enum { C_ALPHA = 1, C_DIGIT = 2, C_IDENT = 4, C_BLANK = 8, C_HEX = 16 };

#define ALPHA_ (C_ALPHA | C_IDENT)
#define HEXA_ (C_ALPHA | C_IDENT | C_HEX)
#define DIGIT_ (C_DIGIT | C_IDENT | C_HEX)
static const unsigned char cclass[256] = {
    ['\t'] = C_BLANK, ['\r'] = C_BLANK, ['\f'] = C_BLANK, ['\v'] = C_BLANK,
    [' '] = C_BLANK, ['-'] = C_IDENT, ['.'] = C_IDENT, ['_'] = C_IDENT,
    ['0'] = DIGIT_, ['1'] = DIGIT_, ['2'] = DIGIT_, ['3'] = DIGIT_,
    ['4'] = DIGIT_, ['5'] = DIGIT_, ['6'] = DIGIT_, ['7'] = DIGIT_,
    ['8'] = DIGIT_, ['9'] = DIGIT_,
    ['a'] = HEXA_, ['b'] = HEXA_, ['c'] = HEXA_, ['d'] = HEXA_, ['e'] = HEXA_,
    ['f'] = HEXA_, ['g'] = ALPHA_, ['h'] = ALPHA_, ['i'] = ALPHA_,
    ['j'] = ALPHA_, ['k'] = ALPHA_, ['l'] = ALPHA_, ['m'] = ALPHA_,
    ['n'] = ALPHA_, ['o'] = ALPHA_, ['p'] = ALPHA_, ['q'] = ALPHA_,
    ['r'] = ALPHA_, ['s'] = ALPHA_, ['t'] = ALPHA_, ['u'] = ALPHA_,
    ['v'] = ALPHA_, ['w'] = ALPHA_, ['x'] = ALPHA_, ['y'] = ALPHA_,
    ['z'] = ALPHA_,
    ['A'] = HEXA_, ['B'] = HEXA_, ['C'] = HEXA_, ['D'] = HEXA_, ['E'] = HEXA_,
    ['F'] = HEXA_, ['G'] = ALPHA_, ['H'] = ALPHA_, ['I'] = ALPHA_,
    ['J'] = ALPHA_, ['K'] = ALPHA_, ['L'] = ALPHA_, ['M'] = ALPHA_,
    ['N'] = ALPHA_, ['O'] = ALPHA_, ['P'] = ALPHA_, ['Q'] = ALPHA_,
    ['R'] = ALPHA_, ['S'] = ALPHA_, ['T'] = ALPHA_, ['U'] = ALPHA_,
    ['V'] = ALPHA_, ['W'] = ALPHA_, ['X'] = ALPHA_, ['Y'] = ALPHA_,
    ['Z'] = ALPHA_,
};
#undef ALPHA_
#undef HEXA_
#undef DIGIT_

static inline bool is_alpha(int c) { return cclass[(unsigned char)c] & C_ALPHA; }
static inline bool is_digit(int c) { return cclass[(unsigned char)c] & C_DIGIT; }
static inline bool is_hex(int c) { return cclass[(unsigned char)c] & C_HEX; }
static inline bool is_ident_char(int c) {
  return cclass[(unsigned char)c] & C_IDENT;
}
static inline bool is_blank(int c) { return cclass[(unsigned char)c] & C_BLANK; }

/*
 * Element type and keyword tables
 */
static const struct {
  const char *name;
  size_t len;
  ElemType et;
} et_names[] = {
#define ET(id, name, bits, bytes, cls) {name, sizeof(name) - 1, ET_##id},
#include "types.def"
#undef ET
    {"opaque_type", 11, ET_OPAQUE},
};

#define PACK4(a, b, c, d)                                                      \
  ((uint32_t)(unsigned char)(a) | (uint32_t)(unsigned char)(b) << 8 |          \
   (uint32_t)(unsigned char)(c) << 16 | (uint32_t)(unsigned char)(d) << 24)

/* The common short names without a table walk (the walk below finds every
 * name of types.def; this only answers the frequent ones sooner). */
static ElemType short_elem_type(const char *s, size_t n) {
  uint32_t k = PACK4(s[0], s[1], n > 2 ? s[2] : 0, n > 3 ? s[3] : 0);
  switch (k) {
  case PACK4('p', 'r', 'e', 'd'): return ET_PRED;
  case PACK4('s', '8', 0, 0): return ET_S8;
  case PACK4('s', '1', '6', 0): return ET_S16;
  case PACK4('s', '3', '2', 0): return ET_S32;
  case PACK4('s', '6', '4', 0): return ET_S64;
  case PACK4('u', '8', 0, 0): return ET_U8;
  case PACK4('u', '1', '6', 0): return ET_U16;
  case PACK4('u', '3', '2', 0): return ET_U32;
  case PACK4('u', '6', '4', 0): return ET_U64;
  case PACK4('f', '1', '6', 0): return ET_F16;
  case PACK4('b', 'f', '1', '6'): return ET_BF16;
  case PACK4('f', '3', '2', 0): return ET_F32;
  case PACK4('f', '6', '4', 0): return ET_F64;
  case PACK4('c', '6', '4', 0): return ET_C64;
  default: return ET_INVALID;
  }
}

ElemType lex_elem_type(const char *s, size_t n) {
  if (n < 2 || n > 13)
    return ET_INVALID;
  if (n <= 4) {
    ElemType et = short_elem_type(s, n);
    if (et != ET_INVALID)
      return et;
  }
  /* Cheap filters first: this runs for every opcode and identifier. */
  switch (s[0]) {
  case 's': case 'u': case 'f': case 'c':
    if (!is_digit(s[1]))
      return ET_INVALID;
    break;
  case 'b':
    if (n != 4 || s[1] != 'f')
      return ET_INVALID;
    break;
  case 'p':
    if (n != 4)
      return ET_INVALID;
    break;
  case 't':
    if (n != 5)
      return ET_INVALID;
    break;
  case 'o':
    if (n != 6 && n != 11)
      return ET_INVALID;
    break;
  default:
    return ET_INVALID;
  }
  for (size_t i = 0; i < ARRAY_LEN(et_names); i++)
    if (et_names[i].len == n && et_names[i].name[1] == s[1] &&
        memcmp(et_names[i].name, s, n) == 0)
      return et_names[i].et;
  return ET_INVALID;
}

static const struct {
  const char *word;
  size_t len;
  TokKind kind;
} keywords[] = {
    {"HloModule", 9, TK_KW_HLOMODULE},
    {"ENTRY", 5, TK_KW_ENTRY},
    {"ROOT", 4, TK_KW_ROOT},
    {"true", 4, TK_KW_TRUE},
    {"false", 5, TK_KW_FALSE},
    {"inf", 3, TK_KW_INF},
    {"maximal", 7, TK_KW_MAXIMAL},
    {"replicated", 10, TK_KW_REPLICATED},
    {"manual", 6, TK_KW_MANUAL},
    {"last_tile_dim_replicate", 23, TK_KW_LAST_TILE_DIM_REPLICATE},
    {"shard_as", 8, TK_KW_SHARD_AS},
    {"shard_like", 10, TK_KW_SHARD_LIKE},
    {"unknown", 7, TK_KW_UNKNOWN},
    {"unreduced", 9, TK_KW_UNREDUCED},
    {"FileNames", 9, TK_KW_FILENAMES},
    {"FunctionNames", 13, TK_KW_FUNCTIONNAMES},
    {"FileLocations", 13, TK_KW_FILELOCATIONS},
    {"StackFrames", 11, TK_KW_STACKFRAMES},
};

static TokKind keyword_kind(const char *s, size_t n) {
  if (n < 3 || n > 23)
    return TK_IDENT;
  switch (s[0]) { /* the first letters of the keywords */
  case 'H': case 'E': case 'R': case 't': case 'f': case 'i': case 'm':
  case 'r': case 'l': case 's': case 'u': case 'F': case 'S':
    break;
  default:
    return TK_IDENT;
  }
  for (size_t i = 0; i < ARRAY_LEN(keywords); i++)
    if (keywords[i].len == n && keywords[i].word[0] == s[0] &&
        memcmp(keywords[i].word, s, n) == 0)
      return keywords[i].kind;
  return TK_IDENT;
}

/*
 * Pattern matchers: each returns the end of the match at p, or NULL.
 */
static const char *match_digits(const char *p) {
  if (!is_digit(*p))
    return NULL;
  while (is_digit(*p))
    p++;
  return p;
}

static const char *match_float(const char *p) {
  if (*p == '-')
    p++;
  const char *q = p;
  while (is_digit(*q))
    q++;
  size_t int_digits = (size_t)(q - p);
  bool dot = false;
  size_t frac_digits = 0;
  if (*q == '.') {
    const char *r = q + 1;
    while (is_digit(*r))
      r++;
    frac_digits = (size_t)(r - q - 1);
    if (int_digits + frac_digits > 0) {
      dot = true;
      q = r;
    }
  }
  if (int_digits == 0 && !dot)
    return NULL;
  if (*q == 'e' || *q == 'E') {
    const char *r = q + 1;
    if (*r == '+' || *r == '-')
      r++;
    const char *x = match_digits(r);
    if (x)
      return x;
  }
  return dot ? q : NULL;
}

static const char *match_label_part(const char *p, const char *set) {
  const char *q = p;
  while (*q && strchr(set, *q))
    q++;
  return q - p >= 2 ? q : NULL;
}

static const char *match_dimlabels(const char *p) {
  const char *q = match_label_part(p, "0123456789bf?");
  if (!q || *q != '_')
    return NULL;
  q = match_label_part(q + 1, "0123456789io?");
  if (!q || q[0] != '-' || q[1] != '>')
    return NULL;
  return match_label_part(q + 2, "0123456789bf?");
}

static const char *match_dxd(const char *p) {
  const char *q = match_digits(p);
  if (!q || *q != 'x' || !is_digit(q[1]))
    return NULL;
  while (*q == 'x' && is_digit(q[1]))
    q = match_digits(q + 1);
  return q;
}

/* [-]?\d+_[-]?\d+(_\d+)? */
static const char *match_pad_dim(const char *p) {
  const char *q = match_digits(*p == '-' ? p + 1 : p);
  if (!q || *q != '_')
    return NULL;
  q++;
  q = match_digits(*q == '-' ? q + 1 : q);
  if (!q)
    return NULL;
  if (*q == '_' && is_digit(q[1]))
    q = match_digits(q + 1);
  return q;
}

static const char *match_pad(const char *p) {
  const char *q = match_pad_dim(p);
  if (!q)
    return NULL;
  while (*q == 'x') {
    const char *r = match_pad_dim(q + 1);
    if (!r)
      break;
    q = r;
  }
  return q;
}

/*
 * Token constructors
 */
static NOINLINE TokKind set_error(Lexer *lx, const char *at,
                                  const char *msg) {
  Token *t = &lx->tok;
  t->kind = TK_ERROR;
  t->s = at;
  t->e = at < lx->end ? at + 1 : at;
  t->err = msg;
  lx->pos = lx->end; /* stop: every later lex_next gives EOF */
  return TK_ERROR;
}

static TokKind finish(Lexer *lx, TokKind k, const char *e) {
  lx->tok.kind = k;
  lx->tok.e = e;
  lx->pos = e;
  return k;
}

/* nan payload "(0x<hex>)" at p; returns its end or NULL (payload in *out). */
static const char *match_nan_payload(const char *p, uint64_t *out,
                                     bool *range_ok) {
  if (p[0] != '(' || p[1] != '0' || p[2] != 'x' || !is_hex(p[3]))
    return NULL;
  const char *q = p + 3;
  uint64_t v = 0;
  bool ok = true;
  for (; is_hex(*q); q++) {
    int c = *q;
    unsigned dig = is_digit(c) ? (unsigned)(c - '0') : (unsigned)((c | 32) - 'a' + 10);
    if (v >> 60)
      ok = false;
    v = (v << 4) | dig;
  }
  if (*q != ')')
    return NULL;
  /* A double's payload is its 52 mantissa bits; 0 is not a NaN. */
  if (v == 0 || v >= (1ull << 52))
    ok = false;
  *out = v;
  *range_ok = ok;
  return q + 1;
}

static double make_nan(bool neg, uint64_t payload) {
  uint64_t bits = 0x7ff0000000000000ull | payload;
  if (neg)
    bits |= 0x8000000000000000ull;
  double d;
  memcpy(&d, &bits, sizeof d);
  return d;
}

/* "nan" or "-nan" (p points after it), with an optional payload. */
static TokKind lex_nan(Lexer *lx, const char *p, bool neg) {
  uint64_t payload = 1ull << 51; /* quiet NaN without payload */
  if (*p == '(') {
    bool ok;
    const char *q = match_nan_payload(p, &payload, &ok);
    if (!q)
      return set_error(lx, lx->tok.s, "malformed NaN payload: expected nan(0x<hex>)");
    if (!ok)
      return set_error(lx, lx->tok.s, "NaN payload out of range");
    p = q;
  }
  lx->tok.d = make_nan(neg, payload);
  return finish(lx, TK_DECIMAL, p);
}

static TokKind lex_decimal(Lexer *lx, const char *e) {
  const char *s = lx->tok.s;
  size_t n = (size_t)(e - s);
  char small[64];
  char *buf = n < sizeof small ? small : xmalloc(n + 1);
  memcpy(buf, s, n);
  buf[n] = 0;
  lx->tok.d = strtod(buf, NULL);
  if (buf != small)
    free(buf);
  return finish(lx, TK_DECIMAL, e);
}

/* An integer [-]?\d+ ending at e; its magnitude must fit in 64 bits. */
static TokKind lex_int(Lexer *lx, const char *p, const char *e) {
  Token *t = &lx->tok;
  t->neg = *p == '-';
  if (t->neg)
    p++;
  uint64_t v = 0;
  if (e - p <= 19) {
    /* At most 19 digits cannot overflow 64 bits. */
    for (; p < e; p++)
      v = v * 10 + (unsigned)(*p - '0');
  } else {
    for (; p < e; p++) {
      unsigned dig = (unsigned)(*p - '0');
      if (v > (UINT64_MAX - dig) / 10)
        return set_error(lx, t->s, "integer constant is too large");
      v = v * 10 + dig;
    }
  }
  t->u = v;
  return finish(lx, TK_INT, e);
}

static NOINLINE TokKind lex_number(Lexer *lx, const char *p) {
  Token *t = &lx->tok;
  /* Fast path: a plain integer not followed by a pattern character. */
  if (*p != '?') {
    const char *q = match_digits(*p == '-' ? p + 1 : p);
    if (q) {
      int c = *q;
      if (c != '.' && c != 'e' && c != 'E' && c != 'x' && c != '_' &&
          c != 'b' && c != 'f' && c != '?')
        return lex_int(lx, p, q);
    }
  }
  const char *e;
  if ((e = match_float(p)))
    return lex_decimal(lx, e);
  if ((e = match_dimlabels(p))) {
    t->v = p, t->vn = (size_t)(e - p);
    return finish(lx, TK_DIMLABELS, e);
  }
  if ((e = match_dxd(p))) {
    t->v = p, t->vn = (size_t)(e - p);
    return finish(lx, TK_DXD, e);
  }
  if ((e = match_pad(p))) {
    t->v = p, t->vn = (size_t)(e - p);
    return finish(lx, TK_PAD, e);
  }
  if ((e = match_digits(*p == '-' ? p + 1 : p)))
    return lex_int(lx, p, e);
  if (p[0] == '-' && p[1] == 'i' && p[2] == 'n' && p[3] == 'f')
    return finish(lx, TK_NEGINF, p + 4);
  if (p[0] == '-' && p[1] == 'n' && p[2] == 'a' && p[3] == 'n')
    return lex_nan(lx, p + 4, true);
  if (*p == '?')
    return finish(lx, TK_QUESTION, p + 1);
  return set_error(lx, p, "unexpected character '-'");
}

static NOINLINE TokKind lex_word(Lexer *lx, const char *p) {
  Token *t = &lx->tok;
  const char *q = p + 1;
  while (is_ident_char(*q))
    q++;
  size_t n = (size_t)(q - p);
  t->v = p, t->vn = n;
  if (*q == ':')
    return finish(lx, TK_NAME, q + 1);
  if (*q == '=')
    return finish(lx, TK_ATTR, q + 1);
  ElemType et = lex_elem_type(p, n);
  if (et != ET_INVALID && et != ET_TUPLE) {
    t->et = et;
    return finish(lx, TK_PRIMTYPE, q);
  }
  if (n == 3 && p[0] == 'n' && p[1] == 'a' && p[2] == 'n')
    return lex_nan(lx, q, false);
  TokKind k = keyword_kind(p, n);
  if (k != TK_IDENT)
    return finish(lx, k, q);
  if (*q == '>' && q[-1] == '-') {
    const char *e = match_dimlabels(p);
    if (e) {
      t->vn = (size_t)(e - p);
      return finish(lx, TK_DIMLABELS, e);
    }
  }
  return finish(lx, TK_IDENT, q);
}

static NOINLINE TokKind lex_string(Lexer *lx, const char *p) {
  char quote = *p;
  const char *q = p + 1;
  for (;;) {
    if (q >= lx->end)
      return set_error(lx, p, "unterminated string");
    if (*q == quote)
      break;
    if (*q == 0)
      return set_error(lx, q, "unexpected NUL character");
    if (*q == '\\') {
      if (q + 1 >= lx->end)
        return set_error(lx, p, "unterminated string");
      if (q[1] == 0)
        return set_error(lx, q + 1, "unexpected NUL character");
      q += 2;
      continue;
    }
    q++;
  }
  lx->tok.v = p + 1;
  lx->tok.vn = (size_t)(q - p - 1);
  return finish(lx, TK_STRING, q + 1);
}

/* %name */
static NOINLINE TokKind lex_percent(Lexer *lx, const char *p) {
  if (is_alpha(p[1]) || p[1] == '_') {
    const char *q = p + 2;
    while (is_ident_char(*q))
      q++;
    lx->tok.v = p + 1;
    lx->tok.vn = (size_t)(q - p - 1);
    return finish(lx, TK_NAME, q);
  }
  return set_error(lx, p, "expected a name after '%'");
}

/*
 * glog prefix: [IWEF]mmdd hh:mm:ss.uuuuuu <blanks> threadid <blanks>
 * file:line] and one optional blank.  Returns its end or NULL.
 */
static const char *match_glog(const char *p) {
  if (*p != 'I' && *p != 'W' && *p != 'E' && *p != 'F')
    return NULL;
  p++;
  for (int i = 0; i < 4; i++, p++)
    if (!is_digit(*p))
      return NULL;
  if (*p++ != ' ')
    return NULL;
  for (int i = 0; i < 3; i++) {
    if (!is_digit(p[0]) || !is_digit(p[1]))
      return NULL;
    p += 2;
    if (*p++ != (i < 2 ? ':' : '.'))
      return NULL;
  }
  if (!(p = match_digits(p)) || !is_blank(*p))
    return NULL;
  while (is_blank(*p))
    p++;
  if (!(p = match_digits(p)) || !is_blank(*p))
    return NULL;
  while (is_blank(*p))
    p++;
  const char *f = p;
  while (*p && *p != ':' && *p != '\n')
    p++;
  if (p == f || *p != ':')
    return NULL;
  if (!(p = match_digits(p + 1)) || *p != ']')
    return NULL;
  p++;
  if (is_blank(*p))
    p++;
  return p;
}

void lex_init(Lexer *lx, const char *buf, size_t len, bool strip_glog) {
  memset(lx, 0, sizeof *lx);
  lx->buf = buf;
  lx->end = buf + len;
  lx->pos = buf;
  lx->strip_glog = strip_glog;
  if (strip_glog) {
    const char *g = match_glog(buf);
    if (g)
      lx->pos = g;
  }
}

TokKind lex_next(Lexer *lx) {
  Token *t = &lx->tok;
  const char *p = lx->pos;
  lx->prev_end = t->e;
  bool nl = false;
  for (;;) {
    int c = *p;
    if (is_blank(c)) {
      p++;
    } else if (c == '\n') {
      p++;
      nl = true;
      if (lx->strip_glog && (*p == 'I' || *p == 'W' || *p == 'E' || *p == 'F')) {
        const char *g = match_glog(p);
        if (g)
          p = g;
      }
    } else if (c == '/' && p[1] == '/') {
      const char *s = p;
      while (p < lx->end && *p != '\n') {
        if (*p == 0) {
          t->nl_before = nl;
          return set_error(lx, p, "unexpected NUL character");
        }
        p++;
      }
      /* "// -----" alone on its line (longer dashes are decoration). */
      const char *r = s + 8;
      while (r < p && is_blank(*r))
        r++;
      if (p - s >= 8 && memcmp(s, "// -----", 8) == 0 && r == p) {
        t->s = s;
        t->nl_before = true;
        return finish(lx, TK_SPLIT, p);
      }
    } else if (c == '/' && p[1] == '*') {
      const char *s = p;
      p += 2;
      for (;;) {
        if (p >= lx->end) {
          t->nl_before = nl;
          return set_error(lx, s, "unterminated comment");
        }
        if (p[0] == '*' && p[1] == '/')
          break;
        if (*p == '\n')
          nl = true;
        else if (*p == 0) {
          t->nl_before = nl;
          return set_error(lx, p, "unexpected NUL character");
        }
        p++;
      }
      p += 2;
    } else {
      break;
    }
  }
  t->s = p;
  t->nl_before = nl;
  int c = (unsigned char)*p;
  switch (c) {
  case 0:
    if (p >= lx->end)
      return finish(lx, TK_EOF, p);
    return set_error(lx, p, "unexpected NUL character");
  case '=': return finish(lx, TK_EQUAL, p + 1);
  case ',': return finish(lx, TK_COMMA, p + 1);
  case ':': return finish(lx, TK_COLON, p + 1);
  case '*': return finish(lx, TK_STAR, p + 1);
  case '#': return finish(lx, TK_HASH, p + 1);
  case '+': return finish(lx, TK_PLUS, p + 1);
  case '~': return finish(lx, TK_TILDE, p + 1);
  case '[': return finish(lx, TK_LSQUARE, p + 1);
  case ']': return finish(lx, TK_RSQUARE, p + 1);
  case '{': return finish(lx, TK_LBRACE, p + 1);
  case '}': return finish(lx, TK_RBRACE, p + 1);
  case '(': return finish(lx, TK_LPAREN, p + 1);
  case ')': return finish(lx, TK_RPAREN, p + 1);
  case '<':
    if (p[1] == '=')
      return finish(lx, TK_LEQ, p + 2);
    return set_error(lx, p, "unexpected character '<'");
  case '.':
    if (p[1] == '.' && p[2] == '.')
      return finish(lx, TK_DOTS, p + 3);
    return set_error(lx, p, "unexpected character '.'");
  case '-':
    if (p[1] == '>')
      return finish(lx, TK_ARROW, p + 2);
    return lex_number(lx, p);
  case '?':
    return lex_number(lx, p);
  case '%':
    return lex_percent(lx, p);
  case '"':
  case '\'':
    return lex_string(lx, p);
  case '/':
    return set_error(lx, p, "unexpected character '/'");
  default:
    if (is_digit(c))
      return lex_number(lx, p);
    if (is_alpha(c) || c == '_')
      return lex_word(lx, p);
    return set_error(lx, p, c >= 0x20 && c < 0x7f ? "unexpected character"
                                                  : "unexpected non-ASCII or control character");
  }
}

TokKind lex_skip_to(Lexer *lx, const char *to) {
  lx->tok.e = to;
  lx->pos = to;
  return lex_next(lx);
}

Token lex_peek(Lexer *lx) {
  Token saved = lx->tok;
  const char *pos = lx->pos, *prev_end = lx->prev_end;
  lex_next(lx);
  Token next = lx->tok;
  lx->tok = saved;
  lx->pos = pos;
  lx->prev_end = prev_end;
  return next;
}

bool lex_raw_value(Lexer *lx, bool stop_at_blank) {
  Token *t = &lx->tok;
  const char *start = t->s, *p = start, *last = start;
  size_t depth = 0;
  /* A value the lexer could not tokenize (TK_ERROR) is scanned as text. */
  if (t->kind == TK_EOF || t->kind == TK_SPLIT || t->kind == TK_COMMA) {
    t->err = "expected an attribute value";
    return false;
  }
  while (p < lx->end) {
    int c = *p;
    if (c == '"' || c == '\'') {
      const char *q = p + 1;
      while (q < lx->end && *q != c && *q != 0)
        q += *q == '\\' && q[1] != 0 ? 2 : 1;
      if (q >= lx->end || *q == 0) {
        t->s = q < lx->end ? q : p;
        t->err = q < lx->end ? "unexpected NUL character" : "unterminated string";
        return false;
      }
      p = last = q + 1;
      continue;
    }
    if (c == '/' && p[1] == '*') {
      const char *q = p + 2;
      while (q + 1 < lx->end && !(q[0] == '*' && q[1] == '/') && *q != 0)
        q++;
      if (q + 1 >= lx->end || *q == 0) {
        t->s = q + 1 < lx->end ? q : p;
        t->err = q + 1 < lx->end ? "unexpected NUL character" : "unterminated comment";
        return false;
      }
      p = last = q + 2;
      continue;
    }
    if (c == '/' && p[1] == '/') {
      if (depth == 0)
        break;
      while (p < lx->end && *p != '\n') {
        if (*p == 0) {
          t->s = p;
          t->err = "unexpected NUL character";
          return false;
        }
        p++;
      }
      continue;
    }
    if (depth == 0 && (c == '\n' || (stop_at_blank && is_blank(c))))
      break;
    if (c == '(' || c == '[' || c == '{') {
      depth++;
    } else if (c == ')' || c == ']' || c == '}') {
      if (depth == 0)
        break;
      depth--;
    } else if (c == ',' && depth == 0) {
      break;
    } else if (c == 0) {
      t->s = p;
      t->err = "unexpected NUL character";
      return false;
    }
    p++;
    if (c != ' ' && c != '\t' && c != '\r' && c != '\n')
      last = p;
  }
  if (depth > 0) {
    t->err = "unbalanced brackets in attribute value";
    return false;
  }
  if (last == start) {
    t->err = "expected an attribute value";
    return false;
  }
  t->kind = TK_RAW;
  t->e = last;
  t->v = start;
  t->vn = (size_t)(last - start);
  lx->pos = last;
  return true;
}

bool lex_json_dict(Lexer *lx) {
  Token *t = &lx->tok;
  const char *start = t->s, *p = start;
  if (t->kind != TK_LBRACE) {
    t->err = "expected '{'";
    return false;
  }
  size_t depth = 0;
  while (p < lx->end) {
    char c = *p;
    if (c == 0) {
      t->s = p;
      t->err = "unexpected NUL character";
      return false;
    }
    if (c == '"') {
      const char *q = p + 1;
      while (q < lx->end && *q != '"' && *q != 0)
        q += *q == '\\' && q[1] != 0 ? 2 : 1;
      if (q >= lx->end || *q == 0) {
        t->s = q < lx->end ? q : p;
        t->err = q < lx->end ? "unexpected NUL character" : "unterminated string";
        return false;
      }
      p = q + 1;
      continue;
    }
    p++;
    if (c == '{') {
      depth++;
    } else if (c == '}' && --depth == 0) {
      t->kind = TK_RAW;
      t->e = p;
      t->v = start;
      t->vn = (size_t)(p - start);
      lx->pos = p;
      return true;
    }
  }
  t->err = "unbalanced braces in dictionary value";
  return false;
}

static void put_utf8(char **o, uint32_t cp) {
  char *q = *o;
  if (cp < 0x80) {
    *q++ = (char)cp;
  } else if (cp < 0x800) {
    *q++ = (char)(0xc0 | (cp >> 6));
    *q++ = (char)(0x80 | (cp & 0x3f));
  } else if (cp < 0x10000) {
    *q++ = (char)(0xe0 | (cp >> 12));
    *q++ = (char)(0x80 | ((cp >> 6) & 0x3f));
    *q++ = (char)(0x80 | (cp & 0x3f));
  } else {
    *q++ = (char)(0xf0 | (cp >> 18));
    *q++ = (char)(0x80 | ((cp >> 12) & 0x3f));
    *q++ = (char)(0x80 | ((cp >> 6) & 0x3f));
    *q++ = (char)(0x80 | (cp & 0x3f));
  }
  *o = q;
}

char *lex_decode_string(Arena *a, const Token *t, const char **err) {
  const char *s = t->v, *end = t->v + t->vn;
  if (!memchr(s, '\\', t->vn))
    return arena_strndup(a, s, t->vn);
  /* Escapes only shrink the text, except \u/\U which stay within 10 bytes. */
  char *out = arena_alloc(a, t->vn + 1);
  char *o = out;
  while (s < end) {
    if (*s != '\\') {
      *o++ = *s++;
      continue;
    }
    s++;
    int c = *s++;
    switch (c) {
    case 'n': *o++ = '\n'; break;
    case 't': *o++ = '\t'; break;
    case 'r': *o++ = '\r'; break;
    case 'a': *o++ = '\a'; break;
    case 'b': *o++ = '\b'; break;
    case 'f': *o++ = '\f'; break;
    case 'v': *o++ = '\v'; break;
    case '\\': case '\'': case '"': case '?': *o++ = (char)c; break;
    case 'x': {
      if (s >= end || !is_hex(*s)) {
        *err = "invalid \\x escape in string";
        return NULL;
      }
      unsigned v = 0;
      for (int i = 0; i < 2 && s < end && is_hex(*s); i++, s++)
        v = v * 16 + (is_digit(*s) ? (unsigned)(*s - '0') : (unsigned)((*s | 32) - 'a' + 10));
      if (v == 0) {
        /* Strings are C strings: a NUL would silently cut them short. */
        *err = "string contains a NUL character (\\x00)";
        return NULL;
      }
      *o++ = (char)v;
      break;
    }
    case 'u': case 'U': {
      int nd = c == 'u' ? 4 : 8;
      uint32_t v = 0;
      for (int i = 0; i < nd; i++, s++) {
        if (s >= end || !is_hex(*s)) {
          *err = "invalid unicode escape in string";
          return NULL;
        }
        v = v * 16 + (is_digit(*s) ? (uint32_t)(*s - '0') : (uint32_t)((*s | 32) - 'a' + 10));
      }
      if (v == 0) {
        *err = "string contains a NUL character (\\u0000)";
        return NULL;
      }
      if (v > 0x10ffff || (v >= 0xd800 && v < 0xe000)) {
        *err = "invalid unicode code point in string";
        return NULL;
      }
      put_utf8(&o, v);
      break;
    }
    default:
      if (c >= '0' && c <= '7') {
        unsigned v = (unsigned)(c - '0');
        for (int i = 0; i < 2 && s < end && *s >= '0' && *s <= '7'; i++, s++)
          v = v * 8 + (unsigned)(*s - '0');
        if (v > 0xff) {
          *err = "octal escape out of range in string";
          return NULL;
        }
        *o++ = (char)v;
        break;
      }
      *err = "invalid escape sequence in string";
      return NULL;
    }
  }
  *o = 0;
  return out;
}

void lex_describe(StrBuf *b, const Token *t) {
  switch (t->kind) {
  case TK_EOF: sb_puts(b, "end of file"); return;
  case TK_SPLIT: sb_puts(b, "module separator '// -----'"); return;
  case TK_STRING: sb_puts(b, "a string"); return;
  case TK_ERROR: sb_puts(b, "an invalid token"); return;
  default: break;
  }
  size_t n = (size_t)(t->e - t->s);
  const char *nl = memchr(t->s, '\n', n);
  if (nl)
    n = (size_t)(nl - t->s);
  if (n > 40)
    sb_printf(b, "'%.40s...'", t->s);
  else
    sb_printf(b, "'%.*s'", (int)n, t->s);
}
