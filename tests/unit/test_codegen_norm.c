/*
 * test_codegen_norm.c - the GPU normalization kernel (emitters/
 * norm_kernel.c), the row-normalization analysis behind it
 * (lib/analysis/row_norm.c) and normalization-fusion
 * (passes/normalization_fusion.c).
 *
 * Each kernel case is a module whose entry root is one fusion over the
 * entry's parameters: a softmax, layer norm (+ GELU) or RMS norm.  The
 * NVPTX kernel runs under the SIMT emulator of codegen_test_util.h (when
 * clang-19 is installed) on random inputs, or on inputs with -inf, +inf
 * and NaN, and its output is compared with the interpreter's; its launch
 * dimensions show that the normalization kernel (not the loop kernel) was
 * chosen, and its PTX passes ptxas -arch=sm_90 (when installed).
 */
#include <criterion/criterion.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../../lib/analysis/row_norm.h"
#include "../../passes/passes.h"
#include "codegen_test_util.h"

TestSuite(codegen_norm, .fini = teardown);

/* Sets special values in the random arguments before a run. */
typedef void (*Poke)(Literal **args);

/* Runs the entry root's GPU kernel under the emulator against the
 * interpreter; block and grid (when not 0) are the launch dimensions the
 * normalization kernel must have chosen. */
static void check_poked(const char *hlo, double atol, double rtol, uint32_t block,
                        uint32_t grid, Poke poke) {
  HloModule *m = parse(hlo);
  snprintf(Dir, sizeof Dir, "/tmp/xhloc-norm-XXXXXX");
  cr_assert(mkdtemp(Dir), "mkdtemp");
  const HloInstr *ki = m->entry->root;
  int np = m->entry->nparams;
  Literal *args[8];
  cr_assert(np <= 8);
  for (int k = 0; k < np; k++) {
    args[k] = io_random_literal(A, m->entry->params[k]->shape, 77 + (uint64_t)k, -1);
    cr_assert(args[k]);
  }
  if (poke)
    poke(args);
  check_ptx_launch("norm_ptx", ki);
  if (!have_clang())
    return;
  void *bufs[8];
  PtrVec leaves;
  int out0;
  int nb = kernel_buffers(ki, args, bufs, &leaves, &out0);
  Literal **el;
  int nel = eval_leaves(m, np, args, &el);
  cr_assert_eq(nel, leaves.len);
  LaunchDims ld;
  run_emulated_kernel("norm_emu", ki, bufs, nb, &ld);
  if (block) {
    cr_expect_eq(ld.block[0], block, "block %u, expected %u", ld.block[0], block);
    cr_expect_eq(ld.grid[0], grid, "grid %u, expected %u", ld.grid[0], grid);
  }
  for (int k = 0; k < nel; k++) {
    char what[48];
    snprintf(what, sizeof what, "emulated GPU output %d", k);
    compare_out(bufs[out0 + k], leaves.data[k], el[k], atol, rtol, what);
  }
  for (int k = 0; k < nb; k++)
    free(bufs[k]);
  free(el);
  vec_free(&leaves);
}

static void check(const char *hlo, double atol, double rtol, uint32_t block, uint32_t grid) {
  check_poked(hlo, atol, rtol, block, grid, NULL);
}

/* The text of fmt with `%T` the element type, `%R` the rows and `%N` the
 * row length replaced (heap; the caller frees it). */
static char *fill(const char *fmt, const char *t, int64_t rows, int64_t n) {
  StrBuf b;
  sb_init(&b);
  for (const char *p = fmt; *p; p++) {
    if (p[0] == '%' && p[1] == 'T') {
      sb_puts(&b, t);
      p++;
    } else if (p[0] == '%' && p[1] == 'R') {
      sb_printf(&b, "%lld", (long long)rows);
      p++;
    } else if (p[0] == '%' && p[1] == 'N') {
      sb_printf(&b, "%lld", (long long)n);
      p++;
    } else {
      sb_putc(&b, *p);
    }
  }
  return sb_detach(&b);
}

#define REDUCERS                                                               \
  "mx {\n  a = %T[] parameter(0)\n  b = %T[] parameter(1)\n"                   \
  "  ROOT m = %T[] maximum(a, b)\n}\n"                                         \
  "add {\n  a = %T[] parameter(0)\n  b = %T[] parameter(1)\n"                  \
  "  ROOT s = %T[] add(a, b)\n}\n"

