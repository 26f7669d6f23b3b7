/*
 * test_eval.c - unit tests of the interpreter's API (lib/eval): budgets and
 * the kinds of refusal, argument checking, dead-value freeing, the `rng` op
 * (properties only: its values are not reproducible across
 * implementations), the scalar-computation fallback, and the literal I/O
 * helpers the drivers use (input specs, comparison, random inputs and index
 * bounds).  Op semantics are covered by the golden tests (check-eval.sh).
 */
#include <criterion/criterion.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../../lib/eval/eval.h"

static HloModule **Mods;
static int NMods;
static SrcFile *Src;
static Arena *A;
static Diag D;

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
}

TestSuite(eval, .fini = teardown);

static HloModule *parse(const char *text) {
  Src = srcfile_from_string("test.hlo", text, strlen(text));
  ParseOptions po = {.strip_glog_prefixes = true};
  NMods = hlo_parse(Src, &po, &Mods, &D);
  cr_assert(NMods >= 1, "parse: %s", D.msg);
  cr_assert(hlo_verify(Mods[0], &D), "verify: %s", D.msg);
  A = arena_new();
  return Mods[0];
}

static Literal *input(const char *spec, const Shape *want) {
  Literal *l = io_parse_input(A, spec, want, &D);
  cr_assert(l, "input %s: %s", spec, D.msg);
  return l;
}

static bool run(HloModule *m, int n, Literal **args, const EvalOptions *o,
                Literal **out, EvalStatus *st) {
  return eval_module(m, n, args, A, o, out, &D, st);
}

static const char *chain =
  "HloModule chain\n"
  "ENTRY e {\n"
  "  x = f32[262144] parameter(0)\n"
  "  a = f32[262144] add(x, x)\n"
  "  b = f32[262144] multiply(a, a)\n"
  "  c = f32[262144] add(b, x)\n"
  "  d = f32[262144] subtract(c, a)\n"
  "  e = f32[262144] add(d, d)\n"
  "  f = f32[262144] negate(e)\n"
  "  g = f32[262144] exponential(f)\n"
  "  ROOT h = f32[262144] add(g, g)\n"
  "}\n";

Test(eval, dead_values_are_freed) {
  HloModule *m = parse(chain);
  Literal *x = io_random_literal(A, m->entry->params[0]->shape, 1, -1);
  Literal *out;
  EvalStatus st;
  cr_assert(run(m, 1, &x, NULL, &out, &st), "%s", D.msg);
  /* 1 MiB per array: the argument, at most three live values and the result */
  cr_assert_leq(st.peak_bytes, 5 << 20, "peak %lld", (long long)st.peak_bytes);
  cr_assert_geq(st.peak_bytes, 2 << 20);
}

Test(eval, memory_budget_is_a_resource_error) {
  HloModule *m = parse(chain);
  Literal *x = io_random_literal(A, m->entry->params[0]->shape, 1, -1);
  EvalOptions o;
  eval_options_default(&o);
  o.mem_budget = 2 << 20;
  Literal *out;
  EvalStatus st;
  cr_assert_not(run(m, 1, &x, &o, &out, &st));
  cr_assert_eq(st.kind, EVAL_ERR_RESOURCE);
  cr_assert_str_eq(st.what, "memory");
  cr_assert(strstr(D.msg, "memory budget") != NULL, "%s", D.msg);
}

Test(eval, time_budget_is_a_resource_error) {
  HloModule *m = parse(
    "HloModule forever\n"
    "cond {\n  p = s32[] parameter(0)\n  ROOT t = pred[] constant(true)\n}\n"
    "body {\n  p = s32[] parameter(0)\n  one = s32[] constant(1)\n"
    "  ROOT a = s32[] add(p, one)\n}\n"
    "ENTRY e {\n  z = s32[] constant(0)\n"
    "  ROOT w = s32[] while(z), condition=cond, body=body\n}\n");
  EvalOptions o;
  eval_options_default(&o);
  o.time_budget = 0.2;
  Literal *out;
  EvalStatus st;
  cr_assert_not(run(m, 0, NULL, &o, &out, &st));
  cr_assert_eq(st.kind, EVAL_ERR_RESOURCE);
  cr_assert_str_eq(st.what, "time");
}

