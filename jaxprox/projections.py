"""Euclidean projections as plain functions: boxes, simplices, norm balls, ball/box with a
hyperplane, the trace-norm ball, and the epigraphs (cones) of the l1, l2 and linf norms.

Every function computes an ``argmin_{y in C} 1/2 ||y - x||^2`` in closed form, by a sort, or
by a scalar root (:mod:`jaxprox.roots`) followed by an exact *polish*: once the multiplier
identifies the active set, the multiplier is recomputed from the (linear) optimality equation
on that set, so root-based answers are exact to rounding whatever the root tolerance. The
multiplier returned by the root finder is not differentiated (``stop_gradient``); derivatives
flow through the polish formula, which is the implicit-function derivative.

All functions are jit/vmap-safe (no Python control flow on traced values), NaN-free at zero
(guarded norms and divisions, double ``where``) and have finite derivatives at zero and at
ties (one-sided derivatives at the kinks).

Paper sections:

* l1 / simplex / capped simplex: Pdprox note (``000_pdprox.md``) sections 3.2--3.3 (Lemma 13,
  Remark 14; Duchi et al. 2008);
* box + hyperplane: AGM-EF note (``002_agm.md``) section 3.4 (Algorithms 7/8 and the exact
  sort version);
* epigraph projections, secant root, ball + hyperplane: DRSVM note (``004_drsvm.md``)
  sections 3.1--3.3, 3.7, 3.8.
"""
from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
from jax import lax

from jaxprox import roots
from jaxprox._compile import compiled
from jaxprox.base import mins, sums

__all__ = [
    "box",
    "simplex",
    "capped_simplex",
    "box_hyperplane",
    "l1_ball",
    "weighted_l1_ball",
    "l2_ball",
    "linf_ball",
    "trace_ball",
    "l2_ball_hyperplane",
    "epigraph_l2",
    "epigraph_l1",
    "epigraph_linf",
    "epigraph_scaled",
    "epigraph_weighted",
    "soft_threshold",
    "q2_project",
    "capped_softmax",
    "project_elastic_net_ball",
]

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


# --------------------------------------------------------------------------------------------
# boxes, balls
# --------------------------------------------------------------------------------------------
@_jit()
def box(x: Array, lo: Array, hi: Array) -> Array:
    """``argmin_{lo <= y <= hi} ||y - x||`` = ``clip(x, lo, hi)`` (elementwise; ``lo <= hi``)."""
    x = _float(x)
    return jnp.minimum(jnp.maximum(x, lo), hi)


@_jit()
def l2_ball(x: Array, radius: Array) -> Array:
    """``argmin_{||y||_2 <= radius} ||y - x||`` = ``x * min(1, radius/||x||_2)``."""
    x = _float(x)
    nx = _safe_norm(x)
    scale = jnp.where(nx > radius, _safe_div(radius, nx, 1.0), 1.0)
    return x * scale


@_jit()
def linf_ball(x: Array, radius: Array) -> Array:
    """``argmin_{||y||_inf <= radius} ||y - x||`` = ``clip(x, -radius, radius)``."""
    return box(x, -radius, radius)


@_jit("method")
def l1_ball(x: Array, radius: Array, method: str = "secant") -> Array:
    """``argmin_{||y||_1 <= radius} ||y - x||`` (Duchi et al. 2008; Pdprox note 3.3).

    ``y = soft_threshold(x, tau)`` with ``tau = 0`` if ``||x||_1 <= radius`` and otherwise the
    root of ``sum_i (|x_i| - tau)_+ = radius`` on ``[0, ||x||_inf]``. ``method``: ``"secant"``
    (Dai--Fletcher, default), ``"bisection"`` or ``"sort"`` (exact, O(n log n)).
    """
    _check_method(method)
    x = _float(x)
    shape = x.shape
    x = x.ravel()
    v = jnp.abs(x)
    r = jnp.asarray(radius, x.dtype)
    vmax = jnp.max(v, initial=0.0)
    tau = _threshold(v, 0.0, r, jnp.zeros((), x.dtype), vmax, method)
    inside = jnp.sum(v) <= r
    tau = jnp.where(inside, 0.0, jnp.maximum(tau, 0.0))
    y = jnp.where(inside, x, soft_threshold(x, tau))
    return y.reshape(shape)


