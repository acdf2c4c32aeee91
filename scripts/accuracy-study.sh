#!/usr/bin/env bash
# The accuracy study (the MHETA paper's section 5 on our own runs): every kernel on DC, IO, HY1 and HY2, and jacobi --prefetch on
# the three clusters with a disk, then one table.
#
#   scripts/accuracy-study.sh [OUT_DIR] [REPEAT]
#
# Every cell is one `mheta experiment --app A --cluster C --np NP --iters I
# --repeat REPEAT --profile OUT_DIR/pNP.json --json -- SIZES
# --cpu-emulation paced` (REPEAT default 5, NP default 4), all against one
# profile measured first (`mheta bench --np NP --quick`; kept if
# OUT_DIR/pNP.json exists). Emulation: NP ranks on this machine's cores, paced CPU (pinned,
# work under SCHED_IDLE), paced disk, memory cgroup, sleep waits; each
# cell's JSON records it under "emulation".
# Sizes: jacobi --n 2048; sor and lanczos --n 2560; cg --class A; mg --n
# 2047 on the clusters without a memory limit (DC, uniform) and --n 1023
# elsewhere (at 2047 one row plus the in-core data does not fit IO's
# 8 MB); wavefront --n 2560 --tiles 8 on DC and uniform and --n 2048
# --tiles 8 --iters 3 elsewhere (an out-of-core iteration at 2560 takes
# ~10 s). jacobi --prefetch runs only on the clusters with a disk (not DC,
# not uniform). About 45 minutes at REPEAT 2 on a 2-core VM, most of it
# in the real runs, whose number grows with REPEAT.
#
# STUDY_NP (default 4) sets the rank count (the built-in clusters DC, IO,
# HY1 and HY2 have 2-, 4- and 8-rank forms, and uniform, every rank at
# power 1, any count; the profile is then OUT_DIR/pNP.json). Every cell
# also draws OUT_DIR/TAG-C.svg (--plot). The profiles carry the reuse
# curve (`mheta bench`'s default: the model's reuse term,
# model/src/reuse.rs; each cell's JSON then gives the paper's model
# beside, `reuse`); STUDY_REUSE=0 measures them with `--no-reuse`.
#
# STUDY_CPU=real (the default; `paced` is the same) runs real compute with
# no clock: `--cpu-emulation paced`, where each piece of work runs for
# real and a rank of CPU power p < 1 then sleeps until the piece has
# lasted its CPU time / p (a rank at power 1 is not slowed at all). Its
# compute time is this host's, with the host's speed changes: the flags
# below tell the runs the host disturbed.
# Under real compute every run lasts at least STUDY_RUN_SECONDS (default
# 1.5; `mheta experiment --run-seconds`), and the instrumented run records
# its iterations over 0.8 of that: this host's cores change speed over
# hundreds of milliseconds (scripts/core-windows.sh), so a few short
# iterations measure the moment, not the rank. STUDY_RUN_SECONDS=0 gives
# the runs --iters iterations and the model 3 recorded ones. Under real
# compute each round also runs its own instrumented run before its real
# runs (`mheta experiment --learn-each-round`): a point's prediction is
# the median of the rounds' models, and the table gives beside it the mean
# diff of one model alone. STUDY_LEARN_EACH_ROUND=0 learns once.
# STUDY_ROW_CURVE=K (default 0: off): every cell first measures each
# rank's cost a row at other row counts in K interleaved rounds and
# predicts with that curve (`mheta experiment --row-curve K`); a last
# table gives, per cell, the curve's figures beside the paper's one cost
# a row on the same models and runs. STUDY_ROW_CURVE_SKIP ("APP-CLUSTER
# ...") runs those cells without the curve (one whose calibration takes
# too long, as cg's out of core does).
# Every cell also prices each run at its own CPU time a row (each rank's
# median over the run's iterations, over the recorded window's; `mheta
# experiment`'s "at each run's CPU speed"), and a table gives that diff
# beside the cell's: what is left with the host's drift in the cost of a
# row taken out (a diagnostic; it uses the run's own measurement).
# STUDY_CPU=clock runs every cell with `--cpu-emulation clock` instead:
# each app and size is calibrated, before its first cell, by one uniform
# in-core run
# (`--cpu-emulation spin --iters 2`, its report kept as
# OUT_DIR/cal-APP-SIZE.json) and then runs with `--cpu-ns-per-unit` that
# report (each call site's largest CPU time per unit, times the headroom),
# so the CPU part of every run is timed by the clock, not by this host's
# speed. The headroom (`--cpu-headroom`) is STUDY_HEADROOM, by default 2.5
# on one host and 6 on a cluster with hosts: there the links' work (TCP,
# the latency relay) takes CPU from the ranks beside it, and at 2.5 cg's
# pieces outlast their time (4 ranks on net4, 2026-11-27: h3's rank
# overran by 136-208 ms a run and the iteration took 217-261 ms by run;
# at 6 it overran by at most 17 ms and took 270-275 ms).
# STUDY_CLUSTERS (default "DC IO HY1 HY2") picks clusters, and STUDY_APPS
# (default "jacobi jacobi-pf sor lanczos cg mg wavefront") the cells' apps
# (jacobi-pf: jacobi --prefetch); the table shows only those.
# STUDY_SKIP ("APP-CLUSTER ...", e.g. "cg-netcpu4") leaves those cells
# out ("-" in the table).
# A cluster with hosts (net4, netcpu4, a spec with [[host]] tables) gets a
# profile of its own, measured across its emulated hosts (`mheta bench
# --cluster C --quick`, kept as OUT_DIR/p4-C.json), and its hosts stay up
# for the whole study (taken down at the end if they were down).
#
# Prints, per cell: mean diff / max diff / the predicted best's gap to the
# actual best in actual time, all %, and in parentheses the noise floor:
# the median over the cell's points of the spread between the REPEAT runs
# of one point ((max - min) / median, %).
# A second table, one line per cell, treats the noise as a measurement:
# the mean diff over all runs, the mean diff without the runs the host
# disturbed, the bootstrap 95% interval of the mean diff (every point's
# runs resampled together), flagged runs / runs, the mean diff of the
# busiest rank's time in stages alone (busy), the noise floor, and a
# verdict per goal. A run is flagged (kept, and counted) when some rank's
# main thread waited for a core more than 5% of the main loop, or took more
# than 15% more CPU time per unit of work than at that point's median
# (`mheta experiment --flag-runq-pct 5 --flag-cpu-pct 15`; STUDY_FLAGS
# passes other flags, e.g. "--flag-runq-pct 3"). The goals, %:
# STUDY_GOAL_MEAN (default 3) for the mean diff, STUDY_GOAL_MAX (8) for the
# max, STUDY_GOAL_GAP (3) for the best's gap, STUDY_GOAL_BUSY (2) for the
# mean busy diff. The verdicts judge the figures over all runs: "met" when
# within the goal; "within noise" when not, but the cell's noise floor is
# above the goal and the figure is within the noise floor + 1 point;
# else "missed".
# A last part splits every cell's points into out-of-core (some rank kept
# an array out of core in a real run: the row's "out_of_core") and
# in-core, each with the diff of the busiest rank's time in stages alone
# (the rows' busy_diff_pct; the rest of a diff is communication and
# waiting) and the median spread of their runs and of their models'
# predictions (predicted_spread_pct: the models learned each round from
# its own instrumented run disagree there by the host's drift between
# windows, which a rank's computation shows and a paced disk does not).
# scripts/repredict.py OUT_DIR re-predicts the stored points
# with another binary.
# The JSON of every cell stays in OUT_DIR (default: a fresh temporary
# directory).
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
mheta=${MHETA:-${CARGO_TARGET_DIR:-$here/target}/release/mheta}
# The launcher of the MPI mheta was built for (scripts/setup.sh sets
# MHETA_MPIRUN; mheta bench and experiment read it too).
launcher=${MHETA_MPIRUN:-mpirun}
[[ -x $mheta ]] || { echo "accuracy-study: $mheta: not an executable (cargo build --release)" >&2; exit 2; }
all_apps="jacobi jacobi-pf sor lanczos cg mg wavefront"
for a in ${STUDY_APPS:-}; do
    [[ " $all_apps " == *" $a "* ]] || { echo "accuracy-study: STUDY_APPS: unknown app $a (one of: $all_apps)" >&2; exit 2; }
