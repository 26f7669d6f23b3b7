/*
 * test_shape.c - unit tests of lib/hlo/shape.c: construction, deep copies,
 * default layouts, equality and compatibility, element and byte counts,
 * subshapes and leaf counts, and the text form of shapes and of every
 * layout part.
 */
#include <criterion/criterion.h>

#include <stdlib.h>
#include <string.h>

#include "../../lib/hlo/hlo.h"

static Arena *A;

static void setup(void) { A = arena_new(); }
static void teardown(void) { arena_free(A); }

TestSuite(shape, .init = setup, .fini = teardown);

/* Prints s (with or without layout) and compares with want. */
static void expect_print(const Shape *s, bool layout, const char *want) {
  char *got = shape_to_string(s, layout);
  cr_expect_str_eq(got, want);
  free(got);
}

static void expect_layout(const Layout *l, const char *want) {
  StrBuf b;
  sb_init(&b);
  layout_print(&b, l);
  cr_expect_str_eq(b.s, want);
  sb_free(&b);
}

static Shape *arr(ElemType et, int rank, const int64_t *dims) {
  return shape_array(A, et, rank, dims);
}

static const int64_t D23[] = {2, 3};

/*
 * Construction and printing
 */

Test(shape, array_gets_default_layout) {
  Shape *s = arr(ET_F32, 2, D23);
  cr_assert_not_null(s->layout);
  cr_expect_eq(s->layout->rank, 2);
  cr_expect_eq(s->layout->minor_to_major[0], 1);
  cr_expect_eq(s->layout->minor_to_major[1], 0);
  expect_print(s, true, "f32[2,3]{1,0}");
  expect_print(s, false, "f32[2,3]");
  cr_expect(shape_is_array(s));
  cr_expect(!shape_is_scalar(s));
  cr_expect(!shape_is_tuple(s));
}

Test(shape, dims_are_copied) {
  int64_t d[] = {4};
  Shape *s = arr(ET_S32, 1, d);
  d[0] = 9;
  expect_print(s, true, "s32[4]{0}");
}

Test(shape, scalar_prints_without_braces) {
  Shape *s = shape_scalar(A, ET_F32);
  cr_expect(shape_is_scalar(s));
  expect_print(s, true, "f32[]");
  expect_print(s, false, "f32[]");
}

Test(shape, scalar_with_layout_parts_prints_them) {
  Shape *s = shape_scalar(A, ET_F32);
  s->layout->memory_space = 1;
  expect_print(s, true, "f32[]{:S(1)}");
  expect_print(s, false, "f32[]");
}

Test(shape, token_and_empty_tuple) {
  expect_print(shape_token(A), true, "token[]");
  expect_print(shape_tuple(A, 0, NULL), true, "()");
  cr_expect(!shape_is_array(shape_token(A)));
}

Test(shape, tuple_nested) {
  Shape *inner[] = {shape_scalar(A, ET_S32), shape_token(A)};
  Shape *elems[] = {arr(ET_F32, 2, D23), shape_tuple(A, 2, inner)};
  Shape *t = shape_tuple(A, 2, elems);
  cr_expect(shape_is_tuple(t));
  expect_print(t, true, "(f32[2,3]{1,0}, (s32[], token[]))");
  expect_print(t, false, "(f32[2,3], (s32[], token[]))");
}

Test(shape, long_tuple_has_index_comments) {
  Shape *e[11];
  for (int i = 0; i < 11; i++)
    e[i] = shape_scalar(A, ET_PRED);
  expect_print(shape_tuple(A, 11, e), true,
               "(pred[], pred[], pred[], pred[], pred[], /*index=5*/pred[], "
               "pred[], pred[], pred[], pred[], /*index=10*/pred[])");
}

Test(shape, dynamic_dimensions) {
  int64_t d[] = {4, -1, 3};
  Shape *s = arr(ET_BF16, 3, d);
  s->dyn = arena_alloc(A, 3);
  s->dyn[0] = DIM_BOUNDED;
  s->dyn[1] = DIM_UNBOUNDED;
  expect_print(s, true, "bf16[<=4,?,3]{2,1,0}");
  cr_expect(shape_is_dynamic(s));
  cr_expect_eq(shape_elements(s), -1);
  s->dyn[1] = DIM_STATIC;
  s->dims[1] = 2;
  cr_expect(shape_is_dynamic(s));
  cr_expect_eq(shape_elements(s), 24);
  s->dyn[0] = DIM_STATIC;
  cr_expect(!shape_is_dynamic(s));
}

/* A bounded dynamic array's buffer: the data at its bounds, then one s32
 * size per dimension; static arrays and tuples are their byte size. */
