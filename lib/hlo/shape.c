/*
 * shape.c - shapes and layouts: construction, comparison, sizes and the
 * text form XLA prints.
 *
 * A shape is an array (element type, dimensions, optional dynamic markers and
 * a layout), a tuple of shapes, a token or an opaque; an array may be marked
 * a buffer, printed "b(f32[2]{0})".  Layouts hold
 * minor_to_major plus the optional parts after ':' in the text grammar
 *   {minor_to_major[:D(..)T(..)..L(n)#(t)*(t)E(n)S(n)SC(..)..P(shape)M(n)]}
 * and print back in that order.  Like XLA, a scalar whose layout has nothing
 * but the (empty) minor_to_major prints without braces ("f32[]"), and tuples
 * put an "index=N" comment marker before every fifth element.
 *
 * Printing is on the hot path of the module printer (every result and every
 * operand shape), so it appends straight into the StrBuf without formatting
 * calls.
 */
#include "hlo.h"

#include <string.h>

/* XLA's annotation interval for long tuples (kAnnotationPrintInterval). */
enum { TUPLE_INDEX_INTERVAL = 5 };

static int64_t *dup_i64(Arena *a, const int64_t *v, int n) {
  if (n <= 0 || !v)
    return n > 0 ? ARENA_ARRAY(a, int64_t, n) : NULL;
  return arena_memdup(a, v, sizeof(int64_t) * (size_t)n);
}

Layout *layout_default(Arena *a, int rank) {
  Layout *l = ARENA_NEW(a, Layout);
  l->rank = rank;
  if (rank > 0) {
    l->minor_to_major = ARENA_ARRAY(a, int64_t, rank);
    for (int i = 0; i < rank; i++)
      l->minor_to_major[i] = rank - 1 - i;
  }
  return l;
}

Shape *shape_array(Arena *a, ElemType et, int rank, const int64_t *dims) {
  Shape *s = ARENA_NEW(a, Shape);
  s->et = et;
  s->rank = rank;
  s->dims = dup_i64(a, dims, rank);
  s->layout = layout_default(a, rank);
  return s;
}

Shape *shape_scalar(Arena *a, ElemType et) { return shape_array(a, et, 0, NULL); }

Shape *shape_tuple(Arena *a, int n, Shape *const *elems) {
  Shape *s = ARENA_NEW(a, Shape);
  s->et = ET_TUPLE;
  s->ntuple = n;
  if (n > 0)
    s->tuple = arena_memdup(a, elems, sizeof(Shape *) * (size_t)n);
  return s;
}

Shape *shape_token(Arena *a) {
  Shape *s = ARENA_NEW(a, Shape);
  s->et = ET_TOKEN;
  return s;
}

static Layout *layout_clone(Arena *a, const Layout *l) {
  Layout *c = ARENA_NEW(a, Layout);
  *c = *l;
  c->minor_to_major = dup_i64(a, l->minor_to_major, l->rank);
  if (l->ndim_level_types > 0) {
    c->dim_level_types = ARENA_ARRAY(a, char *, l->ndim_level_types);
    for (int i = 0; i < l->ndim_level_types; i++)
      c->dim_level_types[i] = arena_strdup(a, l->dim_level_types[i]);
  }
  if (l->ntiles > 0) {
    c->tiles = ARENA_ARRAY(a, Tile, l->ntiles);
    for (int i = 0; i < l->ntiles; i++) {
      c->tiles[i].ndims = l->tiles[i].ndims;
      c->tiles[i].dims = dup_i64(a, l->tiles[i].dims, l->tiles[i].ndims);
    }
  }
  if (l->nsplit_configs > 0) {
    c->split_configs = ARENA_ARRAY(a, SplitConfig, l->nsplit_configs);
    for (int i = 0; i < l->nsplit_configs; i++) {
      const SplitConfig *sc = &l->split_configs[i];
      c->split_configs[i].dimension = sc->dimension;
      c->split_configs[i].nindices = sc->nindices;
      c->split_configs[i].indices = dup_i64(a, sc->indices, sc->nindices);
    }
  }
  if (l->physical_shape)
    c->physical_shape = shape_clone(a, l->physical_shape);
  return c;
}

