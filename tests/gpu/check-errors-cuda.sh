#!/usr/bin/env bash
# check-errors-cuda.sh - a GPU's failures give clear messages and a clean
# exit 1, never a crash or a hang (each run under `timeout 120`):
#   ptx_arch     PTX for sm_100a: the driver's JIT refuses it on an older GPU
#   ptx_version  PTX of ISA version 99.0: newer than any driver
#   oom          a module that needs about 490 GB of device memory
#   fault        a kernel that stores to address 0: an illegal address,
#                named after the thunk with --sync-each-thunk
# The first three and fault without --sync-each-thunk check the message's
# gist (the JIT's or the driver's words and the artifact's name), fault with
# it the kernel's thunk.  The cases come from tests/gpu/error_cases.py (on
# testdata/e2e/softmax.hlo) and tests/gpu/oom.hlo, compiled here when xhloc
# is built, else taken from $XHLOC_GPU_ARTIFACTS/errors (`make gpu-artifacts`
# and `scripts/gpu-check.sh --prepare` write them).
#
# make check-gpu runs it on a machine with an NVIDIA GPU; XHLOC_BIN names the
# directory of xhloc and xhlo-run (default build/bin).
set -u
bin=${XHLOC_BIN:-build/bin}
xhloc=$bin/xhloc
run=$bin/xhlo-run
prebuilt=${XHLOC_GPU_ARTIFACTS:-build/gpu-e2e}/errors
pass=0 fail=0
t=$(mktemp -d)
trap 'rm -rf "$t"' EXIT

if [ -x "$xhloc" ]; then
  dir=$t/cases
  if ! "$xhloc" -o "$t/softmax" testdata/e2e/softmax.hlo >"$t/err" 2>&1 ||
     ! python3 tests/gpu/error_cases.py "$t/softmax" "$dir" >>"$t/err" 2>&1 ||
     ! "$xhloc" -o "$dir/oom" tests/gpu/oom.hlo >>"$t/err" 2>&1; then
    echo "check-errors-cuda: FAIL: cannot make the cases:"; cat "$t/err"
    echo "0 passed, 1 failed"
    exit 1
  fi
else
  dir=$prebuilt
  if [ ! -f "$dir/fault.thunks" ] || [ ! -f "$dir/oom.thunks" ]; then
    echo "check-errors-cuda: FAIL: no $xhloc and no prebuilt cases in $dir (run" \
      "'make gpu-artifacts' or 'scripts/gpu-check.sh --prepare' where LLVM is installed)"
    echo "0 passed, 1 failed"
    exit 1
  fi
fi

# expect LABEL WANT... -- ARGS: exit 1 within the timeout, one "xhlo-run:"
# message, every WANT (a grep -E pattern) in the output
expect() {
  local l=$1 wants=() rc
  shift
  while [ "$1" != -- ]; do wants+=("$1"); shift; done
  shift
  timeout 120 "$run" "$@" >"$t/out" 2>&1
  rc=$?
  local why=""
  if [ "$rc" -eq 124 ]; then why="hung (killed after 120 s)"
  elif [ "$rc" -ne 1 ]; then why="exit $rc, want 1"
  else
    for w in "${wants[@]}"; do
      grep -qE -- "$w" "$t/out" || why="${why:+$why; }no '$w' in the message"
    done
  fi
  if [ -z "$why" ]; then
    pass=$((pass + 1))
  else
    fail=$((fail + 1))
    echo "FAIL: $l: $why"
    sed 's/^/  | /' "$t/out" | head -n 12
  fi
}

# the first kernel's thunk, which the fault case breaks
first=$(sed -n 's/^kernel name=[^ ]* annotation=[0-9]*:\([^ ]*\) .*/\1/p' "$dir/fault.thunks" |
  head -n 1)
expect "ptx_arch" "cannot JIT-compile the PTX" "sm_100a, for a newer GPU than this one" -- \
  "$dir/ptx_arch.thunks" --platform=cuda --random-inputs
expect "ptx_version" "cannot JIT-compile the PTX|PTX" "99\.0" -- \
  "$dir/ptx_version.thunks" --platform=cuda --random-inputs
expect "oom" "out of memory|cannot allocate" "[0-9]+ bytes|GiB|GB" -- \
  "$dir/oom.thunks" --platform=cuda --input=1 --mem-budget=1000000000000000
expect "fault" "illegal (memory access|address)" -- \
  "$dir/fault.thunks" --platform=cuda --random-inputs
expect "fault, --sync-each-thunk" "illegal (memory access|address)" "'${first:-?}'" -- \
  "$dir/fault.thunks" --platform=cuda --random-inputs --sync-each-thunk
expect "fault, --iterations=3" "illegal (memory access|address)" -- \
  "$dir/fault.thunks" --platform=cuda --random-inputs --iterations=3

echo "check-errors-cuda: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
