"""Wasserstein distributionally robust SVM (DRSVM), problem (1) of Li, Chen & So (NeurIPS 2020),
"Fast Epigraphical Projection-based Incremental Algorithms for Wasserstein Distributionally Robust
Support Vector Machine".

With ``z_i = y_i x_i`` the problem is

    min_{w in R^d, lam in R}  lam*eps + (1/n) sum_i max{1 - w^T z_i, 1 + w^T z_i - lam*kappa, 0}
                              + (c/2) ||w||_2^2
    s.t.                      ||w||_q <= lam                                               (1)

``norm`` names the **constraint norm q** ("l1" | "l2" | "linf"), the convention of the paper's
experiment labels. The Wasserstein transport cost of the ambiguity set uses the dual
norm p (1/p + 1/q = 1): ``norm="l1"`` <-> transport cost ||x - x'||_inf, ``"l2"`` <-> ||.||_2,
``"linf"`` <-> ||.||_1; the label-flip cost is ``kappa``; ``epsilon`` is the Wasserstein radius.

Certificate (honest duality gap).  Writing ``max{h_1, h_2, 0} = max_{a in Delta} a_1 h_1 + a_2 h_2``
with per-sample weights ``a_i = (a_i1, a_i2)``, ``a >= 0``, ``a_i1 + a_i2 <= 1``, the Lagrangian
dual of (1) is

    D(a) = S(a) + min_{(w, lam) in L_q} g^T w + beta*lam + (c/2)||w||^2,
    S = mean(a_1 + a_2),   g = (1/n) Z^T (a_2 - a_1),   beta = eps - kappa*mean(a_2),

    c = 0:  D(a) = S            if ||g||_p <= beta   (the dual cone of L_q is L_p),  else -inf;
    c > 0:  D(a) = S - dist(g, beta*B_p)^2 / (2c)    if beta >= 0,                  else -inf.

For any weights ``a`` we evaluate ``D`` at a *rescaled* point ``s*a`` (``s in [0, 1]`` chosen in
closed form so that it is dual feasible): ``s0 = min(1, eps/(||g||_p + kappa*mean(a_2)))`` (valid
for every c >= 0, dist = 0 there) and, for c > 0, also ``s1 = min(1, eps/(kappa*mean(a_2)))``,
taking the larger value. Hence ``gap = P(w, lam) - D(s a) >= P(w, lam) - P*`` for every feasible
``(w, lam)``: the gap is an upper bound on the suboptimality, never an estimate. How tight it is
depends on the quality of the weights ``a``: the solvers pass averaged piece multipliers (IPPA)
or averaged subgradient selections (ISG). Because the DRSVM dual is degenerate (many samples sit
exactly on a kink at the optimum, with fractional weights), such averages give a gap that
decreases with the step size but plateaus around 1e-4..1e-3 relative; it is an honest stopping
rule for moderate tolerances, and the benchmarks measure 1e-6 suboptimality against a
Clarabel reference instead (``benchmarks/papers/bench_drsvm.py``). When ``a`` is not given, the weights
of the strictly active pieces at ``(w, lam)`` are used (ties split half/half).
"""
from __future__ import annotations

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import scipy.sparse as sp

from ..base import Problem, as_leaf, sums
from ..certificates import best_of
from ..defaults import RESCALE_RATIO
from .validation import at_least_float32, check_numeric
from .. import operators as _ops
from .. import projections as _proj

__all__ = ["DRSVM", "NORMS"]

NORMS = ("l1", "l2", "linf")


def _concrete(x) -> bool:
    return not isinstance(x, jax.core.Tracer)


#: a point with ``||w||_q`` above ``lam`` by at most this many units of rounding (``eps |lam|``)
#: counts as feasible in :meth:`DRSVM.certificate`: in float32 an interior point on the cone's
#: boundary (a small ``epsilon``) rounds to ``||w||_q = lam (1 + 1e-7)``, and such a point's
#: objective is still an upper bound on ``P*`` up to that rounding
FEASIBLE_ULPS = 8


