#!/usr/bin/env bash
# The test command: set up, build everything in release mode (the
# integration tests launch the built binaries under mpirun), run all tests.
#
# MHETA_MPI=both (the default here): the Open MPI build in target/ and
# the MPICH build in target/mpich/; the whole suite on Open MPI, then the
# tests of every crate that links or launches MPI again on MPICH
# (tests/tests/mpich.rs, which names both builds, and the Slurm test run
# in the Open MPI pass only).
# MHETA_MPI=openmpi: Open MPI alone. MHETA_MPI=mpich: MPICH alone.
set -euo pipefail
cd "$(dirname "$0")/.."
export MHETA_MPI=${MHETA_MPI:-both}
source scripts/setup.sh
# Both builds first: the Open MPI pass's tests/tests/mpich.rs runs the
# MPICH build beside the Open MPI one.
[ "$MHETA_MPI" = mpich ] || cargo build --release --workspace --locked
[ "$MHETA_MPI" = openmpi ] || (use_mpich && cargo build --release --workspace --locked)
# One test at a time: the integration tests start MPI jobs on a 2-core machine.
if [ "$MHETA_MPI" != mpich ]; then
  echo "test.sh: the suite on Open MPI" >&2
  cargo test --release --workspace --locked -- --test-threads=1
fi
# The MPICH pass after the Open MPI one runs the crates that link MPI or
# launch MPI jobs; the MPI-free crates' tests (base, trace, profile,
# model, load, scale, place, cli) are the same code on either MPI and ran
# in the first pass. Alone (MHETA_MPI=mpich) it runs them all.
mpi_crates=(-p mheta-interpose -p mheta-microbench -p mheta-runtime -p mheta-apps -p mheta-capi
  -p mheta-hosts -p mheta-tests)
if [ "$MHETA_MPI" != openmpi ]; then
  echo "test.sh: the suite on MPICH" >&2
  if [ "$MHETA_MPI" = mpich ]; then which=(--workspace); else which=("${mpi_crates[@]}"); fi
  (use_mpich && cargo test --release --locked "${which[@]}" -- --test-threads=1)
fi
