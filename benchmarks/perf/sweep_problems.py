"""Datasets, problem families and references of the defaults sweep (``bench_defaults.py``).

Datasets: the five bundled LIBSVM sets and six from ``$JAXPROX_DATA`` (the LIBSVM / UCI datasets) chosen for their shapes and
scalings (unscaled features, one-hot features, near-separable data, n < d). Problem families: one
per column of the compatibility matrix, built at three strengths one order of magnitude apart.
References: ProxNewton certified to a 1e-12 relative gap for the smooth problems (its dual value, a
certified lower bound on P*), cvxpy + Clarabel (tolerances 1e-10) for the non-smooth ones.
"""
from __future__ import annotations

import gzip
import sys
from pathlib import Path

import numpy as np

# name -> what it stands for in the sweep
DATA = {
    "heart_scale": "270 x 13, scaled to [-1, 1]",
    "australian": "690 x 14, unscaled (feature ranges up to 1e5)",
    "breast-cancer_scale": "683 x 10, scaled",
    "german.numer": "1000 x 24, unscaled",
    "a1a": "1605 x 123, sparse one-hot",
    "phishing": "11055 x 68, one-hot, n >> d",
    "splice": "1000 x 60 (the training rows), categorical codes",
    "svmguide1": "3089 x 4, unscaled (ranges 1e-1 .. 3e2)",
    "svmguide3": "1243 x 21, mixed scales",
    "mushrooms": "8124 x 112, one-hot, separable",
    "colon": "62 x 2000, n < d (microarray, standardised columns)",
}
# pathological variants of bundled sets (the audit), swept apart (``--data`` names them;
# ``results/defaults_synthetic.md``): not in the main sweep's default list
SYNTHETIC = {
    "heart_dupflip": "heart_scale + 60 of its rows again with flipped labels (330 x 13, contradictory rows)",
    "breast_zerocol": "breast-cancer_scale + a zero column + a constant column (683 x 12)",
    "heart_x1000": "heart_scale with its first 3 columns x1000 (270 x 13, badly scaled)",
}
# public sets that neither the issue nor the main sweep names, for an audit of the defaults on data
# they were not tuned on (``--data`` names them; ``results/defaults_unseen.md``)
UNSEEN = {
    "sonar": "208 x 60, in [0, 1] (UCI Sonar, mlbench), n ~ 3.5 d",
    "ionosphere": "351 x 34, in [-1, 1] with a binary column and an all-zero column (UCI Ionosphere, mlbench)",
    "pima": "768 x 8, unscaled (column ranges 2.4 .. 846; UCI Pima Indians Diabetes, mlbench)",
}
# held-out data for the units-invariance audit (``--data`` names them; ``results/defaults.md``'s
# extended sweep): large units, wide sparse, heavy tails, imbalance
HELD_OUT = {
    "wine": "178 x 13, class 0 vs rest of scikit-learn's wine, unscaled (column ranges 0.66 .. 1680)",
    "heart_x1000": SYNTHETIC["heart_x1000"],
    "digits38": "357 x 64, 3 vs 8 of scikit-learn's digits, pixel counts 0 .. 16 (rare pixels, empty columns)",
    "wide_sparse": "100 x 2000, 1% non-zeros N(0, 1), labels of a 20-sparse linear model with 10% flipped (n << d)",
    "heavy_tail": "400 x 20, Student-t (2 degrees of freedom) features, labels of a linear model with 10% flipped",
    "imbalanced": "600 x 15, N(0, 1) features, 5% positives shifted by 0.5 in every column",
}
FAMILIES = ("l1_logistic", "ridge_logistic", "svm", "hinge_l1", "fw_ball", "bias_svm", "drsvm")
STRENGTHS = {"l1_logistic": (1e-1, 1e-2, 1e-3), "hinge_l1": (1e-1, 1e-2, 1e-3),
             "ridge_logistic": (1.0, 0.1, 0.01), "svm": (1.0, 0.1, 0.01), "bias_svm": (1.0, 0.1, 0.01),
             "fw_ball": (1.0, 10.0, 100.0), "drsvm": (0.01, 0.1, 1.0)}
