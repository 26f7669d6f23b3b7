/*
 * layernorm_expander.c - "onednn-layernorm-expander": XLA:CPU's layer
 * normalization call "__onednn$layernorm"(x, scale, shift) (what its
 * OneDnnOpsRewriter makes of a layer norm; backend_config.h) becomes the
 * HLO it stands for, which every back end compiles:
 *
 *   m = reduce(x, add) / C                  over the last dimension
 *   d = x - broadcast(m)
 *   v = reduce(d * d, add) / C              (the biased variance)
 *   y = scale * d * broadcast(1 / sqrt(v + eps)) + shift
 *
 * computed in f64 and converted to y's type (oneDNN's f32 arithmetic is
 * careful enough to match lib/eval's double to an ulp or two, where plain
 * f32 loses digits to cancellation when a row's values are close); eps
 * from the call's config.  lib/eval computes the call itself, in double.
 */
#include "passes.h"

#include "../lib/hlo/backend_config.h"
#include "../lib/hlo/ir_edit.h"

enum { LN_MAX_RANK = 64 };

static HloInstr *as_type(IrEdit *e, HloComp *c, HloInstr *x, ElemType et) {
  return x->shape->et == et ? x : ir_convert(e, c, x, et);
}

static void expand(IrEdit *e, HloComp *c, HloInstr *i, float eps) {
  Arena *a = ir_arena(e);
  const Shape *xs = i->ops[0]->shape;
  int r = xs->rank;
  ElemType ct = ET_F64;
  int64_t C = xs->dims[r - 1];
  Shape *full = shape_array(a, ct, r, xs->dims);
  Shape *rows = shape_array(a, ct, r - 1, xs->dims);
  int64_t lead[LN_MAX_RANK], last = r - 1;
  for (int k = 0; k < r - 1; k++)
    lead[k] = k;
  HloComp *add = ir_scalar_binary_comp(e, "layernorm_add", HLO_ADD, ct);
  HloInstr *x = as_type(e, c, i->ops[0], ct);
  HloInstr *zero = ir_scalar(e, c, ct, 0.0);
  HloInstr *n = ir_scalar_like(e, c, rows, (double)C);
  HloInstr *mean = ir_binary(e, c, HLO_DIVIDE, ir_reduce(e, c, x, zero, 1, &last, add), n);
  HloInstr *d = ir_binary(e, c, HLO_SUBTRACT, x, ir_broadcast(e, c, mean, full, r - 1, lead));
  HloInstr *sq = ir_binary(e, c, HLO_MULTIPLY, d, d);
  HloInstr *var = ir_binary(e, c, HLO_DIVIDE, ir_reduce(e, c, sq, zero, 1, &last, add), n);
  HloInstr *ve = ir_binary(e, c, HLO_ADD, var, ir_scalar_like(e, c, rows, (double)eps));
  HloInstr *inv = ir_binary(e, c, HLO_DIVIDE, ir_scalar_like(e, c, rows, 1.0),
                            ir_unary(e, c, HLO_SQRT, ve));
  HloInstr *g = ir_broadcast(e, c, as_type(e, c, i->ops[1], ct), full, 1, &last);
  HloInstr *b = ir_broadcast(e, c, as_type(e, c, i->ops[2], ct), full, 1, &last);
  HloInstr *y = ir_binary(e, c, HLO_MULTIPLY, ir_binary(e, c, HLO_MULTIPLY, g, d),
                          ir_broadcast(e, c, inv, full, r - 1, lead));
  y = ir_binary(e, c, HLO_ADD, y, b);
  y = as_type(e, c, y, i->shape->et);
  y->metadata = i->metadata;
  ir_replace(e, i, y);
}

/* The shapes lib/eval takes: float x of rank >= 1, y like x, scale and
 * shift vectors of x's last dimension. */
static bool fits(const HloInstr *i) {
  if (i->nops != 3 || !shape_is_array(i->shape))
    return false;
  const Shape *xs = i->ops[0]->shape;
  if (!shape_is_array(xs) || xs->rank < 1 || xs->rank > LN_MAX_RANK || !et_is_float(xs->et) ||
      !et_is_float(i->shape->et) || !shape_compatible(i->shape, xs))
    return false;
  for (int k = 1; k < 3; k++) {
    const Shape *v = i->ops[k]->shape;
    if (!shape_is_array(v) || v->rank != 1 || v->dims[0] != xs->dims[xs->rank - 1] ||
        !et_is_float(v->et))
      return false;
  }
  return true;
}

bool pass_onednn_layernorm_expander(HloModule *m, PassContext *ctx) {
  IrEdit *e = ir_begin(m);
  bool changed = false, ok = true;
  for (int ci = 0; ci < m->ncomps && ok; ci++) {
    HloComp *c = m->comps[ci];
    int n = c->ninstrs;
    for (int k = 0; k < n && ok; k++) {
      HloInstr *i = c->instrs[k];
      if (ir_removed(i) || !layer_norm_call(i) || ir_has_control_deps(e, i) || !fits(i))
        continue;
      float eps;
      if (!(ok = layer_norm_config_parse(i, &eps, ctx->diag)))
        break;
      expand(e, c, i, eps);
      changed = true;
    }
  }
  return ir_end(e, changed) && ok;
}