def weighted_l1_ball(x: Array, weights: Array, radius: Array, metric: Array | None = None) -> Array:
    """``argmin_{sum_j c_j |y_j| <= radius} sum_j (D_j y_j^2 / 2 - x_j y_j)`` for weights ``c > 0``
    and a diagonal metric ``D > 0`` (``D = 1``, the default: the Euclidean projection of ``x`` onto
    the weighted l1 ball). With ``D = 1 + t lam c^2`` it is the prox of ``(t lam / 2) sum c_j^2
    y_j^2`` plus the ball: the l1 ball and ridge penalty of ``w = c * y`` in the variable ``y``
    (column rescaling, :meth:`jaxprox.problems.erm.ERM.column_scaled`).

    By the KKT conditions ``y_j = sign(x_j) (|x_j| - theta c_j)_+ / D_j`` with ``theta = 0`` if that
    point is inside, else the root of ``g(theta) = sum_j c_j (|x_j| - theta c_j)_+ / D_j = radius``:
    ``g`` is piecewise linear and decreasing with breakpoints ``|x_j| / c_j``, so sorting them
    (descending) and taking the last ``k`` with ``b_(k) > theta_k``, ``theta_k = (S1_k - radius) /
    S2_k`` (``S1_k = sum_{i <= k} c |x| / D``, ``S2_k = sum_{i <= k} c^2 / D`` over the top ``k``), is
    exact in ``O(d log d)`` (Duchi et al. 2008's sort rule, weighted)."""
    x = _float(x)
    shape = x.shape
    x = x.ravel()
    c = jnp.broadcast_to(jnp.asarray(weights, x.dtype), x.shape)
    D = jnp.ones_like(x) if metric is None else jnp.broadcast_to(jnp.asarray(metric, x.dtype), x.shape)
    r = jnp.asarray(radius, x.dtype)
    a = jnp.abs(x)
    order = jnp.argsort(-(a / c))
    b, cs, ds, as_ = (a / c)[order], c[order], D[order], a[order]
    theta_k = (jnp.cumsum(cs * as_ / ds) - r) / jnp.cumsum(cs * cs / ds)
    k = jnp.maximum(jnp.sum(b > theta_k), 1)
    theta = jnp.maximum(theta_k[k - 1], 0.0)
    inside = jnp.sum(c * a / D) <= r
    theta = jnp.where(inside, 0.0, theta)
    y = jnp.sign(x) * jnp.maximum(a - theta * c, 0.0) / D
    return y.reshape(shape)


@_jit("method")
def simplex(x: Array, s: Array = 1.0, method: str = "secant") -> Array:
    """``argmin_{y >= 0, sum y = s} ||y - x||`` (the probability simplex scaled by ``s >= 0``).

    ``y = max(x - tau, 0)`` where ``tau`` solves ``sum_i (x_i - tau)_+ = s`` on
    ``[min x - s/n, max x]`` (Pdprox note 3.3). ``method`` as in :func:`l1_ball`.
    """
    _check_method(method)
    x = _float(x)
    n = x.shape[0]
    s = jnp.asarray(s, x.dtype)
    lo = jnp.min(x) - s / n
    tau = _threshold(x, 0.0, s, lo, jnp.max(x), method)
    return jnp.where(x > tau, x - tau, 0.0)


# --------------------------------------------------------------------------------------------
# box + one hyperplane (AGM note 3.4), capped simplex (Pdprox budget domain)
# --------------------------------------------------------------------------------------------
def _bh_residual(lam, x, lo, hi, a, b):
    """``g(lam) = a^T clip(x + lam a, lo, hi) - b`` (non-decreasing in ``lam``)."""
    return jnp.dot(a, jnp.clip(x + lam * a, lo, hi)) - b


def _bh_kinks(x, lo, hi, a):
    """Kinks ``(k_lo, k_hi)`` of ``lam -> a_i clip(x_i + lam a_i, lo_i, hi_i)``; infinite
    (``-inf, +inf``: the term is constant) where ``a_i = 0``."""
    nz = a != 0
    sa = jnp.where(nz, a, 1.0)
    k1, k2 = (lo - x) / sa, (hi - x) / sa
    k_lo = jnp.where(nz, jnp.minimum(k1, k2), -jnp.inf)
    k_hi = jnp.where(nz, jnp.maximum(k1, k2), jnp.inf)
    return k_lo, k_hi


