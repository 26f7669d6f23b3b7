#!/bin/sh
# setup.sh - install what building and testing xhloc needs (Debian 12).
#
#   scripts/setup.sh          install the missing packages, quietly if none is
#   scripts/setup.sh --check  only report what is missing (exit 1 if any)
#
# Idempotent: the installed packages are checked with dpkg-query first, and
# apt-get runs only when something is missing.  Runs apt-get as root, or
# through sudo when not root.  The Makefile calls this when a build or test
# tool is not found.
set -eu

# Package: what needs it.
#   build-essential, make     the C compiler (gcc) and make
#   pkg-config                finding Criterion's flags
#   llvm-19-dev               LLVM-C headers and LLVM's libraries for xhloc's
#                             emitters (xhloc links the static ones)
#   libzstd-dev, zlib1g-dev   what LLVM's static libraries link against
#   llvm-19-tools             FileCheck-19 for the golden tests
#   clang-19, libclang-rt-19-dev  libFuzzer and the sanitizer runtimes
#   libcriterion-dev          the unit-test framework
#   libdnnl-dev               oneDNN: the host's GEMM and convolution library
#                             (xhlo-run opens libdnnl.so.2 with dlopen; the
#                             header checks its ABI in the unit tests)
#   python3                   small test helpers
#   openmpi-bin, libopenmpi-dev  mpirun and OpenMPI's libmpi.so.40: xhlo-run
#                             under mpirun runs one device per process, its
#                             collectives through MPI (libmpi opened with
#                             dlopen; mpi.h checks its ABI in the unit tests)
PACKAGES="build-essential make pkg-config llvm-19-dev libzstd-dev zlib1g-dev llvm-19-tools clang-19
libclang-rt-19-dev libcriterion-dev libdnnl-dev python3 openmpi-bin libopenmpi-dev"

check_only=0
case "${1:-}" in
--check) check_only=1 ;;
"") ;;
-h | --help)
  sed -n '2,10p' "$0" | sed 's/^# \{0,1\}//'
  exit 0
  ;;
*)
  echo "setup.sh: unknown argument '$1' (try --help)" >&2
  exit 2
  ;;
esac

if ! command -v dpkg-query >/dev/null 2>&1; then
  echo "setup.sh: dpkg-query not found: this script installs packages on" \
    "Debian 12 only; install these by hand: $PACKAGES" >&2
  exit 1
fi

missing=""
for p in $PACKAGES; do
  status=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)
  case "$status" in
  *" installed") ;;
  *) missing="$missing $p" ;;
  esac
done

[ -z "$missing" ] && exit 0

if [ "$check_only" = 1 ]; then
  echo "setup.sh: missing packages:$missing" >&2
  exit 1
fi

if [ "$(id -u)" = 0 ]; then
  as_root=""
elif command -v sudo >/dev/null 2>&1; then
  as_root="sudo"
else
  echo "setup.sh: need root (or sudo) to install:$missing" >&2
  exit 1
fi

echo "setup.sh: installing$missing"
export DEBIAN_FRONTEND=noninteractive
$as_root apt-get update -qq
# shellcheck disable=SC2086
$as_root apt-get install -y -qq --no-install-recommends $missing
echo "setup.sh: done"
