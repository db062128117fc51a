"""The multinomial (softmax) loss: its conjugate and dual domain, the certified ERM solve against
scikit-learn's lbfgs on digits (objective to 1e-6, honest gap), the default Newton-CG route of
ProxNewton for the ridge model (jit, vmap, grad, float32), and the estimator's default for more
than two classes."""
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxprox as jp


@pytest.fixture(scope="module")
def digits():
    from sklearn.datasets import load_digits

    X, y = load_digits(return_X_y=True)
    return X / 16.0, y


def test_fenchel_young_and_the_dual_domain():
    rng = np.random.default_rng(0)
    Z = jnp.asarray(rng.standard_normal((50, 4)))
    Y, _ = jp.datasets.one_hot(rng.integers(0, 4, 50))
    loss = jp.losses.Multinomial()
    U = loss.grad(Z, Y)
    # equality in Fenchel-Young at the gradient: l(z) + l*(u) = <u, z>, row by row
    np.testing.assert_allclose(loss.value(Z, Y) + loss.conjugate(U, Y), jnp.sum(U * Z, axis=1), atol=1e-12)
    # any u gives l(z) + l*(u) >= <u, z> (here: random feasible points p on the simplex)
    P = jnp.asarray(rng.dirichlet(np.ones(4), 50))
    assert bool(jnp.all(loss.value(Z, Y) + loss.conjugate(P - Y, Y) >= jnp.sum((P - Y) * Z, axis=1) - 1e-12))
    # scaled gradients stay feasible (the honest rescaling), points off the simplex are not
    assert bool(jnp.all(jnp.isfinite(loss.conjugate(0.3 * U, Y))))
    assert bool(jnp.all(jnp.isinf(loss.conjugate(U + 0.1, Y))))
    V = loss.project_dual(U + 0.3 * jnp.asarray(rng.standard_normal((50, 4))), Y)
    assert bool(jnp.all(jnp.isfinite(loss.conjugate(V, Y))))
    with pytest.raises(ValueError, match="one-hot"):
        loss.check_labels(np.ones((3, 2)))


def test_multinomial_erm_matches_lbfgs_with_an_honest_gap(digits):
    from sklearn.linear_model import LogisticRegression

    X, y = digits
    X, y = X[:600], y[:600]
    n = X.shape[0]
    Y, classes = jp.datasets.one_hot(y)
    for C, penalty in ((1.0, jp.penalties.SquaredL2(1.0 / n)), (0.1, jp.penalties.SquaredL2(10.0 / n))):
        P = jp.ERM(X, Y, jp.losses.Multinomial(), penalty, n_outputs=len(classes))
        sol = jp.solve(P, jp.FISTA(tol=1e-9))
        assert bool(sol.converged) and sol.params.shape == (X.shape[1], len(classes))
        ref = LogisticRegression(C=C, fit_intercept=False, tol=1e-12, max_iter=100_000).fit(X, y)
        f_ref = float(P.objective(jnp.asarray(ref.coef_.T)))
        f = float(sol.primal_value)
        assert abs(f - f_ref) <= 1e-6 * f_ref
        assert f - f_ref <= float(sol.gap) + 1e-12  # the certificate bounds the suboptimality
        pred = classes[np.argmax(X @ np.asarray(sol.params), axis=1)]
        assert np.mean(pred == ref.predict(X)) >= 0.998


