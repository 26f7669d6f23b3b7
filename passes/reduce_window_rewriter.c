/*
 * reduce_window_rewriter.c - "reduce-window-rewriter" (XLA's
 * ReduceWindowRewriter, its scan rewrite): a reduce-window that is a prefix
 * scan becomes a blocked scan.
 *
 * JAX writes cumsum, cumprod, cummax, cummin and cumlogsumexp along a
 * dimension of length n as a reduce-window whose window spans the whole
 * dimension, padded on one side:
 *
 *   reduce-window(x, 0), window={size=1xN pad=0_0xN-1_0}, to_apply=add
 *
 * (pad 0_N-1 for reverse=True).  Evaluated as written that is n * n / 2
 * applications of the reducer.  With B = 16 (XLA's default
 * xla_reduce_window_rewrite_base_length) and n > B the scan along dimension
 * d becomes, for a forward scan:
 *
 *   1. pad d with the init value up to m * B (m = ceil(n / B));
 *   2. reshape d into [m, B] (dimensions d and d+1; no transpose);
 *   3. scan each block: a reduce-window of size B on d+1;
 *   4. the block totals: the last element of each block (slice, reshape
 *      to [.., m, ..]);
 *   5. scan the totals along d, the same way (recursing while m > B);
 *   6. shift that to an exclusive scan: drop the last total, pad the init
 *      value in front;
 *   7. broadcast it over the blocks and combine it with (3) by the reducer
 *      applied elementwise (its body cloned on the whole arrays: one add
 *      for cumsum, the log-add-exp expression for cumlogsumexp);
 *   8. reshape back to length m * B and slice off the padding.
 *
 * A reverse scan takes the first element of each block as its total and
 * pads the exclusive scan at the end.  Work is about n * B plus n, and the
 * nested scans are reduce-windows of size <= B, so one run of the pass
 * finishes the rewrite (XLA runs its pass to a fixed point).  The forms
 * with one more output (pad N_0 or 0_N, XLA's exclusive scans) are the
 * inclusive scan with the init value padded in front (or behind).
 *
 * Rewritten only when it computes the same thing up to reassociation:
 *   - one operand, not a tuple; static shapes; not inside a fusion;
 *   - every window dimension trivial (size 1, stride 1, no padding or
 *     dilation) but one, d, of length n > B, with stride 1, no dilation or
 *     reversal, size w >= n and padding (w-1, 0), (w, 0), (0, w-1) or
 *     (0, w);
 *   - the reducer is associative and commutative as far as XLA assumes
 *     (floating-point add and multiply count as associative, as in XLA): a
 *     single add, multiply, maximum, minimum, and, or or xor of its two
 *     parameters, or JAX's log-add-exp;
 *   - the init value is the reducer's identity (a constant 0 for add and
 *     xor, 1 for multiply, -inf for log-add-exp), or the reducer is
 *     idempotent (maximum, minimum, and, or), where a repeated init value
 *     changes nothing.
 * Everything else is left as it is.  XLA's other rewrite, of rank-1
 * reduce-windows into rank 2 for its GPU emitter, is not needed here.
 */
#include "passes.h"

#include <math.h>

#include "../lib/hlo/ir_edit.h"

/* Scans longer than this are blocked (XLA's default base length). */
enum { SCAN_BASE = 16 };

/* Reducer bodies cloned elementwise are at most this large. */
enum { MAX_BODY = 16 };

typedef struct Scan {
  IrEdit *e;
  HloComp *c;                     /* where the scan is built */
  HloComp *f;                     /* the reducer */
  HloInstr *init;                 /* its scalar init value */
  bool reverse;                   /* a suffix scan (reverse=True) */
} Scan;

/* Strides and dilations of 0 were not given: they mean 1. */
static bool is_one(int64_t v) { return v == 0 || v == 1; }

