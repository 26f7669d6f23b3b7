/*
 * test_indexing.c - indexing maps of instructions and fusions, built in C
 * (no parser): the examples of seed 000 with their printed maps, and the
 * behaviours around them (runtime variables folded from constants and
 * iotas, undefined and empty maps, tuples, multi-output fusions).
 *
 * The same examples run through `xhloc --stage=indexing` in
 * tests/check-indexing.sh.
 */
#include <criterion/criterion.h>

#include "test_indexing_build.h"

static HloModule *m;
static HloComp *e;
static AffCtx *c;

static void setup(void) {
  m = hlo_module_new("test");
  e = hlo_comp_new(m, "main");
  c = aff_ctx_new();
}

static void teardown(void) {
  aff_ctx_free(c);
  hlo_module_free(m);
}

TestSuite(indexing, .init = setup, .fini = teardown);

#define SH(...) tb_shape(m, ET_F32, __VA_ARGS__)
#define SHI(...) tb_shape(m, ET_S32, __VA_ARGS__)
#define L(x) ((int64_t)(x))

/* got (heap) equals want, both with whitespace collapsed. */
static void expect_text(char *got, const char *want) {
  char *g = tb_norm(got), *w = tb_norm(want);
  cr_expect_str_eq(g, w);
  free(g);
  free(w);
  free(got);
}

static HloInstr *called(HloInstr *i, HloComp *comp) {
  i->ncalled = 1;
  i->called = ARENA_ARRAY(m->arena, HloComp *, 1);
  i->called[0] = comp;
  return i;
}

Test(indexing, elementwise) {
  HloInstr *p0 = tb_param(e, "p0", 0, SH(2, L(10), L(20)));
  HloInstr *p1 = tb_param(e, "p1", 1, SH(2, L(10), L(20)));
  HloInstr *add = tb_instr(e, "add", HLO_ADD, SH(2, L(10), L(20)), 2, p0, p1);
  const char *id = "(d0, d1) -> (d0, d1) domain: d0 in [0, 9] d1 in [0, 19]";
  for (int k = 0; k < 2; k++) {
    expect_text(tb_out_to_in(c, add, k), id);
    expect_text(tb_in_to_out(c, add, k), id);
  }
}

Test(indexing, broadcast) {
  HloInstr *p0 = tb_param(e, "p0", 0, SH(1, L(20)));
  HloInstr *bc = tb_instr(e, "bc0", HLO_BROADCAST, SH(3, L(10), L(20), L(30)), 1, p0);
  bc->dims = tb_list(m, 1, L(1));
  expect_text(tb_out_to_in(c, bc, 0),
              "(d0, d1, d2) -> (d1) domain: d0 in [0, 9] d1 in [0, 19] "
              "d2 in [0, 29]");
  expect_text(tb_in_to_out(c, bc, 0),
              "(d0)[s0, s1] -> (s0, d0, s1) domain: d0 in [0, 19] s0 in [0, 9] "
              "s1 in [0, 29]");
}

Test(indexing, constant_and_iota_have_no_operands) {
  HloInstr *iota = tb_instr(e, "iota", HLO_IOTA, SHI(1, L(4)), 0);
  cr_expect_eq(indexing_out_to_in(c, iota, 0)->n, 0);
  cr_expect_eq(indexing_in_to_out(c, iota, 0)->sets[0].n, 0);
}

static HloInstr *dynamic_slice(HloInstr **of) {
  HloInstr *src = tb_param(e, "src", 0, SHI(3, L(2), L(2), L(258)));
  of[0] = tb_param(e, "of1", 1, SHI(0));
  of[1] = tb_param(e, "of2", 2, SHI(0));
  of[2] = tb_param(e, "of3", 3, SHI(0));
  HloInstr *ds = tb_instr(e, "ds", HLO_DYNAMIC_SLICE, SHI(3, L(1), L(2), L(32)),
                          4, src, of[0], of[1], of[2]);
  ds->dynamic_slice_sizes = tb_list(m, 3, L(1), L(2), L(32));
  return ds;
}