def qnorm(w, norm: str):
    """``||w||_q`` for ``norm`` in ``NORMS`` (guarded at zero for l2)."""
    if norm == "l1":
        return jnp.sum(jnp.abs(w), axis=-1)
    if norm == "linf":
        return jnp.max(jnp.abs(w), axis=-1, initial=0.0)
    sq = jnp.sum(w * w, axis=-1)
    return jnp.where(sq > 0, jnp.sqrt(jnp.where(sq > 0, sq, 1.0)), 0.0)


def pnorm(g, norm: str):
    """Dual norm ``||g||_p`` of the constraint norm ``q = norm``."""
    return qnorm(g, {"l1": "linf", "l2": "l2", "linf": "l1"}[norm])


def _pball(g, r, norm: str):
    """Projection onto the dual-norm ball ``{||v||_p <= r}``."""
    if norm == "l1":          # p = inf
        return _proj.linf_ball(g, r)
    if norm == "l2":
        return _proj.l2_ball(g, r)
    return _proj.l1_ball(g, r, method="sort")   # q = inf -> p = 1


DENSE_ABOVE = 0.25
"""scipy.sparse input with at least this fraction of nonzeros gets a dense operator for the
whole-matrix products: above it a dense ``Z w`` plus ``Z^T v`` is faster than the sparse
operator's gathers (ijcnn1, 59% nonzero), below it slower (a9a, 11% nonzero)."""


def capped_weights(a):
    """Dual weights ``a >= 0`` of shape ``(n, 2)`` with each row scaled down onto ``a_1 + a_2 <= 1``
    where it exceeds it (a sum of two entries: elementwise, no reduction to compile)."""
    return a / jnp.maximum(a[:, :1] + a[:, 1:], 1.0)


def check_hyperparameters(kappa, epsilon, c) -> None:
    """``kappa > 0``, ``epsilon > 0``, ``c >= 0`` (finite), checked for the concrete ones (a traced
    value is left to the caller): a ``ValueError`` that names the bad value. ``epsilon = 0``
    leaves the empirical hinge risk, which no DRSVM solver can certify."""
    for name, v, strict in (("kappa", kappa, True), ("epsilon", epsilon, True), ("c", c, False)):
        if not _concrete(v):
            continue
        a = np.asarray(v, float)
        if not np.all(np.isfinite(a)) or np.any(a <= 0 if strict else a < 0):
            hint = ("" if name != "epsilon" or not np.any(a == 0) else
                    ": a Wasserstein ball of radius 0 leaves the empirical hinge risk, whose dual "
                    "certificate needs Z^T a = 0 exactly (no solver can certify it in floating point); "
                    "use a small radius (e.g. 1e-6) or the SVM jp.ERM(X, y, losses.Hinge(), "
                    "penalties.SquaredL2(c)) with jp.PDProx / jp.AGM / jp.SDCA")
            raise ValueError(f"{name} must be {'>' if strict else '>='} 0, got {v!r}{hint}")


