"""Primal-Dual Block Frank-Wolfe (PDBFW), Lei, Zhuo, Caramanis, Dhillon & Dimakis (arXiv 1906.02436); technical note ``papers/notes/001_pdbfw.md`` (read its errata §0.3 first).

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
    w  <- (1 - eta) w + eta A xt                 eq. (9) corrected (note §0.3.3): only s columns of A
    yt  = prox_{(delta/n) f^*}(y + (delta/n) w)  eq. (10) with 1/n on the conjugate (note §0.3.1)
    I   = top-k of |yt - y|  (Gauss-Southwell-r) eq. (11)
    y_I <- yt_I ;  z <- z + A_I^T (yt_I - y_I)   eq. (12): only k rows of A

so an iteration costs ``O(ns + dk)`` for dense data (a gather of ``s`` columns and of ``k`` rows),
plus ``O(n + d)`` for the selections. For the trace-norm ball (Alg. 2, eqs. (13)-(18)) the top-``s``
SVD of ``M = X - (Z/n + mu X) / (L eta)`` is computed either exactly or by a warm-started block
power (subspace) iteration with a static rank ``s + oversample``; ``A Xt = (A U_s) diag(sigma') V_s^T``.

Default iteration: ``dual_step="accelerated"`` (an extension, :meth:`PDBlockFW._accelerated_step`:
Alg. 1 with ``eta = 1``, ``k = n``, FISTA momentum with restart on ``y`` and a backtracked dual step)
with no sparsity budget (``s = d``). The paper's parameters, used as soon as one of them is given:
``eta = mu / (2 L) = 1/2`` and ``k = max(1, n s / d)`` (paper, Cor. 4.1.1). The dual step
defaults to the block-Lipschitz value ``delta / n = n mu / Lk``, ``Lk = min(||A||^2, sum of the k
largest ||a_i||^2) >= sigma_max^2(A_I)`` (not in the paper: the safe step of proximal block ascent on
``n D(y)``). The paper's Cor. 4.1.1 value ``delta = (1/k) (1/(n beta) + 25 R / (2 mu n^2))^{-1}``
(``beta`` = loss smoothness, ``R = max_i ||a_i||^2``) is 10-10^4x smaller (note §6.4) and is
``delta_scale=1``; ``delta`` (absolute) or ``delta_scale`` (a multiple of the theory value, which keeps
working under ``vmap`` over ``mu``) override the default.

``dual_step="curvature"`` (an extension) instead damps a large coordinate step on each block by the
local curvature of the dual along it; ``dual_step="newton"`` (an extension) solves the block with
its rank-``s`` coupling through the primal (see ``PDBlockFW``).

Selections: ``top_k_indices`` (exact; block maxima then the chosen blocks for small ``k / n``,
bisection on the float bits otherwise: XLA:CPU's sort-based ``lax.top_k`` costs 17 ms at
d = 50470 inside a loop, more than everything else in the iteration) and, optionally,
``grouped_argmax`` for the dual (``dual_select="grouped"``).
``A xt`` uses ``operators.column_layout(A)`` (dense ``A^T`` copy, or padded CSC for sparse columns),
stored on the solver (``layout``) by :meth:`PDBlockFW.prepare` (NumPy, concrete data: ``solve`` calls
it before tracing) or :meth:`PDBlockFW.hoist` (dense data, traced or not), never in the loop state;
with sparse data traced from the outside (``jax.jit(solve)``) and no ``prepare`` it falls back to
one ``O(nnz(A))`` product.

Certificate (not in the paper; note §1.9): ``gap = P(x) - max(D(y), D(f'(A x)))`` with
``D(u) = -(1/n) sum_i f_i^*(u_i) - h^*(-A^T u / n)``, ``h = g + I_C``,
``h^*(v) = <v, xb> - (mu/2)||xb||^2`` at ``xb = P_C(v / mu)``. Both dual points are feasible, so the
gap upper-bounds ``P(x) - P*``. Products in the certificate are recomputed exactly (no drift).

Sparsity requirement: the iteration converges to ``x*`` only if ``s >= nnz(x*)`` (rank for Alg. 2);
otherwise every fixed point is ``s``-sparse and the objective plateaus (note §6.4, tested).
"""
from __future__ import annotations

import dataclasses
import math

import equinox as eqx
import jax
import jax.numpy as jnp
from jax import lax

from ..base import probe_vector
from ..solver import Solver
from .. import capabilities as cap
from ..operators import (Dense, HybridColumns, LinearOperator, SparseColumns, SparseRows, _positions_in, column_layout,
                         linear_at, take_columns_block, take_columns_mv)

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


