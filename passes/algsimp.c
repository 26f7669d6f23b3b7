/*
 * algsimp.c - "algsimp" (XLA's AlgebraicSimplifier): local rewrites that
 * make the program smaller or simpler without changing what it computes.
 * This file holds the driver and the rules for arithmetic, logic,
 * comparisons, selects, converts, reductions and dots; algsimp_shape.c the
 * rules for data-movement ops.
 *
 *   A + 0, 0 + A, A - 0, A * 1, 1 * A, A / 1       =>  A
 *   A * 0, 0 * A (integers)                         =>  0
 *   pow(A, 0) => 1;  pow(A, 1) => A;  pow(A, 2) => A * A
 *   max(A, A), min(A, A), and(A, A), or(A, A)       =>  A
 *   max(A, -inf), min(A, +inf)                       =>  A
 *   and(A, true) => A;  and(A, false) => false;  and(A, 0) => 0
 *   or(A, false), or(A, 0), xor(A, 0)                =>  A;  or(A, true) => true
 *   negate(negate(A)), not(not(A))                   =>  A
 *   abs(abs(A))                                      =>  abs(A)
 *   copy(A) with A's layout                          =>  A
 *   convert(A) to A's type                           =>  A
 *   convert(convert(A, T1), T2), A -> T1 exact       =>  convert(A, T2) or A
 *   compare(A, A) on integers                        =>  true / false
 *   select(true, A, B) => A;  select(false, A, B) => B;  select(P, A, A) => A
 *   select(not(P), A, B)                             =>  select(P, B, A)
 *   op(broadcast(x)) => broadcast(op(x)); op(broadcast(x), broadcast(y)) =>
 *     broadcast(op(x, y)) for elementwise ops, same broadcast dimensions
 *   reduce(A) keeping every element (reduced dims of size 1) =>
 *     reducer(reshape(A), init)
 *   reduce(broadcast(A)) over exactly the broadcast's new dimensions =>
 *     reducer(A, init) for max/min/and/or; A * N + init for add, of
 *     integers and of floats too, as XLA does (the float sum is then
 *     exact where adding N copies one by one would round)
 *   dot with contracting size 0                      =>  0
 *   dot with every contracting dimension of size 1   =>  multiply of
 *     broadcasts (an outer product)
 *
 * Floating-point rules follow XLA's: A + 0 => A may turn -0 into +0 (as
 * XLA's does); nothing here reassociates or changes rounding otherwise.
 * Instructions are visited in topological order and replacements are
 * visited in turn, so chains simplify in one run.
 */
#include "algsimp.h"

#include <math.h>
#include <string.h>

HloInstr *as_is(const HloInstr *i, HloInstr *x) {
  return x && shape_equal(x->shape, i->shape) ? x : NULL;
}

HloInstr *with_operands(Simp *s, const HloInstr *i, int n,
                        HloInstr *const *ops) {
  HloInstr *r = ir_clone(s->e, s->c, i, NULL, n, ops);
  return r;
}

int64_t *dup_dims(Simp *s, const int64_t *v, int n) {
  int64_t *d = ARENA_ARRAY(s->a, int64_t, n > 0 ? n : 1);
  if (n > 0)
    memcpy(d, v, sizeof(int64_t) * (size_t)n);
  return d;
}

static bool is(const HloInstr *x, double v) {
  return ir_is_constant_value(x, v);
}

/* A constant v of i's shape (a broadcast scalar unless i is a scalar). */
static HloInstr *const_like(Simp *s, const HloInstr *i, double v) {
  return ir_scalar_like(s->e, s->c, i->shape, v);
}

