/*
 * test_codegen_transpose.c - the GPU transpose kernel of the code generator
 * (emitters/transpose_kernel.c) and the dispatch around it.
 *
 * Each case is a module whose entry root is one fusion (or bare op) of
 * entry parameters.  The interpreter (lib/eval) gives the expected values
 * (a transpose only moves elements; the elementwise ops around it are
 * checked against NumPy/JAX in test_eval.c).  On random inputs laid out
 * physically as the parameters' layouts say:
 *   - the host kernel (a shared object) must agree with the interpreter;
 *   - the NVPTX kernel runs under the SIMT emulator of codegen_test_util.h
 *     (when clang-19 is installed) and must agree too; its launch shape
 *     says whether the tiled kernel (32x8 threads) or the loop kernel took
 *     the fusion, which each case states;
 *   - the optimized PTX must pass ptxas -arch=sm_90 (when installed), and a
 *     tiled kernel's PTX must use shared memory and a barrier.
 */
#include <criterion/criterion.h>

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "codegen_test_util.h"

TestSuite(codegen_transpose, .fini = teardown, .timeout = 120);

static void check_ptx(const HloInstr *ki, bool tiled) {
  if (access(PTXAS, X_OK) != 0) return;
  Codegen *cg = new_codegen("transpose_test", CG_TARGET_NVPTX);
  LaunchDims ld;
  cr_assert(codegen_kernel(cg, ki, "kern", &ld, &D), "nvptx kernel: %s", D.msg);
  StrBuf ptx;
  sb_init(&ptx);
  cr_assert(codegen_ptx(cg, &ptx, &D), "ptx: %s", D.msg);
  if (tiled)
    cr_expect(strstr(ptx.s, ".shared") && strstr(ptx.s, "bar.sync") &&
              strstr(ptx.s, "ld.shared") && strstr(ptx.s, "st.shared"),
              "no shared-memory tile in the PTX");
  run_ptxas(ptx.s);
  sb_free(&ptx);
  codegen_free(cg);
}

/* The GPU kernel under the emulator; checks whether it is the tiled one. */
static void run_emulated(const HloInstr *ki, void **bufs, int nb, bool tiled) {
  LaunchDims ld;
  run_emulated_kernel("transpose_emu", ki, bufs, nb, &ld);
  cr_assert(ld.block[0] * ld.block[1] * ld.block[2] <= 1024 && ld.grid[0] > 0,
            "launch dims");
  bool is_tiled = ld.block[0] == 32 && ld.block[1] == 8;
  cr_expect_eq(is_tiled, tiled, "expected the %s kernel, launch is %ux%u threads",
               tiled ? "tiled transpose" : "loop", ld.block[0], ld.block[1]);
}

/* Host kernel, emulated GPU kernel and PTX of the module's entry root
 * against the interpreter; `tiled`: the GPU must use the transpose kernel. */
static void check(const char *hlo, bool tiled, double tol) {
  HloModule *m = parse(hlo);
  snprintf(Dir, sizeof Dir, "/tmp/xhloc-c5-XXXXXX");
  cr_assert(mkdtemp(Dir), "mkdtemp");
  const HloInstr *ki = m->entry->root;
  int np = m->entry->nparams;
  Literal *args[8];
  void *bufs[16];
  int nb = 0;
  cr_assert(np <= 8);
  for (int k = 0; k < np; k++) {
    args[k] = io_random_literal(A, m->entry->params[k]->shape, 77 + (uint64_t)k, -1);
    cr_assert(args[k]);
  }
  for (int k = 0; k < ki->nops; k++) {
    cr_assert(ki->ops[k]->op == HLO_PARAMETER);
    bufs[nb++] = to_physical(args[ki->ops[k]->param_number], ki->ops[k]->shape);
  }
  const Shape *os = ki->shape;
  cr_assert(shape_is_array(os));
  size_t obytes = (size_t)shape_byte_size(os) + 1;
  int out = nb;
  bufs[nb++] = malloc(obytes);

  EvalOptions eo;
  eval_options_default(&eo);
  Literal *want;
  cr_assert(eval_module(m, np, args, A, &eo, &want, &D, NULL), "eval: %s", D.msg);

  /* host */
  memset(bufs[out], 0xA5, obytes);
  run_host("transpose_test", ki, bufs);
  compare_out(bufs[out], os, want, tol, tol, "host");

  /* GPU kernel, emulated */
  if (have_clang()) {
    memset(bufs[out], 0xA5, obytes);
    run_emulated(ki, bufs, nb, tiled);
    compare_out(bufs[out], os, want, tol, tol, "emulated GPU");
  }
  for (int k = 0; k < nb; k++) free(bufs[k]);
  check_ptx(ki, tiled);
}

