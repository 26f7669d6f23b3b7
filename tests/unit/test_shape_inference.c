/*
 * test_shape_inference.c - unit tests of hlo_infer_shape, building the IR
 * directly: for each op family the shape XLA's rules give for valid operands
 * and attributes, and the error for invalid ones.
 */
#include <criterion/criterion.h>

#include <stdlib.h>
#include <string.h>

#include "../../lib/hlo/hlo.h"

static HloModule *M;
static HloComp *C;
static Diag D;
static int counter;

static void setup(void) {
  M = hlo_module_new("m");
  C = hlo_comp_new(M, "entry");
  M->entry = C;
  C->is_entry = true;
  memset(&D, 0, sizeof D);
  counter = 0;
}

static void teardown(void) {
  diag_clear(&D);
  hlo_module_free(M);
}

TestSuite(infer, .init = setup, .fini = teardown);

/*
 * A small shape reader for the tests: "f32[2,3]", "pred[]", "(s32[], f32[4])",
 * "token[]", "f32[<=4,?]".
 */
static Shape *read_shape(const char **p) {
  const char *s = *p;
  if (*s == '(') {
    Shape *el[32];
    int n = 0;
    s++;
    while (*s != ')') {
      el[n++] = read_shape(&s);
      if (*s == ',')
        s++;
      while (*s == ' ')
        s++;
    }
    *p = s + 1;
    return shape_tuple(M->arena, n, el);
  }
  const char *b = strchr(s, '[');
  cr_assert(b, "bad shape text %s", s);
  if (strncmp(s, "token", 5) == 0) {
    *p = b + 2;
    return shape_token(M->arena);
  }
  ElemType et = et_from_name(s, (size_t)(b - s));
  cr_assert(et != ET_INVALID, "bad element type in %s", s);
  int64_t dims[16];
  uint8_t dyn[16] = {0};
  int rank = 0;
  bool any_dyn = false;
  s = b + 1;
  while (*s != ']') {
    if (*s == '?') {
      dims[rank] = -1, dyn[rank] = DIM_UNBOUNDED, any_dyn = true, s++;
    } else {
      if (*s == '<')
        s += 2, dyn[rank] = DIM_BOUNDED, any_dyn = true;
      dims[rank] = strtoll(s, (char **)&s, 10);
    }
    rank++;
    if (*s == ',')
      s++;
  }
  *p = s + 1;
  Shape *r = shape_array(M->arena, et, rank, dims);
  if (any_dyn)
    r->dyn = arena_memdup(M->arena, dyn, (size_t)rank);
  return r;
}

static Shape *S(const char *text) { return read_shape(&text); }

static char *str(const Shape *s) {
  static char buf[512];
  char *t = shape_to_string(s, false);
  snprintf(buf, sizeof buf, "%s", t);
  free(t);
  return buf;
}

static char *name(const char *base) {
  char *n = arena_alloc(M->arena, 64);
  snprintf(n, 64, "%s.%d", base, ++counter);
  return n;
}

static HloInstr *param_in(HloComp *c, const char *shape) {
  HloInstr *i = hlo_instr_new(c, HLO_PARAMETER, S(shape), 0, NULL);
  i->name = name("p");
  i->param_number = c->nparams;
  HloInstr **ps = ARENA_ARRAY(M->arena, HloInstr *, c->nparams + 1);
  if (c->nparams)
    memcpy(ps, c->params, sizeof(HloInstr *) * (size_t)c->nparams);
  ps[c->nparams++] = i;
  c->params = ps;
  return i;
}

static HloInstr *P(const char *shape) { return param_in(C, shape); }

static HloInstr *mk(HloOp op, const char *shape, int n, HloInstr **ops) {
  HloInstr *i = hlo_instr_new(C, op, S(shape), n, ops);
  i->name = name(hlo_op_name(op));
  return i;
}

#define OPS(...) ((HloInstr *[]){__VA_ARGS__})
#define NOPS(...) (int)(sizeof(OPS(__VA_ARGS__)) / sizeof(HloInstr *))
#define I(op, shape, ...) mk(op, shape, NOPS(__VA_ARGS__), OPS(__VA_ARGS__))

static void set_dims(HloInstr *i, int n, const int64_t *v) {
  i->dims.n = n;
  i->dims.v = arena_memdup(M->arena, v, sizeof(int64_t) * (size_t)(n ? n : 1));
  i->has_dims = true;
}
#define DIMS(i, ...)                                                          \
  set_dims(i, (int)(sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t)),      \
           (int64_t[]){__VA_ARGS__})

static I64List list(int n, const int64_t *v) {
  I64List l = {n, n ? arena_memdup(M->arena, v, sizeof(int64_t) * (size_t)n)
                    : NULL};
  return l;
}
#define L(...)                                                                \
  list((int)(sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t)),             \
       (int64_t[]){__VA_ARGS__})
#define L0 ((I64List){0, NULL})

static void set_called(HloInstr *i, int n, HloComp **cs) {
  i->ncalled = n;
  i->called = arena_memdup(M->arena, cs, sizeof(HloComp *) * (size_t)n);
}

/* A scalar binary computation: (T, T) -> T with the given op. */
static HloComp *scalar_comp(const char *cname, HloOp op, const char *t) {
  HloComp *c = hlo_comp_new(M, cname);
  HloInstr *a = param_in(c, t), *b = param_in(c, t);
  HloInstr *ops[] = {a, b};
  const char *rt = op == HLO_COMPARE ? "pred[]" : t;
  HloInstr *r = hlo_instr_new(c, op, S(rt), 2, ops);
  r->name = name("r");
  if (op == HLO_COMPARE)
    r->cmp_dir = CMP_LT;
  c->root = r;
  return c;
}

/* Infers and expects success with the given shape text. */
static void expect_shape(HloInstr *i, const char *want) {
  Shape *s = hlo_infer_shape(M->arena, i, &D);
  cr_assert_not_null(s, "inference failed: %s", D.msg ? D.msg : "");
  cr_expect_str_eq(str(s), want);
  cr_expect(s->et == ET_TUPLE || !et_is_array(s->et) || s->layout,
            "result has no layout");
}

/* Infers and expects an error whose message contains `part`. */
static void expect_error(HloInstr *i, const char *part) {
  diag_clear(&D);
  Shape *s = hlo_infer_shape(M->arena, i, &D);
  cr_assert_null(s, "inference succeeded with %s", s ? str(s) : "");
  cr_assert(D.has_error);
  cr_expect(strstr(D.msg, part) != NULL, "message '%s' lacks '%s'", D.msg,
            part);
}

/*
 * Elementwise
 */

Test(infer, unary_keeps_shape) {
  HloInstr *x = P("f32[2,3]");
  expect_shape(I(HLO_NEGATE, "f32[2,3]", x), "f32[2,3]");
  expect_shape(I(HLO_EXP, "f32[2,3]", x), "f32[2,3]");
  expect_shape(I(HLO_IS_FINITE, "pred[2,3]", x), "pred[2,3]");
  expect_shape(I(HLO_COPY, "f32[2,3]", x), "f32[2,3]");
}

