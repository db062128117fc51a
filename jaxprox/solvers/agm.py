"""AGM-EF: Nesterov's estimate-function accelerated gradient method with adaptive Lipschitz
estimates, Bregman prox-functions and duality-gap certificates (Zhang, Saha and
Vishwanathan; the equation and algorithm numbers below are the paper's).

Problem class (10): ``min_x J(x) = f(x) + Psi(x)`` with ``f`` convex and ``L``-smooth w.r.t. a
norm in which the prox-function ``d`` is ``sigma``-strongly convex, ``f`` ``lam1``-strongly
convex and ``Psi`` ``lam2``-strongly convex *w.r.t. d* (Definition 1, Assumption 1;
``lam = lam1 + lam2``; the rate is linear when ``lam > 0``).

* ``memory="inf"`` is AGM-EF-inf (Algorithm 1; Algorithm 2 with ``adaptive=True``). The model
  ``psi_k(x) = Delta(x, x_0) + sum_i a_i [Psi(x) + f(u_i) + <grad f(u_i), x - u_i> + lam1
  Delta(x, u_i)]`` is aggregated as ``(1 + lam1 A_k) d(x) - <theta_k, x> + A_k Psi(x) + C_k``
  and carried in the overflow-safe normalised form (``1/A_k``, ``theta_k/A_k``,
  ``C_k/A_k``): with ``rho = a_{k+1}/A_k`` the positive root of
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
  ``u_0`` (Psi weight 1).
* ``adaptive=True`` (Algorithms 2 and 4): each iteration first tries ``L_k / gamma_d``, then
  multiplies by ``gamma_u`` until the invariant ``J(x_{k+1}) <= psi_{k+1}(z_{k+1})/A_{k+1}``
  (resp. ``J(x_{k+1}) <= q_{k+1}(z_{k+1})``) holds; every retry restarts from the iteration-k
  state and every trial ``L`` is clamped above ``sigma lam1``. ``L`` may decrease.
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
see :mod:`jaxprox.problems` for the SVM with bias, ERLPBoost and the F1 loss.

Models. The solver accepts an :class:`~jaxprox.problems.base.AGMModel` (the interface, with its
optional hooks and their defaults, is documented there: :class:`~jaxprox.BiasSVM`,
:class:`~jaxprox.ERLPBoost`, :class:`~jaxprox.F1SVM`) or an :class:`~jaxprox.ERM`, which it adapts:

* a smooth loss with a prox-able penalty or constraint: :class:`~jaxprox.problems.agm_models.ERMModel`
  (Euclidean geometry);
* the plain SVM, hinge loss with ``SquaredL2(lam)`` (``lam > 0``) and no constraint:
  :class:`~jaxprox.problems.agm_models.SVMDualModel`, the AGM run on its dual over the hinge's
  dual box (scheme 5.3 without the bias), with ``w`` recovered in the ERM's parametrisation and
  the ERM's certificate.
"""
from __future__ import annotations

import equinox as eqx
import jax
import jax.numpy as jnp
from jax import lax

from .. import capabilities as cap
from ..certificates import rounding_slack
from ..components.geometry import GEOMETRIES, Geometry, as_geometry
from ..solver import Solver
from ..operators import linear_at
from ..problems.agm_models import ERMModel, SVMDualModel, as_agm_model

