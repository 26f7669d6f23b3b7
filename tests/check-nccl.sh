#!/usr/bin/env bash
# check-nccl.sh - collectives on several GPUs through NCCL, without a GPU:
# builds the mock libcuda.so.1 (MOCK_CUDA_DEVICES GPUs) and libnccl.so.2
# from tests/mocks/ (they log every call and compute on host memory), then
#   - build/tests/nccl_mock: each kind of collective thunk on 1 to 4 mock
#     GPUs against the host's results, NCCL's calls per device
#     (communicators per group, ranks in group order, the calls and their
#     arguments), what stays on the host path, errors, the MPI hook;
#   - xhlo-run --platform=cuda on the cases of testdata/collectives compiled
#     for the GPU (a one-device case with its collectives kept:
#     --disable-passes=single-device-collectives), one mock GPU per device:
#     XLA's results, and every collective through NCCL (its INFO lines);
#     the cases with kernels are left to tests/gpu/ (the mock runs only its
#     own two kernels);
#   - the cases with asynchronous collectives (compiled with
#     --force-passes): each -start goes through NCCL, the -done waits for
#     nothing more (the stream orders them);
#   - under mpirun (one device per process, GPU local rank % GPUs, the mock
#     NCCL's ranks meeting through files: MOCK_NCCL_DIR): the same cases of
#     several devices, asynchronous ones too, each NCCL unique id reaching
#     the other processes through MPI (no rank could join otherwise), too
#     few GPUs for the job's processes, a device failing alone (its process
#     ends the job after 5 s);
#   - xhlo-run's messages: too few GPUs, an NCCL error (naming the call and
#     the thunk), a device failing alone while the others wait in NCCL (the
#     run still ends), no libnccl.so.2 (naming where it looked), and
#     libnccl.so.2 found in a Python wheel's nvidia/nccl/lib.
#
# Without mpirun (OpenMPI: scripts/setup.sh) the check fails, saying so.
#
# Run from the repository root; binaries in ${XHLOC_BIN:-build/bin}, test
# programs in ${XHLOC_TESTBIN:-build/tests}.
set -u
bin=${XHLOC_BIN:-build/bin}
testbin=${XHLOC_TESTBIN:-build/tests}
run=$bin/xhlo-run
xhloc=$bin/xhloc
drv=$testbin/nccl_mock
dir=testdata/collectives
cc=${CC:-cc}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
. tests/expect.sh   # ok, bad, expect, driver; passed=0 failed=0

for f in "$run" "$xhloc" "$drv"; do
  if [ ! -x "$f" ]; then
    echo "check-nccl: FAIL: $f is missing (run make)"
    echo "0 passed, 1 failed"
    exit 1
  fi
done

mk=$tmp/mock
mkdir -p "$mk"
flags="-std=gnu11 -O1 -shared -fPIC -Wall -Wextra -Wno-unused-parameter -Wno-unused-function"
for m in cuda:libcuda.so.1 nccl:libnccl.so.2; do
  if $cc $flags -o "$mk/${m#*:}" "tests/mocks/${m%%:*}.c" -lm -lpthread; then ok; else
    bad "cannot build the mock ${m#*:}"
  fi
done
export LD_LIBRARY_PATH="$mk${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"

# ---- the driver ------------------------------------------------------------------
driver nccl_mock timeout 300 "$drv" "$mk"

