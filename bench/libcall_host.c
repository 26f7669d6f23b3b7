/*
 * libcall_host.c - speed of the host platform's library calls (GEMM and
 * convolution descriptors of libcall.h, through Platform.gemm / .conv, i.e.
 * oneDNN): GFLOP/s of f32 and bf16 matmuls of 1024^3 and 2048^3, an f64
 * matmul, and a 3x3 convolution NHWC 8x56x56x64 -> 64 forward and its two
 * gradients; and xhloc's own f64 kernel (gemm_f64.c) called directly.
 * Each case runs once to build and cache its primitive, then REPS times; the best and the median time are printed.  A few result
 * elements are checked against sums in double, so a fast wrong answer
 * does not pass for a result.
 *
 *   libcall_host [--threads=N] [--reps=R] [--lib-path=DIRS]
 */
#include "../lib/runtime/gemm_f64.h"
#include "../lib/runtime/libcall.h"
#include "../lib/runtime/platform.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static uint64_t rng = 2024;

static double rnd(void) {
  rng = rng * 6364136223846793005ull + 1442695040888963407ull;
  return (double)((rng >> 11) % 2001) / 1000.0 - 1.0;
}

static void put(ElemType t, void *p, int64_t k, double v) {
  int n = et_bytes(t);
  uint64_t bits = fp_from_double(et_fp_format(t), v);
  memcpy((uint8_t *)p + k * n, &bits, (size_t)n);
}

static double get(ElemType t, const void *p, int64_t k) {
  int n = et_bytes(t);
  uint64_t bits = 0;
  memcpy(&bits, (const uint8_t *)p + k * n, (size_t)n);
  return fp_to_double(et_fp_format(t), bits);
}

/* A device buffer of n elements of type t with random values; *host gets
 * a host copy (the check reads it). */
static DevPtr device_buffer(Platform *p, ElemType t, int64_t n, void **host) {
  size_t bytes = (size_t)n * (size_t)et_bytes(t);
  void *h = xmalloc(bytes);
  for (int64_t k = 0; k < n; k++) put(t, h, k, rnd());
  DevPtr dp;
  Diag d = {0};
  if (!p->alloc(p, bytes, &dp, &d) || !p->copy_h2d(p, dp, h, bytes, &d)) {
    diag_print(&d, stderr);
    exit(1);
  }
  *host = h;
  return dp;
}

static void *download(Platform *p, DevPtr src, ElemType t, int64_t n) {
  size_t bytes = (size_t)n * (size_t)et_bytes(t);
  void *h = xmalloc(bytes);
  Diag d = {0};
  if (!p->copy_d2h(p, h, src, bytes, &d)) {
    diag_print(&d, stderr);
    exit(1);
  }
  return h;
}

typedef bool (*CallFn)(Platform *p, const void *desc, const DevPtr *s, Diag *d);

static int direct_threads;

/* gemm_f64 on the host buffers (the host platform's device pointers are
 * host addresses). */
static bool call_gemm_f64(Platform *p, const void *desc, const DevPtr *s, Diag *d) {
  void *ptrs[GEMM_NSLICES];
  for (int k = 0; k < GEMM_NSLICES; k++) ptrs[k] = (void *)(uintptr_t)s[k];
  return gemm_f64(desc, ptrs, direct_threads, d);
}

static bool call_gemm(Platform *p, const void *desc, const DevPtr *s, Diag *d) {
  return p->gemm(p, desc, s, d);
}

static bool call_conv(Platform *p, const void *desc, const DevPtr *s, Diag *d) {
  return p->conv(p, desc, s, d);
}

/* Runs the call once (setup), then reps times; prints the line. */
static void timed(Platform *p, const char *name, double flops, CallFn fn, const void *desc,
                  const DevPtr *s, int reps) {
  Diag d = {0};
  double t0 = now();
  if (!fn(p, desc, s, &d) || !p->synchronize(p, &d)) {
    fprintf(stderr, "libcall_host: %s: ", name);
    diag_print(&d, stderr);
    exit(1);
  }
  double first = now() - t0;
  double *ms = xmalloc((size_t)reps * sizeof *ms);
  for (int r = 0; r < reps; r++) {
    t0 = now();
    if (!fn(p, desc, s, &d) || !p->synchronize(p, &d)) {
      diag_print(&d, stderr);
      exit(1);
    }
    ms[r] = (now() - t0) * 1e3;
  }
  qsort(ms, (size_t)reps, sizeof *ms, cmp_double);
  printf("%-38s first %8.1f ms  best %8.2f ms  median %8.2f ms  %7.1f GFLOP/s\n", name,
         first * 1e3, ms[0], ms[reps / 2], flops / (ms[0] * 1e-3) * 1e-9);
  fflush(stdout);
  free(ms);
}

