"""The linear hinge-loss SVM by smoothing with continuation and (subsampled) Newton steps, the whole
continuation in ONE ``lax.while_loop``.

Problem (the papers' scaling, ``n`` rows, labels in {-1, +1}, an optional constant ``offset``):

    P(w) = (1/n) sum_i max(0, r_i) + (lam/2) ||w||^2 + offset,        r_i = 1 - y_i x_i^T w,

and its dual over ``s in [0, 1]^n`` (``u_i = -y_i s_i`` in the library's margin convention),

    D(s) = (1/n) sum_i s_i - ||v(s)||^2 / (2 lam) + offset,            v(s) = X^T (y * s) / n,

so ``P(w) - D(s) >= P(w) - P*`` for every ``w`` and every ``s in [0, 1]^n``: an honest certificate.

Smoothing ("Smooth minimization of non-smooth functions", Nesterov 2005): the hinge ``max(0, r)``
is replaced by ``h_mu(r) = max_{s in [0,1]} s r - mu s^2 / 2`` (``0 <= max(0, r) - h_mu(r) <=
mu/2``), whose maximiser ``s = clip(r / mu, 0, 1)`` is the dual point certified above. The smoothed
problem ``P_mu`` is piecewise quadratic; its generalised Hessian is

    H = lam I + (1 / (n mu)) sum_{i in Z} x_i x_i^T,         Z = {i : 0 < r_i < mu},

as in the finite Newton method for SVMs (Keerthi & DeCoste, "A Modified Finite Newton Method for
Fast Solution of Large Scale Linear SVMs", JMLR 2005): on the piece where ``Z`` stays the same the
quadratic model is exact, so Newton with an exact line search (:func:`line_search`) lands on the
minimiser once ``Z`` is identified. When ``Z`` has more than ``hessian_rows`` rows (large data,
large ``mu``), ``H`` is estimated from a uniform subsample of ``Z`` rescaled by ``|Z| /
hessian_rows`` (subsampled Newton: Byrd, Chin, Neveitt & Nocedal, "On the Use of Stochastic
Hessian Information in Optimization Methods for Machine Learning", SIAM J. Optim. 2011), with
the exact diagonal where the sample's is smaller: still positive definite, so every step is a
descent step, and exact again in the last stages, where ``Z`` is the few rows near the margin.

Continuation. With ``G = P(w) - D(s)`` (hinge gap) and ``G_mu = P_mu(w) - D_mu(s)`` (the smoothed
problem's gap, ``D_mu(s) = D(s) - (mu/2n) sum s_i^2``),

    G = G_mu + E,     E = (1/n) sum_{i in Z} r_i (1 - r_i / mu)  <=  mu |Z| / (4 n),

the smoothed problem's own error plus a smoothing part (the rows on the linear pieces cancel).
Newton drives ``G_mu`` to zero for a fixed ``mu``; once ``G_mu`` is small against ``E`` a new,
smaller ``mu`` is taken (:func:`newton_step`). The loop stops when ``P(w) - max_k D(s_k) <= tol
|P(w)|`` (the best dual point over all steps, :func:`keep_best_dual`) or after ``max_steps``
Newton steps (all stages together).

:class:`SVMNewton` runs the same steps as a :class:`~jaxprox.solver.Solver` of ``jp.solve`` on
``jp.ERM(X, y, Hinge(), SquaredL2(lam))``; :func:`hinge_svm_newton` is the whole continuation as one
function (the scikit-learn estimators' route). :class:`BiasSVMNewton` runs it on ``jp.BiasSVM`` (an
unpenalised bias): on ``z = (w, b + m^T w)`` and the centred data ``[X - 1 m^T, 1]``, ``lam`` per
coordinate (0 for the bias) and the dual point brought into ``{y^T s = 0}`` (:func:`bias_project`).
"""
from __future__ import annotations

from typing import NamedTuple

import equinox as eqx
import jax
import jax.numpy as jnp
from jax import lax

from .. import capabilities as cap
from ..certificates import keep_better
from ..solver import Solver
from ..losses import SmoothedHinge
from ..operators import LinearOperator, as_operator
from ..problems.bias_svm import q2_feasible
from .agm import AGMSolution
from .pdprox import saddle_residual

