/*
 * parse_shape.c - shapes and layouts in HLO text, and hlo_parse_shape.
 *
 *   shape  ::= elemtype '[' [dim (',' dim)*] ']' [layout]
 *            | '(' [shape (',' shape)*] ')'
 *            | 'b' '(' shape ')'                       (a buffer)
 *   dim    ::= int | '<=' int | '?'
 *   layout ::= '{' [int (',' int)*] [':' D(...) T(...)... L(n) #(type)
 *              *(type) E(n) S(n) SC(...)... P(shape) M(n)] '}'
 *
 * (each part after ':' optional, in that order).  A '{' after an array
 * shape starts a layout only when an integer or ':' follows it, since a
 * computation body may follow a signature's result shape.  Array shapes
 * written without a layout get the default one, {rank-1,...,0}.
 */
#include "parse_internal.h"

#include <string.h>

static Layout *default_layout(Arena *a, int rank) {
  Layout *l = ARENA_NEW(a, Layout);
  l->rank = rank;
  l->minor_to_major = ARENA_ARRAY(a, int64_t, rank);
  for (int i = 0; i < rank; i++)
    l->minor_to_major[i] = rank - 1 - i;
  return l;
}

static bool tok_is_ident(const Parser *p, const char *word) {
  const Token *t = &p->lx.tok;
  size_t n = strlen(word);
  return t->kind == TK_IDENT && t->vn == n && memcmp(t->v, word, n) == 0;
}

bool parse_can_be_shape(Parser *p) {
  TokKind k = ptok(p);
  if (k == TK_PRIMTYPE || k == TK_LPAREN)
    return true;
  return tok_is_ident(p, "b") && lex_peek(&p->lx).kind == TK_LPAREN;
}

/* Copies the ints pushed on p->ints since `base` into the arena. */
static int64_t *take_ints(Parser *p, int base, int *n) {
  *n = p->ints.len - base;
  int64_t *v = NULL;
  if (*n > 0)
    v = arena_memdup(p->a, p->ints.data + base, sizeof(int64_t) * (size_t)*n);
  p->ints.len = base;
  return v;
}

/* '(' int ')' after a layout letter. */
static bool layout_int(Parser *p, const char *what, int64_t *out) {
  padvance(p);
  if (!pexpect(p, TK_LPAREN, what) || !parse_int64(p, out))
    return false;
  return pexpect(p, TK_RPAREN, what);
}

/* '(' unsigned-int-type ')' after '#' or '*'. */
static bool layout_type(Parser *p, const char *what, ElemType *out) {
  padvance(p);
  if (!pexpect(p, TK_LPAREN, what))
    return false;
  ElemType et = p->lx.tok.et;
  if (ptok(p) != TK_PRIMTYPE ||
      !(et == ET_U8 || et == ET_U16 || et == ET_U32 || et == ET_U64 ||
        et == ET_U2 || et == ET_U4))
    return perr(p, "expected an unsigned integer type in %s", what);
  *out = et;
  padvance(p);
  return pexpect(p, TK_RPAREN, what);
}

/* D(D, C+, S~, H) */
static bool layout_dim_level_types(Parser *p, Layout *l) {
  padvance(p);
  if (!pexpect(p, TK_LPAREN, "dim level types"))
    return false;
  PtrVec v = {0};
  bool ok = true;
  if (ptok(p) != TK_RPAREN) {
    do {
      const Token *t = &p->lx.tok;
      if (t->kind != TK_IDENT || t->vn != 1 || !strchr("DCSH", t->v[0])) {
        ok = perr(p, "expected a dim level type (D, C, S or H)");
        break;
      }
      char buf[4] = {t->v[0], 0, 0, 0};
      int n = 1;
      padvance(p);
      if (peat(p, TK_PLUS))
        buf[n++] = '+';
      if (peat(p, TK_TILDE))
        buf[n++] = '~';
      vec_push(&v, arena_strdup(p->a, buf));
    } while (peat(p, TK_COMMA));
  }
  if (ok && (ok = pexpect(p, TK_RPAREN, "dim level types"))) {
    l->ndim_level_types = v.len;
    l->dim_level_types = vec_to_arena(p->a, &v);
  }
  vec_free(&v);
  return ok;
}

