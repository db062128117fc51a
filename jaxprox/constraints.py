"""Closed convex sets as :class:`jaxprox.base.Constraint` modules: projection, linear
minimization oracle (Frank--Wolfe), support function and a membership test.

Radii and other set parameters are array leaves (``base.as_leaf``), so ``jit`` does not
recompile when they change and ``vmap``/``grad`` reach them. Structural choices (root-finding
method, power-iteration count) are static fields. Constructors validate concrete inputs
(``ValueError`` for negative radii, ``lo > hi``, empty sets, shape mismatches); traced inputs
pass unchecked.

Projections are the functions of :mod:`jaxprox.projections`; the sections of the papers are
given there. The LMOs follow the Block-FW note (l1 ball: a signed vertex; trace-norm ball:
``-radius u v^T`` for the top singular pair of the gradient).
"""
from __future__ import annotations

from typing import Any

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from jaxprox import projections as P
from jaxprox import roots
from jaxprox.base import Constraint, NormBall, as_leaf, probe_vector

__all__ = [
    "Box",
    "Simplex",
    "CappedSimplex",
    "BoxHyperplane",
    "L1Ball",
    "WeightedL1Ball",
    "L2Ball",
    "LinfBall",
    "TraceBall",
    "L2BallHyperplane",
    "ElasticNetBall",
]

Array = Any
_DEFAULT_TOL = 1e-8


def _concrete(*xs) -> bool:
    return not any(isinstance(x, jax.core.Tracer) for x in xs)


def _radius(r, name="radius"):
    return as_leaf(r, name)


def _vector(x, name, *, nonneg=False):
    arr = as_leaf(x, name, nonneg=nonneg)
    if _concrete(arr) and arr.ndim > 1:
        raise ValueError(f"{name} must be a scalar or a vector, got shape {arr.shape}")
    return arr


def _check_method(method):
    if method not in P._METHODS:
        raise ValueError(f"method must be one of {P._METHODS}, got {method!r}")


def _safe_norm(x):
    return P._safe_norm(x)


class Box(Constraint):
    """``{x : lo <= x <= hi}`` (elementwise; ``lo``, ``hi`` scalars or vectors)."""

    separable = True

    lo: Array
    hi: Array

    def __init__(self, lo, hi):
        self.lo = as_leaf(lo, "lo", nonneg=False)
        self.hi = as_leaf(hi, "hi", nonneg=False)
        if _concrete(self.lo, self.hi):
            try:
                np.broadcast_shapes(self.lo.shape, self.hi.shape)
            except ValueError as e:
                raise ValueError(f"lo and hi shapes do not broadcast: {self.lo.shape}, {self.hi.shape}") from e
            if np.any(np.asarray(self.lo) > np.asarray(self.hi)):
                raise ValueError("Box needs lo <= hi elementwise")

    def project(self, x):
        """``clip(x, lo, hi)``."""
        return P.box(x, self.lo, self.hi)

    def lmo(self, g):
        """``argmin_{lo <= s <= hi} <g, s>``: ``s_i = lo_i`` if ``g_i > 0`` else ``hi_i``."""
        lo = jnp.broadcast_to(self.lo, jnp.shape(g))
        hi = jnp.broadcast_to(self.hi, jnp.shape(g))
        return jnp.where(g > 0, lo, hi)

    def support(self, v):
        """``sum_i max(v_i lo_i, v_i hi_i)``."""
        return jnp.sum(jnp.maximum(v * self.lo, v * self.hi))

    def contains(self, x, tol=_DEFAULT_TOL):
        return jnp.all((x >= self.lo - tol) & (x <= self.hi + tol))


