"""scikit-learn compatible estimators around jaxprox solvers (needs scikit-learn installed).

Scaling. Every estimator maps scikit-learn's scaling to the papers' ``(1/n) sum loss + lam R``:
scikit-learn minimises ``C sum_i loss_i + R(w)``, which is ``n C`` times
``(1/n) sum_i loss_i + lam R(w)`` with ``lam = 1 / (n C)``; both have the same minimiser.

Labels. Any labels (``classes_``). Two classes are one problem with labels in {-1, +1}; ``K > 2``
classes are ``K`` one-vs-rest problems (class ``k`` against the others) solved in ONE batched call
(``jax.vmap`` over the ``K`` label vectors, one compiled solve for all classes).
An intercept, when asked for, is a constant feature of value ``intercept_scaling`` and is
penalised like the other weights (liblinear's convention).

Convergence. Each fit stops when its solver's certificate, a duality gap, satisfies
``gap <= tol |primal|`` (relative) for every class; ``converged_``, ``n_iter_`` (the solver's
steps, the most over the classes), ``gap_`` and ``objective_`` (one entry per one-vs-rest
problem) report it, and a fit that stops short raises scikit-learn's
:class:`sklearn.exceptions.ConvergenceWarning`.

Precision. The estimators never change JAX's global settings. They solve in the floating type JAX
allows: float64 when the user enabled ``jax_enable_x64``, float32 otherwise; in float32 the
relative tolerance is raised to at least :data:`FLOAT32_TOL` (a float32 duality gap is only
accurate to a few units of ``1e-6`` relative), and the coefficients are returned as float64
NumPy arrays in both cases.

Compilation. The solve of each estimator is one module-level compiled function, keyed on the
array shapes, the solver's settings and the problem's structure: ``C`` (and ``epsilon``,
``kappa``, ``radius``) are traced values, so refitting with a new ``C`` on data of the same shape
reuses the compiled code, and ``import jaxprox`` switches on JAX's persistent compilation cache
and the cache of traced solves (:mod:`jaxprox.tracecache`), so worker processes (``n_jobs``) and
later processes load the solve from disk instead of tracing and compiling it again. The ERM
estimators (SVM, logistic, sparse) also pad the rows to a size bucket (:func:`_bucket`: 512 rows for
small data, at most 1/8 more rows above), so that the training folds of a cross-validation and
the final refit share one compiled solve. A padded row is zero, with label +1: it adds the constant
``l(0)`` to the sum of losses and nothing else, and at the dual point ``u = l'(0)`` nothing to the
gap (Fenchel-Young holds with equality). With ``N`` rows in all,

    (1/N) sum_{i <= N} l_i + lam' R  =  (n/N) [ (1/n) sum_{i <= n} l_i + lam R ] + (N-n)/N l(0),
    lam' = lam n / N,

so the padded problem has the same minimisers; its constant is removed by ``ERM(offset=...)``
and its objective and gap are rescaled by ``N/n`` when reported.
"""
from __future__ import annotations

import warnings

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import scipy.sparse as sp
try:
    from sklearn.base import BaseEstimator, ClassifierMixin
    from sklearn.exceptions import ConvergenceWarning
    from sklearn.utils.multiclass import check_classification_targets
    from sklearn.utils.validation import check_array, check_is_fitted, validate_data
except ImportError as err:  # pragma: no cover - depends on the environment
    raise ImportError("jaxprox.sklearn needs scikit-learn: pip install 'jaxprox[sklearn]'") from err

from . import constraints, losses, operators, penalties, progress
from .baselines import FISTA, ProxNewton
from ._compile import compiled
from .base import check_range
from .solve import solve, solve_path
from .problems import DRSVM, ERM
from .problems.drsvm import check_hyperparameters as check_drsvm_hyperparameters
from .solvers.agm import AGM
from .solvers.block_fw import PDBlockFW
from .solvers.drsvm_ipm import DRSVMBarrier
from .solvers.svm_newton import hinge_svm_newton

#: smallest relative tolerance used when JAX computes in float32 (``jax_enable_x64`` off)
FLOAT32_TOL = 1e-5

#: the ERM estimators pad smaller data to this many rows (:func:`_bucket`)
_MIN_ROWS = 512

#: SVMClassifier: dense data with at most this many features (intercept included) use the one-loop
#: smoothing + Newton solver (a ``d x d`` Hessian per step); wider or sparse data the staged ProxNewton
_SVM_NEWTON_FEATURES = 4096

