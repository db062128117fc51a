"""Bad input gets a clear Python error before tracing, never a silent NaN."""
import jax
import numpy as np
import pytest
import scipy.sparse as sp

import jaxprox as jp
from jaxprox import losses, penalties


@pytest.fixture
def data():
    rng = np.random.default_rng(0)
    return rng.standard_normal((20, 4)), np.where(rng.standard_normal(20) > 0, 1.0, -1.0)


def test_shape_mismatch(data):
    X, y = data
    with pytest.raises(ValueError, match="20 samples but y has 19"):
        jp.ERM(X, y[:-1], losses.Logistic(), penalties.L1(0.1))
    with pytest.raises(ValueError, match="2-D"):
        jp.ERM(X[0], y, losses.Logistic())
    with pytest.raises(ValueError, match="y must be 1-D"):
        jp.ERM(X, np.stack([y, y], 1), losses.Squared())
    with pytest.raises(ValueError, match=r"shape \(n, 3\)"):
        jp.ERM(X, np.stack([y, y], 1), losses.Squared(), n_outputs=3)


def test_nan_and_inf(data):
    X, y = data
    Xn = X.copy()
    Xn[2, 1] = np.nan
    with pytest.raises(ValueError, match="X contains 1 NaN or infinite"):
        jp.ERM(Xn, y, losses.Logistic())
    Xs = sp.csr_matrix(X)
    Xs.data[0] = np.inf
    with pytest.raises(ValueError, match="X contains"):
        jp.ERM(Xs, y, losses.Logistic())
    yn = y.copy()
    yn[0] = np.inf
    with pytest.raises(ValueError, match="y contains"):
        jp.ERM(X, yn, losses.Squared())


def test_negative_or_nonfinite_strength(data):
    X, y = data
    with pytest.raises(ValueError, match="lam"):
        penalties.L1(-1.0)
    with pytest.raises(ValueError, match="lam"):
        jp.ERM(X, y, losses.Logistic(), penalties.L1(0.1)).with_lam(-0.5)
    with pytest.raises(ValueError, match="lam"):
        penalties.L1(np.nan)
    with pytest.raises(ValueError, match="no penalty"):
        jp.ERM(X, y, losses.Logistic()).with_lam(0.1)
    with pytest.raises(ValueError, match="lams must be >= 0"):  # a path's strengths, before tracing
        jp.solve_path(jp.ERM(X, y, losses.Logistic(), penalties.L1(0.1)), jp.FISTA(), np.array([0.1, -0.1]))
    dr = jp.DRSVM(X, y, epsilon=0.1)
    for change, bad in ((dr.with_epsilon, -1.0), (dr.with_epsilon, np.nan), (dr.with_kappa, 0.0), (dr.with_c, -1.0)):
        with pytest.raises(ValueError, match="must be"):  # as the constructor refuses them
            change(bad)
    assert float(dr.with_c(0.0).c) == 0.0 and float(dr.with_epsilon(0.2).epsilon) == 0.2


def test_labels_must_be_pm1_for_classification(data):
    X, y = data
    for loss in (losses.Logistic(), losses.Hinge(), losses.SmoothedHinge(0.5)):
        with pytest.raises(ValueError, match=r"-1"):
            jp.ERM(X, (y + 1) / 2, loss)  # {0, 1} labels
    jp.ERM(X, (y + 1) / 2, losses.Squared())  # regression accepts any real labels


def test_wrong_types(data):
    X, y = data
    with pytest.raises(TypeError, match="loss"):
        jp.ERM(X, y, "hinge")
    with pytest.raises(TypeError, match="penalty"):
        jp.ERM(X, y, losses.Hinge(), penalty=0.1)


def test_validation_is_skipped_under_tracing(data):
    X, y = data
    prob = jp.ERM(X, y, losses.Logistic(), penalties.L1(0.1))

    @jax.jit
    def f(lam, Xj):
        p = jp.ERM(Xj, y, losses.Logistic(), penalties.L1(lam))
        return p.objective(np.zeros(4)) + prob.with_lam(lam).objective(np.zeros(4))

    assert np.isfinite(float(f(0.2, X)))
