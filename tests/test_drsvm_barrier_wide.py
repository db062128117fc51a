"""DRSVMBarrier on more features than samples (n < d), where its Newton system used to be of
order 2d + 1 for q = 1 with a dense cone Jacobian: the r block is now eliminated (order d + 1);
against cvxpy + Clarabel, with c = 0 and c > 0 (the linf cone's structured rows are checked on
a1a in test_drsvm_barrier.py)."""
import numpy as np
import pytest

import jaxprox as jp

cp = pytest.importorskip("cvxpy")


def _clarabel(Z, norm, eps, c, kappa=1.0):
    n, d = Z.shape
    w, lam, u = cp.Variable(d), cp.Variable(), cp.Variable(n)
    h = cp.maximum(cp.maximum(1 - u, 1 + u - kappa * lam), 0)
    q = {"l1": 1, "linf": "inf"}[norm]
    obj = eps * lam + cp.sum(h) / n + 0.5 * c * cp.sum_squares(w)
    prob = cp.Problem(cp.Minimize(obj), [u == Z @ w, cp.norm(w, q) <= lam])
    prob.solve(solver=cp.CLARABEL, tol_gap_abs=1e-11, tol_gap_rel=1e-11, tol_feas=1e-11)
    return prob.value


@pytest.mark.parametrize("c", [0.0, 0.5])
def test_barrier_with_more_features_than_samples_matches_clarabel(c):
    norm = "l1"
    rng = np.random.default_rng(3)
    n, d = 40, 300
    X = rng.standard_normal((n, d)) * rng.uniform(0.2, 2.0, size=d)
    y = np.sign(X[:, :5] @ rng.standard_normal(5) + 0.3 * rng.standard_normal(n))
    eps = 0.05
    pr = jp.DRSVM(X, y, epsilon=eps, norm=norm, c=c)
    sol = jp.solve(pr, jp.DRSVMBarrier(tol=1e-10))
    f_ref = _clarabel(np.asarray(pr.Z), norm, eps, c)
    f = float(pr.objective(sol.params))
    assert bool(sol.converged) and bool(pr.feasible(sol.params, 0.0))
    assert 0 <= float(sol.gap) <= 1e-10 * f + 1e-14
    assert abs(f - f_ref) <= 1e-7 * abs(f_ref), (f, f_ref)
    assert float(sol.dual_value) <= f_ref + 1e-8


def test_barrier_at_its_rounding_floor_stops_stalled_and_says_why():
    """Asked for more than its Newton systems' rounding allows, the barrier stops ``stalled`` after
    20 steps without a 10% gain (not after its 200-step budget) and warns with the reason; the
    point it reports is the optimum to its certified gap (PDHG reference). A tolerance of 1e-12
    is below the rounding floor of any float64 interior-point run."""
    import warnings

    rng = np.random.default_rng(7)
    X = rng.standard_normal((93, 59)) * rng.uniform(0.1, 5, size=59)
    y = np.sign(X[:, 0] + 0.5 * rng.standard_normal(93))
    pr = jp.DRSVM(X, y, epsilon=0.05)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        sol = jp.solve(pr, jp.DRSVMBarrier(tol=1e-12))
    assert sol.status_name == "stalled" and int(sol.steps) < 60, (sol.status_name, int(sol.steps))
    msg = " ".join(str(w.message) for w in caught)
    assert "rounding of its Newton systems" in msg, msg
    ref = jp.solve(pr, jp.DRSVMPDHG(tol=1e-10, max_steps=400000), warn=False)
    f, f_ref = float(pr.objective(sol.params)), float(ref.primal_value)
    assert f - f_ref <= float(sol.gap) + 1e-10 * abs(f_ref) and float(sol.gap) <= 1e-6 * abs(f_ref)
