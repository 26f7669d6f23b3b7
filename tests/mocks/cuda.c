/*
 * cuda.c - a mock libcuda.so.1 for check-cuda-libs.sh: one device, its
 * primary context, and device memory that is host memory (256-byte
 * aligned), so the mock cuBLASLt and cuDNN can compute on it.  Logs the
 * allocations, synchronizations and event records (events read the
 * monotonic clock).
 *
 * Kernels: a PTX image that names ".entry NAME(" provides the kernels of
 * that name in the table below (C functions on f32[4] arrays).
 *
 * Streams and graphs, with CUDA's semantics: work issued to a stream that
 * is being captured (cuStreamBeginCapture) is recorded as a graph node, not
 * run; cuGraphLaunch runs an instantiated graph's nodes in order;
 * cuGraphExecUpdate takes a graph of the same topology (node kinds and
 * kernels) and replaces the parameters, and refuses any other
 * (CU_GRAPH_EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED).  Legacy-stream work while
 * a capture is going on is refused, as a real driver refuses work that
 * would join the capture implicitly.  Freed memory is poisoned (0xa5) and
 * never reused, so a graph that kept stale addresses computes garbage.
 * mock_cuda_defer lets the mock libraries put their work into a capture.
 * Several streams, as CUDA captures them: a stream that waits
 * (cuStreamWaitEvent) for an event recorded on a captured stream joins that
 * capture (its work becomes nodes of the same graph); cuStreamEndCapture on
 * the stream that began it fails with 904 (CUDA_ERROR_STREAM_CAPTURE_UNJOINED)
 * unless every joined stream's last work was waited for by the origin
 * (its event recorded after that work and waited on by the origin stream),
 * and ends the capture of them all.
 *
 * Pinned host memory (cuMemAllocHost) and the async host copies are logged
 * with their sizes.  Failures can be injected from the environment, for
 * tests through xhlo-run (read by cuInit):
 *   MOCK_CUDA_FAIL=NAME:STATUS   the call NAME (cuMemAlloc,
 *                                cuModuleLoadDataEx, cuMemAllocHost,
 *                                cuLaunchKernel, ...) returns STATUS
 *   MOCK_CUDA_FAULT=KERNEL       launching KERNEL succeeds but faults the
 *                                context: every later synchronization and
 *                                synchronous read-back returns 700
 *                                (CUDA_ERROR_ILLEGAL_ADDRESS), as a real
 *                                illegal address shows
 *   MOCK_CUDA_DRIVER_VERSION=N   what cuDriverGetVersion says (default 12020)
 * mock_fault(kernel) does what MOCK_CUDA_FAULT does, for test drivers.
 *
 * Several GPUs (for the NCCL tests): MOCK_CUDA_DEVICES=N (read by cuInit;
 * default 1) devices, each with its primary context; the current context
 * is the calling thread's (cuCtxSetCurrent), as with the real driver.
 * Device memory belongs to the device current when it was allocated, and a
 * copy, memset or kernel given another device's memory fails with
 * CUDA_ERROR_INVALID_VALUE (logged), as does an allocation with no current
 * context (CUDA_ERROR_INVALID_CONTEXT); the mock NCCL asks
 * mock_cuda_ptr_device and mock_cuda_current_device.  Stream capture is per
 * device.  The driver is thread-safe: the device threads of a multi-GPU
 * run call it at once.
 */
#include <pthread.h>
#include <time.h>

#include "mock_util.h"

enum { MAXDEV = 16 };
static int ndevices = 1;
static __thread int cur = -1;     /* the current context's device */
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;

typedef int CUresult;
typedef unsigned long long CUdeviceptr;

static int live_allocs, live_graphs, live_execs;
static int sticky;                /* a faulted context's error */
static char fault_kernel[64];     /* MOCK_CUDA_FAULT */

