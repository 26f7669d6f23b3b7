/*
 * shape_inference_internal.h - private to lib/hlo/shape_inference*.c and
 * lib/hlo/verify.c.
 *
 * Shape inference is split by op family; every family gets the same context
 * (scratch arena, the instruction, the diagnostics) and shares the small shape
 * helpers below.  Inferred shapes are built with default layouts; the
 * comparisons ignore layouts, as XLA's non-layout-sensitive verifier does.
 */
#ifndef XHLOC_SHAPE_INFERENCE_INTERNAL_H
#define XHLOC_SHAPE_INFERENCE_INTERNAL_H

#include "hlo.h"

typedef struct SiCtx {
  Arena *a;               /* where inferred shapes (and messages) go */
  const HloInstr *i;      /* the instruction whose shape is inferred */
  Diag *d;
  bool share;             /* results may alias operand or callee shapes */
} SiCtx;

/* hlo_infer_shape with a choice: `share` lets a result that equals an
 * operand's or a called computation's shape be that very shape (no copy,
 * layouts as they are).  The verifier only compares, so it shares. */
Shape *si_infer(Arena *a, const HloInstr *i, Diag *d, bool share);

/* et_is_array, inlined for the hot paths: the array types are the ones from
 * pred to c128 in types.def order (token, opaque and tuple follow). */
static inline bool si_et_array(ElemType t) {
  return t >= ET_PRED && t <= ET_C128;
}

/*
 * shape_inference.c: context, errors and shape helpers
 */

/* Records "invalid <op> '<name>': <message>" at the instruction; NULL. */
Shape *si_fail(SiCtx *c, const char *fmt, ...) PRINTF_LIKE(2, 3);
/* The instruction's name for messages ("(unnamed)" when it has none). */
const char *si_name(const HloInstr *i);
/* A shape as text, without layout, in the scratch arena. */
const char *si_str(SiCtx *c, const Shape *s);
/* "{1,2,3}" for a list of dimension numbers, in the scratch arena. */
const char *si_list_str(SiCtx *c, int n, const int64_t *v);

/* Operand k's shape (the dispatcher has checked that it exists). */
const Shape *si_op(const SiCtx *c, int k);

/* Dimension queries that tolerate a NULL dyn array. */
bool si_dim_dynamic(const Shape *s, int d);   /* bounded or unbounded */
bool si_dim_unbounded(const Shape *s, int d); /* '?' */
bool si_is_unbounded(const Shape *s);         /* some dimension is '?' */
/* Sizes equal, or one of them unbounded ('?'). */
bool si_dims_compatible(int64_t x, int64_t y);

/* Builds an array shape with the default layout (none when sharing); dyn
 * may be NULL. */
Shape *si_array(const SiCtx *c, ElemType et, int rank, const int64_t *dims,
                const uint8_t *dyn);
/* Array shape s with element type et: a copy, or s itself when sharing and
 * et is its type (so never modify the result). */
Shape *si_with_et(const SiCtx *c, const Shape *s, ElemType et);
/* Deep copy with default layouts everywhere. */
Shape *si_copy(Arena *a, const Shape *s);
/* Marks dimension d of an array shape built by si_array as dynamic (kind is
 * DIM_BOUNDED or DIM_UNBOUNDED). */
void si_set_dynamic(Arena *a, Shape *s, int d, uint8_t kind);
/* s itself when sharing, else a copy with default layouts. */
Shape *si_result(const SiCtx *c, const Shape *s);
Shape *si_tuple2(const SiCtx *c, const Shape *x, const Shape *y);

/* Shape comparisons; layouts and dynamic-dimension markers are ignored
 * (XLA's ShapeUtil::Compatible family). */
enum {
  SI_CMP_IGNORE_FP = 1,     /* any two real float types match */
  SI_CMP_IGNORE_ET = 2,     /* element types ignored */
};
bool si_compatible(const Shape *x, const Shape *y, int flags);
/* Same rank and the same sizes (unbounded sizes match anything). */
bool si_same_dims(const Shape *x, const Shape *y);
bool si_same_et_ignoring_fp(ElemType x, ElemType y);
/* XLA's HigherPrecisionType for two types that match ignoring fp precision. */
ElemType si_higher_precision(ElemType x, ElemType y);
/* Number of elements counting bounds; -1 if unbounded or overflowing. */
int64_t si_elements(const Shape *s);

/* Checks that list v (n entries) holds distinct values in [0, bound). */
bool si_check_dims(SiCtx *c, const char *what, int n, const int64_t *v,
                   int64_t bound);

