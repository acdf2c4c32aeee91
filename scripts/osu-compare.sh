#!/usr/bin/env bash
# Set mheta's microbench beside the OSU micro-benchmarks, interleaved.
#
#   scripts/osu-compare.sh OSU_PT2PT_DIR [ROUNDS]
#
# OSU_PT2PT_DIR holds built osu_latency and osu_bw (OSU 7.4:
# c/mpi/pt2pt/standard after ./configure CC=mpicc && make). Each round runs,
# in one run, a bracket:
#   OSU (osu_latency, osu_bw)            -> a
#   mheta bench --np 2 --osu-only        -> OSU's loops and buffers, in a
#                                           process of their own as OSU's
#   OSU again                            -> b
#   mheta bench --np 2 --quick --no-disk -> mheta's own ping-pong and streams
# mheta's figures are divided by the mean of a and b (the bracket cancels a
# drift that is linear over the round), and b / a is the control: how far
# OSU differs from itself a few seconds later. The script prints every
# round at 64 KiB and 1 MiB, then the median over the rounds of each
# per-round ratio. Default 5 rounds. Exit 1 when a median ratio of OSU's
# method (--osu-only) is more than 5% from 1.
# OSU_CLUSTER=SPEC (a spec with hosts and two ranks, e.g.
# clusters/net2slow.toml) runs every side across its emulated hosts: OSU
# under `mheta hosts mpirun SPEC`, mheta's bench with `--cluster SPEC`. OSU_ARGS adds options to
# both OSU programs (across a slow link, `-m 1048576` keeps osu_bw's
# 64-message windows of 4 MiB, 10 s each at 200 Mbit/s, out of the run);
# its `-m` is passed to mheta's bench as `--max-size`.
set -euo pipefail
osu=${1:?usage: scripts/osu-compare.sh OSU_PT2PT_DIR [ROUNDS]}
rounds=${2:-5}
here=$(cd "$(dirname "$0")/.." && pwd)
mheta=${MHETA:-${CARGO_TARGET_DIR:-$here/target}/release/mheta}
# The launcher of the MPI mheta was built for (scripts/setup.sh sets it;
# mheta bench reads it too): build OSU with that MPI's mpicc.
launcher=${MHETA_MPIRUN:-mpirun}
for x in "$osu/osu_latency" "$osu/osu_bw" "$mheta"; do
    [[ -x $x ]] || { echo "osu-compare: $x: not an executable" >&2; exit 2; }
done
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# "size value" lines of the table that follows a header matching $2 (this
# OSU tree's ranks also print "# HOST/POSIX_MEMALIGN: allocated ..." lines,
# which may land inside a table).
table() { awk -v h="$2" 'index($0, h) { on = 1; next } /allocated [0-9]+ bytes/ { next } /^#/ && on && !/^# Size/ { on = 0 } on && $1 ~ /^[0-9]+$/ { print $1, $2 }' "$1"; }
pick() { awk -v s="$2" '$1 == s { print $2 }' <<<"$1"; }
if [[ -n ${OSU_CLUSTER:-} ]]; then
    # Across two emulated hosts: both sides launched into them, the lab
    # brought up once here and taken down at the end if it was down.
    launch=("$mheta" hosts mpirun "$OSU_CLUSTER" --)
    where=(--cluster "$OSU_CLUSTER")
    place="across the hosts of $OSU_CLUSTER (mheta hosts mpirun)"
    if ! "$mheta" hosts status "$OSU_CLUSTER" >/dev/null 2>&1; then
        "$mheta" hosts up "$OSU_CLUSTER" >&2
        trap '"$mheta" hosts down "$OSU_CLUSTER" >/dev/null 2>&1 || true; rm -rf "$tmp"' EXIT
    fi
else
    launch=("$launcher" -np 2)
    where=(--np 2)
    place="2 ranks, one per core ($launcher's default binding)"
