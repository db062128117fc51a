"""APPA, accelerated APPA and Dual APPA around SVRG and SDCA (Frostig, Ge, Kakade and
Sidford, "Un-regularizing: approximate proximal point and faster stochastic algorithms for empirical
risk minimization"; read ``papers/notes/003_appa.md`` first).

Scaling (DESIGN.md): the ERM objective is the *average*

    F(w) = (1/n) sum_i l(a_i^T w, y_i)  [+ (lam0/2) ||w||^2 if the problem has a SquaredL2 penalty],

i.e. the paper's ``phi_i = l(., y_i) / n`` (note §1.4). The proximal sub-problem of eq. (3) is

    f_{s,lam}(w) = F(w) + (lam/2) ||w - s||^2
                 = (1/n) sum_i l(a_i^T w) + (Lam/2) ||w - c||^2 + const,   Lam = lam0 + lam,
                                                                         c   = lam s / Lam,

so every sub-problem is a ridge problem "centred at c" and one SDCA / SVRG engine serves the
stand-alone regularised solvers (``c = 0``, ``Lam = lam0``) and the APPA inner loops alike.

Dual variables use the library's margin convention (``jaxprox.base``): ``u_i`` lives in
``dom l*(., y_i)`` and the primal point attached to ``u`` is (eq. (5) with the paper's
``y = u / n``)

    w(u) = c - A^T u / (n Lam).                                                         (5')

SDCA (note §3.1): one step picks ``i`` and replaces ``u_i`` by the exact maximiser of the dual in
that coordinate,

    u_i <- argmin_v  l*(v, y_i) - (v - u_i) a_i^T w + (q/2) (v - u_i)^2,   q = ||a_i||^2 / (n Lam),

    squared   l = (z - y)^2 / 2:       v = u_i + (z - y - u_i) / (1 + q)                   (§3.2)
    logistic  l = log(1 + e^{-y z}):   v = -y p,  logit(p) + y z + q (p - p_i) = 0,  p_i = -y u_i;
                                        monotone Newton in s = log(min(p, 1-p)), where the
                                        equation is convex and increasing, with a static number
                                        of steps (§3.3; see :func:`coordinate_update`)
    smoothed hinge (mu):               v = -y clip((1 - y z + q p) / (mu + q), 0, 1)          (§3.4)
    any other loss:                    v = prox_{l*/q}(u_i + z / q)  (``loss.prox_conjugate``)

and keeps ``w`` current with one sparse axpy ``w <- w - (v - u_i) a_i / (n Lam)`` (``A.rmv_add`` on
one row: O(nnz(a_i)) -- O(d) dense). One solver ``step`` is one epoch of ``n`` coordinate steps,
a ``lax.scan`` over indices drawn up front from the state's PRNG key.

SVRG (Johnson & Zhang 2013, proximal form of Xiao & Zhang 2014; note §3.6): per epoch a snapshot
``x~`` with its full risk gradient ``mu~ = A^T l'(A x~) / n`` (the scalars ``l'(a_i^T x~)`` are cached),
then ``n`` steps

    x <- prox_{eta h}( x - eta [ (l'(a_i^T x) - l'(a_i^T x~)) a_i + mu~ ] ),     Option I: x~ <- x_n,

with ``h`` the penalty (stand-alone) or ``(Lam/2)||. - c||^2`` (inner solver).

APPA (Algorithm 1): ``x_t = P(x_{t-1})`` with ``P`` a few inner epochs on ``f_{x_{t-1},lam}``,
started at the centre. Accelerated APPA (Algorithm 2) in its exact one-sequence momentum form
(note §2.2, verified equivalent): ``x_{t+1} = P(y_t)`` (centre ``y_t``, inner start ``x_t`` as in
Lemma 3.5), ``y_{t+1} = x_{t+1} + beta (x_{t+1} - x_t)``, ``beta = (1 - rho^{-1/2})/(1 + rho^{-1/2})``,
``rho = (mu + 2 lam)/mu``; optionally with gradient-based adaptive restart.

Dual APPA (Algorithm 3 with the practical version of §5.1, note §2.4): ``u_0 = l'(A x_0)`` once,
then per stage ``inner_epochs`` SDCA epochs on the dual of ``f_{s,lam}`` warm-started at the
previous ``u``; the stage's iterate is ``x = w``; re-centring is O(d):
``w <- x + (lam / Lam)(x - s)`` (``= 2x - s`` when ``lam0 = 0``), ``s <- x``.

Defaults from the data (issue #27; measurements in ``benchmarks/results/appa_defaults.md``):
``prox_lam = 2 lam0 + L_max / n`` (Corollary 3.2 in the averaged scaling, :func:`default_prox_lam`);
APPA runs Algorithm 2 with ``mu = lam0``; importance sampling of rows when their norms differ
much (:func:`sampling_law`; Prox-SVRG's and SDCA's laws, not in the paper); and safeguards that
are not in the paper: APPA's oracle keeps its start when it would increase ``f_{s,lam}``, Dual
APPA moves its centre only when the stage does not increase ``f_{s,lam}`` over ``F(s)``, SDCA
reports the best ``w(u)`` seen -- so none of them ends above its starting objective.

Certificates. SDCA reports its own duality gap ``P(w) - D(u)`` with ``D`` the library's dual
(``problem.dual_objective``), which for ``SquaredL2(lam)`` is exactly SDCA's dual. SVRG reports
``problem.certificate(w)``. For the (un- or lightly regularised) problems of APPA / Dual APPA /
SGD there is generally no finite duality gap; :func:`suboptimality_bound` gives an *honest* upper
bound on ``F(w) - F*``: the smaller of the duality gap (finite when ``lam0 > 0``) and a curvature
bound ``||grad F(w)||^2 e^{R r} / (2 mu_H)`` with ``mu_H = lambda_min(hess F(w))``, valid for the
squared loss (``r = 0``) and for the logistic loss on the ball of radius ``r`` around ``w`` that
provably contains the minimiser (logistic curvature changes by at most ``e^{R r}`` there,
``R = max_i ||a_i||``); ``+inf`` when no such ``r`` is certified or for other losses. So
``converged`` means ``F(w) - F* <= atol + tol |F(w)|`` -- a true statement.
"""
from __future__ import annotations

