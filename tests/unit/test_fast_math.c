/*
 * test_fast_math.c - the host's fast f32 math (emitters/fast_math.c,
 * CodegenOptions.fast_math) against libm in double.
 *
 * Each function is the root of a one-op module f32[2^20] -> f32[2^20],
 * compiled for the host as xhloc does (a shared object, loaded with dlopen)
 * and run over:
 *   - every XHLOC_FAST_MATH_STRIDE-th f32 bit pattern (default 509: 8.4M
 *     inputs; 1 sweeps all 2^32),
 *   - dense runs of consecutive bit patterns around the places where the
 *     approximations change regime (0, subnormals, +-1, the reduction
 *     boundaries, the clamps, the overflow and underflow thresholds),
 *   - a table of special values that must come out exactly (NaN, +-inf,
 *     signed zeros, saturation).
 * The error is |got - exact| in ulps of the f32 result (subnormals: ulps of
 * 2^-149), and its maximum must stay within the bound fast_math.c
 * documents.  Each function is compiled for --host-cpu=x86-64 (no FMA:
 * llvm.fmuladd stays a multiply and an add) and, on a CPU with FMA and
 * AVX2, for x86-64-v3 (fused), and both are checked against the same
 * bounds.
 */
#include "codegen_test_util.h"

#include <math.h>

#define N (1 << 20) /* elements per kernel call */

typedef struct Fn {
  const char *name;         /* test name */
  const char *op;           /* HLO opcode */
  double (*ref)(double);
  double bound;             /* max ulps where the bound holds */
  double lim;               /* ... for |x| <= lim (0: everywhere); beyond,
                               only |result| <= 1 (sin, cos) */
} Fn;

static double ref_logistic(double x) {
  return x < 0 ? exp(x) / (1 + exp(x)) : 1 / (1 + exp(-x));
}
static double ref_rsqrt(double x) { return 1 / sqrt(x); }

static const Fn Fns[] = {
  {"exp", "exponential", exp, 1.5, 0},
  {"expm1", "exponential-minus-one", expm1, 2.0, 0},
  {"log", "log", log, 1.0, 0},
  {"log1p", "log-plus-one", log1p, 1.5, 0},
  {"tanh", "tanh", tanh, 3.0, 0},
  {"logistic", "logistic", ref_logistic, 3.0, 0},
  {"erf", "erf", erf, 1.0, 0},
  {"sin", "sine", sin, 2.0, 3e6},
  {"cos", "cosine", cos, 2.0, 3e6},
  {"rsqrt", "rsqrt", ref_rsqrt, 1.5, 0},
};

/* The kernel of one function: production (LLVM's x86-64 baseline, fmuladd
 * not fused) and, when this CPU can run it, the x86-64-v3 one (fused). */
typedef void (*Kern)(void **, int64_t, int64_t);
typedef struct Kernels {
  void *h[2];
  Kern k[2];
  int64_t units[2];               /* LaunchDims.grid[0] */
  int n;
} Kernels;

static bool cpu_has_fma(void) {
  __builtin_cpu_init();
  return __builtin_cpu_supports("fma") && __builtin_cpu_supports("avx2");
}

static Kern load(void **h, const char *so) {
  *h = dlopen(so, RTLD_NOW | RTLD_LOCAL);
  cr_assert(*h, "dlopen: %s", dlerror());
  Kern k = (Kern)dlsym(*h, "kern");
  cr_assert(k, "dlsym kern");
  return k;
}

/* Compiles f with fast_math as given for host CPU cpu into Dir/name and
 * loads it as kernel ks->n. */
