"""WorkingSet (working sets + gap-safe screening): results against cvxpy + Clarabel and scikit-learn,
screening that never removes a feature of the optimum, growth of the working set, the default path,
and jit / vmap / grad agreeing with the plain solve."""
import cvxpy as cp
import jax
import jax.numpy as jnp
import numpy as np
import pytest
import scipy.sparse as sps

import jaxprox as jp
from jaxprox import losses, penalties
from jaxprox.solvers.working_set import WorkingSet, bucket


def correlated(n, d, rho=0.6, k=8, seed=0, noise=0.3):
    rng = np.random.default_rng(seed)
    Z = rng.standard_normal((n, d))
    X = np.empty_like(Z)
    X[:, 0] = Z[:, 0]
    for j in range(1, d):
        X[:, j] = rho * X[:, j - 1] + np.sqrt(1 - rho**2) * Z[:, j]
    w = np.zeros(d)
    w[rng.choice(d, k, replace=False)] = rng.standard_normal(k)
    return X, X @ w + noise * rng.standard_normal(n)


def cvx_optimum(X, y, kind, lam, l1_ratio=1.0):
    n, d = X.shape
    w = cp.Variable(d)
    z = X @ w
    risk = (cp.sum_squares(z - y) / (2 * n) if kind == "squared"
            else cp.sum(cp.logistic(-cp.multiply(y, z))) / n)
    pen = lam * (l1_ratio * cp.norm1(w) + 0.5 * (1 - l1_ratio) * cp.sum_squares(w))
    prob = cp.Problem(cp.Minimize(risk + pen))
    prob.solve(solver=cp.CLARABEL, tol_gap_abs=1e-12, tol_gap_rel=1e-12, tol_feas=1e-12)
    return prob.value, w.value


def lam_max(X, y, kind):
    g0 = X.T @ y / len(y) if kind == "squared" else X.T @ y / (2 * len(y))
    return float(np.max(np.abs(g0)))


CASES = [("squared", 1.0, 60, 200, 0.1), ("squared", 1.0, 60, 200, 0.02), ("squared", 0.7, 80, 150, 0.05),
         ("logistic", 1.0, 80, 150, 0.1), ("logistic", 1.0, 300, 40, 0.02)]


@pytest.mark.parametrize("kind,l1_ratio,n,d,frac", CASES)
def test_matches_clarabel_and_screening_is_safe(kind, l1_ratio, n, d, frac):
    X, y = correlated(n, d, seed=d)
    loss = losses.Squared()
    if kind == "logistic":
        y, loss = np.where(y > np.median(y), 1.0, -1.0), losses.Logistic()
    lam = frac * lam_max(X, y, kind) / l1_ratio
    pen = penalties.L1(lam) if l1_ratio == 1.0 else penalties.ElasticNet(lam, l1_ratio)
    prob = jp.ERM(X, y, loss, pen)
    sol = jp.solve(prob, WorkingSet(tol=1e-9))
    p_star, w_star = cvx_optimum(X, y, kind, lam, l1_ratio)
    assert int(sol.status) == 0 and sol.method.startswith(("WorkingSet", "ProxNewton"))
    P = float(sol.primal_value)
    assert abs(P - p_star) <= 1e-6 * abs(p_star)
    assert P - p_star <= float(sol.gap) + 1e-9 * abs(p_star)  # the certificate is honest
    # screening never removes a feature of the optimum: every feature the rule discards during the
    # solve has |grad_j f(w*)| < t at the reference optimum (so w*_j = 0 in every minimiser)
    ws = WorkingSet(tol=1e-9).prepare(prob).hoist(prob)
    s, step = ws.init(prob), jax.jit(lambda st: ws.step(prob, st))
    grad_star = np.asarray(prob.smooth_grad(jnp.asarray(w_star)))
    t = lam * l1_ratio
    for _ in range(6):
        s = step(s)
        out = ~np.asarray(s.kept)
        assert np.all(np.abs(grad_star[out]) < t * (1 + 1e-6)), "a screened feature is active at the optimum"
        assert np.all(np.abs(w_star[out]) < 1e-7)
    assert out.sum() > 0 or d < 50  # the rule discards features on these sparse problems


def test_working_set_grows_when_the_support_needs_room():
    X, y = correlated(80, 300, rho=0.3, k=60, seed=3)
    lam = 0.01 * lam_max(X, y, "squared")
    prob = jp.ERM(X, y, losses.Squared(), penalties.L1(lam))
    sol = jp.solve(prob, WorkingSet(size=32, tol=1e-9))
    p_star, w_star = cvx_optimum(X, y, "squared", lam)
    assert int(sol.status) == 0
    assert np.count_nonzero(np.abs(w_star) > 1e-8) > 16  # more than the first working set holds
    assert abs(float(sol.primal_value) - p_star) <= 1e-6 * p_star
    assert bucket(1, 1000) == 32 and bucket(33, 1000) == 64 and bucket(600, 1000) == 1000


