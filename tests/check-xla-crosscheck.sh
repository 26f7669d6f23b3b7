#!/usr/bin/env bash
# check-xla-crosscheck.sh - xhloc against results XLA itself computed.
#
# testdata/xla-crosscheck/ holds a sample of corpus modules that
# scripts/xla-crosscheck --save-sample wrote: NAME.hlo, its inputs
# NAME.in0.npy, NAME.in1.npy, ..., XLA's CPU results for them NAME.out0.npy,
# ... and NAME.tol (xhlo-run's --atol and --rtol for its result types).  For
# each module this runs, with those inputs and checking the results with
# xhlo-run --expected-output (no Python, no jax):
#   - the reference interpreter (xhlo-run NAME.hlo);
#   - the host artifact (xhloc --target=host -o PREFIX, then
#     xhlo-run PREFIX.thunks --platform=host).
# Then one control: a saved result with one byte changed must be refused.
#
# Run from the repository root; XHLOC_BIN names the directory of xhloc and
# xhlo-run (default build/bin).
set -u
bin=${XHLOC_BIN:-build/bin}
xhloc=$bin/xhloc
run=$bin/xhlo-run
dir=testdata/xla-crosscheck
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

# args NAME: sets ins and exps to NAME's --input and --expected-output options.
args() {
  local k=0
  ins=() exps=()
  while [ -f "$dir/$1.in$k.npy" ]; do ins+=("--input=@$dir/$1.in$k.npy"); k=$((k + 1)); done
  k=0
  while [ -f "$dir/$1.out$k.npy" ]; do exps+=("--expected-output=@$dir/$1.out$k.npy"); k=$((k + 1)); done
}

shopt -s nullglob
modules=("$dir"/*.hlo)
if [ ${#modules[@]} -eq 0 ]; then
  echo "FAIL: no modules in $dir"
  fail=1
fi
control=""
for f in "${modules[@]}"; do
  name=$(basename "$f" .hlo)
  args "$name"
  if [ ${#exps[@]} -eq 0 ] || [ ! -f "$dir/$name.tol" ]; then
    : >"$t/err"
    bad "$name: no $name.out0.npy or $name.tol"
    continue
  fi
  read -r -a tol <"$dir/$name.tol"
  if "$run" "$f" --platform=interpreter --quiet "${ins[@]}" "${exps[@]}" "${tol[@]}" \
      >"$t/out" 2>"$t/err"; then
    ok
  else
    bad "$name: the interpreter differs from XLA (or failed)"
  fi
  if ! "$xhloc" --target=host -w -o "$t/$name" "$f" >"$t/out" 2>"$t/err"; then
    bad "$name: xhloc --target=host failed"
  elif "$run" "$t/$name.thunks" --platform=host --quiet "${ins[@]}" "${exps[@]}" "${tol[@]}" \
      >"$t/out" 2>"$t/err"; then
    ok
  else
    bad "$name: the host artifact differs from XLA (or failed)"
  fi
  # the control uses the first module whose first result is f32
  if [ -z "$control" ] && head -c 64 "$dir/$name.out0.npy" | grep -q "'<f4'"; then
    control=$name
  fi
done

# Control: the last byte of the result (the sign and high exponent bits of
# its last f32 element) flipped must make the interpreter's run fail.
if [ -n "$control" ]; then
  args "$control"
  cp "$dir/$control.out0.npy" "$t/bad.npy"
  size=$(stat -c %s "$t/bad.npy")
  byte=$(od -An -tu1 -j $((size - 1)) -N1 "$t/bad.npy" | tr -d ' ')
  printf "\\$(printf %03o $((byte ^ 0xc0)))" |
    dd of="$t/bad.npy" bs=1 seek=$((size - 1)) conv=notrunc status=none
  exps[0]="--expected-output=@$t/bad.npy"
  read -r -a tol <"$dir/$control.tol"
  "$run" "$dir/$control.hlo" --quiet "${ins[@]}" "${exps[@]}" "${tol[@]}" >"$t/out" 2>"$t/err"
  rc=$?
  if [ "$rc" -eq 1 ] && grep -q . "$t/err"; then
    ok
  else
    bad "control: $control with a changed result: exit status $rc, want 1 and a message"
  fi
else
  : >"$t/err"
  bad "control: no sample module has an f32 first result"
fi

echo "check-xla-crosscheck: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