Test(infer, unary_complex_components) {
  HloInstr *z = P("c64[4]"), *w = P("c128[]");
  expect_shape(I(HLO_ABS, "f32[4]", z), "f32[4]");
  expect_shape(I(HLO_REAL, "f32[4]", z), "f32[4]");
  expect_shape(I(HLO_IMAG, "f64[]", w), "f64[]");
  expect_shape(I(HLO_SQRT, "c64[4]", z), "c64[4]");
}

Test(infer, unary_type_errors) {
  HloInstr *x = P("f32[2]"), *n = P("s32[2]"), *u = P("u8[2]");
  expect_error(I(HLO_NOT, "f32[2]", x), "pred or integer");
  expect_error(I(HLO_FLOOR, "s32[2]", n), "floating point");
  expect_error(I(HLO_CLZ, "f32[2]", x), "integer");
  expect_error(I(HLO_ABS, "u8[2]", u), "signed integer");
  expect_error(I(HLO_IS_FINITE, "pred[2]", n), "floating point");
  expect_shape(I(HLO_POPCNT, "u8[2]", u), "u8[2]");
  expect_shape(I(HLO_NOT, "s32[2]", n), "s32[2]");
}

Test(infer, unary_rejects_tuple_but_copy_accepts) {
  HloInstr *t = P("(f32[], s32[2])");
  expect_error(I(HLO_NEGATE, "f32[]", t), "must be an array");
  expect_shape(I(HLO_COPY, "(f32[], s32[2])", t), "(f32[], s32[2])");
  expect_shape(I(HLO_OPTIMIZATION_BARRIER, "(f32[], s32[2])", t),
               "(f32[], s32[2])");
}

Test(infer, binary) {
  HloInstr *x = P("f32[2,3]"), *y = P("f32[2,3]");
  expect_shape(I(HLO_ADD, "f32[2,3]", x, y), "f32[2,3]");
  HloInstr *cmp = I(HLO_COMPARE, "pred[2,3]", x, y);
  cmp->cmp_dir = CMP_GE;
  expect_shape(cmp, "pred[2,3]");
  expect_shape(I(HLO_COMPLEX, "c64[2,3]", x, y), "c64[2,3]");
  expect_shape(I(HLO_ATAN2, "f32[2,3]", x, y), "f32[2,3]");
}

Test(infer, binary_errors) {
  HloInstr *x = P("f32[2,3]"), *t = P("f32[3,2]"), *b = P("bf16[2,3]");
  HloInstr *p = P("pred[2,3]"), *h = P("f16[2,3]");
  expect_error(I(HLO_ADD, "f32[2,3]", x, t), "different dimensions");
  expect_error(I(HLO_MULTIPLY, "f32[2,3]", x, b), "different element types");
  expect_error(I(HLO_SUBTRACT, "pred[2,3]", p, p), "arithmetic");
  expect_error(I(HLO_SHIFT_LEFT, "f32[2,3]", x, x), "integer");
  expect_error(I(HLO_AND, "f32[2,3]", x, x), "pred or integer");
  expect_error(I(HLO_COMPLEX, "c64[2,3]", h, h), "f32 or f64");
  expect_shape(I(HLO_OR, "pred[2,3]", p, p), "pred[2,3]");
  HloInstr *cmp = I(HLO_COMPARE, "pred[2,3]", x, x);
  expect_error(cmp, "direction");
  cmp->cmp_dir = CMP_EQ;
  cmp->cmp_type = CMPT_SIGNED;
  expect_error(cmp, "comparison type");
}

Test(infer, binary_dynamic_dims_merge) {
  HloInstr *x = P("f32[<=4]"), *y = P("f32[4]");
  expect_shape(I(HLO_ADD, "f32[<=4]", y, x), "f32[<=4]");
}

Test(infer, select_and_clamp) {
  HloInstr *p = P("pred[4]"), *ps = P("pred[]"), *x = P("s32[4]");
  HloInstr *y = P("s32[4]"), *lo = P("s32[]"), *f = P("f32[4]");
  expect_shape(I(HLO_SELECT, "s32[4]", p, x, y), "s32[4]");
  expect_shape(I(HLO_SELECT, "s32[4]", ps, x, y), "s32[4]");
  expect_error(I(HLO_SELECT, "s32[4]", x, x, y), "pred");
  expect_error(I(HLO_SELECT, "s32[4]", p, x, f), "differ");
  expect_shape(I(HLO_CLAMP, "s32[4]", lo, x, lo), "s32[4]");
  expect_error(I(HLO_CLAMP, "s32[4]", lo, x, f), "element types");
}

Test(infer, operand_count_checked) {
  HloInstr *x = P("f32[2]");
  expect_error(I(HLO_ADD, "f32[2]", x), "expects 2 operands, has 1");
  expect_error(I(HLO_NEGATE, "f32[2]", x, x), "expects 1 operand, has 2");
}

Test(infer, error_names_instruction) {
  HloInstr *x = P("f32[2]"), *y = P("f32[3]");
  HloInstr *a = I(HLO_ADD, "f32[2]", x, y);
  a->name = "add.3";
  expect_error(a, "invalid add 'add.3': operands have different dimensions: "
                  "f32[2] and f32[3]");
}

/*
 * Conversions
 */

Test(infer, convert_takes_declared_type) {
  HloInstr *x = P("f32[2,<=3]");
  expect_shape(I(HLO_CONVERT, "bf16[2,<=3]", x), "bf16[2,<=3]");
  expect_error(I(HLO_CONVERT, "(f32[])", x), "arrays only");
}

Test(infer, bitcast_convert_changes_minor_dim) {
  HloInstr *x = P("f32[4]"), *b = P("s8[4,4]"), *bad = P("s8[4,3]");
  HloInstr *z = P("c64[2]");
  expect_shape(I(HLO_BITCAST_CONVERT, "s32[4]", x), "s32[4]");
  expect_shape(I(HLO_BITCAST_CONVERT, "s8[4,4]", x), "s8[4,4]");
  expect_shape(I(HLO_BITCAST_CONVERT, "f32[4]", b), "f32[4]");
  expect_error(I(HLO_BITCAST_CONVERT, "f32[4]", bad), "minor dimension");
  expect_error(I(HLO_BITCAST_CONVERT, "f64[2]", z), "complex");
  HloInstr *h = P("f16[3]");
  expect_shape(I(HLO_BITCAST_CONVERT, "u4[3,4]", h), "u4[3,4]");
  HloInstr *n = P("s4[8,2]");
  expect_shape(I(HLO_BITCAST_CONVERT, "s8[8]", n), "s8[8]");
  expect_shape(I(HLO_BITCAST_CONVERT, "f32[]", P("u8[4]")), "f32[]");
  /* XLA counts pred as 8 bits (primitive_util::BitWidth) */
  HloInstr *q = P("s8[4]");
  expect_shape(I(HLO_BITCAST_CONVERT, "pred[4]", q), "pred[4]");
  expect_shape(I(HLO_BITCAST_CONVERT, "pred[4,2]", P("s16[4]")), "pred[4,2]");
  expect_error(I(HLO_BITCAST_CONVERT, "s16[]", P("pred[3]")), "minor dimension");
}

