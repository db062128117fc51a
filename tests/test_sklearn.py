"""scikit-learn estimators: fit/predict/score, scaling maps (C = 1/(n lam)) against the references,
label handling, certified convergence, one-vs-rest multiclass, float32/float64 without global
settings, and scikit-learn's own estimator checks."""
import warnings

import numpy as np
import pytest

import jaxprox as jp
from jaxprox.sklearn import DRSVMClassifier, LogisticRegression, SparseClassifier, SVMClassifier


@pytest.fixture(scope="module")
def heart():
    X, y = jp.datasets.load("heart_scale")
    return X, np.where(y > 0, "sick", "healthy")  # string labels on purpose


def test_svm_matches_clarabel_and_liblinear(heart):
    import cvxpy as cp
    from sklearn.svm import LinearSVC

    X, y = heart
    n, C = len(y), 0.5
    lam = 1.0 / (n * C)  # the scaling map
    est = SVMClassifier(C=C, fit_intercept=False, tol=1e-7, max_steps=20_000).fit(X, y)
    ypm = np.where(y == "sick", 1.0, -1.0)
    f = lambda w: np.mean(np.maximum(0, 1 - ypm * (X @ w))) + 0.5 * lam * w @ w
    w = cp.Variable(X.shape[1])
    prob = cp.Problem(cp.Minimize(cp.sum(cp.pos(1 - cp.multiply(ypm, X @ w))) / n + 0.5 * lam * cp.sum_squares(w)))
    prob.solve(solver=cp.CLARABEL, tol_gap_abs=1e-12, tol_gap_rel=1e-12, tol_feas=1e-12)
    f_star = f(w.value)
    assert est.converged_
    assert abs(f(est.coef_.ravel()) - f_star) <= 1e-7 * f_star
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # liblinear stops at its iteration cap here
        ref = LinearSVC(loss="hinge", C=C, fit_intercept=False, dual=True, tol=1e-12, max_iter=1_000_000, random_state=0).fit(X, y)
    assert f(est.coef_.ravel()) <= f(ref.coef_.ravel()) * (1 + 1e-7)  # within our certified gap
    assert set(est.predict(X)) <= {"sick", "healthy"}
    assert est.score(X, y) == pytest.approx(ref.score(X, y), abs=0.01)


def test_logistic_matches_sklearn(heart):
    from sklearn.linear_model import LogisticRegression as SkLR

    X, y = heart
    est = LogisticRegression(C=1.0, fit_intercept=True).fit(X, y)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ref = SkLR(C=1.0, fit_intercept=False, tol=1e-12, max_iter=100_000).fit(
            np.hstack([X, np.ones((len(y), 1))]), y)
    # our intercept is a penalised constant feature: compare with sklearn on the augmented data,
    # in objective (the coefficients are only determined to sqrt(2 gap / lam))
    Xa, ypm = np.hstack([X, np.ones((len(y), 1))]), np.where(y == "sick", 1.0, -1.0)
    lam = 1.0 / len(y)
    f = lambda w: np.mean(np.logaddexp(0, -ypm * (Xa @ w))) + 0.5 * lam * w @ w
    ours, theirs = f(np.r_[est.coef_.ravel(), est.intercept_]), f(ref.coef_.ravel())
    assert est.converged_ and abs(ours - theirs) <= 1e-6 * theirs
    np.testing.assert_allclose(est.predict_proba(X)[:, 1], ref.predict_proba(Xa)[:, 1], atol=1e-3)


def test_sparse_classifier_is_sparse_and_feasible(heart):
    X, y = heart
    est = SparseClassifier(radius=1.0).fit(X, y)
    w = est.coef_.ravel()
    assert np.abs(w).sum() <= 1.0 + 1e-9
    assert 0 < np.sum(np.abs(w) > 1e-8) < X.shape[1]
    assert est.score(X, y) > 0.75


def test_drsvm_classifier(heart):
    X, y = heart
    est = DRSVMClassifier(norm="l2", epsilon=0.1).fit(X, y)
    assert est.converged_ and est.gap_[0] <= est.tol * abs(est.objective_[0])
    assert est.lambda_ >= np.linalg.norm(est.coef_) - 1e-9
    assert est.score(X, y) > 0.75
    for bad in (dict(epsilon=0.0), dict(kappa=-1.0), dict(c=-0.1)):  # checked before the batched fit
        with pytest.raises(ValueError, match=next(iter(bad))):
            DRSVMClassifier(**bad).fit(X, y)


