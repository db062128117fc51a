"""Binary SVM with an unregularised bias (Examples 1 and 2 of "Regularized Risk Minimization by
Nesterov's Accelerated Gradient Methods: Algorithmic Extensions and Empirical Studies", Zhang,
Saha, Vishwanathan), as an :class:`~jaxprox.problems.base.AGMModel`:

    J(w) = lam/2 ||w||^2 + min_b (1/n) sum_i [1 - y_i (x_i^T w + b)]_+,

in the three schemes of section 5: the dual ``max_{alpha in Q2} sum alpha - ||X^T Y alpha||^2/(2 lam)``
over ``Q2 = [0, 1/n]^n cap {y^T alpha = 0}`` without smoothing (5.3, ``mu = 0``) or with dual
smoothing ``- mu/2 ||alpha||^2`` (5.1.2), both with primal recovery ``w = X^T Y alpha / lam``
averaged with the AGM weights; or primal smoothing (5.1.1, ``space="primal"``) with the smoothed
hinge of width ``mu/n`` per example, ``alpha*(w) = P_Q2((1 - y * Xw)/mu)``. ``penalty="l1"`` gives
the L1-regularised SVM of Example 2 (an LP; primal smoothing only, the gap certified through a
rescaled dual point). scikit-learn mapping: ``SVC(kernel="linear", C=1/(n lam))`` minimises
``J/lam``.

Helpers of this problem's own math: :func:`hinge_bias_risk` (the exact ``min_b``) and
:func:`active_set_polish` (the exact primal on an identified active set). The projection onto
``Q2`` is :func:`jaxprox.projections.q2_project`.
"""
from __future__ import annotations

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from .._compile import _top_level
from ..base import mins, small_mv, sums
from ..certificates import keep_best
from ..projections import box_hyperplane, q2_project, soft_threshold
from .base import PrimalOrDualModel
from .validation import check_pm1, concrete, data_operator, label_vector, leaf, positive_leaf

__all__ = ["BiasSVM", "hinge_bias_risk", "active_set_polish", "plain_svm_polish", "check_svm_dual_lam", "POLISH_DELTAS", "POLISH_MAX_D"]


def hinge_bias_risk(s, y, max_iter=100):
    """``(min_b (1/n) sum_i [1 - y_i (s_i + b)]_+, argmin b)`` for margins ``s = X w``.

    The objective is convex piecewise linear in ``b`` with kinks ``t_i = y_i - s_i``; its right
    slope at ``b`` is ``S(b)/n``, ``S(b) = #{neg: t_i <= b} - #{pos: t_i > b}`` (non-decreasing,
    constant between kinks), so the minimiser is the smallest kink with ``S >= 0`` (a weighted
    median). Found without sorting (XLA's CPU sort is ~50x slower than an O(n) pass): bisection
    keeps ``S(lo) < 0 <= S(hi)`` until ``(lo, hi]`` holds a single kink value, which is then the
    minimiser ``min{t_i > lo}`` (about ``log2 n`` passes). If ``max_iter`` is hit first the
    better of ``min{t_i > lo}`` and ``hi`` is returned (a valid upper bound, exact in practice).
    If all labels are negative the minimum 0 is attained at the smallest kink."""
    t = y - s
    npos = jnp.sum(y > 0)
    big = jnp.asarray(jnp.inf, t.dtype)

    def S(b):
        return jnp.sum(((y < 0) & (t <= b)).astype(jnp.int32) - ((y > 0) & (t > b)).astype(jnp.int32))

    def n_in(lo, hi):
        inb = (t > lo) & (t <= hi)
        least, neg_most = mins(jnp.where(inb, t, big), jnp.where(inb, -t, big))
        return least < -neg_most

    def cond(c):
        lo, hi, it = c
        return n_in(lo, hi) & (it < max_iter)

    def body(c):
        lo, hi, it = c
        mid = 0.5 * (lo + hi)
        up = S(mid) >= 0
        return jnp.where(up, lo, mid), jnp.where(up, mid, hi), it + 1

    tmin, neg_tmax = mins(t, -t)
    lo, hi, _ = lax.while_loop(cond, body, (tmin - 1.0, -neg_tmax, jnp.zeros((), jnp.int32)))

    def hinge(b):
        return jnp.maximum(1.0 - y * (s + b), 0.0)

    b1 = jnp.min(jnp.where(t > lo, t, big))
    r1, r2, r0 = sums(hinge(b1), hinge(hi), hinge(tmin)) / t.shape[0]
    b = jnp.where(r1 <= r2, b1, hi)
    r = jnp.where(r1 <= r2, r1, r2)
    return jnp.where(npos == 0, r0, r), jnp.where(npos == 0, tmin, b)


_hinge_bias_risk_jit = jax.jit(hinge_bias_risk)


def _bias_risk(s, y):
    """:func:`hinge_bias_risk` for the public :meth:`BiasSVM.objective` / :meth:`BiasSVM.bias`:
    jitted when they are called eagerly (an eager ``lax.while_loop`` is traced anew at every call:
    tens of milliseconds each), plain inside a trace (a solve's graph stays as it is)."""
    return _hinge_bias_risk_jit(s, y) if _top_level() else hinge_bias_risk(s, y)


