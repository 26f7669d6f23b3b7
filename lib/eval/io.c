/*
 * io.c - literal I/O for the drivers: input specs in iree-run-module's
 * syntax, .npy and raw files, XLA literal text, deterministic random inputs
 * (with index operands kept in range) and the tolerance comparison.
 *
 * Nothing here exits: every problem is an error in the Diag, phrased for
 * the person who typed the spec.
 */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../support/npy.h"
#include "evalp.h"

static bool io_err(Diag *d, const char *fmt, ...) PRINTF_LIKE(2, 3);
static bool io_err(Diag *d, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  Loc none = {0};
  diag_verror(d, none, fmt, ap);
  va_end(ap);
  return false;
}

/*
 * Element types by name: XLA's and IREE's spellings
 */
static ElemType type_from_name(const char *s, size_t n) {
  ElemType et = et_from_name(s, n);
  if (et != ET_INVALID) return et;
  static const struct { const char *name; ElemType et; } alias[] = {
    {"i1", ET_PRED}, {"bool", ET_PRED}, {"i2", ET_S2}, {"i4", ET_S4},
    {"i8", ET_S8}, {"i16", ET_S16}, {"i32", ET_S32}, {"i64", ET_S64},
    {"si8", ET_S8}, {"si16", ET_S16}, {"si32", ET_S32}, {"si64", ET_S64},
    {"ui2", ET_U2}, {"ui4", ET_U4}, {"ui8", ET_U8}, {"ui16", ET_U16},
    {"ui32", ET_U32}, {"ui64", ET_U64},
  };
  for (size_t k = 0; k < ARRAY_LEN(alias); k++)
    if (strlen(alias[k].name) == n && strncmp(alias[k].name, s, n) == 0) return alias[k].et;
  return ET_INVALID;
}

static const char *npy_descr(ElemType et) {
  switch (et) {
  case ET_PRED: return "|b1";
  case ET_S2: case ET_S4: case ET_S8: return "|i1";
  case ET_S16: return "<i2";
  case ET_S32: return "<i4";
  case ET_S64: return "<i8";
  case ET_U2: case ET_U4: case ET_U8: return "|u1";
  case ET_U16: return "<u2";
  case ET_U32: return "<u4";
  case ET_U64: return "<u8";
  case ET_F16: return "<f2";
  case ET_F32: return "<f4";
  case ET_F64: return "<f8";
  case ET_C64: return "<c8";
  case ET_C128: return "<c16";
  case ET_BF16: return "<V2";
  default: return et_bytes(et) == 1 ? "|V1" : NULL;
  }
}

/* The element type a .npy dtype holds, given what the parameter wants
 * (void dtypes take the wanted type of the same size). */
static ElemType et_from_descr(const char *descr, ElemType want) {
  if (descr[1] == 'V') {
    int sz = atoi(descr + 2);
    return want != ET_INVALID && et_bytes(want) == sz && !et_is_complex(want) ? want : ET_INVALID;
  }
  static const ElemType all[] = {
    ET_PRED, ET_S8, ET_S16, ET_S32, ET_S64, ET_U8, ET_U16, ET_U32, ET_U64,
    ET_F16, ET_F32, ET_F64, ET_C64, ET_C128,
  };
  /* sub-byte integers travel as int8/uint8 */
  if (want != ET_INVALID && et_bits(want) < 8 && et_is_int(want) &&
      strcmp(descr, npy_descr(want)) == 0)
    return want;
  for (size_t k = 0; k < ARRAY_LEN(all); k++)
    if (strcmp(descr + 1, npy_descr(all[k]) + 1) == 0) return all[k];
  return ET_INVALID;
}

static Literal *new_literal(Arena *a, ElemType et, int rank, const int64_t *dims) {
  Literal *l = ARENA_NEW(a, Literal);
  l->shape = shape_array(a, et, rank, dims);
  int64_t n = 1;
  for (int k = 0; k < rank; k++) n *= dims[k];
  size_t nb = (size_t)(n * et_bytes(et));
  l->data = arena_alloc(a, nb ? nb : 1);
  return l;
}

/*
 * Reading files
 */
