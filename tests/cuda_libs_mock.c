/*
 * cuda_libs_mock.c - check-cuda-libs.sh's driver: the CUDA platform's
 * library calls (Platform.gemm through cuBLASLt, Platform.conv through
 * cuDNN) against the mock libcuda.so.1, libcublasLt.so.13 and libcudnn.so.9
 * the script builds from tests/mocks/, and the library search of
 * cuda_libs.c against files the script lays out.
 *
 *   cuda_libs_mock MOCKDIR TMPDIR
 *
 * MOCKDIR holds the mock libraries (libcuda.so.1 is found through
 * LD_LIBRARY_PATH, the others through PlatformOptions.lib_path) and
 * tiny.so, a loadable library with one symbol; TMPDIR is scratch space.
 * Each GEMM and convolution runs on the mocks, which compute for real, and
 * its result is compared with plain loops here; the mocks' logs are
 * compared with the call sequence and every argument expected.  Prints one
 * line per failure and ends with "N passed, N failed".
 */
#include <dlfcn.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "../lib/runtime/cuda_libs.h"

static int passed, failed;
static const char *mockdir, *tmpdir;
static Platform *P;

static bool check(bool ok, const char *fmt, ...) PRINTF_LIKE(2, 3);
static bool check(bool ok, const char *fmt, ...) {
  if (ok) {
    passed++;
    return true;
  }
  failed++;
  va_list ap;
  va_start(ap, fmt);
  printf("FAIL: ");
  vprintf(fmt, ap);
  printf("\n");
  va_end(ap);
  return false;
}

/* ---- the mocks' logs ------------------------------------------------------ */

static void *mock_handle(const char *lib) {
  char path[1024];
  if (strcmp(lib, "libcuda.so.1") == 0) snprintf(path, sizeof path, "%s", lib);
  else snprintf(path, sizeof path, "%s/%s", mockdir, lib);
  return dlopen(path, RTLD_NOW | RTLD_NOLOAD);
}

/* The log of a mock since the last take ("" when it is not loaded). */
static char *take(const char *lib) {
  void *h = mock_handle(lib);
  char *(*fn)(void) = h ? (char *(*)(void))dlsym(h, "mock_log_take") : NULL;
  return fn ? fn() : xstrdup("");
}
static char *take_lt(void) { return take("libcublasLt.so.13"); }
static char *take_dnn(void) { return take("libcudnn.so.9"); }
static char *take_cuda(void) { return take("libcuda.so.1"); }
static void drop_logs(void) {
  free(take_lt());
  free(take_dnn());
  free(take_cuda());
}

static void mock_fail(const char *lib, const char *name, int status) {
  void *h = mock_handle(lib);
  void (*fn)(const char *, int) = h ? (void (*)(const char *, int))dlsym(h, "mock_fail") : NULL;
  if (fn) fn(name, status);
}

static int mock_count(const char *lib, const char *fn_name) {
  void *h = mock_handle(lib);
  int (*fn)(void) = h ? (int (*)(void))dlsym(h, fn_name) : NULL;
  return fn ? fn() : -1;
}

/* Lines of log starting with prefix. */
static int count_lines(const char *log, const char *prefix) {
  int n = 0;
  size_t pl = strlen(prefix);
  for (const char *l = log; *l;) {
    if (strncmp(l, prefix, pl) == 0) n++;
    const char *nl = strchr(l, '\n');
    if (!nl) break;
    l = nl + 1;
  }
  return n;
}

static bool has_line(const char *log, const char *line) {
  size_t n = strlen(line);
  for (const char *l = log; *l;) {
    const char *nl = strchr(l, '\n');
    size_t len = nl ? (size_t)(nl - l) : strlen(l);
    if (len == n && strncmp(l, line, n) == 0) return true;
    if (!nl) break;
    l = nl + 1;
  }
  return false;
}

static bool expect_log(const char *what, const char *log, const char *want) {
  if (check(strcmp(log, want) == 0, "%s: the log differs", what)) return true;
  printf("--- want\n%s--- got\n%s---\n", want, log);
  return false;
}

static bool expect_line(const char *what, const char *log, const char *line) {
  if (check(has_line(log, line), "%s: the log lacks the line\n    %s", what, line)) return true;
  printf("--- log\n%s---\n", log);
  return false;
}

static bool expect_has(const char *what, const char *text, const char *part) {
  if (check(text && strstr(text, part), "%s: lacks '%s'", what, part)) return true;
  printf("--- got\n%s\n---\n", text ? text : "(null)");
  return false;
}

/* ---- device buffers ---------------------------------------------------------- */

static double elem_get(const uint8_t *base, ElemType et, int64_t i) {
  if (et_is_int(et)) {
    int64_t v = 0;
    memcpy(&v, base + i * et_bytes(et), (size_t)et_bytes(et));
    int sh = 64 - 8 * et_bytes(et);
    return (double)((int64_t)((uint64_t)v << sh) >> sh);
  }
  uint64_t bits = 0;
  memcpy(&bits, base + i * et_bytes(et), (size_t)et_bytes(et));
  return fp_to_double(et_fp_format(et), bits);
}
static void elem_put(uint8_t *base, ElemType et, int64_t i, double v) {
  uint64_t bits = et_is_int(et) ? (uint64_t)(int64_t)v : fp_from_double(et_fp_format(et), v);
  memcpy(base + i * et_bytes(et), &bits, (size_t)et_bytes(et));
}
static double round_to(ElemType et, double v) {
  return fp_to_double(et_fp_format(et), fp_from_double(et_fp_format(et), v));
}

/* Small multiples of 1/4: exact in every type used here. */
static double small_value(void) { return (double)(rand() % 9 - 4) * 0.25; }

/* A host buffer of n elements and its device copy (offset bytes into a
 * fresh allocation, for alignment tests). */
typedef struct Buf {
  ElemType et;
  int64_t n;
  uint8_t *host;
  DevPtr base, dev;
} Buf;

static Buf buf_new(ElemType et, int64_t n, unsigned offset, bool random, double fill) {
  Buf b = {et, n, xcalloc((size_t)n, (size_t)et_bytes(et)), 0, 0};
  for (int64_t i = 0; i < n; i++) elem_put(b.host, et, i, random ? small_value() : fill);
  Diag d = {0};
  size_t bytes = (size_t)n * (size_t)et_bytes(et);
  if (!P->alloc(P, bytes + offset, &b.base, &d) || !P->copy_h2d(P, b.base + offset, b.host, bytes, &d))
    die("mock device memory: %s", d.msg);
  b.dev = b.base + offset;
  return b;
}
static void buf_free(Buf *b) {
  if (b->base) P->free(P, b->base);
  free(b->host);
  *b = (Buf){0};
}

static double act(LibActivation a, double v) {
  switch (a) {
  case LIB_ACT_RELU: return v > 0 ? v : 0;
  case LIB_ACT_GELU_TANH: return 0.5 * v * (1 + tanh(0.7978845608028654 * (v + 0.044715 * v * v * v)));
  case LIB_ACT_GELU_ERF: return 0.5 * v * (1 + erf(v / sqrt(2.0)));
  default: return v;
  }
}

static double tolerance(ElemType et) {
  return et == ET_F64 ? 1e-12 : et == ET_F32 ? 1e-5 : et == ET_F16 ? 2e-3 : 1e-2;
}

/* ---- GEMM ----------------------------------------------------------------- */

static GemmMatrix row_major(ElemType et, int64_t r, int64_t c, int64_t ld, int64_t bs) {
  return (GemmMatrix){et, r, c, bs, ld, 1};
}
static GemmMatrix col_major(ElemType et, int64_t r, int64_t c, int64_t ld, int64_t bs) {
  return (GemmMatrix){et, r, c, bs, 1, ld};
}
static int64_t extent(const GemmMatrix *x, int64_t batch) {
  return (batch - 1) * x->batch_stride + (x->rows - 1) * x->row_stride +
         (x->cols - 1) * x->col_stride + 1;
}
static int64_t at(const GemmMatrix *x, int64_t b, int64_t r, int64_t c) {
  return b * x->batch_stride + r * x->row_stride + c * x->col_stride;
}

/* A GEMM run: the buffers (kept for the log checks) and the outcome. */
typedef struct GemmRun {
  Buf a, b, c, bias, d, ws;
  DevPtr s[GEMM_NSLICES];
  bool ok;
  char *msg;
} GemmRun;

enum { IN_PLACE_C = 1 };

