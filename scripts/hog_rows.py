#!/usr/bin/env python3
"""The model's price of rows on a rank that shares its core with a hog,
against runs: a 2-rank jacobi, rank 0's core shared all through with one
`mheta load` hog, at several splits of the rows, the ranks waiting by
polling and by sleeping. Driven by scripts/hog-rows.sh.

1. A cluster profile (`mheta bench --np 2 --quick --no-disk`) and, per
   wait mode, a trace on Block before the hog starts (kept only when no
   rank waited for a core over 5% of its run or took 15% more CPU per
   unit than the other; else recorded again 3 s later, up to 5 times).
2. The hog starts on core 0; `mheta sense` reads both cores (4 s).
3. Per wait mode and split: `mheta predict --load SENSE` (the replay turn
   by turn, model/src/model/turns.rs) and the split run STUDY_ROUNDS
   times (default 5), splits interleaved; the median per iteration, the
   model's difference from it, and F: the time-shared rank's CPU a unit
   of work over the other rank's (the replay takes it as 1).
4. S: the host's speed in the runs against the trace's recording (rank
   1's CPU a unit of work, alone on its core, in the run over the kept
   recording's), and the model's difference with its prediction scaled
   by S: what is left once the host's drift between the recording and
   the runs is taken out (the accuracy study's "at each run's CPU
   speed"; a diagnostic, from the runs' own measurement).
5. Rank 0's main thread per iteration from its schedstat over the loop:
   CPU time, run-queue delay, and the rest (asleep), medians.
"""
import json, os, statistics, subprocess, sys, time

from study import BIN, ENV, MHETA, record_clean, stamp, start_load

OUT = sys.argv[1]
N, ITERS = 1024, 300
ROUNDS = int(os.environ.get("STUDY_ROUNDS", "5"))
SPLITS = ["400,624", "464,560", "512,512", "560,464"]
WAITS = ["poll", "sleep"]
W = os.path.join(OUT, "work")
os.makedirs(W, exist_ok=True)


def jacobi(dist, wait, iters=ITERS):
    return ["mpirun", "-np", "2", "--bind-to", "core", os.path.join(BIN, "jacobi"), "--n", str(N),
            "--iters", str(iters), "--dist", dist, "--cpu-emulation", "spin", "--wait", wait]