/* ---- GEMM --------------------------------------------------------------- */

/* Checks 32 elements of D = A @ B (row-major, dense) against sums in
 * double, within a tolerance for the input/output types. */
static void check_gemm(const GemmDesc *g, const void *a, const void *b, const void *dd,
                       const char *name) {
  double tol = g->a.et == ET_BF16 || g->d.et == ET_BF16 ? 1e-2
               : g->a.et == ET_F64                      ? 1e-12
                                                        : 1e-5;
  for (int t = 0; t < 32; t++) {
    int64_t i = (int64_t)(rng >> 20) % g->m, j = (int64_t)(rng >> 40) % g->n;
    rnd();
    double s = 0, mag = 0;
    for (int64_t q = 0; q < g->k; q++) {
      double x = get(g->a.et, a, i * g->k + q) * get(g->b.et, b, q * g->n + j);
      s += x;
      mag += fabs(x);
    }
    double got = get(g->d.et, dd, i * g->n + j);
    if (!(fabs(got - s) <= tol * (mag + 1))) {
      fprintf(stderr, "libcall_host: %s: D[%lld,%lld] = %g, want %g\n", name, (long long)i,
              (long long)j, got, s);
      exit(1);
    }
  }
}

static void bench_gemm(Platform *p, ElemType in, ElemType out, int64_t n, bool direct,
                       int reps) {
  GemmDesc g = {.batch = 1, .m = n, .n = n, .k = n, .alpha_re = 1};
  g.a = (GemmMatrix){in, n, n, 0, n, 1};
  g.b = g.a;
  g.d = (GemmMatrix){out, n, n, 0, n, 1};
  g.c = g.d;
  void *ha, *hb, *hd;
  DevPtr s[GEMM_NSLICES] = {0};
  s[GEMM_A] = device_buffer(p, in, n * n, &ha);
  s[GEMM_B] = device_buffer(p, in, n * n, &hb);
  s[GEMM_D] = device_buffer(p, out, n * n, &hd);
  char name[80];
  snprintf(name, sizeof name, "matmul %s x %s -> %s %lld^3%s", et_name(in), et_name(in),
           et_name(out), (long long)n, direct ? " gemm_f64" : "");
  timed(p, name, 2.0 * (double)n * (double)n * (double)n, direct ? call_gemm_f64 : call_gemm,
        &g, s, reps);
  void *r = download(p, s[GEMM_D], out, n * n);
  check_gemm(&g, ha, hb, r, name);
  free(r), free(ha), free(hb), free(hd);
  for (int k = 0; k < GEMM_NSLICES; k++)
    if (s[k]) p->free(p, s[k]);
}

/* ---- convolution -------------------------------------------------------- */

/* NHWC activations ([N, C, H, W] dims with C fastest) and HWIO filters. */
static ConvTensor nhwc(ElemType t, int64_t n, int64_t c, int64_t h, int64_t w) {
  return (ConvTensor){t, {n, c, h, w}, {h * w * c, 1, w * c, c}};
}

static ConvTensor hwio(ElemType t, int64_t o, int64_t i, int64_t kh, int64_t kw) {
  return (ConvTensor){t, {o, i, kh, kw}, {1, o, kw * i * o, i * o}};
}

static int64_t conv_elems(const ConvTensor *t) {
  return t->dims[0] * t->dims[1] * t->dims[2] * t->dims[3];
}

/* y[n, o, oh, ow] of the forward convolution as a sum in double, and the
 * sum of the products' magnitudes (for the tolerance). */
static double conv_value(const ConvDesc *c, const void *x, const void *w, int64_t n,
                         int64_t o, int64_t oh, int64_t ow, double *mag) {
  double s = 0;
  *mag = 0;
  for (int64_t ci = 0; ci < c->x.dims[1]; ci++)
    for (int64_t kh = 0; kh < c->w.dims[2]; kh++)
      for (int64_t kw = 0; kw < c->w.dims[3]; kw++) {
        int64_t ih = oh * c->stride[0] + kh * c->dilation[0] - c->pad_lo[0];
        int64_t iw = ow * c->stride[1] + kw * c->dilation[1] - c->pad_lo[1];
        if (ih < 0 || iw < 0 || ih >= c->x.dims[2] || iw >= c->x.dims[3]) continue;
        double v = get(c->x.et, x,
                       n * c->x.strides[0] + ci * c->x.strides[1] + ih * c->x.strides[2] +
                           iw * c->x.strides[3]) *
                   get(c->w.et, w,
                       o * c->w.strides[0] + ci * c->w.strides[1] + kh * c->w.strides[2] +
                           kw * c->w.strides[3]);
        s += v;
        *mag += fabs(v);
      }
  return s;
}

