#!/usr/bin/env bash
# check-types.sh - bit-exact tests of the element types and of the ops on
# their bits (reduce-precision, the f8 types, the sub-byte integers) against
# XLA: every testdata/types/*.hlo (made by testdata/types/generate.py; each
# reduces its results to u64 checksums whose expected values XLA on the CPU
# computed) must give those checksums
#   - on the interpreter (xhlo-run --platform=interpreter);
#   - compiled for the host (xhloc --target=host), run on the host, and also
#     compared with the interpreter (--compare);
# and its PTX (xhloc for sm_90) must pass ptxas -arch=sm_90.
# Header lines: // INPUT: SPEC and // EXPECT: SPEC, as in check-eval.sh.
# Then testdata/types/host/*.hlo, XLA's numbers that only the host artifact
# gives (the interpreter keeps XLA's evaluator's order), and the scaled-dot
# goldens of testdata/eval, compiled for the host.
#
# Run from the repository root; XHLOC_BIN names the directory of xhloc and
# xhlo-run (default build/bin).
set -u
bin=${XHLOC_BIN:-build/bin}
xhloc=$bin/xhloc
run=$bin/xhlo-run
pass=0 fail=0
t=$(mktemp -d)
trap 'rm -rf "$t"' EXIT

ok() { pass=$((pass + 1)); }
bad() {
  fail=$((fail + 1))
  echo "FAIL: $*"
  [ -s "$t/err" ] && sed 's/^/  | /' "$t/err" | head -n 8
  return 0
}

ptxas=$(command -v ptxas 2>/dev/null)
for c in "${CUDA_HOME:-/usr/local/cuda}/bin/ptxas" /usr/local/cuda/bin/ptxas; do
  [ -z "$ptxas" ] && [ -x "$c" ] && ptxas=$c
done

for f in testdata/types/*.hlo; do
  name=$(basename "$f" .hlo)
  args=()
  while IFS= read -r line; do
    case $line in
      "// INPUT: "*) args+=("--input=${line#// INPUT: }") ;;
      "// EXPECT: "*) args+=("--expected-output=${line#// EXPECT: }") ;;
    esac
  done <"$f"
  if "$run" --platform=interpreter "$f" "${args[@]}" --atol=0 --rtol=0 --quiet \
      >"$t/out" 2>"$t/err"; then
    ok
  else
    cat "$t/out" >>"$t/err"
    bad "$name: the interpreter's checksums differ from XLA's"
  fi
  if "$xhloc" --target=host -o "$t/$name" "$f" >"$t/out" 2>"$t/err"; then
    if "$run" "$t/$name.thunks" --platform=host "${args[@]}" --atol=0 --rtol=0 \
        --compare --quiet >"$t/out" 2>"$t/err"; then
      ok
    else
      cat "$t/out" >>"$t/err"
      bad "$name: the host artifact's checksums differ from XLA's or the interpreter's"
    fi
  else
    bad "$name: xhloc --target=host failed"
  fi
  if "$xhloc" -o "$t/$name.gpu" "$f" >"$t/out" 2>"$t/err"; then
    if [ -z "$ptxas" ]; then
      echo "no ptxas (looked in PATH, \$CUDA_HOME/bin, /usr/local/cuda/bin)" >"$t/err"
      bad "$name: ptxas not found"
    elif "$ptxas" -arch=sm_90 "$t/$name.gpu.ptx" -o "$t/$name.cubin" \
        >"$t/out" 2>"$t/err"; then
      ok
    else
      bad "$name: ptxas -arch=sm_90 refused the PTX"
    fi
  else
    bad "$name: xhloc (gpu) failed"
  fi
done

# ---- testdata/types/host: XLA's CPU numbers that only the host artifact
# reproduces (tree-reduction-rewriter's order; the interpreter keeps XLA's
# evaluator's), compiled for the host and checked bit for bit.
for f in testdata/types/host/*.hlo; do
  name=host_$(basename "$f" .hlo)
  args=()
  while IFS= read -r line; do
    case $line in
      "// INPUT: "*) args+=("--input=${line#// INPUT: }") ;;
      "// EXPECT: "*) args+=("--expected-output=${line#// EXPECT: }") ;;
    esac
  done <"$f"
  if "$xhloc" --target=host -o "$t/$name" "$f" >"$t/out" 2>"$t/err"; then
    if "$run" "$t/$name.thunks" --platform=host "${args[@]}" --atol=0 --rtol=0 --quiet \
        >"$t/out" 2>"$t/err"; then
      ok
    else
      cat "$t/out" >>"$t/err"
      bad "$name: the host artifact's checksums differ from XLA's"
    fi
  else
    bad "$name: xhloc --target=host failed"
  fi
done

# ---- scaled-dot: the interpreter goldens of testdata/eval (NumPy with
# ml_dtypes; XLA's CPU does not take scaled-dot) compiled for the host
# (through scaled-dot-rewriter), case by case.
run_cases() { # FILE PREFIX (a file without CASE lines is one case)
  local f=$1 prefix=$2 name=all args=() tol=(--atol=0 --rtol=0) line a r
  flush() {
    [ "${#args[@]}" -eq 0 ] && return
    if "$run" "$prefix.thunks" --platform=host "${args[@]}" "${tol[@]}" --quiet \
        >"$t/out" 2>"$t/err"; then
      ok
    else
      cat "$t/out" >>"$t/err"
      bad "$(basename "$f") [$name]: the host artifact differs from the expected values"
    fi
  }
  while IFS= read -r line; do
    case $line in
      "// CASE: "*) flush; name=${line#// CASE: }; args=() ;;
      "// INPUT: "*) args+=("--input=${line#// INPUT: }") ;;
      "// EXPECT: "*) args+=("--expected-output=${line#// EXPECT: }") ;;
      "// TOL: "*) read -r a r <<<"${line#// TOL: }"; tol=("--atol=$a" "--rtol=$r") ;;
    esac
  done <"$f"
  flush
}
for f in testdata/eval/numpy_scaled_dot*.hlo; do
  name=$(basename "$f" .hlo)
  if "$xhloc" --target=host -o "$t/$name" "$f" >"$t/out" 2>"$t/err"; then
    run_cases "$f" "$t/$name"
  else
    bad "$name: xhloc --target=host failed"
  fi
done

echo "check-types: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