Shape *shape_clone(Arena *a, const Shape *s) {
  if (!s)
    return NULL;
  Shape *c = ARENA_NEW(a, Shape);
  *c = *s;
  c->dims = dup_i64(a, s->dims, s->rank);
  if (s->dyn && s->rank > 0)
    c->dyn = arena_memdup(a, s->dyn, (size_t)s->rank);
  if (s->layout)
    c->layout = layout_clone(a, s->layout);
  if (s->ntuple > 0) {
    c->tuple = ARENA_ARRAY(a, Shape *, s->ntuple);
    for (int i = 0; i < s->ntuple; i++)
      c->tuple[i] = shape_clone(a, s->tuple[i]);
  }
  return c;
}

void shape_set_default_layout(Arena *a, Shape *s) {
  if (!s)
    return;
  if (s->et == ET_TUPLE) {
    for (int i = 0; i < s->ntuple; i++)
      shape_set_default_layout(a, s->tuple[i]);
  } else if (et_is_array(s->et) && !s->layout) {
    s->layout = layout_default(a, s->rank);
  }
}

/* L(n): 0 (absent) and 1 both mean "no alignment requirement", as in XLA
 * where the default is 1. */
static int64_t tail_alignment(const Layout *l) {
  return l->tail_padding_alignment == 0 ? 1 : l->tail_padding_alignment;
}

static bool i64_equal(const int64_t *a, const int64_t *b, int n) {
  return n <= 0 || memcmp(a, b, sizeof(int64_t) * (size_t)n) == 0;
}

bool layout_equal(const Layout *a, const Layout *b) {
  if (a == b)
    return true;
  if (!a || !b)
    return false;
  if (a->rank != b->rank || !i64_equal(a->minor_to_major, b->minor_to_major, a->rank))
    return false;
  if (a->ndim_level_types != b->ndim_level_types)
    return false;
  for (int i = 0; i < a->ndim_level_types; i++)
    if (strcmp(a->dim_level_types[i] ? a->dim_level_types[i] : "",
               b->dim_level_types[i] ? b->dim_level_types[i] : "") != 0)
      return false;
  if (a->ntiles != b->ntiles)
    return false;
  for (int i = 0; i < a->ntiles; i++)
    if (a->tiles[i].ndims != b->tiles[i].ndims ||
        !i64_equal(a->tiles[i].dims, b->tiles[i].dims, a->tiles[i].ndims))
      return false;
  if (tail_alignment(a) != tail_alignment(b) || a->index_type != b->index_type ||
      a->pointer_type != b->pointer_type ||
      a->element_size_bits != b->element_size_bits ||
      a->memory_space != b->memory_space ||
      a->dynamic_shape_metadata_prefix_bytes != b->dynamic_shape_metadata_prefix_bytes)
    return false;
  if (a->nsplit_configs != b->nsplit_configs)
    return false;
  for (int i = 0; i < a->nsplit_configs; i++) {
    const SplitConfig *x = &a->split_configs[i], *y = &b->split_configs[i];
    if (x->dimension != y->dimension || x->nindices != y->nindices ||
        !i64_equal(x->indices, y->indices, x->nindices))
      return false;
  }
  if (!a->physical_shape != !b->physical_shape)
    return false;
  return !a->physical_shape || shape_equal(a->physical_shape, b->physical_shape);
}

bool layout_is_default(const Layout *l, int rank) {
  if (!l)
    return true;
  if (l->rank != rank)
    return false;
  for (int i = 0; i < rank; i++)
    if (l->minor_to_major[i] != rank - 1 - i)
      return false;
  return l->ndim_level_types == 0 && l->ntiles == 0 && tail_alignment(l) == 1 &&
         l->index_type == ET_INVALID && l->pointer_type == ET_INVALID &&
         l->element_size_bits == 0 && l->memory_space == 0 &&
         l->nsplit_configs == 0 && !l->physical_shape &&
         l->dynamic_shape_metadata_prefix_bytes == 0;
}

static uint8_t dim_kind(const Shape *s, int i) {
  return s->dyn ? s->dyn[i] : (uint8_t)DIM_STATIC;
}

/* Shared by shape_equal (exact) and shape_compatible (no layouts, and an
 * unbounded dimension matches any size, as XLA's Compatible does). */