Test(indexing, dynamic_slice) {
  HloInstr *of[3];
  HloInstr *ds = dynamic_slice(of);
  expect_text(tb_out_to_in(c, ds, 0),
              "(d0, d1, d2)[s0, s1, s2] -> (d0 + s0, d1 + s1, d2 + s2)\n"
              "domain:\n"
              "d0 in [0, 0]\n"
              "d1 in [0, 1]\n"
              "d2 in [0, 31]\n"
              "s0 in [0, 1]\n"
              "hlo: of1 = s32[] parameter(1)\n"
              "(d0, d1, d2) -> ()\n"
              "s1 in [0, 0]\n"
              "hlo: of2 = s32[] parameter(2)\n"
              "(d0, d1, d2) -> ()\n"
              "s2 in [0, 226]\n"
              "hlo: of3 = s32[] parameter(3)\n"
              "(d0, d1, d2) -> ()\n");
  for (int k = 1; k < 4; k++)
    expect_text(tb_out_to_in(c, ds, k),
                "(d0, d1, d2) -> () domain: d0 in [0, 0] d1 in [0, 1] "
                "d2 in [0, 31]");
}

Test(indexing, dynamic_slice_folds_constant_offsets) {
  HloInstr *src = tb_param(e, "src", 0, SHI(1, L(10)));
  HloInstr *k7 = tb_instr(e, "k7", HLO_CONSTANT, SHI(0), 0);
  k7->literal = literal_new(m->arena, k7->shape);
  literal_set_s64(k7->literal, 0, 7);
  HloInstr *k9 = tb_instr(e, "k9", HLO_CONSTANT, SHI(0), 0);
  k9->literal = literal_new(m->arena, k9->shape);
  literal_set_s64(k9->literal, 0, 9);
  /* Offset 7 of a 3-wide slice of 10 elements is feasible: folded. */
  HloInstr *ds = tb_instr(e, "ds", HLO_DYNAMIC_SLICE, SHI(1, L(3)), 2, src, k7);
  ds->dynamic_slice_sizes = tb_list(m, 1, L(3));
  expect_text(tb_out_to_in(c, ds, 0), "(d0) -> (d0 + 7) domain: d0 in [0, 2]");
  /* 9 would be clamped to 7 at run time: left as a runtime variable. */
  HloInstr *ds9 = tb_instr(e, "ds9", HLO_DYNAMIC_SLICE, SHI(1, L(3)), 2, src, k9);
  ds9->dynamic_slice_sizes = tb_list(m, 1, L(3));
  expect_text(tb_out_to_in(c, ds9, 0),
              "(d0)[s0] -> (d0 + s0) domain: d0 in [0, 2] s0 in [0, 7] "
              "hlo: k9 = s32[] constant(9) (d0) -> ()");
}

Test(indexing, gather_folds_iota_indices) {
  /* indices = iota along dimension 0 of [4, 1]: row r starts at r. */
  HloInstr *op = tb_param(e, "operand", 0, SH(2, L(10), L(3)));
  HloInstr *ix = tb_instr(e, "indices", HLO_IOTA, SHI(2, L(4), L(1)), 0);
  ix->iota_dim = 0;
  HloInstr *g = tb_instr(e, "gather", HLO_GATHER, SH(3, L(4), L(2), L(3)), 2, op, ix);
  g->gather = ARENA_NEW(m->arena, GatherDnums);
  g->gather->offset_dims = tb_list(m, 2, L(1), L(2));
  g->gather->start_index_map = tb_list(m, 1, L(0));
  g->gather->index_vector_dim = 1;
  g->gather_slice_sizes = tb_list(m, 2, L(2), L(3));
  expect_text(tb_out_to_in(c, g, 0),
              "(d0, d1, d2) -> (d0 + d1, d2) domain: d0 in [0, 3] d1 in [0, 1] "
              "d2 in [0, 2]");
}

Test(indexing, dynamic_update_slice) {
  HloInstr *src = tb_param(e, "src", 0, SHI(2, L(20), L(30)));
  HloInstr *upd = tb_param(e, "upd", 1, SHI(2, L(5), L(10)));
  HloInstr *of1 = tb_param(e, "of1", 2, SHI(0));
  HloInstr *of2 = tb_param(e, "of2", 3, SHI(0));
  HloInstr *dus = tb_instr(e, "dus", HLO_DYNAMIC_UPDATE_SLICE, SHI(2, L(20), L(30)),
                           4, src, upd, of1, of2);
  expect_text(tb_out_to_in(c, dus, 0),
              "(d0, d1) -> (d0, d1) domain: d0 in [0, 19] d1 in [0, 29]");
  expect_text(tb_out_to_in(c, dus, 1),
              "(d0, d1)[s0, s1] -> (d0 - s0, d1 - s1)\n"
              "domain:\n"
              "d0 in [0, 19]\n"
              "d1 in [0, 29]\n"
              "s0 in [0, 15]\n"
              "hlo: of1 = s32[] parameter(2)\n"
              "(d0, d1) -> ()\n"
              "s1 in [0, 20]\n"
              "hlo: of2 = s32[] parameter(3)\n"
              "(d0, d1) -> ()\n");
  expect_text(tb_out_to_in(c, dus, 2),
              "(d0, d1) -> () domain: d0 in [0, 19] d1 in [0, 29]");
}

