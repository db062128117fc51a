"""Models of paper 002 (Zhang, Saha, Vishwanathan; ``papers/notes/002_agm.md``) that the
:class:`~jaxprox.ERM` class cannot express, written as "AGM models" for
:class:`jaxprox.solvers.agm.AGM` (see its module docstring for the interface).

* :class:`BiasSVM` -- binary SVM with an *unregularised* bias (Example 1),
  ``J(w) = lam/2 ||w||^2 + min_b (1/n) sum_i [1 - y_i (x_i^T w + b)]_+``, in the three schemes of
  section 5: the dual ``max_{alpha in Q2} sum alpha - ||X^T Y alpha||^2/(2 lam)`` over
  ``Q2 = [0, 1/n]^n cap {y^T alpha = 0}`` without smoothing (5.3, ``mu = 0``) or with dual
  smoothing ``- mu/2 ||alpha||^2`` (5.1.2), both with primal recovery ``w = X^T Y alpha / lam``
  averaged with the AGM weights; or primal smoothing (5.1.1, ``space="primal"``) with the
  smoothed hinge of width ``mu/n`` per example, ``alpha*(w) = P_Q2((1 - y * Xw)/mu)``.
  ``penalty="l1"`` gives the L1-regularised SVM of Example 2 (an LP; primal smoothing only,
  the gap certified through a rescaled dual point).
  scikit-learn mapping: ``SVC(kernel="linear", C=1/(n lam))`` minimises ``J/lam``.
* :class:`ERLPBoost` -- entropy-regularised LPBoost (Example 5),
  ``J(w) = lam KL(w, 1/n) + max_i <u_i, w>`` over the capped simplex ``{0 <= w <= nu, sum w = 1}``,
  solved on its dual over the simplex with the entropic prox (no smoothing, 5.3) or in the primal
  with the softmax smoothing ``mu log sum exp(Uw/mu)`` (5.1.1).
* :class:`ElasticNetBall` -- the constraint ``gamma ||w||_1 + 1/2 ||w||_2^2 <= r`` (Example 6,
  constrained form) with the projection of section 5.5.2 (corrected, note 3.5).
* :class:`F1SVM` -- the F1-score multivariate loss of Example 3 (eq. (43)) by primal smoothing
  (section 5.4): :func:`f1_log_partition` is the forward dynamic programme (Algorithm 5) in log
  space, :func:`f1_loss_smoothed` the smoothed loss whose gradient holds the marginals of
  Algorithm 6 (note 3.3 "[ADDED, verified]"), :func:`f1_loss_max` the exact unsmoothed
  loss-augmented maximum used by the certificate.
* Helpers: :func:`hinge_bias_risk` (exact ``min_b``, note 3.8), :func:`capped_softmax`
  (entropic projection on the capped simplex, note 3.1).
"""
from __future__ import annotations

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from .base import Constraint, as_leaf
from .operators import as_operator
from .projections import box_hyperplane, soft_threshold

__all__ = ["BiasSVM", "ERLPBoost", "ElasticNetBall", "hinge_bias_risk", "capped_softmax",
           "elastic_net_prox", "project_elastic_net_ball", "f1_log_partition", "f1_loss_smoothed",
           "f1_loss_max", "f1_delta", "F1SVM"]


# ------------------------------------------------------------------------------------------
# exact hinge risk with a free bias (note 3.8)
# ------------------------------------------------------------------------------------------
def hinge_bias_risk(s, y, max_iter=100):
    """``(min_b (1/n) sum_i [1 - y_i (s_i + b)]_+, argmin b)`` for margins ``s = X w``.

    The objective is convex piecewise linear in ``b`` with kinks ``t_i = y_i - s_i``; its right
    slope at ``b`` is ``S(b)/n``, ``S(b) = #{neg: t_i <= b} - #{pos: t_i > b}`` (non-decreasing,
    constant between kinks), so the minimiser is the smallest kink with ``S >= 0`` (a weighted
    median). Found without sorting (XLA's CPU sort is ~50x slower than an O(n) pass): bisection
    keeps ``S(lo) < 0 <= S(hi)`` until ``(lo, hi]`` holds a single kink value, which is then the
    minimiser ``min{t_i > lo}`` (about ``log2 n`` passes). If ``max_iter`` is hit first the
    better of ``min{t_i > lo}`` and ``hi`` is returned (a valid upper bound, exact in practice).
    If all labels are negative the minimum 0 is attained at the smallest kink."""
    t = y - s
    npos = jnp.sum(y > 0)
    big = jnp.asarray(jnp.inf, t.dtype)

    def S(b):
        return jnp.sum((y < 0) & (t <= b)) - jnp.sum((y > 0) & (t > b))

    def n_in(lo, hi):
        inb = (t > lo) & (t <= hi)
        return jnp.min(jnp.where(inb, t, big)) < jnp.max(jnp.where(inb, t, -big))

    def cond(c):
        lo, hi, it = c
        return n_in(lo, hi) & (it < max_iter)

    def body(c):
        lo, hi, it = c
        mid = 0.5 * (lo + hi)
        up = S(mid) >= 0
        return jnp.where(up, lo, mid), jnp.where(up, mid, hi), it + 1

    tmin, tmax = jnp.min(t), jnp.max(t)
    lo, hi, _ = lax.while_loop(cond, body, (tmin - 1.0, tmax, jnp.zeros((), jnp.int32)))

    def risk(b):
        return jnp.mean(jnp.maximum(1.0 - y * (s + b), 0.0))

    b1 = jnp.min(jnp.where(t > lo, t, big))
    r1, r2 = risk(b1), risk(hi)
    b = jnp.where(r1 <= r2, b1, hi)
    b = jnp.where(npos == 0, tmin, b)
    return risk(b), b


