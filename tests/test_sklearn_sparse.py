"""Sparse input kept sparse (issue "For users": a9a fit times): the one-loop hinge SVM on a sparse
operator, and SVMClassifier / LogisticRegression on CSR input whose stored entries are at most a
quarter of the matrix (a :func:`jaxprox.operators.sparse` operator; l2 logistic on >= 4096 rows
with a float32 Hessian), against Clarabel and scikit-learn at tight tolerances; certificates
honest (``converged_`` is the reported gap)."""
import warnings

import jax.numpy as jnp
import numpy as np
import pytest
import scipy.sparse as sp

import jaxprox as jp
from jaxprox.operators import Sparse
from jaxprox.sklearn import LogisticRegression, SVMClassifier
from test_sklearn import _hinge_reference


@pytest.fixture(scope="module")
def a9a_part():
    """6000 rows of a9a as CSR (11% dense: kept sparse; >= 4096 rows: subsampled SVM Hessian and
    float32 logistic Hessian)."""
    X, y = jp.datasets.load("a9a")
    return sp.csr_matrix(X[:6000]), np.asarray(y[:6000])


@pytest.mark.parametrize("hessian_rows", [128, 2048])  # subsampled (128 < 1605 rows) and exact
def test_svm_newton_on_a_sparse_operator_matches_clarabel(hessian_rows):
    from jaxprox import losses, penalties
    from jaxprox.problems import ERM
    from jaxprox.solvers.svm_newton import hinge_svm_newton

    X, y = jp.datasets.load("a1a")
    Xs = sp.hstack([sp.csr_matrix(X), np.ones((X.shape[0], 1))], format="csr")
    ypm = np.where(y > 0, 1.0, -1.0)
    lam, tol = 1.0 / len(y), 1e-7
    p_star = _hinge_reference(Xs.toarray(), ypm, lam)
    op = jp.operators.sparse(Xs)
    perm = np.random.default_rng(1).permutation(len(y)).astype(np.int32)  # a host-drawn sample order
    w, s, steps = hinge_svm_newton(op, jnp.asarray(ypm), lam, tol=tol, max_steps=300, hessian_rows=hessian_rows,
                                   perm=jnp.asarray(perm))
    assert np.all((np.asarray(s) >= 0) & (np.asarray(s) <= 1)) and 0 < int(steps) < 300
    primal, dual, gap = ERM(Xs.toarray(), ypm, losses.Hinge(), penalties.SquaredL2(lam)).certificate(
        w, -jnp.asarray(ypm) * s)                                 # certified on the dense matrix
    assert float(gap) <= tol * float(primal)
    assert float(primal) - p_star <= float(gap) + 1e-12 and float(dual) <= p_star + 1e-12
    assert abs(float(primal) - p_star) <= 1e-6 * p_star


def test_sparse_input_is_kept_sparse_only_when_it_pays(a9a_part):
    X, y = a9a_part
    A, _, _ = SVMClassifier()._prepare(X, y, pad=True, operator=True)
    assert isinstance(A, Sparse) and A.shape == (6144, 124)       # padded bucket, intercept column
    dense_ish = sp.random(600, 20, density=0.5, format="csr", random_state=0)
    D, _, _ = SVMClassifier()._prepare(dense_ish, np.arange(600) % 2, pad=True, operator=True)
    assert isinstance(D, np.ndarray)                              # half the entries stored: dense is faster
    P, _, _ = SVMClassifier()._prepare(X, y, pad=True)            # without operator=True: dense, as before
    assert isinstance(P, np.ndarray)


def test_svm_classifier_on_sparse_input_matches_clarabel_and_dense_input(a9a_part):
    X, y = a9a_part
    C, tol = 0.5, 1e-6
    est = SVMClassifier(C=C, tol=tol).fit(X, y)
    dense = SVMClassifier(C=C, tol=tol).fit(X.toarray(), y)
    Xa, ypm = np.hstack([X.toarray(), np.ones((len(y), 1))]), np.where(y > 0, 1.0, -1.0)
    lam = 1.0 / (len(y) * C)
    w = np.r_[est.coef_.ravel(), est.intercept_]
    f = np.mean(np.maximum(0, 1 - ypm * (Xa @ w))) + 0.5 * lam * w @ w
    p_star = _hinge_reference(Xa, ypm, lam)
    assert est.converged_ == bool(est.gap_[0] <= tol * abs(est.objective_[0])) and est.converged_
    assert est.objective_[0] == pytest.approx(f, rel=1e-9)
    assert f - p_star <= est.gap_[0] + 1e-12 and abs(f - p_star) <= 1e-6 * p_star
    assert abs(est.objective_[0] - dense.objective_[0]) <= est.gap_[0] + dense.gap_[0]


def test_l2_logistic_with_float32_hessian_matches_lbfgs(a9a_part):
    """>= 4096 rows in float64: the Newton model's Gram in float32, the certificate in float64; the
    objective (penalised intercept: a constant feature) against lbfgs at tol 1e-12."""
    from sklearn.linear_model import LogisticRegression as SkLR

    X, y = a9a_part
    C, tol = 1.0, 1e-8
    est = LogisticRegression(C=C, tol=tol).fit(X, y)
    Xa = sp.hstack([X, np.ones((len(y), 1))], format="csr")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ref = SkLR(C=C, fit_intercept=False, tol=1e-12, max_iter=100_000).fit(Xa, y)
    ypm = np.where(y > 0, 1.0, -1.0)
    f = lambda w: np.mean(np.logaddexp(0, -ypm * (Xa @ w))) + 0.5 * w @ w / (len(y) * C)  # noqa: E731
    ours, theirs = f(np.r_[est.coef_.ravel(), est.intercept_]), f(ref.coef_.ravel())
    assert est.converged_ == bool(est.gap_[0] <= tol * abs(est.objective_[0])) and est.converged_
    assert est.objective_[0] == pytest.approx(ours, rel=1e-9)
    assert ours - theirs <= est.gap_[0] + 1e-12 and abs(ours - theirs) <= 1e-7 * theirs
