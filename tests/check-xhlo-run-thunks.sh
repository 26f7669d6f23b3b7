#!/usr/bin/env bash
# check-xhlo-run-thunks.sh - xhlo-run on compiled artifacts (PREFIX.thunks):
# runs on the host platform (kernel, copy, memset, while, layouts, tuples),
# --compare with the interpreter (agreeing and disagreeing), the embedded
# original HLO on --platform=interpreter, --describe, --iterations (with
# --device-resident, and --back-to-back: N more runs queued, one
# synchronization, on the host and the CUDA platform),
# --profile (the table: columns, order, shares, calls with --iterations and
# while loops, bytes) and --trace (the Chrome trace JSON read back: an event
# per thunk execution, durations, order, runs), --help; and the refusals: missing, corrupted and truncated
# .thunks files, a missing or mismatched kernel file, wrong inputs, a
# platform that does not fit the target, usage errors (exit 2), and
# --platform=cuda: on a machine without a GPU a one-line error naming the
# driver or device (exit 1), on one with a GPU the right results.  Host
# kernels' work units run on 1 to 5 threads with the same bits.  The CUDA
# platform's driver calls are also run against a mock libcuda.so.1 built
# here, so they are exercised on every machine.  When xhloc is built, an
# artifact it writes (a while loop) runs too.
#
# The other artifacts come from tests/make_test_artifact (artifact_serialize)
# with kernels written here in C (compiled with cc -shared) and in PTX
# (checked with ptxas when there is one).  Expected values are worked out by
# hand.
#
# Run from the repository root; binaries in ${XHLOC_BIN:-build/bin}, test
# programs in ${XHLOC_TESTBIN:-build/tests}.
set -u
bin=${XHLOC_BIN:-build/bin}
testbin=${XHLOC_TESTBIN:-build/tests}
run=$bin/xhlo-run
mk=$testbin/make_test_artifact
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
passed=0
failed=0

ok() { passed=$((passed + 1)); }
bad() { failed=$((failed + 1)); echo "FAIL: $*"; }

# expect NAME STATUS PATTERN -- command...: the command exits with STATUS and
# its combined output contains PATTERN (empty: anything).
expect() {
  local name=$1 want=$2 pat=$3 out rc
  shift 4
  out=$("$@" 2>&1)
  rc=$?
  if [ "$rc" -ne "$want" ]; then
    bad "$name: exit $rc, want $want"
    printf '%s\n' "$out" | head -n 8 | sed 's/^/    /'
  elif [ -n "$pat" ] && ! printf '%s' "$out" | grep -qF -- "$pat"; then
    bad "$name: output lacks '$pat'"
    printf '%s\n' "$out" | head -n 8 | sed 's/^/    /'
  else
    ok
  fi
}

for f in "$run" "$mk"; do
  if [ ! -x "$f" ]; then
    echo "check-xhlo-run-thunks: FAIL: $f is missing (run make)"
    echo "0 passed, 1 failed"
    exit 1
  fi
done

# ---- kernels ---------------------------------------------------------------
cat >"$tmp/k.c" <<'EOF'
#include <stdint.h>
#include <string.h>
/* host kernels: void name(void **args, int64_t lo, int64_t hi) computes
 * work units [lo, hi); add4 has one unit per element, the others one */
void add4(void **a, int64_t lo, int64_t hi) {
  float *x = a[0], *y = a[1], *o = a[2];
  for (int64_t i = lo; i < hi; i++) o[i] = x[i] + y[i];
}
void copy24(void **a, int64_t lo, int64_t hi) { memcpy(a[1], a[0], 24); }
void lt(void **a, int64_t lo, int64_t hi) {
  int *c = a[0], *n = a[1];
  unsigned char *p = a[2];
  *p = *c < *n;
}
void inc(void **a, int64_t lo, int64_t hi) { int *c = a[0], *o = a[1]; *o = *c + 1; }
EOF
if ! ${CC:-cc} -shared -fPIC -O1 -o "$tmp/k.so" "$tmp/k.c"; then
  echo "check-xhlo-run-thunks: FAIL: cannot compile the test kernels with ${CC:-cc}"
  echo "0 passed, 1 failed"
  exit 1
fi

cat >"$tmp/k.ptx" <<'EOF'
.version 7.0
.target sm_52
.address_size 64

.visible .entry add4(.param .u64 a, .param .u64 b, .param .u64 o)
{
  .reg .pred %p;
  .reg .b32 %r<2>;
  .reg .f32 %f<4>;
  .reg .b64 %rd<8>;
  mov.u32 %r1, %tid.x;
  setp.ge.u32 %p, %r1, 4;
  @%p bra DONE;
  ld.param.u64 %rd1, [a];
  ld.param.u64 %rd2, [b];
  ld.param.u64 %rd3, [o];
  cvta.to.global.u64 %rd1, %rd1;
  cvta.to.global.u64 %rd2, %rd2;
  cvta.to.global.u64 %rd3, %rd3;
  mul.wide.u32 %rd4, %r1, 4;
  add.s64 %rd5, %rd1, %rd4;
  add.s64 %rd6, %rd2, %rd4;
  add.s64 %rd7, %rd3, %rd4;
  ld.global.f32 %f1, [%rd5];
  ld.global.f32 %f2, [%rd6];
  add.f32 %f3, %f1, %f2;
  st.global.f32 [%rd7], %f3;
DONE:
  ret;
}

