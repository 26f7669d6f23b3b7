#!/usr/bin/env python3
"""gen_xla_hlo.py - golden interpreter tests from HLO text run by XLA itself.

For ops that JAX does not lower to the HLO op under test on the CPU
(cholesky and triangular-solve become LAPACK calls there, lax.scan a while
loop) or that only exist as HLO (custom-calls such as "Qr"), each case below
is HLO text that XLA's CPU backend compiles and runs directly (as
scripts/xla_crosscheck.py does: hlo_module_from_text, hlo_to_stablehlo, the
CPU client's compile_and_load), with the inputs given here.  XLA's outputs
become the EXPECT lines of testdata/eval/xla_<name>.hlo, in the header
format tests/check-eval.sh reads.

The expected values are XLA's, computed independently of xhloc's
interpreter.  The generated files are checked in; running the tests needs no
JAX.  Regenerate with:

    pip install jax ml_dtypes numpy
    python3 testdata/eval/gen/gen_xla_hlo.py    # from the repository root
"""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gen_jax  # noqa: E402  (formatting helpers; sets jax to the CPU, x64)
from gen_jax import OUT, spec  # noqa: E402

import jax  # noqa: E402
from jax._src.lib import hlo as jhlo, xla_client  # noqa: E402
import jaxlib._jax as _jax  # noqa: E402


def run_xla(text, inputs):
    module = jhlo.hlo_module_from_text(text)
    proto = module.as_serialized_hlo_module_proto()
    stablehlo = _jax.mlir.hlo_to_stablehlo(proto)
    dev = jax.devices("cpu")[0]
    exe = dev.client.compile_and_load(stablehlo, xla_client.DeviceList((dev,)),
                                      xla_client.CompileOptions())
    bufs = [jax.device_put(np.asarray(x), dev) for x in inputs]
    res = exe.execute_sharded(bufs).disassemble_into_single_device_arrays()
    return [np.asarray(r[0]) for r in res]


def emit(name, what, text, cases, tol=(0, 0)):
    """cases: list of (case name, [inputs])"""
    lines = [
        f"// {what}",
        "// Expected values: XLA on the CPU through JAX "
        f"{jax.__version__} running this HLO (testdata/eval/gen/gen_xla_hlo.py), "
        "not this interpreter.",
        f"// TOL: {tol[0]} {tol[1]}",
    ]
    for cname, ins in cases:
        outs = run_xla(text, ins)
        lines.append(f"// CASE: {cname}")
        for a in ins:
            lines.append(f"// INPUT: {spec(a)}")
        for o in outs:
            lines.append(f"// EXPECT: {spec(o)}")
    path = os.path.join(OUT, f"xla_{name}.hlo")
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n\n" + text.strip() + "\n")
    print("wrote", path)


rng = np.random.default_rng(4321)
f32, f64, c64 = np.float32, np.float64, np.complex64


def r(shape, dt=f32):
    if np.issubdtype(dt, np.complexfloating):
        return (rng.uniform(-1, 1, shape) + 1j * rng.uniform(-1, 1, shape)).astype(dt)
    return rng.uniform(-1, 1, shape).astype(dt)


def spd(batch, n, dt=f32):
    a = r((batch, n, n), dt)
    return (a @ np.conj(np.swapaxes(a, -1, -2)) + n * np.eye(n)).astype(dt)


CHOLESKY = """
HloModule cholesky_not_pd

ENTRY e {
  a = f32[3,4,4] parameter(0)
  l = f32[3,4,4] cholesky(a), lower=true
  u = f32[3,4,4] cholesky(a), lower=false
  ROOT t = (f32[3,4,4], f32[3,4,4]) tuple(l, u)
}
"""

CHOLESKY_C64 = """
HloModule cholesky_not_pd_c64

ENTRY e {
  a = c64[2,3,3] parameter(0)
  ROOT u = c64[2,3,3] cholesky(a), lower=false
}
"""