class Simplex(Constraint):
    """``{x : x >= 0, sum x = s}`` (the probability simplex scaled by ``s >= 0``)."""

    s: Array
    method: str = eqx.field(static=True, default="secant")

    def __init__(self, s=1.0, method="secant"):
        _check_method(method)
        self.s = _radius(s, "s")
        self.method = method

    def project(self, x):
        return P.simplex(x, self.s, self.method)

    def lmo(self, g):
        """``s e_i`` with ``i = argmin g``."""
        return self.s * jax.nn.one_hot(jnp.argmin(g), g.shape[0], dtype=jnp.result_type(g, float))

    def support(self, v):
        """``s max_i v_i``."""
        return self.s * jnp.max(v)

    def contains(self, x, tol=_DEFAULT_TOL):
        return jnp.all(x >= -tol) & (jnp.abs(jnp.sum(x) - self.s) <= tol * (1 + self.s))


class CappedSimplex(Constraint):
    """``{x : 0 <= x <= cap, sum x <= total}`` (Pdprox budget domain, eq. (19)); with
    ``equality=True``, ``sum x = total`` (needs ``total <= n cap``)."""

    cap: Array
    total: Array
    equality: bool = eqx.field(static=True, default=False)
    method: str = eqx.field(static=True, default="secant")

    def __init__(self, cap, total, equality=False, method="secant"):
        _check_method(method)
        self.cap = _radius(cap, "cap")
        self.total = _radius(total, "total")
        self.equality = bool(equality)
        self.method = method

    def project(self, x):
        return P.capped_simplex(x, self.cap, self.total, self.equality, self.method)

    def lmo(self, g):
        """Greedy: fill the coordinates in increasing order of ``g`` with ``cap`` until
        ``total`` is used (only those with ``g_i < 0`` unless ``equality``)."""
        g = jnp.asarray(g)
        order = jnp.argsort(g)
        k = jnp.arange(g.shape[0], dtype=jnp.result_type(g, float))
        amount = jnp.clip(self.total - self.cap * k, 0.0, self.cap)
        if not self.equality:
            amount = jnp.where(g[order] < 0, amount, 0.0)
        return jnp.zeros_like(amount).at[order].set(amount)

    def contains(self, x, tol=_DEFAULT_TOL):
        ok = jnp.all((x >= -tol) & (x <= self.cap + tol))
        sx = jnp.sum(x)
        if self.equality:
            return ok & (jnp.abs(sx - self.total) <= tol * (1 + self.total))
        return ok & (sx <= self.total + tol * (1 + self.total))


class BoxHyperplane(Constraint):
    """``{x : lo <= x <= hi, a^T x = b}`` (the SVM-with-bias dual domain)."""

    lo: Array
    hi: Array
    a: Array
    b: Array
    method: str = eqx.field(static=True, default="secant")

    def __init__(self, lo, hi, a, b=0.0, method="secant"):
        _check_method(method)
        self.lo = _vector(lo, "lo")
        self.hi = _vector(hi, "hi")
        self.a = _vector(a, "a")
        self.b = as_leaf(b, "b", nonneg=False)
        self.method = method
        if _concrete(self.lo, self.hi, self.a, self.b):
            lo_, hi_, a_ = np.broadcast_arrays(np.asarray(self.lo), np.asarray(self.hi), np.asarray(self.a))
            if np.any(lo_ > hi_):
                raise ValueError("BoxHyperplane needs lo <= hi elementwise")
            lo_sum = np.sum(np.minimum(a_ * lo_, a_ * hi_))
            hi_sum = np.sum(np.maximum(a_ * lo_, a_ * hi_))
            b_ = float(self.b)
            slack = 1e-12 * (1 + abs(lo_sum) + abs(hi_sum))
            if not (lo_sum - slack <= b_ <= hi_sum + slack):
                raise ValueError(
                    f"BoxHyperplane is empty: a^T x ranges over [{lo_sum}, {hi_sum}] on the box, b = {b_}"
                )

    def project(self, x):
        return P.box_hyperplane(x, self.lo, self.hi, self.a, self.b, self.method)

    def lmo(self, g):
        raise NotImplementedError("BoxHyperplane.lmo (a continuous knapsack LP) is not implemented")

    def contains(self, x, tol=_DEFAULT_TOL):
        in_box = jnp.all((x >= self.lo - tol) & (x <= self.hi + tol))
        scale = 1 + jnp.sum(jnp.abs(self.a * x))
        return in_box & (jnp.abs(jnp.dot(jnp.broadcast_to(self.a, x.shape), x) - self.b) <= tol * scale)


