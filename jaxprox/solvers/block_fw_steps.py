"""The dual steps and partial SVDs of :class:`jaxprox.PDBlockFW` (Lei, Wu and Lin, "Primal-dual
block generalized Frank-Wolfe"), as components passed to its ``dual_step=`` and ``svd=``:

* :class:`Lipschitz`: the paper's proximal block step with the block-Lipschitz step size;
* :class:`Accelerated`: Algorithm 1 with ``eta = 1``, ``k = n`` and FISTA momentum on the dual
  (an extension; the default for the l1 ball without paper parameters);
* :class:`Curvature`: the coordinate step damped on each block by the dual's local curvature (an
  extension);
* :class:`Newton`: the block solved with its own coupling through the primal (an extension);
* :class:`ExactSVD`, :class:`PowerSVD`: the top-``s`` singular triplets of Algorithm 2.

``dual_step=None`` and ``svd=None`` (the defaults) choose from the problem (:class:`jaxprox.PDBlockFW`).
"""
from __future__ import annotations

import dataclasses
import math
from typing import Callable, ClassVar, NamedTuple

import equinox as eqx
import jax
import jax.numpy as jnp

from ..base import probe_vector
from .block_fw_select import project_l0_l1_dense

Array = jax.Array


def _support_projection(U, vals, r):
    """``U P`` with ``J = P P^T`` (``P`` a projector) the Jacobian of the primal map
    ``v -> P_{l0(s) ∩ l1(r)}(v)`` at the current step, on its last axis (the ``s`` entries of the
    support ``idx``): entries with ``vals = 0`` are dropped and, on the ball's surface, the direction
    ``sign(vals)`` is removed."""
    nz = vals != 0
    U = jnp.where(nz, U, 0.0)
    sg = jnp.sign(vals)
    m = jnp.maximum(jnp.sum(nz), 1)
    on_ball = jnp.sum(jnp.abs(vals)) >= r * (1 - 1e-9)
    return U - jnp.where(on_ball, 1.0, 0.0) * (U @ sg)[..., None] * sg / m


def _primal_jacobian_norm(dz, idx, vals, r):
    """``dz^T J dz = ||P^T dz_S||^2`` (:func:`_support_projection`): the local curvature of
    ``-n h^*(-A^T y / n)`` along the dual step."""
    u = _support_projection(dz[idx], vals, r)
    return jnp.sum(u * u)


def _tangent_norm(dZ, U, Vt):
    """``||P_T dZ||_F^2`` on the tangent space of the rank-``s`` matrices at ``U diag Vt``
    (``U U^T dZ + dZ V V^T - U U^T dZ V V^T``): for Alg. 2 the stand-in for ``dz^T J dz``."""
    a, b = U.T @ dZ, dZ @ Vt.T
    return jnp.sum(a * a) + jnp.sum(b * b) - jnp.sum((a @ Vt.T) ** 2)