# ---- the collectives cases on mock GPUs -----------------------------------------
. tests/collective_case.sh   # devices, io
ran=0 ran_one=0 kernels=0
for case in "$dir"/*/; do
  case=${case%/}
  name=$(basename "$case")
  [ -f "$case/module.hlo" ] || continue
  [ "$name" = hand_all_reduce_custom ] && continue   # refused by xhloc
  n=$(devices "$case")
  keep=()
  [ "$n" -eq 1 ] && keep=(--disable-passes=single-device-collectives)
  if ! "$xhloc" "${keep[@]}" "$case/module.hlo" -o "$tmp/$name" >"$tmp/err" 2>&1; then
    bad "$name: xhloc for the GPU:"; head -n 4 "$tmp/err" | sed 's/^/    /'
    continue
  fi
  if "$xhloc" "${keep[@]}" --stage=thunks "$case/module.hlo" | grep -q kKernel; then
    kernels=$((kernels + 1))
    continue
  fi
  mapfile -t args < <(io "$case")
  out=$(NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=COLL MOCK_CUDA_DEVICES=$n timeout 60 "$run" \
        "$tmp/$name.thunks" --platform=cuda --lib-path="$mk" "${args[@]}" --quiet 2>&1)
  rc=$?
  # (a permute on one device has nothing to send: a device copy)
  kinds='kAllReduce|kAllGather|kReduceScatter|kAllToAll|kCollectiveBroadcast'
  [ "$n" -gt 1 ] && kinds="$kinds|kCollectivePermute"
  ncoll=$("$xhloc" "${keep[@]}" --stage=thunks "$case/module.hlo" | grep -cE "$kinds")
  if [ "$rc" -ne 0 ]; then
    bad "$name on $n mock GPUs (exit $rc):"; printf '%s\n' "$out" | head -n 8 | sed 's/^/    /'
  elif [ "$ncoll" -gt 0 ] && ! printf '%s\n' "$out" | grep -q "NCCL INFO "; then
    bad "$name: its collectives did not go through NCCL:"; printf '%s\n' "$out" | head -n 8
  else
    ok
    ran=$((ran + 1))
    [ "$n" -eq 1 ] && ran_one=$((ran_one + 1))
  fi
done
# (today 39 cases run here, 4 of them of one device; the rest have kernels)
if [ "$ran" -ge 39 ] && [ "$ran_one" -ge 4 ]; then ok; else
  bad "only $ran cases ran on the mock GPUs ($ran_one of one device; $kernels have kernels)"
fi

# ---- asynchronous collectives (-start/-done) on the mock GPUs ---------------------
# (cases compiled with the whole pipeline forced; those without kernels)
forced=()
for case in "$dir"/*/; do
  case=${case%/}
  name=$(basename "$case")
  [ -f "$case/module.hlo" ] && [ "$name" != hand_all_reduce_custom ] || continue
  n=$(devices "$case")
  [ "$n" -gt 1 ] || continue
  "$xhloc" --force-passes --stage=thunks "$case/module.hlo" >"$tmp/forced.txt" 2>&1 || continue
  grep -q "async_id = [0-9]" "$tmp/forced.txt" && ! grep -q kKernel "$tmp/forced.txt" || continue
  if ! "$xhloc" --force-passes "$case/module.hlo" -o "$tmp/$name.forced" >"$tmp/err" 2>&1; then
    bad "$name: xhloc --force-passes for the GPU:"; head -n 4 "$tmp/err" | sed 's/^/    /'
    continue
  fi
  forced+=("$name")
  mapfile -t args < <(io "$case")
  out=$(NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=COLL MOCK_CUDA_DEVICES=$n timeout 60 "$run" \
        "$tmp/$name.forced.thunks" --platform=cuda --lib-path="$mk" "${args[@]}" --quiet 2>&1)
  rc=$?
  if [ "$rc" -ne 0 ]; then
    bad "$name, forced passes, on $n mock GPUs (exit $rc):"
    printf '%s\n' "$out" | head -n 8 | sed 's/^/    /'
  elif ! printf '%s\n' "$out" | grep -q "NCCL INFO "; then
    bad "$name, forced passes: its collectives did not go through NCCL"
  else
    ok
  fi
done
# (today 31 such cases)
if [ "${#forced[@]}" -ge 31 ]; then ok; else
  bad "only ${#forced[@]} cases with asynchronous collectives ran on the mock GPUs"
fi

# ---- under mpirun: one GPU per process --------------------------------------------
. tests/mpi.sh   # mpi, have_mpirun, mpi_missing
if ! have_mpirun; then
  bad "$mpi_missing"