#: ``mu`` is divided by at most this when a stage is solved
MU_DECREASE = 10.0

#: a stage is solved when its own gap is at most this fraction of the smoothing part of the hinge gap
STAGE_FRACTION = 0.25

#: exact line search: most doublings of the bracket, most Newton / bisection trials, relative tolerance
MAX_DOUBLINGS, MAX_REFINE, LS_TOL = 40, 50, 1e-10


class Pieces(NamedTuple):
    """Everything one pass over the data gives at ``(w, mu)``: the dual point ``s``, the gradient
    of ``P_mu`` and both gaps."""

    r: jax.Array        # 1 - y * (X w)
    s: jax.Array        # clip(r / mu, 0, 1)
    grad: jax.Array     # lam w - X^T (y s) / n
    primal: jax.Array   # P(w)
    gap: jax.Array      # P(w) - D(s)
    bias: jax.Array     # P(w) - P_mu(w)
    gap_mu: jax.Array   # P_mu(w) - D_mu(s)


class State(NamedTuple):
    w: jax.Array
    mu: jax.Array
    pieces: Pieces
    steps: jax.Array
    best_s: jax.Array     # the dual point with the largest D(s) so far
    best_dual: jax.Array  # D(best_s): a lower bound on P* kept across stages


def keep_best_dual(state: State) -> State:
    """Every ``s in [0, 1]^n`` gives ``D(s) <= P*``: keep the best one seen, so the certificate
    ``P(w) - max_k D(s_k)`` does not jump up when a new stage changes the dual point."""
    dual = state.pieces.primal - state.pieces.gap
    best_s, best_dual = keep_better(dual > state.best_dual, (state.pieces.s, dual), (state.best_s, state.best_dual))
    return state._replace(best_s=best_s, best_dual=best_dual)


def certified_gap(state: State):
    return state.pieces.primal - state.best_dual


def ridge_dot(lam, a, b):
    """``sum_j lam_j a_j b_j`` (``lam`` a scalar, or one value per coordinate)."""
    return lam * (a @ b) if jnp.ndim(lam) == 0 else jnp.sum(lam * a * b)


def ridge_conjugate(lam, v):
    """``sum_j v_j^2 / (2 lam_j)`` over the penalised coordinates (``lam`` a scalar, or a vector
    with 0 at an unpenalised coordinate, whose ``v_j`` the dual's domain makes 0)."""
    if jnp.ndim(lam) == 0:
        return (v @ v) / (2.0 * lam)
    return 0.5 * jnp.sum(jnp.where(lam > 0, v * v / jnp.where(lam > 0, lam, 1.0), 0.0))


def pieces(A, y, lam, offset, w, r, mu, project=None):
    """:class:`Pieces` at ``w`` (``r = 1 - y A w`` given) for the smoothing ``mu``: one product
    ``A^T (y s)``. ``lam``: a scalar, or per coordinate (0 for the bias of :class:`BiasSVMNewton`).
    ``project``: maps ``s`` into the dual's domain where it is smaller than ``[0, 1]^n`` (the SVM
    with a bias: ``y^T s = 0``); the dual value and the dual point are then those of the
    projected ``s`` (a second product), the gradient that of ``P_mu``."""
    n = A.shape[0]
    s = jnp.clip(r / mu, 0.0, 1.0)
    v = A.rmv(y * s / n)
    grad = lam * w - v
    reg = 0.5 * ridge_dot(lam, w, w)
    if project is not None:
        s = project(s)
        v = A.rmv(y * s / n)
    conj = ridge_conjugate(lam, v)
    hinge = jnp.mean(jnp.maximum(r, 0.0))
    primal = hinge + reg + offset
    dual = jnp.mean(s) - conj + offset
    bias = hinge - jnp.mean(SmoothedHinge(mu).value(1.0 - r, 1.0))  # h_mu(r): margin 1 - r, label 1
    gap_mu = (primal - bias) - (dual - 0.5 * mu * jnp.mean(s * s))
    return Pieces(r, s, grad, primal, primal - dual, bias, gap_mu)


