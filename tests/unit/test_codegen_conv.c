/*
 * test_codegen_conv.c - the convolution kernel of the code generator
 * (emitters/conv_kernel.c).
 *
 * Each case is a module whose entry root is one convolution fusion (or a
 * bare convolution) of entry parameters.  The host kernel is built into a
 * shared object and run on random inputs laid out physically as the
 * parameters' layouts say; the NVPTX kernel runs under the SIMT emulator of
 * codegen_test_util.h (when clang-19 is installed) and its PTX must pass
 * ptxas -arch=sm_90 (when ptxas is installed).  Both are compared with the
 * interpreter (lib/eval, itself checked against JAX in test_eval.c) on the
 * same inputs; the kernels sum in the interpreter's order, so tolerances
 * are tight.
 */
#include <criterion/criterion.h>

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "codegen_test_util.h"

TestSuite(codegen_conv, .fini = teardown, .timeout = 120);


/* Host kernel, emulated GPU kernel and ptxas for module text hlo. */
static void check(const char *hlo, double atol, double rtol) {
  HloModule *m = parse(hlo);
  snprintf(Dir, sizeof Dir, "/tmp/xhloc-c4-XXXXXX");
  cr_assert(mkdtemp(Dir), "mkdtemp");
  const HloInstr *ki = m->entry->root;
  int np = m->entry->nparams;
  cr_assert(np == 2 && ki->nops == 2);
  Literal *args[2];
  void *bufs[3];
  for (int k = 0; k < np; k++) {
    args[k] = io_random_literal(A, m->entry->params[k]->shape, 4321 + (uint64_t)k, -1);
    cr_assert(args[k]);
  }
  for (int k = 0; k < 2; k++) {
    cr_assert(ki->ops[k]->op == HLO_PARAMETER);
    bufs[k] = to_physical(args[ki->ops[k]->param_number], ki->ops[k]->shape);
  }
  const Shape *os = ki->shape;
  size_t obytes = (size_t)(shape_elements(os) > 0 ? shape_elements(os) : 1) *
                  (size_t)et_bytes(os->et);
  bufs[2] = malloc(obytes);
  memset(bufs[2], 0xA5, obytes);

  EvalOptions eo;
  eval_options_default(&eo);
  Literal *expect;
  cr_assert(eval_module(m, np, args, A, &eo, &expect, &D, NULL), "eval: %s", D.msg);

  run_host("conv_test", ki, bufs);
  compare_out(bufs[2], os, expect, atol, rtol, "host");

  if (have_clang()) {
    memset(bufs[2], 0xA5, obytes);
    LaunchDims ld;
    run_emulated_kernel("conv_test", ki, bufs, 3, &ld);
    compare_out(bufs[2], os, expect, atol, rtol, "emulated GPU");
  }
  for (int k = 0; k < 3; k++) free(bufs[k]);
  check_ptx_launch("conv_test", ki);
}

/* A module whose entry root is a fusion of one convolution of x and w. */
static void check_conv(const char *x, const char *w, const char *out, const char *attrs,
                       double atol, double rtol) {
  char text[2048];
  snprintf(text, sizeof text,
           "HloModule m\n"
           "fused {\n"
           "  x = %s parameter(0)\n"
           "  w = %s parameter(1)\n"
           "  ROOT c = %s convolution(x, w), %s\n"
           "}\n"
           "ENTRY e {\n"
           "  x = %s parameter(0)\n"
           "  w = %s parameter(1)\n"
           "  ROOT f = %s fusion(x, w), kind=kCustom, calls=fused\n"
           "}\n",
           x, w, out, attrs, x, w, out);
  check(text, atol, rtol);
}

#define TOL 1e-5, 1e-5

Test(codegen_conv, conv1d) {
  check_conv("f32[2,11,3]", "f32[3,3,4]", "f32[2,9,4]", "window={size=3}, dim_labels=b0f_0io->b0f",
             TOL);
}

Test(codegen_conv, nhwc_stride_pad) {
  check_conv("f32[2,9,9,3]", "f32[3,3,3,5]", "f32[2,5,5,5]",
             "window={size=3x3 stride=2x2 pad=1_1x1_1}, dim_labels=b01f_01io->b01f", TOL);
}

Test(codegen_conv, nchw_asymmetric_pad) {
  check_conv("f32[2,3,8,7]", "f32[4,3,3,2]", "f32[2,4,7,7]",
             "window={size=3x2 pad=1_0x0_1}, dim_labels=bf01_oi01->bf01", TOL);
}

