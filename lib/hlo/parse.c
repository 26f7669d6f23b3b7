/*
 * parse.c - the HLO text parser: modules, computations and instructions.
 *
 *   file        ::= module ('// -----' module)*
 *   module      ::= ['HloModule' name attributes] [stack_frames]
 *                   computation+ [stack_frames]
 *   computation ::= ['ENTRY'] name [param_list '->' shape]
 *                   '{' instruction+ '}' [',' 'execution_thread=' string]
 *   instruction ::= ['ROOT'] name '=' [shape] opcode operands attributes
 *   operands    ::= '(' [operand (',' operand)*] ')'
 *   operand     ::= [shape] name | [shape] opcode operands   (nested)
 *
 * A file without an HloModule header is one module named after the file;
 * its entry is the computation marked ENTRY, else the last one.  A
 * computation's root is its ROOT instruction, else its last.  Names resolve
 * through hash maps: instructions within their computation, computations
 * within the module (defined before use, as XLA requires).  Nested operands
 * become instructions named "<opcode>.anon" (made unique).  "<op>-start",
 * "<op>-update" and "<op>-done" for an opcode <op> are async syntax sugar:
 * async-start/update/done wrapping a computation that holds <op>, built here
 * as XLA builds it.
 *
 * Locations: tokens carry pointers into the source; line and column are
 * computed only for instructions, computations and errors, by a cursor that
 * moves forward through the text (so the whole parse stays linear).
 */
#include "parse_internal.h"

#include <stdlib.h>
#include <string.h>

/*
 * Locations, errors, token helpers
 */
void parser_init_text(Parser *p, Arena *a, const char *text, Diag *d) {
  *p = (Parser){0};
  lex_init(&p->lx, text, strlen(text), false);
  p->d = d;
  p->a = a;
  p->line_ptr = text;
  p->line_no = 1;
  lex_next(&p->lx);
}

Loc parse_loc(Parser *p, const char *at) {
  const char *buf = p->lx.buf;
  if (at < buf)
    at = buf;
  if (at > p->lx.end)
    at = p->lx.end;
  if (at < p->line_ptr) {
    p->line_ptr = buf;
    p->line_no = 1;
  }
  const char *q = p->line_ptr;
  for (;;) {
    const char *nl = memchr(q, '\n', (size_t)(at - q));
    if (!nl)
      break;
    p->line_no++;
    q = nl + 1;
  }
  p->line_ptr = q;
  Loc l = {p->src, p->line_no, (int)(at - q) + 1};
  return l;
}

bool perr_at(Parser *p, const char *at, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  diag_verror(p->d, parse_loc(p, at), fmt, ap);
  va_end(ap);
  return false;
}

bool perr(Parser *p, const char *fmt, ...) {
  const Token *t = &p->lx.tok;
  if (t->kind == TK_ERROR)
    return perr_at(p, t->s, "%s", t->err);
  va_list ap;
  va_start(ap, fmt);
  diag_verror(p->d, parse_loc(p, t->s), fmt, ap);
  va_end(ap);
  return false;
}

void pwarn_at(Parser *p, const char *at, const char *fmt, ...) {
  StrBuf b;
  sb_init(&b);
  va_list ap;
  va_start(ap, fmt);
  sb_vprintf(&b, fmt, ap);
  va_end(ap);
  diag_warn(p->d, parse_loc(p, at), "%s", b.s);
  sb_free(&b);
}

bool parse_enter(Parser *p) {
  if (p->depth >= PARSE_MAX_DEPTH)
    return perr(p, "nesting is too deep (more than %d levels)",
                PARSE_MAX_DEPTH);
  p->depth++;
  return true;
}

bool peat(Parser *p, TokKind k) {
  if (p->lx.tok.kind != k)
    return false;
  lex_next(&p->lx);
  return true;
}

static const char *kind_text(TokKind k) {
  switch (k) {
  case TK_EQUAL: return "'='";
  case TK_COMMA: return "','";
  case TK_COLON: return "':'";
  case TK_LSQUARE: return "'['";
  case TK_RSQUARE: return "']'";
  case TK_LBRACE: return "'{'";
  case TK_RBRACE: return "'}'";
  case TK_LPAREN: return "'('";
  case TK_RPAREN: return "')'";
  case TK_ARROW: return "'->'";
  case TK_LEQ: return "'<='";
  default: return "a token";
  }
}

bool pexpect(Parser *p, TokKind k, const char *what) {
  if (peat(p, k))
    return true;
  return perr(p, "expected %s in %s", kind_text(k), what);
}

/*
 * Instruction names of a computation: open addressing over (hash, instr),
 * the instruction's own name being the key, so a slot costs 16 bytes.
 */