static void build_one(const Fn *f, bool fast, const char *cpu, const char *name,
                      Kernels *ks) {
  char text[512];
  snprintf(text, sizeof text,
           "HloModule m\n\nENTRY %%e (p: f32[%d]) -> f32[%d] {\n"
           "  %%p = f32[%d]{0} parameter(0)\n"
           "  ROOT %%r = f32[%d]{0} %s(%%p)\n}\n",
           N, N, N, N, f->op);
  HloModule *m = parse(text);
  CodegenOptions o;
  codegen_options_default(&o);
  o.target = CG_TARGET_HOST;
  o.fast_math = fast;
  o.host_cpu = cpu;
  Codegen *cg = codegen_new("fast_math_test", &o, &D);
  cr_assert(cg, "codegen_new: %s", D.msg);
  LaunchDims ld;
  cr_assert(codegen_kernel(cg, m->entry->root, "kern", &ld, &D), "kernel: %s", D.msg);
  char path[128];
  snprintf(path, sizeof path, "%s/%s", Dir, name);
  cr_assert(codegen_host_so(cg, path, &D), "host so: %s", D.msg);
  codegen_free(cg);
  ks->units[ks->n] = ld.grid[0];
  ks->k[ks->n] = load(&ks->h[ks->n], path);
  ks->n++;
}

/* Compiles f with fast_math as given: for x86-64 (no FMA: fmuladd not
 * fused) and, when fast and this CPU can run it, for x86-64-v3 (fused). */
static void build_with(const Fn *f, bool fast, Kernels *ks) {
  snprintf(Dir, sizeof Dir, "/tmp/xhloc-fm-XXXXXX");
  cr_assert(mkdtemp(Dir), "mkdtemp");
  ks->n = 0;
  build_one(f, fast, "x86-64", "k.so", ks);
  if (fast && cpu_has_fma())
    build_one(f, fast, "x86-64-v3", "kf.so", ks);
}

static void build(const Fn *f, Kernels *ks) { build_with(f, true, ks); }

static void unload(Kernels *ks) {
  for (int k = 0; k < ks->n; k++)
    dlclose(ks->h[k]);
}

static float from_bits(uint32_t u) {
  float x;
  memcpy(&x, &u, 4);
  return x;
}
static uint32_t to_bits(float x) {
  uint32_t u;
  memcpy(&u, &x, 4);
  return u;
}

/* The ulp of an f32 whose exact value is y. */
static double ulp_of(double y) {
  y = fabs(y);
  if (y < 0x1p-126)
    return 0x1p-149;
  int e;
  frexp(y, &e);
  return ldexp(1.0, e - 24);
}

/* The worst error seen by one kernel. */
typedef struct Stat {
  double max_ulp;
  float worst;
  long nbad;
  char bad[256];                  /* the first wrong special/NaN/range case */
} Stat;

static void note_bad(Stat *s, const char *what, float x, float got, double ref) {
  if (s->nbad++ == 0)
    snprintf(s->bad, sizeof s->bad, "%s: x=%a got %a want %a", what, x, got, ref);
}

static void check_one(const Fn *f, Stat *s, float x, float got, double ref) {
  if (isnan(ref) || isnan(got)) {
    if (isnan(ref) != isnan(got))
      note_bad(s, "NaN", x, got, ref);
    return;
  }
  if (f->lim > 0 && !(fabsf(x) <= f->lim)) {
    if (!(fabsf(got) <= 1.0f))
      note_bad(s, "out of [-1, 1]", x, got, ref);
    return;
  }
  /* An infinite result is right for an exact value beyond 2^128 (the
   * next value after FLT_MAX), and 2^128 otherwise. */
  double g = got;
  if (isinf(got)) {
    if (fabs(ref) >= 0x1p128 && (ref > 0) == (got > 0))
      return;
    g = copysign(0x1p128, got);
  }
  if (isinf(ref)) {
    note_bad(s, "inf", x, got, ref);
    return;
  }
  double e = fabs(g - ref) / ulp_of(ref);
  if (e > s->max_ulp) {
    s->max_ulp = e;
    s->worst = x;
  }
}

/* Runs the kernels on xs[0..n) and checks the results. */
static void run_chunk(const Fn *f, Kernels *ks, float *xs, int n, float *out, Stat *st) {
  for (int k = n; k < N; k++)
    xs[k] = 0;
  for (int v = 0; v < ks->n; v++) {
    void *args[2] = {xs, out + (size_t)v * N};
    ks->k[v](args, 0, ks->units[v]);
  }
  for (int k = 0; k < n; k++) {
    double ref = f->ref((double)xs[k]);
    for (int v = 0; v < ks->n; v++)
      check_one(f, &st[v], xs[k], out[(size_t)v * N + k], ref);
  }
}