/* T(8,128)(2,1)...: '*' is a combined dimension. */
static bool layout_tiles(Parser *p, Layout *l) {
  padvance(p);
  Vec(Tile) tiles = {0};
  bool ok = true;
  while (ok && ptok(p) == TK_LPAREN) {
    padvance(p);
    int base = p->ints.len;
    if (ptok(p) != TK_RPAREN) {
      do {
        int64_t v;
        if (peat(p, TK_STAR)) {
          v = TILE_COMBINED;
        } else {
          const char *at = p->lx.tok.s;
          if (!(ok = parse_int64(p, &v)))
            break;
          if (v <= 0) {
            ok = perr_at(p, at, "tile dimension must be positive");
            break;
          }
        }
        vec_push(&p->ints, v);
      } while (peat(p, TK_COMMA));
    }
    if (ok)
      ok = pexpect(p, TK_RPAREN, "tile");
    Tile t;
    t.dims = take_ints(p, base, &t.ndims);
    if (ok)
      vec_push(&tiles, t);
  }
  if (ok && tiles.len == 0)
    ok = perr(p, "expected '(' after 'T' in layout");
  if (ok) {
    l->ntiles = tiles.len;
    l->tiles = vec_to_arena(p->a, &tiles);
  }
  vec_free(&tiles);
  return ok;
}

/* SC(dim:idx,idx)(dim:idx)... */
static bool layout_split_configs(Parser *p, Layout *l) {
  padvance(p);
  Vec(SplitConfig) scs = {0};
  bool ok = true;
  while (ok && ptok(p) == TK_LPAREN) {
    padvance(p);
    SplitConfig sc = {0};
    if (!(ok = parse_int64(p, &sc.dimension)) ||
        !(ok = pexpect(p, TK_COLON, "split config")))
      break;
    int base = p->ints.len;
    if (ptok(p) != TK_RPAREN) {
      do {
        int64_t v;
        if (!(ok = parse_int64(p, &v)))
          break;
        vec_push(&p->ints, v);
      } while (peat(p, TK_COMMA));
    }
    sc.indices = take_ints(p, base, &sc.nindices);
    if (ok && (ok = pexpect(p, TK_RPAREN, "split config")))
      vec_push(&scs, sc);
  }
  if (ok && scs.len == 0)
    ok = perr(p, "expected '(' after 'SC' in layout");
  if (ok) {
    l->nsplit_configs = scs.len;
    l->split_configs = vec_to_arena(p->a, &scs);
  }
  vec_free(&scs);
  return ok;
}

static bool parse_layout(Parser *p, Shape *s) {
  const char *at = p->lx.tok.s;
  padvance(p); /* '{' */
  Layout *l = ARENA_NEW(p->a, Layout);
  int base = p->ints.len;
  if (ptok(p) == TK_INT) {
    do {
      int64_t v;
      if (!parse_int64(p, &v)) {
        p->ints.len = base;
        return false;
      }
      vec_push(&p->ints, v);
    } while (peat(p, TK_COMMA));
  }
  int n;
  l->minor_to_major = take_ints(p, base, &n);
  l->rank = n;
  if (n != s->rank)
    return perr_at(p, at, "layout has %d dimensions but the shape has rank %d",
                   n, s->rank);
  /* minor_to_major must be a permutation of 0..rank-1. */
  uint8_t small[64];
  uint8_t *seen = n <= 64 ? small : xcalloc((size_t)n, 1);
  if (seen == small)
    memset(small, 0, sizeof small);
  bool perm = true;
  for (int i = 0; i < n && perm; i++) {
    int64_t v = l->minor_to_major[i];
    if (v < 0 || v >= n || seen[v])
      perm = false;
    else
      seen[v] = 1;
  }
  if (seen != small)
    free(seen);
  if (!perm)
    return perr_at(p, at, "layout is not a permutation of the %d dimensions",
                   n);
  if (peat(p, TK_COLON)) {
    if (tok_is_ident(p, "D") && !layout_dim_level_types(p, l))
      return false;
    if (tok_is_ident(p, "T") && !layout_tiles(p, l))
      return false;
    if (tok_is_ident(p, "L") &&
        !layout_int(p, "tail padding alignment L(n)", &l->tail_padding_alignment))
      return false;
    if (ptok(p) == TK_HASH && !layout_type(p, "index type #(...)", &l->index_type))
      return false;
    if (ptok(p) == TK_STAR &&
        !layout_type(p, "pointer type *(...)", &l->pointer_type))
      return false;
    if (tok_is_ident(p, "E") &&
        !layout_int(p, "element size E(n)", &l->element_size_bits))
      return false;
    if (tok_is_ident(p, "S") && !layout_int(p, "memory space S(n)", &l->memory_space))
      return false;
    if (tok_is_ident(p, "SC") && !layout_split_configs(p, l))
      return false;
    if (tok_is_ident(p, "P")) {
      padvance(p);
      if (!pexpect(p, TK_LPAREN, "physical shape P(...)") ||
          !parse_shape(p, &l->physical_shape) ||
          !pexpect(p, TK_RPAREN, "physical shape P(...)"))
        return false;
    }
    if (tok_is_ident(p, "M") &&
        !layout_int(p, "dynamic shape metadata prefix M(n)",
                    &l->dynamic_shape_metadata_prefix_bytes))
      return false;
  }
  if (ptok(p) != TK_RBRACE)
    return perr(p, "expected '}' at the end of the layout");
  padvance(p);
  s->layout = l;
  return true;
}