#define ENTRY1(T_IN, T_OUT)                                                    \
  "ENTRY %e (x: " T_IN ") -> " T_OUT " {\n"                                    \
  "  %x = " T_IN " parameter(0)\n"                                             \
  "  ROOT %r = " T_OUT " fusion(%x), kind=kLoop, calls=%f\n"                  \
  "}\n"

Test(codegen_transpose, odd_2d_f32) {
  check("HloModule m\n\n"
        "%f (p: f32[33,65]) -> f32[65,33] {\n"
        "  %p = f32[33,65]{1,0} parameter(0)\n"
        "  ROOT %t = f32[65,33]{1,0} transpose(%p), dimensions={1,0}\n"
        "}\n\n" ENTRY1("f32[33,65]{1,0}", "f32[65,33]{1,0}"),
        true, 0);
}

/* Large enough for the host's 32x32 tiles, with partial tiles at both
 * edges and a 3-d rotation (rows are two dimensions). */
Test(codegen_transpose, host_tiles_2d) {
  check("HloModule m\n\n"
        "%f (p: f32[161,97]) -> f32[97,161] {\n"
        "  %p = f32[161,97]{1,0} parameter(0)\n"
        "  ROOT %t = f32[97,161]{1,0} transpose(%p), dimensions={1,0}\n"
        "}\n\n" ENTRY1("f32[161,97]{1,0}", "f32[97,161]{1,0}"),
        true, 0);
}

Test(codegen_transpose, host_tiles_3d) {
  check("HloModule m\n\n"
        "%f (p: f32[5,70,130]) -> f32[130,5,70] {\n"
        "  %p = f32[5,70,130]{2,1,0} parameter(0)\n"
        "  %t = f32[130,5,70]{2,1,0} transpose(%p), dimensions={2,0,1}\n"
        "  ROOT %n = f32[130,5,70]{2,1,0} negate(%t)\n"
        "}\n\n" ENTRY1("f32[5,70,130]{2,1,0}", "f32[130,5,70]{2,1,0}"),
        true, 0);
}

Test(codegen_transpose, f16_2d) {
  check("HloModule m\n\n"
        "%f (p: f16[64,48]) -> f16[48,64] {\n"
        "  %p = f16[64,48]{1,0} parameter(0)\n"
        "  ROOT %t = f16[48,64]{1,0} transpose(%p), dimensions={1,0}\n"
        "}\n\n" ENTRY1("f16[64,48]{1,0}", "f16[48,64]{1,0}"),
        true, 0);
}

Test(codegen_transpose, bare_transpose_op) {
  check("HloModule m\n\n"
        "ENTRY %e (x: s32[40,17]) -> s32[17,40] {\n"
        "  %x = s32[40,17]{1,0} parameter(0)\n"
        "  ROOT %t = s32[17,40]{1,0} transpose(%x), dimensions={1,0}\n"
        "}\n",
        true, 0);
}

Test(codegen_transpose, reverse_3d) {
  check("HloModule m\n\n"
        "%f (p: f32[20,3,40]) -> f32[40,3,20] {\n"
        "  %p = f32[20,3,40]{2,1,0} parameter(0)\n"
        "  ROOT %t = f32[40,3,20]{2,1,0} transpose(%p), dimensions={2,1,0}\n"
        "}\n\n" ENTRY1("f32[20,3,40]{2,1,0}", "f32[40,3,20]{2,1,0}"),
        true, 0);
}

