/*
 * test_codegen_in_place.c - kernels whose result is written over an
 * operand in place: the dynamic-update-slice kernel (emitters/
 * dus_kernel.c), which writes only the update, and the scatter kernel
 * (emitters/scatter_kernel.c), which then skips its copy of the operand.
 * codegen_set_in_place_operand tells codegen which operand, as the thunk
 * emitter does when buffer assignment gave the result that operand's
 * slice.
 *
 * Each case runs the kernel as the runtime does then: the result buffer
 * holds the operand's values before the kernel runs.  The operand's own
 * argument is a separate buffer of 0xA5 bytes, so a kernel that reads the
 * operand (the out-of-place loop kernel copies it, as does the scatter
 * kernel's first phase) gives a wrong result.  The host kernel runs as a
 * shared object, the NVPTX kernel under the SIMT emulator of
 * codegen_test_util.h (when clang-19 is installed) and its PTX through
 * ptxas (when installed); both are compared with the interpreter.  A
 * dynamic-update-slice's launch must be sized to its update, its start
 * indices clamped as HLO says.  Fusions the in-place kernels do not take
 * (the operand read elsewhere) keep the out-of-place kernels, run with the
 * operand and result truly aliased.
 */
#include <criterion/criterion.h>

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "codegen_test_util.h"

TestSuite(codegen_in_place, .fini = teardown, .timeout = 120);

/* How the operand's argument is passed: a buffer of poison next to the
 * result buffer (the kernel must not read it), or the result buffer
 * itself (truly in place). */
typedef enum { OPERAND_POISONED, OPERAND_ALIASED } OperandMode;

/* Kernel "kern" of ki for target, told as the thunk emitter tells it
 * that its result is written over operand `operand`. */
static Codegen *in_place_kernel(const char *name, CgTarget target, const HloInstr *ki,
                                int operand, LaunchDims *ld) {
  Codegen *cg = new_codegen(name, target);
  codegen_set_args_may_alias(cg, true);
  codegen_set_in_place_operand(cg, operand);
  cr_assert(codegen_kernel(cg, ki, "kern", ld, &D), "kernel: %s", D.msg);
  codegen_set_args_may_alias(cg, false);
  codegen_set_in_place_operand(cg, -1);
  return cg;
}

/* The kernel's arguments (free with free(), and *poison): the operands'
 * buffers with operand `operand` replaced by a buffer of poison
 * (*poison) or by the result buffer; the result buffer gets that
 * operand's values. */
static void **kernel_args(void **bufs, int nb, int out0, int operand, OperandMode mode,
                          const HloInstr *ki, void **poison) {
  const Shape *s = ki->ops[operand]->shape;
  size_t bytes = (size_t)(shape_elements(s) > 0 ? shape_elements(s) : 1) *
                 (size_t)et_bytes(s->et);
  memcpy(bufs[out0], bufs[operand], bytes);
  void **args = calloc((size_t)nb + 1, sizeof *args);
  memcpy(args, bufs, (size_t)nb * sizeof *args);
  *poison = NULL;
  if (mode == OPERAND_ALIASED) {
    args[operand] = bufs[out0];
  } else {
    *poison = malloc(bytes);
    memset(*poison, 0xA5, bytes);
    args[operand] = *poison;
  }
  return args;
}

typedef struct Launches {
  LaunchDims host, gpu;
  bool gpu_ran;
} Launches;

/* Runs ki's host kernel (and the emulated GPU kernel) in place over
 * operand `operand` on inputs specs (NULL entries random) and compares
 * with the interpreter.  *l: the launches. */
