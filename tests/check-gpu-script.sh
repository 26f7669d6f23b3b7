#!/usr/bin/env bash
# check-gpu-script.sh - scripts/gpu-check.sh and xhlo-run's GPU error
# messages without a GPU, on the mock libcuda.so.1 built here from
# tests/mocks/cuda.c (its kernel add4 adds two f32[4]) and the mock
# libnccl.so.2 (tests/mocks/nccl.c).
#
# A prepared directory is made by hand (what `gpu-check.sh --prepare` writes
# where xhloc and JAX run): e2e/ with one module, make_test_artifact's add
# for sm_90, and bench/ with the same artifact as a benchmark program, its
# inputs and reference output (.npy written by xhlo-run) and manifest.json
# (gpu_prepare.py's version 2; other programs are added to it: inputs made
# from the seed, one xhloc could not compile),
# and collectives/ with two cases of testdata/collectives (one_psum,
# pmap_psum), compiled by xhloc (XHLOC_COLLECTIVES_TESTDATA names a copy of
# just those).
# Checked:
#   - on the mock: the e2e step passes, the collectives step runs the case
#     of one GPU through the mock NCCL and lists the one of four GPUs (an
#     NCCL failure fails it), a missing compute-sanitizer and
#     XLA are reported as skipped, the table is printed with the H100 SXM
#     peaks used (its row for add, the summary of the issue's targets), exit
#     0; --bench-only runs the benchmark alone; a wrong reference fails the
#     benchmark (exit 1); a program xhloc could not compile is a row that
#     says so; --budget and --only; inputs made from the seed (with numpy);
#     a faulting kernel fails the e2e step; no manifest is a skip;
#   - --dry-run without a driver: the prepared files and plan pass, a
#     missing artifact and a bad input specification fail;
#   - with no driver at all: "no GPU", exit 3 (when this machine has no
#     libcuda);
#   - xhlo-run's messages for out of device memory, a kernel fault found at
#     the final synchronization and with --sync-each-thunk, and a PTX the
#     driver rejects, each injected into the mock through its environment.
#
# Run from the repository root; binaries in ${XHLOC_BIN:-build/bin}, test
# programs in ${XHLOC_TESTBIN:-build/tests}.
set -u
bin=${XHLOC_BIN:-build/bin}
testbin=${XHLOC_TESTBIN:-build/tests}
run=$bin/xhlo-run
mk=$testbin/make_test_artifact
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
. tests/expect.sh   # ok, bad, expect; passed=0 failed=0


for f in "$run" "$mk"; do
  if [ ! -x "$f" ]; then
    echo "check-gpu-script: FAIL: $f is missing (run make)"
    echo "0 passed, 1 failed"
    exit 1
  fi
done
mock=$tmp/mock
mkdir -p "$mock"
if ! ${CC:-cc} -std=gnu11 -O1 -shared -fPIC -w -o "$mock/libcuda.so.1" tests/mocks/cuda.c -lm; then
  echo "check-gpu-script: FAIL: cannot build the mock libcuda.so.1"
  echo "0 passed, 1 failed"
  exit 1
fi

# ---- a prepared directory -------------------------------------------------------
prep=$tmp/prep
mkdir -p "$prep/e2e" "$prep/bench"
printf '//\n.version 8.0\n.target sm_90\n.address_size 64\n.visible .entry add4(\n' \
  >"$prep/e2e/add.ptx"