class L1Ball(NormBall):
    """``{x : ||x||_1 <= radius}``."""

    norm = "l1"

    radius: Array
    method: str = eqx.field(static=True, default="secant")

    def __init__(self, radius, method="secant"):
        _check_method(method)
        self.radius = _radius(radius)
        self.method = method

    def project(self, x):
        return P.l1_ball(x, self.radius, self.method)

    def project_exact(self, x):
        """By sorting (``method="sort"``): exact by construction, and a smaller graph to compile
        than the secant loop's."""
        return P.l1_ball(x, self.radius, "sort")

    def lmo(self, g):
        """``-radius sign(g_i) e_i`` with ``i = argmax |g_i|`` (a vertex of the ball)."""
        flat = jnp.ravel(g)
        i = jnp.argmax(jnp.abs(flat))
        e = jax.nn.one_hot(i, flat.shape[0], dtype=jnp.result_type(flat, float))
        return (-self.radius * jnp.sign(flat[i]) * e).reshape(jnp.shape(g))

    def support(self, v):
        """``radius ||v||_inf``."""
        return self.radius * jnp.max(jnp.abs(v))

    def contains(self, x, tol=_DEFAULT_TOL):
        return jnp.sum(jnp.abs(x)) <= self.radius + tol * (1 + self.radius)


class WeightedL1Ball(Constraint):
    """``{x : sum_j c_j |x_j| <= radius}`` for weights ``c > 0``: the l1 ball of ``w = c * x`` in
    the variable ``x`` (what column rescaling turns :class:`L1Ball` into,
    :meth:`jaxprox.problems.erm.ERM.column_scaled`). Projection:
    :func:`jaxprox.projections.weighted_l1_ball` (exact, by sorting); :meth:`project_metric` adds a
    diagonal metric, for the prox of a diagonal ridge penalty plus the ball."""

    radius: Array
    weights: Array

    def __init__(self, radius, weights):
        self.radius = _radius(radius)
        self.weights = _vector(weights, "weights")
        if _concrete(self.weights) and np.any(np.asarray(self.weights) <= 0):
            raise ValueError("WeightedL1Ball needs weights > 0")

    def project(self, x):
        return P.weighted_l1_ball(x, self.weights, self.radius)

    def project_metric(self, x, metric):
        """``argmin_{y in C} sum_j (metric_j y_j^2 / 2 - x_j y_j)`` (see the projection)."""
        return P.weighted_l1_ball(x, self.weights, self.radius, metric)

    def lmo(self, g):
        """``-(radius / c_i) sign(g_i) e_i`` with ``i = argmax |g_i| / c_i`` (a vertex)."""
        flat = jnp.ravel(g)
        c = jnp.broadcast_to(self.weights, flat.shape)
        i = jnp.argmax(jnp.abs(flat) / c)
        e = jax.nn.one_hot(i, flat.shape[0], dtype=jnp.result_type(flat, float))
        return (-self.radius / c[i] * jnp.sign(flat[i]) * e).reshape(jnp.shape(g))

    def support(self, v):
        """``radius max_i |v_i| / c_i``."""
        return self.radius * jnp.max(jnp.abs(v) / self.weights)

    def feasible(self, x):
        """``x`` scaled into the ball, ``x min(1, radius / sum_j c_j |x_j|)``."""
        nx = jnp.sum(self.weights * jnp.abs(x))
        return x * jnp.where(nx > self.radius, self.radius / jnp.where(nx > 0, nx, 1.0), 1.0)

    def contains(self, x, tol=_DEFAULT_TOL):
        return jnp.sum(self.weights * jnp.abs(x)) <= self.radius + tol * (1 + self.radius)


