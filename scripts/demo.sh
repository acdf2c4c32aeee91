#!/usr/bin/env bash
# The main job, in about one screen: build, measure the two local ranks
# (the cluster profile), then run jacobi on an emulated heterogeneous
# cluster (het2: CPU power 1.0 and 0.5) once with Block rows and once
# under mheta with --auto (model + GBS inside the run, live
# redistribution), and print the profile's summary and a table of Block
# against --auto: rows per rank, predicted and measured time per
# iteration, error, speed-up. Every figure is read from the JSON files the
# run wrote (scripts/demo.py), which stay in target/mheta-demo/ with the
# microbenchmark's full tables (bench.txt) and the trace.
#
#   scripts/demo.sh          # N=3072 ITERS=150 AT=40 by default
#   MHETA_MPI=mpich scripts/demo.sh   # the same on MPICH (target/mpich/)
#
# N, ITERS: jacobi's size and iterations; AT: --auto plans after that
# iteration. 10 to 25 s after the build on a 2-core VM.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/setup.sh
start=$SECONDS
t=$SECONDS
# Each step's header line ends with its time (done_in).
done_in() { echo " ($((SECONDS - t)) s)"; }
printf '%s' "== 0. build: cargo build --release --workspace (minutes the first time)"
cargo build --release --workspace --locked -q
done_in

N=${N:-3072}
ITERS=${ITERS:-150}
AT=${AT:-40}
out=${CARGO_TARGET_DIR:-target}/mheta-demo
mkdir -p "$out"
bin=${CARGO_TARGET_DIR:-target}/release
mpirun=$MHETA_MPIRUN
t=$SECONDS
echo "== 1. the cluster profile: mheta bench --np 2 --quick -o $out/profile.json"
$bin/mheta bench --np 2 --quick -o "$out/profile.json" >"$out/bench.txt" 2>&1 ||
  { cat "$out/bench.txt" >&2; echo "demo: mheta bench failed" >&2; exit 1; }
python3 scripts/demo.py profile "$out"
printf '%s' "   full tables: $bin/mheta show --profile $out/profile.json"
done_in

t=$SECONDS
printf '%s' "== 2. jacobi --n $N --iters $ITERS --cluster het2 on Block rows (2 ranks)"
$mpirun -np 2 $bin/jacobi --n "$N" --iters "$ITERS" --cluster het2 > "$out/block.json"
done_in

t=$SECONDS
printf '%s' "== 3. the same under mheta run with --auto: plan after iteration $AT, move, go on"
$bin/mheta run --trace-dir "$out/trace" -- $mpirun -np 2 $bin/jacobi --n "$N" --iters "$ITERS" \
  --cluster het2 --auto --auto-at "$AT" --profile "$out/profile.json" > "$out/auto.json"
done_in

# The same model offline, on the trace the run recorded, for both rows.
dists=$(python3 -c 'import json,sys; a = json.load(open(sys.argv[1]))["auto"]
print(" ".join(",".join(map(str, a[k])) for k in ("from_dist", "chosen_dist")))' "$out/auto.json")
read -r block chosen <<<"$dists"
$bin/mheta predict --profile "$out/profile.json" --trace "$out/trace" --dist "$block" --iters "$ITERS" --json > "$out/predict-block.json"
$bin/mheta predict --profile "$out/profile.json" --trace "$out/trace" --dist "$chosen" --iters "$ITERS" --json > "$out/predict-chosen.json"

echo "== 4. Block against --auto"
rc=0
python3 scripts/demo.py report "$out" || rc=$?
echo "== JSON in $out/: profile, block, auto, predict-block, predict-chosen; the trace in trace/"
echo "   ($((SECONDS - start)) s in all)"
exit $rc