else
  # (tests/mpi.sh's launcher; -x passes each variable to every process)
  mpienv=(LD_LIBRARY_PATH="$LD_LIBRARY_PATH")
  mpirun=("${mpi[@]}" -x ASAN_OPTIONS -x LD_LIBRARY_PATH -x MOCK_CUDA_DEVICES -x MOCK_NCCL_DIR)
  # on_mpi NAME NP GPUS ARTIFACT ARGS...: mpirun -np NP xhlo-run on GPUS mock
  # GPUs per machine, NCCL's INFO lines on; output in $out, status in $rc
  on_mpi() {
    local name=$1 np=$2 gpus=$3 art=$4
    shift 4
    rm -rf "$tmp/nccl.$name"
    mkdir -p "$tmp/nccl.$name"
    out=$(env "${mpienv[@]}" MOCK_CUDA_DEVICES="$gpus" MOCK_NCCL_DIR="$tmp/nccl.$name" \
          NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=COLL timeout 120 "${mpirun[@]}" -x NCCL_DEBUG \
          -x NCCL_DEBUG_SUBSYS ${MOCK_NCCL_FAIL:+-x MOCK_NCCL_FAIL} -np "$np" "$run" "$art" \
          --platform=cuda --lib-path="$mk" "$@" 2>&1)
    rc=$?
  }
  mpi_ran=0
  for case in "$dir"/*/; do
    case=${case%/}
    name=$(basename "$case")
    [ -f "$tmp/$name.thunks" ] || continue
    n=$(devices "$case")
    [ "$n" -gt 1 ] || continue
    grep -q "kKernel" <("$xhloc" --stage=thunks "$case/module.hlo" 2>/dev/null) && continue
    mapfile -t args < <(io "$case")
    on_mpi "$name" "$n" "$n" "$tmp/$name.thunks" "${args[@]}" --quiet
    if [ "$rc" -ne 0 ]; then
      bad "$name under mpirun -np $n (exit $rc):"; printf '%s\n' "$out" | head -n 8 | sed 's/^/    /'
    else
      ok
      mpi_ran=$((mpi_ran + 1))
    fi
  done
  # (today 35 cases of several devices without kernels)
  echo "check-nccl: $mpi_ran cases under mpirun, ${#forced[@]} with asynchronous collectives"
  if [ "$mpi_ran" -ge 35 ]; then ok; else bad "only $mpi_ran cases ran under mpirun"; fi
  for name in "${forced[@]}"; do
    case $name in async_*) ;; *) continue ;; esac
    n=$(devices "$dir/$name")
    mapfile -t args < <(io "$dir/$name")
    on_mpi "$name.forced" "$n" "$n" "$tmp/$name.forced.thunks" "${args[@]}" --quiet
    if [ "$rc" -eq 0 ] && printf '%s\n' "$out" | grep -q "NCCL INFO "; then ok; else
      bad "$name, forced passes, under mpirun -np $n (exit $rc):"
      printf '%s\n' "$out" | head -n 8 | sed 's/^/    /'
    fi
  done
  # rank k on GPU k, each process calling NCCL for its own device, the
  # communicator's id made once, by rank 0's process
  mapfile -t pio < <(io "$dir/pmap_psum")
  on_mpi gpus 4 4 "$tmp/pmap_psum.thunks" "${pio[@]}" --quiet
  gpus_ok=$([ "$rc" -eq 0 ] && echo yes)
  for k in 0 1 2 3; do
    printf '%s\n' "$out" | grep -q "^mock:0:0 \[$k\] NCCL INFO AllReduce" || gpus_ok=
  done
  if [ -n "$gpus_ok" ] && [ "$(ls "$tmp/nccl.gpus" | grep -c '\.j[0-9]$')" -eq 4 ] &&
     [ "$(ls "$tmp/nccl.gpus" | sed 's/\..*//' | sort -u | wc -l)" -eq 1 ]; then ok; else
    bad "pmap_psum under mpirun: ranks 0-3 on mock GPUs 0-3 in one communicator (exit $rc):"
    printf '%s\n' "$out" | head -n 8 | sed 's/^/    /'
    ls "$tmp/nccl.gpus" | head -n 8 | sed 's/^/    /'
  fi
  # more processes on a machine than its GPUs
  on_mpi few 4 2 "$tmp/pmap_psum.thunks" "${pio[@]}" --quiet
  if [ "$rc" -ne 0 ] && printf '%s' "$out" | grep -qF "the MPI job runs 4 processes on this \
machine and it has 2 GPUs; xhlo-run runs each process's device on a GPU of its own"; then ok; else
    bad "too few GPUs under mpirun (exit $rc):"; printf '%s\n' "$out" | head -n 8 | sed 's/^/    /'
  fi
  # device 2 fails alone while the others wait for it in (the mock) NCCL:
  # its process ends the job
  start=$(date +%s)
  MOCK_NCCL_FAIL=ncclAllReduce:5:2 on_mpi alone 4 4 "$tmp/pmap_psum.thunks" "${pio[@]}" --quiet
  took=$(( $(date +%s) - start ))
  if [ "$rc" -ne 0 ] && [ "$rc" -ne 124 ] && [ "$took" -lt 60 ] &&
     printf '%s' "$out" | grep -qF "device 2 (replica 0, partition 2): NCCL: ncclAllReduce failed" &&
     printf '%s' "$out" | grep -qF "the other devices did not end within 5 s of that failure"; then
    ok
  else
    bad "a device failing alone under mpirun (exit $rc, $took s):"
    printf '%s\n' "$out" | head -n 8 | sed 's/^/    /'
  fi