class L2Ball(NormBall):
    """``{x : ||x||_2 <= radius}``."""

    norm = "l2"

    radius: Array

    def __init__(self, radius):
        self.radius = _radius(radius)

    def project(self, x):
        return P.l2_ball(x, self.radius)

    def lmo(self, g):
        """``-radius g/||g||`` (0 if ``g = 0``)."""
        ng = _safe_norm(g)
        return -self.radius * g * jnp.where(ng > 0, 1.0 / jnp.where(ng > 0, ng, 1.0), 0.0)

    def support(self, v):
        """``radius ||v||_2``."""
        return self.radius * _safe_norm(v)

    def contains(self, x, tol=_DEFAULT_TOL):
        return _safe_norm(x) <= self.radius + tol * (1 + self.radius)


class LinfBall(NormBall):
    """``{x : ||x||_inf <= radius}``."""

    norm = "linf"

    separable = True

    radius: Array

    def __init__(self, radius):
        self.radius = _radius(radius)

    def project(self, x):
        return P.linf_ball(x, self.radius)

    def lmo(self, g):
        """``-radius sign(g)``."""
        return -self.radius * jnp.sign(g)

    def support(self, v):
        """``radius ||v||_1``."""
        return self.radius * jnp.sum(jnp.abs(v))

    def contains(self, x, tol=_DEFAULT_TOL):
        return jnp.max(jnp.abs(x)) <= self.radius + tol * (1 + self.radius)


class TraceBall(NormBall):
    """``{X : ||X||_* <= radius}`` (nuclear-norm ball; Block-FW note, trace-norm case).

    ``lmo`` uses ``power_iters`` steps of power iteration on ``G^T G`` from a fixed start vector (:func:`jaxprox.base.probe_vector`)
    (static, so the same ``G`` always gives the same answer); its accuracy depends on the gap
    between the two largest singular values of ``G``.
    """

    norm = "trace"

    radius: Array
    power_iters: int = eqx.field(static=True, default=100)
    seed: int = eqx.field(static=True, default=0)

    def __init__(self, radius, power_iters=100, seed=0):
        self.radius = _radius(radius)
        if int(power_iters) < 1:
            raise ValueError(f"power_iters must be >= 1, got {power_iters!r}")
        self.power_iters = int(power_iters)
        self.seed = int(seed)

    def project(self, X):
        return P.trace_ball(X, self.radius)

    def top_singular_pair(self, G):
        """``(u, sigma, v)`` with ``G v ~ sigma u`` for the largest singular value, by power
        iteration ``v <- G^T G v / ||G^T G v||`` (guarded: ``G = 0`` gives ``sigma = 0``)."""
        G = jnp.asarray(G)
        v0 = probe_vector((G.shape[1],), jnp.result_type(G, float), self.seed)
        v0 = v0 / _safe_norm(v0)

        def normalize(z, fallback):
            nz = _safe_norm(z)
            return jnp.where(nz > 0, z / jnp.where(nz > 0, nz, 1.0), fallback)

        def body(_, v):
            return normalize(G.T @ (G @ v), v)

        v = jax.lax.fori_loop(0, self.power_iters, body, v0)
        Gv = G @ v
        sigma = _safe_norm(Gv)
        u = normalize(Gv, jnp.zeros_like(Gv))
        return u, sigma, v

    def lmo(self, G):
        """``-radius u v^T`` for the top singular pair ``(u, v)`` of ``G``."""
        u, _, v = self.top_singular_pair(G)
        return -self.radius * jnp.outer(u, v)

    def support(self, V):
        """``radius ||V||_2`` (spectral norm, by the same power iteration)."""
        return self.radius * self.top_singular_pair(V)[1]

    def contains(self, X, tol=_DEFAULT_TOL):
        return jnp.sum(jnp.linalg.svd(X, compute_uv=False)) <= self.radius + tol * (1 + self.radius)