/* Sets up a GEMM's buffers; offsets[k] shifts slice k (bytes). */
static GemmRun gemm_setup(const GemmDesc *g, const unsigned offsets[GEMM_NSLICES], int flags) {
  GemmRun r = {0};
  unsigned off[GEMM_NSLICES] = {0};
  if (offsets) memcpy(off, offsets, sizeof off);
  r.a = buf_new(g->a.et, extent(&g->a, g->batch), off[GEMM_A], true, 0);
  r.b = buf_new(g->b.et, extent(&g->b, g->batch), off[GEMM_B], true, 0);
  bool in_place = flags & IN_PLACE_C;
  r.d = buf_new(g->d.et, extent(&g->d, g->batch), off[GEMM_D], in_place, 7);
  if (g->beta != 0 && !in_place) r.c = buf_new(g->c.et, extent(&g->c, g->batch), off[GEMM_C], true, 0);
  if (g->has_bias) r.bias = buf_new(g->bias_et, g->n, off[GEMM_BIAS], true, 0);
  if (g->workspace_bytes) r.ws = buf_new(ET_U8, g->workspace_bytes, 0, false, 0);
  r.s[GEMM_A] = r.a.dev;
  r.s[GEMM_B] = r.b.dev;
  r.s[GEMM_C] = in_place ? r.d.dev : r.c.dev;
  r.s[GEMM_BIAS] = r.bias.dev;
  r.s[GEMM_D] = r.d.dev;
  r.s[GEMM_WORKSPACE] = r.ws.dev;
  return r;
}

static void gemm_call(GemmRun *r, const GemmDesc *g) {
  Diag d = {0};
  free(r->msg);
  r->ok = P->gemm(P, g, r->s, &d);
  r->msg = d.msg ? xstrdup(d.msg) : NULL;
  diag_clear(&d);
}

/* Compares D with plain loops over the inputs (c_before: D's contents
 * before an in-place call). */
static bool gemm_verify(const char *name, const GemmRun *r, const GemmDesc *g,
                        const uint8_t *c_before) {
  Buf d = r->d;
  uint8_t *host = xcalloc((size_t)d.n, (size_t)et_bytes(d.et));
  Diag dg = {0};
  P->copy_d2h(P, host, d.dev, (size_t)d.n * (size_t)et_bytes(d.et), &dg);
  bool *inside = xcalloc((size_t)d.n, 1);
  bool ok = true;
  const uint8_t *chost = c_before ? c_before : r->c.host;
  for (int64_t b = 0; b < g->batch && ok; b++)
    for (int64_t i = 0; i < g->m && ok; i++)
      for (int64_t j = 0; j < g->n && ok; j++) {
        double acc = 0;
        for (int64_t k = 0; k < g->k; k++)
          acc += elem_get(r->a.host, g->a.et, at(&g->a, b, i, k)) *
                 elem_get(r->b.host, g->b.et, at(&g->b, b, k, j));
        double v = g->alpha_re * acc;
        if (g->beta != 0) v += g->beta * elem_get(chost, g->c.et, at(&g->c, b, i, j));
        if (g->has_bias) v += elem_get(r->bias.host, g->bias_et, j);
        double want = round_to(g->d.et, act(g->act, v));
        int64_t o = at(&g->d, b, i, j);
        inside[o] = true;
        double got = elem_get(host, d.et, o);
        if (fabs(got - want) > tolerance(g->d.et) * fmax(1, fabs(want)))
          ok = check(false, "%s: D[%lld][%lld][%lld] is %g, want %g", name, (long long)b,
                     (long long)i, (long long)j, got, want);
      }
  for (int64_t o = 0; o < d.n && ok && !c_before; o++)
    if (!inside[o] && elem_get(host, d.et, o) != 7)
      ok = check(false, "%s: D's padding element %lld was written", name, (long long)o);
  if (ok) check(true, "%s", name);
  free(inside);
  free(host);
  return ok;
}

static void gemm_free(GemmRun *r) {
  buf_free(&r->a);
  buf_free(&r->b);
  buf_free(&r->c);
  buf_free(&r->bias);
  buf_free(&r->d);
  buf_free(&r->ws);
  free(r->msg);
}

/* Runs a GEMM on fresh buffers, checks the result, returns cuBLASLt's
 * log (caller frees). */
static char *gemm_case(const char *name, const GemmDesc *g, const unsigned offsets[GEMM_NSLICES],
                       int flags, GemmRun *keep) {
  drop_logs();
  GemmRun r = gemm_setup(g, offsets, flags);
  uint8_t *before = NULL;
  if (flags & IN_PLACE_C) {
    size_t n = (size_t)r.d.n * (size_t)et_bytes(r.d.et);
    before = xmalloc(n);
    memcpy(before, r.d.host, n);
  }
  gemm_call(&r, g);
  if (check(r.ok, "%s: gemm failed: %s", name, r.msg ? r.msg : "?")) gemm_verify(name, &r, g, before);
  free(before);
  if (keep) *keep = r;
  else gemm_free(&r);
  return take_lt();
}

/* The cublasLtMatmul line the mock logs. */
typedef struct Lay {
  const char *type;
  int rows, cols, ld;
  bool row;
  int batch;
  long long stride;
  DevPtr p;
} Lay;

static void put_lay(StrBuf *b, const char *name, Lay l) {
  sb_printf(b, " %s=%s %dx%d ld=%d %s batch=%d stride=%lld @%p", name, l.type, l.rows, l.cols,
            l.ld, l.row ? "ROW" : "COL", l.batch, l.stride, (void *)(uintptr_t)l.p);
}

static char *matmul_line(const char *compute, const char *scale, char ta, char tb,
                         const char *epi, DevPtr bias, const char *bias_type, Lay a, Lay b,
                         Lay c, bool c_is_d, Lay d, double alpha, double beta, DevPtr ws,
                         size_t ws_size) {
  StrBuf s;
  sb_init(&s);
  sb_printf(&s, "cublasLtMatmul compute=%s scale=%s transa=%c transb=%c epilogue=%s bias=%p/%s",
            compute, scale, ta, tb, epi, (void *)(uintptr_t)bias, bias_type);
  put_lay(&s, "A", a);
  put_lay(&s, "B", b);
  put_lay(&s, c_is_d ? "C(=Ddesc)" : "C", c);
  put_lay(&s, "D", d);
  sb_printf(&s, " alpha=%g beta=%g workspace=%p/%zu stream=%p", alpha, beta,
            (void *)(uintptr_t)ws, ws_size, (void *)NULL);
  return sb_detach(&s);
}

static GemmDesc gemm_desc(ElemType et, int64_t batch, int64_t m, int64_t n, int64_t k) {
  GemmDesc g = {0};
  g.batch = batch, g.m = m, g.n = n, g.k = k;
  g.a = row_major(et, m, k, k, batch > 1 ? m * k : 0);
  g.b = row_major(et, k, n, n, batch > 1 ? k * n : 0);
  g.d = row_major(et, m, n, n, batch > 1 ? m * n : 0);
  g.c = g.d;
  g.alpha_re = 1;
  g.bias_et = et;
  return g;
}

static void test_gemm_row_major(void) {
  const char *name = "gemm f32 row-major";
  GemmDesc g = gemm_desc(ET_F32, 1, 3, 4, 5);
  GemmRun r;
  char *log = gemm_case(name, &g, NULL, 0, &r);
  /* D^T = B^T A^T: cuBLAS's A is B^T (4x5, column-major ld 4), its B is A^T */
  Lay a = {"R_32F", 4, 5, 4, false, 1, 0, r.b.dev}, b = {"R_32F", 5, 3, 5, false, 1, 0, r.a.dev};
  Lay d = {"R_32F", 4, 3, 4, false, 1, 0, r.d.dev};
  char *mm = matmul_line("32F", "R_32F", 'N', 'N', "DEFAULT", 0, "default", a, b, d, true, d, 1,
                         0, 0, 0);
  StrBuf want;
  sb_init(&want);
  sb_printf(&want,
            "cublasLtCreate\n"
            "cublasLtMatmulDescCreate compute=32F scale=R_32F\n"
            "cublasLtMatmulDescSetAttribute TRANSA=0\n"
            "cublasLtMatmulDescSetAttribute TRANSB=0\n"
            "cublasLtMatrixLayoutCreate R_32F 4x5 ld=4\n"
            "cublasLtMatrixLayoutCreate R_32F 5x3 ld=5\n"
            "cublasLtMatrixLayoutCreate R_32F 4x3 ld=4\n"
            "cublasLtMatmulPreferenceCreate\n"
            "cublasLtMatmulPreferenceSetAttribute MAX_WORKSPACE_BYTES=0\n"
            "cublasLtMatmulAlgoGetHeuristic -> 1 (workspace 0, alignments 256 256 256 256)\n"
            "cublasLtMatmulPreferenceDestroy\n"
            "%s\n", mm);
  expect_log(name, log, want.s);
  free(log);
  /* the second call reuses the descriptors and the algorithm */
  gemm_call(&r, &g);
  check(r.ok, "%s, again: %s", name, r.msg ? r.msg : "");
  log = take_lt();
  sb_clear(&want);
  sb_printf(&want, "%s\n", mm);
  expect_log("gemm f32 row-major, cached", log, want.s);
  gemm_verify("gemm f32 row-major, cached", &r, &g, NULL);
  free(log);
  free(mm);
  sb_free(&want);
  gemm_free(&r);
}

