/*
 * batchnorm_expander.c - "batchnorm_expander" (XLA's BatchNormExpander with
 * the training, inference and grad rewrites on, as XLA:GPU runs it): the
 * batch-norm ops become elementwise arithmetic and reductions, which fusion
 * then handles like any other code.  With C features along feature_index,
 * [C] vectors broadcast along that dimension, N the elements per feature and
 * sums over every other dimension:
 *
 *   inference:  s = scale * rsqrt(var + eps);  y = x * s + (offset - mean * s)
 *   training:   mean = sum(x) / N;  var = sum(x * x) / N - mean * mean;
 *               y = (x - mean) * rsqrt(var + eps) * scale + offset;
 *               result (y, mean, var)
 *   grad:       r = rsqrt(var + eps);  c = x - mean;
 *               grad_offset = sum(dy);  grad_scale = sum(dy * c) * r;
 *               dx = scale * r * (dy - sum(dy) / N - c * sum(dy * c) / N /
 *                    (var + eps));  result (dx, grad_scale, grad_offset)
 *
 * These are XLA's formulas, so the results round as XLA's do.
 */
#include "passes.h"

#include "../lib/hlo/ir_edit.h"

typedef struct Bn {
  IrEdit *e;
  HloComp *c;
  Arena *a;
  const Shape *xs;                /* the operand's shape */
  int64_t feature;
  HloComp *add;                   /* scalar add of the element type */
} Bn;

/* [C] vector v broadcast to the operand's shape. */
static HloInstr *along(Bn *b, HloInstr *v) {
  return ir_broadcast(b->e, b->c, v, b->xs, 1, &b->feature);
}

static HloInstr *bin(Bn *b, HloOp op, HloInstr *x, HloInstr *y) {
  return ir_binary(b->e, b->c, op, x, y);
}

/* Sum of x over every dimension but the feature one: a [C] vector. */
static HloInstr *sum_per_feature(Bn *b, HloInstr *x) {
  int r = b->xs->rank;
  int64_t dims[64];
  int n = 0;
  for (int k = 0; k < r && n < 64; k++)
    if (k != b->feature)
      dims[n++] = k;
  HloInstr *zero = ir_scalar(b->e, b->c, b->xs->et, 0);
  return ir_reduce(b->e, b->c, x, zero, n, dims, b->add);
}

/* A [C] vector (shape of v) filled with v's type's value x. */
static HloInstr *vec_const(Bn *b, const HloInstr *v, double x) {
  return ir_scalar_like(b->e, b->c, v->shape, x);
}

static HloInstr *expand_inference(Bn *b, HloInstr *i) {
  HloInstr *x = i->ops[0], *scale = i->ops[1], *offset = i->ops[2];
  HloInstr *mean = i->ops[3], *var = i->ops[4];
  HloInstr *eps = vec_const(b, var, i->epsilon);
  HloInstr *r = ir_unary(b->e, b->c, HLO_RSQRT, bin(b, HLO_ADD, var, eps));
  HloInstr *s = bin(b, HLO_MULTIPLY, scale, r);
  HloInstr *shift = bin(b, HLO_SUBTRACT, offset, bin(b, HLO_MULTIPLY, mean, s));
  return bin(b, HLO_ADD, bin(b, HLO_MULTIPLY, x, along(b, s)), along(b, shift));
}

static HloInstr *expand_training(Bn *b, HloInstr *i) {
  HloInstr *x = i->ops[0], *scale = i->ops[1], *offset = i->ops[2];
  int64_t n = shape_elements(x->shape) / x->shape->dims[b->feature];
  HloInstr *nv = vec_const(b, scale, (double)n);
  HloInstr *mean = bin(b, HLO_DIVIDE, sum_per_feature(b, x), nv);
  HloInstr *sq = bin(b, HLO_DIVIDE,
                     sum_per_feature(b, bin(b, HLO_MULTIPLY, x, x)), nv);
  HloInstr *var = bin(b, HLO_SUBTRACT, sq, bin(b, HLO_MULTIPLY, mean, mean));
  HloInstr *eps = vec_const(b, scale, i->epsilon);
  HloInstr *r = ir_unary(b->e, b->c, HLO_RSQRT, bin(b, HLO_ADD, var, eps));
  HloInstr *centered = bin(b, HLO_SUBTRACT, x, along(b, mean));
  HloInstr *norm = bin(b, HLO_MULTIPLY, centered, along(b, r));
  HloInstr *y = bin(b, HLO_ADD, bin(b, HLO_MULTIPLY, norm, along(b, scale)),
                    along(b, offset));
  HloInstr *elems[3] = {y, mean, var};
  return ir_tuple(b->e, b->c, 3, elems);
}