def newton_direction(A, A2, lam, mu, zone, grad, perm, hessian_rows: int):
    """``-H^{-1} grad`` with ``H = lam I + (1/(n mu)) sum_{i in zone} x_i x_i^T``, from at most
    ``hessian_rows`` rows of ``zone`` (a uniform subsample, in the fixed random order ``perm``,
    rescaled by ``|zone| / hessian_rows`` when ``zone`` is larger, plus the diagonal of the exact
    ``H`` (``A2 = A.squared()``: the squared entries; one product) where the sample's is
    smaller: rare features, absent from the sample, would otherwise see the curvature ``lam``
    only, and a step far too long). The rows are gathered into the smallest of ``hessian_rows /
    2^j`` (j <= 3, at least ``d`` rows) that holds the zone, so the Gram of a small zone (the last
    stages) costs ``|zone| d^2``, not ``hessian_rows d^2``."""
    n, d = A.shape
    weights = (zone / (n * mu)).astype(A.dtype)
    if hessian_rows >= n:
        curv = A.weighted_gram(weights)
    else:
        count = jnp.sum(zone)
        caps = [hessian_rows >> j for j in range(4) if (hessian_rows >> j) >= max(d, 1)] or [hessian_rows]

        def gram(cap):
            def sampled():
                (pos,) = jnp.nonzero(zone[perm], size=cap, fill_value=0)
                keep = (jnp.arange(cap) < count).astype(A.dtype)
                return A.rows(perm[pos]).weighted_gram(keep * (jnp.maximum(count, cap) / (cap * n * mu)))

            def subsampled():  # more zone rows than cap: the exact diagonal where the sample has less
                G = sampled()
                return G + jnp.diag(jnp.maximum(A2.rmv(weights) - jnp.diagonal(G), 0.0))
            return subsampled if cap == caps[0] else sampled

        fits = jnp.sum(jnp.asarray(caps) >= count) - 1
        curv = lax.switch(jnp.clip(fits, 0, len(caps) - 1), [gram(c) for c in caps])
    # solved after a Jacobi scaling (unit diagonal: its diagonal spans the squared column units),
    # with a floor at the rounding level of the scaled system, which keeps the factor finite where
    # lam is below the curvature's rounding (float32, a weak penalty) without swamping the curvature
    # of columns in small units; any positive definite H gives a descent direction, and the exact
    # line search and the certificate use the true P_mu
    H = curv + jnp.diag(jnp.broadcast_to(_curvature_floor(lam), (d,)).astype(A.dtype))
    e = 1.0 / jnp.sqrt(jnp.diagonal(H))
    K = e[:, None] * H * e[None, :] + 16 * jnp.finfo(A.dtype).eps * jnp.eye(d, dtype=A.dtype)
    direction = -e * jax.scipy.linalg.cho_solve(jax.scipy.linalg.cho_factor(K), e * grad)
    return jnp.where(jnp.all(jnp.isfinite(direction)), direction, -grad)


def _curvature_floor(lam):
    """``lam`` with an unpenalised coordinate's 0 replaced by the largest ``lam`` (the Newton
    matrix of a bias with no row in the quadratic zone: any positive definite matrix gives a
    descent direction)."""
    return jnp.where(lam > 0, lam, jnp.max(lam))


