#!/usr/bin/env bash
# check-corpus.sh - the corpus sweep: every file of the HLO corpus parses,
# verifies and round-trips, except the rejects listed (with their exact
# reason) in testdata/corpus-rejects.txt.
#
# Environment: XHLOC_CORPUS (default ../shared/hlo-corpus, relative to the
# repository root), XHLOC_TESTBIN (default build/tests).
set -u
corpus=${XHLOC_CORPUS:-../shared/hlo-corpus}
testbin=${XHLOC_TESTBIN:-build/tests}

if [ ! -d "$corpus" ]; then
  echo "check-corpus: FAIL: the corpus directory '$corpus' is missing" \
    "(set XHLOC_CORPUS to its location)"
  echo "check-corpus: 0 passed, 1 failed"
  exit 1
fi
exec "$testbin/corpus_sweep" --rejects testdata/corpus-rejects.txt "$corpus"
