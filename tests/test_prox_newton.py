"""ProxNewton (jp.ProxNewton): the second-order reference solver of the path benchmarks.

References: liblinear (l1-logistic, C = 1/(n lam)), a tightly converged FISTA, central differences.
"""
import jax
import jax.numpy as jnp
import numpy as np
import pytest
import scipy.sparse

import jaxprox as jp
from jaxprox import constraints, losses, penalties


@pytest.fixture(scope="module")
def a1a():
    return jp.datasets.load("a1a")


def test_l1_logistic_matches_liblinear_with_quadratic_convergence(a1a):
    from sklearn.linear_model import LogisticRegression

    X, y = a1a
    n = X.shape[0]
    lam = 1e-3
    sk = LogisticRegression(penalty="l1", C=1.0 / (n * lam), solver="liblinear", random_state=0,
                            fit_intercept=False, tol=1e-12, max_iter=100_000).fit(X, y)
    w_sk = sk.coef_.ravel()
    f_sk = np.mean(np.logaddexp(0, -y * (X @ w_sk))) + lam * np.abs(w_sk).sum()
    X_sparse = jp.operators.sparse(scipy.sparse.csr_matrix(X))   # the padded-rows weighted Gram
    sol = jax.jit(jp.solve)(jp.ERM(X_sparse, y, losses.Logistic(), penalties.L1(lam)), jp.ProxNewton(tol=1e-12))
    f = float(sol.primal_value)
    assert bool(sol.converged) and int(sol.steps) <= 25
    assert abs(f - f_sk) <= 1e-8 * f_sk and f <= f_sk + 1e-12
    assert 0 <= float(sol.gap) <= 1e-12 * f
    # fast local convergence: from a relative gap of 1e-3 to 1e-11 in at most 4 Newton steps
    rel = np.asarray(sol.trace.gap[: int(sol.trace.count)]) / f
    assert np.argmax(rel <= 1e-11) - np.argmax(rel <= 1e-3) <= 4
    # a float32 model Hessian (the benchmarks' setting) still certifies a float64-tight optimum
    sol32 = jax.jit(jp.solve)(jp.ERM(X_sparse, y, losses.Logistic(), penalties.L1(lam)),
                              jp.ProxNewton(tol=1e-11, hessian_dtype="float32"))
    assert bool(sol32.converged) and int(sol32.steps) <= 30
    assert abs(float(sol32.primal_value) - f_sk) <= 1e-8 * f_sk


def test_constrained_ridge_logistic_matches_fista():
    X, y = jp.datasets.load("heart_scale", dense=True)
    prob = jp.ERM(X, y, losses.Logistic(), penalties.SquaredL2(0.05), constraints.Box(-0.1, 0.1))
    ref = jax.jit(jp.solve)(prob, jp.FISTA(tol=1e-13, max_steps=100_000))
    sol = jax.jit(jp.solve)(prob, jp.ProxNewton(tol=1e-12))
    assert bool(sol.converged) and bool(ref.converged)
    assert float(jnp.max(jnp.abs(sol.params))) <= 0.1 + 1e-15   # feasible
    np.testing.assert_allclose(sol.params, ref.params, atol=1e-6)
    assert abs(float(sol.primal_value - ref.primal_value)) <= 1e-10


def test_vmap_and_implicit_derivative():
    X, y = jp.datasets.load("heart_scale", dense=True)
    prob = jp.ERM(X, y, losses.Logistic(), penalties.L1(0.01))
    sv = jp.ProxNewton(tol=1e-13)
    c = jnp.asarray(np.random.default_rng(0).normal(size=X.shape[1]))
    one = jax.jit(lambda lam: jp.solve(prob.with_lam(lam), sv).params)
    lams = jnp.array([0.02, 0.01, 0.005])
    batched = jax.jit(jax.vmap(one))(lams)
    for i, lam in enumerate(lams):
        np.testing.assert_allclose(batched[i], one(lam), atol=1e-9)

    f = lambda lam: c @ one(lam)  # noqa: E731
    h = 1e-6
    fd = (f(0.01 + h) - f(0.01 - h)) / (2 * h)
    assert float(jax.grad(f)(0.01)) == pytest.approx(float(fd), rel=1e-5)
    assert float(jax.jvp(f, (0.01,), (1.0,))[1]) == pytest.approx(float(fd), rel=1e-5)


def test_bad_input_raises():
    X, y = jp.datasets.load("heart_scale", dense=True)
    with pytest.raises(ValueError, match="smooth loss"):
        jp.solve(jp.ERM(X, y, losses.Hinge(), penalties.L1(0.1)), jp.ProxNewton())
    with pytest.raises(ValueError, match="implicit"):
        jp.solve(jp.ERM(X, y, losses.Logistic(), penalties.L1(0.1)), jp.ProxNewton(adjoint="unrolled"))
