#!/usr/bin/env bash
# check-eval.sh - golden tests of the reference interpreter: every
# testdata/eval/*.hlo runs through `xhlo-run --platform=interpreter` once per
# case its header declares, and must produce the expected values.
#
# Header lines (before or between the HLO lines; all are comments):
#   // CASE: name          starts a case (a file without CASE lines is one case)
#   // INPUT: SPEC         one --input per entry parameter leaf, in order
#   // EXPECT: SPEC        one --expected-output per result leaf, in order
#   // TOL: ATOL RTOL      tolerances for this case (default 0 0: exact)
#   // ERROR: TEXT         the run must fail (exit 1) with TEXT in its stderr
#   // ARGS: ...           extra xhlo-run arguments (e.g. --seed=7)
# The header also says where the expected values come from (by hand, from
# NumPy, or from XLA through JAX on the CPU); they are never the
# interpreter's own output.
#
# Run from the repository root; the binaries are in ${XHLOC_BIN:-build/bin}.
set -u
bin=${XHLOC_BIN:-build/bin}
dir=${XHLOC_EVAL_TESTDATA:-testdata/eval}
run=$bin/xhlo-run
passed=0
failed=0

if [ ! -x "$run" ]; then
  echo "check-eval: FAIL: $run is missing (run make)"
  echo "0 passed, 1 failed"
  exit 1
fi

# run_case FILE NAME: uses the arrays inputs, expects, extra, tol_a, tol_r, err
run_case() {
  local file=$1 name=$2 out rc args=()
  for s in "${inputs[@]+"${inputs[@]}"}"; do args+=("--input=$s"); done
  for s in "${expects[@]+"${expects[@]}"}"; do args+=("--expected-output=$s"); done
  # shellcheck disable=SC2206
  local more=($extra)
  out=$("$run" --platform=interpreter "$file" "${args[@]+"${args[@]}"}" \
        --atol="$tol_a" --rtol="$tol_r" --quiet "${more[@]+"${more[@]}"}" 2>&1)
  rc=$?
  if [ -n "$err" ]; then
    if [ "$rc" -eq 1 ] && printf '%s' "$out" | grep -qF -- "$err"; then
      passed=$((passed + 1))
    else
      failed=$((failed + 1))
      echo "FAIL: $file [$name]: expected an error containing '$err', got exit $rc:"
      printf '%s\n' "$out" | head -n 5 | sed 's/^/    /'
    fi
    return
  fi
  if [ "$rc" -eq 0 ]; then
    passed=$((passed + 1))
  else
    failed=$((failed + 1))
    echo "FAIL: $file [$name] (exit $rc):"
    printf '%s\n' "$out" | head -n 8 | sed 's/^/    /'
  fi
}

reset_case() {
  inputs=()
  expects=()
  extra=$file_extra
  err=""
  tol_a=$file_tol_a
  tol_r=$file_tol_r
}

for file in "$dir"/*.hlo; do
  [ -e "$file" ] || continue
  file_tol_a=0
  file_tol_r=0
  file_extra=""
  reset_case
  name=""
  have_case=0
  while IFS= read -r line; do
    case "$line" in
      "// CASE: "*)
        if [ "$have_case" -eq 1 ]; then run_case "$file" "$name"; fi
        reset_case
        name=${line#// CASE: }
        in_case=1
        have_case=1 ;;
      "// INPUT: "*) inputs+=("${line#// INPUT: }"); have_case=1 ;;
      "// EXPECT: "*) expects+=("${line#// EXPECT: }"); have_case=1 ;;
      "// ERROR: "*) err=${line#// ERROR: }; have_case=1 ;;
      "// ARGS: "*)
        extra=${line#// ARGS: }
        if [ "$have_case" -eq 0 ]; then file_extra=$extra; fi ;;
      "// TOL: "*)
        read -r tol_a tol_r <<<"${line#// TOL: }"
        if [ "$have_case" -eq 0 ]; then file_tol_a=$tol_a; file_tol_r=$tol_r; fi ;;
    esac
  done <"$file"
  if [ "$have_case" -eq 1 ]; then run_case "$file" "${name:-default}"; fi
done

echo "check-eval: $passed passed, $failed failed"
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