fi
run_osu() {
    "${launch[@]}" "$osu/osu_latency" ${OSU_ARGS:-} >"$tmp/lat.$1" 2>&1
    "${launch[@]}" "$osu/osu_bw" ${OSU_ARGS:-} >"$tmp/bw.$1" 2>&1
}
# OSU's -m in OSU_ARGS is mheta's --max-size.
max=()
if [[ ${OSU_ARGS:-} =~ (^|[[:space:]])-m[[:space:]]*([^[:space:]]+) ]]; then
    max=(--max-size "${BASH_REMATCH[2]}")
fi
run_mheta() {
    "$mheta" bench "${where[@]}" "${max[@]}" "$@" >"$tmp/out" 2>"$tmp/err" || { cat "$tmp/err" >&2; exit 2; }
}
for r in $(seq "$rounds"); do
    run_osu a
    run_mheta --osu-only
    mv "$tmp/out" "$tmp/compat"
    run_osu b
    run_mheta --quick --no-disk -o "$tmp/p.json"
    mv "$tmp/out" "$tmp/own"
    la=$(table "$tmp/lat.a" "Latency(us)"); lb=$(table "$tmp/lat.b" "Latency(us)")
    ba=$(table "$tmp/bw.a" "Bandwidth (MB/s)"); bb=$(table "$tmp/bw.b" "Bandwidth (MB/s)")
    cl=$(table "$tmp/compat" "OSU MPI Latency Test"); cb=$(table "$tmp/compat" "OSU MPI Bandwidth Test")
    ol=$(table "$tmp/own" "# Latency, pair 0 -> 1"); ob=$(table "$tmp/own" "# Bandwidth, pair 0 -> 1")
    for s in 65536 1048576; do
        echo "$r $s $(pick "$la" $s) $(pick "$lb" $s) $(pick "$cl" $s) $(pick "$ol" $s)" \
            "$(pick "$ba" $s) $(pick "$bb" $s) $(pick "$cb" $s) $(pick "$ob" $s)"
    done >>"$tmp/rows"
done
awk -v rounds="$rounds" -v place="$place" '
function med(a, n,   i, j, t) { for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
    return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2 }
BEGIN { printf "# pair 0 -> 1, %s, no CPU emulation, %d rounds of OSU, mheta --osu-only, OSU, mheta own\n", place, rounds
        printf "%5s %8s | %8s %8s %8s %8s %6s %6s %6s | %7s %7s %7s %7s %6s %6s %6s\n", "round", "size", "osu a", "osu b", "compat", "own", "c/osu", "o/osu", "b/a", "bw a", "bw b", "compat", "own", "c/osu", "o/osu", "b/a" }
{ n[$2]++; k = n[$2]
  lm = ($3 + $4) / 2; bm = ($7 + $8) / 2
  v[$2, k, 1] = $5 / lm; v[$2, k, 2] = $6 / lm; v[$2, k, 3] = $4 / $3
  v[$2, k, 4] = $9 / bm; v[$2, k, 5] = $10 / bm; v[$2, k, 6] = $8 / $7
  printf "%5d %8d | %8.2f %8.2f %8.2f %8.2f %6.3f %6.3f %6.3f | %7.0f %7.0f %7.0f %7.0f %6.3f %6.3f %6.3f\n", $1, $2, $3, $4, $5, $6, v[$2, k, 1], v[$2, k, 2], v[$2, k, 3], $7, $8, $9, $10, v[$2, k, 4], v[$2, k, 5], v[$2, k, 6] }
END { bad = 0
  printf "# median over the rounds of the per-round ratio (mheta / mean of the two OSU runs; control: second OSU run / first)\n"
  printf "%8s %12s %12s %12s %12s %12s %12s\n", "size", "lat compat", "lat own", "lat control", "bw compat", "bw own", "bw control"
  for (s = 65536; s <= 1048576; s *= 16) { m = n[s]; printf "%8d", s
    for (c = 1; c <= 6; c++) { for (i = 1; i <= m; i++) a[i] = v[s, i, c]; x = med(a, m); printf " %12.3f", x
      if ((c == 1 || c == 4) && (x < 0.95 || x > 1.05)) bad = 1 }
    printf "\n" }
  if (bad) { print "osu-compare: mheta'"'"'s OSU method (--osu-only) is more than 5% from OSU" > "/dev/stderr"; exit 1 } }' "$tmp/rows"
