/*
 * reduce.c - reduce, reduce-window, select-and-scatter and map.
 *
 * The order of application is XLA's evaluator's, which matters for floats:
 * each accumulator starts at the init value and takes the input elements that
 * reduce into it in row-major order, always as f(accumulator, element).
 * Reduce walks the input once in row-major order, which visits every
 * accumulator's elements in exactly that order.  Reduce-window skips window
 * positions that fall into padding or between dilated elements (they add
 * nothing, not the init value).  Select-and-scatter keeps the first element
 * of the window and replaces it whenever select(current, next) is false, then
 * applies scatter(output, source) at the selected position: the order of
 * XLA's CPU and GPU back ends (XLA's evaluator calls scatter(source, output);
 * the two differ only for a scatter that is not commutative).
 *
 * A reducer of the form `op(p0, p1)` on f32/f64/32- and 64-bit integers runs
 * as a native loop; everything else goes through scalar.c.
 */
#include <stdlib.h>
#include <string.h>

#include "evalp.h"

#define MAX_RANK 64
#define MAX_VARIADIC 64

static const Shape *leaf_shape(const Shape *s, int k) {
  return s->et == ET_TUPLE ? (k < s->ntuple ? s->tuple[k] : NULL) : s;
}

/* Allocates the N results of a (possibly variadic) op as a tuple or array. */
static bool alloc_results(Eval *ev, const HloInstr *i, int n, EvalValue **res) {
  const Shape *s = i->shape;
  if ((s->et == ET_TUPLE && s->ntuple != n) || (s->et != ET_TUPLE && n != 1))
    return ev_fail(ev, i, EVAL_ERR_INVALID, "result shape does not have %d outputs", n);
  for (int k = 0; k < n; k++) {
    const Shape *ls = leaf_shape(s, k);
    if (!ls || !shape_is_array(ls) || ls->rank > MAX_RANK) {
      for (int j = 0; j < k; j++) ev_unref(ev, res[j]);
      return ev_fail(ev, i, EVAL_ERR_INVALID, "result %d is not an array", k);
    }
    res[k] = ev_array_nozero(ev, ls);
    if (!res[k]) {
      for (int j = 0; j < k; j++) ev_unref(ev, res[j]);
      return false;
    }
  }
  return true;
}

static EvalValue *pack_results(Eval *ev, const HloInstr *i, int n,
                               EvalValue **res) {
  if (i->shape->et != ET_TUPLE) return res[0];
  EvalValue *t = ev_tuple(ev, i->shape, n, res);
  for (int k = 0; k < n; k++) ev_unref(ev, res[k]);
  return t;
}

static void free_results(Eval *ev, int n, EvalValue **res) {
  for (int k = 0; k < n; k++) ev_unref(ev, res[k]);
}

/* Native accumulation acc = op(acc, x) for the simple reducers. */
#define NATIVE_OPS(T, ACC, X)                                                  \
  switch (op) {                                                                \
  case HLO_ADD: ACC = (T)(ACC + X); break;                                     \
  case HLO_MULTIPLY: ACC = (T)(ACC * X); break;                                \
  case HLO_MAXIMUM: ACC = (ACC != ACC) ? ACC : (X != X) ? X : (ACC < X ? X : ACC); break; \
  case HLO_MINIMUM: ACC = (ACC != ACC) ? ACC : (X != X) ? X : (X < ACC ? X : ACC); break; \
  default: break;                                                              \
  }

static bool native_reducible(int op, ElemType et) {
  if (op != HLO_ADD && op != HLO_MULTIPLY && op != HLO_MAXIMUM && op != HLO_MINIMUM)
    return false;
  return et == ET_F32 || et == ET_F64 || et == ET_S32 || et == ET_S64 ||
         et == ET_U32 || et == ET_U64;
}