static const char *const SoftmaxFmt =
  "HloModule softmax\n" REDUCERS
  "fused {\n"
  "  x = %T[%R,%N] parameter(0)\n"
  "  ninf = %T[] constant(-inf)\n"
  "  mx = %T[%R] reduce(x, ninf), dimensions={1}, to_apply=mx\n"
  "  mb = %T[%R,%N] broadcast(mx), dimensions={0}\n"
  "  d = %T[%R,%N] subtract(x, mb)\n"
  "  e = %T[%R,%N] exponential(d)\n"
  "  z = %T[] constant(0)\n"
  "  s = %T[%R] reduce(e, z), dimensions={1}, to_apply=add\n"
  "  sb = %T[%R,%N] broadcast(s), dimensions={0}\n"
  "  ROOT r = %T[%R,%N] divide(e, sb)\n"
  "}\n"
  "ENTRY e {\n"
  "  x = %T[%R,%N] parameter(0)\n"
  "  ROOT f = %T[%R,%N] fusion(x), kind=kCustom, calls=fused\n"
  "}\n";

/* Layer norm with scale and bias, then GELU (tanh). */
static const char *const LayerNormGeluFmt =
  "HloModule layer_norm_gelu\n" REDUCERS
  "fused {\n"
  "  x = %T[%R,%N] parameter(0)\n"
  "  g = %T[%N] parameter(1)\n"
  "  b = %T[%N] parameter(2)\n"
  "  z = %T[] constant(0)\n"
  "  s = %T[%R] reduce(x, z), dimensions={1}, to_apply=add\n"
  "  nn = %T[] constant(%N)\n"
  "  nb = %T[%R] broadcast(nn), dimensions={}\n"
  "  mean = %T[%R] divide(s, nb)\n"
  "  mb = %T[%R,%N] broadcast(mean), dimensions={0}\n"
  "  c = %T[%R,%N] subtract(x, mb)\n"
  "  c2 = %T[%R,%N] multiply(c, c)\n"
  "  v = %T[%R] reduce(c2, z), dimensions={1}, to_apply=add\n"
  "  var = %T[%R] divide(v, nb)\n"
  "  eps = %T[] constant(1e-05)\n"
  "  eb = %T[%R] broadcast(eps), dimensions={}\n"
  "  ve = %T[%R] add(var, eb)\n"
  "  rs = %T[%R] rsqrt(ve)\n"
  "  rb = %T[%R,%N] broadcast(rs), dimensions={0}\n"
  "  y = %T[%R,%N] multiply(c, rb)\n"
  "  gb = %T[%R,%N] broadcast(g), dimensions={1}\n"
  "  yg = %T[%R,%N] multiply(y, gb)\n"
  "  bb = %T[%R,%N] broadcast(b), dimensions={1}\n"
  "  h = %T[%R,%N] add(yg, bb)\n"
  "  h2 = %T[%R,%N] multiply(h, h)\n"
  "  h3 = %T[%R,%N] multiply(h2, h)\n"
  "  k = %T[] constant(0.044715)\n"
  "  kb = %T[%R,%N] broadcast(k), dimensions={}\n"
  "  kh3 = %T[%R,%N] multiply(h3, kb)\n"
  "  inner = %T[%R,%N] add(h, kh3)\n"
  "  c0 = %T[] constant(0.7978845608)\n"
  "  cb = %T[%R,%N] broadcast(c0), dimensions={}\n"
  "  arg = %T[%R,%N] multiply(inner, cb)\n"
  "  t = %T[%R,%N] tanh(arg)\n"
  "  one = %T[] constant(1)\n"
  "  oneb = %T[%R,%N] broadcast(one), dimensions={}\n"
  "  t1 = %T[%R,%N] add(t, oneb)\n"
  "  half = %T[] constant(0.5)\n"
  "  halfb = %T[%R,%N] broadcast(half), dimensions={}\n"
  "  hh = %T[%R,%N] multiply(h, halfb)\n"
  "  ROOT o = %T[%R,%N] multiply(hh, t1)\n"
  "}\n"
  "ENTRY e {\n"
  "  x = %T[%R,%N] parameter(0)\n"
  "  g = %T[%N] parameter(1)\n"
  "  b = %T[%N] parameter(2)\n"
  "  ROOT f = %T[%R,%N] fusion(x, g, b), kind=kCustom, calls=fused\n"
  "}\n";