static void check_in_place(const char *hlo, int operand, const char *const *specs,
                           OperandMode mode, Launches *l) {
  HloModule *m = parse(hlo);
  snprintf(Dir, sizeof Dir, "/tmp/xhloc-inplace-XXXXXX");
  cr_assert(mkdtemp(Dir), "mkdtemp");
  const HloInstr *ki = m->entry->root;
  int np = m->entry->nparams;
  Literal *in[8];
  void *bufs[16];
  cr_assert(np <= 8);
  for (int k = 0; k < np; k++) {
    const Shape *s = m->entry->params[k]->shape;
    in[k] = specs && specs[k] ? io_parse_input(A, specs[k], s, &D)
                              : io_random_literal(A, s, 91 + 7 * (uint64_t)k, -1);
    cr_assert(in[k], "input %d: %s", k, D.msg ? D.msg : "?");
  }
  PtrVec leaves;
  int out0;
  int nb = kernel_buffers(ki, in, bufs, &leaves, &out0);
  cr_assert_eq(leaves.len, 1);
  Literal **el;
  cr_assert_eq(eval_leaves(m, np, in, &el), 1);

  /* host: every unit once, last first */
  Codegen *cg = in_place_kernel("in_place_test", CG_TARGET_HOST, ki, operand, &l->host);
  char so[128];
  snprintf(so, sizeof so, "%s/k.so", Dir);
  cr_assert(codegen_host_so(cg, so, &D), "host so: %s", D.msg);
  codegen_free(cg);
  void *h = dlopen(so, RTLD_NOW | RTLD_LOCAL);
  cr_assert(h, "dlopen: %s", dlerror());
  void (*fn)(void **, int64_t, int64_t) =
      (void (*)(void **, int64_t, int64_t))dlsym(h, "kern");
  cr_assert(fn, "dlsym kern");
  void *poison;
  void **args = kernel_args(bufs, nb, out0, operand, mode, ki, &poison);
  for (int64_t u = l->host.grid[0]; u-- > 0;)
    fn(args, u, u + 1);
  free(args);
  free(poison);
  dlclose(h);
  compare_out(bufs[out0], leaves.data[0], el[0], 0, 0, "host");

  /* GPU: the emulator, then ptxas */
  l->gpu_ran = false;
  cg = in_place_kernel("in_place_test", CG_TARGET_NVPTX, ki, operand, &l->gpu);
  StrBuf text;
  sb_init(&text);
  if (have_clang()) {
    cr_assert(codegen_llvm_ir(cg, false, &text, &D), "ir: %s", D.msg);
    poison_outputs(bufs, out0, &leaves);
    args = kernel_args(bufs, nb, out0, operand, mode, ki, &poison);
    char why[1024];
    bool ran = emu_run(text.s, Dir, args, nb, &l->gpu, why, sizeof why);
    free(args);
    free(poison);
    cr_assert(ran, "emulator: %s", why);
    compare_out(bufs[out0], leaves.data[0], el[0], 0, 0, "emulated GPU");
    l->gpu_ran = true;
  }
  if (access(PTXAS, X_OK) == 0) {
    sb_free(&text);
    sb_init(&text);
    cr_assert(codegen_ptx(cg, &text, &D), "ptx: %s", D.msg);
    run_ptxas(text.s);
  }
  sb_free(&text);
  codegen_free(cg);
  for (int k = 0; k < nb; k++) free(bufs[k]);
  free(el);
  vec_free(&leaves);
}

/* The GPU launch is one thread per element of an update of n elements
 * (the last block partly idle); the host's work is the update's rows. */
static void expect_update_sized(const Launches *l, int64_t n, int64_t rows) {
  int64_t threads = (int64_t)l->gpu.grid[0] * l->gpu.block[0];
  cr_expect(l->gpu.grid[1] == 1 && l->gpu.grid[2] == 1 && l->gpu.block[1] == 1 &&
            l->gpu.block[2] == 1, "a 1-D launch");
  cr_expect(threads >= n && threads - (int64_t)l->gpu.block[0] < (n > 0 ? n : 1),
            "GPU launch of %lld threads for an update of %lld elements", (long long)threads,
            (long long)n);
  cr_expect_eq(l->host.rows, rows, "host rows %lld, want %lld", (long long)l->host.rows,
               (long long)rows);
  cr_expect_eq(l->host.row_dims, 0, "host units are not rows of the result");
}

/* A fusion: a row block of u + 10 into x at (i, j). */
#define FUSED_ADD                                                              \
  "HloModule m\n"                                                              \
  "f {\n"                                                                      \
  "  u = f32[3,16]{1,0} parameter(0)\n"                                        \
  "  x = f32[64,48]{1,0} parameter(1)\n"                                       \
  "  i = s32[] parameter(2)\n"                                                 \
  "  j = s32[] parameter(3)\n"                                                 \
  "  c = f32[] constant(10)\n"                                                 \
  "  cb = f32[3,16]{1,0} broadcast(c), dimensions={}\n"                        \
  "  ua = f32[3,16]{1,0} add(u, cb)\n"                                         \
  "  ROOT d = f32[64,48]{1,0} dynamic-update-slice(x, ua, i, j)\n"             \
  "}\n"                                                                        \
  "ENTRY e {\n"                                                                \
  "  u = f32[3,16]{1,0} parameter(0)\n"                                        \
  "  x = f32[64,48]{1,0} parameter(1)\n"                                       \
  "  i = s32[] parameter(2)\n"                                                 \
  "  j = s32[] parameter(3)\n"                                                 \
  "  ROOT r = f32[64,48]{1,0} fusion(u, x, i, j), kind=kLoop, calls=f\n"       \
  "}\n"