import dataclasses

import equinox as eqx
import jax
import jax.numpy as jnp
from jax import lax

from ..base import as_leaf, concrete_arrays, data_platform
from ..defaults import STEPS_CAP, STEPS_FLOOR
from ..solver import Solver
from ..operators import largest_eigenvalue, linear_at
from ..problems.erm import curvature_bound
from .. import capabilities as cap

# ----------------------------------------------------------------------------------------------
# helpers


def _lam0(problem, diagonal: bool = False):
    """Strength of the problem's own ``SquaredL2`` penalty (0 without a penalty); with ``diagonal``,
    also the per-coordinate strengths ``lam c^2`` of a column-scaled ridge
    (:attr:`jaxprox.base.Penalty.ridge_diagonal`: APPA around SVRG, whose inner prox is
    coordinate-wise, solves the rescaled problem)."""
    if problem.constraint is not None:
        raise ValueError("SDCA / APPA / Dual APPA do not support constraints")
    if problem.penalty is None:
        return jnp.zeros((), problem.A.dtype)
    if diagonal and problem.penalty.ridge_diagonal is not None:
        return jnp.asarray(problem.penalty.ridge_diagonal, problem.A.dtype)
    if not problem.penalty.quadratic:
        raise ValueError(f"this solver needs penalty=None or SquaredL2, got {type(problem.penalty).__name__}")
    return jnp.asarray(problem.penalty.lam, problem.A.dtype)


def _check_smooth(problem, who):
    if not problem.loss.smooth:
        raise ValueError(f"{who} needs a smooth loss; {type(problem.loss).__name__} is not")


def epoch_budget(problem, epochs_per_step: int = 1) -> int:
    """The default ``max_steps`` of the stochastic solvers (``max_steps=None``): as many steps of
    ``epochs_per_step`` epochs as fit in :data:`jaxprox.driver.SAMPLE_STEP_BUDGET` sequential
    sample steps, ``SAMPLE_STEP_BUDGET / (n * epochs_per_step)``, clipped to
    ``[STEPS_FLOOR, STEPS_CAP]`` (200 and 20,000): a budget in time rather than in passes, so that
    small data sets, whose epochs cost little, get the many epochs that weak regularisation needs
    (``benchmarks/results/defaults.md``), and large ones keep the floor."""
    from ..defaults import SAMPLE_STEP_BUDGET, STEPS_CAP, STEPS_FLOOR

    steps = SAMPLE_STEP_BUDGET // (max(int(problem.n), 1) * max(int(epochs_per_step), 1))
    return int(min(STEPS_CAP, max(STEPS_FLOOR, steps)))


class EpochBudget:
    """``max_steps=None`` for a stochastic solver: :func:`epoch_budget` of :attr:`epochs_per_step`
    epochs per step (1 for SDCA and SVRG; the inner epochs of APPA and Dual APPA)."""

    budget_range = f"{STEPS_FLOOR:,}-{STEPS_CAP:,} (from n)"
    epochs_per_step = 1

    def budget(self, problem) -> int:
        return epoch_budget(problem, self.epochs_per_step)


def _mix32(h):
    """A 32-bit bijection with low avalanche bias ("triple32", C. Wellons' hash-prospector: three
    xorshift-multiply rounds, within a few percent of the bias of an ideal random bijection)."""
    for shift, mul in ((17, 0xED5AD4BB), (11, 0xAC4C1B51), (15, 0x31848BAB)):
        h = (h ^ (h >> shift)) * jnp.uint32(mul)
    return h ^ (h >> 14)


def permutation_and_key(key, n: int):
    """``(perm, next_key)``: a random permutation of ``0..n-1`` and a fresh key for the next draw.

    The permutation sorts the indices by the words ``h(i)`` of a counter-based hash keyed by the
    key's words: ``h(i) = mix(... mix(mix(i) ^ k_1) ^ k_2 ...)`` with :func:`_mix32`, a bijection
    of 32-bit words, so for a given key the ``n`` words are distinct (no ties, one sort for any
    ``n < 2^32``) and keys that differ in one bit give unrelated orders; the next key is the words
    ``h(n), h(n + 1), ...``. One elementwise kernel and one sort where ``jax.random.bits`` (threefry)
    compiles to seven kernels, about 80 ms of every first solve of SDCA and Dual APPA
    (``benchmarks/results/latency.md``, session 34); a sampling order, not a cryptographic draw."""
    typed = jnp.issubdtype(key.dtype, jax.dtypes.prng_key)
    raw = jax.random.key_data(key) if typed else key
    words = raw.reshape(-1).astype(jnp.uint32)
    h = _mix32(jnp.arange(n + words.size, dtype=jnp.uint32))
    for j in range(words.size):
        h = _mix32(h ^ words[j])
    idx = lax.sort_key_val(h[:n], jnp.arange(n, dtype=jnp.int32))[1]
    nxt = h[n:].astype(raw.dtype).reshape(raw.shape)
    return idx, (jax.random.wrap_key_data(nxt, impl=jax.random.key_impl(key)) if typed else nxt)


