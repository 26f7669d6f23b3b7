/*
 * batchnorm.c - batch-norm-inference, batch-norm-training and
 * batch-norm-grad, and XLA:CPU's layer normalization call, with the formulas of XLA's operation semantics (the ones
 * its BatchNormExpander builds), computed in double per feature and rounded
 * once to the element type.
 *
 *   inference: y = scale * (x - mean) / sqrt(var + eps) + offset
 *   training:  mean and (biased) variance over every dimension but the
 *              feature one; returns (y, mean, var)
 *   grad:      with N elements per feature and xc = x - mean,
 *              grad_offset  = sum(dy)
 *              grad_scale   = sum(dy * xc) / sqrt(var + eps)
 *              grad_operand = scale / sqrt(var + eps) *
 *                             (dy - grad_offset / N - xc * sum(dy * xc) / (N * (var + eps)))
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../hlo/backend_config.h"
#include "evalp.h"

typedef struct BnGeom {
  int64_t C, inner, outer, per;   /* features; elements after / before; per feature */
} BnGeom;

static bool bn_geom(Eval *ev, const HloInstr *i, const Shape *x, BnGeom *g) {
  int64_t f = i->feature_index;
  if (!shape_is_array(x) || !et_is_float(x->et) || f < 0 || f >= x->rank)
    return ev_fail(ev, i, EVAL_ERR_INVALID, "bad operand or feature_index");
  g->C = x->dims[f];
  g->inner = 1;
  g->outer = 1;
  for (int k = (int)f + 1; k < x->rank; k++) g->inner *= x->dims[k];
  for (int k = 0; k < f; k++) g->outer *= x->dims[k];
  g->per = g->inner * g->outer;
  return true;
}

static bool per_feature(Eval *ev, const HloInstr *i, int k, int64_t C) {
  const Shape *s = i->ops[k]->shape;
  if (!shape_is_array(s) || s->rank != 1 || s->dims[0] != C || !et_is_float(s->et))
    return ev_fail(ev, i, EVAL_ERR_INVALID, "operand %d is not a per-feature vector", k);
  return true;
}

#define AT(c, o, in) (((o) * g.C + (c)) * g.inner + (in))

static double get(const EvalValue *v, ElemType et, int64_t k) {
  return ev_get_f64(et, v->data + k * et_bytes(et));
}

static void set(EvalValue *v, ElemType et, int64_t k, double x) {
  ev_set_f64(et, v->data + k * et_bytes(et), x);
}

static EvalValue *tuple3(Eval *ev, const HloInstr *i, EvalValue **el) {
  EvalValue *t = ev_tuple(ev, i->shape, 3, el);
  for (int k = 0; k < 3; k++) ev_unref(ev, el[k]);
  return t;
}

static bool tuple3_shape(Eval *ev, const HloInstr *i) {
  const Shape *s = i->shape;
  if (s->et != ET_TUPLE || s->ntuple != 3 || !shape_is_array(s->tuple[0]) ||
      !shape_is_array(s->tuple[1]) || !shape_is_array(s->tuple[2]))
    return ev_fail(ev, i, EVAL_ERR_INVALID, "result is not a 3-tuple of arrays");
  return true;
}

