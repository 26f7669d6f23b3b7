#!/usr/bin/env bash
# check-cuda-libs.sh - the CUDA platform's library calls without a GPU:
# builds mock libcuda.so.1, libcublasLt.so.13 and libcudnn.so.9 from
# tests/mocks/*.c (they log every call and compute on host memory), runs
# build/tests/cuda_libs_mock against them (GEMMs through cuBLASLt,
# convolutions through cuDNN's backend API: results, call sequences and
# arguments, caching, workspaces, errors; then the library search order and
# its messages), then build/tests/cmdbuf_mock (command buffers as CUDA
# graphs: record, replay, update, off; results and driver call sequences)
# and build/tests/cuda_profile_mock (profiling and tracing through the
# mock's CUDA events: marks, calls, timeline, bytes, the summary and the
# trace file), then build/tests/cuda_memory_mock (the buffer pool, pinned
# staging with async copies, and the messages for out of memory, a kernel
# fault and a rejected PTX), and checks that cublaslt.c, cudnn.c and platform_cuda.c also
# compile with the minimal headers alone (no toolkit headers).
#
# Run from the repository root; test programs in ${XHLOC_TESTBIN:-build/tests}.
set -u
testbin=${XHLOC_TESTBIN:-build/tests}
drv=$testbin/cuda_libs_mock
cbdrv=$testbin/cmdbuf_mock
pfdrv=$testbin/cuda_profile_mock
memdrv=$testbin/cuda_memory_mock
cc=${CC:-cc}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
. tests/expect.sh   # ok, bad, driver; passed=0 failed=0

for f in "$drv" "$cbdrv" "$pfdrv" "$memdrv"; do
  if [ ! -x "$f" ]; then
    echo "check-cuda-libs: FAIL: $f is missing (run make)"
    echo "0 passed, 1 failed"
    exit 1
  fi
done

mk=$tmp/mock
mkdir -p "$mk" "$tmp/search"
flags="-std=gnu11 -O1 -shared -fPIC -Wall -Wextra -Wno-unused-parameter -Wno-unused-function"
for m in cuda:libcuda.so.1 cublaslt:libcublasLt.so.13 cudnn:libcudnn.so.9; do
  if $cc $flags -o "$mk/${m#*:}" "tests/mocks/${m%%:*}.c" -lm; then ok; else bad "cannot build the mock ${m#*:}"; fi
done
echo 'int tiny_symbol(void) { return 1; }' >"$tmp/tiny.c"
if $cc -shared -fPIC -o "$mk/tiny.so" "$tmp/tiny.c"; then ok; else bad "cannot build tiny.so"; fi

# the minimal headers stand in for cublasLt.h and cudnn.h
for f in lib/runtime/cublaslt.c lib/runtime/cudnn.c lib/runtime/platform_cuda.c; do
  if $cc -std=gnu11 -Wall -Wextra -Wshadow -Wstrict-prototypes -Wmissing-prototypes \
       -Wno-unused-parameter -Werror -fsyntax-only "$f"; then
    ok
  else
    bad "$f does not compile with the minimal headers"
  fi
done

# the test drivers, with the mocks first on the loader's path
export LD_LIBRARY_PATH="$mk${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
driver cuda_libs_mock "$drv" "$mk" "$tmp/search"
driver cmdbuf_mock "$cbdrv" "$mk"
mkdir -p "$tmp/prof"
driver cuda_profile_mock "$pfdrv" "$mk" "$tmp/prof"
driver cuda_memory_mock "$memdrv"

echo "check-cuda-libs: $passed passed, $failed failed"
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
