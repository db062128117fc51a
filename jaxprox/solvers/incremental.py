"""Epigraphical-projection-based incremental algorithms for Wasserstein DRSVM (Li, Chen & So,
"Fast epigraphical projection-based incremental algorithms for Wasserstein distributionally
robust support vector machine", NeurIPS 2020).

Problem: :class:`jaxprox.problems.drsvm.DRSVM`, ``min_{||w||_q <= lam} (1/n) sum_i f_i(w, lam)`` with
``f_i = lam*eps + max{1 - w^T z_i, 1 + w^T z_i - lam*kappa, 0} + (c/2)||w||^2``.

* :class:`ISG` -- incremental mini-batch projected subgradient, eq. (5):
  ``(w, lam) <- P_{L_q}[(w, lam) - alpha_k g_B]`` over cyclic mini-batches ``B``; one driver
  step = one epoch (a ``lax.scan`` over the batches).
* :class:`IPPA` -- incremental proximal point, eq. (6): for each sample in cyclic
  order ``(w, lam) <- argmin_{||w||_q <= lam} f_i(w, lam) + ||(w, lam) - (w_i, lam_i)||^2/(2 alpha_k)``,
  the single-sample proximal point update (SSPPU, eqs. (2), (7), (11), (28)) -- :func:`ssppu`.
  One driver step = one epoch (a ``lax.scan`` over the samples).
* :class:`HybridISGIPPA` -- mini-batch ISG, then IPPA near the optimum (the switching
  rule is ours, documented on the class).
* :class:`Finish` -- one of the above, then restarted PDHG (:class:`jaxprox.DRSVMPDHG`) warm
  started from its final primal-dual point: a tight certificate and exact implicit derivatives.
* Step schedules (Table 1, Thm 4.3): :class:`~jaxprox.schedules.Constant`, :class:`~jaxprox.schedules.Geometric` (``alpha0 rho^k``),
  :class:`InvK` (``gamma/(n k)``), :class:`InvSqrtK` (``gamma/(n sqrt k)``); ``k = 1, 2, ...`` is
  the epoch index (the authors' code decays before the first epoch).

SSPPU design (the active-set principle): the unique prox point is the candidate of
smallest objective among the solutions of the restricted problems for every non-empty active set
of the three affine pieces, and every candidate lies in the cone (so it is feasible). We compute
all seven candidates branch-free, for every q in {1, 2, inf}:

* one active piece (Gamma = 1): epigraph projections of shifted centres;
* two active pieces: the equality ``h_j = h_j'`` dualized with a scalar multiplier ``m`` in the
  range that the KKT conditions of (11) allow ((1,2): [0, 2], not the paper's range;
  (1,3): [-1, 0]; (2,3): [0, 1]); ``g(m) = w(m)^T z - a lam(m) - b`` with
  ``(w(m), lam(m)) = P_{L_q}(centre - alpha m (z, -a))`` is continuous and non-increasing
  (Prop. 6.6) and solved by the modified secant method :func:`jaxprox.roots.secant` (Alg. 1 with
  the safeguards of :mod:`jaxprox.roots`). The apex solutions that the quartic of Prop. 6.2 misses
  are found automatically; for q = 2 this scalar root replaces the quartic;
* three active pieces (Gamma = 3 / Case 5): ``lam = 2/kappa`` and
  ``w = argmin ||w - w_bar||`` on ``{w^T z = 1, ||w||_q <= 2/kappa}``, the hyperplane dualized
  with a multiplier of either sign.

A candidate whose restricted problem has no solution in the bracket is still a point of the cone,
so the min-objective rule stays correct. ``c > 0`` is reduced to the same structure by eq. (28),
corrected: step ``alpha/(1+alpha c)``, centre ``(w/(1+alpha c), lam/t)``,
``kappa' = kappa t`` and the scaled cone ``||w||_q <= t mu`` with ``t = sqrt(1+alpha c)``, mapped
back by ``lam = t mu``.
"""
from __future__ import annotations


from typing import Callable

import equinox as eqx
import jax
import jax.numpy as jnp
from jax import lax

from .. import projections as _proj
from .. import roots
from ..certificates import keep_better
from ..schedules import Geometric, step_size
from .. import capabilities as cap
from ..loop import run
from ..solver import Solver
from .drsvm_pd import saddle_residual