QR = """
HloModule qr

ENTRY e {
  a = f32[2,5,3] parameter(0)
  w = f32[3,4] parameter(1)
  c = c64[2,4,4] parameter(2)
  q = (f32[2,5,3], f32[2,3]) custom-call(a), custom_call_target="Qr"
  v = f32[2,5,3] get-tuple-element(q), index=0
  t = f32[2,3] get-tuple-element(q), index=1
  h = f32[2,5,3] custom-call(v, t), custom_call_target="ProductOfElementaryHouseholderReflectors"
  qw = (f32[3,4], f32[3]) custom-call(w), custom_call_target="Qr"
  vw = f32[3,4] get-tuple-element(qw), index=0
  tw = f32[3] get-tuple-element(qw), index=1
  qc = (c64[2,4,4], c64[2,4]) custom-call(c), custom_call_target="Qr"
  vc = c64[2,4,4] get-tuple-element(qc), index=0
  tc = c64[2,4] get-tuple-element(qc), index=1
  hc = c64[2,4,4] custom-call(vc, tc), custom_call_target="ProductOfElementaryHouseholderReflectors"
  ROOT r = (f32[2,5,3], f32[2,3], f32[2,5,3], f32[3,4], f32[3], c64[2,4,4], c64[2,4], c64[2,4,4]) tuple(v, t, h, vw, tw, vc, tc, hc)
}
"""

LAYERNORM = """
HloModule layernorm

ENTRY e {
  x = f32[3,7] parameter(0)
  g = f32[7] parameter(1)
  b = f32[7] parameter(2)
  y = f32[2,3,4] parameter(3)
  g4 = f32[4] parameter(4)
  b4 = f32[4] parameter(5)
  n = f32[3,7] custom-call(x, g, b), custom_call_target="__onednn$layernorm", backend_config={"onednn_layer_norm_config":{"rescale":"SCALE_AND_SHIFT","epsilon_typecast":925353388}}
  m = f32[2,3,4] custom-call(y, g4, b4), custom_call_target="__onednn$layernorm", backend_config={"onednn_layer_norm_config":{"rescale":"SCALE_AND_SHIFT"}}
  ROOT t = (f32[3,7], f32[2,3,4]) tuple(n, m)
}
"""

# Unstable sorts full of ties: XLA's CPU runtime sorts a row with
# libstdc++'s std::sort (an introsort), and which tied element lands where
# follows from its comparisons.  A general comparator (several operands, a
# key-value comparator, along a minor or a major dimension, rows of 16, 17
# and 100 elements, one row driven into std::sort's heapsort).
SORT_UNSTABLE = """
HloModule sort_unstable

gt_bf16 {
  a = bf16[] parameter(0)
  b = bf16[] parameter(1)
  i = s32[] parameter(2)
  j = s32[] parameter(3)
  ROOT r = pred[] compare(a, b), direction=GT
}

lt_s32 {
  a = s32[] parameter(0)
  b = s32[] parameter(1)
  i = s32[] parameter(2)
  j = s32[] parameter(3)
  ROOT r = pred[] compare(a, b), direction=LT
}

lt_key3 {
  a = s32[] parameter(0)
  b = s32[] parameter(1)
  c = f32[] parameter(2)
  d = f32[] parameter(3)
  i = s32[] parameter(4)
  j = s32[] parameter(5)
  ROOT r = pred[] compare(a, b), direction=LT
}

ENTRY e {
  k1 = bf16[4,100] parameter(0)
  v1 = s32[4,100] parameter(1)
  k2 = s32[70,3] parameter(2)
  w2 = f32[70,3] parameter(3)
  v2 = s32[70,3] parameter(4)
  k3 = s32[100] parameter(5)
  v3 = s32[100] parameter(6)
  k4 = s32[5,17] parameter(7)
  v4 = s32[5,17] parameter(8)
  k5 = s32[3,16] parameter(9)
  v5 = s32[3,16] parameter(10)
  r1 = (bf16[4,100], s32[4,100]) sort(k1, v1), dimensions={1}, to_apply=gt_bf16
  r2 = (s32[70,3], f32[70,3], s32[70,3]) sort(k2, w2, v2), dimensions={0}, to_apply=lt_key3
  r3 = (s32[100], s32[100]) sort(k3, v3), dimensions={0}, to_apply=lt_s32
  r4 = (s32[5,17], s32[5,17]) sort(k4, v4), dimensions={1}, to_apply=lt_s32
  r5 = (s32[3,16], s32[3,16]) sort(k5, v5), dimensions={1}, to_apply=lt_s32
  r1k = bf16[4,100] get-tuple-element(r1), index=0
  r1v = s32[4,100] get-tuple-element(r1), index=1
  r2k = s32[70,3] get-tuple-element(r2), index=0
  r2w = f32[70,3] get-tuple-element(r2), index=1
  r2v = s32[70,3] get-tuple-element(r2), index=2
  r3v = s32[100] get-tuple-element(r3), index=1
  r4v = s32[5,17] get-tuple-element(r4), index=1
  r5v = s32[3,16] get-tuple-element(r5), index=1
  ROOT t = (bf16[4,100], s32[4,100], s32[70,3], f32[70,3], s32[70,3], s32[100], s32[5,17], s32[3,16]) tuple(r1k, r1v, r2k, r2w, r2v, r3v, r4v, r5v)
}
"""