/* Centers of the dense runs (both signs are taken). */
static const float Centers[] = {
  0x1p-149f, 0x1p-127f, 0x1p-126f, 0x1p-100f, 0x1p-25f, 0x1p-24f, 0x1p-12f,
  1e-4f, 0.05f, 0.25f, 0.3466f, 0.5f, 0.6931472f, 0.7071068f, 0.7854f, 1.0f,
  1.0397f, 1.4142135f, 1.5707964f, 2.0f, 3.1415927f, 3.92f, 4.0f, 9.0f,
  17.33f, 30.0f, 87.33655f, 88.72284f, 88.8f, 103.972f, 104.0f, 1e4f,
  3e6f, 1.6777216e7f, 3.4e38f,
};

static void sweep(const Fn *f) {
  Kernels ks;
  build(f, &ks);
  const char *env = getenv("XHLOC_FAST_MATH_STRIDE");
  uint64_t stride = env && atol(env) > 0 ? (uint64_t)atol(env) : 509;
  float *xs = malloc(N * sizeof *xs), *out = malloc((size_t)N * 2 * sizeof *out);
  cr_assert(xs && out);
  Stat st[2];
  memset(st, 0, sizeof st);
  int n = 0;
  for (uint64_t b = 0; b < (1ull << 32); b += stride) {
    xs[n++] = from_bits((uint32_t)b);
    if (n == N) {
      run_chunk(f, &ks, xs, n, out, st);
      n = 0;
    }
  }
  for (size_t c = 0; c < ARRAY_LEN(Centers); c++) {
    for (int sign = 0; sign < 2; sign++) {
      uint32_t mid = to_bits(sign ? -Centers[c] : Centers[c]);
      for (int32_t d = -8192; d < 8192; d++) {
        xs[n++] = from_bits(mid + (uint32_t)d);
        if (n == N) {
          run_chunk(f, &ks, xs, n, out, st);
          n = 0;
        }
      }
    }
  }
  if (n > 0)
    run_chunk(f, &ks, xs, n, out, st);
  for (int v = 0; v < ks.n; v++) {
    const char *variant = v == 0 ? "x86-64" : "x86-64-v3 (fused)";
    printf("fast %-8s %-15s max %.3f ulp at %a (bound %.1f)\n", f->name, variant,
           st[v].max_ulp, st[v].worst, f->bound);
    cr_expect(st[v].nbad == 0, "%s (%s): %ld wrong results, first %s", f->name,
              variant, st[v].nbad, st[v].bad);
    cr_expect(st[v].max_ulp <= f->bound, "%s (%s): %.3f ulp at x=%a > bound %.1f",
              f->name, variant, st[v].max_ulp, st[v].worst, f->bound);
  }
  free(xs);
  free(out);
  unload(&ks);
}

/* Values that must come out exactly (NaN: any NaN). */
typedef struct Special {
  float x, want;
} Special;

static void specials(const Fn *f, const Special *sp, int n) {
  Kernels ks;
  build(f, &ks);
  float *xs = calloc(N, sizeof *xs), *out = calloc(N, sizeof *out);
  cr_assert(xs && out);
  for (int k = 0; k < n; k++)
    xs[k] = sp[k].x;
  for (int v = 0; v < ks.n; v++) {
    void *args[2] = {xs, out};
    ks.k[v](args, 0, ks.units[v]);
    for (int k = 0; k < n; k++) {
      bool ok = isnan(sp[k].want) ? isnan(out[k]) : to_bits(out[k]) == to_bits(sp[k].want);
      cr_expect(ok, "%s(%a) = %a, want %a (%s)", f->name, sp[k].x, out[k], sp[k].want,
                v == 0 ? "x86-64" : "x86-64-v3");
    }
  }
  free(xs);
  free(out);
  unload(&ks);
}

#define INF __builtin_inff()
#define NAN_ __builtin_nanf("")
#define SPECIALS(f, ...)                                         \
  do {                                                           \
    static const Special sp[] = {__VA_ARGS__};                   \
    specials(&Fns[f], sp, (int)ARRAY_LEN(sp));                   \
  } while (0)

TestSuite(fast_math, .fini = teardown);