Test(shape, buffer_size_of_dynamic_arrays) {
  int64_t d[] = {4, 2, 3};
  Shape *s = arr(ET_BF16, 3, d);
  cr_expect_eq(shape_buffer_size(s), 48);
  s->dyn = arena_alloc(A, 3);
  s->dyn[0] = DIM_STATIC;
  s->dyn[1] = DIM_BOUNDED;
  s->dyn[2] = DIM_STATIC;
  cr_expect_eq(shape_byte_size(s), 48);
  cr_expect_eq(shape_buffer_size(s), 48 + 12);
  s->dyn[1] = DIM_UNBOUNDED;
  s->dims[1] = -1;
  cr_expect_eq(shape_buffer_size(s), -1);
  Shape *el[2] = {arr(ET_F32, 2, D23), arr(ET_F32, 2, D23)};
  el[1]->dyn = arena_alloc(A, 2);
  el[1]->dyn[0] = DIM_BOUNDED;
  el[1]->dyn[1] = DIM_STATIC;
  cr_expect_eq(shape_buffer_size(shape_tuple(A, 2, el)), 16);
  cr_expect_eq(shape_buffer_size(el[1]), 24 + 8);
}

Test(shape, array_without_layout_prints_none) {
  Shape *s = arr(ET_F32, 2, D23);
  s->layout = NULL;
  expect_print(s, true, "f32[2,3]");
}

Test(shape, non_default_minor_to_major) {
  int64_t d[] = {10, 20, 30};
  Shape *s = arr(ET_F32, 3, d);
  s->layout->minor_to_major[0] = 2;
  s->layout->minor_to_major[1] = 0;
  s->layout->minor_to_major[2] = 1;
  expect_print(s, true, "f32[10,20,30]{2,0,1}");
  cr_expect(!layout_is_default(s->layout, 3));
}

/*
 * Layout parts, each alone and all together in grammar order.
 */

Test(shape, layout_tiles) {
  Layout *l = layout_default(A, 2);
  Tile t[2];
  int64_t t0[] = {8, 128}, t1[] = {TILE_COMBINED, 2};
  t[0] = (Tile){2, t0};
  t[1] = (Tile){2, t1};
  l->ntiles = 2;
  l->tiles = t;
  expect_layout(l, "{1,0:T(8,128)(*,2)}");
  cr_expect(!layout_is_default(l, 2));
}

Test(shape, layout_each_part) {
  Layout *l = layout_default(A, 1);
  l->tail_padding_alignment = 1;
  expect_layout(l, "{0}");
  cr_expect(layout_is_default(l, 1));
  l->tail_padding_alignment = 4;
  expect_layout(l, "{0:L(4)}");
  l->tail_padding_alignment = 0;

  l->index_type = ET_S32;
  expect_layout(l, "{0:#(s32)}");
  l->index_type = ET_F32;
  expect_layout(l, "{0:#(invalid)}");
  l->index_type = ET_INVALID;

  l->pointer_type = ET_U64;
  expect_layout(l, "{0:*(u64)}");
  l->pointer_type = ET_INVALID;

  l->element_size_bits = 4;
  expect_layout(l, "{0:E(4)}");
  l->element_size_bits = 0;

  l->memory_space = 5;
  expect_layout(l, "{0:S(5)}");
  l->memory_space = 0;

  l->dynamic_shape_metadata_prefix_bytes = 8;
  expect_layout(l, "{0:M(8)}");
  l->dynamic_shape_metadata_prefix_bytes = 0;
  cr_expect(layout_is_default(l, 1));
}

Test(shape, layout_all_parts_in_grammar_order) {
  Layout *l = layout_default(A, 2);
  char *dlt[] = {"D", "C+"};
  l->ndim_level_types = 2;
  l->dim_level_types = dlt;
  int64_t t0[] = {8, 128}, t1[] = {2, 1};
  Tile t[] = {{2, t0}, {2, t1}};
  l->ntiles = 2;
  l->tiles = t;
  l->tail_padding_alignment = 4;
  l->index_type = ET_S32;
  l->pointer_type = ET_S64;
  l->element_size_bits = 4;
  l->memory_space = 1;
  int64_t i0[] = {2, 4}, i1[] = {3};
  SplitConfig sc[] = {{0, 2, i0}, {1, 1, i1}};
  l->nsplit_configs = 2;
  l->split_configs = sc;
  int64_t pd[] = {8};
  l->physical_shape = arr(ET_S32, 1, pd);
  l->dynamic_shape_metadata_prefix_bytes = 16;
  expect_layout(l, "{1,0:D(D,C+)T(8,128)(2,1)L(4)#(s32)*(s64)E(4)S(1)"
                   "SC(0:2,4)(1:3)P(s32[8]{0})M(16)}");
}

