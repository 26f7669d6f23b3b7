/*
 * pipeline.c - the default pipeline of `xhloc --stage=hlo`: XLA:GPU's
 * hardware-independent HLO optimization (gpu_compiler.cc, OptimizeHloModule
 * up to layout assignment; REFERENCE.md 2.2), restricted to the passes that
 * exist here, in XLA's order.
 *
 *   pre-spmd-partitioner   elided-constant-filler (XLA's placeholder for
 *                          {...} constants), async-to-sync,
 *                          threefry-expander (asynchronous pairs made
 *                          synchronous, JAX's GPU Threefry call expanded),
 *                          then flatten-call-graph, rng-expander (here,
 *                          before call-inliner, as XLA's CPU compiler runs
 *                          it), call-inliner,
 *                          zero_sized_hlo_elimination,
 *                          conditional-canonicalizer
 *   spmd-partitioner       sharding-propagation, spmd-partitioning (a
 *                          module of several partitions with shardings
 *                          becomes every partition's program, with its
 *                          collectives), then annotation-remover and
 *                          single-device-collectives (what is left of
 *                          sharding and offloading markers, and what one
 *                          device makes of collectives)
 *   optimization           dynamic_padder (bounded dynamic shapes become
 *                          static ones with their sizes beside them), then
 *                          expanders and legalizations (scan-expander
 *                          and onednn-layernorm-expander first: scans
 *                          become while loops, XLA:CPU's layer norm call
 *                          its HLO), and
 *                          reduce-window-rewriter (scans to blocked scans;
 *                          XLA runs it to a fixed point, ours finishes in
 *                          one run), then
 *     simplification       (fixed point) the algebraic simplifier and its
 *                          companions, cse and dce; for the host also
 *                          while-loop-invariant-code-motion, as XLA:CPU's
 *                          simplification runs it
 *     simplification-2     (fixed point) convert-mover, algsimp
 *                          then tree-reduction-rewriter (XLA's CPU one:
 *                          the host target only) and
 *                          computation-deduplicator
 *   layout assignment      layout-assignment
 *   fusion                 priority-fusion, normalization-fusion (the GPU
 *                          target: a softmax's or layer norm's fusions
 *                          merged into one kernel), cse, dce
 *   collective-optimizations  all-reduce-combiner, async-collective-creator
 *                          (XLA's collective combiners and async
 *                          collective conversion, after fusion)
 *   post-fusion optimization  fusion-wrapper, dce, copy-insertion
 *   scheduling             hlo-memory-scheduler (the order of the fewest
 *                          live bytes: the best of XLA's list, DFS and
 *                          post-order schedulers), loop-update-sinking
 *                          (a loop counter's update last in its body, so
 *                          it is written in place), latency-hiding-scheduler
 *                          (-starts early, -dones late)
 *
 * Passes registered but not in this pipeline (map-inline,
 * optimization-barrier-expander, hlo-verifier) belong to other XLA pipelines (CPU, post-scheduling,
 * invariant checking); --run-passes runs them.
 */
#include "passes.h"

#include <string.h>

#define PASS(n) {n, NULL, NULL, false}
#define HOST_PASS(n) {n, NULL, NULL, true}
#define SUB(p) {NULL, &p, NULL, false}
#define PIPELINE(var, name, fix, steps)                                        \
  static const Pipeline var = {name, fix, (int)ARRAY_LEN(steps), steps}

static const PipelineStep pre_spmd_steps[] = {
    PASS("elided-constant-filler"),
    PASS("async-to-sync"),
    PASS("threefry-expander"),
    PASS("flatten-call-graph"),
    /* before call-inliner, as XLA's CPU compiler runs it: the keys follow
     * the order of the rngs in their own computations */
    PASS("rng-expander"),
    PASS("call-inliner"),
    PASS("zero_sized_hlo_elimination"),
    PASS("conditional-canonicalizer"),
};
PIPELINE(pre_spmd, "pre-spmd-partitioner", false, pre_spmd_steps);

/* A module of several partitions with shardings becomes the program of
 * one partition (both passes do nothing otherwise); what is left of
 * sharding annotations and one-device collectives goes after. */
static const PipelineStep spmd_steps[] = {
    PASS("sharding-propagation"),
    PASS("spmd-partitioning"),
    PASS("annotation-remover"),
    PASS("single-device-collectives"),
};
PIPELINE(spmd, "spmd-partitioner", false, spmd_steps);

static const PipelineStep simplification_steps[] = {
    PASS("zero_sized_hlo_elimination"),
    PASS("gather-simplifier"),
    PASS("algsimp"),
    PASS("sort-simplifier"),
    HOST_PASS("while-loop-invariant-code-motion"),
    PASS("tuple-simplifier"),
    PASS("while-loop-constant-sinking"),
    PASS("while-loop-simplifier"),
    PASS("slice-sinker"),
    PASS("reshape-mover"),
    PASS("constant_folding"),
    PASS("conditional-simplifier"),
    PASS("transpose-folding"),
    PASS("cse"),
    PASS("dce"),
};
PIPELINE(simplification, "simplification", true, simplification_steps);

static const PipelineStep simplification2_steps[] = {
    PASS("convert-mover"),
    PASS("algsimp"),
};
PIPELINE(simplification2, "simplification-2", true, simplification2_steps);