typedef struct NameSlot {
  uint64_t hash;
  HloInstr *in;
} NameSlot;

struct NameTable {
  NameSlot *slots;
  size_t cap, len;   /* cap: a power of two, or 0 */
};

uint64_t parse_hash(const char *s, size_t n) {
  uint64_t h = 0x9e3779b97f4a7c15ull ^ n;
  while (n >= 8) {
    uint64_t w;
    memcpy(&w, s, 8);
    h = (h ^ w) * 0xff51afd7ed558ccdull;
    h ^= h >> 32;
    s += 8;
    n -= 8;
  }
  uint64_t w = 0;
  memcpy(&w, s, n);
  h = (h ^ w) * 0xc4ceb9fe1a85ec53ull;
  return h ^ (h >> 29);
}

static HloInstr *names_get(const struct NameTable *t, const char *s, size_t n) {
  if (!t || !t->cap)
    return NULL;
  uint64_t h = parse_hash(s, n);
  for (size_t i = h & (t->cap - 1);; i = (i + 1) & (t->cap - 1)) {
    const NameSlot *e = &t->slots[i];
    if (!e->in)
      return NULL;
    if (e->hash == h && memcmp(e->in->name, s, n) == 0 && e->in->name[n] == 0)
      return e->in;
  }
}

static void names_insert(NameSlot *slots, size_t cap, uint64_t h,
                         HloInstr *in) {
  size_t i = h & (cap - 1);
  while (slots[i].in)
    i = (i + 1) & (cap - 1);
  slots[i].hash = h;
  slots[i].in = in;
}

/* Adds in under in->name (not already present). */
static void names_put(struct NameTable *t, HloInstr *in) {
  if ((t->len + 1) * 4 > t->cap * 3) {
    size_t cap = t->cap ? t->cap * 2 : 64;
    NameSlot *slots = xcalloc(cap, sizeof(NameSlot));
    for (size_t i = 0; i < t->cap; i++)
      if (t->slots[i].in)
        names_insert(slots, cap, t->slots[i].hash, t->slots[i].in);
    free(t->slots);
    t->slots = slots;
    t->cap = cap;
  }
  names_insert(t->slots, t->cap, parse_hash(in->name, strlen(in->name)), in);
  t->len++;
}

void *textmap_get(const TextMap *m, const char *key, size_t len) {
  if (!m->cap)
    return NULL;
  uint64_t h = parse_hash(key, len);
  for (size_t i = h & (m->cap - 1);; i = (i + 1) & (m->cap - 1)) {
    const TextSlot *e = &m->slots[i];
    if (!e->key)
      return NULL;
    if (e->hash == h && e->len == len && memcmp(e->key, key, len) == 0)
      return e->val;
  }
}

/* Adds key (not already present). */
void textmap_put(TextMap *m, const char *key, size_t len, void *val) {
  if ((m->len + 1) * 4 > m->cap * 3) {
    size_t cap = m->cap ? m->cap * 2 : 64;
    TextSlot *slots = xcalloc(cap, sizeof(TextSlot));
    for (size_t i = 0; i < m->cap; i++) {
      if (!m->slots[i].key)
        continue;
      size_t j = m->slots[i].hash & (cap - 1);
      while (slots[j].key)
        j = (j + 1) & (cap - 1);
      slots[j] = m->slots[i];
    }
    free(m->slots);
    m->slots = slots;
    m->cap = cap;
  }
  uint64_t h = parse_hash(key, len);
  size_t j = h & (m->cap - 1);
  while (m->slots[j].key)
    j = (j + 1) & (m->cap - 1);
  m->slots[j] = (TextSlot){h, key, len, val};
  m->len++;
}

void textmap_free(TextMap *m) {
  free(m->slots);
  m->slots = NULL;
  m->cap = m->len = 0;
}

HloInstr *parse_find_instr(Parser *p, const char *name, size_t n) {
  return names_get(p->names, name, n);
}

/*
 * Opcodes
 */

