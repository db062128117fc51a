"""Regularisation paths (issue 9): 64 lambdas solved at once, four ways, against scikit-learn.

For the Lasso and l1-logistic regression on real data, a log-spaced path of 64 lambdas from
lam_max down to lam_max / 1000 is solved to 1e-6 relative suboptimality at EVERY lambda by
  * ``jax.vmap`` of one jitted FISTA solve over the 64 lambdas (one call, lock-step),
  * ``jp.solve_path`` (warm-started ``lax.scan`` from large to small lambda),
  * a Python loop of one jitted FISTA solve called 64 times (compiled once),
  * scikit-learn: ``lasso_path`` (coordinate descent with warm starts) for the Lasso, liblinear
    ``LogisticRegression(penalty="l1")`` looped over the lambdas for logistic regression.
The target of each lambda is a FISTA optimum certified by its duality gap (<= 1e-11 relative);
scikit-learn's time is that of the loosest ``tol`` in 1e-4..1e-12 whose every solution reaches
1e-6 (an oracle choice in scikit-learn's favour); FISTA stops on its own certificate
(relative gap <= 1e-6, which bounds the suboptimality). Compile times are reported apart.

    .venv/bin/python benchmarks/bench_path.py [--data a1a,a9a]
"""
from __future__ import annotations

import argparse
import os
import sys
import time
import warnings
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
jax.config.update("jax_enable_x64", True)

import harness  # noqa: E402
from bench_fista import objective  # noqa: E402

import jaxprox as jp  # noqa: E402
from jaxprox import losses, penalties  # noqa: E402

N_LAMS = 64
TOLS = (1e-4, 1e-6, 1e-8, 1e-10, 1e-12)


def lam_grid(kind, X, y):
    g0 = X.T @ y / len(y) if kind == "lasso" else X.T @ y / (2 * len(y))  # |grad of the risk at 0|
    lam_max = float(np.max(np.abs(g0)))
    return np.logspace(np.log10(lam_max), np.log10(lam_max / 1000), N_LAMS)


def sklearn_path(kind, X, y, lams, tol):
    from sklearn.linear_model import LogisticRegression, lasso_path

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if kind == "lasso":
            return lasso_path(X, y, alphas=lams, tol=tol, max_iter=1_000_000)[1].T
        W = []
        for lam in lams:
            m = LogisticRegression(penalty="l1", C=1.0 / (len(y) * lam), solver="liblinear", random_state=0,
                                   fit_intercept=False, tol=tol, max_iter=1_000_000).fit(X, y)
            W.append(m.coef_.ravel())
        return np.array(W)


def worst_subopt(kind, X, y, W, lams, f_star):
    f = np.array([objective(kind, X, y, w, lam) for w, lam in zip(W, lams)])
    return float(np.max((f - f_star) / np.abs(f_star)))


