"""Pdprox: primal-dual prox methods for non-smooth loss + non-smooth regularizer (paper 000,
Yang, Mahdavi, Jin & Zhu, "An efficient primal dual prox method for non-smooth optimization";
technical note ``papers/notes/000_pdprox.md``).

Saddle problem (conjugate / margin convention of :mod:`jaxprox.base`)::

    min_{w in C} max_u  F(w, u) = (1/n) u^T A w - (1/n) sum_i l*(u_i, y_i) + lam R(w)

which is the paper's eq. (8) with ``H = A^T / n`` and the paper's dual variables mapped to the
margin dual ``u`` (hinge: ``u = -y alpha``; ``l*`` linear on its domain, so the paper's projection
``Pi_{Q_alpha}[beta + gamma G_alpha]`` is ``prox_{(gamma/n) l*}(beta + (gamma/n) A w)``, i.e.
``loss.prox_conjugate``). ``G_alpha(w) = (1/n)(A w - grad l*)`` and ``G_w(u) = (1/n) A^T u``.

Step sizes (note section 2 and 6.3): ``c = ||H||_2^2 = ||A||_2^2 / n^2`` (the 1/n lives inside
``L``, so it scales ``c``), ``gamma = sqrt(1 / (2 c)) = n / (sqrt(2) ||A||_2)`` -- *not* ``1/(2c)``.
With two step sizes (``ratio = tau / sigma``) ``tau = gamma sqrt(ratio)``, ``sigma = gamma /
sqrt(ratio)``, so ``tau sigma c = 1/2`` still holds. The dual prox step in ``u`` units is
``sigma / n``.

Variants (``variant=``):

* ``"dual"``  -- Algorithm 1 (Pdprox-dual, extra dual variable ``beta``, projected twice)::

      u_t    = prox_{(s) l*}(beta_{t-1} + s A w_{t-1})          s = sigma / n
      w_t    = prox_{tau h}(w_{t-1} - (tau / n) A^T u_t)        h = lam R + I_C
      beta_t = prox_{(s) l*}(beta_{t-1} + s A w_t)

* ``"primal"`` -- Algorithm 2 (Pdprox-primal, extra primal variable ``v``; the paper's ``u``)::

      w_t = prox_{tau h}(v_{t-1} - (tau / n) A^T u_{t-1})
      u_t = prox_{(s) l*}(u_{t-1} + s A w_t)
      v_t = w_t + (tau / n) A^T (u_{t-1} - u_t)                 (no projection, no prox)

* ``"cp"`` -- Algorithm 3 in its double-primal form, eq. (20)/(22), which is exactly
  Chambolle-Pock (2011) Algorithm 1 with ``theta = 1``, dual step first::

      u_t = prox_{(s) l*}(u_{t-1} + s A (2 w_{t-1} - w_{t-2}))
      w_t = prox_{tau h}(w_{t-1} - (tau / n) A^T u_t)

Matrix variables (paper sections 5.2, 5.3): with a structured operator the variable is a matrix
``W`` and every step above is unchanged -- ``operators.task_indexed`` (multi-task rows, margin
``x_i^T W[:, t_i]``, with ``penalties.L1Inf``) and ``operators.observed_entries`` (matrix
completion, margin ``W[i_k, j_k]``, with ``penalties.Trace``; ``copies=R`` and
``losses.ThresholdHinge`` for the R-threshold ordinal hinge). The dual ``u`` has the shape of the
margins ``A W`` (that of ``y``).

Each iteration costs one ``A w`` and one ``A^T u`` (the last ``A w`` / ``A^T u`` is carried in
the state). Output (Theorem 6): the uniform averages ``w_hat_T = (1/T) sum_{t=1}^T w_t`` and
``u_hat_T`` (``average=True``, the paper), or the last iterate (``average=False``).

Certificate: ``gap = P(w_out) - max(D(u_hat'), D(u_T'))`` where ``u' = s u`` is the averaged
(resp. last) dual iterate, projected onto the dual domain (rounding) and rescaled by
``s = penalty.dual_scale(-A^T u / n)`` so that ``h*`` is finite for norm penalties (note 6.3).
Both dual values are honest lower bounds on ``P*``, so the gap upper-bounds ``P(w_out) - P*``.
"""
from __future__ import annotations

import math

import equinox as eqx
import jax
import jax.numpy as jnp

from ..driver import Solver

_VARIANTS = ("dual", "primal", "cp")


def dual_value(problem, u):
    """Dual objective ``D(s u')`` at a margin dual point ``u``: ``u' = P_dom(u)`` then the
    rescaling ``s in (0, 1]`` that makes ``h*`` finite for norm penalties (Pdprox note 6.3,
    "Duality gap with norm regularizers"); ``D(u) = -(1/n) sum l*(u_i) - h*(-A^T u / n)``."""
    u = problem.loss.project_dual(u, problem.y)
    v = -problem.A.rmv(u) / problem.n
    if problem.penalty is not None and problem.constraint is None:
        s = problem.penalty.dual_scale(v)
        u, v = s * u, s * v
    return -problem.loss.conjugate_risk(u, problem.y) - problem.conjugate_h(v)


