/*
 * test_codegen_sort.c - the sort and top-k kernels of the code generator
 * (emitters/sort_kernel.c, sort_kernel_gpu.c, topk_kernel.c).
 *
 * Each case is a module whose entry root is one fusion (or bare op).  Its
 * inputs are random with planted ties, NaNs of both signs, infinities and
 * zeros of both signs, so that the order of equal keys (stability) and the
 * comparator's handling of NaN and -0 show in the results.  The host kernel
 * runs on them laid out as the parameters' layouts say and must give the
 * interpreter's results bit for bit, the interpreter sorting in the
 * kernels' stable order (EvalOptions.sort_stable_order: XLA's CPU ties of
 * an unstable sort are another order); the NVPTX kernel of the same module
 * must pass ptxas -arch=sm_90 and, under the SIMT emulator of
 * codegen_test_util.h (clang-19), give the same bits.
 */
#include <criterion/criterion.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "codegen_test_util.h"

TestSuite(codegen_sort, .fini = teardown, .timeout = 300);

/* Plants ties and special values into a random literal of floats or ints. */
static void plant(Literal *l, uint64_t seed) {
  const Shape *s = l->shape;
  int64_t n = shape_elements(s);
  uint64_t r = seed * 0x9E3779B97F4A7C15ull + 1;
  for (int64_t k = 0; k < n; k++) {
    r = r * 6364136223846793005ull + 1442695040888963407ull;
    unsigned pick = (unsigned)(r >> 59);  /* 0..31 */
    if (pick >= 10)
      continue;
    if (s->et == ET_F32) {
      static const float sp[10] = {0.25f, 0.25f, -0.5f, 0.0f, -0.0f, INFINITY,
                                   -INFINITY, 0.25f, 0.0f, -0.0f};
      float v = sp[pick];
      uint32_t nan = 0x7fc00000u | (uint32_t)(r >> 40 & 0xff);
      if (pick == 7)
        memcpy(&v, &nan, 4);
      if (pick == 8) {
        nan |= 0x80000000u;
        memcpy(&v, &nan, 4);
      }
      if (pick == 9) {              /* signaling NaN: its bits must survive */
        nan = 0x7fa00000u | (uint32_t)(r >> 40 & 0xff);
        memcpy(&v, &nan, 4);
      }
      memcpy(l->data + k * 4, &v, 4);
    } else if (s->et == ET_S32) {
      int32_t v = (int32_t)pick % 3;
      memcpy(l->data + k * 4, &v, 4);
    } else if (s->et == ET_F16) {
      static const uint16_t sp[5] = {0x3c00, 0x8000, 0x0000, 0x7d01, 0xfe00};
      memcpy(l->data + k * 2, &sp[pick % 5], 2);
    } else if (s->et == ET_BF16) {
      static const uint16_t sp[5] = {0x3e80, 0x8000, 0x0000, 0x7fc1, 0xffc0};
      memcpy(l->data + k * 2, &sp[pick % 5], 2);
    }
  }
}

static void fill_garbage(void *buf, const Shape *s) {
  int64_t n = shape_elements(s);
  memset(buf, 0xA5, (size_t)(n > 0 ? n : 1) * (size_t)et_bytes(s->et));
}

/* Host kernel, interpreter and (emulate) the emulated GPU kernel on the
 * same planted inputs: every output bit for bit equal; the PTX passes
 * ptxas. */