done
out=${1:-$(mktemp -d)}
repeat=${2:-5}
np=${STUDY_NP:-4}
mkdir -p "$out"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# The profile of cluster C, into the variable `profile`: the shared one,
# or for a cluster with hosts its own, measured across them.
labs_made=()
trap 'for l in "${labs_made[@]}"; do "$mheta" hosts down "$l" >/dev/null || true; done' EXIT
reuse=()
[[ ${STUDY_REUSE:-1} == 0 ]] && reuse=(--no-reuse)
profile_for() {
    local c=$1 rc=0
    "$mheta" hosts status "$c" >/dev/null 2>&1 || rc=$?
    if [[ $rc == 1 || $rc == 2 ]]; then
        headroom=${STUDY_HEADROOM:-2.5}
        profile=$out/p$np.json
        if [[ ! -s $profile ]]; then
            echo "accuracy-study: measuring the profile (mheta bench --np $np --quick ${reuse[*]})" >&2
            "$mheta" bench --np "$np" --quick "${reuse[@]}" --output "$profile" >"$out/bench.log" 2>&1 ||
                { cat "$out/bench.log" >&2; echo "accuracy-study: the profile failed" >&2; exit 1; }
        fi
        return
    fi
    if [[ $rc != 0 ]]; then
        "$mheta" hosts up "$c" >&2
        labs_made+=("$c")
    fi
    headroom=${STUDY_HEADROOM:-6}
    profile=$out/p$np-$c.json
    if [[ ! -s $profile ]]; then
        echo "accuracy-study: measuring the profile across the hosts of $c (mheta bench --cluster $c --quick ${reuse[*]})" >&2
        "$mheta" bench --cluster "$c" --quick "${reuse[@]}" --output "$profile" >"$out/bench-$c.log" 2>&1 ||
            { cat "$out/bench-$c.log" >&2; echo "accuracy-study: the profile of $c failed" >&2; exit 1; }
    fi
}
cpu=${STUDY_CPU:-real}
case $cpu in real | paced) cpu=real ;; clock) ;; *) echo "accuracy-study: STUDY_CPU=$cpu: real (or paced), or clock" >&2; exit 2 ;; esac
read -r -a flags <<<"${STUDY_FLAGS:-}"
# Real compute: every run lasts STUDY_RUN_SECONDS (default 1.5) and the
# instrumented run records 0.8 of that (`mheta experiment --run-seconds`).
run_seconds=${STUDY_RUN_SECONDS:-$([[ $cpu == real ]] && echo 1.5 || echo 0)}
[[ $run_seconds =~ ^[0-9]+([.][0-9]+)?$ ]] ||
    { echo "accuracy-study: STUDY_RUN_SECONDS=$run_seconds: a number of seconds is needed" >&2; exit 2; }
