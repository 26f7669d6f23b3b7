/*
 * test_codegen_gather.c - gather and dynamic-update-slice in the elemental
 * emitter (emitters/elemental_gather.c) and the scatter kernel
 * (emitters/scatter_kernel.c).
 *
 * Each case is a module whose entry root is one fusion (or a bare op) of
 * entry parameters, most of them as JAX lowers x[idx], take_along_axis,
 * embedding lookups, vmapped gathers, .at[].add/set/max and
 * dynamic_update_slice.  The host kernel runs as a shared object on inputs
 * laid out physically; the NVPTX kernel runs under the SIMT emulator of
 * codegen_test_util.h (when clang-19 is installed) and its PTX must pass
 * ptxas -arch=sm_90 (when ptxas is installed).  Both are compared with the
 * interpreter (lib/eval) on the same inputs; random indices are in [-8, 8),
 * so clamping (gather, DUS) and skipped out-of-bounds windows (scatter) are
 * exercised, and duplicates combine in order.  A few cases also compare
 * with values worked out by hand (checked with NumPy/JAX).
 */
#include <criterion/criterion.h>

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "codegen_test_util.h"

TestSuite(codegen_gather, .fini = teardown, .timeout = 120);

/* Gathers and scatters move values or combine them in the interpreter's
 * order: results are exact. */
static void compare(const Literal *expect, const void *buf, const Shape *s,
                    const char *what, int k) {
  char name[64];
  snprintf(name, sizeof name, "%s output %d", what, k);
  compare_out(buf, s, expect, 0, 0, name);
}


/* Host kernel, emulated GPU kernel and ptxas for module text hlo, on inputs
 * specs[k] (io_parse_input specs; NULL or a NULL entry: random).  When
 * expect is given (one spec per output leaf), the interpreter must agree
 * with it too. */
static void check_with(const char *hlo, const char *const *specs,
                       const char *const *expect) {
  HloModule *m = parse(hlo);
  snprintf(Dir, sizeof Dir, "/tmp/xhloc-c3-XXXXXX");
  cr_assert(mkdtemp(Dir), "mkdtemp");
  const HloInstr *ki = m->entry->root;
  int np = m->entry->nparams;
  Literal *args[8];
  void *bufs[16];
  cr_assert(np <= 8);
  for (int k = 0; k < np; k++) {
    const Shape *s = m->entry->params[k]->shape;
    if (specs && specs[k])
      args[k] = io_parse_input(A, specs[k], s, &D);
    else
      args[k] = io_random_literal(A, s, 77 + 13 * (uint64_t)k, -1);
    cr_assert(args[k], "input %d: %s", k, D.msg ? D.msg : "?");
  }
  PtrVec leaves;
  int out0;
  int nb = kernel_buffers(ki, args, bufs, &leaves, &out0);

  Literal **el;
  int nel = eval_leaves(m, np, args, &el);
  cr_assert_eq(nel, leaves.len);
  for (int k = 0; expect && k < nel; k++) {
    Literal *want = io_parse_input(A, expect[k], leaves.data[k], &D);
    cr_assert(want, "expected %d: %s", k, D.msg ? D.msg : "?");
    StrBuf why;
    sb_init(&why);
    cr_expect(io_compare(el[k], want, 0, 0, &why), "interpreter output %d: %s", k, why.s);
    sb_free(&why);
  }

  run_host("gather_test", ki, bufs);
  for (int k = 0; k < leaves.len; k++)
    compare(el[k], bufs[out0 + k], leaves.data[k], "host", k);

  if (have_clang()) {
    poison_outputs(bufs, out0, &leaves);
    LaunchDims ld;
    run_emulated_kernel("gather_test", ki, bufs, nb, &ld);
    for (int k = 0; k < leaves.len; k++)
      compare(el[k], bufs[out0 + k], leaves.data[k], "emulated GPU", k);
  }
  for (int k = 0; k < nb; k++) free(bufs[k]);
  free(el);
  vec_free(&leaves);
  check_ptx_launch("gather_test", ki);
}

static void check(const char *hlo) {
  check_with(hlo, NULL, NULL);
}