.visible .entry lt(.param .u64 c, .param .u64 n, .param .u64 p)
{
  .reg .pred %q;
  .reg .b32 %r<4>;
  .reg .b16 %h;
  .reg .b64 %rd<4>;
  ld.param.u64 %rd1, [c];
  ld.param.u64 %rd2, [n];
  ld.param.u64 %rd3, [p];
  cvta.to.global.u64 %rd1, %rd1;
  cvta.to.global.u64 %rd2, %rd2;
  cvta.to.global.u64 %rd3, %rd3;
  ld.global.s32 %r1, [%rd1];
  ld.global.s32 %r2, [%rd2];
  setp.lt.s32 %q, %r1, %r2;
  selp.u32 %r3, 1, 0, %q;
  cvt.u16.u32 %h, %r3;
  st.global.u8 [%rd3], %h;
  ret;
}

.visible .entry inc(.param .u64 c, .param .u64 o)
{
  .reg .b32 %r<3>;
  .reg .b64 %rd<3>;
  ld.param.u64 %rd1, [c];
  ld.param.u64 %rd2, [o];
  cvta.to.global.u64 %rd1, %rd1;
  cvta.to.global.u64 %rd2, %rd2;
  ld.global.s32 %r1, [%rd1];
  add.s32 %r2, %r1, 1;
  st.global.s32 [%rd2], %r2;
  ret;
}
EOF

# the hand-written PTX is valid for sm_90 (when ptxas is here to say so)
ptxas=$(command -v ptxas 2>/dev/null)
[ -z "$ptxas" ] && [ -x "${CUDA_HOME:-/usr/local/cuda}/bin/ptxas" ] && ptxas=${CUDA_HOME:-/usr/local/cuda}/bin/ptxas
if [ -n "$ptxas" ]; then
  expect "ptxas accepts the test PTX" 0 "" -- "$ptxas" -arch=sm_90 "$tmp/k.ptx" -o "$tmp/k.cubin"
fi

# make KIND TARGET NAME: $tmp/NAME.thunks with its kernel file
make_art() {
  local kind=$1 target=$2 name=$3
  if [ "$target" = host ]; then cp "$tmp/k.so" "$tmp/$name.host.so"; else cp "$tmp/k.ptx" "$tmp/$name.ptx"; fi
  if ! "$mk" "$kind" "$target" "$tmp/$name"; then
    bad "make_test_artifact $kind $target failed"
    return 1
  fi
}

for kind in add badsub loop layout tuple; do make_art $kind host $kind; done
make_art add sm_90 gadd
make_art loop sm_90 gloop
make_art loop-cb host loopcb
make_art loop-cb sm_90 gloopcb

A=$tmp/add.thunks
in2=("--input=4xf32=1 2 3 4" "--input=4xf32=10 20 30 40.5")

# ---- running on the host -----------------------------------------------------
expect "add" 0 "f32[4] {11, 22, 33, 44.5}" -- "$run" "$A" "${in2[@]}"
expect "add expected" 0 "" -- "$run" "$A" "${in2[@]}" "--expected-output=4xf32=11 22 33 44.5" --quiet
expect "add expected mismatch" 1 "does not match the expected output" -- \
  "$run" "$A" "${in2[@]}" "--expected-output=4xf32=11 22 33 44" --quiet
expect "add explicit host" 0 "" -- "$run" "$A" --platform=HOST "${in2[@]}" \
  "--expected-output=4xf32=11 22 33 44.5" --quiet
expect "add inputs without type" 0 "" -- "$run" "$A" "--input=1 2 3 4" "--input=-1 -2 -3 -4" \
  "--expected-output=4xf32=0 0 0 0" --quiet
expect "add npy output" 0 "" -- "$run" "$A" "${in2[@]}" "--output=@$tmp/o.npy"
expect "add npy round trip" 0 "" -- "$run" "$A" "--input=@$tmp/o.npy" "--input=4xf32=-11 -22 -33 -44.5" \
  "--expected-output=4xf32=0 0 0 0" --quiet
expect "add compare" 0 "output 0 f32[4]: max abs error 0" -- "$run" "$A" "${in2[@]}" --compare --quiet
expect "add compare random" 0 ": ok" -- "$run" "$A" --random-inputs --seed=7 --compare --quiet
expect "badsub compare" 1 "does not match the interpreter" -- \
  "$run" "$tmp/badsub.thunks" "${in2[@]}" --compare --quiet
expect "badsub compare report" 1 "MISMATCH" -- "$run" "$tmp/badsub.thunks" "${in2[@]}" --compare --quiet
expect "badsub within wide atol" 0 ": ok" -- "$run" "$tmp/badsub.thunks" \
  "--input=4xf32=0 0 0 0" "--input=4xf32=0.25 0 0 0" --compare --atol=0.6 --quiet

for n in 7:7 0:0 -3:0 1:1 100:100; do
  expect "loop n=${n%:*}" 0 "" -- "$run" "$tmp/loop.thunks" "--input=${n%:*}" \
    "--expected-output=s32=${n#*:}" --quiet
