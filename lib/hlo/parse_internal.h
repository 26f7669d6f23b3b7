/*
 * parse_internal.h - the parser state shared by lib/hlo/parse*.c.
 *
 * The parser is recursive descent over the lexer's token stream, one token
 * of lookahead in p->lx.tok (and lex_peek for the few places XLA's grammar
 * needs two).  Every parse_* function returns false after recording an
 * error with perr/perr_at; the first error wins and parsing stops.  Nesting
 * (shapes, literals, nested instructions, inline computations) is bounded by
 * PARSE_MAX_DEPTH.
 */
#ifndef XHLOC_PARSE_INTERNAL_H
#define XHLOC_PARSE_INTERNAL_H

#include <stdlib.h>

#include "hlo.h"
#include "lex.h"

enum { PARSE_MAX_DEPTH = 256 };

/* A hash map from source text spans to pointers (the text is not copied:
 * it must outlive the map). */
typedef struct TextSlot {
  uint64_t hash;
  const char *key;
  size_t len;
  void *val;
} TextSlot;

typedef struct TextMap {
  TextSlot *slots;
  size_t cap, len;
} TextMap;

uint64_t parse_hash(const char *s, size_t n);
void *textmap_get(const TextMap *m, const char *key, size_t len);
void textmap_put(TextMap *m, const char *key, size_t len, void *val);
void textmap_free(TextMap *m);

typedef struct Parser {
  Lexer lx;
  const SrcFile *src;      /* NULL for the string entry points */
  Diag *d;
  Arena *a;                /* the current module's arena */
  HloModule *m;            /* the module being built */
  HloComp *comp;           /* the computation being built */
  struct NameTable *names; /* instruction names of the current computation */
  HashMap comps;           /* computation name -> HloComp*, current module */
  HashMap anon;            /* "<op>.anon" base -> next suffix (as intptr) */
  TextMap ops;             /* opcode name -> HloOp + 1 (built on first use) */
  PtrVec *params;          /* parameters of the current computation */
  PtrVec wrapped;          /* computations built for async syntax sugar */
  PtrVec opstack;          /* operands being collected (nested: stacked) */
  I64Vec ints;             /* scratch for integer lists (stacked) */
  Arena *scratch;          /* shapes are parsed here, then interned */
  TextMap shapes;          /* shape source text -> Shape* in the module */
  int shape_nest;          /* > 0 while inside a shape */
  /* Elided literals ({...}) of the current module: the placeholder
   * counters (literal.c) and whether the warning was given. */
  uint32_t elided_word;
  uint8_t elided_byte;
  bool elided_warned;
  int depth;
  /* Cursor for offset -> line/col, advanced monotonically. */
  const char *line_ptr;    /* start of the line of line_no */
  int line_no;
} Parser;

/* parse.c: a parser over one NUL-terminated text given alone (a shape, a
 * literal, a sharding), at its first token */
void parser_init_text(Parser *p, Arena *a, const char *text, Diag *d);

/* parse.c: locations and errors */
Loc parse_loc(Parser *p, const char *at);
bool perr_at(Parser *p, const char *at, const char *fmt, ...) PRINTF_LIKE(3, 4);
/* Error at the current token; a lexer error token reports its own message. */
bool perr(Parser *p, const char *fmt, ...) PRINTF_LIKE(2, 3);
void pwarn_at(Parser *p, const char *at, const char *fmt, ...) PRINTF_LIKE(3, 4);
bool parse_enter(Parser *p);          /* depth++, error past the limit */
static inline void parse_leave(Parser *p) { p->depth--; }

static inline TokKind ptok(const Parser *p) { return p->lx.tok.kind; }
static inline TokKind padvance(Parser *p) { return lex_next(&p->lx); }
bool peat(Parser *p, TokKind k);                  /* consume if present */
bool pexpect(Parser *p, TokKind k, const char *what); /* consume or error */