/*
 * Gather
 */
/* x[idx] with JAX's negative-index normalization fused in. */
#define X_IDX                                                                  \
  "HloModule m\n"                                                              \
  "f {\n"                                                                      \
  "  x = f32[5,7]{1,0} parameter(0)\n"                                         \
  "  i = s32[3]{0} parameter(1)\n"                                             \
  "  z = s32[] constant(0)\n"                                                  \
  "  zb = s32[3]{0} broadcast(z), dimensions={}\n"                             \
  "  lt = pred[3]{0} compare(i, zb), direction=LT\n"                           \
  "  c5 = s32[] constant(5)\n"                                                 \
  "  c5b = s32[3]{0} broadcast(c5), dimensions={}\n"                           \
  "  a = s32[3]{0} add(i, c5b)\n"                                              \
  "  s = s32[3]{0} select(lt, a, i)\n"                                         \
  "  r = s32[3,1]{1,0} reshape(s)\n"                                           \
  "  ROOT g = f32[3,7]{1,0} gather(x, r), offset_dims={1},"                   \
  " collapsed_slice_dims={0}, start_index_map={0}, index_vector_dim=1,"        \
  " slice_sizes={1,7}\n"                                                       \
  "}\n"                                                                        \
  "ENTRY e {\n"                                                                \
  "  x = f32[5,7]{1,0} parameter(0)\n"                                         \
  "  i = s32[3]{0} parameter(1)\n"                                             \
  "  ROOT r = f32[3,7]{1,0} fusion(x, i), kind=kLoop, calls=f\n"               \
  "}\n"

Test(codegen_gather, x_idx_random) {
  check(X_IDX);
}

/* By hand: rows 1, 5-2=3, 4 of x = arange(35).reshape(5,7). */
Test(codegen_gather, x_idx_by_hand) {
  const char *in[] = {
    "0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 "
    "28 29 30 31 32 33 34", "1 -2 4"};
  const char *out[] = {"7 8 9 10 11 12 13 21 22 23 24 25 26 27 28 29 30 31 32 33 34"};
  check_with(X_IDX, in, out);
}

/* jnp.take_along_axis(a, i, axis=1): batching dims, and the NaN fill of
 * out-of-range indices. */
#define TAKE_ALONG                                                             \
  "HloModule m\n"                                                              \
  "andc {\n"                                                                    \
  "  p = pred[] parameter(0)\n  q = pred[] parameter(1)\n"                     \
  "  ROOT r = pred[] and(p, q)\n"                                              \
  "}\n"                                                                        \
  "f {\n"                                                                      \
  "  i = s32[4,2]{1,0} parameter(1)\n"                                         \
  "  z = s32[] constant(0)\n"                                                  \
  "  zb = s32[4,2]{1,0} broadcast(z), dimensions={}\n"                         \
  "  lt = pred[4,2]{1,0} compare(i, zb), direction=LT\n"                       \
  "  c6 = s32[] constant(6)\n"                                                 \
  "  c6b = s32[4,2]{1,0} broadcast(c6), dimensions={}\n"                       \
  "  a = s32[4,2]{1,0} add(i, c6b)\n"                                          \
  "  s = s32[4,2]{1,0} select(lt, a, i)\n"                                     \
  "  r = s32[4,2,1]{2,1,0} reshape(s)\n"                                       \
  "  z3 = s32[4,2,1]{2,1,0} broadcast(z), dimensions={}\n"                     \
  "  ge = pred[4,2,1]{2,1,0} compare(r, z3), direction=GE\n"                   \
  "  c5 = s32[] constant(5)\n"                                                 \
  "  c5b = s32[4,2,1]{2,1,0} broadcast(c5), dimensions={}\n"                   \
  "  le = pred[4,2,1]{2,1,0} compare(r, c5b), direction=LE\n"                  \
  "  both = pred[4,2,1]{2,1,0} and(ge, le)\n"                                  \
  "  t = pred[] constant(true)\n"                                              \
  "  ok = pred[4,2]{1,0} reduce(both, t), dimensions={2}, to_apply=andc\n"      \
  "  x = f32[4,6]{1,0} parameter(0)\n"                                         \
  "  g = f32[4,2]{1,0} gather(x, r), offset_dims={},"                         \
  " collapsed_slice_dims={1}, start_index_map={1}, operand_batching_dims={0},"  \
  " start_indices_batching_dims={0}, index_vector_dim=2, slice_sizes={1,1}\n"  \
  "  qn = f32[] constant(nan)\n"                                              \
  "  nb = f32[4,2]{1,0} broadcast(qn), dimensions={}\n"                       \
  "  ROOT o = f32[4,2]{1,0} select(ok, g, nb)\n"                               \
  "}\n"                                                                        \
  "ENTRY e {\n"                                                                \
  "  x = f32[4,6]{1,0} parameter(0)\n"                                         \
  "  i = s32[4,2]{1,0} parameter(1)\n"                                         \
  "  ROOT r = f32[4,2]{1,0} fusion(x, i), kind=kLoop, calls=f\n"               \
  "}\n"

