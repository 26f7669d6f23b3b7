#!/usr/bin/env python3
"""generate.py - regenerates the bit-exact type tests in testdata/types/.

Each module builds every (or a dense sweep of) bit pattern of a type from an
iota inside the module (offset by a u32 parameter, 0, so that XLA cannot fold
it away), applies the operation under test, and reduces the resulting bits
to one u64 checksum per output: sum over k of bits[k] * (2k*K + 1) mod 2^64,
with x = bits ^ (bits >> 29) (a bijection, so that high bits count too)
and an odd weight per position, so that any one differing element changes
it.
NaN results are first replaced by one canonical NaN where the formats do
not agree on NaN bits (noted per module).

The expected checksums are XLA's: the module runs on the CPU through JAX
(jax_run below); never xhloc's own output.  tests/check-types.sh checks the
interpreter and the host artifact against them, compares the host artifact
with the interpreter, and gives the PTX to ptxas.  Not run by the tests:

    /path/to/venv-with-jax/bin/python3 testdata/types/generate.py
"""
import os
import numpy as np
import jax
jax.config.update("jax_enable_x64", True)
from jax._src.lib import xla_client as xc

HERE = os.path.dirname(os.path.abspath(__file__))
K = 0x9E3779B97F4A7C15
# TYPES_RAW=DIR: instead, write each module with its raw result arrays (not
# checksums) and XLA's results as DIR/NAME.hlo and DIR/NAME.K.npy, to find
# which elements differ.
RAW = os.environ.get("TYPES_RAW")
ONLY = os.environ.get("TYPES_ONLY")

SUM = """sum {
  a = u64[] parameter(0)
  b = u64[] parameter(1)
  ROOT s = u64[] add(a, b)
}
"""


def jax_run(text, *args):
    """Runs HLO text on XLA's CPU backend; returns the result leaves."""
    from jax._src.lib import hlo as _hlo
    m = _hlo.hlo_module_from_text(text)
    mlir = xc._xla.mlir.hlo_to_stablehlo(m.as_serialized_hlo_module_proto())
    from jax._src import xla_bridge
    backend = xla_bridge.get_backend("cpu")
    dev = jax.devices("cpu")[0]
    exe = backend.compile_and_load(mlir, xc.DeviceList((dev,)),
                                   xc.CompileOptions())
    bufs = [jax.device_put(np.asarray(a), dev) for a in args]
    outs = exe.execute_sharded(bufs).disassemble_into_single_device_arrays()
    return [np.asarray(o[0]) for o in outs]


class Mod:
    """An entry computation under construction: u32 bit sources, checksums."""

    def __init__(self):
        self.lines = ["  p = u32[] parameter(0)"]
        self.n = 0
        self.outs = []
        self.shapes = []

    def tmp(self):
        self.n += 1
        return f"t{self.n}"

    def add(self, shape, text):
        t = self.tmp()
        self.lines.append(f"  {t} = {shape} {text}")
        return t

    def bits(self, n, shift=0, low=None):
        """u32[n]: (iota + p) << shift | low (a list of low patterns makes
        it u32[n * len(low)], the patterns minor)."""
        lows = low if low is not None else [0]
        m = n * len(lows)
        i = self.add(f"u32[{n},{len(lows)}]", "iota(), iota_dimension=0")
        pb = self.add(f"u32[{n},{len(lows)}]", f"broadcast(p), dimensions={{}}")
        i = self.add(f"u32[{n},{len(lows)}]", f"add({i}, {pb})")
        if shift:
            c = self.add("u32[]", f"constant({shift})")
            cb = self.add(f"u32[{n},{len(lows)}]", f"broadcast({c}), dimensions={{}}")
            i = self.add(f"u32[{n},{len(lows)}]", f"shift-left({i}, {cb})")
        lc = self.add(f"u32[{len(lows)}]", "constant({" + ", ".join(str(v) for v in lows) + "})")
        lb = self.add(f"u32[{n},{len(lows)}]", f"broadcast({lc}), dimensions={{1}}")
        i = self.add(f"u32[{n},{len(lows)}]", f"or({i}, {lb})")
        return self.add(f"u32[{m}]", f"reshape({i})"), m

    def checksum(self, v, ty, n):
        """Appends the checksum of v (an unsigned integer array ty[n])."""
        w = self.add(f"u64[{n}]", "iota(), iota_dimension=0")
        two = self.add("u64[]", f"constant({2 * K % 2**64})")
        one = self.add("u64[]", "constant(1)")
        w = self.add(f"u64[{n}]", f"multiply({w}, {self.add(f'u64[{n}]', f'broadcast({two}), dimensions={{}}')})")
        w = self.add(f"u64[{n}]", f"add({w}, {self.add(f'u64[{n}]', f'broadcast({one}), dimensions={{}}')})")
        x = v if ty == "u64" else self.add(f"u64[{n}]", f"convert({v})")
        if RAW:
            self.outs.append(x)
            self.shapes.append(f"u64[{n}]")
            return
        s29 = self.add("u64[]", "constant(29)")
        sx = self.add(f"u64[{n}]", f"shift-right-logical({x}, {self.add(f'u64[{n}]', f'broadcast({s29}), dimensions={{}}')})")
        x = self.add(f"u64[{n}]", f"xor({x}, {sx})")
        h = self.add(f"u64[{n}]", f"multiply({x}, {w})")
        z = self.add("u64[]", "constant(0)")
        self.outs.append(self.add("u64[]", f"reduce({h}, {z}), dimensions={{0}}, to_apply=sum"))
        self.shapes.append("u64[]")

    def text(self, name):
        root = f"  ROOT out = ({', '.join(self.shapes)}) tuple({', '.join(self.outs)})"
        return (f"HloModule {name}\n\n{SUM}\nENTRY e {{\n" + "\n".join(self.lines) +
                "\n" + root + "\n}\n")