__all__ = ["ISG", "IPPA", "HybridISGIPPA", "Finish",
           "ssppu", "epigraph_scaled"]


# ============================================================================================
# scaled norm cones  K_t = {(w, mu) : ||w||_q <= t mu}
# ============================================================================================
# the scaled cones K_t and their projections live in jaxprox.projections (public).
epigraph_scaled = _proj.epigraph_scaled


def _ball(x, r, norm):
    if norm == "l1":
        return _proj.l1_ball(x, r, method="sort")
    if norm == "l2":
        return _proj.l2_ball(x, r)
    return _proj.linf_ball(x, r)


# ============================================================================================
# single-sample proximal point update
# ============================================================================================
def _pair_residual(m, cw, cm, z, a, b, al, t, norm):
    w, mu = epigraph_scaled(cw - al * m * z, cm + al * m * a, t, norm)
    return jnp.vdot(w, z) - a * mu - b


def _triple_residual(nu, wb, z, r, norm):
    return jnp.vdot(_ball(wb - nu * z, r, norm), z) - 1.0


def ssppu(wb, mb, z, alpha, kappa, t, norm: str, max_iter: int = 30):
    """Single-sample proximal point update (eqs. (2)/(7); (28) for ``c > 0``):

        argmin_{||w||_q <= t mu}  max{1 - w^T z, 1 + w^T z - kappa mu, 0}
                                  + (||w - wb||^2 + (mu - mb)^2) / (2 alpha)

    (``t = 1`` for c = 0). Returns ``(w, mu, nu)`` with ``nu = (nu_1, nu_2)`` the KKT weights of
    the pieces ``h_1, h_2`` at the chosen candidate (used as dual estimates). Seven candidates,
    minimum objective (module docstring).
    """
    dtype = wb.dtype
    one = jnp.ones((), dtype)
    P = lambda x, s: epigraph_scaled(x, s, t, norm)  # noqa: E731
    ftol = 1e-14 * (1.0 + jnp.sum(jnp.abs(z)) * (1.0 + jnp.sum(jnp.abs(wb)) + jnp.abs(mb)))

    def pair(cw, cm, a, b, lo, hi):
        f = lambda m, *args: _pair_residual(m, *args, norm)  # noqa: E731
        args = (cw, cm, z, a * one, b * one, alpha, t)
        m = roots.secant(f, lo * one, hi * one, args, ftol=ftol, max_iter=max_iter)
        w, mu = P(cw - alpha * m * z, cm + alpha * m * a)
        return w, mu, m

    w1, m1 = P(wb + alpha * z, mb)
    w2, m2 = P(wb - alpha * z, mb + alpha * kappa)
    w3, m3 = P(wb, mb)
    # the three two-piece candidates (1,2), (1,3), (2,3) in one vmapped secant search: one loop in
    # the traced graph instead of three (it runs until the slowest of the three has converged)
    cw = jnp.stack([wb + alpha * z, wb, wb])
    cm = jnp.full((3,), mb, dtype)
    a = kappa * jnp.asarray((0.5, 0.0, 1.0), dtype)
    b, lo, hi = (jnp.asarray(v, dtype) for v in ((0.0, 1.0, -1.0), (0.0, -1.0, 0.0), (2.0, 0.0, 1.0)))
    (w12, w13, w23), (m12, m13, m23), (s12, s13, s23) = jax.vmap(pair)(cw, cm, a, b, lo, hi)
    r = 2.0 * t / kappa                                  # ||w||_q <= t * (2/kappa') = 2/kappa
    ftri = lambda nu, *args: _triple_residual(nu, *args, norm)  # noqa: E731
    nu_t = roots.secant(ftri, -alpha, alpha, (wb, z, r), ftol=ftol, max_iter=max_iter)
    w123 = _ball(wb - nu_t * z, r, norm)
    m123 = 2.0 / kappa * one

    W = jnp.stack([w1, w2, w3, w12, w13, w23, w123])
    M = jnp.stack([m1, m2, m3, m12, m13, m23, m123])
    zero = jnp.zeros((), dtype)
    q = nu_t / alpha
    NU = jnp.stack([
        jnp.stack([one, zero]), jnp.stack([zero, one]), jnp.stack([zero, zero]),
        jnp.stack([1.0 - 0.5 * s12, 0.5 * s12]), jnp.stack([-s13, zero]), jnp.stack([zero, s23]),
        jnp.stack([jnp.maximum(-q, 0.0), jnp.maximum(q, 0.0)]),
    ])
    u = W @ z
    h = jnp.maximum(jnp.maximum(1.0 - u, 1.0 + u - kappa * M), 0.0)
    phi = h + (jnp.sum((W - wb) ** 2, axis=1) + (M - mb) ** 2) / (2.0 * alpha)
    phi = jnp.where(jnp.isfinite(phi), phi, jnp.inf)
    i = jnp.argmin(phi)
    return W[i], M[i], NU[i]


