#!/usr/bin/env python3
"""generate.py - regenerates the SPMD partitioning cases in testdata/spmd/.

Each case is a small JAX program jitted over 4 CPU devices
(XLA_FLAGS=--xla_force_host_platform_device_count=4) with NamedSharding /
PartitionSpec on a Mesh, or with shard_map.  For each case NAME/ holds

    global.hlo       what JAX hands XLA: the global program with its
                     shardings (*.before_optimizations.txt of --xla_dump_to)
    xla.hlo          XLA's own per-device program for it
                     (*.cpu_after_optimizations.txt)
    in{K}.npy        global argument K
    out{K}.npy       XLA's global result leaf K (as JAX returns it)
    out{K}.{D}.npy   device D's shard of it (what XLA's per-device program
                     gives on partition D)

tests/check-spmd.sh runs xla.hlo with the global inputs (xhlo-run cuts them
by the parameters' shardings) against the per-device results, and global.hlo
partitioned by xhloc against the global results, each on the interpreter and
compiled for the host.  Not run by the tests (the files are checked in):

    /tmp/leadvenv/bin/python testdata/spmd/generate.py [NAME...]

With names, only those cases are written (the others' random arguments are
drawn all the same; the HLO text records this file's path and lines, so a
case written again from elsewhere differs in its metadata).

    /tmp/leadvenv/bin/python testdata/spmd/generate.py --lowered NAME...

writes only NAME/lowered.hlo: jax.jit(f).lower(...).as_text(dialect="hlo")
of the case, the program as JAX's API hands it out, with its Shardy mesh
(or GSPMD shardings) but no num_partitions in its header (xhloc takes it
from the mesh or the shardings), after checking that XLA still gives the
case's stored results.  tests/check-spmd.sh partitions these too.

The cases: programs (a data-parallel training step, a tensor-parallel MLP,
sequence parallel, shard_map in both forms, a 2x2 mesh, gather, scatter,
convolution, uneven shards, a loop, attention, shape ops), and one per
collective form (collective_cases, their own random numbers): shard_map
with psum, pmax/pmin, an integer psum, all_gather (tiled and stacked),
psum_scatter (tiled and not), all_to_all (tiled and not), ppermute (a ring,
a partial permutation, in a loop), axis_index, over a 1-D mesh of 4
(smap_*) and over one axis or both of a 2x2 mesh (mesh2_*: the groups
{0,2},{1,3} or {0,1},{2,3}), the same programs as testdata/collectives/
smap_* and mesh2_* where those exist; shard_maps over one axis of the 2x2
mesh, the other left to the partitioner (mesh2_partial_*); three in
GSPMD's form (gspmd_*); and
jit over a mesh with no shard_map (jit_*), where the partitioner makes the
collective: a reduction over one mesh axis (all-reduce), a reshard to
another dimension (all-to-all), onto fewer tiles (all-gather), or onto
other devices (collective-permute).
"""
import glob
import os
import shutil
import sys
import tempfile

DUMP = tempfile.mkdtemp(prefix="spmd-dump-")
os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") +
                           " --xla_force_host_platform_device_count=4"
                           " --xla_dump_to=" + DUMP)
os.environ["JAX_PLATFORMS"] = "cpu"

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P  # noqa: E402

try:
    from jax import shard_map
except ImportError:  # older jax
    from jax.experimental.shard_map import shard_map

HERE = os.path.dirname(os.path.abspath(__file__))
LOWERED = "--lowered" in sys.argv[1:]   # only NAME/lowered.hlo
ONLY = set(a for a in sys.argv[1:] if a != "--lowered")  # only these cases
N = 4
rng = np.random.default_rng(2014)
devs = np.array(jax.devices()[:N])
mesh1 = Mesh(devs, ("x",))
mesh2 = Mesh(devs.reshape(2, 2), ("d", "m"))