def test_default_path_matches_lasso_path():
    from sklearn.linear_model import lasso_path

    X, y = correlated(400, 60, seed=1)
    lmax = lam_max(X, y, "squared")
    lams = np.logspace(np.log10(lmax), np.log10(lmax / 1000), 20)
    sols = jp.solve_path(jp.ERM(X, y, losses.Squared(), penalties.L1(lmax)), None, lams)
    assert sols.method.startswith("WorkingSet")
    assert np.all(np.asarray(sols.status) == 0)
    _, coefs, _ = lasso_path(X, y, alphas=lams, tol=1e-14, max_iter=100_000)
    P = lambda w, lam: 0.5 * np.mean((X @ w - y) ** 2) + lam * np.abs(w).sum()  # noqa: E731
    for i, lam in enumerate(lams):
        ref = P(coefs[:, i], lam)
        assert P(np.asarray(sols.params[i]), lam) <= ref * (1 + 1e-6)
        # the reported objective is the original problem's (the path ran on its compressed form)
        assert abs(float(sols.primal_value[i]) - P(np.asarray(sols.params[i]), lam)) <= 1e-9 * ref


def test_path_on_sparse_logistic_grows_and_converges():
    rng = np.random.default_rng(4)
    Xd = rng.standard_normal((120, 400)) * (rng.random((120, 400)) < 0.1)
    y = np.where(Xd[:, :10] @ rng.standard_normal(10) > 0, 1.0, -1.0)
    X = sps.csr_matrix(Xd)
    lmax = lam_max(Xd, y, "logistic")
    lams = np.logspace(np.log10(lmax), np.log10(lmax / 50), 8)
    sols = jp.solve_path(jp.ERM(X, y, losses.Logistic(), penalties.L1(lmax)), None, lams)
    assert np.all(np.asarray(sols.status) == 0)
    ref = jp.solve_path(jp.ERM(Xd, y, losses.Logistic(), penalties.L1(lmax)), jp.FISTA(tol=1e-11), lams, warn=False)
    rel = (np.asarray(sols.primal_value) - np.asarray(ref.primal_value)) / np.asarray(ref.primal_value)
    assert np.all(np.abs(rel) <= 1e-6)


def test_jit_vmap_grad_agree_with_the_plain_solve():
    X, y = correlated(50, 80, seed=2)
    lam = 0.1 * lam_max(X, y, "squared")
    prob = jp.ERM(X, y, losses.Squared(), penalties.L1(lam))
    plain = lambda l: jp.solve(prob.with_lam(l), jp.ProxNewton(tol=1e-12)).params  # noqa: E731
    ws = lambda l: jp.solve(prob.with_lam(l), WorkingSet(tol=1e-12)).params  # noqa: E731
    np.testing.assert_allclose(jax.jit(ws)(lam), plain(lam), atol=1e-8)
    lams = jnp.asarray([lam, 0.5 * lam, 0.25 * lam])
    np.testing.assert_allclose(jax.vmap(ws)(lams), jax.vmap(plain)(lams), atol=1e-8)
    # a working set smaller than d under jit / vmap (traced lam: the size given, no growth)
    small = lambda l: jp.solve(prob.with_lam(l), WorkingSet(size=32, tol=1e-12)).params  # noqa: E731
    np.testing.assert_allclose(jax.jit(small)(lam), plain(lam), atol=1e-8)
    np.testing.assert_allclose(jax.vmap(small)(lams), jax.vmap(plain)(lams), atol=1e-8)
    g_ws = jax.grad(lambda l: jnp.sum(ws(l) ** 2))(lam)
    np.testing.assert_allclose(jax.grad(lambda l: jnp.sum(small(l) ** 2))(lam), g_ws, rtol=1e-6)
    g_pl = jax.grad(lambda l: jnp.sum(plain(l) ** 2))(lam)
    np.testing.assert_allclose(g_ws, g_pl, rtol=1e-6)
    eps = 1e-6 * lam  # and both against a finite difference
    fd = (np.sum(np.asarray(plain(lam + eps)) ** 2) - np.sum(np.asarray(plain(lam - eps)) ** 2)) / (2 * eps)
    np.testing.assert_allclose(g_ws, fd, rtol=1e-4)


def test_refuses_problems_without_an_l1_part():
    X, y = correlated(30, 10)
    with pytest.raises(TypeError, match="l1 part"):
        jp.solve(jp.ERM(X, y, losses.Squared(), penalties.SquaredL2(0.1)), WorkingSet())
    with pytest.raises(TypeError, match="smooth loss"):
        jp.solve(jp.ERM(X, np.sign(y), losses.Hinge(), penalties.L1(0.1)), WorkingSet())
