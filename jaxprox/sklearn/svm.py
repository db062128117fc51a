"""The SVM estimators: :class:`SVMClassifier`, :class:`SparseClassifier`, :class:`DRSVMClassifier`."""
from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import scipy.sparse as sp

from .. import constraints, losses, penalties
from .._compile import compiled
from ..base import check_range
from ..baselines import ProxNewton
from ..problems import DRSVM
from ..problems.drsvm import check_hyperparameters as check_drsvm_hyperparameters
from ..solve import solve
from ..solvers.block_fw import PDBlockFW
from ..solvers.drsvm_ipm import DRSVMBarrier
from ..solvers.svm_newton import hinge_svm_newton
from ._base import _HESSIAN_ROWS, _SVM_NEWTON_FEATURES, _LinearClassifier, _check_positive, _erm, _float, _reachable


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
    finite. The intercept, if any, is penalised (liblinear's convention). ``max_steps`` defaults
    to 500 Newton steps: w8a (imbalanced, 300 sparse features) needs 255 at ``C = 1``.
    """

    def __init__(self, C=1.0, fit_intercept=True, intercept_scaling=1.0, tol=1e-4, max_steps=500):
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
