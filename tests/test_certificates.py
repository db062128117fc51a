"""The certificate module (:mod:`jaxprox.certificates`) checked directly on small problems against
independent computations: the Fenchel dual value in closed form and against a Clarabel optimum
(``D(u) <= P* <= P(w)``, the gap closes at the optimum), the honest rescaling (a feasible dual
point), best-of, the running best, the curvature bound and the precision policy."""
import cvxpy as cp
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxprox as jp
from jaxprox import certificates as cert
from jaxprox.losses import Hinge, Logistic, Squared
from jaxprox.penalties import L1, SquaredL2


def _lasso(n=40, d=15, lam=0.05, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    y = X[:, :3] @ np.array([1.0, -2.0, 0.5]) + 0.1 * rng.standard_normal(n)
    return X, y, lam, jp.ERM(X, y, Squared(), L1(lam))


def _clarabel_lasso(X, y, lam):
    w = cp.Variable(X.shape[1])
    obj = cp.sum_squares(X @ w - y) / (2 * X.shape[0]) + lam * cp.norm1(w)
    cp.Problem(cp.Minimize(obj)).solve(solver=cp.CLARABEL, tol_gap_abs=1e-12, tol_gap_rel=1e-12, tol_feas=1e-12)
    return w.value


def test_dual_value_is_the_closed_form_lasso_dual():
    """``D(s u)`` for the Lasso: ``-(1/n) sum (s^2 u_i^2 / 2 + s y_i u_i)`` with
    ``s = min(1, lam / ||X^T u / n||_inf)`` (the l1 conjugate is the indicator of that ball)."""
    X, y, lam, P = _lasso()
    n = X.shape[0]
    for seed in range(3):
        u = np.random.default_rng(10 + seed).standard_normal(n)
        s = min(1.0, lam / np.max(np.abs(X.T @ u / n)))
        ref = -np.mean(0.5 * (s * u) ** 2 + s * y * u)
        np.testing.assert_allclose(float(cert.dual_value(P, jnp.asarray(u))), ref, rtol=1e-12)


def test_weak_duality_and_zero_gap_at_the_clarabel_optimum():
    """``D(u) <= P* <= P(w)`` for arbitrary ``w`` and ``u``, and the certificate of Clarabel's
    solution, ``P(w*) - D(honest_dual(l'(X w*)))``, is at Clarabel's accuracy."""
    X, y, lam, P = _lasso()
    w_star = _clarabel_lasso(X, y, lam)
    p_star = float(P.objective(jnp.asarray(w_star)))
    rng = np.random.default_rng(1)
    for _ in range(3):
        w, u = rng.standard_normal(X.shape[1]), rng.standard_normal(X.shape[0])
        assert float(cert.dual_value(P, jnp.asarray(u))) <= p_star + 1e-12
        assert p_star <= float(P.objective(jnp.asarray(w)))
    d = float(cert.dual_value(P, P.loss.dual_point(P.A.mv(jnp.asarray(w_star)), P.y)))
    assert d <= p_star + 1e-12
    assert p_star - d <= 1e-8 * abs(p_star)
    p, d2, gap = P.certificate(jnp.asarray(w_star))
    assert float(d2) == d and float(gap) == pytest.approx(p_star - d, abs=1e-15)


def test_honest_dual_is_feasible_and_leaves_feasible_points_alone():
    """The rescaled point lies in the dual-norm ball ``||X^T s u / n||_inf <= lam`` (so ``h*`` is
    finite and the raw dual objective at it equals :func:`dual_value`); a point already inside is
    returned unscaled."""
    X, y, lam, P = _lasso()
    n = X.shape[0]
    u = 5.0 * np.random.default_rng(2).standard_normal(n)
    v = cert.honest_dual(P, jnp.asarray(u))
    assert np.max(np.abs(X.T @ np.asarray(v) / n)) <= lam * (1 + 1e-12)
    assert np.isfinite(float(cert.dual_objective(P, v)))
    np.testing.assert_allclose(float(cert.dual_objective(P, v)), float(cert.dual_value(P, jnp.asarray(u))),
                               rtol=1e-12)
    assert not np.isfinite(float(cert.dual_objective(P, jnp.asarray(u))))  # the raw point is infeasible
    small = jnp.asarray(1e-3 * u)
    np.testing.assert_array_equal(np.asarray(cert.honest_dual(P, small)), np.asarray(small))
    # with a constraint (or no penalty) nothing is rescaled
    Q = jp.ERM(X, y, Squared(), None, jp.constraints.L1Ball(1.0))
    assert not cert.rescales_dual(Q) and cert.rescales_dual(P)
    np.testing.assert_array_equal(np.asarray(cert.honest_dual(Q, jnp.asarray(u))), u)


def test_best_of_and_best_dual_pick_the_larger_dual():
    X, y, lam, P = _lasso()
    rng = np.random.default_rng(3)
    us = [jnp.asarray(rng.standard_normal(X.shape[0])) for _ in range(2)]
    vals = [float(cert.dual_value(P, u)) for u in us]
    np.testing.assert_allclose(float(cert.best_of(lambda u: cert.dual_value(P, u), *us)), max(vals), rtol=1e-12)
    Aw = P.A.mv(jnp.zeros(X.shape[1]))
    own = float(cert.dual_value(P, P.loss.dual_point(Aw, P.y)))
    np.testing.assert_allclose(float(cert.best_dual(P, Aw, *us)), max(own, *vals), rtol=1e-12)


def test_keep_best_keeps_the_lowest_objective_and_its_dual():
    best, jbest, dual = jnp.zeros(2), jnp.asarray(1.0), jnp.zeros(3)
    cands = [(jnp.ones(2), jnp.asarray(2.0), jnp.ones(3)),        # worse: not taken
             (2 * jnp.ones(2), jnp.asarray(0.5), 2 * jnp.ones(3)),  # better: taken
             (3 * jnp.ones(2), jnp.asarray(jnp.nan), 3 * jnp.ones(3))]  # NaN: never taken
    b, j, u = cert.keep_best(cands, best, jbest, dual)
    assert float(j) == 0.5 and np.all(np.asarray(b) == 2.0) and np.all(np.asarray(u) == 2.0)
    new, old = (jnp.asarray(1.0), jnp.ones(2)), (jnp.asarray(0.0), jnp.zeros(2))
    kept = cert.keep_better(jnp.asarray(False), new, old)
    assert float(kept[0]) == 0.0 and np.all(np.asarray(kept[1]) == 0.0)


def test_curvature_bound_is_the_exact_least_squares_suboptimality():
    """Squared loss without a penalty: the bound is ``g^T H^+ g / 2 = P(w) - P*`` exactly (both
    for ``d <= n``, through the Hessian, and ``d > n``, through the Gram matrix)."""
    rng = np.random.default_rng(4)
    for n, d in ((30, 8), (8, 30)):
        X, y = rng.standard_normal((n, d)), rng.standard_normal(n)
        P = jp.ERM(X, y, Squared())
        w_star = np.linalg.lstsq(X, y, rcond=None)[0]
        p_star = float(P.objective(jnp.asarray(w_star)))
        w = jnp.asarray(rng.standard_normal(d))
        z = P.A.mv(w)
        g = P.A.rmv(P.loss.grad(z, P.y)) / n
        got = float(cert.curvature_bound(P, z, g))
        np.testing.assert_allclose(got, float(P.objective(w)) - p_star, rtol=1e-9)
        assert cert.curvature_certified(P)


def test_suboptimality_bound_bounds_ridge_logistic_suboptimality():
    rng = np.random.default_rng(5)
    X = rng.standard_normal((50, 6))
    y = np.sign(rng.standard_normal(50))
    lam = 1e-2
    P = jp.ERM(X, y, Logistic(), SquaredL2(lam))
    ref = jp.solve(P, jp.ProxNewton(tol=1e-13))
    w = jnp.asarray(rng.standard_normal(6))
    b = float(cert.suboptimality_bound(P, w))
    assert float(P.objective(w)) - float(ref.primal_value) <= b
    p, lo, b2 = cert.outer_certificate(P, w)
    assert float(b2) == b and float(p) - float(lo) == pytest.approx(b, rel=1e-12)
    assert float(cert.ridge_strength(P)) == lam


def test_precision_policy():
    """With float64 on (the suite's setting) certificates are evaluated in float64 whatever the
    data's dtype; a certifying function sees a float64 problem; the slack is never below the
    dtype's rounding; the blocked product is the product."""
    assert jax.config.jax_enable_x64
    assert cert.certificate_dtype(jnp.float32) == jnp.float64
    X, y, lam, _ = _lasso()
    P32 = jp.ERM(X.astype(np.float32), y.astype(np.float32), Squared(), L1(lam))
    seen = []
    cert.certifying(lambda p, u: seen.append((p.A.dtype, u.dtype)))(P32, jnp.ones(X.shape[0], jnp.float32))
    assert seen == [(jnp.float64, jnp.float64)]
    assert cert.rounding_slack(jnp.float32, 1e-12, 10) == 10 * float(jnp.finfo(jnp.float32).eps)
    assert cert.rounding_slack(jnp.float64, 1e-12, 1) == 1e-12
    u = np.random.default_rng(6).standard_normal(X.shape[0])
    np.testing.assert_allclose(np.asarray(cert.blocked_rmv(P32.A, jnp.asarray(u, jnp.float32), blocks=3)),
                               (X.astype(np.float32).T @ u.astype(np.float32)), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("data, strength", [("heart_scale", 1e-3), ("breast-cancer_scale", 1e-2)])
def test_support_duals_close_the_gap_at_the_1norm_svm_optimum(data, strength):
    """The dual points built from w's support alone (:func:`support_duals`) at a Clarabel optimum
    of the 1-norm SVM: feasible (``-y u`` in [0, 1]) and, for the right row count, optimal: the
    gap of ``w*`` closes to Clarabel's accuracy without the solver's own dual point."""
    import scipy.sparse as sps

    X, y = (np.asarray(a, np.float64) for a in jp.datasets.load(data, dense=True))
    n, d = X.shape
    lam = strength * np.max(np.abs(X.T @ y)) / n
    w = cp.Variable(d)
    obj = cp.sum(cp.pos(1 - cp.multiply(y, X @ w))) / n + lam * cp.norm1(w)
    cp.Problem(cp.Minimize(obj)).solve(solver=cp.CLARABEL, tol_gap_abs=1e-12, tol_gap_rel=1e-12, tol_feas=1e-12)
    ws = np.where(np.abs(w.value) > 1e-7 * np.max(np.abs(w.value)), w.value, 0.0)  # Clarabel's exact zeros
    prob = jp.ERM(X, y, Hinge(), L1(lam))
    assert cert.support_dual_rows(prob) == 0  # x64 on: the solver's own duals certify in float64
    assert cert.support_dual_rows(prob, precision=False) == min(n, d + 8)
    duals = cert.support_duals(prob, jnp.asarray(ws))
    assert len(duals) == len(cert.SUPPORT_DUAL_EXTRA)
    for u in duals:
        s = -y * np.asarray(u)
        assert np.all((s >= 0) & (s <= 1))
    p = float(prob.objective(jnp.asarray(ws)))
    best = max(float(cert.projected_dual_value(prob, u)) for u in duals)
    assert best <= p + 1e-12 and p - best <= 1e-8 * p, (p, best)
    # other problems get no such candidates
    for other in (jp.ERM(X, y, Hinge(), SquaredL2(lam)), jp.ERM(X, y, Logistic(), L1(lam)),
                  jp.ERM(jp.operators.sparse(sps.csr_matrix(X)), y, Hinge(), L1(lam))):
        assert cert.support_dual_rows(other, precision=False) == 0


@pytest.mark.parametrize("data, strength", [("heart_scale", 1e-3), ("a1a", 1e-3)])
def test_support_corrected_dual_keeps_the_gap_of_a_perturbed_optimum(data, strength):
    """l1-logistic at a weak penalty: ``w*`` (Clarabel) with its support perturbed by 1e-6
    relative (a float32-like rounding). The honest rescaling of ``l'(A w)`` shrinks it by the
    support gradient's error over ``lam``, so its gap grows by orders of magnitude; the dual
    point corrected on the support (:func:`support_corrected_dual`) keeps the gap near the
    perturbation's own cost, and stays a lower bound on Clarabel's ``P*``."""
    import scipy.sparse as sps

    X, y = jp.datasets.load(data, dense=True)
    X, y = np.asarray(X, np.float64), np.asarray(y, np.float64)
    n, d = X.shape
    lam = strength * np.max(np.abs(X.T @ y)) / (2 * n)
    w = cp.Variable(d)
    obj = cp.sum(cp.logistic(-cp.multiply(y, X @ w))) / n + lam * cp.norm1(w)
    pr = cp.Problem(cp.Minimize(obj))
    pr.solve(solver=cp.CLARABEL, tol_gap_abs=1e-12, tol_gap_rel=1e-12, tol_feas=1e-12)
    p_star = float(pr.value)
    ws = np.where(np.abs(w.value) > 1e-7 * np.max(np.abs(w.value)), w.value, 0.0)
    wp = ws * (1 + 1e-6 * np.random.default_rng(0).standard_normal(d))
    for A in (X, jp.operators.sparse(sps.csr_matrix(X))):
        prob = jp.ERM(A, y, Logistic(), L1(lam))
        assert cert.support_correction_columns(prob) == 0  # x64 on: off by default
        assert cert.support_correction_columns(prob, precision=False) == min(n, d)
        p = float(prob.objective(jnp.asarray(wp)))
        u = prob.loss.dual_point(prob.A.mv(jnp.asarray(wp)), prob.y)
        plain = float(prob.dual_value(u))
        fixed = float(prob.dual_value(cert.support_corrected_dual(prob, jnp.asarray(wp), u)))
        assert fixed <= p_star + 1e-9 * p_star and plain <= p_star + 1e-9 * p_star, (fixed, plain, p_star)
        assert p - fixed <= 1e-8 * p and p - plain >= 100 * (p - fixed), (p, fixed, plain)
    # other problems get no correction
    for other in (jp.ERM(X, y, Logistic(), SquaredL2(lam)), jp.ERM(X, y, Hinge(), L1(lam)),
                  jp.ERM(X, y, Logistic(), L1(lam), jp.constraints.L2Ball(1.0))):
        assert cert.support_correction_columns(other, precision=False) == 0