static void test_gemm_col_major(void) {
  const char *name = "gemm column-major A and D, row-major B";
  GemmDesc g = gemm_desc(ET_F32, 1, 3, 4, 5);
  g.a = col_major(ET_F32, 3, 5, 3, 0);
  g.d = col_major(ET_F32, 3, 4, 3, 0);
  GemmRun r;
  char *log = gemm_case(name, &g, NULL, 0, &r);
  /* as is: A column-major, B (row-major) transposed */
  Lay a = {"R_32F", 3, 5, 3, false, 1, 0, r.a.dev}, b = {"R_32F", 4, 5, 4, false, 1, 0, r.b.dev};
  Lay d = {"R_32F", 3, 4, 3, false, 1, 0, r.d.dev};
  char *mm = matmul_line("32F", "R_32F", 'N', 'T', "DEFAULT", 0, "default", a, b, d, true, d, 1,
                         0, 0, 0);
  expect_line(name, log, mm);
  free(mm);
  free(log);
  gemm_free(&r);
}

static void test_gemm_batch_padded(void) {
  const char *name = "gemm batch 2, padded leading dims";
  GemmDesc g = gemm_desc(ET_F32, 2, 3, 4, 5);
  g.a = row_major(ET_F32, 3, 5, 6, 20);
  g.b = col_major(ET_F32, 5, 4, 7, 30);
  g.d = row_major(ET_F32, 3, 4, 5, 16);
  GemmRun r;
  char *log = gemm_case(name, &g, NULL, 0, &r);
  Lay a = {"R_32F", 5, 4, 7, false, 2, 30, r.b.dev}, b = {"R_32F", 5, 3, 6, false, 2, 20, r.a.dev};
  Lay d = {"R_32F", 4, 3, 5, false, 2, 16, r.d.dev};
  char *mm = matmul_line("32F", "R_32F", 'T', 'N', "DEFAULT", 0, "default", a, b, d, true, d, 1,
                         0, 0, 0);
  expect_line(name, log, mm);
  check(count_lines(log, "cublasLtMatrixLayoutSetAttribute BATCH_COUNT=2") == 3,
        "%s: three layouts with BATCH_COUNT=2", name);
  expect_line(name, log, "cublasLtMatrixLayoutSetAttribute STRIDED_BATCH_OFFSET=30");
  expect_line(name, log, "cublasLtMatrixLayoutSetAttribute STRIDED_BATCH_OFFSET=20");
  expect_line(name, log, "cublasLtMatrixLayoutSetAttribute STRIDED_BATCH_OFFSET=16");
  free(mm);
  free(log);
  gemm_free(&r);
}

static void test_gemm_epilogues(void) {
  static const struct {
    LibActivation act;
    bool bias;
    const char *epi;
  } cases[] = {
    {LIB_ACT_NONE, true, "BIAS"}, {LIB_ACT_RELU, false, "RELU"},
    {LIB_ACT_RELU, true, "RELU_BIAS"}, {LIB_ACT_GELU_TANH, false, "GELU"},
    {LIB_ACT_GELU_TANH, true, "GELU_BIAS"},
  };
  for (size_t k = 0; k < ARRAY_LEN(cases); k++) {
    char name[128];
    snprintf(name, sizeof name, "gemm epilogue %s", cases[k].epi);
    GemmDesc g = gemm_desc(ET_F32, 1, 4, 3, 2);
    g.act = cases[k].act;
    g.has_bias = cases[k].bias;
    GemmRun r;
    char *log = gemm_case(name, &g, NULL, 0, &r);
    char line[128];
    snprintf(line, sizeof line, "cublasLtMatmulDescSetAttribute EPILOGUE=%s", cases[k].epi);
    expect_line(name, log, line);
    Lay a = {"R_32F", 3, 2, 3, false, 1, 0, r.b.dev}, b = {"R_32F", 2, 4, 2, false, 1, 0, r.a.dev};
    Lay d = {"R_32F", 3, 4, 3, false, 1, 0, r.d.dev};
    char *mm = matmul_line("32F", "R_32F", 'N', 'N', cases[k].epi, r.bias.dev, "default", a, b,
                           d, true, d, 1, 0, 0, 0);
    expect_line(name, log, mm);
    free(mm);
    free(log);
    gemm_free(&r);
  }
  /* a column-major D with a bias: D^T in row order */
  const char *name = "gemm column-major D with bias";
  GemmDesc g = gemm_desc(ET_F32, 1, 4, 3, 2);
  g.d = col_major(ET_F32, 4, 3, 4, 0);
  g.has_bias = true;
  g.act = LIB_ACT_RELU;
  GemmRun r;
  char *log = gemm_case(name, &g, NULL, 0, &r);
  expect_line(name, log, "cublasLtMatrixLayoutSetAttribute ORDER=1");
  Lay a = {"R_32F", 3, 2, 3, false, 1, 0, r.b.dev}, b = {"R_32F", 2, 4, 2, false, 1, 0, r.a.dev};
  Lay d = {"R_32F", 3, 4, 4, true, 1, 0, r.d.dev};
  char *mm = matmul_line("32F", "R_32F", 'N', 'N', "RELU_BIAS", r.bias.dev, "default", a, b, d,
                         true, d, 1, 0, 0, 0);
  expect_line(name, log, mm);
  free(mm);
  free(log);
  /* a new bias pointer: set on the cached descriptor, no new heuristic */
  Buf bias2 = buf_new(ET_F32, g.n, 0, true, 0);
  buf_free(&r.bias);
  r.bias = bias2;
  r.s[GEMM_BIAS] = bias2.dev;
  gemm_call(&r, &g);
  check(r.ok, "gemm new bias pointer: %s", r.msg ? r.msg : "");
  gemm_verify("gemm new bias pointer", &r, &g, NULL);
  log = take_lt();
  char line[128];
  snprintf(line, sizeof line, "cublasLtMatmulDescSetAttribute BIAS_POINTER=%p",
           (void *)(uintptr_t)bias2.dev);
  expect_line("gemm new bias pointer", log, line);
  check(count_lines(log, "cublasLtMatmulAlgoGetHeuristic") == 0 &&
            count_lines(log, "cublasLtMatmul ") == 1,
        "gemm new bias pointer: one cublasLtMatmul, no heuristic");
  free(log);
  gemm_free(&r);
}