def _q2_project(v, y, n, method="newton", lam0=0.0):
    """Projection onto ``Q2 = [0, 1/n]^n cap {y^T a = 0}``: ``"newton"`` (:func:`q2_project`,
    warm-started) or a method of :func:`jaxprox.projections.box_hyperplane`."""
    if method == "newton":
        return q2_project(v, y, n, lam0)[0]
    return box_hyperplane(v, 0.0, 1.0 / n, y, 0.0, method=method)


def q2_feasible(alpha, y, n):
    """A point of ``Q2 = [0, 1/n]^n cap {y^T a = 0}`` at or next to ``alpha``: clip to the box,
    then scale the entries of the heavier class down until both classes carry the same mass (the
    box stays satisfied). Exact arithmetic keeps a point of ``Q2`` unchanged; its use is the
    certificate, whose dual value is a valid lower bound only at a feasible point, while a
    projection computed in floating point can miss the hyperplane when ``|v|`` is huge (a dual run
    at ``lam = 1e12`` takes steps of order ``lam / ||X||^2``)."""
    a = jnp.clip(alpha, 0.0, 1.0 / n)
    pos = y > 0
    sp, sn = sums(jnp.where(pos, a, 0.0), jnp.where(pos, 0.0, a))
    sp_, sn_ = jnp.where(sp > 0, sp, 1.0), jnp.where(sn > 0, sn, 1.0)
    return a * jnp.where(pos, jnp.minimum(1.0, sn / sp_), jnp.minimum(1.0, sp / sn_))


# check: on mushrooms it identified the active set from an average 1e-3 off in objective)
POLISH_DELTAS = (1e-2, 10**-2.5, 1e-2, 1e-3, 1e-2, 10**-1.5, 1e-2, 1e-4)
POLISH_MAX_D = 2048  # above this many features the (d + 1)^2 system is not formed


