#!/usr/bin/env python3
"""Figueira and Berman's aggregate slowdown and --auto under load, on 4 ranks: two
emulated nodes of one core each (ranks 0,1 pinned to core 0, ranks 2,3 to
core 1 by an Open MPI rankfile, each rank a cgroup quota of half a core,
`--cpu-emulation share`), and a `mheta load` hog pinned to node 0's core.
Driven by scripts/parallel-study.sh.

Per app (jacobi, sor):
1. A dedicated trace on Block and a 4-rank profile.
2. Aggregate slowdown on Block: runs with the hog switching on and off every
   half second, iterations with it on against those with it off in the same
   run (the vCPUs' own speed moves between runs), 5 runs (3 quick); with
   F, node 0's ranks' CPU time per unit of work on over off. Predicted by
   `mheta predict --load` (node 0: ranks 0,1 on one CPU with the hog; the
   MHETA replay of the dedicated trace with those slowdowns) over the same
   replay dedicated, which is what mheta uses; and by Figueira and
   Berman's eq. 12 on the same local slowdowns (`mheta slowdown`), which
   takes the iteration to be its slowest node's computation: the two
   differ when communication and waiting are a part of the iteration
   that CPU sharing does not slow.
3. The spectrum, run under the load: node 0's ranks given 100% down to 40%
   of Block's rows, node 1's the rest, each run's median iteration.
4. --auto --replan-on sensed from a dedicated start, the hog arriving mid-run (a scripted
   `mheta load` level): the in-run sensor sees node 0's CPU share fall,
   the plan is made on the sensed slowdowns; the median iteration after
   that plan against the best of the spectrum.
"""
import json, os, statistics, subprocess, sys, time

from study import BIN, ENV, MHETA, QUICK, boot_ci, on_off_windows, stamp, start_load

OUT = sys.argv[1]
REPS = 1 if QUICK else 3
AGG_REPS = 3 if QUICK else 5
AGG_ITERS = 800 if QUICK else 1500
DWELL = 0.5  # the hog's on and off windows in the aggregate runs, seconds
os.makedirs(OUT, exist_ok=True)
W = os.path.join(OUT, "work")
os.makedirs(W, exist_ok=True)
RF = os.path.join(W, "rankfile")
open(RF, "w").write("".join(f"rank {r}=localhost slot={r // 2}\n" for r in range(4)))
APPS = [("jacobi", 1024, 500), ("sor", 1024, 500)]
FRACS = [1.0, 0.9, 0.8, 0.7, 0.6, 0.5, 0.4]
LOAD_AT = 3.0  # seconds after the job starts


def cmd(app, n, iters, extra=()):
    return ["mpirun", "-np", "4", "--rankfile", RF, "--oversubscribe", os.path.join(BIN, app), "--n", str(n),
            "--iters", str(iters), "--cpu-emulation", "share", "--wait", "sleep"] + list(extra)