# A lone f32, f64 or bf16 operand with a plain compare(p0, p1) comparator:
# XLA sorts it with std::less, or std::greater for direction GE (which then
# sorts as GT, also when stable); f16 keeps its GE comparator.  Ties are
# -0 and +0 (and NaNs of both signs with LT), so the results are compared
# as bits.
SORT_NATIVE = """
HloModule sort_native

lt_f32 {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT r = pred[] compare(a, b), direction=LT
}

ge_f32 {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT r = pred[] compare(a, b), direction=GE
}

ge_swapped_f64 {
  a = f64[] parameter(0)
  b = f64[] parameter(1)
  ROOT r = pred[] compare(b, a), direction=GE
}

ge_bf16 {
  a = bf16[] parameter(0)
  b = bf16[] parameter(1)
  ROOT r = pred[] compare(a, b), direction=GE
}

ge_f16 {
  a = f16[] parameter(0)
  b = f16[] parameter(1)
  ROOT r = pred[] compare(a, b), direction=GE
}

ENTRY e {
  x1 = f32[3,60] parameter(0)
  x2 = f32[2,50] parameter(1)
  x3 = f32[40] parameter(2)
  x4 = f64[30] parameter(3)
  x5 = bf16[50] parameter(4)
  x6 = f16[12] parameter(5)
  r1 = f32[3,60] sort(x1), dimensions={1}, to_apply=lt_f32
  r2 = f32[2,50] sort(x2), dimensions={1}, to_apply=ge_f32
  r3 = f32[40] sort(x3), dimensions={0}, is_stable=true, to_apply=ge_f32
  r4 = f64[30] sort(x4), dimensions={0}, to_apply=ge_swapped_f64
  r5 = bf16[50] sort(x5), dimensions={0}, to_apply=ge_bf16
  r6 = f16[12] sort(x6), dimensions={0}, to_apply=ge_f16
  c1 = s32[3,60] bitcast-convert(r1)
  c2 = s32[2,50] bitcast-convert(r2)
  c3 = s32[40] bitcast-convert(r3)
  c4 = s64[30] bitcast-convert(r4)
  c5 = s16[50] bitcast-convert(r5)
  c6 = s16[12] bitcast-convert(r6)
  ROOT t = (s32[3,60], s32[2,50], s32[40], s64[30], s16[50], s16[12]) tuple(c1, c2, c3, c4, c5, c6)
}
"""