done
expect "loop compare random" 0 "output 0 s32[]: max abs error 0" -- \
  "$run" "$tmp/loop.thunks" --random-inputs --compare --quiet
expect "layout" 0 "" -- "$run" "$tmp/layout.thunks" "--input=[[1 2 3][4 5 6]]" \
  "--expected-output=3x2xf32=1 4 2 5 3 6" --quiet
expect "layout compare" 0 ": ok" -- "$run" "$tmp/layout.thunks" "--input=[[1 2 3][4 5 6]]" --compare
expect "tuple" 0 "" -- "$run" "$tmp/tuple.thunks" "--input=5 6 7 8" \
  "--expected-output=4xf32=5 6 7 8" "--expected-output=4xf32=1.5 1.5 1.5 1.5" --quiet
expect "tuple compare" 0 "output 1 f32[4]: max abs error 0" -- \
  "$run" "$tmp/tuple.thunks" --random-inputs --compare --quiet
expect "tuple output count" 1 "2 results, 1 --expected-output" -- "$run" "$tmp/tuple.thunks" \
  "--input=5 6 7 8" "--expected-output=4xf32=5 6 7 8" --quiet

# ---- the embedded HLO on the interpreter ---------------------------------------
expect "interpreter" 0 "" -- "$run" "$A" --platform=interpreter "${in2[@]}" \
  "--expected-output=4xf32=11 22 33 44.5" --quiet
expect "interpreter badsub" 0 "" -- "$run" "$tmp/badsub.thunks" --platform=interpreter \
  "${in2[@]}" "--expected-output=4xf32=-9 -18 -27 -36.5" --quiet

# ---- describe, timing, help ------------------------------------------------------
expect "describe kernel" 0 "add4" -- "$run" "$A" --describe
expect "describe target" 0 "host" -- "$run" "$A" --describe
expect "describe gpu without gpu" 0 "sm_90" -- "$run" "$tmp/gadd.thunks" --describe
expect "iterations" 0 "5 runs: min" -- "$run" "$A" "${in2[@]}" --iterations=5 --quiet
expect "device-resident" 0 "5 runs: min" -- "$run" "$A" "${in2[@]}" --iterations=5 --device-resident \
  "--expected-output=4xf32=11 22 33 44.5" --quiet
expect "back-to-back" 0 "back-to-back: 5 runs queued, one synchronization: " -- "$run" "$A" \
  "${in2[@]}" --iterations=5 --device-resident --back-to-back \
  "--expected-output=4xf32=11 22 33 44.5" --quiet
expect "back-to-back, a while loop" 0 "back-to-back: 3 runs queued" -- "$run" \
  "$tmp/loopcb.thunks" --input=7 --expected-output=s32=7 --iterations=3 --device-resident \
  --back-to-back --quiet
# command buffers (memset; cond kernel; body kernel and copy): the host runs
# their thunks in order, with or without --command-buffers
for n in 7:7 -3:0; do
  for cbf in on off; do
    expect "loop-cb n=${n%:*} $cbf" 0 "" -- "$run" "$tmp/loopcb.thunks" "--input=${n%:*}" \
      "--expected-output=s32=${n#*:}" --command-buffers=$cbf --quiet
  done
done
expect "loop-cb describe" 0 "kCommandBuffer" -- "$run" "$tmp/loopcb.thunks" --describe
expect "loop-cb profile" 0 "cmd-buffer" -- "$run" "$tmp/loopcb.thunks" --input=3 --profile --quiet
expect "bad --command-buffers" 2 "bad value for --command-buffers: yes (on or off)" -- \
  "$run" "$tmp/loopcb.thunks" --input=3 --command-buffers=yes
expect "profile" 0 "thunk profile: 3 runs on host (monotonic clock)" -- \
  "$run" "$tmp/loop.thunks" --input=3 --iterations=3 --profile --quiet
expect "profile memory" 0 "host memory: 512 B in one pool for the artifact's 2 allocations (parameters 4 B, constants 0 B, outputs 12 B, temp 0 B)" -- \
  "$run" "$tmp/loop.thunks" --input=3 --iterations=3 --profile --quiet
# the profile table and the trace, checked line by line and event by event
# (tests/profile_check.py): n=3 runs the cond 4 times and the body 3 times
loop_calls="zero=1 w=1 w/cond/lt=4 w/body/inc=3 w/body/c1=3"
loop_bytes="zero=4 w/cond/lt=9 w/body/inc=8 w/body/c1=8"
# profile_case LABEL ARTIFACT PLATFORM RUNS CALLS BYTES -- xhlo-run args...
profile_case() {
  local l=$1 art=$2 plat=$3 runs=$4 calls=$5 bytes=$6 out rc
  shift 7
  rm -f "$tmp/trace.json"
  out=$("$run" "$art" "$@" --iterations=$runs --profile "--trace=$tmp/trace.json" --quiet 2>&1)
  rc=$?
  if [ "$rc" -ne 0 ]; then
    bad "$l: exit $rc"
    printf '%s\n' "$out" | head -n 8 | sed 's/^/    /'
    return
  fi
  printf '%s\n' "$out" >"$tmp/profile.txt"
  if python3 tests/profile_check.py "$plat" "$runs" "$calls" "$bytes" "$tmp/profile.txt" \
       "$tmp/trace.json"; then
    ok
  else
    bad "$l: the profile or the trace is wrong"
    sed 's/^/    /' "$tmp/profile.txt"
  fi
}
profile_case "host profile loop" "$tmp/loop.thunks" host 2 "$loop_calls" "$loop_bytes" -- --input=3
profile_case "host profile loop x5" "$tmp/loop.thunks" host 5 "zero=1 w=1 w/cond/lt=1 w/body/*=0" \
  "zero=4 w/cond/lt=9" -- --input=0
