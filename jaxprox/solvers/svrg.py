"""Proximal SVRG (Johnson & Zhang, "Accelerating stochastic gradient descent using predictive
variance reduction"; proximal form of Xiao & Zhang, "A proximal stochastic gradient method with
progressive variance reduction"): per epoch a snapshot ``x~`` with its full risk gradient
``mu~ = A^T l'(A x~) / n`` (the scalars ``l'(a_i^T x~)`` are cached), then ``n`` steps

    x <- prox_{eta h}( x - eta [ (l'(a_i^T x) - l'(a_i^T x~)) a_i + mu~ ] ),     Option I: x~ <- x_n,

with ``h`` the penalty (stand-alone) or ``(Lam/2)||. - c||^2`` (the inner solver of APPA).
"""
from __future__ import annotations

import equinox as eqx
import jax
import jax.numpy as jnp
from jax import lax

from .. import capabilities as cap
from ..components.epochs import EpochBudget
from ..components.proximal_point import ProximalInner, quad_prox
from ..components.sampling import Auto, Sampling, as_sampling, sampling_law, smoothness_or_one
from ..certificates import outer_certificate
from ..problems.validation import check_smooth
from ..solver import Solver


def svrg_epoch(problem, x, eta, prox, idx, q=None):
    """One SVRG epoch (snapshot at ``x``, Option I) with proximal steps ``prox(v, eta)``; with a
    sampling law ``q`` (indices drawn from it) the variance-reduced gradient is reweighted,
    ``(l'(a_i^T x) - l'(a_i^T x~)) a_i / (n q_i) + mu~`` (Xiao & Zhang 2014, Prox-SVRG), unbiased."""
    A, yl, loss, n = problem.A, problem.y, problem.loss, problem.n
    g_snap = loss.grad(A.mv(x), yl)  # cached scalars l'(a_i^T x~)
    mu_snap = A.rmv(g_snap) / n
    weight = jnp.ones((n,), x.dtype) if q is None else 1.0 / (n * q)

    def body(x, i):
        row = A.rows(i[None])
        z = row.mv(x)[0]
        diff = (loss.grad(z, yl[i]) - g_snap[i]) * weight[i]
        v = row.rmv_add(jnp.reshape(-eta * diff, (1,) + jnp.shape(diff)), x - eta * mu_snap)
        return prox(v, eta), None

    x, _ = lax.scan(body, x, idx)
    return x


def svrg_epochs(problem, x, step_size, prox, keys, sampling):
    """``len(keys)`` SVRG epochs with indices from ``sampling`` (a :mod:`jaxprox.sampling` object; Prox-SVRG's law
    :func:`sampling_law` with ``shift = L_avg``) and step ``eta = 1 / (3 L_Q)``,
    ``L_Q = max_i L_i / (n q_i)`` (``= L_max`` for uniform sampling), unless ``step_size`` is given."""
    L = smoothness_or_one(problem.loss, problem.A.dtype) * problem.A.row_norms_sq()
    law = sampling_law(problem, jnp.mean(L))
    for k in keys:
        idx, q = sampling.draw(k, problem.n, law)
        LQ = jnp.max(L) if q is None else jnp.max(L / (problem.n * q))
        eta = 1.0 / (3.0 * LQ) if step_size is None else jnp.asarray(step_size, problem.A.dtype)
        x = svrg_epoch(problem, x, eta, prox, idx, q)
    return x


class SVRGState(eqx.Module):
    x: jax.Array
    key: jax.Array
    epoch: jax.Array


class SVRG(ProximalInner, EpochBudget, Solver):
    """Proximal SVRG (Johnson & Zhang 2013; Xiao & Zhang 2014), Option I, epoch length ``n``:
    one ``step`` = a full risk gradient at the snapshot plus ``n`` variance-reduced proximal steps

        x <- prox_{eta lam R}(x - eta [(l'(a_i^T x) - l'(a_i^T x~)) a_i + grad_risk(x~)]).

    Needs a smooth loss; any penalty with a prox (``SquaredL2`` for the paper's setting).
    Certificate: ``problem.certificate(x)`` (duality gap from the dual point ``l'(A x)``).

    Args:
        step_size: ``eta`` (default ``1/(3 L_Q)``, ``L_Q = max_i L_i / (n q_i)`` for the sampling
            law ``q``, ``L_i = smoothness(l) ||a_i||^2``: ``L_max`` for uniform sampling, at most
            ``2 L_avg`` for Prox-SVRG's importance law).
        seed: as in :class:`SDCA`.
        sampling: a :mod:`jaxprox.sampling` object: ``Auto()`` (default: Prox-SVRG's law
            ``q_i = (L_i + L_avg) / (2 n L_avg)``, :func:`sampling_law`, when ``L_max >= 3 L_avg``,
            otherwise a fresh permutation), ``Importance()``, ``Permutation()`` or ``Uniform()``.
    One ``step`` = one epoch (a full gradient pass plus ``n`` stochastic steps: two data passes);
    ``max_steps`` counts epochs (default ``None``: :func:`epoch_budget`, from 200 epochs on large
    data to 20,000 on small).
    """

    requires = (cap.ERM_PROBLEM, cap.SMOOTH_LOSS, cap.PROX)
    option_ranges = {"step_size": "> 0"}
    rescales = True
    step_unit = "epochs"

    step_size: float | None = eqx.field(default=None)
    seed: int = eqx.field(static=True, default=0)
    sampling: Sampling = eqx.field(static=True, default=Auto(), converter=as_sampling)
    max_steps: int | None = eqx.field(static=True, default=None, kw_only=True)
    check_every: int = eqx.field(static=True, default=1, kw_only=True)

    def init(self, problem, init=None):
        check_smooth(problem, "SVRG")
        x = problem.zeros() if init is None else jnp.asarray(init, problem.A.dtype)
        return SVRGState(x, jax.random.PRNGKey(self.seed), jnp.zeros((), jnp.int32))

    def step(self, problem, s):
        key, sub = jax.random.split(s.key)
        x = svrg_epochs(problem, s.x, self.step_size, problem.prox, [sub], self.sampling)
        return SVRGState(x, key, s.epoch + 1)

    def certificate(self, problem, s):
        if problem.penalty is None:
            return outer_certificate(problem, s.x)
        return problem.certificate(s.x)

    def params(self, s):
        return s.x

    def proximal_epochs(self, problem, start, Lam, c, key, epochs: int, rule: Sampling | None = None):
        """APPA's sub-problem ``(1/n) sum_i l(a_i^T w) + (Lam/2)||w - c||^2`` by ``epochs`` of this
        solver's own epochs (:func:`svrg_epochs`) from ``start``, with the prox of the quadratic
        (:func:`~jaxprox.components.proximal_point.quad_prox`) and this solver's ``step_size`` and
        ``sampling`` (``rule`` concerns SDCA's law, not Prox-SVRG's: unused)."""
        keys = jax.random.split(key, epochs)
        return svrg_epochs(problem, start, self.step_size, quad_prox(Lam, c), keys, self.sampling)