MOCK_EXPORT void mock_fault(const char *kernel);
void mock_fault(const char *kernel) {
  snprintf(fault_kernel, sizeof fault_kernel, "%s", kernel ? kernel : "");
  sticky = 0;
}

MOCK_EXPORT int mock_live_allocs(void);
int mock_live_allocs(void) { return live_allocs; }
MOCK_EXPORT int mock_live_graphs(void);
int mock_live_graphs(void) { return live_graphs + live_execs; }

/* ---- kernels -------------------------------------------------------------- */
typedef struct Fn {
  const char *name;
  int nargs;
  void (*fn)(CUdeviceptr *args);
} Fn;
#define F32(k) ((float *)(uintptr_t)args[k])
static void k_add4(CUdeviceptr *args) {
  for (int i = 0; i < 4; i++) F32(2)[i] = F32(0)[i] + F32(1)[i];
}
static void k_scale2(CUdeviceptr *args) {
  for (int i = 0; i < 4; i++) F32(1)[i] = 2 * F32(0)[i];
}
#undef F32
static Fn fns[] = {{"add4", 3, k_add4}, {"scale2", 2, k_scale2}};

/* ---- streams and graphs --------------------------------------------------- */
enum { N_KERNEL, N_COPY, N_MEMSET, N_HOST };
typedef struct Node {
  int kind;
  const Fn *fn;                   /* N_KERNEL */
  CUdeviceptr args[8];            /* N_KERNEL: the argument values */
  CUdeviceptr dst, src;           /* N_COPY, N_MEMSET */
  size_t n;                       /* N_COPY bytes, N_MEMSET words */
  unsigned value;                 /* N_MEMSET */
  void (*host)(void *);           /* N_HOST: a mock library's work */
  void *arg;
} Node;
typedef struct Graph {
  int n;
  Node *nodes;
} Graph;
typedef struct Stream {
  unsigned flags;
  Graph *capture;                 /* non-NULL while capturing */
  bool forked;                    /* joined a capture begun on another stream */
  int work;                       /* work issued to it (captured or not) */
  int joined_work;                /* its work the origin has waited for */
} Stream;
static int capturing_on[MAXDEV];  /* streams being captured, per device */
#define capturing capturing_on[cur < 0 ? 0 : cur]
/* An event: the monotonic time of its last record (first, as the profile
 * tests read it), the stream and how much of its work it followed. */
typedef struct Event {
  double ms;
  Stream *stream;
  int work;
  Graph *capture;                 /* the capture it was recorded in */
} Event;
enum { MAX_STREAMS = 64 };
static Stream *streams[MAX_STREAMS];

static void add_node(Graph *g, Node nd) {
  g->nodes = realloc(g->nodes, sizeof *g->nodes * (size_t)(g->n + 1));
  g->nodes[g->n++] = nd;
}

static void run_node(const Node *nd) {
  switch (nd->kind) {
  case N_KERNEL: {
    CUdeviceptr a[8];
    memcpy(a, nd->args, sizeof a);
    nd->fn->fn(a);
    break;
  }
  case N_COPY:
    memmove((void *)(uintptr_t)nd->dst, (void *)(uintptr_t)nd->src, nd->n);
    break;
  case N_MEMSET:
    for (size_t k = 0; k < nd->n; k++) ((unsigned *)(uintptr_t)nd->dst)[k] = nd->value;
    break;
  case N_HOST:
    nd->host(nd->arg);
    break;
  }
}

/* Work for `stream`: recorded when it is being captured, else run now.
 * Legacy-stream work during a capture is refused (906,
 * CUDA_ERROR_STREAM_CAPTURE_IMPLICIT). */
static CUresult issue(void *stream, Node nd, const char *what) {
  Stream *s = stream;
  if (s) s->work++;
  if (s && s->capture) {
    mock_log("%s captured", what);
    add_node(s->capture, nd);
    return 0;
  }
  if (!s && capturing) {
    mock_log("%s on the legacy stream during a capture: refused", what);
    return 906;
  }
  mock_log("%s %s", what, s ? "stream" : "legacy");
  run_node(&nd);
  return 0;
}

