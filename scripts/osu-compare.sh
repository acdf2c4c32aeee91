#!/usr/bin/env bash
# Set mheta's microbench beside the OSU micro-benchmarks, interleaved.
#
#   scripts/osu-compare.sh OSU_PT2PT_DIR [ROUNDS]
#
# OSU_PT2PT_DIR holds built osu_latency and osu_bw (OSU 7.4:
# c/mpi/pt2pt/standard after ./configure CC=mpicc && make). Each round runs,
# in one run, a bracket:
#   OSU (osu_latency, osu_bw)            -> a
#   mheta bench --np 2 --osu-only        -> OSU's loops and buffers, each
#                                           test in processes of its own,
#                                           as OSU's two programs
#   OSU again                            -> b
#   mheta bench --np 2 --quick --no-disk -> mheta's own ping-pong and streams
# mheta's figures are divided by the mean of a and b (the bracket cancels a
# drift that is linear over the round), and b / a is the control: how far
# OSU differs from itself a few seconds later. The script prints every
# round at every size from 64 KiB up, then per size the median over the
# rounds of each per-round ratio, with a bootstrap 95% CI for OSU's
# method. Default 5 rounds. Exit 1 when a median ratio of OSU's method
# (--osu-only) is more than 3% from 1 at some size.
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
    # Every size from 64 KiB up that both OSU runs printed; "-" where
    # mheta's own sweep has no such size.
    for s in $(awk '$1 >= 65536 { print $1 }' <<<"$la"); do
        row="$r $s"
        for t in "$la" "$lb" "$cl" "$ol" "$ba" "$bb" "$cb" "$ob"; do
            v=$(pick "$t" "$s"); row+=" ${v:--}"
        done
        echo "$row"
    done >>"$tmp/rows"
done
python3 - "$tmp/rows" "$rounds" "$place" <<'PY'
import random, statistics, sys
rows, rounds, place = sys.argv[1], int(sys.argv[2]), sys.argv[3]
GOAL = 0.03  # OSU's method within 3% of OSU at every size from 64 KiB
by = {}
for line in open(rows):
    f = line.split()
    r, s = int(f[0]), int(f[1])
    v = [None if x == "-" else float(x) for x in f[2:]]
    la, lb, cl, ol, ba, bb, cb, ob = v
    lm, bm = (la + lb) / 2, (ba + bb) / 2
    ratio = lambda x, m: None if x is None else x / m
    by.setdefault(s, []).append((r, la, lb, cl, ol, ba, bb, cb, ob,
        [ratio(cl, lm), ratio(ol, lm), lb / la, ratio(cb, bm), ratio(ob, bm), bb / ba]))
print(f"# pair 0 -> 1, {place}, no CPU emulation, {rounds} rounds of OSU, mheta --osu-only, OSU, mheta own")
print(f"{'round':>5} {'size':>8} | {'osu a':>8} {'osu b':>8} {'compat':>8} {'own':>8} {'c/osu':>6} {'o/osu':>6} {'b/a':>6} |"
      f" {'bw a':>7} {'bw b':>7} {'compat':>7} {'own':>7} {'c/osu':>6} {'o/osu':>6} {'b/a':>6}")
fmt = lambda x, w, p: f"{'-':>{w}}" if x is None else f"{x:>{w}.{p}f}"
for s in sorted(by):
    for (r, la, lb, cl, ol, ba, bb, cb, ob, q) in by[s]:
        print(f"{r:>5} {s:>8} | {fmt(la,8,2)} {fmt(lb,8,2)} {fmt(cl,8,2)} {fmt(ol,8,2)} "
              f"{fmt(q[0],6,3)} {fmt(q[1],6,3)} {fmt(q[2],6,3)} | {fmt(ba,7,0)} {fmt(bb,7,0)} "
              f"{fmt(cb,7,0)} {fmt(ob,7,0)} {fmt(q[3],6,3)} {fmt(q[4],6,3)} {fmt(q[5],6,3)}")
rng = random.Random(7)
def ci(xs):
    """The median and its bootstrap 95% interval (2000 resamples)."""
    m = statistics.median(xs)
    if len(xs) < 3:
        return m, None, None
    b = sorted(statistics.median(rng.choices(xs, k=len(xs))) for _ in range(2000))
    return m, b[50], b[1949]
print("# median over the rounds of the per-round ratio (mheta / mean of the two OSU runs), its bootstrap 95% CI;")
print(f"# control: second OSU run / first; verdict: OSU's method (--osu-only) within {GOAL:.0%} of OSU at the median")
print(f"{'size':>8} | {'lat compat [95% CI]':>24} {'lat own':>8} {'lat ctl':>8} | {'bw compat [95% CI]':>24} {'bw own':>8} {'bw ctl':>8} | verdict")
bad = []
for s in sorted(by):
    cols = []
    for c in range(6):
        xs = [q[9][c] for q in by[s] if q[9][c] is not None]
        cols.append(ci(xs) if xs else (None, None, None))
    cell = lambda m, lo, hi: f"{'-':>24}" if m is None else (f"{m:.3f} [{lo:.3f}, {hi:.3f}]" if lo is not None else f"{m:.3f}").rjust(24)
    off = [c for c in (0, 3) if cols[c][0] is not None and abs(cols[c][0] - 1) > GOAL]
    verdict = "met" if not off else "missed (" + ", ".join("latency" if c == 0 else "bandwidth" for c in off) + ")"
    if off:
        bad.append(s)
    print(f"{s:>8} | {cell(*cols[0])} {fmt(cols[1][0],8,3)} {fmt(cols[2][0],8,3)} | {cell(*cols[3])} "
          f"{fmt(cols[4][0],8,3)} {fmt(cols[5][0],8,3)} | {verdict}")
if bad:
    print(f"osu-compare: mheta's OSU method (--osu-only) is more than {GOAL:.0%} from OSU at {', '.join(map(str, bad))}", file=sys.stderr)
    sys.exit(1)
PY
