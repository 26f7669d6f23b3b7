#!/usr/bin/env python3
"""generate.py - regenerates the multi-device collective cases in
testdata/collectives/.

Each case is a small JAX program over 4 CPU devices
(XLA_FLAGS=--xla_force_host_platform_device_count=4): pmap, shard_map or
sharded jit over a mesh.  This jax runs all of them as partitions
(num_partitions=4, channel_id, use_global_device_ids: flattened-id groups;
the mesh form mesh['a'=2,'b'=2] {'b'} from the SPMD partitioner).  Cross-
replica and cross-replica-and-partition forms, collective-broadcast, the
tuple all-to-all and the -start/-done forms are in testdata/eval/
hand_collectives_*.hlo, by hand.  For each case NAME/ holds

    module.hlo       the per-device HLO after XLA's CPU optimizations
                     (compiled.as_text())
    in{K}.{D}.npy    argument K of device D
    out{K}.{D}.npy   XLA's result leaf K on device D

Device D is partition D (the mesh's devices in order), as xhlo-run numbers
them.  Not run by the tests (the files are checked in);
tests/check-collectives.sh runs every case on the interpreter:

    /tmp/leadvenv/bin/python testdata/collectives/generate.py
"""
import os
import shutil
import sys

os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") +
                           " --xla_force_host_platform_device_count=4")
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
N = 4
rng = np.random.default_rng(14)


def vals(shape, dtype=np.float32):
    """Small integers (exact sums in any order), as dtype."""
    return rng.integers(-8, 8, size=shape).astype(dtype)


def write_case(name, hlo, ins, outs):
    """ins/outs: per argument (result leaf), a list of per-device arrays."""
    d = os.path.join(HERE, name)
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    with open(os.path.join(d, "module.hlo"), "w") as f:
        f.write(hlo)
    for prefix, arrays in (("in", ins), ("out", outs)):
        for k, per_dev in enumerate(arrays):
            for dev, a in enumerate(per_dev):
                np.save(os.path.join(d, "%s%d.%d.npy" % (prefix, k, dev)),
                        np.asarray(a))
    print(name)


def pmap_case(name, f, *args):
    """args: arrays with a leading axis of N (one slice per device).  jax
    runs pmap as shard_map: partitions, not replicas."""
    pf = jax.pmap(f, axis_name="i")
    hlo = pf.lower(*args).compile().as_text()
    res = pf(*args)
    leaves = jax.tree_util.tree_leaves(res)
    # each device's parameter and result keep a leading axis of 1
    write_case(name, hlo,
               [[np.asarray(a)[r:r + 1] for r in range(N)] for a in args],
               [[np.asarray(l)[r:r + 1] for r in range(N)] for l in leaves])


def shards(arr, mesh):
    """Per partition (the mesh's devices in order), its shard of arr."""
    by_dev = {s.device: np.asarray(s.data) for s in arr.addressable_shards}
    return [by_dev[dv] for dv in mesh.devices.flat]


def mesh_case(name, f, mesh, in_specs, out_specs, *args):
    """f under shard_map over mesh; args are global arrays."""
    sf = jax.jit(shard_map(f, mesh=mesh, in_specs=in_specs,
                           out_specs=out_specs, check_vma=False)
                 if "check_vma" in shard_map.__code__.co_varnames else
                 shard_map(f, mesh=mesh, in_specs=in_specs,
                           out_specs=out_specs, check_rep=False))
    placed = [jax.device_put(a, NamedSharding(mesh, s))
              for a, s in zip(args, in_specs)]
    hlo = sf.lower(*placed).compile().as_text()
    res = sf(*placed)
    leaves = jax.tree_util.tree_leaves(res)
    write_case(name, hlo, [shards(a, mesh) for a in placed],
               [shards(l, mesh) for l in leaves])


