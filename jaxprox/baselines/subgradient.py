"""Subgradient-type baselines Pdprox is compared with (the Pdprox paper section 5):
deterministic subgradient descent ("gd"), FOBOS, RDA, Nesterov-smoothed accelerated gradient
("agd") and Pegasos.

All work on :class:`jaxprox.ERM` problems in the margin convention: a loss subgradient is
``g = (1/n) A^T u`` with ``u = loss.dual_point(A w, y) in d l(A w)``. Steps are
``eta_t = step0 / sqrt(t)`` (O(1/sqrt(T)) methods); ``step0`` defaults to ``1 / G`` with
``G = L_l ||A||_2 / sqrt(n)`` (a bound on ``||g||``), and the paper tunes it over
``step0 * 2^k``, ``k in -10..10``.

Certificates (honest): the subgradient methods report the best iterate so far, with
``gap = P(w_best) - max(D(u_bar), D(u(w_best)))``, ``u_bar`` the running mean of the loss dual
points ``u_t`` (a dual-feasible point by convexity; rescaled for norm penalties as in
:func:`jaxprox.certificates.projected_dual_value`). ``AGD`` evaluates the dual at the smoothed gradient
``u = grad l_mu(A w)``, which lies in the dual domain.
"""
from __future__ import annotations

import math

import equinox as eqx
import jax
import jax.numpy as jnp

from .. import capabilities as cap
from ..certificates import projected_dual_value
from ..solver import Solver
from .fista import FISTA


def _default_step0(problem):
    lip = float(problem.loss.lipschitz)
    lip = 1.0 if not math.isfinite(lip) else lip
    return 1.0 / (lip * jnp.sqrt(problem.A.spectral_norm_sq() / problem.n))


class _SaddleAdjoint:
    """Implicit differentiation for the baselines: ``z = (w, u)`` with a dual estimate ``u`` and
    the Pdprox / Chambolle-Pock saddle residual (zero exactly at a saddle point). The baselines
    do not converge to a saddle point fast, so derivatives are as accurate as the iterate."""

    def solution(self, st):
        return (self.params(st), self._dual_estimate(st))

    def unpack(self, z):
        return z

    def residual(self, problem, z):
        from ..solvers.pdprox import PDProx

        return PDProx("cp").residual(problem, z)


def _penalty_subgrad(problem, w):
    """An element of ``d (lam R)(w)`` (autodiff of ``value``: the derivative of ``|x|`` at 0 is
    1 and guarded norms give 0 at 0, both valid subgradients)."""
    return jnp.zeros_like(w) if problem.penalty is None else jax.grad(problem.penalty.value)(w)


class SubgradientState(eqx.Module):
    w: jax.Array
    w_best: jax.Array
    f_best: jax.Array
    u_avg: jax.Array
    g_avg: jax.Array
    t: jax.Array
    step0: jax.Array


class _SubgradientBase(_SaddleAdjoint, Solver):
    """Shared loop: evaluate ``u_t``, ``P(w_t)`` (free given ``A w_t``), keep the best iterate.
    The problems of :class:`jaxprox.PDProx`, whose dual value and saddle residual they use."""

    requires = (cap.ERM_PROBLEM, cap.PROX)
    step0: float | None = eqx.field(static=True, default=None)

    def init(self, problem, init=None):
        w = problem.zeros() if init is None else jnp.asarray(init, problem.A.dtype).reshape(problem.param_shape)
        if problem.constraint is not None:
            w = problem.constraint.project(w)
        s0 = _default_step0(problem) if self.step0 is None else jnp.asarray(self.step0, problem.A.dtype)
        u0 = problem.loss.project_dual(jnp.zeros(problem.y.shape, w.dtype), problem.y)
        inf = jnp.asarray(jnp.inf, w.dtype)
        return SubgradientState(w, w, inf, u0, jnp.zeros_like(w), jnp.zeros((), jnp.int32),
                                jnp.asarray(s0, w.dtype))

    def _update(self, problem, st, g, t):
        raise NotImplementedError

    def step(self, problem, st):
        z = problem.A.mv(st.w)
        u = problem.loss.dual_point(z, problem.y)
        f = problem.loss.risk(z, problem.y) + problem.regularizer(st.w)
        better = f < st.f_best
        w_best = jnp.where(better, st.w, st.w_best)
        f_best = jnp.where(better, f, st.f_best)
        g = problem.A.rmv(u) / problem.n
        t = st.t + 1
        tf = t.astype(st.step0.dtype)
        u_avg = st.u_avg + (u - st.u_avg) / tf
        g_avg = st.g_avg + (g - st.g_avg) / tf
        w = self._update(problem, st, g, g_avg, tf)
        return SubgradientState(w, w_best, f_best, u_avg, g_avg, t, st.step0)

    def params(self, st):
        """The best iterate evaluated so far (``w_0`` before the first step)."""
        return jnp.where(jnp.isfinite(st.f_best), st.w_best, st.w)

    def _dual_estimate(self, st):
        return st.u_avg

    def certificate(self, problem, st):
        w = self.params(st)
        p, d1, _ = problem.certificate(w)
        d = jnp.maximum(d1, projected_dual_value(problem, st.u_avg))
        return p, d, p - d


