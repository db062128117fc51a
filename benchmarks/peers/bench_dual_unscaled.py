"""Dual coordinate ascent on unscaled features: jaxprox's SDCA against liblinear's dual CD.

Issue "defaults that converge": the dual methods (SDCA, Dual APPA, AGM on the SVM's dual) miss
1e-6 on the three unscaled datasets of the defaults sweep (australian, german.numer, svmguide1;
``defaults.md``). This run asks whether that is the method or jaxprox: on the plain SVM
``mean(hinge(y x^T w)) + (lam/2) ||w||^2`` at the sweep's strengths (``lam = s 10 / n``), the
relative suboptimality against cvxpy + Clarabel (tolerances 1e-12) of

* liblinear's dual coordinate descent (scikit-learn ``LinearSVC(loss="hinge", dual=True)``, with
  shrinking; ``tol=1e-12``) after 1,000 and 100,000 epochs,
* ``jp.SDCA()`` with its defaults (``tol=1e-6``; its epoch budget follows n),
* ``jp.PDProx()`` with its defaults (the primal-dual method the sweep and the warnings recommend),

all in one process. Writes ``benchmarks/results/dual_unscaled.md``."""
from __future__ import annotations

import time
import warnings

import numpy as np

import sys
from pathlib import Path
sys.path[:0] = [str(Path(__file__).resolve().parent), str(Path(__file__).resolve().parents[1])]  # this group, harness
import harness

DATASETS = ("australian", "german.numer", "svmguide1")
STRENGTHS = (1.0, 0.1, 0.01)


def main():
    import cvxpy as cp
    import jax
    from sklearn.svm import LinearSVC

    jax.config.update("jax_enable_x64", True)
    import jaxprox as jp
    from jaxprox import losses, penalties

    rows = []
    for name in DATASETS:
        X, y = jp.datasets.load(name, dense=True)
        Xn, yn = np.asarray(X), np.asarray(y)
        n, d = Xn.shape
        for s in STRENGTHS:
            lam = s * 10 / n
            w = cp.Variable(d)
            obj = cp.sum(cp.pos(1 - cp.multiply(yn, Xn @ w))) / n + lam / 2 * cp.sum_squares(w)
            prob = cp.Problem(cp.Minimize(obj))
            prob.solve(solver="CLARABEL", tol_gap_abs=1e-12, tol_gap_rel=1e-12, tol_feas=1e-12)
            p_star = prob.value
            P = lambda v: float(np.mean(np.maximum(0, 1 - yn * (Xn @ v))) + lam / 2 * v @ v)  # noqa: E731
            rel = lambda v: (P(np.asarray(v)) - p_star) / abs(p_star)  # noqa: E731
            row = [name, s]
            for epochs in (1_000, 100_000):
                t = time.perf_counter()
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    m = LinearSVC(loss="hinge", C=1 / (lam * n), fit_intercept=False, dual=True, tol=1e-12,
                                  max_iter=epochs).fit(Xn, yn)
                row += [rel(m.coef_.ravel()), time.perf_counter() - t]
            problem = jp.ERM(X, y, losses.Hinge(), penalties.SquaredL2(lam))
            for solver in (jp.SDCA(), jp.PDProx()):
                t = time.perf_counter()
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    sol = jp.solve(problem, solver)
                    jax.block_until_ready(sol.params)
                row += [rel(sol.params), int(sol.steps), sol.status_name, time.perf_counter() - t]
            rows.append(row)
            print(row, flush=True)
    head = ["data", "strength", "liblinear 1e3 epochs: rel. subopt.", "s", "liblinear 1e5 epochs: rel. subopt.", "s",
            "SDCA: rel. subopt.", "epochs", "status", "s (compile incl.)",
            "PDProx: rel. subopt.", "iterations", "status", "s (compile incl.)"]
    notes = (
        "The plain SVM, lam = s 10 / n, against cvxpy + Clarabel (1e-12). liblinear = scikit-learn's "
        "LinearSVC (dual coordinate descent with shrinking, loss='hinge', no intercept, tol 1e-12); "
        "SDCA and PDProx with jaxprox's defaults (tol 1e-6). One process; the jaxprox times include "
        "the first call's compile. Produced by benchmarks/peers/bench_dual_unscaled.py.")
    path = harness.write_results("dual_unscaled", "Dual coordinate ascent on unscaled features: SDCA against liblinear",
                                 [("Per case", harness.markdown_table(head, rows))], notes)
    print("wrote", path)


if __name__ == "__main__":
    main()