Test(eval, unsupported_ops_are_named) {
  HloModule *m = parse(
    "HloModule cc\n"
    "ENTRY e {\n  x = f32[2] parameter(0)\n"
    "  ROOT c = f32[2] custom-call(x), custom_call_target=\"my_kernel\"\n}\n");
  Literal *x = input("2xf32=1 2", NULL);
  Literal *out;
  EvalStatus st;
  cr_assert_not(run(m, 1, &x, NULL, &out, &st));
  cr_assert_eq(st.kind, EVAL_ERR_UNSUPPORTED);
  cr_assert_str_eq(st.what, "custom-call:my_kernel");
  cr_assert(strstr(D.msg, "my_kernel") != NULL);
  cr_assert_eq(D.loc.line, 4);
}

Test(eval, arguments_are_checked) {
  HloModule *m = parse(
    "HloModule args\n"
    "ENTRY e {\n  x = f32[2] parameter(0)\n  ROOT n = f32[2] negate(x)\n}\n");
  Literal *out;
  EvalStatus st;
  cr_assert_not(run(m, 0, NULL, NULL, &out, &st));
  cr_assert_eq(st.kind, EVAL_ERR_INPUT);
  diag_clear(&D);
  Literal *bad = input("3xf32=1 2 3", NULL);
  cr_assert_not(run(m, 1, &bad, NULL, &out, &st));
  cr_assert_eq(st.kind, EVAL_ERR_INPUT);
  cr_assert(strstr(D.msg, "f32[3]") && strstr(D.msg, "f32[2]"), "%s", D.msg);
  diag_clear(&D);
  Literal *ok = input("2xf32=1 -2", NULL);
  cr_assert(run(m, 1, &ok, NULL, &out, &st), "%s", D.msg);
  Literal *want = input("2xf32=-1 2", NULL);
  StrBuf why;
  sb_init(&why);
  cr_assert(io_compare(out, want, 0, 0, &why), "%s", why.s);
  sb_free(&why);
}

Test(eval, rng_op_properties) {
  HloModule *m = parse(
    "HloModule rng\n"
    "ENTRY e {\n"
    "  lo = f32[] constant(-2)\n  hi = f32[] constant(3)\n"
    "  u = f32[10000] rng(lo, hi), distribution=rng_uniform\n"
    "  ilo = s32[] constant(5)\n  ihi = s32[] constant(9)\n"
    "  i = s32[10000] rng(ilo, ihi), distribution=rng_uniform\n"
    "  mu = f32[] constant(1)\n  sd = f32[] constant(2)\n"
    "  n = f32[10000] rng(mu, sd), distribution=rng_normal\n"
    "  ROOT t = (f32[10000], s32[10000], f32[10000]) tuple(u, i, n)\n}\n");
  Literal *out1, *out2, *out3;
  EvalStatus st;
  EvalOptions o;
  eval_options_default(&o);
  cr_assert(run(m, 0, NULL, &o, &out1, &st), "%s", D.msg);
  cr_assert(run(m, 0, NULL, &o, &out2, &st), "%s", D.msg);
  o.rng_seed = 7;
  cr_assert(run(m, 0, NULL, &o, &out3, &st), "%s", D.msg);
  const float *u = (const float *)out1->tuple[0]->data;
  const int32_t *iv = (const int32_t *)out1->tuple[1]->data;
  const float *nv = (const float *)out1->tuple[2]->data;
  double sum = 0, sq = 0, usum = 0;
  int seen[4] = {0};
  for (int k = 0; k < 10000; k++) {
    cr_assert(u[k] >= -2 && u[k] < 3);
    cr_assert(iv[k] >= 5 && iv[k] < 9);
    seen[iv[k] - 5]++;
    usum += u[k];
    sum += nv[k];
    sq += (double)nv[k] * nv[k];
  }
  for (int k = 0; k < 4; k++) cr_assert_gt(seen[k], 2000);
  cr_assert(fabs(usum / 10000 - 0.5) < 0.1);
  double mean = sum / 10000, sdv = sqrt(sq / 10000 - mean * mean);
  cr_assert(fabs(mean - 1) < 0.1 && fabs(sdv - 2) < 0.1, "mean %g sd %g", mean, sdv);
  cr_assert(literal_equal(out1, out2), "two runs, different values");
  /* XLA's keys (lib/hlo/rng_keys.c), not --seed, key the rng */
  cr_assert(literal_equal(out1, out3), "the seed changed the rng's values");
}

