/*
 * lex.h - the HLO text lexer (private to the parser, lib/hlo/parse*.c).
 *
 * A hand-written scanner over the source buffer that follows XLA's
 * hlo_lexer: tokens point into the buffer (no allocation per token), numbers
 * are decoded as they are lexed, strings are decoded only on request.  The
 * lexer is context-free except for two on-demand scans the parser asks for:
 * lex_raw_value (an attribute value kept as exact source text) and the
 * lookahead lex_peek.
 *
 * Words: an identifier [a-zA-Z_][a-zA-Z0-9_.-]* directly followed by ':' is
 * a TK_NAME (the ':' is consumed), directly followed by '=' a TK_ATTR (the
 * '=' is consumed); otherwise it is an element type, a keyword, dim labels or
 * a plain TK_IDENT.  '%' followed by an identifier is a TK_NAME.
 *
 * Comments ("//" to end of line, "/" "*" ... "*" "/") are skipped; a line
 * comment that reads "// -----" is the module separator TK_SPLIT.  glog
 * prefixes ("I0521 12:04:45.883483 1509 service.cc:186] ") at the start of a
 * line are skipped like whitespace when strip_glog is set.
 */
#ifndef XHLOC_LEX_H
#define XHLOC_LEX_H

#include "hlo.h"

typedef enum TokKind {
  TK_EOF, TK_ERROR, TK_SPLIT,
  /* punctuation */
  TK_EQUAL, TK_COMMA, TK_COLON, TK_STAR, TK_QUESTION, TK_HASH, TK_PLUS,
  TK_TILDE, TK_LSQUARE, TK_RSQUARE, TK_LBRACE, TK_RBRACE, TK_LPAREN,
  TK_RPAREN, TK_ARROW /* -> */, TK_LEQ /* <= */, TK_DOTS /* ... */,
  /* keywords */
  TK_KW_HLOMODULE, TK_KW_ENTRY, TK_KW_ROOT, TK_KW_TRUE, TK_KW_FALSE,
  TK_KW_INF, TK_KW_MAXIMAL, TK_KW_REPLICATED, TK_KW_MANUAL,
  TK_KW_LAST_TILE_DIM_REPLICATE, TK_KW_SHARD_AS, TK_KW_SHARD_LIKE,
  TK_KW_UNKNOWN, TK_KW_UNREDUCED, TK_KW_FILENAMES, TK_KW_FUNCTIONNAMES,
  TK_KW_FILELOCATIONS, TK_KW_STACKFRAMES,
  /* valued tokens */
  TK_NEGINF,      /* -inf */
  TK_PRIMTYPE,    /* f32, token, ...: et */
  TK_NAME,        /* %x, x:  (v = "x") */
  TK_ATTR,        /* x=      (v = "x") */
  TK_DIMLABELS,   /* b01f_01io->b01f */
  TK_DXD,         /* 3x3 */
  TK_PAD,         /* 0_0x1_1_0 */
  TK_IDENT,       /* any other identifier */
  TK_STRING,      /* "..." or '...': v = the raw contents between quotes */
  TK_INT,         /* [-]digits: u = magnitude, neg */
  TK_DECIMAL,     /* floats, nan, -nan, nan(0x..): d */
  TK_RAW,         /* lex_raw_value's result */
} TokKind;

typedef struct Token {
  TokKind kind;
  ElemType et;         /* TK_PRIMTYPE */
  bool neg;            /* TK_INT: the value is -u */
  bool nl_before;      /* a newline lies between the previous token and this */
  const char *s, *e;   /* the token's source text [s, e) */
  const char *v;       /* the value text (names, attribute names, strings) */
  size_t vn;
  uint64_t u;          /* TK_INT magnitude */
  double d;            /* TK_DECIMAL */
  const char *err;     /* TK_ERROR: what is wrong */
} Token;

typedef struct Lexer {
  const char *buf, *end; /* the whole buffer; *end is NUL */
  const char *pos;       /* where the next token starts scanning */
  const char *prev_end;  /* end of the token before the current one */
  bool strip_glog;
  Token tok;             /* the current token */
} Lexer;

void lex_init(Lexer *lx, const char *buf, size_t len, bool strip_glog);
/* Lex the next token into lx->tok; returns its kind. */
TokKind lex_next(Lexer *lx);
/* Make the text up to `to` (inside the buffer, at or after the current
 * token) consumed, as if its tokens had been read, and lex the next one. */
TokKind lex_skip_to(Lexer *lx, const char *to);
/* The token after the current one, without consuming anything. */
Token lex_peek(Lexer *lx);
/* Re-scan the current token as the start of an attribute value and take the
 * longest balanced text up to (not including) a ',' or a closing bracket at
 * nesting depth 0, or a line break at depth 0 (or any blank at depth 0 when
 * stop_at_blank, for space-separated fields).  The current token becomes a
 * TK_RAW covering that text (trailing blanks trimmed); false (with
 * lx->tok.err set) on an unbalanced or empty value. */
bool lex_raw_value(Lexer *lx, bool stop_at_blank);
/* At a '{', take the text up to its matching '}' counting braces only and
 * skipping double-quoted strings, as XLA reads JSON dictionaries
 * (backend_config={...}, frontend attribute values).  The current token
 * becomes a TK_RAW of that text; false (with lx->tok.err) if unbalanced. */
bool lex_json_dict(Lexer *lx);
/* Decode the C escapes of a TK_STRING's contents into a NUL-terminated arena
 * string; NULL (and *err set) on a malformed escape. */
char *lex_decode_string(Arena *a, const Token *t, const char **err);
/* A short human-readable description of a token for messages ("'}'",
 * "identifier 'foo'", "end of file"). */
void lex_describe(StrBuf *b, const Token *t);
/* Element type by name as the lexer knows them ("opaque_type" included);
 * ET_INVALID if none. */
ElemType lex_elem_type(const char *s, size_t n);

#endif
