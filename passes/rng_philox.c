/*
 * rng_philox.c - the computation rng-expander calls in place of an `rng`
 * (see rng_philox.h): XLA's PhiloxBitGenerator with its uniform and normal
 * distributions, instruction for instruction as its builder library emits
 * them (implicit scalar broadcasts made explicit), so the values are the
 * ones XLA computes.
 *
 *   bits:    key -> two u32 words; the u128 counter state (low word first)
 *            plus iota(ceil(n/4)) with carry; ten Philox rounds; the four
 *            output words interleaved round-robin, sliced to n (64-bit
 *            types: pairs of words, 2n words drawn).
 *   uniform float:  the top mantissa-width bits, converted and scaled by
 *            2^-mantissa into [0, 1), then * (b - a) + a.
 *   uniform int:    bits % (b - a) split in halves added to a (no overflow).
 *   normal:  uniform [0, 1) over the shape split in halves along its first
 *            even (else largest) dimension, Box-Muller on the halves,
 *            recombined, then mean + sigma * x.
 */
#include "rng_philox.h"

#include <math.h>

/* Room for a shape's dimensions plus the split's extra one. */
enum { MAX_DIMS = 66 };

typedef struct B {
  IrEdit *e;
  HloComp *c;
  Arena *a;
} B;

static HloInstr *uconst(B *b, ElemType et, uint64_t v) {
  Literal *l = literal_new(b->a, shape_scalar(b->a, et));
  literal_set_u64(l, 0, v);
  return ir_constant(b->e, b->c, l);
}

static HloInstr *fconst(B *b, ElemType et, double v) {
  return ir_scalar(b->e, b->c, et, v);
}

/* XlaBuilder's implicit broadcast of a scalar operand to the other's
 * shape. */
static void implicit_broadcast(B *b, HloInstr **x, HloInstr **y) {
  if ((*x)->shape->rank == 0 && (*y)->shape->rank > 0)
    *x = ir_broadcast(b->e, b->c, *x, (*y)->shape, 0, NULL);
  else if ((*y)->shape->rank == 0 && (*x)->shape->rank > 0)
    *y = ir_broadcast(b->e, b->c, *y, (*x)->shape, 0, NULL);
}

static HloInstr *bin(B *b, HloOp op, HloInstr *x, HloInstr *y) {
  implicit_broadcast(b, &x, &y);
  return ir_binary(b->e, b->c, op, x, y);
}

static HloInstr *un(B *b, HloOp op, HloInstr *x) {
  return ir_unary(b->e, b->c, op, x);
}

static HloInstr *cvt(B *b, HloInstr *x, ElemType et) {
  return ir_convert(b->e, b->c, x, et);
}

static HloInstr *bitcast(B *b, HloInstr *x, ElemType et) {
  return ir_new(b->e, b->c, HLO_BITCAST_CONVERT,
                ir_shape_with_et(b->a, x->shape, et), 1, &x);
}

/* x >> n (logical), n of x's type. */
static HloInstr *shr(B *b, HloInstr *x, int n) {
  return bin(b, HLO_SHIFT_RIGHT_LOGICAL, x, uconst(b, x->shape->et, (uint64_t)n));
}

static HloInstr *reshape(B *b, HloInstr *x, int rank, const int64_t *dims) {
  return ir_reshape(b->e, b->c, x, rank, dims);
}

static HloInstr *slice(B *b, HloInstr *x, const int64_t *start,
                       const int64_t *limit) {
  int r = x->shape->rank;
  SliceDim *sl = ARENA_ARRAY(b->a, SliceDim, r > 0 ? r : 1);
  for (int k = 0; k < r; k++)
    sl[k] = (SliceDim){start ? start[k] : 0, limit[k], 1};
  return ir_slice(b->e, b->c, x, sl);
}

static HloInstr *concat(B *b, int n, HloInstr *const *xs, int dim) {
  const Shape *s0 = xs[0]->shape;
  int64_t *dims = ARENA_ARRAY(b->a, int64_t, s0->rank);
  for (int k = 0; k < s0->rank; k++)
    dims[k] = s0->dims[k];
  for (int j = 1; j < n; j++)
    dims[dim] += xs[j]->shape->dims[dim];
  HloInstr *i = ir_new(b->e, b->c, HLO_CONCATENATE,
                       shape_array(b->a, s0->et, s0->rank, dims), n, xs);
  i->dims.n = 1;
  i->dims.v = ARENA_ARRAY(b->a, int64_t, 1);
  i->dims.v[0] = dim;
  i->has_dims = true;
  return i;
}

