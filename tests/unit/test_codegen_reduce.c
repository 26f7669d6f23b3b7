/*
 * test_codegen_reduce.c - the reduction and dot kernels of the code
 * generator (emitters/reduction_kernel.c, emitters/dot_kernel.c).
 *
 * Each case is a module whose entry root is one fusion (or bare op).  The
 * host kernel is built into a shared object, loaded and run on random
 * inputs laid out physically as the parameters' layouts say; its outputs
 * are compared with the interpreter's (lib/eval) on the same inputs.  The
 * NVPTX kernel of the same module is checked with ptxas -arch=sm_90 when
 * ptxas is installed, and runs under the SIMT emulator of
 * codegen_test_util.h when clang-19 is installed.
 */
#include <criterion/criterion.h>

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "codegen_test_util.h"

TestSuite(codegen_reduce, .fini = teardown);

static const HloInstr *kernel_instr(const HloModule *m) {
  return m->entry->root;
}

static void check_ptx(const HloModule *m) {
  if (access(PTXAS, X_OK) != 0) return;
  Codegen *cg = new_codegen("reduce_test", CG_TARGET_NVPTX);
  LaunchDims ld;
  cr_assert(codegen_kernel(cg, kernel_instr(m), "kern", &ld, &D), "nvptx kernel: %s", D.msg);
  cr_assert(ld.block[0] * ld.block[1] * ld.block[2] <= 1024 && ld.block[0] > 0 &&
            ld.grid[0] > 0 && ld.grid[1] > 0 && ld.grid[1] <= 65535 && ld.grid[2] > 0 &&
            ld.grid[2] <= 65535, "launch dims");
  StrBuf ptx;
  sb_init(&ptx);
  cr_assert(codegen_ptx(cg, &ptx, &D), "ptx: %s", D.msg);
  run_ptxas(ptx.s);
  sb_free(&ptx);
  codegen_free(cg);
}

/* The GPU kernels sum in another order (strided partial sums, shuffle
 * trees): exact comparisons stay exact, float tolerances grow. */
static double gpu_atol(double t) {
  return t == 0 ? 0 : t * 10;
}

/* Runs the host kernel and the interpreter on the same random inputs, then
 * (gpu) the GPU kernel under the emulator. */
static void check_on(const char *hlo, double atol, double rtol, bool gpu) {
  HloModule *m = parse(hlo);
  snprintf(Dir, sizeof Dir, "/tmp/xhloc-c2-XXXXXX");
  cr_assert(mkdtemp(Dir), "mkdtemp");
  const HloInstr *ki = kernel_instr(m);

  int np = m->entry->nparams;
  Literal *args[16];
  void *bufs[64];
  int nb = 0;
  cr_assert(np <= 16);
  for (int k = 0; k < np; k++) {
    const Shape *s = m->entry->params[k]->shape;
    args[k] = io_random_literal(A, s, 1234 + (uint64_t)k, -1);
    cr_assert(args[k]);
  }
  /* kernel operands are entry parameters here */
  for (int k = 0; k < ki->nops; k++) {
    cr_assert(ki->ops[k]->op == HLO_PARAMETER);
    const Shape *s = ki->ops[k]->shape;
    bufs[nb++] = to_physical(args[ki->ops[k]->param_number], s);
  }
  PtrVec leaves = {0};
  io_shape_leaves(ki->shape, &leaves);
  int out0 = nb;
  for (int k = 0; k < leaves.len; k++) {
    const Shape *s = leaves.data[k];
    int64_t n = shape_elements(s);
    bufs[nb] = calloc((size_t)(n > 0 ? n : 1), (size_t)et_bytes(s->et));
    memset(bufs[nb], 0xA5, (size_t)(n > 0 ? n : 1) * (size_t)et_bytes(s->et));
    nb++;
  }

  EvalOptions eo;
  eval_options_default(&eo);
  Literal *expect;
  cr_assert(eval_module(m, np, args, A, &eo, &expect, &D, NULL), "eval: %s", D.msg);
  Literal **el;
  int nel = io_literal_leaves(expect, &el);
  cr_assert_eq(nel, leaves.len);

  run_host("reduce_test", ki, bufs);
  for (int k = 0; k < leaves.len; k++) {
    char what[32];
    snprintf(what, sizeof what, "output %d", k);
    compare_out(bufs[out0 + k], leaves.data[k], el[k], atol, rtol, what);
  }
  if (gpu && have_clang()) {
    for (int k = 0; k < leaves.len; k++) {
      const Shape *s = leaves.data[k];
      int64_t n = shape_elements(s);
      memset(bufs[out0 + k], 0xA5, (size_t)(n > 0 ? n : 1) * (size_t)et_bytes(s->et));
    }
    LaunchDims ld;
    run_emulated_kernel("reduce_emu", ki, bufs, nb, &ld);
    for (int k = 0; k < leaves.len; k++) {
      char what[48];
      snprintf(what, sizeof what, "emulated GPU output %d", k);
      compare_out(bufs[out0 + k], leaves.data[k], el[k], gpu_atol(atol), gpu_atol(rtol), what);
    }
  }
  for (int k = 0; k < nb; k++) free(bufs[k]);
  free(el);
  vec_free(&leaves);
  if (gpu)
    check_ptx(m);
}