/* For the mock libraries: puts fn(arg) into the capture of `stream` and
 * returns 1, or returns 0 when the stream is not being captured (the caller
 * then runs it now). */
MOCK_EXPORT int mock_cuda_defer(void *stream, void (*fn)(void *), void *arg);
int mock_cuda_defer(void *stream, void (*fn)(void *), void *arg) {
  Stream *s = stream;
  if (!s || !s->capture) return 0;
  add_node(s->capture, (Node){.kind = N_HOST, .host = fn, .arg = arg});
  return 1;
}

CUresult cuStreamCreate(void **out, unsigned flags) {
  Stream *s = calloc(1, sizeof *s);
  s->flags = flags;
  pthread_mutex_lock(&mu);
  for (int k = 0; k < MAX_STREAMS; k++)
    if (!streams[k]) {
      streams[k] = s;
      break;
    }
  pthread_mutex_unlock(&mu);
  *out = s;
  mock_log("cuStreamCreate flags=%u", flags);
  return 0;
}
CUresult cuStreamDestroy_v2(void *s) {
  mock_log("cuStreamDestroy");
  pthread_mutex_lock(&mu);
  for (int k = 0; k < MAX_STREAMS; k++)
    if (streams[k] == s) streams[k] = NULL;
  pthread_mutex_unlock(&mu);
  free(s);
  return 0;
}
CUresult cuStreamBeginCapture_v2(void *stream, int mode) {
  Stream *s = stream;
  if (!s) return 1;               /* the legacy stream cannot be captured */
  if (s->capture) return 1;
  mock_log("cuStreamBeginCapture mode=%d", mode);
  if (mock_failing("cuStreamBeginCapture")) return mock_failing("cuStreamBeginCapture");
  s->capture = calloc(1, sizeof *s->capture);
  capturing++;
  live_graphs++;
  return 0;
}
CUresult cuStreamEndCapture(void *stream, void **out) {
  Stream *s = stream;
  if (!s || !s->capture || s->forked) return 1;
  for (int k = 0; k < MAX_STREAMS; k++) {
    Stream *f = streams[k];
    if (f && f != s && f->capture == s->capture && f->work != f->joined_work) {
      mock_log("cuStreamEndCapture: a forked stream is not joined");
      return 904;
    }
  }
  for (int k = 0; k < MAX_STREAMS; k++) {
    Stream *f = streams[k];
    if (f && f != s && f->capture == s->capture) {
      f->capture = NULL;
      f->forked = false;
      capturing--;
    }
  }
  mock_log("cuStreamEndCapture nodes=%d", s->capture->n);
  *out = s->capture;
  s->capture = NULL;
  capturing--;
  return 0;
}
static Graph *graph_copy(const Graph *g) {
  Graph *x = calloc(1, sizeof *x);
  x->n = g->n;
  x->nodes = malloc(sizeof *x->nodes * (size_t)(g->n + 1));
  memcpy(x->nodes, g->nodes, sizeof *x->nodes * (size_t)g->n);
  return x;
}
static void graph_free(Graph *g) {
  free(g->nodes);
  free(g);
}
CUresult cuGraphInstantiateWithFlags(void **out, void *graph, unsigned long long flags) {
  Graph *g = graph;
  mock_log("cuGraphInstantiate nodes=%d", g->n);
  if (mock_failing("cuGraphInstantiate")) return mock_failing("cuGraphInstantiate");
  *out = graph_copy(g);
  live_execs++;
  return 0;
}
typedef struct {
  int result;
  void *error_node, *error_from_node;
} UpdateInfo;
CUresult cuGraphExecUpdate_v2(void *exec, void *graph, UpdateInfo *info) {
  Graph *x = exec, *g = graph;
  bool same = x->n == g->n;
  for (int k = 0; same && k < g->n; k++)
    same = x->nodes[k].kind == g->nodes[k].kind && x->nodes[k].fn == g->nodes[k].fn;
  int fail = mock_failing("cuGraphExecUpdate");
  if (!same || fail) {
    mock_log("cuGraphExecUpdate refused%s", fail ? " (injected)" : ": topology changed");
    info->result = 2;             /* CU_GRAPH_EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED */
    return 910;                   /* CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE */
  }
  mock_log("cuGraphExecUpdate nodes=%d", g->n);
  memcpy(x->nodes, g->nodes, sizeof *x->nodes * (size_t)g->n);
  info->result = 0;
  return 0;
}
CUresult cuGraphLaunch(void *exec, void *stream) {
  Graph *x = exec;
  mock_log("cuGraphLaunch nodes=%d %s", x->n, stream ? "stream" : "legacy");
  if (capturing && !stream) return 906;
  for (int k = 0; k < x->n; k++) run_node(&x->nodes[k]);
  return 0;
}
CUresult cuGraphDestroy(void *g) {
  mock_log("cuGraphDestroy");
  graph_free(g);
  live_graphs--;
  return 0;
}
CUresult cuGraphExecDestroy(void *x) {
  mock_log("cuGraphExecDestroy");
  graph_free(x);
  live_execs--;
  return 0;
}

