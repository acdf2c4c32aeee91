#!/usr/bin/env python3
"""A move's predicted cost against its measured time, across links.

Usage: scripts/move_cost_study.py OUT [ROUNDS]   (default 3 rounds)

For every configuration (where the ranks run, how many, the link's rate
and added latency) it brings the emulated hosts up (`mheta hosts up`, one
rank a host; "node": every rank on this machine, no lab), measures a
cluster profile (`mheta bench --quick`), records a short jacobi trace
(`mheta run`), and then, ROUNDS times, interleaved, moves jacobi
(`--n 4096`: a row of its two arrays is 64 KiB) from Block by 16, 128
and 1024 rows across each boundary (1, 8 and 64 MiB a pair), toward
rank 0 (every block loses rows at its top and keeps the rest in place)
and toward the last rank (every block gains rows above its own and
shifts them), with `--move-to`, and reads the report's measured time
(the slowest rank's).
The prediction is `redist::move_cost` through `mheta predict --from
Block --dist TO --json` on that profile and trace. Prints per
configuration and size the prediction, the median measured time, the
error (predicted over measured - 1), the noise (max - min over median of
the rounds) and a verdict against the 15% goal: met, within noise (the
error inside the noise plus one point), or missed; then per
configuration what its profile gave the model (the ranks' copy, shift
and first-touch rates, the pairs' held bytes). On emulated hosts with 3
ranks or more and no added latency it also measures whether the lab's
hosts send and receive at once at their links' rate
(`scripts/duplex.sh`, 32 MiB streams: disjoint pairs against one
stream alone, and a chain of ranks against the pairs); the model prices
links as full duplex, so where the chain's ratio has its interval above
1 + the goal, a move whose middle ranks send and receive at once
(toward rank 0, every rank keeping rows) that misses is marked "missed;
the lab is not full duplex here". OUT/move-cost.json
keeps every run, those figures and the stamp.

STUDY_QUICK=1: one round, 2 ranks only. STUDY_LINKS="node,100mbit" keeps
the configurations of those links only; STUDY_NP="4" those rank counts.
"""
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from study import BIN, ENV, MHETA, QUICK, ROOT, stamp  # noqa: E402

N = 4096
ROW_BYTES = 8 * (N + 2) + 8 * N  # jacobi's u and f
SIZES = [16, 128, 1024]  # rows across each boundary: 1, 8, 64 MiB
MOVES = [(r, up) for r in SIZES for up in (True, False)]
GOAL = 0.15
# (name, rate, added one-way latency on the last host); rate None: one node
LINKS = [
    ("node", None, None),
    ("1gbit", "1gbit", None),
    ("1gbit +500us", "1gbit", "500us"),
    ("200mbit", "200mbit", None),
    ("200mbit +500us", "200mbit", "500us"),
    ("100mbit", "100mbit", None),
    ("100mbit +500us", "100mbit", "500us"),
]


def sh(cmd, what):
    out = subprocess.run(cmd, capture_output=True, text=True, env=ENV)
    if out.returncode != 0:
        sys.exit(f"move-cost: {what} failed ({' '.join(cmd)}):\n{out.stderr[-2000:]}")
    return out.stdout


def profile_memory(path):
    """What the profile gives the move model: the ranks' median copy
    (every rank at once), shift (alone; by each distance where measured)
    and first-touch rates in GB/s, the medians of the pairs' cold and
    direct (on-node, both ends copying) rates in GB/s, and the ranges of
    the pairs' `send_buffer_bytes` (after the sweep) and
    `send_buffer_first_bytes` (the first large message, which the model
    takes) in MB (None: absent)."""
    with open(path) as f:
        prof = json.load(f)

    def rate(key):
        v = [n[key]["p50"] for n in prof.get("nodes", []) if n.get(key)]
        return 1e-9 / statistics.median(v) if v else None

    def held(key):
        v = [c[key] / 1e6 for c in prof.get("pairs", []) if c.get(key) is not None]
        return [min(v), max(v)] if v else None

    def pair_rate(key):
        v = [c[key] / 1e9 for c in prof.get("pairs", []) if c.get(key)]
        return statistics.median(v) if v else None

    by = {}
    for n in prof.get("nodes", []):
        for pt in n.get("shift_by", []):
            by.setdefault(pt["distance_bytes"], []).append(pt["per_byte"]["p50"])
    shift_by = [[d, 1e-9 / statistics.median(v)] for d, v in sorted(by.items())]
    return {"copy_gbps": rate("copy_per_byte"), "shift_gbps": rate("shift_per_byte"),
            "shift_by_gbps": shift_by, "cold_gbps": pair_rate("bandwidth_cold_bps"),
            "move_gbps": move_rates(prof),
            "direct_gbps": pair_rate("direct_copy_bps"),
            "touch_gbps": rate("touch_per_byte"), "held_mb": held("send_buffer_bytes"),
            "first_held_mb": held("send_buffer_first_bytes")}


