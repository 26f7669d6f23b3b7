/*
 * test_codegen_linalg.c - the linear-algebra kernels (emitters/
 * linalg_kernel.c): cholesky, triangular-solve and the custom-calls "Qr"
 * and "ProductOfElementaryHouseholderReflectors"; and fft (emitters/
 * fft_kernel.c).
 *
 * Each case is a module whose entry root is the op over parameters.  The
 * inputs are random, made Hermitian positive definite where a cholesky
 * needs it (a a^H + n I) and given a heavy diagonal where a triangular
 * solve divides by it; a member left random shows the NaN result of a
 * matrix that is not positive definite.  The host kernel (a shared object)
 * and the NVPTX kernel under the SIMT emulator of codegen_test_util.h
 * (when clang-19 is installed) must agree with the interpreter within a
 * tolerance (both compute in double; they differ in complex division and
 * libm's last bits), and the PTX must pass ptxas.
 */
#include <criterion/criterion.h>

#include <complex.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "codegen_test_util.h"

TestSuite(codegen_linalg, .fini = teardown, .timeout = 300);

/* Element k of a float or complex literal, as a complex double. */
static double complex get(const Literal *l, int64_t k) {
  switch (l->shape->et) {
  case ET_F32: return ((const float *)l->data)[k];
  case ET_F64: return ((const double *)l->data)[k];
  case ET_C64: {
    const float *f = (const float *)l->data + 2 * k;
    return CMPLX(f[0], f[1]);
  }
  default: cr_assert_fail("type"); return 0;
  }
}

static void set(Literal *l, int64_t k, double complex v) {
  switch (l->shape->et) {
  case ET_F32: ((float *)l->data)[k] = (float)creal(v); break;
  case ET_F64: ((double *)l->data)[k] = creal(v); break;
  case ET_C64: {
    float *f = (float *)l->data + 2 * k;
    f[0] = (float)creal(v);
    f[1] = (float)cimag(v);
    break;
  }
  default: cr_assert_fail("type");
  }
}

/* How a parameter's matrices (its two minor dims, logical order) are
 * conditioned before the run. */
typedef enum Prep { RANDOM, SPD, HEAVY_DIAGONAL, SPD_BUT_LAST } Prep;

static void prepare(Literal *l, Prep p) {
  const Shape *s = l->shape;
  if (p == RANDOM)
    return;
  int64_t n = s->dims[s->rank - 1], m = s->dims[s->rank - 2];
  int64_t batch = shape_elements(s) / (m * n);
  double complex *a = malloc((size_t)(n * n) * sizeof *a);
  for (int64_t b = 0; b < batch; b++) {
    int64_t base = b * n * n;
    if (p == HEAVY_DIAGONAL) {
      for (int64_t r = 0; r < n; r++)
        set(l, base + r * n + r, get(l, base + r * n + r) + (double)(2 * n));
      continue;
    }
    if (p == SPD_BUT_LAST && b == batch - 1)
      continue;
    for (int64_t k = 0; k < n * n; k++) a[k] = get(l, base + k);
    for (int64_t r = 0; r < n; r++)
      for (int64_t c = 0; c < n; c++) {
        double complex v = r == c ? (double)n : 0;
        for (int64_t k = 0; k < n; k++) v += a[r * n + k] * conj(a[c * n + k]);
        set(l, base + r * n + c, v);
      }
  }
  free(a);
}

