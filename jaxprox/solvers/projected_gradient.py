"""Projected gradient for a smooth ERM over a norm ball.

Problem (:class:`jaxprox.ERM` with a smooth loss, an optional ridge and a norm-ball constraint):

    min_{w in C} F(w),    F(w) = (1/n) sum_i l(a_i^T w, y_i) + (lam/2) ||w||^2,
    C = {w : ||w|| <= r}  (jp.constraints.L1Ball, L2Ball, LinfBall; TraceBall for a matrix model).

One step is the projected gradient step with the constant step ``1/L``,

    w_{k+1} = P_C(w_k - grad F(w_k) / L),        L = rho ||A||_2^2 / n + lam,

``L`` the Lipschitz constant of ``grad F`` (:meth:`ERM.smoothness <jaxprox.ERM.smoothness>`, the
loss's curvature bound ``rho`` times the squared spectral norm, plus the ridge). ``F(w_k) - F* =
O(L ||w_0 - w*||^2 / k)``, and ``(1 - lam / L)^k`` linear convergence with a ridge (Beck, "First-Order
Methods in Optimization", SIAM 2017, section 10.2 with ``g`` the indicator of ``C``: Theorems 10.21
and 10.29). The step is loop free (no line search), so ``jit``, ``vmap`` and the unrolled adjoint
apply as they are.

Certificate: the Fenchel duality gap of the ERM at ``w_k`` (:meth:`ERM.certificate
<jaxprox.ERM.certificate>`: the dual point ``u = l'(A w_k)``, the conjugate of the ridge plus the
ball's indicator, i.e. the ball's support function ``r ||A^T u / n||_*`` without a ridge), the
certificate of FISTA and the block Frank-Wolfe method on these problems; it bounds ``F(w_k) - F*``.
Derivatives are implicit, through the prox-gradient residual ``w - P_C((w - eta grad risk(w)) /
(1 + eta lam))``, zero exactly at the minimiser (the :class:`~jaxprox.solver.Solver` default).
"""
from __future__ import annotations

import equinox as eqx
import jax
import jax.numpy as jnp

from .. import capabilities as cap
from ..constraints import NormBall
from ..solver import Solver

__all__ = ["ProjectedGradient", "NORM_BALL"]


def _norm_ball(problem) -> bool:
    c = problem.constraint
    return isinstance(c, NormBall) and (c.norm == "trace") == (problem.n_outputs is not None)


NORM_BALL = cap.Requirement("constraint=L1Ball(r), L2Ball(r) or LinfBall(r) with a vector model, or TraceBall(r) "
                            "with a matrix model", lambda p: cap.ERM_PROBLEM(p) and _norm_ball(p))


class ProjectedGradientState(eqx.Module):
    w: jax.Array
    step: jax.Array  # 1 / L


class ProjectedGradient(Solver):
    """Projected gradient ``w <- P_C(w - grad F(w) / L)`` for a smooth loss with an optional ridge
    over a norm ball (module docstring; Beck, "First-Order Methods in Optimization", section 10.2).

    Args:
        L: the Lipschitz constant of ``grad F`` (default ``rho ||A||_2^2 / n + lam`` from the data).
        max_steps: iterations (default 20,000).
    """

    requires = (cap.ERM_PROBLEM, cap.SMOOTH_LOSS, cap.RIDGE_OR_NONE, NORM_BALL)
    option_ranges = {"L": "> 0"}

    L: float | None = None
    max_steps: int = eqx.field(static=True, default=20_000, kw_only=True)

    def init(self, problem, init=None):
        w = problem.zeros() if init is None else jnp.asarray(init, problem.A.dtype).reshape(problem.param_shape)
        lam = jnp.zeros((), w.dtype) if problem.penalty is None else problem.penalty.lam
        L = problem.smoothness() + lam if self.L is None else jnp.asarray(self.L, w.dtype)
        return ProjectedGradientState(problem.constraint.project(w), 1.0 / jnp.maximum(L, jnp.finfo(w.dtype).tiny))

    def step(self, problem, s: ProjectedGradientState) -> ProjectedGradientState:
        grad = problem.smooth_grad(s.w) + (0.0 if problem.penalty is None else problem.penalty.lam * s.w)
        return ProjectedGradientState(problem.constraint.project(s.w - s.step * grad), s.step)

    def certificate(self, problem, s: ProjectedGradientState):
        return problem.certificate(s.w)

    def params(self, s: ProjectedGradientState):
        return s.w
