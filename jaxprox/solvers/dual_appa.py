"""Dual APPA (Frostig, Ge, Kakade and Sidford, "Un-regularizing: approximate proximal point and
faster stochastic algorithms for empirical risk minimization", Algorithm 3 with the practical
version of §5.1): ``u_0 = l'(A x_0)`` once, then per stage ``inner_epochs`` SDCA epochs
(:class:`~jaxprox.solvers.sdca.SDCAEpochs`) on the dual of the proximal sub-problem ``f_{s,lam}``
(:mod:`jaxprox.components.proximal_point`) warm-started at the previous ``u``; the stage's iterate
is ``x = w``; re-centring is O(d): ``w <- x + (lam / Lam)(x - s)`` (``= 2x - s`` when
``lam0 = 0``), ``s <- x``.

Safeguard not in the paper: the centre moves only when the stage does not increase
``f_{s,lam}`` over ``F(s)``, so a run never ends above its starting objective.
"""
from __future__ import annotations

import equinox as eqx
import jax
import jax.numpy as jnp

from .. import capabilities as cap
from ..base import as_leaf
from ..components.epochs import EpochBudget
from ..components.proximal_point import proximal_objective, proximal_weight, sdca_auto_rule
from ..components.sampling import Auto, Sampling, as_sampling
from ..certificates import outer_certificate, ridge_strength
from ..solver import Solver
from ..operators import linear_at
from .sdca import SDCA, DualPair, SDCAEpochs, report_best


class DualAPPAState(eqx.Module):
    s: jax.Array   # centre of the current stage (= x_{t})
    w: jax.Array   # = c - A^T u/(n Lam), the primal point of the running dual (kept current)
    u: jax.Array   # dual variables (warm-started across stages)
    key: jax.Array
    stage: jax.Array
    Fs: jax.Array  # F(s), the objective at the centre
    x: jax.Array   # the reported point: s, or for the plain SVM the best of s and its polishes (refine)
    Px: jax.Array  # F(x)
    ux: jax.Array  # the dual point reported with x: u, or the polish's own
    pair: bool = eqx.field(static=True, default=False)  # differentiated as (x, ux): a non-smooth loss


