/*
 * test_codegen_types.c - the element types and bit-level ops of the
 * elemental emitter (emitters/elemental_fp.c, elemental_complex.c,
 * elemental_sas.c, rng_kernel.c): reduce-precision, the f8 types and
 * f4e2m1fn, the sub-byte integers, c64/c128, select-and-scatter and
 * rng-bit-generator.
 *
 * Each case is a module whose entry root is one fusion (or a bare op).
 * Most build their inputs' bit patterns from iotas inside the fusion (every
 * f8 encoding, a sweep of f32 over all exponents), so one kernel covers
 * the special values.  The host kernel runs as a shared object and the
 * NVPTX kernel under the SIMT emulator of codegen_test_util.h (when
 * clang-19 is installed); both must equal the interpreter (lib/eval)
 * exactly (a tolerance only for complex division; the emulator has no
 * libdevice, so complex abs, exp and log are left to the e2e tests).  tests/check-types.sh checks the same ops against XLA.
 */
#include <criterion/criterion.h>

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "codegen_test_util.h"

TestSuite(codegen_types, .fini = teardown, .timeout = 300);

/* Host and emulated GPU kernels of the module's root against the
 * interpreter on random inputs (seeded). */
static void check_tol(const char *hlo, double atol, double rtol) {
  HloModule *m = parse(hlo);
  snprintf(Dir, sizeof Dir, "/tmp/xhloc-ty-XXXXXX");
  cr_assert(mkdtemp(Dir), "mkdtemp");
  const HloInstr *ki = m->entry->root;
  int np = m->entry->nparams;
  Literal *args[8];
  void *bufs[16];
  cr_assert(np <= 8);
  for (int k = 0; k < np; k++) {
    args[k] = io_random_literal(A, m->entry->params[k]->shape, 91 + 7 * (uint64_t)k, -1);
    cr_assert(args[k], "input %d: %s", k, D.msg ? D.msg : "?");
  }
  PtrVec leaves;
  int out0;
  int nb = kernel_buffers(ki, args, bufs, &leaves, &out0);
  Literal **el;
  int nel = eval_leaves(m, np, args, &el);
  cr_assert_eq(nel, leaves.len);

  run_host("types_test", ki, bufs);
  for (int k = 0; k < leaves.len; k++) {
    char what[48];
    snprintf(what, sizeof what, "host output %d", k);
    compare_out(bufs[out0 + k], leaves.data[k], el[k], atol, rtol, what);
  }
  if (have_clang()) {
    poison_outputs(bufs, out0, &leaves);
    LaunchDims ld;
    run_emulated_kernel("types_test", ki, bufs, nb, &ld);
    for (int k = 0; k < leaves.len; k++) {
      char what[48];
      snprintf(what, sizeof what, "emulated GPU output %d", k);
      compare_out(bufs[out0 + k], leaves.data[k], el[k], atol, rtol, what);
    }
  }
  for (int k = 0; k < nb; k++) free(bufs[k]);
  free(el);
  vec_free(&leaves);
  check_ptx_launch("types_test", ki);
}

static void check(const char *hlo) {
  check_tol(hlo, 0, 0);
}

/* f32 bit patterns (i << 16) | low for i < 2^16 and low in {0, 1, 0x8000,
 * 0xffff}: every sign and exponent, 7 leading mantissa bits, and the ties
 * and their neighbours of every format with 7 or fewer mantissa bits (the
 * parameter p is and-ed away: it only gives the kernel an operand). */
#define F32_SWEEP                                                              \
  "  p = u32[] parameter(0)\n"                                                 \
  "  i = u32[65536,4] iota(), iota_dimension=0\n"                              \
  "  sh = u32[] constant(16)\n"                                                \
  "  shb = u32[65536,4] broadcast(sh), dimensions={}\n"                        \
  "  hi = u32[65536,4] shift-left(i, shb)\n"                                   \
  "  lo = u32[4] constant({0, 1, 32768, 65535})\n"                             \
  "  z = u32[] constant(0)\n"                                                  \
  "  pz = u32[] and(p, z)\n"                                                   \
  "  pzb = u32[4] broadcast(pz), dimensions={}\n"                              \
  "  lp = u32[4] or(lo, pzb)\n"                                                \
  "  lpb = u32[65536,4] broadcast(lp), dimensions={1}\n"                       \
  "  b2 = u32[65536,4] or(hi, lpb)\n"                                          \
  "  bits = u32[262144] reshape(b2)\n"                                         \
  "  x = f32[262144] bitcast-convert(bits)\n"

