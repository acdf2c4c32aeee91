#!/usr/bin/env bash
# What this node's memory allows a move of rows, outside MPI.
#
#   scripts/copy-rates.sh [MIB] [ROUNDS]
#
# Compiles scripts/copy-rates.c (cc) and runs it ROUNDS times (default 3)
# on MIB MiB (default 64): memcpy between resident buffers out of the
# cache, memcpy into memory never touched, populating fresh memory with
# one madvise(MADV_POPULATE_WRITE), and process_vm_readv from another
# process (what Open MPI's CMA does for a large on-node message), each in
# small (4 KiB) and in huge (2 MiB) pages; then (scripts/pipe-copy.c, on
# two cores) a move from one process's resident small pages to another's,
# pulled with process_vm_readv and, in the same run, pipelined through
# four shared 2 MiB buffers with both cores copying, five times each way.
# The redistribution bench
# (`cargo bench -p mheta-runtime --bench redistribute`) and `MHETA_HUGE_PAGES`
# in the README are read against these.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
mib=${1:-64}
rounds=${2:-3}
[[ $mib =~ ^[1-9][0-9]*$ ]] || { echo "copy-rates: MIB must be a positive integer, got '$mib'" >&2; exit 2; }
[[ $rounds =~ ^[1-9][0-9]*$ ]] || { echo "copy-rates: ROUNDS must be a positive integer, got '$rounds'" >&2; exit 2; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cc -O2 -o "$tmp/copy-rates" "$here/copy-rates.c"
cc -O2 -o "$tmp/pipe-copy" "$here/pipe-copy.c"
cores=$(getconf _NPROCESSORS_ONLN)
echo "# THP: $(cat /sys/kernel/mm/transparent_hugepage/enabled 2>/dev/null || echo unknown)"
for r in $(seq 1 "$rounds"); do
    echo "# round $r"
    "$tmp/copy-rates" "$mib"
    if ((cores > 1 && mib % 2 == 0)); then
        "$tmp/pipe-copy" "$mib" 2048 4 5
    fi
done
