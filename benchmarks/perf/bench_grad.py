"""Cost of a gradient through a solve (issue 9): for every solver family, the time of
``jax.grad`` of a validation loss through ``jp.solve`` (implicit differentiation: the solve, then
one matrix-free tangent solve on the solver's fixed-point residual) over the time of the solve
alone, both jitted and warm (compile times apart). Target: at most 3x.

Data: a1a (1605 x 123, LIBSVM), the first 80% of the rows to train, the rest to validate;
the validation loss is the mean logistic loss of the solution on the held-out rows.

    .venv/bin/python benchmarks/perf/bench_grad.py
"""
from __future__ import annotations

import os
import sys
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

sys.path[:0] = [str(Path(__file__).resolve().parent), str(Path(__file__).resolve().parents[1])]  # this group, harness
jax.config.update("jax_enable_x64", True)

import harness  # noqa: E402

import jaxprox as jp  # noqa: E402
from jaxprox import constraints, losses, penalties  # noqa: E402


def cases(X, y):
    n = X.shape[0]
    tol = dict(tol=1e-7)
    return [
        ("FISTA", "logistic + l1", losses.Logistic(), penalties.L1(1e-3), None,
         jp.FISTA(max_steps=50_000, check_every=20, **tol)),
        ("PDProx (cp)", "hinge + l2^2", losses.Hinge(), penalties.SquaredL2(1e-2), None,
         jp.PDProx("cp", restart=jp.restarts.FixedRestart(1000), max_steps=100_000, check_every=200, **tol)),
        ("PDBlockFW", "smoothed hinge + mu/2 l2^2, l1 ball", losses.SmoothedHinge(1.0), penalties.SquaredL2(10.0 / n),
         constraints.L1Ball(5.0), jp.PDBlockFW(sparsity=16, max_steps=100_000, **tol)),
        ("AGM", "logistic + l2^2", losses.Logistic(), penalties.SquaredL2(1e-3), None,
         jp.AGM(max_steps=20_000, check_every=50, **tol)),
        ("APPA (SDCA)", "logistic + l2^2", losses.Logistic(), penalties.SquaredL2(1e-3), None,
         jp.APPA(prox_lam=1e-2, inner=jp.SDCA(), max_steps=400, **tol)),
        ("DualAPPA", "logistic + l2^2", losses.Logistic(), penalties.SquaredL2(1e-3), None,
         jp.DualAPPA(prox_lam=1e-2, max_steps=400, **tol)),
        ("DRSVMPDHG", "DRSVM l2, c = 0.01 (d / d epsilon)", None, None, None, jp.DRSVMPDHG(max_steps=50_000, **tol)),
    ]


def main():
    X, y = jp.datasets.load("a1a", dense=True)
    X, y = np.asarray(X, float), np.asarray(y, float)
    m = int(0.8 * len(y))
    Xt, yt, Xv, yv = X[:m], y[:m], jnp.asarray(X[m:]), jnp.asarray(y[m:])
    rows = []
    for family, problem, loss, penalty, constraint, solver in cases(Xt, yt):
        if loss is None:  # the DRSVM: the hyperparameter is the Wasserstein radius
            base = jp.DRSVM(Xt, yt, norm="l2", kappa=1.0, epsilon=0.05, c=1e-2)
            theta0, with_ = 0.05, lambda p, t: p.with_epsilon(t)  # noqa: E731
        else:
            base = jp.ERM(Xt, yt, loss, penalty, constraint=constraint)
            theta0, with_ = float(penalty.lam), lambda p, t: p.with_lam(t)  # noqa: E731

        def val_loss(theta, base, solver=solver, with_=with_):
            w = jp.solve(with_(base, theta), solver).params
            w = w[0] if isinstance(w, tuple) else w
            return jnp.mean(jax.nn.softplus(-yv * (Xv @ w)))

        sol = jax.jit(lambda t, b, solver=solver, with_=with_: jp.solve(with_(b, t), solver))(theta0, base)
        _, cf, tf = harness.time_jax(jax.jit(val_loss), theta0, base, repeat=3)
        gv, cg, tg = harness.time_jax(jax.jit(jax.grad(val_loss)), theta0, base, repeat=3)
        rows.append([family, problem, theta0, int(sol.steps), bool(sol.converged), tf, tg, tg / tf, cf, cg, float(gv)])
        print(harness.markdown_table(HEAD, rows[-1:]), flush=True)
    load = os.getloadavg()
    notes = (f"Load average at the end: {load[0]:.2f} {load[1]:.2f} {load[2]:.2f} (2-core machine, possibly "
             "shared with other jobs; each ratio is from one run). Every solve stops at a relative gap of 1e-7. "
             "The derivatives themselves are checked against central differences in tests/test_differentiation.py.")
    worst = max(r[7] for r in rows)
    verdict = f"Largest ratio grad / solve: {worst:.2f} (target <= 3)."
    print(harness.write_results("grad_cost", "Cost of a gradient through a solve, per solver family",
                                [("grad / solve", harness.markdown_table(HEAD, rows) + "\n\n" + verdict)], notes))


HEAD = ["family", "problem", "lam (or eps)", "steps", "converged", "solve s", "grad s", "ratio grad / solve",
        "compile solve s", "compile grad s", "d val / d lam"]

if __name__ == "__main__":
    main()
