"""Entropy-regularised LPBoost (Example 5 of "Regularized Risk Minimization by Nesterov's
Accelerated Gradient Methods: Algorithmic Extensions and Empirical Studies", Zhang, Saha,
Vishwanathan), as an :class:`~jaxprox.problems.base.AGMModel`:

    J(w) = lam KL(w, 1/n) + max_i <u_i, w>   over the capped simplex {0 <= w <= nu, sum w = 1},

solved on its dual over the simplex with the entropic prox (no smoothing, scheme 5.3) or in the
primal with the softmax smoothing ``mu log sum exp(Uw/mu)`` (scheme 5.1.1). The entropic
projection on the capped simplex is :func:`jaxprox.projections.capped_softmax`.
"""
from __future__ import annotations

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from ..projections import capped_softmax, simplex
from .base import PrimalOrDualModel
from .validation import check_finite, check_numeric, concrete, leaf, positive_leaf

__all__ = ["ERLPBoost"]


def _kl_uniform(w):
    n = w.shape[0]
    pos = w > 0
    return jnp.sum(jnp.where(pos, w * (jnp.log(jnp.where(pos, w, 1.0)) + jnp.log(n)), 0.0))


class ERLPBoost(PrimalOrDualModel):
    """Entropy-regularised LPBoost (Example 5, eq. (51)):

        J(w) = lam KL(w, 1/n) + max_{i <= t} <u_i, w>,   w in {0 <= w <= nu, sum w = 1}.

    ``U`` is the ``(t, n)`` matrix of edge vectors ``u_i`` (``U[i, j] = y_j h_i(x_j)``).

    * ``space="dual"`` (scheme 5.3, no smoothing): AGM minimises ``-D(alpha) =
      Omega*(-U^T alpha)`` over the simplex of ``alpha`` (entropic prox = softmax, or the
      Euclidean simplex projection), ``Omega*(s) = max_{w in Q1} <s, w> - lam KL(w, 1/n)`` with
      maximiser ``w(alpha) = capped_softmax(-U^T alpha/lam)`` (with the sign corrected
      from the paper's); ``L = max|U_ij|^2 / lam`` w.r.t. the l1 norm. ``mu > 0`` adds the dual
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
        if space not in ("dual", "primal"):
            raise ValueError(f"space must be 'dual' or 'primal', got {space!r}")
        check_numeric("U", U)
        U = jnp.asarray(U)
        if U.ndim != 2:
            raise ValueError(f"U must be a (t, n) matrix of edge vectors, got shape {U.shape}")
        if U.shape[0] == 0 or U.shape[1] == 0:
            raise ValueError(f"U must have at least one hypothesis and one example, got shape {U.shape}")
        check_finite("U", U)
        if nu is not None:
            nu = float(nu)
            if not np.isfinite(nu) or nu * U.shape[1] < 1:
                raise ValueError(f"the capped simplex is empty: need a finite nu >= 1/n = "
                                 f"{1.0 / U.shape[1]:g}, got nu={nu}")
        dtype = U.dtype if jnp.issubdtype(U.dtype, jnp.floating) else jnp.result_type(float)
        self.U = U.astype(dtype)
        # the dual's conjugate Omega* divides by lam; the primal only needs lam >= 0
        self.lam = (positive_leaf(lam, "lam", dtype, why=" on the dual (Omega* divides by lam)")
                    if space == "dual" else leaf(lam, "lam", dtype))
        self.mu = leaf(mu, "mu", dtype)
        if space == "primal" and concrete(self.mu) and float(self.mu) <= 0:
            raise ValueError("space='primal' needs a smoothing mu > 0")
        self.nu, self.space = nu, space

    @property
    def geometries(self):
        return ("entropic", "euclidean") if self.space == "dual" else ("entropic",)

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