static void native_step(int op, ElemType et, uint8_t *acc, const uint8_t *x) {
  switch (et) {
  case ET_F32: { float a, b; memcpy(&a, acc, 4); memcpy(&b, x, 4); NATIVE_OPS(float, a, b); memcpy(acc, &a, 4); break; }
  case ET_F64: { double a, b; memcpy(&a, acc, 8); memcpy(&b, x, 8); NATIVE_OPS(double, a, b); memcpy(acc, &a, 8); break; }
  case ET_S32: {
    int32_t a, b;
    memcpy(&a, acc, 4);
    memcpy(&b, x, 4);
    if (op == HLO_ADD) a = (int32_t)((uint32_t)a + (uint32_t)b);
    else if (op == HLO_MULTIPLY) a = (int32_t)((uint32_t)a * (uint32_t)b);
    else if (op == HLO_MAXIMUM) a = a < b ? b : a;
    else a = b < a ? b : a;
    memcpy(acc, &a, 4);
    break;
  }
  case ET_S64: {
    int64_t a, b;
    memcpy(&a, acc, 8);
    memcpy(&b, x, 8);
    if (op == HLO_ADD) a = (int64_t)((uint64_t)a + (uint64_t)b);
    else if (op == HLO_MULTIPLY) a = (int64_t)((uint64_t)a * (uint64_t)b);
    else if (op == HLO_MAXIMUM) a = a < b ? b : a;
    else a = b < a ? b : a;
    memcpy(acc, &a, 8);
    break;
  }
  case ET_U32: { uint32_t a, b; memcpy(&a, acc, 4); memcpy(&b, x, 4); NATIVE_OPS(uint32_t, a, b); memcpy(acc, &a, 4); break; }
  case ET_U64: { uint64_t a, b; memcpy(&a, acc, 8); memcpy(&b, x, 8); NATIVE_OPS(uint64_t, a, b); memcpy(acc, &a, 8); break; }
  default: break;
  }
}

/* Fast loops for the hottest case: f32 add / max over a row-major walk. */
static void reduce_f32(int op, const float *in, float *acc, int64_t n,
                       int rank, const int64_t *dims, const int64_t *ostr) {
  int64_t idx[MAX_RANK] = {0};
  int64_t oo = 0;
  int last = rank - 1;
  int64_t inner = rank ? dims[last] : 1;
  int64_t istep = rank ? ostr[last] : 0;
  for (int64_t lin = 0; lin < n; lin += inner) {
    float *a = acc + oo;
    const float *x = in + lin;
    if (istep == 0) {
      float v = *a;
      if (op == HLO_ADD) for (int64_t j = 0; j < inner; j++) v += x[j];
      else for (int64_t j = 0; j < inner; j++) NATIVE_OPS(float, v, x[j]);
      *a = v;
    } else {
      for (int64_t j = 0; j < inner; j++) NATIVE_OPS(float, a[j * istep], x[j]);
    }
    int k = last - 1;
    for (; k >= 0; k--) {
      oo += ostr[k];
      if (++idx[k] < dims[k]) break;
      oo -= ostr[k] * dims[k];
      idx[k] = 0;
    }
  }
}