class SubgradientDescent(_SubgradientBase):
    """Deterministic projected subgradient descent ("gd"):
    ``w_{t+1} = P_C(w_t - eta_t (g_t + r_t))``, ``r_t in d(lam R)(w_t)``, ``eta_t = step0/sqrt(t)``."""

    def _update(self, problem, st, g, g_avg, t):
        v = st.w - st.step0 / jnp.sqrt(t) * (g + _penalty_subgrad(problem, st.w))
        return v if problem.constraint is None else problem.constraint.project(v)


class FOBOS(_SubgradientBase):
    """FOBOS (Duchi & Singer 2009), batch: ``w_{t+1} = prox_{eta_t h}(w_t - eta_t g_t)``,
    ``h = lam R + I_C``, ``eta_t = step0 / sqrt(t)``."""

    def _update(self, problem, st, g, g_avg, t):
        eta = st.step0 / jnp.sqrt(t)
        return problem.prox(st.w - eta * g, eta)


class RDA(_SubgradientBase):
    """Regularized dual averaging (Xiao 2009), batch:
    ``w_{t+1} = argmin_w <g_bar_t, w> + h(w) + beta_t/(2t) ||w||^2 = prox_{eta_t h}(-eta_t g_bar_t)``
    with ``beta_t = sqrt(t) / step0``, i.e. ``eta_t = t / beta_t = step0 sqrt(t)``."""

    def _update(self, problem, st, g, g_avg, t):
        eta = st.step0 * jnp.sqrt(t)
        return problem.prox(-eta * g_avg, eta)


class AGD(_SaddleAdjoint, Solver):
    """Nesterov-smoothed accelerated gradient ("agd"; Nesterov 2005, as the accelerated baseline of
    the Pdprox paper section 5): FISTA with backtracking on
    ``(1/n) sum_i l_mu(a_i^T w) + lam R(w)``, ``l_mu(z) = sup_u u z - l*(u) - mu/2 u^2``
    (``loss.smoothed(mu)``, ``1/mu``-smooth, within ``mu/2 max |u|^2`` of ``l``).

    The certificate is for the *original* problem: ``P(w)`` and the dual at
    ``u = grad l_mu(A w)`` (dual-feasible), so it is honest for any ``mu``; it stalls at
    ``O(mu)``.
    """

    requires = (cap.ERM_PROBLEM, cap.PROX)

    mu: float = eqx.field(static=True, default=1e-3)
    momentum_reset: bool = eqx.field(static=True, default=True)

    def _smoothed(self, problem):
        return eqx.tree_at(lambda p: p.loss, problem, problem.loss.smoothed(self.mu))

    def _fista(self):
        return FISTA(momentum_reset=self.momentum_reset)

    def params(self, st):
        return st.fista.x

    def _dual_estimate(self, st):
        return st.u

    def init(self, problem, init=None):
        st = self._fista().init(self._smoothed(problem), init)
        return _AGDState(st, self._smoothed(problem).loss.grad(st.Ax, problem.y))

    def step(self, problem, st):
        sp = self._smoothed(problem)
        f = self._fista().step(sp, st.fista)
        return _AGDState(f, sp.loss.grad(f.Ax, problem.y))

    def certificate(self, problem, st):
        p, d1, _ = problem.certificate(st.fista.x)
        d = jnp.maximum(d1, projected_dual_value(problem, st.u))
        return p, d, p - d


