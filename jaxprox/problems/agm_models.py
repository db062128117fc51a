"""The AGM-EF models (Zhang, Saha and Vishwanathan; :class:`~jaxprox.problems.base.AGMModel`) of
an :class:`~jaxprox.ERM`: the smooth primal (:class:`ERMModel`) and the dual of
the plain SVM over the hinge's dual box (:class:`SVMDualModel`), and :func:`as_agm_model`, which
picks one. A model knows no solver; ``geom`` is the name of the prox-function
(:attr:`~jaxprox.components.geometry.Geometry.name`).
"""
from __future__ import annotations

import equinox as eqx
import jax.numpy as jnp
from jax import lax

from .. import capabilities as cap
from ..certificates import keep_best
from .base import AGMModel

__all__ = ["ERMModel", "SVMDualModel", "as_agm_model"]


class ERMModel(AGMModel):
    """AGM model of an :class:`~jaxprox.ERM` with a smooth loss (Euclidean geometry):
    ``f = (1/n) sum_i l(a_i^T w, y_i)``, ``Psi = lam R + I_C``, ``alpha(w)_i = l'(a_i^T w)`` (the
    Danskin maximiser of ``f(w) = max_u (1/n) sum u_i a_i^T w - l*(u_i)``). ``lam1 = 0``;
    ``lam2`` is the penalty's :attr:`~jaxprox.base.Penalty.strong_convexity` (0 without one)."""

    problem: eqx.Module

    def objective(self, w):
        return self.problem.objective(w)

    def strong_convexity(self, geom):
        p = self.problem
        z = jnp.zeros((), p.A.dtype)
        return z, (z if p.penalty is None else jnp.asarray(p.penalty.strong_convexity, p.A.dtype))

    def lipschitz(self, geom):
        return self.problem.smoothness()

    def x0(self, geom, init):
        p = self.problem
        x = p.zeros() if init is None else jnp.asarray(init, p.A.dtype)
        return p.constraint.project(x) if p.constraint is not None else x

    def x0_is_origin(self, geom, init):
        return init is None and self.problem.constraint is None

    def lin(self, x):
        return self.problem.A.mv(x)

    def f_value(self, x, ax):
        return self.problem.loss.risk(ax, self.problem.y)

    def f_grad(self, x, ax):
        p = self.problem
        u = p.loss.grad(ax, p.y)
        return p.loss.risk(ax, p.y), p.A.rmv(u) / p.n, u

    def psi(self, x):
        return self.problem.regularizer(x)

    def breg_prox(self, geom, kappa, theta, beta):
        return self.problem.prox(theta / kappa, beta / kappa)

    def certificate(self, x, ax, ubar):
        """``P(x) - max(D(s l'(A x)), D(s ubar))`` (:meth:`ERM.best_dual <jaxprox.ERM.best_dual>`,
        from the carried margins ``ax``, each point rescaled by :meth:`ERM.dual_value
        <jaxprox.ERM.dual_value>`): both dual points are feasible, so the max is still a lower
        bound on ``P*`` (Theorem 10 uses the averaged one)."""
        p = self.problem
        prim = self.f_value(x, ax) + p.regularizer(x) + p.offset
        dual = p.lower_bound(x, prim, p.best_dual(ax, ubar), ax)
        return prim, dual, prim - dual

    def residual(self, z):
        """``x - prox(x - eta grad f(x))``: zero exactly at the optimum."""
        return self.problem.prox_grad_residual(z)