def run(c, env=ENV):
    out = subprocess.run(c, env=env, capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit(f"parallel-study: {' '.join(c)}: {out.stderr[-2000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


class Load:
    def __init__(self, name, extra=()):
        ready = os.path.join(W, name + ".ready")
        self.p = start_load(["--quiet", "--proc", "hog", "--cores", "0",
                             "--timeline", os.path.join(W, name + ".json")] + list(extra), ready,
                            "parallel-study")

    def stop(self):
        self.p.terminate()
        self.p.wait(timeout=10)


def mheta_json(args):
    out = subprocess.run([MHETA] + args + ["--json"], env=ENV, capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit(f"parallel-study: mheta {' '.join(args)}: {out.stderr}")
    return json.loads(out.stdout)


def dist_for(n, f):
    x = int(round(n / 4 * f))
    y0 = (n - 2 * x) // 2
    return [x, x, y0, n - 2 * x - y0]


def main():
    t0 = time.time()
    prof = os.path.join(W, "profile.json")
    subprocess.run([MHETA, "bench", "--np", "4", "--quick", "--no-disk", "-o", prof], env=ENV, check=True,
                   capture_output=True)
    desc = {"node": [{"ranks": [0, 1], "cpus": 1, "competitors": [{"comm": 0.0, "compute": 1.0}]},
                     {"ranks": [2, 3], "cpus": 1}]}
    lf = os.path.join(W, "load.json")
    json.dump(desc, open(lf, "w"), indent=1)
    results = []
    for app, n, iters in APPS:
        tr = os.path.join(W, f"trace-{app}")
        # 1.5 s of recorded iterations: the vCPUs change speed by themselves.
        subprocess.run([MHETA, "run", "--trace-dir", tr, "--seconds", "1.5", "--"] + cmd(app, n, AGG_ITERS),
                       env=ENV, check=True, capture_output=True)
        block_d = dist_for(n, 1.0)
        block = ",".join(map(str, block_d))
        base = ["predict", "--profile", prof, "--trace", tr, "--dist", block]
        ded_pred = mheta_json(base)["per_iteration_s"]
        pred = mheta_json(base + ["--load", lf])["per_iteration_s"] / ded_pred
        # Figueira and Berman eq. 8 (eq. 12 on Block): the slowest node's
        # (1 + ew_a)·sd_a / w_a, every rank of the same dedicated power.
        sd = [x["sharing"]["mean"] for x in mheta_json(["slowdown", "--load", lf, "--np", "4"])["ranks"]]
        ew = [rows * 4 / n - 1 for rows in block_d]
        eq12 = max((1 + e) * s for e, s in zip(ew, sd)) / max(1 + e for e in ew)
        # Aggregate slowdown, measured within runs: the hog on and off.
        agg = []
        for rep in range(AGG_REPS):
            name = f"agg-{app}-{rep}"
            ld = Load(name, ["--levels", "0,1", "--dwell", str(DWELL), "--switch", "scripted"])
            r = run(cmd(app, n, AGG_ITERS), env=dict(ENV, MHETA_DEBUG_TIMES="1"))
            ld.stop()
            on, off = on_off_windows(r, json.load(open(os.path.join(W, name + ".json"))))
            alloff = off[0] + off[1]
            if len(on) < 20 or len(alloff) < 20:
                sys.exit(f"parallel-study: too few iterations on ({len(on)}) or off ({len(alloff)})")
            mean = lambda v, idx: sum(v[i] for i in idx) / len(idx)
            it = r["iter_times_s"]
            cpu = [sum(r["ranks"][k]["stage_cpu_s"][i] for k in (0, 1)) for i in range(len(it))]
            noise = (abs(mean(it, off[0]) / mean(it, off[1]) - 1)
                     if len(off[0]) >= 10 and len(off[1]) >= 10 else None)
            # Eq. 8 on this run's own dedicated windows: each rank's power
            # w_a from its median stage time with the hog off (the vCPUs'
            # speeds of this run, not of the trace's).
            stage_off = [statistics.median(r["ranks"][k]["stage_times_s"][i] for i in alloff) for k in range(4)]
            w = [min(stage_off) / x for x in stage_off]
            eq8 = (max((1 + e) * s / wa for e, s, wa in zip(ew, sd, w))
                   / max((1 + e) / wa for e, wa in zip(ew, w)))
            agg.append({"S": mean(it, on) / mean(it, alloff), "F": mean(cpu, on) / mean(cpu, alloff),
                        "eq8_run": eq8, "w": w,
                        "noise": noise, "iters_on": len(on), "iters_off": len(alloff)})
        ratios = [a["S"] for a in agg]
        meas = statistics.median(ratios)
        f_med = statistics.median(a["F"] for a in agg)
        noises = [a["noise"] for a in agg if a["noise"] is not None]
        eq8_run = statistics.median(a["eq8_run"] for a in agg)
        # The trace's ranks on Block: their recorded compute apart (the
        # vCPUs' speeds when it was recorded), which the replay keeps.
        rep = mheta_json(base)
        comp = [x["compute_s"] for x in rep.get("ranks", [])] if isinstance(rep.get("ranks"), list) else []
        trace_spread = 100 * (max(comp) / min(comp) - 1) if comp and min(comp) > 0 else None
        # The spectrum under load.
        ld = Load(f"spectrum-{app}")
        spectrum = {f: [] for f in FRACS}
        for _ in range(REPS):
            for f in FRACS:
                d = ",".join(map(str, dist_for(n, f)))
                spectrum[f].append(run(cmd(app, n, iters, ["--dist", d]))["iter_median_s"])
        ld.stop()
        spec_rows = [{"node0_fraction_of_block": f, "dist": dist_for(n, f),
                      "iter_median_s": statistics.median(v), "runs": v} for f, v in spectrum.items()]
        best = min(spec_rows, key=lambda r: r["iter_median_s"])
        # --auto: dedicated start, the hog arrives LOAD_AT s later.
        autos = []
        for rep in range(REPS):
            ld = Load(f"auto-{app}-{rep}", ["--levels", "0,1", "--dwell", f"{LOAD_AT},100000", "--switch", "scripted"])
            env = dict(ENV, MHETA_DEBUG_TIMES="1")
            r = run([MHETA, "run", "--trace-dir", os.path.join(W, f"auto-{app}-{rep}"), "--"]
                    + cmd(app, n, iters * 4, ["--auto", "--replan-on", "sensed", "--profile", prof]), env=env)
            ld.stop()
            a = r["auto"]
            sensed = [p for p in a["replans"] if p.get("sensed_slowdown")]
            times = r["iter_times_s"]
            last = (a["replans"][-1] if a["replans"] else a)["redistributed_after"]
            after = times[last + 3:] if sensed else []
            autos.append({
                "first_plan": a["chosen_dist"], "replans": [
                    {"after": p["redistributed_after"], "dist": p["chosen_dist"], "moved": p["moved"],
                     "sensed_slowdown": p.get("sensed_slowdown"), "reverted": p.get("reverted") is not None}
                    for p in a["replans"]],
                "final_dist": r["dist"],
                "sensed_plans": len(sensed),
                "iter_median_after_last_plan_s": statistics.median(after) if after else None,
            })
        got = [x["iter_median_after_last_plan_s"] for x in autos if x["iter_median_after_last_plan_s"]]
        auto_med = statistics.median(got) if got else None
        results.append({
            "app": app, "n": n, "iters": iters,
            "aggregate": {"predicted": pred, "eq12": eq12, "eq8_run_powers": eq8_run, "local_slowdowns": sd,
                          "trace_compute_spread_pct": trace_spread,
                          "measured": meas, "measured_ci": boot_ci(ratios), "measured_runs": agg,
                          "cpu_per_work": f_med, "fixed_work_rate": meas / f_med,
                          "noise_floor_pct": 100 * statistics.median(noises) if noises else None,
                          "err_pct": 100 * (pred / meas - 1), "err_eq12_pct": 100 * (eq12 / meas - 1),
                          "err_fixed_pct": 100 * (pred / (meas / f_med) - 1),
                          "err_eq12_fixed_pct": 100 * (eq12 / (meas / f_med) - 1),
                          "err_eq8_run_fixed_pct": 100 * (eq8_run / (meas / f_med) - 1)},
            "spectrum": spec_rows, "best": best, "auto": autos,
            "auto_iter_median_s": auto_med,
            "auto_fraction_of_best": best["iter_median_s"] / auto_med if auto_med else None,
        })
    res = {
        **stamp("scripts/parallel-study.sh " + OUT),
        "emulation": "two nodes of one core each: ranks 0,1 pinned to core 0 and 2,3 to core 1 (rankfile), each "
                     "rank a cgroup cpu quota of half a core (--cpu-emulation share), --wait sleep; a `mheta load` "
                     "hog pinned to core 0 (real contention; the kernel time-shares the core), on and off every "
                     f"{DWELL} s for the aggregate slowdown.",
        "apps": results, "wall_s": time.time() - t0,
    }
    json.dump(res, open(os.path.join(OUT, "parallel.json"), "w"), indent=1)
    for r in results:
        g = r["aggregate"]
        nf = "-" if g["noise_floor_pct"] is None else f"{g['noise_floor_pct']:.1f}%"
        runs_s = ", ".join(f"{x['S']:.3f}" for x in g["measured_runs"])
        print(f"{r['app']}: aggregate slowdown measured {g['measured']:.3f} [95% CI {g['measured_ci'][0]:.3f}, "
              f"{g['measured_ci'][1]:.3f}] (runs {runs_s}; noise floor {nf}); "
              f"replay {g['predicted']:.3f} ({g['err_pct']:+.1f}%), eq. 12 {g['eq12']:.3f} ({g['err_eq12_pct']:+.1f}%); "
              f"node 0's CPU per unit of work x{g['cpu_per_work']:.3f}, so at a fixed work rate {g['fixed_work_rate']:.3f}: "
              f"replay {g['err_fixed_pct']:+.1f}%, eq. 12 {g['err_eq12_fixed_pct']:+.1f}%, eq. 8 with each run's "
              f"own rank powers {g['eq8_run_powers']:.3f} ({g['err_eq8_run_fixed_pct']:+.1f}%)")
        if g["trace_compute_spread_pct"] is not None:
            print(f"  the trace's ranks on Block computed {g['trace_compute_spread_pct']:.1f}% apart (the replay keeps "
                  "that; eq. 12 takes equal powers)")
        print("  spectrum under load (node 0's rows / Block's): " + "  ".join(
            f"{s['node0_fraction_of_block']:.1f}:{s['iter_median_s']*1e3:.2f}ms" for s in r["spectrum"]))
        for x in r["auto"]:
            print(f"  --auto: first plan {x['first_plan']}, re-plans "
                  + "; ".join(f"after {p['after']} -> {p['dist']}{' (sensed)' if p['sensed_slowdown'] else ''}"
                              f"{' reverted' if p['reverted'] else ''}" for p in x["replans"])
                  + f"; median iteration after the last plan {x['iter_median_after_last_plan_s'] or float('nan'):.5f} s")
        if r["auto_fraction_of_best"]:
            print(f"  best of the spectrum {r['best']['dist']} {r['best']['iter_median_s']*1e3:.2f} ms; "
                  f"--auto {r['auto_iter_median_s']*1e3:.2f} ms: {r['auto_fraction_of_best']:.3f} of the best")
    print(f"emulation: {res['emulation']}")
    print(f"wrote {os.path.join(OUT, 'parallel.json')} in {res['wall_s']:.0f} s")


main()
