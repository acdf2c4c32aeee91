#!/usr/bin/env bash
# Figueira and Berman's table 7 on this machine: a serial sor and a 2-rank jacobi under
# 1, 2 and 3 `mheta load` generators pinned to their cores, predicted
# (mheta slowdown / mheta predict --load) against measured, interleaved.
# Writes OUT/slowdown.json and prints the table. STUDY_QUICK=1: a smoke run.
# Usage: scripts/slowdown-study.sh OUT
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -eq 1 ] || { echo "usage: $0 OUT" >&2; exit 2; }
source scripts/setup.sh
cargo build --release --workspace --locked -q
exec python3 scripts/slowdown_study.py "$1"
