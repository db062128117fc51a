"""The linear hinge-loss SVM, with the penalty ``(lam/2) ||w||^2`` or ``lam ||w||_1``, by smoothing
with continuation and (subsampled) Newton steps, the whole continuation in ONE ``lax.while_loop``.

Problem (the papers' scaling, ``n`` rows, labels in {-1, +1}, an optional constant ``offset``):

    P(w) = (1/n) sum_i max(0, r_i) + R(w) + offset,        r_i = 1 - y_i x_i^T w,

``R(w) = (lam/2) ||w||^2`` (:class:`Ridge`) or ``lam ||w||_1`` (:class:`Lasso`, the 1-norm SVM), and
its dual over ``s in [0, 1]^n`` (``u_i = -y_i s_i`` in the library's margin convention),

    D(s) = (1/n) sum_i s_i - R^*(v(s)) + offset,                  v(s) = X^T (y * s) / n,

with ``R^*(v) = ||v||^2 / (2 lam)`` for the ridge; for the l1 norm ``R^*`` is the indicator of
``||v||_inf <= lam``, and ``s`` is scaled by ``c = min(1, lam / ||v||_inf)`` into its domain
(``c s`` stays in ``[0, 1]^n``). So ``P(w) - D(s) >= P(w) - P*``: an honest certificate.

Smoothing ("Smooth minimization of non-smooth functions", Nesterov 2005): the hinge ``max(0, r)``
is replaced by ``h_mu(r) = max_{s in [0,1]} s r - mu s^2 / 2`` (``0 <= max(0, r) - h_mu(r) <=
mu/2``), whose maximiser ``s = clip(r / mu, 0, 1)`` is the dual point certified above; the l1
norm by the Huber function ``lam sum_j H_{tau_j}(w_j)``, ``lam H_tau(x) = max_{|z| <= lam} z x -
tau z^2 / (2 lam)``, with the width ``tau_j = mu / q_j`` in the units of ``w_j`` (``q_j`` the root
mean square of column ``j``: the margin moves by about ``mu`` across the Huber zone). The
smoothed problem ``P_mu`` is piecewise quadratic; its generalised Hessian is

    H = R''_mu + (1 / (n mu)) sum_{i in Z} x_i x_i^T,         Z = {i : 0 < r_i < mu},

``R''_mu = lam I`` for the ridge, ``diag(lam / tau_j)`` on the Huber zone ``{|w_j| < tau_j}`` for
the l1 norm (:meth:`Lasso.curvature`), as in the finite Newton method for SVMs (Keerthi &
DeCoste, "A Modified Finite Newton Method for Fast Solution of Large Scale Linear SVMs", JMLR
2005): on the piece where the zones stay the same the quadratic model is exact, so Newton with an
exact line search (:func:`line_search`) lands on the minimiser once the zones are identified. When
``Z`` has more than ``hessian_rows`` rows (large data, large ``mu``), ``H`` is estimated from a
uniform subsample of ``Z`` rescaled by ``|Z| / hessian_rows`` (subsampled Newton: Byrd, Chin,
Neveitt & Nocedal, "On the Use of Stochastic Hessian Information in Optimization Methods for
Machine Learning", SIAM J. Optim. 2011), with the exact diagonal where the sample's is smaller:
still positive definite, so every step is a descent step, and exact again in the last stages,
where ``Z`` is the few rows near the margin.

Continuation. With ``G = P(w) - D(s)`` (the gap) and ``G_mu = P_mu(w) - D_mu(s)`` (the smoothed
problem's gap, ``D_mu(s) = D(s) - (mu/2n) sum s_i^2 - R^*_mu`` with ``R^*_mu = sum_j tau_j v_j^2 /
(2 lam)`` for the l1 norm, 0 for the ridge), ``G = G_mu + E`` with ``E`` the smoothing part,
``E <= mu |Z| / (4 n)`` for the hinge plus ``lam sum_j tau_j / 2`` over the Huber zone, both
proportional to ``mu``. Newton drives ``G_mu`` to zero for a fixed ``mu``; once ``G_mu`` is small
against ``E`` a new, smaller ``mu`` is taken (:func:`newton_step`). The loop stops when ``P(w) -
max_k D(s_k) <= tol |P(w)|`` (the best dual point over all steps, :func:`keep_best_dual`) or after
``max_steps`` Newton steps (all stages together).

:class:`SVMNewton` runs the same steps as a :class:`~jaxprox.solver.Solver` of ``jp.solve`` on
``jp.ERM(X, y, Hinge(), SquaredL2(lam))`` and ``jp.ERM(X, y, Hinge(), L1(lam))``;
:func:`hinge_svm_newton` is the ridge continuation as one function (the scikit-learn estimators'
route). :class:`~jaxprox.solvers.bias_svm_newton.BiasSVMNewton` runs it on ``jp.BiasSVM``.
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
from ..operators import as_operator
from ..penalties import L1
from .pdprox import saddle_residual

#: ``mu`` is divided by at most this when a stage is solved
MU_DECREASE = 10.0

#: a stage is solved when its own gap is at most this fraction of the smoothing part of the hinge gap
STAGE_FRACTION = 0.25

#: exact line search: most doublings of the bracket, most Newton / bisection trials, relative tolerance
MAX_DOUBLINGS, MAX_REFINE, LS_TOL = 40, 50, 1e-10

#: the l1 norm's Newton curvature off its Huber zone (where it has none), as a fraction of the
#: zone's ``lam / tau_j``: keeps the Newton matrix positive definite along directions the
#: quadratic zone of the rows does not reach (collinear columns, an empty zone), a damping small
#: against the rows' curvature of the nonzero coordinates at the end
L1_FLOOR = 1e-6


class Pieces(NamedTuple):
    """Everything one pass over the data gives at ``(w, mu)``: the dual point ``s``, the gradient
    of ``P_mu`` and both gaps."""

    r: jax.Array        # 1 - y * (X w)
    s: jax.Array        # clip(r / mu, 0, 1)
    grad: jax.Array     # R_mu'(w) - X^T (y s) / n
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


class Ridge(NamedTuple):
    """``R(w) = (lam/2) ||w||^2`` (``lam`` a scalar, or per coordinate with 0 at an unpenalised
    one): already smooth, its Newton curvature ``lam`` (:func:`_curvature_floor` where 0)."""

    lam: jax.Array

    def value(self, w):
        return 0.5 * ridge_dot(self.lam, w, w)

    def smoothed(self, w, mu):
        return self.value(w)

    def gradient(self, w, mu):
        return self.lam * w

    def dual(self, v, mu):
        """``(c, R^*(v), R^*_mu)``: the dual point's scale, the conjugate, its smoothing part."""
        return 1.0, ridge_conjugate(self.lam, v), 0.0

    def curvature(self, w, zone_mu, mu):
        return jnp.broadcast_to(_curvature_floor(self.lam), w.shape)

    def pull(self, w, mu, new_mu):
        return 0.0

    def slope(self, w, direction, mu):
        """``(t, g) -> (g + d/dt R(w + t direction), d^2/dt^2 R(w + t direction))``."""
        wd, dd = ridge_dot(self.lam, w, direction), ridge_dot(self.lam, direction, direction)
        return lambda t, g: (g + wd + t * dd, dd)

    def start_curvature(self, mu):
        return mu * _curvature_floor(self.lam)


