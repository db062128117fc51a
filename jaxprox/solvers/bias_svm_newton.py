"""The SVM with an unpenalised bias (``jp.BiasSVM``, ``penalty="l2"``) by the smoothing Newton
continuation of :mod:`jaxprox.solvers.svm_newton` on ``z = (w, b + m^T w)`` and the centred data
``[X - 1 m^T, 1]``, ``lam`` per coordinate (0 for the bias) and the dual point brought into
``{y^T s = 0}`` (:func:`bias_project`)."""
from __future__ import annotations

from typing import NamedTuple

import equinox as eqx
import jax
import jax.numpy as jnp

from .. import capabilities as cap
from ..operators import LinearOperator
from ..problems.bias_svm import q2_feasible
from .agm import AGMSolution
from .svm_newton import Ridge, State, _SmoothingNewton


class CentredWithOnes(LinearOperator):
    """``[A - 1 m^T, 1]``: the data with their columns centred by ``m`` and a column of ones
    appended, the operator of :class:`BiasSVMNewton` on ``z = (w, c)``, ``c = b + m^T w``
    (the same margins ``A w + b``). With ``m`` the column means the ones column is orthogonal to
    the others: the bias no longer leans on columns with large means (on wine, whose columns
    range to 1680, the uncentred ``[A, 1]`` took hundreds of Newton steps)."""

    A: LinearOperator
    m: jax.Array

    @property
    def shape(self):
        return self.A.shape[0], self.A.shape[1] + 1

    @property
    def dtype(self):
        return self.A.dtype

    def mv(self, z):
        return self.A.mv(z[:-1]) + (z[-1] - self.m @ z[:-1])

    def rmv(self, u):
        total = jnp.sum(u)
        return jnp.concatenate([self.A.rmv(u) - self.m * total, total[None]])

    def rows(self, idx):
        return CentredWithOnes(self.A.rows(idx), self.m)

    def todense(self):
        X = self.A.todense()
        return jnp.concatenate([X - self.m, jnp.ones((X.shape[0], 1), X.dtype)], axis=1)

    def squared(self):
        return _CentredSquared(self.A, self.A.squared(), self.m)


class _CentredSquared(eqx.Module):
    """The squared entries of :class:`CentredWithOnes` for ``rmv`` only (the diagonal of its
    weighted Gram, :func:`newton_direction`): ``sum_i u_i (a_ij - m_j)^2`` and ``sum_i u_i``."""

    A: LinearOperator
    A2: LinearOperator
    m: jax.Array

    def rmv(self, u):
        total = jnp.sum(u)
        return jnp.concatenate([self.A2.rmv(u) - 2.0 * self.m * self.A.rmv(u) + self.m**2 * total, total[None]])


def bias_project(y, s):
    """A point of the domain ``s in [0, 1]^n``, ``y^T s = 0`` of the dual of the SVM with a bias,
    at or next to ``s``: :func:`jaxprox.problems.bias_svm.q2_feasible` (the heavier class scaled
    down), exact at the smoothed problem's optimum, where ``y^T s = 0`` is the bias's stationarity."""
    n = s.shape[0]
    return n * q2_feasible(s / n, y, n)


class BiasSVMNewtonState(NamedTuple):
    newton: State           # on z = (w, b + m^T w)
    perm: jax.Array | None  # the random order of the rows of the Hessian sample (None: all rows)
    m: jax.Array            # the column means of X (CentredWithOnes), computed once


class BiasSVMNewton(_SmoothingNewton):
    """The SVM with an unpenalised bias, ``jp.BiasSVM(X, y, lam)`` (``penalty="l2"``),

        min_{w, b} (1/n) sum_i max(0, 1 - y_i (x_i^T w + b)) + (lam/2) ||w||^2,

    by the smoothing Newton continuation of :class:`SVMNewton` on ``z = (w, b)`` and the data
    ``[X - 1 m^T, 1]`` (columns centred by their means ``m``, ``z = (w, b + m^T w)``: the same
    margins) with the bias unpenalised (its Newton matrix entry floored by ``lam`` where no row
    is in the quadratic zone). Works on the primal, so it needs no floor on ``lam`` (the AGM's dual
    run does: :func:`~jaxprox.problems.bias_svm.check_svm_dual_lam`) and its steps do not depend
    on the columns' units (Jacobi-scaled Newton systems).

    Certificate: ``J(w) - D(alpha)`` with ``J`` the exact objective (its optimal bias,
    :meth:`BiasSVM.objective <jaxprox.BiasSVM.objective>`) and the best dual point over all steps,
    ``alpha = s / n`` brought into ``Q2 = [0, 1/n]^n cap {y^T alpha = 0}`` (:func:`bias_project`):
    every such point bounds ``J*`` from below. Derivatives are implicit, through the active-set KKT
    system of :meth:`BiasSVM.active_set_residual <jaxprox.BiasSVM.active_set_residual>` at
    ``(alpha, w)``, exact where the active sets are locally constant.

    Args: as :class:`SVMNewton`. ``init``: a warm start ``w`` (its bias the optimal one for ``w``).

    References: Keerthi & DeCoste, "A Modified Finite Newton Method for Fast Solution of Large
    Scale Linear SVMs" (JMLR 2005); Nesterov, "Smooth minimization of non-smooth functions" (2005).
    """

    requires = (cap.BIAS_SVM_L2,)

    def _parts(self, problem, m):
        """``[X - 1 m^T, 1]``, ``lam`` per coordinate (0 for the bias), no offset, the dual's
        projection."""
        X = problem.A
        A = CentredWithOnes(X, m)
        lam = jnp.asarray(problem.lam, A.dtype) * jnp.concatenate(
            [jnp.ones(problem.A.shape[1], A.dtype), jnp.zeros(1, A.dtype)])
        return A, Ridge(lam), 0.0, lambda s: bias_project(problem.y, s)

    def init(self, problem, init=None):
        X = problem.A
        m = X.rmv(jnp.ones(X.shape[0], X.dtype)) / X.shape[0]
        if init is not None:
            w = jnp.asarray(init, X.dtype)
            init = jnp.concatenate([w, (problem.bias(w) + m @ w)[None]])
        return BiasSVMNewtonState(*self._start(problem, self._parts(problem, m), init), m)

    def step(self, problem, s: BiasSVMNewtonState) -> BiasSVMNewtonState:
        """One Newton step on ``z = (w, b + m^T w)``."""
        return s._replace(newton=self._newton_step(problem, self._parts(problem, s.m), s.newton, s.perm))

    def certificate(self, problem, s: BiasSVMNewtonState):
        """``J(w) - D(alpha)``: ``alpha`` is a point of ``Q2`` already (:func:`bias_project`)."""
        w = self.params(s)
        prim, dual = problem.objective(w), problem.dual_objective(self.dual(s))
        return prim, dual, prim - dual

    def params(self, s: BiasSVMNewtonState):
        return s.newton.w[:-1]

    def dual(self, s: BiasSVMNewtonState):
        """``alpha = s / n`` of the best dual point (:class:`BiasSVM`'s scaling)."""
        return s.newton.best_s / s.newton.best_s.shape[0]

    def solution(self, s: BiasSVMNewtonState):
        return AGMSolution(self.dual(s), self.params(s), True)

    def unpack(self, z):
        return z.abar, z.x

    def residual(self, problem, z):
        ra, rw = problem.active_set_residual(z)
        return AGMSolution(ra, rw, True)
