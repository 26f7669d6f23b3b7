#!/usr/bin/env bash
# check-xhlo-run.sh - xhlo-run's command line on the interpreter platform:
# input spec forms, .npy files written by NumPy (every dtype, Fortran order,
# big-endian, format 2.0), raw .bin files, output files (byte-identical .npy
# round trips), --random-inputs, --expected-output with tolerances, and the
# errors and exit codes (1 input or mismatch, 2 usage).
#
# Fixtures: testdata/xhlo-run/ (npy/ written by gen_npy.py with NumPy).
# Run from the repository root; binaries in ${XHLOC_BIN:-build/bin}.
set -u
bin=${XHLOC_BIN:-build/bin}
run=$bin/xhlo-run
xhloc=$bin/xhloc
fx=testdata/xhlo-run
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
    printf '%s\n' "$out" | head -n 6 | sed 's/^/    /'
  elif [ -n "$pat" ] && ! printf '%s' "$out" | grep -qF -- "$pat"; then
    bad "$name: output lacks '$pat'"
    printf '%s\n' "$out" | head -n 6 | sed 's/^/    /'
  else
    ok
  fi
}

if [ ! -x "$run" ]; then
  echo "check-xhlo-run: FAIL: $run is missing (run make)"
  echo "0 passed, 1 failed"
  exit 1
fi

# A module that copies one T[2,3] parameter to its result.
copy_module() { # type -> path
  local p=$tmp/copy_$1.hlo
  printf 'HloModule copy_%s\n\nENTRY e {\n  p = %s[2,3] parameter(0)\n  ROOT c = %s[2,3] copy(p)\n}\n' \
    "$1" "$1" "$1" >"$p"
  echo "$p"
}

# --- every NumPy dtype: read, compare with the text form, write back -------
while IFS=$'\t' read -r t values; do
  m=$(copy_module "$t")
  expect "npy $t read" 0 "" -- "$run" "$m" --input=@$fx/npy/$t.npy \
    "--expected-output=2x3x$t=$values" --quiet
  expect "npy $t text" 0 "" -- "$run" "$m" "--input=2x3x$t=$values" \
    --expected-output=@$fx/npy/$t.npy --quiet
  expect "npy $t write" 0 "" -- "$run" "$m" --input=@$fx/npy/$t.npy --output=@$tmp/out_$t.npy
  if cmp -s "$tmp/out_$t.npy" "$fx/npy/$t.npy"; then ok; else bad "npy $t: written file differs from NumPy's"; fi
done <"$fx/npy/values.txt"

f32vals="0.1 -1.5 3.4e38 1e-40 -0 2.5"
m=$(copy_module f32)
for v in fortran bigendian v2; do
  expect "npy f32_$v" 0 "" -- "$run" "$m" --input=@$fx/npy/f32_$v.npy \
    "--expected-output=2x3xf32=$f32vals" --quiet
done
mb=$(copy_module bf16)
expect "npy bf16 (void dtype)" 0 "" -- "$run" "$mb" --input=@$fx/npy/bf16.npy \
  "--expected-output=2x3xbf16=1 -2.5 0.1 3 1e30 -0" --quiet
expect "bin bf16" 0 "" -- "$run" "$mb" --input=2x3xbf16=@$fx/npy/bf16.bin \
  "--expected-output=2x3xbf16=1 -2.5 0.1 3 1e30 -0" --quiet
expect "bin write" 0 "" -- "$run" "$mb" --input=2x3xbf16=@$fx/npy/bf16.bin --output=@$tmp/o.bin
if cmp -s "$tmp/o.bin" "$fx/npy/bf16.bin"; then ok; else bad "bin bf16: written bytes differ"; fi
expect "npy bf16 write" 0 "" -- "$run" "$mb" --input=@$fx/npy/bf16.npy --output=@$tmp/bf.npy
expect "npy bf16 reread" 0 "" -- "$run" "$mb" --input=@$tmp/bf.npy --expected-output=@$fx/npy/bf16.npy --quiet

