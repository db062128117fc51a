"""Baselines of the PDBFW paper (001, §5): Frank-Wolfe and accelerated projected gradient for

    min_{x in C}  F(x) = (1/n) sum_i f_i(a_i^T x) + (mu/2) ||x||^2,   C = L1Ball(r) or TraceBall(r),

built as ``ERM(X, y, loss=<smooth>, penalty=SquaredL2(mu), constraint=L1Ball(r) | TraceBall(r))``.

* :class:`FrankWolfe` (paper eq. (2); Frank & Wolfe 1956, Jaggi 2013):
  ``s = lmo(grad F(x))``, ``x <- (1 - g) x + g s`` with the short step
  ``g = clip(<grad F(x), x - s> / (L ||x - s||^2), 0, 1)`` (Demyanov-Rubinov, ``step="short"``) or
  ``g = 2 / (t + 2)`` (``step="harmonic"``). Certificate: the Frank-Wolfe gap
  ``<grad F(x), x - s> >= F(x) - F*`` and the Fenchel dual at ``f'(A x)``, whichever is tighter.
* :class:`AcceleratedPG` (Nesterov's constant-momentum scheme for ``mu``-strongly convex,
  ``L``-smooth ``F``, with an optional gradient restart, O'Donoghue & Candes 2015):
  ``x+ = P_C(y - grad F(y) / L)``, ``y+ = x+ + b (x+ - x)``, ``b = (1 - sqrt(mu/L)) / (1 + sqrt(mu/L))``.
  ``L = beta ||A||_2^2 / n + mu`` (``A.spectral_norm_sq()``). Certificate: the Fenchel dual gap at ``f'(A x)``.

Both cost ``O(nnz(A))`` per iteration (one ``A^T u`` and one ``A v``), against ``O(ns + dk)`` for
PDBFW. Projected SVRG, SCGS and STORC (the paper's other baselines) are in
:mod:`jaxprox.baselines.stochastic_cg`.
"""
from __future__ import annotations

import equinox as eqx
import jax
import jax.numpy as jnp

from .. import capabilities as cap
from ..solver import Solver
from ..solvers.block_fw import projected_gradient_residual


def _grad(problem, Ax, x):
    """``grad F(x) = A^T f'(A x) / n + mu x`` from the maintained margins ``Ax``."""
    return problem.A.rmv(problem.loss.grad(Ax, problem.y)) / problem.n + problem.penalty.lam * x


def _lipschitz(problem):
    return problem.loss.smoothness * problem.A.spectral_norm_sq() / problem.n + problem.penalty.lam


def _start(problem, init):
    """Feasible start: ``0`` or the projection of ``init`` onto ``C``."""
    return problem.zeros() if init is None else problem.constraint.project(jnp.asarray(init, problem.A.dtype))


class ConstrainedBaseline(Solver):
    """Shared outputs of the the PD block Frank-Wolfe paper baselines: ``params(state) = state.x``, the Fenchel duality
    gap of ``ERM.best_certificate`` at it, and the projected-gradient residual (implicit diff).
    They solve the problems of :class:`jaxprox.PDBlockFW` and declare the same requirements."""

    requires = (cap.ERM_PROBLEM, cap.SMOOTH_LOSS, cap.RIDGE, cap.L1_OR_TRACE_BALL)

    def certificate(self, problem, st):
        return problem.best_certificate(self.params(st))

    def params(self, st):
        return st.x

    def residual(self, problem, x):
        return projected_gradient_residual(problem, x)


class FWState(eqx.Module):
    x: jax.Array
    Ax: jax.Array
    L: jax.Array
    fw_gap: jax.Array
    t: jax.Array


class FrankWolfe(ConstrainedBaseline):
    """Frank-Wolfe (conditional gradient) over ``problem.constraint``; see the module docstring.

    Args:
        step: ``"short"`` (Demyanov-Rubinov short step with ``L``) or ``"harmonic"`` (``2/(t+2)``).
    """

    step_rule: str = eqx.field(static=True, default="short")

    def init(self, problem, init=None):
        if self.step_rule not in ("short", "harmonic"):
            raise ValueError(f"step_rule must be 'short' or 'harmonic', got {self.step_rule!r}")
        x = _start(problem, init)
        Ax = problem.A.mv(x)
        inf = jnp.asarray(jnp.inf, x.dtype)
        return FWState(x, Ax, _lipschitz(problem), inf, jnp.zeros((), jnp.int32))

    def step(self, problem, st: FWState) -> FWState:
        g = _grad(problem, st.Ax, st.x)
        s = problem.constraint.lmo(g)
        dvec = s - st.x
        gap = -jnp.vdot(g, dvec)
        if self.step_rule == "short":
            dd = jnp.vdot(dvec, dvec)
            gam = jnp.clip(gap / jnp.where(dd > 0, st.L * dd, 1.0), 0.0, 1.0)
        else:
            gam = 2.0 / (st.t.astype(st.x.dtype) + 2.0)
        x = st.x + gam * dvec
        Ax = st.Ax + gam * (problem.A.mv(s) - st.Ax)
        return FWState(x, Ax, st.L, gap, st.t + 1)

    def certificate(self, problem, st: FWState):
        p, d, _ = problem.best_certificate(st.x)
        # FW gap at the current point (recomputed: the stored one belongs to the previous iterate)
        g = _grad(problem, problem.A.mv(st.x), st.x)
        fw = jnp.vdot(g, st.x - problem.constraint.lmo(g))
        d = jnp.maximum(d, p - fw)
        return p, d, p - d


class APGState(eqx.Module):
    x: jax.Array
    y: jax.Array
    Ax: jax.Array
    Ay: jax.Array
    L: jax.Array
    t: jax.Array


class AcceleratedPG(ConstrainedBaseline):
    """Accelerated projected gradient for strongly convex smooth ``F`` over ``C`` (module docstring).

    Args:
        momentum_reset: reset the momentum when ``<y - x+, x+ - x> > 0`` (gradient restart).
        L: Lipschitz constant of ``grad F`` (default: ``beta ||A||^2/n + mu``, ``A.spectral_norm_sq()``).
    """

    momentum_reset: bool = eqx.field(static=True, default=True)
    L: float | None = None

    def init(self, problem, init=None):
        x = _start(problem, init)
        Ax = problem.A.mv(x)
        L = _lipschitz(problem) if self.L is None else jnp.asarray(self.L, x.dtype)
        return APGState(x, x, Ax, Ax, L, jnp.zeros((), jnp.int32))

    def step(self, problem, st: APGState) -> APGState:
        mu = problem.penalty.lam
        g = _grad(problem, st.Ay, st.y)
        x = problem.constraint.project(st.y - g / st.L)
        Ax = problem.A.mv(x)
        q = jnp.sqrt(mu / st.L)
        b = (1.0 - q) / (1.0 + q)
        if self.momentum_reset:
            b = jnp.where(jnp.vdot(st.y - x, x - st.x) > 0, 0.0, b)
        y = x + b * (x - st.x)
        Ay = Ax + b * (Ax - st.Ax)
        return APGState(x, y, Ax, Ay, st.L, st.t + 1)