static void check(const char *hlo, double atol, double rtol) {
  check_on(hlo, atol, rtol, true);
}

/* Host only: the GPU kernels start every thread's partial value from the
 * init value (XLA's contract: init is the reducer's identity), the host
 * applies it once, as the interpreter does. */
static void check_host(const char *hlo, double atol, double rtol) {
  check_on(hlo, atol, rtol, false);
}

#define ADD_F32                                                                \
  "add {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n"                \
  "  ROOT s = f32[] add(a, b)\n}\n"

/*
 * Reductions
 */
Test(codegen_reduce, row_sum_of_squares) {
  check("HloModule m\n" ADD_F32
        "fused {\n"
        "  p = f32[37,300] parameter(0)\n"
        "  sq = f32[37,300] multiply(p, p)\n"
        "  z = f32[] constant(0)\n"
        "  ROOT r = f32[37] reduce(sq, z), dimensions={1}, to_apply=add\n"
        "}\n"
        "ENTRY e {\n"
        "  p = f32[37,300] parameter(0)\n"
        "  ROOT f = f32[37] fusion(p), kind=kInput, calls=fused\n"
        "}\n",
        1e-5, 1e-5);
}

Test(codegen_reduce, long_row_block) {
  check("HloModule m\n" ADD_F32
        "fused {\n"
        "  p = f32[3,5000] parameter(0)\n"
        "  z = f32[] constant(0)\n"
        "  ROOT r = f32[3] reduce(p, z), dimensions={1}, to_apply=add\n"
        "}\n"
        "ENTRY e {\n"
        "  p = f32[3,5000] parameter(0)\n"
        "  ROOT f = f32[3] fusion(p), kind=kInput, calls=fused\n"
        "}\n",
        1e-4, 1e-5);
}

Test(codegen_reduce, column_sum) {
  check("HloModule m\n" ADD_F32
        "fused {\n"
        "  p = f32[300,37] parameter(0)\n"
        "  z = f32[] constant(0)\n"
        "  ROOT r = f32[37] reduce(p, z), dimensions={0}, to_apply=add\n"
        "}\n"
        "ENTRY e {\n"
        "  p = f32[300,37] parameter(0)\n"
        "  ROOT f = f32[37] fusion(p), kind=kInput, calls=fused\n"
        "}\n",
        1e-5, 1e-5);
}

Test(codegen_reduce, column_of_transposed_layout) {
  /* dim 0 is minor in memory: reducing it is a row reduction */
  check("HloModule m\n" ADD_F32
        "fused {\n"
        "  p = f32[70,9]{0,1} parameter(0)\n"
        "  z = f32[] constant(0)\n"
        "  ROOT r = f32[9] reduce(p, z), dimensions={0}, to_apply=add\n"
        "}\n"
        "ENTRY e {\n"
        "  p = f32[70,9]{0,1} parameter(0)\n"
        "  ROOT f = f32[9] fusion(p), kind=kInput, calls=fused\n"
        "}\n",
        1e-5, 1e-5);
}

Test(codegen_reduce, full_max) {
  check("HloModule m\n"
        "mx {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n"
        "  ROOT s = f32[] maximum(a, b)\n}\n"
        "fused {\n"
        "  p = f32[13,57] parameter(0)\n"
        "  z = f32[] constant(-inf)\n"
        "  ROOT r = f32[] reduce(p, z), dimensions={0,1}, to_apply=mx\n"
        "}\n"
        "ENTRY e {\n"
        "  p = f32[13,57] parameter(0)\n"
        "  ROOT f = f32[] fusion(p), kind=kInput, calls=fused\n"
        "}\n",
        0, 0);
}

