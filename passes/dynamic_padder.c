/*
 * dynamic_padder.c - "dynamic_padder" (XLA's DynamicPadder): bounded
 * dynamic shapes become static ones.  A value of shape f32[<=8] is kept at
 * its bound, f32[8] (its padded form: element i at the bound's strides), and
 * the runtime size of each dynamic dimension becomes an s32 scalar
 * instruction beside it (XLA's DynamicDimensionInference), read from:
 *
 *   set-dimension-size(x, n)         x, dimension d at size n
 *   get-dimension-size(x)            -> x's size, or its bound as a constant
 *   custom-call SliceToDynamic(x, s...)  x at sizes s
 *   custom-call SetBound(x)          -> x
 *   entry parameters, constants      at their bounds (inputs arrive so)
 *
 * and carried through the ops that keep them:
 *
 *   elementwise ops, copy            their operands' sizes (padding lanes
 *                                    compute on padding)
 *   broadcast, transpose             moved to the result's dimensions
 *   tuple, get-tuple-element         per element
 *   reduce                           padding is masked with the init value
 *                                    (select of iota < size), the kept
 *                                    dimensions keep their sizes
 *   dynamic-reshape(x, s...)         the valid elements, row-major over x's
 *                                    sizes, laid out row-major over s: an
 *                                    iota-computed index per result element,
 *                                    a gather from x flattened, zero padding
 *   reshape into one dynamic dim     the same, that dimension's size what
 *                                    the other dimensions leave (XLA's
 *                                    inferred dimension)
 *   reshape into a static shape      the whole buffer, padding included
 *                                    (XLA's CPU leaves it alone)
 *
 * The entry's dynamic result leaves become custom-call SliceToDynamic(x,
 * sizes...) of the dynamic shape: its buffer holds x at the bounds then one
 * s32 size per dimension (the thunk emitter copies them there, xhlo-run
 * reads the valid elements out; lib/runtime/thunks.h).
 *
 * Any other op given a value with a dynamic dimension, dynamic values
 * inside called computations (call-inliner has inlined calls by now) and
 * unbounded dimensions are beyond it: it tries the entry first on a copy,
 * and when the copy needs one of them it leaves the module as it was, with
 * a warning naming the op at its position (the back end refuses the
 * dynamic op by name; reading padding as data would be a wrong answer).  The sizes are not checked against the bounds here; a
 * result's are, when xhlo-run reads it (as XLA's runtime does).
 */
#include "passes.h"

#include <stdlib.h>
#include <string.h>

#include "../lib/hlo/ir_edit.h"

/* The runtime sizes of a value: per dimension an s32 scalar, NULL at the
 * bound; a tuple's per element.  NULL (the whole Sizes): all at bounds. */
typedef struct Sizes {
  int rank;
  HloInstr **dim;
  int nelem;
  struct Sizes **elem;
} Sizes;

typedef struct Padder {
  IrEdit *e;
  HloModule *m;
  HloComp *c;                     /* the entry, or the trial's copy of it */
  Arena *a;
  int n0;                         /* ids below have slots */
  HloInstr **val;                 /* by id: the static value standing for it */
  Sizes **sz;                     /* by id */
  Loc bad_loc;                    /* the first refusal: where, and why */
  char *bad;
} Padder;

static bool is_target(const HloInstr *i, const char *t) {
  return i->op == HLO_CUSTOM_CALL && i->cc && i->cc->target &&
         strcmp(i->cc->target, t) == 0;
}

static bool dynamic_op(const HloInstr *i) {
  return i->op == HLO_SET_DIMENSION_SIZE || i->op == HLO_GET_DIMENSION_SIZE ||
         i->op == HLO_DYNAMIC_RESHAPE || is_target(i, "SliceToDynamic") ||
         is_target(i, "SetBound") || is_target(i, "PadToStatic");
}