static const char *const RmsNormFmt =
  "HloModule rms_norm\n" REDUCERS
  "fused {\n"
  "  x = %T[%R,%N] parameter(0)\n"
  "  w = %T[%N] parameter(1)\n"
  "  sq = %T[%R,%N] multiply(x, x)\n"
  "  z = %T[] constant(0)\n"
  "  s = %T[%R] reduce(sq, z), dimensions={1}, to_apply=add\n"
  "  nn = %T[] constant(%N)\n"
  "  nb = %T[%R] broadcast(nn), dimensions={}\n"
  "  ms = %T[%R] divide(s, nb)\n"
  "  eps = %T[] constant(1e-06)\n"
  "  eb = %T[%R] broadcast(eps), dimensions={}\n"
  "  mse = %T[%R] add(ms, eb)\n"
  "  rs = %T[%R] rsqrt(mse)\n"
  "  rb = %T[%R,%N] broadcast(rs), dimensions={0}\n"
  "  y = %T[%R,%N] multiply(x, rb)\n"
  "  wb = %T[%R,%N] broadcast(w), dimensions={1}\n"
  "  ROOT o = %T[%R,%N] multiply(y, wb)\n"
  "}\n"
  "ENTRY e {\n"
  "  x = %T[%R,%N] parameter(0)\n"
  "  w = %T[%N] parameter(1)\n"
  "  ROOT f = %T[%R,%N] fusion(x, w), kind=kCustom, calls=fused\n"
  "}\n";

static void check_fmt(const char *fmt, const char *t, int64_t rows, int64_t n, double atol,
                      double rtol, uint32_t block, uint32_t grid) {
  char *hlo = fill(fmt, t, rows, n);
  check(hlo, atol, rtol, block, grid);
  free(hlo);
}

/*
 * Softmax
 */
Test(codegen_norm, softmax_short_rows) {
  /* a warp per row, 4 rows per block, 37 rows: the last block has one
   * real row; 100 is not a multiple of the warp's 128 positions */
  check_fmt(SoftmaxFmt, "f32", 37, 100, 1e-6, 1e-5, 128, 10);
}

Test(codegen_norm, softmax_two_warps_per_row) {
  /* 64 threads per row, 2 rows per block, the warps' partial values through
   * shared memory; 7 rows: the last block's second row is not real */
  check_fmt(SoftmaxFmt, "f32", 7, 300, 1e-6, 1e-5, 128, 4);
}

Test(codegen_norm, softmax_block_per_row) {
  /* 128 threads, 4 warps, 2 runs of 4 per thread, the second partly past
   * the row's end */
  check_fmt(SoftmaxFmt, "f32", 5, 1000, 1e-6, 1e-5, 128, 5);
}

Test(codegen_norm, softmax_longest_row, .timeout = 120) {
  /* 1024 threads of 16 elements: the longest row kept on chip */
  check_fmt(SoftmaxFmt, "f32", 1, ROW_NORM_MAX_ROW, 1e-8, 1e-4, 1024, 1);
}

/* Row 0 all -inf (max -inf, exp(-inf - -inf) NaN), row 1 one NaN (max
 * NaN), row 2 some -inf (exp 0), row 3 one +inf (inf - inf: NaN), row 4
 * large values (exp would overflow without the max). */
static void poke_specials(Literal **args) {
  float *x = (float *)args[0]->data;
  int n = 100;
  for (int k = 0; k < n; k++)
    x[k] = -INFINITY;
  x[n + 17] = NAN;
  for (int k = 0; k < n; k += 3)
    x[2 * n + k] = -INFINITY;
  x[3 * n + 50] = INFINITY;
  for (int k = 0; k < n; k++)
    x[4 * n + k] = 80.0f + (float)k;
}

Test(codegen_norm, softmax_inf_nan) {
  char *hlo = fill(SoftmaxFmt, "f32", 6, 100);
  check_poked(hlo, 1e-6, 1e-5, 128, 2, poke_specials);
  free(hlo);
}

/* As JAX writes a bf16 softmax: the max in bf16, the sum of the
 * exponentials converted to f32, the quotient in bf16. */