/* Conversions that keep every value exactly. */
static bool lossless(ElemType from, ElemType to) {
  if (from == to || from == ET_PRED)
    return true;
  int fb = et_bits(from), tb = et_bits(to);
  if (et_is_signed_int(from))
    return (et_is_signed_int(to) && tb >= fb) ||
           (et_is_float(to) && fb <= 8 && (to == ET_F16 || to == ET_BF16)) ||
           ((to == ET_F32 && fb <= 16) || (to == ET_F64 && fb <= 32));
  if (et_is_unsigned_int(from))
    return (et_is_unsigned_int(to) && tb >= fb) ||
           (et_is_signed_int(to) && tb > fb) ||
           (et_is_float(to) && fb <= 8 && (to == ET_F16 || to == ET_BF16)) ||
           ((to == ET_F32 && fb <= 16) || (to == ET_F64 && fb <= 32));
  if (et_is_float(from)) {
    /* f64 and f32 hold every smaller format's values (f32 down to e8m0's
     * 2^-127 as a denormal). */
    if (to == ET_F64)
      return true;
    if (to == ET_F32)
      return fb <= 16;
    return false;
  }
  return false;
}

/*
 * Elementwise rules
 */
static HloInstr *sink_broadcast(Simp *s, HloInstr *i) {
  if (i->op == HLO_RNG || ir_has_side_effect(i) || i->nops < 1 ||
      i->nops > 2 || i->op == HLO_STOCHASTIC_CONVERT)
    return NULL;
  HloInstr *b0 = i->ops[0];
  if (b0->op != HLO_BROADCAST)
    return NULL;
  HloInstr *x[2] = {b0->ops[0], NULL};
  if (i->nops == 2) {
    HloInstr *b1 = i->ops[1];
    if (b1->op != HLO_BROADCAST || b1->dims.n != b0->dims.n ||
        !shape_compatible(b1->ops[0]->shape, b0->ops[0]->shape))
      return NULL;
    for (int k = 0; k < b0->dims.n; k++)
      if (b0->dims.v[k] != b1->dims.v[k])
        return NULL;
    x[1] = b1->ops[0];
  }
  /* Worth it only when the operand is smaller than the result. */
  if (shape_elements(x[0]->shape) >= shape_elements(i->shape))
    return NULL;
  Shape *small = ir_shape_with_et(s->a, x[0]->shape, i->shape->et);
  HloInstr *op = ir_clone(s->e, s->c, i, small, i->nops, x);
  HloInstr *r = ir_clone(s->e, s->c, b0, shape_clone(s->a, i->shape), 1, &op);
  return r;
}

static HloInstr *simp_convert(Simp *s, HloInstr *i) {
  HloInstr *a = i->ops[0];
  if (a->shape->et == i->shape->et)
    return as_is(i, a);
  if (a->op == HLO_CONVERT) {
    HloInstr *x = a->ops[0];
    if (!lossless(x->shape->et, a->shape->et))
      return NULL;
    if (x->shape->et == i->shape->et && as_is(i, x))
      return x;
    return with_operands(s, i, 1, &x);
  }
  return NULL;
}

/* Whether x is a constant of pred or integer type with every element v. */
static bool is_logic(const HloInstr *x, double v) {
  ElemType et = x->shape->et;
  return (et == ET_PRED || et_is_int(et)) && is(x, v);
}

