#!/usr/bin/env bash
# What a rank's wait costs its next compute: a five-point stencil sweep's
# CPU time a point on core 1 right after the thread has waited G ms
# without touching memory (reading the clock, as a rank polling MPI for
# a late message does), against one sweep right after another
# (scripts/idle-refill.c). MHETA prices a rank's compute by its rows
# alone, as recorded; where the caches lose the rank's rows during its
# waits, the rows cost more after long waits than after short ones, so a
# distribution that shortens the waits also makes each row cheaper.
#
#   scripts/idle-refill.sh [ROUNDS] [KIB,KIB,...] [MS,MS,...]
#
# ROUNDS (default 5) interleaved rounds; KIB: working sets, KiB of the
# sweep's two arrays (default 1024,4096,16384,32768,73728: jacobi at n
# 2048 on 2 ranks holds 32768 a rank); MS: the waits (default
# 0,1,2,5,10,20,50). Each figure is the median of 7 sweeps a round.
# Prints per working set and wait the median over the rounds of the ns a
# point and of its ratio to a wait of 0 in the same round, with the
# ratio's bootstrap 95% CI. Needs cc and 2 cores; run it alone.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
rounds=${1:-5}
kibs=${2:-1024,4096,16384,32768,73728}
gaps=${3:-0,1,2,5,10,20,50}
[[ $rounds =~ ^[1-9][0-9]*$ ]] || { echo "idle-refill: ROUNDS '$rounds' is not a positive integer" >&2; exit 2; }
[[ $kibs =~ ^[1-9][0-9]*(,[1-9][0-9]*)*$ ]] || { echo "idle-refill: KIB '$kibs' is not a list of positive integers" >&2; exit 2; }
[[ $gaps =~ ^[0-9]+(\.[0-9]+)?(,[0-9]+(\.[0-9]+)?)*$ ]] || { echo "idle-refill: MS '$gaps' is not a list of waits in ms" >&2; exit 2; }
[[ ,$gaps, == *,0,* ]] || { echo "idle-refill: MS '$gaps' needs a wait of 0 to compare with" >&2; exit 2; }
[[ $(getconf _NPROCESSORS_ONLN) -ge 2 ]] || { echo "idle-refill: needs 2 cores" >&2; exit 2; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cc -O2 -o "$tmp/idle-refill" "$here/idle-refill.c"
"$tmp/idle-refill" 1 "$rounds" "$kibs" "$gaps" >"$tmp/lines"
python3 - "$tmp/lines" "$rounds" <<'PY'
import random, statistics as st, sys
ns = {}
for line in open(sys.argv[1]):
    r, kib, gap, v = line.split()
    ns[(int(kib), float(gap), int(r))] = float(v)
def ci(v, n=2000):
    rng = random.Random(1)
    meds = sorted(st.median(rng.choices(v, k=len(v))) for _ in range(n))
    return meds[int(0.025 * n)], meds[int(0.975 * n) - 1]
rounds = sorted({r for _, _, r in ns})
print(f"# {sys.argv[2]} rounds, core 1, medians over the rounds")
print(f"{'KiB':>7} {'wait ms':>8} {'ns/pt':>7} {'x wait 0':>9} {'95% CI':>15}")
for kib in sorted({k for k, _, _ in ns}):
    for gap in sorted({g for k, g, _ in ns if k == kib}):
        v = [ns[(kib, gap, r)] for r in rounds]
        x = [ns[(kib, gap, r)] / ns[(kib, 0.0, r)] for r in rounds]
        lo, hi = ci(x)
        print(f"{kib:>7} {gap:>8g} {st.median(v):>7.3f} {st.median(x):>9.3f} [{lo:.3f}, {hi:.3f}]")
PY
