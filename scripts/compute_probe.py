#!/usr/bin/env python3
"""Where the compute part of a real-compute prediction can go wrong: the
cost of a row of a kernel's stage, measured in real MPI runs, under the
conditions the MHETA model assumes are the same.

Usage: scripts/compute_probe.py [ROUNDS] [OUT.json]   (default 5 rounds)
       scripts/compute_probe.py recorded [ROUNDS]
       scripts/compute_probe.py window PROFILE.json [ROUNDS]
       scripts/compute_probe.py paired [ROUNDS] [CLUSTER] [PROFILE.json]
       scripts/compute_probe.py self STUDY_WORK_DIR

Every configuration runs once a round, the rounds interleaved, so that a
slow spell of the host falls on all of them alike. Each run is a 2-rank
`jacobi --n 2048 --iters 40` (or an M x 2048 grid) and gives, for rank 0,
the median stage time of an iteration divided by its rows (ns a row), and
the CPU time its stages got over their wall time (`cpu_share`). The
configurations (rank 0's rows, rank 1's rows, the cluster, the CPU
emulation):

- rows: rank 0 alone (rank 1 owns no rows) at 128 to 1792 rows (a row
  of each of jacobi's two arrays is 16 KiB): is the cost of a row the same at every row count (the model's
  T_phi' = T_phi * W'/W, MHETA section 4.2.1)?
- shared: rank 0 at 1024 rows while rank 1 computes 1024 rows on the other
  core, against 1024 alone: what the two cores' shared memory and caches
  cost a row;
- paced 1: rank 0 at power 1 under `--cpu-emulation paced` against no
  emulation (uniform): the pacing's own cost at power 1;
- paced 0.5: rank 1 of het2 (power 0.5, paced) against rank 0 (power 1),
  1024 rows each: the ratio should be 2.

Prints one line a configuration (the median ns a row, its bootstrap 95%
CI over the rounds, the coefficient of variation of its runs, the median
CPU share), then each configuration against its reference side by side:
the median over the rounds of the ratio of the two runs of a round, its
bootstrap 95% CI and p10-p90, and what the model assumes. OUT.json (default
compute-probe.json) keeps every run and the stamp.

`recorded`: are the iterations the interposer records (by default three,
from iteration 3) what the rest of the run does? Each round runs jacobi
`--n 2048 --iters 60` and `--n 1024 --iters 200` under `mheta run
--trace-dir`, and prints per rank the recorded iterations' median compute
(`mheta show --trace`) over the same run's median stage time over all its
iterations (the report's `stage_s`): the median over the rounds, its
bootstrap 95% CI, and every round's ratio.

`paired [ROUNDS] [CLUSTER]` (default 9 rounds, netdc2): is the window an
accuracy study records slower or faster than the plain runs it is judged
against? One rank on each of CLUSTER's two emulated hosts (`mheta hosts
up CLUSTER`; netdc2 or netuniform2), `paced`, the study's sor cell: per
round a plain run (`sor --n 2560 --iters 59 --dist 1280,1280`) and,
right after it, an instrumented run as `mheta experiment --run-seconds
1.5` makes it (`--iters 121` under `mheta run --seconds 1.2`), both with
`MHETA_DEBUG_TIMES=1` (each iteration's time). Prints per round the
plain run's median iteration, the recorded iterations' median in the
instrumented run (the trace's iteration indices) and their ratio, then
the median ratio with its bootstrap 95% CI. With PROFILE.json (a
`mheta bench --cluster CLUSTER` profile), each round also prices Block
from its own trace (`mheta predict`): the model against the window it
learned from (the model's own error) beside the window against the plain
run (the host's drift between the two). The hosts are taken down after.

`self STUDY_WORK_DIR`: does each model reproduce the very iterations it
learned from? For every cell an accuracy study left in STUDY_WORK_DIR
(`scripts/accuracy-study.sh`'s work directory: APP-CLUSTER.json, its
profile p2-CLUSTER.json and the last instrumented run's trace in
w-APP-CLUSTER/trace), the model's prediction of the recorded (Blk)
distribution (`mheta predict`) against the trace's window (per recorded
iteration the slowest rank's duration, median over the iterations every
rank recorded), and per rank the median time an iteration spent in
stages and in MPI calls. No run is started.

`window PROFILE.json`: how far a model learned on `uniform` (both ranks
at power 1) strays from an even split, by how long its trace was
recorded. Each round records 2-rank `jacobi --n 2048` under `mheta run`
twice: the default three iterations of an 8-iteration run (about 20 ms of
recorded compute), and `--seconds 1.2` of a 200-iteration run; `mheta
search` with PROFILE.json (a 2-rank `mheta bench` profile) picks each
trace's distribution. Prints per round both splits and the rows moved
off 1024, then the median and max moved for each trace length.
"""
import json
import os
import random
import re
import shutil
import statistics
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from study import BIN, ENV, MHETA, stamp  # noqa: E402