def active_set_polish(A, y, lam, s, b, delta, cap, rho_rel=None, iters=None, bias=True):
    """The SVM-with-bias primal solved exactly on the active set read off a point ``w``.

    With margins ``m_i = y_i (s_i + b)`` (``s = X w``, ``b`` its optimal bias) the set of margin
    violators ``V = {m_i < 1 - delta}`` and of points on the margin ``F = {|m_i - 1| <= delta}``
    fix the piece of the hinge risk on which the solution lies; on it the problem is the
    equality-constrained quadratic programme

        min_{w, b}  lam/2 ||w||^2 - g^T w - s_V b   s.t.  x_i^T w + b = y_i  (i in F),

    ``g = (1/n) sum_V y_i x_i``, ``s_V = (1/n) sum_V y_i`` (the exact solution when ``V, F`` are
    those of the optimum: KKT with ``alpha_V = 1/n``, ``alpha_F`` free). With ``M = [X_F, 1]``,
    ``H = M^T M``, ``r = M^T y_F`` and ``D = diag(lam I, 0)`` it is solved in the ``(d + 1)``-space
    by the augmented Lagrangian ``(D + rho H) z_j = c - nu_j + rho r``,
    ``nu_{j+1} = nu_j + rho (H z_j - r)`` (one Cholesky factor, ``iters`` solves; ``rho`` is
    ``rho_rel`` times ``lam`` over the smallest non-zero diagonal entry of ``H``; default 1e4 and 8
    solves in float64, 1e2 and 10 in float32, where the factor of the stiffer system loses the
    digits), which also handles a rank-deficient ``M`` (duplicate rows, one-hot features).

    Units: the iteration itself is invariant under a change of variables ``z = E z'`` (``E``
    diagonal; the multipliers contract by ``1 / (1 + rho sigma)`` along the eigenvectors of
    ``M D^-1 M^T``), so what depends on the units of the columns is ``rho`` and the factor. ``rho``
    is set by the least curved column (the smallest ``sigma``; set by the mean diagonal, a column
    1000x larger than the others left the rest of the solve 1e-4 off the optimum), and ``K`` is
    factored after a Jacobi scaling to unit diagonal (its diagonal spans the squared ratio of the
    column units). The first ``cap`` points of ``F`` are used (static
    shapes). The point is only a candidate: the caller scores it by the exact objective,
    so a wrong active set costs nothing but the solve (O(cap d^2 + d^3) and two products).
    ``bias=False`` solves the SVM without a bias the same way (``b = 0`` fixed: the column of ones
    and ``s_V`` drop out, the system is ``d``-dimensional).

    ``alpha`` is the dual point of ``(w, b)`` in :class:`BiasSVM`'s scaling: the augmented
    Lagrangian carries the multipliers ``beta`` of the margin equalities themselves,
    ``beta_{j+1} = beta_j + rho (M z_j - y_F)`` (so ``nu_j = M^T beta_j``), and the stationarity
    ``lam w = X^T Y alpha`` of the SVM's Lagrangian reads them off as ``alpha = 1/n`` on ``V``,
    ``-y_i beta_i`` on ``F``, ``0`` elsewhere, clipped into the box (it is exact, as ``(w, b)`` is,
    when ``V, F`` are those of the optimum). When every row fits in the ``cap`` (``cap = n``) the
    rows of ``F`` are masked in place instead of gathered. Returns ``(w, b, alpha, X w + b)``: the
    polished point's margins too, which the caller scores it by (with ``cap = n`` from the product
    that forms ``beta``, no product of their own)."""
    n, d = A.shape
    f64 = s.dtype == jnp.float64
    rho_rel = (1e4 if f64 else 1e2) if rho_rel is None else rho_rel
    iters = (8 if f64 else 10) if iters is None else iters
    marg = y * (s + b)
    viol = (marg < 1.0 - delta).astype(s.dtype)
    on = jnp.abs(marg - 1.0) <= delta
    nb = 1 if bias else 0
    if cap >= n:  # every row fits: F masked in place (no gather, no scatter)
        keep, rows, yF = on.astype(s.dtype), A.todense(), y
    else:
        idx = jnp.nonzero(on, size=cap, fill_value=0)[0]
        keep, rows, yF = (jnp.arange(cap) < jnp.sum(on)).astype(s.dtype), A.rows(idx).todense(), y[idx]
    Mu = jnp.concatenate([rows, jnp.ones((rows.shape[0], nb), s.dtype)], axis=1)
    M, yF = Mu * keep[:, None], yF * keep
    if cap >= n:  # H = M^T M, r = M^T y_F and n c = [X, 1]^T (y on V): one product over the same rows
        G = Mu.T @ jnp.concatenate([M, yF[:, None], (viol * y)[:, None]], axis=1)
        H, r, c = G[:, :-2], G[:, -2], G[:, -1] / n
    else:
        G = M.T @ jnp.concatenate([M, yF[:, None]], axis=1)
        H, r = G[:, :-1], G[:, -1]
        c = jnp.concatenate([A.rmv(viol * y), jnp.sum(viol * y)[None][:nb]]) / n
    Dg = jnp.concatenate([jnp.full((d,), lam, s.dtype), jnp.zeros((nb,), s.dtype)])
    hd = jnp.diagonal(H)
    hbar = jnp.trace(H) / (d + nb)
    # rho from the least curved non-empty column: the multipliers contract by 1 / (1 + rho
    # sigma) along each direction of M D^-1 M^T, and a column in small units has the smallest
    # sigma (rho from the mean diagonal left a column in units 1000x smaller off by 1e-4)
    hmin = jnp.min(jnp.where(hd > 1e-12 * jnp.max(hd), hd, jnp.inf))
    hmin = jnp.where(jnp.isfinite(hmin), hmin, jnp.where(hbar > 0, hbar, 1.0))
    rho = rho_rel * lam / hmin
    # a ridge at rounding level keeps the factor defined when F is empty (b is then free)
    ridge = 100 * jnp.finfo(s.dtype).eps * (rho * hd + lam)
    K = jnp.diag(Dg) + rho * H + jnp.diag(ridge)
    # factored after a Jacobi scaling (unit diagonal): its diagonal spans the squared column units
    e = 1.0 / jnp.sqrt(jnp.where(jnp.diagonal(K) > 0, jnp.diagonal(K), 1.0))
    chol = jax.scipy.linalg.cho_factor(e[:, None] * K * e[None, :])
    solve = lambda rhs: e * jax.scipy.linalg.cho_solve(chol, e * rhs)  # noqa: E731

    def update(_, zs):  # in the (d + 1)-space: nu_j = M^T beta_j, and the z_j summed for beta
        z, z_sum, nu = zs
        z = solve(c - nu + rho * r)
        return z, z_sum + z, nu + rho * (small_mv(H, z) - r)

    zero = jnp.zeros((d + nb,), s.dtype)
    z, z_sum, _ = lax.fori_loop(0, iters, update, (zero, zero, zero))
    wp, bp = z[:d], (z[d] if bias else jnp.zeros((), s.dtype))
    if cap >= n:  # M z_sum (masked) and the new margins [X, 1] z in one product over the same rows
        Mz = Mu @ jnp.stack([z_sum, z], axis=1)
        beta, sp = rho * (Mz[:, 0] * keep - iters * yF), Mz[:, 1]  # beta_iters = rho sum_j (M z_j - y_F)
        beta_n = beta
    else:
        beta, sp = rho * (M @ z_sum - iters * yF), A.mv(wp) + bp
        beta_n = jnp.zeros((n,), s.dtype).at[idx].add(beta)
    alpha = jnp.clip(viol / n - on * y * beta_n, 0.0, 1.0 / n)
    return wp, bp, alpha, sp


def plain_svm_polish(problem, s, t):
    """The active-set polish of a plain SVM posed as an :class:`~jaxprox.ERM` (hinge loss,
    ``SquaredL2(lam)``, no bias) at a point with margins ``s = A w``: :func:`active_set_polish`
    with ``bias=False`` and margin tolerance ``POLISH_DELTAS[t % 8]`` (``t`` counts the checks, so
    successive checks try different tolerances). Returns ``(w_p, P(w_p), u_p)`` with ``u_p = -n y
    alpha`` the polish's dual point in the ERM's margin convention (in the hinge's dual box: exact
    when the polish is). A candidate only: the caller keeps it where its exact ``P`` is lower. Cost:
    the ``(d + 1)``-dimensional solve, one ``A^T`` and one ``A`` product; callers skip it when
    ``d > POLISH_MAX_D``."""
    delta = jnp.asarray(POLISH_DELTAS, s.dtype)[t % len(POLISH_DELTAS)]
    lam = jnp.asarray(problem.penalty.lam, s.dtype)
    wp, _, alpha, sp = active_set_polish(problem.A, problem.y, lam, s, jnp.zeros((), s.dtype), delta,
                                         cap=min(problem.n, max(2048, 4 * problem.d)), bias=False)
    return wp, problem._primal_at(wp, sp), -problem.n * problem.y * alpha