def _bh_multiplier_sort(x, lo, hi, a, b):
    """Exact multiplier by sorting the 2n kinks (AGM note 3.4, "JAX-friendly exact" version).

    ``g`` is piecewise linear and non-decreasing: it starts at ``sum_i min(a_i lo_i, a_i hi_i)
    - b``; its slope rises by ``a_i^2`` at ``k_lo_i`` and falls by ``a_i^2`` at ``k_hi_i``.
    Prefix sums give ``g`` at every sorted kink; the root is interpolated on the first piece
    where ``g`` crosses 0.
    """
    n = x.shape[0]
    k_lo, k_hi = _bh_kinks(x, lo, hi, a)
    a2 = jnp.where(a != 0, a * a, 0.0)
    K = jnp.concatenate([k_lo, k_hi])
    dslope = jnp.concatenate([a2, -a2])
    K = jnp.where(jnp.isfinite(K), K, 0.0)  # a_i = 0 terms carry dslope 0
    order = jnp.argsort(K)
    K, dslope = K[order], dslope[order]
    slope = jnp.cumsum(dslope)  # slope on (K_j, K_{j+1})
    g0 = jnp.sum(jnp.minimum(a * lo, a * hi)) - b
    gK = g0 + jnp.concatenate([jnp.zeros((1,), x.dtype), jnp.cumsum(slope[:-1] * jnp.diff(K))])
    j = jnp.clip(jnp.sum(gK < 0) - 1, 0, 2 * n - 1)  # last kink with g < 0
    lam = K[j] - _safe_div(gK[j], slope[j], 0.0)
    lam = jnp.where(jnp.all(gK < 0), K[-1], lam)
    return jnp.where(jnp.all(gK >= 0), K[0], lam)


def _bh_polish(x, lo, hi, a, b, lam0):
    """Exact multiplier on the active set of ``lam0``: with ``F = {lo < x + lam0 a < hi}`` free,
    ``lam = (b - sum_{i not in F} a_i y_i - sum_F a_i x_i) / sum_F a_i^2``."""
    z = x + lam0 * a
    free = (z > lo) & (z < hi) & (a != 0)
    y_fixed = jnp.where(z <= lo, lo, hi)
    num = b - jnp.sum(jnp.where(free, a * x, a * y_fixed))
    den = jnp.sum(jnp.where(free, a * a, 0.0))
    return jnp.where(den > 0, _safe_div(num, den), lam0)


def _bh_multiplier(x, lo, hi, a, b, method):
    if method == "sort":
        lam0 = _bh_multiplier_sort(*(lax.stop_gradient(t) for t in (x, lo, hi, a, b)))
    else:
        x_, lo_, hi_, a_, b_ = (lax.stop_gradient(t) for t in (x, lo, hi, a, b))
        k_lo, k_hi = _bh_kinks(x_, lo_, hi_, a_)
        kl = jnp.min(jnp.where(jnp.isfinite(k_lo), k_lo, jnp.inf))
        kh = jnp.max(jnp.where(jnp.isfinite(k_hi), k_hi, -jnp.inf))
        ok = jnp.isfinite(kl) & jnp.isfinite(kh)
        kl, kh = jnp.where(ok, kl, -1.0), jnp.where(ok, kh, 1.0)
        scale = jnp.sum(jnp.abs(a_) * jnp.maximum(jnp.abs(lo_), jnp.abs(hi_))) + jnp.abs(b_)
        finder = roots.secant if method == "secant" else roots.bisection
        lam0 = finder(_bh_residual, kl, kh, (x_, lo_, hi_, a_, b_), ftol=_rounding_ftol(scale))
        lam0 = lax.stop_gradient(lam0)
    return _bh_polish(x, lo, hi, a, b, lam0)


@_jit("method")
def box_hyperplane(
    x: Array, lo: Array, hi: Array, a: Array, b: Array, method: str = "secant"
) -> Array:
    """``argmin { ||y - x|| : lo <= y <= hi, a^T y = b }`` (AGM note 3.4, eq. (64) with
    ``d_i = 1``: the dual domain of the SVM with a bias, ``a = labels``, ``[lo, hi] = [0, 1/n]``).

    KKT: ``y = clip(x + lam a, lo, hi)`` where ``lam`` solves the non-decreasing piecewise-
    linear equation ``g(lam) = a^T clip(x + lam a, lo, hi) - b = 0``, whose root lies between
    the smallest and largest kink ``(lo_i - x_i)/a_i``, ``(hi_i - x_i)/a_i``. ``method``:
    ``"secant"`` (Dai--Fletcher, the method of Dai & Fletcher 2006 for exactly this problem),
    ``"bisection"``, or ``"sort"`` (exact O(n log n) kink sort, Algorithm 8's answer).
    Bounds must be finite and the set nonempty (``sum min(a lo, a hi) <= b <= sum max(a lo,
    a hi)``); otherwise the box point with ``a^T y`` closest to ``b`` is returned.
    """
    _check_method(method)
    x = _float(x)
    lo, hi, a = (jnp.broadcast_to(jnp.asarray(t, x.dtype), x.shape) for t in (lo, hi, a))
    b = jnp.asarray(b, x.dtype)
    lam = _bh_multiplier(x, lo, hi, a, b, method)
    return jnp.clip(x + lam * a, lo, hi)


