#!/usr/bin/env bash
# A CPU hog landing mid-run on one rank's core: Block, the static ideal
# and --auto, interleaved, for jacobi and sor (see scripts/hog_study.py).
# Writes OUT/hog.json and prints the table and the verdicts.
# STUDY_QUICK=1: 2 rounds (default 5); STUDY_AUTO_ARGS: more --auto arguments.
# Usage: scripts/hog-study.sh OUT
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -eq 1 ] || { echo "usage: $0 OUT" >&2; exit 2; }
source scripts/setup.sh
cargo build --release --workspace --locked -q
exec python3 scripts/hog_study.py "$1"