def _l1_ball(v, r):
    from ..projections import l1_ball

    return l1_ball(v, r, method="sort")


def _trace_ball(V, r):
    from ..projections import trace_ball

    return trace_ball(V, r)


def top_k_indices(a: Array, k: int) -> Array:
    """Indices of the ``k`` largest entries of ``a >= 0`` (ties to the lower index), the same set as
    ``lax.top_k(a, k)[1]`` (as a set; the order is unspecified). XLA:CPU's ``top_k`` is
    sort-based (measured 17 ms at n = 50470 inside a loop, ``benchmarks/results/block_fw.md``), so:

    * small ``k / n`` (:func:`_top_k_blocked`): the top ``k`` entries lie in the ``k`` blocks of
      ``B`` consecutive entries with the largest maxima, so one ``O(n)`` block-max pass reduces the
      search to ``n / B`` block maxima and then to the ``k B`` entries of the chosen blocks
      (``B ~ sqrt(n / k)``); exact, ties included;
    * otherwise :func:`_top_k_bisect`: the ``k``-th largest value by bisection on the bit pattern
      (at most 63 counting passes in float64, fewer when a count hits k), then a prefix sum."""
    n = a.shape[0]
    if n <= _TOPK_SMALL or k >= n:
        return lax.top_k(a, k)[1].astype(jnp.int32)
    a = jnp.maximum(a, 0)
    B = max(2, int(round((n / k) ** 0.5)))
    if k * B <= n // 4:  # k <~ n / 16
        return _top_k_blocked(a, k, B)
    return _top_k_bisect(a, k)


