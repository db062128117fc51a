"""Primal-dual interior-point method for Wasserstein DRSVM, problem (1) of the DRSVM paper
("Fast Epigraphical Projection-based Incremental Algorithms for Wasserstein Distributionally
Robust Support Vector Machine", Li, Chen & So, NeurIPS 2020).

Not from the paper, which solves (1) with incremental first-order methods
(:mod:`jaxprox.solvers.incremental`): this is **our** second-order solver for ``d << n``
(against cvxpy + Clarabel: ``benchmarks/results/drsvm_ipm.md``). With
``m = Z w`` and an epigraph variable ``t_i`` per sample, (1) times ``n`` is the conic programme

    min  n eps lam + sum_i t_i + (n c / 2) ||w||^2
    s.t. s0 = t >= 0,   s1 = t - 1 + m >= 0,   s2 = t - 1 - m + kappa lam >= 0,   ||w||_q <= lam,

where the cone is written as linear rows ``G x >= 0`` for q = inf (``lam -+ w_j``) and q = 1
(``r_j -+ w_j``, ``lam - sum r``, an auxiliary ``r in R^d``), and as the second-order cone
``(lam, w) in Q^{d+1}`` for q = 2. Multipliers ``y = (y0, y1, y2)`` of the sample rows and ``yc``
of the cone. One step is Mehrotra's predictor-corrector (Nocedal & Wright, Alg. 14.3): an affine
direction (complementarity target 0), ``sigma = (mu_aff / mu)^3``, then the corrector with target
``sigma mu`` and the second-order terms, both from one factorisation; step lengths by the
fraction-to-the-boundary rule (0.995), primal and dual apart, and up to two of Gondzio's
centrality correctors (``correctors``; same factorisation). The second-order cone uses the
Nesterov-Todd scaling and its Jordan algebra (Alizadeh & Goldfarb 2003, section 5;
:func:`nt_scaling`). Its multiplier is ``O(n eps)`` (it carries the whole ``lam`` row), so a
common target ``sigma mu`` would hold the 3n sample pairs back: the SOC pair is started at
``z = n eps e`` and follows its own target, ``sigma`` times its current complementarity, and
``mu`` averages the sample rows only (on a9a, 38 -> 23 steps).

The Newton system. The ``t``-block is diagonal, so ``t`` is eliminated and the system is the
``p x p`` Schur complement (``p = d + 1``, or ``2 d + 1`` for q = 1, whose ``r`` block, a diagonal
plus a rank one, is eliminated in turn: :meth:`DRSVMBarrier.schur`), with ``W_j = y_j / s_j``:

    S_ww = Z^T diag(alpha) Z + n c I,   S_wlam = Z^T beta,   S_lamlam = sum gamma,   + Gc^T Hc Gc,
    alpha = (W0 (W1 + W2) + 4 W1 W2) / h,   beta = -kappa W2 (W0 + 2 W1) / h,
    gamma = kappa^2 W2 (W0 + W1) / h,       h = W0 + W1 + W2,

(the cancellation-free forms of ``H_xx - H_xt H_tt^{-1} H_tx``; ``Hc = diag(yc / g)`` for linear
cone rows, ``W_NT^{-2}`` for the SOC). A step costs one GEMM ``Z^T diag(alpha) Z`` on the stored
dense ``Z`` (``O(n d^2)``), one ``(d + 1) x (d + 1)`` Cholesky and a few products ``Z v``, ``Z^T u``; 12-45
steps reach a certified relative gap of 1e-6 on a1a, a8a, a9a and ijcnn1.

Certificate: the multipliers ``a_i = (y1_i, y2_i)`` (``y0 + y1 + y2 = 1`` at a dual-feasible
point: a point of ``Delta``, clipped into it) are the dual weights of
:meth:`jaxprox.problems.drsvm.DRSVM.certificate`, which rescales them to dual feasibility, so
the gap is an honest upper bound on ``P(w, lam) - P*``; ``(w, lam)`` stays strictly inside the cone.
Differentiation: the solution is ``(w, lam, a)``, a root (to the solver's accuracy) of the PDHG
map :func:`jaxprox.solvers.drsvm_pd.saddle_residual`, which ``jp.solve`` differentiates implicitly.
"""
from __future__ import annotations

import warnings

import equinox as eqx
import jax
import jax.numpy as jnp
from jax import lax
from jax.flatten_util import ravel_pytree