/* Records the first op the padder cannot handle. */
static bool refuse(Padder *p, const HloInstr *i, const char *what) {
  if (p->bad)
    return false;
  StrBuf b;
  sb_init(&b);
  if (i->op == HLO_CUSTOM_CALL && i->cc && i->cc->target)
    sb_printf(&b, "unsupported op 'custom-call' (target \"%s\") %s", i->cc->target, what);
  else
    sb_printf(&b, "unsupported op '%s' %s", hlo_op_name(i->op), what);
  p->bad = arena_strdup(p->a, b.s);
  p->bad_loc = i->loc;
  sb_free(&b);
  return false;
}

/* s without its dynamic dimensions (at their bounds); s when static. */
static Shape *static_shape(Arena *a, Shape *s) {
  if (!shape_is_dynamic(s))
    return s;
  Shape *n = shape_clone(a, s);
  if (n->et == ET_TUPLE) {
    for (int k = 0; k < n->ntuple; k++)
      n->tuple[k] = static_shape(a, n->tuple[k]);
    return n;
  }
  n->dyn = NULL;
  return n;
}

static bool has_sizes(const Sizes *s) {
  if (!s)
    return false;
  for (int k = 0; k < s->rank; k++)
    if (s->dim[k])
      return true;
  for (int k = 0; k < s->nelem; k++)
    if (has_sizes(s->elem[k]))
      return true;
  return false;
}

static Sizes *new_sizes(Padder *p, int rank) {
  Sizes *s = ARENA_NEW(p->a, Sizes);
  s->rank = rank;
  s->dim = ARENA_ARRAY(p->a, HloInstr *, rank > 0 ? rank : 1);
  return s;
}

static Sizes *sizes_of(Padder *p, const HloInstr *orig) {
  return orig->id < p->n0 ? p->sz[orig->id] : NULL;
}

/* Dimension d of an array value's sizes (NULL: at the bound). */
static HloInstr *dim_size(const Sizes *s, int d) {
  return s && s->dim && d < s->rank ? s->dim[d] : NULL;
}

static HloInstr *as_type(Padder *p, HloInstr *x, ElemType et) {
  return x->shape->et == et ? x : ir_convert(p->e, p->c, x, et);
}

/* Size d of a value of shape s as a scalar of type et. */
static HloInstr *size_value(Padder *p, const Sizes *sz, const Shape *s, int d,
                            ElemType et) {
  HloInstr *x = dim_size(sz, d);
  return x ? as_type(p, x, et) : ir_scalar(p->e, p->c, et, (double)s->dims[d]);
}

static HloInstr *bcast(Padder *p, HloInstr *x, const Shape *s) {
  return ir_broadcast(p->e, p->c, x, s, 0, NULL);
}

static HloInstr *iota(Padder *p, const Shape *s, int d) {
  HloInstr *i = ir_new(p->e, p->c, HLO_IOTA, (Shape *)s, 0, NULL);
  i->iota_dim = d;
  return i;
}

static ElemType index_type(const Shape *a, const Shape *b) {
  int64_t na = shape_elements(a), nb = shape_elements(b);
  return na >= 0 && nb >= 0 && na < INT32_MAX && nb < INT32_MAX ? ET_S32 : ET_S64;
}

/* The product of x's sizes (x of shape xs) as a scalar of type et. */
static HloInstr *elements(Padder *p, const Sizes *sz, const Shape *xs, ElemType et) {
  HloInstr *n = NULL;
  int64_t fixed = 1;
  for (int k = 0; k < xs->rank; k++) {
    HloInstr *v = dim_size(sz, k);
    if (!v) {
      fixed *= xs->dims[k];
      continue;
    }
    v = as_type(p, v, et);
    n = n ? ir_binary(p->e, p->c, HLO_MULTIPLY, n, v) : v;
  }
  if (n && fixed == 1)
    return n;
  HloInstr *f = ir_scalar(p->e, p->c, et, (double)fixed);
  return n ? ir_binary(p->e, p->c, HLO_MULTIPLY, n, f) : f;
}