/* Uint64ToUint32s: low word, high word. */
static void u64_to_u32s(B *b, HloInstr *x, HloInstr **out) {
  out[0] = cvt(b, x, ET_U32);
  out[1] = cvt(b, shr(b, x, 32), ET_U32);
}

/* Uint32sToUint64. */
static HloInstr *u32s_to_u64(B *b, HloInstr *lo, HloInstr *hi) {
  HloInstr *h = bin(b, HLO_SHIFT_LEFT, cvt(b, hi, ET_U64), uconst(b, ET_U64, 32));
  return bin(b, HLO_OR, cvt(b, lo, ET_U64), h);
}

/* Philox4x32 with ten rounds on the words x under key k. */
static void philox4x32(B *b, HloInstr **x, HloInstr **k) {
  static const uint32_t w_a = 0x9E3779B9u, w_b = 0xBB67AE85u;
  static const uint32_t m_a = 0xD2511F53u, m_b = 0xCD9E8D57u;
  HloInstr *key[2] = {k[0], k[1]};
  for (int round = 0; round < 10; round++) {
    HloInstr *hl[2][2]; /* [product][high, low] */
    const uint32_t mul[2] = {m_a, m_b};
    for (int p = 0; p < 2; p++) {
      HloInstr *prod = bin(b, HLO_MULTIPLY, cvt(b, x[2 * p], ET_U64),
                           uconst(b, ET_U64, mul[p]));
      hl[p][1] = cvt(b, prod, ET_U32);
      hl[p][0] = cvt(b, shr(b, prod, 32), ET_U32);
    }
    HloInstr *n0 = bin(b, HLO_XOR, bin(b, HLO_XOR, hl[1][0], x[1]), key[0]);
    HloInstr *n2 = bin(b, HLO_XOR, bin(b, HLO_XOR, hl[0][0], x[3]), key[1]);
    x[0] = n0;
    x[1] = hl[1][1];
    x[2] = n2;
    x[3] = hl[0][1];
    if (round < 9) { /* XLA raises the key once more; nothing reads it */
      key[0] = bin(b, HLO_ADD, key[0], uconst(b, ET_U32, w_a));
      key[1] = bin(b, HLO_ADD, key[1], uconst(b, ET_U32, w_b));
    }
  }
}

/* GeneratePhiloxBits: four u32[ceil(n/4)] arrays of Philox output for the
 * counters state + 0, 1, ... */
static void philox_bits(B *b, HloInstr *key, HloInstr *state, int64_t n,
                        HloInstr **out) {
  HloInstr *k[2];
  u64_to_u32s(b, key, k);
  int64_t z[1] = {0}, one[1] = {1}, two[1] = {2};
  HloInstr *lo = reshape(b, slice(b, state, z, one), 0, NULL);
  HloInstr *hi = reshape(b, slice(b, state, one, two), 0, NULL);
  HloInstr *st[4];
  u64_to_u32s(b, lo, st);
  u64_to_u32s(b, hi, st + 2);
  int64_t nv = (n + 3) / 4;
  HloInstr *iota = ir_new(b->e, b->c, HLO_IOTA, shape_array(b->a, ET_U64, 1, &nv),
                          0, NULL);
  iota->iota_dim = 0;
  HloInstr *l = u32s_to_u64(b, st[0], st[1]), *h = u32s_to_u64(b, st[2], st[3]);
  /* Uint128AddUint64 with the high word broadcast to [nv]. */
  HloInstr *nl = bin(b, HLO_ADD, l, iota);
  HloInstr *h1 = bin(b, HLO_ADD, h, uconst(b, ET_U64, 1));
  HloInstr *lb = l, *nlb = nl;
  implicit_broadcast(b, &nlb, &lb);
  HloInstr *carry = ir_compare(b->e, b->c, CMP_LT, nlb, lb);
  HloInstr *nh = ir_select(b->e, b->c, carry,
                           ir_broadcast(b->e, b->c, h1, nl->shape, 0, NULL),
                           ir_broadcast(b->e, b->c, h, nl->shape, 0, NULL));
  u64_to_u32s(b, nl, out);
  u64_to_u32s(b, nh, out + 2);
  philox4x32(b, out, k);
}

