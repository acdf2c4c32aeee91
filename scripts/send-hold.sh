#!/usr/bin/env bash
# What a sender's transport still holds when its MPI request completes
# (scripts/send-hold.c), in three patterns across a spec's emulated
# hosts, each in a job of its own (fresh connections): "ping", rank 1's
# receive posted before rank 0 sends; "ramp", the same after untimed
# messages of 256 KiB to 2 MiB between the two, as `mheta bench`'s sweep
# runs before it measures `PairCost::send_buffer_bytes`; and "chain",
# every rank sends to the next, stands still SHIFT_MS, then posts its
# receive from the one before, as a move toward the last rank runs (the
# ranks' connections having carried only MPI's own small messages, as an
# application's that exchanges halos of tens of KiB). A transfer starts when
# both its send and its receive are posted; of its bytes, the share of
# that time still to run when the send completed is what the transport
# held (docs/design/model.md, "Moves").
#
#   scripts/send-hold.sh SPEC [KIB] [REPS] [SHIFT_MS]
#
# SPEC: a lab spec with one rank a host (brought up if down, and down
# again after). KIB the message (default 4096), REPS repeats of each
# pattern, interleaved (default 6), SHIFT_MS (default 5). Prints per
# pattern and pair the median and range of the bytes held, in MB. Needs
# mpicc for the MPI the build uses (MPICC, default mpicc).
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
bin=${MHETA_BIN:-$here/target/release}
[[ $# -ge 1 && -f $1 ]] || { echo "send-hold: usage: send-hold.sh SPEC [KIB] [REPS] [SHIFT_MS] (SPEC: a lab spec file)" >&2; exit 2; }
spec=$1 kib=${2:-4096} reps=${3:-6} shift_ms=${4:-5}
for x in "$kib" "$reps"; do
  [[ $x =~ ^[1-9][0-9]*$ ]] || { echo "send-hold: '$x' is not a positive integer" >&2; exit 2; }
done
[[ $shift_ms =~ ^[0-9]+(\.[0-9]+)?$ ]] || { echo "send-hold: SHIFT_MS '$shift_ms' is not a number" >&2; exit 2; }
source "$here/scripts/probe-lab.sh"
probe_lab send-hold "$spec" send-hold
for ((r = 0; r < reps; r++)); do
  for mode in ping ramp chain; do
    "$bin/mheta" hosts mpirun "$spec" -- "$tmp/send-hold" "$mode" "$kib" "$shift_ms" 1 | sed "s/^$mode 0 /$mode $r /"
  done
done >"$tmp/lines"
python3 - "$tmp/lines" "$kib" "$reps" "$shift_ms" "$spec" <<'PY'
import statistics as st, sys
lines, kib, reps, shift, spec = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5]
t = {}
for line in open(lines):
    mode, rep, rank, sent, post, got = line.split()
    t[mode, int(rep), int(rank)] = (float(sent), float(post), float(got))
size = kib * 1024
held = {}
for (mode, rep, rank), (sent, post, got) in t.items():
    dst = rank + 1
    if (mode, rep, dst) not in t or sent == 0.0:
        continue
    if mode != "chain" and rank != 0:
        continue
    _, rpost, rgot = t[mode, rep, dst]
    start = post if mode != "chain" else max(rpost, 0.0)
    if rgot <= start:
        continue
    share = min(max((rgot - sent) / (rgot - start), 0.0), 1.0)
    held.setdefault((mode, rank, dst), []).append(share * size / 1e6)
print(f"# {spec}: {kib} KiB messages, {reps} interleaved repeats; chain: {shift} ms between a rank's send and its receive")
print(f"{'pattern':>8} {'pair':>6} {'held MB, median':>16} {'min':>6} {'max':>6}")
for (mode, a, b), v in sorted(held.items()):
    print(f"{mode:>8} {f'{a}->{b}':>6} {st.median(v):>16.2f} {min(v):>6.2f} {max(v):>6.2f}")
PY