/* x (static, at the bounds of xs, runtime sizes xsz) laid out row-major
 * over the sizes `out` (per dimension an s32 scalar, NULL at the bound) of
 * the static shape rs: result element i is x's valid element number
 * L(i) = sum_k i_k * prod_{j>k} out_j when every i_k < out_k, else zero. */
static HloInstr *relayout(Padder *p, HloInstr *x, const Sizes *xsz, const Shape *xs,
                          const Shape *rs, HloInstr *const *out) {
  Arena *a = p->a;
  int r = rs->rank;
  ElemType it = index_type(xs, rs);
  Shape *is = shape_array(a, it, r, rs->dims);
  HloInstr *lin = NULL, *valid = NULL, *stride = NULL;
  int64_t fixed = 1;              /* the constant part of the stride */
  for (int k = r - 1; k >= 0; k--) {
    HloInstr *ik = iota(p, is, k), *term = ik;
    if (stride || fixed != 1) {
      HloInstr *st = fixed == 1 ? NULL : ir_scalar(p->e, p->c, it, (double)fixed);
      if (stride)
        st = st ? ir_binary(p->e, p->c, HLO_MULTIPLY, stride, st) : stride;
      term = ir_binary(p->e, p->c, HLO_MULTIPLY, ik, bcast(p, st, is));
    }
    lin = lin ? ir_binary(p->e, p->c, HLO_ADD, lin, term) : term;
    if (out[k]) {
      HloInstr *n = as_type(p, out[k], it);
      HloInstr *lt = ir_compare(p->e, p->c, CMP_LT, ik, bcast(p, n, is));
      valid = valid ? ir_binary(p->e, p->c, HLO_AND, valid, lt) : lt;
      stride = stride ? ir_binary(p->e, p->c, HLO_MULTIPLY, stride, n) : n;
    } else {
      fixed *= rs->dims[k];
    }
  }
  /* the valid element number L as an index into x's padded buffer */
  HloInstr *pos = lin;
  if (has_sizes(xsz)) {
    HloInstr *rem = lin;
    pos = NULL;
    int64_t bstride = 1;
    for (int k = xs->rank - 1; k >= 0; k--) {
      HloInstr *idx = rem;
      if (k > 0) {
        HloInstr *n = bcast(p, size_value(p, xsz, xs, k, it), is);
        idx = ir_binary(p->e, p->c, HLO_REMAINDER, rem, n);
        rem = ir_binary(p->e, p->c, HLO_DIVIDE, rem, n);
      }
      HloInstr *t = bstride == 1 ? idx : ir_binary(p->e, p->c, HLO_MULTIPLY, idx,
                                                    ir_scalar_like(p->e, p->c, is, (double)bstride));
      pos = pos ? ir_binary(p->e, p->c, HLO_ADD, pos, t) : t;
      bstride *= xs->dims[k];
    }
  }
  int64_t nx = shape_elements(xs);
  HloInstr *flat = ir_reshape(p->e, p->c, x, 1, &nx);
  int64_t *idims = ARENA_ARRAY(a, int64_t, r + 1);
  for (int k = 0; k < r; k++)
    idims[k] = rs->dims[k];
  idims[r] = 1;
  HloInstr *starts = ir_reshape(p->e, p->c, pos, r + 1, idims);
  HloInstr *gops[2] = {flat, starts};
  HloInstr *g = ir_new(p->e, p->c, HLO_GATHER,
                       shape_array(a, rs->et, r, rs->dims), 2, gops);
  GatherDnums *gd = ARENA_NEW(a, GatherDnums);
  gd->collapsed_slice_dims = (I64List){1, ARENA_ARRAY(a, int64_t, 1)};
  gd->start_index_map = (I64List){1, ARENA_ARRAY(a, int64_t, 1)};
  gd->index_vector_dim = r;
  g->gather = gd;
  g->gather_slice_sizes = (I64List){1, ARENA_ARRAY(a, int64_t, 1)};
  g->gather_slice_sizes.v[0] = 1;
  if (!valid)
    return g;
  Shape *gs = shape_array(a, rs->et, r, rs->dims);
  return ir_select(p->e, p->c, valid, g, ir_scalar_like(p->e, p->c, gs, 0));
}

