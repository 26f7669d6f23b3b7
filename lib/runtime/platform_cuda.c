/*
 * platform_cuda.c - the CUDA platform: one NVIDIA GPU (PlatformOptions.device,
 * the first by default) through the Driver API, with libcuda.so.1 opened by
 * dlopen and every entry point looked up by name, so xhlo-run builds and
 * runs (on other platforms) on a machine with no driver and no toolkit.
 *
 * The device's primary context is made current on the calling thread at
 * the start of every operation (a multi-GPU run makes each GPU's platform
 * on one thread and runs it on another); every operation goes to the
 * legacy default stream of that context, so launches, copies and memsets
 * run in program order and a device-to-host copy sees all of them.  The PTX is JIT-compiled
 * by the driver for the actual GPU; when that fails the message has the
 * JIT's error log and, for a PTX the driver does not know, the PTX's
 * .version and .target beside the driver's CUDA version.  Timer marks are
 * CUDA events.
 *
 * Memory: the executor asks for one device pool per artifact (cuMemAlloc);
 * an out-of-memory failure names the size and the device's free and total
 * memory.  The inputs and outputs are staged in page-locked host memory
 * (cuMemAllocHost) and copied with cuMemcpyHtoDAsync / cuMemcpyDtoHAsync on
 * the stream; a driver without these entry points (all four optional) gets
 * synchronous copies from ordinary memory.
 *
 * Entry points are looked up by their versioned ABI names (cuMemAlloc_v2,
 * ...), the names cuda.h's macros map the plain names to.
 *
 * Library calls go to cuBLASLt (cublaslt.c) and cuDNN (cudnn.c), opened the
 * first time a GEMM or convolution runs, on the same stream; collectives to
 * NCCL (collective_nccl.c, nccl.c), opened the first time one runs.
 *
 * Command buffers are CUDA graphs made by stream capture (the only way to
 * record cuBLASLt and cuDNN calls): cmdbuf_begin starts capturing a private
 * non-blocking stream in relaxed mode (so cuDNN may still allocate a
 * workspace), and until cmdbuf_end every launch, device copy, memset and
 * library call goes to that stream, the copies and memsets as their Async
 * forms.  cmdbuf_end instantiates the captured graph, or updates an
 * existing executable graph with cuGraphExecUpdate (re-instantiating when
 * the driver cannot update it).  A graph is launched on the legacy default
 * stream, so it is ordered with every other operation.  The graph entry
 * points are optional: a driver without them has no command buffers (the
 * executor then runs their thunks one by one).
 *
 * Several streams: kernels that the executor's schedule finds independent
 * (one dependence level of a straight run of thunks: launch_group) are
 * spread over the stream and up to CUDA_DEFAULT_STREAMS - 1 (or
 * PlatformOptions.streams - 1) non-blocking side streams, forked from the
 * stream by an event and joined back into it by one event per side stream,
 * so they may run at the same time; everything else stays in program order
 * on the one stream.  Inside a capture the same calls give the graph
 * parallel branches.
 */
#include <dlfcn.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef XHLO_HAVE_CUDA_H
#include <cuda.h>
#else
#include "cuda_min.h"
#endif

#include "cuda_libs.h"

enum { CUDA_DEFAULT_STREAMS = 4, CUDA_MAX_SIDE_STREAMS = 15 };