def _q2_multiplier(v, y, h, lam0, max_iter=50):
    """Root ``lam`` of ``g(lam) = y^T clip(v + lam y, 0, h)`` (``y in {-1, 1}^n``), the
    multiplier of the projection onto ``Q2 = [0, h]^n cap {y^T a = 0}`` (note 3.4: ``g`` is
    non-decreasing and piecewise linear, with slope ``#{i: 0 < v_i + lam y_i < h}``).

    Safeguarded Newton from the warm start ``lam0`` (e.g. the previous iteration's multiplier):
    every evaluated point shrinks the bracket ``[a, b]`` (``g(a) <= 0 <= g(b)``, initially the
    extreme kinks), the Newton step is taken when it falls strictly inside the bracket, the
    midpoint otherwise. Newton is exact once on the root's linear piece, so from a warm start
    it stops after 1-3 passes over ``v`` (the Dai-Fletcher secant from the full kink bracket
    needs ~10)."""
    a0 = jnp.min(jnp.where(y > 0, -v, v - h))
    b0 = jnp.max(jnp.where(y > 0, h - v, v))
    ftol = 64 * jnp.finfo(v.dtype).eps * (1.0 + h * v.shape[0])

    def cond(c):
        return (~c[4]) & (c[3] < max_iter)

    def body(c):
        lam, a, b, it, _ = c
        r = v + lam * y
        g = jnp.dot(y, jnp.clip(r, 0.0, h))
        free = jnp.sum((r > 0) & (r < h))
        a = jnp.where(g < 0, lam, a)
        b = jnp.where(g > 0, lam, b)
        newton = lam - g / jnp.maximum(free, 1)
        inside = (free > 0) & (newton > a) & (newton < b)
        nxt = jnp.where(inside, newton, 0.5 * (a + b))
        done = (jnp.abs(g) <= ftol) | (nxt == lam) | (b - a <= 4 * jnp.finfo(v.dtype).eps * jnp.maximum(jnp.abs(a), jnp.abs(b)))
        return jnp.where(done, lam, nxt), a, b, it + 1, done

    lam0 = jnp.clip(lam0, a0, b0)
    lam, *_ = lax.while_loop(cond, body, (lam0, a0, b0, jnp.zeros((), jnp.int32), jnp.array(False)))
    return lam


def q2_project(v, y, n, lam0=0.0):
    """``(P_Q2(v), lam)``: the projection onto ``Q2 = [0, 1/n]^n cap {y^T a = 0}`` and its
    multiplier, ``P_Q2(v) = clip(v + lam y, 0, 1/n)`` (note 3.4), by :func:`_q2_multiplier` from
    the warm start ``lam0`` and the exact polish on the active set (differentiable in ``v``
    through the active set, as :func:`jaxprox.projections.box_hyperplane`)."""
    h = 1.0 / n
    lam = lax.stop_gradient(_q2_multiplier(*(lax.stop_gradient(t) for t in (v, y, h, lam0))))
    r = lax.stop_gradient(v + lam * y)
    free = (r > 0) & (r < h)
    fixed = jnp.where(r <= 0, 0.0, h)
    num = -jnp.sum(jnp.where(free, y * v, y * fixed))
    den = jnp.sum(free)
    lam = jnp.where(den > 0, num / jnp.maximum(den, 1), lam)
    return jnp.clip(v + lam * y, 0.0, h), lam


def _q2_project(v, y, n, method="newton", lam0=0.0):
    """Projection onto ``Q2 = [0, 1/n]^n cap {y^T a = 0}``: ``"newton"`` (:func:`q2_project`,
    warm-started) or a method of :func:`jaxprox.projections.box_hyperplane` (note 3.4)."""
    if method == "newton":
        return q2_project(v, y, n, lam0)[0]
    return box_hyperplane(v, 0.0, 1.0 / n, y, 0.0, method=method)


# the margin tolerances tried in turn by BiasSVM.refine_primal, one per check (1e-2 every other
# check: on mushrooms it identified the active set from an average 1e-3 off in objective)
POLISH_DELTAS = (1e-2, 10**-2.5, 1e-2, 1e-3, 1e-2, 10**-1.5, 1e-2, 1e-4)
POLISH_MAX_D = 2048  # above this many features the (d + 1)^2 system is not formed


def active_set_polish(A, y, lam, s, b, delta, cap, rho_rel=None, iters=None):
    """The SVM-with-bias primal solved exactly on the active set read off a point ``w``.

    With margins ``m_i = y_i (s_i + b)`` (``s = X w``, ``b`` its optimal bias) the set of margin
    violators ``V = {m_i < 1 - delta}`` and of points on the margin ``F = {|m_i - 1| <= delta}``
    fix the piece of the hinge risk on which the solution lies; on it the problem is the
    equality-constrained quadratic programme

        min_{w, b}  lam/2 ||w||^2 - g^T w - s_V b   s.t.  x_i^T w + b = y_i  (i in F),

    ``g = (1/n) sum_V y_i x_i``, ``s_V = (1/n) sum_V y_i`` (the exact solution when ``V, F`` are
    those of the optimum: KKT with ``alpha_V = 1/n``, ``alpha_F`` free). With ``M = [X_F, 1]``,
    ``H = M^T M``, ``r = M^T y_F`` and ``D = diag(lam I, 0)`` it is solved in the ``(d + 1)``-space
    by the augmented Lagrangian ``(D + rho H) z_j = c - nu_j + rho r``,
    ``nu_{j+1} = nu_j + rho (H z_j - r)`` (one Cholesky factor, ``iters`` solves; ``rho`` is
    ``rho_rel`` times ``lam`` over the mean diagonal of ``H``; default 1e6 and 4 solves in float64,
    1e2 and 10 in float32, where the factor of the stiffer system loses the digits), which also
    handles a rank-deficient
    ``M`` (duplicate rows, one-hot features). The first ``cap`` points of ``F`` are used (static
    shapes). The point is only a candidate: the caller scores it by the exact objective,
    so a wrong active set costs nothing but the solve (O(cap d^2 + d^3) and one product). Returns
    ``(w, b)``."""
    n, d = A.shape
    f64 = s.dtype == jnp.float64
    rho_rel = (1e6 if f64 else 1e2) if rho_rel is None else rho_rel
    iters = (4 if f64 else 10) if iters is None else iters
    marg = y * (s + b)
    viol = (marg < 1.0 - delta).astype(s.dtype)
    on = jnp.abs(marg - 1.0) <= delta
    idx = jnp.nonzero(on, size=cap, fill_value=0)[0]
    keep = (jnp.arange(cap) < jnp.sum(on)).astype(s.dtype)
    M = jnp.concatenate([A.rows(idx).todense(), jnp.ones((cap, 1), s.dtype)], axis=1) * keep[:, None]
    H = M.T @ M
    r = M.T @ (y[idx] * keep)
    c = jnp.concatenate([A.rmv(viol * y), jnp.sum(viol * y)[None]]) / n
    Dg = jnp.concatenate([jnp.full((d,), lam, s.dtype), jnp.zeros((1,), s.dtype)])
    hbar = jnp.trace(H) / (d + 1)
    rho = rho_rel * lam / jnp.where(hbar > 0, hbar, 1.0)
    # a ridge at rounding level keeps the factor defined when F is empty (b is then free)
    ridge = 100 * jnp.finfo(s.dtype).eps * (rho * hbar + lam)
    K = jnp.diag(Dg) + rho * H + ridge * jnp.eye(d + 1, dtype=s.dtype)
    chol = jax.scipy.linalg.cho_factor(K)
    z, nu = jnp.zeros((d + 1,), s.dtype), jnp.zeros((d + 1,), s.dtype)
    for _ in range(iters):
        z = jax.scipy.linalg.cho_solve(chol, c - nu + rho * r)
        nu = nu + rho * (H @ z - r)
    return z[:d], z[d]