static bool parse_array_shape(Parser *p, Shape *s) {
  s->et = p->lx.tok.et;
  padvance(p);
  if (ptok(p) != TK_LSQUARE)
    return perr(p, "expected '[' after the element type");
  padvance(p);
  /* Dims and their kinds go on p->ints in pairs. */
  int base = p->ints.len;
  bool dynamic = false;
  if (ptok(p) != TK_RSQUARE) {
    for (;;) {
      int64_t v, kind = DIM_STATIC;
      if (peat(p, TK_QUESTION)) {
        v = -1;
        kind = DIM_UNBOUNDED;
      } else {
        if (peat(p, TK_LEQ))
          kind = DIM_BOUNDED;
        const char *at = p->lx.tok.s;
        if (ptok(p) != TK_INT) {
          p->ints.len = base;
          return perr(p, "expected a dimension size in shape");
        }
        if (!parse_int64(p, &v)) {
          p->ints.len = base;
          return false;
        }
        if (v < 0) {
          p->ints.len = base;
          return perr_at(p, at, "dimension size must not be negative");
        }
      }
      dynamic |= kind != DIM_STATIC;
      vec_push(&p->ints, v);
      vec_push(&p->ints, kind);
      if (!peat(p, TK_COMMA))
        break;
    }
  }
  if (ptok(p) != TK_RSQUARE) {
    p->ints.len = base;
    return perr(p, "expected ']' in shape");
  }
  padvance(p);
  int rank = (p->ints.len - base) / 2;
  if ((s->et == ET_TOKEN || s->et == ET_OPAQUE) && rank > 0) {
    p->ints.len = base;
    return perr(p, "%s shapes cannot have dimensions", et_name(s->et));
  }
  s->rank = rank;
  if (rank > 0) {
    s->dims = ARENA_ARRAY(p->a, int64_t, rank);
    if (dynamic)
      s->dyn = ARENA_ARRAY(p->a, uint8_t, rank);
    for (int i = 0; i < rank; i++) {
      s->dims[i] = p->ints.data[base + 2 * i];
      if (dynamic)
        s->dyn[i] = (uint8_t)p->ints.data[base + 2 * i + 1];
    }
  }
  p->ints.len = base;
  if (s->et == ET_TOKEN || s->et == ET_OPAQUE)
    return true;
  if (ptok(p) == TK_LBRACE) {
    TokKind next = lex_peek(&p->lx).kind;
    if (next == TK_INT || next == TK_COLON)
      return parse_layout(p, s);
  }
  s->layout = default_layout(p->a, rank);
  return true;
}

