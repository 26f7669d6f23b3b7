/*
 * test_routine.c - the host runtime's routines (lib/runtime/routine.h,
 * routine_host.c) and the plans that choose them (emitters/host_routine.c).
 *
 * Each case is a module whose entry root is one reduce or top-k (or a
 * fusion of one): host_routine_plan must accept it (or refuse it, for the
 * shapes it leaves to kernels); the routine runs on random inputs, with
 * NaNs, infinities, signed zeros and ties mixed in, laid out physically as
 * the parameter's layout says, and its outputs are compared with the
 * interpreter's (lib/eval) on the same inputs: top-k and the in-order
 * column reductions bit for bit, row sums within a float tolerance (they
 * are reassociated).  Every case runs again on a pool of three threads,
 * which must give the same bits.
 */
#include <criterion/criterion.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../../emitters/host_routine.h"
#include "../../lib/runtime/thread_pool.h"
#include "../../lib/runtime/thunks.h"
#include "codegen_test_util.h"

TestSuite(routine, .fini = teardown);

#define ADD_F32                                                                \
  "add {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n"                \
  "  ROOT s = f32[] add(a, b)\n}\n"
#define MAX_F32                                                                \
  "mx {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n"                 \
  "  ROOT s = f32[] maximum(a, b)\n}\n"
#define MIN_F32                                                                \
  "mn {\n  a = f32[] parameter(1)\n  b = f32[] parameter(0)\n"                 \
  "  ROOT s = f32[] minimum(a, b)\n}\n"

/* Every `every`-th element of l (f32) becomes one of the special values
 * (NaN, -NaN, +-inf, +-0) or a copy of an earlier element (a tie). */
static void specials(Literal *l, int64_t n, int every) {
  float *v = (float *)l->data;
  static const uint32_t bits[] = {0x7fc00000u, 0xffc00001u, 0x7f800000u, 0xff800000u,
                                  0x00000000u, 0x80000000u};
  for (int64_t k = 3; every > 0 && k < n; k += every) {
    int what = (int)((k / every) % 8);
    if (what < 6)
      memcpy(&v[k], &bits[what], 4);
    else
      v[k] = v[k / 2];
  }
}

/* Whether two floats are the same value: equal, both NaN, or bit for bit
 * (exact). */
static bool same(float a, float b, bool exact) {
  if (exact)
    return memcmp(&a, &b, 4) == 0 || (a != a && b != b);
  return a == b || (a != a && b != b);
}

/* Runs r with s[] under a NULL pool and a pool of 3 threads; the two
 * results must be the same bytes.  out: the result buffers (outs of them,
 * bytes[k] each). */
static void run_both(const RoutineDesc *r, void **s, int outs, const size_t *bytes) {
  routine_run(r, s, NULL);
  void *first[2];
  for (int k = 0; k < outs; k++) {
    first[k] = malloc(bytes[k]);
    memcpy(first[k], s[ROUTINE_Y + k], bytes[k]);
    memset(s[ROUTINE_Y + k], 0xA5, bytes[k]);
  }
  ThreadPool *pool = thread_pool_new(3);
  routine_run(r, s, pool);
  thread_pool_free(pool);
  for (int k = 0; k < outs; k++) {
    cr_assert(memcmp(first[k], s[ROUTINE_Y + k], bytes[k]) == 0,
              "result %d differs on 3 threads", k);
    free(first[k]);
  }
}

/* The case: plan, run, compare.  every: specials() spacing (0: none);
 * rtol: for the row sums, of the result's magnitude or 1 (0: the values
 * must be the same; the sums of thousands of random terms in another
 * order differ by a few 1e-5). */
