"""gpu_bench.py - the GPU benchmark's run, on the GPU machine (no LLVM there).

Reads DIR/manifest.json that gpu_prepare.py wrote (the programs' HLO text,
xhloc artifacts, input specifications) and for each program:
  - makes its inputs with numpy from the manifest's seed (none is shipped),
    writes them as .npy into a scratch directory for xhlo-run;
  - XLA:GPU (jax with CUDA): compiles the same HLO text (timed: XLA's
    compile time, autotuning included), counts its kernels in the compiled
    module (fusions and library calls; the control flow's computations
    once), puts the inputs on the device, runs it once for the reference
    outputs, then times N executions queued back to back with one
    synchronization at the end (wall clock / N); with its profiler (CUPTI)
    a few more back-to-back runs give the device's time per run (first
    kernel's start to the last one's end, / runs) and the kernels launched
    per run;
  - xhloc: `xhlo-run NAME.thunks --device-resident --iterations=N
    --back-to-back` on the same inputs: a warm-up run, N runs each
    synchronized (their CUDA-event median: xhloc's device time per run),
    then N runs queued back to back with one synchronization (wall clock
    / N, as XLA's), the results of the synchronized runs checked against
    XLA's (max |x - X| / max(1, max |X|) within the dtype's tolerance);
and prints a table (times, ratio xhloc / XLA, kernels, achieved TFLOP/s and
GB/s against the GPU's peaks, compile times) and a summary: the geometric
mean ratio, the worst program and which of issue #22's targets hold.

--dry-run checks the directory (every file the manifest names, the input
specifications, the plan of runs) without a GPU, jax or xhlo-run.
--platform=host and --xla-device=cpu run the same steps on a host artifact
and XLA:CPU (a directory prepared with --small --target=host), to try the
plumbing where there is no GPU.  Exit 0 when every program xhloc compiled
ran and matched, 1 otherwise.
"""
import argparse
import json
import math
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import zlib

os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")  # leave xhlo-run room
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "1")

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gpu_programs as G  # noqa: E402

np = G.np   # None without numpy: then only programs with listed input files run,
#             checked by xhlo-run against their listed references

# name pattern -> (label, bf16 dense TFLOP/s, TF32 dense TFLOP/s, TB/s),
# NVIDIA's datasheet figures (dense: without structured sparsity)
PEAKS = [
    (r"H200", ("H200", 989.4, 494.7, 4.8)),
    (r"H100.*(PCIe)", ("H100 PCIe", 756.0, 378.0, 2.0)),
    (r"H100.*NVL", ("H100 NVL", 835.0, 417.5, 3.9)),
    (r"H100", ("H100 SXM", 989.4, 494.7, 3.35)),
]

# issue #22's targets
TARGET_GEOMEAN, TARGET_WORST, TARGET_BW, TARGET_GEMM, TARGET_ATTN, TARGET_COMPILE = \
    0.9, 1.25, 0.85, 0.75, 0.5, 0.1

TOLERANCE = {"bfloat16": 3e-2, "float16": 4e-3}       # else 1e-3 (f32, f64)


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


def seed_of(seed, name):
    return (seed * 1000003 + zlib.crc32(name.encode())) & 0xFFFFFFFF


def make_inputs(prog, seed, d):
    """The program's inputs: its listed .npy files, else made from the seed."""
    if prog.get("inputs"):
        out = []
        for f, dt in zip(prog["inputs"], prog.get("input_dtypes", [])):
            x = np.load(os.path.join(d, f))
            if x.dtype.kind == "V":
                x = x.view(G.np_dtype(dt))
            out.append(x)
        return out
    rng = np.random.default_rng(seed_of(seed, prog["name"]))
    return [G.make_input(s, rng) for s in prog["inputs_spec"]]


def rel_error(got, want):
    """max |got - want| / max(1, max |want|), NaNs and infinities in the same
    places (in f32, in pieces: outputs of gigabytes)."""
    g = np.asarray(got)
    w = np.asarray(want)
    if g.shape != w.shape:
        return float("inf")
    if g.size == 0:
        return 0.0
    if w.dtype.kind in "iub":
        return 0.0 if np.array_equal(g, w) else float("inf")
    wide = np.float64 if w.dtype == np.float64 else np.float32
    err, big = 0.0, 1.0
    gf, wf = g.reshape(-1), w.reshape(-1)
    step = 1 << 24
    for i in range(0, gf.size, step):
        a = gf[i:i + step].astype(wide)
        b = wf[i:i + step].astype(wide)
        with np.errstate(all="ignore"):
            d = np.abs(a - b)
        m = float(np.max(d))
        if not math.isfinite(m):             # a NaN or an infinity somewhere
            fa, fb = np.isfinite(a), np.isfinite(b)
            if not np.array_equal(fa, fb) or not np.array_equal(np.isnan(a), np.isnan(b)):
                return float("inf")
            inf = np.isinf(b)
            if not np.array_equal(a[inf], b[inf]):
                return float("inf")
            if not fb.any():
                continue
            m = float(np.max(d[fb]))
            b = b[fb]
        err = max(err, m)
        big = max(big, float(np.max(np.abs(b))))
    return err / big