Test(codegen_gather, take_along_axis) {
  check(TAKE_ALONG);
}

/* By hand: a = arange(24).reshape(4,6); row r picks columns i[r]. */
Test(codegen_gather, take_along_axis_by_hand) {
  const char *in[] = {
    "0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23",
    "5 0 -1 2 3 3 0 -6"};
  const char *out[] = {"5 0 11 8 15 15 18 18"};
  check_with(TAKE_ALONG, in, out);
}

/* jnp.take(emb, tokens, axis=0) * 2 (an embedding lookup) with a
 * column-major operand layout. */
Test(codegen_gather, embedding_lookup) {
  check("HloModule m\n"
        "f {\n"
        "  e = f32[10,4]{0,1} parameter(0)\n"
        "  t = s32[2,3]{1,0} parameter(1)\n"
        "  r = s32[2,3,1]{2,1,0} reshape(t)\n"
        "  g = f32[2,3,4]{2,1,0} gather(e, r), offset_dims={2},"
        " collapsed_slice_dims={0}, start_index_map={0}, index_vector_dim=2,"
        " slice_sizes={1,4}\n"
        "  two = f32[] constant(2)\n"
        "  tb = f32[2,3,4]{2,1,0} broadcast(two), dimensions={}\n"
        "  ROOT m = f32[2,3,4]{2,1,0} multiply(g, tb)\n"
        "}\n"
        "ENTRY e {\n"
        "  e = f32[10,4]{0,1} parameter(0)\n"
        "  t = s32[2,3]{1,0} parameter(1)\n"
        "  ROOT r = f32[2,3,4]{2,1,0} fusion(e, t), kind=kLoop, calls=f\n"
        "}\n");
}

/* jax.vmap(lambda x, i: x[i]) over a leading batch dimension. */
Test(codegen_gather, vmapped_gather) {
  check("HloModule m\n"
        "f {\n"
        "  x = f32[3,5,4]{2,1,0} parameter(0)\n"
        "  i = s32[3,2]{1,0} parameter(1)\n"
        "  r = s32[3,2,1]{2,1,0} reshape(i)\n"
        "  ROOT g = f32[3,2,4]{2,1,0} gather(x, r), offset_dims={2},"
        " collapsed_slice_dims={1}, start_index_map={1}, operand_batching_dims={0},"
        " start_indices_batching_dims={0}, index_vector_dim=2, slice_sizes={1,1,4}\n"
        "}\n"
        "ENTRY e {\n"
        "  x = f32[3,5,4]{2,1,0} parameter(0)\n"
        "  i = s32[3,2]{1,0} parameter(1)\n"
        "  ROOT r = f32[3,2,4]{2,1,0} fusion(x, i), kind=kLoop, calls=f\n"
        "}\n");
}

/* 2-D windows with starts clamped, index_vector_dim first, start_index_map
 * reversed, offset dims interleaved with batch dims; a bare gather. */