static void check(const char *hlo, int every, double rtol) {
  HloModule *m = parse(hlo);
  const HloInstr *ki = m->entry->root;
  RoutineDesc r;
  int xop;
  cr_assert(host_routine_plan(ki, &r, &xop), "no routine for the root");
  const Shape *xs = ki->ops[xop]->shape;
  cr_assert(ki->ops[xop]->op == HLO_PARAMETER);
  int np = m->entry->nparams;
  Literal *args[4];
  for (int k = 0; k < np; k++) {
    args[k] = io_random_literal(A, m->entry->params[k]->shape, 77 + (uint64_t)k, -1);
    if (k == ki->ops[xop]->param_number)
      specials(args[k], shape_elements(xs), every);
  }
  Literal **el;
  int nel = eval_leaves(m, np, args, &el);
  PtrVec leaves = {0};
  io_shape_leaves(ki->shape, &leaves);
  cr_assert_eq(nel, leaves.len);

  void *s[ROUTINE_NSLICES] = {0};
  size_t bytes[2];
  s[ROUTINE_X] = to_physical(args[ki->ops[xop]->param_number], xs);
  for (int k = 0; k < leaves.len; k++) {
    const Shape *ls = leaves.data[k];
    bytes[k] = (size_t)shape_elements(ls) * (size_t)et_bytes(ls->et);
    s[ROUTINE_Y + k] = malloc(bytes[k]);
  }
  run_both(&r, s, leaves.len, bytes);

  for (int k = 0; k < leaves.len; k++) {
    const Shape *ls = leaves.data[k];
    Literal *got = literal_new(A, (Shape *)ls);
    from_physical(s[ROUTINE_Y + k], ls, got);
    int64_t n = shape_elements(ls);
    for (int64_t j = 0; j < n; j++) {
      if (ls->et == ET_S32) {
        int32_t a, b;
        memcpy(&a, got->data + 4 * j, 4);
        memcpy(&b, el[k]->data + 4 * j, 4);
        cr_assert_eq(a, b, "index %lld of output %d: %d, want %d", (long long)j, k, a, b);
        continue;
      }
      float a, b;
      memcpy(&a, got->data + 4 * j, 4);
      memcpy(&b, el[k]->data + 4 * j, 4);
      bool ok = same(a, b, r.kind == ROUTINE_TOPK);
      if (!ok && rtol > 0 && a == a && b == b)
        ok = fabs((double)a - b) <= rtol * fmax(1.0, fabs((double)b));
      cr_assert(ok, "element %lld of output %d: %.9g, want %.9g", (long long)j, k, a, b);
    }
  }
  for (int k = 0; k < ROUTINE_NSLICES; k++)
    free(s[k]);
  free(el);
  vec_free(&leaves);
}

static void refused(const char *hlo) {
  HloModule *m = parse(hlo);
  RoutineDesc r;
  int xop;
  cr_assert_not(host_routine_plan(m->entry->root, &r, &xop), "a routine for the root");
}

/*
 * Reductions
 */
Test(routine, row_sums) {
  /* 4101: the 32-wide loop, the 4-wide one and a scalar tail */
  check("HloModule m\n" ADD_F32
        "ENTRY e {\n  x = f32[37,4101] parameter(0)\n  z = f32[] constant(0.5)\n"
        "  ROOT r = f32[37] reduce(x, z), dimensions={1}, to_apply=add\n}\n",
        0, 1e-3);
}

Test(routine, row_sums_with_nan_and_inf) {
  check("HloModule m\n" ADD_F32
        "ENTRY e {\n  x = f32[64,130] parameter(0)\n  z = f32[] constant(0)\n"
        "  ROOT r = f32[64] reduce(x, z), dimensions={1}, to_apply=add\n}\n",
        997, 1e-3);
}

Test(routine, row_max_and_min_with_specials) {
  check("HloModule m\n" MAX_F32
        "ENTRY e {\n  x = f32[50,301] parameter(0)\n  z = f32[] constant(-inf)\n"
        "  ROOT r = f32[50] reduce(x, z), dimensions={1}, to_apply=mx\n}\n",
        211, 0);
  check("HloModule m\n" MIN_F32
        "ENTRY e {\n  x = f32[50,301] parameter(0)\n  z = f32[] constant(inf)\n"
        "  ROOT r = f32[50] reduce(x, z), dimensions={1}, to_apply=mn\n}\n",
        173, 0);
}

Test(routine, full_reduction) {
  check("HloModule m\n" ADD_F32
        "ENTRY e {\n  x = f32[70,90] parameter(0)\n  z = f32[] constant(0)\n"
        "  ROOT r = f32[] reduce(x, z), dimensions={0,1}, to_apply=add\n}\n",
        0, 1e-3);
}

Test(routine, column_sums_in_order) {
  /* 301 columns: two tiles, the second with single vectors and columns */
  check("HloModule m\n" ADD_F32
        "ENTRY e {\n  x = f32[45,301] parameter(0)\n  z = f32[] constant(-1.25)\n"
        "  ROOT r = f32[301] reduce(x, z), dimensions={0}, to_apply=add\n}\n",
        389, 0);
}

