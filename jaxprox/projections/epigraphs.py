"""Projections onto the epigraphs (cones) of the l1, l2 and linf norms, plain, scaled and weighted
(see :mod:`jaxprox.projections`)."""
from __future__ import annotations

from typing import Any

import jax.numpy as jnp

from ._common import _check_method, _float, _jit, _safe_div, _safe_norm, _threshold, soft_threshold

Array = Any


# --------------------------------------------------------------------------------------------
# norm epigraphs
# --------------------------------------------------------------------------------------------
@_jit()
def epigraph_l2(w: Array, t: Array) -> tuple[Array, Array]:
    """Projection onto the second-order cone ``{(y, s) : ||y||_2 <= s}`` (DRSVM Prop. 6.1,
    eq. (15) as corrected in the note, 3.1; Bauschke 1996 Thm 3.3.6):

        (w, t)                                    if ||w|| <= t,
        (0, 0)                                    if ||w|| <= -t,
        ((||w|| + t)/(2||w||) w, (||w|| + t)/2)   otherwise.
    """
    w = _float(w)
    t = jnp.asarray(t, w.dtype)
    nw = _safe_norm(w)
    alpha = 0.5 * (nw + t)
    inside = nw <= t
    polar = nw <= -t
    scale = _safe_div(alpha, nw, 0.0)
    y = jnp.where(inside, w, jnp.where(polar, 0.0, scale * w))
    s = jnp.where(inside, t, jnp.where(polar, 0.0, alpha))
    return y, s


@_jit("method")
def epigraph_l1(w: Array, t: Array, method: str = "secant") -> tuple[Array, Array]:
    """Projection onto the l1-norm cone ``{(y, s) : ||y||_1 <= s}`` (DRSVM eq. (22)).

    ``(w, t)`` if ``||w||_1 <= t``; otherwise ``y = soft_threshold(w, tau)``, ``s = t + tau``
    with ``tau > 0`` the root of ``F(tau) = sum_i (|w_i| - tau)_+ - tau - t`` (strictly
    decreasing). ``tau = -t`` (apex) when ``||w||_inf <= -t``. Exact with repeated magnitudes
    (the authors' quick-select is not): ``method="sort"`` counts
    ``#{k : u_k > (S_k - t)/(k + 1)}``, the root methods polish on the active set.
    """
    _check_method(method)
    w = _float(w)
    t = jnp.asarray(t, w.dtype)
    v = jnp.abs(w)
    hi = jnp.maximum(jnp.maximum(jnp.max(v, initial=0.0), -t), 0.0)
    tau = _threshold(v, 1.0, t, jnp.zeros((), w.dtype), hi, method)
    inside = jnp.sum(v) <= t
    tau = jnp.maximum(tau, 0.0)
    y = jnp.where(inside, w, soft_threshold(w, tau))
    s = jnp.where(inside, t, t + tau)
    return y, s


@_jit("method")
def epigraph_linf(w: Array, t: Array, method: str = "secant") -> tuple[Array, Array]:
    """Projection onto the linf-norm cone ``{(y, s) : ||y||_inf <= s}`` by Moreau's
    decomposition: the polar cone is ``-{||y||_1 <= s}``, so

        P_{Linf}(w, t) = (w, t) + P_{L1}(-w, -t),

    i.e. ``y = clip(w, -s, s)`` with ``s >= 0`` solving ``sum_i (|w_i| - s)_+ = s - t``.
    """
    w = _float(w)
    t = jnp.asarray(t, w.dtype)
    py, ps = epigraph_l1(-w, -t, method)
    return w + py, t + ps


# --------------------------------------------------------------------------------------------
# scaled norm cones K_t = {(y, mu) : ||y||_q <= t mu}  (DRSVM eq. (28))
# --------------------------------------------------------------------------------------------
def _epi_l1_scaled(x, s, t):
    """``P`` onto ``{||y||_1 <= t mu}``: identity if inside, else ``y = soft(x, tau)``,
    ``mu = s + t tau`` with ``tau >= 0`` the root of ``sum (|x_i| - tau)_+ = t (s + t tau)``
    (sort based, exact with repeated magnitudes; apex ``tau = -s/t`` when ``||x||_inf <= -s/t``)."""
    v = jnp.abs(x)
    u = -jnp.sort(-v)
    kk = jnp.arange(1, x.shape[0] + 1, dtype=x.dtype)
    taus = (jnp.cumsum(u) - t * s) / (kk + t * t)
    kstar = jnp.sum(u > taus)
    tau = jnp.where(kstar >= 1, jnp.take(taus, jnp.maximum(kstar - 1, 0)), -s / t)
    tau = jnp.maximum(tau, 0.0)
    inside = jnp.sum(v) <= t * s
    return jnp.where(inside, x, soft_threshold(x, tau)), jnp.where(inside, s, s + t * tau)


def _epi_l2_scaled(x, s, t):
    """``P`` onto ``{||y||_2 <= t mu}``: identity if ``||x|| <= t s``; apex if ``t ||x|| <= -s``;
    else ``mu = (t||x|| + s)/(1 + t^2)``, ``y = t mu x/||x||``."""
    nx = _safe_norm(x)
    mu = (t * nx + s) / (1.0 + t * t)
    scale = _safe_div(t * mu, nx, 0.0)
    inside = nx <= t * s
    polar = t * nx <= -s
    y = jnp.where(inside, x, jnp.where(polar, 0.0, scale * x))
    return y, jnp.where(inside, s, jnp.where(polar, 0.0, mu))


