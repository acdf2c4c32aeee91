#!/usr/bin/env python3
"""Figueira and Berman's table 7 on this machine: predicted against measured slowdown
of real kernels under real contention. Driven by scripts/slowdown-study.sh.

For each configuration of 1-3 `mheta load` generators pinned to core 0 (their
echo peers on core 1), runs a serial sor pinned to core 0 and a 2-rank jacobi
(rank 0 on core 0, rank 1 on core 1) while the generators switch on and off
every half second (a scripted level), and compares the iterations run with
the load on against those run with it off, in the same run: this VM's vCPUs
change speed by themselves within seconds, so dedicated and loaded runs one
after another differ by as much as the effect measured, while windows half a
second apart see the same speed. Each iteration is placed by its midpoint on
the generators' timeline and left out within 60 ms of a switch. Every
configuration runs REPS times, all runs interleaved.

Measured per run (the kernels' MHETA_DEBUG_TIMES report, the load's timeline):
- slowdown S: mean iteration time with the load on over the mean with it off;
- the loaded rank's CPU time per unit of work on over off, F (its CPU time per
  iteration: the work per iteration is fixed); S / F is the slowdown with
  the rank's work rate held fixed, the part CPU sharing makes (contention);
- the loaded rank's CPU availability (CPU time over CPU time plus run-queue
  delay, schedstat) on and off;
- each generator's behaviour over the run (`as_competitor` of the timeline:
  its compute and communication fractions net of its own run-queue delay,
  and its run-queue delay);
- the noise floor: S and F between the odd and the even off-windows;
- where F comes from: sor beside one hog on the other core (the
  neighbouring vCPU busy) and on its own core (time-shared), F of each.

Predicted per run, from what the generators did in that run (the model's
load description from the timeline's `as_competitor`), by the sharing rule
and by eq. 2 as published, through `mheta slowdown`: sor is rank 0's local
slowdown; jacobi is Figueira and Berman's eq. 8 over both ranks' local
slowdowns, each rank's power from its stage time with the load off in the
same run (this VM's two vCPUs change speed against each other from one
run to the next, so a trace recorded minutes earlier prices them wrong). Beside it the MHETA replay of a
dedicated trace (`mheta predict --load` over the same replay dedicated),
which keeps the trace's speeds. And from each generator measured alone
beforehand (its dedicated fractions).
"""
import json, os, statistics, subprocess, sys, time

from study import BIN, ENV, MHETA, QUICK, boot_ci, on_off_windows, stamp, start_load

OUT = sys.argv[1]
REPS = int(os.environ.get("STUDY_REPS", "3" if QUICK else "5"))
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
    [(0.30, 8, "16K")],
    [(0.45, 16, "4K")],
    [(0.60, 2, "256K")],
    [(0.50, 4, "16K"), (0.50, 4, "16K")],
    [(0.15, 1, "1K"), (0.15, 8, "64K")],
    [(0.40, 4, "64K"), (0.15, 1, "1K")],
    [(0.60, 2, "256K"), (0.30, 16, "4K")],
    [(0.50, 4, "16K")] * 3,
    [(0.15, 1, "1K"), (0.45, 16, "4K"), (0.25, 4, "64K")],
    [(0.60, 2, "256K"), (0.30, 16, "4K"), (0.50, 4, "16K")],
]
if QUICK:
    CONFIGS = [CONFIGS[0], CONFIGS[5], CONFIGS[9]]
# (app, n, ranks) and the seconds a dedicated run lasts (its iterations
# are sized to it on this machine, `sized`): 3 s (1.5 s quick), so that
# with the load on half the time a run lasts 4-8 s, four or more on/off
# periods.
APPS = [("sor", 768, 1), ("jacobi", 1024, 2)]
SECONDS = 1.5 if QUICK else 3.0
DWELL = 0.5   # seconds on, seconds off
GUARD = 0.06  # seconds around a switch left out
GOAL_MEAN, GOAL_MAX = 3.0, 6.0
SPLIT_REPS = 2 if QUICK else 4


