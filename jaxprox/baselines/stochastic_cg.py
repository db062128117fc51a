"""Stochastic baselines of the PDBFW paper (001, §5, Table 1) for

    min_{x in C}  F(x) = (1/n) sum_i f_i(a_i^T x) + (mu/2) ||x||^2,   C = L1Ball(r) or TraceBall(r),

built as ``ERM(X, y, loss=<smooth>, penalty=SquaredL2(mu), constraint=L1Ball(r) | TraceBall(r))``.
The paper gives only names and citations; the algorithms below follow the cited papers, with the
simplifications stated in each docstring.

* :class:`ProjectedSVRG` (Johnson & Zhang 2013, proximal form of Xiao & Zhang 2014): one ``step`` is
  an epoch: the full risk gradient at the snapshot, then ``n`` variance-reduced steps
  ``x <- P_C((x - e v_i) / (1 + e mu))``, ``v_i = (f_i'(a_i^T x) - f_i'(a_i^T xs)) a_i + grad_risk(xs)``
  (the prox of ``(mu/2)||.||^2 + I_C``).
* :class:`SCGS` (Lan & Zhou 2016, "Conditional gradient sliding", stochastic CGS): one ``step`` is
  one outer iteration ``k``::

      z = (1 - g_k) y + g_k x,   G = mini-batch gradient of F at z (batch B_k)
      x = CndG(G, x, b_k, eta_k)                   (Frank-Wolfe on <G, u> + b_k/2 ||u - x||^2)
      y = (1 - g_k) y + g_k x

  with ``g_k = 3/(k+2)``, ``b_k = 4L/(k+2)``, ``eta_k = L D^2 / (k (k+1))`` (``D`` = diameter of
  ``C``) and the batch growing as ``B_k = min(n, b0 (k+1)^3)``, rounded up to a power of two (a
  ``lax.switch`` over the static sizes; the last one is the exact full gradient).
* :class:`STORC` (Hazan & Luo 2016, "Variance-reduced and projection-free stochastic optimization",
  the strongly convex case): one ``step`` is an epoch: the full gradient at the snapshot ``w``, then
  ``N = ceil(2 sqrt(6 L / mu))`` iterations of the CGS recursion above with ``g_k = 2/(k+1)``,
  ``b_k = 3L/k``, ``eta_k = 2 L D_t^2 / (N k)`` and the variance-reduced gradient
  ``G = grad F(w) + (1/m) sum_{i in batch} (f_i'(a_i^T z) - f_i'(a_i^T w)) a_i + mu (z - w)``.
  ``D_t^2 = min(D^2, 2 gap(w) / mu) >= ||w - x*||^2`` (``gap`` = Wolfe gap at the snapshot) plays
  the role of the theory's halving distance bound. Simplification: a fixed batch ``m`` (static)
  instead of the theory's growing ``m_k``.

``CndG`` (Lan & Zhou, procedure 1): Frank-Wolfe with exact line search on
``h(u) = <G, u> + (b/2)||u - x||^2`` over ``C``, stopped when the Wolfe gap
``<grad h(u), u - lmo(grad h(u))> <= eta`` or after ``max_inner`` iterations.

All three need a smooth loss and ``penalty=SquaredL2(mu)``; certificates are the Fenchel duality gap
of ``ERM.best_certificate``. ``L = beta ||A||_2^2 / n + mu`` (``A.spectral_norm_sq()``).
"""
from __future__ import annotations

import math

import equinox as eqx
import jax
import jax.numpy as jnp
from jax import lax

from ..solvers.svrg import svrg_epoch
from .frank_wolfe import ConstrainedBaseline, _grad, _lipschitz, _start


def _diameter_sq(problem):
    """``D^2 = (2 r)^2``: the squared Euclidean diameter of the l1 ball / the trace-norm ball."""
    return (2.0 * problem.constraint.radius) ** 2