/* ---- one instruction ------------------------------------------------------ */

/* Sizes of an elementwise result: per dimension the first operand of the
 * result's rank with a size there. */
static Sizes *elementwise_sizes(Padder *p, const HloInstr *i, HloInstr *const *orig) {
  Sizes *s = NULL;
  for (int k = 0; k < i->nops; k++) {
    Sizes *o = sizes_of(p, orig[k]);
    if (!o || orig[k]->shape->rank != i->shape->rank)
      continue;
    if (!s)
      s = new_sizes(p, i->shape->rank);
    for (int d = 0; d < s->rank; d++)
      if (!s->dim[d])
        s->dim[d] = dim_size(o, d);
  }
  return s;
}

/* No operand with sizes has another rank than the result. */
static bool sizes_fit_rank(Padder *p, const HloInstr *i, HloInstr *const *orig) {
  for (int k = 0; k < i->nops; k++)
    if (has_sizes(sizes_of(p, orig[k])) && orig[k]->shape->rank != i->shape->rank)
      return false;
  return true;
}

/* reduce: inputs with a size on a reduced dimension read their padding as
 * the init value. */
static bool reduce(Padder *p, HloInstr *i, HloInstr *const *orig, Sizes **out) {
  int n = i->nops / 2;
  Sizes *first = NULL;
  for (int k = 0; k < n; k++) {
    Sizes *o = sizes_of(p, orig[k]);
    if (!has_sizes(o))
      continue;
    if (!first)
      first = o;
    const Shape *xs = static_shape(p->a, orig[k]->shape);
    Shape *ps = shape_array(p->a, ET_S32, xs->rank, xs->dims);
    HloInstr *mask = NULL;
    for (int j = 0; j < i->dims.n; j++) {
      int d = (int)i->dims.v[j];
      if (!dim_size(o, d))
        continue;
      HloInstr *lt = ir_compare(p->e, p->c, CMP_LT, iota(p, ps, d),
                                bcast(p, as_type(p, o->dim[d], ET_S32), ps));
      mask = mask ? ir_binary(p->e, p->c, HLO_AND, mask, lt) : lt;
    }
    if (!mask)
      continue;
    Shape *vs = shape_array(p->a, xs->et, xs->rank, xs->dims);
    HloInstr *init = bcast(p, i->ops[n + k], vs);
    ir_set_operand(p->e, i, k, ir_select(p->e, p->c, mask, i->ops[k], init));
  }
  if (!first)
    return true;
  int rank = orig[0]->shape->rank;
  Sizes *kept = new_sizes(p, rank - i->dims.n > 0 ? rank - i->dims.n : 0);
  int nk = 0;
  for (int d = 0; d < rank; d++) {
    bool reduced = false;
    for (int j = 0; j < i->dims.n; j++)
      reduced |= i->dims.v[j] == d;
    if (!reduced && nk < kept->rank)
      kept->dim[nk++] = dim_size(first, d);
  }
  if (i->shape->et != ET_TUPLE) {
    *out = kept;
    return true;
  }
  Sizes *t = ARENA_NEW(p->a, Sizes);
  t->nelem = i->shape->ntuple;
  t->elem = ARENA_ARRAY(p->a, Sizes *, t->nelem > 0 ? t->nelem : 1);
  for (int k = 0; k < t->nelem; k++)
    t->elem[k] = kept;
  *out = t;
  return true;
}