class Lasso(NamedTuple):
    """``R(w) = lam ||w||_1`` smoothed by ``lam sum_j H_{tau_j}(w_j)``, ``tau_j = mu / q_j``
    (module docstring; ``q_j`` the root mean square of column ``j``, :func:`column_rms`)."""

    lam: jax.Array
    q: jax.Array

    def value(self, w):
        return self.lam * jnp.sum(jnp.abs(w))

    def smoothed(self, w, mu):
        tau, a = mu / self.q, jnp.abs(w)
        return self.lam * jnp.sum(jnp.where(a < tau, 0.5 * w * w / tau, a - 0.5 * tau))

    def gradient(self, w, mu):
        return self.lam * jnp.clip(w * self.q / mu, -1.0, 1.0)

    def dual(self, v, mu):
        """``c = min(1, lam / ||v||_inf)``: ``c s`` is the dual point; ``R^*(c v) = 0``."""
        c = jnp.asarray(L1(self.lam).dual_scale(v), v.dtype)
        return c, 0.0, 0.5 * c * c * jnp.sum(v * v * (mu / self.q)) / self.lam

    def curvature(self, w, zone_mu, mu):
        """``lam / tau_j`` on the Huber zone of ``zone_mu``, :data:`L1_FLOOR` times it off it."""
        inside = jnp.abs(w) * self.q < zone_mu
        return jnp.where(inside, 1.0, L1_FLOOR) * self.lam * self.q / mu

    def pull(self, w, mu, new_mu):
        """The predictor's change of the gradient at ``w`` when ``mu`` becomes ``new_mu`` with the
        Huber zone kept (:func:`newton_step`)."""
        inside = jnp.abs(w) * self.q < mu
        return (1.0 / new_mu - 1.0 / mu) * self.lam * jnp.where(inside, w * self.q, 0.0)

    def slope(self, w, direction, mu):
        """``(t, g) -> (g + d/dt R_mu(w + t direction), d^2/dt^2 R_mu(w + t direction))``: the
        derivative piecewise linear and increasing."""
        k = self.lam * self.q / mu

        def at(t, g):
            z = (w + t * direction) * self.q / mu
            inside = jnp.abs(z) < 1.0
            return (g + self.lam * jnp.sum(direction * jnp.clip(z, -1.0, 1.0)),
                    jnp.sum(jnp.where(inside, k * direction * direction, 0.0)))
        return at

    def start_curvature(self, mu):
        return self.lam * self.q


