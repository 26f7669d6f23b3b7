/*
 * test_codegen_window.c - reduce-window in the code generator's elemental
 * emitter (emitters/elemental_window.c), run as a loop-fusion kernel.
 *
 * Each case is a module whose entry root is one fusion (a reduce-window of
 * entry parameters, init values as constants in the fusion) or a tuple of
 * its results.  The host kernel is built into a shared object and run on
 * random inputs in the parameters' layouts; the NVPTX kernel runs under the
 * SIMT emulator of codegen_test_util.h (when clang-19 is installed) and its
 * PTX must pass ptxas -arch=sm_90 (when installed).  Both are compared with
 * the interpreter (lib/eval, checked against JAX in test_eval.c) on the
 * same inputs; the kernels combine window elements in the interpreter's
 * order, so tolerances are tight.
 */
#include <criterion/criterion.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "codegen_test_util.h"

TestSuite(codegen_window, .fini = teardown, .timeout = 120);

enum { MAX_BUFS = 8 };

/* Host kernel, emulated GPU kernel and ptxas for module text hlo, whose
 * entry root is a fusion of entry parameters with one or more array
 * outputs. */
static void check(const char *hlo, double atol, double rtol) {
  HloModule *m = parse(hlo);
  snprintf(Dir, sizeof Dir, "/tmp/xhloc-rw-XXXXXX");
  cr_assert(mkdtemp(Dir), "mkdtemp");
  const HloInstr *ki = m->entry->root;
  int np = m->entry->nparams;
  cr_assert(ki->op == HLO_FUSION && ki->nops == np && np >= 1);
  const Shape *s = ki->shape;
  int nout = s->et == ET_TUPLE ? s->ntuple : 1;
  cr_assert(np + nout <= MAX_BUFS);
  Literal *args[MAX_BUFS];
  void *bufs[MAX_BUFS];
  for (int k = 0; k < np; k++) {
    args[k] = io_random_literal(A, m->entry->params[k]->shape, 777 + (uint64_t)k, -1);
    cr_assert(args[k]);
  }
  for (int k = 0; k < np; k++) {
    cr_assert(ki->ops[k]->op == HLO_PARAMETER);
    bufs[k] = to_physical(args[ki->ops[k]->param_number], ki->ops[k]->shape);
  }
  const Shape *os[MAX_BUFS];
  size_t obytes[MAX_BUFS];
  for (int j = 0; j < nout; j++) {
    os[j] = s->et == ET_TUPLE ? s->tuple[j] : s;
    int64_t ne = shape_elements(os[j]);
    obytes[j] = (size_t)(ne > 0 ? ne : 1) * (size_t)et_bytes(os[j]->et);
    bufs[np + j] = malloc(obytes[j]);
    memset(bufs[np + j], 0xA5, obytes[j]);
  }
  EvalOptions eo;
  eval_options_default(&eo);
  Literal *expect;
  cr_assert(eval_module(m, np, args, A, &eo, &expect, &D, NULL), "eval: %s", D.msg);
  const Literal *want[MAX_BUFS];
  for (int j = 0; j < nout; j++)
    want[j] = s->et == ET_TUPLE ? expect->tuple[j] : expect;

  run_host("window_test", ki, bufs);
  for (int j = 0; j < nout; j++)
    compare_out(bufs[np + j], os[j], want[j], atol, rtol, "host");

  if (have_clang()) {
    for (int j = 0; j < nout; j++)
      memset(bufs[np + j], 0xA5, obytes[j]);
    LaunchDims ld;
    run_emulated_kernel("window_test", ki, bufs, np + nout, &ld);
    for (int j = 0; j < nout; j++)
      compare_out(bufs[np + j], os[j], want[j], atol, rtol, "emulated GPU");
  }
  for (int k = 0; k < np + nout; k++) free(bufs[k]);
  check_ptx_launch("window_test", ki);
}

/* A module: fusion of one reduce-window of x (type xt) with init `init`
 * (a constant of element type et), reducer `op` (add / maximum / minimum),
 * result type ot and window attributes win. */
static void check_window(const char *xt, const char *et, const char *init, const char *op,
                         const char *ot, const char *win, double atol, double rtol) {
  char text[4096];
  snprintf(text, sizeof text,
           "HloModule m\n"
           "red {\n"
           "  a = %s[] parameter(0)\n"
           "  b = %s[] parameter(1)\n"
           "  ROOT r = %s[] %s(a, b)\n"
           "}\n"
           "fused {\n"
           "  x = %s parameter(0)\n"
           "  c = %s[] constant(%s)\n"
           "  ROOT w = %s reduce-window(x, c), window={%s}, to_apply=red\n"
           "}\n"
           "ENTRY e {\n"
           "  x = %s parameter(0)\n"
           "  ROOT f = %s fusion(x), kind=kLoop, calls=fused\n"
           "}\n",
           et, et, et, op, xt, et, init, ot, win, xt, ot);
  check(text, atol, rtol);
}