def tolerance(dtype):
    return TOLERANCE.get(str(dtype), 1e-3)


# ---- XLA ---------------------------------------------------------------------------

class Xla:
    """XLA through jax: the HLO text (jaxlib's parser, hlo_to_stablehlo and the
    client's compile), or, when this jaxlib lacks those, jax.jit of the
    program from gpu_programs.py (the same function, lowered by this jax)."""

    def __init__(self, device_kind, profile):
        import jax
        self.jax = jax
        self.device = jax.devices(device_kind)[0]
        self.profile = profile
        self.text_path = None
        try:
            from jax._src.lib import hlo, xla_client
            import jaxlib._jax as _jax
            self.hlo, self.xla_client, self._jax = hlo, xla_client, _jax
            self.text_path = True
        except Exception as e:  # noqa: BLE001
            self.text_path = "HLO text path unavailable (%s)" % str(e).splitlines()[0][:60]

    def compile(self, prog, d):
        """(run(bufs) -> results, compiled module text, compile seconds, how)."""
        if self.text_path is True:
            try:
                with open(os.path.join(d, prog["hlo"])) as fh:
                    text = fh.read()
                t0 = time.perf_counter()
                module = self.hlo.hlo_module_from_text(text)
                sh = self._jax.mlir.hlo_to_stablehlo(module.as_serialized_hlo_module_proto())
                client = self.device.client
                devs = self.xla_client.DeviceList((self.device,))
                opts = self.xla_client.CompileOptions()
                comp = getattr(client, "compile_and_load", None) or client.compile
                exe = comp(sh, devs, opts)
                secs = time.perf_counter() - t0
                try:
                    mod_text = exe.hlo_modules()[0].to_string()
                except Exception:  # noqa: BLE001
                    mod_text = None

                def run(bufs):
                    return exe.execute_sharded(bufs)
                return run, mod_text, secs, "HLO text"
            except Exception as e:  # noqa: BLE001
                why = "HLO text path failed (%s)" % str(e).splitlines()[0][:80]
        else:
            why = self.text_path
        # jax.jit of the program itself
        jax = self.jax
        build = G.PROGRAMS[prog["name"]]
        f, spec_tree = (build.small if prog.get("small") else build.build)()
        sds = jax.tree_util.tree_map(
            lambda s: jax.ShapeDtypeStruct(s.shape, G.np_dtype(s.dtype), sharding=None),
            spec_tree)
        treedef = jax.tree_util.tree_structure(spec_tree)
        t0 = time.perf_counter()
        compiled = jax.jit(f).lower(*sds).compile()
        secs = time.perf_counter() - t0
        try:
            mod_text = compiled.as_text()
        except Exception:  # noqa: BLE001
            mod_text = None

        def run(bufs):
            return compiled(*jax.tree_util.tree_unflatten(treedef, bufs))
        return run, mod_text, secs, "jax.jit (%s)" % why

    def leaves_of(self, res):
        if hasattr(res, "disassemble_into_single_device_arrays"):
            return [r[0] for r in res.disassemble_into_single_device_arrays()]
        return self.jax.tree_util.tree_leaves(res)

    def sync(self, res):
        for r in self.leaves_of(res):
            r.block_until_ready()

    def put(self, leaves):
        bufs = [self.jax.device_put(x, self.device) for x in leaves]
        for b in bufs:
            b.block_until_ready()
        return bufs

    def profile_runs(self, run, bufs, n):
        """(device ms per run, kernels per run) from the profiler, or (None, why)."""
        try:
            from jax._src.lib import _profiler
        except Exception as e:  # noqa: BLE001
            return None, "no profiler (%s)" % str(e).splitlines()[0][:50]
        try:
            sess = _profiler.ProfilerSession()
            res = None
            for _ in range(n):
                res = run(bufs)
            self.sync(res)
            del res
            if hasattr(sess, "stop_and_get_profile_data"):
                pd = sess.stop_and_get_profile_data()
            else:
                from jax.profiler import ProfileData
                pd = ProfileData.from_serialized_xspace(sess.stop())
            start, end, nk = None, None, 0
            for plane in pd.planes:
                if not plane.name.startswith("/device:GPU"):
                    continue
                for line in plane.lines:
                    # the streams' lines (kernels, copies), not the derived
                    # ones (modules, ops, steps, name scopes, launch stats)
                    if line.name.startswith(DERIVED_LINES):
                        continue
                    for ev in line.events:
                        # copies and memsets count in the span, not as kernels
                        if not ev.name.startswith(("Memcpy", "Memset", "memcpy", "memset")):
                            nk += 1
                        s, e = ev.start_ns, ev.end_ns
                        start = s if start is None or s < start else start
                        end = e if end is None or e > end else end
            if start is None:
                return None, "the profile has no GPU activity"
            return ((end - start) / 1e6 / n, nk / n), None
        except Exception as e:  # noqa: BLE001
            return None, "profiler failed (%s)" % str(e).splitlines()[0][:60]


