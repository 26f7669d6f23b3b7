#!/usr/bin/env bash
# check-spmd.sh - SPMD partitioning against XLA, on the cases of
# testdata/spmd/ (JAX programs over 4 CPU devices, see generate.py): for
# each NAME/ with the global inputs in{K}.npy and XLA's results,
#   (a) xla.hlo, XLA's own per-device program: xhlo-run cuts the global
#       inputs by its parameters' shardings; on the interpreter and compiled
#       for the host, every device must give XLA's shard out{K}.{D}.npy;
#   (b) global.hlo, the program JAX hands XLA: xhloc partitions it
#       (--stage=hlo), xhlo-run runs every partition on the interpreter and
#       puts the global results together, which must be XLA's out{K}.npy;
#       the same compiled for the host (with --compare: every device against
#       the interpreter on the partitioned program);
#   (c) where there is one, lowered.hlo, the same program as
#       jax.jit(f).lower(...).as_text() gives it: no num_partitions in its
#       header, which xhloc must take from the Shardy mesh (or GSPMD's
#       shardings) with a note, then partition, run and check as in (b).
# Each of those four runs (devices as threads of one process) runs again
# under `mpirun -np 4` on loopback (tests/mpi.sh), one device per process,
# the collectives through MPI: every process cuts its own device's shards
# of the global inputs; in (a) each prints and checks its own device's
# results, in (b) the first gathers the devices' results and prints and
# checks the global ones, once.  Without mpirun that part fails, saying so.
# XLA:CPU's own forms the host back end refuses are listed (xla_refused):
# it must refuse them with that message.
# The partitioned programs must hold the collectives the case is about
# (a name in the table below: at least one such op, or its -start where
# async-collective-creator made it asynchronous; where the entry names
# groups or pairs too, such an op with them).
#
# Run from the repository root; the binaries are in ${XHLOC_BIN:-build/bin}.
set -u
bin=${XHLOC_BIN:-build/bin}
dir=${XHLOC_SPMD_TESTDATA:-testdata/spmd}
xhloc=$bin/xhloc
run=$bin/xhlo-run
tol=(--atol=1e-4 --rtol=1e-4)
passed=0
failed=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
. tests/mpi.sh   # mpi, have_mpirun, mpi_missing, mpi_brief

# The collective each partitioned program must contain.
declare -A wants=(
  [dp_train_step]="all-reduce("
  [tp_mlp]="all-reduce("
  [seq_parallel]="reduce-scatter("
  [shard_map]="collective-permute("
  [shard_map_gspmd]="all-reduce("
  [mesh2_mlp]="all-reduce("
  [gather_embed]="all-gather("
  [scatter_segments]="all-reduce("
  [uneven]="all-reduce("
  [shape_ops]="all-gather("
  # the collective cases: shard_map over 4 devices, over the axes of a 2x2
  # mesh ("a": devices {0,2},{1,3}; "b": {0,1},{2,3}), GSPMD's form, and
  # jit over a mesh (the partitioner's own collectives)
  [smap_psum]="all-reduce( {{0,1,2,3}}"
  [smap_pmax_pmin]="all-reduce( {{0,1,2,3}}"
  [smap_psum_int]="all-reduce( {{0,1,2,3}}"
  [smap_all_gather]="all-gather( {{0,1,2,3}}"
  [smap_all_gather_stacked]="all-gather( {{0,1,2,3}}"
  [smap_psum_scatter]="reduce-scatter( {{0,1,2,3}}"
  [smap_psum_scatter_untiled]="reduce-scatter( {{0,1,2,3}}"
  [smap_all_to_all]="all-to-all( {{0,1,2,3}}"
  [smap_all_to_all_untiled]="all-to-all( {{0,1,2,3}}"
  [smap_ppermute]="collective-permute( {{0,1},{1,2},{2,3},{3,0}}"
  [smap_ppermute_partial]="collective-permute( {{0,3},{3,1}}"
  [smap_ppermute_loop]="collective-permute( {{0,1},{1,2},{2,3},{3,0}}"
  [smap_axis_index]="partition-id("
  [mesh2_psum_a]="all-reduce( {{0,2},{1,3}}"
  [mesh2_psum_b]="all-reduce( {{0,1},{2,3}}"
  [mesh2_psum_ab]="all-reduce( {{0,1,2,3}}"
  [mesh2_pmax_a]="all-reduce( {{0,2},{1,3}}"
  [mesh2_all_gather_a]="all-gather( {{0,2},{1,3}}"
  [mesh2_all_gather_b]="all-gather( {{0,1},{2,3}}"
  [mesh2_psum_scatter_a]="reduce-scatter( {{0,2},{1,3}}"
  [mesh2_psum_scatter_b]="reduce-scatter( {{0,1},{2,3}}"
  [mesh2_ppermute_a]="collective-permute( {{0,2},{2,0},{1,3},{3,1}}"
  [mesh2_ppermute_b_partial]="collective-permute( {{0,1},{2,3}}"
  [mesh2_all_to_all_a]="all-to-all( {{0,2},{1,3}}"
  [mesh2_all_to_all_b]="all-to-all( {{0,1},{2,3}}"
  [mesh2_axis_index]="partition-id("
  [mesh2_partial_psum_a]="all-reduce( {{0,2},{1,3}}"
  [mesh2_partial_all_gather_b]="all-gather( {{0,1},{2,3}}"
  [gspmd_mesh2_partial_psum_a]="all-reduce( {{0,2},{1,3}}"
  [gspmd_mesh2_psum_a]="all-reduce( {{0,2},{1,3}}"
  [gspmd_mesh2_all_gather_b]="all-gather( {{0,1},{2,3}}"
  [jit_reshard_all_to_all]="all-to-all( {{0,1,2,3}}"
  [jit_mesh2_sum_a]="all-reduce( {{0,2},{1,3}}"
  [jit_mesh2_max_b]="all-reduce( {{0,1},{2,3}}"
  [jit_mesh2_gather_b]="all-gather( {{0,1},{2,3}}"
  [jit_mesh2_swap_axes]="collective-permute( {{0,0},{2,1},{1,2},{3,3}}"
  [jit_mesh2_move_axis]="collective-permute( {{0,0},{2,1},{1,2},{3,3}}"
)

