/*
 * mock_driver.h - what the CUDA-platform test drivers (cmdbuf_mock.c,
 * cuda_memory_mock.c, cuda_profile_mock.c) share: the pass/fail count, the
 * mock libcuda.so.1's test hooks (its call log, failure and fault
 * injection, live-object counts; tests/mocks/cuda.c), counting in the log,
 * and the pieces of a hand-made artifact.
 *
 * Header-only (each driver is its own program): include it once.
 */
#ifndef XHLOC_MOCK_DRIVER_H
#define XHLOC_MOCK_DRIVER_H

#include <dlfcn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../lib/runtime/platform.h"

#define MD_UNUSED __attribute__((unused))

static int passed, failed;

/* Counts ok; on failure prints "FAIL: " and the message. */
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

/* A test hook of the mock libcuda.so.1 already loaded, or NULL. */
static void *mock_cuda_sym(const char *name) {
  void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
  return h ? dlsym(h, name) : NULL;
}

/* The driver's call log since the last take (caller frees). */
MD_UNUSED static char *take(void) {
  char *(*fn)(void) = (char *(*)(void))mock_cuda_sym("mock_log_take");
  return fn ? fn() : xstrdup("");
}

/* The next call `name` returns status. */
MD_UNUSED static void fail_next(const char *name, int status) {
  void (*fn)(const char *, int) = (void (*)(const char *, int))mock_cuda_sym("mock_fail");
  if (fn) fn(name, status);
}

/* Launching `kernel` faults the context (as MOCK_CUDA_FAULT does). */
MD_UNUSED static void fault(const char *kernel) {
  void (*fn)(const char *) = (void (*)(const char *))mock_cuda_sym("mock_fault");
  if (fn) fn(kernel);
}

/* A live-object count hook ("mock_live_graphs", ...); -1 when missing. */
MD_UNUSED static int live(const char *hook) {
  int (*fn)(void) = (int (*)(void))mock_cuda_sym(hook);
  return fn ? fn() : -1;
}

/* How many times part occurs in log. */
MD_UNUSED static int count(const char *log, const char *part) {
  int n = 0;
  for (const char *p = log; (p = strstr(p, part)); p += strlen(part)) n++;
  return n;
}

MD_UNUSED static BufSlice sl(int a, int64_t off, int64_t size) {
  return (BufSlice){a, off, size};
}

/* A kernel thunk of one 4-thread block writing its last argument. */
MD_UNUSED static Thunk kernel(Arena *ar, const char *name, const char *annotation,
                              int nargs, const BufSlice *args) {
  Thunk k = {.kind = THUNK_KERNEL, .trip_count = -1};
  k.kernel_name = arena_strdup(ar, name);
  k.annotation = arena_strdup(ar, annotation);
  k.nargs = nargs;
  k.args = arena_memdup(ar, args, sizeof *args * (size_t)nargs);
  k.written = ARENA_ARRAY(ar, bool, nargs);
  k.written[nargs - 1] = true;
  for (int j = 0; j < 3; j++) k.grid[j] = k.block[j] = 1;
  k.block[0] = 4;
  return k;
}

/* An sm_90 artifact named `name` (kernel file NAME.ptx) with four
 * allocations: parameters x (0) and y (1), f32[4]; a 64-byte temp (2); the
 * f32[4] output (3).  No thunks, parameters or outputs yet. */
MD_UNUSED static Artifact *four_alloc_artifact(const char *name) {
  Artifact *a = artifact_new();
  Arena *ar = a->arena;
  char file[64];
  snprintf(file, sizeof file, "%s.ptx", name);
  a->module_name = arena_strdup(ar, name);
  a->target = arena_strdup(ar, "sm_90");
  a->kernel_file = arena_strdup(ar, file);
  a->result_shape = arena_strdup(ar, "f32[4]{0}");
  a->nallocs = 4;
  a->allocs = ARENA_ARRAY(ar, BufAlloc, 4);
  for (int k = 0; k < 2; k++)
    a->allocs[k] = (BufAlloc){.size = 16, .flags = ALLOC_PARAMETER, .param_number = k,
                              .param_shape = arena_strdup(ar, "f32[4]{0}")};
  a->allocs[2] = (BufAlloc){.size = 64, .flags = ALLOC_TEMP};
  a->allocs[3] = (BufAlloc){.size = 16, .flags = ALLOC_OUTPUT,
                            .output_shape = arena_strdup(ar, "f32[4]{0}")};
  return a;
}

#endif