#: SVMClassifier: the Newton Hessian is built from at most ``max(_HESSIAN_ROWS, 4 d)`` rows
_HESSIAN_ROWS = 2048

#: LogisticRegression with at least this many (padded) rows, where the weighted Gram of each Newton
#: step dominates the cost: in float64, the Gram is formed in float32 (about 3x faster on a CPU; the
#: gradient, line search and certificate stay in float64); with ``penalty="l1"``, proximal Newton
#: first runs with the FISTA inner solver for at most ``_L1_FISTA_STEPS`` Newton steps, then the
#: semismooth-Newton inner solver, with the Gram in float64, from there
#: (:meth:`LogisticRegression._phases`)
_GRAM_ROWS, _L1_FISTA_STEPS = 4096, 25

#: data with at most this many entries are passed to the solver as a dense array, unless sparse
#: products pay (:func:`_sparse_pays`)
_DENSE_ENTRIES = 50_000_000

#: SVMClassifier and LogisticRegression keep sparse input sparse (a :func:`jaxprox.operators.sparse`
#: operator: products cost O(stored entries)) when its stored entries are at most this fraction of
#: ``n d``: on XLA:CPU a gathered or scattered entry costs about 3x a dense matrix-vector entry
#: (``benchmarks/results/sklearn.md``)
_SPARSE_FRACTION = 0.25


def _float():
    """The floating type JAX computes in now: float64 with ``jax_enable_x64``, float32 without."""
    return np.dtype(jnp.result_type(float))


def _bucket(n: int) -> int:
    """The padded number of rows: :data:`_MIN_ROWS` for small data (every fit and every CV fold of
    a small data set shares one compiled solve per number of features; the extra rows cost
    microseconds), above that ``n`` rounded up to a multiple of ``2^(floor(log2 n) - 3)`` (eight
    sizes per octave, at most 1/8 more rows: :func:`jaxprox.operators.rounded_size`)."""
    return max(_MIN_ROWS, operators.rounded_size(n))


def _pad_offset(loss, frac):
    """``-frac l(0, +1)``: removes the constant that padded rows (a fraction ``frac``) add."""
    return -frac * loss.value(jnp.zeros((), jnp.result_type(float)), jnp.ones((), jnp.result_type(float)))


def _sparse_pays(X) -> bool:
    """Whether a CSR matrix is sparse enough that :data:`_SPARSE_FRACTION` says keep it sparse:
    its stored entries, as the operator would hold them (rows padded to the longest one when
    that adds at most 50%, :func:`jaxprox.operators.sparse`; otherwise the nonzeros), are at most
    that fraction of ``n d``."""
    n, d = X.shape
    longest = int(np.diff(X.indptr).max(initial=0))
    stored = n * longest if n * longest <= 1.5 * max(X.nnz, 1) else X.nnz
    return stored <= _SPARSE_FRACTION * n * d


def _reachable(tol: float) -> float:
    return max(float(tol), FLOAT32_TOL) if _float() == np.float32 else float(tol)


@compiled(trace_cache=True)
def _solve_ovr(build, solvers, X, Y, hyper):
    """``K`` problems ``build(X, Y[k], **hyper)`` solved by one vmapped :func:`jaxprox.solve`;
    ``solvers`` is a solver or a tuple of solvers run one after the other, each from the previous
    one's solution (a later one takes no step when the start is already certified).

    ``build`` is a module-level function and ``hyper`` holds arrays (traced), so one compiled
    function serves every value of the hyperparameters."""
    solvers = solvers if isinstance(solvers, tuple) else (solvers,)

    def one(y):
        problem, sol = build(X, y, **hyper), None
        for solver in solvers:
            nxt = solve(problem, solver, init=None if sol is None else sol.params, warn=False)
            sol = nxt if sol is None else eqx.tree_at(lambda s: s.steps, nxt, nxt.steps + sol.steps)
        return sol

    return jax.vmap(one)(Y)