Test(codegen_reduce, full_sum_large) {
  check("HloModule m\n" ADD_F32
        "fused {\n"
        "  p = f32[40,130] parameter(0)\n"
        "  z = f32[] constant(0)\n"
        "  ROOT r = f32[] reduce(p, z), dimensions={1,0}, to_apply=add\n"
        "}\n"
        "ENTRY e {\n"
        "  p = f32[40,130] parameter(0)\n"
        "  ROOT f = f32[] fusion(p), kind=kInput, calls=fused\n"
        "}\n",
        1e-4, 1e-5);
}

Test(codegen_reduce, multi_dim_min) {
  check("HloModule m\n"
        "mn {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n"
        "  ROOT s = f32[] minimum(a, b)\n}\n"
        "fused {\n"
        "  p = f32[4,5,6,7] parameter(0)\n"
        "  z = f32[] constant(inf)\n"
        "  ROOT r = f32[5,7] reduce(p, z), dimensions={0,2}, to_apply=mn\n"
        "}\n"
        "ENTRY e {\n"
        "  p = f32[4,5,6,7] parameter(0)\n"
        "  ROOT f = f32[5,7] fusion(p), kind=kInput, calls=fused\n"
        "}\n",
        0, 0);
}

Test(codegen_reduce, multi_dim_minor_reduced) {
  check("HloModule m\n" ADD_F32
        "fused {\n"
        "  p = f32[6,5,4,7] parameter(0)\n"
        "  z = f32[] constant(0)\n"
        "  ROOT r = f32[6,4] reduce(p, z), dimensions={1,3}, to_apply=add\n"
        "}\n"
        "ENTRY e {\n"
        "  p = f32[6,5,4,7] parameter(0)\n"
        "  ROOT f = f32[6,4] fusion(p), kind=kInput, calls=fused\n"
        "}\n",
        1e-5, 1e-5);
}

/* The host's row reduction runs 8 chains over a row: the init value must
 * still count once (5 added 8 times would be off by 35). */
Test(codegen_reduce, host_chains_init_once) {
  check_host("HloModule m\n" ADD_F32
        "fused {\n"
        "  p = f32[64,1003] parameter(0)\n"
        "  z = f32[] constant(5)\n"
        "  ROOT r = f32[64] reduce(p, z), dimensions={1}, to_apply=add\n"
        "}\n"
        "ENTRY e {\n"
        "  p = f32[64,1003] parameter(0)\n"
        "  ROOT f = f32[64] fusion(p), kind=kInput, calls=fused\n"
        "}\n",
        1e-3, 1e-5);
}

/* Chains per row of the minor dimension, an outer loop over the other
 * reduced dimension, a non-identity init. */
Test(codegen_reduce, host_chains_two_reduced_dims) {
  check_host("HloModule m\n" ADD_F32
        "fused {\n"
        "  p = f32[5,3,4,200] parameter(0)\n"
        "  e = f32[5,3,4,200] exponential(p)\n"
        "  z = f32[] constant(2.5)\n"
        "  ROOT r = f32[5,4] reduce(e, z), dimensions={1,3}, to_apply=add\n"
        "}\n"
        "ENTRY e {\n"
        "  p = f32[5,3,4,200] parameter(0)\n"
        "  ROOT f = f32[5,4] fusion(p), kind=kInput, calls=fused\n"
        "}\n",
        1e-3, 1e-5);
}

/* Column reductions in tiles of consecutive outputs, the last tile partial,
 * with a kept dimension outside the reduced one. */
Test(codegen_reduce, host_column_tiles) {
  check("HloModule m\n" ADD_F32
        "fused {\n"
        "  p = f32[7,40,300] parameter(0)\n"
        "  z = f32[] constant(1)\n"
        "  ROOT r = f32[7,300] reduce(p, z), dimensions={1}, to_apply=add\n"
        "}\n"
        "ENTRY e {\n"
        "  p = f32[7,40,300] parameter(0)\n"
        "  ROOT f = f32[7,300] fusion(p), kind=kInput, calls=fused\n"
        "}\n",
        1e-4, 1e-5);
}

