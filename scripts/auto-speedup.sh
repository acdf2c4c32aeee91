#!/usr/bin/env bash
# Whole-run speed-up of `--auto` over Block, beside the static ideal,
# interleaved.
#
#   scripts/auto-speedup.sh [ROUNDS] [PROFILE]
#
# Each round runs jacobi (N = 3072, 150 iterations) on the cluster
# AUTO_CLUSTER (default het2: 2 ranks, rank 1 at CPU power 0.5, emulated
# by spin, one core per rank; a name under clusters/, a spec's path, or
# uniform: AUTO_NP ranks, default 2, of equal power, where the ideal is
# Block)
# on Block, then on the speed-proportional split of the cluster's CPU
# powers given by hand (`--dist`: the static ideal, what the best fixed
# distribution gives in this run; 2048,1024 on het2), then with the
# default `--auto` (no --auto-at) under `mheta run`, and prints the three
# elapsed times (the apps' `elapsed_s`: the iteration loop, with the
# recording, the plan and the move), the re-plans and the chosen
# distribution, and the ratios Block / auto and Block / ideal. A spec
# with hosts ([[host]] tables) runs across its emulated hosts (`mheta
# hosts mpirun`, brought up if down and taken down after). At the end:
# the medians of the per-round ratios (on het2 against the target of
# 1.43, 0.95 of the ideal 1.5), and the median of ideal_s / auto_s: how
# close auto comes to the best fixed distribution in the same round,
# against 0.95 and 0.97. On a host whose vCPUs change speed by
# themselves the ideal split's own ratio to Block falls short of the
# powers' ratio, and that column shows by how much. PROFILE defaults to
# a fresh `mheta bench --no-disk` over the cluster's ranks (across its
# hosts). Default 6 rounds. APP_ARGS adds arguments to every run, e.g.
# APP_ARGS="--cpu-emulation clock --cpu-ns-per-unit 7" for the CPU by the
# clock (reproducible on a noisy host; the header says which).
set -euo pipefail
rounds=${1:-6}
here=$(cd "$(dirname "$0")/.." && pwd)
bin=${MHETA_BIN:-$here/target/release}
for x in mheta jacobi; do
    [[ -x $bin/$x ]] || { echo "auto-speedup: $bin/$x: not an executable (cargo build --release)" >&2; exit 2; }
done
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
cluster=${AUTO_CLUSTER:-het2}
spec=$cluster
n=3072
tmp=$(mktemp -d)
lab_down=0
cleanup() {
    [[ $lab_down == 0 ]] || "$bin/mheta" hosts down "$spec" >/dev/null 2>&1 || true
    rm -rf "$tmp"
}
trap cleanup EXIT
if [[ $cluster == uniform ]]; then
    # The apps' built-in, AUTO_NP ranks (default 2) of power 1, as a spec
    # file: the static ideal is Block.
    np=${AUTO_NP:-2}
    [[ $np =~ ^[1-9][0-9]*$ ]] || { echo "auto-speedup: AUTO_NP must be a rank count, got '$np'" >&2; exit 2; }
    spec=$tmp/uniform$np.toml
    for ((r = 0; r < np; r++)); do printf '[[rank]]\ncpu_power = 1.0\n' >>"$spec"; done
fi
[[ -f $spec ]] || spec=$here/clusters/$cluster.toml
[[ -f $spec ]] || { echo "auto-speedup: AUTO_CLUSTER=$cluster: no such cluster (uniform, clusters/NAME.toml or a path)" >&2; exit 2; }
# np, whether the spec has hosts, the speed-proportional split.
split_py='
import sys, tomllib
spec = tomllib.load(open(sys.argv[1], "rb"))
n = int(sys.argv[2])
if "host" in spec:
    powers = [h.get("cpu_power", 1.0) for h in spec["host"] for _ in range(h.get("ranks", 1))]
else:
    powers = [r.get("cpu_power", 1.0) for r in spec["rank"]]
split = [int(n * p / sum(powers)) for p in powers]
for i in range(n - sum(split)):
    split[i % len(split)] += 1