# the lines of a GPU plane that XLA's profiler derives from the streams' events
DERIVED_LINES = ("XLA Modules", "XLA Ops", "XLA TraceMe", "Steps", "TensorFlow", "Framework",
                 "Source code", "Launch Stats", "Async XLA Ops", "SparseCore")


def count_xla_kernels(text):
    """(kernels, library calls) in a compiled module's text: the instructions
    of the entry computation and of the computations it reaches through
    control flow (while, conditional, call, async), each computation once;
    library calls are custom-calls (cuBLAS, cuDNN, ...) and cuDNN fusions;
    kernels every fusion and other op that launches work (copies, constants,
    parameters, tuples, bitcasts and the control flow itself do not)."""
    if not text:
        return None
    comps, cur, entry = {}, None, None
    for line in text.splitlines():
        m = re.match(r"(ENTRY\s+)?%?([\w.\-]+)(\s+\(.*\)\s*->\s*.*)?\s*\{\s*$", line)
        if m:
            cur = m.group(2)
            comps[cur] = []
            if m.group(1):
                entry = cur
            continue
        if line.startswith("}"):
            cur = None
            continue
        if cur is not None and "=" in line:
            comps[cur].append(line)
    if entry is None:
        return None
    free = {"parameter", "constant", "get-tuple-element", "tuple", "bitcast", "while",
            "conditional", "call", "after-all", "add-dependency", "opt-barrier",
            "partition-id", "replica-id", "copy-start", "copy-done", "async-start",
            "async-update", "async-done", "domain", "get-dimension-size", "copy"}
    seen, todo, kern, lib = set(), [entry], 0, 0
    while todo:
        c = todo.pop()
        if c in seen or c not in comps:
            continue
        seen.add(c)
        for ln in comps[c]:
            rhs = ln.split("=", 1)[1].strip()
            if rhs.startswith("("):                   # a tuple shape: skip it
                depth, i = 0, 0
                for i, ch in enumerate(rhs):
                    depth += ch == "("
                    depth -= ch == ")"
                    if depth == 0:
                        break
                rhs = rhs[i + 1:].strip()
            else:
                rhs = rhs.split(" ", 1)[1] if " " in rhs else ""
            m = re.match(r"([\w\-]+)\(", rhs)
            if not m:
                continue
            op = m.group(1)
            for key in ("body", "condition", "true_computation", "false_computation"):
                mm = re.search(key + r"=%?([\w.\-]+)", ln)
                if mm:
                    todo.append(mm.group(1))
            mm = re.search(r"branch_computations=\{([^}]*)\}", ln)
            if mm:
                todo += [x.strip().lstrip("%") for x in mm.group(1).split(",")]
            if op in ("call", "async-start"):
                mm = re.search(r"(?:to_apply|calls)=%?([\w.\-]+)", ln)
                if mm:
                    todo.append(mm.group(1))
            if op in free:
                continue
            if op == "custom-call" or (op == "fusion" and "__cudnn$" in ln):
                lib += 1
            else:
                kern += 1
    return kern, lib


# ---- xhloc -------------------------------------------------------------------------

def parse_xhlo_run(out):
    m = re.search(r"execution \(thunks only\): min [\d.]+ ms, median ([\d.]+) ms", out)
    b = re.search(r"back-to-back: \d+ runs queued, one synchronization: [\d.]+ ms, "
                  r"([\d.]+) ms per run", out)
    return (float(m.group(1)) if m else None), (float(b.group(1)) if b else None)