STRENGTH_MEANING = {
    "l1_logistic": "logistic + lam ||w||_1, lam = s lam_max (lam_max = ||X^T y||_inf / (2n): w* = 0 above it)",
    "hinge_l1": "hinge + lam ||w||_1, lam = s ||X^T y||_inf / n",
    "ridge_logistic": "logistic + (lam/2) ||w||^2, lam = s 10/n",
    "svm": "hinge + (lam/2) ||w||^2 (the plain SVM), lam = s 10/n",
    "bias_svm": "hinge + (lam/2) ||w||^2 with an unpenalised bias (jp.BiasSVM), lam = s 10/n",
    "fw_ball": "smoothed hinge + (10/n)/2 ||w||^2 over the l1 ball of radius r = s",
    "drsvm": "l1-DRSVM (kappa = 1, c = 0), epsilon = s",
}


def _shared(rel: str) -> Path:
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    import harness

    return harness.data_file(rel)


def load(name: str):
    """``(X, y)`` as dense float64 arrays, labels in {-1, +1}."""
    import jaxprox as jp

    if name in SYNTHETIC:
        base = "heart_scale" if name.startswith("heart") else "breast-cancer_scale"
        X, y = load(base)
        if name == "heart_dupflip":
            idx = np.random.default_rng(0).choice(X.shape[0], 60, replace=False)
            return np.vstack([X, X[idx]]), np.concatenate([y, -y[idx]])
        if name == "breast_zerocol":
            return np.hstack([X, np.zeros((X.shape[0], 1)), np.ones((X.shape[0], 1))]), y
        X = X.copy()
        X[:, :3] *= 1000.0
        return X, y
    if name in HELD_OUT and name not in SYNTHETIC:
        return _held_out(name)
    if name in UNSEEN:
        rel = {"sonar": "sonar.csv", "ionosphere": "ionosphere.csv", "pima": "pima_indians_diabetes.csv"}[name]
        with open(_shared("uci_mlbench/" + rel)) as f:
            rows = [line.strip().split(",") for line in f.readlines()[1:] if line.strip()]
        X = np.array([[float(v) for v in r[:-1]] for r in rows])
        y = np.array([1.0 if r[-1] in ("M", "good", "pos") else -1.0 for r in rows])
        return X, y
    if name == "svmguide3":
        M = np.loadtxt(_shared("svmguide3/svmguide3.dense.csv"), delimiter=",")
        return M[:, 1:], np.where(M[:, 0] > 0, 1.0, -1.0)
    if name == "colon":
        with gzip.open(_shared("microarray/colon_alon.csv.gz"), "rt") as f:
            rows = [line.strip().split(",") for line in f.readlines()[1:]]
        y = np.array([1.0 if r[0] == "t" else -1.0 for r in rows])
        X = np.array([[float(v) for v in r[1:]] for r in rows])
        return (X - X.mean(0)) / X.std(0), y
    X, y = jp.datasets.load(name)
    X = np.asarray(X.todense() if hasattr(X, "todense") else X, dtype=np.float64)
    if name == "splice":
        X, y = X[:1000], y[:1000]
    return X, np.asarray(y, dtype=np.float64)


