"""Step-size schedules ``alpha_k`` for the incremental DRSVM methods (:class:`jaxprox.ISG`,
:class:`jaxprox.IPPA`, :class:`jaxprox.HybridISGIPPA`), from Theorem 4.3 of "Fast Epigraphical
Projection-based Incremental Algorithms for Wasserstein Distributionally Robust Support Vector
Machine" (Li, Chen, So). A schedule is called as ``schedule(k, n)`` with ``k`` the epoch and
``n`` the number of samples.

Any optax schedule (a function of the step count, e.g. ``optax.exponential_decay(0.1, 1, 0.975)``)
works too: :func:`step_size` calls it with the epoch ``k`` alone.
"""
from __future__ import annotations

import equinox as eqx
import jax.numpy as jnp

__all__ = ["Schedule", "Constant", "Geometric", "InvK", "InvSqrtK", "step_size"]


class Schedule(eqx.Module):
    """A step schedule of the DRSVM paper: ``alpha_k`` from the epoch ``k`` and the sample count
    ``n``."""

    def __call__(self, k, n):
        raise NotImplementedError


def step_size(schedule, k, n, dtype):
    """``alpha_k`` in ``dtype``: ``schedule(k, n)`` for a :class:`Schedule`, ``schedule(k)`` for
    any other callable (an optax schedule of the step count)."""
    alpha = schedule(k, n) if isinstance(schedule, Schedule) else schedule(k)
    return jnp.asarray(alpha, dtype)


class Constant(Schedule):
    """``alpha_k = alpha``."""
    alpha: float = 1e-2

    def __call__(self, k, n):
        return jnp.asarray(self.alpha, jnp.result_type(float)) + 0.0 * k


class Geometric(Schedule):
    """``alpha_k = alpha0 * rho^k`` (Thm 4.3(1), sharp problems: q in {1, inf} with c = 0, or
    q = 2 under BLR)."""
    alpha0: float = 1e-2
    rho: float = 0.965

    def __call__(self, k, n):
        k = jnp.asarray(k, jnp.result_type(float))
        return self.alpha0 * jnp.asarray(self.rho, k.dtype) ** k


class InvK(Schedule):
    """``alpha_k = gamma / (n k)`` (Thm 4.3(2), quadratic growth: c > 0; needs gamma > 1/(2 sigma))."""
    gamma: float = 1.0

    def __call__(self, k, n):
        k = jnp.maximum(jnp.asarray(k, jnp.result_type(float)), 1.0)
        return self.gamma / (n * k)


class InvSqrtK(Schedule):
    """``alpha_k = gamma / (n sqrt(k))`` (Thm 4.3(3), general convex)."""
    gamma: float = 1.0

    def __call__(self, k, n):
        k = jnp.maximum(jnp.asarray(k, jnp.result_type(float)), 1.0)
        return self.gamma / (n * jnp.sqrt(k))
