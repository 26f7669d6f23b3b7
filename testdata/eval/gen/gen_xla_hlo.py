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


if __name__ == "__main__":
    main()
