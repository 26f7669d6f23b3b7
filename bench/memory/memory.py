#!/usr/bin/env python3
"""memory.py - xhloc's buffer assignment against XLA CPU's memory (issue #23).

For every single-device real model of the HLO corpus (and, with
--real-dumps, in a second section, the single-device real dumps over 1 MiB)
this prints one Markdown table:

    model | XLA CPU | xhloc host | ratio | xhloc GPU | ratio

- xhloc's figure for a target is the "Total bytes used" of its buffer
  assignment, `xhloc -w --target=host|gpu --stage=buffer-assignment FILE`:
  every allocation (parameters, constants, live-out results, the temp
  arena, and on the GPU the library workspaces) in bytes.  It is computed
  afresh on every run (well under a second per module).  --stats prints,
  after the tables, xhloc's "BufferAssignment stats" lines per target, plus
  the allocations none of them counts (on the GPU: library workspaces),
  and XLA's breakdown.
- XLA CPU's figure is from the compiled executable of the same module
  (jaxlib: `hlo_module_from_text`, `hlo_to_stablehlo`, the CPU client's
  `compile_and_load`, then `get_compiled_memory_stats()`):
      argument_size_in_bytes + output_size_in_bytes
      + temp_size_in_bytes - alias_size_in_bytes
  (an output that aliases a parameter through `input_output_alias` is
  counted once).  XLA fills these from its buffer allocations
  (CompiledMemoryStats::PopulateBufferStatsFromAllocations): entry
  parameters, maybe-live-out allocations and the preallocated temp buffer;
  constant allocations are not counted there, while xhloc's total counts
  its constants (see "constant allocation" under --stats).  jaxlib 0.10's CompiledMemoryStats also has
  generated_code_size_in_bytes (code, not buffers: not counted),
  host_argument/host_output/host_temp/host_alias/host_generated_code
  _size_in_bytes (memory offloaded to the host; 0 on the CPU client; kept
  in the cache's note when not 0, never counted) and peak_memory_in_bytes
  (not used: on the CPU it is not the sum above, e.g. below temp alone).
  Where XLA refuses the module with its `input_output_alias`, it is compiled
  once more without it, and the note says so (then alias is 0).  Custom
  calls with `api_version=API_VERSION_UNSPECIFIED` (PyTorch/XLA dumps),
  which XLA's parser refuses, are read as API_VERSION_ORIGINAL, so that the
  failure names the custom call XLA has no implementation for.
- ratio = xhloc / XLA CPU; at or below 1.0x xhloc needs no more memory.
- --xla-gpu adds XLA:GPU's figure (same stats, jax with CUDA and a GPU in
  the venv), and the GPU target's ratio is then against XLA GPU.

XLA's figures are compiled once and kept in bench/memory/xla-cpu-memory.tsv
(file, sha256 of the HLO text, argument, output, temp, alias, total, note,
jaxlib version), checked in; a row is used while the file's sha256 matches.
Later runs compile only the modules without a valid row, unless
--refresh-xla (everything) or --retry-failed (the rows cached as failed or
timed out).  Each XLA compile runs in its own worker process, with
--timeout seconds (default 300), so a crash or a timeout loses only that
module (the failure is cached with its reason).  --no-xla never imports
jax: it reads the cache only (what `make check` runs).  XLA GPU's figures
go to bench/memory/xla-gpu-memory.tsv the same way.

Which modules: MANIFEST.tsv rows of kind `model` (column 9); with
--real-dumps also kind `real-dump`, shown when XLA's total (or where XLA
failed, xhloc's for the host) is over 1 MiB.  A module is single-device
unless
  - its HloModule header says num_partitions or replica_count above 1, or
  - it has a collective (all-reduce, all-gather, reduce-scatter,
    all-to-all, ragged-all-to-all, collective-permute,
    collective-broadcast, or their -start forms): the program assumes
    other devices, even where the header says nothing, or
  - a sharding annotation tiles an array over more than one device
    (`devices=[...]` whose tile dimensions multiply to more than 1, with
    or without last_tile_dim_replicate), or it has the custom calls
    SPMDFullToShardShape/SPMDShardToFullShape: the program is meant for
    XLA's SPMD partitioner.
`sharding={replicated}` and `{maximal device=N}` are single-device.  The
excluded modules are listed with the reason under the tables.

Usage (bench/memory/run.sh makes the venv):
    memory.py [--only REGEX] [--no-xla] [--refresh-xla] [--retry-failed]
              [--timeout S] [--real-dumps] [--stats] [--tsv FILE]
              [--targets host,gpu] [--xla-gpu] [--corpus DIR] [--cache FILE]
              [--xhloc PATH]
Exit status 0 whenever it ran (a benchmark, not a test); stderr says how
many rows are above 1.0x.  2 on a usage error.
"""

