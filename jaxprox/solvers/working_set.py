"""Working sets with gap-safe screening around an inner solver (celer / skglm), for sparse ERM.

For ``P(w) = (1/n) sum_i l(a_i^T w, y_i) + h(w)`` with a smooth loss (``l'' <= rho``) and a
separable penalty with an l1 part (:attr:`jaxprox.base.Penalty.l1_threshold` ``t``: a minimiser
has ``w_j = 0`` exactly when ``|grad_j f(w)| <= t_j``), one round at ``w`` is

    theta = s l'(A w)                    honest dual point (:func:`jaxprox.certificates.honest_scale`)
    G = P(w) - D(theta)                  its duality gap
    screen   j  if  |a_j^T theta| / n + ||a_j|| sqrt(2 rho G / n) < t_j     (gap-safe sphere)
    score    d_j = (t_j - |a_j^T theta| / n) / ||a_j||                        (celer's priority)
    W = the k features of smallest score, the support of w always in it      (working set)
    w_W = argmin over v of (1/n) sum_i l((A_W v)_i) + h_W(v), to a gap of ``inner_tol * G``

with the inner solver (:class:`~jaxprox.ProxNewton` by default: a ``k x k`` Newton model and a
semismooth Newton inner solver, exact on the Lasso) started from ``w_W``, and ``w`` zero outside
``W``. The certificate is the full problem's gap at ``w`` (never the subproblem's).

Gap-safe rule (Ndiaye, Fercoq, Gramfort & Salmon 2017, "Gap Safe screening rules for sparsity
enforcing penalties", JMLR 18, Theorem 6): ``l^*`` is ``1/rho``-strongly convex, so ``D`` is
``1/(n rho)``-strongly concave and its maximiser ``theta*`` (with ``grad f(w*) = A^T theta* / n``)
lies within ``sqrt(2 n rho G)`` of ``theta``; a feature whose constraint cannot be active anywhere
in that ball is zero in every minimiser and leaves the working set for the rest of the solve.
Working sets scored by the dual point: Massias, Gramfort & Salmon 2018, "Celer: a fast solver for
the Lasso with dual extrapolation" (ICML), Algorithm 2; Bertrand et al. 2022, "Beyond L1: faster
and better sparse models with skglm" (NeurIPS).

The working-set size ``k`` is static (a bucket, a power of two), so each size compiles once and
is reused along a path. When the solution needs more room (the round cannot finish because the
support fills the bucket), :func:`jaxprox.solve` and :func:`jaxprox.solve_path` continue from the
last point with four times the size (:meth:`WorkingSet.enlarged`), on concrete data. Under ``jit`` /
``vmap`` with traced data or ``lam`` the size is the one given (``size``) or, by default, ``d``:
the inner solver on the whole problem, still exact.
"""
from __future__ import annotations

import copy

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from .. import capabilities as cap
from .. import certificates as cert
from ..baselines.prox_newton import ProxNewton
from ..losses import Squared
from ..loop import CONVERGED
from ..operators import linear_at
from ..problems.validation import concrete
from ..solver import Solver, fresh

#: the smallest working-set bucket
MIN_SIZE = 32

L1_PART = cap.Requirement(
    "a separable penalty with an l1 part (L1, ElasticNet with l1_ratio > 0)",
    lambda p: cap.ERM_PROBLEM(p) and p.penalty is not None and p.penalty.separable
    and p.penalty.l1_threshold is not None)


def bucket(m: int, d: int) -> int:
    """The smallest power of two ``>= max(m, MIN_SIZE)``, at most ``d``."""
    return min(d, 1 << max(int(m) - 1, MIN_SIZE - 1).bit_length())


class WorkingSetState(eqx.Module):
    w: jax.Array        # (d,) zero outside the last working set
    Aw: jax.Array       # (n,) A w
    g: jax.Array        # (d,) risk gradient A^T l'(A w) / n
    kept: jax.Array     # (d,) bool: not screened out
    inner: jax.Array    # inner steps so far (diagnostic)


