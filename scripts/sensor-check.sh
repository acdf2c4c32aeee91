#!/usr/bin/env bash
# The CPU sensors (the load watch's availability, the stage share, mheta
# sense) against the kernel's schedstat, beside 0-3 hogs and generators
# of 15-60% communication on one rank's core (see scripts/sensor_check.py).
# Writes OUT/sensor.json and prints the table. STUDY_QUICK=1: 2 repeats.
# Usage: scripts/sensor-check.sh OUT
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -eq 1 ] || { echo "usage: $0 OUT" >&2; exit 2; }
source scripts/setup.sh
cargo build --release --workspace --locked -q
exec python3 scripts/sensor_check.py "$1"
