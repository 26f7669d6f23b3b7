/*
 * dynamic.c - bounded dynamic shapes: runtime sizes of dynamic dimensions,
 * set-dimension-size, get-dimension-size and dynamic-reshape.
 *
 * A value of shape f32[<=8] always holds its bound (8 elements, row-major
 * over the bounds, like XLA's Literal); its runtime size per dimension lives
 * in EvalValue.dsize, as XLA's Literal keeps dynamic sizes.  A value with
 * no dsize is at its bounds: entry arguments and constants are, as a
 * Literal built at the static bound is.  Runtime sizes are tracked exactly
 * where XLA's evaluator sets or reads them:
 *   - set-dimension-size(x, n) is x with dimension `dimensions` at size n
 *     (0 <= n <= bound);
 *   - get-dimension-size(x) is x's runtime size (the bound when x has none);
 *   - dynamic-reshape(x, s0, s1, ...) lays x's valid elements, row-major
 *     over x's runtime sizes, out row-major over the sizes s_k (a static
 *     dimension's size must equal it), padding set to zero;
 *   - elementwise ops keep their operands' runtime sizes (which must agree;
 *     rank-0 operands broadcast), computing padding lanes on padding;
 *   - reshape into a shape with one dynamic dimension lays the valid
 *     elements out as dynamic-reshape does, that dimension's size being
 *     what the other dimensions leave (XLA's inferred dimension; the
 *     DynamicPadder test OutputMinorDimensionReshape); into a static shape
 *     it reshapes the whole buffer, padding included (XLA's CPU: the
 *     padder leaves a reshape without a dynamic result alone);
 *   - broadcast and transpose move the sizes with their dimensions;
 *   - reduce reads padding as its init value (XLA's DynamicPadder masks a
 *     reduced dynamic dimension with it), its result keeping the runtime
 *     sizes of the dimensions it keeps;
 *   - custom-call SliceToDynamic(x, s0, s1, ...) is x with runtime sizes
 *     s_k (x holds the bound; a static dimension's size must be its bound),
 *     custom-call SetBound passes its operand (XLA's padder drops it);
 *   - tuples, get-tuple-element, calls, fusions, while, conditional, copies,
 *     optimization barriers and async wrappers pass values through unchanged,
 *     sizes included;
 *   - a result leaves the interpreter (ev_dynamic_to_literal) as a literal
 *     of the static shape of its runtime sizes holding the valid elements.
 * Every other op given a value below its bounds is refused as unsupported
 * ("OP on a value below its dynamic bounds"): it would read padding as if it
 * were data.  XLA's evaluator ignores runtime sizes in those ops; refusing is
 * the only answer that is never wrong.  Sizes are XLA's s32: a size outside
 * [0, bound] is an error (XLA's Literal checks it; its CPU runtime would
 * write past the buffer).
 */
#include <stdlib.h>
#include <string.h>

#include "evalp.h"

#define MAX_RANK 64

bool ev_is_dynamic(const EvalValue *v) {
  if (!v) return false;
  if (v->dsize) return true;
  for (int k = 0; k < v->ntuple; k++)
    if (ev_is_dynamic(v->tuple[k])) return true;
  return false;
}

void ev_set_dsize(EvalValue *v, const int64_t *dsize) {
  const Shape *s = v->shape;
  bool below = false;
  if (dsize && shape_is_array(s))
    for (int k = 0; k < s->rank; k++) below |= dsize[k] != s->dims[k];
  free(v->dsize);
  v->dsize = NULL;
  if (!below) return;
  v->dsize = xmalloc((size_t)s->rank * sizeof *v->dsize);
  memcpy(v->dsize, dsize, (size_t)s->rank * sizeof *v->dsize);
}

/* v's runtime sizes into out (its bounds when it has none). */
static void runtime_sizes(const EvalValue *v, const Shape *s, int64_t *out) {
  for (int k = 0; k < s->rank; k++) out[k] = v->dsize ? v->dsize[k] : s->dims[k];
}

