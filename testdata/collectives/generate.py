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

The cases of one and two devices (one_*, two_*) come from their own random
numbers; `generate.py small` writes only them.  The smap_* and mesh2_*
programs are in testdata/spmd/ too, as the global programs JAX hands XLA
(partitioned there by xhloc).
"""
import os
import re
import shutil
import sys

os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") +
                           " --xla_force_host_platform_device_count=4")
os.environ["JAX_PLATFORMS"] = "cpu"

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P  # noqa: E402
P_ = P

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


def pmap_case_n(name, devs, f, *args):
    """pmap_case over the given devices (fewer than N)."""
    n = len(devs)
    pf = jax.pmap(f, axis_name="i", devices=devs)
    hlo = pf.lower(*args).compile().as_text()
    leaves = jax.tree_util.tree_leaves(pf(*args))
    write_case(name, hlo,
               [[np.asarray(a)[r:r + 1] for r in range(n)] for a in args],
               [[np.asarray(l)[r:r + 1] for r in range(n)] for l in leaves])


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


# --- modules written in StableHLO, compiled by XLA for R replicas x P
# partitions (device assignment: device d = replica d // P, partition d % P),
# run on the 4 CPU devices with per-device arguments.  These give the forms
# jax's own transformations do not: cross-replica groups (no channel_id),
# cross-replica-and-partition (channel_id without use_global_device_ids),
# flattened ids over replicas and partitions, replica-id with partition-id.

def smod(R, P, args, results, body):
    sig = ", ".join("%%arg%d: tensor<%s>" % (k, a) for k, a in enumerate(args))
    ret = ", ".join("tensor<%s>" % r for r in results)
    return ("module @m attributes {mhlo.num_replicas = %d : i32, "
            "mhlo.num_partitions = %d : i32} {\n"
            "  func.func public @main(%s) -> (%s) {\n%s\n  }\n}\n"
            % (R, P, sig, ret, body))


def reducer(op, et="f32"):
    return ("({\n    ^bb0(%%a: tensor<%s>, %%b: tensor<%s>):\n"
            "      %%s = stablehlo.%s %%a, %%b : tensor<%s>\n"
            "      stablehlo.return %%s : tensor<%s>\n    })"
            % (et, et, op, et, et))


def compiled_case(name, R, P, mlir, ins):
    """ins: per argument, a list of R*P per-device arrays."""
    from jax._src import xla_bridge as xb
    from jax._src.lib import xla_client as xc
    backend = xb.get_backend("cpu")
    opts = xc.CompileOptions()
    bo = opts.executable_build_options
    bo.num_replicas = R
    bo.num_partitions = P
    bo.use_spmd_partitioning = P > 1
    bo.device_assignment = xc.DeviceAssignment.create(
        np.arange(R * P).reshape(R, P))
    devs = sorted(jax.devices()[:R * P], key=lambda dv: dv.id)
    exe = backend.compile_and_load(mlir, xc.DeviceList(tuple(devs)), opts)
    hlo = exe.hlo_modules()[0].to_string()
    mesh = Mesh(np.array(devs), ("d",))
    arrays = [jax.make_array_from_single_device_arrays(
        per_dev[0].shape, NamedSharding(mesh, P_()),
        [jax.device_put(a, dv) for a, dv in zip(per_dev, devs)])
        for per_dev in ins]
    res = exe.execute_sharded(arrays).disassemble_into_single_device_arrays()
    outs = []
    for leaf in res:
        by_dev = {x.devices().pop().id: np.asarray(x) for x in leaf}
        outs.append([by_dev[dv.id] for dv in devs])
    write_case(name, hlo, ins, outs)
    return hlo, ins, outs


def per_device(shape, n=N, dtype=np.float32):
    return [vals(shape, dtype) for _ in range(n)]


def compiled_cases():
    f32 = "f32"
    # cross-replica: 4 replicas, no channel_id
    compiled_case("cr_all_reduce_groups", 4, 1, smod(4, 1, ["3xf32"],
        ["3xf32", "ui32"], """\
    %0 = "stablehlo.all_reduce"(%arg0) """ + reducer("add") + """ {replica_groups = dense<[[0, 2], [1, 3]]> : tensor<2x2xi64>} : (tensor<3xf32>) -> tensor<3xf32>
    %1 = stablehlo.replica_id : tensor<ui32>
    return %0, %1 : tensor<3xf32>, tensor<ui32>"""), [per_device((3,))])
    compiled_case("cr_all_gather_reversed", 4, 1, smod(4, 1, ["2x3xf32"],
        ["2x12xf32"], """\
    %0 = "stablehlo.all_gather"(%arg0) {all_gather_dim = 1 : i64, replica_groups = dense<[[3, 2, 1, 0]]> : tensor<1x4xi64>} : (tensor<2x3xf32>) -> tensor<2x12xf32>
    return %0 : tensor<2x12xf32>"""), [per_device((2, 3))])
    compiled_case("cr_reduce_scatter_max", 4, 1, smod(4, 1, ["4x3xf32"],
        ["2x3xf32"], """\
    %0 = "stablehlo.reduce_scatter"(%arg0) """ + reducer("maximum") + """ {scatter_dimension = 0 : i64, replica_groups = dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>} : (tensor<4x3xf32>) -> tensor<2x3xf32>
    return %0 : tensor<2x3xf32>"""), [per_device((4, 3))])
    compiled_case("cr_all_to_all", 4, 1, smod(4, 1, ["2x8xf32"], ["2x8xf32"],
        """\
    %0 = "stablehlo.all_to_all"(%arg0) {split_dimension = 1 : i64, concat_dimension = 1 : i64, split_count = 4 : i64, replica_groups = dense<[[0, 1, 2, 3]]> : tensor<1x4xi64>} : (tensor<2x8xf32>) -> tensor<2x8xf32>
    return %0 : tensor<2x8xf32>"""), [per_device((2, 8))])
    compiled_case("cr_collective_permute", 4, 1, smod(4, 1, ["5xf32"],
        ["5xf32"], """\
    %0 = "stablehlo.collective_permute"(%arg0) {source_target_pairs = dense<[[0, 2], [2, 0], [1, 3]]> : tensor<3x2xi64>} : (tensor<5xf32>) -> tensor<5xf32>
    return %0 : tensor<5xf32>"""), [per_device((5,))])
    compiled_case("cr_all_reduce_int_min", 4, 1, smod(4, 1, ["6xi32"],
        ["6xi32"], """\
    %0 = "stablehlo.all_reduce"(%arg0) """ + reducer("minimum", "i32") + """ {replica_groups = dense<[[0, 1, 2, 3]]> : tensor<1x4xi64>} : (tensor<6xi32>) -> tensor<6xi32>
    return %0 : tensor<6xi32>"""), [per_device((6,), dtype=np.int32)])
    # 2 replicas x 2 partitions
    compiled_case("crp_all_reduce", 2, 2, smod(2, 2, ["3xf32"], ["3xf32"],
        """\
    %0 = "stablehlo.all_reduce"(%arg0) """ + reducer("add") + """ {replica_groups = dense<[[0], [1]]> : tensor<2x1xi64>, channel_handle = #stablehlo.channel_handle<handle = 1, type = 1>} : (tensor<3xf32>) -> tensor<3xf32>
    return %0 : tensor<3xf32>"""), [per_device((3,))])
    compiled_case("crp_all_gather_order", 2, 2, smod(2, 2, ["2xf32"],
        ["8xf32"], """\
    %0 = "stablehlo.all_gather"(%arg0) {all_gather_dim = 0 : i64, replica_groups = dense<[[1, 0]]> : tensor<1x2xi64>, channel_handle = #stablehlo.channel_handle<handle = 1, type = 1>} : (tensor<2xf32>) -> tensor<8xf32>
    return %0 : tensor<8xf32>"""), [per_device((2,))])
    compiled_case("flat_all_reduce", 2, 2, smod(2, 2, ["3xf32"], ["3xf32"],
        """\
    %0 = "stablehlo.all_reduce"(%arg0) """ + reducer("add") + """ {replica_groups = dense<[[0, 3], [1, 2]]> : tensor<2x2xi64>, channel_handle = #stablehlo.channel_handle<handle = 1, type = 1>, use_global_device_ids} : (tensor<3xf32>) -> tensor<3xf32>
    return %0 : tensor<3xf32>"""), [per_device((3,))])
    compiled_case("cp_collective_permute", 2, 2, smod(2, 2, ["4xf32"],
        ["4xf32"], """\
    %0 = "stablehlo.collective_permute"(%arg0) {source_target_pairs = dense<[[0, 1]]> : tensor<1x2xi64>, channel_handle = #stablehlo.channel_handle<handle = 1, type = 1>} : (tensor<4xf32>) -> tensor<4xf32>
    return %0 : tensor<4xf32>"""), [per_device((4,))])
    # (XLA refuses partition-id under SPMD partitioning; the smap cases have it)
    compiled_case("rp_replica_id", 2, 2, smod(2, 2, ["2xf32"], ["2xf32"], """\
    %r = stablehlo.replica_id : tensor<ui32>
    %f = stablehlo.convert %r : (tensor<ui32>) -> tensor<f32>
    %b = stablehlo.broadcast_in_dim %f, dims = [] : (tensor<f32>) -> tensor<2xf32>
    %0 = stablehlo.add %arg0, %b : tensor<2xf32>
    return %0 : tensor<2xf32>"""), [per_device((2,))])


# --- variants of the cases above in forms XLA:CPU never prints (the same
# groups in iota or mesh form, the -start/-done pairs): the module text is
# rewritten, the arguments and XLA's results are the original case's.

def variant(name, src, rewrite):
    sd = os.path.join(HERE, src)
    with open(os.path.join(sd, "module.hlo")) as f:
        text = f.read()
    new = rewrite(text)
    assert new != text, name
    d = os.path.join(HERE, name)
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    with open(os.path.join(d, "module.hlo"), "w") as f:
        f.write(new)
    for fn in sorted(os.listdir(sd)):
        if fn.endswith(".npy"):
            shutil.copy(os.path.join(sd, fn), os.path.join(d, fn))
    print(name)


def groups(old, new):
    return lambda t: t.replace("replica_groups=" + old, "replica_groups=" + new)


def to_async(op, extra_shapes=""):
    """`%x = S op(%y), attrs` -> op-start / op-done; the -start shape is S
    for all-reduce, (operand, S[, contexts]) for the others."""
    def rewrite(text):
        shapes = dict(re.findall(r"(%[\w.-]+) = (\S+) ", text))
        def one(m):
            root, name, shape, operand, rest = m.groups()
            start = shape if op == "all-reduce" else (
                "(%s, %s%s)" % (shapes[operand], shape, extra_shapes))
            return ("  %s.start = %s %s-start(%s)%s\n  %s%s = %s %s-done(%s.start)"
                    % (name, start, op, operand, rest, root or "", name, shape,
                       op, name))
        return re.sub(r"^  (ROOT )?(%[\w.-]+) = (\S+) " + op +
                      r"\((%[\w.-]+)\)(.*)$", one, text, flags=re.M)
    return rewrite


def variants():
    variant("iota_transposed", "cr_all_reduce_groups",
            groups("{{0,2},{1,3}}", "[2,2]<=[2,2]T(1,0)"))
    variant("iota_plain", "mesh2_psum_b", groups("{{0,1},{2,3}}", "[2,2]<=[4]"))
    variant("iota_one_group", "pmap_psum", groups("{{0,1,2,3}}", "[1,4]<=[4]"))
    variant("mesh_form", "cr_all_reduce_groups",
            groups("{{0,2},{1,3}}", "mesh['x'=2,'y'=2] {'x'}"))
    variant("empty_groups", "cr_all_to_all", groups("{{0,1,2,3}}", "{}"))
    variant("async_all_reduce", "crp_all_reduce", to_async("all-reduce"))
    variant("async_all_gather", "crp_all_gather_order", to_async("all-gather"))
    variant("async_collective_permute", "cr_collective_permute",
            to_async("collective-permute", ", u32[], u32[]"))


# --- by hand: what XLA:CPU cannot run (collective-broadcast; a reduction
# that is not a plain sum, product, min or max); expected values from NumPy.

def hand_case(name, hlo, ins, outs):
    write_case(name, hlo, ins, outs)


def hand_cases():
    x = per_device((3,))
    hand_case("hand_collective_broadcast", """\
HloModule hand_collective_broadcast, replica_count=4

ENTRY e {
  x = f32[3] parameter(0)
  ROOT b = f32[3] collective-broadcast(x), replica_groups={{1,0},{3,2}}
}
""", [x], [[x[1], x[1], x[3], x[3]]])
    x = per_device((4,))
    acc = x[3].copy()
    for k in (1, 0, 2):   # the group's order: acc = acc * x + x
        acc = (acc * x[k] + x[k]).astype(np.float32)
    hand_case("hand_all_reduce_custom", """\
HloModule hand_all_reduce_custom, num_partitions=4

f {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  m = f32[] multiply(a, b)
  ROOT s = f32[] add(m, b)
}

ENTRY e {
  x = f32[4] parameter(0)
  ROOT r = f32[4] all-reduce(x), channel_id=3, replica_groups={{3,1,0,2}}, use_global_device_ids=true, to_apply=f
}
""", [x], [[acc] * 4])


# --- one and two devices: what a machine with one or two GPUs runs
# (tests/gpu/check-collectives-cuda.sh).  XLA keeps a collective of one
# device; its result is its operand, but it still runs through NCCL.

def small_cases():
    global rng
    rng = np.random.default_rng(141)   # apart from the cases above
    d1, d2 = jax.devices()[:1], jax.devices()[:2]
    pmap_case_n("one_psum", d1, lambda x: jax.lax.psum(x, "i"), vals((1, 3, 5)))
    pmap_case_n("one_pmax_pmin", d1,
                lambda x: (jax.lax.pmax(x, "i"), jax.lax.pmin(x, "i")),
                vals((1, 6), np.int32))
    pmap_case_n("one_all_gather", d1,
                lambda x: jax.lax.all_gather(x, "i", axis=1, tiled=True),
                vals((1, 2, 3)))
    pmap_case_n("one_psum_scatter", d1,
                lambda x: jax.lax.psum_scatter(x, "i", scatter_dimension=0,
                                               tiled=True),
                vals((1, 4, 2)))
    pmap_case_n("one_ppermute", d1,
                lambda x: jax.lax.ppermute(x, "i", [(0, 0)]), vals((1, 5)))
    pmap_case_n("one_psum_loop", d1,
                lambda x: jax.lax.fori_loop(
                    0, 3, lambda k, v: jax.lax.psum(v, "i") * 0.5 + 1, x),
                vals((1, 4)))
    pmap_case_n("two_psum", d2, lambda x: jax.lax.psum(x, "i"), vals((2, 3, 5)))
    pmap_case_n("two_all_gather", d2,
                lambda x: jax.lax.all_gather(x, "i", axis=0, tiled=True),
                vals((2, 2, 3)))
    pmap_case_n("two_psum_scatter", d2,
                lambda x: jax.lax.psum_scatter(x, "i", scatter_dimension=1,
                                               tiled=True),
                vals((2, 3, 4)))
    pmap_case_n("two_ppermute", d2,
                lambda x: jax.lax.ppermute(x, "i", [(0, 1), (1, 0)]),
                vals((2, 5)))
    pmap_case_n("two_all_to_all", d2,
                lambda x: jax.lax.all_to_all(x, "i", 0, 0, tiled=True),
                vals((2, 4, 3)))


def main():
    if sys.argv[1:] == ["small"]:
        small_cases()
        return 0
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

    compiled_cases()
    variants()
    hand_cases()
    small_cases()
    return 0


if __name__ == "__main__":
    sys.exit(main())