class WorkingSet(Solver):
    """Working sets scored by the dual point, with gap-safe screening (module docstring).

    Args:
        inner: the solver of each working-set subproblem; ``None`` (default):
            :class:`~jaxprox.ProxNewton` (semismooth-Newton inner solver where it picks it), and on
            wide data (``n < d``) with a loss other than the squared one ``ProxNewton(inner="fista")``:
            there the logistic optimum of a small ``lam`` nears a separating direction, whose
            ill-conditioned Newton model costs the semismooth inner solver many factorisations
            (``benchmarks/results/peers_sector.md``).
        size: the working-set size ``k`` (static); ``None`` (default): from the data, the smallest
            power of two (at least :data:`MIN_SIZE`) holding twice the features that violate
            optimality at the start, times four when the solution needs more room; ``d`` when the data
            or ``lam`` are traced.
        inner_tol: the subproblem is solved to a gap of ``inner_tol`` times the full problem's.
        inner_max: cap on the inner solver's steps per round.
        screen: apply the gap-safe rule (features proved zero leave the working set).

    One step is one round (a full gradient, the screening, one subproblem solve).
    """

    public = True
    requires = (cap.ERM_PROBLEM, cap.SMOOTH_LOSS, cap.VECTOR_MODEL, cap.NO_CONSTRAINT, L1_PART)
    unrollable = False
    rescales = True  # the inner Newton solver's metric and the scores follow the units of w
    step_unit = "rounds"
    option_ranges = {"size": ">= 1", "inner_tol": "(0, 1)", "inner_max": ">= 1"}
    derived = ("norms", "Aty", "bucket")
    #: three rounds without a 10% smaller gap: the working set is too small or rounding is reached
    stall_window = 3
    short_advice = "Pass a larger WorkingSet(size=...) or solve with the inner solver alone."

    inner: Solver | None = None
    size: int | None = eqx.field(static=True, default=None)
    inner_tol: float = eqx.field(static=True, default=0.3)
    inner_max: int = eqx.field(static=True, default=50)
    screen: bool = eqx.field(static=True, default=True)
    norms: jax.Array | None = None
    Aty: jax.Array | None = None
    bucket: int | None = eqx.field(static=True, default=None)
    check_every: int = eqx.field(static=True, default=1, kw_only=True)
    max_steps: int = eqx.field(static=True, default=100, kw_only=True)

    # ------------------------------------------------------------------ constants of the data
    def prepare(self, problem):
        """The working-set size from concrete data and ``lam`` (:func:`bucket` of twice the
        features with ``|grad_j f(0)| > t_j``); ``self`` where either is traced."""
        if self.bucket is not None:
            return self
        d = problem.d
        if self.size is not None:
            k = min(int(self.size), d)
        elif concrete(*jax.tree_util.tree_leaves(problem)):
            g0 = np.abs(np.asarray(problem.smooth_grad(problem.zeros())))
            k = bucket(2 * int(np.sum(g0 > np.asarray(problem.penalty.l1_threshold))), d)
        else:
            return self
        return self.with_bucket(k)

    def with_bucket(self, k: int) -> "WorkingSet":
        out = copy.copy(self)  # as Solver.with_options: a static field of a copy
        object.__setattr__(out, "bucket", int(k))
        return out

    def hoist(self, problem):
        """The column norms ``||a_j||`` (scores and screening) and, for least squares that carries
        its Gram ``G = A^T A / n`` (:meth:`jaxprox.ERM.compressed`), ``A^T y / n``: the gradient is
        then ``G w - A^T y / n``, ``O(d k)`` for ``w`` zero outside the working set."""
        if self.norms is not None:
            return self
        A = problem.A
        if problem.gram is not None:
            norms = jnp.sqrt(jnp.maximum(jnp.diag(problem.gram) * problem.n, 0.0))
            Aty = A.rmv(problem.y) / problem.n
        else:
            norms, Aty = jnp.sqrt(A.squared().rmv(jnp.ones((problem.n,), A.dtype))), None
        return eqx.tree_at(lambda s: (s.norms, s.Aty), self, (norms, Aty), is_leaf=lambda x: x is None)

    def inner_for(self, problem) -> Solver:
        """The subproblem solver (``inner``, or its default for ``problem``: see the class)."""
        if self.inner is not None:
            return self.inner
        wide = problem.n < problem.d and not isinstance(problem.loss, Squared)
        return ProxNewton(inner="fista") if wide else ProxNewton()

    def size_for(self, problem) -> int:
        return self.bucket or (min(self.size, problem.d) if self.size else problem.d)

    def needs_room(self, problem, sol):
        """``sol`` stopped short with its support filling at least half the working set."""
        k = self.size_for(problem)
        full = 2 * jnp.count_nonzero(sol.params, axis=-1) >= k  # one solution or a path's stack
        return (sol.status != CONVERGED) & full & (k < problem.d)

    def enlarged(self, problem) -> Solver:
        """Four times the working set; where that covers every feature, the inner solver on the
        whole problem. Each size is one more compile: growing by four reaches a path's last size
        with fewer of them (the Lasso path of ``benchmarks/results/peers.md``: 32, 128, 512, then
        all 1,000 features, instead of 32, 64, 128, 256, then all)."""
        k = 4 * self.size_for(problem)
        return fresh(self.inner_for(problem), problem) if k >= problem.d else self.with_bucket(k)

    # ------------------------------------------------------------------ the rounds
    def init(self, problem, init=None):
        w = problem.zeros() if init is None else jnp.asarray(init, problem.A.dtype)
        Aw = linear_at(problem.A.mv, w, init is None)
        g = problem.A.rmv(problem.loss.grad(Aw, problem.y)) / problem.n
        kept = jnp.ones((problem.d,), bool)
        return WorkingSetState(w, Aw, g, kept, jnp.zeros((), jnp.int32))

    def dual_at(self, problem, s: WorkingSetState):
        """``(A^T theta / n, G)``: the honest dual point's correlations and its duality gap."""
        u = problem.loss.dual_point(s.Aw, problem.y)
        scale = cert.honest_scale(problem, s.g)
        gap = problem._primal_at(s.w, s.Aw) - cert.fenchel_dual(problem, scale * u, scale * s.g)
        return scale * s.g, jnp.maximum(gap, 0.0)

    def screened(self, problem, s: WorkingSetState, corr, gap):
        """The gap-safe rule: ``kept`` without the features proved zero at every minimiser."""
        if not self.screen:
            return s.kept
        t = problem.penalty.l1_threshold
        radius = jnp.sqrt(2.0 * problem.loss.smoothness * gap / problem.n)
        slack = 64 * jnp.finfo(corr.dtype).eps * (t + jnp.abs(corr))  # rounding of the correlations
        return s.kept & (jnp.abs(corr) + self.norms * radius + slack >= t)

    def working_set(self, problem, s: WorkingSetState, corr, kept):
        """The ``k`` features of smallest score ``(t_j - |a_j^T theta| / n) / ||a_j||``, the
        support first, screened features last."""
        t = problem.penalty.l1_threshold
        score = (t - jnp.abs(corr)) / jnp.maximum(self.norms, jnp.finfo(corr.dtype).tiny)
        score = jnp.where(s.w != 0, -jnp.inf, jnp.where(kept, score, jnp.inf))
        return lax.top_k(-score, self.size_for(problem))[1]

    def subproblem(self, problem, ws, kept):
        """The ERM of the features ``ws`` (screened ones as zero columns: they stay at zero), with
        its Gram gathered from the problem's where that has one."""
        on = kept[ws].astype(problem.A.dtype)
        A = problem.A.columns(ws).scale_columns(on)
        G = None if problem.gram is None else problem.gram[ws[:, None], ws[None, :]] * (on[:, None] * on[None, :])
        return eqx.tree_at(lambda p: (p.A, p.penalty), problem, (A, problem.penalty.restricted(ws))).with_gram(G)

    def gradient(self, problem, w, ws, Aw):
        """The risk gradient at ``w`` (zero outside ``ws``): ``G_{:, ws} w_ws - A^T y / n`` from a
        Gram, else ``A^T l'(A w) / n``."""
        if problem.gram is None:
            return problem.A.rmv(problem.loss.grad(Aw, problem.y)) / problem.n
        return problem.gram[:, ws] @ w[ws] - self.Aty

    def step(self, problem, s: WorkingSetState) -> WorkingSetState:
        corr, gap = self.dual_at(problem, s)
        kept = self.screened(problem, s, corr, gap)
        ws = self.working_set(problem, s, corr, kept)
        sub = self.subproblem(problem, ws, kept)
        inner = self.inner_for(problem).hoist(sub)
        if cert.support_correction_columns(problem):
            # the whole problem's certified gap scores the support-corrected dual point
            # (ERM.certificate_at), as the inner solver's certificate does on the subproblem, which
            # would stop at once against the screening's looser gap
            gap = jnp.minimum(gap, self.certificate(problem, s)[2])
        target = self.inner_tol * gap

        def cond(c):
            _, i, sub_gap = c
            return (sub_gap > target) & (i < self.inner_max)

        def body(c):
            st, i, _ = c
            st = inner.step(sub, st)
            return st, i + 1, inner.certificate(sub, st)[2]

        st0 = inner.init(sub, s.w[ws])
        st, i, _ = lax.while_loop(cond, body, (st0, jnp.zeros((), jnp.int32), inner.certificate(sub, st0)[2]))
        v = inner.params(st).astype(s.w.dtype)
        w = jnp.zeros_like(s.w).at[ws].set(v)
        Aw = sub.A.mv(v)  # w is zero outside ws
        g = self.gradient(problem, w, ws, Aw)
        return WorkingSetState(w, Aw, g, kept, s.inner + i)

    def certificate(self, problem, s: WorkingSetState):
        return problem.certificate_at(s.w, s.Aw, s.g)

    def params(self, s: WorkingSetState):
        return s.w

    def describe(self) -> str:
        return "WorkingSet" if self.inner is None else f"WorkingSet({self.inner.describe()})"
