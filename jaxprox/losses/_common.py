"""Shared pieces of the losses: domain tests with a slack of a few ulps, guarded row norms, label
checks, the common base :class:`_Loss` and Nesterov's smoothing of any loss,
:class:`NesterovSmoothed` (see :mod:`jaxprox.losses`)."""
from __future__ import annotations

from typing import ClassVar

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from jaxprox.base import Array, Loss, as_leaf


# --------------------------------------------------------------------------------------------
# helpers
# --------------------------------------------------------------------------------------------
def _slack(x, scale=1.0):
    """Rounding slack used for domain tests: ``64 eps (1 + |scale|)``."""
    dt = jnp.result_type(x, float)
    return 64 * jnp.finfo(dt).eps * (1.0 + jnp.abs(scale))


def _inside(s, lo, hi):
    """``lo <= s <= hi`` up to rounding slack (``hi = inf`` allowed)."""
    return (s >= lo - _slack(s, lo)) & (s <= hi + _slack(s, jnp.where(jnp.isfinite(hi), hi, 0.0)))


def _restrict(inside, val):
    """``val`` on the domain, ``+inf`` off it."""
    return jnp.where(inside, val, jnp.inf)


def _safe_row_norm(r):
    """Row norms ``||r_i||_2`` with a finite derivative at 0 (double ``where``)."""
    sq = jnp.sum(r * r, axis=-1)
    pos = sq > 0
    return jnp.where(pos, jnp.sqrt(jnp.where(pos, sq, 1.0)), 0.0)


def _per_row(step, u):
    """Broadcast a scalar or per-row ``(n,)`` step against ``(n, K)`` rows."""
    step = jnp.asarray(step)
    return step[..., None] if step.ndim == u.ndim - 1 else step


def _concrete(x) -> bool:
    return not isinstance(x, jax.core.Tracer)


def _positive(x, name):
    """``as_leaf`` that also rejects 0 (smoothing widths are divided by)."""
    leaf = as_leaf(x, name)
    if _concrete(leaf) and np.any(np.asarray(leaf) <= 0):
        raise ValueError(f"{name} must be positive, got {x!r}")
    return leaf


def _describe(bad):
    vals = np.unique(bad)
    shown = ", ".join(repr(v.item()) for v in vals[:5])
    return shown + (f", ... ({vals.size} distinct)" if vals.size > 5 else "")


def _check_pm1(loss, y):
    if not _concrete(y):
        return
    a = np.asarray(y)
    bad = a[(a != 1) & (a != -1)]
    if bad.size:
        hint = ""
        if np.unique(a).size == 2:
            hint = ("; map two classes with y = jp.datasets.map_binary_labels(y) (the smaller value to -1), "
                    "or fit a jaxprox.sklearn estimator, which takes labels of any two values")
        raise ValueError(f"{type(loss).__name__} needs labels in {{-1, +1}}; got {_describe(bad)}{hint}")


def _check_finite(loss, y, ndim=None):
    if not _concrete(y):
        return
    a = np.asarray(y)
    if ndim is not None and a.ndim != ndim:
        raise ValueError(f"{type(loss).__name__} needs labels with {ndim} dimension(s), got shape {a.shape}")
    if not np.all(np.isfinite(a)):
        raise ValueError(f"{type(loss).__name__} needs finite labels; got {_describe(a[~np.isfinite(a)])}")


# --------------------------------------------------------------------------------------------
# common base
# --------------------------------------------------------------------------------------------
class _Loss(Loss):
    """Shared pieces: the pairing ``<u, z>`` per sample and Nesterov smoothing."""

    _rows: ClassVar[bool] = False  # True: samples are rows of (n, K) arrays

    def _pair(self, u, z):
        """Per-sample ``<u_i, z_i>``."""
        return jnp.sum(u * z, axis=-1) if self._rows else u * z

    def _sq(self, u):
        """Per-sample ``||u_i||^2``."""
        return jnp.sum(u * u, axis=-1) if self._rows else u * u

    def dual_point(self, z, y):
        """For smooth losses the subgradient is the gradient (``u = l'(z)`` attains Fenchel-Young);
        non-smooth losses override this."""
        return self.grad(z, y)

    def smoothed(self, mu) -> Loss:
        """Nesterov smoothing ``l_mu(z) = sup_u u z - l*(u) - mu/2 |u|^2`` (Zhang et al., AGM-EF,
        eq. (53)), i.e. the Moreau envelope ``min_w l(w) + |z - w|^2 / (2 mu)``; ``(1/mu)``-smooth and
        within ``mu/2 max_{dom} |u|^2`` of ``l``."""
        return NesterovSmoothed(self, mu)


# --------------------------------------------------------------------------------------------
# generic smoothing
# --------------------------------------------------------------------------------------------
class NesterovSmoothed(_Loss):
    """Nesterov smoothing of any loss of this module (Zhang et al., AGM-EF, eq. (53)):

        l_mu(z, y) = sup_u  <u, z> - l*(u, y) - mu/2 |u|^2 = min_w l(w, y) + |z - w|^2 / (2 mu),

    with maximiser (= gradient) ``u* = prox_{l*/mu}(z / mu)`` and conjugate
    ``l_mu* = l* + mu/2 |.|^2``, so ``prox_{step l_mu*}(u) = prox_{step' l*}(u / (1 + step mu))``
    with ``step' = step / (1 + step mu)``. ``(1/mu)``-smooth. For :class:`BudgetHinge` the same
    formulas hold for the whole vector (``value`` gives per-sample contributions).
    """

    loss: Loss
    mu: Array
    smooth: bool = eqx.field(static=True, default=True, kw_only=True)

    def __init__(self, loss, mu=1.0):
        if not isinstance(loss, _Loss):
            raise TypeError(f"NesterovSmoothed needs a jaxprox.losses loss, got {type(loss).__name__}")
        self.loss = loss
        self.mu = _positive(mu, "mu")

    def _pair(self, u, z):
        return self.loss._pair(u, z)

    def _sq(self, u):
        return self.loss._sq(u)

    def grad(self, z, y):
        return self.loss.prox_conjugate(z / self.mu, y, 1.0 / self.mu)

    def value(self, z, y):
        u = self.grad(z, y)
        return self._pair(u, z) - self.loss.conjugate(u, y) - 0.5 * self.mu * self._sq(u)

    def conjugate(self, u, y):
        return self.loss.conjugate(u, y) + 0.5 * self.mu * self._sq(u)

    def project_dual(self, u, y):
        return self.loss.project_dual(u, y)

    def prox_conjugate(self, u, y, step):
        c = 1.0 + jnp.asarray(step) * self.mu
        cu = _per_row(c, u) if self.loss._rows else c
        return self.loss.prox_conjugate(u / cu, y, step / c)

    @property
    def lipschitz(self):
        return self.loss.lipschitz

    @property
    def smoothness(self):
        return 1.0 / self.mu

    def check_labels(self, y):
        self.loss.check_labels(y)
