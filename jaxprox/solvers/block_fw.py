"""Primal-Dual Block Frank-Wolfe (PDBFW), Lei, Zhuo, Caramanis, Dhillon & Dimakis (arXiv 1906.02436).

Problem (the papers' scaling), ``g(x) = (mu/2) ||x||^2`` (``penalties.SquaredL2(mu)``) and ``C`` an
l1 ball (vector ``x``, Algorithm 1) or a trace-norm ball (matrix ``X`` of shape ``(d, c)``,
Algorithm 2)::

    min_{x in C}  P(x) = (1/n) sum_i f_i(a_i^T x) + (mu/2) ||x||^2
                = min_{x in C} max_y  L(x, y) = g(x) + (1/n) y^T A x - (1/n) sum_i f_i^*(y_i).

One iteration (Alg. 1; Alg. 2 replaces "top-s magnitudes" by "top-s singular triplets")::

    G   = (1/n) z + mu x                         z = A^T y (maintained)
    v   = x - G / (L eta)                        L = mu (smoothness of g)
    xt  = P_{l0(s) ∩ l1(r)}(v)                   keep the s largest |v_j|, project them onto the l1 ball
    x  <- (1 - eta) x + eta xt                   eq. (8)
    w  <- (1 - eta) w + eta A xt                 eq. (9) corrected: only s columns of A
    yt  = prox_{(delta/n) f^*}(y + (delta/n) w)  eq. (10) with 1/n on the conjugate
    I   = top-k of |yt - y|  (Gauss-Southwell-r) eq. (11)
    y_I <- yt_I ;  z <- z + A_I^T (yt_I - y_I)   eq. (12): only k rows of A

so an iteration costs ``O(ns + dk)`` for dense data (a gather of ``s`` columns and of ``k`` rows),
plus ``O(n + d)`` for the selections. For the trace-norm ball (Alg. 2, eqs. (13)-(18)) the top-``s``
SVD of ``M = X - (Z/n + mu X) / (L eta)`` is computed either exactly or by a warm-started block
power (subspace) iteration with a static rank ``s + oversample``; ``A Xt = (A U_s) diag(sigma') V_s^T``.

Default iteration: ``dual_step=Accelerated()`` (an extension, :class:`~jaxprox.solvers.block_fw_steps.Accelerated`:
Alg. 1 with ``eta = 1``, ``k = n``, FISTA momentum with restart on ``y`` and a backtracked dual step)
with no sparsity budget (``s = d``). The paper's parameters, used as soon as one of them is given:
``eta = mu / (2 L) = 1/2`` and ``k = max(1, n s / d)`` (paper, Cor. 4.1.1). The dual step
defaults to the block-Lipschitz value ``delta / n = n mu / Lk``, ``Lk = min(||A||^2, sum of the k
largest ||a_i||^2) >= sigma_max^2(A_I)`` (not in the paper: the safe step of proximal block ascent on
``n D(y)``). The paper's Cor. 4.1.1 value ``delta = (1/k) (1/(n beta) + 25 R / (2 mu n^2))^{-1}``
(``beta`` = loss smoothness, ``R = max_i ||a_i||^2``) is 10-10^4x smaller and is
``delta_scale=1``; ``delta`` (absolute) or ``delta_scale`` (a multiple of the theory value, which keeps
working under ``vmap`` over ``mu``) override the default.

``dual_step=Curvature()`` (an extension) instead damps a large coordinate step on each block by the
local curvature of the dual along it; ``dual_step=Newton()`` (an extension) solves the block with
its rank-``s`` coupling through the primal (the components of :mod:`jaxprox.solvers.block_fw_steps`).

Selections (:mod:`jaxprox.solvers.block_fw_select`): ``top_k_indices`` (exact; block maxima then
the chosen blocks for small ``k / n``, bisection on the float bits otherwise: XLA:CPU's sort-based
``lax.top_k`` costs 17 ms at d = 50470 inside a loop, more than everything else in the iteration)
and, optionally, ``grouped_argmax`` for the dual (``dual_select="grouped"``).
``A xt`` uses ``block_fw_layout.column_layout(A)`` (dense ``A^T`` copy, or padded CSC for sparse
columns), stored on the solver (``layout``) by :meth:`PDBlockFW.prepare` (NumPy, concrete data:
``solve`` calls it before tracing) or :meth:`PDBlockFW.hoist` (dense data, traced or not), never in
the loop state;
with sparse data traced from the outside (``jax.jit(solve)``) and no ``prepare`` it falls back to
one ``O(nnz(A))`` product.

Certificate (not in the paper): ``gap = P(x) - max(D(y), D(f'(A x)))`` with
``D(u) = -(1/n) sum_i f_i^*(u_i) - h^*(-A^T u / n)``, ``h = g + I_C``,
``h^*(v) = <v, xb> - (mu/2)||xb||^2`` at ``xb = P_C(v / mu)``. Both dual points are feasible, so the
gap upper-bounds ``P(x) - P*``. Products in the certificate are recomputed exactly (no drift).

Sparsity requirement: the iteration converges to ``x*`` only if ``s >= nnz(x*)`` (rank for Alg. 2);
otherwise every fixed point is ``s``-sparse and the objective plateaus.
"""
from __future__ import annotations

