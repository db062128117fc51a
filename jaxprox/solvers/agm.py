"""AGM-EF: Nesterov's estimate-function accelerated gradient method with adaptive Lipschitz
estimates, Bregman prox-functions and duality-gap certificates (paper 002, Zhang, Saha and
Vishwanathan; read ``papers/notes/002_agm.md`` first: the equation and algorithm numbers below
are the paper's, the errata are the note's).

Problem class (10): ``min_x J(x) = f(x) + Psi(x)`` with ``f`` convex and ``L``-smooth w.r.t. a
norm in which the prox-function ``d`` is ``sigma``-strongly convex, ``f`` ``lam1``-strongly
convex and ``Psi`` ``lam2``-strongly convex *w.r.t. d* (Definition 1, Assumption 1;
``lam = lam1 + lam2``; the rate is linear when ``lam > 0``).

* ``memory="inf"`` is AGM-EF-inf (Algorithm 1; Algorithm 2 with ``adaptive=True``). The model
  ``psi_k(x) = Delta(x, x_0) + sum_i a_i [Psi(x) + f(u_i) + <grad f(u_i), x - u_i> + lam1
  Delta(x, u_i)]`` is aggregated as ``(1 + lam1 A_k) d(x) - <theta_k, x> + A_k Psi(x) + C_k``
  (note 2.1) and carried in the overflow-safe normalised form (``1/A_k``, ``theta_k/A_k``,
  ``C_k/A_k``; note 2.1 "[ADDED] overflow-safe"): with ``rho = a_{k+1}/A_k`` the positive root of
  ``(L/sigma - lam1) rho^2 - (1/A_k + 2 lam) rho - (1/A_k + lam) = 0`` (step 5),

      u     = [rho T1 z + (T + T3 rho) x] / [T (1 + rho) - T2 rho]        (step 7)
      z     = argmin_x (1/A_{k+1} + lam1) d(x) - <theta/A_{k+1}, x> + Psi(x)   (step 9)
      x     = (x + rho z)/(1 + rho)                                        (step 10)

  with ``T1 = 1/A_k + lam, T2 = lam1 rho, T3 = lam2 rho/(1 + rho), T = T1 + T2 + T3``; the first
  iteration uses ``a_1 = A_1 = sigma/(L - sigma lam1)`` and ``u_1 = x_0``.
* ``memory="1"`` is AGM-EF-1 (Algorithm 3; Algorithm 4 with ``adaptive=True``): the model is
  collapsed after each step into ``q_k(x) = c_k Delta(x, z_k) + psi_k(z_k)`` with
  ``a_{k+1} = 2c/((c - lam) + sqrt((c - lam)^2 + 4 L' c))``, ``L' = L/sigma + lam2`` (step 6,
  rationalised), ``c_{k+1} = (1 - a) c_k + lam a``; ``q_0`` is the Bregman prox-gradient model at
  ``u_0`` (Psi weight 1, note 6.3 item 5).
* ``adaptive=True`` (Algorithms 2 and 4): each iteration first tries ``L_k / gamma_d``, then
  multiplies by ``gamma_u`` until the invariant ``J(x_{k+1}) <= psi_{k+1}(z_{k+1})/A_{k+1}``
  (resp. ``J(x_{k+1}) <= q_{k+1}(z_{k+1})``) holds; every retry restarts from the iteration-k
  state and every trial ``L`` is clamped above ``sigma lam1`` (note 2.2, 2.5). ``L`` may decrease.
  ``gamma_u = 2``, ``gamma_d = 1.25`` are *our* defaults (the paper gives none): a gentle
  decrease fails the first trial less often than ``gamma_d = 2`` (fewer gradients per iteration)
  and still lets ``L_k`` follow the local curvature down (benchmarks/results/agm_adaptive.md).

Certificate (Theorems 10 and 18): when ``f(x) = max_alpha phi(x, alpha)`` the maximisers
``alpha(u_i)`` at the gradient points, averaged with the method's weights (``a_i/A_k``, resp.
``b_k(i)``), form a dual iterate whose duality gap ``J(x_k) - D(alpha_k)`` upper-bounds the
suboptimality and decays linearly when ``lam > 0``. When the method is run on a *dual* problem,
the same average of ``w(u_i)`` is the recovered primal point (section 5.1.2, 5.3), and the
certificate is ``J(w_k) - D(alpha_k)``. The models say what ``alpha(u)`` is: for an
:class:`~jaxprox.ERM` with a smooth loss it is the per-sample dual point ``l'(a_i^T u)``;
see :mod:`jaxprox.models_agm` for the SVM with bias, ERLPBoost and the F1 loss.

Models. Besides an :class:`~jaxprox.ERM` (smooth loss + prox-able penalty or constraint,
Euclidean geometry) the solver accepts any object with the "AGM model" methods below (the
classes of :mod:`jaxprox.models_agm` implement them):

    geometries                      tuple of supported prox-functions ("euclidean", "entropic")
    strong_convexity(geom)          (lam1, lam2) w.r.t. d
    lipschitz(geom)                 L of grad f w.r.t. the norm of d
    lipschitz_estimate(geom)        optional: a cheap estimate of its scale (adaptive start)
    x0(geom, init)                  a starting point in dom Psi
    lin(x)                          a linear image carried through the iterations (A x)
    f_value(x, ax)                  f(x)
    f_grad(x, ax)                   (f(x), grad f(x), alpha(x))
    psi(x)                          Psi(x)  (x feasible)
    breg_prox(geom, kappa, theta, beta)   argmin_x kappa d(x) - <theta, x> + beta Psi(x)
    breg_prox_warm(geom, kappa, theta, beta, hint), prox_hint()   optional: the same prox and a
                                    warm start for the next call (carried in the state; the SVM
                                    dual carries its projection's multiplier)
    certificate(x, ax, alpha_avg)   (primal, dual, gap) of the *original* problem
    certificate_L(x, ax, alpha_avg, L)   optional: the same, given the current estimate L_k
                                    (the SVM dual takes a projected-gradient step with it)
    refine_primal(w, best, jbest, t)   optional, runs on a dual: the primal point to report after
                                    the t-th check and its exact objective, given the current
                                    average w and the previous (best, jbest); the certificate then
                                    uses that value (the SVM dual adds an active-set polish)
    residual(z)                     zero at the optimum: z = x* (primal run) or
                                    AGMSolution(alpha*, w*) (dual run, returns a pair)
    dual_run                        True if x is a dual variable (params = recovered primal)
"""
from __future__ import annotations

