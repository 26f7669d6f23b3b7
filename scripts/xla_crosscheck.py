"""xla_crosscheck.py - run HLO modules on XLA's CPU backend and on xhloc, compare.

For each module (every *.hlo / *.txt of the directories given, or the files
given; a file with several modules separated by `// -----` lines gives one
module each) this:
  - makes seeded random inputs for its entry parameters (floats uniform in
    [-1, 1), signed integers in [-8, 8), unsigned in [0, 16), pred 0/1, the
    ranges of `xhlo-run --random-inputs`);
  - runs it on XLA's CPU backend (jaxlib: hlo_module_from_text, hlo_to_stablehlo,
    the CPU client's compile_and_load) in a worker process that is restarted
    when it crashes or runs past the timeout;
  - runs it on xhloc's reference interpreter (`xhlo-run MODULE --input=@...`)
    and compiles it for the host (`xhloc --target=host -o PREFIX`) and runs
    the artifact (`xhlo-run PREFIX.thunks --platform=host`), with the same
    inputs;
  - compares both with XLA's results: integers and pred bit-exact, floats
    within atol + rtol*|xla| by element type, NaN positions and infinities
    the same;
  - skips a module whose random inputs put a dynamic size (set-dimension-
    size, dynamic-reshape) beyond its bound, as the interpreter reports:
    HLO leaves the result undefined;
  - on a mismatch or failure, runs XLA's executable again on the same
    inputs: when XLA
    does not give the same bits twice (a GetRngSeed, memory it leaves
    unwritten, dynamic sizes read past a buffer), the module has no
    reference and is counted apart from the modules XLA ran;
  - then asks XLA twice more: compiled without its YNNPACK library fusions
    (which drop NaNs in max and min, against HLO's semantics): where that
    agrees with xhloc, the module matches, and the summary says how many
    matched so; and for floats, the module with its f32/bf16/f16 arrays
    made f64 (the exact result, as far as f64 goes): where that result,
    rounded, is as far from XLA's as xhloc's is, the mismatch reason says
    that XLA's own rounding error is beyond the tolerance (still a
    mismatch), with both errors from the exact result.
Prints one row per module and a summary with every failure reason grouped.
Run through scripts/xla-crosscheck, which makes the venv with jax.
"""
import argparse
import json
import os
import re
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import ml_dtypes

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# Floating tolerances (atol, rtol) by numpy dtype name; --tolerance scales them.
TOLERANCE = {
    "float64": (1e-9, 1e-7),
    "float32": (1e-5, 1e-4),
    "complex64": (1e-5, 1e-4),
    "complex128": (1e-9, 1e-7),
    "float16": (2e-3, 1e-2),
    "bfloat16": (1e-2, 3e-2),
}
F8_TOLERANCE = (0.125, 0.25)


# ---------------------------------------------------------------------------
# .npy in xhlo-run's forms: bf16 and f8 as raw void, sub-byte ints as int8.

def to_xhlo_npy(arr):
    dt = arr.dtype
    if dt.kind in "biufc" and dt.name in np.sctypeDict:
        return arr
    name = dt.name
    if name.startswith("int") or name.startswith("uint"):  # ml_dtypes int2/int4
        return arr.astype(np.uint8 if name.startswith("u") else np.int8)
    return arr.view(np.dtype("V%d" % dt.itemsize))


def save_npy(path, arr):
    np.save(path, to_xhlo_npy(np.require(arr, requirements="C")))


def load_npy(path, dtype):
    a = np.load(path)
    if a.dtype.kind == "V":
        return a.view(dtype)
    if a.dtype != dtype:
        return a.astype(dtype)
    return a


# ---------------------------------------------------------------------------
# The XLA worker: one process that imports jax once and runs modules sent as
# JSON lines on stdin, answering one JSON line each on stdout.

def make_input(shape, rng):
    dt = np.dtype(shape.numpy_dtype())
    dims = tuple(shape.dimensions())
    name = dt.name
    if dt == np.bool_:
        return rng.integers(0, 2, dims).astype(np.bool_)
    if dt.kind == "c":
        return (rng.uniform(-1, 1, dims) + 1j * rng.uniform(-1, 1, dims)).astype(dt)
    if dt.kind == "f" or name.startswith("float") or name.startswith("bfloat"):
        return rng.uniform(-1, 1, dims).astype(np.float32).astype(dt)
    if dt.kind == "u" or name.startswith("uint"):
        hi = min(16, int(ml_dtypes.iinfo(dt).max) + 1)
        return rng.integers(0, hi, dims).astype(dt)
    info = ml_dtypes.iinfo(dt)
    return rng.integers(max(-8, int(info.min)), min(8, int(info.max) + 1), dims).astype(dt)


def leaves_of(shape):
    if shape.is_tuple():
        out = []
        for s in shape.tuple_shapes():
            out += leaves_of(s)
        return out
    return [shape]


def drop_header_attr(text, key):
    """The text without `key={...}` on its HloModule line (braces nested)."""
    m = re.search(r"^\s*HloModule\b[^\n]*?(,\s*)?\b%s=\{" % key, text, flags=re.M)
    if not m:
        return text
    depth, k = 0, m.end() - 1
    while k < len(text):
        depth += {"{": 1, "}": -1}.get(text[k], 0)
        k += 1
        if depth == 0:
            break
    start = m.start(1) if m.group(1) else m.end() - 1 - len(key) - 1
    return text[:start] + text[k:]


