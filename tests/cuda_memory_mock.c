/*
 * cuda_memory_mock.c - check-cuda-libs.sh's driver for device memory,
 * staging and errors on the CUDA platform, on the mock libcuda.so.1
 * (tests/mocks/cuda.c).  An artifact of five thunks (kernel, memset,
 * kernel, copy, kernel) over four allocations runs through the executor.
 * Checked from the driver's call log and the results:
 *   - one cuMemAlloc for all the buffers (the pool, 256-byte aligned
 *     slices), none during runs; moving the buffers is one allocation and
 *     one copy of the pool;
 *   - inputs and outputs through pinned memory (cuMemAllocHost once, on
 *     the first run, reused by the second) with cuMemcpyHtoDAsync before
 *     the first launch and cuMemcpyDtoHAsync after the last, then one
 *     cuCtxSynchronize, and no synchronous copy;
 *   - everything freed with the executor;
 *   - the error messages: out of device memory (the size, the buffers, the
 *     device's free memory), out of pinned memory, a kernel fault found at
 *     the final synchronization (the five thunks that may have caused it)
 *     and, synchronizing after each thunk, the thunk itself; a PTX the
 *     driver rejects (its .version and .target, the driver's version).
 *
 *   cuda_memory_mock   (libcuda.so.1 found through LD_LIBRARY_PATH)
 *
 * Prints one line per failure and ends with "N passed, N failed".
 */
#include "mock_driver.h"

/* ---- the mock ------------------------------------------------------------- */

/* Where `part` first (last) appears in the log, -1 when it does not. */
static long first_at(const char *log, const char *part) {
  const char *p = strstr(log, part);
  return p ? p - log : -1;
}
static long last_at(const char *log, const char *part) {
  long at = -1;
  for (const char *p = log; (p = strstr(p, part)); p++) at = p - log;
  return at;
}

static bool has(const char *msg, const char *part) { return msg && strstr(msg, part); }

/* ---- the artifact --------------------------------------------------------- */

/* out = 2 * ((x + y) + 1): params x (alloc 0), y (1); temps in alloc 2;
 * the output in alloc 3.  Thunks add.1, one, add.2, copy, scale. */
static Artifact *sample(void) {
  Artifact *a = four_alloc_artifact("mem");
  Arena *ar = a->arena;
  ThunkSeq *s = &a->entry;
  s->n = 5;
  s->thunks = ARENA_ARRAY(ar, Thunk, 5);
  BufSlice add1[] = {sl(0, 0, 16), sl(1, 0, 16), sl(2, 0, 16)};
  BufSlice add2[] = {sl(2, 0, 16), sl(2, 16, 16), sl(2, 32, 16)};
  BufSlice scale[] = {sl(2, 48, 16), sl(3, 0, 16)};
  s->thunks[0] = kernel(ar, "add4", "add.1", 3, add1);
  s->thunks[1] = (Thunk){.kind = THUNK_MEMSET32, .dst = sl(2, 16, 16),
                         .memset_value = 0x3f800000u /* 1.0f */, .trip_count = -1};
  s->thunks[1].annotation = arena_strdup(ar, "one");
  s->thunks[2] = kernel(ar, "add4", "add.2", 3, add2);
  s->thunks[3] = (Thunk){.kind = THUNK_COPY, .src = sl(2, 32, 16), .dst = sl(2, 48, 16),
                         .trip_count = -1};
  s->thunks[3].annotation = arena_strdup(ar, "copy");
  s->thunks[4] = kernel(ar, "scale2", "scale", 2, scale);
  a->nparams = 2;
  a->params = ARENA_ARRAY(ar, ArtLeaf, 2);
  for (int k = 0; k < 2; k++)
    a->params[k] = (ArtLeaf){sl(k, 0, 16), arena_strdup(ar, "f32[4]{0}")};
  a->noutputs = 1;
  a->outputs = ARENA_ARRAY(ar, ArtLeaf, 1);
  a->outputs[0] = (ArtLeaf){sl(3, 0, 16), arena_strdup(ar, "f32[4]{0}")};
  return a;
}

static const char ptx[] =
    "//\n.version 8.7\n.target sm_90a\n.address_size 64\n"
    ".visible .entry add4(\n.visible .entry scale2(\n";

static Executor *setup(Platform *p, const Artifact *a, char **msg) {
  Diag d = {0};
  Executor *ex = executor_new(a, p, (const uint8_t *)ptx, sizeof ptx - 1, "mem.ptx", &d);
  *msg = d.msg ? xstrdup(d.msg) : NULL;
  diag_clear(&d);
  return ex;
}

/* One run with x = base + i, y = 10 * (i + 1); checks out = 2 * (x + y +
 * 1) when it succeeds.  Returns the driver's log (the caller frees it);
 * *msg: the failure's message or NULL (heap). */