static void test_gemm_types(void) {
  /* tf32 */
  GemmDesc g = gemm_desc(ET_F32, 1, 2, 3, 4);
  g.allow_tf32 = true;
  char *log = gemm_case("gemm tf32", &g, NULL, 0, NULL);
  expect_line("gemm tf32", log, "cublasLtMatmulDescCreate compute=32F_FAST_TF32 scale=R_32F");
  free(log);
  /* f64, alpha and beta, C distinct from D with its own leading dim */
  const char *name = "gemm f64 alpha beta C";
  g = gemm_desc(ET_F64, 1, 3, 2, 4);
  g.alpha_re = 0.5;
  g.beta = -2;
  g.c = row_major(ET_F64, 3, 2, 6, 0);
  GemmRun r;
  log = gemm_case(name, &g, NULL, 0, &r);
  expect_line(name, log, "cublasLtMatmulDescCreate compute=64F scale=R_64F");
  Lay a = {"R_64F", 2, 4, 2, false, 1, 0, r.b.dev}, b = {"R_64F", 4, 3, 4, false, 1, 0, r.a.dev};
  Lay c = {"R_64F", 2, 3, 6, false, 1, 0, r.c.dev}, d = {"R_64F", 2, 3, 2, false, 1, 0, r.d.dev};
  char *mm = matmul_line("64F", "R_64F", 'N', 'N', "DEFAULT", 0, "default", a, b, c, false, d,
                         0.5, -2, 0, 0);
  expect_line(name, log, mm);
  free(mm);
  free(log);
  gemm_free(&r);
  /* bf16 -> f32, f16 -> f16 */
  g = gemm_desc(ET_BF16, 2, 3, 5, 4);
  g.d = row_major(ET_F32, 3, 5, 5, 15);
  log = gemm_case("gemm bf16 to f32", &g, NULL, 0, NULL);
  expect_line("gemm bf16 to f32", log, "cublasLtMatrixLayoutCreate R_32F 5x3 ld=5");
  expect_line("gemm bf16 to f32", log, "cublasLtMatrixLayoutCreate R_16BF 5x4 ld=5");
  free(log);
  g = gemm_desc(ET_F16, 1, 6, 2, 3);
  g.alpha_re = 2;
  g.has_bias = true;
  g.act = LIB_ACT_GELU_TANH;
  log = gemm_case("gemm f16", &g, NULL, 0, NULL);
  expect_line("gemm f16", log, "cublasLtMatrixLayoutCreate R_16F 2x6 ld=2");
  free(log);
  /* f8: e4m3fn x e5m2 -> bf16, B column-major so cuBLAS's A is transposed (TN) */
  name = "gemm f8";
  g = gemm_desc(ET_F8E4M3FN, 1, 3, 4, 8);
  g.b = col_major(ET_F8E5M2, 8, 4, 8, 0);
  g.d = row_major(ET_BF16, 3, 4, 4, 0);
  g.has_bias = true;
  g.bias_et = ET_F16;
  log = gemm_case(name, &g, NULL, 0, &r);
  Lay a8 = {"R_8F_E5M2", 8, 4, 8, false, 1, 0, r.b.dev};
  Lay b8 = {"R_8F_E4M3", 8, 3, 8, false, 1, 0, r.a.dev};
  Lay d8 = {"R_16BF", 4, 3, 4, false, 1, 0, r.d.dev};
  mm = matmul_line("32F", "R_32F", 'T', 'N', "BIAS", r.bias.dev, "R_16F", a8, b8, d8, true, d8,
                   1, 0, 0, 0);
  expect_line(name, log, mm);
  expect_line(name, log, "cublasLtMatmulDescSetAttribute BIAS_DATA_TYPE=R_16F");
  free(mm);
  free(log);
  gemm_free(&r);
  /* f8 with a row-major B: not TN, the heuristic finds nothing */
  g = gemm_desc(ET_F8E4M3FN, 1, 3, 4, 8);
  g.d = row_major(ET_F32, 3, 4, 4, 0);
  r = gemm_setup(&g, NULL, 0);
  gemm_call(&r, &g);
  check(!r.ok, "gemm f8 not TN: fails");
  expect_has("gemm f8 not TN", r.msg, "cuBLASLt has no algorithm for this GEMM: f8e4m3fn x "
             "f8e4m3fn -> f32, batch 1, m 3, n 4, k 8, A' 4x8 ld 4, B' 8x3 ld 8, D' 4x3 ld 4, "
             "epilogue none, workspace 0 bytes (cuBLASLt version 130000)");
  gemm_free(&r);
  drop_logs();
}

static void test_gemm_in_place_workspace_alignment(void) {
  const char *name = "gemm in place (C is D), beta 1";
  GemmDesc g = gemm_desc(ET_F32, 1, 4, 4, 3);
  g.beta = 1;
  GemmRun r;
  char *log = gemm_case(name, &g, NULL, IN_PLACE_C, &r);
  Lay a = {"R_32F", 4, 3, 4, false, 1, 0, r.b.dev}, b = {"R_32F", 3, 4, 3, false, 1, 0, r.a.dev};
  Lay d = {"R_32F", 4, 4, 4, false, 1, 0, r.d.dev};
  char *mm = matmul_line("32F", "R_32F", 'N', 'N', "DEFAULT", 0, "default", a, b, d, false, d,
                         1, 1, 0, 0);
  expect_line(name, log, mm);
  free(mm);
  free(log);
  gemm_free(&r);

  name = "gemm workspace";
  g = gemm_desc(ET_F32, 1, 4, 4, 3);
  g.workspace_bytes = 8192;
  log = gemm_case(name, &g, NULL, 0, &r);
  expect_line(name, log, "cublasLtMatmulPreferenceSetAttribute MAX_WORKSPACE_BYTES=8192");
  expect_line(name, log, "cublasLtMatmulAlgoGetHeuristic -> 1 (workspace 4096, alignments 256 256 256 256)");
  Lay dw = {"R_32F", 4, 4, 4, false, 1, 0, r.d.dev};
  Lay aw = {"R_32F", 4, 3, 4, false, 1, 0, r.b.dev}, bw = {"R_32F", 3, 4, 3, false, 1, 0, r.a.dev};
  mm = matmul_line("32F", "R_32F", 'N', 'N', "DEFAULT", 0, "default", aw, bw, dw, true, dw, 1, 0,
                   r.ws.dev, 8192);
  expect_line(name, log, mm);
  free(mm);
  free(log);
  gemm_free(&r);

  name = "gemm misaligned slices";
  g = gemm_desc(ET_F32, 1, 4, 4, 3);
  unsigned offs[GEMM_NSLICES] = {[GEMM_A] = 4, [GEMM_D] = 8};
  log = gemm_case(name, &g, offs, 0, NULL);
  /* our A is cuBLAS's B here */
  expect_line(name, log, "cublasLtMatmulPreferenceSetAttribute MIN_ALIGNMENT_B_BYTES=4");
  expect_line(name, log, "cublasLtMatmulPreferenceSetAttribute MIN_ALIGNMENT_C_BYTES=8");
  expect_line(name, log, "cublasLtMatmulPreferenceSetAttribute MIN_ALIGNMENT_D_BYTES=8");
  check(count_lines(log, "cublasLtMatmulPreferenceSetAttribute MIN_ALIGNMENT_A") == 0,
        "%s: A' is aligned", name);
  free(log);
}

static void gemm_error(const char *name, const GemmDesc *g, const char *want) {
  GemmRun r = gemm_setup(g, NULL, 0);
  gemm_call(&r, g);
  check(!r.ok, "%s: fails", name);
  expect_has(name, r.msg, want);
  gemm_free(&r);
  drop_logs();
}

static void test_gemm_errors(void) {
  GemmDesc g = gemm_desc(ET_F32, 1, 2, 2, 2);
  g.act = LIB_ACT_GELU_ERF;
  gemm_error("gemm gelu_erf", &g, "cuBLASLt GEMM: the gelu_erf epilogue is not supported");
  g = gemm_desc(ET_S8, 1, 2, 2, 2);
  g.d.et = g.c.et = ET_S32;
  gemm_error("gemm s8", &g, "element types s8 x s8 -> s32 are not supported");
  g = gemm_desc(ET_F8E4M3FN, 1, 2, 2, 2);
  gemm_error("gemm f8 result", &g, "an f8 GEMM with a f8e4m3fn result is not supported");
  g = gemm_desc(ET_F32, 1, 2, 2, 2);
  g.beta = 1;
  GemmRun r = gemm_setup(&g, NULL, 0);
  r.s[GEMM_C] = 0;
  gemm_call(&r, &g);
  check(!r.ok, "gemm beta without C: fails");
  expect_has("gemm beta without C", r.msg, "beta is 1 but there is no C slice");
  gemm_free(&r);
  /* the library's own errors */
  g = gemm_desc(ET_F32, 1, 5, 2, 2);
  mock_fail("libcublasLt.so.13", "cublasLtMatmul", 13);
  gemm_error("gemm execution fails", &g, "cuBLASLt: cublasLtMatmul failed: "
             "CUBLAS_STATUS_EXECUTION_FAILED (13): the GPU program failed to execute");
  mock_fail("libcublasLt.so.13", "cublasLtMatmulAlgoGetHeuristic", -1);
  g.m = 6, g.a.rows = 6, g.d.rows = g.c.rows = 6;
  gemm_error("gemm no algorithm", &g, "cuBLASLt has no algorithm for this GEMM: f32 x f32 -> "
             "f32, batch 1, m 6, n 2, k 2");
  mock_fail("libcublasLt.so.13", "cublasLtMatmulAlgoGetHeuristic", 0);
  mock_fail("libcublasLt.so.13", NULL, 0);
}

/* ---- convolution ------------------------------------------------------------- */

/* Packed strides for dims in the physical order perm (outermost first). */
static ConvTensor tensor_of(ElemType et, int nd, const int64_t *dims, const int *perm) {
  ConvTensor t = {et, {0}, {0}};
  int64_t s = 1;
  for (int k = nd - 1; k >= 0; k--) {
    t.dims[perm[k]] = dims[perm[k]];
    t.strides[perm[k]] = s;
    s *= dims[perm[k]];
  }
  return t;
}
static const int NCHW[] = {0, 1, 2, 3, 4}, NHWC[] = {0, 2, 3, 1}, NCW[] = {0, 1, 2};

