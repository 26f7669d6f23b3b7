/*
 * routine.h - the host runtime's own routines: what XLA's CPU hands to its
 * libraries instead of compiling it (a plain reduction to its reduction
 * library, top-k to its runtime's TopK), run by xhlo-run from a routine
 * thunk, precompiled, so that xhloc generates and compiles no kernel for
 * them (emitters/host_routine.c says which fusions become one).
 *
 * Reduce: y[a, b] = init (+) x[a, 0, b] (+) x[a, 1, b] ... (+) x[a, size-1, b]
 * over x [outer, size, inner] and y [outer, inner] in physical (layout)
 * order, (+) one of add, maximum, minimum as HLO defines them (a NaN wins
 * maximum and minimum), f32.  The additions of a row (inner == 1)
 * are reassociated into a fixed set of partial sums; a column (inner > 1)
 * adds its elements in order.  Either way the order depends only on the
 * sizes, never on the threads.
 *
 * Top-k: for each of `rows` rows of n f32 values (the minor-most physical
 * dimension; rows in the same physical order in the input and both
 * results), the k greatest (largest, else the k smallest) by the total
 * order -NaN < -inf < ... < -0 < +0 < ... < inf < NaN, best first, ties in
 * the order of their positions (the first k of a stable sort, as the
 * interpreter computes them), and their s32 positions.
 *
 * Each routine takes ROUTINE_NSLICES slices in Thunk.lib order (absent
 * ones alloc -1).
 */
#ifndef XHLOC_ROUTINE_H
#define XHLOC_ROUTINE_H

#include "../hlo/hlo.h"

typedef enum RoutineKind { ROUTINE_REDUCE, ROUTINE_TOPK } RoutineKind;

typedef enum RoutineOp { ROUTINE_ADD, ROUTINE_MAX, ROUTINE_MIN } RoutineOp;

typedef struct RoutineDesc {
  RoutineKind kind;
  ElemType et;                    /* f32 (the only type with routines yet) */
  /* REDUCE */
  RoutineOp op;
  double init;                    /* the init value (an f32 value) */
  int64_t outer, size, inner;     /* x [outer, size, inner] -> y [outer, inner] */
  /* TOPK */
  int64_t rows, n, k;             /* rows of n values -> rows of k */
  bool largest;
} RoutineDesc;

/* Slices of a routine thunk (Thunk.lib), in this order. */
enum { ROUTINE_X, ROUTINE_Y, ROUTINE_INDICES, ROUTINE_NSLICES };

/* routine.c (its checks and text: thunks.h) */
const char *routine_kind_name(RoutineKind k);   /* "reduce", "topk" */
const char *routine_op_name(RoutineOp op);      /* "add", "max", "min" */

/*
 * routine_host.c: the routines on the host
 */
struct ThreadPool;
/* Runs r (routine_check passed) on host memory: s[] the start of each
 * slice (ROUTINE_* order), its work split over pool (NULL: the calling
 * thread alone).  The results are the same bits on any number of threads. */
void routine_run(const RoutineDesc *r, void *const s[ROUTINE_NSLICES],
                 struct ThreadPool *pool);

#endif
