/*
 * test_topk_sorts.c - unit tests of lib/hlo/topk_sorts.c: which sorts XLA's
 * CPU compiler runs as its TopK (and the interpreter therefore sorts
 * stably).  testdata/eval/xla_sort_topk.hlo checks the order against XLA.
 */
#include <criterion/criterion.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../lib/hlo/topk_sorts.h"

static HloModule **Mods;
static int NMods;
static SrcFile *Src;
static Diag D;

static void teardown(void) {
  for (int k = 0; k < NMods; k++) hlo_module_free(Mods[k]);
  free(Mods);
  Mods = NULL;
  NMods = 0;
  if (Src) srcfile_free(Src);
  Src = NULL;
  diag_clear(&D);
}

TestSuite(topk_sorts, .fini = teardown);

/* A module whose entry sorts x (ET[4,64]) with the iota `second` (a
 * broadcast of the 1-D iota i1, or alone when NULL) by `cmp`, then `uses`
 * (HLO lines using r, the sort); whether hlo_mark_topk_sorts marked the
 * sort stable.  The module of the previous call is freed first. */
static bool marked(const char *et, const char *cmp, const char *second, const char *uses) {
  teardown(); /* a test may ask several times */
  char text[4096];
  char sorted[256];
  if (second)
    snprintf(sorted, sizeof sorted,
             "%s  io = s32[4,64] %s\n"
             "  r = (%s[4,64], s32[4,64]) sort(x, io), dimensions={1}, to_apply=c\n",
             strstr(second, "i1") ? "  i1 = s32[64] iota(), iota_dimension=0\n" : "", second, et);
  else
    snprintf(sorted, sizeof sorted, "  r = %s[4,64] sort(x), dimensions={1}, to_apply=c\n", et);
  snprintf(text, sizeof text,
           "HloModule m\n"
           "c {\n  a = %s[] parameter(0)\n  b = %s[] parameter(1)\n%s"
           "  ROOT cmp = pred[] %s\n}\n"
           "ENTRY e {\n  x = %s[4,64] parameter(0)\n%s%s}\n",
           et, et, second ? "  i = s32[] parameter(2)\n  j = s32[] parameter(3)\n" : "", cmp,
           et, sorted, uses);
  Src = srcfile_from_string("test.hlo", text, strlen(text));
  ParseOptions po = {0};
  NMods = hlo_parse(Src, &po, &Mods, &D);
  cr_assert(NMods >= 1, "parse: %s\n%s", D.msg, text);
  cr_assert(hlo_verify(Mods[0], &D), "verify: %s\n%s", D.msg, text);
  bool any = hlo_mark_topk_sorts(Mods[0]);
  const HloInstr *sort = NULL;
  for (int k = 0; k < Mods[0]->entry->ninstrs; k++)
    if (Mods[0]->entry->instrs[k]->op == HLO_SORT) sort = Mods[0]->entry->instrs[k];
  cr_assert(sort);
  cr_assert_eq(any, sort->is_stable);
  return sort->is_stable;
}

#define GT "compare(a, b), direction=GT"
#define IOTA "iota(), iota_dimension=1"
#define TWO_SLICES                                                             \
  "  v = f32[4,64] get-tuple-element(r), index=0\n"                            \
  "  k = s32[4,64] get-tuple-element(r), index=1\n"                            \
  "  vs = f32[4,8] slice(v), slice={[0:4], [0:8]}\n"                           \
  "  ks = s32[4,8] slice(k), slice={[0:4], [0:8]}\n"                           \
  "  ROOT t = (f32[4,8], s32[4,8]) tuple(vs, ks)\n"

Test(topk_sorts, values_and_iota_sliced_from_zero) {
  cr_expect(marked("f32", GT, IOTA, TWO_SLICES));
}

Test(topk_sorts, values_alone_sliced) {
  cr_expect(marked("f32", GT, NULL, "  ROOT s = f32[4,5] slice(r), slice={[0:4], [0:5]}\n"));
}

Test(topk_sorts, broadcast_iota) {
  cr_expect(marked("f32", GT, "broadcast(i1), dimensions={1}", TWO_SLICES));
}

Test(topk_sorts, only_f32) {
  cr_expect(!marked("bf16", GT, IOTA,
                    "  v = bf16[4,64] get-tuple-element(r), index=0\n"
                    "  ROOT vs = bf16[4,8] slice(v), slice={[0:4], [0:8]}\n"));
}

Test(topk_sorts, only_greater_than) {
  cr_expect(!marked("f32", "compare(b, a), direction=LT", IOTA, TWO_SLICES));
}

Test(topk_sorts, iota_along_the_batch_dimension) {
  cr_expect(!marked("f32", GT, "iota(), iota_dimension=0", TWO_SLICES));
}

Test(topk_sorts, every_use_a_slice_of_the_same_k_from_zero) {
  cr_expect(!marked("f32", GT, IOTA,
                    "  v = f32[4,64] get-tuple-element(r), index=0\n"
                    "  ROOT n = f32[4,64] negate(v)\n"));
  cr_expect(!marked("f32", GT, IOTA,
                    "  v = f32[4,64] get-tuple-element(r), index=0\n"
                    "  k = s32[4,64] get-tuple-element(r), index=1\n"
                    "  vs = f32[4,8] slice(v), slice={[0:4], [0:8]}\n"
                    "  ks = s32[4,9] slice(k), slice={[0:4], [0:9]}\n"
                    "  ROOT t = (f32[4,8], s32[4,9]) tuple(vs, ks)\n"));
  cr_expect(!marked("f32", GT, NULL, "  ROOT s = f32[4,5] slice(r), slice={[0:4], [1:6]}\n"));
  cr_expect(!marked("f32", GT, NULL, "  ROOT s = f32[2,5] slice(r), slice={[0:2], [0:5]}\n"));
}

Test(topk_sorts, a_root_sort_is_not_a_top_k) {
  cr_expect(!marked("f32", GT, NULL, ""));
}
