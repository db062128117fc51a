"""Restarted primal-dual (Halpern PDHG) method for Wasserstein DRSVM, problem (1) of the DRSVM paper
("Fast Epigraphical Projection-based Incremental Algorithms for Wasserstein Distributionally
Robust Support Vector Machine", Li, Chen & So, NeurIPS 2020).

The paper solves (1) with incremental methods (:mod:`jaxprox.solvers.incremental`). This file is
**our** full-batch alternative, built on the saddle form of (1): writing
``max{h_1, h_2, 0} = max_{a in Delta} a_1 h_1 + a_2 h_2`` with ``Delta = {a >= 0, a_1 + a_2 <= 1}``,

    min_{x = (w, lam) in L_q} max_{a in Delta^n}
        L(x, a) = eps*lam + (c/2)||w||^2 + <b, a> + <a, K x>,                      (S)
    (K x)_i = (1/n) (-z_i^T w, z_i^T w - kappa*lam),      b_i = (1/n) (1, 1).

For q in {1, inf} and c = 0 this is an LP, for which restarted PDHG converges linearly
(Applegate et al. 2021, PDLP; Lu & Yang 2024, restarted Halpern PDHG). One iteration is the
Chambolle-Pock map ``T`` (Chambolle & Pock 2011, Alg. 1, theta = 1):

    x+ = argmin_{x in L_q} eps*lam + (c/2)||w||^2 + ||x - (x - tau K^T a)||^2 / (2 tau)
       = scaled-cone projection (eq. (28)'s trick): (w' , lam) = P_{||w'||_q <= t lam}(v_w / t,
         v_lam - tau eps),  w = w' / t,  t = sqrt(1 + tau c),
    a+ = P_Delta(a + sigma (b + K (2 x+ - x)))          (per sample, a 2-d closed form),

with ``tau = eta/omega``, ``sigma = eta*omega``, ``eta = 0.99/||K||_2`` (:func:`saddle_norm`) and a
primal weight ``omega`` (PDLP). The outer scheme is the reflected Halpern iteration with adaptive
restarts (Lu & Yang 2024, "Restarted Halpern PDHG for linear programming"):

    z^{j+1} = (j+1)/(j+2) ((1+rho) T(z^j) - rho z^j) + 1/(j+2) z^0,

restarted at ``z^0 <- T(z^j)`` by a :mod:`jaxprox.restarts` scheme, by default
:class:`~jaxprox.restarts.AdaptiveRestart` tested at every step on the fixed-point residual
``r_j = ||z^j - T z^j||_omega`` (``||(dx, da)||_omega^2 = omega ||dx||^2 + ||da||^2 / omega``):
sufficient decay ``r_j <= 0.2 r_0``, necessary decay ``r_j <= 0.8 r_0`` with ``r_j > r_{j-1}``, or
``j >= 0.36 k`` (artificial). At each restart ``omega`` moves halfway (in log scale) towards
``||a^0_new - a^0_old|| / ||x^0_new - x^0_old||`` (PDLP's primal-weight update), kept within a
factor ``omega_range = 300`` of its initial value. The clamp is ours: far from the solution
the anchors move by about one step, ``dx ~ tau = eta/omega`` and ``da ~ sigma = eta*omega``, so the
estimate grows like ``omega^2`` and the half-way update ``log omega <- 1.5 log omega + const`` can
run away. On ijcnn1 (q = 1, c = 0) it did: omega went from 16 to 2.7e6 while the primal was already
optimal, the dual froze at 0/1 selections, and the certified gap needed 10,944 iterations; with the
clamp 1,600. The a9a rows with c = 1 want omega about 1000x its initial value, which a factor of 300
still nearly allows (320 iterations either way on a9a q = 1, c = 1;
``benchmarks/results/drsvm_tables_all.md``).

Certificate: ``x_out = T(z)`` is feasible (a cone projection) and ``a_out`` lies in
``Delta^n``, so :meth:`jaxprox.problems.drsvm.DRSVM.certificate` gives an honest duality gap that
tends to 0 with the iterates (no plateau: the dual iterate converges to an optimal dual point).

Differentiation: the solution is the triple ``(w, lam, a)``, a root of :func:`saddle_residual`
``z - T(z)``, so ``jp.solve`` differentiates it implicitly (forward and reverse) wherever the
solution map is differentiable. The other DRSVM solvers (:mod:`.incremental`, :mod:`.drsvm_ipm`)
share this residual.
"""
from __future__ import annotations