fi

# ---- xhlo-run's messages ------------------------------------------------------------
P=$tmp/pmap_psum.thunks
mapfile -t pio < <(io "$dir/pmap_psum")
expect "too few GPUs" 1 "the module needs 4 devices (replica_count=1 x num_partitions=4) and" \
  "this machine has 2 GPUs" \
  -- env MOCK_CUDA_DEVICES=2 "$run" "$P" --lib-path="$mk" "${pio[@]}"
expect "--compare on 4 mock GPUs" 0 "device 3 output 0: ok" \
  -- env MOCK_CUDA_DEVICES=4 "$run" "$P" --lib-path="$mk" --random-inputs --compare
expect "an NCCL error" 1 "NCCL: ncclAllReduce failed: invalid usage (run with NCCL_DEBUG=WARN" \
  "NCCL's last error: mock: injected failure of ncclAllReduce" "(collective thunk 'psum.7')" \
  -- env MOCK_CUDA_DEVICES=4 MOCK_NCCL_FAIL=ncclAllReduce:5 "$run" "$P" --lib-path="$mk" \
  "${pio[@]}"
# device 2 fails alone: devices 0, 1 and 3 wait for it in the (mock) NCCL
start=$(date +%s)
expect "a device failing alone" 1 "device 2 (replica 0, partition 2): NCCL: ncclAllReduce failed" \
  "(collective thunk 'psum.7')" "the other devices did not end within 5 s of that failure" \
  -- env MOCK_CUDA_DEVICES=4 MOCK_NCCL_FAIL=ncclAllReduce:5:2 timeout 60 "$run" "$P" \
  --lib-path="$mk" "${pio[@]}"
took=$(( $(date +%s) - start ))
if [ "$took" -lt 30 ]; then ok; else bad "the run with a device failing alone took $took s"; fi

# Where libnccl.so.2 is looked for: the loader's cache left out (this
# machine's own NCCL may be in it) and no CUDA_HOME or Python of its own.
ldso=$(ldd "$run" 2>/dev/null | sed -n 's/^[[:space:]]*\(\/[^ ]*ld-linux[^ ]*\) .*/\1/p' | head -n 1)
isolated=(env -u VIRTUAL_ENV HOME="$tmp/home" CUDA_HOME="$tmp/nocuda" MOCK_CUDA_DEVICES=4)
mkdir -p "$tmp/home" "$tmp/empty" "$tmp/only-cuda"
cp "$mk/libcuda.so.1" "$tmp/only-cuda/"
system_nccl=""
for f in /lib/x86_64-linux-gnu /usr/lib/x86_64-linux-gnu /lib64 /usr/lib64 /lib /usr/lib \
         /usr/local/lib/python3*/dist-packages/nvidia/nccl/lib \
         /usr/local/lib/python3*/site-packages/nvidia/nccl/lib \
         /usr/lib/python3/dist-packages/nvidia/nccl/lib; do
  [ -e "$f/libnccl.so.2" ] && system_nccl=$f/libnccl.so.2
done
if [ -z "$ldso" ] || [ ! -x "$ldso" ]; then
  bad "no dynamic loader found for $run (ldd)"
elif [ -n "$system_nccl" ]; then
  echo "check-nccl: note: this machine has $system_nccl, which the loader finds by" \
    "itself: the message for a missing NCCL is not checked here"
else
  expect "no libnccl.so.2" 1 "cannot load NCCL: no libnccl.so.2 in --lib-path ($tmp/empty)" \
    "nvidia/nccl/lib under" "give the folder that holds it with --lib-path=DIRS" \
    "(collective thunk 'psum.7')" \
    -- "${isolated[@]}" LD_LIBRARY_PATH="$tmp/only-cuda" "$ldso" --inhibit-cache "$run" "$P" \
    --lib-path="$tmp/empty" "${pio[@]}"
  site=$tmp/venv/lib/python3.11/site-packages/nvidia/nccl/lib
  mkdir -p "$site"
  cp "$mk/libnccl.so.2" "$site/"
  expect "libnccl.so.2 in a wheel's nvidia/nccl/lib" 0 "" \
    -- "${isolated[@]}" VIRTUAL_ENV="$tmp/venv" LD_LIBRARY_PATH="$tmp/only-cuda" "$ldso" \
    --inhibit-cache "$run" "$P" "${pio[@]}" --quiet
fi

echo "check-nccl: $passed passed, $failed failed"
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