profile_case "host profile add" "$A" host 3 "add4=1" "add4=48" -- "${in2[@]}"
profile_case "host profile tuple" "$tmp/tuple.thunks" host 4 "copy=1 b=1" "copy=32 b=16" -- \
  "--input=5 6 7 8"
# --trace alone times the thunks too, prints no table, and replaces the file
echo old >"$tmp/keep.json"
expect "trace alone" 0 "" -- "$run" "$A" "${in2[@]}" "--trace=$tmp/keep.json" --quiet
if python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); sys.exit(0 if len([e for e in d["traceEvents"] if e.get("cat")=="kernel"])==1 else 1)' "$tmp/keep.json"; then
  ok; else bad "--trace alone did not write one kernel event"; fi
out=$("$run" "$A" "${in2[@]}" "--trace=$tmp/keep.json" --quiet 2>&1)
if printf '%s' "$out" | grep -q "thunk profile"; then bad "--trace alone printed the profile"; else ok; fi
# a trace that cannot be written: a clear error before anything runs; a
# failed run leaves the old file and no temporary beside it
expect "trace unwritable" 1 "xhlo-run: --trace: cannot write '$tmp/no/such/dir/t.json'" -- \
  "$run" "$A" "${in2[@]}" "--trace=$tmp/no/such/dir/t.json"
out=$("$run" "$A" "${in2[@]}" "--trace=$tmp/no/such/dir/t.json" 2>&1)
if printf '%s' "$out" | grep -q "f32\[4\]"; then bad "trace unwritable: it ran anyway"; else ok; fi
mkdir -p "$tmp/tr"
echo old >"$tmp/tr/t.json"
expect "trace failed run" 1 "" -- "$run" "$A" "--input=4xf32=1 2 3 4" "--trace=$tmp/tr/t.json"
if [ "$(cat "$tmp/tr/t.json")" = old ] && [ "$(ls -A "$tmp/tr")" = t.json ]; then ok; else
  bad "a failed run changed the trace file or left a temporary: $(ls -A "$tmp/tr")"; fi
for w in --compare --iterations --device-resident --back-to-back --profile --trace --describe \
  host cuda interpreter 1e-3; do
  expect "help $w" 0 "$w" -- "$run" --help
done

# ---- refusals: the files ----------------------------------------------------------
expect "missing file" 1 "$tmp/nope.thunks" -- "$run" "$tmp/nope.thunks" --random-inputs
make_art needcpu host needcpu
expect "cpu lacks a feature" 1 "features xhlo-test-feature this CPU lacks" -- \
  "$run" "$tmp/needcpu.thunks" --random-inputs
# the add's 4 work units on 1 to 3 threads (XHLO_NUM_THREADS or --threads)
for t in 1 2 3; do
  expect "add on $t threads" 0 "" -- "$run" "$A" "${in2[@]}" --threads=$t \
    "--expected-output=4xf32=11 22 33 44.5" --quiet
  expect "add on XHLO_NUM_THREADS=$t" 0 "" -- env XHLO_NUM_THREADS=$t "$run" "$A" \
    "${in2[@]}" "--expected-output=4xf32=11 22 33 44.5" --quiet
done
for kind in corrupt trunc nokernel badkernel; do make_art add host $kind; done
size=$(wc -c <"$tmp/corrupt.thunks")
python3 - "$tmp/corrupt.thunks" <<'EOF'
import sys
p = sys.argv[1]
b = bytearray(open(p, 'rb').read())
i = len(b) // 2
b[i] ^= 0x01
open(p, 'wb').write(bytes(b))
EOF
expect "corrupted file" 1 "xhlo-run: " -- "$run" "$tmp/corrupt.thunks" --random-inputs
head -c $((size / 2)) "$tmp/add.thunks" >"$tmp/trunc.thunks"
expect "truncated file" 1 "xhlo-run: " -- "$run" "$tmp/trunc.thunks" --random-inputs
: >"$tmp/empty.thunks"
expect "empty file" 1 "xhlo-run: " -- "$run" "$tmp/empty.thunks" --random-inputs
printf 'HloModule m\n' >"$tmp/hlo.thunks"
expect "not an artifact" 1 "xhlo-run: " -- "$run" "$tmp/hlo.thunks" --random-inputs
rm "$tmp/nokernel.host.so"
expect "kernel file missing" 1 "nokernel.host.so" -- "$run" "$tmp/nokernel.thunks" --random-inputs
printf 'x' >>"$tmp/badkernel.host.so"
expect "kernel file mismatched" 1 "does not match" -- "$run" "$tmp/badkernel.thunks" --random-inputs
# a file named otherwise is still recognized by its magic
cp "$A" "$tmp/add.art"
expect "artifact by magic" 0 "" -- "$run" "$tmp/add.art" "${in2[@]}" \
  "--expected-output=4xf32=11 22 33 44.5" --quiet