static uint8_t *read_all(const char *path, size_t *len, Diag *d) {
  FILE *f = fopen(path, "rb");
  if (!f) {
    io_err(d, "cannot open '%s': %s", path, strerror(errno));
    return NULL;
  }
  uint8_t *buf = NULL;
  size_t n = 0, cap = 0;
  for (;;) {
    if (n == cap) {
      cap = cap ? cap * 2 : 65536;
      buf = xrealloc(buf, cap);
    }
    size_t got = fread(buf + n, 1, cap - n, f);
    n += got;
    if (got == 0) break;
  }
  bool bad = ferror(f);
  fclose(f);
  if (bad) {
    free(buf);
    io_err(d, "cannot read '%s'", path);
    return NULL;
  }
  *len = n;
  return buf;
}

static Literal *literal_from_npy(Arena *a, const char *path, ElemType want_et,
                                 Diag *d) {
  NpyArray arr;
  if (!npy_read_file(path, &arr, d)) return NULL;
  ElemType et = et_from_descr(arr.descr, want_et);
  if (et == ET_INVALID) {
    io_err(d, "%s: dtype '%s' is not an element type this input can take%s%s", path,
           arr.descr, want_et != ET_INVALID ? "; the parameter wants " : "",
           want_et != ET_INVALID ? et_name(want_et) : "");
    npy_free(&arr);
    return NULL;
  }
  Literal *l = new_literal(a, et, arr.rank, arr.dims);
  memcpy(l->data, arr.data, arr.nbytes);
  if (et_bits(et) < 8)
    for (size_t k = 0; k < arr.nbytes; k++) ev_set_s64(et, l->data + k, (int8_t)l->data[k]);
  if (et == ET_PRED)
    for (size_t k = 0; k < arr.nbytes; k++) l->data[k] = l->data[k] != 0;
  npy_free(&arr);
  return l;
}

/*
 * Text values
 */
static bool parse_value(const char **pp, ElemType et, uint8_t *out, Diag *d) {
  const char *p = *pp;
  char *e = NULL;
  errno = 0;
  ElemClass c = et_class(et);
  if (c == ETC_PRED) {
    if (strncmp(p, "true", 4) == 0) { out[0] = 1; *pp = p + 4; return true; }
    if (strncmp(p, "false", 5) == 0) { out[0] = 0; *pp = p + 5; return true; }
    long long v = strtoll(p, &e, 0);
    if (e == p) goto bad;
    out[0] = v != 0;
  } else if (c == ETC_SINT) {
    long long v = strtoll(p, &e, 0);
    if (e == p) goto bad;
    if (errno == ERANGE) return io_err(d, "value '%.*s' is out of range for %s", (int)(e - p), p, et_name(et));
    ev_set_s64(et, out, v);
  } else if (c == ETC_UINT) {
    if (*p == '-') return io_err(d, "negative value for unsigned type %s", et_name(et));
    unsigned long long v = strtoull(p, &e, 0);
    if (e == p) goto bad;
    if (errno == ERANGE) return io_err(d, "value is out of range for %s", et_name(et));
    ev_set_s64(et, out, (int64_t)v);
  } else if (c == ETC_FLOAT) {
    if (et == ET_F32) {
      float f = strtof(p, &e);
      if (e == p) goto bad;
      memcpy(out, &f, 4);
    } else {
      double v = strtod(p, &e);
      if (e == p) goto bad;
      ev_set_f64(et, out, v);
    }
  } else if (c == ETC_COMPLEX) {
    double re = strtod(p, &e), im = 0;
    if (e == p) goto bad;
    if ((*e == '+' || *e == '-') && e[1] && !isspace((unsigned char)e[1])) {
      char *e2;
      im = strtod(e, &e2);
      if (e2 == e || (*e2 != 'j' && *e2 != 'i')) goto bad;
      e = e2 + 1;
    } else if (*e == 'j' || *e == 'i') {
      im = re;
      re = 0;
      e++;
    }
    ElemType comp = et_complex_component(et);
    ev_set_f64(comp, out, re);
    ev_set_f64(comp, out + et_bytes(comp), im);
  } else {
    return io_err(d, "cannot read values of type %s", et_name(et));
  }
  *pp = e;
  return true;
bad: {
    int n = 0;
    while (p[n] && !isspace((unsigned char)p[n]) && p[n] != ',' && p[n] != ']' && n < 24) n++;
    return io_err(d, "'%.*s' is not a %s value", n, p, et_name(et));
  }
}

static bool is_sep(char c) {
  return isspace((unsigned char)c) || c == ',' || c == '[' || c == ']' || c == '{' || c == '}';
}

