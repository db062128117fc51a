"""How jaxprox certifies: an honest upper bound on ``P(w) - P*`` at every check.

**The gap.** For the composite problem of :class:`jaxprox.ERM`

    P(w) = (1/n) sum_i l(a_i^T w, y_i) + h(w),        h = lam R + I_C,

with per-sample dual variables ``u_i`` in the margin convention ``l(z) = sup_u u z - l*(u)``,
the Fenchel dual is

    D(u) = -(1/n) sum_i l*(u_i, y_i) - h*(-A^T u / n)          (:func:`fenchel_dual`),

and weak duality ``D(u) <= P* <= P(w)`` holds for every ``w`` and every ``u``. So
``gap = P(w) - D(u)`` bounds the suboptimality ``P(w) - P*`` whatever the solver did, as long as
``D`` is evaluated at a point where it is finite (the duality gap of "Stochastic Dual Coordinate
Ascent Methods for Regularized Loss Minimization" and of "An Efficient Primal Dual Prox Method for
Non-Smooth Optimization").

**The dual point.** A primal iterate gives the dual point ``u = l'(A w)`` (``loss.dual_point``;
the optimal ``u*`` is ``l'(A w*)``), projected onto the loss's dual domain when a solver's own dual
iterate may lie outside it (:func:`projected_dual_value`). A solver that carries dual iterates
(PDProx's averages, SDCA's ``alpha``, AGM's ``ubar``) scores them next to ``w``'s own and keeps
the larger dual value (:func:`best_of`, :func:`best_dual`): each candidate is feasible or scores
``-inf``, so the max is still a lower bound on ``P*``. Across checks a solver may keep the best
dual value seen (it only rises) and report the point of lowest exact objective among its
candidates (:func:`keep_better`, :func:`keep_best`).

**Honest rescaling.** For a penalty without a constraint ``h*(-A^T u / n)`` is ``+inf`` unless
``A^T u / n`` lies in ``lam`` times the dual-norm ball (a norm ``R``). The certificate evaluates
``D`` at ``s u`` with ``s = dual_scale(-A^T u / n) in (0, 1]``, the largest scale that makes
``h*`` finite (:func:`honest_scale`, :func:`honest_dual`); every loss's dual domain is
star-shaped about 0, so ``s u`` stays feasible ("Mind the duality gap: safer rules for the
Lasso"; "GAP Safe screening rules for sparse multi-task and multi-class models").

**Curvature bound.** Without penalty and constraint the dual asks ``A^T u = 0`` exactly (no
rounded point meets it). For the squared and logistic losses the certificate then uses
``||g||^2 e^{R r} / (2 mu_H)`` from the gradient and the smallest positive Hessian eigenvalue
(:func:`curvature_bound`; the logistic curvature changes by at most ``e^{R |dw|}``, the
self-concordance bound of "Self-concordant analysis for logistic regression"), and the outer
solvers of "Un-regularizing: approximate proximal point and faster stochastic algorithms for
empirical risk minimization" (APPA, Dual APPA) and SVRG, SGD report the smallest of that, the
duality gap and an optional user modulus (:func:`suboptimality_bound`, :func:`outer_certificate`).

**Precision policy.** A gap is only as honest as the arithmetic that evaluates it: in float32
the dual scale ``s`` depends on ``A^T u / n``, a sum of ``n`` terms whose rounding moves ``D`` by
more than a small gap. So every dual piece (:func:`certifying`) is evaluated

* with full-precision products (``jax.default_matmul_precision("highest")``: no TF32 on GPUs, no
  single-pass bfloat16 on TPUs),
* in float64 when JAX has it (``jax_enable_x64``) whatever the data's dtype
  (:func:`certificate_dtype`; float32 products are exact in float64), so the gap of a float32
  iterate is that of the float64 problem up to ~1e-16,
* and without float64, where a norm penalty's dual scale ``lam / R_*(A^T u / n)`` is set by
  ``A^T u``, with ``A^T u`` of dense data computed to about the working precision of the result
  (:func:`compensated_rmv`: exact products, exact sums of their leading parts), so the
  cancellation in ``A^T u`` at a weak penalty does not decide the dual scale; otherwise (sparse
  data, matrices too large for its temporaries, other penalties) ``A^T u`` is accumulated in row
  blocks (:func:`blocked_rmv`), which cuts the accumulation error of a long float32 sum by the
  block count (measurements and costs: docs/precision.md).

The iterates keep the dtype the user gave; only the certificate is promoted. The promotion
converts ``A`` to float64 at a check (XLA may keep the converted copy: up to twice the memory
of float32 data, and float64 products, slow on consumer GPUs); switch ``jax_enable_x64`` off for
float32 problems that fill the device. Acceptance tests that compare two values computed two
ways use a slack never below the dtype's rounding (:func:`rounding_slack`).

The other problem families (:mod:`jaxprox.problems.drsvm`, :mod:`jaxprox.problems.bias_svm`,
the AGM models) have their own dual objectives and score them with the same best-of.

The functions take the problem as their first argument and read only its data (``A``, ``y``,
``n``, ``d``, ``loss``, ``penalty``, ``constraint``, ``offset``, ``conjugate_h``), so this module
imports no problem and no solver: problems and solvers import it.
"""
from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
from jax import lax