import dataclasses

import equinox as eqx
import jax
import jax.numpy as jnp

from .. import projections as _proj
from ..defaults import columns_in_different_units
from ..solver import Solver
from ..operators import exact_eig_side
from ..problems.validation import concrete
from .. import capabilities as cap
from ..restarts import AdaptiveRestart, RestartScheme

__all__ = ["DRSVMPDHG", "PDHGState", "saddle_residual"]


# ============================================================================================
# the saddle form (S)
# ============================================================================================
def K(problem, w, lam):
    """``(K x)_i = (1/n)(-z_i^T w, z_i^T w - kappa lam)``; shape ``(n, 2)``."""
    u = problem.A.mv(w)
    return jnp.stack([-u, u - problem.kappa * lam], axis=1) / problem.n


def KT(problem, a):
    """Adjoint ``K^T a = ((1/n) Z^T (a_2 - a_1), -(kappa/n) sum_i a_i2)``."""
    return problem.A.rmv(a[:, 1] - a[:, 0]) / problem.n, -problem.kappa * jnp.mean(a[:, 1])


def saddle_norm(problem, iters=30, lam_scale=1.0, dcol=None):
    """``||K S||_2`` with ``S = diag(d_1, ..., d_d, sqrt(lam_scale))`` (the primal step of
    ``lam`` is ``lam_scale`` times that of ``w``; ``d = dcol`` a column scaling, default 1),
    gradient-stopped, times 1.01 as a safety margin. With ``Z_d = Z diag(d)`` and ``r =
    sqrt(lam_scale)``, ``S K^T K S = (1/n^2) [[2 Z_d^T Z_d, -kappa r Z_d^T 1], [-kappa r 1^T Z_d,
    n kappa^2 r^2]]``: its largest eigenvalue is computed exactly when ``d <=``
    :func:`jaxprox.operators.exact_eig_side` ``(iters)`` (one GEMM and a symmetric eigenvalue
    call), else by ``iters`` power iterations (a lower bound)."""
    dt = problem.Z.dtype
    r = jnp.sqrt(jnp.asarray(lam_scale, dt))
    dc = jnp.ones(problem.d, dt) if dcol is None else dcol
    if problem.d <= exact_eig_side(iters):
        Zd = problem.Z * dc
        col = -problem.kappa * r * jnp.sum(Zd, axis=0)
        M = jnp.block([[2.0 * (Zd.T @ Zd), col[:, None]],
                       [col[None, :], jnp.reshape(problem.n * (problem.kappa * r) ** 2, (1, 1))]])
        top = jnp.maximum(jnp.linalg.eigvalsh(M)[-1], 0.0)
        return jax.lax.stop_gradient(1.01 * jnp.sqrt(top) / problem.n + 1e-30)
    v = (jnp.ones(problem.d, dt) / jnp.sqrt(problem.d + 1.0), jnp.ones((), dt) / jnp.sqrt(problem.d + 1.0))

    def body(_, v):
        gw, gl = KT(problem, K(problem, dc * v[0], r * v[1]))
        gw, gl = dc * gw, r * gl
        nrm = jnp.sqrt(jnp.vdot(gw, gw) + gl * gl)
        nrm = jnp.where(nrm > 0, nrm, 1.0)
        return gw / nrm, gl / nrm

    v = jax.lax.fori_loop(0, iters, body, v)
    kv = K(problem, dc * v[0], r * v[1])
    return jax.lax.stop_gradient(1.01 * jnp.sqrt(jnp.vdot(kv, kv)) + 1e-30)