UINT = {8: "u8", 16: "u16", 32: "u32", 64: "u64"}
FBITS = {"f16": 16, "bf16": 16, "f32": 32, "f64": 64}
F8 = ["f8e4m3fn", "f8e5m2", "f8e4m3fnuz", "f8e5m2fnuz", "f8e8m0fnu",
      "f8e4m3", "f8e3m4", "f8e4m3b11fnuz"]


def narrow(m, src, n, ty):
    """src (u32[n]) truncated to the unsigned type ty."""
    return src if ty == "u32" else m.add(f"{ty}[{n}]", f"convert({src})")


def canon_nan(m, x, fty, uty, n, nan_bits):
    """Bits (uty) of float x, NaNs replaced by nan_bits."""
    b = m.add(f"{uty}[{n}]", f"bitcast-convert({x})")
    isn = m.add(f"pred[{n}]", f"compare({x}, {x}), direction=NE")
    c = m.add(f"{uty}[]", f"constant({nan_bits})")
    cb = m.add(f"{uty}[{n}]", f"broadcast({c}), dimensions={{}}")
    return m.add(f"{uty}[{n}]", f"select({isn}, {cb}, {b})")


def f32_sweep(m):
    """Every f32 whose low 12 bits are one of 0, 1, 0x800, 0xfff: all
    exponents and 11 leading mantissa bits, ties and their neighbours for
    every format of 11 mantissa bits or fewer."""
    return m.bits(1 << 20, 12, [0, 1, 0x800, 0xFFF])


def write(name, header, m, args=(0,)):
    text = m.text(name)
    if ONLY and ONLY not in name:
        return
    got = jax_run(text, *[np.uint32(a) for a in args])
    if RAW:
        open(os.path.join(RAW, name + ".hlo"), "w").write(text)
        for k, g in enumerate(got):
            np.save(os.path.join(RAW, f"{name}.{k}.npy"), g)
        return
    lines = [f"// {h}" for h in header]
    lines.append("// Expected values: XLA on the CPU through JAX "
                 f"{jax.__version__} (testdata/types/generate.py), not xhloc.")
    lines += [f"// INPUT: u32={a}" for a in args]
    lines += [f"// EXPECT: u64={int(g)}" for g in got]
    with open(os.path.join(HERE, name + ".hlo"), "w") as f:
        f.write("\n".join(lines) + "\n" + text)
    print(name, [int(g) for g in got])


def reduce_precision():
    cases = {"f16": [(5, 4), (4, 3), (8, 3), (3, 1), (5, 0), (2, 2), (5, 9)],
             "bf16": [(5, 10), (8, 3), (4, 3), (5, 2), (8, 0), (6, 7)],
             "f32": [(5, 10), (8, 7), (4, 3), (5, 2), (1, 0), (11, 30), (8, 22)]}
    for ty, pairs in cases.items():
        m = Mod()
        uty = UINT[FBITS[ty]]
        if ty == "f32":
            src, n = f32_sweep(m)
        else:
            src, n = m.bits(65536)
        x = m.add(f"{ty}[{n}]", f"bitcast-convert({narrow(m, src, n, uty)})")
        for e, mb in pairs:
            r = m.add(f"{ty}[{n}]", f"reduce-precision({x}), exponent_bits={e}, mantissa_bits={mb}")
            m.checksum(m.add(f"{uty}[{n}]", f"bitcast-convert({r})"), uty, n)
        write(f"reduce_precision_{ty}", [
            f"reduce-precision of {'every ' + ty if ty != 'f32' else 'a sweep of f32 (every exponent, 8 leading mantissa bits, ties)'}"
            f" to (exponent, mantissa) bits {pairs}, in {ty} itself; bit-exact",
            "(NaN payloads included)."], m)
    # f64: exponents and 20 leading mantissa bits
    m = Mod()
    src, n = m.bits(1 << 16, 0, [0])
    hi = m.add(f"u64[{n}]", f"convert({src})")
    sh = m.add("u64[]", "constant(48)")
    hi = m.add(f"u64[{n}]", f"shift-left({hi}, {m.add(f'u64[{n}]', f'broadcast({sh}), dimensions={{}}')})")
    x = m.add(f"f64[{n}]", f"bitcast-convert({hi})")
    pairs = [(8, 23), (11, 10), (5, 10), (8, 7), (2, 1)]
    for e, mb in pairs:
        r = m.add(f"f64[{n}]", f"reduce-precision({x}), exponent_bits={e}, mantissa_bits={mb}")
        m.checksum(m.add(f"u64[{n}]", f"bitcast-convert({r})"), "u64", n)
    write("reduce_precision_f64", [
        "reduce-precision of f64 values with every exponent and 4 leading",
        f"mantissa bits to (exponent, mantissa) bits {pairs}; bit-exact."], m)