def column_rms(A):
    """``q_j = sqrt(mean_i A_ij^2)``, an empty column's replaced by the largest (1 if all are)."""
    q = jnp.sqrt(A.squared().rmv(jnp.full((A.shape[0],), 1.0 / A.shape[0], A.dtype)))
    top = jnp.max(q)
    return jnp.where(q > 0, q, jnp.where(top > 0, top, 1.0))


def pieces(A, y, term, offset, w, r, mu, project=None):
    """:class:`Pieces` at ``w`` (``r = 1 - y A w`` given) for the smoothing ``mu``: one product
    ``A^T (y s)``. ``term``: the penalty, :class:`Ridge` (``lam`` a scalar, or per coordinate: 0
    for the bias of :class:`~jaxprox.solvers.bias_svm_newton.BiasSVMNewton`) or :class:`Lasso`.
    ``project``: maps ``s`` into the dual's domain where it is smaller than ``[0, 1]^n`` (the SVM
    with a bias: ``y^T s = 0``); the dual value and the dual point are then those of the
    projected ``s`` (a second product), the gradient that of ``P_mu``. The dual point kept is
    ``c s`` (:meth:`Lasso.dual`'s scale)."""
    n = A.shape[0]
    s = jnp.clip(r / mu, 0.0, 1.0)
    v = A.rmv(y * s / n)
    grad = term.gradient(w, mu) - v
    if project is not None:
        s = project(s)
        v = A.rmv(y * s / n)
    c, conj, conj_mu = term.dual(v, mu)
    hinge = jnp.mean(jnp.maximum(r, 0.0))
    primal = hinge + term.value(w) + offset
    dual = c * jnp.mean(s) - conj + offset
    smoothed_hinge = jnp.mean(SmoothedHinge(mu).value(1.0 - r, 1.0)).astype(r.dtype)  # h_mu(r): margin 1 - r, label 1
    bias = (hinge - smoothed_hinge) + (term.value(w) - term.smoothed(w, mu))
    gap_mu = (primal - bias) - (dual - 0.5 * mu * c * c * jnp.mean(s * s) - conj_mu)
    return Pieces(r, c * s, grad, primal, primal - dual, bias, gap_mu)