Test(codegen_window, max_pool_2x2_stride2_nhwc) {
  check_window("f32[2,6,6,3]{3,2,1,0}", "f32", "-inf", "maximum", "f32[2,3,3,3]{3,2,1,0}",
               "size=1x2x2x1 stride=1x2x2x1", 0, 0);
}

Test(codegen_window, max_pool_odd_size_with_padding) {
  /* 3x3 windows, stride 2, padding 1 on each side: 7x7 -> 4x4; padded
   * positions are skipped, so -inf never appears. */
  check_window("f32[1,7,7,2]{3,2,1,0}", "f32", "-inf", "maximum", "f32[1,4,4,2]{3,2,1,0}",
               "size=1x3x3x1 stride=1x2x2x1 pad=0_0x1_1x1_1x0_0", 0, 0);
}

Test(codegen_window, avg_pool_sum_same_padding) {
  /* SAME padding for a 3x3 window, stride 2 over 5x5: out 3x3, pad 1_1. */
  check_window("f32[1,5,5,2]{3,2,1,0}", "f32", "0", "add", "f32[1,3,3,2]{3,2,1,0}",
               "size=1x3x3x1 stride=1x2x2x1 pad=0_0x1_1x1_1x0_0", 1e-6, 1e-6);
}

Test(codegen_window, sum_same_padding_column_major_layout) {
  check_window("f32[5,6]{0,1}", "f32", "0", "add", "f32[5,6]{0,1}",
               "size=3x2 pad=1_1x0_1", 1e-6, 1e-6);
}

Test(codegen_window, base_and_window_dilation) {
  /* dim 0: base 7 dilated to 13, padded 1_2 -> 16, window 3 stride 2 -> 7;
   * dim 1: base 6 padded 0_1 -> 7, window 2 dilated to 3 -> 5. */
  check_window("f32[7,6]{1,0}", "f32", "0", "add", "f32[7,5]{1,0}",
               "size=3x2 stride=2x1 pad=1_2x0_1 lhs_dilate=2x1 rhs_dilate=1x2", 1e-6, 1e-6);
}

Test(codegen_window, negative_padding_and_window_dilation) {
  /* pad -1_0 crops the first input element: 9 -> 8, window 2 dilated to 3,
   * stride 2 -> 3 outputs. */
  check_window("f32[9]{0}", "f32", "-inf", "maximum", "f32[3]{0}",
               "size=2 stride=2 pad=-1_0 rhs_dilate=2", 0, 0);
}

Test(codegen_window, cumsum_1d) {
  /* jnp.cumsum: a window over the whole axis padded on the low side. */
  check_window("f32[10]{0}", "f32", "0", "add", "f32[10]{0}", "size=10 pad=9_0",
               1e-6, 1e-6);
}

Test(codegen_window, cumsum_along_minor_axis_s32) {
  check_window("s32[4,8]{1,0}", "s32", "0", "add", "s32[4,8]{1,0}",
               "size=1x8 pad=0_0x7_0", 0, 0);
}

Test(codegen_window, f16_sum) {
  check_window("f16[4,6]{1,0}", "f16", "0", "add", "f16[3,4]{1,0}", "size=2x3", 0, 0);
}

Test(codegen_window, bf16_min_strided) {
  check_window("bf16[8,5]{1,0}", "bf16", "inf", "minimum", "bf16[4,3]{1,0}",
               "size=2x2 stride=2x2 pad=0_0x0_1", 0, 0);
}

Test(codegen_window, known_values_cumsum) {
  /* Independent expectation: cumsum of 1..6 is 1 3 6 10 15 21. */
  HloModule *m = parse(
      "HloModule m\n"
      "add { a = f32[] parameter(0)\n b = f32[] parameter(1)\n"
      "  ROOT r = f32[] add(a, b) }\n"
      "fused { x = f32[6] parameter(0)\n c = f32[] constant(0)\n"
      "  ROOT w = f32[6] reduce-window(x, c), window={size=6 pad=5_0}, to_apply=add }\n"
      "ENTRY e { x = f32[6] parameter(0)\n"
      "  ROOT f = f32[6] fusion(x), kind=kLoop, calls=fused }\n");
  snprintf(Dir, sizeof Dir, "/tmp/xhloc-rw-XXXXXX");
  cr_assert(mkdtemp(Dir), "mkdtemp");
  float x[6] = {1, 2, 3, 4, 5, 6}, y[6] = {0};
  void *bufs[2] = {x, y};
  run_host("window_known", m->entry->root, bufs);
  const float want[6] = {1, 3, 6, 10, 15, 21};
  for (int k = 0; k < 6; k++)
    cr_expect(y[k] == want[k], "y[%d] = %g, want %g", k, y[k], want[k]);
}