/* Starts inside, clamped below, clamped above. */
Test(codegen_in_place, fused_update_clamped) {
  const char *starts[][4] = {{NULL, NULL, "2", "3"}, {NULL, NULL, "-4", "40"},
                             {NULL, NULL, "63", "-1"}, {NULL, NULL, "61", "32"}};
  for (size_t k = 0; k < sizeof starts / sizeof starts[0]; k++) {
    Launches l;
    check_in_place(FUSED_ADD, 1, starts[k], OPERAND_POISONED, &l);
    expect_update_sized(&l, 3 * 16, 3);
    teardown();
  }
}

/* By hand: zeros(4,4) with [[1,2],[3,4]] at (3, -1) -> clamped (2, 0);
 * a lone dynamic-update-slice, s64 starts. */
Test(codegen_in_place, lone_op_by_hand) {
  const char *in[] = {"0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0", "1 2 3 4", "3", "-1"};
  const char *hlo = "HloModule m\n"
                    "ENTRY e {\n"
                    "  x = s32[4,4]{1,0} parameter(0)\n"
                    "  u = s32[2,2]{1,0} parameter(1)\n"
                    "  i = s64[] parameter(2)\n"
                    "  j = s64[] parameter(3)\n"
                    "  ROOT d = s32[4,4]{1,0} dynamic-update-slice(x, u, i, j)\n"
                    "}\n";
  Launches l;
  check_in_place(hlo, 0, in, OPERAND_POISONED, &l);
  expect_update_sized(&l, 4, 2);
  /* the values by hand: the interpreter agrees (checked above against
   * the kernels) */
  HloModule *m = parse(hlo);
  Literal *args[4];
  for (int k = 0; k < 4; k++)
    cr_assert((args[k] = io_parse_input(A, in[k], m->entry->params[k]->shape, &D)));
  Literal **el;
  cr_assert_eq(eval_leaves(m, 4, args, &el), 1);
  Literal *want = io_parse_input(A, "0 0 0 0 0 0 0 0 1 2 0 0 3 4 0 0", el[0]->shape, &D);
  StrBuf why;
  sb_init(&why);
  cr_expect(io_compare(el[0], want, 0, 0, &why), "interpreter: %s", why.s);
  sb_free(&why);
  free(el);
}

/* bf16 in a column-major layout (the rows of the update run along
 * dimension 0), the update a convert of an f32 product, u32 starts. */
Test(codegen_in_place, bf16_column_major) {
  const char *hlo =
      "HloModule m\n"
      "f {\n"
      "  x = bf16[16,8,12]{0,2,1} parameter(0)\n"
      "  u = f32[4,8,3]{2,1,0} parameter(1)\n"
      "  i = u32[] parameter(2)\n"
      "  j = u32[] parameter(3)\n"
      "  k = u32[] parameter(4)\n"
      "  t = f32[4,8,3]{2,1,0} multiply(u, u)\n"
      "  c = bf16[4,8,3]{2,1,0} convert(t)\n"
      "  ROOT d = bf16[16,8,12]{0,2,1} dynamic-update-slice(x, c, i, j, k)\n"
      "}\n"
      "ENTRY e {\n"
      "  x = bf16[16,8,12]{0,2,1} parameter(0)\n"
      "  u = f32[4,8,3]{2,1,0} parameter(1)\n"
      "  i = u32[] parameter(2)\n"
      "  j = u32[] parameter(3)\n"
      "  k = u32[] parameter(4)\n"
      "  ROOT r = bf16[16,8,12]{0,2,1} fusion(x, u, i, j, k), kind=kLoop, calls=f\n"
      "}\n";
  const char *starts[][5] = {{NULL, NULL, "5", "1", "9"}, {NULL, NULL, "100", "0", "4000000000"}};
  for (size_t k = 0; k < sizeof starts / sizeof starts[0]; k++) {
    Launches l;
    check_in_place(hlo, 0, starts[k], OPERAND_POISONED, &l);
    expect_update_sized(&l, 4 * 8 * 3, 8 * 3);
    teardown();
  }
}

