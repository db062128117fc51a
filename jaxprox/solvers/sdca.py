"""Stochastic dual coordinate ascent (Shalev-Shwartz & Zhang, "Stochastic dual coordinate ascent
methods for regularized loss minimization"), its epochs (sequential and mini-batch) and the
reported-point polishes shared with Dual APPA.

Dual variables use the library's margin convention (``jaxprox.base``): ``u_i`` lives in
``dom l*(., y_i)`` and the primal point attached to ``u`` is

    w(u) = c - A^T u / (n Lam)                                                          (5')

for the ridge problem ``(1/n) sum_i l(a_i^T w) + (Lam/2)||w - c||^2`` (``c = 0``, ``Lam = lam0`` for
stand-alone SDCA; APPA's and Dual APPA's sub-problems otherwise,
:mod:`jaxprox.components.proximal_point`). One step picks ``i`` and replaces ``u_i`` by the exact
maximiser of the dual in that coordinate,

    u_i <- argmin_v  l*(v, y_i) - (v - u_i) a_i^T w + (q/2) (v - u_i)^2,   q = ||a_i||^2 / (n Lam),

    squared   l = (z - y)^2 / 2:       v = u_i + (z - y - u_i) / (1 + q)
    logistic  l = log(1 + e^{-y z}):   v = -y p,  logit(p) + y z + q (p - p_i) = 0,  p_i = -y u_i;
                                        monotone Newton in s = log(min(p, 1-p)), where the
                                        equation is convex and increasing, with a static number
                                        of steps (see :func:`coordinate_update`)
    smoothed hinge (mu):               v = -y clip((1 - y z + q p) / (mu + q), 0, 1)
    any other loss:                    v = prox_{l*/q}(u_i + z / q)  (``loss.prox_conjugate``)

and keeps ``w`` current with one sparse axpy ``w <- w - (v - u_i) a_i / (n Lam)`` (``A.rmv_add`` on
one row: O(nnz(a_i)) -- O(d) dense). One solver ``step`` is one epoch of ``n`` coordinate steps,
a ``lax.scan`` over indices drawn up front from the state's PRNG key.

Certificate: SDCA's own duality gap ``P(w) - D(u)`` with ``D`` the library's dual
(``problem.dual_objective``), which for ``SquaredL2(lam)`` is exactly SDCA's dual.
"""
from __future__ import annotations

import copy
import dataclasses

import equinox as eqx
import jax
import jax.numpy as jnp
from jax import lax

from .. import capabilities as cap
from ..base import concrete_arrays, data_platform
from ..components.epochs import EpochBudget
from ..components.minibatch import auto_batch_size, eso_beta, row_normalised_sigma
from ..components.proximal_point import ProximalInner
from ..components.sampling import (Auto, Permutation, Sampling, as_sampling, permutation_and_key, resolved,
                                   sampling_law)
from ..certificates import hessian, keep_best, ridge_strength
from ..solver import Solver
from ..operators import linear_at