Test(indexing, gather) {
  HloInstr *op = tb_param(e, "operand", 0, SH(3, L(33), L(76), L(70)));
  HloInstr *ix = tb_param(e, "indices", 1, SHI(2, L(1806), L(2)));
  HloInstr *g = tb_instr(e, "gather", HLO_GATHER, SH(4, L(1806), L(7), L(8), L(4)),
                         2, op, ix);
  g->gather = ARENA_NEW(m->arena, GatherDnums);
  g->gather->offset_dims = tb_list(m, 3, L(1), L(2), L(3));
  g->gather->start_index_map = tb_list(m, 2, L(0), L(1));
  g->gather->index_vector_dim = 1;
  g->gather_slice_sizes = tb_list(m, 3, L(7), L(8), L(4));
  expect_text(tb_out_to_in(c, g, 0),
              "(d0, d1, d2, d3)[s0, s1] -> (d1 + s0, d2 + s1, d3)\n"
              "domain:\n"
              "d0 in [0, 1805]\n"
              "d1 in [0, 6]\n"
              "d2 in [0, 7]\n"
              "d3 in [0, 3]\n"
              "s0 in [0, 26]\n"
              "hlo: indices = s32[1806,2]{1,0} parameter(1)\n"
              "(d0, d1, d2, d3) -> (d0, 0)\n"
              "s1 in [0, 68]\n"
              "hlo: indices = s32[1806,2]{1,0} parameter(1)\n"
              "(d0, d1, d2, d3) -> (d0, 1)\n");
  expect_text(tb_out_to_in(c, g, 1),
              "(d0, d1, d2, d3)[s0] -> (d0, s0)\n"
              "domain:\n"
              "d0 in [0, 1805]\n"
              "d1 in [0, 6]\n"
              "d2 in [0, 7]\n"
              "d3 in [0, 3]\n"
              "s0 in [0, 1]\n");
}

Test(indexing, transpose_and_reverse) {
  HloInstr *p0 = tb_param(e, "p0", 0, SH(4, L(3), L(12288), L(6), L(128)));
  HloInstr *t = tb_instr(e, "transpose", HLO_TRANSPOSE,
                         SH(4, L(3), L(6), L(128), L(12288)), 1, p0);
  t->dims = tb_list(m, 4, L(0), L(2), L(3), L(1));
  expect_text(tb_out_to_in(c, t, 0),
              "(d0, d1, d2, d3) -> (d0, d3, d1, d2) domain: d0 in [0, 2] "
              "d1 in [0, 5] d2 in [0, 127] d3 in [0, 12287]");
  expect_text(tb_in_to_out(c, t, 0),
              "(d0, d1, d2, d3) -> (d0, d2, d3, d1) domain: d0 in [0, 2] "
              "d1 in [0, 12287] d2 in [0, 5] d3 in [0, 127]");
  HloInstr *p1 = tb_param(e, "p1", 1, SH(4, L(1), L(17), L(9), L(9)));
  HloInstr *r = tb_instr(e, "reverse", HLO_REVERSE, SH(4, L(1), L(17), L(9), L(9)), 1, p1);
  r->dims = tb_list(m, 2, L(1), L(2));
  const char *want = "(d0, d1, d2, d3) -> (d0, -d1 + 16, -d2 + 8, d3) domain: "
                     "d0 in [0, 0] d1 in [0, 16] d2 in [0, 8] d3 in [0, 8]";
  expect_text(tb_out_to_in(c, r, 0), want);
  expect_text(tb_in_to_out(c, r, 0), want);
}

Test(indexing, variadic_reduce) {
  HloInstr *p0 = tb_param(e, "p0", 0, SH(2, L(256), L(10)));
  HloInstr *p1 = tb_param(e, "p1", 1, SHI(2, L(256), L(10)));
  HloInstr *i0 = tb_param(e, "p0_init", 2, SH(0));
  HloInstr *i1 = tb_param(e, "p1_init", 3, SHI(0));
  Shape *el[2] = {SH(1, L(10)), SHI(1, L(10))};
  HloInstr *r = tb_instr(e, "reduce", HLO_REDUCE, shape_tuple(m->arena, 2, el),
                         4, p0, p1, i0, i1);
  r->dims = tb_list(m, 1, L(0));
  for (int out = 0; out < 2; out++) {
    InstrIndexing *ii = indexing_out_to_in(c, r, out);
    for (int k = 0; k < 4; k++) {
      cr_assert_eq(ii->sets[k].n, 1);
      expect_text(imap_to_string(ii->sets[k].maps[0]),
                  k < 2 ? "(d0)[s0] -> (s0, d0) domain: d0 in [0, 9] s0 in [0, 255]"
                        : "(d0) -> () domain: d0 in [0, 9]");
    }
  }
  for (int k = 0; k < 4; k++) {
    InstrIndexing *ii = indexing_in_to_out(c, r, k);
    cr_assert_eq(ii->n, 2);
    for (int out = 0; out < 2; out++)
      expect_text(imap_to_string(ii->sets[out].maps[0]),
                  k < 2 ? "(d0, d1) -> (d1) domain: d0 in [0, 255] d1 in [0, 9]"
                        : "()[s0] -> (s0) domain: s0 in [0, 9]");
  }
}