static bool trivial_dim(const WindowDim *w) {
  return w->size == 1 && is_one(w->stride) && w->pad_lo == 0 &&
         w->pad_hi == 0 && is_one(w->base_dilation) &&
         is_one(w->window_dilation) && !w->reversal;
}

/* The scanned dimension of reduce-window i, or -1 when i is not a prefix
 * (or suffix) scan.  *exclusive: the window has one more padded element
 * than an inclusive scan, so the result is one longer. */
static int scan_dim(const HloInstr *i, bool *reverse, bool *exclusive) {
  const Shape *s = i->ops[0]->shape;
  const Window *win = i->window;
  if (!win || win->ndims != s->rank || s->dyn)
    return -1;
  int d = -1;
  for (int k = 0; k < s->rank; k++) {
    if (trivial_dim(&win->dims[k]))
      continue;
    if (d >= 0)
      return -1;
    d = k;
  }
  if (d < 0)
    return -1;
  const WindowDim *w = &win->dims[d];
  int64_t n = s->dims[d];
  if (w->size < n || !is_one(w->stride) || !is_one(w->base_dilation) ||
      !is_one(w->window_dilation) || w->reversal)
    return -1;
  if (w->pad_hi == 0 && (w->pad_lo == w->size - 1 || w->pad_lo == w->size)) {
    *reverse = false;
    *exclusive = w->pad_lo == w->size;
  } else if (w->pad_lo == 0 &&
             (w->pad_hi == w->size - 1 || w->pad_hi == w->size)) {
    *reverse = true;
    *exclusive = w->pad_hi == w->size;
  } else {
    return -1;
  }
  return d;
}

/* x and y are f's two parameters, in either order. */
static bool both_params(const HloComp *f, const HloInstr *x,
                        const HloInstr *y) {
  return (x == f->params[0] && y == f->params[1]) ||
         (x == f->params[1] && y == f->params[0]);
}

static bool is_op2(const HloInstr *i, HloOp op) {
  return i->op == op && i->nops == 2;
}

/* JAX's logaddexp(a, b) (jnp.logaddexp, the reducer of cumlogsumexp):
 *
 *   d = a - b
 *   select(d != d, a + b, max(a, b) + log1p(exp(-abs(d))))
 *
 * with the commutative operands in either order. */
static bool is_logaddexp(const HloComp *f) {
  const HloInstr *r = f->root;
  if (r->op != HLO_SELECT || r->nops != 3)
    return false;
  const HloInstr *ne = r->ops[0], *sum = r->ops[1], *rest = r->ops[2];
  if (!is_op2(ne, HLO_COMPARE) || ne->cmp_dir != CMP_NE ||
      ne->ops[0] != ne->ops[1] || !is_op2(ne->ops[0], HLO_SUBTRACT) ||
      !both_params(f, ne->ops[0]->ops[0], ne->ops[0]->ops[1]))
    return false;
  if (!is_op2(sum, HLO_ADD) || !both_params(f, sum->ops[0], sum->ops[1]) ||
      !is_op2(rest, HLO_ADD))
    return false;
  for (int k = 0; k < 2; k++) {
    const HloInstr *mx = rest->ops[k], *lg = rest->ops[1 - k];
    if (!is_op2(mx, HLO_MAXIMUM) || !both_params(f, mx->ops[0], mx->ops[1]))
      continue;
    const HloInstr *x = lg;
    static const HloOp chain[] = {HLO_LOG1P, HLO_EXP, HLO_NEGATE, HLO_ABS};
    bool ok = true;
    for (size_t j = 0; ok && j < ARRAY_LEN(chain); j++) {
      ok = x->op == chain[j] && x->nops == 1;
      if (ok)
        x = x->ops[0];
    }
    if (ok && is_op2(x, HLO_SUBTRACT) && both_params(f, x->ops[0], x->ops[1]))
      return true;
  }
  return false;
}

/* Whether the instructions of f reachable from its root number at most
 * MAX_BODY (so apply_reducer's map fits). */