# ---- refusals: inputs and platforms --------------------------------------------------
expect "input count" 1 "takes 2 inputs, 1 given" -- "$run" "$A" "--input=4xf32=1 2 3 4"
expect "input shape" 1 "input 1 is f32[3], expected f32[4]" -- \
  "$run" "$A" "--input=4xf32=1 2 3 4" "--input=3xf32=1 2 3"
expect "input type" 1 "input 0 is s32[4], expected f32[4]" -- \
  "$run" "$A" "--input=4xi32=1 2 3 4" "--input=4xf32=1 2 3 4"
expect "input file" 1 "xhlo-run: --input=@" -- "$run" "$A" "--input=@$tmp/none.npy" \
  "--input=4xf32=1 2 3 4"
expect "cuda on a host artifact" 1 "compiled for the host" -- "$run" "$A" --platform=cuda \
  --random-inputs
expect "host on a gpu artifact" 1 "compiled for sm_90" -- "$run" "$tmp/gadd.thunks" \
  --platform=host --random-inputs

# gpu_cases LABEL: the sm_90 artifacts on --platform=cuda give the right
# answers (on a real GPU, or on the mock driver below).
gpu_cases() {
  local l=$1
  expect "$l add" 0 "" -- "$run" "$tmp/gadd.thunks" "${in2[@]}" \
    "--expected-output=4xf32=11 22 33 44.5" --quiet
  expect "$l add compare" 0 ": ok" -- "$run" "$tmp/gadd.thunks" --random-inputs --compare --quiet
  for n in 5:5 -1:0; do
    expect "$l loop n=${n%:*}" 0 "" -- "$run" "$tmp/gloop.thunks" --platform=cuda \
      "--input=${n%:*}" "--expected-output=s32=${n#*:}" --quiet
    for cbf in on off; do
      expect "$l loop-cb n=${n%:*} $cbf" 0 "" -- "$run" "$tmp/gloopcb.thunks" \
        "--input=${n%:*}" "--expected-output=s32=${n#*:}" --command-buffers=$cbf --quiet
    done
  done
  expect "$l back-to-back" 0 "back-to-back: 4 runs queued, one synchronization: " -- "$run" \
    "$tmp/gadd.thunks" "${in2[@]}" "--expected-output=4xf32=11 22 33 44.5" --iterations=4 \
    --device-resident --back-to-back --quiet
  for cbf in on off; do
    expect "$l back-to-back loop-cb $cbf" 0 "back-to-back: 3 runs queued" -- "$run" \
      "$tmp/gloopcb.thunks" --input=5 --expected-output=s32=5 --command-buffers=$cbf \
      --iterations=3 --device-resident --back-to-back --quiet
  done
  expect "$l profile" 0 "thunk profile: 3 runs on cuda (CUDA events)" -- \
    "$run" "$tmp/gloop.thunks" --input=4 --iterations=3 --profile --quiet
  expect "$l profile memory" 0 "device memory: 512 B in one pool for the artifact's 2 allocations (parameters 4 B, constants 0 B, outputs 12 B, temp 0 B)" -- \
    "$run" "$tmp/gloop.thunks" --input=4 --iterations=3 --profile --quiet
  profile_case "$l profile loop" "$tmp/gloop.thunks" cuda 3 "$loop_calls" "$loop_bytes" -- --input=3
  profile_case "$l profile add" "$tmp/gadd.thunks" cuda 2 "add4=1" "add4=48" -- "${in2[@]}"
  printf 'garbage\n' >"$tmp/gbad.ptx"
  "$mk" add sm_90 "$tmp/gbad" || bad "make_test_artifact for gbad failed"
  expect "$l bad ptx" 1 "cannot JIT-compile the PTX" -- "$run" "$tmp/gbad.thunks" --random-inputs
}

# --platform=cuda (the default for an sm_90 artifact): without a usable GPU a
# clear one-line error; with one, the right answers.
out=$("$run" "$tmp/gadd.thunks" "${in2[@]}" 2>&1)
rc=$?
if printf '%s' "$out" | grep -qE 'cannot load libcuda.so.1: .*is the NVIDIA driver installed\?|no CUDA device'; then
  if [ "$rc" -eq 1 ] && [ "$(printf '%s\n' "$out" | wc -l)" -eq 1 ] &&
     printf '%s' "$out" | grep -q '^xhlo-run: --platform=cuda: '; then
    ok
  else
    bad "cuda without a GPU: exit $rc, want 1 and one line 'xhlo-run: --platform=cuda: ...'"
    printf '%s\n' "$out" | head -n 4 | sed 's/^/    /'
  fi
  expect "cuda without a GPU, explicit" 1 "xhlo-run: --platform=cuda: " -- \
    "$run" "$tmp/gloop.thunks" --platform=cuda --input=3
else
  echo "check-xhlo-run-thunks: a CUDA device is present; running the GPU cases"
  gpu_cases gpu
fi

