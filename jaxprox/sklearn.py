"""scikit-learn compatible estimators around jaxprox solvers (needs scikit-learn installed).

Every estimator maps scikit-learn's scaling to the papers' ``(1/n) sum loss + lam R``: for a
penalty weight ``C`` (sum of losses times ``C`` plus ``1/2||w||^2``), ``lam = 1 / (n C)``.
Binary classifiers accept any two labels (``classes_``), map them to {-1, +1} internally, and
expose ``coef_``, ``intercept_``, ``decision_function``, ``predict`` and ``score``.
An intercept, when asked for, is a constant feature of value ``intercept_scaling`` and is
penalised like the other weights (as in liblinear), except where noted.
"""
from __future__ import annotations

import jax
import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.utils.multiclass import check_classification_targets, type_of_target
from sklearn.utils.validation import check_is_fitted, validate_data

from . import constraints, losses, penalties
from .driver import solve
from .problems import DRSVM, ERM


def _with_x64():
    # estimators solve in float64, like scikit-learn
    jax.config.update("jax_enable_x64", True)


class _BinaryLinearClassifier(ClassifierMixin, BaseEstimator):
    """Shared plumbing: input checks, label mapping, intercept column, prediction."""

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.classifier_tags.multi_class = False
        tags.input_tags.sparse = True
        return tags

    def _prepare(self, X, y):
        X, y = validate_data(self, X, y, accept_sparse="csr", dtype=np.float64)
        check_classification_targets(y)
        y_type = type_of_target(y, input_name="y", raise_unknown=True)
        if y_type != "binary":
            raise ValueError("Only binary classification is supported. The type of the target "
                             f"is {y_type}.")
        self.classes_ = np.unique(y)
        if len(self.classes_) < 2:
            raise ValueError(f"{type(self).__name__} needs samples of 2 classes; got 1 class")
        y_pm = np.where(y == self.classes_[1], 1.0, -1.0)
        if getattr(self, "fit_intercept", False):
            import scipy.sparse as sp

            col = np.full((X.shape[0], 1), float(self.intercept_scaling))
            X = sp.hstack([X, col], format="csr") if sp.issparse(X) else np.hstack([X, col])
        _with_x64()
        return X, y_pm

    def _set_coef(self, w):
        w = np.asarray(w, dtype=np.float64).ravel()
        if getattr(self, "fit_intercept", False):
            self.coef_ = w[None, :-1]
            self.intercept_ = np.array([w[-1] * float(self.intercept_scaling)])
        else:
            self.coef_ = w[None, :]
            self.intercept_ = np.zeros(1)

    def _solve(self, problem, solver, coef=lambda params: params):
        """Solve, then store ``coef_``/``intercept_`` and the run's diagnostics."""
        sol = jax.jit(solve)(problem, solver)
        self._set_coef(coef(sol.params))
        self.n_iter_ = int(sol.steps)
        self.converged_ = bool(sol.converged)
        self.gap_ = float(sol.gap)
        self.objective_ = float(sol.primal_value)
        return sol

    def decision_function(self, X):
        check_is_fitted(self)
        X = validate_data(self, X, accept_sparse="csr", dtype=np.float64, reset=False)
        return np.asarray(X @ self.coef_.ravel()).ravel() + self.intercept_[0]

    def predict(self, X):
        scores = self.decision_function(X)  # checks fitted-ness first
        return self.classes_[(scores > 0).astype(int)]


class SVMClassifier(_BinaryLinearClassifier):
    """Linear SVM ``(1/n) sum hinge(y_i w.x_i) + lam/2 ||w||^2`` with ``lam = 1/(n C)``, solved by
    Pdprox (Chambolle-Pock form, the Pdprox paper). The intercept, if any, is penalised (liblinear's
    convention)."""

    def __init__(self, C=1.0, fit_intercept=True, intercept_scaling=1.0, tol=1e-6, max_steps=20_000):
        self.C = C
        self.fit_intercept = fit_intercept
        self.intercept_scaling = intercept_scaling
        self.tol = tol
        self.max_steps = max_steps

    def fit(self, X, y):
        from .restarts import FixedRestart
        from .solvers.pdprox import PDProx

        if not self.C > 0:
            raise ValueError(f"C must be positive, got {self.C}")
        X, y = self._prepare(X, y)
        lam = 1.0 / (X.shape[0] * self.C)
        problem = ERM(X, y, losses.Hinge(), penalties.SquaredL2(lam))
        solver = PDProx("cp", scale=1.4, restart=FixedRestart(2000), tol=self.tol, max_steps=self.max_steps,
                        check_every=100)
        self._solve(problem, solver)
        return self