/* Ops that hand values on without reading their elements. */
static bool passes_values(HloOp op) {
  switch (op) {
  case HLO_TUPLE: case HLO_GET_TUPLE_ELEMENT: case HLO_CALL: case HLO_FUSION:
  case HLO_WHILE: case HLO_CONDITIONAL: case HLO_COPY:
  case HLO_OPTIMIZATION_BARRIER: case HLO_DOMAIN: case HLO_ADD_DEPENDENCY:
  case HLO_ASYNC_START: case HLO_ASYNC_UPDATE: case HLO_ASYNC_DONE:
  case HLO_SET_DIMENSION_SIZE: case HLO_GET_DIMENSION_SIZE:
  case HLO_DYNAMIC_RESHAPE:
    return true;
  default:
    return false;
  }
}

/* Elementwise op on operands with runtime sizes: they must agree (rank-0
 * operands aside); the result takes them. */
static EvalValue *elementwise(Eval *ev, const HloInstr *i, EvalValue *const *a) {
  const Shape *s = i->shape;
  const int64_t *ds = NULL;
  if (!shape_is_array(s) || s->rank > MAX_RANK) {
    ev_fail(ev, i, EVAL_ERR_INVALID, "elementwise op with a non-array result");
    return NULL;
  }
  int64_t want[MAX_RANK], got[MAX_RANK];
  bool first = true;
  for (int k = 0; k < i->nops; k++) {
    const Shape *os = i->ops[k]->shape;
    if (os->rank == 0 && s->rank > 0) continue;
    if (os->rank != s->rank) {
      char what[96];
      snprintf(what, sizeof what, "%s changing rank on a value below its dynamic bounds",
               hlo_op_name(i->op));
      ev_unsupported(ev, i, what);
      return NULL;
    }
    runtime_sizes(a[k], os, got);
    if (first) {
      memcpy(want, got, sizeof(int64_t) * (size_t)s->rank);
      ds = want;
      first = false;
    } else if (memcmp(want, got, sizeof(int64_t) * (size_t)s->rank) != 0) {
      ev_fail_value(ev, i, "operand %d's runtime sizes differ from "
              "operand 0's", k);
      return NULL;
    }
  }
  EvalValue *r = eval_elementwise(ev, i, a);
  if (!r) return NULL;
  if (r->refs > 1 || r->borrowed || r->owner) {
    /* shared with an operand: give the result its own value */
    EvalValue *c = ev_view(ev, r, s);
    ev_unref(ev, r);
    r = c;
  }
  ev_set_dsize(r, ds);
  return r;
}

static bool scalar_index(Eval *ev, const HloInstr *i, int k, EvalValue *const *a,
                         int64_t *out);

/* v (of shape vs, its valid elements row-major over its runtime sizes) laid
 * out row-major over the sizes out of i's result shape, padding zero; the
 * sizes must hold as many elements. */
static EvalValue *relayout(Eval *ev, const HloInstr *i, const EvalValue *v,
                           const Shape *vs, const int64_t *out) {
  const Shape *s = i->shape;
  int64_t in[MAX_RANK], nin = 1, nout = 1;
  runtime_sizes(v, vs, in);
  for (int k = 0; k < vs->rank; k++) nin *= in[k];
  for (int k = 0; k < s->rank; k++) {
    if (out[k] && nout > INT64_MAX / out[k]) nout = -1;
    else nout *= out[k];
  }
  if (nout != nin) {
    ev_fail_value(ev, i, "the sizes hold %lld elements, the operand "
            "%lld", (long long)nout, (long long)nin);
    return NULL;
  }
  int eb = et_bytes(s->et);
  EvalValue *r = ev_array(ev, s);
  if (!r) return NULL;
  uint8_t *dense = ev_scratch(ev, i, nin * eb);
  if (!dense) {
    ev_unref(ev, r);
    return NULL;
  }
  /* the valid elements in order, then out at the result's bound strides */
  static const int64_t zero[MAX_RANK];
  ev_copy_box(vs->rank, vs->dims, v->data, zero, in, NULL, dense, eb);
  int64_t sstr[MAX_RANK], dstr[MAX_RANK], st = 1;
  ev_strides(s, dstr);
  for (int k = s->rank - 1; k >= 0; k--) {
    sstr[k] = st;
    st *= out[k];
  }
  ev_copy_strided(s->rank, out, dense, sstr, r->data, dstr, eb);
  ev_scratch_free(ev, dense, nin * eb);
  ev_set_dsize(r, out);
  return r;
}

