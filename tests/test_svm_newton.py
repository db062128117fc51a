"""SVMNewton, the smoothing Newton continuation for the plain SVM as a public solver of
``jp.solve``: its optimum against Clarabel (objective to 1e-6 relative in float64), with an exact and
a subsampled Hessian, under ``jit`` and ``vmap`` over ``lam``, and an honest certificate. The
conformance suite (tests/test_conformance.py) runs it through every property of the contract."""
import cvxpy as cp
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxprox as jp
from jaxprox import losses, penalties

LAMS = (1e-3, 1e-2, 1e-1)


@pytest.fixture(scope="module")
def heart():
    return jp.datasets.load("heart_scale")


def _clarabel_svm(X, y, lam) -> float:
    """``min_w (1/n) sum_i max(0, 1 - y_i x_i^T w) + (lam/2) ||w||^2`` by Clarabel."""
    w = cp.Variable(X.shape[1])
    hinge = cp.sum(cp.pos(1 - cp.multiply(y, X @ w))) / X.shape[0]
    prob = cp.Problem(cp.Minimize(hinge + lam / 2 * cp.sum_squares(w)))
    prob.solve(solver=cp.CLARABEL, tol_gap_abs=1e-11, tol_gap_rel=1e-11, tol_feas=1e-11)
    return float(prob.value)


def _svm(X, y, lam):
    return jp.ERM(X, y, losses.Hinge(), penalties.SquaredL2(lam))


@pytest.mark.parametrize("hessian_rows", [2048, 64])  # every zone row / a subsample of the zone (n = 270)
def test_optimum_matches_clarabel(heart, hessian_rows):
    X, y = heart
    for lam in LAMS:
        problem = _svm(X, y, lam)
        sol = jp.solve(problem, jp.SVMNewton(hessian_rows=hessian_rows, tol=1e-10))
        ref = _clarabel_svm(X, y, lam)
        f = float(problem.objective(sol.params))
        assert bool(sol.converged) and sol.method == "SVMNewton", (lam, sol.status_name)
        assert abs(f - ref) <= 1e-6 * abs(ref), (lam, f, ref)
        assert float(sol.gap) >= f - ref - 1e-9 * abs(ref), (lam, float(sol.gap), f - ref)
        assert float(sol.primal_value) == pytest.approx(f, rel=1e-12)


def test_jit_and_vmap_over_lam_match_clarabel(heart):
    X, y = heart
    problem = _svm(X, y, LAMS[0])
    run = jax.jit(jax.vmap(lambda lam: jp.solve(problem.with_lam(lam), jp.SVMNewton(tol=1e-10), warn=False)))
    sols = run(jnp.asarray(LAMS))
    assert bool(jnp.all(sols.converged))
    for i, lam in enumerate(LAMS):
        ref = _clarabel_svm(X, y, lam)
        assert float(sols.primal_value[i]) == pytest.approx(ref, rel=1e-6)


def test_warm_start_and_the_dual_point(heart):
    """A warm start converges to the same optimum; ``Solution.dual`` is a point of the hinge's dual
    box, ``u = -y s`` with ``s in [0, 1]^n``."""
    X, y = heart
    problem = _svm(X, y, 1e-2)
    sol = jp.solve(problem, jp.SVMNewton(tol=1e-10))
    again = jp.solve(problem, jp.SVMNewton(tol=1e-10), init=0.5 * sol.params)
    assert bool(again.converged), again.status_name
    assert float(again.primal_value) == pytest.approx(float(sol.primal_value), rel=1e-9)
    s = -np.asarray(y) * np.asarray(sol.dual)
    assert np.all((s >= 0) & (s <= 1))


def test_float32_on_columns_in_large_units_converges(heart):
    """heart with 3 columns x1000 in float32 (the defaults sweep's ``heart_x1000``): the Newton system
    is solved after a Jacobi scaling, so a floor at the rounding level of the largest column's
    curvature no longer swamps the others' (before: 200 steps, 4e-3 off the optimum), and the
    default float32 tol is certified at a point within it of Clarabel's optimum."""
    X, y = heart
    X = np.asarray(X, np.float64).copy()
    X[:, :3] *= 1000.0
    for lam in (10.0 / 270, 0.1 / 270):
        p_star = _clarabel_svm(X, y, lam)
        problem = _svm(jnp.asarray(X, jnp.float32), jnp.asarray(y, jnp.float32), lam)
        sol = jp.solve(problem, jp.SVMNewton())
        assert sol.converged and sol.params.dtype == jnp.float32 and int(sol.steps) < 60, (lam, sol.status_name)
        f = float(_svm(X, y, lam).objective(np.asarray(sol.params, np.float64)))
        assert -1e-6 * p_star <= f - p_star <= float(sol.gap) + 1e-6 * p_star, (lam, f, p_star, float(sol.gap))
        assert f - p_star <= 1e-5 * p_star, (lam, f, p_star)


