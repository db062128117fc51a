"""Defaults sweep for the stochastic solvers of paper 003 (issue #27, "Defaults that converge, in
bounded time, on data nobody tuned for"): SDCA, SVRG, APPA, DualAPPA with DEFAULT settings (only
``tol=1e-6`` set, float64) on ridge-logistic regression

    min_w (1/n) sum_i log(1 + exp(-y_i a_i^T w)) + (lam0/2) ||w||^2,   lam0 = s * 10 / n,
    s in {1, 0.1, 0.01},

on datasets of different shapes and scalings, against a ProxNewton reference (``tol=1e-12``; its
``dual_value`` is a certified lower bound on the optimum, so "true suboptimality" is an upper
bound on the real one, off by at most 1e-12 relative).

Each (solver, dataset) pair runs in its own process with a wall-clock limit (``--limit``, default
60 s for the three strengths, compile included); a pair that does not return is recorded as such.
``--root DIR`` imports ``jaxprox`` from another checkout (the "before" column: a worktree of the
base commit), ``--tag`` names the result file ``benchmarks/results/appa_defaults_<tag>.json``;
``--report`` merges the "before" and "after" JSON files into ``benchmarks/results/appa_defaults.md``.

    python benchmarks/perf/bench_appa_defaults.py --root /tmp/base --tag before
    python benchmarks/perf/bench_appa_defaults.py --tag after
    python benchmarks/perf/bench_appa_defaults.py --report
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

sys.path[:0] = [str(Path(__file__).resolve().parent), str(Path(__file__).resolve().parents[1])]  # this group, harness
import harness  # noqa: E402

SOLVERS = ["SDCA", "SVRG", "APPA", "DualAPPA"]
DATA = ["heart_scale", "australian", "breast-cancer_scale", "german.numer", "a1a", "phishing", "splice",
        "svmguide3", "svmguide1", "breast-cancer_col_x1000"]
STRENGTHS = (1.0, 0.1, 0.01)

LOAD = r'''
import numpy as np
import jaxprox as jp
def load(name):
    if name == "svmguide3":  # dense CSV: label, f1..f21
        p = harness.data_file("svmguide3/svmguide3.dense.csv")
        M = np.loadtxt(p, delimiter=",")
        return M[:, 1:], np.where(M[:, 0] > 0, 1.0, -1.0)
    if name == "breast-cancer_col_x1000":  # one badly scaled column
        X, y = jp.datasets.load("breast-cancer_scale")
        X = np.array(X, dtype=float)
        X[:, 0] *= 1000.0
        return X, y
    X, y = jp.datasets.load(name)
    return X, y
'''

CHILD = r'''
import json, sys, time, warnings
warnings.simplefilter("ignore")
import jax
jax.config.update("jax_enable_x64", True)
import numpy as np
import jaxprox as jp
from jaxprox import losses, penalties
''' + LOAD + r'''
name, data, refs = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
X, y = load(data)
n = X.shape[0]
solver = getattr(jp, name)(tol=1e-6)
for s in (1.0, 0.1, 0.01):
    P = jp.ERM(X, y, losses.Logistic(), penalties.SquaredL2(s * 10.0 / n))
    t = time.perf_counter()
    sol = jp.solve(P, solver, warn=False)
    jax.block_until_ready(sol.params)
    dt = time.perf_counter() - t
    ref = refs[str(s)]
    f = float(P.objective(sol.params))
    f0 = float(P.objective(np.zeros(X.shape[1])))
    print("CASE" + json.dumps(dict(strength=s, converged=bool(sol.converged), gap=float(sol.gap),
          rel=(f - ref) / abs(ref), steps=int(sol.steps), time=dt, status=sol.status_name,
          above_start=bool(f > f0), honest=bool(float(sol.gap) >= (f - ref) - 1e-9 * (1 + abs(ref))))), flush=True)
'''

REF = r'''
import json, sys
import jax
jax.config.update("jax_enable_x64", True)
import numpy as np
import jaxprox as jp
from jaxprox import losses, penalties
''' + LOAD + r'''
data = sys.argv[1]
X, y = load(data)
n = X.shape[0]
out = {}
for s in (1.0, 0.1, 0.01):
    P = jp.ERM(X, y, losses.Logistic(), penalties.SquaredL2(s * 10.0 / n))
    sol = jp.solve(P, jp.ProxNewton(tol=1e-12, max_steps=2000), warn=False)
    # dual_value is a certified lower bound on the optimum even where the 1e-12 gap is not reached
    out[str(s)] = float(sol.dual_value)
    out[str(s) + "_gap"] = float(sol.gap)
print("REF" + json.dumps(out), flush=True)
'''

RESULTS = harness.RESULTS


def references(datasets):
    path = harness.CACHE / "appa_defaults_refs.json"
    harness.CACHE.mkdir(parents=True, exist_ok=True)
    refs = json.loads(path.read_text()) if path.exists() else {}
    for d in datasets:
        if d not in refs:
            rec, err = harness.run_child(REF, d, tag="REF", timeout=600)
            if not rec:
                raise RuntimeError(f"reference for {d}: {err}")
            refs[d] = rec[0]
            path.write_text(json.dumps(refs, indent=1))
    return refs


def sweep(args):
    refs = references(args.data)
    env, cwd = dict(os.environ), None
    if args.root:  # `python -c` puts the working directory first on sys.path: run the child there
        cwd = str(Path(args.root).resolve())
        env["PYTHONPATH"] = cwd
    import subprocess

    rev = subprocess.run(["git", "-C", cwd or str(Path(__file__).resolve().parent), "rev-parse", "--short", "HEAD"],
                         capture_output=True, text=True).stdout.strip() or "unknown"
    out = {"machine": harness.machine_info(), "root": args.root or "this checkout", "commit": rev,
           "limit": args.limit, "cases": []}
    for name in args.solvers:
        for data in args.data:
            t0 = time.perf_counter()
            cases, err = harness.run_child(CHILD, name, data, json.dumps(refs[data]), tag="CASE", env=env,
                                           cwd=cwd, timeout=args.limit)
            print(name, data, len(cases), err, f"{time.perf_counter() - t0:.1f}s", flush=True)
            for c in cases:
                out["cases"].append(dict(solver=name, data=data, **c))
            for s in STRENGTHS[len(cases):]:
                out["cases"].append(dict(solver=name, data=data, strength=s, converged=False, error=err))
            path = RESULTS / f"appa_defaults_{args.tag}.json"  # written after every pair
            path.write_text(json.dumps(out, indent=1))
    print("wrote", path)


def _cell(c):
    if c is None:
        return "-", "-", "-", "-"
    if "error" in c:
        return "no (did not return)", "-", "-", "-"
    flag = " (**above start**)" if c.get("above_start") else ""
    ok = "yes" if c["converged"] else f"no ({c['status']}){flag}"
    honest = "" if c["honest"] else " **gap NOT valid**"
    return ok, str(c["steps"]), f"{c['time']:.2f}", f"{max(c['rel'], 0.0):.1e}{honest}"


def report(args):
    runs = {t: json.loads((RESULTS / f"appa_defaults_{t}.json").read_text()) for t in ("before", "after")}
    idx = {t: {(c["solver"], c["data"], c["strength"]): c for c in r["cases"]} for t, r in runs.items()}
    keys = [k for k in idx["after"]]
    head = ("| solver | data | s | before: converged | steps | time (s) | true rel. subopt. "
            "| after: converged | steps | time (s) | true rel. subopt. |")
    rows = [head, "|---" * 11 + "|"]
    summ = {}
    for k in keys:
        b, a = idx["before"].get(k), idx["after"][k]
        rows.append(f"| {k[0]} | {k[1]} | {k[2]:g} | " + " | ".join(_cell(b)) + " | " + " | ".join(_cell(a)) + " |")
        for t, c in (("before", b), ("after", a)):
            s = summ.setdefault((k[0], t), [0, 0, 0, 0])
            s[0] += bool(c and c.get("converged"))
            s[1] += bool(c and "error" not in c)
            s[2] += bool(c and c.get("above_start"))
            s[3] += 1
    sm = ["| solver | before: converged / returned / ended above start | after: converged / returned / ended above start |",
          "|---|---|---|"]
    for name in dict.fromkeys(k[0] for k in keys):
        b, a = summ[(name, "before")], summ[(name, "after")]
        sm.append(f"| {name} | {b[0]} / {b[1]} / {b[2]} of {b[3]} | {a[0]} / {a[1]} / {a[2]} of {a[3]} |")
    m = runs["after"]["machine"]
    notes = (f"Ridge-logistic, lam0 = s * 10 / n, default settings with tol = 1e-6 (float64). 'before' = "
             f"{runs['before']['root']} (commit {runs['before'].get('commit', '4bc136b')}), 'after' = "
             f"{runs['after'].get('commit', 'this branch')}; both runs on the same "
             f"machine ({m['cpu']}, {m['cores']} cores shared with other jobs), before on "
             f"{runs['before']['machine']['date']}, after on {m['date']}. Each (solver, dataset) pair runs in "
             f"its own process with a {runs['after']['limit']:g} s limit for its three solves (compile "
             "included). True relative suboptimality (f - f*) / f* against ProxNewton(tol=1e-12)'s certified "
             "dual value. 'breast-cancer_col_x1000' is breast-cancer_scale with its first column times 1000.")
    harness.write_results("appa_defaults", "Defaults of SDCA, SVRG, APPA, Dual APPA: before / after",
                          [("Per solver", "\n".join(sm)), ("Per case", "\n".join(rows))], notes=notes)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", nargs="*", default=DATA)
    ap.add_argument("--solvers", nargs="*", default=SOLVERS)
    ap.add_argument("--limit", type=float, default=60.0)
    ap.add_argument("--root", default=None)
    ap.add_argument("--tag", default="after")
    ap.add_argument("--report", action="store_true")
    args = ap.parse_args()
    report(args) if args.report else sweep(args)


if __name__ == "__main__":
    main()