@_jit("equality", "method")
def capped_simplex(
    x: Array, cap: Array, total: Array, equality: bool = False, method: str = "secant"
) -> Array:
    """``argmin { ||y - x|| : 0 <= y <= cap, sum y <= total }`` (Pdprox budget domain
    ``Q_alpha = [0, 1]^n cap {1^T alpha <= m}``, eq. (19), Lemma 13); with ``equality=True`` the
    constraint is ``sum y = total`` (needs ``total <= n cap``).

    ``y = clip(x - tau, 0, cap)`` with ``tau >= 0`` (``tau`` free for the equality) solving
    ``sum_i clip(x_i - tau, 0, cap) = total``; ``tau = 0`` when ``sum clip(x, 0, cap) <= total``.
    This is :func:`box_hyperplane` with ``a = 1``, ``lam = -tau``.
    """
    _check_method(method)
    x = _float(x)
    lo = jnp.zeros_like(x)
    hi = jnp.broadcast_to(jnp.asarray(cap, x.dtype), x.shape)
    a = jnp.ones_like(x)
    total = jnp.asarray(total, x.dtype)
    lam = _bh_multiplier(x, lo, hi, a, total, method)
    if not equality:
        inactive = jnp.sum(jnp.clip(x, lo, hi)) <= total
        lam = jnp.where(inactive, 0.0, jnp.minimum(lam, 0.0))
    return jnp.clip(x + lam, lo, hi)


# --------------------------------------------------------------------------------------------
# l2 ball intersected with a hyperplane (DRSVM note 3.8, q = 2)
# --------------------------------------------------------------------------------------------
@_jit()
def l2_ball_hyperplane(x: Array, radius: Array, a: Array, b: Array) -> Array:
    """``argmin { ||y - x|| : ||y||_2 <= radius, a^T y = b }`` in closed form.

    With ``p = x - (a^T x - b) a/||a||^2`` (projection on the hyperplane H) and
    ``c = b a/||a||^2`` (the point of H nearest 0), ``H cap ball`` is the disc of H with
    centre ``c`` and radius ``rho = sqrt(radius^2 - ||c||^2)``; since ``x - p`` is orthogonal to
    H, ``y = c + (p - c) min(1, rho/||p - c||)``. Needs a nonempty set (``|b| <= radius ||a||``;
    otherwise ``rho`` is clamped to 0 and ``y = c``). ``a = 0`` means no hyperplane (``b = 0``).
    """
    x = _float(x)
    a = jnp.asarray(a, x.dtype)
    b = jnp.asarray(b, x.dtype)
    r = jnp.asarray(radius, x.dtype)
    na2 = jnp.sum(a * a)
    coef = _safe_div(jnp.dot(a, x) - b, na2)
    p = x - coef * a
    c = _safe_div(b, na2) * a
    rho2 = r * r - jnp.sum(c * c)
    pos = rho2 > 0
    rho = jnp.where(pos, jnp.sqrt(jnp.where(pos, rho2, 1.0)), 0.0)
    return c + l2_ball(p - c, rho)


# --------------------------------------------------------------------------------------------
# trace-norm (nuclear-norm) ball
# --------------------------------------------------------------------------------------------
@_jit("method")
def trace_ball(X: Array, radius: Array, method: str = "sort") -> Array:
    """``argmin_{||Y||_* <= radius} ||Y - X||_F`` = ``U diag(P_{l1 ball}(s)) V^T`` for the SVD
    ``X = U diag(s) V^T`` (Block-FW note: trace-norm ball; Pdprox: trace norm).

    The derivative is the spectral-operator formula (divided differences of the singular-value
    map), implemented as a custom JVP so it stays finite with repeated (e.g. zero) singular
    values, where the derivative of the SVD itself is not defined.
    """
    _check_method(method)
    X = _float(X)
    r = jnp.asarray(radius, X.dtype)
    if X.shape[0] < X.shape[1]:
        return _trace_ball(X.T, r, method).T
    return _trace_ball(X, r, method)