# XLA's CPU compiler turns an f32 sort by GT with an iota whose results are
# only sliced from 0 into its TopK (TopkRewriter), whose ties come out by
# index, is_stable or not; the same sort of f64 stays a std::sort.
SORT_TOPK = """
HloModule sort_topk

gt_f32 {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  i = s32[] parameter(2)
  j = s32[] parameter(3)
  ROOT r = pred[] compare(a, b), direction=GT
}

gt_f64 {
  a = f64[] parameter(0)
  b = f64[] parameter(1)
  i = s32[] parameter(2)
  j = s32[] parameter(3)
  ROOT r = pred[] compare(a, b), direction=GT
}

ENTRY e {
  x = f32[4,64] parameter(0)
  y = f32[64,3] parameter(1)
  z = f64[4,64] parameter(2)
  ix = s32[4,64] iota(), iota_dimension=1
  i1 = s32[64] iota(), iota_dimension=0
  iy = s32[64,3] broadcast(i1), dimensions={0}
  tx = (f32[4,64], s32[4,64]) sort(x, ix), dimensions={1}, to_apply=gt_f32
  ty = (f32[64,3], s32[64,3]) sort(y, iy), dimensions={0}, to_apply=gt_f32
  tz = (f64[4,64], s32[4,64]) sort(z, ix), dimensions={1}, to_apply=gt_f64
  txv = f32[4,64] get-tuple-element(tx), index=0
  txi = s32[4,64] get-tuple-element(tx), index=1
  tyi = s32[64,3] get-tuple-element(ty), index=1
  tzi = s32[4,64] get-tuple-element(tz), index=1
  kxv = f32[4,8] slice(txv), slice={[0:4], [0:8]}
  kxi = s32[4,8] slice(txi), slice={[0:4], [0:8]}
  kyi = s32[10,3] slice(tyi), slice={[0:10], [0:3]}
  kzi = s32[4,8] slice(tzi), slice={[0:4], [0:8]}
  ROOT t = (f32[4,8], s32[4,8], s32[10,3], s32[4,8]) tuple(kxv, kxi, kyi, kzi)
}
"""