static HloInstr *simp_elementwise(Simp *s, HloInstr *i) {
  HloInstr *a = i->nops > 0 ? i->ops[0] : NULL;
  HloInstr *b = i->nops > 1 ? i->ops[1] : NULL;
  ElemType et = i->shape->et;
  HloInstr *r = NULL;
  switch (i->op) {
  case HLO_ADD:
    if (is(b, 0))
      r = as_is(i, a);
    else if (is(a, 0))
      r = as_is(i, b);
    break;
  case HLO_SUBTRACT:
    if (is(b, 0))
      r = as_is(i, a);
    break;
  case HLO_MULTIPLY:
    if (is(b, 1))
      r = as_is(i, a);
    else if (is(a, 1))
      r = as_is(i, b);
    else if (et_is_int(et) && (is(a, 0) || is(b, 0)))
      r = const_like(s, i, 0);
    break;
  case HLO_DIVIDE:
    if (is(b, 1))
      r = as_is(i, a);
    break;
  case HLO_POWER:
    if (is(b, 0))
      r = const_like(s, i, 1);
    else if (is(b, 1))
      r = as_is(i, a);
    else if (is(b, 2) && shape_equal(a->shape, i->shape))
      r = ir_binary(s->e, s->c, HLO_MULTIPLY, a, a);
    break;
  case HLO_MAXIMUM:
  case HLO_MINIMUM:
    if (a == b)
      r = as_is(i, a);
    else if (et_is_float(et) && is(b, i->op == HLO_MAXIMUM ? -INFINITY : INFINITY))
      r = as_is(i, a);
    else if (et_is_float(et) && is(a, i->op == HLO_MAXIMUM ? -INFINITY : INFINITY))
      r = as_is(i, b);
    break;
  case HLO_AND:
    if (a == b)
      r = as_is(i, a);
    else if (is_logic(b, 0))
      r = const_like(s, i, 0);
    else if (is_logic(a, 0))
      r = const_like(s, i, 0);
    else if (et == ET_PRED && is(b, 1))
      r = as_is(i, a);
    else if (et == ET_PRED && is(a, 1))
      r = as_is(i, b);
    break;
  case HLO_OR:
    if (a == b)
      r = as_is(i, a);
    else if (is_logic(b, 0))
      r = as_is(i, a);
    else if (is_logic(a, 0))
      r = as_is(i, b);
    else if (et == ET_PRED && (is(a, 1) || is(b, 1)))
      r = const_like(s, i, 1);
    break;
  case HLO_XOR:
    if (is_logic(b, 0))
      r = as_is(i, a);
    else if (is_logic(a, 0))
      r = as_is(i, b);
    break;
  case HLO_NEGATE:
    if (a->op == HLO_NEGATE)
      r = as_is(i, a->ops[0]);
    break;
  case HLO_NOT:
    if (a->op == HLO_NOT)
      r = as_is(i, a->ops[0]);
    break;
  case HLO_ABS:
    if (a->op == HLO_ABS)
      r = as_is(i, a);
    break;
  case HLO_COPY:
    r = as_is(i, a);
    break;
  case HLO_CONVERT:
    r = simp_convert(s, i);
    break;
  case HLO_COMPARE:
    if (a == b && (et_is_int(a->shape->et) || a->shape->et == ET_PRED)) {
      bool t = i->cmp_dir == CMP_EQ || i->cmp_dir == CMP_GE ||
               i->cmp_dir == CMP_LE;
      r = const_like(s, i, t ? 1 : 0);
    }
    break;
  case HLO_SELECT: {
    HloInstr *t = i->ops[1], *f = i->ops[2];
    if (t == f)
      r = as_is(i, t);
    else if (is(a, 1))
      r = as_is(i, t);
    else if (is(a, 0))
      r = as_is(i, f);
    else if (a->op == HLO_NOT) {
      HloInstr *ops[3] = {a->ops[0], f, t};
      r = with_operands(s, i, 3, ops);
    }
    break;
  }
  default:
    break;
  }
  if (!r && i->op != HLO_SELECT && i->op != HLO_CLAMP)
    r = sink_broadcast(s, i);
  return r;
}

/*
 * Reduce
 */

/* The binary opcode of a reducer computation "ROOT op(p0, p1)" that is
 * commutative, or -1. */
static int reducer_op(const HloComp *f) {
  const HloInstr *r = f->root;
  if (!r || f->nparams != 2 || r->nops != 2)
    return -1;
  const HloInstr *x = r->ops[0], *y = r->ops[1];
  if (x->op != HLO_PARAMETER || y->op != HLO_PARAMETER || x == y)
    return -1;
  switch (r->op) {
  case HLO_ADD: case HLO_MULTIPLY: case HLO_MAXIMUM: case HLO_MINIMUM:
  case HLO_AND: case HLO_OR:
    return r->op;
  default:
    return -1;
  }
}