def run_case(name, kind):
    X, y = jp.datasets.load(name, dense=True)
    X, y = np.asarray(X, float), np.asarray(y, float)
    if kind == "lasso":
        y = y - y.mean()  # a regression target: the centred labels (no intercept is fitted)
    loss = losses.Squared() if kind == "lasso" else losses.Logistic()
    lams = lam_grid(kind, X, y)
    prob = jp.ERM(X, y, loss, penalties.L1(float(lams[0])))
    fista = jp.FISTA(tol=1e-6, max_steps=200_000, check_every=10)
    tight = jp.FISTA(tol=1e-11, max_steps=400_000, check_every=50)

    ref = jax.jit(jax.vmap(lambda l: jp.solve(prob.with_lam(l), tight)))(jnp.asarray(lams))
    assert bool(jnp.all(ref.converged)), f"reference path not converged on {name}/{kind}"
    f_star = np.array([objective(kind, X, y, w, lam) for w, lam in zip(np.asarray(ref.params), lams)])

    L = jnp.asarray(lams)
    vm = jax.jit(jax.vmap(lambda l: jp.solve(prob.with_lam(l), fista).params))
    W_vm, c_vm, t_vm = harness.time_jax(vm, L, repeat=3)
    wp = jax.jit(lambda ls: jp.solve_path(prob, fista, ls).params)
    W_wp, c_wp, t_wp = harness.time_jax(wp, L, repeat=3)
    one = jax.jit(lambda l: jp.solve(prob.with_lam(l), fista).params)
    _, c_one, _ = harness.time_jax(one, L[0], repeat=1)

    def loop():
        return np.array([np.asarray(one(l)) for l in L])

    W_lp, t_lp = harness.time_call(loop, repeat=3)

    t_sk, tol_sk, W_sk = None, None, None
    for tol in TOLS:
        W, t = harness.time_call(sklearn_path, kind, X, y, lams, tol, repeat=1)
        if worst_subopt(kind, X, y, W, lams, f_star) <= 1e-6:
            t_sk, tol_sk, W_sk = t, tol, W
            break
    rows = []
    for label, W, t, comp in (("jax.vmap (one call)", W_vm, t_vm, c_vm), ("jp.solve_path (warm scan)", W_wp, t_wp, c_wp),
                              ("Python loop of a jitted solve", W_lp, t_lp, c_one),
                              ("scikit-learn " + ("lasso_path" if kind == "lasso" else "liblinear loop"), W_sk, t_sk,
                               0.0)):
        sub = None if W is None else worst_subopt(kind, X, y, np.asarray(W), lams, f_star)
        rows.append([name, kind, label, sub, t, comp, None if (t is None or t_sk is None) else t_sk / t])
    agree = float(np.max(np.abs(np.asarray(W_vm) - W_lp)))
    return rows, tol_sk, agree


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", default="a1a,a9a")
    args = ap.parse_args()
    rows, notes = [], []
    for name in args.data.split(","):
        for kind in ("lasso", "logistic"):
            t0 = time.perf_counter()
            r, tol_sk, agree = run_case(name, kind)
            rows += r
            notes.append(f"- {name}/{kind}: scikit-learn tol used {tol_sk}; max |w_vmap - w_loop| = {agree:.2e}; "
                         f"case wall time {time.perf_counter() - t0:.0f} s")
            print(harness.markdown_table(HEAD, r), flush=True)
    load = os.getloadavg()
    notes.append(f"- load average at the end of the run: {load[0]:.2f} {load[1]:.2f} {load[2]:.2f} "
                 f"(2-core machine; other jobs may have shared it: the ratios come from one run)")
    path = harness.write_results(
        "paths", "Regularisation paths: 64 lambdas, vmap vs warm scan vs loop vs scikit-learn",
        [("Time for the whole path, every lambda to 1e-6 relative suboptimality", harness.markdown_table(HEAD, rows)),
         ("Notes", "\n".join(notes)), ("When each wins", WHEN)], notes=__doc__.split("\n\n")[1])
    print(path)


HEAD = ["data", "problem", "method", "worst rel. subopt. on path", "path s (warm)", "compile s",
        "speed-up: scikit-learn s / this s"]

WHEN = """\
* ``jax.vmap`` runs the 64 solves in lock-step: one batched product ``X @ W`` (BLAS-3) per iteration
  instead of 64 matrix-vector products, but every lambda iterates until the slowest one (the smallest
  lambda) has converged, and each starts cold. On the 2-core CPU it is the slowest of the three
  (a1a); it is meant for accelerators (not measured: no GPU here), where 64 matvecs cost about as
  much as one, and for paths whose lambdas need similar step counts.
* ``jp.solve_path`` (warm-started scan from large to small lambda) runs the solves one after another,
  each from the previous solution, so each needs few steps; it is the fastest jaxprox option on the
  CPU (measured), and the more so the longer and finer the path.
* A Python loop of one jitted solve pays per-call dispatch and starts each solve cold: it is the
  baseline both of the above must beat.
"""

if __name__ == "__main__":
    main()