from ..solver import Solver
from .. import capabilities as cap
from ..operators import linear_at
from ..problems.drsvm import capped_weights, qnorm
from ..problems.validation import concrete
from .drsvm_pd import saddle_residual

__all__ = ["DRSVMBarrier", "BarrierState", "WIDE_FEATURES"]

#: above this many features, and more features than samples, a solve warns before it starts: each
#: step factors a ``(d + 1) x (d + 1)`` system (``O(d^3)``; about 8 s per step at ``d = 5000`` on
#: a 2-core CPU, 30-60 steps), where :class:`jaxprox.DRSVMPDHG` needs two products with ``Z`` per
#: iteration (it certifies 1e-6 in about 21 s on 200 x 5000 Gaussian data, q = 1)
WIDE_FEATURES = 2000


class BarrierState(eqx.Module):
    x: jax.Array       # (w, lam[, r]) flattened: w = x[:d], lam = x[d], r = x[d+1:] (q = 1)
    t: jax.Array       # epigraph variables, one per sample
    m: jax.Array       # Z w
    y: jax.Array       # (3, n) multipliers of the sample constraints s0, s1, s2 >= 0
    yc: jax.Array      # cone multipliers: one per linear row (q = 1, inf); z in Q^{d+1} (q = 2)
    mu: jax.Array      # last complementarity target sigma * mu (diagnostic; each step recomputes mu)
    alpha: jax.Array   # last primal step length (diagnostic)
    d: int = eqx.field(static=True)


# ---------------------------------------------------------------------------------- the cone
def cone_rows(x, d: int, norm: str):
    """The cone ``||w||_q <= lam`` as linear rows ``G x >= 0`` (q = inf: ``lam -+ w_j``; q = 1:
    ``r_j -+ w_j``, ``lam - sum r``), or for q = 2 the cone point ``u = (lam, w)`` of
    ``Q = {u0 >= ||u1||}``."""
    w, lam = x[:d], x[d]
    if norm == "l2":
        return jnp.concatenate([lam[None], w])
    if norm == "linf":
        return jnp.concatenate([lam - w, lam + w])
    r = x[d + 1:]
    return jnp.concatenate([r - w, r + w, (lam - jnp.sum(r))[None]])


def ratio_step(v, dv, axis=None):
    """Largest ``a`` with ``v + a dv >= 0`` (``inf`` when no entry decreases); with ``axis``, one
    such step per entry of the axes kept."""
    return jnp.min(jnp.where(dv < 0, -v / jnp.where(dv < 0, dv, -1.0), jnp.inf), axis=axis)


def soc_step(u, du):
    """Largest ``a`` with ``u + a du`` in ``Q`` (``u`` inside): the smallest positive root of
    ``(u0 + a du0)^2 - ||u1 + a du1||^2``, or where ``u0 + a du0`` reaches 0."""
    A = du[0] ** 2 - jnp.vdot(du[1:], du[1:])
    B = 2.0 * (u[0] * du[0] - jnp.vdot(u[1:], du[1:]))
    C = u[0] ** 2 - jnp.vdot(u[1:], u[1:])
    sq = jnp.sqrt(jnp.maximum(B * B - 4.0 * A * C, 0.0))
    qq = -0.5 * (B + jnp.where(B >= 0, sq, -sq))
    pos = lambda r: jnp.where(r > 0, r, jnp.inf)  # noqa: E731
    r1 = pos(jnp.where(A != 0, qq / jnp.where(A != 0, A, 1.0), jnp.inf))
    r2 = pos(jnp.where(qq != 0, C / jnp.where(qq != 0, qq, 1.0), jnp.inf))
    return jnp.minimum(jnp.minimum(r1, r2), ratio_step(u[:1], du[:1]))


def jdet(u):
    return u[0] ** 2 - jnp.vdot(u[1:], u[1:])


def jprod(u, v):
    """Jordan product of the second-order cone: ``(u^T v, u0 v1 + v0 u1)``."""
    return jnp.concatenate([jnp.vdot(u, v)[None], u[0] * v[1:] + v[0] * u[1:]])


def jdiv(lam, r):
    """``x`` with ``lam o x = r``."""
    x0 = (lam[0] * r[0] - jnp.vdot(lam[1:], r[1:])) / jdet(lam)
    return jnp.concatenate([x0[None], (r[1:] - x0 * lam[1:]) / lam[0]])


