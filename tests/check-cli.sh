#!/usr/bin/env bash
# check-cli.sh - the xhloc driver's options, exit statuses and output files.
#
# Run from the repository root; XHLOC_BIN names the directory of the xhloc
# under test (default build/bin).
set -u
bin=${XHLOC_BIN:-build/bin}
xhloc=$bin/xhloc
pass=0 fail=0
t=$(mktemp -d)
trap 'rm -rf "$t"' EXIT
mlp=testdata/examples/mlp.hlo

ok() { pass=$((pass + 1)); }
bad() {
  fail=$((fail + 1))
  echo "FAIL: $*"
}

# run ARGS...: runs xhloc with stdout in $t/out, stderr in $t/err, status in rc.
run() {
  "$xhloc" "$@" >"$t/out" 2>"$t/err"
  rc=$?
}

# expect NAME STATUS [STDERR-SUBSTRING]: checks the last run.
expect() {
  local name=$1 want=$2 text=${3:-}
  if [ "$rc" -ne "$want" ]; then
    bad "$name: exit status $rc, want $want"
    sed 's/^/  stderr: /' "$t/err" | head -n 5
    return
  fi
  if [ -n "$text" ] && ! grep -qF -- "$text" "$t/err"; then
    bad "$name: stderr lacks '$text'"
    sed 's/^/  stderr: /' "$t/err" | head -n 5
    return
  fi
  ok
}

# expect_quiet_stdout NAME: the last run printed nothing on stdout.
expect_quiet_stdout() {
  if [ -s "$t/out" ]; then bad "$1: wrote to stdout"; else ok; fi
}

same() { # NAME FILE1 FILE2
  if cmp -s "$2" "$3"; then ok; else
    bad "$1: $2 and $3 differ"
    diff -u "$2" "$3" | head -n 20
  fi
}

# ---- informational options ------------------------------------------------
run --help
expect "--help" 0
grep -q '^usage: xhloc \[options\] FILE\.\.\.' "$t/out" && ok || bad "--help: no usage line"
for o in --output --stage --list-stages --no-warnings --version; do
  grep -qe "$o" "$t/out" && ok || bad "--help does not mention $o"
done
[ -s "$t/err" ] && bad "--help wrote to stderr" || ok

version=$(sed -n 's/^#define XHLOC_VERSION "\(.*\)"/\1/p' lib/support/support.h)
run --version
expect "--version" 0
[ "$(cat "$t/out")" = "xhloc $version" ] && ok || bad "--version printed '$(cat "$t/out")', want 'xhloc $version'"

run --list-stages
expect "--list-stages" 0
grep -qx parsed "$t/out" && ok || bad "--list-stages does not list 'parsed'"

# ---- usage errors: exit 2, a message and the pointer to --help -------------
run --bogus "$mlp"
expect "unknown long option" 2 "unknown option '--bogus'"
grep -qF "try 'xhloc --help'" "$t/err" && ok || bad "usage error without the --help hint"
expect_quiet_stdout "unknown long option"
run -Z "$mlp"
expect "unknown short option" 2 "unknown option '-Z'"
run --stage=bogus "$mlp"
expect "unknown stage" 2 "unknown stage 'bogus' (supported stages: parsed"
run "$mlp" --stage
expect "--stage without a value" 2 "option '--stage' needs an argument"
run -o
expect "-o without a value" 2 "option '-o' needs an argument"
run --help=yes
expect "--help with a value" 2 "option '--help' takes no argument"
run
expect "no input files" 2 "no input files"
run --stage=parsed
expect "stage but no input files" 2 "no input files"

# ---- input errors: exit 1 ---------------------------------------------------
run --stage=parsed "$t/missing.hlo"
expect "missing file" 1 "error: cannot open '$t/missing.hlo': No such file or directory"
expect_quiet_stdout "missing file"
run "$t"
expect "a directory as input" 1 "error: cannot read '$t'"

printf 'HloModule broken\n\nENTRY e {\n  ROOT x = f32[] bogus-op()\n}\n' >"$t/broken.hlo"
run --stage=parsed "$t/broken.hlo"
expect "parse error" 1 "$t/broken.hlo:4:"
expect_quiet_stdout "parse error"
grep -q '^ *\^$' "$t/err" && ok || bad "parse error: no caret line"

