#!/usr/bin/env python3
"""gen_jax.py - derive golden interpreter tests from XLA through JAX.

Each case below is a small JAX function built from lax primitives (so that
its HLO is the op under test), example inputs, and the tolerance to compare
with.  For each, this script lowers the function to HLO text
(`jax.jit(f).lower(...).as_text(dialect="hlo")`), runs it with XLA on the CPU
to get the expected outputs, and writes testdata/eval/jax_<name>.hlo with the
inputs and expected values in the header lines tests/check-eval.sh reads.

The expected values are XLA's, computed independently of xhloc's
interpreter.  The generated files are checked in; running the tests needs no
JAX.  Regenerate with:

    pip install jax ml_dtypes numpy
    python3 testdata/eval/gen/gen_jax.py        # from the repository root
"""
import math
import os
import sys

import numpy as np

import jax
import jax.numpy as jnp
from jax import lax
import ml_dtypes

jax.config.update("jax_enable_x64", True)
jax.config.update("jax_platforms", "cpu")

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")

XLA_NAMES = {
    np.dtype(np.float32): "f32", np.dtype(np.float64): "f64",
    np.dtype(np.float16): "f16", np.dtype(ml_dtypes.bfloat16): "bf16",
    np.dtype(ml_dtypes.float8_e4m3fn): "f8e4m3fn",
    np.dtype(ml_dtypes.float8_e5m2): "f8e5m2",
    np.dtype(np.int8): "s8", np.dtype(np.int16): "s16",
    np.dtype(np.int32): "s32", np.dtype(np.int64): "s64",
    np.dtype(np.uint8): "u8", np.dtype(np.uint16): "u16",
    np.dtype(np.uint32): "u32", np.dtype(np.uint64): "u64",
    np.dtype(np.bool_): "pred", np.dtype(np.complex64): "c64",
    np.dtype(np.complex128): "c128",
    np.dtype(ml_dtypes.int4): "s4", np.dtype(ml_dtypes.uint4): "u4",
    np.dtype(ml_dtypes.int2): "s2", np.dtype(ml_dtypes.uint2): "u2",
}


def fmt_real(x):
    x = float(x)
    if math.isnan(x):
        return "-nan" if math.copysign(1, x) < 0 else "nan"
    if math.isinf(x):
        return "inf" if x > 0 else "-inf"
    r = repr(x)
    return r[:-2] if r.endswith(".0") else r


def fmt_value(v, dt):
    if dt == np.bool_:
        return "1" if v else "0"
    if np.issubdtype(dt, np.integer):
        return str(int(v))
    if np.issubdtype(dt, np.complexfloating):
        re, im = fmt_real(v.real), fmt_real(v.imag)
        sign = "" if im.startswith("-") else "+"
        return f"{re}{sign}{im}j"
    return fmt_real(v)


def spec(a):
    a = np.asarray(a)
    name = XLA_NAMES[a.dtype]
    dims = "x".join(str(d) for d in a.shape)
    prefix = f"{dims}x{name}" if dims else name
    vals = " ".join(fmt_value(v, a.dtype) for v in a.reshape(-1))
    return f"{prefix}={vals}"


def leaves(x):
    return jax.tree_util.tree_leaves(x)


def emit(name, what, fn, cases, tol=(0, 0)):
    """cases: list of (case name, [inputs])"""
    try:
        emit1(name, what, fn, cases, tol)
    except Exception as e:  # report and go on with the other cases
        print("FAILED", name, type(e).__name__, str(e).splitlines()[0], file=sys.stderr)


def emit1(name, what, fn, cases, tol):
    args0 = [jnp.asarray(a) for a in cases[0][1]]
    hlo = jax.jit(fn).lower(*args0).as_text(dialect="hlo")
    lines = [
        f"// {what}",
        "// Expected values: XLA on the CPU through JAX "
        f"{jax.__version__} (testdata/eval/gen/gen_jax.py), not this interpreter.",
        f"// TOL: {tol[0]} {tol[1]}",
    ]
    for cname, ins in cases:
        outs = leaves(jax.jit(fn)(*[jnp.asarray(a) for a in ins]))
        lines.append(f"// CASE: {cname}")
        for a in ins:
            lines.append(f"// INPUT: {spec(a)}")
        for o in outs:
            lines.append(f"// EXPECT: {spec(np.asarray(o))}")
    path = os.path.join(OUT, f"jax_{name}.hlo")
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n\n" + hlo)
    print("wrote", path)