import argparse
import hashlib
import json
import math
import os
import re
import signal
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
CACHE_COLUMNS = ["file", "sha256", "argument", "output", "temp", "alias", "total", "note",
                 "jaxlib"]
REAL_DUMP_MIN = 1 << 20  # real dumps are shown above 1 MiB of XLA memory


# ---------------------------------------------------------------------------
# The XLA worker: one module per process, its answer one JSON line.

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
    msg = str(e).strip().splitlines()
    head = msg[0] if msg else ""
    if "Syntax error when trying to parse" in head:
        for l in msg[1:]:
            m = re.match(r"was parsing \d+:\d+: error: (.*)", l)
            if m:
                return "XLA parse error: " + m.group(1)
    if type(e).__name__ in ("JaxRuntimeError", "XlaRuntimeError"):
        return head[:300]
    return "%s: %s" % (type(e).__name__, head[:300])


def xla_one(path, platform):
    if platform == "cpu":
        os.environ.setdefault("JAX_PLATFORMS", "cpu")
    out = sys.stdout
    sys.stdout = sys.stderr  # anything jax prints must not break the answer
    import jax
    import jaxlib
    from jax._src.lib import hlo, xla_client
    import jaxlib._jax as _jax
    jax.config.update("jax_enable_x64", True)
    text = open(path, errors="replace").read()
    try:
        dev = jax.devices(platform)[0]
    except Exception as e:
        # Not the module's failure: never cached.
        out.write(json.dumps({"status": "fail", "nocache": True,
                              "reason": "no XLA %s backend in this jax (%s)"
                              % (platform.upper(), xla_error(e))}) + "\n")
        out.flush()
        return

    def compile_text(t):
        proto = hlo.hlo_module_from_text(t).as_serialized_hlo_module_proto()
        return dev.client.compile_and_load(_jax.mlir.hlo_to_stablehlo(proto),
                                           xla_client.DeviceList((dev,)),
                                           xla_client.CompileOptions())

    notes = []
    t0 = time.time()
    try:
        if "api_version=API_VERSION_UNSPECIFIED" in text:
            # XLA's parser refuses it before anything else: name the custom
            # call XLA has no implementation for instead.
            text = text.replace("api_version=API_VERSION_UNSPECIFIED",
                                "api_version=API_VERSION_ORIGINAL")
            notes.append("api_version=API_VERSION_UNSPECIFIED read as API_VERSION_ORIGINAL")
        try:
            exe = compile_text(text)
        except Exception as e:
            bare = drop_header_attr(text, "input_output_alias")
            if bare == text:
                raise
            try:
                exe = compile_text(bare)
            except Exception:
                raise e
            notes.append("compiled without input_output_alias (%s)" % xla_error(e))
        st = exe.get_compiled_memory_stats()
    except Exception as e:
        ans = {"status": "fail", "reason": xla_error(e)}
    else:
        ans = {"status": "ok",
               "argument": st.argument_size_in_bytes,
               "output": st.output_size_in_bytes,
               "temp": st.temp_size_in_bytes,
               "alias": st.alias_size_in_bytes}
        for f in ("generated_code_size_in_bytes", "host_argument_size_in_bytes",
                  "host_output_size_in_bytes", "host_temp_size_in_bytes",
                  "host_alias_size_in_bytes", "host_generated_code_size_in_bytes"):
            v = getattr(st, f, 0)
            if v and f != "generated_code_size_in_bytes":
                notes.append("%s=%d" % (f, v))
        ans["note"] = "; ".join(notes)
    ans["seconds"] = round(time.time() - t0, 1)
    ans["jaxlib"] = jaxlib.__version__
    if platform != "cpu":
        ans["device"] = getattr(dev, "device_kind", "")
    out.write(json.dumps(ans) + "\n")
    out.flush()