/* PhiloxRngBit32 / PhiloxRngBit64: bits of shape's dimensions (u32 or u64
 * by the width of shape's element type). */
static HloInstr *philox_generator(B *b, HloInstr *key, HloInstr *state,
                                  const Shape *shape) {
  int64_t n = shape_elements(shape);
  bool wide = et_bits(shape->et) == 64;
  HloInstr *w[4];
  philox_bits(b, key, state, wide ? 2 * n : n, w);
  int nparts = wide ? 2 : 4;
  HloInstr *parts[4];
  for (int k = 0; k < nparts; k++)
    parts[k] = wide ? u32s_to_u64(b, w[2 * k], w[2 * k + 1]) : w[k];
  int64_t len = wide ? (n + 1) / 2 : (n + 3) / 4;
  int64_t col[2] = {len, 1};
  for (int k = 0; k < nparts; k++)
    parts[k] = reshape(b, parts[k], 2, col);
  HloInstr *all = concat(b, nparts, parts, 1);
  int64_t flat = len * nparts;
  all = reshape(b, all, 1, &flat);
  all = slice(b, all, NULL, &n);
  return reshape(b, all, shape->rank, shape->dims);
}

/* ConvertRandomBitsToUniformFloatingPoint (f32, f64). */
static HloInstr *uniform_float(B *b, HloInstr *bits, HloInstr *lo,
                               HloInstr *hi, ElemType et) {
  int nbits = et_bits(bits->shape->et);
  int mant = et == ET_F64 ? 52 : 23;
  bits = shr(b, bits, nbits - mant);
  HloInstr *v = cvt(b, bits, et);
  v = bin(b, HLO_MULTIPLY, v, fconst(b, et, ldexp(1.0, -mant)));
  HloInstr *range = bin(b, HLO_SUBTRACT, hi, lo);
  return bin(b, HLO_ADD, bin(b, HLO_MULTIPLY, v, range), lo);
}

/* ConvertRandomBitsToUniformInt. */
static HloInstr *uniform_int(B *b, HloInstr *bits, HloInstr *lo, HloInstr *hi,
                             ElemType et) {
  ElemType ut = et_bits(et) == 64 ? ET_U64 : ET_U32;
  HloInstr *range = bin(b, HLO_SUBTRACT, bitcast(b, hi, ut), bitcast(b, lo, ut));
  HloInstr *dist = bin(b, HLO_REMAINDER, bits, range);
  HloInstr *half = shr(b, dist, 1);
  HloInstr *r = bin(b, HLO_ADD, lo, bitcast(b, half, et));
  return bin(b, HLO_ADD, r, bitcast(b, bin(b, HLO_SUBTRACT, dist, half), et));
}

/* SplitShapeIntoHalves. */
typedef struct Split {
  int hrank;
  int64_t half[MAX_DIMS], concat[MAX_DIMS];
  int split_dim, concat_dim;
} Split;

static void split_halves(const Shape *s, Split *p) {
  if (s->rank == 0) {
    *p = (Split){.hrank = 1, .half = {1}, .concat = {2}};
    return;
  }
  p->split_dim = -1;
  for (int k = 0; k < s->rank && p->split_dim < 0; k++)
    if (s->dims[k] % 2 == 0)
      p->split_dim = k;
  if (p->split_dim < 0) {
    p->split_dim = 0;
    for (int k = 1; k < s->rank; k++)
      if (s->dims[k] > s->dims[p->split_dim])
        p->split_dim = k;
  }
  int n = 0;
  for (int k = 0; k < s->rank; k++) {
    if (k == p->split_dim) {
      p->half[n] = (s->dims[k] + 1) / 2;
      p->concat[n++] = (s->dims[k] + 1) / 2;
      p->half[n] = 1;
      p->concat[n++] = 2;
    } else {
      p->half[n] = s->dims[k];
      p->concat[n++] = s->dims[k];
    }
  }
  p->hrank = n;
  p->concat_dim = p->split_dim + 1;
}

