/*
 * shape_inference_reduce.c - reduce, reduce-window, select-and-scatter and
 * scan, and the window arithmetic they share with convolution.
 *
 * Variadic reductions take N inputs then N init values and a reducer over N
 * accumulators; their result is a tuple of N arrays (one array when N is 1).
 */
#include "shape_inference_internal.h"

static bool is_array(const Shape *s) {
  return s->et != ET_TUPLE && si_et_array(s->et);
}

/* A window of size k dilated by f covers (k-1)*f+1 elements. */
static int64_t dilated(int64_t n, int64_t f) {
  return n == 0 ? 0 : (n - 1) * f + 1;
}

Shape *si_window_output(SiCtx *c, const Shape *base, const Window *w,
                        ElemType et) {
  if (!w)
    return si_fail(c, "missing window");
  if (w->ndims != base->rank)
    return si_fail(c, "window has %d dimensions but the operand %s has rank "
                   "%d", w->ndims, si_str(c, base), base->rank);
  int64_t *dims = ARENA_ARRAY(c->a, int64_t, base->rank + 1);
  for (int d = 0; d < w->ndims; d++) {
    const WindowDim *wd = &w->dims[d];
    if (wd->size <= 0)
      return si_fail(c, "window dimension %d has non-positive size %lld", d,
                     (long long)wd->size);
    if (wd->stride <= 0)
      return si_fail(c, "window dimension %d has non-positive stride %lld", d,
                     (long long)wd->stride);
    if (wd->base_dilation < 1 || wd->window_dilation < 1)
      return si_fail(c, "window dimension %d has a dilation below 1", d);
    if (si_dim_unbounded(base, d)) {
      dims[d] = -1;
      continue;
    }
    __int128 padded = (__int128)wd->pad_lo +
                      dilated(base->dims[d], wd->base_dilation) + wd->pad_hi;
    int64_t win = dilated(wd->size, wd->window_dilation);
    __int128 n = padded < win ? 0 : (padded - win) / wd->stride + 1;
    if (n > INT64_MAX)
      return si_fail(c, "window dimension %d: output size overflows", d);
    dims[d] = (int64_t)n;
  }
  return si_array(c, et, base->rank, dims, base->dyn);
}

/* Without mixed precision, XLA also wants parameter k of the reducer to have
 * operand k's element type (SameElementTypesForOperandsAndToApplyParameters),
 * which pairs the accumulators with the inputs and the others with the init
 * values. */
static bool same_types(SiCtx *c, const SiProgram *p) {
  for (int k = 0; k < c->i->nops && k < p->nparams; k++) {
    if (p->params[k]->et != si_op(c, k)->et) {
      si_fail(c, "reducer '%s' parameter %d is %s but operand %d is %s",
              p->comp->name, k, si_str(c, p->params[k]), k,
              si_str(c, si_op(c, k)));
      return false;
    }
  }
  return true;
}

Shape *si_infer_reduce(SiCtx *c) {
  const HloInstr *i = c->i;
  int n = i->nops / 2;
  const Shape *s0 = si_op(c, 0);
  for (int k = 0; k < n; k++) {
    const Shape *s = si_op(c, k);
    if (!is_array(s))
      return si_fail(c, "input %d must be an array, not %s", k, si_str(c, s));
    if (!si_same_dims(s0, s))
      return si_fail(c, "input %d %s and input 0 %s have different dimensions",
                     k, si_str(c, s), si_str(c, s0));
  }
  if (!si_check_dims(c, "dimensions=", i->dims.n, i->dims.v, s0->rank))
    return NULL;
  SiProgram p;
  if (!si_program(c, 0, "reducer", &p))
    return NULL;
  const Shape **inits = ARENA_ARRAY(c->a, const Shape *, n);
  ElemType *ets = ARENA_ARRAY(c->a, ElemType, n);
  for (int k = 0; k < n; k++) {
    inits[k] = si_op(c, n + k);
    ets[k] = si_op(c, k)->et;
  }
  if (!si_check_reducer(c, &p, n, inits, ets) || !same_types(c, &p))
    return NULL;
  int64_t *dims = ARENA_ARRAY(c->a, int64_t, s0->rank + 1);
  uint8_t *dyn = ARENA_ARRAY(c->a, uint8_t, s0->rank + 1);
  int r = 0;
  for (int d = 0; d < s0->rank; d++) {
    bool reduced = false;
    for (int k = 0; k < i->dims.n; k++)
      reduced = reduced || i->dims.v[k] == d;
    if (!reduced) {
      dims[r] = s0->dims[d];
      dyn[r++] = s0->dyn ? s0->dyn[d] : DIM_STATIC;
    }
  }
  if (p.result->et != ET_TUPLE)
    return si_array(c, p.result->et, r, dims, dyn);
  Shape **el = ARENA_ARRAY(c->a, Shape *, n);
  for (int k = 0; k < n; k++)
    el[k] = si_array(c, p.result->tuple[k]->et, r, dims, dyn);
  return shape_tuple(c->a, n, el);
}

