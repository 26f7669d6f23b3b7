#!/usr/bin/env bash
# gpu_smoke_host.sh - the GPU benchmark's whole plumbing where there is no GPU:
# every program of gpu_programs.py at a toy size (gpu_prepare.py --small),
# compiled by xhloc for the host, then gpu_bench.py on that directory with
# xhlo-run --platform=host against XLA:CPU (the same HLO text, inputs made
# from the seed, outputs checked, kernels counted, the summary).  The times
# mean nothing; the point is that each step runs.  Needs jax (CPU), numpy
# and ml_dtypes: $XHLO_BENCH_PYTHON, else build/bench-venv (made by
# bench/xla-compare/run.sh).  Never run by `make check`.
#
#   bench/xla-compare/gpu_smoke_host.sh [DIR] [gpu_bench.py options]
set -euo pipefail
cd "$(dirname "$0")/../.."
py=${XHLO_BENCH_PYTHON:-build/bench-venv/bin/python}
dir=${1:-build/gpu-bench-host}
shift || true
make -s -j2 build/bin/xhloc build/bin/xhlo-run
"$py" bench/xla-compare/gpu_prepare.py "$dir" --small --target=host
exec "$py" bench/xla-compare/gpu_bench.py "$dir" --platform=host --xla-device=cpu --quick \
  --gpu-name="NVIDIA H100 80GB HBM3" "$@"