typedef struct CudaApi {
  CUresult (*Init)(unsigned int);
  CUresult (*DeviceGetCount)(int *);
  CUresult (*DeviceGet)(CUdevice *, int);
  CUresult (*DeviceGetName)(char *, int, CUdevice);
  CUresult (*DevicePrimaryCtxRetain)(CUcontext *, CUdevice);
  CUresult (*DevicePrimaryCtxRelease)(CUdevice);
  CUresult (*CtxSetCurrent)(CUcontext);
  CUresult (*CtxGetCurrent)(CUcontext *);
  CUresult (*CtxSynchronize)(void);
  CUresult (*ModuleLoadDataEx)(CUmodule *, const void *, unsigned int, CUjit_option *,
                               void **);
  CUresult (*ModuleUnload)(CUmodule);
  CUresult (*ModuleGetFunction)(CUfunction *, CUmodule, const char *);
  CUresult (*FuncSetAttribute)(CUfunction, CUfunction_attribute, int);
  CUresult (*MemAlloc)(CUdeviceptr *, size_t);
  CUresult (*MemFree)(CUdeviceptr);
  CUresult (*MemcpyHtoD)(CUdeviceptr, const void *, size_t);
  CUresult (*MemcpyDtoH)(void *, CUdeviceptr, size_t);
  CUresult (*MemcpyDtoD)(CUdeviceptr, CUdeviceptr, size_t);
  CUresult (*MemsetD32)(CUdeviceptr, unsigned int, size_t);
  CUresult (*LaunchKernel)(CUfunction, unsigned int, unsigned int, unsigned int,
                           unsigned int, unsigned int, unsigned int, unsigned int, CUstream,
                           void **, void **);
  CUresult (*EventCreate)(CUevent *, unsigned int);
  CUresult (*EventDestroy)(CUevent);
  CUresult (*EventRecord)(CUevent, CUstream);
  CUresult (*EventSynchronize)(CUevent);
  CUresult (*EventElapsedTime)(float *, CUevent, CUevent);
  CUresult (*GetErrorString)(CUresult, const char **);
  CUresult (*GetErrorName)(CUresult, const char **);
  /* command buffers (optional, all or none) */
  CUresult (*StreamCreate)(CUstream *, unsigned int);
  CUresult (*StreamDestroy)(CUstream);
  CUresult (*StreamBeginCapture)(CUstream, CUstreamCaptureMode);
  CUresult (*StreamEndCapture)(CUstream, CUgraph *);
  CUresult (*GraphInstantiate)(CUgraphExec *, CUgraph, unsigned long long);
  CUresult (*GraphLaunch)(CUgraphExec, CUstream);
  CUresult (*GraphDestroy)(CUgraph);
  CUresult (*GraphExecDestroy)(CUgraphExec);
  CUresult (*MemcpyDtoDAsync)(CUdeviceptr, CUdeviceptr, size_t, CUstream);
  CUresult (*MemsetD32Async)(CUdeviceptr, unsigned int, size_t, CUstream);
  /* pinned staging (optional, all or none) */
  CUresult (*MemAllocHost)(void **, size_t);
  CUresult (*MemFreeHost)(void *);
  CUresult (*MemcpyHtoDAsync)(CUdeviceptr, const void *, size_t, CUstream);
  CUresult (*MemcpyDtoHAsync)(void *, CUdeviceptr, size_t, CUstream);
  /* optional on their own, for messages */
  CUresult (*DriverGetVersion)(int *);
  CUresult (*MemGetInfo)(size_t *, size_t *);
  CUresult (*DeviceGetAttribute)(int *, CUdevice_attribute, CUdevice);
  /* optional on its own: without it a changed graph is re-instantiated */
  CUresult (*GraphExecUpdate)(CUgraphExec, CUgraph, CUgraphExecUpdateResultInfo *);
  /* several streams (optional, with the command-buffer group's
   * StreamCreate): without it every kernel goes to one stream */
  CUresult (*StreamWaitEvent)(CUstream, CUevent, unsigned int);
} CudaApi;

/* Symbol names, first choice and fallback (older drivers); optional ones
 * (1: the command-buffer group, 2: on its own, 3: the staging group, 4:
 * several streams) may
 * be missing. */
