#!/usr/bin/env bash
# Figueira and Berman on 4 ranks: two emulated one-core nodes, a hog on one of them;
# the aggregate slowdown predicted and measured, the spectrum run under
# the load, and --auto with the load arriving mid-run, for jacobi and sor.
# Writes OUT/parallel.json and prints the table. STUDY_QUICK=1: a smoke run.
# Usage: scripts/parallel-study.sh OUT
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -eq 1 ] || { echo "usage: $0 OUT" >&2; exit 2; }
source scripts/setup.sh
cargo build --release --workspace --locked -q
exec python3 scripts/parallel_study.py "$1"
