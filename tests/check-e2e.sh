#!/usr/bin/env bash
# check-e2e.sh - end-to-end tests of the compiler and the runtime.
#
# For every testdata/e2e/*.hlo (real JAX dumps, see testdata/e2e/generate.py):
#   - compile for the host (xhloc --target=host -o PREFIX) and run the
#     artifact on the host platform against the reference interpreter on
#     random inputs (xhlo-run PREFIX.thunks --platform=host --random-inputs
#     --compare);
#   - compile for the GPU (xhloc -o PREFIX) and check that ptxas -arch=sm_90
#     accepts PREFIX.ptx (ptxas from PATH, $CUDA_HOME/bin or
#     /usr/local/cuda/bin; the test fails saying so when there is none).
# Then the error cases: an op the back end cannot compile is a
# file:line:col error, exit status 1, and leaves no PREFIX.* file behind.
#
# Run from the repository root; XHLOC_BIN names the directory of xhloc and
# xhlo-run (default build/bin).
set -u
bin=${XHLOC_BIN:-build/bin}
xhloc=$bin/xhloc
run=$bin/xhlo-run
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

ptxas=$(command -v ptxas 2>/dev/null)
for c in "${CUDA_HOME:-/usr/local/cuda}/bin/ptxas" /usr/local/cuda/bin/ptxas; do
  [ -z "$ptxas" ] && [ -x "$c" ] && ptxas=$c
done

for f in testdata/e2e/*.hlo; do
  name=$(basename "$f" .hlo)
  # Host: compile, run, compare with the interpreter.
  if "$xhloc" --target=host -o "$t/$name" "$f" >"$t/out" 2>"$t/err"; then
    ok
    if "$run" "$t/$name.thunks" --platform=host --random-inputs --compare \
        >"$t/out" 2>"$t/err"; then
      ok
    else
      cat "$t/out" >>"$t/err"
      bad "$name: host run differs from the interpreter (or failed)"
    fi
  else
    bad "$name: xhloc --target=host failed"
    bad "$name: not run on the host"
  fi
  # GPU: compile, then ptxas.
  if "$xhloc" -o "$t/$name.gpu" "$f" >"$t/out" 2>"$t/err"; then
    ok
    if [ -z "$ptxas" ]; then
      echo "no ptxas (looked in PATH, \$CUDA_HOME/bin, /usr/local/cuda/bin)" >"$t/err"
      bad "$name: ptxas not found"
    elif "$ptxas" -arch=sm_90 "$t/$name.gpu.ptx" -o "$t/$name.cubin" \
        >"$t/out" 2>"$t/err"; then
      ok
    else
      bad "$name: ptxas -arch=sm_90 refused the PTX"
    fi
  else
    bad "$name: xhloc (gpu) failed"
    bad "$name: no PTX for ptxas"
  fi
done

# ---- error cases --------------------------------------------------------------
# unsupported NAME TARGET LINE WHAT: compiling $t/NAME.hlo is an error at
# line LINE whose message names WHAT, exit 1, and nothing is left behind.
unsupported() {
  local name=$1 target=$2 line=$3 what=$4 dir=$t/err_$1_$2
  mkdir -p "$dir"
  "$xhloc" --target="$target" -o "$dir/out" "$t/$name.hlo" >"$t/out" 2>"$t/err"
  local rc=$?
  if [ "$rc" -ne 1 ]; then
    bad "$name ($target): exit status $rc, want 1"
  elif ! grep -q "^$t/$name.hlo:$line:[0-9]*: error: .*$what" "$t/err"; then
    bad "$name ($target): no '$t/$name.hlo:$line:COL: error: ...$what...' line"
  elif [ -n "$(ls -A "$dir")" ]; then
    bad "$name ($target): left files: $(ls -A "$dir")"
  else
    ok
  fi
}
cat >"$t/custom_call.hlo" <<'HLO'
HloModule m

ENTRY e {
  p = f32[4]{0} parameter(0)
  ROOT c = f32[4]{0} custom-call(p), custom_call_target="foo"
}
HLO
cat >"$t/infeed.hlo" <<'HLO'
HloModule m

ENTRY e {
  t = token[] after-all()
  i = ((f32[4]{0}), token[]) infeed(t)
  ROOT g = (f32[4]{0}) get-tuple-element(i), index=0
}
HLO
# an all-reduce of two replicas whose reduction XLA's runtimes do not know
cat >"$t/all_reduce.hlo" <<'HLO'
HloModule m, replica_count=2

sub {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] subtract(a, b)
}

ENTRY e {
  p = f32[4]{0} parameter(0)
  ROOT r = f32[4]{0} all-reduce(p), to_apply=sub
}
HLO
# send/recv need a peer (or the host): on one device they stay an error.
cat >"$t/send.hlo" <<'HLO'
HloModule m

ENTRY e {
  p = f32[4]{0} parameter(0)
  t = token[] after-all()
  s = (f32[4]{0}, u32[], token[]) send(p, t), channel_id=1
  ROOT d = token[] send-done(s), channel_id=1
}
HLO
# bitcast-convert of pred beside a type of another width, of c64 beside
# c128: XLA's CPU has no answer (it refuses or aborts), so neither has xhloc
cat >"$t/bitcast_convert_pred.hlo" <<'HLO'
HloModule m

ENTRY e {
  p = s16[4]{0} parameter(0)
  ROOT b = pred[4,2]{1,0} bitcast-convert(p)
}
HLO
cat >"$t/bitcast_convert_complex.hlo" <<'HLO'
HloModule m

ENTRY e {
  p = c64[4,2]{1,0} parameter(0)
  ROOT b = c128[4]{0} bitcast-convert(p)
}
HLO
for target in host gpu; do
  unsupported bitcast_convert_pred "$target" 5 "bitcast-convert between pred"
  unsupported bitcast_convert_complex "$target" 5 "bitcast-convert between complex"
  unsupported custom_call "$target" 5 "custom-call"
  unsupported send "$target" 6 "send"
  unsupported infeed "$target" 5 "infeed"
  unsupported all_reduce "$target" 11 "all-reduce"
done

echo "check-e2e: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