def test_drsvm_classifier_default_norm_is_the_problems(heart):
    """One default for DRSVM everywhere: the estimator's default fit solves ``jp.DRSVM(X, y)``'s
    default problem (constraint norm l1), to the certified tolerance."""
    import inspect

    X, y = heart
    assert inspect.signature(DRSVMClassifier).parameters["norm"].default == \
        inspect.signature(jp.DRSVM).parameters["norm"].default
    est = DRSVMClassifier().fit(X, y)
    P = jp.DRSVM(X, np.where(y == est.classes_[1], 1.0, -1.0))
    ref = jp.solve(P, jp.DRSVMBarrier(tol=1e-10))
    assert abs(est.objective_[0] - float(ref.primal_value)) <= 1e-6 * abs(float(ref.primal_value))
    assert est.lambda_ >= np.abs(est.coef_).sum() - 1e-9  # the l1 constraint


ESTIMATORS = [SVMClassifier, LogisticRegression, lambda **kw: LogisticRegression(penalty="l1", **kw),
              SparseClassifier, DRSVMClassifier]


@pytest.mark.parametrize("make", ESTIMATORS)
def test_converged_is_the_certificate(heart, make):
    from sklearn.exceptions import ConvergenceWarning

    X, y = heart
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)  # the defaults converge on heart
        est = make().fit(X, y)
    assert est.converged_
    assert np.all(est.gap_ <= est.tol * np.abs(est.objective_))
    assert est.n_iter_ >= 1
    with pytest.warns(ConvergenceWarning, match="stopped after"):  # sklearn's, not jaxprox's
        short = make(tol=1e-12, max_steps=1).fit(X, y)
    assert not short.converged_ and np.any(short.gap_ > 1e-12 * np.abs(short.objective_))


@pytest.fixture(scope="module")
def iris():
    from sklearn.datasets import load_iris

    X, y = load_iris(return_X_y=True)
    return X / X.max(axis=0), np.array(["setosa", "versicolor", "virginica"])[y]


def test_multiclass_one_vs_rest(iris):
    from sklearn.linear_model import LogisticRegression as SkLR
    from sklearn.multiclass import OneVsRestClassifier
    from sklearn.svm import LinearSVC

    X, y = iris
    for ours, ref in [(SVMClassifier(C=10.0), LinearSVC(loss="hinge", C=10.0, max_iter=100_000)),
                      (LogisticRegression(C=10.0, multi_class="ovr"), OneVsRestClassifier(SkLR(C=10.0, max_iter=10_000)))]:
        ours.fit(X, y)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ref.fit(X, y)
        assert ours.converged_ and ours.coef_.shape == (3, 4) and ours.intercept_.shape == (3,)
        assert ours.decision_function(X).shape == (150, 3)
        assert abs(ours.score(X, y) - ref.score(X, y)) <= 0.01 + 1e-12
    proba = ours.predict_proba(X)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0, rtol=1e-12)
    np.testing.assert_array_equal(ours.classes_[proba.argmax(axis=1)], ours.predict(X))


def test_l1_logistic_matches_liblinear(heart):
    from sklearn.linear_model import LogisticRegression as SkLR

    X, y = heart
    C, n = 0.5, len(y)
    est = LogisticRegression(C=C, penalty="l1", fit_intercept=False, tol=1e-9).fit(X, y)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ref = SkLR(C=C, penalty="l1", solver="liblinear", fit_intercept=False, tol=1e-10, max_iter=10_000).fit(X, y)
    ypm = np.where(y == "sick", 1.0, -1.0)
    f = lambda w: np.mean(np.logaddexp(0, -ypm * (X @ w))) + np.abs(w).sum() / (n * C)  # lam = 1/(n C)
    ours, theirs = f(est.coef_.ravel()), f(ref.coef_.ravel())
    assert est.converged_ and abs(ours - theirs) <= 1e-5 * theirs
    assert ours <= theirs * (1 + 1e-9)


def test_float32_without_global_settings(heart):
    import jax

    X, y = heart
    before = jax.config.jax_enable_x64
    ref = LogisticRegression(C=1.0).fit(X, y)
    from jaxprox.sklearn._base import _float

    with jax.enable_x64(False):
        assert _float() == np.float32  # the solves below run in float32
        est32 = LogisticRegression(C=1.0).fit(X, y)
        svm32 = SVMClassifier(C=1.0).fit(X, y)
    assert jax.config.jax_enable_x64 == before  # no estimator touched the global setting
    assert est32.converged_ and svm32.converged_ and est32.coef_.dtype == np.float64
    assert est32.tol == 1e-6  # the parameter is kept; the solve used max(tol, FLOAT32_TOL)
    assert abs(est32.objective_[0] - ref.objective_[0]) <= 1e-5 * ref.objective_[0]
    assert est32.score(X, y) == pytest.approx(ref.score(X, y), abs=0.01)


