"""PDBlockFW with its DEFAULT settings (only ``tol`` set) on data nobody tuned for (issue #27).

Smoothed hinge ``SmoothedHinge(1.0)`` + ``SquaredL2(10/n)`` over ``L1Ball(r)``, ``r in {1, 10, 100}``,
on the five bundled sets (heart_scale, australian (unscaled), breast-cancer_scale, german.numer
(unscaled), a1a) and splice (first 1000 rows x 60, unscaled), svmguide3 (1243 x 21, unscaled
CSV) and phishing (11055 x 68): 24 cases. Reference: cvxpy + Clarabel (tolerances 1e-10).
Each solve runs in this process after a warm-up-free first call (the time includes compilation).
Also the issue's named case: splice with ``tol = 1e-9`` (``max_steps=200000``).

    OPENBLAS_NUM_THREADS=1 python benchmarks/perf/bench_block_fw_defaults.py [--label after] [--solver "jp.PDBlockFW()"]

Per case: converged, steps, seconds, certified relative gap, true relative suboptimality
``(P(x) - P*) / |P*|``, and whether the gap bounds the true suboptimality (must always hold).
Writes ``benchmarks/results/block_fw_defaults_<label>.md`` when ``--write`` is given (merged by hand into ``block_fw_defaults.md``).
"""
from __future__ import annotations

import argparse
import sys
import time
import warnings
from pathlib import Path

import numpy as np

sys.path[:0] = [str(Path(__file__).resolve().parent), str(Path(__file__).resolve().parents[1])]  # this group, harness
import harness  # noqa: E402
import jax  # noqa: E402

jax.config.update("jax_enable_x64", True)

import jaxprox as jp  # noqa: E402
from jaxprox.constraints import L1Ball  # noqa: E402
from jaxprox.losses import SmoothedHinge  # noqa: E402
from jaxprox.penalties import SquaredL2  # noqa: E402

DATA = ["heart_scale", "australian", "breast-cancer_scale", "german.numer", "a1a", "splice", "svmguide3", "phishing"]
RADII = (1.0, 10.0, 100.0)


def load(name):
    if name == "svmguide3":
        M = np.loadtxt(harness.data_file("svmguide3/svmguide3.dense.csv"), delimiter=",")
        return M[:, 1:], np.where(M[:, 0] > 0, 1.0, -1.0)
    X, y = jp.datasets.load(name)
    X = np.asarray(X.todense() if hasattr(X, "todense") else X, float)
    y = np.asarray(y, float)
    if name == "splice":
        X, y = X[:1000], y[:1000]
    return X, y


def reference(name, X, y, mu, r):
    def compute():
        import cvxpy as cp

        n, d = X.shape
        x = cp.Variable(d)
        risk = cp.sum(0.5 * cp.huber(cp.pos(1 - cp.multiply(y, X @ x)), 1)) / n
        p = cp.Problem(cp.Minimize(risk + mu / 2 * cp.sum_squares(x)), [cp.norm1(x) <= r])
        p.solve(solver=cp.CLARABEL, tol_gap_abs=1e-10, tol_gap_rel=1e-10, tol_feas=1e-10, max_iter=500)
        return float(p.value)

    return harness.reference_optimum(f"fw_defaults_{name}_{r:g}", compute)


def run(prob, solver, pstar):
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        sol = jp.solve(prob, solver)
    jax.block_until_ready(sol.params)
    t = time.perf_counter() - t0
    f = float(prob.objective(sol.params))
    rel = (f - pstar) / abs(pstar)
    return dict(conv=bool(sol.converged), steps=int(sol.steps), t=t, gap=float(sol.gap) / abs(pstar), rel=rel,
                honest=float(sol.gap) >= (f - pstar) - 1e-9 * abs(pstar), status=sol.status_name)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--label", default="default")
    ap.add_argument("--solver", default="jp.PDBlockFW(tol=1e-6)")
    ap.add_argument("--data", nargs="*", default=DATA)
    ap.add_argument("--named", action="store_true", help="also the issue's splice case at tol 1e-9")
    ap.add_argument("--write", action="store_true")
    a = ap.parse_args()
    solver = eval(a.solver)
    rows, res = [], []
    for name in a.data:
        X, y = load(name)
        n = X.shape[0]
        for r in RADII:
            prob = jp.ERM(X, y, loss=SmoothedHinge(1.0), penalty=SquaredL2(10.0 / n), constraint=L1Ball(r))
            pstar = reference(name, X, y, 10.0 / n, r)
            c = run(prob, solver, pstar)
            res.append(c)
            rows.append([name, f"{n} x {X.shape[1]}", f"{r:g}", "yes" if c["conv"] else c["status"], str(c["steps"]),
                         f"{c['t']:.1f}", f"{c['gap']:.1e}", f"{c['rel']:.1e}", "yes" if c["honest"] else "NO"])
            print(" | ".join(rows[-1]), flush=True)
    conv = sum(c["conv"] for c in res)
    summary = (f"{a.label}: `{a.solver}`: converged {conv} / {len(res)}, honest gaps {sum(c['honest'] for c in res)} / "
               f"{len(res)}, slowest solve {max(c['t'] for c in res):.1f} s")
    print(summary)
    sections = [(a.label, summary + "\n\n" + harness.markdown_table(
        ["data", "n x d", "r", "converged", "steps", "seconds", "gap / P*", "(P - P*) / P*", "gap honest"], rows))]
    if a.named:
        X, y = load("splice")
        n = X.shape[0]
        prob = jp.ERM(X, y, loss=SmoothedHinge(1.0), penalty=SquaredL2(10.0 / n), constraint=L1Ball(2.0))
        pstar = reference("splice", X, y, 10.0 / n, 2.0)
        named = []
        for tol in (1e-6, 1e-9):
            c = run(prob, solver.with_options(tol=tol, max_steps=200_000), pstar)
            named.append([f"{tol:g}", "yes" if c["conv"] else c["status"], str(c["steps"]), f"{c['t']:.1f}",
                          f"{c['gap']:.1e}", f"{c['rel']:.1e}", "yes" if c["honest"] else "NO"])
            print("splice r=2", " | ".join(named[-1]), flush=True)
        sections.append((f"{a.label}: splice (1000 x 60), r = 2, max_steps 200000",
                         harness.markdown_table(["tol", "converged", "steps", "seconds", "gap / P*", "(P - P*) / P*",
                                                 "gap honest"], named)))
    if a.write:
        print(harness.write_results(f"block_fw_defaults_{a.label}", "PDBlockFW default settings on untuned data (issue #27)",
                                    sections, "Smoothed hinge + SquaredL2(10/n) over L1Ball(r); tol 1e-6 unless stated; "
                                    "reference cvxpy + Clarabel (1e-10). Times include compilation (one process)."))


if __name__ == "__main__":
    main()