static bool parse_shape_inner(Parser *p, Shape **out) {
  Shape *s = ARENA_NEW(p->a, Shape);
  TokKind k = ptok(p);
  if (k == TK_PRIMTYPE) {
    if (!parse_array_shape(p, s))
      return false;
    *out = s;
    return true;
  }
  if (k == TK_LPAREN) {
    padvance(p);
    PtrVec elems = {0};
    bool ok = true;
    if (ptok(p) != TK_RPAREN) {
      do {
        Shape *e;
        if (!(ok = parse_shape(p, &e)))
          break;
        vec_push(&elems, e);
      } while (peat(p, TK_COMMA));
    }
    if (ok && ptok(p) != TK_RPAREN)
      ok = perr(p, "expected ')' at the end of the tuple shape");
    if (ok) {
      padvance(p);
      s->et = ET_TUPLE;
      s->ntuple = elems.len;
      s->tuple = vec_to_arena(p->a, &elems);
      *out = s;
    }
    vec_free(&elems);
    return ok;
  }
  if (tok_is_ident(p, "b") && lex_peek(&p->lx).kind == TK_LPAREN) {
    padvance(p);
    padvance(p);
    Shape *inner;
    const char *at = p->lx.tok.s;
    if (!parse_shape(p, &inner))
      return false;
    if (!et_is_array(inner->et))
      return perr_at(p, at, "a buffer shape must hold an array shape");
    if (!pexpect(p, TK_RPAREN, "buffer shape b(...)"))
      return false;
    inner->is_buffer = true;
    *out = inner;
    return true;
  }
  if (k == TK_IDENT && lex_peek(&p->lx).kind == TK_LSQUARE)
    return perr(p, "unknown element type '%.*s'", (int)p->lx.tok.vn,
                p->lx.tok.v);
  return perr(p, "expected a shape");
}

/*
 * Shapes repeat a lot in a module (a 40k-instruction dump has a few hundred
 * distinct ones), so an outermost shape is parsed into a scratch arena and
 * interned by its source text: the module keeps one copy of each, shared by
 * every instruction written with that text.
 */
/* Blanks, newlines and block comments; NULL at a line comment. */
static const char *skip_space(const char *q, const char *end) {
  for (;;) {
    char c = *q;
    if (c == '\n' && (q[1] == 'I' || q[1] == 'W' || q[1] == 'E' || q[1] == 'F')) {
      return NULL; /* maybe a glog prefix: leave it to the lexer */
    } else if (c == ' ' || c == '\t' || c == '\r' || c == '\n') {
      q++;
    } else if (c == '/' && q[1] == '*') {
      const char *e = q + 2;
      while (e + 1 < end && !(e[0] == '*' && e[1] == '/'))
        e++;
      if (e + 1 >= end)
        return NULL;
      q = e + 2;
    } else if (c == '/') {
      return NULL;
    } else {
      return q;
    }
  }
}

/* From an opening bracket at q, the end of its balanced group, or NULL
 * when the text holds anything the shape grammar cannot (strings, line
 * comments, the end of the input). */
static const char *skip_group(const char *q, const char *end, char open,
                              char close) {
  int depth = 0;
  while (q < end) {
    char c = *q;
    if (c == '/') {
      if (!(q = skip_space(q, end)))
        return NULL;
      continue;
    }
    if (c == '"' || c == '\'' || c == 0 ||
        (c == '\n' && (q[1] == 'I' || q[1] == 'W' || q[1] == 'E' || q[1] == 'F')))
      return NULL;
    if (c == open)
      depth++;
    else if (c == close && --depth == 0)
      return q + 1;
    q++;
  }
  return NULL;
}

/*
 * Where the shape starting at the current token ends, found by scanning
 * characters without building anything, or NULL when unsure (the caller
 * then parses token by token).  It must agree with the parser: an array
 * shape's layout is taken only when '{' is followed by an integer or ':'.
 */
static const char *shape_extent(Parser *p) {
  const Token *t = &p->lx.tok;
  const char *end = p->lx.end;
  if (t->kind == TK_LPAREN)
    return skip_group(t->s, end, '(', ')');
  if (t->kind != TK_PRIMTYPE)
    return NULL;
  const char *q = skip_space(t->e, end);
  if (!q || *q != '[')
    return NULL;
  for (q++; *q != ']'; q++) {
    char c = *q;
    if (!((c >= '0' && c <= '9') || c == ',' || c == ' ' || c == '<' ||
          c == '=' || c == '?'))
      return NULL;
  }
  const char *after = q + 1;
  q = skip_space(after, end);
  if (!q || *q != '{')
    return q ? after : NULL;
  const char *r = skip_space(q + 1, end);
  if (!r)
    return NULL;
  if (*r >= '0' && *r <= '9') {
    while (*r >= '0' && *r <= '9')
      r++;
    if (*r != ',' && *r != '}' && *r != ':' && *r != ' ')
      return NULL;
  } else if (*r == '-') {
    return NULL; /* "{-1": the lexer's call */
  } else if (*r != ':') {
    return after; /* not a layout: the shape ends at ']' */
  }
  return skip_group(q, end, '{', '}');
}

