/*
 * comparison_expander.c - "comparison-expander" (XLA's ComparisonExpander):
 * a floating-point comparison with type=TOTALORDER becomes a signed integer
 * comparison of the operands' bits, each mapped so that integer order is
 * the total order (-NaN < -inf < ... < -0 < +0 < ... < inf < NaN):
 *
 *   bits = bitcast-convert(x) to sN
 *   key  = bits < 0 ? INT_MAX - bits : bits     (wrapping)
 *   compare(key(a), key(b)), direction as before, type=SIGNED
 */
#include "passes.h"

#include "../lib/hlo/ir_edit.h"

static ElemType int_of_width(int bits) {
  switch (bits) {
  case 8: return ET_S8;
  case 16: return ET_S16;
  case 32: return ET_S32;
  case 64: return ET_S64;
  default: return ET_INVALID;
  }
}

static HloInstr *ordered_key(IrEdit *e, HloComp *c, HloInstr *x, ElemType it) {
  Arena *a = ir_arena(e);
  HloInstr *bits = ir_new(e, c, HLO_BITCAST_CONVERT,
                          ir_shape_with_et(a, x->shape, it), 1, &x);
  HloInstr *zero = ir_scalar_like(e, c, bits->shape, 0);
  int w = et_bits(it);
  double maxv = w == 64 ? 9223372036854775807.0 : (double)((1LL << (w - 1)) - 1);
  HloInstr *maxk;
  if (w == 64) {
    /* INT64_MAX is not exact in a double: set it as an integer. */
    Literal *l = literal_new(a, shape_scalar(a, it));
    literal_set_s64(l, 0, INT64_MAX);
    maxk = ir_constant(e, c, l);
    if (bits->shape->rank > 0)
      maxk = ir_broadcast(e, c, maxk, bits->shape, 0, NULL);
  } else {
    maxk = ir_scalar_like(e, c, bits->shape, maxv);
  }
  HloInstr *neg = ir_compare(e, c, CMP_LT, bits, zero);
  neg->cmp_type = CMPT_SIGNED;
  HloInstr *flipped = ir_binary(e, c, HLO_SUBTRACT, maxk, bits);
  return ir_select(e, c, neg, flipped, bits);
}

bool pass_comparison_expander(HloModule *m, PassContext *ctx) {
  (void)ctx;
  IrEdit *e = ir_begin(m);
  bool changed = false;
  for (int ci = 0; ci < m->ncomps; ci++) {
    HloComp *c = m->comps[ci];
    int ninstrs = c->ninstrs;
    for (int k = 0; k < ninstrs; k++) {
      HloInstr *i = c->instrs[k];
      if (ir_removed(i) || i->op != HLO_COMPARE ||
          i->cmp_type != CMPT_TOTALORDER || ir_has_control_deps(e, i))
        continue;
      ElemType et = i->ops[0]->shape->et;
      /* Formats without a sign bit or with an unsigned-zero NaN (fnuz,
       * e8m0) do not order by their bits this way. */
      bool signed_fmt = et_is_float(et) && et != ET_F8E4M3FNUZ &&
                        et != ET_F8E5M2FNUZ && et != ET_F8E4M3B11FNUZ &&
                        et != ET_F8E8M0FNU;
      ElemType it = signed_fmt ? int_of_width(et_bits(et)) : ET_INVALID;
      if (it == ET_INVALID)
        continue;
      HloInstr *ka = ordered_key(e, c, i->ops[0], it);
      HloInstr *kb = ordered_key(e, c, i->ops[1], it);
      HloInstr *r = ir_compare(e, c, i->cmp_dir, ka, kb);
      r->cmp_type = CMPT_SIGNED;
      r->metadata = i->metadata;
      ir_replace(e, i, r);
      changed = true;
    }
  }
  return ir_end(e, changed);
}