EvalValue *eval_reduce(Eval *ev, const HloInstr *i, EvalValue *const *a) {
  if (i->nops < 2 || i->nops % 2 || i->ncalled < 1) {
    ev_fail(ev, i, EVAL_ERR_INVALID, "reduce needs inputs, inits and a computation");
    return NULL;
  }
  int n = i->nops / 2;
  if (n > MAX_VARIADIC) {
    ev_unsupported(ev, i, "reduce with more than 64 operands");
    return NULL;
  }
  const Shape *is = i->ops[0]->shape;
  if (!shape_is_array(is) || is->rank > MAX_RANK) {
    ev_fail(ev, i, EVAL_ERR_INVALID, "reduce input is not an array");
    return NULL;
  }
  for (int k = 0; k < n; k++) {
    const Shape *ks = i->ops[k]->shape;
    if (!shape_is_array(ks) || ks->rank != is->rank ||
        memcmp(ks->dims, is->dims, sizeof(int64_t) * (size_t)is->rank) != 0 ||
        ev_elems(i->ops[n + k]->shape) != 1) {
      ev_fail(ev, i, EVAL_ERR_INVALID, "reduce operand %d does not match", k);
      return NULL;
    }
  }
  bool reduced[MAX_RANK] = {false};
  for (int k = 0; k < i->dims.n; k++) {
    int64_t d = i->dims.v[k];
    if (d < 0 || d >= is->rank || reduced[d]) {
      ev_fail(ev, i, EVAL_ERR_INVALID, "bad reduce dimension %lld", (long long)d);
      return NULL;
    }
    reduced[d] = true;
  }
  EvalValue *res[MAX_VARIADIC];
  if (!alloc_results(ev, i, n, res)) return NULL;
  /* output strides per input dimension (0 for reduced dims) */
  int64_t ostr[MAX_RANK], odims[MAX_RANK];
  int orank = 0;
  for (int d = 0; d < is->rank; d++)
    if (!reduced[d]) odims[orank++] = is->dims[d];
  const Shape *rs0 = res[0]->shape;
  bool shape_ok = rs0->rank == orank;
  for (int k = 0; k < orank && shape_ok; k++) shape_ok = rs0->dims[k] == odims[k];
  for (int k = 0; k < n && shape_ok; k++)
    shape_ok = res[k]->shape->et == i->ops[n + k]->shape->et;
  if (!shape_ok) {
    free_results(ev, n, res);
    ev_fail(ev, i, EVAL_ERR_INVALID, "result shape does not match the reduction");
    return NULL;
  }
  {
    int64_t st = 1;
    for (int d = is->rank - 1; d >= 0; d--) {
      ostr[d] = reduced[d] ? 0 : st;
      if (!reduced[d]) st *= is->dims[d];
    }
  }
  int64_t on = ev_elems(rs0), in = ev_elems(is);
  int ebo[MAX_VARIADIC], ebi[MAX_VARIADIC];
  for (int k = 0; k < n; k++) {
    ebo[k] = et_bytes(res[k]->shape->et);
    ebi[k] = et_bytes(i->ops[k]->shape->et);
    for (int64_t j = 0; j < on; j++)
      memcpy(res[k]->data + j * ebo[k], a[n + k]->data, (size_t)ebo[k]);
  }
  ScalarFn *f = scalar_fn_new(ev, i->called[0]);
  int op = scalar_fn_simple_binop(f);
  ElemType et = i->ops[0]->shape->et;
  bool ok = true;
  if (n == 1 && et == ET_F32 && res[0]->shape->et == ET_F32 &&
      (op == HLO_ADD || op == HLO_MAXIMUM || op == HLO_MINIMUM || op == HLO_MULTIPLY)) {
    if (in > 0) reduce_f32(op, (const float *)a[0]->data, (float *)res[0]->data, in,
                           is->rank, is->dims, ostr);
  } else if (n == 1 && native_reducible(op, et) && res[0]->shape->et == et) {
    int64_t idx[MAX_RANK] = {0}, oo = 0;
    int eb = ebi[0];
    for (int64_t lin = 0; lin < in; lin++) {
      native_step(op, et, res[0]->data + oo * eb, a[0]->data + lin * eb);
      for (int k = is->rank - 1; k >= 0; k--) {
        oo += ostr[k];
        if (++idx[k] < is->dims[k]) break;
        oo -= ostr[k] * is->dims[k];
        idx[k] = 0;
      }
    }
  } else {
    ElemType ets[2 * MAX_VARIADIC], oets[MAX_VARIADIC];
    for (int k = 0; k < n; k++) {
      ets[k] = oets[k] = res[k]->shape->et;
      ets[n + k] = i->ops[k]->shape->et;
    }
    ok = scalar_fn_check(ev, i, f, 2 * n, ets, n, oets);
    int64_t idx[MAX_RANK] = {0}, oo = 0;
    const uint8_t *args[2 * MAX_VARIADIC];
    uint8_t *outs[MAX_VARIADIC];
    for (int64_t lin = 0; lin < in && ok; lin++) {
      for (int k = 0; k < n; k++) {
        outs[k] = res[k]->data + oo * ebo[k];
        args[k] = outs[k];
        args[n + k] = a[k]->data + lin * ebi[k];
      }
      if (!scalar_fn_apply(ev, f, args, outs)) { ok = false; break; }
      if ((lin & 0xfff) == 0 && !ev_check_time(ev, i)) { ok = false; break; }
      for (int k = is->rank - 1; k >= 0; k--) {
        oo += ostr[k];
        if (++idx[k] < is->dims[k]) break;
        oo -= ostr[k] * is->dims[k];
        idx[k] = 0;
      }
    }
  }
  scalar_fn_free(f);
  if (!ok) {
    free_results(ev, n, res);
    return NULL;
  }
  return pack_results(ev, i, n, res);
}

