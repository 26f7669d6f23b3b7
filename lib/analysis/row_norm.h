/*
 * row_norm.h - the row-normalization analysis: whether a fused computation
 * is a row normalization (softmax, layer norm, RMS norm with their
 * elementwise prologue and epilogue) that one GPU kernel computes with a
 * row per block (or per warp), and its rows.
 *
 * A row normalization has one array output of the rows' shape S and one or
 * more reduces of S-shaped operands over the same single dimension of S
 * (the row dimension), none at the root.  Every reduce is read, through
 * every path from the root, at the row of the root element being
 * computed: the indexing map from the root to the reduce is exactly
 * (d0, .., dr-1) -> (the dims other than the row dimension).  So a kernel
 * that computes one row's reduces once (in a reducer's order of its
 * choosing) and binds them can compute every element of that row, and of
 * each reduce's operand, elementally.  Everything not depending on a
 * reduce is unconstrained.
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
};

typedef struct RowNorm {
  const Shape *space;             /* S: the reduces' operand shape */
  int dim;                        /* the reduced (row) dimension of S */
  int64_t n;                      /* row length: S.dims[dim] */
  int64_t rows;                   /* elements of S / n */
  int nreduces;
  const HloInstr *reduces[ROW_NORM_MAX_REDUCES]; /* producers first */
} RowNorm;

/* Whether comp is a row normalization; fills rn.  On false, *why (when
 * not NULL) says what does not fit (static text). */
bool row_norm_analyze(AffCtx *c, const HloComp *comp, RowNorm *rn, const char **why);

/* The physical minor-most dimension of s (its layout's, else the last). */
int row_norm_minor_dim(const Shape *s);

#endif
