"""Projections onto the dual sets of the AGM-EF models: the bias-SVM dual set ``Q2``, the capped
simplex of ERLPBoost through a softmax, and the elastic-net ball (see :mod:`jaxprox.projections`)."""
from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
from jax import lax

from jaxprox import roots
from jaxprox.base import mins, sums

from ._common import soft_threshold

Array = Any


# ----------------------------------------------------------------------------------------------
# box + hyperplane with a warm-started multiplier (AGM-EF note section 3.4)

def _q2_multiplier(v, y, h, lam0, max_iter=50):
    """Root ``lam`` of ``g(lam) = y^T clip(v + lam y, 0, h)`` (``y in {-1, 1}^n``), the
    multiplier of the projection onto ``Q2 = [0, h]^n cap {y^T a = 0}`` (``g`` is
    non-decreasing and piecewise linear, with slope ``#{i: 0 < v_i + lam y_i < h}``).

    Safeguarded Newton from the warm start ``lam0`` (e.g. the previous iteration's multiplier):
    every evaluated point shrinks the bracket ``[a, b]`` (``g(a) <= 0 <= g(b)``, initially the
    extreme kinks), the Newton step is taken when it falls strictly inside the bracket, the
    midpoint otherwise. Newton is exact once on the root's linear piece, so from a warm start
    it stops after 1-3 passes over ``v`` (the Dai-Fletcher secant from the full kink bracket
    needs ~10)."""
    a0, neg_b0 = mins(jnp.where(y > 0, -v, v - h), -jnp.where(y > 0, h - v, v))
    b0 = -neg_b0
    ftol = 64 * jnp.finfo(v.dtype).eps * (1.0 + h * v.shape[0])

    def cond(c):
        return (~c[4]) & (c[3] < max_iter)

    def body(c):
        lam, a, b, it, _ = c
        r = v + lam * y
        g, free = sums(y * jnp.clip(r, 0.0, h), ((r > 0) & (r < h)).astype(r.dtype))
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
    multiplier, ``P_Q2(v) = clip(v + lam y, 0, 1/n)``, by :func:`_q2_multiplier` from
    the warm start ``lam0`` and the exact polish on the active set (differentiable in ``v``
    through the active set, as :func:`jaxprox.projections.box_hyperplane`)."""
    h = 1.0 / n
    lam = lax.stop_gradient(_q2_multiplier(*(lax.stop_gradient(t) for t in (v, y, h, lam0))))
    r = lax.stop_gradient(v + lam * y)
    free = (r > 0) & (r < h)
    fixed = jnp.where(r <= 0, 0.0, h)
    num, den = sums(-jnp.where(free, y * v, y * fixed), free.astype(v.dtype))
    lam = jnp.where(den > 0, num / jnp.maximum(den, 1), lam)
    return jnp.clip(v + lam * y, 0.0, h), lam


# ----------------------------------------------------------------------------------------------
# entropic projection on the capped simplex (AGM-EF note section 3.1)

def capped_softmax(t, nu=None):
    """``argmin_{x in S, x <= nu} sum_i x_i log x_i - <t, x>`` on the (capped) probability simplex
    and its log: ``x_i = min(nu, exp(t_i - tau))`` with ``sum x = 1``.

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


# ----------------------------------------------------------------------------------------------
# elastic-net ball (AGM-EF paper section 5.5.2, corrected in the note section 3.5)

def _enet_dual_slope(lmb, a, gamma, r):
    # h(lam) = -2 r (1+lam)^2 + sum_{a_i > lam gamma} [(gamma + a_i)^2 - gamma^2 (1+lam)^2]
    # (sign of H'(lam)); strictly decreasing on [0, inf)
    act = a > lmb * gamma
    return -2.0 * r * (1.0 + lmb) ** 2 + jnp.sum(jnp.where(act, (gamma + a) ** 2 - gamma**2 * (1.0 + lmb) ** 2, 0.0))


def project_elastic_net_ball(g, gamma, r):
    """``argmin { 1/2 ||w - g||^2 : gamma ||w||_1 + 1/2 ||w||^2 <= r }`` (section 5.5.2 with the
    note's corrections): ``w = g`` if feasible, else ``w_i = soft(g_i, lmb gamma)/(1 + lmb)`` with
    ``lmb > 0`` the root of the strictly decreasing ``h``; bisection over ``[0, max|g|/gamma]``
    then the exact polish on the active set, ``1 + lmb = sqrt(S/(2r + m gamma^2))``."""
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