class _LinearClassifier(ClassifierMixin, BaseEstimator):
    """Shared plumbing: input checks, one-vs-rest labels, intercept column, the batched solve,
    the convergence report and prediction."""

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        return tags

    def _prepare(self, X, y, pad=False, operator=False):
        """Validated data in JAX's floating type (intercept column appended) and the ``(K, N)``
        label vectors in {-1, +1}: ``K = 1`` for two classes, one per class otherwise. With
        ``pad``, zero rows with label +1 are appended up to ``N = _bucket(n)`` (module docstring);
        otherwise ``N = n``. Also returns ``n``. Sparse input is densified when it has at most
        :data:`_DENSE_ENTRIES` entries; with ``operator``, sparse input that :func:`_sparse_pays`
        is returned as a :func:`jaxprox.operators.sparse` operator instead."""
        X, y = validate_data(self, X, y, accept_sparse="csr", dtype=np.float64)
        check_classification_targets(y)
        self.classes_ = np.unique(y)
        if len(self.classes_) < 2:
            raise ValueError(f"{type(self).__name__} needs samples of at least 2 classes; got 1 class")
        if getattr(self, "fit_intercept", False):
            X = _append_column(X, float(self.intercept_scaling))
        keep = sp.issparse(X) and operator and _sparse_pays(X)
        if sp.issparse(X) and X.shape[0] * X.shape[1] <= _DENSE_ENTRIES and not keep:
            X = X.toarray()
        ftype = _float()
        X = X.astype(ftype)
        pos = self.classes_[1:] if len(self.classes_) == 2 else self.classes_
        Y = np.where(y[None, :] == pos[:, None], 1.0, -1.0).astype(ftype)
        n = X.shape[0]
        if pad and _bucket(n) > n:
            extra = _bucket(n) - n
            X = (sp.csr_matrix((X.data, X.indices, np.pad(X.indptr, (0, extra), mode="edge")),
                               shape=(n + extra, X.shape[1])) if sp.issparse(X)
                 else np.vstack([X, np.zeros((extra, X.shape[1]), ftype)]))
            Y = np.hstack([Y, np.ones((Y.shape[0], extra), ftype)])
        if keep:
            X = operators.sparse(X, ftype)
        return X, Y, n

    def _fit_batched(self, build, solver, X, Y, tol, scale=1.0, **hyper):
        """Solve the one-vs-rest problems (``solver``: one solver or a tuple chained by
        :func:`_solve_ovr`), store ``coef_``/``intercept_`` and the run's report (objective and gap
        times ``scale``: ``N/n`` for padded rows)."""
        hyper = {k: np.asarray(v, _float()) for k, v in hyper.items()}  # traced, no JAX dispatch
        solvers = tuple(s.with_options(tol=_reachable(tol), check_every=min(s.check_every, s.max_steps))
                        for s in (solver if isinstance(solver, tuple) else (solver,)))
        sol = _solve_ovr(build, solvers if len(solvers) > 1 else solvers[0], X, Y, hyper)
        params = sol.params[0] if isinstance(sol.params, tuple) else sol.params  # DRSVM: (w, lam)
        self._report(params, np.max(sol.steps), scale * np.asarray(sol.primal_value), scale * np.asarray(sol.gap),
                     np.all(sol.converged), " -> ".join(s.describe() for s in solvers), solvers[-1].tol)
        return sol

    def _report(self, W, steps, primal, gap, converged, method, tol):
        """Store ``coef_``/``intercept_``, ``n_iter_``, ``gap_``, ``objective_``, ``converged_``,
        and warn (scikit-learn's ``ConvergenceWarning``) when a problem stopped short."""
        self._set_coef(np.asarray(W, dtype=np.float64))
        self.n_iter_ = int(steps)
        self.gap_ = np.asarray(gap, dtype=np.float64)
        self.objective_ = np.asarray(primal, dtype=np.float64)
        self.converged_ = bool(converged)
        if not self.converged_:
            warnings.warn(
                f"{type(self).__name__} ({method}) stopped after {self.n_iter_} steps without reaching "
                f"the relative duality gap tol={tol:g} (largest certified gap "
                f"{float(np.max(self.gap_)):.3g}); raise max_steps or loosen tol.",
                ConvergenceWarning, stacklevel=3)

    def _set_coef(self, W):
        if getattr(self, "fit_intercept", False):
            self.coef_ = W[:, :-1]
            self.intercept_ = W[:, -1] * float(self.intercept_scaling)
        else:
            self.coef_ = W
            self.intercept_ = np.zeros(W.shape[0])

    def decision_function(self, X):
        """``X coef_^T + intercept_``: shape ``(n,)`` for two classes, ``(n, K)`` otherwise."""
        check_is_fitted(self)
        X = validate_data(self, X, accept_sparse="csr", dtype=np.float64, reset=False)
        scores = np.asarray(X @ self.coef_.T) + self.intercept_
        return scores.ravel() if scores.shape[1] == 1 else scores

    def predict(self, X):
        scores = self.decision_function(X)  # checks fitted-ness first
        idx = (scores > 0).astype(int) if scores.ndim == 1 else scores.argmax(axis=1)
        return self.classes_[idx]