# The CUDA platform's plumbing (driver entry points looked up by name,
# kernel parameters as pointers to device addresses, launch dimensions, the
# JIT error log, events, no device) against a mock libcuda.so.1 whose
# "kernels" are C functions named like the PTX entries.
mkdir -p "$tmp/mock"
cat >"$tmp/mock/cuda.c" <<'EOF'
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
typedef int CUresult;
typedef unsigned long long CUdeviceptr;
typedef struct { const char *name; void (*fn)(void **params); } Fn;
static int nodev(void) { return getenv("MOCK_CUDA_NO_DEVICE") != NULL; }
#define P(k, T) ((T *)(size_t)*(CUdeviceptr *)params[k])
static void add4(void **params) {
  for (int i = 0; i < 4; i++) P(2, float)[i] = P(0, float)[i] + P(1, float)[i];
}
static void lt(void **params) { *P(2, unsigned char) = *P(0, int) < *P(1, int); }
static void inc(void **params) { *P(1, int) = *P(0, int) + 1; }
static Fn fns[] = {{"add4", add4}, {"lt", lt}, {"inc", inc}};
CUresult cuInit(unsigned f) { return nodev() ? 100 : 0; }
CUresult cuDeviceGetCount(int *n) { *n = !nodev(); return 0; }
CUresult cuDeviceGet(int *d, int i) { *d = i; return i ? 101 : 0; }
CUresult cuDeviceGetName(char *s, int n, int d) { snprintf(s, n, "mock"); return 0; }
CUresult cuDevicePrimaryCtxRetain(void **c, int d) { *c = (void *)1; return 0; }
CUresult cuDevicePrimaryCtxRelease_v2(int d) { return 0; }
CUresult cuCtxSetCurrent(void *c) { return c == (void *)1 ? 0 : 1; }
CUresult cuCtxGetCurrent(void **c) { *c = (void *)1; return 0; }
CUresult cuCtxSynchronize(void) { return 0; }
/* a compute capability 9.0 GPU (sm_90) */
CUresult cuDeviceGetAttribute(int *v, int attr, int dev) {
  if (attr != 75 && attr != 76) return 1;
  *v = attr == 75 ? 9 : 0;
  return 0;
}
CUresult cuModuleLoadDataEx(void **m, const void *img, unsigned n, int *opts, void **vals) {
  if (!strstr(img, ".entry") || strstr(img, ".target sm_100")) {
    char *log = NULL;
    size_t size = 0;
    for (unsigned k = 0; k < n; k++) {
      if (opts[k] == 5) log = vals[k];
      if (opts[k] == 6) size = (size_t)vals[k];
    }
    if (log && size) snprintf(log, size, "ptxas application ptx input, line 1; fatal: mock");
    return 218;
  }
  *m = strdup(img);
  return 0;
}
CUresult cuModuleUnload(void *m) { free(m); return 0; }
CUresult cuModuleGetFunction(void **f, void *m, const char *name) {
  char want[128];
  snprintf(want, sizeof want, ".entry %s(", name);
  if (!strstr(m, want)) return 500;
  for (size_t k = 0; k < sizeof fns / sizeof fns[0]; k++)
    if (strcmp(fns[k].name, name) == 0) { *f = &fns[k]; return 0; }
  return 500;
}
CUresult cuFuncSetAttribute(void *f, int a, int v) { return 0; }
CUresult cuMemAlloc_v2(CUdeviceptr *p, size_t n) {
  *p = (CUdeviceptr)(size_t)calloc(1, n);
  return 0;
}
CUresult cuMemFree_v2(CUdeviceptr p) { free((void *)(size_t)p); return 0; }
CUresult cuMemcpyHtoD_v2(CUdeviceptr d, const void *s, size_t n) {
  memcpy((void *)(size_t)d, s, n);
  return 0;
}
CUresult cuMemcpyDtoH_v2(void *d, CUdeviceptr s, size_t n) {
  memcpy(d, (void *)(size_t)s, n);
  return 0;
}
CUresult cuMemcpyDtoD_v2(CUdeviceptr d, CUdeviceptr s, size_t n) {
  memmove((void *)(size_t)d, (void *)(size_t)s, n);
  return 0;
}
CUresult cuMemsetD32_v2(CUdeviceptr d, unsigned v, size_t n) {
  for (size_t k = 0; k < n; k++) ((unsigned *)(size_t)d)[k] = v;
  return 0;
}
CUresult cuLaunchKernel(void *f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                        unsigned by, unsigned bz, unsigned sh, void *st, void **params,
                        void **extra) {
  if (!gx || !gy || !gz || !bx || !by || !bz || extra) return 1;
  ((Fn *)f)->fn(params);
  return 0;
}
CUresult cuEventCreate(void **e, unsigned fl) { *e = calloc(1, sizeof(double)); return 0; }
CUresult cuEventDestroy_v2(void *e) { free(e); return 0; }
CUresult cuEventRecord(void *e, void *s) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  *(double *)e = ts.tv_sec * 1e3 + ts.tv_nsec * 1e-6;
  return 0;
}
CUresult cuEventSynchronize(void *e) { return 0; }
CUresult cuEventElapsedTime(float *ms, void *a, void *b) {
  *ms = (float)(*(double *)b - *(double *)a);
  return 0;
}
CUresult cuGetErrorString(CUresult r, const char **s) { *s = "mock error"; return 0; }
CUresult cuGetErrorName(CUresult r, const char **s) {
  *s = r == 218 ? "CUDA_ERROR_INVALID_PTX" : "CUDA_ERROR_MOCK";
  return 0;
}
EOF
if ${CC:-cc} -shared -fPIC -O1 -o "$tmp/mock/libcuda.so.1" "$tmp/mock/cuda.c"; then
  ok
  saved_ld=${LD_LIBRARY_PATH-}
  export LD_LIBRARY_PATH="$tmp/mock${saved_ld:+:$saved_ld}"
  gpu_cases mock
  expect "mock JIT log" 1 "fatal: mock" -- "$run" "$tmp/gbad.thunks" --random-inputs
  sed 's/^\.target sm_[0-9a-z]*/.target sm_100a/' "$tmp/k.ptx" >"$tmp/gnew.ptx"
  "$mk" add sm_90 "$tmp/gnew" || bad "make_test_artifact for gnew failed"
  expect "mock PTX for a newer GPU" 1 \
    ".target sm_100a, for a newer GPU than this one (sm_90): compile it for this GPU with xhloc --arch=sm_90" \
    -- "$run" "$tmp/gnew.thunks" --random-inputs
  expect "mock no device" 1 "xhlo-run: --platform=cuda: no CUDA device" -- \
    env MOCK_CUDA_NO_DEVICE=1 "$run" "$tmp/gadd.thunks" --random-inputs
  export LD_LIBRARY_PATH="$saved_ld"