import equinox as eqx
import jax
import jax.numpy as jnp
from jax import lax

from ..driver import Solver
from .. import capabilities as cap

__all__ = ["AGM", "AGMState", "AGMSolution", "ERMModel", "as_agm_model", "breg_d", "breg_grad_d", "breg_dconj"]


# ------------------------------------------------------------------------------------------
# prox-functions d (section 2, 3.1): value, gradient and <grad d(u), u> - d(u)
# ------------------------------------------------------------------------------------------
def _xlogx(x):
    pos = x > 0
    return jnp.where(pos, x * jnp.log(jnp.where(pos, x, 1.0)), 0.0)


def breg_d(geom, x):
    """``d(x)``: ``1/2 ||x||^2`` (Euclidean, sigma = 1 w.r.t. l2) or ``sum x log x`` (entropy,
    sigma = 1 w.r.t. l1 on the simplex)."""
    if geom == "euclidean":
        return 0.5 * jnp.vdot(x, x)
    return jnp.sum(_xlogx(x))


def breg_grad_d(geom, x):
    """``grad d(x)``; for the entropy ``1 + log x`` with ``log 0`` floored at ``log(tiny)``
    (note 6.3 item 8: only enters through ``lam1 > 0`` terms and ``theta_0``)."""
    if geom == "euclidean":
        return x
    return 1.0 + jnp.log(jnp.maximum(x, jnp.finfo(x.dtype).tiny))


def breg_dconj(geom, x):
    """``<grad d(x), x> - d(x)`` (the constant of the linearisation of ``d`` at ``x``)."""
    if geom == "euclidean":
        return 0.5 * jnp.vdot(x, x)
    return jnp.sum(x)