def _svd_threshold(X, r, method):
    U, s, Vt = jnp.linalg.svd(X, full_matrices=False)
    g = l1_ball(s, r, method)  # s >= 0, so y = (s - tau)_+
    inside = jnp.sum(s) <= r
    tau = jnp.where(inside, 0.0, jnp.max(s - g, initial=0.0))
    return U, s, Vt, g, tau


def _trace_ball_primal(X, r, method):
    U, s, Vt, g, tau = _svd_threshold(X, r, method)
    return (U * g) @ Vt


_trace_ball = jax.custom_jvp(_trace_ball_primal, nondiff_argnums=(2,))


@_trace_ball.defjvp
def _trace_ball_jvp(method, primals, tangents):
    """Spectral operator derivative (X tall, thin SVD ``X = U S V^T``): with
    ``C = U^T dX V``,

        dP = U [diag(Dg(s)[diag C]) + A o sym(C) + B o skew(C)] V^T + (I - U U^T) dX V diag(g/s) V^T,

    ``A_ij = (g_i - g_j)/(s_i - s_j)`` (``= 1[s_i > tau]`` at ties), ``B_ij = (g_i + g_j)/(s_i +
    s_j)`` (``= 1[tau = 0]`` when both are 0), ``g/s -> 1[tau = 0]`` at ``s = 0``."""
    X, r = primals
    dX, dr = tangents
    U, s, Vt, g, tau = _svd_threshold(X, r, method)
    V = Vt.T
    P = (U * g) @ Vt
    C = U.T @ dX @ V
    dg = jax.jvp(lambda s_, r_: l1_ball(s_, r_, method), (s, r), (jnp.diag(C), dr))[1]
    ident = (tau <= 0).astype(X.dtype)
    ds = s[:, None] - s[None, :]
    ss = s[:, None] + s[None, :]
    dgm = g[:, None] - g[None, :]
    A = jnp.where(ds != 0, _safe_div(dgm, ds), jnp.maximum((s[:, None] > tau), ident).astype(X.dtype))
    B = jnp.where(ss > 0, _safe_div(g[:, None] + g[None, :], ss), ident)
    sym, skew = 0.5 * (C + C.T), 0.5 * (C - C.T)
    M = A * sym + B * skew
    eye = jnp.eye(s.shape[0], dtype=X.dtype)
    M = M * (1 - eye) + jnp.diag(dg)
    ratio = jnp.where(s > 0, _safe_div(g, s), ident)
    dXV = dX @ V
    comp = (dXV - U @ (U.T @ dXV)) * ratio
    dP = U @ M @ Vt + comp @ Vt
    return P, dP


# --------------------------------------------------------------------------------------------
# norm epigraphs (DRSVM note 3.1--3.3)
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
    """Projection onto the l1-norm cone ``{(y, s) : ||y||_1 <= s}`` (DRSVM eq. (22), note 3.2).

    ``(w, t)`` if ``||w||_1 <= t``; otherwise ``y = soft_threshold(w, tau)``, ``s = t + tau``
    with ``tau > 0`` the root of ``F(tau) = sum_i (|w_i| - tau)_+ - tau - t`` (strictly
    decreasing). ``tau = -t`` (apex) when ``||w||_inf <= -t``. Exact with repeated magnitudes
    (the authors' quick-select is not, note 3.2): ``method="sort"`` counts
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
    decomposition (DRSVM note 3.3): the polar cone is ``-{||y||_1 <= s}``, so

        P_{Linf}(w, t) = (w, t) + P_{L1}(-w, -t),

    i.e. ``y = clip(w, -s, s)`` with ``s >= 0`` solving ``sum_i (|w_i| - s)_+ = s - t``.
    """
    w = _float(w)
    t = jnp.asarray(t, w.dtype)
    py, ps = epigraph_l1(-w, -t, method)
    return w + py, t + ps


# --------------------------------------------------------------------------------------------
# scaled norm cones K_t = {(y, mu) : ||y||_q <= t mu}  (DRSVM eq. (28), note 3.10)
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
    ``q`` (DRSVM eq. (28) as corrected in note 3.10: the ``c > 0`` prox and the primal step of
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


# ----------------------------------------------------------------------------------------------
# box + hyperplane with a warm-started multiplier (AGM-EF note section 3.4)

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
    multiplier, ``P_Q2(v) = clip(v + lam y, 0, 1/n)`` (note 3.4), by :func:`_q2_multiplier` from
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


# ----------------------------------------------------------------------------------------------
# elastic-net ball (AGM-EF paper section 5.5.2, corrected in the note section 3.5)

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