# Real compute: each round learns its own model (STUDY_LEARN_EACH_ROUND=0
# keeps the first round's alone).
learn=()
[[ $cpu == real && ${STUDY_LEARN_EACH_ROUND:-1} == 1 ]] && learn=(--learn-each-round)
[[ ${STUDY_ROW_CURVE:-0} =~ ^[0-9]+$ ]] ||
    { echo "accuracy-study: STUDY_ROW_CURVE=$STUDY_ROW_CURVE: a number of rounds is needed" >&2; exit 2; }
for g in STUDY_GOAL_MEAN STUDY_GOAL_MAX STUDY_GOAL_GAP STUDY_GOAL_BUSY; do
    [[ -z ${!g:-} || ${!g} =~ ^[0-9]+([.][0-9]+)?$ ]] ||
        { echo "accuracy-study: $g=${!g}: a number (percent) is needed" >&2; exit 2; }
done
# The CPU emulation's arguments for APP with SIZES, into the array `cpu_flags`.
# Clock: the first cell of an app and size calibrates it (kept in OUT_DIR).
cpu_flags_for() {
    local app=$1
    shift
    if [[ $cpu == real ]]; then
        cpu_flags=(--cpu-emulation paced)
        return
    fi
    local cal
    cal="$out/cal-$app-$(echo "$*" | tr -c 'a-zA-Z0-9\n' _).json"
    if [[ ! -s $cal ]]; then
        echo "accuracy-study: calibrating $app $* (uniform, spin, 2 iterations)" >&2
        local over=(--oversubscribe)
        [[ $(basename "$launcher") == mpiexec.* ]] && over=()
        "$launcher" -np "$np" "${over[@]}" "$(dirname "$mheta")/$app" "$@" --iters 2 \
            --cpu-emulation spin >"$cal.tmp" 2>"$cal.err" ||
            { cat "$cal.err" >&2; echo "accuracy-study: calibrating $app $* failed" >&2; exit 1; }
        mv "$cal.tmp" "$cal"
    fi
    cpu_flags=(--cpu-emulation clock --cpu-ns-per-unit "$cal" --cpu-headroom "$headroom")
}
# cell TAG APP CLUSTER ITERS [EXPERIMENT ARGS] -- SIZES
cell() {
    local tag=$1 app=$2 c=$3 it=$4
    shift 4
    [[ " ${STUDY_APPS:-$all_apps} " == *" $tag "* ]] || return 0
    [[ " ${STUDY_SKIP:-} " != *" $tag-$c "* ]] || return 0
    local pre=()
    while [[ $1 != -- ]]; do
        pre+=("$1")
        shift
    done
    shift
    profile_for "$c"
    cpu_flags_for "$app" "$@"
    local curve=${STUDY_ROW_CURVE:-0}
    [[ " ${STUDY_ROW_CURVE_SKIP:-} " != *" $tag-$c "* ]] || curve=0
    local s=$SECONDS rc=0
    rm -rf "$out/w-$tag-$c"
    "$mheta" experiment --app "$app" --cluster "$c" --np "$np" --iters "$it" --repeat "$repeat" \
        --profile "$profile" --dir "$out/w-$tag-$c" --plot "$out/$tag-$c.svg" --json --run-seconds "$run_seconds" "${learn[@]}" --row-curve "$curve" "${flags[@]}" "${pre[@]}" \
        -- "$@" "${cpu_flags[@]}" \
        >"$out/$tag-$c.json" 2>"$out/$tag-$c.err" || rc=$?
    echo "accuracy-study: $tag $c: exit $rc, $((SECONDS - s)) s" >&2
}
# The clusters without a disk or memory limit: no jacobi --prefetch, the
# large sizes.
in_core() { [[ $1 == DC || $1 == uniform ]]; }
for c in ${STUDY_CLUSTERS:-DC IO HY1 HY2}; do
    cell jacobi jacobi $c 8 -- --n 2048
    in_core $c || cell jacobi-pf jacobi $c 8 --prefetch -- --n 2048
    cell sor sor $c 8 -- --n 2560
    cell lanczos lanczos $c 8 -- --n 2560
    cell cg cg $c 8 -- --class A
    if in_core $c; then
        cell mg mg $c 8 -- --n 2047
        cell wavefront wavefront $c 8 -- --n 2560 --tiles 8
    else
        cell mg mg $c 8 -- --n 1023
        cell wavefront wavefront $c 3 -- --n 2048 --tiles 8
    fi