Test(codegen_norm, softmax_bf16) {
  check("HloModule softmax_bf16\n"
        "mx {\n  a = bf16[] parameter(0)\n  b = bf16[] parameter(1)\n"
        "  ROOT m = bf16[] maximum(a, b)\n}\n"
        "add {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n"
        "  ROOT s = f32[] add(a, b)\n}\n"
        "fused {\n"
        "  x = bf16[6,1000] parameter(0)\n"
        "  ninf = bf16[] constant(-inf)\n"
        "  mx = bf16[6] reduce(x, ninf), dimensions={1}, to_apply=mx\n"
        "  mb = bf16[6,1000] broadcast(mx), dimensions={0}\n"
        "  d = bf16[6,1000] subtract(x, mb)\n"
        "  e = bf16[6,1000] exponential(d)\n"
        "  ef = f32[6,1000] convert(e)\n"
        "  z = f32[] constant(0)\n"
        "  s = f32[6] reduce(ef, z), dimensions={1}, to_apply=add\n"
        "  sh = bf16[6] convert(s)\n"
        "  sb = bf16[6,1000] broadcast(sh), dimensions={0}\n"
        "  ROOT r = bf16[6,1000] divide(e, sb)\n"
        "}\n"
        "ENTRY e {\n"
        "  x = bf16[6,1000] parameter(0)\n"
        "  ROOT f = bf16[6,1000] fusion(x), kind=kCustom, calls=fused\n"
        "}\n",
        1e-4, 1e-2, 128, 6);
}

Test(codegen_norm, softmax_rows_of_a_3d_array) {
  /* rows are [4,6] of 50 elements */
  check("HloModule softmax3d\n"
        "mx {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n"
        "  ROOT m = f32[] maximum(a, b)\n}\n"
        "add {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n"
        "  ROOT s = f32[] add(a, b)\n}\n"
        "fused {\n"
        "  x = f32[4,6,50] parameter(0)\n"
        "  ninf = f32[] constant(-inf)\n"
        "  mx = f32[4,6] reduce(x, ninf), dimensions={2}, to_apply=mx\n"
        "  mb = f32[4,6,50] broadcast(mx), dimensions={0,1}\n"
        "  d = f32[4,6,50] subtract(x, mb)\n"
        "  e = f32[4,6,50] exponential(d)\n"
        "  z = f32[] constant(0)\n"
        "  s = f32[4,6] reduce(e, z), dimensions={2}, to_apply=add\n"
        "  sb = f32[4,6,50] broadcast(s), dimensions={0,1}\n"
        "  ROOT r = f32[4,6,50] divide(e, sb)\n"
        "}\n"
        "ENTRY e {\n"
        "  x = f32[4,6,50] parameter(0)\n"
        "  ROOT f = f32[4,6,50] fusion(x), kind=kCustom, calls=fused\n"
        "}\n",
        1e-6, 1e-5, 128, 6);
}

Test(codegen_norm, softmax_over_the_physically_minor_dim0) {
  /* dimension 0 is minor in memory: the rows are the columns */
  check("HloModule softmax_cols\n"
        "mx {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n"
        "  ROOT m = f32[] maximum(a, b)\n}\n"
        "add {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n"
        "  ROOT s = f32[] add(a, b)\n}\n"
        "fused {\n"
        "  x = f32[70,9]{0,1} parameter(0)\n"
        "  ninf = f32[] constant(-inf)\n"
        "  mx = f32[9] reduce(x, ninf), dimensions={0}, to_apply=mx\n"
        "  mb = f32[70,9]{0,1} broadcast(mx), dimensions={1}\n"
        "  d = f32[70,9]{0,1} subtract(x, mb)\n"
        "  e = f32[70,9]{0,1} exponential(d)\n"
        "  z = f32[] constant(0)\n"
        "  s = f32[9] reduce(e, z), dimensions={0}, to_apply=add\n"
        "  sb = f32[70,9]{0,1} broadcast(s), dimensions={1}\n"
        "  ROOT r = f32[70,9]{0,1} divide(e, sb)\n"
        "}\n"
        "ENTRY e {\n"
        "  x = f32[70,9]{0,1} parameter(0)\n"
        "  ROOT f = f32[70,9]{0,1} fusion(x), kind=kCustom, calls=fused\n"
        "}\n",
        1e-6, 1e-5, 128, 3);
}

/*
 * Layer norm, RMS norm
 */
Test(codegen_norm, layer_norm_gelu_short_rows) {
  check_fmt(LayerNormGeluFmt, "f32", 12, 96, 1e-5, 1e-4, 128, 3);
}