def vals(shape, dtype=np.float32):
    """Small multiples of 1/8 (exact products and short sums)."""
    return (rng.integers(-8, 8, size=shape) / 8).astype(dtype)


def ns(mesh, *spec):
    return NamedSharding(mesh, P(*spec))


def smap(f, mesh, in_specs, out_specs, **kw):
    if "check_vma" in shard_map.__code__.co_varnames:
        return shard_map(f, mesh=mesh, in_specs=in_specs, out_specs=out_specs,
                         check_vma=False, **kw)
    return shard_map(f, mesh=mesh, in_specs=in_specs, out_specs=out_specs,
                     check_rep=False, **kw)


def dumped(fname, suffix):
    files = sorted(glob.glob(os.path.join(DUMP, "module_*.jit_%s.%s.txt" %
                                          (fname, suffix))))
    assert files, (fname, suffix)
    with open(files[-1]) as f:
        return f.read()


def case(name, f, args, in_shardings=None, out_shardings=None):
    """f's name must be unique: it names XLA's dump files.  Writes nothing
    for a name not in ONLY (when the command line names cases): the
    arguments are drawn all the same, so the others' stay as they were."""
    if ONLY and name not in ONLY:
        return
    kw = {}
    if in_shardings is not None:
        kw["in_shardings"] = in_shardings
    if out_shardings is not None:
        kw["out_shardings"] = out_shardings
    jf = jax.jit(f, **kw)
    placed = [jax.device_put(a, s) if in_shardings is not None else a
              for a, s in zip(args, in_shardings or [None] * len(args))]
    res = jf(*placed)
    leaves = jax.tree_util.tree_leaves(res)
    d = os.path.join(HERE, name)
    if LOWERED:
        for k, leaf in enumerate(leaves):
            want = np.load(os.path.join(d, "out%d.npy" % k))
            assert np.allclose(np.asarray(leaf), want, rtol=1e-5, atol=1e-6), (name, k)
        text = jf.lower(*placed).as_text(dialect="hlo")
        assert "num_partitions" not in text.split("\n", 1)[0], name
        with open(os.path.join(d, "lowered.hlo"), "w") as fh:
            fh.write(text)
        print(name, "lowered.hlo")
        return
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    with open(os.path.join(d, "global.hlo"), "w") as fh:
        fh.write(dumped(f.__name__, "before_optimizations"))
    with open(os.path.join(d, "xla.hlo"), "w") as fh:
        fh.write(dumped(f.__name__, "cpu_after_optimizations"))
    for k, a in enumerate(args):
        np.save(os.path.join(d, "in%d.npy" % k), np.asarray(a))
    for k, leaf in enumerate(leaves):
        np.save(os.path.join(d, "out%d.npy" % k), np.asarray(leaf))
        by_dev = {s.device: np.asarray(s.data) for s in leaf.addressable_shards}
        for dv, dev in enumerate(devs):
            np.save(os.path.join(d, "out%d.%d.npy" % (k, dv)), by_dev[dev])
    print(name)


# --- data parallel: an MLP training step, the batch split over 4 devices,
# the gradients summed by the partitioner's all-reduces.
def dp_train_step(w1, b1, w2, x, y):
    def loss(p):
        h = jnp.tanh(x @ p[0] + p[1])
        return jnp.mean((h @ p[2] - y) ** 2)
    g = jax.grad(loss)((w1, b1, w2))
    return tuple(p - 0.1 * gp for p, gp in zip((w1, b1, w2), g))


# --- tensor parallel: a column-parallel then a row-parallel dot.
def tp_mlp(x, w1, w2):
    return jnp.tanh(x @ w1) @ w2


