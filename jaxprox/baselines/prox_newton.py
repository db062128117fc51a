"""Proximal Newton for ``min_w f(w) + h(w)`` with a twice-differentiable risk and few features.

With ``f(w) = (1/n) sum_i l(a_i^T w, y_i)`` and ``h`` a penalty with a prox (and/or a constraint),
one step at ``w`` (Lee, Sun & Saunders 2014, "Proximal Newton-type methods", Alg. 1; the
second-order model of liblinear's newGLMNET, Yuan, Ho & Lin 2012) is

    g = A^T l'(A w) / n,   H = A^T diag(l''(A w)) A / n                       (d x d, dense)
    v = argmin_v  g^T (v - w) + 1/2 (v - w)^T H (v - w) + h(v)                (inner problem)
    w+ = w + t (v - w),   t = beta^j, the first with the Armijo decrease
         F(w + t d) <= F(w) + sigma t Delta,   Delta = g^T d + h(v) - h(w) <= -d^T H d / 2.

The inner problem is a d-dimensional composite quadratic, solved from ``v = w`` until its
prox-gradient residual is below ``eta`` times the outer one, with the forcing term
``eta = min(1/2, sqrt(r0))`` (inexact proximal Newton, Lee et al. section 3.3: superlinear
convergence), by one of two inner solvers:

* FISTA with adaptive restart and the step ``1 / L``, ``L = min(||H||_F, ||H||_inf) >=
  lambda_max(H)`` (``O(d^2)`` per iteration; the default for non-quadratic losses);
* a safeguarded semismooth Newton method on the model's prox-gradient fixed point (``O(d^3)`` per
  iteration, exact once the active set is found; the default for the squared loss, whose model is
  the problem itself and whose Hessian :meth:`ProxNewton.hoist` computes once per path).

An outer step costs one ``rmv``, one ``mv`` and one weighted Gram ``A^T diag(c) A`` (``O(n d^2)``
dense, ``O(nnz * row length)`` sparse; hoisted for the squared loss), plus the inner iterations:
worth it when ``d`` is small (up to a few thousand) and the problem is ill-conditioned, e.g. an
l1-logistic path on a9a or a Lasso path on a1a's rank-deficient features
(``benchmarks/results/paths.md``), where first-order methods need ~10^4 products and the Newton
model needs a few steps per lambda.

A matrix model ``W`` of shape ``(d, K)`` (:class:`jaxprox.losses.Multinomial`, multi-output
losses) with a twice-differentiable penalty ``h`` (the ridge) and no constraint is solved by the
matrix-free inexact Newton method (Newton-CG: Dembo, Eisenstat & Steihaug 1982; Nocedal & Wright,
"Numerical Optimization", Alg. 7.1): the Newton point solves the ``dK x dK`` system

    (H + hess h(w)) (v - w) = -(g + grad h(w)),    H V = A^T l''(A w)[A V] / n,

by conjugate gradients from ``v = w`` until the residual is below ``eta`` times the gradient's
norm, with the same forcing term ``eta``; a Hessian-vector product costs one ``mv``, one ``rmv``
and the loss's curvature applied to ``(n, K)`` margins (``l''`` is ``diag(p) - p p^T`` per row
for the softmax: not elementwise, and never formed). The line search and the certificate are the
vector model's. On digits (``d = 65``, ``K = 10``) the ridge multinomial model takes 6-9 Newton steps
and 30-150 products in all (``benchmarks/results/multinomial.md``).

Not from the five papers: it is the second-order reference that issue 9's path benchmark measures
against (liblinear), written as a jaxprox solver so that it jits, vmaps, warm-starts along
:func:`jaxprox.solve_path` and is differentiated by the driver through the prox-gradient residual.
"""
from __future__ import annotations

import equinox as eqx
import jax
import jax.numpy as jnp
from jax import lax

from ..base import along_rows
from ..solver import Solver
from .. import capabilities as cap
from ..operators import linear_at
from ..losses import Squared
from .fista import momentum


def _quadratic(loss) -> bool:
    """The squared loss: its model is the problem itself and its Hessian is constant."""
    return isinstance(loss, Squared)


