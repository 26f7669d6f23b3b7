"""xla_compare.py - xhloc against XLA on the same programs, inputs and machine.

For each program of programs.py: lower it with JAX to HLO text, save its
inputs as .npy, then
  - XLA: load that HLO text (hlo_module_from_text), convert it to StableHLO
    and compile it with the JAX client's compile_and_load; time the median
    of N executions (inputs already on the device, outputs ready);
  - xhloc: compile the same text with `xhloc [--target=host] -o PREFIX`,
    run `xhlo-run PREFIX.thunks --iterations=N --device-resident` on the same
    inputs (inputs and results kept on the device between runs, as XLA's
    are) and take its "execution (thunks only)" median;
and check xhloc's outputs against XLA's (a wrong answer is reported as
WRONG, never timed as a success).  Prints a table with each ratio
xhloc/XLA (below 1: xhloc is faster), compile times, and the geometric
means per group.  Run it through bench/xla-compare/run.sh.
"""
import argparse
import math
import os
import re
import subprocess
import sys
import time

import numpy as np

import jax
import ml_dtypes
from jax._src.lib import hlo, xla_client
import jaxlib._jax as _jax

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from programs import PROGRAMS  # noqa: E402


def tolerance(dtype):
    if dtype == ml_dtypes.bfloat16:
        return 3e-2
    if dtype == np.float16:
        return 4e-3
    return 1e-3


def rel_error(got, want):
    g = np.asarray(got, np.float64)
    w = np.asarray(want, np.float64)
    if g.shape != w.shape:
        return float("inf")
    if g.size == 0:
        return 0.0
    return float(np.max(np.abs(g - w)) / max(1.0, float(np.max(np.abs(w)))))


def iterations(one_ms, budget_ms):
    return int(min(50, max(3, budget_ms / max(one_ms, 1e-3))))


def run_xla(text, leaves, device, budget_ms):
    client = device.client
    t0 = time.perf_counter()
    module = hlo.hlo_module_from_text(text)
    stablehlo = _jax.mlir.hlo_to_stablehlo(module.as_serialized_hlo_module_proto())
    exe = client.compile_and_load(stablehlo, xla_client.DeviceList((device,)),
                                  xla_client.CompileOptions())
    compile_ms = (time.perf_counter() - t0) * 1e3
    bufs = [jax.device_put(x, device) for x in leaves]

    def once():
        t = time.perf_counter()
        res = exe.execute_sharded(bufs).disassemble_into_single_device_arrays()
        for r in res:
            r[0].block_until_ready()
        return (time.perf_counter() - t) * 1e3, res

    once()
    first, res = once()
    n = iterations(first, budget_ms)
    times = [once()[0] for _ in range(n)]
    outs = [np.asarray(r[0]) for r in res]
    return compile_ms, float(np.median(times)), outs


def run_xhloc(args, name, text_path, leaves, out_dtypes, budget_ms, work):
    prefix = os.path.join(work, name)
    cmd = [args.xhloc, text_path, "-o", prefix]
    if args.platform == "host":
        cmd.insert(1, "--target=host")
    # an earlier run's artifact goes first, outside the timing: replacing it
    # would charge the compile for freeing its blocks (a synchronous discard
    # on a filesystem mounted with -o discard); XLA writes no file at all
    for ext in (".thunks", ".host.so", ".ptx"):
        if os.path.exists(prefix + ext):
            os.unlink(prefix + ext)
    t0 = time.perf_counter()
    p = subprocess.run(cmd, capture_output=True, text=True)
    compile_ms = (time.perf_counter() - t0) * 1e3
    if p.returncode != 0:
        return None, None, None, "xhloc: " + (p.stderr.strip().splitlines() or ["failed"])[0]
    ins = []
    for k, x in enumerate(leaves):
        path = os.path.join(work, "%s.in%d.npy" % (name, k))
        np.save(path, x)
        ins.append("--input=@" + path)
    outs = [os.path.join(work, "%s.out%d.npy" % (name, k)) for k in range(len(out_dtypes))]
    base = [args.xhlo_run, prefix + ".thunks", "--platform=" + args.platform,
            "--device-resident"] + ins
    if args.threads:
        base.append("--threads=%d" % args.threads)

    def run(n, with_outputs):
        c = base + ["--iterations=%d" % n, "--quiet"]
        if with_outputs:
            c = base + ["--iterations=%d" % n] + ["--output=@" + o for o in outs]
        r = subprocess.run(c, capture_output=True, text=True)
        if r.returncode != 0:
            return None, "xhlo-run: " + (r.stderr.strip().splitlines() or ["failed"])[-1]
        m = re.search(r"execution \(thunks only\): min [\d.]+ ms, median ([\d.]+) ms", r.stdout)
        return (float(m.group(1)) if m else None), None

    first, err = run(2, True)
    if err:
        return compile_ms, None, None, err
    n = iterations(first, budget_ms)
    ms, err = run(n, False)
    if err:
        return compile_ms, None, None, err
    got = []
    for o, dt in zip(outs, out_dtypes):
        a = np.load(o)
        if a.dtype.kind == "V":
            a = a.view(dt)
        got.append(a)
    return compile_ms, ms, got, None