import dataclasses

import equinox as eqx
import jax
import jax.numpy as jnp
from jax import lax

from ..solver import Solver
from .. import capabilities as cap
from ..operators import Dense, LinearOperator, SparseRows, linear_at
from .block_fw_layout import (HybridColumns, SparseColumns, column_layout, rows_on_support, take_columns_block,
                              take_columns_mv)
from .block_fw_select import grouped_argmax, l1_ball_sorted, project_l0_l1, top_k_indices, trace_ball_svd
from .block_fw_steps import (Accelerated, Block, Curvature, DualStep, ExactSVD, Lipschitz, Newton, PowerSVD,
                             as_dual_step, as_svd)

__all__ = ["PDBlockFW", "PDBlockFWState", "Accelerated", "Lipschitz", "Curvature", "Newton", "ExactSVD", "PowerSVD",
           "DualStep", "projected_gradient_residual"]

Array = jax.Array


# ------------------------------------------------------------------------------------------------
# small helpers
# ------------------------------------------------------------------------------------------------
def _kind(problem) -> str:
    """``"l1"`` (Alg. 1) or ``"trace"`` (Alg. 2): the norm of the constraint ball (the solver's
    ``requires`` guarantees an ``L1Ball`` with a vector model or a ``TraceBall`` with a matrix one)."""
    return problem.constraint.norm


def _scale(problem) -> int:
    """``n``: the risk is ``(1/n) sum_i l(z_i)`` (summed over outputs for ``(n, K)`` margins,
    ``base.Loss.risk``), so the saddle form carries ``1/n``."""
    return problem.n


def _row_nnz(A) -> int:
    """Stored entries per row (static): ``p`` of a padded sparse-row operator, ``d`` otherwise."""
    return max(1, int(A.indices.shape[1])) if isinstance(A, SparseRows) else max(1, A.shape[1])


def _ball_best_response(kind, v, mu, r):
    """``xb = argmax_{x in C} <v, x> - (mu/2)||x||^2 = P_C(v / mu)``."""
    return l1_ball_sorted(v / mu, r) if kind == "l1" else trace_ball_svd(v / mu, r)


def projected_gradient_residual(problem, x: Array) -> Array:
    """Projected-gradient fixed point ``x - P_C(x - e (grad f(x) + mu x))`` with
    ``grad f(x) = A^T f'(A x) / n`` and a fixed ``e = 1/(L + mu)``, ``L`` the problem's
    :meth:`~jaxprox.ERM.residual_smoothness` (gradient stopped); zero exactly at the optimum and
    differentiable (used for implicit differentiation)."""
    n = _scale(problem)
    mu = problem.penalty.lam
    e = lax.stop_gradient(1.0 / (problem.residual_smoothness() + mu))
    g = problem.A.rmv(problem.loss.grad(problem.A.mv(x), problem.y)) / n + mu * x
    return x - problem.constraint.project(x - e * g)