static int body_size(const HloInstr *i, const HloInstr **seen, int n) {
  for (int k = 0; k < n; k++)
    if (seen[k] == i)
      return n;
  if (n >= MAX_BODY)
    return MAX_BODY + 1;
  seen[n++] = i;
  for (int k = 0; k < i->nops && n <= MAX_BODY; k++)
    n = body_size(i->ops[k], seen, n);
  return n;
}

/* Whether reduce-window's reducer f with init value `init` over elements of
 * type et can be evaluated in any grouping (see the header). */
static bool reducer_ok(const HloComp *f, ElemType et, const HloInstr *init) {
  if (!f || f->nparams != 2 || !f->root)
    return false;
  for (int k = 0; k < 2; k++) {
    const Shape *ps = f->params[k]->shape;
    if (!shape_is_scalar(ps) || ps->et != et)
      return false;
  }
  const HloInstr *r = f->root;
  if (!shape_is_scalar(r->shape) || r->shape->et != et)
    return false;
  bool is_float = et_is_float(et), is_int = et_is_int(et);
  if (!is_float && !is_int && et != ET_PRED)
    return false;
  if (is_float && is_logaddexp(f)) {
    const HloInstr *seen[MAX_BODY];
    return body_size(r, seen, 0) <= MAX_BODY &&
           ir_is_constant_value(init, -INFINITY);
  }
  if (r->nops != 2 || !both_params(f, r->ops[0], r->ops[1]))
    return false;
  switch (r->op) {
  case HLO_MAXIMUM:
  case HLO_MINIMUM:
    return true;                  /* idempotent: any init */
  case HLO_AND:
  case HLO_OR:
    return !is_float;             /* idempotent */
  case HLO_ADD:
    return et != ET_PRED && ir_is_constant_value(init, 0);
  case HLO_MULTIPLY:
    return et != ET_PRED && ir_is_constant_value(init, 1);
  case HLO_XOR:
    return !is_float && ir_is_constant_value(init, 0);
  default:
    return false;
  }
}

/*
 * Building blocks.  x is an array; d a dimension of it.
 */
static Shape *with_dim(Scan *s, const Shape *sh, int d, int64_t len) {
  Shape *r = shape_array(ir_arena(s->e), sh->et, sh->rank, sh->dims);
  r->dims[d] = len;
  return r;
}

/* x padded along d with the init value: lo in front, hi behind. */
static HloInstr *pad_dim(Scan *s, HloInstr *x, int d, int64_t lo,
                         int64_t hi) {
  Arena *a = ir_arena(s->e);
  const Shape *xs = x->shape;
  HloInstr *ops[2] = {x, s->init};
  HloInstr *p = ir_new(s->e, s->c, HLO_PAD,
                       with_dim(s, xs, d, xs->dims[d] + lo + hi), 2, ops);
  p->padding = ARENA_ARRAY(a, PadDim, xs->rank);
  for (int k = 0; k < xs->rank; k++)
    p->padding[k] = (PadDim){0, 0, 0};
  p->padding[d].lo = lo;
  p->padding[d].hi = hi;
  return p;
}

/* x[.., start:limit, ..] along d. */
static HloInstr *slice_dim(Scan *s, HloInstr *x, int d, int64_t start,
                           int64_t limit) {
  const Shape *xs = x->shape;
  SliceDim *sl = ARENA_ARRAY(ir_arena(s->e), SliceDim, xs->rank);
  for (int k = 0; k < xs->rank; k++)
    sl[k] = (SliceDim){0, xs->dims[k], 1};
  sl[d] = (SliceDim){start, limit, 1};
  return ir_slice(s->e, s->c, x, sl);
}

