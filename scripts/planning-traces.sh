#!/usr/bin/env bash
# Record the six kernels for the planning bench: each of jacobi, cg,
# lanczos, sor, mg and wavefront at its default size, 4 ranks, 8
# iterations, the default instrumented iterations, under `mheta run`
# (the launcher: $MHETA_MPIRUN, else mpirun), into DIR/<kernel>/.
#
#   scripts/planning-traces.sh DIR
#   MHETA_PLAN_TRACES=DIR cargo bench -p mheta-runtime --bench planning
#
# The bench grows each recording to 1024-16384 ranks
# (mheta_model::synthetic::grown). An existing DIR/<kernel> is replaced
# only once its new recording is whole.
set -euo pipefail
dir=${1:?usage: scripts/planning-traces.sh DIR}
here=$(cd "$(dirname "$0")/.." && pwd)
bin=${MHETA_BIN:-${CARGO_TARGET_DIR:-$here/target}/release}
for x in mheta jacobi cg lanczos sor mg wavefront; do
    [[ -x $bin/$x ]] || { echo "planning-traces: $bin/$x: not an executable (cargo build --release --workspace)" >&2; exit 2; }
done
launcher=${MHETA_MPIRUN:-mpirun}
case $(basename "$launcher") in
mpirun) np=(-np 4 --oversubscribe) ;;
*) np=(-n 4) ;;
esac
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
mkdir -p "$dir"
for k in jacobi cg lanczos sor mg wavefront; do
    tmp=$(mktemp -d "$dir/.$k.XXXX")
    if ! "$bin/mheta" run --trace-dir "$tmp" -- "$launcher" "${np[@]}" "$bin/$k" --iters 8 >"$tmp.out" 2>"$tmp.err"; then
        echo "planning-traces: $k failed; its output: $tmp.out, $tmp.err" >&2
        exit 1
    fi
    rm -rf "${dir:?}/$k" "$tmp.out" "$tmp.err"
    mv "$tmp" "$dir/$k"
    echo "planning-traces: $dir/$k: $(ls "$dir/$k" | grep -c mtrace) ranks, $(du -sb "$dir/$k" | cut -f1) bytes" >&2
done