def signame(rc):
    try:
        return signal.Signals(-rc).name
    except ValueError:
        return "signal %d" % -rc


def xla_memory(path, platform, timeout):
    """XLA's figures for one file on PLATFORM (cpu, gpu), in a fresh worker
    process."""
    cmd = [sys.executable, os.path.abspath(__file__), "--xla-one", path,
           "--platform", platform]
    with tempfile.TemporaryFile(mode="w+", errors="replace") as log:
        p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=log, text=True,
                             start_new_session=True)
        try:
            out, _ = p.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            p.communicate()
            return {"status": "fail", "reason": "XLA timeout after %d s" % timeout}
        for line in out.splitlines():
            if line.startswith("{"):
                return json.loads(line)
        log.seek(0)
        fatal = ""
        for l in log.read().splitlines():
            m = re.match(r"F\d{4} [^\]]*\] (.*)", l)
            if m:
                fatal = ": " + m.group(1)[:200]
        why = signame(p.returncode) if p.returncode < 0 else "exit %d" % p.returncode
        return {"status": "fail", "reason": "XLA crashed (%s)%s" % (why, fatal)}


# ---------------------------------------------------------------------------
# The cache of XLA's figures.

def read_cache(path):
    rows = {}
    if not os.path.exists(path):
        return rows
    with open(path) as f:
        for line in f:
            line = line.rstrip("\n")
            if not line or line.startswith("#"):
                continue
            cols = line.split("\t")
            if cols[0] == "file":
                continue
            cols += [""] * (len(CACHE_COLUMNS) - len(cols))
            rows[cols[0]] = dict(zip(CACHE_COLUMNS, cols))
    return rows


def write_cache(path, rows, platform):
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        f.write("# XLA %s's compiled memory stats per corpus module, bytes "
                "(bench/memory/memory.py; total = argument + output + temp - alias)\n"
                % platform.upper())
        f.write("\t".join(CACHE_COLUMNS) + "\n")
        for name in sorted(rows):
            r = rows[name]
            f.write("\t".join(str(r.get(c, "")).replace("\t", " ").replace("\n", " ")
                              for c in CACHE_COLUMNS) + "\n")
    os.replace(tmp, path)


def cache_row(name, sha, ans):
    version = ans.get("jaxlib", "")
    if ans.get("device"):
        version += " " + ans["device"]
    if ans["status"] != "ok":
        return {"file": name, "sha256": sha, "argument": "-", "output": "-", "temp": "-",
                "alias": "-", "total": "-", "note": "failed: " + ans["reason"],
                "jaxlib": version}
    total = ans["argument"] + ans["output"] + ans["temp"] - ans["alias"]
    return {"file": name, "sha256": sha, "argument": ans["argument"],
            "output": ans["output"], "temp": ans["temp"], "alias": ans["alias"],
            "total": total, "note": ans.get("note", ""), "jaxlib": version}


def cache_ok(row):
    return row is not None and row["total"] not in ("", "-")


# ---------------------------------------------------------------------------
# Which modules.

