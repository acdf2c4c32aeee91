#!/usr/bin/env python3
"""What scripts/demo.sh prints, read from the JSON files its run wrote.

    scripts/demo.py profile DIR   # the cluster profile's summary (DIR/profile.json)
    scripts/demo.py report DIR    # Block against --auto (DIR/block.json, DIR/auto.json,
                                  # DIR/predict-block.json, DIR/predict-chosen.json)

Every figure printed is a field of those files (or a ratio of two); none
is typed in. `report` exits 1 when either run did not verify its answer.
"""
import json
import os
import sys


def load(d, name):
    path = os.path.join(d, name)
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError) as e:
        sys.exit(f"demo: {path}: {e}")


# The demo's goal for the model's error per iteration, in %.
GOAL_PCT = 5.0


def dist(v):
    return ",".join(map(str, v))


def ms(s):
    return "-" if s is None else f"{s * 1e3:.3f}"


def error(p, m):
    """The experiment's diff: |p - m| / min(p, m), in %."""
    return "-" if p is None or m is None else f"{abs(p - m) / min(p, m) * 100:.1f}%"


def profile(d):
    p = load(d, "profile.json")
    hosts = ",".join(p.get("hosts") or [])
    quick = " (quick)" if p.get("quick") else ""
    print(f"   {p['np']} ranks on {hosts}{quick}; the model's figures per pair and per node")
    print(f"   {'pair':<8}{'o_s us':>8}{'o_r us':>8}{'L us':>8}{'RTT 8 B us':>12}"
          f"{'MB/s 1 MiB':>12}{'MB/s 8 MiB cold':>17}{'eager B':>9}")
    for q in p["pairs"]:
        cold = q.get("bandwidth_cold_bps")
        print(f"   {str(q['src']) + ' -> ' + str(q['dst']):<8}{q['o_send_s'] * 1e6:>8.3f}"
              f"{q['o_recv_s'] * 1e6:>8.3f}{q['latency_s'] * 1e6:>8.3f}{q['rtt_small_s'] * 1e6:>12.3f}"
              f"{q['bandwidth_bps'] / 1e6:>12.0f}{'-' if cold is None else f'{cold / 1e6:.0f}':>17}"
              f"{q['eager_limit_bytes']:>9}")
    print(f"   {'rank':<6}{'host':<12}{'cpu weight':>11}{'mem MB':>9}{'disk read ns/B':>16}{'write ns/B':>12}")
    for n in p["nodes"]:
        disk = n.get("disk")
        r, w = ("-", "-") if not disk else (f"{disk['read_per_byte_s'] * 1e9:.3f}", f"{disk['write_per_byte_s'] * 1e9:.3f}")
        print(f"   {n['rank']:<6}{n['host']:<12}{n['cpu_weight']:>11.3f}"
              f"{n['mem_available_bytes'] / 1e6:>9.0f}{r:>16}{w:>12}")