Test(codegen_types, f32_to_every_f8) {
  check("HloModule m\n"
        "fused {\n" F32_SWEEP
        "  a = f8e4m3fn[262144] convert(x)\n"
        "  b = f8e5m2[262144] convert(x)\n"
        "  c = f8e4m3fnuz[262144] convert(x)\n"
        "  d = f8e5m2fnuz[262144] convert(x)\n"
        "  e = f8e8m0fnu[262144] convert(x)\n"
        "  f = f8e3m4[262144] convert(x)\n"
        "  ROOT t = (f8e4m3fn[262144], f8e5m2[262144], f8e4m3fnuz[262144],"
        " f8e5m2fnuz[262144], f8e8m0fnu[262144], f8e3m4[262144]) tuple(a, b, c, d, e, f)\n"
        "}\n"
        "ENTRY e {\n  p = u32[] parameter(0)\n"
        "  ROOT f = (f8e4m3fn[262144], f8e5m2[262144], f8e4m3fnuz[262144],"
        " f8e5m2fnuz[262144], f8e8m0fnu[262144], f8e3m4[262144]) fusion(p),"
        " kind=kLoop, calls=fused\n}\n");
}

/* Every encoding of the f8 types (and f4e2m1fn) to f32, f16, bf16 and
 * through f8e4m3 arithmetic. */
Test(codegen_types, every_f8_decoded) {
  check("HloModule m\n"
        "fused {\n"
        "  p = u8[] parameter(0)\n"
        "  i = u8[256] iota(), iota_dimension=0\n"
        "  pb = u8[256] broadcast(p), dimensions={}\n"
        "  b = u8[256] add(i, pb)\n"
        "  a = f8e4m3fn[256] bitcast-convert(b)\n"
        "  c = f8e8m0fnu[256] bitcast-convert(b)\n"
        "  d = f8e4m3b11fnuz[256] bitcast-convert(b)\n"
        "  e = f8e4m3[256] bitcast-convert(b)\n"
        "  fa = f32[256] convert(a)\n"
        "  hc = f16[256] convert(c)\n"
        "  bd = bf16[256] convert(d)\n"
        "  s = f8e5m2[256] convert(f8e4m3[256] multiply(e, e))\n"
        "  ROOT t = (f32[256], f16[256], bf16[256], f8e5m2[256]) tuple(fa, hc, bd, s)\n"
        "}\n"
        "ENTRY e {\n  p = u8[] parameter(0)\n"
        "  ROOT f = (f32[256], f16[256], bf16[256], f8e5m2[256]) fusion(p),"
        " kind=kLoop, calls=fused\n}\n");
}

Test(codegen_types, f4e2m1fn_and_f64_to_f8) {
  check("HloModule m\n"
        "fused {\n"
        "  x = f64[64] parameter(0)\n"
        "  s = f64[] constant(300)\n"
        "  sb = f64[64] broadcast(s), dimensions={}\n"
        "  y = f64[64] multiply(x, sb)\n"
        "  a = f8e4m3fn[64] convert(y)\n"
        "  b = f4e2m1fn[64] convert(x)\n"
        "  c = f64[64] convert(b)\n"
        "  ROOT t = (f8e4m3fn[64], f4e2m1fn[64], f64[64]) tuple(a, b, c)\n"
        "}\n"
        "ENTRY e {\n  x = f64[64] parameter(0)\n"
        "  ROOT f = (f8e4m3fn[64], f4e2m1fn[64], f64[64]) fusion(x), kind=kLoop,"
        " calls=fused\n}\n");
}

Test(codegen_types, reduce_precision_f32_f16_bf16) {
  check("HloModule m\n"
        "fused {\n" F32_SWEEP
        "  a = f32[262144] reduce-precision(x), exponent_bits=5, mantissa_bits=10\n"
        "  b = f32[262144] reduce-precision(x), exponent_bits=4, mantissa_bits=0\n"
        "  h = f16[262144] convert(x)\n"
        "  c = f16[262144] reduce-precision(h), exponent_bits=4, mantissa_bits=3\n"
        "  g = bf16[262144] convert(x)\n"
        "  d = bf16[262144] reduce-precision(g), exponent_bits=5, mantissa_bits=2\n"
        "  ROOT t = (f32[262144], f32[262144], f16[262144], bf16[262144]) tuple(a, b, c, d)\n"
        "}\n"
        "ENTRY e {\n  p = u32[] parameter(0)\n"
        "  ROOT f = (f32[262144], f32[262144], f16[262144], bf16[262144]) fusion(p),"
        " kind=kLoop, calls=fused\n}\n");
}

/* f64 to f16 rounds once (the host goes through f32 rounded to odd):
 * every f32 pattern, and the f64 values just above and below each, which a
 * double rounding through f32 would get wrong at the ties; f64 to bf16
 * rounds through f32 to nearest, as XLA (and lib/eval) do. */
