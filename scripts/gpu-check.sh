#!/usr/bin/env bash
# gpu-check.sh - the one command a session with the GPU machine runs there:
# builds xhlo-run, runs the end-to-end modules on the GPU against the
# reference interpreter (tests/gpu/check-e2e-cuda.sh, what `make check-gpu`
# runs), the GPU's failures (tests/gpu/check-errors-cuda.sh: JIT refusals,
# out of memory, a kernel fault), the collectives cases that fit the
# machine's GPUs through NCCL against XLA's results
# (tests/gpu/check-collectives-cuda.sh; it lists those that need more GPUs),
# a short subset of the e2e modules under compute-sanitizer when the toolkit
# has it, then the benchmark (bench/xla-compare/gpu_bench.py: issue #22's
# programs at real sizes, xhloc against XLA:GPU on the same HLO text and
# inputs, both timed as N runs queued back to back with one synchronization;
# kernels, TFLOP/s and GB/s against the GPU's peaks, compile times, and the
# issue's targets).
#
# The GPU machine has no LLVM, so xhloc cannot run there.  Prepare on a
# machine where xhloc builds and JAX runs on the CPU:
#
#   scripts/gpu-check.sh --prepare DIR [--only=REGEX]
#
# writes DIR/e2e (every testdata/e2e module compiled for the GPU, with its
# HLO, and the error cases in DIR/e2e/errors), DIR/collectives (every
# testdata/collectives case compiled for the GPU; their inputs and XLA's
# outputs stay in the repository) and DIR/bench (the benchmark programs' HLO
# from JAX, their xhloc artifacts and manifest.json: no inputs, which the GPU
# machine makes from a seed; about 30 MB).  Python with jax comes from
# $XHLO_BENCH_PYTHON, else build/bench-venv (made by bench/xla-compare/run.sh),
# else python3.  Then, with the repository and DIR on the GPU machine:
#
#   scripts/gpu-check.sh [DIR] [--bench-only] [--quick] [--no-sanitizer]
#                        [--no-bench] [--no-xla] [--only=REGEX] [--budget=S]
#                        [--gpu-name=NAME] [--mock=MOCKDIR] [--xhlo-run=PATH]
#   scripts/gpu-check.sh [DIR] --dry-run
#
# DIR defaults to build/gpu-check.  --bench-only runs the benchmark alone
# (the e2e, error, collectives and sanitizer steps are skipped); --only
# narrows its programs and --budget=S (default 420) is its time: programs
# after that are rows that say so.  --dry-run needs no GPU: it checks the
# prepared directory (every file the manifest names, the input
# specifications) and prints the benchmark's plan.  --mock=MOCKDIR runs
# against the mock libcuda.so.1 in MOCKDIR (tests/check-gpu-script.sh does,
# without a GPU); --xhlo-run=PATH uses that binary instead of building one.
# Every step prints PASS, FAIL or SKIP with the reason (no GPU, no
# compute-sanitizer, no jax, ...); the whole run is meant to take under ten
# minutes.  Exit 0 when nothing failed, 1 when a check failed, 3 when there
# is no GPU (nothing could be checked), 2 on a usage error.
set -u
cd "$(dirname "$0")/.." || exit 2

usage() {
  sed -n '2,/^set -u/p' "$0" | grep '^#' | sed 's/^# \{0,1\}//'
  exit "${1:-2}"
}

prepare=0 dir=build/gpu-check only="" quick=0 san=1 bench=1 xla=1 gpu_name="" mock="" run=""
bench_only=0 dry=0 budget=""
while [ $# -gt 0 ]; do
  case $1 in
  --prepare) prepare=1 ;;
  --only=*) only=${1#--only=} ;;
  --quick) quick=1 ;;
  --no-sanitizer) san=0 ;;
  --no-bench) bench=0 ;;
  --no-xla) xla=0 ;;
  --bench-only) bench_only=1 ;;
  --dry-run) dry=1 ;;
  --budget=*)
    budget=${1#--budget=}
    case $budget in
    '' | *[!0-9]*) echo "gpu-check: --budget takes whole seconds" >&2; exit 2 ;;
    esac ;;
  --gpu-name=*) gpu_name=${1#--gpu-name=} ;;
  --mock=*) mock=${1#--mock=} ;;
  --xhlo-run=*) run=${1#--xhlo-run=} ;;
  -h | --help) usage 0 ;;
  -*) echo "gpu-check: unknown option '$1'" >&2; usage 2 ;;
  *) dir=$1 ;;
  esac
  shift
