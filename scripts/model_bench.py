#!/usr/bin/env python3
"""The model's cost against P, as a table and a plot.

Usage: scripts/model_bench.py OUT

Runs `cargo bench -q -p mheta-model --bench model` (one evaluation and a
whole GBS on synthetic traces up to 1024 ranks with every pair listed,
then up to 16384 ranks, 64 a host, on profiles by kind), prints what it
printed, and draws OUT/model-scale.svg from its last table: one
evaluation and one GBS against P on log scales, for the Jacobi-like
trace and the same with out-of-core I/O, beside the line a linear
growth from the smallest P would follow. OUT/model-bench.json keeps the
table and the stamp.
"""
import json
import math
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from study import ROOT, stamp  # noqa: E402

CMD = ["cargo", "bench", "-q", "-p", "mheta-model", "--bench", "model"]


def scale_rows(text):
    """The rows of the bench's last table: (P, build ms, jacobi us, gbs ms, io us, io gbs ms,
    gbs ms on every core, io gbs ms on every core)."""
    rows, inside = [], False
    for line in text.splitlines():
        if line.strip().startswith("ranks build"):
            inside = True
            continue
        if inside:
            f = line.replace("|", " ").split()
            if len(f) == 8 and f[0].isdigit():
                p, build, ev, gbs, gbs_n, io_ev, io_gbs, io_gbs_n = f
                rows.append((int(p), *map(float, (build, ev, gbs, io_ev, io_gbs, gbs_n, io_gbs_n))))
            elif line.startswith("#"):
                break
    return rows


def svg(rows, path):
    """Two log-log panels: one evaluation (us) and one GBS (ms) against P."""
    w, h, pad, gap = 330, 260, 55, 40
    panels = [("one evaluation (us)", 2, 4), ("a whole GBS (ms)", 3, 5)]
    ps = [r[0] for r in rows]
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{2 * (w + gap) + pad}" height="{h + 90}" '
           'font-family="sans-serif" font-size="11">']
    lx = lambda p: math.log10(p)  # noqa: E731
    x_lo, x_hi = lx(min(ps)) - 0.1, lx(max(ps)) + 0.1
    for k, (title, a, b) in enumerate(panels):
        x0 = pad + k * (w + gap)
        vals = [r[a] for r in rows] + [r[b] for r in rows]
        lin = [rows[0][a] * p / ps[0] for p in ps]
        y_lo = math.floor(math.log10(min(vals + lin)))
        y_hi = math.ceil(math.log10(max(vals + lin)))
        X = lambda p: x0 + (lx(p) - x_lo) / (x_hi - x_lo) * w  # noqa: E731
        Y = lambda v: 30 + (y_hi - math.log10(v)) / (y_hi - y_lo) * (h - 30)  # noqa: E731
        out.append(f'<text x="{x0 + w / 2}" y="16" text-anchor="middle" font-size="13">{title} against P</text>')
        out.append(f'<line x1="{x0}" y1="{h}" x2="{x0 + w}" y2="{h}" stroke="black"/>')
        out.append(f'<line x1="{x0}" y1="30" x2="{x0}" y2="{h}" stroke="black"/>')
        for e in range(y_lo, y_hi + 1):
            out.append(f'<text x="{x0 - 4}" y="{Y(10 ** e) + 4:.0f}" text-anchor="end">1e{e}</text>')
            out.append(f'<line x1="{x0}" y1="{Y(10 ** e):.1f}" x2="{x0 + w}" y2="{Y(10 ** e):.1f}" stroke="#ddd"/>')
        for p in ps:
            out.append(f'<text x="{X(p):.1f}" y="{h + 14}" text-anchor="middle">{p}</text>')
        series = [([r[a] for r in rows], "#3182bd", ""), ([r[b] for r in rows], "#e6550d", ""),
                  (lin, "#888", ' stroke-dasharray="4 3"')]
        for ys, color, dash in series:
            pts = " ".join(f"{X(p):.1f},{Y(v):.1f}" for p, v in zip(ps, ys))
            out.append(f'<polyline points="{pts}" fill="none" stroke="{color}" stroke-width="2"{dash}/>')
            for p, v in zip(ps, ys):
                if not dash:
                    out.append(f'<circle cx="{X(p):.1f}" cy="{Y(v):.1f}" r="3" fill="{color}"/>')
        out.append(f'<text x="{x0 + w / 2}" y="{h + 30}" text-anchor="middle">ranks (64 a host; profile by kind)</text>')
    legend = [("#3182bd", "jacobi"), ("#e6550d", "jacobi with out-of-core I/O"), ("#888", "linear from the smallest P (jacobi)")]
    for k, (c, name) in enumerate(legend):
        out.append(f'<rect x="{pad + k * 220}" y="{h + 50}" width="12" height="12" fill="{c}"/>')
        out.append(f'<text x="{pad + k * 220 + 16}" y="{h + 60}">{name}</text>')
    out.append("</svg>")
    with open(path, "w") as f:
        f.write("\n".join(out) + "\n")


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    out = os.path.abspath(sys.argv[1])
    os.makedirs(out, exist_ok=True)
    run = subprocess.run(CMD, cwd=ROOT, capture_output=True, text=True)
    if run.returncode != 0:
        sys.exit(f"model-bench: {' '.join(CMD)} failed:\n{run.stderr[-2000:]}")
    print(run.stdout, end="")
    rows = scale_rows(run.stdout)
    if not rows:
        sys.exit("model-bench: the bench printed no table against P")
    svg(rows, os.path.join(out, "model-scale.svg"))
    doc = {**stamp("scripts/model_bench.py OUT"), "scale": [
        dict(zip(["ranks", "build_ms", "jacobi_eval_us", "jacobi_gbs_ms", "io_eval_us", "io_gbs_ms",
                  "jacobi_gbs_all_cores_ms", "io_gbs_all_cores_ms"], r))
        for r in rows]}
    with open(os.path.join(out, "model-bench.json"), "w") as f:
        json.dump(doc, f, indent=1)


if __name__ == "__main__":
    main()
