#!/usr/bin/env bash
# Schopf and Berman on this machine: serial sor runs under bursty mode-switching load,
# predicted as mean ± 2σ from sensed CPU availability (mheta sense, mheta
# slowdown), 30 runs per size beside a hog of 1 s dwells, 20 longer runs per
# size beside one of 0.2 s dwells; a single-mode case too.
# Writes OUT/stochastic.json and prints the table. STUDY_QUICK=1: a smoke run.
# Usage: scripts/stochastic-study.sh OUT
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -eq 1 ] || { echo "usage: $0 OUT" >&2; exit 2; }
source scripts/setup.sh
cargo build --release --workspace --locked -q
exec python3 scripts/stochastic_study.py "$1"
