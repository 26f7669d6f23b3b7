# collective_case.sh - sourced by the checks that run the per-device cases
# of testdata/collectives (check-collectives.sh, check-collectives-mpi.sh,
# check-nccl.sh, gpu/check-collectives-cuda.sh): what a case directory holds.
#
#   devices CASE   replica_count x num_partitions of CASE/module.hlo
#   io CASE        its xhlo-run options, one per line: --input=@CASE/in{K}.{d}.npy
#                  for every argument K, then --expected-output=@CASE/out{K}.{d}.npy
#                  for every result K (read them with mapfile -t args < <(io CASE))

devices() {
  local h r p
  h=$(grep -m1 '^HloModule' "$1/module.hlo")
  r=$(printf '%s' "$h" | sed -n 's/.*replica_count=\([0-9]*\).*/\1/p')
  p=$(printf '%s' "$h" | sed -n 's/.*num_partitions=\([0-9]*\).*/\1/p')
  echo $(( ${r:-1} * ${p:-1} ))
}

io() {
  local k=0
  while [ -f "$1/in$k.0.npy" ]; do printf '%s\n' "--input=@$1/in$k.{d}.npy"; k=$((k + 1)); done
  k=0
  while [ -f "$1/out$k.0.npy" ]; do
    printf '%s\n' "--expected-output=@$1/out$k.{d}.npy"
    k=$((k + 1))
  done
}