/* Bitcasts between the parameter and the dynamic-update-slice and
 * between it and the root. */
Test(codegen_in_place, through_bitcasts) {
  const char *hlo =
      "HloModule m\n"
      "f {\n"
      "  x = f32[48]{0} parameter(0)\n"
      "  u = f32[2,6]{1,0} parameter(1)\n"
      "  i = s32[] parameter(2)\n"
      "  xb = f32[8,6]{1,0} bitcast(x)\n"
      "  z = s32[] constant(0)\n"
      "  n = f32[2,6]{1,0} negate(u)\n"
      "  d = f32[8,6]{1,0} dynamic-update-slice(xb, n, i, z)\n"
      "  ROOT r = f32[48]{0} bitcast(d)\n"
      "}\n"
      "ENTRY e {\n"
      "  x = f32[48]{0} parameter(0)\n"
      "  u = f32[2,6]{1,0} parameter(1)\n"
      "  i = s32[] parameter(2)\n"
      "  ROOT r = f32[48]{0} fusion(x, u, i), kind=kLoop, calls=f\n"
      "}\n";
  const char *starts[][3] = {{NULL, NULL, "3"}, {NULL, NULL, "7"}};
  for (size_t k = 0; k < sizeof starts / sizeof starts[0]; k++) {
    Launches l;
    check_in_place(hlo, 0, starts[k], OPERAND_POISONED, &l);
    expect_update_sized(&l, 12, 2);
    teardown();
  }
}

/* An empty update leaves the result as it is (the operand's values). */
Test(codegen_in_place, empty_update) {
  const char *hlo = "HloModule m\n"
                    "ENTRY e {\n"
                    "  x = f32[5,7]{1,0} parameter(0)\n"
                    "  u = f32[0,7]{1,0} parameter(1)\n"
                    "  i = s32[] parameter(2)\n"
                    "  j = s32[] parameter(3)\n"
                    "  ROOT d = f32[5,7]{1,0} dynamic-update-slice(x, u, i, j)\n"
                    "}\n";
  Launches l;
  check_in_place(hlo, 0, NULL, OPERAND_POISONED, &l);
  expect_update_sized(&l, 0, 0);
}

/* The operand read elsewhere (a slice of it in the update), or the wrong
 * operand named: the loop kernel, over the whole result, correct with the
 * operand and the result in one buffer. */
Test(codegen_in_place, refused_keeps_loop_kernel) {
  const char *hlo =
      "HloModule m\n"
      "f {\n"
      "  x = f32[8,6]{1,0} parameter(0)\n"
      "  u = f32[2,6]{1,0} parameter(1)\n"
      "  i = s32[] parameter(2)\n"
      "  z = s32[] constant(0)\n"
      "  s = f32[2,6]{1,0} slice(x), slice={[0:2], [0:6]}\n"
      "  a = f32[2,6]{1,0} add(u, s)\n"
      "  ROOT d = f32[8,6]{1,0} dynamic-update-slice(x, a, i, z)\n"
      "}\n"
      "ENTRY e {\n"
      "  x = f32[8,6]{1,0} parameter(0)\n"
      "  u = f32[2,6]{1,0} parameter(1)\n"
      "  i = s32[] parameter(2)\n"
      "  ROOT r = f32[8,6]{1,0} fusion(x, u, i), kind=kLoop, calls=f\n"
      "}\n";
  const char *starts[] = {NULL, NULL, "4"};
  Launches l;
  check_in_place(hlo, 0, starts, OPERAND_ALIASED, &l);
  cr_expect_geq((int64_t)l.gpu.grid[0] * l.gpu.block[0], 48, "the loop kernel covers the result");
  cr_expect_eq(l.host.rows, 8, "the loop kernel's rows are the result's");
  teardown();
  /* FUSED_ADD told that its update (operand 0) is overwritten */
  HloModule *m = parse(FUSED_ADD);
  Codegen *cg = in_place_kernel("in_place_test", CG_TARGET_NVPTX, m->entry->root, 0, &l.gpu);
  codegen_free(cg);
  cr_expect_eq((int64_t)l.gpu.grid[0] * l.gpu.block[0] >= 64 * 48, true,
               "operand 0 is not the updated one: the loop kernel");
}

