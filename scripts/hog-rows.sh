#!/usr/bin/env bash
# The model's price of rows on a rank whose core a hog shares, against
# runs: a 2-rank jacobi, one hog on rank 0's core all through, four
# splits, --wait poll and sleep, STUDY_ROUNDS (5) interleaved rounds.
# Writes OUT/hog-rows.json and prints the tables (about 2 minutes).
# Usage: scripts/hog-rows.sh OUT
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -eq 1 ] || { echo "usage: $0 OUT" >&2; exit 2; }
source scripts/setup.sh
cargo build --release --workspace --locked -q
exec python3 scripts/hog_rows.py "$1"
