#!/usr/bin/env bash
# check-compile-corpus.sh - how much of the HLO corpus the back end compiles.
#
# Over a sample of ../shared/hlo-corpus/*.hlo (every STRIDE-th file in name
# order, and no longer than a time budget), for each single-module file:
#   - xhloc --stage=ptx: does it compile to PTX;
#   - xhloc --target=host -o PREFIX, then xhlo-run PREFIX.thunks
#     --platform=host --random-inputs --compare: does it compile for the host
#     and agree with the reference interpreter (inputs and interpreter
#     memory limited to 64 MiB: modules over it are counted as skipped).
# Prints the counts, then for the modules that do not compile the first
# unsupported op (or the first error) as a table op -> count.
#
# Fails (exit 1) when anything crashes (a signal, or an exit status other
# than 0, 1 and 2), or when a compiled module runs but disagrees with the
# interpreter.  A compile that runs past the per-command limit is counted
# and listed by name as over the limit (the largest training modules take
# LLVM longer than that on a loaded 2-core machine), not failed.  Not compiling is counted,
# never failed: it is the expected state of a back end being built.
#
# Environment: XHLOC_CORPUS (default ../shared/hlo-corpus), XHLOC_BIN
# (default build/bin), XHLOC_SWEEP_STRIDE (default 8), XHLOC_SWEEP_SECONDS
# (time budget, default 100), XHLOC_SWEEP_LIMIT (seconds per command,
# default 20).  Ends with "N passed, N failed".
set -u
corpus=${XHLOC_CORPUS:-../shared/hlo-corpus}
bin=${XHLOC_BIN:-build/bin}
stride=${XHLOC_SWEEP_STRIDE:-8}
budget=${XHLOC_SWEEP_SECONDS:-100}
limit=${XHLOC_SWEEP_LIMIT:-20}
xhloc=$bin/xhloc
run=$bin/xhlo-run
mem=$((64 << 20))

if [ ! -d "$corpus" ]; then
  echo "check-compile-corpus: FAIL: the corpus directory '$corpus' is missing" \
    "(set XHLOC_CORPUS to its location)"
  echo "0 passed, 1 failed"
  exit 1
fi

t=$(mktemp -d)
trap 'rm -rf "$t"' EXIT
files=("$corpus"/*.hlo)
total=${#files[@]}
start=$SECONDS
sampled=0 slow=0 multi=0 rejected=0 ptx_ok=0 host_ok=0 run_ok=0 run_skip=0 run_err=0
failed=0
: >"$t/ops"

crash() { # WHAT RC FILE
  failed=$((failed + 1))
  echo "FAIL: $1 (exit status $2): $3"
  sed 's/^/  | /' "$t/err" | head -n 5
}

# The first unsupported op of an error report: the quoted op name of
# "unsupported op 'X'" (or "... op X"), else the message's first words.
first_op() {
  local line
  line=$(grep -m1 'error: ' "$t/err" | sed 's/.*error: //')
  if [[ $line =~ op\ \'([^\']+)\' ]]; then
    echo "${BASH_REMATCH[1]}"
  elif [[ $line =~ \'(custom-call)\' ]]; then
    echo "${BASH_REMATCH[1]}"
  else
    echo "other: $(printf '%s' "${line:-no message}" | cut -c1-60)"
  fi
}

stopped=""
for ((k = 0; k < total; k += stride)); do
  if [ $((SECONDS - start)) -ge "$budget" ]; then
    stopped="stopped at the ${budget}s budget after $sampled sampled files"
    break
  fi
  f=${files[k]}
  sampled=$((sampled + 1))
  # The front end first: files it refuses are another sweep's business.
  timeout "$limit" "$xhloc" --stage=parsed "$f" >"$t/parsed" 2>"$t/err"
  rc=$?
  if [ "$rc" -ne 0 ]; then
    [ "$rc" -gt 2 ] && crash "xhloc --stage=parsed" "$rc" "$f"
    rejected=$((rejected + 1))
    continue
  fi
  # Modules in the printed text are separated by "// -----" lines (some
  # files have modules without an HloModule header).
  if grep -q '^// -----$' "$t/parsed"; then
    multi=$((multi + 1))
    continue
  fi

  timeout "$limit" "$xhloc" --stage=ptx "$f" >/dev/null 2>"$t/err"
  rc=$?
  case $rc in
    0) ptx_ok=$((ptx_ok + 1)) ;;
    1) ;;
    124)
      slow=$((slow + 1))
      echo "over the ${limit}s limit: xhloc --stage=ptx $(basename "$f")"
      continue
      ;;
    *) crash "xhloc --stage=ptx" "$rc" "$f" ;;
  esac

  rm -f "$t"/m.*
  timeout "$limit" "$xhloc" --target=host -o "$t/m" "$f" >/dev/null 2>"$t/err"
  rc=$?
  if [ "$rc" -eq 1 ]; then
    first_op >>"$t/ops"
    continue
  elif [ "$rc" -eq 124 ]; then
    slow=$((slow + 1))
    echo "over the ${limit}s limit: xhloc --target=host $(basename "$f")"
    continue
  elif [ "$rc" -ne 0 ]; then
    crash "xhloc --target=host" "$rc" "$f"
    continue
  fi
  host_ok=$((host_ok + 1))
  timeout "$limit" "$run" "$t/m.thunks" --platform=host --random-inputs \
    --compare --mem-budget=$mem >"$t/out" 2>"$t/err"
  rc=$?
  if [ "$rc" -eq 0 ]; then
    run_ok=$((run_ok + 1))
  elif [ "$rc" -eq 1 ] && grep -q 'does not match the interpreter' "$t/err"; then
    failed=$((failed + 1))
    echo "FAIL: the host run disagrees with the interpreter: $f"
    grep -m3 'does not match' "$t/err" | sed 's/^/  | /'
  elif [ "$rc" -eq 124 ] ||
      { [ "$rc" -eq 1 ] && grep -qiE 'budget|memory|too large|the interpreter failed' "$t/err"; }; then
    run_skip=$((run_skip + 1))
  elif [ "$rc" -eq 1 ]; then
    run_err=$((run_err + 1))
    echo "run refused: $(basename "$f"): $(grep -m1 . "$t/err" | cut -c1-150)"
  else
    crash "xhlo-run --platform=host" "$rc" "$f"
  fi
done

echo "corpus: $total files, sampled every ${stride}th: $sampled${stopped:+ ($stopped)}"
echo "  front end refused:          $rejected"
echo "  several modules (skipped):  $multi"
echo "  compile to PTX:             $ptx_ok"
echo "  compile over the ${limit}s limit (listed above): $slow"
echo "  compile for the host:       $host_ok"
echo "  run on the host and agree:  $run_ok"
echo "  not run (over the 64 MiB / ${limit}s budget, or the interpreter cannot): $run_skip"
echo "  refused or failed by xhlo-run with a message (listed above): $run_err"
if [ -s "$t/ops" ]; then
  echo "first unsupported op of the modules that do not compile for the host:"
  sort "$t/ops" | uniq -c | sort -k1,1nr -k2 | awk '{n=$1; $1=""; printf "  %-50s %d\n", substr($0,2), n}'
fi
echo "check-compile-corpus: $((sampled - failed)) passed, $failed failed"
[ "$failed" -eq 0 ]