def _held_out(name: str):
    """``(X, y)`` of a :data:`HELD_OUT` set (float64, labels in {-1, +1}; seed 0 for the synthetic ones)."""
    rng = np.random.default_rng(0)
    if name == "wine":
        from sklearn.datasets import load_wine

        X, y = load_wine(return_X_y=True)
        return X.astype(np.float64), np.where(y == 0, 1.0, -1.0)
    if name == "digits38":
        from sklearn.datasets import load_digits

        X, y = load_digits(return_X_y=True)
        keep = (y == 3) | (y == 8)
        return X[keep].astype(np.float64), np.where(y[keep] == 3, 1.0, -1.0)
    flip = lambda y: np.where(rng.random(y.shape[0]) < 0.1, -y, y)  # noqa: E731
    if name == "wide_sparse":
        n, d = 100, 2000
        X = rng.standard_normal((n, d)) * (rng.random((n, d)) < 0.01)
        w = np.zeros(d)
        w[rng.choice(d, 20, replace=False)] = rng.standard_normal(20)
        return X, flip(np.where(X @ w + 1e-3 * rng.standard_normal(n) > 0, 1.0, -1.0))
    if name == "heavy_tail":
        X = rng.standard_t(2.0, (400, 20))
        return X, flip(np.where(X @ rng.standard_normal(20) > 0, 1.0, -1.0))
    if name == "imbalanced":
        y = np.where(rng.random(600) < 0.05, 1.0, -1.0)
        return rng.standard_normal((600, 15)) + 0.5 * (y > 0)[:, None], y
    raise ValueError(name)


def build(family: str, X, y, s: float):
    import jaxprox as jp
    from jaxprox import losses, penalties
    from jaxprox.constraints import L1Ball

    n = X.shape[0]
    lam_max = float(np.max(np.abs(X.T @ y)) / (2 * n))
    if family == "l1_logistic":
        return jp.ERM(X, y, losses.Logistic(), penalties.L1(lam_max * s))
    if family == "hinge_l1":
        return jp.ERM(X, y, losses.Hinge(), penalties.L1(2 * lam_max * s))
    if family == "ridge_logistic":
        return jp.ERM(X, y, losses.Logistic(), penalties.SquaredL2(s * 10.0 / n))
    if family == "svm":
        return jp.ERM(X, y, losses.Hinge(), penalties.SquaredL2(s * 10.0 / n))
    if family == "bias_svm":
        return jp.BiasSVM(X, y, s * 10.0 / n)
    if family == "fw_ball":
        return jp.ERM(X, y, losses.SmoothedHinge(1.0), penalties.SquaredL2(10.0 / n), L1Ball(s))
    if family == "drsvm":
        return jp.DRSVM(X, y, epsilon=s)
    raise ValueError(family)


def _clarabel(objective, constraints=()):
    import cvxpy as cp

    pr = cp.Problem(cp.Minimize(objective), list(constraints))
    for tol in (1e-10, 1e-9, 1e-8):  # a tighter target can stall at "optimal_inaccurate"
        pr.solve(solver=cp.CLARABEL, tol_gap_abs=tol, tol_gap_rel=tol, tol_feas=tol, max_iter=500)
        if pr.status == "optimal":
            return float(pr.value)
    raise RuntimeError(f"Clarabel: {pr.status}")


def _drsvm_highs(X, y, eps):
    """The l1-DRSVM as a linear programme for HiGHS: variables ``(p, q, lam, s)`` with ``w = p - q``,
    min ``eps lam + mean(s)`` s.t. ``s >= 1 - Z w``, ``s >= 1 + Z w - lam``, ``1^T (p + q) <= lam``."""
    import scipy.sparse as sps
    from scipy.optimize import linprog

    n, d = X.shape
    Z = sps.csr_matrix(y[:, None] * X)
    I, one = sps.identity(n, format="csr"), np.ones((n, 1))
    A = sps.vstack([sps.hstack([-Z, Z, sps.csr_matrix((n, 1)), -I]),            # 1 - Z w - s <= 0
                    sps.hstack([Z, -Z, -one, -I]),                              # 1 + Z w - lam - s <= 0
                    sps.hstack([np.ones((1, 2 * d)), -np.ones((1, 1)), sps.csr_matrix((1, n))])])
    b = np.concatenate([-np.ones(n), -np.ones(n), [0.0]])
    c = np.concatenate([np.zeros(2 * d), [eps], np.full(n, 1.0 / n)])
    r = linprog(c, A_ub=A.tocsc(), b_ub=b, bounds=(0, None), method="highs",
                options=dict(primal_feasibility_tolerance=1e-10, dual_feasibility_tolerance=1e-10))
    if r.status != 0:
        raise RuntimeError(f"HiGHS: {r.message}")
    return float(r.fun)


