#!/usr/bin/env python3
"""Seeds an OUT of scripts/results.sh from the published page, so that
some studies can be rerun into it and the others kept as published:

    scripts/results_seed.py OUT
    RESULTS_ONLY="NAME ..." scripts/results.sh [--quick] OUT

For each section of docs/RESULTS.md it writes OUT/NAME/table.txt (the
section's text block) and OUT/NAME/headline.txt (the study's result in
the README's results table), copies the section's plots from
docs/results/, and lists the study in OUT/index.tsv with the command,
emulation, date, machine and duration the page gives, so each kept
section still says when and where it ran. NAME is the study's name in
scripts/results.sh, found by its title. An OUT that already has an
index.tsv is refused (it holds real runs).
"""
import os
import re
import shutil
import sys

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def names():
    """Title -> name, from the study calls in scripts/results.sh."""
    text = open(os.path.join(HERE, "scripts", "results.sh")).read()
    out = {t: n for n, t in re.findall(r'study ([\w-]+) "([^"$]+)"', text)}
    loop = re.search(r'for s in ([\w -]+); do\s*\n\s*study "\$s" "\$s study"', text)
    for n in (loop.group(1).split() if loop else []):
        out[f"{n} study"] = n
    return out


def sections(page):
    """(title, lines) of each '## ' section of the page."""
    cur = None
    for line in page.splitlines():
        if line.startswith("## "):
            if cur:
                yield cur
            cur = (line[3:].strip(), [])
        elif cur:
            cur[1].append(line)
    if cur:
        yield cur


def readme_results():
    """Title -> result column of the README's results table, without the
    '(ran ... on ...)' that results_md.py adds again."""
    text = open(os.path.join(HERE, "README.md")).read()
    block = re.search(r"<!-- results:begin.*?<!-- results:end -->", text, re.S)
    out = {}
    for row in (block.group(0).splitlines() if block else []):
        f = [c.strip() for c in row.strip().strip("|").split("|")]
        if len(f) == 4 and f[0] not in ("study", "---"):
            out[f[0]] = re.sub(r" \(ran \d{4}-\d{2}-\d{2} .*\)$", "", f[2])
    return out


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: scripts/results_seed.py OUT")
    out = sys.argv[1]
    index = os.path.join(out, "index.tsv")
    if os.path.exists(index):
        sys.exit(f"results_seed: {index} exists: seed an empty OUT")
    page_path = os.path.join(HERE, "docs", "RESULTS.md")
    try:
        page = open(page_path).read()
    except OSError as e:
        sys.exit(f"results_seed: {page_path}: {e}")
    by_title, results = names(), readme_results()
    # A section that names no machine and ran before the page was
    # written ran on the page's machine (its header's CPUs); one that ran
    # later, on a machine not recorded. Either way not on this one.
    head = re.search(r"^- machine: ([^,]+)", page, re.M)
    written = re.search(r"^- written: (\d{4}-\d{2}-\d{2} \d{2}:\d{2} UTC)", page, re.M)
    unknown = "a machine not recorded"
    rows = []
    for title, lines in sections(page):
        name = by_title.get(title)
        if not name:
            sys.exit(f"results_seed: {page_path}: section '{title}' is no study of scripts/results.sh")
        field = lambda key: next((l[len(key):] for l in lines if l.startswith(key)), None)
        cmd, emulation, ran = field("- command: "), field("- emulation: "), field("- ran ")
        m = re.match(r"(.+?)(?: on (.+))?, took (\d+) s$", ran or "")
        if not (cmd and emulation and m):
            sys.exit(f"results_seed: {page_path}: section '{title}' lacks its command, emulation or run line")
        when, host, secs = m.group(1), m.group(2), m.group(3)
        if not host:
            before = head and written and when <= written.group(1)
            host = head.group(1) if before else unknown
        d = os.path.join(out, name)
        os.makedirs(d, exist_ok=True)
        text, inside = [], False
        for l in lines:
            if l == "```text" and not inside:
                inside = True
            elif l == "```" and inside:
                break
            elif inside:
                text.append(l)
        open(os.path.join(d, "table.txt"), "w").write("\n".join(text) + "\n")
        if title in results:
            open(os.path.join(d, "headline.txt"), "w").write(results[title] + "\n")
        for svg in re.findall(r"!\[[^]]*\]\(results/([^)]+)\)", "\n".join(lines)):
            if not svg.startswith(name + "-"):
                sys.exit(f"results_seed: {page_path}: plot {svg} of '{title}' is not named after {name}")
            # results.sh names a plot OUT/NAME/work/X.svg NAME-work-X.svg.
            rest = svg[len(name) + 1:]
            if rest.startswith("work-"):
                rest = os.path.join("work", rest[len("work-"):])
            os.makedirs(os.path.dirname(os.path.join(d, rest)), exist_ok=True)
            shutil.copy(os.path.join(HERE, "docs", "results", svg), os.path.join(d, rest))
        rows.append("\t".join([name, title, emulation, "0", secs, cmd.strip("`"), when, host]))
    os.makedirs(out, exist_ok=True)
    with open(index + ".tmp", "w") as fh:
        fh.write("".join(r + "\n" for r in rows))
    os.replace(index + ".tmp", index)
    print(f"results_seed: {len(rows)} studies from {page_path} into {out}")


if __name__ == "__main__":
    main()