static int64_t tensor_extent(const ConvTensor *t, int nd) {
  int64_t e = 1;
  for (int k = 0; k < nd; k++) e += (t->dims[k] - 1) * t->strides[k];
  return e;
}
static int64_t tensor_at(const ConvTensor *t, const int64_t *idx, int nd) {
  int64_t o = 0;
  for (int k = 0; k < nd; k++) o += idx[k] * t->strides[k];
  return o;
}

typedef struct ConvRun {
  Buf x, w, y, bias, side, ws;
  DevPtr s[CONV_NSLICES];
  bool ok;
  char *msg;
} ConvRun;

static ConvRun conv_setup(const ConvDesc *c) {
  ConvRun r = {0};
  int nd = 2 + c->nspatial;
  bool fwd = c->kind == CONV_FORWARD, bdata = c->kind == CONV_BACKWARD_INPUT;
  r.x = buf_new(c->x.et, tensor_extent(&c->x, nd), 0, !bdata, 7);
  r.w = buf_new(c->w.et, tensor_extent(&c->w, nd), 0, fwd || bdata, 7);
  r.y = buf_new(c->y.et, tensor_extent(&c->y, nd), 0, !fwd, 7);
  if (c->has_bias) r.bias = buf_new(c->bias_et, c->y.dims[1], 0, true, 0);
  if (c->side_scale != 0) r.side = buf_new(c->y.et, tensor_extent(&c->y, nd), 0, true, 0);
  if (c->workspace_bytes) r.ws = buf_new(ET_U8, c->workspace_bytes, 0, false, 0);
  r.s[CONV_X] = r.x.dev, r.s[CONV_W] = r.w.dev, r.s[CONV_Y] = r.y.dev;
  r.s[CONV_BIAS] = r.bias.dev, r.s[CONV_SIDE] = r.side.dev, r.s[CONV_WORKSPACE] = r.ws.dev;
  return r;
}

static void conv_call(ConvRun *r, const ConvDesc *c) {
  Diag d = {0};
  free(r->msg);
  r->ok = P->conv(P, c, r->s, &d);
  r->msg = d.msg ? xstrdup(d.msg) : NULL;
  diag_clear(&d);
}

static void unflat(int64_t f, const int64_t *dims, int nd, int64_t *idx) {
  for (int k = nd - 1; k >= 0; k--) idx[k] = f % dims[k], f /= dims[k];
}

/* The written tensor against libcall.h's formula, computed from the
 * descriptor as given (before any 1-D widening). */
static bool conv_verify(const char *name, ConvRun *r, const ConvDesc *c) {
  int nd = 2 + c->nspatial;
  const ConvTensor *tout = c->kind == CONV_FORWARD ? &c->y : c->kind == CONV_BACKWARD_INPUT ? &c->x : &c->w;
  Buf *bout = c->kind == CONV_FORWARD ? &r->y : c->kind == CONV_BACKWARD_INPUT ? &r->x : &r->w;
  int64_t n_out = 1;
  for (int k = 0; k < nd; k++) n_out *= tout->dims[k];
  double *acc = xcalloc((size_t)n_out, sizeof *acc);
  int64_t cg = c->w.dims[1], og = c->w.dims[0] / c->groups;
  int64_t ny = 1, nw = 1;
  for (int k = 0; k < nd; k++) ny *= c->y.dims[k];
  for (int k = 1; k < nd; k++) nw *= c->w.dims[k];
  int64_t yi[5], ki[5], wi[5], xi[5];
  for (int64_t fy = 0; fy < ny; fy++) {
    unflat(fy, c->y.dims, nd, yi);
    for (int64_t fw = 0; fw < nw; fw++) {
      unflat(fw, c->w.dims + 1, nd - 1, ki);
      wi[0] = yi[1];
      for (int k = 1; k < nd; k++) wi[k] = ki[k - 1];
      xi[0] = yi[0];
      xi[1] = yi[1] / og * cg + ki[0];
      bool in = true;
      for (int s = 0; s < c->nspatial; s++) {
        xi[2 + s] = yi[2 + s] * c->stride[s] + ki[1 + s] * c->dilation[s] - c->pad_lo[s];
        in = in && xi[2 + s] >= 0 && xi[2 + s] < c->x.dims[2 + s];
      }
      if (!in) continue;
      double xv = elem_get(r->x.host, c->x.et, tensor_at(&c->x, xi, nd));
      double wv = elem_get(r->w.host, c->w.et, tensor_at(&c->w, wi, nd));
      double yv = elem_get(r->y.host, c->y.et, tensor_at(&c->y, yi, nd));
      int64_t *oi = c->kind == CONV_FORWARD ? yi : c->kind == CONV_BACKWARD_INPUT ? xi : wi;
      int64_t f = 0;
      for (int k = 0; k < nd; k++) f = f * tout->dims[k] + oi[k];
      acc[f] += c->kind == CONV_FORWARD ? xv * wv : c->kind == CONV_BACKWARD_INPUT ? yv * wv : xv * yv;
    }
  }
  uint8_t *got = xcalloc((size_t)bout->n, (size_t)et_bytes(bout->et));
  Diag d = {0};
  P->copy_d2h(P, got, bout->dev, (size_t)bout->n * (size_t)et_bytes(bout->et), &d);
  bool ok = true;
  int64_t idx[5];
  for (int64_t f = 0; f < n_out && ok; f++) {
    unflat(f, tout->dims, nd, idx);
    double v = acc[f];
    if (c->kind == CONV_FORWARD) {
      v *= c->alpha;
      if (c->side_scale != 0) v += c->side_scale * elem_get(r->side.host, c->y.et, tensor_at(&c->y, idx, nd));
      if (c->has_bias) v += elem_get(r->bias.host, c->bias_et, idx[1]);
      v = act(c->act, v);
    }
    double want = round_to(tout->et, v), have = elem_get(got, tout->et, tensor_at(tout, idx, nd));
    if (fabs(have - want) > tolerance(tout->et) * fmax(1, fabs(want)))
      ok = check(false, "%s: output element %lld is %g, want %g", name, (long long)f, have, want);
  }
  if (ok) check(true, "%s", name);
  free(got);
  free(acc);
  return ok;
}

static void conv_free(ConvRun *r) {
  buf_free(&r->x);
  buf_free(&r->w);
  buf_free(&r->y);
  buf_free(&r->bias);
  buf_free(&r->side);
  buf_free(&r->ws);
  free(r->msg);
}

static char *conv_case(const char *name, const ConvDesc *c, ConvRun *keep) {
  drop_logs();
  ConvRun r = conv_setup(c);
  conv_call(&r, c);
  if (check(r.ok, "%s: conv failed: %s", name, r.msg ? r.msg : "?")) conv_verify(name, &r, c);
  if (keep) *keep = r;
  else conv_free(&r);
  return take_dnn();
}

static ConvDesc conv2d(ElemType et, int64_t n, int64_t ci, int64_t h, int64_t w, int64_t o,
                       int64_t kh, int64_t kw, const int *layout) {
  ConvDesc c = {0};
  c.kind = CONV_FORWARD;
  c.nspatial = 2;
  int64_t xd[] = {n, ci, h, w}, wd[] = {o, ci, kh, kw};
  c.x = tensor_of(et, 4, xd, layout);
  c.w = tensor_of(et, 4, wd, layout);
  for (int k = 0; k < 2; k++) c.stride[k] = c.dilation[k] = 1;
  int64_t yd[] = {n, o, h - kh + 1, w - kw + 1};
  c.y = tensor_of(et, 4, yd, layout);
  c.groups = 1;
  c.alpha = 1;
  c.bias_et = et;
  return c;
}
/* y's dims from x, w and the window */
static void conv_fix_y(ConvDesc *c, const int *layout) {
  int nd = 2 + c->nspatial;
  int64_t yd[5] = {c->x.dims[0], c->w.dims[0]};
  for (int s = 0; s < c->nspatial; s++) {
    int64_t span = c->dilation[s] * (c->w.dims[2 + s] - 1) + 1;
    yd[2 + s] = (c->x.dims[2 + s] + c->pad_lo[s] + c->pad_hi[s] - span) / c->stride[s] + 1;
  }
  c->y = tensor_of(c->y.et, nd, yd, layout);
}

/* The own workspace buffer: what the libcuda mock allocated last. */
static DevPtr last_alloc(const char *cuda_log, size_t size) {
  DevPtr p = 0;
  char want[64];
  snprintf(want, sizeof want, "cuMemAlloc %zu -> ", size);
  for (const char *l = strstr(cuda_log, want); l; l = strstr(l + 1, want)) {
    void *v = NULL;
    if (sscanf(l + strlen(want), "%p", &v) == 1) p = (DevPtr)(uintptr_t)v;
  }
  return p;
}