static void check_on(const char *hlo, bool emulate) {
  HloModule *m = parse(hlo);
  snprintf(Dir, sizeof Dir, "/tmp/xhloc-sort-XXXXXX");
  cr_assert(mkdtemp(Dir), "mkdtemp");
  const HloInstr *ki = m->entry->root;
  int np = m->entry->nparams;
  Literal *args[16];
  void *bufs[64];
  int nb = 0;
  cr_assert(np <= 16);
  for (int k = 0; k < np; k++) {
    const Shape *s = m->entry->params[k]->shape;
    args[k] = io_random_literal(A, s, 77 + (uint64_t)k, -1);
    cr_assert(args[k]);
    plant(args[k], 5 + (uint64_t)k);
  }
  for (int k = 0; k < ki->nops; k++) {
    cr_assert(ki->ops[k]->op == HLO_PARAMETER);
    bufs[nb++] = to_physical(args[ki->ops[k]->param_number], ki->ops[k]->shape);
  }
  PtrVec leaves = {0};
  io_shape_leaves(ki->shape, &leaves);
  int out0 = nb;
  for (int k = 0; k < leaves.len; k++) {
    const Shape *s = leaves.data[k];
    int64_t n = shape_elements(s);
    bufs[nb] = calloc((size_t)(n > 0 ? n : 1), (size_t)et_bytes(s->et));
    fill_garbage(bufs[nb], s);
    nb++;
  }
  EvalOptions eo;
  eval_options_default(&eo);
  eo.sort_stable_order = true;    /* the kernels' order, not XLA's ties */
  Literal *expect;
  cr_assert(eval_module(m, np, args, A, &eo, &expect, &D, NULL), "eval: %s", D.msg);
  Literal **el;
  int nel = io_literal_leaves(expect, &el);
  cr_assert_eq(nel, leaves.len);
  run_host("sort_test", ki, bufs);
  for (int k = 0; k < leaves.len; k++) {
    char what[32];
    snprintf(what, sizeof what, "host output %d", k);
    compare_out(bufs[out0 + k], leaves.data[k], el[k], 0, 0, what);
    /* bit for bit: NaN payloads and -0 included */
    void *want = to_physical(el[k], leaves.data[k]);
    cr_expect(memcmp(want, bufs[out0 + k], (size_t)shape_byte_size(leaves.data[k])) == 0,
              "host output %d differs in its bits", k);
    free(want);
  }
  if (emulate && have_clang()) {
    for (int k = 0; k < leaves.len; k++)
      fill_garbage(bufs[out0 + k], leaves.data[k]);
    LaunchDims ld;
    run_emulated_kernel("sort_emu", ki, bufs, nb, &ld);
    for (int k = 0; k < leaves.len; k++) {
      void *want = to_physical(el[k], leaves.data[k]);
      cr_expect(memcmp(want, bufs[out0 + k], (size_t)shape_byte_size(leaves.data[k])) == 0,
                "emulated GPU output %d differs in its bits", k);
      free(want);
    }
  }
  for (int k = 0; k < nb; k++) free(bufs[k]);
  free(el);
  vec_free(&leaves);
  check_ptx_launch("sort_ptx", ki);
}

static void check(const char *hlo) {
  check_on(hlo, true);
}

/* jnp.sort's comparator: NaN canonicalized (all NaNs equal, last), -0 as
 * +0, total order. */
#define JNP_LT_F32                                                             \
  "lt {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n"                 \
  "  qnan = f32[] constant(nan)\n  z = f32[] constant(0)\n"                     \
  "  an = pred[] compare(a, a), direction=NE\n"                                \
  "  az = pred[] compare(a, z), direction=EQ\n"                                \
  "  a0 = f32[] select(az, z, a)\n  a1 = f32[] select(an, qnan, a0)\n"          \
  "  bn = pred[] compare(b, b), direction=NE\n"                                \
  "  bz = pred[] compare(b, z), direction=EQ\n"                                \
  "  b0 = f32[] select(bz, z, b)\n  b1 = f32[] select(bn, qnan, b0)\n"          \
  "  ROOT r = pred[] compare(a1, b1), direction=LT, type=TOTALORDER\n}\n"

/*
 * sort
 */
Test(codegen_sort, jnp_sort_rows_with_nans_and_zeros) {
  /* -0 and +0 compare equal, so only a stable sort keeps their bits where
   * the interpreter puts them */
  check("HloModule m\n" JNP_LT_F32
        "ws {\n  p = f32[5,300] parameter(0)\n"
        "  ROOT s = f32[5,300] sort(p), dimensions={1}, is_stable=true, to_apply=lt\n}\n"
        "ENTRY e {\n  x = f32[5,300] parameter(0)\n"
        "  ROOT f = f32[5,300] fusion(x), kind=kLoop, calls=ws\n}\n");
}