class BiasSVM(eqx.Module):
    """Binary SVM with unregularised bias (Example 1; Example 2 with ``penalty="l1"``).

    Args:
        X: ``(n, d)`` data (dense, scipy.sparse or a jaxprox operator); y: labels in {-1, +1}.
        lam: regularisation ``lam`` (array leaf).
        mu: smoothing (array leaf): ``space="dual"``: ``Psi(alpha) = mu/2 ||alpha||^2`` (scheme
            5.1.2; ``mu = 0`` is scheme 5.3, no smoothing); ``space="primal"``: the dual
            regulariser of the smoothed risk (scheme 5.1.1), i.e. a smoothed hinge of width
            ``mu/n`` per example (``mu = n eps`` for an ``eps``-accurate risk, eq. (57)).
        space: ``"dual"`` (AGM runs on ``alpha``; ``Solution.params`` is the recovered ``w``,
            ``Solution.dual`` is ``alpha``) or ``"primal"`` (AGM runs on ``w``).
        penalty: ``"l2"`` (``lam/2 ||w||^2``) or ``"l1"`` (``lam ||w||_1``, primal only).
        method: the box+hyperplane projection method: "newton" (default; :func:`q2_project`,
            safeguarded Newton on the multiplier warm-started from the previous iteration's
            multiplier, 1-3 O(n) passes per projection, then the exact active-set polish),
            "secant" (Dai-Fletcher from the full kink bracket, ~10 passes), "sort" (exact
            O(n log n) kink sort, note 3.4; XLA's CPU sort is slow) or "bisection".
        polish: in a dual run, also try at every check the exact solution on the active set read
            off the averaged primal (:func:`active_set_polish`, margin tolerance cycling through
            ``POLISH_DELTAS``) and report whichever recovered primal has the lower exact objective
            (:meth:`refine_primal`). The averaged primal of a dual method converges slowly when
            the data are nearly separable (the hinge risk is only Lipschitz in ``w``; on mushrooms
            the dual reaches 1e-14 while the average stalls near 1e-3); the polished point is
            exact once the active set is found. Skipped when ``d > POLISH_MAX_D``.

    The certificate is always that of the *unsmoothed* problem: ``J(w) - D(alpha)`` with ``J``
    the exact hinge-with-bias objective (:func:`hinge_bias_risk`) and ``D(alpha) = sum alpha -
    ||X^T Y alpha||^2/(2 lam)`` (l2), ``s sum alpha`` with ``s = min(1, lam/||X^T Y alpha||_inf)``
    (l1, a rescaling that keeps ``alpha`` in ``Q2`` and makes it dual feasible).
    """

    A: eqx.Module
    y: jax.Array
    lam: jax.Array
    mu: jax.Array
    space: str = eqx.field(static=True, default="dual")
    penalty: str = eqx.field(static=True, default="l2")
    method: str = eqx.field(static=True, default="newton")
    polish: bool = eqx.field(static=True, default=True)
    geometries = ("euclidean",)

    def __init__(self, X, y, lam, mu=0.0, space="dual", penalty="l2", method="newton", polish=True):
        if space not in ("dual", "primal"):
            raise ValueError(f"space must be 'dual' or 'primal', got {space!r}")
        if penalty not in ("l2", "l1"):
            raise ValueError(f"penalty must be 'l2' or 'l1', got {penalty!r}")
        if method not in ("newton", "secant", "sort", "bisection"):
            raise ValueError(f"method must be 'newton', 'secant', 'sort' or 'bisection', got {method!r}")
        if penalty == "l1" and space != "primal":
            raise ValueError("the L1-SVM (Example 2) is solved with primal smoothing: space='primal'")
        A = as_operator(X)
        y = jnp.asarray(y, A.dtype) if not isinstance(y, jax.core.Tracer) else y
        if not isinstance(y, jax.core.Tracer):
            ya = np.asarray(y)
            if ya.shape != (A.shape[0],):
                raise ValueError(f"y must have shape ({A.shape[0]},), got {ya.shape}")
            if not np.all(np.isin(ya, (-1.0, 1.0))):
                raise ValueError("labels must be in {-1, +1}")
        self.A, self.y = A, y
        self.lam = as_leaf(lam, "lam")
        self.mu = as_leaf(mu, "mu")
        if space == "primal" and not isinstance(self.mu, jax.core.Tracer) and float(self.mu) <= 0:
            raise ValueError("space='primal' needs a smoothing mu > 0 (scheme 5.1.1)")
        self.space, self.penalty, self.method, self.polish = space, penalty, method, bool(polish)

    @property
    def n(self):
        return self.A.shape[0]

    @property
    def dual_run(self):
        return self.space == "dual"

    def with_lam(self, lam):
        return eqx.tree_at(lambda m: m.lam, self, as_leaf(lam, "lam"))

    # ---------------------------------------------------------------- the original problem
    def objective(self, w):
        """``J(w) = Omega(w) + min_b (1/n) sum hinge`` (exact)."""
        risk, _ = hinge_bias_risk(self.A.mv(w), self.y)
        return risk + self._omega(w)

    def bias(self, w):
        """The optimal bias for ``w`` (a minimiser of the hinge risk over ``b``; not unique in
        general, note 6.3 item 15)."""
        return hinge_bias_risk(self.A.mv(w), self.y)[1]

    def dual_objective(self, alpha):
        v = self.A.rmv(self.y * alpha)
        if self.penalty == "l2":
            return jnp.sum(alpha) - jnp.vdot(v, v) / (2.0 * self.lam)
        return jnp.sum(alpha) * self._l1_scale(v)

    def _l1_scale(self, v):
        m = jnp.max(jnp.abs(v))
        return jnp.where(m > self.lam, self.lam / jnp.where(m > 0, m, 1.0), 1.0)

    def _omega(self, w):
        if self.penalty == "l2":
            return 0.5 * self.lam * jnp.vdot(w, w)
        return self.lam * jnp.sum(jnp.abs(w))

    # ---------------------------------------------------------------- AGM model interface
    def strong_convexity(self, geom):
        z = jnp.zeros((), self.A.dtype)
        if self.space == "dual":
            return z, self.mu + z
        return z, (self.lam + z if self.penalty == "l2" else z)

    def lipschitz(self, geom):
        s2 = self.A.spectral_norm_sq()
        return s2 / self.lam if self.space == "dual" else s2 / self.mu

    def lipschitz_estimate(self, geom):
        """The scale of :meth:`lipschitz` from 10 power iterations instead of 100 (it starts the
        adaptive rule at ``1e-3`` times this; the 100 products of the full estimate cost about a
        tenth of a solve to 1e-4 on a9a)."""
        s2 = self.A.spectral_norm_sq(iters=10)
        return s2 / self.lam if self.space == "dual" else s2 / self.mu

    def x0(self, geom, init):
        if self.space == "dual":
            x = jnp.zeros((self.n,), self.A.dtype) if init is None else jnp.asarray(init, self.A.dtype)
            return _q2_project(x, self.y, self.n, self.method) if init is not None else x
        return jnp.zeros((self.A.shape[1],), self.A.dtype) if init is None else jnp.asarray(init, self.A.dtype)

    def lin(self, x):
        # dual: v = X^T Y alpha (d,); primal: margins s = X w (n,)
        return self.A.rmv(self.y * x) if self.space == "dual" else self.A.mv(x)

    def _smoothed_alpha(self, s):
        return _q2_project((1.0 - self.y * s) / self.mu, self.y, self.n, self.method)

    def f_value(self, x, ax):
        if self.space == "dual":
            return -jnp.sum(x) + jnp.vdot(ax, ax) / (2.0 * self.lam)
        a = self._smoothed_alpha(ax)
        return jnp.vdot(a, 1.0 - self.y * ax) - 0.5 * self.mu * jnp.vdot(a, a)

    def f_grad(self, x, ax):
        if self.space == "dual":
            # f(alpha) = -sum alpha + ||v||^2/(2 lam); grad = -1 + Y X v / lam; w(alpha) = v/lam
            f = -jnp.sum(x) + jnp.vdot(ax, ax) / (2.0 * self.lam)
            g = -1.0 + self.y * self.A.mv(ax) / self.lam
            return f, g, ax / self.lam
        a = self._smoothed_alpha(ax)
        f = jnp.vdot(a, 1.0 - self.y * ax) - 0.5 * self.mu * jnp.vdot(a, a)
        return f, -self.A.rmv(self.y * a), a

    def psi(self, x):
        if self.space == "dual":
            return 0.5 * self.mu * jnp.vdot(x, x)
        return self._omega(x)

    def breg_prox(self, geom, kappa, theta, beta):
        return self.breg_prox_warm(geom, kappa, theta, beta, jnp.zeros((), theta.dtype))[0]

    def prox_hint(self):
        """Initial warm start of :meth:`breg_prox_warm` (the Q2 multiplier)."""
        return jnp.zeros((), self.A.dtype)

    def breg_prox_warm(self, geom, kappa, theta, beta, hint):
        """:meth:`breg_prox` and the multiplier of its Q2 projection (dual run), warm-started
        from ``hint``, the multiplier of the previous call (the AGM state carries it)."""
        if self.space == "dual":
            v = theta / (kappa + beta * self.mu)
            if self.method == "newton":
                return q2_project(v, self.y, self.n, hint)
            return _q2_project(v, self.y, self.n, self.method), hint
        if self.penalty == "l2":
            return theta / (kappa + beta * self.lam), hint
        return soft_threshold(theta / kappa, beta * self.lam / kappa), hint

    def scaled_dual(self, alpha, v=None):
        """``max_{0 <= t <= 1} D(t alpha)`` (l2): ``t alpha`` stays in ``Q2`` (the box scaled
        towards 0, the hyperplane kept) and ``D(t alpha) = t sum alpha - t^2 ||v||^2/(2 lam)``
        with ``v = X^T Y alpha`` is maximised at ``t = clip(lam sum alpha/||v||^2, 0, 1)``."""
        v = self.A.rmv(self.y * alpha) if v is None else v
        s1, v2 = jnp.sum(alpha), jnp.vdot(v, v)
        t = jnp.clip(self.lam * s1 / jnp.where(v2 > 0, v2, 1.0), 0.0, 1.0)
        t = jnp.where(v2 > 0, t, 1.0)
        return t * s1 - t * t * v2 / (2.0 * self.lam)

    def pg_dual(self, alpha, v, L, steps=(4.0, 1.0)):
        """Dual lower bounds after one projected-gradient ascent step from ``alpha in Q2``
        (``v = X^T Y alpha``): for each ``c`` in ``steps``, ``alpha_c = P_Q2(alpha + (c/L)
        grad D(alpha))`` with ``grad D = 1 - Y X v/lam``, then the exact maximum of the concave
        quadratic ``D`` on the segment ``[alpha, alpha_c]`` (inside ``Q2``, so a valid lower
        bound on ``J*``). Cost: one ``X v`` and, per ``c``, one projection and one ``X^T Y a``.
        The AGM iterate ``x_k`` is an average; the projection snaps it onto the active face, and
        this single step lowers the dual lag by 2-10x on a9a/w8a (benchmarks/results/
        agm_svm_bias.md), which is what certifies the averaged primal."""
        g = 1.0 - self.y * self.A.mv(v) / self.lam
        D0 = jnp.sum(alpha) - jnp.vdot(v, v) / (2.0 * self.lam)

        def seg(c):
            a1, _ = q2_project(alpha + (c / L) * g, self.y, self.n)
            d, vd = a1 - alpha, self.A.rmv(self.y * a1) - v
            slope = jnp.sum(d) - jnp.vdot(v, vd) / self.lam
            curv = jnp.vdot(vd, vd) / self.lam
            t = jnp.clip(slope / jnp.where(curv > 0, curv, 1.0), 0.0, 1.0)
            t = jnp.where(curv > 0, t, jnp.where(slope > 0, 1.0, 0.0))
            return D0 + t * slope - 0.5 * t * t * curv

        return jnp.stack([seg(c) for c in steps])

    def refine_primal(self, w, best, jbest, t):
        """The recovered primal to report after the ``t``-th check (:meth:`AGM.refine
        <jaxprox.solvers.agm.AGM.refine>`): the best, in the exact objective ``J``, of the previous
        ``best`` (value ``jbest``), the current average ``w`` and, with ``polish``, the
        active-set polish of ``w`` with margin tolerance ``POLISH_DELTAS[t % 8]``. Returns
        ``(best, J(best))``. Cost: one ``X w`` and the exact ``min_b``; with the polish one more
        ``X w``, one ``X^T u`` and the ``(d + 1)``-dimensional solve (the polished point is scored
        at its own bias, an upper bound on its ``J`` that is exact when the polish is)."""
        s = self.A.mv(w)
        risk, b = hinge_bias_risk(s, self.y)
        cands = [(w, risk + self._omega(w))]
        n, d = self.A.shape
        if self.polish and d <= POLISH_MAX_D:
            delta = jnp.asarray(POLISH_DELTAS, s.dtype)[t % len(POLISH_DELTAS)]
            wp, bp = active_set_polish(self.A, self.y, self.lam, s, b, delta, cap=min(n, max(2048, 4 * (d + 1))))
            hinge = jnp.mean(jnp.maximum(1.0 - self.y * (self.A.mv(wp) + bp), 0.0))
            cands.append((wp, hinge + self._omega(wp)))
        for wc, jc in cands:
            better = jc < jbest  # a NaN candidate is never taken
            best = jnp.where(better, wc, best)
            jbest = jnp.where(better, jc, jbest)
        return best, jbest

    def certificate_L(self, x, ax, abar, L, prim=None):
        """:meth:`certificate` with, in a dual run (l2), the dual points :meth:`pg_dual` of one
        projected-gradient step from ``x_k`` with the current Lipschitz estimate ``L_k``."""
        if self.space == "dual" and self.penalty == "l2":
            v = self.A.rmv(self.y * x)  # exact X^T Y x (ax is carried incrementally)
            return self.certificate(x, v, abar, extra=jnp.max(self.pg_dual(x, v, L)), prim=prim)
        return self.certificate(x, ax, abar, prim=prim)

    def certificate(self, x, ax, abar, extra=None, prim=None):
        """``J(w) - D(alpha)`` of the unsmoothed problem. Dual run: ``w = abar`` is the recovered
        primal (the AGM passes the point :meth:`refine_primal` chose and its exact value ``prim``)
        and ``alpha = x_k`` (Theorems 10/18, scaled by :meth:`scaled_dual`); primal run: ``w = x_k``
        and the averaged ``alpha`` (l2) or its rescaling (l1). ``extra``: a further valid lower bound
        (a dual value of a point of ``Q2``). Cost: one ``Xw`` and the exact ``min_b`` (O(n) passes,
        no sort) unless ``prim`` is given."""
        w = abar if self.space == "dual" else x
        if prim is None:
            risk, _ = hinge_bias_risk(self.A.mv(w), self.y)
            prim = risk + self._omega(w)
        dual = self.scaled_dual(x, ax) if self.space == "dual" else self.dual_objective(abar)
        if extra is not None:
            dual = jnp.maximum(dual, extra)
        return prim, dual, prim - dual

    def residual(self, z):
        """Dual run: ``(alpha - P_Q2((alpha - eta grad f)/(1 + eta mu)), w - X^T Y alpha/lam)``
        (the projected-gradient fixed point and the primal recovery); primal run: the
        prox-gradient fixed point of the smoothed problem."""
        eta = lax.stop_gradient(1.0 / self.lipschitz("euclidean"))
        if self.space == "dual":
            a = z.x
            v = self.lin(a)
            g = -1.0 + self.y * self.A.mv(v) / self.lam
            ra = a - _q2_project((a - eta * g) / (1.0 + eta * self.mu), self.y, self.n, self.method)
            return (ra, z.abar - v / self.lam)
        w = z
        _, g, _ = self.f_grad(w, self.A.mv(w))
        return w - self.breg_prox("euclidean", 1.0 / eta, w / eta - g, jnp.ones((), w.dtype))