/* Scalar helpers (parse_values.c). */
bool parse_int64(Parser *p, int64_t *out);        /* an int that fits int64 */
bool parse_bool(Parser *p, bool *out);
bool parse_double(Parser *p, double *out);        /* int, decimal, inf, -inf */
bool parse_string(Parser *p, char **out);         /* decoded */
/* '{' int (',' int)* '}' or the given brackets; n == 0 for an empty list. */
bool parse_i64_list(Parser *p, TokKind open, TokKind close, TokKind delim,
                    I64List *out);
bool parse_i64_list_list(Parser *p, int *n, I64List **out);
/* The current token as an attribute value kept verbatim (TK_RAW); the
 * _field form also ends at a blank (space-separated metadata fields). */
bool parse_raw_value(Parser *p, char **out);
bool parse_raw_field(Parser *p, char **out);
/* A {...} JSON dictionary kept verbatim (braces and strings counted only). */
bool parse_json_dict(Parser *p, char **out);

/* parse_values.c: attribute value forms. */
bool parse_window(Parser *p, Window **out);
bool parse_conv_dnums(Parser *p, ConvDnums **out);
bool parse_slice_ranges(Parser *p, int *n, SliceDim **out);
bool parse_padding_config(Parser *p, int *n, PadDim **out);
bool parse_metadata(Parser *p, OpMetadata **out);
bool parse_kv_list(Parser *p, KVList **out);
bool parse_replica_groups(Parser *p, ReplicaGroups **out);
/* The mesh form mesh['a'=2,'b'=4] {'b'} (groups vary along the listed
 * axes, all of them when no list is given) as iota groups; false when the
 * text is not in that form. */
bool replica_groups_from_mesh(Arena *a, const char *text, ReplicaGroups **out);
bool parse_alias_list(Parser *p, bool with_kind, int *n, AliasEntry **out);
bool parse_buffer_donors(Parser *p, int *n, AliasEntry **out);
bool parse_bool_list(Parser *p, bool allow_single, int *n, bool **out);
bool parse_precision_list(Parser *p, int *n, Precision **out);
bool parse_shape_list(Parser *p, int *n, Shape ***out);
bool parse_program_shape(Parser *p, ProgramShape **out);

/* parse_shape.c */
bool parse_can_be_shape(Parser *p);
bool parse_shape(Parser *p, Shape **out);
/* Structural compatibility (element types, dims, tuple structure). */
bool parse_shapes_compatible(const Shape *x, const Shape *y);
char *parse_shape_str(Parser *p, const Shape *s); /* arena text for messages */

/* parse_literal.c */
bool parse_literal(Parser *p, Shape *shape, Literal **out);
/* A literal written with its shape first (custom-call literal=). */
bool parse_literal_with_shape(Parser *p, Literal **out);

/* parse_canonical.c: rewrites the forms XLA's parser accepts that the IR
 * does not represent (degenerate broadcasts, a convolution window whose size
 * differs from the kernel's; a warning for the latter), once m is parsed. */
void parse_canonicalize(HloModule *m, Diag *d);

/* parse_unreachable.c: drops the computations the entry cannot reach, with
 * a warning, as XLA does before it verifies and compiles. */
void parse_drop_unreachable(HloModule *m, Diag *d);

/* parse_sharding.c */
bool parse_sharding(Parser *p, Sharding **out);

/* parse_attrs.c: the attribute list after an instruction's operands.  With
 * an async syntax-sugar start, `wrapped` is the instruction inside the
 * wrapped computation and takes the opcode's own attributes.  Errors about
 * the list as a whole (a required attribute missing) point at op_at. */
bool parse_instr_attrs(Parser *p, HloInstr *in, HloInstr *wrapped,
                       bool allow_attrs, const char *op_at);
/* The module header's attribute list. */
bool parse_module_attrs(Parser *p, HloModule *m);
/* Resolve a computation name (parse.c). */
bool parse_comp_ref(Parser *p, HloComp **out);
HloInstr *parse_find_instr(Parser *p, const char *name, size_t n);

#endif