def f8_converts():
    for t in F8:
        m = Mod()
        # decode: all 256 encodings to f32 (NaN canonical: XLA gives +NaN for
        # fnuz where ml_dtypes and xhloc's interpreter give -NaN)
        src, n = m.bits(256)
        x = m.add(f"{t}[{n}]", f"bitcast-convert({narrow(m, src, n, 'u8')})")
        f = m.add(f"f32[{n}]", f"convert({x})")
        m.checksum(canon_nan(m, f, "f32", "u32", n, 0x7FC00000), "u32", n)
        h = m.add(f"f16[{n}]", f"convert({x})")
        m.checksum(canon_nan(m, h, "f16", "u16", n, 0x7E00), "u16", n)
        bh = m.add(f"bf16[{n}]", f"convert({x})")
        m.checksum(canon_nan(m, bh, "bf16", "u16", n, 0x7FC0), "u16", n)
        # encode: the f32 sweep, every f16, every bf16
        src, n = f32_sweep(m)
        y = m.add(f"f32[{n}]", f"bitcast-convert({src})")
        yt = m.add(f"{t}[{n}]", f"convert({y})")
        m.checksum(m.add(f"u8[{n}]", f"bitcast-convert({yt})"), "u8", n)
        for ft in ("f16", "bf16"):
            src, n = m.bits(65536)
            y = m.add(f"{ft}[{n}]", f"bitcast-convert({narrow(m, src, n, 'u16')})")
            yt = m.add(f"{t}[{n}]", f"convert({y})")
            # XLA gives f16 and bf16 NaNs as f8e5m2 0x7f / 0xff where
            # ml_dtypes (and xhloc) give 0x7e / 0xfe: only NaN-ness checked
            yf = m.add(f"f32[{n}]", f"convert({yt})")
            m.checksum(canon_nan(m, yf, "f32", "u32", n, 0x7FC00000), "u32", n)
        write(f"convert_{t}", [
            f"{t}: every encoding converted to f32, f16 and bf16 (NaNs made one",
            "NaN); a sweep of f32 (every exponent, 8 leading mantissa bits, ties",
            f"and neighbours), every f16 and every bf16 converted to {t}; bit-exact",
            "but for the NaNs of the f16 and bf16 conversions (only NaN-ness checked)."], m)


def f8_arith():
    # Not f8e8m0fnu: XLA's CPU flushes its 2^-127 to zero in arithmetic and
    # gives sums that are no f8e8m0fnu value (1.25 * 2^-125), so there is no
    # rounding rule to check against.
    for t in ("f8e4m3fn", "f8e5m2", "f8e4m3fnuz"):
        m = Mod()
        src, n = m.bits(65536)
        s8 = m.add("u32[]", "constant(8)")
        hi = m.add(f"u32[{n}]", f"shift-right-logical({src}, {m.add(f'u32[{n}]', f'broadcast({s8}), dimensions={{}}')})")
        a = m.add(f"{t}[{n}]", f"bitcast-convert({m.add(f'u8[{n}]', f'convert({src})')})")
        b = m.add(f"{t}[{n}]", f"bitcast-convert({m.add(f'u8[{n}]', f'convert({hi})')})")
        ops = ["add", "subtract", "multiply", "divide", "maximum"]
        zero = m.add("f32[]", "constant(0)")
        zb = m.add(f"f32[{n}]", f"broadcast({zero}), dimensions={{}}")
        for op in ops:
            r = m.add(f"{t}[{n}]", f"{op}({a}, {b})")
            rf = m.add(f"f32[{n}]", f"convert({r})")
            if op == "maximum":
                # XLA orders -0 below +0, xhloc's interpreter returns the
                # first of equal zeros: zeros made +0
                isz = m.add(f"pred[{n}]", f"compare({rf}, {zb}), direction=EQ")
                rf = m.add(f"f32[{n}]", f"select({isz}, {zb}, {rf})")
            m.checksum(canon_nan(m, rf, "f32", "u32", n, 0x7FC00000), "u32", n)
        c = m.add(f"pred[{n}]", f"compare({a}, {b}), direction=LT")
        m.checksum(m.add(f"u8[{n}]", f"convert({c})"), "u8", n)
        write(f"arith_{t}", [
            f"{t} {', '.join(ops)} and compare LT of every pair of encodings,",
            "the results converted to f32 (NaNs made one NaN, the zeros of",
            "maximum +0); bit-exact."], m)


def subbyte():
    for t, bits in (("s4", 4), ("u4", 4), ("s2", 2), ("u2", 2)):
        m = Mod()
        n = 1 << (2 * bits)
        src, n = m.bits(n)
        sh = m.add("u32[]", f"constant({bits})")
        hi = m.add(f"u32[{n}]", f"shift-right-logical({src}, {m.add(f'u32[{n}]', f'broadcast({sh}), dimensions={{}}')})")
        ut = "u" + t[1:]
        a = m.add(f"{t}[{n}]", f"bitcast-convert({m.add(f'{ut}[{n}]', f'convert({src})')})")
        b = m.add(f"{t}[{n}]", f"bitcast-convert({m.add(f'{ut}[{n}]', f'convert({hi})')})")
        ops = ["add", "subtract", "multiply", "divide", "remainder", "maximum",
               "minimum", "and", "or", "xor", "shift-left", "shift-right-logical",
               "shift-right-arithmetic", "power"]
        for op in ops:
            r = m.add(f"{t}[{n}]", f"{op}({a}, {b})")
            r = m.add(f"s32[{n}]", f"convert({r})")
            m.checksum(m.add(f"u32[{n}]", f"convert({r})"), "u32", n)
        # Not popcnt of s4: XLA's CPU counts the bits of the value widened
        # to 8 bits (popcnt(s4 -8) is 5), while it counts 2 bits for s2.
        unary = ["not", "count-leading-zeros"] + ([] if t == "s4" else ["popcnt"])
        if t[0] == "s":
            unary += ["negate", "abs", "sign"]
        for op in unary:
            r = m.add(f"{t}[{n}]", f"{op}({a})")
            r = m.add(f"s32[{n}]", f"convert({r})")
            m.checksum(m.add(f"u32[{n}]", f"convert({r})"), "u32", n)
        c = m.add(f"pred[{n}]", f"compare({a}, {b}), direction=LT")
        m.checksum(m.add(f"u8[{n}]", f"convert({c})"), "u8", n)
        f = m.add(f"f32[{n}]", f"convert({a})")
        m.checksum(m.add(f"u32[{n}]", f"bitcast-convert({f})"), "u32", n)
        # from wider: every s8 / every f16 (saturating) to t
        for wt, wn, ut2 in (("s8", 256, "u8"), ("f16", 65536, "u16")):
            src, nw = m.bits(wn)
            w = m.add(f"{wt}[{nw}]", f"bitcast-convert({m.add(f'{ut2}[{nw}]', f'convert({src})')})")
            r = m.add(f"{t}[{nw}]", f"convert({w})")
            r = m.add(f"s32[{nw}]", f"convert({r})")
            m.checksum(m.add(f"u32[{nw}]", f"convert({r})"), "u32", nw)
        write(f"subbyte_{t}", [
            f"{t}: {', '.join(ops)} of every pair; {', '.join(unary)} of every value;",
            f"compare, convert to f32, every s8 and every f16 converted to {t};",
            "results widened to s32; bit-exact."], m)


