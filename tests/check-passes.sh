#!/usr/bin/env bash
# check-passes.sh - the FileCheck tests of the HLO passes and of the code
# generator's output: a tiny lit.
#
# Every testdata/passes/**/*.hlo and testdata/codegen/**/*.hlo holds one or
# more "// RUN: COMMAND" lines.
# In COMMAND, %s is the test file, %t a scratch path for the test (removed
# first), "xhloc" the xhloc under test (run with --verify-each, so the
# verifier checks every pass), "xhlo-run" the runner next to it,
# "FileCheck" or "FileCheck-19" the FileCheck
# to use, and "not CMD" succeeds when CMD fails.  A test passes when every
# RUN line exits 0 (with pipefail).
# Run from the repository root; XHLOC_BIN names the binaries' directory.
# Arguments, when given, are the test files to run.  Ends with
# "N passed, N failed".
set -u

bin=${XHLOC_BIN:-build/bin}
filecheck=${FILECHECK:-FileCheck-19}
if ! command -v "$filecheck" >/dev/null 2>&1; then
  echo "check-passes: $filecheck not found (scripts/setup.sh installs it)"
  echo "0 passed, 1 failed"
  exit 1
fi

# "not CMD": succeeds when CMD fails.
not() { ! "$@"; }
export -f not

if [ $# -gt 0 ]; then
  tests=("$@")
else
  mapfile -t tests < <(find testdata/passes testdata/codegen -name '*.hlo' | LC_ALL=C sort)
fi

passed=0
failed=0
out=$(mktemp)
scratch=$(mktemp -d)
trap 'rm -rf "$out" "$scratch"' EXIT
for t in "${tests[@]}"; do
  mapfile -t runs < <(sed -n 's|^// RUN: *||p' "$t")
  if [ ${#runs[@]} -eq 0 ]; then
    echo "FAIL: $t: no RUN line"
    failed=$((failed + 1))
    continue
  fi
  ok=1
  tmp=$scratch/$(basename "$t").tmp
  rm -rf "$tmp"
  for r in "${runs[@]}"; do
    cmd=${r//%s/$t}
    cmd=${cmd//%t/$tmp}
    cmd=$(printf '%s' "$cmd" | sed -E \
      -e "s#(^|[|;&( ])xhloc #\\1$bin/xhloc --verify-each #g" \
      -e "s#(^|[|;&( ])xhlo-run #\\1$bin/xhlo-run #g" \
      -e "s#(^|[|;&( ])FileCheck(-19)? #\\1$filecheck #g")
    if ! bash -o pipefail -c "$cmd" >"$out" 2>&1; then
      echo "FAIL: $t"
      echo "  RUN: $cmd"
      sed 's/^/  | /' "$out" | head -n 40
      ok=0
      break
    fi
  done
  if [ $ok -eq 1 ]; then
    passed=$((passed + 1))
  else
    failed=$((failed + 1))
  fi
done
echo "check-passes: ${#tests[@]} test files"
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
