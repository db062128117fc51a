"""Pdprox: primal-dual prox methods for non-smooth loss + non-smooth regularizer (Yang, Mahdavi, Jin & Zhu, "An efficient primal dual prox method for non-smooth optimization").

Saddle problem (conjugate / margin convention of :mod:`jaxprox.base`)::

    min_{w in C} max_u  F(w, u) = (1/n) u^T A w - (1/n) sum_i l*(u_i, y_i) + lam R(w)

which is the paper's eq. (8) with ``H = A^T / n`` and the paper's dual variables mapped to the
margin dual ``u`` (hinge: ``u = -y alpha``; ``l*`` linear on its domain, so the paper's projection
``Pi_{Q_alpha}[beta + gamma G_alpha]`` is ``prox_{(gamma/n) l*}(beta + (gamma/n) A w)``, i.e.
``loss.prox_conjugate``). ``G_alpha(w) = (1/n)(A w - grad l*)`` and ``G_w(u) = (1/n) A^T u``.

Step sizes: ``c = ||H||_2^2 = ||A||_2^2 / n^2`` (the 1/n lives inside
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

Restarts (*ours*, not in the paper; ``restart=``, a :mod:`jaxprox.restarts` scheme): the
uniform average converges as O(1/T) (Theorem 6); restarting the run from the average makes the
piecewise-linear(-quadratic) saddle problems here (LPs and QPs: hinge / absolute / quantile /
epsilon-insensitive with l1 or l2^2) converge linearly (Applegate, Hinder, Lu & Lubin 2023,
"Faster first-order primal-dual methods for linear programming using restarts and sharpness").
The default :class:`~jaxprox.restarts.AdaptiveRestart` is PDLP's scheme: restart when a
fixed-point residual has decayed enough, with primal-weight updates of ``tau / sigma`` at each
restart (see :class:`PDProx`).

Certificate: ``gap = P(w_out) - max(D(u_hat'), D(u_T'))`` where ``u' = s u`` is the averaged
(resp. last) dual iterate, projected onto the dual domain (rounding) and rescaled by
``s = penalty.dual_scale(-A^T u / n)`` so that ``h*`` is finite for norm penalties.
Both dual values are honest lower bounds on ``P*``, so the gap upper-bounds ``P(w_out) - P*``.
"""
from __future__ import annotations

import math

import equinox as eqx
import jax
import jax.numpy as jnp

from ..certificates import at_some_checks, best_of, projected_dual_value, support_dual_rows, support_duals
from ..solver import Solver
from .. import capabilities as cap
from ..operators import linear_at
from ..restarts import AdaptiveRestart, RestartScheme

_VARIANTS = ("dual", "primal", "cp")


def default_steps(problem, step=None, ratio=None, scale=1.0, norm_sq=None):
    """``(tau, sigma)`` in the paper's units: ``gamma = sqrt(1/(2c))``, ``c = ||A||^2 / n^2``
    (``A.spectral_norm_sq()``), ``tau = gamma sqrt(ratio)``, ``sigma = gamma / sqrt(ratio)``."""
    n = problem.n
    if step is None:
        nsq = problem.A.spectral_norm_sq() if norm_sq is None else norm_sq
        c = nsq / n**2
        gamma = scale * jnp.sqrt(1.0 / (2.0 * jnp.maximum(c, jnp.finfo(jnp.result_type(c)).tiny)))
    else:
        gamma = jnp.asarray(step, problem.A.dtype) * scale
    r = 1.0 if ratio is None else math.sqrt(float(ratio))
    return gamma * r, gamma / r


def saddle_residual(problem, z, step=None, ratio=None, scale=1.0):
    """Chambolle-Pock fixed-point residual of an ERM at ``z = (w, u)``
    (:meth:`ERM.saddle_residual <jaxprox.ERM.saddle_residual>`) with the steps of
    :func:`default_steps` from the Frobenius bound ``||A||_F >= ||A||_2`` (cheap, gradient-stopped:
    the zero set, the saddle points, does not depend on them). The residual every solver that
    reports a primal-dual pair differentiates (PDProx; SDCA and Dual APPA on non-smooth losses)."""
    fro_sq = jax.lax.stop_gradient(jnp.sum(problem.A.row_norms_sq()))
    tau, sigma = default_steps(problem, step, ratio, scale, norm_sq=fro_sq)
    tau, sigma = jax.lax.stop_gradient(tau), jax.lax.stop_gradient(sigma)
    return problem.saddle_residual(z, tau, sigma / problem.n)