/* reshape of a value below its bounds (see the top of the file). */
static EvalValue *reshape(Eval *ev, const HloInstr *i, EvalValue *const *a) {
  const Shape *os = i->ops[0]->shape, *s = i->shape;
  if (!shape_is_array(os) || !shape_is_array(s) || os->et != s->et ||
      os->rank > MAX_RANK || s->rank > MAX_RANK || ev_elems(os) != ev_elems(s) ||
      !a[0]->data) {
    ev_fail(ev, i, EVAL_ERR_INVALID, "malformed reshape");
    return NULL;
  }
  int dyn = -1, ndyn = 0;
  for (int k = 0; k < s->rank; k++)
    if (s->dyn && s->dyn[k] != DIM_STATIC) {
      dyn = k;
      ndyn++;
    }
  if (ndyn == 0) return ev_view(ev, a[0], s); /* the whole buffer */
  if (ndyn > 1) {
    ev_unsupported(ev, i, "reshape into several dynamic dimensions of a value "
                   "below its dynamic bounds");
    return NULL;
  }
  int64_t in[MAX_RANK], out[MAX_RANK], nin = 1, rest = 1;
  runtime_sizes(a[0], os, in);
  for (int k = 0; k < os->rank; k++) nin *= in[k];
  for (int k = 0; k < s->rank; k++) {
    out[k] = s->dims[k];
    if (k != dyn) rest *= s->dims[k];
  }
  out[dyn] = rest ? nin / rest : 0;
  if (rest ? nin % rest != 0 : nin != 0) {
    ev_fail_value(ev, i, "the operand's %lld valid elements do not fill "
                  "dimension %d of the result", (long long)nin, dyn);
    return NULL;
  }
  return relayout(ev, i, a[0], os, out);
}

/* broadcast and transpose: the bound data moved as usual (padding stays
 * past each size), the sizes moved with their dimensions. */
static EvalValue *moved(Eval *ev, const HloInstr *i, EvalValue *const *a) {
  const Shape *os = i->ops[0]->shape, *s = i->shape;
  if (!shape_is_array(os) || !shape_is_array(s) || s->rank > MAX_RANK ||
      i->dims.n != os->rank) {
    ev_fail(ev, i, EVAL_ERR_INVALID, "malformed %s", hlo_op_name(i->op));
    return NULL;
  }
  int64_t in[MAX_RANK], out[MAX_RANK];
  runtime_sizes(a[0], os, in);
  for (int k = 0; k < s->rank; k++) out[k] = s->dims[k];
  for (int k = 0; k < i->dims.n; k++) {
    int64_t from = i->op == HLO_BROADCAST ? k : i->dims.v[k];
    int64_t to = i->op == HLO_BROADCAST ? i->dims.v[k] : k;
    if (from < 0 || from >= os->rank || to < 0 || to >= s->rank) {
      ev_fail(ev, i, EVAL_ERR_INVALID, "malformed %s", hlo_op_name(i->op));
      return NULL;
    }
    out[to] = in[from];
  }
  EvalValue *r = i->op == HLO_BROADCAST ? eval_broadcast(ev, i, a) : eval_transpose(ev, i, a);
  if (r && (r->refs > 1 || r->borrowed || r->owner)) {
    EvalValue *c = ev_copy(ev, r, s);
    ev_unref(ev, r);
    r = c;
  }
  if (r) ev_set_dsize(r, out);
  return r;
}