# ------------------------------------------------------------------------------------------
# entropic projections and ERLPBoost (Example 5)
# ------------------------------------------------------------------------------------------
def capped_softmax(t, nu=None):
    """``argmin_{x in S, x <= nu} sum_i x_i log x_i - <t, x>`` on the (capped) probability simplex
    and its log: ``x_i = min(nu, exp(t_i - tau))`` with ``sum x = 1`` (note 3.1, [ADDED]).

    Sorting ``t`` descending, with the top ``j`` entries capped,
    ``tau_j = logsumexp(t_(j+1..n)) - log(1 - j nu)``; the answer is the first ``j`` whose entry
    ``j+1`` is uncapped. ``nu=None`` (no cap) is the softmax. Needs ``n nu >= 1``."""
    if nu is None:
        lx = t - jax.scipy.special.logsumexp(t)
        return jnp.exp(lx), lx
    n = t.shape[0]
    ts = -jnp.sort(-t)
    suffix = lax.cumlogsumexp(ts, reverse=True)
    j = jnp.arange(n, dtype=t.dtype)
    rem = 1.0 - j * nu
    ok = rem > 0
    tau = jnp.where(ok, suffix - jnp.log(jnp.where(ok, rem, 1.0)), jnp.inf)
    lnu = jnp.log(nu)
    consistent = ok & (ts - tau <= lnu)
    jstar = jnp.argmax(consistent)
    tau_s = tau[jstar]
    lx = jnp.minimum(lnu, t - tau_s)
    return jnp.exp(lx), lx