Test(indexing, slice) {
  HloInstr *p0 = tb_param(e, "p0", 0, SH(3, L(10), L(20), L(50)));
  HloInstr *s = tb_instr(e, "slice", HLO_SLICE, SH(3, L(5), L(3), L(25)), 1, p0);
  s->slice = ARENA_ARRAY(m->arena, SliceDim, 3);
  s->slice[0] = (SliceDim){5, 10, 1};
  s->slice[1] = (SliceDim){3, 20, 7};
  s->slice[2] = (SliceDim){0, 50, 2};
  expect_text(tb_out_to_in(c, s, 0),
              "(d0, d1, d2) -> (d0 + 5, d1 * 7 + 3, d2 * 2) domain: "
              "d0 in [0, 4] d1 in [0, 2] d2 in [0, 24]");
  expect_text(tb_in_to_out(c, s, 0),
              "(d0, d1, d2) -> (d0 - 5, (d1 - 3) floordiv 7, d2 floordiv 2)\n"
              "domain:\n"
              "d0 in [5, 9]\n"
              "d1 in [3, 17]\n"
              "d2 in [0, 48]\n"
              "(d1 - 3) mod 7 in [0, 0]\n"
              "d2 mod 2 in [0, 0]\n");
}

static void reshape_case(int rin, const int64_t *din, int rout, const int64_t *dout,
                         const char *out_to_in, const char *in_to_out) {
  HloInstr *p = tb_param(e, "p0", 0, tb_shapev(m, ET_F32, rin, din));
  HloInstr *r = tb_instr(e, "reshape", HLO_RESHAPE, tb_shapev(m, ET_F32, rout, dout), 1, p);
  expect_text(tb_out_to_in(c, r, 0), out_to_in);
  expect_text(tb_in_to_out(c, r, 0), in_to_out);
}

Test(indexing, reshapes) {
  int64_t a[2] = {4, 8}, b[1] = {32}, g[3] = {2, 4, 4}, h[3] = {4, 8, 12},
          k[3] = {32, 3, 4};
  reshape_case(2, a, 1, b, "(d0) -> (d0 floordiv 8, d0 mod 8) domain: d0 in [0, 31]",
               "(d0, d1) -> (d0 * 8 + d1) domain: d0 in [0, 3] d1 in [0, 7]");
  reshape_case(1, b, 2, a, "(d0, d1) -> (d0 * 8 + d1) domain: d0 in [0, 3] d1 in [0, 7]",
               "(d0) -> (d0 floordiv 8, d0 mod 8) domain: d0 in [0, 31]");
  reshape_case(2, a, 3, g,
               "(d0, d1, d2) -> (d0 * 2 + d1 floordiv 2, d2 + (d1 mod 2) * 4) "
               "domain: d0 in [0, 1] d1 in [0, 3] d2 in [0, 3]",
               "(d0, d1) -> (d0 floordiv 2, d1 floordiv 4 + (d0 mod 2) * 2, "
               "d1 mod 4) domain: d0 in [0, 3] d1 in [0, 7]");
  reshape_case(3, h, 3, k,
               "(d0, d1, d2) -> (d0 floordiv 8, d0 mod 8, d1 * 4 + d2) domain: "
               "d0 in [0, 31] d1 in [0, 2] d2 in [0, 3]",
               "(d0, d1, d2) -> (d0 * 8 + d1, d2 floordiv 4, d2 mod 4) domain: "
               "d0 in [0, 3] d1 in [0, 7] d2 in [0, 11]");
}