def newton_block_cap(work: int, s: int, c: int = 64) -> int:
    """The largest dual block ``k`` whose Newton work ``k s min(k, s)`` (forming ``M M^T`` or
    ``M^T D M`` and one ``min(k, s)``-sized solve, :func:`coupled_block_prox`) stays within
    ``c`` times ``work = n + d``, the size of the step's selection passes. Without it the default
    block ``(n + d) / p`` of :class:`Newton` meets a large support badly: random-binning MNIST
    with raw pixels (``d = 870K``, ``s = 5441`` at radius 300) got ``k = 8815`` and a
    5441 x 5441 solve, 43 s a step; capped, ``k = 101``."""
    big = c * work // (s * s)  # the largest k > s, if k = s + 1 fits at all
    return max(1, big if big > s else min(s, math.isqrt(c * work // s)))


def coupled_block_prox(loss, labels, block, y0, v0, y, vals, r, sigma, c, newton_iters=2):
    """The dual block update with the coupling through the primal kept (:class:`Newton`, an
    extension, **not in the paper**): solve ``y = prox_{sigma f*}(v0 - c M M^T (y - y0))`` for the
    ``k`` selected rows, where ``M = A[I][:, S] P`` is the block seen through the Jacobian ``J = P P^T``
    of the s-sparse l1-ball map at the current step (support ``S``; on the ball's surface ``P``
    removes the direction ``sign(x_S)``), so that ``-c M M^T (y - y0)`` is the change of ``sigma w_I``
    that the block's own step causes through ``z`` and the primal. Rows that share the support's
    columns no longer each take the whole step (the damped step shrinks like ``1/k`` on such
    blocks). Semismooth Newton from the uncoupled prox ``y``; each iteration is one solve of size
    ``min(k, s)`` (``M M^T`` has rank ``s``: Woodbury when ``s < k``). The last prox keeps ``y`` in
    ``dom f*``. ``block = A[I][:, S]`` (:func:`~jaxprox.solvers.block_fw_layout.take_columns_block` or
    :func:`~jaxprox.solvers.block_fw_layout.rows_on_support`)."""
    M = _support_projection(block, vals, r)
    Mc = jnp.sqrt(c) * M
    prox = lambda u: loss.prox_conjugate(u, labels, sigma)  # noqa: E731
    k, s = M.shape
    eye = jnp.eye(min(k, s), dtype=M.dtype)
    for _ in range(newton_iters):
        u = v0 - Mc @ (Mc.T @ (y - y0))
        p, D = jax.jvp(prox, (u,), (jnp.ones_like(u),))
        F = y - p  # root of F; Jacobian I + diag(D) Mc Mc^T: solved in the smaller of k, s
        if k <= s:
            y = y - jnp.linalg.solve(eye + D[:, None] * (Mc @ Mc.T), F)
        else:  # Woodbury
            y = y - (F - D * (Mc @ jnp.linalg.solve(eye + Mc.T @ (D[:, None] * Mc), Mc.T @ F)))
    return prox(v0 - Mc @ (Mc.T @ (y - y0)))


class Block(NamedTuple):
    """What a dual block update sees in one step of Algorithm 1 / 2: the selected rows ``I`` (their
    operator ``rows`` and duals ``y0``), the uncoupled prox ``yt`` and its change ``diff`` (all
    rows), the new ``w``, the steps ``sigma = delta / n`` and ``eta``, the scale ``n``, ``mu``, the
    radius ``r``, the ball's ``kind``, the primal support ``idx`` with its values ``vals`` (Alg. 1)
    or the factors ``U, Vt`` (Alg. 2), and ``block()``: ``A[I][:, idx]``."""

    I: Array
    rows: object
    y0: Array
    yt: Array
    diff: Array
    w: Array
    sigma: Array
    eta: Array
    n: int
    mu: Array
    r: Array
    kind: str
    idx: Array | None
    vals: Array | None
    U: Array | None
    Vt: Array | None
    block: Callable[[], Array]


class DualStep(eqx.Module):
    """The dual update of :class:`jaxprox.PDBlockFW`: the default block size and step, and the update
    of the selected block (:meth:`update`)."""

    #: Algorithm 1 (the l1 ball) only
    l1_only: ClassVar[bool] = False
    #: sets its own ``eta`` and ``delta`` and takes whole products ``A x``, ``A^T y`` (:meth:`step`)
    own_steps: ClassVar[bool] = False
    #: the default ``delta / n`` is the coordinate step ``n mu / R`` (else ``n mu / Lk``)
    coordinate_step: ClassVar[bool] = True

    def block_size(self, k: int, n: int, d: int, p: int, s: int) -> int:
        """The default block from the paper's ``k = max(1, n s / d)`` (``p``: stored entries per row)."""
        return k

    def update(self, problem, st, b: Block):
        """``(y, z)`` after the update of the rows ``b.I``."""
        raise NotImplementedError


class Lipschitz(DualStep):
    """The paper's step: the prox values ``yt_I`` taken as they are, with the block-Lipschitz step
    ``delta / n = n mu / Lk`` by default (:class:`jaxprox.PDBlockFW`)."""

    coordinate_step: ClassVar[bool] = False

    def update(self, problem, st, b: Block):
        yI = b.yt[b.I]
        return st.y.at[b.I].set(yI), b.rows.rmv_add(yI - b.y0, st.z)


class Curvature(DualStep):
    """**An extension, not in the paper**: the single-coordinate step ``delta / n = n mu / R``,
    damped on each block by the local curvature of the dual along the step (:meth:`damping`), and a
    default block ``k = max(ns/d, 4 (n + d) / p)`` that also balances the ``O(n + d)`` selections
    against the ``O(k p)`` row work. For high-dimensional data with a sparse solution; it can
    oscillate on low-dimensional, strongly correlated data with a tight ball (see
    :class:`jaxprox.PDBlockFW`)."""

    def block_size(self, k, n, d, p, s):
        return max(k, 4 * (n + d) // p)

    def update(self, problem, st, b: Block):
        dy = b.diff[b.I]
        dz = b.rows.rmv(dy)  # A_I^T dy
        dzJ = _primal_jacobian_norm(dz, b.idx, b.vals, b.r) if b.kind == "l1" else _tangent_norm(dz, b.U, b.Vt)
        tau = self.damping(dy, dzJ, b.sigma * b.eta, b.n * b.mu)
        return st.y.at[b.I].add(tau * dy), st.z + tau * dz

    @staticmethod
    def damping(dy, dzJ, sigma, n_mu):
        """``tau = min(1, 1 / (sigma rho))`` with ``rho = dz^T J dz / (n mu ||dy||^2)``, ``dz = A_I^T dy``
        and ``J`` the Jacobian of the primal map (:func:`_primal_jacobian_norm`; Alg. 2:
        :func:`_tangent_norm`): the local curvature of ``-n h^*(-A^T y / n)`` along the block step.
        For that quadratic model the prox inequality gives an ascent of at least
        ``tau ||dy||^2 / sigma - tau^2 rho ||dy||^2 / 2 > 0``, and ``y + tau dy`` stays in ``dom f^*`` by
        convexity. ``sigma`` is passed as ``eta sigma``: the dual sees a new primal point only
        through ``w <- (1 - eta) w + eta A xt``."""
        return jnp.minimum(1.0, n_mu * jnp.sum(dy * dy) / jnp.maximum(sigma * dzJ, jnp.finfo(dy.dtype).tiny))


class Newton(DualStep):
    """**An extension, not in the paper** (Algorithm 1 only): the coordinate step of
    :class:`Curvature`, but the ``k`` selected rows are solved jointly with their own coupling
    through the primal (:func:`coupled_block_prox`), undamped; default block
    ``k = max(ns/d, (n + d) / p)``, capped so that the dense Newton work ``k s min(k, s)`` stays
    within ``64 (n + d)`` (:func:`newton_block_cap`)."""

    l1_only: ClassVar[bool] = True

    def block_size(self, k, n, d, p, s):
        return min(max(k, (n + d) // p), newton_block_cap(n + d, s))

    def update(self, problem, st, b: Block):
        yI = coupled_block_prox(problem.loss, problem.y[b.I], b.block(), b.y0, b.y0 + b.sigma * b.w[b.I],
                                b.yt[b.I], b.vals, b.r, b.sigma, b.sigma * b.eta / (b.n * b.mu))
        return st.y.at[b.I].set(yI), b.rows.rmv_add(yI - b.y0, st.z)


class Accelerated(DualStep):
    """**An extension, not in the paper** (Algorithm 1 only): ``eta = 1``, ``k = n``, FISTA momentum
    on ``y`` with gradient restart and a backtracked dual curvature (:meth:`step`); each iteration
    costs one ``A x`` and one ``A^T y``."""

    l1_only: ClassVar[bool] = True
    own_steps: ClassVar[bool] = True

    def block_size(self, k, n, d, p, s):
        return n  # every row: a full proximal gradient step on the dual

    def step(self, problem, st, s: int, n: int):
        """One step (**an extension, not in the paper**): Algorithm 1 with
        ``eta = 1`` and ``k = n`` (so ``xt`` is the primal best response ``P_{l0(s) ∩ l1(r)}(-A^T y / (n mu))``
        and the dual step a proximal gradient step on ``-n D``), with Nesterov momentum on ``y``
        (FISTA, Beck & Teboulle, "A Fast Iterative Shrinkage-Thresholding Algorithm for Linear
        Inverse Problems"), the gradient restart of O'Donoghue & Candès ("Adaptive Restart for
        Accelerated Gradient Schemes") and a backtracked estimate ``L_t`` of the dual curvature::

            yh = y + beta (y - y_prev)                      beta = (theta - 1) / theta+
            xt = P_{l0(s) ∩ l1(r)}(-A^T yh / (n mu))         (grad of F(y) = n h^*(-A^T y / n) is -A xt)
            y+ = prox_{f^*/L}(yh + A xt / L)
            accept iff F(y+) <= F(yh) - <A xt, y+ - yh> + (L/2) ||y+ - yh||^2    else L <- 2 L
            restart (theta = 1) iff <yh - y+, y+ - y> > 0;   after an accepted step L <- max(0.9 L, floor)

        ``F(y) = -<A^T y, xb> - (n mu / 2) ||xb||^2`` at the best response ``xb`` costs ``O(d)`` given
        ``A^T y``. The dual ``-n D`` is ``1/beta``-strongly convex with curvature at most
        ``||A||^2 / (n mu)``, so the iteration count grows like ``sqrt(beta ||A||^2 / (n mu))``
        instead of linearly; the estimate ``L_t`` follows the curvature on the current support (far
        below ``||A||^2 / (n mu)`` when the ball is tight). A rejected step changes only ``L``."""
        A, mu, r = problem.A, problem.penalty.lam, problem.constraint.radius
        dt = st.y.dtype
        theta = (1 + jnp.sqrt(1 + 4 * st.theta**2)) / 2
        beta = (st.theta - 1) / theta
        yh, zh = st.y + beta * (st.y - st.yp), st.z + beta * (st.z - st.zp)

        def best_response(z):
            return project_l0_l1_dense(-z / (n * mu), s, r)

        def F(z, xb):  # n h^*(-z / n) at its maximiser xb
            return -jnp.vdot(z, xb) - n * mu / 2 * jnp.vdot(xb, xb)

        xt = best_response(zh)
        w = A.mv(xt)
        y = problem.loss.prox_conjugate(yh + w / st.Lh, problem.y, 1 / st.Lh)
        z = A.rmv(y)
        x = best_response(z)
        dy = y - yh
        Fh, Fn = F(zh, xt), F(z, x)
        slack = 64 * jnp.finfo(dt).eps * (jnp.abs(Fh) + jnp.abs(Fn) + jnp.abs(jnp.vdot(w, dy)))
        ok = Fn <= Fh - jnp.vdot(w, dy) + st.Lh / 2 * jnp.vdot(dy, dy) + slack
        restart = jnp.vdot(yh - y, y - st.y) > 0
        keep = lambda new, old: jnp.where(ok, new, old)  # noqa: E731
        return dataclasses.replace(
            st, x=keep(x, st.x), y=keep(y, st.y), w=keep(w, st.w), z=keep(z, st.z),
            yp=keep(jnp.where(restart, y, st.y), st.yp), zp=keep(jnp.where(restart, z, st.z), st.zp),
            theta=keep(jnp.where(restart, 1.0, theta), st.theta).astype(dt),
            Lh=jnp.where(ok, self.lower(st, dy, n * mu), 2 * st.Lh), t=st.t + 1)

    @staticmethod
    def lower(st, dy, n_mu):
        """``L_t`` after an accepted step: ``0.9 L_t``, but not after a step that did not move
        (``dy = 0``) and never below ``eps ||A||^2 / (n mu)``, so ``L_t`` cannot decay to zero
        over many trivial steps (in float32 it would underflow and freeze the run)."""
        floor = jnp.finfo(st.Lh.dtype).eps * st.Lk / n_mu
        return jnp.where(jnp.any(dy != 0), jnp.maximum(0.9 * st.Lh, floor), st.Lh)


class ExactSVD(eqx.Module):
    """Top-``s`` singular triplets of Algorithm 2 from a full SVD, truncated."""

    def subspace(self, c: int, d: int, s: int, dtype):
        """No warm-start subspace: an empty array."""
        return jnp.zeros((0,), dtype)

    def top(self, M, s: int, Q):
        U, sv, Vt = jnp.linalg.svd(M, full_matrices=False)
        return U[:, :s], sv[:s], Vt[:s], Q


class PowerSVD(eqx.Module):
    """Top-``s`` singular triplets of Algorithm 2 by block power (subspace) iteration warm-started
    from the previous right subspace ``Q`` (``c x q``, static rank ``q = s + oversample``), ``iters``
    iterations then a Rayleigh-Ritz step (``B = P^T M``, small SVD)."""

    iters: int = eqx.field(static=True, default=2)
    oversample: int = eqx.field(static=True, default=5)

    def __check_init__(self):
        if int(self.iters) < 0 or int(self.oversample) < 0:
            raise ValueError(f"PowerSVD needs iters >= 0 and oversample >= 0, got {self.iters}, {self.oversample}")

    def subspace(self, c: int, d: int, s: int, dtype):
        q = min(s + self.oversample, d, c)
        return jnp.linalg.qr(probe_vector((c, q), dtype))[0]

    def top(self, M, s: int, Q):
        for _ in range(self.iters):
            P = jnp.linalg.qr(M @ Q)[0]
            Q = jnp.linalg.qr(M.T @ P)[0]
        P = jnp.linalg.qr(M @ Q)[0]
        Ub, sv, Vbt = jnp.linalg.svd(P.T @ M, full_matrices=False)
        return (P @ Ub[:, :s]), sv[:s], Vbt[:s], Vbt.T


_STEPS = {"accelerated": "Accelerated", "lipschitz": "Lipschitz", "curvature": "Curvature", "newton": "Newton"}


def as_dual_step(value) -> DualStep | None:
    """Checks ``dual_step=``: a :class:`DualStep` or ``None`` (automatic); a string is refused with a
    ``TypeError`` that names the object to pass."""
    if value is None or isinstance(value, DualStep):
        return value
    if value == "auto":
        raise TypeError("dual_step='auto' is no longer a string option: leave dual_step=None (the default)")
    if isinstance(value, str) and value in _STEPS:
        raise TypeError(f"dual_step={value!r} is no longer a string option: pass "
                        f"dual_step=jaxprox.solvers.block_fw.{_STEPS[value]}()")
    raise TypeError(f"dual_step must be None or one of jaxprox.solvers.block_fw.Accelerated(), Lipschitz(), "
                    f"Curvature(), Newton(); got {value!r}")


def as_svd(value):
    """Checks ``svd=``: :class:`ExactSVD`, :class:`PowerSVD` or ``None`` (automatic); a string is
    refused with a ``TypeError`` that names the object to pass."""
    if value is None or isinstance(value, (ExactSVD, PowerSVD)):
        return value
    names = {"auto": "None (the default)", "exact": "jaxprox.solvers.block_fw.ExactSVD()",
             "power": "jaxprox.solvers.block_fw.PowerSVD(iters=2, oversample=5)"}
    if isinstance(value, str) and value in names:
        raise TypeError(f"svd={value!r} is no longer a string option: pass svd={names[value]}")
    raise TypeError(f"svd must be None, ExactSVD() or PowerSVD(...), got {value!r}")