Test(codegen_sort, plain_lt_with_nans_matches_interpreter) {
  /* IEEE less-than: NaNs are incomparable with everything (no strict weak
   * order), every order of them is a valid sort; the host kernel makes the
   * interpreter's comparisons and so picks its order.  The GPU network
   * may pick another: not emulated. */
  check_on("HloModule m\n"
        "lt {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n"
        "  ROOT r = pred[] compare(a, b), direction=LT\n}\n"
        "ENTRY e {\n  x = f32[3,77] parameter(0)\n"
        "  ROOT s = f32[3,77] sort(x), dimensions={1}, is_stable=false, to_apply=lt\n}\n",
           false);
}

Test(codegen_sort, key_values_along_dim0_with_layouts) {
  /* s32 keys with many ties, two value operands, sorted along the major
   * dimension; operands and results in different layouts */
  check("HloModule m\n"
        "gt {\n  a = s32[] parameter(0)\n  b = s32[] parameter(1)\n"
        "  c = f32[] parameter(2)\n  d = f32[] parameter(3)\n"
        "  e = bf16[] parameter(4)\n  f = bf16[] parameter(5)\n"
        "  ROOT r = pred[] compare(a, b), direction=GT\n}\n"
        "ws {\n  k = s32[41,6]{0,1} parameter(0)\n  v = f32[41,6]{1,0} parameter(1)\n"
        "  w = bf16[41,6]{0,1} parameter(2)\n"
        "  ROOT s = (s32[41,6]{1,0}, f32[41,6]{0,1}, bf16[41,6]{1,0}) sort(k, v, w), "
        "dimensions={0}, is_stable=true, to_apply=gt\n}\n"
        "ENTRY e {\n  k = s32[41,6]{0,1} parameter(0)\n  v = f32[41,6]{1,0} parameter(1)\n"
        "  w = bf16[41,6]{0,1} parameter(2)\n"
        "  ROOT f = (s32[41,6]{1,0}, f32[41,6]{0,1}, bf16[41,6]{1,0}) fusion(k, v, w), "
        "kind=kLoop, calls=ws\n}\n");
}

Test(codegen_sort, two_keys_middle_dimension) {
  /* lexicographic comparator over two operands, rank 3, sort dim 1 */
  check("HloModule m\n"
        "lex {\n  a = s32[] parameter(0)\n  b = s32[] parameter(1)\n"
        "  c = f32[] parameter(2)\n  d = f32[] parameter(3)\n"
        "  lt = pred[] compare(a, b), direction=LT\n"
        "  eq = pred[] compare(a, b), direction=EQ\n"
        "  lt2 = pred[] compare(c, d), direction=LT, type=TOTALORDER\n"
        "  t = pred[] and(eq, lt2)\n"
        "  ROOT r = pred[] or(lt, t)\n}\n"
        "ENTRY e {\n  k = s32[2,50,3] parameter(0)\n  v = f32[2,50,3] parameter(1)\n"
        "  ROOT s = (s32[2,50,3], f32[2,50,3]) sort(k, v), dimensions={1}, "
        "to_apply=lex\n}\n");
}

Test(codegen_sort, comparator_calling_a_fusion) {
  /* an XLA:GPU dump's comparator whose body is a fusion of scalars (argsort
   * with its index tie-break): the fusion's computation is applied to the
   * comparator's values */
  check("HloModule m\n"
        "fc {\n  p0 = s32[] parameter(0)\n  p1 = s32[] parameter(1)\n"
        "  p2 = s32[] parameter(2)\n  p3 = s32[] parameter(3)\n"
        "  c6 = pred[] compare(p3, p2), direction=LT\n"
        "  c5 = pred[] compare(p2, p3), direction=LT\n"
        "  c4 = pred[] compare(c6, c5), direction=EQ\n"
        "  c3 = pred[] compare(p0, p1), direction=LT\n"
        "  ROOT s = pred[] select(c4, c3, c6)\n}\n"
        "lt {\n  a = s32[] parameter(0)\n  b = s32[] parameter(1)\n"
        "  i = s32[] parameter(2)\n  j = s32[] parameter(3)\n"
        "  ROOT f = pred[] fusion(i, j, b, a), kind=kLoop, calls=fc\n}\n"
        "ENTRY e {\n  k = s32[3,70] parameter(0)\n  v = s32[3,70] parameter(1)\n"
        "  ROOT s = (s32[3,70], s32[3,70]) sort(k, v), dimensions={1}, is_stable=true, "
        "to_apply=lt\n}\n");
}

