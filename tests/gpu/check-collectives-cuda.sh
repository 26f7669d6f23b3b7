#!/usr/bin/env bash
# check-collectives-cuda.sh - the multi-device cases of testdata/collectives
# compiled for the GPU and run by xhlo-run --platform=cuda, one GPU per
# device, their collectives through NCCL: every case whose devices fit the
# machine's GPUs must give XLA's results (out{K}.{D}.npy) on every device,
# and each of its collectives must show in NCCL's own log (NCCL_DEBUG=INFO,
# NCCL_DEBUG_SUBSYS=COLL); a case of more devices than GPUs is listed, with
# how many it needs.  A case of one device keeps its collectives
# (xhloc --disable-passes=single-device-collectives) so that one GPU runs
# them through NCCL too: one_psum's all-reduce must appear in NCCL's log.
#
#   tests/gpu/check-collectives-cuda.sh             (make check-gpu)
#   tests/gpu/check-collectives-cuda.sh --prepare DIR
#
# The first compiles the cases itself when xhloc is there, else runs the
# artifacts prepared in ${XHLOC_GPU_COLLECTIVES:-build/gpu-collectives}
# (by --prepare on a machine with LLVM: `make gpu-artifacts`,
# scripts/gpu-check.sh --prepare).  Run from the repository root (the
# cases' .npy files are read from testdata/collectives, or
# XHLOC_COLLECTIVES_TESTDATA); XHLOC_BIN names
# the directory of xhloc and xhlo-run (default build/bin); XHLOC_LIB_PATH
# is passed to xhlo-run as --lib-path when set (where libnccl.so.2 is).
set -u
bin=${XHLOC_BIN:-build/bin}
xhloc=$bin/xhloc
run=$bin/xhlo-run
src=${XHLOC_COLLECTIVES_TESTDATA:-testdata/collectives}
prebuilt=${XHLOC_GPU_COLLECTIVES:-build/gpu-collectives}
t=$(mktemp -d)
trap 'rm -rf "$t"' EXIT

# What xhloc refuses (check-collectives.sh says why).
refused=" hand_all_reduce_custom "

. tests/collective_case.sh   # devices, io

compile() { # CASE OUTPREFIX
  local keep=()
  [ "$(devices "$1")" -eq 1 ] && keep=(--disable-passes=single-device-collectives)
  "$xhloc" "${keep[@]}" "$1/module.hlo" -o "$2"
}

if [ "${1:-}" = --prepare ]; then
  out=${2:?usage: check-collectives-cuda.sh --prepare DIR}
  mkdir -p "$out"
  n=0 bad=0
  for c in "$src"/*/; do
    c=${c%/}
    name=$(basename "$c")
    [ -f "$c/module.hlo" ] || continue
    case $refused in *" $name "*) continue ;; esac
    if compile "$c" "$out/$name" 2>"$t/err"; then n=$((n + 1)); else
      echo "check-collectives-cuda: FAIL: xhloc on $c:"; head -n 3 "$t/err"
      bad=$((bad + 1))
    fi
  done
  echo "check-collectives-cuda: $n collectives cases compiled into $out"
  [ "$bad" -eq 0 ]
  exit
fi

pass=0 fail=0 ran_nccl_one=0
declare -A more=()    # devices needed -> the cases
gpus=""
bad() {
  fail=$((fail + 1))
  echo "FAIL: $*"
  sed 's/^/  | /' "$t/out" | head -n 10
}
if [ ! -x "$run" ]; then
  echo "check-collectives-cuda: FAIL: $run is missing (run make)"
  echo "0 passed, 1 failed"
  exit 1
fi
if [ ! -x "$xhloc" ] && [ ! -d "$prebuilt" ]; then
  echo "check-collectives-cuda: FAIL: no $xhloc and no prepared artifacts in $prebuilt" \
    "(run 'make gpu-artifacts' where LLVM is installed)"
  echo "0 passed, 1 failed"
  exit 1
fi
libp=()
[ -n "${XHLOC_LIB_PATH:-}" ] && libp=(--lib-path="$XHLOC_LIB_PATH")

for c in "$src"/*/; do
  c=${c%/}
  name=$(basename "$c")
  [ -f "$c/module.hlo" ] || continue
  case $refused in *" $name "*) continue ;; esac
  n=$(devices "$c")
  if [ -x "$xhloc" ]; then
    if ! compile "$c" "$t/$name" >"$t/out" 2>&1; then bad "$name: xhloc failed"; continue; fi
    art=$t/$name.thunks
  else
    art=$prebuilt/$name.thunks
    if [ ! -f "$art" ]; then : >"$t/out"; bad "$name: no prepared $art"; continue; fi
  fi
  mapfile -t args < <(io "$c")
  NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=COLL timeout 300 "$run" "$art" --platform=cuda "${libp[@]}" \
    "${args[@]}" --atol=1e-5 --rtol=1e-5 --quiet >"$t/out" 2>&1
  rc=$?
  if [ "$rc" -ne 0 ] && grep -q "GPUs*; xhlo-run runs each device on a GPU of its own" "$t/out"; then
    gpus=$(sed -n 's/.*this machine has \([0-9]*\) GPU.*/\1/p' "$t/out" | head -n 1)
    more[$n]="${more[$n]:-}${more[$n]:+, }$name"
    continue
  fi
  if [ "$rc" -ne 0 ]; then
    bad "$name on $n GPU(s) (exit $rc)"
    continue
  fi
  # each collective kind of the case in NCCL's log (a permute on one
  # device sends nothing: a device copy)
  missing=""
  for k in AllReduce AllGather ReduceScatter AllToAll CollectiveBroadcast CollectivePermute; do
    "$run" "$art" --describe 2>/dev/null | grep -q "k$k" || continue
    [ "$k" = CollectivePermute ] && [ "$n" -eq 1 ] && continue
    case $k in
    AllToAll | CollectivePermute) want="NCCL INFO Send" ;;
    CollectiveBroadcast) want="NCCL INFO Broadcast" ;;
    *) want="NCCL INFO $k" ;;
    esac
    grep -q "$want" "$t/out" || missing="$missing $k"
  done
  if [ -n "$missing" ]; then
    bad "$name: NCCL's log (NCCL_DEBUG=INFO) shows no call for:$missing"
    continue
  fi
  pass=$((pass + 1))
  [ "$name" = one_psum ] && grep -q "NCCL INFO AllReduce" "$t/out" && ran_nccl_one=1
done

if [ "$ran_nccl_one" -eq 1 ]; then pass=$((pass + 1)); else
  : >"$t/out"
  bad "one_psum: the all-reduce of one GPU did not run through NCCL"
fi
if [ ${#more[@]} -gt 0 ]; then
  echo "check-collectives-cuda: cases of more devices than the ${gpus:-?} GPU(s) here, not run:"
  for n in $(printf '%s\n' "${!more[@]}" | sort -n); do
    echo "  $n devices: ${more[$n]}"
  done
else
  echo "check-collectives-cuda: every case fits this machine's GPUs"
fi
echo "check-collectives-cuda: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
