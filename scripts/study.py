"""What every study script shares: where the binaries are, the
environment mpirun needs as root, and the stamp (command, date, machine)
that every result file carries."""
import datetime
import os
import platform

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
