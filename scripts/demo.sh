#!/usr/bin/env bash
# The main job: build, measure the local ranks, then run jacobi on an
# emulated heterogeneous cluster (het2: CPU power 1.0 and 0.5) once with
# Block rows and once with --auto (model + GBS inside the run, live
# redistribution), and print predicted against measured times.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/setup.sh
cargo build --release --workspace --locked

N=${N:-3072}
ITERS=${ITERS:-150}
AT=${AT:-40}
out=target/mheta-demo
mkdir -p "$out"
bin=target/release

echo "== 1. microbenchmarks: 2 local ranks (writes $out/profile.json)"
$bin/mheta bench --np 2 --quick -o "$out/profile.json" | sed 's/^/   /'

echo "== 2. jacobi --n $N --iters $ITERS on het2 with Block rows"
mpirun -np 2 $bin/jacobi --n "$N" --iters "$ITERS" --cluster het2 > "$out/block.json"
cat "$out/block.json"

echo "== 3. the same under mheta with --auto (redistribute after iteration $AT)"
$bin/mheta run --trace-dir "$out/trace" -- mpirun -np 2 $bin/jacobi --n "$N" --iters "$ITERS" \
  --cluster het2 --auto --auto-at "$AT" --profile "$out/profile.json" > "$out/auto.json"
cat "$out/auto.json"

chosen=$(python3 -c 'import json,sys; print(",".join(map(str, json.load(open(sys.argv[1]))["auto"]["chosen_dist"])))' "$out/auto.json")
block=$(python3 -c 'import json,sys; print(",".join(map(str, json.load(open(sys.argv[1]))["auto"]["from_dist"])))' "$out/auto.json")

echo "== 4. mheta predict from the recorded trace"
$bin/mheta predict --profile "$out/profile.json" --trace "$out/trace" --dist "$block" --iters "$ITERS" --json > "$out/predict-block.json"
$bin/mheta predict --profile "$out/profile.json" --trace "$out/trace" --dist "$chosen" --iters "$ITERS" --json > "$out/predict-chosen.json"

python3 - "$out" <<'PY'
import json, sys
d = sys.argv[1]
blk = json.load(open(f"{d}/block.json"))
auto = json.load(open(f"{d}/auto.json"))
a = auto["auto"]
pb = json.load(open(f"{d}/predict-block.json"))
pc = json.load(open(f"{d}/predict-chosen.json"))
def err(p, m): return abs(p - m) / min(p, m) * 100
print()
print("   2 ranks, no oversubscription; per-iteration medians from one run (--auto run)")
print(f"   {'distribution':<24}{'rows':>14}{'predicted ms':>15}{'measured ms':>14}{'error':>9}")
for name, dist, p, m in [
    ("Block", a["from_dist"], pb["per_iteration_s"], a["measured_from_s"]),
    ("GBS (chosen in-run)", a["chosen_dist"], pc["per_iteration_s"], a["measured_chosen_s"]),
]:
    print(f"   {name:<24}{','.join(map(str, dist)):>14}{p*1e3:>15.3f}{m*1e3:>14.3f}{err(p, m):>8.1f}%")
n = sum(a["chosen_dist"])
prop = round(n * 2 / 3)
print()
print(f"   speed-proportional split (power 1.0 : 0.5): {prop},{n - prop}; chosen is {abs(a['chosen_dist'][0] - prop) / prop * 100:.1f}% off in rows")
print(f"   speedup per iteration (measured, same run): {a['measured_from_s'] / a['measured_chosen_s']:.2f}x")
print(f"   whole run: Block {blk['elapsed_s']:.2f} s, --auto {auto['elapsed_s']:.2f} s (incl. planning {a['plan_s']*1e3:.1f} ms, "
      f"redistribution {a['redistribute_s']*1e3:.0f} ms): {blk['elapsed_s'] / auto['elapsed_s']:.2f}x")
print(f"   verified: block={blk['verified']} auto={auto['verified']}  (error {auto['error']:.2e}; same checksum: {abs(blk['checksum'] - auto['checksum']) <= 1e-12 * abs(blk['checksum'])})")
ok = blk["verified"] and auto["verified"]
sys.exit(0 if ok else 1)
PY