def xla_error(e):
    """The first line of an exception's message; for XLA's HLO parser, the
    first 'error:' it reports instead of its 'Syntax error' preamble."""
    msg = str(e).strip().splitlines()
    head = msg[0] if msg else ""
    if "Syntax error when trying to parse" in head:
        for l in msg[1:]:
            m = re.match(r"was parsing \d+:\d+: error: (.*)", l)
            if m:
                return "XLA parse error: " + m.group(1)
    return "%s: %s" % (type(e).__name__, head)


def logical_result(arr, a, shape):
    """A bounded dynamic result as XLA's runtime reads it (PJRT's
    logical_on_device_shape on the CPU): jax hands over the buffer at its
    bounds, which holds the valid elements packed in the layout's order,
    then one s32 size per dimension after the array (the CPU's metadata
    suffix).  Returns (the array at its runtime sizes, None), or (None,
    why) for sizes PJRT refuses (outside the bounds: XLA wrote past the
    buffer, its result is undefined)."""
    import ctypes
    dims = list(shape.dimensions())
    if a.dtype.itemsize * 8 != np.dtype(a.dtype).itemsize * 8 or \
            a.dtype.name in ("int4", "uint4", "int2", "uint2", "float4_e2m1fn"):
        return None, "cross-check: a dynamic result of a sub-byte type"
    ptr = arr.unsafe_buffer_pointer()
    sizes = list((ctypes.c_int32 * len(dims)).from_address(ptr + a.nbytes))
    for d, (n, b) in enumerate(zip(sizes, dims)):
        if n < 0 or n > b or (not shape.is_dynamic_dimension(d) and n != b):
            return None, ("XLA's dynamic result: runtime sizes %s incompatible with "
                          "the bounds %s (PJRT refuses them; XLA wrote past the buffer)"
                          % (sizes, dims))
    try:
        m2m = list(arr.format.layout.major_to_minor)
    except AttributeError:
        m2m = list(range(len(dims)))
    count = int(np.prod(sizes)) if sizes else 1
    raw = ctypes.string_at(ptr, count * a.dtype.itemsize)
    phys = np.frombuffer(raw, dtype=a.dtype).reshape([sizes[d] for d in m2m])
    return np.ascontiguousarray(phys.transpose([m2m.index(j) for j in range(len(dims))])), None


def xla_run_one(req, jax, hlo, xla_client, _jax):
    text = open(req["hlo"]).read()
    # Aliasing changes no result, and hlo_to_stablehlo flattens the result
    # tuple that its indices name, which XLA then refuses.
    text = drop_header_attr(text, "input_output_alias")
    module = hlo.hlo_module_from_text(text)
    proto = module.as_serialized_hlo_module_proto()
    ps = xla_client.XlaComputation(proto).program_shape()
    params = []
    for s in ps.parameter_shapes():
        params += leaves_of(s)
    results = leaves_of(ps.result_shape())
    if any(s.is_token() for s in params + results):
        return {"status": "skip", "reason": "skipped: token parameter or result"}
    nbytes = 0
    for s in params:
        n = np.dtype(s.numpy_dtype()).itemsize
        for d in s.dimensions():
            n *= d
        nbytes += n
    if nbytes > req["budget"]:
        return {"status": "skip", "reason": "skipped: inputs over memory budget",
                "detail": "%d MiB of inputs" % (nbytes >> 20)}
    inputs = []
    paths = []
    for k, s in enumerate(params):
        rng = np.random.default_rng(req["seed"] * 1000003 + k)
        x = make_input(s, rng)
        p = os.path.join(req["dir"], "in%d.npy" % k)
        save_npy(p, x)
        inputs.append(x)
        paths.append(p)
    dev = jax.devices("cpu")[0]
    exe = compile_proto(proto, xla_client.CompileOptions(), jax, xla_client, _jax)
    LAST.clear()
    LAST.update(inputs=inputs, dev=dev, results=results, text=text, dir=req["dir"])
    arrays, why = execute(exe, inputs, dev, results)
    if arrays is None:  # XLA wrote past a buffer: a fresh worker for the next module
        return {"status": "fail", "reason": why, "restart": True}
    LAST.update(exe=exe, first=[a.copy() for a in arrays])
    return {"status": "ok", "inputs": paths, "outputs": save_results(arrays, req["dir"], "xla")}


def execute(exe, inputs, dev, results):
    """(XLA's results as arrays, dynamic ones at their runtime sizes, None),
    or (None, why) when a dynamic result's sizes are outside its bounds."""
    bufs = [jax_device_put(x, dev) for x in inputs]
    res = exe.execute_sharded(bufs).disassemble_into_single_device_arrays()
    arrays = []
    for k, r in enumerate(res):
        a = np.asarray(r[0])
        if k < len(results) and results[k].is_array() and results[k].is_dynamic():
            a, why = logical_result(r[0], a, results[k])
            if a is None:
                return None, why
        arrays.append(a)
    return arrays, None


def save_results(arrays, d, tag):
    outs = []
    for k, a in enumerate(arrays):
        p = os.path.join(d, "%s%d.npy" % (tag, k))
        save_npy(p, a)
        outs.append({"path": p, "dtype": a.dtype.name})
    return outs


# The worker's last module: its executable, inputs and first results, for
# a rerun that asks whether XLA gives the same results twice.
LAST = {}


def same_bits(a, b):
    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    if a.dtype.kind == "f" or a.dtype.kind == "c":
        return bool(np.array_equal(a, b, equal_nan=True))
    return a.tobytes() == b.tobytes()


def xla_rerun(jax):
    """Runs the last module again on fresh copies of the same inputs: are
    XLA's results (dynamic ones at the sizes it reports) the same bits?"""
    if "exe" not in LAST:
        return {"status": "fail", "reason": "nothing to rerun"}
    again, _ = execute(LAST["exe"], LAST["inputs"], LAST["dev"], LAST["results"])
    same = again is not None and len(again) == len(LAST["first"]) and all(
        same_bits(a, b) for a, b in zip(again, LAST["first"]))
    return {"status": "ok", "same": same}


