"""Shared pieces of the projections: guarded norms and divisions, the method check and the
thresholds ``tau`` with ``sum_i min(c_i |v_i|, max(|v_i| - tau, 0)) = r`` behind the l1-type
projections (by a sort, or by a scalar root of :mod:`jaxprox.roots` and an exact polish)."""
from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
from jax import lax

from jaxprox import roots
from jaxprox._compile import compiled

Array = Any
_METHODS = ("secant", "bisection", "sort")


# --------------------------------------------------------------------------------------------
# small guarded helpers
# --------------------------------------------------------------------------------------------
def _float(x):
    x = jnp.asarray(x)
    return x if jnp.issubdtype(x.dtype, jnp.floating) else x.astype(jnp.result_type(float))


def _safe_norm(x):
    """``||x||_2`` with a finite derivative at 0 (double-where)."""
    sq = jnp.sum(x * x)
    pos = sq > 0
    return jnp.where(pos, jnp.sqrt(jnp.where(pos, sq, 1.0)), 0.0)


def _safe_div(num, den, fallback=0.0):
    ok = den != 0
    return jnp.where(ok, num / jnp.where(ok, den, 1.0), fallback)


def soft_threshold(x: Array, tau: Array) -> Array:
    """``sign(x) * max(|x| - tau, 0)`` (the prox of ``tau ||.||_1``), with derivative 1 on the
    active set ``|x| > tau`` and 0 elsewhere, also at ``x = 0``."""
    return jnp.where(jnp.abs(x) > tau, x - jnp.sign(x) * tau, jnp.zeros_like(x))


def _jit(*static):
    """``jax.jit`` with the structural arguments static, so eager calls are compiled once per
    shape (the root finders' ``while_loop`` is not re-traced on every call)."""

    def deco(fun):
        return compiled(fun, jax.jit, static_argnames=static)

    return deco


def _check_method(method):
    if method not in _METHODS:
        raise ValueError(f"method must be one of {_METHODS}, got {method!r}")


def _rounding_ftol(scale):
    """Residual tolerance at rounding level for ``f = sum of terms of total size ~scale``."""
    return 64 * jnp.finfo(scale.dtype).eps * (1.0 + scale)


# --------------------------------------------------------------------------------------------
# the threshold equation  F(tau) = sum_i (v_i - tau)_+ - c tau - r = 0
# --------------------------------------------------------------------------------------------
def _threshold_residual(tau, v, c, r):
    return jnp.sum(jnp.maximum(v - tau, 0.0)) - c * tau - r


def _threshold_sort(v, c, r):
    """Exact root of ``F(tau) = sum (v - tau)_+ - c tau - r`` (``c in {0, 1}``) by sorting.

    With ``u = sort(v)`` descending and ``S_k = u_1 + ... + u_k``, ``tau_k = (S_k - r)/(k + c)``
    and ``k* = #{k : u_k > tau_k}`` (the predicate is monotone, so counting is tie-safe);
    ``tau* = tau_{k*}``. When ``k* = 0``: ``tau* = -r`` if ``c = 1`` (polar cone), else
    ``max v`` (``r = 0``: every ``tau >= max v`` is a root).
    """
    u = -jnp.sort(-v)
    k = jnp.arange(1, v.shape[0] + 1, dtype=v.dtype)
    taus = (jnp.cumsum(u) - r) / (k + c)
    kstar = jnp.sum(u > taus)
    tau = jnp.take(taus, jnp.maximum(kstar - 1, 0))
    fallback = jnp.where(c > 0, -r, u[0])
    return jnp.where(kstar >= 1, tau, fallback)


def _threshold_root(v, c, r, lo, hi, method):
    """Root of ``F`` on ``[lo, hi]`` by :mod:`jaxprox.roots` (``stop_gradient``), then the exact
    polish ``tau = (sum_{v_i > tau} v_i - r) / (#{v_i > tau} + c)``."""
    v_, c_, r_, lo_, hi_ = (lax.stop_gradient(a) for a in (v, c, r, lo, hi))
    ftol = _rounding_ftol(jnp.sum(jnp.abs(v_)) + jnp.abs(r_) + jnp.abs(hi_))
    finder = roots.secant if method == "secant" else roots.bisection
    tau0 = lax.stop_gradient(finder(_threshold_residual, lo_, hi_, (v_, c_, r_), ftol=ftol))
    return _polish_threshold(v, c, r, tau0)


def _newton_threshold(v, c, r, tau0):
    """One Newton step on the convex, decreasing, piecewise-linear ``F`` from ``tau0``:
    ``tau = (sum_{v_i > tau0} v_i - r) / (#{v_i > tau0} + c)`` (exact once the active set is)."""
    active = v > tau0
    den = jnp.sum(active) + c
    return jnp.where(den > 0, _safe_div(jnp.sum(jnp.where(active, v, 0.0)) - r, den), tau0)


def _polish_threshold(v, c, r, tau0):
    """Two Newton steps. ``F`` is convex, so after one step the iterate is at or left of the
    root and further steps increase monotonically to it, finitely; two steps fix an active set
    that a root tolerance at rounding level left off by the elements within ``ftol`` of the
    root. Only the last step carries derivatives (the implicit-function derivative)."""
    tau1 = lax.stop_gradient(_newton_threshold(v, c, r, tau0))
    return _newton_threshold(v, c, r, tau1)


def _threshold(v, c, r, lo, hi, method):
    if method == "sort":
        # the polish (O(n)) makes the derivative the implicit-function one
        return _polish_threshold(v, c, r, lax.stop_gradient(_threshold_sort(v, c, r)))
    return _threshold_root(v, c, r, lo, hi, method)
