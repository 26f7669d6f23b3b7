/*
 * xhlo_run.h - what xhlo-run's files share: the parsed options and the
 * steps both ways of running use (gathering the inputs, writing and checking
 * the results).
 *
 *   main.c     option parsing, choosing how to run
 *   interp.c   HLO text on the reference interpreter
 *   thunks.c   a compiled artifact (PREFIX.thunks) on the host or a GPU
 *   devices.c  an artifact of several devices, one thread each, on the host
 *              or one GPU each (or one device per process under an MPI
 *              launcher)
 *   mpi.c      runs under an MPI launcher: joining the job, ending a run
 *   common.c   inputs, outputs and expected outputs
 *   trace_file.c  writing --trace's file whole or not at all
 */
#ifndef XHLO_RUN_H
#define XHLO_RUN_H

#include "../../lib/eval/eval.h"
#include "../../lib/runtime/platform.h"

/* The interpreter's sorts (--sort-order): not given is XLA's CPU order,
 * but the compiled kernels' (stable) order for --compare. */
enum { SORT_ORDER_UNSET, SORT_ORDER_XLA_CPU, SORT_ORDER_STABLE };

typedef struct RunOpts {
  StrVec *inputs, *outputs, *expected;
  bool random_inputs, quiet;
  uint64_t seed;
  double atol, rtol, time_budget;
  int64_t mem_budget;
  bool reduce_in_order;           /* --reduction-order=in-order */
  int sort_order;                 /* --sort-order: SORT_ORDER_* */
  /* compiled artifacts */
  const char *platform;           /* "host", "cuda", "interpreter"; NULL: the
                                     artifact's target */
  bool describe, compare, profile;
  const char *trace;              /* --trace=FILE.json; NULL: none */
  int iterations;                 /* 0: not given (one run, no timing) */
  double cmp_atol, cmp_rtol;      /* --compare's tolerances */
  bool cmp_tol_given;             /* --atol or --rtol: no per-type widening */
  int threads;                    /* --threads; 0: XHLO_NUM_THREADS or all cores */
  const char *lib_path;           /* --lib-path: vendor library directories */
  bool no_command_buffers;        /* --command-buffers=off */
  bool no_tf32;                   /* --tf32=off */
  int streams;                    /* --streams=N; 0: the platform's default */
  bool sync_each_thunk;           /* --sync-each-thunk */
  bool device_resident;           /* --device-resident */
  bool back_to_back;              /* --back-to-back */
  /* an MPI launcher started this process (xchg_launched): one device per
   * process, device mpi_rank of mpi_size */
  bool mpi;
  int mpi_rank, mpi_size;
  /* --num-replicas, --num-partitions (0: not given): HLO text takes them
   * where its header has none; an artifact must have been compiled so */
  int64_t num_replicas, num_partitions;
} RunOpts;

/*
 * interp.c
 */
/* Runs the entry computation of the HLO text in src on the interpreter;
 * returns the exit status. */
int run_interpreter(const RunOpts *o, const SrcFile *src);
/* A parsed and verified module made ready for the interpreter: its reduces
 * put in XLA's CPU order (lib/hlo/tree_reduction.c) unless
 * --reduction-order=in-order, the sorts XLA's CPU runs as its TopK marked
 * stable (lib/hlo/topk_sorts.c) unless --sort-order=stable. */
void interp_prepare(const RunOpts *o, HloModule *m);
/* Whether the interpreter sorts in the compiled kernels' stable order
 * (--sort-order; for_compare: the interpreter checks an artifact). */
bool interp_sort_stable(const RunOpts *o, bool for_compare);

/*
 * thunks.c
 */
int run_thunks(const RunOpts *o, const char *path);

/*
 * devices.c: artifacts of modules with several devices
 */
/* replica_count and num_partitions from the artifact's original HLO (1
 * where absent). */
void artifact_devices(const Artifact *a, int64_t *replicas, int64_t *partitions);
/* Runs every device of the artifact on the host or on one GPU each, one
 * thread each. */
int run_thunks_devices(const RunOpts *o, const char *path, const Artifact *a,
                       const char *pname, int64_t replicas, int64_t partitions);

/*
 * mpi.c: under an MPI launcher
 */