/* Opcodes whose result shape may be left out (XLA's CanInferShape). */
static bool can_infer_shape(HloOp op) {
  switch (op) {
  case HLO_ABS: case HLO_ACOS: case HLO_ACOSH: case HLO_ASIN: case HLO_ASINH:
  case HLO_ADD: case HLO_ADD_DEPENDENCY: case HLO_AFTER_ALL: case HLO_ATAN:
  case HLO_ATAN2: case HLO_ATANH: case HLO_BATCH_NORM_GRAD:
  case HLO_BATCH_NORM_INFERENCE: case HLO_BATCH_NORM_TRAINING:
  case HLO_BROADCAST: case HLO_CALL: case HLO_CEIL: case HLO_CHOLESKY:
  case HLO_CLAMP: case HLO_CLZ: case HLO_COMPARE: case HLO_COMPLEX:
  case HLO_CONCATENATE: case HLO_CONDITIONAL: case HLO_CONVOLUTION:
  case HLO_COPY: case HLO_COS: case HLO_COSH: case HLO_OPTIMIZATION_BARRIER:
  case HLO_DIVIDE: case HLO_DOMAIN: case HLO_DOT: case HLO_ERF: case HLO_EXP:
  case HLO_EXPM1: case HLO_FFT: case HLO_FLOOR: case HLO_GATHER:
  case HLO_GET_DIMENSION_SIZE: case HLO_SET_DIMENSION_SIZE:
  case HLO_GET_TUPLE_ELEMENT: case HLO_IMAG: case HLO_IS_FINITE: case HLO_LOG:
  case HLO_LOG1P: case HLO_LOGISTIC: case HLO_AND: case HLO_NOT: case HLO_OR:
  case HLO_XOR: case HLO_MAP: case HLO_MAXIMUM: case HLO_MINIMUM:
  case HLO_MULTIPLY: case HLO_MULHI: case HLO_NEGATE: case HLO_PAD:
  case HLO_PARTITION_ID: case HLO_POPCNT: case HLO_POWER: case HLO_RAGGED_DOT:
  case HLO_REAL: case HLO_REDUCE: case HLO_REMAINDER: case HLO_REPLICA_ID:
  case HLO_REVERSE: case HLO_ROUND_NEAREST_AFZ: case HLO_ROUND_NEAREST_EVEN:
  case HLO_RSQRT: case HLO_SCAN: case HLO_SCALED_DOT: case HLO_SCATTER:
  case HLO_SELECT: case HLO_SHIFT_LEFT: case HLO_SHIFT_RIGHT_ARITHMETIC:
  case HLO_SHIFT_RIGHT_LOGICAL: case HLO_SIGN: case HLO_SIN: case HLO_SINH:
  case HLO_SQRT: case HLO_CBRT: case HLO_REDUCE_WINDOW:
  case HLO_SELECT_AND_SCATTER: case HLO_SORT: case HLO_SUBTRACT: case HLO_TAN:
  case HLO_TANH: case HLO_TRANSPOSE: case HLO_TRIANGULAR_SOLVE: case HLO_TUPLE:
  case HLO_WHILE: case HLO_TOPK:
    return true;
  default:
    return false;
  }
}

static bool ends_with(const char *s, size_t n, const char *suffix,
                      size_t *prefix_len) {
  size_t k = strlen(suffix);
  if (n <= k || memcmp(s + n - k, suffix, k) != 0)
    return false;
  *prefix_len = n - k;
  return true;
}

/* Opcode by name through a hash map (built once per parse), or -1. */
static int op_lookup(Parser *p, const char *s, size_t n) {
  if (!p->ops.len) {
    for (int i = 0; i < HLO_OP_COUNT; i++) {
      const char *name = hlo_op_name((HloOp)i);
      textmap_put(&p->ops, name, strlen(name), (void *)(intptr_t)(i + 1));
    }
  }
  return (int)(intptr_t)textmap_get(&p->ops, s, n) - 1;
}

/* The opcode at the current token, with async sugar: *wrapped >= 0 names
 * the opcode an "<op>-start/-update/-done" wraps. */
static bool parse_opcode(Parser *p, HloOp *op, int *wrapped) {
  const Token *t = &p->lx.tok;
  *wrapped = -1;
  if (t->kind != TK_IDENT)
    return perr(p, "expected an opcode");
  int o = op_lookup(p, t->v, t->vn);
  if (o >= 0) {
    *op = (HloOp)o;
    padvance(p);
    return true;
  }
  static const struct {
    const char *suffix;
    HloOp op;
  } sugar[] = {{"-start", HLO_ASYNC_START},
               {"-update", HLO_ASYNC_UPDATE},
               {"-done", HLO_ASYNC_DONE}};
  for (size_t i = 0; i < ARRAY_LEN(sugar); i++) {
    size_t n;
    if (ends_with(t->v, t->vn, sugar[i].suffix, &n)) {
      int w = op_lookup(p, t->v, n);
      if (w >= 0) {
        *op = sugar[i].op;
        *wrapped = w;
        padvance(p);
        return true;
      }
    }
  }
  if (lex_peek(&p->lx).kind == TK_LSQUARE)
    return perr(p, "unknown element type '%.*s'", (int)t->vn, t->v);
  return perr(p, "unknown opcode '%.*s'", (int)t->vn, t->v);
}

/*
 * Names
 */
static char *name_with_suffix(Parser *p, const char *base, intptr_t k) {
  if (k == 0)
    return arena_strdup(p->a, base);
  StrBuf b;
  sb_init(&b);
  sb_printf(&b, "%s.%ld", base, (long)k);
  char *r = arena_strndup(p->a, b.s, b.len);
  sb_free(&b);
  return r;
}

