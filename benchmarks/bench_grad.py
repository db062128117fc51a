"""Cost of a gradient through a solve (issue 9): for every solver family, the time of
``jax.grad`` of a validation loss through ``jp.solve`` (implicit differentiation: the solve, then
one matrix-free tangent solve on the solver's fixed-point residual) over the time of the solve
alone, both jitted and warm (compile times apart). Target: at most 3x.

Data: a1a (1605 x 123, LIBSVM), the first 80% of the rows to train, the rest to validate;
the validation loss is the mean logistic loss of the solution on the held-out rows.

    .venv/bin/python benchmarks/bench_grad.py
"""
from __future__ import annotations

import os
import sys
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
jax.config.update("jax_enable_x64", True)

import harness  # noqa: E402

import jaxprox as jp  # noqa: E402
from jaxprox import constraints, losses, penalties  # noqa: E402


def cases(X, y):
    n = X.shape[0]

    def erm(loss, pen, con=None):
        return lambda lam: jp.ERM(X, y, loss, pen(lam), constraint=con)  # noqa: E731

    return [
        ("FISTA", "logistic + l1", erm(losses.Logistic(), penalties.L1), 1e-3,
         jp.FISTA(tol=1e-10, max_steps=50_000, check_every=20)),
        ("PDProx (cp)", "hinge + l2^2", erm(losses.Hinge(), penalties.SquaredL2), 1e-2,
         jp.PDProx("cp", restart=1000, tol=1e-8, max_steps=100_000, check_every=200)),
        ("PDBlockFW", "smoothed hinge + mu/2 l2^2, l1 ball", erm(losses.SmoothedHinge(1.0), penalties.SquaredL2,
                                                               constraints.L1Ball(5.0)), 10.0 / n,
         jp.PDBlockFW(sparsity=16, delta_scale=10.0, tol=1e-8, max_steps=100_000)),
        ("AGM", "logistic + l2^2", erm(losses.Logistic(), penalties.SquaredL2), 1e-3,
         jp.AGM(tol=1e-10, max_steps=20_000, check_every=50)),
        ("APPA (SDCA)", "logistic + l2^2", erm(losses.Logistic(), penalties.SquaredL2), 1e-3,
         jp.APPA(prox_lam=1e-2, inner="sdca", tol=1e-10, max_steps=400)),
        ("DualAPPA", "logistic + l2^2", erm(losses.Logistic(), penalties.SquaredL2), 1e-3,
         jp.DualAPPA(prox_lam=1e-2, tol=1e-10, max_steps=400)),
    ]


def main():
    X, y = jp.datasets.load("a1a", dense=True)
    X, y = np.asarray(X, float), np.asarray(y, float)
    m = int(0.8 * len(y))
    Xt, yt, Xv, yv = X[:m], y[:m], jnp.asarray(X[m:]), jnp.asarray(y[m:])
    rows = []
    for family, problem, build, lam0, solver in cases(Xt, yt):
        def val_loss(lam, build=build, solver=solver):
            w = jp.solve(build(lam), solver).params
            return jnp.mean(jax.nn.softplus(-yv * (Xv @ w)))

        sol = jax.jit(lambda lam, build=build, solver=solver: jp.solve(build(lam), solver))(lam0)
        f = jax.jit(val_loss)
        g = jax.jit(jax.grad(val_loss))
        _, cf, tf = harness.time_jax(f, lam0, repeat=3)
        gv, cg, tg = harness.time_jax(g, lam0, repeat=3)
        h = 1e-4 * lam0
        fd = (float(f(lam0 + h)) - float(f(lam0 - h))) / (2 * h)
        rows.append([family, problem, lam0, int(sol.steps), bool(sol.converged), tf, tg, tg / tf, cf, cg,
                     float(gv), fd])
        print(harness.markdown_table(HEAD, rows[-1:]), flush=True)
    load = os.getloadavg()
    notes = (f"Load average at the end: {load[0]:.2f} {load[1]:.2f} {load[2]:.2f} (2-core machine, possibly "
             "shared with other jobs; each ratio is from one run). 'FD' is a central difference of the jitted "
             "validation loss (step 1e-4 lam), a sanity check of the derivative, not a tight one.")
    worst = max(r[7] for r in rows)
    verdict = f"Largest ratio grad / solve: {worst:.2f} (target <= 3)."
    print(harness.write_results("grad_cost", "Cost of a gradient through a solve, per solver family",
                                [("grad / solve", harness.markdown_table(HEAD, rows) + "\n\n" + verdict)], notes))


HEAD = ["family", "problem", "lam", "steps", "converged", "solve s", "grad s", "ratio grad / solve",
        "compile solve s", "compile grad s", "d val / d lam", "FD"]

if __name__ == "__main__":
    main()