/* ---- the rest of the driver ----------------------------------------------- */
/* The sizes of the blocks handed out, to poison them when freed. */
static struct { CUdeviceptr p; size_t n; int dev; } *blocks;
static int nblocks;

/* The device whose memory holds p; -1: none's (host memory). */
static int owner(CUdeviceptr p) {
  int dev = -1;
  pthread_mutex_lock(&mu);
  for (int k = 0; k < nblocks && dev < 0; k++)
    if (p >= blocks[k].p && p < blocks[k].p + blocks[k].n) dev = blocks[k].dev;
  pthread_mutex_unlock(&mu);
  return dev;
}

MOCK_EXPORT int mock_cuda_ptr_device(unsigned long long p);
int mock_cuda_ptr_device(unsigned long long p) { return owner(p); }
MOCK_EXPORT int mock_cuda_current_device(void);
int mock_cuda_current_device(void) { return cur; }

/* Fails (CUDA_ERROR_INVALID_VALUE, logged) when p is another device's
 * memory than the current one's. */
static CUresult mine(CUdeviceptr p, const char *what) {
  int dev = owner(p);
  if (dev < 0 || dev == cur) return 0;
  mock_log("%s: memory of device %d used on device %d", what, dev, cur);
  return 1;
}


CUresult cuInit(unsigned f) {
  const char *fail = getenv("MOCK_CUDA_FAIL"), *fault = getenv("MOCK_CUDA_FAULT");
  const char *ndev = getenv("MOCK_CUDA_DEVICES");
  if (ndev) ndevices = atoi(ndev) < 0 ? 0 : atoi(ndev) > MAXDEV ? MAXDEV : atoi(ndev);
  if (ndevices == 0) return 100;  /* CUDA_ERROR_NO_DEVICE */
  if (fail && strchr(fail, ':')) {
    char name[128];
    snprintf(name, sizeof name, "%.*s", (int)(strchr(fail, ':') - fail), fail);
    mock_fail(name, atoi(strchr(fail, ':') + 1));
  }
  if (fault) mock_fault(fault);
  return 0;
}
CUresult cuDriverGetVersion(int *v) {
  const char *e = getenv("MOCK_CUDA_DRIVER_VERSION");
  *v = e ? atoi(e) : 12020;
  return 0;
}
CUresult cuMemGetInfo_v2(size_t *fr, size_t *total) {
  *fr = (size_t)1 << 30;
  *total = (size_t)80 << 30;
  return 0;
}
CUresult cuDeviceGetCount(int *n) { *n = ndevices; return 0; }
CUresult cuDeviceGet(int *d, int i) { *d = i; return i < 0 || i >= ndevices ? 101 : 0; }
CUresult cuDeviceGetName(char *s, int n, int d) { snprintf(s, (size_t)n, "mock"); return 0; }
/* device d's primary context is the pointer d + 1 */
CUresult cuDevicePrimaryCtxRetain(void **c, int d) {
  if (d < 0 || d >= ndevices) return 101;
  *c = (void *)(uintptr_t)(d + 1);
  return 0;
}
CUresult cuDevicePrimaryCtxRelease_v2(int d) { return 0; }
CUresult cuCtxSetCurrent(void *c) {
  uintptr_t v = (uintptr_t)c;
  if (v > (uintptr_t)ndevices) return 201;   /* CUDA_ERROR_INVALID_CONTEXT */
  cur = (int)v - 1;
  return 0;
}
CUresult cuCtxGetCurrent(void **c) {
  *c = cur < 0 ? NULL : (void *)(uintptr_t)(cur + 1);
  return 0;
}
CUresult cuCtxSynchronize(void) {
  mock_log("cuCtxSynchronize");
  if (sticky) return sticky;
  return capturing ? 906 : 0;
}
CUresult cuModuleLoadDataEx(void **m, const void *img, unsigned n, int *o, void **v) {
  if (mock_failing("cuModuleLoadDataEx")) return mock_failing("cuModuleLoadDataEx");
  if (!strstr(img, ".entry ")) return 218;
  *m = strdup(img);
  return 0;
}
CUresult cuModuleUnload(void *m) { free(m); return 0; }
CUresult cuModuleGetFunction(void **f, void *m, const char *name) {
  char want[128];
  snprintf(want, sizeof want, ".entry %s(", name);
  if (!strstr(m, want)) return 500;
  for (size_t k = 0; k < sizeof fns / sizeof fns[0]; k++)
    if (strcmp(fns[k].name, name) == 0) {
      *f = &fns[k];
      return 0;
    }
  return 500;
}
CUresult cuFuncSetAttribute(void *f, int a, int v) { return 0; }
CUresult cuMemAlloc_v2(CUdeviceptr *p, size_t n) {
  if (mock_failing("cuMemAlloc")) {
    mock_log("cuMemAlloc %zu failed (injected)", n);
    return mock_failing("cuMemAlloc");
  }
  if (cur < 0) {
    mock_log("cuMemAlloc %zu without a current context", n);
    return 201;                   /* CUDA_ERROR_INVALID_CONTEXT */
  }
  void *m = aligned_alloc(256, (n + 255) / 256 * 256);
  if (!m) return 2;
  memset(m, 0, n);
  *p = (CUdeviceptr)(uintptr_t)m;
  pthread_mutex_lock(&mu);
  live_allocs++;
  blocks = realloc(blocks, sizeof *blocks * (size_t)(nblocks + 1));
  blocks[nblocks].p = *p;
  blocks[nblocks].dev = cur;
  blocks[nblocks++].n = n;
  pthread_mutex_unlock(&mu);
  mock_log("cuMemAlloc %zu -> %p", n, m);
  return 0;
}
CUresult cuMemFree_v2(CUdeviceptr p) {
  mock_log("cuMemFree %p", (void *)(uintptr_t)p);
  pthread_mutex_lock(&mu);
  for (int k = 0; k < nblocks; k++)
    if (blocks[k].p == p) {
      /* poisoned and never handed out again: stale users read garbage */
      memset((void *)(uintptr_t)p, 0xa5, blocks[k].n);
      mock_keep((void *)(uintptr_t)p);
      blocks[k] = blocks[--nblocks];
      live_allocs--;
      pthread_mutex_unlock(&mu);
      return 0;
    }
  pthread_mutex_unlock(&mu);
  return 1;
}
CUresult cuMemcpyHtoD_v2(CUdeviceptr d, const void *s, size_t n) {
  if (capturing) return 906;
  if (mine(d, "cuMemcpyHtoD")) return 1;
  mock_log("cuMemcpyHtoD %zu", n);
  memcpy((void *)(uintptr_t)d, s, n);
  return 0;
}
CUresult cuMemcpyDtoH_v2(void *d, CUdeviceptr s, size_t n) {
  if (capturing) return 906;
  if (mine(s, "cuMemcpyDtoH")) return 1;
  mock_log("cuMemcpyDtoH %zu", n);
  if (sticky) return sticky;
  memcpy(d, (void *)(uintptr_t)s, n);
  return 0;
}
/* Pinned memory: host memory the mock counts, logged. */
static int live_pinned;
MOCK_EXPORT int mock_live_pinned(void);
int mock_live_pinned(void) { return live_pinned; }
CUresult cuMemAllocHost_v2(void **p, size_t n) {
  if (mock_failing("cuMemAllocHost")) return mock_failing("cuMemAllocHost");
  *p = aligned_alloc(64, (n + 63) / 64 * 64);
  if (!*p) return 2;
  live_pinned++;
  mock_log("cuMemAllocHost %zu", n);
  return 0;
}
CUresult cuMemFreeHost(void *p) {
  mock_log("cuMemFreeHost");
  free(p);
  live_pinned--;
  return 0;
}
/* The async host copies run now (the work before them is done); the log
 * says which stream without the words the graph tests count. */
CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr d, const void *s, size_t n, void *st) {
  if (capturing) return 906;
  if (mock_failing("cuMemcpyHtoDAsync")) return mock_failing("cuMemcpyHtoDAsync");
  mock_log("cuMemcpyHtoDAsync %zu %s", n, st ? "(a stream)" : "(default stream)");
  memcpy((void *)(uintptr_t)d, s, n);
  return 0;
}
CUresult cuMemcpyDtoHAsync_v2(void *d, CUdeviceptr s, size_t n, void *st) {
  if (capturing) return 906;
  mock_log("cuMemcpyDtoHAsync %zu %s", n, st ? "(a stream)" : "(default stream)");
  memcpy(d, (void *)(uintptr_t)s, n);
  return 0;
}
CUresult cuMemcpyDtoD_v2(CUdeviceptr d, CUdeviceptr s, size_t n) {
  if (mine(d, "cuMemcpyDtoD") || mine(s, "cuMemcpyDtoD")) return 1;
  return issue(NULL, (Node){.kind = N_COPY, .dst = d, .src = s, .n = n}, "cuMemcpyDtoD");
}
CUresult cuMemcpyDtoDAsync_v2(CUdeviceptr d, CUdeviceptr s, size_t n, void *st) {
  return issue(st, (Node){.kind = N_COPY, .dst = d, .src = s, .n = n}, "cuMemcpyDtoDAsync");
}
CUresult cuMemsetD32_v2(CUdeviceptr d, unsigned v, size_t n) {
  if (mine(d, "cuMemsetD32")) return 1;
  return issue(NULL, (Node){.kind = N_MEMSET, .dst = d, .value = v, .n = n}, "cuMemsetD32");
}
CUresult cuMemsetD32Async(CUdeviceptr d, unsigned v, size_t n, void *st) {
  return issue(st, (Node){.kind = N_MEMSET, .dst = d, .value = v, .n = n}, "cuMemsetD32Async");
}
CUresult cuLaunchKernel(void *f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                        unsigned by, unsigned bz, unsigned sh, void *st, void **params,
                        void **extra) {
  const Fn *fn = f;
  if (!fn || !gx || !gy || !gz || !bx || !by || !bz || extra) return 1;
  if (mock_failing("cuLaunchKernel")) return mock_failing("cuLaunchKernel");
  if (fault_kernel[0] && strcmp(fault_kernel, fn->name) == 0) {
    /* reported later, as the GPU reports an illegal address */
    mock_log("cuLaunchKernel %s faults", fn->name);
    sticky = 700;
    return 0;
  }
  Node nd = {.kind = N_KERNEL, .fn = fn};
  for (int k = 0; k < fn->nargs; k++) {
    nd.args[k] = *(CUdeviceptr *)params[k];
    if (mine(nd.args[k], "cuLaunchKernel")) return 1;
  }
  char what[64];
  snprintf(what, sizeof what, "cuLaunchKernel %s", fn->name);
  return issue(st, nd, what);
}
/* An event holds the monotonic time (ms) of its last record; work is done
 * when it is submitted, so an event is complete once recorded. */