Test(codegen_sort, bf16_descending_short_rows) {
  check("HloModule m\n"
        "gt {\n  a = bf16[] parameter(0)\n  b = bf16[] parameter(1)\n"
        "  ROOT r = pred[] compare(a, b), direction=GT, type=TOTALORDER\n}\n"
        "ENTRY e {\n  x = bf16[9,3] parameter(0)\n"
        "  ROOT s = bf16[9,3] sort(x), dimensions={1}, to_apply=gt\n}\n");
}

Test(codegen_sort, f16_single_operand_keeps_nan_bits) {
  /* a single operand is sorted as raw values on the host: signaling NaNs
   * (0x7d01) keep their bits; not emulated (clang -O0 calls compiler-rt
   * for half) */
  check_on("HloModule m\n"
           "gt {\n  a = f16[] parameter(0)\n  b = f16[] parameter(1)\n"
           "  ROOT r = pred[] compare(a, b), direction=GT, type=TOTALORDER\n}\n"
           "ENTRY e {\n  x = f16[4,100] parameter(0)\n"
           "  ROOT s = f16[4,100] sort(x), dimensions={1}, to_apply=gt\n}\n",
           false);
}

Test(codegen_sort, row_with_values_beyond_shared_memory) {
  /* 5000 f32: the 8192-entry permutation fits in shared memory, a copy of
   * the row besides it does not; values are read from the operand */
  check("HloModule m\n" JNP_LT_F32
        "ENTRY e {\n  x = f32[2,5000] parameter(0)\n"
        "  ROOT s = f32[2,5000] sort(x), dimensions={1}, to_apply=lt\n}\n");
}

Test(codegen_sort, row_beyond_shared_memory_uses_scratch) {
  /* 9000 > 8192 positions: the GPU network runs in the scratch buffer */
  check("HloModule m\n" JNP_LT_F32
        "ENTRY e {\n  x = f32[2,9000] parameter(0)\n"
        "  ROOT s = f32[2,9000] sort(x), dimensions={1}, is_stable=true, to_apply=lt\n}\n");
}

Test(codegen_sort, gpu_scratch_size_and_launch) {
  HloModule *m = parse("HloModule m\n" JNP_LT_F32
                       "ENTRY e {\n  x = f32[3,9000] parameter(0)\n"
                       "  ROOT s = f32[3,9000] sort(x), dimensions={1}, to_apply=lt\n}\n");
  Codegen *cg = new_codegen("sort_dims", CG_TARGET_NVPTX);
  LaunchDims ld;
  cr_assert(codegen_kernel(cg, m->entry->root, "kern", &ld, &D), "%s", D.msg);
  cr_expect_eq(ld.grid[0], 3);
  cr_expect_eq(ld.block[0], 1024);
  cr_expect_eq(ld.temp_bytes, 3 * 16384 * 4);
  codegen_free(cg);
  cg = new_codegen("sort_dims_host", CG_TARGET_HOST);
  cr_assert(codegen_kernel(cg, m->entry->root, "kern", &ld, &D), "%s", D.msg);
  cr_expect_eq(ld.temp_bytes, (int64_t)ld.grid[0] * 2 * 9000 * 4);
  codegen_free(cg);
}

Test(codegen_sort, refuses_fused_producer) {
  check_refused("HloModule m\n"
                "lt {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n"
                "  ROOT r = pred[] compare(a, b), direction=LT\n}\n"
                "ws {\n  p = f32[4,8] parameter(0)\n  n = f32[4,8] negate(p)\n"
                "  ROOT s = f32[4,8] sort(n), dimensions={1}, to_apply=lt\n}\n"
                "ENTRY e {\n  x = f32[4,8] parameter(0)\n"
                "  ROOT f = f32[4,8] fusion(x), kind=kLoop, calls=ws\n}\n",
                "fused operand");
}

/*
 * top-k
 */