def _clarabel_bias_svm(X, y, lam) -> float:
    """``min_{w, b} (1/n) sum_i max(0, 1 - y_i (x_i^T w + b)) + (lam/2) ||w||^2`` by Clarabel."""
    w, b = cp.Variable(X.shape[1]), cp.Variable()
    hinge = cp.sum(cp.pos(1 - cp.multiply(y, X @ w + b))) / X.shape[0]
    prob = cp.Problem(cp.Minimize(hinge + lam / 2 * cp.sum_squares(w)))
    prob.solve(solver=cp.CLARABEL, tol_gap_abs=1e-11, tol_gap_rel=1e-11, tol_feas=1e-11)
    return float(prob.value)


def test_bias_svm_newton_matches_clarabel(heart):
    """BiasSVMNewton on jp.BiasSVM: the optimum with the bias to 1e-6 relative (float64), an honest
    certificate, and the same point as the AGM's dual run."""
    X, y = (np.asarray(a, np.float64) for a in heart)
    for lam in LAMS:
        p_star = _clarabel_bias_svm(X, y, lam)
        problem = jp.BiasSVM(X, y, lam)
        sol = jp.solve(problem, jp.BiasSVMNewton(tol=1e-10))
        assert sol.converged and sol.method == "BiasSVMNewton", (lam, sol.status_name)
        f = float(problem.objective(sol.params))
        assert abs(f - p_star) <= 1e-6 * p_star, (lam, f, p_star)
        agm = jp.solve(problem, jp.AGM(tol=1e-10))  # w* is unique (the ridge): the same point
        assert agm.converged
        w, w_agm = np.asarray(sol.params), np.asarray(agm.params)
        assert np.linalg.norm(w - w_agm) <= 1e-3 * np.linalg.norm(w_agm), (lam, np.linalg.norm(w - w_agm))
        assert f - p_star <= float(sol.gap) + 1e-9, (lam, f, p_star, float(sol.gap))
        alpha = np.asarray(sol.dual)
        assert alpha.min() >= 0 and alpha.max() <= 1 / len(y) * (1 + 1e-12) and abs(alpha @ y) <= 1e-12


def test_bias_svm_in_float32_where_the_dual_refuses(heart):
    """float32 data with 3 columns x1000: the AGM's dual cannot resolve lam (refused before tracing),
    while jp.solve(problem) takes BiasSVMNewton on the primal, keeps float32 and certifies the
    default float32 tol at a point within it of Clarabel's optimum."""
    X, y = (np.asarray(a, np.float64) for a in heart)
    X = X.copy()
    X[:, :3] *= 1000.0
    lam = 1.0 / X.shape[0]
    problem = jp.BiasSVM(jnp.asarray(X, jnp.float32), jnp.asarray(y, jnp.float32), lam)
    with pytest.raises(ValueError, match="below what the SVM dual can resolve in float32"):
        jp.solve(problem, jp.AGM())
    sol = jp.solve(problem)
    assert sol.method == "BiasSVMNewton" and sol.converged and sol.params.dtype == jnp.float32, sol.status_name
    p_star = _clarabel_bias_svm(X, y, lam)
    f = float(jp.BiasSVM(X, y, lam).objective(np.asarray(sol.params, np.float64)))
    assert -1e-6 * p_star <= f - p_star <= 1e-5 * p_star, (f, p_star, float(sol.gap))


def test_bias_svm_newton_on_columns_with_large_means():
    """scikit-learn's wine (class 0 against the rest, unscaled: column means up to 747): with the
    columns centred (CentredWithOnes) the bias no longer leans on the columns with large means;
    uncentred, [X, 1] took the 200-step budget at these strengths. Checked against Clarabel."""
    from sklearn.datasets import load_wine

    X, t = load_wine(return_X_y=True)
    y = np.where(t == 0, 1.0, -1.0)
    n = X.shape[0]
    for lam in (1.0 / n, 0.1 / n):
        p_star = _clarabel_bias_svm(X, y, lam)
        sol = jp.solve(jp.BiasSVM(X, y, lam), jp.BiasSVMNewton(tol=1e-8))
        assert sol.converged and int(sol.steps) < 100, (lam, sol.status_name, int(sol.steps))
        f = float(jp.BiasSVM(X, y, lam).objective(sol.params))
        assert abs(f - p_star) <= 1e-6 * p_star, (lam, f, p_star)


def _clarabel_svm_l1(X, y, lam):
    """``(P*, w*)`` of ``min_w (1/n) sum_i max(0, 1 - y_i x_i^T w) + lam ||w||_1`` by Clarabel."""
    w = cp.Variable(X.shape[1])
    hinge = cp.sum(cp.pos(1 - cp.multiply(y, X @ w))) / X.shape[0]
    prob = cp.Problem(cp.Minimize(hinge + lam * cp.norm1(w)))
    prob.solve(solver=cp.CLARABEL, tol_gap_abs=1e-11, tol_gap_rel=1e-11, tol_feas=1e-11)
    return float(prob.value), np.asarray(w.value)


