"""A warm start of the wrong shape is refused before anything is traced, naming both shapes; a
right one (ERM's ``w``, the DRSVM's ``(w, lam)`` and ``(w, lam, a)``) is taken."""
import numpy as np
import pytest

import jaxprox as jp
from jaxprox import losses, penalties


def _data():
    rng = np.random.default_rng(0)
    return rng.standard_normal((30, 4)), np.sign(rng.standard_normal(30))


def test_wrong_warm_start_shape_is_a_clear_error():
    X, y = _data()
    erm = jp.ERM(X, y, losses.Logistic(), penalties.L1(0.01))
    with pytest.raises(ValueError, match=r"init has the shape\(s\) \[\(3,\)\].*\[\(4,\)\]"):
        jp.solve(erm, jp.FISTA(), init=np.zeros(3))
    dr = jp.DRSVM(X, y, epsilon=0.1)
    with pytest.raises(ValueError, match="init has the shape"):
        jp.solve(dr, jp.DRSVMPDHG(), init=(np.zeros(5), 0.0))


def test_right_warm_starts_are_taken():
    X, y = _data()
    erm = jp.ERM(X, y, losses.Logistic(), penalties.L1(0.01))
    cold = jp.solve(erm, jp.FISTA(tol=1e-10))
    warm = jp.solve(erm, jp.FISTA(tol=1e-10), init=cold.params)
    assert warm.converged and int(warm.steps) <= int(cold.steps)
    np.testing.assert_allclose(np.asarray(warm.params), np.asarray(cold.params), atol=1e-6)
    dr = jp.DRSVM(X, y, epsilon=0.1)
    sol = jp.solve(dr, jp.DRSVMPDHG(tol=1e-8))
    w, lam = sol.params
    for init in ((w, lam), (w, lam, sol.dual)):
        again = jp.solve(dr, jp.DRSVMPDHG(tol=1e-8), init=init)
        assert again.converged
        assert abs(float(again.primal_value) - float(sol.primal_value)) <= 1e-6 * abs(float(sol.primal_value))


def _dots(f, *args):
    import jax

    return str(jax.make_jaxpr(f)(*args)).count("dot_general")


@pytest.mark.parametrize("make", [
    lambda X, y: (jp.ERM(X, y, losses.Logistic(), penalties.L1(0.01)), jp.FISTA()),
    lambda X, y: (jp.ERM(X, y, losses.Logistic(), penalties.L1(0.01)), jp.ProxNewton()),
    lambda X, y: (jp.ERM(X, y, losses.Hinge(), penalties.SquaredL2(0.1)), jp.PDProx()),
    lambda X, y: (jp.ERM(X, y, losses.SmoothedHinge(1.0), penalties.SquaredL2(0.1), jp.constraints.L1Ball(1.0)),
                  jp.PDBlockFW()),
    lambda X, y: (jp.ERM(X, y, losses.Logistic(), penalties.SquaredL2(0.1)), jp.DualAPPA()),
    # (its init lifts lam to max(lam, ||w||) + 0.01 (1 + ||w||): 0.99 gives the cold start's lam = 1)
    lambda X, y: (jp.DRSVM(X, y, epsilon=0.1), jp.DRSVMBarrier(), (np.zeros(X.shape[1]), 0.99)),
])
def test_start_at_the_origin_takes_no_product_with_zeros(make):
    """A solver started at the origin (no ``init``) takes its start's products ``A 0`` as zeros
    (:func:`jaxprox.operators.linear_at`): the same start state as an explicit zero ``init``, with
    fewer matrix products traced."""
    import jax

    X, y = _data()
    prob, solver, *start = make(X, y)
    solver = solver.prepare(prob) if hasattr(solver, "prepare") else solver
    zero = start[0] if start else prob.zeros()
    cold, warm = solver.init(prob), solver.init(prob, zero)
    for a, b in zip(jax.tree_util.tree_leaves(cold), jax.tree_util.tree_leaves(warm)):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-12, atol=1e-14)
    assert _dots(lambda p: solver.init(p), prob) < _dots(lambda p, z: solver.init(p, z), prob, zero)


def test_sdca_start_at_the_origin_takes_no_product():
    """SDCA without ``init`` starts at ``u = 0``, ``w = -A^T u / (n lam) = 0``, ``P(w) = P(0)``,
    all without a matrix product (its ``init`` starts from the dual point of ``A init`` instead)."""
    X, y = _data()
    prob = jp.ERM(X, y, losses.Logistic(), penalties.SquaredL2(0.1))
    st = jp.SDCA().init(prob)
    assert not np.any(np.asarray(st.u)) and not np.any(np.asarray(st.w))
    np.testing.assert_allclose(float(st.Px), float(prob.objective(np.zeros(4))), rtol=1e-14)
    assert _dots(lambda p: jp.SDCA().init(p), prob) == 0
