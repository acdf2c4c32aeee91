#!/usr/bin/env bash
# The test command: set up, build everything in release mode (the
# integration tests launch the built binaries under mpirun), run all tests.
#
# MHETA_MPI=both (the default here): the Open MPI build in target/ and
# the MPICH build in target/mpich/; the whole suite on Open MPI, and
# tests/tests/mpich.rs on MPICH. MHETA_MPI=openmpi: Open MPI alone.
# MHETA_MPI=mpich: the MPICH build, its unit tests and the MPICH checks.
set -euo pipefail
cd "$(dirname "$0")/.."
export MHETA_MPI=${MHETA_MPI:-both}
source scripts/setup.sh
if [ "$MHETA_MPI" != openmpi ]; then
  (use_mpich && cargo build --release --workspace --locked)
fi
if [ "$MHETA_MPI" = mpich ]; then
  use_mpich
  cargo test --release --workspace --locked --lib --bins -- --test-threads=1
  cargo test --release --locked -p mheta-tests --test mpich -- --test-threads=1
  exit 0
fi
cargo build --release --workspace --locked
# One test at a time: the integration tests start MPI jobs on a 2-core machine.
cargo test --release --workspace --locked -- --test-threads=1