Test(codegen_reduce, host_column_wide) {
  check("HloModule m\n" ADD_F32
        "fused {\n"
        "  p = f32[50,1000] parameter(0)\n"
        "  z = f32[] constant(0)\n"
        "  ROOT r = f32[1000] reduce(p, z), dimensions={0}, to_apply=add\n"
        "}\n"
        "ENTRY e {\n"
        "  p = f32[50,1000] parameter(0)\n"
        "  ROOT f = f32[1000] fusion(p), kind=kInput, calls=fused\n"
        "}\n",
        1e-4, 1e-5);
}

Test(codegen_reduce, product) {
  check("HloModule m\n"
        "mul {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n"
        "  ROOT s = f32[] multiply(a, b)\n}\n"
        "fused {\n"
        "  p = f32[8,6] parameter(0)\n"
        "  one = f32[] constant(1)\n"
        "  ROOT r = f32[8] reduce(p, one), dimensions={1}, to_apply=mul\n"
        "}\n"
        "ENTRY e {\n"
        "  p = f32[8,6] parameter(0)\n"
        "  ROOT f = f32[8] fusion(p), kind=kInput, calls=fused\n"
        "}\n",
        1e-7, 1e-5);
}

Test(codegen_reduce, s32_sum_and_pred_and) {
  check("HloModule m\n"
        "addi {\n  a = s32[] parameter(0)\n  b = s32[] parameter(1)\n"
        "  ROOT s = s32[] add(a, b)\n}\n"
        "fused {\n"
        "  p = s32[17,45] parameter(0)\n"
        "  z = s32[] constant(0)\n"
        "  ROOT r = s32[45] reduce(p, z), dimensions={0}, to_apply=addi\n"
        "}\n"
        "ENTRY e {\n"
        "  p = s32[17,45] parameter(0)\n"
        "  ROOT f = s32[45] fusion(p), kind=kInput, calls=fused\n"
        "}\n",
        0, 0);
}

Test(codegen_reduce, pred_and_row) {
  check("HloModule m\n"
        "land {\n  a = pred[] parameter(0)\n  b = pred[] parameter(1)\n"
        "  ROOT s = pred[] and(a, b)\n}\n"
        "fused {\n"
        "  p = f32[16,3] parameter(0)\n"
        "  c = f32[] constant(-0.9)\n"
        "  cb = f32[16,3] broadcast(c), dimensions={}\n"
        "  gt = pred[16,3] compare(p, cb), direction=GT\n"
        "  t = pred[] constant(true)\n"
        "  ROOT r = pred[16] reduce(gt, t), dimensions={1}, to_apply=land\n"
        "}\n"
        "ENTRY e {\n"
        "  p = f32[16,3] parameter(0)\n"
        "  ROOT f = pred[16] fusion(p), kind=kInput, calls=fused\n"
        "}\n",
        0, 0);
}

#define ARGMAX                                                                 \
  "argmax {\n"                                                                 \
  "  a0 = f32[] parameter(0)\n  a1 = s32[] parameter(1)\n"                     \
  "  b0 = f32[] parameter(2)\n  b1 = s32[] parameter(3)\n"                     \
  "  gt = pred[] compare(a0, b0), direction=GT\n"                              \
  "  an = pred[] compare(a0, a0), direction=NE\n"                             \
  "  eq = pred[] compare(a0, b0), direction=EQ\n"                              \
  "  lti = pred[] compare(a1, b1), direction=LT\n"                             \
  "  tie = pred[] and(eq, lti)\n"                                              \
  "  g = pred[] or(gt, an)\n"                                                 \
  "  keep = pred[] or(g, tie)\n"                                               \
  "  v = f32[] select(keep, a0, b0)\n"                                         \
  "  i = s32[] select(keep, a1, b1)\n"                                         \
  "  ROOT t = (f32[], s32[]) tuple(v, i)\n"                                    \
  "}\n"

Test(codegen_reduce, variadic_argmax) {
  check("HloModule m\n" ARGMAX
        "fused {\n"
        "  p = f32[8,100] parameter(0)\n"
        "  io = s32[8,100] iota(), iota_dimension=1\n"
        "  ninf = f32[] constant(-inf)\n"
        "  z = s32[] constant(0)\n"
        "  ROOT r = (f32[8], s32[8]) reduce(p, io, ninf, z), dimensions={1}, "
        "to_apply=argmax\n"
        "}\n"
        "ENTRY e {\n"
        "  p = f32[8,100] parameter(0)\n"
        "  ROOT f = (f32[8], s32[8]) fusion(p), kind=kInput, calls=fused\n"
        "}\n",
        0, 0);
}