Test(eval, rng_keys_are_xlas) {
  /* the keys XLA's CPU (jaxlib 0.10.2) gave a module's first two rngs */
  cr_assert_eq(hlo_rng_key(0), 13448155576104175439ULL);
  cr_assert_eq(hlo_rng_key(1), 5296180084612001234ULL);
  /* post order: the rng under the tuple's first operand comes first, a
   * called computation's before the caller's */
  HloModule *m = parse(
    "HloModule order\n"
    "f {\n  a = f32[] parameter(0)\n  b = f32[] constant(1)\n"
    "  ROOT r = f32[2] rng(a, b), distribution=rng_uniform\n}\n"
    "ENTRY e {\n  a = f32[] constant(0)\n  b = f32[] constant(1)\n"
    "  x = f32[2] rng(a, b), distribution=rng_uniform\n"
    "  y = f32[2] rng(a, b), distribution=rng_uniform\n"
    "  z = f32[2] call(a), to_apply=f\n"
    "  ROOT t = (f32[2], f32[2], f32[2]) tuple(y, x, z)\n}\n");
  HloInstr **order;
  int n = hlo_rng_order(m, &order);
  cr_assert_eq(n, 3);
  cr_assert_str_eq(order[0]->name, "r");
  cr_assert_str_eq(order[1]->name, "y");
  cr_assert_str_eq(order[2]->name, "x");
  free(order);
}

Test(eval, rng_matches_xla_cpu) {
  /* values XLA's CPU gave (jax 0.10.2, compiled first in its process): a
   * uniform f32 rng with an extra (MHLO shape) operand, which XLA's parser
   * takes and its import drops; a u64 one; rng-get-and-update-state starts
   * at 0x7012395 */
  HloModule *m = parse(
    "HloModule xla\n"
    "ENTRY e {\n  a = f32[] constant(0)\n  b = f32[] constant(1)\n"
    "  s = u64[3] constant({2, 4, 8})\n"
    "  r = f32[8] rng(a, b, s), distribution=rng_uniform\n"
    "  st = u64[2] rng-get-and-update-state(), delta=5\n"
    "  ROOT t = (f32[8], u64[2]) tuple(r, st)\n}\n");
  Literal *out;
  EvalStatus st;
  EvalOptions o;
  eval_options_default(&o);
  cr_assert(run(m, 0, NULL, &o, &out, &st), "%s", D.msg);
  static const uint32_t want[8] = {0x3e616048, 0x3f0f4b9a, 0x3ef6f450, 0x3d705d40,
                                   0x3e96deec, 0x3ef2d074, 0x3f2670a4, 0x3e4a6870};
  const uint32_t *got = (const uint32_t *)out->tuple[0]->data;
  for (int k = 0; k < 8; k++)
    cr_assert_eq(got[k], want[k], "element %d: %08x, XLA %08x", k, got[k], want[k]);
  const uint64_t *state = (const uint64_t *)out->tuple[1]->data;
  cr_assert_eq(state[0], 0x7012395u);
  cr_assert_eq(state[1], 0u);
}

Test(eval, general_reducer_matches_native) {
  /* the reducer calls another computation, so it runs through the general
   * interpreter; the order of application must be the same as the native
   * f32 loop's */
  HloModule *m = parse(
    "HloModule reducers\n"
    "add {\n  x = f32[] parameter(0)\n  y = f32[] parameter(1)\n"
    "  ROOT s = f32[] add(x, y)\n}\n"
    "wrapped {\n  x = f32[] parameter(0)\n  y = f32[] parameter(1)\n"
    "  ROOT c = f32[] call(x, y), to_apply=add\n}\n"
    "ENTRY e {\n  x = f32[7,300] parameter(0)\n  z = f32[] constant(0)\n"
    "  a = f32[7] reduce(x, z), dimensions={1}, to_apply=add\n"
    "  b = f32[7] reduce(x, z), dimensions={1}, to_apply=wrapped\n"
    "  ROOT t = (f32[7], f32[7]) tuple(a, b)\n}\n");
  Literal *x = io_random_literal(A, m->entry->params[0]->shape, 3, -1);
  Literal *out;
  EvalStatus st;
  cr_assert(run(m, 1, &x, NULL, &out, &st), "%s", D.msg);
  cr_assert(memcmp(out->tuple[0]->data, out->tuple[1]->data, 7 * 4) == 0);
}