/* "<opcode>.anon", made unique in the module as XLA's name uniquer does. */
static char *anon_name(Parser *p, HloOp op) {
  StrBuf b;
  sb_init(&b);
  sb_printf(&b, "%s.anon", hlo_op_name(op));
  intptr_t k = (intptr_t)hashmap_get(&p->anon, b.s);
  char *name;
  for (;; k++) {
    name = name_with_suffix(p, b.s, k);
    if (!parse_find_instr(p, name, strlen(name)))
      break;
  }
  if (!hashmap_get(&p->anon, b.s))
    hashmap_put(&p->anon, arena_strdup(p->a, b.s), (void *)(k + 1));
  else
    hashmap_put(&p->anon, b.s, (void *)(k + 1)); /* key already stored */
  sb_free(&b);
  return name;
}

/*
 * Instructions
 */
static bool parse_instr_rhs(Parser *p, const char *name, size_t nlen, Loc loc,
                            bool allow_attrs, Shape *shape, HloInstr **out);

/* operands ::= '(' [operand (',' operand)*] ')'; pushed on p->opstack. */
static bool parse_operands(Parser *p) {
  if (!pexpect(p, TK_LPAREN, "operand list"))
    return false;
  if (ptok(p) == TK_RPAREN) {
    padvance(p);
    return true;
  }
  for (;;) {
    const char *op_at = p->lx.tok.s;
    Shape *decl = NULL;
    if (parse_can_be_shape(p) && !parse_shape(p, &decl))
      return false;
    const Token *t = &p->lx.tok;
    HloInstr *in;
    if (t->kind == TK_IDENT && lex_peek(&p->lx).kind == TK_LPAREN) {
      if (!parse_instr_rhs(p, "", 0, parse_loc(p, op_at), false, decl, &in))
        return false;
    } else if (t->kind == TK_NAME || t->kind == TK_IDENT) {
      in = parse_find_instr(p, t->v, t->vn);
      if (!in)
        return perr(p, "operand '%.*s' is not defined", (int)t->vn, t->v);
      if (decl && !parse_shapes_compatible(decl, in->shape))
        return perr_at(p, op_at, "declared operand shape %s is not compatible "
                                 "with the shape %s of '%s'",
                       parse_shape_str(p, decl), parse_shape_str(p, in->shape),
                       in->name);
      padvance(p);
    } else {
      return perr(p, "expected an operand name");
    }
    vec_push(&p->opstack, in);
    if (!peat(p, TK_COMMA))
      break;
  }
  if (ptok(p) != TK_RPAREN)
    return perr(p, "expected ')' after the operands");
  padvance(p);
  return true;
}

/* The wrapped op of an async instruction (sugar or explicit calls=). */
static int async_wrapped_op(const HloInstr *in) {
  if (in->async_sugar)
    return (int)in->async_wrapped_op;
  if (in->ncalled > 0 && in->called[0]->root)
    return (int)in->called[0]->root->op;
  return -1;
}

/* async-start sugar: the computation {params; root = wop(params)}. */
static bool build_async_wrapped(Parser *p, HloInstr *start, HloOp wop,
                                const char *at, HloInstr **wout) {
  const Shape *s = start->shape;
  if (s->et != ET_TUPLE || s->ntuple < 2 || s->tuple[0]->et != ET_TUPLE)
    return perr_at(p, at,
                   "%s-start needs a shape of the form ((operands), outputs, "
                   "state)",
                   hlo_op_name(wop));
  HloComp *wc = hlo_comp_new(p->m, "async_wrapped");
  wc->loc = start->loc;
  vec_push(&p->wrapped, wc);
  int n = start->nops;
  HloInstr **params = ARENA_ARRAY(p->a, HloInstr *, n);
  for (int i = 0; i < n; i++) {
    HloInstr *pi = hlo_instr_new(wc, HLO_PARAMETER, start->ops[i]->shape, 0, NULL);
    pi->param_number = i;
    pi->name = name_with_suffix(p, "async_param", i);
    pi->loc = start->loc;
    params[i] = pi;
  }
  wc->nparams = n;
  wc->params = params;
  HloInstr *w = hlo_instr_new(wc, wop, s->tuple[1], n, params);
  w->name = arena_strdup(p->a, "async_op");
  w->loc = start->loc;
  wc->root = w;
  start->ncalled = 1;
  start->called = ARENA_NEW(p->a, HloComp *);
  start->called[0] = wc;
  start->async_sugar = true;
  start->async_wrapped_op = wop;
  *wout = w;
  return true;
}