Test(fast_math, exp) { sweep(&Fns[0]); }
Test(fast_math, expm1) { sweep(&Fns[1]); }
Test(fast_math, log) { sweep(&Fns[2]); }
Test(fast_math, log1p) { sweep(&Fns[3]); }
Test(fast_math, tanh) { sweep(&Fns[4]); }
Test(fast_math, logistic) { sweep(&Fns[5]); }
Test(fast_math, erf) { sweep(&Fns[6]); }
Test(fast_math, sin) { sweep(&Fns[7]); }
Test(fast_math, cos) { sweep(&Fns[8]); }
Test(fast_math, rsqrt) { sweep(&Fns[9]); }

Test(fast_math, special_values_exp) {
  SPECIALS(0, {-INF, 0}, {INF, INF}, {NAN_, NAN_}, {0, 1}, {-0.0f, 1}, {89, INF},
           {1000, INF}, {-104, 0}, {-1000, 0}, {88.7229f, INF});
}
Test(fast_math, special_values_expm1) {
  SPECIALS(1, {-INF, -1}, {INF, INF}, {NAN_, NAN_}, {0, 0}, {-0.0f, -0.0f},
           {0x1p-149f, 0x1p-149f}, {-0x1p-149f, -0x1p-149f}, {-30, -1}, {-100, -1},
           {89, INF});
}
Test(fast_math, special_values_log) {
  SPECIALS(2, {0, -INF}, {-0.0f, -INF}, {-1, NAN_}, {-INF, NAN_}, {INF, INF},
           {1, 0}, {NAN_, NAN_}, {-0x1p-149f, NAN_});
}
Test(fast_math, special_values_log1p) {
  SPECIALS(3, {-1, -INF}, {-2, NAN_}, {-INF, NAN_}, {INF, INF}, {0, 0},
           {-0.0f, -0.0f}, {0x1p-149f, 0x1p-149f}, {-0x1p-149f, -0x1p-149f},
           {NAN_, NAN_});
}
Test(fast_math, special_values_tanh) {
  SPECIALS(4, {-INF, -1}, {INF, 1}, {0, 0}, {-0.0f, -0.0f}, {10, 1}, {-10, -1},
           {0x1p-149f, 0x1p-149f}, {-0x1p-149f, -0x1p-149f}, {NAN_, NAN_});
}
Test(fast_math, special_values_logistic) {
  SPECIALS(5, {-INF, 0}, {INF, 1}, {0, 0.5f}, {-0.0f, 0.5f}, {200, 1}, {-200, 0},
           {NAN_, NAN_});
}
Test(fast_math, special_values_erf) {
  SPECIALS(6, {-INF, -1}, {INF, 1}, {0, 0}, {-0.0f, -0.0f}, {5, 1}, {-5, -1},
           {NAN_, NAN_});
}
Test(fast_math, special_values_sin) {
  SPECIALS(7, {-INF, NAN_}, {INF, NAN_}, {0, 0}, {-0.0f, -0.0f}, {NAN_, NAN_});
}
Test(fast_math, special_values_cos) {
  SPECIALS(8, {-INF, NAN_}, {INF, NAN_}, {0, 1}, {-0.0f, 1}, {NAN_, NAN_});
}
Test(fast_math, special_values_rsqrt) {
  SPECIALS(9, {0, INF}, {-0.0f, -INF}, {INF, 0}, {-1, NAN_}, {NAN_, NAN_});
}

/* fast_math off: the kernel calls libm, bit for bit. */
Test(fast_math, exact_calls_libm) {
  Kernels ks;
  build_with(&Fns[4], false, &ks);
  float *xs = malloc(N * sizeof *xs), *out = malloc(N * sizeof *out);
  cr_assert(xs && out);
  for (int k = 0; k < N; k++)
    xs[k] = from_bits((uint32_t)k * 4099u);
  void *args[2] = {xs, out};
  ks.k[0](args, 0, ks.units[0]);
  int nbad = 0;
  for (int k = 0; k < N; k++)
    if (to_bits(out[k]) != to_bits(tanhf(xs[k])) && !(isnan(out[k]) && isnan(xs[k])))
      nbad++;
  cr_expect(nbad == 0, "%d results differ from tanhf", nbad);
  free(xs);
  free(out);
  unload(&ks);
}