Test(indexing, reshape_with_unit_and_empty_dims) {
  int64_t a[3] = {1, 6, 1}, b[2] = {2, 3}, z[2] = {0, 5}, y[1] = {0};
  reshape_case(3, a, 2, b, "(d0, d1) -> (0, d0 * 3 + d1, 0) domain: d0 in [0, 1] "
                           "d1 in [0, 2]",
               "(d0, d1, d2) -> (d1 floordiv 3, d1 mod 3) domain: d0 in [0, 0] "
               "d1 in [0, 5] d2 in [0, 0]");
  HloInstr *p = tb_param(e, "z", 1, tb_shapev(m, ET_F32, 2, z));
  HloInstr *r = tb_instr(e, "r", HLO_RESHAPE, tb_shapev(m, ET_F32, 1, y), 1, p);
  expect_text(tb_out_to_in(c, r, 0), "KNOWN EMPTY"); /* no elements */
}

Test(indexing, bitcast_follows_layouts) {
  /* f32[4,8]{0,1} is f32[8,4]{1,0} in memory: a transpose. */
  HloInstr *p = tb_param(e, "p", 0, SH(2, L(4), L(8)));
  p->shape->layout->minor_to_major[0] = 0;
  p->shape->layout->minor_to_major[1] = 1;
  HloInstr *b = tb_instr(e, "b", HLO_BITCAST, SH(2, L(8), L(4)), 1, p);
  expect_text(tb_out_to_in(c, b, 0), "(d0, d1) -> (d1, d0) domain: d0 in [0, 7] "
                                      "d1 in [0, 3]");
  expect_text(tb_in_to_out(c, b, 0), "(d0, d1) -> (d1, d0) domain: d0 in [0, 3] "
                                     "d1 in [0, 7]");
}

Test(indexing, concatenate) {
  HloInstr *p0 = tb_param(e, "p0", 0, SH(3, L(2), L(5), L(7)));
  HloInstr *p1 = tb_param(e, "p1", 1, SH(3, L(2), L(11), L(7)));
  HloInstr *p2 = tb_param(e, "p2", 2, SH(3, L(2), L(17), L(7)));
  HloInstr *cat = tb_instr(e, "concat", HLO_CONCATENATE, SH(3, L(2), L(33), L(7)),
                           3, p0, p1, p2);
  cat->dims = tb_list(m, 1, L(1));
  expect_text(tb_out_to_in(c, cat, 0), "(d0, d1, d2) -> (d0, d1, d2) domain: "
                                       "d0 in [0, 1] d1 in [0, 4] d2 in [0, 6]");
  expect_text(tb_out_to_in(c, cat, 1), "(d0, d1, d2) -> (d0, d1 - 5, d2) domain: "
                                       "d0 in [0, 1] d1 in [5, 15] d2 in [0, 6]");
  expect_text(tb_out_to_in(c, cat, 2), "(d0, d1, d2) -> (d0, d1 - 16, d2) domain: "
                                       "d0 in [0, 1] d1 in [16, 32] d2 in [0, 6]");
  expect_text(tb_in_to_out(c, cat, 0), "(d0, d1, d2) -> (d0, d1, d2) domain: "
                                       "d0 in [0, 1] d1 in [0, 4] d2 in [0, 6]");
  expect_text(tb_in_to_out(c, cat, 1), "(d0, d1, d2) -> (d0, d1 + 5, d2) domain: "
                                       "d0 in [0, 1] d1 in [0, 10] d2 in [0, 6]");
  expect_text(tb_in_to_out(c, cat, 2), "(d0, d1, d2) -> (d0, d1 + 16, d2) domain: "
                                       "d0 in [0, 1] d1 in [0, 16] d2 in [0, 6]");
}

Test(indexing, dot) {
  HloInstr *p0 = tb_param(e, "p0", 0, SH(3, L(4), L(128), L(256)));
  HloInstr *p1 = tb_param(e, "p1", 1, SH(3, L(4), L(256), L(64)));
  HloInstr *d = tb_instr(e, "dot", HLO_DOT, SH(3, L(4), L(128), L(64)), 2, p0, p1);
  d->dot = ARENA_NEW(m->arena, DotDnums);
  d->dot->lhs_batch = tb_list(m, 1, L(0));
  d->dot->rhs_batch = tb_list(m, 1, L(0));
  d->dot->lhs_contracting = tb_list(m, 1, L(2));
  d->dot->rhs_contracting = tb_list(m, 1, L(1));
  expect_text(tb_out_to_in(c, d, 0),
              "(d0, d1, d2)[s0] -> (d0, d1, s0) domain: d0 in [0, 3] "
              "d1 in [0, 127] d2 in [0, 63] s0 in [0, 255]");
  expect_text(tb_out_to_in(c, d, 1),
              "(d0, d1, d2)[s0] -> (d0, s0, d2) domain: d0 in [0, 3] "
              "d1 in [0, 127] d2 in [0, 63] s0 in [0, 255]");
  expect_text(tb_in_to_out(c, d, 0),
              "(d0, d1, d2)[s0] -> (d0, d1, s0) domain: d0 in [0, 3] "
              "d1 in [0, 127] d2 in [0, 255] s0 in [0, 63]");
  /* The seed prints (d0, s0, d1) here: an erratum (d1 is the contracting
   * dimension, in [0, 255]); the rhs dimension of output dimension 2 is d2. */
  expect_text(tb_in_to_out(c, d, 1),
              "(d0, d1, d2)[s0] -> (d0, s0, d2) domain: d0 in [0, 3] "
              "d1 in [0, 255] d2 in [0, 63] s0 in [0, 127]");
}

