"""A dual point from the primal iterate for the 1-norm SVM in float32 (x64 off): the measurement
behind the next step for the default route's float32 misses on hinge + l1.

For each case, PDProx (the route's float32 solver) runs with its defaults; then, from its primal
iterate ``w`` alone, a dual point of the hinge loss is built: ``s_i = 1`` where the margin
residual ``r_i = 1 - y_i x_i^T w`` is positive, 0 where negative, and on the ``|J| + m`` rows of
smallest ``|r_i|`` (``J`` the support of ``w``, ``m`` in 0, 2, 5) ``s`` solves in least squares the
stationarity of the support, ``X_{M,J}^T (y s)_M = n lam sign(w_J) - X_{R,J}^T y_R``, with two
refinement steps whose residuals are compensated (:func:`jaxprox.certificates.compensated_rmv`),
then is clipped to ``[0, 1]``. Reported: PDProx's certified gap and the ERM certificate of ``w``
with that dual point (the best over ``m``), both relative.

    JAX_ENABLE_X64=0 python benchmarks/perf/bench_float32_dual_ls.py [--out float32_dual_ls]
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import jax
import jax.numpy as jnp

sys.path[:0] = [str(Path(__file__).resolve().parent), str(Path(__file__).resolve().parents[1])]
jax.config.update("jax_enable_x64", False)

import harness  # noqa: E402
import sweep_problems as sp  # noqa: E402

import jaxprox as jp  # noqa: E402
from jaxprox.certificates import compensated_rmv  # noqa: E402

CASES = [("german.numer", 0.001), ("a1a", 0.001), ("splice", 0.001), ("sonar", 0.01), ("heart_dupflip", 0.001),
         ("wine", 0.001), ("heavy_tail", 0.001), ("imbalanced", 0.01), ("ionosphere", 0.001), ("phishing", 0.001)]


def least_squares_dual(problem, w, extra: int):
    """The dual point ``s`` of the module docstring on the ``|J| + extra`` rows of smallest ``|r|``."""
    X, y, n = problem.A.X, problem.y, problem.n
    r = 1.0 - y * compensated_rmv(X.T, w)
    J = jnp.abs(w) > 0
    M = jnp.zeros(n, bool).at[jnp.argsort(jnp.abs(r))[: int(jnp.sum(J)) + extra]].set(True)
    s0 = jnp.where(M, 0.0, (r > 0).astype(X.dtype))
    b = jnp.where(J, n * problem.penalty.lam * jnp.sign(w) - compensated_rmv(X, y * s0), 0.0)
    A = jnp.where(J[:, None], (X * (y * M)[:, None]).T, 0.0)
    s = jnp.linalg.lstsq(A, b)[0]
    for _ in range(2):
        s = s + jnp.linalg.lstsq(A, b - jnp.where(J, compensated_rmv(X, y * jnp.where(M, s, 0.0)), 0.0))[0]
    return jnp.where(M, jnp.clip(s, 0.0, 1.0), s0)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default="float32_dual_ls")
    args = ap.parse_args()
    rows, t0, won = [], time.perf_counter(), 0
    for data, strength in CASES:
        X, y = sp.load(data)
        problem = sp.build("hinge_l1", jnp.asarray(X, jnp.float32), jnp.asarray(y, jnp.float32), strength)
        sol = jp.solve(problem, jp.PDProx(), warn=False)
        gaps = []
        for extra in (0, 2, 5):
            p, _, g = problem.best_certificate(sol.params, -problem.y * least_squares_dual(problem, sol.params, extra))
            gaps.append(float(g / p))
        ls = min(gaps)
        won += ls <= 1e-5
        rows.append(f"| {data} | {strength:g} | {int(jnp.sum(sol.params != 0))} | {sol.status_name} | "
                    f"{float(sol.gap / sol.primal_value):.1e} | {ls:.1e} |")
        print(rows[-1], flush=True)
    table = "\n".join(["| data | strength | nonzeros of w | PDProx status | PDProx certified gap (rel.) | "
                       "with the least-squares dual point (rel.) |", "|---" * 6 + "|", *rows])
    summary = (f"{won} of {len(CASES)} cases certify the float32 default 1e-5 with the least-squares dual point "
               f"of PDProx's own iterate.")
    harness.write_results(args.out, "float32 1-norm SVM: a dual point from the primal iterate",
                          [("Summary", summary), ("Per case", table)],
                          notes=f"{__doc__.split(chr(10) + chr(10))[1]} x64 off. Total wall time "
                                f"{time.perf_counter() - t0:.0f} s.")


if __name__ == "__main__":
    main()
