"""gpu_bench.py - the GPU benchmark's run, on the GPU machine (no LLVM there).

Reads DIR/manifest.json that gpu_prepare.py wrote with the programs' HLO
text, xhloc artifacts, inputs and CPU reference outputs, and for each
program:
  - xhloc: `xhlo-run NAME.thunks --platform=cuda` on the saved inputs,
    checked against the reference (--expected-output, with an absolute
    tolerance of tol * max(1, max |reference|), the measure xla_compare.py
    uses), timed by the median "execution (thunks only)" of N runs;
  - XLA:GPU, when jax with CUDA is importable: the same HLO text and inputs
    through xla_compare.run_xla, checked against the same reference;
and prints a table: time per program, the ratio xhloc / XLA, and the
achieved TFLOP/s (XLA's FLOP count) and GB/s (the bytes of the inputs and
outputs, the least any implementation moves) against the GPU's peaks, from
a table of H100/H200 figures chosen by the GPU's name (--gpu-name, else
nvidia-smi, else jax's device kind).

The xhloc part needs only Python's standard library.  Exit 0 when every
xhloc program ran and matched, 1 otherwise.
"""
import argparse
import json
import math
import os
import re
import shutil
import subprocess
import sys

# name pattern -> (label, bf16 dense TFLOP/s, TF32 dense TFLOP/s, TB/s),
# NVIDIA's datasheet figures (dense: without structured sparsity)
PEAKS = [
    (r"H200", ("H200", 989.4, 494.7, 4.8)),
    (r"H100.*(PCIe)", ("H100 PCIe", 756.0, 378.0, 2.0)),
    (r"H100.*NVL", ("H100 NVL", 835.0, 417.5, 3.9)),
    (r"H100", ("H100 SXM", 989.4, 494.7, 3.35)),
]


def gpu_name(given):
    if given:
        return given, "given"
    if shutil.which("nvidia-smi"):
        try:
            p = subprocess.run(["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"],
                               capture_output=True, text=True, timeout=30)
            if p.returncode == 0 and p.stdout.strip():
                return p.stdout.strip().splitlines()[0].strip(), "nvidia-smi"
        except (OSError, subprocess.SubprocessError):
            pass
    return None, None


def peaks_for(name):
    for pat, peak in PEAKS:
        if name and re.search(pat, name):
            return peak
    return None


def load_jax():
    """(xla_compare module, device) or (None, reason)."""
    try:
        import jax  # noqa: F401
    except Exception as e:  # noqa: BLE001
        return None, "no jax (%s)" % str(e).splitlines()[0]
    try:
        gpus = jax.devices("gpu")
    except Exception as e:  # noqa: BLE001
        return None, "jax %s has no CUDA backend (%s)" % (jax.__version__,
                                                            str(e).splitlines()[0])
    try:
        sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
        import xla_compare
    except Exception as e:  # noqa: BLE001
        return None, "xla_compare.py does not load with jax %s (%s)" % (
            jax.__version__, str(e).splitlines()[0])
    return xla_compare, gpus[0]


def parse_median(out):
    m = re.search(r"execution \(thunks only\): min [\d.]+ ms, median ([\d.]+) ms", out)
    return float(m.group(1)) if m else None


def iterations(one_ms, budget_ms):
    return int(min(50, max(3, budget_ms / max(one_ms, 1e-3))))


def run_xhloc(args, d, prog, budget_ms):
    """(median ms, median ms with --command-buffers=off, None) or (None, None, why).

    A program with "generated" inputs runs on xhlo-run's --random-inputs and
    is checked against the interpreter (--compare); the others run on the
    saved inputs and are checked against XLA CPU's outputs."""
    if not prog.get("thunks"):
        return None, None, prog.get("error") or "not compiled"
    base = [args.xhlo_run, os.path.join(d, prog["thunks"]), "--platform=cuda", "--quiet"]
    if prog.get("generated"):
        base.append("--random-inputs")
    else:
        base += ["--input=@" + os.path.join(d, f) for f in prog["inputs"]]

    def call(extra, n):
        try:
            r = subprocess.run(base + extra + ["--iterations=%d" % n], capture_output=True,
                               text=True, timeout=args.timeout)
        except subprocess.TimeoutExpired:
            return None, "xhlo-run: timed out after %d s" % args.timeout
        if r.returncode != 0:
            lines = (r.stderr.strip() or r.stdout.strip()).splitlines() or ["failed"]
            return None, "xhlo-run: " + lines[-1]
        ms = parse_median(r.stdout)
        return (ms, None) if ms is not None else (None, "xhlo-run printed no timing")

    if prog.get("generated"):
        check = ["--compare"]
    else:
        check = ["--expected-output=@" + os.path.join(d, f) for f in prog["wants"]]
        check += ["--atol=%g" % prog.get("atol", prog["tolerance"]), "--rtol=0"]
    first, err = call(check, 2)
    if err:
        return None, None, err
    n = iterations(first, budget_ms)
    ms, err = call([], n)
    if err:
        return None, None, err
    off, err = call(["--command-buffers=off"], n)
    return ms, off, ("graph off: " + err if err else None)


