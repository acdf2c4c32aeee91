#!/usr/bin/env bash
# Runs every study and rewrites docs/RESULTS.md from what they printed.
#
#   scripts/results.sh [--quick] OUT
#
# Each study writes its JSON, its table (OUT/NAME/table.txt) and its SVGs
# under OUT/NAME; scripts/results_md.py then writes docs/RESULTS.md from
# them, stamped with the date, this machine, each study's emulation and
# the command that ran it, copies the SVGs to docs/results/, and rewrites
# the README's headline table (between its results:begin/end markers).
# --quick runs the small form of every study but the real-compute
# accuracy study (the same cells in both), the scaling study (fewer
# cells, fewer rounds) and the shared-node studies (slowdown, parallel,
# stochastic: whole, about 25 minutes together); without it the full
# studies run (a few hours).
# RESULTS_ONLY="NAME ..." reruns only those studies into the same OUT,
# keeping the others' results; `scripts/results_seed.py OUT` first fills
# an empty OUT from the published page, so that some studies can be
# rerun without the others (each kept section keeps its date and machine). When a study fails, its error is kept in OUT/NAME/stderr.txt, the
# others still run, OUT/RESULTS.md shows the failure, docs/RESULTS.md is
# left as it was, and the exit status is 1.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
quick=0
if [[ ${1:-} == --quick ]]; then
    quick=1
    shift