# XLA's per-device programs the host back end refuses (XLA:CPU's own
# forms), with the message it must give.
declare -A xla_refused=(
  [scan_loop]="buffer assignment does not support call"
)

ok() { passed=$((passed + 1)); }
bad() {
  failed=$((failed + 1))
  echo "FAIL: $1"
  [ -s "$tmp/err" ] && sed 's/^/    /' "$tmp/err" | head -n 8
  return 0
}

for x in "$xhloc" "$run"; do
  if [ ! -x "$x" ]; then
    echo "check-spmd: FAIL: $x is missing (run make)"
    echo "0 passed, 1 failed"
    exit 1
  fi
done

# both WHAT ARTIFACT per|global [ARG...]: the case's global inputs with
# XLA's results (per device, or global) to check, the devices as threads of
# this process (with ARGs), then under mpirun -np 4, one device per process.
# There, per device, every device's results are printed once, each by its
# own process; global, the results are printed once (a line naming their
# shape for each), by the first process, and no device's.
mpi_runs=0
both() {
  local what=$1 art=$2 form=$3 rc want
  shift 3
  if [ "$form" = per ]; then want=("${per[@]}"); else want=("${glob[@]}"); fi
  if timeout 120 "$run" "$art" "${ins[@]}" "${want[@]}" "${tol[@]}" --quiet "$@" \
       >"$tmp/err" 2>&1; then
    ok
  else
    bad "$case: $what"
  fi
  [ -n "$have_mpi" ] || return 0
  mpi_runs=$((mpi_runs + 1))
  timeout 120 "${mpi[@]}" -np 4 "$run" "$art" "${ins[@]}" "${want[@]}" "${tol[@]}" \
    >"$tmp/out" 2>"$tmp/mpierr"
  rc=$?
  mpi_brief <"$tmp/mpierr" | sed 's/^    //' >"$tmp/err"
  if [ "$rc" -ne 0 ]; then
    bad "$case: $what, under mpirun -np 4 (exit $rc)"
  elif [ "$form" = per ] &&
       [ "$(grep -oE 'device [0-9]+ \(replica' "$tmp/out" | sort | uniq -u | wc -l)" -ne 4 ]; then
    bad "$case: $what, under mpirun -np 4: not every device's results, each once"
  elif [ "$form" = global ] &&
       { [ "$(grep -cE '^[a-z][a-z0-9]*\[[0-9,]*\]' "$tmp/out")" -ne ${#glob[@]} ] ||
         grep -q 'device [0-9]' "$tmp/out"; }; then
    bad "$case: $what, under mpirun -np 4: its global results (${#glob[@]}) not printed once"
  else
    ok
  fi
}
have_mpi=
if have_mpirun; then
  have_mpi=1
else
  : >"$tmp/err"
  bad "$mpi_missing"
fi

ncases=0 nlowered=0
for case in "$dir"/*/; do
  case=${case%/}
  name=$(basename "$case")
  [ -f "$case/global.hlo" ] || continue
  ncases=$((ncases + 1))
  ins=() glob=() per=()
  k=0
  while [ -f "$case/in$k.npy" ]; do ins+=("--input=@$case/in$k.npy"); k=$((k + 1)); done
  k=0
  while [ -f "$case/out$k.npy" ]; do
    glob+=("--expected-output=@$case/out$k.npy")
    per+=("--expected-output=@$case/out$k.{d}.npy")
    k=$((k + 1))
  done
  if [ ${#ins[@]} -eq 0 ] || [ ${#glob[@]} -eq 0 ]; then
    : >"$tmp/err"
    bad "$case: no inputs or expected outputs"
    continue
  fi

  # (a) XLA's per-device program, global inputs
  both "XLA's program on the interpreter" "$case/xla.hlo" per
  refuse=${xla_refused[$name]:-}
  if [ -n "$refuse" ]; then
    if ! "$xhloc" --target=host "$case/xla.hlo" -o "$tmp/x_$name" >"$tmp/err" 2>&1 &&
       grep -qF -- "$refuse" "$tmp/err"; then
      ok
    else
      bad "$case: XLA's program: the host back end should refuse it with '$refuse'"
    fi
  elif "$xhloc" --target=host "$case/xla.hlo" -o "$tmp/x_$name" >"$tmp/err" 2>&1; then
    both "XLA's program compiled for the host" "$tmp/x_$name.thunks" per
  else
    bad "$case: XLA's program: xhloc --target=host"
  fi

  # (b) the global program partitioned by xhloc
  if "$xhloc" --stage=hlo "$case/global.hlo" -o "$tmp/$name.hlo" >"$tmp/err" 2>&1; then
    both "partitioned by xhloc, on the interpreter" "$tmp/$name.hlo" global
  else
    bad "$case: the global program: xhloc --stage=hlo"
  fi
  want=${wants[$name]:-}
  if [ -n "$want" ]; then
    op=${want%% *} grp=
    [ "$op" != "$want" ] && grp="=${want#* }"
    if grep -E -- " ${op%(}(-start)?\(" "$tmp/$name.hlo" 2>/dev/null |
       grep -qF -- "$grp"; then
      ok
    else
      : >"$tmp/err"
      bad "$case: the partitioned program has no $want"
    fi
  fi
  if "$xhloc" --target=host "$case/global.hlo" -o "$tmp/g_$name" >"$tmp/err" 2>&1; then
    both "partitioned by xhloc, compiled for the host" "$tmp/g_$name.thunks" global --compare
  else
    bad "$case: the global program: xhloc --target=host"
  fi

  # (c) the program as JAX's as_text() gives it: no num_partitions
  [ -f "$case/lowered.hlo" ] || continue
  nlowered=$((nlowered + 1))
  if "$xhloc" --stage=hlo "$case/lowered.hlo" -o "$tmp/l_$name.hlo" >"$tmp/err" 2>&1 &&
     grep -q 'note: the header gives no num_partitions: 4' "$tmp/err" &&
     head -n 1 "$tmp/l_$name.hlo" | grep -q 'num_partitions=4'; then
    both "as_text() form, partitioned by xhloc, on the interpreter" "$tmp/l_$name.hlo" global
  else
    bad "$case: lowered.hlo: xhloc --stage=hlo (with the note, num_partitions=4)"
  fi
  if "$xhloc" --target=host "$case/lowered.hlo" -o "$tmp/lg_$name" >"$tmp/err" 2>&1; then
    both "as_text() form, partitioned by xhloc, compiled for the host" "$tmp/lg_$name.thunks" \
      global --compare
  else
    bad "$case: lowered.hlo: xhloc --target=host"
  fi
done
if [ "$nlowered" -lt 8 ]; then
  : >"$tmp/err"
  bad "$dir holds $nlowered lowered.hlo (as_text) cases, fewer than the 8 expected"
fi
if [ "$ncases" -lt 50 ]; then
  : >"$tmp/err"
  bad "$dir holds $ncases cases, fewer than the 50 expected"
fi

# Global results written once, per device with {d}; a wrong global input is
# refused with the shapes it could have had.
case=$dir/tp_mlp
"$xhloc" --stage=hlo "$case/global.hlo" -o "$tmp/tp.hlo" 2>/dev/null
if "$run" "$tmp/tp.hlo" --input=@"$case/in0.npy" --input=@"$case/in1.npy" \
     --input=@"$case/in2.npy" --output=@"$tmp/g.npy" >"$tmp/err" 2>&1 && [ -f "$tmp/g.npy" ] &&
   "$run" "$tmp/tp.hlo" --input=@"$case/in0.npy" --input=@"$case/in1.npy" \
     --input=@"$case/in2.npy" --output=@"$tmp/d.{d}.npy" >"$tmp/err" 2>&1 &&
   [ -f "$tmp/d.3.npy" ] && ! [ -f "$tmp/d.{d}.npy" ]; then
  ok
else
  bad "global and per-device outputs of $case"
fi
if "$run" "$tmp/tp.hlo" --input=@"$case/in0.npy" --input=@"$case/in2.npy" \
     --input=@"$case/in2.npy" >"$tmp/err" 2>&1; then
  bad "a wrong global input to $case was taken"
elif grep -qF "input 1 is f32[16,4], expected f32[4,16] (the global array) or f32[4,4]" "$tmp/err"; then
  ok
else
  bad "a wrong global input to $case: the message names the shapes"
fi

echo "check-spmd: $ncases cases ($nlowered also as_text()), $mpi_runs runs under mpirun -np 4"
echo "check-spmd: $passed passed, $failed failed"
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
