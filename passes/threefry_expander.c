/*
 * threefry_expander.c - "threefry-expander": JAX's GPU Threefry kernel, the
 * custom-call cu_threefry2x32 (jax.random on a GPU writes it; its _ffi and
 * ROCm forms too), becomes the plain u32 arithmetic it computes, so that
 * both backends compile it and the bits are those of the kernel:
 *
 *   ks = (k0, k1, k0 ^ k1 ^ 0x1BD11BDA)
 *   x0 += ks[0]; x1 += ks[1]
 *   for g in 0..4:
 *     4 rounds with rotations (13, 15, 26, 6) for even g,
 *       (17, 29, 16, 24) for odd g; a round of rotation r is
 *       x0 += x1; x1 = rotl(x1, r) ^ x0
 *     x0 += ks[(g + 1) % 3]; x1 += ks[(g + 2) % 3] + g + 1
 *
 * rotl(v, r) = (v << r) | (v >> (32 - r)).  The result is tuple(x0, x1).
 * A call of another shape than lib/hlo/custom_call_targets.c accepts is
 * left for the backend to report.
 */
#include "passes.h"

#include "../lib/hlo/ir_edit.h"

static HloInstr *u32_like(IrEdit *e, HloComp *c, const HloInstr *x, uint32_t v) {
  return ir_scalar_like(e, c, x->shape, (double)v);
}

static HloInstr *rotl(IrEdit *e, HloComp *c, HloInstr *v, int r) {
  HloInstr *hi = ir_binary(e, c, HLO_SHIFT_LEFT, v, u32_like(e, c, v, (uint32_t)r));
  HloInstr *lo = ir_binary(e, c, HLO_SHIFT_RIGHT_LOGICAL, v,
                           u32_like(e, c, v, (uint32_t)(32 - r)));
  return ir_binary(e, c, HLO_OR, hi, lo);
}

static void expand(IrEdit *e, HloComp *c, HloInstr *i) {
  static const int rot[2][4] = {{13, 15, 26, 6}, {17, 29, 16, 24}};
  HloInstr *k0 = i->ops[0], *k1 = i->ops[1];
  HloInstr *ks[3] = {k0, k1, NULL};
  ks[2] = ir_binary(e, c, HLO_XOR, ir_binary(e, c, HLO_XOR, k0, k1),
                    u32_like(e, c, k0, 0x1BD11BDAu));
  HloInstr *x0 = ir_binary(e, c, HLO_ADD, i->ops[2], ks[0]);
  HloInstr *x1 = ir_binary(e, c, HLO_ADD, i->ops[3], ks[1]);
  for (int g = 0; g < 5; g++) {
    for (int r = 0; r < 4; r++) {
      x0 = ir_binary(e, c, HLO_ADD, x0, x1);
      x1 = ir_binary(e, c, HLO_XOR, rotl(e, c, x1, rot[g % 2][r]), x0);
    }
    x0 = ir_binary(e, c, HLO_ADD, x0, ks[(g + 1) % 3]);
    HloInstr *inc = ir_binary(e, c, HLO_ADD, ks[(g + 2) % 3],
                              u32_like(e, c, x1, (uint32_t)(g + 1)));
    x1 = ir_binary(e, c, HLO_ADD, x1, inc);
  }
  HloInstr *y[2] = {x0, x1};
  for (int k = 0; k < 2; k++)
    if (!shape_equal(y[k]->shape, i->shape->tuple[k]))
      y[k] = ir_new(e, c, HLO_COPY, i->shape->tuple[k], 1, &y[k]);
  ir_replace(e, i, ir_tuple(e, c, 2, y));
}

bool pass_threefry_expander(HloModule *m, PassContext *ctx) {
  (void)ctx;
  IrEdit *e = ir_begin(m);
  bool changed = false;
  for (int ci = 0; ci < m->ncomps; ci++) {
    HloComp *c = m->comps[ci];
    int n = c->ninstrs; /* the expansion appends; those need no visit */
    for (int k = 0; k < n; k++) {
      HloInstr *i = c->instrs[k];
      if (ir_removed(i) || i->op != HLO_CUSTOM_CALL ||
          !custom_call_is_threefry(i) || ir_has_control_deps(e, i))
        continue;
      expand(e, c, i);
      changed = true;
    }
  }
  return ir_end(e, changed);
}