/* argmax over long rows: chains of (value, index) pairs, ties to the
 * lowest index whatever the association. */
Test(codegen_reduce, host_argmax_chains) {
  check("HloModule m\n" ARGMAX
        "fused {\n"
        "  p = f32[33,517] parameter(0)\n"
        "  io = s32[33,517] iota(), iota_dimension=1\n"
        "  ninf = f32[] constant(-inf)\n"
        "  z = s32[] constant(0)\n"
        "  ROOT r = (f32[33], s32[33]) reduce(p, io, ninf, z), dimensions={1}, "
        "to_apply=argmax\n"
        "}\n"
        "ENTRY e {\n"
        "  p = f32[33,517] parameter(0)\n"
        "  ROOT f = (f32[33], s32[33]) fusion(p), kind=kInput, calls=fused\n"
        "}\n",
        0, 0);
}

/* A reducer whose accumulators feed each other (acc0 + acc1, x0 + x1) is
 * not reassociated on the host: bit for bit the interpreter's order, which
 * is XLA's CPU's. */
Test(codegen_reduce, host_entangled_reducer_in_order) {
  check_host("HloModule m\n"
             "tangle {\n  a0 = f32[] parameter(0)\n  a1 = f32[] parameter(1)\n"
             "  x0 = f32[] parameter(2)\n  x1 = f32[] parameter(3)\n"
             "  s0 = f32[] add(a0, a1)\n  s1 = f32[] add(x0, x1)\n"
             "  ROOT t = (f32[], f32[]) tuple(s0, s1)\n}\n"
             "fused {\n"
             "  a = f32[10,20,300] parameter(0)\n  b = f32[10,20,300] parameter(1)\n"
             "  z = f32[] constant(0)\n"
             "  ROOT r = (f32[20], f32[20]) reduce(a, b, z, z), dimensions={0,2}, "
             "to_apply=tangle\n"
             "}\n"
             "ENTRY e {\n"
             "  a = f32[10,20,300] parameter(0)\n  b = f32[10,20,300] parameter(1)\n"
             "  ROOT f = (f32[20], f32[20]) fusion(a, b), kind=kInput, calls=fused\n"
             "}\n",
             0, 0);
}

Test(codegen_reduce, variadic_gte_root) {
  check("HloModule m\n" ARGMAX
        "fused {\n"
        "  p = f32[5,2000] parameter(0)\n"
        "  io = s32[5,2000] iota(), iota_dimension=1\n"
        "  ninf = f32[] constant(-inf)\n"
        "  z = s32[] constant(0)\n"
        "  r = (f32[5], s32[5]) reduce(p, io, ninf, z), dimensions={1}, "
        "to_apply=argmax\n"
        "  ROOT i = s32[5] get-tuple-element(r), index=1\n"
        "}\n"
        "ENTRY e {\n"
        "  p = f32[5,2000] parameter(0)\n"
        "  ROOT f = s32[5] fusion(p), kind=kInput, calls=fused\n"
        "}\n",
        0, 0);
}

Test(codegen_reduce, variadic_argmax_column) {
  check("HloModule m\n" ARGMAX
        "fused {\n"
        "  p = f32[130,3,7] parameter(0)\n"
        "  io = s32[130,3,7] iota(), iota_dimension=0\n"
        "  ninf = f32[] constant(-inf)\n"
        "  z = s32[] constant(0)\n"
        "  ROOT r = (f32[3,7], s32[3,7]) reduce(p, io, ninf, z), dimensions={0}, "
        "to_apply=argmax\n"
        "}\n"
        "ENTRY e {\n"
        "  p = f32[130,3,7] parameter(0)\n"
        "  ROOT f = (f32[3,7], s32[3,7]) fusion(p), kind=kInput, calls=fused\n"
        "}\n",
        0, 0);
}

Test(codegen_reduce, column_many_outputs_fused_exp) {
  check("HloModule m\n" ADD_F32
        "fused {\n"
        "  p = f32[2,70,50] parameter(0)\n"
        "  e = f32[2,70,50] exponential(p)\n"
        "  z = f32[] constant(0)\n"
        "  ROOT r = f32[2,50] reduce(e, z), dimensions={1}, to_apply=add\n"
        "}\n"
        "ENTRY e {\n"
        "  p = f32[2,70,50] parameter(0)\n"
        "  ROOT f = f32[2,50] fusion(p), kind=kInput, calls=fused\n"
        "}\n",
        1e-5, 1e-5);
}