"$mk" add sm_90 "$prep/e2e/add" || bad "make_test_artifact add sm_90"
printf 'HloModule add\n' >"$prep/e2e/add.hlo"
cp "$prep/e2e/add.ptx" "$prep/e2e/add.thunks" "$prep/e2e/add.hlo" "$prep/bench/"
# the inputs and the reference, as .npy, through the interpreter
cat >"$tmp/id.hlo" <<'EOF'
HloModule id
ENTRY e {
  ROOT p = f32[4] parameter(0)
}
EOF
npy() { "$run" "$tmp/id.hlo" "--input=4xf32=$2" "--output=@$1" --quiet || bad "writing $1"; }
npy "$prep/bench/add.in0.npy" "1 2 3 4"
npy "$prep/bench/add.in1.npy" "10 20 30 40"
npy "$prep/bench/add.want0.npy" "11 22 33 44"
npy "$tmp/wrong.npy" "11 22 33 45"
# manifest.json as gpu_prepare.py writes it (version 2), with listed inputs
# and references (a python without numpy runs it: xhlo-run checks them)
manifest() {   # manifest [EXTRA PROGRAM JSON]
  cat >"$prep/bench/manifest.json" <<EOF
{"version": 2, "jax": "none", "seed": 0, "target": "gpu", "small": false, "programs": [
 {"name": "add", "kind": "memory", "note": "", "hlo": "add.hlo", "thunks": "add.thunks",
  "kernel_file": "add.ptx", "error": null,
  "inputs": ["add.in0.npy", "add.in1.npy"], "input_dtypes": ["float32", "float32"],
  "inputs_spec": [{"shape": [4], "dtype": "float32", "init": ["normal", 1.0]},
                  {"shape": [4], "dtype": "float32", "init": ["normal", 1.0]}],
  "outputs": [{"shape": [4], "dtype": "float32"}],
  "wants": ["add.want0.npy"], "want_dtypes": ["float32"], "atol": 0.001,
  "flops": 4e9, "trips": 1, "in_bytes": 32, "out_bytes": 16, "bytes": 48e6,
  "xhloc_compile_s": 0.01, "xhloc_compile_cpu_s": 0.01,
  "xhloc_thunks": {"kernels": 1, "library": 0, "copies": 0, "while": 0,
                   "by_kind": {"kKernel": 1}}}${1:+,
 $1}]}
EOF
}
manifest
# a program whose inputs the GPU machine makes from the seed (needs numpy)
gen='{"name": "add_gen", "kind": "compute", "note": "", "hlo": "add.hlo",
  "thunks": "add.thunks", "kernel_file": "add.ptx", "error": null,
  "inputs_spec": [{"shape": [4], "dtype": "float32", "init": ["normal", 1.0]},
                  {"shape": [4], "dtype": "float32", "init": ["uniform", 0, 1]}],
  "outputs": [{"shape": [4], "dtype": "float32"}], "flops": 8, "trips": 1,
  "in_bytes": 32, "out_bytes": 16, "bytes": 48, "xhloc_compile_s": 0.01,
  "xhloc_thunks": {"kernels": 1, "library": 0, "copies": 0, "while": 0, "by_kind": {}}}'
# one that xhloc could not compile: a row that says so
nocomp='{"name": "nocomp", "kind": "memory", "note": "", "hlo": "add.hlo", "thunks": null,
  "kernel_file": null, "error": "xhloc: error: unsupported op",
  "inputs_spec": [{"shape": [2, 3], "dtype": "bfloat16", "init": ["int", 0, 5]}],
  "outputs": [{"shape": [2, 3], "dtype": "bfloat16"}], "flops": null, "trips": 1,
  "in_bytes": 12, "out_bytes": 12, "bytes": 24, "xhloc_compile_s": 0.5, "xhloc_thunks": null}'

# collectives: two cases (one GPU's, four GPUs') on one mock GPU with the
# mock NCCL
if ${CC:-cc} -std=gnu11 -O1 -shared -fPIC -w -o "$mock/libnccl.so.2" tests/mocks/nccl.c -lm \
     -lpthread; then ok; else bad "cannot build the mock libnccl.so.2"; fi
export XHLOC_COLLECTIVES_TESTDATA=$tmp/coll MOCK_CUDA_DEVICES=1
mkdir -p "$XHLOC_COLLECTIVES_TESTDATA"
cp -r testdata/collectives/one_psum testdata/collectives/pmap_psum "$XHLOC_COLLECTIVES_TESTDATA/"
if [ -x "$bin/xhloc" ] && XHLOC_BIN=$bin tests/gpu/check-collectives-cuda.sh --prepare \
     "$prep/collectives" >/dev/null; then ok; else bad "check-collectives-cuda.sh --prepare"; fi

gc=(scripts/gpu-check.sh "$prep" "--xhlo-run=$run" "--mock=$mock" --quick)
expect "gpu-check: collectives on one mock GPU" 0 \
  "PASS: check-collectives-cuda: 2 passed, 0 failed" "4 devices: pmap_psum" \
  -- "${gc[@]}" --no-bench
expect "gpu-check: an NCCL failure fails the collectives step" 1 \
  "FAIL: collectives on the GPUs through NCCL" "NCCL: ncclAllReduce failed" \
  -- env MOCK_NCCL_FAIL=ncclAllReduce:2 "${gc[@]}" --no-bench
