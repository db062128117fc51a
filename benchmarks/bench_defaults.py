"""Defaults sweep (issue "Defaults that converge"): every public solver with its DEFAULT settings
(only ``tol`` set, 1e-6 relative) on the problem class it is meant for, on real datasets of
different shapes and scalings, at 3 strengths across 3 orders of magnitude, against a tight
reference in the same run.

Per case: converged, certified gap, true suboptimality (against the reference), steps, time,
status; and whether the gap is a valid upper bound on the true suboptimality. Each (solver,
dataset) pair runs in its own process with a wall-clock limit (``--limit``, default 60 s), so a
solve that does not return is recorded as such. Writes ``benchmarks/results/defaults.md``.

    python benchmarks/bench_defaults.py [--data heart_scale australian ...] [--solvers FISTA ...]

References: ProxNewton to a 1e-12 certified gap for the smooth ERM problems (its own certificate,
an honest bound; the case fails if it does not get there), cvxpy + Clarabel (tolerances 1e-10)
for the hinge + l1 problem and for DRSVM.
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import harness  # noqa: E402

# solver -> problem family
FAMILY = {"FISTA": "l1_logistic", "ProxNewton": "l1_logistic", "AGM": "l1_logistic", "SVRG": "l1_logistic",
          "PDProx": "hinge_l1", "SDCA": "ridge_logistic", "APPA": "ridge_logistic", "DualAPPA": "ridge_logistic",
          "PDBlockFW": "fw_ball", "ISG": "drsvm", "IPPA": "drsvm", "HybridISGIPPA": "drsvm", "DRSVMPDHG": "drsvm",
          "DRSVMBarrier": "drsvm"}
DATA = ["heart_scale", "australian", "breast-cancer_scale", "german.numer", "a1a"]

CHILD = r'''
import json, sys, time, warnings
warnings.simplefilter("ignore")
import jax
jax.config.update("jax_enable_x64", True)
import numpy as np
import jaxprox as jp
from jaxprox import losses, penalties
from jaxprox.constraints import L1Ball
name, family, data = sys.argv[1], sys.argv[2], sys.argv[3]
X, y = jp.datasets.load(data)
n = X.shape[0]
Xd = np.asarray(X.todense() if hasattr(X, "todense") else X)
lam_max = float(np.max(np.abs(Xd.T @ (y / 2.0))) / n)  # l1-logistic: the smallest lam with w* = 0
def build(s):
    if family == "l1_logistic":
        return jp.ERM(X, y, losses.Logistic(), penalties.L1(lam_max * s))
    if family == "hinge_l1":
        return jp.ERM(X, y, losses.Hinge(), penalties.L1(2 * lam_max * s))
    if family == "ridge_logistic":
        return jp.ERM(X, y, losses.Logistic(), penalties.SquaredL2(s * 10.0 / n))
    if family == "fw_ball":
        return jp.ERM(X, y, losses.SmoothedHinge(1.0), penalties.SquaredL2(10.0 / n), L1Ball(s * 10.0))
    return jp.DRSVM(Xd, y, epsilon=s)
strengths = {"drsvm": (0.01, 0.1, 1.0), "fw_ball": (0.1, 1.0, 10.0)}.get(family, (1e-1, 1e-2, 1e-3))
def reference(P):
    import cvxpy as cp
    if family == "drsvm":  # problem (1) of the DRSVM paper, q = 1, kappa = 1, c = 0
        w, lam = cp.Variable(Xd.shape[1]), cp.Variable()
        u = cp.multiply(y, Xd @ w)
        obj = lam * float(P.epsilon) + cp.sum(cp.maximum(cp.maximum(1 - u, 1 + u - lam), 0)) / n
        pr = cp.Problem(cp.Minimize(obj), [cp.norm1(w) <= lam])
        pr.solve(solver=cp.CLARABEL, tol_gap_abs=1e-10, tol_gap_rel=1e-10, tol_feas=1e-10)
        return float(pr.value)
    if family == "hinge_l1":
        w = cp.Variable(Xd.shape[1])
        pr = cp.Problem(cp.Minimize(cp.sum(cp.pos(1 - cp.multiply(y, Xd @ w))) / n + float(P.lam) * cp.norm1(w)))
        pr.solve(solver=cp.CLARABEL, tol_gap_abs=1e-10, tol_gap_rel=1e-10, tol_feas=1e-10)
        return float(pr.value)
    s = jp.solve(P, jp.ProxNewton(tol=1e-12, max_steps=2000), warn=False)
    assert bool(s.converged), "the reference did not reach its 1e-12 certified gap"
    return float(s.dual_value)  # a certified lower bound on P*, 1e-12 below P(w_ref)
solver = getattr(jp, name)(tol=1e-6)
out = []
for s in strengths:
    P = build(s)
    t = time.perf_counter()
    sol = jp.solve(P, solver, warn=False)
    jax.block_until_ready(sol.params)
    dt = time.perf_counter() - t
    ref = reference(P)
    f = float(P.objective(sol.params))
    out.append(dict(strength=s, converged=bool(sol.converged), gap=float(sol.gap), sub=f - ref,
                    rel=(f - ref) / max(abs(ref), 1e-12), steps=int(sol.steps), time=dt, status=sol.status_name,
                    honest=bool(float(sol.gap) >= (f - ref) - 1e-9 * (1 + abs(ref)))))
    print("CASE" + json.dumps(out[-1]), flush=True)
'''


def run_pair(name, data, limit):
    t0 = time.perf_counter()
    cases, err = harness.run_child(CHILD, name, FAMILY[name], data, tag="CASE", timeout=limit)
    return cases, err, time.perf_counter() - t0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", nargs="*", default=DATA)
    ap.add_argument("--solvers", nargs="*", default=list(FAMILY))
    ap.add_argument("--limit", type=float, default=60.0)
    args = ap.parse_args()
    rows, summary = [], {}
    for name in args.solvers:
        for data in args.data:
            cases, err, wall = run_pair(name, data, args.limit)
            print(name, data, len(cases), err, f"{wall:.1f}s", flush=True)
            for c in cases:
                rows.append(f"| {name} | {FAMILY[name]} | {data} | {c['strength']:g} | {'yes' if c['converged'] else 'no'} | "
                            f"{c['gap']:.2e} | {c['rel']:.2e} | {c['steps']} | {c['time']:.2f} | {c['status']} | "
                            f"{'yes' if c['honest'] else '**NO**'} |")
            if len(cases) < 3:
                rows.append(f"| {name} | {FAMILY[name]} | {data} | - | no | - | - | - | - | {err} | - |")
            s = summary.setdefault(name, [0, 0, 0, 0])
            s[0] += sum(c["converged"] for c in cases)
            s[1] += len(cases)
            s[2] += sum(c["honest"] for c in cases)
            s[3] += 3
    head = ("| solver | problem | data | strength | converged | certified gap | true rel. subopt. | steps | time (s) "
            "| status | gap >= true subopt. |")
    table = "\n".join([head, "|---" * 11 + "|", *rows])
    summ = "\n".join(["| solver | converged / cases | returned / cases | honest gaps / returned |", "|---|---|---|---|"]
                     + [f"| {k} | {v[0]} / {v[3]} | {v[1]} / {v[3]} | {v[2]} / {v[1]} |" for k, v in summary.items()])
    harness.write_results("defaults", "Defaults sweep: default settings (tol 1e-6) on real data", [
        ("Per solver", summ), ("Per case", table)],
        notes=(f"Datasets: {', '.join(args.data)} (bundled LIBSVM sets; australian is unscaled). Strengths: lam_max x "
               "{0.1, 0.01, 0.001} (l1 problems), 10/n x {1, 0.1, 0.01}... see FAMILY and the child script; each "
               f"(solver, dataset) pair in its own process, {args.limit:g} s wall-clock limit (compile included)."))


if __name__ == "__main__":
    main()
