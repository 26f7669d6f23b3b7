"""gpu_prepare.py - the GPU benchmark's files, made where xhloc and JAX (CPU) run.

For each program of gpu_programs.py (issue #22's real sizes): lower it with
JAX for CUDA (jax.jit(f).trace(...).lower(lowering_platforms=("cuda",)),
from abstract arguments: no array is made here) to HLO text (NAME.hlo),
compile that text with `xhloc -o OUT/NAME` (NAME.thunks and NAME.ptx; the
wall time is xhloc's compile time), count the artifact's thunks
(`xhlo-run --describe`: kernels, library calls, copies and memsets), and
write OUT/manifest.json: per program its files, the inputs' shapes, dtypes
and how the GPU machine makes their values from the seed (no input is
shipped: at these sizes they are gigabytes), the outputs' shapes and
dtypes, the FLOPs of XLA's cost analysis (times the loop's trips), the least
bytes it moves, or xhloc's error where xhloc cannot compile it (the row then
says so on the GPU machine).  gpu_bench.py reads that directory on the GPU
machine.  Run by scripts/gpu-check.sh --prepare.

--small builds every program at a toy size and --target=host compiles for
the host: with both, gpu_bench.py --platform=host --xla-device=cpu runs the
whole benchmark's plumbing on a machine without a GPU
(tests/check-gpu-bench-host.sh).
"""
import argparse
import json
import math
import os
import re
import resource
import subprocess
import sys
import time

import numpy as np

import jax

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gpu_programs as G  # noqa: E402

# thunk kinds that are a library call (cuBLASLt, cuBLAS, cuDNN, cuFFT, ...)
LIBRARY_KINDS = ("kCublasLtMatmul", "kGemm", "kConvolution", "kCudnn", "kFft",
                 "kCustomCall", "kTriangularSolve", "kCholesky")


def count_thunks(describe):
    """{kind: count} of every thunk of `xhlo-run --describe`'s listing, nested
    ones (command buffers, while bodies: once each) included."""
    counts = {}
    on = False
    for line in describe.splitlines():
        if line.startswith("thunks:"):
            on = True
            continue
        m = re.match(r"\s*\d+: (k[A-Za-z0-9]+)", line) if on else None
        if m:
            counts[m.group(1)] = counts.get(m.group(1), 0) + 1
    return counts


def summarize_counts(counts):
    lib = sum(n for k, n in counts.items() if k.startswith(LIBRARY_KINDS))
    return {"kernels": counts.get("kKernel", 0), "library": lib,
            "copies": counts.get("kCopy", 0) + counts.get("kMemset", 0),
            "while": counts.get("kWhile", 0) + counts.get("kConditional", 0),
            "by_kind": counts}