def _matrix_free_model(problem) -> bool:
    """Newton-CG applies: a twice-differentiable penalty (the ridge, possibly column-scaled, or
    none) and no constraint, so the Newton point solves a linear system."""
    return problem.constraint is None and (problem.penalty is None or problem.penalty.ridge_diagonal is not None)


#: What ProxNewton needs of the variable: the dense model of a vector, or Newton-CG for a matrix
NEWTON_MODEL = cap.Requirement(
    "a vector model w of shape (d,) with 1-D labels, or a matrix model (n_outputs=K) with "
    "penalty=SquaredL2(lam) or None and no constraint (Newton-CG)",
    lambda p: cap.VECTOR_MODEL(p) or (cap.ERM_PROBLEM(p) and _matrix_free_model(p)))


def _dnorm(D, x):
    """``||D x||`` for a diagonal (or scalar) metric ``D``, scaled so that a metric near the
    underflow threshold (a model without curvature) does not square to zero."""
    top = jnp.max(D)
    return top * jnp.linalg.norm((D / top) * x)


#: :meth:`ProxNewton.metric`: no coordinate steps longer than this many times the longest-curvature
#: one would step (a coordinate without curvature in the model, e.g. a feature absent from a smoothed
#: hinge's curved rows, would otherwise take an unbounded step)
METRIC_FLOOR = 1e-6

#: :meth:`ProxNewton.metric`: a model whose largest curvature is at most this fraction of the risk's
#: global bound is flat (a smoothed hinge whose margins all lie on its linear pieces, as at ``w = 0``
#: for ``mu < 1``): its metric is then that bound
FLAT_MODEL = 1e-12


#: :meth:`ProxNewton.gram_dtype`: from this many rows on, a non-quadratic loss's Gram is formed in
#: float32 by default (float64 data)
GRAM32_ROWS = 4096


def active_rows_cap(problem) -> int:
    """How many curved rows the Newton model gathers for a loss that is flat outside a band
    (``Loss.flat_outside_band``): ``max(1024, 4 d)``, when that is at most half the rows (0: form
    the full Gram). At a smoothed-hinge solution the curved rows are the points on the margin band,
    usually about ``d`` of them."""
    n, d = problem.A.shape[0], problem.d
    cap = max(1024, 4 * d)
    return cap if problem.loss.flat_outside_band and 2 * cap <= n else 0


class ProxNewtonState(eqx.Module):
    w: jax.Array
    Aw: jax.Array       # A w, recomputed after each step (exact: the certificate reads it)
    g: jax.Array        # the risk gradient A^T l'(A w) / n: the next model's and the certificate's
    inner: jax.Array    # inner FISTA iterations so far (diagnostic)
    t: jax.Array        # last accepted Armijo step length


