/*
 * platform_host.c - the host platform: device memory is aligned host memory,
 * kernels are `void name(void **args, int64_t lo, int64_t hi)` functions of
 * PREFIX.host.so (emitters/codegen.h), opened with dlopen and run one after
 * another; a kernel's grid[0] work units are spread over a thread pool
 * (thread_pool.c: PlatformOptions.threads, else XHLO_NUM_THREADS, else one
 * thread per CPU), the calling thread included.  Results do not depend on
 * the number of threads: every unit computes its own part of the outputs.
 * Independent kernels (launch_group) share one parallel loop over all their
 * units, so that small kernels run side by side instead of one after
 * another.  Routine thunks (routine.h) run on the same pool.
 */
#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "onednn.h"
#include "platform.h"
#include "thread_pool.h"

typedef void (*HostKernel)(void **args, int64_t lo, int64_t hi);

typedef struct HostLaunch {
  HostKernel fn;
  void **args;
} HostLaunch;

typedef struct HostState {
  void *lib;                      /* dlopen handle */
  char *lib_path;
  int nmarks;
  double *marks;                  /* seconds */
  int nargbuf;
  void **argbuf;
  int ngroup;                     /* launch_group's kernels and unit starts */
  HostLaunch *group;
  int64_t *group_start;
  PlatformOptions opts;           /* lib_path copied */
  OneDnn *dnn;                    /* opened by the first library call */
  int threads;                    /* kernel threads, the caller included */
  ThreadPool *pool;               /* started by the first parallel launch;
                                     NULL while none or threads == 1 */
} HostState;


/* Kernels launched together: kernel k owns units [start[k], start[k+1]) of
 * the group's loop. */
typedef struct HostGroup {
  int n;
  HostLaunch *l;
  int64_t *start;                 /* n + 1 */
} HostGroup;

static void run_group_units(void *ctx, int64_t lo, int64_t hi) {
  HostGroup *g = ctx;
  for (int k = 0; k < g->n && lo < hi; k++) {
    if (g->start[k + 1] <= lo)
      continue;
    int64_t end = hi < g->start[k + 1] ? hi : g->start[k + 1];
    g->l[k].fn(g->l[k].args, lo - g->start[k], end - g->start[k]);
    lo = end;
  }
}

static bool host_err(Diag *d, const char *fmt, ...) PRINTF_LIKE(2, 3);
static bool host_err(Diag *d, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  Loc none = {0};
  diag_verror(d, none, fmt, ap);
  va_end(ap);
  return false;
}

static void *ptr(DevPtr p) {
  return (void *)(uintptr_t)p;
}

static bool host_alloc(Platform *p, size_t n, DevPtr *out, Diag *d) {
  size_t rounded = (n + 255) & ~(size_t)255;
  if (rounded < n) return host_err(d, "cannot allocate %zu bytes", n);
  void *m = aligned_alloc(256, rounded);
  if (!m) return host_err(d, "cannot allocate %zu bytes of host memory", n);
  memset(m, 0, rounded);
  *out = (DevPtr)(uintptr_t)m;
  return true;
}

static void host_free(Platform *p, DevPtr m) {
  free(ptr(m));
}

static bool host_h2d(Platform *p, DevPtr dst, const void *src, size_t n, Diag *d) {
  memcpy(ptr(dst), src, n);
  return true;
}

static bool host_d2h(Platform *p, void *dst, DevPtr src, size_t n, Diag *d) {
  memcpy(dst, ptr(src), n);
  return true;
}

static bool host_d2d(Platform *p, DevPtr dst, DevPtr src, size_t n, Diag *d) {
  memmove(ptr(dst), ptr(src), n);
  return true;
}

static bool host_memset32(Platform *p, DevPtr dst, uint32_t v, size_t count, Diag *d) {
  uint8_t *q = ptr(dst);
  for (size_t k = 0; k < count; k++) memcpy(q + 4 * k, &v, 4);
  return true;
}

static bool host_load(Platform *p, const uint8_t *bytes, size_t len, const char *path,
                      Diag *d) {
  HostState *h = p->impl;
  if (h->lib) dlclose(h->lib);
  free(h->lib_path);
  h->lib = NULL;
  h->lib_path = NULL;
  /* dlopen searches the library path for a name without a slash */
  char *full = strchr(path, '/') ? xstrdup(path) : NULL;
  if (!full) {
    full = xmalloc(strlen(path) + 3);
    strcpy(full, "./");
    strcat(full, path);
  }
  dlerror();
  h->lib = dlopen(full, RTLD_NOW | RTLD_LOCAL);
  if (!h->lib) {
    const char *why = dlerror();
    host_err(d, "%s: cannot load the host kernels: %s", path, why ? why : "dlopen failed");
    free(full);
    return false;
  }
  h->lib_path = full;
  return true;
}

static void *host_kernel(Platform *p, const char *name, Diag *d) {
  HostState *h = p->impl;
  if (!h->lib) {
    host_err(d, "kernel '%s': no kernel file is loaded", name);
    return NULL;
  }
  dlerror();
  void *sym = dlsym(h->lib, name);
  if (!sym) host_err(d, "%s: has no kernel '%s'", h->lib_path, name);
  return sym;
}