# ============================================================================================
# epochs
# ============================================================================================
def metric_projection(norm: str, d):
    """The projection onto the cone ``||w||_q <= lam`` in the metric ``||(w - x) / d||^2 +
    (lam - y)^2`` of a diagonal scaling ``d > 0`` of ``w``: in ``u = w / d`` it is the Euclidean
    projection of ``(x / d, y)`` onto ``{||d * u||_q <= lam}``
    (:func:`jaxprox.projections.epigraph_weighted`, q = 1, inf), mapped back by ``w = d * u``.
    For q = 2, ``d`` is uniform (``d = delta``): the scaled cone ``||u||_2 <= lam / delta``
    (:func:`jaxprox.projections.epigraph_scaled`)."""
    if norm == "l2":
        def proj(x, y):
            u, lam = _proj.epigraph_scaled(x / d, y, 1.0 / d[0], norm)
            return d * u, lam
    else:
        def proj(x, y):
            u, lam = _proj.epigraph_weighted(x / d, y, d, norm)
            return d * u, lam
    return proj


def isg_metric(problem):
    """The diagonal metric ``d`` of ISG's ``w`` steps: the column scales of
    :meth:`jaxprox.problems.drsvm.DRSVM.unit_scales` for q = 1, inf, and its uniform ``1 / s``
    for q = 2 (a vector of length ``d``; 1 on data in unit range)."""
    dcol, s = problem.unit_scales()
    if problem.norm == "l2":
        return jnp.full_like(dcol, 1.0) / s
    return dcol


