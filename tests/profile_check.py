#!/usr/bin/env python3
"""profile_check.py - checks xhlo-run's --profile table and --trace file
(check-xhlo-run-thunks.sh runs it on the host and on the mock CUDA driver).

  profile_check.py PLATFORM RUNS CALLS BYTES PROFILE.txt TRACE.json

CALLS and BYTES are space-separated GLOB=N: every table row whose name
matches GLOB ran N times per run / moves N bytes per call. Checks, printing
one line per problem and exiting 1 if there is any:

- the table: its title names RUNS runs on PLATFORM and the clock; the
  column header; one row per thunk with the columns parsed, sorted by time
  descending; shares adding up to 100%; mean = total / calls; GB/s = bytes x
  calls / time; launch dimensions on kernels only; the total line's calls
  the sum of the rows' and its time their sum;
- the trace: valid JSON in the Chrome trace event format with process and
  thread names; RUNS "run" events that do not overlap; one complete event
  per thunk execution (as many per name as the table's calls), each inside
  its run, with a non-negative duration; timestamps non-decreasing along
  each track; no events dropped.
"""
import fnmatch
import json
import re
import sys

problems = []


def bad(msg):
    problems.append(msg)


def parse_pairs(text):
    out = []
    for item in text.split():
        glob, _, n = item.rpartition("=")
        out.append((glob, int(n)))
    return out


ROW = re.compile(
    r"^ *(?P<ms>\d+\.\d{4}) +(?P<share>\d+\.\d%|-) +(?P<calls>\d+) +"
    r"(?P<mean>\d+\.\d{3}|-) +(?P<gbs>\d+\.\d{3}|-)  (?P<kind>\S+) +"
    r"(?P<launch>\S+) +(?P<name>.+)$")
TOTAL = re.compile(r"^ *(?P<ms>\d+\.\d{4}) +(?P<share>100\.0%|-) +(?P<calls>\d+) +total$")
HEADER = re.compile(r"^ +total ms +share +calls +mean us +GB/s  kind +launch +name$")
KINDS = {"kernel", "copy", "memset32", "while", "conditional", "gemm", "convolution"}


def check_table(lines, platform, runs, calls, nbytes):
    clock = "CUDA events" if platform == "cuda" else "monotonic clock"
    title = "thunk profile: %d run%s on %s (%s), thunks timed one at a time" % (
        runs, "" if runs == 1 else "s", platform, clock)
    try:
        at = lines.index(title)
    except ValueError:
        bad("no title line '%s'" % title)
        return []
    if at + 1 >= len(lines) or not HEADER.match(lines[at + 1]):
        bad("no column header after the title")
        return []
    rows, total = [], None
    for line in lines[at + 2:]:
        t = TOTAL.match(line)
        if t:
            total = t
            break
        m = ROW.match(line)
        if not m:
            bad("row does not parse: '%s'" % line)
            return []
        rows.append(m)
    if total is None:
        bad("no total line")
        return []
    if not rows:
        bad("no rows")
    ms = [float(r["ms"]) for r in rows]
    if ms != sorted(ms, reverse=True):
        bad("rows not sorted by time descending: %s" % ms)
    tot = float(total["ms"])
    if abs(sum(ms) - tot) > 1e-4 * len(rows) + 1e-3 * tot:
        bad("the rows' times add up to %.4f, the total line says %.4f" % (sum(ms), tot))
    if tot > 0:
        shares = [float(r["share"][:-1]) for r in rows]
        if abs(sum(shares) - 100) > 0.05 * len(rows) + 0.5:
            bad("shares add up to %.1f%%" % sum(shares))
    if sum(int(r["calls"]) for r in rows) != int(total["calls"]):
        bad("the total line's calls are not the sum of the rows'")
    for r in rows:
        name, kind, n = r["name"], r["kind"], int(r["calls"])
        if kind not in KINDS:
            bad("%s: unknown kind %s" % (name, kind))
        launch_ok = re.fullmatch(r"\d+x\d+x\d+/\d+x\d+x\d+(\+\d+B)?", r["launch"])
        if (kind == "kernel") != bool(launch_ok) or (kind != "kernel" and r["launch"] != "-"):
            bad("%s: launch '%s' for a %s" % (name, r["launch"], kind))
        for glob, per_run in calls:
            if fnmatch.fnmatchcase(name, glob) and n != per_run * runs:
                bad("%s: %d calls, want %d x %d runs" % (name, n, per_run, runs))
        if n and r["mean"] != "-":
            want = 1e3 * float(r["ms"]) / n
            if abs(float(r["mean"]) - want) > 5e-4 + 0.05 / n:
                bad("%s: mean %s us, total/calls is %.3f" % (name, r["mean"], want))
        elif n:
            bad("%s: no mean" % name)
        b = None
        for glob, per_call in nbytes:
            if fnmatch.fnmatchcase(name, glob):
                b = per_call
        if kind in ("while", "conditional"):
            if r["gbs"] != "-":
                bad("%s: a %s with GB/s" % (name, kind))
        elif b is not None and float(r["ms"]) > 0 and r["mean"] != "-" and float(r["mean"]) > 0:
            if r["gbs"] == "-":
                bad("%s: no GB/s" % name)
            else:
                mean_us = float(r["mean"])
                want = b / (mean_us * 1e3)
                if abs(float(r["gbs"]) - want) > want * (5e-4 / mean_us) + 1e-3 * want + 5e-4:
                    bad("%s: %s GB/s, %d bytes in %.3f us is %.3f" % (name, r["gbs"], b,
                                                                      mean_us, want))
    for glob, _ in calls:
        if not any(fnmatch.fnmatchcase(r["name"], glob) for r in rows):
            bad("no row named like '%s'" % glob)
    return rows