def coordinate_update(loss, u_i, z, y_i, q, newton_steps: int = 15, unroll: bool = False):
    """Exact maximiser of the dual in coordinate ``i``, in the margin convention:

        argmin_v  l*(v, y_i) - (v - u_i) z + (q/2) (v - u_i)^2,    z = a_i^T w,  q = ||a_i||^2/(n Lam).

    Squared and smoothed hinge in closed form, logistic by ``newton_steps`` monotone Newton steps
    on the log of the smaller of ``p``, ``1 - p`` (convex increasing equation), any other loss through
    ``loss.prox_conjugate``. Elementwise: with arrays ``u_i, z, y_i, q`` of one shape it solves
    that many independent coordinates at once (the mini-batch route); ``unroll=True`` unrolls the
    Newton loop (no device loop: one fused kernel on an accelerator).
    """
    kind = loss.family
    if kind == "squared":
        return u_i + (z - y_i - u_i) / (1.0 + q)
    if kind == "smoothed_hinge":
        mu = loss.mu
        p0 = -y_i * u_i
        p = jnp.clip((1.0 - y_i * z + q * p0) / (mu + q), 0.0, 1.0)
        return -y_i * p
    if kind == "logistic":
        # stationarity: g(p) = logit(p) + y z + q (p - p0) = 0, p in (0, 1), g increasing.
        # If g(1/2) < 0 the root is in (1/2, 1): solve for p' = 1 - p instead (c -> -c,
        # p0 -> 1 - p0). With p = e^s, s <= log(1/2), G(s) = s - log(1 - e^s) + c + q (e^s - p0)
        # is increasing and *convex*, and G(log 1/2) >= 0, so Newton from s = log(1/2) decreases
        # monotonically to the root (no overshoot; exact in a few steps, ~log(q) from far away).
        p0 = jnp.clip(-y_i * u_i, 0.0, 1.0)
        c = y_i * z
        flip = c + q * (0.5 - p0) < 0
        c = jnp.where(flip, -c, c)
        p0 = jnp.where(flip, 1.0 - p0, p0)
        s0 = jnp.broadcast_to(jnp.log(jnp.asarray(0.5, jnp.result_type(z))), jnp.shape(c))

        def body(_, s):
            e = jnp.exp(s)
            G = s - jnp.log1p(-e) + c + q * (e - p0)
            dG = 1.0 + e / (1.0 - e) + q * e
            return jnp.minimum(s - G / dG, s0)

        s = lax.fori_loop(0, newton_steps, body, s0, unroll=True if unroll else None)
        p = jnp.exp(s)
        return -y_i * jnp.where(flip, 1.0 - p, p)
    qs = jnp.maximum(q, jnp.finfo(jnp.result_type(q)).tiny)
    if jnp.ndim(z) > 0:
        return loss.prox_conjugate(u_i + z / qs, y_i, 1.0 / qs)
    v = loss.prox_conjugate(jnp.reshape(u_i + z / qs, (1,)), jnp.reshape(y_i, (1,)), 1.0 / qs)
    return jnp.reshape(v, ())