/* Operand v of shape s with every padding element set to the eb-byte init. */
static void mask_padding(const EvalValue *v, const Shape *s, const uint8_t *init,
                         uint8_t *dst) {
  int eb = et_bytes(s->et);
  int64_t n = ev_elems(s), idx[MAX_RANK] = {0};
  for (int64_t e = 0; e < n; e++) {
    bool pad = false;
    for (int k = 0; k < s->rank; k++) pad |= idx[k] >= v->dsize[k];
    memcpy(dst + e * eb, pad ? init : v->data + e * eb, (size_t)eb);
    for (int k = s->rank - 1; k >= 0; k--) {
      if (++idx[k] < s->dims[k]) break;
      idx[k] = 0;
    }
  }
}

/* reduce over values below their bounds: padding reads as the init value. */
static EvalValue *reduce(Eval *ev, const HloInstr *i, EvalValue *const *a) {
  int n = i->nops / 2;
  if (i->nops % 2 || n < 1 || n > 16) {
    ev_fail(ev, i, EVAL_ERR_INVALID, "malformed reduce");
    return NULL;
  }
  EvalValue *m[32];
  const int64_t *ds = NULL;
  bool ok = true;
  for (int k = 0; k < i->nops; k++) m[k] = NULL;
  for (int k = 0; ok && k < i->nops; k++) {
    const Shape *os = i->ops[k]->shape;
    if (k >= n || !a[k]->dsize) {
      m[k] = ev_ref(a[k]);
      continue;
    }
    if (!shape_is_array(os) || os->rank > MAX_RANK || !a[k]->data ||
        !a[n + k]->data || i->ops[n + k]->shape->et != os->et) {
      ev_fail(ev, i, EVAL_ERR_INVALID, "malformed reduce");
      ok = false;
      break;
    }
    if (!ds) ds = a[k]->dsize;
    ok = (m[k] = ev_array_nozero(ev, os)) != NULL; /* at its bounds */
    if (ok) mask_padding(a[k], os, a[n + k]->data, m[k]->data);
  }
  EvalValue *r = ok ? eval_reduce(ev, i, m) : NULL;
  for (int k = 0; k < i->nops; k++)
    if (m[k]) ev_unref(ev, m[k]);
  if (!r || !ds) return r;
  /* the kept dimensions keep their runtime sizes */
  int64_t kept[MAX_RANK];
  const Shape *os = i->ops[0]->shape;
  int nk = 0;
  for (int k = 0; k < os->rank; k++) {
    bool reduced = false;
    for (int j = 0; j < i->dims.n; j++) reduced |= i->dims.v[j] == k;
    if (!reduced && nk < MAX_RANK) kept[nk++] = ds[k];
  }
  EvalValue *own = r;
  if (r->refs > 1 || r->borrowed || r->owner) {
    own = ev_copy(ev, r, r->shape);
    ev_unref(ev, r);
    if (!own) return NULL;
  }
  for (int t = 0; t < (own->ntuple ? own->ntuple : 1); t++) {
    EvalValue *leaf = own->ntuple ? own->tuple[t] : own;
    const Shape *ls = leaf->shape;
    if (!shape_is_array(ls) || ls->rank != nk || !ls->dyn) continue;
    int64_t sz[MAX_RANK];
    for (int k = 0; k < nk; k++)
      sz[k] = ls->dyn[k] != DIM_STATIC && kept[k] <= ls->dims[k] ? kept[k] : ls->dims[k];
    ev_set_dsize(leaf, sz);
  }
  return own;
}

EvalValue *eval_dynamic_operands(Eval *ev, const HloInstr *i,
                                 EvalValue *const *a, bool *handled) {
  *handled = false;
  if (passes_values(i->op)) return NULL;
  *handled = true;
  if (ev_is_elementwise_op(i->op)) return elementwise(ev, i, a);
  if (i->op == HLO_RESHAPE) return reshape(ev, i, a);
  if (i->op == HLO_BROADCAST || i->op == HLO_TRANSPOSE) return moved(ev, i, a);
  if (i->op == HLO_REDUCE) return reduce(ev, i, a);
  if (i->op == HLO_CUSTOM_CALL && i->cc && i->cc->target &&
      strcmp(i->cc->target, "SetBound") == 0)
    return eval_set_bound(ev, i, a);
  char what[96];
  snprintf(what, sizeof what, "%s on a value below its dynamic bounds",
           hlo_op_name(i->op));
  ev_unsupported(ev, i, what);
  return NULL;
}

