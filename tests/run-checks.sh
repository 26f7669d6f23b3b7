#!/usr/bin/env bash
# run-checks.sh - run the test suite and print one summary (make check).
#
#   tests/run-checks.sh         every $XHLOC_TESTBIN/test_* Criterion binary,
#                               then every tests/check-*.sh
#   tests/run-checks.sh --gpu   every tests/gpu/check-*.sh
#
# Run from the repository root.  Environment: XHLOC_BIN (the xhloc and
# xhlo-run under test, default build/bin), XHLOC_TESTBIN (test programs,
# default build/tests).  A Criterion binary counts its test cases; a script
# counts what its last "N passed, N failed" line says, or 1 by its exit
# status when it prints none.  Ends with the line "N passed, N failed" and
# exits non-zero if anything failed.
set -u

export XHLOC_BIN=${XHLOC_BIN:-build/bin}
export XHLOC_TESTBIN=${XHLOC_TESTBIN:-build/tests}

# Sanitizer settings for the asan build; harmless otherwise.
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0:exitcode=23}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}

log=$(mktemp)
trap 'rm -f "$log"' EXIT
passed=0
failed=0
failures=()

# A sanitizer report fails the binary or script that printed it, even where
# the test itself passed (Criterion does not see leaks in its workers).
sanitizer_report() {
  grep -qE '^SUMMARY: [A-Za-z]+Sanitizer|: runtime error: ' "$log"
}

count() { # name npass nfail
  passed=$((passed + $2))
  failed=$((failed + $3))
  if [ "$3" -gt 0 ]; then failures+=("$1"); fi
}

run_unit() { # binary
  local bin=$1 name out rc line p f c
  name=$(basename "$bin")
  echo "== $name"
  "$bin" --jobs=1 2>&1 | tee "$log"
  rc=${PIPESTATUS[0]}
  out=$(cat "$log")
  line=$(printf '%s\n' "$out" | grep 'Synthesis:' | tail -n 1)
  p=$(printf '%s' "$line" | sed -n 's/.*Passing: \([0-9]*\).*/\1/p')
  f=$(printf '%s' "$line" | sed -n 's/.*Failing: \([0-9]*\).*/\1/p')
  c=$(printf '%s' "$line" | sed -n 's/.*Crashing: \([0-9]*\).*/\1/p')
  if [ -z "$p" ]; then
    echo "$name: no Criterion summary (exit $rc)"
    count "$name" 0 1
    return
  fi
  f=$((f + ${c:-0}))
  if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then
    echo "$name: exit status $rc"
    f=1
  fi
  if sanitizer_report; then
    echo "$name: FAIL: sanitizer report above"
    f=$((f + 1))
  fi
  count "$name" "$p" "$f"
}

run_script() { # script
  local sh=$1 name out rc line p f
  name=$(basename "$sh" .sh)
  echo "== $name"
  "$sh" 2>&1 | tee "$log"
  rc=${PIPESTATUS[0]}
  out=$(cat "$log")
  p="" f=""
  line=$(printf '%s\n' "$out" | grep -E '[0-9]+ passed, [0-9]+ failed$' | tail -n 1)
  if [[ $line =~ ([0-9]+)\ passed,\ ([0-9]+)\ failed$ ]]; then
    p=${BASH_REMATCH[1]} f=${BASH_REMATCH[2]}
  fi
  if [ -z "$p" ] || [ -z "$f" ]; then
    if [ "$rc" -eq 0 ]; then p=1 f=0; else p=0 f=1; fi
  elif [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then
    echo "$name: exit status $rc"
    f=1
  fi
  if sanitizer_report; then
    echo "$name: FAIL: sanitizer report above"
    f=$((f + 1))
  fi
  count "$name" "$p" "$f"
}

if [ "${1:-}" = --gpu ]; then
  shopt -s nullglob
  scripts=(tests/gpu/check-*.sh)
  if [ ${#scripts[@]} -eq 0 ]; then
    echo "check-gpu: there are no GPU tests yet (tests/gpu/check-*.sh)"
  fi
  for s in "${scripts[@]}"; do run_script "$s"; done
else
  shopt -s nullglob
  for b in "$XHLOC_TESTBIN"/test_*; do
    [ -x "$b" ] && run_unit "$b"
  done
  for s in tests/check-*.sh; do run_script "$s"; done
fi

echo
if [ ${#failures[@]} -gt 0 ]; then
  echo "FAILED: ${failures[*]}"
fi
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