Test(codegen_types, f64_to_f16_and_bf16_round_once) {
  check("HloModule m\n"
        "fused {\n" F32_SWEEP
        "  d = f64[262144] convert(x)\n"
        "  up = f64[] constant(1.0000000000009095)\n"
        "  dn = f64[] constant(0.99999999999909051)\n"
        "  ub = f64[262144] broadcast(up), dimensions={}\n"
        "  db = f64[262144] broadcast(dn), dimensions={}\n"
        "  u = f64[262144] multiply(d, ub)\n  v = f64[262144] multiply(d, db)\n"
        "  a = f16[262144] convert(d)\n  b = f16[262144] convert(u)\n"
        "  c = f16[262144] convert(v)\n  e = bf16[262144] convert(u)\n"
        "  f = bf16[262144] convert(v)\n"
        "  ROOT t = (f16[262144], f16[262144], f16[262144], bf16[262144], bf16[262144])"
        " tuple(a, b, c, e, f)\n"
        "}\n"
        "ENTRY e {\n  p = u32[] parameter(0)\n"
        "  ROOT f = (f16[262144], f16[262144], f16[262144], bf16[262144], bf16[262144])"
        " fusion(p), kind=kLoop, calls=fused\n}\n");
}

Test(codegen_types, subbyte_integers) {
  check("HloModule m\n"
        "fused {\n"
        "  a = s4[16,16] parameter(0)\n"
        "  b = u2[16,16] parameter(1)\n"
        "  i = s4[16,16] iota(), iota_dimension=0\n"
        "  j = s4[16,16] iota(), iota_dimension=1\n"
        "  m = s4[16,16] multiply(i, j)\n"
        "  q = s4[16,16] divide(i, j)\n"
        "  s = s4[16,16] add(m, a)\n"
        "  w = s32[16,16] convert(s)\n"
        "  u = u2[16,16] subtract(b, u2[16,16] convert(j))\n"
        "  f = f32[16,16] convert(q)\n"
        "  g = s4[16,16] convert(f32[16,16] multiply(f, f))\n"
        "  ROOT t = (s32[16,16], u2[16,16], s4[16,16], s4[16,16]) tuple(w, u, g, q)\n"
        "}\n"
        "ENTRY e {\n  a = s4[16,16] parameter(0)\n  b = u2[16,16] parameter(1)\n"
        "  ROOT f = (s32[16,16], u2[16,16], s4[16,16], s4[16,16]) fusion(a, b),"
        " kind=kLoop, calls=fused\n}\n");
}

Test(codegen_types, complex_ops) {
  check_tol("HloModule m\n"
            "fused {\n"
            "  x = c64[8,9] parameter(0)\n"
            "  y = c128[8,9] parameter(1)\n"
            "  r = f32[8,9] parameter(2)\n"
            "  yc = c64[8,9] convert(y)\n"
            "  m = c64[8,9] multiply(x, yc)\n"
            "  d = c64[8,9] divide(m, c64[8,9] add(x, c64[8,9] complex(r, r)))\n"
            "  e = c64[8,9] negate(x)\n"
            "  a = f32[8,9] imag(d)\n"
            "  z = c128[8,9] subtract(y, c128[8,9] convert(e))\n"
            "  ROOT t = (c64[8,9], f32[8,9], c128[8,9]) tuple(d, a, z)\n"
            "}\n"
            "ENTRY e {\n  x = c64[8,9] parameter(0)\n  y = c128[8,9] parameter(1)\n"
            "  r = f32[8,9] parameter(2)\n"
            "  ROOT f = (c64[8,9], f32[8,9], c128[8,9]) fusion(x, y, r), kind=kLoop,"
            " calls=fused\n}\n",
            1e-5, 1e-5);
}

Test(codegen_types, complex_power_and_atan2) {
  /* lib/eval's definitions, x^y = exp(y log x) and atan2(x, y) =
   * -i log((y + ix) / sqrt(y^2 + x^2)), on c64 and c128 */
  check_tol("HloModule m\n"
            "fused {\n"
            "  x = c64[8,9] parameter(0)\n"
            "  y = c64[8,9] parameter(1)\n"
            "  u = c128[8,9] parameter(2)\n"
            "  p = c64[8,9] power(x, y)\n"
            "  a = c64[8,9] atan2(x, y)\n"
            "  q = c128[8,9] power(u, u)\n"
            "  b = c128[8,9] atan2(u, c128[8,9] negate(u))\n"
            "  ROOT t = (c64[8,9], c64[8,9], c128[8,9], c128[8,9]) tuple(p, a, q, b)\n"
            "}\n"
            "ENTRY e {\n  x = c64[8,9] parameter(0)\n  y = c64[8,9] parameter(1)\n"
            "  u = c128[8,9] parameter(2)\n"
            "  ROOT f = (c64[8,9], c64[8,9], c128[8,9], c128[8,9]) fusion(x, y, u), kind=kLoop,"
            " calls=fused\n}\n",
            1e-5, 1e-5);
}