def rng():
    """rng-bit-generator: the new state and a checksum of the bits, for
    several shapes, types, algorithms and state sizes (a counter about to
    carry included)."""
    cases = [("rng_three_fry", "u32", [4, 6, 3]), ("rng_three_fry", "u32", [3, 5, 7]),
             ("rng_three_fry", "u64", [2, 3]), ("rng_three_fry", "u16", [5, 4]),
             ("rng_three_fry", "u32", [1, 1]), ("rng_philox", "u32", [3, 5, 7]),
             ("rng_philox", "u64", [5, 3]), ("rng_philox", "u8", [9, 2]),
             ("rng_default", "u32", [1000]), ("rng_philox", "s32", [4, 4])]
    all_cases = cases
    for nst in (2, 3):
        # three-fry takes a two-word state only (XLA refuses three)
        cases = [c for c in all_cases if nst == 2 or c[0] != "rng_three_fry"]
        m = Mod()
        m.lines = [f"  s = u64[{nst}] parameter(0)"]
        state = [0x0123456789ABCDEF, 0xFFFFFFFFFFFFFFF0, 0xFFFFFFFFFFFFFFFF][:nst]
        for alg, ty, dims in cases:
            dt = f"{ty}[{','.join(map(str, dims))}]"
            n = int(np.prod(dims))
            g = m.add(f"(u64[{nst}], {dt})", f"rng-bit-generator(s), algorithm={alg}")
            st = m.add(f"u64[{nst}]", f"get-tuple-element({g}), index=0")
            m.outs.append(st)
            m.shapes.append(f"u64[{nst}]")
            dv = m.add(dt, f"get-tuple-element({g}), index=1")
            flat = m.add(f"{ty}[{n}]", f"reshape({dv})")
            if ty[0] == "s":
                flat = m.add(f"u{ty[1:]}[{n}]", f"bitcast-convert({flat})")
            m.checksum(flat, "u" + ty[1:], n)
        name = f"rng_bit_generator_state{nst}"
        text = m.text(name)
        if ONLY and ONLY not in name:
            continue
        got = jax_run(text, np.array(state, np.uint64))
        lines = [f"// rng-bit-generator with a {nst}-word state (its counter about to carry):",
                 "// " + "; ".join(f"{a} {t}{d}" for a, t, d in cases) + ",",
                 "// each the new state and a checksum of the bits; bit-exact.",
                 "// Expected values: XLA on the CPU through JAX "
                 f"{jax.__version__} (testdata/types/generate.py), not xhloc.",
                 f"// INPUT: {nst}xu64=" + " ".join(str(v) for v in state)]
        for g in got:
            g = np.atleast_1d(g)
            lines.append(f"// EXPECT: {len(g)}xu64=" + " ".join(str(int(v)) for v in g)
                         if g.shape != (1,) or len(m.shapes) == 0 else f"// EXPECT: u64={int(g[0])}")
        # scalars (checksums) are u64[] results, states u64[nst]
        fixed = []
        for sh, l in zip(m.shapes, lines[5:]):
            fixed.append(l if sh != "u64[]" else "// EXPECT: u64=" + l.split("=")[1])
        with open(os.path.join(HERE, name + ".hlo"), "w") as f:
            f.write("\n".join(lines[:5] + fixed) + "\n" + text)
        print(name, "written")


