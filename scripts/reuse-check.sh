#!/usr/bin/env bash
# The reuse term (model/src/reuse.rs) against real runs: how much cheaper
# each rank's rows got after `--auto`'s move, against what the node's
# measured curve (the profile's reuse_by) says, and the model's
# prediction of the chosen split with and without the term.
#
#   scripts/reuse-check.sh [ROUNDS] [PROFILE] [SPEC:N ...]
#
# Each round runs, for each SPEC:N in turn (default two:1536 two:2048
# two:2560 half:2048 half:3072; `two` is 2 ranks at CPU powers 1 and
# 0.25, `half` 1 and 0.5, both by spin; or a spec's path), jacobi at
# N rows, 40 iterations, `--auto --auto-at 12 --replan-threshold 0`
# under `mheta run` on 2 local ranks, which records Block, plans, moves
# and runs the split. Printed per run:
# - per rank, its working set (the two arrays' bytes) before and after,
#   the measured k (its CPU time a row after the move over before, the
#   apps' cpu_per_row_chosen_s / cpu_per_row_from_s), and k from the
#   curve at the measured periods three ways: the model's (eq. R1: the
#   ratio of the probe's costs a byte at the host's bytes, both ranks'
#   arrays), each working set's curve over
#   its own sweep right after a sweep (the time alone), and the probe's
#   difference a byte added to the rank's recorded cost a byte;
# - the measured period of the split, `mheta predict` of it from the
#   run's own trace with PROFILE and with PROFILE less its reuse_by.
# PROFILE defaults to a fresh `mheta bench --np 2 --quick`. Default 2
# rounds. Needs python3; run it alone.
set -euo pipefail
rounds=${1:-2}
here=$(cd "$(dirname "$0")/.." && pwd)
bin=${MHETA_BIN:-$here/target/release}
for x in mheta jacobi; do
    [[ -x $bin/$x ]] || { echo "reuse-check: $bin/$x: not an executable (cargo build --release)" >&2; exit 2; }
done
[[ $rounds =~ ^[1-9][0-9]*$ ]] || { echo "reuse-check: ROUNDS '$rounds' is not a positive integer" >&2; exit 2; }
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
profile=${2:-}
if [[ -z $profile ]]; then
    profile=$tmp/profile.json
    "$bin/mheta" bench --np 2 --quick --no-disk -o "$profile" >/dev/null
fi
[[ -f $profile ]] || { echo "reuse-check: PROFILE $profile: no such file" >&2; exit 2; }
shift $(( $# < 2 ? $# : 2 ))
points=("$@")
[[ ${#points[@]} -gt 0 ]] || points=(two:1536 two:2048 two:2560 half:2048 half:3072)
printf '[[rank]]\ncpu_power = 1.0\n\n[[rank]]\ncpu_power = 0.25\n' >"$tmp/two.toml"
printf '[[rank]]\ncpu_power = 1.0\n\n[[rank]]\ncpu_power = 0.5\n' >"$tmp/half.toml"
python3 - "$profile" "$tmp/bare.json" <<'PY'
import json, sys
p = json.load(open(sys.argv[1]))
for n in p["nodes"]:
    n.pop("reuse_by", None)
json.dump(p, open(sys.argv[2], "w"))
PY
echo "# $(date -u '+%Y-%m-%d %H:%M UTC'), $rounds rounds, profile $profile"
for r in $(seq "$rounds"); do
    for pt in "${points[@]}"; do
        spec=${pt%%:*} n=${pt##*:}
        [[ -f $spec ]] || spec=$tmp/$spec.toml
        [[ -f $spec && $n =~ ^[0-9]+$ ]] || { echo "reuse-check: '$pt' is not SPEC:N" >&2; exit 2; }
        tr=$tmp/trace-$r-$(basename "$spec" .toml)-$n
        "$bin/mheta" run --count 5 --trace-dir "$tr" -- mpirun -np 2 "$bin/jacobi" \
            --n "$n" --iters 40 --cluster "$spec" --auto --auto-at 12 \
            --replan-threshold 0 --profile "$profile" 2>/dev/null | tail -1 >"$tr.json"
        split=$(python3 -c 'import json,sys; print(",".join(map(str, json.load(open(sys.argv[1]))["auto"]["chosen_dist"])))' "$tr.json")
        for p in "$profile" "$tmp/bare.json"; do
            "$bin/mheta" predict --trace "$tr" --profile "$p" --dist "$split" --json | tail -1
        done >"$tr.pred"
        python3 "$here/scripts/reuse_check.py" "$profile" "$tr.json" "$tr.pred" "$(basename "$spec" .toml):$n" "$spec"
    done
done