def kkt_margin_tol(dtype) -> float:
    """Margins within this of 1 are on the margin (the set ``F`` of the active-set KKT system):
    ``10 sqrt(eps)`` (1.5e-7 in float64), far above the rounding of a polished solution and far
    below the distance of the other margins in non-degenerate problems."""
    return 10.0 * float(jnp.finfo(dtype).eps) ** 0.5


def check_svm_dual_lam(A, lam, who):
    """``ValueError`` unless the SVM dual ``sum alpha - ||X^T Y alpha||^2 / (2 lam)`` is usable:
    ``X`` has a non-zero entry (else ``L = ||X||^2 / lam = 0`` leaves the step undefined; the
    solution is ``w = 0``) and ``lam >= 100 eps mean_i ||x_i||^2``, below which the two terms
    cancel below rounding at the iterates, the adaptive ``L`` grows without bound and the
    iterate overflows (on separable random data: NaN at a quarter of that floor, clean solves
    from 2.5 times it, in float32 and float64 alike). Traced ``A`` or ``lam`` pass. Dense data are
    checked in NumPy (no eager XLA kernel to compile in a fresh process)."""
    from ..operators import Dense

    data = A.X if isinstance(A, Dense) else A.row_norms_sq()
    if not concrete(lam, data):
        return
    data = np.asarray(data)
    rn = np.einsum("ij,ij->i", data, data) if isinstance(A, Dense) else data  # squared row norms
    if not float(np.max(rn)) > 0:
        raise ValueError(f"{who}: X has no non-zero entry, so the SVM's solution is w = 0 and the "
                         "dual's Lipschitz constant ||X||^2/lam = 0 leaves its step undefined")
    floor = 100.0 * float(jnp.finfo(A.dtype).eps) * float(np.mean(rn))
    if not float(lam) >= floor:
        raise ValueError(
            f"{who}: lam={float(lam):g} is below what the SVM dual can resolve in "
            f"{jnp.dtype(A.dtype).name} (lam > 0 and lam >= 100 eps mean_i ||x_i||^2 = {floor:.3g}): "
            "the terms of sum alpha - ||X^T Y alpha||^2/(2 lam) cancel below rounding and the "
            "iteration overflows; use a larger lam or float64 data")


