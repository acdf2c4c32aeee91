#!/usr/bin/env bash
# Installs what mheta needs on a fresh Debian machine (idempotent):
# Open MPI (libopenmpi-dev, openmpi-bin) or MPICH (libmpich-dev, mpich; see
# MHETA_MPI below), libclang-dev for mpi-sys bindgen,
# gfortran for the Fortran test, python3 for the demo summary, and Slurm
# (slurmctld, slurmd, slurm-client, munge) for `mheta hosts up --slurm`,
# which runs the daemons itself with files of its own (the packages' services
# and /etc/slurm, /etc/munge are not used).
# Sourced by demo.sh and test.sh.
set -euo pipefail

# MHETA_MPI picks the MPI mheta is built against: openmpi (the default),
# mpich (MPICH, whose ABI Intel MPI, MVAPICH2 and Cray MPICH share), or
# both (scripts/test.sh: the suite on Open MPI, the MPICH checks on MPICH).
MHETA_MPI=${MHETA_MPI:-openmpi}
case "$MHETA_MPI" in
  openmpi) mpi_pkgs=(libopenmpi-dev openmpi-bin) ;;
  mpich) mpi_pkgs=(libmpich-dev mpich) ;;
  both) mpi_pkgs=(libopenmpi-dev openmpi-bin libmpich-dev mpich) ;;
  *) echo "setup: MHETA_MPI=$MHETA_MPI: use openmpi, mpich or both" >&2; exit 2 ;;
esac
export MHETA_MPI

need=()
for pkg in "${mpi_pkgs[@]}" libclang-dev gfortran slurmctld slurmd slurm-client munge; do
  dpkg -s "$pkg" >/dev/null 2>&1 || need+=("$pkg")
done
command -v python3 >/dev/null 2>&1 || need+=(python3)
if [ ${#need[@]} -gt 0 ]; then
  if [ "$(id -u)" -eq 0 ]; then
    echo "setup: installing ${need[*]}" >&2
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null
  else
    echo "setup: missing packages; run as root:" >&2
    echo "  apt-get update && apt-get install -y ${need[*]}" >&2
    exit 1
  fi
fi
command -v cargo >/dev/null 2>&1 || { echo "setup: cargo not found; install Rust (https://rustup.rs)" >&2; exit 1; }

# Open MPI refuses to run as root unless told; CI and these machines are root.
if [ "$(id -u)" -eq 0 ]; then
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
fi

# Build and run against the MPI chosen: Open MPI into target/, MPICH into
# target/mpich/ (the two builds live side by side), each with its own
# compiler wrapper (rsmpi's mpi-sys probes $MPICC) and launcher
# ($MHETA_MPIRUN, read by `mheta bench`).
_mheta_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
use_mpich() {
  export MPICC=mpicc.mpich CARGO_TARGET_DIR="$_mheta_root/target/mpich" MHETA_MPIRUN=mpiexec.mpich
}
use_openmpi() {
  export MPICC=mpicc.openmpi MHETA_MPIRUN=mpirun
  unset CARGO_TARGET_DIR
}
if [ "$MHETA_MPI" = mpich ]; then use_mpich; else use_openmpi; fi
echo "setup: MPI: $("$MPICC" -show 2>/dev/null | grep -o 'openmpi\|mpich' | head -1) through $MPICC, launcher $MHETA_MPIRUN" >&2
