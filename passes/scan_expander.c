/*
 * scan_expander.c - "scan-expander": a scan becomes the while loop that
 * computes it, which every back end runs (lib/eval/scan.c gives the
 * semantics).
 *
 *   scan(x_0..x_{ni-1}, init_0..init_{nc-1}), dimensions={d},
 *        num_carries=nc, is_reverse=r, to_apply=body
 *
 * becomes a while over the state (t, x..., y..., c...) with t an s32 from
 * 0, the inputs x carried unchanged, one accumulator y per output (zeros to
 * start) and the carries c (the inits to start); while t < len:
 *
 *   i    = r ? len - 1 - t : t
 *   a_k  = reshape(dynamic-slice(x_k, 0.., i, 0..))   (dimension d dropped)
 *   outs, c' = body(a..., c...)                        (inlined)
 *   y_j  = dynamic-update-slice(y_j, reshape(out_j), 0.., i, 0..)
 *   t    = t + 1
 *
 * and the scan's result is (y..., c...), or its one element when the body
 * does not return a tuple.  Steps run in order whatever is_associative
 * says, as in the interpreter.
 */
#include "passes.h"

#include <string.h>

#include "../lib/hlo/ir_edit.h"

enum { SCAN_MAX_RANK = 64 };

/* s with dimension d removed (rank - 1), or set to 1 (keep). */
static Shape *drop_dim(Arena *a, const Shape *s, int64_t d, bool keep) {
  int64_t dims[SCAN_MAX_RANK];
  int n = 0;
  for (int k = 0; k < s->rank; k++) {
    if (k == d && !keep)
      continue;
    dims[n++] = k == d ? 1 : s->dims[k];
  }
  return shape_array(a, s->et, n, dims);
}

/* The start indices of a slice at i along d of a rank-r array. */
static void starts(IrEdit *e, HloComp *c, int r, int64_t d, HloInstr *i, HloInstr **out) {
  HloInstr *zero = ir_scalar(e, c, ET_S32, 0.0);
  for (int k = 0; k < r; k++)
    out[k] = k == d ? i : zero;
}

/* Whether the scan is one the expansion takes (lib/eval's checks). */
static bool fits(const HloInstr *s, int *ni, int *no, int64_t *len) {
  const HloComp *body = s->ncalled == 1 ? s->called[0] : NULL;
  int64_t nc = s->scan_num_carries;
  bool tup = shape_is_tuple(s->shape);
  int nroots = tup ? s->shape->ntuple : 1;
  if (!body || !body->root || s->dims.n != 1 || nc < 0 || nc > s->nops || nc > nroots ||
      body->nparams != s->nops)
    return false;
  if (tup != shape_is_tuple(body->root->shape))
    return false;
  int64_t d = s->dims.v[0];
  *ni = s->nops - (int)nc;
  *no = nroots - (int)nc;
  *len = -1;
  for (int k = 0; k < *ni; k++) {
    const Shape *is = s->ops[k]->shape;
    if (!shape_is_array(is) || d < 0 || d >= is->rank || is->rank > SCAN_MAX_RANK ||
        (*len >= 0 && is->dims[d] != *len))
      return false;
    *len = is->dims[d];
  }
  for (int k = 0; k < *no; k++) {
    const Shape *os = tup ? s->shape->tuple[k] : s->shape;
    if (!shape_is_array(os) || d < 0 || d >= os->rank || os->rank > SCAN_MAX_RANK ||
        (*len >= 0 && os->dims[d] != *len))
      return false;
    *len = os->dims[d];
  }
  return *len >= 0 && *len <= INT32_MAX;
}

