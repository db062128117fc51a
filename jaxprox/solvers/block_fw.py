"""Primal-Dual Block Frank-Wolfe (PDBFW), Lei, Zhuo, Caramanis, Dhillon & Dimakis (paper 001,
arXiv 1906.02436); technical note ``papers/notes/001_pdbfw.md`` (read its errata §0.3 first).

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

Defaults (paper, Cor. 4.1.1): ``eta = mu / (2 L) = 1/2``, ``k = max(1, n s / d)`` and the theory dual
step ``delta = (1/k) (1/(n beta) + 25 R / (2 mu n^2))^{-1}`` (``beta`` = loss smoothness,
``R = max_i ||a_i||^2``). The theory ``delta`` is very conservative (note §6.4: 10x larger is often
much faster and still stable); ``delta`` (absolute) or ``delta_scale`` (a multiple of the theory
value, which keeps working under ``vmap`` over ``mu``) expose it.

Certificate (not in the paper; note §1.9): ``gap = P(x) - max(D(y), D(f'(A x)))`` with
``D(u) = -(1/n) sum_i f_i^*(u_i) - h^*(-A^T u / n)``, ``h = g + I_C``,
``h^*(v) = <v, xb> - (mu/2)||xb||^2`` at ``xb = P_C(v / mu)``. Both dual points are feasible, so the
gap upper-bounds ``P(x) - P*``. Products in the certificate are recomputed exactly (no drift).

Sparsity requirement: the iteration converges to ``x*`` only if ``s >= nnz(x*)`` (rank for Alg. 2);
otherwise every fixed point is ``s``-sparse and the objective plateaus (note §6.4, tested).
"""
from __future__ import annotations

import equinox as eqx
import jax
import jax.numpy as jnp
from jax import lax

from ..driver import Solver
from ..operators import Dense

Array = jax.Array


# ------------------------------------------------------------------------------------------------
# small helpers
# ------------------------------------------------------------------------------------------------
def _radius(constraint) -> Array:
    """The radius leaf of an ``L1Ball`` / ``TraceBall`` constraint."""
    for name in ("radius", "r", "tau", "lam"):
        if hasattr(constraint, name):
            return getattr(constraint, name)
    raise AttributeError(f"cannot find the radius of {type(constraint).__name__}")


def _kind(problem) -> str:
    """``"l1"`` (Alg. 1) or ``"trace"`` (Alg. 2), checked before tracing."""
    c = problem.constraint
    name = type(c).__name__ if c is not None else None
    if name == "L1Ball":
        if problem.n_outputs is not None:
            raise ValueError("PDBlockFW over an L1Ball needs a vector model (n_outputs=None)")
        return "l1"
    if name == "TraceBall":
        if problem.n_outputs is None:
            raise ValueError("PDBlockFW over a TraceBall needs a matrix model (n_outputs=K)")
        return "trace"
    raise ValueError(f"PDBlockFW needs constraint=L1Ball(r) or TraceBall(r), got {name}")


def _scale(problem) -> int:
    """``n``: the risk is ``(1/n) sum_i l(z_i)`` (summed over outputs for ``(n, K)`` margins,
    ``base.Loss.risk``), so the saddle form carries ``1/n``."""
    return problem.n


def _check_problem(problem):
    if problem.penalty is None or type(problem.penalty).__name__ != "SquaredL2":
        raise ValueError("PDBlockFW needs penalty=SquaredL2(mu) with mu > 0 (g must be strongly convex)")
    if not problem.loss.smooth:
        raise ValueError(f"PDBlockFW needs a smooth loss; {type(problem.loss).__name__} is not")
    return _kind(problem)


def _l1_ball(v, r):
    from ..projections import l1_ball

    return l1_ball(v, r, method="sort")


def _trace_ball(V, r):
    from ..projections import trace_ball

    return trace_ball(V, r)


def project_l0_l1(v: Array, s: int, r: Array):
    """``argmin_{||x||_0 <= s, ||x||_1 <= r} ||x - v||`` as ``(idx, vals)`` (note §3.2): keep the ``s``
    largest magnitudes of ``v`` (``lax.top_k``; ties to the lower index), then project those ``s``
    entries onto the l1 ball of radius ``r``. Select first, project second (not equivalent the
    other way round)."""
    _, idx = lax.top_k(jnp.abs(v), s)
    return idx, _l1_ball(v[idx], r)


def _ball_best_response(kind, v, mu, r):
    """``xb = argmax_{x in C} <v, x> - (mu/2)||x||^2 = P_C(v / mu)``."""
    return _l1_ball(v / mu, r) if kind == "l1" else _trace_ball(v / mu, r)


def projected_gradient_residual(problem, x: Array) -> Array:
    """Projected-gradient fixed point ``x - P_C(x - e (grad f(x) + mu x))`` with
    ``grad f(x) = A^T f'(A x) / n`` and a fixed ``e = 1/(beta ||A||^2/n + mu)`` (gradient stopped);
    zero exactly at the optimum and differentiable (used for implicit differentiation)."""
    n = _scale(problem)
    mu = problem.penalty.lam
    L = problem.loss.smoothness * problem.A.spectral_norm_sq() / n + mu
    e = lax.stop_gradient(1.0 / L)
    g = problem.A.rmv(problem.loss.grad(problem.A.mv(x), problem.y)) / n + mu * x
    return x - problem.constraint.project(x - e * g)