def introsort_killer(n):
    """Keys that drive libstdc++'s std::sort (median of three, 16-element
    threshold, depth 2 * floor(log2 n)) into its heapsort: McIlroy's
    adversary ("A Killer Adversary for Quicksort") playing against a model
    of that sort, the keys then halved so that pairs tie."""
    gas = n
    val = [gas] * n
    st = {"solid": 0, "cand": 0, "heap": 0}

    def less(x, y):
        if val[x] == gas and val[y] == gas:
            val[x if x == st["cand"] else y] = st["solid"]
            st["solid"] += 1
        if val[x] == gas:
            st["cand"] = x
        elif val[y] == gas:
            st["cand"] = y
        return val[x] < val[y]

    def model(less):
        a = list(range(n))

        def sift(lo, hole, ln, v):
            top = child = hole
            while child < (ln - 1) // 2:
                child = 2 * (child + 1)
                if less(a[lo + child], a[lo + child - 1]):
                    child -= 1
                a[lo + hole] = a[lo + child]
                hole = child
            if ln % 2 == 0 and child == (ln - 2) // 2:
                child = 2 * (child + 1)
                a[lo + hole] = a[lo + child - 1]
                hole = child - 1
            while hole > top and less(a[lo + (hole - 1) // 2], v):
                a[lo + hole] = a[lo + (hole - 1) // 2]
                hole = (hole - 1) // 2
            a[lo + hole] = v

        def loop(lo, hi, depth):
            while hi - lo > 16:
                if depth == 0:
                    st["heap"] += 1
                    ln = hi - lo
                    for parent in range((ln - 2) // 2, -1, -1):
                        sift(lo, parent, ln, a[lo + parent])
                    while ln > 1:
                        ln -= 1
                        v = a[lo + ln]
                        a[lo + ln] = a[lo]
                        sift(lo, 0, ln, v)
                    return
                depth -= 1
                x, y, z = lo + 1, lo + (hi - lo) // 2, hi - 1
                if less(a[x], a[y]):
                    m = y if less(a[y], a[z]) else z if less(a[x], a[z]) else x
                else:
                    m = x if less(a[x], a[z]) else z if less(a[y], a[z]) else y
                a[lo], a[m] = a[m], a[lo]
                f, l = lo + 1, hi
                while True:
                    while less(a[f], a[lo]):
                        f += 1
                    l -= 1
                    while less(a[lo], a[l]):
                        l -= 1
                    if f >= l:
                        break
                    a[f], a[l] = a[l], a[f]
                    f += 1
                loop(f, hi, depth)
                hi = f

        loop(0, n, 2 * (n.bit_length() - 1))

    model(less)
    keys = [v // 2 for v in val]
    st["heap"] = 0
    model(lambda x, y: keys[x] < keys[y])
    assert st["heap"] > 0, "the keys no longer reach the heapsort"
    return np.array(keys, dtype=np.int32)


def ties(shape, values, dt, rs):
    return rs.choice(np.array(values, dtype=np.float64), size=shape).astype(dt)


def sort_cases():
    import ml_dtypes
    rs = np.random.default_rng(2024)
    bf16 = ml_dtypes.bfloat16
    iota = lambda shape, axis: np.broadcast_to(  # noqa: E731
        np.arange(shape[axis], dtype=np.int32).reshape(
            [-1 if d == axis else 1 for d in range(len(shape))]), shape).copy()
    emit("sort_unstable", "unstable sorts full of ties: XLA's CPU order of the ties "
         "(libstdc++'s std::sort: introsort, heapsort past its depth, insertion sort)",
         SORT_UNSTABLE,
         [("ties", [ties((4, 100), [0, -0.0, 1, 2, -3, 7], bf16, rs), iota((4, 100), 1),
                    ties((70, 3), [0, 1, 2], np.int32, rs), rs.uniform(-1, 1, (70, 3)).astype(f32),
                    iota((70, 3), 0),
                    introsort_killer(100), np.arange(100, dtype=np.int32),
                    ties((5, 17), [0, 1, 2], np.int32, rs), iota((5, 17), 1),
                    ties((3, 16), [0, 1], np.int32, rs), iota((3, 16), 1)])])
    emit("sort_native", "a lone f32/f64/bf16 operand with compare(p0, p1) LT or GE: XLA "
         "sorts it with std::less or std::greater (GE as GT, also when stable); f16 keeps GE",
         SORT_NATIVE,
         [("zeros", [ties((3, 60), [0, -0.0, 1, -1, np.nan, -np.nan, np.inf], f32, rs),
                     ties((2, 50), [0, -0.0, 2, -2], f32, rs),
                     ties(40, [0, -0.0, 1], f32, rs),
                     ties(30, [0, -0.0, 5], f64, rs),
                     ties(50, [0, -0.0, 1, 2], bf16, rs),
                     ties(12, [0, -0.0, 1], np.float16, rs)])])

    emit("sort_topk", "f32 sorts by GT with an iota, only sliced: XLA's CPU runs them as "
         "its TopK (ties by index); the f64 one stays a std::sort", SORT_TOPK,
         [("ties", [ties((4, 64), [0, 1, 2, 3], f32, rs), ties((64, 3), [5, 6], f32, rs),
                    ties((4, 64), [0, 1, 2, 3], f64, rs)])])


def main():
    # batch member 1 is not positive definite (a negative pivot at step 2),
    # member 2 is random (negative pivots at once): XLA's CholeskyExpander
    # gives NaN for every element of those members, both triangles
    a = spd(3, 4)
    a[1, 2, 2] = -5.0
    a[2] = r((4, 4))
    emit("cholesky_not_pd", "cholesky of matrices that are not positive definite: "
         "NaN for the whole batch member", CHOLESKY, [("mixed", [a])], (1e-5, 1e-5))
    c = spd(2, 3, c64)
    c[1] = r((3, 3), c64)
    emit("cholesky_not_pd_c64", "complex cholesky, one member not positive definite "
         "(NaN+0j everywhere)", CHOLESKY_C64, [("mixed", [c])], (1e-5, 1e-5))
    # Qr and its Householder product: random matrices; one whose columns
    # are already reduced (upper triangular: sigma = 0, tau = 0) with a
    # negative diagonal; complex
    up = np.triu(r((5, 3)))
    up[0, 0] = -abs(up[0, 0])
    a = np.stack([r((5, 3)), up]).astype(f32)
    emit("qr", "custom-calls Qr and ProductOfElementaryHouseholderReflectors (XLA's "
         "QrExpander), tall, wide, complex, a column already reduced", QR,
         [("mixed", [a, r((3, 4)), r((2, 4, 4), c64)])], (1e-5, 1e-5))
    # XLA:CPU's oneDNN layer normalization call: over the last dimension,
    # epsilon 1e-5 from the config's bits, and 0 when the config has none
    emit("onednn_layernorm", "custom-call __onednn$layernorm (oneDNN's layer "
         "normalization over the last dimension, epsilon from epsilon_typecast)", LAYERNORM,
         [("rows", [r((3, 7)), r(7), r(7), r((2, 3, 4)), r(4), r(4)])], (1e-5, 1e-4))
    sort_cases()


if __name__ == "__main__":
    main()
