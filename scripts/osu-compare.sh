#!/usr/bin/env bash
# Set mheta's microbench beside the OSU micro-benchmarks, interleaved.
#
#   scripts/osu-compare.sh OSU_PT2PT_DIR [ROUNDS]
#
# OSU_PT2PT_DIR holds built osu_latency and osu_bw (OSU 7.4:
# c/mpi/pt2pt/standard after ./configure CC=mpicc && make). Each round runs,
# in one sitting and in turn: osu_latency, osu_bw, and
# `mheta bench --np 2 --quick --no-disk --osu-compat` (which also gives
# mheta's own ping-pong and stream figures). It prints, at 64 KiB and 1 MiB,
# every round's figures and the ratio mheta/OSU, then the median over the
# rounds of the per-round ratio (the machine drifts between rounds, so
# ratios are taken within a round). Default 5 rounds. Exit 1 when a median
# ratio of --osu-compat is more than 5% from 1.
set -euo pipefail
osu=${1:?usage: scripts/osu-compare.sh OSU_PT2PT_DIR [ROUNDS]}
rounds=${2:-5}
here=$(cd "$(dirname "$0")/.." && pwd)
mheta=${MHETA:-$here/target/release/mheta}
for x in "$osu/osu_latency" "$osu/osu_bw" "$mheta"; do
    [[ -x $x ]] || { echo "osu-compare: $x: not an executable" >&2; exit 2; }
done
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
tmp=$(mktemp -d)
[[ -n ${KEEP:-} ]] || trap 'rm -rf "$tmp"' EXIT
# "size value" lines of the table that follows a header matching $2 (this
# OSU tree's ranks also print "# HOST/POSIX_MEMALIGN: allocated ..." lines,
# which may land inside a table).
table() { awk -v h="$2" 'index($0, h) { on = 1; next } /allocated [0-9]+ bytes/ { next } /^#/ && on && !/^# Size/ { on = 0 } on && $1 ~ /^[0-9]+$/ { print $1, $2 }' "$1"; }
pick() { awk -v s="$2" '$1 == s { print $2 }' <<<"$1"; }
mbench() {
    "$mheta" bench --np 2 --quick --no-disk --osu-compat -o "$tmp/p.json" >"$tmp/m" 2>"$tmp/m.err" ||
        { cat "$tmp/m.err" >&2; exit 2; }
}
for r in $(seq "$rounds"); do
    # Odd rounds start with OSU, even rounds with mheta, so that a drift
    # within a round does not favour one side.
    ((r % 2 == 0)) && mbench
    mpirun -np 2 "$osu/osu_latency" >"$tmp/lat" 2>&1
    mpirun -np 2 "$osu/osu_bw" >"$tmp/bw" 2>&1
    ((r % 2 == 1)) && mbench
    ol=$(table "$tmp/lat" "Latency(us)")
    ob=$(table "$tmp/bw" "Bandwidth (MB/s)")
    ml=$(table "$tmp/m" "OSU MPI Latency Test")
    mb=$(table "$tmp/m" "OSU MPI Bandwidth Test")
    own_l=$(table "$tmp/m" "# Latency, pair 0 -> 1")
    own_b=$(table "$tmp/m" "# Bandwidth, pair 0 -> 1")
    for s in 65536 1048576; do
        echo "$r $s $(pick "$ol" $s) $(pick "$ml" $s) $(pick "$own_l" $s) $(pick "$ob" $s) $(pick "$mb" $s) $(pick "$own_b" $s)"
    done >>"$tmp/rows"
    [[ -z ${KEEP:-} ]] || cp "$tmp/m" "$tmp/m.$r"
done
awk -v rounds="$rounds" '
function med(a, n,   i, j, t) { for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
    return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2 }
BEGIN { printf "# pair 0 -> 1, 2 ranks, one per core (mpirun default binding), %d interleaved rounds\n", rounds
        printf "%5s %8s | %10s %10s %10s %6s %6s | %10s %10s %10s %6s %6s\n", "round", "size", "osu_lat", "compat", "own", "c/osu", "o/osu", "osu_bw", "compat", "own", "c/osu", "o/osu" }
{ n[$2]++; k = n[$2]
  lc[$2, k] = $4 / $3; lo[$2, k] = $5 / $3; bc[$2, k] = $7 / $6; bo[$2, k] = $8 / $6
  printf "%5d %8d | %10.2f %10.2f %10.2f %6.3f %6.3f | %10.0f %10.0f %10.0f %6.3f %6.3f\n", $1, $2, $3, $4, $5, $4 / $3, $5 / $3, $6, $7, $8, $7 / $6, $8 / $6 }
END { bad = 0
  printf "# median of per-round ratios mheta/OSU (latency: us, bandwidth: MB/s; own = mheta'"'"'s ping-pong median / stream median)\n"
  printf "%8s %14s %14s %14s %14s\n", "size", "lat compat", "lat own", "bw compat", "bw own"
  for (s in n) { m = n[s]
    for (i = 1; i <= m; i++) { a[i] = lc[s, i]; b[i] = lo[s, i]; c[i] = bc[s, i]; d[i] = bo[s, i] }
    x = med(a, m); y = med(b, m); z = med(c, m); w = med(d, m)
    printf "%8d %14.3f %14.3f %14.3f %14.3f\n", s, x, y, z, w
    if (x < 0.95 || x > 1.05 || z < 0.95 || z > 1.05) bad = 1 }
  if (bad) { print "osu-compare: --osu-compat is more than 5% from OSU" > "/dev/stderr"; exit 1 } }' "$tmp/rows"