N, ITERS = 2048, 40
# name: (rows of rank 0, rows of rank 1, extra args, rank whose cost is read)
CONFIGS = {
    "alone 128": (128, 0, [], 0),
    "alone 256": (256, 0, [], 0),
    "alone 512": (512, 0, [], 0),
    "alone 768": (768, 0, [], 0),
    "alone 1024": (1024, 0, [], 0),
    "alone 1280": (1280, 0, [], 0),
    "alone 1792": (1792, 0, [], 0),
    "shared 1024": (1024, 1024, [], 0),
    "paced 1, 1024": (1024, 1024, ["--cpu-emulation", "paced"], 0),
    "het2 power 1, 1024": (1024, 1024, ["--cluster", "het2", "--cpu-emulation", "paced"], 0),
    "het2 power 0.5, 1024": (1024, 1024, ["--cluster", "het2", "--cpu-emulation", "paced"], 1),
}
# name: (reference, expected ratio)
REFS = {
    "alone 128": ("alone 1024", 1.0),
    "alone 256": ("alone 1024", 1.0),
    "alone 512": ("alone 1024", 1.0),
    "alone 768": ("alone 1024", 1.0),
    "alone 1280": ("alone 1024", 1.0),
    "alone 1792": ("alone 1024", 1.0),
    "shared 1024": ("alone 1024", 1.0),
    "paced 1, 1024": ("shared 1024", 1.0),
    "het2 power 0.5, 1024": ("het2 power 1, 1024", 2.0),
}


def run(r0, r1, extra):
    rows = r0 + r1
    cmd = ["mpirun", "--allow-run-as-root", "--oversubscribe", "-np", "2",
           os.path.join(BIN, "jacobi"), "--n", str(N), "--rows", str(rows),
           "--iters", str(ITERS), "--dist", f"{r0},{r1}"]
    if "--cluster" not in extra:
        cmd += ["--cluster", "uniform"]
    out = subprocess.run(cmd + extra, capture_output=True, text=True, env=ENV)
    for line in out.stdout.splitlines():
        if line.startswith("{"):
            return json.loads(line)
    sys.exit(f"compute-probe: {' '.join(cmd + extra)} failed:\n{out.stderr}")


def ci95(v, reps=2000):
    """Bootstrap 95% CI of the median of v."""
    rng = random.Random(1)
    meds = sorted(statistics.median(rng.choices(v, k=len(v))) for _ in range(reps))
    return meds[int(0.025 * reps)], meds[int(0.975 * reps) - 1]


def recorded(rounds):
    """The recorded iterations' compute over the whole run's median stage."""
    ratios = {}
    tmp = tempfile.mkdtemp(prefix="compute-probe-")
    try:
        for rnd in range(rounds):
            for n, iters in [(2048, 60), (1024, 200)]:
                tr = os.path.join(tmp, "trace")
                shutil.rmtree(tr, ignore_errors=True)
                cmd = [MHETA, "run", "--trace-dir", tr, "--", "mpirun", "--allow-run-as-root",
                       "-np", "2", os.path.join(BIN, "jacobi"), "--n", str(n), "--iters", str(iters),
                       "--cluster", "uniform"]
                out = subprocess.run(cmd, capture_output=True, text=True, env=ENV)
                reps = [json.loads(x) for x in out.stdout.splitlines() if x.startswith("{")]
                if out.returncode != 0 or not reps:
                    sys.exit(f"compute-probe: {' '.join(cmd)} failed:\n{out.stderr}")
                show = subprocess.run([MHETA, "show", "--trace", tr], capture_output=True, text=True,
                                      env=ENV, check=True).stdout
                comp = [float(x) for x in re.findall(r"median [0-9.]+ ms: ([0-9.]+) ms scaled compute", show)]
                for rk in reps[0]["ranks"]:
                    ratios.setdefault((n, rk["rank"]), []).append(comp[rk["rank"]] * 1e-3 / rk["stage_s"])
            print(f"compute-probe: round {rnd + 1} of {rounds} done", file=sys.stderr)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    for (n, rank), v in sorted(ratios.items(), reverse=True):
        lo, hi = ci95(v)
        print(f"n {n} rank {rank}: recorded / whole run {statistics.median(v):.3f} "
              f"(95% CI {lo:.3f}-{hi:.3f}); rounds {' '.join(f'{x:.3f}' for x in v)}")