# ---- output ----------------------------------------------------------------
run --stage=parsed "$mlp"
expect "example" 0
cp "$t/out" "$t/mlp.out"
grep -q '^HloModule jit_mlp' "$t/mlp.out" && ok || bad "example: no HloModule line in output"
[ -s "$t/err" ] && bad "example: wrote to stderr: $(head -n 3 "$t/err")" || ok

# Printing is a fixed point: the output parses and prints the same.
run --stage=parsed "$t/mlp.out"
expect "output re-parses" 0
same "print(parse(print(parse(x))))" "$t/mlp.out" "$t/out"

# Default stage is parsed; --split-input-file is accepted.
run --split-input-file "$mlp"
expect "default stage" 0
same "default stage" "$t/mlp.out" "$t/out"

# stdin as '-'.
"$xhloc" --stage=parsed - <"$mlp" >"$t/out" 2>"$t/err"
rc=$?
expect "stdin" 0
same "stdin" "$t/mlp.out" "$t/out"

# -o writes what stdout would get, with a normal file mode.
run --stage=parsed -o "$t/o.hlo" "$mlp"
expect "-o" 0
expect_quiet_stdout "-o"
same "-o FILE" "$t/mlp.out" "$t/o.hlo"
mode=$(umask 022 && "$xhloc" --stage=parsed -o "$t/mode.hlo" "$mlp" && stat -c %a "$t/mode.hlo")
[ "$mode" = 644 ] && ok || bad "-o made a file with mode '$mode', want 644 under umask 022"
run --stage=parsed --output="$t/o2.hlo" "$mlp"
expect "--output=" 0
same "--output=FILE" "$t/mlp.out" "$t/o2.hlo"
run -o - "$mlp"
expect "-o -" 0
same "-o - is stdout" "$t/mlp.out" "$t/out"

# An error leaves no output file, no temporary, and an old file untouched.
mkdir "$t/odir"
run --stage=parsed -o "$t/odir/x.hlo" "$mlp" "$t/broken.hlo"
expect "-o with an error" 1
[ -z "$(ls -A "$t/odir")" ] && ok || bad "-o with an error left: $(ls -A "$t/odir")"
echo old >"$t/odir/keep.hlo"
run --stage=parsed -o "$t/odir/keep.hlo" "$t/broken.hlo"
expect "-o over a file, with an error" 1
[ "$(cat "$t/odir/keep.hlo")" = old ] && ok || bad "-o with an error changed the old file"
[ "$(ls -A "$t/odir")" = keep.hlo ] && ok || bad "-o with an error left: $(ls -A "$t/odir")"
run --stage=parsed -o "$t/no/such/dir/x.hlo" "$mlp"
expect "-o into a missing directory" 1 "error: cannot write '$t/no/such/dir/x.hlo'"
expect_quiet_stdout "-o into a missing directory"

# ---- several modules ---------------------------------------------------------
# Two files, and one file holding both, give the same output: the modules
# separated by one "// -----" line, and that output parses again.
printf 'HloModule second\n\nENTRY e {\n  p = f32[4]{0} parameter(0)\n  ROOT n = f32[4]{0} negate(p)\n}\n' >"$t/second.hlo"
run "$mlp" "$t/second.hlo"
expect "two files" 0
cp "$t/out" "$t/two.out"
[ "$(grep -c '^// -----$' "$t/two.out")" = 1 ] && ok || bad "two files: want exactly one '// -----' line"
grep -q '^HloModule second' "$t/two.out" && ok || bad "two files: second module missing"
{ cat "$mlp"; echo; echo "// -----"; echo; cat "$t/second.hlo"; } >"$t/both.hlo"
run "$t/both.hlo"
expect "two modules in one file" 0
same "two modules in one file" "$t/two.out" "$t/out"
run "$t/two.out"
expect "multi-module output re-parses" 0
same "multi-module output re-parses" "$t/two.out" "$t/out"

# ---- back-end stages, options and the artifact ----------------------------
e2e=testdata/e2e/elementwise_chain.hlo
for s in buffer-assignment memory thunks llvm-before-optimizations llvm llvm-after-optimizations ptx artifact; do
  grep -qx -- "$s" <("$xhloc" --list-stages) && ok || bad "--list-stages lacks $s"