def run_xhloc(args, d, prog, in_files, n, scratch, expect):
    """(back-to-back ms, device ms, [output arrays] or None, None) or (.., why).

    expect: None (the outputs come back as arrays, to be checked here) or the
    reference .npy files, checked by xhlo-run itself (--expected-output with
    the manifest's absolute tolerance)."""
    cmd = [args.xhlo_run, os.path.join(d, prog["thunks"]), "--platform=" + args.platform,
           "--device-resident", "--iterations=%d" % n, "--back-to-back"]
    cmd += ["--input=@" + f for f in in_files]
    outs = []
    if expect is None:
        outs = [os.path.join(scratch, "%s.out%d.npy" % (prog["name"], k))
                for k in range(len(prog["outputs"]))]
        cmd += ["--output=@" + o for o in outs]
    else:
        cmd += ["--expected-output=@" + f for f in expect]
        cmd += ["--atol=%g" % prog.get("atol", prog.get("tolerance", 1e-3)), "--rtol=0",
                "--quiet"]
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=args.timeout)
    except subprocess.TimeoutExpired:
        return None, None, None, "xhlo-run: timed out after %d s" % args.timeout
    if r.returncode != 0:
        for o in outs:
            if os.path.exists(o):
                os.unlink(o)
        lines = (r.stderr.strip() or r.stdout.strip()).splitlines() or ["failed"]
        return None, None, None, "xhlo-run: " + lines[-1][:200]
    dev, b2b = parse_xhlo_run(r.stdout)
    if b2b is None:
        return None, None, None, "xhlo-run printed no back-to-back time"
    if expect is not None:
        return b2b, dev, None, None
    got = []
    for o, spec in zip(outs, prog["outputs"]):
        a = np.load(o)
        if a.dtype.kind == "V":
            a = a.view(G.np_dtype(spec["dtype"]))
        got.append(a)
        os.unlink(o)
    return b2b, dev, got, None


# ---- the table ---------------------------------------------------------------------

def fmt(v, f="%.3f"):
    if v is None:
        return "-"
    if f == "%.3f" and 0 < v < 0.01:
        return "%.2e" % v
    return f % v


def estimate_ms(prog, peak):
    """The least time at the GPU's peaks (None without peaks)."""
    if not peak:
        return None
    fl = (prog.get("flops") or 0) / (peak[1] * 1e12)
    by = prog.get("bytes", 0) / (peak[3] * 1e12)
    return max(fl, by) * 1e3


