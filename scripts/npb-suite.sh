#!/usr/bin/env bash
# Runs the NAS Parallel Benchmarks 3.4 (MPI: BT, CG, EP, FT, IS, LU, MG,
# SP; Fortran but IS) without mheta and under `mheta run --whole-run`
# (the interposer recording MPI_Init to MPI_Finalize as one iteration), and
# compares: each run must verify as it does without the preload, and every
# rank's trace must hold the calls. Prints one line a benchmark: its
# verification both ways, the recorded events per rank and the MPI calls
# seen. Build NPB outside the tree; NPB's source is not ours.
#
#   scripts/npb-suite.sh NPB3.4-MPI [CLASS] [NP]    # CLASS S, NP 4
#   MHETA_MPI=mpich scripts/npb-suite.sh ...        # on MPICH
#
# NPB3.4-MPI: the NPB 3.4 MPI source tree (for example the NPB3.4-MPI
# folder of github.com/igankevich/npb-checkpoints); the benchmarks are
# built in a copy under target/third-party/ with this MPI's mpif90 and
# mpicc. NP must suit BT and SP (a square). Exit status: non-zero when a
# run under mheta fails, or verifies where the run without it did not
# (or the reverse), or a rank recorded nothing.
set -euo pipefail
cd "$(dirname "$0")/.."
src=${1:?usage: scripts/npb-suite.sh NPB3.4-MPI [CLASS] [NP]}
class=${2:-S}
np=${3:-4}
[ -f "$src/sys/make.common" ] || { echo "npb-suite: $src is not an NPB3.4-MPI tree (no sys/make.common)" >&2; exit 1; }
source scripts/setup.sh
set +u
target=${CARGO_TARGET_DIR:-$PWD/target}
mheta=$target/release/mheta
[ -x "$mheta" ] || cargo build --release --workspace
fc=mpif90.openmpi
[ "$MHETA_MPI" != mpich ] || fc=mpif90.mpich
work=$target/third-party/npb-$MHETA_MPI
rm -rf "$work"
mkdir -p "$work"
cp -r "$src/." "$work/"
mkdir -p "$work/bin"
# Objects built elsewhere (another MPI's) would link in: start clean.
make -C "$work" clean > /dev/null 2>&1 || true
find "$work" \( -name '*.o' -o -name '*.mod' -o -name '*.x' \) -delete
# gfortran 10 and later refuse MPI's choice arguments without
# -fallow-argument-mismatch.
cat > "$work/config/make.def" <<EOF
MPIFC = $fc
FLINK = \$(MPIFC)
FFLAGS = -O2 -fallow-argument-mismatch
FLINKFLAGS = \$(FFLAGS)
MPICC = $MPICC
CLINK = \$(MPICC)
CFLAGS = -O2
CLINKFLAGS = \$(CFLAGS)
CC = gcc
BINDIR = ../bin
RAND = randi8
EOF
launch=("$MHETA_MPIRUN" -np "$np")
[ "$MHETA_MPI" = mpich ] || launch+=(--oversubscribe)
printf '%-4s %-10s %-10s %-24s %s\n' bench plain "under mheta" "events a rank" "MPI calls recorded"
fail=0
for b in bt cg ep ft is lu mg sp; do
  if ! make -C "$work" "$b" CLASS="$class" > "$work/build-$b.log" 2>&1; then
    echo "$b: does not build here (see $work/build-$b.log)"; fail=1; continue
  fi
  exe=$work/bin/$b.$class.x
  verified() { grep -qiE 'verification( +=)? +successful|result verification successful' "$1" && echo verified || echo NOT; }
  plain=$work/$b.plain.txt under=$work/$b.mheta.txt trace=$work/trace-$b
  # Run in the copy: this NPB writes its checkpoints (*.checkpoint/) into
  # the working directory.
  rc=0; (cd "$work" && timeout 600 "${launch[@]}" "$exe") > "$plain" 2>&1 || rc=$?
  rc2=0; (cd "$work" && timeout 600 "$mheta" run --whole-run --trace-dir "$trace" -- "${launch[@]}" "$exe") > "$under" 2>&1 || rc2=$?
  v1=$(verified "$plain"); v2=$(verified "$under")
  summary=$("$mheta" show --trace "$trace" --json 2>/dev/null | python3 -c '
import json, sys
d = json.load(sys.stdin)
ev = [sum(len(i["events"]) for i in r["iterations"]) for r in d["ranks"]]
ops = sorted({e["op"] for r in d["ranks"] for i in r["iterations"] for e in i["events"] if e.get("op")})
print(",".join(map(str, ev)) + ("" if ev and min(ev) > 0 else " (a rank recorded nothing)"), " ".join(ops))' 2>/dev/null || echo "- no trace")
  printf '%-4s %-10s %-10s %s\n' "$b" "$v1" "$v2 (rc $rc2)" "$summary"
  if [ "$rc2" -ne 0 ] || [ "$v1" != "$v2" ] || [ "$rc" -ne "$rc2" ] || [[ "$summary" == "- "* ]] || [[ "$summary" == *"recorded nothing"* ]]; then
    fail=1
  fi
done
echo "npb-suite: class $class, $np ranks, $MHETA_MPI; runs in $work"
exit $fail
