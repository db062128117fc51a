"""Gradient-based tuning of the Wasserstein radius ``epsilon`` of a distributionally robust SVM
(DRSVM, paper 004) on a train / validation split of real data.

The DRSVM with transport cost ||.||_2 (``norm="l2"``) and a small ridge term (``c > 0``) has a
solution map ``epsilon -> (w*, lam*)`` that is piecewise smooth; for the l1 / linf variants with
``c = 0`` the problem is a linear programme and ``w*(epsilon)`` is piecewise *constant*
(derivative zero almost everywhere, which the implicit derivative correctly returns).

The validation loss ``V(eps) = mean smoothed-hinge(y_val * X_val w*(eps))`` is differentiated
through ``w*(eps)`` by implicit differentiation of the restarted-PDHG saddle fixed point
(``jaxprox.solvers.drsvm_pd.saddle_residual``: zero exactly at a saddle point) with ``jax.grad`` of ``jp.solve``;
gradient descent runs on ``log eps``. A grid search over the same range, computed in one
``jax.vmap`` call over the radii, is printed for comparison.

    python examples/tune_epsilon.py [--data a9a] [--steps 10]
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

jax.config.update("jax_enable_x64", True)

import jaxprox as jp  # noqa: E402
from jaxprox import losses  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from tune_lambda import tune  # noqa: E402  (grid + gradient descent, shared by the tuning examples)


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", default="a9a")
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--grid", type=int, default=16, help="radii in the comparison grid search")
    ap.add_argument("--n-train", type=int, default=4000, help="training rows drawn from the data (0: 2/3 of all)")
    args = ap.parse_args(argv)
    X, y = jp.datasets.load(args.data, dense=True)
    X, y = np.asarray(X, float), np.asarray(y, float)
    rng = np.random.default_rng(0)
    idx = rng.permutation(X.shape[0])
    n_tr = args.n_train or len(idx) * 2 // 3
    n_tr = min(n_tr, len(idx) * 2 // 3)
    tr, va = idx[:n_tr], idx[n_tr:]
    train = jp.DRSVM(X[tr], y[tr], norm="l2", kappa=1.0, epsilon=0.1, c=1e-2)
    solver = jp.DRSVMPDHG(tol=1e-8, max_steps=50_000)
    val_loss = losses.SmoothedHinge(0.5)
    Xv, yv = jnp.asarray(X[va]), jnp.asarray(y[va])

    def V(log_eps):
        w, _lam = jp.solve(train.with_epsilon(jnp.exp(log_eps)), solver).params
        return val_loss.risk(Xv @ w, yv)

    return tune(V, "eps", jnp.log(1e-3), jnp.log(1.0), args.grid, jnp.log(0.01), 1.0, args.steps)


if __name__ == "__main__":
    main()
