/*
 * tree_reduction.c - reduces in the order XLA's CPU compiler gives them
 * (its TreeReductionRewriter): a reduce with a reduced dimension longer than
 * 32 first reduces windows of up to 32 elements along every reduced
 * dimension, then reduces the partial results:
 *
 *   reduce(x, init), dimensions={1}       x: f16[64,512]
 *     ->  w = reduce-window(x, init), window={size=1x32 stride=1x32}
 *         reduce(w, init), dimensions={1}  w: f16[64,16]
 *
 * Each reduced dimension of length d gets a window and stride of
 * min(d, 32) and XLA's SAME padding (ceil(d / w) windows, the padding split
 * evenly, the odd element at the end); padding positions add nothing.
 * Repeated until every reduced dimension is at most 32, as XLA's
 * simplification fixed point does.  The numbers change, as in XLA: a long
 * f16 or bf16 sum loses much less to rounding, and an init value that is
 * not the reducer's identity is applied once per window and once more.
 *
 * Left alone, as XLA's CPU leaves them: variadic reduces, and, unless
 * asked for them too, the reduces it gives its reduction library (jaxlib
 * 0.10.2, found by compiling probes and reading which reduces stay whole):
 * f32 and f64 ones whose reducer is add, maximum or minimum of its two
 * parameters, over an input of at least 4096 elements.
 *
 * The host target's pass (passes/tree_reduction_rewriter.c) leaves the
 * library reduces to its own vectorized kernels.  The interpreter
 * (xhlo-run --reduction-order=xla-cpu, its default) rewrites them too: the
 * library's order is its own, and one pass in order (the alternative) is
 * the least accurate of all (a sum of 2^25 ones stops at 2^24).  But the
 * library applies the init value once, as a plain reduce does: its windows
 * start from the reducer's identity (-0, -inf, +inf) and only the final
 * reduce takes the init.
 *
 * hlo_one_element_sums, also the interpreter's: a float sum of one element
 * per result with a zero init is that element, as XLA's simplifier makes
 * it before its CPU reduces anything (-0 stays -0).
 */
#include <math.h>

#include "tree_reduction.h"

#include "ir_edit.h"

enum { TREE_WINDOW = 32, LIBRARY_MIN_ELEMENTS = 4096 };

static bool is_param(const HloInstr *i, int n) {
  return i->op == HLO_PARAMETER && i->param_number == n;
}

bool hlo_reduce_is_library(const HloInstr *r) {
  const Shape *in = r->ops[0]->shape;
  ElemType et = r->shape->et;
  if ((et != ET_F32 && et != ET_F64) || r->ops[1]->shape->et != et ||
      r->dims.n == 0 || shape_elements(in) < LIBRARY_MIN_ELEMENTS)
    return false;
  const HloInstr *root = r->called[0]->root;
  if (root->op != HLO_ADD && root->op != HLO_MAXIMUM && root->op != HLO_MINIMUM)
    return false;
  return root->nops == 2 &&
         ((is_param(root->ops[0], 0) && is_param(root->ops[1], 1)) ||
          (is_param(root->ops[0], 1) && is_param(root->ops[1], 0)));
}

static bool reduced(const HloInstr *r, int d) {
  for (int k = 0; k < r->dims.n; k++)
    if (r->dims.v[k] == d)
      return true;
  return false;
}

static bool long_reduced_dim(const HloInstr *r, const Shape *s) {
  for (int d = 0; d < s->rank; d++)
    if (reduced(r, d) && s->dims[d] > TREE_WINDOW)
      return true;
  return false;
}

static bool wants_rewrite(IrEdit *e, const HloInstr *r, bool library_too) {
  if (r->op != HLO_REDUCE || r->nops != 2 || r->ncalled != 1 ||
      !shape_is_array(r->shape) || !shape_is_array(r->ops[0]->shape) ||
      ir_has_control_deps(e, r) || shape_is_dynamic(r->ops[0]->shape))
    return false;
  return long_reduced_dim(r, r->ops[0]->shape) &&
         (library_too || !hlo_reduce_is_library(r));
}

/* The identity of a library reduce's reducer (add, maximum or minimum). */
static double identity(const HloInstr *r) {
  switch (r->called[0]->root->op) {
  case HLO_MAXIMUM: return -INFINITY;
  case HLO_MINIMUM: return INFINITY;
  default: return -0.0; /* -0 + x is x for every x, +0 included */
  }
}

/* One level of the tree: reduce-window(x, init) with windows of up to 32
 * (SAME padding) along the dimensions r reduces. */