def cndg(constraint, G, x, beta, eta, max_inner: int):
    """Lan & Zhou's CndG: approximately ``argmin_{u in C} <G, u> + (beta/2)||u - x||^2`` by
    Frank-Wolfe from ``u = x`` with exact line search; stops once the Wolfe gap is ``<= eta``."""

    def cond(c):
        _, gap, t = c
        return (gap > eta) & (t < max_inner)

    def body(c):
        u, _, t = c
        gh = G + beta * (u - x)
        v = constraint.lmo(gh)
        dv = v - u
        gap = -jnp.vdot(gh, dv)
        dd = jnp.vdot(dv, dv)
        a = jnp.clip(gap / jnp.where(dd > 0, beta * dd, 1.0), 0.0, 1.0)
        return u + a * dv, gap, t + 1

    u, _, _ = lax.while_loop(cond, body, (x, jnp.asarray(jnp.inf, x.dtype), jnp.zeros((), jnp.int32)))
    return u


def _batch_grad(problem, z, idx):
    """``(1/|idx|) sum_{i in idx} f_i'(a_i^T z) a_i`` (risk part only)."""
    rows = problem.A.rows(idx)
    g = problem.loss.grad(rows.mv(z), problem.y[idx])
    return rows.rmv(g) / idx.shape[0]


# ------------------------------------------------------------------------------------------------
class PSVRGState(eqx.Module):
    x: jax.Array
    key: jax.Array
    t: jax.Array


class ProjectedSVRG(ConstrainedBaseline):
    """Projected (proximal) SVRG over ``problem.constraint``; see the module docstring.

    Args:
        step_size: ``e`` (default ``1 / (3 L_max)``, ``L_max = beta max_i ||a_i||^2``).
        seed: PRNG seed of the uniform sampling.
        epoch_length: inner steps per epoch (default ``n``); shorter epochs suit constraints
            whose projection is expensive (a full SVD per inner step for the trace-norm ball).
    """

    step_size: float | None = None
    seed: int = eqx.field(static=True, default=0)
    epoch_length: int | None = eqx.field(static=True, default=None)
    max_steps: int = eqx.field(static=True, default=200, kw_only=True)
    check_every: int = eqx.field(static=True, default=1, kw_only=True)

    def init(self, problem, init=None):
        return PSVRGState(_start(problem, init), jax.random.PRNGKey(self.seed), jnp.zeros((), jnp.int32))

    def step(self, problem, st):
        mu = problem.penalty.lam
        if self.step_size is None:
            e = 1.0 / (3.0 * problem.loss.smoothness * jnp.max(problem.A.row_norms_sq()))
        else:
            e = jnp.asarray(self.step_size, st.x.dtype)
        key, sub = jax.random.split(st.key)
        m = problem.n if self.epoch_length is None else int(self.epoch_length)
        idx = jax.random.randint(sub, (m,), 0, problem.n, dtype=jnp.int32)
        prox = lambda v, eta: problem.constraint.project(v / (1.0 + eta * mu))  # noqa: E731
        return PSVRGState(svrg_epoch(problem, st.x, e, prox, idx), key, st.t + 1)


# ------------------------------------------------------------------------------------------------
class CGSState(eqx.Module):
    x: jax.Array
    y: jax.Array
    L: jax.Array
    key: jax.Array
    k: jax.Array


class _SlidingBase(ConstrainedBaseline):
    """Shared init of SCGS / STORC: ``x = y = `` a feasible start; the reported point is ``y``."""

    def init(self, problem, init=None):
        x = _start(problem, init)
        return CGSState(x, x, _lipschitz(problem), jax.random.PRNGKey(self.seed), jnp.zeros((), jnp.int32))

    def params(self, st):
        return st.y