static void test_conv_forward_bias_relu(void) {
  const char *name = "conv forward f32 bias relu";
  ConvDesc c = conv2d(ET_F32, 1, 3, 5, 5, 4, 3, 3, NCHW);
  c.pad_lo[0] = c.pad_lo[1] = c.pad_hi[0] = c.pad_hi[1] = 1;
  conv_fix_y(&c, NCHW);
  c.has_bias = true;
  c.act = LIB_ACT_RELU;
  c.allow_tf32 = true;
  ConvRun r;
  char *log = conv_case(name, &c, &r);
  char *cuda = take_cuda();
  DevPtr ws = last_alloc(cuda, 4096);
  check(ws != 0, "%s: a 4096-byte workspace of its own (no slice)", name);
  StrBuf want;
  sb_init(&want);
  sb_printf(&want,
            "cudnnBackendExecute engine=0 workspace=%p\n"
            "  conv_fwd x=#1 w=#2 y=#6 alpha=1 beta=0 comp=FLOAT mode=CROSS_CORRELATION pre=[1,1] post=[1,1] stride=[1,1] dilation=[1,1]\n"
            "  pointwise ADD prec=FLOAT x=#6 b=#4 y=#7\n"
            "  pointwise RELU_FWD prec=FLOAT x=#7 y=#3\n"
            "  tensor #1 FLOAT dims=[1,3,5,5] strides=[75,25,5,1] align=16 @%p\n"
            "  tensor #2 FLOAT dims=[4,3,3,3] strides=[27,9,3,1] align=16 @%p\n"
            "  tensor #3 FLOAT dims=[1,4,5,5] strides=[100,25,5,1] align=16 @%p\n"
            "  tensor #4 FLOAT dims=[1,4,1,1] strides=[4,1,4,4] align=16 @%p\n"
            "  tensor #6 FLOAT dims=[1,4,5,5] strides=[100,25,5,1] align=16 virtual\n"
            "  tensor #7 FLOAT dims=[1,4,5,5] strides=[100,25,5,1] align=16 virtual\n",
            (void *)(uintptr_t)ws, (void *)(uintptr_t)r.x.dev, (void *)(uintptr_t)r.w.dev,
            (void *)(uintptr_t)r.y.dev, (void *)(uintptr_t)r.bias.dev);
  /* the first call: handle, stream, the graph, heuristics, plan, variant pack */
  expect_line(name, log, "cudnnCreate");
  expect_line(name, log, "cudnnSetStream (nil)");
  expect_line(name, log, "cudnnBackendFinalize heuristics mode=3");
  expect_line(name, log, "cudnnBackendFinalize plan engine=0");
  check(count_lines(log, "cudnnBackendGetAttribute numerical notes") == 0,
        "%s: with TF32 allowed no engine is filtered", name);
  const char *exec = strstr(log, "cudnnBackendExecute");
  check(exec && strcmp(exec, want.s) == 0, "%s: the executed graph differs", name);
  if (!exec || strcmp(exec, want.s) != 0) printf("--- want\n%s--- got\n%s---\n", want.s, exec ? exec : log);
  free(log);
  free(cuda);
  /* cached: only the execution */
  conv_call(&r, &c);
  check(r.ok, "%s, again: %s", name, r.msg ? r.msg : "");
  log = take_dnn();
  expect_log("conv cached", log, want.s);
  cuda = take_cuda();
  check(count_lines(cuda, "cuMemAlloc") == 0, "conv cached: no new workspace");
  free(cuda);
  free(log);
  conv_free(&r);
  sb_free(&want);
}

static void test_conv_layouts(void) {
  /* NHWC f16, groups 2, strides, dilation, asymmetric padding */
  const char *name = "conv f16 NHWC groups strides dilation padding";
  ConvDesc c = conv2d(ET_F16, 2, 4, 7, 6, 6, 2, 3, NHWC);
  int64_t wd[] = {6, 2, 2, 3};
  c.w = tensor_of(ET_F16, 4, wd, NHWC);
  c.groups = 2;
  c.stride[0] = 2, c.dilation[0] = 2, c.pad_lo[0] = 1, c.pad_hi[0] = 2;
  c.pad_hi[1] = 1;
  conv_fix_y(&c, NHWC);
  check(c.y.dims[2] == 4 && c.y.dims[3] == 5, "%s: y is 4x5", name);
  char *log = conv_case(name, &c, NULL);
  expect_has(name, log, "  conv_fwd x=#1 w=#2 y=#3 alpha=1 beta=0 comp=FLOAT mode=CROSS_CORRELATION "
             "pre=[1,0] post=[2,1] stride=[2,1] dilation=[2,1]\n");
  expect_has(name, log, "  tensor #1 HALF dims=[2,4,7,6] strides=[168,1,24,4] align=16");
  expect_has(name, log, "  tensor #2 HALF dims=[6,2,2,3] strides=[12,1,6,2] align=16");
  expect_has(name, log, "  tensor #3 HALF dims=[2,6,4,5] strides=[120,1,30,6] align=16");
  free(log);

  /* 1-D: a spatial dim of 1 in front; TF32 not allowed so engine 0 is skipped */
  name = "conv 1-D f32 without tf32";
  c = (ConvDesc){0};
  c.kind = CONV_FORWARD;
  c.nspatial = 1;
  int64_t xd[] = {1, 2, 9}, wd1[] = {3, 2, 3};
  c.x = tensor_of(ET_F32, 3, xd, NCW);
  c.w = tensor_of(ET_F32, 3, wd1, NCW);
  c.y.et = ET_F32;
  c.stride[0] = 2, c.dilation[0] = 1, c.pad_lo[0] = c.pad_hi[0] = 1;
  c.groups = 1, c.alpha = 1;
  c.workspace_bytes = 1024;
  conv_fix_y(&c, NCW);
  ConvRun r;
  log = conv_case(name, &c, &r);
  expect_has(name, log, "  conv_fwd x=#1 w=#2 y=#3 alpha=1 beta=0 comp=FLOAT mode=CROSS_CORRELATION "
             "pre=[0,1] post=[0,1] stride=[1,2] dilation=[1,1]\n");
  expect_has(name, log, "  tensor #1 FLOAT dims=[1,2,1,9] strides=[18,9,9,1] align=16");
  expect_has(name, log, "  tensor #3 FLOAT dims=[1,3,1,5] strides=[15,5,5,1] align=16");
  expect_line(name, log, "cudnnBackendGetAttribute numerical notes of engine 0");
  check(count_lines(log, "cudnnBackendFinalize plan engine=0") == 0, "%s: engine 0 skipped", name);
  char line[128];
  snprintf(line, sizeof line, "cudnnBackendExecute engine=1 workspace=%p", (void *)(uintptr_t)r.ws.dev);
  expect_line(name, log, line); /* 256 bytes: the slice is big enough */
  free(log);
  conv_free(&r);

  /* 3-D f64, side input with alpha, bias, tanh-GELU */
  name = "conv 3-D f64 side input bias gelu";
  c = (ConvDesc){0};
  c.kind = CONV_FORWARD;
  c.nspatial = 3;
  int64_t x3[] = {1, 2, 4, 4, 3}, w3[] = {2, 2, 2, 2, 2};
  c.x = tensor_of(ET_F64, 5, x3, NCHW);
  c.w = tensor_of(ET_F64, 5, w3, NCHW);
  c.y.et = ET_F64;
  for (int k = 0; k < 3; k++) c.stride[k] = c.dilation[k] = 1;
  c.pad_lo[2] = 1;
  c.groups = 1, c.alpha = 0.5, c.side_scale = 2, c.has_bias = true, c.bias_et = ET_F64;
  c.act = LIB_ACT_GELU_TANH;
  conv_fix_y(&c, NCHW);
  log = conv_case(name, &c, NULL);
  expect_has(name, log, "  conv_fwd x=#1 w=#2 y=#6 alpha=1 beta=0 comp=DOUBLE mode=CROSS_CORRELATION "
             "pre=[0,0,1] post=[0,0,0] stride=[1,1,1] dilation=[1,1,1]\n"
             "  pointwise ADD prec=DOUBLE x=#6 b=#5 y=#7 alpha1=0.5 alpha2=2\n"
             "  pointwise ADD prec=DOUBLE x=#7 b=#4 y=#8\n"
             "  pointwise GELU_APPROX_TANH_FWD prec=DOUBLE x=#8 y=#3\n");
  expect_has(name, log, "  tensor #4 DOUBLE dims=[1,2,1,1,1] strides=[2,1,2,2,2] align=16");
  free(log);

  /* alpha without a side input goes on the convolution; erf-GELU */
  name = "conv bf16 alpha gelu_erf";
  c = conv2d(ET_BF16, 1, 2, 4, 4, 2, 2, 2, NCHW);
  c.alpha = 2;
  c.act = LIB_ACT_GELU_ERF;
  log = conv_case(name, &c, NULL);
  expect_has(name, log, "  conv_fwd x=#1 w=#2 y=#6 alpha=2 beta=0 comp=FLOAT");
  expect_has(name, log, "  pointwise GELU_FWD prec=FLOAT x=#6 y=#3\n");
  free(log);
}

