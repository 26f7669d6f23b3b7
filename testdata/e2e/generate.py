#!/usr/bin/env python3
"""generate.py - regenerates the end-to-end test modules in testdata/e2e/.

Each module is a small JAX function compiled once on the CPU with
XLA_FLAGS=--xla_dump_to=DIR; the dump's *.before_optimizations.txt is copied
here as NAME.hlo.  The GPU_CASES are lowered for CUDA instead (no GPU
needed: jit(f).trace(...).lower(lowering_platforms=("cuda",)), as HLO text),
for what only a GPU lowering writes, such as JAX's cu_threefry2x32 kernel
call.  The TPU_CASES are lowered for the TPU the same way (no TPU needed)
for the HLO ops and custom-calls that JAX lowers to LAPACK calls on the
CPU and to cuSOLVER on the GPU: cholesky, triangular-solve, and the "Qr"
and "ProductOfElementaryHouseholderReflectors" custom-calls of
jnp.linalg.qr.  Not run by the tests (the .hlo files are checked in):

    python3 testdata/e2e/generate.py
"""
import glob
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))

# name -> python source defining f and args (evaluated in a fresh process so
# that each gets its own dump directory).
CASES = {
    # A decode loop over a donated KV cache (input_output_alias): the cache
    # stays in the parameter's buffer, updated in place every step.
    "kv_cache_decode": """
import jax.lax as lax
def f(cache, q, kv):
    def step(i, c):
        c = lax.dynamic_update_slice(c, kv[i][None, :], (i, 0))
        s = jax.nn.softmax(c @ q[i])
        return c * (1.0 + 0.01 * s[:, None])
    return lax.fori_loop(0, 8, step, cache)
args = (jnp.ones((16, 32), jnp.float32), jnp.ones((8, 32), jnp.float32),
        jnp.ones((8, 32), jnp.float32))
jit_kwargs = dict(donate_argnums=(0,))
""",
    # A training step whose saved activations dominate its memory (six
    # 512x64 layers): what xhloc --memory-limit recomputes.
    "deep_mlp_train_step": """
def f(ws, x, y):
    def loss(ws):
        h = x
        for w in ws:
            h = jnp.tanh(h @ w)
        return jnp.mean((h - y) ** 2)
    g = jax.grad(loss)(ws)
    return [w - 0.1 * gw for w, gw in zip(ws, g)]
args = ([jnp.ones((64, 64), jnp.float32)] * 6, jnp.ones((512, 64), jnp.float32),
        jnp.ones((512, 64), jnp.float32))
""",
    # A scan whose stacked output is written one row per step.
    "scan_rnn": """
import jax.lax as lax
def f(h0, xs, w, u):
    def step(h, x):
        h = jnp.tanh(h @ w + x @ u)
        return h, h
    return lax.scan(step, h0, xs)
args = (jnp.ones((4, 16), jnp.float32), jnp.ones((12, 4, 8), jnp.float32),
        jnp.ones((16, 16), jnp.float32), jnp.ones((8, 16), jnp.float32))
""",
    # A loop writing blocks of two rows at starts 3*i - 2 (-2, which JAX
    # wraps to 14, then 1 to 19 into 16 rows: 16 and 19 are clamped to 14),
    # each update computed by fused elementwise ops; the buffer is written
    # in place every step.
    "dus_clamped_loop": """
import jax.lax as lax
def f(buf, xs, s):
    def step(i, b):
        u = jnp.tanh(xs[i % 4] * s + 1.0)
        return lax.dynamic_update_slice(b, u, (3 * i - 2, 0))
    return lax.fori_loop(0, 8, step, buf)
args = (jnp.ones((16, 32), jnp.float32), jnp.ones((4, 2, 32), jnp.float32),
        jnp.ones((), jnp.float32))
""",
    # A bf16 cache updated in place by a loop, the update bf16[1,2,64] a
    # convert of f32 math, its middle start i + 1 clamped to 1 from i = 1.
    "dus_bf16_cache": """
import jax.lax as lax
def f(cache, k, w):
    def step(i, c):
        u = (k[i] * w - 0.5).astype(jnp.bfloat16)
        return lax.dynamic_update_slice(c, u[None], (i, i + 1, 0))
    return lax.fori_loop(0, 6, step, cache)
args = (jnp.ones((8, 3, 64), jnp.bfloat16), jnp.ones((6, 2, 64), jnp.float32),
        jnp.ones((64,), jnp.float32))
""",
    # A loop adding rows into an accumulator with a scatter (.at[].add)
    # that runs in place: the accumulator is never copied.
    "scatter_add_loop": """
import jax.lax as lax
def f(acc, idx, v):
    def step(i, a):
        return a.at[idx[i]].add(v[i] * 2.0)
    return lax.fori_loop(0, 6, step, acc)
args = (jnp.ones((64, 16), jnp.float32), jnp.ones((6, 3), jnp.int32),
        jnp.ones((6, 3, 16), jnp.float32))
""",
    "elementwise_chain": """
def f(x, y):
    return jnp.tanh(x * y + 1.0) - jnp.exp(-x) / (1.0 + y * y)
args = (jnp.ones((64, 48), jnp.float32), jnp.ones((64, 48), jnp.float32))
""",
    "broadcast": """
def f(x, b, s):
    return x * b[None, :] + b[:, None][:32, :1] * s
args = (jnp.ones((32, 40), jnp.float32), jnp.ones((40,), jnp.float32),
        jnp.ones((), jnp.float32))
""",
    "reduce_row": """
def f(x):
    return jnp.sum(x, axis=1)
args = (jnp.ones((96, 130), jnp.float32),)
""",
    "reduce_column": """
def f(x):
    return jnp.max(x, axis=0)
args = (jnp.ones((130, 96), jnp.float32),)
""",
    "reduce_full": """
def f(x):
    return jnp.sum(x * x)
args = (jnp.ones((33, 70), jnp.float32),)
""",
    "softmax": """
def f(x):
    return jax.nn.softmax(x, axis=-1)
args = (jnp.ones((16, 100), jnp.float32),)
""",
    "layer_norm": """
def f(x, g, b):
    m = jnp.mean(x, axis=-1, keepdims=True)
    v = jnp.mean((x - m) ** 2, axis=-1, keepdims=True)
    return (x - m) * jax.lax.rsqrt(v + 1e-5) * g + b
args = (jnp.ones((8, 64), jnp.float32), jnp.ones((64,), jnp.float32),
        jnp.ones((64,), jnp.float32))
""",
    # Row normalizations with their prologue and epilogue: each is one GPU
    # kernel (normalization fusion).
    "rms_norm": """
def f(x, w):
    ms = jnp.mean(x * x, axis=-1, keepdims=True)
    return x * jax.lax.rsqrt(ms + 1e-6) * w
args = (jnp.ones((16, 256), jnp.float32), jnp.ones((256,), jnp.float32))
""",
    "layer_norm_gelu": """
def f(x, g, b):
    m = jnp.mean(x, axis=-1, keepdims=True)
    v = jnp.mean((x - m) ** 2, axis=-1, keepdims=True)
    return jax.nn.gelu((x - m) * jax.lax.rsqrt(v + 1e-5) * g + b,
                       approximate=True)
args = (jnp.ones((12, 96), jnp.float32), jnp.ones((96,), jnp.float32),
        jnp.ones((96,), jnp.float32))
""",
    # Attention whose softmax is divided after the PV product (as MaxText
    # does): the max, exponentials and sums are one kernel with two outputs.
    "attention_late_divide": """
def f(q, k, v):
    s = jnp.einsum("bqd,bkd->bqk", q, k) / 8.0
    m = jnp.max(s, axis=-1, keepdims=True)
    e = jnp.exp(s - m)
    o = jnp.einsum("bqk,bkd->bqd", e, v)
    return o / jnp.sum(e, axis=-1, keepdims=True)
args = (jnp.ones((2, 64, 32), jnp.float32), jnp.ones((2, 64, 32), jnp.float32),
        jnp.ones((2, 64, 32), jnp.float32))
""",
    "softmax_bf16": """
def f(x):
    return jax.nn.softmax(x, axis=-1)
args = (jnp.ones((6, 1000), jnp.bfloat16),)
""",
    "gelu_tanh": """
def f(x):
    return jax.nn.gelu(x, approximate=True)
args = (jnp.ones((4, 256), jnp.float32),)
""",
    "gelu_erf": """
def f(x):
    return jax.nn.gelu(x, approximate=False)
args = (jnp.ones((4, 256), jnp.float32),)
""",
    "mlp": """
def f(x, w1, b1, w2, b2):
    h = jax.nn.relu(x @ w1 + b1)
    return h @ w2 + b2
args = (jnp.ones((8, 32), jnp.float32), jnp.ones((32, 64), jnp.float32),
        jnp.ones((64,), jnp.float32), jnp.ones((64, 16), jnp.float32),
        jnp.ones((16,), jnp.float32))
""",
    "mlp_bf16": """
def f(x, w1, b1, w2, b2):
    h = jax.nn.relu(x @ w1 + b1)
    return h @ w2 + b2
bf = jnp.bfloat16
args = (jnp.ones((8, 32), bf), jnp.ones((32, 64), bf), jnp.ones((64,), bf),
        jnp.ones((64, 16), bf), jnp.ones((16,), bf))
""",
    "transpose": """
def f(x):
    return jnp.transpose(x, (1, 0)) * 2.0
args = (jnp.ones((48, 80), jnp.float32),)
""",
    "transpose_3d": """
def f(x):
    return jnp.transpose(x, (2, 0, 1)) + 1.0
args = (jnp.ones((6, 10, 12), jnp.float32),)
""",
    "while_loop": """
def f(x):
    def body(i, c):
        return c * 0.5 + jnp.sin(c) + i.astype(jnp.float32)
    return jax.lax.fori_loop(0, 5, body, x)
args = (jnp.ones((32,), jnp.float32),)
""",
    "while_swap": """
def f(a, b):
    # The loop state is permuted every iteration (a, b) -> (b, a + b): the
    # copies back into the state must act as one parallel assignment.
    def body(i, c):
        x, y, z = c
        return (y, z, x * 0.5 + y)
    return jax.lax.fori_loop(0, 4, body, (a, b, a - b))
args = (jnp.ones((8,), jnp.float32), jnp.ones((8,), jnp.float32))
""",
    "fill": """
def f(x):
    return (jnp.maximum(x, 0.0), jnp.zeros((4, 8), jnp.float32),
            jnp.full((6, 2), 1.5, jnp.bfloat16), jnp.full((3, 4), -3, jnp.int8))
args = (jnp.ones((4, 8), jnp.float32),)
""",
    "conditional": """
def f(p, x):
    return jax.lax.cond(p > 0, lambda v: v * 2.0, lambda v: v - 1.0, x)
args = (jnp.ones((), jnp.int32), jnp.ones((16,), jnp.float32))
""",
    "dot_transposed": """
def f(x, y):
    # lhs contracted on its major dimension: a column-major GEMM operand.
    return x.T @ y
args = (jnp.ones((40, 24), jnp.float32), jnp.ones((40, 36), jnp.float32))
""",
    "dot_batched": """
def f(x, y):
    return jnp.einsum("bij,bjk->bik", x, y)
args = (jnp.ones((3, 20, 28), jnp.float32), jnp.ones((3, 28, 12), jnp.float32))
""",
    "dot_batch_minor": """
def f(x, y):
    # batch dimension in the middle of both operands.
    return jnp.einsum("ibj,jbk->bik", x, y)
args = (jnp.ones((10, 4, 16), jnp.float32), jnp.ones((16, 4, 6), jnp.float32))
""",
    "dot_bias_relu": """
def f(x, w, b):
    return jax.nn.relu(x @ w + b)
args = (jnp.ones((32, 48), jnp.float32), jnp.ones((48, 24), jnp.float32),
        jnp.ones((24,), jnp.float32))
""",
    "dot_bias_gelu_tanh": """
def f(x, w, b):
    return jax.nn.gelu(x @ w + b, approximate=True)
args = (jnp.ones((16, 32), jnp.float32), jnp.ones((32, 40), jnp.float32),
        jnp.ones((40,), jnp.float32))
""",
    "dot_gelu_erf": """
def f(x, w):
    return jax.nn.gelu(x @ w, approximate=False)
args = (jnp.ones((16, 32), jnp.float32), jnp.ones((32, 40), jnp.float32))
""",
    "dot_scale_accumulate": """
def f(x, w, c):
    return 0.5 * (x @ w) + c
args = (jnp.ones((24, 16), jnp.float32), jnp.ones((16, 20), jnp.float32),
        jnp.ones((24, 20), jnp.float32))
""",
    "dot_f64": """
jax.config.update("jax_enable_x64", True)
def f(x, y):
    return x @ y
args = (jnp.ones((12, 20), jnp.float64), jnp.ones((20, 8), jnp.float64))
""",
    "dot_f16": """
def f(x, y):
    return x @ y
args = (jnp.ones((24, 32), jnp.float16), jnp.ones((32, 16), jnp.float16))
""",
    "dot_matvec": """
def f(x, v):
    return x @ v
args = (jnp.ones((48, 64), jnp.float32), jnp.ones((64,), jnp.float32))
""",
    "conv2d_nhwc_bias_relu": """
def f(x, w, b):
    y = jax.lax.conv_general_dilated(x, w, (1, 1), "SAME",
                                     dimension_numbers=("NHWC", "HWIO", "NHWC"))
    return jax.nn.relu(y + b)
args = (jnp.ones((2, 10, 10, 8), jnp.float32), jnp.ones((3, 3, 8, 16), jnp.float32),
        jnp.ones((16,), jnp.float32))
""",
    "conv2d_nchw_strided": """
def f(x, w):
    return jax.lax.conv_general_dilated(x, w, (2, 2), ((1, 0), (2, 1)),
                                        rhs_dilation=(1, 2))
args = (jnp.ones((2, 3, 13, 11), jnp.float32), jnp.ones((5, 3, 3, 3), jnp.float32))
""",
    "conv_depthwise": """
def f(x, w):
    return jax.lax.conv_general_dilated(x, w, (1, 1), "SAME",
                                        dimension_numbers=("NHWC", "HWIO", "NHWC"),
                                        feature_group_count=6)
args = (jnp.ones((1, 9, 9, 6), jnp.float32), jnp.ones((3, 3, 1, 6), jnp.float32))
""",
    "conv1d_dilated": """
def f(x, w):
    return jax.lax.conv_general_dilated(x, w, (1,), "VALID", rhs_dilation=(3,))
args = (jnp.ones((2, 4, 30), jnp.float32), jnp.ones((6, 4, 5), jnp.float32))
""",
    "conv3d": """
def f(x, w):
    return jax.lax.conv_general_dilated(x, w, (1, 2, 1), "SAME")
args = (jnp.ones((1, 2, 6, 7, 5), jnp.float32), jnp.ones((3, 2, 3, 3, 2), jnp.float32))
""",
    "conv_grad": """
def f(x, w, g):
    def conv(x, w):
        return jax.lax.conv_general_dilated(x, w, (2, 2), "SAME",
                                            dimension_numbers=("NHWC", "HWIO", "NHWC"))
    _, vjp = jax.vjp(conv, x, w)
    return vjp(g)
args = (jnp.ones((2, 12, 12, 4), jnp.float32), jnp.ones((3, 3, 4, 8), jnp.float32),
        jnp.ones((2, 6, 6, 8), jnp.float32))
""",
    "conv_bf16": """
def f(x, w):
    return jax.lax.conv_general_dilated(x, w, (1, 1), "SAME",
                                        dimension_numbers=("NHWC", "HWIO", "NHWC"))
args = (jnp.ones((2, 8, 8, 8), jnp.bfloat16), jnp.ones((3, 3, 8, 8), jnp.bfloat16))
""",
    "mlp_train_step": """
def f(params, x, y):
    def loss(p):
        h = jax.nn.relu(x @ p[0] + p[1])
        o = h @ p[2] + p[3]
        return jnp.mean((o - y) ** 2)
    g = jax.grad(loss)(params)
    return [p - 0.01 * gp for p, gp in zip(params, g)]
args = ([jnp.ones((32, 64), jnp.float32), jnp.ones((64,), jnp.float32),
         jnp.ones((64, 10), jnp.float32), jnp.ones((10,), jnp.float32)],
        jnp.ones((16, 32), jnp.float32), jnp.ones((16, 10), jnp.float32))
""",
    "conv_f16": """
def f(x, w):
    return jax.lax.conv_general_dilated(x, w, (2, 1), ((1, 1), (0, 2)))
args = (jnp.ones((2, 3, 9, 8), jnp.float16), jnp.ones((4, 3, 3, 3), jnp.float16))
""",
    "conv_f64": """
jax.config.update("jax_enable_x64", True)
def f(x, w):
    return jax.lax.conv_general_dilated(x, w, (1, 1), "SAME",
                                        dimension_numbers=("NHWC", "HWIO", "NHWC"))
args = (jnp.ones((1, 6, 6, 3), jnp.float64), jnp.ones((3, 3, 3, 2), jnp.float64))
""",
    "conv_grad_nchw_dilated": """
def f(x, w, g):
    def conv(x, w):
        return jax.lax.conv_general_dilated(x, w, (2, 2), ((2, 1), (1, 2)),
                                            rhs_dilation=(2, 1))
    _, vjp = jax.vjp(conv, x, w)
    return vjp(g)
args = (jnp.ones((2, 3, 13, 12), jnp.float32), jnp.ones((5, 3, 3, 3), jnp.float32),
        jnp.ones((2, 5, 6, 7), jnp.float32))
""",
    "dot_bf16_f32_out": """
def f(x, y):
    return jax.lax.dot_general(x, y, (((1,), (0,)), ((), ())),
                               preferred_element_type=jnp.float32)
args = (jnp.ones((24, 40), jnp.bfloat16), jnp.ones((40, 16), jnp.bfloat16))
""",
    "cumsum": """
def f(x):
    return jnp.cumsum(x, axis=1)
args = (jnp.ones((16, 1000), jnp.float32),)
""",
    "cumsum_reverse": """
def f(x):
    return jax.lax.cumsum(x, axis=0, reverse=True)
args = (jnp.ones((300, 24), jnp.float32),)
""",
    "sort_f32": """
def f(x):
    return jnp.sort(x, axis=-1)
args = (jnp.ones((8, 300), jnp.float32),)
""",
    "sort_axis0": """
def f(x):
    return jnp.sort(x, axis=0)
args = (jnp.ones((70, 12), jnp.float32),)
""",
    "sort_s32_unstable": """
def f(x):
    return jax.lax.sort(x, dimension=1, is_stable=False)
args = (jnp.ones((5, 33), jnp.int32),)
""",
    "sort_bf16": """
def f(x):
    return jnp.sort(x, axis=-1, descending=True)
args = (jnp.ones((4, 64), jnp.bfloat16),)
""",
    "argsort": """
def f(x):
    return jnp.argsort(x, axis=-1, stable=True)
args = (jnp.ones((6, 100), jnp.float32),)
""",
    "sort_key_value": """
def f(k, v, w):
    return jax.lax.sort((k, v, w), dimension=1, is_stable=True, num_keys=1)
args = (jnp.ones((3, 50), jnp.int32), jnp.ones((3, 50), jnp.float32),
        jnp.ones((3, 50), jnp.bfloat16))
""",
    "sort_two_keys": """
def f(k1, k2, v):
    return jax.lax.sort((k1, k2, v), dimension=0, is_stable=False, num_keys=2)
args = (jnp.ones((40, 3), jnp.int32), jnp.ones((40, 3), jnp.float32),
        jnp.ones((40, 3), jnp.float32))
""",
    "sort_large_row": """
def f(x):
    return jnp.sort(x * 2.0, axis=-1)
args = (jnp.ones((3, 5000), jnp.float32),)
""",
    "top_k": """
def f(x):
    return jax.lax.top_k(x, 5)
args = (jnp.ones((6, 200), jnp.float32),)
""",
    "top_k_1d": """
def f(x):
    return jax.lax.top_k(x, 16)
args = (jnp.ones((1000,), jnp.float32),)
""",
    "sort_nan_keys": """
def f(x):
    # sqrt of the negative half of the inputs: NaN keys
    k = jnp.sqrt(x) - 0.5
    return jnp.sort(k, axis=-1), jnp.argsort(jnp.round(k * 4.0), axis=-1, stable=True)
args = (jnp.ones((6, 257), jnp.float32),)
""",
    "top_k_nan_ties": """
def f(x):
    # NaNs of both signs, made explicitly: the sign of sqrt's NaN for a
    # negative input is the machine's (x86 gives -NaN, a GPU +NaN), and the
    # total order puts -NaN first and +NaN last
    v = jnp.round(jnp.sqrt(jnp.abs(x)) * 4.0)
    nan = jnp.float32(jnp.nan)
    return jax.lax.top_k(jnp.where(x < -0.1, -nan, jnp.where(x < 0.0, nan, v)), 7)
args = (jnp.ones((5, 90), jnp.float32),)
""",
    "cumlogsumexp": """
def f(x):
    return jax.lax.cumlogsumexp(x, axis=1)
args = (jnp.ones((4, 200), jnp.float32),)
""",
    "reduce_precision_fused": """
def f(x, y):
    h = jax.lax.reduce_precision(x * 3.0 + y, exponent_bits=5, mantissa_bits=2)
    b = jax.lax.reduce_precision(x.astype(jnp.bfloat16) * 1.7, exponent_bits=4,
                                 mantissa_bits=3)
    return h - jnp.sum(h, axis=1, keepdims=True), b
args = (jnp.ones((48, 80), jnp.float32), jnp.ones((48, 80), jnp.float32))
""",
    "f8_scale_cast": """
def f(x, s, w):
    q = (x / s).astype(jnp.float8_e4m3fn)
    k = (x * 1000.0).astype(jnp.float8_e5m2)
    r = q.astype(jnp.float32) * s + k.astype(jnp.bfloat16).astype(jnp.float32)
    e = w.astype(jnp.float8_e4m3fnuz).astype(jnp.float16) * 2.0
    return r, q, jnp.max(e, axis=0)
args = (jnp.ones((64, 96), jnp.float32), jnp.ones((), jnp.float32),
        jnp.ones((32, 96), jnp.float8_e5m2))
""",
    "int4_dequant": """
def f(w, s, x, u):
    wf = w.astype(jnp.float32) * s[None, :]
    t = (w + w) * 3 - (u.astype(jnp.int4) >> 1)
    return x * wf + 1.0, t, (u + jnp.uint4(9)).astype(jnp.int32)
args = (jnp.ones((40, 64), jnp.int4), jnp.ones((64,), jnp.float32),
        jnp.ones((40, 64), jnp.float32), jnp.ones((40, 64), jnp.uint4))
""",
    "maxpool_grad": """
def f(x, g):
    pool = lambda v: jax.lax.reduce_window(v, -jnp.inf, jax.lax.max,
                                           (1, 3, 3, 1), (1, 2, 2, 1), "SAME")
    y, vjp = jax.vjp(pool, x)
    return vjp(g * y)[0] * 2.0
args = (jnp.ones((2, 15, 12, 8), jnp.float32), jnp.ones((2, 8, 6, 8), jnp.float32))
""",
    "complex_elementwise": """
jax.config.update("jax_enable_x64", True)   # c128
def f(x, y, t, z):
    w = x * y + jnp.conj(x) / (y + 2.0)
    r = jnp.exp(1j * t.astype(jnp.complex64)) * jnp.abs(w)
    s = jnp.sum(w, axis=1)
    return w, r, s, jnp.real(w) - jnp.imag(r), (z * z - z / (z + 3.0)).astype(jnp.complex64)
args = (jnp.ones((24, 40), jnp.complex64), jnp.ones((24, 40), jnp.complex64),
        jnp.ones((24, 40), jnp.float32), jnp.ones((16,), jnp.complex128))
""",
    "rng_bits": """
jax.config.update("jax_enable_x64", True)   # u64 keys and bits
def f(k):
    s1, a = jax.lax.rng_bit_generator(k, (33, 20), jnp.uint32)
    s2, b = jax.lax.rng_bit_generator(s1, (7, 9), jnp.uint64,
                                      algorithm=jax.lax.RandomAlgorithm.RNG_PHILOX)
    return s2, a ^ jnp.uint32(5), b
args = (jnp.ones((2,), jnp.uint64),)
""",
    "fft": """
def f(x, c):
    return (jnp.fft.rfft(x, axis=-1), jnp.fft.irfft2(jnp.fft.rfft2(x), s=x.shape[-2:]),
            jnp.fft.fftn(c, axes=(0, 1, 2)), jnp.fft.ifft(c[..., 0]))
args = (jnp.ones((4, 6, 10), jnp.float32), jnp.ones((3, 4, 5, 2), jnp.complex64))
""",
}