def _wnorm(dw, du, omega):
    """``||(dw, du)||_omega = sqrt(omega ||dw||^2 + ||du||^2 / omega)`` (PDLP's weighted norm)."""
    return jnp.sqrt(omega * jnp.vdot(dw, dw).real + jnp.vdot(du, du).real / omega)


def fixed_point_residual(problem, w, u, Aw, Gw, tau, s, omega):
    """Restart measure at ``z = (w, u)`` from the cached products ``Aw = A w``, ``Gw = A^T u / n``
    (no matvec): the forward-backward (Jacobi) step ``w+ = prox_{tau h}(w - tau Gw)``,
    ``u+ = prox_{s l*}(u + s Aw)``, zero exactly at a saddle point, measured as
    ``||(w - w+, (u - u+) / n)||_omega`` (the dual in the units ``u / n`` of the paper's ``alpha``
    scaled by 1/n, where the coupling is ``(u/n)^T A w``)."""
    rw = w - problem.prox(w - tau * Gw, tau)
    ru = (u - problem.loss.prox_conjugate(u + s * Aw, problem.y, s)) / problem.n
    return _wnorm(rw, ru, omega)


class PDProxState(eqx.Module):
    """Iterates of Pdprox. ``w, u``: last primal / dual iterate (``w_t``, ``alpha_t``);
    ``aux``: ``beta_t`` (dual variant), ``v_t`` (primal variant) or ``w_{t-1}`` (cp);
    ``Aw = A w_t`` and ``Gw = A^T u_t / n`` (cached products); ``Aw_prev = A w_{t-1}`` (cp);
    ``*_avg``: running means over the ``t`` steps since the last restart (linearity: the
    products of the averages are the averages of the products); ``k``: steps in all; ``tau,
    sigma``: current steps. Restarts: ``w0, u0`` the last restart point, ``r0`` its residual,
    ``r_prev`` the last candidate residual, ``omega_init`` the initial primal weight,
    ``restarts`` a counter."""

    w: jax.Array
    u: jax.Array
    aux: jax.Array
    Aw: jax.Array
    Gw: jax.Array
    Aw_prev: jax.Array
    w_avg: jax.Array
    u_avg: jax.Array
    Aw_avg: jax.Array
    Gw_avg: jax.Array
    t: jax.Array
    k: jax.Array
    tau: jax.Array
    sigma: jax.Array
    w0: jax.Array
    u0: jax.Array
    r0: jax.Array
    r_prev: jax.Array
    omega_init: jax.Array
    restarts: jax.Array