Test(codegen_conv, conv3d_strided) {
  check_conv("f32[1,5,6,4,2]", "f32[2,3,2,2,3]", "f32[1,4,2,3,3]",
             "window={size=2x3x2 stride=1x2x1}, dim_labels=b012f_012io->b012f", TOL);
}

Test(codegen_conv, lhs_dilation_negative_padding) {
  check_conv("f32[1,6,5,2]", "f32[3,3,2,3]", "f32[1,10,12,3]",
             "window={size=3x3 pad=-1_2x2_-1 lhs_dilate=2x3}, dim_labels=b01f_01io->b01f", TOL);
}

Test(codegen_conv, rhs_dilation) {
  check_conv("f32[2,9,8,3]", "f32[3,2,3,4]", "f32[2,5,5,4]",
             "window={size=3x2 rhs_dilate=2x3}, dim_labels=b01f_01io->b01f", TOL);
}

Test(codegen_conv, window_reversal) {
  check_conv("f32[1,5,5,2]", "f32[3,3,2,2]", "f32[1,7,7,2]",
             "window={size=3x3 pad=2_2x2_2 rhs_reversal=1x0}, dim_labels=b01f_01io->b01f", TOL);
}

Test(codegen_conv, grouped) {
  check_conv("f32[2,6,6,4]", "f32[3,3,2,6]", "f32[2,4,4,6]",
             "window={size=3x3}, dim_labels=b01f_01io->b01f, feature_group_count=2", TOL);
}

Test(codegen_conv, depthwise_multiplier) {
  check_conv("f32[1,7,7,8]", "f32[3,3,1,16]", "f32[1,7,7,16]",
             "window={size=3x3 pad=1_1x1_1}, dim_labels=b01f_01io->b01f, "
             "feature_group_count=8", TOL);
}

/* The weight gradient of a depthwise conv as JAX writes it. */
Test(codegen_conv, batch_group_weight_grad) {
  check_conv("f32[2,6,6,8]", "f32[2,3,3,4]", "f32[4,4,2,4]",
             "window={size=3x3}, dim_labels=f01b_i01o->01bf, batch_group_count=4", TOL);
}

Test(codegen_conv, fb01_layout_labels) {
  check_conv("f32[3,2,7,6]", "f32[3,4,2,3]", "f32[6,5,2,4]",
             "window={size=2x3 pad=0_0x0_1}, dim_labels=fb01_io01->01bf", TOL);
}

Test(codegen_conv, physical_layouts) {
  check_conv("f32[2,6,5,3]{1,2,0,3}", "f32[3,3,3,4]{0,1,3,2}", "f32[2,6,5,4]{2,3,0,1}",
             "window={size=3x3 pad=1_1x1_1}, dim_labels=b01f_01io->b01f", TOL);
}

Test(codegen_conv, bf16) {
  check_conv("bf16[1,6,6,4]", "bf16[3,3,4,4]", "bf16[1,4,4,4]",
             "window={size=3x3}, dim_labels=b01f_01io->b01f", 0, 0);
}

Test(codegen_conv, f16_grouped_dilated) {
  check_conv("f16[2,7,7,4]", "f16[2,2,2,4]", "f16[2,5,5,4]",
             "window={size=2x2 rhs_dilate=2x2 stride=1x1}, dim_labels=b01f_01io->b01f, "
             "feature_group_count=2", 0, 0);
}

Test(codegen_conv, f64) {
  check_conv("f64[2,5,5,3]", "f64[2,2,3,2]", "f64[2,2,2,2]",
             "window={size=2x2 stride=2x2}, dim_labels=b01f_01io->b01f", 1e-12, 1e-12);
}

Test(codegen_conv, s32) {
  check_conv("s32[2,5,4,3]", "s32[3,3,3,2]", "s32[2,5,4,2]",
             "window={size=3x3 pad=1_1x1_1}, dim_labels=b01f_01io->b01f", 0, 0);
}

/* s8 sums leave the s8 range: the result saturates as the interpreter's. */
Test(codegen_conv, s8_saturates) {
  check_conv("s8[1,4,4,6]", "s8[3,3,6,2]", "s8[1,2,2,2]",
             "window={size=3x3}, dim_labels=b01f_01io->b01f", 0, 0);
}

Test(codegen_conv, resnet_layer) {
  check_conv("f32[2,14,14,32]", "f32[3,3,32,32]", "f32[2,14,14,32]",
             "window={size=3x3 pad=1_1x1_1}, dim_labels=b01f_01io->b01f", 1e-4, 1e-5);
}

/* A producer fused into the convolution: the operand is computed by the
 * elemental emitter (bf16 converted to f32) before the product. */