Test(infer, bitcast_convert_supported_pairs) {
  cr_expect_null(hlo_bitcast_convert_unsupported(ET_S4, ET_S8));
  cr_expect_null(hlo_bitcast_convert_unsupported(ET_F64, ET_U2));
  cr_expect_null(hlo_bitcast_convert_unsupported(ET_F4E2M1FN, ET_BF16));
  cr_expect_null(hlo_bitcast_convert_unsupported(ET_PRED, ET_PRED));
  cr_expect_not_null(hlo_bitcast_convert_unsupported(ET_PRED, ET_S8));
  cr_expect_not_null(hlo_bitcast_convert_unsupported(ET_S16, ET_PRED));
  cr_expect_not_null(hlo_bitcast_convert_unsupported(ET_C64, ET_C128));
}

Test(infer, reduce_precision_and_stochastic_convert) {
  HloInstr *x = P("f32[8]"), *r = P("u32[8]"), *s = P("s32[8]");
  HloInstr *rp = I(HLO_REDUCE_PRECISION, "f32[8]", x);
  rp->exponent_bits = 5, rp->mantissa_bits = 10;
  expect_shape(rp, "f32[8]");
  rp->exponent_bits = 0;
  expect_error(rp, "exponent_bits");
  expect_shape(I(HLO_STOCHASTIC_CONVERT, "s8[8]", x, r), "s8[8]");
  expect_error(I(HLO_STOCHASTIC_CONVERT, "s8[8]", x, s), "unsigned");
}

/*
 * Data movement
 */

Test(infer, broadcast) {
  HloInstr *x = P("f32[3]");
  HloInstr *b = I(HLO_BROADCAST, "f32[2,3]", x);
  DIMS(b, 1);
  expect_shape(b, "f32[2,3]");
  b = I(HLO_BROADCAST, "f32[3,2]", x);
  DIMS(b, 1);
  expect_error(b, "maps to result dimension 1 of size 2");
  b = I(HLO_BROADCAST, "f32[2,3]", x);
  DIMS(b, 2);
  expect_error(b, "out of range");
  b = I(HLO_BROADCAST, "s32[2,3]", x);
  DIMS(b, 1);
  expect_shape(b, "f32[2,3]"); /* the verifier reports the type mismatch */
}

Test(infer, reshape_and_transpose) {
  HloInstr *x = P("f32[2,3,4]");
  expect_shape(I(HLO_RESHAPE, "f32[6,4]", x), "f32[6,4]");
  expect_error(I(HLO_RESHAPE, "f32[5,4]", x), "24 elements");
  HloInstr *t = I(HLO_TRANSPOSE, "f32[4,2,3]", x);
  DIMS(t, 2, 0, 1);
  expect_shape(t, "f32[4,2,3]");
  DIMS(t, 0, 0, 1);
  expect_error(t, "appears twice");
  DIMS(t, 1, 0);
  expect_error(t, "not a permutation");
}

Test(infer, slice) {
  HloInstr *x = P("f32[10,8]");
  HloInstr *s = I(HLO_SLICE, "f32[3,4]", x);
  SliceDim sd[2] = {{2, 9, 3}, {0, 8, 2}};
  s->slice = sd;
  expect_shape(s, "f32[3,4]");
  sd[0].limit = 11;
  expect_error(s, "limit 11 exceeds");
  sd[0] = (SliceDim){5, 4, 1};
  expect_error(s, "start 5 is greater than limit 4");
  sd[0] = (SliceDim){0, 4, 0};
  expect_error(s, "stride");
}

Test(infer, dynamic_slice_and_update) {
  HloInstr *x = P("f32[10,8]"), *i = P("s32[]"), *j = P("s32[]");
  HloInstr *k64 = P("s64[]"), *u = P("f32[2,8]");
  HloInstr *ds = I(HLO_DYNAMIC_SLICE, "f32[2,8]", x, i, j);
  ds->dynamic_slice_sizes = L(2, 8);
  expect_shape(ds, "f32[2,8]");
  ds->dynamic_slice_sizes = L(11, 8);
  expect_error(ds, "exceeds");
  ds = I(HLO_DYNAMIC_SLICE, "f32[2,8]", x, i, k64);
  ds->dynamic_slice_sizes = L(2, 8);
  expect_error(ds, "one type");
  ds = I(HLO_DYNAMIC_SLICE, "f32[2,8]", x, i);
  ds->dynamic_slice_sizes = L(2, 8);
  expect_error(ds, "needs 2 start indices");
  expect_shape(I(HLO_DYNAMIC_UPDATE_SLICE, "f32[10,8]", x, u, i, j),
               "f32[10,8]");
  HloInstr *big = P("f32[11,8]");
  expect_error(I(HLO_DYNAMIC_UPDATE_SLICE, "f32[10,8]", x, big, i, j),
               "exceeds");
}

Test(infer, pad_negative_and_interior) {
  HloInstr *x = P("f32[4,3]"), *v = P("f32[]"), *vi = P("s32[]");
  HloInstr *p = I(HLO_PAD, "f32[8,1]", x, v);
  PadDim pd[2] = {{-1, 2, 1}, {-1, -1, 0}};
  p->padding = pd;
  expect_shape(p, "f32[8,1]");
  pd[1] = (PadDim){-2, -2, 0};
  expect_error(p, "negative size");
  pd[1] = (PadDim){0, 0, -1};
  expect_error(p, "negative interior");
  expect_error(I(HLO_PAD, "f32[8,1]", x, vi), "padding value type");
}

Test(infer, concatenate_and_reverse) {
  HloInstr *a = P("f32[2,3]"), *b = P("f32[5,3]"), *c = P("f32[2,4]");
  HloInstr *cc = I(HLO_CONCATENATE, "f32[7,3]", a, b);
  DIMS(cc, 0);
  expect_shape(cc, "f32[7,3]");
  cc = I(HLO_CONCATENATE, "f32[4,3]", a, c);
  DIMS(cc, 0);
  expect_error(cc, "in dimension 1");
  HloInstr *r = I(HLO_REVERSE, "f32[2,3]", a);
  DIMS(r, 1, 0);
  expect_shape(r, "f32[2,3]");
  DIMS(r, 2);
  expect_error(r, "out of range");
}

