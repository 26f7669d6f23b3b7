# expect.sh - sourced by the shell checks (check-gpu-script.sh,
# check-nccl.sh, check-cuda-libs.sh): pass/fail counting, `expect` and
# `driver`.
#
#   expect NAME STATUS PATTERN... -- command...
#
# passes (ok) when the command exits with STATUS and its combined output
# contains every PATTERN (fixed strings; an empty one is ignored); else
# counts a failure (bad) and shows the first 30 lines of the output.
#
#   driver NAME command...
#
# runs a C test driver that ends with "N passed, M failed", shows the rest
# of its output and adds its counts; a driver that gives no such line, or
# fails with none failed, is a failure.
passed=0 failed=0
ok() { passed=$((passed + 1)); }
bad() { failed=$((failed + 1)); echo "FAIL: $*"; }

expect() {
  local name=$1 want=$2 out rc pats=()
  shift 2
  while [ "$1" != -- ]; do pats+=("$1"); shift; done
  shift
  out=$("$@" 2>&1)
  rc=$?
  if [ "$rc" -ne "$want" ]; then
    bad "$name: exit $rc, want $want"
    printf '%s\n' "$out" | head -n 30 | sed 's/^/    /'
    return
  fi
  for p in "${pats[@]}"; do
    [ -z "$p" ] && continue
    if ! printf '%s' "$out" | grep -qF -- "$p"; then
      bad "$name: output lacks '$p'"
      printf '%s\n' "$out" | head -n 30 | sed 's/^/    /'
      return
    fi
  done
  ok
}

driver() {
  local name=$1 out rc line
  shift
  out=$("$@" 2>&1)
  rc=$?
  printf '%s\n' "$out" | grep -v -E '^[0-9]+ passed, [0-9]+ failed$'
  line=$(printf '%s\n' "$out" | grep -E '^[0-9]+ passed, [0-9]+ failed$' | tail -n 1)
  if [[ $line =~ ^([0-9]+)\ passed,\ ([0-9]+)\ failed$ ]]; then
    passed=$((passed + BASH_REMATCH[1]))
    failed=$((failed + BASH_REMATCH[2]))
    if [ "$rc" -ne 0 ] && [ "${BASH_REMATCH[2]}" -eq 0 ]; then bad "$name exited with $rc"; fi
  else
    bad "$name gave no summary (exit $rc)"
  fi
}
