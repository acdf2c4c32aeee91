#!/usr/bin/env python3
"""Writes RESULTS.md from the studies scripts/results.sh ran.

    scripts/results_md.py OUT COMMAND

Reads OUT/index.tsv (one line per study: name, title, emulation, exit
status, seconds, command, when it ran and, where given, the machine's
CPUs) and each study's OUT/NAME/table.txt, and writes two copies of the
page: OUT/RESULTS.md (SVG links into OUT) and OUT/RESULTS-docs.md (SVG
links into docs/results/, where results.sh copies them). Every figure on the page is what a study printed; nothing is typed.
"""
import datetime
import glob
import json
import os
import re
import platform
import subprocess
import sys


def machine():
    cpu = "unknown CPU"
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    mem = ""
    try:
        kb = int(open("/proc/meminfo").readline().split()[1])
        mem = f", {kb / 2**20:.0f} GiB"
    except (OSError, ValueError, IndexError):
        pass
    mpi = subprocess.run(["mpirun", "--version"], capture_output=True, text=True).stdout
    mpi = mpi.splitlines()[0] if mpi else "mpirun: unknown"
    return f"{os.cpu_count()} × {cpu}{mem}, Linux {platform.release()}, {mpi}"


def studies(out):
    path = os.path.join(out, "index.tsv")
    try:
        lines = open(path).read().splitlines()
    except OSError as e:
        sys.exit(f"results_md: {path}: {e}")
    for n, line in enumerate(lines, 1):
        f = line.split("\t")
        if len(f) not in (7, 8):
            sys.exit(f"results_md: {path}:{n}: expected 7 or 8 tab-separated fields, got {len(f)}")
        yield dict(name=f[0], title=f[1], emulation=f[2], rc=int(f[3]), secs=int(f[4]), cmd=f[5], ran=f[6],
                   host=f[7] if len(f) == 8 else "")


def script_order():
    """The studies' names in the order scripts/results.sh runs them: the
    page keeps that order whichever were rerun last."""
    text = open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "results.sh")).read()
    order = []
    for m in re.finditer(r'^\s*study ([\w-]+) "|^for s in ([\w -]+); do', text, re.M):
        order += [m.group(1)] if m.group(1) else m.group(2).split()
    return order


def svgs(out, name):
    found = []
    for root, _, files in os.walk(os.path.join(out, name)):
        found += [os.path.relpath(os.path.join(root, f), out) for f in files if f.endswith(".svg")]
    return sorted(found)


def section(out, s, svg_link):
    table = os.path.join(out, s["name"], "table.txt")
    text = open(table).read().rstrip() if os.path.exists(table) else ""
    lines = [f"## {s['title']}", "",
             f"- command: `{s['cmd']}`",
             f"- emulation: {s['emulation']}",
             f"- ran {s['ran']}" + (f" on {s['host']}" if s["host"] else "") + f", took {s['secs']} s" + ("" if s["rc"] == 0 else f"; **failed with exit status {s['rc']}**"),
             ""]
    if s["rc"] != 0:
        err = os.path.join(out, s["name"], "stderr.txt")
        tail = open(err).read().splitlines()[-15:] if os.path.exists(err) else []
        lines += ["```text", *tail, "```", ""]
    if text:
        lines += ["```text", text, "```", ""]
    for f in svgs(out, s["name"]):
        lines += [f"![{os.path.basename(f)}]({svg_link(f)})", ""]
    return lines


def page(out, cmd, all_studies, svg_link):
    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    head = ["# Results", "",
            "Every table and plot below is what a study printed, written by",
            f"`{cmd}` (scripts/results.sh); run it again to regenerate this page.", "",
            f"- written: {now} (each study says when it ran: RESULTS_ONLY reruns some into the same OUT)",
            f"- machine: {machine()} (a study rerun elsewhere names its own CPUs)",
            "- emulation: given per study (docs/EMULATION.md says what each method does and does not test)",
            "- noise: each accuracy table gives, in parentheses, the spread of one distribution's repeated runs (the noise floor);",
            "  its second table the runs the host disturbed (flagged, kept and counted), the mean diff without them,",
            "  the mean diff's bootstrap 95% interval, and per goal whether it was met, within the noise, or missed", ""]
    head += ["| study | took | status |", "|---|---|---|"]
    head += [f"| [{s['title']}](#{anchor(s['title'])}) | {s['secs']} s | {'ok' if s['rc'] == 0 else 'failed'} |"
             for s in all_studies]
    head.append("")
    for s in all_studies:
        head += section(out, s, svg_link)
    return "\n".join(head) + "\n"


def anchor(title):
    keep = "".join(c for c in title.lower() if c.isalnum() or c in " -")
    return keep.replace(" ", "-")


def accuracy_headline(out, name):
    cells = []
    for f in sorted(glob.glob(os.path.join(out, name, "work", "*.json"))):
        try:
            d = json.load(open(f))
        except (OSError, ValueError):
            continue
        if isinstance(d, dict) and "mean_diff_pct" in d:
            cells.append(d)
    if not cells:
        return None
    noise = sorted(c["noise_pct"] for c in cells if c.get("noise_pct") is not None)
    mid = f", noise floor {noise[len(noise) // 2]:.1f}%" if noise else ""
    clean = [c["mean_diff_unflagged_pct"] for c in cells if c.get("mean_diff_unflagged_pct") is not None]
    runs = sum(c.get("total_runs", 0) for c in cells)
    flagged = ""
    if runs:
        flagged = f"; {sum(c.get('flagged_runs', 0) for c in cells)} of {runs} runs flagged as disturbed"
        if clean:
            flagged += f", mean error without them {sum(clean) / len(clean):.1f}%"
    return (f"{len(cells)} cells: mean error {sum(c['mean_diff_pct'] for c in cells) / len(cells):.1f}%, "
            f"max {max(c['max_diff_pct'] for c in cells):.1f}%, predicted best within "
            f"{max(c['predicted_best_gap_pct'] for c in cells):.1f}% of the actual best{mid}{flagged}")


