#!/usr/bin/env bash
# F, a rank's lost work rate on a shared core, against its working set:
# a five-point stencil sweep's CPU time a point on core 1 beside a
# spinner time-shared with it (what `mheta load --proc hog` does), over
# the same sweep alone just before and just after (scripts/refill-cost.c).
# The spinner touches almost no memory, so what the sweep loses is what
# the turns away cost its caches, not its share of the core (CPU time,
# not wall time, is measured). The slowdown study's S/F split calls this
# F; a model that prices sharing by CPU share alone takes it as 1.
#
#   scripts/refill-cost.sh [ROUNDS] [MS] [KIB ...]
#
# ROUNDS (default 5) interleaved rounds over the working sets; MS (300)
# ms of the sweep's CPU time a measurement; KIB: working sets, KiB of the
# sweep's two arrays (default 256 1024 4096 16384 36864 73728; jacobi
# at n 3072 on 2 ranks holds 73728 a rank). Prints per working set the
# median over the rounds of F (beside / the mean of alone before and
# after) with its bootstrap 95% CI, the control (after / before alone)
# with its CI, and the sweep's turns away a second of its CPU time.
# Needs cc and 2 cores; run it alone.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
rounds=${1:-5}
ms=${2:-300}
shift $(( $# < 2 ? $# : 2 ))
sets=("$@")
[ ${#sets[@]} -gt 0 ] || sets=(256 1024 4096 16384 36864 73728)
for x in "$rounds" "$ms" "${sets[@]}"; do
  [[ $x =~ ^[1-9][0-9]*$ ]] || { echo "refill-cost: '$x' is not a positive integer" >&2; exit 2; }
done
[[ $(getconf _NPROCESSORS_ONLN) -ge 2 ]] || { echo "refill-cost: needs 2 cores" >&2; exit 2; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cc -O2 -o "$tmp/refill-cost" "$here/refill-cost.c"
"$tmp/refill-cost" 1 "$rounds" "$ms" "${sets[@]}" >"$tmp/lines"
python3 - "$tmp/lines" "$rounds" "$ms" <<'PY'
import random, statistics as st, sys
runs = {}
for line in open(sys.argv[1]):
    r, kib, what, ns, sw = line.split()
    runs.setdefault((int(kib), int(r)), {})[what] = (float(ns), int(sw))
def ci(v, n=2000):
    rng = random.Random(1)
    meds = sorted(st.median(rng.choices(v, k=len(v))) for _ in range(n))
    return meds[int(0.025 * n)], meds[int(0.975 * n) - 1]
print(f"# {sys.argv[2]} rounds, {sys.argv[3]} ms of the sweep's CPU time a measurement, core 1")
print(f"{'KiB':>7} {'alone ns/pt':>11} {'F':>6} {'95% CI':>15} {'control':>8} {'95% CI':>15} {'turns/s':>8}")
for kib in sorted({k for k, _ in runs}):
    rs = [runs[(kib, r)] for r in sorted(r for k, r in runs if k == kib)]
    f = [x["beside"][0] / ((x["alone"][0] + x["again"][0]) / 2) for x in rs]
    c = [x["again"][0] / x["alone"][0] for x in rs]
    # Turns away a second of the sweep's CPU time, beside the spinner.
    turns = st.median(x["beside"][1] / (int(sys.argv[3]) * 1e-3) for x in rs)
    alone = st.median(x["alone"][0] for x in rs)
    (fl, fh), (cl, ch) = ci(f), ci(c)
    print(f"{kib:>7} {alone:>11.3f} {st.median(f):>6.3f} [{fl:.3f}, {fh:.3f}] {st.median(c):>8.3f} [{cl:.3f}, {ch:.3f}] {turns:>8.0f}")
PY
