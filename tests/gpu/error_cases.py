#!/usr/bin/env python3
"""error_cases.py - GPU artifacts that must fail cleanly, made from a good one
(tests/gpu/check-errors-cuda.sh runs them on a GPU):

    error_cases.py PREFIX OUTDIR

From PREFIX.thunks and PREFIX.ptx (xhloc -o PREFIX, for sm_90) writes, each
with its kernel file's checksum and the artifact's own checksum redone:
  OUTDIR/ptx_arch.{thunks,ptx}     the PTX for sm_100a (.version 8.7): an
                                   architecture newer than the GPU's
  OUTDIR/ptx_version.{thunks,ptx}  a PTX ISA version no driver knows (99.0)
  OUTDIR/fault.{thunks,ptx}        the first kernel stores to address 0
                                   before anything else (an illegal address)
Python's standard library only.  Exit 0, or 1 with a message.
"""
import os
import re
import sys


def fnv1a64(data):
    h = 0xcbf29ce484222325
    for b in data:
        h ^= b
        h = (h * 0x100000001b3) & 0xFFFFFFFFFFFFFFFF
    return h


def write_case(thunks, name, ptx, outdir):
    """The artifact text with its kernel file renamed to NAME.ptx, the
    file's checksum and the final checksum line redone."""
    kname = name + ".ptx"
    m = re.search(rb"^kernel-file \d+:[^ \n]+ [0-9a-f]{16}$", thunks, re.M)
    if not m:
        raise ValueError("no kernel-file line")
    line = b"kernel-file %d:%s %016x" % (len(kname), kname.encode(), fnv1a64(ptx))
    body = thunks[:m.start()] + line + thunks[m.end():]
    end = body.rfind(b"checksum ")
    if end < 0 or not body.endswith(b"\n"):
        raise ValueError("no checksum line")
    body = body[:end]
    body += b"checksum %016x\n" % fnv1a64(body)
    with open(os.path.join(outdir, kname), "wb") as f:
        f.write(ptx)
    with open(os.path.join(outdir, name + ".thunks"), "wb") as f:
        f.write(body)


def main():
    if len(sys.argv) != 3:
        print(__doc__.split("\n\n")[1], file=sys.stderr)
        return 2
    prefix, outdir = sys.argv[1], sys.argv[2]
    try:
        with open(prefix + ".thunks", "rb") as f:
            thunks = f.read()
        with open(prefix + ".ptx", "rb") as f:
            ptx = f.read()
    except OSError as e:
        print("error_cases: %s" % e, file=sys.stderr)
        return 1
    os.makedirs(outdir, exist_ok=True)
    if not re.search(rb"^\.target sm_\w+", ptx, re.M) or not re.search(rb"^\.version ", ptx, re.M):
        print("error_cases: %s.ptx has no .version and .target lines" % prefix, file=sys.stderr)
        return 1
    arch = re.sub(rb"^\.target sm_\w+", b".target sm_100a", ptx, flags=re.M)
    arch = re.sub(rb"^\.version [\d.]+", b".version 8.7", arch, flags=re.M)
    version = re.sub(rb"^\.version [\d.]+", b".version 99.0", ptx, flags=re.M)
    # the first kernel's body: a store to address 0 right after its '{'
    m = re.search(rb"\.entry [\w$]+\s*\([^)]*\)\s*(\.[^{]*)?\{", ptx)
    if not m:
        print("error_cases: %s.ptx has no .entry" % prefix, file=sys.stderr)
        return 1
    store = (b"\n\t.reg .b64 %xhlo_fault;\n\tmov.u64 %xhlo_fault, 0;\n"
             b"\tst.global.u32 [%xhlo_fault], 1;\n")
    fault = ptx[:m.end()] + store + ptx[m.end():]
    try:
        write_case(thunks, "ptx_arch", arch, outdir)
        write_case(thunks, "ptx_version", version, outdir)
        write_case(thunks, "fault", fault, outdir)
    except (OSError, ValueError) as e:
        print("error_cases: %s.thunks: %s" % (prefix, e), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