def reference(family: str, X, y, s: float) -> tuple[float, str]:
    """``(P*, how)``: a tight value of the optimum of ``build(family, X, y, s)``."""
    import cvxpy as cp

    import jaxprox as jp

    n, d = X.shape
    P = build(family, X, y, s)
    if family in ("l1_logistic", "ridge_logistic", "fw_ball") and d <= n:  # a d x d Newton model
        sol = jp.solve(P, jp.ProxNewton(tol=1e-12, max_steps=5000), warn=False)
        if bool(sol.converged):
            return float(sol.dual_value), "ProxNewton, certified 1e-12"
    w = cp.Variable(d)
    if family in ("l1_logistic", "ridge_logistic"):  # logistic via the exponential cone
        reg = (float(P.penalty.lam) * cp.norm1(w) if family == "l1_logistic"
               else 0.5 * float(P.penalty.lam) * cp.sum_squares(w))
        return _clarabel(cp.sum(cp.logistic(-cp.multiply(y, X @ w))) / n + reg), "cvxpy + Clarabel"
    if family == "fw_ball":  # smoothed hinge (mu = 1) = huber(pos(1 - m), 1) / 2
        m = cp.multiply(y, X @ w)
        return _clarabel(cp.sum(cp.huber(cp.pos(1 - m), 1.0)) / (2 * n) + 0.5 * float(P.penalty.lam) * cp.sum_squares(w),
                         [cp.norm1(w) <= s]), "cvxpy + Clarabel"
    if family == "svm":
        obj = cp.sum(cp.pos(1 - cp.multiply(y, X @ w))) / n + 0.5 * float(P.penalty.lam) * cp.sum_squares(w)
        return _clarabel(obj), "cvxpy + Clarabel"
    if family == "hinge_l1":
        return _clarabel(cp.sum(cp.pos(1 - cp.multiply(y, X @ w))) / n + float(P.penalty.lam) * cp.norm1(w)), \
            "cvxpy + Clarabel"
    if family == "bias_svm":
        b = cp.Variable()
        obj = cp.sum(cp.pos(1 - cp.multiply(y, X @ w + b))) / n + 0.5 * float(P.lam) * cp.sum_squares(w)
        return _clarabel(obj), "cvxpy + Clarabel"
    if family == "drsvm":  # problem (1) of the DRSVM paper, q = 1, kappa = 1, c = 0
        lam = cp.Variable()
        u = cp.multiply(y, X @ w)
        obj = lam * s + cp.sum(cp.maximum(cp.maximum(1 - u, 1 + u - lam), 0)) / n
        try:
            return _clarabel(obj, [cp.norm1(w) <= lam]), "cvxpy + Clarabel"
        except RuntimeError:
            return _drsvm_highs(X, y, s), "scipy HiGHS (LP)"
    raise ValueError(family)


def accepted(name: str, family: str) -> bool:
    """Whether the public solver ``name`` declares that it accepts the family
    (``jaxprox.capabilities``); ``"default"`` (``jp.solve(problem)``): whether the family has a
    default solver."""
    import jaxprox as jp
    from jaxprox import capabilities

    rng = np.random.default_rng(0)
    X = rng.standard_normal((8, 3))
    y = np.where(rng.standard_normal(8) > 0, 1.0, -1.0)
    problem = build(family, X, y, STRENGTHS[family][0])
    if name != "default":
        return not capabilities.missing(problem, getattr(jp, name))
    try:
        capabilities.default_solver(problem)
    except TypeError:
        return False
    return True