Test(codegen_transpose, batched_minor_swap_3d) {
  check("HloModule m\n\n"
        "%f (p: f32[3,33,50]) -> f32[3,50,33] {\n"
        "  %p = f32[3,33,50]{2,1,0} parameter(0)\n"
        "  ROOT %t = f32[3,50,33]{2,1,0} transpose(%p), dimensions={0,2,1}\n"
        "}\n\n" ENTRY1("f32[3,33,50]{2,1,0}", "f32[3,50,33]{2,1,0}"),
        true, 0);
}

Test(codegen_transpose, rotate_3d_f16) {
  check("HloModule m\n\n"
        "%f (p: f16[18,20,36]) -> f16[36,18,20] {\n"
        "  %p = f16[18,20,36]{2,1,0} parameter(0)\n"
        "  ROOT %t = f16[36,18,20]{2,1,0} transpose(%p), dimensions={2,0,1}\n"
        "}\n\n" ENTRY1("f16[18,20,36]{2,1,0}", "f16[36,18,20]{2,1,0}"),
        true, 0);
}

/* the minor dimension stays minor: no tile, the loop kernel copies rows */
Test(codegen_transpose, minor_kept_uses_loop) {
  check("HloModule m\n\n"
        "%f (p: f32[33,20,24]) -> f32[20,33,24] {\n"
        "  %p = f32[33,20,24]{2,1,0} parameter(0)\n"
        "  ROOT %t = f32[20,33,24]{2,1,0} transpose(%p), dimensions={1,0,2}\n"
        "}\n\n" ENTRY1("f32[33,20,24]{2,1,0}", "f32[20,33,24]{2,1,0}"),
        false, 0);
}

/* 1xN: a degenerate transpose is a copy for the loop kernel */
Test(codegen_transpose, one_by_n_uses_loop) {
  check("HloModule m\n\n"
        "%f (p: f32[1,100]) -> f32[100,1] {\n"
        "  %p = f32[1,100]{1,0} parameter(0)\n"
        "  ROOT %t = f32[100,1]{1,0} transpose(%p), dimensions={1,0}\n"
        "}\n\n" ENTRY1("f32[1,100]{1,0}", "f32[100,1]{1,0}"),
        false, 0);
}

/* a transpose that is a relabelling of the same bytes (layouts say so) */
Test(codegen_transpose, layout_only_transpose_uses_loop) {
  check("HloModule m\n\n"
        "%f (p: f32[40,36]) -> f32[36,40] {\n"
        "  %p = f32[40,36]{1,0} parameter(0)\n"
        "  ROOT %t = f32[36,40]{0,1} transpose(%p), dimensions={1,0}\n"
        "}\n\n" ENTRY1("f32[40,36]{1,0}", "f32[36,40]{0,1}"),
        false, 0);
}

/* a copy changing the layout is a physical transpose */
Test(codegen_transpose, layout_changing_copy) {
  check("HloModule m\n\n"
        "%f (p: f32[40,36]) -> f32[40,36] {\n"
        "  %p = f32[40,36]{1,0} parameter(0)\n"
        "  ROOT %c = f32[40,36]{0,1} copy(%p)\n"
        "}\n\n" ENTRY1("f32[40,36]{1,0}", "f32[40,36]{0,1}"),
        true, 0);
}

/* producers on the read side, consumers (with another operand read at the
 * output index, a scalar constant and a convert) on the write side */
Test(codegen_transpose, fused_producers_and_consumers) {
  check("HloModule m\n\n"
        "%f (p: f32[50,70], q: f32[70,50]) -> f16[70,50] {\n"
        "  %p = f32[50,70]{1,0} parameter(0)\n"
        "  %q = f32[70,50]{1,0} parameter(1)\n"
        "  %c = f32[] constant(0.5)\n"
        "  %cb = f32[50,70]{1,0} broadcast(%c), dimensions={}\n"
        "  %e = f32[50,70]{1,0} exponential(%p)\n"
        "  %a = f32[50,70]{1,0} multiply(%e, %cb)\n"
        "  %t = f32[70,50]{1,0} transpose(%a), dimensions={1,0}\n"
        "  %s = f32[70,50]{1,0} subtract(%t, %q)\n"
        "  %m = f32[70,50]{1,0} multiply(%s, %t)\n"
        "  ROOT %o = f16[70,50]{1,0} convert(%m)\n"
        "}\n\n"
        "ENTRY %e (x: f32[50,70], y: f32[70,50]) -> f16[70,50] {\n"
        "  %x = f32[50,70]{1,0} parameter(0)\n"
        "  %y = f32[70,50]{1,0} parameter(1)\n"
        "  ROOT %r = f16[70,50]{1,0} fusion(%x, %y), kind=kLoop, calls=%f\n"
        "}\n",
        true, 1e-2);
}