Test(indexing, pad_and_reduce_window) {
  HloInstr *p0 = tb_param(e, "p0", 0, SH(2, L(4), L(4)));
  HloInstr *p1 = tb_param(e, "p1", 1, SH(0));
  HloInstr *pad = tb_instr(e, "pad", HLO_PAD, SH(2, L(12), L(16)), 2, p0, p1);
  pad->padding = ARENA_ARRAY(m->arena, PadDim, 2);
  pad->padding[0] = (PadDim){1, 4, 1};
  pad->padding[1] = (PadDim){4, 8, 0};
  expect_text(tb_out_to_in(c, pad, 0),
              "(d0, d1) -> ((d0 - 1) floordiv 2, d1 - 4) domain: d0 in [1, 7] "
              "d1 in [4, 7] (d0 - 1) mod 2 in [0, 0]");
  expect_text(tb_out_to_in(c, pad, 1),
              "(d0, d1) -> () domain: d0 in [0, 11] d1 in [0, 15]");

  HloInstr *q = tb_param(e, "q", 2, SH(2, L(1024), L(514)));
  HloInstr *init = tb_param(e, "c_inf", 3, SH(0));
  HloInstr *rw = tb_instr(e, "reduce-window", HLO_REDUCE_WINDOW, SH(2, L(1024), L(3)),
                          2, q, init);
  rw->window = ARENA_NEW(m->arena, Window);
  rw->window->ndims = 2;
  rw->window->dims = ARENA_ARRAY(m->arena, WindowDim, 2);
  rw->window->dims[0] = (WindowDim){.size = 1, .stride = 1, .base_dilation = 1,
                                    .window_dilation = 1};
  rw->window->dims[1] = (WindowDim){.size = 512, .stride = 1, .base_dilation = 1,
                                    .window_dilation = 1};
  expect_text(tb_out_to_in(c, rw, 0),
              "(d0, d1)[s0] -> (d0, d1 + s0) domain: d0 in [0, 1023] "
              "d1 in [0, 2] s0 in [0, 511]");
  expect_text(tb_out_to_in(c, rw, 1),
              "(d0, d1) -> () domain: d0 in [0, 1023] d1 in [0, 2]");
}

Test(indexing, unsupported_or_malformed_is_undefined) {
  HloInstr *p = tb_param(e, "p", 0, SH(2, L(3), L(4)));
  HloInstr *t = tb_instr(e, "t", HLO_TRANSPOSE, SH(2, L(4), L(3)), 1, p);
  t->dims = tb_list(m, 2, L(0), L(0)); /* not a permutation */
  expect_text(tb_out_to_in(c, t, 0), "UNDEFINED");
  HloInstr *cc = tb_instr(e, "cc", HLO_CUSTOM_CALL, SH(2, L(3), L(4)), 1, p);
  expect_text(tb_out_to_in(c, cc, 0), "UNDEFINED");
  expect_text(tb_in_to_out(c, cc, 0), "UNDEFINED");
}

/*
 * Fusions (seed 000).
 */
static HloInstr *fusion_of(HloComp *f, Shape *out, int nparams) {
  HloInstr *args[8];
  for (int k = 0; k < nparams; k++)
    args[k] = tb_param(e, "arg", k, f->params[k]->shape);
  HloInstr *fu = hlo_instr_new(e, HLO_FUSION, out, nparams, args);
  fu->name = "fusion";
  e->root = fu;
  return called(fu, f);
}