def sdca_epoch(problem, u, w, Lam, idx, newton_steps: int = 15, block: int = 256, distinct: bool = False):
    """``len(idx)`` exact SDCA coordinate steps on the dual of
    ``(1/n) sum_i l(a_i^T w) + (Lam/2)||w - c||^2`` keeping ``w = c - A^T u/(n Lam)`` current
    (O(nnz(a_i)) per step), in the order of the pre-drawn indices ``idx``.

    Layout: a ``lax.scan`` over blocks of ``block`` indices; each block gathers its duals into a
    small buffer, runs a ``lax.scan`` of single coordinate steps on ``(buffer, w)`` and scatters the
    buffer back. (XLA:CPU copies an ``n``-vector carried through a scan at every step -- O(n) per
    step -- so the full ``u`` is only touched once per block.) A repeated index inside a block
    (sampling with replacement) reads and writes the buffer slot of its first occurrence, so the
    sequence of steps is exactly the sequential algorithm. ``distinct=True`` promises distinct
    indices (a permutation): no first-occurrence map, and the last block is padded with (inactive)
    indices of the first block instead of repeats.
    """
    A, yl, loss, n = problem.A, problem.y, problem.loss, problem.n
    rn = A.row_norms_sq()
    scale = 1.0 / (n * Lam)
    m = idx.shape[0]
    B = max(1, min(block, m))
    nb = -(-m // B)
    pad = idx[:nb * B - m] if distinct else jnp.broadcast_to(idx[-1:], (nb * B - m,))
    idxp = jnp.concatenate([idx, pad]).reshape(nb, B)
    active = (jnp.arange(nb * B) < m).reshape(nb, B)

    def block_fn(carry, blk):
        u, w = carry
        ib, act = blk
        first = jnp.arange(B) if distinct else jnp.argmax(ib[:, None] == ib[None, :], axis=1)

        def step(c, k):
            ub, w = c
            i = ib[k]
            f = first[k]
            row = A.rows(i[None])
            z = row.mv(w)[0]
            ui = lax.dynamic_index_in_dim(ub, f, keepdims=False)
            v = coordinate_update(loss, ui, z, yl[i], rn[i] * scale, newton_steps)
            v = jnp.where(act[k], v, ui)
            w = row.rmv_add(jnp.reshape(-(v - ui) * scale, (1,)), w)
            return (lax.dynamic_update_index_in_dim(ub, v, f, 0), w), None

        (ub, w), _ = lax.scan(step, (u[ib], w), jnp.arange(B))
        return (u.at[ib].set(ub if distinct else ub[first]), w), None

    (u, w), _ = lax.scan(block_fn, (u, w), (idxp, active))
    return u, w


def sdca_minibatch_epoch(problem, u, w, Lam, perm, batch: int, beta, newton_steps: int = 15):
    """One epoch of mini-batch SDCA: the permutation ``perm`` of the ``n`` samples is cut into
    ``ceil(n / batch)`` disjoint batches ``S`` and each batch is updated *in parallel* (Takáč,
    Bijral, Richtárik & Srebro, "Mini-batch primal and dual methods for SVMs"; Richtárik & Takáč,
    "Parallel coordinate descent methods for big data optimization"), with ``w`` kept equal to
    ``c - A^T u / (n Lam)``:

        delta_i = argmax_d  -l*(u_i + d, y_i) + d a_i^T w - (beta q_i / 2) d^2,   i in S,
                  q_i = ||a_i||^2 / (n Lam)                 (:func:`coordinate_update`, vectorised)
        r       = A_S^T delta                               (one b x d product)
        t       = min(1, P / Q),   P = beta sum_S q_i delta_i^2,   Q = ||r||^2 / (n Lam)
        u_S    <- u_S + t delta,   w <- w - t r / (n Lam)   (one scatter, one rank-b update)

    Why the dual never decreases. In the dual scaled by ``n``, moving ``u_S`` by ``t delta``
    changes it by ``G(t) - t^2 Q / 2`` with ``G(t) = sum_S g_i(t)``,
    ``g_i(t) = l*(u_i) - l*(u_i + t delta_i) + t delta_i a_i^T w`` concave with ``g_i(0) = 0``.
    ``delta_i`` maximises ``g_i(t) - t^2 beta q_i delta_i^2 / 2`` at ``t = 1``, so ``g_i'(1) >=
    beta q_i delta_i^2`` and, by concavity, ``G(t) >= t G(1) >= t P``. Hence the change is at least
    ``t P - t^2 Q / 2 >= t P / 2 >= 0`` for ``t = min(1, P / Q)``: the step is safe for *every*
    ``beta`` and batch, and ``t = 1`` whenever the batch satisfies

        ||sum_{i in S} a_i delta_i||^2 <= beta sum_{i in S} ||a_i||^2 delta_i^2,

    which holds for all ``delta`` with ``beta = b`` (Cauchy-Schwarz) and, *in expectation* over a
    uniformly random batch (each batch of a permutation is one), with the ESO factor
    ``beta_b = 1 + (b - 1)(sigma - 1)/(n - 1)``, ``sigma`` the largest eigenvalue of the
    row-normalised Gram matrix (:func:`eso_beta`). ``Q`` costs one norm of the ``d``-vector ``r``
    that the ``w`` update needs anyway. ``batch`` is static; the last batch is padded with
    inactive slots (``delta = 0``) so one epoch is exactly ``n`` coordinate updates.
    """
    A, yl, loss, n = problem.A, problem.y, problem.loss, problem.n
    rn = A.row_norms_sq()
    scale = 1.0 / (n * Lam)
    nb = -(-n // batch)
    pad = nb * batch - n
    idx = jnp.concatenate([perm, jnp.zeros((pad,), perm.dtype)]).reshape(nb, batch)
    active = (jnp.arange(nb * batch) < n).reshape(nb, batch)

    def batch_step(carry, blk):
        u, w = carry
        ib, act = blk
        rows = A.rows(ib)
        q = rn[ib] * scale
        ui = u[ib]
        v = coordinate_update(loss, ui, rows.mv(w), yl[ib], beta * q, newton_steps, unroll=True)
        delta = jnp.where(act, v - ui, 0.0)
        r = rows.rmv(delta)
        P = beta * jnp.sum(q * delta**2)
        Q = scale * jnp.sum(r**2)
        t = jnp.where(Q > P, P / jnp.where(Q > P, Q, 1.0), 1.0)
        return (u.at[ib].add(t * delta), w - (t * scale) * r), None

    (u, w), _ = lax.scan(batch_step, (u, w), (idx, active))
    return u, w


class SDCAEpochs:
    """One SDCA epoch (``n`` coordinate updates) for :class:`SDCA` and :class:`DualAPPA`, in the
    layout chosen by the static option ``batch``:

    * ``1``: the sequential epoch :func:`sdca_epoch` (``n`` dependent steps, any ``sampling``);
    * ``b > 1``: :func:`sdca_minibatch_epoch`, ``ceil(n / b)`` dependent steps of ``b`` parallel
      coordinate updates on disjoint batches of a fresh permutation (``sampling`` ``Auto()`` or
      ``Permutation()``: importance and i.i.d. sampling stay sequential-only, since repeated
      indices in one batch would update one coordinate twice from the same value), with the ESO
      factor :func:`eso_beta` from ``sigma`` (:func:`row_normalised_sigma`, computed once per solve
      in :meth:`hoist`);
    * ``'auto'`` (default): ``1`` when the problem's data live on a CPU (a tight sequential loop is
      fastest there); on an accelerator, where each dependent step costs kernel launches whatever
      its size, :func:`auto_batch_size` from ``sigma`` measured on the concrete data in
      :meth:`prepare`. Why a bounded ``beta_b`` rather than the largest batch: by the ESO bound
      (Takáč et al.) the epochs to an accuracy grow like ``1 + beta_b kappa / n``
      (``kappa`` the condition number in SDCA's units), so the dependent steps per run,
      ``~ ceil(n / b)(1 + beta_b kappa / n)``, never exceed the sequential ``n (1 + kappa / n)``
      and fall towards ``n / b + sigma kappa / n`` -- but on real (uncentred) data ``sigma / n``
      is 0.1-0.9, so past ``beta_b ~ 8`` a larger batch buys few launches and costs many epochs
      (``max_steps``'s unit) and per-epoch checks (measurements: ``benchmarks/results/sdca_minibatch.md``).

    Same seed, same run; ``batch=1`` is bit-identical to the sequential algorithm.
    """

    derived = ("eso_sigma",)

    def _batch_size(self, problem) -> int:
        b = self.batch
        if b == "auto":
            if data_platform(problem) == "cpu" or not self.sampling.disjoint:
                return 1
            return auto_batch_size(problem.n, None)
        if isinstance(b, bool) or not isinstance(b, int) or b < 1:
            raise ValueError(f"batch must be 'auto' or an int >= 1, got {b!r}")
        if b > 1 and not self.sampling.disjoint:
            raise ValueError(f"batch={b} (mini-batch SDCA) needs sampling=Auto() or Permutation(), "
                             f"got {self.sampling!r} (importance and i.i.d. sampling are sequential-only)")
        return min(b, problem.n)

    def _resolved(self, problem):
        """This solver with ``batch`` fixed to an int (for ``'auto'``: from the data's device and,
        on an accelerator, ``sigma`` of the concrete data, kept for :meth:`hoist`)."""
        b, sigma = self._batch_size(problem), None
        if self.batch == "auto" and b > 1:
            if len(concrete_arrays(problem.A)) == len(jax.tree_util.tree_leaves(problem.A)):
                sigma = row_normalised_sigma(problem.A)
            b = auto_batch_size(problem.n, sigma)
        return dataclasses.replace(self, batch=b, eso_sigma=self.eso_sigma if sigma is None else sigma)

    def hoist(self, problem):
        """Computes ``sigma`` once before the loop when the epochs are mini-batch ones."""
        if self.eso_sigma is not None or self._batch_size(problem) == 1:
            return self
        return eqx.tree_at(lambda s: s.eso_sigma, self, row_normalised_sigma(problem.A),
                           is_leaf=lambda x: x is None)

    def auto_rule(self) -> Sampling | None:
        """The choice of ``sampling=Auto()`` when known before tracing
        (:func:`~jaxprox.components.sampling.resolved`); stand-alone SDCA (``Lam = lam0``): ``None``,
        decided per epoch."""
        return None

    def epoch(self, problem, u, w, Lam, key, rule: Sampling | None = None):
        """One epoch on the dual of ``(1/n) sum_i l(a_i^T w) + (Lam/2)||w - c||^2`` from ``(u, w)``
        with ``w = c - A^T u/(n Lam)``, its indices drawn with ``key``; returns the new
        ``(u, w, key)``. An epoch in the order of a permutation (mini-batches, ``Permutation()``,
        or ``Auto()`` decided so before tracing: ``rule``, else :meth:`auto_rule`) draws it and the
        next key in one call (:func:`permutation_and_key`)."""
        b, n = self._batch_size(problem), problem.n
        sampling = resolved(self.sampling, self.auto_rule() if rule is None else rule)
        if not (b > 1 or isinstance(sampling, Permutation)):
            key, sub = jax.random.split(key)
            idx = sampling.draw(sub, n, sampling_law(problem, n * Lam))[0]  # SDCA's law
            return (*sdca_epoch(problem, u, w, Lam, idx, self.newton_steps), key)
        perm, key = permutation_and_key(key, n)
        if b == 1:
            return (*sdca_epoch(problem, u, w, Lam, perm, self.newton_steps, distinct=True), key)
        sigma = self.eso_sigma if self.eso_sigma is not None else row_normalised_sigma(problem.A)
        beta = eso_beta(b, jnp.asarray(sigma, problem.A.dtype), n)
        return (*sdca_minibatch_epoch(problem, u, w, Lam, perm, b, beta, self.newton_steps), key)


# ----------------------------------------------------------------------------------------------
# SDCA


#: the step lengths ``2^-k``, ``k < NEWTON_LADDER``, that :func:`newton_polish` compares
NEWTON_LADDER = 12
#: :func:`newton_polish` applies up to this many features (:meth:`SDCA._newton_polishes`)
NEWTON_POLISH_MAX_D = 128


def newton_polish(problem, x):
    """One damped Newton step on ``P(w) = (1/n) sum_i l(a_i^T w) + (lam/2) ||w||^2`` (a smooth
    loss) from ``x``: the direction ``p = H^{-1} grad P(x)`` with ``H = A^T diag(l''(A x)) A / n +
    lam I`` and, of the steps ``x - 2^-k p`` (``k < NEWTON_LADDER``, all scored from the margins
    ``A x`` and ``A p``), the one of lowest ``P``. Returns ``(w, P(w))`` (``P`` from those
    margins), a candidate for the reported point (:func:`report_best`): applied at every check
    to the best point so far, the reported point follows damped Newton (quadratic convergence
    near the optimum, a descent everywhere) whatever the dual iteration does. Not in the paper:
    the dual coordinate methods converge at a rate set by the conditioning of ``A A^T`` (columns
    in different units: the ``australian`` rows of ``benchmarks/results/defaults.md`` and
    ``dual_unscaled.md``), while this ``d``-dimensional step costs less than an epoch where
    :meth:`SDCA._newton_polishes` allows it."""
    A, y, loss = problem.A, problem.y, problem.loss
    lam = ridge_strength(problem)
    z = A.mv(x)
    g1, l2 = loss.grad_and_curvature(z, y)
    g = A.rmv(g1) / problem.n + lam * x
    H = hessian(problem, l2) + lam * jnp.eye(problem.d, dtype=x.dtype)
    p = jax.scipy.linalg.cho_solve(jax.scipy.linalg.cho_factor(H), g)  # LAPACK: nothing to compile
    Ap = A.mv(p)
    ts = 0.5 ** jnp.arange(NEWTON_LADDER, dtype=x.dtype)
    vals = jax.vmap(lambda t: problem._primal_at(x - t * p, z - t * Ap))(ts)
    k = jnp.argmin(jnp.where(jnp.isnan(vals), jnp.inf, vals))
    return x - ts[k] * p, vals[k]


def report_best(problem, best, cand, t):
    """``(x, P(x), dual of x)``: the reported triple ``best`` after the candidate ``cand = (point,
    P(point), its dual)`` and, for the plain SVM where :meth:`SDCA._polishes`, the active-set polish
    of ``point`` (:func:`jaxprox.problems.bias_svm.plain_svm_polish`, tolerance cycled by the check
    count ``t``), or for a smooth loss under the same size rule a damped Newton step from the best
    point (:func:`newton_polish`), each kept where its exact ``P`` is lower (the reported point of
    SDCA and Dual APPA, :meth:`SDCA.refine`, :meth:`DualAPPA.refine`). The dual reported is the
    method's running dual ``cand[2]`` (the best so far: it ascends) unless the active-set polish
    applies, whose exact dual point goes with its point."""
    from ..problems.bias_svm import plain_svm_polish

    cands = [cand]
    if SDCA._polishes(problem):
        cands.append(plain_svm_polish(problem, problem.A.mv(cand[0]), t))
    x, Px, ux = best
    x, Px, ux = keep_best(cands, x, jnp.where(jnp.isnan(Px), jnp.inf, Px), ux)
    if SDCA._newton_polishes(problem):
        x, Px, ux = keep_best([(*newton_polish(problem, x), ux)], x, Px, ux)
    return x, Px, (ux if SDCA._polishes(problem) else cand[2])


class SDCAState(eqx.Module):
    u: jax.Array  # dual variables, margin convention (u_i in dom l*)
    w: jax.Array  # = -A^T u / (n lam), kept current
    key: jax.Array
    epoch: jax.Array
    x: jax.Array  # the reported primal point: the best w(u) seen at a check (refine)
    Px: jax.Array  # P(x)
    ux: jax.Array  # the dual point reported with x: SDCA's u, or the polish's own (plain SVM)
    pair: bool = eqx.field(static=True, default=False)  # differentiated as (x, ux): a non-smooth loss


class DualPair:
    """Implicit derivatives of the dual coordinate methods (SDCA, Dual APPA). With a smooth loss
    the solution is the primal ``x``, a root of the prox-gradient residual (the default); a
    non-smooth loss (the hinge) has none, so the solution is the reported pair ``(x, u)``, a root
    of the Chambolle-Pock residual (:func:`jaxprox.solvers.pdprox.saddle_residual`) at a saddle
    point: ``u`` is the reported dual (the method's dual iterate, or the exact dual point of an
    active-set polish), optimal where the certified gap is small. The state's static ``pair`` says
    which."""

    def solution(self, s):
        return (self.params(s), self.dual(s)) if s.pair else self.params(s)

    def residual(self, problem, z):
        if isinstance(z, tuple):
            from .pdprox import saddle_residual

            return saddle_residual(problem, z)
        return problem.prox_grad_residual(z)

    def unpack(self, z):
        return z if isinstance(z, tuple) else (z, None)


class SDCA(DualPair, SDCAEpochs, ProximalInner, EpochBudget, Solver):
    """Stochastic dual coordinate ascent (Shalev-Shwartz & Zhang 2013) for
    ``min_w (1/n) sum_i l(a_i^T w, y_i) + (lam/2)||w||^2`` (``penalty=SquaredL2(lam)``, lam > 0).

    Exact coordinate maximisation (:func:`coordinate_update`); ``w`` is kept equal to
    ``-A^T u/(n lam)`` in O(nnz(a_i)) per step. One ``step`` = one epoch of ``n`` coordinate steps
    (one data pass); ``max_steps`` counts epochs (default ``None``: :func:`epoch_budget`, from 200
    epochs on large data to 20,000 on small).
    Certificate: the duality gap ``P(x) - D(u)`` with ``D(u) = -(1/n) sum l*(u_i) - ||A^T u||^2/(2 lam n^2)``
    (= ``problem.certificate(x, u)``), an upper bound on both the primal and the dual error, at the
    reported ``x``: the best ``w(u)`` seen at a check (:meth:`refine`; for the plain SVM also the
    active-set polish of ``w(u)``, with its own dual point; for a smooth loss also a damped Newton
    step from the best point, :func:`newton_polish`), so the reported objective never
    increases and never ends above the start; ``D`` is raised to the dual value of ``l'(A x)`` (and
    of the polish's dual point) where that is larger (:meth:`certificate`).

    Args:
        seed: PRNG seed (same seed, same run).
        sampling: a :mod:`jaxprox.sampling` object: ``Auto()`` (default: SDCA's importance law
            ``q_i ~ 1 + L_i/(n lam)``, :func:`sampling_law`, when it is far from uniform, i.e. rows
            of very unequal norms, otherwise a fresh permutation per epoch), ``Importance()``,
            ``Permutation()`` or ``Uniform()`` (iid). Exact coordinate steps keep the dual monotone
            under any law.
        newton_steps: static number of (monotone) Newton steps of the logistic coordinate solve.
        batch: ``'auto'`` (default: sequential on a CPU, mini-batches sized from the data,
            :func:`auto_batch_size`, when the data live on an accelerator), ``1`` (sequential) or ``b > 1`` (mini-batch SDCA with the
            monotone safeguard, :func:`sdca_minibatch_epoch`); see :class:`SDCAEpochs`.
    """

    unscaled_advice = ("SDCA ascends the dual, whose conditioning does not change with the units of w (jp.solve "
                       "cannot rescale it): standardise the features, or use jp.ProxNewton (smooth losses) or "
                       "jp.PDProx (the hinge), which rescale.")
    requires = (cap.ERM_PROBLEM, cap.RIDGE, cap.NO_CONSTRAINT)
    option_ranges = {"newton_steps": ">= 1"}
    step_unit = "epochs"

    seed: int = eqx.field(static=True, default=0)
    sampling: Sampling = eqx.field(static=True, default=Auto(), converter=as_sampling)
    newton_steps: int = eqx.field(static=True, default=15)
    batch: int | str = eqx.field(static=True, default="auto")
    eso_sigma: jax.Array | None = None
    max_steps: int | None = eqx.field(static=True, default=None, kw_only=True)
    check_every: int = eqx.field(static=True, default=1, kw_only=True)

    @staticmethod
    def _check(problem):
        """SDCA's primal map ``w = -A^T u / (n lam)`` needs ``lam > 0``: a ``ValueError`` for no
        penalty, another penalty, or a concrete ``lam <= 0`` (traced values pass)."""
        lam = ridge_strength(problem)
        if problem.penalty is None or (not isinstance(lam, jax.core.Tracer) and float(lam) <= 0):
            raise ValueError("SDCA needs penalty=SquaredL2(lam) with lam > 0 (use DualAPPA for "
                             "un-regularised problems)")

    def prepare(self, problem):
        """Validates ``lam > 0`` before tracing (:meth:`_check`) and fixes ``batch`` from the
        data's device (:class:`SDCAEpochs`)."""
        self._check(problem)
        return self._resolved(problem)

    def init(self, problem, init=None):
        self._check(problem)
        if init is None:
            u = jnp.zeros((problem.n,), problem.A.dtype)
        else:
            u = problem.loss.dual_point(problem.A.mv(jnp.asarray(init, problem.A.dtype)), problem.y)
        w = linear_at(lambda u: self._primal(problem, u), u, init is None)
        Pw = problem._primal_at(w, linear_at(problem.A.mv, w, init is None))
        return SDCAState(u, w, jax.random.PRNGKey(self.seed), jnp.zeros((), jnp.int32), w,
                         Pw, u, not problem.loss.smooth)

    #: APPA runs 3 SDCA epochs per sub-problem: its dual-to-primal map needs a more accurate dual
    default_inner_epochs = 3

    def inner_prepared(self, problem):
        """As the inner solver of APPA (un- or lightly regularised: no ``lam > 0`` check): ``batch``
        fixed from the data's device, :class:`SDCAEpochs`."""
        fresh = copy.copy(self)
        object.__setattr__(fresh, "eso_sigma", None)
        return fresh._resolved(problem)

    def proximal_epochs(self, problem, start, Lam, c, key, epochs: int, rule: Sampling | None = None):
        """The dual wrapper of Theorem 2.3 (APPA's sub-problem ``(1/n) sum_i l(a_i^T w) + (Lam/2)
        ||w - c||^2``): the primal-to-dual map ``u = l'(A start)`` (eq. (6)), ``w = c - A^T u/(n Lam)``
        (eq. (5')), then ``epochs`` of this solver's own epochs (:meth:`SDCAEpochs.epoch`, sequential
        or mini-batch); returns ``w``."""
        u = problem.loss.grad(problem.A.mv(start), problem.y)
        w = c - problem.A.rmv(u) / (problem.n * Lam)
        for _ in range(epochs):
            u, w, key = self.epoch(problem, u, w, Lam, key, rule)
        return w

    @staticmethod
    def _primal(problem, u):
        return -problem.A.rmv(u) / (problem.n * ridge_strength(problem))

    def step(self, problem, s):
        u, w, key = self.epoch(problem, s.u, s.w, ridge_strength(problem), s.key)
        return SDCAState(u, w, key, s.epoch + 1, s.x, s.Px, s.ux, s.pair)

    def refine(self, problem, s):
        """Report the best, in ``P``, of the point reported so far, ``w(u)`` (not in the paper: the
        dual ascends monotonically but ``P(w(u))`` need not descend, and far from the optimum, e.g.
        on badly scaled columns, it can end above the start) and, for the plain SVM (hinge +
        ``SquaredL2``, where the polish costs about an epoch: :meth:`_polishes`), the active-set
        polish of ``w(u)``
        (:func:`jaxprox.problems.bias_svm.plain_svm_polish`, as AGM's; not in the paper: the
        hinge's dual converges sublinearly, while its active set is found long before), each with
        its dual point, or for a smooth loss a damped Newton step from the best point
        (:func:`newton_polish`; not in the paper: the dual's rate is set by ``A A^T``, which no
        rescaling of ``w`` changes); ``P(x) - D`` stays a valid gap for any ``x``."""
        x, Px, ux = report_best(problem, (s.x, s.Px, s.ux), (s.w, problem.objective(s.w), s.u), s.epoch)
        return SDCAState(s.u, s.w, s.key, s.epoch, x, Px, ux, s.pair)

    @staticmethod
    def _small(problem) -> bool:
        """A ``(d + 1)``-dimensional solve costs no more than about an epoch: ``(d + 1)^2 <= 16 n``
        (not on n < d data such as colon, 62 x 2000, where it would cost a second per check against
        a millisecond per epoch)."""
        return (problem.d + 1) ** 2 <= 16 * problem.n

    @staticmethod
    def _polishes(problem) -> bool:
        """The plain SVM where :meth:`_small`: the active-set polish of the reported point."""
        return cap.PLAIN_SVM(problem) and SDCA._small(problem)

    @staticmethod
    def _newton_polishes(problem) -> bool:
        """A smooth loss on a vector model where :meth:`_small` and ``d <=``
        :data:`NEWTON_POLISH_MAX_D` (128): the Newton step of the reported point
        (:func:`newton_polish`). Its Hessian costs ``n d^2`` in one matrix product, against an
        epoch's ``n`` sequential coordinate steps: less than an epoch's time up to ``d = 128``
        (``benchmarks/results/newton_polish.md``)."""
        return (problem.loss.smooth and tuple(problem.A.param_shape) == (problem.d,)
                and problem.d <= NEWTON_POLISH_MAX_D and SDCA._small(problem))

    def certificate(self, problem, s):
        """``P(x) - D`` with ``D`` the largest of the dual values of SDCA's ``u``, of the dual point
        reported with ``x`` and of the dual point ``l'(A x)`` of ``x`` (all in ``dom l*``, so all
        are lower bounds on ``P*``; the last is tighter when the primal has converged before the
        dual)."""
        extra = (s.ux,) if self._polishes(problem) else ()  # else the reported dual is SDCA's u (refine)
        d = problem.best_certificate(s.x, s.u, *extra)[1]
        return s.Px, d, s.Px - d

    def params(self, s):
        return s.x

    def dual(self, s):
        return s.ux