export XHLO_BENCH_PYTHON=${XHLO_BENCH_PYTHON:-python3}
if command -v "$XHLO_BENCH_PYTHON" >/dev/null 2>&1; then
  expect "gpu-check on the mock" 0 "PASS: check-e2e-cuda: 1 passed, 0 failed" \
    "SKIP: compute-sanitizer" "GPU: NVIDIA H100 80GB HBM3 (from given)" \
    "peaks used (H100 SXM, NVIDIA datasheet, dense): 989 TFLOP/s bf16, 495 TFLOP/s TF32" \
    "3.35 TB/s" "XLA: not run:" "program " "TFLOP/s" "GB/s" "kern xhloc" "cmp X" "add " \
    "ok (xhlo-run --expected-output)" "xhloc: 1 of 1 programs ran and matched" \
    "targets of issue #22" "geometric mean <= 0.90, none over 1.25: unknown (no ratios)" \
    "PASS: benchmark" "0 failed" \
    -- "${gc[@]}" "--gpu-name=NVIDIA H100 80GB HBM3" --no-xla
  # the row: both xhloc times (back to back, device), no XLA, 1 kernel + 0
  # library calls, TFLOP/s and GB/s (none when the mock's time is 0), the
  # compile time from the manifest
  out=$("${gc[@]}" --no-xla --bench-only 2>&1)
  num='[0-9][0-9.e+-]*'
  row="^add +$num +- +- +$num +- +- +1\\+0 +- +- +($num|-) +($num|-) +($num|-) +- +0\\.01 +- +ok "
  if printf '%s\n' "$out" | grep -qE "$row"; then ok; else
    bad "gpu-check: the table has no timed row for add:"
    printf '%s\n' "$out" | sed 's/^/    /'
  fi
  if printf '%s\n' "$out" |
       grep -q "SKIP: e2e modules, GPU error paths, collectives, compute-sanitizer (--bench-only)" &&
     ! printf '%s\n' "$out" | grep -q "check-e2e-cuda"; then ok; else
    bad "gpu-check --bench-only ran more than the benchmark"; fi
  expect "gpu-check: an unknown GPU has no peaks" 0 "peaks: none known for this GPU" \
    "GPU: mock GPU" "memory-bound >= 85% of HBM bandwidth: unknown (no peaks for this GPU)" \
    -- "${gc[@]}" "--gpu-name=mock GPU" --no-xla --no-sanitizer --bench-only
  expect "gpu-check: H200 peaks" 0 "(H200, NVIDIA datasheet, dense)" "4.80 TB/s" \
    -- "${gc[@]}" "--gpu-name=NVIDIA H200" --no-xla --bench-only
  cp "$prep/bench/add.want0.npy" "$tmp/right.npy"
  cp "$tmp/wrong.npy" "$prep/bench/add.want0.npy"
  expect "gpu-check: a wrong result fails the benchmark" 1 "FAIL: benchmark" \
    "xhloc: 0 of 1 programs ran and matched; 1 failed" "xhlo-run:" -- "${gc[@]}" --no-xla \
    --bench-only
  cp "$tmp/right.npy" "$prep/bench/add.want0.npy"
  # a program xhloc could not compile is a row that says so, not a failure
  manifest "$nocomp"
  expect "gpu-check: xhloc could not compile a program" 0 \
    "xhloc cannot compile it: xhloc: error: unsupported op" \
    "xhloc: 1 of 2 programs ran and matched; 1 not compiled or not run" "PASS: benchmark" \
    -- "${gc[@]}" --no-xla --bench-only
  expect "gpu-check: the time budget" 0 "not run: the time budget (--budget 0 s) is spent" \
    -- "${gc[@]}" --no-xla --bench-only --budget=0
  expect "gpu-check: --only" 0 "xhloc: 0 of 1 programs ran and matched; 1 not compiled" \
    -- "${gc[@]}" --no-xla --bench-only --only=nocomp
  # inputs made from the seed: with numpy (XHLO_BENCH_PYTHON), else the row
  # says why
  manifest "$gen"
  if "$XHLO_BENCH_PYTHON" -c 'import numpy' 2>/dev/null; then
    expect "gpu-check: inputs made from the seed" 0 "not checked (no XLA)" \
      "xhloc: 1 of 2 programs ran and matched; 1 ran unchecked" \
      -- "${gc[@]}" --no-xla --bench-only
  else
    expect "gpu-check: inputs made from the seed, no numpy" 1 \
      "cannot make the inputs: no numpy in" -- "${gc[@]}" --no-xla --bench-only
  fi
  # --dry-run: no GPU, no driver; every file the manifest names, the specs
  manifest "$gen,
 $nocomp"
  expect "gpu-check --dry-run" 0 "PASS: 1 e2e modules prepared" \
    "dry run: 3 programs, 0 with problems" "xhloc cannot compile it: xhloc: error: unsupported op" \
    "PASS: the benchmark's files and plan" "dry run: 0 failed" \
    -- env LD_LIBRARY_PATH= scripts/gpu-check.sh "$prep" --dry-run
  manifest "$(printf '%s' "$gen" | sed 's/"thunks": "add.thunks"/"thunks": "gone.thunks"/')"
  expect "gpu-check --dry-run: a missing artifact" 1 "missing gone.thunks" \
    "FAIL: the benchmark's files or plan" -- scripts/gpu-check.sh "$prep" --dry-run
  manifest "$(printf '%s' "$gen" | sed 's/"float32", "init": \["uniform"/"float99", "init": ["uniform"/')"
  expect "gpu-check --dry-run: a bad input spec" 1 "dtype 'float99'" \
    -- scripts/gpu-check.sh "$prep" --dry-run
  manifest