static void bench_conv(Platform *p, ElemType t, int reps) {
  int64_t N = 8, C = 64, H = 56, O = 64, K = 3;
  ConvDesc c = {.kind = CONV_FORWARD, .nspatial = 2, .groups = 1, .alpha = 1};
  c.x = nhwc(t, N, C, H, H);
  c.w = hwio(t, O, C, K, K);
  c.y = nhwc(t, N, O, H, H);
  for (int k = 0; k < 2; k++) c.stride[k] = c.dilation[k] = c.pad_lo[k] = c.pad_hi[k] = 1;
  void *hx, *hw, *hy;
  DevPtr s[CONV_NSLICES] = {0};
  s[CONV_X] = device_buffer(p, t, conv_elems(&c.x), &hx);
  s[CONV_W] = device_buffer(p, t, conv_elems(&c.w), &hw);
  s[CONV_Y] = device_buffer(p, t, conv_elems(&c.y), &hy);
  double flops = 2.0 * (double)(N * H * H * O * C * K * K);
  static const char *kinds[3] = {"forward", "backward input", "backward filter"};
  for (int kind = CONV_FORWARD; kind <= CONV_BACKWARD_FILTER; kind++) {
    c.kind = (ConvKind)kind;
    char name[80];
    snprintf(name, sizeof name, "conv3x3 %s NHWC 8x56x56x64->64 %s", et_name(t), kinds[kind]);
    timed(p, name, flops, call_conv, &c, s, reps);
    if (kind == CONV_FORWARD) {
      void *y = download(p, s[CONV_Y], t, conv_elems(&c.y));
      double tol = t == ET_BF16 ? 1e-2 : 1e-5;
      for (int q = 0; q < 32; q++) {
        int64_t n = (int64_t)(rng >> 20) % N, o = (int64_t)(rng >> 30) % O,
                oh = (int64_t)(rng >> 40) % H, ow = (int64_t)(rng >> 50) % H;
        rnd();
        double mag, want = conv_value(&c, hx, hw, n, o, oh, ow, &mag);
        double got = get(t, y,
                         n * c.y.strides[0] + o * c.y.strides[1] + oh * c.y.strides[2] +
                             ow * c.y.strides[3]);
        if (!(fabs(got - want) <= tol * (mag + 1))) {
          fprintf(stderr, "libcall_host: %s: y[%lld,%lld,%lld,%lld] = %g, want %g\n", name,
                  (long long)n, (long long)o, (long long)oh, (long long)ow, got, want);
          exit(1);
        }
      }
      free(y);
    }
  }
  free(hx), free(hw), free(hy);
  for (int k = 0; k < CONV_NSLICES; k++)
    if (s[k]) p->free(p, s[k]);
}

int main(int argc, char **argv) {
  PlatformOptions o = {0};
  int reps = 5;
  for (int k = 1; k < argc; k++) {
    if (!strncmp(argv[k], "--threads=", 10)) {
      o.threads = atoi(argv[k] + 10);
    } else if (!strncmp(argv[k], "--reps=", 7)) {
      reps = atoi(argv[k] + 7);
    } else if (!strncmp(argv[k], "--lib-path=", 11)) {
      o.lib_path = argv[k] + 11;
    } else {
      fprintf(stderr, "usage: libcall_host [--threads=N] [--reps=R] [--lib-path=DIRS]\n");
      return 2;
    }
  }
  if (reps < 1) reps = 1;
  Diag d = {0};
  Platform *p = platform_host_new(&o, &d);
  if (!p) {
    diag_print(&d, stderr);
    return 1;
  }
  if (!p->gemm || !p->conv) {
    fprintf(stderr, "libcall_host: this build's host platform has no library calls "
                    "(Platform.gemm/.conv unset)\n");
    return 1;
  }
  printf("host library calls, threads: %s\n",
         o.threads > 0 ? "--threads" : getenv("XHLO_NUM_THREADS") ? "XHLO_NUM_THREADS"
                                                                 : "one per core");
  direct_threads = o.threads;
  bench_gemm(p, ET_F32, ET_F32, 1024, false, reps);
  bench_gemm(p, ET_F32, ET_F32, 2048, false, reps);
  bench_gemm(p, ET_BF16, ET_BF16, 1024, false, reps);
  bench_gemm(p, ET_BF16, ET_BF16, 2048, false, reps);
  bench_gemm(p, ET_BF16, ET_F32, 2048, false, reps);
  bench_gemm(p, ET_F64, ET_F64, 512, false, reps);
  bench_gemm(p, ET_F64, ET_F64, 1024, true, reps);
  bench_conv(p, ET_F32, reps);
  bench_conv(p, ET_BF16, reps);
  platform_free(p);
  return 0;
}