def _l1_strengths(X, y):
    """``lam = s ||X^T y||_inf / n`` (``w* = 0`` from ``s = 1``) for s in 0.1, 0.01, 0.001."""
    top = np.max(np.abs(X.T @ y)) / X.shape[0]
    return [s * top for s in (0.1, 0.01, 0.001)]


def test_l1_svm_matches_clarabel(heart):
    """The 1-norm SVM (hinge + L1): the optimum to 1e-6 relative against Clarabel at three strengths,
    an honest certificate, the support of Clarabel's w* (its entries above 1e-6) with exact zeros
    elsewhere (the Huber zone is returned as 0), and the route of jp.solve (SVMNewton in float64, d <= n)."""
    X, y = (np.asarray(a, np.float64) for a in heart)
    for lam in _l1_strengths(X, y):
        p_star, w_star = _clarabel_svm_l1(X, y, lam)
        problem = jp.ERM(X, y, losses.Hinge(), penalties.L1(lam))
        sol = jp.solve(problem, jp.SVMNewton(tol=1e-9))
        assert sol.converged and sol.method == "SVMNewton", (lam, sol.status_name)
        f = float(problem.objective(sol.params))
        assert abs(f - p_star) <= 1e-6 * p_star, (lam, f, p_star)
        assert f - p_star <= float(sol.gap) + 1e-9 * p_star, (lam, f, p_star, float(sol.gap))
        w = np.asarray(sol.params)
        assert np.array_equal(w != 0.0, np.abs(w_star) > 1e-6), (lam, w, w_star)  # the same support
    assert jp.solve(jp.ERM(X, y, losses.Hinge(), penalties.L1(lam))).method == "SVMNewton"


def test_l1_svm_under_vmap_and_in_large_units(heart):
    """vmap over lam agrees with Clarabel; with 3 columns x1000 (the Huber widths follow the columns'
    units) and an all-zero column the steps stay as few and the optimum as exact."""
    X, y = (np.asarray(a, np.float64) for a in heart)
    X = np.hstack([X, np.zeros((X.shape[0], 1))])
    X[:, :3] *= 1000.0
    lams = _l1_strengths(X, y)
    problem = jp.ERM(X, y, losses.Hinge(), penalties.L1(lams[0]))
    sols = jax.jit(jax.vmap(lambda lam: jp.solve(problem.with_lam(lam), jp.SVMNewton(tol=1e-9), warn=False)))(
        jnp.asarray(lams))
    assert bool(jnp.all(sols.converged)) and int(jnp.max(sols.steps)) < 100, (sols.status, sols.steps)
    for i, lam in enumerate(lams):
        p_star, _ = _clarabel_svm_l1(X, y, lam)
        assert abs(float(sols.primal_value[i]) - p_star) <= 1e-6 * p_star, (lam, float(sols.primal_value[i]), p_star)
        assert float(sols.params[i, -1]) == 0.0


def test_wide_data_newton_systems_in_the_n_by_n_form():
    """Wide float64 data (n < d) solve the Newton systems in the n x n Woodbury form: the direction
    equals the d x d solve, and on 50 x 600 data (columns in mixed units, nearly collinear pairs, 10
    rows repeated with the opposite label: not separable) SVMNewton and BiasSVMNewton reach
    Clarabel's optimum to 1e-6 relative with honest certificates."""
    from jaxprox.solvers.svm_newton import woodbury_direction

    rng = np.random.default_rng(3)
    d = 600
    X = rng.standard_normal((40, d)) @ np.diag(np.exp(rng.uniform(-2, 2, d)))
    X[:, 1::2] = X[:, ::2] + 1e-3 * rng.standard_normal((40, d // 2))
    y = np.where(X[:, :5].sum(1) + 0.3 * rng.standard_normal(40) > 0, 1.0, -1.0)
    X, y = np.vstack([X, X[:10]]), np.concatenate([y, -y[:10]])
    n = len(y)
    c, weights, g = np.exp(rng.uniform(-6, 0, d)), rng.uniform(0, 50, n) * (rng.random(n) < 0.6), rng.standard_normal(d)
    exact = -np.linalg.solve(np.diag(c) + X.T @ (weights[:, None] * X), g)
    got = np.asarray(woodbury_direction(jnp.asarray(X), jnp.asarray(c), jnp.asarray(weights), jnp.asarray(g)))
    assert np.linalg.norm(got - exact) <= 1e-8 * np.linalg.norm(exact)
    for lam in (1e-1 / n, 1e-2 / n):
        for problem, solver, ref in ((_svm(X, y, lam), jp.SVMNewton(tol=1e-8), _clarabel_svm(X, y, lam)),
                                     (jp.BiasSVM(X, y, lam), jp.BiasSVMNewton(tol=1e-8), _clarabel_bias_svm(X, y, lam))):
            sol = jp.solve(problem, solver)
            f = float(problem.objective(sol.params))
            assert bool(sol.converged) and abs(f - ref) <= 1e-6 * ref, (lam, sol.method, sol.status_name, f, ref)
            assert f - ref <= float(sol.gap) + 1e-9 * ref, (lam, sol.method, f, ref, float(sol.gap))