def test_new_C_and_fold_size_reuse_the_compiled_solve(heart):
    from jaxprox.sklearn._base import _bucket, _solve_ovr
    from jaxprox.sklearn.svm import _svm_newton

    X, y = heart
    assert _bucket(270) == _bucket(180) == 512 and _bucket(4000) == _bucket(3900) == 4096  # one shape per bucket
    SVMClassifier(C=1.0).fit(X, y)
    LogisticRegression(C=1.0).fit(X, y)
    sizes = _svm_newton.top._cached._cache_size(), _solve_ovr.top._cached._cache_size()
    for C in (0.1, 10.0):
        SVMClassifier(C=C).fit(X[:265], y[:265])
        LogisticRegression(C=C).fit(X[:265], y[:265])
    assert (_svm_newton.top._cached._cache_size(), _solve_ovr.top._cached._cache_size()) == sizes


def test_errors(heart):
    X, y = heart
    with pytest.raises(ValueError, match="C must be positive"):
        SVMClassifier(C=-1).fit(X, y)
    with pytest.raises(ValueError, match="finite C"):
        SVMClassifier(C=np.inf).fit(X, y)
    for Est in (SVMClassifier, LogisticRegression):  # SVMClassifier's Newton loop bypasses jp.solve's checks
        with pytest.raises(ValueError, match="tol must be >= 0"):
            Est(tol=-1.0).fit(X, y)
    with pytest.raises(ValueError, match="max_steps"):
        SVMClassifier(max_steps=0).fit(X, y)
    with pytest.raises(ValueError, match="penalty must be"):
        LogisticRegression(penalty="elasticnet").fit(X, y)
    with pytest.raises(ValueError, match="at least 2 classes"):
        SVMClassifier().fit(X, np.zeros(len(y)))


@pytest.mark.parametrize("Est", [SVMClassifier, LogisticRegression])
def test_check_estimator(Est):
    """scikit-learn's whole estimator check; LogisticRegression's multiclass checks run its
    multinomial model (more than two classes)."""
    from sklearn.utils.estimator_checks import check_estimator

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        check_estimator(Est(max_steps=200))


# The API plumbing (validation, dtypes, labels, intercept, tags, prediction) is the shared base class,
# which the full check_estimator run above exercises; the other estimators differ in ``fit`` (and
# LogisticRegression in ``predict_proba``, which check_classifiers_train checks), so they get the
# checks that fit them on varied inputs (each check compiles a solve for its shapes). Fit
# idempotence is the base class's (a jitted, deterministic solve) and is covered above.
FIT_CHECKS = ["check_classifiers_train", "check_classifiers_classes"]


@pytest.mark.parametrize("Est", [DRSVMClassifier, LogisticRegression, SparseClassifier])
def test_fit_checks(Est):
    from sklearn.utils import estimator_checks

    est = Est(max_steps=200)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for name in FIT_CHECKS:
            getattr(estimator_checks, name)(Est.__name__, est)


def test_logistic_regression_cv_matches_per_fold_fits():
    """LogisticRegressionCV: the held-out fold rows are zeroed into padding rows; each fold's batched
    solve must equal LogisticRegression fitted on that fold's training rows alone, the chosen C the
    best mean score, and coef_ the full-data fit at that C."""
    from sklearn.model_selection import StratifiedKFold

    from jaxprox.sklearn import LogisticRegressionCV

    X, y = jp.datasets.load("heart_scale")
    X, y = np.asarray(X), np.asarray(y)
    Cs = [0.01, 1.0, 100.0]
    for penalty in ("l2", "l1"):
        cv = LogisticRegressionCV(Cs=Cs, cv=3, penalty=penalty, tol=1e-9).fit(X, y)
        folds = list(StratifiedKFold(3).split(X, y))
        for f, (train, test) in enumerate(folds):
            for c, C in enumerate(Cs):
                ref = LogisticRegression(C=C, penalty=penalty, tol=1e-9).fit(X[train], y[train])
                assert cv.scores_[f, c] == pytest.approx(ref.score(X[test], y[test]), abs=1e-12)
        best = Cs[int(np.argmax(cv.scores_.mean(axis=0)))]
        assert cv.C_[0] == best and cv.converged_ and cv.folds_converged_
        ref = LogisticRegression(C=best, penalty=penalty, tol=1e-9).fit(X, y)
        np.testing.assert_allclose(cv.coef_, ref.coef_, rtol=1e-5, atol=1e-7)
        np.testing.assert_allclose(cv.intercept_, ref.intercept_, rtol=1e-5, atol=1e-7)