def line_search(y, lam, w, r, direction, Xd, mu):
    """The exact minimiser ``t > 0`` of ``phi(t) = P_mu(w + t direction)``, a convex piecewise
    quadratic: its derivative

        phi'(t) = -(1/n) sum_i y_i Xd_i s_i(t) + lam (w + t direction)^T direction,
        s_i(t) = clip((r_i - t y_i Xd_i) / mu, 0, 1),

    is increasing and piecewise linear, so Newton's method on ``phi'``, safeguarded by bisection
    of a bracket ``[lo, hi]`` (``hi`` doubled from 1 until ``phi'(hi) >= 0``), ends on the
    minimiser's piece. ``O(n)`` per trial: the margins move along ``y * Xd``."""
    yXd, wd, dd = y * Xd, ridge_dot(lam, w, direction), ridge_dot(lam, direction, direction)

    def slope(t):
        q = (r - t * yXd) / mu
        s = jnp.clip(q, 0.0, 1.0)
        curv = jnp.mean(jnp.where((q > 0) & (q < 1), yXd * yXd, 0.0)) / mu + dd
        return -jnp.mean(yXd * s) + wd + t * dd, curv

    one = jnp.ones((), w.dtype)
    hi, _ = lax.while_loop(lambda c: (slope(c[0])[0] < 0) & (c[1] < MAX_DOUBLINGS),
                           lambda c: (2 * c[0], c[1] + 1), (one, 0))

    def refine(c):
        lo, hi, t, _, j = c
        g, h = slope(t)
        lo, hi = jnp.where(g < 0, t, lo), jnp.where(g < 0, hi, t)
        nt = t - g / h
        nt = jnp.where((nt > lo) & (nt < hi), nt, 0.5 * (lo + hi))
        return lo, hi, nt, g, j + 1

    def going(c):
        lo, hi, t, g, j = c
        return (j < MAX_REFINE) & (jnp.abs(g) > LS_TOL * dd * jnp.maximum(t, 1.0)) & (hi - lo > LS_TOL * hi)

    _, _, t, _, _ = lax.while_loop(going, refine, (jnp.zeros_like(one), hi, jnp.minimum(one, hi), jnp.inf * one, 0))
    return t


def newton_step(A, A2, y, lam, offset, tol, perm, hessian_rows, state: State, project=None) -> State:
    """One stage update and one Newton step on ``P_mu`` with exact line search.

    Stage update: the hinge gap splits as ``G = G_mu + E`` with the smoothing part
    ``E = G - G_mu = (1/n) sum_{i in Z} r_i (1 - r_i / mu) <= mu |Z| / (4 n)`` (the linear pieces
    cancel). Once ``G_mu <= E / 4`` (:data:`STAGE_FRACTION`) more Newton steps at this ``mu``
    cannot certify ``tol``, and ``mu`` is scaled by ``clip(tol |P| / (2 E), 1/10, 1/2)``: ``E``
    is about proportional to ``mu``, so the next stage aims at ``E = tol |P| / 2``, dividing
    ``mu`` by at most :data:`MU_DECREASE` per stage (a smaller ``mu`` changes the quadratic zone
    ``Z`` more, and Newton needs more steps to find it again).

    Predictor: the first step of a stage keeps the previous stage's zone ``Z``: it minimises the
    model ``(1/n) [sum_Z r_i^2 / (2 mu') + sum_{r_i >= mu} (r_i - mu'/2)] + (lam/2)||w||^2`` for
    the new ``mu'``, whose gradient at ``w`` is ``grad P_mu(w) - (1/mu' - 1/mu) X^T (y r 1_Z) / n``
    and whose minimiser moves the zone's margins to ``r_i mu' / mu`` at once (a predictor step of
    path following), instead of finding the shrunken zone again one Newton step at a time."""
    p, mu, w = state.pieces, state.mu, state.w
    smoothing = jnp.maximum(p.gap - p.gap_mu, 0.0)
    solved = p.gap_mu <= STAGE_FRACTION * smoothing
    factor = jnp.clip(0.5 * tol * jnp.abs(p.primal) / jnp.maximum(smoothing, jnp.finfo(w.dtype).tiny),
                      1.0 / MU_DECREASE, 0.5)
    new_mu = jnp.where(solved, mu * factor, mu)
    zone = (p.r > 0) & (p.r < mu)
    # the predictor's gradient once mu changes: the product X^T (y r 1_Z) / n is only needed then
    # (a stage's first step; under vmap both branches run, as the two products of one pass did)
    pull = lax.cond(solved, lambda: A.rmv(jnp.where(zone, y * p.r, 0.0)) / A.shape[0], lambda: jnp.zeros_like(w))
    grad = p.grad - (1.0 / new_mu - 1.0 / mu) * pull
    direction = newton_direction(A, A2, lam, new_mu, zone, grad, perm, hessian_rows)
    Xd = A.mv(direction)
    t = line_search(y, lam, w, p.r, direction, Xd, new_mu)
    w, r = w + t * direction, p.r - t * (y * Xd)
    return keep_best_dual(state._replace(w=w, mu=new_mu, pieces=pieces(A, y, lam, offset, w, r, new_mu, project),
                                         steps=state.steps + 1))