static HloInstr *expand_grad(Bn *b, HloInstr *i) {
  HloInstr *x = i->ops[0], *scale = i->ops[1], *mean = i->ops[2];
  HloInstr *var = i->ops[3], *dy = i->ops[4];
  int64_t n = shape_elements(x->shape) / x->shape->dims[b->feature];
  HloInstr *nv = vec_const(b, scale, (double)n);
  HloInstr *eps = vec_const(b, var, i->epsilon);
  HloInstr *var_eps = bin(b, HLO_ADD, var, eps);
  HloInstr *r = ir_unary(b->e, b->c, HLO_RSQRT, var_eps);
  HloInstr *centered = bin(b, HLO_SUBTRACT, x, along(b, mean));
  HloInstr *sum_dy = sum_per_feature(b, dy);
  HloInstr *sum_dyc = sum_per_feature(b, bin(b, HLO_MULTIPLY, dy, centered));
  HloInstr *grad_scale = bin(b, HLO_MULTIPLY, sum_dyc, r);
  HloInstr *mean_dy = bin(b, HLO_DIVIDE, sum_dy, nv);
  HloInstr *k = bin(b, HLO_DIVIDE, bin(b, HLO_DIVIDE, sum_dyc, nv), var_eps);
  HloInstr *inner = bin(b, HLO_SUBTRACT,
                        bin(b, HLO_SUBTRACT, dy, along(b, mean_dy)),
                        bin(b, HLO_MULTIPLY, centered, along(b, k)));
  HloInstr *dx = bin(b, HLO_MULTIPLY, along(b, bin(b, HLO_MULTIPLY, scale, r)),
                     inner);
  HloInstr *elems[3] = {dx, grad_scale, sum_dy};
  return ir_tuple(b->e, b->c, 3, elems);
}

bool pass_batchnorm_expander(HloModule *m, PassContext *ctx) {
  (void)ctx;
  IrEdit *e = ir_begin(m);
  bool changed = false;
  HloComp *adders[ET_COUNT] = {0};
  int ncomps = m->ncomps;
  for (int ci = 0; ci < ncomps; ci++) {
    HloComp *c = m->comps[ci];
    int ninstrs = c->ninstrs;
    for (int k = 0; k < ninstrs; k++) {
      HloInstr *i = c->instrs[k];
      if (ir_removed(i) || ir_has_control_deps(e, i) ||
          (i->op != HLO_BATCH_NORM_INFERENCE &&
           i->op != HLO_BATCH_NORM_TRAINING && i->op != HLO_BATCH_NORM_GRAD))
        continue;
      const Shape *xs = i->ops[0]->shape;
      if (!et_is_float(xs->et) || i->feature_index < 0 ||
          i->feature_index >= xs->rank || xs->dims[i->feature_index] == 0 ||
          xs->rank > 64)
        continue;
      if (!adders[xs->et])
        adders[xs->et] = ir_scalar_binary_comp(e, "add_batchnorm", HLO_ADD,
                                               xs->et);
      Bn b = {e, c, ir_arena(e), xs, i->feature_index, adders[xs->et]};
      HloInstr *r = i->op == HLO_BATCH_NORM_INFERENCE ? expand_inference(&b, i)
                    : i->op == HLO_BATCH_NORM_TRAINING ? expand_training(&b, i)
                                                       : expand_grad(&b, i);
      r->metadata = i->metadata;
      ir_replace(e, i, r);
      changed = true;
    }
  }
  return ir_end(e, changed);
}
