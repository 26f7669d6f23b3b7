/*
 * platform.h - where a compiled artifact runs (the host CPU or an NVIDIA GPU
 * through the CUDA Driver API), and the executor that runs its thunk
 * sequence there.
 *
 * A Platform is a table of operations on device memory and kernels.  Device
 * addresses are 64-bit integers (a CUdeviceptr, or a host pointer's value).
 * Every operation that can fail returns false with the message in d; nothing
 * here exits.  Operations are ordered: a read-back (copy_d2h) sees every
 * earlier launch and copy.
 *
 * The executor (executor.c) allocates one device pool for all the
 * artifact's allocations (each a slice at 256-byte alignment), uploads the
 * constants once, then for each run uploads the inputs into the parameter
 * slices (permuted from row-major literals into each parameter's layout),
 * runs the thunks, and downloads the result leaves (permuted back to
 * row-major) into literals shaped like the entry result.  On a platform
 * with pinned host memory and asynchronous copies, the inputs and outputs
 * go through one pinned staging buffer (made by the first run, reused by
 * the next) and the run synchronizes once, at its end.
 */
#ifndef XHLOC_PLATFORM_H
#define XHLOC_PLATFORM_H

#include "../hlo/hlo.h"
#include "../support/exchange.h"
#include "thunks.h"

typedef uint64_t DevPtr;

typedef struct Platform Platform;
typedef struct CollExec CollExec;     /* collective_exec.h */
typedef struct CollGroup CollGroup;

/* One kernel launch of a group (Platform.launch_group). */
typedef struct KernelLaunch {
  void *kernel;
  int nargs;
  const DevPtr *args;
  const uint32_t *grid, *block;   /* 3 each */
  uint32_t shmem_bytes;
} KernelLaunch;

struct Platform {
  const char *name;               /* "host", "cuda" */
  void *impl;                     /* the platform's own state */

  /* Device memory: n > 0 bytes, aligned to at least 256 bytes. */
  bool (*alloc)(Platform *p, size_t n, DevPtr *out, Diag *d);
  void (*free)(Platform *p, DevPtr ptr);
  bool (*copy_h2d)(Platform *p, DevPtr dst, const void *src, size_t n, Diag *d);
  bool (*copy_d2h)(Platform *p, void *dst, DevPtr src, size_t n, Diag *d);
  bool (*copy_d2d)(Platform *p, DevPtr dst, DevPtr src, size_t n, Diag *d);
  /* Fills count 32-bit words at dst (4-byte aligned) with value. */
  bool (*memset32)(Platform *p, DevPtr dst, uint32_t value, size_t count,
                   Diag *d);

  /* Loads the kernel file: its bytes (already checksum-checked) and its path
   * (the host platform dlopens the path; CUDA JIT-compiles the PTX bytes).
   * It replaces the file loaded before, whose kernel handles die with it. */
  bool (*load_kernels)(Platform *p, const uint8_t *bytes, size_t len,
                       const char *path, Diag *d);
  /* A handle for kernel `name` of the loaded file; NULL with a message when
   * the file has no such kernel. */
  void *(*kernel)(Platform *p, const char *name, Diag *d);
  /* Launches a kernel with one device pointer per argument.  The host
   * platform ignores the launch dimensions. */
  bool (*launch)(Platform *p, void *kernel, int nargs, const DevPtr *args,
                 const uint32_t grid[3], const uint32_t block[3],
                 uint32_t shmem_bytes, Diag *d);
  /* Optional (NULL: the executor launches one kernel at a time): launches
   * n kernels at once, each as launch would, which the executor guarantees
   * to be independent: no byte that one of them writes is read or written
   * by another.  The host runs all their work units on one parallel loop;
   * CUDA puts them on several streams, forked from and joined back into
   * its stream by events. */
  bool (*launch_group)(Platform *p, int n, const KernelLaunch *k, Diag *d);
  bool (*synchronize)(Platform *p, Diag *d);