done

py=${XHLO_BENCH_PYTHON:-}
if [ -z "$py" ]; then
  if [ -x build/bench-venv/bin/python ]; then py=build/bench-venv/bin/python; else py=python3; fi
fi

# ---- on the LLVM machine ------------------------------------------------------
if [ "$prepare" = 1 ]; then
  make -s -j2 build/bin/xhloc build/bin/xhlo-run ||
    { echo "gpu-check: FAIL: cannot build xhloc and xhlo-run"; exit 1; }
  mkdir -p "$dir/e2e/errors" "$dir/bench"
  n=0 bad=0
  for f in testdata/e2e/*.hlo; do
    name=$(basename "$f" .hlo)
    if build/bin/xhloc -o "$dir/e2e/$name" "$f" >/dev/null 2>"$dir/e2e/$name.err"; then
      cp "$f" "$dir/e2e/" && rm -f "$dir/e2e/$name.err"
      n=$((n + 1))
    else
      echo "gpu-check: FAIL: xhloc on $f:"; head -n 3 "$dir/e2e/$name.err"
      bad=$((bad + 1))
    fi
  done
  echo "gpu-check: $n e2e modules compiled into $dir/e2e"
  # the error cases of tests/gpu/check-errors-cuda.sh
  if build/bin/xhloc -o "$dir/e2e/errors/softmax" testdata/e2e/softmax.hlo >/dev/null 2>&1 &&
    python3 tests/gpu/error_cases.py "$dir/e2e/errors/softmax" "$dir/e2e/errors" &&
    build/bin/xhloc -o "$dir/e2e/errors/oom" tests/gpu/oom.hlo >/dev/null 2>&1; then
    echo "gpu-check: the GPU error cases written into $dir/e2e/errors"
  else
    echo "gpu-check: FAIL: cannot make the GPU error cases in $dir/e2e/errors"
    bad=$((bad + 1))
  fi
  tests/gpu/check-collectives-cuda.sh --prepare "$dir/collectives" || bad=$((bad + 1))
  if ! "$py" -c 'import jax, numpy, ml_dtypes' 2>/dev/null; then
    echo "gpu-check: FAIL: $py has no jax, numpy and ml_dtypes: the benchmark is not prepared" \
      "(set XHLO_BENCH_PYTHON, or run bench/xla-compare/run.sh once to make build/bench-venv)"
    exit 1
  fi
  if ! "$py" bench/xla-compare/gpu_prepare.py "$dir/bench" --xhloc build/bin/xhloc \
    --xhlo-run build/bin/xhlo-run ${only:+--only="$only"}; then
    bad=$((bad + 1))
  fi
  echo "gpu-check: $dir holds $(du -sm "$dir" | cut -f1) MB; on the GPU machine run:" \
    "scripts/gpu-check.sh $dir"
  [ "$bad" -eq 0 ]
  exit
fi

# ---- without a GPU: the prepared directory and the benchmark's plan ------------
if [ "$dry" = 1 ]; then
  bad=0
  ne=$(ls "$dir"/e2e/*.thunks 2>/dev/null | wc -l)
  if [ "$ne" -gt 0 ]; then echo "gpu-check: PASS: $ne e2e modules prepared in $dir/e2e"
  else echo "gpu-check: FAIL: no prepared modules in $dir/e2e"; bad=$((bad + 1)); fi
  if [ ! -f "$dir/bench/manifest.json" ]; then
    echo "gpu-check: FAIL: $dir/bench/manifest.json is missing"; bad=$((bad + 1))
  elif "$py" bench/xla-compare/gpu_bench.py "$dir/bench" --dry-run ${only:+--only="$only"}; then
    echo "gpu-check: PASS: the benchmark's files and plan"
  else
    echo "gpu-check: FAIL: the benchmark's files or plan"; bad=$((bad + 1))
  fi
  echo "gpu-check: dry run: $bad failed (nothing ran on a GPU)"
  [ "$bad" -eq 0 ]
  exit
fi

# ---- on the GPU machine -------------------------------------------------------
failed=0 skipped=0
pass() { echo "gpu-check: PASS: $*"; }
fail() { echo "gpu-check: FAIL: $*"; failed=$((failed + 1)); }
skip() { echo "gpu-check: SKIP: $*"; skipped=$((skipped + 1)); }
if [ -n "$mock" ]; then
  export LD_LIBRARY_PATH="$mock${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  echo "gpu-check: the mock libcuda.so.1 in $mock stands in for the driver"
fi

if [ -z "$run" ]; then
  if ! make -s -j"$(nproc 2>/dev/null || echo 2)" build/bin/xhlo-run; then
    echo "gpu-check: FAIL: cannot build xhlo-run"
    exit 1
  fi
  run=build/bin/xhlo-run
fi
case $run in /*) ;; *) run=$PWD/$run ;; esac
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# check-e2e-cuda.sh runs the prebuilt artifacts when there is no xhloc
ln -s "$run" "$tmp/xhlo-run"

# Is there a GPU?  The first prebuilt module, run once.
first=$(ls "$dir"/e2e/*.thunks 2>/dev/null | head -n 1)
if [ -z "$first" ]; then
  echo "gpu-check: FAIL: no prepared modules in $dir/e2e (run scripts/gpu-check.sh" \
    "--prepare $dir where xhloc builds, and bring $dir here)"
  exit 1
fi
if ! "$run" "$first" --platform=cuda --random-inputs --quiet >"$tmp/probe" 2>&1 &&
  grep -q -e "cannot load libcuda" -e "no CUDA device" "$tmp/probe"; then
  echo "gpu-check: SKIP: no GPU: $(grep -m1 -e libcuda -e "CUDA device" "$tmp/probe")"
  echo "gpu-check: nothing could be checked (the e2e modules, compute-sanitizer and the" \
    "benchmark need a GPU)"
  exit 3
fi

# 1. every e2e module on the GPU against the interpreter
if [ "$bench_only" = 1 ]; then
  skip "e2e modules, GPU error paths, collectives, compute-sanitizer (--bench-only)"
elif XHLOC_BIN=$tmp XHLOC_GPU_ARTIFACTS=$dir/e2e XHLOC_E2E_DIR=$dir/e2e \
  timeout 300 tests/gpu/check-e2e-cuda.sh >"$tmp/e2e" 2>&1; then
  pass "$(tail -n 1 "$tmp/e2e")"
else
  cat "$tmp/e2e"
  fail "e2e modules on the GPU: $(tail -n 1 "$tmp/e2e")"
fi

# 1b. the GPU's failures (JIT refusals, out of memory, a kernel fault): clear
# messages and exit 1, no crash or hang
if [ "$bench_only" = 1 ]; then
  :
elif [ -n "$mock" ]; then
  skip "GPU error paths: need a real GPU (the mock driver runs no PTX)"
elif XHLOC_BIN=$tmp XHLOC_GPU_ARTIFACTS=$dir/e2e timeout 600 tests/gpu/check-errors-cuda.sh \
  >"$tmp/errs" 2>&1; then
  pass "$(tail -n 1 "$tmp/errs")"
else
  cat "$tmp/errs"
  fail "GPU error paths: $(tail -n 1 "$tmp/errs")"
fi

# 1c. the collectives cases that fit the GPUs, through NCCL
if [ "$bench_only" = 1 ]; then
  :
elif [ ! -d "$dir/collectives" ]; then
  skip "collectives: $dir/collectives is missing (prepare again: scripts/gpu-check.sh --prepare)"
elif XHLOC_BIN=$tmp XHLOC_GPU_COLLECTIVES=$dir/collectives \
  timeout 300 tests/gpu/check-collectives-cuda.sh >"$tmp/coll" 2>&1; then
  grep -A 8 "not run:" "$tmp/coll" | grep -v "passed, .* failed" || true
  pass "$(tail -n 1 "$tmp/coll")"
else
  cat "$tmp/coll"
  fail "collectives on the GPUs through NCCL: $(tail -n 1 "$tmp/coll")"
fi

# 2. a short subset under compute-sanitizer (memcheck), when the toolkit has it
cs=$(command -v compute-sanitizer || true)
for c in "${CUDA_HOME:-/usr/local/cuda}/bin/compute-sanitizer" /usr/local/cuda/bin/compute-sanitizer; do
  [ -z "$cs" ] && [ -x "$c" ] && cs=$c
done
if [ "$bench_only" = 1 ]; then
  :
elif [ "$san" = 0 ]; then
  skip "compute-sanitizer (--no-sanitizer)"
elif [ -z "$cs" ]; then
  skip "compute-sanitizer: not found (PATH, \$CUDA_HOME/bin, /usr/local/cuda/bin)"
else
  ns=0 nbad=0
  for t in $(ls "$dir"/e2e/*.thunks | head -n "${GPU_CHECK_SANITIZE:-6}"); do
    ns=$((ns + 1))
    if ! timeout 120 "$cs" --tool memcheck --error-exitcode 3 "$run" "$t" --platform=cuda \
      --random-inputs --compare --tf32=off --quiet >"$tmp/cs" 2>&1; then
      nbad=$((nbad + 1))
      echo "  $(basename "$t"):"; grep -m 8 -e "=====" -e "error" "$tmp/cs" | sed 's/^/    /'
    fi
  done
  if [ "$nbad" -eq 0 ]; then pass "compute-sanitizer memcheck: $ns modules clean"
  else fail "compute-sanitizer memcheck: $nbad of $ns modules with errors"; fi
fi

# 3. the benchmark
if [ "$bench" = 0 ]; then
  skip "benchmark (--no-bench)"
elif [ ! -f "$dir/bench/manifest.json" ]; then
  skip "benchmark: $dir/bench/manifest.json is missing (prepare with jax on the CPU)"
elif ! command -v "$py" >/dev/null 2>&1; then
  skip "benchmark: no $py"
else
  bargs=("$dir/bench" --xhlo-run "$run" --budget="${budget:-420}")
  [ "$quick" = 1 ] && bargs+=(--quick)
  [ "$xla" = 0 ] && bargs+=(--no-xla)
  [ -n "$gpu_name" ] && bargs+=(--gpu-name="$gpu_name")
  [ -n "$only" ] && bargs+=(--only="$only")
  # the budget, then the program running when it ran out (its own timeouts);
  # the table streams as it is made (PYTHONUNBUFFERED)
  PYTHONUNBUFFERED=1 timeout $((${budget:-420} + 180)) "$py" bench/xla-compare/gpu_bench.py \
    "${bargs[@]}" 2>&1 | tee "$tmp/bench"
  brc=${PIPESTATUS[0]}
  if [ "$brc" -eq 0 ]; then
    pass "benchmark: $(tail -n 1 "$tmp/bench")"
  elif [ "$brc" -eq 124 ]; then
    fail "benchmark: timed out after $((${budget:-420} + 180)) s"
  else
    fail "benchmark: $(tail -n 1 "$tmp/bench")"
  fi
  if grep -q "^XLA: not run" "$tmp/bench"; then skip "$(grep -m1 "^XLA: not run" "$tmp/bench")"; fi
fi

echo "gpu-check: $failed failed, $skipped skipped"
[ "$failed" -eq 0 ]
