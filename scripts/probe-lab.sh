# Sourced by the probes that run a C program of their own across a
# spec's emulated hosts (send-hold.sh, duplex.sh): `probe_lab NAME SPEC
# SOURCE` checks that $bin/mheta exists, builds scripts/SOURCE.c with
# MPICC (default mpicc) into a private directory $tmp (as $tmp/SOURCE),
# and brings SPEC's hosts up; at exit they go down again if they were
# down, and $tmp is removed. Needs $here (the repository) and $bin.
probe_lab() {
  local name=$1 source=$3
  PROBE_SPEC=$2
  [[ -x $bin/mheta ]] || { echo "$name: $bin/mheta: not an executable (cargo build --release)" >&2; exit 2; }
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
  tmp=$(mktemp -d)
  PROBE_WAS_UP=1
  "$bin/mheta" hosts status "$PROBE_SPEC" >/dev/null 2>&1 || PROBE_WAS_UP=0
  trap '[[ $PROBE_WAS_UP == 1 ]] || "$bin/mheta" hosts down "$PROBE_SPEC" >/dev/null 2>&1 || true; rm -rf "$tmp"' EXIT
  "${MPICC:-mpicc}" -O2 -o "$tmp/$source" "$here/scripts/$source.c"
  [[ $PROBE_WAS_UP == 1 ]] || "$bin/mheta" hosts up "$PROBE_SPEC" >&2
}