class DualAPPA(DualPair, SDCAEpochs, EpochBudget, Solver):
    """Dual APPA (Algorithm 3) in the practical form of §5.1 with SDCA as the dual
    oracle: one primal-to-dual map ``u = l'(A x_0)`` at the start, then per ``step``
    ``inner_epochs`` SDCA epochs on the dual of ``f_{s,lam}`` warm-started at the previous duals,
    ``x = w`` (``= x_hat_{s,lam}(u)``), and the O(d) re-centring

        w <- x + (lam / Lam)(x - s)     (= 2x - s when lam0 = 0),      s <- x,

    which keeps the invariant ``w = c - A^T u/(n Lam)`` for the new centre ``c = lam x / Lam``.
    Works for squared, logistic and smoothed-hinge losses (and any loss with ``prox_conjugate``,
    e.g. the hinge), un-regularised or with a ``SquaredL2(lam0)`` penalty.

    Acceptance test (not in the paper; one extra pass per step): the stage is accepted, and the
    centre moves, only if the oracle's output does not increase the sub-problem objective over its
    start, ``f_{s,lam}(x) <= f_{s,lam}(s) = F(s)`` (Def. 2.1 with ``c >= 1``). Otherwise the centre
    stays and the next step continues SDCA on the same dual, which converges, so a rejected stage
    is a stage given more inner accuracy (the paper's ``sigma``, adapted to the data). Hence
    ``F(s)`` never increases: a run never ends above its start, even where one epoch's dual is
    poor (badly scaled columns), and the dual-to-primal map's amplification of the dual error
    (Lemma B.1) cannot push the centre away.

    Args:
        prox_lam: proximal weight ``lam`` (array leaf); default ``None``: ``L_max / n``
            (:func:`default_prox_lam`, Corollary 3.2's ``kappa_lam = 1``).
        inner_epochs: SDCA epochs per step (static; the paper uses 1).
        seed, sampling, newton_steps, batch: as in :class:`SDCA` (``batch='auto'``: sequential
            epochs on a CPU, mini-batch epochs on an accelerator, :class:`SDCAEpochs`).
    One ``step`` = ``inner_epochs`` SDCA epochs (data passes) plus the acceptance test;
    ``max_steps`` counts steps (default ``None``: :func:`epoch_budget` of ``inner_epochs`` epochs
    per step, at least 200), each ``inner_epochs + 1`` passes over the data (one for the
    acceptance test).
    Certificate: at the reported ``x`` (the last accepted centre ``s``; for the plain SVM the best of
    it and its active-set polishes, :meth:`refine`), the smaller of :func:`suboptimality_bound` and
    the duality gap ``P(x) - D`` with the running duals (and the polish's dual point)
    (:meth:`certificate`).

    First-call cost: an outer stage traces a whole SDCA epoch (a scan over the samples with a
    Newton solve per coordinate for the logistic loss; its permutation and the next key come from
    one counter hash and a sort, :func:`permutation_and_key`, and with the default ``prox_lam`` no
    importance sample is drawn, :func:`sdca_auto_rule`) and the certificate's eigen-decomposition
    (a LAPACK call: nothing for XLA to compile); the persistent compilation cache serves later processes
    (``benchmarks/results/latency.md``).
    """

    unscaled_advice = ("Dual APPA's SDCA ascends the dual, whose conditioning does not change with the units "
                       "of w (jp.solve cannot rescale it): standardise the features, or use jp.APPA (smooth "
                       "losses) or jp.PDProx (the hinge), which rescale.")
    requires = (cap.ERM_PROBLEM, cap.RIDGE_OR_NONE, cap.NO_CONSTRAINT)
    option_ranges = {"inner_epochs": ">= 1", "newton_steps": ">= 1"}
    step_unit = "stages"

    prox_lam: jax.Array | None = eqx.field(default=None, converter=lambda v: None if v is None else as_leaf(v, "prox_lam"))
    inner_epochs: int = eqx.field(static=True, default=1)
    seed: int = eqx.field(static=True, default=0)
    sampling: Sampling = eqx.field(static=True, default=Auto(), converter=as_sampling)
    newton_steps: int = eqx.field(static=True, default=15)
    batch: int | str = eqx.field(static=True, default="auto")
    eso_sigma: jax.Array | None = None
    max_steps: int | None = eqx.field(static=True, default=None, kw_only=True)
    check_every: int = eqx.field(static=True, default=1, kw_only=True)

    @property
    def epochs_per_step(self) -> int:
        """``inner_epochs`` (:class:`EpochBudget`)."""
        return self.inner_epochs

    def prepare(self, problem):
        """Fixes ``batch`` from the data's device (:class:`SDCAEpochs`)."""
        return self._resolved(problem)

    def auto_rule(self) -> Sampling | None:
        """``sampling=Auto()`` with the default ``prox_lam`` is a permutation (:func:`sdca_auto_rule`)."""
        return sdca_auto_rule(self.prox_lam)

    def init(self, problem, init=None):
        lam0 = ridge_strength(problem)
        x = problem.zeros() if init is None else jnp.asarray(init, problem.A.dtype)
        lam = proximal_weight(self, problem)
        Lam = lam0 + lam
        Ax = linear_at(problem.A.mv, x, init is None)
        u = problem.loss.dual_point(Ax, problem.y)   # y^(0) = y_hat(x^(0))
        w = lam * x / Lam - problem.A.rmv(u) / (problem.n * Lam)
        Fx = problem._primal_at(x, Ax)
        return DualAPPAState(x, w, u, jax.random.PRNGKey(self.seed), jnp.zeros((), jnp.int32),
                             Fx, x, Fx, u, not problem.loss.smooth)

    def step(self, problem, st):
        lam = proximal_weight(self, problem)
        Lam = ridge_strength(problem) + lam
        key = st.key
        u, w = st.u, st.w
        for _ in range(self.inner_epochs):
            u, w, key = self.epoch(problem, u, w, Lam, key)
        x = w
        Fx, fx = proximal_objective(problem, x, st.s, lam)
        accept = fx <= st.Fs                      # acceptance test (not in the paper)
        w = jnp.where(accept, x + (lam / Lam) * (x - st.s), w)   # O(d) re-centring (§5.1)
        return DualAPPAState(jnp.where(accept, x, st.s), w, u, key, st.stage + accept.astype(jnp.int32),
                             jnp.where(accept, Fx, st.Fs), st.x, st.Px, st.ux, st.pair)

    def refine(self, problem, st):
        """The point to report: the centre ``s`` with the running duals ``u``; for the plain SVM
        (:meth:`SDCA.refine`'s rule) the best, in ``F``, of the point reported so far, ``s`` and the
        active-set polish of ``s`` (:func:`jaxprox.problems.bias_svm.plain_svm_polish`; not in the
        paper), each with its dual point; for a smooth loss (:meth:`SDCA._newton_polishes`) the best
        of the point reported so far, ``s`` and a damped Newton step from the better
        (:func:`newton_polish`), with the running duals. The iteration does not see it."""
        if not (SDCA._polishes(problem) or SDCA._newton_polishes(problem)):
            return eqx.tree_at(lambda t: (t.x, t.Px, t.ux), st, (st.s, st.Fs, st.u))
        return eqx.tree_at(lambda t: (t.x, t.Px, t.ux), st,
                           report_best(problem, (st.x, st.Px, st.ux), (st.s, st.Fs, st.u), st.stage))

    def certificate(self, problem, st):
        """:func:`suboptimality_bound` at the reported ``x`` and, with a penalty, also ``P(x) - D``
        with ``D`` the dual value of the running duals ``u`` (in ``dom l*``, so ``D(u)`` is a lower
        bound on ``P*`` by weak duality; near the optimum ``s ~ x*`` the sub-problem's optimality
        condition ``A^T u / n + lam0 x + lam (x - s) = 0`` is the problem's own, so ``u`` is nearly
        dual optimal -- the certificate that a non-smooth loss (hinge) needs), or of the polish's
        dual point where that is larger."""
        duals = () if problem.penalty is None else (st.u, st.ux) if SDCA._polishes(problem) else (st.u,)
        return outer_certificate(problem, st.x, duals=duals)

    def params(self, st):
        return st.x

    def dual(self, st):
        return st.ux