Test(shape, rank0_layout) {
  expect_layout(layout_default(A, 0), "{}");
  cr_expect(layout_is_default(layout_default(A, 0), 0));
  cr_expect(layout_is_default(NULL, 3));
}

/*
 * Equality and compatibility
 */

Test(shape, equal_and_compatible) {
  Shape *a = arr(ET_F32, 2, D23), *b = arr(ET_F32, 2, D23);
  cr_expect(shape_equal(a, b));
  cr_expect(shape_compatible(a, b));
  b->layout->minor_to_major[0] = 0;
  b->layout->minor_to_major[1] = 1;
  cr_expect(!shape_equal(a, b));
  cr_expect(shape_compatible(a, b));
  Shape *c = arr(ET_S32, 2, D23);
  cr_expect(!shape_compatible(a, c));
  int64_t d32[] = {3, 2};
  cr_expect(!shape_compatible(a, arr(ET_F32, 2, d32)));
  cr_expect(!shape_compatible(a, shape_scalar(A, ET_F32)));
}

Test(shape, missing_layout_equals_default) {
  Shape *a = arr(ET_F32, 2, D23), *b = arr(ET_F32, 2, D23);
  b->layout = NULL;
  cr_expect(shape_equal(a, b));
  a->layout->memory_space = 1;
  cr_expect(!shape_equal(a, b));
}

Test(shape, equal_sees_layout_parts) {
  Shape *a = arr(ET_F32, 1, D23), *b = arr(ET_F32, 1, D23);
  a->layout->tail_padding_alignment = 1; /* same as absent */
  cr_expect(shape_equal(a, b));
  a->layout->element_size_bits = 4;
  cr_expect(!shape_equal(a, b));
  cr_expect(shape_compatible(a, b));
}

Test(shape, dynamic_equal_and_compatible) {
  int64_t d[] = {4};
  Shape *a = arr(ET_F32, 1, d), *b = arr(ET_F32, 1, d);
  b->dyn = arena_alloc(A, 1);
  b->dyn[0] = DIM_BOUNDED;
  cr_expect(!shape_equal(a, b));
  cr_expect(shape_compatible(a, b));
  b->dyn[0] = DIM_UNBOUNDED;
  b->dims[0] = -1;
  cr_expect(shape_compatible(a, b));
  cr_expect(shape_compatible(b, a));
}

Test(shape, tuple_equality) {
  Shape *e1[] = {arr(ET_F32, 2, D23), shape_token(A)};
  Shape *e2[] = {arr(ET_F32, 2, D23), shape_token(A)};
  Shape *e3[] = {arr(ET_F32, 2, D23)};
  Shape *t1 = shape_tuple(A, 2, e1), *t2 = shape_tuple(A, 2, e2);
  cr_expect(shape_equal(t1, t2));
  cr_expect(!shape_equal(t1, shape_tuple(A, 1, e3)));
  e2[1]->et = ET_OPAQUE;
  cr_expect(!shape_compatible(t1, t2));
  cr_expect(!shape_equal(t1, arr(ET_F32, 2, D23)));
}

Test(shape, layout_equal_parts) {
  Layout *a = layout_default(A, 2), *b = layout_default(A, 2);
  cr_expect(layout_equal(a, b));
  int64_t t0[] = {8, 128}, t1[] = {8, 128};
  Tile ta = {2, t0}, tb = {2, t1};
  a->ntiles = b->ntiles = 1;
  a->tiles = &ta;
  b->tiles = &tb;
  cr_expect(layout_equal(a, b));
  t1[1] = 64;
  cr_expect(!layout_equal(a, b));
  cr_expect(!layout_equal(a, NULL));
  cr_expect(layout_equal(NULL, NULL));
}

/*
 * Sizes
 */

Test(shape, elements) {
  cr_expect_eq(shape_elements(shape_scalar(A, ET_F32)), 1);
  cr_expect_eq(shape_elements(arr(ET_F32, 2, D23)), 6);
  int64_t z[] = {0, 5};
  cr_expect_eq(shape_elements(arr(ET_F32, 2, z)), 0);
  int64_t big[] = {INT64_C(1) << 40, INT64_C(1) << 40};
  cr_expect_eq(shape_elements(arr(ET_F32, 2, big)), -1);
  cr_expect_eq(shape_elements(shape_token(A)), 0);
  cr_expect_eq(shape_elements(shape_tuple(A, 0, NULL)), 0);
}

