# expect.sh - sourced by the shell checks (check-gpu-script.sh,
# check-nccl.sh): pass/fail counting and `expect`.
#
#   expect NAME STATUS PATTERN... -- command...
#
# passes (ok) when the command exits with STATUS and its combined output
# contains every PATTERN (fixed strings; an empty one is ignored); else
# counts a failure (bad) and shows the first 30 lines of the output.
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
