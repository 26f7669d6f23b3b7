#!/usr/bin/env bash
# check-eval-corpus.sh - the interpreter's corpus sweep: every module of the
# HLO corpus runs in the reference interpreter on deterministic random inputs
# (index operands in range), under a memory budget of 256 MiB of live values
# (modules whose inputs alone take more than a quarter of it are refused up
# front) and a time budget per module.  Prints the modules run, the modules
# refused with the op (or custom-call target) that refused them, and the
# budget refusals.  Fails on any crash, hard timeout, or error that is not an
# unsupported-op or budget refusal.
#
# Environment: XHLOC_CORPUS (default ../shared/hlo-corpus, relative to the
# repository root), XHLOC_TESTBIN (default build/tests),
# XHLOC_EVAL_TIME_BUDGET (seconds per module, default 3).  Under a
# sanitizer build (a test directory with "asan" in its name) every 6th file
# runs, with a 10 s budget.
set -u
corpus=${XHLOC_CORPUS:-../shared/hlo-corpus}
testbin=${XHLOC_TESTBIN:-build/tests}
budget=${XHLOC_EVAL_TIME_BUDGET:-3}

if [ ! -d "$corpus" ]; then
  echo "check-eval-corpus: FAIL: the corpus directory '$corpus' is missing" \
    "(set XHLOC_CORPUS to its location)"
  echo "0 passed, 1 failed"
  exit 1
fi
if [ ! -x "$testbin/eval_sweep" ]; then
  echo "check-eval-corpus: FAIL: $testbin/eval_sweep is missing (run make test-bins)"
  echo "0 passed, 1 failed"
  exit 1
fi
# A sanitizer build (build-asan) is several times slower: it runs a fixed
# sample of the corpus with longer limits.
extra=()
case "$testbin" in
  *asan*) extra=(--every 6 --time-budget 10 --hard-timeout 120) ;;
esac
exec "$testbin/eval_sweep" --mem-budget 268435456 --time-budget "$budget" \
  "${extra[@]+"${extra[@]}"}" "$corpus"
