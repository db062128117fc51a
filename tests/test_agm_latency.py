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


@pytest.mark.parametrize("bias", [True, False])
def test_active_set_polish_margins_from_its_multiplier_product(bias):
    """``active_set_polish`` returns the polished point's margins ``X w + b`` from the product that
    forms its multipliers (every row in the cap) or from a product of their own (rows gathered,
    ``cap < n``): both equal the direct ``X w + b``, and both layouts solve the same system (the
    margin set fits in the smaller cap), so they give the same point and multipliers."""
    from jaxprox.operators import Dense
    from jaxprox.problems.bias_svm import active_set_polish

    X, y = jp.datasets.load("heart_scale", dense=True)
    A, y = Dense(jnp.asarray(X)), jnp.asarray(y)
    if bias:  # a point near the solution (its support vectors near the margin), with its bias
        model = BiasSVM(X, y, 1e-2)
        w0 = 1.001 * jnp.asarray(jp.solve(model, AGM(tol=1e-6)).params)
        b = model.bias(w0)
    else:
        w0 = 1.001 * jnp.asarray(jp.solve(jp.ERM(X, y, losses.Hinge(), penalties.SquaredL2(1e-2)), AGM(tol=1e-6)).params)
        b = jnp.asarray(0.0)
    s = A.mv(w0)
    on = int(jnp.sum(jnp.abs(y * (s + b) - 1.0) <= 0.05))
    assert 0 < on <= 100  # F is non-empty and fits in the gathered layout's cap
    out = [active_set_polish(A, y, 1e-2, s, b, 0.05, cap, bias=bias) for cap in (X.shape[0], 100)]
    for w, bp, alpha, sp in out:
        np.testing.assert_allclose(np.asarray(sp), X @ np.asarray(w) + float(bp), rtol=0, atol=1e-12)
        assert bias or float(bp) == 0.0
    (w1, b1, a1, _), (w2, b2, a2, _) = out
    np.testing.assert_allclose(np.asarray(w2), np.asarray(w1), rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(float(b2), float(b1), rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(np.asarray(a2), np.asarray(a1), rtol=1e-7, atol=1e-12)


def test_pg_dual_with_the_callers_product_is_the_same_bound():
    """``BiasSVM.pg_dual`` given ``xv = X v`` (from the certificate's matrix product) returns the
    same two dual values as computing ``X v`` itself, and each is a valid lower bound (at most
    the optimum's primal value)."""
    X, y = jp.datasets.load("heart_scale")
    model = BiasSVM(X, y, 1e-2)
    sol = jp.solve(model, AGM(tol=1e-9))
    a = jnp.asarray(sol.dual) * 0.9  # a point of Q2 off the optimum (the box scaled, the hyperplane kept)
    v = model.lin(a)
    L = 10.0 * float(model.lipschitz("euclidean"))
    own = np.asarray(jax.jit(lambda m: m.pg_dual(a, v, L))(model))
    given = np.asarray(jax.jit(lambda m: m.pg_dual(a, v, L, xv=m.A.mv(v)))(model))
    np.testing.assert_allclose(given, own, rtol=1e-13)
    assert np.all(given <= float(sol.primal_value) * (1 + 1e-12)) and own.shape == (2,)
