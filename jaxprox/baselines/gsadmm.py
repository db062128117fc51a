"""GS-ADMM: the baseline of the DRSVM paper's Table 4 (Appendix C of "Fast epigraphical
projection-based incremental algorithms for Wasserstein distributionally robust support vector
machine"), adapted from Li, Huang & So (NeurIPS 2019).

For the linf-DRSVM (constraint norm q = inf, a box ``|w_j| <= lam``) the problem is split as

    min_{lam in [0, 1/eps]} H(lam),   H(lam) = lam*eps + v(lam),
    v(lam) = min_{||w||_inf <= lam} (1/n) sum_i max{1 - z_i^T w, 1 + z_i^T w - lam*kappa, 0}
             + (c/2)||w||^2,

``H`` convex in ``lam`` (partial minimisation of a jointly convex function), ``lam* <= 1/eps``
(Prop. 6.10; (0, 0) is feasible with value 1). Outer loop: golden-section search on
``[0, 1/eps]`` (the authors' DRLR ``Golden_search.m``). Inner loop: Algorithm 3, ADMM on
the split ``y = Z w``:

    w+ = argmin_{|w| <= lam} (rho/2)||Z w - y + g/rho||^2 + (c/2)||w||^2   (accelerated projected
                                                                          gradient, warm started)
    y+ = closed form: with v = Z w+ + g/rho, t = 1/(n rho), b1 = min(1, lam kappa/2),
         b2 = max(lam kappa - 1, lam kappa/2):  v + t if v + t <= b1;  v - t if v - t >= b2;
         clip(v, b1, b2) otherwise
    g+ = g + rho (Z w+ - y+),     rho+ = gamma rho.

``H(lam)`` is evaluated at the ADMM's (feasible) ``w``, so every value is an upper bound.
One driver step = one golden-section iteration = one inner ADMM solve (``admm_iters`` ADMM
iterations with ``apg_iters`` APG steps each). The certificate is the honest DRSVM duality gap of
:meth:`jaxprox.problems.drsvm.DRSVM.certificate` at the best point found (active-piece dual weights; it is
loose on this degenerate LP, so run with ``tol=0`` and a step budget: ~34 golden iterations shrink
``[0, 10]`` to 1e-6).
"""
from __future__ import annotations

import math

import equinox as eqx
import jax
import jax.numpy as jnp
from jax import lax

from .. import capabilities as cap
from ..solver import Solver
from ..solvers.drsvm_pd import saddle_norm

__all__ = ["GSADMM"]

_TAU = (math.sqrt(5.0) - 1.0) / 2.0


class GSState(eqx.Module):
    lo: jax.Array
    hi: jax.Array
    x1: jax.Array
    x2: jax.Array
    h1: jax.Array
    h2: jax.Array
    w: jax.Array          # ADMM warm start (w, y, g)
    y: jax.Array
    g: jax.Array
    w_best: jax.Array
    lam_best: jax.Array
    f_best: jax.Array


def _y_step(v, t, lam, kappa):
    """Closed-form ``argmin_y (1/n) sum max{1 - y, 1 + y - lam kappa, 0} + (rho/2)||y - v||^2``."""
    b1 = jnp.minimum(1.0, 0.5 * lam * kappa)
    b2 = jnp.maximum(lam * kappa - 1.0, 0.5 * lam * kappa)
    return jnp.where(v + t <= b1, v + t, jnp.where(v - t >= b2, v - t, jnp.clip(v, b1, b2)))


