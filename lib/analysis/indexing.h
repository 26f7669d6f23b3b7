/*
 * indexing.h - indexing maps and the indexing analysis of HLO (seed 000).
 *
 * An indexing map f(d, r, rt) sends a multi-index d of one tensor (dimension
 * variables d0.., each with bounds) to the multi-indices of another tensor,
 * over range variables r (symbols s0..s<R-1>, each a range of values) and
 * runtime variables rt (symbols s<R>.., each standing for an element of an
 * HLO value read at run time, with the interval of values it can usefully
 * take).  The domain is the box of the variables cut by constraints
 * "expr in [lo, hi]".
 *
 *   (d0, d1, d2)[s0] -> (d0, d1, s0)
 *   domain:
 *   d0 in [0, 3]
 *   ...
 *
 * The analysis gives, for every instruction, its output-to-input maps (for an
 * element of the output, the elements of each operand it reads) and
 * input-to-output maps (for an element of an operand, the elements of the
 * output it contributes to), and composes them through fusion computations.
 *
 * Everything is allocated in an AffCtx (affine.h); maps are immutable once
 * returned.  Nothing here ever exits or aborts on user input: what cannot be
 * described is an UNDEFINED map.
 *
 * Sectioned by the file that implements each part.
 */
#ifndef XHLOC_INDEXING_H
#define XHLOC_INDEXING_H

#include "../hlo/hlo.h"
#include "affine.h"

/*
 * indexing_map.c: maps, composition, equality
 */
typedef struct RtVar {
  Interval range;                 /* the values it can usefully take */
  const HloInstr *hlo;            /* the value it is an element of */
  int nexprs;                     /* = rank of hlo */
  const AffExpr **exprs;          /* which element: over the map's variables */
} RtVar;

typedef struct Constraint {
  const AffExpr *expr;
  Interval range;
} Constraint;

typedef struct IndexingMap {
  bool undefined;                 /* nothing is known: no other field is set */
  bool empty;                     /* the domain is known to be empty */
  int ndims;
  Interval *dims;
  int nrange;                     /* range variables: s0 .. s<nrange-1> */
  Interval *range;
  int nrt;                        /* runtime variables: s<nrange> .. */
  RtVar *rt;
  int nresults;
  const AffExpr **results;
  int ncons;
  Constraint *cons;               /* canonical order after simplification */
} IndexingMap;

/* A set of maps (no two equal), in insertion order. */
typedef struct IndexingMapSet {
  int n, cap;
  const IndexingMap **maps;
} IndexingMapSet;

/* The maps of an instruction: one set per operand (output-to-input) or per
 * output (input-to-output). */
typedef struct InstrIndexing {
  int n;
  IndexingMapSet *sets;
} InstrIndexing;

static inline int imap_nsyms(const IndexingMap *m) { return m->nrange + m->nrt; }

/* A map with the given variables and results (copied), no runtime variables
 * and no constraints; add those with imap_add_* before handing it out. */
IndexingMap *imap_new(AffCtx *c, int ndims, const Interval *dims, int nrange,
                      const Interval *range, int nresults,
                      const AffExpr *const *results);
/* Dimension bounds [0, size-1] from a shape's sizes. */
IndexingMap *imap_from_sizes(AffCtx *c, int ndims, const int64_t *dim_sizes,
                             int nrange, const int64_t *range_sizes,
                             int nresults, const AffExpr *const *results);
IndexingMap *imap_identity(AffCtx *c, int rank, const int64_t *sizes);
const IndexingMap *imap_undefined(AffCtx *c);
IndexingMap *imap_copy(AffCtx *c, const IndexingMap *m);
void imap_add_constraint(AffCtx *c, IndexingMap *m, const AffExpr *e,
                         Interval range);
/* Appends a runtime variable and returns its symbol.  exprs (nexprs of them)
 * are over the map's dimensions. */
const AffExpr *imap_add_rt_var(AffCtx *c, IndexingMap *m, Interval range,
                               const HloInstr *hlo, int nexprs,
                               const AffExpr *const *exprs);

/* second(first(x)): first maps A to B, second maps B to C; the result maps A
 * to C.  Symbols: first's range variables, second's, first's runtime
 * variables, second's.  Not simplified. */
const IndexingMap *imap_compose(AffCtx *c, const IndexingMap *first,
                                const IndexingMap *second);