Test(infer, iota_tuple_gte) {
  HloInstr *io = I(HLO_IOTA, "s32[4,5]", );
  io->iota_dim = 1;
  expect_shape(io, "s32[4,5]");
  io->iota_dim = 2;
  expect_error(io, "iota_dimension");
  HloInstr *x = P("f32[2]"), *y = P("s32[]");
  HloInstr *t = I(HLO_TUPLE, "(f32[2], s32[])", x, y);
  expect_shape(t, "(f32[2], s32[])");
  HloInstr *g = I(HLO_GET_TUPLE_ELEMENT, "s32[]", t);
  g->tuple_index = 1;
  expect_shape(g, "s32[]");
  g->tuple_index = 2;
  expect_error(g, "out of range");
}

Test(infer, bitcast_checks_size) {
  HloInstr *x = P("f32[2,3]");
  expect_shape(I(HLO_BITCAST, "f32[3,2]", x), "f32[3,2]");
  expect_shape(I(HLO_BITCAST, "u8[24]", x), "u8[24]");
  expect_error(I(HLO_BITCAST, "f32[7]", x), "different sizes");
}

Test(infer, dimension_sizes) {
  HloInstr *x = P("f32[4,5]"), *n = P("s32[]");
  HloInstr *g = I(HLO_GET_DIMENSION_SIZE, "s32[]", x);
  DIMS(g, 1);
  expect_shape(g, "s32[]");
  HloInstr *s = I(HLO_SET_DIMENSION_SIZE, "f32[4,<=5]", x, n);
  DIMS(s, 1);
  expect_shape(s, "f32[4,<=5]");
  DIMS(s, 3);
  expect_error(s, "out of range");
}

Test(infer, sort_variadic) {
  HloComp *cmp = hlo_comp_new(M, "cmp");
  HloInstr *a = param_in(cmp, "f32[]"), *b = param_in(cmp, "f32[]");
  param_in(cmp, "s32[]"), param_in(cmp, "s32[]");
  HloInstr *r = hlo_instr_new(cmp, HLO_COMPARE, S("pred[]"), 2, OPS(a, b));
  r->name = "lt", r->cmp_dir = CMP_LT;
  cmp->root = r;
  HloInstr *k = P("f32[8]"), *v = P("s32[8]");
  HloInstr *s = I(HLO_SORT, "(f32[8], s32[8])", k, v);
  DIMS(s, 0);
  set_called(s, 1, (HloComp *[]){cmp});
  expect_shape(s, "(f32[8], s32[8])");
  HloInstr *s1 = I(HLO_SORT, "f32[8]", k);
  DIMS(s1, 0);
  set_called(s1, 1, (HloComp *[]){cmp});
  expect_error(s1, "must take 2 parameters, takes 4");
}

Test(infer, topk) {
  HloInstr *x = P("f32[3,10]");
  HloInstr *t = I(HLO_TOPK, "(f32[3,4], s32[3,4])", x);
  t->topk_k = 4;
  expect_shape(t, "(f32[3,4], s32[3,4])");
  t->topk_k = 11;
  expect_error(t, "k=11");
}

/*
 * Gather and scatter
 */

Test(infer, gather_embedding) {
  HloInstr *x = P("f32[10,4]"), *ix = P("s32[5]");
  HloInstr *g = I(HLO_GATHER, "f32[5,4]", x, ix);
  GatherDnums gd = {.offset_dims = L(1), .collapsed_slice_dims = L(0),
                    .start_index_map = L(0), .index_vector_dim = 1};
  g->gather = &gd;
  g->gather_slice_sizes = L(1, 4);
  expect_shape(g, "f32[5,4]");
  g->gather_slice_sizes = L(2, 4);
  expect_error(g, "collapsed dimension 0 has slice size 2");
  g->gather_slice_sizes = L(1, 5);
  expect_error(g, "out of range");
}

Test(infer, gather_batching_dims) {
  /* operand [B=3, 10, 4], indices [B=3, 5, 1] */
  HloInstr *x = P("f32[3,10,4]"), *ix = P("s32[3,5,1]");
  HloInstr *g = I(HLO_GATHER, "f32[3,5,4]", x, ix);
  GatherDnums gd = {.offset_dims = L(2), .collapsed_slice_dims = L(1),
                    .start_index_map = L(1), .operand_batching_dims = L(0),
                    .start_indices_batching_dims = L(0),
                    .index_vector_dim = 2};
  g->gather = &gd;
  g->gather_slice_sizes = L(1, 1, 4);
  expect_shape(g, "f32[3,5,4]");
}

Test(infer, scatter_add) {
  HloComp *add = scalar_comp("add", HLO_ADD, "f32[]");
  HloInstr *x = P("f32[10,4]"), *ix = P("s32[5,1]"), *u = P("f32[5,4]");
  HloInstr *s = I(HLO_SCATTER, "f32[10,4]", x, ix, u);
  ScatterDnums sd = {.update_window_dims = L(1), .inserted_window_dims = L(0),
                     .scatter_dims_to_operand_dims = L(0),
                     .index_vector_dim = 1};
  s->scatter = &sd;
  set_called(s, 1, (HloComp *[]){add});
  expect_shape(s, "f32[10,4]");
  HloInstr *bad = P("f32[6,4]");
  s = I(HLO_SCATTER, "f32[10,4]", x, ix, bad);
  s->scatter = &sd;
  set_called(s, 1, (HloComp *[]){add});
  expect_error(s, "indices give 5");
  expect_error(I(HLO_SCATTER, "f32[10,4]", x, ix), "2N+1 operands");
}

/*
 * Dot and convolution
 */

Test(infer, dot_matmul_and_batch) {
  HloInstr *a = P("f32[2,3]"), *b = P("f32[3,4]");
  HloInstr *d = I(HLO_DOT, "f32[2,4]", a, b);
  DotDnums dn = {.lhs_contracting = L(1), .rhs_contracting = L(0)};
  d->dot = &dn;
  expect_shape(d, "f32[2,4]");
  HloInstr *x = P("bf16[5,2,3]"), *y = P("bf16[5,4,3]");
  HloInstr *bd = I(HLO_DOT, "f32[5,2,4]", x, y);
  DotDnums bn = {.lhs_batch = L(0), .rhs_batch = L(0),
                 .lhs_contracting = L(2), .rhs_contracting = L(2)};
  bd->dot = &bn;
  expect_shape(bd, "f32[5,2,4]"); /* mixed precision: declared type wins */
  DotDnums wrong = {.lhs_contracting = L(0), .rhs_contracting = L(0)};
  d->dot = &wrong;
  expect_error(d, "contracting dimension sizes differ");
  DotDnums range = {.lhs_contracting = L(2), .rhs_contracting = L(0)};
  d->dot = &range;
  expect_error(d, "out of range");
}

Test(infer, dot_outer_product_order) {
  /* batch first, then lhs free, then rhs free */
  HloInstr *a = P("f32[7,2,3]"), *b = P("f32[3,7,5]");
  HloInstr *d = I(HLO_DOT, "f32[7,2,5]", a, b);
  DotDnums dn = {.lhs_batch = L(0), .rhs_batch = L(1),
                 .lhs_contracting = L(2), .rhs_contracting = L(0)};
  d->dot = &dn;
  expect_shape(d, "f32[7,2,5]");
}