class L2BallHyperplane(Constraint):
    """``{x : ||x||_2 <= radius, a^T x = b}`` (the DRSVM paper's Case 5 with q = 2)."""

    radius: Array
    a: Array
    b: Array

    def __init__(self, radius, a, b=0.0):
        self.radius = _radius(radius)
        self.a = _vector(a, "a")
        self.b = as_leaf(b, "b", nonneg=False)
        if _concrete(self.radius, self.a, self.b):
            na = float(np.linalg.norm(np.asarray(self.a)))
            if abs(float(self.b)) > float(self.radius) * na * (1 + 1e-12) + 1e-300:
                raise ValueError(
                    f"L2BallHyperplane is empty: |b| = {abs(float(self.b))} > radius * ||a|| = {float(self.radius) * na}"
                )

    def project(self, x):
        return P.l2_ball_hyperplane(x, self.radius, self.a, self.b)

    def _disc(self, dtype):
        a = jnp.asarray(self.a, dtype)
        na2 = jnp.sum(a * a)
        c = P._safe_div(self.b, na2) * a
        rho2 = self.radius**2 - jnp.sum(c * c)
        rho = jnp.where(rho2 > 0, jnp.sqrt(jnp.where(rho2 > 0, rho2, 1.0)), 0.0)
        return a, na2, c, rho

    def lmo(self, g):
        """``c - rho g_H / ||g_H||`` with ``g_H`` the component of ``g`` parallel to the
        hyperplane, ``c = b a/||a||^2`` and ``rho = sqrt(radius^2 - ||c||^2)``."""
        a, na2, c, rho = self._disc(jnp.result_type(g, float))
        gH = g - P._safe_div(jnp.dot(a, g), na2) * a
        ng = _safe_norm(gH)
        # g parallel to a (up to rounding): every point of the disc is a minimizer; take c
        # rather than normalizing rounding noise (whose direction is arbitrary).
        ok = ng > 16 * jnp.finfo(ng.dtype).eps * _safe_norm(g)
        return c - rho * gH * jnp.where(ok, 1.0 / jnp.where(ok, ng, 1.0), 0.0)

    def contains(self, x, tol=_DEFAULT_TOL):
        scale = 1 + jnp.sum(jnp.abs(self.a * x))
        return (_safe_norm(x) <= self.radius + tol * (1 + self.radius)) & (
            jnp.abs(jnp.dot(self.a, x) - self.b) <= tol * scale
        )


class ElasticNetBall(Constraint):
    """``C = {w : gamma ||w||_1 + 1/2 ||w||_2^2 <= r}``, the constrained elastic net (Example 6 of
    "Regularized Risk Minimization by Nesterov's Accelerated Gradient Methods: Algorithmic
    Extensions and Empirical Studies"). Projection: :func:`jaxprox.projections.project_elastic_net_ball`
    (section 5.5.2, corrected); LMO and support through
    ``sigma_C(v) = min_{eta > 0} eta r + ||soft(v, eta gamma)||^2 / (2 eta)``."""

    gamma: jax.Array
    r: jax.Array

    def __init__(self, gamma, r):
        self.gamma = as_leaf(gamma, "gamma")
        self.r = as_leaf(r, "r")

    def project(self, x):
        return P.project_elastic_net_ball(x, self.gamma, self.r)

    def _eta(self, v):
        # support sigma_C(v) = min_{eta > 0} eta r + ||soft(v, eta gamma)||^2/(2 eta); its
        # derivative r - sum_{|v_i| > eta gamma} (v_i^2 - eta^2 gamma^2)/(2 eta^2) increases in eta
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
        return P.soft_threshold(-g, eta * self.gamma) / eta

    def support(self, v):
        eta = lax.stop_gradient(self._eta(v))
        s = P.soft_threshold(v, eta * self.gamma)
        return jnp.where(jnp.any(v != 0), eta * self.r + jnp.vdot(s, s) / (2.0 * eta), 0.0)