Test(routine, column_max_and_min_with_specials) {
  check("HloModule m\n" MAX_F32
        "ENTRY e {\n  x = f32[130,96] parameter(0)\n  z = f32[] constant(-inf)\n"
        "  ROOT r = f32[96] reduce(x, z), dimensions={0}, to_apply=mx\n}\n",
        101, 0);
  check("HloModule m\n" MIN_F32
        "ENTRY e {\n  x = f32[17,1030] parameter(0)\n  z = f32[] constant(3)\n"
        "  ROOT r = f32[1030] reduce(x, z), dimensions={0}, to_apply=mn\n}\n",
        53, 0);
}

Test(routine, middle_dimensions) {
  /* [3, 20*40, 70]: outer 3, inner 70 */
  check("HloModule m\n" ADD_F32
        "ENTRY e {\n  x = f32[3,20,40,70] parameter(0)\n  z = f32[] constant(0)\n"
        "  ROOT r = f32[3,70] reduce(x, z), dimensions={1,2}, to_apply=add\n}\n",
        0, 0);
}

Test(routine, layouts) {
  /* dimension 0 is minor in memory: a row reduction */
  check("HloModule m\n" MAX_F32
        "ENTRY e {\n  x = f32[700,9]{0,1} parameter(0)\n  z = f32[] constant(-inf)\n"
        "  ROOT r = f32[9] reduce(x, z), dimensions={0}, to_apply=mx\n}\n",
        61, 0);
  /* the kept dimensions in the same physical order, size-1 ones anywhere */
  check("HloModule m\n" ADD_F32
        "ENTRY e {\n  x = f32[8,1,30,40]{2,1,3,0} parameter(0)\n  z = f32[] constant(0)\n"
        "  ROOT r = f32[8,1,40]{1,2,0} reduce(x, z), dimensions={2}, to_apply=add\n}\n",
        0, 1e-3);
}

Test(routine, fused_reduce) {
  check("HloModule m\n" ADD_F32
        "fused {\n  p = f32[16,512] parameter(0)\n  z = f32[] constant(0)\n"
        "  ROOT r = f32[16] reduce(p, z), dimensions={1}, to_apply=add\n}\n"
        "ENTRY e {\n  x = f32[16,512] parameter(0)\n"
        "  ROOT f = f32[16] fusion(x), kind=kInput, calls=fused\n}\n",
        0, 1e-3);
}

Test(routine, reductions_left_to_kernels) {
  /* too small for XLA's library (4096 elements) */
  refused("HloModule m\n" ADD_F32
          "ENTRY e {\n  x = f32[16,16] parameter(0)\n  z = f32[] constant(0)\n"
          "  ROOT r = f32[16] reduce(x, z), dimensions={1}, to_apply=add\n}\n");
  /* reduced dimensions not consecutive in memory */
  refused("HloModule m\n" ADD_F32
          "ENTRY e {\n  x = f32[16,16,16] parameter(0)\n  z = f32[] constant(0)\n"
          "  ROOT r = f32[16] reduce(x, z), dimensions={0,2}, to_apply=add\n}\n");
  /* the result's layout transposes the kept dimensions */
  refused("HloModule m\n" ADD_F32
          "ENTRY e {\n  x = f32[16,16,16] parameter(0)\n  z = f32[] constant(0)\n"
          "  ROOT r = f32[16,16]{0,1} reduce(x, z), dimensions={1}, to_apply=add\n}\n");
  /* an init value that is not a constant */
  refused("HloModule m\n" ADD_F32
          "ENTRY e {\n  x = f32[64,64] parameter(0)\n  z = f32[] parameter(1)\n"
          "  ROOT r = f32[64] reduce(x, z), dimensions={1}, to_apply=add\n}\n");
  /* f64 (no routine yet) */
  refused("HloModule m\n"
          "add {\n  a = f64[] parameter(0)\n  b = f64[] parameter(1)\n"
          "  ROOT s = f64[] add(a, b)\n}\n"
          "ENTRY e {\n  x = f64[64,64] parameter(0)\n  z = f64[] constant(0)\n"
          "  ROOT r = f64[64] reduce(x, z), dimensions={1}, to_apply=add\n}\n");
  /* an epilogue in the fusion */
  refused("HloModule m\n" ADD_F32
          "fused {\n  p = f32[64,64] parameter(0)\n  z = f32[] constant(0)\n"
          "  r = f32[64] reduce(p, z), dimensions={1}, to_apply=add\n"
          "  ROOT n = f32[64] negate(r)\n}\n"
          "ENTRY e {\n  x = f32[64,64] parameter(0)\n"
          "  ROOT f = f32[64] fusion(x), kind=kInput, calls=fused\n}\n");
}