static char *run(Executor *ex, const char *what, float base, char **msg) {
  Arena *ar = arena_new();
  Diag d = {0};
  Shape *s = hlo_parse_shape(ar, "f32[4]{0}", &d);
  Literal *in[2] = {literal_new(ar, s), literal_new(ar, s)};
  float want[4];
  for (int i = 0; i < 4; i++) {
    float x = base + (float)i, y = 10.0f * (float)(i + 1);
    ((float *)in[0]->data)[i] = x;
    ((float *)in[1]->data)[i] = y;
    want[i] = 2 * (x + y + 1);
  }
  free(take());
  Literal *out = NULL;
  bool ok = executor_run(ex, in, ar, &out, &d);
  char *log = take();
  *msg = ok ? NULL : xstrdup(d.msg ? d.msg : "");
  if (ok) {
    const float *got = (const float *)out->data;
    bool same = true;
    for (int i = 0; i < 4; i++) same = same && got[i] == want[i];
    check(same, "%s: results %g %g %g %g, want %g %g %g %g", what, got[0], got[1], got[2],
          got[3], want[0], want[1], want[2], want[3]);
  }
  diag_clear(&d);
  arena_free(ar);
  return log;
}

/* A run's staging and synchronization: async copies around the launches,
 * one synchronization at the end, no synchronous copy. */
static void check_staged_run(const char *what, const char *log) {
  check(count(log, "cuMemcpyHtoDAsync 16 (default stream)") == 2,
        "%s: two async input copies on the stream:\n%s", what, log);
  check(count(log, "cuMemcpyDtoHAsync 16 (default stream)") == 1,
        "%s: one async output copy:\n%s", what, log);
  check(count(log, "cuMemcpyHtoD ") == 0 && count(log, "cuMemcpyDtoH ") == 0,
        "%s: no synchronous host copy:\n%s", what, log);
  check(count(log, "cuCtxSynchronize") == 1, "%s: one synchronization:\n%s", what, log);
  long in = last_at(log, "cuMemcpyHtoDAsync"), k0 = first_at(log, "cuLaunchKernel"),
       k1 = last_at(log, "cuLaunchKernel"), outc = first_at(log, "cuMemcpyDtoHAsync"),
       sync = first_at(log, "cuCtxSynchronize");
  check(in >= 0 && in < k0 && k1 < outc && outc < sync,
        "%s: inputs before the first launch, the output after the last, then the "
        "synchronization:\n%s", what, log);
  check(count(log, "cuMemAlloc ") == 0, "%s: no device allocation during the run:\n%s", what,
        log);
}

static void test_pool_and_staging(Platform *p, const Artifact *a) {
  int allocs0 = live("mock_live_allocs");
  free(take());
  char *msg = NULL;
  Executor *ex = setup(p, a, &msg);
  char *log = take();
  if (!check(ex != NULL, "executor_new: %s", msg ? msg : "")) {
    free(msg);
    free(log);
    return;
  }
  /* 16, 16, 64 and 16 bytes, each in a 256-byte slot */
  check(count(log, "cuMemAlloc ") == 1 && count(log, "cuMemAlloc 1024 ->") == 1,
        "executor_new: one cuMemAlloc of 1024 bytes for the four buffers:\n%s", log);
  check(count(log, "cuMemAllocHost") == 0, "executor_new: no pinned memory yet:\n%s", log);
  free(log);

  log = run(ex, "first run", 1, &msg);
  check(!msg, "first run: %s", msg ? msg : "");
  free(msg);
  check(count(log, "cuMemAllocHost") == 1 && count(log, "cuMemAllocHost 192") == 1,
        "first run: one pinned staging buffer of 192 bytes (three 64-byte slots):\n%s", log);
  check_staged_run("first run", log);
  free(log);

  log = run(ex, "second run", 7, &msg);
  check(!msg, "second run: %s", msg ? msg : "");
  free(msg);
  check(count(log, "cuMemAllocHost") == 0 && count(log, "cuMemFreeHost") == 0,
        "second run: the pinned staging is reused:\n%s", log);
  check_staged_run("second run", log);
  free(log);

  Diag d = {0};
  check(executor_move_buffers(ex, &d), "move buffers: %s", d.msg ? d.msg : "");
  diag_clear(&d);
  log = take();
  check(count(log, "cuMemAlloc 1024 ->") == 1 && count(log, "cuMemcpyDtoD legacy") == 1 &&
            count(log, "cuMemFree") == 1,
        "move buffers: one new pool, one copy, the old pool freed:\n%s", log);
  free(log);
  log = run(ex, "after the move", 3, &msg);
  check(!msg, "after the move: %s", msg ? msg : "");
  free(msg);
  free(log);

  executor_free(ex);
  log = take();
  check(count(log, "cuMemFree ") == 1 && count(log, "cuMemFreeHost") == 1,
        "executor_free: the pool and the staging freed once each:\n%s", log);
  check(live("mock_live_allocs") == allocs0 && live("mock_live_pinned") == 0,
        "executor_free: nothing left allocated (%d device blocks, %d pinned)",
        live("mock_live_allocs") - allocs0, live("mock_live_pinned"));
  free(log);
}