static const struct {
  const char *name, *alt;
  size_t off;
  int optional;
} cuda_syms[] = {
#define SYM(field, name, alt) {name, alt, offsetof(CudaApi, field), 0}
#define OPT(field, name, alt, group) {name, alt, offsetof(CudaApi, field), group}
  SYM(Init, "cuInit", NULL),
  SYM(DeviceGetCount, "cuDeviceGetCount", NULL),
  SYM(DeviceGet, "cuDeviceGet", NULL),
  SYM(DeviceGetName, "cuDeviceGetName", NULL),
  SYM(DevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain", NULL),
  SYM(DevicePrimaryCtxRelease, "cuDevicePrimaryCtxRelease_v2", "cuDevicePrimaryCtxRelease"),
  SYM(CtxSetCurrent, "cuCtxSetCurrent", NULL),
  SYM(CtxGetCurrent, "cuCtxGetCurrent", NULL),
  SYM(CtxSynchronize, "cuCtxSynchronize", NULL),
  SYM(ModuleLoadDataEx, "cuModuleLoadDataEx", NULL),
  SYM(ModuleUnload, "cuModuleUnload", NULL),
  SYM(ModuleGetFunction, "cuModuleGetFunction", NULL),
  SYM(FuncSetAttribute, "cuFuncSetAttribute", NULL),
  SYM(MemAlloc, "cuMemAlloc_v2", NULL),
  SYM(MemFree, "cuMemFree_v2", NULL),
  SYM(MemcpyHtoD, "cuMemcpyHtoD_v2", NULL),
  SYM(MemcpyDtoH, "cuMemcpyDtoH_v2", NULL),
  SYM(MemcpyDtoD, "cuMemcpyDtoD_v2", NULL),
  SYM(MemsetD32, "cuMemsetD32_v2", NULL),
  SYM(LaunchKernel, "cuLaunchKernel", NULL),
  SYM(EventCreate, "cuEventCreate", NULL),
  SYM(EventDestroy, "cuEventDestroy_v2", "cuEventDestroy"),
  SYM(EventRecord, "cuEventRecord", NULL),
  SYM(EventSynchronize, "cuEventSynchronize", NULL),
  SYM(EventElapsedTime, "cuEventElapsedTime", "cuEventElapsedTime_v2"),
  SYM(GetErrorString, "cuGetErrorString", NULL),
  SYM(GetErrorName, "cuGetErrorName", NULL),
  OPT(StreamCreate, "cuStreamCreate", NULL, 1),
  OPT(StreamDestroy, "cuStreamDestroy_v2", "cuStreamDestroy", 1),
  OPT(StreamBeginCapture, "cuStreamBeginCapture_v2", NULL, 1),
  OPT(StreamEndCapture, "cuStreamEndCapture", NULL, 1),
  OPT(GraphInstantiate, "cuGraphInstantiateWithFlags", NULL, 1),
  OPT(GraphLaunch, "cuGraphLaunch", NULL, 1),
  OPT(GraphDestroy, "cuGraphDestroy", NULL, 1),
  OPT(GraphExecDestroy, "cuGraphExecDestroy", NULL, 1),
  OPT(MemcpyDtoDAsync, "cuMemcpyDtoDAsync_v2", NULL, 1),
  OPT(MemsetD32Async, "cuMemsetD32Async", NULL, 1),
  OPT(GraphExecUpdate, "cuGraphExecUpdate_v2", NULL, 2),
  OPT(MemAllocHost, "cuMemAllocHost_v2", "cuMemAllocHost", 3),
  OPT(MemFreeHost, "cuMemFreeHost", NULL, 3),
  OPT(MemcpyHtoDAsync, "cuMemcpyHtoDAsync_v2", NULL, 3),
  OPT(MemcpyDtoHAsync, "cuMemcpyDtoHAsync_v2", NULL, 3),
  OPT(DriverGetVersion, "cuDriverGetVersion", NULL, 2),
  OPT(MemGetInfo, "cuMemGetInfo_v2", NULL, 2),
  OPT(DeviceGetAttribute, "cuDeviceGetAttribute", NULL, 2),
  OPT(StreamWaitEvent, "cuStreamWaitEvent", NULL, 4),
#undef OPT
#undef SYM
};

typedef struct CudaState {
  void *lib;
  CudaApi api;
  CUdevice dev;
  CUcontext ctx;
  bool have_ctx;
  CUmodule mod;
  char *ptx_name;
  int nmarks;
  CUevent *marks;
  char *lib_path;                 /* PlatformOptions.lib_path, or NULL */
  bool no_tf32;                   /* PlatformOptions.no_tf32 */
  CublasLt *lt;                   /* opened by the first GEMM */
  Cudnn *dnn;                     /* opened by the first convolution */
  bool have_graphs;               /* the command-buffer entry points */
  bool have_staging;              /* pinned memory and async copies */
  CUstream capture;               /* the stream captured into graphs */
  CUstream stream;                /* where work goes: NULL (the legacy
                                     default stream), or capture while a
                                     command buffer is recorded */
  int ordinal;                    /* PlatformOptions.device */
  Nccl *nccl;                     /* opened by the first collective */
  bool have_streams;              /* StreamWaitEvent (and StreamCreate) */
  int nside;                      /* launch_group's side streams: kernel k > 0
                                     of a group goes to side[(k-1) % nside] */
  CUstream side[CUDA_MAX_SIDE_STREAMS];
  CUevent fork, join[CUDA_MAX_SIDE_STREAMS];
  bool side_made;                 /* side, fork and join created */
} CudaState;

static bool cu_err(Diag *d, const char *fmt, ...) PRINTF_LIKE(2, 3);
static bool cu_err(Diag *d, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  Loc none = {0};
  diag_verror(d, none, fmt, ap);
  va_end(ap);
  return false;
}

/* Checks a driver result; on failure the message names the call and the
 * driver's error name and text. */
static bool ck(const CudaState *c, CUresult r, const char *what, Diag *d) {
  if (r == CUDA_SUCCESS) return true;
  const char *name = NULL, *text = NULL;
  if (c->api.GetErrorName) c->api.GetErrorName(r, &name);
  if (c->api.GetErrorString) c->api.GetErrorString(r, &text);
  return cu_err(d, "CUDA: %s failed: %s (%d)%s%s", what, name ? name : "error", (int)r,
                text ? ": " : "", text ? text : "");
}

/* Makes the device's context current on the calling thread (the platforms
 * of several GPUs may share a thread, and one is used from the thread that
 * made it and from its device's thread). */
static bool bind(const CudaState *c, Diag *d) {
  CUcontext now = NULL;
  if (c->api.CtxGetCurrent(&now) == CUDA_SUCCESS && now == c->ctx) return true;
  return ck(c, c->api.CtxSetCurrent(c->ctx), "cuCtxSetCurrent", d);
}

/* For the operations that cannot fail: a failure shows at the next one. */
static void bind_quietly(const CudaState *c) {
  Diag ignored = {0};
  bind(c, &ignored);
  diag_clear(&ignored);
}

static bool cu_alloc(Platform *p, size_t n, DevPtr *out, Diag *d) {
  CudaState *c = p->impl;
  if (!bind(c, d)) return false;
  CUdeviceptr m = 0;
  CUresult r = c->api.MemAlloc(&m, n);
  if (r == CUDA_ERROR_OUT_OF_MEMORY) {
    /* out of device memory: how much there is */
    size_t fr = 0, total = 0;
    char what[128];
    if (c->api.MemGetInfo && c->api.MemGetInfo(&fr, &total) == CUDA_SUCCESS)
      snprintf(what, sizeof what, "cuMemAlloc of %zu bytes (the device has %.1f MiB free of %.1f)",
               n, (double)fr / 1048576.0, (double)total / 1048576.0);
    else
      snprintf(what, sizeof what, "cuMemAlloc of %zu bytes", n);
    return ck(c, r, what, d);
  }
  if (!ck(c, r, "cuMemAlloc", d)) return false;
  *out = (DevPtr)m;
  return true;
}

/* ---- pinned staging ------------------------------------------------------- */

static void *cu_host_alloc(Platform *p, size_t n, Diag *d) {
  CudaState *c = p->impl;
  void *m = NULL;
  char what[64];
  snprintf(what, sizeof what, "cuMemAllocHost of %zu bytes", n);
  if (!ck(c, c->api.MemAllocHost(&m, n), what, d)) return NULL;
  return m;
}

static void cu_host_free(Platform *p, void *m) {
  CudaState *c = p->impl;
  bind_quietly(c);
  c->api.MemFreeHost(m);
}

static void cu_free(Platform *p, DevPtr m) {
  CudaState *c = p->impl;
  bind_quietly(c);
  c->api.MemFree((CUdeviceptr)m);
}

/* Refuses an operation that cannot be recorded into a command buffer. */
static bool not_recording(const CudaState *c, const char *what, Diag *d) {
  if (!c->stream) return true;
  return cu_err(d, "CUDA: %s while a command buffer is being recorded", what);
}

static bool cu_h2d(Platform *p, DevPtr dst, const void *src, size_t n, Diag *d) {
  CudaState *c = p->impl;
  if (!bind(c, d)) return false;
  if (!not_recording(c, "a host-to-device copy", d)) return false;
  return ck(c, c->api.MemcpyHtoD((CUdeviceptr)dst, src, n), "cuMemcpyHtoD", d);
}

static bool cu_d2h(Platform *p, void *dst, DevPtr src, size_t n, Diag *d) {
  CudaState *c = p->impl;
  if (!bind(c, d)) return false;
  if (!not_recording(c, "a device-to-host copy", d)) return false;
  return ck(c, c->api.MemcpyDtoH(dst, (CUdeviceptr)src, n), "cuMemcpyDtoH", d);
}

static bool cu_h2d_async(Platform *p, DevPtr dst, const void *src, size_t n, Diag *d) {
  CudaState *c = p->impl;
  if (!bind(c, d)) return false;
  if (!not_recording(c, "a host-to-device copy", d)) return false;
  return ck(c, c->api.MemcpyHtoDAsync((CUdeviceptr)dst, src, n, c->stream),
            "cuMemcpyHtoDAsync", d);
}

static bool cu_d2h_async(Platform *p, void *dst, DevPtr src, size_t n, Diag *d) {
  CudaState *c = p->impl;
  if (!bind(c, d)) return false;
  if (!not_recording(c, "a device-to-host copy", d)) return false;
  return ck(c, c->api.MemcpyDtoHAsync(dst, (CUdeviceptr)src, n, c->stream),
            "cuMemcpyDtoHAsync", d);
}

static bool cu_d2d(Platform *p, DevPtr dst, DevPtr src, size_t n, Diag *d) {
  CudaState *c = p->impl;
  if (!bind(c, d)) return false;
  if (c->stream)
    return ck(c, c->api.MemcpyDtoDAsync((CUdeviceptr)dst, (CUdeviceptr)src, n, c->stream),
              "cuMemcpyDtoDAsync", d);
  return ck(c, c->api.MemcpyDtoD((CUdeviceptr)dst, (CUdeviceptr)src, n), "cuMemcpyDtoD", d);
}

static bool cu_memset32(Platform *p, DevPtr dst, uint32_t v, size_t count, Diag *d) {
  CudaState *c = p->impl;
  if (!bind(c, d)) return false;
  if (c->stream)
    return ck(c, c->api.MemsetD32Async((CUdeviceptr)dst, v, count, c->stream),
              "cuMemsetD32Async", d);
  return ck(c, c->api.MemsetD32((CUdeviceptr)dst, v, count), "cuMemsetD32", d);
}

/* Copies the word after `directive` (".version", ".target") in the PTX. */
static void ptx_directive(const char *ptx, const char *directive, char *out, size_t cap) {
  snprintf(out, cap, "?");
  size_t dl = strlen(directive);
  for (const char *l = ptx; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
    while (*l == ' ' || *l == '\t') l++;
    if (strncmp(l, directive, dl) != 0 || (l[dl] != ' ' && l[dl] != '\t')) continue;
    l += dl;
    while (*l == ' ' || *l == '\t') l++;
    size_t n = strcspn(l, " \t\r\n,");
    if (n >= cap) n = cap - 1;
    memcpy(out, l, n);
    out[n] = 0;
    return;
  }
}

/* The GPU's compute capability as sm_XY's number XY; 0 when unknown. */
static int device_sm(const CudaState *c) {
  int major = 0, minor = 0;
  if (!c->api.DeviceGetAttribute ||
      c->api.DeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, c->dev) !=
          CUDA_SUCCESS ||
      c->api.DeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, c->dev) !=
          CUDA_SUCCESS)
    return 0;
  return major * 10 + minor;
}