class BiasSVM(PrimalOrDualModel):
    """Binary SVM with unregularised bias (Example 1; Example 2 with ``penalty="l1"``).

    Args:
        X: ``(n, d)`` data (dense, scipy.sparse or a jaxprox operator); y: labels in {-1, +1}.
        lam: regularisation ``lam`` (array leaf).
        mu: smoothing (array leaf): ``space="dual"``: ``Psi(alpha) = mu/2 ||alpha||^2`` (scheme
            5.1.2; ``mu = 0`` is scheme 5.3, no smoothing); ``space="primal"``: the dual
            regulariser of the smoothed risk (scheme 5.1.1), i.e. a smoothed hinge of width
            ``mu/n`` per example (``mu = n eps`` for an ``eps``-accurate risk, eq. (57)).
        space: ``"dual"`` (AGM runs on ``alpha``; ``Solution.params`` is the recovered ``w``,
            ``Solution.dual`` is ``alpha``) or ``"primal"`` (AGM runs on ``w``).
        penalty: ``"l2"`` (``lam/2 ||w||^2``) or ``"l1"`` (``lam ||w||_1``, primal only).
        method: the box+hyperplane projection method: "newton" (default; :func:`q2_project`,
            safeguarded Newton on the multiplier warm-started from the previous iteration's
            multiplier, 1-3 O(n) passes per projection, then the exact active-set polish),
            "secant" (Dai-Fletcher from the full kink bracket, ~10 passes), "sort" (exact
            O(n log n) kink sort; XLA's CPU sort is slow) or "bisection".
        polish: in a dual run, also try at every check the exact solution on the active set read
            off the averaged primal (:func:`active_set_polish`, margin tolerance cycling through
            ``POLISH_DELTAS``) and report whichever recovered primal has the lower exact objective
            (:meth:`refine_primal`). The averaged primal of a dual method converges slowly when
            the data are nearly separable (the hinge risk is only Lipschitz in ``w``; on mushrooms
            the dual reaches 1e-14 while the average stalls near 1e-3); the polished point is
            exact once the active set is found. Skipped when ``d > POLISH_MAX_D``.

    The certificate is always that of the *unsmoothed* problem: ``J(w) - D(alpha)`` with ``J``
    the exact hinge-with-bias objective (:func:`hinge_bias_risk`) and ``D(alpha) = sum alpha -
    ||X^T Y alpha||^2/(2 lam)`` (l2), ``s sum alpha`` with ``s = min(1, lam/||X^T Y alpha||_inf)``
    (l1, a rescaling that keeps ``alpha`` in ``Q2`` and makes it dual feasible).

    Units of the features. There is no ``column_scale`` / ``column_scaled`` (what :func:`jaxprox.solve`
    rescales an :class:`~jaxprox.ERM` with): in the variable ``v`` of ``w = c * v`` the penalty is
    ``lam/2 sum_j c_j^2 v_j^2``, not a BiasSVM's ``lam/2 ||v||^2``, and its dual is this problem's
    dual (``(X diag(c))^T Y alpha = c * X^T Y alpha`` and the ridge's conjugate divides by
    ``c^2``), so a run on the dual would take the same steps. What depends on the units is the
    active-set polish (:func:`active_set_polish`, whose weight and factor follow the least curved
    column) and the dual's conditioning (``||X||^2 / lam``, set by the largest column): with unscaled
    columns the AGM needs more iterations to identify the active set, and standardised features
    are the cure where it does not within ``max_steps``.
    """

    A: eqx.Module
    y: jax.Array
    lam: jax.Array
    mu: jax.Array
    space: str = eqx.field(static=True, default="dual")
    penalty: str = eqx.field(static=True, default="l2")
    method: str = eqx.field(static=True, default="newton")
    polish: bool = eqx.field(static=True, default=True)
    has_primal_refinement = True

    def __init__(self, X, y, lam, mu=0.0, space="dual", penalty="l2", method="newton", polish=True):
        if space not in ("dual", "primal"):
            raise ValueError(f"space must be 'dual' or 'primal', got {space!r}")
        if penalty not in ("l2", "l1"):
            raise ValueError(f"penalty must be 'l2' or 'l1', got {penalty!r}")
        if method not in ("newton", "secant", "sort", "bisection"):
            raise ValueError(f"method must be 'newton', 'secant', 'sort' or 'bisection', got {method!r}")
        if penalty == "l1" and space != "primal":
            raise ValueError("the L1-SVM (Example 2) is solved with primal smoothing: space='primal'")
        A = data_operator(X)
        y = label_vector(y, A.shape[0], A.dtype)
        check_pm1(y)
        self.A, self.y = A, y
        # the dual divides by lam, and lam -> 0 is the hard-margin SVM (unbounded dual when the
        # data are separable): lam must be > 0 (the AGM's dual run also needs L = ||X||^2 / lam
        # finite: check_data)
        self.lam = positive_leaf(lam, "lam", A.dtype, why=" (the dual divides by lam)")
        self.mu = leaf(mu, "mu", A.dtype)
        if space == "primal" and concrete(self.mu) and float(self.mu) <= 0:
            raise ValueError("space='primal' needs a smoothing mu > 0 (scheme 5.1.1)")
        self.space, self.penalty, self.method, self.polish = space, penalty, method, bool(polish)

    @property
    def n(self):
        return self.A.shape[0]

    def check_data(self):
        """A dual run (``space="dual"``, the AGM's) needs ``lam`` large enough that the dual's
        ``L = ||X||^2 / lam`` is resolved in the data's precision (:func:`check_svm_dual_lam`);
        :class:`~jaxprox.BiasSVMNewton` works on the primal and needs no such floor."""
        if self.space == "dual":
            check_svm_dual_lam(self.A, self.lam, "BiasSVM (space='dual'; space='primal' smooths instead, "
                               "and jp.BiasSVMNewton() solves the primal without this floor)")

    # ---------------------------------------------------------------- the original problem
    def objective(self, w):
        """``J(w) = Omega(w) + min_b (1/n) sum hinge`` (exact)."""
        risk, _ = _bias_risk(self.A.mv(w), self.y)
        return risk + self._omega(w)

    def bias(self, w):
        """The optimal bias for ``w`` (a minimiser of the hinge risk over ``b``; not unique in
        general)."""
        return _bias_risk(self.A.mv(w), self.y)[1]

    def dual_objective(self, alpha):
        v = self.A.rmv(self.y * alpha)
        if self.penalty == "l2":
            return jnp.sum(alpha) - jnp.vdot(v, v) / (2.0 * self.lam)
        return jnp.sum(alpha) * self._l1_scale(v)

    def _l1_scale(self, v):
        m = jnp.max(jnp.abs(v))
        return jnp.where(m > self.lam, self.lam / jnp.where(m > 0, m, 1.0), 1.0)

    def _omega(self, w):
        if self.penalty == "l2":
            return 0.5 * self.lam * jnp.vdot(w, w)
        return self.lam * jnp.sum(jnp.abs(w))

    # ---------------------------------------------------------------- AGM model interface
    def strong_convexity(self, geom):
        z = jnp.zeros((), self.A.dtype)
        if self.space == "dual":
            return z, self.mu + z
        return z, (self.lam + z if self.penalty == "l2" else z)

    def lipschitz(self, geom):
        s2 = self.A.spectral_norm_sq()
        return s2 / self.lam if self.space == "dual" else s2 / self.mu

    def lipschitz_estimate(self, geom):
        """The scale of :meth:`lipschitz` from 10 power iterations instead of 100 where the norm is
        not taken from a Gram matrix (``d >`` :func:`jaxprox.operators.exact_eig_side` ``(10)``; it
        starts the adaptive rule at ``1e-3`` times this, so a rough value will do)."""
        s2 = self.A.spectral_norm_sq(iters=10)
        return s2 / self.lam if self.space == "dual" else s2 / self.mu

    def x0(self, geom, init):
        if self.space == "dual":
            x = jnp.zeros((self.n,), self.A.dtype) if init is None else jnp.asarray(init, self.A.dtype)
            return _q2_project(x, self.y, self.n, self.method) if init is not None else x
        return jnp.zeros((self.A.shape[1],), self.A.dtype) if init is None else jnp.asarray(init, self.A.dtype)

    def x0_is_origin(self, geom, init):
        return init is None

    def lin(self, x):
        # dual: v = X^T Y alpha (d,); primal: margins s = X w (n,)
        return self.A.rmv(self.y * x) if self.space == "dual" else self.A.mv(x)

    def _smoothed_alpha(self, s):
        return _q2_project((1.0 - self.y * s) / self.mu, self.y, self.n, self.method)

    def f_value(self, x, ax):
        if self.space == "dual":
            return -jnp.sum(x) + jnp.vdot(ax, ax) / (2.0 * self.lam)
        a = self._smoothed_alpha(ax)
        return jnp.vdot(a, 1.0 - self.y * ax) - 0.5 * self.mu * jnp.vdot(a, a)

    def f_grad(self, x, ax):
        if self.space == "dual":
            # f(alpha) = -sum alpha + ||v||^2/(2 lam); grad = -1 + Y X v / lam; w(alpha) = v/lam
            f = -jnp.sum(x) + jnp.vdot(ax, ax) / (2.0 * self.lam)
            g = -1.0 + self.y * self.A.mv(ax) / self.lam
            return f, g, ax / self.lam
        a = self._smoothed_alpha(ax)
        f = jnp.vdot(a, 1.0 - self.y * ax) - 0.5 * self.mu * jnp.vdot(a, a)
        return f, -self.A.rmv(self.y * a), a

    def psi(self, x):
        if self.space == "dual":
            return 0.5 * self.mu * jnp.vdot(x, x)
        return self._omega(x)

    def breg_prox(self, geom, kappa, theta, beta):
        return self.breg_prox_warm(geom, kappa, theta, beta, jnp.zeros((), theta.dtype))[0]

    def prox_hint(self, x0):
        """Initial warm start of :meth:`breg_prox_warm` (the Q2 multiplier)."""
        return jnp.zeros((), self.A.dtype)

    def breg_prox_warm(self, geom, kappa, theta, beta, hint):
        """:meth:`breg_prox` and the multiplier of its Q2 projection (dual run), warm-started
        from ``hint``, the multiplier of the previous call (the AGM state carries it)."""
        if self.space == "dual":
            v = theta / (kappa + beta * self.mu)
            if self.method == "newton":
                return q2_project(v, self.y, self.n, hint)
            return _q2_project(v, self.y, self.n, self.method), hint
        if self.penalty == "l2":
            return theta / (kappa + beta * self.lam), hint
        return soft_threshold(theta / kappa, beta * self.lam / kappa), hint

    def scaled_dual(self, alpha, v=None):
        """``max_{0 <= t <= 1} D(t alpha)`` (l2): ``t alpha`` stays in ``Q2`` (the box scaled
        towards 0, the hyperplane kept) and ``D(t alpha) = t sum alpha - t^2 ||v||^2/(2 lam)``
        with ``v = X^T Y alpha`` is maximised at ``t = clip(lam sum alpha/||v||^2, 0, 1)``."""
        v = self.A.rmv(self.y * alpha) if v is None else v
        s1, v2 = jnp.sum(alpha), jnp.vdot(v, v)
        t = jnp.clip(self.lam * s1 / jnp.where(v2 > 0, v2, 1.0), 0.0, 1.0)
        t = jnp.where(v2 > 0, t, 1.0)
        return t * s1 - t * t * v2 / (2.0 * self.lam)

    def pg_dual(self, alpha, v, L, steps=(4.0, 1.0), xv=None):
        """Dual lower bounds after one projected-gradient ascent step from ``alpha in Q2``
        (``v = X^T Y alpha``, ``xv = X v`` if the caller has it): for each ``c`` in ``steps``,
        ``alpha_c = P_Q2(alpha + (c/L) grad D(alpha))`` with ``grad D = 1 - Y X v/lam``, then the
        exact maximum of the concave quadratic ``D`` on the segment ``[alpha, alpha_c]`` (inside
        ``Q2``, so a valid lower bound on ``J*``). Cost: ``X v`` unless given, one projection per
        ``c`` (one traced copy for all) and one ``X^T Y [alpha_c, ...]`` for all of them.
        The AGM iterate ``x_k`` is an average; the projection snaps it onto the active face, and
        this single step lowers the dual lag by 2-10x on a9a/w8a (benchmarks/results/
        agm_svm_bias.md), which is what certifies the averaged primal."""
        g = 1.0 - self.y * (self.A.mv(v) if xv is None else xv) / self.lam
        D0 = jnp.sum(alpha) - jnp.vdot(v, v) / (2.0 * self.lam)

        def step(c):
            return q2_feasible(q2_project(alpha + (c / L) * g, self.y, self.n)[0], self.y, self.n)

        a1 = lax.map(step, jnp.asarray(steps, alpha.dtype))  # (k, n): one traced projection for every c
        d, vd = a1 - alpha, self.A.rmv((self.y * a1).T) - v[:, None]  # vd: (d, k), one product for all
        slope = jnp.sum(d, axis=1) - jnp.sum(v[:, None] * vd, axis=0) / self.lam
        curv = jnp.sum(vd * vd, axis=0) / self.lam
        t = jnp.clip(slope / jnp.where(curv > 0, curv, 1.0), 0.0, 1.0)
        t = jnp.where(curv > 0, t, jnp.where(slope > 0, 1.0, 0.0))
        return D0 + t * slope - 0.5 * t * t * curv

    def refine_primal(self, w, x, best, jbest, dbest, t):
        """The recovered primal to report after the ``t``-th check (:meth:`AGM.refine
        <jaxprox.solvers.agm.AGM.refine>`) and the dual point to report with it: the best, in the
        exact objective ``J``, of the previous ``best`` (value ``jbest``, dual ``dbest``), the
        current average ``w`` (with the iterate ``x``) and, with ``polish``, the active-set polish
        of ``w`` with margin tolerance ``POLISH_DELTAS[t % 8]`` (with its own dual point, the
        multipliers of :func:`active_set_polish` made feasible by :func:`q2_feasible`: exact when
        the polish is). Returns ``(best, J(best), dual)``. Cost: one ``X w`` and the exact
        ``min_b``; with the polish one ``[X, 1]^T`` and one ``[X, 1]`` product (the latter also
        gives the polished margins) and the ``(d + 1)``-dimensional solve (the polished point is
        scored at its own bias, an upper bound on its ``J`` that is exact when the polish is)."""
        s = self.A.mv(w)
        risk, b = hinge_bias_risk(s, self.y)
        cands = [(w, risk + self._omega(w), x)]
        n, d = self.A.shape
        if self.polish and d <= POLISH_MAX_D:
            delta = jnp.asarray(POLISH_DELTAS, s.dtype)[t % len(POLISH_DELTAS)]
            wp, bp, ap, sp = active_set_polish(self.A, self.y, self.lam, s, b, delta,
                                               cap=min(n, max(2048, 4 * (d + 1))))
            hinge = jnp.mean(jnp.maximum(1.0 - self.y * sp, 0.0))
            cands.append((wp, hinge + self._omega(wp), q2_feasible(ap, self.y, n)))
        return keep_best(cands, best, jbest, dbest)

    def certificate_L(self, x, ax, abar, L, prim=None, dual=None):
        """:meth:`certificate` with, in a dual run (l2), the dual points :meth:`pg_dual` of one
        projected-gradient step from ``x_k`` with the current Lipschitz estimate ``L_k`` and the
        dual point ``dual`` that :meth:`refine_primal` paired with ``abar`` (made feasible)."""
        if self.space == "dual" and self.penalty == "l2":
            # x and dual made feasible together and their exact X^T Y a (ax is carried
            # incrementally) in one product: one traced copy of each for both points
            pts = jax.vmap(q2_feasible, (0, None, None))(jnp.stack([x] if dual is None else [x, dual]),
                                                          self.y, self.n)
            V = self.A.rmv((self.y * pts).T)
            # X v of x's v: a product with every column of V (a matrix product compiles far
            # faster than a matrix-vector one; benchmarks/results/latency.md)
            xv = self.A.mv(V)[:, 0]
            d = jnp.maximum(jnp.max(jax.vmap(self.scaled_dual)(pts, V.T)),
                            jnp.max(self.pg_dual(pts[0], V[:, 0], L, xv=xv)))
            prim = self._primal_value(abar) if prim is None else prim
            return prim, d, prim - d
        return self.certificate(x, ax, abar, prim=prim)

    def _primal_value(self, w):
        """The exact objective ``J(w)`` (its optimal bias by :func:`hinge_bias_risk`)."""
        return hinge_bias_risk(self.A.mv(w), self.y)[0] + self._omega(w)

    def certificate(self, x, ax, abar, extra=None, prim=None, feasible=False):
        """``J(w) - D(alpha)`` of the unsmoothed problem. Dual run: ``w = abar`` is the recovered
        primal (the AGM passes the point :meth:`refine_primal` chose and its exact value ``prim``)
        and ``alpha = x_k`` (Theorems 10/18, scaled by :meth:`scaled_dual`); primal run: ``w = x_k``
        and the averaged ``alpha`` (l2) or its rescaling (l1). ``extra``: a further valid lower bound
        (a dual value of a point of ``Q2``). Cost: one ``Xw`` and the exact ``min_b`` (O(n) passes,
        no sort) unless ``prim`` is given."""
        w = abar if self.space == "dual" else x
        prim = self._primal_value(w) if prim is None else prim
        if self.space == "dual":  # the dual value of a point of Q2 (q2_feasible) at its exact X^T Y alpha,
            if not feasible:     # unless the caller passes such a pair (feasible=True)
                x = q2_feasible(x, self.y, self.n)
                ax = self.A.rmv(self.y * x)
            dual = self.scaled_dual(x, ax)
        else:
            dual = self.dual_objective(abar)
        if extra is not None:
            dual = jnp.maximum(dual, extra)
        return prim, dual, prim - dual

    def short_stop_note(self) -> str:
        """With smoothing ``mu > 0`` the run minimises an objective within ``mu / (2n)`` of the
        SVM's (``0 <= J - J_mu <= (mu/2) max_{Q2} ||alpha||^2 = mu / (2n)``), while the certificate
        measures the SVM's own gap: it cannot certify much below that bound."""
        if not concrete(self.mu) or not float(self.mu) > 0:
            return ""
        return (f" BiasSVM smooths the hinge with mu = {float(self.mu):g}: the run minimises an objective "
                f"within mu/(2n) = {float(self.mu) / (2 * self.n):.3g} of the SVM's, while the certificate measures "
                "the SVM's own gap, which can stall anywhere up to that; if it has, lower mu"
                + (" (space='dual' with mu = 0 needs no smoothing)." if self.penalty == "l2" else "."))

    @property
    def kkt_exact(self) -> bool:
        """A dual run whose reported pair :meth:`active_set_residual` makes exactly
        differentiable: ``polish=True`` with at most ``POLISH_MAX_D`` features (the reported
        primal is polished exactly, and :meth:`refine_primal` pairs it with the polish's exact
        dual point) and no smoothing, ``mu = 0`` (a concrete ``mu > 0`` makes it False; inside a
        solve ``mu`` is traced and checked at run time: NaN derivatives, :meth:`residual`)."""
        mu_zero = not concrete(self.mu) or not float(self.mu) > 0
        return (self.space == "dual" and self.penalty == "l2" and self.polish
                and self.A.shape[1] <= POLISH_MAX_D and mu_zero)

    def active_set_residual(self, z):
        """The KKT system of the SVM with a bias on the active sets of ``w = z.abar`` (held fixed:
        margin violators ``V``, margin set ``F`` within :func:`kkt_margin_tol`, the others), in the
        unknowns ``(alpha, w)`` with the bias eliminated as ``b(w) = mean_F (y_i - x_i^T w)``:

            (lam w - X^T Y alpha_eff) / lam = 0,   alpha_eff = alpha on F, 1/n on V, 0 elsewhere,
            y_i - x_i^T w - b(w) + n y^T alpha_eff = 0  (i in F),   alpha_i - alpha_eff_i = 0  (else).

        The rows of ``F`` sum to ``|F| n y^T alpha_eff``, so together they state the margin
        equalities and the bias stationarity ``y^T alpha = 0``. Linear in ``(alpha, w)`` and smooth
        in ``(X, y, lam)``: its root is the solution wherever the active sets are locally constant
        (strict complementarity), so implicit differentiation through it is exact there."""
        a, w = z.x, z.abar
        wf = lax.stop_gradient(w)
        sf = self.A.mv(wf)
        marg = self.y * (sf + hinge_bias_risk(sf, self.y)[1])
        tol = kkt_margin_tol(sf.dtype)
        on, viol = jnp.abs(marg - 1.0) <= tol, marg < 1.0 - tol
        a_eff = jnp.where(on, a, jnp.where(viol, 1.0 / self.n, 0.0))
        ya = self.y * a_eff
        rw = (self.lam * w - self.A.rmv(ya)) / lax.stop_gradient(self.lam)
        s = self.A.mv(w)
        k = jnp.maximum(jnp.sum(on), 1)
        b = jnp.sum(jnp.where(on, self.y - s, 0.0)) / k
        ra = jnp.where(on, self.y - s - b + self.n * jnp.sum(ya), a - a_eff)
        return (ra, rw)

    def residual(self, z):
        """Dual run, l2, ``mu = 0``: the active-set KKT system :meth:`active_set_residual` (the
        reported primal is exact, polished on its active set, and so is the dual point
        :meth:`refine_primal` pairs with it). Otherwise: dual run ``(alpha - P_Q2((alpha - eta
        grad f)/(1 + eta mu)), w - X^T Y alpha/lam)`` (the projected-gradient fixed point and the
        primal recovery); primal run: the prox-gradient fixed point of the smoothed problem."""
        eta = lax.stop_gradient(1.0 / self.lipschitz("euclidean"))
        if self.space == "dual":
            a = z.x
            v = self.lin(a)
            g = -1.0 + self.y * self.A.mv(v) / self.lam
            ra = a - _q2_project((a - eta * g) / (1.0 + eta * self.mu), self.y, self.n, self.method)
            pg = (ra, z.abar - v / self.lam)
            if not self.kkt_exact:
                return pg
            # exact for mu = 0; a mu > 0 only known at run time (the reported primal then solves no
            # KKT system) makes the residual and its derivatives NaN rather than wrong
            nan_if_smoothed = jnp.where(self.mu > 0, jnp.nan, 1.0)
            return jax.tree_util.tree_map(lambda t: t * nan_if_smoothed, self.active_set_residual(z))
        w = z
        _, g, _ = self.f_grad(w, self.A.mv(w))
        return w - self.breg_prox("euclidean", 1.0 / eta, w / eta - g, jnp.ones((), w.dtype))
