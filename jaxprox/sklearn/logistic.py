"""Logistic regression: :class:`LogisticRegression` (binary, one-vs-rest, multinomial) and
:class:`LogisticRegressionCV`."""
from __future__ import annotations

import warnings

import jax
import jax.numpy as jnp
import numpy as np
import scipy.sparse as sp
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils.validation import check_array

from .. import losses, operators, penalties, progress
from .._compile import compiled
from ..baselines import FISTA, ProxNewton
from ..problems import ERM
from ..solve import solve, solve_path
from ..solvers.agm import AGM
from ._base import (_GRAM_ROWS, _L1_FISTA_STEPS, _LinearClassifier, _check_positive, _erm, _float, _reachable)


def _check_multi_class(value):
    if value not in ("auto", "multinomial", "ovr"):
        raise ValueError(f"multi_class must be 'auto', 'multinomial' or 'ovr', got {value!r}")


def _logistic(X, y, lam, frac):
    return _erm(X, y, losses.Logistic(), penalties.SquaredL2(lam), frac)


def _logistic_l1(X, y, lam, frac):
    return _erm(X, y, losses.Logistic(), penalties.L1(lam), frac)


def _logistic_unpenalised(X, y, frac):
    return _erm(X, y, losses.Logistic(), None, frac)