def main():
    devs = np.array(jax.devices()[:N])
    mesh1 = Mesh(devs, ("x",))
    mesh2 = Mesh(devs.reshape(2, 2), ("a", "b"))

    # pmap: replica_count=4, cross-replica groups
    pmap_case("pmap_psum", lambda x: jax.lax.psum(x, "i"), vals((N, 3, 5)))
    pmap_case("pmap_pmax_pmin",
              lambda x: (jax.lax.pmax(x, "i"), jax.lax.pmin(x, "i")),
              vals((N, 6)))
    pmap_case("pmap_psum_groups",
              lambda x: jax.lax.psum(x, "i", axis_index_groups=[[0, 1], [2, 3]]),
              vals((N, 4)))
    pmap_case("pmap_psum_groups_interleaved",
              lambda x: jax.lax.psum(x, "i", axis_index_groups=[[0, 2], [1, 3]]),
              vals((N, 4)))
    pmap_case("pmap_all_gather",
              lambda x: jax.lax.all_gather(x, "i", axis=1, tiled=True),
              vals((N, 2, 3)))
    pmap_case("pmap_psum_scatter",
              lambda x: jax.lax.psum_scatter(x, "i", scatter_dimension=0,
                                             tiled=True),
              vals((N, 8, 2)))
    pmap_case("pmap_all_to_all",
              lambda x: jax.lax.all_to_all(x, "i", 0, 0, tiled=True),
              vals((N, 8, 3)))
    pmap_case("pmap_ppermute",
              lambda x: jax.lax.ppermute(x, "i", [(0, 1), (1, 2), (2, 3), (3, 0)]),
              vals((N, 5)))
    pmap_case("pmap_ppermute_partial",
              lambda x: jax.lax.ppermute(x, "i", [(0, 3), (3, 1)]),
              vals((N, 5)))
    pmap_case("pmap_axis_index",
              lambda x: x * jax.lax.axis_index("i").astype(jnp.float32)
              + jax.lax.psum(x, "i"),
              vals((N, 3)))
    pmap_case("pmap_psum_int",
              lambda x: jax.lax.psum(x, "i"), vals((N, 7), np.int32))
    pmap_case("pmap_psum_loop",
              lambda x: jax.lax.fori_loop(
                  0, 3, lambda k, v: jax.lax.psum(v, "i") * 0.5, x),
              vals((N, 4)))

    # shard_map over 4 partitions: channel_id, flattened ids
    mesh_case("smap_psum", lambda x: jax.lax.psum(x, "x"), mesh1,
              (P("x"),), P(), vals((8, 3)))
    mesh_case("smap_all_gather",
              lambda x: jax.lax.all_gather(x, "x", axis=0, tiled=True),
              mesh1, (P("x"),), P(), vals((8, 2)))
    mesh_case("smap_psum_scatter",
              lambda x: jax.lax.psum_scatter(x, "x", scatter_dimension=1,
                                             tiled=True),
              mesh1, (P(None, "x"),), P(None, "x"), vals((3, 16)))
    mesh_case("smap_all_to_all",
              lambda x: jax.lax.all_to_all(x, "x", 1, 1, tiled=True),
              mesh1, (P("x"),), P("x"), vals((8, 8)))
    mesh_case("smap_ppermute",
              lambda x: jax.lax.ppermute(x, "x", [(k, (k + 1) % N) for k in range(N)]),
              mesh1, (P("x"),), P("x"), vals((8, 3)))
    mesh_case("smap_axis_index",
              lambda x: x + jax.lax.axis_index("x").astype(jnp.float32),
              mesh1, (P("x"),), P("x"), vals((8, 2)))
    # a 2x2 mesh: collectives over one axis give the iota group forms
    mesh_case("mesh2_psum_a", lambda x: jax.lax.psum(x, "a"), mesh2,
              (P("a", "b"),), P(None, "b"), vals((4, 6)))
    mesh_case("mesh2_psum_b", lambda x: jax.lax.psum(x, "b"), mesh2,
              (P("a", "b"),), P("a"), vals((4, 6)))
    mesh_case("mesh2_all_gather_a",
              lambda x: jax.lax.all_gather(x, "a", axis=0, tiled=True),
              mesh2, (P("a", "b"),), P(None, "b"), vals((4, 6)))
    mesh_case("mesh2_psum_scatter_b",
              lambda x: jax.lax.psum_scatter(x, "b", scatter_dimension=0,
                                             tiled=True),
              mesh2, (P("a", None),), P(("a", "b")), vals((8, 3)))
    mesh_case("mesh2_ppermute_a",
              lambda x: jax.lax.ppermute(x, "a", [(0, 1), (1, 0)]),
              mesh2, (P("a", "b"),), P("a", "b"), vals((4, 6)))
    mesh_case("mesh2_all_to_all_b",
              lambda x: jax.lax.all_to_all(x, "b", 0, 0, tiled=True),
              mesh2, (P("a", "b"),), P("a", "b"), vals((8, 4)))

    # sharded jit: the SPMD partitioner inserts the collectives
    sj = jax.jit(lambda x, w: jnp.tanh(x @ w),
                 in_shardings=(NamedSharding(mesh1, P(None, "x")),
                               NamedSharding(mesh1, P("x", None))),
                 out_shardings=NamedSharding(mesh1, P()))
    x = jax.device_put(vals((4, 8)) / 8, NamedSharding(mesh1, P(None, "x")))
    w = jax.device_put(vals((8, 5)) / 8, NamedSharding(mesh1, P("x", None)))
    hlo = sj.lower(x, w).compile().as_text()
    write_case("jit_matmul_reduce", hlo, [shards(x, mesh1), shards(w, mesh1)],
               [shards(sj(x, w), mesh1)])
    return 0


if __name__ == "__main__":
    sys.exit(main())