Test(infer, ragged_dot_modes) {
  HloInstr *l = P("f32[11,5]"), *r = P("f32[3,5,7]"), *g = P("s32[3]");
  HloInstr *d = I(HLO_RAGGED_DOT, "f32[11,7]", l, r, g);
  DotDnums dn = {.lhs_contracting = L(1), .rhs_contracting = L(1),
                 .lhs_ragged = L(0), .rhs_group = L(0)};
  d->dot = &dn;
  expect_shape(d, "f32[11,7]");
  /* ragged contracting: [m,k], [k,n], [g] -> [g,m,n] */
  HloInstr *r2 = P("f32[5,7]");
  HloInstr *d2 = I(HLO_RAGGED_DOT, "f32[3,11,7]", l, r2, g);
  DotDnums dn2 = {.lhs_contracting = L(1), .rhs_contracting = L(0),
                  .lhs_ragged = L(1)};
  d2->dot = &dn2;
  expect_shape(d2, "f32[3,11,7]");
}

Test(infer, convolution_2d) {
  HloInstr *x = P("f32[1,5,5,3]"), *k = P("f32[3,3,3,8]");
  HloInstr *cv = I(HLO_CONVOLUTION, "f32[1,3,3,8]", x, k);
  int64_t isp[] = {1, 2}, ksp[] = {0, 1}, osp[] = {1, 2};
  ConvDnums dn = {.nspatial = 2, .input_batch = 0, .input_feature = 3,
                  .input_spatial = isp, .kernel_input_feature = 2,
                  .kernel_output_feature = 3, .kernel_spatial = ksp,
                  .output_batch = 0, .output_feature = 3,
                  .output_spatial = osp};
  WindowDim wd[2] = {{3, 1, 0, 0, 1, 1, false}, {3, 1, 0, 0, 1, 1, false}};
  Window w = {2, wd};
  ConvAttrs ca = {.window = &w, .dnums = &dn};
  cv->conv = &ca;
  expect_shape(cv, "f32[1,3,3,8]");
  wd[0].pad_lo = wd[0].pad_hi = 1;
  wd[1].stride = 2;
  expect_shape(cv, "f32[1,5,2,8]");
  wd[0].size = 2;
  expect_error(cv, "window size 2");
}

Test(infer, convolution_feature_groups) {
  HloInstr *x = P("f32[2,8,8,6]"), *k = P("f32[3,3,2,6]");
  HloInstr *cv = I(HLO_CONVOLUTION, "f32[2,6,6,6]", x, k);
  int64_t isp[] = {1, 2}, ksp[] = {0, 1}, osp[] = {1, 2};
  ConvDnums dn = {.nspatial = 2, .input_batch = 0, .input_feature = 3,
                  .input_spatial = isp, .kernel_input_feature = 2,
                  .kernel_output_feature = 3, .kernel_spatial = ksp,
                  .output_batch = 0, .output_feature = 3,
                  .output_spatial = osp};
  WindowDim wd[2] = {{3, 1, 0, 0, 1, 1, false}, {3, 1, 0, 0, 1, 1, false}};
  Window w = {2, wd};
  ConvAttrs ca = {.window = &w, .dnums = &dn, .feature_group_count = 3};
  cv->conv = &ca;
  expect_shape(cv, "f32[2,6,6,6]");
  ca.feature_group_count = 2;
  expect_error(cv, "feature_group_count");
}

/*
 * Reductions
 */

Test(infer, reduce_single_and_variadic) {
  HloComp *add = scalar_comp("add", HLO_ADD, "f32[]");
  HloInstr *x = P("f32[2,3]"), *z = P("f32[]");
  HloInstr *r = I(HLO_REDUCE, "f32[2]", x, z);
  DIMS(r, 1);
  set_called(r, 1, (HloComp *[]){add});
  expect_shape(r, "f32[2]");
  DIMS(r, 5);
  expect_error(r, "dimension 5 is out of range");

  /* argmax-style: (f32, s32) x (f32, s32) -> (f32, s32) */
  HloComp *am = hlo_comp_new(M, "argmax");
  HloInstr *a0 = param_in(am, "f32[]"), *a1 = param_in(am, "s32[]");
  param_in(am, "f32[]"), param_in(am, "s32[]");
  HloInstr *t = hlo_instr_new(am, HLO_TUPLE, S("(f32[], s32[])"), 2,
                              OPS(a0, a1));
  t->name = "t";
  am->root = t;
  HloInstr *iv = P("s32[2,3]"), *zi = P("s32[]");
  HloInstr *vr = I(HLO_REDUCE, "(f32[3], s32[3])", x, iv, z, zi);
  DIMS(vr, 0);
  set_called(vr, 1, (HloComp *[]){am});
  expect_shape(vr, "(f32[3], s32[3])");
  set_called(vr, 1, (HloComp *[]){add});
  expect_error(vr, "must take 4 parameters but takes 2");
}

Test(infer, reduce_reducer_type_mismatch) {
  HloComp *add = scalar_comp("addi", HLO_ADD, "s32[]");
  HloInstr *x = P("f32[4]"), *z = P("f32[]");
  HloInstr *r = I(HLO_REDUCE, "f32[]", x, z);
  DIMS(r, 0);
  set_called(r, 1, (HloComp *[]){add});
  expect_error(r, "reducer 'addi'");
}

Test(infer, reduce_window) {
  HloComp *mx = scalar_comp("max", HLO_MAXIMUM, "f32[]");
  HloInstr *x = P("f32[4,6]"), *z = P("f32[]");
  HloInstr *rw = I(HLO_REDUCE_WINDOW, "f32[2,3]", x, z);
  WindowDim wd[2] = {{2, 2, 0, 0, 1, 1, false}, {2, 2, 0, 0, 1, 1, false}};
  Window w = {2, wd};
  rw->window = &w;
  set_called(rw, 1, (HloComp *[]){mx});
  expect_shape(rw, "f32[2,3]");
  wd[1] = (WindowDim){3, 1, 1, 1, 1, 1, false};
  expect_shape(rw, "f32[2,6]");
  wd[0].base_dilation = 2; /* dilated 4 -> 7, window 2 stride 2 -> 3 */
  expect_shape(rw, "f32[3,6]");
  w.ndims = 1;
  expect_error(rw, "window has 1 dimensions");
}

Test(infer, select_and_scatter) {
  HloComp *ge = scalar_comp("ge", HLO_COMPARE, "f32[]");
  HloComp *add = scalar_comp("add", HLO_ADD, "f32[]");
  HloInstr *x = P("f32[4,4]"), *src = P("f32[2,2]"), *z = P("f32[]");
  HloInstr *ss = I(HLO_SELECT_AND_SCATTER, "f32[4,4]", x, src, z);
  WindowDim wd[2] = {{2, 2, 0, 0, 1, 1, false}, {2, 2, 0, 0, 1, 1, false}};
  Window w = {2, wd};
  ss->window = &w;
  set_called(ss, 2, (HloComp *[]){ge, add});
  expect_shape(ss, "f32[4,4]");
  set_called(ss, 2, (HloComp *[]){add, add});
  expect_error(ss, "must return pred[]");
}