def run_xla(xc, device, d, prog, budget_ms):
    """(median ms, None) or (None, why)."""
    import numpy as np
    import ml_dtypes
    try:
        with open(os.path.join(d, prog["hlo"])) as fh:
            text = fh.read()
        leaves = []
        if prog.get("generated"):
            rng = np.random.default_rng(42)
            for shape, dt in zip(prog["input_shapes"], prog["input_dtypes"]):
                t = getattr(ml_dtypes, dt, None) or np.dtype(dt)
                leaves.append(rng.uniform(-1, 1, shape).astype(t))
        for f, dt in zip(prog["inputs"], prog["input_dtypes"]):
            x = np.load(os.path.join(d, f))
            if x.dtype.kind == "V":
                x = x.view(getattr(ml_dtypes, dt))
            leaves.append(x)
        _, ms, outs = xc.run_xla(text, leaves, device, budget_ms)
    except Exception as e:  # noqa: BLE001
        return None, "XLA failed: %s" % str(e).splitlines()[0][:60]
    for o, f, dt in zip(outs, prog["wants"], prog["want_dtypes"]):
        w = np.load(os.path.join(d, f))
        if w.dtype.kind == "V":
            w = w.view(getattr(ml_dtypes, dt))
        err = xc.rel_error(o, w)
        if err > prog["tolerance"]:
            return None, "XLA WRONG (rel error %.2g)" % err
    return ms, None


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("dir", help="the directory gpu_prepare.py wrote")
    ap.add_argument("--xhlo-run", dest="xhlo_run", default="build/bin/xhlo-run")
    ap.add_argument("--gpu-name", default="", help="the GPU's name (default: from nvidia-smi)")
    ap.add_argument("--no-xla", action="store_true", help="do not run XLA:GPU")
    ap.add_argument("--quick", action="store_true", help="fewer iterations")
    ap.add_argument("--timeout", type=int, default=180, help="seconds per xhlo-run call")
    args = ap.parse_args()
    try:
        with open(os.path.join(args.dir, "manifest.json")) as fh:
            manifest = json.load(fh)
    except (OSError, ValueError) as e:
        print("gpu_bench: cannot read %s/manifest.json: %s (run scripts/gpu-check.sh "
              "--prepare DIR where xhloc builds)" % (args.dir, e))
        return 1
    budget = 300.0 if args.quick else 1500.0

    name, source = gpu_name(args.gpu_name)
    xc, device = (None, "--no-xla") if args.no_xla else load_jax()
    if xc and not name:
        name, source = device.device_kind, "jax"
    peak = peaks_for(name)
    print("GPU: %s%s" % (name or "unknown", " (from %s)" % source if source else ""))
    if peak:
        print("peaks used (%s, NVIDIA datasheet, dense): %.0f TFLOP/s bf16, %.0f TFLOP/s TF32 "
              "(for f32 programs: XLA's default precision), %.2f TB/s memory"
              % (peak[0], peak[1], peak[2], peak[3]))
    else:
        print("peaks: none known for this GPU (the table has H100 SXM, H100 PCIe, H100 NVL, "
              "H200); no percentages")
    if xc:
        print("XLA: jax %s on %s" % (sys.modules["jax"].__version__, device.device_kind))
    else:
        print("XLA: not run: %s" % device)
    print("times: medians in ms; ratio = xhloc / XLA; MB: the inputs' and outputs' bytes")
    print("graph off: xhloc with --command-buffers=off (every thunk launched on its own)")
    hdr = "%-22s %9s %9s %9s %6s %8s %8s %6s %8s %8s %5s  %s" % (
        "program", "xhloc ms", "graph off", "XLA ms", "ratio", "GFLOP", "TFLOP/s", "%peak", "MB", "GB/s",
        "%bw", "check")
    print(hdr)
    print("-" * len(hdr))
    bad, ratios = 0, []
    for prog in manifest["programs"]:
        ms, off, err = run_xhloc(args, args.dir, prog, budget)
        xms, xerr = (None, None)
        if xc:
            xms, xerr = run_xla(xc, device, args.dir, prog, budget)
        if err:
            bad += 1
        ratio = ms / xms if ms and xms else None     # ms of 0: below the clock's resolution
        if ratio:
            ratios.append(ratio)
        gflop = prog["flops"] / 1e9 if prog.get("flops") else None
        tflops = gflop / ms if gflop and ms else None     # GFLOP / ms = TFLOP/s
        bf16 = "bfloat16" in prog["input_dtypes"] + prog["want_dtypes"]
        roof = (peak[1] if bf16 else peak[2]) if peak else None
        mb = prog["bytes"] / 1e6
        gbs = mb / ms if ms else None                      # MB / ms = GB/s
        print("%-22s %9s %9s %9s %6s %8s %8s %6s %8.1f %8s %5s  %s" % (
            prog["name"][:22], "%.3f" % ms if ms is not None else "-",
            "%.3f" % off if off is not None else "-",
            "%.3f" % xms if xms is not None else "-",
            "%.2f" % ratio if ratio else "-", "%.2f" % gflop if gflop else "-",
            "%.1f" % tflops if tflops else "-",
            "%.1f" % (100 * tflops / roof) if tflops and roof else "-", mb,
            "%.0f" % gbs if gbs else "-",
            "%.1f" % (100 * gbs / (1000 * peak[3])) if gbs and peak else "-",
            "; ".join(x for x in (err or "ok", xerr) if x)), flush=True)
    n = len(manifest["programs"])
    print()
    if ratios:
        g = math.exp(sum(math.log(r) for r in ratios) / len(ratios))
        print("geometric mean ratio xhloc / XLA: %.2f over %d programs" % (g, len(ratios)))
    print("xhloc: %d of %d programs ran and matched the reference" % (n - bad, n))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