Test(codegen_conv, fused_convert_operand) {
  check("HloModule m\n"
        "fused {\n"
        "  x = bf16[1,6,6,3] parameter(0)\n"
        "  w = f32[2,2,3,2] parameter(1)\n"
        "  xc = f32[1,6,6,3] convert(x)\n"
        "  ROOT c = f32[1,3,3,2] convolution(xc, w), window={size=2x2 stride=2x2}, "
        "dim_labels=b01f_01io->b01f\n"
        "}\n"
        "ENTRY e {\n"
        "  x = bf16[1,6,6,3] parameter(0)\n"
        "  w = f32[2,2,3,2] parameter(1)\n"
        "  ROOT f = f32[1,3,3,2] fusion(x, w), kind=kCustom, calls=fused\n"
        "}\n",
        TOL);
}

Test(codegen_conv, bare_convolution) {
  check("HloModule m\n"
        "ENTRY e {\n"
        "  x = f32[1,3,8,8] parameter(0)\n"
        "  w = f32[6,3,3,3] parameter(1)\n"
        "  ROOT c = f32[1,6,4,4] convolution(x, w), window={size=3x3 stride=2x2 "
        "pad=1_1x1_1}, dim_labels=bf01_oi01->bf01\n"
        "}\n",
        TOL);
}

/* A bitcast of the convolution as the fusion root: the same bytes. */
Test(codegen_conv, bitcast_root) {
  check("HloModule m\n"
        "fused {\n"
        "  x = f32[1,5,5,3] parameter(0)\n"
        "  w = f32[2,2,3,2] parameter(1)\n"
        "  c = f32[1,4,4,2] convolution(x, w), window={size=2x2}, dim_labels=b01f_01io->b01f\n"
        "  ROOT b = f32[32] bitcast(c)\n"
        "}\n"
        "ENTRY e {\n"
        "  x = f32[1,5,5,3] parameter(0)\n"
        "  w = f32[2,2,3,2] parameter(1)\n"
        "  ROOT f = f32[32] fusion(x, w), kind=kCustom, calls=fused\n"
        "}\n",
        TOL);
}

/* Like check_refused, at source line `line`. */
static void check_refused_at(const char *hlo, const char *what, int line) {
  parse(hlo);
  Codegen *cg = new_codegen("conv_test", CG_TARGET_HOST);
  LaunchDims ld;
  cr_assert(!codegen_kernel(cg, Mods[0]->entry->root, "kern", &ld, &D), "accepted");
  cr_assert(D.msg && strstr(D.msg, what), "message: %s", D.msg ? D.msg : "(none)");
  cr_assert(D.loc.line == line, "location line %d", D.loc.line);
  codegen_free(cg);
}

/* Computing on the convolution's result inside its fusion is refused. */
Test(codegen_conv, epilogue_refused) {
  check_refused_at("HloModule m\n"
                "fused {\n"
                "  x = f32[1,5,5,3] parameter(0)\n"
                "  w = f32[2,2,3,2] parameter(1)\n"
                "  c = f32[1,4,4,2] convolution(x, w), window={size=2x2}, "
                "dim_labels=b01f_01io->b01f\n"
                "  ROOT n = f32[1,4,4,2] negate(c)\n"
                "}\n"
                "ENTRY e {\n"
                "  x = f32[1,5,5,3] parameter(0)\n"
                "  w = f32[2,2,3,2] parameter(1)\n"
                "  ROOT f = f32[1,4,4,2] fusion(x, w), kind=kCustom, calls=fused\n"
                "}\n",
                "convolution", 5);
}

/* pred operands of a float convolution count as 0 and 1 (XLA's operand
 * conversion); a pred result is refused below. */
Test(codegen_conv, pred_operands) {
  check_conv("f32[1,28,1]", "pred[28,1,1]", "f32[1,28,1]",
             "window={size=28 pad=13_14}, dim_labels=b0f_0io->b0f", 1e-5, 1e-5);
  teardown();
  check_conv("pred[2,6,6,3]", "f32[3,3,3,2]", "f32[2,4,4,2]",
             "window={size=3x3}, dim_labels=b01f_01io->b01f", 1e-5, 1e-5);
}

/* pred convolutions are refused with an error at the instruction. */
Test(codegen_conv, pred_refused) {
  check_refused_at("HloModule m\n"
                "ENTRY e {\n"
                "  x = pred[1,4,4,2] parameter(0)\n"
                "  w = pred[2,2,2,2] parameter(1)\n"
                "  ROOT c = pred[1,3,3,2] convolution(x, w), window={size=2x2}, "
                "dim_labels=b01f_01io->b01f\n"
                "}\n",
                "convolution of pred", 5);
}