done
for o in --target --arch --libdevice --host-cpu --host-math --host-linker; do
  "$xhloc" --help | grep -qe "$o" && ok || bad "--help does not mention $o"
done
run --target=tpu "$e2e"
expect "unknown target" 2 "unknown target 'tpu' (supported targets: gpu, host)"
run --arch=gfx90a "$e2e"
expect "bad arch" 2 "bad --arch 'gfx90a'"
for v in abc 0 -5 12Q 1.5GiBx; do
  run --memory-limit=$v --stage=buffer-assignment "$e2e"
  expect "bad --memory-limit=$v" 2 "bad --memory-limit '$v'"
done
run --memory-limit=64K --target=host --stage=buffer-assignment "$e2e"
expect "--memory-limit=64K" 0
run --target=host --host-cpu=pentium4 "$e2e"
expect "bad host cpu" 2 "bad --host-cpu 'pentium4' (want native, x86-64,"
for c in native x86-64 x86-64-v2; do
  run --target=host --host-cpu=$c -o "$t/hc" "$e2e"
  expect "host cpu $c" 0
  grep -qa "^host-cpu [0-9]*:" "$t/hc.thunks" && ok || bad "host cpu $c: no host-cpu line"
done
grep -qa "^host-cpu 9:x86-64-v2 [0-9]*:cmov,.*,sse4.2,popcnt$" "$t/hc.thunks" && ok ||
  bad "host cpu x86-64-v2: its features are not recorded"
run --host-math=approx --target=host "$e2e"
expect "bad host-math" 2 "unknown --host-math 'approx' (supported: fast, exact)"
run --host-math=exact --target=host --stage=llvm "$e2e"
expect "host-math=exact" 0
run --host-math=fast --target=host --stage=llvm "$e2e"
expect "host-math=fast" 0
run --host-linker=gold --target=host "$e2e"
expect "bad host-linker" 2 "unknown --host-linker 'gold' (supported: xhloc, system)"
run --stage=artifact "$e2e"
expect "artifact without -o" 2 "--stage=artifact needs -o PREFIX"
run --stage=ptx --libdevice="$t/no-libdevice.bc" "$e2e"
expect "missing libdevice" 1 "libdevice not found at $t/no-libdevice.bc (check --libdevice)"
expect_quiet_stdout "missing libdevice"
run --stage=ptx --target=host "$e2e"
expect "ptx for the host" 2 "--stage=ptx needs --target=gpu"
run -o "$t/two" "$e2e" "$e2e"
expect "artifact of two files" 2 "writes the artifact of one module"
run -o "$t/both" "$t/both.hlo"
expect "artifact of a two-module file" 2 "holds 2"
[ -z "$(ls "$t"/both.* 2>/dev/null | grep -v 'both.hlo')" ] && ok || bad "two-module artifact left files"

run --stage=buffer-assignment --target=host "$e2e"
expect "stage buffer-assignment" 0
grep -q '^allocation 0: size ' "$t/out" && ok || bad "buffer-assignment: no 'allocation 0: size' line"
run --stage=thunks --target=host "$e2e"
expect "stage thunks" 0
grep -q '^000: kKernel' "$t/out" && ok || bad "thunks: no '000: kKernel' line"
# Fusions that only broadcast a scalar constant become 32-bit memsets
# (zeros f32, 1.5 bf16 = 0x3fc0 twice, -3 s8 = 0xfd four times).
run --stage=thunks --target=host testdata/e2e/fill.hlo
expect "stage thunks (fill)" 0
for v in 0x00000000 0x3fc03fc0 0xfdfdfdfd; do
  grep -q "kMemset32BitValue.*value = $v" "$t/out" && ok ||
    bad "thunks (fill): no memset of $v"
done
run --stage=llvm-before-optimizations --target=host "$e2e"
expect "stage llvm-before-optimizations" 0
grep -q '^define ' "$t/out" && ok || bad "llvm-before-optimizations: no define"
run --stage=llvm --target=host "$e2e"
expect "stage llvm" 0
grep -q '^define ' "$t/out" && ok || bad "llvm: no define"
run --stage=ptx "$e2e"
expect "stage ptx" 0
grep -q '^\.target sm_90' "$t/out" && ok || bad "ptx: no '.target sm_90'"
run --stage=ptx --arch=sm_80 "$e2e"
expect "stage ptx --arch=sm_80" 0
grep -q '^\.target sm_80' "$t/out" && ok || bad "ptx --arch=sm_80: no '.target sm_80'"

