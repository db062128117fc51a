"""FISTA: accelerated proximal gradient with backtracking (Beck & Teboulle 2009).

For ``min_w f(w) + h(w)`` with ``f`` the smooth risk ``(1/n) sum_i l(a_i^T w)`` and ``h`` a
penalty with a prox (and/or a constraint), one step is

    x_{k+1} = prox_{h / L}(y_k - grad f(y_k) / L)         (L doubled until the upper bound
                                                           f(x) <= f(y) + <g, x-y> + L/2||x-y||^2 holds)
    t_{k+1} = (1 + sqrt(1 + 4 t_k^2)) / 2
    y_{k+1} = x_{k+1} + (t_k - 1)/t_{k+1} (x_{k+1} - x_k)

with the gradient-based adaptive restart of O'Donoghue & Candes (2015): momentum is reset when
``<y_k - x_{k+1}, x_{k+1} - x_k> > 0``. Margins ``A x`` and ``A y`` are carried in the state so
that an iteration costs one ``rmv`` and one ``mv`` per backtracking trial.

Precision: the step's products run at ``jax.default_matmul_precision("highest")`` (true float32
on GPUs, whose default for float32 is TF32 with a 10-bit mantissa, and on TPUs, whose default is
one bfloat16 pass): with TF32 the gradient carries ~1e-3 relative noise and a float32 solve cannot
certify better than that. The certificate follows the ERM precision policy
(:mod:`jaxprox.certificates`, ``docs/precision.md``).
"""
from __future__ import annotations

import dataclasses

import equinox as eqx
import jax
import jax.numpy as jnp
from jax import lax

from ..certificates import at_some_checks, corrected_dual_value, rounding_slack, support_correction_columns
from ..solver import Solver
from ..operators import linear_at
from .. import capabilities as cap


def momentum(t, y, x_new, x, reset: bool = True):
    """FISTA's extrapolation ``(beta, t_new)`` for ``y_new = x_new + beta (x_new - x)``:
    ``t_new = (1 + sqrt(1 + 4 t^2)) / 2``, ``beta = (t - 1) / t_new``; with ``reset`` (O'Donoghue
    & Candes 2015) momentum is reset (``beta = 0``, ``t_new = 1``) when
    ``<y - x_new, x_new - x> > 0``."""
    t_new = 0.5 * (1.0 + jnp.sqrt(1.0 + 4.0 * t * t))
    beta = (t - 1.0) / t_new
    if reset:
        reset = jnp.vdot(y - x_new, x_new - x) > 0
        beta = jnp.where(reset, 0.0, beta)
        t_new = jnp.where(reset, 1.0, t_new)
    return beta, t_new


class FISTAState(eqx.Module):
    x: jax.Array
    y: jax.Array
    Ax: jax.Array
    Ay: jax.Array
    t: jax.Array
    L: jax.Array
    trials: jax.Array
    k: jax.Array  # steps taken (the checks that also score the support-corrected dual point)


