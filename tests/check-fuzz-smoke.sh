#!/usr/bin/env bash
# check-fuzz-smoke.sh - a short libFuzzer run of every harness, after
# replaying the saved regressions (tests/fuzz/regressions/*).
#
# Environment: XHLOC_FUZZ_BIN (default build-fuzz/bin), FUZZ_SMOKE_SECONDS
# (default 20, shared by the harnesses), XHLOC_SKIP_FUZZ=1 to skip (make asan
# sets it: the fuzz build is sanitized already).
set -u
if [ -n "${XHLOC_SKIP_FUZZ:-}" ]; then
  echo "check-fuzz-smoke: skipped (XHLOC_SKIP_FUZZ is set)"
  echo "check-fuzz-smoke: 0 passed, 0 failed"
  exit 0
fi
fuzzbin=${XHLOC_FUZZ_BIN:-build-fuzz/bin}
shopt -s nullglob
harnesses=("$fuzzbin"/fuzz_*)
if [ ${#harnesses[@]} -eq 0 ]; then
  echo "check-fuzz-smoke: FAIL: no harnesses in $fuzzbin (make fuzz-build)"
  echo "check-fuzz-smoke: 0 passed, 1 failed"
  exit 1
fi
exec tests/fuzz/run.sh smoke "${FUZZ_SMOKE_SECONDS:-20}" "${harnesses[@]}"