def dry_run(args, manifest):
    bad = 0
    print("dry run: %s (manifest version %s, jax %s, seed %s): files and specifications "
          "only, nothing run" % (args.dir, manifest.get("version"), manifest.get("jax"),
                                 manifest.get("seed")))
    total_in = 0
    for prog in manifest["programs"]:
        problems = []
        for key in ("hlo", "thunks", "kernel_file"):
            f = prog.get(key)
            if f and not os.path.isfile(os.path.join(args.dir, f)):
                problems.append("missing %s" % f)
        if not prog.get("thunks") and not prog.get("error"):
            problems.append("neither an artifact nor xhloc's error")
        for f in prog.get("inputs", []) + prog.get("wants", []):
            if not os.path.isfile(os.path.join(args.dir, f)):
                problems.append("missing %s" % f)
        nbytes = 0
        for s in prog.get("inputs_spec", []):
            try:
                if s["dtype"] not in G.ITEMSIZE:
                    raise ValueError("dtype %r" % (s["dtype"],))
                if s["init"][0] not in ("normal", "uniform", "int", "zeros", "const"):
                    raise ValueError("init %r" % (s["init"][0],))
                nbytes += math.prod(s["shape"]) * G.ITEMSIZE[s["dtype"]]
            except Exception as e:  # noqa: BLE001
                problems.append("input spec %s: %s" % (s, e))
        total_in += nbytes
        if problems:
            bad += 1
        cmd = "xhlo-run %s --platform=%s --device-resident --iterations=N --back-to-back " \
              "(%d inputs, %d outputs)" % (prog.get("thunks"), args.platform,
                                           len(prog.get("inputs_spec") or prog.get("inputs", [])),
                                           len(prog.get("outputs", prog.get("wants", []))))
        print("%-22s %-7s inputs %8.1f MB  %s" % (
            prog["name"][:22], prog.get("kind", "-"), nbytes / 1e6,
            "; ".join(problems) if problems else
            ("xhloc cannot compile it: " + prog["error"]) if prog.get("error") else cmd))
    print("dry run: %d programs, %d with problems; inputs made on the GPU machine: %.1f GB"
          % (len(manifest["programs"]), bad, total_in / 1e9))
    return 1 if bad else 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("dir", help="the directory gpu_prepare.py wrote")
    ap.add_argument("--xhlo-run", dest="xhlo_run", default="build/bin/xhlo-run")
    ap.add_argument("--gpu-name", default="", help="the GPU's name (default: from nvidia-smi)")
    ap.add_argument("--no-xla", action="store_true", help="do not run XLA")
    ap.add_argument("--no-xla-profile", action="store_true",
                    help="do not run XLA under its profiler (no device times)")
    ap.add_argument("--quick", action="store_true", help="fewer iterations")
    ap.add_argument("--only", default="", help="programs whose name matches this regex")
    ap.add_argument("--timeout", type=int, default=240, help="seconds per xhlo-run call")
    ap.add_argument("--budget", type=float, default=420,
                    help="seconds for the whole table: later programs are left out")
    ap.add_argument("--dry-run", action="store_true",
                    help="check the directory and print the plan; run nothing")
    ap.add_argument("--platform", choices=["cuda", "host"], default="cuda",
                    help="xhlo-run's platform (host: with a --target=host directory)")
    ap.add_argument("--xla-device", choices=["gpu", "cpu"], default="gpu")
    ap.add_argument("--scratch", default="", help="where the inputs' .npy files go "
                    "(default: /dev/shm when it has room, else $TMPDIR or /tmp)")
    ap.add_argument("--json", default="", help="also write the rows to this file")
    args = ap.parse_args()
    try:
        with open(os.path.join(args.dir, "manifest.json")) as fh:
            manifest = json.load(fh)
    except (OSError, ValueError) as e:
        print("gpu_bench: cannot read %s/manifest.json: %s (run scripts/gpu-check.sh "
              "--prepare DIR where xhloc builds)" % (args.dir, e))
        return 1
    if args.only:
        manifest["programs"] = [p for p in manifest["programs"]
                                if re.search(args.only, p["name"])]
    if args.dry_run:
        return dry_run(args, manifest)
    t_start = time.perf_counter()
    seed = manifest.get("seed", 0)

    name, source = gpu_name(args.gpu_name)
    xla, why_no_xla = None, "--no-xla"
    if not args.no_xla:
        try:
            xla = Xla(args.xla_device, not args.no_xla_profile)
        except Exception as e:  # noqa: BLE001
            why_no_xla = "no jax for %s (%s)" % (args.xla_device, str(e).splitlines()[0][:80])
    if xla and not name and args.xla_device == "gpu":
        name, source = xla.device.device_kind, "jax"
    peak = peaks_for(name)
    print("GPU: %s%s" % (name or "unknown", " (from %s)" % source if source else ""))
    if peak:
        print("peaks used (%s, NVIDIA datasheet, dense): %.0f TFLOP/s bf16, %.0f TFLOP/s TF32 "
              "(for f32 programs: XLA's default precision), %.2f TB/s memory"
              % (peak[0], peak[1], peak[2], peak[3]))
    else:
        print("peaks: none known for this GPU (the table has H100 SXM, H100 PCIe, H100 NVL, "
              "H200); no percentages")
    if xla:
        print("XLA: jax %s on %s; %s" % (xla.jax.__version__, xla.device.device_kind,
                                        "profiler on" if xla.profile else "no profiler"))
    else:
        print("XLA: not run: %s" % why_no_xla)
    print("timing: both sides N runs queued back to back, one synchronization, wall clock / N,"
          " inputs resident; ratio = xhloc / XLA")
    print("dev ms: xhloc's CUDA-event median of a synchronized run; XLA's profiler span "
          "(first kernel start to last end) / runs")
    print("kernels: own kernels + library calls (xhloc: its thunks; XLA: its compiled "
          "module's fusions + custom-calls; loop bodies once); XLA/run: its profiler's count")
    print("TFLOP/s, GB/s: xhloc's, from XLA's FLOP count and the least bytes the program "
          "moves; %pk: of the bound resource's peak (compute: bf16/TF32 dense; memory: HBM)")
    print("compile s: xhloc's on the prepare machine, XLA's here (autotuning included)")
    hdr = ("%-22s %9s %9s %6s %9s %9s %6s %10s %10s %6s %8s %7s %5s %5s %7s %7s  %s" % (
        "program", "xhloc ms", "XLA ms", "ratio", "xdev ms", "Xdev ms", "dev r", "kern xhloc",
        "kern XLA", "X/run", "TFLOP/s", "GB/s", "%pk", "X%pk", "cmp x", "cmp X", "check"))
    print(hdr)
    print("-" * len(hdr))
    if args.scratch:
        os.makedirs(args.scratch, exist_ok=True)
        scratch = tempfile.mkdtemp(prefix="gpu-bench-", dir=args.scratch)
    else:
        # /dev/shm when it has room for the largest program's inputs and
        # outputs (a container's may have 64 MB), else $TMPDIR or /tmp
        need = max([p.get("in_bytes", 0) + p.get("out_bytes", 0)
                    for p in manifest["programs"]] or [0]) + (1 << 30)
        shm = None
        try:
            if os.access("/dev/shm", os.W_OK) and shutil.disk_usage("/dev/shm").free > need:
                shm = "/dev/shm"
        except OSError:
            pass
        scratch = tempfile.mkdtemp(prefix="gpu-bench-", dir=shm)
    rows, bad = [], 0
    target_ms = 100.0 if args.quick else 300.0
    try:
        for prog in manifest["programs"]:
            try:
                row = run_program(args, prog, xla, peak, seed, scratch, target_ms, t_start)
            except Exception as e:  # noqa: BLE001 - one program's failure is its row
                row = {"name": prog.get("name", "?"), "kind": prog.get("kind"), "x_ms": None,
                       "X_ms": None, "x_dev": None, "X_dev": None, "x_kern": None,
                       "X_kern": None, "X_run": None, "flops": None, "bytes": None,
                       "x_cmp": None, "X_cmp": None, "failed": True, "checked": False,
                       "small": False, "check": ["failed: %s: %s" % (
                           type(e).__name__, str(e).splitlines()[0][:120] if str(e) else "")]}
            rows.append(row)
            if row["failed"]:
                bad += 1
            print_row(row, peak)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    summary(rows, peak)
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(rows, fh, indent=1, default=str)
    n = len(rows)
    matched = sum(1 for r in rows if r["checked"] and not r["failed"])
    unchecked = sum(1 for r in rows if r["x_ms"] is not None and not r["checked"])
    notrun = sum(1 for r in rows if r["x_ms"] is None and not r["failed"])
    print("xhloc: %d of %d programs ran and matched%s%s%s" % (
        matched, n, "; %d failed" % bad if bad else "",
        "; %d ran unchecked" % unchecked if unchecked else "",
        "; %d not compiled or not run (each row says why)" % notrun if notrun else ""))
    return 1 if bad else 0