# name -> python source defining f and args, lowered for CUDA.
GPU_CASES = {
    "threefry_gpu_kernel": """
jax.config.update("jax_threefry_gpu_kernel_lowering", True)
def f(key, x):
    return x * jax.random.uniform(jax.random.wrap_key_data(key), x.shape)
args = (jax.ShapeDtypeStruct((2,), jnp.uint32),
        jax.ShapeDtypeStruct((8,), jnp.float32))
""",
}

# name -> python source defining f and args, lowered for the TPU.
TPU_CASES = {
    "linalg": """
from jax import lax
def f(a, b, c):
    # a cholesky of a positive definite matrix, a solve with its factor,
    # the QR of a (tall) and of a batch of complex matrices
    n = a.shape[0]
    l = lax.linalg.cholesky(a @ a.T + n * jnp.eye(n), symmetrize_input=False)
    x = lax.linalg.triangular_solve(l, b, left_side=True, lower=True)
    y = lax.linalg.triangular_solve(l, b.T, left_side=False, lower=True,
                                    transpose_a=True)
    q, r = jnp.linalg.qr(a[:, :5])
    qc, rc = jnp.linalg.qr(c)
    return l, x, y, q, r, qc, rc
args = (jax.ShapeDtypeStruct((8, 8), jnp.float32),
        jax.ShapeDtypeStruct((8, 3), jnp.float32),
        jax.ShapeDtypeStruct((2, 4, 4), jnp.complex64))
""",
}
LOWER_RUNNER = """
import sys
import jax, jax.numpy as jnp
jax.config.update("jax_platforms", "cpu")
{src}
low = jax.jit(f).trace(*args).lower(lowering_platforms=("{platform}",))
open(sys.argv[1], "w").write(low.as_text(dialect="hlo"))
"""