static HloInstr *simp_reduce(Simp *s, HloInstr *i) {
  if (i->nops != 2 || i->ncalled != 1 || !shape_is_array(i->shape))
    return NULL;
  int op = reducer_op(i->called[0]);
  if (op < 0)
    return NULL;
  HloInstr *a = i->ops[0], *init = i->ops[1];
  if (a->shape->et != i->shape->et || init->shape->rank != 0)
    return NULL;
  /* Nothing is actually combined: reducer(reshape(A), init). */
  if (shape_elements(a->shape) == shape_elements(i->shape) &&
      shape_elements(a->shape) > 0) {
    HloInstr *x = a;
    if (a->shape->rank != i->shape->rank ||
        memcmp(a->shape->dims, i->shape->dims,
               sizeof(int64_t) * (size_t)a->shape->rank) != 0) {
      x = ir_reshape(s->e, s->c, a, i->shape->rank, i->shape->dims);
      x->shape = shape_clone(s->a, i->shape);
    }
    HloInstr *ib = i->shape->rank > 0
                       ? ir_broadcast(s->e, s->c, init, i->shape, 0, NULL)
                       : init;
    HloInstr *ops[2] = {x, ib};
    return ir_new(s->e, s->c, (HloOp)op, shape_clone(s->a, i->shape), 2, ops);
  }
  /* reduce(broadcast(A)) over exactly the dimensions broadcast added. */
  if (a->op != HLO_BROADCAST)
    return NULL;
  HloInstr *x = a->ops[0];
  const I64List *bd = &a->dims;
  if (i->dims.n + bd->n != a->shape->rank || x->shape->rank != bd->n)
    return NULL;
  for (int k = 0; k < bd->n; k++) {
    if (k > 0 && bd->v[k] <= bd->v[k - 1])
      return NULL;
    for (int j = 0; j < i->dims.n; j++)
      if (i->dims.v[j] == bd->v[k])
        return NULL;
  }
  int64_t n = 1;
  for (int j = 0; j < i->dims.n; j++)
    n *= a->shape->dims[i->dims.v[j]];
  if (n <= 0)
    return NULL;
  bool idempotent =
      op == HLO_MAXIMUM || op == HLO_MINIMUM || op == HLO_AND || op == HLO_OR;
  if (!idempotent &&
      !(op == HLO_ADD && (et_is_int(x->shape->et) || et_is_float(x->shape->et))))
    return NULL;
  HloInstr *val = x;
  if (!idempotent) {
    HloInstr *nk = ir_scalar_like(s->e, s->c, x->shape, (double)n);
    val = ir_binary(s->e, s->c, HLO_MULTIPLY, x, nk);
  }
  HloInstr *ib = i->shape->rank > 0
                     ? ir_broadcast(s->e, s->c, init, x->shape, 0, NULL)
                     : init;
  HloInstr *ops[2] = {val, ib};
  return ir_new(s->e, s->c, (HloOp)op, shape_clone(s->a, i->shape), 2, ops);
}

/*
 * Dot
 */

static bool in_list(const I64List *l, int64_t v) {
  for (int k = 0; k < l->n; k++)
    if (l->v[k] == v)
      return true;
  return false;
}

/* One side of an outer-product dot: x without its (size-1) contracting
 * dims, its batch dims first (in `batch` order) then its free dims, as the
 * element type et, broadcast into out with its dims at `pos`. */
static HloInstr *outer_side(Simp *s, HloInstr *x, const I64List *batch,
                            const I64List *contract, ElemType et,
                            const Shape *out, const int64_t *pos) {
  int r = x->shape->rank;
  int64_t *keep = ARENA_ARRAY(s->a, int64_t, r > 0 ? r : 1);
  int64_t *kdims = ARENA_ARRAY(s->a, int64_t, r > 0 ? r : 1);
  int nk = 0;
  for (int k = 0; k < r; k++)
    if (!in_list(contract, k)) {
      keep[nk] = k;
      kdims[nk++] = x->shape->dims[k];
    }
  HloInstr *y = x;
  if (nk != r)
    y = ir_reshape(s->e, s->c, x, nk, kdims);
  /* Wanted order of the kept dims: batch (as listed), then free. */
  int64_t *want = ARENA_ARRAY(s->a, int64_t, nk > 0 ? nk : 1);
  int nw = 0;
  for (int k = 0; k < batch->n; k++)
    want[nw++] = batch->v[k];
  for (int k = 0; k < nk; k++)
    if (!in_list(batch, keep[k]))
      want[nw++] = keep[k];
  int64_t *perm = ARENA_ARRAY(s->a, int64_t, nk > 0 ? nk : 1);
  bool identity = true;
  for (int k = 0; k < nk; k++) {
    for (int j = 0; j < nk; j++)
      if (keep[j] == want[k])
        perm[k] = j;
    identity &= perm[k] == k;
  }
  if (!identity)
    y = ir_transpose(s->e, s->c, y, perm);
  if (y->shape->et != et)
    y = ir_convert(s->e, s->c, y, et);
  return ir_broadcast(s->e, s->c, y, out, nk, pos);
}

