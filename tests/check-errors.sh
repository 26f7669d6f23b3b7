#!/usr/bin/env bash
# check-errors.sh - every testdata/errors/X.hlo must be refused with exactly
# the report in testdata/errors/X.err.
#
# Runs `$XHLOC_BIN/xhloc --stage=parsed testdata/errors/X.hlo` from the
# repository root and expects exit status 1, nothing on stdout, and stderr
# byte-for-byte equal to X.err (a diff is shown otherwise).
set -u
bin=${XHLOC_BIN:-build/bin}
pass=0 fail=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

shopt -s nullglob
files=(testdata/errors/*.hlo)
if [ ${#files[@]} -eq 0 ]; then
  echo "check-errors: FAIL: no testdata/errors/*.hlo (run from the repository root)"
  echo "check-errors: 0 passed, 1 failed"
  exit 1
fi

for f in "${files[@]}"; do
  want=${f%.hlo}.err
  if [ ! -f "$want" ]; then
    echo "FAIL $f: no $want"
    fail=$((fail + 1))
    continue
  fi
  "$bin/xhloc" --stage=parsed "$f" >"$tmp/out" 2>"$tmp/err"
  rc=$?
  problems=()
  [ "$rc" -eq 1 ] || problems+=("exit status $rc, want 1")
  [ -s "$tmp/out" ] && problems+=("stdout is not empty")
  cmp -s "$want" "$tmp/err" || problems+=("stderr differs from $want")
  if [ ${#problems[@]} -eq 0 ]; then
    pass=$((pass + 1))
    continue
  fi
  fail=$((fail + 1))
  echo "FAIL $f: $(IFS=';'; echo "${problems[*]}")"
  if ! cmp -s "$want" "$tmp/err"; then
    diff -u --label "$want" --label "stderr" "$want" "$tmp/err" | head -n 30
  fi
  if [ -s "$tmp/out" ]; then
    echo "--- stdout:"
    head -n 10 "$tmp/out"
  fi
done

echo "check-errors: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