/* For a PTX the driver rejects: what the PTX asks for and what the GPU or
 * the driver is, e.g. "; the PTX is .version 8.7 .target sm_100a, for a
 * newer GPU than this one (sm_90): ..." or "; the PTX is .version 8.7
 * .target sm_90 and the driver is CUDA 12.2 (cuDriverGetVersion 12020)". */
static void ptx_versions(const CudaState *c, const char *ptx, char *out, size_t cap) {
  char ver[32], target[32];
  ptx_directive(ptx, ".version", ver, sizeof ver);
  ptx_directive(ptx, ".target", target, sizeof target);
  int sm = device_sm(c), want = 0;
  if (sm && sscanf(target, "sm_%d", &want) == 1 && want > sm) {
    snprintf(out, cap, "; the PTX is .version %s .target %s, for a newer GPU than this one "
             "(sm_%d): compile it for this GPU with xhloc --arch=sm_%d", ver, target, sm, sm);
    return;
  }
  int v = 0;
  if (c->api.DriverGetVersion && c->api.DriverGetVersion(&v) == CUDA_SUCCESS)
    snprintf(out, cap, "; the PTX is .version %s .target %s and the driver is CUDA %d.%d "
             "(cuDriverGetVersion %d): a PTX ISA version or target newer than the driver "
             "knows needs a newer driver (PTX ISA 8.0 came with CUDA 12.0)", ver, target,
             v / 1000,
             v % 1000 / 10, v);
  else
    snprintf(out, cap, "; the PTX is .version %s .target %s (the driver's version is unknown)",
             ver, target);
}