HEADER_COUNT = re.compile(r"\b(num_partitions|replica_count)=(\d+)")
COLLECTIVE = re.compile(r"\b(all-reduce|all-gather|reduce-scatter|all-to-all|ragged-all-to-all|"
                        r"collective-permute|collective-broadcast)(-start)?\(")
TILED = re.compile(r"devices=\[([0-9,]+)\]")
SPMD_CC = re.compile(r'custom_call_target="(SPMDFullToShardShape|SPMDShardToFullShape)"')


def multi_device_reason(text):
    """Why the module is not single-device, or ''."""
    nl = text.find("\n")
    header = text[: nl if nl >= 0 else len(text)]
    for key, n in HEADER_COUNT.findall(header):
        if int(n) > 1:
            return "%s=%s" % (key, n)
    found = {}
    for op, _ in COLLECTIVE.findall(text):
        found[op] = found.get(op, 0) + 1
    if found:
        return "collectives: " + ", ".join("%s x%d" % (k, v) for k, v in sorted(found.items()))
    most = 1
    for dims in TILED.findall(text):
        most = max(most, math.prod(int(d) for d in dims.split(",") if d))
    if most > 1:
        return "sharding over %d devices (SPMD partitioning)" % most
    if SPMD_CC.search(text):
        return "SPMD shard/full-shape custom calls"
    return ""


def read_manifest(corpus):
    rows = []
    with open(os.path.join(corpus, "MANIFEST.tsv")) as f:
        head = f.readline().rstrip("\n").split("\t")
        for line in f:
            cols = line.rstrip("\n").split("\t")
            rows.append(dict(zip(head, cols)))
    return rows


PREFIXES = [
    (r"^rocm-hlo-eval__[a-z_]+?__", "rocm:"),
    (r"^xla__backends__cpu__benchmarks__(huge_)?hlo__", "xla-cpu:"),
    (r"^xla__tools__benchmarks__hlo__", "xla-tools:"),
    (r"^xla__tools__data__benchmarking__", "xla-tools:"),
    (r"^xla-rocmref__tools__benchmarks__hlo__", "xla-rocm:"),
    (r"^graphhelper-", "gh:"),
]


def short_name(fname):
    n = re.sub(r"(\.before_optimizations)?\.(hlo|txt)$", "", fname)
    for pat, rep in PREFIXES:
        n2 = re.sub(pat, rep, n)
        if n2 != n:
            n = n2
            break
    return n.replace("__", "/")


# ---------------------------------------------------------------------------
# xhloc's side.

STAT = re.compile(r"^\s*([a-z_ ]+(?:allocation|fragmentation)):\s*(.*)$")
ALLOC = re.compile(r"^allocation \d+: size (\d+)(.*):$", re.M)