/*
 * Top-k
 */
Test(routine, topk_largest_with_ties_and_specials) {
  check("HloModule m\n"
        "ENTRY e {\n  x = f32[33,1001] parameter(0)\n"
        "  ROOT t = (f32[33,16], s32[33,16]) topk(x), k=16, largest=true\n}\n",
        7, 0);
}

Test(routine, topk_smallest) {
  check("HloModule m\n"
        "ENTRY e {\n  x = f32[9,300] parameter(0)\n"
        "  ROOT t = (f32[9,5], s32[9,5]) topk(x), k=5, largest=false\n}\n",
        5, 0);
}

Test(routine, topk_k_one_and_whole_row) {
  check("HloModule m\n"
        "ENTRY e {\n  x = f32[4,3,70] parameter(0)\n"
        "  ROOT t = (f32[4,3,1], s32[4,3,1]) topk(x), k=1, largest=true\n}\n",
        11, 0);
  check("HloModule m\n"
        "ENTRY e {\n  x = f32[6,150] parameter(0)\n"
        "  ROOT t = (f32[6,150], s32[6,150]) topk(x), k=150, largest=true\n}\n",
        3, 0);
}

Test(routine, topk_fused_and_refused) {
  check("HloModule m\n"
        "wrapped {\n  p = f32[5,4096] parameter(0)\n"
        "  ROOT t = (f32[5,8], s32[5,8]) topk(p), k=8, largest=true\n}\n"
        "ENTRY e {\n  x = f32[5,4096] parameter(0)\n"
        "  ROOT f = (f32[5,8], s32[5,8]) fusion(x), kind=kLoop, calls=wrapped\n}\n",
        13, 0);
  /* the row is not the minor-most dimension */
  refused("HloModule m\n"
          "ENTRY e {\n  x = f32[9,300]{0,1} parameter(0)\n"
          "  ROOT t = (f32[9,5]{0,1}, s32[9,5]{0,1}) topk(x), k=5, largest=true\n}\n");
  /* not f32 */
  refused("HloModule m\n"
          "ENTRY e {\n  x = s32[9,300] parameter(0)\n"
          "  ROOT t = (s32[9,5], s32[9,5]) topk(x), k=5, largest=true\n}\n");
}

/*
 * Descriptor checks
 */
Test(routine, check_refuses_bad_descriptors) {
  Diag d = {0};
  BufSlice lib[LIB_MAX_SLICES];
  for (int k = 0; k < LIB_MAX_SLICES; k++)
    lib[k] = (BufSlice){-1, 0, 0};
  lib[ROUTINE_X] = (BufSlice){0, 0, 4 * 6};
  lib[ROUTINE_Y] = (BufSlice){1, 0, 4 * 2};
  RoutineDesc r = {.kind = ROUTINE_REDUCE, .et = ET_F32, .op = ROUTINE_ADD,
                   .outer = 2, .size = 3, .inner = 1};
  cr_assert(routine_check(&r, lib, &d), "%s", d.msg);
  r.size = 4;
  cr_assert_not(routine_check(&r, lib, &d));
  cr_assert(strstr(d.msg, "input slice has 24 bytes"), "%s", d.msg);
  diag_clear(&d);
  r.size = 3;
  r.init = NAN;
  cr_assert_not(routine_check(&r, lib, &d));
  diag_clear(&d);
  r.init = 0.1;                   /* not an f32 value */
  cr_assert_not(routine_check(&r, lib, &d));
  diag_clear(&d);
  r.init = 0;
  r.et = ET_F64;
  cr_assert_not(routine_check(&r, lib, &d));
  diag_clear(&d);
  r.et = ET_F32;
  lib[ROUTINE_INDICES] = (BufSlice){2, 0, 8};
  cr_assert_not(routine_check(&r, lib, &d));
  diag_clear(&d);
  RoutineDesc t = {.kind = ROUTINE_TOPK, .et = ET_F32, .rows = 2, .n = 3, .k = 1};
  lib[ROUTINE_INDICES] = (BufSlice){2, 0, 8};
  cr_assert(routine_check(&t, lib, &d), "%s", d.msg);
  t.k = 4;                        /* more than the row */
  cr_assert_not(routine_check(&t, lib, &d));
  diag_clear(&d);
  t.k = 1;
  lib[ROUTINE_INDICES].alloc = -1;
  cr_assert_not(routine_check(&t, lib, &d));
  cr_assert(strstr(d.msg, "indices slice is missing"), "%s", d.msg);
  diag_clear(&d);
}