class GSADMM(Solver):
    """Golden-section search over ``lam`` with an inner ADMM (Appendix C), for ``norm="linf"``.

    Args:
        rho0: initial ADMM penalty (scaled by ``1/n`` internally: the loss is an average).
        gamma: penalty growth factor per ADMM iteration (>= 1).
        admm_iters: ADMM iterations per ``H(lam)`` evaluation (static).
        apg_iters: accelerated projected-gradient steps per w-update (static).
        max_steps: golden-section iterations (default 40).

    No fixed-point residual (``has_residual = False``): :func:`jaxprox.solve` differentiates
    through the iterations by default (:class:`jaxprox.Unrolled`) (for implicit derivatives use :class:`jaxprox.DRSVMPDHG`).
    """

    requires = (cap.DRSVM_PROBLEM, cap.LINF_DRSVM)

    rho0: float = 1.0
    gamma: float = 1.0
    admm_iters: int = eqx.field(static=True, default=300)
    apg_iters: int = eqx.field(static=True, default=10)
    max_steps: int = eqx.field(static=True, default=40, kw_only=True)
    check_every: int = eqx.field(static=True, default=1, kw_only=True)
    tol: float = eqx.field(static=True, default=0.0, kw_only=True)
    has_residual = False

    def _check(self, problem):
        if problem.norm != "linf":
            raise ValueError("GSADMM handles the box constraint of norm='linf' only (paper, App. C)")

    def _inner(self, problem, lam, w, y, g):
        """ADMM (Alg. 3) for ``v(lam)``; returns ``(H(lam), w, y, g)``."""
        Z, n = problem.Z, problem.n
        kap, c = problem.kappa, problem.c
        L_Z = saddle_norm(problem) ** 2 * n * n / 2.0         # ~ ||Z||_2^2 (K has both +-Z/n)
        rho = jnp.asarray(self.rho0, Z.dtype) / n

        def admm(_, carry):
            w, y, g, rho = carry
            target = y - g / rho
            step = 1.0 / (rho * L_Z + c)

            def apg(i, st):
                x, xm = st
                mom = (i - 1.0) / (i + 2.0)
                v = x + mom * (x - xm)
                grad = rho * (Z.T @ (Z @ v - target)) + c * v
                return jnp.clip(v - step * grad, -lam, lam), x

            w, _ = lax.fori_loop(0, self.apg_iters, apg, (w, w))
            zw = Z @ w
            y = _y_step(zw + g / rho, 1.0 / (n * rho), lam, kap)
            g = g + rho * (zw - y)
            return w, y, g, rho * self.gamma

        w, y, g, _ = lax.fori_loop(0, self.admm_iters, admm, (jnp.clip(w, -lam, lam), y, g, rho))
        return problem.objective((w, lam)), w, y, g

    def init(self, problem, init=None):
        self._check(problem)
        dt = problem.Z.dtype
        hi = 1.0 / jnp.maximum(problem.epsilon, 1e-12)
        lo = jnp.zeros((), dt)
        x1, x2 = lo + (1 - _TAU) * (hi - lo), lo + _TAU * (hi - lo)
        w = jnp.zeros(problem.d, dt)
        y = jnp.zeros(problem.n, dt)
        g = jnp.zeros(problem.n, dt)
        h1, w1, y1, g1 = self._inner(problem, x1, w, y, g)
        h2, w2, y2, g2 = self._inner(problem, x2, w1, y1, g1)
        b1 = h1 <= h2
        return GSState(lo, hi, x1, x2, h1, h2, w2, y2, g2, jnp.where(b1, w1, w2),
                       jnp.where(b1, x1, x2), jnp.minimum(h1, h2))

    def step(self, problem, s):
        left = s.h1 < s.h2                          # minimum in [lo, x2]
        lo = jnp.where(left, s.lo, s.x1)
        hi = jnp.where(left, s.x2, s.hi)
        x1 = jnp.where(left, lo + (1 - _TAU) * (hi - lo), s.x2)
        x2 = jnp.where(left, s.x1, lo + _TAU * (hi - lo))
        new = jnp.where(left, x1, x2)
        h, w, y, g = self._inner(problem, new, s.w, s.y, s.g)
        h1 = jnp.where(left, h, s.h2)
        h2 = jnp.where(left, s.h1, h)
        better = h < s.f_best
        return GSState(lo, hi, x1, x2, h1, h2, w, y, g, jnp.where(better, w, s.w_best),
                       jnp.where(better, new, s.lam_best), jnp.minimum(h, s.f_best))

    def params(self, s):
        return (s.w_best, s.lam_best)

    def certificate(self, problem, s):
        return problem.certificate((s.w_best, s.lam_best))