# ------------------------------------------------------------------------------------------------
# the solver
# ------------------------------------------------------------------------------------------------
class PDBlockFWState(eqx.Module):
    x: Array       # primal iterate, (d,) or (d, c)
    y: Array       # dual iterate, (n,) or (n, c)
    w: Array       # maintained A x
    z: Array       # maintained A^T y
    Q: Array       # warm-start subspace (c, s + oversample) for the block power SVD (Alg. 2); (0,) otherwise
    AT: Array      # dense data: a transposed copy (d, n), so a column gather is a contiguous row gather
    R: Array       # max_i ||a_i||^2 (for the theory delta)
    t: Array


class PDBlockFW(Solver):
    """Primal-Dual Block Frank-Wolfe (paper 001, Algorithm 1 for ``L1Ball``, Algorithm 2 for
    ``TraceBall``); see the module docstring for the iteration.

    Args:
        sparsity: ``s``, the sparsity (rank) budget of the primal update; must be
            ``>= nnz(x*)`` (``rank(X*)``) for convergence to ``x*``.
        dual_block: ``k``, dual coordinates (rows) updated per iteration (default ``max(1, ns/d)``,
            Alg. 2: ``max(1, ns (1/c + 1/d))`` capped at ``n``).
        eta: primal mixing step in ``(0, 1]`` (default ``mu / (2L) = 1/2``).
        delta: dual step ``delta`` (in Alg. 1's scaling: the prox step on ``f_i^*`` is ``delta / n``).
            Default: the Cor. 4.1.1 theory value times ``delta_scale``.
        delta_scale: multiple of the theory ``delta`` used when ``delta`` is None.
        svd: ``"exact"`` (full SVD then truncate), ``"power"`` (warm-started block power / subspace
            iteration, static rank ``s + oversample``) or ``"auto"`` (exact if ``min(d, c) <= 256``).
        power_iters, oversample: parameters of the ``"power"`` SVD.
    """

    sparsity: int = eqx.field(static=True, default=10)
    dual_block: int | None = eqx.field(static=True, default=None)
    eta: float | None = None
    delta: float | None = None
    delta_scale: float = 1.0
    svd: str = eqx.field(static=True, default="auto")
    power_iters: int = eqx.field(static=True, default=2)
    oversample: int = eqx.field(static=True, default=5)

    # ----------------------------------------------------------------- static sizes
    def _sizes(self, problem):
        n, d = problem.n, problem.d
        kind = _kind(problem)
        if kind == "l1":
            s = min(int(self.sparsity), d)
            k = self.dual_block if self.dual_block is not None else max(1, (n * s) // d)
        else:
            c = problem.n_outputs
            s = min(int(self.sparsity), d, c)
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
        if self.delta is None:
            beta = problem.loss.smoothness
            delta = (1.0 / k) / (1.0 / (n * beta) + 25.0 * state.R / (2.0 * mu * n**2))
            delta = self.delta_scale * delta
        else:
            delta = jnp.asarray(self.delta, dt)
        return eta, delta / n

    # ----------------------------------------------------------------- init / step
    def init(self, problem, init=None):
        kind, s, _ = self._sizes(problem)
        _check_problem(problem)
        A = problem.A
        x = problem.zeros() if init is None else jnp.asarray(init, A.dtype)
        if init is not None:
            x = problem.constraint.project(x)
        y = jnp.zeros((problem.n,) + x.shape[1:], A.dtype)
        w = A.mv(x)
        z = jnp.zeros_like(x)
        if kind == "trace" and self._use_power(problem):
            c = problem.n_outputs
            q = min(s + self.oversample, problem.d, c)
            Q = jnp.linalg.qr(jax.random.normal(jax.random.PRNGKey(0), (c, q), A.dtype))[0]
        else:
            Q = jnp.zeros((0,), A.dtype)
        R = jnp.max(A.row_norms_sq())
        # XLA:CPU gathers columns of a row-major (n, d) array ~20x slower than rows of its transpose
        AT = A.X.T.copy() if (kind == "l1" and isinstance(A, Dense)) else jnp.zeros((0,), A.dtype)
        return PDBlockFWState(x, y, w, z, Q, AT, R, jnp.zeros((), jnp.int32))

    def step(self, problem, st: PDBlockFWState) -> PDBlockFWState:
        kind, s, k = self._sizes(problem)
        A, n = problem.A, _scale(problem)
        mu = problem.penalty.lam
        r = _radius(problem.constraint)
        eta, sigma = self._steps(problem, st)

        # primal block-FW step (uses z^{(t-1)}): v = x - (z/n + mu x) / (mu eta)
        v = st.x - (st.z / n + mu * st.x) / (mu * eta)
        if kind == "l1":
            idx, vals = project_l0_l1(v, s, r)
            x = ((1 - eta) * st.x).at[idx].add(eta * vals)
            if st.AT.ndim == 2:
                Axt = vals @ st.AT[idx]  # O(ns): s columns of A (rows of the stored A^T)
            else:  # padded-row sparse: one product with the s-sparse vector, O(nnz(A))
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
        _, I = lax.top_k(score, k)
        dy = diff[I]
        y = st.y.at[I].set(yt[I])
        z = A.rows(I).rmv_add(dy, st.z)
        return PDBlockFWState(x, y, w, z, Q, st.AT, st.R, st.t + 1)

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
        xb = _ball_best_response(kind, -st.z / _scale(problem), problem.penalty.lam, _radius(problem.constraint))
        if kind == "l1":
            return jnp.sum(xb != 0)
        sv = jnp.linalg.svd(xb, compute_uv=False)
        return jnp.sum(sv > 1e-10 * jnp.maximum(sv[0], 1e-300))