# --- sequence parallel: activations split over the sequence; a layer norm
# on each device's rows, the hidden layer tensor-parallel, the result split
# over the sequence again (all-gather, column- and row-parallel dots,
# reduce and scatter).
def seq_parallel(x, w1, w2):
    mu = x.mean(-1, keepdims=True)
    var = ((x - mu) ** 2).mean(-1, keepdims=True)
    y = (x - mu) / jnp.sqrt(var + 1e-5)
    h = jax.nn.gelu(y @ w1)
    h = jax.lax.with_sharding_constraint(h, ns(mesh1, None, None, "x"))
    out = h @ w2
    out = jax.lax.with_sharding_constraint(out, ns(mesh1, None, "x", None))
    return x + out


# --- shard_map: per-device code with its own collectives between global
# code.
def shard_map_block(x, w):
    inner = smap(lambda a, b: jax.lax.psum(a @ b, "x"), mesh1,
                 (P(None, "x"), P("x", None)), P())
    ring = smap(lambda a: a + jax.lax.ppermute(a, "x", [(k, (k + 1) % N)
                                                       for k in range(N)]),
                mesh1, (P("x"),), P("x"))
    y = inner(x * 2, w)
    return jnp.tanh(y), ring(y)


def shard_map_gspmd(x, w):
    inner = smap(lambda a, b: jax.lax.psum(a @ b, "x"), mesh1,
                 (P(None, "x"), P("x", None)), P())
    return jnp.tanh(inner(x * 2, w))


# --- a 2x2 mesh: data parallel over "d", tensor parallel over "m".
def mesh2_mlp(x, w1, w2):
    h = jax.nn.relu(x @ w1)
    return (h @ w2).sum(-1)


# --- gather and scatter over the batch; a convolution over the batch.
def gather_embed(table, ids):
    return jnp.take(table, ids, axis=0) * 2.0


def scatter_segments(data, seg):
    return jax.ops.segment_sum(data, seg, num_segments=5)


def conv_batch(x, k):
    y = jax.lax.conv_general_dilated(x, k, (1, 1), "SAME",
                                     dimension_numbers=("NHWC", "HWIO", "NHWC"))
    return jax.nn.relu(y)


# --- shards of unequal sizes (6 rows over 4 devices: padded, inside the
# program; JAX's inputs divide), reductions and a dot contracting over
# them.
def uneven(x, w):
    x = jax.lax.with_sharding_constraint(x, ns(mesh1, "x"))
    w = jax.lax.with_sharding_constraint(w, ns(mesh1, "x"))
    return x.max(0), x.sum(0), x.T @ w, jnp.exp(x)


# --- a loop carrying rows split over the devices (fori_loop: a while).
def scan_loop(x, w):
    return jax.lax.fori_loop(0, 3, lambda i, v: jnp.tanh(v @ w), x)


# --- attention on a 2x2 mesh: batch over "d", heads over "m".
def attention(q, k, v):
    s = jnp.einsum("bhqd,bhkd->bhqk", q, k) / 2.0
    return jnp.einsum("bhqk,bhkd->bhqd", jax.nn.softmax(s, axis=-1), v)


# --- shape ops on sharded arrays.
def shape_ops(x, y):
    a = x.reshape(4, 2, 6).transpose(1, 0, 2)
    b = jnp.concatenate([x[:, :3], y[:, ::2]], axis=1)
    c = jnp.pad(x, ((0, 0), (1, 2)))[::-1]
    return a, b, c, jnp.cumsum(x, axis=0), jnp.sort(y, axis=1)


# --- collectives, one case per form, the shard_map ones those of
# testdata/collectives/ (smap_*, mesh2_*) there as XLA's per-device
# programs: here the global program with the shard_map in it.  The jit_*
# ones have no shard_map: the partitioner makes the collective itself.
# Their own random numbers (generate.py NAME... writes only the named).

def smap_case(name, body, mesh, in_specs, out_specs, args, shardings=None,
              **kw):
    """body under shard_map over mesh, jitted with its in_specs (or the
    given specs) as the arguments' shardings; name names the case and XLA's
    dump files."""
    inner = smap(body, mesh, in_specs, out_specs, **kw)

    def f(*a):
        return inner(*a)
    f.__name__ = f.__qualname__ = name
    case(name, f, args, tuple(ns(mesh, *s) for s in shardings or in_specs))