def test_logistic_regression_cv_multiclass_and_bad_input():
    from jaxprox.sklearn import LogisticRegressionCV

    rng = np.random.default_rng(0)
    centers = rng.standard_normal((3, 4)) * 3
    y = np.repeat(np.array(["a", "b", "c"]), 40)
    X = centers[np.repeat(np.arange(3), 40)] + rng.standard_normal((120, 4))
    est = LogisticRegressionCV(Cs=3, cv=3).fit(X, y)
    assert est.coef_.shape == (3, 4) and est.scores_.shape == (3, 3)
    assert est.score(X, y) > 0.9
    assert np.allclose(est.predict_proba(X).sum(axis=1), 1.0)
    with pytest.raises(ValueError, match="Cs"):
        LogisticRegressionCV(Cs=[-1.0]).fit(X, y)


def _dense(X):
    return np.asarray(X.toarray() if hasattr(X, "toarray") else X)


def _hinge_reference(X, ypm, lam):
    """``min (1/n) sum hinge + (lam/2)||w||^2`` by Clarabel at tight tolerances."""
    import cvxpy as cp

    w = cp.Variable(X.shape[1])
    prob = cp.Problem(cp.Minimize(cp.sum(cp.pos(1 - cp.multiply(ypm, X @ w))) / len(ypm)
                                  + 0.5 * lam * cp.sum_squares(w)))
    prob.solve(solver=cp.CLARABEL, tol_gap_abs=1e-12, tol_gap_rel=1e-12, tol_feas=1e-12)
    return prob.value


@pytest.mark.parametrize("hessian_rows", [128, 2048])  # a subsampled Hessian (128 < 1605 rows) and the exact one
def test_svm_newton_matches_clarabel_with_honest_gap(hessian_rows):
    import jax.numpy as jnp

    from jaxprox import losses, penalties
    from jaxprox.problems import ERM
    from jaxprox.solvers.svm_newton import hinge_svm_newton

    X, y = jp.datasets.load("a1a")
    X = np.hstack([_dense(X), np.ones((X.shape[0], 1))])
    ypm = np.where(y > 0, 1.0, -1.0)
    lam, tol = 1.0 / len(y), 1e-7
    p_star = _hinge_reference(X, ypm, lam)
    w, s, steps = hinge_svm_newton(jnp.asarray(X), jnp.asarray(ypm), lam, tol=tol, max_steps=300,
                                   hessian_rows=hessian_rows)
    assert np.all((np.asarray(s) >= 0) & (np.asarray(s) <= 1)) and 0 < int(steps) < 300
    primal, dual, gap = ERM(X, ypm, losses.Hinge(), penalties.SquaredL2(lam)).certificate(w, -jnp.asarray(ypm) * s)
    assert float(gap) <= tol * float(primal)                      # certified to tol
    assert float(primal) - p_star <= float(gap) + 1e-12           # the gap bounds the true suboptimality
    assert float(dual) <= p_star + 1e-12
    assert abs(float(primal) - p_star) <= 1e-6 * p_star


def test_svm_classifier_on_more_rows_than_the_hessian_sample():
    """a1a with 4 x its rows (6420 > 2048 Hessian rows: the subsampled path of the estimator),
    against Clarabel; converged_ is the certificate."""
    X, y = jp.datasets.load("a1a")
    X = np.vstack([_dense(X)] * 4)
    y = np.tile(y, 4)
    est = SVMClassifier(C=0.5, tol=1e-6).fit(X, y)
    Xa, ypm = np.hstack([X, np.ones((len(y), 1))]), np.where(y > 0, 1.0, -1.0)
    lam = 1.0 / (len(y) * 0.5)
    w = np.r_[est.coef_.ravel(), est.intercept_]
    f = np.mean(np.maximum(0, 1 - ypm * (Xa @ w))) + 0.5 * lam * w @ w
    p_star = _hinge_reference(Xa, ypm, lam)
    assert est.converged_ == bool(est.gap_[0] <= est.tol * abs(est.objective_[0])) and est.converged_
    assert est.objective_[0] == pytest.approx(f, rel=1e-9)        # the reported objective is P(w)
    assert f - p_star <= est.gap_[0] + 1e-12 and abs(f - p_star) <= 1e-6 * p_star