static bool host_launch_group(Platform *p, int n, const KernelLaunch *kl, Diag *d) {
  HostState *h = p->impl;
  int total_args = 0;
  for (int k = 0; k < n; k++)
    total_args += kl[k].nargs + 1;
  if (total_args > h->nargbuf) {
    h->argbuf = xreallocarray(h->argbuf, (size_t)total_args, sizeof *h->argbuf);
    h->nargbuf = total_args;
  }
  if (n > h->ngroup) {
    h->group = xreallocarray(h->group, (size_t)n, sizeof *h->group);
    h->group_start = xreallocarray(h->group_start, (size_t)n + 1, sizeof *h->group_start);
    h->ngroup = n;
  }
  void **a = h->argbuf;
  int64_t units = 0;
  for (int k = 0; k < n; k++) {
    for (int j = 0; j < kl[k].nargs; j++)
      a[j] = ptr(kl[k].args[j]);
    a[kl[k].nargs] = NULL;
    h->group[k].args = a;
    memcpy(&h->group[k].fn, &kl[k].kernel, sizeof h->group[k].fn);
    a += kl[k].nargs + 1;
    h->group_start[k] = units;
    units += kl[k].grid[0] ? kl[k].grid[0] : 1;
  }
  h->group_start[n] = units;
  HostGroup g = {n, h->group, h->group_start};
  if (units > 1 && h->threads > 1 && !h->pool)
    h->pool = thread_pool_new(h->threads);
  thread_pool_run(units > 1 ? h->pool : NULL, units, run_group_units, &g);
  return true;
}

/* One kernel: a group of one. */
static bool host_launch(Platform *p, void *kernel, int nargs, const DevPtr *args,
                        const uint32_t grid[3], const uint32_t block[3],
                        uint32_t shmem_bytes, Diag *d) {
  KernelLaunch kl = {kernel, nargs, args, grid, block, shmem_bytes};
  return host_launch_group(p, 1, &kl, d);
}

static bool host_sync(Platform *p, Diag *d) {
  return true;
}

static bool host_reserve_marks(Platform *p, int n, Diag *d) {
  HostState *h = p->impl;
  if (n > h->nmarks) {
    h->marks = xreallocarray(h->marks, (size_t)n, sizeof *h->marks);
    h->nmarks = n;
  }
  return true;
}

static bool host_mark(Platform *p, int m, Diag *d) {
  HostState *h = p->impl;
  if (m < 0 || m >= h->nmarks) return host_err(d, "timer mark %d was not reserved", m);
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  h->marks[m] = (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
  return true;
}

static bool host_elapsed(Platform *p, int from, int to, double *ms, Diag *d) {
  HostState *h = p->impl;
  if (from < 0 || to < 0 || from >= h->nmarks || to >= h->nmarks)
    return host_err(d, "timer marks %d, %d were not reserved", from, to);
  *ms = (h->marks[to] - h->marks[from]) * 1e3;
  return true;
}

static void host_destroy(Platform *p) {
  HostState *h = p->impl;
  if (h->lib) dlclose(h->lib);
  free(h->lib_path);
  free(h->marks);
  free(h->argbuf);
  free(h->group);
  free(h->group_start);
  onednn_close(h->dnn);
  thread_pool_free(h->pool);
  free((char *)h->opts.lib_path);
  free(h);
}

static bool host_dnn(HostState *h, Diag *d) {
  if (!h->dnn)
    h->dnn = onednn_open(&h->opts, d);
  return h->dnn != NULL;
}

static bool host_gemm(Platform *p, const GemmDesc *g, const DevPtr s[GEMM_NSLICES],
                      Diag *d) {
  HostState *h = p->impl;
  void *ptrs[GEMM_NSLICES];
  for (int k = 0; k < GEMM_NSLICES; k++) ptrs[k] = ptr(s[k]);
  return host_dnn(h, d) && onednn_gemm(h->dnn, g, ptrs, d);
}

static bool host_conv(Platform *p, const ConvDesc *c, const DevPtr s[CONV_NSLICES],
                      Diag *d) {
  HostState *h = p->impl;
  void *ptrs[CONV_NSLICES];
  for (int k = 0; k < CONV_NSLICES; k++) ptrs[k] = ptr(s[k]);
  return host_dnn(h, d) && onednn_conv(h->dnn, c, ptrs, d);
}

static bool host_routine(Platform *p, const RoutineDesc *r,
                         const DevPtr s[ROUTINE_NSLICES], Diag *d) {
  HostState *h = p->impl;
  void *ptrs[ROUTINE_NSLICES];
  for (int k = 0; k < ROUTINE_NSLICES; k++) ptrs[k] = ptr(s[k]);
  if (h->threads > 1 && !h->pool)
    h->pool = thread_pool_new(h->threads);
  routine_run(r, ptrs, h->pool);
  return true;
}

Platform *platform_host_new(const PlatformOptions *o, Diag *d) {
  Platform *p = xcalloc(1, sizeof *p);
  p->name = "host";
  HostState *hs = xcalloc(1, sizeof(HostState));
  p->impl = hs;
  if (o) {
    hs->opts = *o;
    hs->opts.lib_path = o->lib_path ? xstrdup(o->lib_path) : NULL;
  }
  hs->threads = thread_pool_default_threads(hs->opts.threads);
  p->gemm = host_gemm;
  p->conv = host_conv;
  p->routine = host_routine;
  p->alloc = host_alloc;
  p->free = host_free;
  p->copy_h2d = host_h2d;
  p->copy_d2h = host_d2h;
  p->copy_d2d = host_d2d;
  p->memset32 = host_memset32;
  p->load_kernels = host_load;
  p->kernel = host_kernel;
  p->launch = host_launch;
  p->launch_group = host_launch_group;
  p->synchronize = host_sync;
  p->reserve_marks = host_reserve_marks;
  p->mark = host_mark;
  p->elapsed_ms = host_elapsed;
  p->destroy = host_destroy;
  return p;
}

void platform_free(Platform *p) {
  if (!p) return;
  p->destroy(p);
  free(p);
}
