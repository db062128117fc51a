"""FISTA (jp.baselines.FISTA) on a1a against scikit-learn, with the objective scaling mapped:

* Lasso: sklearn minimises (1/(2n))||y - Xw||^2 + alpha ||w||_1  ==  ours with Squared, L1(lam=alpha).
* l1-logistic: sklearn (liblinear) minimises ||w||_1 + C sum_i log(1 + exp(-y_i x_i.w)); dividing by
  n C gives ours with Logistic, L1(lam = 1/(n C)).
"""
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxprox as jp
from jaxprox import losses, penalties


@pytest.fixture(scope="module")
def a1a():
    return jp.datasets.load("a1a")


def _solve(problem, tol=1e-10, **kw):
    return jax.jit(jp.solve)(problem, jp.FISTA(tol=tol, max_steps=50_000, **kw))


def test_lasso_matches_sklearn(a1a):
    from sklearn.linear_model import Lasso

    X, y = a1a
    lam = 0.01
    sk = Lasso(alpha=lam, fit_intercept=False, tol=1e-14, max_iter=1_000_000).fit(X, y)
    f_sk = 0.5 * np.mean((X @ sk.coef_ - y) ** 2) + lam * np.abs(sk.coef_).sum()
    sol = _solve(jp.ERM(X, y, losses.Squared(), penalties.L1(lam)))
    assert bool(sol.converged)
    assert abs(float(sol.primal_value) - f_sk) <= 1e-6 * abs(f_sk)
    # the certificate is an honest bound: gap >= P(w) - P* >= 0 and tiny
    assert 0 <= float(sol.gap) <= 1e-10 * float(sol.primal_value) + 1e-14
    assert float(sol.primal_value) - f_sk <= float(sol.gap) + 1e-12
    # a1a has identical columns, so w* is not unique; the fitted values X w* are
    np.testing.assert_allclose(X @ np.asarray(sol.params), X @ sk.coef_, atol=1e-5)


def test_l1_logistic_matches_sklearn(a1a):
    from sklearn.linear_model import LogisticRegression

    X, y = a1a
    n = X.shape[0]
    C = 0.5
    lam = 1.0 / (n * C)
    sk = LogisticRegression(penalty="l1", C=C, solver="liblinear", random_state=0, fit_intercept=False, tol=1e-12,
                            max_iter=100_000).fit(X, y)
    w = sk.coef_.ravel()
    f_sk = np.mean(np.logaddexp(0, -y * (X @ w))) + lam * np.abs(w).sum()
    sol = _solve(jp.ERM(X, y, losses.Logistic(), penalties.L1(lam)))
    f = float(sol.primal_value)
    assert bool(sol.converged)
    assert abs(f - f_sk) <= 1e-6 * f_sk
    assert f <= f_sk + 1e-9  # never worse than the reference
    assert f - float(sol.dual_value) == pytest.approx(float(sol.gap))


def test_sparse_and_dense_data_agree(a1a):
    X, y = a1a
    import scipy.sparse as sp

    p_dense = jp.ERM(X, y, losses.Logistic(), penalties.L1(1e-3))
    p_sparse = jp.ERM(sp.csr_matrix(X), y, losses.Logistic(), penalties.L1(1e-3))
    a, b = _solve(p_dense), _solve(p_sparse)
    np.testing.assert_allclose(a.params, b.params, atol=1e-7)
    assert abs(float(a.primal_value) - float(b.primal_value)) < 1e-12


def test_matrix_variable_multi_output():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((60, 8))
    Y = X @ rng.standard_normal((8, 3)) + 0.1 * rng.standard_normal((60, 3))
    prob = jp.ERM(X, Y, losses.Squared(), penalties.SquaredL2(0.1), n_outputs=3)
    sol = _solve(prob, tol=1e-14)  # ||W - W*|| <= sqrt(2 gap / lam): a 1e-7 match needs a ~1e-14 gap
    # closed form ridge: (X^T X / n + lam I) W = X^T Y / n
    W = np.linalg.solve(X.T @ X / 60 + 0.1 * np.eye(8), X.T @ Y / 60)
    np.testing.assert_allclose(sol.params, W, atol=1e-7)


def test_backtracking_recovers_from_bad_L0(a1a):
    X, y = a1a
    prob = jp.ERM(X, y, losses.Logistic(), penalties.L1(1e-3))
    good = _solve(prob)
    bad = jax.jit(jp.solve)(prob, jp.FISTA(tol=1e-10, max_steps=50_000, L0=1e-6))
    assert bool(bad.converged)
    assert abs(float(bad.primal_value) - float(good.primal_value)) < 1e-9
    with pytest.raises(TypeError, match="smooth"):
        jp.solve(jp.ERM(X, y, losses.Hinge(), penalties.L1(1e-3)), jp.FISTA())


def test_compressed_lasso_is_the_same_problem(a1a):
    """ERM.compressed(): the Lasso on its d x d sufficient statistics (thin QR) has the same
    objective values (offset), the same minimiser and an honest certificate, on a rank-deficient X
    (a1a's 0/1 features have rank 98 < 119)."""
    X, y = a1a
    X = np.asarray(X.todense() if hasattr(X, "todense") else X, float)
    y = np.asarray(y, float) - np.mean(y)
    prob = jp.ERM(X, y, losses.Squared(), penalties.L1(1e-2))
    small = prob.compressed()
    assert small.A.shape == (X.shape[1], X.shape[1])
    w = np.random.default_rng(0).standard_normal(X.shape[1])
    assert float(small.objective(w)) == pytest.approx(float(prob.objective(w)), rel=1e-12)
    sol, ref = _solve(small, tol=1e-12), _solve(prob, tol=1e-12)
    np.testing.assert_allclose(sol.params, ref.params, atol=1e-6)
    assert float(sol.primal_value) == pytest.approx(float(ref.primal_value), rel=1e-11)
    assert float(sol.dual_value) <= float(prob.objective(ref.params)) + 1e-12  # a valid lower bound
    with pytest.raises(ValueError, match="squared loss"):
        jp.ERM(X, np.sign(y), losses.Logistic(), penalties.L1(1e-3)).compressed()


def test_options_that_cannot_converge_are_refused():
    """A step-size decrease without the backtracking search shrinks L every step (found in the GPU
    benchmark: FISTA(decrease=0.9, max_backtrack=0) diverged on a1a's l1-logistic path): refused."""
    with pytest.raises(ValueError, match="backtracking search"):
        jp.FISTA(decrease=0.9, max_backtrack=0)
    for bad in ({"decrease": 0.0}, {"decrease": 1.5}, {"max_backtrack": -1}):
        with pytest.raises(ValueError):
            jp.FISTA(**bad)
    assert jp.FISTA(max_backtrack=0).max_backtrack == 0 and jp.FISTA(decrease=0.9).decrease == 0.9  # each alone is valid