Shape *si_infer_reduce_window(SiCtx *c) {
  const HloInstr *i = c->i;
  int n = i->nops / 2;
  const Shape *s0 = si_op(c, 0);
  for (int k = 0; k < n; k++) {
    const Shape *s = si_op(c, k);
    if (!is_array(s))
      return si_fail(c, "input %d must be an array, not %s", k, si_str(c, s));
    if (!si_same_dims(s0, s))
      return si_fail(c, "input %d %s and input 0 %s have different dimensions",
                     k, si_str(c, s), si_str(c, s0));
  }
  SiProgram p;
  if (!si_program(c, 0, "reducer", &p))
    return NULL;
  const Shape **inits = ARENA_ARRAY(c->a, const Shape *, n);
  ElemType *ets = ARENA_ARRAY(c->a, ElemType, n);
  for (int k = 0; k < n; k++) {
    inits[k] = si_op(c, n + k);
    ets[k] = si_op(c, k)->et;
  }
  if (!si_check_reducer(c, &p, n, inits, ets) || !same_types(c, &p))
    return NULL;
  Shape **el = ARENA_ARRAY(c->a, Shape *, n);
  for (int k = 0; k < n; k++) {
    el[k] = si_window_output(c, si_op(c, k), i->window, inits[k]->et);
    if (!el[k])
      return NULL;
  }
  if (p.result->et != ET_TUPLE)
    return el[0];
  return shape_tuple(c->a, n, el);
}

/* select-and-scatter(operand, source, init): select is (T, T) -> pred,
 * scatter is a reducer over the source type; source has the shape of the
 * windowed operand; the result is the operand's shape. */
Shape *si_infer_select_and_scatter(SiCtx *c) {
  const Shape *op = si_op(c, 0), *src = si_op(c, 1), *init = si_op(c, 2);
  if (!is_array(op) || !is_array(src))
    return si_fail(c, "operand and source must be arrays, not %s and %s",
                   si_str(c, op), si_str(c, src));
  SiProgram sel, sca;
  if (!si_program(c, 0, "select", &sel) || !si_program(c, 1, "scatter", &sca))
    return NULL;
  if (sel.nparams != 2)
    return si_fail(c, "select computation '%s' must take 2 parameters, takes "
                   "%d", sel.comp->name, sel.nparams);
  Shape pred = {.et = ET_PRED}, elem = {.et = op->et};
  if (!si_compatible(sel.result, &pred, 0))
    return si_fail(c, "select computation '%s' must return pred[], returns "
                   "%s", sel.comp->name, si_str(c, sel.result));
  for (int k = 0; k < 2; k++)
    if (!si_compatible(&elem, sel.params[k], SI_CMP_IGNORE_FP))
      return si_fail(c, "select computation '%s' parameter %d is %s but the "
                     "operand elements are %s", sel.comp->name, k,
                     si_str(c, sel.params[k]), et_name(op->et));
  const Shape *inits[1] = {init};
  ElemType ets[1] = {src->et};
  if (!si_check_reducer(c, &sca, 1, inits, ets))
    return NULL;
  Shape *w = si_window_output(c, op, c->i->window, op->et);
  if (!w)
    return NULL;
  if (!si_compatible(src, w, SI_CMP_IGNORE_FP))
    return si_fail(c, "source %s does not match the windowed operand %s",
                   si_str(c, src), si_str(c, w));
  return si_result(c, op);
}

/* The inputs or results of a scan: the elements of a tuple, else itself. */
static int elements_of(const Shape *s, const Shape *const **out,
                       const Shape **one) {
  if (s->et == ET_TUPLE) {
    *out = (const Shape *const *)s->tuple;
    return s->ntuple;
  }
  *one = s;
  *out = one;
  return 1;
}