/* The inclusive scan of x along d as one reduce-window (window size n). */
static HloInstr *window_scan(Scan *s, HloInstr *x, int d) {
  Arena *a = ir_arena(s->e);
  const Shape *xs = x->shape;
  int64_t n = xs->dims[d];
  HloInstr *ops[2] = {x, s->init};
  HloInstr *rw = ir_new(s->e, s->c, HLO_REDUCE_WINDOW,
                        shape_array(a, xs->et, xs->rank, xs->dims), 2, ops);
  Window *w = ARENA_NEW(a, Window);
  w->ndims = xs->rank;
  w->dims = ARENA_ARRAY(a, WindowDim, xs->rank);
  for (int k = 0; k < xs->rank; k++)
    w->dims[k] = (WindowDim){.size = 1, .stride = 1, .base_dilation = 1,
                             .window_dilation = 1};
  w->dims[d].size = n;
  if (s->reverse)
    w->dims[d].pad_hi = n - 1;
  else
    w->dims[d].pad_lo = n - 1;
  rw->window = w;
  rw->ncalled = 1;
  rw->called = ARENA_ARRAY(a, HloComp *, 1);
  rw->called[0] = s->f;
  return rw;
}

/* Clones the body of the reducer below i with its parameters bound to x, y
 * and every scalar widened to shape sh (constants broadcast).  map holds
 * the instructions already cloned (src[k] -> dst[k]). */
static HloInstr *clone_elementwise(Scan *s, const HloInstr *i, HloInstr *x,
                                   HloInstr *y, const Shape *sh,
                                   const HloInstr **src, HloInstr **dst,
                                   int *n) {
  for (int k = 0; k < *n; k++)
    if (src[k] == i)
      return dst[k];
  HloInstr *r;
  if (i->op == HLO_PARAMETER) {
    r = i->param_number == 0 ? x : y;
  } else if (i->op == HLO_CONSTANT) {
    HloInstr *k0 = ir_clone(s->e, s->c, i, NULL, 0, NULL);
    r = ir_broadcast(s->e, s->c, k0, sh, 0, NULL);
  } else {
    HloInstr *ops[3];
    for (int k = 0; k < i->nops; k++)
      ops[k] = clone_elementwise(s, i->ops[k], x, y, sh, src, dst, n);
    r = ir_clone(s->e, s->c, i,
                 ir_shape_with_et(ir_arena(s->e), sh, i->shape->et), i->nops,
                 ops);
  }
  src[*n] = i;
  dst[*n] = r;
  (*n)++;
  return r;
}

/* The reducer applied elementwise: f(x, y), x and y of one shape. */
static HloInstr *apply_reducer(Scan *s, HloInstr *x, HloInstr *y) {
  const HloInstr *src[MAX_BODY];
  HloInstr *dst[MAX_BODY];
  int n = 0;
  return clone_elementwise(s, s->f->root, x, y, x->shape, src, dst, &n);
}