fi
[[ $# == 1 ]] || { echo "usage: scripts/results.sh [--quick] OUT" >&2; exit 2; }
out=$(mkdir -p "$1" && cd "$1" && pwd)
cd "$here"
source scripts/setup.sh
cargo build --release --workspace --locked -q
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# RESULTS_ONLY="NAME ...": run only these studies and keep the others'
# results already in OUT (from an earlier results.sh into the same OUT).
[[ -n ${RESULTS_ONLY:-} ]] || : >"$out/index.tsv"
touch "$out/index.tsv"

# The machine each study ran on (RESULTS_ONLY may rerun one elsewhere).
cpus="$(nproc) × $(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)"

# study NAME TITLE EMULATION -- COMMAND...: run COMMAND in OUT/NAME, keep
# its stdout as the table, and list it in OUT/index.tsv.
study() {
    local name=$1 title=$2 emulation=$3
    shift 4
    [[ -z ${RESULTS_ONLY:-} || " $RESULTS_ONLY " == *" $name "* ]] || return 0
    grep -v "^$name	" "$out/index.tsv" >"$out/index.tsv.tmp" || true
    mv "$out/index.tsv.tmp" "$out/index.tsv"
    local dir=$out/$name s=$SECONDS rc=0
    rm -rf "$dir"
    mkdir -p "$dir"
    echo "results: $name: $*" >&2
    env "$@" >"$dir/table.txt" 2>"$dir/stderr.txt" || rc=$?
    echo "results: $name: exit $rc, $((SECONDS - s)) s" >&2
    local shown
    shown=$(printf '%q ' "$@")
    printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$name" "$title" "$emulation" "$rc" "$((SECONDS - s))" "${shown//$out/OUT}" \
        "$(date -u '+%Y-%m-%d %H:%M UTC')" "$cpus" >>"$out/index.tsv"
}

if [[ $quick == 1 ]]; then
    clusters=DC clock_apps=jacobi rounds=2 sq=1
else
    clusters="DC IO HY1 HY2" clock_apps="jacobi jacobi-pf sor lanczos cg mg wavefront"
    rounds=6 sq=0
fi
# The accuracy studies: 5 runs per point (the bootstrap intervals and the
# flagged runs need them) where the study is real compute; 3 where the
# clock times the compute and the title says so.
clock="clock: compute timed from declared units (--cpu-ns-per-unit), 4 ranks on 2 cores"
study accuracy-clock "MHETA accuracy, 4 ranks, compute by the clock, 3 runs per point" "$clock" -- \
    STUDY_CPU=clock STUDY_NP=4 STUDY_CLUSTERS="$clusters" STUDY_APPS="$clock_apps" \
    scripts/accuracy-study.sh "$out/accuracy-clock/work" 3
# Real compute, the same cells in both forms (about 15 minutes at 5 runs
# per point: every run lasts 1.5 s and each round learns its own model).
study accuracy-real "MHETA accuracy, 2 ranks, real compute, 5 runs per point" \
    "real: real compute, no clock (--cpu-emulation paced: one core per rank; a rank at CPU power 1 is not slowed, a slower one sleeps out the rest)" -- \
    STUDY_CPU=real STUDY_NP=2 STUDY_CLUSTERS="DC uniform" STUDY_APPS="jacobi cg sor lanczos mg" \
    scripts/accuracy-study.sh "$out/accuracy-real/work" 5
# HY1 (rank 0 at CPU power 0.5, rank 1 with a fast disk and 8 MB, so out
# of core at most points): about 40 minutes, cg's out-of-core runs most.
study accuracy-real-hy1 "MHETA accuracy, 2 ranks, real compute, HY1, 5 runs per point" \
    "real: real compute, no clock (paced: rank 0 at CPU power 0.5 sleeps out the rest); rank 1's disk paced at io_factor 0.5 and its memory held to 8 MB by a memory cgroup" -- \
    STUDY_CPU=real STUDY_NP=2 STUDY_CLUSTERS=HY1 STUDY_APPS="jacobi cg sor lanczos mg" \
    scripts/accuracy-study.sh "$out/accuracy-real-hy1/work" 5
# Real compute across two emulated hosts, one rank each (DC's powers and
# equal ones), with each rank's row-cost curve measured in 5 rounds (the
# table gives the paper's one cost a row beside it): about 25 minutes
# with the profiles measured across them.
study accuracy-real-hosts "MHETA accuracy, real compute, one rank on each of two emulated hosts, row-cost curve, 5 runs per point" \
    "real: real compute, no clock (paced: netdc2's h1 at CPU power 0.5 sleeps out the rest); hosts: network namespaces, 1 Gbit/s shaped links" -- \
    STUDY_ROW_CURVE=5 STUDY_CPU=real STUDY_NP=2 STUDY_CLUSTERS="netdc2 netuniform2" STUDY_APPS="jacobi cg sor lanczos mg" \
    scripts/accuracy-study.sh "$out/accuracy-real-hosts/work" 5
# HY1 across two emulated hosts (h0 at CPU power 0.5; h1 with a fast disk
# and 8 MB, so out of core at most points): about 40 minutes.
study accuracy-real-hosts-hy1 "MHETA accuracy, real compute, HY1 on two emulated hosts, row-cost curve (not for cg), 5 runs per point" \
    "real: real compute, no clock (paced: h0 at CPU power 0.5 sleeps out the rest); h1's disk paced at io_factor 0.5 and its memory held to 8 MB by a memory cgroup; hosts: network namespaces, 1 Gbit/s shaped links" -- \
    STUDY_ROW_CURVE=5 STUDY_ROW_CURVE_SKIP=cg-nethy1-2 STUDY_CPU=real STUDY_NP=2 STUDY_CLUSTERS=nethy1-2 STUDY_APPS="jacobi cg sor lanczos mg" \
    scripts/accuracy-study.sh "$out/accuracy-real-hosts-hy1/work" 5
# Across hosts: jacobi and cg on net4 and jacobi on netcpu4 in the quick
# form, both apps on both in the full one.
host_skip=""
[[ $quick == 0 ]] || host_skip=cg-netcpu4
study accuracy-hosts "MHETA accuracy across emulated hosts, 3 runs per point" \
    "$clock; hosts: network namespaces, shaped links, a latency relay for h3" -- \
    STUDY_CPU=clock STUDY_NP=4 STUDY_CLUSTERS="net4 netcpu4" STUDY_APPS="jacobi cg" \
    STUDY_SKIP="$host_skip" scripts/accuracy-study.sh "$out/accuracy-hosts/work" 3
# The link matrix shows the profile the accuracy study measured across
# net4's hosts (the same `mheta bench --cluster net4 --quick`), or measures
# it when that study did not run.
net4_profile=()
[[ ! -s $out/accuracy-hosts/work/p4-net4.json ]] || net4_profile=("$out/accuracy-hosts/work/p4-net4.json")
study links-net4 "Link matrix of emulated hosts (net4)" \
    "hosts: network namespaces, htb-shaped veths (small packets first), a latency relay for h3" -- \
    scripts/link-matrix.sh net4 "$out/links-net4/work" "${net4_profile[@]}"
# 10 rounds: the goal is 93% of the line rate in 9 runs of 10 (an
# 8 MiB move takes 70 ms, and this VM's own stalls can take 5-10% of it).
study move-rate "Redistribution across a 1 Gbit/s link, beside a TCP stream" \
    "hosts: two network namespaces, each link shaped to 1 Gbit/s by htb (small packets first)" -- \
    scripts/move-rate.sh 10 1gbit
# A move's predicted cost against its measured time: one node, and one
# rank a host across 1 Gbit/s, 200 and 100 Mbit/s links with and without
# added latency, 2 and 4 ranks, 1-64 MiB a pair, 3 interleaved rounds.
study move-cost "A move's predicted cost against its measured time, across links" \
    "hosts: one rank per network namespace, each link shaped by htb (small packets first), 500 us added on the last host; node: one machine" -- \
    scripts/move_cost_study.py "$out/move-cost/work" 3
# --auto's plan in the job against the ranks (2-16): the summaries' gather
# to rank 0, the model and GBS there (about a minute for 3 rounds).
study gather "--auto's plan in the job against the ranks: the summaries' gather and the model" \
    "clock: compute by the clock at 7 ns a unit, ranks oversubscribed above 2" -- \
    scripts/gather_study.py "$out/gather/work" 3
# The model's own cost: one evaluation and a whole GBS against P, up to
# 16384 ranks on profiles written by kind of pair (about a minute).
study model-bench "The model's cost against P: one evaluation and a GBS search" \
    "none: the model alone, on synthetic traces and profiles" -- \
    scripts/model_bench.py "$out/model-bench/work"
# --auto's goals are medians of 5 interleaved rounds, so --quick runs 5.
study auto-speedup "--auto against Block and the static ideal (jacobi, het2)" \
    "spin: one core per rank, rank 1 at CPU power 0.5" -- \
    scripts/auto-speedup.sh "$((rounds < 5 ? 5 : rounds))"
# On a uniform cluster the ideal is Block: --auto must not lose to it.
study auto-uniform "--auto against Block on a uniform cluster (jacobi, 2 ranks)" \
    "none: 2 ranks of equal power, one core each, real compute" -- \
    AUTO_CLUSTER=uniform scripts/auto-speedup.sh "$((rounds < 5 ? 5 : rounds))"
# Four ranks on two cores: the CPU by the clock, so that time-sharing
# does not decide the powers. 20 ns a unit at power 1, so that the real
# work of two ranks sharing a core (3-4 ns of CPU a unit each here: 9-13
# us a row of 3072) fits well inside their clocked time; at 7 ns net4's
# two ranks a core fill it, and the watch re-planned on their wander.
# About 8 minutes each (net4's profile across its hosts takes 6).
study auto-het4 "--auto against Block and the static ideal (jacobi, het4, CPU by the clock)" \
    "clock: compute timed at 20 ns a unit, 4 ranks on 2 cores at CPU power 1, 0.5, 1, 0.75" -- \
    AUTO_CLUSTER=het4 "APP_ARGS=--cpu-emulation clock --cpu-ns-per-unit 20" scripts/auto-speedup.sh 5
study auto-net4 "--auto against Block and the static ideal (jacobi, net4, CPU by the clock)" \
    "clock: compute timed at 20 ns a unit; hosts: one rank on each of 4 emulated hosts (net4), 4 ranks on 2 cores" -- \
    AUTO_CLUSTER=net4 "APP_ARGS=--cpu-emulation clock --cpu-ns-per-unit 20" scripts/auto-speedup.sh 5
# The slowdown and parallel studies run whole also under --quick (about
# 7 and 4 minutes): their goals are stated over 12 configurations and
# 5 runs.
for s in slowdown parallel; do
    study "$s" "$s study" "see the table's emulation line" -- \
        STUDY_QUICK=0 "scripts/$s-study.sh" "$out/$s/work"
done
study risk "risk study" "see the table's emulation line" -- \
    STUDY_QUICK=$sq scripts/risk-study.sh "$out/risk/work"
# Five interleaved rounds in both forms (about 13 minutes): the goals
# are stated over five.
study hog "--auto under a hog landing on a rank's core (jacobi, sor)" "see the table's emulation line" -- \
    STUDY_ROUNDS=5 scripts/hog-study.sh "$out/hog/work"
study sensor "The CPU sensors against the kernel's schedstat" "see the table's emulation line" -- \
    STUDY_QUICK=$sq scripts/sensor-check.sh "$out/sensor/work"
# Whole also under --quick (about 13 minutes): coverage is claimed over
# at least 50 runs.
study stochastic "stochastic study" "see the table's emulation line" -- \
    STUDY_QUICK=0 scripts/stochastic-study.sh "$out/stochastic/work"
study place "Master/worker placement (Shao, Berman and Wolski), farm on farm4" "see the table's emulation line" -- \
    PLACE_REPEAT=$((quick == 1 ? 2 : 3)) scripts/place-study.sh "$out/place/work"
# The scaling study takes about 20 minutes (2 repeats) to 40 (4): the
# full run only (or RESULTS_ONLY=scale into the same OUT).
[[ $quick == 1 && -z ${RESULTS_ONLY:-} ]] ||
    study scale "Multilevel scaling (Romanazzi and Jimack), mg and jacobi on grid2, jacobi on grid64" \
    "clock: compute timed from declared units (10 ns per point at CPU power 1), one rank per emulated host, the same power at every np" -- \
        SCALE_REPEAT=$((quick == 1 ? 2 : 4)) scripts/scale-study.sh "$out/scale/work"

cmd="scripts/results.sh OUT"
[[ $quick == 0 ]] || cmd="scripts/results.sh --quick OUT"
python3 scripts/results_md.py "$out" "$cmd"
if awk -F'\t' '$4 != 0 { bad = 1 } END { exit bad }' "$out/index.tsv"; then
    mkdir -p docs/results
    rm -f docs/results/*.svg
    find "$out" -name '*.svg' -exec sh -c 'for f; do
        rel=${f#'"$out"'/}; cp "$f" "docs/results/$(echo "$rel" | tr / -)"; done' sh {} +
    cp "$out/RESULTS-docs.md" docs/RESULTS.md.tmp
    mv docs/RESULTS.md.tmp docs/RESULTS.md
    python3 - "$out/README-block.md" <<'PY'
import re, sys
block = open(sys.argv[1]).read()
text = open("README.md").read()
new, n = re.subn(r"<!-- results:begin.*?<!-- results:end -->\n", lambda m: block, text, flags=re.S)
if n != 1:
    sys.exit("results: README.md: expected one <!-- results:begin --> ... <!-- results:end --> block")
open("README.md.tmp", "w").write(new)
PY
    mv README.md.tmp README.md
    echo "results: wrote docs/RESULTS.md, docs/results/ and the README's results table" >&2
else
    echo "results: some studies failed (see $out/RESULTS.md and $out/*/stderr.txt); docs/RESULTS.md left as it was" >&2
    exit 1
fi
