"""Restart schemes of restarted primal-dual methods: a component passed as ``restart=`` to
:class:`jaxprox.PDProx` and :class:`jaxprox.DRSVMPDHG` (``None``: never restart).

A restarted primal-dual method runs its iteration from an *anchor* ``z^0``, proposes a candidate
``z_c`` (the running average, the last iterate, or a Halpern iterate), and at a *restart* makes
the candidate the new anchor. On sharp saddle problems (LPs, piecewise-linear-quadratic problems)
restarting turns the O(1/T) rate of the averaged iterate into a linear rate (Applegate, Hinder, Lu
& Lubin 2023, "Faster first-order primal-dual methods for linear programming using restarts and
sharpness").

* :class:`AdaptiveRestart` -- PDLP's adaptive scheme (Applegate et al. 2021, "Practical
  large-scale linear programming using primal-dual hybrid gradient", section 3.2; the thresholds
  of Lu & Yang 2024, "Restarted Halpern PDHG for linear programming"). With ``r`` the
  fixed-point residual of the candidate, ``r0`` that at the anchor and ``r_prev`` that of the
  previous test, restart when

      r <= beta_sufficient r0                          (sufficient decay), or
      r <= beta_necessary r0  and  r > r_prev          (necessary decay, no progress), or
      t >= beta_artificial k                           (artificial: t steps since the anchor,
                                                        k in all),

  tested every ``check_every`` steps; at a restart the primal weight ``omega`` (the ratio of the
  dual to the primal step, ``tau = eta / omega``, ``sigma = eta omega``) moves halfway in log
  scale towards the ratio of the anchors' moves:

      omega <- exp(1/2 log(||dy|| / ||dx||) + 1/2 log omega),

  kept within a factor ``omega_range`` of its initial value (``inf``: PDLP's unclamped update).
* :class:`FixedRestart` -- restart every ``every`` steps, primal weight fixed.

A scheme is pure configuration; the solver owns the residuals and counters and asks the scheme
``is_check(k)``, ``should_restart(...)`` and ``primal_weight(...)``. ``uses_residual`` declares
whether the test reads the residuals (so a solver computes them only when needed).
"""
from __future__ import annotations

import abc
from typing import ClassVar

import equinox as eqx
import jax.numpy as jnp

__all__ = ["AdaptiveRestart", "FixedRestart", "RestartScheme"]


class RestartScheme(eqx.Module):
    """When a restarted primal-dual method moves its anchor, and how its primal weight adapts."""

    #: whether :meth:`should_restart` reads the fixed-point residuals
    uses_residual: ClassVar[bool] = False

    @abc.abstractmethod
    def is_check(self, k):
        """Whether step ``k`` (steps in all) is a restart test."""

    @abc.abstractmethod
    def should_restart(self, r, r0, r_prev, t, k):
        """At a test: restart from the candidate (residual ``r``; ``r0`` at the anchor, ``r_prev``
        at the previous test; ``t`` steps since the anchor, ``k`` in all)?"""

    def primal_weight(self, omega, dx, dy, omega_init):
        """The primal weight after a restart whose anchors moved by ``dx`` (primal) and ``dy``
        (dual). Default: unchanged."""
        return omega


class AdaptiveRestart(RestartScheme):
    """PDLP's adaptive restart and primal-weight update (module docstring; Applegate et al. 2021,
    "Practical large-scale linear programming using primal-dual hybrid gradient"; Lu & Yang 2024,
    "Restarted Halpern PDHG for linear programming").

    Args:
        beta_sufficient, beta_necessary, beta_artificial: the three restart thresholds (PDLP:
            0.2, 0.8, 0.36).
        check_every: steps between restart tests (PDLP: 64; 1 tests at every step).
        omega_range: the primal weight stays in ``[omega_0 / omega_range, omega_0 * omega_range]``
            (``inf``: PDLP's unclamped update).
    """

    uses_residual: ClassVar[bool] = True

    beta_sufficient: float = 0.2
    beta_necessary: float = 0.8
    beta_artificial: float = 0.36
    check_every: int = eqx.field(static=True, default=64)
    omega_range: float = float("inf")

    def __check_init__(self):
        if not 0.0 < self.beta_sufficient <= self.beta_necessary <= 1.0:
            raise ValueError("need 0 < beta_sufficient <= beta_necessary <= 1, got "
                             f"{self.beta_sufficient}, {self.beta_necessary}")
        if not 0.0 < self.beta_artificial <= 1.0:
            raise ValueError(f"need 0 < beta_artificial <= 1, got {self.beta_artificial}")
        if not int(self.check_every) >= 1:
            raise ValueError(f"check_every must be a positive number of steps, got {self.check_every!r}")
        if not self.omega_range >= 1.0:
            raise ValueError(f"omega_range must be >= 1, got {self.omega_range!r}")

    def is_check(self, k):
        return k % self.check_every == 0

    def should_restart(self, r, r0, r_prev, t, k):
        """Sufficient decay, or necessary decay without progress, or an artificial restart."""
        return ((r <= self.beta_sufficient * r0)
                | ((r <= self.beta_necessary * r0) & (r > r_prev))
                | (t >= self.beta_artificial * k))

    def primal_weight(self, omega, dx, dy, omega_init):
        """``omega <- sqrt(omega ||dy|| / ||dx||)`` (halfway in log scale), clamped to
        ``omega_init * [1/omega_range, omega_range]``; unchanged when an anchor did not move."""
        ok = (dx > 1e-10) & (dy > 1e-10)
        new = jnp.sqrt(omega * jnp.where(ok, dy, 1.0) / jnp.where(ok, dx, 1.0))
        new = jnp.clip(new, omega_init / self.omega_range, omega_init * self.omega_range)
        return jnp.where(ok, new, omega)


class FixedRestart(RestartScheme):
    """Restart every ``every`` steps (primal weight fixed)."""

    every: int = eqx.field(static=True)

    def __check_init__(self):
        if not int(self.every) >= 1:
            raise ValueError(f"every must be a positive number of steps, got {self.every!r}")

    def is_check(self, k):
        return k % self.every == 0

    def should_restart(self, r, r0, r_prev, t, k):
        return jnp.ones((), bool)