static const PipelineStep optimization_steps[] = {
    PASS("dynamic_padder"),
    PASS("scan-expander"),
    PASS("onednn-layernorm-expander"),
    PASS("scaled-dot-rewriter"),
    PASS("dot-decomposer"),
    PASS("comparison-expander"),
    PASS("call-inliner"),
    PASS("batchnorm_expander"),
    PASS("logistic-expander"),
    PASS("conditional-canonicalizer"),
    PASS("reduce-window-rewriter"),
    SUB(simplification),
    SUB(simplification2),
    PASS("tree-reduction-rewriter"),
    PASS("computation-deduplicator"),
};
PIPELINE(optimization, "optimization", false, optimization_steps);

/* The backend pipelines (gpu_compiler.cc: layout assignment, fusion,
 * post-fusion optimization). */
static const PipelineStep layout_steps[] = {
    /* As XLA's layout-assignment pipeline: every computation gets one call
     * site (computation-deduplicator may have shared them), which layout
     * and buffer assignment rely on. */
    PASS("flatten-call-graph"),
    PASS("layout-assignment"),
};
PIPELINE(layout, "layout assignment", false, layout_steps);

/* XLA's post-layout-assignment optimization: dots and convolutions become
 * library calls (cuBLASLt and cuDNN on the GPU, oneDNN on the host) with
 * their epilogues, before fusion sees them. */
static const PipelineStep post_layout_steps[] = {
    PASS("conv-rewriter"),
    PASS("gemm-rewriter"),
    PASS("dce"),
};
PIPELINE(post_layout, "post-layout-assignment", false, post_layout_steps);

static const PipelineStep fusion_steps[] = {
    PASS("priority-fusion"),
    /* the GPU target only: a row normalization's fusions merged into one */
    PASS("normalization-fusion"),
    PASS("cse"),
    PASS("dce"),
};
PIPELINE(fusion, "fusion", false, fusion_steps);

static const PipelineStep collective_steps[] = {
    PASS("all-reduce-combiner"),
    PASS("async-collective-creator"),
};
PIPELINE(collectives, "collective-optimizations", false, collective_steps);

static const PipelineStep post_fusion_steps[] = {
    PASS("fusion-wrapper"),
    PASS("dce"),
    PASS("copy-insertion"),
};
PIPELINE(post_fusion, "post-fusion optimization", false, post_fusion_steps);

/* The order that keeps the fewest bytes live, then the collectives' -starts
 * early and -dones late (which keeps that order where there are none). */
static const PipelineStep scheduling_steps[] = {
    PASS("hlo-memory-scheduler"),
    PASS("loop-update-sinking"),
    PASS("latency-hiding-scheduler"),
};
PIPELINE(scheduling, "scheduling", false, scheduling_steps);

static const Pipeline *const default_pipelines[] = {
    &pre_spmd,
    &spmd,
    &optimization,
    &layout,
    &post_layout,
    &fusion,
    &collectives,
    &post_fusion,
    &scheduling,
};

int pipeline_default(const Pipeline *const **out) {
  *out = default_pipelines;
  return (int)ARRAY_LEN(default_pipelines);
}

/* What compilation needs even without the pipeline; each pass idempotent. */
static const PipelineStep backend_required_steps[] = {
    PASS("elided-constant-filler"),
    PASS("async-to-sync"),
    PASS("annotation-remover"),
    PASS("single-device-collectives"),
    PASS("threefry-expander"),
    PASS("dynamic_padder"),
    PASS("scan-expander"),
    PASS("onednn-layernorm-expander"),
    PASS("flatten-call-graph"),
    PASS("layout-assignment"),
    PASS("fusion-wrapper"),
    PASS("copy-insertion"),
};
PIPELINE(backend_required, "backend-required", false, backend_required_steps);

static const Pipeline *const backend_required_pipelines[] = {
    &backend_required,
};

int pipeline_backend_required(const Pipeline *const **out) {
  *out = backend_required_pipelines;
  return (int)ARRAY_LEN(backend_required_pipelines);
}

/* Appends to b the names of the pipelines under p that hold `pass`
 * directly, each once. */
static void pipelines_with(const Pipeline *p, const char *pass, StrBuf *b) {
  bool direct = false;
  for (int k = 0; k < p->nsteps; k++) {
    const PipelineStep *s = &p->steps[k];
    if (s->pass)
      direct |= strcmp(s->pass, pass) == 0;
  }
  if (direct)
    sb_printf(b, "%s%s", b->len ? "," : "", p->name);
  for (int k = 0; k < p->nsteps; k++)
    if (p->steps[k].sub)
      pipelines_with(p->steps[k].sub, pass, b);
}

void pipeline_list_passes(FILE *out) {
  StrBuf b;
  sb_init(&b);
  for (int k = 0; k < pass_count(); k++) {
    const char *name = pass_at(k)->name;
    sb_clear(&b);
    for (size_t j = 0; j < ARRAY_LEN(default_pipelines); j++)
      pipelines_with(default_pipelines[j], name, &b);
    fprintf(out, "%-34s %s\n", name, b.len ? b.s : "-");
  }
  sb_free(&b);
}