class SCGS(_SlidingBase):
    """Stochastic conditional gradient sliding (Lan & Zhou 2016); see the module docstring.

    Args:
        batch0: ``b0`` in ``B_k = min(n, b0 (k+1)^3)``.
        max_inner: cap on the Frank-Wolfe iterations of one CndG call.
        seed: PRNG seed.
    """

    batch0: int = eqx.field(static=True, default=1)
    max_inner: int = eqx.field(static=True, default=1000)
    seed: int = eqx.field(static=True, default=0)

    def _sizes(self, n):
        sizes = [2**j for j in range(max(1, math.ceil(math.log2(n))))]
        return [b for b in sizes if b < n] + [n]

    def step(self, problem, st):
        n, mu = problem.n, problem.penalty.lam
        sizes = self._sizes(n)
        k = (st.k + 1).astype(st.x.dtype)
        gam, beta = 3.0 / (k + 2.0), 4.0 * st.L / (k + 2.0)
        eta = st.L * _diameter_sq(problem) / (k * (k + 1.0))
        z = (1.0 - gam) * st.y + gam * st.x
        key, sub = jax.random.split(st.key)
        B = jnp.minimum(self.batch0 * (k + 1.0) ** 3, n)
        j = jnp.searchsorted(jnp.asarray(sizes, st.x.dtype), B)  # smallest static size >= B

        def grad_b(b):
            if b == n:  # exact full gradient
                return lambda: problem.A.rmv(problem.loss.grad(problem.A.mv(z), problem.y)) / n
            return lambda: _batch_grad(problem, z, jax.random.randint(sub, (b,), 0, n, dtype=jnp.int32))

        G = lax.switch(j, [grad_b(b) for b in sizes]) + mu * z
        x = cndg(problem.constraint, G, st.x, beta, eta, self.max_inner)
        y = (1.0 - gam) * st.y + gam * x
        return CGSState(x, y, st.L, key, st.k + 1)


class STORC(_SlidingBase):
    """Stochastic variance-reduced conditional gradient sliding (Hazan & Luo 2016); see the
    module docstring.

    Args:
        batch: mini-batch size ``m`` of the variance-reduced gradients.
        max_inner: cap on the Frank-Wolfe iterations of one CndG call.
        max_epoch_iters: cap on ``N = ceil(2 sqrt(6 L / mu))``.
        seed: PRNG seed.
    """

    batch: int = eqx.field(static=True, default=64)
    max_inner: int = eqx.field(static=True, default=1000)
    max_epoch_iters: int = eqx.field(static=True, default=2000)
    seed: int = eqx.field(static=True, default=0)
    max_steps: int = eqx.field(static=True, default=500, kw_only=True)
    check_every: int = eqx.field(static=True, default=1, kw_only=True)

    def step(self, problem, st):
        n, mu, m = problem.n, problem.penalty.lam, min(self.batch, problem.n)
        w = st.y
        Gw = _grad(problem, problem.A.mv(w), w)  # full gradient at the snapshot
        fw = problem.loss.grad(problem.A.mv(w), problem.y)  # f_i'(a_i^T w), cached
        N = jnp.minimum(jnp.ceil(2.0 * jnp.sqrt(6.0 * st.L / mu)), self.max_epoch_iters).astype(jnp.int32)
        # D_t^2 >= ||w - x*||^2 from the Wolfe gap at the snapshot (mu-strong convexity)
        wolfe = jnp.vdot(Gw, w - problem.constraint.lmo(Gw))
        D2 = jnp.minimum(_diameter_sq(problem), 2.0 * jnp.maximum(wolfe, 0.0) / mu)

        def inner(k, c):
            x, y, key = c
            kf = k.astype(x.dtype)
            gam, beta = 2.0 / (kf + 1.0), 3.0 * st.L / kf
            eta = 2.0 * st.L * D2 / (N.astype(x.dtype) * kf)
            z = (1.0 - gam) * y + gam * x
            key, sub = jax.random.split(key)
            idx = jax.random.randint(sub, (m,), 0, n, dtype=jnp.int32)
            rows = problem.A.rows(idx)
            dg = problem.loss.grad(rows.mv(z), problem.y[idx]) - fw[idx]
            G = Gw + rows.rmv(dg) / m + mu * (z - w)
            x = cndg(problem.constraint, G, x, beta, eta, self.max_inner)
            return x, (1.0 - gam) * y + gam * x, key

        _, y, key = lax.fori_loop(1, N + 1, inner, (w, w, st.key))
        return CGSState(y, y, st.L, key, st.k + 1)