/*
 * Windows
 */
typedef struct Win {
  int rank;
  int64_t size[MAX_RANK], stride[MAX_RANK], lo[MAX_RANK];
  int64_t bdil[MAX_RANK], wdil[MAX_RANK];
} Win;

static bool get_window(Eval *ev, const HloInstr *i, const Window *w, int rank,
                       Win *out) {
  if (!w || w->ndims != rank)
    return ev_fail(ev, i, EVAL_ERR_INVALID, "window has %d dimensions, want %d",
                   w ? w->ndims : 0, rank);
  out->rank = rank;
  for (int k = 0; k < rank; k++) {
    const WindowDim *d = &w->dims[k];
    out->size[k] = d->size;
    out->stride[k] = d->stride > 0 ? d->stride : 1;
    out->lo[k] = d->pad_lo;
    out->bdil[k] = d->base_dilation > 0 ? d->base_dilation : 1;
    out->wdil[k] = d->window_dilation > 0 ? d->window_dilation : 1;
    if (d->size < 0)
      return ev_fail(ev, i, EVAL_ERR_INVALID, "negative window size");
  }
  return true;
}

/* Input index of window position `wpos` for output index `oidx` along each
 * dimension; false when it falls in padding or a dilation hole. */
static bool window_input(const Win *w, const int64_t *oidx, const int64_t *wpos,
                         const int64_t *idims, int64_t *iidx) {
  for (int k = 0; k < w->rank; k++) {
    int64_t x = oidx[k] * w->stride[k] - w->lo[k] + wpos[k] * w->wdil[k];
    if (w->bdil[k] > 1) {
      if (x % w->bdil[k] != 0) return false;
      x /= w->bdil[k];
    }
    if (x < 0 || x >= idims[k]) return false;
    iidx[k] = x;
  }
  return true;
}

static bool bump(int rank, const int64_t *dims, int64_t *idx) {
  for (int k = rank - 1; k >= 0; k--) {
    if (++idx[k] < dims[k]) return true;
    idx[k] = 0;
  }
  return false;
}

static int64_t linear(int rank, const int64_t *idx, const int64_t *strides) {
  int64_t o = 0;
  for (int k = 0; k < rank; k++) o += idx[k] * strides[k];
  return o;
}

