"""An honest upper bound on ``F(w) - F*`` for un- or lightly regularised smooth ERM, the
certificate of the proximal-point and variance-reduced solvers (APPA, Dual APPA, SVRG, SGD).

For these problems there is generally no finite duality gap; :func:`suboptimality_bound` gives
the smaller of the duality gap (finite when ``lam0 > 0``) and a curvature bound
``||grad F(w)||^2 e^{R r} / (2 mu_H)`` with ``mu_H = lambda_min(hess F(w))``, valid for the squared
loss (``r = 0``) and for the logistic loss on the ball of radius ``r`` around ``w`` that provably
contains the minimiser (:func:`jaxprox.problems.erm.curvature_bound`); ``+inf`` when no such
``r`` is certified or for other losses. So ``converged`` means ``F(w) - F* <= atol + tol |F(w)|``,
a true statement.
"""
from __future__ import annotations

import jax
import jax.numpy as jnp
from jax import lax

from ..problems.erm import curvature_bound


def ridge_strength(problem, diagonal: bool = False):
    """Strength of the problem's own ``SquaredL2`` penalty (0 without a penalty); with ``diagonal``,
    also the per-coordinate strengths ``lam c^2`` of a column-scaled ridge
    (:attr:`jaxprox.base.Penalty.ridge_diagonal`: APPA around SVRG, whose inner prox is
    coordinate-wise, solves the rescaled problem)."""
    if problem.constraint is not None:
        raise ValueError("SDCA / APPA / Dual APPA do not support constraints")
    if problem.penalty is None:
        return jnp.zeros((), problem.A.dtype)
    if diagonal and problem.penalty.ridge_diagonal is not None:
        return jnp.asarray(problem.penalty.ridge_diagonal, problem.A.dtype)
    if not problem.penalty.quadratic:
        raise ValueError(f"this solver needs penalty=None or SquaredL2, got {type(problem.penalty).__name__}")
    return jnp.asarray(problem.penalty.lam, problem.A.dtype)


def check_smooth(problem, who):
    """A ``ValueError`` unless the problem's loss is smooth (``who``: the solver, for the message)."""
    if not problem.loss.smooth:
        raise ValueError(f"{who} needs a smooth loss; {type(problem.loss).__name__} is not")


def suboptimality_bound(problem, w, mu=None, duals=()):
    """An honest upper bound on ``P(w) - inf P`` for (un- or lightly) regularised ERM.

    ``min`` of (i) the duality gap ``problem.best_certificate(w, *duals)`` (the dual points
    ``duals``, e.g. a method's running duals, scored with ``w``'s own in one product) when the
    problem has a ``SquaredL2`` penalty with ``lam0 > 0`` (+inf otherwise), (ii) the curvature bound
    :func:`jaxprox.problems.erm.curvature_bound` (squared and logistic losses; +inf for the
    others), and (iii) ``||g||^2 / (2 mu)`` if the user supplies a strong-convexity modulus ``mu``
    (an assumption the user is responsible for). For a non-smooth loss (the hinge) only (i).

    Cost: one pass for ``g`` and the eigenproblem of (ii); for ``d > n`` with ``lam0 > 0`` no
    eigenproblem: the Hessian's smallest eigenvalue is then ``lam0`` (attained on ``null(A)``),
    so (ii) is ``||g||^2 / (2 lam0)``, and a check costs one pass.
    """
    dt = problem.A.dtype
    inf = jnp.asarray(jnp.inf, dt)
    lam0 = ridge_strength(problem, diagonal=True)  # a vector for a column-scaled ridge (APPA)
    kind = problem.loss.family
    bounds = []
    if problem.penalty is not None:
        gap = problem.best_certificate(w, *duals)[2]
        bounds.append(jnp.where(jnp.all(lam0 > 0), jnp.maximum(gap, 0.0), inf))
    if not problem.loss.smooth:  # hinge (Dual APPA): only the duality gap
        return bounds[0] if bounds else inf
    z = problem.A.mv(w)
    g = problem.A.rmv(problem.loss.grad(z, problem.y)) / problem.n + lam0 * w
    gn = jnp.linalg.norm(g)
    if kind in ("squared", "logistic"):
        if problem.d > problem.n:
            # H = A^T D A / n + diag(lam0) equals diag(lam0) on null(A) (dimension >= d - n), so
            # its smallest eigenvalue is min(lam0) when that is positive: no d x d eigenproblem;
            # with lam0 = 0 the n x n Gram matrix has the Hessian's positive eigenvalues
            m = jnp.min(lam0)
            cheap = lambda: gn**2 / (2.0 * jnp.where(m > 0, m, 1.0))  # noqa: E731
            bounds.append(lax.cond(m > 0, cheap, lambda: curvature_bound(problem, z, g)))
        else:
            bounds.append(curvature_bound(problem, z, g, lam0))
    if mu is not None:
        bounds.append(gn**2 / (2.0 * jnp.asarray(mu, dt)))
    if not bounds:
        return inf
    return jnp.min(jnp.stack(bounds))


def outer_certificate(problem, w, mu=None, duals=()):
    """``(F(w), F(w) - b, b)`` with ``b`` :func:`suboptimality_bound`: the certificate of APPA,
    Dual APPA, SVRG without a penalty and SGD."""
    # full-precision products, as the certificate's dual pieces take them (the precision policy of
    # :mod:`jaxprox.problems.erm`): no TF32 in the curvature bound on a GPU, and the same
    # products as ``problem.certificate``'s, which XLA then computes once
    with jax.default_matmul_precision("highest"):
        p = problem.objective(w)
        b = suboptimality_bound(problem, w, mu, duals)
    return p, p - b, b
