#!/usr/bin/env bash
# check-collectives.sh - the multi-device cases of testdata/collectives/:
# each NAME/ holds a per-device module (XLA's optimized HLO from JAX over 4
# CPU devices), every device's arguments in{K}.{D}.npy and XLA's results
# out{K}.{D}.npy.  xhlo-run runs all devices of the module on the
# interpreter ({d} in the specs names each device's files) and must match
# XLA's results on every device.  Then each is compiled by xhloc for the host
# and its artifact run on every device (threads meeting at the collective
# thunks), which must match XLA's results too, except the cases listed in
# refused below, which xhloc must refuse with the message given; and once
# more with the whole pipeline forced (--force-passes), collective passes
# included.  check-collectives-mpi.sh runs the same cases under mpirun.
#
# Run from the repository root; the binaries are in ${XHLOC_BIN:-build/bin}.
set -u
bin=${XHLOC_BIN:-build/bin}
dir=${XHLOC_COLLECTIVES_TESTDATA:-testdata/collectives}
run=$bin/xhlo-run
passed=0
failed=0
. tests/collective_case.sh   # io

if [ ! -x "$run" ]; then
  echo "check-collectives: FAIL: $run is missing (run make)"
  echo "0 passed, 1 failed"
  exit 1
fi

for case in "$dir"/*/; do
  case=${case%/}
  [ -f "$case/module.hlo" ] || continue
  mapfile -t args < <(io "$case")
  if [[ "${args[*]}" != *--expected-output=* ]]; then
    failed=$((failed + 1))
    echo "FAIL: $case: no expected outputs"
    continue
  fi
  out=$("$run" --platform=interpreter "$case/module.hlo" "${args[@]}" \
        --atol=1e-5 --rtol=1e-5 --quiet 2>&1)
  rc=$?
  if [ "$rc" -eq 0 ]; then
    passed=$((passed + 1))
  else
    failed=$((failed + 1))
    echo "FAIL: $case (exit $rc):"
    printf '%s\n' "$out" | head -n 8 | sed 's/^/    /'
  fi
done

# Compiled for the host.  What xhloc refuses, as XLA:CPU does or not yet.
declare -A refused=(
  [hand_all_reduce_custom]="unsupported reduction computation"
)
xhloc=$bin/xhloc
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for case in "$dir"/*/; do
  case=${case%/}
  name=$(basename "$case")
  [ -f "$case/module.hlo" ] || continue
  if [ ! -x "$xhloc" ]; then
    failed=$((failed + 1))
    echo "FAIL: $xhloc is missing (run make)"
    break
  fi
  out=$("$xhloc" --target=host "$case/module.hlo" -o "$tmp/$name" 2>&1)
  rc=$?
  want=${refused[$name]:-}
  if [ -n "$want" ]; then
    if [ "$rc" -eq 1 ] && printf '%s' "$out" | grep -qF -- "$want"; then
      passed=$((passed + 1))
    else
      failed=$((failed + 1))
      echo "FAIL: $case: xhloc should refuse it with '$want', got exit $rc:"
      printf '%s\n' "$out" | head -n 4 | sed 's/^/    /'
    fi
    continue
  fi
  if [ "$rc" -ne 0 ]; then
    failed=$((failed + 1))
    echo "FAIL: $case: xhloc --target=host (exit $rc):"
    printf '%s\n' "$out" | head -n 4 | sed 's/^/    /'
    continue
  fi
  mapfile -t args < <(io "$case")
  out=$(timeout 120 "$run" "$tmp/$name.thunks" "${args[@]}" --atol=1e-5 --rtol=1e-5 \
        --quiet 2>&1)
  rc=$?
  if [ "$rc" -eq 0 ]; then
    passed=$((passed + 1))
  else
    failed=$((failed + 1))
    echo "FAIL: $case on the host (exit $rc):"
    printf '%s\n' "$out" | head -n 8 | sed 's/^/    /'
  fi
done

# With the whole pipeline forced on XLA's scheduled modules: the collective
# passes (all-reduce-combiner, async-collective-creator, latency-hiding-
# scheduler) run too, and every device still matches XLA's results and the
# interpreter's (--compare).
for case in "$dir"/*/; do
  case=${case%/}
  name=$(basename "$case")
  [ -f "$case/module.hlo" ] && [ -z "${refused[$name]:-}" ] || continue
  out=$("$xhloc" --target=host --force-passes "$case/module.hlo" -o "$tmp/$name.forced" 2>&1)
  if [ $? -ne 0 ]; then
    failed=$((failed + 1))
    echo "FAIL: $case: xhloc --target=host --force-passes:"
    printf '%s\n' "$out" | head -n 4 | sed 's/^/    /'
    continue
  fi
  mapfile -t args < <(io "$case")
  out=$(timeout 120 "$run" "$tmp/$name.forced.thunks" "${args[@]}" --atol=1e-5 --rtol=1e-5 \
        --compare --quiet 2>&1)
  rc=$?
  if [ "$rc" -eq 0 ]; then
    passed=$((passed + 1))
  else
    failed=$((failed + 1))
    echo "FAIL: $case with --force-passes on the host (exit $rc):"
    printf '%s\n' "$out" | grep -v ': ok$' | head -n 8 | sed 's/^/    /'
  fi
done

# Devices that run different collectives fail, compiled too, never hang.
if "$xhloc" --target=host testdata/eval/hand_collective_deadlock.hlo -o "$tmp/deadlock" \
     >/dev/null 2>&1; then
  out=$(timeout 60 "$run" "$tmp/deadlock.thunks" --input="1 2" 2>&1)
  rc=$?
else
  out="xhloc failed"
  rc=99
fi
if [ "$rc" -eq 1 ] && printf '%s' "$out" | grep -qF "only 1 of its 2 devices arrived"; then
  passed=$((passed + 1))
else
  failed=$((failed + 1))
  echo "FAIL: the compiled deadlock (exit $rc):"
  printf '%s\n' "$out" | head -n 4 | sed 's/^/    /'
fi

# A device alone in its group gathers into a larger result: its operand,
# then zeros (testdata/eval checks the interpreter), compiled too.
alone=testdata/eval/hand_all_gather_alone_replicas.hlo
if "$xhloc" --target=host "$alone" -o "$tmp/alone" >/dev/null 2>&1; then
  out=$(timeout 60 "$run" "$tmp/alone.thunks" --input="2x2xf32=1 2 3 4" \
        --expected-output="4x2xf32=1 2 3 4 0 0 0 0" --quiet 2>&1)
  rc=$?
else
  out="xhloc failed"
  rc=99
fi
if [ "$rc" -eq 0 ]; then
  passed=$((passed + 1))
else
  failed=$((failed + 1))
  echo "FAIL: the compiled $alone (exit $rc):"
  printf '%s\n' "$out" | head -n 4 | sed 's/^/    /'
fi

# Printed results name their device; a spec without {d} is every device's.
case=$dir/cr_all_reduce_groups
out=$("$run" "$case/module.hlo" --input="@$case/in0.0.npy" 2>&1)
if [ $? -eq 0 ] && printf '%s\n' "$out" | grep -qx "device 3 (replica 3, partition 0):" &&
   printf '%s\n' "$out" | grep -qx "u32\[\] 2"; then
  passed=$((passed + 1))
else
  failed=$((failed + 1))
  echo "FAIL: printed results of $case:"
  printf '%s\n' "$out" | head -n 8 | sed 's/^/    /'
fi

echo "check-collectives: $passed passed, $failed failed"
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