static void test_out_of_memory(Platform *p, const Artifact *a) {
  char *msg = NULL;
  fail_next("cuMemAlloc", 2);
  Executor *ex = setup(p, a, &msg);
  fail_next(NULL, 0);
  check(!ex, "out of device memory: executor_new fails");
  check(has(msg, "cannot allocate the 1024 bytes") && has(msg, "for the artifact's 4 buffers") &&
            has(msg, "the largest is allocation 2, 64 bytes") &&
            has(msg, "CUDA_ERROR_OUT_OF_MEMORY") && has(msg, "cuMemAlloc of 1024 bytes") &&
            has(msg, "1024.0 MiB free of 81920.0"),
        "out of device memory: the message names the size, the buffers and the free memory: %s",
        msg ? msg : "(none)");
  executor_free(ex);
  free(msg);
  free(take());

  ex = setup(p, a, &msg);
  free(msg);
  if (!check(ex != NULL, "pinned: executor_new")) return;
  fail_next("cuMemAllocHost", 2);
  char *log = run(ex, "out of pinned memory", 1, &msg);
  fail_next(NULL, 0);
  check(has(msg, "cannot allocate the 192 bytes of pinned host memory that stage the inputs "
                 "and outputs") && has(msg, "cuMemAllocHost of 192 bytes") &&
            has(msg, "CUDA_ERROR_OUT_OF_MEMORY"),
        "out of pinned memory: %s", msg ? msg : "(none)");
  free(msg);
  free(log);
  executor_free(ex);
  free(take());
}

static void test_faults(Platform *p, const Artifact *a) {
  char *msg = NULL;
  Executor *ex = setup(p, a, &msg);
  free(msg);
  if (!check(ex != NULL, "fault: executor_new")) return;
  fault("add4");
  char *log = run(ex, "fault", 1, &msg);
  check(has(msg, "cuCtxSynchronize failed: CUDA_ERROR_ILLEGAL_ADDRESS (700)") &&
            has(msg, "found at the synchronization after the last thunk") &&
            has(msg, "one of the 5 thunks since the previous synchronization, from 'add.1' to "
                     "'scale'") &&
            has(msg, "--sync-each-thunk"),
        "a fault found at the final synchronization names the thunks since the previous "
        "one: %s", msg ? msg : "(none)");
  free(msg);
  free(log);
  fault(NULL);

  /* synchronizing after each thunk names the one at fault */
  executor_set_sync_each_thunk(ex, true);
  fault("scale2");
  log = run(ex, "fault, sync each", 1, &msg);
  check(has(msg, "cuCtxSynchronize failed: CUDA_ERROR_ILLEGAL_ADDRESS") &&
            has(msg, "(kernel thunk 'scale')") && !has(msg, "one of the"),
        "--sync-each-thunk: the message names the faulting thunk: %s", msg ? msg : "(none)");
  check(count(log, "cuCtxSynchronize") == 5,
        "--sync-each-thunk: a synchronization after each of the five thunks, got %d:\n%s",
        count(log, "cuCtxSynchronize"), log);
  free(msg);
  free(log);
  fault(NULL);
  log = run(ex, "sync each, no fault", 1, &msg);
  check(!msg, "--sync-each-thunk without a fault: %s", msg ? msg : "");
  check(count(log, "cuCtxSynchronize") == 6,
        "--sync-each-thunk: five synchronizations and the run's own, got %d",
        count(log, "cuCtxSynchronize"));
  free(msg);
  free(log);
  executor_free(ex);
  free(take());
}

static void test_ptx_rejected(Platform *p, const Artifact *a) {
  char *msg = NULL;
  fail_next("cuModuleLoadDataEx", 222);
  Executor *ex = setup(p, a, &msg);
  fail_next(NULL, 0);
  check(!ex, "a rejected PTX: executor_new fails");
  check(has(msg, "mem.ptx: the driver cannot JIT-compile the PTX") &&
            has(msg, "CUDA_ERROR_UNSUPPORTED_PTX_VERSION (222)") &&
            has(msg, "the PTX is .version 8.7 .target sm_90a and the driver is CUDA 12.2 "
                     "(cuDriverGetVersion 12020)"),
        "a rejected PTX: the message names the PTX's version and target and the driver's: %s",
        msg ? msg : "(none)");
  free(msg);
  executor_free(ex);
  free(take());
}

int main(void) {
  Diag d = {0};
  Platform *p = platform_cuda_new(NULL, &d);
  if (!check(p != NULL, "platform_cuda_new on the mock driver: %s", d.msg ? d.msg : "")) {
    printf("%d passed, %d failed\n", passed, failed);
    return 1;
  }
  check(p->host_alloc && p->host_free && p->copy_h2d_async && p->copy_d2h_async,
        "the CUDA platform stages through pinned memory on a driver that has it");
  Artifact *a = sample();
  check(artifact_validate(a, &d), "the sample artifact is valid: %s", d.msg ? d.msg : "");
  diag_clear(&d);
  test_pool_and_staging(p, a);
  test_out_of_memory(p, a);
  test_faults(p, a);
  test_ptx_rejected(p, a);
  artifact_free(a);
  platform_free(p);
  printf("%d passed, %d failed\n", passed, failed);
  return failed ? 1 : 0;
}