def default_steps(problem, step=None, ratio=None, scale=1.0, norm_sq=None):
    """``(tau, sigma)`` in the paper's units: ``gamma = sqrt(1/(2c))``, ``c = ||A||^2 / n^2``
    (power iteration), ``tau = gamma sqrt(ratio)``, ``sigma = gamma / sqrt(ratio)``."""
    n = problem.n
    if step is None:
        nsq = problem.A.spectral_norm_sq() if norm_sq is None else norm_sq
        c = nsq / n**2
        gamma = scale * jnp.sqrt(1.0 / (2.0 * jnp.maximum(c, jnp.finfo(jnp.result_type(c)).tiny)))
    else:
        gamma = jnp.asarray(step, problem.A.dtype) * scale
    r = 1.0 if ratio is None else math.sqrt(float(ratio))
    return gamma * r, gamma / r


class PDProxState(eqx.Module):
    """Iterates of Pdprox. ``w, u``: last primal / dual iterate (``w_t``, ``alpha_t``);
    ``aux``: ``beta_t`` (dual variant), ``v_t`` (primal variant) or ``w_{t-1}`` (cp);
    ``Aw``: cached ``A w_t`` (dual, cp) or ``A^T u_t / n`` (primal); ``Aw_prev``: ``A w_{t-1}``
    (cp only, else a zero scalar); ``w_avg, u_avg``: running means over ``t = 1..T``."""

    w: jax.Array
    u: jax.Array
    aux: jax.Array
    Aw: jax.Array
    Aw_prev: jax.Array
    w_avg: jax.Array
    u_avg: jax.Array
    c1_avg: jax.Array
    t: jax.Array
    k: jax.Array
    tau: jax.Array
    sigma: jax.Array