static bool shapes_match(const Shape *a, const Shape *b, bool exact) {
  if (a == b)
    return true;
  if (!a || !b || a->et != b->et || a->is_buffer != b->is_buffer)
    return false;
  if (a->et == ET_TUPLE) {
    if (a->ntuple != b->ntuple)
      return false;
    for (int i = 0; i < a->ntuple; i++)
      if (!shapes_match(a->tuple[i], b->tuple[i], exact))
        return false;
    return true;
  }
  if (!et_is_array(a->et))
    return true;
  if (a->rank != b->rank)
    return false;
  for (int i = 0; i < a->rank; i++) {
    uint8_t ka = dim_kind(a, i), kb = dim_kind(b, i);
    if (exact) {
      if (ka != kb || a->dims[i] != b->dims[i])
        return false;
    } else if (a->dims[i] != b->dims[i] && ka != DIM_UNBOUNDED &&
               kb != DIM_UNBOUNDED) {
      return false;
    }
  }
  if (!exact)
    return true;
  /* A missing layout compares as the default one. */
  if (!a->layout || !b->layout)
    return layout_is_default(a->layout ? a->layout : b->layout, a->rank);
  return layout_equal(a->layout, b->layout);
}

bool shape_equal(const Shape *a, const Shape *b) { return shapes_match(a, b, true); }

bool shape_compatible(const Shape *a, const Shape *b) {
  return shapes_match(a, b, false);
}

bool shape_is_array(const Shape *s) { return s && et_is_array(s->et); }

bool shape_is_tuple(const Shape *s) { return s && s->et == ET_TUPLE; }

bool shape_is_scalar(const Shape *s) { return shape_is_array(s) && s->rank == 0; }

/* Elements of an array (1 for a scalar).  A dynamic dimension counts with its
 * bound; an unbounded one (-1) makes the count unknown: -1.  Non-arrays: 0. */
int64_t shape_elements(const Shape *s) {
  if (!shape_is_array(s))
    return 0;
  int64_t n = 1;
  for (int i = 0; i < s->rank; i++) {
    int64_t d = s->dims[i];
    if (d < 0)
      return -1;
    if (d != 0 && n > INT64_MAX / d)
      return -1;
    n *= d;
  }
  return n;
}

/* Bytes of an array's buffer: elements * et_bytes, or packed when the layout
 * gives an element size in bits (E(4) for s4).  As XLA's ByteSizeOf does, a
 * tuple is its index table of 8-byte pointers; tokens and opaques take 0. */
int64_t shape_byte_size(const Shape *s) {
  if (!s)
    return -1;
  if (s->et == ET_TUPLE)
    return 8 * (int64_t)s->ntuple;
  if (!et_is_array(s->et))
    return 0;
  int64_t n = shape_elements(s);
  if (n < 0)
    return -1;
  if (s->layout && s->layout->element_size_bits > 0) {
    int64_t bits = s->layout->element_size_bits;
    if (n > (INT64_MAX - 7) / bits)
      return -1;
    return (n * bits + 7) / 8;
  }
  int64_t eb = et_bytes(s->et);
  if (eb > 0 && n > INT64_MAX / eb)
    return -1;
  return n * eb;
}

/* A dynamic array's buffer holds it at its bounds, then one s32 runtime
 * size per dimension (XLA's CPU ShapeSizeBytes). */
int64_t shape_buffer_size(const Shape *s) {
  int64_t n = shape_byte_size(s);
  if (n < 0 || !shape_is_array(s) || !shape_is_dynamic(s))
    return n;
  return n + 4 * (int64_t)s->rank;
}

bool shape_is_dynamic(const Shape *s) {
  if (!s)
    return false;
  if (s->et == ET_TUPLE) {
    for (int i = 0; i < s->ntuple; i++)
      if (shape_is_dynamic(s->tuple[i]))
        return true;
    return false;
  }
  if (!s->dyn)
    return false;
  for (int i = 0; i < s->rank; i++)
    if (s->dyn[i] != DIM_STATIC)
      return true;
  return false;
}

const Shape *shape_subshape(const Shape *s, int depth, const int64_t *index) {
  for (int d = 0; d < depth; d++) {
    if (!s || s->et != ET_TUPLE || index[d] < 0 || index[d] >= s->ntuple)
      return NULL;
    s = s->tuple[index[d]];
  }
  return s;
}

int shape_leaf_count(const Shape *s) {
  if (!s)
    return 0;
  if (s->et != ET_TUPLE)
    return 1;
  int n = 0;
  for (int i = 0; i < s->ntuple; i++)
    n += shape_leaf_count(s->tuple[i]);
  return n;
}