# XLA CPU's YNNPACK library fusions (on by default in jaxlib's XLA) depart
# from HLO's semantics: their max/min drop NaNs.  Asked on a mismatch, the
# last module compiled without them.
NO_YNN_FUSIONS = [("xla_cpu_experimental_ynn_fusion_type", "")]


def xla_without_ynn(jax, xla_client, _jax):
    if "exe" not in LAST:
        return {"status": "fail", "reason": "nothing to rerun"}
    opts = xla_client.CompileOptions()
    opts.env_option_overrides = NO_YNN_FUSIONS
    exe = compile_text(LAST["text"], opts, jax, xla_client, _jax)
    arrays, why = execute(exe, LAST["inputs"], LAST["dev"], LAST["results"])
    if arrays is None:
        return {"status": "fail", "reason": why}
    return {"status": "ok", "outputs": save_results(arrays, LAST["dir"], "xla-noynn")}


LOW_FLOAT = re.compile(r"\b(f32|bf16|f16)(?=\[)")


def xla_exact(jax, xla_client, _jax):
    """The last module with every f32, bf16 and f16 array made f64, run on
    the same inputs: the exact results as far as f64 rounding goes, saved as
    exactK.npy (only results whose type changed are meaningful)."""
    if "exe" not in LAST:
        return {"status": "fail", "reason": "nothing to rerun"}
    exe = compile_text(LOW_FLOAT.sub("f64", LAST["text"]), xla_client.CompileOptions(),
                       jax, xla_client, _jax)
    wide = [x.astype(np.float64) if x.dtype.kind == "f" or x.dtype.name == "bfloat16" else x
            for x in LAST["inputs"]]
    res = exe.execute_sharded([jax_device_put(x, LAST["dev"]) for x in wide]) \
        .disassemble_into_single_device_arrays()
    arrays = [np.asarray(r[0]) for r in res]
    return {"status": "ok", "outputs": save_results(arrays, LAST["dir"], "exact")}


def compile_text(text, opts, jax, xla_client, _jax):
    from jax._src.lib import hlo
    proto = hlo.hlo_module_from_text(text).as_serialized_hlo_module_proto()
    return compile_proto(proto, opts, jax, xla_client, _jax)


def compile_proto(proto, opts, jax, xla_client, _jax):
    """XLA CPU's executable for an HloModuleProto, through StableHLO as jax
    compiles."""
    dev = jax.devices("cpu")[0]
    return dev.client.compile_and_load(_jax.mlir.hlo_to_stablehlo(proto),
                                       xla_client.DeviceList((dev,)), opts)


def jax_device_put(x, dev):
    import jax
    return jax.device_put(x, dev)


def xla_worker():
    os.environ.setdefault("JAX_PLATFORMS", "cpu")
    import jax
    from jax._src.lib import hlo, xla_client
    import jaxlib._jax as _jax
    jax.config.update("jax_enable_x64", True)
    out = sys.stdout
    sys.stdout = sys.stderr  # anything jax prints must not break the protocol
    out.write("ready\n")
    out.flush()
    for line in sys.stdin:
        req = json.loads(line)
        try:
            if req.get("rerun"):
                ans = xla_rerun(jax)
            elif req.get("without_ynn"):
                ans = xla_without_ynn(jax, xla_client, _jax)
            elif req.get("exact"):
                ans = xla_exact(jax, xla_client, _jax)
            else:
                LAST.clear()
                ans = xla_run_one(req, jax, hlo, xla_client, _jax)
        except Exception as e:  # one module's failure is an answer, not an exit
            ans = {"status": "fail", "reason": xla_error(e)}
        out.write(json.dumps(ans) + "\n")
        out.flush()


class Worker:
    """One XLA worker process; restarted after a crash, a timeout or an
    answer that asks for it (XLA corrupted its memory)."""

    def __init__(self):
        self.proc = None

    def start(self):
        self.log = tempfile.TemporaryFile(mode="w+", errors="replace")
        self.proc = subprocess.Popen(
            [sys.executable, os.path.abspath(__file__), "--xla-worker"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.log,
            text=True, start_new_session=True)
        line = self.readline(300)
        if line != "ready":
            self.kill()
            raise RuntimeError("the XLA worker did not start (jax import failed?)")

    def readline(self, timeout):
        r, _, _ = select.select([self.proc.stdout], [], [], timeout)
        if not r:
            return None
        return self.proc.stdout.readline().strip()

    def fatal(self):
        """': MESSAGE' of the last fatal log line (absl's 'F...] MESSAGE') the
        worker wrote, or ''."""
        self.log.seek(0)
        msg = ""
        for line in self.log.read().splitlines():
            m = re.match(r"F\d{4} [^\]]*\] (.*)", line)
            if m:
                msg = ": " + m.group(1)[:200]
        return msg

    def kill(self):
        if self.proc:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            self.proc.wait()
            self.proc = None

    def run(self, req, timeout):
        if not self.proc:
            self.start()
        self.log.seek(0)
        self.log.truncate()
        self.proc.stdin.write(json.dumps(req) + "\n")
        self.proc.stdin.flush()
        line = self.readline(timeout)
        if line is None:
            self.kill()
            return {"status": "fail", "reason": "timeout"}
        if not line:
            rc = self.proc.wait()
            self.proc = None
            return {"status": "fail", "reason": "crash (%s)%s" % (signame(rc), self.fatal())}
        ans = json.loads(line)
        if ans.get("restart"):
            self.kill()
        return ans


# ---------------------------------------------------------------------------
# Running xhloc and xhlo-run.

def signame(rc):
    if rc < 0:
        try:
            return signal.Signals(-rc).name
        except ValueError:
            return "signal %d" % -rc
    return "exit %d" % rc


LOC = re.compile(r"^\S+:\d+:\d+: (error|fatal error): ")


def first_error(text):
    """The first error line of xhloc's or xhlo-run's stderr, without the file
    location or program prefix."""
    lines = [l for l in text.splitlines() if l.strip()]
    for l in lines:
        if LOC.match(l):
            return LOC.sub("", l)
    for l in lines:
        if "error" in l.lower() or l.startswith("xhlo-run:") or l.startswith("xhloc:"):
            return re.sub(r"^(xhlo-run|xhloc): (\S+: )?", "", l)
    return lines[0] if lines else "no message"


def tidy(reason):
    return re.sub(r"^error: ", "", reason)


def run_tool(cmd, timeout):
    """(ok, reason): reason is 'timeout', 'crash (SIG...)' or the first error."""
    env = dict(os.environ, XHLO_NUM_THREADS=os.environ.get("XHLO_NUM_THREADS", "1"))
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env,
                           errors="replace")
    except subprocess.TimeoutExpired:
        return False, "timeout"
    if p.returncode < 0:
        return False, "crash (%s)" % signame(p.returncode)
    if p.returncode != 0:
        return False, tidy(first_error(p.stderr))
    return True, ""