def spec(g):
    c, m, b = g
    return f"cycle:comm={c},cycle={CYCLE},msgs={m},bytes={b}"


def app_cmd(app, n, iters, np_):
    args = [os.path.join(BIN, app), "--n", str(n), "--iters", str(iters),
            "--cpu-emulation", "spin", "--wait", "poll"]
    if np_ == 1:
        return ["taskset", "-c", "0"] + args
    return ["mpirun", "-np", str(np_), "--bind-to", "core"] + args


def sized(app, n, np_):
    """The iterations that last SECONDS dedicated here: the median
    iteration of a 60-iteration run (the first 10 left out), measured
    now, since a kernel's speed is the machine's and the build's."""
    it = run_app(app, n, 60, np_)["iter_times_s"][10:]
    return max(100, int(SECONDS / statistics.median(it)))


def run_app(app, n, iters, np_):
    out = subprocess.run(app_cmd(app, n, iters, np_), env=dict(ENV, MHETA_DEBUG_TIMES="1"),
                         capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit(f"slowdown-study: {app} failed: {out.stderr[-2000:]}")
    return json.loads(out.stdout)


def windows(report, timeline):
    """On- and off-window iterations (study.on_off_windows), enough of each."""
    on, off = on_off_windows(report, timeline, GUARD)
    if len(on) < 20 or len(off[0]) + len(off[1]) < 20:
        sys.exit(f"slowdown-study: too few iterations on ({len(on)}) or off "
                 f"({len(off[0]) + len(off[1])})")
    return on, off


def measure(report, timeline):
    """One run's slowdown S, the loaded rank's CPU per unit of work F, its
    availability on and off, and the odd/even noise of S and F."""
    on, off = windows(report, timeline)
    alloff = off[0] + off[1]
    it = report["iter_times_s"]
    r0 = report["ranks"][0]
    cpu = r0["stage_cpu_s"]
    mean = lambda v, idx: sum(v[i] for i in idx) / len(idx)

    def avail(idx):
        # Σ cpu / Σ (cpu + wait): per iteration cpu/avail is cpu + wait.
        a = r0.get("cpu_avail_per_iter") or []
        pairs = [(cpu[i], a[i]) for i in idx if i < len(a) and a[i]]
        if not pairs:
            return None
        return sum(c for c, _ in pairs) / sum(c / x for c, x in pairs)

    s = mean(it, on) / mean(it, alloff)
    f = mean(cpu, on) / mean(cpu, alloff)
    noise_s = noise_f = None
    if len(off[0]) >= 10 and len(off[1]) >= 10:
        noise_s = abs(mean(it, off[0]) / mean(it, off[1]) - 1.0)
        noise_f = abs(mean(cpu, off[0]) / mean(cpu, off[1]) - 1.0)
    stage_off = [statistics.median(r["stage_times_s"][i] for i in alloff) for r in report["ranks"]]
    return {"S": s, "F": f, "A": s / f, "avail_on": avail(on), "avail_off": avail(alloff), "stage_off": stage_off,
            "noise_S": noise_s, "noise_F": noise_f, "iters_on": len(on), "iters_off": len(alloff)}


class Load:
    """`mheta load` running beside the job, stopped with SIGTERM; with
    `switching`, all its processes on for DWELL s, off for DWELL s."""

    def __init__(self, gens, timeline, duration=None, switching=False, cores="0"):
        ready = timeline + ".ready"
        cmd = ["--quiet", "--cores", cores, "--peer-core", "1", "--timeline", timeline]
        for g in gens:
            cmd += ["--proc", g if isinstance(g, str) else spec(g)]
        if duration:
            cmd += ["--duration", str(duration)]
        if switching:
            cmd += ["--levels", f"0,{len(gens)}", "--dwell", str(DWELL), "--switch", "scripted"]
        self.p = start_load(cmd, ready, "slowdown-study")
        time.sleep(0.2)  # a few cycles before the job starts

    def stop(self):
        self.p.terminate()
        if self.p.wait(timeout=10) != 0:
            sys.exit("slowdown-study: mheta load exited non-zero")


def competitors(timeline):
    """The model's competitors on each core from what the load did: each
    process's `as_competitor` on core 0, its echo peer's on core 1."""
    procs = timeline["procs"]
    own = [p["as_competitor"] for p in procs]
    peers = [p["peer_as_competitor"] for p in procs if p.get("peer_as_competitor")]
    if any(c is None for c in own):
        sys.exit("slowdown-study: a generator ran no cycle (timeline without as_competitor)")
    return own, peers


def load_desc(own, peers, np_):
    nodes = [{"ranks": [0], "competitors": own}]
    if np_ == 2:
        nodes.append({"ranks": [1], "competitors": peers})
    return {"node": nodes}


def mheta_json(args):
    out = subprocess.run([MHETA] + args + ["--json"], env=ENV, capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit(f"slowdown-study: mheta {' '.join(args)}: {out.stderr}")
    return json.loads(out.stdout)


def predict(desc, name, app, n, np_, prof, traces, stage_off):
    """Predicted slowdowns for the load description `desc`, by the sharing
    rule (`pred`) and by eq. 2 as published (`pred_eq2`). For 2 ranks these
    are Figueira and Berman's eq. 8 on the ranks' local slowdowns, with each
    rank's power from `stage_off` (its median stage time with the load off
    in this run: the vCPUs' speeds of this run); beside them `pred_replay`,
    the MHETA replay of the dedicated trace (`mheta predict --load` over the
    same replay dedicated), which prices the ranks at the speeds the trace
    recorded."""
    lf = os.path.join(W, f"load-{name}.json")
    json.dump(desc, open(lf, "w"), indent=1)
    ranks = mheta_json(["slowdown", "--load", lf, "--np", str(np_)])["ranks"]
    if np_ == 1:
        return {"pred": ranks[0]["sharing"]["mean"], "pred_eq2": ranks[0]["paper"]["mean"]}
    eq8 = lambda sd: max(t * x for t, x in zip(stage_off, sd)) / max(stage_off)
    half = n // 2
    base = ["predict", "--profile", prof, "--trace", traces[(app, n)], "--dist", f"{half},{n - half}"]
    ded = mheta_json(base)["per_iteration_s"]
    return {"pred": eq8([r["sharing"]["mean"] for r in ranks]),
            "pred_eq2": eq8([r["paper"]["mean"] for r in ranks]),
            "local": [r["sharing"]["mean"] for r in ranks],
            "pred_replay": mheta_json(base + ["--load", lf])["per_iteration_s"] / ded}


def calibrate(g, i):
    """One generator alone on core 0: what it does with a CPU to itself."""
    tl = os.path.join(W, f"cal-{i}.json")
    Load([g], tl, duration=2.0).p.wait()
    t = json.load(open(tl))["procs"][0]
    return t["as_competitor"], t["peer_as_competitor"]


def work_rate_split():
    """Where F comes from: sor alone beside one hog switched on and off,
    the hog on the other core (the neighbouring vCPU busy: the host's
    sharing of the physical core, its caches and memory) and on sor's own
    core (time-shared: the caches refilled after each of the hog's
    turns). F of each, median of SPLIT_REPS interleaved runs, with the
    odd/even off-window noise of F."""
    app, n, iters, np_ = next(a for a in APPS if a[3] == 1)
    out = {"neighbour": [], "own": []}
    for rep in range(SPLIT_REPS):
        for where, core in (("neighbour", "1"), ("own", "0"))[::1 if rep % 2 == 0 else -1]:
            tl = os.path.join(W, f"split-{where}-{rep}.json")
            ld = Load(["hog"], tl, switching=True, cores=core)
            r = run_app(app, n, iters, np_)
            ld.stop()
            out[where].append(measure(r, json.load(open(tl))))
    return {k: {"F": statistics.median(m["F"] for m in v), "F_ci": boot_ci([m["F"] for m in v]),
                "S": statistics.median(m["S"] for m in v),
                "noise_F_pct": 100.0 * statistics.median(m["noise_F"] or 0.0 for m in v), "runs": len(v)}
            for k, v in out.items()}


def err_pct(pred, meas):
    return 100.0 * (pred / meas - 1.0)


def verdict(err, floor_pct):
    """Within the goal's max, else within the row's noise (max of its noise
    floor and its CI's half-width), else missed."""
    if abs(err) <= GOAL_MAX:
        return "met"
    return "within noise" if abs(err) <= floor_pct else "missed"


def main():
    t_start = time.time()
    prof = os.path.join(W, "profile.json")
    subprocess.run([MHETA, "bench", "--np", "2", "--quick", "--no-disk", "-o", prof],
                   env=ENV, check=True, capture_output=True)
    traces = {}
    APPS[:] = [(app, n, sized(app, n, np_), np_) for app, n, np_ in APPS]
    for app, n, iters, np_ in APPS:
        if np_ == 2:
            tr = os.path.join(W, f"trace-{app}-{n}")
            # 1.5 s of recorded iterations: the ranks' vCPUs change speed
            # by themselves over tenths of seconds.
            subprocess.run([MHETA, "run", "--trace-dir", tr, "--seconds", "1.5", "--"]
                           + app_cmd(app, n, iters, np_), env=ENV, check=True, capture_output=True)
            traces[(app, n)] = tr
    gens = sorted({g for cfg in CONFIGS for g in cfg})
    alone = {g: calibrate(g, i) for i, g in enumerate(gens)}
    cells = [(a, i) for a in range(len(APPS)) for i in range(len(CONFIGS))]
    runs = {c: [] for c in cells}
    for rep in range(REPS):
        order = cells[:] if rep % 2 == 0 else cells[::-1]
        for a, i in order:
            app, n, iters, np_ = APPS[a]
            tl = os.path.join(W, f"run-{app}-{n}-{i}-{rep}.json")
            ld = Load(CONFIGS[i], tl, switching=True)
            rep_json = run_app(app, n, iters, np_)
            ld.stop()
            json.dump(rep_json, open(os.path.join(W, f"report-{app}-{n}-{i}-{rep}.json"), "w"))
            timeline = json.load(open(tl))
            m = measure(rep_json, timeline)
            own, peers = competitors(timeline)
            m.update(predict(load_desc(own, peers, np_), f"{app}-{i}-{rep}", app, n, np_, prof, traces,
                             m["stage_off"]))
            al_own = [alone[g][0] for g in CONFIGS[i]]
            al_peers = [alone[g][1] for g in CONFIGS[i] if alone[g][1]]
            m["pred_alone"] = predict(load_desc(al_own, al_peers, np_), f"{app}-{i}-{rep}-alone", app, n, np_,
                                      prof, traces, m["stage_off"])["pred"]
            m["generators"] = [{"as_competitor": p["as_competitor"], "runq_wait_s": p["runq_wait_s"],
                                "active_s": p["active_s"], "cpu_s": p["cpu_s"]}
                               for p in timeline["procs"]]
            runs[(a, i)].append(m)
    split = work_rate_split()
    rows = []
    for a, i in cells:
        app, n, iters, np_ = APPS[a]
        rs = runs[(a, i)]
        med = lambda k: statistics.median(r[k] for r in rs)
        S, A, F = med("S"), med("A"), med("F")
        # Each run's error against its own measurement, then the median.
        e_s = statistics.median(err_pct(r["pred"], r["S"]) for r in rs)
        e_a = statistics.median(err_pct(r["pred"], r["A"]) for r in rs)
        e_eq2 = statistics.median(err_pct(r["pred_eq2"], r["S"]) for r in rs)
        e_alone = statistics.median(err_pct(r["pred_alone"], r["S"]) for r in rs)
        e_replay = (statistics.median(err_pct(r["pred_replay"], r["A"]) for r in rs)
                    if np_ == 2 else None)
        ci_s = boot_ci([r["S"] for r in rs])
        ci_a = boot_ci([r["A"] for r in rs])
        noise_s = [r["noise_S"] for r in rs if r["noise_S"] is not None]
        noise_f = [r["noise_F"] for r in rs if r["noise_F"] is not None]
        floor_s = 100.0 * statistics.median(noise_s) if noise_s else None
        floor_f = 100.0 * statistics.median(noise_f) if noise_f else None
        half_s = 100.0 * (ci_s[1] - ci_s[0]) / 2 / S
        half_a = 100.0 * (ci_a[1] - ci_a[0]) / 2 / A
        rows.append({
            "app": app, "n": n, "np": np_, "iters": iters,
            "generators": [spec(g) for g in CONFIGS[i]],
            "runs": rs,
            "measured": S, "measured_ci": ci_s,
            "contention": A, "contention_ci": ci_a,
            "cpu_per_work": F, "cpu_per_work_ci": boot_ci([r["F"] for r in rs]),
            "avail_on": med("avail_on") if all(r["avail_on"] for r in rs) else None,
            "predicted": med("pred"), "predicted_eq2": med("pred_eq2"), "predicted_alone": med("pred_alone"),
            "predicted_replay": med("pred_replay") if np_ == 2 else None,
            "err_replay_contention_pct": e_replay,
            "err_pct": e_s, "err_contention_pct": e_a, "err_eq2_pct": e_eq2, "err_alone_pct": e_alone,
            "noise_floor_pct": floor_s, "noise_floor_cpu_per_work_pct": floor_f,
            "verdict": verdict(e_s, max(floor_s or 0.0, half_s)),
            "verdict_contention": verdict(e_a, max(floor_s or 0.0, half_a)),
        })
    floors = [r["noise_floor_pct"] for r in rows if r["noise_floor_pct"] is not None] or [0.0]
    absm = lambda k: statistics.mean(abs(r[k]) for r in rows)
    absx = lambda k: max(abs(r[k]) for r in rows)
    res = {
        **stamp("scripts/slowdown-study.sh " + OUT),
        "emulation": "none: real contention. `mheta load` generators (threads) pinned to core 0 beside the "
                     "job's rank on core 0, their echo peers on core 1 beside jacobi's rank 1, switched on and "
                     f"off every {DWELL} s; the kernel time-shares the cores (CFS). Kernels: --cpu-emulation "
                     "spin on uniform (no extra work, no cgroup), --wait poll. Measured: iterations with the "
                     f"load on against those with it off, in the same run; {REPS} interleaved runs a row.",
        "cycle": CYCLE, "reps": REPS, "goal_mean_pct": GOAL_MEAN, "goal_max_pct": GOAL_MAX,
        "rows": rows,
        "mean_err_pct": absm("err_pct"), "max_err_pct": absx("err_pct"),
        "contention": {"mean_err_pct": absm("err_contention_pct"), "max_err_pct": absx("err_contention_pct")},
        "paper_rule": {"mean_err_pct": absm("err_eq2_pct"), "max_err_pct": absx("err_eq2_pct")},
        "alone": {"mean_err_pct": absm("err_alone_pct"), "max_err_pct": absx("err_alone_pct")},
        "cpu_per_work_median": statistics.median(r["cpu_per_work"] for r in rows),
        "cpu_per_work_range": [min(r["cpu_per_work"] for r in rows), max(r["cpu_per_work"] for r in rows)],
        "noise_floor_pct": statistics.median(floors),
        "noise_floor_max_pct": max(floors),
        "work_rate_split": split,
        "verdicts": {v: sum(r["verdict"] == v for r in rows) for v in ("met", "within noise", "missed")},
        "verdicts_contention": {v: sum(r["verdict_contention"] == v for r in rows)
                                for v in ("met", "within noise", "missed")},
        "wall_s": time.time() - t_start,
    }
    print(f"{'app':<6} {'n':>4} {'np':>2}  {'generators (comm/msgs/bytes)':<32} {'meas':>6} {'95% CI':>13} "
          f"{'F':>5} {'S/F':>6} {'pred':>6} {'err%':>6} {'vsS/F%':>6} {'eq2%':>6} {'alone%':>6} {'noise%':>6}  verdict")
    for r in rows:
        g = "; ".join(s.split(":", 1)[1].replace(f",cycle={CYCLE}", "").replace("comm=", "").replace("msgs=", "").replace("bytes=", "") for s in r["generators"])
        ci = r["measured_ci"]
        print(f"{r['app']:<6} {r['n']:>4} {r['np']:>2}  {g:<32} {r['measured']:6.3f} [{ci[0]:5.3f},{ci[1]:5.3f}] "
              f"{r['cpu_per_work']:5.3f} {r['contention']:6.3f} {r['predicted']:6.3f} {r['err_pct']:+6.1f} "
              f"{r['err_contention_pct']:+6.1f} {r['err_eq2_pct']:+6.1f} {r['err_alone_pct']:+6.1f} "
              f"{'-' if r['noise_floor_pct'] is None else format(r['noise_floor_pct'], '6.1f'):>6}  {r['verdict']} / {r['verdict_contention']}")
    v, vc = res["verdicts"], res["verdicts_contention"]
    print(f"F: the loaded rank's CPU time per unit of work, load on over off (median {res['cpu_per_work_median']:.3f}, "
          f"range {res['cpu_per_work_range'][0]:.3f}-{res['cpu_per_work_range'][1]:.3f}); S/F: the slowdown at a fixed work rate")
    sn, so = split["neighbour"], split["own"]
    print(f"F's sources (sor beside one hog on and off, median of {sn['runs']} interleaved runs): the hog on the other "
          f"core x{sn['F']:.3f} [{sn['F_ci'][0]:.3f},{sn['F_ci'][1]:.3f}] (S {sn['S']:.3f}), on sor's own core "
          f"x{so['F']:.3f} [{so['F_ci'][0]:.3f},{so['F_ci'][1]:.3f}] (S {so['S']:.3f}); F's noise floor "
          f"{sn['noise_F_pct']:.1f}% and {so['noise_F_pct']:.1f}%")
    print(f"predicted from what the generators did (sharing rule) against S: mean {res['mean_err_pct']:.1f}%, "
          f"max {res['max_err_pct']:.1f}% ({v['met']} met, {v['within noise']} within noise, {v['missed']} missed); "
          f"against S/F: mean {res['contention']['mean_err_pct']:.1f}%, max {res['contention']['max_err_pct']:.1f}% "
          f"({vc['met']} met, {vc['within noise']} within noise, {vc['missed']} missed)")
    print(f"eq. 2 as published: mean {res['paper_rule']['mean_err_pct']:.1f}%, max {res['paper_rule']['max_err_pct']:.1f}%; "
          f"sharing rule from the generators measured alone: mean {res['alone']['mean_err_pct']:.1f}%, "
          f"max {res['alone']['max_err_pct']:.1f}%")
    rp = [abs(r["err_replay_contention_pct"]) for r in rows if r["err_replay_contention_pct"] is not None]
    if rp:
        res["replay"] = {"mean_err_contention_pct": statistics.mean(rp), "max_err_contention_pct": max(rp)}
        print(f"2-rank rows by the MHETA replay of the trace instead of eq. 8 (the ranks at the speeds the trace "
              f"recorded, not this run's) against S/F: mean {statistics.mean(rp):.1f}%, max {max(rp):.1f}%")
    print(f"goal: mean <= {GOAL_MEAN:.0f}%, max <= {GOAL_MAX:.0f}%; noise floor (odd against even off-windows of a run) "
          f"median {res['noise_floor_pct']:.1f}%, max {res['noise_floor_max_pct']:.1f}%")
    print(f"emulation: {res['emulation']}")
    json.dump(res, open(os.path.join(OUT, "slowdown.json"), "w"), indent=1)
    print(f"wrote {os.path.join(OUT, 'slowdown.json')} in {res['wall_s']:.0f} s")


main()