EvalValue *eval_reduce_window(Eval *ev, const HloInstr *i, EvalValue *const *a) {
  if (i->nops < 2 || i->nops % 2 || i->ncalled < 1) {
    ev_fail(ev, i, EVAL_ERR_INVALID, "reduce-window needs inputs, inits and a computation");
    return NULL;
  }
  int n = i->nops / 2;
  if (n > MAX_VARIADIC) {
    ev_unsupported(ev, i, "reduce-window with more than 64 operands");
    return NULL;
  }
  const Shape *is = i->ops[0]->shape;
  if (!shape_is_array(is) || is->rank > MAX_RANK) {
    ev_fail(ev, i, EVAL_ERR_INVALID, "input is not an array");
    return NULL;
  }
  Win w;
  if (!get_window(ev, i, i->window, is->rank, &w)) return NULL;
  for (int k = 0; k < n; k++) {
    const Shape *ks = i->ops[k]->shape;
    if (!shape_is_array(ks) || ks->rank != is->rank ||
        memcmp(ks->dims, is->dims, sizeof(int64_t) * (size_t)is->rank) != 0 ||
        ev_elems(i->ops[n + k]->shape) != 1) {
      ev_fail(ev, i, EVAL_ERR_INVALID, "operand %d does not match", k);
      return NULL;
    }
  }
  EvalValue *res[MAX_VARIADIC];
  if (!alloc_results(ev, i, n, res)) return NULL;
  const Shape *rs = res[0]->shape;
  if (rs->rank != is->rank) {
    free_results(ev, n, res);
    ev_fail(ev, i, EVAL_ERR_INVALID, "result rank differs from the input's");
    return NULL;
  }
  int64_t istr[MAX_RANK];
  ev_strides(is, istr);
  int ebo[MAX_VARIADIC], ebi[MAX_VARIADIC];
  for (int k = 0; k < n; k++) {
    ebo[k] = et_bytes(res[k]->shape->et);
    ebi[k] = et_bytes(i->ops[k]->shape->et);
  }
  ScalarFn *f = scalar_fn_new(ev, i->called[0]);
  int op = scalar_fn_simple_binop(f);
  ElemType et = i->ops[0]->shape->et;
  bool native = n == 1 && native_reducible(op, et) && rs->et == et;
  ElemType ets[2 * MAX_VARIADIC], oets[MAX_VARIADIC];
  for (int k = 0; k < n; k++) {
    ets[k] = oets[k] = res[k]->shape->et;
    ets[n + k] = i->ops[k]->shape->et;
  }
  bool ok = native || scalar_fn_check(ev, i, f, 2 * n, ets, n, oets);
  int64_t on = ev_elems(rs);
  int64_t oidx[MAX_RANK] = {0}, wpos[MAX_RANK], iidx[MAX_RANK];
  const uint8_t *args[2 * MAX_VARIADIC];
  uint8_t *outs[MAX_VARIADIC];
  bool empty_window = false;
  for (int k = 0; k < w.rank; k++) empty_window |= w.size[k] <= 0;
  for (int64_t o = 0; o < on && ok; o++) {
    for (int k = 0; k < n; k++) {
      outs[k] = res[k]->data + o * ebo[k];
      memcpy(outs[k], a[n + k]->data, (size_t)ebo[k]);
      args[k] = outs[k];
    }
    if (!empty_window) {
      memset(wpos, 0, sizeof(int64_t) * (size_t)w.rank);
      do {
        if (!window_input(&w, oidx, wpos, is->dims, iidx)) continue;
        int64_t li = linear(is->rank, iidx, istr);
        if (native) {
          native_step(op, et, outs[0], a[0]->data + li * ebi[0]);
          continue;
        }
        for (int k = 0; k < n; k++) args[n + k] = a[k]->data + li * ebi[k];
        if (!scalar_fn_apply(ev, f, args, outs)) { ok = false; break; }
      } while (bump(w.rank, w.size, wpos));
    }
    if (!ev_check_time(ev, i)) ok = false;
    bump(rs->rank, rs->dims, oidx);
  }
  scalar_fn_free(f);
  if (!ok) {
    free_results(ev, n, res);
    return NULL;
  }
  return pack_results(ev, i, n, res);
}

