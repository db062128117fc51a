"""ProjectedGradient, ``w <- P_C(w - grad F(w) / L)`` for a smooth ERM over a norm ball: its optimum
against Clarabel (objective to 1e-6 relative in float64) for the logistic and the squared loss over
l1 and l2 balls, with and without a ridge, and an honest certificate. The conformance suite
(tests/test_conformance.py) runs it through every property of the contract from the registry."""
import cvxpy as cp
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxprox as jp
from jaxprox import losses, penalties
from jaxprox.constraints import L1Ball, L2Ball


@pytest.fixture(scope="module")
def heart():
    return jp.datasets.load("heart_scale")


def _clarabel(X, y, loss, lam, ball, r) -> float:
    """``min_{||w|| <= r} (1/n) sum_i l(x_i^T w, y_i) + (lam/2) ||w||^2`` by Clarabel."""
    n, d = X.shape
    w = cp.Variable(d)
    z = X @ w
    risk = cp.sum(cp.logistic(-cp.multiply(y, z))) if loss == "logistic" else cp.sum_squares(z - y) / 2
    norm = cp.norm1(w) if ball == "l1" else cp.norm2(w)
    prob = cp.Problem(cp.Minimize(risk / n + lam / 2 * cp.sum_squares(w)), [norm <= r])
    prob.solve(solver=cp.CLARABEL, tol_gap_abs=1e-10, tol_gap_rel=1e-10, tol_feas=1e-10)
    return float(prob.value)


CASES = [("logistic", 0.0, "l1", 1.0), ("logistic", 1e-2, "l2", 0.5),
         ("squared", 0.0, "l1", 0.5), ("squared", 1e-2, "l2", 0.3)]


@pytest.mark.parametrize("loss, lam, ball, r", CASES, ids=[f"{c[0]}-lam{c[1]}-{c[2]}" for c in CASES])
def test_optimum_matches_clarabel(heart, loss, lam, ball, r):
    X, y = heart
    problem = jp.ERM(X, y, losses.Logistic() if loss == "logistic" else losses.Squared(),
                     penalties.SquaredL2(lam) if lam else None, (L1Ball if ball == "l1" else L2Ball)(r))
    sol = jp.solve(problem, jp.ProjectedGradient(tol=1e-10, max_steps=50_000))
    ref = _clarabel(X, y, loss, lam, ball, r)
    f = float(problem.objective(sol.params))
    assert bool(sol.converged) and sol.method == "ProjectedGradient", sol.status_name
    assert abs(f - ref) <= 1e-6 * abs(ref), (f, ref)
    assert float(sol.gap) >= f - ref - 1e-9 * abs(ref), (float(sol.gap), f - ref)
    norm = np.abs(np.asarray(sol.params)).sum() if ball == "l1" else np.linalg.norm(np.asarray(sol.params))
    assert norm <= r * (1 + 1e-12), norm  # every iterate is feasible


def test_jit_vmap_over_the_radius(heart):
    """One compiled loop for a batch of radii, each the optimum of its own problem."""
    X, y = heart
    radii = jnp.array([0.25, 0.5, 1.0])
    run = jax.jit(jax.vmap(lambda r: jp.solve(jp.ERM(X, y, losses.Logistic(), None, L1Ball(r)),
                                              jp.ProjectedGradient(tol=1e-10, max_steps=50_000), warn=False)))
    sols = run(radii)
    assert bool(jnp.all(sols.converged))
    for i, r in enumerate(np.asarray(radii)):
        assert float(sols.primal_value[i]) == pytest.approx(_clarabel(X, y, "logistic", 0.0, "l1", float(r)), rel=1e-6)


def test_refuses_a_penalty_other_than_the_ridge(heart):
    X, y = heart
    with pytest.raises(TypeError, match=r"ProjectedGradient cannot solve .*penalty=None or SquaredL2"):
        jp.solve(jp.ERM(X, y, losses.Logistic(), penalties.L1(1e-2), L1Ball(1.0)), jp.ProjectedGradient())
    with pytest.raises(TypeError, match=r"ProjectedGradient cannot solve .*L1Ball\(r\), L2Ball\(r\)"):
        jp.solve(jp.ERM(X, y, losses.Logistic(), penalties.SquaredL2(1e-2)), jp.ProjectedGradient())