def least_squares_start(A, y, lam, mu, sample=None):
    """The start of the continuation: the minimiser of ``P_mu`` if every row were in the quadratic
    zone, ``(A^T A / n + mu lam I) w = A^T y / n`` (at ``mu = 1`` the regularised least-squares fit
    of the labels: the Newton point from ``w = 0`` with the zone closed at ``r = mu``), with the Gram
    in float32 from the rows ``sample`` (all rows by default; a start needs no more), or ``w = 0``
    where that is better in ``P_mu``. From ``w = 0`` the zone ``{0 < r < mu}`` is empty (every
    ``r = 1``) and the first Newton steps only find its size (:func:`hinge_svm_newton` passes
    ``2 hessian_rows`` sampled rows; step counts in ``benchmarks/results/sklearn.md``)."""
    n, d = A.shape
    S = A if sample is None else A.rows(sample)
    m = S.shape[0]
    G = S.weighted_gram(jnp.full((m,), 1.0 / m, A.dtype), jnp.float32).astype(A.dtype)
    ridge = jnp.diag(jnp.broadcast_to(mu * _curvature_floor(lam), (d,)).astype(A.dtype))
    w = jax.scipy.linalg.cho_solve(jax.scipy.linalg.cho_factor(G + ridge), A.rmv(y) / n)

    def smoothed(v):
        r = 1.0 - y * A.mv(v)
        return jnp.mean(SmoothedHinge(mu).value(1.0 - r, 1.0)) + 0.5 * ridge_dot(lam, v, v)

    f_w = smoothed(w)
    return jnp.where(jnp.isfinite(f_w) & (f_w < smoothed(jnp.zeros_like(w))), w, 0.0)


def first_state(A, y, lam, offset, w, mu, project=None) -> State:
    """The :class:`State` at the start ``w`` with smoothing ``mu`` (its dual point the best so far)."""
    p0 = pieces(A, y, lam, offset, w, 1.0 - y * A.mv(w), mu, project)
    return State(w, mu, p0, jnp.zeros((), jnp.int32), p0.s, p0.primal - p0.gap)


def hinge_svm_newton(X, y, lam, *, offset=0.0, tol=1e-4, max_steps=200, mu0=1.0, hessian_rows=2048, w0=None,
                     perm=None):
    """Minimise the hinge SVM ``P`` above to ``P(w) - D(s) <= tol |P(w)|``.

    ``X``: the ``n x d`` data, a dense array or a :class:`jaxprox.operators.Dense` /
    :func:`jaxprox.operators.sparse` operator (sparse rows: each product costs ``O(nnz)``; the
    Hessian sample is gathered into a dense ``hessian_rows x d`` block). ``perm``: the random
    order of the rows in which the Hessian sample is drawn (default
    ``jax.random.permutation(PRNGKey(0), n)``; a caller that fits often may pass one drawn on the
    host: XLA:CPU sorts 25k keys in ~10 ms).

    ``w0``: the start (default :func:`least_squares_start`).

    Returns ``(w, s, steps)``: the primal iterate, the dual point ``s in [0, 1]^n`` that certifies
    it (callers evaluate the certificate with their problem, e.g. ``ERM.certificate(w, -y s)``)
    and the number of Newton steps. Traceable (``jit``, ``vmap`` over problems)."""
    A = as_operator(X)
    n, d = A.shape
    mu = jnp.asarray(mu0, A.dtype)
    if perm is None and hessian_rows < n:
        perm = jax.random.permutation(jax.random.PRNGKey(0), n)
    sample = None if 2 * hessian_rows >= n else perm[: 2 * hessian_rows]
    w = least_squares_start(A, y, lam, mu, sample) if w0 is None else w0
    start = first_state(A, y, lam, offset, w, mu)

    def going(st):
        return (certified_gap(st) > tol * jnp.abs(st.pieces.primal)) & (st.steps < max_steps)

    A2 = A.squared() if hessian_rows < n else None  # the exact Hessian diagonal of a subsampled step
    out = lax.while_loop(going, lambda st: newton_step(A, A2, y, lam, offset, tol, perm, hessian_rows, st), start)
    return out.w, out.best_s, out.steps