static bool cu_load(Platform *p, const uint8_t *bytes, size_t len, const char *path,
                    Diag *d) {
  CudaState *c = p->impl;
  if (!bind(c, d)) return false;
  if (c->mod) c->api.ModuleUnload(c->mod);
  c->mod = NULL;
  free(c->ptx_name);
  c->ptx_name = NULL;
  char *ptx = xmalloc(len + 1);
  memcpy(ptx, bytes, len);
  ptx[len] = 0;
  enum { LOG = 16384 };
  char *errlog = xcalloc(1, LOG), *infolog = xcalloc(1, LOG);
  CUjit_option opts[] = {CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES,
                         CU_JIT_INFO_LOG_BUFFER, CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES};
  void *vals[] = {errlog, (void *)(uintptr_t)LOG, infolog, (void *)(uintptr_t)LOG};
  CUresult r = c->api.ModuleLoadDataEx(&c->mod, ptx, 4, opts, vals);
  bool ok = true;
  if (r != CUDA_SUCCESS) {
    c->mod = NULL;
    Diag cd = {0};
    ck(c, r, "cuModuleLoadDataEx", &cd);
    errlog[LOG - 1] = 0;
    size_t el = strlen(errlog);
    while (el && (errlog[el - 1] == '\n' || errlog[el - 1] == ' ')) errlog[--el] = 0;
    char why[512] = "";
    if (r == CUDA_ERROR_UNSUPPORTED_PTX_VERSION || r == CUDA_ERROR_INVALID_PTX ||
        r == CUDA_ERROR_NO_BINARY_FOR_GPU)
      ptx_versions(c, ptx, why, sizeof why);
    ok = cu_err(d, "%s: the driver cannot JIT-compile the PTX: %s%s%s%s", path, cd.msg, why,
                el ? "\nJIT error log:\n" : "", errlog);
    diag_clear(&cd);
  } else {
    c->ptx_name = xstrdup(path);
  }
  free(errlog);
  free(infolog);
  free(ptx);
  return ok;
}

static void *cu_kernel(Platform *p, const char *name, Diag *d) {
  CudaState *c = p->impl;
  if (!c->mod) {
    cu_err(d, "kernel '%s': no kernel file is loaded", name);
    return NULL;
  }
  CUfunction f = NULL;
  CUresult r = c->api.ModuleGetFunction(&f, c->mod, name);
  if (r == CUDA_ERROR_NOT_FOUND) {
    cu_err(d, "%s: has no kernel '%s'", c->ptx_name, name);
    return NULL;
  }
  if (!ck(c, r, "cuModuleGetFunction", d)) return NULL;
  return f;
}

static bool launch_on(CudaState *c, CUstream stream, void *kernel, int nargs,
                      const DevPtr *args, const uint32_t grid[3], const uint32_t block[3],
                      uint32_t shmem_bytes, Diag *d) {
  CUfunction f = kernel;
  if (shmem_bytes > 48 * 1024 &&
      !ck(c, c->api.FuncSetAttribute(f, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                     (int)shmem_bytes),
          "cuFuncSetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES)", d))
    return false;
  void **params = xcalloc((size_t)nargs + 1, sizeof *params);
  for (int k = 0; k < nargs; k++) params[k] = (void *)&args[k];
  CUresult r = c->api.LaunchKernel(f, grid[0], grid[1], grid[2], block[0], block[1], block[2],
                                   shmem_bytes, stream, params, NULL);
  free(params);
  return ck(c, r, "cuLaunchKernel", d);
}