f32, f64, bf16, f16 = np.float32, np.float64, ml_dtypes.bfloat16, np.float16
rng = np.random.default_rng(1234)


def r(shape, dt=f32, lo=-2.0, hi=2.0):
    return (rng.uniform(lo, hi, size=shape)).astype(dt)


SPECIAL = np.array([0.0, -0.0, 1.0, -1.0, 0.5, -2.5, 3.75, 1e-30, -1e30,
                    np.inf, -np.inf, np.nan], f32)


def bitcast_convert_widths():
    bc = lax.bitcast_convert_type
    emit("bitcast_convert_widths",
         "bitcast-convert between widths: s4x2 -> s8, s8 -> u4x2, u2x4 -> u8, "
         "f32 -> s8x4, bf16x2 -> f32, f64 -> u32x2, f16 -> u8x2, u8x2 -> f16 "
         "(sub-elements least significant first)",
         lambda a, b, c, x, y, z, h, u: (bc(a, jnp.int8), bc(b, jnp.uint4), bc(c, jnp.uint8),
                                         bc(x, jnp.int8), bc(y, jnp.float32), bc(z, jnp.uint32),
                                         bc(h, jnp.uint8), bc(u, jnp.float16)),
         [("values", [np.array([[1, 2], [3, -1], [-8, 7], [0, 5], [4, 4], [-2, -3], [6, 0], [0, 6]],
                               ml_dtypes.int4),
                      np.array([0x21, -1, 0x7f, -128, 0x0f, -16, 1, 16], np.int8),
                      np.array([[0, 1, 2, 3], [3, 2, 1, 0], [3, 3, 3, 3]], ml_dtypes.uint2),
                      np.array([1.0, -2.0, np.inf, 1e-40], f32),
                      np.array([[0, 16256], [0, 49152], [32704, 32640]], np.uint16).view(bf16),
                      np.array([1.0, -0.1, np.nan], f64),
                      np.array([1.0, -65504.0, np.inf, 6e-8], f16),
                      np.array([[0, 60], [255, 251], [1, 0]], np.uint8)])])