from .base import cast_floats
from .losses import Hinge
from .operators import Dense, LinearOperator

# ---------------------------------------------------------------------------- precision policy


def certificate_dtype(dtype):
    """The dtype certificates are evaluated in: float64 when JAX has it (``jax_enable_x64``),
    otherwise ``dtype`` (the data's)."""
    return jnp.dtype(jnp.float64) if jax.config.jax_enable_x64 else jnp.dtype(dtype)


#: row blocks of :func:`blocked_rmv`
RMV_BLOCKS = 8


def blocked_rmv(A: LinearOperator, u, blocks: int = RMV_BLOCKS):
    """``A^T u`` as ``sum_b A_b^T u_b`` over ``blocks`` contiguous row blocks: one product with the
    ``(n, blocks)`` block-diagonal matrix ``U[i, b] = u_i [i in block b]`` (the zeros add nothing,
    not even rounding), then a sum of ``blocks`` partial sums. A float32 sum of ``n`` terms
    accumulated in one running sum has error ``~ eps sqrt(n)`` relative to ``sum |a_ij u_i|``;
    each block sums ``n / blocks`` terms. Costs about ``blocks`` products (used by the certificate
    only, and only without float64)."""
    n = A.shape[0]
    size = -(-n // blocks)
    owner = jnp.arange(n) // size
    U = jnp.where(owner[:, None] == jnp.arange(blocks)[None, :], u[:, None], jnp.zeros((), u.dtype))
    return jnp.sum(A.rmv(U), axis=1)


#: the most entries of a dense data matrix for which :func:`dual_rmv` takes :func:`compensated_rmv`
#: (its temporaries are a few copies of the matrix); larger ones take :func:`blocked_rmv`
COMPENSATED_MAX = 1 << 24


def _split(a):
    """Dekker's splitting ``a = hi + lo`` into halves of at most half the significand's bits
    (``hi`` times anything of as many bits is exact): ``c = (2^s + 1) a``, ``hi = c - (c - a)``."""
    c = (2.0 ** ((jnp.finfo(a.dtype).nmant + 2) // 2) + 1.0) * a
    hi = c - (c - a)
    return hi, a - hi


def two_product(a, b):
    """``(p, e)`` with ``p = fl(a b)`` and ``p + e = a b`` exactly (Dekker, "A floating-point
    technique for extending the available precision", 1971; no fused multiply-add needed)."""
    p = a * b
    ah, al = _split(a)
    bh, bl = _split(b)
    return p, ((ah * bh - p) + ah * bl + al * bh) + al * bl


#: the splittings of :func:`compensated_rmv`: its error term is ``(4 n eps)^(k+1)``-small
EXTRACTIONS = 3


def _grid(bound, n: int, dtype):
    """The power of two ``sigma >= 4 n bound`` (per column; ``bound >= |p_ij|``)."""
    _, e = jnp.frexp(bound)
    return jnp.ldexp(jnp.ones((), dtype), e + (max(n, 1) - 1).bit_length() + 2)


def compensated_rmv(X, u):
    """``X^T u`` for a dense ``X`` to about the working precision of the result: every product
    split exactly, ``p + e = x_ij u_i`` (:func:`two_product`); ``p`` split :data:`EXTRACTIONS`
    times, ``p = q1 + q2 + q3 + r``, by rounding to the grid ``eps sigma`` of a power of two
    ``sigma >= 4 n max_i |x_ij| max_i |u_i|`` per column (``q = (sigma + p) - sigma``: every column
    sum of ``q`` is exact in floating point; the next grid is that of ``4 n eps sigma >= 4 n
    |p - q|``), the remainders ``r`` and the errors ``e`` summed as they are (Rump, Ogita & Oishi, "Accurate floating-point summation part I:
    faithful rounding", SIAM J. Sci. Comput. 2008: ExtractVector). The error is about
    ``eps |X^T u| + (4 n eps)^4 max_i |x_ij| max_i |u_i|``: the cancellation in ``X^T u`` at a weak
    l1 penalty (terms of size ``|x_ij u_i|``, a sum of size ``n lam``) no longer decides the dual
    scale in float32. Elementwise passes and four column sums, whatever ``n`` (the certificate's
    product only)."""
    n, eps = X.shape[0], jnp.finfo(X.dtype).eps
    p, err = two_product(X, u[:, None])
    sigma = _grid(jnp.max(jnp.abs(X), axis=0) * jnp.max(jnp.abs(u)), n, X.dtype)
    parts = []
    for k in range(EXTRACTIONS):
        if k:
            sigma = _grid(eps * sigma, n, X.dtype)
        q = (sigma + p) - sigma
        p = p - q
        parts.append(q)
    sums = jnp.sum(jnp.stack([*parts, p + err]), axis=1)  # one reduction: each row of sums exact but the last
    return functools.reduce(jnp.add, sums[:-1]) + sums[-1]


def certifying(fn):
    """Evaluate a dual piece ``fn(problem, ...)`` by the precision policy of the module docstring:
    full-precision products, the problem and the arguments promoted to :func:`certificate_dtype`
    (a method: ``problem`` is ``self``)."""
    @functools.wraps(fn)
    def wrapper(problem, *args, **kwargs):
        with jax.default_matmul_precision("highest"):
            dt = certificate_dtype(problem.A.dtype)
            if dt != problem.A.dtype:
                problem, args, kwargs = cast_floats((problem, args, kwargs), dt)
            return fn(problem, *args, **kwargs)

    return wrapper


def rounding_slack(dtype, floor: float, ulps: float) -> float:
    """``max(floor, ulps * eps(dtype))``: the relative slack of a test that compares two values of
    ``dtype`` computed different ways (a backtracking or acceptance test on ``L``), never below the
    dtype's rounding: at a fixed ``1e-12`` a float32 run past its resolution fails every trial."""
    return max(floor, ulps * float(jnp.finfo(dtype).eps))


# ------------------------------------------------------------------------------------- best-of


def best_of(value, *points):
    """``max_k value(points[k])`` for points of one shape (e.g. two dual points of a certificate),
    ``value`` traced once and the points evaluated together (``jax.vmap`` over them stacked: their
    products with the data become one matrix-matrix product instead of one kernel each)."""
    return jnp.max(jax.vmap(value)(jnp.stack(points)))


def keep_better(better, new, old):
    """``new`` where ``better``, else ``old``, leaf by leaf: the running best of a certificate (a
    dual value kept across steps only rises, a reported point's objective only falls)."""
    return jax.tree_util.tree_map(lambda a, b: jnp.where(better, a, b), new, old)


def keep_best(cands, best, jbest, dual):
    """``(best, jbest, dual)`` after each candidate ``(w, J(w), dual point of w)`` of ``cands`` in
    turn has replaced it where its exact objective is lower (a NaN candidate is never taken)."""
    for wc, jc, dc in cands:
        best, jbest, dual = keep_better(jc < jbest, (wc, jc, dc), (best, jbest, dual))
    return best, jbest, dual


# ------------------------------------------------------------------------ the Fenchel dual of ERM


def dual_rmv(problem, u):
    """``A^T u`` for the dual: below float64 (vector models on a plain data matrix)
    :func:`compensated_rmv` where the dual scale is set by it (a norm penalty, :func:`honest_dual`)
    on a dense matrix of at most :data:`COMPENSATED_MAX` entries, :func:`blocked_rmv` otherwise;
    the operator's product in float64."""
    A = problem.A
    plain = jnp.ndim(u) == 1 and tuple(A.param_shape) == (problem.d,)
    if plain and jnp.finfo(A.dtype).bits < 64:
        if rescales_dual(problem) and isinstance(A, Dense) and A.shape[0] * A.shape[1] <= COMPENSATED_MAX:
            return compensated_rmv(A.X, u)
        return blocked_rmv(A, u)
    return A.rmv(u)


def fenchel_dual(problem, u, v):
    """``D(u) = -(1/n) sum_i l*(u_i, y_i) - h*(-v) + offset`` given ``v = A^T u / n`` (``-inf``
    where it is NaN: outside the dual domain)."""
    out = -problem.loss.conjugate_risk(u, problem.y) - problem.conjugate_h(-v) + problem.offset
    return jnp.where(jnp.isnan(out), -jnp.inf, out)


@certifying
def dual_objective(problem, u):
    """``D(u) = -(1/n) sum_i l*(u_i) - h*(-A^T u / n)`` (``-inf`` outside the dual domain)."""
    return fenchel_dual(problem, u, dual_rmv(problem, u) / problem.n)


def rescales_dual(problem) -> bool:
    """Whether :func:`honest_dual` rescales: a penalty without a constraint."""
    return problem.penalty is not None and problem.constraint is None


def honest_scale(problem, v):
    """:func:`honest_dual`'s ``s`` from ``v = A^T u / n``: ``dual_scale(-v)`` where it rescales,
    else 1."""
    return problem.penalty.dual_scale(-v) if rescales_dual(problem) else 1.0


@certifying
def honest_dual(problem, u):
    """The rescaling ``s u`` of a margin dual point ``u`` (in the loss's dual domain) that makes
    the penalty term of the dual finite: for a penalty without a constraint,

        s = dual_scale(-A^T u / n) in (0, 1],   the largest s with h*(-s A^T u / n) < inf

    (for a norm ``R``: ``s = min(1, lam / R_*(A^T u / n))``; 1 for penalties whose conjugate is
    finite everywhere). With a constraint (``h* >= sigma_C`` finite) or no penalty ``u`` is
    returned as it is. The rescaled point stays in the loss's dual domain when that domain is
    star-shaped about 0 (every loss of :mod:`jaxprox.losses`), so ``D(s u)`` is a valid lower
    bound on ``P*`` (the "honest dual" of "An Efficient Primal Dual Prox Method for Non-Smooth
    Optimization"; standard for Lasso-type gaps, "Mind the duality gap: safer rules for the
    Lasso")."""
    if not rescales_dual(problem):
        return u
    return u * honest_scale(problem, dual_rmv(problem, u) / problem.n)


@certifying
def dual_value(problem, u):
    """``D(s u)``, the dual objective at :func:`honest_dual` ``(u)``: a lower bound on ``P*`` for
    every ``u`` in the loss's dual domain (``-inf`` if it is still infeasible). One product:
    ``A^T (s u) / n`` is taken as ``s v`` from the ``v = A^T u / n`` that fixed ``s``."""
    v = dual_rmv(problem, u) / problem.n
    s = honest_scale(problem, v)
    return fenchel_dual(problem, s * u, s * v)


def projected_dual_value(problem, u):
    """Dual objective ``D(s u')`` at a margin dual point ``u`` that may lie outside the loss's dual
    domain (a primal-dual solver's iterate): ``u' = P_dom(u)`` then :func:`dual_value`."""
    return problem.dual_value(problem.loss.project_dual(u, problem.y))


def best_dual(problem, margins, *duals):
    """``max(D(s u), D(s_k u_k))`` with ``u = l'(margins)`` (the dual point of the primal point
    whose margins ``A w`` these are) and the extra dual points ``u_k`` in the loss's dual domain,
    each rescaled by :func:`dual_value`: every candidate is dual-feasible or scores ``-inf``, so
    the max is a lower bound on ``P*``. All candidates in one product ``A^T [u, u_1, ...]``
    (:func:`best_of`)."""
    return best_of(problem.dual_value, problem.loss.dual_point(margins, problem.y), *duals)


# ------------------------------------------------------------ a dual point from the support of w

#: :func:`support_duals`: rows of the least-squares system beyond the support's size, one
#: candidate each
SUPPORT_DUAL_EXTRA = (0, 2, 5)

#: :func:`support_duals`: the most rows of that system (a static block; larger problems go without)
SUPPORT_DUAL_ROWS = 512


def _pure_l1(problem) -> bool:
    """A pure l1 penalty ``sum_j t_j |w_j|`` (per-coordinate thresholds allowed), no constraint,
    a vector model: the problems whose support's stationarity :func:`support_duals` and
    :func:`support_corrected_dual` solve."""
    pen = problem.penalty
    l1 = pen is not None and pen.separable and pen.l1_threshold is not None and pen.ridge_diagonal is None
    return l1 and problem.constraint is None and tuple(problem.A.param_shape) == (problem.A.shape[1],)


def _below_float64(problem) -> bool:
    """Whether the certificate is evaluated below float64 (x64 off)."""
    return jnp.finfo(certificate_dtype(problem.A.dtype)).bits < 64


def support_dual_rows(problem, precision: bool = True) -> int:
    """The static row block ``K = min(n, d + 8)`` of :func:`support_duals` for the hinge loss with
    a pure l1 penalty (:func:`_pure_l1`) and a dense matrix, when ``K <= SUPPORT_DUAL_ROWS`` and
    (``precision``) the certificate is evaluated below float64 (x64 off: where the rounding of a
    primal-dual solver's own dual points stalls the gap); 0 (no such candidates) otherwise (their
    compile cost: docs/precision.md)."""
    n, d = problem.A.shape
    K = min(n, d + 8)
    ok = isinstance(problem.loss, Hinge) and _pure_l1(problem) and isinstance(problem.A, Dense)
    return K if ok and (_below_float64(problem) or not precision) and K <= SUPPORT_DUAL_ROWS else 0


def _exact_rmv(X, u):
    """``X^T u``: :func:`compensated_rmv` below float64, the plain product otherwise."""
    return compensated_rmv(X, u) if jnp.finfo(X.dtype).bits < 64 else u @ X


@certifying
def support_duals(problem, w):
    """Dual points of the hinge loss with the l1 penalty ``sum_j t_j |w_j|`` built from ``w``
    alone, for a primal iterate whose own dual points lag behind it (a float32 primal-dual solve):
    with ``r = 1 - y * (A w)``, ``J`` the support of ``w`` and ``M`` the ``|J| + m`` rows of
    smallest ``|r_i|`` (``m`` in :data:`SUPPORT_DUAL_EXTRA`, one point each), ``s_i = 1`` where
    ``r_i > 0`` and 0 where ``r_i < 0`` outside ``M``, and on ``M`` the least-squares solution of
    the support's stationarity

        (1/n) sum_i y_i a_ij s_i = t_j sign(w_j),      j in J,

    (two refinement steps, their residuals by :func:`compensated_rmv` below float64), clipped to
    ``[0, 1]``; returned as margin duals ``u = -y s``. At the optimum, with the rows on the margin
    and the support identified, the system holds for the optimal ``s``; elsewhere the points are
    just feasible candidates: :func:`projected_dual_value` scores them honestly like any other.
    ``M`` is the first rows of a static block of :func:`support_dual_rows` rows."""
    X, y, n = problem.A.X, problem.y, problem.A.shape[0]
    K = support_dual_rows(problem, precision=False)
    r = 1.0 - y * _exact_rmv(X.T, w)
    J = w != 0
    order = jnp.argsort(jnp.abs(r))[:K]
    XM, yM = X[order], y[order]
    base = (r > 0).astype(X.dtype)
    target = n * problem.penalty.l1_threshold * jnp.sign(w)

    def point(extra):
        inM = jnp.arange(K) < jnp.sum(J) + extra
        s0 = base.at[order].set(jnp.where(inM, 0.0, base[order]))  # the rows outside M
        b = jnp.where(J, target - _exact_rmv(X, y * s0), 0.0)
        P = jnp.linalg.pinv(jnp.where(J[:, None] & inM[None, :], (XM * yM[:, None]).T, 0.0))

        def refine(_, s):  # s + P (b - A_JM s), the residual compensated
            return s + P @ (b - jnp.where(J, _exact_rmv(XM, yM * jnp.where(inM, s, 0.0)), 0.0))

        s = lax.fori_loop(0, 2, refine, P @ b)
        return -y * s0.at[order].set(jnp.where(inM, jnp.clip(s, 0.0, 1.0), base[order]))

    return list(jax.vmap(point)(jnp.asarray(SUPPORT_DUAL_EXTRA)))


#: :func:`support_corrected_dual`: the most support coordinates corrected (a static column block)
SUPPORT_COLUMNS = 512

#: solvers with cheap checks score the dual points built from the support (:func:`support_duals`,
#: :func:`corrected_dual_value`) at every this-many-th check only: each is a small least-squares
#: solve on a gathered block of the data, costly beside a check's products
SUPPORT_DUAL_CHECKS = 16


def at_some_checks(step, check_every: int, value, like):
    """``value()`` at every :data:`SUPPORT_DUAL_CHECKS`-th check (``step // check_every`` a multiple
    of it), ``-inf`` (no lower bound) at the others: a costly dual candidate in a solver with cheap
    checks. Under ``vmap`` both branches run."""
    due = (step // check_every) % SUPPORT_DUAL_CHECKS == 0
    return lax.cond(due, value, lambda: jnp.full_like(like, -jnp.inf))


def support_correction_columns(problem, precision: bool = True) -> int:
    """The static column block ``K = min(n, d, SUPPORT_COLUMNS)`` of :func:`support_corrected_dual`
    for a smooth loss with a pure l1 penalty (:func:`_pure_l1`) when (``precision``) the
    certificate is evaluated below float64; 0 (no correction) otherwise."""
    n, d = problem.A.shape
    ok = problem.loss.smooth and _pure_l1(problem) and (_below_float64(problem) or not precision)
    return min(n, d, SUPPORT_COLUMNS) if ok else 0


@certifying
def support_corrected_dual(problem, w, u):
    """The dual point ``u`` (in the loss's dual domain, e.g. ``l'(A w)``) of a smooth loss with the
    l1 penalty ``sum_j t_j |w_j|``, corrected so that the stationarity of the support ``J`` of ``w``
    holds: the least-norm change

        u' = P_dom(u + du),    du = C (C^T C)^+ (-n t_J sign(w_J) - C^T u),    C = A_J,

    solves ``(1/n) A_J^T (u + du) = -t_J sign(w_J)`` (``A^T u`` by :func:`dual_rmv`: compensated
    below float64, as the support's gradient is a small difference at a weak penalty). At the
    optimum ``u`` satisfies it already. At an inexact or rounded ``w`` the error ``e`` of the
    support's gradient makes :func:`honest_dual` shrink ``u`` by ``1 - ||e||_inf / t``, which moves
    ``D`` by about ``(||e||_inf / t) |D|``: a large relative error when ``t`` is small. The
    correction moves ``D`` by about ``||w||_1 ||e||_inf`` instead (``D``'s gradient in ``u`` is
    ``-A w / n``). The point is a feasible candidate like any other, scored by
    :func:`dual_value`. At most ``K`` (:func:`support_correction_columns`) coordinates of ``J``
    are corrected, the first ones; the pseudo-inverse of ``C^T C`` (collinear columns: one-hot
    groups) is taken after a Jacobi scaling, its eigenvalues below the rounding level dropped."""
    K, n = support_correction_columns(problem, precision=False), problem.n
    (idx,) = jnp.nonzero(w != 0, size=K, fill_value=0)
    inJ = jnp.arange(K) < jnp.sum(w != 0)
    C = problem.A.columns(idx)
    t = jnp.broadcast_to(jnp.asarray(problem.penalty.l1_threshold, w.dtype), w.shape)[idx]
    rhs = jnp.where(inJ, -n * t * jnp.sign(w[idx]) - dual_rmv(problem, u)[idx], 0.0)
    G = jnp.where(inJ[:, None] & inJ[None, :], C.weighted_gram(jnp.ones((n,), w.dtype)), 0.0)
    e = jnp.where(inJ, 1.0 / jnp.sqrt(jnp.maximum(jnp.diagonal(G), jnp.finfo(w.dtype).tiny)), 0.0)
    lam, V = jnp.linalg.eigh(e[:, None] * G * e[None, :])  # unit diagonal: eigenvalues in [0, K]
    inv = jnp.where(lam > K * jnp.finfo(w.dtype).eps * jnp.max(lam), 1.0 / jnp.where(lam > 0, lam, 1.0), 0.0)
    du = C.mv(e * (V @ (inv * (V.T @ (e * rhs)))))
    return problem.loss.project_dual(u + jnp.where(jnp.all(jnp.isfinite(du)), du, 0.0), problem.y)


def corrected_dual_value(problem, w, margins):
    """``D`` at :func:`support_corrected_dual` of ``l'(margins)`` (``margins = A w``): a lower bound
    on ``P*`` like any dual value."""
    u = problem.loss.dual_point(margins, problem.y)
    return problem.dual_value(support_corrected_dual(problem, w, u))


# --------------------------------------------------------------------------- the curvature bound

#: the curvature certificate (:func:`curvature_bound`) forms a dense Hessian (``d x d``) or, when
#: ``d > n`` and there is no ridge, the Gram matrix (``n x n``) of at most this order per check
CURVATURE_MAX = 2048


def hessian(problem, curv):
    """``A^T diag(curv) A / n`` as a dense ``d x d`` matrix (the operator's weighted Gram: one GEMM
    on the densified matrix when it is small, O(n p^2) scatter-adds for padded sparse rows)."""
    return problem.A.weighted_gram(curv) / problem.n


def curvature_bound(problem, z, g, lam0=None):
    """An honest upper bound on ``P(w) - inf P`` for the squared or logistic loss with at most a
    ridge ``(lam0/2) ||w||^2`` (``lam0`` a scalar or one value per coordinate, all zero or all
    positive; ``None``: no ridge), from ``z = A w`` and the gradient ``g = grad P(w)``:

        ||g||^2 e^{R r} / (2 mu_H),   mu_H = the smallest *positive* eigenvalue of hess P(w),

    where ``r`` must satisfy ``r >= 2 ||g|| e^{R r} / mu_H`` (then the minimiser lies in the ball
    ``B(w, r)`` on which ``P`` is ``mu_H e^{-R r}``-strongly convex, because the logistic curvature
    ``s(1-s)`` changes by at most ``e^{|dz|}`` and ``|dz| <= R r`` with ``R = max_i ||a_i||``);
    ``+inf`` when no such ``r`` is found. Without a ridge ``P`` is constant along ``null(A)`` and
    ``g`` lies in ``range(A^T)``, so only the positive eigenvalues matter. For the squared loss
    (constant Hessian, ``R = 0``) the bound is the exact ``g^T H^+ g / 2``.

    The eigenproblem is ``d x d`` (``hess P = A^T D A / n + diag(lam0)``) or, for ``d > n``
    without a ridge, ``n x n`` (``D^{1/2} A A^T D^{1/2} / n`` has the same positive eigenvalues;
    for the squared loss ``g^T H^+ g = r^T P_{range(A)} r / n`` with ``r = A w - y``; ``+inf``
    when the densified ``A`` would exceed ``4 CURVATURE_MAX^2`` entries). Cost per call: one
    weighted Gram product and a symmetric eigenproblem of that order."""
    dt = problem.A.dtype
    inf = jnp.asarray(jnp.inf, dt)
    squared = problem.loss.family == "squared"
    n, d = problem.n, problem.d
    gram = lam0 is None and d > n
    if gram and n * d > 4 * CURVATURE_MAX**2:
        return inf
    if squared:
        curv, R = jnp.ones_like(z), jnp.zeros((), dt)
    else:
        s = jax.nn.sigmoid(problem.y * z)
        curv = s * (1.0 - s)
        R = jnp.sqrt(jnp.max(problem.A.row_norms_sq()))
    gn = jnp.linalg.norm(g)
    if gram:
        B = jnp.sqrt(curv)[:, None] * problem.A.todense()
        ev, V = jnp.linalg.eigh(B @ B.T / n)
        pos = ev > 1e-10 * ev[-1]
        if squared:
            rc = V.T @ (z - problem.y)
            return 0.5 * jnp.sum(jnp.where(pos, rc**2, 0.0)) / n
    else:
        H = hessian(problem, curv)
        ev, V = jnp.linalg.eigh(H if lam0 is None else H + lam0 * jnp.eye(d, dtype=dt))
        # eigenvalues below 1e-10 * max count as zero
        pos = ev > 1e-10 * ev[-1]
        if squared:
            gc = V.T @ g
            return 0.5 * jnp.sum(jnp.where(pos, gc**2 / jnp.where(pos, ev, 1.0), 0.0))
    muH = jnp.min(jnp.where(pos, ev, jnp.inf)) * (1.0 - 1e-8)
    r = jax.lax.fori_loop(0, 30, lambda _, r: 2.0 * gn * jnp.exp(jnp.minimum(R * r, 50.0)) / muH,
                          jnp.zeros((), dt)) * 1.01
    ok = (r >= 2.0 * gn * jnp.exp(jnp.minimum(R * r, 50.0)) / muH) & (R * r < 50.0)
    return jnp.where(ok, gn**2 * jnp.exp(jnp.minimum(R * r, 50.0)) / (2.0 * muH), inf)


def curvature_certified(problem) -> bool:
    """Whether a certificate also uses :func:`curvature_bound`: no penalty and no constraint (the
    Fenchel dual is then feasible only on ``{A^T u = 0}``, which no rounded point meets, so every
    dual value is ``-inf``), a vector ``w``, the squared or logistic loss and
    ``min(n, d) <= CURVATURE_MAX``. (``solve`` drops a penalty whose ``lam`` is zero, so an
    ``L1(0.0)`` problem is certified the same way.)"""
    return (problem.penalty is None and problem.constraint is None and problem.n_outputs is None
            and problem.loss.family in ("squared", "logistic") and min(problem.n, problem.d) <= CURVATURE_MAX)


def lower_bound(problem, w, p, d, margins=None, grad=None):
    """The best lower bound on ``inf P`` from a dual value ``d`` and, where
    :func:`curvature_certified`, ``P(w) - curvature_bound`` (``p = P(w)``; the margins ``A w`` and
    the gradient ``A^T l'(A w) / n`` when the caller has them)."""
    if not curvature_certified(problem):
        return d
    z = problem.A.mv(w) if margins is None else margins
    g = problem.A.rmv(problem.loss.grad(z, problem.y)) / problem.n if grad is None else grad
    return jnp.maximum(d, p - curvature_bound(problem, z, g))


# -------------------------------------------------------------- outer suboptimality bounds


def ridge_strength(problem, diagonal: bool = False):
    """Strength of the problem's own ``SquaredL2`` penalty (0 without a penalty); with ``diagonal``,
    also the per-coordinate strengths ``lam c^2`` of a column-scaled ridge
    (:attr:`jaxprox.base.Penalty.ridge_diagonal`: APPA around SVRG, whose inner prox is
    coordinate-wise, solves the rescaled problem)."""
    if problem.constraint is not None:
        raise ValueError("SDCA / APPA / Dual APPA do not support constraints")
    if problem.penalty is None:
        return jnp.zeros((), problem.A.dtype)
    if diagonal and problem.penalty.ridge_diagonal is not None:
        return jnp.asarray(problem.penalty.ridge_diagonal, problem.A.dtype)
    if not problem.penalty.quadratic:
        raise ValueError(f"this solver needs penalty=None or SquaredL2, got {type(problem.penalty).__name__}")
    return jnp.asarray(problem.penalty.lam, problem.A.dtype)


def suboptimality_bound(problem, w, mu=None, duals=()):
    """An honest upper bound on ``P(w) - inf P`` for (un- or lightly) regularised smooth ERM, where
    there is generally no finite duality gap.

    ``min`` of (i) the duality gap ``problem.best_certificate(w, *duals)`` (the dual points
    ``duals``, e.g. a method's running duals, scored with ``w``'s own in one product) when the
    problem has a ``SquaredL2`` penalty with ``lam0 > 0`` (+inf otherwise), (ii) the curvature bound
    :func:`curvature_bound` (squared and logistic losses; +inf for the others), and (iii)
    ``||g||^2 / (2 mu)`` if the user supplies a strong-convexity modulus ``mu`` (an assumption the
    user is responsible for). For a non-smooth loss (the hinge) only (i). So ``converged`` means
    ``F(w) - F* <= atol + tol |F(w)|``, a true statement.

    Cost: one pass for ``g`` and the eigenproblem of (ii); for ``d > n`` with ``lam0 > 0`` no
    eigenproblem: the Hessian's smallest eigenvalue is then ``lam0`` (attained on ``null(A)``),
    so (ii) is ``||g||^2 / (2 lam0)``, and a check costs one pass.
    """
    dt = problem.A.dtype
    inf = jnp.asarray(jnp.inf, dt)
    lam0 = ridge_strength(problem, diagonal=True)  # a vector for a column-scaled ridge (APPA)
    kind = problem.loss.family
    bounds = []
    if problem.penalty is not None:
        gap = problem.best_certificate(w, *duals)[2]
        bounds.append(jnp.where(jnp.all(lam0 > 0), jnp.maximum(gap, 0.0), inf))
    if not problem.loss.smooth:  # hinge (Dual APPA): only the duality gap
        return bounds[0] if bounds else inf
    z = problem.A.mv(w)
    g = problem.A.rmv(problem.loss.grad(z, problem.y)) / problem.n + lam0 * w
    gn = jnp.linalg.norm(g)
    if kind in ("squared", "logistic"):
        if problem.d > problem.n:
            # H = A^T D A / n + diag(lam0) equals diag(lam0) on null(A) (dimension >= d - n), so
            # its smallest eigenvalue is min(lam0) when that is positive: no d x d eigenproblem;
            # with lam0 = 0 the n x n Gram matrix has the Hessian's positive eigenvalues
            m = jnp.min(lam0)
            cheap = lambda: gn**2 / (2.0 * jnp.where(m > 0, m, 1.0))  # noqa: E731
            bounds.append(lax.cond(m > 0, cheap, lambda: curvature_bound(problem, z, g)))
        else:
            bounds.append(curvature_bound(problem, z, g, lam0))
    if mu is not None:
        bounds.append(gn**2 / (2.0 * jnp.asarray(mu, dt)))
    if not bounds:
        return inf
    return jnp.min(jnp.stack(bounds))


def outer_certificate(problem, w, mu=None, duals=()):
    """``(F(w), F(w) - b, b)`` with ``b`` :func:`suboptimality_bound`: the certificate of APPA,
    Dual APPA, SVRG without a penalty and SGD."""
    # full-precision products, as the certificate's dual pieces take them (the precision policy
    # above): no TF32 in the curvature bound on a GPU, and the same products as
    # ``problem.certificate``'s, which XLA then computes once
    with jax.default_matmul_precision("highest"):
        p = problem.objective(w)
        b = suboptimality_bound(problem, w, mu, duals)
    return p, p - b, b