static void check_prep(const char *hlo, const Prep *prep, double tol) {
  HloModule *m = parse(hlo);
  snprintf(Dir, sizeof Dir, "/tmp/xhloc-la-XXXXXX");
  cr_assert(mkdtemp(Dir), "mkdtemp");
  const HloInstr *ki = m->entry->root;
  int np = m->entry->nparams;
  Literal *args[8];
  void *bufs[16];
  cr_assert(np <= 8);
  for (int k = 0; k < np; k++) {
    args[k] = io_random_literal(A, m->entry->params[k]->shape, 31 + 7 * (uint64_t)k, -1);
    cr_assert(args[k], "input %d: %s", k, D.msg ? D.msg : "?");
    prepare(args[k], prep ? prep[k] : RANDOM);
  }
  PtrVec leaves;
  int out0;
  int nb = kernel_buffers(ki, args, bufs, &leaves, &out0);
  Literal **el;
  int nel = eval_leaves(m, np, args, &el);
  cr_assert_eq(nel, leaves.len);
  run_host("linalg_test", ki, bufs);
  for (int k = 0; k < leaves.len; k++) {
    char what[48];
    snprintf(what, sizeof what, "host output %d", k);
    compare_out(bufs[out0 + k], leaves.data[k], el[k], tol, tol, what);
  }
  if (have_clang()) {
    poison_outputs(bufs, out0, &leaves);
    LaunchDims ld;
    run_emulated_kernel("linalg_test", ki, bufs, nb, &ld);
    for (int k = 0; k < leaves.len; k++) {
      char what[48];
      snprintf(what, sizeof what, "emulated GPU output %d", k);
      compare_out(bufs[out0 + k], leaves.data[k], el[k], tol, tol, what);
    }
  }
  for (int k = 0; k < nb; k++) free(bufs[k]);
  free(el);
  vec_free(&leaves);
  check_ptx_launch("linalg_test", ki);
}

/*
 * cholesky
 */
Test(codegen_linalg, cholesky_lower_batch_with_a_not_positive_definite_member) {
  Prep p[] = {SPD_BUT_LAST};
  check_prep("HloModule m\nENTRY e {\n  a = f32[3,5,5] parameter(0)\n"
             "  ROOT c = f32[3,5,5] cholesky(a), lower=true\n}\n", p, 1e-5);
}

Test(codegen_linalg, cholesky_upper_f64_column_major) {
  Prep p[] = {SPD};
  check_prep("HloModule m\nENTRY e {\n  a = f64[2,6,6]{1,2,0} parameter(0)\n"
             "  ROOT c = f64[2,6,6]{2,1,0} cholesky(a)\n}\n", p, 1e-12);
}

Test(codegen_linalg, cholesky_upper_complex) {
  Prep p[] = {SPD_BUT_LAST};
  check_prep("HloModule m\nENTRY e {\n  a = c64[3,4,4] parameter(0)\n"
             "  ROOT c = c64[3,4,4] cholesky(a), lower=false\n}\n", p, 1e-5);
}

/*
 * triangular-solve: every side, triangle, op and diagonal
 */
static void trsm(const char *et, const char *bshape, const char *attrs) {
  char hlo[512];
  snprintf(hlo, sizeof hlo,
           "HloModule m\nENTRY e {\n  a = %s[2,5,5] parameter(0)\n  b = %s[2,%s] parameter(1)\n"
           "  ROOT x = %s[2,%s] triangular-solve(a, b), %s\n}\n",
           et, et, bshape, et, bshape, attrs);
  Prep p[] = {HEAVY_DIAGONAL, RANDOM};
  check_prep(hlo, p, 1e-5);
  teardown();
}

Test(codegen_linalg, triangular_solve_left) {
  trsm("f32", "5,3", "left_side=true, lower=true, transpose_a=NO_TRANSPOSE");
  trsm("f32", "5,3", "left_side=true, lower=false, transpose_a=NO_TRANSPOSE");
  trsm("f32", "5,3", "left_side=true, lower=true, transpose_a=TRANSPOSE");
  trsm("f32", "5,3", "left_side=true, lower=false, unit_diagonal=true, transpose_a=TRANSPOSE");
  trsm("c64", "5,3", "left_side=true, lower=true, transpose_a=ADJOINT");
}

