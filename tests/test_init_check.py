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
