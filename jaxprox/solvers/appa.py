"""APPA and accelerated APPA (Frostig, Ge, Kakade and Sidford, "Un-regularizing: approximate
proximal point and faster stochastic algorithms for empirical risk minimization", Algorithms 1
and 2) around an inner solver's own epochs (SVRG or SDCA).

Scaling: the ERM objective is the *average*

    F(w) = (1/n) sum_i l(a_i^T w, y_i)  [+ (lam0/2) ||w||^2 if the problem has a SquaredL2 penalty],

i.e. the paper's ``phi_i = l(., y_i) / n``. Each outer iteration solves the proximal sub-problem
``f_{s,lam}`` of eq. (3) approximately, a ridge problem centred at ``c = lam s / Lam``
(:mod:`jaxprox.components.proximal_point`), with a few epochs of the inner solver
(:class:`~jaxprox.components.proximal_point.ProximalInner`: :class:`~jaxprox.solvers.svrg.SVRG`
or :class:`~jaxprox.solvers.sdca.SDCA`).

APPA (Algorithm 1): ``x_t = P(x_{t-1})`` with ``P`` a few inner epochs on ``f_{x_{t-1},lam}``,
started at the centre. Accelerated APPA (Algorithm 2) in its exact one-sequence momentum form:
``x_{t+1} = P(y_t)`` (centre ``y_t``, inner start ``x_t`` as in Lemma 3.5),
``y_{t+1} = x_{t+1} + beta (x_{t+1} - x_t)``, ``beta = (1 - rho^{-1/2})/(1 + rho^{-1/2})``,
``rho = (mu + 2 lam)/mu``; optionally with gradient-based adaptive restart.

Defaults from the data: ``prox_lam = 2 lam0 + L_max / n`` (Corollary 3.2 in the averaged scaling,
:func:`~jaxprox.components.proximal_point.default_prox_lam`); APPA runs Algorithm 2 with
``mu = lam0``; and a safeguard that is not in the paper: the oracle keeps its start when it would
increase ``f_{s,lam}``, so APPA never ends above its starting objective.

Certificate: :func:`~jaxprox.certificates.suboptimality_bound`, an honest bound on
``F(w) - F*``. Dual APPA (Algorithm 3) is in :mod:`jaxprox.solvers.dual_appa`.
"""
from __future__ import annotations

import equinox as eqx
import jax
import jax.numpy as jnp

from .. import capabilities as cap
from ..base import as_leaf
from ..components.epochs import EpochBudget
from ..components.proximal_point import ProximalInner, proximal_objective, proximal_weight, sdca_auto_rule
from ..certificates import outer_certificate, ridge_strength
from ..problems.validation import check_smooth
from ..solver import Solver
from .dual_appa import DualAPPA
from .sdca import SDCA
from .svrg import SVRG

__all__ = ["APPA", "APPAState", "DualAPPA", "SDCA", "SVRG", "as_inner"]


def as_inner(value) -> ProximalInner:
    """Checks APPA's ``inner=``: a solver object that runs its own epochs on the sub-problems
    (``SVRG(...)`` or ``SDCA(...)``); a string is refused with a ``TypeError`` that names it."""
    if isinstance(value, ProximalInner):
        return value
    if isinstance(value, str) and value.lower() in ("svrg", "sdca"):
        raise TypeError(f"inner={value!r} is no longer a string option: pass inner=jaxprox.{value.upper()}() "
                        f"(with its own options, e.g. jaxprox.{value.upper()}(sampling=...))")
    raise TypeError(f"inner must be a solver that runs on APPA's sub-problems (jaxprox.SVRG() or "
                    f"jaxprox.SDCA()), got {value!r}")


class APPAState(eqx.Module):
    x: jax.Array       # current iterate x_t
    y: jax.Array       # next centre (= x_t for Algorithm 1, momentum point for Algorithm 2)
    key: jax.Array
    outer: jax.Array
    restarts: jax.Array


