"""The shared base of the estimators: validation, labels, padding to size buckets, the batched
one-vs-rest solve and the report of a fit (see :mod:`jaxprox.sklearn` for the conventions)."""
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
    from sklearn.utils.validation import check_is_fitted, validate_data
except ImportError as err:  # pragma: no cover - depends on the environment
    raise ImportError("jaxprox.sklearn needs scikit-learn: pip install 'jaxprox[sklearn]'") from err

from .. import operators
from .._compile import compiled
from ..problems import ERM
from ..solve import solve


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
