"""Plain SGD with a decaying step, the baseline of the APPA paper §5.2:

    w <- prox_{eta_t h}(w - eta_t l'(a_i^T w, y_i) a_i),     eta_t = eta0 / sqrt(t),  t = 1, 2, ...

``l'`` is the per-sample (un-averaged) loss derivative, an unbiased estimate of the risk gradient
of ``(1/n) sum_i l(a_i^T w)``; ``h`` is the problem's penalty (its prox; ``SquaredL2`` gives the
usual shrinkage). In the paper ``eta0`` is the swept parameter "lambda". One ``step`` = one epoch of
``n`` stochastic steps (a ``lax.scan`` over indices drawn up front from an explicit PRNG key).
"""
from __future__ import annotations

import equinox as eqx
import jax
import jax.numpy as jnp
from jax import lax

from .. import capabilities as cap
from ..base import as_leaf
from ..components.sampling import Sampling, Uniform, as_sampling
from ..certificates import outer_certificate
from ..solver import Solver


class SGDState(eqx.Module):
    w: jax.Array
    t: jax.Array      # stochastic steps taken so far
    key: jax.Array


class SGD(Solver):
    """Stochastic (proximal) gradient descent with step ``step0 / sqrt(t)`` (the APPA paper §5.2).

    Certificate: :func:`jaxprox.certificates.suboptimality_bound` (duality gap for a ``SquaredL2``
    penalty with ``lam > 0``, curvature bound for un-regularised squared / logistic losses).

    Args:
        step0: the first step ``eta_1`` (array leaf).
        seed: PRNG seed (same seed, same run).
        sampling: ``Uniform()`` (default, i.i.d.) or ``Permutation()`` (:mod:`jaxprox.sampling`).
    """

    requires = (cap.ERM_PROBLEM, cap.SMOOTH_LOSS, cap.PROX)

    step0: jax.Array = eqx.field(default=1.0, converter=lambda v: as_leaf(v, "step0"))
    seed: int = eqx.field(static=True, default=0)
    sampling: Sampling = eqx.field(static=True, default=Uniform(), converter=as_sampling)
    max_steps: int = eqx.field(static=True, default=200, kw_only=True)
    check_every: int = eqx.field(static=True, default=1, kw_only=True)

    def init(self, problem, init=None):
        if not problem.loss.smooth:
            raise ValueError(f"SGD here needs a smooth loss; {type(problem.loss).__name__} is not")
        w = problem.zeros() if init is None else jnp.asarray(init, problem.A.dtype)
        return SGDState(w, jnp.zeros((), problem.A.dtype), jax.random.PRNGKey(self.seed))

    def step(self, problem, s):
        A, yl, loss, n = problem.A, problem.y, problem.loss, problem.n
        key, sub = jax.random.split(s.key)
        idx = self.sampling.draw(sub, n)[0]
        step0 = jnp.asarray(self.step0, A.dtype)

        def body(c, i):
            w, t = c
            t = t + 1.0
            eta = step0 / jnp.sqrt(t)
            row = A.rows(i[None])
            gi = loss.grad(row.mv(w)[0], yl[i])
            w = problem.prox(row.rmv_add(jnp.reshape(-eta * gi, (1,)), w), eta)
            return (w, t), None

        (w, t), _ = lax.scan(body, (s.w, s.t), idx)
        return SGDState(w, t, key)

    def certificate(self, problem, s):
        if problem.penalty is not None and not problem.penalty.quadratic:
            return problem.certificate(s.w)
        return outer_certificate(problem, s.w)

    def params(self, s):
        return s.w