def project_dual(a):
    """Per-sample projection onto ``Delta = {a >= 0, a_1 + a_2 <= 1}``: ``max(a, 0)`` when its
    sum is <= 1, else the projection onto the segment ``a_1 + a_2 = 1``:
    ``(t, 1 - t)`` with ``t = clip((a_1 - a_2 + 1)/2, 0, 1)``."""
    p = jnp.maximum(a, 0.0)
    t = jnp.clip(0.5 * (a[:, 0] - a[:, 1] + 1.0), 0.0, 1.0)
    seg = jnp.stack([t, 1.0 - t], axis=1)
    return jnp.where((jnp.sum(p, axis=1) <= 1.0)[:, None], p, seg)


def prox_primal(problem, vw, vl, tau, lam_scale=1.0, dcol=None):
    """``argmin_{||w||_q <= lam} eps lam + (c/2)||w||^2 + ||w - vw||^2/(2 tau)
    + (lam - vl)^2/(2 s tau)`` (``s = lam_scale``): with ``t_c = sqrt(1 + tau c)``,
    ``r = sqrt(s)``, ``w' = t_c w``, ``mu = lam / r`` it is the Euclidean projection onto the
    scaled cone ``||w'||_q <= t_c r mu`` of ``(vw / t_c, (vl - s tau eps) / r)`` (the eq. (28)
    change of variables, :func:`jaxprox.projections.epigraph_scaled`), mapped back.

    With a column scaling ``d = dcol`` (q = 1 or inf) the ``w``-metric is
    ``sum_j (w_j - vw_j)^2 / (2 tau d_j^2)``: in ``u' = t_j w / d`` (``t_j = sqrt(1 + tau c
    d_j^2)``) it is the Euclidean projection of ``(vw / (d t), (vl - s tau eps) / r)`` onto
    ``||e * u'||_q <= mu``, ``e = d / (t r)`` (:func:`jaxprox.projections.epigraph_weighted`)."""
    r = jnp.sqrt(jnp.asarray(lam_scale, vw.dtype))
    shift = (vl - lam_scale * tau * problem.epsilon) / r
    if dcol is not None:
        t = jnp.sqrt(1.0 + tau * problem.c * dcol * dcol)
        up, mu = _proj.epigraph_weighted(vw / (dcol * t), shift, dcol / (t * r), problem.norm)
        return dcol * up / t, r * mu
    tc = jnp.sqrt(1.0 + tau * problem.c)
    wp, mu = _proj.epigraph_scaled(vw / tc, shift, tc * r, problem.norm)
    return wp / tc, r * mu


def pdhg_map(problem, z, tau, sigma, lam_scale=1.0, dcol=None):
    """One Chambolle-Pock step ``T(z)`` on (S), primal first (primal steps ``tau d_j^2`` for
    ``w_j``, ``d = dcol`` default 1, and ``lam_scale * tau`` for ``lam``):
    ``x+ = prox_primal(x - D K^T a)``, ``a+ = P_Delta(a + sigma (b + K(2 x+ - x)))``."""
    w, lam, a = z
    gw, gl = KT(problem, a)
    tw = tau if dcol is None else tau * dcol * dcol
    wn, ln = prox_primal(problem, w - tw * gw, lam - lam_scale * tau * gl, tau, lam_scale, dcol)
    an = project_dual(a + sigma * (1.0 / problem.n + K(problem, 2 * wn - w, 2 * ln - lam)))
    return wn, ln, an


def saddle_residual(problem, z, tau=None, sigma=None):
    """``z - T(z)`` for ``z = (w, lam, a)``: zero exactly at a saddle point of (S), i.e. at a
    primal-dual optimal pair of (1) (the residual ``jp.solve`` differentiates implicitly for
    every DRSVM solver). Default steps ``tau = sigma = 0.99/||K||_F`` (gradient-stopped; the zero
    set does not depend on them)."""
    if tau is None or sigma is None:
        fro = jnp.sqrt((2.0 * jnp.vdot(problem.Z, problem.Z) + problem.n * problem.kappa ** 2)) / problem.n
        eta = jax.lax.stop_gradient(0.99 / fro)
        tau = eta if tau is None else tau
        sigma = eta if sigma is None else sigma
    Tw, Tl, Ta = pdhg_map(problem, z, tau, sigma)
    w, lam, a = z
    return w - Tw, lam - Tl, a - Ta