def run_program(args, prog, xla, peak, seed, scratch, target_ms, t_start):
    row = {"name": prog["name"], "kind": prog.get("kind"), "x_ms": None, "X_ms": None,
           "x_dev": None, "X_dev": None, "x_kern": None, "X_kern": None, "X_run": None,
           "flops": prog.get("flops"), "bytes": prog.get("bytes"),
           "x_cmp": prog.get("xhloc_compile_s"), "X_cmp": None, "check": [], "failed": False,
           "checked": False, "small": prog.get("small", False)}
    t = prog.get("xhloc_thunks")
    if t:
        row["x_kern"] = (t["kernels"], t["library"])
    if time.perf_counter() - t_start > args.budget:
        row["check"].append("not run: the time budget (--budget %g s) is spent" % args.budget)
        return row
    listed = [os.path.join(args.dir, f) for f in prog.get("inputs", [])]
    leaves = None
    if not xla and not prog.get("thunks"):
        row["check"].append("xhloc cannot compile it: %s" % (prog.get("error") or "no artifact"))
        return row
    if xla or not listed:
        try:
            if np is None:
                raise RuntimeError("no numpy in %s" % sys.executable)
            leaves = make_inputs(prog, seed, args.dir)
        except Exception as e:  # noqa: BLE001
            row["check"].append("cannot make the inputs: %s" % str(e).splitlines()[0][:80])
            row["failed"] = True
            return row
    est = estimate_ms(prog, peak)
    want = None
    xla_failed = None
    n = None
    if xla:
        res = bufs = run = None
        try:
            run, mod_text, secs, how = xla.compile(prog, args.dir)
            row["X_cmp"] = secs
            row["X_kern"] = count_xla_kernels(mod_text)
            if how != "HLO text":
                row["check"].append("XLA: " + how)
            bufs = xla.put(leaves)
            res = run(bufs)
            want = [np.asarray(r) for r in xla.leaves_of(res)]
            del res
            t0 = time.perf_counter()
            res = run(bufs)
            xla.sync(res)
            one = (time.perf_counter() - t0) * 1e3
            del res
            n = int(min(100, max(3, target_ms / max(one, 1e-3))))
            t0 = time.perf_counter()
            for _ in range(n):
                res = run(bufs)
            xla.sync(res)
            row["X_ms"] = (time.perf_counter() - t0) * 1e3 / n
            del res
            if xla.profile:
                p, why = xla.profile_runs(run, bufs, min(n, 10))
                if p:
                    row["X_dev"], row["X_run"] = p
                elif args.xla_device == "gpu":
                    row["check"].append("XLA " + why)
        except Exception as e:  # noqa: BLE001
            xla_failed = "XLA failed: %s" % str(e).splitlines()[0][:100]
            row["check"].append(xla_failed)
        finally:
            res = bufs = run = None
    if n is None:
        n = int(min(100, max(3, target_ms / est))) if est else 10
    if not prog.get("thunks"):
        row["check"].append("xhloc cannot compile it: %s" % (prog.get("error") or "no artifact"))
        return row
    # xhloc checked here against XLA's outputs, else by xhlo-run against the
    # listed references, else not at all
    expect = None
    if want is None and prog.get("wants"):
        expect = [os.path.join(args.dir, f) for f in prog["wants"]]
    elif want is None or np is None:
        expect = []
    made = []
    try:
        if listed:
            in_files = listed
        else:
            for k, x in enumerate(leaves):
                f = os.path.join(scratch, "%s.in%d.npy" % (prog["name"], k))
                np.save(f, x)
                made.append(f)
            in_files = made
        leaves = None
        ms, dev, got, err = run_xhloc(args, args.dir, prog, in_files, n, scratch, expect)
    finally:
        for f in made:
            os.unlink(f)
    if err:
        row["check"].append(err)
        row["failed"] = True
        return row
    row["x_ms"], row["x_dev"] = ms, dev
    if expect:
        row["checked"] = True
        row["check"].insert(0, "ok (xhlo-run --expected-output)")
        return row
    if want is None:
        row["check"].append("not checked (no XLA%s)" % (": " + xla_failed if xla_failed else ""))
        return row
    if len(want) != len(got):
        row["check"].append("WRONG: %d outputs, XLA has %d" % (len(got), len(want)))
        row["failed"] = True
        return row
    # an f32 output of a program with bf16 inputs (a loss) has bf16's tolerance
    low = max([tolerance(s["dtype"]) for s in prog.get("inputs_spec", [])] or [0])
    tols = [max(tolerance(w.dtype), low) for w in want]
    worst, worst_k = 0.0, 0
    for k, (g, w) in enumerate(zip(got, want)):
        e = rel_error(g, w) / tols[k]
        if e > worst:
            worst, worst_k = e, k
    row["checked"] = True
    if worst > 1:
        row["check"].insert(0, "WRONG against XLA: output %d, error %.2g > tolerance %.2g" % (
            worst_k, worst * tols[worst_k], tols[worst_k]))
        row["failed"] = True
    else:
        row["check"].insert(0, "ok (%.0f%% of tolerance)" % (100 * worst))
    return row