def permutation(key, n: int):
    """A uniformly random permutation of ``0..n-1`` (:func:`permutation_and_key`)."""
    return permutation_and_key(key, n)[0]


def _draw(key, n, length, sampling):
    if sampling == "permutation":
        reps = -(-length // n)
        keys = jax.random.split(key, reps) if reps > 1 else [key]
        return jnp.concatenate([permutation(k, n) for k in keys])[:length]
    if sampling == "uniform":
        return jax.random.randint(key, (length,), 0, n, dtype=jnp.int32)
    raise ValueError(f"sampling must be 'uniform' or 'permutation', got {sampling!r}")


def coordinate_update(loss, u_i, z, y_i, q, newton_steps: int = 15, unroll: bool = False):
    """Exact maximiser of the dual in coordinate ``i`` (note §3.1-3.4), in the margin convention:

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


def row_normalised_sigma(A, iters: int = 30):
    """``sigma = lambda_max(D^{-1/2} A A^T D^{-1/2})``, ``D = diag(||a_i||^2)`` (zero rows dropped):
    the squared spectral norm of the row-normalised data, ``1 <= sigma <= n`` (``1``: orthogonal
    rows, ``n``: all rows parallel), as the largest eigenvalue of ``A^T D^{-1} A``
    (:func:`jaxprox.operators.largest_eigenvalue`: exact from that Gram matrix for ``d <=``
    :func:`~jaxprox.operators.exact_eig_side` ``(iters)``, else ``iters`` power iterations, whose
    estimate converges from below);
    :func:`sdca_minibatch_epoch` is monotone for any value, an underestimate only makes its
    step-length safeguard act more often."""
    rn = A.row_norms_sq()
    inv = jnp.where(rn > 0, 1.0 / jnp.where(rn > 0, rn, 1.0), 0.0)
    return jnp.clip(largest_eigenvalue(A, iters, 0, inv), 1.0, A.n)


def eso_beta(batch: int, sigma, n: int):
    """ESO factor of ``batch``-nice sampling (Richtárik & Takáč, "Parallel coordinate descent
    methods for big data optimization"; Takáč et al., "Mini-batch primal and dual methods for
    SVMs", their ``beta_b``): ``1 + (b - 1)(sigma - 1)/(n - 1)``, between ``1`` (orthogonal rows)
    and ``b`` (parallel rows), so that ``E_S ||sum_{i in S} a_i h_i||^2 <= beta
    E_S sum_{i in S} ||a_i||^2 h_i^2`` over uniformly random batches ``S`` of size ``b``."""
    if batch <= 1 or n <= 1:
        return 1.0 + 0.0 * sigma
    return 1.0 + (batch - 1) * (sigma - 1.0) / (n - 1)


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


def _svrg_epochs(problem, x, step_size, prox, keys, sampling):
    """``len(keys)`` SVRG epochs with indices from :func:`_indices` (Prox-SVRG's law
    :func:`sampling_law` with ``shift = L_avg``) and step ``eta = 1 / (3 L_Q)``,
    ``L_Q = max_i L_i / (n q_i)`` (``= L_max`` for uniform sampling), unless ``step_size`` is given."""
    L = _smoothness_or_one(problem.loss, problem.A.dtype) * problem.A.row_norms_sq()
    law = sampling_law(problem, jnp.mean(L))
    for k in keys:
        idx, q = _indices(k, problem, sampling, law)
        LQ = jnp.max(L) if q is None else jnp.max(L / (problem.n * q))
        eta = 1.0 / (3.0 * LQ) if step_size is None else jnp.asarray(step_size, problem.A.dtype)
        x = svrg_epoch(problem, x, eta, prox, idx, q)
    return x


def _quad_prox(Lam, c):
    """prox of ``(Lam/2)||. - c||^2``: ``(v + eta Lam c) / (1 + eta Lam)``."""
    return lambda v, eta: (v + eta * Lam * c) / (1.0 + eta * Lam)


def _smoothness_or_one(loss, dtype):
    """``smoothness(l)``; for a non-smooth loss its Lipschitz constant (the smoothness of its
    1-smoothed surrogate), else 1. Works for traced loss parameters (``SmoothedHinge(mu)``)."""
    sm, lip = jnp.asarray(loss.smoothness, dtype), jnp.asarray(loss.lipschitz, dtype)
    return jnp.where(jnp.isfinite(sm), sm, jnp.where(jnp.isfinite(lip), lip, 1.0)).astype(dtype)


def sampling_law(problem, shift):
    """Importance sampling law ``q_i = (L_i + shift) / sum_j (L_j + shift)`` with the component
    smoothness ``L_i = smoothness(l) ||a_i||^2`` (not in the APPA paper). ``shift = L_avg`` gives
    Prox-SVRG's mixture of uniform and ``L_i``-proportional sampling (Xiao & Zhang, "A proximal
    stochastic gradient method with progressive variance reduction": its constant
    ``L_Q = max_i L_i / (n q_i) <= 2 L_avg`` replaces ``L_max``); ``shift = n Lam`` is SDCA's law
    ``q_i ~ 1 + L_i / (n Lam)`` (Zhao & Zhang, "Stochastic optimization with importance sampling
    for regularized loss minimization": ``L_max`` becomes ``L_avg`` in SDCA's rate; with exact
    coordinate maximisation any law keeps the dual monotone). Uniform if every term is zero."""
    L = _smoothness_or_one(problem.loss, problem.A.dtype) * problem.A.row_norms_sq()
    t = L + shift
    tot = jnp.sum(t)
    return jnp.where(tot > 0, t / jnp.where(tot > 0, tot, 1.0), 1.0 / problem.n)


def _indices(key, problem, sampling, q, rule=None):
    """One epoch of ``n`` indices and the law they were drawn from (``None``: uniform).
    ``'auto'``: from ``q`` when it is far from uniform, ``max_i n q_i >= 2`` (for SDCA's law this is
    the speed-up factor ``(n Lam + L_max) / (n Lam + L_avg)`` itself; for Prox-SVRG's it means
    ``L_max >= 3 L_avg``), otherwise a fresh permutation (random reshuffling, better than iid draws
    when the rows are alike). ``rule``: the choice of ``'auto'`` when it is known before tracing
    (``'permutation'`` or ``'importance'``, see :func:`sdca_auto_rule`; then only that sample is
    drawn), ``None``: decided in each epoch (both drawn)."""
    n = problem.n
    if sampling in ("uniform", "permutation"):
        return _draw(key, n, n, sampling), None
    if sampling not in ("auto", "importance"):
        raise ValueError(f"sampling must be 'auto', 'importance', 'uniform' or 'permutation', got {sampling!r}")
    if rule == "permutation" and sampling == "auto":
        return _draw(key, n, n, "permutation"), None
    k1, k2 = jax.random.split(key)
    idx = jax.random.choice(k1, n, (n,), p=q).astype(jnp.int32)
    if sampling == "importance" or rule == "importance":
        return idx, q
    use = jnp.max(q) * n >= 2.0  # the law is far from uniform: it pays (see sampling_law)
    return jnp.where(use, idx, _draw(k2, n, n, "permutation")), jnp.where(use, q, 1.0 / n)


def sdca_auto_rule(prox_lam) -> str | None:
    """The choice of ``sampling='auto'`` for SDCA's law (:func:`sampling_law` with ``shift = n Lam``)
    in the sub-problems of APPA / Dual APPA, known before tracing: with the default proximal weight
    (:func:`default_prox_lam`) ``Lam = lam0 + lam >= L_max / n``, so

        max_i n q_i = (L_max + n Lam) / (L_avg + n Lam) <= 2 L_max / (L_avg + L_max) < 2

    (``L_avg > 0``; ``= 1`` for ``A = 0``): the law is never far from uniform and ``'auto'`` is a
    fresh permutation per epoch on any data. With a given ``prox_lam`` (or for stand-alone SDCA,
    ``Lam = lam0``) the law can pay; ``None``: decided per epoch from the (possibly traced) ``Lam``."""
    return "permutation" if prox_lam is None else None


def _sdca_indices(key, problem, sampling, Lam, rule=None):
    """One SDCA epoch's indices (:func:`_indices` with SDCA's law, ``shift = n Lam``)."""
    return _indices(key, problem, sampling, sampling_law(problem, problem.n * Lam), rule)[0]


# ----------------------------------------------------------------------------------------------
# SDCA epochs: sequential or mini-batch (shared by SDCA and DualAPPA)

#: ``batch="auto"`` on an accelerator: the largest power of two ``b <= min(n, AUTO_MAX_BATCH)``
#: whose ESO factor is at most ``AUTO_BETA`` (:func:`auto_batch_size`)
AUTO_BETA = 8.0
AUTO_MAX_BATCH = 256


def auto_batch_size(n: int, sigma: float | None) -> int:
    """Largest power of two ``b <= min(n, AUTO_MAX_BATCH)`` with ``eso_beta(b, sigma, n) <=
    AUTO_BETA``; ``sigma = None`` (data traced, not measurable before tracing) is taken as its
    worst case ``n`` (then ``beta_b = b`` and ``b = 8``). ``AUTO_BETA = 8`` bounds the growth of the
    epoch count over the sequential method by about 8 in the worst (ill-conditioned) case while
    cutting the dependent steps per epoch from ``n`` to ``n / b`` (b = 8-64 on the datasets of
    ``benchmarks/results/sdca_minibatch.md``, where the choice is measured)."""
    sigma = float(n) if sigma is None else float(sigma)
    b = 1
    while 2 * b <= min(n, AUTO_MAX_BATCH) and float(eso_beta(2 * b, sigma, n)) <= AUTO_BETA:
        b *= 2
    return b


class SDCAEpochs:
    """One SDCA epoch (``n`` coordinate updates) for :class:`SDCA` and :class:`DualAPPA`, in the
    layout chosen by the static option ``batch``:

    * ``1``: the sequential epoch :func:`sdca_epoch` (``n`` dependent steps, any ``sampling``);
    * ``b > 1``: :func:`sdca_minibatch_epoch`, ``ceil(n / b)`` dependent steps of ``b`` parallel
      coordinate updates on disjoint batches of a fresh permutation (``sampling`` ``'auto'`` or
      ``'permutation'``: importance and i.i.d. sampling stay sequential-only, since repeated
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
            if data_platform(problem) == "cpu" or self.sampling not in ("auto", "permutation"):
                return 1
            return auto_batch_size(problem.n, None)
        if isinstance(b, bool) or not isinstance(b, int) or b < 1:
            raise ValueError(f"batch must be 'auto' or an int >= 1, got {b!r}")
        if b > 1 and self.sampling not in ("auto", "permutation"):
            raise ValueError(f"batch={b} (mini-batch SDCA) needs sampling='auto' or 'permutation', "
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

    def auto_rule(self) -> str | None:
        """The choice of ``sampling='auto'`` when known before tracing (:func:`_indices`); stand-alone
        SDCA (``Lam = lam0``): ``None``, decided per epoch."""
        return None

    def epoch(self, problem, u, w, Lam, key):
        """One epoch on the dual of ``(1/n) sum_i l(a_i^T w) + (Lam/2)||w - c||^2`` from ``(u, w)``
        with ``w = c - A^T u/(n Lam)``, its indices drawn with ``key``; returns the new
        ``(u, w, key)``. An epoch in the order of a permutation (mini-batches, ``'permutation'``,
        or ``'auto'`` decided so before tracing) draws it and the next key in one call
        (:func:`permutation_and_key`)."""
        b, n = self._batch_size(problem), problem.n
        by_permutation = (b > 1 or self.sampling == "permutation"
                          or (self.sampling == "auto" and self.auto_rule() == "permutation"))
        if not by_permutation:
            key, sub = jax.random.split(key)
            idx = _sdca_indices(sub, problem, self.sampling, Lam, self.auto_rule())
            return (*sdca_epoch(problem, u, w, Lam, idx, self.newton_steps), key)
        perm, key = permutation_and_key(key, n)
        if b == 1:
            return (*sdca_epoch(problem, u, w, Lam, perm, self.newton_steps, distinct=True), key)
        sigma = self.eso_sigma if self.eso_sigma is not None else row_normalised_sigma(problem.A)
        beta = eso_beta(b, jnp.asarray(sigma, problem.A.dtype), n)
        return (*sdca_minibatch_epoch(problem, u, w, Lam, perm, b, beta, self.newton_steps), key)


def default_prox_lam(problem):
    """Data-derived proximal weight ``lam = L_max / n`` with ``L_max = smoothness(l) max_i ||a_i||^2``.

    This is Corollary 3.2's ``lam = 2 mu + L R^2`` (accelerated APPA around SVRG) written in this
    library's averaged scaling (``phi_i = l / n``, so ``lam_avg = lam_sum / n``) with the known part
    ``mu = lam0`` of the strong convexity (0 for ``penalty=None``): ``lam = 2 lam0 + L_max / n``. It
    makes the paper's ``kappa_lam = L R^2 / lam <= 1``, i.e. each sub-problem is as well conditioned as one data
    pass of SVRG or SDCA can exploit (``n`` components of smoothness ``L R^2``, strong convexity
    ``L R^2 / n``; the same balance as Catalyst's ``kappa = L / n``, Lin, Mairal & Harchaoui,
    "A universal catalyst for first-order optimization"). For a non-smooth loss (hinge, Dual APPA
    only) the loss's Lipschitz constant times ``max_i ||a_i||^2 / n`` is used instead (the
    smoothness of its 1-smoothed surrogate). Positive unless ``A = 0`` and ``lam0 = 0`` (then ``1``).
    """
    sm = _smoothness_or_one(problem.loss, problem.A.dtype)
    lam = 2.0 * jnp.min(_lam0(problem, diagonal=True)) + sm * jnp.max(problem.A.row_norms_sq()) / problem.n
    return jnp.where(lam > 0, lam, 1.0).astype(problem.A.dtype)


def _prox_lam(solver, problem):
    """The solver's ``prox_lam`` or, when it is ``None``, :func:`default_prox_lam`."""
    if solver.prox_lam is None:
        return default_prox_lam(problem)
    return jnp.asarray(solver.prox_lam, problem.A.dtype)


def _prox_objective(problem, x, center, lam):
    """``(F(x), f_{center,lam}(x))`` with ``f_{s,lam}(x) = F(x) + (lam/2)||x - s||^2`` (eq. (3))."""
    F = problem.objective(x)
    return F, F + 0.5 * lam * jnp.sum((x - center) ** 2)


def suboptimality_bound(problem, w, mu=None, duals=()):
    """An honest upper bound on ``P(w) - inf P`` for (un- or lightly) regularised ERM.

    ``min`` of (i) the duality gap ``problem.best_certificate(w, *duals)`` (the dual points
    ``duals``, e.g. a method's running duals, scored with ``w``'s own in one product) when the
    problem has a ``SquaredL2`` penalty with ``lam0 > 0`` (+inf otherwise), (ii) the curvature bound
    :func:`jaxprox.problems.erm.curvature_bound` (squared and logistic losses; +inf for the
    others), and (iii) ``||g||^2 / (2 mu)`` if the user supplies a strong-convexity modulus ``mu``
    (an assumption the user is responsible for). For a non-smooth loss (the hinge) only (i).

    Cost: one pass for ``g`` and the eigenproblem of (ii); for ``d > n`` with ``lam0 > 0`` no
    eigenproblem: the Hessian's smallest eigenvalue is then ``lam0`` (attained on ``null(A)``),
    so (ii) is ``||g||^2 / (2 lam0)``, and a check costs one pass.
    """
    dt = problem.A.dtype
    inf = jnp.asarray(jnp.inf, dt)
    lam0 = _lam0(problem, diagonal=True)  # a vector for a column-scaled ridge (APPA)
    kind = problem.loss.family
    bounds = []
    if problem.penalty is not None:
        gap = problem.best_certificate(w, *duals)[2]
        bounds.append(jnp.where(jnp.all(lam0 > 0), jnp.maximum(gap, 0.0), inf))
    if not problem.loss.smooth:  # hinge (Dual APPA): only the duality gap
        return bounds[0] if bounds else inf
    z = problem.A.mv(w)
    g = problem.A.rmv(problem.loss.grad(z, problem.y)) / problem.n + lam0 * w
    gn = jnp.linalg.norm(g)
    if kind in ("squared", "logistic"):
        if problem.d > problem.n:
            # H = A^T D A / n + diag(lam0) equals diag(lam0) on null(A) (dimension >= d - n), so
            # its smallest eigenvalue is min(lam0) when that is positive: no d x d eigenproblem;
            # with lam0 = 0 the n x n Gram matrix has the Hessian's positive eigenvalues
            m = jnp.min(lam0)
            cheap = lambda: gn**2 / (2.0 * jnp.where(m > 0, m, 1.0))  # noqa: E731
            bounds.append(lax.cond(m > 0, cheap, lambda: curvature_bound(problem, z, g)))
        else:
            bounds.append(curvature_bound(problem, z, g, lam0))
    if mu is not None:
        bounds.append(gn**2 / (2.0 * jnp.asarray(mu, dt)))
    if not bounds:
        return inf
    return jnp.min(jnp.stack(bounds))


def _outer_certificate(problem, w, mu=None, duals=()):
    # full-precision products, as the certificate's dual pieces take them (the precision policy of
    # :mod:`jaxprox.problems.erm`): no TF32 in the curvature bound on a GPU, and the same
    # products as ``problem.certificate``'s, which XLA then computes once
    with jax.default_matmul_precision("highest"):
        p = problem.objective(w)
        b = suboptimality_bound(problem, w, mu, duals)
    return p, p - b, b


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
    margins), a candidate for the reported point (:func:`_report_best`): applied at every check
    to the best point so far, the reported point follows damped Newton (quadratic convergence
    near the optimum, a descent everywhere) whatever the dual iteration does. Not in the paper:
    the dual coordinate methods converge at a rate set by the conditioning of ``A A^T`` (columns
    in different units: the ``australian`` rows of ``benchmarks/results/defaults.md`` and
    ``dual_unscaled.md``), while this ``d``-dimensional step costs less than an epoch where
    :meth:`SDCA._newton_polishes` allows it."""
    from ..problems.erm import hessian

    A, y, loss = problem.A, problem.y, problem.loss
    lam = _lam0(problem)
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


def _report_best(problem, best, cand, t):
    """``(x, P(x), dual of x)``: the reported triple ``best`` after the candidate ``cand = (point,
    P(point), its dual)`` and, for the plain SVM where :meth:`SDCA._polishes`, the active-set polish
    of ``point`` (:func:`jaxprox.problems.bias_svm.plain_svm_polish`, tolerance cycled by the check
    count ``t``), or for a smooth loss under the same size rule a damped Newton step from the best
    point (:func:`newton_polish`), each kept where its exact ``P`` is lower (the reported point of
    SDCA and Dual APPA, :meth:`SDCA.refine`, :meth:`DualAPPA.refine`). The dual reported is the
    method's running dual ``cand[2]`` (the best so far: it ascends) unless the active-set polish
    applies, whose exact dual point goes with its point."""
    from ..problems.bias_svm import keep_best, plain_svm_polish

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


class _DualPair:
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


class SDCA(_DualPair, SDCAEpochs, EpochBudget, Solver):
    """Stochastic dual coordinate ascent (Shalev-Shwartz & Zhang 2013) for
    ``min_w (1/n) sum_i l(a_i^T w, y_i) + (lam/2)||w||^2`` (``penalty=SquaredL2(lam)``, lam > 0).

    Exact coordinate maximisation (:func:`coordinate_update`, note §3.1-3.4); ``w`` is kept equal to
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
        sampling: ``'auto'`` (default: SDCA's importance law ``q_i ~ 1 + L_i/(n lam)``,
            :func:`sampling_law`, when it is far from uniform, i.e. rows of very unequal norms,
            otherwise a fresh permutation per epoch), ``'importance'``, ``'permutation'`` or
            ``'uniform'`` (iid). Exact coordinate steps keep the dual monotone under any law.
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
    sampling: str = eqx.field(static=True, default="auto")
    newton_steps: int = eqx.field(static=True, default=15)
    batch: int | str = eqx.field(static=True, default="auto")
    eso_sigma: jax.Array | None = None
    max_steps: int | None = eqx.field(static=True, default=None, kw_only=True)
    check_every: int = eqx.field(static=True, default=1, kw_only=True)

    @staticmethod
    def _check(problem):
        """SDCA's primal map ``w = -A^T u / (n lam)`` needs ``lam > 0``: a ``ValueError`` for no
        penalty, another penalty, or a concrete ``lam <= 0`` (traced values pass)."""
        lam = _lam0(problem)
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

    @staticmethod
    def _primal(problem, u):
        return -problem.A.rmv(u) / (problem.n * _lam0(problem))

    def step(self, problem, s):
        u, w, key = self.epoch(problem, s.u, s.w, _lam0(problem), s.key)
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
        x, Px, ux = _report_best(problem, (s.x, s.Px, s.ux), (s.w, problem.objective(s.w), s.u), s.epoch)
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


# ----------------------------------------------------------------------------------------------
# SVRG


class SVRGState(eqx.Module):
    x: jax.Array
    key: jax.Array
    epoch: jax.Array


class SVRG(EpochBudget, Solver):
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
        sampling: ``'auto'`` (default: Prox-SVRG's law ``q_i = (L_i + L_avg) / (2 n L_avg)``,
            :func:`sampling_law`, when ``L_max >= 3 L_avg``, otherwise a fresh permutation),
            ``'importance'``, ``'permutation'`` or ``'uniform'``.
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
    sampling: str = eqx.field(static=True, default="auto")
    max_steps: int | None = eqx.field(static=True, default=None, kw_only=True)
    check_every: int = eqx.field(static=True, default=1, kw_only=True)

    def init(self, problem, init=None):
        _check_smooth(problem, "SVRG")
        x = problem.zeros() if init is None else jnp.asarray(init, problem.A.dtype)
        return SVRGState(x, jax.random.PRNGKey(self.seed), jnp.zeros((), jnp.int32))

    def step(self, problem, s):
        key, sub = jax.random.split(s.key)
        x = _svrg_epochs(problem, s.x, self.step_size, problem.prox, [sub], self.sampling)
        return SVRGState(x, key, s.epoch + 1)

    def certificate(self, problem, s):
        if problem.penalty is None:
            return _outer_certificate(problem, s.x)
        return problem.certificate(s.x)

    def params(self, s):
        return s.x


# ----------------------------------------------------------------------------------------------
# APPA and accelerated APPA


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

    * ``inner='svrg'``: SVRG on ``f_{y_t,lam}`` (prox of the quadratic), started at the centre
      (Algorithm 1) or at ``x_t`` (Algorithm 2, Lemma 3.5), step ``inner_step`` (default
      ``1/(3 L_Q)`` for the sampling law, as in :class:`SVRG`);
    * ``inner='sdca'``: the dual wrapper of Theorem 2.3: ``u = l'(A x_start)``, SDCA epochs on the
      dual of ``f_{y_t,lam}``, output ``x = c - A^T u/(n Lam)``.

    Either output is kept only if it does not increase ``f_{y_t,lam}`` over the start (safeguard,
    not in the paper; without it one SDCA epoch can increase F because the dual-to-primal map
    amplifies the dual error, Lemma B.1, and one SVRG epoch can overshoot on badly scaled data), so
    Algorithm 1 never increases F.

    Then ``y_{t+1} = x_{t+1}`` (Algorithm 1) or ``y_{t+1} = x_{t+1} + beta (x_{t+1} - x_t)`` with
    ``beta = (1 - rho^{-1/2}) / (1 + rho^{-1/2})``, ``rho = (mu + 2 lam)/mu`` (Algorithm 2, momentum
    form of note §2.2); ``momentum_reset=True`` zeroes the momentum when ``<y_t - x_{t+1}, x_{t+1} - x_t> > 0``
    (O'Donoghue & Candes), which keeps the method safe if ``mu`` is overestimated.

    Args:
        prox_lam: the proximal weight ``lam`` (array leaf); default ``None``: ``L_max / n``
            (:func:`default_prox_lam`, Corollary 3.2's ``kappa_lam = 1`` in the averaged scaling).
        inner: ``'svrg'`` or ``'sdca'``.
        accelerated: Algorithm 2 (default; Corollary 3.2's route to ``sqrt(kappa)``) or, with
            ``False``, Algorithm 1 (a descent method, but ``lam / mu`` outer iterations per e-fold).
        mu: strong-convexity modulus of ``F`` for Algorithm 2 (default ``lam0`` if positive, else
            ``prox_lam * 1e-3``); the certificate does not use it (it needs no assumption).
        inner_epochs: epochs of the inner solver per outer iteration (static; default 1 for
            SVRG, 3 for SDCA, whose dual-to-primal map needs a more accurate dual).
        sampling: as in :class:`SVRG` (inner SVRG) or :class:`SDCA` (inner SDCA).
    One ``step`` = one outer iteration = ``inner_epochs`` inner epochs (an SVRG epoch reads the
    data twice, an SDCA epoch once, plus one pass for the primal-to-dual map) and the safeguard
    (two passes); ``max_steps`` counts outer iterations (default ``None``: :func:`epoch_budget` of
    ``inner_epochs`` epochs per iteration, at least 200).
    Certificate: :func:`suboptimality_bound` (honest bound on ``F(x) - F*``).
    """

    requires = (cap.ERM_PROBLEM, cap.SMOOTH_LOSS, cap.RIDGE_OR_NONE_OR_SCALED, cap.NO_CONSTRAINT)
    option_ranges = {"inner_epochs": ">= 1", "inner_step": "> 0", "mu": "> 0", "newton_steps": ">= 1"}
    step_unit = "stages"

    prox_lam: jax.Array | None = eqx.field(default=None, converter=lambda v: None if v is None else as_leaf(v, "prox_lam"))
    inner: str = eqx.field(static=True, default="svrg")
    accelerated: bool = eqx.field(static=True, default=True)
    mu: jax.Array | None = eqx.field(default=None)
    inner_epochs: int | None = eqx.field(static=True, default=None)
    inner_step: float | None = eqx.field(default=None)
    momentum_reset: bool = eqx.field(static=True, default=True)
    seed: int = eqx.field(static=True, default=0)
    sampling: str = eqx.field(static=True, default="auto")
    newton_steps: int = eqx.field(static=True, default=15)
    max_steps: int | None = eqx.field(static=True, default=None, kw_only=True)
    check_every: int = eqx.field(static=True, default=1, kw_only=True)

    @property
    def epochs_per_step(self) -> int:
        """``inner_epochs``, or its default: 1 for SVRG, 3 for SDCA."""
        return self.inner_epochs or (1 if self.inner == "svrg" else 3)

    def init(self, problem, init=None):
        if self.inner not in ("svrg", "sdca"):
            raise ValueError(f"inner must be 'svrg' or 'sdca', got {self.inner!r}")
        _lam0(problem, diagonal=self.inner == "svrg")  # SDCA's dual map needs the plain ridge
        _check_smooth(problem, "APPA")
        x = problem.zeros() if init is None else jnp.asarray(init, problem.A.dtype)
        return APPAState(x, x, jax.random.PRNGKey(self.seed), jnp.zeros((), jnp.int32),
                         jnp.zeros((), jnp.int32))

    @property
    def rescales(self) -> bool:
        """Around SVRG (coordinate-wise inner prox) the column-rescaled ridge is solved as it is;
        SDCA's dual map needs the plain ridge (see :attr:`jaxprox.driver.Solver.rescales`)."""
        return self.inner == "svrg"

    def _mu(self, problem):
        if self.mu is not None:
            return jnp.asarray(self.mu, problem.A.dtype)
        lam0 = jnp.min(_lam0(problem, diagonal=True))  # the modulus of a (column-scaled) ridge
        return jnp.where(lam0 > 0, lam0, 1e-3 * _prox_lam(self, problem))

    def oracle(self, problem, center, start, key):
        """Approximate ``argmin_x f_{center,lam}(x)`` from ``start`` (Def. 2.1)."""
        lam = _prox_lam(self, problem)
        lam0 = _lam0(problem, diagonal=self.inner == "svrg")  # per coordinate after rescaling
        Lam = lam0 + lam
        c = lam * center / Lam
        n = problem.n
        epochs = self.epochs_per_step
        keys = jax.random.split(key, epochs)
        if self.inner == "svrg":
            x = _svrg_epochs(problem, start, self.inner_step, _quad_prox(Lam, c), keys, self.sampling)
        else:
            u = problem.loss.grad(problem.A.mv(start), problem.y)  # primal-to-dual map (6)
            x = c - problem.A.rmv(u) / (n * Lam)                    # dual-to-primal map (5')
            for k in keys:
                u, x = sdca_epoch(problem, u, x, Lam, _sdca_indices(k, problem, self.sampling, Lam,
                                                           sdca_auto_rule(self.prox_lam)),
                                  self.newton_steps)
        # Safeguard (one extra pass): keep the start if it is better for f_{center,lam}. The
        # dual-to-primal map can amplify the dual error by (n kappa_lam)^2 (Lemma B.1), and one
        # SVRG epoch from a start far from the sub-problem's minimiser can overshoot; with the
        # safeguard the oracle is monotone and Algorithm 1 a descent method (note §2.1).
        return jnp.where(_prox_objective(problem, x, center, lam)[1]
                         <= _prox_objective(problem, start, center, lam)[1], x, start)

    def step(self, problem, s):
        key, sub = jax.random.split(s.key)
        if not self.accelerated:
            x = self.oracle(problem, s.y, s.y, sub)
            return APPAState(x, x, key, s.outer + 1, s.restarts)
        lam = _prox_lam(self, problem)
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
        return _outer_certificate(problem, s.x)

    def params(self, s):
        return s.x


# ----------------------------------------------------------------------------------------------
# Dual APPA


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


class DualAPPA(_DualPair, SDCAEpochs, EpochBudget, Solver):
    """Dual APPA (Algorithm 3) in the practical form of §5.1 (note §2.4) with SDCA as the dual
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
    sampling: str = eqx.field(static=True, default="auto")
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

    def auto_rule(self) -> str | None:
        """``sampling='auto'`` with the default ``prox_lam`` is a permutation (:func:`sdca_auto_rule`)."""
        return sdca_auto_rule(self.prox_lam)

    def init(self, problem, init=None):
        lam0 = _lam0(problem)
        x = problem.zeros() if init is None else jnp.asarray(init, problem.A.dtype)
        lam = _prox_lam(self, problem)
        Lam = lam0 + lam
        Ax = linear_at(problem.A.mv, x, init is None)
        u = problem.loss.dual_point(Ax, problem.y)   # y^(0) = y_hat(x^(0))
        w = lam * x / Lam - problem.A.rmv(u) / (problem.n * Lam)
        Fx = problem._primal_at(x, Ax)
        return DualAPPAState(x, w, u, jax.random.PRNGKey(self.seed), jnp.zeros((), jnp.int32),
                             Fx, x, Fx, u, not problem.loss.smooth)

    def step(self, problem, st):
        lam = _prox_lam(self, problem)
        Lam = _lam0(problem) + lam
        key = st.key
        u, w = st.u, st.w
        for _ in range(self.inner_epochs):
            u, w, key = self.epoch(problem, u, w, Lam, key)
        x = w
        Fx, fx = _prox_objective(problem, x, st.s, lam)
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
                           _report_best(problem, (st.x, st.Px, st.ux), (st.s, st.Fs, st.u), st.stage))

    def certificate(self, problem, st):
        """:func:`suboptimality_bound` at the reported ``x`` and, with a penalty, also ``P(x) - D``
        with ``D`` the dual value of the running duals ``u`` (in ``dom l*``, so ``D(u)`` is a lower
        bound on ``P*`` by weak duality; near the optimum ``s ~ x*`` the sub-problem's optimality
        condition ``A^T u / n + lam0 x + lam (x - s) = 0`` is the problem's own, so ``u`` is nearly
        dual optimal -- the certificate that a non-smooth loss (hinge) needs), or of the polish's
        dual point where that is larger."""
        duals = () if problem.penalty is None else (st.u, st.ux) if SDCA._polishes(problem) else (st.u,)
        return _outer_certificate(problem, st.x, duals=duals)

    def params(self, st):
        return st.x

    def dual(self, st):
        return st.ux