Test(codegen_reduce, bf16_input_converted) {
  check("HloModule m\n" ADD_F32
        "fused {\n"
        "  p = bf16[24,80] parameter(0)\n"
        "  c = f32[24,80] convert(p)\n"
        "  z = f32[] constant(0)\n"
        "  ROOT r = f32[24] reduce(c, z), dimensions={1}, to_apply=add\n"
        "}\n"
        "ENTRY e {\n"
        "  p = bf16[24,80] parameter(0)\n"
        "  ROOT f = f32[24] fusion(p), kind=kInput, calls=fused\n"
        "}\n",
        1e-5, 1e-5);
}

Test(codegen_reduce, f64_and_multi_output_tuple) {
  check("HloModule m\n"
        "addd {\n  a = f64[] parameter(0)\n  b = f64[] parameter(1)\n"
        "  ROOT s = f64[] add(a, b)\n}\n"
        "fused {\n"
        "  p = f64[7,33] parameter(0)\n"
        "  z = f64[] constant(0)\n"
        "  r = f64[7] reduce(p, z), dimensions={1}, to_apply=addd\n"
        "  b = f64[7,1] bitcast(r)\n"
        "  ROOT t = (f64[7], f64[7,1]) tuple(r, b)\n"
        "}\n"
        "ENTRY e {\n"
        "  p = f64[7,33] parameter(0)\n"
        "  ROOT f = (f64[7], f64[7,1]) fusion(p), kind=kInput, calls=fused\n"
        "}\n",
        1e-12, 1e-12);
}

Test(codegen_reduce, bare_reduce) {
  check("HloModule m\n" ADD_F32
        "ENTRY e {\n"
        "  p = f32[9,11] parameter(0)\n"
        "  z = f32[] parameter(1)\n"
        "  ROOT r = f32[11] reduce(p, z), dimensions={0}, to_apply=add\n"
        "}\n",
        1e-5, 1e-5);
}

/* An output computed from the reduce's result: the reduction emitter
 * refuses it and codegen falls back to the loop kernel, which must still
 * give the right values. */
Test(codegen_reduce, epilogue_output) {
  check("HloModule m\n" ADD_F32
        "fused {\n"
        "  p = f32[4,8] parameter(0)\n"
        "  z = f32[] constant(0)\n"
        "  r = f32[4] reduce(p, z), dimensions={1}, to_apply=add\n"
        "  n = f32[4] negate(r)\n"
        "  ROOT t = (f32[4], f32[4]) tuple(r, n)\n"
        "}\n"
        "ENTRY e {\n"
        "  p = f32[4,8] parameter(0)\n"
        "  ROOT f = (f32[4], f32[4]) fusion(p), kind=kInput, calls=fused\n"
        "}\n",
        1e-5, 1e-5);
}

Test(codegen_reduce, pred_or_long_rows) {
  check("HloModule m\n"
        "lor {\n  a = pred[] parameter(0)\n  b = pred[] parameter(1)\n"
        "  ROOT s = pred[] or(a, b)\n}\n"
        "fused {\n"
        "  p = f32[3,3000] parameter(0)\n"
        "  c = f32[] constant(0.9995)\n"
        "  cb = f32[3,3000] broadcast(c), dimensions={}\n"
        "  gt = pred[3,3000] compare(p, cb), direction=GT\n"
        "  f = pred[] constant(false)\n"
        "  ROOT r = pred[3] reduce(gt, f), dimensions={1}, to_apply=lor\n"
        "}\n"
        "ENTRY e {\n"
        "  p = f32[3,3000] parameter(0)\n"
        "  ROOT f = pred[3] fusion(p), kind=kInput, calls=fused\n"
        "}\n",
        0, 0);
}

Test(codegen_reduce, f16_long_rows) {
  check("HloModule m\n"
        "addh {\n  a = f16[] parameter(0)\n  b = f16[] parameter(1)\n"
        "  ROOT s = f16[] add(a, b)\n}\n"
        "fused {\n"
        "  p = f16[2,1500] parameter(0)\n"
        "  z = f16[] constant(0)\n"
        "  ROOT r = f16[2] reduce(p, z), dimensions={1}, to_apply=addh\n"
        "}\n"
        "ENTRY e {\n"
        "  p = f16[2,1500] parameter(0)\n"
        "  ROOT f = f16[2] fusion(p), kind=kInput, calls=fused\n"
        "}\n",
        0.1, 1e-2);
}

