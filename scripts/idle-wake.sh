#!/usr/bin/env bash
# Why a rank yields when its work goes under SCHED_IDLE.
#
#   scripts/idle-wake.sh [ROUNDS] [SAMPLES]
#
# Compiles scripts/idle-wake.c (cc) and runs it ROUNDS times (default 3)
# each way, interleaved: a neighbour on core 0 that computes 2 ms under
# SCHED_IDLE after each 4 ms sleep, with and without a sched_yield right
# after switching to SCHED_IDLE, while a normal thread on the same core
# sleeps 50 us SAMPLES times (default 20000). It prints how many of that
# thread's wake-up gaps ran over 0.5 and 1 ms, and the worst. A rank's
# MPI waits sleep like that thread (`--wait sleep`), and its work is the
# neighbour's (apps/src/emulate.rs, `Emulation::work`). Needs root (or
# CAP_SYS_NICE) for the policy switches.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
rounds=${1:-3}
samples=${2:-20000}
[[ $rounds =~ ^[1-9][0-9]*$ ]] || { echo "idle-wake: ROUNDS must be a positive integer, got '$rounds'" >&2; exit 2; }
[[ $samples =~ ^[1-9][0-9]*$ ]] || { echo "idle-wake: SAMPLES must be a positive integer, got '$samples'" >&2; exit 2; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cc -O2 -o "$tmp/idle-wake" "$here/idle-wake.c"
echo "# kernel $(uname -r)"
printf '%-9s %8s %10s %8s %9s\n' neighbour samples 'gaps>0.5ms' 'gaps>1ms' 'worst_us'
for _ in $(seq 1 "$rounds"); do
    "$tmp/idle-wake" 0 "$samples"
    "$tmp/idle-wake" 1 "$samples"
done
