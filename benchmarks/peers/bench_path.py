"""Regularisation paths (issue 9): 64 lambdas solved at once, several ways, against scikit-learn.

For the Lasso and l1-logistic regression on real data, a log-spaced path of 64 lambdas from
lam_max down to lam_max / 1000 is solved to 1e-6 relative suboptimality at EVERY lambda by
  * ``jax.vmap`` of one jitted FISTA solve over the 64 lambdas (one call, lock-step),
  * ``jp.solve_path`` (warm-started ``lax.scan`` from large to small lambda) with FISTA,
  * a Python loop of one jitted FISTA solve called 64 times (compiled once),
  * for l1-logistic, ``jp.solve_path`` with ``jp.ProxNewton(hessian_dtype="float32")`` (proximal
    Newton: liblinear's second-order model, a d x d Hessian per step, float32 Gram),
  * ``jp.solve_path`` with ``jp.ProxNewton(inner="ssn")`` (the semismooth Newton inner solver; for
    the Lasso, ProxNewton's default),
  * scikit-learn: ``lasso_path`` (coordinate descent with warm starts) for the Lasso, liblinear
    ``LogisticRegression(penalty="l1")`` looped over the lambdas for logistic regression.
FISTA runs as ``FISTA(decrease=0.9, check_every=20)`` on the library's fast formulation of each
problem: the Lasso on its d x d sufficient statistics (``ERM.compressed()``: thin QR, same
minimisers and objective values), the logistic loss on the sparse operator. The target of each
lambda is an optimum certified by the problem's duality gap (FISTA at <= 1e-11 relative for the
Lasso, ProxNewton in float64 at <= 1e-12 for l1-logistic). Every method, ours and
scikit-learn's alike, gets the same oracle: its time is that of the loosest stopping ``tol`` of a
grid (jaxprox: relative gap 1e-3..1e-6; scikit-learn: 1e-3..1e-12) whose every solution on the path
reaches 1e-6 relative suboptimality, median of 3 runs (1 run on data other than a1a, where only
the warm scans are run by default). Compile times are reported apart.

    .venv/bin/python benchmarks/peers/bench_path.py [--data a1a,a9a] [--kinds lasso,logistic]
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

sys.path[:0] = [str(Path(__file__).resolve().parent), str(Path(__file__).resolve().parents[1])]  # this group, harness
jax.config.update("jax_enable_x64", True)

import harness  # noqa: E402
from bench_fista import objective  # noqa: E402

import jaxprox as jp  # noqa: E402
from jaxprox import losses, penalties  # noqa: E402

N_LAMS = 64
TOLS = (1e-3, 1e-4, 1e-6, 1e-8, 1e-10, 1e-12)   # scikit-learn's stopping tolerances (oracle grid)
FISTA_TOLS = (1e-3, 1e-4, 1e-5, 1e-6)             # FISTA's relative-gap tolerances (oracle grid)


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


def _oracle(run, W_of, kind, X, y, lams, f_star, tols, repeat):
    """Loosest ``tol`` in ``tols`` whose every solution on the path reaches 1e-6 relative
    suboptimality (the same oracle for every method), then the median time of ``repeat`` runs."""
    for tol in tols:
        W = W_of(run(tol))
        if worst_subopt(kind, X, y, np.asarray(W), lams, f_star) <= 1e-6:
            out, t = harness.time_call(lambda: W_of(run(tol)), repeat=repeat)
            return np.asarray(out), t, tol
    return None, None, None


def run_case(name, kind, methods=("vmap", "scan", "one"), repeat=3):
    X, y = jp.datasets.load(name, dense=True)
    X, y = np.asarray(X, float), np.asarray(y, float)
    if kind == "lasso":
        y = y - y.mean()  # a regression target: the centred labels (no intercept is fitted)
    loss = losses.Squared() if kind == "lasso" else losses.Logistic()
    lams = lam_grid(kind, X, y)
    prob = jp.ERM(X, y, loss, penalties.L1(float(lams[0])))
    # the library's fast formulations: the Lasso on its d x d sufficient statistics (ERM.compressed),
    # the logistic loss on the sparse operator (the data are 0/1 one-hot features)
    fast = prob.compressed() if kind == "lasso" else jp.ERM(jp.datasets.load(name)[0], y, loss, prob.penalty)
    # the reference optimum of each lambda, certified by the problem's duality gap (solver-independent)
    tight = (jp.FISTA(tol=1e-11, max_steps=400_000, check_every=50) if kind == "lasso"
             else jp.ProxNewton(tol=1e-12, max_steps=1000))
    ref = jax.jit(lambda ls: jp.solve_path(fast, tight, ls))(jnp.asarray(lams))
    assert bool(jnp.all(ref.converged)), f"reference path not converged on {name}/{kind}"
    f_star = np.array([objective(kind, X, y, w, lam) for w, lam in zip(np.asarray(ref.params), lams)])
    L = jnp.asarray(lams)
    fista = lambda tol: jp.FISTA(tol=tol, max_steps=200_000, check_every=20, decrease=0.9)  # noqa: E731
    jit_cache = {}

    def jitted(key, tol, build, make=fista):
        if (key, tol) not in jit_cache:
            fn = jax.jit(build(make(tol)))
            t0 = time.perf_counter()
            jax.block_until_ready(fn(L if key != "one" else L[0]))
            warm = time.perf_counter()
            jax.block_until_ready(fn(L if key != "one" else L[0]))
            jit_cache[(key, tol)] = (fn, (warm - t0) - (time.perf_counter() - warm))
        return jit_cache[(key, tol)]

    path_of = lambda sv: lambda ls: jp.solve_path(fast, sv, ls).params  # noqa: E731

    def warm_scan(tol):
        return jitted("scan", tol, path_of)[0](L)

    def vmapped(tol):
        return jitted("vmap", tol, lambda sv: jax.vmap(lambda l: jp.solve(fast.with_lam(l), sv).params))[0](L)

    def newton_scan(tol):  # proximal Newton, float32 model Hessian (the gap stays float64)
        return jitted("newton", tol, path_of, make=lambda tol: jp.ProxNewton(tol=tol, hessian_dtype="float32"))[0](L)

    def ssn_scan(tol):  # proximal Newton with the semismooth Newton inner solver (Cholesky per step)
        dtype = "float32" if kind == "logistic" else None
        return jitted("ssn", tol, path_of, make=lambda tol: jp.ProxNewton(tol=tol, inner="ssn", hessian_dtype=dtype))[0](L)

    def loop(tol):
        one = jitted("one", tol, lambda sv: lambda l: jp.solve(fast.with_lam(l), sv).params)[0]
        return np.array([np.asarray(one(l)) for l in L])

    block = lambda W: np.asarray(jax.block_until_ready(W))  # noqa: E731
    rows, tols_used = [], {}
    for label, key, run in (("jax.vmap (one call)", "vmap", vmapped), ("jp.solve_path (warm scan)", "scan", warm_scan),
                            ("Python loop of a jitted solve", "one", loop),
                            ("jp.solve_path, jp.ProxNewton", "newton", newton_scan),
                            ("jp.solve_path, jp.ProxNewton(inner='ssn')", "ssn", ssn_scan)):
        if key not in methods:
            continue
        W, t, tol = _oracle(run, block, kind, X, y, lams, f_star, FISTA_TOLS, repeat=repeat)
        comp = jit_cache[(key, tol)][1] if tol is not None else None
        rows.append([name, kind, label, W, t, comp, tol])
        tols_used[label] = tol
    sk_label = "scikit-learn " + ("lasso_path" if kind == "lasso" else "liblinear loop")
    W_sk, t_sk, tol_sk = _oracle(lambda tol: sklearn_path(kind, X, y, lams, tol), lambda W: W, kind, X, y, lams,
                                 f_star, TOLS, repeat=repeat)
    rows.append([name, kind, sk_label, W_sk, t_sk, 0.0, tol_sk])
    out = []
    for nm, kd, label, W, t, comp, tol in rows:
        sub = None if W is None else worst_subopt(kind, X, y, np.asarray(W), lams, f_star)
        out.append([nm, kd, label, tol, sub, t, comp, None if (t is None or t_sk is None) else t_sk / t])
    got = {r[2]: r[3] for r in rows}
    a, b = got.get("jax.vmap (one call)"), got.get("Python loop of a jitted solve")
    agree = float(np.max(np.abs(a - b))) if a is not None and b is not None else float("nan")
    return out, tol_sk, agree


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", default="a1a,a9a")
    ap.add_argument("--big-methods", default="scan", help="jaxprox methods run on data other than a1a")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--kinds", default="lasso,logistic")
    ap.add_argument("--out", default="paths", help="results file name (benchmarks/results/<out>.md)")
    args = ap.parse_args()
    rows, notes = [], []
    for name in args.data.split(","):
        for kind in args.kinds.split(","):
            t0 = time.perf_counter()
            methods = ("vmap", "scan", "one") if name == "a1a" else tuple(args.big_methods.split(","))
            methods += ("newton", "ssn") if kind == "logistic" else ("ssn",)
            r, tol_sk, agree = run_case(name, kind, methods, args.repeat if name == "a1a" else 1)
            rows += r
            notes.append(f"- {name}/{kind}: scikit-learn tol used {tol_sk}; max |w_vmap - w_loop| = {agree:.2e}; "
                         f"case wall time {time.perf_counter() - t0:.0f} s")
            print(harness.markdown_table(HEAD, r), flush=True)
    load = os.getloadavg()
    notes.append(f"- load average at the end of the run: {load[0]:.2f} {load[1]:.2f} {load[2]:.2f} "
                 f"(2-core machine; other jobs may have shared it: the ratios come from one run)")
    path = harness.write_results(
        args.out, "Regularisation paths: 64 lambdas, vmap vs warm scan vs loop vs scikit-learn",
        [("Time for the whole path, every lambda to 1e-6 relative suboptimality", harness.markdown_table(HEAD, rows)),
         ("Notes", "\n".join(notes)), ("When each wins", WHEN)], notes=__doc__.split("\n\n")[1])
    print(path)


HEAD = ["data", "problem", "method", "tol (oracle)", "worst rel. subopt. on path", "path s (median of 3)",
        "compile s", "speed-up: scikit-learn s / this s"]

WHEN = """\
* ``jp.solve_path`` (warm-started scan from large to small lambda) runs the solves one after another,
  each from the previous solution, so each needs few steps; with the problem in its fast form
  (``ERM.compressed()`` for least squares, a sparse operator for 0/1 features) it is the fastest
  jaxprox option measured on this CPU.
* With few features (here d = 119 and 123) the fastest solver in the scan is ``jp.ProxNewton``. For the
  Lasso its default inner solver is a semismooth Newton method (one Cholesky of the active block per
  iteration, the Hessian computed once per path): about one Newton step per lambda, exact solutions;
  FISTA needs ~12,000 steps on a1a, whose features are rank-deficient. For l1-logistic regression its
  inner FISTA with a float32 model Hessian needs about two Newton steps per lambda. The Hessian's
  O(n d^2) cost grows with d: on w8a (d = 300, 4% dense) a liblinear loop was faster (ProxNewton at
  0.3-0.75x of its speed), so ProxNewton is for d up to a few hundred.
* ``jax.vmap`` runs the 64 solves in lock-step: one batched product per iteration (BLAS-3) instead of
  64 matrix-vector products, but every lambda iterates until the slowest one has converged, and each
  starts cold. On the 2-core CPU it is the slowest option; it is meant for accelerators (not measured:
  this run is CPU only), where 64 products cost about as much as one.
* A Python loop of one jitted solve pays per-call dispatch and starts each solve cold.
"""

if __name__ == "__main__":
    main()
