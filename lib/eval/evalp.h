/*
 * evalp.h - private to lib/eval: the interpreter's values, its context and
 * the handlers each file implements.
 *
 * A value (EvalValue) is a reference-counted heap buffer in Literal's format:
 * dense, row-major logical order, et_bytes() per element; sub-byte integers
 * take one byte holding the value's low bits, as literal.c stores them.
 * Tuples hold references to their elements.  A value's shape is borrowed from the module
 * (instructions' and parameters' shapes), which outlives the evaluation.
 * Every array buffer is counted against the memory budget while it lives;
 * the driver drops each instruction's value after its last use.  Reshapes,
 * same-layout bitcasts and pass-through ops are O(1) views of their operand;
 * arguments and constants are borrowed from their Literals, never copied.
 * An instruction whose operand dies at it, unshared, may write its result
 * into the operand's buffer (ev_steal): elementwise ops and
 * dynamic-update-slice do, which makes a scan loop's per-iteration update
 * O(update) instead of a copy of the whole buffer.
 *
 * Elementwise arithmetic runs on "lanes": chunks of elements widened to the
 * type XLA's evaluator computes in (float for f32 and every smaller float,
 * double for f64, int64/uint64 for integers, complex float/double), then
 * rounded or truncated back when stored.
 */
#ifndef XHLOC_EVALP_H
#define XHLOC_EVALP_H

#include <complex.h>

#include "eval.h"
#include "../support/rendezvous.h"
#include "../runtime/thread_pool.h"

/* C11's CMPLX/CMPLXF build a complex from parts without arithmetic (so
 * infinities and NaNs stay as given); glibc's <complex.h> defines them
 * only for GCC, so other compilers (clang) get the same builtin here. */
#ifndef CMPLX
#define CMPLX(re, im) __builtin_complex((double)(re), (double)(im))
#endif
#ifndef CMPLXF
#define CMPLXF(re, im) __builtin_complex((float)(re), (float)(im))
#endif

typedef struct EvalValue EvalValue;
struct EvalValue {
  int refs;
  const Shape *shape;
  uint8_t *data;                  /* arrays; NULL for tuples and tokens */
  int64_t nbytes;
  int ntuple;
  EvalValue **tuple;
  EvalValue *owner;               /* views: the value whose data this borrows */
  /* Arrays of a dynamic shape: the runtime size of each dimension (rank
   * entries, heap) when some dimension is below its bound; NULL when every
   * dimension is at its bound.  The buffer always holds the bound; elements
   * beyond a runtime size are padding (see dynamic.c). */
  int64_t *dsize;
  bool borrowed;                  /* data belongs to a Literal: never freed or written */
};

typedef struct Eval {
  const HloModule *m;
  EvalOptions o;
  Diag *d;
  EvalStatus *st;
  int64_t live_bytes, peak_bytes;
  double start_time;
  int depth;                      /* call nesting, bounded */
  /* rng and rng-get-and-update-state: each instruction's 128-bit counter
   * state, as XLA's CPU runtime keeps it (rng.c); the rngs in XLA's
   * expansion order, found on first use. */
  struct EvRngState *rng_states;
  int nrng_states;
  HloInstr **rng_order;
  int nrng_order;                 /* -1 until found */
  uint64_t ticks;                 /* for cheap periodic time checks */
  /* Bit k set while an instruction runs: operand k is at its last use and
   * nothing else holds its buffer, so the handler may write its result
   * into it (see ev_steal). */
  uint64_t steal;
  /* The matrix products' threads (ev_pool), made on first need. */
  ThreadPool *pool;
  bool pool_made;
} Eval;

/* The pool for a large product's row blocks (EvalOptions.threads), NULL
 * for one thread. */
ThreadPool *ev_pool(Eval *ev);

/*
 * value.c: values, budgets, errors, element access and lanes
 */
EvalValue *ev_array(Eval *ev, const Shape *s);     /* zeroed; NULL: budget */
EvalValue *ev_array_nozero(Eval *ev, const Shape *s);
EvalValue *ev_tuple(Eval *ev, const Shape *s, int n, EvalValue *const *elems);
EvalValue *ev_token(Eval *ev, const Shape *s);
/* A value over a Literal's data (counted against the budget, never freed
 * or written). */
EvalValue *ev_borrow(Eval *ev, const Shape *s, uint8_t *data);
/* A value of shape s sharing v's bytes (same byte size), O(1). */
EvalValue *ev_view(Eval *ev, EvalValue *v, const Shape *s);
EvalValue *ev_ref(EvalValue *v);
void ev_unref(Eval *ev, EvalValue *v);
/* Deep copy (arrays copied, a new value). */
EvalValue *ev_copy(Eval *ev, EvalValue *v, const Shape *s);
/* A scratch buffer counted against the budget; free with ev_scratch_free. */
void *ev_scratch(Eval *ev, const HloInstr *i, int64_t nbytes);
void ev_scratch_free(Eval *ev, void *p, int64_t nbytes);