class FISTA(Solver):
    """Accelerated proximal gradient with backtracking and adaptive restart.

    Args:
        L0: initial Lipschitz estimate (default: ``rho ||A||^2 / n`` from ``A.spectral_norm_sq()``; along a
            path :func:`jaxprox.solve_path` computes it once, :meth:`hoist`).
        decrease: factor (<= 1) applied to L before each backtracking search, so that the step
            follows the local curvature. 1 (default) keeps L monotone. 0.9 halves the steps of an
            l1-logistic path to 1e-6 (``benchmarks/results/paths.md``), but stalls when asked for
            gaps near machine precision (~1e-12 relative): the sufficient-decrease test is then
            decided by rounding, L shrinks without bound and the steps overshoot.
        momentum_reset: reset the momentum by the gradient-based adaptive restart test
            (O'Donoghue & Candes 2015); a momentum reset, not a restart of the run.
        max_backtrack: cap on doublings per step (static). ``0`` disables backtracking (then
            ``L0`` must be an upper bound; the default estimate is), which makes the step free of
            inner loops, as ``adjoint="unrolled"`` (reverse mode through the iterations) requires.
        max_steps: iterations; default ``None``: from the size of ``A``, 10,000 on large data to
            200,000 on small (``iteration_range``, :func:`jaxprox.defaults.iteration_budget`).
    """

    public = True  # a public solver (jp.FISTA) beside the baselines: jaxprox.capabilities
    requires = (cap.ERM_PROBLEM, cap.SMOOTH_LOSS, cap.PROX)
    option_ranges = {"L0": "> 0", "decrease": "(0, 1]", "max_backtrack": ">= 0"}
    rescales = True
    derived = ("L_est",)

    L0: float | jax.Array | None = None
    L_est: jax.Array | None = None
    decrease: float = eqx.field(static=True, default=1.0)
    momentum_reset: bool = eqx.field(static=True, default=True)
    max_backtrack: int = eqx.field(static=True, default=40)
    max_steps: int | None = eqx.field(static=True, default=None, kw_only=True)
    iteration_range = (10_000, 200_000)  # max_steps=None: jaxprox.defaults.iteration_budget

    def __check_init__(self):
        if self.decrease < 1.0 and self.max_backtrack == 0:
            raise ValueError("decrease < 1 needs the backtracking search (max_backtrack > 0): without it "
                             "L shrinks every step and the steps overshoot (the run diverges)")

    def hoist(self, problem):
        """This solver with ``L_est``, the risk's smoothness ``rho ||A||^2 / n`` (power iteration),
        computed once (it does not depend on lam); unused when ``L0`` is given."""
        if self.L0 is not None or self.L_est is not None:
            return self
        return eqx.tree_at(lambda s: s.L_est, self, problem.smoothness(), is_leaf=lambda x: x is None)

    def lockstep(self, problem):
        """Lanes in lock-step: the step ``1/L`` with ``L`` 1.02 times the hoisted smoothness
        estimate ``rho ||A||^2 / n`` (the same for every lambda) and no backtracking loop, whose trip
        count would differ between lanes. With a user ``L0``, or ``decrease < 1`` (which needs the search),
        the solver is kept as is."""
        if self.L0 is not None or self.decrease != 1.0 or self.max_backtrack == 0:
            return self
        L = self.L_est if self.L_est is not None else problem.smoothness()
        # the power-iteration estimate converges from below: 2% above it as the fixed bound
        return dataclasses.replace(self, max_backtrack=0, L_est=1.02 * L)

    def init(self, problem, init=None):
        x = problem.zeros() if init is None else jnp.asarray(init, problem.A.dtype)
        x = problem.prox(x, 0.0) if problem.constraint is not None else x
        Ax = linear_at(problem.A.mv, x, init is None and problem.constraint is None)
        L = self.L0 if self.L0 is not None else self.L_est if self.L_est is not None else problem.smoothness()
        L = jnp.asarray(L, x.dtype)
        L = jnp.maximum(L, jnp.finfo(x.dtype).tiny)
        return FISTAState(x, x, Ax, Ax, jnp.ones((), x.dtype), L, jnp.zeros((), jnp.int32), jnp.zeros((), jnp.int32))

    def step(self, problem, s: FISTAState) -> FISTAState:
        with jax.default_matmul_precision("highest"):
            return self._step(problem, s)

    def _step(self, problem, s: FISTAState) -> FISTAState:
        loss, yl, n = problem.loss, problem.y, problem.n
        fy = loss.risk(s.Ay, yl)
        rounding = rounding_slack(s.x.dtype, 1e-12, 64)  # the sufficient-decrease test's slack
        g = problem.A.rmv(loss.grad(s.Ay, yl)) / n

        def trial(L):
            x = problem.prox(s.y - g / L, 1.0 / L)
            Ax = problem.A.mv(x)
            d = x - s.y
            gap = loss.risk(Ax, yl) - fy - jnp.vdot(g, d) - 0.5 * L * jnp.vdot(d, d)
            return x, Ax, gap <= rounding * (1.0 + jnp.abs(fy))

        L = s.L * self.decrease
        if self.max_backtrack == 0:  # static: a loop-free, unrollable step
            x, Ax, _ = trial(L)
            nb = jnp.zeros((), jnp.int32)
        else:  # do-while: the trial at L first, then doublings until sufficient decrease
            def body(c):
                L = jnp.where(c[4] < 0, c[0], 2.0 * c[0])
                return (L, *trial(L), c[4] + 1)

            x0 = jnp.zeros_like(s.x)
            L, x, Ax, _, nb = lax.while_loop(lambda c: (~c[3]) & (c[4] < self.max_backtrack), body,
                                             (L, x0, s.Ax, jnp.array(False), jnp.array(-1, jnp.int32)))
        beta, t_new = momentum(s.t, s.y, x, s.x, self.momentum_reset)
        y = x + beta * (x - s.x)
        Ay = Ax + beta * (Ax - s.Ax)
        return FISTAState(x, y, Ax, Ay, t_new, L, s.trials + nb, s.k + 1)

    def certificate(self, problem, s: FISTAState):
        """:meth:`ERM.certificate <jaxprox.ERM.certificate>` at ``x``; for a smooth loss with an l1
        penalty below float64 also, at every :data:`~jaxprox.certificates.SUPPORT_DUAL_CHECKS`-th
        check, the dual point corrected on the support of ``x``
        (:func:`jaxprox.certificates.support_corrected_dual`)."""
        p, d, _ = problem.certificate(s.x)
        if support_correction_columns(problem):  # s.Ax = A x exactly (recomputed at each step)
            corrected = lambda: corrected_dual_value(problem, s.x, s.Ax)  # noqa: E731
            d = jnp.maximum(d, at_some_checks(s.k, self.check_every, corrected, d))
        return p, d, p - d

    def params(self, s: FISTAState):
        return s.x
