"""A single l1-logistic solve and the gradient of a validation loss with respect to ``lam``, jitted,
against jaxopt (``benchmarks/results/jaxopt.md``).

Problem: a9a (bundled, 32,561 x 123, dense float64), the first 70% of the rows for training,

    min_w (1/n) sum_i log(1 + exp(-y_i x_i^T w)) + lam ||w||_1,     lam = frac * lam_max,

``lam_max = ||X^T y||_inf / (2n)`` (``w* = 0`` above it), and the validation loss ``V(w)`` = mean
logistic loss on the other 30%. Two rows per ``frac``: the solve ``lam -> w*(lam)`` and the
hyper-gradient ``dV(w*(lam))/dlam``, each one ``jax.jit``-compiled function of ``lam``.

jaxprox: ``jp.solve(problem)`` (its default solver and tolerance, a certified relative gap of 1e-6;
the derivative by implicit differentiation, :class:`jaxprox.ImplicitAdjoint`). jaxopt:
``ProximalGradient(fun, prox_lasso)`` (FISTA with backtracking; implicit differentiation of its
fixed point) at the loosest ``tol`` of its grid whose objective is within 1e-6 relative of the
optimum certified by jaxprox at a relative gap of 1e-10 (the oracle). Both derivatives are checked
against a central finite difference of the certified solution. First calls (compilation) are
reported apart; then 3 warm calls of each, interleaved, median reported; ratio = jaxopt / jaxprox.

    python benchmarks/peers/bench_jaxopt.py [--fracs 0.1 0.01] [--small]
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
import warnings
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

sys.path[:0] = [str(Path(__file__).resolve().parents[1])]
jax.config.update("jax_enable_x64", True)

import harness  # noqa: E402

import jaxprox as jp  # noqa: E402
from jaxprox import losses, penalties  # noqa: E402

warnings.filterwarnings("ignore")
TOLS = (1e-2, 1e-3, 1e-4, 1e-5, 1e-6, 1e-7, 1e-8, 1e-10)


def data(small: bool):
    X, y = jp.datasets.load("a9a")
    X = np.asarray(X.todense() if hasattr(X, "todense") else X, np.float64)
    y = np.asarray(y, np.float64)
    if small:
        X, y = X[:3000], y[:3000]
    cut = int(0.7 * X.shape[0])
    return (jnp.asarray(X[:cut]), jnp.asarray(y[:cut])), (jnp.asarray(X[cut:]), jnp.asarray(y[cut:]))


def logistic(w, X, y):
    return jnp.mean(jnp.logaddexp(0.0, -y * (X @ w)))


def jaxprox_fns(train, valid, tol=None):
    X, y = train

    def solve(lam):
        problem = jp.ERM(X, y, losses.Logistic(), penalties.L1(lam))
        return jp.solve(problem, None if tol is None else jp.ProxNewton(tol=tol, max_steps=500), warn=False).params

    return jax.jit(solve), jax.jit(jax.grad(lambda lam: logistic(solve(lam), *valid)))


def jaxopt_fns(train, valid, tol):
    from jaxopt import ProximalGradient
    from jaxopt.prox import prox_lasso

    X, y = train
    pg = ProximalGradient(fun=logistic, prox=prox_lasso, tol=tol, maxiter=100_000)

    def solve(lam):
        return pg.run(jnp.zeros(X.shape[1]), lam, X=X, y=y).params

    return jax.jit(solve), jax.jit(jax.grad(lambda lam: logistic(solve(lam), *valid)))


def objective(w, lam, X, y):
    return float(logistic(w, X, y) + lam * jnp.sum(jnp.abs(w)))


def first_and_warm(fns, lam, repeat):
    """First call (compile + run) of each function, then ``repeat`` interleaved warm calls."""
    first = {}
    for k, f in fns.items():
        t = time.perf_counter()
        jax.block_until_ready(f(lam))
        first[k] = time.perf_counter() - t
    warm = {k: [] for k in fns}
    for _ in range(repeat):
        for k, f in fns.items():
            t = time.perf_counter()
            jax.block_until_ready(f(lam))
            warm[k].append(time.perf_counter() - t)
    return first, {k: statistics.median(v) for k, v in warm.items()}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--fracs", nargs="*", type=float, default=[0.1, 0.01])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--small", action="store_true", help="3,000 rows (a quick check of the script)")
    args = ap.parse_args()
    train, valid = data(args.small)
    X, y = train
    n = X.shape[0]
    lam_max = float(jnp.max(jnp.abs(X.T @ y)) / (2 * n))
    rows, checks = [], []
    for frac in args.fracs:
        lam = jnp.asarray(frac * lam_max)
        ref_solve, _ = jaxprox_fns(train, valid, tol=1e-10)
        ref = jp.solve(jp.ERM(X, y, losses.Logistic(), penalties.L1(lam)), jp.ProxNewton(tol=1e-10, max_steps=500))
        f_star = float(ref.dual_value)  # a certified lower bound on the optimum
        # the oracle: the loosest jaxopt tol within 1e-6 relative of the certified optimum
        for tol in TOLS:
            o_solve, o_grad = jaxopt_fns(train, valid, tol)
            sub = (objective(o_solve(lam), lam, X, y) - f_star) / abs(f_star)
            if sub <= 1e-6:
                break
        sub_j = (objective(jaxprox_fns(train, valid)[0](lam), lam, X, y) - f_star) / abs(f_star)
        j_solve, j_grad = jaxprox_fns(train, valid)  # fresh functions: their first call compiles
        o_solve, o_grad = jaxopt_fns(train, valid, tol)
        # the hyper-gradient of the certified solution by a central finite difference
        h = 1e-4 * float(lam)
        fd = float((logistic(ref_solve(lam + h), *valid) - logistic(ref_solve(lam - h), *valid)) / (2 * h))
        first, warm = first_and_warm({"jaxprox solve": j_solve, "jaxopt solve": o_solve,
                                      "jaxprox grad": j_grad, "jaxopt grad": o_grad}, lam, args.repeat)
        gj, go = float(j_grad(lam)), float(o_grad(lam))
        for what in ("solve", "grad"):
            a, b = warm[f"jaxprox {what}"], warm[f"jaxopt {what}"]
            rows.append([f"{frac:g} lam_max", what, f"{a:.3f}", f"{b:.3f}", f"{b / a:.1f}",
                         f"{first[f'jaxprox {what}']:.2f}", f"{first[f'jaxopt {what}']:.2f}"])
        checks.append([f"{frac:g} lam_max", f"{sub_j:.1e}", f"{tol:g}", f"{sub:.1e}", f"{fd:.6g}",
                       f"{abs(gj - fd) / abs(fd):.1e}", f"{abs(go - fd) / abs(fd):.1e}",
                       int(np.sum(np.abs(np.asarray(ref.params)) > 0))])
        print(rows[-2], rows[-1], checks[-1], flush=True)
    info = harness.machine_info()
    import jaxopt  # noqa: F401
    from importlib.metadata import version

    sections = [
        ("Warm times (median of 3, interleaved) and first calls", harness.markdown_table(
            ["lam", "function", "jaxprox s", "jaxopt s", "ratio jaxopt / jaxprox", "jaxprox first call s",
             "jaxopt first call s"], rows)),
        ("Accuracy", harness.markdown_table(
            ["lam", "jaxprox rel. subopt.", "jaxopt tol (oracle)", "jaxopt rel. subopt.", "dV/dlam (finite diff.)",
             "jaxprox grad rel. err.", "jaxopt grad rel. err.", "non-zeros of w*"], checks)),
    ]
    notes = (f"Data: a9a {'first 3,000 rows ' if args.small else ''}(bundled), 70% train ({n} rows) / 30% "
             f"validation, dense float64. jaxopt {version('jaxopt')}. Protocol in the script's docstring.")
    path = harness.write_results("jaxopt" + ("_small" if args.small else ""),
                                 "l1-logistic solve and hyper-gradient, jitted: jaxprox against jaxopt", sections,
                                 notes=notes)
    print(path, info)


if __name__ == "__main__":
    main()