EvalValue *eval_select_and_scatter(Eval *ev, const HloInstr *i,
                                   EvalValue *const *a) {
  const Shape *os = i->ops[0]->shape, *ss = i->ops[1]->shape, *s = i->shape;
  if (i->ncalled < 2 || !shape_is_array(os) || !shape_is_array(ss) ||
      os->rank > MAX_RANK || ss->rank != os->rank || !shape_is_array(s) ||
      ev_elems(s) != ev_elems(os) || s->et != i->ops[2]->shape->et ||
      ss->et != s->et) {
    ev_fail(ev, i, EVAL_ERR_INVALID, "malformed select-and-scatter");
    return NULL;
  }
  Win w;
  if (!get_window(ev, i, i->window, os->rank, &w)) return NULL;
  EvalValue *r = ev_array_nozero(ev, s);
  if (!r) return NULL;
  int eb = et_bytes(s->et), obe = et_bytes(os->et);
  int64_t n = ev_elems(s);
  for (int64_t k = 0; k < n; k++) memcpy(r->data + k * eb, a[2]->data, (size_t)eb);
  ScalarFn *sel = scalar_fn_new(ev, i->called[0]);
  ScalarFn *sca = scalar_fn_new(ev, i->called[1]);
  int64_t ostr[MAX_RANK];
  ev_strides(os, ostr);
  int64_t sn = ev_elems(ss);
  int64_t sidx[MAX_RANK] = {0}, wpos[MAX_RANK], iidx[MAX_RANK];
  ElemType sel_in[2] = {os->et, os->et}, sel_out[1] = {ET_PRED};
  ElemType sca_in[2] = {s->et, s->et}, sca_out[1] = {s->et};
  bool ok = scalar_fn_check(ev, i, sel, 2, sel_in, 1, sel_out) &&
            scalar_fn_check(ev, i, sca, 2, sca_in, 1, sca_out);
  bool empty_window = false;
  for (int k = 0; k < w.rank; k++) empty_window |= w.size[k] <= 0;
  for (int64_t si = 0; si < sn && ok && !empty_window; si++) {
    int64_t best = -1;
    memset(wpos, 0, sizeof(int64_t) * (size_t)w.rank);
    do {
      if (!window_input(&w, sidx, wpos, os->dims, iidx)) continue;
      int64_t li = linear(os->rank, iidx, ostr);
      if (best < 0) best = li;
      const uint8_t *args[2] = {a[0]->data + best * obe, a[0]->data + li * obe};
      uint8_t keep;
      uint8_t *outs[1] = {&keep};
      if (!scalar_fn_apply(ev, sel, args, outs)) { ok = false; break; }
      if (!keep) best = li;
    } while (bump(w.rank, w.size, wpos));
    if (ok && best >= 0) {
      /* scatter(current output, source), as XLA's CPU and GPU back ends
       * call it (XLA's evaluator passes them the other way round) */
      const uint8_t *args[2] = {r->data + best * eb, a[1]->data + si * eb};
      uint8_t *outs[1] = {r->data + best * eb};
      if (!scalar_fn_apply(ev, sca, args, outs)) ok = false;
    }
    if ((si & 0xfff) == 0 && ok && !ev_check_time(ev, i)) ok = false;
    bump(ss->rank, ss->dims, sidx);
  }
  scalar_fn_free(sel);
  scalar_fn_free(sca);
  if (!ok) {
    ev_unref(ev, r);
    return NULL;
  }
  return r;
}

EvalValue *eval_map(Eval *ev, const HloInstr *i, EvalValue *const *a) {
  const Shape *s = i->shape;
  if (i->ncalled < 1 || !shape_is_array(s) || i->nops < 1 || i->nops > MAX_VARIADIC) {
    ev_fail(ev, i, EVAL_ERR_INVALID, "malformed map");
    return NULL;
  }
  int64_t n = ev_elems(s);
  for (int k = 0; k < i->nops; k++)
    if (ev_elems(i->ops[k]->shape) != n) {
      ev_fail(ev, i, EVAL_ERR_INVALID, "operand %d does not match the result", k);
      return NULL;
    }
  EvalValue *r = ev_array_nozero(ev, s);
  if (!r) return NULL;
  ScalarFn *f = scalar_fn_new(ev, i->called[0]);
  int eb = et_bytes(s->et);
  const uint8_t *args[MAX_VARIADIC];
  ElemType ets[MAX_VARIADIC], oet[1] = {s->et};
  for (int k = 0; k < i->nops; k++) ets[k] = i->ops[k]->shape->et;
  bool ok = scalar_fn_check(ev, i, f, i->nops, ets, 1, oet);
  for (int64_t e = 0; e < n && ok; e++) {
    for (int k = 0; k < i->nops; k++)
      args[k] = a[k]->data + e * et_bytes(i->ops[k]->shape->et);
    uint8_t *outs[1] = {r->data + e * eb};
    if (!scalar_fn_apply(ev, f, args, outs)) ok = false;
  }
  scalar_fn_free(f);
  if (!ok) {
    ev_unref(ev, r);
    return NULL;
  }
  return r;
}