def _kl_uniform(w):
    n = w.shape[0]
    pos = w > 0
    return jnp.sum(jnp.where(pos, w * (jnp.log(jnp.where(pos, w, 1.0)) + jnp.log(n)), 0.0))


class ERLPBoost(eqx.Module):
    """Entropy-regularised LPBoost (Example 5, eq. (51)):

        J(w) = lam KL(w, 1/n) + max_{i <= t} <u_i, w>,   w in {0 <= w <= nu, sum w = 1}.

    ``U`` is the ``(t, n)`` matrix of edge vectors ``u_i`` (``U[i, j] = y_j h_i(x_j)``).

    * ``space="dual"`` (scheme 5.3, no smoothing): AGM minimises ``-D(alpha) =
      Omega*(-U^T alpha)`` over the simplex of ``alpha`` (entropic prox = softmax, or the
      Euclidean simplex projection), ``Omega*(s) = max_{w in Q1} <s, w> - lam KL(w, 1/n)`` with
      maximiser ``w(alpha) = capped_softmax(-U^T alpha/lam)`` (the corrected sign of the note,
      section 8); ``L = max|U_ij|^2 / lam`` w.r.t. the l1 norm. ``mu > 0`` adds the dual
      smoothing ``mu (sum alpha log alpha + log t)`` (scheme 5.1.2).
    * ``space="primal"`` (scheme 5.1.1, ``mu > 0``): ``f(w) = mu logsumexp(Uw/mu)``,
      ``Psi = lam KL(w, 1/n) + I_Q1`` (``lam``-strongly convex w.r.t. the entropy, so the rate is
      linear), entropic prox on the capped simplex; ``alpha(w) = softmax(Uw/mu)``.

    Certificate: ``J(w) - D(alpha)`` of the unsmoothed problem (w averaged for dual runs).
    """

    U: jax.Array
    lam: jax.Array
    mu: jax.Array
    nu: float | None = eqx.field(static=True, default=None)
    space: str = eqx.field(static=True, default="dual")

    def __init__(self, U, lam, mu=0.0, nu=None, space="dual"):
        U = jnp.asarray(U)
        if U.ndim != 2:
            raise ValueError("U must be a (t, n) matrix of edge vectors")
        if nu is not None and nu * U.shape[1] < 1:
            raise ValueError(f"the capped simplex is empty: need n * nu >= 1, got {nu * U.shape[1]}")
        if space not in ("dual", "primal"):
            raise ValueError(f"space must be 'dual' or 'primal', got {space!r}")
        self.U = U.astype(jnp.result_type(float))
        self.lam = as_leaf(lam, "lam")
        self.mu = as_leaf(mu, "mu")
        if space == "primal" and not isinstance(self.mu, jax.core.Tracer) and float(self.mu) <= 0:
            raise ValueError("space='primal' needs a smoothing mu > 0")
        self.nu, self.space = (None if nu is None else float(nu)), space

    @property
    def geometries(self):
        return ("entropic", "euclidean") if self.space == "dual" else ("entropic",)

    @property
    def dual_run(self):
        return self.space == "dual"

    def with_lam(self, lam):
        return eqx.tree_at(lambda m: m.lam, self, as_leaf(lam, "lam"))

    # ---------------------------------------------------------------- the original problem
    def objective(self, w):
        return self.lam * _kl_uniform(w) + jnp.max(self.U @ w)

    def omega_star(self, s):
        """``(Omega*(s), argmax w)`` with ``Omega(w) = lam KL(w, 1/n) + I_Q1``."""
        n = s.shape[0]
        w, lw = capped_softmax(s / self.lam, self.nu)
        val = jnp.vdot(s, w) - self.lam * jnp.sum(w * (lw + jnp.log(n)))
        return val, w

    def dual_objective(self, alpha):
        return -self.omega_star(-self.U.T @ alpha)[0]

    # ---------------------------------------------------------------- AGM model interface
    def strong_convexity(self, geom):
        z = jnp.zeros((), self.U.dtype)
        if self.space == "dual":
            return z, self.mu + z
        return z, self.lam + z

    def lipschitz(self, geom):
        m2 = jnp.max(jnp.abs(self.U)) ** 2
        if geom == "euclidean":  # l2: ||U (w - w')||_2 <= ||U||_2 ||w-w'||_2 <= ||U||_2 ||w-w'||_1
            m2 = jnp.linalg.norm(self.U, 2) ** 2
        return m2 / (self.lam if self.space == "dual" else self.mu)

    def x0(self, geom, init):
        k = self.U.shape[0] if self.space == "dual" else self.U.shape[1]
        if init is not None:
            return jnp.asarray(init, self.U.dtype)
        x = jnp.full((k,), 1.0 / k, self.U.dtype)
        if self.space == "primal" and self.nu is not None:
            x = capped_softmax(jnp.zeros((k,), self.U.dtype), self.nu)[0]
        return x

    def lin(self, x):
        return self.U.T @ x if self.space == "dual" else self.U @ x

    def f_value(self, x, ax):
        if self.space == "dual":
            return self.omega_star(-ax)[0]
        return self.mu * jax.scipy.special.logsumexp(ax / self.mu)

    def f_grad(self, x, ax):
        if self.space == "dual":
            val, w = self.omega_star(-ax)
            return val, -self.U @ w, w
        a = jax.nn.softmax(ax / self.mu)
        return self.mu * jax.scipy.special.logsumexp(ax / self.mu), self.U.T @ a, a

    def psi(self, x):
        if self.space == "dual":
            k = x.shape[0]
            return self.mu * (jnp.sum(jnp.where(x > 0, x * jnp.log(jnp.where(x > 0, x, 1.0)), 0.0)) + jnp.log(k))
        return self.lam * _kl_uniform(x)

    def breg_prox(self, geom, kappa, theta, beta):
        if self.space == "dual":
            if geom == "entropic":
                return jax.nn.softmax(theta / (kappa + beta * self.mu))
            from .projections import simplex
            return simplex(theta / kappa, 1.0, method="sort")  # Euclidean, mu = 0 only
        n = theta.shape[0]
        t = (theta - beta * self.lam * jnp.log(n)) / (kappa + beta * self.lam)
        return capped_softmax(t, self.nu)[0]

    def certificate(self, x, ax, abar):
        if self.space == "dual":
            w = abar
            dual = -self.omega_star(-ax)[0]
        else:
            w = x
            dual = self.dual_objective(abar)
        prim = self.objective(w)
        return prim, dual, prim - dual

    def residual(self, z):
        """Dual run: the entropic (mirror) prox-gradient fixed point on the simplex,
        ``log alpha - log softmax(log alpha - eta grad)`` restricted to the support, and the
        primal recovery ``w - w(alpha)``."""
        eta = lax.stop_gradient(1.0 / self.lipschitz("entropic"))
        if self.space == "dual":
            a = z.x
            _, g, w = self.f_grad(a, self.lin(a))
            ra = a - jax.nn.softmax(jnp.log(jnp.maximum(a, 1e-300)) - eta * g)
            return (ra, z.abar - w)
        w = z
        _, g, _ = self.f_grad(w, self.lin(w))
        n = w.shape[0]
        t = (jnp.log(jnp.maximum(w, 1e-300)) - eta * g - eta * self.lam * jnp.log(n)) / (1.0 + eta * self.lam)
        return w - capped_softmax(t, self.nu)[0]


