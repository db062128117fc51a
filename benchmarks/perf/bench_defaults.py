"""Defaults sweep (issue "Defaults that converge"): every public solver with its DEFAULT settings
(only ``tol`` set, 1e-6 relative) on every problem family it declares it accepts (the columns of
the compatibility matrix), on 11 real datasets of different shapes and scalings, at 3 strengths one
order of magnitude apart, against a tight reference.

Per case: converged, certified gap, true suboptimality (against the reference), steps, time, status,
whether the gap is a valid upper bound on the true suboptimality, and whether a solve that stopped
short warned (``jp.ConvergenceWarning``). Each (solver, family, dataset) triple runs in its own
process with a wall-clock limit (``--limit``, default 60 s per solve: 180 s for its 3 strengths, or each
solve in a process of its own with ``--per-solve``; compile included), in float64 at tol 1e-6 and, with
``--dtypes float64 float32``, in float32 with x64 off at the default tol, so
a solve that does not return is recorded as such. Writes ``benchmarks/results/defaults.md``.

References (``sweep_problems.reference``) are computed once and cached in
``benchmarks/results/defaults_refs.json`` (delete it to recompute).

    python benchmarks/perf/bench_defaults.py [--data heart_scale ...] [--solvers FISTA ...] [--families svm ...]
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(Path(__file__).resolve().parent), str(Path(__file__).resolve().parents[1])]  # this group, harness
import harness  # noqa: E402
import sweep_problems as sp  # noqa: E402

REFS = harness.RESULTS / "defaults_refs.json"

CHILD = r'''
import json, os, sys, time, warnings
sys.path.insert(0, sys.argv[5])
import jax
dtype = sys.argv[7]
jax.config.update("jax_enable_x64", dtype == "float64")
import numpy as np
import jaxprox as jp
import sweep_problems as sp
name, family, data, refs = sys.argv[1], sys.argv[2], sys.argv[3], json.loads(sys.argv[4])
X, y = sp.load(data)
X, y = X.astype(dtype), y.astype(dtype)
# float64: tol 1e-6; float32: the solver's default (jaxprox.defaults.DEFAULT_TOL: 1e-5); "default":
# jp.solve(problem), the solver jaxprox.capabilities.default_solver picks, at the data's default tol
solver = None if name == "default" else getattr(jp, name)(tol=1e-6) if dtype == "float64" else getattr(jp, name)()
for s in json.loads(sys.argv[6]):
    ref = refs[str(s)]
    P = sp.build(family, X, y, s)
    picked = type(solver if solver is not None else jp.capabilities.default_solver(P)).__name__
    t = time.perf_counter()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        sol = jp.solve(P) if solver is None else jp.solve(P, solver)
        jax.block_until_ready(sol.params)
    dt = time.perf_counter() - t
    warned = [str(w.message) for w in caught if issubclass(w.category, jp.ConvergenceWarning)]
    f = float(P.objective(sol.params))
    print("CASE" + json.dumps(dict(
        strength=s, converged=bool(sol.converged), gap=float(sol.gap), sub=f - ref,
        rel=(f - ref) / max(abs(ref), 1e-12), steps=int(sol.steps), time=dt, status=sol.status_name,
        honest=bool(float(sol.gap) >= (f - ref) - (1e-9 if dtype == "float64" else 1e-6) * (1 + abs(ref))),
        warned=bool(warned), why=warned[0][:200] if warned else "", picked=picked)), flush=True)
'''


def references(families, datas):
    """``{family|data|strength: P*}``, cached on disk."""
    cache = json.loads(REFS.read_text()) if REFS.exists() else {}
    for data in datas:
        X = y = None
        for family in families:
            for s in sp.STRENGTHS[family]:
                key = f"{family}|{data}|{s}"
                if key in cache:
                    continue
                if X is None:
                    X, y = sp.load(data)
                t = time.perf_counter()
                try:
                    value, how = sp.reference(family, X, y, s)
                except Exception as e:  # recorded: the case is then unmeasured
                    value, how = None, f"reference failed: {type(e).__name__}: {e}"[:160]
                cache[key] = {"value": value, "how": how}
                print(f"ref {key}: {value} ({how}) {time.perf_counter() - t:.1f}s", flush=True)
                REFS.write_text(json.dumps(cache, indent=1, sort_keys=True))
    return cache


def kept_rows(path, rerun, rerun_families, rerun_data, rerun_dtypes=("float64", "float32")):
    """The per-case rows (and their per-solver tally) of an earlier results file except those of the
    solvers in ``rerun`` on the families in ``rerun_families``, the datasets in ``rerun_data`` and
    the dtypes in ``rerun_dtypes`` (a row without a dtype is float64's), so that a subset can be
    re-run into the same table."""
    rows, summary, seen = [], {}, {}
    for line in path.read_text().splitlines() if path.exists() else []:
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        dtype = cells[12] if len(cells) > 12 else "float64"
        if (len(cells) not in (12, 13, 14) or cells[0] in ("solver", "---") or not cells[0].isidentifier()
                or (cells[0] in rerun and cells[1] in rerun_families and cells[2] in rerun_data
                    and dtype in rerun_dtypes)):
            continue
        rows.append(line)
        key = cells[0] if dtype == "float64" else f"{cells[0]} ({dtype})"
        s = summary.setdefault(key, dict(cases=0, measured=0, converged=0, returned=0, honest=0, short=0, warned=0))
        key = (*cells[:3], dtype)
        if cells[3] == "(rest)":  # a triple that did not return: count its missing cases
            s["cases"] += 3 - seen.get(key, 0)
            s["measured"] += 3 - seen.get(key, 0)
            continue
        seen[key] = seen.get(key, 0) + 1
        s["cases"] += 1
        if cells[9] == "reference failed":
            continue
        s["measured"] += 1
        if cells[5] == "-":  # the solve raised or did not return
            continue
        s["returned"] += 1
        s["converged"] += cells[4] == "yes"
        s["honest"] += cells[10] == "yes"
        s["short"] += cells[4] != "yes"
        s["warned"] += cells[4] != "yes" and cells[11] == "yes"
    return rows, summary


def run_triple(args, rows, summary, refs, name, family, data, dtype):
    """The 3 strengths of ``(name, family, data)`` in ``dtype``, in child processes under the
    wall-clock limit (one per solve with ``--per-solve``), appended to ``rows`` / ``summary``."""
    import os

    r = {str(s): refs[f"{family}|{data}|{s}"]["value"] for s in sp.STRENGTHS[family]}
    key = name if dtype == "float64" else f"{name} (float32)"
    s = summary.setdefault(key, dict(cases=0, measured=0, converged=0, returned=0, honest=0, short=0, warned=0))
    s["cases"] += 3
    if any(v is None for v in r.values()):
        rows.append(f"| {name} | {family} | {data} | - | - | - | - | - | - | reference failed | - | - | {dtype} | - |")
        return
    s["measured"] += 3
    env = {**os.environ, "JAX_ENABLE_X64": "1" if dtype == "float64" else "0"}
    groups = [[x] for x in sp.STRENGTHS[family]] if args.per_solve else [list(sp.STRENGTHS[family])]
    for group in groups:
        t0 = time.perf_counter()
        cases, err = harness.run_child(CHILD, name, family, data, json.dumps(r), str(HERE), json.dumps(group), dtype,
                                       tag="CASE", env=env, timeout=args.limit * len(group))
        print(dtype, name, family, data, group, [c["converged"] for c in cases], err,
              f"{time.perf_counter() - t0:.1f}s", flush=True)
        for c in cases:
            rows.append(f"| {name} | {family} | {data} | {c['strength']:g} | {'yes' if c['converged'] else 'no'} | "
                        f"{c['gap']:.2e} | {c['rel']:.2e} | {c['steps']} | {c['time']:.2f} | {c['status']} | "
                        f"{'yes' if c['honest'] else '**NO**'} | "
                        f"{'-' if c['converged'] else ('yes' if c['warned'] else '**NO**')} | {dtype} | "
                        f"{c['picked']} |")
            s["converged"] += c["converged"]
            s["returned"] += 1
            s["honest"] += c["honest"]
            s["short"] += not c["converged"]
            s["warned"] += (not c["converged"]) and c["warned"]
        for x in group[len(cases):]:
            rows.append(f"| {name} | {family} | {data} | {x:g} | no | - | - | - | - | {err} | - | - | {dtype} | - |")


def main():
    import jax

    jax.config.update("jax_enable_x64", True)  # the references built here (ProxNewton, BiasSVM's checks) in float64
    import jaxprox as jp

    ap = argparse.ArgumentParser()
    ap.add_argument("--data", nargs="*", default=list(sp.DATA))
    ap.add_argument("--solvers", nargs="*", default=[c.__name__ for c in jp.capabilities.public_solvers()],
                    help='public solver names, or "default": jp.solve(problem) with the solver '
                         'jaxprox.capabilities.default_solver picks (recorded in the "solver picked" column)')
    ap.add_argument("--families", nargs="*", default=list(sp.FAMILIES))
    ap.add_argument("--limit", type=float, default=60.0, help="wall-clock seconds per solve (compile included)")
    ap.add_argument("--dtypes", nargs="*", default=["float64"], choices=["float64", "float32"],
                    help="float32: a run with x64 off (JAX_ENABLE_X64=0) at the solver's default tol")
    ap.add_argument("--per-solve", action="store_true",
                    help="one process per solve, each under --limit (else one per triple, under 3 x --limit)")
    ap.add_argument("--out", default="defaults")
    ap.add_argument("--keep", action="store_true",
                    help="keep the rows of the (solver, family, dataset) triples not re-run from the existing results file")
    args = ap.parse_args()
    pairs = [(name, fam) for name in args.solvers for fam in args.families if sp.accepted(name, fam)]
    refs = references(sorted({f for _, f in pairs}), args.data)
    rows, summary, t_all = [], {}, time.perf_counter()
    if args.keep:
        rows, summary = kept_rows(harness.RESULTS / f"{args.out}.md", set(args.solvers), set(args.families),
                                  set(args.data), set(args.dtypes))
    for dtype in args.dtypes:
        for name, family in pairs:
            for data in args.data:
                run_triple(args, rows, summary, refs, name, family, data, dtype)
    order = {name: i for i, name in enumerate(args.solvers if not args.keep else
                                             [c.__name__ for c in jp.capabilities.public_solvers()])}
    fams, datas = list(sp.FAMILIES), list(sp.DATA) + list(sp.SYNTHETIC) + list(sp.UNSEEN) + list(sp.HELD_OUT)
    cell = lambda r, i: r.strip().strip("|").split("|")[i].strip()  # noqa: E731
    rows.sort(key=lambda r: (order.get(cell(r, 0), len(order)), fams.index(cell(r, 1)) if cell(r, 1) in fams else 0,
                             datas.index(cell(r, 2)) if cell(r, 2) in datas else 0))
    summary = {k: summary[k] for k in sorted(summary, key=lambda k: order.get(k, len(order)))}
    head = ("| solver | problem | data | strength | converged | certified gap | true rel. subopt. | steps | time (s) "
            "| status | gap >= true subopt. | warned | dtype | solver picked |")
    table = "\n".join([head, "|---" * 14 + "|", *rows])
    tot = {k: sum(v[k] for v in summary.values()) for k in ("cases", "measured", "converged", "returned", "honest",
                                                              "short", "warned")}
    summ = "\n".join(
        ["| solver | converged / measured | returned / measured | honest gaps / returned | warned / stopped short |",
         "|---|---|---|---|---|"]
        + [f"| {k} | {v['converged']} / {v['measured']} | {v['returned']} / {v['measured']} | "
           f"{v['honest']} / {v['returned']} | {v['warned']} / {v['short']} |" for k, v in {**summary, "all": tot}.items()])
    ref_fail = sorted(k for k, v in refs.items() if v["value"] is None)
    data_lines = "\n".join(f"- `{k}`: {v}" for k, v in {**sp.DATA, **sp.SYNTHETIC, **sp.UNSEEN, **sp.HELD_OUT}.items()
                           if k in args.data or (args.keep and k in sp.DATA and set(args.data) & set(sp.DATA)))
    fam_lines = "\n".join(f"- `{k}`: {sp.STRENGTH_MEANING[k]}, s in {sp.STRENGTHS[k]}"
                          for k in (sp.FAMILIES if args.keep else args.families))
    notes = (f"Every public solver on every family it declares it accepts; {tot['cases']} cases, {tot['measured']} "
             f"measured ({'references failed: ' + ', '.join(ref_fail) if ref_fail else 'every reference computed'}). "
             + (f"Each solve in its own process under a {args.limit:g} s wall-clock limit" if args.per_solve else
                f"Each (solver, family, dataset) triple in its own process, {3 * args.limit:g} s wall-clock limit for "
                f"its 3 strengths") + f" (compile included); {', '.join(args.dtypes)} (float64 at tol 1e-6, float32 "
             f"with x64 off at the default tol 1e-5). Total wall time {time.perf_counter() - t_all:.0f} s.")
    sections = [("Per solver", summ), ("Datasets", data_lines), ("Problem families", fam_lines), ("Per case", table)]
    if args.keep:  # a partial re-run: the file's own notes (its history) and hand-written sections stay
        old_notes, extra = earlier_notes(harness.RESULTS / f"{args.out}.md", {h for h, _ in sections})
        if old_notes:
            notes = (f"{old_notes} Then ({harness.machine_info()['date']}) {', '.join(args.solvers)} re-run "
                     f"({', '.join(args.families)}; {', '.join(args.data)}): all {tot['converged']} of {tot['cases']} "
                     f"converged, {tot['returned']} of {tot['measured']} returned, {tot['honest']} of "
                     f"{tot['returned']} certificates valid, {tot['warned']} of {tot['short']} short stops warned.")
        sections += extra
    harness.write_results(args.out, "Defaults sweep: default settings (tol 1e-6) on real data", sections, notes=notes)


def earlier_notes(path, generated: set) -> tuple[str, list]:
    """``(notes, sections)`` of an earlier results file: its notes paragraph (between the machine
    line and the first section) and its sections other than the ``generated`` ones, in order."""
    if not path.exists():
        return "", []
    head, *parts = path.read_text().split("\n## ")
    lines = [x for x in head.splitlines()[1:] if x.strip() and not x.startswith("Machine:")]
    sections = []
    for part in parts:
        title, _, body = part.partition("\n")
        if title.strip() not in generated:
            sections.append((title.strip(), body.strip("\n")))
    return " ".join(lines), sections


if __name__ == "__main__":
    main()
