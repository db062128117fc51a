"""Default settings on data in large units (issue 55): reproducers of the named failures, each at a
small size. A column in units 1000x larger than the others (heart_scale with three columns x1000),
scikit-learn's unscaled wine (column ranges 0.66 .. 1680), and PDBlockFW with a sparsity budget
below the support of the solution.

References are independent of the solver under test: cvxpy + Clarabel (tolerances 1e-12) for the
hinge SVMs, ProxNewton to a 1e-12 certified gap for the smooth ball problem.
"""
import warnings

import cvxpy as cp
import jax.numpy as jnp
import numpy as np
import pytest

import jaxprox as jp
from jaxprox.constraints import L1Ball
from jaxprox.loop import ConvergenceWarning
from jaxprox.losses import Hinge, SmoothedHinge
from jaxprox.penalties import SquaredL2
from jaxprox.problems.bias_svm import POLISH_DELTAS, active_set_polish, hinge_bias_risk, q2_feasible


def heart_x1000():
    """heart_scale with its first three columns x1000 (270 x 13)."""
    X, y = jp.datasets.load("heart_scale")
    X = np.array(X, dtype=float)
    X[:, :3] *= 1000.0
    return X, np.asarray(y, dtype=float)


def wine():
    """Class 0 against the rest of scikit-learn's wine, unscaled (178 x 13)."""
    from sklearn.datasets import load_wine

    X, y = load_wine(return_X_y=True)
    return X.astype(float), np.where(y == 0, 1.0, -1.0)


def bias_svm_reference(X, y, lam):
    """``(J*, w*)`` of ``lam/2 ||w||^2 + min_b mean hinge(y (X w + b))`` by cvxpy + Clarabel."""
    n, d = X.shape
    w, b = cp.Variable(d), cp.Variable()
    obj = cp.sum(cp.pos(1 - cp.multiply(y, X @ w + b))) / n + 0.5 * lam * cp.sum_squares(w)
    pr = cp.Problem(cp.Minimize(obj))
    pr.solve(solver=cp.CLARABEL, tol_gap_abs=1e-12, tol_gap_rel=1e-12, tol_feas=1e-12)
    assert pr.status == "optimal"
    return float(pr.value), np.asarray(w.value)


@pytest.mark.parametrize("strength", [1.0, 0.01])
def test_active_set_polish_exact_with_columns_x1000(strength):
    """The active-set polish read off the optimum is the optimum, with its dual point, when three
    columns are in units 1000x larger (its augmented-Lagrangian weight came from the mean column
    curvature: 5.7e-5 and 0.2 relative off at these two strengths)."""
    X, y = heart_x1000()
    n = X.shape[0]
    lam = strength * 10.0 / n
    ref, w_star = bias_svm_reference(X, y, lam)
    P = jp.BiasSVM(X, y, lam)
    s = P.A.mv(jnp.asarray(w_star))
    _, b = hinge_bias_risk(s, P.y)
    # the margin tolerances the solvers cycle through at their checks; the best is reported
    tries = [active_set_polish(P.A, P.y, P.lam, s, b, delta, cap=n) for delta in POLISH_DELTAS]
    primal, alpha = min(((float(P.objective(t[0])), t[2]) for t in tries), key=lambda v: v[0])
    assert abs(primal - ref) <= 1e-9 * ref
    dual = float(P.scaled_dual(q2_feasible(alpha, P.y, n)))
    assert dual <= ref + 1e-12 and primal - dual <= 1e-6 * primal


def test_bias_svm_default_on_wine_reaches_the_optimum():
    """BiasSVM's default solver (AGM on the dual) on unscaled wine at lam = 1/n: the reported point
    is the optimum to 1e-6 relative (it ended 6.7e-6 above it), and the certified gap is a valid
    bound that either certifies or is reported by a warning."""
    X, y = wine()
    lam = 1.0 / X.shape[0]
    ref, _ = bias_svm_reference(X, y, lam)
    P = jp.BiasSVM(X, y, lam)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        sol = jp.solve(P, jp.AGM(tol=1e-6, max_steps=40_000))
    f = float(P.objective(sol.params))
    assert (f - ref) / ref <= 1e-6
    assert float(sol.gap) >= f - ref - 1e-12
    assert bool(sol.converged) or any(issubclass(w.category, ConvergenceWarning) for w in caught)


def test_pdblockfw_sparsity_below_support_says_why():
    """PDBlockFW with ``sparsity`` below the support of the solution stops short, and the warning
    names the support cap and what to do; without the cap the same problem converges."""
    X, y = jp.datasets.load("heart_scale")
    X, y = np.asarray(X, dtype=float), np.asarray(y, dtype=float)
    n = X.shape[0]
    P = jp.ERM(X, y, SmoothedHinge(1.0), SquaredL2(10.0 / n), L1Ball(10.0))
    ref = jp.solve(P, jp.ProxNewton(tol=1e-12, max_steps=2000), warn=False)
    assert int(np.sum(np.abs(np.asarray(ref.params)) > 1e-8)) > 2
    with pytest.warns(ConvergenceWarning, match=r"sparsity=2.*support") as rec:
        sol = jp.solve(P, jp.PDBlockFW(sparsity=2, max_steps=300))
    assert not bool(sol.converged)
    assert "leave it None" in str(rec[0].message)
    full = jp.solve(P, jp.PDBlockFW(tol=1e-6))
    assert bool(full.converged)
    assert float(P.objective(full.params)) - float(ref.dual_value) <= 1e-6 * float(ref.dual_value)


@pytest.mark.parametrize("name", ["SDCA", "DualAPPA"])
def test_dual_methods_on_unscaled_plain_svm_say_why(name):
    """SDCA and Dual APPA on the plain SVM of unscaled wine: a change of variables ``w = c v``
    with the ridge written in ``v`` leaves their dual, and so their steps, unchanged, so there is no
    rescaling to apply; a short stop says that the columns are in different units and what to
    use instead (the certified gap stays a valid bound)."""
    X, y = wine()
    n = X.shape[0]
    P = jp.ERM(X, y, Hinge(), SquaredL2(10.0 / n))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        sol = jp.solve(P, getattr(jp, name)(tol=1e-6, max_steps=30))
    msgs = [str(w.message) for w in caught if issubclass(w.category, ConvergenceWarning)]
    assert not bool(sol.converged)
    assert any("different units" in m and "PDProx" in m for m in msgs)
    w = cp.Variable(X.shape[1])
    obj = cp.sum(cp.pos(1 - cp.multiply(y, X @ w))) / n + 0.5 * (10.0 / n) * cp.sum_squares(w)
    pr = cp.Problem(cp.Minimize(obj))
    pr.solve(solver=cp.CLARABEL, tol_gap_abs=1e-12, tol_gap_rel=1e-12, tol_feas=1e-12)
    assert float(sol.gap) >= float(P.objective(sol.params)) - pr.value - 1e-12