def hyperbolic_rotation(v):
    """``R(v) = [[v0, v1^T], [v1, I + v1 v1^T / (1 + v0)]]`` for ``v0^2 - ||v1||^2 = 1``;
    ``R(v)^{-1} = R(J v)`` and ``R(v)^2 = 2 v v^T - J``."""
    v1 = v[1:]
    top = v[None, :]
    rest = jnp.concatenate([v1[:, None], jnp.eye(v1.shape[0], dtype=v.dtype)
                            + jnp.outer(v1, v1) / (1.0 + v[0])], axis=1)
    return jnp.concatenate([top, rest], axis=0)


def nt_scaling(s, z):
    """Nesterov-Todd scaling of ``Q`` at ``(s, z)`` (Alizadeh & Goldfarb 2003, section 5.1):
    ``W = beta R(v)`` with ``v = (s/||s||_J + J z/||z||_J) / (2 gamma)``,
    ``gamma = sqrt((1 + s^T z / (||s||_J ||z||_J)) / 2)``, ``beta = sqrt(||s||_J / ||z||_J)``,
    ``||u||_J = sqrt(u0^2 - ||u1||^2)``; then ``W z = W^{-1} s = lam``. Returns ``(W^{-1}, W, lam)``."""
    J = jnp.ones_like(s).at[1:].set(-1.0)
    ns, nz = jnp.sqrt(jdet(s)), jnp.sqrt(jdet(z))
    sb, zb = s / ns, z / nz
    gam = jnp.sqrt(0.5 * (1.0 + jnp.vdot(sb, zb)))
    v = (sb + J * zb) / (2.0 * gam)
    beta = jnp.sqrt(ns / nz)
    W, Winv = beta * hyperbolic_rotation(v), hyperbolic_rotation(J * v) / beta
    return Winv, W, Winv @ s


