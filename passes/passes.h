/*
 * passes.h - HLO passes, their registry and the pass pipelines.
 *
 * A pass is a name (XLA's: "dce", "algsimp", "call-inliner", ...) and a run
 * function that rewrites a module in place and says whether it changed it.
 * A pass that cannot proceed records an error in ctx->diag and returns false;
 * the pipeline stops there.  Passes never change what a program computes.
 *
 * Pipelines (pipeline.c) are named lists of passes and nested pipelines; a
 * nested pipeline may be a fixed-point group, rerun until an iteration changes
 * nothing (XLA's HloPassFix).  pass_manager.c runs them: pass selection by
 * regex, the verifier after each pass, XLA-named dumps between passes and a
 * timing table.
 *
 * Sectioned by the file that implements each part; every other pass file
 * exports exactly its pass_* function.
 */
#ifndef XHLOC_PASSES_H
#define XHLOC_PASSES_H

#include "../lib/hlo/hlo.h"

/* What the module is compiled for: the passes that call vendor libraries
 * (gemm-rewriter, conv-rewriter) choose their custom-call targets by it. */
typedef enum PassTarget { PASS_TARGET_GPU, PASS_TARGET_HOST } PassTarget;

typedef struct PassContext {
  Diag *diag;                     /* a failing pass records its error here */
  PassTarget target;              /* GPU unless --target=host */
  int64_t all_reduce_combine_threshold; /* all-reduce-combiner: bytes; 0:
                                     XLA's default (30 MiB + 7); -1: none */
} PassContext;

typedef struct Pass {
  const char *name;
  bool (*run)(HloModule *m, PassContext *ctx);
} Pass;

/*
 * registry.c: every pass by name.
 */
int pass_count(void);
const Pass *pass_at(int k);       /* sorted by name */
const Pass *pass_find(const char *name); /* NULL if none */
/* Runs one pass; false when it failed (the error in ctx->diag). */
bool pass_run(const Pass *p, HloModule *m, PassContext *ctx, bool *changed);

/*
 * pipeline.c: the default pipeline, in XLA:GPU's order.
 */
typedef struct Pipeline Pipeline;

typedef struct PipelineStep {
  const char *pass;               /* a registered pass by name, or NULL and: */
  const Pipeline *sub;            /* a nested pipeline, or NULL and: */
  const Pass *own;                /* a pass not in the registry (tests) */
  bool host_only;                 /* runs for --target=host alone (a pass of
                                     XLA:CPU's pipeline that XLA:GPU's lacks) */
} PipelineStep;

struct Pipeline {
  const char *name;               /* as in dump file names */
  bool fixed_point;               /* rerun until nothing changes */
  int nsteps;
  const PipelineStep *steps;
};

/* The pipelines `--stage=hlo` runs, in order: the optimization pipelines,
 * then the backend ones (layout assignment, fusion, post-fusion). */
int pipeline_default(const Pipeline *const **out);
/* The passes compilation needs before buffer assignment even when the
 * pipeline is skipped (is_scheduled input, --run-passes): flatten-call-graph,
 * layout-assignment, fusion-wrapper, copy-insertion.  Each is idempotent. */
int pipeline_backend_required(const Pipeline *const **out);
/* Prints every registered pass, one per line, with the pipelines that
 * contain it ("-" when none). */
void pipeline_list_passes(FILE *out);

/*
 * pass_manager.c: running pipelines.
 */
typedef struct PipelineOptions {
  const char *passes_re;          /* keep pipeline passes whose whole name
                                     matches (POSIX ERE); NULL: all */
  const char *disable_re;         /* drop passes whose whole name matches */
  const char *run_passes;         /* "a,b,c": run exactly these, in order,
                                     instead of the default pipeline */
  bool verify_each;               /* hlo_verify after every changing pass */
  bool force;                     /* run even on is_scheduled=true input */
  const char *dump_to;            /* directory for dumps; NULL: none */
  const char *dump_pass_re;       /* dump between matching passes */
  int module_id;                  /* NNNN in module_NNNN.* */
  bool time_passes;               /* print a timing table to time_out */
  FILE *time_out;                 /* NULL: stderr */
  int fix_limit;                  /* fixed-point iteration cap; 0: 25 */
  PassTarget target;              /* passed to every pass (PassContext) */
  int64_t all_reduce_combine_threshold; /* PassContext's */
  /* Called after every pass that changed the module (NULL: none). */
  void (*after_pass)(void *arg, const char *pass, const HloModule *m);
  void *after_pass_arg;
} PipelineOptions;

/* Checks the regexes and --run-passes names (the error lists the known
 * passes); false with the message in d. */
bool pipeline_check_options(const PipelineOptions *o, Diag *d);
/* Runs the default pipeline (or o->run_passes) on m.  With o->dump_to also
 * writes module_NNNN.<name>.before_optimizations.txt, the pass dumps and
 * module_NNNN.<name>.after_optimizations.txt.  False with the error in d. */