  /* Optional (all four or none; NULL: the executor copies synchronously
   * from the literals): page-locked host memory, and copies between it and
   * device memory queued in stream order, complete at the next
   * synchronize.  host_alloc returns NULL with a message on failure. */
  void *(*host_alloc)(Platform *p, size_t n, Diag *d);
  void (*host_free)(Platform *p, void *m);
  bool (*copy_h2d_async)(Platform *p, DevPtr dst, const void *src, size_t n, Diag *d);
  bool (*copy_d2h_async)(Platform *p, void *dst, DevPtr src, size_t n, Diag *d);

  /* Library calls (libcall.h), in stream order: s[] holds the device address
   * of each slice of the thunk (GEMM_* / CONV_* order), 0 for absent ones.
   * NULL when the platform has no library for them (the executor then
   * refuses the artifact, naming the thunk). */
  bool (*gemm)(Platform *p, const GemmDesc *g, const DevPtr s[GEMM_NSLICES],
               Diag *d);
  bool (*conv)(Platform *p, const ConvDesc *c, const DevPtr s[CONV_NSLICES],
               Diag *d);
  /* The runtime's own routines (routine.h), in stream order, s[] as for
   * the library calls (ROUTINE_* order).  NULL where there are none (the
   * GPU: xhloc makes routine thunks for the host only). */
  bool (*routine)(Platform *p, const RoutineDesc *r, const DevPtr s[ROUTINE_NSLICES],
                  Diag *d);

  /* Timing in stream order: record a mark, and later the milliseconds
   * between two marks (waits for the second).  Marks are small integers
   * 0..nmarks-1 from reserve_marks. */
  bool (*reserve_marks)(Platform *p, int nmarks, Diag *d);
  bool (*mark)(Platform *p, int m, Diag *d);
  bool (*elapsed_ms)(Platform *p, int from, int to, double *ms, Diag *d);

  /* Optional command buffers (CUDA graphs); NULL: the platform has none and
   * the executor runs a command buffer's thunks one by one.  cmdbuf_begin
   * starts recording: every launch, device copy, memset and library call
   * after it is recorded, not run, until cmdbuf_end (host copies and
   * synchronize are refused meanwhile).  cmdbuf_end stops recording; with
   * keep false it throws the recording away, else it makes *cb (NULL: a new
   * command buffer) run the recorded work, updating an existing one in
   * place when it can (same commands, new addresses) and re-creating it
   * otherwise.  cmdbuf_launch runs a command buffer in stream order;
   * cmdbuf_free releases it. */
  bool (*cmdbuf_begin)(Platform *p, Diag *d);
  bool (*cmdbuf_end)(Platform *p, bool keep, void **cb, Diag *d);
  bool (*cmdbuf_launch)(Platform *p, void *cb, Diag *d);
  void (*cmdbuf_free)(Platform *p, void *cb);

  /* Optional collectives through the device's own library (the CUDA
   * platform: NCCL, collective_nccl.c); NULL: every collective thunk is
   * staged through host memory (collective_exec.c).  coll_takes says once
   * per thunk, as the executor is made, whether coll_run runs it (false:
   * staged through host memory, e.g. an element type the library cannot
   * reduce).  coll_run runs it in stream order as member g->me of group g,
   * in[k] and out[k] the device addresses of its operand and result
   * slices; it sees no collective that was not its to take. */
  bool (*coll_takes)(Platform *p, const CollExec *x);
  bool (*coll_run)(Platform *p, CollExec *x, const CollGroup *g, const DevPtr *in,
                   const DevPtr *out, Diag *d);

  void (*destroy)(Platform *p);
};

/* How a platform is set up (xhlo-run's options).  Zero-initialized is the
 * default. */
typedef struct PlatformOptions {
  int streams;                    /* CUDA: streams for independent kernels
                                     (launch_group); 0: the default (4), 1:
                                     one stream, no launch_group */
  int threads;                    /* host: worker threads for kernels and
                                     oneDNN; 0: XHLO_NUM_THREADS when set,
                                     else one per core */
  const char *lib_path;           /* directories (':'-separated) searched
                                     first for the vendor libraries (oneDNN,
                                     cuBLASLt, cuDNN); NULL: none */
  bool no_tf32;                   /* CUDA: f32 gemms and convolutions in full
                                     f32 even where the artifact allows TF32
                                     (xhlo-run --tf32=off) */
  int device;                     /* CUDA: the GPU, by its ordinal (0: the
                                     first the driver lists) */
} PlatformOptions;