class _SmoothingNewton(Solver):
    """The settings, the start and the step shared by :class:`SVMNewton` and
    :class:`BiasSVMNewton`; a subclass gives the data, ``lam`` and the dual's projection
    (:meth:`_parts`)."""

    option_ranges = {"hessian_rows": ">= 1", "mu0": "> 0"}
    step_unit = "Newton steps"

    hessian_rows: int = eqx.field(static=True, default=2048)
    mu0: float = eqx.field(static=True, default=1.0)
    seed: int = eqx.field(static=True, default=0)
    max_steps: int = eqx.field(static=True, default=200, kw_only=True)
    check_every: int = eqx.field(static=True, default=1, kw_only=True)

    def _start(self, problem, parts, z0=None):
        """``(State, perm)`` at ``z0`` (default :func:`least_squares_start`), ``perm`` the random
        order of the rows of the Hessian sample (None when every zone row fits); ``parts``: the
        ``(A, lam, offset, project)`` of :func:`newton_step` for ``problem``."""
        A, lam, offset, project = parts
        n = problem.n
        mu = jnp.asarray(self.mu0, A.dtype)
        perm = jax.random.permutation(jax.random.PRNGKey(self.seed), n) if self.hessian_rows < n else None
        if z0 is None:
            sample = None if 2 * self.hessian_rows >= n else perm[: 2 * self.hessian_rows]
            z0 = least_squares_start(A, problem.y, lam, mu, sample)
        return first_state(A, problem.y, lam, offset, z0, mu, project), perm

    def _newton_step(self, problem, parts, newton: State, perm) -> State:
        """One Newton step; a solved stage takes ``mu / MU_DECREASE`` (the run's ``tol`` is not
        known to a step)."""
        A, lam, offset, project = parts
        A2 = A.squared() if self.hessian_rows < problem.n else None
        return newton_step(A, A2, problem.y, lam, offset, 0.0, perm, self.hessian_rows, newton, project)


class SVMNewtonState(NamedTuple):
    newton: State
    u: jax.Array            # -y * newton.best_s: the best dual point in the ERM's margin convention
    perm: jax.Array | None  # the random order of the rows of the Hessian sample (None: all rows)