class LogisticRegression(_LinearClassifier):
    """Logistic regression (scikit-learn's ``LogisticRegression``, one-vs-rest for ``K > 2``):

        min_w (1/n) sum_i log(1 + exp(-y_i w^T x_i)) + lam R(w),      lam = 1 / (n C),

    with ``R(w) = ||w||^2 / 2`` (``penalty="l2"``), ``R(w) = ||w||_1`` (``penalty="l1"``, the
    ``liblinear`` objective) or no penalty (``C=np.inf``, ``penalty="l2"``). Solved by inexact
    proximal Newton (Lee, Sun & Saunders, "Proximal Newton-type methods for minimizing composite
    functions", 2014) with a semismooth Newton inner solver when there are at most 4096 features
    (a ``d x d`` Hessian), by FISTA with restarts (Beck & Teboulle, "A Fast Iterative
    Shrinkage-Thresholding Algorithm for Linear Inverse Problems", 2009) otherwise. ``tol`` is the
    relative duality gap (at least :data:`FLOAT32_TOL` in float32).

    ``penalty="l1"`` on at least 4096 (padded) rows (:data:`_GRAM_ROWS`), where each Newton
    step's weighted Gram dominates the cost: first at most 25 proximal Newton steps whose inner
    problem is solved by FISTA (float32 Gram; ``O(d^2)`` per inner iteration; on 0/1 features with duplicate
    columns, e.g. a9a, it needs several times fewer Newton steps than the semismooth inner solver:
    ``benchmarks/results/sklearn.md``), then, if
    the gap is not yet certified, the semismooth inner solver from that point (at most
    ``max_steps`` more steps; it converges where FISTA's inner iterations stall on unscaled data).
    ``n_iter_`` counts both phases.

    More than two classes: ``multi_class="auto"`` (default) or ``"multinomial"`` fits one
    multinomial model (:class:`jaxprox.losses.Multinomial`, softmax cross-entropy of a ``(d, K)``
    matrix, scikit-learn's default), solved with its certified duality gap by Newton-CG
    (:class:`jaxprox.ProxNewton` on Hessian-vector products, ``penalty="l2"``) or AGM-EF
    (``penalty="l1"``); ``"ovr"`` fits ``K`` one-vs-rest problems in one batched solve.

    ``predict_proba``: ``sigmoid(decision)`` for two classes; for ``K > 2`` the softmax of the
    decision (multinomial) or the one-vs-rest sigmoids normalised to sum to one (``"ovr"``).
    """

    def __init__(self, C=1.0, penalty="l2", fit_intercept=True, intercept_scaling=1.0, tol=1e-6,
                 max_steps=500, multi_class="auto"):
        self.multi_class = multi_class
        self.C = C
        self.penalty = penalty
        self.fit_intercept = fit_intercept
        self.intercept_scaling = intercept_scaling
        self.tol = tol
        self.max_steps = max_steps

    def fit(self, X, y):
        _check_positive("C", self.C)
        if self.penalty not in ("l1", "l2"):
            raise ValueError(f"penalty must be 'l1' or 'l2', got {self.penalty!r}")
        _check_multi_class(self.multi_class)
        if self.multi_class != "ovr" and len(np.unique(np.asarray(y))) > 2:
            return self._fit_multinomial(X, y)
        X, Y, n = self._prepare(X, y, pad=True, operator=True)
        N = X.shape[0]
        phases = self._phases(*X.shape)
        solver = phases if len(phases) > 1 else phases[0]
        if np.isinf(self.C):
            if self.penalty == "l1":
                raise ValueError("C=np.inf (no penalty) needs penalty='l2'")
            self._fit_batched(_logistic_unpenalised, solver, X, Y, self.tol, N / n, frac=(N - n) / N)
        else:
            build = _logistic_l1 if self.penalty == "l1" else _logistic
            self._fit_batched(build, solver, X, Y, self.tol, N / n, lam=1.0 / (N * self.C), frac=(N - n) / N)
        return self

    def _phases(self, N, d):
        """The solvers run one after the other on ``N`` (padded) rows and ``d`` features (class
        docstring): FISTA above 4096 features, else proximal Newton, with the Gram in float32 on at
        least :data:`_GRAM_ROWS` float64 rows and, for l1 there, a first phase of at most
        :data:`_L1_FISTA_STEPS` Newton steps with the FISTA inner solver (float32 Gram) before the
        semismooth one (float64 Gram: the finish)."""
        if d > 4096:
            return (FISTA(check_every=10).with_options(max_steps=self.max_steps),)
        big = N >= _GRAM_ROWS
        f32 = "float32" if big and _float() == np.float64 else None
        exact = np.dtype(_float()).name  # the finish's model in the data's precision
        if self.penalty == "l1" and big:
            return (ProxNewton(inner="fista", hessian_dtype=f32, max_steps=min(_L1_FISTA_STEPS, self.max_steps)),
                    ProxNewton(inner="ssn", hessian_dtype=exact).with_options(max_steps=self.max_steps))
        return (ProxNewton(inner="ssn", hessian_dtype=f32).with_options(max_steps=self.max_steps),)

    def _fit_multinomial(self, X, y, C=None):
        """The multinomial model (:class:`jaxprox.losses.Multinomial`): one ``(d, K)`` matrix ``W``,
        ``min (1/n) sum_i [logsumexp(W^T x_i) - w_{y_i}^T x_i] + lam R(W)``, solved by
        :meth:`_multinomial_solver` (Newton-CG for the ridge: 6-9 Newton steps on digits,
        ``benchmarks/results/multinomial.md``) with its duality gap as the certificate."""
        C = self.C if C is None else C
        if np.isinf(C):
            raise ValueError("the multinomial model needs a penalty (C < inf): its minimisers are not unique "
                             "without one; use multi_class='ovr' for C=np.inf")
        X, onehot, n = self._multinomial_data(X, y)
        solver = self._multinomial_solver()
        sol = solve(self._multinomial_problem(X, onehot, np.asarray(1.0 / (n * C), _float())), solver, warn=False)
        self._report(np.asarray(sol.params).T, sol.steps, np.asarray([sol.primal_value]), np.asarray([sol.gap]),
                     bool(sol.converged), solver.describe(), solver.tol)
        return self

    def _multinomial_data(self, X, y):
        """``(X as an operator, one-hot (n, K) labels, n)``, the intercept column appended."""
        X, Y, n = self._prepare(X, y, pad=False, operator=True)
        return operators.as_operator(X), np.asarray(Y.T > 0, dtype=_float()), n

    def _multinomial_problem(self, X, onehot, lam):
        penalty = penalties.L1(lam) if self.penalty == "l1" else penalties.SquaredL2(lam)
        return ERM(X, onehot, losses.Multinomial(), penalty, n_outputs=onehot.shape[1])

    def _multinomial_solver(self):
        """Newton-CG (:meth:`jaxprox.ProxNewton.newton_cg_point`) for the ridge: its conjugate
        gradients run in the data's units whether or not the columns are rescaled
        (:meth:`~jaxprox.ProxNewton.cg_preconditioner`), so the rescaling is skipped; AGM-EF for l1
        (no Newton system), at most ``100 max_steps`` iterations."""
        if self.penalty == "l1":
            return AGM(tol=_reachable(self.tol), max_steps=100 * int(self.max_steps))
        return ProxNewton(inner="cg", tol=_reachable(self.tol), max_steps=int(self.max_steps), rescale=False)

    def predict_proba(self, X):
        scores = self.decision_function(X)
        if scores.ndim == 2 and getattr(self, "multi_class", "ovr") != "ovr":  # multinomial: its softmax
            e = np.exp(scores - scores.max(axis=1, keepdims=True))
            return e / e.sum(axis=1, keepdims=True)
        p = 1.0 / (1.0 + np.exp(-scores))
        if p.ndim == 1:
            return np.stack([1 - p, p], axis=1)
        return p / p.sum(axis=1, keepdims=True)


def _fold_warning(f, Cs, conv, tol, max_steps):
    """Warn when the solves of fold ``f`` stopped short at some values of ``C``."""
    short = np.flatnonzero(~np.asarray(conv).reshape(-1, len(Cs)).all(axis=0))
    if short.size:
        warnings.warn(ConvergenceWarning(
            f"LogisticRegressionCV: fold {f} stopped short of tol={tol:g} at C = "
            f"{', '.join(f'{c:.3g}' for c in Cs[short])} (max_steps={max_steps}); raise "
            "max_steps or loosen tol (folds_converged_ is False)"), stacklevel=3)
    return not short.size