def _vdot(a, b):
    return jnp.vdot(a, b)


# ------------------------------------------------------------------------------------------
# ERM adapter
# ------------------------------------------------------------------------------------------
def _penalty_lam2(penalty):
    """Strong convexity modulus (w.r.t. 1/2||.||^2) of ``lam R`` for the penalties that have one."""
    if penalty is None:
        return None
    name = type(penalty).__name__
    if name == "SquaredL2":
        return penalty.lam
    if name == "ElasticNet":
        # lam * (l1_ratio ||w||_1 + (1 - l1_ratio)/2 ||w||^2) or lam*(gamma||w||_1 + 1/2||w||^2)
        if hasattr(penalty, "l1_ratio"):
            return penalty.lam * (1.0 - penalty.l1_ratio)
        if hasattr(penalty, "l2"):
            return penalty.lam * penalty.l2
        if hasattr(penalty, "gamma"):
            return penalty.lam
    return None


class ERMModel(eqx.Module):
    """AGM model of an :class:`~jaxprox.ERM` with a smooth loss (Euclidean geometry):
    ``f = (1/n) sum_i l(a_i^T w, y_i)``, ``Psi = lam R + I_C``, ``alpha(w)_i = l'(a_i^T w)`` (the
    Danskin maximiser of ``f(w) = max_u (1/n) sum u_i a_i^T w - l*(u_i)``). ``lam1 = 0``;
    ``lam2`` is the modulus of the penalty (SquaredL2, ElasticNet), 0 otherwise."""

    problem: eqx.Module
    geometries = ("euclidean",)

    def strong_convexity(self, geom):
        p = self.problem
        z = jnp.zeros((), p.A.dtype)
        lam2 = _penalty_lam2(p.penalty)
        return z, (z if lam2 is None else jnp.asarray(lam2, p.A.dtype))

    def lipschitz(self, geom):
        return self.problem.smoothness()

    def x0(self, geom, init):
        p = self.problem
        x = p.zeros() if init is None else jnp.asarray(init, p.A.dtype)
        return p.constraint.project(x) if p.constraint is not None else x

    def lin(self, x):
        return self.problem.A.mv(x)

    def f_value(self, x, ax):
        return self.problem.loss.risk(ax, self.problem.y)

    def f_grad(self, x, ax):
        p = self.problem
        u = p.loss.grad(ax, p.y)
        return p.loss.risk(ax, p.y), p.A.rmv(u) / p.n, u

    def psi(self, x):
        return self.problem.regularizer(x)

    def breg_prox(self, geom, kappa, theta, beta):
        return self.problem.prox(theta / kappa, beta / kappa)

    def certificate(self, x, ax, ubar):
        """``P(x) - max(D(l'(Ax)), D(scaled ubar))``: both dual points are feasible, so the max
        is still a lower bound on ``P*`` (Theorem 10 uses the averaged one)."""
        p = self.problem
        prim = self.f_value(x, ax) + p.regularizer(x)
        u1 = p.dual_point(x)
        u2 = ubar
        if p.penalty is not None and p.constraint is None:
            u2 = u2 * p.penalty.dual_scale(-p.A.rmv(u2) / p.n)
        d1, d2 = p.dual_objective(u1), p.dual_objective(u2)
        d1 = jnp.where(jnp.isnan(d1), -jnp.inf, d1)
        d2 = jnp.where(jnp.isnan(d2), -jnp.inf, d2)
        dual = jnp.maximum(d1, d2)
        return prim, dual, prim - dual

    def residual(self, z):
        """``x - prox(x - eta grad f(x))``: zero exactly at the optimum."""
        return self.problem.prox_grad_residual(z)


def _dual_run(model) -> bool:
    return bool(getattr(model, "dual_run", False))