# ---------------------------------------------------------------------------
# Comparing.

def tolerance(dt, scale):
    if dt.name in TOLERANCE:
        a, r = TOLERANCE[dt.name]
    else:
        a, r = F8_TOLERANCE
    return a * scale, r * scale


# Kinds of mismatch, the worst first: compare_all reports the worst it saw.
MISMATCH_KINDS = ["result shapes differ", "result unreadable", "integers or pred differ",
                  "NaN or infinity positions differ", "floats beyond 10x the tolerance",
                  "floats within 10x the tolerance",
                  "floats within the tolerance of the result's largest magnitude (cancellation)"]


def compare(got, want, scale):
    """(ok, max error text, mismatch kind or None)."""
    if got.shape != want.shape:
        return False, "shape %s, XLA %s" % (got.shape, want.shape), MISMATCH_KINDS[0]
    if want.size == 0:
        return True, "0", None
    dt = want.dtype
    if dt == np.bool_ or dt.kind in "iu" or dt.name.startswith("int") or dt.name.startswith("uint"):
        bad = int(np.count_nonzero(got.astype(np.int64) != want.astype(np.int64)))
        if bad == 0:
            return True, "0", None
        return False, "%d of %d elements differ" % (bad, want.size), MISMATCH_KINDS[2]
    atol, rtol = tolerance(dt, scale)
    if dt.kind == "c":
        parts = [(got.real, want.real), (got.imag, want.imag)]
    else:
        parts = [(got, want)]
    worst = ratio = 0.0
    nbad = nspecial = 0
    normwise = True  # every error within atol + rtol * max|xla| of its array
    for g, w in parts:
        g = np.asarray(g, np.float64)
        w = np.asarray(w, np.float64)
        gn, wn = np.isnan(g), np.isnan(w)
        fin = np.isfinite(w) & np.isfinite(g)
        inf = ~fin & ~gn & ~wn
        nspecial += int(np.count_nonzero(gn != wn)) + int(np.count_nonzero(inf & (g != w)))
        err = np.abs(g[fin] - w[fin])
        if err.size:
            bound = atol + rtol * np.abs(w[fin])
            nbad += int(np.count_nonzero(err > bound))
            normwise = normwise and bool(np.all(err <= atol + rtol * np.abs(w[fin]).max()))
            worst = max(worst, float(err.max()))
            ratio = max(ratio, float((err / bound).max()))
    text = "%.3g" % worst
    if nbad + nspecial:
        text += " (%d of %d elements off" % (nbad + nspecial, want.size)
        text += ", %d NaN/inf)" % nspecial if nspecial else ", %.0fx tol)" % ratio
    if nspecial:
        return False, text, MISMATCH_KINDS[3]
    if nbad and normwise:
        # off only where the result is small next to the rest of its array:
        # a long sum whose terms cancel, where the order of the additions
        # (the implementation's) decides the last bits
        return False, text, MISMATCH_KINDS[6]
    if nbad:
        return False, text, MISMATCH_KINDS[4 if ratio > 10 else 5]
    return True, text, None


def dtype_of(name):
    return np.dtype(getattr(ml_dtypes, name)) if hasattr(ml_dtypes, name) else np.dtype(name)


def compare_all(outs, xla_outs, scale):
    """(ok, text, the worst mismatch kind or None) over all results."""
    kinds, texts = [], []
    for o, x in zip(outs, xla_outs):
        want = load_npy(x["path"], dtype_of(x["dtype"]))
        try:
            got = load_npy(o, want.dtype)
        except (OSError, ValueError) as e:
            return False, "cannot read result: %s" % e, MISMATCH_KINDS[1]
        ok, text, kind = compare(got, want, scale)
        if kind:
            kinds.append(kind)
        texts.append(text)
    if len(texts) > 4:
        texts = texts[:4] + ["..."]
    kind = min(kinds, key=MISMATCH_KINDS.index) if kinds else None
    return kind is None, "max err " + ", ".join(texts), kind


# ---------------------------------------------------------------------------
# One module.

