#!/usr/bin/env bash
# run.sh - xhloc against XLA (jax from PyPI) on the same programs and inputs.
#
#   bench/xla-compare/run.sh [--only REGEX] [--group 11|12|13|all] [--quick]
#                            [--platform host|cuda] [--threads N]
#
# Creates build/bench-venv (jax, numpy, ml_dtypes) on first use, builds
# xhloc and xhlo-run, and runs xla_compare.py from the repository root.
# Needs network access to PyPI the first time; `make check` never runs it.
set -euo pipefail
cd "$(dirname "$0")/../.."
venv=${XHLO_BENCH_VENV:-build/bench-venv}
if [ ! -x "$venv/bin/python" ] || ! "$venv/bin/python" -c "import jax, ml_dtypes" 2>/dev/null; then
  echo "bench: creating $venv with jax (CPU), numpy and ml_dtypes" >&2
  python3 -m venv "$venv"
  "$venv/bin/pip" install -q jax numpy ml_dtypes
fi
make -s build/bin/xhloc build/bin/xhlo-run
exec "$venv/bin/python" bench/xla-compare/xla_compare.py "$@"