/* scan(inputs..., carries...) applies to_apply along one dimension.  The body
 * takes input slices (the scan dimension removed) then carries, and returns
 * output slices then the new carries; the result is the outputs (the scan
 * dimension put back) then the final carries, a tuple when the body's root
 * is one. */
Shape *si_infer_scan(SiCtx *c) {
  const HloInstr *i = c->i;
  if (i->dims.n != 1)
    return si_fail(c, "needs exactly one dimension in dimensions=, has %d",
                   i->dims.n);
  int64_t sd = i->dims.v[0], carries = i->scan_num_carries;
  SiProgram p;
  if (!si_program(c, 0, "body", &p))
    return NULL;
  const Shape *one;
  const Shape *const *roots;
  int nroots = elements_of(p.result, &roots, &one);
  int nops = i->nops;
  if (carries < 0 || carries > nops || carries > nroots)
    return si_fail(c, "num_carries=%lld does not fit %d operands and %d body "
                   "results", (long long)carries, nops, nroots);
  if (nops == carries && nroots == carries)
    return si_fail(c, "has no inputs or outputs");
  if (p.nparams != nops)
    return si_fail(c, "body '%s' takes %d parameters but scan has %d operands",
                   p.comp->name, p.nparams, nops);
  int ninputs = nops - (int)carries, noutputs = nroots - (int)carries;
  if (sd < 0)
    return si_fail(c, "scan dimension %lld is negative", (long long)sd);
  int64_t len = -1;
  for (int k = 0; k < nops; k++) {
    const Shape *s = si_op(c, k);
    Shape *want = si_copy(c->a, s);
    if (k < ninputs) {
      if (!is_array(s) || sd >= s->rank)
        return si_fail(c, "scan dimension %lld is out of range for input %d "
                       "%s", (long long)sd, k, si_str(c, s));
      if (len < 0)
        len = s->dims[sd];
      if (s->dims[sd] != len)
        return si_fail(c, "input %d has scan dimension size %lld, expected "
                       "%lld", k, (long long)s->dims[sd], (long long)len);
      for (int d = (int)sd; d + 1 < want->rank; d++)
        want->dims[d] = want->dims[d + 1];
      want->rank--;
    }
    if (!si_compatible(p.params[k], want, 0))
      return si_fail(c, "body '%s' parameter %d is %s but operand %d gives %s",
                     p.comp->name, k, si_str(c, p.params[k]), k,
                     si_str(c, want));
  }
  for (int k = 0; k < carries; k++)
    if (!si_compatible(p.params[ninputs + k], roots[noutputs + k], 0))
      return si_fail(c, "body '%s' carry %d is %s as a parameter but %s as a "
                     "result", p.comp->name, k,
                     si_str(c, p.params[ninputs + k]),
                     si_str(c, roots[noutputs + k]));
  if (len < 0) {
    /* No inputs: the declared outputs give the scan length. */
    const Shape *dcl = c->i->shape;
    if (!dcl)
      return si_fail(c, "without inputs the result shape must be written");
    const Shape *o = dcl->et == ET_TUPLE ? (dcl->ntuple ? dcl->tuple[0] : NULL)
                                         : dcl;
    if (!o || !is_array(o) || sd >= o->rank)
      return si_fail(c, "cannot tell the scan length");
    len = o->dims[sd];
  }
  Shape **el = ARENA_ARRAY(c->a, Shape *, nroots);
  for (int k = 0; k < nroots; k++) {
    const Shape *rs = roots[k];
    if (k >= noutputs) {
      el[k] = si_result(c, rs);
      continue;
    }
    if (!is_array(rs) || sd > rs->rank)
      return si_fail(c, "body output %d %s cannot take scan dimension %lld",
                     k, si_str(c, rs), (long long)sd);
    int64_t *dims = ARENA_ARRAY(c->a, int64_t, rs->rank + 1);
    for (int d = 0, s = 0; d <= rs->rank; d++)
      dims[d] = d == sd ? len : rs->dims[s++];
    el[k] = si_array(c, rs->et, rs->rank + 1, dims, NULL);
  }
  if (p.result->et != ET_TUPLE)
    return el[0];
  return shape_tuple(c->a, nroots, el);
}