Test(codegen_linalg, triangular_solve_right) {
  trsm("f32", "4,5", "lower=true, transpose_a=NO_TRANSPOSE");
  trsm("f32", "4,5", "lower=false, unit_diagonal=true, transpose_a=NO_TRANSPOSE");
  trsm("f64", "4,5", "lower=true, transpose_a=TRANSPOSE");
  trsm("c64", "4,5", "lower=false, transpose_a=ADJOINT");
}

/*
 * Qr and the product of its reflectors
 */
Test(codegen_linalg, qr_tall_wide_and_complex) {
  check_prep("HloModule m\nENTRY e {\n  a = f32[2,5,3] parameter(0)\n"
             "  ROOT q = (f32[2,5,3], f32[2,3]) custom-call(a), custom_call_target=\"Qr\"\n}\n",
             NULL, 1e-5);
  teardown();
  check_prep("HloModule m\nENTRY e {\n  a = f64[3,4]{0,1} parameter(0)\n"
             "  ROOT q = (f64[3,4], f64[3]) custom-call(a), custom_call_target=\"Qr\"\n}\n",
             NULL, 1e-12);
  teardown();
  check_prep("HloModule m\nENTRY e {\n  a = c64[2,4,4] parameter(0)\n"
             "  ROOT q = (c64[2,4,4], c64[2,4]) custom-call(a), custom_call_target=\"Qr\"\n}\n",
             NULL, 1e-5);
}

Test(codegen_linalg, householder_product) {
  check_prep("HloModule m\nENTRY e {\n  a = f32[2,6,4] parameter(0)\n  t = f32[2,3] parameter(1)\n"
             "  ROOT q = f32[2,6,4] custom-call(a, t), "
             "custom_call_target=\"ProductOfElementaryHouseholderReflectors\"\n}\n",
             NULL, 1e-5);
  teardown();
  check_prep("HloModule m\nENTRY e {\n  a = c64[4,4] parameter(0)\n  t = c64[4] parameter(1)\n"
             "  ROOT q = c64[4,4] custom-call(a, t), "
             "custom_call_target=\"ProductOfElementaryHouseholderReflectors\"\n}\n",
             NULL, 1e-5);
}

/*
 * fft: every type, one to three transformed dims, batches, layouts
 */
Test(codegen_linalg, fft_and_ifft) {
  check_prep("HloModule m\nENTRY e {\n  a = c64[3,8] parameter(0)\n"
             "  ROOT f = c64[3,8] fft(a), fft_type=FFT, fft_length={8}\n}\n", NULL, 1e-5);
  teardown();
  check_prep("HloModule m\nENTRY e {\n  a = c128[2,6,5]{0,2,1} parameter(0)\n"
             "  ROOT f = c128[2,6,5] fft(a), fft_type=IFFT, fft_length={6,5}\n}\n", NULL, 1e-12);
}

Test(codegen_linalg, rfft_and_irfft) {
  check_prep("HloModule m\nENTRY e {\n  a = f32[2,3,9] parameter(0)\n"
             "  ROOT f = c64[2,3,5] fft(a), fft_type=RFFT, fft_length={3,9}\n}\n", NULL, 1e-5);
  teardown();
  check_prep("HloModule m\nENTRY e {\n  a = c64[2,3,4,5] parameter(0)\n"
             "  ROOT f = f32[2,3,4,8]{1,3,2,0} fft(a), fft_type=IRFFT, fft_length={3,4,8}\n}\n",
             NULL, 1e-5);
  teardown();
  check_prep("HloModule m\nENTRY e {\n  a = c128[7] parameter(0)\n"
             "  ROOT f = f64[13] fft(a), fft_type=IRFFT, fft_length={13}\n}\n", NULL, 1e-12);
}

/* A shape the op cannot have is an error naming it, not a kernel. */
Test(codegen_linalg, malformed_qr_refused) {
  check_refused("HloModule m\nENTRY e {\n  a = f32[5,3] parameter(0)\n"
                "  ROOT q = (f32[5,3], f32[5]) custom-call(a), custom_call_target=\"Qr\"\n}\n",
                "Qr");
}
