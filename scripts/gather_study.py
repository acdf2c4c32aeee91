#!/usr/bin/env python3
"""What `--auto`'s plan costs in the job as the ranks grow: the gather
to rank 0 of every rank's summary of its trace (`mheta_model::summary`:
what the model reads of it, made on the rank), and the model and GBS
there.

Usage: scripts/gather_study.py OUT [ROUNDS]   (default 3 rounds)

Measures one profile on 2 ranks (`mheta bench --np 2 --quick
--no-disk`) and writes it for 4, 8 and 16 ranks on this machine by kind
of pair (`unlisted.same_host`: the measured pair stands for every pair,
its node for every node). Then, ROUNDS times, interleaved, runs jacobi
(`--n 2048`) and cg (`--class A`, its 15 verified iterations) with `--auto` under `mheta run` on 2,
4, 8 and 16 ranks (oversubscribed above 2; compute by the clock at 7 ns
a unit, so that the planner's inputs do not depend on the time-sharing)
and reads from rank 0's report: its encoded trace and summary, the
bytes rank 0 received, the gather's time, the model's and GBS's time
(`model_s`) and the whole plan's (`plan_s`). Prints the medians per app
and rank count, then the growth beyond: what rank 0 receives is the
sum of the summaries, linear in P (every other rank sends its own
and receives none; an all-gather would give every rank the sum), each
the size of its rank's program, not of its recording (a trace is the
larger the more its rank polled while it waited), and
the model and GBS at 1024 to 16384 ranks are the model bench's
(`cargo bench -p mheta-model --bench model`). OUT/gather.json keeps
every run and the stamp.
"""
import json
import os
import statistics
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from study import BIN, ENV, MHETA, stamp  # noqa: E402

NPS = [2, 4, 8, 16]
APPS = {"jacobi": ["--n", "2048", "--iters", "30"], "cg": ["--class", "A", "--iters", "15"]}
CLOCK = ["--cpu-emulation", "clock", "--cpu-ns-per-unit", "7"]


def sh(cmd, what, env=None):
    out = subprocess.run(cmd, capture_output=True, text=True, env=env or ENV)
    if out.returncode != 0:
        sys.exit(f"gather: {what} failed ({' '.join(cmd)}):\n{out.stderr[-2000:]}")
    return out.stdout


def by_kind(p2, np, path):
    """The 2-rank profile `p2` written for `np` ranks of one host by kind."""
    prof = dict(p2)
    pair = dict(p2["pairs"][0])
    prof.update(np=np, hosts=[p2["hosts"][0]] * np, pairs=[], unlisted={"same_host": pair})
    node = p2["nodes"][0] if p2.get("nodes") else None
    prof["nodes"] = [dict(node, rank=r) for r in range(np)] if node else []
    with open(path, "w") as f:
        json.dump(prof, f)
    # The reader validates it.
    sh([MHETA, "show", "--profile", path], f"reading {path}")


def main():
    if len(sys.argv) not in (2, 3):
        sys.exit(__doc__)
    out = os.path.abspath(sys.argv[1])
    rounds = int(sys.argv[2]) if len(sys.argv) == 3 else 3
    os.makedirs(out, exist_ok=True)
    for x in ["mheta", *APPS]:
        if not os.access(os.path.join(BIN, x), os.X_OK):
            sys.exit(f"gather: {BIN}/{x}: not an executable (cargo build --release)")
    p2 = os.path.join(out, "p2.json")
    sh([MHETA, "bench", "--np", "2", "--quick", "--no-disk", "-o", p2], "mheta bench")
    with open(p2) as f:
        base = json.load(f)
    profiles = {}
    for np in NPS:
        profiles[np] = os.path.join(out, f"p{np}.json")
        by_kind(base, np, profiles[np])
    runs = []
    for r in range(rounds):
        for np in NPS:
            for app, args in APPS.items():
                env = dict(ENV, MHETA_PROFILE=profiles[np])
                cmd = [MHETA, "run", "--trace-dir", os.path.join(out, f"tr-{app}-{np}"), "--",
                       "mpirun", "--oversubscribe", "-np", str(np), os.path.join(BIN, app),
                       *args, "--auto", *CLOCK]
                rep = json.loads(sh(cmd, f"{app} on {np}", env).strip().splitlines()[-1])
                a = rep["auto"]
                if not rep.get("verified"):
                    sys.exit(f"gather: {app} on {np} ranks did not verify")
                runs.append({"round": r, "app": app, "np": np, "gathered": a["gathered"],
                             "model_s": a["model_s"], "plan_s": a["plan_s"],
                             "evaluations": a["evaluations"]})
    command = f"scripts/gather_study.py OUT {rounds}"
    with open(os.path.join(out, "gather.json"), "w") as f:
        json.dump({"stamp": stamp(command), "runs": runs}, f, indent=1)
    report(runs, rounds, command)


def report(runs, rounds, command):
    med = statistics.median
    print(f"# --auto's plan in the job against the ranks: `{command}`; {rounds} interleaved rounds, medians;")
    print("# compute by the clock (7 ns a unit), ranks oversubscribed on this machine above 2, profiles by kind")
    print("# rank 0's report: trace, summary = rank 0's encoded trace and the summary of it it sent; at rank 0 =")
    print("# what the gather brought it (every other rank receives nothing); gather, model+GBS and plan in ms.")
    print("# A rank that polls while it waits (oversubscribed, non-blocking) records each MPI_Test: its trace")
    print("# grows with its waits, its summary does not")
    print(f"{'app':<7} {'ranks':>5} {'trace (B)':>10} {'summary (B)':>12} {'at rank 0 (B)':>14} {'gather':>8} {'model+GBS':>10} {'plan':>8}")
    per = {}
    for app in APPS:
        for np in NPS:
            rs = [x for x in runs if x["app"] == app and x["np"] == np]
            if not rs:
                continue
            g = [x["gathered"] for x in rs]
            row = (med(x["own_bytes"] for x in g), med(x["received_bytes"] for x in g),
                   med(x["s"] for x in g) * 1e3, med(x["model_s"] for x in rs) * 1e3,
                   med(x["plan_s"] for x in rs) * 1e3, med(x["own_trace_bytes"] for x in g))
            per[(app, np)] = row
            print(f"{app:<7} {np:>5} {row[5]:>10.0f} {row[0]:>12.0f} {row[1]:>14.0f} {row[2]:>8.2f} {row[3]:>10.2f} {row[4]:>8.2f}")
    print("# beyond: rank 0 receives about P x the per-rank summary (fitted through the rows above)")
    for app in APPS:
        pts = [(np, per[(app, np)][1]) for np in NPS if (app, np) in per]
        if len(pts) < 2:
            continue
        b = sum(n * y for n, y in pts) / sum(n * n for n, _ in pts)
        far = ", ".join(f"{p}: {b * p / 2**20:.1f} MiB" for p in (1024, 4096, 16384))
        print(f"# {app}: {b:.0f} B a rank at rank 0 -> {far}")


if __name__ == "__main__":
    main()