Test(codegen_window, variadic_argmax_pool) {
  /* (value, index) pairs: the larger value wins, ties the smaller index. */
  check("HloModule m\n"
        "sel {\n"
        "  av = f32[] parameter(0)\n"
        "  ai = s32[] parameter(1)\n"
        "  bv = f32[] parameter(2)\n"
        "  bi = s32[] parameter(3)\n"
        "  gt = pred[] compare(av, bv), direction=GT\n"
        "  eq = pred[] compare(av, bv), direction=EQ\n"
        "  lt = pred[] compare(ai, bi), direction=LT\n"
        "  tie = pred[] and(eq, lt)\n"
        "  ta = pred[] or(gt, tie)\n"
        "  v = f32[] select(ta, av, bv)\n"
        "  i = s32[] select(ta, ai, bi)\n"
        "  ROOT t = (f32[], s32[]) tuple(v, i)\n"
        "}\n"
        "fused {\n"
        "  x = f32[6,8]{1,0} parameter(0)\n"
        "  io = s32[6,8]{1,0} iota(), iota_dimension=1\n"
        "  c = f32[] constant(-inf)\n"
        "  ci = s32[] constant(-1)\n"
        "  w = (f32[3,4]{1,0}, s32[3,4]{1,0}) reduce-window(x, io, c, ci),"
        " window={size=2x2 stride=2x2}, to_apply=sel\n"
        "  v = f32[3,4]{1,0} get-tuple-element(w), index=0\n"
        "  i = s32[3,4]{1,0} get-tuple-element(w), index=1\n"
        "  ROOT t = (f32[3,4]{1,0}, s32[3,4]{1,0}) tuple(v, i)\n"
        "}\n"
        "ENTRY e {\n"
        "  x = f32[6,8]{1,0} parameter(0)\n"
        "  ROOT f = (f32[3,4]{1,0}, s32[3,4]{1,0}) fusion(x), kind=kLoop, calls=fused\n"
        "}\n",
        0, 0);
}

/* A variadic reduce-window as the root of its fusion (fusion-wrapper's
 * form): one output per result of the reduce-window. */
Test(codegen_window, variadic_root_with_init_parameters) {
  check("HloModule m\n"
        "sum2 {\n"
        "  a = f32[] parameter(0)\n  ai = s32[] parameter(1)\n"
        "  b = f32[] parameter(2)\n  bi = s32[] parameter(3)\n"
        "  s = f32[] add(a, b)\n  si = s32[] add(ai, bi)\n"
        "  ROOT t = (f32[], s32[]) tuple(s, si)\n"
        "}\n"
        "fused {\n"
        "  x = f32[4,2]{1,0} parameter(0)\n  y = s32[4,2]{1,0} parameter(1)\n"
        "  c = f32[] parameter(2)\n  ci = s32[] parameter(3)\n"
        "  ROOT w = (f32[2,2]{1,0}, s32[2,2]{1,0}) reduce-window(x, y, c, ci),"
        " window={size=5x1 stride=3x1 pad=2_2x0_0}, to_apply=sum2\n"
        "}\n"
        "ENTRY e {\n"
        "  x = f32[4,2]{1,0} parameter(0)\n  y = s32[4,2]{1,0} parameter(1)\n"
        "  c = f32[] parameter(2)\n  ci = s32[] parameter(3)\n"
        "  ROOT f = (f32[2,2]{1,0}, s32[2,2]{1,0}) fusion(x, y, c, ci), kind=kLoop,"
        " calls=fused\n"
        "}\n",
        1e-6, 1e-6);
}

Test(codegen_window, reducer_with_unsupported_op_is_refused) {
  check_refused("HloModule m\n"
                "red { a = f32[] parameter(0)\n b = f32[] parameter(1)\n"
                "  ROOT r = f32[] custom-call(a), custom_call_target=\"foo\" }\n"
                "ENTRY e { x = f32[4] parameter(0)\n c = f32[] constant(0)\n"
                "  ROOT w = f32[2] reduce-window(x, c), window={size=2 stride=2},"
                " to_apply=red }\n",
                "custom-call");
}
