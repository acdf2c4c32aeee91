#!/usr/bin/env bash
# Whether the hosts of a spec carry several streams at once, and a stream
# each way at once, at their links' rate (scripts/duplex.c): SIZE/2
# streams of MIB each run as a chain (ranks 1..S each send to the rank
# before, so the middle ranks send and receive at once, as in a move
# toward rank 0 whose blocks keep their rows in place) and as disjoint
# pairs (no rank does both), and one stream runs alone. Each job runs
# REPS repeats; JOBS jobs of each pattern are interleaved. On switched
# full-duplex links, with a core for each host's network work, all three
# take one stream's time; the move model (docs/design/model.md, "Moves")
# prices links so.
#
#   scripts/duplex.sh SPEC [MIB] [JOBS] [REPS]
#
# SPEC: a lab spec with one rank a host and at least 3 hosts whose links
# are alike (brought up if down, and down again after). MIB the message
# (default 32), JOBS (default 4), REPS (default 3). Prints each pattern's median time and
# per-stream rate over all its repeats, then the pairs' time over one
# stream's (what streams at once cost) and the chain's over the pairs'
# (what sending and receiving at once costs), each with a bootstrap 95%
# interval over the jobs. Needs mpicc for the MPI the build uses (MPICC,
# default mpicc).
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
bin=${MHETA_BIN:-$here/target/release}
[[ $# -ge 1 && -f $1 ]] || { echo "duplex: usage: duplex.sh SPEC [MIB] [JOBS] [REPS] (SPEC: a lab spec file)" >&2; exit 2; }
spec=$1 mib=${2:-32} jobs=${3:-4} reps=${4:-3}
for x in "$mib" "$jobs" "$reps"; do
  [[ $x =~ ^[1-9][0-9]*$ ]] || { echo "duplex: '$x' is not a positive integer" >&2; exit 2; }
done
source "$here/scripts/probe-lab.sh"
probe_lab duplex "$spec" duplex
for ((j = 0; j < jobs; j++)); do
  for mode in chain pairs one; do
    "$bin/mheta" hosts mpirun "$spec" -- "$tmp/duplex" "$mode" "$mib" "$reps" 2>/dev/null | sed "s/^/$j /"
  done
done >"$tmp/lines"
python3 - "$tmp/lines" "$spec" "$mib" "$jobs" "$reps" <<'PY'
import random, statistics as st, sys
lines, spec, mib, jobs, reps = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
modes = ("chain", "pairs", "one")
t, rate, per_job = {}, {}, {}
for line in open(lines):
    job, mode, rep, secs, mbs = line.split()
    t.setdefault(mode, []).append(float(secs))
    rate.setdefault(mode, []).append(float(mbs))
    per_job.setdefault((mode, int(job)), []).append(float(secs))
if set(t) != set(modes):
    sys.exit("duplex: a pattern printed nothing (see the jobs' errors: run one by hand)")
print(f"# {spec}: {mib} MiB a stream, {jobs} interleaved jobs of each pattern, {reps} repeats a job")
print(f"{'pattern':>8} {'median s':>9} {'min':>7} {'max':>7} {'MB/s a stream':>14}")
for mode in modes:
    v = t[mode]
    print(f"{mode:>8} {st.median(v):9.3f} {min(v):7.3f} {max(v):7.3f} {st.median(rate[mode]):14.1f}")
# Ratios of the patterns' medians, resampling the jobs (each job's
# repeats share its connections).
med = lambda mode, js: st.median([x for j in js for x in per_job[mode, j]])
ids = range(jobs)
rng = random.Random(1)


def ratio(a, b, what):
    r = med(a, ids) / med(b, ids)
    boot = sorted(med(a, [rng.choice(ids) for _ in ids]) / med(b, [rng.choice(ids) for _ in ids])
                  for _ in range(2000))
    print(f"# {what}: {r:.2f} [{boot[49]:.2f}, {boot[1949]:.2f}] (1.00: at the link's rate)")


ratio("pairs", "one", "pairs over one stream")
ratio("chain", "pairs", "chain over pairs")
PY
