"""Regression losses (absolute, Huber, epsilon-insensitive, quantile, squared, multi-output l2)
with their conjugates (see :mod:`jaxprox.losses`)."""
from __future__ import annotations

from typing import ClassVar

import equinox as eqx
import jax.numpy as jnp
import numpy as np

from jaxprox.base import Array, as_leaf

from ._common import _check_finite, _concrete, _inside, _Loss, _per_row, _positive, _restrict, _safe_row_norm


# --------------------------------------------------------------------------------------------
# regression
# --------------------------------------------------------------------------------------------
class Absolute(_Loss):
    """Absolute loss ``|z - y|`` (Pdprox section 1.5): ``l*(u, y) = y u`` on ``|u| <= 1``;
    ``prox_{step l*}(u) = clip(u - step y, -1, 1)``."""

    def value(self, z, y):
        return jnp.abs(z - y)

    def conjugate(self, u, y):
        return _restrict(_inside(u, -1.0, 1.0), y * u)

    def project_dual(self, u, y):
        return jnp.clip(u, -1.0, 1.0)

    def prox_conjugate(self, u, y, step):
        return jnp.clip(u - step * y, -1.0, 1.0)

    def dual_point(self, z, y):
        return jnp.sign(z - y)

    @property
    def lipschitz(self):
        return 1.0

    def check_labels(self, y):
        _check_finite(self, y)

    def smoothed(self, mu):
        """Nesterov smoothing of ``|r|``: :class:`Huber` ``(mu)``."""
        return Huber(mu)


class Huber(_Loss):
    """Huber loss, the Nesterov smoothing of the absolute loss (Zhang et al., AGM-EF):

        l(z, y) = max_{|u| <= 1} u r - mu u^2 / 2 = r^2 / (2 mu) (|r| <= mu), |r| - mu/2 otherwise,

    ``r = z - y``. ``l*(u, y) = y u + mu u^2 / 2`` on ``|u| <= 1``; gradient ``clip(r / mu, -1, 1)``;
    ``prox_{step l*}(u) = clip((u - step y) / (1 + step mu), -1, 1)``. Requires ``mu > 0``.
    """

    mu: Array
    flat_outside_band: ClassVar[bool] = True
    smooth: bool = eqx.field(static=True, default=True, kw_only=True)

    def __init__(self, mu=1.0):
        self.mu = _positive(mu, "mu")

    def value(self, z, y):
        r = z - y
        u = jnp.clip(r / self.mu, -1.0, 1.0)
        return u * (r - 0.5 * self.mu * u)

    def grad(self, z, y):
        return jnp.clip((z - y) / self.mu, -1.0, 1.0)

    def conjugate(self, u, y):
        return _restrict(_inside(u, -1.0, 1.0), y * u + 0.5 * self.mu * u * u)

    def project_dual(self, u, y):
        return jnp.clip(u, -1.0, 1.0)

    def prox_conjugate(self, u, y, step):
        return jnp.clip((u - step * y) / (1.0 + step * self.mu), -1.0, 1.0)

    @property
    def lipschitz(self):
        return 1.0

    @property
    def smoothness(self):
        return 1.0 / self.mu

    def check_labels(self, y):
        _check_finite(self, y)


class EpsilonInsensitive(_Loss):
    """epsilon-insensitive loss ``max(|z - y| - eps, 0)`` (Pdprox section 1.5; the paper's two
    box variables give ``u = alpha_1 - alpha_2``): ``l*(u, y) = y u + eps |u|`` on ``|u| <= 1``;
    ``prox_{step l*}(u) = clip(soft_threshold(u - step y, step eps), -1, 1)``."""

    eps: Array

    def __init__(self, eps=0.1):
        self.eps = as_leaf(eps, "eps")

    def value(self, z, y):
        return jnp.maximum(jnp.abs(z - y) - self.eps, 0.0)

    def conjugate(self, u, y):
        return _restrict(_inside(u, -1.0, 1.0), y * u + self.eps * jnp.abs(u))

    def project_dual(self, u, y):
        return jnp.clip(u, -1.0, 1.0)

    def prox_conjugate(self, u, y, step):
        v = u - step * y
        return jnp.clip(v - jnp.clip(v, -step * self.eps, step * self.eps), -1.0, 1.0)

    def dual_point(self, z, y):
        """``sign(r) 1[|r| > eps]``, ``r = z - y``."""
        r = z - y
        return jnp.sign(r) * (jnp.abs(r) > self.eps).astype(r.dtype)

    @property
    def lipschitz(self):
        return 1.0

    def check_labels(self, y):
        _check_finite(self, y)