/* f16 with a row broadcast as producer and a select/compare consumer with
 * a clamp of scalar bounds */
Test(codegen_transpose, f16_broadcast_select_clamp) {
  check("HloModule m\n\n"
        "%f (p: f16[48,40], b: f16[40]) -> f16[40,48] {\n"
        "  %p = f16[48,40]{1,0} parameter(0)\n"
        "  %b = f16[40]{0} parameter(1)\n"
        "  %bb = f16[48,40]{1,0} broadcast(%b), dimensions={1}\n"
        "  %a = f16[48,40]{1,0} add(%p, %bb)\n"
        "  %t = f16[40,48]{1,0} transpose(%a), dimensions={1,0}\n"
        "  %z = f16[] constant(0)\n"
        "  %zb = f16[40,48]{1,0} broadcast(%z), dimensions={}\n"
        "  %g = pred[40,48]{1,0} compare(%t, %zb), direction=GT\n"
        "  %n = f16[40,48]{1,0} negate(%t)\n"
        "  %s = f16[40,48]{1,0} select(%g, %t, %n)\n"
        "  %lo = f16[] constant(0.25)\n"
        "  %hi = f16[] constant(1.5)\n"
        "  ROOT %c = f16[40,48]{1,0} clamp(%lo, %s, %hi)\n"
        "}\n\n"
        "ENTRY %e (x: f16[48,40], y: f16[40]) -> f16[40,48] {\n"
        "  %x = f16[48,40]{1,0} parameter(0)\n"
        "  %y = f16[40]{0} parameter(1)\n"
        "  ROOT %r = f16[40,48]{1,0} fusion(%x, %y), kind=kLoop, calls=%f\n"
        "}\n",
        true, 1e-3);
}

/* pred through the tile (stored as bytes in shared memory) */
Test(codegen_transpose, pred_tile) {
  check("HloModule m\n\n"
        "%f (p: f32[36,20]) -> pred[20,36] {\n"
        "  %p = f32[36,20]{1,0} parameter(0)\n"
        "  %z = f32[] constant(0)\n"
        "  %zb = f32[36,20]{1,0} broadcast(%z), dimensions={}\n"
        "  %g = pred[36,20]{1,0} compare(%p, %zb), direction=GE\n"
        "  %t = pred[20,36]{1,0} transpose(%g), dimensions={1,0}\n"
        "  ROOT %n = pred[20,36]{1,0} not(%t)\n"
        "}\n\n" ENTRY1("f32[36,20]{1,0}", "pred[20,36]{1,0}"),
        true, 0);
}

/* a consumer that is not elementwise (reverse) stays with the loop kernel */
Test(codegen_transpose, non_elementwise_consumer_uses_loop) {
  check("HloModule m\n\n"
        "%f (p: f32[32,48]) -> f32[48,32] {\n"
        "  %p = f32[32,48]{1,0} parameter(0)\n"
        "  %t = f32[48,32]{1,0} transpose(%p), dimensions={1,0}\n"
        "  ROOT %v = f32[48,32]{1,0} reverse(%t), dimensions={0}\n"
        "}\n\n" ENTRY1("f32[32,48]{1,0}", "f32[48,32]{1,0}"),
        false, 0);
}

/*
 * The loop kernel's launch: vector accesses and enough blocks.
 */
