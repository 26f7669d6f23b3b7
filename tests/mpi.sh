# mpi.sh - sourced by the shell checks that run xhlo-run under an MPI
# launcher (check-collectives-mpi.sh, check-spmd.sh, check-nccl.sh): the
# launcher's command line for a job on this machine, and the words for a
# machine without one.
#
#   mpi=(...)          `"${mpi[@]}" -np N xhlo-run ...`: OpenMPI's mpirun
#                      with its processes on this machine, talking through
#                      shared memory (btl vader), the launcher's own wiring
#                      on loopback; --allow-run-as-root for CI's root,
#                      --oversubscribe for 4 processes on fewer cores.
#                      pml ob1 (the one that uses those btls) is named, so
#                      no other is tried: that halves MPI_Init's time here
#                      (about 0.6 s to 0.3 s for 4 processes).  Under the
#                      sanitizers (make asan) the processes run without
#                      LeakSanitizer's leak check: OpenMPI keeps what
#                      MPI_Init allocated past MPI_Finalize, in components it
#                      has unloaded by then (frames LeakSanitizer cannot
#                      name, so no suppression matches them); the same code
#                      without MPI is leak-checked by the threaded checks.
#   have_mpirun        true when mpirun is there
#   mpi_missing        the failure's text when it is not
#   mpi_brief          a job's output (stdin) without OpenMPI's banners about
#                      the job it ended, first 8 lines, indented
mpi=(env "ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"
     mpirun --allow-run-as-root --oversubscribe --mca pml ob1 --mca btl self,vader
     --mca oob_tcp_if_include lo)
mpi_missing="mpirun is missing: install OpenMPI with scripts/setup.sh (Debian's openmpi-bin and libopenmpi-dev)"

have_mpirun() { command -v mpirun >/dev/null 2>&1; }

mpi_brief() {
  grep -v '^---\|^Primary job\|^a non-zero\|^mpirun detected\|^the job\|^ *Process name\|^ *Exit code\|^$' |
    head -n 8 | sed 's/^/    /'
}