def split_modules(path):
    """[(name, text)]: one per module of the file."""
    text = open(path, errors="replace").read()
    base = os.path.basename(path)
    for ext in (".hlo", ".txt"):
        if base.endswith(ext):
            base = base[: -len(ext)]
    parts = [p for p in re.split(r"^// -----.*$", text, flags=re.M) if p.strip()]
    if len(parts) <= 1:
        return [(base, text)]
    return [("%s.%d" % (base, k), p) for k, p in enumerate(parts)]


RNG_SEED = re.compile(r"\"GetRngSeed\"")
# XLA's CPU compiler keys each `rng` with a process-wide generator's next
# draw (lib/hlo/rng_keys.c): such a module is compiled in a fresh worker,
# first in its process, as xhloc assumes.
RNG_OP = re.compile(r"\brng\(")
PARAM = re.compile(r"^\s*(?:ROOT\s+)?%?([\w.-]+)\s*=\s*\S+\s+parameter\(", re.M)
REDUCE = re.compile(r"\s(?:reduce|reduce-window)\(([^)]*)\)")
DYNAMIC_RESHAPE = re.compile(r"=\s*\w+\[[^\]]*<=[^\]]*\](\{[^}]*\})?\s+reshape\(")
ALL_GATHER = re.compile(r"\ball-gather(-start)?\(")
LOW_FLOAT_REDUCE = re.compile(r"=\s*(f16|bf16)\[[^\]]*\](\{[^}]*\})?\s+(reduce|reduce-window)\(")


