#!/usr/bin/env bash
# Runs a third-party MPI test suite -- mpi4py's own (its sdist's test/
# directory, matching Debian's python3-mpi4py) -- without mheta and under
# every tool, at 1 to 4 ranks, and compares each run's unittest result with
# the run without the preload.
#
#   scripts/mpi4py-suite.sh            # the whole suite (about 2 minutes)
#   scripts/mpi4py-suite.sh --quick    # intercommunicators, collectives
#                                      # (neighbourhood ones too),
#                                      # point-to-point, requests; 3 ranks
#                                      # (2 on MPICH)
#   MHETA_MPI=mpich scripts/mpi4py-suite.sh   # on MPICH (mpi4py built
#                                      # from the same sdist against it)
#   MPI4PY_NPS="1 2" scripts/mpi4py-suite.sh  # only these rank counts
#
# Tools: none (LD_PRELOAD with no tool listening: MHETA_TOOLS=none),
# recorder (idle: mpi4py marks no iterations), recorder while recording
# (MHETA_RECORD_ALL=1: MPI_Init to MPI_Finalize is one recorded iteration),
# summary, and recorder+summary while recording. The spawn and
# dynamic-process tests are left out: as root on an oversubscribed node
# Open MPI's MPI_Comm_spawn waits for slots that never come, with or
# without mheta. Exit status: non-zero when any run's result differs from
# the run without the preload, or the suite cannot be set up.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/setup.sh
PY=/usr/bin/python3
need=()
dpkg -s python3-mpi4py >/dev/null 2>&1 || need+=(python3-mpi4py)
$PY -m pip --version >/dev/null 2>&1 || need+=(python3-pip)
# MPICH: mpi4py is compiled from its sdist (Python.h).
[ "$MHETA_MPI" != mpich ] || dpkg -s python3-dev >/dev/null 2>&1 || need+=(python3-dev)
if [ ${#need[@]} -gt 0 ]; then
  if [ "$(id -u)" -eq 0 ]; then
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null
  else
    echo "mpi4py-suite: install ${need[*]} (as root)" >&2; exit 1
  fi
fi
ver=$($PY -c 'import mpi4py; print(mpi4py.__version__)')
dir=target/third-party/mpi4py-$ver
if [ ! -f "$dir/test/runtests.py" ]; then
  mkdir -p target/third-party
  # The tests ship only in the source distribution (PyPI).
  $PY -m pip download --quiet --no-deps --no-binary :all: -d target/third-party "mpi4py==$ver"
  tar xzf "target/third-party/mpi4py-$ver.tar.gz" -C target/third-party
fi
target=${CARGO_TARGET_DIR:-$PWD/target}
lib=$target/release/libmheta_interpose.so
[ -f "$lib" ] || cargo build --release -p mheta-interpose
pypath=
if [ "$MHETA_MPI" = mpich ]; then
  # Debian's python3-mpi4py is Open MPI's: the same release from its
  # sdist, built against MPICH beside mheta's MPICH build.
  pypath=$target/third-party/py
  # (Debian's Open MPI mpi4py imports from anywhere: ask which MPI.)
  if ! PYTHONPATH=$pypath $PY -c 'import sys; from mpi4py import MPI; sys.exit(not MPI.Get_library_version().startswith("MPICH"))' 2>/dev/null; then
    MPICC=mpicc.mpich $PY -m pip install --quiet --no-deps --no-build-isolation \
      --target "$pypath" "target/third-party/mpi4py-$ver.tar.gz"
  fi
fi
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

if [ "${1:-}" = "--quick" ]; then
  # MPICH's ranks poll while they wait: 3 on 2 cores take minutes.
  if [ "$MHETA_MPI" = mpich ]; then nps="2"; else nps="3"; fi
  sel=(-i test_comm_inter -i test_cco_obj_inter -i test_cco_buf -i test_cco_nb_buf -i test_cco_ngh_buf
       -i test_p2p_buf -i test_request)
else
  nps="1 2 3 4"
  sel=()
fi
# MPI4PY_NPS="1 2": other rank counts (the whole suite at 3 and 4 ranks
# takes about 7 minutes a run on MPICH, whose waiting ranks poll).
nps=${MPI4PY_NPS:-$nps}

# One run: the unittest summary lines of every rank ("Ran N tests" and
# "OK (skipped=N)" or "FAILED (...)", counted), each rank's output in its own file
# (--output-filename) so that the ranks' lines cannot interleave, or the
# signal that killed a rank.
run() { # name np env...
  local name=$1 np=$2; shift 2
  local log="$out/$name-$np"
  local rc=0
  local vars=LD_PRELOAD,MHETA_TOOLS,MHETA_RECORD_ALL,MHETA_TRACE_DIR
  if [ "$MHETA_MPI" = mpich ]; then
    mkdir -p "$log"
    (cd "$dir" && env PYTHONPATH="$pypath" "$@" timeout 600 mpiexec.mpich -n "$np" \
        -outfile-pattern "$log/rank.%r.stdout" -errfile-pattern "$log/rank.%r.stderr" \
        -genvlist "$vars,PYTHONPATH" \
        $PY test/runtests.py -e test_spawn -e test_dynproc "${sel[@]}") >"$log.txt" 2>&1 || rc=$?
  else
    (cd "$dir" && env "$@" timeout 600 mpirun --oversubscribe -np "$np" --output-filename "$log" \
        -x LD_PRELOAD -x MHETA_TOOLS -x MHETA_RECORD_ALL -x MHETA_TRACE_DIR \
        $PY test/runtests.py -e test_spawn -e test_dynproc "${sel[@]}") >"$log.txt" 2>&1 || rc=$?
  fi
  local res
  res=$(cat "$log"/rank.*.std* "$log"/*/rank.*/std* 2>/dev/null | grep -E '^(OK|FAILED|Ran [0-9]+ tests?)' \
      | sed -E 's/^(Ran [0-9]+ tests?) in .*/\1/' | sort | uniq -c | tr -s ' ' | tr '\n' ';')
  grep -q 'Segmentation fault\|signal [0-9]' "$log.txt" && res="$res crashed;"
  echo "rc=$rc $res"
}

fail=0
printf '%-3s %-26s %s\n' np tool result
for np in $nps; do
  base=$(run none-preload "$np" LD_PRELOAD= MHETA_TOOLS= MHETA_RECORD_ALL= MHETA_TRACE_DIR=)
  printf '%-3s %-26s %s\n' "$np" "without mheta" "$base"
  for t in "none" "recorder" "recorder:record-all" "summary" "recorder,summary:record-all"; do
    tools=${t%%:*}; [ "$tools" = none ] && tools=
    all=; [[ "$t" == *:record-all ]] && all=1
    res=$(run "${t//[,:]/+}" "$np" LD_PRELOAD="$lib" MHETA_TOOLS="$tools" \
      MHETA_RECORD_ALL="$all" MHETA_TRACE_DIR="$out/trace-$np-${t//[,:]/+}")
    if [ -n "$all" ] && ! ls "$out/trace-$np-${t//[,:]/+}"/rank-*.mtrace >/dev/null 2>&1; then
      res="$res no trace written;"
    fi
    mark=same; [ "$res" = "$base" ] || { mark=DIFFERENT; fail=1; }
    printf '%-3s %-26s %s %s\n' "$np" "$t" "$res" "$mark"
  done
done
exit $fail