static bool scalar_index(Eval *ev, const HloInstr *i, int k, EvalValue *const *a,
                         int64_t *out) {
  const Shape *s = i->ops[k]->shape;
  if (!shape_is_array(s) || s->rank != 0 || !et_is_int(s->et) || !a[k]->data)
    return ev_fail(ev, i, EVAL_ERR_INVALID, "operand %d must be an integer scalar", k);
  *out = ev_get_index(s->et, a[k]->data);
  return true;
}

EvalValue *eval_set_dimension_size(Eval *ev, const HloInstr *i,
                                   EvalValue *const *a) {
  const Shape *os = i->ops[0]->shape, *s = i->shape;
  int64_t d = i->dims.n == 1 ? i->dims.v[0] : -1, n;
  if (!shape_is_array(os) || !shape_is_array(s) || os->rank > MAX_RANK ||
      d < 0 || d >= os->rank || s->rank != os->rank || os->dims[d] < 0) {
    ev_fail(ev, i, EVAL_ERR_INVALID, "malformed set-dimension-size");
    return NULL;
  }
  if (!scalar_index(ev, i, 1, a, &n)) return NULL;
  if (n < 0 || n > os->dims[d]) {
    ev_fail_value(ev, i, "size %lld outside [0, %lld] of dimension %lld",
            (long long)n, (long long)os->dims[d], (long long)d);
    return NULL;
  }
  int64_t ds[MAX_RANK];
  runtime_sizes(a[0], os, ds);
  ds[d] = n;
  EvalValue *r = ev_view(ev, a[0], s);
  ev_set_dsize(r, ds);
  return r;
}

EvalValue *eval_get_dimension_size(Eval *ev, const HloInstr *i,
                                   EvalValue *const *a) {
  const Shape *os = i->ops[0]->shape;
  int64_t d = i->dims.n == 1 ? i->dims.v[0] : -1;
  if (!shape_is_array(os) || d < 0 || d >= os->rank || !shape_is_array(i->shape) ||
      i->shape->rank != 0) {
    ev_fail(ev, i, EVAL_ERR_INVALID, "malformed get-dimension-size");
    return NULL;
  }
  int64_t n = a[0]->dsize ? a[0]->dsize[d] : os->dims[d];
  if (n < 0) {
    ev_unsupported(ev, i, "get-dimension-size of an unbounded dimension");
    return NULL;
  }
  EvalValue *r = ev_array(ev, i->shape);
  if (r) ev_set_s64(i->shape->et, r->data, n);
  return r;
}

EvalValue *eval_dynamic_reshape(Eval *ev, const HloInstr *i,
                                EvalValue *const *a) {
  const Shape *os = i->ops[0]->shape, *s = i->shape;
  if (!shape_is_array(os) || !shape_is_array(s) || os->et != s->et ||
      os->rank > MAX_RANK || s->rank > MAX_RANK || i->nops != 1 + s->rank) {
    ev_fail(ev, i, EVAL_ERR_INVALID, "dynamic-reshape needs one size operand per "
            "result dimension and the operand's element type");
    return NULL;
  }
  int64_t out[MAX_RANK];
  for (int k = 0; k < s->rank; k++) {
    if (!scalar_index(ev, i, 1 + k, a, &out[k])) return NULL;
    bool dyn = s->dyn && s->dyn[k] != DIM_STATIC;
    if (!dyn && out[k] != s->dims[k]) {
      ev_fail_value(ev, i, "size %lld of static dimension %d is not %lld",
                    (long long)out[k], k, (long long)s->dims[k]);
      return NULL;
    }
    if (out[k] < 0 || out[k] > s->dims[k]) {
      ev_fail_value(ev, i, "size %lld of dimension %d outside [0, %lld]",
                    (long long)out[k], k, (long long)s->dims[k]);
      return NULL;
    }
  }
  return relayout(ev, i, a[0], os, out);
}