def _top_k_blocked(a: Array, k: int, B: int) -> Array:
    """Exact top-``k`` through block maxima (see :func:`top_k_indices`). Correctness: every one of
    the top ``k`` entries sits in a block whose maximum is at least the ``k``-th value, and at most
    ``k`` blocks have such a maximum (ties: the lowest-indexed blocks are kept, which hold the
    lowest-indexed tied entries); the chosen blocks are gathered in increasing order, so the final
    selection breaks ties by the lower global index as ``lax.top_k`` does."""
    n = a.shape[0]
    nb = -(-n // B)
    blocks = jnp.pad(a, (0, nb * B - n)).reshape(nb, B)  # pad with 0 (>= no real entry's rank)
    top_blocks = top_k_indices(jnp.max(blocks, axis=1), k)
    if nb <= _TOPK_SMALL:  # lax.top_k orders by value; the other paths return increasing indices
        top_blocks = jnp.sort(top_blocks)
    cand = top_k_indices(blocks[top_blocks].reshape(-1), k)
    return (top_blocks[cand // B] * B + cand % B).astype(jnp.int32)


def _top_k_bisect(a: Array, k: int) -> Array:
    """Exact top-``k`` of ``a >= 0`` by bisection on the float bits (see :func:`top_k_indices`). The
    bracket starts at ``[min, max]`` (or at the minimum alone when fewer than ``k`` entries exceed
    it: ties at zero) and the loop stops as soon as exactly ``k`` entries lie at or above its lower
    end (43 halvings instead of 63 on the dual scores of ijcnn1-RB, where near-ties are common)."""
    ib = jnp.int64 if a.dtype == jnp.float64 else jnp.int32
    b = lax.bitcast_convert_type(a, ib)
    ct = jnp.float32 if a.shape[0] < 2**24 else jnp.int32  # float32 counts are exact below 2^24 and sum faster
    count = lambda t: jnp.sum(b >= t, dtype=ct)  # noqa: E731

    def halve(lohi):  # invariant: #{b >= lo} = c >= k > #{b >= hi}
        lo, hi, c = lohi
        mid = lo + (hi - lo) // 2
        cm = count(mid)
        ok = cm >= k
        return jnp.where(ok, mid, lo), jnp.where(ok, hi, mid), jnp.where(ok, cm, c)

    lo = jnp.min(b)
    hi = jnp.where(count(lo + 1) < k, lo + 1, jnp.max(b) + 1)
    c0 = jnp.asarray(a.shape[0], ct)
    kth, _, _ = lax.while_loop(lambda c: (c[2] != k) & (c[1] - c[0] > 1), halve, (lo, hi, c0))
    gt, eq = b > kth, b == kth
    need = k - jnp.sum(gt.astype(jnp.int32))
    take = gt | (eq & (lax.associative_scan(jnp.add, eq.astype(jnp.int32)) <= need))
    pos = lax.associative_scan(jnp.add, take.astype(jnp.int32))
    return jnp.searchsorted(pos, jnp.arange(1, k + 1, dtype=jnp.int32)).astype(jnp.int32)


_TOPK_SMALL = 512


def grouped_argmax(a: Array, k: int) -> Array:
    """One index per group: the argmax of ``a`` over each strided group ``{j, j + k, j + 2k, ...}``,
    ``j < k`` (``k`` indices, all distinct). A one-pass ``O(n)`` stand-in for the top-``k`` selection
    (greedy Gauss-Southwell-r within ``k`` fixed groups; **not in the paper**)."""
    n = a.shape[0]
    g = -(-n // k)
    blocks = jnp.pad(a, (0, g * k - n), constant_values=-jnp.inf).reshape(g, k)
    return (jnp.argmax(blocks, axis=0) * k + jnp.arange(k)).astype(jnp.int32)


def project_l0_l1(v: Array, s: int, r: Array):
    """``argmin_{||x||_0 <= s, ||x||_1 <= r} ||x - v||`` as ``(idx, vals)`` (note §3.2): keep the ``s``
    largest magnitudes of ``v`` (:func:`top_k_indices`; ties to the lower index), then project those
    ``s`` entries onto the l1 ball of radius ``r``. Select first, project second (not equivalent the
    other way round)."""
    if s >= v.shape[0]:  # no l0 restriction: the l1-ball projection
        return jnp.arange(v.shape[0], dtype=jnp.int32), _l1_ball(v, r)
    idx = top_k_indices(jnp.abs(v), s)
    return idx, _l1_ball(v[idx], r)


def project_l0_l1_dense(v: Array, s: int, r: Array) -> Array:
    """:func:`project_l0_l1` as a vector of ``v``'s shape: the l1-ball projection itself where there
    is no l0 restriction (``s >= len(v)``: no scatter through the identity indices), else the
    ``s`` projected entries scattered into zeros."""
    if s >= v.shape[0]:
        return _l1_ball(v, r)
    idx, vals = project_l0_l1(v, s, r)
    return jnp.zeros_like(v).at[idx].set(vals)


def _row_nnz(A) -> int:
    """Stored entries per row (static): ``p`` of a padded sparse-row operator, ``d`` otherwise."""
    return max(1, int(A.indices.shape[1])) if isinstance(A, SparseRows) else max(1, A.shape[1])


def _support_projection(U, vals, r):
    """``U P`` with ``J = P P^T`` (``P`` a projector) the Jacobian of the primal map
    ``v -> P_{l0(s) ∩ l1(r)}(v)`` at the current step, on its last axis (the ``s`` entries of the
    support ``idx``): entries with ``vals = 0`` are dropped and, on the ball's surface, the direction
    ``sign(vals)`` is removed."""
    nz = vals != 0
    U = jnp.where(nz, U, 0.0)
    sg = jnp.sign(vals)
    m = jnp.maximum(jnp.sum(nz), 1)
    on_ball = jnp.sum(jnp.abs(vals)) >= r * (1 - 1e-9)
    return U - jnp.where(on_ball, 1.0, 0.0) * (U @ sg)[..., None] * sg / m


def _primal_jacobian_norm(dz, idx, vals, r):
    """``dz^T J dz = ||P^T dz_S||^2`` (:func:`_support_projection`): the local curvature of
    ``-n h^*(-A^T y / n)`` along the dual step."""
    u = _support_projection(dz[idx], vals, r)
    return jnp.sum(u * u)


def _tangent_norm(dZ, U, Vt):
    """``||P_T dZ||_F^2`` on the tangent space of the rank-``s`` matrices at ``U diag Vt``
    (``U U^T dZ + dZ V V^T - U U^T dZ V V^T``): for Alg. 2 the stand-in for ``dz^T J dz``."""
    a, b = U.T @ dZ, dZ @ Vt.T
    return jnp.sum(a * a) + jnp.sum(b * b) - jnp.sum((a @ Vt.T) ** 2)


def _rows_on_support(rows, idx, d):
    """``A[I][:, idx]`` (``k x s``) from the ``k`` gathered rows: a slot table for padded sparse rows
    (``O(d + k p)``), a column gather for dense rows."""
    if isinstance(rows, SparseRows):
        ind = rows.indices
        k, s = ind.shape[0], idx.shape[0]
        out = jnp.zeros((k, s + 1), rows.values.dtype)  # column s: entries outside the support
        return out.at[jnp.arange(k)[:, None], _positions_in(idx, d)[ind]].add(rows.values)[:, :s]
    return rows.todense()[:, idx]


def _newton_block_cap(work: int, s: int, c: int = 64) -> int:
    """The largest dual block ``k`` whose Newton work ``k s min(k, s)`` (forming ``M M^T`` or
    ``M^T D M`` and one ``min(k, s)``-sized solve, :func:`_coupled_block_prox`) stays within
    ``c`` times ``work = n + d``, the size of the step's selection passes. Without it the default
    block ``(n + d) / p`` of ``dual_step="newton"`` meets a large support badly: random-binning MNIST
    with raw pixels (``d = 870K``, ``s = 5441`` at radius 300) got ``k = 8815`` and a
    5441 x 5441 solve, 43 s a step; capped, ``k = 101``."""
    big = c * work // (s * s)  # the largest k > s, if k = s + 1 fits at all
    return max(1, big if big > s else min(s, math.isqrt(c * work // s)))


def _coupled_block_prox(loss, labels, block, y0, v0, y, vals, r, sigma, c, newton_iters=2):
    """The dual block update with the coupling through the primal kept (``dual_step="newton"``, an
    extension, **not in the paper**): solve ``y = prox_{sigma f*}(v0 - c M M^T (y - y0))`` for the
    ``k`` selected rows, where ``M = A[I][:, S] P`` is the block seen through the Jacobian ``J = P P^T``
    of the s-sparse l1-ball map at the current step (support ``S``; on the ball's surface ``P``
    removes the direction ``sign(x_S)``), so that ``-c M M^T (y - y0)`` is the change of ``sigma w_I``
    that the block's own step causes through ``z`` and the primal. Rows that share the support's
    columns no longer each take the whole step (the damped step shrinks like ``1/k`` on such
    blocks). Semismooth Newton from the uncoupled prox ``y``; each iteration is one solve of size
    ``min(k, s)`` (``M M^T`` has rank ``s``: Woodbury when ``s < k``). The last prox keeps ``y`` in
    ``dom f*``. ``block = A[I][:, S]`` (``operators.take_columns_block`` or :func:`_rows_on_support`)."""
    M = _support_projection(block, vals, r)
    Mc = jnp.sqrt(c) * M
    prox = lambda u: loss.prox_conjugate(u, labels, sigma)  # noqa: E731
    k, s = M.shape
    eye = jnp.eye(min(k, s), dtype=M.dtype)
    for _ in range(newton_iters):
        u = v0 - Mc @ (Mc.T @ (y - y0))
        p, D = jax.jvp(prox, (u,), (jnp.ones_like(u),))
        F = y - p  # root of F; Jacobian I + diag(D) Mc Mc^T: solved in the smaller of k, s
        if k <= s:
            y = y - jnp.linalg.solve(eye + D[:, None] * (Mc @ Mc.T), F)
        else:  # Woodbury
            y = y - (F - D * (Mc @ jnp.linalg.solve(eye + Mc.T @ (D[:, None] * Mc), Mc.T @ F)))
    return prox(v0 - Mc @ (Mc.T @ (y - y0)))


def _ball_best_response(kind, v, mu, r):
    """``xb = argmax_{x in C} <v, x> - (mu/2)||x||^2 = P_C(v / mu)``."""
    return _l1_ball(v / mu, r) if kind == "l1" else _trace_ball(v / mu, r)


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
    # dual_step="accelerated" only (scalars / empty otherwise): the previous dual iterate and its
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
            paper** (its Cor. 4.1.1 value, ``delta_scale=1``, is 10-10^4x smaller; note §6.4).
        delta_scale: if given, ``delta`` is this multiple of the Cor. 4.1.1 theory value
            ``(1/k) (1/(n beta) + 25 R / (2 mu n^2))^{-1}``.
        dual_step: ``"auto"`` (default): ``"accelerated"`` for the l1 ball unless one of the paper's
            parameters (``eta``, ``delta``, ``delta_scale``, ``dual_block``, ``sparsity``) is given,
            else ``"lipschitz"``.
            ``"accelerated"`` (**an extension, not in the paper**, Alg. 1 only;
            :meth:`_accelerated_step`): Alg. 1 with ``eta = 1`` and ``k = n`` (the primal update is
            then the best response to the dual and the dual update a proximal gradient step on
            ``-n D``), with FISTA momentum on ``y``, gradient restart, and a backtracked estimate of
            the dual curvature in place of ``Lk / (n mu)``. The unaccelerated steps need a number of
            iterations proportional to the dual condition number ``beta ||A||^2 / (n mu)``
            (``1e3..1e5`` at ``mu = 10/n`` on unscaled data); this one grows like its square root
            and adapts to the curvature on the current support (measured against the paper's step
            with default settings: ``benchmarks/results/block_fw_defaults.md``; badly scaled data
            stay out of reach). Each iteration costs one ``A x`` and one ``A^T y``
            (``O(nnz(A))``), not the paper's ``O(ns + dk)``.
            ``"lipschitz"`` (the step above, taken as is, as in the paper) or
            ``"curvature"`` (**an extension, not in the paper**): the single-coordinate step
            ``delta / n = n mu / R`` (unless ``delta`` is given), damped on each block by the local
            curvature of the dual along the step (``_block_damping``), and a default block
            ``k = max(ns/d, 4 (n + d) / p)`` (``p`` = stored entries per row) that also balances the
            ``O(n + d)`` selections against the ``O(k p)`` row work. Measured
            (``benchmarks/results/block_fw.md``): 25-100x fewer iterations than ``"lipschitz"`` when
            ``x*`` is sparse in a large ``d`` (random-binning MNIST, duke); **it oscillates** on
            low-dimensional, strongly correlated data with a tight ball (a9a, w8a with ``r = 1``,
            ``mu = 1/n``), where the local model of the ball's projection breaks down, so it is not
            the default. **Its default block is too small for large supports**: on ijcnn1-RB (300
            grids) at the paper's radius 300 (``nnz(x*)`` = 455 / 1811) ``dual_block = n/2`` reaches
            1e-6 in 320-340 steps where the default (1486) takes 2660 steps or does not get there in
            60 s; at small supports (19-63 nonzeros) it takes 3-4x fewer steps at 7-8x the cost of
            one, about 2x the time of the default. No static rule found covers both
            (``benchmarks/results/block_fw_findings.md``).
            ``"newton"`` (**an extension, not in the paper**, Alg. 1 only): the same coordinate step,
            but the ``k`` selected rows are solved jointly with their own coupling through the
            primal (``_coupled_block_prox``: semismooth Newton on ``y = prox(v0 - c M M^T (y - y0))``
            with ``M`` the block restricted to the support through ``J``; one ``min(k, s)``-sized
            solve per Newton iteration), undamped; default block ``k = max(ns/d, (n + d) / p)``,
            capped so that the dense Newton work ``k s min(k, s)`` stays within ``64 (n + d)``
            (``_newton_block_cap``; matters for large supports only).
            Where ``"curvature"``'s damping shrinks like ``1/k`` (random-binning data, whose
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
            ``r = 30``: 25x ``P*``), and ``"newton"`` often fails there at ``100/n`` too. The ``"lipschitz"``
            step does not cycle, but at ``mu = 1/n`` it is slow on such data (an unaccelerated
            method on a problem with condition number ``||A||^2 / (n mu)``: more than the default
            10000 steps on a1a). Sweep: ``benchmarks/results/block_fw_sweep.md``. The certificate
            stays honest: such runs end with ``converged = False`` and a gap that bounds the true
            suboptimality (tested).
        dual_select: ``"greedy"`` (the paper's Gauss-Southwell-r: the ``k`` largest ``|yt_i - y_i|``,
            exact, by :func:`top_k_indices`) or ``"grouped"`` (the largest in each of ``k`` strided
            groups, :func:`grouped_argmax`: one ``O(n)`` pass; an extension, not in the paper).
        svd: ``"exact"`` (full SVD then truncate), ``"power"`` (warm-started block power / subspace
            iteration, static rank ``s + oversample``) or ``"auto"`` (exact if ``min(d, c) <= 256``).
        power_iters, oversample: parameters of the ``"power"`` SVD.
        layout: ``A^T`` with row access (``operators.column_layout``), so that ``A xt`` costs
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
    option_ranges = {"sparsity": ">= 1", "dual_block": ">= 1", "eta": "(0, 1]", "delta": "> 0", "delta_scale": "> 0",
                     "power_iters": ">= 0", "oversample": ">= 0"}
    derived = ("layout",)

    sparsity: int | None = eqx.field(static=True, default=None)
    dual_block: int | None = eqx.field(static=True, default=None)
    eta: float | None = None
    delta: float | None = None
    delta_scale: float | None = None
    dual_select: str = eqx.field(static=True, default="greedy")
    dual_step: str = eqx.field(static=True, default="auto")
    svd: str = eqx.field(static=True, default="auto")
    power_iters: int = eqx.field(static=True, default=2)
    oversample: int = eqx.field(static=True, default=5)
    layout: LinearOperator | SparseColumns | HybridColumns | None = None

    # ----------------------------------------------------------------- static sizes
    def _dual_step(self, problem) -> str:
        """The dual step in use: ``dual_step``, with ``"auto"`` resolved to ``"accelerated"`` for the
        l1 ball when none of the paper's parameters (``eta``, ``delta``, ``delta_scale``,
        ``dual_block``, ``sparsity``) is given, and to the paper's ``"lipschitz"`` step otherwise
        (the accelerated step's backtracking test needs the exact best response over the ball, not
        the paper's l0-restricted one)."""
        step = self.dual_step
        if step not in ("auto", "accelerated", "lipschitz", "curvature", "newton"):
            raise ValueError(f"dual_step must be 'auto', 'accelerated', 'lipschitz', 'curvature' or 'newton', got {step!r}")
        if step != "auto":
            return step
        paper = (self.eta, self.delta, self.delta_scale, self.dual_block, self.sparsity) != (None,) * 5
        return "lipschitz" if paper or _kind(problem) != "l1" else "accelerated"

    def _sizes(self, problem):
        n, d = problem.n, problem.d
        kind = _kind(problem)
        step = self._dual_step(problem)
        if kind == "l1":
            s = d if self.sparsity is None else min(int(self.sparsity), d)  # s = d: no l0 restriction
            k = max(1, (n * s) // d)  # paper (Cor. 4.1.1): balances O(ns) against O(dk)
            if step in ("curvature", "newton"):  # ... and the O(n + d) selections against O(k p)
                k = max(k, (4 if step == "curvature" else 1) * (n + d) // _row_nnz(problem.A))
            if step == "newton":  # ... and its dense k x s block against them too
                k = min(k, _newton_block_cap(n + d, s))
            if step == "accelerated":  # every row: a full proximal gradient step on the dual
                k = n
            k = self.dual_block if self.dual_block is not None else k
        else:
            c = problem.n_outputs
            full = min(d, c)  # the exact SVD (min(d, c) <= 256) computes every triplet anyway
            s = (full if full <= 256 else 10) if self.sparsity is None else min(int(self.sparsity), full)
            k = self.dual_block if self.dual_block is not None else max(1, int(n * s * (1 / c + 1 / d)))
        if s < 1:
            raise ValueError(f"sparsity must be >= 1, got {self.sparsity}")
        return kind, s, min(int(k), n)

    def _use_power(self, problem):
        if self.svd not in ("auto", "exact", "power"):
            raise ValueError(f"svd must be 'auto', 'exact' or 'power', got {self.svd!r}")
        if self.svd == "auto":
            return min(problem.d, problem.n_outputs) > 256
        return self.svd == "power"

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
        elif self._dual_step(problem) != "lipschitz":  # coordinate step sigma = n mu / R, damped / coupled per block
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
        if self.layout is not None or _kind(problem) != "l1" or self._dual_step(problem) == "accelerated":
            return self  # "accelerated" takes whole products A x and A^T y
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
        if step in ("newton", "accelerated") and kind != "l1":
            raise ValueError(f"dual_step={step!r} is for the l1 ball (Alg. 1)")
        if step == "accelerated" and (self.delta, self.delta_scale, self.eta) != (None,) * 3:
            raise ValueError("dual_step='accelerated' sets its own steps (eta = 1, delta by backtracking)")
        if self.dual_select not in ("greedy", "grouped"):
            raise ValueError(f"dual_select must be 'greedy' or 'grouped', got {self.dual_select!r}")
        A = problem.A
        x = problem.zeros() if init is None else jnp.asarray(init, A.dtype)
        if init is not None:
            x = problem.constraint.project(x)
        y = jnp.zeros((problem.n,) + x.shape[1:], A.dtype)
        w = linear_at(A.mv, x, init is None)
        z = jnp.zeros_like(x)
        if kind == "trace" and self._use_power(problem):
            c = problem.n_outputs
            q = min(s + self.oversample, problem.d, c)
            Q = jnp.linalg.qr(probe_vector((c, q), A.dtype))[0]
        else:
            Q = jnp.zeros((0,), A.dtype)
        rn = A.row_norms_sq()
        R = jnp.max(rn)
        Lk = jnp.minimum(A.spectral_norm_sq(), jnp.sum(lax.top_k(rn, k)[0]))
        one = jnp.ones((), A.dtype)
        if step == "accelerated":  # L_0: a 1/1024 of the global bound, grown by backtracking
            yp, zp, Lh = y, z, Lk / (_scale(problem) * problem.penalty.lam) / 1024
        else:
            yp, zp, Lh = jnp.zeros((0,), A.dtype), jnp.zeros((0,), A.dtype), one
        return PDBlockFWState(x, y, w, z, Q, R, Lk, jnp.zeros((), jnp.int32), yp, zp, one, Lh)

    def step(self, problem, st: PDBlockFWState) -> PDBlockFWState:
        step = self._dual_step(problem)
        if step == "accelerated":
            return self._accelerated_step(problem, st)
        kind, s, k = self._sizes(problem)
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
            U, sv, Vt, Q = self._top_svd(v, s, st.Q, problem)
            sp = _l1_ball(sv, r)  # sv >= 0, so sp = (sv - tau)_+ with sum <= r
            x = (1 - eta) * st.x + eta * (U * sp) @ Vt
            Axt = (A.mv(U) * sp) @ Vt  # O(nds + ncs)
        w = (1 - eta) * st.w + eta * Axt

        # dual greedy block proximal ascent (uses the new w)
        yt = problem.loss.prox_conjugate(st.y + sigma * w, problem.y, sigma)
        diff = yt - st.y
        score = jnp.abs(diff) if diff.ndim == 1 else jnp.sqrt(jnp.sum(diff * diff, axis=1))
        I = top_k_indices(score, k) if self.dual_select == "greedy" else grouped_argmax(score, k)
        rows, y0 = A.rows(I), st.y[I]
        if step != "curvature":  # the prox values taken as they are ("newton": solved for
            # the block's own coupling through the primal, undamped)
            yI = yt[I] if step == "lipschitz" else _coupled_block_prox(
                problem.loss, problem.y[I], self._block(rows, I, idx, problem.d), y0, y0 + sigma * w[I], yt[I],
                vals, r, sigma, sigma * eta / (n * mu))
            return dataclasses.replace(st, x=x, y=st.y.at[I].set(yI), w=w, z=rows.rmv_add(yI - y0, st.z), Q=Q, t=st.t + 1)
        dy = diff[I]
        dz = rows.rmv(dy)  # A_I^T dy
        dzJ = _primal_jacobian_norm(dz, idx, vals, r) if kind == "l1" else _tangent_norm(dz, U, Vt)
        tau = self._block_damping(dy, dzJ, sigma * eta, n * mu)
        return dataclasses.replace(st, x=x, y=st.y.at[I].add(tau * dy), w=w, z=st.z + tau * dz, Q=Q, t=st.t + 1)

    def _accelerated_step(self, problem, st: PDBlockFWState) -> PDBlockFWState:
        """``dual_step="accelerated"`` (**an extension, not in the paper**): Algorithm 1 with
        ``eta = 1`` and ``k = n`` (so ``xt`` is the primal best response ``P_{l0(s) ∩ l1(r)}(-A^T y / (n mu))``
        and the dual step a proximal gradient step on ``-n D``), with Nesterov momentum on ``y``
        (FISTA, Beck & Teboulle, "A Fast Iterative Shrinkage-Thresholding Algorithm for Linear
        Inverse Problems"), the gradient restart of O'Donoghue & Candès ("Adaptive Restart for
        Accelerated Gradient Schemes") and a backtracked estimate ``L_t`` of the dual curvature::

            yh = y + beta (y - y_prev)                      beta = (theta - 1) / theta+
            xt = P_{l0(s) ∩ l1(r)}(-A^T yh / (n mu))         (grad of F(y) = n h^*(-A^T y / n) is -A xt)
            y+ = prox_{f^*/L}(yh + A xt / L)
            accept iff F(y+) <= F(yh) - <A xt, y+ - yh> + (L/2) ||y+ - yh||^2    else L <- 2 L
            restart (theta = 1) iff <yh - y+, y+ - y> > 0;   after an accepted step L <- max(0.9 L, floor)

        ``F(y) = -<A^T y, xb> - (n mu / 2) ||xb||^2`` at the best response ``xb`` costs ``O(d)`` given
        ``A^T y``. The dual ``-n D`` is ``1/beta``-strongly convex with curvature at most
        ``||A||^2 / (n mu)``, so the iteration count grows like ``sqrt(beta ||A||^2 / (n mu))``
        instead of linearly; the estimate ``L_t`` follows the curvature on the current support (far
        below ``||A||^2 / (n mu)`` when the ball is tight). A rejected step changes only ``L``."""
        _, s, _ = self._sizes(problem)
        A, n, mu, r = problem.A, _scale(problem), problem.penalty.lam, problem.constraint.radius
        dt = st.y.dtype
        theta = (1 + jnp.sqrt(1 + 4 * st.theta**2)) / 2
        beta = (st.theta - 1) / theta
        yh, zh = st.y + beta * (st.y - st.yp), st.z + beta * (st.z - st.zp)

        def best_response(z):
            return project_l0_l1_dense(-z / (n * mu), s, r)

        def F(z, xb):  # n h^*(-z / n) at its maximiser xb
            return -jnp.vdot(z, xb) - n * mu / 2 * jnp.vdot(xb, xb)

        xt = best_response(zh)
        w = A.mv(xt)
        y = problem.loss.prox_conjugate(yh + w / st.Lh, problem.y, 1 / st.Lh)
        z = A.rmv(y)
        x = best_response(z)
        dy = y - yh
        Fh, Fn = F(zh, xt), F(z, x)
        slack = 64 * jnp.finfo(dt).eps * (jnp.abs(Fh) + jnp.abs(Fn) + jnp.abs(jnp.vdot(w, dy)))
        ok = Fn <= Fh - jnp.vdot(w, dy) + st.Lh / 2 * jnp.vdot(dy, dy) + slack
        restart = jnp.vdot(yh - y, y - st.y) > 0
        keep = lambda new, old: jnp.where(ok, new, old)  # noqa: E731
        return dataclasses.replace(
            st, x=keep(x, st.x), y=keep(y, st.y), w=keep(w, st.w), z=keep(z, st.z),
            yp=keep(jnp.where(restart, y, st.y), st.yp), zp=keep(jnp.where(restart, z, st.z), st.zp),
            theta=keep(jnp.where(restart, 1.0, theta), st.theta).astype(dt),
            Lh=jnp.where(ok, self._lower(st, dy, n * mu), 2 * st.Lh), t=st.t + 1)

    @staticmethod
    def _lower(st, dy, n_mu):
        """``L_t`` after an accepted step: ``0.9 L_t``, but not after a step that did not move
        (``dy = 0``) and never below ``eps ||A||^2 / (n mu)``, so ``L_t`` cannot decay to zero
        over many trivial steps (in float32 it would underflow and freeze the run)."""
        floor = jnp.finfo(st.Lh.dtype).eps * st.Lk / n_mu
        return jnp.where(jnp.any(dy != 0), jnp.maximum(0.9 * st.Lh, floor), st.Lh)

    def _block(self, rows, I, idx, d):
        """``A[I][:, idx]`` for the Newton step: from the column layout (``O(s k)`` gathers plus the
        selected sparse columns' entries), else from the gathered rows (:func:`_rows_on_support`:
        a scatter of every stored entry of the block)."""
        return take_columns_block(self.layout, idx, I) if self.layout is not None else _rows_on_support(rows, idx, d)

    @staticmethod
    def _block_damping(dy, dzJ, sigma, n_mu):
        """``tau = min(1, 1 / (sigma rho))`` with ``rho = dz^T J dz / (n mu ||dy||^2)``, ``dz = A_I^T dy``
        and ``J`` the Jacobian of the primal map (:func:`_primal_jacobian_norm`; Alg. 2:
        :func:`_tangent_norm`): the local curvature of ``-n h^*(-A^T y / n)`` along the block step.
        For that quadratic model the prox inequality gives an ascent of at least
        ``tau ||dy||^2 / sigma - tau^2 rho ||dy||^2 / 2 > 0``, and ``y + tau dy`` stays in ``dom f^*`` by
        convexity. ``sigma`` is passed as ``eta sigma``: the dual sees a new primal point only
        through ``w <- (1 - eta) w + eta A xt``. **Not in the paper** (``dual_step="curvature"``)."""
        return jnp.minimum(1.0, n_mu * jnp.sum(dy * dy) / jnp.maximum(sigma * dzJ, jnp.finfo(dy.dtype).tiny))

    def _top_svd(self, M, s, Q, problem):
        """Top-``s`` singular triplets of ``M`` (``d x c``): exact, or block power iteration warm-started
        from the previous right subspace ``Q`` (``c x q``, ``q = s + oversample``) followed by a
        Rayleigh-Ritz step (``B = P^T M``, small SVD)."""
        if Q.ndim == 1:
            U, sv, Vt = jnp.linalg.svd(M, full_matrices=False)
            return U[:, :s], sv[:s], Vt[:s], Q
        for _ in range(self.power_iters):
            P = jnp.linalg.qr(M @ Q)[0]
            Q = jnp.linalg.qr(M.T @ P)[0]
        P = jnp.linalg.qr(M @ Q)[0]
        Ub, sv, Vbt = jnp.linalg.svd(P.T @ M, full_matrices=False)
        return (P @ Ub[:, :s]), sv[:s], Vbt[:s], Vbt.T

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
        ``xb = P_C(-A^T y / (n mu))``: the theory needs ``sparsity >= `` this (note §1.9)."""
        kind = _kind(problem)
        xb = _ball_best_response(kind, -st.z / _scale(problem), problem.penalty.lam, problem.constraint.radius)
        if kind == "l1":
            return jnp.sum(xb != 0)
        sv = jnp.linalg.svd(xb, compute_uv=False)
        return jnp.sum(sv > 1e-10 * jnp.maximum(sv[0], 1e-300))
