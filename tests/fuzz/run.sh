#!/usr/bin/env bash
# run.sh - run the libFuzzer harnesses (make fuzz, make fuzz-smoke).
#
#   tests/fuzz/run.sh fuzz  SECONDS HARNESS...   fuzz each harness SECONDS
#   tests/fuzz/run.sh smoke SECONDS HARNESS...   replay tests/fuzz/regressions/*
#                                                then fuzz SECONDS in all
#
# Run from the repository root after the harnesses are built into
# build-fuzz/bin; FUZZ_FLAGS passes more libFuzzer flags (e.g. -only_ascii=1).
# Each harness keeps its growing corpus in build-fuzz/corpus/NAME; the seeds are tests/fuzz/corpus, testdata/examples,
# testdata/errors and the corpus files of at most 8 KB (XHLOC_CORPUS, default
# ../shared/hlo-corpus).  A crash, leak, timeout or out-of-memory stops the
# run, leaves the reproducer in build-fuzz/artifacts/ and fails.  Once the bug
# is fixed, keep the reproducer in tests/fuzz/regressions/ so that every
# `make check` replays it.
set -u
mode=${1:-}
seconds=${2:-}
shift 2 || true
if [ -z "$mode" ] || [ -z "$seconds" ] || [ $# -eq 0 ]; then
  echo "usage: tests/fuzz/run.sh fuzz|smoke SECONDS HARNESS..." >&2
  exit 2
fi

out=build-fuzz
corpus=${XHLOC_CORPUS:-../shared/hlo-corpus}
seeds=$out/seeds
mkdir -p "$out/artifacts" "$seeds"

# The small corpus files, copied once (libFuzzer writes only into the first
# corpus directory, but keeping inputs out of the shared tree is cleaner).
if [ -d "$corpus" ] && [ ! -f "$seeds/.done" ]; then
  find "$corpus" -maxdepth 1 -name '*.hlo' -size -8193c -exec cp {} "$seeds/" \;
  touch "$seeds/.done"
fi
seed_dirs=()
for d in tests/fuzz/corpus testdata/examples testdata/errors "$seeds"; do
  [ -d "$d" ] && seed_dirs+=("$d")
done

# FUZZ_FLAGS adds libFuzzer flags (e.g. -only_ascii=1, -jobs=2).
common=(-max_len=8192 -timeout=10 -rss_limit_mb=2048 -print_final_stats=1)
[ -f "$out/hlo.dict" ] && common+=(-dict="$out/hlo.dict")
# shellcheck disable=SC2206
common+=(${FUZZ_FLAGS:-})

status=0
if [ "$mode" = smoke ]; then
  shopt -s nullglob
  regressions=(tests/fuzz/regressions/*)
  for h in "$@"; do
    name=$(basename "$h")
    if [ ${#regressions[@]} -gt 0 ]; then
      echo "fuzz-smoke: $name: replaying ${#regressions[@]} regression input(s)"
      if ! "$h" -timeout=10 -rss_limit_mb=2048 "${regressions[@]}" >"$out/$name.replay.log" 2>&1; then
        tail -n 40 "$out/$name.replay.log"
        echo "fuzz-smoke: FAIL: $name crashes on a tests/fuzz/regressions input (log: $out/$name.replay.log)"
        status=1
      fi
    fi
  done
  per=$((seconds / $#))
  [ "$per" -ge 1 ] || per=1
else
  per=$seconds
fi

for h in "$@"; do
  name=$(basename "$h")
  mkdir -p "$out/corpus/$name"
  log=$out/$name.log
  echo "$mode: $name for ${per}s (log: $log)"
  before=$(find "$out/artifacts" -name "$name-*" | sort)
  "$h" "${common[@]}" -max_total_time="$per" \
    -artifact_prefix="$out/artifacts/$name-" \
    "$out/corpus/$name" "${seed_dirs[@]}" >"$log" 2>&1
  rc=$?
  # New reproducers count even when libFuzzer went on (-fork=1
  # -ignore_crashes=1 exits 0).
  found=$(comm -13 <(echo "$before") <(find "$out/artifacts" -name "$name-*" | sort) | grep -v '^$')
  # The totals: the last status line (-fork mode), or the final stats.
  if grep -qaE '^#[0-9]+: cov: .*crash: [0-9]' "$log"; then
    grep -aE '^#[0-9]+: cov: .*crash: [0-9]' "$log" | tail -n 1 | sed "s/^/  /"
  else
    grep -aE '^(stat::number_of_executed_units|stat::peak_rss_mb)' "$log" | tail -n 2 | sed "s/^/  /"
  fi
  if [ $rc -ne 0 ] || [ -n "$found" ]; then
    status=1
    [ $rc -ne 0 ] && tail -n 60 "$log"
    echo "$mode: FAIL: $name found a bug (exit status $rc); reproducers:"
    printf '%s\n' "$found" | sed 's/^/  /'
  fi
done

passed=$((status == 0 ? 1 : 0))
echo "fuzz-$mode: $passed passed, $status failed"
exit $status
