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

#include "../../lib/eval/eval.h"
#include "codegen_test_util.h"

#define PTXAS "/usr/local/cuda/bin/ptxas"

static HloModule **Mods;
static int NMods;
static SrcFile *Src;
static Arena *A;
static Diag D;
static char Dir[64];

static void teardown(void) {
  for (int k = 0; k < NMods; k++) hlo_module_free(Mods[k]);
  free(Mods);
  Mods = NULL;
  NMods = 0;
  if (Src) srcfile_free(Src);
  Src = NULL;
  if (A) arena_free(A);
  A = NULL;
  diag_clear(&D);
  if (Dir[0]) {
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", Dir);
    cr_expect(system(cmd) == 0);
    Dir[0] = 0;
  }
}

TestSuite(codegen_conv, .fini = teardown, .timeout = 120);

static HloModule *parse(const char *text) {
  Src = srcfile_from_string("test.hlo", text, strlen(text));
  ParseOptions po = {.strip_glog_prefixes = true};
  NMods = hlo_parse(Src, &po, &Mods, &D);
  cr_assert(NMods >= 1, "parse: %s", D.msg);
  cr_assert(hlo_verify(Mods[0], &D), "verify: %s", D.msg);
  if (!A) A = arena_new();
  return Mods[0];
}

/* Physical (layout-order) linear index of logical row-major index `lin`. */
static int64_t physical_index(const Shape *s, int64_t lin) {
  int64_t idx[64];
  for (int d = s->rank - 1; d >= 0; d--) {
    idx[d] = lin % s->dims[d];
    lin /= s->dims[d];
  }
  int64_t p = 0;
  for (int j = s->rank - 1; j >= 0; j--) {
    int64_t d = s->layout ? s->layout->minor_to_major[j] : s->rank - 1 - j;
    p = p * s->dims[d] + idx[d];
  }
  return p;
}

static void *to_physical(const Literal *l, const Shape *s) {
  int64_t n = shape_elements(s);
  int eb = et_bytes(s->et);
  uint8_t *p = calloc((size_t)(n > 0 ? n : 1), (size_t)eb);
  for (int64_t k = 0; k < n; k++)
    memcpy(p + physical_index(s, k) * eb, l->data + k * eb, (size_t)eb);
  return p;
}

static void from_physical(const void *buf, const Shape *s, Literal *l) {
  int64_t n = shape_elements(s);
  int eb = et_bytes(s->et);
  for (int64_t k = 0; k < n; k++)
    memcpy(l->data + k * eb, (const uint8_t *)buf + physical_index(s, k) * eb, (size_t)eb);
}

static Codegen *new_codegen(CgTarget target) {
  CodegenOptions o;
  codegen_options_default(&o);
  o.target = target;
  Codegen *cg = codegen_new("conv_test", &o, &D);
  cr_assert(cg, "codegen_new: %s", D.msg);
  return cg;
}

static void compare(const Literal *expect, void *buf, const Shape *s, double atol,
                    double rtol, const char *what) {
  Literal *got = literal_new(A, (Shape *)s);
  from_physical(buf, s, got);
  StrBuf why;
  sb_init(&why);
  cr_expect(io_compare(got, expect, atol, rtol, &why), "%s: %s", what, why.s);
  sb_free(&why);
}

static void check_ptx(const HloInstr *ki) {
  if (access(PTXAS, X_OK) != 0) return;
  Codegen *cg = new_codegen(CG_TARGET_NVPTX);
  LaunchDims ld;
  cr_assert(codegen_kernel(cg, ki, "kern", &ld, &D), "nvptx kernel: %s", D.msg);
  cr_assert(ld.block[0] * ld.block[1] * ld.block[2] <= 1024 && ld.block[0] > 0 &&
            ld.grid[0] > 0 && ld.grid[1] > 0 && ld.grid[2] > 0, "launch dims");
  StrBuf ptx;
  sb_init(&ptx);
  cr_assert(codegen_ptx(cg, &ptx, &D), "ptx: %s", D.msg);
  codegen_free(cg);
  char path[128], cmd[512];
  snprintf(path, sizeof path, "%s/k.ptx", Dir);
  FILE *f = fopen(path, "w");
  cr_assert(f);
  fputs(ptx.s, f);
  fclose(f);
  snprintf(cmd, sizeof cmd, PTXAS " -arch=sm_90 %s -o %s/k.cubin", path, Dir);
  cr_assert(system(cmd) == 0, "ptxas rejected the PTX:\n%s", ptx.s);
  sb_free(&ptx);
}

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

  Codegen *cg = new_codegen(CG_TARGET_HOST);
  LaunchDims ld;
  cr_assert(codegen_kernel(cg, ki, "kern", &ld, &D), "host kernel: %s", D.msg);
  char so[128];
  snprintf(so, sizeof so, "%s/k.so", Dir);
  cr_assert(codegen_host_so(cg, so, &D), "host so: %s", D.msg);
  codegen_free(cg);
  void *h = dlopen(so, RTLD_NOW | RTLD_LOCAL);
  cr_assert(h, "dlopen: %s", dlerror());
  void (*fn)(void **) = (void (*)(void **))dlsym(h, "kern");
  cr_assert(fn, "dlsym kern");
  fn(bufs);
  compare(expect, bufs[2], os, atol, rtol, "host");
  dlclose(h);

  if (system("command -v clang-19 >/dev/null 2>&1") == 0) {
    memset(bufs[2], 0xA5, obytes);
    cg = new_codegen(CG_TARGET_NVPTX);
    cr_assert(codegen_kernel(cg, ki, "kern", &ld, &D), "nvptx kernel: %s", D.msg);
    StrBuf ir;
    sb_init(&ir);
    cr_assert(codegen_llvm_ir(cg, false, &ir, &D), "ir: %s", D.msg);
    codegen_free(cg);
    char why[1024];
    bool ran = emu_run(ir.s, Dir, bufs, 3, &ld, why, sizeof why);
    sb_free(&ir);
    cr_assert(ran, "emulator: %s", why);
    compare(expect, bufs[2], os, atol, rtol, "emulated GPU");
  }
  for (int k = 0; k < 3; k++) free(bufs[k]);
  check_ptx(ki);
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

static void check_refused(const char *hlo, const char *what, int line) {
  parse(hlo);
  Codegen *cg = new_codegen(CG_TARGET_HOST);
  LaunchDims ld;
  cr_assert(!codegen_kernel(cg, Mods[0]->entry->root, "kern", &ld, &D), "accepted");
  cr_assert(D.msg && strstr(D.msg, what), "message: %s", D.msg ? D.msg : "(none)");
  cr_assert(D.loc.line == line, "location line %d", D.loc.line);
  codegen_free(cg);
}

/* Computing on the convolution's result inside its fusion is refused. */
Test(codegen_conv, epilogue_refused) {
  check_refused("HloModule m\n"
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

/* pred convolutions are refused with an error at the instruction. */
Test(codegen_conv, pred_refused) {
  check_refused("HloModule m\n"
                "ENTRY e {\n"
                "  x = pred[1,4,4,2] parameter(0)\n"
                "  w = pred[2,2,2,2] parameter(1)\n"
                "  ROOT c = pred[1,3,3,2] convolution(x, w), window={size=2x2}, "
                "dim_labels=b01f_01io->b01f\n"
                "}\n",
                "convolution of pred", 5);
}