class PDProx(Solver):
    """Pdprox primal-dual prox method (paper 000, Algorithms 1-3 and the two-step variant).

    Args:
        variant: ``"dual"`` (Algorithm 1), ``"primal"`` (Algorithm 2) or ``"cp"`` (Algorithm 3 =
            Chambolle-Pock with ``theta = 1``).
        step: the paper's ``gamma`` (primal step ``tau`` and dual step ``sigma`` on the paper's
            scale, where the dual gradient carries the 1/n). Default ``sqrt(1/(2c))`` with
            ``c = ||A||_2^2 / n^2`` from ``A.spectral_norm_sq()`` (Theorem 6's step).
        ratio: ``tau / sigma`` for the two-step-size variant (paper section 5.7; ``None`` = 1).
            ``tau sigma = gamma^2`` is kept.
        scale: multiplies ``gamma`` (the paper's scale-up tuning; ``> 1`` voids Theorem 6).
        average: report the averaged iterates (the paper's output) or the last iterate.

    The saddle point returned by ``solution`` is ``(w, u)`` with ``u`` the margin dual
    (``u_i in dom l*``; hinge: ``u = -y alpha``). Implicit differentiation uses the
    Chambolle-Pock fixed-point map ``problem.saddle_residual``.
    """

    variant: str = eqx.field(static=True, default="dual")
    gamma: float | None = eqx.field(static=True, default=None)
    ratio: float | None = eqx.field(static=True, default=None)
    scale: float = eqx.field(static=True, default=1.0)
    average: bool = eqx.field(static=True, default=True)
    restart: int | None = eqx.field(static=True, default=None)

    def __init__(self, variant="dual", step=None, ratio=None, scale=1.0, average=True, restart=None, *,
                 tol=1e-6, atol=0.0, max_steps=10_000, check_every=10, verbose=False,
                 adjoint="implicit"):
        if variant not in _VARIANTS:
            raise ValueError(f"variant must be one of {_VARIANTS}, got {variant!r}")
        if ratio is not None and not ratio > 0:
            raise ValueError(f"ratio must be positive, got {ratio!r}")
        if step is not None and not step > 0:
            raise ValueError(f"step must be positive, got {step!r}")
        if not scale > 0:
            raise ValueError(f"scale must be positive, got {scale!r}")
        self.variant, self.gamma, self.ratio = variant, None if step is None else float(step), ratio
        if restart is not None and not int(restart) >= 1:
            raise ValueError(f"restart must be a positive number of steps, got {restart!r}")
        self.scale, self.average = float(scale), bool(average)
        self.restart = None if restart is None else int(restart)
        self.tol, self.atol, self.max_steps, self.check_every = tol, atol, max_steps, check_every
        self.verbose, self.adjoint = verbose, adjoint

    # ------------------------------------------------------------------------------ init
    def init(self, problem, init=None):
        dt = problem.A.dtype
        w = problem.zeros() if init is None else jnp.asarray(init, dt).reshape(problem.param_shape)
        if problem.constraint is not None:
            w = problem.constraint.project(w)
        u = problem.loss.project_dual(jnp.zeros(problem.y.shape, dt), problem.y)  # shape of A w
        tau, sigma = default_steps(problem, self.gamma, self.ratio, self.scale)
        tau, sigma = jnp.asarray(tau, dt), jnp.asarray(sigma, dt)
        Aw = problem.A.mv(w)
        zero = jnp.zeros((), dt)
        if self.variant == "dual":
            aux, c1, c2 = u, Aw, zero
        elif self.variant == "primal":
            aux, c1, c2 = w, problem.A.rmv(u) / problem.n, zero
        else:
            aux, c1, c2 = w, Aw, Aw
        t0 = jnp.zeros((), jnp.int32)
        return PDProxState(w, u, aux, c1, c2, w, u, c1, t0, t0, tau, sigma)

    # ------------------------------------------------------------------------------ step
    def step(self, problem, st: PDProxState) -> PDProxState:
        A, y, n, loss = problem.A, problem.y, problem.n, problem.loss
        tau, s = st.tau, st.sigma / n
        if self.variant == "dual":  # Algorithm 1
            u = loss.prox_conjugate(st.aux + s * st.Aw, y, s)           # step 4 (G_alpha(w_{t-1}))
            w = problem.prox(st.w - (tau / n) * A.rmv(u), tau)          # step 5
            Aw = A.mv(w)
            beta = loss.prox_conjugate(st.aux + s * Aw, y, s)            # step 6 (G_alpha(w_t))
            new = (w, u, beta, Aw, st.Aw_prev)
        elif self.variant == "primal":  # Algorithm 2
            Gw_prev = st.Aw                                              # A^T u_{t-1} / n
            w = problem.prox(st.aux - tau * Gw_prev, tau)                # step 4
            u = loss.prox_conjugate(st.u + s * A.mv(w), y, s)            # step 5
            Gw = A.rmv(u) / n
            v = w + tau * (Gw_prev - Gw)                                 # step 6
            new = (w, u, v, Gw, st.Aw_prev)
        else:  # Algorithm 3, double-primal = Chambolle-Pock(theta = 1)
            u = loss.prox_conjugate(st.u + s * (2.0 * st.Aw - st.Aw_prev), y, s)
            w = problem.prox(st.w - (tau / n) * A.rmv(u), tau)
            new = (w, u, st.w, A.mv(w), st.Aw)
        w, u, aux, c1, c2 = new
        t = st.t + 1
        inv = 1.0 / t.astype(st.tau.dtype)
        w_avg = st.w_avg + inv * (w - st.w_avg)
        u_avg = st.u_avg + inv * (u - st.u_avg)
        c1_avg = st.c1_avg + inv * (c1 - st.c1_avg)   # A w_avg (dual, cp) or A^T u_avg / n (primal)
        k = st.k + 1
        if self.restart is not None:
            # Restart to the average (fixed frequency): the cached products of the average are
            # averages of the cached products (linearity), so a restart costs no matvec.
            r = k % self.restart == 0
            sel = lambda a, b: jnp.where(r, a, b)  # noqa: E731
            w, u, c1 = sel(w_avg, w), sel(u_avg, u), sel(c1_avg, c1)
            if self.variant == "dual":
                aux = sel(u_avg, aux)
            elif self.variant == "primal":
                aux = sel(w_avg, aux)
            else:
                aux, c2 = sel(w_avg, aux), sel(c1_avg, c2)
            t = jnp.where(r, 0, t)  # the averages (= restart point) are overwritten next step
        return PDProxState(w, u, aux, c1, c2, w_avg, u_avg, c1_avg, t, k, st.tau, st.sigma)

    # ------------------------------------------------------------------------------ outputs
    def params(self, st: PDProxState):
        return st.w_avg if self.average else st.w

    def dual(self, st: PDProxState):
        return st.u_avg if self.average else st.u

    def certificate(self, problem, st: PDProxState):
        w = self.params(st)
        p = problem.objective(w)
        d = jnp.maximum(dual_value(problem, st.u_avg), dual_value(problem, st.u))
        return p, d, p - d

    # ------------------------------------------------------------------------------ implicit diff
    # ------------------------------------------------------------------------------ implicit diff
    def solution(self, st: PDProxState):
        return (self.params(st), self.dual(st))

    def unpack(self, z):
        return z

    def residual(self, problem, z):
        """Chambolle-Pock fixed-point map at ``z = (w, u)`` with this solver's steps; zero exactly
        at a saddle point. Steps use the Frobenius bound ``||A||_F >= ||A||_2`` (cheap, and the
        zero set does not depend on them)."""
        fro_sq = jax.lax.stop_gradient(jnp.sum(problem.A.row_norms_sq()))
        tau, sigma = default_steps(problem, self.gamma, self.ratio, self.scale, norm_sq=fro_sq)
        tau, sigma = jax.lax.stop_gradient(tau), jax.lax.stop_gradient(sigma)
        return problem.saddle_residual(z, tau, sigma / problem.n)