/*
 * platform_host.c: the host CPU; kernels from PREFIX.host.so (dlopen),
 * library calls through oneDNN (onednn.c), routines (routine_host.c) on its
 * thread pool.  o may be NULL.
 */
Platform *platform_host_new(const PlatformOptions *o, Diag *d);

/*
 * platform_cuda.c: CUDA device o->device (the first when o is NULL) through
 * libcuda.so.1 (dlopen); library calls through cuBLASLt and cuDNN
 * (cublaslt.c, cudnn.c), opened when the first such thunk runs, and
 * collectives through NCCL (nccl.c, collective_nccl.c), opened when the
 * first collective runs.  Every operation makes the device's context
 * current on the calling thread first, so the platforms of several GPUs
 * may be used from one thread or from one thread each.  NULL with a
 * one-line message when there is no driver or no such device.
 */
Platform *platform_cuda_new(const PlatformOptions *o, Diag *d);
/* How many CUDA devices the driver sees; -1 with a message when there is
 * no driver. */
int platform_cuda_device_count(Diag *d);

void platform_free(Platform *p);  /* NULL is fine */

/*
 * executor.c
 */
typedef struct Executor Executor;

/* Sets up an artifact on a platform: loads the kernel file (its bytes and
 * path, as artifact_read_kernel_file returned them; NULL bytes when the
 * artifact has no kernel thunks), resolves every kernel, allocates the
 * buffers and uploads the constants.  The artifact and platform must
 * outlive the executor. */
Executor *executor_new(const Artifact *a, Platform *p,
                       const uint8_t *kernel_bytes, size_t kernel_len,
                       const char *kernel_path, Diag *d);
void executor_free(Executor *e);

/* With profiling on, each run times every thunk (nested ones too) with the
 * platform's marks; the run is then serialized thunk by thunk (no launch
 * groups).  A command buffer replayed as a whole is timed as a whole (its
 * commands then show no time of their own). */
void executor_set_profile(Executor *e, bool on);

/* Debugging device faults: on, the executor synchronizes after every
 * thunk (outside command-buffer recording), so an error that the device
 * reports late (a kernel's illegal address) names the thunk that caused
 * it.  Off (the default), an error found at a synchronization names the
 * thunks run since the previous one. */
void executor_set_sync_each_thunk(Executor *e, bool on);
/* A multi-device run: this executor is device (replica, partition), and
 * its collective thunks meet the other devices' executors through xg
 * (lib/support/exchange.h: threads of this process sharing the artifact,
 * or the processes of an MPI job).  Collectives the platform runs itself
 * (coll_takes, coll_run: NCCL) make their communicators through xg too:
 * the group's first member's unique id goes to the others with
 * xchg_bcast, over MPI when the devices are processes (one GPU each).
 * Unset, collective thunks with more than one participant fail;
 * replica-id and partition-id are 0. */
void executor_set_device(Executor *e, Exchange *xg, int64_t replica, int64_t partition);

/* Command buffers (on by default): on a platform that has them, a
 * COMMAND_BUFFER thunk is recorded the first time it runs and replayed
 * after that, re-recorded (and updated in place) when the device addresses
 * of its commands' slices changed since it was recorded.  Off, or on a
 * platform without them, its commands run one by one. */
void executor_set_command_buffers(Executor *e, bool on);

/* Benchmarking (xhlo-run --device-resident): on, a run given an input literal
 * (the same pointer) that an earlier run copied in leaves that parameter's
 * buffer as it is, as XLA's benchmarks keep their arguments on the device,
 * unless a result may overwrite it (input_output_alias): such a parameter is
 * copied in at every run.  The caller must not change the literals' values
 * while this is on.  Turning it on or off forgets what was copied in. */
void executor_set_keep_inputs(Executor *e, bool on);

/* Benchmarking (xhlo-run --back-to-back): on, a run that leaves its results
 * on the device (executor_run with result NULL) returns once its work is
 * queued, without synchronizing (not with profiling or sync-each-thunk on);
 * its executor_last_exec_ms is 0.  Runs queued so are on one stream, each
 * after the one before; executor_synchronize waits for all of them (a fault
 * is reported there, naming the thunks queued since the last
 * synchronization). */
