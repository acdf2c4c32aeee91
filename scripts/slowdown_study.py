#!/usr/bin/env python3
"""Figueira and Berman's table 7 on this machine: predicted against measured slowdown
of real kernels under real contention. Driven by scripts/slowdown-study.sh.

For each configuration of 1-3 `mheta load` generators pinned to core 0 (their
echo peers on core 1), runs a serial sor pinned to core 0 and a 2-rank jacobi
(rank 0 on core 0, rank 1 on core 1) while the generators switch on and off
every second (a scripted level), and compares the iterations run with the
load on against those run with it off, in the same run: this VM's vCPUs
change speed by themselves by up to 2x within seconds, so dedicated and
loaded runs one after another differ by as much as the effect measured,
while windows a second apart see the same speed. Each iteration is placed
by its midpoint on the generator's timeline and left out within 60 ms of a
switch; measured slowdown = mean iteration time with the load on over the
mean with it off. The noise floor is the same ratio between the odd and
the even off-windows.

mheta predicts the slowdown: each generator is first measured alone
(its dedicated compute and communication fractions and the CPU its
communication takes, from its timeline), the load description goes to
`mheta slowdown` (sor: rank 0's local slowdown) and to `mheta predict --load`
(jacobi: the MHETA replay of a dedicated trace with both nodes' slowdowns,
against the same replay dedicated).
"""
import json, os, statistics, subprocess, sys, time

from study import BIN, ENV, MHETA, QUICK, stamp

OUT = sys.argv[1]
REPS = int(os.environ.get("STUDY_REPS", "1"))
os.makedirs(OUT, exist_ok=True)
W = os.path.join(OUT, "work")
os.makedirs(W, exist_ok=True)

CYCLE = "50ms"
# (comm fraction, messages per burst, bytes per message) per generator:
# the shape of Figueira and Berman's table 7 (one, two and three generators,
# communication 15-60%, small and large bursts).
CONFIGS = [
    [(0.15, 1, "1K")],
    [(0.25, 4, "64K")],
    [(0.45, 16, "4K")],
    [(0.60, 2, "256K")],
    [(0.50, 4, "16K"), (0.50, 4, "16K")],
    [(0.15, 1, "1K"), (0.15, 8, "64K")],
    [(0.40, 4, "64K"), (0.15, 1, "1K")],
    [(0.60, 2, "256K"), (0.30, 16, "4K")],
    [(0.50, 4, "16K")] * 3,
    [(0.60, 2, "256K"), (0.30, 16, "4K"), (0.50, 4, "16K")],
]
if QUICK:
    CONFIGS = [CONFIGS[0], CONFIGS[4], CONFIGS[8]]
# (app, n, iters, ranks): about 6 s dedicated each, so that with the load
# on half the time a run lasts 9-15 s, five or more on/off periods.
APPS = [("sor", 768, 5000, 1), ("sor", 1536, 1300, 1),
        ("jacobi", 1024, 1800, 2), ("jacobi", 2048, 700, 2)]
if QUICK:
    APPS = [("sor", 768, 2000, 1), ("jacobi", 1024, 800, 2)]
DWELL = 0.5   # seconds on, seconds off
GUARD = 0.06  # seconds around a switch left out



def spec(g):
    c, m, b = g
    return f"cycle:comm={c},cycle={CYCLE},msgs={m},bytes={b}"


def app_cmd(app, n, iters, np_):
    args = [os.path.join(BIN, app), "--n", str(n), "--iters", str(iters),
            "--cpu-emulation", "spin", "--wait", "poll"]
    if np_ == 1:
        return ["taskset", "-c", "0"] + args
    return ["mpirun", "-np", str(np_), "--bind-to", "core"] + args


