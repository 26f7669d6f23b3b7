/*
 * test_kernel_chain.c - host kernels' row footprints (codegen_row_bytes,
 * emitters/kernel_chain.c): for a module whose entry root is one fusion,
 * compiled for the host, which arguments each work unit touches only in
 * its own rows (and the bytes of a row), and which any unit may touch
 * anywhere.  Expected values are worked out by hand from the shapes.
 * Chains themselves are checked end to end: testdata/passes/codegen/
 * kernel_chain.hlo (which kernels join), tests/check-xhlo-run-thunks.sh
 * (the same bits on 1, 2 and 5 threads) and tests/check-e2e.sh.
 */
#include <criterion/criterion.h>

#include <stdlib.h>
#include <string.h>

#include "../../emitters/codegen.h"
#include "../../lib/eval/eval.h"

typedef struct Case {
  const char *name;
  const char *hlo;
  bool rows;                      /* codegen_row_bytes' answer */
  int64_t rb[8];                  /* per argument */
} Case;

#define F(body) "HloModule m\n\n" body

static const Case Cases[] = {
  /* softmax's exp: the row max broadcast along the rows and x itself */
  {"rows_and_broadcast_row_vector", F(
    "%f (m: f32[256], x: f32[256,512]) -> f32[256,512] {\n"
    "  %m = f32[256]{0} parameter(0)\n"
    "  %x = f32[256,512]{1,0} parameter(1)\n"
    "  %b = f32[256,512]{1,0} broadcast(%m), dimensions={0}\n"
    "  %s = f32[256,512]{1,0} subtract(%x, %b)\n"
    "  ROOT %e = f32[256,512]{1,0} exponential(%s)\n"
    "}\n"
    "ENTRY %e (m: f32[256], x: f32[256,512]) -> f32[256,512] {\n"
    "  %m = f32[256]{0} parameter(0)\n"
    "  %x = f32[256,512]{1,0} parameter(1)\n"
    "  ROOT %r = f32[256,512]{1,0} fusion(%m, %x), kind=kLoop, calls=%f\n"
    "}\n"), true, {4, 2048, 2048}},
  /* a bias along the minor dimension is read whole by every unit */
  {"broadcast_along_rows", F(
    "%f (x: f32[256,512], b: f32[512]) -> f32[256,512] {\n"
    "  %x = f32[256,512]{1,0} parameter(0)\n"
    "  %b = f32[512]{0} parameter(1)\n"
    "  %bb = f32[256,512]{1,0} broadcast(%b), dimensions={1}\n"
    "  ROOT %a = f32[256,512]{1,0} add(%x, %bb)\n"
    "}\n"
    "ENTRY %e (x: f32[256,512], b: f32[512]) -> f32[256,512] {\n"
    "  %x = f32[256,512]{1,0} parameter(0)\n"
    "  %b = f32[512]{0} parameter(1)\n"
    "  ROOT %r = f32[256,512]{1,0} fusion(%x, %b), kind=kLoop, calls=%f\n"
    "}\n"), true, {2048, 0, 2048}},
  /* reversed rows: unit u reads other units' rows */
  {"reversed_rows", F(
    "%f (x: f32[256,512]) -> f32[256,512] {\n"
    "  %x = f32[256,512]{1,0} parameter(0)\n"
    "  %r = f32[256,512]{1,0} reverse(%x), dimensions={0}\n"
    "  ROOT %n = f32[256,512]{1,0} negate(%r)\n"
    "}\n"
    "ENTRY %e (x: f32[256,512]) -> f32[256,512] {\n"
    "  %x = f32[256,512]{1,0} parameter(0)\n"
    "  ROOT %r = f32[256,512]{1,0} fusion(%x), kind=kLoop, calls=%f\n"
    "}\n"), true, {0, 2048}},
  /* reversed within a row: still the unit's own rows */
  {"reversed_columns", F(
    "%f (x: f32[256,512]) -> f32[256,512] {\n"
    "  %x = f32[256,512]{1,0} parameter(0)\n"
    "  %r = f32[256,512]{1,0} reverse(%x), dimensions={1}\n"
    "  ROOT %n = f32[256,512]{1,0} negate(%r)\n"
    "}\n"
    "ENTRY %e (x: f32[256,512]) -> f32[256,512] {\n"
    "  %x = f32[256,512]{1,0} parameter(0)\n"
    "  ROOT %r = f32[256,512]{1,0} fusion(%x), kind=kLoop, calls=%f\n"
    "}\n"), true, {2048, 2048}},
  /* a row reduction with a fused producer: rows of 512 in, one value out */
  {"row_reduction", F(
    "%add (a: f32[], b: f32[]) -> f32[] {\n"
    "  %a = f32[] parameter(0)\n"
    "  %b = f32[] parameter(1)\n"
    "  ROOT %s = f32[] add(%a, %b)\n"
    "}\n"
    "%f (x: f32[256,512]) -> f32[256] {\n"
    "  %x = f32[256,512]{1,0} parameter(0)\n"
    "  %e = f32[256,512]{1,0} exponential(%x)\n"
    "  %z = f32[] constant(0)\n"
    "  ROOT %r = f32[256]{0} reduce(%e, %z), dimensions={1}, to_apply=%add\n"
    "}\n"
    "ENTRY %e (x: f32[256,512]) -> f32[256] {\n"
    "  %x = f32[256,512]{1,0} parameter(0)\n"
    "  ROOT %r = f32[256]{0} fusion(%x), kind=kInput, calls=%f\n"
    "}\n"), true, {2048, 4}},
  /* a column reduction's units are tiles of columns, not rows */
  {"column_reduction", F(
    "%add (a: f32[], b: f32[]) -> f32[] {\n"
    "  %a = f32[] parameter(0)\n"
    "  %b = f32[] parameter(1)\n"
    "  ROOT %s = f32[] add(%a, %b)\n"
    "}\n"
    "%f (x: f32[256,512]) -> f32[512] {\n"
    "  %x = f32[256,512]{1,0} parameter(0)\n"
    "  %z = f32[] constant(0)\n"
    "  ROOT %r = f32[512]{0} reduce(%x, %z), dimensions={0}, to_apply=%add\n"
    "}\n"
    "ENTRY %e (x: f32[256,512]) -> f32[512] {\n"
    "  %x = f32[256,512]{1,0} parameter(0)\n"
    "  ROOT %r = f32[512]{0} fusion(%x), kind=kInput, calls=%f\n"
    "}\n"), false, {0, 0}},
  /* rank 3: rows are the 4 x 64 leading indices; the operand of the same
   * leading dimensions is read by rows of one element */
  {"rank3_rows", F(
    "%f (x: f32[4,64,128], v: f32[4,64]) -> f32[4,64,128] {\n"
    "  %x = f32[4,64,128]{2,1,0} parameter(0)\n"
    "  %v = f32[4,64]{1,0} parameter(1)\n"
    "  %b = f32[4,64,128]{2,1,0} broadcast(%v), dimensions={0,1}\n"
    "  ROOT %m = f32[4,64,128]{2,1,0} multiply(%x, %b)\n"
    "}\n"
    "ENTRY %e (x: f32[4,64,128], v: f32[4,64]) -> f32[4,64,128] {\n"
    "  %x = f32[4,64,128]{2,1,0} parameter(0)\n"
    "  %v = f32[4,64]{1,0} parameter(1)\n"
    "  ROOT %r = f32[4,64,128]{2,1,0} fusion(%x, %v), kind=kLoop, calls=%f\n"
    "}\n"), true, {512, 4, 512}},
  /* the result's rows are the physical rows of its {0,1} layout (dim 1):
   * an operand of the default layout is read across them */
  {"column_major_result", F(
    "%f (x: f32[256,512]) -> f32[256,512] {\n"
    "  %x = f32[256,512]{1,0} parameter(0)\n"
    "  ROOT %n = f32[256,512]{0,1} negate(%x)\n"
    "}\n"
    "ENTRY %e (x: f32[256,512]) -> f32[256,512]{0,1} {\n"
    "  %x = f32[256,512]{1,0} parameter(0)\n"
    "  ROOT %r = f32[256,512]{0,1} fusion(%x), kind=kLoop, calls=%f\n"
    "}\n"), true, {0, 1024}},
  /* a gather of rows: the table at data-dependent rows, the indices by
   * rows */
  {"gather_rows", F(
    "%f (t: f32[1000,128], i: s32[256,1]) -> f32[256,128] {\n"
    "  %t = f32[1000,128]{1,0} parameter(0)\n"
    "  %i = s32[256,1]{1,0} parameter(1)\n"
    "  %g = f32[256,1,128]{2,1,0} gather(%t, %i), offset_dims={1,2}, collapsed_slice_dims={}, "
    "start_index_map={0}, index_vector_dim=1, slice_sizes={1,128}\n"
    "  ROOT %r = f32[256,128]{1,0} reshape(%g)\n"
    "}\n"
    "ENTRY %e (t: f32[1000,128], i: s32[256,1]) -> f32[256,128] {\n"
    "  %t = f32[1000,128]{1,0} parameter(0)\n"
    "  %i = s32[256,1]{1,0} parameter(1)\n"
    "  ROOT %r = f32[256,128]{1,0} fusion(%t, %i), kind=kLoop, calls=%f\n"
    "}\n"), true, {0, 4, 512}},
};

