#!/usr/bin/env python3
"""Figueira and Berman's aggregate slowdown and --auto under load, on 4 ranks: two
emulated nodes of one core each (ranks 0,1 pinned to core 0, ranks 2,3 to
core 1 by an Open MPI rankfile, each rank a cgroup quota of half a core,
`--cpu-emulation share`), and a `mheta load` hog pinned to node 0's core.
Driven by scripts/parallel-study.sh.

Per app (jacobi, sor):
1. A dedicated trace on Block and a 4-rank profile.
2. Aggregate slowdown: Block dedicated and loaded, interleaved (D L D L ...);
   predicted by `mheta predict --load` (node 0: ranks 0,1 on one CPU with
   the hog; the MHETA replay of the dedicated trace with those slowdowns)
   over the same replay dedicated.
3. The spectrum, run under the load: node 0's ranks given 100% down to 40%
   of Block's rows, node 1's the rest, each run's median iteration.
4. --auto --replan-on sensed from a dedicated start, the hog arriving mid-run (a scripted
   `mheta load` level): the in-run sensor sees node 0's CPU share fall,
   the plan is made on the sensed slowdowns; the median iteration after
   that plan against the best of the spectrum.
"""
import json, os, statistics, subprocess, sys, time

from study import BIN, ENV, MHETA, QUICK, stamp

OUT = sys.argv[1]
REPS = 1 if QUICK else 3
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
        self.p = subprocess.Popen([MHETA, "load", "--quiet", "--proc", "hog", "--cores", "0",
                                   "--timeline", os.path.join(W, name + ".json"), "--ready-file", ready]
                                  + list(extra))
        while not os.path.exists(ready):
            if self.p.poll() is not None:
                sys.exit("parallel-study: mheta load did not start")
            time.sleep(0.01)

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
        subprocess.run([MHETA, "run", "--trace-dir", tr, "--"] + cmd(app, n, 12), env=ENV, check=True,
                       capture_output=True)
        block = ",".join(map(str, dist_for(n, 1.0)))
        base = ["predict", "--profile", prof, "--trace", tr, "--dist", block]
        ded_pred = mheta_json(base)["per_iteration_s"]
        pred = mheta_json(base + ["--load", lf])["per_iteration_s"] / ded_pred
        # Aggregate slowdown, measured interleaved.
        ratios, prev = [], run(cmd(app, n, iters))["elapsed_s"]
        for _ in range(REPS):
            ld = Load(f"agg-{app}")
            loaded = run(cmd(app, n, iters))["elapsed_s"]
            ld.stop()
            nxt = run(cmd(app, n, iters))["elapsed_s"]
            ratios.append(loaded / ((prev + nxt) / 2))
            prev = nxt
        meas = statistics.median(ratios)
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
            "aggregate": {"predicted": pred, "measured": meas, "measured_runs": ratios,
                          "err_pct": 100 * abs(pred - meas) / meas},
            "spectrum": spec_rows, "best": best, "auto": autos,
            "auto_iter_median_s": auto_med,
            "auto_fraction_of_best": best["iter_median_s"] / auto_med if auto_med else None,
        })
    res = {
        **stamp("scripts/parallel-study.sh " + OUT),
        "emulation": "two nodes of one core each: ranks 0,1 pinned to core 0 and 2,3 to core 1 (rankfile), each "
                     "rank a cgroup cpu quota of half a core (--cpu-emulation share), --wait sleep; a `mheta load` "
                     "hog pinned to core 0 (real contention; the kernel time-shares the core).",
        "apps": results, "wall_s": time.time() - t0,
    }
    json.dump(res, open(os.path.join(OUT, "parallel.json"), "w"), indent=1)
    for r in results:
        g = r["aggregate"]
        print(f"{r['app']}: aggregate slowdown predicted {g['predicted']:.3f}, measured {g['measured']:.3f} "
              f"(runs {', '.join(f'{x:.3f}' for x in g['measured_runs'])}), error {g['err_pct']:.1f}%")
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