# The artifact: -o PREFIX without --stage; the files only, nothing else.
mkdir "$t/art"
run -o "$t/art/m" "$e2e"
expect "artifact (gpu)" 0
expect_quiet_stdout "artifact (gpu)"
[ "$(cd "$t/art" && ls -A | tr '\n' ' ')" = "m.ptx m.thunks " ] && ok || bad "artifact (gpu) wrote: $(ls -A "$t/art")"
head -c 11 "$t/art/m.thunks" | grep -q XHLO-THUNKS && ok || bad "m.thunks does not start with the magic"
run --target=host -o "$t/art/h" "$e2e"
expect "artifact (host)" 0
[ -f "$t/art/h.host.so" ] && [ -f "$t/art/h.thunks" ] && ok || bad "artifact (host): files missing: $(ls -A "$t/art")"
# Determinism: the same input and flags give the same bytes.
mkdir "$t/art2"
run --stage=artifact -o "$t/art2/m" "$e2e"
expect "artifact again" 0
same "artifact .thunks is deterministic" "$t/art/m.thunks" "$t/art2/m.thunks"
same "artifact .ptx is deterministic" "$t/art/m.ptx" "$t/art2/m.ptx"
"$xhloc" --stage=thunks --target=host "$e2e" >"$t/th1" && "$xhloc" --stage=thunks --target=host "$e2e" >"$t/th2"
same "thunks are deterministic" "$t/th1" "$t/th2"

# An op the back end cannot compile: file:line:col, exit 1, no files left.
printf 'HloModule cc\n\nENTRY e {\n  p = f32[4]{0} parameter(0)\n  ROOT c = f32[4]{0} custom-call(p), custom_call_target="foo"\n}\n' >"$t/cc.hlo"
mkdir "$t/bad"
run -o "$t/bad/x" "$t/cc.hlo"
expect "unsupported op" 1 "$t/cc.hlo:5:"
grep -q 'custom-call' "$t/err" && ok || bad "unsupported op: the message does not name custom-call"
[ -z "$(ls -A "$t/bad")" ] && ok || bad "unsupported op left: $(ls -A "$t/bad")"

# --dump-to: the back end's files, with XLA's names.
run --target=host --dump-to="$t/dump" -o "$t/art/d" "$e2e"
expect "--dump-to with the artifact" 0
for f in cpu_after_optimizations.txt cpu_after_optimizations-buffer-assignment.txt cpu_after_optimizations-memory-usage-report.txt thunk_sequence.txt ir-no-opt.ll ir-with-opt.ll; do
  ls "$t/dump"/module_0000.jit_f.$f >/dev/null 2>&1 && ok || bad "--dump-to (host) lacks module_0000.jit_f.$f"
done
run --dump-to="$t/dump2" --stage=ptx "$e2e"
expect "--dump-to with ptx" 0
for f in sm_9.0_gpu_after_optimizations.txt sm_9.0_gpu_after_optimizations-buffer-assignment.txt sm_9.0_gpu_after_optimizations-memory-usage-report.txt thunk_sequence.txt ir-no-opt.ll ir-with-opt.ll ptx; do
  ls "$t/dump2"/module_0000.jit_f.$f >/dev/null 2>&1 && ok || bad "--dump-to (gpu) lacks module_0000.jit_f.$f"
done

# --time-passes: the pass table, then the compile's phases (to stderr, the
# artifact unchanged); every phase of a host artifact is there once.
run --time-passes --target=host -o "$t/art/tp" "$e2e"
expect "--time-passes with the artifact" 0 "compile phases:"
expect_quiet_stdout "--time-passes"
grep -q '^pass timing for module ' "$t/err" && ok || bad "--time-passes: no pass table"
for p in "read, parse and verify" "HLO passes" "buffer assignment" "llvm target machine" \
         "thunk emission and kernel IR" "llvm verify" "llvm optimization" \
         "llvm code generation" "link and write the shared object" "write the artifact files"; do
  grep -Eq "^  $p +[0-9]+ +[0-9]+\.[0-9]{6} +[0-9.]+$" "$t/err" && ok || bad "--time-passes: no '$p' phase row"