/* async-update / async-done: inherit the computation of their operand. */
static bool finish_async_update_done(Parser *p, HloInstr *in, int wrapped,
                                     const char *at) {
  if (in->nops != 1 || (in->ops[0]->op != HLO_ASYNC_START &&
                        in->ops[0]->op != HLO_ASYNC_UPDATE))
    return perr_at(p, at, "%s expects a single async-start or async-update "
                          "operand",
                   hlo_op_name(in->op));
  const HloInstr *src = in->ops[0];
  if (wrapped >= 0) {
    int w = async_wrapped_op(src);
    if (w != wrapped)
      return perr_at(p, at, "expected the async wrapped opcode to be %s, but "
                            "got %s",
                     w >= 0 ? hlo_op_name((HloOp)w) : "unknown",
                     hlo_op_name((HloOp)wrapped));
    in->async_sugar = true;
    in->async_wrapped_op = (HloOp)wrapped;
  }
  if (in->ncalled == 0) {
    in->ncalled = src->ncalled;
    in->called = src->called;
  } else if (src->ncalled != 1 || in->called[0] != src->called[0]) {
    return perr_at(p, at, "%s calls a different computation than its operand",
                   hlo_op_name(in->op));
  }
  return true;
}

static bool parse_instr_rhs_inner(Parser *p, const char *name, size_t nlen,
                                  Loc loc, bool allow_attrs, Shape *shape,
                                  HloInstr **out) {
  if (!shape && parse_can_be_shape(p) && !parse_shape(p, &shape))
    return false;
  const char *op_at = p->lx.tok.s;
  const char *op_text = p->lx.tok.v;
  int op_len = (int)p->lx.tok.vn;
  HloOp op = HLO_ADD;
  int wrapped;
  if (!parse_opcode(p, &op, &wrapped))
    return false;
  if (!shape && (wrapped >= 0 || !can_infer_shape(op)))
    return perr_at(p, op_at, "the result shape of %.*s cannot be inferred: "
                             "write it before the opcode",
                   op_len, op_text);
  const char *args_at = p->lx.tok.s;
  int base = p->opstack.len;
  int64_t param_number = 0;
  Literal *literal = NULL;
  if (op == HLO_PARAMETER) {
    const char *at;
    if (!pexpect(p, TK_LPAREN, "parameter"))
      return false;
    at = p->lx.tok.s;
    if (!parse_int64(p, &param_number))
      return false;
    if (param_number < 0)
      return perr_at(p, at, "parameter number must not be negative");
    if (!pexpect(p, TK_RPAREN, "parameter"))
      return false;
  } else if (op == HLO_CONSTANT) {
    if (!pexpect(p, TK_LPAREN, "constant") ||
        !parse_literal(p, shape, &literal) ||
        !pexpect(p, TK_RPAREN, "constant"))
      return false;
  } else if (!parse_operands(p)) {
    return false;
  }
  int nops = p->opstack.len - base;
  int arity = hlo_op_arity(op);
  if (arity >= 0 && nops != arity && op != HLO_PARAMETER && op != HLO_CONSTANT)
    return perr_at(p, args_at, "%s expects %d operands, but has %d",
                   hlo_op_name(op), arity, nops);
  HloInstr *in = hlo_instr_new(
      p->comp, op, shape, nops,
      nops ? (HloInstr *const *)(p->opstack.data + base) : NULL);
  p->opstack.len = base;
  in->loc = loc;
  in->param_number = param_number;
  in->literal = literal;
  HloInstr *w = NULL;
  if (op == HLO_ASYNC_START && wrapped >= 0 &&
      !build_async_wrapped(p, in, (HloOp)wrapped, op_at, &w))
    return false;
  if (!parse_instr_attrs(p, in, w, allow_attrs, op_at))
    return false;
  if ((op == HLO_ASYNC_UPDATE || op == HLO_ASYNC_DONE) &&
      !finish_async_update_done(p, in, wrapped, op_at))
    return false;
  in->name = nlen ? arena_strndup(p->a, name, nlen) : anon_name(p, in->op);
  if (!in->shape) {
    /* hlo_infer_shape reads the declared shape of some opcodes (a dot's
     * element type): give it the first operand's, XLA's default. */
    if (nops) {
      in->shape = in->ops[0]->shape;
    } else {
      in->shape = ARENA_NEW(p->a, Shape);
      in->shape->et = ET_TUPLE;
    }
    in->shape = hlo_infer_shape(p->a, in, p->d);
    if (!in->shape) {
      if (!p->d->has_error)
        perr_at(p, op_at, "cannot infer the result shape of %s",
                hlo_op_name(op));
      return false;
    }
  }
  if (names_get(p->names, in->name, strlen(in->name))) {
    if (nlen)
      return diag_error(p->d, loc, "instruction '%s' is already defined",
                        in->name);
    return perr_at(p, op_at, "instruction '%s' is already defined", in->name);
  }
  names_put(p->names, in);
  if (op == HLO_PARAMETER)
    vec_push(p->params, in);
  *out = in;
  return true;
}