void executor_set_defer_sync(Executor *e, bool on);
bool executor_synchronize(Executor *e, Diag *d);

/* Moves the buffer pool to new device memory (contents copied, the old
 * memory freed), as a caller that hands the executor other buffers would:
 * the next run sees new addresses everywhere, so every recorded command
 * buffer is updated before it is replayed. */
bool executor_move_buffers(Executor *e, Diag *d);

/* One run.  inputs: one literal per parameter leaf (Artifact.params), in
 * row-major order; NULL for token leaves.  Their element types and
 * dimensions must match the leaves' shapes.  *result (in out) is shaped like
 * Artifact.result_shape, with row-major data; result NULL leaves the results
 * on the device (a benchmark's runs before its last). */
bool executor_run(Executor *e, Literal *const *inputs, Arena *out,
                  Literal **result, Diag *d);
/* Milliseconds the last run spent in its thunks (from the first thunk to
 * the platform's synchronize after the last; inputs in and results out
 * excluded), as XLA's executable runs compare. */
double executor_last_exec_ms(const Executor *e);

/* The profile: every thunk in pre-order (depth 0 for the entry sequence;
 * a while's cond thunks, then its body's; a conditional's branches in
 * order), with the milliseconds it took in each profiled run so far (a
 * while loop's body thunks summed over its trips; 0 for a thunk not
 * reached) and how many times it ran in all of them. */
typedef struct ThunkProfile {
  const Thunk *thunk;
  int depth;
  int parent;                     /* index of the enclosing while or
                                     conditional; -1 in the entry sequence */
  int seq;                        /* which of the parent's sequences: 0 cond,
                                     1 body of a while; a conditional's
                                     branch number */
  int64_t calls;                  /* executions in all profiled runs */
  int nsamples;                   /* profiled runs */
  double *ms;                     /* nsamples entries */
} ThunkProfile;
int executor_profile(const Executor *e, const ThunkProfile **out);

/* The memory a run holds: the device pool (every allocation of the
 * artifact at a 256-byte aligned offset) with its allocations' bytes by
 * kind, and the pinned host staging buffer (0 until the first run, or on
 * a platform without one). */
typedef struct ExecMemory {
  int64_t pool;                   /* device bytes allocated for the pool */
  int64_t parameters, constants, outputs, temp; /* allocation sizes */
  int nallocs;
  int64_t staging;                /* pinned host bytes */
} ExecMemory;
void executor_memory(const Executor *e, ExecMemory *m);
/* "device memory: ..." (xhlo-run --profile): one line from ExecMemory. */
void executor_print_memory(StrBuf *b, const ExecMemory *m, const char *platform);

/* A timeline of the profiled runs (executor_set_trace): each thunk
 * execution, and each run as a whole, with its start (milliseconds from
 * the first traced run's start, on the platform's clock: CUDA events on a
 * GPU, the monotonic clock on the host) and its duration.  Runs never
 * overlap: one starts after the previous one's last thunk ended. */
typedef struct TraceEvent {
  int thunk;                      /* index into the profile; -1: a whole run */
  int run;                        /* traced run, from 0 */
  double start_ms, ms;
} TraceEvent;
/* Keeps up to max_events events of the profiled runs from now on (0:
 * none); the later ones are counted, not kept. */
void executor_set_trace(Executor *e, int64_t max_events);
/* The events, in order of their start (a run before its thunks, a while or
 * conditional before its nested thunks); *dropped: how many were not kept. */
int64_t executor_trace(const Executor *e, const TraceEvent **out,
                       int64_t *dropped);

/* Copies between a row-major buffer and the physical order of an array
 * shape's layout (minor_to_major).  Tiled or sub-byte layouts are refused
 * by executor_new, not here. */
void layout_to_physical(const Shape *s, const uint8_t *row_major,
                        uint8_t *physical);
void layout_from_physical(const Shape *s, const uint8_t *physical,
                          uint8_t *row_major);

#endif