def report(d):
    blk = load(d, "block.json")
    auto = load(d, "auto.json")
    pb = load(d, "predict-block.json")
    pc = load(d, "predict-chosen.json")
    trace = load(os.path.join(d, "trace"), "app.json")
    a = auto["auto"]
    powers = [r["cpu_power"] for r in sorted(auto["ranks"], key=lambda r: r["rank"])]
    inst = a["instrumented_iterations"]
    cpu = (auto.get("emulation") or {}).get("cpu", "?")
    how = "the computation timed by the clock" if cpu == "clock" else "real computation"
    print(f"   {auto['app']} --n {auto['n']}, {auto['iters']} iterations on {auto['cluster']}: "
          f"{auto['np']} ranks at CPU power {' : '.join(f'{x:g}' for x in powers)} "
          f"(CPU emulation {cpu}: {how})")
    print(f"   per iteration (median); predicted: the model inside the --auto run, "
          f"its {inst['end'] - inst['start']} recorded iterations each replayed on the rows, their median")
    print(f"   {'':<26}{'rows':>12}{'predicted ms':>14}{'measured ms':>13}{'error':>8}{'noise':>8}{'speed-up':>10}")

    def row(name, rows, p, m, base, noise=None):
        up = "-" if m is None or base is None else f"{base / m:.2f}x"
        nf = "-" if noise is None else f"{noise:.1f}%"
        print(f"   {name:<26}{dist(rows):>12}{ms(p):>14}{ms(m):>13}{error(p, m):>8}{nf:>8}{up:>10}")

    base = a["measured_from_s"]
    row("Block, before the plan", a["from_dist"], a["predicted_from_s"], base, base, a.get("noise_from_pct"))
    row("--auto, after the move" if a["moved"] else "--auto's plan (not moved)",
        a["chosen_dist"], a["predicted_chosen_s"], a["measured_chosen_s"], base,
        a.get("noise_chosen_pct") if a["moved"] else None)
    for i, r in enumerate(a["replans"], 1):
        what = "moved" if r["moved"] else "not moved"
        if r.get("reverted"):
            what = "moved, undone"
        row(f"re-plan {i} ({what})", r["chosen_dist"], r["predicted_chosen_s"], r["measured_chosen_s"], base)
    print("   noise: the window's own floor, the spread of the medians of its three thirds "
          "(how far this host's speed wandered inside it)")
    if a.get("predicted_chosen_point_s"):
        print(f"   MHETA's one iteration (the replay of the recorded iterations' median): Block "
              f"{ms(a['predicted_from_point_s'])} ms ({error(a['predicted_from_point_s'], base).strip()}), "
              f"after the move {ms(a['predicted_chosen_point_s'])} ms "
              f"({error(a['predicted_chosen_point_s'], a['measured_chosen_s']).strip()})")
    for name, p, m, nz in (("Block", a["predicted_from_s"], base, a.get("noise_from_pct")),
                           ("after the move", a["predicted_chosen_s"], a["measured_chosen_s"],
                            a.get("noise_chosen_pct"))):
        if p is None or m is None or (name != "Block" and not a["moved"]):
            continue
        err = abs(p - m) / min(p, m) * 100
        if err <= GOAL_PCT:
            verdict = "met"
        elif nz is not None and nz > GOAL_PCT and err <= nz + 1:
            verdict = f"within noise (the floor {nz:.1f}% is above the goal; the error is within it + 1 point)"
        else:
            verdict = "MISSED"
        print(f"   goal: {name} predicted within {GOAL_PCT:g}%: {verdict}")
    if not a["moved"]:
        print(f"   not moved: {a['reason']}")
    if a["replans"]:
        apart = "" if any(r["measured_chosen_s"] is not None for r in a["replans"]) else \
            "; the run reports no time after it"
        print(f"   a re-plan follows a drift of the busy times from the model's{apart}")
    if a.get("host_cpu_change") is not None:
        per = ", ".join(f"rank {i} {b * 1e6:.2f} -> {c * 1e6:.2f}"
                        for i, (b, c) in enumerate(zip(a["cpu_per_row_from_s"], a["cpu_per_row_chosen_s"]))
                        if b is not None and c is not None)
        print(f"   CPU time per row in stages, before the plan -> after the move (us): {per}")
        print(f"     median change {100 * (a['host_cpu_change'] - 1):+.1f}%: the host's own speed and the rows' "
              f"cost, which the model takes as recorded")
    moves = [x for x in [a] + a["replans"] if x["moved"] and x.get("measured_move_s") is not None]
    move_ms = " + ".join(f"{x['measured_move_s'] * 1e3:.0f}" for x in moves) or "0"
    plan_ms = sum(x["plan_s"] for x in [a] + a["replans"]) * 1e3
    print(f"   whole run: Block {blk['elapsed_s']:.2f} s (its own run, {ms(blk['iter_median_s'])} ms per iteration), "
          f"--auto {auto['elapsed_s']:.2f} s")
    print(f"     (with the recording, plans {plan_ms:.1f} ms and moves {move_ms} ms): "
          f"{blk['elapsed_s'] / auto['elapsed_s']:.2f}x")
    n = sum(a["chosen_dist"])
    prop = [round(n * x / sum(powers)) for x in powers]
    prop[-1] = n - sum(prop[:-1])
    off = sum(abs(c - q) for c, q in zip(a["chosen_dist"], prop)) // 2
    print(f"   split by CPU power alone: {dist(prop)}; the plan is {off} rows ({off / n * 100:.1f}%) "
          f"from it (it prices messages too)")
    print(f"   mheta predict offline, on the trace (recorded on {dist(trace['dist'])}): "
          f"{dist(pb['dist'])} {ms(pb['per_iteration_s'])} ms, {dist(pc['dist'])} {ms(pc['per_iteration_s'])} ms")
    same = abs(blk["checksum"] - auto["checksum"]) <= 1e-12 * abs(blk["checksum"])
    yes = lambda b: "yes" if b else "NO"
    print(f"   answer verified: Block {yes(blk['verified'])}, --auto {yes(auto['verified'])} "
          f"(--auto's error {auto['error']:.2e}; same checksum as Block: {yes(same)})")
    return 0 if blk["verified"] and auto["verified"] else 1


def main():
    if len(sys.argv) != 3 or sys.argv[1] not in ("profile", "report"):
        print(__doc__.strip(), file=sys.stderr)
        return 2
    if sys.argv[1] == "profile":
        profile(sys.argv[2])
        return 0
    return report(sys.argv[2])


if __name__ == "__main__":
    sys.exit(main())