static bool parse_instr_rhs(Parser *p, const char *name, size_t nlen, Loc loc,
                            bool allow_attrs, Shape *shape, HloInstr **out) {
  if (!parse_enter(p))
    return false;
  bool ok = parse_instr_rhs_inner(p, name, nlen, loc, allow_attrs, shape, out);
  parse_leave(p);
  return ok;
}

/* instruction ::= ['ROOT'] name '=' rhs */
static bool parse_instruction(Parser *p, HloInstr **root, HloInstr **last) {
  const char *root_at = p->lx.tok.s;
  bool is_root = peat(p, TK_KW_ROOT);
  const Token *t = &p->lx.tok;
  const char *name = t->v, *name_at = t->s;
  size_t nlen = t->vn;
  if (t->kind == TK_NAME || t->kind == TK_IDENT) {
    padvance(p);
    if (!pexpect(p, TK_EQUAL, "instruction"))
      return false;
  } else if (t->kind == TK_ATTR) {
    padvance(p); /* "name=" lexed as one token */
  } else {
    return perr(p, "expected an instruction name");
  }
  if (is_root && *root)
    return perr_at(p, root_at, "computation has more than one ROOT "
                               "instruction");
  HloInstr *in;
  if (!parse_instr_rhs(p, name, nlen, parse_loc(p, name_at), true, NULL, &in))
    return false;
  if (is_root)
    *root = in;
  *last = in;
  return true;
}

/*
 * Computations
 */

/* '{' instruction+ '}', then root and parameters. */
static bool parse_comp_body(Parser *p, HloComp *c) {
  struct NameTable names = {0};
  PtrVec params = {0};
  struct NameTable *saved_names = p->names;
  PtrVec *saved_params = p->params;
  HloComp *saved_comp = p->comp;
  p->names = &names;
  p->params = &params;
  p->comp = c;
  HloInstr *root = NULL, *last = NULL;
  bool ok = pexpect(p, TK_LBRACE, "computation");
  while (ok && ptok(p) != TK_RBRACE)
    ok = parse_instruction(p, &root, &last);
  if (ok) {
    if (!last)
      ok = perr(p, "computation '%s' has no instructions", c->name);
    else
      padvance(p);
  }
  if (ok) {
    c->root = root ? root : last;
    /* Parameters by number: 0..n-1, each once. */
    int n = params.len;
    c->nparams = n;
    c->params = ARENA_ARRAY(p->a, HloInstr *, n);
    for (int i = 0; i < n && ok; i++) {
      HloInstr *pi = params.data[i];
      int64_t k = pi->param_number;
      if (k >= n) {
        diag_error(p->d, pi->loc, "parameter number %lld is out of range: "
                                  "computation '%s' has %d parameters",
                   (long long)k, c->name, n);
        ok = false;
      } else if (c->params[k]) {
        diag_error(p->d, pi->loc, "parameter number %lld is used twice",
                   (long long)k);
        ok = false;
      } else {
        c->params[k] = pi;
      }
    }
  }
  free(names.slots);
  vec_free(&params);
  p->names = saved_names;
  p->params = saved_params;
  p->comp = saved_comp;
  return ok;
}

/* A name not yet used by a computation of the module. */
static char *unique_comp_name(Parser *p, const char *base) {
  for (intptr_t k = 0;; k++) {
    char *name = name_with_suffix(p, base, k);
    if (!hashmap_get(&p->comps, name))
      return name;
  }
}

/* to_apply={...}: an unnamed computation written in place. */
static bool parse_inline_comp(Parser *p, HloComp **out) {
  if (!parse_enter(p))
    return false;
  HloComp *c = hlo_comp_new(p->m, unique_comp_name(p, "_"));
  c->loc = parse_loc(p, p->lx.tok.s);
  hashmap_put(&p->comps, c->name, c);
  bool ok = parse_comp_body(p, c);
  parse_leave(p);
  *out = c;
  return ok;
}

bool parse_comp_ref(Parser *p, HloComp **out) {
  const Token *t = &p->lx.tok;
  if (t->kind == TK_LBRACE)
    return parse_inline_comp(p, out);
  if (t->kind != TK_NAME && t->kind != TK_IDENT)
    return perr(p, "expected a computation name");
  HloComp *c = p->m ? hashmap_getn(&p->comps, t->v, t->vn) : NULL;
  if (!c)
    return perr(p, "computation '%.*s' is not defined", (int)t->vn, t->v);
  padvance(p);
  *out = c;
  return true;
}