/* reshape of a value with sizes (see the top of the file). */
static HloInstr *reshape(Padder *p, HloInstr *i, HloInstr *const *orig,
                         const Shape *rs_dyn, Sizes **out) {
  Sizes *o = sizes_of(p, orig[0]);
  int dyn = -1, ndyn = 0;
  for (int k = 0; k < rs_dyn->rank; k++)
    if (rs_dyn->dyn && rs_dyn->dyn[k] != DIM_STATIC) {
      dyn = k;
      ndyn++;
    }
  if (ndyn == 0 || !has_sizes(o))
    return i; /* the whole buffer */
  if (ndyn > 1) {
    refuse(p, i, "into several dynamic dimensions of a bounded dynamic value");
    return NULL;
  }
  const Shape *xs = static_shape(p->a, orig[0]->shape);
  ElemType it = index_type(xs, i->shape);
  int64_t rest = 1;
  for (int k = 0; k < rs_dyn->rank; k++)
    if (k != dyn)
      rest *= rs_dyn->dims[k];
  HloInstr *n = elements(p, o, xs, it);
  if (rest != 1)
    n = ir_binary(p->e, p->c, HLO_DIVIDE, n, ir_scalar(p->e, p->c, it, (double)rest));
  Sizes *s = new_sizes(p, rs_dyn->rank);
  s->dim[dyn] = as_type(p, n, ET_S32);
  *out = s;
  return relayout(p, i->ops[0], o, xs, i->shape, s->dim);
}

static HloInstr *dynamic_reshape(Padder *p, HloInstr *i, HloInstr *const *orig,
                                 const Shape *rs_dyn, Sizes **out) {
  Sizes *s = new_sizes(p, rs_dyn->rank);
  for (int k = 0; k < rs_dyn->rank; k++)
    if (rs_dyn->dyn && rs_dyn->dyn[k] != DIM_STATIC && 1 + k < i->nops)
      s->dim[k] = as_type(p, i->ops[1 + k], ET_S32);
  *out = s;
  return relayout(p, i->ops[0], sizes_of(p, orig[0]),
                  static_shape(p->a, orig[0]->shape), i->shape, s->dim);
}

/* Rewrites i (its operands already the static values); *out its sizes.
 * Returns its static value (i itself when it stays), NULL on error. */