# A study's headline: the line of its table that starts with one of these.
LINES = {
    "auto-speedup": r"^# median ratio|^# auto against",
    "auto-het4": r"^# median ratio|^# auto against",
    "auto-net4": r"^# median ratio|^# auto against",
    "auto-uniform": r"^# median ratio|^# auto against",
    "move-rate": r"^# moves of",
    "move-cost": r"^# absolute error",
    "model-bench": r"^growth, jacobi|^# planning at",
    "gather": r"^# (jacobi|cg): .* B a rank",
    "slowdown": r"^predicted from what",
    "stochastic": r"^bursty: coverage|^goals on the run's own",
    "risk": r"^quantile plan against",
    "parallel": r"aggregate slowdown",
    "hog": r"^--auto under a hog",
    "sensor": r"^sensors against the kernel",
    "place": r"chosen|headline",
    "scale": r"^max error .*mean|^verdicts: .* of \d+ \(goal",
}


def matrix(lines, title):
    """The host-by-host matrix under the '# Link matrix: TITLE' line."""
    for i, l in enumerate(lines):
        if l.startswith("# Link matrix: " + title):
            hosts = lines[i + 1].lstrip("# ").split()
            rows = {}
            for r in lines[i + 2:i + 2 + len(hosts)]:
                f = r.split()
                rows[f[0]] = dict(zip(hosts, f[1:]))
            return hosts, rows
    return None


def links_headline(lines):
    ratio = matrix(lines, "measured bandwidth over")
    lat = matrix(lines, "latency, 8 B")
    added = matrix(lines, "the spec's added")
    if not ratio:
        return None
    hosts, rows = ratio
    def pairs(m, h):
        v = [float(m[h][o]) for o in hosts if o != h and m[h][o] != "-"]
        v += [float(m[o][h]) for o in hosts if o != h and m[o][h] != "-"]
        return v
    out = ["measured/shaped rate of each host's pairs: " + ", ".join(
        f"{h} {min(pairs(rows, h)):.2f}-{max(pairs(rows, h)):.2f}" for h in hosts if pairs(rows, h))]
    if lat and added:
        for h in hosts:
            a = [x for x in pairs(added[1], h)]
            if a and min(a) > 0:
                v = pairs(lat[1], h)
                out.append(f"{h}'s pairs one-way {min(v):.0f}-{max(v):.0f} us (shaped +{max(a):.0f})")
    return "; ".join(out)


def headline(out, s):
    if s["rc"] != 0:
        return "failed"
    # A study kept from the published page (scripts/results_seed.py).
    seeded = os.path.join(out, s["name"], "headline.txt")
    if os.path.exists(seeded):
        return open(seeded).read().strip()
    if s["name"].startswith("accuracy"):
        return accuracy_headline(out, s["name"]) or "no cells"
    table = os.path.join(out, s["name"], "table.txt")
    text = open(table).read().splitlines() if os.path.exists(table) else []
    if s["name"].startswith("links"):
        return links_headline(text) or "no link matrix"
    pat = LINES.get(s["name"])
    hits = [l.strip("# ").strip() for l in text if pat and re.search(pat, l)]
    return "; ".join(hits[:2]) if hits else (text[-1] if text else "")


def readme_block(out, cmd, all_studies):
    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d")
    rows = ["<!-- results:begin (written by scripts/results.sh; do not edit) -->",
            f"Written by `{cmd}` on {now}, {machine()}; tables and plots in",
            "[docs/RESULTS.md](docs/RESULTS.md).", "",
            "| study | emulation | result | regenerate |", "|---|---|---|---|"]
    for s in all_studies:
        h = headline(out, s).replace("|", "/")
        if s["host"]:
            h += f" (ran {s['ran']} on {s['host']})"
        rows.append(f"| {s['title']} | {s['emulation']} | {h} | `{s['cmd']}` |")
    rows.append("<!-- results:end -->")
    return "\n".join(rows) + "\n"


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: scripts/results_md.py OUT COMMAND")
    out, cmd = sys.argv[1], sys.argv[2]
    rank = {n: k for k, n in enumerate(script_order())}
    all_studies = sorted(studies(out), key=lambda s: rank.get(s["name"], len(rank)))
    here = page(out, cmd, all_studies, lambda f: f)
    docs = page(out, cmd, all_studies, lambda f: "results/" + f.replace("/", "-"))
    block = readme_block(out, cmd, all_studies)
    for name, text in [("RESULTS.md", here), ("RESULTS-docs.md", docs), ("README-block.md", block)]:
        tmp = os.path.join(out, name + ".tmp")
        with open(tmp, "w") as fh:
            fh.write(text)
        os.replace(tmp, os.path.join(out, name))


if __name__ == "__main__":
    main()