/*
 * Scatter
 */
/* .at[i].add(u * u) into rows of o: serial updates in order
 * (duplicates combine as the interpreter does), or with unique_indices
 * block-strided over the threads. */
#define SCATTER_ADD(UNIQUE)                                                    \
  "HloModule m\n"                                                              \
  "add {\n"                                                                    \
  "  a = f32[] parameter(0)\n"                                                 \
  "  b = f32[] parameter(1)\n"                                                 \
  "  ROOT s = f32[] add(a, b)\n"                                               \
  "}\n"                                                                        \
  "f {\n"                                                                      \
  "  o = f32[40,8]{1,0} parameter(0)\n"                                        \
  "  i = s32[5,1]{1,0} parameter(1)\n"                                         \
  "  u = f32[5,8]{1,0} parameter(2)\n"                                         \
  "  w = f32[5,8]{1,0} multiply(u, u)\n"                                      \
  "  ROOT s = f32[40,8]{1,0} scatter(o, i, w), update_window_dims={1},"       \
  " inserted_window_dims={0}, scatter_dims_to_operand_dims={0},"               \
  " index_vector_dim=1, " UNIQUE "to_apply=add\n"                               \
  "}\n"                                                                        \
  "ENTRY e {\n"                                                                \
  "  o = f32[40,8]{1,0} parameter(0)\n"                                        \
  "  i = s32[5,1]{1,0} parameter(1)\n"                                         \
  "  u = f32[5,8]{1,0} parameter(2)\n"                                         \
  "  ROOT r = f32[40,8]{1,0} fusion(o, i, u), kind=kLoop, calls=f\n"           \
  "}\n"

/* Duplicates and an index out of range (its window skipped). */
Test(codegen_in_place, scatter_add_serial) {
  const char *in[] = {NULL, "3 39 3 -1 40", NULL};
  Launches l;
  check_in_place(SCATTER_ADD(""), 0, in, OPERAND_POISONED, &l);
  cr_expect_eq(l.gpu.block[0], 32, "one warp applies the updates in order: block %u",
               l.gpu.block[0]);
}

Test(codegen_in_place, scatter_add_unique) {
  const char *in[] = {NULL, "3 39 7 0 12", NULL};
  Launches l;
  check_in_place(SCATTER_ADD("unique_indices=true, "), 0, in, OPERAND_POISONED, &l);
  cr_expect_eq(l.gpu.block[0], 64, "a thread per update element (40 of them): block %u",
               l.gpu.block[0]);
}

/* The operand read elsewhere too (the updates add a row of it): the copy
 * stays, correct with the operand and the result in one buffer. */
Test(codegen_in_place, scatter_refused_keeps_copy) {
  const char *hlo =
      "HloModule m\n"
      "add {\n"
      "  a = f32[] parameter(0)\n"
      "  b = f32[] parameter(1)\n"
      "  ROOT s = f32[] add(a, b)\n"
      "}\n"
      "f {\n"
      "  o = f32[40,8]{1,0} parameter(0)\n"
      "  i = s32[5,1]{1,0} parameter(1)\n"
      "  u = f32[5,8]{1,0} parameter(2)\n"
      "  r = f32[5,8]{1,0} slice(o), slice={[0:5], [0:8]}\n"
      "  w = f32[5,8]{1,0} add(u, r)\n"
      "  ROOT s = f32[40,8]{1,0} scatter(o, i, w), update_window_dims={1},"
      " inserted_window_dims={0}, scatter_dims_to_operand_dims={0},"
      " index_vector_dim=1, to_apply=add\n"
      "}\n"
      "ENTRY e {\n"
      "  o = f32[40,8]{1,0} parameter(0)\n"
      "  i = s32[5,1]{1,0} parameter(1)\n"
      "  u = f32[5,8]{1,0} parameter(2)\n"
      "  ROOT r = f32[40,8]{1,0} fusion(o, i, u), kind=kLoop, calls=f\n"
      "}\n";
  const char *in[] = {NULL, "9 39 9 20 12", NULL};
  Launches l;
  check_in_place(hlo, 0, in, OPERAND_ALIASED, &l);
  cr_expect_geq(l.gpu.block[0], 320, "the copy's block covers the result: %u", l.gpu.block[0]);
}