Test(indexing, fusion_reads_a_parameter_twice) {
  HloComp *f = hlo_comp_new(m, "f");
  HloInstr *p0 = tb_param(f, "p0", 0, SH(2, L(1000), L(1000)));
  HloInstr *t = tb_instr(f, "transpose_p0", HLO_TRANSPOSE, SH(2, L(1000), L(1000)), 1, p0);
  t->dims = tb_list(m, 2, L(1), L(0));
  tb_instr(f, "a0", HLO_ADD, SH(2, L(1000), L(1000)), 2, p0, t);
  HloInstr *fu = fusion_of(f, SH(2, L(1000), L(1000)), 1);
  InstrIndexing *ii = indexing_out_to_in(c, fu, 0);
  cr_assert_eq(ii->sets[0].n, 2);
  expect_text(imap_to_string(ii->sets[0].maps[0]),
              "(d0, d1) -> (d0, d1) domain: d0 in [0, 999] d1 in [0, 999]");
  expect_text(imap_to_string(ii->sets[0].maps[1]),
              "(d0, d1) -> (d1, d0) domain: d0 in [0, 999] d1 in [0, 999]");
}

Test(indexing, fusion_merges_equal_maps) {
  HloComp *f = hlo_comp_new(m, "f");
  HloInstr *p0 = tb_param(f, "p0", 0, SH(3, L(20), L(10), L(50)));
  HloInstr *l1 = tb_instr(f, "lhs_transpose_1", HLO_TRANSPOSE, SH(3, L(10), L(20), L(50)), 1, p0);
  l1->dims = tb_list(m, 3, L(1), L(0), L(2));
  HloInstr *le = tb_instr(f, "lhs_e", HLO_EXP, SH(3, L(10), L(20), L(50)), 1, l1);
  HloInstr *l2 = tb_instr(f, "lhs_transpose_2", HLO_TRANSPOSE, SH(3, L(10), L(50), L(20)), 1, le);
  l2->dims = tb_list(m, 3, L(0), L(2), L(1));
  HloInstr *r1 = tb_instr(f, "rhs_transpose_1", HLO_TRANSPOSE, SH(3, L(50), L(10), L(20)), 1, p0);
  r1->dims = tb_list(m, 3, L(2), L(1), L(0));
  HloInstr *rl = tb_instr(f, "rhs_log", HLO_EXP, SH(3, L(50), L(10), L(20)), 1, r1);
  HloInstr *r2 = tb_instr(f, "rhs_transpose_2", HLO_TRANSPOSE, SH(3, L(10), L(50), L(20)), 1, rl);
  r2->dims = tb_list(m, 3, L(1), L(0), L(2));
  tb_instr(f, "add", HLO_ADD, SH(3, L(10), L(50), L(20)), 2, l2, r2);
  HloInstr *fu = fusion_of(f, SH(3, L(10), L(50), L(20)), 1);
  InstrIndexing *ii = indexing_out_to_in(c, fu, 0);
  cr_assert_eq(ii->sets[0].n, 1);
  expect_text(imap_to_string(ii->sets[0].maps[0]),
              "(d0, d1, d2) -> (d2, d0, d1) domain: d0 in [0, 9] d1 in [0, 49] "
              "d2 in [0, 19]");
}

Test(indexing, fusion_drops_paths_that_read_nothing) {
  /* slice(concatenate(p0, p1)) reading only p0's part: p1 gets no map. */
  HloComp *f = hlo_comp_new(m, "f");
  HloInstr *p0 = tb_param(f, "p0", 0, SH(1, L(4)));
  HloInstr *p1 = tb_param(f, "p1", 1, SH(1, L(6)));
  HloInstr *cat = tb_instr(f, "cat", HLO_CONCATENATE, SH(1, L(10)), 2, p0, p1);
  cat->dims = tb_list(m, 1, L(0));
  HloInstr *s = tb_instr(f, "s", HLO_SLICE, SH(1, L(3)), 1, cat);
  s->slice = ARENA_ARRAY(m->arena, SliceDim, 1);
  s->slice[0] = (SliceDim){1, 4, 1};
  HloInstr *fu = fusion_of(f, SH(1, L(3)), 2);
  InstrIndexing *ii = indexing_out_to_in(c, fu, 0);
  cr_assert_eq(ii->sets[0].n, 1);
  cr_expect_eq(ii->sets[1].n, 0);
  expect_text(imap_to_string(ii->sets[0].maps[0]), "(d0) -> (d0 + 1) domain: "
                                                   "d0 in [0, 2]");
}