# ============================================================================================
# restarted reflected-Halpern PDHG
# ============================================================================================


def _wnorm(dw, dl, da, omega):
    return jnp.sqrt(omega * (jnp.vdot(dw, dw) + dl * dl) + jnp.vdot(da, da) / omega)


class PDHGState(eqx.Module):
    w: jax.Array          # output T(z) (feasible: in the cone / in Delta^n)
    lam: jax.Array
    a: jax.Array
    zw: jax.Array         # Halpern iterate z = (zw, zlam, za) (may leave the cone when rho > 0)
    zlam: jax.Array
    za: jax.Array
    w0: jax.Array         # anchor z^0 (last restart point)
    lam0: jax.Array
    a0: jax.Array
    j: jax.Array          # iterations since the last restart
    k: jax.Array          # iterations in total
    r0: jax.Array         # residual at the anchor
    r_prev: jax.Array
    omega: jax.Array      # primal weight
    eta: jax.Array        # 0.99 / ||K||
    restarts: jax.Array
    omega_init: jax.Array   # initial primal weight (centre of the allowed range)
    lam_scale: jax.Array    # primal step of lam relative to that of w
    dcol: jax.Array | None = None   # column scaling d of w (q = inf), None: no scaling


class DRSVMPDHG(Solver):
    """Restarted reflected-Halpern PDHG on the saddle form (S) of DRSVM (module docstring).

    One driver step = one PDHG map evaluation (one ``Z w`` and one ``Z^T a``).

    Args:
        omega: initial primal weight; ``None`` uses ``eps * sqrt(n / 2) * s`` (PDLP's
            ``||c|| / ||b||`` for (S), times the data's scale ``s = max_ij |Z_ij d_j|``, 1 on
            data scaled to ``[-1, 1]``).
        rho: reflection in ``[0, 1]`` (``0``: plain Halpern, ``1``: reflected, about 2x faster).
        lam_scale: primal step of ``lam`` relative to that of ``w`` (a diagonal preconditioner;
            the cone projection becomes a scaled-cone projection); ``None`` (default): ``s``.
            Features in large units (``Z`` times ``s``) are the problem with ``epsilon / s`` and
            ``kappa / s`` in ``(s w, s lam)``, whose ``lam`` and ``w`` need steps ``s`` apart and a
            primal weight ``s`` times larger: with both at 1, PDHG made no progress on data scaled
            by 1000 (``tests/test_drsvm.py::test_pdhg_follows_the_scale_of_the_data``).
        scale_columns: diagonal (column) preconditioning of ``w`` for q = inf or 1 (``None``, the
            default: on for q = inf, and for q = 1 on data whose column ranges differ by more than
            10x, :meth:`prepare`): primal steps
            ``tau d_j^2`` with ``d_j = mean_k ||Z_:k|| / ||Z_:j||`` (Pock & Chambolle 2011's
            diagonal preconditioning restricted to the columns; equivalently PDHG on
            ``w = D u``, where the box cone ``||w||_inf <= lam`` becomes the weighted box cone
            ``|d_j u_j| <= lam``, projected exactly by
            :func:`jaxprox.projections.epigraph_weighted`; for q = 1 the weighted l1 cone).
            ``None`` (default): on for
            ``norm="linf"``, off otherwise (q = 2 does not support it; for q = 1 it did not cut
            iterations on a9a / ijcnn1: 256 -> 320 and 2176 -> 2304 at omega_range = 100). On a9a q = inf it cuts the
            iterations to a certified 1e-6 gap from ~6000 to ~900
            (``benchmarks/results/drsvm_pdhg.md``).
        power_iters: power iterations for ``||K||_2`` at init where it is not computed exactly
            (:func:`saddle_norm`: exact for ``d <=`` :func:`jaxprox.operators.exact_eig_side`
            ``(power_iters)``).
        restart: a :mod:`jaxprox.restarts` scheme for the Halpern anchor, or ``None`` (plain
            Halpern from the start point). Default ``AdaptiveRestart(check_every=1,
            omega_range=300.0)`` (module docstring; ``omega_range=float("inf")`` gives PDLP's
            unclamped primal-weight update).
        tol, max_steps, check_every: driver settings (defaults ``1e-6``; ``None``: from the size
            of the data, 100,000 to 400,000, ``iteration_range``; and ``64``).
    """

    requires = (cap.DRSVM_PROBLEM,)
    option_ranges = {"omega": "> 0", "rho": "[0, 1]", "lam_scale": "> 0", "power_iters": ">= 1"}

    omega: float | None = None
    rho: float = 1.0
    lam_scale: float | None = None
    scale_columns: bool | None = eqx.field(static=True, default=None)
    power_iters: int = eqx.field(static=True, default=30)
    restart: RestartScheme | None = AdaptiveRestart(check_every=1, omega_range=300.0)
    max_steps: int | None = eqx.field(static=True, default=None, kw_only=True)
    check_every: int = eqx.field(static=True, default=64, kw_only=True)
    iteration_range = (100_000, 400_000)  # max_steps=None: jaxprox.defaults.iteration_budget

    def prepare(self, problem):
        """``scale_columns=None`` resolved on concrete data: on for ``norm="linf"``, and for
        ``norm="l1"`` where the column ranges ``max_i |Z_ij|`` differ by more than
        :data:`jaxprox.defaults.RESCALE_RATIO` (features in different units, as for the ERM solvers'
        ``rescale``; evidence in ``benchmarks/results/defaults.md``); left to :meth:`column_scaling` (off for q = 1) when the data are traced."""
        if self.scale_columns is not None or problem.norm != "l1" or not concrete(problem.Z):
            return self
        on = columns_in_different_units(problem.A.column_max_abs())
        return dataclasses.replace(self, scale_columns=True) if on else self

    # ------------------------------------------------------------------ setup
    def init(self, problem, init=None):
        dt = problem.Z.dtype
        a = jnp.zeros((problem.n, 2), dt)
        if init is None:
            w, lam = problem.zeros()
        elif len(init) == 3:  # a primal-dual warm start (w, lam, a), e.g. from ISG / IPPA
            w, lam, a = (jnp.asarray(v, dt) for v in init)
            a = project_dual(a)
        else:
            w, lam = (jnp.asarray(v, dt) for v in init)
        w, lam = problem.project((w, lam))
        dcol = self.column_scaling(problem)
        scale = self.data_scale(problem, dcol)
        ls = scale if self.lam_scale is None else jnp.asarray(self.lam_scale, dt)
        eta = 0.99 / saddle_norm(problem, self.power_iters, ls, dcol)
        n = problem.n
        om = (problem.epsilon * jnp.sqrt(n / 2.0) * scale if self.omega is None
              else jnp.asarray(self.omega, dt))
        om = jnp.maximum(jnp.asarray(om, dt), 1e-6)
        zero = jnp.zeros((), dt)
        i0 = jnp.zeros((), jnp.int32)
        return PDHGState(w, lam, a, w, lam, a, w, lam, a, i0, i0, zero, zero, om, eta, i0, om, ls, dcol)

    @staticmethod
    def data_scale(problem, dcol=None):
        """``s = max_ij |Z_ij d_j|`` (gradient-stopped; 1 for ``Z = 0``): the units of the features
        the primal steps see (``d = dcol`` the column scaling, or 1)."""
        Z = problem.Z if dcol is None else problem.Z * dcol
        s = jnp.max(jnp.abs(Z))
        return jax.lax.stop_gradient(jnp.where(s > 0, s, jnp.ones_like(s)))

    def column_scaling(self, problem):
        """``d_j = mean_k ||Z_:k|| / ||Z_:j||`` (1 for empty columns), gradient-stopped, or
        ``None`` when column scaling is off (see ``scale_columns``)."""
        on = problem.norm == "linf" if self.scale_columns is None else self.scale_columns
        if not on:
            return None
        if problem.norm not in ("l1", "linf"):
            raise ValueError("DRSVMPDHG(scale_columns=True) supports norm='l1' and 'linf' only")
        cn = jnp.sqrt(jnp.sum(problem.Z * problem.Z, axis=0))
        nz = cn > 1e-12 * jnp.maximum(jnp.max(cn), 1e-300)
        mean = jnp.sum(jnp.where(nz, cn, 0.0)) / jnp.maximum(jnp.sum(nz), 1)
        return jax.lax.stop_gradient(jnp.where(nz, mean / jnp.where(nz, cn, 1.0), 1.0))

    # ------------------------------------------------------------------ iteration
    def step(self, problem, s: PDHGState) -> PDHGState:
        tau, sigma = s.eta / s.omega, s.eta * s.omega
        Tw, Tl, Ta = pdhg_map(problem, (s.zw, s.zlam, s.za), tau, sigma, s.lam_scale, s.dcol)
        un = (lambda v: v) if s.dcol is None else (lambda v: v / s.dcol)  # noqa: E731  (w -> u = w/d)
        r = _wnorm(un(s.zw - Tw), s.zlam - Tl, s.za - Ta, s.omega)
        r0 = jnp.where(s.j == 0, r, s.r0)
        # reflected Halpern step towards the anchor
        jf = s.j.astype(r.dtype)
        th = (jf + 1.0) / (jf + 2.0)
        rho = self.rho
        hal = lambda t, z, z0: th * ((1.0 + rho) * t - rho * z) + (1.0 - th) * z0  # noqa: E731
        hw, hl, ha = hal(Tw, s.zw, s.w0), hal(Tl, s.zlam, s.lam0), hal(Ta, s.za, s.a0)
        restart, om, r_prev = jnp.zeros((), bool), s.omega, r
        if self.restart is not None:
            # restart: new anchor T(z), primal weight from the anchors' moves
            check = self.restart.is_check(s.k)
            restart = check & (s.j > 0) & self.restart.should_restart(r, r0, s.r_prev, s.j, s.k)
            dw = un(Tw - s.w0)
            dx = jnp.sqrt(jnp.vdot(dw, dw) + (Tl - s.lam0) ** 2)
            da = jnp.sqrt(jnp.vdot(Ta - s.a0, Ta - s.a0))
            om = jnp.where(restart, self.restart.primal_weight(s.omega, dx, da, s.omega_init), s.omega)
            r_prev = jnp.where(check, r, s.r_prev)
        sel = lambda new, keep: jnp.where(restart, new, keep)  # noqa: E731
        return PDHGState(
            w=Tw, lam=Tl, a=Ta, zw=sel(Tw, hw), zlam=sel(Tl, hl), za=sel(Ta, ha),
            w0=sel(Tw, s.w0), lam0=sel(Tl, s.lam0), a0=sel(Ta, s.a0),
            j=jnp.where(restart, 0, s.j + 1), k=s.k + 1, r0=r0, r_prev=r_prev, omega=om, eta=s.eta,
            restarts=s.restarts + restart.astype(jnp.int32), omega_init=s.omega_init,
            lam_scale=s.lam_scale, dcol=s.dcol)

    # ------------------------------------------------------------------ outputs
    def params(self, s):
        return (s.w, s.lam)

    def dual(self, s):
        return s.a

    def certificate(self, problem, s):
        return problem.certificate((s.w, s.lam), s.a)

    def solution(self, s):
        return (s.w, s.lam, s.a)

    def residual(self, problem, z):
        return saddle_residual(problem, z)

    def unpack(self, z):
        return (z[0], z[1]), z[2]