def caveats(text):
    """Why a mismatch may be the implementation's choice rather than a bug,
    as a suffix for the mismatch reason ('' when nothing applies)."""
    notes = []
    if RNG_SEED.search(text):
        notes.append("GetRngSeed: XLA's CPU gives a fresh random seed at every execution")
    params = set(PARAM.findall(text))
    for ops in REDUCE.findall(text):
        names = [o.strip().split()[-1].lstrip("%") if o.strip() else "" for o in
                 re.sub(r"\[[^\]]*\]|\{[^}]*\}", "", ops).split(",")]
        if len(names) % 2 == 0 and any(n in params for n in names[len(names) // 2:]):
            notes.append("a reduction's init value is a parameter: with a random, "
                         "non-identity init XLA may apply it more than once")
            break
    if re.search(r"\bsort\(", text) and "is_stable=true" not in text:
        notes.append("an unstable sort: the order of ties is the implementation's")
    if DYNAMIC_RESHAPE.search(text):
        notes.append("a reshape into a bounded dynamic shape: jax's HLO import drops the "
                     "bound, and XLA reshapes the whole padded buffer")
    if ALL_GATHER.search(text):
        notes.append("an all-gather on one device: where its shapes assume more "
                     "devices, XLA leaves their slots unwritten")
    if LOW_FLOAT_REDUCE.search(text):
        notes.append("an f16/bf16 reduction: both reduce in XLA's CPU order, but XLA's "
                     "library fusions may round their intermediate values elsewhere")
    return " (%s)" % "; ".join(notes) if notes else ""


def header_count(text, key):
    m = re.search(r"^\s*HloModule\b[^\n]*\b%s=(\d+)" % key, text, flags=re.M)
    return int(m.group(1)) if m else 1


class Row:
    def __init__(self, name):
        self.name = name
        self.xla = self.interp = self.host = "-"
        self.xla_reason = self.interp_reason = self.host_reason = ""
        self.detail = ""
        self.via = ""  # which matches needed XLA without its YNNPACK fusions

    @staticmethod
    def from_json(line):
        r = Row("")
        r.__dict__.update(json.loads(line))
        return r


OUT_OF_BOUND_SIZE = re.compile(
    r"^(set-dimension-size|dynamic-reshape) '[^']*': size -?\d+ (of dimension \d+ )?outside \[")


def check_module(args, worker, name, text, work):
    row = Row(name)
    d = os.path.join(work, name)
    os.makedirs(d, exist_ok=True)
    src = os.path.join(d, "module.hlo")
    with open(src, "w") as f:
        f.write(text)
    if header_count(text, "replica_count") > 1 or header_count(text, "num_partitions") > 1:
        row.xla, row.xla_reason = "skip", "skipped: multi-device (replica_count/num_partitions > 1)"
        return row
    if RNG_OP.search(text):
        worker.kill()
    ans = worker.run({"hlo": src, "dir": d, "seed": args.seed,
                      "budget": args.budget << 20}, args.timeout)
    if ans["status"] != "ok":
        row.xla = "skip" if ans["status"] == "skip" else "FAIL"
        row.xla_reason = ans["reason"]
        row.detail = ans.get("detail", "")
        return row
    row.xla = "ok"
    note = caveats(text)
    ins = ["--input=@" + p for p in ans["inputs"]]
    xla_outs = ans["outputs"]
    budget = "--mem-budget=%d" % (8 * (args.budget << 20) + (2 << 30))

    def outputs(tag):
        return [os.path.join(d, "%s%d.npy" % (tag, k)) for k in range(len(xla_outs))]

    # the interpreter
    outs = outputs("interp")
    ok, why = run_tool([args.xhlo_run, src, "--platform=interpreter", "--quiet", budget,
                        "--time-budget=%d" % args.timeout] + ins +
                       ["--output=@" + o for o in outs], args.timeout + 5)
    if ok:
        ok, why, kind = compare_all(outs, xla_outs, args.tolerance)
        row.interp, row.interp_reason = ("ok", "") if ok else \
            ("MISMATCH", "mismatch: %s%s" % (kind, note))
        row.detail = "interp " + why
    else:
        row.interp, row.interp_reason = ("TIMEOUT" if why == "timeout" else "FAIL"), why
    # the host artifact
    prefix = os.path.join(d, "host")
    ok, why = run_tool([args.xhloc, "--target=host", "-w", "-o", prefix, src], args.timeout)
    if not ok:
        row.host, row.host_reason = ("TIMEOUT" if why == "timeout" else "NOCOMPILE"), \
            ("compile: " + why)
    else:
        outs = outputs("host")
        ok, why = run_tool([args.xhlo_run, prefix + ".thunks", "--platform=host", "--quiet"] +
                           ins + ["--output=@" + o for o in outs], args.timeout)
        if ok:
            ok, why, kind = compare_all(outs, xla_outs, args.tolerance)
            row.host, row.host_reason = ("ok", "") if ok else \
                ("MISMATCH", "mismatch: %s%s" % (kind, note))
            row.detail += ("; " if row.detail else "") + "host " + why
        else:
            row.host, row.host_reason = ("TIMEOUT" if why == "timeout" else "FAIL"), \
                ("run: " + why)
    # inputs that put a dynamic size beyond its bound are outside the
    # module's domain: HLO leaves the result undefined (XLA reads and writes
    # past its buffers, its sizes differ from run to run)
    if OUT_OF_BOUND_SIZE.search(row.interp_reason):
        row.xla, row.xla_reason = "skip", \
            "skipped: the random inputs give a dynamic size beyond its bound (undefined)"
        row.detail = row.interp_reason
        return row
    # a mismatch or failure against results XLA itself does not repeat is no
    # mismatch and no match: XLA gives no reference for the module
    if row.interp != "ok" or row.host != "ok":
        again = worker.run({"rerun": True}, args.timeout)
        if again.get("status") == "ok" and not again["same"]:
            row.xla, row.xla_reason = "NOREF", \
                "XLA's results differ between two runs on the same inputs"
    if row.xla == "ok" and (row.interp == "MISMATCH" or row.host == "MISMATCH"):
        second_opinions(args, worker, row, outputs, xla_outs)
    if args.save_sample and row.interp == "ok" and row.host == "ok":
        save_sample(args.save_sample, name, src, ans, xla_outs, args.tolerance)
    return row


def second_opinions(args, worker, row, outputs, xla_outs):
    """For a mismatch: does XLA without its YNNPACK fusions agree with
    xhloc (then xhloc matches XLA, noted in the row)?  Else, for floats: is
    XLA's own rounding error beyond the tolerance (the exact result, an f64
    evaluation of the module rounded to each result's type, is as far from
    XLA's)?  That adds to the mismatch reason, and says how xhloc's error
    from the exact result compares with XLA's."""
    alt = worker.run({"without_ynn": True}, args.timeout)
    if alt.get("status") == "ok":
        for tag in ("interp", "host"):
            if getattr(row, tag) == "MISMATCH" and compare_all(
                    outputs(tag), alt["outputs"], args.tolerance)[0]:
                row.detail += "; %s matches XLA without its YNNPACK fusions (XLA's " \
                    "default: %s)" % (tag, getattr(row, tag + "_reason"))
                setattr(row, tag, "ok")
                setattr(row, tag + "_reason", "")
                row.via = (row.via + "," if row.via else "") + tag + "-without-ynn"
    if not any(getattr(row, t) == "MISMATCH" and "floats" in getattr(row, t + "_reason")
               for t in ("interp", "host")):
        return
    exact = worker.run({"exact": True}, args.timeout)
    if exact.get("status") != "ok":
        return
    for tag in ("interp", "host"):
        if getattr(row, tag) == "MISMATCH" and "floats" in getattr(row, tag + "_reason"):
            verdict = exact_verdict(outputs(tag), xla_outs, exact["outputs"], args.tolerance)
            if verdict:
                setattr(row, tag + "_reason", getattr(row, tag + "_reason") + "; " + verdict)


def exact_verdict(outs, xla_outs, exact_outs, scale):
    """'' or the verdict on XLA's own rounding error over the float results
    that differ from XLA's."""
    beyond, mine, theirs = False, 0.0, 0.0
    for o, x, e in zip(outs, xla_outs, exact_outs):
        want = load_npy(x["path"], dtype_of(x["dtype"]))
        if want.dtype.kind not in "fc" and not want.dtype.name.startswith(("bfloat", "float")):
            continue
        got = load_npy(o, want.dtype)
        if compare(got, want, scale)[0]:
            continue
        truth = np.load(e["path"])
        if truth.shape != want.shape or truth.dtype.kind not in "fc":
            return ""
        rounded = truth.astype(want.dtype)
        if not compare(rounded, want, scale)[0]:
            beyond = True
        fin = np.isfinite(truth)
        t = truth[fin].astype(np.complex128 if truth.dtype.kind == "c" else np.float64)
        mine = max(mine, float(np.abs(got[fin].astype(t.dtype) - t).max(initial=0)))
        theirs = max(theirs, float(np.abs(want[fin].astype(t.dtype) - t).max(initial=0)))
    if not beyond:
        return ""
    return ("XLA's own rounding error is beyond the tolerance: the exact result (f64), "
            "rounded, differs from XLA's too; max error from it: xhloc %.3g, XLA %.3g"
            % (mine, theirs))


SAMPLE_MAX_BYTES = 256 << 10


def save_sample(dest, name, src, ans, xla_outs, scale):
    """NAME.hlo, NAME.inK.npy, NAME.outK.npy and NAME.tol (xhlo-run's --atol
    and --rtol: the widest of the outputs' tolerances), for modules whose
    inputs and results take at most SAMPLE_MAX_BYTES."""
    files = ans["inputs"] + [x["path"] for x in xla_outs]
    if sum(os.path.getsize(f) for f in files) > SAMPLE_MAX_BYTES:
        return
    os.makedirs(dest, exist_ok=True)
    shutil.copy(src, os.path.join(dest, name + ".hlo"))
    for k, p in enumerate(ans["inputs"]):
        shutil.copy(p, os.path.join(dest, "%s.in%d.npy" % (name, k)))
    atol = rtol = 0.0
    for k, x in enumerate(xla_outs):
        shutil.copy(x["path"], os.path.join(dest, "%s.out%d.npy" % (name, k)))
        dt = x["dtype"]
        if dt != "bool" and not re.match(r"u?int", dt):
            a, r = tolerance(dtype_of(dt), scale)
            atol, rtol = max(atol, a), max(rtol, r)
    with open(os.path.join(dest, name + ".tol"), "w") as f:
        f.write("--atol=%g --rtol=%g\n" % (atol or 1e-5, rtol or 1e-5))


# ---------------------------------------------------------------------------
# Reasons and the report.

def reason_class(reason):
    """A grouping key: the message with instruction names, numbers and
    dimensions blurred (element types, op names and custom-call targets
    kept)."""
    r = reason
    r = re.sub(r"'[^']*\.(hlo|txt|npy|thunks|so)'", "'FILE'", r)
    r = re.sub(r"^((compile|run): )?error: ", r"\1", r)
    r = re.sub(r"^((compile|run): )?([a-z][a-z0-9-]*) '[^']*': ", r"\1\3: ", r)
    r = re.sub(r"('[^']*') \((?!target)[\w.-]*\)", r"\1", r)
    r = re.sub(r": no (kernel emitter for it|thunk for it yet)$", "", r)
    r = re.sub(r"\b([a-z][a-z0-9]*)\[[0-9,]*\](\{[^}]*\})?", r"\1[...]", r)
    r = re.sub(r"(for instruction|async shape at index|computation): .*", r"\1: ...", r)
    r = re.sub(r"(in|of|for) '[^']*'", r"\1 'X'", r)
    r = re.sub(r"%[\w.-]+", "%X", r)
    r = re.sub(r"\b\d+(\.\d+)?(e[-+]?\d+)?\b", "N", r)
    return r[:200]


def summarize(rows, out):
    def pct(a, b):
        return "%.1f%%" % (100.0 * a / b) if b else "-"
    n = len(rows)
    ran = [r for r in rows if r.xla == "ok"]
    interp_ok = sum(r.interp == "ok" for r in ran)
    host_ok = sum(r.host == "ok" for r in ran)
    host_compiled = sum(r.host == "ok" or not r.host_reason.startswith("compile") for r in ran)
    skipped = [r for r in rows if r.xla == "skip"]
    xfail = [r for r in rows if r.xla == "FAIL"]
    noref = [r for r in rows if r.xla == "NOREF"]
    p = lambda s="": print(s, file=out)
    p()
    p("summary: %d modules; %d skipped; XLA failed on %d; XLA ran %d (and %d more whose "
      "results XLA does not repeat)" % (n, len(skipped), len(xfail), len(ran), len(noref)))
    def via(tag):
        k = sum(tag + "-without-ynn" in r.via.split(",") for r in ran)
        return (" (%d of them match XLA without its YNNPACK fusions, which drop NaNs in "
                "max/min; XLA's default differs)" % k) if k else ""
    p("  interpreter matches XLA: %d of %d (%s)%s" % (interp_ok, len(ran),
                                                     pct(interp_ok, len(ran)), via("interp")))
    p("  host compiles: %d of %d (%s); compiles and matches XLA: %d of %d (%s)%s" %
      (host_compiled, len(ran), pct(host_compiled, len(ran)), host_ok, len(ran),
       pct(host_ok, len(ran)), via("host")))

    def group(title, items):
        groups = {}
        for name, reason in items:
            groups.setdefault(reason_class(reason), []).append((name, reason))
        p()
        p("%s: %d" % (title, len(items)))
        for key, members in sorted(groups.items(), key=lambda kv: (-len(kv[1]), kv[0])):
            ex = ", ".join(m[0] for m in members[:3])
            p("  %4d  %s" % (len(members), key))
            p("        e.g. %s" % ex)
    group("skipped", [(r.name, r.xla_reason) for r in skipped])
    group("XLA failures", [(r.name, r.xla_reason) for r in xfail])
    group("no reference: XLA's results differ between two runs on the same inputs "
          "(the xhloc mismatch shown)",
          [(r.name, r.interp_reason if r.interp != "ok" else r.host_reason) for r in noref])
    group("interpreter failures (of the modules XLA ran)",
          [(r.name, r.interp_reason) for r in ran if r.interp != "ok"])
    group("host failures (of the modules XLA ran)",
          [(r.name, r.host_reason) for r in ran if r.host != "ok"])


def print_header(out, width):
    print("%-*s  %-4s  %-8s  %-9s  %s" % (width, "module", "xla", "interp", "host",
                                         "max error or reason"), file=out, flush=True)


def print_row(r, out, width):
    why = r.detail
    reasons = [x for x in (r.xla_reason, r.interp_reason, r.host_reason) if x]
    if reasons:
        why = "; ".join(reasons) + ("; " + r.detail if r.detail else "")
    print("%-*s  %-4s  %-8s  %-9s  %s" % (width, r.name, r.xla, r.interp, r.host, why[:300]),
          file=out, flush=True)


def collect(paths):
    files = []
    for p in paths:
        if os.path.isdir(p):
            for f in sorted(os.listdir(p)):
                if f.endswith(".hlo") or f.endswith(".txt"):
                    files.append(os.path.join(p, f))
        else:
            files.append(p)
    return files


def main():
    if sys.argv[1:2] == ["--xla-worker"]:
        return xla_worker()
    ap = argparse.ArgumentParser(
        prog="xla-crosscheck",
        description="Run HLO modules on XLA's CPU backend (jax), on xhloc's reference "
        "interpreter and as a host artifact (xhloc --target=host) with the same seeded "
        "random inputs, and compare the results with XLA's: integers and pred "
        "bit-exact, floats within a tolerance by type, NaNs in the same places. Prints "
        "a row per module and a summary with every failure reason grouped.",
        epilog="Modules with replica_count or num_partitions above 1, token parameters or "
        "results, or inputs over --budget are skipped and counted. A crash or hang, in XLA "
        "too, is one module's row. Environment: XHLO_XCHECK_VENV (the venv scripts/"
        "xla-crosscheck makes, default build/xcheck-venv), XHLOC_BIN, XHLO_NUM_THREADS "
        "(threads of the host runs, default 1).")
    ap.add_argument("paths", nargs="*", metavar="DIR|FILE",
                    help="directories (their *.hlo and *.txt) or module files")
    ap.add_argument("--jobs", metavar="N", type=int, default=1, help="modules checked at once (default 1)")
    ap.add_argument("--only", metavar="REGEX", default="", help="check the modules whose name matches REGEX")
    ap.add_argument("--stride", metavar="N", type=int, default=1,
                    help="check every Nth module (after --only), to sample a large corpus")
    ap.add_argument("--budget", metavar="MiB", type=int, default=256,
                    help="skip modules whose inputs need more than this many MiB (default 256); "
                    "the interpreter may hold 8 times that plus 2 GiB of live arrays")
    ap.add_argument("--timeout", metavar="S", type=int, default=60,
                    help="seconds allowed for each step (XLA, interpreter, compile, run; "
                    "default 60)")
    ap.add_argument("--tolerance", metavar="X", type=float, default=1.0,
                    help="scale the float tolerances by this factor (default 1: atol/rtol "
                    "f64 1e-9/1e-7, f32 and c64 1e-5/1e-4, f16 2e-3/1e-2, bf16 1e-2/3e-2, "
                    "f8 0.125/0.25)")
    ap.add_argument("--seed", metavar="N", type=int, default=42, help="input seed (default 42)")
    ap.add_argument("--out", metavar="DIR", default="", help="keep the modules, inputs and results here")
    ap.add_argument("--save-sample", metavar="DIR", default="",
                    help="copy each module that matches on both the interpreter and the host, "
                    "its inputs and XLA's results (NAME.hlo, NAME.inK.npy, NAME.outK.npy, "
                    "NAME.tol; modules with up to 256 KiB of inputs and results) into this "
                    "directory: tests/check-xla-crosscheck.sh's form")
    ap.add_argument("--json", metavar="FILE", default="",
                    help="also write each row as a JSON line to this file")
    ap.add_argument("--summarize", default="", metavar="FILE",
                    help="print the table (sorted by module) and the summary of the rows a "
                    "--json FILE holds; run nothing")
    ap.add_argument("--bin", metavar="DIR", default=os.environ.get("XHLOC_BIN", os.path.join(ROOT, "build/bin")),
                    help="directory of xhloc and xhlo-run (default $XHLOC_BIN or build/bin)")
    args = ap.parse_args()
    if args.summarize:
        with open(args.summarize) as f:
            rows = [Row.from_json(line) for line in f if line.strip()]
        rows.sort(key=lambda r: r.name)
        width = min(60, max([len(r.name) for r in rows] + [6]))
        print_header(sys.stdout, width)
        for r in rows:
            print_row(r, sys.stdout, width)
        summarize(rows, sys.stdout)
        return 0
    args.xhloc = os.path.join(args.bin, "xhloc")
    args.xhlo_run = os.path.join(args.bin, "xhlo-run")
    for tool in (args.xhloc, args.xhlo_run):
        if not os.access(tool, os.X_OK):
            ap.error("%s is missing; run make first" % tool)

    if not args.paths:
        ap.error("no DIR or FILE given")
    modules = []
    for f in collect(args.paths):
        try:
            modules += split_modules(f)
        except OSError as e:
            print("xla-crosscheck: %s: %s" % (f, e), file=sys.stderr)
    if args.only:
        modules = [m for m in modules if re.search(args.only, m[0])]
    modules = modules[:: max(1, args.stride)]
    if not modules:
        ap.error("no modules to check")

    work = args.out or tempfile.mkdtemp(prefix="xla-crosscheck.")
    os.makedirs(work, exist_ok=True)
    width = min(60, max(len(m[0]) for m in modules))
    print_header(sys.stdout, width)
    jsonf = open(args.json, "w") if args.json else None
    local = threading.local()
    workers = []
    lock = threading.Lock()

    def one(m):
        if not hasattr(local, "worker"):
            local.worker = Worker()
            with lock:
                workers.append(local.worker)
        try:
            row = check_module(args, local.worker, m[0], m[1], work)
        except Exception as e:  # never let one module stop the run
            row = Row(m[0])
            row.xla, row.xla_reason = "FAIL", "cross-check error: %s: %s" % (type(e).__name__, e)
        if not args.out:
            shutil.rmtree(os.path.join(work, m[0]), ignore_errors=True)
        with lock:
            print_row(row, sys.stdout, width)
            if jsonf:
                jsonf.write(json.dumps(row.__dict__) + "\n")
                jsonf.flush()
        return row

    t0 = time.time()
    try:
        with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
            rows = list(pool.map(one, modules))
    finally:
        for w in workers:
            w.kill()
        if not args.out:
            shutil.rmtree(work, ignore_errors=True)
    summarize(rows, sys.stdout)
    print("\n%d modules in %.0f s" % (len(rows), time.time() - t0))
    return 0


if __name__ == "__main__":
    sys.exit(main())