def check_trace(path, runs, rows):
    try:
        with open(path) as f:
            doc = json.load(f)
    except (OSError, ValueError) as e:
        bad("the trace does not read back as JSON: %s" % e)
        return
    evs = doc.get("traceEvents")
    if not isinstance(evs, list):
        bad("no traceEvents list")
        return
    meta = {(e.get("name"), e.get("tid")) for e in evs if e.get("ph") == "M"}
    complete = [e for e in evs if e.get("ph") == "X"]
    if not any(m == "process_name" for m, _ in meta):
        bad("no process_name metadata")
    for tid in {e.get("tid") for e in complete}:
        if ("thread_name", tid) not in meta:
            bad("no thread_name metadata for track %s" % tid)
    if doc.get("otherData", {}).get("dropped_events") != 0:
        bad("events were dropped")
    last = {}
    for e in complete:
        for k in ("name", "cat", "ts", "dur", "pid", "tid"):
            if k not in e:
                bad("an event lacks '%s': %s" % (k, e))
                return
        if e["dur"] < 0:
            bad("negative duration: %s" % e)
        if e["ts"] < last.get(e["tid"], float("-inf")):
            bad("timestamps go back on track %s at %s" % (e["tid"], e))
        last[e["tid"]] = e["ts"]
    run_evs = [e for e in complete if e["cat"] == "run"]
    thunk_evs = [e for e in complete if e["cat"] != "run"]
    if len(run_evs) != runs:
        bad("%d run events, want %d" % (len(run_evs), runs))
    for a, b in zip(run_evs, run_evs[1:]):
        if b["ts"] < a["ts"] + a["dur"] - 1e-3:
            bad("runs overlap: %s and %s" % (a["name"], b["name"]))
    eps = 2e-3
    for e in thunk_evs:
        r = e.get("args", {}).get("run")
        if not isinstance(r, int) or not 0 <= r < len(run_evs):
            bad("event without a run: %s" % e)
            continue
        re_ = run_evs[r]
        if e["ts"] < re_["ts"] - eps or e["ts"] + e["dur"] > re_["ts"] + re_["dur"] + eps:
            bad("%s lies outside run %d" % (e["name"], r))
    want = {}
    for r in rows:
        if int(r["calls"]):
            want[r["name"]] = want.get(r["name"], 0) + int(r["calls"])
    got = {}
    for e in thunk_evs:
        got[e["name"]] = got.get(e["name"], 0) + 1
    if got != want:
        bad("trace events per name %s, the table's calls %s" % (got, want))
    if len(thunk_evs) != sum(want.values()):
        bad("%d thunk events, %d calls in the table" % (len(thunk_evs), sum(want.values())))


def main():
    if len(sys.argv) != 7:
        print(__doc__.split("\n\n")[1], file=sys.stderr)
        return 2
    platform, runs = sys.argv[1], int(sys.argv[2])
    calls, nbytes = parse_pairs(sys.argv[3]), parse_pairs(sys.argv[4])
    with open(sys.argv[5]) as f:
        lines = f.read().splitlines()
    rows = check_table(lines, platform, runs, calls, nbytes)
    if rows:
        check_trace(sys.argv[6], runs, rows)
    for p in problems:
        print("profile_check: " + p)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