def rng_op():
    """The rng op as XLA's CPU compiler expands it: uniform draws of every
    type its expansion takes, one with the MHLO form's extra shape operand,
    one in a loop body (its state advancing at every iteration) and a lone
    rng-get-and-update-state; checksums of the bits.  XLA keys an rng with a
    process-wide generator's next draw (lib/hlo/rng_keys.c), so this must be
    the first module with an rng that this process compiles."""
    m = Mod()
    m.lines = []
    cases = [("f32", [3, 5], "2", "5"), ("f64", [7], "-1", "1"), ("f16", [9], "0", "1"),
             ("bf16", [2, 3], "-3", "3"), ("s32", [11], "-5", "1000"),
             ("u32", [4], "7", "4000000000"), ("s64", [5], str(-2**40), str(2**41)),
             ("u64", [3], "0", str(2**63 + 12345))]
    uty = {"f32": "u32", "f64": "u64", "f16": "u16", "bf16": "u16", "s32": "u32",
           "u32": "u32", "s64": "u64", "u64": "u64"}
    for k, (ty, dims, lo, hi) in enumerate(cases):
        dt = f"{ty}[{','.join(map(str, dims))}]"
        n = int(np.prod(dims))
        a = m.add(f"{ty}[]", f"constant({lo})")
        b = m.add(f"{ty}[]", f"constant({hi})")
        extra = ""
        if k == 0:
            extra = ", " + m.add("u64[2]", "constant({3, 5})")
        r = m.add(dt, f"rng({a}, {b}{extra}), distribution=rng_uniform")
        flat = m.add(f"{ty}[{n}]", f"reshape({r})")
        if ty != uty[ty]:
            flat = m.add(f"{uty[ty]}[{n}]", f"bitcast-convert({flat})")
        m.checksum(flat, uty[ty], n)
    st = m.add("u64[2]", "rng-get-and-update-state(), delta=3")
    m.outs.append(st)
    m.shapes.append("u64[2]")
    zero = m.add("s32[]", "constant(0)")
    acc = m.add("s32[4]", f"broadcast({zero}), dimensions={{}}")
    init = m.add("(s32[], s32[4])", f"tuple({zero}, {acc})")
    loop = m.add("(s32[], s32[4])", f"while({init}), condition=cond, body=body")
    total = m.add("s32[4]", f"get-tuple-element({loop}), index=1")
    m.checksum(m.add("u32[4]", f"bitcast-convert({total})"), "u32", 4)
    loops = """cond {
  c = (s32[], s32[4]) parameter(0)
  i = s32[] get-tuple-element(c), index=0
  three = s32[] constant(3)
  ROOT lt = pred[] compare(i, three), direction=LT
}

body {
  c = (s32[], s32[4]) parameter(0)
  i = s32[] get-tuple-element(c), index=0
  acc = s32[4] get-tuple-element(c), index=1
  lo = s32[] constant(0)
  hi = s32[] constant(100)
  r = s32[4] rng(lo, hi), distribution=rng_uniform
  one = s32[] constant(1)
  i1 = s32[] add(i, one)
  sum = s32[4] add(acc, r)
  ROOT t = (s32[], s32[4]) tuple(i1, sum)
}
"""
    name = "rng_op"
    if ONLY and ONLY not in name:
        return
    text = m.text(name).replace("\nENTRY e {", "\n" + loops + "\nENTRY e {", 1)
    got = jax_run(text)
    lines = ["// The rng op as XLA's CPU compiler expands it (RngExpander, keys from",
             "// lib/hlo/rng_keys.c, each rng its own state from 0x7012395): uniform",
             "// " + "; ".join(f"{t}{d} in [{lo}, {hi})" for t, d, lo, hi in cases) + ",",
             "// the first with the MHLO form's extra operand; a lone",
             "// rng-get-and-update-state; the sum of an s32[4] rng drawn in each of",
             "// three loop iterations.  Checksums of the bits; bit-exact.",
             "// Expected values: XLA on the CPU through JAX "
             f"{jax.__version__} (testdata/types/generate.py), not xhloc."]
    for sh, g in zip(m.shapes, got):
        g = np.atleast_1d(g)
        if sh == "u64[]":
            lines.append(f"// EXPECT: u64={int(g[0])}")
        else:
            lines.append(f"// EXPECT: {len(g)}xu64=" + " ".join(str(int(v)) for v in g))
    with open(os.path.join(HERE, name + ".hlo"), "w") as f:
        f.write("\n".join(lines) + "\n" + text)
    print(name, "written")


def stochastic_convert():
    """stochastic-convert of f16, f32 and f64 values (a ramp through zero
    and past every target's range, infinities, NaN) with hashed random bits
    to signed integers of several widths; checksums."""
    m = Mod()
    n = 4096
    # XLA takes signed integer results only
    srcs = [("f16", "u16", "0.37", ["s8", "s16", "s32"]),
            ("f32", "u32", "91.37", ["s8", "s16", "s32", "s64"]),
            ("f64", "u64", "1234567.89", ["s16", "s32", "s64"])]
    for ft, rt, step, outs in srcs:
        i = m.add(f"u32[{n}]", "iota(), iota_dimension=0")
        i = m.add(f"u32[{n}]", f"add({i}, {m.add(f'u32[{n}]', 'broadcast(p), dimensions={}')})")
        si = m.add(f"s32[{n}]", f"convert({i})")
        half = m.add("s32[]", f"constant({n // 2})")
        si = m.add(f"s32[{n}]", f"subtract({si}, {m.add(f's32[{n}]', f'broadcast({half}), dimensions={{}}')})")
        x = m.add(f"{ft}[{n}]", f"convert({si})")
        st = m.add(f"{ft}[]", f"constant({step})")
        x = m.add(f"{ft}[{n}]", f"multiply({x}, {m.add(f'{ft}[{n}]', f'broadcast({st}), dimensions={{}}')})")
        sp = m.add(f"{ft}[4]", "constant({inf, -inf, nan, -0})")
        x = m.add(f"{ft}[{n + 4}]", f"concatenate({x}, {sp}), dimensions={{0}}")
        h = m.add(f"u32[{n + 4}]", "iota(), iota_dimension=0")
        kk = m.add("u32[]", "constant(2654435761)")
        h = m.add(f"u32[{n + 4}]", f"multiply({h}, {m.add(f'u32[{n + 4}]', f'broadcast({kk}), dimensions={{}}')})")
        r = h if rt == "u32" else m.add(f"{rt}[{n + 4}]", f"convert({h})")
        if rt == "u64":
            sh = m.add("u64[]", "constant(32)")
            hi = m.add(f"u64[{n + 4}]", f"shift-left({r}, {m.add(f'u64[{n + 4}]', f'broadcast({sh}), dimensions={{}}')})")
            r = m.add(f"u64[{n + 4}]", f"xor({r}, {hi})")
        for ot in outs:
            v = m.add(f"{ot}[{n + 4}]", f"stochastic-convert({x}, {r})")
            ut = "u" + ot[1:] if ot[0] == "s" else ot
            if ot[0] == "s":
                v = m.add(f"{ut}[{n + 4}]", f"bitcast-convert({v})")
            m.checksum(v, ut, n + 4)
    write("stochastic_convert", [
        "stochastic-convert: " + "; ".join(f"{ft} (bits {rt}) to {', '.join(o)}"
                                           for ft, rt, _, o in srcs) + ";",
        "values a ramp through zero past each target's range, +-inf, NaN, -0;",
        "random bits hashed from the position; checksums; bit-exact."], m)