Test(codegen_norm, layer_norm_gelu_long_rows, .timeout = 120) {
  /* 1024 threads of 3 runs of 4, the last run of most threads past the
   * row's end */
  check_fmt(LayerNormGeluFmt, "f32", 2, 12000, 1e-4, 1e-3, 1024, 2);
}

Test(codegen_norm, rms_norm_odd_rows_f64) {
  /* 999 elements: runs of 1, 128 threads of 8 positions; f64 shuffled as
   * two 32-bit halves */
  check_fmt(RmsNormFmt, "f64", 4, 999, 1e-12, 1e-12, 128, 4);
}

Test(codegen_norm, rms_norm_f16_sum_in_f16) {
  /* the reducer works in f16: the kernel follows it (no wider sum) */
  check_fmt(RmsNormFmt, "f16", 3, 64, 2e-2, 2e-2, 96, 1);
}

/* As priority-fusion leaves Llama's RMS norm: bf16 in, f32 inside, the
 * scale applied through a transpose and the output reshaped [1,64,256] ->
 * [64,256]: the output rows are the reduce rows under another shape. */
Test(codegen_norm, rms_norm_reshaped_output) {
  check("HloModule rms_reshaped\n"
        "add {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n"
        "  ROOT s = f32[] add(a, b)\n}\n"
        "fused {\n"
        "  x = bf16[1,64,256] parameter(0)\n"
        "  w = f32[256] parameter(1)\n"
        "  xf = f32[1,64,256] convert(x)\n"
        "  sq = f32[1,64,256] multiply(xf, xf)\n"
        "  z = f32[] constant(0)\n"
        "  s = f32[1,64] reduce(sq, z), dimensions={2}, to_apply=add\n"
        "  nn = f32[] constant(256)\n"
        "  nb = f32[1,64] broadcast(nn), dimensions={}\n"
        "  ms = f32[1,64] divide(s, nb)\n"
        "  eps = f32[] constant(1e-05)\n"
        "  eb = f32[1,64] broadcast(eps), dimensions={}\n"
        "  mse = f32[1,64] add(ms, eb)\n"
        "  rs = f32[1,64] rsqrt(mse)\n"
        "  rb = f32[1,64,256] broadcast(rs), dimensions={0,1}\n"
        "  y = f32[1,64,256] multiply(xf, rb)\n"
        "  yb = bf16[1,64,256] convert(y)\n"
        "  t = bf16[256,1,64] transpose(yb), dimensions={2,0,1}\n"
        "  r = bf16[256,64] reshape(t)\n"
        "  wh = bf16[256] convert(w)\n"
        "  wb = bf16[256,64] broadcast(wh), dimensions={0}\n"
        "  m = bf16[256,64] multiply(wb, r)\n"
        "  r2 = bf16[256,1,64] reshape(m)\n"
        "  t2 = bf16[1,64,256] transpose(r2), dimensions={1,2,0}\n"
        "  ROOT o = bf16[64,256] reshape(t2)\n"
        "}\n"
        "ENTRY e {\n"
        "  x = bf16[1,64,256] parameter(0)\n"
        "  w = f32[256] parameter(1)\n"
        "  ROOT f = bf16[64,256] fusion(x, w), kind=kCustom, calls=fused\n"
        "}\n",
        1e-3, 1e-2, 128, 16);
}

/* Gemma's per-head RMS norm: the operand reshaped [64,1024] ->
 * [1,64,4,256] inside the fusion, the output heads-major [1,4,64,256]. */
Test(codegen_norm, head_norm_transposed_output) {
  check("HloModule head_norm\n"
        "add {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n"
        "  ROOT s = f32[] add(a, b)\n}\n"
        "fused {\n"
        "  x = f32[64,1024] parameter(0)\n"
        "  xr = f32[1,64,4,256] reshape(x)\n"
        "  sq = f32[1,64,4,256] multiply(xr, xr)\n"
        "  z = f32[] constant(0)\n"
        "  s = f32[1,64,4] reduce(sq, z), dimensions={3}, to_apply=add\n"
        "  eps = f32[] constant(1e-06)\n"
        "  eb = f32[1,64,4] broadcast(eps), dimensions={}\n"
        "  se = f32[1,64,4] add(s, eb)\n"
        "  rs = f32[1,64,4] rsqrt(se)\n"
        "  rb = f32[1,64,4,256] broadcast(rs), dimensions={0,1,2}\n"
        "  y = f32[1,64,4,256] multiply(xr, rb)\n"
        "  ROOT o = f32[1,4,64,256] transpose(y), dimensions={0,2,1,3}\n"
        "}\n"
        "ENTRY e {\n"
        "  x = f32[64,1024] parameter(0)\n"
        "  ROOT f = f32[1,4,64,256] fusion(x), kind=kCustom, calls=fused\n"
        "}\n",
        1e-5, 1e-4, 32 * 4, 64);
}