class LogisticRegression(_BinaryLinearClassifier):
    """Logistic regression ``(1/n) sum log(1 + exp(-y_i w.x_i)) [+ lam/2 ||w||^2]``, ``lam = 1/(n C)``
    (``C=np.inf``: no penalty), solved by Dual APPA (the APPA paper) through strongly regularised
    proximal sub-problems."""

    def __init__(self, C=1.0, fit_intercept=True, intercept_scaling=1.0, prox_lam=0.1, tol=1e-8,
                 max_steps=600):
        self.C = C
        self.fit_intercept = fit_intercept
        self.intercept_scaling = intercept_scaling
        self.prox_lam = prox_lam
        self.tol = tol
        self.max_steps = max_steps

    def fit(self, X, y):
        from .solvers.appa import DualAPPA

        if not self.C > 0:
            raise ValueError(f"C must be positive, got {self.C}")
        X, y = self._prepare(X, y)
        pen = None if np.isinf(self.C) else penalties.SquaredL2(1.0 / (X.shape[0] * self.C))
        problem = ERM(X, y, losses.Logistic(), pen)
        self._solve(problem, DualAPPA(prox_lam=self.prox_lam, tol=self.tol, max_steps=self.max_steps))
        return self

    def predict_proba(self, X):
        p = 1.0 / (1.0 + np.exp(-self.decision_function(X)))
        return np.stack([1 - p, p], axis=1)


class SparseClassifier(_BinaryLinearClassifier):
    """Sparse linear classifier: smoothed hinge + ``(mu/2)||w||^2`` over the l1 ball of radius
    ``radius``, solved by primal-dual block Frank-Wolfe (Algorithm 1). ``sparsity``
    (default: all features) must be at least the support size of the solution."""

    def __init__(self, radius=1.0, mu=None, sparsity=None, fit_intercept=False, intercept_scaling=1.0,
                 tol=1e-6, max_steps=20_000):
        self.radius = radius
        self.mu = mu
        self.sparsity = sparsity
        self.fit_intercept = fit_intercept
        self.intercept_scaling = intercept_scaling
        self.tol = tol
        self.max_steps = max_steps

    def fit(self, X, y):
        from .solvers.block_fw import PDBlockFW

        if not self.radius > 0:
            raise ValueError(f"radius must be positive, got {self.radius}")
        X, y = self._prepare(X, y)
        n, d = X.shape
        mu = 10.0 / n if self.mu is None else self.mu
        problem = ERM(X, y, losses.SmoothedHinge(1.0), penalties.SquaredL2(mu),
                      constraint=constraints.L1Ball(self.radius))
        s = d if self.sparsity is None else min(int(self.sparsity), d)
        self._solve(problem, PDBlockFW(sparsity=s, delta_scale=10.0, tol=self.tol, max_steps=self.max_steps))
        return self


class DRSVMClassifier(_BinaryLinearClassifier):
    """Wasserstein distributionally robust SVM (problem (1)), solved by incremental
    mini-batch projected subgradient (ISG) with a geometric step schedule. No intercept (the
    paper's model)."""

    def __init__(self, norm="l2", kappa=1.0, epsilon=0.1, c=0.0, batch_size=32, step0=1.0, rho=0.985,
                 epochs=900):
        self.norm = norm
        self.kappa = kappa
        self.epsilon = epsilon
        self.c = c
        self.batch_size = batch_size
        self.step0 = step0
        self.rho = rho
        self.epochs = epochs

    def fit(self, X, y):
        from .schedules import Geometric
        from .solvers.incremental import ISG

        X, y = self._prepare(X, y)
        if hasattr(X, "toarray"):
            X = X.toarray()
        problem = DRSVM(X, y, norm=self.norm, kappa=self.kappa, epsilon=self.epsilon, c=self.c)
        solver = ISG(batch_size=min(self.batch_size, X.shape[0]), step_size=Geometric(self.step0, self.rho),
                     max_steps=self.epochs, check_every=self.epochs, tol=0.0)
        sol = self._solve(problem, solver, coef=lambda params: params[0])
        self.lambda_ = float(sol.params[1])
        return self