def run_app(app, n, iters, np_):
    out = subprocess.run(app_cmd(app, n, iters, np_), env=dict(ENV, MHETA_DEBUG_TIMES="1"),
                         capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit(f"slowdown-study: {app} failed: {out.stderr[-2000:]}")
    return json.loads(out.stdout)


def on_off(report, timeline):
    """Mean iteration time with the load on and off, and the off-windows'
    odd/even ratio (noise floor)."""
    tl = json.load(open(timeline))
    t0 = tl["start_unix_s"]
    sw = [(x["t_s"] + t0, x["level"]) for x in tl["bursty"]["switches"]]
    t = report["loop_start_unix_s"]
    on, off = [], {0: [], 1: []}
    for d in report["iter_times_s"][1:]:
        mid, t = t + d / 2, t + d
        k = max((i for i, (ts, _) in enumerate(sw) if ts <= mid), default=None)
        if k is None:
            continue
        near = min(abs(mid - ts) for ts, _ in sw)
        if near < GUARD or (k + 1 < len(sw) and sw[k + 1][0] - mid < GUARD):
            continue
        if sw[k][1] > 0:
            on.append(d)
        else:
            off[k // 2 % 2].append(d)
    alloff = off[0] + off[1]
    if len(on) < 20 or len(alloff) < 20:
        sys.exit(f"slowdown-study: too few iterations on ({len(on)}) or off ({len(alloff)})")
    mean = lambda v: sum(v) / len(v)
    noise = abs(mean(off[0]) / mean(off[1]) - 1.0) if off[0] and off[1] else None
    return mean(on) / mean(alloff), noise, len(on), len(alloff)


class Load:
    """`mheta load` running beside the job, stopped with SIGTERM; with
    `switching`, all its processes on for DWELL s, off for DWELL s."""

    def __init__(self, gens, timeline, duration=None, switching=False):
        ready = timeline + ".ready"
        cmd = [MHETA, "load", "--quiet", "--cores", "0", "--peer-core", "1",
               "--timeline", timeline, "--ready-file", ready]
        for g in gens:
            cmd += ["--proc", spec(g)]
        if duration:
            cmd += ["--duration", str(duration)]
        if switching:
            cmd += ["--levels", f"0,{len(gens)}", "--dwell", str(DWELL), "--switch", "scripted"]
        self.p = subprocess.Popen(cmd)
        t0 = time.time()
        while not os.path.exists(ready):
            if self.p.poll() is not None or time.time() - t0 > 10:
                sys.exit(f"slowdown-study: mheta load did not start ({cmd})")
            time.sleep(0.01)
        time.sleep(0.2)  # a few cycles before the job starts

    def stop(self):
        self.p.terminate()
        if self.p.wait(timeout=10) != 0:
            sys.exit("slowdown-study: mheta load exited non-zero")


def calibrate(g, i):
    """One generator alone on core 0: its dedicated fractions."""
    tl = os.path.join(W, f"cal-{i}.json")
    Load([g], tl, duration=2.0).p.wait()
    t = json.load(open(tl))["procs"][0]
    act = t["active_s"]
    comm_wall = max(t["comm_wall_s"], 1e-9)
    return {
        "spec": spec(g),
        "compute": t["compute_wall_s"] / act,
        "comm": t["comm_wall_s"] / act,
        "comm_cpu": min(t["comm_cpu_s"] / comm_wall, 0.99),
        "peer_cpu": min(t["peer_cpu_s"] / comm_wall, 0.99),
    }


def load_desc(cals, np_):
    node0 = {"ranks": [0], "competitors": [
        {"compute": c["compute"], "comm": c["comm"], "comm_cpu": c["comm_cpu"]} for c in cals]}
    nodes = [node0]
    if np_ == 2:
        # The echo peers on core 1: active while their generator
        # communicates, taking the CPU they were measured to take.
        nodes.append({"ranks": [1], "competitors": [
            {"compute": 0.0, "comm": c["comm"], "comm_cpu": c["peer_cpu"]} for c in cals]})
    return {"node": nodes}


def mheta_json(args):
    out = subprocess.run([MHETA] + args + ["--json"], env=ENV, capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit(f"slowdown-study: mheta {' '.join(args)}: {out.stderr}")
    return json.loads(out.stdout)


def main():
    t_start = time.time()
    # Profile and dedicated traces for the 2-rank predictions.
    prof = os.path.join(W, "profile.json")
    subprocess.run([MHETA, "bench", "--np", "2", "--quick", "--no-disk", "-o", prof],
                   env=ENV, check=True, capture_output=True)
    traces = {}
    for app, n, iters, np_ in APPS:
        if np_ == 2:
            tr = os.path.join(W, f"trace-{app}-{n}")
            subprocess.run([MHETA, "run", "--trace-dir", tr, "--"] + app_cmd(app, n, 12, np_),
                           env=ENV, check=True, capture_output=True)
            traces[(app, n)] = tr
    # Every distinct generator measured alone.
    gens = sorted({g for cfg in CONFIGS for g in cfg})
    cal = {g: calibrate(g, i) for i, g in enumerate(gens)}
    rows = []
    ded_pairs = []
    for (app, n, iters, np_) in APPS:
        cells = {i: [] for i in range(len(CONFIGS))}
        counts = {i: [] for i in range(len(CONFIGS))}
        for rep in range(REPS):
            for i, cfg in enumerate(CONFIGS):
                tl = os.path.join(W, f"run-{app}-{n}-{i}-{rep}.json")
                ld = Load(cfg, tl, switching=True)
                rep_json = run_app(app, n, iters, np_)
                ld.stop()
                ratio, noise, n_on, n_off = on_off(rep_json, tl)
                cells[i].append(ratio)
                counts[i].append([n_on, n_off])
                if noise is not None:
                    ded_pairs.append(noise)
        for i, cfg in enumerate(CONFIGS):
            cals = [cal[g] for g in cfg]
            desc = load_desc(cals, np_)
            lf = os.path.join(W, f"load-{app}-{n}-{i}.json")
            json.dump(desc, open(lf, "w"), indent=1)
            if np_ == 1:
                s = mheta_json(["slowdown", "--load", lf, "--np", "1"])["ranks"][0]
                pred, pred_paper = s["sharing"]["mean"], s["paper"]["mean"]
            else:
                tr = traces[(app, n)]
                half = n // 2
                base = ["predict", "--profile", prof, "--trace", tr, "--dist", f"{half},{n - half}"]
                ded = mheta_json(base)["per_iteration_s"]
                pred = mheta_json(base + ["--load", lf])["per_iteration_s"] / ded
                pred_paper = mheta_json(base + ["--load", lf, "--rule", "paper"])["per_iteration_s"] / ded
            meas = statistics.median(cells[i])
            rows.append({
                "app": app, "n": n, "np": np_,
                "generators": [c["spec"] for c in cals],
                "load": [{k: round(v, 4) for k, v in c.items() if k != "spec"} for c in cals],
                "predicted": pred, "predicted_paper": pred_paper,
                "measured": meas, "measured_runs": cells[i], "iterations_on_off": counts[i],
                "err_pct": 100.0 * abs(pred - meas) / meas,
                "err_paper_pct": 100.0 * abs(pred_paper - meas) / meas,
            })
    errs = [r["err_pct"] for r in rows]
    perrs = [r["err_paper_pct"] for r in rows]
    res = {
        **stamp("scripts/slowdown-study.sh " + OUT),
        "emulation": "none: real contention. `mheta load` generators (threads) pinned to core 0 beside the "
                     "job's rank on core 0, their echo peers on core 1 beside jacobi's rank 1, switched on and "
                     f"off every {DWELL} s; the kernel time-shares the cores (CFS). Kernels: --cpu-emulation "
                     "spin on uniform (no extra work, no cgroup), --wait poll. Measured: iterations with the "
                     "load on against those with it off, in the same run.",
        "cycle": CYCLE, "reps": REPS,
        "rows": rows,
        "mean_err_pct": statistics.mean(errs), "max_err_pct": max(errs),
        "paper_rule": {"mean_err_pct": statistics.mean(perrs), "max_err_pct": max(perrs)},
        "noise_floor_pct": 100.0 * statistics.median(ded_pairs) if ded_pairs else None,
        "noise_floor_max_pct": 100.0 * max(ded_pairs) if ded_pairs else None,
        "wall_s": time.time() - t_start,
    }
    json.dump(res, open(os.path.join(OUT, "slowdown.json"), "w"), indent=1)
    print(f"{'app':<7} {'n':>5} {'np':>2}  {'generators (comm/msgs/bytes)':<38} {'pred':>6} {'eq.2':>6} {'meas':>6} {'err%':>5} {'eq2%':>5}")
    for r in rows:
        g = "; ".join(s.split(":", 1)[1].replace(f",cycle={CYCLE}", "").replace("comm=", "").replace("msgs=", "").replace("bytes=", "") for s in r["generators"])
        print(f"{r['app']:<7} {r['n']:>5} {r['np']:>2}  {g:<38} {r['predicted']:6.3f} {r['predicted_paper']:6.3f} {r['measured']:6.3f} {r['err_pct']:5.1f} {r['err_paper_pct']:5.1f}")
    print(f"mean error {res['mean_err_pct']:.1f}%, max {res['max_err_pct']:.1f}% "
          f"(eq. 2 as published: mean {res['paper_rule']['mean_err_pct']:.1f}%, max {res['paper_rule']['max_err_pct']:.1f}%); "
          f"noise floor (odd against even off-windows of a run) median {res['noise_floor_pct']:.1f}%, max {res['noise_floor_max_pct']:.1f}%")
    print(f"emulation: {res['emulation']}")
    print(f"wrote {os.path.join(OUT, 'slowdown.json')} in {res['wall_s']:.0f} s")


main()
