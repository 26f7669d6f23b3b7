/*
 * scaled_dot_rewriter.c - "scaled-dot-rewriter" (XLA's ScaledDotRewriter):
 * a scaled-dot becomes a dot of dequantized operands, in the types
 * lib/eval/scaled_dot.c documents:
 *
 *   for each side (x, s of x's rank, as the verifier requires):
 *     T1 = target(x, s);
 *     x' = convert(x, T1) * scale, where scale is convert(s, T1) with
 *       every scale element covering a block of x: broadcast to
 *       [s0, b0, s1, b1, ...] (b_d = x_d / s_d) and reshaped to x's shape;
 *   T2 = target(T1 lhs, T1 rhs), both sides converted to T2;
 *   dot(lhs, rhs) -> target(T2, result type), with the scaled-dot's
 *     dimension numbers, converted to the result type.
 *
 * target(a, b): bf16 when both are narrower than 16 bits, a when a == b,
 * f32 when the widths match but the types differ, else the wider.  Shapes
 * the interpreter refuses (non-float, scales that do not divide) are left
 * alone.
 */
#include "passes.h"

#include <string.h>

#include "../lib/hlo/ir_edit.h"

enum { SD_MAX_RANK = 32 };

static ElemType target_type(ElemType a, ElemType b) {
  int wa = et_bits(a), wb = et_bits(b);
  if (wa < 16 && wb < 16) return ET_BF16;
  if (a == b) return a;
  if (wa == wb) return ET_F32;
  return wa > wb ? a : b;
}

static bool side_ok(const Shape *x, const Shape *s) {
  if (!shape_is_array(x) || !shape_is_array(s) || !et_is_float(x->et) ||
      !et_is_float(s->et) || et_is_complex(x->et) || et_is_complex(s->et) ||
      x->rank > SD_MAX_RANK)
    return false;
  if (s->rank != x->rank)
    return false;
  for (int d = 0; d < x->rank; d++)
    if (s->dims[d] <= 0 || x->dims[d] % s->dims[d])
      return false;
  return true;
}

static HloInstr *convert_to(IrEdit *e, HloComp *c, HloInstr *x, ElemType t) {
  return x->shape->et == t ? x : ir_convert(e, c, x, t);
}

/* x * broadcast(scale) in T1; *t gets T1. */
static HloInstr *dequantize(IrEdit *e, HloComp *c, HloInstr *x, HloInstr *s,
                            ElemType *t) {
  *t = target_type(x->shape->et, s->shape->et);
  HloInstr *xc = convert_to(e, c, x, *t), *sc = convert_to(e, c, s, *t);
  const Shape *xs = xc->shape;
  int r = xs->rank;
  int64_t wide[2 * SD_MAX_RANK], bdims[SD_MAX_RANK];
  for (int d = 0; d < r; d++) {
    wide[2 * d] = s->shape->dims[d];
    wide[2 * d + 1] = xs->dims[d] / s->shape->dims[d];
    bdims[d] = 2 * d;
  }
  Shape *ws = shape_array(c->module->arena, *t, 2 * r, wide);
  HloInstr *sb = ir_broadcast(e, c, sc, ws, r, bdims);
  sb = ir_reshape(e, c, sb, r, xs->dims);
  return ir_binary(e, c, HLO_MULTIPLY, xc, sb);
}

bool pass_scaled_dot_rewriter(HloModule *m, PassContext *ctx) {
  (void)ctx;
  IrEdit *e = ir_begin(m);
  bool changed = false;
  for (int ci = 0; ci < m->ncomps; ci++) {
    HloComp *c = m->comps[ci];
    for (int k = 0; k < c->ninstrs; k++) {
      HloInstr *i = c->instrs[k];
      if (ir_removed(i) || i->op != HLO_SCALED_DOT || i->nops != 4 || !i->dot ||
          ir_has_control_deps(e, i) || !shape_is_array(i->shape) ||
          !et_is_float(i->shape->et) || et_is_complex(i->shape->et) ||
          !side_ok(i->ops[0]->shape, i->ops[2]->shape) ||
          !side_ok(i->ops[1]->shape, i->ops[3]->shape))
        continue;
      ElemType lt, rt;
      HloInstr *l = dequantize(e, c, i->ops[0], i->ops[2], &lt);
      HloInstr *r = dequantize(e, c, i->ops[1], i->ops[3], &rt);
      ElemType t2 = target_type(lt, rt);
      l = convert_to(e, c, l, t2);
      r = convert_to(e, c, r, t2);
      ElemType t3 = target_type(t2, i->shape->et);
      HloInstr *ops[2] = {l, r};
      HloInstr *d = ir_new(e, c, HLO_DOT, ir_shape_with_et(m->arena, i->shape, t3), 2, ops);
      d->dot = i->dot;
      d->metadata = i->metadata;
      HloInstr *res = convert_to(e, c, d, i->shape->et);
      ir_replace(e, i, res);
      changed = true;
    }
  }
  return ir_end(e, changed);
}