static Literal *literal_from_text(Arena *a, const char *text, ElemType et, int rank,
                                  const int64_t *dims, Diag *d) {
  Literal *l = new_literal(a, et, rank, dims);
  int64_t n = ev_elems(l->shape);
  int eb = et_bytes(et);
  int64_t k = 0;
  const char *p = text;
  for (;;) {
    while (*p && is_sep(*p)) p++;
    if (!*p) break;
    if (k >= n) {
      io_err(d, "more than %lld values for %s", (long long)n, et_name(et));
      return NULL;
    }
    if (!parse_value(&p, et, l->data + k * eb, d)) return NULL;
    if (*p && !is_sep(*p)) {
      io_err(d, "unexpected '%c' after value %lld", *p, (long long)k + 1);
      return NULL;
    }
    k++;
  }
  return l;   /* omitted values stay zero */
}

/* "2x3xf32" -> dims and type; false when the text is not such a prefix. */
static bool parse_shape_prefix(const char *s, size_t n, ElemType *et, int *rank,
                               int64_t *dims) {
  int r = 0;
  size_t i = 0;
  for (;;) {
    size_t j = i;
    while (j < n && s[j] != 'x') j++;
    bool digits = j > i;
    for (size_t k = i; k < j && digits; k++) digits = isdigit((unsigned char)s[k]);
    if (j < n && digits) {
      if (r >= 64) return false;
      errno = 0;
      long long v = strtoll(s + i, NULL, 10);
      if (errno || v < 0) return false;
      dims[r++] = v;
      i = j + 1;
      continue;
    }
    *et = type_from_name(s + i, n - i);
    *rank = r;
    return *et != ET_INVALID;
  }
}

Literal *io_parse_input(Arena *a, const char *spec, const Shape *want, Diag *d) {
  const char *eq = strchr(spec, '=');
  ElemType et = ET_INVALID;
  int rank = 0;
  int64_t dims[64];
  const char *body = spec;
  bool typed = false;
  if (eq && parse_shape_prefix(spec, (size_t)(eq - spec), &et, &rank, dims)) {
    typed = true;
    body = eq + 1;
  }
  if (body[0] == '@' || body[0] == '+') {
    const char *path = body + 1;
    size_t pl = strlen(path);
    bool npy = pl >= 4 && strcmp(path + pl - 4, ".npy") == 0;
    if (npy) {
      Literal *l = literal_from_npy(a, path, typed ? et : want ? want->et : ET_INVALID, d);
      if (l && typed) {
        bool same = l->shape->et == et && l->shape->rank == rank;
        for (int k = 0; same && k < rank; k++) same = l->shape->dims[k] == dims[k];
        if (!same) {
          char *got = shape_to_string(l->shape, false);
          io_err(d, "%s holds %s, the spec says %.*s", path, got, (int)(eq - spec), spec);
          free(got);
          return NULL;
        }
      }
      return l;
    }
    if (!typed && !want) {
      io_err(d, "'%s': a raw file needs a shape and type (e.g. 2x2xbf16=@%s)", spec, path);
      return NULL;
    }
    if (!typed) {
      et = want->et;
      rank = want->rank;
      if (rank) memcpy(dims, want->dims, sizeof(int64_t) * (size_t)rank);
    }
    size_t len;
    uint8_t *buf = read_all(path, &len, d);
    if (!buf) return NULL;
    Literal *l = new_literal(a, et, rank, dims);
    size_t want_bytes = (size_t)(ev_elems(l->shape) * et_bytes(et));
    if (len != want_bytes) {
      io_err(d, "%s has %zu bytes, %s needs %zu", path, len, et_name(et), want_bytes);
      free(buf);
      return NULL;
    }
    memcpy(l->data, buf, len);
    free(buf);
    if (et == ET_PRED)
      for (size_t k = 0; k < len; k++) l->data[k] = l->data[k] != 0;
    else if (et_bits(et) < 8 && !et_is_float(et))
      for (size_t k = 0; k < len; k++) ev_set_s64(et, l->data + k, (int8_t)l->data[k]);
    return l;
  }
  if (!typed) {
    if (!want || !shape_is_array(want)) {
      io_err(d, "'%s': give the shape and type, as in 2x3xf32=1 2 3 4 5 6", spec);
      return NULL;
    }
    et = want->et;
    rank = want->rank;
    if (rank) memcpy(dims, want->dims, sizeof(int64_t) * (size_t)rank);
  }
  if (!et_is_array(et)) {
    io_err(d, "'%s': %s values cannot be given", spec, et_name(et));
    return NULL;
  }
  return literal_from_text(a, body, et, rank, dims, d);
}

