#!/usr/bin/env bash
# check-indexing.sh - golden tests of xhloc --stage=indexing (seed 000).
#
# For every testdata/indexing/NAME.hlo:
#   - the report equals NAME.expected (and, with --input-to-output,
#     NAME.in2out.expected);
#   - every block of NAME.seed / NAME.in2out.seed (the seed's printed maps,
#     blocks separated by "----" lines, '#' lines are comments) appears in
#     the report.
# Reports, expected files and seed text are compared with runs of whitespace
# collapsed to one space, the only difference the seed's copy allows.
#
# Run from the repository root; binaries in ${XHLOC_BIN:-build/bin}.
# Ends with "N passed, N failed".
set -u

bin=${XHLOC_BIN:-build/bin}/xhloc
dir=testdata/indexing
passed=0
failed=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

norm() { # file -> whitespace-collapsed text on stdout
  tr -s ' \t\n' '   ' <"$1" | sed 's/^ //; s/ $//'
}

fail() {
  echo "FAIL: $*"
  failed=$((failed + 1))
}

# check_seed REPORT SEEDFILE: each block must occur in the report.
check_seed() {
  local report=$1 seed=$2 n=0 block text
  norm "$report" >"$tmp/report.norm"
  awk -v out="$tmp/block" '
    /^#/ { next }
    /^----$/ { n++; next }
    { print > (out "." n) }
  ' "$seed"
  for block in "$tmp"/block.*; do
    [ -e "$block" ] || continue
    n=$((n + 1))
    text=$(norm "$block")
    if grep -qF -- "$text" "$tmp/report.norm"; then
      passed=$((passed + 1))
    else
      fail "$seed block $n not in the report: $text"
    fi
    rm -f "$block"
  done
}

# check_one HLO SUFFIX FLAGS...
check_one() {
  local hlo=$1 suffix=$2 name expected seed
  shift 2
  name=${hlo%.hlo}
  expected=$name$suffix.expected
  seed=$name$suffix.seed
  if ! "$bin" --stage=indexing "$@" "$hlo" >"$tmp/out" 2>"$tmp/err"; then
    fail "$hlo $*: xhloc failed: $(head -n 3 "$tmp/err")"
    return
  fi
  if [ -f "$expected" ]; then
    if [ "$(norm "$tmp/out")" = "$(norm "$expected")" ]; then
      passed=$((passed + 1))
    else
      fail "$hlo $*: report differs from $expected"
      diff "$expected" "$tmp/out" | head -n 20
    fi
  fi
  [ -f "$seed" ] && check_seed "$tmp/out" "$seed"
}

for hlo in "$dir"/*.hlo; do
  check_one "$hlo" ""
  check_one "$hlo" .in2out --input-to-output
done

# The option is refused without the stage that uses it.
if "$bin" --input-to-output "$dir/broadcast.hlo" >/dev/null 2>&1; then
  fail "--input-to-output accepted without --stage=indexing"
else
  passed=$((passed + 1))
fi

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