Test(codegen_sort, topk_largest_with_nans) {
  check("HloModule m\n"
        "wt {\n  p = f32[7,200] parameter(0)\n"
        "  ROOT t = (f32[7,5], s32[7,5]) topk(p), k=5, largest=true\n}\n"
        "ENTRY e {\n  x = f32[7,200] parameter(0)\n"
        "  ROOT f = (f32[7,5], s32[7,5]) fusion(x), kind=kLoop, calls=wt\n}\n");
}

Test(codegen_sort, topk_smallest_ints_rank3_layout) {
  check("HloModule m\n"
        "ENTRY e {\n  x = s32[2,3,40]{1,2,0} parameter(0)\n"
        "  ROOT t = (s32[2,3,7]{2,1,0}, s32[2,3,7]{0,1,2}) topk(x), k=7, largest=false\n}\n");
}

Test(codegen_sort, topk_bf16_k_equals_n) {
  /* not emulated: clang -O0 lowers the bfloat copies through compiler-rt's
   * __truncsfbf2, which the emulator does not link */
  check_on("HloModule m\n"
        "ENTRY e {\n  x = bf16[4,6] parameter(0)\n"
        "  ROOT t = (bf16[4,6], s32[4,6]) topk(x), k=6, largest=true\n}\n",
           false);
}

Test(codegen_sort, custom_call_topk_four_params) {
  check("HloModule m\n"
        "cmp {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n"
        "  i = s32[] parameter(2)\n  j = s32[] parameter(3)\n"
        "  ROOT r = pred[] compare(a, b), direction=GT, type=TOTALORDER\n}\n"
        "ENTRY e {\n  x = f32[3,100] parameter(0)\n"
        "  ROOT t = (f32[3,16], s32[3,16]) custom-call(x), custom_call_target=\"TopK\", "
        "to_apply=cmp\n}\n");
}

Test(codegen_sort, custom_call_topk_1d_two_params) {
  /* a total order: with IEEE greater-than (no strict weak order on NaNs)
   * the selection may keep other elements than the interpreter's sort */
  check("HloModule m\n"
        "cmp {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n"
        "  ROOT r = pred[] compare(a, b), direction=GT, type=TOTALORDER\n}\n"
        "ENTRY e {\n  x = f32[300] parameter(0)\n"
        "  ROOT t = (f32[4], s32[4]) custom-call(x), custom_call_target=\"TopK\", "
        "to_apply=cmp\n}\n");
}

Test(codegen_sort, custom_call_topk_refuses_three_params) {
  check_refused("HloModule m\n"
                "cmp {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n"
                "  i = s32[] parameter(2)\n"
                "  ROOT r = pred[] compare(a, b), direction=GT\n}\n"
                "ENTRY e {\n  x = f32[2,30] parameter(0)\n"
                "  ROOT t = (f32[2,3], s32[2,3]) custom-call(x), custom_call_target=\"TopK\", "
                "to_apply=cmp\n}\n",
                "arity");
}

Test(codegen_sort, custom_call_topk_without_comparator_is_greatest_first) {
  check("HloModule m\n"
        "ENTRY e {\n  x = f32[5,64] parameter(0)\n"
        "  ROOT t = (f32[5,8], s32[5,8]) custom-call(x), custom_call_target=\"TopK\"\n}\n");
}

Test(codegen_sort, topk_block_per_row_on_gpu) {
  /* rows of 1000: on the GPU a block of 128 threads per row, each
   * selecting from every 128th element, then thread 0 from their
   * candidates; planted ties and NaNs must keep the interpreter's order */
  check("HloModule m\n"
        "ENTRY e {\n  x = f32[3,1000] parameter(0)\n"
        "  ROOT t = (f32[3,16], s32[3,16]) topk(x), k=16, largest=true\n}\n");
}

Test(codegen_sort, topk_block_per_row_int_ties) {
  /* s32 in {0, 1, 2} mostly: the k smallest are all ties */
  check("HloModule m\n"
        "ENTRY e {\n  x = s32[2,700] parameter(0)\n"
        "  ROOT t = (s32[2,9], s32[2,9]) topk(x), k=9, largest=false\n}\n");
}
