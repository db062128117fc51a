"""DRSVM on data in large or mixed units (scikit-learn's wine and digits, a synthetic column
times 1000): the subgradient / proximal point methods end at or below their start, within
seconds, stopped ``stalled`` with a warning that names the finishing method; the barrier
certifies the optimum (against cvxpy + Clarabel)."""
import time
import warnings

import cvxpy as cp
import numpy as np
import pytest

import jaxprox as jp

datasets = pytest.importorskip("sklearn.datasets")

QS = {"l1": 1, "l2": 2, "linf": "inf"}


def _wine():
    X, y = datasets.load_wine(return_X_y=True)
    return X, np.where(y == 0, 1.0, -1.0)


def _digits38():
    X, y = datasets.load_digits(return_X_y=True)
    keep = (y == 3) | (y == 8)
    return X[keep], np.where(y[keep] == 3, 1.0, -1.0)


def _synthetic1000():
    X, y, _ = jp.datasets.make_drsvm_synthetic(300, 8, 0.5, seed=3)
    X = np.array(X)
    X[:, 0] *= 1000.0
    return X, y


DATA = {"wine": _wine, "digits38": _digits38, "synthetic1000": _synthetic1000}


def clarabel_optimum(Z, norm, eps=0.1, kappa=1.0):
    n, d = Z.shape
    w, lam, u = cp.Variable(d), cp.Variable(), cp.Variable(n)
    h = cp.maximum(cp.maximum(1 - u, 1 + u - kappa * lam), 0)
    prob = cp.Problem(cp.Minimize(eps * lam + cp.sum(h) / n), [u == Z @ w, cp.norm(w, QS[norm]) <= lam])
    prob.solve(solver=cp.CLARABEL, tol_gap_abs=1e-10, tol_gap_rel=1e-10, tol_feas=1e-10)
    return prob.value


@pytest.fixture(scope="module")
def optima():
    """``P*`` of every (data, norm) by Clarabel, computed once."""
    out = {}
    for name, load in DATA.items():
        X, y = load()
        for norm in QS:
            out[name, norm] = clarabel_optimum(np.asarray(jp.DRSVM(X, y, norm=norm).Z), norm)
    return out


def test_unit_scales_are_one_on_unit_data_and_follow_the_columns():
    X, y, _ = jp.datasets.make_drsvm_synthetic(50, 4, 0.5, seed=0)
    X = np.clip(X, -1, 1)
    d, s = jp.DRSVM(X, y).unit_scales()
    assert np.all(np.asarray(d) == 1.0) and float(s) == 1.0
    X = X.copy()
    X[:, 1] *= 1000.0
    d, s = jp.DRSVM(X, y).unit_scales()
    ranges = np.abs(X).max(axis=0)
    np.testing.assert_allclose(np.asarray(d), 1.0 / ranges, rtol=1e-12)
    assert float(s) == pytest.approx(ranges.max(), rel=1e-12)


@pytest.mark.parametrize("solver", ["ISG", "HybridISGIPPA", "IPPA"])
@pytest.mark.parametrize("name", list(DATA))
def test_incremental_methods_never_end_above_their_start(name, solver, optima):
    """Default settings on data in large units: the reported objective is at most the start's
    (it was 3e3-1.4e4 against optima of 0.3-0.7), the solve returns within 10 s (first call,
    compile included), stops without converging (these methods certify ~1e-2..1e-3) and the
    warning names jp.Finish; the gap is an honest bound against Clarabel's optimum."""
    X, y = DATA[name]()
    norms = ["l1", "l2", "linf"] if solver == "ISG" else ["l1"]
    for norm in norms:
        pr = jp.DRSVM(X, y, norm=norm)
        f0 = float(pr.objective(pr.zeros()))
        t = time.perf_counter()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            sol = jp.solve(pr, getattr(jp, solver)())
        elapsed = time.perf_counter() - t
        f = float(pr.objective(sol.params))
        fstar = optima[name, norm]
        assert f <= f0 and sol.status_name in ("stalled", "max_steps"), (norm, f, f0, sol.status_name)
        assert elapsed <= 10.0, (norm, elapsed)
        assert float(sol.primal_value) == pytest.approx(f, rel=1e-12)
        assert bool(pr.feasible(sol.params))
        assert float(sol.gap) >= f - fstar - 1e-9 and float(sol.dual_value) <= fstar + 1e-9
        msg = " ".join(str(w.message) for w in caught)
        assert "jp.Finish(jp.ISG(), jp.DRSVMBarrier())" in msg, msg


@pytest.mark.parametrize("name", ["wine", "synthetic1000"])
def test_isg_column_metric_makes_progress(name, optima):
    """The per-column metric (q = 1, inf) moves every coordinate at its own scale: on data whose
    columns span four orders of magnitude a default ISG closes at least half of the distance from
    the start's objective to the optimum (it diverged to 1e3-1e4 with plain steps)."""
    X, y = DATA[name]()
    for norm in ("l1", "linf"):
        pr = jp.DRSVM(X, y, norm=norm)
        f0 = float(pr.objective(pr.zeros()))
        sol = jp.solve(pr, jp.ISG(), warn=False)
        fstar = optima[name, norm]
        assert float(sol.primal_value) - fstar <= 0.5 * (f0 - fstar), (norm, float(sol.primal_value), fstar)


@pytest.mark.parametrize("name", list(DATA))
def test_finish_certifies_from_the_reported_point(name, optima):
    X, y = DATA[name]()
    pr = jp.DRSVM(X, y, norm="l1")
    sol = jp.solve(pr, jp.Finish(jp.ISG(), jp.DRSVMBarrier(tol=1e-9)))
    f = float(pr.objective(sol.params))
    assert bool(sol.converged), sol.status_name
    assert abs(f - optima[name, "l1"]) <= 1e-6 * optima[name, "l1"]


@pytest.mark.parametrize("norm", list(QS))
def test_barrier_certifies_wine_in_its_own_units(norm, optima):
    """The Newton systems are factored after a Jacobi scaling: on wine (column ranges 0.1 to
    1680) the barrier certifies a relative gap of 1e-9 (its floor was 5e-8 to 4e-7 with a
    regularisation of the largest diagonal entry: stalled at tol 1e-7)."""
    X, y = _wine()
    pr = jp.DRSVM(X, y, norm=norm)
    fstar = optima["wine", norm]
    for tol in (1e-6, 1e-9):
        sol = jp.solve(pr, jp.DRSVMBarrier(tol=tol))
        f = float(pr.objective(sol.params))
        assert bool(sol.converged), (tol, sol.status_name, float(sol.gap))
        assert float(sol.gap) <= tol * f and f - fstar <= tol * f + 1e-9 * fstar
        assert abs(f - fstar) <= max(tol, 1e-8) * fstar, (f, fstar)


def test_barrier_hands_wide_data_to_pdhg():
    """More than WIDE_FEATURES features and more features than samples: the barrier warns before
    its O(d^3) steps and names jp.DRSVMPDHG."""
    from jaxprox.solvers.drsvm_ipm import WIDE_FEATURES
    rng = np.random.default_rng(0)
    X = rng.standard_normal((8, WIDE_FEATURES + 1))
    y = np.where(X[:, 0] > 0, 1.0, -1.0)
    pr = jp.DRSVM(X, y)
    with pytest.warns(UserWarning, match="jp.DRSVMPDHG()"):
        jp.solve(pr, jp.DRSVMBarrier(max_steps=1), warn=False)
