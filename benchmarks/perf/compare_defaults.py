"""Before / after summary of two runs of ``bench_defaults.py`` (their per-case tables), per solver
and per (solver, problem family): converged / measured cases. Appends the section to the "after"
file and prints it (for the docs).

    python benchmarks/perf/compare_defaults.py benchmarks/results/defaults_before.md benchmarks/results/defaults.md
"""
from __future__ import annotations

import sys
from collections import defaultdict
from pathlib import Path


def cases(path):
    """``{(solver, family, data, strength): (converged, honest, returned)}`` from a per-case table."""
    out = {}
    for line in Path(path).read_text().splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) != 12 or cells[0] in ("solver", "---") or cells[3] in ("-", "(rest)", "strength"):
            continue
        out[tuple(cells[:4])] = (cells[4] == "yes", cells[10] == "yes", True)
    return out


def tally(rows, key):
    t = defaultdict(lambda: [0, 0])
    for k, (conv, _, _) in rows.items():
        t[key(k)][0] += conv
        t[key(k)][1] += 1
    return t


def main(before_path, after_path):
    before, after = cases(before_path), cases(after_path)
    solvers = list(dict.fromkeys(k[0] for k in after))
    tb, ta = tally(before, lambda k: k[0]), tally(after, lambda k: k[0])
    fb, fa = tally(before, lambda k: k[:2]), tally(after, lambda k: k[:2])
    lines = ["| solver | converged before (returned) | converged after (returned) | per problem family, after |",
             "|---|---|---|---|"]
    for s in solvers:
        fams = ", ".join(f"{f} {fa[(s, f)][0]}/{fa[(s, f)][1]}" for (s2, f) in fa if s2 == s)
        lines.append(f"| `{s}` | {tb[s][0]} ({tb[s][1]}) | {ta[s][0]} ({ta[s][1]}) | {fams} |")
    allb = sum(v[0] for v in tb.values()), sum(v[1] for v in tb.values())
    alla = sum(v[0] for v in ta.values()), sum(v[1] for v in ta.values())
    dishonest = sum(not h for _, h, _ in after.values())
    lines.append(f"| all | {allb[0]} ({allb[1]}) | {alla[0]} ({alla[1]}) | |")
    text = ("\n".join(lines) + f"\n\nReturned cases count within the 60 s limit per (solver, family, dataset); "
            f"certified gaps that were not valid bounds after: {dishonest} of {len(after)}.\n")
    with open(after_path, "a") as f:
        f.write(f"\n## Before ({Path(before_path).name}) and after\n\n{text}")
    print(text)


if __name__ == "__main__":
    main(*sys.argv[1:3])