done
STUDY_APPS=${STUDY_APPS:-$all_apps} python3 - "$out" ${STUDY_CLUSTERS:-DC IO HY1 HY2} <<'PY'
import json, os, statistics as st, sys
out = sys.argv[1]
chosen = os.environ["STUDY_APPS"].split()
apps = [a for a in ["jacobi", "sor", "lanczos", "cg", "wavefront", "mg", "jacobi-pf"] if a in chosen]
cls = sys.argv[2:]
skip = os.environ.get("STUDY_SKIP", "").split()
def goal(name, default):
    v = os.environ.get(name, default)
    try:
        return float(v)
    except ValueError:
        sys.exit(f"accuracy-study: {name}={v}: a number (percent) is needed")
goals = [("mean", "mean_diff_pct", goal("STUDY_GOAL_MEAN", "3")),
         ("max", "max_diff_pct", goal("STUDY_GOAL_MAX", "8")),
         ("gap", "predicted_best_gap_pct", goal("STUDY_GOAL_GAP", "3")),
         ("busy", "mean_busy_diff_pct", goal("STUDY_GOAL_BUSY", "2"))]
def load(tag, c):
    f = os.path.join(out, f"{tag}-{c}.json")
    try:
        return json.load(open(f))
    except Exception:
        return None
def absent(a, c):
    return (a == "jacobi-pf" and c in ("DC", "uniform")) or f"{a}-{c}" in skip
def pct(v, digits=1):
    return "-" if v is None else f"{v:.{digits}f}"
def verdict(v, g, noise):
    """met: within the goal; within noise: not, but the noise floor is above
    the goal and v is within it + 1 point; else missed."""
    if v is None:
        return "-"
    if v <= g:
        return "met"
    if noise is not None and noise > g and v <= noise + 1:
        return "within noise"
    return "missed"