CUresult cuEventCreate(void **e, unsigned fl) { *e = calloc(1, sizeof(Event)); return 0; }
CUresult cuEventDestroy_v2(void *e) { free(e); return 0; }
CUresult cuEventRecord(void *e, void *s) {
  int fail = mock_failing("cuEventRecord");
  if (fail) return fail;
  Event *ev = e;
  Stream *st = s;
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  ev->ms = (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
  ev->stream = st;
  ev->work = st ? st->work : 0;
  ev->capture = st ? st->capture : NULL;
  mock_log("cuEventRecord%s", ev->capture ? " captured" : "");
  return 0;
}
/* A stream waits for an event: outside a capture work is done when issued,
 * so only the capture bookkeeping matters. */
CUresult cuStreamWaitEvent(void *s, void *e, unsigned flags) {
  Stream *st = s;
  Event *ev = e;
  if (!ev || flags) return 1;
  int fail = mock_failing("cuStreamWaitEvent");
  if (fail) return fail;
  if (ev->capture && st && !st->capture) {
    /* st joins the capture: its work from now on becomes nodes */
    st->capture = ev->capture;
    st->forked = true;
    st->joined_work = st->work;
    capturing++;
    mock_log("cuStreamWaitEvent: joins the capture");
    return 0;
  }
  if (ev->capture && st && st->capture == ev->capture && ev->stream && ev->stream->forked &&
      ev->stream != st && ev->work > ev->stream->joined_work)
    ev->stream->joined_work = ev->work;
  if (ev->capture && (!st || st->capture != ev->capture)) {
    mock_log("cuStreamWaitEvent: an event of another capture");
    return 901;                   /* CUDA_ERROR_STREAM_CAPTURE_ISOLATION-like */
  }
  mock_log("cuStreamWaitEvent%s", ev->capture ? " captured" : "");
  return 0;
}
CUresult cuEventSynchronize(void *e) { return sticky; }
CUresult cuEventElapsedTime(float *ms, void *a, void *b) {
  *ms = (float)(*(double *)b - *(double *)a);
  return 0;
}
CUresult cuGetErrorString(CUresult r, const char **s) {
  /* the real driver's texts for the errors the tests inject */
  *s = r == 2     ? "out of memory"
       : r == 222 ? "the provided PTX was compiled with an unsupported toolchain."
       : r == 700 ? "an illegal memory access was encountered"
                  : "mock error";
  return 0;
}
CUresult cuGetErrorName(CUresult r, const char **s) {
  switch (r) {
  case 2: *s = "CUDA_ERROR_OUT_OF_MEMORY"; break;
  case 209: *s = "CUDA_ERROR_NO_BINARY_FOR_GPU"; break;
  case 218: *s = "CUDA_ERROR_INVALID_PTX"; break;
  case 222: *s = "CUDA_ERROR_UNSUPPORTED_PTX_VERSION"; break;
  case 700: *s = "CUDA_ERROR_ILLEGAL_ADDRESS"; break;
  default: *s = "CUDA_ERROR_MOCK"; break;
  }
  return 0;
}
