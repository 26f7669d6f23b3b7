#!/usr/bin/env bash
# check-bench-memory.sh - the memory benchmark (bench/memory/run.sh) still
# runs: its xhloc-only path (--no-xla: XLA's figures from the checked-in
# cache, no jax) on two small corpus models, its TSV, the single-device
# rule and the cache's checks.  No figure of xhloc is pinned: the benchmark
# measures it, and it may move.
#
# Run from the repository root; XHLOC_BIN (default build/bin) names the
# xhloc under test, XHLOC_CORPUS the corpus (default ../shared/hlo-corpus).
set -u
. tests/expect.sh
export XHLOC_BIN=${XHLOC_BIN:-build/bin}
corpus=${XHLOC_CORPUS:-../shared/hlo-corpus}
bench=bench/memory/run.sh
cache=bench/memory/xla-cpu-memory.tsv
t=$(mktemp -d)
trap 'rm -rf "$t"' EXIT

if [ ! -f "$corpus/MANIFEST.tsv" ]; then
  echo "check-bench-memory: FAIL: no corpus at '$corpus' (set XHLOC_CORPUS)"
  echo "0 passed, 1 failed"
  exit 1
fi

# A jax that fails on import: --no-xla must never reach it.
mkdir -p "$t/nojax/jax"
echo 'raise ImportError("check-bench-memory: --no-xla imported jax")' > "$t/nojax/jax/__init__.py"

small='dlrm_keras_jax_f32_test_step|diffrax\.b380012920'
expect "table of two models" 0 \
  "| model | XLA CPU | xhloc host | ratio | xhloc GPU | ratio |" \
  "| xla-cpu:dlrm_keras_jax_f32_test_step | 5.85 MiB | " \
  "| xla-cpu:diffrax.b380012920 | 40.70 KiB | " \
  "- 2 modules, XLA CPU failed on 0, xhloc host failed on 0, xhloc gpu failed on 0" \
  "xhloc host against XLA CPU: " "geometric mean" "memory: rows above 1.0x: host " -- \
  env PYTHONPATH="$t/nojax" "$bench" --no-xla --only "$small"

expect "--tsv" 0 "" -- env PYTHONPATH="$t/nojax" "$bench" --no-xla --only dlrm_keras --tsv "$t/out.tsv"
if [ "$(wc -l < "$t/out.tsv" 2>/dev/null)" = 2 ] &&
   head -n 1 "$t/out.tsv" | grep -q "^file	section	xla_cpu	xhloc_host	xhloc_gpu	ratio_host	ratio_gpu" &&
   grep -qE "^xla__backends__cpu__benchmarks__hlo__dlrm_keras_jax_f32_test_step.hlo	model	6134648	[0-9]+	[0-9]+	[0-9.]+	[0-9.]+	" "$t/out.tsv"; then
  ok
else
  bad "--tsv: unexpected file"
  sed 's/^/    /' "$t/out.tsv" 2>/dev/null | head -n 5
fi

expect "excluded modules" 0 \
  "- gh:kahfizulkifli/bert/bert_dp_graph_2: collectives: all-reduce x2" \
  "- xla-tools:hlo_llama3_8b_cp_bf16_1x4: num_partitions=4" \
  "- xla-tools:nv_maxtext_1n1g_jit_train_step_before_optimization: sharding over 8 devices" -- \
  env PYTHONPATH="$t/nojax" "$bench" --no-xla \
  --only 'bert_dp_graph_2|hlo_llama3_8b_cp_bf16_1x4|nv_maxtext_1n1g'

# Without a cached row, or with one for another version of the file, the
# row says so and the run still succeeds.
head -n 2 "$cache" > "$t/empty.tsv"
expect "no cached row" 0 "failed: no cached XLA figure (--no-xla)" -- \
  env PYTHONPATH="$t/nojax" "$bench" --no-xla --only dlrm_keras --cache "$t/empty.tsv"
sed 's/^\(xla__backends__cpu__benchmarks__hlo__dlrm_keras_jax_f32_test_step.hlo	\)[0-9a-f]*/\1stale/' \
  "$cache" > "$t/stale.tsv"
expect "stale cached row" 0 "failed: cached XLA figure is for another version of the file" -- \
  env PYTHONPATH="$t/nojax" "$bench" --no-xla --only dlrm_keras --cache "$t/stale.tsv"
if cmp -s "$t/stale.tsv" <(sed 's/^\(xla__backends__cpu__benchmarks__hlo__dlrm_keras_jax_f32_test_step.hlo	\)[0-9a-f]*/\1stale/' "$cache"); then
  ok
else
  bad "--no-xla rewrote the cache"
fi

expect "usage error" 2 "unknown target" -- "$bench" --no-xla --targets bogus

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