Test(infer, map) {
  HloComp *add = scalar_comp("add", HLO_ADD, "f32[]");
  HloInstr *x = P("f32[3]"), *y = P("f32[3]");
  HloInstr *mp = I(HLO_MAP, "f32[3]", x, y);
  DIMS(mp, 0);
  set_called(mp, 1, (HloComp *[]){add});
  expect_shape(mp, "f32[3]");
  HloInstr *m1 = I(HLO_MAP, "f32[3]", x);
  set_called(m1, 1, (HloComp *[]){add});
  expect_error(m1, "takes 2 parameters but map has 1 operands");
}

/*
 * Control flow and calls
 */

Test(infer, while_loop) {
  HloComp *cond = hlo_comp_new(M, "cond");
  HloInstr *cp = param_in(cond, "(s32[], f32[4])");
  HloInstr *cg = hlo_instr_new(cond, HLO_GET_TUPLE_ELEMENT, S("s32[]"), 1,
                               OPS(cp));
  cg->name = "cg";
  HloInstr *lim = hlo_instr_new(cond, HLO_CONSTANT, S("s32[]"), 0, NULL);
  lim->name = "lim";
  HloInstr *lt = hlo_instr_new(cond, HLO_COMPARE, S("pred[]"), 2,
                               OPS(cg, lim));
  lt->name = "lt", lt->cmp_dir = CMP_LT;
  cond->root = lt;
  HloComp *body = hlo_comp_new(M, "body");
  HloInstr *bp = param_in(body, "(s32[], f32[4])");
  body->root = bp;
  HloInstr *init = P("(s32[], f32[4])");
  HloInstr *w = I(HLO_WHILE, "(s32[], f32[4])", init);
  set_called(w, 2, (HloComp *[]){cond, body});
  expect_shape(w, "(s32[], f32[4])");
  set_called(w, 2, (HloComp *[]){body, body});
  expect_error(w, "must return pred[]");
  HloInstr *bad = P("(s32[], f32[5])");
  HloInstr *w2 = I(HLO_WHILE, "(s32[], f32[5])", bad);
  set_called(w2, 2, (HloComp *[]){cond, body});
  expect_error(w2, "does not match the parameter");
}

Test(infer, conditional_branches) {
  HloComp *b0 = hlo_comp_new(M, "b0");
  HloInstr *p0 = param_in(b0, "f32[2]");
  HloInstr *n0 = hlo_instr_new(b0, HLO_NEGATE, S("f32[2]"), 1, OPS(p0));
  n0->name = "n0";
  b0->root = n0;
  HloComp *b1 = hlo_comp_new(M, "b1");
  b1->root = param_in(b1, "f32[2]");
  HloComp *b2 = hlo_comp_new(M, "b2");
  b2->root = param_in(b2, "s32[2]");
  HloInstr *pr = P("pred[]"), *ix = P("s32[]"), *x = P("f32[2]");
  HloInstr *cd = I(HLO_CONDITIONAL, "f32[2]", pr, x, x);
  set_called(cd, 2, (HloComp *[]){b0, b1});
  expect_shape(cd, "f32[2]");
  HloInstr *ci = I(HLO_CONDITIONAL, "f32[2]", ix, x, x, x);
  set_called(ci, 3, (HloComp *[]){b0, b1, b1});
  expect_shape(ci, "f32[2]");
  HloInstr *c3 = I(HLO_CONDITIONAL, "f32[2]", pr, x, x, x);
  set_called(c3, 3, (HloComp *[]){b0, b1, b1});
  expect_error(c3, "needs 2 branches");
  HloInstr *xs = P("s32[2]");
  HloInstr *c4 = I(HLO_CONDITIONAL, "f32[2]", pr, x, xs);
  set_called(c4, 2, (HloComp *[]){b0, b2});
  expect_error(c4, "returns s32[2]");
}

Test(infer, call_and_fusion) {
  HloComp *f = hlo_comp_new(M, "fused");
  HloInstr *a = param_in(f, "f32[3]"), *b = param_in(f, "f32[3]");
  HloInstr *r = hlo_instr_new(f, HLO_ADD, S("f32[3]"), 2, OPS(a, b));
  r->name = "fa";
  f->root = r;
  HloInstr *x = P("f32[3]"), *y = P("f32[4]");
  HloInstr *fu = I(HLO_FUSION, "f32[3]", x, x);
  set_called(fu, 1, (HloComp *[]){f});
  expect_shape(fu, "f32[3]");
  HloInstr *cl = I(HLO_CALL, "f32[3]", x, x);
  set_called(cl, 1, (HloComp *[]){f});
  expect_shape(cl, "f32[3]");
  HloInstr *bad = I(HLO_CALL, "f32[3]", x, y);
  set_called(bad, 1, (HloComp *[]){f});
  expect_error(bad, "operand 1 is f32[4]");
  HloInstr *few = I(HLO_CALL, "f32[3]", x);
  set_called(few, 1, (HloComp *[]){f});
  expect_error(few, "takes 2 parameters but 1 operand is given");
}

Test(infer, non_caller_with_called_computation) {
  HloComp *add = scalar_comp("add", HLO_ADD, "f32[]");
  HloInstr *x = P("f32[3]");
  HloInstr *n = I(HLO_NEGATE, "f32[3]", x);
  set_called(n, 1, (HloComp *[]){add});
  expect_error(n, "does not call computations");
}

Test(infer, async_with_wrapped_computation) {
  HloComp *w = hlo_comp_new(M, "wrapped");
  HloInstr *wp = param_in(w, "f32[4]");
  HloInstr *wn = hlo_instr_new(w, HLO_NEGATE, S("f32[4]"), 1, OPS(wp));
  wn->name = "wn";
  w->root = wn;
  HloInstr *x = P("f32[4]");
  HloInstr *st = I(HLO_ASYNC_START, "((f32[4]), f32[4], s32[])", x);
  set_called(st, 1, (HloComp *[]){w});
  expect_shape(st, "((f32[4]), f32[4], s32[])");
  HloInstr *up = I(HLO_ASYNC_UPDATE, "((f32[4]), f32[4], s32[])", st);
  set_called(up, 1, (HloComp *[]){w});
  expect_shape(up, "((f32[4]), f32[4], s32[])");
  HloInstr *dn = I(HLO_ASYNC_DONE, "f32[4]", up);
  set_called(dn, 1, (HloComp *[]){w});
  expect_shape(dn, "f32[4]");
  HloInstr *bad = I(HLO_ASYNC_DONE, "f32[4]", x);
  expect_error(bad, "must be an async-start");
}