class PDProx(Solver):
    """Pdprox primal-dual prox method (Algorithms 1-3 and the two-step variant).

    Args:
        variant: ``"dual"`` (Algorithm 1), ``"primal"`` (Algorithm 2) or ``"cp"`` (Algorithm 3 =
            Chambolle-Pock with ``theta = 1``).
        step: the paper's ``gamma`` (primal step ``tau`` and dual step ``sigma`` on the paper's
            scale, where the dual gradient carries the 1/n). Default ``sqrt(1/(2c))`` with
            ``c = ||A||_2^2 / n^2`` from ``A.spectral_norm_sq()`` (Theorem 6's step).
        ratio: ``tau / sigma`` for the two-step-size variant (paper section 5.7; ``None`` = 1).
            ``tau sigma = gamma^2`` is kept. With adaptive restarts this is the starting ratio.
        scale: multiplies ``gamma`` (the paper's scale-up tuning; ``> 1`` voids Theorem 6;
            ``sqrt(2)`` is Chambolle-Pock's limit ``tau sigma ||K||^2 = 1``).
        average: report the averaged iterates (the paper's output) or the last iterate.
        restart: a :mod:`jaxprox.restarts` scheme (*ours*, not in the paper), or ``None`` (the
            paper: one uniform average over all steps). Default
            ``AdaptiveRestart(check_every=64)`` (PDLP, Applegate et al. 2021; cuPDLP, Lu & Yang
            2023): at each test the candidate is the average since the last restart or the last
            iterate, whichever has the smaller :func:`fixed_point_residual` ``r``, and the run
            restarts from it on PDLP's sufficient / necessary / artificial criteria; at a
            restart the primal weight ``omega`` moves halfway (in log scale) towards
            ``||u0_new - u0_old|| / (n ||w0_new - w0_old||)`` with ``tau = eta / omega`` and dual
            step ``sigma / n^2 = eta omega`` (``eta`` fixed, so ``tau sigma`` and Theorem 6's
            step condition are kept): the ratio ``tau / sigma`` is tuned on the fly.
            ``FixedRestart(every)`` restarts to the average every that many steps. The output is
            the average since the last restart (``average=True``) or the last iterate.

    Defaults (``PDProx()``): Algorithm 1 with Theorem 6's step, adaptive restarts, stop at a
    relative duality gap of 1e-6 or after ``max_steps=None`` steps (from the size of the data,
    100,000 to 200,000: ``iteration_range``, :func:`jaxprox.defaults.iteration_budget`), gap checked
    every 50 steps. They reach a
    certified 1e-6 on hinge / absolute / quantile + l1 and epsilon-insensitive + l2^2 on a1a,
    australian and german.numer (``benchmarks/results/pdprox_optima.md``). ``variant="cp",
    scale=1.4`` (Chambolle-Pock's step limit) is about 20% faster there.

    The saddle point returned by ``solution`` is ``(w, u)`` with ``u`` the margin dual
    (``u_i in dom l*``; hinge: ``u = -y alpha``). Implicit differentiation uses the
    Chambolle-Pock fixed-point map ``problem.saddle_residual``.
    """

    requires = (cap.ERM_PROBLEM, cap.PROX)
    rescales = True
    iteration_range = (100_000, 200_000)  # max_steps=None: jaxprox.defaults.iteration_budget

    variant: str = eqx.field(static=True, default="dual")
    gamma: float | None = eqx.field(static=True, default=None)
    ratio: float | None = eqx.field(static=True, default=None)
    scale: float = eqx.field(static=True, default=1.0)
    average: bool = eqx.field(static=True, default=True)
    restart: RestartScheme | None = AdaptiveRestart(check_every=64)

    def __init__(self, variant="dual", step=None, ratio=None, scale=1.0, average=True,
                 restart=AdaptiveRestart(check_every=64), *, tol=None, atol=0.0, max_steps=None,
                 check_every=50, verbose=False, progress=False, rescale=None):
        if variant not in _VARIANTS:
            raise ValueError(f"variant must be one of {_VARIANTS}, got {variant!r}")
        if ratio is not None and not ratio > 0:
            raise ValueError(f"ratio must be positive, got {ratio!r}")
        if step is not None and not step > 0:
            raise ValueError(f"step must be positive, got {step!r}")
        if not scale > 0:
            raise ValueError(f"scale must be positive, got {scale!r}")
        self.variant, self.gamma, self.ratio = variant, None if step is None else float(step), ratio
        if restart is not None and not isinstance(restart, RestartScheme):
            raise TypeError("restart must be None or a jaxprox.restarts scheme (AdaptiveRestart(), "
                            f"FixedRestart(every)), got {restart!r}")
        self.scale, self.average, self.restart = float(scale), bool(average), restart
        self.tol, self.atol, self.max_steps, self.check_every = tol, atol, max_steps, check_every
        self.rescale = rescale
        self.verbose, self.progress = verbose, progress

    # ------------------------------------------------------------------------------ init
    def init(self, problem, init=None):
        dt = problem.A.dtype
        w = problem.zeros() if init is None else jnp.asarray(init, dt).reshape(problem.param_shape)
        if problem.constraint is not None:
            w = problem.constraint.project(w)
        u = problem.loss.project_dual(jnp.zeros(problem.y.shape, dt), problem.y)  # shape of A w
        tau, sigma = default_steps(problem, self.gamma, self.ratio, self.scale)
        tau, sigma = jnp.asarray(tau, dt), jnp.asarray(sigma, dt)
        Aw, Gw = linear_at(problem.A.mv, w, init is None and problem.constraint is None), problem.A.rmv(u) / problem.n
        aux = u if self.variant == "dual" else w
        z0, i0 = jnp.zeros((), jnp.int32), jnp.zeros((), jnp.int32)
        omega = self._omega(problem, tau, sigma)
        r0 = jnp.asarray(jnp.inf, dt)
        if self.restart is not None and self.restart.uses_residual:
            r0 = fixed_point_residual(problem, w, u, Aw, Gw, tau, sigma / problem.n, omega)
        return PDProxState(w, u, aux, Aw, Gw, Aw, w, u, Aw, Gw, z0, i0, tau, sigma, w, u, r0, r0, omega, i0)

    @staticmethod
    def _omega(problem, tau, sigma):
        """Primal weight ``omega = sqrt(sigma_tilde / tau)``, ``sigma_tilde = sigma / n^2`` (the
        dual step for ``u / n``)."""
        return jnp.sqrt(sigma / tau) / problem.n

    # ------------------------------------------------------------------------------ step
    def _iterate(self, problem, st: PDProxState):
        """One iteration of the chosen algorithm: ``(w_t, u_t, aux_t, A w_t, A^T u_t / n, Aw_prev)``."""
        A, y, n, loss = problem.A, problem.y, problem.n, problem.loss
        tau, s = st.tau, st.sigma / n
        if self.variant == "dual":  # Algorithm 1
            u = loss.prox_conjugate(st.aux + s * st.Aw, y, s)           # step 4 (G_alpha(w_{t-1}))
            Gw = A.rmv(u) / n
            w = problem.prox(st.w - tau * Gw, tau)                       # step 5
            Aw = A.mv(w)
            beta = loss.prox_conjugate(st.aux + s * Aw, y, s)            # step 6 (G_alpha(w_t))
            return w, u, beta, Aw, Gw, st.Aw_prev
        if self.variant == "primal":  # Algorithm 2
            w = problem.prox(st.aux - tau * st.Gw, tau)                  # step 4
            Aw = A.mv(w)
            u = loss.prox_conjugate(st.u + s * Aw, y, s)                 # step 5
            Gw = A.rmv(u) / n
            v = w + tau * (st.Gw - Gw)                                   # step 6
            return w, u, v, Aw, Gw, st.Aw_prev
        # Algorithm 3, double-primal = Chambolle-Pock(theta = 1)
        u = loss.prox_conjugate(st.u + s * (2.0 * st.Aw - st.Aw_prev), y, s)
        Gw = A.rmv(u) / n
        w = problem.prox(st.w - tau * Gw, tau)
        return w, u, st.w, A.mv(w), Gw, st.Aw

    def step(self, problem, st: PDProxState) -> PDProxState:
        w, u, aux, Aw, Gw, Aw_prev = self._iterate(problem, st)
        t, k = st.t + 1, st.k + 1
        inv = 1.0 / t.astype(st.tau.dtype)
        mean = lambda a, x: a + inv * (x - a)  # noqa: E731
        w_avg, u_avg, Aw_avg, Gw_avg = mean(st.w_avg, w), mean(st.u_avg, u), mean(st.Aw_avg, Aw), mean(st.Gw_avg, Gw)
        tau, sigma, w0, u0, r0, r_prev, restarts = st.tau, st.sigma, st.w0, st.u0, st.r0, st.r_prev, st.restarts
        if self.restart is None:
            return PDProxState(w, u, aux, Aw, Gw, Aw_prev, w_avg, u_avg, Aw_avg, Gw_avg, t, k, tau, sigma,
                               w0, u0, r0, r_prev, st.omega_init, restarts)
        sel = lambda r, a, b: jnp.where(r, a, b)  # noqa: E731
        check = self.restart.is_check(k)
        if self.restart.uses_residual:
            omega = self._omega(problem, tau, sigma)
            s = sigma / problem.n

            def residuals(_):
                return (fixed_point_residual(problem, w_avg, u_avg, Aw_avg, Gw_avg, tau, s, omega).astype(tau.dtype),
                        fixed_point_residual(problem, w, u, Aw, Gw, tau, s, omega).astype(tau.dtype))

            # the two residuals cost two prox of h (an SVD each for the trace norm): evaluated
            # at the restart tests only (under vmap the cond becomes a select)
            inf = jnp.asarray(jnp.inf, tau.dtype)
            r_avg, r_cur = jax.lax.cond(check, residuals, lambda _: (inf, inf), None)
            use_avg = r_avg <= r_cur
            r = jnp.minimum(r_avg, r_cur)
            cand = [sel(use_avg, a, b) for a, b in ((w_avg, w), (u_avg, u), (Aw_avg, Aw), (Gw_avg, Gw))]
            restart = check & self.restart.should_restart(r, r0, r_prev, t, k)
            r_prev = sel(check, r, r_prev)
            # primal weight from the anchors' moves (du in units u / n)
            dw = jnp.sqrt(jnp.vdot(cand[0] - w0, cand[0] - w0).real)
            du = jnp.sqrt(jnp.vdot(cand[1] - u0, cand[1] - u0).real) / problem.n
            omega_new = sel(restart, self.restart.primal_weight(omega, dw, du, st.omega_init), omega)
            eta = jnp.sqrt(tau * sigma)  # tau = eta' / omega, sigma / n^2 = eta' omega, eta' = eta / n
            tau, sigma = eta / (problem.n * omega_new), eta * problem.n * omega_new
            w0, u0 = sel(restart, cand[0], w0), sel(restart, cand[1], u0)
            r0 = sel(restart, r, r0)
            r_prev = sel(restart, jnp.asarray(jnp.inf, r.dtype), r_prev)
        else:
            # no residual test: restart to the average at every test
            restart = check & self.restart.should_restart(r0, r0, r_prev, t, k)
            cand = [w_avg, u_avg, Aw_avg, Gw_avg]
        # restarting costs no matvec: the cached products of the candidate come with it
        w, u, Aw, Gw = (sel(restart, c, x) for c, x in zip(cand, (w, u, Aw, Gw)))
        if self.variant == "dual":
            aux = sel(restart, u, aux)
        elif self.variant == "primal":
            aux = sel(restart, w, aux)
        else:
            aux, Aw_prev = sel(restart, w, aux), sel(restart, Aw, Aw_prev)
        t = jnp.where(restart, 0, t)  # the averages (= restart point) are overwritten next step
        restarts = restarts + restart.astype(jnp.int32)
        return PDProxState(w, u, aux, Aw, Gw, Aw_prev, w_avg, u_avg, Aw_avg, Gw_avg, t, k, tau, sigma,
                           w0, u0, r0, r_prev, st.omega_init, restarts)

    # ------------------------------------------------------------------------------ outputs
    def params(self, st: PDProxState):
        return st.w_avg if self.average else st.w

    def dual(self, st: PDProxState):
        return st.u_avg if self.average else st.u

    def certificate(self, problem, st: PDProxState):
        w = self.params(st)
        p = problem.objective(w)
        value = lambda u: projected_dual_value(problem, u)  # noqa: E731
        d = best_of(value, st.u_avg, st.u)
        if support_dual_rows(problem):  # the hinge loss with an l1 penalty, certified below float64:
            # also the dual points of w's support (each a small least-squares solve)
            supported = lambda: best_of(value, *support_duals(problem, w))  # noqa: E731
            d = jnp.maximum(d, at_some_checks(st.k, self.check_every, supported, d))
        d = problem.lower_bound(w, p, d)
        return p, d, p - d

    # ------------------------------------------------------------------------------ implicit diff
    def solution(self, st: PDProxState):
        return (self.params(st), self.dual(st))

    def unpack(self, z):
        return z

    def residual(self, problem, z):
        """:func:`saddle_residual` with this solver's steps."""
        return saddle_residual(problem, z, self.gamma, self.ratio, self.scale)


