#!/usr/bin/env bash
# check-e2e-cuda.sh - the end-to-end modules (testdata/e2e/*.hlo) compiled
# for the GPU (xhloc -o PREFIX: PREFIX.thunks and PREFIX.ptx) and run on the
# CUDA platform against the reference interpreter on random inputs
# (xhlo-run PREFIX.thunks --platform=cuda --random-inputs --compare).
#
# make check-gpu runs it on a machine with an NVIDIA GPU.  Run from the
# repository root; XHLOC_BIN names the directory of xhloc and xhlo-run
# (default build/bin).
#
# A GPU machine without LLVM cannot build xhloc: there, compile the
# artifacts where xhloc builds (`make gpu-artifacts` writes them to
# build/gpu-e2e/), bring that directory along, and the script runs them
# (XHLOC_GPU_ARTIFACTS names another directory).  When xhloc is present it
# compiles the modules itself.  XHLOC_E2E_DIR names the directory of the
# modules' .hlo files (default testdata/e2e; scripts/gpu-check.sh points it
# at its prepared directory).
set -u
bin=${XHLOC_BIN:-build/bin}
xhloc=$bin/xhloc
run=$bin/xhlo-run
prebuilt=${XHLOC_GPU_ARTIFACTS:-build/gpu-e2e}
src=${XHLOC_E2E_DIR:-testdata/e2e}
pass=0 fail=0
t=$(mktemp -d)
trap 'rm -rf "$t"' EXIT
if [ ! -x "$xhloc" ]; then
  if [ ! -d "$prebuilt" ]; then
    echo "check-e2e-cuda: FAIL: no $xhloc and no prebuilt artifacts in" \
      "$prebuilt (run 'make gpu-artifacts' where LLVM is installed)"
    echo "0 passed, 1 failed"
    exit 1
  fi
  echo "check-e2e-cuda: $xhloc not built; running the artifacts in $prebuilt"
fi

bad() {
  fail=$((fail + 1))
  echo "FAIL: $*"
  sed 's/^/  | /' "$t/err" | head -n 8
}

for f in "$src"/*.hlo; do
  name=$(basename "$f" .hlo)
  if [ ! -x "$xhloc" ]; then
    if [ ! -f "$prebuilt/$name.thunks" ]; then
      : >"$t/err"
      bad "$name: no prebuilt $prebuilt/$name.thunks"
      continue
    fi
    cp "$prebuilt/$name.thunks" "$prebuilt/$name.ptx" "$t/"
  elif ! "$xhloc" -o "$t/$name" "$f" >"$t/out" 2>"$t/err"; then
    bad "$name: xhloc failed"
    continue
  fi
  # full f32 (--tf32=off) against the interpreter's tolerance; an artifact
  # whose f32 gemms or convolutions may use TF32 (XLA:GPU's default
  # precision) runs a second time as compiled, against TF32's: 10 mantissa
  # bits, an error of about 1e-3 of the largest product term
  if "$run" "$t/$name.thunks" --platform=cuda --random-inputs --compare --tf32=off \
      >"$t/out" 2>"$t/err"; then
    pass=$((pass + 1))
  else
    cat "$t/out" >>"$t/err"
    bad "$name: the CUDA run differs from the interpreter (or failed)"
  fi
  if grep -q ' tf32=1 ' "$t/$name.thunks"; then
    if "$run" "$t/$name.thunks" --platform=cuda --random-inputs --compare \
        --atol=2e-2 --rtol=2e-2 >"$t/out" 2>"$t/err"; then
      pass=$((pass + 1))
    else
      cat "$t/out" >>"$t/err"
      bad "$name (TF32): the CUDA run differs from the interpreter (or failed)"
    fi
  fi
done

echo "check-e2e-cuda: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