static void expand(IrEdit *e, HloComp *c, HloInstr *s, int ni, int no, int64_t len) {
  Arena *a = ir_arena(e);
  const HloComp *body = s->called[0];
  int nc = (int)s->scan_num_carries;
  int64_t d = s->dims.v[0];
  bool tup = shape_is_tuple(s->shape);
  int n = 1 + ni + no + nc;        /* state: t, inputs, accumulators, carries */
  Shape **es = ARENA_ARRAY(a, Shape *, n);
  HloInstr **init = ARENA_ARRAY(a, HloInstr *, n);
  es[0] = shape_scalar(a, ET_S32);
  init[0] = ir_scalar(e, c, ET_S32, 0.0);
  for (int k = 0; k < ni; k++) {
    es[1 + k] = shape_clone(a, s->ops[k]->shape);
    init[1 + k] = s->ops[k];
  }
  for (int j = 0; j < no; j++) {
    const Shape *os = tup ? s->shape->tuple[j] : s->shape;
    es[1 + ni + j] = shape_clone(a, os);
    init[1 + ni + j] = ir_scalar_like(e, c, os, 0.0);
  }
  for (int k = 0; k < nc; k++) {
    es[1 + ni + no + k] = shape_clone(a, s->ops[ni + k]->shape);
    init[1 + ni + no + k] = s->ops[ni + k];
  }
  Shape *st = shape_tuple(a, n, es);

  /* condition: t < len */
  HloComp *cond = ir_new_comp(e, "scan_condition");
  cond->execution_thread = c->execution_thread;
  HloInstr *cp = ir_add_param(e, cond, st, "state");
  cond->root = ir_compare(e, cond, CMP_LT, ir_gte(e, cond, cp, 0),
                          ir_scalar(e, cond, ET_S32, (double)len));

  /* body */
  HloComp *wb = ir_new_comp(e, "scan_body");
  wb->execution_thread = c->execution_thread;
  HloInstr *bp = ir_add_param(e, wb, st, "state");
  HloInstr *t = ir_gte(e, wb, bp, 0);
  HloInstr *i = s->scan_is_reverse
                    ? ir_binary(e, wb, HLO_SUBTRACT, ir_scalar(e, wb, ET_S32, (double)(len - 1)), t)
                    : t;
  HloInstr **args = ARENA_ARRAY(a, HloInstr *, s->nops > 0 ? s->nops : 1);
  HloInstr *idx[SCAN_MAX_RANK + 1];
  for (int k = 0; k < ni; k++) {
    HloInstr *x = ir_gte(e, wb, bp, 1 + k);
    const Shape *xs = x->shape;
    idx[0] = x;
    starts(e, wb, xs->rank, d, i, idx + 1);
    HloInstr *ds = ir_new(e, wb, HLO_DYNAMIC_SLICE, drop_dim(a, xs, d, true), 1 + xs->rank, idx);
    ds->dynamic_slice_sizes.n = xs->rank;
    ds->dynamic_slice_sizes.v = ARENA_ARRAY(a, int64_t, xs->rank);
    for (int q = 0; q < xs->rank; q++)
      ds->dynamic_slice_sizes.v[q] = q == d ? 1 : xs->dims[q];
    const Shape *ps = drop_dim(a, xs, d, false);
    args[k] = ir_reshape(e, wb, ds, ps->rank, ps->dims);
  }
  for (int k = 0; k < nc; k++)
    args[ni + k] = ir_gte(e, wb, bp, 1 + ni + no + k);
  HloInstr *r = ir_inline(e, wb, body, args);
  HloInstr **next = ARENA_ARRAY(a, HloInstr *, n);
  next[0] = ir_binary(e, wb, HLO_ADD, t, ir_scalar(e, wb, ET_S32, 1.0));
  for (int k = 0; k < ni; k++)
    next[1 + k] = ir_gte(e, wb, bp, 1 + k);
  for (int j = 0; j < no + nc; j++) {
    HloInstr *v = tup ? ir_gte(e, wb, r, j) : r;
    if (j >= no) {
      next[1 + ni + j] = v;
      continue;
    }
    HloInstr *acc = ir_gte(e, wb, bp, 1 + ni + j);
    const Shape *us = drop_dim(a, acc->shape, d, true);
    idx[0] = acc;
    idx[1] = ir_reshape(e, wb, v, us->rank, us->dims);
    starts(e, wb, acc->shape->rank, d, i, idx + 2);
    next[1 + ni + j] = ir_new(e, wb, HLO_DYNAMIC_UPDATE_SLICE, shape_clone(a, acc->shape),
                              2 + acc->shape->rank, idx);
  }
  wb->root = ir_tuple(e, wb, n, next);

  /* the loop, and the scan's result from its state */
  HloInstr *it = ir_tuple(e, c, n, init);
  HloInstr *w = ir_new(e, c, HLO_WHILE, st, 1, &it);
  w->ncalled = 2;
  w->called = ARENA_ARRAY(a, HloComp *, 2);
  w->called[0] = cond;
  w->called[1] = wb;
  ir_note_calls(e, cond, +1);
  ir_note_calls(e, wb, +1);
  w->metadata = s->metadata;
  HloInstr **res = ARENA_ARRAY(a, HloInstr *, no + nc > 0 ? no + nc : 1);
  for (int j = 0; j < no + nc; j++)
    res[j] = ir_gte(e, c, w, 1 + ni + j);
  HloInstr *out = tup ? ir_tuple(e, c, no + nc, res) : res[0];
  ir_note_calls(e, body, -1);
  ir_replace(e, s, out);
}

bool pass_scan_expander(HloModule *m, PassContext *ctx) {
  (void)ctx;
  IrEdit *e = ir_begin(m);
  bool changed = false;
  for (int ci = 0; ci < m->ncomps; ci++) {
    HloComp *c = m->comps[ci];
    int n = c->ninstrs;
    for (int k = 0; k < n; k++) {
      HloInstr *s = c->instrs[k];
      int ni, no;
      int64_t len;
      if (ir_removed(s) || s->op != HLO_SCAN || ir_has_control_deps(e, s) ||
          !fits(s, &ni, &no, &len))
        continue;
      expand(e, c, s, ni, no, len);
      changed = true;
    }
  }
  if (changed)
    ir_remove_unused_comps(e);
  return ir_end(e, changed);
}