# ------------------------------------------------------------------------------------------
# elastic net (Example 6, section 5.5.2)
# ------------------------------------------------------------------------------------------
def elastic_net_prox(g, lam, gamma, L=1.0):
    """``argmin_w lam (gamma ||w||_1 + 1/2 ||w||^2) + L/2 ||w - g||^2 =
    sign(g) max(L|g| - lam gamma, 0)/(L + lam)`` (the corrected formula, note 3.5)."""
    return soft_threshold(L * g, lam * gamma) / (L + lam)


def _enet_dual_slope(lmb, a, gamma, r):
    # h(lam) = -2 r (1+lam)^2 + sum_{a_i > lam gamma} [(gamma + a_i)^2 - gamma^2 (1+lam)^2]
    # (sign of H'(lam), note 3.5); strictly decreasing on [0, inf)
    act = a > lmb * gamma
    return -2.0 * r * (1.0 + lmb) ** 2 + jnp.sum(jnp.where(act, (gamma + a) ** 2 - gamma**2 * (1.0 + lmb) ** 2, 0.0))


def project_elastic_net_ball(g, gamma, r):
    """``argmin { 1/2 ||w - g||^2 : gamma ||w||_1 + 1/2 ||w||^2 <= r }`` (section 5.5.2 with the
    note's corrections): ``w = g`` if feasible, else ``w_i = soft(g_i, lmb gamma)/(1 + lmb)`` with
    ``lmb > 0`` the root of the strictly decreasing ``h``; bisection over ``[0, max|g|/gamma]``
    then the exact polish on the active set, ``1 + lmb = sqrt(S/(2r + m gamma^2))``."""
    from . import roots

    a = jnp.abs(g)
    hi = jnp.max(a) / gamma
    lmb0 = roots.bisection(_enet_dual_slope, jnp.zeros((), g.dtype), hi,
                           tuple(lax.stop_gradient(t) for t in (a, gamma, r)))
    lmb0 = lax.stop_gradient(lmb0)
    act = a > lmb0 * gamma
    S = jnp.sum(jnp.where(act, (gamma + a) ** 2, 0.0))
    m = jnp.sum(act)
    den = 2.0 * r + m * gamma**2
    lmb = jnp.sqrt(jnp.where(S > 0, S, 1.0) / den) - 1.0
    lmb = jnp.where(S > 0, jnp.maximum(lmb, 0.0), lmb0)
    inside = gamma * jnp.sum(a) + 0.5 * jnp.vdot(g, g) <= r
    return jnp.where(inside, g, soft_threshold(g, lmb * gamma) / (1.0 + lmb))


