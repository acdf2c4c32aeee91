"""What every study script shares: where the binaries are, the
environment mpirun needs as root, and the stamp (command, date, machine)
that every result file carries."""
import datetime
import os
import platform
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BIN = os.path.join(ROOT, "target", "release")
MHETA = os.path.join(BIN, "mheta")
ENV = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
QUICK = os.environ.get("STUDY_QUICK") == "1"


def stamp(command):
    """The command that regenerates a result, the date (UTC) and the machine."""
    return {
        "command": command,
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "machine": f"{platform.node()}: {os.cpu_count()} cores, {platform.platform()}",
    }


def on_off_windows(report, timeline, guard=0.06):
    """The iterations of a kernel's report (MHETA_DEBUG_TIMES) sorted by the
    level of a switching `mheta load` (its timeline): the indices run with
    the load on, and with it off in odd and even off-windows. Each
    iteration is placed by its midpoint; the first, and those within
    `guard` seconds of a switch, are left out."""
    t0 = timeline["start_unix_s"]
    sw = [(x["t_s"] + t0, x["level"]) for x in timeline["bursty"]["switches"]]
    t = report["loop_start_unix_s"]
    on, off = [], {0: [], 1: []}
    for i, d in enumerate(report["iter_times_s"]):
        mid, t = t + d / 2, t + d
        if i == 0:
            continue
        k = max((j for j, (ts, _) in enumerate(sw) if ts <= mid), default=None)
        if k is None or min(abs(mid - ts) for ts, _ in sw) < guard:
            continue
        if sw[k][1] > 0:
            on.append(i)
        else:
            off[k // 2 % 2].append(i)
    return on, off


def boot_ci(v, reps=2000, seed=7):
    """Bootstrap 95% CI of the median of `v`."""
    import random
    import statistics
    if len(v) < 2:
        return [v[0], v[0]] if v else [None, None]
    rng = random.Random(seed)
    meds = sorted(statistics.median(rng.choices(v, k=len(v))) for _ in range(reps))
    return [meds[int(0.025 * reps)], meds[int(0.975 * reps) - 1]]


# A run the host disturbed: some rank waited for a core more than RUNQ of
# the run, or took more than PER_UNIT more CPU per unit of work than the
# least of the ranks (for runs whose ranks compute at one power; the
# accuracy study's thresholds).
RUNQ, PER_UNIT = 0.05, 0.15


def disturbance(report):
    """Per rank of a kernel's report: (run-queue delay / the run, CPU per
    unit / the ranks' least)."""
    rs = report["ranks"]
    least = min(r["cpu_ns_per_unit"] for r in rs)
    return [(r["sched"]["runq_wait_s"] / report["elapsed_s"] if r.get("sched") else 0.0,
             r["cpu_ns_per_unit"] / least) for r in rs]


def record_clean(directory, command, attempts=6, pause_s=3.0):
    """`mheta run --trace-dir` of a kernel's `command` (in DIRECTORY-0,
    -1, ...), `pause_s` apart, until two undisturbed recordings agree on
    the host's speed, or three are undisturbed, or `attempts` were made.
    Disturbed: some rank waited for a core over RUNQ of the run or took
    over PER_UNIT more CPU a unit of work than the least of the ranks
    (this VM's vCPUs slow down by themselves for seconds at a time: one
    took 1.6-1.8 times the other's CPU a unit for four recordings
    running, with no run-queue delay). The host's speed: the ranks' mean
    CPU a unit of work; two recordings agree within PER_UNIT (both ranks
    can slow alike: a recording made 1.6 times slower than the runs
    around it read no rank apart from the other). Returns the kept
    recording's directory (of the undisturbed ones the one of median
    speed, else the least disturbed) and what each attempt saw (`worst`
    > 1: past a threshold; `cpu_ns_per_unit`: each rank's CPU time a
    unit of work; `speed_ns`: their mean)."""
    import json
    import subprocess
    import time
    seen = []
    for a in range(attempts):
        if a:
            time.sleep(pause_s)
        tr = f"{directory}-{a}"
        out = subprocess.run([MHETA, "run", "--trace-dir", tr, "--"] + command, env=ENV, check=True,
                             capture_output=True, text=True)
        rep = json.loads(out.stdout)
        d = disturbance(rep)
        worst = max(max(q / RUNQ, (u - 1.0) / PER_UNIT) for q, u in d)
        per_unit = [r["cpu_ns_per_unit"] for r in rep["ranks"]]
        seen.append({"dir": tr, "runq_share": [q for q, _ in d], "per_unit_vs_least": [u for _, u in d],
                     "cpu_ns_per_unit": per_unit, "speed_ns": sum(per_unit) / len(per_unit),
                     "disturbed": worst > 1.0, "worst": worst})
        clean = sorted((s for s in seen if not s["disturbed"]), key=lambda s: s["speed_ns"])
        if len(clean) >= 3 or (len(clean) == 2 and clean[1]["speed_ns"] <= clean[0]["speed_ns"] * (1 + PER_UNIT)):
            break
    clean = sorted((s for s in seen if not s["disturbed"]), key=lambda s: s["speed_ns"])
    if clean:
        return clean[(len(clean) - 1) // 2]["dir"], seen
    return min(seen, key=lambda s: s["worst"])["dir"], seen


def start_load(args, ready, who, timeout_s=10.0):
    """`mheta load ARGS --ready-file READY`, returned once its generators
    run (READY exists); exits naming WHO and the command when the load
    ends first or is not ready within `timeout_s`."""
    import subprocess
    import time
    cmd = [MHETA, "load"] + list(args) + ["--ready-file", ready]
    p = subprocess.Popen(cmd)
    t0 = time.time()
    while not os.path.exists(ready):
        if p.poll() is not None or time.time() - t0 > timeout_s:
            if p.poll() is None:
                p.terminate()
            sys.exit(f"{who}: mheta load did not start: {' '.join(cmd)}")
        time.sleep(0.01)
    return p
