"""ProxNewton (jp.ProxNewton): the second-order reference solver of the path benchmarks.

References: liblinear (l1-logistic, C = 1/(n lam)), a tightly converged FISTA, central differences.
"""
import warnings

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


def test_float32_gram_by_default_on_many_rows_keeps_the_float64_optimum():
    """From GRAM32_ROWS rows on, a non-quadratic loss's Newton model is formed in float32 by
    default (the O(n d^2) Gram dominates a step); the certificate stays float64, so the solve
    reaches the same tight optimum as the exact model, in about as many Newton steps."""
    from jaxprox.baselines.prox_newton import GRAM32_ROWS

    rng = np.random.default_rng(3)
    n, d = GRAM32_ROWS, 40
    Z = rng.standard_normal((n, d))
    X = Z + 0.8 * Z[:, [0]]                                   # correlated columns
    X[:, 5] *= 300.0                                           # and one in large units
    y = np.where(X[:, :3] @ np.array([1.0, -2.0, 0.5]) + rng.standard_normal(n) > 0, 1.0, -1.0)
    lam = 0.02 * np.max(np.abs(X.T @ y)) / n
    prob = jp.ERM(X, y, losses.Logistic(), penalties.L1(lam))
    assert jp.ProxNewton().gram_dtype(prob) == "float32"
    assert jp.ProxNewton().gram_dtype(jp.ERM(X[:-1], y[:-1], losses.Logistic(), penalties.L1(lam))) is None
    assert jp.ProxNewton().gram_dtype(jp.ERM(X, y, losses.Squared(), penalties.L1(lam))) is None
    assert jp.ProxNewton(hessian_dtype="float64").gram_dtype(prob) == "float64"
    sol = jax.jit(jp.solve)(prob, jp.ProxNewton(tol=1e-11))
    ref = jax.jit(jp.solve)(prob, jp.ProxNewton(tol=1e-11, hessian_dtype="float64"))
    assert bool(sol.converged) and bool(ref.converged)
    assert int(sol.steps) <= int(ref.steps) + 3
    f, f_ref = float(sol.primal_value), float(ref.primal_value)
    assert abs(f - f_ref) <= 1e-10 * f_ref and 0 <= float(sol.gap) <= 1e-11 * f
    np.testing.assert_array_equal(np.asarray(sol.params) != 0, np.asarray(ref.params) != 0)


def test_constrained_ridge_logistic_matches_fista():
    X, y = jp.datasets.load("heart_scale", dense=True)
    prob = jp.ERM(X, y, losses.Logistic(), penalties.SquaredL2(0.05), constraints.Box(-0.1, 0.1))
    ref = jax.jit(jp.solve)(prob, jp.FISTA(tol=1e-13, max_steps=100_000))
    sol = jax.jit(jp.solve)(prob, jp.ProxNewton(tol=1e-12))
    assert bool(sol.converged) and bool(ref.converged)
    assert float(jnp.max(jnp.abs(sol.params))) <= 0.1 + 1e-15   # feasible
    np.testing.assert_allclose(sol.params, ref.params, atol=1e-6)
    assert abs(float(sol.primal_value - ref.primal_value)) <= 1e-10


def test_ssn_lasso_path_is_exact_in_few_newton_steps(a1a):
    """The semismooth Newton inner solver on the compressed a1a Lasso: every lambda of a warm path
    matches scikit-learn's lasso_path (tol 1e-12) to 1e-9 relative, with a certified gap, and
    needs a few Newton steps per lambda (the Hessian is hoisted: the loss is quadratic)."""
    from sklearn.linear_model import lasso_path

    X, y = a1a
    X, y = np.asarray(X, float), np.asarray(y, float) - np.mean(y)
    n = X.shape[0]
    lam_max = np.max(np.abs(X.T @ y)) / n
    lams = np.logspace(np.log10(lam_max), np.log10(lam_max / 300), 12)
    prob = jp.ERM(X, y, losses.Squared(), penalties.L1(float(lams[0])))
    sv = jp.ProxNewton(tol=1e-12, inner="ssn")
    assert sv.hoist(prob.compressed()).hessian.shape == (X.shape[1], X.shape[1])
    sols = jax.jit(lambda ls: jp.solve_path(prob.compressed(), sv, ls))(jnp.asarray(lams))
    assert bool(jnp.all(sols.converged))
    assert int(jnp.max(sols.steps)) <= 5 and int(jnp.sum(sols.steps)) <= 3 * len(lams)
    W_sk = lasso_path(X, y, alphas=lams, tol=1e-12, max_iter=1_000_000)[1].T
    for w, w_sk, lam, gap in zip(np.asarray(sols.params), W_sk, lams, np.asarray(sols.gap)):
        f = lambda v: 0.5 * np.mean((X @ v - y) ** 2) + lam * np.abs(v).sum()  # noqa: E731
        assert f(w) <= f(w_sk) * (1 + 1e-9) and f(w_sk) <= f(w) * (1 + 1e-9)
        assert -1e-15 * f(w) <= gap <= 1e-12 * f(w)  # >= 0 up to rounding (gap = 0 at lam_max, w = 0)
    # under vmap (the inner while_loops batched), cold-started: the same optimal values (a1a has
    # duplicate columns, so the minimisers themselves need not be unique)
    batched = jax.jit(jax.vmap(lambda lam: jp.solve(prob.compressed().with_lam(lam), sv)))(lams[[2, 7, 11]])
    assert bool(jnp.all(batched.converged))
    np.testing.assert_allclose(batched.primal_value, sols.primal_value[jnp.array([2, 7, 11])], rtol=1e-11)


