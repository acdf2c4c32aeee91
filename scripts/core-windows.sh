#!/usr/bin/env bash
# How long must a rank be measured before its speed is its own? Two cores
# of this machine, both sweeping jacobi's in-core stage at once
# (scripts/core-windows.c), compared over windows of 20 ms, 0.2 s, 1 s and
# 5 s: per window, core 1's median sweep (CPU time) over core 0's. Two
# cores of one kind have a long-run ratio near 1; the spread of the
# ratio over short windows is the heterogeneity a model sees in cores
# that have none when it learns from that short a window (3 jacobi
# iterations at n 2048 on 2 ranks last about 20 ms).
#
#   scripts/core-windows.sh [SECONDS]
#
# SECONDS (default 20) of sweeping; prints each core's median, p10 and
# p90, then per window length the ratio's median, p10 and p90 and the
# number of windows. Needs cc and 2 cores; run it alone.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
secs=${1:-20}
[[ $secs =~ ^[1-9][0-9]*$ ]] || { echo "core-windows: SECONDS must be a positive integer, got '$secs'" >&2; exit 2; }
[[ $(getconf _NPROCESSORS_ONLN) -ge 2 ]] || { echo "core-windows: needs 2 cores" >&2; exit 2; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cc -O2 -pthread -o "$tmp/core-windows" "$here/core-windows.c"
"$tmp/core-windows" "$secs" >"$tmp/sweeps"
python3 - "$tmp/sweeps" "$secs" <<'PY'
import statistics as st, sys
secs = float(sys.argv[2])
d = {0: [], 1: []}
for line in open(sys.argv[1]):
    k, t, ms = line.split()
    d[int(k)].append((float(t), float(ms)))
def pct(v, q):
    v = sorted(v)
    return v[min(len(v) - 1, int(q * len(v)))]
print(f"# {secs:.0f} s, both cores sweeping at once; one sweep's CPU time, ms")
for k in (0, 1):
    v = [x for _, x in d[k]]
    print(f"core {k}: {len(v)} sweeps, median {st.median(v):.3f}, p10 {pct(v, .1):.3f}, p90 {pct(v, .9):.3f}")
print("# core 1 / core 0, median sweep per window")
print(f"{'window s':>9} {'median':>7} {'p10':>6} {'p90':>6} {'windows':>8}")
for w in (0.02, 0.2, 1.0, 5.0):
    ratios, t = [], 0.0
    while t + w <= secs:
        a = [x for s, x in d[0] if t <= s < t + w]
        b = [x for s, x in d[1] if t <= s < t + w]
        if a and b:
            ratios.append(st.median(b) / st.median(a))
        t += w
    if ratios:
        print(f"{w:>9.2f} {st.median(ratios):>7.3f} {pct(ratios, .1):>6.3f} {pct(ratios, .9):>6.3f} {len(ratios):>8}")
PY