bool ev_fail(Eval *ev, const HloInstr *i, EvalErrKind kind, const char *fmt,
             ...) PRINTF_LIKE(4, 5);
/* EVAL_ERR_VALUE: an operand's run-time value is outside the op's domain. */
bool ev_fail_value(Eval *ev, const HloInstr *i, const char *fmt, ...)
    PRINTF_LIKE(3, 4);
bool ev_unsupported(Eval *ev, const HloInstr *i, const char *what);
/* Checks the time budget (cheaply: the clock is read every few calls). */
bool ev_check_time(Eval *ev, const HloInstr *i);
double ev_now(void);

/* Elements of an array shape (dims product); -1 on overflow. */
int64_t ev_elems(const Shape *s);
/* Row-major strides of dims (in elements). */
void ev_strides(const Shape *s, int64_t *strides);

/* One element, widened. */
int64_t ev_get_s64(ElemType et, const uint8_t *p);  /* p: element address */
uint64_t ev_get_u64(ElemType et, const uint8_t *p);
double ev_get_f64(ElemType et, const uint8_t *p);
void ev_set_s64(ElemType et, uint8_t *p, int64_t v); /* truncates */
void ev_set_f64(ElemType et, uint8_t *p, double v);  /* rounds as convert */
/* Index-typed element (signed or unsigned integer) as int64, saturated. */
int64_t ev_get_index(ElemType et, const uint8_t *p);

typedef enum Lane { LANE_F32, LANE_F64, LANE_S64, LANE_U64, LANE_C64, LANE_C128 } Lane;
#define LANE_CHUNK 256
typedef union LaneBuf {
  float f[LANE_CHUNK];
  double d[LANE_CHUNK];
  int64_t s[LANE_CHUNK];
  uint64_t u[LANE_CHUNK];
  float _Complex cf[LANE_CHUNK];
  double _Complex cd[LANE_CHUNK];
} LaneBuf;

Lane ev_lane(ElemType et);
/* Loads n elements starting at element `start` (or n copies of element 0
 * when `scalar`) into the lane buffer. */
void ev_lane_load(ElemType et, const uint8_t *base, int64_t start, int n,
                  bool scalar, LaneBuf *dst);
/* Stores n lane values (of lane ev_lane(et)) as elements from `start`. */
void ev_lane_store(ElemType et, uint8_t *base, int64_t start, int n,
                   const LaneBuf *src);
/* Converts n elements of type from to type to with XLA's convert rules. */
void ev_convert_elems(ElemType from, const uint8_t *src, ElemType to,
                      uint8_t *dst, int64_t n);

/*
 * elementwise.c: every elementwise op on raw buffers
 */
typedef struct EwArg {
  ElemType et;
  const uint8_t *p;
  bool scalar;                    /* one element broadcast over n */
} EwArg;

/* Applies instruction i's elementwise op (i->op with its attributes) to n
 * elements.  Returns false (error set) for a type the op does not take. */
bool ev_elementwise(Eval *ev, const HloInstr *i, int nargs, const EwArg *args,
                    ElemType out_et, uint8_t *out, int64_t n);
/* Whether ev_elementwise handles the op. */
bool ev_is_elementwise_op(HloOp op);
EvalValue *eval_elementwise(Eval *ev, const HloInstr *i, EvalValue *const *a);

/*
 * scalar.c: fast evaluation of scalar computations (reducers, comparators,
 * map and scatter functions) without allocating per call.
 */
typedef struct ScalarFn ScalarFn;
/* Prepares c; never fails (computations it cannot run natively fall back to
 * the general interpreter, one call per application). */
ScalarFn *scalar_fn_new(Eval *ev, const HloComp *c);
void scalar_fn_free(ScalarFn *f);
/* Applies f to nargs scalars (element pointers with their types, matching
 * the parameters leaf by leaf); writes the root's leaves to outs. */
bool scalar_fn_apply(Eval *ev, ScalarFn *f, const uint8_t *const *args,
                     uint8_t *const *outs);
/* Checks that f takes nargs scalars of types `ets` and returns nouts
 * scalars of types `outs` (error naming i otherwise). */
bool scalar_fn_check(Eval *ev, const HloInstr *i, const ScalarFn *f,
                     int nargs, const ElemType *ets, int nouts,
                     const ElemType *outs);
int scalar_fn_nouts(const ScalarFn *f);
/* Native functions only: after scalar_fn_apply, the value instruction i of
 * the computation took (NULL when f is not native or i is not in it). */
const uint8_t *scalar_fn_value(const ScalarFn *f, const HloInstr *i);
ElemType scalar_fn_out_et(const ScalarFn *f, int k);
/* The binary op when c is exactly `root = op(p0, p1)` on one type, else -1. */
int scalar_fn_simple_binop(const ScalarFn *f);