/* custom-call SliceToDynamic(x, s0, s1, ...): x (at the result's bounds)
 * with runtime sizes s_k. */
EvalValue *eval_slice_to_dynamic(Eval *ev, const HloInstr *i, EvalValue *const *a) {
  const Shape *os = i->ops[0]->shape, *s = i->shape;
  if (!shape_is_array(os) || !shape_is_array(s) || os->et != s->et ||
      os->rank != s->rank || s->rank > MAX_RANK || i->nops != 1 + s->rank ||
      a[0]->dsize || !a[0]->data) {
    ev_fail(ev, i, EVAL_ERR_INVALID, "SliceToDynamic needs a static operand of "
            "the result's bounds and one size operand per dimension");
    return NULL;
  }
  int64_t ds[MAX_RANK];
  for (int k = 0; k < s->rank; k++) {
    if (os->dims[k] != s->dims[k]) {
      ev_fail(ev, i, EVAL_ERR_INVALID, "SliceToDynamic's operand is not at the "
              "result's bounds");
      return NULL;
    }
    if (!scalar_index(ev, i, 1 + k, a, &ds[k])) return NULL;
    bool dyn = s->dyn && s->dyn[k] != DIM_STATIC;
    if (ds[k] < 0 || ds[k] > s->dims[k] || (!dyn && ds[k] != s->dims[k])) {
      ev_fail_value(ev, i, "size %lld of %s dimension %d outside [%lld, %lld]",
                    (long long)ds[k], dyn ? "dynamic" : "static", k,
                    (long long)(dyn ? 0 : s->dims[k]), (long long)s->dims[k]);
      return NULL;
    }
  }
  EvalValue *r = ev_view(ev, a[0], s);
  if (r) ev_set_dsize(r, ds);
  return r;
}

/* custom-call SetBound: its operand, runtime sizes included. */
EvalValue *eval_set_bound(Eval *ev, const HloInstr *i, EvalValue *const *a) {
  const Shape *os = i->ops[0]->shape, *s = i->shape;
  if (i->nops != 1 || !shape_is_array(os) || !shape_is_array(s) || os->et != s->et ||
      os->rank != s->rank || s->rank > MAX_RANK || !a[0]->data ||
      ev_elems(os) != ev_elems(s)) {
    ev_fail(ev, i, EVAL_ERR_INVALID, "SetBound needs one operand of its shape");
    return NULL;
  }
  for (int k = 0; k < s->rank; k++)
    if (os->dims[k] != s->dims[k]) {
      ev_fail(ev, i, EVAL_ERR_INVALID, "SetBound needs one operand of its shape");
      return NULL;
    }
  int64_t ds[MAX_RANK];
  runtime_sizes(a[0], os, ds);
  EvalValue *r = ev_view(ev, a[0], s);
  if (r) ev_set_dsize(r, ds);
  return r;
}

Literal *ev_dynamic_to_literal(Arena *a, const EvalValue *v) {
  const Shape *s = v->shape;
  Literal *l = ARENA_NEW(a, Literal);
  l->shape = shape_clone(a, s);
  l->shape->dyn = NULL;
  int64_t n = 1;
  for (int k = 0; k < s->rank; k++) {
    l->shape->dims[k] = v->dsize[k];
    n *= v->dsize[k];
  }
  int eb = et_bytes(s->et);
  l->data = arena_alloc(a, n > 0 ? (size_t)(n * eb) : 1);
  static const int64_t zero[MAX_RANK];
  ev_copy_box(s->rank, s->dims, v->data, zero, v->dsize, NULL, l->data, eb);
  return l;
}