def test_multinomial_l1_is_certified_and_sparse(digits):
    X, y = digits
    Y, classes = jp.datasets.one_hot(y[:500])
    P = jp.ERM(X[:500], Y, jp.losses.Multinomial(), jp.penalties.L1(2e-3), n_outputs=len(classes))
    sol = jp.solve(P, jp.FISTA(tol=1e-8))
    assert bool(sol.converged) and 0 < float(sol.gap) <= 1e-8 * float(sol.primal_value)
    assert 0 < np.mean(np.asarray(sol.params) == 0) < 1
    g = jax.grad(lambda lam: jnp.sum(jp.solve(P.with_lam(lam), jp.FISTA(tol=1e-10)).params ** 2))(2e-3)
    h = 1e-6
    fd = (float(jnp.sum(jp.solve(P.with_lam(2e-3 + h), jp.FISTA(tol=1e-12)).params ** 2))
          - float(jnp.sum(jp.solve(P.with_lam(2e-3 - h), jp.FISTA(tol=1e-12)).params ** 2))) / (2 * h)
    assert abs(float(g) - fd) <= 1e-3 * abs(fd)


def test_the_estimator_is_multinomial_for_more_than_two_classes(digits):
    from sklearn.linear_model import LogisticRegression as SkLR
    from sklearn.model_selection import train_test_split

    from jaxprox.sklearn import LogisticRegression

    X, y = digits
    Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.3, random_state=0, stratify=y)
    est = LogisticRegression(C=1.0).fit(Xtr, ytr)
    ref = SkLR(C=1.0).fit(Xtr, ytr)
    assert est.converged_ and est.coef_.shape == (10, X.shape[1])
    assert abs(est.score(Xte, yte) - ref.score(Xte, yte)) <= 0.003 + 1e-12
    np.testing.assert_allclose(est.predict_proba(Xte).sum(axis=1), 1.0, rtol=1e-12)
    ovr = LogisticRegression(C=1.0, multi_class="ovr").fit(Xtr, ytr)
    assert ovr.converged_ and ovr.score(Xte, yte) > 0.9
    with pytest.raises(ValueError, match="multi_class"):
        LogisticRegression(multi_class="softmax").fit(Xtr, ytr)


def _ridge_problem(X, y, lam):
    Y, classes = jp.datasets.one_hot(y)
    return jp.ERM(X, Y, jp.losses.Multinomial(), jp.penalties.SquaredL2(lam), n_outputs=len(classes))


def _lbfgs_objective(P, X, y, lam, n):
    """``P`` at scikit-learn's lbfgs solution (tol 1e-12) of the same model: ``C = 1 / (n lam)``."""
    from sklearn.linear_model import LogisticRegression

    ref = LogisticRegression(C=1.0 / (n * lam), fit_intercept=False, tol=1e-12, max_iter=100_000).fit(X, y)
    return float(P.objective(jnp.asarray(ref.coef_.T)))


def test_the_default_solver_is_newton_cg_for_the_ridge_and_agm_for_l1(digits):
    """The ridge multinomial model defaults to ProxNewton's Newton-CG route: objective within 1e-6
    of lbfgs at tol 1e-12 at three strengths (intercept column included, the estimator's model),
    gap honest; the l1 model (no Newton system) keeps AGM."""
    X, y = digits
    X = np.hstack([X, np.ones((len(y), 1))])
    n = X.shape[0]
    for C in (0.1, 1.0, 10.0):
        lam = 1.0 / (n * C)
        P = _ridge_problem(X, y, lam)
        sol = jp.solve(P, jp.ProxNewton(tol=1e-12))
        assert sol.method.startswith("ProxNewton") and bool(sol.converged) and int(sol.steps) <= 15
        assert type(jp.capabilities.default_solver(P)).__name__ == "ProxNewton"
        f_ref = _lbfgs_objective(P, X, y, lam, n)
        f = float(sol.primal_value)
        assert abs(f - f_ref) <= 1e-6 * f_ref, (C, f, f_ref)
        assert f - f_ref <= float(sol.gap) + 1e-12  # honest
        # the Jacobi column scaling (digits' nearly empty pixels) leaves Newton-CG's steps as they are
        unscaled = jp.solve(P, jp.ProxNewton(tol=1e-12, rescale=False))
        assert sol.method.endswith("(columns scaled)") and abs(int(unscaled.steps) - int(sol.steps)) <= 1
    Y, classes = jp.datasets.one_hot(y[:400])
    l1 = jp.ERM(X[:400], Y, jp.losses.Multinomial(), jp.penalties.L1(1e-3), n_outputs=len(classes))
    assert type(jp.capabilities.default_solver(l1)).__name__ == "AGM"
    with pytest.raises(TypeError, match="ProxNewton cannot solve"):
        jp.solve(l1, jp.ProxNewton())
    with pytest.raises(ValueError, match="Newton-CG"):
        jp.solve(P, jp.ProxNewton(inner="ssn"))
    sol = jp.solve(l1)
    assert sol.method.startswith("AGM") and bool(sol.converged)