# --- text spec forms -----------------------------------------------------------
expect "nested" 0 "" -- "$run" "$m" "--input=[[1 2 3][4 5 6]]" \
  "--expected-output=2x3xf32=1,2,3,4,5,6" --quiet
expect "untyped" 0 "" -- "$run" "$m" "--input=1 2 3 4 5 6" "--expected-output=[[1 2 3][4 5 6]]" --quiet
expect "zero fill" 0 "" -- "$run" "$m" "--input=2x3xf32=1 2" "--expected-output=2x3xf32=1 2 0 0 0 0" --quiet
ms=$(copy_module s32)
expect "iree names" 0 "" -- "$run" "$ms" "--input=2x3xi32=1 -2 3 4 5 6" "--expected-output=2x3xs32=1 -2 3 4 5 6" --quiet
expect "print" 0 "f32[2,3] {
  { 1, 2, 3 },
  { 4, 5, 6 }
}" -- "$run" "$m" "--input=2x3xf32=1 2 3 4 5 6"
expect "print dash" 0 "s32[2,3] {" -- "$run" "$ms" "--input=2x3xs32=1 2 3 4 5 6" --output=-
expect "skip output" 0 "" -- "$run" "$ms" "--input=2x3xs32=1 2 3 4 5 6" --output=

# tuple parameters are flattened
tp=$tmp/tuple.hlo
cat >"$tp" <<'EOF'
HloModule tuple_param

ENTRY e {
  p = (f32[2], (s32[], pred[3])) parameter(0)
  q = f32[] parameter(1)
  a = f32[2] get-tuple-element(p), index=0
  b = (s32[], pred[3]) get-tuple-element(p), index=1
  c = s32[] get-tuple-element(b), index=0
  d = pred[3] get-tuple-element(b), index=1
  ROOT t = (f32[], pred[3], s32[], f32[2]) tuple(q, d, c, a)
}
EOF
expect "tuple params" 0 "" -- "$run" "$tp" "--input=2xf32=1 2" "--input=s32=-7" \
  "--input=3xpred=true false 1" "--input=f32=0.5" "--expected-output=f32=0.5" \
  "--expected-output=3xpred=1 0 1" "--expected-output=s32=-7" "--expected-output=2xf32=1 2" --quiet
expect "tuple output files" 0 "" -- "$run" "$tp" "--input=2xf32=1 2" "--input=s32=-7" \
  "--input=3xpred=1 0 1" "--input=f32=0.5" --output=- --output=@$tmp/p.npy --output= --output=@$tmp/a.bin
if [ -s "$tmp/p.npy" ] && [ "$(stat -c %s "$tmp/a.bin")" = 8 ]; then ok; else bad "tuple output files not written"; fi

# --- tolerances and mismatches --------------------------------------------------
expect "within tol" 0 "" -- "$run" "$m" "--input=2x3xf32=1 2 3 4 5 6" \
  "--expected-output=2x3xf32=1.001 2 3 4 5 6" --atol=0 --rtol=0.002 --quiet
expect "mismatch" 1 "first at [0,0]: got 1, expected 1.001" -- "$run" "$m" "--input=2x3xf32=1 2 3 4 5 6" \
  "--expected-output=2x3xf32=1.001 2 3 4 5 6" --quiet
expect "nan equals nan" 0 "" -- "$run" "$m" "--input=2x3xf32=nan 2 3 4 5 inf" \
  "--expected-output=2x3xf32=nan 2 3 4 5 inf" --quiet
expect "inf mismatch" 1 "differ" -- "$run" "$m" "--input=2x3xf32=1 2 3 4 5 inf" \
  "--expected-output=2x3xf32=1 2 3 4 5 -inf" --atol=1e30 --quiet