def as_agm_model(problem):
    """Wrap an :class:`~jaxprox.ERM` as an AGM model; other models are returned as they are."""
    from ..problems import ERM

    if isinstance(problem, ERM):
        if not problem.loss.smooth:
            raise ValueError(
                f"AGM on an ERM needs a smooth loss; {type(problem.loss).__name__} is not. Smooth "
                "it (losses.SmoothedHinge(mu/n), scheme (A) of the paper) or use the dual models "
                "of jaxprox.models_agm (schemes (B) and (D)).")
        return ERMModel(problem)
    needed = ("lin", "f_grad", "f_value", "psi", "breg_prox", "certificate", "x0")
    missing = [m for m in needed if not hasattr(problem, m)]
    if missing:
        raise TypeError(f"{type(problem).__name__} is not an AGM model (missing {missing})")
    return problem


# ------------------------------------------------------------------------------------------
# state and solver
# ------------------------------------------------------------------------------------------
class AGMState(eqx.Module):
    """Iteration state. ``inv_a = 1/A_k`` (memory inf) and ``c`` = ``c_k`` (memory 1);
    ``theta, const, kappa, beta`` describe the current model; ``abar`` is the averaged
    ``alpha(u_i)``; ``prod = b_k(0) = prod (1 - a_i)`` (memory 1); ``trials`` counts L trials
    (gradient evaluations) so far, ``L`` is the last accepted estimate; ``fx = J(x_k)`` (tracked
    when adaptive or restarting); ``restarts`` counts the restarts; ``hint`` is the model's warm
    start for its next prox (e.g. the multiplier of the last projection; ``breg_prox_warm``).
    ``best`` is the point a run on a dual reports (the recovered primal, updated at each check by
    :meth:`AGM.refine`; ``abar`` until the first check), ``jbest`` its primal value (``inf`` before
    the first check) and ``checks`` counts the checks (primal runs: unused)."""

    k: jax.Array
    x: jax.Array
    z: jax.Array
    ax: jax.Array
    az: jax.Array
    theta: jax.Array
    const: jax.Array
    inv_a: jax.Array
    c: jax.Array
    kappa: jax.Array
    beta: jax.Array
    prod: jax.Array
    abar: jax.Array
    L: jax.Array
    trials: jax.Array
    fails: jax.Array
    fx: jax.Array
    restarts: jax.Array
    hint: jax.Array
    best: jax.Array
    jbest: jax.Array
    checks: jax.Array
    dual_run: bool = eqx.field(static=True, default=False)