bool pipeline_run(HloModule *m, const PipelineOptions *o, Diag *d);
/* Same as pipeline_run, for the given pipelines (o->run_passes unused). */
bool pipeline_run_list(HloModule *m, int n, const Pipeline *const *pipes,
                       const PipelineOptions *o, Diag *d);
/* Writes m as module_NNNN.<name>.<suffix>.txt under o->dump_to. */
bool pipeline_dump(const HloModule *m, const PipelineOptions *o,
                   const char *suffix, Diag *d);

/*
 * The passes, one per file (passes/<name>.c).
 */
bool pass_algsimp(HloModule *m, PassContext *ctx);
bool pass_all_reduce_combiner(HloModule *m, PassContext *ctx);
bool pass_async_collective_creator(HloModule *m, PassContext *ctx);
bool pass_latency_hiding_scheduler(HloModule *m, PassContext *ctx);
bool pass_annotation_remover(HloModule *m, PassContext *ctx);
bool pass_async_to_sync(HloModule *m, PassContext *ctx);
bool pass_batchnorm_expander(HloModule *m, PassContext *ctx);
bool pass_call_inliner(HloModule *m, PassContext *ctx);
bool pass_comparison_expander(HloModule *m, PassContext *ctx);
bool pass_computation_deduplicator(HloModule *m, PassContext *ctx);
bool pass_conditional_canonicalizer(HloModule *m, PassContext *ctx);
bool pass_conditional_simplifier(HloModule *m, PassContext *ctx);
bool pass_conv_rewriter(HloModule *m, PassContext *ctx);
bool pass_copy_insertion(HloModule *m, PassContext *ctx);
bool pass_constant_folding(HloModule *m, PassContext *ctx);
bool pass_convert_mover(HloModule *m, PassContext *ctx);
bool pass_cse(HloModule *m, PassContext *ctx);
bool pass_dce(HloModule *m, PassContext *ctx);
bool pass_dot_decomposer(HloModule *m, PassContext *ctx);
bool pass_dynamic_padder(HloModule *m, PassContext *ctx);
bool pass_elided_constant_filler(HloModule *m, PassContext *ctx);
bool pass_flatten_call_graph(HloModule *m, PassContext *ctx);
bool pass_fusion_wrapper(HloModule *m, PassContext *ctx);
bool pass_gather_simplifier(HloModule *m, PassContext *ctx);
bool pass_gemm_rewriter(HloModule *m, PassContext *ctx);
bool pass_hlo_memory_scheduler(HloModule *m, PassContext *ctx);
bool pass_hlo_verifier(HloModule *m, PassContext *ctx);
bool pass_layout_assignment(HloModule *m, PassContext *ctx);
bool pass_loop_update_sinking(HloModule *m, PassContext *ctx);
bool pass_logistic_expander(HloModule *m, PassContext *ctx);
bool pass_map_inline(HloModule *m, PassContext *ctx);
bool pass_normalization_fusion(HloModule *m, PassContext *ctx);
bool pass_onednn_layernorm_expander(HloModule *m, PassContext *ctx);
bool pass_optimization_barrier_expander(HloModule *m, PassContext *ctx);
bool pass_priority_fusion(HloModule *m, PassContext *ctx);
bool pass_reduce_window_rewriter(HloModule *m, PassContext *ctx);
bool pass_reshape_mover(HloModule *m, PassContext *ctx);
bool pass_rng_expander(HloModule *m, PassContext *ctx);
bool pass_scaled_dot_rewriter(HloModule *m, PassContext *ctx);
bool pass_sharding_propagation(HloModule *m, PassContext *ctx);
bool pass_scan_expander(HloModule *m, PassContext *ctx);
bool pass_slice_sinker(HloModule *m, PassContext *ctx);
bool pass_single_device_collectives(HloModule *m, PassContext *ctx);
bool pass_sort_simplifier(HloModule *m, PassContext *ctx);
bool pass_spmd_partitioning(HloModule *m, PassContext *ctx);
bool pass_threefry_expander(HloModule *m, PassContext *ctx);
bool pass_transpose_folding(HloModule *m, PassContext *ctx);
bool pass_tree_reduction_rewriter(HloModule *m, PassContext *ctx);
bool pass_tuple_simplifier(HloModule *m, PassContext *ctx);
bool pass_while_loop_constant_sinking(HloModule *m, PassContext *ctx);
bool pass_while_loop_invariant_code_motion(HloModule *m, PassContext *ctx);
bool pass_while_loop_simplifier(HloModule *m, PassContext *ctx);
bool pass_zero_sized_hlo_elimination(HloModule *m, PassContext *ctx);

#endif
