#!/usr/bin/env bash
# The link matrix mheta's microbench measures across emulated hosts,
# beside the rates and latencies the spec shapes.
#
#   scripts/link-matrix.sh SPEC OUT_DIR [PROFILE]
#
# Runs `mheta bench --cluster SPEC --quick --output OUT_DIR/profile.json`
# (which brings the hosts up if they are down and leaves them as found),
# then prints `mheta show --profile` of it: per pair the measured
# bandwidth and latency, the spec's shaped figure and their ratio.
# PROFILE: a profile that the same bench across SPEC's hosts already
# wrote (the accuracy study's OUT_DIR/p4-SPEC.json), shown instead of
# measuring again.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
mheta=${MHETA:-$here/target/release/mheta}
[[ $# == 2 || $# == 3 ]] || { echo "usage: scripts/link-matrix.sh SPEC OUT_DIR [PROFILE]" >&2; exit 2; }
mkdir -p "$2"
if [[ $# == 3 ]]; then
    cp "$3" "$2/profile.json" || { echo "link-matrix: $3: cannot read the profile" >&2; exit 1; }
else
    "$mheta" bench --cluster "$1" --quick --output "$2/profile.json" >"$2/bench.log" 2>&1 ||
        { cat "$2/bench.log" >&2; echo "link-matrix: mheta bench --cluster $1 failed" >&2; exit 1; }
fi
"$mheta" show --profile "$2/profile.json"