static int64_t leaf_bytes(const Shape *s) {
  int eb = et_bytes(s->et);
  return shape_elements(s) * (eb > 0 ? eb : 1);
}

static void check_case(const Case *c) {
  SrcFile *src = srcfile_from_string(c->name, c->hlo, strlen(c->hlo));
  ParseOptions po = {.strip_glog_prefixes = true};
  HloModule **mods = NULL;
  Diag d = {0};
  int n = hlo_parse(src, &po, &mods, &d);
  cr_assert(n >= 1, "%s: parse: %s", c->name, d.msg);
  cr_assert(hlo_verify(mods[0], &d), "%s: verify: %s", c->name, d.msg);
  const HloInstr *root = mods[0]->entry->root;
  CodegenOptions o;
  codegen_options_default(&o);
  o.target = CG_TARGET_HOST;
  Codegen *cg = codegen_new(c->name, &o, &d);
  cr_assert(cg, "%s: codegen_new: %s", c->name, d.msg);
  LaunchDims ld;
  cr_assert(codegen_kernel(cg, root, "kern", &ld, &d), "%s: codegen_kernel: %s", c->name,
            d.msg);
  /* the arguments: operand leaves, then result leaves */
  PtrVec leaves = {0};
  for (int k = 0; k < root->nops; k++)
    io_shape_leaves(root->ops[k]->shape, &leaves);
  io_shape_leaves(root->shape, &leaves);
  int64_t bytes[8], rb[8];
  cr_assert(leaves.len <= 8);
  for (int k = 0; k < leaves.len; k++)
    bytes[k] = leaf_bytes(leaves.data[k]);
  bool rows = codegen_row_bytes(cg, root, &ld, leaves.len, bytes, rb);
  cr_expect_eq(rows, c->rows, "%s: row footprints %s", c->name, rows ? "found" : "not found");
  for (int k = 0; k < leaves.len; k++)
    cr_expect_eq(rb[k], c->rb[k], "%s: argument %d: row bytes %lld, expected %lld", c->name, k,
                 (long long)rb[k], (long long)c->rb[k]);
  if (rows)
    cr_expect_gt(ld.rows_per_unit, 0, "%s", c->name);
  vec_free(&leaves);
  codegen_free(cg);
  for (int k = 0; k < n; k++)
    hlo_module_free(mods[k]);
  free(mods);
  srcfile_free(src);
  diag_clear(&d);
}