else
  bad "cannot compile the mock libcuda.so.1"
fi

# ---- an artifact written by xhloc (when it is built) ------------------------------
# while (i < 5) { i += 1; x += x }: x comes back times 32.
if [ -x "$bin/xhloc" ]; then
  cat >"$tmp/wl.hlo" <<'EOF'
HloModule loop

cond {
  p = (s32[], f32[4]) parameter(0)
  c = s32[] get-tuple-element(p), index=0
  n = s32[] constant(5)
  ROOT lt = pred[] compare(c, n), direction=LT
}

body {
  p = (s32[], f32[4]) parameter(0)
  c = s32[] get-tuple-element(p), index=0
  x = f32[4] get-tuple-element(p), index=1
  one = s32[] constant(1)
  c1 = s32[] add(c, one)
  x1 = f32[4] add(x, x)
  ROOT t = (s32[], f32[4]) tuple(c1, x1)
}

ENTRY e {
  x = f32[4] parameter(0)
  zero = s32[] constant(0)
  init = (s32[], f32[4]) tuple(zero, x)
  ROOT w = (s32[], f32[4]) while(init), condition=cond, body=body
}
EOF
  if "$bin/xhloc" --target=host -o "$tmp/wl" "$tmp/wl.hlo" >"$tmp/xhloc.out" 2>&1; then
    ok
    expect "xhloc loop" 0 "" -- "$run" "$tmp/wl.thunks" "--input=1 2 3 -4" \
      "--expected-output=s32=5" "--expected-output=4xf32=32 64 96 -128" --quiet
    expect "xhloc loop compare" 0 "output 1 f32[4]: max abs error 0" -- \
      "$run" "$tmp/wl.thunks" --random-inputs --compare --quiet
    expect "xhloc loop profile" 0 "while" -- "$run" "$tmp/wl.thunks" --random-inputs \
      --profile --quiet
    # five trips: the cond's thunks run 6 times a run, the body's 5
    profile_case "xhloc loop profile" "$tmp/wl.thunks" host 3 "w=1 w/cond/*=6 w/body/*=5" "" \
      -- --random-inputs
    # thread-count independence: kernels of many work units (a loop
    # kernel, row and column reductions, a fused softmax, whose four
    # kernels run as one chain) give the same bits on 1, 2 and 5 threads,
    # and agree with the interpreter
    cat >"$tmp/par.hlo" <<'EOF'
HloModule par

add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}

max {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT m = f32[] maximum(a, b)
}