/*
 * eval.c: the driver
 */
/* Evaluates computation c on args (references are borrowed). */
EvalValue *ev_call(Eval *ev, const HloComp *c, int nargs,
                   EvalValue *const *args);
/* Same, taking over the caller's references to args (so the callee may
 * reuse their buffers once it is done reading them). */
EvalValue *ev_call_consume(Eval *ev, const HloComp *c, int nargs,
                           EvalValue *const *args);
/* Operand k's buffer, reusable as the result of shape s when the operand is
 * at its last use, unshared, not a view and of the same byte size; NULL
 * otherwise.  The result is a new reference to the operand's value. */
EvalValue *ev_steal(Eval *ev, EvalValue *const *a, int k, const Shape *s);
EvalValue *ev_from_literal(Eval *ev, const Literal *l, const Shape *s);
/* rng.c: Threefry-2x32 (20 rounds) of the counter (*x0, *x1), in place. */
void ev_threefry2x32(uint32_t key0, uint32_t key1, uint32_t *x0, uint32_t *x1);
Literal *ev_to_literal(Arena *a, const EvalValue *v);

/*
 * Handlers: one per opcode family, `a` the operand values.  NULL on error.
 */
/* shape_ops.c */
EvalValue *eval_iota(Eval *ev, const HloInstr *i);
EvalValue *eval_broadcast(Eval *ev, const HloInstr *i, EvalValue *const *a);
EvalValue *eval_reshape(Eval *ev, const HloInstr *i, EvalValue *const *a);
EvalValue *eval_bitcast(Eval *ev, const HloInstr *i, EvalValue *const *a);
EvalValue *eval_transpose(Eval *ev, const HloInstr *i, EvalValue *const *a);
EvalValue *eval_slice(Eval *ev, const HloInstr *i, EvalValue *const *a);
EvalValue *eval_dynamic_slice(Eval *ev, const HloInstr *i, EvalValue *const *a);
EvalValue *eval_dynamic_update_slice(Eval *ev, const HloInstr *i,
                                     EvalValue *const *a);
EvalValue *eval_pad(Eval *ev, const HloInstr *i, EvalValue *const *a);
EvalValue *eval_concatenate(Eval *ev, const HloInstr *i, EvalValue *const *a);
EvalValue *eval_reverse(Eval *ev, const HloInstr *i, EvalValue *const *a);
EvalValue *eval_copy_array(Eval *ev, const HloInstr *i, EvalValue *v);
/* Walks the box `dims` in row-major order copying eb-byte elements from src
 * at source strides to dst at destination strides (in elements; zero and
 * negative strides allowed). */
void ev_copy_strided(int rank, const int64_t *dims, const uint8_t *src,
                     const int64_t *sstr, uint8_t *dst, const int64_t *dstr,
                     int eb);
/* Copies the strided sub-box of src (dims sdims, starting at `start`, size
 * `size`, step `stride`) into dst (dense, dims `size`). */
void ev_copy_box(int rank, const int64_t *sdims, const uint8_t *src,
                 const int64_t *start, const int64_t *size,
                 const int64_t *stride, uint8_t *dst, int eb);

/* reduce.c */
EvalValue *eval_reduce(Eval *ev, const HloInstr *i, EvalValue *const *a);
EvalValue *eval_reduce_window(Eval *ev, const HloInstr *i, EvalValue *const *a);
EvalValue *eval_select_and_scatter(Eval *ev, const HloInstr *i,
                                   EvalValue *const *a);
EvalValue *eval_map(Eval *ev, const HloInstr *i, EvalValue *const *a);

/* dot.c */
EvalValue *eval_dot(Eval *ev, const HloInstr *i, EvalValue *const *a);
EvalValue *eval_convolution(Eval *ev, const HloInstr *i, EvalValue *const *a);
/* libcall.c: library custom-calls (GEMM and convolution targets). */
EvalValue *eval_libcall(Eval *ev, const HloInstr *i, EvalValue *const *a);
EvalValue *eval_ragged_dot(Eval *ev, const HloInstr *i, EvalValue *const *a);
/* Operand data converted to element type `to` (a new scratch buffer, or the
 * operand's own data when the types match: *owned tells which). */
uint8_t *ev_as_type(Eval *ev, const HloInstr *i, const EvalValue *v,
                    ElemType from, ElemType to, int64_t n, bool *owned);

/* gemm.c: C[m][n] += sum_k arows[m][k] * B[k*sk + n*sn] for the rows with
 * valid[m] (all when NULL), each element summed in increasing k with a
 * rounded product and an add per k (the plain loop's result, bit for bit).
 * False on a time or memory budget error (in ev). */