def _isg_epoch(problem, w, lam, alpha, batch_size, dcol):
    """One epoch of mini-batch ISG (eq. (5)) in the metric ``d = dcol`` (steps ``alpha d_j^2``
    for ``w_j``, :func:`metric_projection`); returns ``(w, lam, a)`` with ``a`` the ``(n, 2)``
    subgradient piece selections of the epoch."""
    n, d = problem.Z.shape
    B = int(min(batch_size, n))
    m = -(-n // B)
    pad = m * B - n
    Zb = jnp.pad(problem.Z, ((0, pad), (0, 0))).reshape(m, B, d)
    valid = (jnp.arange(m * B) < n).reshape(m, B)
    nb = jnp.sum(valid, axis=1).astype(w.dtype)
    proj = metric_projection(problem.norm, dcol)
    step_w = dcol * dcol
    kap, eps, c = problem.kappa, problem.epsilon, problem.c

    def body(carry, inp):
        w, lam = carry
        Zj, vj, nj = inp
        u = Zj @ w
        h1 = 1.0 - u
        h2 = 1.0 + u - lam * kap
        s1 = (h1 >= h2) & (h1 >= 0) & vj            # first maximal piece (valid at ties)
        s2 = (~((h1 >= h2) & (h1 >= 0))) & (h2 >= 0) & vj
        d12 = (s2.astype(w.dtype) - s1.astype(w.dtype))
        gw = Zj.T @ d12 / nj + c * w
        gl = eps - kap * jnp.sum(s2) / nj
        w, lam = proj(w - alpha * step_w * gw, lam - alpha * gl)
        return (w, lam), jnp.stack([s1, s2], axis=-1)

    (w, lam), sel = lax.scan(body, (w, lam), (Zb, valid, nb))
    a = sel.reshape(m * B, 2)[:n].astype(w.dtype)
    return w, lam, a


def _ippa_epoch(problem, w, lam, alpha, max_iter, delta):
    """One epoch of IPPA (eq. (6)) in the cyclic order, with the proximal term
    ``||w - w_i||^2 / (2 alpha delta^2) + (lam - lam_i)^2 / (2 alpha)`` (``delta = 1 / s``,
    :meth:`jaxprox.problems.drsvm.DRSVM.unit_scales`; 1 on data in unit range): in ``u = w / delta``
    it is eq. (6) on the data ``delta z_i`` with ridge ``c delta^2`` and the scaled cone
    ``||u||_q <= lam / delta``, which :func:`ssppu` solves (its cone scale ``t / delta``).
    Returns ``(w, lam, nu)``."""
    c = problem.c * delta ** 2
    one_ac = 1.0 + alpha * c
    t = jnp.sqrt(one_ac)
    al = alpha / one_ac
    kap = problem.kappa * t
    eps = problem.epsilon

    def body(carry, z):
        w, lam = carry
        wn, mun, nu = ssppu(w / one_ac, (lam - alpha * eps) / t, z, al, kap, t / delta, problem.norm,
                            max_iter)
        return (wn, t * mun), nu

    (u, lam), nu = lax.scan(body, (w / delta, lam), problem.Z * delta)
    return delta * u, lam, nu


#: the work of an IPPA run with ``max_steps=None``, in entries of ``Z`` visited by its single-sample
#: proximal updates (each solves secant searches over projections of the whole sample); sized so
#: that every IPPA case of ``benchmarks/results/defaults.md`` returns within its time limit
IPPA_ENTRY_BUDGET = 4_000_000


def ippa_epochs(problem, floor: int = 2, cap: int = 10) -> int:
    """IPPA epochs within :data:`IPPA_ENTRY_BUDGET`: ``IPPA_ENTRY_BUDGET / (n d)`` clipped to
    ``[floor, cap]`` (10 on data up to ``n d = 400,000``)."""
    return int(min(cap, max(floor, IPPA_ENTRY_BUDGET // max(problem.n * problem.d, 1))))


def _start(problem, init):
    if init is None:
        w, lam = problem.zeros()
    else:
        w, lam = init
        w = jnp.asarray(w, problem.Z.dtype)
        lam = jnp.asarray(lam, problem.Z.dtype)
    return problem.project((w, lam))


def _avg(a_old, a_new, k, theta):
    return jnp.where(k == 0, a_new, (1.0 - theta) * a_old + theta * a_new)


# ============================================================================================
# solvers
# ============================================================================================
class Best(eqx.Module):
    """What an incremental method reports: the point of lowest objective seen at a check (the
    start included) and the dual weights of the largest lower bound seen. A subgradient method
    is not a descent method, so its last iterate can end above its start; every ``D(a)`` is a
    lower bound on ``P*``, so ``primal - dual`` stays an honest gap."""
    w: jax.Array
    lam: jax.Array
    primal: jax.Array     # P(w, lam)
    a: jax.Array          # (n, 2) dual weights
    dual: jax.Array       # D(s a) (jaxprox.problems.drsvm.DRSVM.dual_objective)


def best_start(problem, w, lam) -> Best:
    """:class:`Best` at the start ``(w, lam)``, with no dual bound yet (``-inf``)."""
    return Best(w, lam, problem.objective((w, lam)), jnp.zeros((problem.n, 2), w.dtype),
                jnp.full((), -jnp.inf, w.dtype))


def keep_best(problem, b: Best, w, lam, a) -> Best:
    """``b`` updated with the iterate ``(w, lam)`` (taken where its objective is lower) and the
    better of two dual points (taken where its bound is higher): the averaged selections ``a`` and
    the active-piece weights of ``(w, lam)`` (the second certifies an exact iterate, e.g. the
    solution ``w = 0`` of a large radius, where the average lags)."""
    p = problem.objective((w, lam))
    act = problem.active_weights((w, lam))
    d_avg, d_act = problem.dual_objective(a), problem.dual_objective(act)
    a_new = jnp.where(d_act > d_avg, act, a)
    d_new = jnp.maximum(d_act, d_avg)
    w, lam, p = keep_better(p < b.primal, (w, lam, p), (b.w, b.lam, b.primal))
    a_new, d_new = keep_better(d_new > b.dual, (a_new, d_new), (b.a, b.dual))
    return Best(w, lam, p, a_new, d_new)


class IncState(eqx.Module):
    w: jax.Array
    lam: jax.Array
    k: jax.Array          # epochs done
    a: jax.Array          # (n, 2) averaged dual weights (certificate)
    metric: jax.Array     # ISG: the metric d of the w steps (isg_metric); IPPA: delta = 1 / s
    best: Best            # the reported point and dual bound


class _Incremental(Solver):
    """Shared state handling of ISG and IPPA: iterate ``(w, lam)``, epoch counter, averaged
    per-sample dual weights ``a`` (used by the certificate).

    Step sizes follow the units of the data: the paper's schedules are set for features in
    ``[-1, 1]``, so on other data the ``w`` steps are taken in the metric of the column ranges
    (:meth:`jaxprox.problems.drsvm.DRSVM.unit_scales`; the identity on data in unit range). The
    reported point is the iterate of lowest objective seen at a check (:class:`Best`; a
    subgradient method is no descent method), so a solve never ends above its start, and the
    certificate is its objective minus the largest dual bound seen. ``max_steps`` counts **epochs**
    (default 100 for ISG: seconds on n ~ 20,000; IPPA's epochs cost ~100x more, so its default
    follows the data, 10 epochs up to ``n d = 400,000`` and down to 2, :func:`ippa_epochs`, and the
    hybrid's is at most 50 ISG epochs plus IPPA's budget); these methods reach relative gaps of about
    1e-2..1e-3 in such a budget (the certificate plateaus on the degenerate DRSVM dual, see
    :mod:`jaxprox.problems.drsvm`), so a default run stops short of ``tol``. It stops early, with
    status ``"stalled"``, once ``stall_window`` checks (of ``check_every`` epochs) in a row bring
    the best certified gap no lower than ``1 - stall_rtol`` times its value at the last such gain
    (the driver's stall rule; defaults 4 checks of 5 epochs, 10%), and its warning names the
    methods that do reach ``tol``. For a tight certificate, or exact derivatives, compose:
    ``Finish(ISG(), DRSVMBarrier())`` or ``Finish(ISG(), DRSVMPDHG())`` (the finisher starts as
    soon as the method stalls)."""

    requires = (cap.DRSVM_PROBLEM,)
    option_ranges = {"dual_avg": "(0, 1]", "stall_window": ">= 0", "stall_rtol": "[0, 1)"}
    step_unit = "epochs"
    short_advice = ("ISG, IPPA and HybridISGIPPA are incremental subgradient / proximal point methods: their "
                    "certificate plateaus around relative gaps of 1e-2..1e-3, so a tighter tol is out of their "
                    "reach. For a certified solution use jp.Finish(jp.ISG(), jp.DRSVMBarrier()) (this method's "
                    "point finished by the interior-point method) or jp.DRSVMBarrier() alone.")

    dual_avg: float = eqx.field(static=True, default=0.2, kw_only=True)
    max_steps: int = eqx.field(static=True, default=100, kw_only=True)
    check_every: int = eqx.field(static=True, default=5, kw_only=True)
    stall_window: int = eqx.field(static=True, default=4, kw_only=True)
    stall_rtol: float = eqx.field(static=True, default=0.1, kw_only=True)

    def metric(self, problem):
        """The scaling of the ``w`` steps kept in the state (:attr:`IncState.metric`)."""
        return 1.0 / problem.unit_scales()[1]

    def init(self, problem, init=None):
        w, lam = _start(problem, init)
        return IncState(w, lam, jnp.zeros((), jnp.int32), jnp.zeros((problem.n, 2), w.dtype),
                        jnp.asarray(self.metric(problem), w.dtype), best_start(problem, w, lam))

    def refine(self, problem, s):
        """The reported point and dual bound updated with the iterate (:func:`keep_best`)."""
        return eqx.tree_at(lambda q: q.best, s, keep_best(problem, s.best, s.w, s.lam, s.a))

    def params(self, s):
        return (s.best.w, s.best.lam)

    def certificate(self, problem, s):
        """``(P, D, P - D)`` of the reported point and the largest dual bound seen (``+inf``
        where the point is not feasible)."""
        b = s.best
        ok = problem.feasible((b.w, b.lam), 1e-9)
        return b.primal, b.dual, jnp.where(ok, b.primal - b.dual, jnp.inf)

    def dual(self, s):
        return s.best.a

    def solution(self, s):
        return (s.best.w, s.best.lam, s.best.a)

    def residual(self, problem, z):
        """Primal-dual map of the saddle form (:func:`jaxprox.solvers.drsvm_pd.saddle_residual`)
        at ``(w, lam, a)``; zero exactly at a saddle point. The incremental epochs only carry an
        *average* of per-sample selections as ``a``, which is not an optimal dual point, so the
        implicit derivative of the method's own iterate is approximate; :class:`Finish` moves
        ``(w, lam, a)`` to a saddle point first, where it is exact."""
        return saddle_residual(problem, z)

    def unpack(self, z):
        return (z[0], z[1]), z[2]


class ISG(_Incremental):
    """Incremental mini-batch projected subgradient method, eq. (5).

    For each epoch ``k`` (one driver step) and each cyclic mini-batch ``B_j`` (the last one may
    be smaller and is averaged over its own size):

        g = (1/|B_j|) sum_{i in B_j} [(s2_i - s1_i) z_i + c w,  eps - kappa s2_i]
        (w, lam) <- P_{||w||_q <= lam}[(w, lam) - alpha_k g]

    with ``s1_i, s2_i`` the indicator of the first maximal piece among ``h_1, h_2, 0`` (a valid
    subgradient also at ties). Start ``(w, lam) = (0, 1)``.

    Args:
        batch_size: mini-batch size (static).
        step_size: a :mod:`~jaxprox.schedules` schedule or an optax schedule (default
            :class:`Geometric` ``(0.1, 0.975)``, the authors' batch-32 setting).
        dual_avg: weight of the current epoch in the exponential average of the selections used
            as dual weights by the certificate.
    """

    option_ranges = {**_Incremental.option_ranges, "batch_size": ">= 1"}

    batch_size: int = eqx.field(static=True, default=32)
    step_size: Callable = Geometric(0.1, 0.975)

    def metric(self, problem):
        return isg_metric(problem)

    def step(self, problem, s):
        k = s.k + 1
        alpha = step_size(self.step_size, k, problem.n, s.w.dtype)
        w, lam, a = _isg_epoch(problem, s.w, s.lam, alpha, self.batch_size, s.metric)
        return IncState(w, lam, k, _avg(s.a, a, s.k, self.dual_avg), s.metric, s.best)


class IPPA(_Incremental):
    """Incremental proximal point algorithm, eq. (6). For each epoch ``k`` and each
    sample ``i`` in cyclic order,

        (w, lam) <- argmin_{||w||_q <= lam} f_i(w, lam) + (||w - w_i||^2 + (lam - lam_i)^2)/(2 alpha_k),

    computed by :func:`ssppu` at the centre ``(w_i, lam_i - alpha_k eps)`` (and eq. (28) for
    ``c > 0``). Start ``(w, lam) = (0, 1)`` (deterministic; the authors' code uses ``randn``).

    Args:
        step_size: a :mod:`~jaxprox.schedules` schedule or an optax schedule (default
            :class:`Geometric` ``(1e-2, 0.965)``, the authors' code).
        max_iter: cap on the secant iterations of each multiplier search (static).
        dual_avg: weight of the current epoch in the average of the per-sample KKT weights.
    """

    option_ranges = {**_Incremental.option_ranges, "max_iter": ">= 1"}

    step_size: Callable = Geometric(1e-2, 0.965)
    max_iter: int = eqx.field(static=True, default=30)
    max_steps: int | None = eqx.field(static=True, default=None, kw_only=True)
    check_every: int = eqx.field(static=True, default=5, kw_only=True)
    budget_range = "2-10 (from n d)"

    def budget(self, problem) -> int:
        """Epochs for ``max_steps=None``: :func:`ippa_epochs` (an epoch is ``n`` proximal
        updates, each ``O(d log d)`` times its secant iterations)."""
        return ippa_epochs(problem)

    def step(self, problem, s):
        k = s.k + 1
        alpha = step_size(self.step_size, k, problem.n, s.w.dtype)
        w, lam, nu = _ippa_epoch(problem, s.w, s.lam, alpha, self.max_iter, s.metric)
        return IncState(w, lam, k, _avg(s.a, nu, s.k, self.dual_avg), s.metric, s.best)


class HybridState(eqx.Module):
    w: jax.Array
    lam: jax.Array
    k: jax.Array
    a: jax.Array
    phase: jax.Array      # 0: mini-batch ISG, 1: IPPA, 2: the IPPA budget spent (no more moves)
    k_switch: jax.Array
    alpha_switch: jax.Array
    f_prev: jax.Array
    metric: jax.Array     # the ISG phase's metric d (isg_metric)
    delta: jax.Array      # the IPPA phase's delta = 1 / s
    best: Best


class HybridISGIPPA(_Incremental):
    """Mini-batch ISG, then IPPA near the optimum (the paper gives no rule -- this one
    is **our** specification, consistent with the arguments of the authors' unreleased
    ``hybrid.m``):

    * Phase 1: ISG epochs (``batch_size``, ``isg_step``) until the relative change of the
      objective over one epoch ``|f_{k-1} - f_k| / max(1, |f_k|) < rol`` or ``k = max_isg``.
    * Phase 2: IPPA epochs, warm started, with ``alpha_j = alpha_s * ippa_rho^j`` where
      ``alpha_s = tau * alpha_ISG(k_switch) / batch_size`` (the per-sample equivalent of the
      mini-batch step: an ISG epoch moves by ~``alpha n / B``, an IPPA epoch by ~``alpha n``),
      at most ``max_ippa`` of them (default ``None``: IPPA's budget, :func:`ippa_epochs`); the
      iterate then stays where it is until the loop ends.

    ``max_steps`` (default ``None``: ``max_isg + max_ippa``) bounds both phases together, so a run
    costs at most ``max_isg`` ISG epochs and ``max_ippa`` IPPA epochs whenever the switch comes.
    The phase switch is a ``lax.switch`` once per epoch (not in the per-sample hot loop).
    """

    option_ranges = {**_Incremental.option_ranges, "batch_size": ">= 1", "ippa_rho": "(0, 1)", "tau": "> 0",
                     "rol": ">= 0", "max_isg": ">= 1", "max_ippa": ">= 1", "max_iter": ">= 1"}

    batch_size: int = eqx.field(static=True, default=32)
    isg_step: Callable = Geometric(0.1, 0.975)
    ippa_rho: float = 0.9
    tau: float = 1.0
    rol: float = 1e-4
    max_isg: int = eqx.field(static=True, default=50)
    max_ippa: int | None = eqx.field(static=True, default=None)
    max_iter: int = eqx.field(static=True, default=30)
    max_steps: int | None = eqx.field(static=True, default=None, kw_only=True)
    budget_range = "max_isg + 2-10 (from n d)"

    def _max_ippa(self, problem) -> int:
        return self.max_ippa if self.max_ippa is not None else ippa_epochs(problem)

    def budget(self, problem) -> int:
        """Epochs for ``max_steps=None``: ``max_isg`` plus the IPPA phase's cap."""
        return self.max_isg + self._max_ippa(problem)

    def init(self, problem, init=None):
        w, lam = _start(problem, init)
        dt = w.dtype
        best = best_start(problem, w, lam)
        return HybridState(w, lam, jnp.zeros((), jnp.int32), jnp.zeros((problem.n, 2), dt),
                           jnp.zeros((), jnp.int32), jnp.zeros((), jnp.int32),
                           jnp.zeros((), dt), best.primal, isg_metric(problem),
                           jnp.asarray(1.0 / problem.unit_scales()[1], dt), best)

    def step(self, problem, s):
        k = s.k + 1

        def isg(s):
            alpha = step_size(self.isg_step, k, problem.n, s.w.dtype)
            w, lam, a = _isg_epoch(problem, s.w, s.lam, alpha, self.batch_size, s.metric)
            f = problem.objective((w, lam))
            rel = jnp.abs(s.f_prev - f) / jnp.maximum(1.0, jnp.abs(f))
            switch = (rel < self.rol) | (k >= self.max_isg)
            phase = jnp.where(switch, 1, 0).astype(jnp.int32)
            alpha_s = jnp.asarray(self.tau, w.dtype) * alpha / self.batch_size
            return HybridState(w, lam, k, _avg(s.a, a, s.k, self.dual_avg), phase,
                               jnp.where(switch, k, s.k_switch), jnp.where(switch, alpha_s, s.alpha_switch), f,
                               s.metric, s.delta, s.best)

        def ippa(s):
            j = k - s.k_switch
            alpha = s.alpha_switch * jnp.asarray(self.ippa_rho, s.w.dtype) ** j.astype(s.w.dtype)
            w, lam, nu = _ippa_epoch(problem, s.w, s.lam, alpha, self.max_iter, s.delta)
            phase = jnp.where(j >= self._max_ippa(problem), 2, 1).astype(jnp.int32)
            return HybridState(w, lam, k, _avg(s.a, nu, s.k, self.dual_avg), phase,
                               s.k_switch, s.alpha_switch, s.f_prev, s.metric, s.delta, s.best)

        def spent(s):
            return eqx.tree_at(lambda q: q.k, s, k)

        return lax.switch(s.phase, (isg, ippa, spent), s)


# ============================================================================================
# composition: an incremental method, then a primal-dual finish
# ============================================================================================
class Finish(Solver):
    """``method`` (:class:`ISG`, :class:`IPPA` or :class:`HybridISGIPPA`) for its epoch budget,
    then ``finisher`` (:class:`jaxprox.DRSVMPDHG`) warm started from the method's final
    ``(w, lam, a)`` (primal iterate and averaged dual weights), run to the finisher's ``tol`` or
    ``max_steps``; the reported point is the finisher's when its certified gap is smaller.

        sol = jp.solve(problem, Finish(ISG(max_steps=20), DRSVMPDHG(tol=1e-11)))

    The finisher makes ``(w, lam, a)`` a saddle point of the saddle form to solver precision,
    i.e. a root of :func:`jaxprox.solvers.drsvm_pd.saddle_residual`, so the certificate is tight
    and ``jax.grad`` / ``jax.jvp`` of the solution (implicit differentiation) are exact; from an
    incremental point near the optimum it costs a few hundred matrix-vector products. The driver
    runs the method's epochs (its ``max_steps`` and ``check_every``) and stops them early once
    the method alone meets the finisher's ``tol`` or its certificate stalls (the method's
    ``stall_window``); the finisher then starts. ``Finish(ISG(), DRSVMBarrier())`` works the same
    way (the interior-point method starts strictly inside the cone near the method's point).
    """

    requires = (cap.DRSVM_PROBLEM,)
    step_unit = "epochs"  # of the method; the finisher runs after them with its own budget

    method: _Incremental
    finisher: Solver
    stall_window: int = eqx.field(static=True, default=0, kw_only=True)
    stall_rtol: float = eqx.field(static=True, default=0.1, kw_only=True)

    def describe(self) -> str:
        """``"ISG -> DRSVMPDHG"``: the composition that produced the solution."""
        return f"{self.method.describe()} -> {self.finisher.describe()}"

    def __init__(self, method: _Incremental, finisher: Solver):
        if not isinstance(method, _Incremental):
            raise TypeError(f"Finish needs ISG, IPPA or HybridISGIPPA as its method, got {type(method).__name__}")
        self.method, self.finisher = method, finisher
        self.tol, self.atol = finisher.tol, finisher.atol
        self.max_steps, self.check_every, self.verbose = method.max_steps, method.check_every, method.verbose
        self.progress = method.progress
        self.stall_window, self.stall_rtol = method.stall_window, method.stall_rtol  # a stalled method hands over

    def budget(self, problem) -> int:
        """The method's epochs for ``max_steps=None`` (its :meth:`~jaxprox.Solver.budget`)."""
        return self.method.budget(problem)

    def init(self, problem, init=None):
        return self.method.init(problem, init)

    def step(self, problem, s):
        return self.method.step(problem, s)

    def certificate(self, problem, s):
        return self.method.certificate(problem, s)

    def refine(self, problem, s):
        return self.method.refine(problem, s)

    def params(self, s):
        return self.method.params(s)

    def dual(self, s):
        return self.method.dual(s)

    def solution(self, s):
        return self.method.solution(s)

    def residual(self, problem, z):
        return self.method.residual(problem, z)

    def unpack(self, z):
        return self.method.unpack(z)

    def polish(self, problem, s):
        """The finisher, warm started from the method's final ``(w, lam, a)``."""
        t = run(problem, self.finisher, init=self.method.solution(s))
        w, lam, a = self.finisher.solution(t)
        d = problem.dual_objective(a)
        best = Best(w, lam, problem.objective((w, lam)), *keep_better(d > s.best.dual, (a, d),
                                                                      (s.best.a, s.best.dual)))
        return eqx.tree_at(lambda q: (q.w, q.lam, q.a, q.best), s, (w, lam, a, best))