Test(eval, input_specs) {
  int64_t d23[2] = {2, 3};
  Shape *s = shape_array(A = arena_new(), ET_S32, 2, d23);
  Literal *l = input("[[1 2 3][4 5 6]]", s);
  cr_assert_eq(l->shape->et, ET_S32);
  cr_assert_eq(((int32_t *)l->data)[5], 6);
  l = input("2x3xi32=1,2", NULL);
  cr_assert_eq(((int32_t *)l->data)[1], 2);
  cr_assert_eq(((int32_t *)l->data)[2], 0);
  l = input("c64=1.5-2j", NULL);
  cr_assert(((float *)l->data)[0] == 1.5f && ((float *)l->data)[1] == -2.0f);
  l = input("3xpred=true 0 1", NULL);
  cr_assert(l->data[0] == 1 && l->data[1] == 0 && l->data[2] == 1);
  l = input("2xbf16=1 0.1", NULL);
  cr_assert_eq(((uint16_t *)l->data)[1], 0x3dcd);
  cr_assert_null(io_parse_input(A, "2xf32=1 2 3", NULL, &D));
  diag_clear(&D);
  cr_assert_null(io_parse_input(A, "1 2", NULL, &D));
  cr_assert(strstr(D.msg, "give the shape") != NULL);
  diag_clear(&D);
  cr_assert_null(io_parse_input(A, "2xu8=1 -1", NULL, &D));
  diag_clear(&D);
  cr_assert_null(io_parse_input(A, "2xs8=1 1e5x", NULL, &D));
  diag_clear(&D);
}

Test(eval, compare_semantics) {
  A = arena_new();
  StrBuf why;
  sb_init(&why);
  Literal *a = input("4xf32=1 nan inf -0", NULL);
  Literal *b = input("4xf32=1.0001 nan inf 0", NULL);
  cr_assert_not(io_compare(a, b, 0, 0, &why));
  cr_assert(strstr(why.s, "1 of 4 elements differ; first at [0]") != NULL, "%s", why.s);
  sb_clear(&why);
  cr_assert(io_compare(a, b, 1e-3, 0, &why), "%s", why.s);
  cr_assert(io_compare(a, b, 0, 1e-3, &why), "%s", why.s);
  Literal *c = input("4xf32=1 0 inf -0", NULL);
  cr_assert_not(io_compare(a, c, 1e9, 1e9, &why), "NaN must not match a number");
  Literal *d = input("4xs32=1 2 3 4", NULL);
  cr_assert_not(io_compare(a, d, 1e9, 1e9, &why), "types differ");
  sb_free(&why);
}

Test(eval, random_inputs_respect_index_bounds) {
  HloModule *m = parse(
    "HloModule idx\n"
    "inner {\n  x = f32[10,4] parameter(0)\n  i = s64[] parameter(1)\n"
    "  z = s64[] constant(0)\n"
    "  ROOT d = f32[3,4] dynamic-slice(x, i, z), dynamic_slice_sizes={3,4}\n}\n"
    "ENTRY e {\n  x = f32[10,4] parameter(0)\n  i = s32[] parameter(1)\n"
    "  g = s32[5,1] parameter(2)\n  y = f32[8] parameter(3)\n"
    "  c = s64[] convert(i)\n"
    "  f = f32[3,4] fusion(x, c), kind=kLoop, calls=inner\n"
    "  gi = f32[5,2] gather(y, g), offset_dims={1}, collapsed_slice_dims={}, "
    "start_index_map={0}, index_vector_dim=1, slice_sizes={2}\n"
    "  ROOT t = (f32[3,4], f32[5,2]) tuple(f, gi)\n}\n");
  int64_t *bounds;
  int n = io_index_bounds(m, &bounds);
  cr_assert_eq(n, 4);
  cr_assert_eq(bounds[0], -1);
  cr_assert_eq(bounds[1], 7);
  cr_assert_eq(bounds[2], 6);
  cr_assert_eq(bounds[3], -1);
  Literal *g = io_random_literal(A, m->entry->params[2]->shape, 5, bounds[2]);
  for (int k = 0; k < 5; k++) {
    int32_t v = ((int32_t *)g->data)[k];
    cr_assert(v >= 0 && v <= 6);
  }
  free(bounds);
}