class ProxNewton(Solver):
    """Inexact proximal Newton with an Armijo line search (see the module docstring).

    Args:
        inner_steps: cap on the inner FISTA iterations per Newton step (static).
        sigma: Armijo sufficient-decrease constant.
        beta: backtracking factor of the line search.
        max_backtrack: cap on the line-search halvings (static).
        inner: the inner solver (static): ``"fista"`` (``O(d^2)`` per iteration), ``"ssn"``, a
            safeguarded semismooth Newton (:meth:`_ssn`; one ``O(d^3)`` factorisation per
            iteration, a few iterations per outer step), or ``"auto"`` (default): ``"ssn"`` for
            the squared loss, whose model is the problem itself (a Lasso path on
            ``ERM.compressed()`` is solved exactly, ``benchmarks/results/paths.md``), and for any
            loss when ``d <= 512`` with the Hessian in the problem's precision (a factorisation
            costs little there, and the inner FISTA's ``O(kappa)`` iterations stall on an
            ill-conditioned model such as unscaled features: ``defaults.md``,
            ``paths_a1a_ssn.md``); ``"fista"`` above, and with a lower-precision
            ``hessian_dtype`` (the semismooth Newton steps on an inexact model are slower there).
        hessian_dtype: precision of the weighted Gram ``H`` (static). ``None`` (default):
            ``float32`` for a loss other than the squared one on float64 data with at least
            :data:`GRAM32_ROWS` rows (:meth:`gram_dtype`), the problem's precision otherwise.
            ``"float32"`` cuts the dominant cost on a CPU; the model is then exact to ~1e-7
            relative, which turns the local rate from
            quadratic into linear with a tiny ratio, and the gradient, line search and
            certificate stay in the problem's precision. ``"float64"`` keeps the exact model.

    Needs a smooth loss (``l''`` by forward-mode differentiation of ``loss.grad``) and either a
    vector variable ``w`` of shape ``(d,)`` with ``d <= 4096`` (the model Hessian is a dense
    ``d x d`` array) or a matrix variable ``W`` of shape ``(d, K)`` with the ridge penalty (or
    none) and no constraint (Newton-CG). ``check_every`` defaults to 1: one Newton step is
    expensive and each one counts.
    ``hessian``: the model Hessian, fixed (set by :meth:`hoist` for the squared loss; leave None).
    Differentiation is implicit (the prox-gradient residual); :class:`jaxprox.Unrolled` is not
    available (the inner loops are ``while_loop``s: ``unrollable = False``).
    """

    public = True  # a public solver (jp.ProxNewton) beside the baselines: jaxprox.capabilities
    requires = (cap.ERM_PROBLEM, cap.SMOOTH_LOSS, cap.PROX, NEWTON_MODEL)
    unrollable = False
    option_ranges = {"inner_steps": ">= 1", "sigma": "(0, 1)", "beta": "(0, 1)", "max_backtrack": ">= 0",
                     "L_global": "> 0"}
    step_unit = "Newton steps"
    derived = ("hessian", "L_global")
    #: Newton's step is invariant to the units of the columns, but its inner solvers and a
    #: constraint's projection are not: on heart with 3 columns x1000, the smoothed hinge over the
    #: l1 ball stopped at a 3e-2 gap after 500 Newton steps (semismooth inner) and 2.6e-5 (FISTA
    #: inner), and certifies 1e-10 in 5 steps on the rescaled columns (``defaults_synthetic.md``)
    rescales = True

    inner: str = eqx.field(static=True, default="auto")
    inner_steps: int = eqx.field(static=True, default=500)
    sigma: float = eqx.field(static=True, default=1e-4)
    beta: float = eqx.field(static=True, default=0.5)
    max_backtrack: int = eqx.field(static=True, default=30)
    hessian_dtype: str | None = eqx.field(static=True, default=None)
    hessian: jax.Array | None = None
    L_global: jax.Array | None = None
    check_every: int = eqx.field(static=True, default=1, kw_only=True)
    max_steps: int = eqx.field(static=True, default=500, kw_only=True)

    def hoist(self, problem):
        """The risk's global curvature bound ``L_global`` (:meth:`_global_curvature`) and, for the
        squared loss, the model Hessian ``A^T A / n``: neither depends on ``w`` or lam, so both are
        computed once here (:func:`jaxprox.solve` calls this before its loop, and
        :func:`jaxprox.solve_path` before its scan)."""
        out = self
        if out.L_global is None:
            out = eqx.tree_at(lambda s: s.L_global, out, self._global_curvature(problem), is_leaf=lambda x: x is None)
        if out.hessian is not None or not _quadratic(problem.loss) or self._uses_cg(problem):
            return out
        if problem.gram is not None:  # a compressed problem carries its Hessian A^T A / n
            H = problem.gram.astype(self.gram_dtype(problem) or problem.gram.dtype)
        else:
            H = problem.A.weighted_gram(jnp.full((problem.n,), 1.0 / problem.n, problem.A.dtype),
                                        self.gram_dtype(problem))
        return eqx.tree_at(lambda s: s.hessian, out, H, is_leaf=lambda x: x is None)

    def init(self, problem, init=None):
        if self.inner not in ("auto", "fista", "ssn", "cg"):
            raise ValueError(f"inner must be 'auto', 'fista', 'ssn' or 'cg', got {self.inner!r}")
        if not self._uses_cg(problem) and not cap.VECTOR_MODEL(problem):
            raise ValueError(f"a matrix model is solved by Newton-CG: inner='auto' or 'cg', got {self.inner!r}")
        if self._uses_cg(problem) and not _matrix_free_model(problem):
            raise ValueError("inner='cg' (Newton-CG) needs penalty=SquaredL2(lam) or None and no constraint")
        if not self._uses_cg(problem) and problem.d > 4096:
            raise ValueError(f"ProxNewton forms a dense d x d Hessian; d = {problem.d} is too large "
                             "(use FISTA, or inner='cg' with a ridge penalty)")
        w = problem.zeros() if init is None else jnp.asarray(init, problem.A.dtype)
        w = problem.prox(w, 0.0) if problem.constraint is not None else w
        one = jnp.ones((), w.dtype)
        Aw = linear_at(problem.A.mv, w, init is None and problem.constraint is None)
        return ProxNewtonState(w, Aw, self._risk_grad(problem, Aw), jnp.zeros((), jnp.int32), one)

    @staticmethod
    def _risk_grad(problem, Aw):
        return problem.A.rmv(problem.loss.grad(Aw, problem.y)) / problem.n

    def _uses_cg(self, problem) -> bool:
        """Newton-CG (:meth:`newton_cg_point`): asked for, or ``inner="auto"`` on a matrix model."""
        return self.inner == "cg" or (self.inner == "auto" and not cap.VECTOR_MODEL(problem))

    @staticmethod
    def cg_preconditioner(problem):
        """``r -> M^{-1} r`` for :meth:`newton_cg_point`: the identity, except for a column-scaled
        ridge (``ridge_diagonal = lam c^2``, :meth:`jaxprox.ERM.column_scaled`), where ``M =
        diag(c^2)`` makes conjugate gradients (and the forcing term's norm) on the scaled problem
        the ones on the original problem, in the data's own units. Without it, the Jacobi scales
        ``c`` put ``lam c_j^2`` on the Hessian's diagonal, up to ``3 10^5 lam`` for digits' nearly
        empty pixel columns, and plain CG took 6-10x the products (364 / 547 / 909 against 34 / 66
        / 142 at ``C = 0.1 / 1 / 10``, the problem of ``benchmarks/results/multinomial.md``)."""
        rd = None if problem.penalty is None else problem.penalty.ridge_diagonal
        if rd is None or jnp.ndim(rd) == 0:
            return lambda r: r
        lam = problem.lam
        m = jnp.where(lam > 0, rd / jnp.where(lam > 0, lam, 1.0), 1.0)  # c^2
        return lambda r: r / along_rows(m, r)

    def newton_cg_point(self, problem, s: ProxNewtonState):
        """``v = w + x`` with ``(H + hess h(w)) x ~ -(g + grad h(w))`` by preconditioned conjugate
        gradients from ``x = 0`` (Hestenes & Stiefel 1952; ``M``: :meth:`cg_preconditioner`),
        stopped once ``||r||_{M^{-1}} <= eta ||r_0||_{M^{-1}}``, ``r_0 = -(g + grad h(w))`` the
        objective's negative gradient and ``eta = min(1/2, sqrt(||r_0||_{M^{-1}}))`` (the forcing
        term of :meth:`newton_point`; Eisenstat & Walker: superlinear convergence), or at
        ``inner_steps`` products. Each iterate ``x`` of CG from 0 is a descent direction of the
        quadratic model, so the Armijo search of :meth:`step` applies. ``H V = A^T l''(A w)[A V] /
        n`` is applied, never formed: ``l''`` is the linearisation of ``loss.grad`` at the margins
        ``A w``, ``hess h`` that of the penalty's gradient at ``w``. A direction without positive
        curvature (``p^T H p <= 0``: rounding on a flat model) stops CG at the current ``x``;
        :meth:`step`'s fallback takes over if that is ``0``. Returns ``(v, products)``."""
        A, n = problem.A, problem.n
        curvature = jax.linearize(lambda z: problem.loss.grad(z, problem.y), s.Aw)[1]
        grad_h, hess_h = jax.linearize(jax.grad(problem.regularizer), s.w)
        hvp = lambda V: A.rmv(curvature(A.mv(V))) / n + hess_h(V)  # noqa: E731
        precondition = self.cg_preconditioner(problem)
        r0 = -(s.g + grad_h)
        z0 = precondition(r0)
        rz0 = jnp.vdot(r0, z0)
        target = jnp.minimum(0.25, jnp.sqrt(rz0)) * rz0   # (eta ||r_0||)^2

        def cond(c):
            _, _, _, rz, k, curved = c
            return (rz > target) & (k < self.inner_steps) & curved

        def body(c):
            x, r, p, rz, k, _ = c
            Hp = hvp(p)
            pHp = jnp.vdot(p, Hp)
            curved = pHp > 0
            a = jnp.where(curved, rz / jnp.where(curved, pHp, 1.0), 0.0)
            x, r = x + a * p, r - a * Hp
            z = precondition(r)
            rz_new = jnp.vdot(r, z)
            p = z + (rz_new / jnp.where(rz > 0, rz, 1.0)) * p
            return x, r, p, rz_new, k + 1, curved

        start = (jnp.zeros_like(s.w), r0, z0, rz0, jnp.zeros((), jnp.int32), jnp.ones((), bool))
        x, _, _, _, k, _ = lax.while_loop(cond, body, start)
        return s.w + x, k

    def model(self, problem, s: ProxNewtonState):
        """Gradient ``g`` (carried by the state) and Hessian ``H`` of the risk at ``w``
        (second-order model)."""
        loss, y, n = problem.loss, problem.y, problem.n
        if self.hessian is not None:                  # hoisted (squared loss)
            return s.g, self.hessian
        l2 = loss.grad_and_curvature(s.Aw, y)[1]
        rows = active_rows_cap(problem)
        if rows:  # l'' = 0 outside a band (smoothed hinge, ...): the Gram of the curved rows
            return s.g, problem.A.weighted_gram_active(l2 / n, rows, self.gram_dtype(problem))
        return s.g, problem.A.weighted_gram(l2 / n, self.gram_dtype(problem))

    def gram_dtype(self, problem):
        """The precision of the model's Gram: ``hessian_dtype`` when given; by default ``float32``
        for a non-quadratic loss on float64 data with at least :data:`GRAM32_ROWS` rows, where
        the ``O(n d^2)`` Gram dominates a Newton step (``None``, the problem's precision,
        otherwise: a small problem's step costs little, and the squared loss's Hessian is formed
        once and is the model itself)."""
        if self.hessian_dtype is not None:
            return self.hessian_dtype
        big = problem.n >= GRAM32_ROWS and problem.A.dtype == jnp.float64
        return "float32" if big and not _quadratic(problem.loss) else None

    @staticmethod
    def _global_curvature(problem):
        """``L = rho ||A||_F^2 / n >= lambda_max(hess f)`` everywhere (``rho`` the loss's
        smoothness): the step ``1 / L`` of proximal gradient decreases ``F``."""
        return problem.loss.smoothness * jnp.sum(problem.A.row_norms_sq()) / problem.n

    def _L(self, problem, dtype):
        """:meth:`_global_curvature`, hoisted (``L_global``) or computed here when not."""
        L = self._global_curvature(problem) if self.L_global is None else self.L_global
        return jnp.asarray(L, dtype)

    @staticmethod
    def curvature_bound(H):
        """An upper bound on lambda_max(H) without LAPACK (whose eigvalsh is ~100x slower on the
        near-singular H of 0/1 features): min(||H||_F, ||H||_inf); ~3% above lambda_max on a9a."""
        L = jnp.minimum(jnp.linalg.norm(H), jnp.max(jnp.sum(jnp.abs(H), axis=1)))
        return jnp.maximum(L, jnp.finfo(H.dtype).tiny)

    def _auto_ssn(self, problem) -> bool:
        """``inner="auto"``: the semismooth Newton inner solver for the squared loss, and for
        ``d <= 512`` with the Hessian in the problem's precision."""
        dtype = self.gram_dtype(problem)
        full = dtype is None or jnp.dtype(dtype) == problem.A.dtype
        return _quadratic(problem.loss) or (problem.d <= 512 and full)

    def metric(self, problem, H):
        """The diagonal ``D`` of the inner problem's prox-gradient steps ``prox_{h, D}(v - D^{-1}
        grad q(v))``, with ``D >= H`` (a majorant of the model): for a separable prox without a
        constraint, ``D_jj = sum_k |H_jk|`` (``D - H`` is diagonally dominant, so positive
        semidefinite), each coordinate stepping by its own curvature, which on unscaled features
        differs by orders of magnitude between columns (a scalar step then stalls the inner problem
        on the small columns: ``benchmarks/results/sklearn.md``); otherwise the
        scalar :meth:`curvature_bound` (the prox of a non-separable ``h`` has no diagonal metric;
        returned as a scalar, the step of its prox). A flat model (largest curvature at most
        :data:`FLAT_MODEL` times the risk's global bound, :meth:`_global_curvature`) gets that
        bound: its Newton point would be ``w`` itself (a zero step from a metric of zeros); with
        the bound the first inner step is proximal gradient's, and the line search's fallback
        (:meth:`step`) takes over where the model stays unbounded."""
        L = self._L(problem, H.dtype)
        if problem.prox_separable and problem.constraint is None:
            rows = jnp.sum(jnp.abs(H), axis=1)
            D = jnp.maximum(rows, METRIC_FLOOR * jnp.max(rows) + jnp.finfo(H.dtype).tiny)
            return jnp.where(jnp.max(rows) <= FLAT_MODEL * L, L, D)
        c = self.curvature_bound(H)
        return jnp.where(c <= FLAT_MODEL * L, L, c)

    def newton_point(self, problem, w, g, H):
        """``v ~ argmin_v g^T (v - w) + 1/2 (v - w)^T H (v - w) + h(v)``, from ``v = w``, to the
        inner tolerance ``eta r0`` (residuals measured as ``||D (v - prox step)||``, :meth:`metric`);
        returns ``(v, inner iterations)``."""
        D = self.metric(problem, H).astype(w.dtype)
        grad_q = lambda v: g + H @ (v - w)  # noqa: E731
        prox_step = lambda v: problem.prox(v - grad_q(v) / D, 1.0 / D)  # noqa: E731
        v1 = prox_step(w)
        r0 = _dnorm(D, v1 - w)                     # the outer prox-gradient residual (metric D)
        eta = jnp.minimum(0.5, jnp.sqrt(r0))
        if self.inner == "ssn" or (self.inner == "auto" and self._auto_ssn(problem)):
            return self._ssn(problem, w, g, H, D, v1, r0, eta)

        def cond(c):
            _, _, _, k, r = c
            return (r > eta * r0) & (k < self.inner_steps)

        def body(c):
            x, yv, t, k, _ = c
            x_new = prox_step(yv)
            beta, t_new = momentum(t, yv, x_new, x)
            return x_new, x_new + beta * (x_new - x), t_new, k + 1, _dnorm(D, x_new - yv)

        one = jnp.ones((), w.dtype)
        v, _, _, k, _ = lax.while_loop(cond, body, (v1, v1, one, jnp.ones((), jnp.int32), r0))
        return v, k

    @staticmethod
    def support_newton_point(problem, w, g, H):
        """``w + d`` with ``d_S = -(H_SS)^{-1} (g + grad h(w))_S`` on the support ``S = {j: w_j != 0}``
        (``h`` differentiable there: l1, elastic net, ...) and ``d = 0`` off it: the Newton step of
        the model on the current face. Taken where the model's Newton point rounds to ``w``: in
        float32 its prox-gradient steps ``g_j / D_j`` fall below the rounding of ``w_j`` while the
        Newton step (along the model's flat directions) does not (l1-logistic on splice at
        lam = 1e-2 lam_max: a step of 2e-5 on ``|w| ~ 1``, the gap stuck at 4e-5 relative, 8e-7 at
        the optimum rounded to float32). With a constraint (taken below float64 only), the point
        projected onto it: the exact Newton point where the constraint is inactive, a feasible
        trial for the line search elsewhere (the l1-ball reproducers of
        ``tests/test_default_route.py``)."""
        on = w != 0
        r = jnp.where(on, g + jax.grad(problem.regularizer)(w), 0.0)
        Hs = jnp.where(on[:, None] & on[None, :], H, 0.0) + jnp.diag(jnp.where(on, 0.0, 1.0))
        d = -jnp.linalg.solve(Hs + 1e-7 * jnp.trace(Hs) / w.size * jnp.eye(w.size, dtype=w.dtype), r)
        v = jnp.where(on & jnp.isfinite(d), w + d, w)
        return v if problem.constraint is None else problem.prox(v, 0.0)  # projected onto C

    def _ssn(self, problem, w, g, H, D, v1, r0, eta):
        """Semismooth Newton on the model's prox-gradient fixed point in the metric ``D``
        (:meth:`metric`; Milzarek & Ulbrich 2014; for l1 the primal-dual active-set method of Ito &
        Kunisch):

            F(v) = v - p,  p = prox_{h, D}(z),  z = v - D^{-1} grad q(v),  P = d prox_{h, D}(z)
            (I - P (I - D^{-1} H) + eps I) dv = -F(v)

        For l1, ``P = diag(|z| > lam / D)``: the step solves the model's stationarity on the
        active set exactly and zeroes the rest, so it lands on the minimiser once the active set
        and signs are right. Safeguard: the trial points ``face(v + t dv)`` (t = 1, 1/2: the step
        projected onto the penalty's face at ``p``, e.g. the orthant of ``sign(p)``, then onto the
        constraint) and one prox-gradient step from each compete with ``p`` itself on the model
        value; ``p`` decreases the model by at least ``1/2 ||p - v||_D^2``, so an iteration is never
        worse than proximal gradient, and locally the step is exact. ``eps = 1e-10`` regularises
        a singular ``H_AA`` (duplicate 0/1 columns). An iteration costs one ``d x d`` Cholesky
        (separable prox) or LU (:meth:`_newton_direction`): for ``d`` up to ~10^3."""
        grad_q = lambda v: g + H @ (v - w)  # noqa: E731
        prox = lambda z: problem.prox(z, 1.0 / D)  # noqa: E731
        feasible = (lambda x: x) if problem.constraint is None else (lambda x: problem.prox(x, 0.0))

        def model(V):                      # model values of the rows of V
            Dv = V - w
            return Dv @ g + 0.5 * jnp.sum((Dv @ H) * Dv, axis=1) + jax.vmap(problem.regularizer)(V)

        forward = lambda v: v - grad_q(v) / D  # noqa: E731  (z at v; p = prox(z))

        def body(c):
            v, z, p, k = c
            dv = self._newton_direction(problem, z, p - v, H, D, prox)
            trials = [feasible(problem.face(v + t * dv, p)) for t in (1.0, 0.5)]
            C = jnp.stack([p] + trials + [prox(forward(x)) for x in trials])
            q = model(C)
            v_new = C[jnp.argmin(jnp.where(jnp.isfinite(q), q, jnp.inf))]
            z_new = forward(v_new)
            return v_new, z_new, prox(z_new), k + 1

        def cond(c):
            v, _, p, k = c
            return (_dnorm(D, v - p) > eta * r0) & (k < self.inner_steps)

        v, _, _, k = lax.while_loop(cond, body, (w, forward(w), v1, jnp.zeros((), jnp.int32)))
        return v, k

    @staticmethod
    def _newton_direction(problem, z, minus_F, H, D, prox):
        """Solve ``(I - P (I - D^{-1} H) + eps I) dv = -F`` with ``P = d prox(z)``.

        A separable prox has a diagonal ``P = diag(p)``, ``p in [0, 1]``: then ``dv_i = -F_i``
        where ``p_i = 0``, and multiplying the other rows by ``D_i / p_i`` leaves the symmetric
        positive definite system ``(diag(D (1/p - 1 + eps)) + H)_AA dv_A = -(D F / p)_A - H_AI
        dv_I`` (Cholesky, one JVP for ``p``). Otherwise ``P`` is formed column by column (``d``
        JVPs) and the system solved by LU."""
        eye = jnp.eye(z.shape[0], dtype=z.dtype)
        eps = 1e-10
        if problem.prox_separable:
            pd = jax.jvp(prox, (z,), (jnp.ones_like(z),))[1]
            act = pd > 0
            safe = jnp.where(act, pd, 1.0)
            dv_out = jnp.where(act, 0.0, minus_F)
            both = act[:, None] & act[None, :]
            S = jnp.where(both, H, 0.0) + jnp.diag(jnp.where(act, D * (1.0 / safe - 1.0 + eps), 1.0))
            rhs = jnp.where(act, D * minus_F / safe - H @ dv_out, dv_out)
            return jax.scipy.linalg.cho_solve(jax.scipy.linalg.cho_factor(S), rhs)
        PK = jax.vmap(lambda u: jax.jvp(prox, (z,), (u,))[1], in_axes=1, out_axes=1)(eye - H / D)  # D scalar here
        return jnp.linalg.solve((1.0 + eps) * eye - PK, minus_F)

    def step(self, problem, s: ProxNewtonState) -> ProxNewtonState:
        loss, y, g = problem.loss, problem.y, s.g
        if self._uses_cg(problem):
            v, k = self.newton_cg_point(problem, s)
        else:
            g, H = self.model(problem, s)
            v, k = self.newton_point(problem, s.w, g, H)
            # with a constraint only below float64, where the Newton point rounds to w (in float64
            # the step costs compile time: 52 more kernels before a first solve over an l1 ball)
            if problem.constraint is None or jnp.finfo(s.w.dtype).bits < 64:
                # H passes through v (NaN only where v is): under vmap both branches of the cond
                # run, and the support step's LU must not run beside the Newton point's Cholesky
                # factorisations (jaxlib 0.10's batched LAPACK calls deadlock when they occupy every
                # thread of XLA:CPU's intra-op pool, one per core: two on a 2-core machine)
                H_v = jnp.where(jnp.isnan(jnp.sum(v)), jnp.nan, H)
                v = lax.cond(jnp.all(v == s.w), lambda: self.support_newton_point(problem, s.w, g, H_v), lambda: v)
        d = v - s.w
        Ad = problem.A.mv(d)
        hw = problem.regularizer(s.w)
        F = loss.risk(s.Aw, y) + hw
        delta = jnp.minimum(jnp.vdot(g, d) + problem.regularizer(v) - hw, 0.0)
        # rounding of F near the optimum: in float32 (16 eps ~ 2e-6 relative) a Newton step whose
        # decrease is below it is accepted, else the solve stops short of the default 1e-5 gap
        # (l1-logistic on a1a at lam = 1e-3 lam_max: stuck at 1.6e-5, w 1.3e-4 off the optimum)
        slack = max(1e-14, 16 * float(jnp.finfo(F.dtype).eps)) * (1.0 + jnp.abs(F))

        def decrease_ok(t):
            Ft = loss.risk(s.Aw + t * Ad, y) + problem.regularizer(s.w + t * d)
            return Ft <= F + self.sigma * t * delta + slack

        def cond(c):
            _, ok, j = c
            return (~ok) & (j < self.max_backtrack)

        def body(c):
            t = c[0] * self.beta
            return t, decrease_ok(t), c[2] + 1

        one = jnp.ones_like(F)
        t, ok, _ = lax.while_loop(cond, body, (one, decrease_ok(one), 0))
        t = jnp.where(ok, t, 0.0)
        # no decrease along the Newton direction (the model misleads: nearly flat directions of a
        # smoothed hinge under a weak l1 penalty put the Newton point far off), or no direction (CG
        # stopped on a direction without curvature): the proximal-gradient step of the risk's
        # global curvature bound instead, where it decreases F
        L = self._L(problem, s.w.dtype)
        v = problem.prox(s.w - g / L, 1.0 / L)
        take = (~ok | (delta == 0)) & (loss.risk(problem.A.mv(v), y) + problem.regularizer(v) < F)
        w = jnp.where(take, v, jnp.where(ok, s.w + t * d, s.w))
        if problem.constraint is not None:        # w, v feasible and C convex: w is; guard rounding
            w = problem.prox(w, 0.0)
        Aw = problem.A.mv(w)
        return ProxNewtonState(w, Aw, self._risk_grad(problem, Aw), s.inner + k, t)

    def certificate(self, problem, s: ProxNewtonState):
        """:meth:`ERM.certificate <jaxprox.ERM.certificate>` at ``w`` from the state's exact ``A w``
        and risk gradient (:meth:`ERM.certificate_at <jaxprox.ERM.certificate_at>`: the products
        are the next step's)."""
        return problem.certificate_at(s.w, s.Aw, s.g)

    def params(self, s: ProxNewtonState):
        return s.w