expect "int exact" 1 "got 6, expected 7" -- "$run" "$ms" "--input=2x3xs32=1 2 3 4 5 6" \
  "--expected-output=2x3xs32=1 2 3 4 5 7" --atol=10 --quiet

# --- random inputs ------------------------------------------------------------
r1=$("$run" "$m" --random-inputs 2>&1)
r2=$("$run" "$m" --random-inputs --seed=42 2>&1)
r3=$("$run" "$m" --random-inputs --seed=7 2>&1)
if [ "$r1" = "$r2" ] && [ "$r1" != "$r3" ]; then ok; else bad "random inputs: not deterministic per seed"; fi
gi=$tmp/gather.hlo
cat >"$gi" <<'EOF'
HloModule random_index

ENTRY e {
  x = f32[3,50] parameter(0)
  i = s32[] parameter(1)
  z = s32[] constant(0)
  ROOT d = f32[3,1] dynamic-slice(x, z, i), dynamic_slice_sizes={3,1}
}
EOF
expect "random index" 0 "f32[3,1]" -- "$run" "$gi" --random-inputs

# --- errors ----------------------------------------------------------------------
expect "input count" 1 "takes 1 input, 2 given" -- "$run" "$m" "--input=2x3xf32=1" "--input=f32=1"
expect "no inputs" 1 "takes 1 input, 0 given" -- "$run" "$m"
expect "input shape" 1 "input 0 is f32[3], expected f32[2,3]" -- "$run" "$m" "--input=3xf32=1 2 3"
expect "input type" 1 "expected f32[2,3]" -- "$run" "$m" "--input=2x3xs32=1 2 3 4 5 6"
expect "npy type" 1 "input 0 is s32[2,3], expected f32[2,3]" -- "$run" "$m" --input=@$fx/npy/s32.npy
expect "bad value" 1 "not a f32 value" -- "$run" "$m" "--input=2x3xf32=1 2 x"
expect "too many values" 1 "more than 6 values" -- "$run" "$m" "--input=2x3xf32=1 2 3 4 5 6 7"
expect "missing file" 1 "cannot open" -- "$run" "$m" --input=@$tmp/nothere.npy
expect "bad magic" 1 "bad magic" -- "$run" "$m" --input=@$fx/npy/bad_magic.npy
expect "truncated npy" 1 "shorter than its header" -- "$run" "$m" --input=@$fx/npy/truncated.npy
expect "bad npy header" 1 "no 'shape'" -- "$run" "$m" --input=@$fx/npy/bad_header.npy
printf '12345' >"$tmp/five.bin"
expect "bin size" 1 "five.bin has 5 bytes, bf16 needs 12" -- "$run" "$mb" --input=2x3xbf16=@$tmp/five.bin
expect "output count" 1 "1 result, 2 --output given" -- "$run" "$m" "--input=2x3xf32=1" --output=- --output=-
expect "expected count" 1 "--expected-output given" -- "$run" "$m" "--input=2x3xf32=1" \
  --expected-output=2x3xf32=1 --expected-output=2x3xf32=1
expect "parse error" 1 "error" -- "$run" "$fx/npy/values.txt" --platform=interpreter
expect "missing module" 1 "cannot open" -- "$run" "$tmp/none.hlo"
expect "input budget" 1 "the inputs need 24 bytes, more than the memory budget of 10 bytes" -- \
  "$run" "$m" --random-inputs --mem-budget=10