def paired(rounds, cluster, profile=None):
    """The recorded window's median iteration over a plain run's, paired;
    with a profile, the model's Block over the window too."""
    sor = os.path.join(BIN, "sor")
    args = ["--n", "2560", "--cluster", cluster, "--cpu-emulation", "paced"]
    env = dict(ENV, MHETA_DEBUG_TIMES="1")
    launch = [MHETA, "hosts", "mpirun", cluster, "-np", "2"]

    def report(cmd):
        out = subprocess.run(cmd, capture_output=True, text=True, env=env)
        reps = [json.loads(x) for x in out.stdout.splitlines() if x.startswith("{")]
        if out.returncode != 0 or not reps or "iter_times_s" not in reps[-1]:
            sys.exit(f"compute-probe: {' '.join(cmd)} failed:\n{out.stderr}")
        return reps[-1]["iter_times_s"]

    subprocess.run([MHETA, "hosts", "up", cluster], capture_output=True, env=ENV, check=True)
    tmp = tempfile.mkdtemp(prefix="compute-probe-")
    ratios, selfs = [], []
    try:
        for rnd in range(rounds):
            plain = statistics.median(report(launch + [sor, *args, "--iters", "59",
                                                       "--dist", "1280,1280"]))
            tr = os.path.join(tmp, "trace")
            shutil.rmtree(tr, ignore_errors=True)
            times = report([MHETA, "run", "--trace-dir", tr, "--seconds", "1.2", "--", *launch,
                            sor, *args, "--iters", "121"])
            trace = json.loads(subprocess.run([MHETA, "show", "--trace", tr, "--json"],
                                              capture_output=True, text=True, env=ENV,
                                              check=True).stdout)
            idx = [it["index"] for it in trace["ranks"][0]["iterations"]]
            rec = statistics.median(times[k] for k in idx if k < len(times))
            ratios.append(rec / plain)
            line = (f"round {rnd + 1}: plain {plain * 1e3:.2f} ms, recorded {len(idx)} iterations "
                    f"{rec * 1e3:.2f} ms, ratio {rec / plain:.3f}")
            if profile:
                out = subprocess.run([MHETA, "predict", "--profile", profile, "--trace", tr,
                                      "--dist", "1280,1280", "--json"],
                                     capture_output=True, text=True, env=ENV)
                if out.returncode != 0:
                    sys.exit(f"compute-probe: mheta predict failed:\n{out.stderr}")
                model = json.loads(out.stdout)["per_iteration_s"]
                selfs.append(model / rec)
                line += f", model {model * 1e3:.2f} ms, model / recorded {model / rec:.3f}"
            print(line, flush=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
        subprocess.run([MHETA, "hosts", "down", cluster], capture_output=True, env=ENV)
    lo, hi = ci95(ratios)
    print(f"recorded / plain: median {statistics.median(ratios):.3f} (95% CI {lo:.3f}-{hi:.3f}), "
          f"min {min(ratios):.3f}, max {max(ratios):.3f}, {len(ratios)} rounds")
    if selfs:
        lo, hi = ci95(selfs)
        print(f"model / recorded: median {statistics.median(selfs):.3f} (95% CI {lo:.3f}-{hi:.3f}), "
              f"min {min(selfs):.3f}, max {max(selfs):.3f}")


def self_check(work):
    """Each cell's model against the window it learned from."""
    cells = sorted(f[:-5] for f in os.listdir(work)
                   if f.endswith(".json") and not f.startswith("p") and "-" in f)
    if not cells:
        sys.exit(f"compute-probe: self: {work}: no APP-CLUSTER.json cells")
    print("| cell | model (ms) | window (ms) | model / window | per rank: stages / MPI (ms) |")
    print("|---|---|---|---|---|")
    for cell in cells:
        app, cluster = cell.split("-", 1)
        tr = os.path.join(work, f"w-{cell}", "trace")
        prof = os.path.join(work, f"p2-{cluster}.json")
        if not (os.path.isdir(tr) and os.path.isfile(prof)):
            continue
        rows = json.load(open(os.path.join(work, f"{cell}.json")))["rows"]
        blk = next((r for r in rows if r["label"].startswith("Blk")), rows[0])
        dist = ",".join(map(str, blk["dist"]))
        out = subprocess.run([MHETA, "predict", "--profile", prof, "--trace", tr, "--dist", dist,
                              "--json"], capture_output=True, text=True, env=ENV)
        if out.returncode != 0:
            sys.exit(f"compute-probe: mheta predict ({cell}) failed:\n{out.stderr}")
        model = json.loads(out.stdout)["per_iteration_s"]
        trace = json.loads(subprocess.run([MHETA, "show", "--trace", tr, "--json"],
                                          capture_output=True, text=True, env=ENV,
                                          check=True).stdout)
        by = [{it["index"]: it for it in rk["iterations"]} for rk in trace["ranks"]]
        common = [i for i in by[0] if all(i in b for b in by)]
        win = statistics.median(max(b[i]["duration_ns"] for b in by) * 1e-9 for i in common)
        parts = []
        for rk in trace["ranks"]:
            stages, mpi = [], []
            for it in rk["iterations"]:
                c = m = 0
                begin = None
                for e in it["events"]:
                    if e["what"] == "StageBegin":
                        begin = e["t0_ns"]
                    elif e["what"] == "StageEnd" and begin is not None:
                        c += e["t0_ns"] - begin
                    if e["op"]:
                        m += e["t1_ns"] - e["t0_ns"]
                stages.append(c * 1e-6)
                mpi.append(m * 1e-6)
            parts.append(f"{statistics.median(stages):.2f} / {statistics.median(mpi):.2f}")
        print(f"| {app} {cluster} | {model * 1e3:.3f} | {win * 1e3:.3f} | {model / win:.3f} | "
              + ", ".join(parts) + " |")


def window(profile, rounds):
    """Rows the search moves on a uniform cluster, by trace length."""
    moved = {"short": [], "long": []}
    tmp = tempfile.mkdtemp(prefix="compute-probe-")
    try:
        for rnd in range(rounds):
            line = []
            for name, iters, extra in [("short", 8, []), ("long", 200, ["--seconds", "1.2"])]:
                tr = os.path.join(tmp, name)
                shutil.rmtree(tr, ignore_errors=True)
                cmd = [MHETA, "run", "--trace-dir", tr, *extra, "--", "mpirun",
                       "--allow-run-as-root", "-np", "2", os.path.join(BIN, "jacobi"),
                       "--n", "2048", "--iters", str(iters), "--cluster", "uniform"]
                out = subprocess.run(cmd, capture_output=True, text=True, env=ENV)
                if out.returncode != 0:
                    sys.exit(f"compute-probe: {' '.join(cmd)} failed:\n{out.stderr}")
                found = subprocess.run([MHETA, "search", "--profile", profile, "--trace", tr,
                                        "--json"], capture_output=True, text=True, env=ENV)
                if found.returncode != 0:
                    sys.exit(f"compute-probe: mheta search failed:\n{found.stderr}")
                dist = json.loads(found.stdout)["dist"]
                moved[name].append(abs(dist[0] - 1024))
                line.append(f"{name} {dist[0]},{dist[1]} ({abs(dist[0] - 1024)} moved)")
            print(f"round {rnd + 1}: " + ", ".join(line))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    for name, v in moved.items():
        print(f"{name}: rows moved off 1024, median {statistics.median(v):g}, max {max(v)} "
              f"({100 * max(v) / 1024:.1f}% of a rank's rows)")


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "self":
        if len(sys.argv) < 3 or not os.path.isdir(sys.argv[2]):
            sys.exit("compute-probe: self STUDY_WORK_DIR (an accuracy study's work directory)")
        return self_check(sys.argv[2])
    if len(sys.argv) > 2 and sys.argv[1] == "window":
        rounds = int(sys.argv[3]) if len(sys.argv) > 3 else 5
        if not os.path.isfile(sys.argv[2]):
            sys.exit(f"compute-probe: {sys.argv[2]}: no such profile")
        window(sys.argv[2], rounds)
        return
    if len(sys.argv) > 1 and sys.argv[1] == "paired":
        rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 9
        if rounds < 3:
            sys.exit("compute-probe: ROUNDS must be at least 3")
        cluster = sys.argv[3] if len(sys.argv) > 3 else "netdc2"
        if cluster not in ("netdc2", "netuniform2"):
            sys.exit(f"compute-probe: paired: {cluster}: netdc2 or netuniform2")
        profile = sys.argv[4] if len(sys.argv) > 4 else None
        if profile and not os.path.isfile(profile):
            sys.exit(f"compute-probe: paired: {profile}: no such profile")
        return paired(rounds, cluster, profile)
    if len(sys.argv) > 1 and sys.argv[1] == "recorded":
        rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 9
        if rounds < 3:
            sys.exit("compute-probe: ROUNDS must be at least 3")
        return recorded(rounds)
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 5
    out_path = sys.argv[2] if len(sys.argv) > 2 else "compute-probe.json"
    if rounds < 3:
        sys.exit("compute-probe: ROUNDS must be at least 3")
    runs = {k: [] for k in CONFIGS}
    for rnd in range(rounds):
        for name, (r0, r1, extra, rank) in CONFIGS.items():
            rep = run(r0, r1, extra)
            rk = rep["ranks"][rank]
            runs[name].append({
                "ns_per_row": rk["stage_s"] / rk["rows"] * 1e9,
                "cpu_share": rk.get("cpu_share"),
                "iter_median_s": rep["iter_median_s"],
                "emulation": rep["emulation"].get("cpu") if isinstance(rep["emulation"], dict) else rep["emulation"],
            })
        print(f"compute-probe: round {rnd + 1} of {rounds} done", file=sys.stderr)
    med = {k: statistics.median(r["ns_per_row"] for r in v) for k, v in runs.items()}
    print(f"{'configuration':<22} {'ns/row':>8} {'95% CI':>17} {'cv %':>6} {'cpu share':>9}")
    for name, v in runs.items():
        x = [r["ns_per_row"] for r in v]
        lo, hi = ci95(x)
        cv = 100 * statistics.pstdev(x) / statistics.mean(x)
        shares = [r["cpu_share"] for r in v if r["cpu_share"] is not None]
        share = f"{statistics.median(shares):9.3f}" if shares else f"{'-':>9}"
        print(f"{name:<22} {med[name]:8.1f} {lo:8.1f}-{hi:<8.1f} {cv:6.1f} {share}")
    # Ratios side by side: each round's run over its reference's run of
    # the same round, then the median over the rounds.
    print(f"\n{'configuration':<22} {'against':<20} {'ratio':>6} {'95% CI':>13} {'p10-p90':>13}  model")
    ratios = {}
    for name, (rname, want) in REFS.items():
        r = [a["ns_per_row"] / b["ns_per_row"] for a, b in zip(runs[name], runs[rname])]
        lo, hi = ci95(r)
        q = statistics.quantiles(r, n=10)
        ratios[name] = {"against": rname, "median": statistics.median(r), "ci95": [lo, hi], "model": want}
        print(f"{name:<22} {rname:<20} {statistics.median(r):6.3f} {lo:6.3f}-{hi:<6.3f} {q[0]:6.3f}-{q[-1]:<6.3f}  {want:g}")
    json.dump({"stamp": stamp("scripts/compute_probe.py " + " ".join(sys.argv[1:])),
               "n": N, "iters": ITERS, "runs": runs, "median_ns_per_row": med,
               "ratios": ratios},
              open(out_path, "w"), indent=1)
    print(f"wrote {out_path}")


if __name__ == "__main__":
    main()