class SVMNewton(_SmoothingNewton):
    """The plain SVM, ``jp.ERM(X, y, Hinge(), SquaredL2(lam))``,

        min_w (1/n) sum_i max(0, 1 - y_i x_i^T w) + (lam/2) ||w||^2,

    by smoothing with continuation and Newton steps with exact line search (module docstring):
    one step is one Newton step on the smoothed problem ``P_mu``, and ``mu`` is divided by at most
    :data:`MU_DECREASE` once a stage is solved (``G_mu <= E / 4``). The start is the regularised
    least-squares fit of the labels (:func:`least_squares_start`) or the warm start ``init``.

    Certificate: :meth:`ERM.best_certificate <jaxprox.ERM.best_certificate>` at ``w`` with the best
    dual point ``u = -y s`` seen over all steps (every ``s in [0, 1]^n`` is dual feasible), so the
    gap bounds ``P(w) - P*``. Derivatives are implicit, through the Chambolle-Pock saddle residual
    at ``(w, u)`` (:func:`jaxprox.solvers.pdprox.saddle_residual`), zero exactly at a saddle point.

    Args:
        hessian_rows: most rows of the quadratic zone in one Hessian (static); a larger zone is
            subsampled (:func:`newton_direction`).
        mu0: the first smoothing.
        seed: the random order of the rows from which the Hessian sample is drawn (static).
        max_steps, check_every: driver settings (``check_every`` defaults to 1: a step costs a
            weighted Gram, its certificate three products).

    References: Keerthi & DeCoste, "A Modified Finite Newton Method for Fast Solution of Large
    Scale Linear SVMs" (JMLR 2005); Nesterov, "Smooth minimization of non-smooth functions" (2005).
    """

    requires = (cap.ERM_PROBLEM, cap.PLAIN_SVM)

    def _parts(self, problem):
        return problem.A, jnp.asarray(problem.penalty.lam, problem.A.dtype), problem.offset, None

    def init(self, problem, init=None):
        newton, perm = self._start(problem, self._parts(problem),
                                   None if init is None else jnp.asarray(init, problem.A.dtype))
        return SVMNewtonState(newton, -problem.y * newton.best_s, perm)

    def step(self, problem, s: SVMNewtonState) -> SVMNewtonState:
        newton = self._newton_step(problem, self._parts(problem), s.newton, s.perm)
        return SVMNewtonState(newton, -problem.y * newton.best_s, s.perm)

    def certificate(self, problem, s: SVMNewtonState):
        return problem.best_certificate(*self.solution(s))

    def params(self, s: SVMNewtonState):
        return s.newton.w

    def dual(self, s: SVMNewtonState):
        return self.solution(s)[1]

    def solution(self, s: SVMNewtonState):
        """``(w, u)``: the iterate and the best dual point ``u = -y s`` (the ERM's margin convention)."""
        return s.newton.w, s.u

    def unpack(self, z):
        return z

    def residual(self, problem, z):
        return saddle_residual(problem, z)


class CentredWithOnes(LinearOperator):
    """``[A - 1 m^T, 1]``: the data with their columns centred by ``m`` and a column of ones
    appended, the operator of :class:`BiasSVMNewton` on ``z = (w, c)``, ``c = b + m^T w``
    (the same margins ``A w + b``). With ``m`` the column means the ones column is orthogonal to
    the others: the bias no longer leans on columns with large means (on wine, whose columns
    range to 1680, the uncentred ``[A, 1]`` took hundreds of Newton steps)."""

    A: LinearOperator
    m: jax.Array

    @property
    def shape(self):
        return self.A.shape[0], self.A.shape[1] + 1

    @property
    def dtype(self):
        return self.A.dtype

    def mv(self, z):
        return self.A.mv(z[:-1]) + (z[-1] - self.m @ z[:-1])

    def rmv(self, u):
        total = jnp.sum(u)
        return jnp.concatenate([self.A.rmv(u) - self.m * total, total[None]])

    def rows(self, idx):
        return CentredWithOnes(self.A.rows(idx), self.m)

    def todense(self):
        X = self.A.todense()
        return jnp.concatenate([X - self.m, jnp.ones((X.shape[0], 1), X.dtype)], axis=1)

    def squared(self):
        return _CentredSquared(self.A, self.A.squared(), self.m)


class _CentredSquared(eqx.Module):
    """The squared entries of :class:`CentredWithOnes` for ``rmv`` only (the diagonal of its
    weighted Gram, :func:`newton_direction`): ``sum_i u_i (a_ij - m_j)^2`` and ``sum_i u_i``."""

    A: LinearOperator
    A2: LinearOperator
    m: jax.Array

    def rmv(self, u):
        total = jnp.sum(u)
        return jnp.concatenate([self.A2.rmv(u) - 2.0 * self.m * self.A.rmv(u) + self.m**2 * total, total[None]])


def bias_project(y, s):
    """A point of the domain ``s in [0, 1]^n``, ``y^T s = 0`` of the dual of the SVM with a bias,
    at or next to ``s``: :func:`jaxprox.problems.bias_svm.q2_feasible` (the heavier class scaled
    down), exact at the smoothed problem's optimum, where ``y^T s = 0`` is the bias's stationarity."""
    n = s.shape[0]
    return n * q2_feasible(s / n, y, n)


class BiasSVMNewtonState(NamedTuple):
    newton: State           # on z = (w, b + m^T w)
    perm: jax.Array | None  # the random order of the rows of the Hessian sample (None: all rows)
    m: jax.Array            # the column means of X (CentredWithOnes), computed once