/* Attention's softmax as JAX writes it: exp(x - max) feeds the PV product
 * and the sum, the division comes after the product: the exponentials and
 * the sums are the outputs of one kernel. */
Test(codegen_norm, exp_and_sum_outputs) {
  check("HloModule exp_sum\n"
        "mx {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n"
        "  ROOT m = f32[] maximum(a, b)\n}\n"
        "add {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n"
        "  ROOT s = f32[] add(a, b)\n}\n"
        "fused {\n"
        "  x = f32[37,100] parameter(0)\n"
        "  ninf = f32[] constant(-inf)\n"
        "  mx = f32[37] reduce(x, ninf), dimensions={1}, to_apply=mx\n"
        "  mb = f32[37,100] broadcast(mx), dimensions={0}\n"
        "  d = f32[37,100] subtract(x, mb)\n"
        "  e = f32[37,100] exponential(d)\n"
        "  z = f32[] constant(0)\n"
        "  s = f32[37] reduce(e, z), dimensions={1}, to_apply=add\n"
        "  ROOT t = (f32[37,100], f32[37]) tuple(e, s)\n"
        "}\n"
        "ENTRY e {\n"
        "  x = f32[37,100] parameter(0)\n"
        "  ROOT f = (f32[37,100], f32[37]) fusion(x), kind=kCustom, calls=fused\n"
        "}\n",
        1e-6, 1e-5, 128, 10);
}

/* A layer norm whose mean and sum of squares a backward pass reads too. */
Test(codegen_norm, layer_norm_with_reduce_outputs) {
  check("HloModule ln_outs\n"
        "add {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n"
        "  ROOT s = f32[] add(a, b)\n}\n"
        "fused {\n"
        "  x = f32[6,300] parameter(0)\n"
        "  z = f32[] constant(0)\n"
        "  s = f32[6] reduce(x, z), dimensions={1}, to_apply=add\n"
        "  nn = f32[] constant(300)\n"
        "  nb = f32[6] broadcast(nn), dimensions={}\n"
        "  mean = f32[6] divide(s, nb)\n"
        "  mb = f32[6,300] broadcast(mean), dimensions={0}\n"
        "  c = f32[6,300] subtract(x, mb)\n"
        "  c2 = f32[6,300] multiply(c, c)\n"
        "  v = f32[6] reduce(c2, z), dimensions={1}, to_apply=add\n"
        "  var = f32[6] divide(v, nb)\n"
        "  eps = f32[] constant(1e-05)\n"
        "  eb = f32[6] broadcast(eps), dimensions={}\n"
        "  ve = f32[6] add(var, eb)\n"
        "  rs = f32[6] rsqrt(ve)\n"
        "  rb = f32[6,300] broadcast(rs), dimensions={0}\n"
        "  y = f32[6,300] multiply(c, rb)\n"
        "  ROOT t = (f32[6,300], f32[6], f32[6]) tuple(y, s, v)\n"
        "}\n"
        "ENTRY e {\n"
        "  x = f32[6,300] parameter(0)\n"
        "  ROOT f = (f32[6,300], f32[6], f32[6]) fusion(x), kind=kCustom, calls=fused\n"
        "}\n",
        1e-5, 1e-4, 128, 3);
}

/*
 * The analysis
 */
static bool analyze(const char *hlo, const char **why) {
  HloModule *m = parse(hlo);
  const HloComp *c = m->entry->root->called[0];
  AffCtx *aff = aff_ctx_new();
  RowNorm rn;
  bool ok = row_norm_analyze(aff, c, &rn, why);
  aff_ctx_free(aff);
  return ok;
}

