"""Projections onto boxes, simplices, norm balls, a ball or box with a hyperplane and the trace-norm
ball (see :mod:`jaxprox.projections`)."""
from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
from jax import lax

from jaxprox import roots

from ._common import _check_method, _float, _jit, _rounding_ftol, _safe_div, _safe_norm, _threshold, soft_threshold

Array = Any


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
    """``argmin_{||y||_1 <= radius} ||y - x||`` (Duchi et al. 2008).

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
    ``[min x - s/n, max x]``. ``method`` as in :func:`l1_ball`.
    """
    _check_method(method)
    x = _float(x)
    n = x.shape[0]
    s = jnp.asarray(s, x.dtype)
    lo = jnp.min(x) - s / n
    tau = _threshold(x, 0.0, s, lo, jnp.max(x), method)
    return jnp.where(x > tau, x - tau, 0.0)


# --------------------------------------------------------------------------------------------
# box + one hyperplane, capped simplex (Pdprox budget domain)
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
    """Exact multiplier by sorting the 2n kinks (a sort of the kinks, exact and JAX-friendly).

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
    """``argmin { ||y - x|| : lo <= y <= hi, a^T y = b }`` (AGM-EF paper eq. (64), with
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
# l2 ball intersected with a hyperplane (DRSVM paper, q = 2)
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
