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


def record_clean(directory, command, attempts=5, pause_s=3.0):
    """`mheta run --trace-dir` of a kernel's `command`, recorded again (in
    DIRECTORY-1, -2, ...) `pause_s` later while the host disturbed it, at
    most `attempts` times (this VM's vCPUs slow down by themselves for
    seconds at a time: one took 1.6-1.8 times the other's CPU per unit for
    four recordings running, with no run-queue delay); returns the least disturbed recording's directory and what each
    attempt saw (`worst` > 1: past a threshold)."""
    import json
    import subprocess
    import time
    seen = []
    for a in range(attempts):
        tr = f"{directory}-{a}"
        out = subprocess.run([MHETA, "run", "--trace-dir", tr, "--"] + command, env=ENV, check=True,
                             capture_output=True, text=True)
        d = disturbance(json.loads(out.stdout))
        worst = max(max(q / RUNQ, (u - 1.0) / PER_UNIT) for q, u in d)
        seen.append({"dir": tr, "runq_share": [q for q, _ in d], "per_unit_vs_least": [u for _, u in d],
                     "disturbed": worst > 1.0, "worst": worst})
        if worst <= 1.0:
            break
        time.sleep(pause_s)
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