ENTRY e {
  x = f32[300,517] parameter(0)
  ninf = f32[] constant(-inf)
  mx = f32[300] reduce(x, ninf), dimensions={1}, to_apply=max
  mb = f32[300,517] broadcast(mx), dimensions={0}
  d = f32[300,517] subtract(x, mb)
  e = f32[300,517] exponential(d)
  z = f32[] constant(0)
  s = f32[300] reduce(e, z), dimensions={1}, to_apply=add
  sb = f32[300,517] broadcast(s), dimensions={0}
  sm = f32[300,517] divide(e, sb)
  cs = f32[517] reduce(x, z), dimensions={0}, to_apply=add
  t = f32[517,300] transpose(sm), dimensions={1,0}
  ROOT r = (f32[300,517], f32[517], f32[517,300]) tuple(sm, cs, t)
}
EOF
    if "$bin/xhloc" --target=host -o "$tmp/par" "$tmp/par.hlo" >"$tmp/xhloc.out" 2>&1; then
      ok
      expect "softmax chained" 0 "kernel = input_reduce_fusion_33_chain, launch dimensions = blocks: {5," -- \
        "$run" "$tmp/par.thunks" --describe
      for t in 1 2 5; do
        expect "threads=$t run" 0 "" -- "$run" "$tmp/par.thunks" --random-inputs --threads=$t \
          "--output=@$tmp/par$t.0.bin" "--output=@$tmp/par$t.1.bin" "--output=@$tmp/par$t.2.bin" --quiet
      done
      for t in 2 5; do
        for k in 0 1 2; do
          if cmp -s "$tmp/par1.$k.bin" "$tmp/par$t.$k.bin"; then ok; else
            bad "output $k on $t threads differs from 1 thread"; fi
        done
      done
      expect "threads compare" 0 ": ok" -- "$run" "$tmp/par.thunks" --random-inputs --threads=3 \
        --compare --quiet
      # xhloc's own linker (the default) and the system linker give
      # kernels that compute the same bits; with exact math the kernels
      # call libm through the PLT
      for lk in xhloc system; do
        if "$bin/xhloc" --target=host --host-math=exact --host-linker=$lk -o "$tmp/lk$lk" \
          "$tmp/par.hlo" >"$tmp/xhloc.out" 2>&1; then
          ok
          expect "host-linker=$lk run" 0 "" -- "$run" "$tmp/lk$lk.thunks" --random-inputs \
            "--output=@$tmp/lk$lk.0.bin" "--output=@$tmp/lk$lk.1.bin" \
            "--output=@$tmp/lk$lk.2.bin" --quiet
        else
          bad "xhloc --host-linker=$lk failed on par.hlo"
        fi
      done
      for k in 0 1 2; do
        if cmp -s "$tmp/lkxhloc.$k.bin" "$tmp/lksystem.$k.bin"; then ok; else
          bad "output $k differs between --host-linker=xhloc and system"; fi
      done
      if readelf -d "$tmp/lkxhloc.host.so" 2>/dev/null | grep -q "NEEDED.*libm"; then ok; else
        bad "the xhloc-linked kernel file does not need libm"; fi
      # a result of no elements is written as an empty .npy / .bin
      cat >"$tmp/empty.hlo" <<'EOF'
HloModule empty

ENTRY e {
  p = s32[2] parameter(0)
  s = s32[0] slice(p), slice={[0:0]}
  n = s32[2] negate(p)
  ROOT t = (s32[0], s32[2]) tuple(s, n)
}
EOF
      if "$bin/xhloc" --target=host -o "$tmp/empty" "$tmp/empty.hlo" >"$tmp/xhloc.out" 2>&1; then
        expect "empty result written" 0 "" -- "$run" "$tmp/empty.thunks" "--input=3 4" \
          "--output=@$tmp/empty.0.npy" "--output=@$tmp/empty.1.bin" --quiet
        if [ -f "$tmp/empty.0.npy" ] && [ "$(wc -c <"$tmp/empty.1.bin")" -eq 8 ]; then ok; else
          bad "the empty result's .npy or the other result's .bin is missing"; fi
      else
        bad "xhloc --target=host failed on a module with an empty result"
      fi
    else
      bad "xhloc --target=host -o failed on par.hlo"
      head -n 4 "$tmp/xhloc.out" | sed 's/^/    /'
    fi
  else
    bad "xhloc --target=host -o failed on a while loop"
    head -n 4 "$tmp/xhloc.out" | sed 's/^/    /'
  fi
else
  echo "check-xhlo-run-thunks: $bin/xhloc is not built; the xhloc-written artifact is not tested"
fi

# ---- usage errors (exit 2) ----------------------------------------------------------
expect "iterations zero" 2 "--iterations" -- "$run" "$A" --random-inputs --iterations=0
expect "iterations junk" 2 "--iterations" -- "$run" "$A" --random-inputs --iterations=x
expect "compare on hlo" 2 "compiled artifacts" -- "$run" "$tmp/k.hlo" --compare
expect "device-resident on hlo" 2 "compiled artifacts" -- "$run" "$tmp/k.hlo" --device-resident
expect "back-to-back alone" 2 \
  "--back-to-back needs --iterations=N (N above 1) and --device-resident" \
  -- "$run" "$A" --random-inputs --back-to-back
expect "back-to-back, one iteration" 2 "--back-to-back needs" -- "$run" "$A" --random-inputs \
  --iterations=1 --device-resident --back-to-back
expect "back-to-back with profile" 2 "--back-to-back and --profile exclude each other" -- \
  "$run" "$A" --random-inputs --iterations=3 --device-resident --back-to-back --profile
expect "back-to-back with sync-each-thunk" 2 "--back-to-back and --sync-each-thunk" -- \
  "$run" "$A" --random-inputs --iterations=3 --device-resident --back-to-back --sync-each-thunk
expect "host on hlo" 2 "xhloc -o PREFIX" -- "$run" "$tmp/k.hlo" --platform=host
expect "profile on interpreter" 2 "--platform=host or cuda" -- \
  "$run" "$A" --platform=interpreter --profile --random-inputs
expect "trace on interpreter" 2 "--platform=host or cuda" -- \
  "$run" "$A" --platform=interpreter --trace=$tmp/i.json --random-inputs
expect "trace on hlo" 2 "compiled artifacts" -- "$run" "$tmp/k.hlo" --trace=$tmp/i.json
expect "trace empty" 2 "--trace needs a file name" -- "$run" "$A" --trace= --random-inputs
expect "bad platform" 2 "unknown --platform" -- "$run" "$A" --platform=tpu
expect "random and input" 2 "exclude" -- "$run" "$A" --random-inputs "--input=1"

echo "check-xhlo-run-thunks: $passed passed, $failed failed"
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