static bool cu_launch(Platform *p, void *kernel, int nargs, const DevPtr *args,
                      const uint32_t grid[3], const uint32_t block[3],
                      uint32_t shmem_bytes, Diag *d) {
  CudaState *c = p->impl;
  if (!bind(c, d)) return false;
  return launch_on(c, c->stream, kernel, nargs, args, grid, block, shmem_bytes, d);
}

/* The side streams (non-blocking: no implicit order with the legacy
 * stream; only the events order them) and the fork and join events
 * (without timing), made on first use. */
static bool make_side_streams(CudaState *c, Diag *d) {
  if (c->side_made) return true;
  if (!ck(c, c->api.EventCreate(&c->fork, CU_EVENT_DISABLE_TIMING), "cuEventCreate", d))
    return false;
  c->side_made = true;            /* what exists is freed by cu_destroy */
  for (int k = 0; k < c->nside; k++) {
    if (!ck(c, c->api.StreamCreate(&c->side[k], CU_STREAM_NON_BLOCKING), "cuStreamCreate", d) ||
        !ck(c, c->api.EventCreate(&c->join[k], CU_EVENT_DISABLE_TIMING), "cuEventCreate", d))
      return false;
  }
  return true;
}

/* Independent kernels on several streams: the fork event recorded on the
 * stream, each used side stream waits for it; kernel 0 goes to the stream
 * itself and kernel k to side stream (k-1) % nside; then each used side
 * stream records its join event and the stream waits for them all.  The
 * same calls inside a capture make a graph with parallel branches. */
static bool cu_launch_group(Platform *p, int n, const KernelLaunch *kl, Diag *d) {
  CudaState *c = p->impl;
  if (!bind(c, d)) return false;
  if (n == 1)
    return launch_on(c, c->stream, kl[0].kernel, kl[0].nargs, kl[0].args, kl[0].grid,
                     kl[0].block, kl[0].shmem_bytes, d);
  if (!make_side_streams(c, d)) return false;
  int used = n - 1 < c->nside ? n - 1 : c->nside;
  if (!ck(c, c->api.EventRecord(c->fork, c->stream), "cuEventRecord(fork)", d)) return false;
  for (int j = 0; j < used; j++)
    if (!ck(c, c->api.StreamWaitEvent(c->side[j], c->fork, 0), "cuStreamWaitEvent(fork)", d))
      return false;
  for (int k = 0; k < n; k++) {
    CUstream s = k == 0 ? c->stream : c->side[(k - 1) % c->nside];
    if (!launch_on(c, s, kl[k].kernel, kl[k].nargs, kl[k].args, kl[k].grid, kl[k].block,
                   kl[k].shmem_bytes, d))
      return false;
  }
  for (int j = 0; j < used; j++)
    if (!ck(c, c->api.EventRecord(c->join[j], c->side[j]), "cuEventRecord(join)", d) ||
        !ck(c, c->api.StreamWaitEvent(c->stream, c->join[j], 0), "cuStreamWaitEvent(join)", d))
      return false;
  return true;
}

static bool cu_sync(Platform *p, Diag *d) {
  CudaState *c = p->impl;
  if (!bind(c, d)) return false;
  if (!not_recording(c, "a synchronization", d)) return false;
  return ck(c, c->api.CtxSynchronize(), "cuCtxSynchronize", d);
}

static bool cu_reserve_marks(Platform *p, int n, Diag *d) {
  CudaState *c = p->impl;
  if (!bind(c, d)) return false;
  if (n <= c->nmarks) return true;
  c->marks = xreallocarray(c->marks, (size_t)n, sizeof *c->marks);
  for (; c->nmarks < n; c->nmarks++)
    if (!ck(c, c->api.EventCreate(&c->marks[c->nmarks], CU_EVENT_DEFAULT), "cuEventCreate", d))
      return false;
  return true;
}

static bool cu_mark(Platform *p, int m, Diag *d) {
  CudaState *c = p->impl;
  if (!bind(c, d)) return false;
  if (m < 0 || m >= c->nmarks) return cu_err(d, "timer mark %d was not reserved", m);
  if (!not_recording(c, "a timer mark", d)) return false;
  return ck(c, c->api.EventRecord(c->marks[m], NULL), "cuEventRecord", d);
}

static bool cu_elapsed(Platform *p, int from, int to, double *ms, Diag *d) {
  CudaState *c = p->impl;
  if (!bind(c, d)) return false;
  if (from < 0 || to < 0 || from >= c->nmarks || to >= c->nmarks)
    return cu_err(d, "timer marks %d, %d were not reserved", from, to);
  float f = 0;
  if (!ck(c, c->api.EventSynchronize(c->marks[to]), "cuEventSynchronize", d) ||
      !ck(c, c->api.EventElapsedTime(&f, c->marks[from], c->marks[to]), "cuEventElapsedTime",
          d))
    return false;
  *ms = f;
  return true;
}

static bool cu_gemm(Platform *p, const GemmDesc *g, const DevPtr s[GEMM_NSLICES], Diag *d) {
  CudaState *c = p->impl;
  if (!bind(c, d)) return false;
  if (c->no_tf32 && g->allow_tf32) {
    GemmDesc full = *g;
    full.allow_tf32 = false;
    return cublaslt_gemm(&c->lt, c->lib_path, c->stream, &full, s, d);
  }
  return cublaslt_gemm(&c->lt, c->lib_path, c->stream, g, s, d);
}