print(len(powers), int("host" in spec), ",".join(map(str, split)))'
read -r np hosts ideal < <(python3 -c "$split_py" "$spec" "$n")
if [[ $hosts == 1 ]]; then
    if ! "$bin/mheta" hosts status "$spec" >/dev/null 2>&1; then
        "$bin/mheta" hosts up "$spec" >&2
        lab_down=1
    fi
    launch=("$bin/mheta" hosts mpirun "$spec" --)
    where=(--cluster "$spec")
else
    launch=(mpirun -np "$np" --oversubscribe)
    where=(--np "$np")
fi
profile=${2:-}
if [[ -z $profile ]]; then
    profile=$tmp/profile.json
    "$bin/mheta" bench "${where[@]}" --no-disk -o "$profile" >"$tmp/bench.txt" 2>&1 \
        || { cat "$tmp/bench.txt" >&2; exit 1; }
fi
[[ -f $profile ]] || { echo "auto-speedup: $profile: no such profile" >&2; exit 2; }
summary() { python3 -c '
import json, sys
d = json.loads(sys.stdin.read().splitlines()[-1])
a = d.get("auto") or {}
assert d["verified"], "the answer did not verify"
print(d["elapsed_s"], len(a.get("replans", [])), ",".join(map(str, d["dist"])))'; }
read -r -a extra <<<"${APP_ARGS:-}"
run() { "${launch[@]}" "$bin/jacobi" --n "$n" --iters 150 --cluster "$spec" "${extra[@]}" "$@"; }
echo "# jacobi N=$n, 150 iterations, $cluster ($np ranks; ${APP_ARGS:-CPU emulation: the app default}$([[ $hosts == 1 ]] && echo ', one rank a host across its emulated hosts')); static ideal $ideal; profile $profile"
printf '%5s %10s %10s %10s %7s %15s %7s %7s %9s\n' round block_s ideal_s auto_s replans auto_dist ratio ideal of_ideal
ratios=() ideals=() fracs=()
for i in $(seq 1 "$rounds"); do
    read -r b _ _ < <(run | summary)
    read -r o _ _ < <(run --dist "$ideal" | summary)
    rm -rf "$tmp/trace"
    read -r a rp dist < <("$bin/mheta" run --trace-dir "$tmp/trace" -- "${launch[@]}" "$bin/jacobi" \
        --n "$n" --iters 150 --cluster "$spec" "${extra[@]}" --auto --profile "$profile" | summary)
    read -r r q f < <(python3 -c "print(f'{$b / $a:.3f} {$b / $o:.3f} {$o / $a:.3f}')")
    ratios+=("$r") ideals+=("$q") fracs+=("$f")
    printf '%5s %10.3f %10.3f %10.3f %7s %15s %7s %7s %9s\n' "$i" "$b" "$o" "$a" "$rp" "$dist" "$r" "$q" "$f"
done
python3 -c "
import statistics, sys
het2 = sys.argv[1] == 'het2'
ideal = sys.argv[2]
v = sys.argv[3:]
n = len(v) // 3
r, q, f = ([float(x) for x in v[k * n:(k + 1) * n]] for k in range(3))
m = statistics.median(r)
print(f'# median ratio {m:.3f} over {n} rounds (min {min(r):.3f}, max {max(r):.3f})'
      + ('; target 1.43: ' + ('met' if m >= 1.43 else 'missed') if het2 else ''))
print(f'# the static ideal {ideal} in the same rounds: median ratio {statistics.median(q):.3f} (min {min(q):.3f}, max {max(q):.3f})')
mf = statistics.median(f)
print(f'# auto against the static ideal (ideal_s / auto_s): median {mf:.3f} (min {min(f):.3f}, max {max(f):.3f}); '
      + '0.95: ' + ('met' if mf >= 0.95 else 'missed') + ', 0.97: ' + ('met' if mf >= 0.97 else 'missed'))
" "$cluster" "$ideal" "${ratios[@]}" "${ideals[@]}" "${fracs[@]}"