def xhloc_memory(xhloc, path, target, timeout):
    """{'status': 'ok', 'total': N, 'stats': [lines]} or a failure."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        try:
            p = subprocess.run([xhloc, "-w", "--target=" + target, "--stage=buffer-assignment",
                                path], stdout=out, stderr=err, timeout=timeout)
        except subprocess.TimeoutExpired:
            return {"status": "fail", "reason": "xhloc timeout after %d s" % timeout}
        out.seek(0)
        text = out.read().decode(errors="replace")
        err.seek(0)
        errtext = err.read().decode(errors="replace")
    if p.returncode != 0:
        if p.returncode < 0:
            return {"status": "fail", "reason": "xhloc crashed (%s)" % signame(p.returncode)}
        lines = [l for l in errtext.splitlines() if l.strip()]
        first = next((l for l in lines if "error" in l), lines[0] if lines else "no message")
        first = re.sub(r"^\S+:\d+:\d+: (fatal )?error: ", "", first)
        first = re.sub(r"^xhloc: (error: )?", "", first)
        return {"status": "fail", "reason": "xhloc: " + first[:200]}
    m = re.search(r"^Total bytes used: (\d+)", text, flags=re.M)
    if not m:
        return {"status": "fail", "reason": "xhloc printed no 'Total bytes used'"}
    stats = []
    for l in text[m.end():].splitlines():
        if STAT.match(l):
            stats.append(l.strip())
    # Allocations none of the stats lines counts (on the GPU: library
    # workspaces).
    n = other = 0
    for a in ALLOC.finditer(text, 0, m.start()):
        if not re.search(r"\b(parameter|constant|maybe-live-out|preallocated-temp)\b",
                         a.group(2)):
            n += 1
            other += int(a.group(1))
    if n:
        stats.append("other allocations: %s in %d (not parameter, constant, live-out "
                     "or temp)" % (human(other), n))
    consts = sum(int(a.group(1)) for a in ALLOC.finditer(text, 0, m.start())
                 if re.search(r"\bconstant\b", a.group(2)))
    return {"status": "ok", "total": int(m.group(1)), "constants": consts,
            "stats": stats}


# ---------------------------------------------------------------------------
# The table.

def human(n):
    if n is None:
        return "-"
    for unit, div in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= div:
            return "%.2f %s" % (n / div, unit)
    return "%d B" % n


def ratio_text(r):
    return "%.2fx" % r if r is not None else "-"


def cell(side):
    if side["status"] == "ok":
        return human(side["total"])
    return "failed: " + side["reason"]


class Row:
    def __init__(self, name, section):
        self.name = name
        self.section = section
        self.short = short_name(name)
        self.xla = {}      # platform: {'status', 'total' or 'reason'}
        self.xla_row = {}  # platform: the cache row
        self.xhloc = {}    # target: {'status', 'total', 'stats' or 'reason'}

    def base(self, target):
        """The XLA platform xhloc's TARGET is compared with: XLA GPU for the
        GPU target when it was measured, else XLA CPU."""
        return "gpu" if target == "gpu" and "gpu" in self.xla else "cpu"

    def ratio(self, target, like_for_like=False):
        """xhloc's total over XLA's; like_for_like leaves xhloc's constant
        allocations out, as XLA's memory stats leave its constants out
        (they are part of its executable)."""
        s = self.xhloc.get(target)
        x = self.xla.get(self.base(target))
        if x and x["status"] == "ok" and s and s["status"] == "ok" and x["total"] > 0:
            mine = s["total"] - (s.get("constants", 0) if like_for_like else 0)
            return mine / x["total"]
        return None


def summary(rows, targets, platforms):
    lines = []
    parts = ["%d module%s" % (len(rows), "" if len(rows) == 1 else "s")]
    for p in platforms:
        parts.append("XLA %s failed on %d" % (p.upper(), sum(1 for r in rows
                                                           if r.xla[p]["status"] != "ok")))
    for t in targets:
        parts.append("xhloc %s failed on %d" % (t, sum(1 for r in rows
                                                     if r.xhloc[t]["status"] != "ok")))
    lines.append(", ".join(parts))
    for t in targets:
        rs = [(r.ratio(t), r) for r in rows if r.ratio(t) is not None]
        against = "XLA GPU" if t == "gpu" and "gpu" in platforms else "XLA CPU"
        if not rs:
            lines.append("xhloc %s: no rows with both figures" % t)
            continue
        at_or_below = sum(1 for x, _ in rs if x <= 1.0)
        worst = max(rs, key=lambda p: p[0])
        geo = math.exp(sum(math.log(x) for x, _ in rs) / len(rs))
        lines.append("xhloc %s against %s: %d of %d at or below 1.0x, worst %.2fx (%s), "
                     "geometric mean %.2fx"
                     % (t, against, at_or_below, len(rs), worst[0], worst[1].short, geo))
        ls = [(r.ratio(t, True), r) for r in rows if r.ratio(t, True) is not None]
        if ls and any(r.xhloc[t].get("constants") for _, r in ls):
            worst = max(ls, key=lambda p: p[0])
            lines.append("  like for like (xhloc's constants left out too, as %s's stats "
                         "leave its own out): %d of %d at or below 1.0x, worst %.2fx (%s)"
                         % (against, sum(1 for x, _ in ls if x <= 1.0), len(ls),
                            worst[0], worst[1].short))
    return lines


def dump_size(r):
    """A real dump's size for the 1 MiB cut: XLA's total, or where XLA has
    none, xhloc's for the host (the GPU's counts library workspaces)."""
    if r.xla["cpu"]["status"] == "ok":
        return r.xla["cpu"]["total"]
    for t in ("host", "gpu"):
        s = r.xhloc.get(t)
        if s and s["status"] == "ok":
            return s["total"]
    return 0


def print_table(rows, targets, platforms, title, out):
    out.write("\n### %s\n\n" % title)
    head = ["model", "XLA CPU"]
    for t in targets:
        if t == "gpu" and "gpu" in platforms:
            head.append("XLA GPU")
        head += ["xhloc " + ("GPU" if t == "gpu" else t), "ratio"]
    head.append("xhloc constants")
    out.write("| " + " | ".join(head) + " |\n")
    out.write("|" + " --- |" * len(head) + "\n")
    for r in rows:
        cells = [r.short, cell(r.xla["cpu"])]
        for t in targets:
            if t == "gpu" and "gpu" in platforms:
                cells.append(cell(r.xla["gpu"]))
            cells += [cell(r.xhloc[t]), ratio_text(r.ratio(t))]
        first = r.xhloc.get(targets[0]) if targets else None
        cells.append(human(first.get("constants")) if first and first["status"] == "ok"
                     else "-")
        out.write("| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |\n")
    out.write("\n")
    for l in summary(rows, targets, platforms):
        out.write("- " + l + "\n")


def xla_side(rows, platform, path, args):
    """Fills r.xla[platform] from the cache at PATH, compiling (and caching)
    what it lacks unless --no-xla."""
    cache = read_cache(path)
    changed = False
    unavailable = None  # why this platform cannot compile anything here
    # The smallest modules first: an interrupted run keeps the most.
    order = sorted(rows, key=lambda r: os.path.getsize(r.path))
    for k, r in enumerate(order):
        c = cache.get(r.name)
        fresh = c is not None and c["sha256"] == r.sha
        redo = args.refresh_xla or not fresh or (args.retry_failed and not cache_ok(c))
        if redo and args.no_xla:
            r.xla[platform] = {"status": "fail", "reason": "no cached XLA figure (--no-xla)"
                               if c is None else
                               "cached XLA figure is for another version of the file"}
            continue
        if redo and unavailable:
            r.xla[platform] = {"status": "fail", "reason": unavailable}
            continue
        if redo:
            print("memory: [%d/%d] XLA %s compiling %s" % (k + 1, len(order), platform.upper(),
                                                           r.short),
                  file=sys.stderr, flush=True)
            ans = xla_memory(r.path, platform, args.timeout)
            print("memory:   %s (%.0f s)" % ("ok" if ans["status"] == "ok" else ans["reason"],
                                             ans.get("seconds", 0)),
                  file=sys.stderr, flush=True)
            if ans.get("nocache"):
                unavailable = ans["reason"]
                r.xla[platform] = {"status": "fail", "reason": unavailable}
                continue
            c = cache_row(r.name, r.sha, ans)
            cache[r.name] = c
            changed = True
            write_cache(path, cache, platform)
        if cache_ok(c):
            r.xla[platform] = {"status": "ok", "total": int(c["total"])}
        else:
            r.xla[platform] = {"status": "fail",
                               "reason": re.sub(r"^failed: ", "", c["note"]) or "?"}
        r.xla_row[platform] = c
    if changed:
        print("memory: updated %s" % path, file=sys.stderr)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--xla-one", metavar="FILE", help=argparse.SUPPRESS)
    ap.add_argument("--platform", default="cpu", help=argparse.SUPPRESS)
    ap.add_argument("--only", metavar="REGEX", help="modules whose file name matches")
    ap.add_argument("--no-xla", action="store_true",
                    help="never compile with XLA (no jax): use the cached figures only")
    ap.add_argument("--refresh-xla", action="store_true", help="recompile every XLA figure")
    ap.add_argument("--retry-failed", action="store_true",
                    help="recompile the XLA figures cached as failed (or timed out)")
    ap.add_argument("--timeout", type=float, default=300,
                    help="seconds for one XLA compile (default 300)")
    ap.add_argument("--xhloc-timeout", type=float, default=300,
                    help="seconds for one xhloc buffer assignment (default 300)")
    ap.add_argument("--real-dumps", action="store_true",
                    help="a second section: single-device real dumps over 1 MiB")
    ap.add_argument("--targets", default="host,gpu", help="xhloc targets (default host,gpu)")
    ap.add_argument("--xla-gpu", action="store_true",
                    help="also XLA:GPU's figures (jax with CUDA and a GPU), the GPU "
                         "target's yardstick")
    ap.add_argument("--tsv", metavar="FILE", help="also write the rows as TSV")
    ap.add_argument("--corpus", default=os.environ.get("XHLOC_CORPUS",
                                                      os.path.join(ROOT, "..", "shared",
                                                                   "hlo-corpus")))
    ap.add_argument("--cache", default=os.path.join(HERE, "xla-cpu-memory.tsv"),
                    help="XLA CPU's figures (default bench/memory/xla-cpu-memory.tsv)")
    ap.add_argument("--gpu-cache", default=os.path.join(HERE, "xla-gpu-memory.tsv"),
                    help="XLA GPU's figures (default bench/memory/xla-gpu-memory.tsv)")
    ap.add_argument("--xhloc", default=os.path.join(os.environ.get("XHLOC_BIN",
                                                                   os.path.join(ROOT, "build",
                                                                                "bin")),
                                                    "xhloc"))
    ap.add_argument("--stats", action="store_true",
                    help="after the tables, each module's XLA breakdown and xhloc's "
                         "BufferAssignment stats")
    args = ap.parse_args()
    if args.xla_one:
        xla_one(args.xla_one, args.platform)
        return 0
    targets = [t for t in args.targets.split(",") if t]
    for t in targets:
        if t not in ("host", "gpu"):
            ap.error("unknown target %r" % t)
    if not os.path.isfile(os.path.join(args.corpus, "MANIFEST.tsv")):
        print("memory: no corpus at %s (MANIFEST.tsv; set XHLOC_CORPUS or --corpus)"
              % args.corpus, file=sys.stderr)
        return 2
    if not os.access(args.xhloc, os.X_OK):
        print("memory: no xhloc at %s (make, or set XHLOC_BIN)" % args.xhloc, file=sys.stderr)
        return 2
    try:
        only = re.compile(args.only) if args.only else None
    except re.error as e:
        ap.error("--only: %s" % e)
    platforms = ["cpu"] + (["gpu"] if args.xla_gpu else [])

    kinds = ["model"] + (["real-dump"] if args.real_dumps else [])
    rows, excluded = [], []
    for m in read_manifest(args.corpus):
        if m.get("kind") not in kinds:
            continue
        name = m["file"]
        if only and not only.search(name):
            continue
        path = os.path.join(args.corpus, name)
        data = open(path, "rb").read()
        why = multi_device_reason(data.decode(errors="replace"))
        if why:
            excluded.append((m["kind"], short_name(name), why))
            continue
        r = Row(name, m["kind"])
        r.path = path
        r.sha = hashlib.sha256(data).hexdigest()
        rows.append(r)

    for p in platforms:
        xla_side(rows, p, args.gpu_cache if p == "gpu" else args.cache, args)
    for r in rows:
        for t in targets:
            r.xhloc[t] = xhloc_memory(args.xhloc, r.path, t, args.xhloc_timeout)

    out = sys.stdout
    out.write("## Memory: xhloc's buffer assignment against XLA\n\n")
    out.write("XLA = argument + output + temp - alias bytes of its compiled memory stats; "
              "xhloc = 'Total bytes used' of its buffer assignment; ratio = xhloc / XLA %s.\n"
              % ("(host: XLA CPU, GPU: XLA GPU)" if args.xla_gpu else "CPU"))
    models = [r for r in rows if r.section == "model"]
    dumps = [r for r in rows if r.section == "real-dump" and dump_size(r) > REAL_DUMP_MIN]
    print_table(models, targets, platforms, "Single-device models (%d)" % len(models), out)
    if args.real_dumps:
        small = sum(1 for r in rows if r.section == "real-dump") - len(dumps)
        print_table(dumps, targets, platforms,
                    "Single-device real dumps over 1 MiB (%d; %d smaller not shown)"
                    % (len(dumps), small), out)
    if excluded:
        out.write("\n### Excluded: not single-device (%d)\n\n" % len(excluded))
        for kind, n, why in excluded:
            out.write("- %s%s: %s\n" % (n, "" if kind == "model" else " (%s)" % kind, why))
    shown = models + dumps
    if args.stats:
        out.write("\n### Breakdown\n")
        for r in shown:
            out.write("\n%s\n" % r.short)
            for p in platforms:
                c = r.xla_row.get(p)
                if c and cache_ok(c):
                    out.write("  XLA %s: argument %s, output %s, temp %s, alias %s, total %s%s\n"
                              % (p.upper(), human(int(c["argument"])), human(int(c["output"])),
                                 human(int(c["temp"])), human(int(c["alias"])),
                                 human(int(c["total"])),
                                 " (%s)" % c["note"] if c["note"] else ""))
            for t in targets:
                s = r.xhloc[t]
                if s["status"] == "ok":
                    out.write("  xhloc %s: total %s\n" % (t, human(s["total"])))
                    for l in s["stats"]:
                        out.write("    %s\n" % l)
    if args.tsv:
        write_tsv(args.tsv, shown, targets, platforms)
    above = {t: sum(1 for r in shown if (r.ratio(t) or 0) > 1.0) for t in targets}
    print("memory: rows above 1.0x: " + ", ".join("%s %d" % (t, n) for t, n in above.items()),
          file=sys.stderr)
    return 0


def write_tsv(path, rows, targets, platforms):
    parts = ["argument", "output", "temp", "alias"]
    cols = ["file", "section"] + ["xla_" + p for p in platforms] + \
        ["xhloc_" + t for t in targets] + ["ratio_" + t for t in targets] + \
        ["xla_cpu_" + k for k in parts] + ["note"]
    with open(path, "w") as f:
        f.write("\t".join(cols) + "\n")
        for r in rows:
            notes = []
            for p in platforms:
                if r.xla[p]["status"] != "ok":
                    notes.append("XLA %s: %s" % (p.upper(), r.xla[p]["reason"]))
            for t in targets:
                if r.xhloc[t]["status"] != "ok":
                    notes.append("xhloc %s: %s" % (t, r.xhloc[t]["reason"]))
            vals = [r.name, r.section]
            vals += [str(r.xla[p]["total"]) if r.xla[p]["status"] == "ok" else "-"
                     for p in platforms]
            vals += [str(r.xhloc[t]["total"]) if r.xhloc[t]["status"] == "ok" else "-"
                     for t in targets]
            vals += ["%.4f" % r.ratio(t) if r.ratio(t) is not None else "-" for t in targets]
            c = r.xla_row.get("cpu")
            vals += [str(c[k]) if cache_ok(c) else "-" for k in parts]
            vals.append("; ".join(notes).replace("\t", " "))
            f.write("\t".join(vals) + "\n")


if __name__ == "__main__":
    sys.exit(main())