static HloInstr *pad_instr(Padder *p, HloInstr *i, HloInstr *const *orig) {
  Sizes **out = &p->sz[i->id];
  Shape *dyn_shape = i->shape;
  i->shape = static_shape(p->a, i->shape);
  bool dyn_operand = false;
  for (int k = 0; k < i->nops; k++)
    dyn_operand |= has_sizes(sizes_of(p, orig[k]));
  switch (i->op) {
  case HLO_SET_DIMENSION_SIZE: {
    if (i->nops != 2 || i->dims.n != 1 || !shape_is_array(dyn_shape))
      return refuse(p, i, "of this form"), NULL;
    Sizes *o = sizes_of(p, orig[0]), *s = new_sizes(p, dyn_shape->rank);
    for (int d = 0; d < s->rank; d++)
      s->dim[d] = dim_size(o, d);
    int d = (int)i->dims.v[0];
    if (d >= 0 && d < s->rank)
      s->dim[d] = as_type(p, i->ops[1], ET_S32);
    *out = s;
    return i->ops[0];
  }
  case HLO_GET_DIMENSION_SIZE: {
    const Shape *xs = orig[0]->shape;
    int d = i->dims.n == 1 ? (int)i->dims.v[0] : -1;
    if (d < 0 || d >= xs->rank || !shape_is_array(i->shape))
      return refuse(p, i, "of this form"), NULL;
    return as_type(p, size_value(p, sizes_of(p, orig[0]), xs, d, ET_S32), i->shape->et);
  }
  case HLO_DYNAMIC_RESHAPE:
    if (i->nops != 1 + dyn_shape->rank)
      return refuse(p, i, "of this form"), NULL;
    return dynamic_reshape(p, i, orig, dyn_shape, out);
  case HLO_RESHAPE:
    return reshape(p, i, orig, dyn_shape, out);
  case HLO_REDUCE:
    return reduce(p, i, orig, out) ? i : NULL;
  case HLO_CUSTOM_CALL:
    if (is_target(i, "SetBound") && i->nops == 1 &&
        shape_compatible(i->shape, i->ops[0]->shape)) {
      *out = sizes_of(p, orig[0]);
      return i->ops[0];
    }
    if (is_target(i, "SliceToDynamic") && i->nops == 1 + dyn_shape->rank &&
        !dyn_operand && shape_compatible(i->shape, i->ops[0]->shape)) {
      Sizes *s = new_sizes(p, dyn_shape->rank);
      for (int k = 0; k < s->rank; k++)
        if (dyn_shape->dyn && dyn_shape->dyn[k] != DIM_STATIC)
          s->dim[k] = as_type(p, i->ops[1 + k], ET_S32);
      *out = s;
      return i->ops[0];
    }
    break;
  case HLO_TUPLE: {
    if (!dyn_operand)
      return i;
    Sizes *t = ARENA_NEW(p->a, Sizes);
    t->nelem = i->nops;
    t->elem = ARENA_ARRAY(p->a, Sizes *, i->nops > 0 ? i->nops : 1);
    for (int k = 0; k < i->nops; k++)
      t->elem[k] = sizes_of(p, orig[k]);
    *out = t;
    return i;
  }
  case HLO_GET_TUPLE_ELEMENT: {
    Sizes *o = sizes_of(p, orig[0]);
    if (!has_sizes(o))
      return i;
    if (i->tuple_index < 0 || i->tuple_index >= o->nelem)
      break;
    *out = o->elem[i->tuple_index];
    return i;
  }
  case HLO_BROADCAST:
  case HLO_TRANSPOSE: {
    Sizes *o = sizes_of(p, orig[0]);
    if (!has_sizes(o))
      return i;
    Sizes *s = new_sizes(p, i->shape->rank);
    for (int k = 0; k < i->dims.n; k++) {
      int64_t from = i->op == HLO_BROADCAST ? k : i->dims.v[k];
      int64_t to = i->op == HLO_BROADCAST ? i->dims.v[k] : k;
      if (to >= 0 && to < s->rank)
        s->dim[to] = dim_size(o, (int)from);
    }
    *out = s;
    return i;
  }
  default:
    break;
  }
  if ((hlo_instr_is_elementwise(i) || i->op == HLO_COPY) &&
      sizes_fit_rank(p, i, orig)) {
    *out = elementwise_sizes(p, i, orig);
    return i;
  }
  /* without a size from its operands a value is at its bounds */
  if (!dyn_operand && !dynamic_op(i))
    return i;
  refuse(p, i, dyn_operand ? "on a bounded dynamic value" : "of this form");
  return NULL;
}

/* ---- the entry's result ----------------------------------------------------- */

static HloInstr *slice_to_dynamic(Padder *p, HloInstr *x, const Sizes *s, Shape *want) {
  HloInstr **ops = ARENA_ARRAY(p->a, HloInstr *, want->rank + 1);
  ops[0] = x;
  for (int k = 0; k < want->rank; k++)
    ops[1 + k] = size_value(p, s, want, k, ET_S32);
  HloInstr *i = ir_new(p->e, p->c, HLO_CUSTOM_CALL, want, want->rank + 1, ops);
  i->cc = ARENA_NEW(p->a, CustomCallAttrs);
  i->cc->target = arena_strdup(p->a, "SliceToDynamic");
  return i;
}

/* The entry result of shape rs (dynamic leaves, the entry layout's) from
 * the static value v with sizes s (orig: the original root). */