Test(codegen_reduce, s64_full_sum) {
  check("HloModule m\n"
        "addl {\n  a = s64[] parameter(0)\n  b = s64[] parameter(1)\n"
        "  ROOT s = s64[] add(a, b)\n}\n"
        "fused {\n"
        "  p = s64[3,1111] parameter(0)\n"
        "  z = s64[] constant(0)\n"
        "  ROOT r = s64[] reduce(p, z), dimensions={0,1}, to_apply=addl\n"
        "}\n"
        "ENTRY e {\n"
        "  p = s64[3,1111] parameter(0)\n"
        "  ROOT f = s64[] fusion(p), kind=kInput, calls=fused\n"
        "}\n",
        0, 0);
}

Test(codegen_reduce, empty_reduced_dim) {
  check("HloModule m\n" ADD_F32
        "fused {\n"
        "  p = f32[5,0] parameter(0)\n"
        "  z = f32[] constant(2.5)\n"
        "  ROOT r = f32[5] reduce(p, z), dimensions={1}, to_apply=add\n"
        "}\n"
        "ENTRY e {\n"
        "  p = f32[5,0] parameter(0)\n"
        "  ROOT f = f32[5] fusion(p), kind=kInput, calls=fused\n"
        "}\n",
        0, 0);
}

/* Complex reductions: the reduction kernel refuses them and the loop kernel
 * computes them elementally (host and emulated GPU). */
Test(codegen_reduce, complex_row_reduce) {
  check("HloModule m\n"
        "addc {\n  a = c64[] parameter(0)\n  b = c64[] parameter(1)\n"
        "  ROOT s = c64[] add(a, b)\n}\n"
        "fused {\n"
        "  p = c64[4,8] parameter(0)\n"
        "  z = c64[] constant((0, 0))\n"
        "  ROOT r = c64[4] reduce(p, z), dimensions={1}, to_apply=addc\n"
        "}\n"
        "ENTRY e {\n"
        "  p = c64[4,8] parameter(0)\n"
        "  ROOT f = c64[4] fusion(p), kind=kInput, calls=fused\n"
        "}\n",
        1e-5, 1e-5);
}

/*
 * Dots
 */
Test(codegen_reduce, dot_batch) {
  check("HloModule m\n"
        "fused {\n"
        "  a = f32[2,3,17] parameter(0)\n"
        "  b = f32[2,17,5] parameter(1)\n"
        "  ROOT d = f32[2,3,5] dot(a, b), lhs_batch_dims={0}, rhs_batch_dims={0}, "
        "lhs_contracting_dims={2}, rhs_contracting_dims={1}\n"
        "}\n"
        "ENTRY e {\n"
        "  a = f32[2,3,17] parameter(0)\n"
        "  b = f32[2,17,5] parameter(1)\n"
        "  ROOT f = f32[2,3,5] fusion(a, b), kind=kCustom, calls=fused\n"
        "}\n",
        1e-5, 1e-5);
}

Test(codegen_reduce, dot_transposed_contracting) {
  check("HloModule m\n"
        "fused {\n"
        "  a = f32[37,9] parameter(0)\n"
        "  b = f32[11,37] parameter(1)\n"
        "  ROOT d = f32[9,11] dot(a, b), lhs_contracting_dims={0}, "
        "rhs_contracting_dims={1}\n"
        "}\n"
        "ENTRY e {\n"
        "  a = f32[37,9] parameter(0)\n"
        "  b = f32[11,37] parameter(1)\n"
        "  ROOT f = f32[9,11] fusion(a, b), kind=kCustom, calls=fused\n"
        "}\n",
        1e-5, 1e-5);
}

Test(codegen_reduce, dot_vector_matrix) {
  check("HloModule m\n"
        "fused {\n"
        "  a = f32[33] parameter(0)\n"
        "  b = f32[33,7] parameter(1)\n"
        "  ROOT d = f32[7] dot(a, b), lhs_contracting_dims={0}, "
        "rhs_contracting_dims={0}\n"
        "}\n"
        "ENTRY e {\n"
        "  a = f32[33] parameter(0)\n"
        "  b = f32[33,7] parameter(1)\n"
        "  ROOT f = f32[7] fusion(a, b), kind=kCustom, calls=fused\n"
        "}\n",
        1e-5, 1e-5);
}