EvalValue *eval_batch_norm(Eval *ev, const HloInstr *i, EvalValue *const *a) {
  const Shape *xs = i->ops[0]->shape;
  BnGeom g = {0, 1, 1, 1};
  if (!bn_geom(ev, i, xs, &g)) return NULL;
  ElemType et = xs->et;
  double eps = (float)i->epsilon;   /* epsilon is an f32 attribute */
  if (i->op == HLO_BATCH_NORM_INFERENCE) {
    for (int k = 1; k < 5; k++)
      if (!per_feature(ev, i, k, g.C)) return NULL;
    if (!shape_is_array(i->shape) || ev_elems(i->shape) != ev_elems(xs)) {
      ev_fail(ev, i, EVAL_ERR_INVALID, "result does not match the operand");
      return NULL;
    }
    EvalValue *y = ev_array_nozero(ev, i->shape);
    if (!y) return NULL;
    for (int64_t c = 0; c < g.C; c++) {
      double sc = get(a[1], i->ops[1]->shape->et, c), of = get(a[2], i->ops[2]->shape->et, c);
      double mu = get(a[3], i->ops[3]->shape->et, c), var = get(a[4], i->ops[4]->shape->et, c);
      double inv = 1.0 / sqrt(var + eps);
      for (int64_t o = 0; o < g.outer; o++)
        for (int64_t in = 0; in < g.inner; in++) {
          int64_t k = AT(c, o, in);
          set(y, i->shape->et, k, sc * (get(a[0], et, k) - mu) * inv + of);
        }
    }
    return y;
  }
  if (!tuple3_shape(ev, i)) return NULL;
  const Shape *rs = i->shape;
  if (i->op == HLO_BATCH_NORM_TRAINING) {
    for (int k = 1; k < 3; k++)
      if (!per_feature(ev, i, k, g.C)) return NULL;
    if (ev_elems(rs->tuple[0]) != ev_elems(xs) || ev_elems(rs->tuple[1]) != g.C ||
        ev_elems(rs->tuple[2]) != g.C) {
      ev_fail(ev, i, EVAL_ERR_INVALID, "result shapes do not match the operand");
      return NULL;
    }
    EvalValue *el[3] = {ev_array_nozero(ev, rs->tuple[0]), NULL, NULL};
    if (el[0]) el[1] = ev_array_nozero(ev, rs->tuple[1]);
    if (el[1]) el[2] = ev_array_nozero(ev, rs->tuple[2]);
    if (!el[2]) {
      for (int k = 0; k < 3; k++) ev_unref(ev, el[k]);
      return NULL;
    }
    for (int64_t c = 0; c < g.C; c++) {
      double sum = 0, sq = 0;
      for (int64_t o = 0; o < g.outer; o++)
        for (int64_t in = 0; in < g.inner; in++) sum += get(a[0], et, AT(c, o, in));
      double mu = g.per ? sum / (double)g.per : 0;
      for (int64_t o = 0; o < g.outer; o++)
        for (int64_t in = 0; in < g.inner; in++) {
          double dv = get(a[0], et, AT(c, o, in)) - mu;
          sq += dv * dv;
        }
      double var = g.per ? sq / (double)g.per : 0;
      double sc = get(a[1], i->ops[1]->shape->et, c), of = get(a[2], i->ops[2]->shape->et, c);
      double inv = 1.0 / sqrt(var + eps);
      for (int64_t o = 0; o < g.outer; o++)
        for (int64_t in = 0; in < g.inner; in++) {
          int64_t k = AT(c, o, in);
          set(el[0], rs->tuple[0]->et, k, sc * (get(a[0], et, k) - mu) * inv + of);
        }
      set(el[1], rs->tuple[1]->et, c, mu);
      set(el[2], rs->tuple[2]->et, c, var);
    }
    return tuple3(ev, i, el);
  }
  /* batch-norm-grad(operand, scale, mean, variance, grad_output) */
  for (int k = 1; k < 4; k++)
    if (!per_feature(ev, i, k, g.C)) return NULL;
  if (ev_elems(i->ops[4]->shape) != ev_elems(xs) || ev_elems(rs->tuple[0]) != ev_elems(xs) ||
      ev_elems(rs->tuple[1]) != g.C || ev_elems(rs->tuple[2]) != g.C) {
    ev_fail(ev, i, EVAL_ERR_INVALID, "shapes do not match the operand");
    return NULL;
  }
  ElemType dt = i->ops[4]->shape->et;
  EvalValue *el[3] = {ev_array_nozero(ev, rs->tuple[0]), NULL, NULL};
  if (el[0]) el[1] = ev_array_nozero(ev, rs->tuple[1]);
  if (el[1]) el[2] = ev_array_nozero(ev, rs->tuple[2]);
  if (!el[2]) {
    for (int k = 0; k < 3; k++) ev_unref(ev, el[k]);
    return NULL;
  }
  for (int64_t c = 0; c < g.C; c++) {
    double sc = get(a[1], i->ops[1]->shape->et, c), mu = get(a[2], i->ops[2]->shape->et, c);
    double var = get(a[3], i->ops[3]->shape->et, c);
    double sdy = 0, sdyxc = 0;
    for (int64_t o = 0; o < g.outer; o++)
      for (int64_t in = 0; in < g.inner; in++) {
        int64_t k = AT(c, o, in);
        double dy = get(a[4], dt, k);
        sdy += dy;
        sdyxc += dy * (get(a[0], et, k) - mu);
      }
    double n = (double)g.per, ve = var + eps, inv = 1.0 / sqrt(ve);
    for (int64_t o = 0; o < g.outer; o++)
      for (int64_t in = 0; in < g.inner; in++) {
        int64_t k = AT(c, o, in);
        double dy = get(a[4], dt, k), xc = get(a[0], et, k) - mu;
        double gx = n > 0 ? sc * inv * (dy - sdy / n - xc * sdyxc / (n * ve)) : 0;
        set(el[0], rs->tuple[0]->et, k, gx);
      }
    set(el[1], rs->tuple[1]->et, c, sdyxc * inv);
    set(el[2], rs->tuple[2]->et, c, sdy);
  }
  return tuple3(ev, i, el);
}