def main():
    t0 = time.time()
    prof = os.path.join(W, "profile.json")
    subprocess.run([MHETA, "bench", "--np", "2", "--quick", "--no-disk", "-o", prof], env=ENV, check=True,
                   capture_output=True)
    traces = {w: record_clean(os.path.join(W, f"trace-{w}"), jacobi("512,512", w, 12)) for w in WAITS}
    ready = os.path.join(W, "load.ready")
    ld = start_load(["--quiet", "--proc", "hog", "--cores", "0"], ready, "hog-rows")
    try:
        sf = os.path.join(W, "sense.json")
        subprocess.run([MHETA, "sense", "--cores", "0,1", "--duration", "4", "--interval", "0.1",
                        "--ranks", "0:0;1:1", "-o", sf], env=ENV, check=True, capture_output=True)
        pred, runs = {}, {(w, d): [] for w in WAITS for d in SPLITS}
        f = {k: [] for k in runs}
        # The host's speed at each run against the trace's recording: rank
        # 1's CPU a unit of work (alone on its core) in the run over the
        # same in the kept recording.
        speed = {k: [] for k in runs}
        # Rank 0's main thread per iteration (schedstat over the loop): CPU,
        # waiting for the core, and neither (asleep), ms.
        sched = {k: [] for k in runs}
        traced = {w: next(a for a in t[1] if a["dir"] == t[0])["cpu_ns_per_unit"] for w, t in traces.items()}
        for w in WAITS:
            for d in SPLITS:
                out = subprocess.run([MHETA, "predict", "--profile", prof, "--trace", traces[w][0], "--load", sf,
                                      "--dist", d, "--iters", str(ITERS), "--json"], env=ENV, check=True,
                                     capture_output=True, text=True)
                pred[(w, d)] = json.loads(out.stdout)["per_iteration_s"]
        for _ in range(ROUNDS):
            for w in WAITS:
                for d in SPLITS:
                    out = subprocess.run(jacobi(d, w), env=ENV, check=True, capture_output=True, text=True)
                    rep = json.loads(out.stdout)
                    runs[(w, d)].append(rep["elapsed_s"] / ITERS)
                    # F: the time-shared rank's CPU a unit of work over the
                    # other's, which runs the same code alone on its core.
                    f[(w, d)].append(rep["ranks"][0]["cpu_ns_per_unit"] / rep["ranks"][1]["cpu_ns_per_unit"])
                    speed[(w, d)].append(rep["ranks"][1]["cpu_ns_per_unit"] / traced[w][1])
                    st, it_s = rep["ranks"][0]["sched"], rep["elapsed_s"] / ITERS
                    if st:
                        cpu, q = st["cpu_s"] / ITERS, st["runq_wait_s"] / ITERS
                        sched[(w, d)].append((cpu * 1e3, q * 1e3, max(it_s - cpu - q, 0.0) * 1e3))
    finally:
        ld.terminate()
        ld.wait(timeout=10)
    rows = []
    for w in WAITS:
        for d in SPLITS:
            v = runs[(w, d)]
            med = statistics.median(v)
            rows.append({"wait": w, "dist": d, "predicted_s": pred[(w, d)], "median_s": med,
                         "min_s": min(v), "max_s": max(v), "runs_s": v,
                         "diff_pct": 100.0 * (pred[(w, d)] / med - 1.0), "f": statistics.median(f[(w, d)]),
                         "f_runs": f[(w, d)], "speed": statistics.median(speed[(w, d)]),
                         "speed_runs": speed[(w, d)],
                         "rank0_ms": [statistics.median(x) for x in zip(*sched[(w, d)])] if sched[(w, d)] else None,
                         "diff_at_speed_pct": 100.0 * (pred[(w, d)] * statistics.median(speed[(w, d)]) / med - 1.0)})
    res = {**stamp("scripts/hog-rows.sh " + OUT), "rows": rows, "rounds": ROUNDS,
           "traces": {w: t[1] for w, t in traces.items()}, "wall_s": time.time() - t0,
           "emulation": f"none: real contention. jacobi --n {N}, {ITERS} iterations, ranks bound to cores 0 "
                        "and 1 (mpirun --bind-to core), a `mheta load` hog pinned to core 0 all through; "
                        "--cpu-emulation spin, uniform"}
    json.dump(res, open(os.path.join(OUT, "hog-rows.json"), "w"), indent=1)
    print(f"per iteration, ms: the model (mheta predict --load, turn by turn) against the median of {ROUNDS} "
          "interleaved runs (min-max); F: rank 0's CPU a unit of work over rank 1's (median; 1: sharing the "
          "core costs its work nothing); S: the host's speed, rank 1's CPU a unit of work (alone on its core) "
          "in the runs over the trace's (median), and the model's diff with its prediction scaled by S (a "
          "diagnostic: it uses the runs' own measurement)")
    print(f"{'wait':<6} {'dist':<9} {'model':>7} {'median':>7} {'min-max':>13} {'diff %':>7} {'F':>6} {'S':>6} "
          f"{'diff at S %':>11}")
    for r in rows:
        print(f"{r['wait']:<6} {r['dist']:<9} {r['predicted_s']*1e3:7.3f} {r['median_s']*1e3:7.3f} "
              f"{r['min_s']*1e3:6.3f}-{r['max_s']*1e3:6.3f} {r['diff_pct']:+7.1f} {r['f']:6.3f} {r['speed']:6.3f} "
              f"{r['diff_at_speed_pct']:+11.1f}")
    print("rank 0 (the time-shared rank) per iteration, ms, medians: CPU, waiting for the core (run queue), "
          "neither (asleep), from its main thread's schedstat over the loop")
    for r in rows:
        if r["rank0_ms"]:
            print(f"{r['wait']:<6} {r['dist']:<9} cpu {r['rank0_ms'][0]:6.3f}  run queue {r['rank0_ms'][1]:6.3f}  "
                  f"asleep {r['rank0_ms'][2]:6.3f}")
    kept = {w: next(a for a in t[1] if a["dir"] == t[0]) for w, t in traces.items()}
    for w in WAITS:
        sub = [r for r in rows if r["wait"] == w]
        best_m = min(sub, key=lambda r: r["predicted_s"])
        best_r = min(sub, key=lambda r: r["median_s"])
        speeds = ", ".join(f"{t['speed_ns']:.2f}" for t in traces[w][1])
        print(f"--wait {w}: the model's best split {best_m['dist']}, the runs' {best_r['dist']} "
              f"(the model's best measured {100.0 * (best_m['median_s'] / best_r['median_s'] - 1.0):.1f}% slower); "
              f"trace: {len(traces[w][1])} recording(s) (the ranks' mean CPU a unit: "
              f"{speeds} ns), the kept one "
              f"{kept[w]['worst']:.2f} of the disturbance thresholds"
              + (" (DISTURBED: the model's column rests on it)" if kept[w]["disturbed"] else ""))
    print(f"emulation: {res['emulation']}")
    print(f"wrote {os.path.join(OUT, 'hog-rows.json')} in {res['wall_s']:.0f} s")


main()