def test_newton_cg_under_jit_vmap_grad_and_float32(digits):
    """The Newton-CG route is a jaxprox solver like the others: jitted, vmapped over lam (equal to
    separate solves), differentiated in lam by the implicit adjoint (against central differences of
    tight solves), and float32 in, float32 out with an honest certified gap."""
    X, y = digits
    X, y = X[:500], y[:500]
    lam = 1e-3
    P = _ridge_problem(X, y, lam)
    solver = jp.ProxNewton(tol=1e-11)
    one = jax.jit(jp.solve)(P, solver)
    assert bool(one.converged) and one.params.shape == (X.shape[1], 10)
    assert one.method.startswith("ProxNewton")
    lams = jnp.asarray([3e-4, 1e-3, 3e-3])
    batched = jax.vmap(lambda t: jp.solve(P.with_lam(t), solver))(lams)
    for i, t in enumerate(lams):
        ref = jp.solve(P.with_lam(t), solver)
        assert bool(batched.converged[i])
        # lam-strong convexity: ||w - w*||^2 <= 2 gap / lam for each point (gap at least its rounding)
        radius = lambda gap, p: np.sqrt(2 * max(float(gap), 1e-14 * float(p)) / float(t))  # noqa: E731
        bound = radius(batched.gap[i], batched.primal_value[i]) + radius(ref.gap, ref.primal_value)
        assert float(jnp.linalg.norm(batched.params[i] - ref.params)) <= bound
    G = jnp.asarray(np.random.default_rng(1).standard_normal(P.param_shape))
    f = lambda t: jnp.vdot(G, jp.solve(P.with_lam(t), solver).params)  # noqa: E731
    h = 1e-6
    tight = jp.ProxNewton(tol=1e-14)
    fd = (float(jnp.vdot(G, jp.solve(P.with_lam(lam + h), tight).params))
          - float(jnp.vdot(G, jp.solve(P.with_lam(lam - h), tight).params))) / (2 * h)
    g = float(jax.grad(f)(jnp.asarray(lam)))
    assert abs(g - fd) <= 1e-4 * abs(fd), (g, fd)
    P32 = _ridge_problem(X.astype(np.float32), y, np.float32(lam))
    s32 = jp.solve(P32, jp.ProxNewton(tol=1e-5))
    assert s32.params.dtype == jnp.float32 and bool(s32.converged)
    f_star = float(one.primal_value)
    assert float(P.objective(jnp.asarray(s32.params, jnp.float64))) - f_star <= float(s32.gap) + 1e-6 * f_star


def test_newton_cg_on_a_vector_model_matches_the_dense_model(digits):
    """``inner="cg"`` on a vector model (ridge logistic): the dense model's solution, without a
    ``d x d`` array; a penalty without a Newton system is refused."""
    X, y = digits
    yb = np.where(y[:600] % 2 == 0, 1.0, -1.0)
    P = jp.ERM(X[:600], yb, jp.losses.Logistic(), jp.penalties.SquaredL2(1e-3))
    cg = jp.solve(P, jp.ProxNewton(inner="cg", tol=1e-12))
    dense = jp.solve(P, jp.ProxNewton(tol=1e-12))
    assert bool(cg.converged) and bool(dense.converged)
    assert abs(float(cg.primal_value) - float(dense.primal_value)) <= 1e-10 * float(dense.primal_value)
    np.testing.assert_allclose(cg.params, dense.params, rtol=1e-5, atol=1e-6)
    with pytest.raises(ValueError, match="inner='cg'"):
        jp.solve(jp.ERM(X[:600], yb, jp.losses.Logistic(), jp.penalties.L1(1e-3)), jp.ProxNewton(inner="cg"))