bool io_check_shape(const Literal *l, const Shape *want, const char *what, Diag *d) {
  const Shape *s = l->shape;
  bool ok = s && shape_is_array(s) && shape_is_array(want) && s->et == want->et &&
            s->rank == want->rank;
  for (int k = 0; ok && k < s->rank; k++) ok = s->dims[k] == want->dims[k];
  if (ok) return true;
  char *g = s ? shape_to_string(s, false) : xstrdup("nothing");
  char *w = shape_to_string(want, false);
  io_err(d, "%s is %s, expected %s", what, g, w);
  free(g);
  free(w);
  return false;
}

/*
 * Random inputs
 */
static uint64_t splitmix(uint64_t *s) {
  uint64_t z = (*s += 0x9E3779B97F4A7C15ULL);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

Literal *io_random_literal(Arena *a, const Shape *s, uint64_t seed,
                           int64_t index_bound) {
  Literal *l = new_literal(a, s->et, s->rank, s->dims);
  int64_t n = ev_elems(l->shape);
  int eb = et_bytes(s->et);
  uint64_t st = seed;
  ElemClass c = et_class(s->et);
  if (index_bound < 0 && (s->et == ET_F32 || s->et == ET_BF16)) {
    /* the common large inputs, without the per-element type switch */
    for (int64_t k = 0; k < n; k++) {
      float f = (float)((double)(splitmix(&st) >> 11) * 0x1p-52 - 1.0);
      if (s->et == ET_F32) {
        memcpy(l->data + k * 4, &f, 4);
      } else {
        uint16_t h = (uint16_t)fp_from_double(FP_BF16, f);
        memcpy(l->data + k * 2, &h, 2);
      }
    }
    return l;
  }
  if (index_bound < 0 && c == ETC_FLOAT && eb <= 2 && n > 4096) {
    /* small floats: draw among the encodings whose value is in [-1, 1) */
    int64_t ncodes = eb == 1 ? 256 : 65536, m = 0;
    uint16_t *pick = xmalloc((size_t)ncodes * sizeof *pick);
    for (int64_t code = 0; code < ncodes; code++) {
      double v = fp_to_double(et_fp_format(s->et), (uint64_t)code);
      if (v >= -1 && v < 1) pick[m++] = (uint16_t)code;
    }
    for (int64_t k = 0; k < n && m > 0; k++) {
      uint16_t code = pick[splitmix(&st) % (uint64_t)m];
      memcpy(l->data + k * eb, &code, (size_t)eb);
    }
    free(pick);
    return l;
  }
  for (int64_t k = 0; k < n; k++) {
    uint64_t r = splitmix(&st);
    uint8_t *p = l->data + k * eb;
    if (index_bound >= 0 && (c == ETC_SINT || c == ETC_UINT)) {
      ev_set_s64(s->et, p, (int64_t)(r % (uint64_t)(index_bound + 1)));
      continue;
    }
    double u = (double)(r >> 11) * 0x1p-53;   /* [0, 1) */
    switch (c) {
    case ETC_PRED: p[0] = r >> 63; break;
    case ETC_SINT: ev_set_s64(s->et, p, (int64_t)(r % 16) - 8); break;
    case ETC_UINT: ev_set_s64(s->et, p, (int64_t)(r % 16)); break;
    case ETC_FLOAT: ev_set_f64(s->et, p, (float)(2 * u - 1)); break;
    case ETC_COMPLEX: {
      ElemType comp = et_complex_component(s->et);
      double v = (double)(splitmix(&st) >> 11) * 0x1p-53;
      ev_set_f64(comp, p, 2 * u - 1);
      ev_set_f64(comp, p + et_bytes(comp), 2 * v - 1);
      break;
    }
    default: break;
    }
  }
  return l;
}

/* Which entry leaves feed index operands. */
typedef struct Tracer {
  const HloModule *m;
  HashMap callers;                /* computation name -> calling instruction */
  int *leaf_base;                 /* per entry parameter */
  int64_t *bounds;
  int nleaves;
  int depth;
} Tracer;

static void mark(Tracer *t, const HloInstr *i, int npath, const int64_t *path,
                 int64_t bound) {
  if (!i || t->depth > 64 || bound < 0) return;
  t->depth++;
  switch (i->op) {
  case HLO_PARAMETER: {
    const HloComp *c = i->parent;
    if (c && c == t->m->entry) {
      int64_t pn = i->param_number;
      if (pn >= 0 && pn < c->nparams) {
        int leaf = t->leaf_base[pn];
        const Shape *s = i->shape;
        for (int k = 0; k < npath && s && s->et == ET_TUPLE; k++) {
          for (int64_t j = 0; j < path[k] && j < s->ntuple; j++) leaf += shape_leaf_count(s->tuple[j]);
          s = path[k] < s->ntuple ? s->tuple[path[k]] : NULL;
        }
        if (s && shape_is_array(s) && leaf < t->nleaves &&
            (t->bounds[leaf] < 0 || bound < t->bounds[leaf]))
          t->bounds[leaf] = bound;
      }
    } else if (c && c->name) {
      const HloInstr *caller = hashmap_get(&t->callers, c->name);
      if (caller) {
        if (caller->op == HLO_WHILE) mark(t, caller->ops[0], npath, path, bound);
        else if (i->param_number < caller->nops)
          mark(t, caller->ops[i->param_number], npath, path, bound);
      }
    }
    break;
  }
  case HLO_GET_TUPLE_ELEMENT: {
    int64_t np[66];
    np[0] = i->tuple_index;
    for (int k = 0; k < npath && k < 64; k++) np[k + 1] = path[k];
    mark(t, i->ops[0], npath + 1 > 65 ? 65 : npath + 1, np, bound);
    break;
  }
  case HLO_TUPLE:
    if (npath > 0 && path[0] >= 0 && path[0] < i->nops)
      mark(t, i->ops[path[0]], npath - 1, path + 1, bound);
    break;
  case HLO_CONVERT: case HLO_RESHAPE: case HLO_BITCAST: case HLO_COPY:
  case HLO_BROADCAST: case HLO_SLICE: case HLO_TRANSPOSE: case HLO_REVERSE:
  case HLO_DYNAMIC_SLICE: case HLO_PAD:
    if (i->nops >= 1) mark(t, i->ops[0], 0, NULL, bound);
    break;
  case HLO_CONCATENATE:
    for (int k = 0; k < i->nops; k++) mark(t, i->ops[k], 0, NULL, bound);
    break;
  default:
    break;
  }
  t->depth--;
}

static void mark_uses(Tracer *t, const HloInstr *i) {
  switch (i->op) {
  case HLO_SET_DIMENSION_SIZE: {
    const Shape *os = i->ops[0]->shape;
    if (i->nops == 2 && shape_is_array(os) && i->dims.n == 1 && i->dims.v[0] >= 0 &&
        i->dims.v[0] < os->rank && os->dims[i->dims.v[0]] >= 0)
      mark(t, i->ops[1], 0, NULL, os->dims[i->dims.v[0]]);
    break;
  }
  case HLO_DYNAMIC_SLICE:
  case HLO_DYNAMIC_UPDATE_SLICE: {
    int first = i->op == HLO_DYNAMIC_SLICE ? 1 : 2;
    const Shape *os = i->ops[0]->shape;
    const Shape *sz = i->op == HLO_DYNAMIC_SLICE ? i->shape : i->ops[1]->shape;
    if (!shape_is_array(os) || !shape_is_array(sz) || sz->rank != os->rank) break;
    for (int k = first; k < i->nops; k++) {
      int d = k - first;
      int64_t b = INT64_MAX;
      if (i->nops - first == os->rank && d < os->rank) b = os->dims[d] - sz->dims[d];
      else
        for (int j = 0; j < os->rank; j++)
          if (os->dims[j] - sz->dims[j] < b) b = os->dims[j] - sz->dims[j];
      mark(t, i->ops[k], 0, NULL, b < 0 ? 0 : b);
    }
    break;
  }
  case HLO_GATHER: {
    const Shape *os = i->ops[0]->shape;
    if (!i->gather || !shape_is_array(os) || i->gather_slice_sizes.n != os->rank) break;
    int64_t b = INT64_MAX;
    for (int k = 0; k < i->gather->start_index_map.n; k++) {
      int64_t d = i->gather->start_index_map.v[k];
      if (d >= 0 && d < os->rank && os->dims[d] - i->gather_slice_sizes.v[d] < b)
        b = os->dims[d] - i->gather_slice_sizes.v[d];
    }
    if (b != INT64_MAX) mark(t, i->ops[1], 0, NULL, b < 0 ? 0 : b);
    break;
  }
  case HLO_SCATTER: {
    int n = (i->nops - 1) / 2;
    const Shape *os = i->ops[0]->shape;
    if (!i->scatter || !shape_is_array(os) || i->nops < 3) break;
    int64_t b = INT64_MAX;
    for (int k = 0; k < i->scatter->scatter_dims_to_operand_dims.n; k++) {
      int64_t d = i->scatter->scatter_dims_to_operand_dims.v[k];
      if (d >= 0 && d < os->rank && os->dims[d] - 1 < b) b = os->dims[d] - 1;
    }
    if (b != INT64_MAX) mark(t, i->ops[n], 0, NULL, b < 0 ? 0 : b);
    break;
  }
  default:
    break;
  }
}

int io_index_bounds(const HloModule *m, int64_t **bounds) {
  *bounds = NULL;
  const HloComp *e = m ? m->entry : NULL;
  if (!e) return 0;
  Tracer t;
  memset(&t, 0, sizeof t);
  t.m = m;
  t.leaf_base = xcalloc((size_t)e->nparams + 1, sizeof(int));
  int n = 0;
  for (int k = 0; k < e->nparams; k++) {
    t.leaf_base[k] = n;
    n += e->params[k] ? shape_leaf_count(e->params[k]->shape) : 0;
  }
  t.nleaves = n;
  t.bounds = xmalloc(((size_t)n + 1) * sizeof(int64_t));
  for (int k = 0; k < n; k++) t.bounds[k] = -1;
  for (int c = 0; c < m->ncomps; c++) {
    const HloComp *comp = m->comps[c];
    for (int j = 0; j < comp->ninstrs; j++) {
      const HloInstr *i = comp->instrs[j];
      for (int k = 0; k < i->ncalled; k++)
        if (i->called[k] && i->called[k]->name && !hashmap_get(&t.callers, i->called[k]->name))
          hashmap_put(&t.callers, i->called[k]->name, (void *)i);
    }
  }
  for (int c = 0; c < m->ncomps; c++) {
    const HloComp *comp = m->comps[c];
    for (int j = 0; j < comp->ninstrs; j++) mark_uses(&t, comp->instrs[j]);
  }
  hashmap_free(&t.callers);
  free(t.leaf_base);
  *bounds = t.bounds;
  return n;
}

/*
 * Printing
 */
static void print_elem(StrBuf *b, ElemType et, const uint8_t *p) {
  switch (et_class(et)) {
  case ETC_PRED: sb_puts(b, p[0] ? "true" : "false"); break;
  case ETC_SINT: sb_put_i64(b, ev_get_s64(et, p)); break;
  case ETC_UINT: sb_printf(b, "%llu", (unsigned long long)ev_get_u64(et, p)); break;
  case ETC_FLOAT: {
    uint64_t bits = 0;
    memcpy(&bits, p, (size_t)et_bytes(et));
    fp_format(b, et_fp_format(et), bits);
    break;
  }
  case ETC_COMPLEX: {
    ElemType comp = et_complex_component(et);
    sb_putc(b, '(');
    print_elem(b, comp, p);
    sb_puts(b, ", ");
    print_elem(b, comp, p + et_bytes(comp));
    sb_putc(b, ')');
    break;
  }
  default: sb_puts(b, "?"); break;
  }
}

/* XLA's DenseArrayPrintHelper in multi-line mode: innermost rows on their
 * own lines, pred elements of arrays as 1/0, rank > 3 blocks annotated with
 * their index. */
static void print_dims(StrBuf *b, const Literal *l, int64_t *idx, int depth,
                       int64_t *next) {
  const Shape *s = l->shape;
  int rank = s->rank, left = rank - depth;
  if (left == 0) {
    if (s->et == ET_PRED) sb_putc(b, l->data[*next] ? '1' : '0');
    else literal_print_element(b, l, *next);
    (*next)++;
    return;
  }
  int64_t n = s->dims[depth];
  if (rank == 1) sb_putc(b, '{');
  else if (left == 1) sb_puts(b, n <= 1 ? "  {" : "  { ");
  else if (rank > 3 && depth > 0) sb_printf(b, "{ /*i%d=%lld*/\n", depth - 1, (long long)idx[depth - 1]);
  else sb_puts(b, "{\n");
  for (int64_t k = 0; k < n; k++) {
    idx[depth] = k;
    print_dims(b, l, idx, depth + 1, next);
    if (k < n - 1) sb_puts(b, left > 1 ? ",\n" : ", ");
  }
  if (rank == 1) sb_putc(b, '}');
  else if (left == 1) sb_puts(b, n <= 1 ? "}" : " }");
  else sb_puts(b, "\n}");
}

void io_print_literal(StrBuf *b, const Literal *l) {
  const Shape *s = l->shape;
  if (s->et == ET_TUPLE) {
    sb_puts(b, "(\n");
    for (int k = 0; k < l->ntuple; k++) {
      io_print_literal(b, l->tuple[k]);
      sb_puts(b, k + 1 < l->ntuple ? ",\n" : "\n");
    }
    sb_putc(b, ')');
    return;
  }
  shape_print(b, s, false);
  if (s->et == ET_TOKEN || !l->data) return;
  sb_putc(b, ' ');
  if (s->rank == 0) {
    literal_print_element(b, l, 0);
    return;
  }
  int64_t idx[64] = {0}, next = 0;
  print_dims(b, l, idx, 0, &next);
}

bool io_write_output(const char *spec, const Literal *l, FILE *out, Diag *d) {
  if (!spec || !*spec) return true;
  if (strcmp(spec, "-") == 0) {
    StrBuf b;
    sb_init(&b);
    io_print_literal(&b, l);
    sb_putc(&b, '\n');
    fputs(b.s, out);
    sb_free(&b);
    return true;
  }
  if (spec[0] != '@')
    return io_err(d, "bad --output '%s': use -, @FILE.npy or @FILE.bin", spec);
  const char *path = spec + 1;
  const Shape *s = l->shape;
  if (!shape_is_array(s))
    return io_err(d, "only arrays can be written to '%s'", path);
  size_t nbytes = (size_t)(ev_elems(s) * et_bytes(s->et));
  /* an array of no elements may have no data */
  static const uint8_t none[1];
  if (!l->data && nbytes > 0)
    return io_err(d, "only arrays can be written to '%s'", path);
  size_t pl = strlen(path);
  /* sub-byte signed integers are written as sign-extended bytes (int8) */
  const uint8_t *data = l->data ? l->data : none;
  uint8_t *tmp = NULL;
  if (et_class(s->et) == ETC_SINT && et_bits(s->et) < 8) {
    tmp = xmalloc(nbytes + 1);
    for (size_t k = 0; k < nbytes; k++) tmp[k] = (uint8_t)(int8_t)ev_get_s64(s->et, l->data + k);
    data = tmp;
  }
  bool ok;
  if (pl >= 4 && strcmp(path + pl - 4, ".npy") == 0) {
    const char *descr = npy_descr(s->et);
    ok = descr ? npy_write_file(path, descr, s->rank, s->dims, data, nbytes, d)
               : io_err(d, "%s has no .npy form; use a .bin file", et_name(s->et));
  } else {
    FILE *f = fopen(path, "wb");
    ok = f && fwrite(data, 1, nbytes, f) == nbytes;
    ok = f && fclose(f) == 0 && ok;
    if (!ok) io_err(d, "cannot write '%s': %s", path, strerror(errno));
  }
  free(tmp);
  return ok;
}

/*
 * Comparison
 */
static void index_text(StrBuf *b, const Shape *s, int64_t lin) {
  int64_t idx[64];
  for (int k = s->rank - 1; k >= 0; k--) {
    idx[k] = s->dims[k] ? lin % s->dims[k] : 0;
    lin = s->dims[k] ? lin / s->dims[k] : 0;
  }
  sb_putc(b, '[');
  for (int k = 0; k < s->rank; k++) sb_printf(b, k ? ",%lld" : "%lld", (long long)idx[k]);
  sb_putc(b, ']');
}

static bool close_real(double x, double e, double atol, double rtol) {
  if (x != x || e != e) return x != x && e != e;
  if (isinf(x) || isinf(e)) return x == e;
  return fabs(x - e) <= atol + rtol * fabs(e);
}

bool io_compare(const Literal *actual, const Literal *expected, double atol,
                double rtol, StrBuf *why) {
  const Shape *as = actual->shape, *es = expected->shape;
  if (!shape_compatible(as, es)) {
    char *x = shape_to_string(as, false), *y = shape_to_string(es, false);
    sb_printf(why, "result is %s, expected %s", x, y);
    free(x);
    free(y);
    return false;
  }
  if (!shape_is_array(as) || !actual->data || !expected->data) return true;
  int64_t n = ev_elems(as), bad = 0, first = -1;
  int eb = et_bytes(as->et);
  ElemClass c = et_class(as->et);
  for (int64_t k = 0; k < n; k++) {
    const uint8_t *x = actual->data + k * eb, *e = expected->data + k * eb;
    bool ok;
    if (c == ETC_FLOAT) {
      ok = close_real(ev_get_f64(as->et, x), ev_get_f64(as->et, e), atol, rtol);
    } else if (c == ETC_COMPLEX) {
      ElemType comp = et_complex_component(as->et);
      int cb = et_bytes(comp);
      double xr = ev_get_f64(comp, x), xi = ev_get_f64(comp, x + cb);
      double er = ev_get_f64(comp, e), ei = ev_get_f64(comp, e + cb);
      if (xr != xr || xi != xi || er != er || ei != ei || isinf(xr) || isinf(xi) ||
          isinf(er) || isinf(ei))
        ok = close_real(xr, er, 0, 0) && close_real(xi, ei, 0, 0);
      else
        ok = hypot(xr - er, xi - ei) <= atol + rtol * hypot(er, ei);
    } else {
      ok = ev_get_s64(as->et, x) == ev_get_s64(as->et, e) &&
           ev_get_u64(as->et, x) == ev_get_u64(as->et, e);
    }
    if (!ok) {
      if (first < 0) first = k;
      bad++;
    }
  }
  if (!bad) return true;
  sb_printf(why, "%lld of %lld elements differ; first at ", (long long)bad, (long long)n);
  index_text(why, as, first);
  sb_puts(why, ": got ");
  print_elem(why, as->et, actual->data + first * eb);
  sb_puts(why, ", expected ");
  print_elem(why, as->et, expected->data + first * eb);
  if (c == ETC_FLOAT || c == ETC_COMPLEX)
    sb_printf(why, " (atol %g, rtol %g)", atol, rtol);
  return false;
}

static void collect(const Literal *l, PtrVec *v) {
  if (l->shape && l->shape->et == ET_TUPLE) {
    for (int k = 0; k < l->ntuple; k++) collect(l->tuple[k], v);
    return;
  }
  vec_push(v, (void *)l);
}

int io_literal_leaves(const Literal *l, Literal ***out) {
  PtrVec v = {0};
  collect(l, &v);
  *out = (Literal **)v.data;
  return v.len;
}

Literal *io_literal_from_leaves(Arena *a, const Shape *s, Literal **leaves,
                                int *at) {
  if (s->et != ET_TUPLE) {
    Literal *l = leaves[(*at)++];
    if (!l) {
      l = ARENA_NEW(a, Literal);
      l->shape = (Shape *)s;
    }
    return l;
  }
  Literal *t = ARENA_NEW(a, Literal);
  t->shape = (Shape *)s;
  t->ntuple = s->ntuple;
  t->tuple = ARENA_ARRAY(a, Literal *, s->ntuple ? s->ntuple : 1);
  for (int k = 0; k < s->ntuple; k++)
    t->tuple[k] = io_literal_from_leaves(a, s->tuple[k], leaves, at);
  return t;
}

void io_random_leaves(Arena *a, const PtrVec *leaves, const int64_t *bounds,
                      int nbounds, uint64_t seed, Literal **out) {
  for (int k = 0; k < leaves->len; k++) {
    const Shape *s = leaves->data[k];
    out[k] = shape_is_array(s)
                 ? io_random_literal(a, s, seed * 1000003u + (uint64_t)k,
                                     bounds && k < nbounds ? bounds[k] : -1)
                 : NULL;
  }
}

Literal **io_entry_args(Arena *a, const HloComp *entry, Literal **leaves) {
  Literal **args = xcalloc((size_t)entry->nparams + 1, sizeof *args);
  int at = 0;
  for (int k = 0; k < entry->nparams; k++)
    args[k] = io_literal_from_leaves(a, entry->params[k]->shape, leaves, &at);
  return args;
}

void io_shape_leaves(const Shape *s, PtrVec *out) {
  if (s->et == ET_TUPLE) {
    for (int k = 0; k < s->ntuple; k++)
      io_shape_leaves(s->tuple[k], out);
    return;
  }
  vec_push(out, (void *)s);
}
