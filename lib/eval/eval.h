/*
 * eval.h - the reference interpreter: runs an HloModule on host literals with
 * XLA's operation semantics (the ground truth every compiled result is checked
 * against, like XLA's HloEvaluator), plus the literal I/O the drivers share:
 * input and output specs in iree-run-module's syntax, random inputs and the
 * comparison with an expected output.
 *
 * Values are dense row-major buffers exactly like Literal's data (et_bytes per
 * element, logical order), so a result is handed back as Literals without
 * reformatting.  The interpreter never exits and never aborts on user input:
 * every failure is an EvalStatus whose kind says whether the module used an op
 * the interpreter cannot run, ran past a budget, was given bad inputs, or was
 * itself invalid; the message (with the instruction's location) is in a Diag.
 */
#ifndef XHLOC_EVAL_H
#define XHLOC_EVAL_H

#include "../hlo/hlo.h"

typedef enum EvalErrKind {
  EVAL_OK,
  EVAL_ERR_UNSUPPORTED,           /* an op (or custom-call target) it cannot run */
  EVAL_ERR_RESOURCE,              /* memory or time budget exceeded */
  EVAL_ERR_INPUT,                 /* wrong argument count, shape or type */
  EVAL_ERR_INVALID,               /* the module is malformed for evaluation */
  EVAL_ERR_VALUE,                 /* a run-time value outside its op's domain: a
                                     dynamic size past its bound, ragged rows
                                     out of range */
} EvalErrKind;

typedef struct EvalStatus {
  EvalErrKind kind;
  /* UNSUPPORTED: the op name, or "custom-call:TARGET"; RESOURCE: "memory" or
   * "time"; VALUE: the op name; otherwise empty. */
  char what[128];
  int64_t peak_bytes;             /* peak bytes of live values (also on success) */
} EvalStatus;

typedef struct EvalOptions {
  int64_t mem_budget;             /* bytes of live values; <= 0: unlimited */
  double time_budget;             /* seconds; <= 0: unlimited */
  uint64_t rng_seed;              /* what GetRngSeed gives (the rng op follows XLA's keys) */
  /* Sorts in the order of the compiled kernels (a stable merge sort, also
   * for is_stable=false, the comparator as written) instead of XLA's CPU
   * order (std::sort's ties for is_stable=false; a lone operand's
   * greater-or-equal comparator as greater-than, see sort.c). */
  bool sort_stable_order;
  /* Threads for the large matrix products of dot and convolution (the
   * bits do not depend on it): <= 0 means XHLO_NUM_THREADS when set, else
   * one per CPU, for a device alone (world and exchange NULL), else 1. */
  int threads;
  int64_t replica_id, partition_id; /* for replica-id / partition-id */
  /* The devices of a multi-device run meet here (eval_module_devices sets
   * it; lib/support/rendezvous.h); NULL: this device is alone, and
   * collectives with more participants fail. */
  struct Rendezvous *world;
  /* Or, this device being one process of an MPI job (lib/support/
   * exchange.h, world NULL): each collective gathers every member's
   * operands through it. */
  struct Exchange *exchange;
} EvalOptions;

void eval_options_default(EvalOptions *o);

/*
 * Runs the entry computation of m on args (one Literal per entry parameter;
 * tuple parameters take tuple literals).  On success *result is a literal
 * (tuple literal for a tuple root) allocated in `out` and true is returned.
 * On failure returns false with the message in d and the kind in st (which
 * may be NULL).  Argument shapes must be compatible (layouts ignored) with
 * the entry parameters.
 */
bool eval_module(const HloModule *m, int nargs, Literal *const *args,
                 Arena *out, const EvalOptions *o, Literal **result, Diag *d,
                 EvalStatus *st);

/* Same, for any computation of m (its parameters take args). */
bool eval_computation(const HloModule *m, const HloComp *c, int nargs,
                      Literal *const *args, Arena *out, const EvalOptions *o,
                      Literal **result, Diag *d, EvalStatus *st);

/*
 * devices.c: runs the entry computation of m on every device of the module,
 * replica_count x num_partitions of them (device d is replica d / P,
 * partition d % P for P partitions), one thread each, meeting at every
 * collective.  args[d] holds device d's arguments; its result is allocated
 * in outs[d] and stored in results[d].  The memory budget in o is shared
 * among the devices.  On failure returns false with the first failing
 * device's message ("device D: ...") in d.  One device runs on the calling
 * thread, exactly as eval_module.
 */
int64_t eval_device_count(const HloModule *m);
bool eval_module_devices(const HloModule *m, int nargs,
                         Literal *const *const *args, Arena *const *outs,
                         const EvalOptions *o, Literal **results, Diag *d,
                         EvalStatus *st);

/*
 * combine.c: XLA's reduction kinds on raw element buffers (the compiled
 * all-reduce and reduce-scatter): acc[k] = acc[k] op x[k] for n elements of
 * type et, rounded to the type as the op in that type would be.
 */
typedef enum EvalCombine {
  EVAL_COMBINE_SUM, EVAL_COMBINE_PRODUCT, EVAL_COMBINE_MIN, EVAL_COMBINE_MAX,
} EvalCombine;
bool eval_combine_supported(ElemType et);   /* pred, integers, real floats */
void eval_combine(ElemType et, EvalCombine op, uint8_t *acc, const uint8_t *x,
                  int64_t n);