@compiled(trace_cache=True)
def _cv_solves(solver, build, X, mask, Y, lams, frac):
    """Every ``(class, C)`` problem of one training mask: the rows outside ``mask`` are zeroed,
    which makes them padding (module docstring), so each fold is the same ``N x d`` problem and
    every fold, and the final fit (mask of all real rows), reuses one compiled function. Per class,
    the values of ``lams`` (from large to small) are one :func:`jaxprox.solve_path`: warm-started
    along the path on a CPU, all at once in lock-step on an accelerator; the classes are vmapped.
    Returns ``(W, steps, converged, primal, gap)`` with leading axes ``(K, len(lams))``."""
    Xm = X.scale_rows(mask)

    def one(y):
        sols = solve_path(build(Xm, y, lam=lams[0], frac=frac), solver, lams, warn=False)
        return sols.params, sols.steps, sols.converged, sols.primal_value, sols.gap

    return jax.vmap(one)(Y)


class LogisticRegressionCV(LogisticRegression):
    """:class:`LogisticRegression` with ``C`` chosen by cross-validation (scikit-learn's
    ``LogisticRegressionCV``): for each fold, every value of ``Cs`` (and every one-vs-rest class)
    is solved in ONE compiled call, a :func:`jaxprox.solve_path` over the values of ``C`` per class
    (warm-started from large to small regularisation on a CPU, all values in lock-step on an
    accelerator), and the final fit on all rows comes from the same compiled function (it is one
    more "fold" whose mask keeps every row). The ``C`` with the best mean held-out score over the
    folds is kept (one ``C`` for all classes), and ``coef_`` is its fit on all the data.

    The held-out rows of a fold are zeroed rather than removed, which turns them into padding rows
    (see the module docstring: same minimiser, exact objective after the constant is removed), so
    that all folds share one shape.

    Args:
        Cs: number of values on ``logspace(-4, 4, Cs)`` (scikit-learn's grid) or the values.
        cv: number of stratified folds or a scikit-learn splitter.
        penalty, fit_intercept, intercept_scaling: as :class:`LogisticRegression`.
        max_steps: the step budget of every solve (default 100 Newton steps, scikit-learn's
            ``max_iter`` for its ``LogisticRegressionCV``); a fold that needs more warns.
        tol: the relative duality gap of every solve (default ``1e-4``, scikit-learn's default for
            its ``LogisticRegressionCV``; the held-out scores need no more).
        scoring: a scikit-learn scorer name or callable (default: accuracy).
        progress: show a bar of the fits (one per fold, then the final fit; :mod:`jaxprox.progress`).

    A fold whose solves stop short of ``tol`` warns (``ConvergenceWarning``, naming the fold and
    the values of ``C``). Attributes (besides :class:`LogisticRegression`'s): ``Cs_`` (ascending), ``C_`` (the chosen ``C``, one entry
    per class as in scikit-learn), ``scores_`` (``(n_folds, len(Cs_))`` held-out scores),
    ``folds_converged_`` (whether every fold's solves certified ``tol``).
    """

    def __init__(self, Cs=10, cv=5, penalty="l2", fit_intercept=True, intercept_scaling=1.0, tol=1e-4,
                 max_steps=100, scoring=None, progress=False, multi_class="auto"):
        self.multi_class = multi_class
        self.progress = progress
        self.Cs = Cs
        self.cv = cv
        self.penalty = penalty
        self.fit_intercept = fit_intercept
        self.intercept_scaling = intercept_scaling
        self.tol = tol
        self.max_steps = max_steps
        self.scoring = scoring

    def fit(self, X, y):
        from sklearn.metrics import check_scoring
        from sklearn.model_selection import check_cv

        if self.penalty not in ("l1", "l2"):
            raise ValueError(f"penalty must be 'l1' or 'l2', got {self.penalty!r}")
        Cs = np.logspace(-4, 4, int(self.Cs)) if np.isscalar(self.Cs) else np.asarray(self.Cs, dtype=np.float64)
        if Cs.ndim != 1 or Cs.size == 0 or not np.all(np.isfinite(Cs) & (Cs > 0)):
            raise ValueError(f"Cs must be a positive int or a list of positive finite values, got {self.Cs!r}")
        y_raw = np.asarray(y)
        _check_multi_class(self.multi_class)
        if self.multi_class != "ovr" and len(np.unique(y_raw)) > 2:
            return self._fit_cv_multinomial(X, y_raw, np.sort(Cs))
        Xp, Y, n = self._prepare(X, y, pad=True, operator=True)
        N, ftype = Xp.shape[0], _float()
        folds = list(check_cv(self.cv, y_raw, classifier=True).split(np.zeros(n), y_raw))
        # LogisticRegression's first phase with the whole step budget; for l1 with the FISTA inner
        # solver (the loose CV tolerance needs no semismooth finish, whose factorisations cost
        # several times more on the near-separable folds of a large C: benchmarks/results/sklearn_cv.md)
        solver = self._phases(*Xp.shape)[0]
        if self.penalty == "l1" and isinstance(solver, ProxNewton):
            solver = ProxNewton(inner="fista", hessian_dtype=solver.hessian_dtype)
        solver = solver.with_options(max_steps=self.max_steps, tol=_reachable(self.tol))
        build = _logistic_l1 if self.penalty == "l1" else _logistic
        order = np.argsort(Cs)  # C ascending = lam descending: the path's order
        Cs = Cs[order]
        lams = jnp.asarray(1.0 / (N * Cs), ftype)
        Xj, Yj = operators.as_operator(Xp.toarray() if sp.issparse(Xp) else Xp), jnp.asarray(Y)
        scorer = check_scoring(self, scoring=self.scoring)
        Xc = check_array(X, accept_sparse="csr", dtype=np.float64)
        scores, ok = np.zeros((len(folds), len(Cs))), True
        everything = np.arange(n)
        bar = progress.bar(len(folds) + 1, "fits", "jaxprox CV") if self.progress else None
        for f, (train, test) in enumerate([*folds, (everything, None)]):  # the last: the final fit
            mask = np.zeros(N, dtype=bool)
            mask[train] = True
            W, steps, conv, primal, gap = _cv_solves(solver, build, Xj, jnp.asarray(mask), Yj, lams,
                                                     jnp.asarray((N - len(train)) / N, ftype))
            W = np.asarray(W, dtype=np.float64)
            if bar is not None:
                bar.update(1)
            if test is None:
                break
            ok &= _fold_warning(f, Cs, conv, solver.tol, self.max_steps)
            for c in range(len(Cs)):
                self._set_coef(W[:, c])
                scores[f, c] = scorer(self, Xc[test], y_raw[test])
        if bar is not None:
            bar.close()
        best = int(np.argmax(scores.mean(axis=0)))
        self.Cs_, self.scores_, self.folds_converged_ = Cs, scores, ok
        self.C_ = np.full(Y.shape[0], Cs[best])
        self._report(W[:, best], np.max(np.asarray(steps)[:, best]), (N / n) * np.asarray(primal)[:, best],
                     (N / n) * np.asarray(gap)[:, best], bool(np.all(np.asarray(conv)[:, best])),
                     solver.describe(), solver.tol)
        return self

    def _fit_cv_multinomial(self, X, y, Cs):
        """The multinomial model's cross-validation: per fold, the held-out rows zeroed (padding: same
        minimiser with ``lam = 1 / (n C)``) and the values of ``Cs`` one warm-started
        :func:`jaxprox.solve_path` (:meth:`LogisticRegression._multinomial_solver`, certified); then the best mean score's ``C`` refitted on
        all rows."""
        from sklearn.metrics import check_scoring
        from sklearn.model_selection import check_cv

        Xop, onehot, n = self._multinomial_data(X, y)
        folds = list(check_cv(self.cv, y, classifier=True).split(np.zeros(n), y))
        solver, lams = self._multinomial_solver(), np.asarray(1.0 / (n * Cs[::-1]), _float())  # large to small
        scorer, Xc = check_scoring(self, scoring=self.scoring), check_array(X, accept_sparse="csr", dtype=np.float64)
        scores, ok = np.zeros((len(folds), len(Cs))), True
        bar = progress.bar(len(folds) + 1, "fits", "jaxprox CV") if self.progress else None
        for f, (train, test) in enumerate(folds):
            mask = np.zeros(n)
            mask[train] = 1.0
            path = solve_path(self._multinomial_problem(Xop.scale_rows(jnp.asarray(mask, _float())), onehot, lams[0]),
                              solver, lams, warn=False)
            W = np.asarray(path.params, dtype=np.float64)[::-1]  # back to ascending C
            for c in range(len(Cs)):
                self._set_coef(W[c].T)
                scores[f, c] = scorer(self, Xc[test], y[test])
            ok &= _fold_warning(f, Cs, np.asarray(path.converged)[::-1], solver.tol, self.max_steps)
            if bar is not None:
                bar.update(1)
        best = int(np.argmax(scores.mean(axis=0)))
        self.Cs_, self.scores_, self.folds_converged_ = Cs, scores, ok
        self.C_ = np.full(len(self.classes_), Cs[best])
        self._fit_multinomial(X, y, C=Cs[best])
        if bar is not None:
            bar.update(1)
            bar.close()
        return self
