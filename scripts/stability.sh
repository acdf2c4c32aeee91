#!/usr/bin/env bash
# How stable are the profile's small-message figures from one microbench
# session to the next?
#
#   scripts/stability.sh [SESSIONS] [NP]
#
# Runs SESSIONS (default 3) separate `mheta bench --np NP --no-disk`
# sessions (default NP 2), each its own mpirun, 20 s apart, and prints per
# pair o_s, o_r, L and the 8-byte round trip of every session (as the
# profile stores them: the share-weighted mean of the modes holding at
# least 20% of the samples), then groups the
# sessions by the mode of their 8-byte one-way time (this VM's latency has
# two modes, about 0.3 and 0.6 us, that change between runs: sessions
# whose one-way times differ by more than 30% are in different groups) and
# gives, per group and figure, the median and the range (max - min) as a
# percentage of the median. The target is a range within 10% inside a
# mode. For a figure with several modes in any session it also gives
# each mode's value (modes with >= 20% of the samples, matched across
# sessions within 25%) and its range. L is the one-way time minus both overheads, a difference of
# similar numbers, often clamped to 0: its range is given in ns and as a
# percentage of the mode's one-way time. The profiles are kept in
# $MHETA_STABILITY_DIR (default: a fresh temporary directory).
set -euo pipefail
sessions=${1:-3}
np=${2:-2}
here=$(cd "$(dirname "$0")/.." && pwd)
mheta=${MHETA:-$here/target/release/mheta}
[[ -x $mheta ]] || { echo "stability: $mheta: not an executable (cargo build --release)" >&2; exit 2; }
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
out=${MHETA_STABILITY_DIR:-$(mktemp -d)}
mkdir -p "$out"
for s in $(seq 1 "$sessions"); do
    [[ $s -gt 1 ]] && sleep 20
    "$mheta" bench --np "$np" --no-disk -o "$out/session-$s.json" >"$out/session-$s.txt" 2>&1 \
        || { echo "stability: session $s failed, see $out/session-$s.txt" >&2; exit 1; }
done
python3 - "$out" "$sessions" <<'PY'
import json, sys, statistics as st
out, n = sys.argv[1], int(sys.argv[2])
profs = [json.load(open(f"{out}/session-{s}.json")) for s in range(1, n + 1)]
figs = [("o_s", "o_send_s"), ("o_r", "o_recv_s"), ("L", "latency_s"), ("RTT8", "rtt_small_s")]
print(f"# {n} sessions of `mheta bench --np {profs[0]['np']} --no-disk`, 20 s apart; us; no emulation")
for k, pair in enumerate(profs[0]["pairs"]):
    src, dst = pair["src"], pair["dst"]
    rows = []
    for s, p in enumerate(profs):
        q = p["pairs"][k]
        ow = q["one_way_small"]["modes"]
        multi = sum(len(q[x]["modes"]) > 1 for x in ("o_send", "o_recv", "one_way_small"))
        rows.append((s + 1, ow[0]["value"] if len(ow) == 1 else max(ow, key=lambda m: m["share"])["value"],
                     [q[f] * 1e6 for _, f in figs], multi))
    print(f"\npair {src} -> {dst}")
    print(f"{'session':>8} {'1-way8':>8} " + " ".join(f"{name:>8}" for name, _ in figs) + "  multi-modal figures")
    for s, ow, v, multi in rows:
        print(f"{s:>8} {ow*1e6:>8.3f} " + " ".join(f"{x:>8.3f}" for x in v) + f"  {multi}")
    # Group by the one-way time's mode.
    rows.sort(key=lambda r: r[1])
    groups, cur = [], [rows[0]]
    for r in rows[1:]:
        if r[1] > 1.3 * cur[-1][1]:
            groups.append(cur)
            cur = [r]
        else:
            cur.append(r)
    groups.append(cur)
    for g in groups:
        lo, hi = min(r[1] for r in g), max(r[1] for r in g)
        print(f"  mode {lo*1e6:.2f}-{hi*1e6:.2f} us one-way: sessions {sorted(r[0] for r in g)}")
        for j, (name, _) in enumerate(figs):
            v = [r[2][j] for r in g]
            med = st.median(v)
            rng = max(v) - min(v)
            if name == "L":
                # L is a clamped difference of similar numbers (one-way
                # time minus both overheads), often 0: its range is judged
                # against the mode's one-way time, the figure it is part of.
                ow = st.median(r[1] for r in g) * 1e6
                pct = rng / ow * 100 if ow > 0 else 0.0
                extra = f" ({rng*1e3:.0f} ns, % of the one-way time)"
            else:
                pct = rng / med * 100 if med > 0 else (0.0 if rng == 0 else float("inf"))
                extra = ""
            ok = "ok" if pct <= 10 else "OVER 10%"
            print(f"    {name:>5}: median {med:.3f}, range {pct:5.1f}%{extra}  {ok if len(g) > 1 else '(one session)'}")
        # Within each mode of a figure: the modes (>= 20% of the samples)
        # of the group's sessions, matched by value (within 25%).
        for name, key in (("o_s", "o_send"), ("o_r", "o_recv"), ("1-way8", "one_way_small")):
            ms = sorted((m["value"] * 1e6, r[0]) for r in g
                        for m in profs[r[0] - 1]["pairs"][k][key]["modes"] if m["share"] >= 0.2)
            clusters = []
            for v, s in ms:
                if clusters and v <= 1.25 * clusters[-1][0][0]:
                    clusters[-1].append((v, s))
                else:
                    clusters.append([(v, s)])
            if len(clusters) < 2 and all(len(profs[r[0] - 1]["pairs"][k][key]["modes"]) < 2 for r in g):
                continue
            for c in clusters:
                v = [x for x, _ in c]
                med = st.median(v)
                pct = (max(v) - min(v)) / med * 100
                ok = "ok" if pct <= 10 else "OVER 10%"
                print(f"    {name:>5} mode near {med:.3f}: sessions {sorted(s for _, s in c)}, values "
                      + " ".join(f"{x:.3f}" for x in v) + f", range {pct:5.1f}%  {ok if len(c) > 1 else '(one session)'}")
PY
echo "profiles: $out"