else
  echo "check-gpu-script: no $XHLO_BENCH_PYTHON: the benchmark table is not checked"
fi
expect "gpu-check: a kernel fault fails the e2e step" 1 "FAIL: e2e modules on the GPU" \
  "CUDA_ERROR_ILLEGAL_ADDRESS" -- env MOCK_CUDA_FAULT=add4 "${gc[@]}" --no-bench
mv "$prep/bench/manifest.json" "$tmp/"
expect "gpu-check: no manifest" 0 "SKIP: benchmark: $prep/bench/manifest.json is missing" \
  -- "${gc[@]}"
mv "$tmp/manifest.json" "$prep/bench/"
expect "gpu-check: nothing prepared" 1 "no prepared modules in $tmp/none/e2e" \
  -- scripts/gpu-check.sh "$tmp/none" "--xhlo-run=$run" "--mock=$mock"
expect "gpu-check: usage" 2 "unknown option" -- scripts/gpu-check.sh --bogus
expect "gpu-check: usage, --budget" 2 "--budget takes whole seconds" -- scripts/gpu-check.sh --budget=x
if ! ldconfig -p 2>/dev/null | grep -q 'libcuda\.so\.1'; then
  expect "gpu-check: no GPU" 3 "SKIP: no GPU" "cannot load libcuda.so.1" "nothing could be checked" \
    -- env LD_LIBRARY_PATH= scripts/gpu-check.sh "$prep" "--xhlo-run=$run"
fi

# ---- xhlo-run's messages for GPU errors ---------------------------------------
A=$prep/e2e/add.thunks
in2=("--input=4xf32=1 2 3 4" "--input=4xf32=10 20 30 40")
export LD_LIBRARY_PATH="$mock${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
expect "mock run" 0 "" -- "$run" "$A" "${in2[@]}" "--expected-output=4xf32=11 22 33 44" --quiet
expect "mock run, two iterations" 0 "execution (thunks only)" -- "$run" "$A" "${in2[@]}" \
  --iterations=2 --quiet
expect "out of device memory" 1 "of device memory for the artifact's 3 buffers" \
  "CUDA_ERROR_OUT_OF_MEMORY (2): out of memory" "MiB free of" \
  -- env MOCK_CUDA_FAIL=cuMemAlloc:2 "$run" "$A" "${in2[@]}"
expect "kernel fault" 1 "cuCtxSynchronize failed: CUDA_ERROR_ILLEGAL_ADDRESS (700)" \
  "found at the synchronization after the last thunk" "ran since the previous synchronization and caused it" \
  -- env MOCK_CUDA_FAULT=add4 "$run" "$A" "${in2[@]}"
expect "kernel fault, --sync-each-thunk" 1 "CUDA_ERROR_ILLEGAL_ADDRESS" "(kernel thunk '" \
  -- env MOCK_CUDA_FAULT=add4 "$run" "$A" "${in2[@]}" --sync-each-thunk
expect "--sync-each-thunk without a fault" 0 "" -- "$run" "$A" "${in2[@]}" --sync-each-thunk \
  "--expected-output=4xf32=11 22 33 44" --quiet
expect "launch failure" 1 "cuLaunchKernel failed" "(kernel thunk '" \
  -- env MOCK_CUDA_FAIL=cuLaunchKernel:719 "$run" "$A" "${in2[@]}"
expect "PTX rejected" 1 "add.ptx: the driver cannot JIT-compile the PTX" \
  "CUDA_ERROR_UNSUPPORTED_PTX_VERSION (222)" \
  "the PTX is .version 8.0 .target sm_90 and the driver is CUDA 12.4 (cuDriverGetVersion 12040)" \
  -- env MOCK_CUDA_FAIL=cuModuleLoadDataEx:222 MOCK_CUDA_DRIVER_VERSION=12040 "$run" "$A" "${in2[@]}"
expect "pinned memory refused" 1 "pinned host memory that stage the inputs and outputs" \
  -- env MOCK_CUDA_FAIL=cuMemAllocHost:2 "$run" "$A" "${in2[@]}"
expect "--help names --sync-each-thunk" 0 "--sync-each-thunk" -- "$run" --help

echo "check-gpu-script: $passed passed, $failed failed"
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
