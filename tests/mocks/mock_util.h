/*
 * mock_util.h - shared by the mock vendor libraries of check-cuda-libs.sh
 * (libcuda.so.1, libcublasLt.so.13, libcudnn.so.9 built from cuda.c,
 * cublaslt.c, cudnn.c here): the call log the test driver reads back,
 * failure injection, and the element conversions.
 *
 * Each mock keeps its own log; the driver finds the mock with
 * dlopen(RTLD_NOLOAD) and calls mock_log_take() (the text since the last
 * take) and mock_fail(name, status) (the call or event `name` returns
 * status until mock_fail(NULL, 0)).  Device memory is host memory (the mock
 * libcuda allocates with aligned_alloc), so the mocks compute for real.
 */
#ifndef MOCK_UTIL_H
#define MOCK_UTIL_H

#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MOCK_EXPORT __attribute__((visibility("default")))

static char *mock_log_buf;
static size_t mock_log_len, mock_log_cap;
static pthread_mutex_t mock_log_mu = PTHREAD_MUTEX_INITIALIZER;
static char mock_fail_name[128];
static int mock_fail_status;

/* (thread-safe: the device threads of a multi-GPU run log at once) */
__attribute__((format(printf, 1, 2))) static void mock_log(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(NULL, 0, fmt, ap);
  va_end(ap);
  pthread_mutex_lock(&mock_log_mu);
  if (mock_log_len + (size_t)n + 2 > mock_log_cap) {
    mock_log_cap = (mock_log_len + (size_t)n + 2) * 2;
    mock_log_buf = realloc(mock_log_buf, mock_log_cap);
  }
  va_start(ap, fmt);
  vsnprintf(mock_log_buf + mock_log_len, (size_t)n + 1, fmt, ap);
  va_end(ap);
  mock_log_len += (size_t)n;
  mock_log_buf[mock_log_len++] = '\n';
  mock_log_buf[mock_log_len] = 0;
  pthread_mutex_unlock(&mock_log_mu);
}

/* The log since the last take (the caller frees it). */
MOCK_EXPORT char *mock_log_take(void);
char *mock_log_take(void) {
  pthread_mutex_lock(&mock_log_mu);
  char *s = mock_log_buf ? mock_log_buf : calloc(1, 1);
  mock_log_buf = NULL;
  mock_log_len = mock_log_cap = 0;
  pthread_mutex_unlock(&mock_log_mu);
  return s;
}

MOCK_EXPORT void mock_fail(const char *name, int status);
void mock_fail(const char *name, int status) {
  snprintf(mock_fail_name, sizeof mock_fail_name, "%s", name ? name : "");
  mock_fail_status = status;
}

/* The injected status for `name`, 0 when none. */
/* Keeps p reachable until the process ends (memory a mock poisons and
 * never hands out again, or hands to a graph that outlives the call), so
 * that LeakSanitizer does not report it. */
__attribute__((unused)) static void mock_keep(void *p) {
  static void **kept;
  static size_t n, cap;
  if (n == cap) {
    cap = cap ? 2 * cap : 64;
    kept = realloc(kept, cap * sizeof *kept);
  }
  kept[n++] = p;
}

static int mock_failing(const char *name) {
  return mock_fail_name[0] && strcmp(mock_fail_name, name) == 0 ? mock_fail_status : 0;
}

/* ---- element conversions ---- */
static double f16_get(const void *p) { return (double)*(const _Float16 *)p; }
static void f16_set(void *p, double v) { *(_Float16 *)p = (_Float16)v; }
static double bf16_get(const void *p) {
  uint32_t u = (uint32_t)*(const uint16_t *)p << 16;
  float f;
  memcpy(&f, &u, 4);
  return f;
}
static void bf16_set(void *p, double v) {
  float f = (float)v;
  uint32_t u;
  memcpy(&u, &f, 4);
  u += 0x7fff + ((u >> 16) & 1); /* round to nearest even */
  *(uint16_t *)p = (uint16_t)(u >> 16);
}
/* f8: sign, exponent bits e, mantissa bits m, bias; e4m3fn has no inf and
 * its NaN is all ones. */
static double f8_get(uint8_t b, int e, int m, int bias) {
  int sign = b >> 7, ex = (b >> m) & ((1 << e) - 1), man = b & ((1 << m) - 1);
  double v = ex == 0 ? ldexp(man, 1 - bias - m) : ldexp(man + (1 << m), ex - bias - m);
  return sign ? -v : v;
}
static double e4m3_get(const void *p) { return f8_get(*(const uint8_t *)p, 4, 3, 7); }
static double e5m2_get(const void *p) { return f8_get(*(const uint8_t *)p, 5, 2, 15); }

static double gelu_tanh(double x) {
  return 0.5 * x * (1 + tanh(0.7978845608028654 * (x + 0.044715 * x * x * x)));
}
static double gelu_erf(double x) { return 0.5 * x * (1 + erf(x / sqrt(2.0))); }

#endif