class ElasticNetBall(Constraint):
    """``C = {w : gamma ||w||_1 + 1/2 ||w||_2^2 <= r}`` (Example 6, constrained elastic net)."""

    gamma: jax.Array
    r: jax.Array

    def __init__(self, gamma, r):
        self.gamma = as_leaf(gamma, "gamma")
        self.r = as_leaf(r, "r")

    def project(self, x):
        return project_elastic_net_ball(x, self.gamma, self.r)

    def _eta(self, v):
        # support sigma_C(v) = min_{eta > 0} eta r + ||soft(v, eta gamma)||^2/(2 eta); its
        # derivative r - sum_{|v_i| > eta gamma} (v_i^2 - eta^2 gamma^2)/(2 eta^2) increases in eta
        from . import roots

        a = jnp.abs(v)

        def dphi(eta, a, gamma, r):
            act = a > eta * gamma
            return r - jnp.sum(jnp.where(act, a * a - (eta * gamma) ** 2, 0.0)) / (2.0 * eta**2)

        hi = jnp.max(a) / self.gamma
        lo = hi * 1e-12 + jnp.finfo(v.dtype).tiny
        return roots.bisection(dphi, lo, hi, (a, self.gamma, self.r))

    def lmo(self, g):
        """``argmin_{w in C} <g, w> = soft(-g, eta gamma)/eta``."""
        eta = self._eta(g)
        return soft_threshold(-g, eta * self.gamma) / eta

    def support(self, v):
        eta = lax.stop_gradient(self._eta(v))
        s = soft_threshold(v, eta * self.gamma)
        return jnp.where(jnp.any(v != 0), eta * self.r + jnp.vdot(s, s) / (2.0 * eta), 0.0)


# ------------------------------------------------------------------------------------------
# F1-score multivariate loss (Example 3, section 5.4, Algorithms 5-6 in log space)
# ------------------------------------------------------------------------------------------
_NEG = -1e30


def f1_delta(b, c, n_pos):
    """``1 - F1 = (b + c)/(2 n_+ - b + c)`` for ``b`` false negatives and ``c`` false positives
    (the paper's Delta is F1 itself; as a loss it must be 1 - F1, note section 8)."""
    return (b + c) / (2.0 * n_pos - b + c)


def _forward_log(lc, swap):
    """Algorithm 5 in log space over one class: ``log V(v)`` for ``v = 0..m`` counted events
    (``lc_k = log c_k = x_k^T w / mu``). Positives: counted (false negative, y' = -1) weight
    ``1/c_k``, uncounted ``c_k``; negatives (``swap``): counted (false positive) ``c_k``,
    uncounted ``1/c_k`` (note 3.3)."""
    m = lc.shape[0]
    la0 = jnp.full((m + 1,), _NEG, lc.dtype).at[0].set(0.0)

    def body(la, l):
        cnt, stay = (l, -l) if swap else (-l, l)
        shifted = jnp.concatenate([jnp.full((1,), _NEG, lc.dtype), la[:-1]])
        return jnp.logaddexp(stay + la, cnt + shifted), None

    la, _ = lax.scan(body, la0, lc)
    return la


def _f1_logz(scores, pos, neg, n_pos, mu, delta):
    n = pos.shape[0] + neg.shape[0]
    lv_p = _forward_log(scores[pos] / mu, False)
    lv_n = _forward_log(scores[neg] / mu, True)
    b = jnp.arange(pos.shape[0] + 1, dtype=scores.dtype)[:, None]
    c = jnp.arange(neg.shape[0] + 1, dtype=scores.dtype)[None, :]
    grid = (n / mu) * delta(b, c, n_pos) + lv_p[:, None] + lv_n[None, :]
    return jax.scipy.special.logsumexp(grid)


def _split(y):
    y = np.asarray(y)
    if not np.all(np.isin(y, (-1.0, 1.0))):
        raise ValueError("labels must be in {-1, +1}")
    return np.flatnonzero(y > 0), np.flatnonzero(y < 0)


def f1_log_partition(scores, y, mu, delta=f1_delta):
    """``log Z`` with ``Z = sum_{y'} exp((1/mu) sum_i y'_i s_i + (n/mu) Delta(y', y))``, by the
    forward dynamic programme (Algorithm 5, positives and negatives) and a logsumexp over the
    ``(b, c)`` grid: O(n^2). ``scores = X w``; ``y`` must be a concrete label vector."""
    pos, neg = _split(y)
    return _f1_logz(scores, jnp.asarray(pos), jnp.asarray(neg), pos.shape[0], mu, delta)


def f1_loss_max(scores, y, delta=f1_delta):
    """The unsmoothed loss-augmented maximum of (43), ``max_{y'} Delta(y', y) + (1/n) sum_i
    s_i (y'_i - y_i)``, exactly: for ``b`` false negatives and ``c`` false positives the best
    labelling flips the ``b`` lowest-scored positives (``-2 s_i`` each) and the ``c``
    highest-scored negatives (``+2 s_i`` each), so the maximum runs over the ``(b, c)`` grid of
    sorted prefix sums, O(n^2) (the ``mu -> 0`` limit of the DP)."""
    pos, neg = _split(y)
    return _f1_max(scores, jnp.asarray(pos), jnp.asarray(neg), pos.shape[0], delta)


def _f1_max(scores, pos, neg, n_pos, delta):
    n = pos.shape[0] + neg.shape[0]
    zero = jnp.zeros((1,), scores.dtype)
    P = -2.0 * jnp.concatenate([zero, jnp.cumsum(jnp.sort(scores[pos]))])
    N = 2.0 * jnp.concatenate([zero, jnp.cumsum(-jnp.sort(-scores[neg]))])
    b = jnp.arange(pos.shape[0] + 1, dtype=scores.dtype)[:, None]
    c = jnp.arange(neg.shape[0] + 1, dtype=scores.dtype)[None, :]
    return jnp.max(delta(b, c, n_pos) + (P[:, None] + N[None, :]) / n)