def test_cross_validation_of_the_multinomial_model(digits):
    """LogisticRegressionCV over the multinomial model: each fold a warm-started certified path over
    Cs, the chosen C refitted on all rows (the same coefficients as LogisticRegression at that C),
    held-out accuracy within 0.3% of scikit-learn's multinomial LogisticRegressionCV."""
    from sklearn.linear_model import LogisticRegressionCV as SkCV
    from sklearn.model_selection import train_test_split

    from jaxprox.sklearn import LogisticRegression, LogisticRegressionCV

    X, y = digits
    Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.3, random_state=0, stratify=y)
    Cs = [0.1, 1.0, 10.0]
    est = LogisticRegressionCV(Cs=Cs, cv=3).fit(Xtr, ytr)
    assert est.folds_converged_ and est.scores_.shape == (3, 3) and est.coef_.shape == (10, X.shape[1])
    one = LogisticRegression(C=float(est.C_[0]), tol=est.tol).fit(Xtr, ytr)
    np.testing.assert_allclose(est.coef_, one.coef_, atol=1e-6)
    ref = SkCV(Cs=Cs, cv=3).fit(Xtr, ytr)
    assert abs(est.score(Xte, yte) - ref.score(Xte, yte)) <= 0.003 + 1e-12
    np.testing.assert_allclose(est.predict_proba(Xte).sum(axis=1), 1.0, rtol=1e-12)


@pytest.mark.parametrize("penalty", ["ridge", "group"])
def test_wine_held_out_against_clarabel(penalty):
    """A held-out set (wine, standardised, 3 classes): the default solve of the ridge model and of
    the group penalty across classes (``L21``: one feature's row of ``W`` in or out for every
    class at once) against cvxpy + Clarabel (log-sum-exp in exponential cones), objective to
    1e-6 with an honest gap; the group model zeroes whole rows."""
    import cvxpy as cp
    from sklearn.datasets import load_wine
    from sklearn.preprocessing import StandardScaler

    X, y = load_wine(return_X_y=True)
    X = StandardScaler().fit_transform(X)
    n, d = X.shape
    Y, classes = jp.datasets.one_hot(y)
    lam = 0.05
    pen = jp.penalties.SquaredL2(lam) if penalty == "ridge" else jp.penalties.L21(lam)
    sol = jp.solve(jp.ERM(X, Y, jp.losses.Multinomial(), pen, n_outputs=len(classes)), warn=False)
    W = cp.Variable((d, len(classes)))
    Z = X @ W
    risk = (cp.sum(cp.log_sum_exp(Z, axis=1)) - cp.sum(cp.multiply(Y, Z))) / n
    reg = lam / 2 * cp.sum_squares(W) if penalty == "ridge" else lam * cp.sum(cp.norm(W, 2, axis=1))
    ref = cp.Problem(cp.Minimize(risk + reg))
    ref.solve(solver=cp.CLARABEL, tol_gap_abs=1e-11, tol_gap_rel=1e-11, tol_feas=1e-11)
    f = float(sol.primal_value)
    assert bool(sol.converged)
    assert abs(f - ref.value) <= 1e-6 * ref.value
    assert f - ref.value <= float(sol.gap) + 1e-9 * ref.value
    if penalty == "group":
        rows = np.linalg.norm(np.asarray(sol.params), axis=1)
        assert np.sum(rows == 0) >= 1 and np.all((rows == 0) == (np.linalg.norm(W.value, axis=1) < 1e-6))
