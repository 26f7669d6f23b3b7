/*
 * registry.c - every pass, by its XLA name, in one static table sorted by
 * name (hlo-opt's registry; --run-passes and the pipelines look names up
 * here).
 */
#include "passes.h"

#include <string.h>

#include "../lib/hlo/ir_edit.h"

static const Pass registry[] = {
    {"algsimp", pass_algsimp},
    {"all-reduce-combiner", pass_all_reduce_combiner},
    {"annotation-remover", pass_annotation_remover},
    {"async-collective-creator", pass_async_collective_creator},
    {"async-to-sync", pass_async_to_sync},
    {"batchnorm_expander", pass_batchnorm_expander},
    {"call-inliner", pass_call_inliner},
    {"comparison-expander", pass_comparison_expander},
    {"computation-deduplicator", pass_computation_deduplicator},
    {"conditional-canonicalizer", pass_conditional_canonicalizer},
    {"conditional-simplifier", pass_conditional_simplifier},
    {"constant_folding", pass_constant_folding},
    {"conv-rewriter", pass_conv_rewriter},
    {"convert-mover", pass_convert_mover},
    {"copy-insertion", pass_copy_insertion},
    {"cse", pass_cse},
    {"dce", pass_dce},
    {"dot-decomposer", pass_dot_decomposer},
    {"dynamic_padder", pass_dynamic_padder},
    {"elided-constant-filler", pass_elided_constant_filler},
    {"flatten-call-graph", pass_flatten_call_graph},
    {"fusion-wrapper", pass_fusion_wrapper},
    {"gather-simplifier", pass_gather_simplifier},
    {"gemm-rewriter", pass_gemm_rewriter},
    {"hlo-memory-scheduler", pass_hlo_memory_scheduler},
    {"hlo-verifier", pass_hlo_verifier},
    {"latency-hiding-scheduler", pass_latency_hiding_scheduler},
    {"layout-assignment", pass_layout_assignment},
    {"logistic-expander", pass_logistic_expander},
    {"loop-update-sinking", pass_loop_update_sinking},
    {"map-inline", pass_map_inline},
    {"normalization-fusion", pass_normalization_fusion},
    {"onednn-layernorm-expander", pass_onednn_layernorm_expander},
    {"optimization-barrier-expander", pass_optimization_barrier_expander},
    {"priority-fusion", pass_priority_fusion},
    {"reduce-window-rewriter", pass_reduce_window_rewriter},
    {"reshape-mover", pass_reshape_mover},
    {"rng-expander", pass_rng_expander},
    {"scaled-dot-rewriter", pass_scaled_dot_rewriter},
    {"scan-expander", pass_scan_expander},
    {"sharding-propagation", pass_sharding_propagation},
    {"single-device-collectives", pass_single_device_collectives},
    {"slice-sinker", pass_slice_sinker},
    {"sort-simplifier", pass_sort_simplifier},
    {"spmd-partitioning", pass_spmd_partitioning},
    {"threefry-expander", pass_threefry_expander},
    {"transpose-folding", pass_transpose_folding},
    {"tree-reduction-rewriter", pass_tree_reduction_rewriter},
    {"tuple-simplifier", pass_tuple_simplifier},
    {"while-loop-constant-sinking", pass_while_loop_constant_sinking},
    {"while-loop-invariant-code-motion", pass_while_loop_invariant_code_motion},
    {"while-loop-simplifier", pass_while_loop_simplifier},
    {"zero_sized_hlo_elimination", pass_zero_sized_hlo_elimination},
};

int pass_count(void) { return (int)ARRAY_LEN(registry); }

const Pass *pass_at(int k) {
  return k >= 0 && k < pass_count() ? &registry[k] : NULL;
}

const Pass *pass_find(const char *name) {
  int lo = 0, hi = pass_count() - 1;
  while (lo <= hi) {
    int mid = (lo + hi) / 2;
    int c = strcmp(registry[mid].name, name);
    if (c == 0)
      return &registry[mid];
    if (c < 0)
      lo = mid + 1;
    else
      hi = mid - 1;
  }
  return NULL;
}

bool pass_run(const Pass *p, HloModule *m, PassContext *ctx, bool *changed) {
  *changed = p->run(m, ctx);
  if (ctx->diag->has_error) {
    *changed = false;
    return false;
  }
  return true;
}