Test(kernel_chain, row_footprints) {
  for (size_t k = 0; k < sizeof Cases / sizeof Cases[0]; k++)
    check_case(&Cases[k]);
}

/* The GPU's kernels have no host work units. */
Test(kernel_chain, none_on_the_gpu) {
  const Case *c = &Cases[0];
  SrcFile *src = srcfile_from_string(c->name, c->hlo, strlen(c->hlo));
  ParseOptions po = {.strip_glog_prefixes = true};
  HloModule **mods = NULL;
  Diag d = {0};
  int n = hlo_parse(src, &po, &mods, &d);
  cr_assert(n >= 1, "parse: %s", d.msg);
  CodegenOptions o;
  codegen_options_default(&o);
  Codegen *cg = codegen_new(c->name, &o, &d);
  cr_assert(cg, "codegen_new: %s", d.msg);
  const HloInstr *root = mods[0]->entry->root;
  LaunchDims ld;
  cr_assert(codegen_kernel(cg, root, "kern", &ld, &d), "codegen_kernel: %s", d.msg);
  int64_t bytes[3] = {1024, 524288, 524288}, rb[3] = {7, 7, 7};
  cr_expect_not(codegen_row_bytes(cg, root, &ld, 3, bytes, rb));
  for (int k = 0; k < 3; k++)
    cr_expect_eq(rb[k], 0);
  codegen_free(cg);
  for (int k = 0; k < n; k++)
    hlo_module_free(mods[k]);
  free(mods);
  srcfile_free(src);
  diag_clear(&d);
}
