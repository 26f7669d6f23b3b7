/*
 * tree_reduction_rewriter.c - "tree-reduction-rewriter" (XLA's
 * TreeReductionRewriter as XLA's CPU compiler runs it): on the host target,
 * a reduce with a reduced dimension longer than 32 first reduces windows of
 * up to 32 elements along every reduced dimension, then reduces the
 * partial results (lib/hlo/tree_reduction.c says which reduces and how).
 * Nothing changes for the GPU target (XLA:GPU's own tree rewriter splits
 * rows by other rules).
 */
#include "passes.h"

#include "../lib/hlo/tree_reduction.h"

bool pass_tree_reduction_rewriter(HloModule *m, PassContext *ctx) {
  if (ctx->target != PASS_TARGET_HOST)
    return false;
  return hlo_tree_reductions(m, false);
}