/* A computation's signature: parameters by number and the root shape.
 * Returns false with an error when the computation is unusable. */
typedef struct SiProgram {
  const HloComp *comp;
  int nparams;
  const Shape **params;
  const Shape *result;
} SiProgram;
bool si_program(SiCtx *c, int k, const char *role, SiProgram *p);

/* Checks a reducer computation as XLA's VerifyReducerShape does: 2N scalar
 * parameters, a scalar or N-tuple result, accumulator types matching. */
bool si_check_reducer(SiCtx *c, const SiProgram *p, int n,
                      const Shape *const *inits, const ElemType *input_ets);

/*
 * Per-family inference; each returns NULL with an error in c->d.
 */
/* shape_inference_elementwise.c */
Shape *si_infer_unary(SiCtx *c);
Shape *si_infer_binary(SiCtx *c);
Shape *si_infer_select(SiCtx *c);
Shape *si_infer_clamp(SiCtx *c);
Shape *si_infer_convert(SiCtx *c);
Shape *si_infer_bitcast_convert(SiCtx *c);
Shape *si_infer_stochastic_convert(SiCtx *c);
Shape *si_infer_reduce_precision(SiCtx *c);
Shape *si_infer_map(SiCtx *c);

/* shape_inference_layout.c: data movement */
Shape *si_infer_broadcast(SiCtx *c);
Shape *si_infer_reshape(SiCtx *c);
Shape *si_infer_dynamic_reshape(SiCtx *c);
Shape *si_infer_transpose(SiCtx *c);
Shape *si_infer_slice(SiCtx *c);
Shape *si_infer_dynamic_slice(SiCtx *c);
Shape *si_infer_dynamic_update_slice(SiCtx *c);
Shape *si_infer_pad(SiCtx *c);
Shape *si_infer_concatenate(SiCtx *c);
Shape *si_infer_reverse(SiCtx *c);
Shape *si_infer_iota(SiCtx *c);
Shape *si_infer_bitcast(SiCtx *c);
Shape *si_infer_get_dimension_size(SiCtx *c);
Shape *si_infer_set_dimension_size(SiCtx *c);
Shape *si_infer_sort(SiCtx *c);
Shape *si_infer_topk(SiCtx *c);

/* shape_inference_gather.c */
Shape *si_infer_gather(SiCtx *c);
Shape *si_infer_scatter(SiCtx *c);

/* shape_inference_contract.c: dot, convolution, linear algebra */
Shape *si_infer_dot(SiCtx *c);
Shape *si_infer_ragged_dot(SiCtx *c);
Shape *si_infer_scaled_dot(SiCtx *c);
Shape *si_infer_convolution(SiCtx *c);
Shape *si_infer_fft(SiCtx *c);
Shape *si_infer_cholesky(SiCtx *c);
Shape *si_infer_triangular_solve(SiCtx *c);
Shape *si_infer_batch_norm(SiCtx *c);

/* shape_inference_reduce.c */
Shape *si_infer_reduce(SiCtx *c);
Shape *si_infer_reduce_window(SiCtx *c);
Shape *si_infer_select_and_scatter(SiCtx *c);
Shape *si_infer_scan(SiCtx *c);
/* The output of a window op (reduce-window, select-and-scatter, conv). */
Shape *si_window_output(SiCtx *c, const Shape *base, const Window *w,
                        ElemType et);

/* shape_inference_control.c: calls, control flow, async, tokens */
Shape *si_infer_call(SiCtx *c);
Shape *si_infer_fusion(SiCtx *c);
Shape *si_infer_while(SiCtx *c);
Shape *si_infer_conditional(SiCtx *c);
Shape *si_infer_custom_call(SiCtx *c);
Shape *si_infer_constant(SiCtx *c);
Shape *si_infer_async(SiCtx *c);
Shape *si_infer_copy_start(SiCtx *c);
Shape *si_infer_copy_done(SiCtx *c);
Shape *si_infer_token_op(SiCtx *c);     /* after-all, add-dependency */
Shape *si_infer_feed(SiCtx *c);         /* infeed, outfeed */
Shape *si_infer_send_recv(SiCtx *c);    /* send, recv, send-done, recv-done */
Shape *si_infer_rng(SiCtx *c);          /* rng, rng-bit-generator, ...-state */

/* shape_inference_collective.c */
Shape *si_infer_collective(SiCtx *c);
/* The group size a collective's replica groups give (XLA's
 * GetSubgroupSize); 1 when nothing is known. */
int64_t si_subgroup_size(const HloInstr *i);

#endif