def _append_column(X, value):
    """``[X, value * 1]``: a constant last column (the intercept's), for a dense array or a CSR
    matrix (built directly, faster than ``scipy.sparse.hstack``: ``benchmarks/results/sklearn.md``)."""
    n, d = X.shape
    if not sp.issparse(X):
        return np.hstack([X, np.full((n, 1), value, X.dtype)])
    X = X.tocsr()
    indptr = X.indptr + np.arange(n + 1, dtype=X.indptr.dtype)
    last = indptr[1:] - 1  # each row's new final entry
    old = np.ones(X.nnz + n, bool)
    old[last] = False
    indices, data = np.empty(X.nnz + n, X.indices.dtype), np.empty(X.nnz + n, X.dtype)
    indices[old], data[old], indices[last], data[last] = X.indices, X.data, d, value
    return sp.csr_matrix((data, indices, indptr), shape=(n, d + 1))


def _check_positive(name, value):
    if not value > 0:
        raise ValueError(f"{name} must be positive, got {value}")


def _erm(X, y, loss, penalty, frac, constraint=None):
    return ERM(X, y, loss, penalty, constraint, offset=_pad_offset(loss, frac))


@compiled(trace_cache=True)
def _svm_stage(solver, X, Y, W0, lam, mu, frac):
    """One continuation stage of :class:`SVMClassifier` for every one-vs-rest problem: the
    smoothed-hinge problem solved from ``W0``, and the certificate of its solution ``w`` for the
    hinge problem with the dual point ``u = h_mu'(A w)`` (hinge-feasible: ``-y u in [0, 1]``)."""
    def one(y, w0):
        smooth = _erm(X, y, losses.SmoothedHinge(mu), penalties.SquaredL2(lam), frac)
        sol = solve(smooth, solver, init=w0, warn=False)
        u = smooth.loss.grad(smooth.margins(sol.params), y)
        hinge = _erm(X, y, losses.Hinge(), penalties.SquaredL2(lam), frac)
        primal, _, gap = hinge.certificate(sol.params, u)
        return sol.params, sol.steps, primal, gap

    return jax.vmap(one)(Y, W0)


@compiled(trace_cache=True)
def _svm_newton(X, Y, lam, frac, tol, max_steps, hessian_rows, perm=None):
    """:func:`jaxprox.solvers.svm_newton.hinge_svm_newton` (the whole continuation, one loop) for
    every one-vs-rest problem, and each solution's certificate for the hinge problem
    (:meth:`ERM.certificate` at the solver's dual point ``u = -y s``)."""
    def one(y):
        w, s, steps = hinge_svm_newton(X, y, lam, offset=-frac, tol=tol, max_steps=max_steps,
                                       hessian_rows=hessian_rows, perm=perm)
        primal, _, gap = _erm(X, y, losses.Hinge(), penalties.SquaredL2(lam), frac).certificate(w, -y * s)
        return w, steps, primal, gap

    if Y.shape[0] == 1:  # two classes: no vmap (it would turn the solver's lax.cond into both branches)
        return jax.tree_util.tree_map(lambda a: a[None], one(Y[0]))
    return jax.vmap(one)(Y)


def _logistic(X, y, lam, frac):
    return _erm(X, y, losses.Logistic(), penalties.SquaredL2(lam), frac)


def _logistic_l1(X, y, lam, frac):
    return _erm(X, y, losses.Logistic(), penalties.L1(lam), frac)


def _logistic_unpenalised(X, y, frac):
    return _erm(X, y, losses.Logistic(), None, frac)


def _sparse_hinge(X, y, mu, radius, frac):
    return _erm(X, y, losses.SmoothedHinge(1.0), penalties.SquaredL2(mu), frac, constraints.L1Ball(radius))


def _drsvm(X, y, kappa, epsilon, c, *, norm):
    return DRSVM(X, y, norm=norm, kappa=kappa, epsilon=epsilon, c=c)


_DRSVM_BUILDERS = {q: (lambda X, y, kappa, epsilon, c, _q=q: _drsvm(X, y, kappa, epsilon, c, norm=_q))
                   for q in ("l1", "l2", "linf")}