/* The inclusive scan of x along d (steps 1-8 of the header). */
static HloInstr *blocked_scan(Scan *s, HloInstr *x, int d) {
  const Shape *xs = x->shape;
  int64_t n = xs->dims[d];
  if (n <= SCAN_BASE)
    return window_scan(s, x, d);
  int r = xs->rank;
  int64_t m = (n + SCAN_BASE - 1) / SCAN_BASE, padded = m * SCAN_BASE;
  /* 1-2. Pad to whole blocks (identity values; behind either way) and
   * split d into [m, B]. */
  HloInstr *xp = padded != n ? pad_dim(s, x, d, 0, padded - n) : x;
  int64_t tdims[64];
  for (int k = 0, j = 0; k < r; k++) {
    tdims[j++] = k == d ? m : xs->dims[k];
    if (k == d)
      tdims[j++] = SCAN_BASE;
  }
  HloInstr *tiled = ir_reshape(s->e, s->c, xp, r + 1, tdims);
  /* 3. Scan within each block. */
  HloInstr *inner = window_scan(s, tiled, d + 1);
  /* 4. Each block's total: its last element (first for a reverse scan). */
  int64_t at = s->reverse ? 0 : SCAN_BASE - 1;
  HloInstr *col = slice_dim(s, inner, d + 1, at, at + 1);
  int64_t cdims[64];
  for (int k = 0, j = 0; k < r + 1; k++)
    if (k != d + 1)
      cdims[j++] = tdims[k];
  HloInstr *totals = ir_reshape(s->e, s->c, col, r, cdims);
  /* 5-6. Scan the totals and shift by one block: what precedes (follows)
   * each block. */
  HloInstr *outer = blocked_scan(s, totals, d);
  HloInstr *excl =
      s->reverse ? pad_dim(s, slice_dim(s, outer, d, 1, m), d, 0, 1)
                 : pad_dim(s, slice_dim(s, outer, d, 0, m - 1), d, 1, 0);
  /* 7. Combine with the scans within the blocks. */
  int64_t bdims[64];
  for (int k = 0, j = 0; k < r + 1; k++)
    if (k != d + 1)
      bdims[j++] = k;
  HloInstr *spread = ir_broadcast(s->e, s->c, excl, tiled->shape, r, bdims);
  HloInstr *comb = s->reverse ? apply_reducer(s, inner, spread)
                              : apply_reducer(s, spread, inner);
  /* 8. Back to rank r, without the padding. */
  HloInstr *flat = ir_reshape(s->e, s->c, comb, r, xp->shape->dims);
  return padded != n ? slice_dim(s, flat, d, 0, n) : flat;
}

/* Padding dimension d of s to whole blocks cannot overflow its sizes. */
static bool padding_fits(const Shape *s, int d) {
  int64_t n = shape_elements(s);
  return n >= 0 && n <= INT64_MAX / 2 && s->dims[d] <= INT64_MAX / 2;
}

/* Rewrites reduce-window i of c when it is a scan; returns whether. */
static bool rewrite(IrEdit *e, HloComp *c, HloInstr *i) {
  if (i->nops != 2 || i->ncalled != 1 || !shape_is_array(i->shape))
    return false;
  HloInstr *x = i->ops[0], *init = i->ops[1];
  bool reverse = false, exclusive = false;
  int d = scan_dim(i, &reverse, &exclusive);
  if (d < 0 || x->shape->rank >= 63 || x->shape->dims[d] <= SCAN_BASE ||
      !padding_fits(x->shape, d) ||
      !shape_is_scalar(init->shape) || init->shape->et != x->shape->et ||
      i->shape->et != x->shape->et ||
      !reducer_ok(i->called[0], x->shape->et, init))
    return false;
  Scan s = {e, c, i->called[0], init, reverse};
  HloInstr *r = blocked_scan(&s, x, d);
  if (exclusive)
    r = reverse ? pad_dim(&s, r, d, 0, 1) : pad_dim(&s, r, d, 1, 0);
  /* The result keeps i's layout (r is new: its shape is its own). */
  r->shape = shape_clone(ir_arena(e), i->shape);
  r->metadata = i->metadata;
  ir_replace(e, i, r);
  return true;
}

bool pass_reduce_window_rewriter(HloModule *m, PassContext *ctx) {
  (void)ctx;
  IrEdit *e = ir_begin(m);
  bool changed = false;
  int ncomps = m->ncomps;
  for (int ci = 0; ci < ncomps; ci++) {
    HloComp *c = m->comps[ci];
    if (c->fusion_instr)
      continue;
    /* What the rewrite adds is never a scan longer than SCAN_BASE: the
     * instructions there at the start are all that need a look. */
    int ninstrs = c->ninstrs;
    for (int k = 0; k < ninstrs; k++) {
      HloInstr *i = c->instrs[k];
      if (ir_removed(i) || i->op != HLO_REDUCE_WINDOW ||
          ir_has_control_deps(e, i))
        continue;
      changed |= rewrite(e, c, i);
    }
  }
  return ir_end(e, changed);
}