def children_cpu():
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out", help="directory for the programs' files")
    ap.add_argument("--only", default="", help="programs whose name matches this regex")
    ap.add_argument("--xhloc", default="build/bin/xhloc")
    ap.add_argument("--xhlo-run", dest="xhlo_run", default="build/bin/xhlo-run",
                    help="for --describe (the thunk counts); no GPU needed")
    ap.add_argument("--small", action="store_true", help="toy sizes (to try the plumbing)")
    ap.add_argument("--target", choices=["gpu", "host"], default="gpu")
    ap.add_argument("--seed", type=int, default=0, help="the inputs' seed (recorded)")
    ap.add_argument("--timeout", type=int, default=600, help="seconds per xhloc compile")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    manifest = []
    failed = 0
    t_all = time.perf_counter()
    for name, prog in G.PROGRAMS.items():
        if args.only and not re.search(args.only, name):
            continue
        t0 = time.perf_counter()
        f, spec_tree = (prog.small if args.small else prog.build)()
        specs = jax.tree_util.tree_leaves(spec_tree)
        sds = jax.tree_util.tree_map(
            lambda s: jax.ShapeDtypeStruct(s.shape, G.np_dtype(s.dtype)), spec_tree)
        lowered = jax.jit(f).trace(*sds).lower(lowering_platforms=("cuda",))
        text = lowered.as_text(dialect="hlo")
        outs = jax.tree_util.tree_leaves(jax.eval_shape(f, *sds))
        trips = G.SMALL_TRIPS.get(name, prog.trips) if args.small else prog.trips
        try:
            ca = lowered.cost_analysis()
            if isinstance(ca, (list, tuple)):
                ca = ca[0] if ca else {}
            flops = float(ca.get("flops", 0.0)) * trips if ca else None
        except Exception:  # noqa: BLE001 - cost analysis is best effort
            flops = None
        lower_s = time.perf_counter() - t0
        hlo_path = os.path.join(args.out, name + ".hlo")
        with open(hlo_path, "w") as fh:
            fh.write(text)
        prefix = os.path.join(args.out, name)
        # an earlier run's artifact goes first, outside the timing (as in
        # xla_compare.py: replacing it would charge the compile for freeing it)
        for ext in (".thunks", ".ptx", ".host.so"):
            if os.path.exists(prefix + ext):
                os.unlink(prefix + ext)
        cmd = [args.xhloc, hlo_path, "-o", prefix]
        if args.target == "host":
            cmd.insert(1, "--target=host")
        c0, w0 = children_cpu(), time.perf_counter()
        err = None
        try:
            p = subprocess.run(cmd, capture_output=True, text=True, timeout=args.timeout)
            if p.returncode != 0:
                lines = [ln for ln in p.stderr.strip().splitlines() if ln.strip()] or ["failed"]
                err = "xhloc: " + lines[0][:300]
        except subprocess.TimeoutExpired:
            err = "xhloc: timed out after %d s" % args.timeout
        compile_s = time.perf_counter() - w0
        compile_cpu_s = children_cpu() - c0
        counts = None
        if not err:
            d = subprocess.run([args.xhlo_run, prefix + ".thunks", "--describe"],
                               capture_output=True, text=True)
            if d.returncode == 0:
                counts = summarize_counts(count_thunks(d.stdout))
        if err:
            failed += 1
        in_specs = [s.spec() for s in specs]
        in_bytes = sum(math.prod(s.shape) * G.np_dtype(s.dtype).itemsize for s in specs)
        out_bytes = sum(math.prod(o.shape) * np.dtype(o.dtype).itemsize for o in outs)
        traffic = (prog.traffic(in_bytes, out_bytes, in_specs, trips) if prog.traffic
                   else in_bytes + out_bytes)
        kernel_file = name + (".host.so" if args.target == "host" else ".ptx")
        manifest.append({
            "name": name,
            "kind": prog.kind,
            "note": prog.note,
            "small": bool(args.small),
            "hlo": name + ".hlo",
            "thunks": None if err else name + ".thunks",
            "kernel_file": None if err else kernel_file,
            "error": err,
            "inputs_spec": in_specs,
            "outputs": [{"shape": list(o.shape), "dtype": str(np.dtype(o.dtype))} for o in outs],
            "flops": flops,
            "trips": trips,
            "in_bytes": int(in_bytes),
            "out_bytes": int(out_bytes),
            "bytes": int(traffic),
            "xhloc_compile_s": round(compile_s, 4),
            "xhloc_compile_cpu_s": round(compile_cpu_s, 4),
            "xhloc_thunks": counts,
        })
        print("prepared %-22s lower %5.1f s  xhloc %6.2f s  %s" % (
            name, lower_s, compile_s,
            err or "%d kernels + %d library calls" % (counts["kernels"], counts["library"])
            if counts else err or "compiled (no thunk counts)"), flush=True)
    with open(os.path.join(args.out, "manifest.json"), "w") as fh:
        json.dump({"version": 2, "jax": jax.__version__, "seed": args.seed,
                   "target": args.target, "small": bool(args.small),
                   "programs": manifest}, fh, indent=1)
    if not manifest:
        print("gpu_prepare: no program matches %r" % args.only, file=sys.stderr)
        return 1
    print("gpu_prepare: %d programs in %.0f s; xhloc compiled %d, cannot compile %d%s" % (
        len(manifest), time.perf_counter() - t_all, len(manifest) - failed, failed,
        "".join("\n  %s: %s" % (m["name"], m["error"]) for m in manifest if m["error"])))
    # a program xhloc cannot compile is a row of the table, not a failed prepare
    return 0


if __name__ == "__main__":
    sys.exit(main())