neg=$tmp/neg.hlo
printf 'HloModule neg\n\nENTRY e {\n  p = f32[2,3] parameter(0)\n  ROOT n = f32[2,3] negate(p)\n}\n' >"$neg"
expect "run budget" 1 "memory budget of 40 bytes exceeded" -- "$run" "$neg" --random-inputs --mem-budget=40
# a compiled artifact whose inputs could never fit: refused before anything
# is allocated (the bytes named), exit 1, no abort
huge=$tmp/huge.hlo
printf 'HloModule huge\nENTRY e {\n  p = f32[4097,4097,4097,4097,3] parameter(0)\n  ROOT n = f32[4097,4097,4097,4097,3] negate(p)\n}\n' >"$huge"
if "$xhloc" --target=host -o "$tmp/huge" "$huge" 2>"$tmp/huge.err"; then
  expect "huge artifact budget" 1 "the inputs need 3380999463567372 bytes, more than the memory budget of 2000000000 bytes" -- \
    "$run" "$tmp/huge.thunks" --random-inputs --mem-budget=2000000000
  expect "huge artifact default budget" 1 "the inputs need 3380999463567372 bytes, more than the memory budget" -- \
    "$run" "$tmp/huge.thunks" --random-inputs
else
  bad "xhloc --target=host of f32[4097,4097,4097,4097,3]: $(head -c 200 "$tmp/huge.err")"
fi

# --- reduction order ---------------------------------------------------------------
# A bf16 sum of 256 and 63 ones: in one pass every 256 + 1 rounds back to 256
# (bf16 keeps 8 significant bits); in XLA's CPU order (windows of 32 first)
# the second window's 32 ones add up exactly and 256 + 32 = 288 is a bf16.
red=$tmp/red.hlo
cat >"$red" <<'HLO'
HloModule red

add {
  a = bf16[] parameter(0)
  b = bf16[] parameter(1)
  ROOT s = bf16[] add(a, b)
}

ENTRY e {
  p = bf16[64] parameter(0)
  z = bf16[] constant(0)
  ROOT r = bf16[] reduce(p, z), dimensions={0}, to_apply=add
}
HLO
ones="256$(printf ' 1%.0s' $(seq 63))"
expect "reduction order xla-cpu" 0 "" -- "$run" "$red" "--input=$ones" --expected-output=bf16=288 \
  --atol=0 --rtol=0 --quiet
expect "reduction order default" 0 "bf16[] 288" -- "$run" "$red" "--input=$ones"
expect "reduction order in-order" 0 "bf16[] 256" -- "$run" "$red" "--input=$ones" \
  --reduction-order=in-order
expect "bad reduction order" 2 "bad value for --reduction-order: tree" -- "$run" "$red" \
  "--input=$ones" --reduction-order=tree
# an f32 sum XLA's CPU gives its reduction library (add over 4096 elements
# or more) is reduced in windows of 32 too: 2^25 ones add up to 2^25, where
# one pass in order stops at 2^24 (16777216 + 1 rounds back to 16777216)
big=$tmp/big.hlo
cat >"$big" <<'HLO'
HloModule big

add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}

ENTRY e {
  one = f32[] constant(1)
  x = f32[32768,1024] broadcast(one), dimensions={}
  z = f32[] constant(0)
  ROOT r = f32[] reduce(x, z), dimensions={0,1}, to_apply=add
}
HLO
expect "library reduce, xla-cpu order" 0 "f32[] 33554432" -- "$run" "$big"
expect "library reduce, in order" 0 "f32[] 16777216" -- "$run" "$big" --reduction-order=in-order
# and, as XLA's library does, it applies the init value once (its windows
# start from the reducer's identity): 8192 ones and init 5 give 8197, where
# an init in each of the 256 windows would give 9477
init=$tmp/init.hlo
cat >"$init" <<'HLO'
HloModule init

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
  one = f32[] constant(1)
  x = f32[8192] broadcast(one), dimensions={}
  i = f32[] parameter(0)
  s = f32[] reduce(x, i), dimensions={0}, to_apply=add
  m = f32[] reduce(x, i), dimensions={0}, to_apply=max
  ROOT t = (f32[], f32[]) tuple(s, m)
}
HLO
expect "library reduce, init once" 0 "f32[] 8197" -- "$run" "$init" --input=5
expect "library reduce, max with init" 0 "f32[] 5" -- "$run" "$init" --input=5
# a sum of one element per result with a zero init is the element, as XLA's
# simplifier makes it (-0 stays -0); in order, HLO's +0 + -0 is +0
one=$tmp/one.hlo
cat >"$one" <<'HLO'
HloModule one