Test(eval, literal_text) {
  A = arena_new();
  StrBuf b;
  sb_init(&b);
  io_print_literal(&b, input("2x2xf32=1 2.5 -0 nan", NULL));
  cr_assert_str_eq(b.s, "f32[2,2] {\n  { 1, 2.5 },\n  { -0, nan }\n}");
  sb_clear(&b);
  io_print_literal(&b, input("3xpred=1 0 1", NULL));
  cr_assert_str_eq(b.s, "pred[3] {1, 0, 1}");
  sb_clear(&b);
  io_print_literal(&b, input("s32=-7", NULL));
  cr_assert_str_eq(b.s, "s32[] -7");
  sb_clear(&b);
  io_print_literal(&b, input("2x1x2xu8=1 2 3 4", NULL));
  cr_assert_str_eq(b.s, "u8[2,1,2] {\n{\n  { 1, 2 }\n},\n{\n  { 3, 4 }\n}\n}");
  sb_free(&b);
}

Test(eval, loop_updates_reuse_buffers) {
  /* a scan-like loop writing row i of a 32 MiB buffer each iteration: the
   * update happens in place (the buffer is never copied per iteration) and
   * every row ends up right */
  HloModule *m = parse(
    "HloModule scan\n"
    "cond {\n  p = (s32[], f32[2048,4096]) parameter(0)\n"
    "  i = s32[] get-tuple-element(p), index=0\n  n = s32[] constant(2048)\n"
    "  ROOT lt = pred[] compare(i, n), direction=LT\n}\n"
    "body {\n  p = (s32[], f32[2048,4096]) parameter(0)\n"
    "  i = s32[] get-tuple-element(p), index=0\n"
    "  buf = f32[2048,4096] get-tuple-element(p), index=1\n"
    "  one = s32[] constant(1)\n  i1 = s32[] add(i, one)\n"
    "  f = f32[] convert(i)\n  row = f32[1,4096] broadcast(f), dimensions={}\n"
    "  z = s32[] constant(0)\n"
    "  buf2 = f32[2048,4096] dynamic-update-slice(buf, row, i, z)\n"
    "  ROOT t = (s32[], f32[2048,4096]) tuple(i1, buf2)\n}\n"
    "ENTRY e {\n  z = s32[] constant(0)\n  zf = f32[] constant(-1)\n"
    "  buf = f32[2048,4096] broadcast(zf), dimensions={}\n"
    "  init = (s32[], f32[2048,4096]) tuple(z, buf)\n"
    "  w = (s32[], f32[2048,4096]) while(init), condition=cond, body=body\n"
    "  ROOT b = f32[2048,4096] get-tuple-element(w), index=1\n}\n");
  EvalOptions o;
  eval_options_default(&o);
  o.time_budget = 20;   /* copying 32 MiB per iteration would take minutes */
  Literal *out;
  EvalStatus st;
  cr_assert(run(m, 0, NULL, &o, &out, &st), "%s", D.msg);
  cr_assert_leq(st.peak_bytes, 3 * (32 << 20), "peak %lld", (long long)st.peak_bytes);
  const float *v = (const float *)out->data;
  for (int r = 0; r < 2048; r += 97)
    for (int c = 0; c < 4096; c += 511) cr_assert_eq(v[r * 4096 + c], (float)r);
}

/* Random floats with planted specials: -0, +-inf, NaN, and magnitudes far
 * apart so that the order of the additions shows in the rounding. */
static Literal *planted(const Shape *s, uint64_t seed) {
  Literal *l = io_random_literal(A, s, seed, -1);
  int64_t n = shape_elements(s);
  uint64_t r = seed * 0x9E3779B97F4A7C15ull + 7;
  for (int64_t k = 0; k < n; k++) {
    r = r * 6364136223846793005ull + 1442695040888963407ull;
    unsigned pick = (unsigned)(r >> 52);   /* 0..4095 */
    double v;
    if (pick < 8) v = -0.0;
    else if (pick == 8) v = INFINITY;
    else if (pick == 9) v = NAN;
    else if (pick < 700) v = (double)(int64_t)(r >> 40 & 0xffffff) * 1e3;
    else continue;
    if (s->et == ET_F32) {
      float f = (float)v;
      memcpy(l->data + 4 * k, &f, 4);
    } else {
      memcpy(l->data + 8 * k, &v, 8);
    }
  }
  return l;
}

/* Whether two arrays of n floats (or doubles) have the same bits, NaNs
 * compared as NaNs. */