print("mean / max diff / predicted best's gap, % (noise floor, %)")
print()
print("| app | " + " | ".join(cls) + " |")
print("|---" * (len(cls) + 1) + "|")
split, done = [], []
for a in apps:
    cells = []
    for c in cls:
        d = load(a, c)
        if absent(a, c):
            cells.append("-")
            continue
        if d is None:
            cells.append("failed")
            continue
        done.append((a, c, d))
        cells.append(f"{d['mean_diff_pct']:.1f} / {d['max_diff_pct']:.1f} / "
                     f"{d['predicted_best_gap_pct']:.1f} ({pct(d.get('noise_pct'), 0)})")
        for r in d["rows"]:
            split.append((a, c, r.get("out_of_core", r["actual_s"] >= 0.25), r["diff_pct"],
                          r.get("busy_diff_pct"), r.get("spread_pct"), r.get("predicted_spread_pct")))
    name = "jacobi --prefetch" if a == "jacobi-pf" else a
    print(f"| {name} | " + " | ".join(cells) + " |")
print()
print("per cell, noise as a measurement: mean diff over all runs and without flagged runs, "
      "the mean's bootstrap 95% CI, one model = the mean diff of one instrumented run's "
      "model alone (models learned), flagged runs, busy = the busiest rank's time in stages "
      "(mean diff), noise floor; then a verdict per goal on the all-runs figures "
      f"(goals: {', '.join(f'{n} {g:g}%' for n, _, g in goals)})")
print()
print("| app | cluster | mean % | w/o flagged % | 95% CI of mean % | one model % | flagged / runs | busy % | noise % | "
      + " | ".join(f"{n} <= {g:g}" for n, _, g in goals) + " |")
print("|---" * (9 + len(goals)) + "|")
tally = {}
for a, c, d in done:
    ci = d.get("mean_diff_ci95_pct")
    noise = d.get("noise_pct")
    v = [verdict(d.get(k), g, noise) for _, k, g in goals]
    for x in v:
        tally[x] = tally.get(x, 0) + 1
    name = "jacobi --prefetch" if a == "jacobi-pf" else a
    print(f"| {name} | {c} | {d['mean_diff_pct']:.2f} | {pct(d.get('mean_diff_unflagged_pct'), 2)} | "
          + (f"[{ci[0]:.2f}, {ci[1]:.2f}]" if ci and None not in ci else "-")
          + f" | {pct(d.get('mean_diff_one_model_pct'), 2)} ({d.get('models', 1)})"
          + f" | {d.get('flagged_runs', '-')} / {d.get('total_runs', '-')} | "
          f"{d['mean_busy_diff_pct']:.2f} | {pct(noise, 2)} | " + " | ".join(v) + " |")
if done:
    t = done[-1][2].get("flag_runq_pct"), done[-1][2].get("flag_cpu_pct")
    print()
    print(f"verdicts: {', '.join(f'{tally.get(x, 0)} {x}' for x in ['met', 'within noise', 'missed'])}"
          f" (of {len(done) * len(goals)}); a run is flagged when "
          + (f"some rank waited for a core > {t[0]}% of the main loop or " if t[0] is not None else
             "(the ranks outnumber the cores: no run-queue rule) ")
          + f"took > {t[1]}% more CPU per unit than at its point's median")
curved = [(a, c, d) for a, c, d in done if d.get("row_curve")]
if curved:
    print()
    print("row-cost curve against the paper's one cost a row, on the same models and runs: "
          "mean / max diff, busy %; the in-core points' mean diff; rows = the points whose "
          "diff the curve made smaller / larger")
    print()
    print("| app | cluster | curve: mean / max / busy | one cost a row: mean / max / busy | in-core: curve / one cost | rows better / worse |")
    print("|---|---|---|---|---|---|")
    for a, c, d in curved:
        k = d["row_curve"]
        rows = [r for r in d["rows"] if r.get("diff_linear_pct") is not None]
        inc = [r for r in rows if not r.get("out_of_core")]
        better = sum(r["diff_pct"] < r["diff_linear_pct"] - 1e-9 for r in rows)
        worse = sum(r["diff_pct"] > r["diff_linear_pct"] + 1e-9 for r in rows)
        ic = (f"{st.mean(r['diff_pct'] for r in inc):.2f} / {st.mean(r['diff_linear_pct'] for r in inc):.2f}"
              if inc else "-")
        print(f"| {a} | {c} | {d['mean_diff_pct']:.2f} / {d['max_diff_pct']:.2f} / {d['mean_busy_diff_pct']:.2f} | "
              f"{k['mean_diff_linear_pct']:.2f} / {k['max_diff_linear_pct']:.2f} / {k['mean_busy_diff_linear_pct']:.2f} | "
              f"{ic} | {better} / {worse} |")
