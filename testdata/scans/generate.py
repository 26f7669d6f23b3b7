#!/usr/bin/env python3
"""generate.py - regenerates the scan modules in testdata/scans/.

Each module is a JAX cumulative reduction lowered to HLO text
(jax.jit(f).lower(*args).as_text(dialect="hlo")): the prefix-scan
reduce-windows that reduce-window-rewriter turns into blocked scans.
tests/check-pipeline-corpus.sh runs the default pipeline on each and
compares it with the original on the interpreter.  Not run by the tests
(the .hlo files are checked in):

    python3 testdata/scans/generate.py [NAME...]
"""
import os
import sys

import jax
import jax.numpy as jnp
from jax import lax

jax.config.update("jax_platforms", "cpu")
HERE = os.path.dirname(os.path.abspath(__file__))

f32, s32 = jnp.float32, jnp.int32

# name -> (function, argument shapes and types)
CASES = {
    # one level of blocks: 1000 -> 63 blocks -> 4 blocks
    "cumsum_f32_3x1000": (lambda x: jnp.cumsum(x, axis=1), [((3, 1000), f32)]),
    "cumsum_reverse_axis0": (lambda x: lax.cumsum(x, axis=0, reverse=True),
                             [((500, 4), f32)]),
    # values near 1, so that the products neither vanish nor overflow
    "cumprod_near_one": (lambda x: jnp.cumprod(1 + x / 64, axis=1),
                         [((3, 1000), f32)]),
    "cummax_s32": (lambda x: lax.cummax(x, axis=1), [((3, 1000), s32)]),
    "cummin_reverse_3d": (lambda x: lax.cummin(x, axis=1, reverse=True),
                          [((2, 300, 4), f32)]),
    "cumlogsumexp": (lambda x: lax.cumlogsumexp(x, axis=1), [((3, 300), f32)]),
    "cumsum_1d_300": (lambda x: jnp.cumsum(x), [((300,), f32)]),
    # bool counts: convert to s32, then the scan
    "cumsum_bool": (lambda x: jnp.cumsum(x > 0), [((2000,), f32)]),
    # three levels of blocks: 20000 -> 1250 -> 79 -> 5
    "cumsum_s32_20000": (lambda x: jnp.cumsum(x), [((20000,), s32)]),
}


def main():
    for name in sys.argv[1:] or sorted(CASES):
        f, shapes = CASES[name]
        args = [jnp.zeros(s, t) for s, t in shapes]
        text = jax.jit(f).lower(*args).as_text(dialect="hlo")
        with open(os.path.join(HERE, name + ".hlo"), "w") as out:
            out.write(text)
        print("wrote", name + ".hlo")


if __name__ == "__main__":
    main()