/* The MPI job's exchange for this process's device of a module of
 * replicas x partitions devices; NULL after printing why not (the job's
 * size differs, libmpi is missing).  Free it with xchg_free. */
Exchange *mpi_join(const RunOpts *o, int64_t replicas, int64_t partitions,
                   const char *path);
/* Ends this process's run (ok, or failed with why) and waits for the
 * others'; true when every device succeeded.  The first failure is printed
 * by the process of the device that failed. */
bool mpi_finish(Exchange *x, bool ok, const char *why, const char *path,
                int64_t partitions);
/* mpi_finish, but a failed device's process waits at most grace_s for
 * the others to end (they may wait for it inside NCCL, where no MPI
 * message reaches them): then it says so and exits 1, and the launcher
 * ends the job. */
bool mpi_finish_within(Exchange *x, bool ok, const char *why, const char *path,
                       int64_t partitions, int grace_s);
/* After a run every device finished: every device's result leaves (mine,
 * nres of them, the same shapes on every device) to the first process,
 * which gets them all (all[d][k], in a; heap arrays, free each and the
 * whole); NULL on the others, and on failure (*ok false, printed). */
Literal ***mpi_gather_results(Exchange *x, Literal **mine, int nres, Arena *a, bool *ok);
/* This process's place among the job's processes on this machine
 * (OMPI_COMM_WORLD_LOCAL_RANK, MPI_LOCALRANKID; else its rank), and how
 * many there are (for sharing its cores and GPUs). */
int mpi_local_rank(const RunOpts *o);
int mpi_local_size(const RunOpts *o);

/*
 * common.c
 */
/* One literal per leaf of `leaves` (shapes; NULL for tokens) from --input
 * or --random-inputs (bounds: io_index_bounds per leaf, may be NULL).
 * NULL after printing the problem.  path names the module in messages. */
Literal **gather_inputs(const RunOpts *o, const PtrVec *leaves,
                        const int64_t *bounds, int nbounds, Arena *a,
                        const char *path);
/* Writes the result leaves (--output or printing) and checks them against
 * --expected-output; returns the exit status. */
int emit_results(const RunOpts *o, Literal **res, int nres, Arena *a);
/* Every device's input leaves (vals[d][k] for device d, leaf k of
 * `leaves`; NULL for tokens) for a module of ndev devices whose global view
 * is io (NULL: none).  A spec with {d} is each device's own; one without
 * is every device's when it has the leaf's shape, and is cut into the
 * devices' shards when it is a global array of the parameter's sharding.
 * --random-inputs makes global arrays (seed) when io records the global
 * shapes, else each device's own (seed + d).  only >= 0: device only's
 * leaves alone (an MPI process's device; the others' stay NULL).  NULL
 * after printing the problem; free with device_inputs_free. */
Literal ***gather_device_inputs(const RunOpts *o, const PtrVec *leaves,
                                const int64_t *bounds, int nbounds,
                                const SpmdIo *io, int64_t ndev, int64_t only,
                                Arena *a, const char *path);
void device_inputs_free(Literal ***vals, int64_t ndev);
/* The results are global (io records them and no --output or
 * --expected-output names a device with {d}). */
bool results_global(const RunOpts *o, const SpmdIo *io);
/* Puts every device's results (res[d], nres leaves each) together into the
 * global ones and writes and checks those; returns the exit status. */
int emit_global_results(const RunOpts *o, const SpmdIo *io,
                        Literal **const *res, int nres, Arena *a);
/* The specs of `in` for device dev of a multi-device run: every "{d}"
 * replaced by its number (heap strings; free with device_specs_free). */
void device_specs(const StrVec *in, int64_t dev, StrVec *out);
void device_specs_free(StrVec *v);
/* Whether a thunk sequence (nested ones too) launches kernels. */
bool artifact_has_kernels(const ThunkSeq *s);

/*
 * trace_file.c
 */
typedef struct TraceFile TraceFile;
/* A temporary beside path for the trace; NULL after printing why it
 * cannot be written. */
TraceFile *trace_file_open(const char *path);
/* Writes e's trace (profile_write_trace) and renames it over the path;
 * false after printing why not.  Frees t either way. */
bool trace_file_commit(TraceFile *t, const Executor *e, const char *process,
                       const char *track);
/* Removes the temporary; NULL is fine. */
void trace_file_abort(TraceFile *t);

#endif