def achieved(row, peak, ms):
    """(TFLOP/s, GB/s, % of the bound resource's peak) at ms."""
    if not ms:
        return None, None, None
    tf = row["flops"] / ms / 1e9 if row.get("flops") else None
    gb = row["bytes"] / ms / 1e6 if row.get("bytes") else None
    pct = None
    if peak:
        if row["kind"] == "compute" and tf:
            pct = 100 * tf / peak[1]          # every compute program here is bf16
        elif row["kind"] == "memory" and gb:
            pct = 100 * gb / (1000 * peak[3])
    return tf, gb, pct


def kern(k):
    return "%d+%d" % k if k else "-"


def print_row(row, peak):
    ratio = row["x_ms"] / row["X_ms"] if row["x_ms"] and row["X_ms"] and row["checked"] \
        and not row["failed"] else None
    dratio = row["x_dev"] / row["X_dev"] if ratio and row["x_dev"] and row["X_dev"] else None
    row["ratio"], row["dev_ratio"] = ratio, dratio
    tf, gb, pct = achieved(row, peak, row["x_ms"])
    _, _, xpct = achieved(row, peak, row["X_ms"])
    row["tflops"], row["gbs"], row["pct"], row["xla_pct"] = tf, gb, pct, xpct
    print("%-22s %9s %9s %6s %9s %9s %6s %10s %10s %6s %8s %7s %5s %5s %7s %7s  %s" % (
        row["name"][:22], fmt(row["x_ms"]), fmt(row["X_ms"]), fmt(ratio, "%.2f"),
        fmt(row["x_dev"]), fmt(row["X_dev"]), fmt(dratio, "%.2f"), kern(row["x_kern"]),
        kern(row["X_kern"]), fmt(row["X_run"], "%.0f"), fmt(tf, "%.1f"), fmt(gb, "%.0f"),
        fmt(pct, "%.0f"), fmt(xpct, "%.0f"), fmt(row["x_cmp"], "%.2f"),
        fmt(row["X_cmp"], "%.2f"), "; ".join(row["check"]) or "ok"), flush=True)