Test(codegen_gather, windows_clamped_ivd_first) {
  check("HloModule m\n"
        "ENTRY e {\n"
        "  x = s32[6,5]{0,1} parameter(0)\n"
        "  i = s64[2,3]{1,0} parameter(1)\n"
        "  ROOT g = s32[3,4,2]{2,1,0} gather(x, i), offset_dims={1,2},"
        " collapsed_slice_dims={}, start_index_map={1,0}, index_vector_dim=0,"
        " slice_sizes={4,2}\n"
        "}\n");
}

/* By hand: x = arange(12).reshape(3,4), 2x2 windows at (r, c) clamped to
 * [0,1]x[0,2]: (-3, 1) -> (0,1); (2, 9) -> (1,2); (1, 0). */
Test(codegen_gather, windows_by_hand) {
  const char *in[] = {"0 1 2 3 4 5 6 7 8 9 10 11", "-3 1 2 9 1 0"};
  const char *out[] = {"1 2 5 6 6 7 10 11 4 5 8 9"};
  check_with("HloModule m\n"
             "ENTRY e {\n"
             "  x = s32[3,4]{1,0} parameter(0)\n"
             "  i = s32[3,2]{1,0} parameter(1)\n"
             "  ROOT g = s32[3,2,2]{2,1,0} gather(x, i), offset_dims={1,2},"
             " collapsed_slice_dims={}, start_index_map={0,1}, index_vector_dim=1,"
             " slice_sizes={2,2}\n"
             "}\n", in, out);
}

/* Unsigned and narrow index types, a scalar-per-position index vector
 * (index_vector_dim = rank), pred and f16 values. */
Test(codegen_gather, u8_indices_implicit_vector) {
  check("HloModule m\n"
        "f {\n"
        "  x = f16[9,3]{1,0} parameter(0)\n"
        "  i = u8[4,2]{1,0} parameter(1)\n"
        "  ROOT g = f16[4,2,3]{2,1,0} gather(x, i), offset_dims={2},"
        " collapsed_slice_dims={0}, start_index_map={0}, index_vector_dim=2,"
        " slice_sizes={1,3}\n"
        "}\n"
        "ENTRY e {\n"
        "  x = f16[9,3]{1,0} parameter(0)\n"
        "  i = u8[4,2]{1,0} parameter(1)\n"
        "  ROOT r = f16[4,2,3]{2,1,0} fusion(x, i), kind=kLoop, calls=f\n"
        "}\n");
  teardown();
  check("HloModule m\n"
        "ENTRY e {\n"
        "  x = pred[7]{0} parameter(0)\n"
        "  i = u64[5]{0} parameter(1)\n"
        "  ROOT g = pred[5]{0} gather(x, i), offset_dims={},"
        " collapsed_slice_dims={0}, start_index_map={0}, index_vector_dim=1,"
        " slice_sizes={1}\n"
        "}\n");
}

/* u64 indices over INT64_MAX clamp to the last start, as lib/eval does. */
Test(codegen_gather, u64_huge_index) {
  const char *in[] = {"10 11 12 13", "18446744073709551615 1"};
  const char *out[] = {"13 11"};
  check_with("HloModule m\n"
             "ENTRY e {\n"
             "  x = s32[4]{0} parameter(0)\n"
             "  i = u64[2]{0} parameter(1)\n"
             "  ROOT g = s32[2]{0} gather(x, i), offset_dims={},"
             " collapsed_slice_dims={0}, start_index_map={0}, index_vector_dim=1,"
             " slice_sizes={1}\n"
             "}\n", in, out);
}

Test(codegen_gather, complex_gather) {
  check("HloModule m\n"
                "ENTRY e {\n"
                "  x = c64[4]{0} parameter(0)\n"
                "  i = s32[2]{0} parameter(1)\n"
                "  ROOT g = c64[2]{0} gather(x, i), offset_dims={},"
                " collapsed_slice_dims={0}, start_index_map={0}, index_vector_dim=1,"
                " slice_sizes={1}\n"
                "}\n");
}

/*
 * Dynamic-update-slice
 */