class SVMClassifier(_LinearClassifier):
    """Linear SVM (scikit-learn's ``LinearSVC(loss="hinge")``):

        P(w) = (1/n) sum_i max(0, 1 - y_i w^T x_i) + (lam/2) ||w||^2,      lam = 1 / (n C).

    Solved by smoothing with continuation (the hinge replaced by its Nesterov smoothing ``h_mu``,
    ``0 <= hinge - h_mu <= mu/2``; "Smooth minimization of non-smooth functions", Nesterov 2005)
    and Newton steps with the generalised Hessian of the piecewise-quadratic smoothed loss (as in
    Keerthi & DeCoste, "A Modified Finite Newton Method for Fast Solution of Large Scale Linear
    SVMs", 2005), the whole continuation over ``mu = 1, ...`` in ONE compiled loop
    (:func:`jaxprox.solvers.svm_newton.hinge_svm_newton`: exact line search, a new ``mu`` once
    the smoothing dominates the gap, a predictor step at each new ``mu``, a subsampled Hessian on
    large data), until the hinge problem's own duality gap ``P(w) - D(u)`` at the best dual point
    ``u_i = -y_i s_i``, ``s_i = clip((1 - y_i w^T x_i) / mu, 0, 1)``, seen so far is at most
    ``tol |P(w)|`` (relative; at least :data:`FLOAT32_TOL` in float32). The reported gap is
    :meth:`ERM.certificate` of the hinge problem at the returned ``(w, u)``. ``n_iter_`` counts
    Newton steps over all stages (at most ``max_steps``). Sparse input whose stored entries are
    at most a quarter of the matrix stays sparse (:func:`jaxprox.operators.sparse`: products in
    ``O(nnz)``); other sparse data with more than 50M entries take the staged proximal-Newton
    continuation instead (one compiled solve per ``mu``); both
    form a ``d x d`` Hessian, so at most 4096 features (ProxNewton raises above). ``C`` must be
    finite. The intercept, if any, is penalised (liblinear's convention).
    """

    def __init__(self, C=1.0, fit_intercept=True, intercept_scaling=1.0, tol=1e-4, max_steps=200):
        self.C = C
        self.fit_intercept = fit_intercept
        self.intercept_scaling = intercept_scaling
        self.tol = tol
        self.max_steps = max_steps

    def fit(self, X, y):
        _check_positive("C", self.C)
        check_range("SVMClassifier", "tol", self.tol, ">= 0")  # its Newton loop bypasses jp.solve's checks
        if not (isinstance(self.max_steps, (int, np.integer)) and self.max_steps >= 1):
            raise ValueError(f"max_steps must be an int >= 1, got {self.max_steps!r}")
        if not np.isfinite(self.C):
            raise ValueError(f"SVMClassifier needs a finite C (the hinge loss without a penalty has no "
                             f"minimiser on separable data), got {self.C}")
        X, Y, n = self._prepare(X, y, pad=True, operator=True)
        ftype, tol, (N, d) = _float(), _reachable(self.tol), X.shape
        # NumPy scalars: traced like JAX arrays by the compiled call, without a JAX dispatch each
        lam, frac = np.asarray(1.0 / (N * self.C), ftype), np.asarray((N - n) / N, ftype)  # lam n/N
        if sp.issparse(X) or d > _SVM_NEWTON_FEATURES:
            W, steps, primal, gap, method = self._continuation(X, Y, lam, frac, tol)
        else:
            rows = max(_HESSIAN_ROWS, 4 * d)
            # the sample's random order drawn here: XLA:CPU's sort would cost ~10 ms per fit at 25k rows
            perm = np.random.default_rng(0).permutation(N).astype(np.int32) if rows < N else None
            W, k, primal, gap = _svm_newton(X, Y, lam, frac, np.asarray(tol, ftype), np.asarray(self.max_steps),
                                            rows, perm)
            steps, method = int(np.max(k)), "smoothing + Newton, one loop"
        primal, gap = np.asarray(primal) * N / n, np.asarray(gap) * N / n
        self._report(W, steps, primal, gap, bool(np.all(gap <= tol * np.abs(primal))), method, tol)
        return self

    def _continuation(self, X, Y, lam, frac, tol):
        """Sparse data (or more than 4096 features, which ProxNewton refuses with an error): one
        compiled proximal-Newton solve per stage ``mu = 1, 1/10, ...``."""
        ftype = _float()
        solver = ProxNewton(inner="ssn", tol=tol / 10, max_steps=self.max_steps)
        W, steps, mu = np.zeros((Y.shape[0], X.shape[1]), ftype), 0, 1.0
        while True:
            W, k, primal, gap = _svm_stage(solver, X, Y, W, lam, jnp.asarray(mu, ftype), frac)
            steps += int(np.max(k))
            certified = np.all(np.asarray(gap) <= tol * np.abs(np.asarray(primal)))
            if certified or steps >= self.max_steps or mu < tol * 1e-3:
                return W, steps, primal, gap, "smoothing + ProxNewton"
            mu /= 10


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
    matrix, scikit-learn's default), solved by AGM-EF with its certified duality gap; ``"ovr"``
    fits ``K`` one-vs-rest problems in one batched solve.

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
        if self.multi_class not in ("auto", "multinomial", "ovr"):
            raise ValueError(f"multi_class must be 'auto', 'multinomial' or 'ovr', got {self.multi_class!r}")
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
        if self.penalty == "l1" and big:
            return (ProxNewton(inner="fista", hessian_dtype=f32, max_steps=min(_L1_FISTA_STEPS, self.max_steps)),
                    ProxNewton(inner="ssn").with_options(max_steps=self.max_steps))
        return (ProxNewton(inner="ssn", hessian_dtype=f32).with_options(max_steps=self.max_steps),)

    def _fit_multinomial(self, X, y):
        """The multinomial model (:class:`jaxprox.losses.Multinomial`): one ``(d, K)`` matrix ``W``,
        ``min (1/n) sum_i [logsumexp(W^T x_i) - w_{y_i}^T x_i] + lam R(W)``, solved by AGM-EF with
        its adaptive Lipschitz estimate (at most ``100 max_steps`` iterations; several times fewer
        than FISTA's fixed step needs, ``benchmarks/results/multinomial.md``) with its duality gap
        as the certificate."""
        if np.isinf(self.C):
            raise ValueError("the multinomial model needs a penalty (C < inf): its minimisers are not unique "
                             "without one; use multi_class='ovr' for C=np.inf")
        X, Y, n = self._prepare(X, y, pad=False, operator=True)
        onehot = np.asarray(Y.T > 0, dtype=_float())
        K = onehot.shape[1]
        lam = np.asarray(1.0 / (n * self.C), _float())
        penalty = penalties.L1(lam) if self.penalty == "l1" else penalties.SquaredL2(lam)
        problem = ERM(operators.as_operator(X), onehot, losses.Multinomial(), penalty, n_outputs=K)
        solver = AGM(tol=_reachable(self.tol), max_steps=100 * int(self.max_steps))
        sol = solve(problem, solver, warn=False)
        self._report(np.asarray(sol.params).T, sol.steps, np.asarray([sol.primal_value]), np.asarray([sol.gap]),
                     bool(sol.converged), solver.describe(), solver.tol)
        return self

    def predict_proba(self, X):
        scores = self.decision_function(X)
        if scores.ndim == 2 and getattr(self, "multi_class", "ovr") != "ovr":  # multinomial: its softmax
            e = np.exp(scores - scores.max(axis=1, keepdims=True))
            return e / e.sum(axis=1, keepdims=True)
        p = 1.0 / (1.0 + np.exp(-scores))
        if p.ndim == 1:
            return np.stack([1 - p, p], axis=1)
        return p / p.sum(axis=1, keepdims=True)


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
        penalty, fit_intercept, intercept_scaling, max_steps: as :class:`LogisticRegression`.
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
                 max_steps=500, scoring=None, progress=False):
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
        Xp, Y, n = self._prepare(X, y, pad=True, operator=True)
        N, ftype = Xp.shape[0], _float()
        folds = list(check_cv(self.cv, y_raw, classifier=True).split(np.zeros(n), y_raw))
        # LogisticRegression's first phase (for l1 on >= 4096 rows, the FISTA inner solver: the
        # loose CV tolerance needs no second), with the whole step budget
        solver = self._phases(*Xp.shape)[0].with_options(max_steps=self.max_steps, tol=_reachable(self.tol))
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
            short = np.flatnonzero(~np.all(np.asarray(conv), axis=0))
            if short.size:
                warnings.warn(ConvergenceWarning(
                    f"LogisticRegressionCV: fold {f} stopped short of tol={solver.tol:g} at C = "
                    f"{', '.join(f'{c:.3g}' for c in Cs[short])} (max_steps={self.max_steps}); raise "
                    "max_steps or loosen tol (folds_converged_ is False)"), stacklevel=2)
            ok &= bool(np.all(conv))
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