Test(indexing, multi_output_fusion_and_tuples) {
  HloComp *f = hlo_comp_new(m, "f");
  HloInstr *p0 = tb_param(f, "p0", 0, SH(2, L(4), L(6)));
  HloInstr *init = tb_param(f, "init", 1, SH(0));
  HloInstr *r = tb_instr(f, "r", HLO_REDUCE, SH(1, L(4)), 2, p0, init);
  r->dims = tb_list(m, 1, L(1));
  HloInstr *n = tb_instr(f, "n", HLO_NEGATE, SH(2, L(4), L(6)), 1, p0);
  Shape *el[2] = {r->shape, n->shape};
  tb_instr(f, "t", HLO_TUPLE, shape_tuple(m->arena, 2, el), 2, r, n);
  HloInstr *fu = fusion_of(f, shape_tuple(m->arena, 2, el), 2);
  InstrIndexing *o0 = indexing_out_to_in(c, fu, 0);
  expect_text(imap_to_string(o0->sets[0].maps[0]),
              "(d0)[s0] -> (d0, s0) domain: d0 in [0, 3] s0 in [0, 5]");
  cr_expect_eq(o0->sets[1].n, 1);
  InstrIndexing *o1 = indexing_out_to_in(c, fu, 1);
  expect_text(imap_to_string(o1->sets[0].maps[0]),
              "(d0, d1) -> (d0, d1) domain: d0 in [0, 3] d1 in [0, 5]");
  cr_expect_eq(o1->sets[1].n, 0);
  /* Input to output: parameter 0 reaches both outputs. */
  InstrIndexing *io = indexing_in_to_out(c, fu, 0);
  cr_assert_eq(io->n, 2);
  expect_text(imap_to_string(io->sets[0].maps[0]),
              "(d0, d1) -> (d0) domain: d0 in [0, 3] d1 in [0, 5]");
  expect_text(imap_to_string(io->sets[1].maps[0]),
              "(d0, d1) -> (d0, d1) domain: d0 in [0, 3] d1 in [0, 5]");
}

Test(indexing, get_tuple_element_of_variadic_reduce_in_fusion) {
  HloComp *f = hlo_comp_new(m, "f");
  HloInstr *a = tb_param(f, "a", 0, SH(2, L(3), L(5)));
  HloInstr *b = tb_param(f, "b", 1, SH(2, L(5), L(3)));
  HloInstr *bt = tb_instr(f, "bt", HLO_TRANSPOSE, SH(2, L(3), L(5)), 1, b);
  bt->dims = tb_list(m, 2, L(1), L(0));
  HloInstr *ia = tb_param(f, "ia", 2, SH(0)), *ib = tb_param(f, "ib", 3, SH(0));
  Shape *el[2] = {SH(1, L(3)), SH(1, L(3))};
  HloInstr *r = tb_instr(f, "r", HLO_REDUCE, shape_tuple(m->arena, 2, el), 4, a, bt, ia, ib);
  r->dims = tb_list(m, 1, L(1));
  HloInstr *g = tb_instr(f, "g", HLO_GET_TUPLE_ELEMENT, SH(1, L(3)), 1, r);
  g->tuple_index = 1;
  HloInstr *fu = fusion_of(f, SH(1, L(3)), 4);
  InstrIndexing *ii = indexing_out_to_in(c, fu, 0);
  expect_text(imap_to_string(ii->sets[1].maps[0]),
              "(d0)[s0] -> (s0, d0) domain: d0 in [0, 2] s0 in [0, 4]");
  expect_text(imap_to_string(ii->sets[2].maps[0]), "(d0) -> () domain: d0 in [0, 2]");
}

Test(indexing, print_module_report) {
  HloInstr *p0 = tb_param(e, "p0", 0, SH(1, L(20)));
  HloInstr *bc = tb_instr(e, "bc0", HLO_BROADCAST, SH(2, L(10), L(20)), 1, p0);
  bc->dims = tb_list(m, 1, L(1));
  StrBuf b;
  sb_init(&b);
  indexing_print_module(&b, m, false);
  cr_expect_str_eq(b.s, "computation main:\n"
                        "  p0 = f32[20]{0} parameter(0)\n"
                        "  bc0 = f32[10,20]{1,0} broadcast(p0)\n"
                        "    operand 0:\n"
                        "      (d0, d1) -> (d1)\n"
                        "      domain:\n"
                        "      d0 in [0, 9]\n"
                        "      d1 in [0, 19]\n");
  sb_clear(&b);
  indexing_print_module(&b, m, true);
  cr_expect_str_eq(b.s, "computation main:\n"
                        "  p0 = f32[20]{0} parameter(0)\n"
                        "  bc0 = f32[10,20]{1,0} broadcast(p0)\n"
                        "    operand 0:\n"
                        "      (d0)[s0] -> (s0, d0)\n"
                        "      domain:\n"
                        "      d0 in [0, 19]\n"
                        "      s0 in [0, 9]\n");
  sb_free(&b);
}
