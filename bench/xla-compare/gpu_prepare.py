"""gpu_prepare.py - the GPU benchmark's files, made where xhloc and JAX (CPU) run.

For each selected program of programs.py: lower it with JAX to HLO text
(jax.jit(f).lower(...).as_text(dialect="hlo")), compile that text for the GPU
with `xhloc -o OUT/NAME` (NAME.thunks and NAME.ptx), save its inputs
(NAME.in<k>.npy) and the outputs JAX computes on the CPU (NAME.want<k>.npy,
the reference both xhloc and XLA:GPU are checked against), and write
OUT/manifest.json: per program its files, dtypes, the FLOPs XLA's cost
analysis counts and the bytes of its inputs and outputs.  gpu_bench.py reads
that directory on the GPU machine, where neither LLVM nor a CPU reference is
needed.  Run by scripts/gpu-check.sh --prepare.
"""
import argparse
import json
import os
import re
import subprocess
import sys

import numpy as np

import jax

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import programs as P  # noqa: E402
from xla_compare import tolerance  # noqa: E402

# matmul, conv block, softmax, layernorm, transformer block, MLP training
# step, sized so that the whole directory (inputs and reference outputs
# included, about 51 MB) fits what a session carries to the GPU machine
# (64 MiB with the e2e artifacts); --programs=all adds programs.py's own
GPU_PROGRAMS = {
    "matmul_bf16_1024": P.matmul(1024, P.ml_dtypes.bfloat16),
    "conv_block_4x56x56x64": lambda: P.conv_block(4),
    "softmax_1024x1024": lambda: P.softmax(1024, 1024),
    "layernorm_gelu_1024": lambda: P.layernorm_gelu(1024, 1024),
    "transformer_block_2": lambda: P.transformer_block(2),
    "mlp_train_step_512": lambda: P.mlp_train_step(512),
}

# programs whose inputs the GPU machine makes itself (xhlo-run
# --random-inputs, checked against the interpreter with --compare), so that
# their 4 and 8 MB of inputs do not have to travel: sort and top-k (#13)
GENERATED_PROGRAMS = {
    "sort_256x4096": P.sort_rows,
    "top_k16_512x4096": P.top_k,
}


def flops_of(lowered):
    try:
        ca = lowered.compile().cost_analysis()
        if isinstance(ca, (list, tuple)):
            ca = ca[0] if ca else {}
        f = float(ca.get("flops", 0.0)) if ca else 0.0
        return f if f > 0 else None
    except Exception:  # noqa: BLE001 - cost analysis is best effort
        return None


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out", help="directory for the programs' files")
    ap.add_argument("--only", default="", help="programs whose name matches this regex")
    ap.add_argument("--programs", choices=["gpu", "all"], default="gpu",
                    help="gpu: the GPU set (default); all: it and programs.py's")
    ap.add_argument("--xhloc", default="build/bin/xhloc")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    cpu = jax.devices("cpu")[0]
    manifest = []
    failed = 0
    progs = dict(GPU_PROGRAMS)
    progs.update(GENERATED_PROGRAMS)
    if args.programs == "all":
        progs.update({n: b for n, (_, b) in P.PROGRAMS.items()})
    for name, build in progs.items():
        if args.only and not re.search(args.only, name):
            continue
        f, fargs = build()
        leaves = jax.tree_util.tree_leaves(fargs)
        lowered = jax.jit(f).lower(*fargs)
        text = lowered.as_text(dialect="hlo")
        hlo_path = os.path.join(args.out, name + ".hlo")
        with open(hlo_path, "w") as fh:
            fh.write(text)
        with jax.default_device(cpu):
            want = [np.asarray(w) for w in jax.tree_util.tree_leaves(jax.jit(f)(*fargs))]
        ins, wants = [], []
        generated = name in GENERATED_PROGRAMS
        for k, x in enumerate([] if generated else leaves):
            ins.append("%s.in%d.npy" % (name, k))
            np.save(os.path.join(args.out, ins[-1]), np.asarray(x))
        for k, w in enumerate([] if generated else want):
            wants.append("%s.want%d.npy" % (name, k))
            np.save(os.path.join(args.out, wants[-1]), w)
        p = subprocess.run([args.xhloc, hlo_path, "-o", os.path.join(args.out, name)],
                           capture_output=True, text=True)
        err = None
        if p.returncode != 0:
            err = "xhloc: " + (p.stderr.strip().splitlines() or ["failed"])[0]
            failed += 1
        # xla_compare's measure, max |got - want| / max(1, max |want|) <= tol,
        # as one absolute tolerance for xhlo-run (the strictest output's)
        tol = max(tolerance(w.dtype) for w in want) if want else 1e-3
        scale = min((max(1.0, float(np.max(np.abs(np.asarray(w, np.float64)))))
                     if w.size else 1.0) for w in want) if want else 1.0
        nbytes = sum(np.asarray(x).nbytes for x in leaves) + sum(w.nbytes for w in want)
        manifest.append({
            "name": name,
            "hlo": name + ".hlo",
            "thunks": None if err else name + ".thunks",
            "error": err,
            "generated": generated,
            "inputs": ins,
            "input_dtypes": [str(np.asarray(x).dtype) for x in leaves],
            "input_shapes": [list(np.shape(x)) for x in leaves],
            "wants": wants,
            "want_dtypes": [str(w.dtype) for w in want],
            "tolerance": tol,
            "atol": tol * scale,
            "flops": flops_of(lowered),
            "bytes": int(nbytes),
        })
        print("prepared %-24s %s" % (name, err or "ok"), flush=True)
    with open(os.path.join(args.out, "manifest.json"), "w") as fh:
        json.dump({"jax": jax.__version__, "programs": manifest}, fh, indent=1)
    if not manifest:
        print("gpu_prepare: no program matches %r" % args.only, file=sys.stderr)
        return 1
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