static void same_values(const void *a, const void *b, int64_t n, bool f64) {
  for (int64_t k = 0; k < n; k++) {
    double x = f64 ? ((const double *)a)[k] : ((const float *)a)[k];
    double y = f64 ? ((const double *)b)[k] : ((const float *)b)[k];
    if (isnan(x) && isnan(y)) continue;
    cr_assert(memcmp((const char *)a + k * (f64 ? 8 : 4), (const char *)b + k * (f64 ? 8 : 4),
                     f64 ? 8 : 4) == 0,
              "element %lld: %.17g vs %.17g", (long long)k, x, y);
  }
}

/* The blocked products (lib/eval/gemm.c) give the plain loop's bits: every
 * output summed over k in order, one rounded product and one add per k.
 * Sizes cross the register tile, the k chunk and the row block. */
Test(eval, dot_is_the_plain_loop) {
  HloModule *m = parse(
    "HloModule dots\n"
    "ENTRY e {\n  a = f32[2,13,300] parameter(0)\n  b = f32[2,300,37] parameter(1)\n"
    "  c = f64[101,600] parameter(2)\n  d = f64[600,9] parameter(3)\n"
    "  x = f32[2,13,37] dot(a, b), lhs_batch_dims={0}, lhs_contracting_dims={2},"
    " rhs_batch_dims={0}, rhs_contracting_dims={1}\n"
    "  y = f64[101,9] dot(c, d), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n"
    "  ROOT t = (f32[2,13,37], f64[101,9]) tuple(x, y)\n}\n");
  Literal *in[4];
  for (int k = 0; k < 4; k++) in[k] = planted(m->entry->params[k]->shape, 11 + (uint64_t)k);
  Literal *out;
  EvalStatus st;
  cr_assert(run(m, 4, in, NULL, &out, &st), "%s", D.msg);
  float want[2 * 13 * 37];
  const float *a = (const float *)in[0]->data, *b = (const float *)in[1]->data;
  for (int bt = 0; bt < 2; bt++)
    for (int i = 0; i < 13; i++)
      for (int j = 0; j < 37; j++) {
        float acc = 0.0f;
        for (int k = 0; k < 300; k++)
          acc += a[(bt * 13 + i) * 300 + k] * b[(bt * 300 + k) * 37 + j];
        want[(bt * 13 + i) * 37 + j] = acc;
      }
  same_values(out->tuple[0]->data, want, 2 * 13 * 37, false);
  double wd[101 * 9];
  const double *c = (const double *)in[2]->data, *d = (const double *)in[3]->data;
  for (int i = 0; i < 101; i++)
    for (int j = 0; j < 9; j++) {
      double acc = 0.0;
      for (int k = 0; k < 600; k++) acc += c[i * 600 + k] * d[k * 9 + j];
      wd[i * 9 + j] = acc;
    }
  same_values(out->tuple[1]->data, wd, 101 * 9, true);
}

/* A 2-D convolution, b01f_01io->b01f, as the plain loop over window
 * positions (outer) and input features (inner), skipping positions outside
 * the (dilated, padded) input.  cv: N H W C, KH KW Cg O, groups, stride,
 * low padding, lhs and rhs dilation per spatial dim, OH OW. */
typedef struct RefConv {
  int N, H, W, C, KH, KW, Cg, O, G, sh, sw, ph, pw, lh, lw, dh, dw, OH, OW;
} RefConv;

static void ref_conv(const RefConv *v, const float *x, const float *w, float *y) {
  for (int n = 0; n < v->N; n++)
    for (int oh = 0; oh < v->OH; oh++)
      for (int ow = 0; ow < v->OW; ow++)
        for (int o = 0; o < v->O; o++) {
          float acc = 0.0f;
          int grp = o / (v->O / v->G);
          for (int kh = 0; kh < v->KH; kh++)
            for (int kw = 0; kw < v->KW; kw++) {
              int hd = oh * v->sh - v->ph + kh * v->dh, wd = ow * v->sw - v->pw + kw * v->dw;
              if (hd < 0 || wd < 0 || hd % v->lh || wd % v->lw) continue;
              int hi = hd / v->lh, wi = wd / v->lw;
              if (hi >= v->H || wi >= v->W) continue;
              for (int c = 0; c < v->Cg; c++)
                acc += x[((n * v->H + hi) * v->W + wi) * v->C + grp * v->Cg + c] *
                       w[((kh * v->KW + kw) * v->Cg + c) * v->O + o];
            }
          y[((n * v->OH + oh) * v->OW + ow) * v->O + o] = acc;
        }
}