def jit_case(name, body, mesh, in_specs, out_spec, args):
    def f(*a):
        return body(*a)
    f.__name__ = f.__qualname__ = name
    case(name, f, args, tuple(ns(mesh, *s) for s in in_specs),
         ns(mesh, *out_spec))


def collective_cases():
    global rng
    saved, rng = rng, np.random.default_rng(1414)
    lax = jax.lax
    ring = [(k, (k + 1) % N) for k in range(N)]
    mesh2ab = Mesh(devs.reshape(2, 2), ("a", "b"))
    # a 1-D mesh of 4: groups of all four partitions
    smap_case("smap_psum", lambda x: lax.psum(x, "x"), mesh1,
              (P("x"),), P(), [vals((8, 3))])
    smap_case("smap_pmax_pmin", lambda x: (lax.pmax(x, "x"), lax.pmin(x, "x")),
              mesh1, (P("x"),), (P(), P()), [vals((8, 6))])
    smap_case("smap_psum_int", lambda x: lax.psum(x, "x"), mesh1,
              (P("x"),), P(), [rng.integers(-50, 50, size=(8, 7))
                               .astype(np.int32)])
    smap_case("smap_all_gather",
              lambda x: lax.all_gather(x, "x", axis=0, tiled=True),
              mesh1, (P("x"),), P(), [vals((8, 2))])
    smap_case("smap_all_gather_stacked",
              lambda x: lax.all_gather(x, "x", axis=1),
              mesh1, (P("x"),), P(), [vals((8, 3))])
    smap_case("smap_psum_scatter",
              lambda x: lax.psum_scatter(x, "x", scatter_dimension=1,
                                         tiled=True),
              mesh1, (P(None, "x"),), P(None, "x"), [vals((3, 16))])
    smap_case("smap_all_to_all",
              lambda x: lax.all_to_all(x, "x", 1, 1, tiled=True),
              mesh1, (P("x"),), P("x"), [vals((8, 8))])
    smap_case("smap_ppermute", lambda x: lax.ppermute(x, "x", ring),
              mesh1, (P("x"),), P("x"), [vals((8, 3))])
    smap_case("smap_ppermute_partial",
              lambda x: lax.ppermute(x, "x", [(0, 3), (3, 1)]),
              mesh1, (P("x"),), P("x"), [vals((8, 5))])
    smap_case("smap_axis_index",
              lambda x: x + lax.axis_index("x").astype(jnp.float32),
              mesh1, (P("x"),), P("x"), [vals((8, 2))])
    # one axis of a 2x2 mesh: groups {{0,2},{1,3}} over "a", {{0,1},{2,3}}
    # over "b"
    smap_case("mesh2_psum_a", lambda x: lax.psum(x, "a"), mesh2ab,
              (P("a", "b"),), P(None, "b"), [vals((4, 6))])
    smap_case("mesh2_psum_b", lambda x: lax.psum(x, "b"), mesh2ab,
              (P("a", "b"),), P("a"), [vals((4, 6))])
    smap_case("mesh2_psum_ab", lambda x: lax.psum(x, ("a", "b")), mesh2ab,
              (P("a", "b"),), P(), [vals((4, 6))])
    smap_case("mesh2_pmax_a", lambda x: lax.pmax(x, "a"), mesh2ab,
              (P("a", "b"),), P(None, "b"), [rng.integers(-50, 50, size=(4, 6))
                                             .astype(np.int32)])
    smap_case("mesh2_all_gather_a",
              lambda x: lax.all_gather(x, "a", axis=0, tiled=True),
              mesh2ab, (P("a", "b"),), P(None, "b"), [vals((4, 6))])
    smap_case("mesh2_all_gather_b",
              lambda x: lax.all_gather(x, "b", axis=0),
              mesh2ab, (P("a", "b"),), P(None, "a"), [vals((4, 6))])
    smap_case("mesh2_psum_scatter_b",
              lambda x: lax.psum_scatter(x, "b", scatter_dimension=0,
                                         tiled=True),
              mesh2ab, (P("a", None),), P(("a", "b")), [vals((8, 3))])
    smap_case("mesh2_psum_scatter_a",
              lambda x: lax.psum_scatter(x, "a", scatter_dimension=1,
                                         tiled=True),
              mesh2ab, (P("b", None),), P("b", "a"), [vals((4, 8))])
    smap_case("mesh2_ppermute_a",
              lambda x: lax.ppermute(x, "a", [(0, 1), (1, 0)]),
              mesh2ab, (P("a", "b"),), P("a", "b"), [vals((4, 6))])
    smap_case("mesh2_ppermute_b_partial",
              lambda x: lax.ppermute(x, "b", [(0, 1)]),
              mesh2ab, (P("a", "b"),), P("a", "b"), [vals((4, 6))])
    smap_case("mesh2_all_to_all_b",
              lambda x: lax.all_to_all(x, "b", 0, 0, tiled=True),
              mesh2ab, (P("a", "b"),), P("a", "b"), [vals((8, 4))])
    smap_case("mesh2_all_to_all_a",
              lambda x: lax.all_to_all(x, "a", 1, 0, tiled=True),
              mesh2ab, (P("a", "b"),), P("a", "b"), [vals((4, 8))])
    smap_case("mesh2_axis_index",
              lambda x: x * lax.axis_index("a").astype(jnp.float32)
              + lax.axis_index("b").astype(jnp.float32),
              mesh2ab, (P("a", "b"),), P("a", "b"), [vals((4, 6))])
    smap_case("smap_psum_scatter_untiled",
              lambda x: lax.psum_scatter(x, "x", scatter_dimension=0),
              mesh1, (P(None, "x"),), P("x"), [vals((4, 12))])
    smap_case("smap_all_to_all_untiled",
              lambda x: lax.all_to_all(x, "x", 1, 0),
              mesh1, (P("x"),), P("x"), [vals((8, 4, 3))])
    smap_case("smap_ppermute_loop",
              lambda x: lax.fori_loop(
                  0, 3, lambda k, v: v * 0.5 + lax.ppermute(v, "x", ring), x),
              mesh1, (P("x"),), P("x"), [vals((8, 3))])
    # a shard_map over one axis of the 2x2 mesh, the other left to the
    # partitioner (axis_names): the body's collectives over "a"
    smap_case("mesh2_partial_psum_a",
              lambda x: lax.psum(x * 2, "a") + lax.axis_index("a"),
              mesh2ab, (P("a"),), P(), [vals((4, 6))], (P("a", "b"),),
              axis_names={"a"})
    smap_case("mesh2_partial_all_gather_b",
              lambda x: lax.all_gather(jnp.tanh(x), "b", axis=1, tiled=True),
              mesh2ab, (P(None, "b"),), P(), [vals((4, 6))],
              (P("a", "b"),), axis_names={"b"})
    # jit over a mesh: the partitioner's own collectives, over one axis of
    # the 2x2 mesh or all four
    jit_case("jit_reshard_all_to_all",
             lambda x: jax.lax.with_sharding_constraint(
                 x * 2, ns(mesh1, None, "x")) + 1,
             mesh1, (P("x", None),), P(None, "x"), [vals((8, 8))])
    jit_case("jit_mesh2_sum_a", lambda x: x.sum(0), mesh2ab,
             (P("a", "b"),), P("b"), [vals((4, 6))])
    jit_case("jit_mesh2_max_b", lambda x: x.max(1), mesh2ab,
             (P("a", "b"),), P("a"), [vals((4, 6))])
    jit_case("jit_mesh2_swap_axes", lambda x: x * 3, mesh2ab,
             (P("a", "b"),), P("b", "a"), [vals((4, 6))])
    jit_case("jit_mesh2_move_axis", lambda x: x - 1, mesh2ab,
             (P("a", None),), P("b", None), [vals((4, 6))])
    jit_case("jit_mesh2_gather_b", lambda x: jnp.sin(x), mesh2ab,
             (P("a", "b"),), P("a", None), [vals((4, 6))])
    # GSPMD's form (Sharding, SPMDFullToShardShape, ...) over one axis of
    # the 2x2 mesh
    jax.config.update("jax_use_shardy_partitioner", False)
    smap_case("gspmd_mesh2_psum_a", lambda x: lax.psum(x, "a"), mesh2ab,
              (P("a", "b"),), P(None, "b"), [vals((4, 6))])
    smap_case("gspmd_mesh2_all_gather_b",
              lambda x: lax.all_gather(x, "b", axis=1, tiled=True),
              mesh2ab, (P("a", "b"),), P("a"), [vals((4, 6))])
    smap_case("gspmd_mesh2_partial_psum_a",
              lambda x: lax.psum(x * 2, "a"),
              mesh2ab, (P("a"),), P(), [vals((4, 6))], (P("a", "b"),),
              axis_names={"a"})
    jax.config.update("jax_use_shardy_partitioner", True)
    rng = saved