/*
 * Printing
 */

static void put_i64_list(StrBuf *b, const int64_t *v, int n) {
  for (int i = 0; i < n; i++) {
    if (i)
      sb_putc(b, ',');
    sb_put_i64(b, v[i]);
  }
}

/* "#(s32)": XLA prints "invalid" for a type that is not an integer. */
static void put_int_type(StrBuf *b, const char *key, ElemType t) {
  sb_puts(b, key);
  sb_puts(b, et_is_int(t) ? et_name(t) : "invalid");
  sb_putc(b, ')');
}

/* The optional parts after ':', in grammar order; the ':' only if any. */
static void put_layout_parts(StrBuf *b, const Layout *l) {
  bool colon = false;
#define COLON() (colon ? (void)0 : (sb_putc(b, ':'), (void)(colon = true)))
  if (l->ndim_level_types > 0) {
    COLON();
    sb_puts(b, "D(");
    for (int i = 0; i < l->ndim_level_types; i++) {
      if (i)
        sb_putc(b, ',');
      sb_puts(b, l->dim_level_types[i] ? l->dim_level_types[i] : "");
    }
    sb_putc(b, ')');
  }
  if (l->ntiles > 0) {
    COLON();
    sb_putc(b, 'T');
    for (int i = 0; i < l->ntiles; i++) {
      sb_putc(b, '(');
      for (int j = 0; j < l->tiles[i].ndims; j++) {
        if (j)
          sb_putc(b, ',');
        int64_t d = l->tiles[i].dims[j];
        if (d == TILE_COMBINED)
          sb_putc(b, '*');
        else
          sb_put_i64(b, d);
      }
      sb_putc(b, ')');
    }
  }
  if (tail_alignment(l) != 1) {
    COLON();
    sb_puts(b, "L(");
    sb_put_i64(b, l->tail_padding_alignment);
    sb_putc(b, ')');
  }
  if (l->index_type != ET_INVALID) {
    COLON();
    put_int_type(b, "#(", l->index_type);
  }
  if (l->pointer_type != ET_INVALID) {
    COLON();
    put_int_type(b, "*(", l->pointer_type);
  }
  if (l->element_size_bits != 0) {
    COLON();
    sb_puts(b, "E(");
    sb_put_i64(b, l->element_size_bits);
    sb_putc(b, ')');
  }
  if (l->memory_space != 0) {
    COLON();
    sb_puts(b, "S(");
    sb_put_i64(b, l->memory_space);
    sb_putc(b, ')');
  }
  if (l->nsplit_configs > 0) {
    COLON();
    sb_puts(b, "SC");
    for (int i = 0; i < l->nsplit_configs; i++) {
      const SplitConfig *sc = &l->split_configs[i];
      sb_putc(b, '(');
      sb_put_i64(b, sc->dimension);
      sb_putc(b, ':');
      put_i64_list(b, sc->indices, sc->nindices);
      sb_putc(b, ')');
    }
  }
  if (l->physical_shape) {
    COLON();
    sb_puts(b, "P(");
    shape_print(b, l->physical_shape, true);
    sb_putc(b, ')');
  }
  if (l->dynamic_shape_metadata_prefix_bytes > 0) {
    COLON();
    sb_puts(b, "M(");
    sb_put_i64(b, l->dynamic_shape_metadata_prefix_bytes);
    sb_putc(b, ')');
  }
#undef COLON
}

void layout_print(StrBuf *b, const Layout *l) {
  sb_putc(b, '{');
  put_i64_list(b, l->minor_to_major, l->rank);
  put_layout_parts(b, l);
  sb_putc(b, '}');
}

/* Writes v in decimal at p; returns the end. */
static char *put_int(char *p, int64_t v) {
  if (v >= 0 && v < 10) {
    *p++ = (char)('0' + v);
    return p;
  }
  char tmp[24];
  int n = 0;
  uint64_t u = v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
  do {
    tmp[n++] = (char)('0' + u % 10);
    u /= 10;
  } while (u);
  if (v < 0)
    *p++ = '-';
  while (n)
    *p++ = tmp[--n];
  return p;
}