Test(codegen_reduce, dot_two_contracting_dims_and_layout) {
  check("HloModule m\n"
        "fused {\n"
        "  a = f32[3,4,5]{0,1,2} parameter(0)\n"
        "  b = f32[5,4,6] parameter(1)\n"
        "  ROOT d = f32[3,6] dot(a, b), lhs_contracting_dims={1,2}, "
        "rhs_contracting_dims={1,0}\n"
        "}\n"
        "ENTRY e {\n"
        "  a = f32[3,4,5]{0,1,2} parameter(0)\n"
        "  b = f32[5,4,6] parameter(1)\n"
        "  ROOT f = f32[3,6] fusion(a, b), kind=kCustom, calls=fused\n"
        "}\n",
        1e-5, 1e-5);
}

Test(codegen_reduce, dot_bf16) {
  check("HloModule m\n"
        "fused {\n"
        "  a = bf16[20,35] parameter(0)\n"
        "  b = bf16[35,19] parameter(1)\n"
        "  ROOT d = bf16[20,19] dot(a, b), lhs_contracting_dims={1}, "
        "rhs_contracting_dims={0}\n"
        "}\n"
        "ENTRY e {\n"
        "  a = bf16[20,35] parameter(0)\n"
        "  b = bf16[35,19] parameter(1)\n"
        "  ROOT f = bf16[20,19] fusion(a, b), kind=kCustom, calls=fused\n"
        "}\n",
        1e-2, 1e-2);
}

Test(codegen_reduce, dot_f16_batch_two_dims) {
  check("HloModule m\n"
        "fused {\n"
        "  a = f16[2,3,4,10] parameter(0)\n"
        "  b = f16[3,2,10,5] parameter(1)\n"
        "  ROOT d = f16[2,3,4,5] dot(a, b), lhs_batch_dims={0,1}, "
        "rhs_batch_dims={1,0}, lhs_contracting_dims={3}, rhs_contracting_dims={2}\n"
        "}\n"
        "ENTRY e {\n"
        "  a = f16[2,3,4,10] parameter(0)\n"
        "  b = f16[3,2,10,5] parameter(1)\n"
        "  ROOT f = f16[2,3,4,5] fusion(a, b), kind=kCustom, calls=fused\n"
        "}\n",
        2e-3, 2e-3);
}

Test(codegen_reduce, dot_s32) {
  check("HloModule m\n"
        "ENTRY e {\n"
        "  a = s32[6,21] parameter(0)\n"
        "  b = s32[21,18] parameter(1)\n"
        "  ROOT d = s32[6,18] dot(a, b), lhs_contracting_dims={1}, "
        "rhs_contracting_dims={0}\n"
        "}\n",
        0, 0);
}

Test(codegen_reduce, dot_fused_transpose_operand) {
  check("HloModule m\n"
        "fused {\n"
        "  a = f32[40,23] parameter(0)\n"
        "  t = f32[23,40] transpose(a), dimensions={1,0}\n"
        "  b = f32[40,18] parameter(1)\n"
        "  n = f32[40,18] negate(b)\n"
        "  ROOT d = f32[23,18] dot(t, n), lhs_contracting_dims={1}, "
        "rhs_contracting_dims={0}\n"
        "}\n"
        "ENTRY e {\n"
        "  a = f32[40,23] parameter(0)\n"
        "  b = f32[40,18] parameter(1)\n"
        "  ROOT f = f32[23,18] fusion(a, b), kind=kOutput, calls=fused\n"
        "}\n",
        1e-5, 1e-5);
}

Test(codegen_reduce, dot_empty_contracting) {
  check("HloModule m\n"
        "ENTRY e {\n"
        "  a = f32[3,0] parameter(0)\n"
        "  b = f32[0,4] parameter(1)\n"
        "  ROOT d = f32[3,4] dot(a, b), lhs_contracting_dims={1}, "
        "rhs_contracting_dims={0}\n"
        "}\n",
        0, 0);
}

Test(codegen_reduce, dot_large_tiles) {
  check("HloModule m\n"
        "ENTRY e {\n"
        "  a = f32[70,45] parameter(0)\n"
        "  b = f32[45,33] parameter(1)\n"
        "  ROOT d = f32[70,33] dot(a, b), lhs_contracting_dims={1}, "
        "rhs_contracting_dims={0}\n"
        "}\n",
        1e-5, 1e-5);
}