class SVMDualModel(AGMModel):
    """AGM model of the plain SVM posed as an :class:`~jaxprox.ERM`, ``P(w) = (1/n) sum_i
    [1 - y_i a_i^T w]_+ + lam/2 ||w||^2``, run on its Fenchel dual in the ERM's own dual variable
    (scheme 5.3 of the paper, the SVM of Example 1 without the bias, so ``Q2`` is only the box):

        min_u  f(u) = -D(u) = (1/n) y^T u + ||A^T u||^2 / (2 lam n^2),   -y_i u_i in [0, 1],

    ``Psi`` the indicator of that box (the hinge's dual domain: the prox is the loss's
    ``project_dual``), ``L = ||A||_2^2 / (lam n^2)``, ``lam1 = lam2 = 0``. The primal is recovered
    as ``w(u) = -A^T u / (n lam)`` averaged with the AGM weights; at every check
    :meth:`refine_primal` also tries the exact solution on the active set read off that average
    (:func:`jaxprox.problems.bias_svm.active_set_polish` with ``bias=False``) and keeps the point
    with the lower exact ``P``, with its dual point (the polish's own, exact when the polish is,
    or ``u_k``). ``Solution.params`` is ``w``, ``Solution.dual`` is that ``u`` (the ERM's margin
    convention) and the certificate is the ERM's: ``P(w) - max(D(dual_point(w)), D(u_k), D(u))``,
    every dual point feasible."""

    problem: eqx.Module
    has_primal_refinement = True

    def check_data(self):
        """Concrete data and ``lam`` must make the dual usable (the checks of
        :class:`~jaxprox.BiasSVM`'s dual, which has the same ``||A^T u||^2 / lam`` term)."""
        from .bias_svm import check_svm_dual_lam

        check_svm_dual_lam(self.problem.A, self.problem.penalty.lam, "AGM on ERM(Hinge, SquaredL2), through its dual")

    @staticmethod
    def accepts(problem) -> bool:
        """The hinge loss with a ``SquaredL2`` penalty, no constraint, vector ``w``."""
        return cap.PLAIN_SVM(problem)

    @property
    def dual_run(self):
        return True

    @property
    def _lam(self):
        return jnp.asarray(self.problem.penalty.lam, self.problem.A.dtype)

    def _w(self, ax):
        p = self.problem
        return -ax / (p.n * self._lam)

    def objective(self, w):
        return self.problem.objective(w)

    def strong_convexity(self, geom):
        z = jnp.zeros((), self.problem.A.dtype)
        return z, z

    def lipschitz(self, geom):
        p = self.problem
        return p.A.spectral_norm_sq() / (self._lam * p.n**2)

    def lipschitz_estimate(self, geom):
        p = self.problem
        return p.A.spectral_norm_sq(iters=10) / (self._lam * p.n**2)

    def x0(self, geom, init):
        """``u = 0``, or the ERM dual point ``l'(A w)`` of a primal ``init``."""
        p = self.problem
        if init is None:
            return jnp.zeros((p.n,), p.A.dtype)
        return p.loss.dual_point(p.A.mv(jnp.asarray(init, p.A.dtype)), p.y)

    def x0_is_origin(self, geom, init):
        return init is None

    def lin(self, x):
        return self.problem.A.rmv(x)

    def f_value(self, x, ax):
        p = self.problem
        return jnp.vdot(p.y, x) / p.n + jnp.vdot(ax, ax) / (2.0 * self._lam * p.n**2)

    def f_grad(self, x, ax):
        p = self.problem
        g = p.y / p.n - p.A.mv(self._w(ax)) / p.n
        return self.f_value(x, ax), g, self._w(ax)

    def psi(self, x):
        return jnp.zeros((), x.dtype)

    def breg_prox(self, geom, kappa, theta, beta):
        p = self.problem
        return p.loss.project_dual(theta / kappa, p.y)

    def refine_primal(self, w, x, best, jbest, dbest, t):
        """The best, in the exact ``P``, of the previous ``best`` (with its dual point ``dbest``),
        the average ``w`` (with the iterate ``x``) and its active-set polish (margin tolerance
        ``POLISH_DELTAS[t % 8]``; skipped when ``d > POLISH_MAX_D``) with the polish's own dual
        point ``u = -n Y alpha`` (exact when the polish is)."""
        from .bias_svm import POLISH_MAX_D, plain_svm_polish

        p = self.problem
        s = p.A.mv(w)
        cands = [(w, p.loss.risk(s, p.y) + p.regularizer(w) + p.offset, x)]
        if p.d <= POLISH_MAX_D:
            cands.append(plain_svm_polish(p, s, t))
        return keep_best(cands, best, jbest, dbest)

    def certificate(self, x, ax, w):
        return self.certificate_L(x, ax, w, None)

    def _pg_dual(self, u, L, steps=(4.0, 1.0)):
        """Dual values after one projected-gradient ascent step from the feasible ``u``: for each
        ``c`` in ``steps``, ``u_c = P_box(u - (c/L) grad f(u))`` and the exact maximum of the
        concave quadratic ``D = -f`` on the segment ``[u, u_c]`` (inside the box, so each is a
        lower bound on ``P*``). The AGM iterate is an average; the step snaps it onto the active
        face (as :meth:`BiasSVM.pg_dual <jaxprox.BiasSVM.pg_dual>`)."""
        p = self.problem
        au = p.A.rmv(u)
        f0, g, _ = self.f_grad(u, au)

        def seg(c):
            d = self.breg_prox("euclidean", 1.0, u - (c / L) * g, None) - u
            ad = p.A.rmv(d)
            slope = -jnp.vdot(g, d)
            curv = jnp.vdot(ad, ad) / (self._lam * p.n**2)
            t = jnp.clip(slope / jnp.where(curv > 0, curv, 1.0), 0.0, 1.0)
            t = jnp.where(curv > 0, t, jnp.where(slope > 0, 1.0, 0.0))
            return -f0 + t * slope - 0.5 * t * t * curv + p.offset

        return jnp.max(jnp.stack([seg(c) for c in steps]))

    def certificate_L(self, x, ax, w, L, prim=None, dual=None):
        """``(P(w), D, P(w) - D)``: :meth:`ERM.best_certificate <jaxprox.ERM.best_certificate>`
        with the dual iterate ``u_k = x`` (feasible: a convex combination of box projections), the
        dual point ``dual`` that :meth:`refine_primal` paired with ``w`` (in the box) and, given the
        estimate ``L = L_k``, the dual points of one projected-gradient step from ``x``
        (:meth:`_pg_dual`); ``prim`` for ``P(w)`` when :meth:`refine_primal` computed it."""
        p = self.problem
        pw, d, _ = p.best_certificate(w, x, *(() if dual is None else (dual,)))
        if L is not None:
            d = jnp.maximum(d, self._pg_dual(x, L))
        pw = pw if prim is None else prim
        return pw, d, pw - d

    @property
    def kkt_exact(self) -> bool:
        """The reported primal is polished exactly (``d <= POLISH_MAX_D``) and paired with the
        polish's exact dual point, so :meth:`residual` makes the solution exactly differentiable."""
        from .bias_svm import POLISH_MAX_D

        return self.problem.d <= POLISH_MAX_D

    def residual(self, z):
        """The KKT system on the active sets of ``w = z.abar`` (held fixed: margin violators
        ``V``, margin set ``F`` within :func:`~jaxprox.problems.bias_svm.kkt_margin_tol`), in
        ``(u, w)``: ``(lam n w + X^T u_eff) / (lam n) = 0`` with ``u_eff = u`` on ``F``, ``-y`` on
        ``V``, ``0`` elsewhere; ``y_i - x_i^T w = 0`` on ``F``; ``u_i - u_eff_i = 0`` elsewhere.
        Linear in ``(u, w)``, smooth in ``(X, y, lam)``: exact implicit derivatives where the active
        sets are locally constant (with ``d > POLISH_MAX_D`` the reported primal is not polished and
        AGM refuses derivatives)."""
        from .bias_svm import kkt_margin_tol

        p = self.problem
        u, w = z.x, z.abar
        sf = p.A.mv(lax.stop_gradient(w))
        marg = p.y * sf
        tol = kkt_margin_tol(sf.dtype)
        on, viol = jnp.abs(marg - 1.0) <= tol, marg < 1.0 - tol
        u_eff = jnp.where(on, u, jnp.where(viol, -p.y, 0.0))
        scale = p.n * self._lam
        rw = (scale * w + p.A.rmv(u_eff)) / lax.stop_gradient(scale)
        ru = jnp.where(on, p.y - p.A.mv(w), u - u_eff)
        return (ru, rw)


def as_agm_model(problem) -> AGMModel:
    """The AGM model of ``problem``: an :class:`~jaxprox.problems.base.AGMModel` as it is, an
    :class:`~jaxprox.ERM` through :class:`ERMModel` (smooth loss) or :class:`SVMDualModel` (hinge
    loss with ``SquaredL2``); anything else is a ``TypeError`` naming what fits."""
    from .erm import ERM

    if isinstance(problem, AGMModel):
        return problem
    if isinstance(problem, ERM):
        if problem.loss.smooth:
            return ERMModel(problem)
        if SVMDualModel.accepts(problem):
            return SVMDualModel(problem)
        raise ValueError(
            f"AGM on an ERM needs a smooth loss, or the hinge loss with SquaredL2 and no constraint "
            f"(solved through its dual); got {type(problem.loss).__name__} with "
            f"{type(problem.penalty).__name__}. Smooth the loss (losses.SmoothedHinge(mu/n), scheme "
            "(A) of the paper) or use the models of jaxprox.problems (BiasSVM, ERLPBoost, F1SVM).")
    raise TypeError(f"AGM needs an ERM or an AGMModel (jaxprox.problems.base), got {type(problem).__name__}")
