#!/usr/bin/env bash
# check-pipeline-corpus.sh - the default HLO pipeline against the
# interpreter, and its dumps.
#
#  1. build/tests/pipeline_diff runs the default pipeline (verifier after
#     every pass) on every module of the pass tests (testdata/passes) and of
#     the corpus, then the interpreter on the module before and after with
#     the same random inputs: outputs must agree (integers exactly, floats
#     within a tight tolerance).  It prints how many modules were checked.
#     The passes outside the default pipeline get the same check on the
#     pass tests, and the JAX scans of testdata/scans (cumsum, cumprod,
#     cummax, ..., which reduce-window-rewriter turns into blocked scans)
#     get it with a larger interpreter budget: every one must be checked.
#  2. `xhloc --stage=hlo --dump-to=DIR --dump-pass-re='.*'` on real models
#     (a JAX MLP and an LLM inference step from the corpus): the expected
#     dump files appear and every one of them parses again.
#
# Environment: XHLOC_CORPUS (default ../shared/hlo-corpus), XHLOC_BIN
# (default build/bin), XHLOC_TESTBIN (default build/tests),
# XHLOC_DIFF_TIME_BUDGET (seconds per interpreter run, default 1).
# Ends with "N passed, N failed".
set -u
corpus=${XHLOC_CORPUS:-../shared/hlo-corpus}
bin=${XHLOC_BIN:-build/bin}
testbin=${XHLOC_TESTBIN:-build/tests}
budget=${XHLOC_DIFF_TIME_BUDGET:-1}

if [ ! -d "$corpus" ]; then
  echo "check-pipeline-corpus: FAIL: the corpus directory '$corpus' is missing" \
    "(set XHLOC_CORPUS to its location)"
  echo "0 passed, 1 failed"
  exit 1
fi

passed=0
failed=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# add_summary LOG: adds the "N passed, N failed" last line of a
# pipeline_diff log to the totals (a missing summary is a failure).
add_summary() {
  local line
  line=$(tail -n 1 "$1")
  if [[ $line =~ ^([0-9]+)\ passed,\ ([0-9]+)\ failed$ ]]; then
    passed=$((passed + BASH_REMATCH[1]))
    failed=$((failed + BASH_REMATCH[2]))
  else
    echo "check-pipeline-corpus: FAIL: pipeline_diff gave no summary"
    failed=$((failed + 1))
  fi
}

# 1. Differential test.
"$testbin/pipeline_diff" --time-budget "$budget" testdata/passes \
  testdata/passes/algsimp testdata/passes/framework "$corpus" | tee "$tmp/diff.log"
add_summary "$tmp/diff.log"

# 1b. The passes the default pipeline leaves out, on the pass tests.
extra=map-inline,while-loop-invariant-code-motion,optimization-barrier-expander,call-inliner,dce
"$testbin/pipeline_diff" --time-budget "$budget" --run-passes "$extra" \
  testdata/passes testdata/passes/algsimp testdata/passes/framework | tee "$tmp/diff2.log"
add_summary "$tmp/diff2.log"

# 1c. The scans: the original's O(n^2) reduce-window on the interpreter
# takes a few seconds for the longest (20000 elements).
"$testbin/pipeline_diff" --time-budget 20 --all-checked testdata/scans \
  | tee "$tmp/diff3.log"
add_summary "$tmp/diff3.log"

# ... and the rewrite took each of them: no window longer than 16 is left.
for f in testdata/scans/*.hlo; do
  if ! "$bin/xhloc" --stage=hlo "$f" > "$tmp/scan.hlo" 2> "$tmp/err"; then
    echo "FAIL: $f: xhloc failed: $(head -c 400 "$tmp/err")"
    failed=$((failed + 1))
  elif grep -Eq 'size=([0-9]+x)*(1[7-9]|[2-9][0-9]|[0-9]{3,})[ x}]' \
      "$tmp/scan.hlo"; then
    echo "FAIL: $f: a scan was left as a long reduce-window"
    failed=$((failed + 1))
  else
    passed=$((passed + 1))
  fi
done

# 2. Dumps of real models parse again.
models=(testdata/examples/mlp.hlo
  "$corpus/rocm-hlo-eval__large_language_models__llama3_8b__inference__8gpu__module_0090.jit__generate_jit.before_optimizations.hlo")
for model in "${models[@]}"; do
  [ -f "$model" ] || continue
  name=$(basename "$model")
  dir=$tmp/dumps
  rm -rf "$dir"
  if ! "$bin/xhloc" -w --stage=hlo --dump-to="$dir" --dump-pass-re='.*' \
      "$model" > "$tmp/out.hlo" 2> "$tmp/err"; then
    echo "FAIL: dumps of $name: xhloc failed: $(head -c 400 "$tmp/err")"
    failed=$((failed + 1))
    continue
  fi
  n=0
  bad=0
  for f in "$dir"/*.txt; do
    n=$((n + 1))
    if ! "$bin/xhloc" -w --stage=parsed "$f" > /dev/null 2> "$tmp/err"; then
      echo "FAIL: dump $(basename "$f") does not parse: $(head -c 400 "$tmp/err")"
      bad=$((bad + 1))
    fi
  done
  start=$(ls "$dir" | grep -c 'after_pipeline-start' || true)
  if [ "$n" -lt 4 ] || [ "$start" -lt 2 ] ||
     ! ls "$dir" | grep -q 'before_optimizations.txt$' ||
     ! ls "$dir" | grep -q 'after_optimizations.txt$'; then
    echo "FAIL: dumps of $name: the expected files are missing ($n files)"
    bad=$((bad + 1))
  fi
  if [ "$bad" -eq 0 ]; then
    echo "dumps of $name: $n files, all parse"
    passed=$((passed + 1))
  else
    failed=$((failed + 1))
  fi
done

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