add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}

ENTRY e {
  x = f32[2,1] parameter(0)
  z = f32[] constant(0)
  ROOT r = f32[2] reduce(x, z), dimensions={1}, to_apply=add
}
HLO
expect "one-element sum, xla-cpu" 0 "f32[2] {-0, 3}" -- "$run" "$one" "--input=2x1xf32=-0 3"
expect "one-element sum, in order" 0 "f32[2] {0, 3}" -- "$run" "$one" "--input=2x1xf32=-0 3" \
  --reduction-order=in-order
# the interpreter's large products share their row blocks among threads;
# the bits do not depend on how many (--threads, XHLO_NUM_THREADS)
mm=$tmp/mm.hlo
cat >"$mm" <<'HLO'
HloModule mm

ENTRY e {
  a = f32[400,300] parameter(0)
  b = f32[300,500] parameter(1)
  ROOT d = f32[400,500] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}
}
HLO
for t in 1 3; do
  "$run" "$mm" --random-inputs --threads=$t --quiet "--output=@$tmp/mm$t.npy" || bad "dot, --threads=$t"
done
XHLO_NUM_THREADS=2 "$run" "$mm" --random-inputs --quiet "--output=@$tmp/mm2.npy" ||
  bad "dot, XHLO_NUM_THREADS=2"
if cmp -s "$tmp/mm1.npy" "$tmp/mm3.npy" && cmp -s "$tmp/mm1.npy" "$tmp/mm2.npy"; then ok
else bad "dot: results differ between 1, 2 and 3 threads"; fi
# --compare runs the interpreter in the same order as the host artifact
if "$xhloc" --target=host "$red" -o "$tmp/red" >/dev/null 2>&1; then
  expect "reduction order compare" 0 "" -- "$run" "$tmp/red.thunks" "--input=$ones" --compare \
    --atol=0 --rtol=0 --quiet
else
  bad "xhloc --target=host $red"
fi

# --- sort order ----------------------------------------------------------------------
# 17 keys full of ties, sorted unstably with their positions: XLA's CPU
# (std::sort: one partition, then an insertion sort) leaves the ties in the
# order testdata/eval/xla_sort_unstable.hlo got from XLA; --sort-order=stable
# keeps them in input order, as the host kernel does (and so --compare).
so=$tmp/sort_order.hlo
cat >"$so" <<'HLO'
HloModule sort_order

lt {
  a = s32[] parameter(0)
  b = s32[] parameter(1)
  i = s32[] parameter(2)
  j = s32[] parameter(3)
  ROOT r = pred[] compare(a, b), direction=LT
}

ENTRY e {
  k = s32[17] parameter(0)
  v = s32[17] parameter(1)
  s = (s32[17], s32[17]) sort(k, v), dimensions={0}, to_apply=lt
  ROOT p = s32[17] get-tuple-element(s), index=1
}
HLO
sk="--input=17xs32=0 2 2 0 1 0 1 2 1 0 2 0 0 0 2 2 2"
sv="--input=17xs32=$(seq -s ' ' 0 16)"
expect "sort order default" 0 "{0, 3, 5, 9, 13, 11, 12, 4, 6, 8, 16, 15, 14, 10, 7, 2, 1}" -- \
  "$run" "$so" "$sk" "$sv"
expect "sort order xla-cpu" 0 "{0, 3, 5, 9, 13, 11, 12, 4, 6, 8, 16, 15, 14, 10, 7, 2, 1}" -- \
  "$run" "$so" "$sk" "$sv" --sort-order=xla-cpu
expect "sort order stable" 0 "{0, 3, 5, 9, 11, 12, 13, 4, 6, 8, 1, 2, 7, 10, 14, 15, 16}" -- \
  "$run" "$so" "$sk" "$sv" --sort-order=stable