class DRSVM(Problem):
    """Wasserstein DRSVM, problem (1) (module docstring). Parameters are ``(w, lam)`` tuples.

    Args:
        X: ``(n, d)`` features (dense array or scipy.sparse; stored dense as ``Z = y[:, None] * X``
            for row access, and as the operator ``A`` used by whole-matrix products ``Z w``,
            ``Z^T v``: sparse for scipy.sparse input with fewer than ``DENSE_ABOVE`` = 25%
            nonzeros, dense otherwise).
        y: labels in {-1, +1}.
        norm: constraint norm q: ``"l1"``, ``"l2"`` or ``"linf"`` (static).
        kappa: label-flip cost, > 0.  epsilon: Wasserstein radius, > 0.  c: ridge weight, >= 0.
            All three are array leaves (vmap / grad over them work).
    """

    Z: jax.Array
    y: jax.Array
    A: _ops.LinearOperator
    kappa: jax.Array
    epsilon: jax.Array
    c: jax.Array
    norm: str = eqx.field(static=True, default="l1")

    def __init__(self, X, y, norm="l1", kappa=1.0, epsilon=0.1, c=0.0):
        if norm not in NORMS:
            raise ValueError(f"norm must be one of {NORMS}, got {norm!r}")
        check_numeric("X", X)
        check_numeric("y", y)
        if not sp.issparse(X) and _concrete(X) and not isinstance(X, jax.Array):
            X = np.asarray(X)                   # a DataFrame or a list, as ERM accepts
        if _concrete(y) and not isinstance(y, jax.Array):
            y = np.asarray(y)
        X = at_least_float32(X)
        Zop = None
        if sp.issparse(X):                      # keep a sparse operator for products
            if _concrete(y) and X.nnz < DENSE_ABOVE * X.shape[0] * X.shape[1]:
                dt = X.dtype if X.dtype in (np.float32, np.float64) else np.float64
                Zop = _ops.sparse(sp.diags(np.asarray(y, dt).ravel()) @ sp.csr_matrix(X, dtype=dt))
            X = X.toarray()
        if _concrete(X):
            Xa = np.asarray(X)
            if Xa.ndim != 2 or Xa.shape[0] == 0 or Xa.shape[1] == 0:
                raise ValueError(f"X must be a non-empty (n, d) matrix, got shape {Xa.shape}")
            if not np.all(np.isfinite(Xa)):
                raise ValueError("X contains NaN or infinite values")
        if _concrete(X):  # float32 data stay float32; anything else becomes JAX's default float
            dt = X.dtype if X.dtype in (np.float32, np.float64) else jnp.result_type(float)
            X = jnp.asarray(X, dtype=jax.dtypes.canonicalize_dtype(dt))  # float64 -> float32 with x64 off
        if _concrete(y):
            ya = np.asarray(y).ravel()
            if ya.shape[0] != X.shape[0]:
                raise ValueError(f"y has {ya.shape[0]} labels but X has {X.shape[0]} rows")
            if not np.all(np.isin(ya, (-1.0, 1.0))):
                raise ValueError("DRSVM labels must be in {-1, +1}")
            y = jnp.asarray(ya, dtype=X.dtype)
        check_hyperparameters(kappa, epsilon, c)
        self.kappa = jnp.asarray(as_leaf(kappa, "kappa"), X.dtype)
        self.epsilon = jnp.asarray(as_leaf(epsilon, "epsilon"), X.dtype)
        self.c = jnp.asarray(as_leaf(c, "c"), X.dtype)
        self.Z = y[:, None] * X
        self.y = y
        self.A = Zop if Zop is not None else _ops.Dense(self.Z)
        self.norm = norm

    # ---------------------------------------------------------------- basic quantities
    @property
    def n(self) -> int:
        return self.Z.shape[0]

    @property
    def d(self) -> int:
        return self.Z.shape[1]

    def with_epsilon(self, epsilon) -> "DRSVM":
        """A copy with Wasserstein radius ``epsilon`` (> 0; an array leaf: no recompilation)."""
        check_hyperparameters(self.kappa, epsilon, self.c)
        return eqx.tree_at(lambda p: p.epsilon, self, jnp.asarray(epsilon, self.Z.dtype))

    def with_c(self, c) -> "DRSVM":
        """A copy with ridge weight ``c`` (>= 0)."""
        check_hyperparameters(self.kappa, self.epsilon, c)
        return eqx.tree_at(lambda p: p.c, self, jnp.asarray(c, self.Z.dtype))

    def with_kappa(self, kappa) -> "DRSVM":
        """A copy with label-flip cost ``kappa`` (> 0)."""
        check_hyperparameters(kappa, self.epsilon, self.c)
        return eqx.tree_at(lambda p: p.kappa, self, jnp.asarray(kappa, self.Z.dtype))

    def unit_scales(self, ratio: float = RESCALE_RATIO):
        """``(d, s)``: the scales that bring the features to unit range, for the methods whose step
        sizes are set for features in ``[-1, 1]`` (the paper's data): with the column ranges
        ``r_j = max_i |Z_ij|``,

        * ``d_j = 1 / r_j`` (1 for an empty column) where the ranges of the non-empty columns
          differ by more than ``ratio`` or the largest exceeds ``ratio``, else ``d = 1``: a
          diagonal metric for the ``w`` steps (:class:`jaxprox.ISG` with q = 1, inf);
        * ``s = max_j r_j`` where it exceeds ``ratio``, else 1: a uniform scale (IPPA, and ISG
          with q = 2, whose cone has no closed-form projection in a diagonal metric).

        Both are 1 on data scaled to ``[-1, 1]`` or binary (the methods run as published there)
        and gradient-stopped. There is no ``column_scaled`` problem: ``w = D v`` turns the cone
        ``||w||_q <= lam`` into ``||D v||_q <= lam``, the ball of another transport cost, so only
        a uniform scale maps a DRSVM to a DRSVM (``Z / s``, ``epsilon / s``, ``kappa / s``,
        ``c / s^2`` in ``(s w, s lam)``); per column the scaling lives in the methods' metric."""
        r = jax.lax.stop_gradient(jnp.max(jnp.abs(self.Z), axis=0))
        nz = r > 0
        top = jnp.max(r)
        low = jnp.min(jnp.where(nz, r, top))
        wide = (top > ratio * low) | (top > ratio)
        d = jnp.where(wide & nz, 1.0 / jnp.where(nz, r, 1.0), 1.0)
        s = jnp.where(top > ratio, top, 1.0)
        return d, s

    def zeros(self):
        """The feasible start ``(w, lam) = (0, 1)`` of the authors' ISG code."""
        return jnp.zeros(self.d, self.Z.dtype), jnp.ones((), self.Z.dtype)

    def pieces(self, params):
        """``(h_1, h_2)`` per sample: ``1 - w^T z_i`` and ``1 + w^T z_i - lam*kappa``."""
        w, lam = params
        u = self.A.mv(w)
        return 1.0 - u, 1.0 + u - lam * self.kappa

    def objective(self, params):
        """Primal value of (1) at ``(w, lam)`` (the constraint is not included; see
        :meth:`violation`)."""
        w, lam = params
        h1, h2 = self.pieces(params)
        h = jnp.maximum(jnp.maximum(h1, h2), 0.0)
        return lam * self.epsilon + jnp.mean(h) + 0.5 * self.c * jnp.vdot(w, w)

    def violation(self, params):
        """Cone violation ``max(||w||_q - lam, 0)``."""
        w, lam = params
        return jnp.maximum(qnorm(w, self.norm) - lam, 0.0)

    def feasible(self, params, tol=1e-10):
        """``||w||_q <= lam + tol * max(1, |lam|)``."""
        w, lam = params
        return qnorm(w, self.norm) <= lam + tol * jnp.maximum(1.0, jnp.abs(lam))

    def project(self, params):
        """Euclidean projection of ``(w, lam)`` onto the cone ``||w||_q <= lam``."""
        w, lam = params
        f = {"l1": lambda a, b: _proj.epigraph_l1(a, b, "sort"), "l2": _proj.epigraph_l2,
             "linf": lambda a, b: _proj.epigraph_linf(a, b, "sort")}[self.norm]
        return f(w, lam)

    def subgradient(self, params):
        """One element of the subdifferential of the objective: per sample the first
        maximal piece in the order h_1, h_2, h_3 = 0 (a valid choice also at ties).
        Returns ``((g_w, g_lam), a)`` with ``a`` the ``(n, 2)`` 0/1 piece selections."""
        w, lam = params
        h1, h2 = self.pieces(params)
        s1 = (h1 >= h2) & (h1 >= 0)
        s2 = (~s1) & (h2 >= 0)
        a = jnp.stack([s1, s2], axis=1).astype(w.dtype)
        gw = self.A.rmv(a[:, 1] - a[:, 0]) / self.n + self.c * w
        gl = self.epsilon - self.kappa * jnp.mean(a[:, 1])
        return (gw, gl), a

    def active_weights(self, params, rtol=1e-9):
        """Dual weights from the active pieces at ``(w, lam)``; ties (within ``rtol``) split."""
        h1, h2 = self.pieces(params)
        tol = rtol * (1.0 + jnp.abs(h1))
        m = jnp.maximum(jnp.maximum(h1, h2), 0.0)
        act1 = h1 >= m - tol
        act2 = h2 >= m - tol
        act3 = m <= tol
        cnt = act1.astype(h1.dtype) + act2 + act3
        return jnp.stack([act1 / cnt, act2 / cnt], axis=1)

    # ---------------------------------------------------------------- duality
    def dual_objective(self, a):
        """Lower bound ``D(s a)`` on the optimal value (module docstring), for any weights
        ``a`` of shape ``(n, 2)`` (clipped to ``a >= 0``, ``a_1 + a_2 <= 1``)."""
        a = capped_weights(jnp.clip(a, 0.0, 1.0))
        S, m2 = sums(a[:, 0] + a[:, 1], a[:, 1]) / self.n
        g = self.A.rmv(a[:, 1] - a[:, 0]) / self.n
        eps, kap, c = self.epsilon, self.kappa, self.c
        den0 = pnorm(g, self.norm) + kap * m2
        s0 = jnp.where(den0 > eps, eps / jnp.where(den0 > 0, den0, 1.0), 1.0)
        D0 = s0 * S
        den1 = kap * m2
        s1 = jnp.where(den1 > eps, eps / jnp.where(den1 > 0, den1, 1.0), 1.0)
        beta1 = jnp.maximum(eps - s1 * den1, 0.0)
        g1 = s1 * g
        r = g1 - _pball(g1, beta1, self.norm)
        cpos = c > 0
        D1 = s1 * S - jnp.vdot(r, r) / (2.0 * jnp.where(cpos, c, 1.0))
        return jnp.where(cpos, jnp.maximum(D0, D1), D0)

    def certificate(self, params, a=None, *, with_active=False):
        """``(primal, dual, gap)`` with ``gap = P(w, lam) - D(s a) >= P - P*`` when the point is
        feasible (``||w||_q <= lam`` up to ``1e-9`` relative, or up to :data:`FEASIBLE_ULPS` units
        of rounding where that is larger: float32); an infeasible point gets ``gap = +inf``
        (module docstring). ``a`` defaults to
        the active-piece weights of ``(w, lam)`` (:meth:`active_weights`); ``with_active`` takes
        the larger of the two lower bounds ``D(s a)`` and ``D`` at those weights (both are
        valid; the second is exact where the iterate is and its ties split evenly, e.g. at the
        solution ``w = 0`` of a large radius, where weights averaged over iterations lag behind)."""
        p = self.objective(params)
        if a is not None and with_active:
            dv = best_of(self.dual_objective, a, self.active_weights(params))
        else:
            dv = self.dual_objective(self.active_weights(params) if a is None else a)
        ok = self.feasible(params, max(1e-9, FEASIBLE_ULPS * float(jnp.finfo(p.dtype).eps)))
        return p, dv, jnp.where(ok, p - dv, jnp.inf)

    def value_grad_epsilon(self, params):
        """``d P*/d epsilon = lam*`` (envelope theorem) at a solution ``(w*, lam*)``."""
        return params[1]
