#!/usr/bin/env bash
# run.sh - memory benchmark: xhloc's buffer assignment (host and GPU targets)
# against XLA CPU's compiled memory stats on the corpus models (issue #23).
#
#   bench/memory/run.sh [--only REGEX] [--no-xla] [--refresh-xla]
#                       [--retry-failed] [--timeout S] [--real-dumps]
#                       [--stats] [--tsv FILE] [--corpus DIR]
#
# XLA's figures come from bench/memory/xla-cpu-memory.tsv (checked in) and
# are compiled only for modules missing there (or with --refresh-xla), with
# jax from the venv $XHLO_BENCH_VENV (default build/bench-venv, the one
# `make bench-xla` uses; created with jax, numpy and ml_dtypes on first
# use, which needs PyPI).  --no-xla reads the cache only and needs no jax:
# plain python3.  Builds xhloc unless $XHLOC_BIN names it.  `make check`
# runs only the --no-xla path (tests/check-bench-memory.sh).  Exit 0 when it
# ran; memory.py --help (or its docstring) says the rest.
set -euo pipefail
# No cd: --tsv, --corpus and --cache paths are the caller's.
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
no_xla=0
for a in "$@"; do
  case $a in
    --no-xla) no_xla=1 ;;
    -h|--help) exec python3 "$here/memory.py" --help ;;
  esac
done
if [ -z "${XHLOC_BIN:-}" ]; then
  make -s -C "$root" build/bin/xhloc >&2
fi
if [ "$no_xla" = 1 ]; then
  exec python3 "$here/memory.py" "$@"
fi
venv=${XHLO_BENCH_VENV:-$root/build/bench-venv}
if [ ! -x "$venv/bin/python" ] || ! "$venv/bin/python" -c "import jax, ml_dtypes" 2>/dev/null; then
  echo "bench: creating $venv with jax (CPU), numpy and ml_dtypes" >&2
  python3 -m venv "$venv"
  "$venv/bin/pip" install -q jax numpy ml_dtypes
fi
exec "$venv/bin/python" "$here/memory.py" "$@"