Test(codegen_types, select_and_scatter_ties) {
  check("HloModule m\n"
        "ge { a = f32[] parameter(0)\n  b = f32[] parameter(1)\n"
        "  ROOT c = pred[] compare(a, b), direction=GE }\n"
        "add { a = f32[] parameter(0)\n  b = f32[] parameter(1)\n"
        "  ROOT s = f32[] add(a, b) }\n"
        "fused {\n"
        "  x = f32[11,9] parameter(0)\n"
        "  s = f32[6,5] parameter(1)\n"
        "  f = f32[11,9] floor(x)\n"
        "  z = f32[] constant(0.25)\n"
        "  ROOT r = f32[11,9] select-and-scatter(f, s, z), window={size=3x3 stride=2x2"
        " pad=1_1x1_1}, select=ge, scatter=add\n"
        "}\n"
        "ENTRY e {\n  x = f32[11,9] parameter(0)\n  s = f32[6,5] parameter(1)\n"
        "  ROOT f = f32[11,9] fusion(x, s), kind=kLoop, calls=fused\n}\n");
}

Test(codegen_types, rng_bit_generator) {
  check("HloModule m\n"
        "ENTRY e {\n  s = u64[2] parameter(0)\n"
        "  ROOT r = (u64[2], u32[5,7]) rng-bit-generator(s), algorithm=rng_three_fry\n}\n");
  teardown();
  check("HloModule m\n"
        "ENTRY e {\n  s = u64[3] parameter(0)\n"
        "  ROOT r = (u64[3], u64[3,5]) rng-bit-generator(s), algorithm=rng_philox\n}\n");
  teardown();
  check("HloModule m\n"
        "ENTRY e {\n  s = u64[2] parameter(0)\n"
        "  ROOT r = (u64[2], u8[9]) rng-bit-generator(s), algorithm=rng_default\n}\n");
}

/* Sub-byte and f8 values through the GPU's shared-memory transpose tiles
 * and a row reduction's shuffles. */
Test(codegen_types, transpose_and_reduce_small_types) {
  check("HloModule m\n"
        "fused {\n"
        "  a = s4[64,48]{1,0} parameter(0)\n"
        "  b = f8e4m3fn[64,48]{1,0} parameter(1)\n"
        "  ta = s4[48,64]{1,0} transpose(a), dimensions={1,0}\n"
        "  tb = f8e4m3fn[48,64]{1,0} transpose(b), dimensions={1,0}\n"
        "  na = s4[48,64]{1,0} negate(ta)\n"
        "  ROOT t = (s4[48,64]{1,0}, f8e4m3fn[48,64]{1,0}) tuple(na, tb)\n"
        "}\n"
        "ENTRY e {\n  a = s4[64,48]{1,0} parameter(0)\n  b = f8e4m3fn[64,48]{1,0} parameter(1)\n"
        "  ROOT f = (s4[48,64]{1,0}, f8e4m3fn[48,64]{1,0}) fusion(a, b), kind=kLoop,"
        " calls=fused\n}\n");
  teardown();
  check("HloModule m\n"
        "mx { a = f8e5m2[] parameter(0)\n  b = f8e5m2[] parameter(1)\n"
        "  ROOT s = f8e5m2[] maximum(a, b) }\n"
        "fused {\n"
        "  x = f8e5m2[16,300] parameter(0)\n"
        "  z = f8e5m2[] constant(-inf)\n"
        "  ROOT r = f8e5m2[16] reduce(x, z), dimensions={1}, to_apply=mx\n"
        "}\n"
        "ENTRY e {\n  x = f8e5m2[16,300] parameter(0)\n"
        "  ROOT f = f8e5m2[16] fusion(x), kind=kInput, calls=fused\n}\n");
}

/* Dots and convolutions with f8 and sub-byte results: operands converted to
 * the result type, sums in f32 (f8) or wide integers (saturating to s4 in a
 * convolution, wrapping in a dot), as lib/eval computes them. */
Test(codegen_types, dot_and_conv_small_results) {
  check("HloModule m\n"
        "ENTRY e {\n  x = f8e4m3fn[7,12] parameter(0)\n  y = f8e4m3fn[12,5] parameter(1)\n"
        "  ROOT d = f8e4m3fn[7,5] dot(x, y), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n"
        "}\n");
  teardown();
  check("HloModule m\n"
        "ENTRY e {\n  x = s4[6,12] parameter(0)\n  y = s4[12,5] parameter(1)\n"
        "  ROOT d = s4[6,5] dot(x, y), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n"
        "}\n");
  teardown();
  check("HloModule m\n"
        "ENTRY e {\n  x = s4[2,9,3] parameter(0)\n  w = s4[3,3,4] parameter(1)\n"
        "  ROOT c = s4[2,7,4] convolution(x, w), window={size=3}, dim_labels=b0f_0io->b0f\n"
        "}\n");
}