static void check_conv(const char *hlo, const RefConv *v) {
  HloModule *m = parse(hlo);
  Literal *in[2];
  for (int k = 0; k < 2; k++) in[k] = planted(m->entry->params[k]->shape, 21 + (uint64_t)k);
  Literal *out;
  EvalStatus st;
  cr_assert(run(m, 2, in, NULL, &out, &st), "%s", D.msg);
  int64_t n = (int64_t)v->N * v->OH * v->OW * v->O;
  float *want = malloc((size_t)n * sizeof *want);
  ref_conv(v, (const float *)in[0]->data, (const float *)in[1]->data, want);
  same_values(out->data, want, n, false);
  free(want);
}

/* The convolution's products likewise, through each of the interpreter's
 * paths: per window position (padding and lhs dilation leave some
 * positions out; two feature groups), as one product over (window
 * position, feature) when the window never leaves the input (3 input
 * features, dilations), and the direct loop (depthwise). */
Test(eval, convolution_is_the_plain_loop) {
  RefConv a = {2, 7, 6, 16, 3, 2, 8, 12, 2, 2, 1, 2, 0, 2, 1, 1, 2, 7, 5};
  check_conv("HloModule conv\n"
             "ENTRY e {\n  x = f32[2,7,6,16] parameter(0)\n  w = f32[3,2,8,12] parameter(1)\n"
             "  ROOT y = f32[2,7,5,12] convolution(x, w), window={size=3x2 stride=2x1"
             " pad=2_1x0_1 lhs_dilate=2x1 rhs_dilate=1x2}, dim_labels=b01f_01io->b01f,"
             " feature_group_count=2\n}\n", &a);
  teardown();
  RefConv b = {3, 9, 12, 3, 2, 3, 3, 20, 1, 2, 3, 0, 0, 2, 1, 2, 1, 8, 4};
  check_conv("HloModule conv\n"
             "ENTRY e {\n  x = f32[3,9,12,3] parameter(0)\n  w = f32[2,3,3,20] parameter(1)\n"
             "  ROOT y = f32[3,8,4,20] convolution(x, w), window={size=2x3 stride=2x3"
             " lhs_dilate=2x1 rhs_dilate=2x1}, dim_labels=b01f_01io->b01f\n}\n", &b);
  teardown();
  RefConv c = {2, 6, 6, 4, 3, 3, 1, 4, 4, 1, 1, 1, 1, 1, 1, 1, 1, 6, 6};
  check_conv("HloModule conv\n"
             "ENTRY e {\n  x = f32[2,6,6,4] parameter(0)\n  w = f32[3,3,1,4] parameter(1)\n"
             "  ROOT y = f32[2,6,6,4] convolution(x, w), window={size=3x3 pad=1_1x1_1},"
             " dim_labels=b01f_01io->b01f, feature_group_count=4\n}\n", &c);
}

/* A value a loop body computes from no parameter is computed once: here a
 * 4M-element reduction in a body run 2000 times (minutes if each trip made
 * it again), with the right result; an rng in a body is drawn anew on
 * every trip. */