def main():
    rep = ns(mesh1)
    bx = ns(mesh1, "x")
    case("dp_train_step", dp_train_step,
         [vals((4, 8)), vals((8,)), vals((8, 2)), vals((16, 4)), vals((16, 2))],
         (rep, rep, rep, bx, bx), (rep, rep, rep))
    case("tp_mlp", tp_mlp, [vals((8, 4)), vals((4, 16)), vals((16, 4))],
         (rep, ns(mesh1, None, "x"), ns(mesh1, "x", None)), rep)
    case("seq_parallel", seq_parallel,
         [vals((2, 8, 4)), vals((4, 8)), vals((8, 4))],
         (ns(mesh1, None, "x", None), ns(mesh1, None, "x"),
          ns(mesh1, "x", None)), ns(mesh1, None, "x", None))
    case("shard_map", shard_map_block, [vals((4, 8)), vals((8, 3))])
    case("mesh2_mlp", mesh2_mlp, [vals((8, 4)), vals((4, 6)), vals((6, 4))],
         (ns(mesh2, "d", None), ns(mesh2, None, "m"), ns(mesh2, "m", None)),
         ns(mesh2, "d"))
    case("gather_embed", gather_embed,
         [vals((16, 8)), rng.integers(0, 16, size=(8,)).astype(np.int32)],
         (ns(mesh1, None, "x"), bx))
    case("scatter_segments", scatter_segments,
         [vals((8, 4)), rng.integers(0, 5, size=(8,)).astype(np.int32)],
         (bx, bx), rep)
    case("conv_batch", conv_batch, [vals((4, 6, 6, 3)), vals((3, 3, 3, 5))],
         (bx, rep))
    case("uneven", uneven, [vals((6, 5)), vals((6, 3))], (rep, rep), rep)
    case("shape_ops", shape_ops, [vals((8, 6)), vals((8, 6))], (bx, bx))
    case("scan_loop", scan_loop, [vals((8, 4)), vals((4, 4))], (bx, rep), bx)
    qkv = ns(mesh2, "d", "m")
    case("attention", attention,
         [vals((2, 4, 8, 4)), vals((2, 4, 8, 4)), vals((2, 4, 8, 4))],
         (qkv, qkv, qkv))
    collective_cases()
    # GSPMD's form of shard_map (Sharding, SPMDFullToShardShape, ...)
    jax.config.update("jax_use_shardy_partitioner", False)
    case("shard_map_gspmd", shard_map_gspmd, [vals((4, 8)), vals((8, 3))])
    shutil.rmtree(DUMP, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