class DRSVMBarrier(Solver):
    """Primal-dual interior-point method for DRSVM with Mehrotra's predictor-corrector
    (module docstring).

    Args:
        correctors: Gondzio centrality correctors per step (static; each costs one solve with
            the step's factorisation and three products; kept only when they lengthen the step).
        tol, max_steps, check_every: driver settings (``check_every`` defaults to 1: each step
            costs a weighted Gram, the certificate two products). A run whose certified gap gains
            less than 10% in 20 steps has met the rounding floor of its Newton systems and stops
            ``stalled`` (``stall_window``).

    ``ZT``: ``Z^T``, set by :meth:`hoist` (leave None).

    Needs the dense ``Z`` that :class:`jaxprox.DRSVM` stores (``O(n d)`` memory) and ``d`` small
    enough for a ``d x d`` factorisation per step; differentiation is implicit only.

    First-call cost: every step factors a ``(d + 1) x (d + 1)`` system (LAPACK, loaded with
    jaxprox: nothing for XLA to compile) and runs ``2 + correctors`` solves with its line searches (one
    traced loop); the persistent compilation cache serves later processes
    (``benchmarks/results/latency.md``).
    """

    requires = (cap.DRSVM_PROBLEM,)
    unrollable = False  # the barrier's line searches are while loops: implicit adjoint only
    option_ranges = {"correctors": ">= 0"}
    step_unit = "interior-point steps"
    # an interior-point run gains 10% of its gap within a few steps until it meets the rounding
    # of its Newton systems: 20 steps without such a gain are that floor (defaults.md's sweep)
    stall_window = 20
    short_advice = ("An interior-point method's accuracy is bounded by the rounding of its Newton systems "
                    "(about 1e-8 relative in float64, 1e-4 in float32 on some data): loosen tol, or compute "
                    "in float64.")
    derived = ("ZT",)

    correctors: int = eqx.field(static=True, default=2)
    ZT: jax.Array | None = None
    check_every: int = eqx.field(static=True, default=1, kw_only=True)
    max_steps: int = eqx.field(static=True, default=200, kw_only=True)

    # ------------------------------------------------------------------ setup
    def prepare(self, problem):
        """On concrete data with more than :data:`WIDE_FEATURES` features and more features than
        samples, a warning that hands the problem to :class:`jaxprox.DRSVMPDHG` (the solve still
        runs: its steps cost ``O(d^3)`` each)."""
        if concrete(problem.Z) and problem.d > WIDE_FEATURES and problem.d > problem.n:
            warnings.warn(
                f"DRSVMBarrier: {problem.d} features for {problem.n} samples: every interior-point step "
                f"factors a {problem.d + 1} x {problem.d + 1} system (about 8 s per step at d = 5000 on a "
                f"2-core CPU, and 30-60 steps); for d >> n use jp.DRSVMPDHG(), whose iterations cost two "
                f"products with the data.", UserWarning, stacklevel=3)
        return self

    def hoist(self, problem):
        """This solver with ``Z^T`` stored, transposed once before the loop (:func:`jaxprox.solve`
        calls this): the Gram ``(Z^T diag(alpha)) Z`` from a stored row-major ``Z^T`` is XLA's
        faster GEMM layout than a transpose inside the loop."""
        if self.ZT is not None:
            return self
        return eqx.tree_at(lambda s: s.ZT, self, problem.Z.T, is_leaf=lambda x: x is None)

    def init(self, problem, init=None):
        dt = problem.Z.dtype
        d, n = problem.d, problem.n
        if init is None:
            w, lam = jnp.zeros(d, dt), jnp.ones((), dt)
        else:   # strictly inside the cone: lam above ||w||_q by a margin
            w, lam = (jnp.asarray(v, dt) for v in init[:2])
            nq = qnorm(w, problem.norm)
            lam = jnp.maximum(lam, nq) + 1e-2 * (1.0 + nq)
        x = jnp.concatenate([w, lam[None]])
        if problem.norm == "l1":   # r_j = |w_j| + slack, sum r < lam
            slack = (lam - jnp.sum(jnp.abs(w))) / (2.0 * d)
            x = jnp.concatenate([x, jnp.abs(w) + slack])
        m = linear_at(problem.A.mv, w, init is None)
        t = jnp.maximum(jnp.maximum(1.0 - m, 1.0 + m - problem.kappa * lam), 0.0) + 1.0
        S = jnp.stack(self.slacks(problem, x, t, m))
        f0 = n * problem.epsilon * lam + jnp.sum(t) + 0.5 * n * problem.c * jnp.vdot(w, w)
        mu = f0 / (3 * n)
        g = cone_rows(x, d, problem.norm)
        yc = (n * problem.epsilon * jnp.zeros_like(g).at[0].set(1.0) if problem.norm == "l2"
              else mu / g)
        return BarrierState(x, t, m, mu / S, yc, mu, jnp.zeros((), dt), d)

    # ------------------------------------------------------------------ pieces
    def slacks(self, problem, x, t, m):
        lam = x[problem.d]
        return t, t - 1.0 + m, t - 1.0 - m + problem.kappa * lam

    def cone_terms(self, problem, s: BarrierState):
        """``(Hc, g, scaled)``: the cone's part of the Newton system, the row values ``g`` and,
        for q = 2, ``(W^{-1}, W, lam)``. Linear rows (q = 1, inf): ``Hc = yc / g``, the diagonal
        weights of ``Gc^T diag(yc / g) Gc`` (:meth:`schur` uses their structure); q = 2: the dense
        ``(d + 1) x (d + 1)`` block ``Gc^T W^{-2} Gc`` of the NT scaling."""
        d = problem.d
        g = cone_rows(s.x, d, problem.norm)
        if problem.norm == "l2":
            Gc = jax.jacfwd(lambda x: cone_rows(x, d, problem.norm))(s.x)     # a permutation
            Winv, W, lam = nt_scaling(g, s.yc)
            return Gc.T @ (Winv @ Winv) @ Gc, g, (Winv, W, lam)
        return s.yc / g, g, None

    @staticmethod
    def _rows_t(problem, x, v):
        """``Gc^T v``: the transpose of the (linear) cone rows, without forming ``Gc``."""
        return jax.linear_transpose(lambda u: cone_rows(u, problem.d, problem.norm), x)(v)[0]

    def schur(self, problem, s: BarrierState, W, Hc):
        """The factorised Newton system (module docstring) with weights ``W = y/s``, as
        ``(chol, r_block)``: the Cholesky factor of the ``(d + 1) x (d + 1)`` system in
        ``(w, lam)`` and, for q = 1, the data of the eliminated ``r`` block (else None).

        The cone rows add ``diag(h1 + h2)`` to the ``w`` block and ``h2 - h1`` to its ``lam``
        border (q = inf: ``lam -+ w_j``; q = 1: ``r_j -+ w_j`` couple ``w_j`` with ``r_j``
        instead). For q = 1 the ``r`` block ``K_rr = diag(a) + h3 1 1^T`` (``a = h1 + h2``,
        ``h3`` the weight of ``lam - sum r``) is eliminated by Sherman-Morrison,
        ``K_rr^{-1} = diag(1/a) - kap (1/a)(1/a)^T``, ``kap = h3 / (1 + h3 sum 1/a)``, leaving
        ``K_yy - U K_rr^{-1} U^T = diag(4 h1 h2 / a, 0) + kap v v^T``, ``v = (b / a, 1)``, with
        ``U = [diag(b); -h3 1^T]``, ``b = h2 - h1``: a
        ``(d + 1)``-order factorisation instead of ``2d + 1`` (8x fewer flops) and no dense
        ``Gc`` (no ``O(d^3)`` product ``Gc^T diag(yc / g) Gc``)."""
        d, n, kap = problem.d, problem.n, problem.kappa
        w0, w1, w2 = W
        h = w0 + w1 + w2
        alpha = (w0 * (w1 + w2) + 4.0 * w1 * w2) / h
        beta = -kap * w2 * (w0 + 2.0 * w1) / h
        gamma = jnp.sum(kap * kap * w2 * (w0 + w1) / h)
        ZT = problem.Z.T if self.ZT is None else self.ZT
        Sww = (ZT * alpha) @ problem.Z              # one GEMM on the stored dense Z (d << n)
        Swl = problem.A.rmv(beta)
        r_block = None
        if problem.norm == "l2":
            Dw, bw, cl = jnp.full((d,), n * problem.c, Sww.dtype), 0.0, 0.0
        elif problem.norm == "linf":
            h1, h2 = Hc[:d], Hc[d:]
            Dw, bw, cl = h1 + h2 + n * problem.c, h2 - h1, jnp.sum(h1 + h2)
        else:   # q = 1: eliminate r; K_yy - U K_rr^{-1} U^T = diag(4 h1 h2 / a, 0) + kap v v^T with
            # v = (b / a, 1), written without the cancellation of a - b^2 / a when h1 >> h2
            h1, h2, h3 = Hc[:d], Hc[d:2 * d], Hc[2 * d]
            a, b = h1 + h2, h2 - h1
            ia = 1.0 / a
            kp = h3 / (1.0 + h3 * jnp.sum(ia))
            Dw, bw, cl = 4.0 * h1 * h2 * ia + n * problem.c, 0.0, 0.0
            r_block = (a, b, h3, ia, kp)
        # [[Sww + diag(Dw), Swl + bw], [., gamma + cl]] in one elementwise kernel, no scatters
        M = jnp.concatenate([jnp.concatenate([Sww + jnp.diag(Dw), (Swl + bw)[:, None]], 1),
                             jnp.concatenate([Swl + bw, (gamma + cl)[None]])[None]], 0)
        if problem.norm == "l2":
            M = M + Hc
        elif r_block is not None:
            v = jnp.concatenate([b * ia, jnp.ones((1,), M.dtype)])
            M = M + kp * jnp.outer(v, v)
        # Jacobi scaling to a unit diagonal before the factorisation, and a regularisation of
        # 1e-14 of that diagonal: both follow the units of the columns of Z (a regularisation of
        # the largest diagonal entry swamped the small columns of data in mixed units)
        eye = jnp.eye(d + 1, dtype=M.dtype)
        dg = jnp.sum(M * eye, axis=0)
        js = 1.0 / jnp.sqrt(jnp.where(dg > 0, dg, 1.0))
        M = (js[:, None] * M * js[None, :]) + 1e-14 * eye
        # M is symmetric by construction: the factorisation reads its lower triangle as it is
        # (no symmetrising copy)
        return lax.linalg.cholesky(M, symmetrize_input=False), r_block, js

    @staticmethod
    def newton_solve(factor, rhs, d: int):
        """``dx`` of the Newton system from :meth:`schur`'s factor; for q = 1 the ``r`` block
        by block elimination (``K_rr^{-1} v = v/a - kap (1/a) sum(v/a)``)."""
        chol, r_block, js = factor

        def solve(v):
            return js * jax.scipy.linalg.cho_solve((chol, True), js * v)

        if r_block is None:
            return solve(rhs)
        a, b, h3, ia, kp = r_block
        krr = lambda v: ia * v - kp * ia * jnp.vdot(ia, v)  # noqa: E731
        rhs_y, rhs_r = rhs[:d + 1], rhs[d + 1:]
        t = krr(rhs_r)
        dy = solve(rhs_y - jnp.concatenate([b * t, -h3 * jnp.sum(t)[None]]))
        dr = krr(rhs_r - b * dy[:d] + h3 * dy[d])
        return jnp.concatenate([dy, dr])

    def direction(self, problem, s: BarrierState, S, factor, W, cone, comp, comp_c):
        """Newton direction for the complementarity right-hand sides ``comp`` (samples: the
        linearised ``y * s`` moves by ``comp``) and ``comp_c`` (cone; for q = 2 in the scaled
        Jordan form ``lam o (W dz + W^{-1} ds) = comp_c``). Returns
        ``(dx, dt, dm, dS, dy, dg, dyc)``."""
        d, n, kap = problem.d, problem.n, problem.kappa
        _, g, scaled = cone
        h, u, v = W[0] + W[1] + W[2], W[1] - W[2], kap * W[2]
        rho = comp / S                                              # (3, n)
        if scaled is None:
            rho_c = comp_c / g
        else:
            Winv, _, lam = scaled
            rho_c = Winv @ jdiv(lam, comp_c)
        # right-hand side: -(dual residual) + G^T rho + Gc^T rho_c
        R_t = -(1.0 - s.y[0] - s.y[1] - s.y[2]) + rho[0] + rho[1] + rho[2]
        # (one product Z^T: the dual residual's and the elimination's sample terms together)
        r_w = -(n * problem.c * s.x[:d]) + problem.A.rmv(s.y[1] - s.y[2] + rho[1] - rho[2] - u * R_t / h)
        r_lam = -(n * problem.epsilon) + jnp.sum(kap * (s.y[2] + rho[2]) - v * R_t / h)   # one reduction
        rhs = (self._rows_t(problem, s.x, s.yc + rho_c)
               + jnp.pad(jnp.concatenate([r_w, r_lam[None]]), (0, s.x.shape[0] - (d + 1))))
        dx = self.newton_solve(factor, rhs, d)
        dm = problem.A.mv(dx[:d])
        dt = (R_t - u * dm - v * dx[d]) / h
        dS = jnp.stack((dt, dt + dm, dt - dm + kap * dx[d]))
        dy = rho - W * dS
        dg = cone_rows(dx, d, problem.norm)                         # Gc dx (the rows are linear)
        dyc = rho_c - (s.yc / g * dg if scaled is None else scaled[0] @ (scaled[0] @ dg))
        return dx, dt, dm, dS, dy, dg, dyc

    # ------------------------------------------------------------------ iteration
    def step(self, problem, s: BarrierState) -> BarrierState:
        soc = problem.norm == "l2"
        S = jnp.stack(self.slacks(problem, s.x, s.t, s.m))
        cone = self.cone_terms(problem, s)
        g = cone[1]
        W = s.y / S
        n_c = S.size + (0 if soc else g.size)
        # the SOC pair follows its own target (sigma times its complementarity, below), so mu is
        # the sample rows' average; linear cone rows count in mu like the sample rows
        cone_mu = 0.0 if soc else 1.0
        mu = (jnp.sum(s.y * S) + cone_mu * jnp.vdot(s.yc, g)) / n_c
        factor = self.schur(problem, s, W, cone[0])
        e = jnp.zeros_like(g).at[0].set(1.0)
        Winv, Wmat, lam = cone[2] if soc else (None, None, None)

        def steps(dS, dy, dg, dyc):
            cstep = soc_step if soc else ratio_step
            # the sample rows' primal and dual ratio tests in one reduction
            rp, rd = ratio_step(jnp.stack([S, s.y]), jnp.stack([dS, dy]), axis=(1, 2))
            ap = jnp.minimum(1.0, 0.995 * jnp.minimum(rp, cstep(g, dg)))
            ad = jnp.minimum(1.0, 0.995 * jnp.minimum(rd, cstep(s.yc, dyc)))
            return ap, ad

        # One loop over the solves that share the factorisation, so that the Newton direction is
        # traced once: solve 0 is the predictor (affine scaling, complementarity target 0),
        # solve 1 Mehrotra's corrector (target sigma mu with the predictor's second-order terms),
        # solves 2, 3, ... Gondzio's centrality correctors (push the complementarity products of a
        # longer trial step into [0.1, 10] sigma mu; kept when the steps grow by >= 1%).
        def push(v, lo, hi):
            return jnp.where(v < lo, lo - v, jnp.where(v > hi, jnp.maximum(hi - v, -hi), 0.0))

        def solve(j, c):
            Df, ap, ad, comp, comp_c, sig = c
            D = unravel(Df)
            gondzio = j >= 2
            bp, bd = jnp.minimum(1.0, 1.5 * ap), jnp.minimum(1.0, 1.5 * ad)
            lo, hi = 0.1 * sig * mu, 10.0 * sig * mu
            t_s = jnp.where(gondzio, push((S + bp * D[3]) * (s.y + bd * D[4]), lo, hi), 0.0)
            t_c = 0.0 if soc else jnp.where(gondzio, push((g + bp * D[5]) * (s.yc + bd * D[6]), lo, hi), 0.0)
            D2 = self.direction(problem, s, S, factor, W, cone, comp + t_s, comp_c + t_c)
            ap2, ad2 = steps(D2[3], D2[4], D2[5], D2[6])
            take = (j <= 1) | (ap2 + ad2 >= 1.01 * (ap + ad))
            # after the predictor: sigma from its complementarity, the corrector's right-hand sides
            dS, dy, dg, dyc = D2[3], D2[4], D2[5], D2[6]
            mu_aff = (jnp.sum((S + ap2 * dS) * (s.y + ad2 * dy))
                      + cone_mu * jnp.vdot(g + ap2 * dg, s.yc + ad2 * dyc)) / n_c
            sig_p = jnp.clip((mu_aff / mu) ** 3, 0.0, 1.0)
            if soc:   # the scaled directions W^{-1} ds and W dz
                cc_p = sig_p * jnp.vdot(s.yc, g) * e - jprod(lam, lam) - jprod(Winv @ dg, Wmat @ dyc)
            else:
                cc_p = sig_p * mu - s.yc * g - dg * dyc
            pred = j == 0
            comp_n = jnp.where(pred, sig_p * mu - s.y * S - dS * dy, jnp.where(take & gondzio, comp + t_s, comp))
            comp_c_n = jnp.where(pred, cc_p, jnp.where(take & gondzio, comp_c + t_c, comp_c))
            pick = lambda a, b: jnp.where(take, a, b)  # noqa: E731
            return (pick(ravel_pytree(D2)[0], Df), pick(ap2, ap), pick(ad2, ad), comp_n, comp_c_n,
                    jnp.where(pred, sig_p, sig))

        comp_c = -jprod(lam, lam) if soc else -s.yc * g
        zero = jnp.zeros((), mu.dtype)
        # the direction carried as one flat vector (one select per solve, not one per block)
        D0, unravel = ravel_pytree((s.x, s.t, s.m, S, s.y, g, s.yc))  # shapes of a direction (never taken)
        D, ap, ad, _, _, sig = lax.fori_loop(0, 2 + self.correctors, solve,
                                             (D0, zero, zero, -s.y * S, comp_c, zero))
        dx, dt, dm, dS, dy, dg, dyc = unravel(D)
        new = BarrierState(s.x + ap * dx, s.t + ap * dt, s.m + ap * dm, s.y + ad * dy, s.yc + ad * dyc,
                           sig * mu, ap, s.d)
        # past the attainable accuracy (mu at rounding level) the Newton system can break down:
        # a step with a non-finite entry is not taken (the iterate stays, the certificate decides);
        # one reduction over every entry (0 * v is 0 exactly when v is finite)
        ok = jnp.isfinite(jnp.sum(ravel_pytree(new)[0] * 0.0))
        return jax.tree.map(lambda a, b: jnp.where(ok, a, b), new, s)

    # ------------------------------------------------------------------ outputs
    @staticmethod
    def weights(y):
        """Dual weights ``a_i = (y1_i, y2_i)``, normalised into ``Delta``."""
        return capped_weights(jnp.clip(jnp.stack([y[1], y[2]], axis=1), 0.0, None))

    def params(self, s):
        return (s.x[:s.d], s.x[s.d])

    def dual(self, s):
        return self.weights(s.y)

    def certificate(self, problem, s):
        return problem.certificate(self.params(s), self.weights(s.y))

    def solution(self, s):
        return (s.x[:s.d], s.x[s.d], self.weights(s.y))

    def residual(self, problem, z):
        return saddle_residual(problem, z)

    def unpack(self, z):
        return (z[0], z[1]), z[2]
