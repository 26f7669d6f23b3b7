/*
 * scan.c - scan(inputs..., inits...), dimensions={d}, num_carries=c,
 * is_reverse, to_apply=body.
 *
 * Semantics are XLA's: for each index t along dimension d of the inputs
 * (t = 0, 1, ... or, with is_reverse=true, from the last index down), the
 * body runs on the inputs' slices at t (dimension d removed) followed by the
 * current carries (the inits at the first step), and returns the outputs'
 * slices at t followed by the new carries.  The result is the outputs with
 * their slices stacked along dimension d (each slice at the index t it was
 * computed for), then the final carries; a tuple exactly when the body's
 * root is one.  is_associative is a hint only: steps always run in order.
 */
#include <stdlib.h>
#include <string.h>

#include "evalp.h"

#define MAX_RANK 64

/* The dims and strides of the slice of array shape s at one index along
 * dimension sd (dimension sd dropped); returns the slice's rank and sets
 * *step, the element offset between consecutive indices along sd. */
static int slice_geom(const Shape *s, int64_t sd, int64_t *dims,
                      int64_t *str, int64_t *step) {
  int64_t full[MAX_RANK];
  ev_strides(s, full);
  int n = 0;
  for (int d = 0; d < s->rank; d++) {
    if (d == sd) {
      *step = full[d];
      continue;
    }
    dims[n] = s->dims[d];
    str[n++] = full[d];
  }
  return n;
}

static void dense_strides(int rank, const int64_t *dims, int64_t *str) {
  int64_t st = 1;
  for (int k = rank - 1; k >= 0; k--) {
    str[k] = st;
    st *= dims[k];
  }
}

EvalValue *eval_scan(Eval *ev, const HloInstr *i, EvalValue *const *a) {
  const Shape *s = i->shape;
  const HloComp *c = i->ncalled >= 1 ? i->called[0] : NULL;
  int64_t carries = i->scan_num_carries;
  int nops = i->nops;
  bool tup = s->et == ET_TUPLE;
  int nroots = tup ? s->ntuple : 1;
  if (!c || i->dims.n != 1 || carries < 0 || carries > nops ||
      carries > nroots || c->nparams != nops) {
    ev_fail(ev, i, EVAL_ERR_INVALID, "malformed scan");
    return NULL;
  }
  int64_t sd = i->dims.v[0];
  int ninputs = nops - (int)carries, noutputs = nroots - (int)carries;
  int64_t len = -1;
  for (int k = 0; k < ninputs; k++) {
    const Shape *is = i->ops[k]->shape;
    if (!shape_is_array(is) || sd < 0 || sd >= is->rank || is->rank > MAX_RANK ||
        (len >= 0 && is->dims[sd] != len) || !c->params[k] ||
        !shape_is_array(c->params[k]->shape) ||
        ev_elems(c->params[k]->shape) * is->dims[sd] != ev_elems(is) ||
        c->params[k]->shape->et != is->et) {
      ev_fail(ev, i, EVAL_ERR_INVALID, "scan input %d does not fit the body", k);
      return NULL;
    }
    len = is->dims[sd];
  }
  for (int k = 0; k < noutputs; k++) {
    const Shape *os = tup ? s->tuple[k] : s;
    if (!shape_is_array(os) || sd < 0 || sd >= os->rank || os->rank > MAX_RANK ||
        (len >= 0 && os->dims[sd] != len)) {
      ev_fail(ev, i, EVAL_ERR_INVALID, "scan output %d does not fit", k);
      return NULL;
    }
    len = os->dims[sd];
  }
  if (len < 0) {
    ev_fail(ev, i, EVAL_ERR_INVALID, "scan has no inputs or outputs");
    return NULL;
  }

  EvalValue **outs = xcalloc((size_t)nroots + 1, sizeof *outs);
  EvalValue **cur = outs + noutputs;   /* the carries */
  EvalValue **args = xcalloc((size_t)nops + 1, sizeof *args);
  EvalValue *result = NULL;
  bool ok = true;
  for (int k = 0; k < noutputs && ok; k++) {
    outs[k] = ev_array(ev, tup ? s->tuple[k] : s);
    ok = outs[k] != NULL;
  }
  for (int k = 0; k < carries; k++) cur[k] = ev_ref(a[ninputs + k]);
  for (int64_t t = 0; t < len && ok; t++) {
    int64_t idx = i->scan_is_reverse ? len - 1 - t : t;
    if (!ev_check_time(ev, i)) { ok = false; break; }
    for (int k = 0; k < ninputs && ok; k++) {
      const Shape *ps = c->params[k]->shape;
      int64_t dims[MAX_RANK], sstr[MAX_RANK], dstr[MAX_RANK], step = 0;
      int r = slice_geom(i->ops[k]->shape, sd, dims, sstr, &step);
      dense_strides(r, dims, dstr);
      args[k] = ev_array_nozero(ev, ps);
      if (!args[k]) { ok = false; break; }
      int eb = et_bytes(ps->et);
      ev_copy_strided(r, dims, a[k]->data + idx * step * eb, sstr,
                      args[k]->data, dstr, eb);
    }
    if (!ok) {
      for (int k = 0; k < ninputs; k++) ev_unref(ev, args[k]);
      break;
    }
    for (int k = 0; k < carries; k++) {
      args[ninputs + k] = cur[k];
      cur[k] = NULL;
    }
    EvalValue *r = ev_call_consume(ev, c, nops, args);
    memset(args, 0, (size_t)nops * sizeof *args);
    if (!r) { ok = false; break; }
    if (tup ? r->ntuple != nroots : r->ntuple != 0) {
      ev_unref(ev, r);
      ok = ev_fail(ev, i, EVAL_ERR_INVALID, "scan body returned the wrong arity");
      break;
    }
    for (int k = 0; k < noutputs && ok; k++) {
      EvalValue *v = tup ? r->tuple[k] : r;
      const Shape *os = outs[k]->shape;
      int64_t dims[MAX_RANK], dstr[MAX_RANK], sstr[MAX_RANK], step = 0;
      int rk = slice_geom(os, sd, dims, dstr, &step);
      int eb = et_bytes(os->et);
      int64_t n = 1;
      for (int d = 0; d < rk; d++) n *= dims[d];
      if (!v->data || !v->shape || v->shape->et != os->et ||
          v->nbytes != n * eb) {
        ok = ev_fail(ev, i, EVAL_ERR_INVALID,
                     "scan body output %d does not fit the result", k);
        break;
      }
      dense_strides(rk, dims, sstr);
      ev_copy_strided(rk, dims, v->data, sstr, outs[k]->data + idx * step * eb,
                      dstr, eb);
    }
    for (int k = 0; k < carries && ok; k++)
      cur[k] = ev_ref(tup ? r->tuple[noutputs + k] : r);
    ev_unref(ev, r);
  }
  if (ok) result = tup ? ev_tuple(ev, s, nroots, outs) : ev_ref(outs[0]);
  for (int k = 0; k < nroots; k++) ev_unref(ev, outs[k]);
  free(outs);
  free(args);
  return result;
}
