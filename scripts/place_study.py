#!/usr/bin/env python3
"""Helper of scripts/place-study.sh.

`chosen PLACE_JSON SPEC`: print the chosen master's rank and its
workers' ranks (comma-separated), ranks in the spec's host order.
`report OUT SPEC EMULATION`: from OUT/place-<task>.json and
OUT/runs.jsonl write OUT/place.json and OUT/place.svg and print the
study's table.
"""
import json
import os
import statistics
import sys
import tomllib

from study import stamp


def host_names(spec):
    with open(spec, "rb") as f:
        return [h["name"] for h in tomllib.load(f)["host"]]


def chosen(place_json, spec):
    names = host_names(spec)
    c = json.load(open(place_json))["chosen"]
    print(names.index(c["master"]), ",".join(str(names.index(w)) for w in c["workers"]))


def median_noise(xs):
    m = statistics.median(xs)
    return m, (max(xs) - min(xs)) / m if m > 0 else 0.0


def task_rows(out, task, names, runs):
    place = json.load(open(os.path.join(out, f"place-{task}.json")))
    rows = []
    for r in place["rows"]:
        rank = names.index(r["master"])
        act = [v["elapsed_s"] for v in runs if v["task"] == task and v["master"] == rank and v["study"]["kind"] == "all"]
        if not act:
            continue
        a, noise = median_noise(act)
        sim = r["simulated_all_s"]
        rows.append({
            "master": r["master"], "rate": r["rate"], "model_s": place["inputs"]["tasks"] / r["rate"],
            "simulated_s": sim, "actual_s": a, "noise": noise, "runs": len(act),
            "sim_err": (sim - a) / a, "workers": r["workers"],
        })
    ch = place["chosen"]
    best = min(rows, key=lambda x: x["actual_s"])
    mine = next(x for x in rows if x["master"] == ch["master"])
    sub = [v["elapsed_s"] for v in runs if v["task"] == task and v["study"]["kind"] == "chosen"]
    sub_m, sub_noise = median_noise(sub) if sub else (None, None)
    return {
        "task": task, "rows": rows, "chosen_master": ch["master"], "chosen_workers": ch["workers"],
        "actual_best": best["master"], "chosen_over_best": mine["actual_s"] / best["actual_s"] - 1,
        "chosen_workers_actual_s": sub_m, "chosen_workers_noise": sub_noise,
        "chosen_workers_simulated_s": ch["simulated_s"],
        "chosen_workers_over_all": (sub_m / mine["actual_s"] - 1) if sub_m else None,
        "max_abs_sim_err": max(abs(x["sim_err"]) for x in rows),
    }


def svg(study, path):
    """Grouped bars per task: model, simulated and actual time per master."""
    w, h, pad = 360 * len(study), 300, 50
    colors = {"model_s": "#9ecae1", "simulated_s": "#3182bd", "actual_s": "#e6550d"}
    top = max(max(r["actual_s"], r["simulated_s"], r["model_s"]) for t in study for r in t["rows"]) * 1.15
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h + 60}" font-family="sans-serif" font-size="11">']
    for i, t in enumerate(study):
        x0 = i * 360 + pad
        out.append(f'<text x="{x0 + 140}" y="16" text-anchor="middle" font-size="13">{t["task"]}: time by master host</text>')
        out.append(f'<line x1="{x0}" y1="{h}" x2="{x0 + 290}" y2="{h}" stroke="black"/>')
        out.append(f'<line x1="{x0}" y1="30" x2="{x0}" y2="{h}" stroke="black"/>')
        for k in range(5):
            y = h - (h - 30) * k / 4
            out.append(f'<text x="{x0 - 4}" y="{y + 4:.0f}" text-anchor="end">{top * k / 4:.2f}</text>')
        for j, r in enumerate(t["rows"]):
            gx = x0 + 10 + j * 70
            for k, key in enumerate(colors):
                bh = (h - 30) * r[key] / top
                out.append(f'<rect x="{gx + k * 18}" y="{h - bh:.1f}" width="16" height="{bh:.1f}" fill="{colors[key]}"/>')
            star = "*" if r["master"] == t["chosen_master"] else ""
            out.append(f'<text x="{gx + 27}" y="{h + 14}" text-anchor="middle">{r["master"]}{star}</text>')
        out.append(f'<text x="{x0 - 40}" y="{h // 2}" transform="rotate(-90 {x0 - 40} {h // 2})">seconds</text>')
    for k, (key, c) in enumerate(colors.items()):
        out.append(f'<rect x="{pad + k * 140}" y="{h + 30}" width="12" height="12" fill="{c}"/>')
        out.append(f'<text x="{pad + k * 140 + 16}" y="{h + 40}">{key[:-2]}</text>')
    out.append(f'<text x="{pad + 420}" y="{h + 40}">* chosen master</text></svg>')
    open(path, "w").write("\n".join(out) + "\n")


def report(out, spec, emulation):
    names = host_names(spec)
    runs = [json.loads(l) for l in open(os.path.join(out, "runs.jsonl")) if l.strip()]
    bad = [v for v in runs if not v.get("verified")]
    study = [task_rows(out, t, names, runs) for t in ("mandel", "ep")]
    doc = {
        **stamp(f"scripts/place-study.sh {out}"), "cluster": spec, "cpu_emulation": emulation,
        "runs": len(runs), "unverified_runs": len(bad), "tasks": study,
    }
    json.dump(doc, open(os.path.join(out, "place.json"), "w"), indent=1)
    svg(study, os.path.join(out, "place.svg"))
    for t in study:
        print(f"\n{t['task']}: chosen {t['chosen_master']} with {','.join(t['chosen_workers'])}; actual best {t['actual_best']} "
              f"(chosen {100 * t['chosen_over_best']:+.1f}%); max |sim - actual| {100 * t['max_abs_sim_err']:.1f}%")
        print(f"{'master':<7}{'rate/s':>9}{'model s':>9}{'sim s':>8}{'actual s':>10}{'noise':>7}{'sim err':>9}")
        for r in t["rows"]:
            print(f"{r['master']:<7}{r['rate']:>9.1f}{r['model_s']:>9.3f}{r['simulated_s']:>8.3f}{r['actual_s']:>10.3f}"
                  f"{100 * r['noise']:>6.0f}%{100 * r['sim_err']:>+8.1f}%")
        if t["chosen_workers_actual_s"]:
            print(f"chosen workers: actual {t['chosen_workers_actual_s']:.3f} s (noise {100 * t['chosen_workers_noise']:.0f}%), "
                  f"simulated {t['chosen_workers_simulated_s']:.3f} s, {100 * t['chosen_workers_over_all']:+.1f}% against all workers")
    print(f"\n{len(runs)} runs, {len(bad)} not verified")


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "chosen":
        chosen(sys.argv[2], sys.argv[3])
    elif len(sys.argv) == 5 and sys.argv[1] == "report":
        report(sys.argv[2], sys.argv[3], sys.argv[4])
    else:
        sys.exit("usage: place_study.py chosen PLACE_JSON SPEC | report OUT SPEC EMULATION")