bool parse_shape(Parser *p, Shape **out) {
  if (!parse_enter(p))
    return false;
  bool ok;
  const char *fast_end;
  Shape *known;
  if (p->scratch && p->shape_nest == 0 && (fast_end = shape_extent(p)) &&
      (known = textmap_get(&p->shapes, p->lx.tok.s,
                           (size_t)(fast_end - p->lx.tok.s)))) {
    /* Seen before: the same text is the same shape. */
    lex_skip_to(&p->lx, fast_end);
    *out = known;
    ok = true;
  } else if (!p->scratch || p->shape_nest > 0) {
    p->shape_nest++;
    ok = parse_shape_inner(p, out);
    p->shape_nest--;
  } else {
    const char *start = p->lx.tok.s;
    Arena *home = p->a;
    Shape *s = NULL;
    p->a = p->scratch;
    p->shape_nest++;
    ok = parse_shape_inner(p, &s);
    p->shape_nest--;
    p->a = home;
    if (ok) {
      /* Interned under its exact text (which lives as long as the map). */
      size_t n = (size_t)(p->lx.prev_end - start);
      Shape *seen = textmap_get(&p->shapes, start, n);
      if (!seen) {
        seen = shape_clone(home, s);
        textmap_put(&p->shapes, start, n, seen);
      }
      *out = seen;
    }
    if (arena_bytes_used(p->scratch) > (1u << 18)) {
      arena_free(p->scratch);
      p->scratch = arena_new();
    }
  }
  parse_leave(p);
  return ok;
}

bool parse_shapes_compatible(const Shape *x, const Shape *y) {
  if (x->et != y->et)
    return false;
  if (x->et == ET_TUPLE) {
    if (x->ntuple != y->ntuple)
      return false;
    for (int i = 0; i < x->ntuple; i++)
      if (!parse_shapes_compatible(x->tuple[i], y->tuple[i]))
        return false;
    return true;
  }
  if (x->rank != y->rank)
    return false;
  for (int i = 0; i < x->rank; i++) {
    int dx = x->dyn ? x->dyn[i] : DIM_STATIC, dy = y->dyn ? y->dyn[i] : DIM_STATIC;
    if (x->dims[i] != y->dims[i] || dx != dy)
      return false;
  }
  return true;
}

static void put_shape(StrBuf *b, const Shape *s, int depth) {
  if (depth > 8) {
    sb_puts(b, "...");
    return;
  }
  if (s->et == ET_TUPLE) {
    sb_putc(b, '(');
    for (int i = 0; i < s->ntuple; i++) {
      if (i)
        sb_puts(b, ", ");
      if (i == 8) {
        sb_puts(b, "...");
        break;
      }
      put_shape(b, s->tuple[i], depth + 1);
    }
    sb_putc(b, ')');
    return;
  }
  sb_puts(b, et_name(s->et));
  sb_putc(b, '[');
  for (int i = 0; i < s->rank; i++) {
    if (i)
      sb_putc(b, ',');
    int kind = s->dyn ? s->dyn[i] : DIM_STATIC;
    if (kind == DIM_UNBOUNDED) {
      sb_putc(b, '?');
      continue;
    }
    if (kind == DIM_BOUNDED)
      sb_puts(b, "<=");
    sb_put_i64(b, s->dims[i]);
  }
  sb_putc(b, ']');
}

char *parse_shape_str(Parser *p, const Shape *s) {
  StrBuf b;
  sb_init(&b);
  put_shape(&b, s, 0);
  char *r = arena_strndup(p->a, b.s, b.len);
  sb_free(&b);
  return r;
}

Shape *hlo_parse_shape(Arena *a, const char *text, Diag *d) {
  Parser p;
  parser_init_text(&p, a, text, d);
  Shape *s = NULL;
  bool ok = parse_shape(&p, &s);
  if (ok && ptok(&p) != TK_EOF)
    ok = perr(&p, "unexpected text after the shape");
  vec_free(&p.ints);
  return ok ? s : NULL;
}
