#!/usr/bin/env bash
# How fast a redistribution crosses a shaped link between two emulated
# hosts, beside a plain TCP stream on the same link, interleaved.
#
#   scripts/move-rate.sh [ROUNDS] [RATE]
#
# Builds a two-host lab (hosts a and b, each link shaped to RATE, default
# 1gbit; `mheta hosts up`), then each round runs, in turn: jacobi
# (--n 4096: a row of its two arrays is 64 KiB) from Block-less 4096,0
# moving 128 rows (8 MiB) and 1024 rows (64 MiB) to rank 1 in the middle of
# the run (`--move-to`, `--move-at 2`; the report's `move`), and a 128 MiB
# TCP stream from a to b (Python sockets, no MPI). Each move runs twice:
# as mheta moves (waiting by test and nap) and with MHETA_MOVE_YIELD=0
# (MPI_Wait, polling). Prints per size the median rate of the move, of
# the TCP stream, and the move's share of the nominal rate, of the most
# TCP payload the link can carry, and of the stream, and how many of its
# runs reached 93% of the nominal rate. ROUNDS defaults to 3. The lab is
# removed at the end.
set -euo pipefail
rounds=${1:-3}
rate=${2:-1gbit}
here=$(cd "$(dirname "$0")/.." && pwd)
bin=${MHETA_BIN:-$here/target/release}
for x in mheta jacobi; do
    [[ -x $bin/$x ]] || { echo "move-rate: $bin/$x: not an executable (cargo build --release)" >&2; exit 2; }
done
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
tmp=$(mktemp -d)
spec=$tmp/mvrate.toml
printf '[lab]\nname = "mvrate"\n[[host]]\nname = "a"\ncpu_power = 1.0\nrate = "%s"\n[[host]]\nname = "b"\ncpu_power = 1.0\nrate = "%s"\n' \
    "$rate" "$rate" >"$spec"
trap '"$bin/mheta" hosts down "$spec" >/dev/null 2>&1 || true; rm -rf "$tmp"' EXIT
"$bin/mheta" hosts up "$spec" >&2
nominal=$(python3 -c "
import re, sys
m = re.fullmatch(r'([0-9.]+)(k|m|g)bit', sys.argv[1].lower())
if not m: sys.exit('move-rate: RATE ' + sys.argv[1] + ': expected e.g. 1gbit or 200mbit')
print(float(m[1]) * {'k': 1e3, 'm': 1e6, 'g': 1e9}[m[2]] / 1e6)" "$rate")
b_ip=$("$bin/mheta" hosts status "$spec" --json | python3 -c "
import json, sys
print([h['ip'] for h in json.load(sys.stdin)['hosts'] if h['name'] == 'b'][0])")
cat >"$tmp/tcp.py" <<'PY'
import socket, sys, time
if sys.argv[1] == "srv":
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("0.0.0.0", 5999))
    s.listen(1)
    print("ready", flush=True)
    c, _ = s.accept()
    n, t0 = 0, None
    while b := c.recv(1 << 20):
        t0 = t0 or time.time()
        n += len(b)
    print(f"{n * 8 / (time.time() - t0) / 1e6:.1f}")
else:
    c = socket.create_connection((sys.argv[2], 5999))
    buf = b"x" * (1 << 20)
    for _ in range(128):
        c.sendall(buf)
    c.close()
PY
move() {
    "$bin/mheta" hosts mpirun "$spec" -- -x "MHETA_MOVE_YIELD=$2" "$bin/jacobi" --n 4096 --iters 4 --dist 4096,0 \
        --move-to "$((4096 - $1)),$1" --move-at 2 | tail -1 | python3 -c "
import json, sys
d = json.loads(sys.stdin.read())
assert d['verified'], 'jacobi did not verify'
m = d['move']
print(f\"{m['bytes'] / 2**20:.0f} {m['bytes'] * 8 / m['measured_s'] / 1e6:.1f}\")"
}
tcp() {
    exec 3< <(ip netns exec mheta-mvrate-b python3 "$tmp/tcp.py" srv)
    read -r _ <&3
    ip netns exec mheta-mvrate-a python3 "$tmp/tcp.py" cli "$b_ip"
    read -r r <&3
    exec 3<&-
    echo "$r"
}
: >"$tmp/rows"
for i in $(seq 1 "$rounds"); do
    for rows in 128 1024; do
        for y in 1 0; do
            read -r mib r < <(move "$rows" "$y")
            echo "move$y $mib $r" >>"$tmp/rows"
        done
    done
    echo "tcp 128 $(tcp)" >>"$tmp/rows"
done
python3 - "$tmp/rows" "$nominal" "$rounds" "$rate" <<'PY'
import statistics as st, sys
rows = [l.split() for l in open(sys.argv[1])]
nominal, rounds, rate = float(sys.argv[2]), sys.argv[3], sys.argv[4]
tcp = st.median(float(r[2]) for r in rows if r[0] == "tcp")
print(f"two emulated hosts, each link shaped to {rate} (htb, small packets first); medians of {rounds} interleaved rounds")
# The shaper counts each frame's 14-byte Ethernet header; a 1500-byte packet
# carries 1448 bytes of TCP payload (20 IP, 20 TCP, 12 timestamps).
payload = nominal * 1448 / 1514
print(f"payload max = nominal x 1448/1514 = {payload:.1f} Mbit/s: the most any TCP stream can carry")
print(f"{'what':<22} {'Mbit/s':>8} {'of nominal':>11} {'of payload max':>15} {'of TCP':>7}   runs >= 93% of nominal")
for mib in sorted({int(r[1]) for r in rows if r[0].startswith("move")}):
    for y, how in (("1", ""), ("0", ", polling")):
        v = [float(r[2]) for r in rows if r[0] == "move" + y and int(r[1]) == mib]
        m = st.median(v)
        what = f"move of {mib} MiB{how}"
        print(f"{what:<22} {m:8.1f} {m / nominal:10.1%} {m / payload:14.1%} {m / tcp:7.1%}   {sum(x >= 0.93 * nominal for x in v)} of {len(v)} (runs {min(v):.0f}-{max(v):.0f})")
print(f"{'TCP stream, 128 MiB':<22} {tcp:8.1f} {tcp / nominal:10.1%} {tcp / payload:14.1%}")
med = {(y, mib): st.median(float(r[2]) for r in rows if r[0] == "move" + y and int(r[1]) == mib)
       for y in "10" for mib in {int(r[1]) for r in rows if r[0].startswith("move")}}
sizes = sorted({m for _, m in med})
print("# moves of " + " and ".join(f"{m} MiB" for m in sizes) + ": "
      + ", ".join(f"{med['1', m]:.0f} Mbit/s ({med['1', m] / nominal:.1%} of {rate})" for m in sizes)
      + "; polling " + ", ".join(f"{med['0', m]:.0f}" for m in sizes)
      + f"; TCP stream {tcp:.0f}")
PY
