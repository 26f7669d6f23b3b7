#!/usr/bin/env bash
# check-e2e-cuda.sh - the end-to-end modules (testdata/e2e/*.hlo) compiled
# for the GPU (xhloc -o PREFIX: PREFIX.thunks and PREFIX.ptx) and run on the
# CUDA platform against the reference interpreter on random inputs
# (xhlo-run PREFIX.thunks --platform=cuda --random-inputs --compare).
#
# make check-gpu runs it on a machine with an NVIDIA GPU.  Run from the
# repository root; XHLOC_BIN names the directory of xhloc and xhlo-run
# (default build/bin).
set -u
bin=${XHLOC_BIN:-build/bin}
xhloc=$bin/xhloc
run=$bin/xhlo-run
pass=0 fail=0
t=$(mktemp -d)
trap 'rm -rf "$t"' EXIT

bad() {
  fail=$((fail + 1))
  echo "FAIL: $*"
  sed 's/^/  | /' "$t/err" | head -n 8
}

for f in testdata/e2e/*.hlo; do
  name=$(basename "$f" .hlo)
  if ! "$xhloc" -o "$t/$name" "$f" >"$t/out" 2>"$t/err"; then
    bad "$name: xhloc failed"
    continue
  fi
  if "$run" "$t/$name.thunks" --platform=cuda --random-inputs --compare \
      >"$t/out" 2>"$t/err"; then
    pass=$((pass + 1))
  else
    cat "$t/out" >>"$t/err"
    bad "$name: the CUDA run differs from the interpreter (or failed)"
  fi
done

echo "check-e2e-cuda: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