/*
 * io.c: literal I/O for the drivers.
 *
 * An input spec is iree-run-module's: "2x3xf32=1 2 3 4 5 6", "f32=1.5",
 * "2x2xi32=[[1 2][3 4]]" (nesting and commas are accepted and ignored,
 * omitted trailing values are zero), "2x2xbf16=@file.bin" (raw little-endian
 * element bytes), "@file.npy" (the first array of a .npy file; "+file" reads
 * like "@file").  Element type names are XLA's ("f32", "s32", "pred") or
 * IREE's ("i32", "i1", "ui8").  A spec with no "TYPE=" part ("1 2 3",
 * "[[1 2][3 4]]", "@raw.bin") takes its shape and type from `want` when
 * given.
 *
 * Literals are allocated in `a`; errors go to d (no location) and return
 * NULL / false.
 */
Literal *io_parse_input(Arena *a, const char *spec, const Shape *want,
                        Diag *d);
/* Checks a literal against the shape an entry parameter leaf expects
 * (element type and dimensions; layouts ignored).  `what` names it. */
bool io_check_shape(const Literal *l, const Shape *want, const char *what,
                    Diag *d);
/* Deterministic random value for an entry parameter leaf: floats uniform in
 * [-1, 1) (small floats rounded), signed ints in [-8, 8), unsigned in [0, 16),
 * pred 0/1; when index_bound >= 0 the values are integers in
 * [0, index_bound] (for operands used as indices). */
Literal *io_random_literal(Arena *a, const Shape *s, uint64_t seed,
                           int64_t index_bound);
/* For each entry parameter leaf (tuple parameters flattened, in order), the
 * largest in-range index value when the leaf feeds index operands (gather or
 * scatter indices, dynamic-slice starts, ...), else -1.  Returns the number
 * of leaves, and a heap array in *bounds. */
int io_index_bounds(const HloModule *m, int64_t **bounds);

/* Output: "-" prints as XLA literal text to stdout, "@f.npy" / "@f.bin"
 * writes a file.  An empty spec ignores the output. */
bool io_write_output(const char *spec, const Literal *l, FILE *out, Diag *d);
/* XLA literal text with its shape: "f32[2,2] {\n  { 1, 2 },\n  { 3, 4 }\n}". */
void io_print_literal(StrBuf *b, const Literal *l);

/* Compares actual with expected: an element fails when
 * |a - e| > atol + rtol * |e| (NaN equals NaN; infinities must match;
 * integers, pred and exact mode compare exactly).  On a mismatch returns false
 * and describes the count and the first mismatching index and values in
 * `why`. */
bool io_compare(const Literal *actual, const Literal *expected, double atol,
                double rtol, StrBuf *why);

/* Leaves of a (possibly tuple) literal in order; returns the count and a
 * heap array in *out. */
int io_literal_leaves(const Literal *l, Literal ***out);
/* Appends the array and token leaves of s to out, in order (tuples
 * flattened): the shapes of the entry's inputs, one per leaf. */
void io_shape_leaves(const Shape *s, PtrVec *out);
/* The inverse of io_literal_leaves: a literal of shape s built from flattened leaves, taking
 * leaves[*at], leaves[*at + 1], ... and advancing *at.  Tuple nodes are
 * made in a; a NULL leaf (a token) becomes an empty literal of its shape. */
Literal *io_literal_from_leaves(Arena *a, const Shape *s, Literal **leaves,
                                int *at);
/* Random values for parameter leaves (out[k] for leaves->data[k]; NULL for
 * tokens), as --random-inputs makes them everywhere: leaf k is seeded with
 * seed * 1000003 + k and, when bounds[k] >= 0 (io_index_bounds), kept in
 * [0, bounds[k]]. */
void io_random_leaves(Arena *a, const PtrVec *leaves, const int64_t *bounds,
                      int nbounds, uint64_t seed, Literal **out);
/* One argument per parameter of entry, rebuilt from its flattened leaves
 * (heap array of entry->nparams; tuple nodes in a). */
Literal **io_entry_args(Arena *a, const HloComp *entry, Literal **leaves);

/*
 * shard_io.c: global arrays and the shards of a partitioned program.
 */
typedef struct SpmdIo {
  int64_t ndev;                   /* num_partitions */
  int nparams;                    /* entry parameter leaves (tokens too) */
  Tiling **param_tiling;          /* per leaf: how a global input is cut;
                                     NULL: every device takes all of it */
  Shape **param_global;           /* per leaf: the global shape, from the
                                     module's record; NULL (the array):
                                     not recorded */
  int nresults;                   /* result leaves put together from the
                                     devices' (0: results are per device) */
  Tiling **result_tiling;         /* per result leaf; NULL: replicated */
  Shape **result_global;
} SpmdIo;

/* The global view of m: its parameters' sharding= attributes and, for a
 * module spmd-partitioning made, its xhlo.global_parameter_shapes,
 * xhlo.global_result_shape and xhlo.result_sharding.  False with the error
 * in d when they cannot be read. */
bool io_spmd(Arena *a, const HloModule *m, SpmdIo *io, Diag *d);
/* s is a global array whose shards under t (ceil(dim / tiles) long) have
 * the shape `local` (t NULL: s is local). */
bool io_is_global_of(const Shape *s, const Shape *local, const Tiling *t);
/* Device dev's shard (shape `local`) of a global array; padding past the
 * array's end is zero. */
Literal *io_shard(Arena *a, const Literal *global, const Tiling *t,
                  int64_t dev, const Shape *local);
/* The global array put together from every device's shard (shards[d] for
 * device d; t NULL: device 0's is all of it). */
Literal *io_unshard(Arena *a, Literal *const *shards, const Tiling *t,
                    const Shape *global);

#endif