Test(codegen_norm, analysis_refuses_another_row) {
  /* x[i][j] / sum(x[j]): the sum's row depends on the output's row
   * dimension, not one reduce row per output row */
  const char *why = NULL;
  cr_expect_not(analyze("HloModule cols\n"
                        "add {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n"
                        "  ROOT s = f32[] add(a, b)\n}\n"
                        "fused {\n"
                        "  x = f32[64,64] parameter(0)\n"
                        "  z = f32[] constant(0)\n"
                        "  s = f32[64] reduce(x, z), dimensions={1}, to_apply=add\n"
                        "  sb = f32[64,64] broadcast(s), dimensions={1}\n"
                        "  ROOT r = f32[64,64] divide(x, sb)\n"
                        "}\n"
                        "ENTRY e {\n"
                        "  x = f32[64,64] parameter(0)\n"
                        "  ROOT f = f32[64,64] fusion(x), kind=kLoop, calls=fused\n"
                        "}\n",
                        &why));
  cr_expect(why && strstr(why, "another row"), "why: %s", why ? why : "(none)");
}

Test(codegen_norm, analysis_refuses_two_rows) {
  /* row i reads the sums of rows i and 7 - i */
  const char *why = NULL;
  cr_expect_not(analyze("HloModule two_rows\n"
                        "add {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n"
                        "  ROOT s = f32[] add(a, b)\n}\n"
                        "fused {\n"
                        "  x = f32[8,64] parameter(0)\n"
                        "  z = f32[] constant(0)\n"
                        "  s = f32[8] reduce(x, z), dimensions={1}, to_apply=add\n"
                        "  rv = f32[8] reverse(s), dimensions={0}\n"
                        "  sr = f32[8] add(s, rv)\n"
                        "  sb = f32[8,64] broadcast(sr), dimensions={0}\n"
                        "  ROOT r = f32[8,64] divide(x, sb)\n"
                        "}\n"
                        "ENTRY e {\n"
                        "  x = f32[8,64] parameter(0)\n"
                        "  ROOT f = f32[8,64] fusion(x), kind=kLoop, calls=fused\n"
                        "}\n",
                        &why));
  cr_expect(why && strstr(why, "another row"), "why: %s", why ? why : "(none)");
}

Test(codegen_norm, analysis_refuses_different_rows) {
  const char *why = NULL;
  cr_expect_not(analyze("HloModule two_dims\n"
                        "add {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n"
                        "  ROOT s = f32[] add(a, b)\n}\n"
                        "fused {\n"
                        "  x = f32[8,8] parameter(0)\n"
                        "  z = f32[] constant(0)\n"
                        "  s = f32[8] reduce(x, z), dimensions={1}, to_apply=add\n"
                        "  t = f32[8] reduce(x, z), dimensions={0}, to_apply=add\n"
                        "  sb = f32[8,8] broadcast(s), dimensions={0}\n"
                        "  tb = f32[8,8] broadcast(t), dimensions={1}\n"
                        "  ROOT r = f32[8,8] add(sb, tb)\n"
                        "}\n"
                        "ENTRY e {\n"
                        "  x = f32[8,8] parameter(0)\n"
                        "  ROOT f = f32[8,8] fusion(x), kind=kLoop, calls=fused\n"
                        "}\n",
                        &why));
  cr_expect(why && strstr(why, "different rows"), "why: %s", why ? why : "(none)");
}

/* Row i divided by the sum of row 7 - i: one reduce row per output row,
 * another than its own. */
Test(codegen_norm, reversed_rows) {
  check("HloModule rev\n"
        "add {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n"
        "  ROOT s = f32[] add(a, b)\n}\n"
        "fused {\n"
        "  x = f32[8,64] parameter(0)\n"
        "  z = f32[] constant(0)\n"
        "  s = f32[8] reduce(x, z), dimensions={1}, to_apply=add\n"
        "  rv = f32[8] reverse(s), dimensions={0}\n"
        "  sb = f32[8,64] broadcast(rv), dimensions={0}\n"
        "  ROOT r = f32[8,64] divide(x, sb)\n"
        "}\n"
        "ENTRY e {\n"
        "  x = f32[8,64] parameter(0)\n"
        "  ROOT f = f32[8,64] fusion(x), kind=kLoop, calls=fused\n"
        "}\n",
        1e-5, 1e-4, 128, 2);
}

/* Not a normalization (the sums indexed by the column), computed by the
 * loop kernel: still right. */
