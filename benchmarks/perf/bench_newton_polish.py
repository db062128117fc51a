"""The Newton step of SDCA's / Dual APPA's reported point (``jaxprox.solvers.sdca.newton_polish``):
what it costs against the epoch it follows, and what it changes.

For ridge-regularised logistic regression (``lam = 1/n``) on bundled data of ``d <= 128``: the time
of one Newton step (Hessian ``A^T diag(l'') A / n + lam I``, its inverse, the step ladder) against
one SDCA epoch (the difference of a 40- and a 20-epoch run, both compiled first), in the same
process; then, with default settings and ``tol=1e-6``, SDCA's and Dual APPA's certified gap and
checks with the polish (this commit) and without it (``SDCA._newton_polishes`` patched to ``False``),
against scikit-learn's ``newton-cg`` optimum (``tol=1e-13``).

    python benchmarks/perf/bench_newton_polish.py
"""
from __future__ import annotations

import time
import warnings

import jax
import jax.numpy as jnp
import numpy as np

import sys
from pathlib import Path
sys.path[:0] = [str(Path(__file__).resolve().parent), str(Path(__file__).resolve().parents[1])]  # this group, harness
import harness

jax.config.update("jax_enable_x64", True)

import jaxprox as jp  # noqa: E402
from jaxprox.losses import Logistic  # noqa: E402
from jaxprox.penalties import SquaredL2  # noqa: E402
from jaxprox.solvers import sdca as appa  # noqa: E402

DATA = ("heart_scale", "australian", "german.numer", "a1a", "phishing", "mushrooms")


def sk_value(X, y, lam):
    from sklearn.linear_model import LogisticRegression

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m = LogisticRegression(C=1.0 / (X.shape[0] * lam), fit_intercept=False, tol=1e-13, max_iter=100000,
                               solver="newton-cg").fit(X, y)
    w = m.coef_.ravel()
    return float(np.mean(np.logaddexp(0.0, -y * (X @ w))) + 0.5 * lam * w @ w)


def epoch_and_newton(P):
    f = jax.jit(appa.newton_polish)
    x = jnp.zeros(P.d)
    jax.block_until_ready(f(P, x))
    t = time.perf_counter()
    for _ in range(20):
        r = f(P, x)
    jax.block_until_ready(r)
    newton = (time.perf_counter() - t) / 20
    runs = []
    for steps in (20, 40):
        S = jp.SDCA(tol=0.0, max_steps=steps, check_every=20)
        jp.solve(P, S, warn=False)
        t = time.perf_counter()
        jax.block_until_ready(jp.solve(P, S, warn=False).params)
        runs.append(time.perf_counter() - t)
    return newton, (runs[1] - runs[0]) / 20


def main():
    cost, conv = [], []
    for name in DATA:
        X, y = (np.asarray(a.todense() if hasattr(a, "todense") else a, np.float64) for a in jp.datasets.load(name))
        n = X.shape[0]
        lam = 1.0 / n
        P = jp.ERM(X, y, Logistic(), SquaredL2(lam))
        newton, epoch = epoch_and_newton(P)
        cost.append(f"| {name} | {n} x {X.shape[1]} | {1e3 * newton:.2f} | {1e3 * epoch:.2f} | {newton / epoch:.2f} |")
        ref = sk_value(X, y, lam)
        for solver in (jp.SDCA, jp.DualAPPA):
            row = [name, solver.__name__]
            for polish in (True, False):
                orig = appa.SDCA._newton_polishes
                jax.clear_caches()  # the patch below changes the traced graph: no compiled loop reused
                if not polish:
                    appa.SDCA._newton_polishes = staticmethod(lambda problem: False)
                try:
                    t = time.perf_counter()
                    sol = jp.solve(P, solver(tol=1e-6), warn=False)
                    jax.block_until_ready(sol.params)
                    t = time.perf_counter() - t
                finally:
                    appa.SDCA._newton_polishes = orig
                    jax.clear_caches()
                sub = (float(P.objective(sol.params)) - ref) / abs(ref)
                row += [f"{bool(sol.converged)}", f"{float(sol.gap):.1e}", f"{sub:.1e}", f"{int(sol.steps)}", f"{t:.2f}"]
            conv.append("| " + " | ".join(row) + " |")
            print(conv[-1], flush=True)
    head_c = "| data | n x d | Newton step (ms) | SDCA epoch (ms) | ratio |\n|---|---|---|---|---|"
    head_v = ("| data | solver | converged | gap | true rel. subopt. | checks | time (s, compile incl.) "
              "| converged (no polish) | gap | true rel. subopt. | checks | time (s) |\n" + "|---" * 12 + "|")
    path = harness.write_results(
        "newton_polish", "SDCA / Dual APPA: the Newton step of the reported point",
        [("Cost: one Newton step against one SDCA epoch (same process)", head_c + "\n" + "\n".join(cost)),
         ("Logistic + (1/(2n)) ||w||^2, default settings, tol 1e-6: with and without the polish",
          head_v + "\n" + "\n".join(conv))],
        notes="Reference: scikit-learn LogisticRegression(newton-cg, tol=1e-13). 'without' patches "
              "SDCA._newton_polishes to False in the same process (the compiled loops differ).")
    print(path)


if __name__ == "__main__":
    main()