/*
 * XLA:CPU's "__onednn$layernorm"(x, scale, shift): oneDNN's layer
 * normalization over the last dimension of x (C elements per row), in
 * double: with mean and (biased) variance of the row,
 *   y = scale * (x - mean) / sqrt(var + eps) + shift
 * eps from the call's config (layer_norm_config_parse).
 */
EvalValue *eval_onednn_layer_norm(Eval *ev, const HloInstr *i, EvalValue *const *a) {
  const Shape *x = i->nops == 3 ? i->ops[0]->shape : NULL, *s = i->shape;
  if (!x || !shape_is_array(x) || x->rank < 1 || !et_is_float(x->et) || !shape_is_array(s) ||
      !shape_compatible(s, x)) {
    ev_fail(ev, i, EVAL_ERR_INVALID, "__onednn$layernorm takes (x, scale, shift) -> like x");
    return NULL;
  }
  int64_t C = x->dims[x->rank - 1];
  if (!per_feature(ev, i, 1, C) || !per_feature(ev, i, 2, C)) return NULL;
  float eps;
  Diag d = {0};
  if (!layer_norm_config_parse(i, &eps, &d)) {
    ev_fail(ev, i, EVAL_ERR_INVALID, "%s", d.msg ? d.msg : "bad config");
    diag_clear(&d);
    return NULL;
  }
  EvalValue *r = ev_array_nozero(ev, s);
  if (!r) return NULL;
  int64_t rows = C ? ev_elems(x) / C : 0;
  ElemType xe = x->et, se = i->ops[1]->shape->et, he = i->ops[2]->shape->et;
  for (int64_t rw = 0; rw < rows; rw++) {
    double mean = 0, var = 0;
    for (int64_t c = 0; c < C; c++) mean += get(a[0], xe, rw * C + c);
    mean /= (double)C;
    for (int64_t c = 0; c < C; c++) {
      double dx = get(a[0], xe, rw * C + c) - mean;
      var += dx * dx;
    }
    var /= (double)C;
    double inv = 1.0 / sqrt(var + (double)eps);
    for (int64_t c = 0; c < C; c++)
      set(r, s->et, rw * C + c,
          get(a[1], se, c) * (get(a[0], xe, rw * C + c) - mean) * inv + get(a[2], he, c));
  }
  return r;
}