static void test_conv_backward(void) {
  const char *name = "conv backward input";
  ConvDesc c = conv2d(ET_F32, 1, 2, 5, 5, 3, 3, 3, NCHW);
  c.kind = CONV_BACKWARD_INPUT;
  c.stride[0] = c.stride[1] = 2;
  c.allow_tf32 = true;
  conv_fix_y(&c, NCHW);
  char *log = conv_case(name, &c, NULL);
  expect_has(name, log, "  conv_bwd_data dx=#1 w=#2 dy=#3 alpha=1 beta=0 comp=FLOAT "
             "mode=CROSS_CORRELATION pre=[0,0] post=[0,0] stride=[2,2] dilation=[1,1]\n");
  free(log);

  name = "conv backward filter, groups 2, NHWC";
  c = conv2d(ET_F32, 2, 4, 5, 4, 4, 3, 2, NHWC);
  int64_t wd[] = {4, 2, 3, 2};
  c.w = tensor_of(ET_F32, 4, wd, NHWC);
  c.groups = 2;
  c.kind = CONV_BACKWARD_FILTER;
  c.pad_lo[0] = c.pad_hi[0] = 1;
  c.allow_tf32 = true;
  conv_fix_y(&c, NHWC);
  log = conv_case(name, &c, NULL);
  expect_has(name, log, "  conv_bwd_filter x=#1 dw=#2 dy=#3 alpha=1 beta=0 comp=FLOAT "
             "mode=CROSS_CORRELATION pre=[1,0] post=[1,0] stride=[1,1] dilation=[1,1]\n");
  free(log);
}

static void test_conv_engines_and_errors(void) {
  /* engine 0's plan does not build: engine 1 */
  const char *name = "conv first engine fails";
  ConvDesc c = conv2d(ET_F16, 1, 2, 6, 6, 2, 3, 3, NCHW);
  mock_fail("libcudnn.so.9", "plan-engine-0", 3000);
  char *log = conv_case(name, &c, NULL);
  expect_line(name, log, "cudnnBackendFinalize plan engine=0");
  expect_line(name, log, "cudnnBackendFinalize plan engine=1");
  expect_has(name, log, "cudnnBackendExecute engine=1");
  free(log);
  /* and when the only allowed engine fails too */
  name = "conv no engine builds";
  c = conv2d(ET_F32, 1, 2, 6, 6, 2, 3, 3, NCHW);
  mock_fail("libcudnn.so.9", "plan-engine-1", 3000);
  ConvRun r = conv_setup(&c);
  conv_call(&r, &c);
  check(!r.ok, "%s: fails", name);
  expect_has(name, r.msg, "cuDNN has no engine for this convolution (forward, f32, x 1x2x6x6, "
             "w 2x2x3x3, y 1x2x4x4, 1 groups; cuDNN version 91900): 2 engine configurations, 1 "
             "skipped because they compute f32 in TF32");
  expect_has(name, r.msg, "the last one: cuDNN: cudnnBackendFinalize(execution plan) failed: "
             "CUDNN_STATUS_NOT_SUPPORTED (3000): mock: this engine does not build");
  conv_free(&r);
  mock_fail("libcudnn.so.9", NULL, 0);
  /* the heuristics find nothing */
  name = "conv no engines";
  c = conv2d(ET_F32, 1, 2, 7, 7, 2, 3, 3, NCHW);
  mock_fail("libcudnn.so.9", "no-engines", 1);
  r = conv_setup(&c);
  conv_call(&r, &c);
  check(!r.ok, "%s: fails", name);
  expect_has(name, r.msg, "cuDNN has no engine for this convolution");
  conv_free(&r);
  /* execution fails */
  name = "conv execution fails";
  mock_fail("libcudnn.so.9", "cudnnBackendExecute", 5000);
  r = conv_setup(&c);
  conv_call(&r, &c);
  check(!r.ok, "%s: fails", name);
  expect_has(name, r.msg, "cuDNN: cudnnBackendExecute failed: CUDNN_STATUS_EXECUTION_FAILED "
             "(5000): mock: the kernel failed");
  conv_free(&r);
  mock_fail("libcudnn.so.9", NULL, 0);
  /* a second convolution that wants 4096 bytes reuses our buffer */
  name = "conv own workspace reused";
  drop_logs();
  c = conv2d(ET_F32, 1, 1, 3, 3, 1, 2, 2, NCHW);
  c.allow_tf32 = true;
  c.workspace_bytes = 64;
  log = conv_case(name, &c, &r);
  char *cuda = take_cuda();
  check(count_lines(cuda, "cuMemAlloc 4096") == 0, "%s: no new 4096-byte buffer", name);
  check(!strstr(log, "workspace=(nil)"), "%s: a workspace is passed", name);
  char bad[64];
  snprintf(bad, sizeof bad, "workspace=%p", (void *)(uintptr_t)r.ws.dev);
  check(!strstr(log, bad), "%s: the 64-byte slice is too small and not used", name);
  conv_free(&r);
  free(cuda);
  free(log);
  drop_logs();

  static const struct {
    const char *name, *want;
  } errs[] = {
    {"conv mixed types", "element types x f32, w f16, y f32 are not supported"},
    {"conv backward with bias", "a backward_input convolution takes no epilogue"},
    {"conv wrong output size", "y's spatial dim 1 is 3, the convolution gives 2"},
    {"conv groups do not fit", "do not fit 3 feature groups"},
  };
  for (size_t k = 0; k < ARRAY_LEN(errs); k++) {
    c = conv2d(ET_F32, 1, 2, 4, 4, 2, 3, 3, NCHW);
    if (k == 0) c.w.et = ET_F16;
    if (k == 1) c.kind = CONV_BACKWARD_INPUT, c.has_bias = true;
    if (k == 2) c.y.dims[3] = 3;
    if (k == 3) c.groups = 3;
    r = conv_setup(&c);
    conv_call(&r, &c);
    check(!r.ok, "%s: fails", errs[k].name);
    expect_has(errs[k].name, r.msg, errs[k].want);
    conv_free(&r);
  }
  drop_logs();
}

/* ---- the library search ------------------------------------------------------- */

static void make_dirs(const char *path) {
  char *p = xstrdup(path);
  for (char *s = p + 1; *s; s++)
    if (*s == '/') {
      *s = 0;
      mkdir(p, 0755);
      *s = '/';
    }
  mkdir(p, 0755);
  free(p);
}

static void copy_file(const char *from, const char *to) {
  FILE *in = fopen(from, "rb"), *out = fopen(to, "wb");
  if (!in || !out) die("cannot copy %s to %s", from, to);
  char buf[65536];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, in)) > 0) fwrite(buf, 1, n, out);
  fclose(in);
  fclose(out);
}

/* Puts tiny.so at DIR/NAME (DIR under tmpdir). */
static char *plant(const char *dir, const char *name) {
  char full[2048], tiny[2048];
  snprintf(full, sizeof full, "%s/%s", tmpdir, dir);
  make_dirs(full);
  snprintf(full, sizeof full, "%s/%s/%s", tmpdir, dir, name);
  snprintf(tiny, sizeof tiny, "%s/tiny.so", mockdir);
  copy_file(tiny, full);
  return xstrdup(full);
}

static void expect_found(const char *what, const CudaLibSpec *spec, const char *lib_path,
                         const char *want_path) {
  void *h = NULL;
  char *path = NULL;
  Diag d = {0};
  bool ok = cuda_lib_open(spec, lib_path, &h, &path, &d);
  if (check(ok, "%s: not found: %s", what, d.msg ? d.msg : ""))
    check(strcmp(path, want_path) == 0, "%s: found %s, want %s", what, path, want_path);
  free(path);
  diag_clear(&d);
}