Test(eval, loop_invariants_are_computed_once) {
  HloModule *m = parse(
    "HloModule inv\n"
    "add {\n  a = s32[] parameter(0)\n  b = s32[] parameter(1)\n"
    "  ROOT s = s32[] add(a, b)\n}\n"
    "work {\n  z = s32[] parameter(0)\n  i = s32[4194304] iota(), iota_dimension=0\n"
    "  one = s32[] constant(1)\n  ob = s32[4194304] broadcast(one), dimensions={}\n"
    "  a = s32[4194304] and(i, ob)\n  c = s32[] constant(0)\n"
    "  r = s32[] reduce(a, c), dimensions={0}, to_apply=add\n"
    "  ROOT s = s32[] add(z, r)\n}\n"
    "cond {\n  p = (s32[], s32[], f32[2000]) parameter(0)\n"
    "  i = s32[] get-tuple-element(p), index=0\n  n = s32[] constant(2000)\n"
    "  ROOT lt = pred[] compare(i, n), direction=LT\n}\n"
    "body {\n  p = (s32[], s32[], f32[2000]) parameter(0)\n"
    "  i = s32[] get-tuple-element(p), index=0\n  acc = s32[] get-tuple-element(p), index=1\n"
    "  buf = f32[2000] get-tuple-element(p), index=2\n"
    "  s = s32[] call(acc), to_apply=work\n"
    "  lo = f32[] constant(0)\n  hi = f32[] constant(1)\n"
    "  u = f32[1] rng(lo, hi), distribution=rng_uniform\n"
    "  b2 = f32[2000] dynamic-update-slice(buf, u, i)\n"
    "  one = s32[] constant(1)\n  i1 = s32[] add(i, one)\n"
    "  ROOT t = (s32[], s32[], f32[2000]) tuple(i1, s, b2)\n}\n"
    "ENTRY e {\n  z = s32[] constant(0)\n  zf = f32[] constant(-1)\n"
    "  buf = f32[2000] broadcast(zf), dimensions={}\n"
    "  init = (s32[], s32[], f32[2000]) tuple(z, z, buf)\n"
    "  ROOT w = (s32[], s32[], f32[2000]) while(init), condition=cond, body=body\n}\n");
  EvalOptions o;
  eval_options_default(&o);
  o.time_budget = 20;
  Literal *out;
  EvalStatus st;
  cr_assert(run(m, 0, NULL, &o, &out, &st), "%s", D.msg);
  cr_assert_eq(*(const int32_t *)out->tuple[1]->data, (int32_t)(2000u * 2097152u));
  const float *u = (const float *)out->tuple[2]->data;
  int same = 0;
  for (int k = 1; k < 2000; k++) same += u[k] == u[k - 1];
  cr_assert_lt(same, 10, "%d of 2000 rng draws repeat the one before", same);
}

Test(eval, arguments_are_not_modified) {
  /* an argument dies at its only use, but it belongs to the caller: the
   * interpreter must not write its result into it */
  HloModule *m = parse(
    "HloModule args\n"
    "ENTRY e {\n  x = f32[4] parameter(0)\n  ROOT n = f32[4] negate(x)\n}\n");
  Literal *x = input("4xf32=1 2 3 4", NULL);
  Literal *out;
  EvalStatus st;
  cr_assert(run(m, 1, &x, NULL, &out, &st), "%s", D.msg);
  cr_assert(((float *)x->data)[2] == 3.0f);
  cr_assert(((float *)out->data)[2] == -3.0f);
}

/* Tuple parameters are flattened into leaves for --input and rebuilt for
 * the call: io_shape_leaves and io_literal_from_leaves are inverses, in
 * order, and a missing (token) leaf becomes an empty literal. */
Test(io, leaves_flatten_and_rebuild) {
  Arena *a = arena_new();
  Diag d = {0};
  Shape *s = hlo_parse_shape(a, "(f32[2], (s32[], token[]), u8[3])", &d);
  cr_assert(s, "%s", d.msg);
  PtrVec v = {0};
  io_shape_leaves(s, &v);
  cr_assert_eq(v.len, 4);
  cr_assert_eq(((Shape *)v.data[0])->et, ET_F32);
  cr_assert_eq(((Shape *)v.data[1])->et, ET_S32);
  cr_assert_eq(((Shape *)v.data[2])->et, ET_TOKEN);
  cr_assert_eq(((Shape *)v.data[3])->et, ET_U8);
  Literal *leaves[4] = {literal_new(a, v.data[0]), literal_new(a, v.data[1]),
                        NULL, literal_new(a, v.data[3])};
  int at = 0;
  Literal *l = io_literal_from_leaves(a, s, leaves, &at);
  cr_assert_eq(at, 4);
  cr_assert_eq(l->ntuple, 3);
  cr_assert_eq(l->tuple[0], leaves[0]);
  cr_assert_eq(l->tuple[1]->ntuple, 2);
  cr_assert_eq(l->tuple[1]->tuple[0], leaves[1]);
  cr_assert_eq(l->tuple[1]->tuple[1]->shape->et, ET_TOKEN);
  cr_assert_eq(l->tuple[2], leaves[3]);
  Literal **back;
  int n = io_literal_leaves(l, &back);
  cr_assert_eq(n, 4);
  cr_assert_eq(back[3], leaves[3]);
  free(back);
  vec_free(&v);
  arena_free(a);
}