def hashed(m, ty, dims):
    """ty[dims]: exact pseudo-random values in [-8, 8) (a multiplicative
    hash of the position and p, its top 12 bits scaled), no rounding."""
    n = int(np.prod(dims))
    i = m.add(f"u32[{n}]", "iota(), iota_dimension=0")
    i = m.add(f"u32[{n}]", f"add({i}, {m.add(f'u32[{n}]', 'broadcast(p), dimensions={}')})")
    k = m.add("u32[]", "constant(2654435761)")
    h = m.add(f"u32[{n}]", f"multiply({i}, {m.add(f'u32[{n}]', f'broadcast({k}), dimensions={{}}')})")
    sh = m.add("u32[]", "constant(20)")
    h = m.add(f"u32[{n}]", f"shift-right-logical({h}, {m.add(f'u32[{n}]', f'broadcast({sh}), dimensions={{}}')})")
    f = m.add(f"f32[{n}]", f"convert({h})")
    sc = m.add("f32[]", "constant(0.00390625)")
    f = m.add(f"f32[{n}]", f"multiply({f}, {m.add(f'f32[{n}]', f'broadcast({sc}), dimensions={{}}')})")
    off = m.add("f32[]", "constant(8)")
    f = m.add(f"f32[{n}]", f"subtract({f}, {m.add(f'f32[{n}]', f'broadcast({off}), dimensions={{}}')})")
    if ty != "f32":
        f = m.add(f"{ty}[{n}]", f"convert({f})")
    return m.add(f"{ty}[{','.join(map(str, dims))}]", f"reshape({f})")


def host_tree_reductions():
    """Reductions XLA's CPU splits into windows of 32 (TreeReductionRewriter):
    the host artifact computes them in the same order, bit for bit; the
    interpreter keeps XLA's evaluator's order (one pass, in order), so these
    are checked on the host only (testdata/types/host/)."""
    m = Mod()
    comps = []
    cases = [("f16", [64, 512], [1], "add", "0"), ("f16", [3, 5000], [1], "add", "0"),
             ("bf16", [40, 70], [0, 1], "add", "0"), ("f16", [7, 100], [1], "maximum", "-inf"),
             ("f32", [8, 100], [1], "add", "P"), ("s32", [4, 100], [1], "add", "P"),
             ("bf16", [6, 33, 5], [1], "multiply", "1")]
    for k, (ty, dims, rdims, op, init) in enumerate(cases):
        comps.append(f"r{k} {{\n  a = {ty}[] parameter(0)\n  b = {ty}[] parameter(1)\n"
                     f"  ROOT s = {ty}[] {op}(a, b)\n}}\n")
        if ty == "s32":
            x = m.add(f"s32[{','.join(map(str, dims))}]",
                      f"convert({hashed(m, 'f32', dims)})")
        else:
            x = hashed(m, ty, dims)
        if init == "P":   # an init that is not the identity, from p
            iv = m.add(f"{ty}[]", "convert(p)")
            three = m.add(f"{ty}[]", "constant(3)")
            iv = m.add(f"{ty}[]", f"add({iv}, {three})")
        else:
            iv = m.add(f"{ty}[]", f"constant({init})")
        odims = [d for j, d in enumerate(dims) if j not in rdims]
        n = int(np.prod(odims)) if odims else 1
        r = m.add(f"{ty}[{','.join(map(str, odims))}]",
                  f"reduce({x}, {iv}), dimensions={{{','.join(map(str, rdims))}}}, to_apply=r{k}")
        flat = m.add(f"{ty}[{n}]", f"reshape({r})")
        uty = UINT[FBITS.get(ty, 32)]
        m.checksum(m.add(f"{uty}[{n}]", f"bitcast-convert({flat})"), uty, n)
    name = "tree_reductions"
    if ONLY and ONLY not in name:
        return
    text = m.text(name).replace("\nENTRY e {", "\n" + "\n".join(comps) + "\nENTRY e {", 1)
    got = jax_run(text, np.uint32(0))
    lines = ["// Reductions XLA's CPU splits into windows of 32 (tree-reduction-rewriter):",
             "// " + "; ".join(f"{op} {t}{d} over {r} init {i}" for t, d, r, op, i in cases) + ";",
             "// P: p + 3, not the identity (applied once per window and once more).",
             "// Host only: the interpreter reduces in one pass as XLA's evaluator does.",
             "// Checksums of the bits; bit-exact.",
             "// Expected values: XLA on the CPU through JAX "
             f"{jax.__version__} (testdata/types/generate.py), not xhloc.",
             "// INPUT: u32=0"]
    lines += [f"// EXPECT: u64={int(g)}" for g in got]
    os.makedirs(os.path.join(HERE, "host"), exist_ok=True)
    with open(os.path.join(HERE, "host", name + ".hlo"), "w") as f:
        f.write("\n".join(lines) + "\n" + text)
    print(name, [int(g) for g in got])


