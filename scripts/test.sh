#!/usr/bin/env bash
# The test command: set up, build everything in release mode (the
# integration tests launch the built binaries under mpirun), run all tests.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/setup.sh
cargo build --release --workspace --locked
# One test at a time: the integration tests start MPI jobs on a 2-core machine.
cargo test --release --workspace --locked -- --test-threads=1