def geomean(xs):
    xs = [x for x in xs if x and x > 0 and math.isfinite(x)]
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else float("nan")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", default="", help="run the programs whose name matches this regex")
    ap.add_argument("--group", choices=["11", "12", "13", "all"], default="all")
    ap.add_argument("--quick", action="store_true", help="fewer iterations")
    ap.add_argument("--platform", choices=["host", "cuda"], default="host",
                    help="cuda: xhloc's PTX on the GPU against XLA:GPU (not run on a GPU yet)")
    ap.add_argument("--threads", type=int, default=0, help="xhlo-run --threads")
    ap.add_argument("--xhloc", default="build/bin/xhloc")
    ap.add_argument("--xhlo-run", dest="xhlo_run", default="build/bin/xhlo-run")
    ap.add_argument("--work", default="build/bench-xla")
    args = ap.parse_args()
    os.makedirs(args.work, exist_ok=True)
    device = jax.devices("gpu" if args.platform == "cuda" else "cpu")[0]
    budget = 300.0 if args.quick else 1500.0
    print("xhloc vs XLA on %s (%s), jax %s; times are medians in ms; ratio = xhloc / XLA"
          % (device.device_kind, args.platform, jax.__version__))
    hdr = "%-24s %3s %10s %10s %7s %11s %11s %7s  %s" % (
        "program", "grp", "XLA ms", "xhloc ms", "ratio", "XLA cmp ms", "xhloc cmp", "cmp r", "check")
    print(hdr)
    print("-" * len(hdr))
    rows = []
    for name, (group, build) in PROGRAMS.items():
        if args.group != "all" and group != args.group:
            continue
        if args.only and not re.search(args.only, name):
            continue
        f, fargs = build()
        leaves = jax.tree_util.tree_leaves(fargs)
        text = jax.jit(f).lower(*fargs).as_text(dialect="hlo")
        text_path = os.path.join(args.work, name + ".hlo")
        with open(text_path, "w") as fh:
            fh.write(text)
        xc_ms, x_ms, want = run_xla(text, leaves, device, budget)
        c_ms, ms, got, err = run_xhloc(args, name, text_path, leaves,
                                       [w.dtype for w in want], budget, args.work)
        check = "ok"
        if err:
            check = err[:70]
            ms = None
        else:
            errs = [rel_error(g, w) for g, w in zip(got, want)]
            worst = max(errs) if errs else 0.0
            tol = max(tolerance(w.dtype) for w in want) if want else 1e-3
            if worst > tol:
                check = "WRONG (rel error %.2g > %.2g)" % (worst, tol)
                ms = None
            else:
                check = "ok (%.1e)" % worst
        ratio = ms / x_ms if ms else None
        cratio = c_ms / xc_ms if c_ms else None
        rows.append((group, ratio, cratio))
        print("%-24s %3s %10.3f %10s %7s %11.1f %11s %7s  %s" % (
            name, group, x_ms, "%.3f" % ms if ms else "-",
            "%.2f" % ratio if ratio else "-", xc_ms,
            "%.1f" % c_ms if c_ms else "-", "%.2f" % cratio if cratio else "-", check),
            flush=True)
    print()
    for g in ("11", "12", "13"):
        rs = [r for grp, r, _ in rows if grp == g]
        if rs:
            ok = [r for r in rs if r]
            print("group %s: geometric mean ratio %.2f over %d of %d programs; worst %s"
                  % (g, geomean(ok), len(ok), len(rs), "%.2f" % max(ok) if ok else "-"))
    allr = [r for _, r, _ in rows if r]
    print("all: geometric mean ratio %.2f; compile time ratio %.2f"
          % (geomean(allr), geomean([c for _, _, c in rows if c])))


if __name__ == "__main__":
    main()