expect "bad sort order" 2 "bad value for --sort-order: quick" -- "$run" "$so" "$sk" "$sv" \
  --sort-order=quick
if "$xhloc" --target=host "$so" -o "$tmp/so" >/dev/null 2>&1; then
  expect "sort order compare" 0 "" -- "$run" "$tmp/so.thunks" "$sk" "$sv" --compare \
    --atol=0 --rtol=0 --quiet
  expect "sort order compare xla-cpu" 1 "9 of 17 elements differ" -- "$run" "$tmp/so.thunks" \
    "$sk" "$sv" --compare --atol=0 --rtol=0 --quiet --sort-order=xla-cpu
else
  bad "xhloc --target=host $so"
fi

# --- device counts -------------------------------------------------------------------
# HLO text without num_partitions takes it from its Shardy mesh (with a
# note); --num-partitions sets it; a count against the header or against
# what an artifact was compiled for is an error.
lw=testdata/spmd/tp_mlp/lowered.hlo
expect "as_text: four devices from the mesh" 0 "device 3 (replica 0, partition 3)" -- \
  "$run" "$lw" --random-inputs
expect "as_text: the note" 0 "note: the header gives no num_partitions: 4, the devices of the module's Shardy mesh" -- \
  "$run" "$lw" --random-inputs --quiet
expect "--num-partitions=1" 0 "" -- "$run" "$lw" --random-inputs --quiet --num-partitions=1
out=$("$run" "$lw" --random-inputs --num-partitions=1 2>&1)
printf '%s' "$out" | grep -q 'device 1' && bad "--num-partitions=1 still ran several devices" || ok
sed '1s/^HloModule \([^,]*\),/HloModule \1, num_partitions=4,/' "$lw" >"$tmp/hdr.hlo"
expect "--num-partitions against the header" 1 "--num-partitions=2, but the module's header has num_partitions=4" -- \
  "$run" "$tmp/hdr.hlo" --random-inputs --num-partitions=2
expect "--num-replicas=2 on the interpreter" 0 "device 7 (replica 1, partition 3)" -- \
  "$run" "$tmp/hdr.hlo" --random-inputs --num-replicas=2
expect "bad --num-partitions" 2 "bad value for --num-partitions: 0 (1 to 4096)" -- \
  "$run" "$lw" --random-inputs --num-partitions=0
if "$xhloc" --target=host "$lw" -o "$tmp/lw" >/dev/null 2>&1; then
  # partitioned: the devices' results put together into the global one
  expect "artifact of as_text: four devices, one global result" 0 "f32[8,4] {" -- \
    "$run" "$tmp/lw.thunks" --random-inputs
  expect "artifact: --num-partitions=4" 0 "" -- "$run" "$tmp/lw.thunks" --random-inputs --quiet \
    --num-partitions=4
  expect "artifact: --num-partitions=2" 1 "was compiled for replica_count=1, num_partitions=4" -- \
    "$run" "$tmp/lw.thunks" --random-inputs --num-partitions=2
  expect "artifact: --num-replicas=2" 1 "was compiled for replica_count=1, num_partitions=4" -- \
    "$run" "$tmp/lw.thunks" --random-inputs --num-replicas=2 --platform=interpreter
else
  bad "xhloc --target=host $lw"
fi

# --- usage -------------------------------------------------------------------------
expect "help" 0 "usage: xhlo-run" -- "$run" --help
expect "version" 0 "xhlo-run " -- "$run" --version
expect "no module" 2 "no module given" -- "$run"
expect "unknown option" 2 "unknown option" -- "$run" --frobnicate "$m"
expect "bad platform" 2 "unknown --platform" -- "$run" --platform=tpu "$m"
expect "random and input" 2 "exclude" -- "$run" "$m" --random-inputs "--input=2x3xf32=1"
expect "bad atol" 2 "atol" -- "$run" "$m" --atol=abc

echo "check-xhlo-run: $passed passed, $failed failed"
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