bool imap_equal(const IndexingMap *a, const IndexingMap *b);
bool imap_is_identity(const IndexingMap *m);

/* Evaluation at a point of the domain box (syms: range then runtime values).
 * imap_in_domain checks the bounds and the constraints. */
bool imap_in_domain(const IndexingMap *m, const int64_t *dims,
                    const int64_t *syms);
void imap_eval(const IndexingMap *m, const int64_t *dims, const int64_t *syms,
               int64_t *out);

void imap_set_init(IndexingMapSet *s);
/* Adds m unless an equal map is already there; returns true if added. */
bool imap_set_add(AffCtx *c, IndexingMapSet *s, const IndexingMap *m);
InstrIndexing *instr_indexing_new(AffCtx *c, int n);

/*
 * indexing_simplify.c: the bounds-aware simplifier
 */

/* e rewritten using dims[i] and syms[i] as the bounds of d<i> and s<i>:
 * floordiv/mod rewrites, constant ranges folded; the meaning over the box is
 * unchanged. */
const AffExpr *aff_simplify(AffCtx *c, const AffExpr *e, const Interval *dims,
                            int ndims, const Interval *syms, int nsyms);
/* The map simplified: runtime variables that are constants or iotas folded,
 * point range variables substituted, constraints rewritten, tightened into
 * variable bounds or removed when they always hold (the map becomes known
 * empty when one never holds), results simplified, unused symbols removed. */
const IndexingMap *imap_simplify(AffCtx *c, const IndexingMap *m);

/*
 * indexing_ops.c: maps of single instructions
 */

/* Number of outputs: the tuple element count for tuple-shaped instructions,
 * else 1. */
int indexing_num_outputs(const HloInstr *i);
/* The shape of output `output` (i's shape when it is not a tuple). */
const Shape *indexing_output_shape(const HloInstr *i, int output);
/* Output `output` of i to each operand: n == i->nops.  Fusions and calls are
 * composed through their computation.  Simplified. */
InstrIndexing *indexing_out_to_in(AffCtx *c, const HloInstr *i, int output);
/* Operand `operand` of i to each output: n == indexing_num_outputs(i). */
InstrIndexing *indexing_in_to_out(AffCtx *c, const HloInstr *i, int operand);

/* Reshape map from output indices to input indices (the same function gives
 * input-to-output with the shapes swapped). */
IndexingMap *indexing_reshape_map(AffCtx *c, int in_rank, const int64_t *in_dims,
                                  int out_rank, const int64_t *out_dims);

/*
 * indexing_fusion.c: composition through a computation
 */
typedef struct CompIndexing CompIndexing;

/* For output `output` of computation comp (its root, or the root tuple's
 * element), the maps from that output to the output of every instruction of
 * comp that it reads (tuple-shaped instructions per tuple index).  Equal
 * maps found along different paths are kept once; paths that read nothing
 * (empty domain) are dropped; a set reached by an UNDEFINED map, or grown
 * past 64 maps, is the single UNDEFINED map. */
CompIndexing *indexing_comp_out_to_in(AffCtx *c, const HloComp *comp,
                                      int output);
/* The maps to instruction i (element `tuple_index` when i is tuple-shaped);
 * NULL when the output does not read i. */
const IndexingMapSet *comp_indexing_get(const CompIndexing *ci,
                                        const HloInstr *i, int tuple_index);
/* For parameter `param` of comp, its maps to every output of comp: n ==
 * number of outputs (root tuple elements, or 1). */
InstrIndexing *indexing_comp_in_to_out(AffCtx *c, const HloComp *comp,
                                       int param);

/*
 * indexing_print.c: text
 */

/* A map as the seed prints it: the map line, "domain:", the variables with
 * their bounds (runtime variables with their "hlo:" and access map), then the
 * constraints sorted by text.  "UNDEFINED" / "KNOWN EMPTY" otherwise. */
void imap_print(StrBuf *b, const IndexingMap *m);
char *imap_to_string(const IndexingMap *m); /* heap; caller frees */
/* "name = shape opcode(operands)", as the "hlo:" lines print it. */
void indexing_print_instr_summary(StrBuf *b, const HloInstr *i);
/* xhloc --stage=indexing: every instruction of every computation with its
 * output-to-input maps (or input-to-output maps) per operand. */
void indexing_print_module(StrBuf *out, const HloModule *m,
                           bool input_to_output);

#endif