class _AGDState(eqx.Module):
    fista: eqx.Module
    u: jax.Array  # grad l_mu(A x): the dual point of the certificate


class PegasosState(eqx.Module):
    w: jax.Array
    w_avg: jax.Array
    u: jax.Array  # dual estimate for the saddle adjoint only (never updated: a stochastic method
    #               has no full-sample dual; derivatives through Pegasos are not meaningful)
    t: jax.Array
    key: jax.Array


class Pegasos(_SaddleAdjoint, Solver):
    """Pegasos (Shalev-Shwartz et al. 2011) for ``(1/n) sum l(a_i^T w) + lam/2 ||w||^2``
    (``SquaredL2`` penalty): with a mini-batch ``B_t`` of ``batch_size`` indices drawn uniformly
    (with replacement) from ``key``,

        w_{t+1} = P_{||w|| <= r}((1 - 1/t) w_t - (1/(lam t)) (1/|B_t|) sum_{i in B_t} u_i a_i),

    ``u_i = loss.dual_point(a_i^T w_t)``, ``r = L_l / sqrt(lam)`` (``project=True``).
    ``batch_size=None`` is the deterministic (full-gradient) Pegasos comparison.
    Reports the last iterate (``average=False``) or the running average.
    """

    requires = (cap.ERM_PROBLEM, cap.RIDGE, cap.NO_CONSTRAINT)

    batch_size: int | None = eqx.field(static=True, default=1)
    seed: int = eqx.field(static=True, default=0)
    project: bool = eqx.field(static=True, default=True)
    average: bool = eqx.field(static=True, default=False)

    def init(self, problem, init=None):
        if problem.penalty is None or not problem.penalty.quadratic:
            raise ValueError("Pegasos needs a SquaredL2 penalty (lam/2 ||w||^2)")
        if problem.constraint is not None:
            raise ValueError("Pegasos does not take a constraint")
        w = problem.zeros() if init is None else jnp.asarray(init, problem.A.dtype).reshape(problem.param_shape)
        u = problem.loss.project_dual(jnp.zeros(problem.y.shape, w.dtype), problem.y)
        return PegasosState(w, w, u, jnp.zeros((), jnp.int32), jax.random.PRNGKey(self.seed))

    def step(self, problem, st):
        lam = problem.penalty.lam
        key, sub = jax.random.split(st.key)
        if self.batch_size is None:
            A, y = problem.A, problem.y
        else:
            idx = jax.random.randint(sub, (self.batch_size,), 0, problem.n)
            A, y = problem.A.rows(idx), problem.y[idx]
        u = problem.loss.dual_point(A.mv(st.w), y)
        g = A.rmv(u) / u.shape[0]
        t = st.t + 1
        tf = t.astype(st.w.dtype)
        w = (1.0 - 1.0 / tf) * st.w - g / (lam * tf)
        if self.project:
            lip = float(problem.loss.lipschitz)
            r = (1.0 if not math.isfinite(lip) else lip) / jnp.sqrt(lam)
            nrm = jnp.sqrt(jnp.sum(w * w))
            w = w * jnp.minimum(1.0, r / jnp.maximum(nrm, jnp.finfo(w.dtype).tiny))
        w_avg = st.w_avg + (w - st.w_avg) / tf
        return PegasosState(w, w_avg, st.u, t, key)

    def params(self, st):
        return st.w_avg if self.average else st.w

    def _dual_estimate(self, st):
        return st.u

    def certificate(self, problem, st):
        return problem.certificate(self.params(st))
