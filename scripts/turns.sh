#!/usr/bin/env bash
# How long a rank that polls (an MPI rank in a blocking call, which
# spins) is away from its core when spinners share it, and what that
# costs a message it waits for (scripts/turns.c): a thread reading the
# clock on core 1 beside 0-3 spinners pinned there; each gap over 20 us
# is a turn away. A message that arrives at a random moment finds the
# rank away with probability f (the time it is away) and waits out the
# rest of that turn, E[q^2] / (2 E[q]) on average over turns q (a longer
# turn is the likelier to be hit): f * E[q^2] / (2 E[q]). The sharing
# rule prices a time-shared rank at its CPU share, the mean over many
# turns; this is the scale below which that mean does not hold
# (docs/design/load.md, "A time-shared rank's turns").
#
#   scripts/turns.sh [ROUNDS] [SECONDS]
#
# ROUNDS (default 3) interleaved rounds over 0, 1, 2 and 3 spinners,
# SECONDS (default 2) each. Prints per spinner count the medians over the
# rounds: turns away a second, the fraction of the time away, the mean
# turn, E[q^2] / E[q], and the expected wait of a message. Needs cc and 2
# cores; run it alone.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
rounds=${1:-3}
secs=${2:-2}
for x in "$rounds" "$secs"; do
  [[ $x =~ ^[1-9][0-9]*$ ]] || { echo "turns: '$x' is not a positive integer" >&2; exit 2; }
done
[[ $(getconf _NPROCESSORS_ONLN) -ge 2 ]] || { echo "turns: needs 2 cores" >&2; exit 2; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cc -O2 -o "$tmp/turns" "$here/turns.c"
for ((r = 0; r < rounds; r++)); do
  for h in 0 1 2 3; do "$tmp/turns" 1 "$secs" "$h"; done
done >"$tmp/lines"
python3 - "$tmp/lines" "$rounds" "$secs" <<'PY'
import statistics as st, sys
by = {}
for line in open(sys.argv[1]):
    h, t, n, s, s2 = line.split()
    t, n, s, s2 = float(t), int(n), float(s), float(s2)
    by.setdefault(int(h), []).append((n / t, s / t, s / n if n else 0.0, s2 / s if s else 0.0))
print(f"# core 1, {sys.argv[2]} rounds of {sys.argv[3]} s; medians over the rounds")
print(f"{'spinners':>8} {'turns/s':>8} {'away':>6} {'mean ms':>8} {'E[q2]/E[q] ms':>14} {'wait ms':>8}")
for h in sorted(by):
    v = by[h]
    med = lambda k: st.median(x[k] for x in v)
    wait = st.median(x[1] * x[3] / 2 for x in v)
    print(f"{h:>8} {med(0):>8.0f} {med(1):>6.3f} {med(2) * 1e3:>8.3f} {med(3) * 1e3:>14.3f} {wait * 1e3:>8.3f}")
PY