def _epi_linf_scaled(x, s, t):
    """Moreau: ``P_{K^inf_t}(x, s) = (x, s) + P_{K^1_{1/t}}(-x, -s)`` (the polar of the scaled
    linf cone is minus the l1 cone scaled by ``1/t``)."""
    py, pm = _epi_l1_scaled(-x, -s, 1.0 / t)
    return x + py, s + pm


def epigraph_scaled(x: Array, s: Array, t: Array, norm: str) -> tuple[Array, Array]:
    """Euclidean projection of ``(x, s)`` onto the scaled norm cone
    ``K_t = {(y, mu) : ||y||_q <= t mu}``, ``t > 0``, ``norm`` in ``{"l1", "l2", "linf"}`` naming
    ``q`` (DRSVM eq. (28): the ``c > 0`` prox and the primal step of
    :class:`jaxprox.DRSVMPDHG`). ``t = 1`` gives :func:`epigraph_l1` / :func:`epigraph_l2` /
    :func:`epigraph_linf`. Sort based for l1 / linf (exact with repeated magnitudes)."""
    fns = {"l1": _epi_l1_scaled, "l2": _epi_l2_scaled, "linf": _epi_linf_scaled}
    if norm not in fns:
        raise ValueError(f"norm must be one of {tuple(fns)}, got {norm!r}")
    x = _float(x)
    return fns[norm](x, jnp.asarray(s, x.dtype), jnp.asarray(t, x.dtype))


# --------------------------------------------------------------------------------------------
# weighted norm cones {(u, mu) : ||e * u||_q <= mu}, e > 0  (column-scaled PDHG on DRSVM)
# --------------------------------------------------------------------------------------------
def _epi_linf_weighted(v, s, e):
    """``P`` onto ``{|e_j u_j| <= mu}``. For fixed ``mu`` the minimiser is
    ``u = clip(v, -mu/e, mu/e)``; the remaining function of ``mu`` has derivative
    ``phi'(mu) = mu - s - sum_j (b_j - mu)_+ / e_j^2`` with breakpoints ``b_j = e_j |v_j|``.
    Sorting ``b`` decreasingly, ``phi' = min_k g_k`` with the linear functions
    ``g_k(mu) = mu - s - sum_{j <= k} (b_(j) - mu)/e_(j)^2`` (``k = 0..d``), so its root is the
    largest root of the ``g_k``: ``mu = max(0, max_k (s + C_k)/(1 + W_k))``,
    ``C_k = sum_{j<=k} b_(j)/e_(j)^2``, ``W_k = sum_{j<=k} 1/e_(j)^2`` (``mu = 0``: the apex)."""
    b = jnp.abs(v) * e
    order = jnp.argsort(-b)
    ie2 = 1.0 / e[order] ** 2
    zero = jnp.zeros(1, v.dtype)
    W = jnp.concatenate([zero, jnp.cumsum(ie2)])
    C = jnp.concatenate([zero, jnp.cumsum(b[order] * ie2)])
    mu = jnp.maximum(jnp.max((s + C) / (1.0 + W)), 0.0)
    return jnp.clip(v, -mu / e, mu / e), mu


def _epi_l1_weighted(v, s, e):
    """``P`` onto ``{sum_j e_j |u_j| <= mu}``. KKT: ``u_j = sign(v_j) (|v_j| - theta e_j)_+``,
    ``mu = s + theta`` with ``theta >= 0`` the root of the decreasing
    ``phi(theta) = sum_j (e_j |v_j| - theta e_j^2)_+ - s - theta``. Sorting the breakpoints
    ``b_j = |v_j| / e_j`` decreasingly, ``phi = max_k g_k`` with
    ``g_k(theta) = C_k - theta W_k - s - theta``, ``C_k = sum_{j<=k} e_(j)|v_(j)|``,
    ``W_k = sum_{j<=k} e_(j)^2`` (``k = 0..d``), so ``theta = max(0, max_k (C_k - s)/(1 + W_k))``
    (``theta = 0``: inside the cone; ``mu = 0``: the apex, polar-cone case)."""
    av = jnp.abs(v)
    order = jnp.argsort(-av / e)
    eo = e[order]
    zero = jnp.zeros(1, v.dtype)
    W = jnp.concatenate([zero, jnp.cumsum(eo * eo)])
    C = jnp.concatenate([zero, jnp.cumsum(eo * av[order])])
    theta = jnp.maximum(jnp.max((C - s) / (1.0 + W)), 0.0)
    u = jnp.sign(v) * jnp.maximum(av - theta * e, 0.0)
    return u, jnp.maximum(s + theta, 0.0)


def epigraph_weighted(x: Array, s: Array, e: Array, norm: str) -> tuple[Array, Array]:
    """Euclidean projection of ``(x, s)`` onto the weighted norm cone
    ``{(u, mu) : ||e * u||_q <= mu}`` (``e > 0`` elementwise), ``norm`` in ``{"l1", "linf"}``
    naming ``q``: the primal step of :class:`jaxprox.DRSVMPDHG` with diagonal (column)
    preconditioning ``w = u / d`` (Pock & Chambolle 2011, "Diagonal preconditioning for first
    order primal-dual algorithms in convex optimization"), where the cone ``||w||_q <= lam``
    becomes this one. Branch free and exact with repeated magnitudes (a sort and a max over the
    ``d + 1`` linear pieces of the optimality function). ``e = 1`` gives :func:`epigraph_l1` /
    :func:`epigraph_linf`."""
    fns = {"l1": _epi_l1_weighted, "linf": _epi_linf_weighted}
    if norm not in fns:
        raise ValueError(f"weighted cones are implemented for norm in {tuple(fns)}, got {norm!r}")
    x = _float(x)
    return fns[norm](x, jnp.asarray(s, x.dtype), jnp.asarray(e, x.dtype))