__all__ = ["AGM", "AGMState", "AGMSolution", "ERMModel", "SVMDualModel", "as_agm_model"]
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
    the first check), ``dbest`` the dual point reported with it (the iterate ``x``, or the model's
    exact dual point of a polished ``best``) and ``checks`` counts the checks (primal runs:
    unused)."""

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
    dbest: jax.Array
    checks: jax.Array
    dual_run: bool = eqx.field(static=True, default=False)


class AGM(Solver):
    """AGM-EF (Algorithms 1-4), see the module docstring.

    Args:
        memory: ``"inf"`` (Algorithms 1/2) or ``"1"`` (Algorithms 3/4).
        adaptive: backtracking on ``L`` that may also decrease (Algorithms 2/4).
        L0: Lipschitz constant (fixed L) or the optimistic initial estimate (adaptive); default:
            the model's estimate (from ``||A||_2``) for fixed L, and ``1e-3`` times it when adaptive.
        prox: the prox-function, :class:`~jaxprox.components.geometry.Euclidean` or
            :class:`~jaxprox.components.geometry.Entropic` (``jp.geometry``), or ``None`` (the
            model's first geometry).
        gamma_u, gamma_d: the up/down factors of the adaptive rule (> 1; ours, not the paper's:
            2 and 1.25).
        max_backtrack: cap on L trials per iteration (static).
        accept_rtol: relative slack in the acceptance test (rounding); at least
            10 ``eps`` of the iterate's dtype.
        value_restart: function-value restart (O'Donoghue and Candes 2015; *ours*, not in the paper;
            ``None``, the default, turns it on for an :class:`~jaxprox.ERM` whose penalty has no
            strong convexity (l1 and the other norms, or none) and off otherwise, see below):
            when ``J(x_{k+1}) > J(x_k)`` the method is started afresh from ``x_{k+1}``
            (``memory="inf"``: ``psi = Delta(., x_{k+1})``, ``A = 0``; ``memory="1"``:
            ``q = c_0 Delta(., x_{k+1}) + J(x_{k+1})``). Each run between restarts keeps the
            guarantees of Theorems 6/14 from its own start; on problems that are not strongly
            convex but grow quadratically away from the solution set (the SVM dual: a
            quadratic over a polytope) restarting recovers a linear rate.
        max_steps: iterations; default ``None``: from the size of the data, 10,000 to 120,000
            (``iteration_range``, :func:`jaxprox.defaults.iteration_budget`).

    First-call cost: the traced graph holds the adaptive-Lipschitz retry loop, the model's prox
    (for the SVM duals a safeguarded Newton projection onto the box and hyperplane) and, on dual
    models, the active-set polish in every check; each is traced once, and a run is certified
    once per check (the polish's exact dual point is part of that certificate, so no second
    certificate follows the loop). The persistent compilation cache serves later processes
    (``benchmarks/results/latency.md``).
    """

    unscaled_advice = ("AGM runs on the SVM's dual here, whose conditioning does not change with the units of w "
                       "(jp.solve cannot rescale it): standardise the features, or use jp.PDProx for the plain "
                       "SVM, which rescales.")
    requires = (cap.AGM_PROBLEM,)
    option_ranges = {"L0": "> 0", "max_backtrack": ">= 1", "accept_rtol": ">= 0"}
    rescales = True

    memory: str = eqx.field(static=True, default="inf")
    adaptive: bool = eqx.field(static=True, default=True)
    L0: float | None = eqx.field(static=True, default=None)
    prox: Geometry | None = eqx.field(static=True, default=None, converter=as_geometry)
    gamma_u: float = eqx.field(static=True, default=2.0)
    gamma_d: float = eqx.field(static=True, default=1.25)
    max_backtrack: int = eqx.field(static=True, default=40)
    accept_rtol: float = eqx.field(static=True, default=1e-12)
    value_restart: bool | None = eqx.field(static=True, default=None)
    max_steps: int | None = eqx.field(static=True, default=None, kw_only=True)
    # max_steps=None: jaxprox.defaults.iteration_budget, a narrower range than FISTA's (an AGM
    # iteration costs more: its model's prox, the adaptive-L retries; benchmarks/results/defaults.md)
    iteration_range = (10_000, 120_000)

    def __check_init__(self):
        if self.memory not in ("inf", "1"):
            raise ValueError(f"memory must be 'inf' or '1', got {self.memory!r}")
        if not (self.gamma_u > 1 and self.gamma_d > 1):
            raise ValueError("gamma_u and gamma_d must be > 1")

    def prepare(self, problem):
        """Checks before tracing that AGM accepts ``problem`` (:func:`as_agm_model`) and that its
        data suit the model (:meth:`~jaxprox.problems.base.AGMModel.check_data`)."""
        as_agm_model(problem).check_data()
        return self

    # ------------------------------------------------------------------ helpers
    def _geom(self, model) -> Geometry:
        """``prox``, or the model's first geometry; a ``ValueError`` if the model does not support it."""
        geom = GEOMETRIES[model.geometries[0]] if self.prox is None else self.prox
        if geom.name not in model.geometries:
            raise ValueError(f"{type(model).__name__} supports prox in "
                             f"{tuple(type(GEOMETRIES[g]).__name__ + '()' for g in model.geometries)}, got {geom!r}")
        return geom

    def _sigma(self, geom):
        return geom.sigma

    def _clamp(self, L, lam1, sigma):
        return jnp.maximum(L, sigma * lam1 * (1.0 + 1e-10) + jnp.finfo(L.dtype).tiny)

    def _restarting(self, model) -> bool:
        """``value_restart``, or by default (``None``): on for an ERM whose penalty is not strongly
        convex (:attr:`~jaxprox.base.Penalty.declares_strong_convexity` is false), where
        the rate without restarts is sublinear and a restart recovers a linear one under quadratic
        growth; off for strongly convex penalties (the rate is linear already, and restarts were
        measured to slow ridge-logistic on unscaled data) and for the models of
        :mod:`jaxprox.problems` (no change on the SVM duals). Evidence: ``defaults.md``."""
        if self.value_restart is not None:
            return self.value_restart
        if not isinstance(model, ERMModel):
            return False
        pen = model.problem.penalty
        return pen is None or not pen.declares_strong_convexity

    def _track_J(self, model):
        return self.adaptive or self._restarting(model)

    def _restarted(self, model, geom, sigma, lam2, s):
        """The state of a fresh run started at ``x_k`` (see ``value_restart``)."""
        gx, cx = geom.grad_d(s.x), geom.dconj(s.x)
        if self.memory == "inf":
            return eqx.tree_at(lambda t: (t.k, t.z, t.az, t.theta, t.const, t.inv_a), s,
                               (jnp.zeros_like(s.k), s.x, s.ax, gx, cx, jnp.zeros_like(s.inv_a)))
        c0 = s.L / sigma + lam2
        return eqx.tree_at(lambda t: (t.z, t.az, t.c, t.kappa, t.theta, t.beta, t.const), s,
                           (s.x, s.ax, c0, c0, c0 * gx, jnp.zeros_like(s.beta), s.fx + c0 * cx))

    @staticmethod
    def _prox(model, geom, kappa, theta, beta, hint):
        """``argmin_x kappa d(x) - <theta, x> + beta Psi(x)`` and the model's next warm start."""
        return model.breg_prox_warm(geom.name, kappa, theta, beta, hint)

    def _accept(self, J, terms, model_value):
        """``J <= model value`` up to the rounding of its terms: ``accept_rtol`` times their
        magnitudes, at least 10 ``eps`` of ``J``'s dtype (:func:`~jaxprox.certificates.rounding_slack`; in
        float32 the terms of a long run reach 1e7 for a ``J`` near 0.3, and a test at 1e-12 rejected
        every trial until ``L`` overflowed)."""
        scale = jnp.abs(J) + sum(jnp.abs(t) for t in terms)
        rtol = rounding_slack(jnp.result_type(J), self.accept_rtol, 10)
        return J <= model_value + rtol * scale

    def _best0(self, model, a0, x0):
        """``(best, jbest, dbest, checks)`` at the start: ``alpha(x_0)`` (a run on a dual: the
        primal recovered from ``x_0``) with ``x_0``. Its exact value is left to the refinement of
        the first check (the driver's loop refines the start before certifying it), except for a
        model with a primal refinement under :class:`jaxprox.Unrolled`, whose scan certifies the start
        unrefined."""
        scored = model.dual_run and model.has_primal_refinement and self.unrolled
        j0 = model.objective(a0) if scored else jnp.inf
        return a0, jnp.asarray(j0, a0.dtype), x0, jnp.zeros((), jnp.int32)

    # ------------------------------------------------------------------ init
    def init(self, problem, init=None):
        model = as_agm_model(problem)
        geom = self._geom(model)
        sigma = self._sigma(geom)
        lam1, lam2 = model.strong_convexity(geom.name)
        x0 = model.x0(geom.name, init)
        dtype = x0.dtype
        ax0 = linear_at(model.lin, x0, model.x0_is_origin(geom.name, init))
        if self.L0 is not None:
            L = jnp.asarray(self.L0, dtype)
        else:
            if self.adaptive:
                # an optimistic start needs only the scale of L (the model's cheap estimate)
                L = jnp.asarray(model.lipschitz_estimate(geom.name), dtype) * 1e-3
            else:
                L = jnp.asarray(model.lipschitz(geom.name), dtype)
        L = self._clamp(L, lam1, sigma)
        i32 = jnp.zeros((), jnp.int32)
        one = jnp.ones((), dtype)
        hint = model.prox_hint(x0)
        if self.memory == "inf":
            f0, g0, a0 = model.f_grad(x0, ax0)
            # theta_0 = grad d(x0), C_0 = <grad d(x0), x0> - d(x0)  (psi_0 = Delta(., x0))
            return AGMState(i32, x0, x0, ax0, ax0, geom.grad_d(x0), geom.dconj(x0),
                            jnp.zeros((), dtype), one, one, one, one, jnp.zeros_like(a0), L, i32, i32,
                            f0 + model.psi(x0), i32, hint, *self._best0(model, a0, x0), model.dual_run)
        # memory "1": q_0 = (L/sigma) Delta(x, u0) + Psi(x) + f(u0) + <g0, x - u0>
        u0 = x0
        f0, g0, a0 = model.f_grad(u0, ax0)

        def trial(L):
            kap = L / sigma
            theta = kap * geom.grad_d(u0) - g0
            const = f0 - jnp.vdot(g0, u0) + kap * geom.dconj(u0)
            z, h = self._prox(model, geom, kap, theta, one, hint)
            az = model.lin(z)
            q = kap * geom.d(z) - jnp.vdot(theta, z) + model.psi(z) + const
            J = model.f_value(z, az) + model.psi(z)
            ok = self._accept(J, (kap * geom.d(z), jnp.vdot(theta, z), const), q)
            return (L, z, az, kap, theta, const, h), ok

        if self.adaptive:
            like = (L, x0, ax0, L, g0, f0, hint)
            (L, z, az, kap, theta, const, hint), ok, nb = self._backtrack(trial, L, like, lambda t: t[0])
        else:
            (L, z, az, kap, theta, const, hint), ok = trial(L)
            nb = i32 + 1
        c0 = L / sigma + lam2
        fz = model.f_value(z, az) + model.psi(z)
        return AGMState(i32, z, z, az, az, theta, const, jnp.zeros((), dtype), c0, kap, one, one,
                        a0, L, nb, (~ok).astype(jnp.int32), fz, i32, hint, *self._best0(model, a0, x0),
                        model.dual_run)

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
        gnew = lam1 * geom.grad_d(u) - g
        cnew = fu - jnp.vdot(g, u) + lam1 * geom.dconj(u)
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
        J = model.f_value(x, ax) + model.psi(x) if self._track_J(model) else s.fx
        if self.adaptive:
            psiz = model.psi(z)
            dz = kap * geom.d(z)
            tz = jnp.vdot(theta, z)
            ok = self._accept(J, (dz, tz, psiz, const), dz - tz + psiz + const)
        else:
            ok = jnp.array(True)
        new = AGMState(s.k + 1, x, z, ax, az, theta, const, inv_a_new, s.c, s.kappa, s.beta, s.prod,
                       abar, L, s.trials, s.fails, J, s.restarts, hint, s.best, s.jbest, s.dbest,
                       s.checks, s.dual_run)
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
        theta = (1.0 - a) * s.theta + a * (lam1 * geom.grad_d(u) - g)
        beta = (1.0 - a) * s.beta + a
        const = (1.0 - a) * s.const + a * (fu - jnp.vdot(g, u) + lam1 * geom.dconj(u))
        z, hint = self._prox(model, geom, kap, theta, beta, s.hint)
        az = model.lin(z)
        x = s.x + a * (z - s.x)
        ax = s.ax + a * (az - s.ax)
        abar = s.abar + a * (alpha - s.abar)
        c_new = (1.0 - a) * c + lam * a
        psiz = model.psi(z)
        dz = kap * geom.d(z)
        tz = jnp.vdot(theta, z)
        qz = dz - tz + beta * psiz + const  # psi_{k+1}(z_{k+1}) = q_{k+1}(z_{k+1})
        J = model.f_value(x, ax) + model.psi(x) if self._track_J(model) else s.fx
        if self.adaptive:
            ok = self._accept(J, (dz, tz, beta * psiz, const), qz)
        else:
            ok = jnp.array(True)
        # collapse: q_{k+1}(x) = c_{k+1} Delta(x, z) + q  (kappa = c, theta = c grad d(z), beta = 0)
        new = AGMState(s.k + 1, x, z, ax, az, c_new * geom.grad_d(z),
                       qz + c_new * geom.dconj(z), s.inv_a, c_new, c_new,
                       jnp.zeros_like(beta), (1.0 - a) * s.prod, abar, L, s.trials, s.fails, J,
                       s.restarts, hint, s.best, s.jbest, s.dbest, s.checks, s.dual_run)
        return new, ok

    def step(self, problem, s: AGMState) -> AGMState:
        model = as_agm_model(problem)
        geom = self._geom(model)
        sigma = self._sigma(geom)
        lam1, lam2 = model.strong_convexity(geom.name)
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
        new, ok, nb = self._backtrack(run, first_L, s, lambda t: t.L)
        new = eqx.tree_at(lambda t: (t.trials, t.fails), new,
                          (s.trials + nb, s.fails + (~ok).astype(jnp.int32)))
        return self._maybe_restart(model, geom, sigma, lam2, s, new)

    def _backtrack(self, run, first_L, like, L_of):
        """Trials ``run(first_L), run(gamma_u L), ...`` (``L = L_of(result)``, the last trial's
        estimate) until one is accepted or ``max_backtrack + 1`` were made; returns
        ``(result, ok, number of trials)``. One loop whose body is the only traced trial, so the
        model's prox is compiled once (``like`` has the structure of ``run``'s result)."""

        def cond(c):
            return (~c[1]) & (c[2] <= self.max_backtrack)

        def body(c):
            res, _, nb = c
            L = jnp.where(nb == 0, first_L, L_of(res) * self.gamma_u)
            res, ok = run(L)
            return res, ok, nb + 1

        return lax.while_loop(cond, body, (like, jnp.array(False), jnp.zeros((), jnp.int32)))

    def _maybe_restart(self, model, geom, sigma, lam2, old, new):
        if not self._restarting(model):
            return new
        do = new.fx > old.fx
        new = eqx.tree_at(lambda t: t.restarts, new, new.restarts + do.astype(jnp.int32))
        fresh = self._restarted(model, geom, sigma, lam2, new)
        return jax.tree_util.tree_map(lambda a, b: jnp.where(do, a, b), fresh, new)

    # ------------------------------------------------------------------ outputs
    def refine(self, problem, s: AGMState):
        """Run on a dual: the reported primal ``best`` becomes the better (in the exact primal
        objective) of the previous ``best`` and the model's candidates at the current average
        ``abar`` -- :meth:`BiasSVM.refine_primal <jaxprox.BiasSVM.refine_primal>` adds an
        active-set polish of it -- or simply ``abar`` (the default
        :meth:`~jaxprox.problems.base.AGMModel.refine_primal`). Only the reported point changes;
        the iteration does not see it. The dual point reported with ``best`` (``dbest``) is the
        iterate ``x``, or the model's exact dual point of a polished ``best``."""
        if not s.dual_run:
            return s
        model = as_agm_model(problem)
        best, jbest, dbest = model.refine_primal(s.abar, s.x, s.best, s.jbest, s.dbest, s.checks)
        return eqx.tree_at(lambda t: (t.best, t.jbest, t.dbest, t.checks), s, (best, jbest, dbest, s.checks + 1))

    def certificate(self, problem, s: AGMState):
        """The model's certificate at the reported pair: a refined primal comes with its exact
        value and its dual point (kept by :meth:`refine`), a further lower bound beside ``x``'s."""
        model = as_agm_model(problem)
        w = s.best if s.dual_run else s.abar
        if s.dual_run and model.has_primal_refinement:
            return model.certificate_L(s.x, s.ax, w, s.L, prim=s.jbest, dual=s.dbest)
        return model.certificate_L(s.x, s.ax, w, s.L)

    def params(self, s: AGMState):
        return s.x

    def dual(self, s: AGMState):
        return s.abar

    def solution(self, s: AGMState):
        # primal run: x (the dual average is reported, not differentiated); dual run: the pair
        # (alpha, recovered w) of the last check, both roots of the model's residual
        return AGMSolution(s.dbest, s.best, True) if s.dual_run else s.x

    def residual(self, problem, z):
        r = as_agm_model(problem).residual(z)
        return AGMSolution(r[0], r[1], True) if isinstance(z, AGMSolution) else r

    def derivative_gap(self, problem):
        """A run on a dual model reports the exact primal polished on its active set; its
        derivative comes from the active-set KKT system (:meth:`BiasSVM.active_set_residual
        <jaxprox.BiasSVM.active_set_residual>`, :meth:`SVMDualModel.residual`), exact where the
        active sets are locally constant. Dual runs without that system (``BiasSVM(polish=False)``,
        more than ``POLISH_MAX_D`` features, the duals of ERLPBoost and F1SVM) are refused: the
        projected-gradient residual of the dual does not give the reported primal's derivative
        (``tests/test_agm.py``), nor does a smoothed dual (``mu > 0``), whose reported primal is
        not the solution of the KKT system."""
        model = as_agm_model(problem)
        if model.dual_run and not model.kkt_exact:
            return ("AGM on this dual model reports a primal recovered from the dual whose derivative is "
                    "not available (it needs polish=True, mu = 0 and at most POLISH_MAX_D features); "
                    "differentiate a primal run (space='primal', mu > 0) or use PDProx / SDCA")
        return None

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