class AGM(Solver):
    """AGM-EF (paper 002, Algorithms 1-4), see the module docstring.

    Args:
        memory: ``"inf"`` (Algorithms 1/2) or ``"1"`` (Algorithms 3/4).
        adaptive: backtracking on ``L`` that may also decrease (Algorithms 2/4).
        L0: Lipschitz constant (fixed L) or the optimistic initial estimate (adaptive); default:
            the model's estimate (power iteration) for fixed L, and ``1e-3`` times it when adaptive.
        prox: ``"euclidean"``, ``"entropic"`` or ``None`` (the model's first geometry).
        gamma_u, gamma_d: the up/down factors of the adaptive rule (> 1; ours, not the paper's:
            2 and 1.25).
        max_backtrack: cap on L trials per iteration (static).
        accept_rtol: relative slack in the acceptance test (rounding, note 6.3 item 6).
        restart: function-value restart (O'Donoghue and Candes 2015; *ours*, not in the paper):
            when ``J(x_{k+1}) > J(x_k)`` the method is started afresh from ``x_{k+1}``
            (``memory="inf"``: ``psi = Delta(., x_{k+1})``, ``A = 0``; ``memory="1"``:
            ``q = c_0 Delta(., x_{k+1}) + J(x_{k+1})``). Each run between restarts keeps the
            guarantees of Theorems 6/14 from its own start; on problems that are not strongly
            convex but grow quadratically away from the solution set (the SVM dual: a
            quadratic over a polytope) restarting recovers a linear rate.
    """

    requires = (cap.AGM_PROBLEM,)

    memory: str = eqx.field(static=True, default="inf")
    adaptive: bool = eqx.field(static=True, default=True)
    L0: float | None = eqx.field(static=True, default=None)
    prox: str | None = eqx.field(static=True, default=None)
    gamma_u: float = eqx.field(static=True, default=2.0)
    gamma_d: float = eqx.field(static=True, default=1.25)
    max_backtrack: int = eqx.field(static=True, default=40)
    accept_rtol: float = eqx.field(static=True, default=1e-12)
    restart: bool = eqx.field(static=True, default=False)

    def __check_init__(self):
        if self.memory not in ("inf", "1"):
            raise ValueError(f"memory must be 'inf' or '1', got {self.memory!r}")
        if self.prox not in (None, "euclidean", "entropic"):
            raise ValueError(f"prox must be 'euclidean', 'entropic' or None, got {self.prox!r}")
        if not (self.gamma_u > 1 and self.gamma_d > 1):
            raise ValueError("gamma_u and gamma_d must be > 1")

    # ------------------------------------------------------------------ helpers
    def _geom(self, model):
        geom = model.geometries[0] if self.prox is None else self.prox
        if geom not in model.geometries:
            raise ValueError(f"{type(model).__name__} supports prox in {model.geometries}, got {geom!r}")
        return geom

    def _sigma(self, geom):
        return 1.0

    def _clamp(self, L, lam1, sigma):
        return jnp.maximum(L, sigma * lam1 * (1.0 + 1e-10) + jnp.finfo(L.dtype).tiny)

    @property
    def _track_J(self):
        return self.adaptive or self.restart

    def _restarted(self, model, geom, sigma, lam2, s):
        """The state of a fresh run started at ``x_k`` (see ``restart``)."""
        gx, cx = breg_grad_d(geom, s.x), breg_dconj(geom, s.x)
        if self.memory == "inf":
            return eqx.tree_at(lambda t: (t.k, t.z, t.az, t.theta, t.const, t.inv_a), s,
                               (jnp.zeros_like(s.k), s.x, s.ax, gx, cx, jnp.zeros_like(s.inv_a)))
        c0 = s.L / sigma + lam2
        return eqx.tree_at(lambda t: (t.z, t.az, t.c, t.kappa, t.theta, t.beta, t.const), s,
                           (s.x, s.ax, c0, c0, c0 * gx, jnp.zeros_like(s.beta), s.fx + c0 * cx))

    @staticmethod
    def _prox(model, geom, kappa, theta, beta, hint):
        """``argmin_x kappa d(x) - <theta, x> + beta Psi(x)`` and the model's next warm start."""
        if hasattr(model, "breg_prox_warm"):
            return model.breg_prox_warm(geom, kappa, theta, beta, hint)
        return model.breg_prox(geom, kappa, theta, beta), hint

    def _accept(self, J, terms, model_value):
        scale = jnp.abs(J) + sum(jnp.abs(t) for t in terms)
        return J <= model_value + self.accept_rtol * scale

    @staticmethod
    def _best0(model, a0):
        """``(best, jbest, checks)`` at the start: ``alpha(x_0)`` (a run on a dual: the primal
        recovered from ``x_0``) and, for a model with ``refine_primal``, its exact value."""
        j0 = model.objective(a0) if _dual_run(model) and hasattr(model, "refine_primal") else jnp.inf
        return a0, jnp.asarray(j0, a0.dtype), jnp.zeros((), jnp.int32)

    # ------------------------------------------------------------------ init
    def init(self, problem, init=None):
        model = as_agm_model(problem)
        geom = self._geom(model)
        sigma = self._sigma(geom)
        lam1, lam2 = model.strong_convexity(geom)
        x0 = model.x0(geom, init)
        dtype = x0.dtype
        ax0 = model.lin(x0)
        if self.L0 is not None:
            L = jnp.asarray(self.L0, dtype)
        else:
            if self.adaptive:
                # an optimistic start needs only the scale of L: a cheap estimate if the model has one
                est = getattr(model, "lipschitz_estimate", model.lipschitz)
                L = jnp.asarray(est(geom), dtype) * 1e-3
            else:
                L = jnp.asarray(model.lipschitz(geom), dtype)
        L = self._clamp(L, lam1, sigma)
        i32 = jnp.zeros((), jnp.int32)
        one = jnp.ones((), dtype)
        hint = model.prox_hint() if hasattr(model, "prox_hint") else jnp.zeros((), dtype)
        if self.memory == "inf":
            f0, g0, a0 = model.f_grad(x0, ax0)
            # theta_0 = grad d(x0), C_0 = <grad d(x0), x0> - d(x0)  (psi_0 = Delta(., x0))
            return AGMState(i32, x0, x0, ax0, ax0, breg_grad_d(geom, x0), breg_dconj(geom, x0),
                            jnp.zeros((), dtype), one, one, one, one, jnp.zeros_like(a0), L, i32, i32,
                            f0 + model.psi(x0), i32, hint, *self._best0(model, a0), _dual_run(model))
        # memory "1": q_0 = (L/sigma) Delta(x, u0) + Psi(x) + f(u0) + <g0, x - u0>
        u0 = x0
        f0, g0, a0 = model.f_grad(u0, ax0)

        def trial(L):
            kap = L / sigma
            theta = kap * breg_grad_d(geom, u0) - g0
            const = f0 - _vdot(g0, u0) + kap * breg_dconj(geom, u0)
            z, h = self._prox(model, geom, kap, theta, one, hint)
            az = model.lin(z)
            q = kap * breg_d(geom, z) - _vdot(theta, z) + model.psi(z) + const
            J = model.f_value(z, az) + model.psi(z)
            ok = self._accept(J, (kap * breg_d(geom, z), _vdot(theta, z), const), q)
            return z, az, kap, theta, const, ok, h

        z, az, kap, theta, const, ok, hint = trial(L)
        nb = i32
        if self.adaptive:
            def cond(c):
                return (~c[1][5]) & (c[2] < self.max_backtrack)

            def body(c):
                L = c[0] * self.gamma_u
                return (L, trial(L), c[2] + 1)

            L, (z, az, kap, theta, const, ok, hint), nb = lax.while_loop(
                cond, body, (L, (z, az, kap, theta, const, ok, hint), i32))
        c0 = L / sigma + lam2
        fz = model.f_value(z, az) + model.psi(z)
        return AGMState(i32, z, z, az, az, theta, const, jnp.zeros((), dtype), c0, kap, one, one,
                        a0, L, nb + 1, (~ok).astype(jnp.int32), fz, i32, hint, *self._best0(model, a0),
                        _dual_run(model))

    # ------------------------------------------------------------------ steps
    def _trial_inf(self, model, geom, sigma, lam1, lam2, s, L):
        lam = lam1 + lam2
        Ls = L / sigma - lam1
        first = s.k == 0
        inv_a = s.inv_a
        bq = inv_a + 2.0 * lam
        rho = (bq + jnp.sqrt(bq * bq + 4.0 * Ls * (inv_a + lam))) / (2.0 * Ls)
        T1, T2, T3 = inv_a + lam, lam1 * rho, lam2 * rho / (1.0 + rho)
        T = T1 + T2 + T3
        wz = jnp.where(first, 0.0, rho * T1 / (T * (1.0 + rho) - T2 * rho))
        u = s.x + wz * (s.z - s.x)
        au = s.ax + wz * (s.az - s.ax)
        fu, g, alpha = model.f_grad(u, au)
        gnew = lam1 * breg_grad_d(geom, u) - g
        cnew = fu - _vdot(g, u) + lam1 * breg_dconj(geom, u)
        c_old = jnp.where(first, Ls, 1.0 / (1.0 + rho))
        c_new = jnp.where(first, 1.0, rho / (1.0 + rho))
        theta = c_old * s.theta + c_new * gnew
        const = c_old * s.const + c_new * cnew
        inv_a_new = jnp.where(first, Ls, inv_a / (1.0 + rho))
        kap = inv_a_new + lam1
        z, hint = self._prox(model, geom, kap, theta, jnp.ones_like(kap), s.hint)
        az = model.lin(z)
        xw = c_new  # a_{k+1}/A_{k+1}
        x = s.x + xw * (z - s.x)
        ax = s.ax + xw * (az - s.ax)
        abar = s.abar + xw * (alpha - s.abar)
        J = model.f_value(x, ax) + model.psi(x) if self._track_J else s.fx
        if self.adaptive:
            psiz = model.psi(z)
            dz = kap * breg_d(geom, z)
            tz = _vdot(theta, z)
            ok = self._accept(J, (dz, tz, psiz, const), dz - tz + psiz + const)
        else:
            ok = jnp.array(True)
        new = AGMState(s.k + 1, x, z, ax, az, theta, const, inv_a_new, s.c, s.kappa, s.beta, s.prod,
                       abar, L, s.trials, s.fails, J, s.restarts, hint, s.best, s.jbest, s.checks,
                       s.dual_run)
        return new, ok

    def _trial_one(self, model, geom, sigma, lam1, lam2, s, L):
        lam = lam1 + lam2
        Lp = L / sigma + lam2
        c = s.c
        cl = c - lam
        a = 2.0 * c / (cl + jnp.sqrt(cl * cl + 4.0 * Lp * c))
        t1, t2, t3 = (1.0 - a) * c, lam1 * a, lam2 * a * (1.0 - a)
        tau = t1 + t2 + t3
        wz = t1 * a / (tau - t2 * a)
        u = s.x + wz * (s.z - s.x)
        au = s.ax + wz * (s.az - s.ax)
        fu, g, alpha = model.f_grad(u, au)
        kap = (1.0 - a) * s.kappa + a * lam1
        theta = (1.0 - a) * s.theta + a * (lam1 * breg_grad_d(geom, u) - g)
        beta = (1.0 - a) * s.beta + a
        const = (1.0 - a) * s.const + a * (fu - _vdot(g, u) + lam1 * breg_dconj(geom, u))
        z, hint = self._prox(model, geom, kap, theta, beta, s.hint)
        az = model.lin(z)
        x = s.x + a * (z - s.x)
        ax = s.ax + a * (az - s.ax)
        abar = s.abar + a * (alpha - s.abar)
        c_new = (1.0 - a) * c + lam * a
        psiz = model.psi(z)
        dz = kap * breg_d(geom, z)
        tz = _vdot(theta, z)
        qz = dz - tz + beta * psiz + const  # psi_{k+1}(z_{k+1}) = q_{k+1}(z_{k+1})
        J = model.f_value(x, ax) + model.psi(x) if self._track_J else s.fx
        if self.adaptive:
            ok = self._accept(J, (dz, tz, beta * psiz, const), qz)
        else:
            ok = jnp.array(True)
        # collapse: q_{k+1}(x) = c_{k+1} Delta(x, z) + q  (kappa = c, theta = c grad d(z), beta = 0)
        new = AGMState(s.k + 1, x, z, ax, az, c_new * breg_grad_d(geom, z),
                       qz + c_new * breg_dconj(geom, z), s.inv_a, c_new, c_new,
                       jnp.zeros_like(beta), (1.0 - a) * s.prod, abar, L, s.trials, s.fails, J,
                       s.restarts, hint, s.best, s.jbest, s.checks, s.dual_run)
        return new, ok

    def step(self, problem, s: AGMState) -> AGMState:
        model = as_agm_model(problem)
        geom = self._geom(model)
        sigma = self._sigma(geom)
        lam1, lam2 = model.strong_convexity(geom)
        trial = self._trial_inf if self.memory == "inf" else self._trial_one

        def run(L):
            return trial(model, geom, sigma, lam1, lam2, s, self._clamp(L, lam1, sigma))

        if not self.adaptive:
            new, _ = run(s.L)
            new = eqx.tree_at(lambda t: t.trials, new, s.trials + 1)
            return self._maybe_restart(model, geom, sigma, lam2, s, new)
        # first trial L_k / gamma_d (Alg 2 step 6-8, Alg 4 step 9-11); AGM-EF-inf starts at L0
        first_L = s.L / self.gamma_d
        if self.memory == "inf":
            first_L = jnp.where(s.k == 0, s.L, first_L)
        new, ok = run(first_L)

        def cond(c):
            return (~c[1]) & (c[2] < self.max_backtrack)

        def body(c):
            new, ok = run(c[0].L * self.gamma_u)
            return (new, ok, c[2] + 1)

        new, ok, nb = lax.while_loop(cond, body, (new, ok, jnp.zeros((), jnp.int32)))
        new = eqx.tree_at(lambda t: (t.trials, t.fails), new,
                          (s.trials + nb + 1, s.fails + (~ok).astype(jnp.int32)))
        return self._maybe_restart(model, geom, sigma, lam2, s, new)

    def _maybe_restart(self, model, geom, sigma, lam2, old, new):
        if not self.restart:
            return new
        do = new.fx > old.fx
        new = eqx.tree_at(lambda t: t.restarts, new, new.restarts + do.astype(jnp.int32))
        fresh = self._restarted(model, geom, sigma, lam2, new)
        return jax.tree_util.tree_map(lambda a, b: jnp.where(do, a, b), fresh, new)

    # ------------------------------------------------------------------ outputs
    def refine(self, problem, s: AGMState):
        """Run on a dual: the reported primal ``best`` becomes the better (in the exact primal
        objective) of the previous ``best`` and the model's candidates at the current average
        ``abar`` -- :meth:`BiasSVM.refine_primal <jaxprox.models_agm.BiasSVM.refine_primal>` adds an
        active-set polish of it -- or simply ``abar`` for a model without ``refine_primal``. Only the
        reported point changes; the iteration does not see it."""
        if not s.dual_run:
            return s
        model = as_agm_model(problem)
        if not hasattr(model, "refine_primal"):
            return eqx.tree_at(lambda t: t.best, s, s.abar)
        best, jbest = model.refine_primal(s.abar, s.best, s.jbest, s.checks)
        return eqx.tree_at(lambda t: (t.best, t.jbest, t.checks), s, (best, jbest, s.checks + 1))

    def certificate(self, problem, s: AGMState):
        model = as_agm_model(problem)
        if s.dual_run and hasattr(model, "refine_primal"):
            # the reported primal and its exact value, both kept by refine (and init)
            return model.certificate_L(s.x, s.ax, s.best, s.L, prim=s.jbest)
        w = s.best if s.dual_run else s.abar
        if hasattr(model, "certificate_L"):
            return model.certificate_L(s.x, s.ax, w, s.L)
        return model.certificate(s.x, s.ax, w)

    def params(self, s: AGMState):
        return s.x

    def dual(self, s: AGMState):
        return s.abar

    def solution(self, s: AGMState):
        # primal run: x (the dual average is reported, not differentiated); dual run: the pair
        # (alpha, recovered w), both roots of the model's residual
        return AGMSolution(s.x, s.best, True) if s.dual_run else s.x

    def residual(self, problem, z):
        r = as_agm_model(problem).residual(z)
        return AGMSolution(r[0], r[1], True) if isinstance(z, AGMSolution) else r

    def unpack(self, z):
        """``(params, dual)``: ``(x, None)`` for a primal run (the driver then reports the
        averaged ``alpha``); for a run on a dual problem the recovered primal average comes
        first: ``(w_avg, alpha)``."""
        return (z.abar, z.x) if isinstance(z, AGMSolution) else (z, None)


class AGMSolution(eqx.Module):
    """What implicit differentiation sees for a run on a dual problem: the iterate ``x = alpha``
    and the reported recovered primal ``abar = w`` (the state's ``best``: the average, or the
    model's refinement of it); the model's residual vanishes at ``(alpha*, w(alpha*))``."""

    x: jax.Array
    abar: jax.Array
    dual_run: bool = eqx.field(static=True, default=False)

    # vector-space arithmetic, so that generic linear solvers that write ``c * v`` or ``v + w``
    # (the driver's least-squares fallback) accept this pytree
    def __mul__(self, c):
        return jax.tree_util.tree_map(lambda a: a * c, self)

    __rmul__ = __mul__

    def __add__(self, other):
        return jax.tree_util.tree_map(lambda a, b: a + b, self, other)

    __radd__ = __add__

    def __sub__(self, other):
        return jax.tree_util.tree_map(lambda a, b: a - b, self, other)