static HloInstr *dynamic_result(Padder *p, HloInstr *v, const Sizes *s, Shape *rs,
                                const HloInstr *orig) {
  if (!shape_is_dynamic(rs))
    return v;
  if (rs->et != ET_TUPLE)
    return slice_to_dynamic(p, v, s, rs);
  if (v->op != HLO_TUPLE || v->nops != rs->ntuple) {
    refuse(p, orig, "as a tuple result with dynamic elements (not a tuple "
           "instruction)");
    return NULL;
  }
  HloInstr **el = ARENA_ARRAY(p->a, HloInstr *, v->nops > 0 ? v->nops : 1);
  for (int k = 0; k < v->nops; k++) {
    const Sizes *e = s && k < s->nelem ? s->elem[k] : NULL;
    if (rs->tuple[k]->et == ET_TUPLE && shape_is_dynamic(rs->tuple[k])) {
      refuse(p, orig, "as a result with dynamic shapes in a nested tuple");
      return NULL;
    }
    el[k] = shape_is_dynamic(rs->tuple[k])
                ? slice_to_dynamic(p, v->ops[k], e, rs->tuple[k]) : v->ops[k];
  }
  HloInstr *t = ir_tuple(p->e, p->c, v->nops, el);
  t->shape = rs;
  return t;
}

/* ---- the pass ----------------------------------------------------------------- */

static bool unbounded(const Shape *s) {
  if (s->et == ET_TUPLE) {
    for (int k = 0; k < s->ntuple; k++)
      if (unbounded(s->tuple[k]))
        return true;
    return false;
  }
  for (int k = 0; s->dyn && k < s->rank; k++)
    if (s->dyn[k] == DIM_UNBOUNDED)
      return true;
  return false;
}

static bool needs_padder(const HloModule *m) {
  for (int ci = 0; ci < m->ncomps; ci++) {
    const HloComp *c = m->comps[ci];
    for (int k = 0; k < c->ninstrs; k++)
      if (dynamic_op(c->instrs[k]) || shape_is_dynamic(c->instrs[k]->shape))
        return true;
  }
  return false;
}

/* Called computations: get-dimension-size of a static value is its bound,
 * SetBound of one its operand (rewritten unless `check`); anything else
 * dynamic is refused. */
static bool pad_called(Padder *p, HloComp *c, bool check) {
  for (int k = 0; k < c->ninstrs; k++) {
    HloInstr *i = c->instrs[k];
    if (ir_removed(i))
      continue;
    bool static_operands = true;
    for (int j = 0; j < i->nops; j++)
      static_operands &= !shape_is_dynamic(i->ops[j]->shape);
    if (i->op == HLO_GET_DIMENSION_SIZE && static_operands && i->dims.n == 1 &&
        i->dims.v[0] >= 0 && i->dims.v[0] < i->ops[0]->shape->rank) {
      if (!check)
        ir_replace(p->e, i, ir_scalar(p->e, c, i->shape->et,
                                      (double)i->ops[0]->shape->dims[i->dims.v[0]]));
      continue;
    }
    if (is_target(i, "SetBound") && static_operands && i->nops == 1 &&
        !shape_is_dynamic(i->shape) && shape_equal(i->shape, i->ops[0]->shape)) {
      if (!check)
        ir_replace(p->e, i, i->ops[0]);
      continue;
    }
    if (dynamic_op(i) || shape_is_dynamic(i->shape))
      return refuse(p, i, "with a bounded dynamic shape inside a called computation");
  }
  return true;
}