done
grep -Eq '^  total \(phases\) +[0-9]+\.[0-9]{6} +100\.0$' "$t/err" && ok || bad "--time-passes: no phase total"
same "--time-passes does not change the artifact" "$t/art/h.host.so" "$t/art/tp.host.so"
run --time-passes --stage=ptx "$e2e"
expect "--time-passes with ptx" 0 "compile phases:"
grep -q '^  llvm code generation ' "$t/err" && ok || bad "--time-passes (ptx): no code generation phase"
grep -q '^  link and write the shared object ' "$t/err" && bad "--time-passes (ptx): a shared object phase" || ok
run --stage=llvm --target=host "$e2e"
grep -q 'compile phases' "$t/err" && bad "compile phases printed without --time-passes" || ok

# ---- warnings ---------------------------------------------------------------
# An unknown attribute is a warning on stderr; it does not change the exit
# status or the output, and -w silences it.
sed 's/^  ROOT subtract.40 = \(.*\)$/  ROOT subtract.40 = \1, xhloc_test_unknown_attr=7/' "$mlp" >"$t/warn.hlo"
run "$t/warn.hlo"
expect "unknown attribute warns" 0 "warning:"
grep -qF "xhloc_test_unknown_attr" "$t/err" && ok || bad "the warning does not name the attribute"
run -w "$t/warn.hlo"
expect "-w" 0
[ -s "$t/err" ] && bad "-w still printed: $(head -n 2 "$t/err")" || ok

# ---- device counts -----------------------------------------------------------
# jax.jit(f).lower(...).as_text() leaves num_partitions out: it is taken
# from the Shardy mesh (or the shardings) with a note; --num-partitions and
# --num-replicas set it, and one that contradicts the header is an error.
lw=testdata/spmd/tp_mlp/lowered.hlo
run --stage=hlo "$lw"
expect "as_text: num_partitions from the mesh" 0 \
  "note: the header gives no num_partitions: 4, the devices of the module's Shardy mesh"
head -n 1 "$t/out" | grep -q 'num_partitions=4' && ok || bad "as_text: the partitioned module lacks num_partitions=4"
grep -q '^ENTRY .*_spmd' "$t/out" && ok || bad "as_text: the module was not partitioned"
run --stage=hlo testdata/spmd/shard_map_gspmd/lowered.hlo
expect "as_text (GSPMD): num_partitions from the shardings" 0 \
  "note: the header gives no num_partitions: 4, the devices the module's shardings list"
run -w --stage=hlo "$lw"
expect "-w silences the note" 0
[ -s "$t/err" ] && bad "-w still printed: $(head -n 1 "$t/err")" || ok
run --stage=hlo --num-partitions=4 "$lw"
expect "--num-partitions=4" 0
[ -s "$t/err" ] && bad "--num-partitions=4 still printed a note" || ok
run --stage=parsed --num-partitions=2 --num-replicas=3 "$mlp"
expect "--num-partitions on a module of none" 0
head -n 1 "$t/out" | grep -q 'replica_count=3, num_partitions=2' && ok ||
  bad "--num-partitions/--num-replicas: header $(head -n 1 "$t/out" | cut -c1-120)"
sed '1s/^HloModule \([^,]*\),/HloModule \1, replica_count=2, num_partitions=4,/' "$lw" >"$t/hdr.hlo"
run --stage=hlo --num-partitions=2 "$t/hdr.hlo"
expect "--num-partitions against the header" 1 \
  "error: --num-partitions=2, but the module's header has num_partitions=4"
run --stage=hlo --num-replicas=1 "$t/hdr.hlo"
expect "--num-replicas against the header" 1 \
  "error: --num-replicas=1, but the module's header has replica_count=2"
run --stage=hlo --num-partitions=0 "$lw"
expect "--num-partitions=0" 2 "bad --num-partitions '0' (want 1 to 4096)"
run --stage=hlo --num-replicas=x "$lw"
expect "--num-replicas=x" 2 "bad --num-replicas 'x'"

echo "check-cli: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
