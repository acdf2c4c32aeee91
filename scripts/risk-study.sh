#!/usr/bin/env bash
# The risk-aware search on this machine: a 2-rank jacobi beside a bursty
# load on one core, planned for its mean and its 95th percentile (mheta
# search --quantile), each plan and Block run 24 times interleaved, with
# the ranks waiting in MPI by polling and by sleeping (STUDY_WAIT=poll or
# sleep: that one only).
# Writes OUT/risk.json and prints the table. STUDY_QUICK=1: a smoke run.
# Usage: scripts/risk-study.sh OUT
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -eq 1 ] || { echo "usage: $0 OUT" >&2; exit 2; }
source scripts/setup.sh
cargo build --release --workspace --locked -q
exec python3 scripts/risk_study.py "$1"