def test_l1_logistic_two_phase_matches_liblinear():
    """6000 rows of a9a (>= 4096: the FISTA-inner phase, then the SSN-inner phase) against liblinear
    at tol 1e-10, in objective; converged_ is the certificate."""
    from sklearn.linear_model import LogisticRegression as SkLR

    X, y = jp.datasets.load("a9a")
    X, y = _dense(X[:6000]), np.asarray(y[:6000])
    C, tol = 1.0, 1e-8
    est = LogisticRegression(C=C, penalty="l1", tol=tol).fit(X, y)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ref = SkLR(C=C, penalty="l1", solver="liblinear", tol=1e-10, max_iter=100_000).fit(X, y)
    Xa, ypm = np.hstack([X, np.ones((len(y), 1))]), np.where(y > 0, 1.0, -1.0)
    f = lambda w: np.mean(np.logaddexp(0, -ypm * (Xa @ w))) + np.abs(w).sum() / (len(y) * C)  # noqa: E731
    ours, theirs = f(np.r_[est.coef_.ravel(), est.intercept_]), f(np.r_[ref.coef_.ravel(), ref.intercept_])
    assert est.converged_ == bool(est.gap_[0] <= tol * abs(est.objective_[0])) and est.converged_
    assert est.objective_[0] == pytest.approx(ours, rel=1e-9)
    assert ours - theirs <= est.gap_[0] + 1e-12               # within our certified gap of the optimum
    assert abs(ours - theirs) <= 1e-6 * theirs


def test_svm_staged_continuation_agrees_with_the_one_loop_solver(heart):
    """The staged ProxNewton continuation (kept for sparse data above 50M entries) and the one-loop
    solver certify the same problem: objectives within their certified gaps."""
    import jax.numpy as jnp

    X, y = heart
    est = SVMClassifier(tol=1e-6, max_steps=300).fit(X, y)
    Xp, Y, n = est._prepare(X, y, pad=True)
    N = Xp.shape[0]
    W, steps, primal, gap, _ = est._continuation(Xp, Y, jnp.asarray(1.0 / N), jnp.asarray((N - n) / N), 1e-6)
    staged, staged_gap = float(primal[0]) * N / n, float(gap[0]) * N / n
    assert staged_gap <= 1e-6 * staged and est.converged_
    assert abs(staged - est.objective_[0]) <= staged_gap + est.gap_[0]


def test_logistic_regression_cv_warns_for_a_fold_that_stops_short_and_shows_progress(monkeypatch):
    """Unconverged folds warn (naming the fold and C) and set folds_converged_ False; progress=True
    counts the fits (every fold, then the final fit)."""
    from sklearn.exceptions import ConvergenceWarning

    from jaxprox import progress
    from jaxprox.sklearn import LogisticRegressionCV

    X, y = jp.datasets.load("breast-cancer_scale")
    made = []

    class Bar:
        def __init__(self, total, unit, desc):
            self.total, self.n, self.closed = total, 0, False
            made.append(self)

        def update(self, k):
            self.n += k

        def close(self):
            self.closed = True

    monkeypatch.setattr(progress, "_bar", Bar)
    with pytest.warns(ConvergenceWarning, match="fold 0 stopped short"):
        est = LogisticRegressionCV(Cs=[1e2, 1e4], cv=3, penalty="l1", tol=1e-10, max_steps=2,
                                   progress=True).fit(X, y)
    assert not est.folds_converged_
    assert len(made) == 1 and made[0].total == 4 and made[0].n == 4 and made[0].closed
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)  # converged folds do not warn
        assert LogisticRegressionCV(Cs=[0.1, 1.0], cv=3).fit(X, y).folds_converged_


def test_l1_logistic_regression_cv_on_standardised_breast_cancer_matches_liblinear():
    """scikit-learn's default grid (C up to 1e4) on standardised breast-cancer: the folds at the
    largest C are nearly separable and stop short (a warning, ``folds_converged_`` False), and the
    chosen C and accuracy are liblinear's."""
    from sklearn.datasets import load_breast_cancer
    from sklearn.exceptions import ConvergenceWarning
    from sklearn.linear_model import LogisticRegressionCV as SkLRCV
    from sklearn.preprocessing import StandardScaler

    from jaxprox.sklearn import LogisticRegressionCV

    X, y = load_breast_cancer(return_X_y=True)
    X = StandardScaler().fit_transform(X)
    with pytest.warns(ConvergenceWarning, match="stopped short"):
        est = LogisticRegressionCV(penalty="l1", cv=5).fit(X, y)
    ref = SkLRCV(penalty="l1", solver="liblinear", cv=5).fit(X, y)
    assert not est.folds_converged_
    np.testing.assert_allclose(est.C_, ref.C_)
    assert abs(est.score(X, y) - ref.score(X, y)) <= 0.005
    assert est.converged_  # the refit at the chosen C is certified