Test(codegen_norm, column_sums_use_the_loop_kernel) {
  check("HloModule cols\n"
        "add {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n"
        "  ROOT s = f32[] add(a, b)\n}\n"
        "fused {\n"
        "  x = f32[64,64] parameter(0)\n"
        "  z = f32[] constant(0)\n"
        "  s = f32[64] reduce(x, z), dimensions={1}, to_apply=add\n"
        "  sb = f32[64,64] broadcast(s), dimensions={1}\n"
        "  ROOT r = f32[64,64] divide(x, sb)\n"
        "}\n"
        "ENTRY e {\n"
        "  x = f32[64,64] parameter(0)\n"
        "  ROOT f = f32[64,64] fusion(x), kind=kLoop, calls=fused\n"
        "}\n",
        1e-5, 1e-4, 0, 0);
}

/*
 * The pass and the kernel together
 */
static HloModule *fused(const char *hlo, PassTarget target) {
  HloModule *m = parse(hlo);
  PassContext ctx = {.diag = &D, .target = target};
  const char *names[] = {"priority-fusion", "normalization-fusion", "cse", "dce"};
  for (size_t k = 0; k < ARRAY_LEN(names); k++) {
    bool changed;
    cr_assert(pass_run(pass_find(names[k]), m, &ctx, &changed), "%s: %s", names[k], D.msg);
  }
  cr_assert(hlo_verify(m, &D), "verify: %s", D.msg);
  return m;
}

static int count_fusions(const HloModule *m) {
  int n = 0;
  for (int k = 0; k < m->entry->ninstrs; k++)
    n += m->entry->instrs[k]->op == HLO_FUSION;
  return n;
}

/* layer norm as JAX writes it (before any fusion) */
static const char *const JaxLayerNorm =
  "HloModule jax_layer_norm\n"
  "add {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n"
  "  ROOT s = f32[] add(a, b)\n}\n"
  "ENTRY e {\n"
  "  x = f32[40,200] parameter(0)\n"
  "  g = f32[200] parameter(1)\n"
  "  z = f32[] constant(0)\n"
  "  s = f32[40] reduce(x, z), dimensions={1}, to_apply=add\n"
  "  s1 = f32[40,1] reshape(s)\n"
  "  n = f32[] constant(200)\n"
  "  nb = f32[40,1] broadcast(n), dimensions={}\n"
  "  mean = f32[40,1] divide(s1, nb)\n"
  "  m1 = f32[40] reshape(mean)\n"
  "  mb = f32[40,200] broadcast(m1), dimensions={0}\n"
  "  c = f32[40,200] subtract(x, mb)\n"
  "  c2 = f32[40,200] multiply(c, c)\n"
  "  v = f32[40] reduce(c2, z), dimensions={1}, to_apply=add\n"
  "  v1 = f32[40,1] reshape(v)\n"
  "  var = f32[40,1] divide(v1, nb)\n"
  "  eps = f32[] constant(1e-05)\n"
  "  eb = f32[40,1] broadcast(eps), dimensions={}\n"
  "  ve = f32[40,1] add(var, eb)\n"
  "  rs = f32[40,1] rsqrt(ve)\n"
  "  r1 = f32[40] reshape(rs)\n"
  "  rb = f32[40,200] broadcast(r1), dimensions={0}\n"
  "  y = f32[40,200] multiply(c, rb)\n"
  "  gb = f32[40,200] broadcast(g), dimensions={1}\n"
  "  ROOT o = f32[40,200] multiply(y, gb)\n"
  "}\n";

Test(codegen_norm, pass_then_kernel) {
  HloModule *m = fused(JaxLayerNorm, PASS_TARGET_GPU);
  cr_assert_eq(count_fusions(m), 1);
  cr_assert_eq(m->entry->root->op, HLO_FUSION);
  cr_expect_eq(m->entry->root->fusion_kind, FUSION_CUSTOM);
  StrBuf b;
  sb_init(&b);
  hlo_print_module(&b, m, NULL);
  check(b.s, 1e-5, 1e-4, 128, 10);
  sb_free(&b);
}

Test(codegen_norm, pass_leaves_the_host_alone) {
  HloModule *m = fused(JaxLayerNorm, PASS_TARGET_HOST);
  cr_expect_gt(count_fusions(m), 1);
  for (int k = 0; k < m->entry->ninstrs; k++)
    cr_expect_neq(m->entry->instrs[k]->fusion_kind, FUSION_CUSTOM);
}