one_it = [(a, c, d) for a, c, d in done if d.get("mean_diff_one_iteration_pct") is not None]
if one_it:
    print()
    print("the prediction (each recorded iteration replayed, their median, as --auto reports) "
          "against MHETA's one iteration (the median iteration's replay alone, what the search "
          "prices), on the same models and runs: mean / max diff %; points = the points whose "
          "diff the replay of each iteration made smaller / larger")
    print()
    print("| app | cluster | each iteration: mean / max | one iteration: mean / max | points better / worse |")
    print("|---|---|---|---|---|")
    for a, c, d in one_it:
        rows = d["rows"]
        better = sum(r["diff_pct"] < r["diff_one_iteration_pct"] - 1e-9 for r in rows)
        worse = sum(r["diff_pct"] > r["diff_one_iteration_pct"] + 1e-9 for r in rows)
        print(f"| {a} | {c} | {d['mean_diff_pct']:.2f} / {d['max_diff_pct']:.2f} | "
              f"{d['mean_diff_one_iteration_pct']:.2f} / {d['max_diff_one_iteration_pct']:.2f} | "
              f"{better} / {worse} |")
split_w = [(a, c, d["window"]) for a, c, d in done if d.get("window")]
if split_w:
    print()
    print("where the Blk point's diff comes from, round by round (medians over the rounds, signed: "
          "above 0 the first is slower; bootstrap 95% CI): model = each round's model against the "
          "window of iterations it learned from (the model's own error), window = that window "
          "against the round's Blk run (the host's drift between the two, which no prediction sees)")
    print()
    print("| app | cluster | model vs its window % | window vs Blk run % | rounds |")
    print("|---|---|---|---|---|")
    for a, c, w in split_w:
        m, mc = w["model_vs_window_pct"], w["model_vs_window_ci95_pct"]
        x, xc = w["window_vs_blk_run_pct"], w["window_vs_blk_run_ci95_pct"]
        print(f"| {a} | {c} | {m:+.1f} [{mc[0]:+.1f}, {mc[1]:+.1f}] | "
              f"{x:+.1f} [{xc[0]:+.1f}, {xc[1]:+.1f}] | {len(w['rounds'])} |")
at_cpu = [(a, c, d) for a, c, d in done if d.get("mean_diff_at_run_cpu_pct") is not None]
if at_cpu:
    print()
    print("the same runs with the host's drift in a row's cost taken out (a diagnostic, "
          "not a prediction: it uses each run's own measurement): the paper's model of each round "
          "(each recorded iteration replayed) with every rank's computation at the run's CPU time a row in its stages (median over "
          "its iterations) over the recorded window's; it also absorbs any error in a row's cost "
          "at other row counts. What is left is the model's communication, waiting and emulation")
    print()
    print("| app | cluster | diff: mean / max % | at each run's CPU speed: mean / max % | mean <= 3, max <= 8 there |")
    print("|---|---|---|---|---|")
    for a, c, d in at_cpu:
        m, x = d["mean_diff_at_run_cpu_pct"], d["max_diff_at_run_cpu_pct"]
        ok = "met" if m <= 3 and x <= 8 else "missed"
        print(f"| {a} | {c} | {d['mean_diff_pct']:.2f} / {d['max_diff_pct']:.2f} | {m:.2f} / {x:.2f} | {ok} |")
print()
for ooc, what in [(True, "out-of-core points"), (False, "in-core points")]:
    d = [x[3] for x in split if x[2] == ooc]
    if d:
        print(f"{what}: {len(d)}, mean diff {st.mean(d):.1f}%, median {st.median(d):.1f}%, "
              f"within 2%: {sum(x <= 2 for x in d)}, within 8%: {sum(x <= 8 for x in d)}, max {max(d):.1f}%")
        b = [x[4] for x in split if x[2] == ooc and x[4] is not None]
        if b:
            print(f"  their busiest rank's time in stages alone (busy %): mean diff {st.mean(b):.1f}%, "
                  f"median {st.median(b):.2f}%, within 2%: {sum(x <= 2 for x in b)}")
        sp = [(x[5], x[6]) for x in split if x[2] == ooc and x[5] is not None and x[6] is not None]
        if sp:
            print(f"  spread, median over them: the runs' {st.median(x[0] for x in sp):.1f}%, "
                  f"the models' predictions' {st.median(x[1] for x in sp):.1f}% "
                  f"(max {max(x[1] for x in sp):.1f}%)")
PY