static HloInstr *window_level(IrEdit *e, HloComp *c, const HloInstr *r,
                              HloInstr *x, HloInstr *init) {
  Arena *a = ir_arena(e);
  const Shape *in = x->shape;
  Window *w = ARENA_NEW(a, Window);
  w->ndims = in->rank;
  w->dims = ARENA_ARRAY(a, WindowDim, in->rank > 0 ? in->rank : 1);
  int64_t *dims = ARENA_ARRAY(a, int64_t, in->rank > 0 ? in->rank : 1);
  for (int d = 0; d < in->rank; d++) {
    WindowDim *wd = &w->dims[d];
    *wd = (WindowDim){.size = 1, .stride = 1, .base_dilation = 1,
                      .window_dilation = 1};
    dims[d] = in->dims[d];
    if (!reduced(r, d))
      continue;
    int64_t n = in->dims[d];
    int64_t size = n < TREE_WINDOW ? n : TREE_WINDOW;
    int64_t out = size > 0 ? (n + size - 1) / size : 0;
    int64_t pad = out > 0 ? out * size - n : 0;
    wd->size = size > 0 ? size : 1;
    wd->stride = wd->size;
    wd->pad_lo = pad / 2;
    wd->pad_hi = pad - pad / 2;
    dims[d] = out;
  }
  HloInstr *ops[2] = {x, init};
  HloInstr *rw = ir_new(e, c, HLO_REDUCE_WINDOW,
                        shape_array(a, in->et, in->rank, dims), 2, ops);
  rw->window = w;
  rw->ncalled = 1;
  rw->called = ARENA_ARRAY(a, HloComp *, 1);
  rw->called[0] = r->called[0];
  return rw;
}

/* A reduce XLA reduces itself: one level here, the rest at the next round
 * of the fixed point (each level's windows take the init, as XLA's
 * rewriter does).  A library reduce: every level at once from the
 * reducer's identity, the init only in the final reduce. */
static void rewrite(IrEdit *e, HloComp *c, HloInstr *r) {
  HloInstr *x = r->ops[0], *init = r->ops[1];
  if (hlo_reduce_is_library(r)) {
    HloInstr *id = ir_scalar(e, c, init->shape->et, identity(r));
    do
      x = window_level(e, c, r, x, id);
    while (long_reduced_dim(r, x->shape));
  } else {
    x = window_level(e, c, r, x, init);
  }
  HloInstr *nr = ir_reduce(e, c, x, init, r->dims.n, r->dims.v, r->called[0]);
  nr->shape = r->shape;
  ir_replace(e, r, nr);
}

typedef bool (*Wants)(IrEdit *e, const HloInstr *r, bool library_too);
typedef void (*Rewrite)(IrEdit *e, HloComp *c, HloInstr *r);

/* One sweep over the instructions outside fusions: rewrite each that
 * wants it; whether any did. */
static bool sweep(IrEdit *e, HloModule *m, Wants wants, bool library_too,
                  Rewrite rw) {
  bool changed = false;
  for (int ci = 0; ci < m->ncomps; ci++) {
    HloComp *c = m->comps[ci];
    if (c->fusion_instr)
      continue;
    int ninstrs = c->ninstrs;
    for (int k = 0; k < ninstrs; k++) {
      HloInstr *i = c->instrs[k];
      if (ir_removed(i) || !wants(e, i, library_too))
        continue;
      rw(e, c, i);
      changed = true;
    }
  }
  return changed;
}

bool hlo_tree_reductions(HloModule *m, bool library_too) {
  IrEdit *e = ir_begin(m);
  bool changed = false;
  while (sweep(e, m, wants_rewrite, library_too, rewrite))
    changed = true;
  return ir_end(e, changed);
}

/* A float add reduce with one input element per result element (every
 * reduced dimension of size 1) and a constant zero init: XLA's simplifier
 * makes it add(reshape(x), 0) and then reshape(x), so -0 stays -0 where
 * HLO's +0 + -0 gives +0 (torax divides by such a sum: -inf, not +inf). */
static bool one_element_sum(IrEdit *e, const HloInstr *r, bool unused) {
  (void)unused;
  if (r->op != HLO_REDUCE || r->nops != 2 || r->ncalled != 1 ||
      !shape_is_array(r->shape) || !shape_is_array(r->ops[0]->shape) ||
      shape_is_dynamic(r->ops[0]->shape) || !et_is_float(r->shape->et) ||
      r->ops[0]->shape->et != r->shape->et ||
      shape_elements(r->ops[0]->shape) != shape_elements(r->shape) ||
      shape_elements(r->shape) <= 0 || r->ops[1]->op != HLO_CONSTANT ||
      !ir_is_constant_value(r->ops[1], 0.0) || ir_has_control_deps(e, r))
    return false;
  const HloInstr *root = r->called[0]->root;
  return root->op == HLO_ADD && root->nops == 2 &&
         ((is_param(root->ops[0], 0) && is_param(root->ops[1], 1)) ||
          (is_param(root->ops[0], 1) && is_param(root->ops[1], 0)));
}

static void to_reshape(IrEdit *e, HloComp *c, HloInstr *r) {
  HloInstr *x = ir_reshape(e, c, r->ops[0], r->shape->rank, r->shape->dims);
  x->shape = r->shape;
  ir_replace(e, r, x);
}

bool hlo_one_element_sums(HloModule *m) {
  IrEdit *e = ir_begin(m);
  return ir_end(e, sweep(e, m, one_element_sum, false, to_reshape));
}