/* Only minor_to_major: the layout of nearly every shape. */
static bool layout_is_plain(const Layout *l) {
  return l->ndim_level_types == 0 && l->ntiles == 0 &&
         tail_alignment(l) == 1 && l->index_type == ET_INVALID &&
         l->pointer_type == ET_INVALID && l->element_size_bits == 0 &&
         l->memory_space == 0 && l->nsplit_configs == 0 &&
         !l->physical_shape && l->dynamic_shape_metadata_prefix_bytes == 0;
}

/* Ranks up to this are formatted in a stack buffer and appended at once;
 * each dimension and layout entry takes at most 22 bytes. */
enum { FAST_RANK = 40, FAST_BUF = 32 + 2 * 24 * FAST_RANK };

/* An array shape: "f32[2,<=3,?]" then, when asked for, its layout.  The
 * common case (a plain layout) costs one append. */
static void array_print(StrBuf *b, const Shape *s, bool print_layout) {
  const Layout *l = print_layout ? s->layout : NULL;
  /* A scalar's plain layout would print "{}": XLA leaves it out. */
  if (l && s->rank == 0 && layout_is_default(l, 0))
    l = NULL;
  bool plain = !l || (layout_is_plain(l) && l->rank <= FAST_RANK);
  if (s->rank > FAST_RANK) {
    sb_puts(b, et_name(s->et));
    sb_putc(b, '[');
    for (int i = 0; i < s->rank; i++) {
      if (i)
        sb_putc(b, ',');
      if (dim_kind(s, i) == DIM_UNBOUNDED) {
        sb_putc(b, '?');
        continue;
      }
      if (dim_kind(s, i) == DIM_BOUNDED)
        sb_putn(b, "<=", 2);
      sb_put_i64(b, s->dims[i]);
    }
    sb_putc(b, ']');
    if (l)
      layout_print(b, l);
    return;
  }
  /* Straight into the buffer's spare room when it has enough (nearly
   * always, once it has grown), else through a stack buffer. */
  char stack[FAST_BUF];
  bool direct = b->s && b->cap - b->len > FAST_BUF;
  char *buf = direct ? b->s + b->len : stack, *p = buf;
  const char *name = et_name(s->et);
  size_t n = strlen(name);
  memcpy(p, name, n);
  p += n;
  *p++ = '[';
  for (int i = 0; i < s->rank; i++) {
    if (i)
      *p++ = ',';
    uint8_t k = dim_kind(s, i);
    if (k == DIM_UNBOUNDED) {
      *p++ = '?';
      continue;
    }
    if (k == DIM_BOUNDED) {
      *p++ = '<';
      *p++ = '=';
    }
    p = put_int(p, s->dims[i]);
  }
  *p++ = ']';
  if (l && plain) {
    *p++ = '{';
    for (int i = 0; i < l->rank; i++) {
      if (i)
        *p++ = ',';
      p = put_int(p, l->minor_to_major[i]);
    }
    *p++ = '}';
  }
  if (direct) {
    b->len += (size_t)(p - buf);
    *p = 0;
  } else {
    sb_putn(b, buf, (size_t)(p - buf));
  }
  if (l && !plain)
    layout_print(b, l);
}

void shape_print(StrBuf *b, const Shape *s, bool print_layout) {
  if (!s) {
    sb_puts(b, "()");
    return;
  }
  if (s->et == ET_TUPLE) {
    sb_putc(b, '(');
    for (int i = 0; i < s->ntuple; i++) {
      if (i == 0) {
        /* nothing */
      } else if (i % TUPLE_INDEX_INTERVAL == 0) {
        char sep[48] = ", /*index=";
        char *p = put_int(sep + 10, i);
        *p++ = '*';
        *p++ = '/';
        sb_putn(b, sep, (size_t)(p - sep));
      } else {
        sb_putn(b, ", ", 2);
      }
      shape_print(b, s->tuple[i], print_layout);
    }
    sb_putc(b, ')');
    return;
  }
  if (s->is_buffer) {
    sb_putn(b, "b(", 2);
    array_print(b, s, print_layout);
    sb_putc(b, ')');
    return;
  }
  if (et_is_array(s->et)) {
    array_print(b, s, print_layout);
    return;
  }
  sb_puts(b, et_name(s->et));
  sb_putn(b, "[]", 2);
}

char *shape_to_string(const Shape *s, bool print_layout) {
  StrBuf b;
  sb_init(&b);
  shape_print(&b, s, print_layout);
  return sb_detach(&b);
}