static bool cu_conv(Platform *p, const ConvDesc *cd, const DevPtr s[CONV_NSLICES], Diag *d) {
  CudaState *c = p->impl;
  if (!bind(c, d)) return false;
  if (c->no_tf32 && cd->allow_tf32) {
    ConvDesc full = *cd;
    full.allow_tf32 = false;
    return cudnn_conv(&c->dnn, p, c->lib_path, c->stream, &full, s, d);
  }
  return cudnn_conv(&c->dnn, p, c->lib_path, c->stream, cd, s, d);
}

/* ---- collectives: NCCL (collective_nccl.c) ------------------------------- */

static bool cu_coll_takes(Platform *p, const CollExec *x) { return nccl_coll_takes(x); }

static bool cu_coll_run(Platform *p, CollExec *x, const CollGroup *g, const DevPtr *in,
                        const DevPtr *out, Diag *d) {
  CudaState *c = p->impl;
  if (!bind(c, d)) return false;
  if (!not_recording(c, "a collective", d)) return false;
  return nccl_coll_run(&c->nccl, c->lib_path, p, c->stream, x, g, in, out, d);
}

/* ---- command buffers: CUDA graphs by stream capture ---------------------- */

static bool cu_cmdbuf_begin(Platform *p, Diag *d) {
  CudaState *c = p->impl;
  if (!bind(c, d)) return false;
  if (c->stream) return cu_err(d, "CUDA: a command buffer is already being recorded");
  if (!c->capture &&
      !ck(c, c->api.StreamCreate(&c->capture, CU_STREAM_NON_BLOCKING), "cuStreamCreate", d))
    return false;
  if (!ck(c, c->api.StreamBeginCapture(c->capture, CU_STREAM_CAPTURE_MODE_RELAXED),
          "cuStreamBeginCapture", d))
    return false;
  c->stream = c->capture;
  return true;
}

static bool cu_cmdbuf_end(Platform *p, bool keep, void **cb, Diag *d) {
  CudaState *c = p->impl;
  if (!bind(c, d)) return false;
  if (!c->stream) return cu_err(d, "CUDA: no command buffer is being recorded");
  c->stream = NULL;
  CUgraph g = NULL;
  if (!ck(c, c->api.StreamEndCapture(c->capture, &g), "cuStreamEndCapture", d)) return false;
  bool ok = true;
  if (keep && *cb && c->api.GraphExecUpdate) {
    CUgraphExecUpdateResultInfo info;
    memset(&info, 0, sizeof info);
    if (c->api.GraphExecUpdate((CUgraphExec)*cb, g, &info) != CUDA_SUCCESS ||
        info.result != CU_GRAPH_EXEC_UPDATE_SUCCESS) {
      /* not updatable in place (the driver says why in info.result):
       * instantiate the new graph instead */
      c->api.GraphExecDestroy((CUgraphExec)*cb);
      *cb = NULL;
    } else {
      keep = false;               /* updated: nothing more to make */
    }
  } else if (keep && *cb) {
    c->api.GraphExecDestroy((CUgraphExec)*cb);
    *cb = NULL;
  }
  if (keep) {
    CUgraphExec x = NULL;
    ok = ck(c, c->api.GraphInstantiate(&x, g, 0), "cuGraphInstantiate", d);
    if (ok) *cb = x;
  }
  c->api.GraphDestroy(g);
  return ok;
}

static bool cu_cmdbuf_launch(Platform *p, void *cb, Diag *d) {
  CudaState *c = p->impl;
  if (!bind(c, d)) return false;
  if (!not_recording(c, "a command buffer launch", d)) return false;
  return ck(c, c->api.GraphLaunch((CUgraphExec)cb, NULL), "cuGraphLaunch", d);
}

static void cu_cmdbuf_free(Platform *p, void *cb) {
  CudaState *c = p->impl;
  bind_quietly(c);
  c->api.GraphExecDestroy((CUgraphExec)cb);
}

static void cu_destroy(Platform *p) {
  CudaState *c = p->impl;
  bind_quietly(c);
  nccl_free(c->nccl);
  cublaslt_free(c->lt);
  cudnn_free(c->dnn, p);
  free(c->lib_path);
  for (int k = 0; k < c->nmarks; k++) c->api.EventDestroy(c->marks[k]);
  if (c->capture) c->api.StreamDestroy(c->capture);
  if (c->fork) c->api.EventDestroy(c->fork);
  for (int k = 0; k < c->nside; k++) {
    if (c->side[k]) c->api.StreamDestroy(c->side[k]);
    if (c->join[k]) c->api.EventDestroy(c->join[k]);
  }
  free(c->marks);
  if (c->mod) c->api.ModuleUnload(c->mod);
  if (c->have_ctx) c->api.DevicePrimaryCtxRelease(c->dev);
  free(c->ptx_name);
  /* libcuda stays loaded: unloading a driver library with live threads is
   * not safe */
  free(c);
}