def geomean(xs):
    xs = [x for x in xs if x and x > 0]
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else None


def summary(rows, peak):
    print()
    timed = [r for r in rows if r.get("ratio")]
    n = len(rows)
    holds = lambda ok: "holds" if ok else "does not hold"  # noqa: E731
    g = geomean([r["ratio"] for r in timed])
    if not timed:
        print("summary: no program has both times (xhloc and XLA, checked); no ratio")
    else:
        worst = max(timed, key=lambda r: r["ratio"])
        dg = geomean([r["dev_ratio"] for r in timed if r.get("dev_ratio")])
        print("summary: geometric mean ratio xhloc / XLA %.2f over %d of %d programs%s; worst "
              "%s %.2f" % (g, len(timed), n,
                           " (device times: %.2f over %d)" % (
                               dg, sum(1 for r in timed if r.get("dev_ratio")))
                           if dg else "", worst["name"], worst["ratio"]))
    missing = [r["name"] for r in rows if not r.get("ratio")]
    partial = " (%d of %d programs without a ratio: %s)" % (
        len(missing), n, ", ".join(missing)) if missing and timed else ""
    print("targets of issue #22%s:" % partial)
    if g is not None:
        print("  geometric mean <= %.2f: %s (%.2f)" % (TARGET_GEOMEAN, holds(g <= TARGET_GEOMEAN), g))
        over = ["%s %.2f" % (r["name"], r["ratio"]) for r in timed if r["ratio"] > TARGET_WORST]
        print("  no program over %.2f: %s%s" % (TARGET_WORST, holds(not over),
                                              " (" + ", ".join(over) + ")" if over else ""))
    else:
        print("  geometric mean <= %.2f, none over %.2f: unknown (no ratios)"
              % (TARGET_GEOMEAN, TARGET_WORST))
    mem = [r for r in rows if r["kind"] == "memory" and r.get("pct") is not None]
    if not peak:
        print("  memory-bound >= %.0f%% of HBM bandwidth: unknown (no peaks for this GPU)"
              % (100 * TARGET_BW))
    elif mem:
        low = ["%s %.0f%%" % (r["name"], r["pct"]) for r in mem if r["pct"] < 100 * TARGET_BW]
        print("  memory-bound programs >= %.0f%% of HBM bandwidth: %s (%d programs%s)" % (
            100 * TARGET_BW, holds(not low), len(mem), "; below: " + ", ".join(low) if low else ""))
    else:
        print("  memory-bound >= %.0f%% of HBM bandwidth: unknown (no memory-bound program timed)"
              % (100 * TARGET_BW))
    gemm = [r for r in rows if r["name"] == "gemm_bf16_8192" and r.get("pct") is not None]
    if gemm and not gemm[0]["small"]:
        print("  bf16 GEMM 8192^3 >= %.0f%% of dense peak: %s (%.0f%%)" % (
            100 * TARGET_GEMM, holds(gemm[0]["pct"] >= 100 * TARGET_GEMM), gemm[0]["pct"]))
    else:
        print("  bf16 GEMM 8192^3 >= %.0f%% of dense peak: unknown (not timed%s)" % (
            100 * TARGET_GEMM, "" if peak else " or no peaks"))
    att = [r for r in timed if r["name"] == "attention_fwd_bwd"]
    if att:
        print("  attention fwd+bwd >= 2x faster than XLA: %s (ratio %.2f)" % (
            holds(att[0]["ratio"] <= TARGET_ATTN), att[0]["ratio"]))
    else:
        print("  attention fwd+bwd >= 2x faster than XLA: unknown (no ratio)")
    both = [r for r in rows if r.get("x_cmp") and r.get("X_cmp")]
    if both:
        xs, Xs = sum(r["x_cmp"] for r in both), sum(r["X_cmp"] for r in both)
        print("  xhloc compile time <= %.1fx XLA's: %s (%.1f s against %.1f s over %d programs, "
              "%.3fx; xhloc's on the prepare machine)" % (
                  TARGET_COMPILE, holds(xs <= TARGET_COMPILE * Xs), xs, Xs, len(both), xs / Xs))
    else:
        print("  xhloc compile time <= %.1fx XLA's: unknown (no XLA compile times)"
              % TARGET_COMPILE)


if __name__ == "__main__":
    sys.exit(main())