class BiasSVMNewton(_SmoothingNewton):
    """The SVM with an unpenalised bias, ``jp.BiasSVM(X, y, lam)`` (``penalty="l2"``),

        min_{w, b} (1/n) sum_i max(0, 1 - y_i (x_i^T w + b)) + (lam/2) ||w||^2,

    by the smoothing Newton continuation of :class:`SVMNewton` on ``z = (w, b)`` and the data
    ``[X - 1 m^T, 1]`` (columns centred by their means ``m``, ``z = (w, b + m^T w)``: the same
    margins) with the bias unpenalised (its Newton matrix entry floored by ``lam`` where no row
    is in the quadratic zone). Works on the primal, so it needs no floor on ``lam`` (the AGM's dual
    run does: :func:`~jaxprox.problems.bias_svm.check_svm_dual_lam`) and its steps do not depend
    on the columns' units (Jacobi-scaled Newton systems).

    Certificate: ``J(w) - D(alpha)`` with ``J`` the exact objective (its optimal bias,
    :meth:`BiasSVM.objective <jaxprox.BiasSVM.objective>`) and the best dual point over all steps,
    ``alpha = s / n`` brought into ``Q2 = [0, 1/n]^n cap {y^T alpha = 0}`` (:func:`bias_project`):
    every such point bounds ``J*`` from below. Derivatives are implicit, through the active-set KKT
    system of :meth:`BiasSVM.active_set_residual <jaxprox.BiasSVM.active_set_residual>` at
    ``(alpha, w)``, exact where the active sets are locally constant.

    Args: as :class:`SVMNewton`. ``init``: a warm start ``w`` (its bias the optimal one for ``w``).

    References: Keerthi & DeCoste, "A Modified Finite Newton Method for Fast Solution of Large
    Scale Linear SVMs" (JMLR 2005); Nesterov, "Smooth minimization of non-smooth functions" (2005).
    """

    requires = (cap.BIAS_SVM_L2,)

    def _parts(self, problem, m):
        """``[X - 1 m^T, 1]``, ``lam`` per coordinate (0 for the bias), no offset, the dual's
        projection."""
        X = problem.A
        A = CentredWithOnes(X, m)
        lam = jnp.asarray(problem.lam, A.dtype) * jnp.concatenate(
            [jnp.ones(problem.A.shape[1], A.dtype), jnp.zeros(1, A.dtype)])
        return A, lam, 0.0, lambda s: bias_project(problem.y, s)

    def init(self, problem, init=None):
        X = problem.A
        m = X.rmv(jnp.ones(X.shape[0], X.dtype)) / X.shape[0]
        if init is not None:
            w = jnp.asarray(init, X.dtype)
            init = jnp.concatenate([w, (problem.bias(w) + m @ w)[None]])
        return BiasSVMNewtonState(*self._start(problem, self._parts(problem, m), init), m)

    def step(self, problem, s: BiasSVMNewtonState) -> BiasSVMNewtonState:
        """One Newton step on ``z = (w, b + m^T w)``."""
        return s._replace(newton=self._newton_step(problem, self._parts(problem, s.m), s.newton, s.perm))

    def certificate(self, problem, s: BiasSVMNewtonState):
        """``J(w) - D(alpha)``: ``alpha`` is a point of ``Q2`` already (:func:`bias_project`)."""
        w = self.params(s)
        prim, dual = problem.objective(w), problem.dual_objective(self.dual(s))
        return prim, dual, prim - dual

    def params(self, s: BiasSVMNewtonState):
        return s.newton.w[:-1]

    def dual(self, s: BiasSVMNewtonState):
        """``alpha = s / n`` of the best dual point (:class:`BiasSVM`'s scaling)."""
        return s.newton.best_s / s.newton.best_s.shape[0]

    def solution(self, s: BiasSVMNewtonState):
        return AGMSolution(self.dual(s), self.params(s), True)

    def unpack(self, z):
        return z.abar, z.x

    def residual(self, problem, z):
        ra, rw = problem.active_set_residual(z)
        return AGMSolution(ra, rw, True)