def move_rates(prof):
    """The pairs' median rate of each size of `PairCost::moves` (both
    ends waiting as a move waits), as [[bytes, GB/s]]; [] where not
    measured."""
    by = {}
    for c in prof.get("pairs", []):
        for m in c.get("moves", []):
            if m["one_way_s"] > 0:
                by.setdefault(m["bytes"], []).append(m["bytes"] / m["one_way_s"] / 1e9)
    return [[b, statistics.median(v)] for b, v in sorted(by.items())]


def spec_text(name, np, rate, latency):
    s = f'[lab]\nname = "{name}"\n'
    for h in range(np):
        s += f'[[host]]\nname = "h{h}"\ncpu_power = 1.0\nrate = "{rate}"\n'
        if latency and h == np - 1:
            s += f'latency = "{latency}"\n'
    return s


def target(np, rows, up):
    """Block with `rows` more on rank 0 and fewer on the last (`up`: rows
    move toward rank 0, each rank's block loses rows at its top and keeps
    the rest in place) or the other way round (each block gains rows
    above its own and shifts them): `rows` cross every boundary."""
    b = N // np
    d = [b + rows] + [b] * (np - 2) + [b - rows]
    return d if up else d[::-1]


class Config:
    def __init__(self, tmp, idx, np, link):
        self.np, self.link = np, link
        name, rate, latency = link
        self.name = f"{np} ranks, {name}"
        self.dir = os.path.join(tmp, f"c{idx}")
        os.makedirs(self.dir)
        self.spec = None
        if rate:
            self.spec = os.path.join(self.dir, "lab.toml")
            with open(self.spec, "w") as f:
                f.write(spec_text(f"mvc{idx}", np, rate, latency))

    def launcher(self):
        if self.spec:
            return [MHETA, "hosts", "mpirun", self.spec, "--"]
        return ["mpirun", "--allow-run-as-root", "--oversubscribe", "-np", str(self.np)]

    def up(self):
        if self.spec:
            sh([MHETA, "hosts", "up", self.spec], "hosts up")

    def down(self):
        if self.spec:
            subprocess.run([MHETA, "hosts", "down", self.spec], capture_output=True, env=ENV)

    def prepare(self):
        self.prof = os.path.join(self.dir, "profile.json")
        bench = [MHETA, "bench", "--quick", "-o", self.prof]
        bench += ["--cluster", self.spec] if self.spec else ["--np", str(self.np)]
        sh(bench, "mheta bench")
        self.memory = profile_memory(self.prof)
        self.duplex = self.measure_duplex()
        self.trace = os.path.join(self.dir, "trace")
        sh([MHETA, "run", "--trace-dir", self.trace, "--", *self.launcher(),
            os.path.join(BIN, "jacobi"), "--n", str(N), "--iters", "8"], "mheta run")
        block = [N // self.np] * self.np
        self.predicted = {}
        for rows, up in MOVES:
            to = target(self.np, rows, up)
            out = sh([MHETA, "predict", "--profile", self.prof, "--trace", self.trace,
                      "--dist", ",".join(map(str, to)), "--from", ",".join(map(str, block)),
                      "--json"], "mheta predict")
            mv = json.loads(out)["move"]
            self.predicted[rows, up] = (mv["cost_s"], mv["bytes"])

    def measure_duplex(self):
        """What the lab carries at once (`scripts/duplex.sh`, 32 MiB, 3
        jobs of 3 repeats each): {"pairs_over_one": [ratio, lo, hi],
        "chain_over_pairs": [...]}, each ratio with its 95% interval;
        None on one node or with 2 ranks."""
        # The patterns compare like with like only where the hosts'
        # links are alike: one host's added latency slows the pairs'
        # stream to it, not one stream's nor the chain's.
        if not self.spec or self.np < 3 or self.link[2]:
            return None
        out = sh([os.path.join(ROOT, "scripts", "duplex.sh"), self.spec, "32", "3", "3"],
                 "scripts/duplex.sh")
        got = {}
        for key, head in (("pairs_over_one", "# pairs over one stream:"),
                          ("chain_over_pairs", "# chain over pairs:")):
            line = [x for x in out.splitlines() if x.startswith(head)]
            if not line:
                sys.exit(f"move-cost: scripts/duplex.sh printed no '{head}' line:\n{out}")
            f = line[-1][len(head):].replace("[", " ").replace("]", " ").replace(",", " ").split()
            got[key] = [float(f[0]), float(f[1]), float(f[2])]
        return got

    def measure(self, rows, up):
        to = target(self.np, rows, up)
        out = sh([*self.launcher(), os.path.join(BIN, "jacobi"), "--n", str(N), "--iters", "4",
                  "--move-to", ",".join(map(str, to)), "--move-at", "2"], "jacobi --move-to")
        rep = json.loads([x for x in out.splitlines() if x.startswith("{")][-1])
        if not rep.get("verified"):
            sys.exit(f"move-cost: jacobi did not verify after moving to {to}")
        return rep["move"]["measured_s"], rep["move"]["bytes"]


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    out_dir = sys.argv[1]
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else (1 if QUICK else 3)
    os.makedirs(out_dir, exist_ok=True)
    nps = [int(x) for x in os.environ.get("STUDY_NP", "2" if QUICK else "2,4").split(",")]
    links = LINKS
    if os.environ.get("STUDY_LINKS"):
        keep = os.environ["STUDY_LINKS"].split(",")
        links = [x for x in LINKS if x[0] in keep]
    tmp = tempfile.mkdtemp(prefix="move-cost-")
    rows_out = []
    try:
        idx = 0
        for np in nps:
            for link in links:
                c = Config(tmp, idx, np, link)
                idx += 1
                c.up()
                try:
                    c.prepare()
                    runs = {m: [] for m in MOVES}
                    for _ in range(rounds):
                        for m in MOVES:
                            t, b = c.measure(*m)
                            if b != c.predicted[m][1]:
                                sys.exit(f"move-cost: {c.name}: the model moves {c.predicted[m][1]} "
                                         f"bytes, jacobi {b}")
                            runs[m].append(t)
                finally:
                    c.down()
                for m in MOVES:
                    r = m[0]
                    pred, b = c.predicted[m]
                    med = statistics.median(runs[m])
                    err = pred / med - 1
                    noise = (max(runs[m]) - min(runs[m])) / med
                    verdict = ("met" if abs(err) <= GOAL else
                               "within noise" if abs(err) <= noise + 0.01 else "missed")
                    both_ways = m[1] and r < N // np
                    duplex = c.duplex and c.duplex["chain_over_pairs"]
                    if verdict == "missed" and both_ways and duplex and duplex[1] > 1 + GOAL:
                        verdict = "missed; the lab is not full duplex here"
                    rows_out.append({"config": c.name, "np": np, "link": link[0],
                                     "mib_per_pair": r * ROW_BYTES / 2**20, "bytes": b,
                                     "toward": "rank 0" if m[1] else "last rank",
                                     "predicted_s": pred, "measured_s": runs[m],
                                     "median_s": med, "err": err, "noise": noise,
                                     "verdict": verdict, "profile": c.memory,
                                     "duplex": c.duplex})
                    print(f"move-cost: {c.name}, {r * ROW_BYTES / 2**20:.0f} MiB a pair "
                          f"toward {'rank 0' if m[1] else 'the last rank'}: "
                          f"predicted {pred:.3f} s, measured {med:.3f} s ({err:+.1%})",
                          file=sys.stderr)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    cmd = "scripts/move_cost_study.py OUT" + (f" {rounds}" if len(sys.argv) > 2 else "")
    res = {"stamp": stamp(cmd), "rounds": rounds, "goal": GOAL, "rows": rows_out}
    with open(os.path.join(out_dir, "move-cost.json"), "w") as f:
        json.dump(res, f, indent=1)
    report(res)


def report(res):
    print(f"# {res['stamp']['command']}; {res['stamp'].get('date', '')}; "
          f"{res['stamp'].get('machine', '')}")
    print(f"# jacobi --n {N} from Block by --move-to; one rank per emulated host (htb on each "
          f"host's link, the added latency on the last host), 'node': every rank on this machine; "
          f"median of {res['rounds']} interleaved rounds; err = predicted / measured - 1; "
          f"noise = (max - min) / median")
    print(f"{'configuration':<26} {'toward':<10} {'MiB/pair':>8} {'MB moved':>9} {'predicted s':>12} "
          f"{'measured s':>11} {'err %':>7} {'noise %':>8}  verdict (goal 15%)")
    for r in res["rows"]:
        print(f"{r['config']:<26} {r['toward']:<10} {r['mib_per_pair']:8.0f} {r['bytes'] / 1e6:9.1f} "
              f"{r['predicted_s']:12.4f} {r['median_s']:11.4f} {100 * r['err']:+7.1f} "
              f"{100 * r['noise']:8.1f}  {r['verdict']}")
    print("# what each configuration's profile gave the model: the ranks' median copy (every rank "
          "at once), shift (alone; by distance, 'bytes:GB/s', where measured) and first-touch rates, "
          "GB/s; the pairs' median cold, move (1 and 8 MiB, both ends waiting as a move waits: "
          "'MiB:GB/s') and on-node direct rates, GB/s; and their held MB after the "
          "sweep and of their first large message (the model's)")
    fmt = lambda x: "-" if x is None else f"{x:.2f}"
    seen = set()
    for r in res["rows"]:
        m = r.get("profile")
        if m is None or r["config"] in seen:
            continue
        seen.add(r["config"])
        span = lambda v: "-" if not v else f"{v[0]:.2f}-{v[1]:.2f}"
        by = " ".join(f"{d >> 10}K:{g:.1f}" for d, g in m.get("shift_by_gbps") or [])
        shift = f"{fmt(m['shift_gbps'])}" + (f" ({by})" if by else "")
        moved = " ".join(f"{b >> 20}M:{g:.3f}" for b, g in m.get("move_gbps") or []) or "-"
        print(f"#   {r['config']:<24} copy {fmt(m['copy_gbps'])}  shift {shift}  "
              f"touch {fmt(m['touch_gbps'])}  cold {fmt(m.get('cold_gbps'))}  "
              f"move {moved}  "
              f"direct {fmt(m.get('direct_gbps'))}  held {span(m['held_mb'])}  "
              f"first {span(m.get('first_held_mb'))}")
        dx = r.get("duplex")
        if dx and "+" in r["link"]:
            print(f"#   {'':<24} at once: not comparable here (the last host's added latency "
                  f"slows the pairs' stream to it only)")
        elif dx:
            a, b = dx["pairs_over_one"], dx["chain_over_pairs"]
            print(f"#   {'':<24} at once (scripts/duplex.sh SPEC 32 3 3; 1: the link's rate): "
                  f"disjoint pairs over one stream {a[0]:.2f} [{a[1]:.2f}, {a[2]:.2f}], "
                  f"a chain over the pairs {b[0]:.2f} [{b[1]:.2f}, {b[2]:.2f}]")
    errs = [abs(r["err"]) for r in res["rows"]]
    v = [r["verdict"] for r in res["rows"]]
    lab = sum(x.startswith("missed; ") for x in v)
    print(f"# absolute error: median {100 * statistics.median(errs):.1f}%, max {100 * max(errs):.1f}%; "
          f"{v.count('met')} met, {v.count('within noise')} within noise, {v.count('missed') + lab} "
          f"missed of {len(v)}" + (f" ({lab} where the lab is not full duplex)" if lab else ""))


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[2] == "report":
        with open(os.path.join(sys.argv[1], "move-cost.json")) as f:
            report(json.load(f))
    else:
        main()