class SparseClassifier(_LinearClassifier):
    """Sparse linear classifier: smoothed hinge + ``(mu/2)||w||^2`` over the l1 ball,

        min_{||w||_1 <= radius} (1/n) sum_i h_1(y_i w^T x_i) + (mu/2) ||w||^2,

    with ``h_1`` the smoothed hinge of parameter 1 and ``mu`` (default ``10 / n``). Solved, with a
    duality-gap certificate (``tol`` relative, at least :data:`FLOAT32_TOL` in float32), by
    proximal Newton (Lee, Sun & Saunders, "Proximal Newton-type methods for minimizing composite
    functions", 2014; each model minimised over the ball by semismooth Newton, iterates projected
    onto the ball, so ``w`` is feasible with exact zeros) when there are at most 4096 features, by
    primal-dual block Frank-Wolfe (Lei, Zhuo, Caramanis, Dhillon & Dimakis, "Primal-Dual Block
    Frank-Wolfe", 2019, Algorithm 1) otherwise; ``sparsity`` (default: all features), the block
    size of the Frank-Wolfe path, must be at least the support size of the solution. Block
    Frank-Wolfe is no default for few features: on unscaled data (german.numer) it stops at its
    step cap far from the optimum, where proximal Newton converges in a few dozen steps.
    """

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
        _check_positive("radius", self.radius)
        X, Y, n = self._prepare(X, y, pad=True)
        N, d = X.shape
        mu = 10.0 / n if self.mu is None else self.mu
        if d <= 4096:
            solver = ProxNewton(inner="ssn", max_steps=self.max_steps)
        else:
            s = d if self.sparsity is None else min(int(self.sparsity), d)
            solver = PDBlockFW(sparsity=s, delta_scale=10.0, max_steps=self.max_steps)
        self._fit_batched(_sparse_hinge, solver, X, Y, self.tol, N / n, mu=mu * n / N, radius=self.radius,
                          frac=(N - n) / N)
        return self