#define DUS_FUSED                                                              \
  "HloModule m\n"                                                              \
  "f {\n"                                                                      \
  "  x = f32[8,6]{1,0} parameter(0)\n"                                         \
  "  u = f32[3,2]{1,0} parameter(1)\n"                                         \
  "  i = s32[] parameter(2)\n"                                                 \
  "  j = s32[] parameter(3)\n"                                                 \
  "  c = f32[] constant(10)\n"                                                 \
  "  cb = f32[3,2]{1,0} broadcast(c), dimensions={}\n"                         \
  "  ua = f32[3,2]{1,0} add(u, cb)\n"                                          \
  "  d = f32[8,6]{1,0} dynamic-update-slice(x, ua, i, j)\n"                    \
  "  ROOT n = f32[8,6]{1,0} negate(d)\n"                                       \
  "}\n"                                                                        \
  "ENTRY e {\n"                                                                \
  "  x = f32[8,6]{1,0} parameter(0)\n"                                         \
  "  u = f32[3,2]{1,0} parameter(1)\n"                                         \
  "  i = s32[] parameter(2)\n"                                                 \
  "  j = s32[] parameter(3)\n"                                                 \
  "  ROOT r = f32[8,6]{1,0} fusion(x, u, i, j), kind=kLoop, calls=f\n"         \
  "}\n"

Test(codegen_gather, dus_fused) {
  const char *starts[][4] = {{NULL, NULL, "2", "3"}, {NULL, NULL, "-4", "9"},
                             {NULL, NULL, "7", "0"}, {NULL, NULL, "0", "4"}};
  for (size_t k = 0; k < sizeof starts / sizeof starts[0]; k++) {
    check_with(DUS_FUSED, starts[k], NULL);
    teardown();
  }
}

/* By hand: zeros(4,4) with [[1,2],[3,4]] at (3, -1) -> clamped (2, 0). */
Test(codegen_gather, dus_by_hand) {
  const char *in[] = {"0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0", "1 2 3 4", "3", "-1"};
  const char *out[] = {"0 0 0 0 0 0 0 0 1 2 0 0 3 4 0 0"};
  check_with("HloModule m\n"
             "ENTRY e {\n"
             "  x = s32[4,4]{1,0} parameter(0)\n"
             "  u = s32[2,2]{1,0} parameter(1)\n"
             "  i = s64[] parameter(2)\n"
             "  j = s64[] parameter(3)\n"
             "  ROOT d = s32[4,4]{1,0} dynamic-update-slice(x, u, i, j)\n"
             "}\n", in, out);
}

/* Column-major layouts, u32 starts and a 3-D update. */
Test(codegen_gather, dus_layouts_u32) {
  check("HloModule m\n"
        "f {\n"
        "  x = f16[4,5,6]{0,2,1} parameter(0)\n"
        "  u = f16[2,5,3]{2,1,0} parameter(1)\n"
        "  i = u32[] parameter(2)\n"
        "  j = u32[] parameter(3)\n"
        "  k = u32[] parameter(4)\n"
        "  ROOT d = f16[4,5,6]{0,2,1} dynamic-update-slice(x, u, i, j, k)\n"
        "}\n"
        "ENTRY e {\n"
        "  x = f16[4,5,6]{0,2,1} parameter(0)\n"
        "  u = f16[2,5,3]{2,1,0} parameter(1)\n"
        "  i = u32[] parameter(2)\n"
        "  j = u32[] parameter(3)\n"
        "  k = u32[] parameter(4)\n"
        "  ROOT r = f16[4,5,6]{0,2,1} fusion(x, u, i, j, k), kind=kLoop, calls=f\n"
        "}\n");
}

/*
 * Scatter
 */
#define SCATTER_1D(combiner, root, attrs)                                      \
  "HloModule m\n"                                                              \
  "comb {\n"                                                                   \
  "  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n"                       \
  "  ROOT r = f32[] " root "\n"                                                \
  "}\n"                                                                        \
  "f {\n"                                                                      \
  "  o = f32[6,3]{1,0} parameter(0)\n"                                         \
  "  i = s32[5,1]{1,0} parameter(1)\n"                                         \
  "  u = f32[5,3]{1,0} parameter(2)\n"                                         \
  "  ROOT s = f32[6,3]{1,0} scatter(o, i, u), update_window_dims={1},"        \
  " inserted_window_dims={0}, scatter_dims_to_operand_dims={0},"               \
  " index_vector_dim=1" attrs ", to_apply=comb\n"                              \
  "}\n"                                                                        \
  "ENTRY e {\n"                                                                \
  "  o = f32[6,3]{1,0} parameter(0)\n"                                         \
  "  i = s32[5,1]{1,0} parameter(1)\n"                                         \
  "  u = f32[5,3]{1,0} parameter(2)\n"                                         \
  "  ROOT r = f32[6,3]{1,0} fusion(o, i, u), kind=kInput, calls=f\n"           \
  "}\n"

