#!/usr/bin/env bash
# Installs what mheta needs on a fresh Debian machine (idempotent):
# Open MPI (libopenmpi-dev, openmpi-bin), libclang-dev for mpi-sys bindgen,
# gfortran for the Fortran test, python3 for the demo summary, and Slurm
# (slurmctld, slurmd, slurm-client, munge) for `mheta hosts up --slurm`,
# which runs the daemons itself with files of its own (the packages' services
# and /etc/slurm, /etc/munge are not used).
# Sourced by demo.sh and test.sh.
set -euo pipefail

need=()
for pkg in libopenmpi-dev openmpi-bin libclang-dev gfortran slurmctld slurmd slurm-client munge; do
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