class DRSVMClassifier(_LinearClassifier):
    """Wasserstein distributionally robust SVM ("Fast Epigraphical Projection-based Incremental
    Algorithms for Wasserstein Distributionally Robust Support Vector Machine", Li et al., 2020,
    problem (1)):

        min_{w, lam} lam epsilon + (1/n) sum_i max(1 - y_i w^T x_i, 1 + y_i w^T x_i - lam kappa, 0)
                     + (c/2) ||w||^2      s.t.  ||w||_q <= lam,

    with ``norm`` the constraint norm ``q`` as in :class:`jaxprox.DRSVM` (the same default,
    ``"l1"``: transport cost ``||x - x'||_inf``; ``"l2"``: Euclidean; ``"linf"``: ``||.||_1``), solved by a primal-dual
    interior-point method (:class:`jaxprox.DRSVMBarrier`, Mehrotra predictor-corrector) whose
    duality gap certifies the fit (``tol`` relative, at least :data:`FLOAT32_TOL` in float32).
    No intercept (the paper's model). ``lambda_`` holds the fitted ``lam`` per one-vs-rest problem
    (a scalar for two classes).
    """

    def __init__(self, norm="l1", kappa=1.0, epsilon=0.1, c=0.0, tol=1e-8, max_steps=200):
        self.norm = norm
        self.kappa = kappa
        self.epsilon = epsilon
        self.c = c
        self.tol = tol
        self.max_steps = max_steps

    def fit(self, X, y):
        if self.norm not in _DRSVM_BUILDERS:
            raise ValueError(f"norm must be one of {sorted(_DRSVM_BUILDERS)}, got {self.norm!r}")
        check_drsvm_hyperparameters(self.kappa, self.epsilon, self.c)  # before the batched (traced) fit
        X, Y, _ = self._prepare(X, y)
        sol = self._fit_batched(_DRSVM_BUILDERS[self.norm], DRSVMBarrier(max_steps=self.max_steps), X, Y,
                                self.tol, kappa=self.kappa, epsilon=self.epsilon, c=self.c)
        lam = np.asarray(sol.params[1], dtype=np.float64)
        self.lambda_ = float(lam[0]) if lam.size == 1 else lam
        return self
