#!/usr/bin/env bash
# The noise floor of in-core accuracy: how much the CPU time of one and
# the same sweep varies on this machine.
#
#   scripts/cpu-noise.sh [ROUNDS] [REPS]
#
# Compiles scripts/cpu-noise.c (cc) and runs, ROUNDS times (default 3),
# interleaved: one sweeper alone on core 0, then one on each core at once
# (the machine as a 2-rank run uses it), each timing REPS (default 400)
# sweeps of a 512 x 2048 stencil in its own CPU time. Columns: the run,
# its core, then min, p10, median, p90 and max of one sweep in ms, and
# p90 / p10. CPU time leaves out waiting for the core, so what varies is
# the work itself (the memory bus, caches, the host). The paced CPU
# emulation stretches each piece of a rank's work in proportion to its
# CPU time, so an in-core iteration inherits this variation, and a model
# of the same rows cannot be closer to a run than runs are to each other.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
rounds=${1:-3}
reps=${2:-400}
[[ $rounds =~ ^[1-9][0-9]*$ ]] || { echo "cpu-noise: ROUNDS must be a positive integer, got '$rounds'" >&2; exit 2; }
[[ $reps =~ ^[1-9][0-9]+$ ]] || { echo "cpu-noise: REPS must be an integer of at least 10, got '$reps'" >&2; exit 2; }
cores=$(getconf _NPROCESSORS_ONLN)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cc -O2 -o "$tmp/cpu-noise" "$here/cpu-noise.c"
echo "# $(uname -r), $cores cores; one sweep's CPU time, ms"
printf '%-12s %5s %8s %8s %8s %8s %8s %8s\n' run core min p10 median p90 max p90/p10
for _ in $(seq 1 "$rounds"); do
    "$tmp/cpu-noise" 512 "$reps" 0 alone
    if ((cores > 1)); then
        "$tmp/cpu-noise" 512 "$reps" 0 both &
        "$tmp/cpu-noise" 512 "$reps" 1 both
        wait
    fi
done