Test(infer, async_sugar_without_computation) {
  HloInstr *x = P("f32[4]");
  HloInstr *st = I(HLO_ASYNC_START, "((f32[4]), f32[4], u32[])", x);
  st->async_sugar = true, st->async_wrapped_op = HLO_NEGATE;
  expect_shape(st, "((f32[4]), f32[4], u32[])");
  st->async_wrapped_op = HLO_NOT;
  expect_error(st, "pred or integer");
}

Test(infer, custom_call_parameter_constant) {
  HloInstr *x = P("f32[4]");
  HloInstr *cc = I(HLO_CUSTOM_CALL, "(s8[100], f32[2])", x);
  expect_shape(cc, "(s8[100], f32[2])");
  HloInstr *k = I(HLO_CONSTANT, "f32[2]", );
  expect_error(k, "no literal");
  k->literal = literal_new(M->arena, S("f32[2]"));
  expect_shape(k, "f32[2]");
  k->literal = literal_new(M->arena, S("f32[3]"));
  expect_shape(k, "f32[3]"); /* the verifier reports the mismatch */
}

Test(infer, tokens_feeds_send_recv) {
  HloInstr *t = I(HLO_AFTER_ALL, "token[]", );
  expect_shape(t, "token[]");
  HloInstr *x = P("f32[4]");
  expect_error(I(HLO_AFTER_ALL, "token[]", t, x), "must be a token");
  expect_shape(I(HLO_ADD_DEPENDENCY, "f32[4]", x, t), "f32[4]");
  expect_shape(I(HLO_INFEED, "((f32[2], s32[]), token[])", t),
               "((f32[2], s32[]), token[])");
  expect_shape(I(HLO_OUTFEED, "token[]", x, t), "token[]");
  HloInstr *s = I(HLO_SEND, "(f32[4], u32[], token[])", x, t);
  expect_shape(s, "(f32[4], u32[], token[])");
  expect_shape(I(HLO_SEND_DONE, "token[]", s), "token[]");
  HloInstr *r = I(HLO_RECV, "(f32[4], u32[], token[])", t);
  expect_shape(r, "(f32[4], u32[], token[])");
  expect_shape(I(HLO_RECV_DONE, "(f32[4], token[])", r), "(f32[4], token[])");
  expect_error(I(HLO_RECV_DONE, "(f32[4], token[])", s), "must be a recv");
}

Test(infer, copy_start_done) {
  HloInstr *x = P("f32[4]");
  HloInstr *cs = I(HLO_COPY_START, "(f32[4], f32[4], u32[])", x);
  expect_shape(cs, "(f32[4], f32[4], u32[])");
  expect_shape(I(HLO_COPY_DONE, "f32[4]", cs), "f32[4]");
}

Test(infer, rng_ops) {
  HloInstr *a = P("f32[]"), *b = P("f32[]"), *st = P("u64[2]");
  HloInstr *r = I(HLO_RNG, "f32[3,3]", a, b);
  r->rng_dist = RNG_NORMAL;
  expect_shape(r, "f32[3,3]");
  HloInstr *ai = P("s32[]");
  HloInstr *ri = I(HLO_RNG, "s32[3]", ai, ai);
  ri->rng_dist = RNG_NORMAL;
  expect_error(ri, "rng_normal");
  /* XLA's parser takes further operands (the MHLO shape operand) */
  HloInstr *shape = P("u64[3]");
  HloInstr *r3 = I(HLO_RNG, "f32[2,2]", a, b, shape);
  r3->rng_dist = RNG_UNIFORM;
  expect_shape(r3, "f32[2,2]");
  HloInstr *r1 = I(HLO_RNG, "f32[2]", a);
  r1->rng_dist = RNG_UNIFORM;
  expect_error(r1, "expects 2 operands");
  HloInstr *g = I(HLO_RNG_BIT_GENERATOR, "(u64[2], u32[8])", st);
  expect_shape(g, "(u64[2], u32[8])");
  expect_shape(I(HLO_RNG_GET_AND_UPDATE_STATE, "u64[2]", ), "u64[2]");
  expect_shape(I(HLO_REPLICA_ID, "u32[]", ), "u32[]");
}

/*
 * Linear algebra, fft, batch norm
 */

Test(infer, fft_kinds) {
  HloInstr *r = P("f32[3,8]"), *z = P("c64[3,5]");
  HloInstr *f = I(HLO_FFT, "c64[3,5]", r);
  f->fft_type = FFT_RFFT, f->fft_length = L(8);
  expect_shape(f, "c64[3,5]");
  HloInstr *g = I(HLO_FFT, "f32[3,8]", z);
  g->fft_type = FFT_IRFFT, g->fft_length = L(8);
  expect_shape(g, "f32[3,8]");
  HloInstr *h = I(HLO_FFT, "c64[3,5]", z);
  h->fft_type = FFT_FFT, h->fft_length = L(5);
  expect_shape(h, "c64[3,5]");
  f->fft_length = L(7);
  expect_error(f, "fft_length");
}

Test(infer, cholesky_triangular_solve) {
  HloInstr *a = P("f32[2,4,4]"), *b = P("f32[2,4,3]"), *n = P("f32[4,3]");
  expect_shape(I(HLO_CHOLESKY, "f32[2,4,4]", a), "f32[2,4,4]");
  expect_error(I(HLO_CHOLESKY, "f32[4,3]", n), "minor dimensions");
  HloInstr *ts = I(HLO_TRIANGULAR_SOLVE, "f32[2,4,3]", a, b);
  ts->tri_left_side = true, ts->tri_transpose_a = TRI_NO_TRANSPOSE;
  expect_shape(ts, "f32[2,4,3]");
  ts->tri_left_side = false;
  expect_error(ts, "shared dimension");
}

Test(infer, batch_norm) {
  HloInstr *x = P("f32[2,4,5]"), *s = P("f32[4]"), *o = P("f32[4]");
  HloInstr *bn = I(HLO_BATCH_NORM_TRAINING, "(f32[2,4,5], f32[4], f32[4])", x,
                   s, o);
  bn->feature_index = 1;
  expect_shape(bn, "(f32[2,4,5], f32[4], f32[4])");
  bn->feature_index = 2;
  expect_error(bn, "features");
  HloInstr *bi = I(HLO_BATCH_NORM_INFERENCE, "f32[2,4,5]", x, s, o, s, o);
  bi->feature_index = 1;
  expect_shape(bi, "f32[2,4,5]");
  HloInstr *bg = I(HLO_BATCH_NORM_GRAD, "(f32[2,4,5], f32[4], f32[4])", x, s,
                   s, s, x);
  bg->feature_index = 1;
  expect_shape(bg, "(f32[2,4,5], f32[4], f32[4])");
}

/*
 * Collectives
 */

