#!/usr/bin/env python3
"""Re-predict a stored accuracy study with another `mheta` binary.

Usage: scripts/repredict.py OUT_DIR [MHETA]

OUT_DIR is what `scripts/accuracy-study.sh OUT_DIR` left: one experiment
report per cell (`<app>-<cluster>.json`), its instrumented trace
(`w-<app>-<cluster>/trace`) and the profile (`pNP.json`, or
`pNP-CLUSTER.json` for a cluster with hosts). For every point of every
cell this runs `MHETA predict` (default: target/release/mheta) on the
cell's own trace and profile, and compares it with the point's stored
actual time (the median of its real runs), as the experiment does:
diff = |p - a| / min(p, a); gap: how much slower the point predicted
fastest ran than the fastest point (the stored gap is the experiment's,
for its search's best). The real runs are not repeated, so a model
change can be judged on the same measurements in seconds.

A cell whose study measured a row-cost curve (`w-<app>-<cluster>/row-curve.json`,
`mheta experiment --row-curve`) is predicted with it (`--row-curve`); with
REPREDICT_ROW_CURVE=0, without it.

The prediction is the experiment's: each recorded iteration replayed,
their median (`iterations_median_s`; the median iteration's replay where
the trace holds fewer than 3); with REPREDICT_ONE_ITERATION=1, the
median iteration's replay alone (`per_iteration_s`).

With REPREDICT_WITHOUT=FIELD[,FIELD...], every pair of the profile is
stripped of those fields first (a copy, in a temporary directory): the
model as it prices a profile that did not measure them, on the same runs
(for example `send_by_size`, the sender's time by size).

Prints one line per cell (mean and max diff, and the stored ones), the sum
of the cells' means, and the points split into out of core (some rank kept
an array out of core: the row's `out_of_core`; in a report older than that
field, an iteration of 250 ms or more) and in core. Exits 1 when a
prediction fails.
"""
import glob
import json
import os
import statistics
import subprocess
import sys
import tempfile


def stripped(profile, fields, tmp):
    """`profile`, or a copy in `tmp` whose pairs (listed and unlisted)
    lack `fields`."""
    if not fields:
        return profile
    copy = os.path.join(tmp, os.path.basename(profile))
    if not os.path.isfile(copy):
        prof = json.load(open(profile))
        pairs = list(prof.get("pairs") or [])
        unlisted = prof.get("unlisted") or {}
        pairs += [c for c in unlisted.values() if isinstance(c, dict)]
        for c in pairs:
            for f in fields:
                c.pop(f, None)
        json.dump(prof, open(copy, "w"))
    return copy


def main():
    if len(sys.argv) not in (2, 3) or sys.argv[1] in ("-h", "--help"):
        print(__doc__.strip(), file=sys.stderr)
        return 2
    out = sys.argv[1]
    mheta = sys.argv[2] if len(sys.argv) == 3 else "target/release/mheta"
    one_iteration = os.environ.get("REPREDICT_ONE_ITERATION", "0") != "0"
    without = [f for f in os.environ.get("REPREDICT_WITHOUT", "").split(",") if f]
    tmp = tempfile.mkdtemp(prefix="repredict-")
    profiles = glob.glob(os.path.join(out, "p*.json"))
    if not profiles:
        print(f"repredict: {out}: no profile p*.json (is it a study directory?)", file=sys.stderr)
        return 2
    cells = []
    for path in sorted(glob.glob(os.path.join(out, "*-*.json"))):
        tag = os.path.basename(path)[: -len(".json")]
        try:
            report = json.load(open(path))
        except (OSError, ValueError):
            continue
        if isinstance(report, dict) and isinstance(report.get("rows"), list):
            cells.append((tag, report))
    if not cells:
        print(f"repredict: {out}: no experiment reports", file=sys.stderr)
        return 2
    failed = 0
    in_core, out_of_core, sums = [], [], [0.0, 0.0]
    print(f"{'cell':<18} {'mean':>7} {'max':>7} {'gap':>7}   stored mean/max/gap")
    for tag, report in cells:
        trace = os.path.join(out, f"w-{tag}", "trace")
        curve = os.path.join(out, f"w-{tag}", "row-curve.json")
        curve_args = (["--row-curve", curve]
                      if os.path.isfile(curve) and os.environ.get("REPREDICT_ROW_CURVE", "1") != "0"
                      else [])
        # A cluster with hosts has its own profile (pNP-CLUSTER.json).
        np_ = len(report["rows"][0]["dist"]) if report["rows"] else 4
        # (the report names its cluster; a name may hold '-', as nethy1-2)
        cluster = report.get("cluster") or tag.split("-", 1)[1]
        own = os.path.join(out, f"p{np_}-{cluster}.json")
        profile = own if os.path.isfile(own) else os.path.join(out, f"p{np_}.json")
        profile = stripped(profile, without, tmp)
        diffs, pairs = [], []
        for row in report["rows"]:
            dist = ",".join(str(r) for r in row["dist"])
            run = subprocess.run(
                [mheta, "predict", "--profile", profile, "--trace", trace, "--dist", dist, "--json"]
                + curve_args,
                capture_output=True,
                text=True,
            )
            try:
                j = json.loads(run.stdout)
                p = (None if one_iteration else j.get("iterations_median_s")) or j["per_iteration_s"]
            except (ValueError, KeyError):
                print(f"repredict: {tag} {dist}: {run.stderr.strip()[:300]}", file=sys.stderr)
                failed += 1
                continue
            a = row["actual_s"]
            pairs.append((p, a))
            d = 100.0 * abs(p - a) / min(p, a)
            diffs.append(d)
            ooc = row.get("out_of_core")
            (out_of_core if (a >= 0.25 if ooc is None else ooc) else in_core).append(d)
        if not diffs:
            continue
        mean = statistics.mean(diffs)
        sums[0] += mean
        sums[1] += report.get("mean_diff_pct", float("nan"))
        # The point predicted fastest against the fastest measured.
        gap = 100.0 * (min(pairs)[1] / min(a for _, a in pairs) - 1.0)
        stored_gap = report.get("predicted_best_gap_pct", float("nan"))
        print(
            f"{tag:<18} {mean:7.1f} {max(diffs):7.1f} {gap:7.1f}   "
            f"{report.get('mean_diff_pct', float('nan')):.1f}/{report.get('max_diff_pct', float('nan')):.1f}"
            f"/{stored_gap:.1f}"
        )
    print(f"sum of the cells' means: {sums[0]:.1f} (stored {sums[1]:.1f}) over {len(cells)} cells")
    for name, ds in (("out-of-core", out_of_core), ("in-core", in_core)):
        if ds:
            print(
                f"{name} points {len(ds)}: median {statistics.median(ds):.1f}%, "
                f"mean {statistics.mean(ds):.1f}%, within 2%: {sum(d <= 2 for d in ds)}, "
                f"within 8%: {sum(d <= 8 for d in ds)}"
            )
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