# ------------------------------------------------------------------------------------------------
# the solver
# ------------------------------------------------------------------------------------------------
class PDBlockFWState(eqx.Module):
    x: Array       # primal iterate, (d,) or (d, c)
    y: Array       # dual iterate, (n,) or (n, c)
    w: Array       # maintained A x ("accelerated": A xt at the extrapolated dual point)
    z: Array       # maintained A^T y
    Q: Array       # warm-start subspace (c, s + oversample) for the block power SVD (Alg. 2); (0,) otherwise
    R: Array       # max_i ||a_i||^2 (for the theory delta)
    Lk: Array      # min(||A||^2, sum of the k largest ||a_i||^2) >= sigma_max^2(A_I) for every |I| = k
    t: Array
    # dual_step=Accelerated() only (scalars / empty otherwise): the previous dual iterate and its
    # A^T y, the momentum sequence theta_t and the estimate L_t of the local dual curvature
    yp: Array
    zp: Array
    theta: Array
    Lh: Array


class PDBlockFW(Solver):
    """Primal-Dual Block Frank-Wolfe (Algorithm 1 for ``L1Ball``, Algorithm 2 for
    ``TraceBall``); see the module docstring for the iteration.

    Args:
        sparsity: ``s``, the sparsity (rank) budget of the primal update; must be
            ``>= nnz(x*)`` (``rank(X*)``) for convergence to ``x*``. Default ``None``: no budget
            (``s = d``, the plain l1-ball projection, which needs no selection), since ``nnz(x*)``
            is not known in advance and a smaller ``s`` plateaus; for Alg. 2 ``s = min(d, c)``
            when ``min(d, c) <= 256`` (the exact SVD computes every triplet anyway), else 10.
            Pass ``s`` (and a paper step) to get the paper's ``O(ns + dk)`` iteration on large ``d``.
        dual_block: ``k``, dual coordinates (rows) updated per iteration (default ``max(1, ns/d)``,
            Alg. 2: ``max(1, ns (1/c + 1/d))`` capped at ``n``; ``n`` for ``"accelerated"``).
        eta: primal mixing step in ``(0, 1]`` (default ``mu / (2L) = 1/2``; ``1`` for ``"accelerated"``).
        delta: dual step ``delta`` (in Alg. 1's scaling: the prox step on ``f_i^*`` is ``delta / n``).
            Default (``delta = delta_scale = None``): the block-Lipschitz step
            ``delta / n = n mu / Lk`` with ``Lk = min(||A||_2^2, sum of the k largest ||a_i||^2)``, an
            upper bound on ``sigma_max^2(A_I)`` for every block ``|I| = k``: the dual step is then a
            proximal-gradient step on ``n D(y)`` restricted to ``I`` with its exact step bound
            (``-n h^*(-A^T y / n)`` has block curvature ``sigma_max^2(A_I) / (n mu)``). **Not in the
            paper** (its Cor. 4.1.1 value, ``delta_scale=1``, is 10-10^4x smaller).
        delta_scale: if given, ``delta`` is this multiple of the Cor. 4.1.1 theory value
            ``(1/k) (1/(n beta) + 25 R / (2 mu n^2))^{-1}``.
        dual_step: a component of :mod:`jaxprox.solvers.block_fw_steps`; ``None`` (default):
            ``Accelerated()`` for the l1 ball unless one of the paper's parameters (``eta``,
            ``delta``, ``delta_scale``, ``dual_block``, ``sparsity``) is given, else ``Lipschitz()``.
            ``Accelerated()`` (**an extension, not in the paper**, Alg. 1 only;
            :meth:`Accelerated.step`): Alg. 1 with ``eta = 1`` and ``k = n`` (the primal update is
            then the best response to the dual and the dual update a proximal gradient step on
            ``-n D``), with FISTA momentum on ``y``, gradient restart, and a backtracked estimate of
            the dual curvature in place of ``Lk / (n mu)``. The unaccelerated steps need a number of
            iterations proportional to the dual condition number ``beta ||A||^2 / (n mu)``
            (``1e3..1e5`` at ``mu = 10/n`` on unscaled data); this one grows like its square root
            and adapts to the curvature on the current support (measured against the paper's step
            with default settings: ``benchmarks/results/block_fw_defaults.md``; badly scaled data
            stay out of reach). Each iteration costs one ``A x`` and one ``A^T y``
            (``O(nnz(A))``), not the paper's ``O(ns + dk)``.
            ``Lipschitz()`` (the step above, taken as is, as in the paper) or
            ``Curvature()`` (**an extension, not in the paper**): the single-coordinate step
            ``delta / n = n mu / R`` (unless ``delta`` is given), damped on each block by the local
            curvature of the dual along the step (``Curvature.damping``), and a default block
            ``k = max(ns/d, 4 (n + d) / p)`` (``p`` = stored entries per row) that also balances the
            ``O(n + d)`` selections against the ``O(k p)`` row work. Measured
            (``benchmarks/results/block_fw.md``): 25-100x fewer iterations than ``Lipschitz()`` when
            ``x*`` is sparse in a large ``d`` (random-binning MNIST, duke); **it oscillates** on
            low-dimensional, strongly correlated data with a tight ball (a9a, w8a with ``r = 1``,
            ``mu = 1/n``), where the local model of the ball's projection breaks down, so it is not
            the default. **Its default block is too small for large supports**: on ijcnn1-RB (300
            grids) at the paper's radius 300 (``nnz(x*)`` = 455 / 1811) ``dual_block = n/2`` reaches
            1e-6 in 320-340 steps where the default (1486) takes 2660 steps or does not get there in
            60 s; at small supports (19-63 nonzeros) it takes 3-4x fewer steps at 7-8x the cost of
            one, about 2x the time of the default. No static rule found covers both
            (``benchmarks/results/block_fw_findings.md``).
            ``Newton()`` (**an extension, not in the paper**, Alg. 1 only): the same coordinate step,
            but the ``k`` selected rows are solved jointly with their own coupling through the
            primal (``coupled_block_prox``: semismooth Newton on ``y = prox(v0 - c M M^T (y - y0))``
            with ``M`` the block restricted to the support through ``J``; one ``min(k, s)``-sized
            solve per Newton iteration), undamped; default block ``k = max(ns/d, (n + d) / p)``,
            capped so that the dense Newton work ``k s min(k, s)`` stays within ``64 (n + d)``
            (``newton_block_cap``; matters for large supports only).
            Where ``Curvature()``'s damping shrinks like ``1/k`` (random-binning data, whose
            support columns are shared by thousands of rows) it needs 2-5x fewer iterations
            (``benchmarks/results/block_fw.md``). Blocks far above the default (a quarter of the
            rows of ijcnn1-RB) can make the support oscillate, and so can the default block at a
            small ``mu`` (ijcnn1-RB at ``mu = 1/n``: ``dual_block=300`` converges, 1030 does not);
            a9a and w8a at ``r = 1`` do not converge with either extension.
            **Both extensions are for high-dimensional data with a sparse solution** (``d`` much
            larger than ``nnz(x*)``: random-binning, text). Their local model fails where the primal
            candidate is a vertex of the ball (one nonzero on its surface: the Jacobian of the
            projection is zero, so nothing is damped or coupled): on the small, low-dimensional
            bundled sets at ``mu = 1/n`` they lock into cycles far from ``P*`` (heart_scale,
            ``r = 30``: 25x ``P*``), and ``Newton()`` often fails there at ``100/n`` too. The ``Lipschitz()``
            step does not cycle, but at ``mu = 1/n`` it is slow on such data (an unaccelerated
            method on a problem with condition number ``||A||^2 / (n mu)``: more than the default
            10000 steps on a1a). Sweep: ``benchmarks/results/block_fw_sweep.md``. The certificate
            stays honest: such runs end with ``converged = False`` and a gap that bounds the true
            suboptimality (tested).
        dual_select: ``"greedy"`` (the paper's Gauss-Southwell-r: the ``k`` largest ``|yt_i - y_i|``,
            exact, by :func:`top_k_indices`) or ``"grouped"`` (the largest in each of ``k`` strided
            groups, :func:`grouped_argmax`: one ``O(n)`` pass; an extension, not in the paper).
        svd: ``ExactSVD()`` (full SVD then truncate), ``PowerSVD(iters, oversample)`` (warm-started
            block power / subspace iteration, static rank ``s + oversample``) or ``None`` (default:
            exact if ``min(d, c) <= 256``, else ``PowerSVD()``).
        layout: ``A^T`` with row access (``block_fw_layout.column_layout``), so that ``A xt`` costs
            ``O(ns)``; set by :meth:`prepare` / :meth:`hoist` (leave ``None``). A loop-invariant
            constant, kept out of the state so that no copy of it is carried or returned.

    First-call cost: the step traces its projections (the default accelerated step: two l1-ball
    projections by sorting; the paper's steps: the top-k selections, the projection onto the l1
    ball or a partial SVD for the trace norm, and the dual block update), the certificate one more
    (its conjugate's, :meth:`~jaxprox.base.Constraint.project_exact`); the persistent compilation
    cache serves later processes (``benchmarks/results/latency.md``).
    """

    unscaled_advice = ("PDBlockFW's dual does not change with the units of w (jp.solve cannot rescale it): "
                       "standardise the features, or use jp.FISTA or jp.ProxNewton, which rescale (their l1 ball "
                       "becomes a weighted one).")
    requires = (cap.ERM_PROBLEM, cap.SMOOTH_LOSS, cap.RIDGE, cap.L1_OR_TRACE_BALL)
    option_ranges = {"sparsity": ">= 1", "dual_block": ">= 1", "eta": "(0, 1]", "delta": "> 0", "delta_scale": "> 0"}
    derived = ("layout",)

    sparsity: int | None = eqx.field(static=True, default=None)
    dual_block: int | None = eqx.field(static=True, default=None)
    eta: float | None = None
    delta: float | None = None
    delta_scale: float | None = None
    dual_select: str = eqx.field(static=True, default="greedy")
    dual_step: DualStep | None = eqx.field(static=True, default=None, converter=as_dual_step)
    svd: ExactSVD | PowerSVD | None = eqx.field(static=True, default=None, converter=as_svd)
    layout: LinearOperator | SparseColumns | HybridColumns | None = None

    @property
    def short_advice(self) -> str:
        """Added to the warning of a solve that stops short. With a ``sparsity`` budget ``s`` each
        primal update of Alg. 1 moves at most ``s`` coordinates (the rank for Alg. 2), so the
        iterate cannot follow a solution whose support is larger than ``s`` and the certified gap
        stays above ``tol`` however many steps are allowed (heart_scale's smoothed hinge at radius
        10, 13 non-zeros at the solution, ``sparsity=2``: a certified gap of 5e-2 after 3,000
        iterations, and the solve converges with ``sparsity=None``)."""
        if self.sparsity is None:
            return ""
        return (f"PDBlockFW was given sparsity={self.sparsity}: each primal update changes at most {self.sparsity} "
                "coordinates (the support cap of the paper's l0-restricted step, rank for the trace ball), so when the "
                "solution has more non-zeros than that the gap stalls whatever max_steps is. Raise sparsity to at "
                "least the solution's support (the non-zeros of a solution at a looser tol) or leave it None (no cap).")

    # ----------------------------------------------------------------- static sizes
    def _dual_step(self, problem) -> DualStep:
        """The dual step in use: ``dual_step``, with ``None`` resolved to ``Accelerated()`` for the
        l1 ball when none of the paper's parameters (``eta``, ``delta``, ``delta_scale``,
        ``dual_block``, ``sparsity``) is given, and to the paper's ``Lipschitz()`` step otherwise
        (the accelerated step's backtracking test needs the exact best response over the ball, not
        the paper's l0-restricted one)."""
        if self.dual_step is not None:
            return self.dual_step
        paper = (self.eta, self.delta, self.delta_scale, self.dual_block, self.sparsity) != (None,) * 5
        return Lipschitz() if paper or _kind(problem) != "l1" else Accelerated()

    def _sizes(self, problem):
        n, d = problem.n, problem.d
        kind = _kind(problem)
        step = self._dual_step(problem)
        if kind == "l1":
            s = d if self.sparsity is None else min(int(self.sparsity), d)  # s = d: no l0 restriction
            k = max(1, (n * s) // d)  # paper (Cor. 4.1.1): balances O(ns) against O(dk)
            k = step.block_size(k, n, d, _row_nnz(problem.A), s)  # the step's own balance of the work
            k = self.dual_block if self.dual_block is not None else k
        else:
            c = problem.n_outputs
            full = min(d, c)  # the exact SVD (min(d, c) <= 256) computes every triplet anyway
            s = (full if full <= 256 else 10) if self.sparsity is None else min(int(self.sparsity), full)
            k = self.dual_block if self.dual_block is not None else max(1, int(n * s * (1 / c + 1 / d)))
        if s < 1:
            raise ValueError(f"sparsity must be >= 1, got {self.sparsity}")
        return kind, s, min(int(k), n)

    def _svd(self, problem):
        """The partial SVD of Alg. 2: ``svd``, or for ``None`` exact when ``min(d, c) <= 256``."""
        if self.svd is not None:
            return self.svd
        return PowerSVD() if min(problem.d, problem.n_outputs) > 256 else ExactSVD()

    def _steps(self, problem, state):
        """``(eta, sigma)`` with ``sigma = delta / n`` the prox step on ``f_i^*``."""
        _, _, k = self._sizes(problem)
        n = _scale(problem)  # = problem.n for per-sample losses
        mu = problem.penalty.lam
        dt = state.x.dtype
        eta = jnp.asarray(0.5 if self.eta is None else self.eta, dt)
        if self.delta is not None:
            delta = jnp.asarray(self.delta, dt)
        elif self.delta_scale is not None:  # Cor. 4.1.1
            beta = problem.loss.smoothness
            delta = (1.0 / k) / (1.0 / (n * beta) + 25.0 * state.R / (2.0 * mu * n**2))
            delta = self.delta_scale * delta
        elif self._dual_step(problem).coordinate_step:  # coordinate step sigma = n mu / R, damped / coupled per block
            delta = n * n * mu / state.R
        else:  # block-Lipschitz step sigma = n mu / Lk (see the class docstring)
            delta = n * n * mu / state.Lk
        return eta, delta / n

    # ----------------------------------------------------------------- setup
    def prepare(self, problem):
        """This solver with ``layout = column_layout(A, s)`` for Alg. 1 (``self`` if already set, if
        the problem is not an l1-ball one, or if the data are traced sparse arrays: inside the
        user's own ``jax.jit`` the step takes its layout-free path). :func:`jaxprox.solve` clears
        the layout on entry (``derived``), so it is always built from the data being solved.
        A dense ``A`` is left to :meth:`hoist`: its layout is a transpose, one kernel of the
        compiled solve, where an eager transpose here would compile a kernel of its own on every
        first solve in a process (persistent cache or not)."""
        if isinstance(problem.A, Dense):
            return self
        return self.hoist(problem)

    def hoist(self, problem):
        """The layout of :meth:`prepare`, inside the trace (a dense ``A^T`` copy needs no concrete
        data; sparse data traced under the user's ``jit`` take the layout-free path)."""
        if self.layout is not None or _kind(problem) != "l1" or self._dual_step(problem).own_steps:
            return self  # Accelerated() takes whole products A x and A^T y
        _, s, _ = self._sizes(problem)
        try:  # dense: X.T copy; sparse: padded CSC (NumPy: needs concrete data)
            lay = column_layout(problem.A, s=s)
        except TypeError:
            return self
        return eqx.tree_at(lambda m: m.layout, self, lay, is_leaf=lambda v: v is None)

    # ----------------------------------------------------------------- init / step
    def init(self, problem, init=None):
        kind, s, k = self._sizes(problem)
        step = self._dual_step(problem)
        if step.l1_only and kind != "l1":
            raise ValueError(f"dual_step={step!r} is for the l1 ball (Alg. 1)")
        if step.own_steps and (self.delta, self.delta_scale, self.eta) != (None,) * 3:
            raise ValueError(f"the accelerated dual step (dual_step={step!r}) sets its own steps (eta = 1, delta by "
                             "backtracking)")
        if self.dual_select not in ("greedy", "grouped"):
            raise ValueError(f"dual_select must be 'greedy' or 'grouped', got {self.dual_select!r}")
        A = problem.A
        x = problem.zeros() if init is None else jnp.asarray(init, A.dtype)
        if init is not None:
            x = problem.constraint.project(x)
        y = jnp.zeros((problem.n,) + x.shape[1:], A.dtype)
        w = linear_at(A.mv, x, init is None)
        z = jnp.zeros_like(x)
        if kind == "trace":
            Q = self._svd(problem).subspace(problem.n_outputs, problem.d, s, A.dtype)
        else:
            Q = jnp.zeros((0,), A.dtype)
        rn = A.row_norms_sq()
        R = jnp.max(rn)
        Lk = jnp.minimum(A.spectral_norm_sq(), jnp.sum(lax.top_k(rn, k)[0]))
        one = jnp.ones((), A.dtype)
        if step.own_steps:  # L_0: a 1/1024 of the global bound, grown by backtracking
            yp, zp, Lh = y, z, Lk / (_scale(problem) * problem.penalty.lam) / 1024
        else:
            yp, zp, Lh = jnp.zeros((0,), A.dtype), jnp.zeros((0,), A.dtype), one
        return PDBlockFWState(x, y, w, z, Q, R, Lk, jnp.zeros((), jnp.int32), yp, zp, one, Lh)

    def step(self, problem, st: PDBlockFWState) -> PDBlockFWState:
        step = self._dual_step(problem)
        kind, s, k = self._sizes(problem)
        if step.own_steps:
            return step.step(problem, st, s, _scale(problem))
        A, n = problem.A, _scale(problem)
        mu = problem.penalty.lam
        r = problem.constraint.radius
        eta, sigma = self._steps(problem, st)

        # primal block-FW step (uses z^{(t-1)}): v = x - (z/n + mu x) / (mu eta)
        v = st.x - (st.z / n + mu * st.x) / (mu * eta)
        if kind == "l1":
            idx, vals = project_l0_l1(v, s, r)
            x = ((1 - eta) * st.x).at[idx].add(eta * vals)
            if self.layout is not None:  # O(ns) dense, the s selected columns' entries sparse
                Axt = take_columns_mv(self.layout, idx, vals)
            else:  # no column layout (sparse data traced under jit, no prepare): one O(nnz(A)) product
                Axt = A.mv(jnp.zeros_like(st.x).at[idx].set(vals))
            Q = st.Q
        else:
            idx = vals = None
            U, sv, Vt, Q = self._svd(problem).top(v, s, st.Q)
            sp = l1_ball_sorted(sv, r)  # sv >= 0, so sp = (sv - tau)_+ with sum <= r
            x = (1 - eta) * st.x + eta * (U * sp) @ Vt
            Axt = (A.mv(U) * sp) @ Vt  # O(nds + ncs)
        w = (1 - eta) * st.w + eta * Axt

        # dual greedy block proximal ascent (uses the new w)
        yt = problem.loss.prox_conjugate(st.y + sigma * w, problem.y, sigma)
        diff = yt - st.y
        score = jnp.abs(diff) if diff.ndim == 1 else jnp.sqrt(jnp.sum(diff * diff, axis=1))
        I = top_k_indices(score, k) if self.dual_select == "greedy" else grouped_argmax(score, k)
        rows = A.rows(I)
        b = Block(I, rows, st.y[I], yt, diff, w, sigma, eta, n, mu, r, kind, idx, vals,
                  *((None, None) if kind == "l1" else (U, Vt)), lambda: self._block(rows, I, idx, problem.d))
        y, z = step.update(problem, st, b)
        return dataclasses.replace(st, x=x, y=y, w=w, z=z, Q=Q, t=st.t + 1)

    def _block(self, rows, I, idx, d):
        """``A[I][:, idx]`` for the Newton step: from the column layout (``O(s k)`` gathers plus the
        selected sparse columns' entries), else from the gathered rows (:func:`rows_on_support`:
        a scatter of every stored entry of the block)."""
        return take_columns_block(self.layout, idx, I) if self.layout is not None else rows_on_support(rows, idx, d)

    # ----------------------------------------------------------------- outputs
    def certificate(self, problem, st: PDBlockFWState):
        return problem.best_certificate(st.x, st.y)

    def params(self, st):
        return st.x

    def residual(self, problem, x):
        return projected_gradient_residual(problem, x)

    def dual(self, st):
        return st.y

    def best_response_nnz(self, problem, st) -> Array:
        """``nnz(xb(y))`` (rank for Alg. 2) of the primal best response to the current dual iterate,
        ``xb = P_C(-A^T y / (n mu))``: the theory needs ``sparsity >= `` this."""
        kind = _kind(problem)
        xb = _ball_best_response(kind, -st.z / _scale(problem), problem.penalty.lam, problem.constraint.radius)
        if kind == "l1":
            return jnp.sum(xb != 0)
        sv = jnp.linalg.svd(xb, compute_uv=False)
        return jnp.sum(sv > 1e-10 * jnp.maximum(sv[0], 1e-300))