class Quantile(_Loss):
    """Quantile (pinball) loss ``tau (y - z)_+ + (1 - tau) (z - y)_+``, ``tau in [0, 1]`` (Pdprox
    section 1.5 with ``a = tau``; sklearn ``QuantileRegressor(quantile=tau)``).
    ``l*(u, y) = y u`` on ``u in [-tau, 1 - tau]``; ``prox_{step l*}(u) = clip(u - step y, -tau, 1 - tau)``."""

    tau: Array

    def __init__(self, tau=0.5):
        self.tau = as_leaf(tau, "tau")
        if _concrete(self.tau) and np.any(np.asarray(self.tau) > 1):
            raise ValueError(f"Quantile needs tau in [0, 1], got tau={tau!r}")

    def value(self, z, y):
        r = z - y
        return jnp.maximum((1.0 - self.tau) * r, -self.tau * r)

    def conjugate(self, u, y):
        return _restrict(_inside(u, -self.tau, 1.0 - self.tau), y * u)

    def project_dual(self, u, y):
        return jnp.clip(u, -self.tau, 1.0 - self.tau)

    def prox_conjugate(self, u, y, step):
        return jnp.clip(u - step * y, -self.tau, 1.0 - self.tau)

    def dual_point(self, z, y):
        r = z - y
        return jnp.where(r > 0, 1.0 - self.tau, jnp.where(r < 0, -self.tau, 0.0))

    @property
    def lipschitz(self):
        return jnp.maximum(self.tau, 1.0 - self.tau)

    def check_labels(self, y):
        _check_finite(self, y)


class Squared(_Loss):
    """Squared loss ``(z - y)^2 / 2`` (Frostig et al., "Un-regularizing"): ``l*(u, y) = u^2/2 + y u``
    on ``R``; ``prox_{step l*}(u) = (u - step y) / (1 + step)``. 1-smooth."""

    family = "squared"

    smooth: bool = eqx.field(static=True, default=True, kw_only=True)

    def value(self, z, y):
        r = z - y
        return 0.5 * r * r

    def grad(self, z, y):
        return z - y

    def conjugate(self, u, y):
        return 0.5 * u * u + y * u

    def project_dual(self, u, y):
        return u

    def prox_conjugate(self, u, y, step):
        return (u - step * y) / (1.0 + step)

    @property
    def smoothness(self):
        return 1.0

    def check_labels(self, y):
        _check_finite(self, y)


class MultiOutputL2(_Loss):
    """Multi-output l2 loss ``||z_i - y_i||_2`` on rows of ``(n, K)`` margins and labels (Nie et
    al.; Pdprox section 1.5): ``l*(u_i, y_i) = <u_i, y_i>`` on ``||u_i||_2 <= 1``;
    ``prox_{step l*}(u) = P_ball(u - step y)`` row-wise. Values have shape ``(n,)``."""

    _rows: ClassVar[bool] = True

    def value(self, z, y):
        return _safe_row_norm(z - y)

    def conjugate(self, u, y):
        return _restrict(_inside(_safe_row_norm(u), 0.0, 1.0), jnp.sum(u * y, axis=-1))

    def project_dual(self, u, y):
        nrm = _safe_row_norm(u)
        big = nrm > 1.0
        return u * jnp.where(big, 1.0 / jnp.where(big, nrm, 1.0), 1.0)[..., None]

    def prox_conjugate(self, u, y, step):
        """``step``: a scalar or one value per row (shape ``(n,)``)."""
        return self.project_dual(u - _per_row(step, u) * y, y)

    def dual_point(self, z, y):
        """``r / ||r||`` with ``r = z_i - y_i`` (0 when ``r = 0``)."""
        r = z - y
        nrm = _safe_row_norm(r)
        pos = nrm > 0
        return r * jnp.where(pos, 1.0 / jnp.where(pos, nrm, 1.0), 0.0)[..., None]

    @property
    def lipschitz(self):
        return 1.0

    def check_labels(self, y):
        _check_finite(self, y, ndim=2)