bool ev_gemm_float(Eval *ev, const HloInstr *i, int64_t M, int64_t N, int64_t K,
                   const float *const *arows, const bool *valid, const float *B,
                   int64_t sk, int64_t sn, float *C, int64_t ldc);
bool ev_gemm_double(Eval *ev, const HloInstr *i, int64_t M, int64_t N, int64_t K,
                    const double *const *arows, const bool *valid, const double *B,
                    int64_t sk, int64_t sn, double *C, int64_t ldc);

/* gather.c */
EvalValue *eval_gather(Eval *ev, const HloInstr *i, EvalValue *const *a);
EvalValue *eval_scatter(Eval *ev, const HloInstr *i, EvalValue *const *a);

/* scan.c */
EvalValue *eval_scan(Eval *ev, const HloInstr *i, EvalValue *const *a);

/* sort.c */
EvalValue *eval_sort(Eval *ev, const HloInstr *i, EvalValue *const *a);
EvalValue *eval_topk(Eval *ev, const HloInstr *i, EvalValue *const *a);

/* rng.c */
EvalValue *eval_rng(Eval *ev, const HloInstr *i, EvalValue *const *a);
EvalValue *eval_rng_bit_generator(Eval *ev, const HloInstr *i,
                                  EvalValue *const *a);
EvalValue *eval_rng_get_and_update_state(Eval *ev, const HloInstr *i);
void ev_rng_free(Eval *ev);

/* linalg.c */
EvalValue *eval_cholesky(Eval *ev, const HloInstr *i, EvalValue *const *a);
EvalValue *eval_triangular_solve(Eval *ev, const HloInstr *i,
                                 EvalValue *const *a);
EvalValue *eval_fft(Eval *ev, const HloInstr *i, EvalValue *const *a);
/* custom-calls "Qr" and "ProductOfElementaryHouseholderReflectors" */
EvalValue *eval_qr(Eval *ev, const HloInstr *i, EvalValue *const *a);
EvalValue *eval_householder_product(Eval *ev, const HloInstr *i, EvalValue *const *a);

/* batchnorm.c */
EvalValue *eval_batch_norm(Eval *ev, const HloInstr *i, EvalValue *const *a);
EvalValue *eval_onednn_layer_norm(Eval *ev, const HloInstr *i, EvalValue *const *a);

/* collective.c: collectives across the devices of the run */
EvalValue *eval_collective(Eval *ev, const HloInstr *i, EvalValue *const *a);
bool ev_is_collective_op(HloOp op);


/* ragged_all_to_all.c: ragged-all-to-all on one participant */
EvalValue *eval_ragged_all_to_all(Eval *ev, const HloInstr *i,
                                  EvalValue *const *a);

/* scaled_dot.c: scaled-dot as XLA's ScaledDotRewriter expands it */
EvalValue *eval_scaled_dot(Eval *ev, const HloInstr *i, EvalValue *const *a);

/* dynamic.c: runtime sizes of bounded dynamic dimensions */
/* Whether v (or an element of the tuple v) has a dimension below its bound. */
bool ev_is_dynamic(const EvalValue *v);
/* Sets v's runtime sizes (rank entries; NULL, or all at the bounds, clears
 * them). */
void ev_set_dsize(EvalValue *v, const int64_t *dsize);
/* Called when an operand of i has runtime sizes below its bounds.  Sets
 * *handled and returns i's result (NULL on error: an elementwise op runs
 * and keeps the sizes, reshape lays out the valid elements, reduce reads
 * padding as its init value, any op that would read padding is refused); leaves
 * *handled false for ops that pass values through unchanged (tuples, calls,
 * control flow, copies, the dynamic-size ops), which then run as usual. */
EvalValue *eval_dynamic_operands(Eval *ev, const HloInstr *i,
                                 EvalValue *const *a, bool *handled);
EvalValue *eval_set_dimension_size(Eval *ev, const HloInstr *i,
                                   EvalValue *const *a);
EvalValue *eval_get_dimension_size(Eval *ev, const HloInstr *i,
                                   EvalValue *const *a);
EvalValue *eval_dynamic_reshape(Eval *ev, const HloInstr *i,
                                EvalValue *const *a);
/* custom-calls SliceToDynamic (a static operand with runtime sizes) and
 * SetBound (the operand). */
EvalValue *eval_slice_to_dynamic(Eval *ev, const HloInstr *i, EvalValue *const *a);
EvalValue *eval_set_bound(Eval *ev, const HloInstr *i, EvalValue *const *a);
/* The literal of an array value with runtime sizes: a static shape of those
 * sizes holding the valid elements only. */
Literal *ev_dynamic_to_literal(Arena *a, const EvalValue *v);

/* custom_call.c: the custom-call targets the interpreter can run */
EvalValue *eval_custom_call(Eval *ev, const HloInstr *i, EvalValue *const *a);

#endif