static ReplicaGroups *groups2x2(void) {
  ReplicaGroups *rg = ARENA_NEW(M->arena, ReplicaGroups);
  rg->ngroups = 2;
  rg->groups = ARENA_ARRAY(M->arena, I64List, 2);
  rg->groups[0] = L(0, 1);
  rg->groups[1] = L(2, 3);
  return rg;
}

Test(infer, all_gather_multiplies) {
  HloInstr *x = P("f32[4,3]");
  HloInstr *ag = I(HLO_ALL_GATHER, "f32[8,3]", x);
  DIMS(ag, 0);
  ag->replica_groups = groups2x2();
  expect_shape(ag, "f32[8,3]");
  HloInstr *bad = I(HLO_ALL_GATHER, "f32[12,3]", x);
  DIMS(bad, 0);
  bad->replica_groups = groups2x2();
  expect_error(bad, "gathers 3 shards but the replica groups have 2");
}

Test(infer, reduce_scatter_divides_and_all_reduce_tuples) {
  HloComp *add = scalar_comp("add", HLO_ADD, "f32[]");
  HloInstr *x = P("f32[8,3]"), *y = P("f32[2]");
  HloInstr *rs = I(HLO_REDUCE_SCATTER, "f32[4,3]", x);
  DIMS(rs, 0);
  rs->replica_groups = groups2x2();
  set_called(rs, 1, (HloComp *[]){add});
  expect_shape(rs, "f32[4,3]");
  HloInstr *ar = I(HLO_ALL_REDUCE, "(f32[8,3], f32[2])", x, y);
  set_called(ar, 1, (HloComp *[]){add});
  expect_shape(ar, "(f32[8,3], f32[2])");
  HloInstr *st = I(HLO_ALL_REDUCE_START, "f32[2]", y);
  set_called(st, 1, (HloComp *[]){add});
  expect_shape(st, "f32[2]");
  expect_shape(I(HLO_ALL_REDUCE_DONE, "f32[2]", st), "f32[2]");
}

Test(infer, replica_groups_checked) {
  HloInstr *x = P("f32[4]");
  HloInstr *ag = I(HLO_ALL_GATHER, "f32[8]", x);
  DIMS(ag, 0);
  ReplicaGroups *rg = groups2x2();
  rg->groups[1] = L(2, 2);
  ag->replica_groups = rg;
  expect_error(ag, "appears twice");
  M->replica_count = 8;
  ag->replica_groups = groups2x2();
  expect_error(ag, "name 4 devices but there are 8 replicas");
}

Test(infer, all_to_all_and_permute) {
  HloInstr *x = P("f32[4,6]");
  HloInstr *a2a = I(HLO_ALL_TO_ALL, "f32[4,6]", x);
  DIMS(a2a, 1);
  a2a->replica_groups = groups2x2();
  expect_shape(a2a, "f32[4,6]");
  HloInstr *tup = I(HLO_ALL_TO_ALL, "(f32[4,6], f32[4,6])", x, x);
  tup->replica_groups = groups2x2();
  expect_shape(tup, "(f32[4,6], f32[4,6])");
  HloInstr *cp = I(HLO_COLLECTIVE_PERMUTE, "f32[4,6]", x);
  int64_t pairs[2][2] = {{0, 1}, {1, 0}};
  cp->npairs = 2, cp->source_target_pairs = pairs;
  expect_shape(cp, "f32[4,6]");
  pairs[1][1] = 1;
  expect_error(cp, "target 1 appears twice");
  HloInstr *cs = I(HLO_COLLECTIVE_PERMUTE_START, "(f32[4,6], f32[4,6])", x);
  expect_shape(cs, "(f32[4,6], f32[4,6])");
  expect_shape(I(HLO_COLLECTIVE_PERMUTE_DONE, "f32[4,6]", cs), "f32[4,6]");
}

Test(infer, every_opcode_is_handled_without_crashing) {
  /* An instruction of each opcode with no operands or attributes: the
   * inference may succeed or fail, but must not crash. */
  for (int op = 0; op < HLO_OP_COUNT; op++) {
    HloInstr *i = hlo_instr_new(C, (HloOp)op, S("f32[2]"), 0, NULL);
    i->name = "x";
    diag_clear(&D);
    Shape *s = hlo_infer_shape(M->arena, i, &D);
    cr_expect(s || D.has_error, "%s: no shape and no error",
              hlo_op_name((HloOp)op));
  }
}

/*
 * Without a declared shape (the parser inferring an omitted shape)
 */

Test(infer, without_declared_shape) {
  HloInstr *x = P("f32[3]"), *a = P("bf16[2,3]"), *b = P("f32[3,4]");
  HloInstr *n = I(HLO_NEGATE, "f32[3]", x);
  n->shape = NULL;
  expect_shape(n, "f32[3]");
  HloInstr *bc = I(HLO_BROADCAST, "f32[3]", x);
  bc->shape = NULL;
  DIMS(bc, 2, 5); /* XLA reads dimensions= as new major sizes here */
  expect_shape(bc, "f32[2,5,3]");
  HloInstr *d = I(HLO_DOT, "f32[3]", a, b);
  d->shape = NULL;
  DotDnums dn = {.lhs_contracting = L(1), .rhs_contracting = L(0)};
  d->dot = &dn;
  expect_shape(d, "f32[2,4]");
  HloInstr *cv = I(HLO_CONVERT, "f32[3]", x);
  cv->shape = NULL;
  expect_error(cv, "cannot be inferred");
  cv->name = NULL;
  expect_error(cv, "invalid convert: the result shape");
}

Test(infer, dot_without_dimension_numbers_is_outer_product) {
  HloInstr *a = P("s8[8]"), *b = P("s16[3]");
  expect_shape(I(HLO_DOT, "s32[8,3]", a, b), "s32[8,3]");
}

Test(infer, convolution_without_spatial_dims) {
  HloInstr *x = P("bf16[16,32]"), *k = P("bf16[32,8]");
  HloInstr *cv = I(HLO_CONVOLUTION, "bf16[16,8]", x, k);
  ConvDnums dn = {.input_batch = 0, .input_feature = 1,
                  .kernel_input_feature = 0, .kernel_output_feature = 1,
                  .output_batch = 0, .output_feature = 1};
  ConvAttrs ca = {.dnums = &dn};
  cv->conv = &ca;
  expect_shape(cv, "bf16[16,8]");
}

Test(infer, composite_call_needs_a_name) {
  HloComp *f = hlo_comp_new(M, "f");
  f->root = param_in(f, "f32[]");
  HloInstr *x = P("f32[]");
  HloInstr *cl = I(HLO_CALL, "f32[]", x);
  set_called(cl, 1, (HloComp *[]){f});
  cl->is_composite = true;
  expect_error(cl, "composite.name");
  KeyValue kv[2] = {{"composite.name", "foo.bar"}, {"composite.version", "x"}};
  KVList attrs = {1, kv};
  cl->frontend_attrs = &attrs;
  expect_shape(cl, "f32[]");
  attrs.n = 2;
  expect_error(cl, "composite.version");
}