def newton_direction(A, A2, curvature, mu, zone, grad, perm, hessian_rows: int):
    """``-H^{-1} grad`` with ``H = diag(curvature) + (1/(n mu)) sum_{i in zone} x_i x_i^T`` (the
    penalty's curvature, positive), from at most
    ``hessian_rows`` rows of ``zone`` (a uniform subsample, in the fixed random order ``perm``,
    rescaled by ``|zone| / hessian_rows`` when ``zone`` is larger, plus the diagonal of the exact
    ``H`` (``A2 = A.squared()``: the squared entries; one product) where the sample's is
    smaller: rare features, absent from the sample, would otherwise see the penalty's curvature
    only, and a step far too long). The rows are gathered into the smallest of ``hessian_rows /
    2^j`` (j <= 3, at least ``d`` rows) that holds the zone, so the Gram of a small zone (the last
    stages) costs ``|zone| d^2``, not ``hessian_rows d^2``. Wide float64 data (``n < d``, every
    row in the Hessian) takes the ``n x n`` form of :func:`woodbury_direction` instead (in float32
    its exact inverse's long steps along the penalty's small curvature carry the rounding of the
    data's curvature: on colon and wide_sparse 2 of 12 SVM solves converged instead of 5)."""
    n, d = A.shape
    weights = (zone / (n * mu)).astype(A.dtype)
    if hessian_rows >= n and n < d and n * d <= WOODBURY_ENTRIES and A.dtype == jnp.float64:
        return woodbury_direction(A.todense(), curvature.astype(A.dtype), weights, grad)
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
    H = curv + jnp.diag(curvature.astype(A.dtype))
    e = 1.0 / jnp.sqrt(jnp.diagonal(H))
    K = e[:, None] * H * e[None, :] + 16 * jnp.finfo(A.dtype).eps * jnp.eye(d, dtype=A.dtype)
    direction = -e * jax.scipy.linalg.cho_solve(jax.scipy.linalg.cho_factor(K), e * grad)
    return jnp.where(jnp.all(jnp.isfinite(direction)), direction, -grad)


#: the most entries ``n d`` of wide float64 data (``n < d``) whose Newton systems
#: :func:`newton_direction` solves in the ``n x n`` form of :func:`woodbury_direction` (the dense
#: rows are formed)
WOODBURY_ENTRIES = 1 << 24
#: steps of iterative refinement of :func:`woodbury_direction`
WOODBURY_REFINE = 2


def woodbury_direction(X, c, weights, grad):
    """``-H^{-1} grad`` for ``H = diag(c) + X^T diag(weights) X`` with fewer rows than columns, by
    the Sherman-Morrison-Woodbury identity with ``Y = diag(sqrt(weights)) X`` and ``C = diag(c)``:

        H^{-1} g = C^{-1} g - C^{-1} Y^T (I + Y C^{-1} Y^T)^{-1} Y C^{-1} g,

    an ``n x n`` system (Jacobi-scaled; its eigenvalues are at least 1, so it needs no floor) instead
    of the ``d x d`` one: on colon (62 x 2000) a Cholesky of side 62 instead of 2000 per Newton step.
    The difference cancels digits where ``c`` is small against the data's curvature (a weak penalty):
    :data:`WOODBURY_REFINE` steps of iterative refinement on ``H x = g`` (each two products with
    ``Y``) restore them (BiasSVM on colon at ``lam = 0.1 / n``: 129 Newton steps to 1e-6 with them,
    200 steps and 2.5e-5 without)."""
    Y = X * jnp.sqrt(weights)[:, None]
    YC = Y / c
    K = jnp.eye(X.shape[0], dtype=X.dtype) + YC @ Y.T
    e = 1.0 / jnp.sqrt(jnp.diagonal(K))
    factor = jax.scipy.linalg.cho_factor(e[:, None] * K * e[None, :])

    def solve(g):  # H^{-1} g
        Cg = g / c
        return Cg - YC.T @ (e * jax.scipy.linalg.cho_solve(factor, e * (Y @ Cg)))

    x = solve(grad)
    for _ in range(WOODBURY_REFINE):  # iterative refinement: the identity's difference cancels digits
        x = x + solve(grad - (c * x + Y.T @ (Y @ x)))
    return jnp.where(jnp.all(jnp.isfinite(x)), -x, -grad)