class APPA(EpochBudget, Solver):
    """Approximate proximal point (Algorithm 1) and its accelerated form (Algorithm 2) for the
    un-regularised (``penalty=None``) or lightly regularised (``SquaredL2(lam0)``) smooth ERM.

    One ``step`` is one outer iteration: ``x_{t+1} = P(y_t)``, an approximate minimiser of
    ``f_{y_t,lam}(x) = F(x) + (lam/2)||x - y_t||^2`` from ``inner_epochs`` epochs of

    * ``inner=SVRG(...)``: SVRG's own epochs on ``f_{y_t,lam}`` (prox of the quadratic), started at
      the centre (Algorithm 1) or at ``x_t`` (Algorithm 2, Lemma 3.5), with the inner solver's
      ``step_size`` (default ``1/(3 L_Q)`` for its sampling law) and ``sampling``;
    * ``inner=SDCA(...)``: the dual wrapper of Theorem 2.3: ``u = l'(A x_start)``, SDCA's own epochs
      (sequential or mini-batch, its ``batch``, ``sampling`` and ``newton_steps``) on the dual of
      ``f_{y_t,lam}``, output ``x = c - A^T u/(n Lam)``
      (:meth:`~jaxprox.components.proximal_point.ProximalInner.proximal_epochs`).

    Either output is kept only if it does not increase ``f_{y_t,lam}`` over the start (safeguard,
    not in the paper; without it one SDCA epoch can increase F because the dual-to-primal map
    amplifies the dual error, Lemma B.1, and one SVRG epoch can overshoot on badly scaled data), so
    Algorithm 1 never increases F.

    Then ``y_{t+1} = x_{t+1}`` (Algorithm 1) or ``y_{t+1} = x_{t+1} + beta (x_{t+1} - x_t)`` with
    ``beta = (1 - rho^{-1/2}) / (1 + rho^{-1/2})``, ``rho = (mu + 2 lam)/mu`` (Algorithm 2, momentum
    form); ``momentum_reset=True`` zeroes the momentum when ``<y_t - x_{t+1}, x_{t+1} - x_t> > 0``
    (O'Donoghue & Candes), which keeps the method safe if ``mu`` is overestimated.

    Args:
        prox_lam: the proximal weight ``lam`` (array leaf); default ``None``: ``L_max / n``
            (:func:`default_prox_lam`, Corollary 3.2's ``kappa_lam = 1`` in the averaged scaling).
        inner: the inner solver, a :class:`~jaxprox.components.proximal_point.ProximalInner`:
            ``SVRG()`` (default) or ``SDCA()``, with its own options; its run options
            (``max_steps``, ``tol``, ...) are not used.
        accelerated: Algorithm 2 (default; Corollary 3.2's route to ``sqrt(kappa)``) or, with
            ``False``, Algorithm 1 (a descent method, but ``lam / mu`` outer iterations per e-fold).
        mu: strong-convexity modulus of ``F`` for Algorithm 2 (default ``lam0`` if positive, else
            ``prox_lam * 1e-3``); the certificate does not use it (it needs no assumption).
        inner_epochs: epochs of the inner solver per outer iteration (static; default 1 for
            SVRG, 3 for SDCA, whose dual-to-primal map needs a more accurate dual).
    One ``step`` = one outer iteration = ``inner_epochs`` inner epochs (an SVRG epoch reads the
    data twice, an SDCA epoch once, plus one pass for the primal-to-dual map) and the safeguard
    (two passes); ``max_steps`` counts outer iterations (default ``None``: :func:`epoch_budget` of
    ``inner_epochs`` epochs per iteration, at least 200).
    Certificate: :func:`suboptimality_bound` (honest bound on ``F(x) - F*``).
    """

    requires = (cap.ERM_PROBLEM, cap.SMOOTH_LOSS, cap.RIDGE_OR_NONE_OR_SCALED, cap.NO_CONSTRAINT)
    option_ranges = {"inner_epochs": ">= 1", "mu": "> 0"}
    step_unit = "stages"

    prox_lam: jax.Array | None = eqx.field(default=None, converter=lambda v: None if v is None else as_leaf(v, "prox_lam"))
    inner: ProximalInner = eqx.field(default_factory=SVRG, converter=as_inner)
    accelerated: bool = eqx.field(static=True, default=True)
    mu: jax.Array | None = eqx.field(default=None)
    inner_epochs: int | None = eqx.field(static=True, default=None)
    momentum_reset: bool = eqx.field(static=True, default=True)
    seed: int = eqx.field(static=True, default=0)
    max_steps: int | None = eqx.field(static=True, default=None, kw_only=True)
    check_every: int = eqx.field(static=True, default=1, kw_only=True)

    @property
    def epochs_per_step(self) -> int:
        """``inner_epochs``, or the inner solver's default: 1 for SVRG, 3 for SDCA."""
        return self.inner_epochs or self.inner.default_inner_epochs

    def prepare(self, problem):
        """The inner solver prepared for ``problem`` (e.g. SDCA's ``batch`` from the data's device)."""
        return eqx.tree_at(lambda s: s.inner, self, self.inner.inner_prepared(problem))

    def hoist(self, problem):
        """The inner solver's constants computed once before the loop (:meth:`Solver.hoist`)."""
        inner = self.inner.hoist(problem)
        return self if inner is self.inner else eqx.tree_at(lambda s: s.inner, self, inner)

    def init(self, problem, init=None):
        ridge_strength(problem, diagonal=self.rescales)  # SDCA's dual map needs the plain ridge
        check_smooth(problem, "APPA")
        x = problem.zeros() if init is None else jnp.asarray(init, problem.A.dtype)
        return APPAState(x, x, jax.random.PRNGKey(self.seed), jnp.zeros((), jnp.int32),
                         jnp.zeros((), jnp.int32))

    @property
    def rescales(self) -> bool:
        """The inner solver's: around SVRG (coordinate-wise inner prox) the column-rescaled ridge is
        solved as it is; SDCA's dual map needs the plain ridge (see
        :attr:`jaxprox.solver.Solver.rescales`)."""
        return self.inner.rescales

    def _mu(self, problem):
        if self.mu is not None:
            return jnp.asarray(self.mu, problem.A.dtype)
        lam0 = jnp.min(ridge_strength(problem, diagonal=True))  # the modulus of a (column-scaled) ridge
        return jnp.where(lam0 > 0, lam0, 1e-3 * proximal_weight(self, problem))

    def oracle(self, problem, center, start, key):
        """Approximate ``argmin_x f_{center,lam}(x)`` from ``start`` (Def. 2.1)."""
        lam = proximal_weight(self, problem)
        Lam = ridge_strength(problem, diagonal=self.rescales) + lam  # per coordinate after rescaling
        c = lam * center / Lam
        x = self.inner.proximal_epochs(problem, start, Lam, c, key, self.epochs_per_step,
                                       sdca_auto_rule(self.prox_lam))
        # Safeguard (one extra pass): keep the start if it is better for f_{center,lam}. The
        # dual-to-primal map can amplify the dual error by (n kappa_lam)^2 (Lemma B.1), and one
        # SVRG epoch from a start far from the sub-problem's minimiser can overshoot; with the
        # safeguard the oracle is monotone and Algorithm 1 a descent method.
        return jnp.where(proximal_objective(problem, x, center, lam)[1]
                         <= proximal_objective(problem, start, center, lam)[1], x, start)

    def step(self, problem, s):
        key, sub = jax.random.split(s.key)
        if not self.accelerated:
            x = self.oracle(problem, s.y, s.y, sub)
            return APPAState(x, x, key, s.outer + 1, s.restarts)
        lam = proximal_weight(self, problem)
        x = self.oracle(problem, s.y, s.x, sub)
        rho = (self._mu(problem) + 2.0 * lam) / self._mu(problem)
        e = rho ** -0.5
        beta = (1.0 - e) / (1.0 + e)
        restarts = s.restarts
        if self.momentum_reset:
            reset = jnp.vdot(s.y - x, x - s.x) > 0
            beta = jnp.where(reset, 0.0, beta)
            restarts = restarts + reset.astype(jnp.int32)
        y = x + beta * (x - s.x)
        return APPAState(x, y, key, s.outer + 1, restarts)

    def certificate(self, problem, s):
        return outer_certificate(problem, s.x)

    def params(self, s):
        return s.x