# A case that sets jit_kwargs (donate_argnums: input_output_alias, which
# the CPU dump leaves out) is written as jit(f, **jit_kwargs).lower(...)'s
# HLO text instead of the dump.
RUNNER = """
import sys
import jax, jax.numpy as jnp
jax.config.update("jax_platforms", "cpu")
{src}
low = jax.jit(f, **globals().get("jit_kwargs", {{}})).lower(*args)
if "jit_kwargs" in globals():
    open(sys.argv[1], "w").write(low.as_text(dialect="hlo"))
else:
    low.compile()
"""


def main():
    names = sys.argv[1:] or sorted(CASES) + sorted(GPU_CASES) + sorted(TPU_CASES)
    for name in names:
        if name in GPU_CASES or name in TPU_CASES:
            src, platform = ((GPU_CASES[name], "cuda") if name in GPU_CASES
                             else (TPU_CASES[name], "tpu"))
            out = os.path.join(HERE, name + ".hlo")
            subprocess.run([sys.executable, "-c",
                            LOWER_RUNNER.format(src=src, platform=platform), out],
                           env=dict(os.environ, JAX_PLATFORMS="cpu"),
                           check=True)
            print("wrote", name + ".hlo")
            continue
        with tempfile.TemporaryDirectory() as d:
            env = dict(os.environ, XLA_FLAGS="--xla_dump_to=" + d,
                       JAX_PLATFORMS="cpu")
            out = os.path.join(HERE, name + ".hlo")
            if os.path.exists(out):
                os.remove(out)
            subprocess.run([sys.executable, "-c",
                            RUNNER.format(src=CASES[name]), out],
                           env=env, check=True)
            if os.path.exists(out):
                print("wrote", name + ".hlo")
                continue
            found = sorted(glob.glob(os.path.join(
                d, "*jit_f*.before_optimizations.txt")))
            if not found:
                sys.exit("%s: no before_optimizations dump in %s" % (name, d))
            shutil.copy(found[-1], os.path.join(HERE, name + ".hlo"))
            print("wrote", name + ".hlo")


if __name__ == "__main__":
    main()