def _curvature_floor(lam):
    """``lam`` with an unpenalised coordinate's 0 replaced by the largest ``lam`` (the Newton
    matrix of a bias with no row in the quadratic zone: any positive definite matrix gives a
    descent direction)."""
    return jnp.where(lam > 0, lam, jnp.max(lam))


def line_search(y, term, w, r, direction, Xd, mu):
    """The exact minimiser ``t > 0`` of ``phi(t) = P_mu(w + t direction)``, a convex piecewise
    quadratic: its derivative

        phi'(t) = -(1/n) sum_i y_i Xd_i s_i(t) + R_mu'(w + t direction)^T direction,
        s_i(t) = clip((r_i - t y_i Xd_i) / mu, 0, 1),

    is increasing and piecewise linear, so Newton's method on ``phi'``, safeguarded by bisection
    of a bracket ``[lo, hi]`` (``hi`` doubled from 1 until ``phi'(hi) >= 0``), ends on the
    minimiser's piece. ``O(n + d)`` per trial: the margins move along ``y * Xd``."""
    yXd, penalty = y * Xd, term.slope(w, direction, mu)

    def slope(t):
        q = (r - t * yXd) / mu
        s = jnp.clip(q, 0.0, 1.0)
        g, h = penalty(t, -jnp.mean(yXd * s))
        return g, jnp.mean(jnp.where((q > 0) & (q < 1), yXd * yXd, 0.0)) / mu + h

    one = jnp.ones((), w.dtype)
    dd = penalty(0.0, 0.0)[1]
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