static void loop_ptx(const char *hlo, int want_vec, uint32_t min_blocks) {
  HloModule *m = parse(hlo);
  Codegen *cg = new_codegen("loop_test", CG_TARGET_NVPTX);
  LaunchDims ld;
  cr_assert(codegen_kernel(cg, m->entry->root, "kern", &ld, &D), "nvptx kernel: %s", D.msg);
  cr_expect(ld.grid[0] >= min_blocks, "only %u blocks", ld.grid[0]);
  cr_expect(ld.block[0] >= 64 && ld.block[0] <= 256, "block of %u", ld.block[0]);
  StrBuf ptx;
  sb_init(&ptx);
  cr_assert(codegen_ptx(cg, &ptx, &D), "ptx: %s", D.msg);
  char ld_s[32], st_s[32];
  snprintf(ld_s, sizeof ld_s, "ld.global.v%d.", want_vec);
  snprintf(st_s, sizeof st_s, "st.global.v%d.", want_vec);
  cr_expect(strstr(ptx.s, ld_s) && strstr(ptx.s, st_s), "no %s / %s in:\n%s", ld_s, st_s,
            ptx.s);
  sb_free(&ptx);
  codegen_free(cg);
}

/* 2M f32 elements: 4 per thread (16-byte loads and stores), 2048 blocks */
Test(codegen_transpose, loop_large_vectorized) {
  loop_ptx("HloModule m\n\n"
           "%f (p: f32[2048,1024], q: f32[2048,1024]) -> f32[2048,1024] {\n"
           "  %p = f32[2048,1024]{1,0} parameter(0)\n"
           "  %q = f32[2048,1024]{1,0} parameter(1)\n"
           "  ROOT %a = f32[2048,1024]{1,0} add(%p, %q)\n"
           "}\n\n"
           "ENTRY %e (x: f32[2048,1024], y: f32[2048,1024]) -> f32[2048,1024] {\n"
           "  %x = f32[2048,1024]{1,0} parameter(0)\n"
           "  %y = f32[2048,1024]{1,0} parameter(1)\n"
           "  ROOT %r = f32[2048,1024]{1,0} fusion(%x, %y), kind=kLoop, calls=%f\n"
           "}\n",
           4, 2048);
}

/* f16: 8 per thread */
Test(codegen_transpose, loop_large_f16_vectorized) {
  loop_ptx("HloModule m\n\n"
           "%f (p: f16[4096,1024]) -> f16[4096,1024] {\n"
           "  %p = f16[4096,1024]{1,0} parameter(0)\n"
           "  ROOT %n = f16[4096,1024]{1,0} negate(%p)\n"
           "}\n\n" ENTRY1("f16[4096,1024]{1,0}", "f16[4096,1024]{1,0}"),
           4, 2048);
}

/* 40k elements: no widening; smaller blocks so that >= 132 SMs get work */
Test(codegen_transpose, loop_mid_size_fills_sms) {
  HloModule *m = parse("HloModule m\n\n"
                       "%f (p: f32[200,200]) -> f32[200,200] {\n"
                       "  %p = f32[200,200]{1,0} parameter(0)\n"
                       "  ROOT %n = f32[200,200]{1,0} negate(%p)\n"
                       "}\n\n" ENTRY1("f32[200,200]{1,0}", "f32[200,200]{1,0}"));
  Codegen *cg = new_codegen("loop_test", CG_TARGET_NVPTX);
  LaunchDims ld;
  cr_assert(codegen_kernel(cg, m->entry->root, "kern", &ld, &D), "%s", D.msg);
  cr_expect(ld.grid[0] * ld.block[0] >= 40000 && ld.grid[0] >= 132,
            "%u blocks of %u", ld.grid[0], ld.block[0]);
  codegen_free(cg);
}

/* a vectorized loop kernel computed right (host and emulated GPU) */
Test(codegen_transpose, loop_vectorized_emulated) {
  check("HloModule m\n\n"
        "%f (p: f32[544,256]) -> f32[544,256] {\n"
        "  %p = f32[544,256]{1,0} parameter(0)\n"
        "  %n = f32[544,256]{1,0} negate(%p)\n"
        "  ROOT %m = f32[544,256]{1,0} multiply(%n, %p)\n"
        "}\n\n" ENTRY1("f32[544,256]{1,0}", "f32[544,256]{1,0}"),
        false, 0);
}
