"""One run of scripts/reuse-check.sh: measured against the reuse curve.

python3 reuse_check.py PROFILE RUN.json PRED.jsonl LABEL SPEC
"""
import json
import math
import re
import sys

prof = json.load(open(sys.argv[1]))
run = json.load(open(sys.argv[2]))
preds = [json.loads(l) for l in open(sys.argv[3]) if l.strip()]
label, spec = sys.argv[4], sys.argv[5]
powers = [float(x) for x in re.findall(r"cpu_power\s*=\s*([0-9.]+)", open(spec).read())]

sets = {}
for x in prof["nodes"][0].get("reuse_by", []):
    sets.setdefault(x["ws_bytes"], []).append(x)
ws_list = sorted(sets)


def resolved(x):
    lo, hi = x["rel_ci95"]
    return 1.0 if lo <= 1.0 <= hi else x["rel"]


def knots(pts, absolute):
    """A working set's (time, cost) knots: costs never falling with time."""
    base = pts[0]["per_byte"]["p50"] / resolved(pts[0]) if absolute else 1.0
    vals, floor = [], base
    for x in pts:
        floor = max(floor, base * resolved(x))
        vals.append((x["reuse_s"], floor))
    return vals


def interp(vals, t):
    if t <= vals[0][0]:
        return vals[0][1]
    for (x0, r0), (x1, r1) in zip(vals, vals[1:]):
        if t <= x1:
            return r0 + (r1 - r0) * (t - x0) / (x1 - x0)
    return vals[-1][1]


# The memory's price (ReuseCurve::from_points): where the largest set is
# past the cache (its cost after the longest wait within 15% of its cost
# right after a sweep), every smaller set's knots are held to its cost.
BIG = knots(sets[ws_list[-1]], True) if ws_list else []
PAST_CACHE = bool(BIG) and BIG[-1][1] <= 1.15 * BIG[0][1]


def curve(w, t, absolute):
    """The curve as model/src/reuse.rs reads it (absolute), or each
    working set's over its own sweep right after a sweep."""
    def at(pts):
        vals = knots(pts, absolute)
        if absolute and PAST_CACHE and pts is not sets[ws_list[-1]]:
            vals = [(x, min(r, interp(BIG, x))) for x, r in vals]
        return interp(vals, t)
    if w <= ws_list[0]:
        return at(sets[ws_list[0]])
    if w >= ws_list[-1]:
        return at(sets[ws_list[-1]])
    for a, b in zip(ws_list, ws_list[1:]):
        if a <= w <= b:
            f = (math.log2(w) - math.log2(a)) / (math.log2(b) - math.log2(a))
            return at(sets[a]) * (1 - f) + at(sets[b]) * f


a = run["auto"]
n = run["n"]
row_bytes = 8 * (n + 2) + 8 * n
t_rec, t_new = a["measured_from_s"], a["measured_chosen_s"]
cells = []
for i in range(2):
    w0, w1 = a["from_dist"][i] * row_bytes, a["chosen_dist"][i] * row_bytes
    k = a["cpu_per_row_chosen_s"][i] / a["cpu_per_row_from_s"][i]
    # The model's: the host's bytes (both ranks run on this machine).
    n0, n1 = sum(a["from_dist"]) * row_bytes, sum(a["chosen_dist"]) * row_bytes
    model = curve(n1, t_new, True) / curve(n0, t_rec, True)
    own = curve(w1, t_new, False) / curve(w0, t_rec, False)
    # The rank's recorded CPU a byte at its real speed (the emulation's
    # spin scales all of it).
    q = a["cpu_per_row_from_s"][i] / row_bytes * powers[i]
    added = 1 - (curve(w0, t_rec, True) - curve(w1, t_new, True)) / q
    cells.append(f"r{i} {w0 / 2**20:3.0f}->{w1 / 2**20:3.0f} MiB k {k:.2f} model {model:.2f} own {own:.2f} added {added:.2f}")
print(f"{label:<10} T {t_rec * 1e3:5.1f}->{t_new * 1e3:5.2f} ms  predicted {preds[0]['per_iteration_s'] * 1e3:5.2f} without {preds[1]['per_iteration_s'] * 1e3:5.2f}  | " + " | ".join(cells))