static HloInstr *simp_dot(Simp *s, HloInstr *i) {
  const DotDnums *dn = i->dot;
  if (!dn || i->nops != 2 || i->sparsity || dn->lhs_ragged.n || dn->rhs_group.n ||
      !shape_is_array(i->shape))
    return NULL;
  HloInstr *a = i->ops[0], *b = i->ops[1];
  int64_t k = 1;
  for (int j = 0; j < dn->lhs_contracting.n; j++)
    k *= a->shape->dims[dn->lhs_contracting.v[j]];
  if (k == 0)
    return const_like(s, i, 0);
  if (k != 1)
    return NULL;
  ElemType et = i->shape->et;
  if (a->shape->et != b->shape->et || !lossless(a->shape->et, et) ||
      et == ET_PRED || et_is_complex(et))
    return NULL;
  int nb = dn->lhs_batch.n;
  int la = a->shape->rank - nb - dn->lhs_contracting.n;
  int lb = b->shape->rank - nb - dn->rhs_contracting.n;
  if (nb + la + lb != i->shape->rank)
    return NULL;
  int64_t *pa = ARENA_ARRAY(s->a, int64_t, nb + la + 1);
  int64_t *pb = ARENA_ARRAY(s->a, int64_t, nb + lb + 1);
  for (int j = 0; j < nb + la; j++)
    pa[j] = j;
  for (int j = 0; j < nb; j++)
    pb[j] = j;
  for (int j = 0; j < lb; j++)
    pb[nb + j] = nb + la + j;
  HloInstr *x = outer_side(s, a, &dn->lhs_batch, &dn->lhs_contracting, et,
                           i->shape, pa);
  HloInstr *y = outer_side(s, b, &dn->rhs_batch, &dn->rhs_contracting, et,
                           i->shape, pb);
  HloInstr *ops[2] = {x, y};
  return ir_new(s->e, s->c, HLO_MULTIPLY, shape_clone(s->a, i->shape), 2, ops);
}

static HloInstr *simplify(Simp *s, HloInstr *i) {
  if (hlo_op_is_elementwise(i->op))
    return simp_elementwise(s, i);
  switch (i->op) {
  case HLO_REDUCE:
    return simp_reduce(s, i);
  case HLO_DOT:
    return simp_dot(s, i);
  default:
    return simp_shape_op(s, i);
  }
}

bool pass_algsimp(HloModule *m, PassContext *ctx) {
  (void)ctx;
  IrEdit *e = ir_begin(m);
  Simp s = {e, NULL, ir_arena(e)};
  bool changed = false;
  for (int ci = 0; ci < m->ncomps; ci++) {
    HloComp *c = m->comps[ci];
    if (c->fusion_instr)
      continue;
    s.c = c;
    /* Replacements are appended and visited too; the budget stops rules
     * that would feed each other forever. */
    long budget = 4L * c->ninstrs + 1024;
    for (int k = 0; k < c->ninstrs && budget > 0; k++, budget--) {
      HloInstr *i = c->instrs[k];
      if (ir_removed(i) || ir_has_control_deps(e, i) || ir_has_side_effect(i))
        continue;
      int before = c->ninstrs;
      HloInstr *r = simplify(&s, i);
      if (!r || r == i) {
        /* A rule that gave up may have built something: drop it. */
        for (int j = c->ninstrs - 1; j >= before; j--)
          ir_remove_dead(e, c->instrs[j]);
        continue;
      }
      if (!shape_compatible(r->shape, i->shape))
        die("algsimp: replacement of '%s' has another shape", i->name);
      if (!r->metadata)
        r->metadata = i->metadata;
      ir_replace(e, i, r);
      changed = true;
    }
  }
  return ir_end(e, changed);
}
