"""programs.py - the benchmark's programs, written with JAX.

Each entry: name -> (group, builder).  A builder returns (f, args): a
function and its example arguments (NumPy arrays, fixed seed); some
builders take sizes, whose defaults are the sizes PROGRAMS uses
(gpu_prepare.py picks smaller ones).  Group "11"
holds the dots and convolutions of issue #11 (library GEMM and convolution
thunks), group "12" the rest of the host backend's suite (issue #12), group
"13" sort and top-k (issue #13).
"""
import numpy as np

import jax
import jax.numpy as jnp
import ml_dtypes

RNG = np.random.default_rng(0)


def rand(shape, dtype=np.float32, scale=1.0):
    x = (RNG.standard_normal(shape) * scale).astype(np.float32)
    return x.astype(dtype)


def matmul(n, dtype):
    def build():
        return (lambda a, b: a @ b), (rand((n, n), dtype), rand((n, n), dtype))
    return build


def batched_matmul():
    return (lambda a, b: jnp.einsum("bij,bjk->bik", a, b),
            (rand((8, 512, 512)), rand((8, 512, 512))))


def conv_block(n=8):
    # ResNet-style: conv3x3+bias+relu, conv3x3+bias, residual add, relu (NHWC).
    def f(x, w1, b1, w2, b2):
        dn = ("NHWC", "HWIO", "NHWC")
        y = jax.lax.conv_general_dilated(x, w1, (1, 1), "SAME", dimension_numbers=dn)
        y = jax.nn.relu(y + b1)
        y = jax.lax.conv_general_dilated(y, w2, (1, 1), "SAME", dimension_numbers=dn)
        return jax.nn.relu(y + b2 + x)
    return f, (rand((n, 56, 56, 64)), rand((3, 3, 64, 64), scale=0.05),
               rand((64,)), rand((3, 3, 64, 64), scale=0.05), rand((64,)))


def mlp_train_step(hidden=1024):
    sizes = [(784, hidden), (hidden, hidden), (hidden, 10)]

    def f(params, x, y):
        def loss(p):
            h = x
            for i in range(0, len(p) - 2, 2):
                h = jax.nn.relu(h @ p[i] + p[i + 1])
            o = h @ p[-2] + p[-1]
            return jnp.mean((o - y) ** 2)
        g = jax.grad(loss)(params)
        return [p - 0.01 * gp for p, gp in zip(params, g)]
    params = []
    for a, b in sizes:
        params += [rand((a, b), scale=1 / np.sqrt(a)), rand((b,), scale=0.1)]
    return f, (params, rand((256, 784)), rand((256, 10)))


def elementwise_chain():
    return (lambda x: jnp.sin(jnp.tanh(x) * jnp.exp(-x * x)) + 0.5 * x,
            (rand((2048, 2048)),))


def softmax(rows=2048, cols=2048):
    return (lambda x: jax.nn.softmax(x, axis=-1)), (rand((rows, cols)),)


def layernorm_gelu(rows=2048, d=1024):
    def f(x, g, b):
        m = jnp.mean(x, axis=-1, keepdims=True)
        v = jnp.mean((x - m) ** 2, axis=-1, keepdims=True)
        return jax.nn.gelu((x - m) * jax.lax.rsqrt(v + 1e-5) * g + b)
    return f, (rand((rows, d)), rand((d,)), rand((d,)))


def row_sum():
    return (lambda x: jnp.sum(x, axis=1)), (rand((4096, 4096)),)


def column_sum():
    return (lambda x: jnp.sum(x, axis=0)), (rand((4096, 4096)),)


def transpose():
    return (lambda x: x.T + 0), (rand((4096, 4096)),)


def cumsum():
    return (lambda x: jnp.cumsum(x, axis=1)), (rand((1024, 1024)),)


def gather():
    idx = RNG.integers(0, 50000, size=(16384,)).astype(np.int32)
    return (lambda t, i: t[i]), (rand((50000, 128)), idx)


def mlp_forward():
    def f(x, w1, b1, w2, b2):
        return jax.nn.relu(x @ w1 + b1) @ w2 + b2
    return f, (rand((512, 1024)), rand((1024, 2048), scale=0.03), rand((2048,)),
               rand((2048, 512), scale=0.02), rand((512,)))


def transformer_block(bsz=4):
    d, h, s = 512, 8, 256

    def f(x, wq, wk, wv, wo, w1, w2):
        def ln(z):
            m = jnp.mean(z, -1, keepdims=True)
            v = jnp.mean((z - m) ** 2, -1, keepdims=True)
            return (z - m) * jax.lax.rsqrt(v + 1e-5)
        y = ln(x)
        q = (y @ wq).reshape(bsz, s, h, d // h)
        k = (y @ wk).reshape(bsz, s, h, d // h)
        v = (y @ wv).reshape(bsz, s, h, d // h)
        a = jax.nn.softmax(jnp.einsum("bqhd,bkhd->bhqk", q, k) / np.sqrt(d // h), -1)
        o = jnp.einsum("bhqk,bkhd->bqhd", a, v).reshape(bsz, s, d) @ wo
        x = x + o
        return x + jax.nn.gelu(ln(x) @ w1) @ w2
    sc = 1 / np.sqrt(d)
    return f, (rand((bsz, s, d)), rand((d, d), scale=sc), rand((d, d), scale=sc),
               rand((d, d), scale=sc), rand((d, d), scale=sc),
               rand((d, 4 * d), scale=sc), rand((4 * d, d), scale=sc / 2))


def sort_rows():
    return (lambda x: jnp.sort(x, axis=-1)), (rand((256, 4096)),)


def top_k():
    return (lambda x: jax.lax.top_k(x, 16)), (rand((512, 4096)),)


PROGRAMS = {}
for n in (256, 512, 1024, 2048):
    PROGRAMS["matmul_f32_%d" % n] = ("11", matmul(n, np.float32))
for n in (256, 512, 1024, 2048):
    PROGRAMS["matmul_bf16_%d" % n] = ("11", matmul(n, ml_dtypes.bfloat16))
PROGRAMS.update({
    "batched_matmul_8x512": ("11", batched_matmul),
    "conv_block_8x56x56x64": ("11", conv_block),
    "mlp_train_step": ("11", mlp_train_step),
    "elementwise_chain": ("12", elementwise_chain),
    "softmax_rows": ("12", softmax),
    "layernorm_gelu": ("12", layernorm_gelu),
    "row_sum": ("12", row_sum),
    "column_sum": ("12", column_sum),
    "transpose_4096": ("12", transpose),
    "cumsum_1024": ("12", cumsum),
    "gather_rows": ("12", gather),
    "mlp_forward": ("12", mlp_forward),
    "transformer_block": ("12", transformer_block),
    "sort_256x4096": ("13", sort_rows),
    "top_k16_512x4096": ("13", top_k),
})