/* computation ::= ['ENTRY'] name [signature] body [',' execution_thread=] */
static bool parse_computation(Parser *p, HloComp **out, bool *is_entry) {
  *is_entry = peat(p, TK_KW_ENTRY);
  const Token *t = &p->lx.tok;
  if (t->kind != TK_NAME && t->kind != TK_IDENT)
    return perr(p, "expected a computation name");
  const char *name_at = t->s;
  if (hashmap_getn(&p->comps, t->v, t->vn))
    return perr(p, "computation '%.*s' is already defined", (int)t->vn, t->v);
  char *name = arena_strndup(p->a, t->v, t->vn);
  HloComp *c = hlo_comp_new(p->m, name);
  c->loc = parse_loc(p, name_at);
  c->is_entry = *is_entry;
  padvance(p);
  Shape *sig = NULL;
  const char *sig_at = NULL;
  if (ptok(p) == TK_LPAREN) {
    padvance(p);
    if (ptok(p) != TK_RPAREN) {
      do {
        const Token *pt = &p->lx.tok;
        if (pt->kind == TK_NAME || pt->kind == TK_IDENT) {
          /* "name: shape", or "name shape" as in older dumps (XLA's
           * ParseParamList takes a name then a shape; the colon is part
           * of its name token when present). */
          bool colon = pt->e[-1] == ':';
          padvance(p);
          if (!colon)
            peat(p, TK_COLON);
        } else {
          return perr(p, "expected a parameter name");
        }
        Shape *ps;
        if (!parse_shape(p, &ps))
          return false;
      } while (peat(p, TK_COMMA));
    }
    if (!pexpect(p, TK_RPAREN, "parameter list") ||
        !pexpect(p, TK_ARROW, "computation signature"))
      return false;
    sig_at = p->lx.tok.s;
    if (!parse_shape(p, &sig))
      return false;
    c->printed_signature = true;
  }
  if (ptok(p) != TK_LBRACE)
    return perr(p, "expected '{' to start the body of computation '%s'", name);
  if (!parse_comp_body(p, c))
    return false;
  if (sig && !parse_shapes_compatible(sig, c->root->shape))
    return perr_at(p, sig_at, "the result shape %s of computation '%s' does "
                              "not match its root '%s' of shape %s",
                   parse_shape_str(p, sig), name, c->root->name,
                   parse_shape_str(p, c->root->shape));
  if (ptok(p) == TK_COMMA && lex_peek(&p->lx).kind == TK_ATTR) {
    padvance(p);
    const Token *a = &p->lx.tok;
    if (a->vn != 16 || memcmp(a->v, "execution_thread", 16) != 0)
      return perr(p, "expected execution_thread= after a computation");
    padvance(p);
    if (!parse_string(p, &c->execution_thread))
      return false;
  }
  hashmap_put(&p->comps, c->name, c);
  *out = c;
  return true;
}

/*
 * Modules
 */

/* FileNames ... FunctionNames ... FileLocations ... StackFrames ..., raw. */
static bool parse_stack_frames(Parser *p, HloModule *m) {
  const char *start = p->lx.tok.s, *end = p->lx.tok.e;
  if (m->trailer)
    return perr(p, "the module has two stack frame tables");
  padvance(p);
  static const TokKind sections[] = {TK_KW_FUNCTIONNAMES, TK_KW_FILELOCATIONS,
                                     TK_KW_STACKFRAMES};
  for (int sec = 0; sec < 4; sec++) {
    if (sec > 0) {
      if (ptok(p) != sections[sec - 1])
        return perr(p, "expected %s in the stack frame tables",
                    sec == 1 ? "FunctionNames" : sec == 2 ? "FileLocations"
                                                          : "StackFrames");
      end = p->lx.tok.e;
      padvance(p);
    }
    while (ptok(p) == TK_INT) {
      padvance(p);
      if (sec < 2) {
        if (ptok(p) != TK_STRING)
          return perr(p, "expected a string in the stack frame tables");
        end = p->lx.tok.e;
        padvance(p);
      } else {
        if (ptok(p) != TK_LBRACE)
          return perr(p, "expected '{' in the stack frame tables");
        if (!lex_raw_value(&p->lx, false))
          return perr_at(p, p->lx.tok.s, "%s", p->lx.tok.err);
        end = p->lx.tok.e;
        padvance(p);
      }
    }
  }
  m->trailer = arena_strndup(p->a, start, (size_t)(end - start));
  return true;
}

/* Moves computation c to the end of m->comps, after those made while it
 * was parsed (wrapped and inline computations it calls). */