/* Opens libcuda.so.1 and binds its entry points into c. */
static bool cuda_load(CudaState *c, Diag *d) {
  dlerror();
  c->lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!c->lib) {
    const char *why = dlerror();
    return cu_err(d, "cannot load libcuda.so.1: %s; is the NVIDIA driver installed?",
                  why ? why : "dlopen failed");
  }
  c->have_graphs = c->have_staging = c->have_streams = true;
  for (size_t k = 0; k < ARRAY_LEN(cuda_syms); k++) {
    void *sym = dlsym(c->lib, cuda_syms[k].name);
    if (!sym && cuda_syms[k].alt) sym = dlsym(c->lib, cuda_syms[k].alt);
    if (!sym && cuda_syms[k].optional == 1) c->have_graphs = false;
    if (!sym && cuda_syms[k].optional == 3) c->have_staging = false;
    if (!sym && cuda_syms[k].optional == 4) c->have_streams = false;
    if (!sym && !cuda_syms[k].optional)
      return cu_err(d, "libcuda.so.1 has no %s; the NVIDIA driver is too old",
                    cuda_syms[k].name);
    memcpy((char *)&c->api + cuda_syms[k].off, &sym, sizeof sym);
  }
  return true;
}

/* cuInit and the number of devices (0 when the driver sees none). */
static bool cuda_count(CudaState *c, int *n, Diag *d) {
  *n = 0;
  CUresult r = c->api.Init(0);
  if (r == CUDA_ERROR_NO_DEVICE) return true;
  return ck(c, r, "cuInit", d) && ck(c, c->api.DeviceGetCount(n), "cuDeviceGetCount", d);
}

/* Opens the driver, picks device c->ordinal and makes its primary context
 * current. */
static bool cuda_open(CudaState *c, Diag *d) {
  int n = 0;
  if (!cuda_load(c, d) || !cuda_count(c, &n, d)) return false;
  if (n == 0) return cu_err(d, "no CUDA device (the driver is installed but sees no GPU)");
  if (c->ordinal < 0 || c->ordinal >= n)
    return cu_err(d, "there is no CUDA device %d: the driver sees %d GPU%s", c->ordinal, n,
                  n == 1 ? "" : "s");
  if (!ck(c, c->api.DeviceGet(&c->dev, c->ordinal), "cuDeviceGet", d) ||
      !ck(c, c->api.DevicePrimaryCtxRetain(&c->ctx, c->dev), "cuDevicePrimaryCtxRetain", d))
    return false;
  c->have_ctx = true;
  return ck(c, c->api.CtxSetCurrent(c->ctx), "cuCtxSetCurrent", d);
}

int platform_cuda_device_count(Diag *d) {
  CudaState c;
  memset(&c, 0, sizeof c);
  int n = 0;
  /* (libcuda stays loaded, as for a platform) */
  return cuda_load(&c, d) && cuda_count(&c, &n, d) ? n : -1;
}

Platform *platform_cuda_new(const PlatformOptions *o, Diag *d) {
  CudaState *c = xcalloc(1, sizeof *c);
  Platform *p = xcalloc(1, sizeof *p);
  p->name = "cuda";
  p->impl = c;
  p->alloc = cu_alloc;
  p->free = cu_free;
  p->copy_h2d = cu_h2d;
  p->copy_d2h = cu_d2h;
  p->copy_d2d = cu_d2d;
  p->memset32 = cu_memset32;
  p->load_kernels = cu_load;
  p->kernel = cu_kernel;
  p->launch = cu_launch;
  p->synchronize = cu_sync;
  p->reserve_marks = cu_reserve_marks;
  p->mark = cu_mark;
  p->elapsed_ms = cu_elapsed;
  p->gemm = cu_gemm;
  p->conv = cu_conv;
  p->coll_takes = cu_coll_takes;
  p->coll_run = cu_coll_run;
  p->destroy = cu_destroy;
  if (o && o->lib_path) c->lib_path = xstrdup(o->lib_path);
  c->no_tf32 = o && o->no_tf32;
  c->ordinal = o ? o->device : 0;
  bool opened = cuda_open(c, d);
  if (opened && c->have_staging) {
    p->host_alloc = cu_host_alloc;
    p->host_free = cu_host_free;
    p->copy_h2d_async = cu_h2d_async;
    p->copy_d2h_async = cu_d2h_async;
  }
  c->nside = (o && o->streams > 0 ? o->streams : CUDA_DEFAULT_STREAMS) - 1;
  if (c->nside > CUDA_MAX_SIDE_STREAMS) c->nside = CUDA_MAX_SIDE_STREAMS;
  if (opened && c->have_graphs && c->have_streams && c->nside > 0)
    p->launch_group = cu_launch_group;
  if (opened && c->have_graphs) {
    p->cmdbuf_begin = cu_cmdbuf_begin;
    p->cmdbuf_end = cu_cmdbuf_end;
    p->cmdbuf_launch = cu_cmdbuf_launch;
    p->cmdbuf_free = cu_cmdbuf_free;
  }
  if (!opened) {
    if (c->have_ctx) c->api.DevicePrimaryCtxRelease(c->dev);
    free(c->lib_path);
    free(c);
    free(p);
    return NULL;
  }
  return p;
}