Test(shape, byte_size) {
  cr_expect_eq(shape_byte_size(arr(ET_F32, 2, D23)), 24);
  cr_expect_eq(shape_byte_size(arr(ET_PRED, 2, D23)), 6);
  cr_expect_eq(shape_byte_size(arr(ET_C128, 2, D23)), 96);
  cr_expect_eq(shape_byte_size(shape_scalar(A, ET_BF16)), 2);
  int64_t d3[] = {3};
  Shape *s4 = arr(ET_S4, 1, d3);
  cr_expect_eq(shape_byte_size(s4), 3);
  s4->layout->element_size_bits = 4;
  cr_expect_eq(shape_byte_size(s4), 2);
  Shape *e[] = {s4, s4, s4};
  cr_expect_eq(shape_byte_size(shape_tuple(A, 3, e)), 24);
  cr_expect_eq(shape_byte_size(shape_token(A)), 0);
  int64_t big[] = {INT64_C(1) << 31, INT64_C(1) << 31};
  cr_expect_eq(shape_byte_size(arr(ET_F64, 2, big)), -1);
}

/*
 * Subshapes, leaves, copies, default layouts
 */

Test(shape, subshape_and_leaves) {
  Shape *inner[] = {shape_scalar(A, ET_S32), shape_token(A)};
  Shape *elems[] = {arr(ET_F32, 2, D23), shape_tuple(A, 2, inner),
                    shape_tuple(A, 0, NULL)};
  Shape *t = shape_tuple(A, 3, elems);
  int64_t i1[] = {1, 1}, i2[] = {0}, bad[] = {3}, deep[] = {0, 0};
  cr_expect_eq(shape_subshape(t, 0, NULL), t);
  cr_expect_eq(shape_subshape(t, 2, i1), inner[1]);
  cr_expect_eq(shape_subshape(t, 1, i2), elems[0]);
  cr_expect_null(shape_subshape(t, 1, bad));
  cr_expect_null(shape_subshape(t, 2, deep));
  cr_expect_eq(shape_leaf_count(t), 3);
  cr_expect_eq(shape_leaf_count(elems[0]), 1);
  cr_expect_eq(shape_leaf_count(elems[2]), 0);
}

Test(shape, clone_is_deep) {
  Layout *l = layout_default(A, 2);
  int64_t t0[] = {8, 128};
  Tile t = {2, t0};
  l->ntiles = 1;
  l->tiles = &t;
  int64_t pd[] = {4};
  l->physical_shape = arr(ET_U8, 1, pd);
  Shape *s = arr(ET_F32, 2, D23);
  s->layout = l;
  s->dyn = arena_alloc(A, 2);
  s->dyn[0] = DIM_BOUNDED;
  Shape *elems[] = {s, shape_token(A)};
  Shape *tup = shape_tuple(A, 2, elems);
  Shape *c = shape_clone(A, tup);
  cr_expect(shape_equal(c, tup));
  cr_expect_neq(c->tuple[0], s);
  cr_expect_neq(c->tuple[0]->layout->tiles, l->tiles);
  c->tuple[0]->layout->tiles[0].dims[0] = 4;
  c->tuple[0]->dims[0] = 7;
  c->tuple[0]->dyn[0] = DIM_STATIC;
  expect_print(tup, true, "(f32[<=2,3]{1,0:T(8,128)P(u8[4]{0})}, token[])");
  expect_print(c, true, "(f32[7,3]{1,0:T(4,128)P(u8[4]{0})}, token[])");
}

Test(shape, set_default_layout_fills_missing_only) {
  Shape *a = arr(ET_F32, 2, D23), *b = arr(ET_F32, 2, D23);
  a->layout = NULL;
  b->layout->minor_to_major[0] = 0;
  b->layout->minor_to_major[1] = 1;
  Shape *elems[] = {a, b, shape_token(A)};
  Shape *t = shape_tuple(A, 3, elems);
  shape_set_default_layout(A, t);
  expect_print(t, true, "(f32[2,3]{1,0}, f32[2,3]{0,1}, token[])");
  cr_expect_null(elems[2]->layout);
}

Test(shape, print_appends) {
  StrBuf b;
  sb_init(&b);
  sb_puts(&b, "x=");
  shape_print(&b, shape_scalar(A, ET_F64), true);
  layout_print(&b, layout_default(A, 3));
  cr_expect_str_eq(b.s, "x=f64[]{2,1,0}");
  sb_free(&b);
}

Test(shape, buffer_shape) {
  Shape *s = arr(ET_F32, 2, D23);
  s->is_buffer = true;
  expect_print(s, true, "b(f32[2,3]{1,0})");
  expect_print(s, false, "b(f32[2,3])");
  Shape *plain = arr(ET_F32, 2, D23);
  cr_expect(!shape_equal(s, plain));
  cr_expect(!shape_compatible(s, plain));
  Shape *c = shape_clone(A, s);
  cr_expect(c->is_buffer);
  cr_expect(shape_equal(c, s));
}