/* .at[i].add(u) with duplicates and out-of-range rows (random in [-8, 8)). */
Test(codegen_gather, scatter_add) {
  check(SCATTER_1D(add, "add(a, b)", ""));
}

/* By hand: rows 0, 2, 2 (twice), -1 and 6 skipped. */
Test(codegen_gather, scatter_add_by_hand) {
  const char *in[] = {"0 0 0 1 1 1 2 2 2 3 3 3 4 4 4 5 5 5", "0 2 2 -1 6",
                      "1 2 3 10 20 30 100 200 300 7 7 7 9 9 9"};
  const char *out[] = {"1 2 3 1 1 1 112 222 332 3 3 3 4 4 4 5 5 5"};
  check_with(SCATTER_1D(add, "add(a, b)", ""), in, out);
}

/* .at[i].set(u): the last of duplicate indices wins, as in the interpreter
 * (random indices too). */
Test(codegen_gather, scatter_set_duplicates) {
  const char *in[] = {NULL, "4 1 4 4 -2", NULL};
  const char *hlo = "HloModule m\n"
             "comb {\n  a = f32[] parameter(0)\n  ROOT b = f32[] parameter(1)\n}\n"
             "f {\n"
             "  o = f32[6,3]{1,0} parameter(0)\n"
             "  i = s32[5,1]{1,0} parameter(1)\n"
             "  u = f32[5,3]{1,0} parameter(2)\n"
             "  ROOT s = f32[6,3]{1,0} scatter(o, i, u), update_window_dims={1},"
             " inserted_window_dims={0}, scatter_dims_to_operand_dims={0},"
             " index_vector_dim=1, to_apply=comb\n"
             "}\n"
             "ENTRY e {\n"
             "  o = f32[6,3]{1,0} parameter(0)\n"
             "  i = s32[5,1]{1,0} parameter(1)\n"
             "  u = f32[5,3]{1,0} parameter(2)\n"
             "  ROOT r = f32[6,3]{1,0} fusion(o, i, u), kind=kInput, calls=f\n"
             "}\n";
  check_with(hlo, in, NULL);
  teardown();
  check(hlo);
}

/* .at[i].max(u) */
Test(codegen_gather, scatter_max) {
  check(SCATTER_1D(max, "maximum(a, b)", ""));
}

/* unique_indices=true: the GPU kernel updates in parallel. */
Test(codegen_gather, scatter_unique_parallel) {
  const char *in[] = {NULL, "5 0 3 -1 2", NULL};
  check_with(SCATTER_1D(add, "add(a, b)", ", unique_indices=true"), in, NULL);
}

/* Batching dims (a vmapped .at[].add), 2-D windows, index_vector_dim in
 * the middle, s32 values, a multiply combiner and a bare scatter. */
Test(codegen_gather, scatter_batched_windows) {
  check("HloModule m\n"
        "mul {\n  a = s32[] parameter(0)\n  b = s32[] parameter(1)\n"
        "  ROOT r = s32[] multiply(a, b)\n}\n"
        "ENTRY e {\n"
        "  o = s32[3,5,4]{2,1,0} parameter(0)\n"
        "  i = s32[3,1,2]{2,1,0} parameter(1)\n"
        "  u = s32[3,2,2]{2,1,0} parameter(2)\n"
        "  ROOT s = s32[3,5,4]{2,1,0} scatter(o, i, u), update_window_dims={1},"
        " inserted_window_dims={2}, input_batching_dims={0},"
        " scatter_indices_batching_dims={0}, scatter_dims_to_operand_dims={1},"
        " index_vector_dim=1, to_apply=mul\n"
        "}\n");
}

