#!/usr/bin/env python3
"""generate.py - regenerates the end-to-end test modules in testdata/e2e/.

Each module is a small JAX function compiled once on the CPU with
XLA_FLAGS=--xla_dump_to=DIR; the dump's *.before_optimizations.txt is copied
here as NAME.hlo.  Not run by the tests (the .hlo files are checked in):

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
}

RUNNER = """
import jax, jax.numpy as jnp
jax.config.update("jax_platforms", "cpu")
{src}
jax.jit(f).lower(*args).compile()
"""


def main():
    names = sys.argv[1:] or sorted(CASES)
    for name in names:
        with tempfile.TemporaryDirectory() as d:
            env = dict(os.environ, XLA_FLAGS="--xla_dump_to=" + d,
                       JAX_PLATFORMS="cpu")
            subprocess.run([sys.executable, "-c",
                            RUNNER.format(src=CASES[name])],
                           env=env, check=True)
            found = sorted(glob.glob(os.path.join(
                d, "*jit_f*.before_optimizations.txt")))
            if not found:
                sys.exit("%s: no before_optimizations dump in %s" % (name, d))
            shutil.copy(found[-1], os.path.join(HERE, name + ".hlo"))
            print("wrote", name + ".hlo")


if __name__ == "__main__":
    main()