def main():
    # --- elementwise float math, f32 and bf16 and f64 -------------------
    unary = {
        "exp": lax.exp, "log": lax.log, "log1p": lax.log1p, "expm1": lax.expm1,
        "tanh": lax.tanh, "logistic": lax.logistic, "sqrt": lax.sqrt,
        "rsqrt": lax.rsqrt, "cbrt": lax.cbrt, "sin": lax.sin, "cos": lax.cos,
        "tan": lax.tan, "floor": lax.floor, "ceil": lax.ceil, "abs": lax.abs,
        "neg": lax.neg, "sign": lax.sign,
        "round_afz": lambda x: lax.round(x, lax.RoundingMethod.AWAY_FROM_ZERO),
        "round_even": lambda x: lax.round(x, lax.RoundingMethod.TO_NEAREST_EVEN),
        "is_finite": lax.is_finite,
    }
    exact = {"floor", "ceil", "abs", "neg", "sign", "round_afz", "round_even",
             "is_finite", "sqrt"}
    for n, fn in unary.items():
        xs = np.concatenate([SPECIAL, r(8, f32, -3, 3),
                             np.array([2.5, -2.5, 0.49999997], f32)])
        tol = (0, 0) if n in exact else (1e-6, 2e-6)
        emit(f"unary_{n}_f32", f"{n} on f32, specials included", fn,
             [("specials", [xs])], tol)
        xb = xs.astype(bf16)
        tolb = (0, 0) if n in exact else (1e-2, 1e-2)
        emit(f"unary_{n}_bf16", f"{n} on bf16 (computed in f32, rounded to bf16)",
             fn, [("specials", [xb])], tolb)
    for n in ["exp", "log", "tanh", "sin", "sqrt", "floor", "sign"]:
        xs = np.concatenate([SPECIAL.astype(f64), r(6, f64, -3, 3)])
        emit(f"unary_{n}_f64", f"{n} on f64", unary[n], [("specials", [xs])],
             (0, 0) if n in exact else (1e-13, 1e-13))
    emit("unary_erf_f32", "erf on f32", lax.erf,
         [("values", [np.array([0, 0.5, -0.5, 1, -2, 3, 10, np.nan], f32)])], (1e-6, 1e-6))

    binary = {
        "add": lax.add, "sub": lax.sub, "mul": lax.mul, "div": lax.div,
        "max": lax.max, "min": lax.min, "pow": lax.pow, "atan2": lax.atan2,
        "rem": lax.rem,
    }
    for n, fn in binary.items():
        a = np.concatenate([SPECIAL, SPECIAL[::-1], r(6)])
        b = np.concatenate([SPECIAL[::-1], SPECIAL, r(6)])
        tol = (1e-6, 2e-6) if n in ("pow", "atan2") else (0, 0)
        emit(f"binary_{n}_f32", f"{n} on f32 with NaN, inf and signed zeros", fn,
             [("specials", [a, b])], tol)
        emit(f"binary_{n}_bf16", f"{n} on bf16", fn,
             [("values", [a.astype(bf16), b.astype(bf16)])],
             (1e-2, 1e-2) if n in ("pow", "atan2") else (0, 0))

    # --- integers: XLA's edge cases -----------------------------------
    for dt in [np.int8, np.int32, np.int64]:
        info = np.iinfo(dt)
        a = np.array([7, -7, 7, -7, info.min, info.min, 0, 5, info.max, -1], dt)
        b = np.array([2, 2, -2, -2, -1, 1, 0, 0, -1, 3], dt)
        nm = np.dtype(dt).name
        emit(f"int_div_{nm}", f"signed {nm} divide: x/0 = -1, MIN/-1 = MIN",
             lax.div, [("edges", [a, b])])
        emit(f"int_rem_{nm}", f"signed {nm} remainder: x%0 = x, MIN%-1 = 0",
             lax.rem, [("edges", [a, b])])
        emit(f"int_arith_{nm}", f"{nm} add, sub, mul wrap",
             lambda x, y: (x + y, x - y, x * y), [("edges", [a, b])])
        sh = np.array([0, 1, 3, info.bits - 1, info.bits, info.bits + 1, -1, 100, 2, 5], dt)
        emit(f"int_shift_{nm}", f"{nm} shifts by up to and past the width",
             lambda x, s: (lax.shift_left(x, s), lax.shift_right_logical(x, s),
                           lax.shift_right_arithmetic(x, s)),
             [("edges", [a, sh])])
        emit(f"int_bits_{nm}", f"{nm} clz, popcnt, not, abs, neg, sign",
             lambda x: (lax.clz(x), lax.population_count(x), lax.bitwise_not(x),
                        lax.abs(x), lax.neg(x), lax.sign(x)), [("edges", [a])])
        emit(f"int_minmax_{nm}", f"{nm} max, min, and, or, xor",
             lambda x, y: (lax.max(x, y), lax.min(x, y), x & y, x | y, x ^ y),
             [("edges", [a, b])])
    for dt in [np.uint8, np.uint32, np.uint64]:
        info = np.iinfo(dt)
        a = np.array([7, 0, info.max, 5, 1, 200 % (info.max + 1)], dt)
        b = np.array([2, 0, 1, 0, info.max, 3], dt)
        nm = np.dtype(dt).name
        emit(f"uint_ops_{nm}", f"unsigned {nm} div (x/0 = all ones), rem, wrap, shifts",
             lambda x, y: (lax.div(x, y), lax.rem(x, y), x - y, x * y,
                           lax.shift_left(x, y), lax.shift_right_logical(x, y),
                           lax.shift_right_arithmetic(x, y), lax.clz(x),
                           lax.population_count(x), lax.max(x, y)),
             [("edges", [a, b])])

    # --- compare, every direction, float and total order ----------------
    a = np.concatenate([SPECIAL, np.array([np.nan, -0.0], f32)])
    b = np.concatenate([SPECIAL[::-1], np.array([np.nan, 0.0], f32)])
    dirs = [lax.eq, lax.ne, lax.lt, lax.le, lax.gt, lax.ge]
    emit("compare_f32", "compare f32 in every direction (FLOAT order)",
         lambda x, y: tuple(d(x, y) for d in dirs), [("specials", [a, b])])
    emit("compare_s32", "compare s32 in every direction",
         lambda x, y: tuple(d(x, y) for d in dirs),
         [("values", [np.array([-3, 0, 5, 2**31 - 1, -2**31], np.int32),
                      np.array([3, 0, -5, -2**31, 2**31 - 1], np.int32)])])
    emit("compare_u32", "compare u32 in every direction (unsigned)",
         lambda x, y: tuple(d(x, y) for d in dirs),
         [("values", [np.array([0, 1, 2**32 - 1, 7], np.uint32),
                      np.array([2**32 - 1, 1, 0, 8], np.uint32)])])

    # --- convert --------------------------------------------------------
    fx = np.array([0.0, -0.0, 1.5, -1.5, 2.5, -2.7, 127.9, 128.0, -129.0, 300.0,
                   3e9, -3e9, 1e20, np.inf, -np.inf, np.nan], f32)
    emit("convert_f32_to_int", "convert f32 to integers: truncate, saturate, NaN to 0",
         lambda x: (x.astype(jnp.int8), x.astype(jnp.int32), x.astype(jnp.int64),
                    x.astype(jnp.uint8), x.astype(jnp.uint32), x.astype(jnp.bool_)),
         [("values", [fx])])
    emit("convert_f32_to_small", "convert f32 to bf16, f16, f8e4m3fn, f8e5m2, f64 (RNE)",
         lambda x: (x.astype(jnp.bfloat16), x.astype(jnp.float16),
                    x.astype(jnp.float8_e4m3fn), x.astype(jnp.float8_e5m2),
                    x.astype(jnp.float64)),
         [("values", [np.concatenate([fx, np.array([1.00390625, 1.01171875, 65519.0,
                                                    65520.0, 449.0, 1e-8], f32)])])])
    ix = np.array([0, 1, -1, 127, -128, 255, 256, 16777217, -16777217, 2**31 - 1,
                   -2**31, 123456789], np.int64)
    emit("convert_int", "convert s64 to narrower ints (wrap), floats, pred",
         lambda x: (x.astype(jnp.int8), x.astype(jnp.uint8), x.astype(jnp.int32),
                    x.astype(jnp.float32), x.astype(jnp.bfloat16), x.astype(jnp.float64),
                    x.astype(jnp.bool_), x.astype(jnp.float16)),
         [("values", [ix])])
    emit("convert_f64", "convert f64 to f32, bf16, f16 (via f32), s32",
         lambda x: (x.astype(jnp.float32), x.astype(jnp.bfloat16),
                    x.astype(jnp.float16), x.astype(jnp.int32)),
         [("values", [np.array([1.0000000596046448, 1.00390625000001, 0.1, -7.9,
                                1e300, -1e-300, 65504.00001, np.nan], f64)])])
    emit("bitcast_convert", "bitcast-convert f32 <-> s32/u32, f32 -> u16x2, u8x4 -> u32",
         lambda x, y: (lax.bitcast_convert_type(x, jnp.int32),
                       lax.bitcast_convert_type(x, jnp.uint16),
                       lax.bitcast_convert_type(y, jnp.uint32)),
         [("values", [np.array([1.0, -2.0, 0.0, np.inf], f32),
                      np.arange(16, dtype=np.uint8).reshape(4, 4)])])
    bitcast_convert_widths()
    emit("reduce_precision", "reduce-precision to e5m10 and e8m7 and e4m3",
         lambda x: (lax.reduce_precision(x, exponent_bits=5, mantissa_bits=10),
                    lax.reduce_precision(x, exponent_bits=8, mantissa_bits=7),
                    lax.reduce_precision(x, exponent_bits=4, mantissa_bits=3)),
         [("values", [np.concatenate([SPECIAL, np.array([1.0009765625, 1.00048828125,
                                                          70000.0, 1e-6, 3.14159], f32)])])])

    # --- clamp, select --------------------------------------------------
    emit("clamp", "clamp with array and scalar bounds, NaN",
         lambda lo, x, hi: (lax.clamp(lo, x, hi), lax.clamp(np.float32(-1), x, np.float32(1))),
         [("values", [np.array([0, 0, 0, 0, np.nan], f32), np.array([-1, 0.5, 2, np.nan, 1], f32),
                      np.array([1, 1, 1, 1, 1], f32)])])
    emit("select", "select elementwise and with a scalar predicate",
         lambda p, x, y: (lax.select(p, x, y), jnp.where(p[0], x, y)),
         [("values", [np.array([True, False, True, False]), np.arange(4, dtype=np.int32),
                      -np.arange(4, dtype=np.int32)])])

    # --- complex ----------------------------------------------------------
    ca = np.array([1 + 2j, -3 + 0.5j, 0j, 2 - 1j], np.complex64)
    cb = np.array([0.5 - 1j, 2 + 2j, 1 + 0j, -1 - 1j], np.complex64)
    emit("complex_ops", "complex arithmetic, abs, real, imag, exp, log, sqrt, compare",
         lambda x, y: (x + y, x - y, x * y, x / y, lax.abs(x), lax.real(x), lax.imag(x),
                       lax.exp(x), lax.log(y), lax.sqrt(x), lax.eq(x, y), lax.ne(x, y),
                       lax.complex(lax.real(y), lax.imag(x)), lax.neg(x), lax.sign(x)),
         [("values", [ca, cb])], (1e-6, 1e-6))

    # --- shapes -----------------------------------------------------------
    x = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    emit("transpose_reshape", "transpose, reshape, reverse, broadcast, slice with strides",
         lambda x: (lax.transpose(x, (2, 0, 1)), x.reshape(4, 6), lax.rev(x, (0, 2)),
                    lax.broadcast_in_dim(x[0, :, 0], (2, 3, 5), (1,)),
                    lax.slice(x, (0, 1, 0), (2, 3, 4), (1, 1, 3))),
         [("iota", [x])])
    emit("pad", "pad with negative edges and interior padding",
         lambda x: (lax.pad(x, np.float32(-1), [(1, 2, 1), (-1, 1, 0)]),
                    lax.pad(x, np.float32(9), [(-2, -1, 2), (2, -2, 1)])),
         [("values", [np.arange(12, dtype=np.float32).reshape(3, 4)])])
    emit("concatenate", "concatenate along each dimension",
         lambda a, b: (lax.concatenate([a, b, a], 0), lax.concatenate([a, a], 1)),
         [("values", [np.arange(6, dtype=np.int32).reshape(2, 3),
                      100 + np.arange(6, dtype=np.int32).reshape(2, 3)])])
    emit("iota", "iota along each dimension, several types",
         lambda: (lax.broadcasted_iota(jnp.int32, (2, 3), 0),
                  lax.broadcasted_iota(jnp.float32, (2, 3), 1),
                  lax.broadcasted_iota(jnp.bfloat16, (300,), 0),
                  lax.broadcasted_iota(jnp.uint8, (2, 2, 2), 2)),
         [("none", [])])
    emit("dynamic_slice", "dynamic-slice and dynamic-update-slice with clamped starts",
         lambda x, u, i, j: (lax.dynamic_slice(x, (i, j), (2, 2)),
                             lax.dynamic_update_slice(x, u, (i, j))),
         [("inside", [np.arange(20, dtype=np.float32).reshape(4, 5), -np.ones((2, 2), f32),
                      np.int32(1), np.int32(2)]),
          ("clamped_high", [np.arange(20, dtype=np.float32).reshape(4, 5), -np.ones((2, 2), f32),
                            np.int32(7), np.int32(100)]),
          ("clamped_low", [np.arange(20, dtype=np.float32).reshape(4, 5), -np.ones((2, 2), f32),
                           np.int32(-3), np.int32(-1)])])

    # --- reductions -------------------------------------------------------
    x = r((3, 4, 5))
    emit("reduce", "reduce sum/max/min/prod over several dimension sets",
         lambda x: (jnp.sum(x, axis=1), jnp.max(x, axis=(0, 2)), jnp.min(x),
                    jnp.prod(x, axis=2), jnp.sum(x.astype(jnp.bfloat16), axis=2)),
         [("random", [x])], (1e-5, 1e-5))
    emit("reduce_variadic", "variadic reduce: argmax (value, index)",
         lambda x: jnp.argmax(x, axis=1), [("random", [r((4, 7))])])
    emit("reduce_window", "reduce-window with strides, padding and dilation",
         lambda x: (lax.reduce_window(x, -jnp.inf, lax.max, (2, 2), (1, 2), ((1, 0), (0, 1))),
                    lax.reduce_window(x, 0.0, lax.add, (3, 2), (2, 1), ((1, 1), (1, 1)),
                                      base_dilation=(2, 1), window_dilation=(1, 2))),
         [("values", [np.arange(20, dtype=np.float32).reshape(4, 5)])])
    emit("select_and_scatter", "select-and-scatter (max pool gradient)",
         lambda x, g: jax.vjp(lambda y: lax.reduce_window(y, -jnp.inf, lax.max, (2, 2), (2, 2),
                                                         "VALID"), x)[1](g)[0],
         [("values", [r((4, 6)), r((2, 3))])], (1e-6, 1e-6))

    # --- dot and convolution ------------------------------------------------
    emit("dot_general", "dot with batch, multiple contracting and free dimensions",
         lambda a, b: (lax.dot_general(a, b, (((2,), (1,)), ((0,), (0,)))),
                       lax.dot_general(a, b, (((1, 2), (2, 1)), ((), ()))),
                       jnp.dot(a[0], b[0])),
         [("random", [r((2, 3, 4)), r((2, 4, 3))])], (1e-5, 1e-5))
    emit("dot_types", "dot of s8 into s32, bf16 into f32, and integer wrap",
         lambda a, b, c, d: (lax.dot(a, b, preferred_element_type=jnp.int32),
                             lax.dot(c, d, preferred_element_type=jnp.float32)),
         [("values", [np.array([[127, -128], [5, 6]], np.int8), np.array([[127, 1], [-128, 2]], np.int8),
                      r((2, 3)).astype(bf16), r((3, 2)).astype(bf16)])], (1e-6, 1e-6))
    emit("conv2d", "convolution NHWC/HWIO with stride, padding, dilations",
         lambda x, w: (lax.conv_general_dilated(x, w, (2, 1), ((1, 1), (0, 2)),
                                                lhs_dilation=(1, 2), rhs_dilation=(2, 1),
                                                dimension_numbers=("NHWC", "HWIO", "NHWC")),
                       lax.conv_general_dilated(x, w, (1, 1), "SAME",
                                                dimension_numbers=("NHWC", "HWIO", "NCHW"))),
         [("random", [r((2, 5, 6, 3)), r((3, 2, 3, 4))])], (1e-5, 1e-5))
    emit("conv_groups", "convolution with feature groups (depthwise) and batch groups",
         lambda x, w, y, v: (lax.conv_general_dilated(x, w, (1, 1), "VALID",
                                                      dimension_numbers=("NCHW", "OIHW", "NCHW"),
                                                      feature_group_count=2),
                             lax.conv_general_dilated(y, v, (1,), "VALID",
                                                      dimension_numbers=("NCH", "OIH", "NCH"),
                                                      batch_group_count=2)),
         [("random", [r((1, 4, 4, 4)), r((6, 2, 2, 2)), r((4, 3, 5)), r((4, 3, 2))])],
         (1e-5, 1e-5))
    emit("conv1d_int", "integer convolution s32",
         lambda x, w: lax.conv_general_dilated(x, w, (1,), ((1, 1),),
                                               dimension_numbers=("NWC", "WIO", "NWC")),
         [("values", [np.arange(12, dtype=np.int32).reshape(1, 6, 2) - 5,
                      np.array([[[1, -1]], [[2, 0]], [[-3, 1]]], np.int32).reshape(3, 2, 1)])])

    # --- gather / scatter ---------------------------------------------------
    x = np.arange(30, dtype=np.float32).reshape(5, 6)
    idx = np.array([[0, 1], [4, 5], [2, 3], [-1, 7]], np.int32)
    gd = lax.GatherDimensionNumbers(offset_dims=(1,), collapsed_slice_dims=(0,),
                                    start_index_map=(0, 1))
    emit("gather", "gather with offset and collapsed dims, clamped out-of-range starts",
         lambda x, i: (lax.gather(x, i, gd, (1, 3), mode="clip"), x[i[:, 0] % 5]),
         [("values", [x, idx])])
    sd = lax.ScatterDimensionNumbers(update_window_dims=(1,), inserted_window_dims=(0,),
                                     scatter_dims_to_operand_dims=(0,))
    emit("scatter", "scatter add with duplicates and skipped out-of-range windows; scatter set",
         lambda x, i, u: (lax.scatter_add(x, i, u, sd, mode="drop"),
                          lax.scatter(x, i, u, sd, mode="drop"),
                          x.at[i[:, 0]].max(u, mode="drop")),
         [("values", [np.zeros((4, 3), f32), np.array([[1], [3], [1], [9], [-1]], np.int32),
                      np.arange(15, dtype=np.float32).reshape(5, 3)])])
    gdb = lax.GatherDimensionNumbers(offset_dims=(), collapsed_slice_dims=(1,),
                                     start_index_map=(1,), operand_batching_dims=(0,),
                                     start_indices_batching_dims=(0,))
    emit("gather_batching", "gather with operand and start-indices batching dimensions",
         lambda x, i: lax.gather(x, i, gdb, (1, 1), mode="clip"),
         [("values", [np.arange(12, dtype=np.int32).reshape(3, 4),
                      np.array([[[1], [3]], [[0], [2]], [[3], [3]]], np.int32)])])

    # --- sort, top-k ----------------------------------------------------------
    emit("sort", "sort ascending with NaN (total order), two-operand sort, descending",
         lambda x, y: (jnp.sort(x), lax.sort((x, y), num_keys=1), jnp.sort(x, axis=0)[::-1]),
         [("values", [np.array([[3, 1, np.nan, -0.0, 0.0, -np.inf], [2, 2, 1, 5, -1, 0]], f32),
                      np.arange(12, dtype=np.int32).reshape(2, 6)])])
    emit("top_k", "top_k (values and indices, ties by index)",
         lambda x: lax.top_k(x, 3),
         [("values", [np.array([[1, 5, 3, 5, 2], [0, -1, -2, 7, 7]], f32)])])

    # --- control flow -----------------------------------------------------------
    emit("while_loop", "while loop: fori_loop accumulating",
         lambda n, x: lax.fori_loop(0, n, lambda i, c: c * 2 + i, x),
         [("five", [np.int32(5), np.float32(1)]), ("zero", [np.int32(0), np.float32(3)])])
    emit("conditional_index", "conditional with an index (out of range clamps to the last branch)",
         lambda i, x: lax.switch(i, [lambda v: v + 1, lambda v: v * 10, lambda v: -v], x),
         [("b0", [np.int32(0), np.float32(2)]), ("b2", [np.int32(2), np.float32(2)]),
          ("neg", [np.int32(-4), np.float32(2)]), ("big", [np.int32(9), np.float32(2)])])
    emit("conditional_pred", "conditional with a predicate",
         lambda p, x: lax.cond(p, lambda v: v * 3, lambda v: v - 1, x),
         [("true", [np.bool_(True), np.float32(2)]), ("false", [np.bool_(False), np.float32(2)])])
    emit("map_call", "scan lowered to while with dynamic slices and updates",
         lambda x: lax.cumsum(x) + lax.scan(lambda c, v: (c + v, c * v), 0.0, x)[1],
         [("values", [np.array([1, 2, 3, 4, 5], f32)])])

    # --- rng-bit-generator, bit-exact -------------------------------------------
    for alg, an in [(lax.RandomAlgorithm.RNG_THREE_FRY, "threefry"),
                    (lax.RandomAlgorithm.RNG_PHILOX, "philox"),
                    (lax.RandomAlgorithm.RNG_DEFAULT, "default")]:
        for dt, dn, shape in [(jnp.uint32, "u32", (3, 5)), (jnp.uint64, "u64", (7,)),
                              (jnp.uint32, "u32odd", (3, 3)), (jnp.uint8, "u8", (2, 3)),
                              (jnp.uint32, "u32scalar", ())]:
            emit(f"rng_{an}_{dn}", f"rng-bit-generator {an} {dn}{list(shape)}: bit-exact",
                 lambda k, dt=dt, shape=shape, alg=alg: lax.rng_bit_generator(k, shape, dt, alg),
                 [("key1", [np.array([1, 2], np.uint64)]),
                  ("key2", [np.array([0xDEADBEEF12345678, 0xFFFFFFFFFFFFFFFF], np.uint64)])])

    # --- fft (cholesky and triangular-solve lower to LAPACK calls on the CPU;
    # their tests are in gen_numpy.py) ------------------------------------------
    emit("fft", "fft, ifft, rfft, irfft (1-D and 2-D)",
         lambda c, x: (jnp.fft.fft(c), jnp.fft.ifft(c), jnp.fft.rfft(x), jnp.fft.irfft(jnp.fft.rfft(x)),
                       jnp.fft.fft2(c.reshape(2, 4)), jnp.fft.rfft2(x.reshape(2, 4)),
                       jnp.fft.irfft2(jnp.fft.rfft2(x.reshape(2, 4)), s=(2, 4))),
         [("values", [(r(8) + 1j * r(8)).astype(np.complex64), r(8)])], (1e-5, 1e-5))


if __name__ == "__main__":
    main()