static void test_search(void) {
  char dir1[1024], dir2[1024], empty[1024], lp[4096];
  const char *const fake[] = {"libxhlo_fake.so.2", "libxhlo_fake.so.1", NULL};
  const char *const wheels[] = {"nvidia/cublas/lib", "nvidia/*/lib", NULL};
  CudaLibSpec spec = {"Fake", fake, wheels};
  /* lib_path first, directory by directory, each with every name */
  char *p1 = plant("d1", "libxhlo_fake.so.2"), *p2 = plant("d2", "libxhlo_fake.so.1");
  snprintf(dir1, sizeof dir1, "%s/d1", tmpdir);
  snprintf(dir2, sizeof dir2, "%s/d2", tmpdir);
  snprintf(empty, sizeof empty, "%s/empty", tmpdir);
  make_dirs(empty);
  snprintf(lp, sizeof lp, "%s::%s:%s", empty, dir2, dir1);
  expect_found("search lib_path order", &spec, lp, p2);
  snprintf(lp, sizeof lp, "%s:%s", dir1, dir2);
  expect_found("search lib_path newest name first", &spec, lp, p1);
  free(p1);
  free(p2);

  /* $CUDA_HOME/lib64, then the wheels of $HOME and $VIRTUAL_ENV */
  const char *const fake2[] = {"libxhlo_fake2.so.1", NULL};
  CudaLibSpec spec2 = {"Fake2", fake2, wheels};
  char home[1024];
  snprintf(home, sizeof home, "%s/cuda", tmpdir);
  setenv("CUDA_HOME", home, 1);
  char *p = plant("cuda/lib64", "libxhlo_fake2.so.1");
  expect_found("search CUDA_HOME/lib64", &spec2, NULL, p);
  free(p);
  const char *const fake3[] = {"libxhlo_fake3.so.1", NULL};
  CudaLibSpec spec3 = {"Fake3", fake3, wheels};
  snprintf(home, sizeof home, "%s/home", tmpdir);
  setenv("HOME", home, 1);
  p = plant("home/.local/lib/python3.11/site-packages/nvidia/cublas/lib", "libxhlo_fake3.so.1");
  expect_found("search ~/.local wheels", &spec3, NULL, p);
  free(p);
  const char *const fake4[] = {"libxhlo_fake4.so.1", NULL};
  CudaLibSpec spec4 = {"Fake4", fake4, wheels};
  snprintf(home, sizeof home, "%s/venv", tmpdir);
  setenv("VIRTUAL_ENV", home, 1);
  p = plant("venv/lib/python3.12/site-packages/nvidia/cu13/lib", "libxhlo_fake4.so.1");
  expect_found("search $VIRTUAL_ENV wheels (nvidia/*/lib)", &spec4, NULL, p);
  free(p);

  /* missing: the message names the library, the places and --lib-path */
  const char *const missing[] = {"libxhlo_missing.so.3", "libxhlo_missing.so.2", NULL};
  CudaLibSpec specm = {"Missing", missing, wheels};
  void *h = NULL;
  char *path = NULL;
  Diag d = {0};
  check(!cuda_lib_open(&specm, empty, &h, &path, &d) && !h, "search missing: fails");
  const char *parts[] = {"cannot load Missing: no libxhlo_missing.so.3 or libxhlo_missing.so.2 in --lib-path (",
                         empty, "the dynamic loader's path", "/cuda/lib64", "nvidia/cublas/lib, nvidia/*/lib under",
                         "/usr/local/lib/python3*/dist-packages", "$VIRTUAL_ENV/lib/python3*/site-packages",
                         "give the folder that holds it with --lib-path=DIRS"};
  for (size_t k = 0; k < ARRAY_LEN(parts); k++) expect_has("search missing", d.msg, parts[k]);
  diag_clear(&d);
  /* a file that is there but does not load */
  char broken[2048];
  snprintf(broken, sizeof broken, "%s/libxhlo_missing.so.2", empty);
  FILE *f = fopen(broken, "w");
  fputs("not a library\n", f);
  fclose(f);
  check(!cuda_lib_open(&specm, empty, &h, &path, &d), "search broken: fails");
  expect_has("search broken", d.msg, "found but could not load ");
  expect_has("search broken", d.msg, broken);
  diag_clear(&d);

  /* binding: a missing entry point is named */
  snprintf(lp, sizeof lp, "%s/d1", tmpdir);
  check(cuda_lib_open(&spec, lp, &h, &path, &d), "bind: open");
  struct { void *a, *b; } api;
  CudaLibSym syms[] = {{"tiny_symbol", 0, false}, {"no_such_symbol", sizeof(void *), false}};
  check(!cuda_lib_bind(h, path, syms, 2, &api, &d), "bind: fails");
  expect_has("bind", d.msg, "has no entry point no_such_symbol");
  diag_clear(&d);
  CudaLibSym opt[] = {{"tiny_symbol", 0, false}, {"no_such_symbol", sizeof(void *), true}};
  check(cuda_lib_bind(h, path, opt, 2, &api, &d) && api.a && !api.b, "bind: optional entry point");
  free(path);

  check(dev_ptr_alignment(0x1000, 256) == 256 && dev_ptr_alignment(0x1004, 256) == 4 &&
            dev_ptr_alignment(0x1002, 16) == 2 && dev_ptr_alignment(0, 16) == 16,
        "dev_ptr_alignment");
}

/* Through the hooks: a library file that is not the library. */
static void test_hook_load_errors(void) {
  free(plant("badlibs", "libcublasLt.so.13"));
  free(plant("badlibs", "libcudnn.so.9"));
  char dir[1024];
  snprintf(dir, sizeof dir, "%s/badlibs", tmpdir);
  Diag d = {0};
  PlatformOptions o = {.lib_path = dir};
  Platform *p = platform_cuda_new(&o, &d);
  if (!check(p != NULL, "second platform: %s", d.msg ? d.msg : "")) return;
  /* the addresses are never used: loading fails first */
  DevPtr gs[GEMM_NSLICES] = {0x1000, 0x2000, 0, 0, 0x3000, 0};
  GemmDesc g = gemm_desc(ET_F32, 1, 2, 2, 2);
  check(!p->gemm(p, &g, gs, &d), "gemm with a bad cuBLASLt: fails");
  char want[1200];
  snprintf(want, sizeof want, "%s/libcublasLt.so.13 has no entry point cublasLtCreate", dir);
  expect_has("gemm with a bad cuBLASLt", d.msg, want);
  diag_clear(&d);
  ConvDesc c = conv2d(ET_F32, 1, 2, 4, 4, 2, 3, 3, NCHW);
  DevPtr cs[CONV_NSLICES] = {0x1000, 0x2000, 0x3000, 0, 0, 0};
  check(!p->conv(p, &c, cs, &d), "conv with a bad cuDNN: fails");
  snprintf(want, sizeof want, "%s/libcudnn.so.9 has no entry point cudnnGetVersion", dir);
  expect_has("conv with a bad cuDNN", d.msg, want);
  diag_clear(&d);
  platform_free(p);
}

int main(int argc, char **argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: cuda_libs_mock MOCKDIR TMPDIR\n");
    return 2;
  }
  mockdir = argv[1];
  tmpdir = argv[2];
  srand(1);
  Diag d = {0};
  PlatformOptions o = {.lib_path = mockdir};
  P = platform_cuda_new(&o, &d);
  if (!check(P != NULL, "platform_cuda_new on the mock driver: %s", d.msg ? d.msg : "")) {
    printf("%d passed, %d failed\n", passed, failed);
    return 1;
  }
  check(P->gemm && P->conv, "the CUDA platform has the library hooks");
  test_gemm_row_major();
  test_gemm_col_major();
  test_gemm_batch_padded();
  test_gemm_epilogues();
  test_gemm_types();
  test_gemm_in_place_workspace_alignment();
  test_gemm_errors();
  test_conv_forward_bias_relu();
  test_conv_layouts();
  test_conv_backward();
  test_conv_engines_and_errors();
  drop_logs();
  platform_free(P);
  char *log = take_dnn();
  check(has_line(log, "cudnnDestroy"), "cudnnDestroy at the end");
  free(log);
  log = take_lt();
  check(has_line(log, "cublasLtDestroy"), "cublasLtDestroy at the end");
  free(log);
  check(mock_count("libcublasLt.so.13", "mock_live_descriptors") == 0,
        "every cuBLASLt descriptor destroyed (%d live)",
        mock_count("libcublasLt.so.13", "mock_live_descriptors"));
  check(mock_count("libcudnn.so.9", "mock_live_descriptors") == 0,
        "every cuDNN descriptor destroyed (%d live)", mock_count("libcudnn.so.9", "mock_live_descriptors"));
  check(mock_count("libcuda.so.1", "mock_live_allocs") == 0,
        "all device memory freed, the own workspace too (%d live)",
        mock_count("libcuda.so.1", "mock_live_allocs"));
  test_search();
  test_hook_load_errors();
  printf("%d passed, %d failed\n", passed, failed);
  return failed ? 1 : 0;
}