def f1_loss_smoothed(scores, y, mu, delta=f1_delta):
    """The smoothed F1 risk ``g*_mu(Aw) = (mu/n) [log Z - (1/mu) sum_i y_i s_i + log n]`` (note
    3.3, uncentred entropy); its gradient in ``scores`` is ``-2 p(y'_i = -y_i) y_i`` with the
    marginals of Algorithm 6 (mass ``1/n`` per example), obtained here by reverse-mode autodiff
    of the forward programme."""
    n = y.shape[0]
    yj = jnp.asarray(y, scores.dtype)
    return (mu / n) * (f1_log_partition(scores, y, mu, delta) - jnp.vdot(yj, scores) / mu + jnp.log(n))


class F1SVM(eqx.Module):
    """Linear classifier trained on the F1-score multivariate loss (Example 3, eq. (43)):

        J(w) = lam/2 ||w||^2 + max_{y' in {-1,1}^n} [Delta(y', y) + (1/n) sum_i x_i^T w (y'_i - y_i)],

    ``Delta = 1 - F1`` (note section 8), solved by primal smoothing (scheme 5.1.1, section 5.4):
    the risk is replaced by its entropy-smoothed version
    ``g*_mu(Xw) = (mu/n) [log Z - y^T Xw/mu + log n]`` (:func:`f1_loss_smoothed`), whose log
    partition ``Z`` over the ``2^n`` labellings is the forward programme (Algorithm 5) and whose
    gradient ``X^T (m - y)/n``, ``m_i = E[y'_i]``, comes from the marginals (Algorithm 6, as the
    reverse pass of Algorithm 5). ``f`` is ``||X||^2/mu``-smooth (the Hessian in the scores is
    ``Cov(y')/(n mu) <= I/mu``) and ``Psi = lam/2 ||w||^2`` is ``lam``-strongly convex, so AGM
    converges linearly on the smoothed problem.

    ``alpha(w)`` is the smoothed maximiser, a distribution over labellings; the certificate needs
    it only through ``(m, E[Delta])`` (an ``(n+1)``-vector, linear in the distribution, so the
    AGM average is exact). The gap reported is that of the *unsmoothed* problem:
    ``J(w) - D(p)`` with ``J`` from :func:`f1_loss_max` and
    ``D(p) = E_p[Delta] - ||X^T (m - y)||^2/(2 lam n^2)`` (the adjoint (39) of (43)).
    Memory is O(n_+ n_-) (the ``(b, c)`` grid): meant for small and medium ``n``.
    """

    A: eqx.Module
    y: jax.Array
    pos: jax.Array
    neg: jax.Array
    lam: jax.Array
    mu: jax.Array
    n_pos: int = eqx.field(static=True)
    geometries = ("euclidean",)

    def __init__(self, X, y, lam, mu):
        A = as_operator(X)
        ya = np.asarray(y, dtype=float)
        if ya.shape != (A.shape[0],):
            raise ValueError(f"y must have shape ({A.shape[0]},), got {ya.shape}")
        pos, neg = _split(ya)
        if pos.shape[0] == 0:
            raise ValueError("the F1 loss needs at least one positive example")
        self.A, self.y = A, jnp.asarray(ya, A.dtype)
        self.pos, self.neg, self.n_pos = jnp.asarray(pos), jnp.asarray(neg), int(pos.shape[0])
        self.lam = as_leaf(lam, "lam")
        self.mu = as_leaf(mu, "mu")
        if not isinstance(self.mu, jax.core.Tracer) and float(self.mu) <= 0:
            raise ValueError("F1SVM needs a smoothing mu > 0 (scheme 5.1.1)")

    @property
    def n(self):
        return self.A.shape[0]

    def with_lam(self, lam):
        return eqx.tree_at(lambda m: m.lam, self, as_leaf(lam, "lam"))

    def _logz(self, s, t=1.0):
        return _f1_logz(s, self.pos, self.neg, self.n_pos, self.mu, lambda b, c, p: t * f1_delta(b, c, p))

    def objective(self, w):
        """The unsmoothed ``J(w)``."""
        return 0.5 * self.lam * jnp.vdot(w, w) + _f1_max(self.A.mv(w), self.pos, self.neg, self.n_pos, f1_delta)

    def dual_objective(self, alpha):
        """``D(p) = E_p[Delta] - ||X^T (m - y)||^2/(2 lam n^2)`` with ``alpha = (m, E_p Delta)``."""
        v = self.A.rmv(alpha[:-1] - self.y) / self.n
        return alpha[-1] - jnp.vdot(v, v) / (2.0 * self.lam)

    # ---------------------------------------------------------------- AGM model interface
    def strong_convexity(self, geom):
        z = jnp.zeros((), self.A.dtype)
        return z, self.lam + z

    def lipschitz(self, geom):
        return self.A.spectral_norm_sq() / self.mu

    def x0(self, geom, init):
        return jnp.zeros((self.A.shape[1],), self.A.dtype) if init is None else jnp.asarray(init, self.A.dtype)

    def lin(self, x):
        return self.A.mv(x)

    def f_value(self, x, ax):
        return (self.mu / self.n) * (self._logz(ax) - jnp.vdot(self.y, ax) / self.mu + jnp.log(self.n))

    def f_grad(self, x, ax):
        """Value, gradient ``X^T (m - y)/n`` and ``alpha = (m, E[Delta])``: ``m = mu grad_s log Z``,
        ``E[Delta] = (mu/n) d log Z/dt`` for the loss scaled by ``t`` at ``t = 1``."""
        logz, (gs, gt) = jax.value_and_grad(self._logz, argnums=(0, 1))(ax, jnp.ones((), ax.dtype))
        m = self.mu * gs
        f = (self.mu / self.n) * (logz - jnp.vdot(self.y, ax) / self.mu + jnp.log(self.n))
        g = self.A.rmv(m - self.y) / self.n
        return f, g, jnp.concatenate([m, (self.mu / self.n) * gt[None]])

    def psi(self, x):
        return 0.5 * self.lam * jnp.vdot(x, x)

    def breg_prox(self, geom, kappa, theta, beta):
        return theta / (kappa + beta * self.lam)

    def certificate(self, x, ax, abar):
        prim = self.objective(x)
        dual = self.dual_objective(abar)
        return prim, dual, prim - dual

    def residual(self, w):
        """Prox-gradient fixed point of the smoothed problem, ``lam w + grad f(w)``."""
        return self.lam * w + self.f_grad(w, self.A.mv(w))[1]
