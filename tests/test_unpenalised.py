"""Unpenalised ERM (``penalty=None``, or a penalty whose ``lam`` is 0): its Fenchel dual is feasible
only on ``{A^T u = 0}``, which no rounded dual point meets, so every solver used to run its whole
budget and warn with an infinite (or useless) gap. The certificate is now the curvature bound
(:func:`jaxprox.certificates.curvature_bound`), shared by every solver through
:meth:`jaxprox.ERM.lower_bound`; ``jp.solve`` drops a penalty with ``lam = 0``."""
import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxprox as jp
from jaxprox import losses, penalties
from jaxprox.certificates import curvature_bound

sklearn_lm = pytest.importorskip("sklearn.linear_model")


def _overlapping(n=80, d=6, seed=0):
    """Two overlapping classes (label noise), so the unpenalised logistic minimiser is finite."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    y = np.where(X @ rng.standard_normal(d) + 1.5 * rng.standard_normal(n) > 0, 1.0, -1.0)
    return X, y


@pytest.fixture(scope="module")
def logistic_reference():
    X, y = _overlapping()
    ref = sklearn_lm.LogisticRegression(C=np.inf, fit_intercept=False, tol=1e-12, max_iter=10_000,
                                        solver="newton-cg").fit(X, y)
    p_star = float(np.mean(np.logaddexp(0.0, -y * (X @ ref.coef_.ravel()))))
    return X, y, p_star


@pytest.mark.parametrize("penalty", [None, penalties.L1(0.0)], ids=["none", "l1_zero"])
@pytest.mark.parametrize("solver", [None, "FISTA", "AGM", "PDProx"])
def test_unpenalised_logistic_converges_and_certifies(logistic_reference, solver, penalty):
    X, y, p_star = logistic_reference
    P = jp.ERM(X, y, losses.Logistic(), penalty)
    with warnings.catch_warnings():
        warnings.simplefilter("error", jp.ConvergenceWarning)
        sol = jp.solve(P, None if solver is None else getattr(jp, solver)())
    assert bool(sol.converged)
    p = float(sol.primal_value)
    assert abs(p - p_star) <= 1e-6 * p_star
    # the certificate is an honest bound on the true suboptimality (rounding aside)
    assert float(sol.gap) >= p - p_star - 1e-12
    assert float(sol.gap) <= 1e-6 * p


def test_zero_ridge_is_certified_like_no_penalty(logistic_reference):
    X, y, p_star = logistic_reference
    sol = jp.solve(jp.ERM(X, y, losses.Logistic(), penalties.SquaredL2(0.0)), jp.ProxNewton(), warn=False)
    assert bool(sol.converged) and abs(float(sol.primal_value) - p_star) <= 1e-6 * p_star


def test_unpenalised_least_squares_matches_lstsq():
    rng = np.random.default_rng(1)
    X = rng.standard_normal((50, 5))
    y = X @ rng.standard_normal(5) + 0.3 * rng.standard_normal(50)
    w_ref = np.linalg.lstsq(X, y, rcond=None)[0]
    p_star = 0.5 * np.mean((X @ w_ref - y) ** 2)
    for S in (jp.FISTA(), jp.ProxNewton()):
        sol = jp.solve(jp.ERM(X, y, losses.Squared()), S, warn=False)
        assert bool(sol.converged), type(S).__name__
        assert abs(float(sol.primal_value) - p_star) <= 1e-6 * p_star
        assert float(sol.gap) >= float(sol.primal_value) - p_star - 1e-12


def test_wide_data_bound_uses_the_gram_matrix():
    """For ``d > n`` without a ridge the bound comes from the ``n x n`` Gram matrix: the same
    value as the ``d x d`` Hessian's positive spectrum, and exact for least squares (there
    ``inf P = 0``: ``y`` is in ``range(A)``)."""
    rng = np.random.default_rng(2)
    n, d = 12, 40
    X = np.repeat(rng.standard_normal((n // 2, d)), 2, axis=0)  # each point with both labels:
    yl = np.tile([1.0, -1.0], n // 2)                              # a minimiser (A w = 0) exists
    w = 1e-4 * rng.standard_normal(d)  # near the minimiser: the ball of the bound exists
    P = jp.ERM(X, yl, losses.Logistic())
    z = P.A.mv(jnp.asarray(w))
    g = P.A.rmv(P.loss.grad(z, P.y)) / n
    gram, full = curvature_bound(P, z, g), curvature_bound(P, z, g, jnp.zeros(d))
    assert np.isfinite(float(gram)) and float(gram) > 0
    np.testing.assert_allclose(float(gram), float(full), rtol=1e-6)
    X = rng.standard_normal((n, d))
    Q = jp.ERM(X, rng.standard_normal(n), losses.Squared())
    z = Q.A.mv(jnp.asarray(w))
    g = Q.A.rmv(z - Q.y) / n
    np.testing.assert_allclose(float(curvature_bound(Q, z, g)), float(Q.objective(jnp.asarray(w))), rtol=1e-9)


def test_zero_penalty_is_kept_under_jit_and_for_positive_lam(logistic_reference):
    X, y, _ = logistic_reference
    P = jp.ERM(X, y, losses.Logistic(), penalties.L1(0.0))
    assert P.without_zero_penalty().penalty is None
    Q = jp.ERM(X, y, losses.Logistic(), penalties.L1(1e-3))
    assert Q.without_zero_penalty() is Q
    seen = []

    def f(lam):  # a traced lam is never taken for zero
        seen.append(P.with_lam(lam).without_zero_penalty().penalty is not None)
        return lam

    jax.jit(f)(0.0)
    assert seen == [True]


def test_drsvm_rejects_a_zero_radius():
    X, y = _overlapping(20, 3)
    with pytest.raises(ValueError, match="epsilon must be > 0"):
        jp.DRSVM(X, y, epsilon=0.0)


def test_an_uncertifiable_problem_says_why():
    """No penalty and a loss without the curvature route (a smoothed hinge): the gap stays
    infinite, and the warning says why and what certifies it."""
    X, y = _overlapping(40, 4)
    with pytest.warns(jp.ConvergenceWarning, match="gap is infinite"):
        jp.solve(jp.ERM(X, y, losses.SmoothedHinge(1.0)), jp.FISTA(max_steps=50))