/* CombineShapePair. */
static HloInstr *combine(B *b, HloInstr *x0, HloInstr *x1, const Split *p,
                         const Shape *s) {
  if (s->rank == 0)
    return reshape(b, x0, 0, NULL);
  HloInstr *xs[2] = {x0, x1};
  HloInstr *r = concat(b, 2, xs, p->concat_dim);
  int64_t dims[MAX_DIMS];
  for (int k = 0; k < s->rank; k++)
    dims[k] = s->dims[k];
  dims[p->split_dim] = (dims[p->split_dim] + 1) / 2 * 2;
  r = reshape(b, r, s->rank, dims);
  if (dims[p->split_dim] != s->dims[p->split_dim])
    r = slice(b, r, NULL, s->dims);
  return r;
}

/* NormalFloatingPointDistribution. */
static HloInstr *normal(B *b, HloInstr *key, HloInstr *state, const Shape *s) {
  Split p;
  split_halves(s, &p);
  Shape *cs = shape_array(b->a, s->et, p.hrank, p.concat);
  HloInstr *bits = philox_generator(b, key, state, cs);
  HloInstr *u = uniform_float(b, bits, fconst(b, s->et, 0.0),
                              fconst(b, s->et, 1.0), s->et);
  int64_t start[MAX_DIMS] = {0};
  HloInstr *x0 = slice(b, u, NULL, p.half);
  start[p.concat_dim] = 1;
  HloInstr *x1 = slice(b, u, start, p.concat);
  /* BoxMullerTransform */
  HloInstr *u1 = bin(b, HLO_MAXIMUM, x0, fconst(b, s->et, (double)1.0e-7f));
  HloInstr *v1 = bin(b, HLO_MULTIPLY, fconst(b, s->et, 2.0 * M_PI), x1);
  HloInstr *u2 = un(b, HLO_SQRT, bin(b, HLO_MULTIPLY, fconst(b, s->et, -2.0),
                                     un(b, HLO_LOG, u1)));
  HloInstr *y0 = bin(b, HLO_MULTIPLY, un(b, HLO_SIN, v1), u2);
  HloInstr *y1 = bin(b, HLO_MULTIPLY, un(b, HLO_COS, v1), u2);
  return combine(b, y0, y1, &p, s);
}

HloComp *rng_philox_comp(IrEdit *e, RngDist dist, const Shape *shape,
                         const Shape *a_shape, const Shape *b_shape) {
  ElemType et = shape->et;
  bool fp = et == ET_F32 || et == ET_F64;
  bool in = et == ET_S32 || et == ET_U32 || et == ET_S64 || et == ET_U64;
  if (!shape_is_array(shape) || shape->rank > MAX_DIMS - 2 ||
      shape_elements(shape) < 0 || (dist == RNG_NORMAL && !fp) ||
      (dist == RNG_UNIFORM && !fp && !in) ||
      (dist != RNG_NORMAL && dist != RNG_UNIFORM))
    return NULL;
  HloModule *m = ir_module(e);
  B b = {e, ir_new_comp(e, "rng"), m->arena};
  int64_t two = 2;
  HloInstr *key = ir_add_param(e, b.c, shape_scalar(b.a, ET_U64), "key");
  HloInstr *state = ir_add_param(e, b.c, shape_array(b.a, ET_U64, 1, &two),
                                 "state");
  HloInstr *pa = ir_add_param(e, b.c, shape_clone(b.a, a_shape), "a_or_mean");
  HloInstr *pb = ir_add_param(e, b.c, shape_clone(b.a, b_shape), "b_or_sigma");
  HloInstr *r;
  if (dist == RNG_NORMAL) {
    r = normal(&b, key, state, shape);
    r = bin(&b, HLO_ADD, pa, bin(&b, HLO_MULTIPLY, pb, r));
  } else {
    HloInstr *bits = philox_generator(&b, key, state, shape);
    r = fp ? uniform_float(&b, bits, pa, pb, et) : uniform_int(&b, bits, pa, pb, et);
  }
  b.c->root = r;
  return b.c;
}