def select_and_scatter():
    """select-and-scatter with overlapping windows, padding, strides and
    many ties (operand values (7k mod 5)), selecting
    with ge and with lt, scattering with add."""
    m = Mod()
    m.lines.insert(0, "  dummy = u32[] constant(0)")
    comps = """ge {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT c = pred[] compare(a, b), direction=GE
}

lt {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT c = pred[] compare(a, b), direction=LT
}

addf {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}

"""
    cases = [((13, 11), (7, 6), "size=3x3 stride=2x2 pad=1_1x1_1", "ge"),
             ((13, 11), (12, 5), "size=2x3 stride=1x2 pad=0_0x0_0", "lt"),
             ((9, 10), (5, 4), "size=3x2 stride=2x3 pad=1_2x0_1", "ge"),
             ((8, 8), (4, 4), "size=2x2 stride=2x2", "ge")]
    for (od, sd, win, sel) in cases:
        on, sn = od[0] * od[1], sd[0] * sd[1]
        src, _ = m.bits(on)
        seven = m.add("u32[]", "constant(7)")
        five = m.add("u32[]", "constant(5)")
        v = m.add(f"u32[{on}]", f"multiply({src}, {m.add(f'u32[{on}]', f'broadcast({seven}), dimensions={{}}')})")
        v = m.add(f"u32[{on}]", f"remainder({v}, {m.add(f'u32[{on}]', f'broadcast({five}), dimensions={{}}')})")
        op = m.add(f"f32[{od[0]},{od[1]}]", f"reshape({m.add(f'f32[{on}]', f'convert({v})')})")
        s2, _ = m.bits(sn)
        half = m.add("f32[]", "constant(0.375)")
        sv = m.add(f"f32[{sn}]", f"multiply({m.add(f'f32[{sn}]', f'convert({s2})')}, {m.add(f'f32[{sn}]', f'broadcast({half}), dimensions={{}}')})")
        sv = m.add(f"f32[{sd[0]},{sd[1]}]", f"reshape({sv})")
        init = m.add("f32[]", "constant(0.5)")
        r = m.add(f"f32[{od[0]},{od[1]}]", f"select-and-scatter({op}, {sv}, {init}), window={{{win}}}, select={sel}, scatter=addf")
        rb = m.add(f"u32[{on}]", f"bitcast-convert({m.add(f'f32[{on}]', f'reshape({r})')})")
        m.checksum(rb, "u32", on)
    name = "select_and_scatter"
    text = m.text(name).replace("\nENTRY", comps + "ENTRY", 1)
    m.text = lambda _n, t=text: t
    write(name, ["select-and-scatter with overlapping windows, padding, strides and",
                 "ties, select ge / lt, scatter add, init 0.5; bit-exact."], m)


def packed_layouts():
    """Sub-byte arrays with XLA's packed layouts (E(4), E(2)) in the entry
    computation layout and on instructions, as optimized dumps have them."""
    import ml_dtypes
    name = "packed_layouts"
    if ONLY and ONLY not in name:
        return
    text = """HloModule packed_layouts, entry_computation_layout={(s4[16]{0:E(4)}, u2[9]{0:E(2)})->(s4[16]{0:E(4)}, s32[9]{0}, u2[3,3]{0,1:E(2)})}

ENTRY e {
  a = s4[16]{0:E(4)} parameter(0)
  b = u2[9]{0:E(2)} parameter(1)
  c = s4[16]{0:E(4)} multiply(a, a)
  r = s4[16]{0:E(4)} reverse(c), dimensions={0}
  d = s4[16]{0:E(4)} add(r, a)
  bb = u2[9]{0:E(2)} add(b, b)
  w = s32[9]{0} convert(bb)
  t = u2[3,3]{0,1:E(2)} reshape(bb)
  ROOT o = (s4[16]{0:E(4)}, s32[9]{0}, u2[3,3]{0,1:E(2)}) tuple(d, w, t)
}
"""
    a = np.array([-8, -7, -3, -1, 0, 1, 2, 3, 4, 5, 6, 7, -2, -5, 7, -8], ml_dtypes.int4)
    b = np.array([0, 1, 2, 3, 3, 2, 1, 0, 3], ml_dtypes.uint2)
    got = jax_run(text, a, b)
    spec = lambda v, t: f"{'x'.join(map(str, v.shape))}x{t}=" + " ".join(
        str(int(x)) for x in v.astype(np.int32).ravel())
    lines = ["// Sub-byte arrays with XLA's packed layouts E(4) / E(2) (kept one",
             "// element per byte by xhloc); bit-exact.",
             "// Expected values: XLA on the CPU through JAX "
             f"{jax.__version__} (testdata/types/generate.py), not xhloc.",
             "// INPUT: " + spec(a, "s4"), "// INPUT: " + spec(b, "u2")]
    for g, t in zip(got, ["s4", "s32", "u2"]):
        lines.append("// EXPECT: " + spec(g, t))
    with open(os.path.join(HERE, name + ".hlo"), "w") as f:
        f.write("\n".join(lines) + "\n" + text)
    print(name, "written")


# Element types by bit width for bitcast-convert (not pred, which XLA's
# CPU refuses beside any other type, nor complex: c64 beside c128 aborts it).
BC_TYPES = {2: ["s2", "u2"], 4: ["s4", "u4", "f4e2m1fn"],
            8: ["s8", "u8"] + F8, 16: ["s16", "u16", "f16", "bf16"],
            32: ["s32", "u32", "f32"], 64: ["s64", "u64", "f64"]}
BC_UINT = {2: "u2", 4: "u4", 8: "u8", 16: "u16", 32: "u32", 64: "u64"}


def bc_source(m, n, w, t):
    """t[n]: n patterns of w bits (w-bit pieces of a u32 hash of the index,
    two of them for 64 bits, so that every bit position varies)."""
    src, n = m.bits(n)
    def hashed(x, mul, rot):
        c = m.add("u32[]", f"constant({mul})")
        x = m.add(f"u32[{n}]", f"multiply({x}, {m.add(f'u32[{n}]', f'broadcast({c}), dimensions={{}}')})")
        r = m.add("u32[]", f"constant({rot})")
        y = m.add(f"u32[{n}]", f"shift-right-logical({x}, {m.add(f'u32[{n}]', f'broadcast({r}), dimensions={{}}')})")
        return m.add(f"u32[{n}]", f"xor({x}, {y})")
    lo = hashed(src, 0x9E3779B1, 15)
    if w == 64:
        hi = m.add(f"u64[{n}]", f"convert({hashed(lo, 0x85EBCA6B, 13)})")
        s32 = m.add("u64[]", "constant(32)")
        hi = m.add(f"u64[{n}]", f"shift-left({hi}, {m.add(f'u64[{n}]', f'broadcast({s32}), dimensions={{}}')})")
        u = m.add(f"u64[{n}]", f"or({hi}, {m.add(f'u64[{n}]', f'convert({lo})')})")
    else:
        u = narrow(m, lo, n, BC_UINT[w])
    return u if t == BC_UINT[w] else m.add(f"{t}[{n}]", f"bitcast-convert({u})")


