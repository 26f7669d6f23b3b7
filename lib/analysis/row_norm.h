/*
 * row_norm.h - the row-normalization analysis: whether a fused computation
 * is a row normalization (softmax, layer norm, RMS norm with their
 * elementwise prologue and epilogue) that one GPU kernel computes with a
 * row per block (or per warp), and its rows.
 *
 * A row normalization has one array output, whose rows (along its
 * minor-most physical dimension) have n elements, and one or more reduces
 * of operands of one shape S over the same single dimension of S, of n
 * elements too (the reduces' rows), none at the root.  Every reduce is
 * read, through every path from the root, at one reduce row per output
 * row: the indexing maps from the root to the reduces are one map, without
 * symbols, whose results do not use the output's row dimension.  The root
 * is usually S itself (the map drops the row dimension), or a reshape or
 * transpose of it that keeps the rows (an RMS norm whose epilogue reshapes
 * [1,64,4096] to [64,4096]).  So a kernel that takes an output row,
 * computes its reduce row's reduces once (in a reducer's order of its
 * choosing) and binds them can compute every element of that output row,
 * and of each reduce's operand, elementally.  Everything not depending on
 * a reduce is unconstrained.
 *
 * The root may also be a tuple of the main output and reduces of the
 * computation (a layer norm's mean that a backward pass reads, an
 * attention's softmax sum that the division after the PV product reads):
 * each of those reads every reduce at its own row, and the main output is
 * then S itself, reading its own row, so that it covers every row.
 *
 * Used by normalization-fusion (passes/normalization_fusion.c), which
 * forms such fusions on the GPU target, and by the GPU kernel emitter
 * (emitters/norm_kernel.c), which checks again what it is given.
 */
#ifndef XHLOC_ROW_NORM_H
#define XHLOC_ROW_NORM_H

#include "indexing.h"

enum {
  ROW_NORM_MAX_REDUCES = 8,       /* reduces in one normalization */
  ROW_NORM_MAX_ROW = 16384,       /* longest row kept on chip: 1024
                                     threads, 16 elements each */
  ROW_NORM_MAX_OUTS = 8,          /* the main output and reduce outputs */
};

typedef struct RowNorm {
  const Shape *space;             /* S: the reduces' operand shape */
  int dim;                        /* the reduced dimension of S */
  int64_t n;                      /* row length: S.dims[dim] */
  const Shape *out;               /* the main output's shape */
  int out_dim;                    /* its row dimension (minor-most) */
  int64_t rows;                   /* output rows: elements of out / n */
  const IndexingMap *row;         /* main output -> every reduce it reads */
  int nreduces;
  const HloInstr *reduces[ROW_NORM_MAX_REDUCES]; /* producers first */
  int nouts;                      /* outputs (root tuple elements, or 1) */
  const HloInstr *outs[ROW_NORM_MAX_OUTS]; /* the main output, then
                                     reduces */
} RowNorm;

/* Whether comp is a row normalization; fills rn.  On false, *why (when
 * not NULL) says what does not fit (static text). */
bool row_norm_analyze(AffCtx *c, const HloComp *comp, RowNorm *rn, const char **why);

/* The physical minor-most dimension of s (its layout's, else the last). */
int row_norm_minor_dim(const Shape *s);

#endif
