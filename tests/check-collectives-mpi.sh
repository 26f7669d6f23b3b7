#!/usr/bin/env bash
# check-collectives-mpi.sh - the multi-device cases of testdata/collectives/
# under an MPI launcher: `mpirun -np N xhlo-run ...` runs one device per
# process (rank d is device d, its --input=@in{K}.{d}.npy and
# --expected-output=@out{K}.{d}.npy), the collectives through MPI
# (lib/support/exchange_mpi.c, OpenMPI opened with dlopen).  Each case runs
# on the interpreter and compiled for the host (and again with the whole
# pipeline forced where that makes asynchronous collectives, exchanged on a
# background thread), and every device must match XLA's results, as in
# check-collectives.sh with threads.  Then what must fail does, with its
# message and never a hang: devices that run different collectives, a job
# of another size than the module's devices, a missing libmpi.
# check-spmd.sh runs the cases of testdata/spmd/ under mpirun too (global
# inputs cut per process, global results gathered by the first).
#
# OpenMPI (openmpi-bin, libopenmpi-dev) comes from scripts/setup.sh; without
# mpirun this check fails, saying so.  The job stays on this machine
# (tests/mpi.sh: the launcher's options).  Run from the repository root;
# binaries in ${XHLOC_BIN:-build/bin}.
set -u
bin=${XHLOC_BIN:-build/bin}
dir=${XHLOC_COLLECTIVES_TESTDATA:-testdata/collectives}
run=$bin/xhlo-run
xhloc=$bin/xhloc
passed=0
failed=0

. tests/mpi.sh   # mpi, have_mpirun, mpi_missing, mpi_brief
. tests/collective_case.sh   # devices, io

if ! have_mpirun; then
  echo "check-collectives-mpi: FAIL: $mpi_missing"
  echo "0 passed, 1 failed"
  exit 1
fi
for b in "$run" "$xhloc"; do
  if [ ! -x "$b" ]; then
    echo "check-collectives-mpi: FAIL: $b is missing (run make)"
    echo "0 passed, 1 failed"
    exit 1
  fi
done

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

fail() { # what, output
  failed=$((failed + 1))
  echo "FAIL: $1:"
  printf '%s\n' "$2" | mpi_brief
}

# The compiled cases xhloc refuses, as in check-collectives.sh.
declare -A refused=([hand_all_reduce_custom]=1)
for case in "$dir"/*/; do
  case=${case%/}
  name=$(basename "$case")
  [ -f "$case/module.hlo" ] || continue
  ndev=$(devices "$case")
  mapfile -t args < <(io "$case")
  out=$(timeout 120 "${mpi[@]}" -np "$ndev" "$run" --platform=interpreter "$case/module.hlo" \
        "${args[@]}" --atol=1e-5 --rtol=1e-5 --quiet 2>&1)
  rc=$?
  if [ "$rc" -eq 0 ]; then passed=$((passed + 1)); else fail "$case, interpreter, mpirun -np $ndev (exit $rc)" "$out"; fi
  [ -n "${refused[$name]:-}" ] && continue
  if ! out=$("$xhloc" --target=host "$case/module.hlo" -o "$tmp/$name" 2>&1); then
    fail "$case: xhloc --target=host" "$out"
    continue
  fi
  out=$(timeout 120 "${mpi[@]}" -np "$ndev" "$run" "$tmp/$name.thunks" "${args[@]}" \
        --atol=1e-5 --rtol=1e-5 --quiet 2>&1)
  rc=$?
  if [ "$rc" -eq 0 ]; then passed=$((passed + 1)); else fail "$case, host, mpirun -np $ndev (exit $rc)" "$out"; fi
done

# With the whole pipeline forced: asynchronous collectives, their exchanges
# on a background thread of each process (MPI_THREAD_SERIALIZED).
for case in "$dir"/*/; do
  case=${case%/}
  name=$(basename "$case")
  [ -f "$case/module.hlo" ] && [ -z "${refused[$name]:-}" ] || continue
  if ! out=$("$xhloc" --target=host --force-passes "$case/module.hlo" -o "$tmp/$name.forced" 2>&1); then
    fail "$case: xhloc --target=host --force-passes" "$out"
    continue
  fi
  grep -q "async=[0-9]" "$tmp/$name.forced.thunks" || continue
  ndev=$(devices "$case")
  mapfile -t args < <(io "$case")
  out=$(timeout 120 "${mpi[@]}" -np "$ndev" "$run" "$tmp/$name.forced.thunks" "${args[@]}" \
        --atol=1e-5 --rtol=1e-5 --quiet 2>&1)
  rc=$?
  if [ "$rc" -eq 0 ]; then passed=$((passed + 1)); else fail "$case, forced passes, mpirun -np $ndev (exit $rc)" "$out"; fi
done

# --compare under MPI: the interpreter runs this process's device, its
# collectives through MPI too.
case=$dir/pmap_psum_loop
out=$(timeout 120 "${mpi[@]}" -np 4 "$run" "$tmp/pmap_psum_loop.thunks" \
      --input="@$case/in0.{d}.npy" --compare --quiet 2>&1)
if [ $? -eq 0 ] && [ "$(printf '%s\n' "$out" | grep -c 'output 0: ok$')" -eq 4 ]; then
  passed=$((passed + 1))
else
  fail "--compare under mpirun" "$out"
fi

expect_fail() { # what, message, command...
  local what=$1 want=$2
  shift 2
  out=$(timeout 120 "$@" 2>&1)
  rc=$?
  if [ "$rc" -ne 0 ] && [ "$rc" -ne 124 ] && printf '%s' "$out" | grep -qF -- "$want"; then
    passed=$((passed + 1))
  else
    fail "$what: want a failure with '$want', got exit $rc" "$out"
  fi
}

# Devices that run different collectives fail, naming the collective.
if "$xhloc" --target=host testdata/eval/hand_collective_deadlock.hlo -o "$tmp/deadlock" \
     >/dev/null 2>&1; then
  expect_fail "compiled deadlock" "device 1 ended its run without taking part" \
    "${mpi[@]}" -np 2 "$run" "$tmp/deadlock.thunks" --input="1 2"
else
  fail "xhloc on testdata/eval/hand_collective_deadlock.hlo" ""
fi
expect_fail "interpreted deadlock" "ar: device 1 ended its run without taking part" \
  "${mpi[@]}" -np 2 "$run" testdata/eval/hand_collective_deadlock.hlo --input="1 2"
# Two devices in different collectives at once: found within seconds.
expect_fail "different collectives" "(the devices ran different collectives)" \
  "${mpi[@]}" -np 2 "$run" testdata/eval/hand_collective_mismatch.hlo --input="1 2"
# The job's size must be the module's device count.
case=$dir/pmap_psum
expect_fail "a job of 2 for 4 devices" "but the MPI job has 2 processes: start it with mpirun -np 4" \
  "${mpi[@]}" -np 2 "$run" "$case/module.hlo" --input="@$case/in0.{d}.npy"
# libmpi missing: a clear error, not a crash.
expect_fail "no libmpi" "cannot load OpenMPI's $tmp/none.so" \
  env XHLO_MPI_LIB="$tmp/none.so" "${mpi[@]}" -x XHLO_MPI_LIB -np 4 "$run" "$case/module.hlo" \
  --input="@$case/in0.{d}.npy"

echo "check-collectives-mpi: $passed passed, $failed failed"
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