def bitcast_convert():
    """bitcast-convert from every type of one width to every real type of
    another: to wider types over [n/r, r], to narrower ones [n] -> [n, r];
    each result's bits (bitcast-convert to the unsigned type of its width)
    checksummed."""
    n = 1024
    for w, types in BC_TYPES.items():
        m = Mod()
        pairs = []
        for t in types:
            x = bc_source(m, n, w, t)
            for w2, types2 in BC_TYPES.items():
                if w2 == w:
                    continue
                for t2 in types2:
                    if w2 > w:
                        r = w2 // w
                        xs = m.add(f"{t}[{n // r},{r}]", f"reshape({x})")
                        y, shape, ny = m.add(f"{t2}[{n // r}]", f"bitcast-convert({xs})"), f"[{n // r}]", n // r
                    else:
                        r = w // w2
                        y, shape, ny = m.add(f"{t2}[{n},{r}]", f"bitcast-convert({x})"), f"[{n},{r}]", n * r
                    u2 = BC_UINT[w2]
                    if t2 != u2:
                        y = m.add(f"{u2}{shape}", f"bitcast-convert({y})")
                    y = m.add(f"{u2}[{ny}]", f"reshape({y})")
                    m.checksum(y if w2 == 64 else m.add(f"u64[{ny}]", f"convert({y})"), "u64", ny)
                    pairs.append(f"{t}->{t2}")
        write(f"bitcast_convert_{w}bit", [
            f"bitcast-convert from each {w}-bit type ({', '.join(types)}) to every",
            "real type of another width (s2 to f64, pred and complex left out);",
            f"{n} hashed bit patterns of each source type; the results' bits,",
            f"bit-exact (sub-elements least significant first); {len(pairs)} pairs."], m)


def bitcast_convert_fixed(name, header, text, inputs):
    """A module with given inputs and XLA's results as its EXPECT lines."""
    if ONLY and ONLY not in name:
        return
    got = jax_run(text, *[a for a, _ in inputs])
    def spec(v, t):
        vals = v.ravel() if t[0] == "f" else v.astype(np.int64).ravel()
        return f"{'x'.join(map(str, v.shape))}x{t}=" + " ".join(
            repr(float(x)) if t[0] == "f" else str(int(x)) for x in vals)
    types = [t for _, t in inputs]
    lines = [f"// {h}" for h in header]
    lines.append("// Expected values: XLA on the CPU through JAX "
                 f"{jax.__version__} (testdata/types/generate.py), not xhloc.")
    lines += ["// INPUT: " + spec(np.asarray(a), t) for a, t in inputs]
    import re
    root = re.search(r"ROOT \S+ = (\(.*?\)|\S+) ", text).group(1)
    outs = re.findall(r"([a-z0-9]+)\[", root)
    lines += ["// EXPECT: " + spec(g, t) for g, t in zip(got, outs)]
    with open(os.path.join(HERE, name + ".hlo"), "w") as f:
        f.write("\n".join(lines) + "\n" + text)
    print(name, "written")


def bitcast_convert_modules():
    import ml_dtypes
    bitcast_convert_fixed("bitcast_convert_s4", [
        "XLA's GPU test bitcast-convert.hlo (issue #25): s4[8,2] to s8[8],",
        "element [i,0] the low nibble of byte i; bit-exact."], """HloModule bitcast_convert

ENTRY e {
  a = s4[8,2] parameter(0)
  b = s8[8] bitcast-convert(a)
  ROOT c = s8[8] copy(b)
}
""", [(np.array([[1, 2], [3, -1], [-8, 7], [0, 5], [4, 4], [-2, -3], [6, 0], [0, 6]],
                ml_dtypes.int4), "s4")])
    p = ((np.arange(15, dtype=np.float32) - 7) * np.float32(0.375) + np.float32(0.001)).reshape(3, 5)
    q = ((np.arange(60) * 37 + 11) % 256).astype(np.uint8).reshape(5, 3, 4)
    bitcast_convert_fixed("bitcast_convert_layouts", [
        "bitcast-convert between widths under non-default layouts (of the",
        "operand, of the result, the new minor dimension not physically minor),",
        "fused with a transpose and an add; bit-exact."],
        """HloModule bitcast_convert_layouts, entry_computation_layout={(f32[3,5]{0,1}, u8[5,3,4]{0,1,2})->(u8[3,5,4]{1,0,2}, f32[5,3]{0,1}, u16[3,5,2]{2,1,0})}

ENTRY e {
  p = f32[3,5]{0,1} parameter(0)
  q = u8[5,3,4]{0,1,2} parameter(1)
  n = u8[3,5,4]{1,0,2} bitcast-convert(p)
  w = f32[5,3]{0,1} bitcast-convert(q)
  t = f32[5,3]{1,0} transpose(p), dimensions={1,0}
  a = f32[5,3]{1,0} add(t, w)
  h = u16[5,3,2]{2,1,0} bitcast-convert(a)
  ht = u16[3,5,2]{2,1,0} transpose(h), dimensions={1,0,2}
  ROOT r = (u8[3,5,4]{1,0,2}, f32[5,3]{0,1}, u16[3,5,2]{2,1,0}) tuple(n, w, ht)
}
""", [(p, "f32"), (q, "u8")])


if __name__ == "__main__":
    rng_op()  # first: no module with an rng may be compiled before it
    stochastic_convert()
    host_tree_reductions()
    reduce_precision()
    f8_converts()
    f8_arith()
    subbyte()
    rng()
    select_and_scatter()
    packed_layouts()
    bitcast_convert()
    bitcast_convert_modules()