@pytest.mark.parametrize("case", ["group_lasso", "elastic_net", "box_ridge"])
def test_ssn_matches_fista_on_other_proxes(case):
    """Both branches of the Newton system: LU with the full prox Jacobian (group lasso, a
    non-separable prox) and Cholesky (elastic net: P = 1/(1 + b) on the support; a box-constrained
    ridge: the projection's 0/1 Jacobian)."""
    X, y = jp.datasets.load("heart_scale", dense=True)
    d = X.shape[1]
    pen, con = {"group_lasso": (penalties.GroupLasso(0.02, np.arange(d) // 3), None),
                "elastic_net": (penalties.ElasticNet(0.03, 0.7), None),
                "box_ridge": (penalties.SquaredL2(0.05), constraints.Box(-0.1, 0.1))}[case]
    prob = jp.ERM(X, y, losses.Logistic(), pen, con)
    assert prob.prox_separable == (case != "group_lasso")
    ref = jax.jit(jp.solve)(prob, jp.FISTA(tol=1e-13, max_steps=100_000))
    sol = jax.jit(jp.solve)(prob, jp.ProxNewton(tol=1e-12, inner="ssn"))
    assert bool(sol.converged) and bool(ref.converged) and int(sol.steps) <= 15
    np.testing.assert_allclose(sol.params, ref.params, atol=1e-6)
    assert abs(float(sol.primal_value - ref.primal_value)) <= 1e-10
    if con is not None:
        assert float(jnp.max(jnp.abs(sol.params))) <= 0.1 + 1e-15


@pytest.mark.parametrize("mu, lam", [(0.5, 1e-2), (0.1, 1e-4), (0.5, 1e-4)])
def test_flat_newton_model_still_descends(mu, lam):
    """A smoothed hinge with ``mu < 1`` has no curvature at ``w = 0`` (every margin on a linear
    piece) and little away from it; under a weak l1 penalty the Newton model is flat or nearly so.
    ProxNewton used to stop at ``w = 0`` (a zero step from a metric of zeros) or stall where the
    line search found no decrease; the flat model's metric is now the global curvature bound and a
    failed line search falls back to the proximal-gradient step. Reference: FISTA to 1e-12."""
    rng = np.random.default_rng(0)
    X = rng.standard_normal((80, 6))
    y = np.sign(X @ rng.standard_normal(6) + rng.standard_normal(80))
    P = jp.ERM(X, y, losses.SmoothedHinge(mu), penalties.L1(lam))
    ref = jp.solve(P, jp.FISTA(tol=1e-12, max_steps=200_000), warn=False)
    sol = jp.solve(P, jp.ProxNewton(tol=1e-9))
    assert bool(sol.converged)
    p, pref = float(sol.primal_value), float(ref.primal_value)
    assert abs(p - pref) <= 1e-8 * pref and p - pref <= float(sol.gap) + 1e-12


def test_bad_input_raises():
    X, y = jp.datasets.load("heart_scale", dense=True)
    with pytest.raises(TypeError, match="smooth loss"):
        jp.solve(jp.ERM(X, y, losses.Hinge(), penalties.L1(0.1)), jp.ProxNewton())
    with pytest.raises(ValueError, match="implicit"):
        jp.solve(jp.ERM(X, y, losses.Logistic(), penalties.L1(0.1)), jp.ProxNewton(), adjoint=jp.Unrolled())
    with pytest.raises(ValueError, match="inner"):
        jp.solve(jp.ERM(X, y, losses.Logistic(), penalties.L1(0.1)), jp.ProxNewton(inner="cd"))


def test_diagonal_metric_handles_unscaled_features():
    """Unscaled columns (australian: ranges up to 1e5, a curvature spread of ~1e10 in H): the inner
    problem's prox-gradient steps in the diagonal metric D >= H (ProxNewton.metric) keep the l1
    logistic fits of a cross-validation fold to a handful of Newton steps (with the scalar
    curvature bound this fold took 500 steps at C = 0.1 without converging); the objective
    matches liblinear run to a tight tolerance."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import StratifiedKFold, train_test_split

    X, y = jp.datasets.load("australian", dense=True)
    X, y = np.asarray(X), np.asarray(y)
    Xtr, _, ytr, _ = train_test_split(X, y, test_size=0.3, stratify=y, random_state=0)
    train = list(StratifiedKFold(3).split(Xtr, ytr))[2][0]
    X, y = Xtr[train], ytr[train]
    n = X.shape[0]
    for C in (0.1, 1.0):
        lam = 1.0 / (n * C)
        sol = jp.solve(jp.ERM(X, y, losses.Logistic(), penalties.L1(lam)), jp.ProxNewton(inner="ssn", tol=1e-10))
        assert bool(sol.converged) and int(sol.steps) <= 40, (C, int(sol.steps))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            sk = LogisticRegression(penalty="l1", C=C, solver="liblinear", fit_intercept=False, tol=1e-12,
                                    max_iter=1_000_000).fit(X, y)
        w = sk.coef_.ravel()
        f_sk = np.mean(np.logaddexp(0, -y * (X @ w))) + lam * np.abs(w).sum()
        assert float(sol.primal_value) <= f_sk * (1 + 1e-9)
        assert float(sol.primal_value) >= f_sk * (1 - 1e-6)


@pytest.mark.parametrize("loss,penalty", [
    (losses.Logistic(), penalties.L1(0.05)), (losses.Logistic(), penalties.SquaredL2(0.1)),
    (losses.Squared(), penalties.ElasticNet(0.05, 0.5)), (losses.SmoothedHinge(0.5), penalties.L1(0.02)),
    (losses.Logistic(), None)])
def test_certificate_at_equals_the_certificate(loss, penalty):
    """``ERM.certificate_at(w, A w, A^T l'(A w) / n)`` (ProxNewton's certificate, no product with
    ``A``) is ``ERM.certificate(w)``: primal, dual (with the honest rescaling of the dual point)
    and gap, with an offset, at a point that is not optimal."""
    X, y = jp.datasets.load("heart_scale", dense=True)
    prob = jp.ERM(X, y, loss, penalty, offset=0.25)
    w = 0.3 * np.random.default_rng(0).standard_normal(X.shape[1])
    Aw = prob.A.mv(w)
    at = prob.certificate_at(w, Aw, prob.A.rmv(loss.grad(Aw, prob.y)) / prob.n)
    ref = prob.certificate(w)
    for a, b in zip(at, ref):  # without a penalty the dual is -inf away from A^T u = 0: both say so
        assert np.isfinite(float(b)) or penalty is None
        np.testing.assert_allclose(float(a), float(b), rtol=1e-12, atol=1e-13)
    assert penalty is not None or float(at[1]) == -np.inf


@pytest.mark.parametrize("penalty", [penalties.L1(0.02), penalties.SquaredL2(0.1), penalties.ElasticNet(0.05, 0.5)])
def test_dual_value_and_best_dual_take_one_product(penalty):
    """``ERM.dual_value(u)`` is ``D(honest_dual(u))`` (the rescaled point scored afresh), from one
    product ``A^T u``; ``ERM.best_dual(A w, u_1, u_2)`` is the largest of the candidates' dual
    values scored one at a time, from one matrix-matrix product; and ``best_certificate`` is
    ``P(w)`` against that bound."""
    import re

    X, y = jp.datasets.load("heart_scale", dense=True)
    prob = jp.ERM(X, y, losses.Logistic(), penalty, offset=0.25)
    rng = np.random.default_rng(1)
    w = 0.3 * rng.standard_normal(X.shape[1])
    us = [prob.loss.project_dual(jnp.asarray(rng.standard_normal(X.shape[0])), prob.y) for _ in range(2)]
    ref_value = lambda u: float(prob.dual_objective(prob.honest_dual(u)))  # noqa: E731  (two products)
    for u in us:
        assert np.isfinite(ref_value(u))
        np.testing.assert_allclose(float(prob.dual_value(u)), ref_value(u), rtol=1e-12)
        # the L1 scale is active at these points: dual_value's s v path is exercised
        assert (float(jnp.max(jnp.abs(prob.honest_dual(u) - u))) > 0) == isinstance(penalty, penalties.L1)
    text = jax.jit(lambda u: prob.dual_value(u)).lower(us[0]).as_text()
    assert len(re.findall(r"stablehlo\.dot_general", text)) == 1
    Aw = prob.A.mv(w)
    cands = [ref_value(u) for u in [prob.loss.dual_point(Aw, prob.y)] + us]
    np.testing.assert_allclose(float(prob.best_dual(Aw, *us)), max(cands), rtol=1e-12)
    assert len(set(cands)) == 3  # distinct: the max is a real choice
    text = jax.jit(lambda Aw, a, b: prob.best_dual(Aw, a, b)).lower(Aw, *us).as_text()
    assert len(re.findall(r"stablehlo\.dot_general", text)) == 1
    p, d, g = prob.best_certificate(w, *us)
    np.testing.assert_allclose(float(p), float(prob.objective(w)), rtol=1e-13)
    np.testing.assert_allclose(float(d), max(cands), rtol=1e-12)
    np.testing.assert_allclose(float(g), float(p) - float(d), rtol=1e-12)
