"""AGM on the SVM duals certifies once per check with the exact dual point of its polished primal
(issue "Start fast"): the polish's multipliers are that dual point, the certificate and the
reported pair use it, and the polish's system is one Cholesky factor (LAPACK: a library call with
nothing for XLA to compile; ``scipy.linalg``, which jaxlib imports for it, is imported with jaxprox).
"""
import re

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxprox as jp
from jaxprox import losses, penalties
from jaxprox.problems import BiasSVM
from jaxprox.solvers.agm import AGM


def test_bias_svm_reports_the_exact_dual_of_its_polished_primal():
    """heart, lam = 1e-2: the reported ``(w, alpha)`` is a KKT pair to rounding (``lam w = X^T Y
    alpha`` to the accuracy of the polish, ``alpha`` in ``Q2``), so ``J(w) - D(alpha)`` is within
    ``tol`` and the certified gap is that of the reported pair; the solve's LAPACK calls are the
    symmetric eigenvalue call of ``||A||_2`` (:func:`jaxprox.operators.largest_eigenvalue`, a
    smaller graph than the power iteration) and the polish's Cholesky factor and its two
    triangular solves (library calls, where the Gauss-Jordan inverse they replace was a loop of
    kernels to compile: ``benchmarks/results/latency.md``, session 34)."""
    X, y = jp.datasets.load("heart_scale")
    n, lam = X.shape[0], 1e-2
    model = BiasSVM(X, y, lam)
    solver = AGM(tol=1e-9)
    sol = jp.solve(model, solver)
    w, a = np.asarray(sol.params), np.asarray(sol.dual)
    J = float(model.objective(sol.params))
    assert bool(sol.converged) and float(sol.gap) <= 1e-9 * J
    assert a.min() >= 0.0 and a.max() <= 1.0 / n and abs(a @ y) <= 1e-14
    assert np.linalg.norm(lam * w - X.T @ (y * a)) <= 1e-7 * np.linalg.norm(lam * w)
    assert -1e-14 * J <= J - float(model.dual_objective(sol.dual)) <= 1e-9 * J  # weak duality, rounding
    assert float(sol.dual_value) <= J and float(sol.primal_value) == pytest.approx(J, rel=1e-13)
    low = jax.jit(lambda m: jp.solve(m, solver).params).lower(model).as_text()
    assert set(re.findall(r"@(lapack_\w+)", low)) == {"lapack_dsyevd_ffi", "lapack_dpotrf_ffi", "lapack_dtrsm_ffi"}
    assert low.count("@lapack_") == 4  # eigh, potrf and the two triangular solves of cho_solve


def test_plain_svm_through_its_dual_reports_an_exact_pair():
    """The plain SVM (SVMDualModel, no bias): ``u`` is the exact ERM dual point of the polished
    ``w``: ``w = -A^T u / (n lam)`` to the accuracy of the polish and ``D(u) = P(w)`` within ``tol``."""
    X, y = jp.datasets.load("heart_scale")
    n, lam = X.shape[0], 1e-2
    prob = jp.ERM(X, y, losses.Hinge(), penalties.SquaredL2(lam))
    sol = jp.solve(prob, AGM(tol=1e-9))
    w, u = np.asarray(sol.params), np.asarray(sol.dual)
    P = float(prob.objective(sol.params))
    assert bool(sol.converged) and float(sol.gap) <= 1e-9 * P
    assert np.all(-y * u >= 0.0) and np.all(-y * u <= 1.0)
    assert np.linalg.norm(w + X.T @ u / (n * lam)) <= 1e-7 * np.linalg.norm(w)
    assert -1e-14 * P <= P - float(prob.dual_objective(sol.dual)) <= 1e-9 * P  # weak duality, rounding
