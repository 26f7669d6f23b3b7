/*
 * cuda.c - a mock libcuda.so.1 for check-cuda-libs.sh: one device, its
 * primary context, and device memory that is host memory (256-byte
 * aligned), so the mock cuBLASLt and cuDNN can compute on it.  Logs the
 * allocations, synchronizations and event records; events read the
 * monotonic clock; modules and kernels are not mocked.
 */
#include <time.h>

#include "mock_util.h"

typedef int CUresult;
typedef unsigned long long CUdeviceptr;

static int live_allocs;

MOCK_EXPORT int mock_live_allocs(void);
int mock_live_allocs(void) { return live_allocs; }

CUresult cuInit(unsigned f) { return 0; }
CUresult cuDeviceGetCount(int *n) { *n = 1; return 0; }
CUresult cuDeviceGet(int *d, int i) { *d = i; return i ? 101 : 0; }
CUresult cuDeviceGetName(char *s, int n, int d) { snprintf(s, (size_t)n, "mock"); return 0; }
CUresult cuDevicePrimaryCtxRetain(void **c, int d) { *c = (void *)1; return 0; }
CUresult cuDevicePrimaryCtxRelease_v2(int d) { return 0; }
CUresult cuCtxSetCurrent(void *c) { return c == (void *)1 ? 0 : 1; }
CUresult cuCtxSynchronize(void) { mock_log("cuCtxSynchronize"); return 0; }
CUresult cuModuleLoadDataEx(void **m, const void *img, unsigned n, int *o, void **v) { return 218; }
CUresult cuModuleUnload(void *m) { return 0; }
CUresult cuModuleGetFunction(void **f, void *m, const char *name) { return 500; }
CUresult cuFuncSetAttribute(void *f, int a, int v) { return 0; }
CUresult cuMemAlloc_v2(CUdeviceptr *p, size_t n) {
  void *m = aligned_alloc(256, (n + 255) / 256 * 256);
  if (!m) return 2;
  memset(m, 0, n);
  *p = (CUdeviceptr)(uintptr_t)m;
  live_allocs++;
  mock_log("cuMemAlloc %zu -> %p", n, m);
  return 0;
}
CUresult cuMemFree_v2(CUdeviceptr p) {
  mock_log("cuMemFree %p", (void *)(uintptr_t)p);
  free((void *)(uintptr_t)p);
  live_allocs--;
  return 0;
}
CUresult cuMemcpyHtoD_v2(CUdeviceptr d, const void *s, size_t n) {
  memcpy((void *)(uintptr_t)d, s, n);
  return 0;
}
CUresult cuMemcpyDtoH_v2(void *d, CUdeviceptr s, size_t n) {
  memcpy(d, (void *)(uintptr_t)s, n);
  return 0;
}
CUresult cuMemcpyDtoD_v2(CUdeviceptr d, CUdeviceptr s, size_t n) {
  memmove((void *)(uintptr_t)d, (void *)(uintptr_t)s, n);
  return 0;
}
CUresult cuMemsetD32_v2(CUdeviceptr d, unsigned v, size_t n) {
  for (size_t k = 0; k < n; k++) ((unsigned *)(uintptr_t)d)[k] = v;
  return 0;
}
CUresult cuLaunchKernel(void *f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                        unsigned by, unsigned bz, unsigned sh, void *st, void **params,
                        void **extra) {
  return 500;
}
/* An event holds the monotonic time (ms) of its last record; work is done
 * when it is submitted, so an event is complete once recorded. */
CUresult cuEventCreate(void **e, unsigned fl) { *e = calloc(1, sizeof(double)); return 0; }
CUresult cuEventDestroy_v2(void *e) { free(e); return 0; }
CUresult cuEventRecord(void *e, void *s) {
  int fail = mock_failing("cuEventRecord");
  if (fail) return fail;
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  *(double *)e = (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
  mock_log("cuEventRecord");
  return 0;
}
CUresult cuEventSynchronize(void *e) { return 0; }
CUresult cuEventElapsedTime(float *ms, void *a, void *b) {
  *ms = (float)(*(double *)b - *(double *)a);
  return 0;
}
CUresult cuGetErrorString(CUresult r, const char **s) { *s = "mock error"; return 0; }
CUresult cuGetErrorName(CUresult r, const char **s) { *s = "CUDA_ERROR_MOCK"; return 0; }