static void move_last(HloModule *m, HloComp *c) {
  int i = m->ncomps - 1;
  while (i >= 0 && m->comps[i] != c)
    i--;
  if (i < 0 || i == m->ncomps - 1)
    return;
  memmove(m->comps + i, m->comps + i + 1,
          sizeof(HloComp *) * (size_t)(m->ncomps - 1 - i));
  m->comps[m->ncomps - 1] = c;
}

/* Gives the computations built for async sugar names no other uses. */
static void name_wrapped(Parser *p) {
  for (int i = 0; i < p->wrapped.len; i++) {
    HloComp *c = p->wrapped.data[i];
    c->name = unique_comp_name(p, "async_wrapped");
    hashmap_put(&p->comps, c->name, c);
  }
}

static void sanitize_name(StrBuf *b, const char *path) {
  const char *base = strrchr(path, '/');
  base = base ? base + 1 : path;
  const char *dot = strrchr(base, '.');
  size_t n = dot && dot != base ? (size_t)(dot - base) : strlen(base);
  if (n == 0 || !((base[0] | 32) >= 'a' && (base[0] | 32) <= 'z') ||
      base[0] == '_')
    sb_putc(b, '_');
  for (size_t i = 0; i < n; i++) {
    char c = base[i];
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
              (c >= '0' && c <= '9') || c == '_' || c == '.' || c == '-';
    sb_putc(b, ok ? c : '_');
  }
}

static bool parse_module(Parser *p, HloModule *m) {
  const char *start = p->lx.tok.s;
  m->loc = parse_loc(p, start);
  if (peat(p, TK_KW_HLOMODULE)) {
    const Token *t = &p->lx.tok;
    if (t->kind != TK_NAME && t->kind != TK_IDENT)
      return perr(p, "expected a module name after HloModule");
    m->name = arena_strndup(p->a, t->v, t->vn);
    padvance(p);
    if (!parse_module_attrs(p, m))
      return false;
  }
  HloComp *entry = NULL, *last = NULL;
  for (;;) {
    TokKind k = ptok(p);
    if (k == TK_EOF || k == TK_SPLIT || k == TK_KW_HLOMODULE)
      break;
    if (k == TK_KW_FILENAMES) {
      if (!parse_stack_frames(p, m))
        return false;
      continue;
    }
    const char *at = p->lx.tok.s;
    HloComp *c = NULL;
    bool is_entry;
    if (!parse_computation(p, &c, &is_entry))
      return false;
    move_last(m, c);
    last = c;
    if (is_entry) {
      if (entry)
        return perr_at(p, at, "the module has more than one ENTRY computation");
      entry = c;
    }
  }
  if (!last)
    return perr(p, "expected a computation");
  m->entry = entry ? entry : last;
  m->entry->is_entry = true;
  name_wrapped(p);
  parse_drop_unreachable(m, p->d);
  parse_canonicalize(m, p->d);
  return true;
}

static void reset_module_state(Parser *p) {
  hashmap_free(&p->comps);
  hashmap_free(&p->anon);
  textmap_free(&p->shapes);
  vec_free(&p->wrapped);
  p->opstack.len = 0;
  p->ints.len = 0;
  p->depth = 0;
  p->elided_word = 0;
  p->elided_byte = 0;
  p->elided_warned = false;
  p->names = NULL;
  p->params = NULL;
  p->comp = NULL;
  p->m = NULL;
  p->a = NULL;
}

int hlo_parse(const SrcFile *src, const ParseOptions *opts, HloModule ***out,
              Diag *d) {
  Parser p = {0};
  lex_init(&p.lx, src->text, src->len, opts ? opts->strip_glog_prefixes : true);
  p.src = src;
  p.d = d;
  p.line_ptr = src->text;
  p.line_no = 1;
  p.scratch = arena_new();
  lex_next(&p.lx);
  StrBuf base;
  sb_init(&base);
  sanitize_name(&base, src->name);
  PtrVec mods = {0};
  bool ok = true;
  for (;;) {
    while (ptok(&p) == TK_SPLIT)
      padvance(&p);
    if (ptok(&p) == TK_EOF)
      break;
    HloModule *m = hlo_module_new(base.s);
    vec_push(&mods, m);
    p.m = m;
    p.a = m->arena;
    ok = parse_module(&p, m);
    reset_module_state(&p);
    if (!ok)
      break;
  }
  if (ok && mods.len == 0)
    ok = perr(&p, "expected an HloModule or a computation");
  sb_free(&base);
  textmap_free(&p.ops);
  arena_free(p.scratch);
  vec_free(&p.opstack);
  vec_free(&p.ints);
  if (!ok) {
    for (int i = 0; i < mods.len; i++)
      hlo_module_free(mods.data[i]);
    vec_free(&mods);
    *out = NULL;
    return -1;
  }
  *out = (HloModule **)mods.data;
  return mods.len;
}