def newton_step(A, A2, y, term, offset, tol, perm, hessian_rows, state: State, project=None) -> State:
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
    the new ``mu'`` (and the penalty's Huber zone, :meth:`Lasso.pull`), whose gradient at ``w`` is
    ``grad P_mu(w) - (1/mu' - 1/mu) X^T (y r 1_Z) / n`` and whose minimiser moves the zone's margins
    to ``r_i mu' / mu`` at once (a predictor step of
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
    grad = p.grad - (1.0 / new_mu - 1.0 / mu) * pull + term.pull(w, mu, new_mu)
    direction = newton_direction(A, A2, term.curvature(w, mu, new_mu), new_mu, zone, grad, perm, hessian_rows)
    Xd = A.mv(direction)
    t = line_search(y, term, w, p.r, direction, Xd, new_mu)
    w, r = w + t * direction, p.r - t * (y * Xd)
    return keep_best_dual(state._replace(w=w, mu=new_mu, pieces=pieces(A, y, term, offset, w, r, new_mu, project),
                                         steps=state.steps + 1))


def least_squares_start(A, y, term, mu, sample=None):
    """The start of the continuation: the minimiser of ``P_mu`` if every row were in the quadratic
    zone, ``(A^T A / n + mu R''_mu) w = A^T y / n`` (``mu lam I`` for the ridge; at ``mu = 1`` the regularised least-squares fit
    of the labels: the Newton point from ``w = 0`` with the zone closed at ``r = mu``), with the Gram
    in float32 from the rows ``sample`` (all rows by default; a start needs no more), or ``w = 0``
    where that is better in ``P_mu``. From ``w = 0`` the zone ``{0 < r < mu}`` is empty (every
    ``r = 1``) and the first Newton steps only find its size (:func:`hinge_svm_newton` passes
    ``2 hessian_rows`` sampled rows; step counts in ``benchmarks/results/sklearn.md``)."""
    n, d = A.shape
    S = A if sample is None else A.rows(sample)
    m = S.shape[0]
    G = S.weighted_gram(jnp.full((m,), 1.0 / m, A.dtype), jnp.float32).astype(A.dtype)
    ridge = jnp.diag(jnp.broadcast_to(term.start_curvature(mu), (d,)).astype(A.dtype))
    w = jax.scipy.linalg.cho_solve(jax.scipy.linalg.cho_factor(G + ridge), A.rmv(y) / n)

    def smoothed(v):
        r = 1.0 - y * A.mv(v)
        return jnp.mean(SmoothedHinge(mu).value(1.0 - r, 1.0)) + term.smoothed(v, mu)

    f_w = smoothed(w)
    return jnp.where(jnp.isfinite(f_w) & (f_w < smoothed(jnp.zeros_like(w))), w, 0.0)


def first_state(A, y, term, offset, w, mu, project=None) -> State:
    """The :class:`State` at the start ``w`` with smoothing ``mu`` (its dual point the best so far)."""
    p0 = pieces(A, y, term, offset, w, 1.0 - y * A.mv(w), mu, project)
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
    term = Ridge(lam)
    mu = jnp.asarray(mu0, A.dtype)
    if perm is None and hessian_rows < n:
        perm = jax.random.permutation(jax.random.PRNGKey(0), n)
    sample = None if 2 * hessian_rows >= n else perm[: 2 * hessian_rows]
    w = least_squares_start(A, y, term, mu, sample) if w0 is None else w0
    start = first_state(A, y, term, offset, w, mu)

    def going(st):
        return (certified_gap(st) > tol * jnp.abs(st.pieces.primal)) & (st.steps < max_steps)

    A2 = A.squared() if hessian_rows < n else None  # the exact Hessian diagonal of a subsampled step
    out = lax.while_loop(going, lambda st: newton_step(A, A2, y, term, offset, tol, perm, hessian_rows, st), start)
    return out.w, out.best_s, out.steps


class _SmoothingNewton(Solver):
    """The settings, the start and the step shared by :class:`SVMNewton` and
    :class:`~jaxprox.solvers.bias_svm_newton.BiasSVMNewton`; a subclass gives the data, the
    penalty term and the dual's projection (its ``_parts``)."""

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
        ``(A, term, offset, project)`` of :func:`newton_step` for ``problem``."""
        A, term, offset, project = parts
        n = problem.n
        mu = jnp.asarray(self.mu0, A.dtype)
        perm = jax.random.permutation(jax.random.PRNGKey(self.seed), n) if self.hessian_rows < n else None
        if z0 is None:
            sample = None if 2 * self.hessian_rows >= n else perm[: 2 * self.hessian_rows]
            z0 = least_squares_start(A, problem.y, term, mu, sample)
        return first_state(A, problem.y, term, offset, z0, mu, project), perm

    def _newton_step(self, problem, parts, newton: State, perm) -> State:
        """One Newton step; a solved stage takes ``mu / MU_DECREASE`` (the run's ``tol`` is not
        known to a step)."""
        A, term, offset, project = parts
        A2 = A.squared() if self.hessian_rows < problem.n else None
        return newton_step(A, A2, problem.y, term, offset, 0.0, perm, self.hessian_rows, newton, project)


class SVMNewtonState(NamedTuple):
    newton: State
    u: jax.Array            # -y * newton.best_s: the best dual point in the ERM's margin convention
    perm: jax.Array | None  # the random order of the rows of the Hessian sample (None: all rows)
    q: jax.Array | None     # the columns' root mean squares (the l1 norm's Huber widths), or None


class SVMNewton(_SmoothingNewton):
    """The linear SVM, ``jp.ERM(X, y, Hinge(), SquaredL2(lam))`` or, the 1-norm SVM,
    ``jp.ERM(X, y, Hinge(), L1(lam))``,

        min_w (1/n) sum_i max(0, 1 - y_i x_i^T w) + (lam/2) ||w||^2     (or + lam ||w||_1),

    by smoothing with continuation and Newton steps with exact line search (module docstring):
    one step is one Newton step on the smoothed problem ``P_mu``, and ``mu`` is divided by at most
    :data:`MU_DECREASE` once a stage is solved (``G_mu <= E / 4``). The l1 norm is smoothed by
    Huber functions of widths ``mu / q_j`` (``q_j`` the root mean square of column ``j``: the
    same smoothing whatever the columns' units). The start is the regularised least-squares fit
    of the labels (:func:`least_squares_start`) or the warm start ``init``.

    Certificate: :meth:`ERM.best_certificate <jaxprox.ERM.best_certificate>` at ``w`` with the best
    dual point ``u = -y s`` seen over all steps (every ``s in [0, 1]^n`` is dual feasible after the
    ERM's rescaling), so the gap bounds ``P(w) - P*``. Derivatives are implicit, through the
    Chambolle-Pock saddle residual at ``(w, u)`` (:func:`jaxprox.solvers.pdprox.saddle_residual`),
    zero exactly at a saddle point.

    Args:
        hessian_rows: most rows of the quadratic zone in one Hessian (static); a larger zone is
            subsampled (:func:`newton_direction`).
        mu0: the first smoothing.
        seed: the random order of the rows from which the Hessian sample is drawn (static).
        max_steps, check_every: driver settings (``check_every`` defaults to 1: a step costs a
            weighted Gram, its certificate three products).

    References: Keerthi & DeCoste, "A Modified Finite Newton Method for Fast Solution of Large
    Scale Linear SVMs" (JMLR 2005); Nesterov, "Smooth minimization of non-smooth functions" (2005);
    Zhu, Rosset, Hastie & Tibshirani, "1-norm Support Vector Machines" (NIPS 2003).
    """

    requires = (cap.ERM_PROBLEM, cap.LINEAR_SVM)

    def _parts(self, problem, q=None):
        lam = jnp.asarray(problem.penalty.lam, problem.A.dtype)
        term = Ridge(lam) if q is None else Lasso(lam, q)
        return problem.A, term, problem.offset, None

    def init(self, problem, init=None):
        q = column_rms(problem.A) if isinstance(problem.penalty, L1) else None
        newton, perm = self._start(problem, self._parts(problem, q),
                                   None if init is None else jnp.asarray(init, problem.A.dtype))
        return SVMNewtonState(newton, -problem.y * newton.best_s, perm, q)

    def step(self, problem, s: SVMNewtonState) -> SVMNewtonState:
        newton = self._newton_step(problem, self._parts(problem, s.q), s.newton, s.perm)
        return s._replace(newton=newton, u=-problem.y * newton.best_s)

    def certificate(self, problem, s: SVMNewtonState):
        return problem.best_certificate(*self.solution(s))

    def params(self, s: SVMNewtonState):
        """The iterate; for the l1 norm with its Huber zone ``{|w_j| q_j < mu}`` set to 0 (the
        coordinates whose ``|v_j| < lam``: zero at the optimum; the certificate is that of this
        point)."""
        w = s.newton.w
        return w if s.q is None else jnp.where(jnp.abs(w) * s.q < s.newton.mu, 0.0, w)

    def dual(self, s: SVMNewtonState):
        return self.solution(s)[1]

    def solution(self, s: SVMNewtonState):
        """``(w, u)``: :meth:`params` and the best dual point ``u = -y s`` (the ERM's margin
        convention)."""
        return self.params(s), s.u

    def unpack(self, z):
        return z

    def residual(self, problem, z):
        return saddle_residual(problem, z)