/* Pads p->c, whose root gives the entry result `result`. */
static bool pad_comp(Padder *p, Shape *result) {
  HloComp *c = p->c;
  HloModule *m = p->m;
  HloInstr **order = NULL;
  int n = ir_instr_post_order(c, &order);
  p->n0 = m->next_id;
  p->val = ARENA_ARRAY(m->arena, HloInstr *, p->n0 + 1);
  p->sz = ARENA_ARRAY(m->arena, Sizes *, p->n0 + 1);
  HloInstr *root = c->root;
  HloInstr *orig[256];
  bool ok = true;
  for (int k = 0; ok && k < n; k++) {
    HloInstr *i = order[k];
    if (ir_removed(i) || i->id >= p->n0)
      continue;
    if (unbounded(i->shape)) {
      ok = refuse(p, i, "of an unbounded dynamic shape");
      break;
    }
    if (i->nops > (int)ARRAY_LEN(orig)) {
      for (int j = 0; j < i->nops; j++)
        ok &= !has_sizes(sizes_of(p, i->ops[j]));
      if (!ok)
        refuse(p, i, "with so many operands on a bounded dynamic value");
      p->val[i->id] = i;
      continue;
    }
    for (int j = 0; j < i->nops; j++) {
      HloInstr *o = i->ops[j];
      orig[j] = o;
      HloInstr *v = o->id < p->n0 ? p->val[o->id] : NULL;
      if (v && v != o)
        ir_set_operand(p->e, i, j, v);
    }
    HloInstr *v = pad_instr(p, i, orig);
    ok = v != NULL;
    p->val[i->id] = v;
  }
  free(order);
  if (ok && root) {
    HloInstr *v = p->val[root->id] ? p->val[root->id] : root;
    HloInstr *r = dynamic_result(p, v, p->sz[root->id], result, root);
    ok = r != NULL;
    if (ok && r != root) {
      c->root = r;
      ir_remove_dead(p->e, root);
    }
  }
  /* what the rewrite left without users */
  for (int k = 0; ok && k < c->ninstrs; k++) {
    HloInstr *i = c->instrs[k];
    if (!ir_removed(i) && i->id < p->n0 && p->val[i->id] && p->val[i->id] != i)
      ir_remove_dead(p->e, i);
  }
  return ok;
}

/* The padder runs first on a copy of the entry: a module it cannot handle
 * whole is left as it was, with a warning naming the op (the back end then
 * refuses the dynamic op, the interpreter runs it). */
bool pass_dynamic_padder(HloModule *m, PassContext *ctx) {
  if (!m->entry || !needs_padder(m))
    return false;
  IrEdit *e = ir_begin(m);
  Padder p = {.e = e, .m = m, .a = m->arena};
  HloComp *entry = m->entry;
  Shape *result = entry->root ? entry->root->shape : NULL;
  if (result && m->entry_layout && m->entry_layout->result &&
      shape_compatible(m->entry_layout->result, result))
    result = m->entry_layout->result;
  bool ok = true;
  for (int ci = 0; ok && ci < m->ncomps; ci++)
    if (m->comps[ci] != entry)
      ok = pad_called(&p, m->comps[ci], true);
  if (ok) {
    p.c = ir_clone_comp(e, entry, ".dynamic_padder_trial");
    ok = pad_comp(&p, result);
    for (int ci = 0; ci < m->ncomps; ci++)
      if (m->comps[ci] == p.c) {
        memmove(&m->comps[ci], &m->comps[ci + 1],
                sizeof *m->comps * (size_t)(m->ncomps - ci - 1));
        m->ncomps--;
        break;
      }
  }
  if (!ok) {
    diag_warn(ctx->diag, p.bad_loc, "dynamic_padder: %s; the module keeps its "
              "dynamic shapes", p.bad ? p.bad : "unsupported");
    ir_end(e, false);
    return false;
  }
  p.bad = NULL;
  for (int ci = 0; ci < m->ncomps; ci++)
    if (m->comps[ci] != entry)
      pad_called(&p, m->comps[ci], false);
  p.c = entry;
  if (!pad_comp(&p, result)) /* the trial succeeded: a bug */
    diag_error(ctx->diag, p.bad_loc, "dynamic_padder: %s after its trial succeeded",
               p.bad ? p.bad : "failed");
  /* parameters arrive at their bounds */
  ProgramShape *el = m->entry_layout;
  for (int k = 0; el && k < el->nparams; k++)
    el->params[k] = static_shape(m->arena, el->params[k]);
  ir_end(e, true);
  return !ctx->diag->has_error;
}