/* 2-D windows with an index vector of two, column-major operand. */
Test(codegen_gather, scatter_2d_windows) {
  check("HloModule m\n"
        "comb {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n"
        "  ROOT r = f32[] add(a, b)\n}\n"
        "f {\n"
        "  o = f32[7,6]{0,1} parameter(0)\n"
        "  i = s32[4,2]{1,0} parameter(1)\n"
        "  u = f32[2,4,3]{2,1,0} parameter(2)\n"
        "  ROOT s = f32[7,6]{0,1} scatter(o, i, u), update_window_dims={0,2},"
        " inserted_window_dims={}, scatter_dims_to_operand_dims={1,0},"
        " index_vector_dim=1, to_apply=comb\n"
        "}\n"
        "ENTRY e {\n"
        "  o = f32[7,6]{0,1} parameter(0)\n"
        "  i = s32[4,2]{1,0} parameter(1)\n"
        "  u = f32[2,4,3]{2,1,0} parameter(2)\n"
        "  ROOT r = f32[7,6]{0,1} fusion(o, i, u), kind=kInput, calls=f\n"
        "}\n");
}

/* A variadic scatter: (value, count) pairs combined together. */
Test(codegen_gather, scatter_variadic) {
  check("HloModule m\n"
        "comb {\n"
        "  a = f32[] parameter(0)\n  b = s32[] parameter(1)\n"
        "  c = f32[] parameter(2)\n  d = s32[] parameter(3)\n"
        "  s = f32[] add(a, c)\n  n = s32[] add(b, d)\n"
        "  ROOT t = (f32[], s32[]) tuple(s, n)\n"
        "}\n"
        "f {\n"
        "  o = f32[5]{0} parameter(0)\n"
        "  p = s32[5]{0} parameter(1)\n"
        "  i = s32[6]{0} parameter(2)\n"
        "  u = f32[6]{0} parameter(3)\n"
        "  v = s32[6]{0} parameter(4)\n"
        "  ROOT s = (f32[5]{0}, s32[5]{0}) scatter(o, p, i, u, v),"
        " update_window_dims={}, inserted_window_dims={0},"
        " scatter_dims_to_operand_dims={0}, index_vector_dim=1, to_apply=comb\n"
        "}\n"
        "ENTRY e {\n"
        "  o = f32[5]{0} parameter(0)\n"
        "  p = s32[5]{0} parameter(1)\n"
        "  i = s32[6]{0} parameter(2)\n"
        "  u = f32[6]{0} parameter(3)\n"
        "  v = s32[6]{0} parameter(4)\n"
        "  ROOT r = (f32[5]{0}, s32[5]{0}) fusion(o, p, i, u, v), kind=kInput,"
        " calls=f\n"
        "}\n");
}

/* Producers fused into the scatter (operand zeros, updates scaled). */
Test(codegen_gather, scatter_fused_operands) {
  check("HloModule m\n"
        "comb {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n"
        "  ROOT r = f32[] add(a, b)\n}\n"
        "f {\n"
        "  i = s32[8]{0} parameter(0)\n"
        "  u = f32[8,2]{1,0} parameter(1)\n"
        "  z = f32[] constant(0)\n"
        "  zb = f32[4,2]{1,0} broadcast(z), dimensions={}\n"
        "  h = f32[] constant(0.5)\n"
        "  hb = f32[8,2]{1,0} broadcast(h), dimensions={}\n"
        "  us = f32[8,2]{1,0} multiply(u, hb)\n"
        "  ROOT s = f32[4,2]{1,0} scatter(zb, i, us), update_window_dims={1},"
        " inserted_window_dims={0}, scatter_dims_to_operand_dims={0},"
        " index_vector_dim=1, to_apply=comb\n"
        "}\n"
        "ENTRY e {\n"
        "  i = s32[8]{0} parameter(0)\n"
        "  u = f32[8,2]{1,0} parameter(1)\n"
        "  ROOT r = f32[4,2]{1,0} fusion(i, u), kind=kInput, calls=f\n"
        "}\n");
}
