#!/usr/bin/env bash
# Shao, Berman and Wolski's validation on real runs (`mheta place`): on the emulated
# hosts of clusters/farm4.toml (CPU power and links both differ), for each
# task kind (mandel: transfers into the master; ep: compute), calibrate
# the farm across the hosts (`mheta place --calibrate`), then run the
# farm with the master on each host and every other host a worker, and
# with the chosen master and only the chosen workers, PLACE_REPEAT rounds
# (default 3), interleaved. Compares the model's time (tasks / AppRate),
# the simulated time and the actual time (median of the farm's
# elapsed_s; the range over the median is the noise floor), as the
# paper's figures 4-6.
# Writes OUT/place.json (per task kind and master: flow rate, model,
# simulated, actual; chosen against actual best; chosen workers against
# all), OUT/place.svg, OUT/place-<task>.json (mheta place's reports) and
# OUT/runs.jsonl (every farm report).
# Usage: scripts/place-study.sh OUT
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -eq 1 ] || { echo "usage: $0 OUT" >&2; exit 2; }
OUT=$1
mkdir -p "$OUT"
source scripts/lab.sh
lab_start place clusters/farm4.toml farm
SPEC=$LAB_SPEC
REPEAT=${PLACE_REPEAT:-3}
CAL=${PLACE_CALIBRATE:-16}
# CPU (PLACE_EMULATION): clock (default), a piece of u units (a pixel, an
# EP pair) lasts u x NS / cpu_power (PLACE_NS, default 200 ns), which
# takes this VM's load out of the compute and leaves the communication
# real; or share, paced, quota, spin (see apps/src/emulate.rs).
EMU=${PLACE_EMULATION:-clock}
NS=${PLACE_NS:-200}
EMUARGS="--cpu-emulation $EMU"
[ "$EMU" != clock ] || EMUARGS="$EMUARGS --cpu-ns-per-unit $NS"

NP=$(grep -c '^\[\[host\]\]' "$SPEC")
: > "$OUT/runs.jsonl"
farm() { # task master workers|- round kind
  local w=()
  [ "$3" = - ] || w=(--workers "$3")
  "$M" hosts mpirun "$SPEC" -- -np "$NP" "$BIN/farm" --cluster "$SPEC" \
    $EMUARGS --task "$1" --master "$2" "${w[@]}" 2>>"$OUT/farm.err" |
    tail -1 | python3 -c "import json,sys; v=json.load(sys.stdin); v['study']={'round':$4,'kind':'$5'}; print(json.dumps(v))" >> "$OUT/runs.jsonl"
}

for task in mandel ep; do
  "$M" place --cluster "$SPEC" --task "$task" --calibrate "$CAL" \
    --farm-args "$EMUARGS" --json "$OUT/place-$task.json" | tee "$OUT/place-$task.txt"
done
for round in $(seq 1 "$REPEAT"); do
  for task in mandel ep; do
    for m in $(seq 0 $((NP - 1))); do farm "$task" "$m" - "$round" all; done
    read -r cm cw < <(python3 scripts/place_study.py chosen "$OUT/place-$task.json" "$SPEC")
    farm "$task" "$cm" "$cw" "$round" chosen
  done
done
python3 scripts/place_study.py report "$OUT" "$SPEC" "$EMUARGS"
