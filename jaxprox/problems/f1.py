"""Linear classifier trained on the F1-score multivariate loss (Example 3, eq. (43), section 5.4
of "Regularized Risk Minimization by Nesterov's Accelerated Gradient Methods: Algorithmic
Extensions and Empirical Studies", Zhang, Saha, Vishwanathan), as
an :class:`~jaxprox.problems.base.AGMModel` solved by primal smoothing:
:func:`f1_log_partition` is the forward dynamic programme (Algorithm 5) in log space,
:func:`f1_loss_smoothed` the smoothed loss whose gradient holds the marginals of Algorithm 6,
:func:`f1_loss_max` the exact unsmoothed loss-augmented maximum
used by the certificate.
"""
from __future__ import annotations

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from .base import AGMModel
from .validation import check_numeric, check_pm1, concrete, data_operator, label_vector, leaf, positive_leaf

__all__ = ["F1SVM", "f1_delta", "f1_log_partition", "f1_loss_max", "f1_loss_smoothed"]


_NEG = -1e30


def f1_delta(b, c, n_pos):
    """``1 - F1 = (b + c)/(2 n_+ - b + c)`` for ``b`` false negatives and ``c`` false positives
    (the paper's Delta is F1 itself; as a loss it must be 1 - F1)."""
    return (b + c) / (2.0 * n_pos - b + c)


def _forward_log(lc, swap):
    """Algorithm 5 in log space over one class: ``log V(v)`` for ``v = 0..m`` counted events
    (``lc_k = log c_k = x_k^T w / mu``). Positives: counted (false negative, y' = -1) weight
    ``1/c_k``, uncounted ``c_k``; negatives (``swap``): counted (false positive) ``c_k``,
    uncounted ``1/c_k``."""
    m = lc.shape[0]
    la0 = jnp.full((m + 1,), _NEG, lc.dtype).at[0].set(0.0)

    def body(la, l):
        cnt, stay = (l, -l) if swap else (-l, l)
        shifted = jnp.concatenate([jnp.full((1,), _NEG, lc.dtype), la[:-1]])
        return jnp.logaddexp(stay + la, cnt + shifted), None

    la, _ = lax.scan(body, la0, lc)
    return la


def _f1_logz(scores, pos, neg, n_pos, mu, delta):
    n = pos.shape[0] + neg.shape[0]
    lv_p = _forward_log(scores[pos] / mu, False)
    lv_n = _forward_log(scores[neg] / mu, True)
    b = jnp.arange(pos.shape[0] + 1, dtype=scores.dtype)[:, None]
    c = jnp.arange(neg.shape[0] + 1, dtype=scores.dtype)[None, :]
    grid = (n / mu) * delta(b, c, n_pos) + lv_p[:, None] + lv_n[None, :]
    return jax.scipy.special.logsumexp(grid)


def _split(y):
    check_numeric("y", y)
    check_pm1(y)
    y = np.asarray(y)
    return np.flatnonzero(y > 0), np.flatnonzero(y < 0)


def f1_log_partition(scores, y, mu, delta=f1_delta):
    """``log Z`` with ``Z = sum_{y'} exp((1/mu) sum_i y'_i s_i + (n/mu) Delta(y', y))``, by the
    forward dynamic programme (Algorithm 5, positives and negatives) and a logsumexp over the
    ``(b, c)`` grid: O(n^2). ``scores = X w``; ``y`` must be a concrete label vector."""
    pos, neg = _split(y)
    return _f1_logz(scores, jnp.asarray(pos), jnp.asarray(neg), pos.shape[0], mu, delta)


def f1_loss_max(scores, y, delta=f1_delta):
    """The unsmoothed loss-augmented maximum of (43), ``max_{y'} Delta(y', y) + (1/n) sum_i
    s_i (y'_i - y_i)``, exactly: for ``b`` false negatives and ``c`` false positives the best
    labelling flips the ``b`` lowest-scored positives (``-2 s_i`` each) and the ``c``
    highest-scored negatives (``+2 s_i`` each), so the maximum runs over the ``(b, c)`` grid of
    sorted prefix sums, O(n^2) (the ``mu -> 0`` limit of the DP)."""
    pos, neg = _split(y)
    return _f1_max(scores, jnp.asarray(pos), jnp.asarray(neg), pos.shape[0], delta)


def _f1_max(scores, pos, neg, n_pos, delta):
    n = pos.shape[0] + neg.shape[0]
    zero = jnp.zeros((1,), scores.dtype)
    P = -2.0 * jnp.concatenate([zero, jnp.cumsum(jnp.sort(scores[pos]))])
    N = 2.0 * jnp.concatenate([zero, jnp.cumsum(-jnp.sort(-scores[neg]))])
    b = jnp.arange(pos.shape[0] + 1, dtype=scores.dtype)[:, None]
    c = jnp.arange(neg.shape[0] + 1, dtype=scores.dtype)[None, :]
    return jnp.max(delta(b, c, n_pos) + (P[:, None] + N[None, :]) / n)


def f1_loss_smoothed(scores, y, mu, delta=f1_delta):
    """The smoothed F1 risk ``g*_mu(Aw) = (mu/n) [log Z - (1/mu) sum_i y_i s_i + log n]`` (note
    3.3, uncentred entropy); its gradient in ``scores`` is ``-2 p(y'_i = -y_i) y_i`` with the
    marginals of Algorithm 6 (mass ``1/n`` per example), obtained here by reverse-mode autodiff
    of the forward programme."""
    n = y.shape[0]
    yj = jnp.asarray(y, scores.dtype)
    return (mu / n) * (f1_log_partition(scores, y, mu, delta) - jnp.vdot(yj, scores) / mu + jnp.log(n))


class F1SVM(AGMModel):
    """Linear classifier trained on the F1-score multivariate loss (Example 3, eq. (43)):

        J(w) = lam/2 ||w||^2 + max_{y' in {-1,1}^n} [Delta(y', y) + (1/n) sum_i x_i^T w (y'_i - y_i)],

    ``Delta = 1 - F1``, solved by primal smoothing (scheme 5.1.1, section 5.4):
    the risk is replaced by its entropy-smoothed version
    ``g*_mu(Xw) = (mu/n) [log Z - y^T Xw/mu + log n]`` (:func:`f1_loss_smoothed`), whose log
    partition ``Z`` over the ``2^n`` labellings is the forward programme (Algorithm 5) and whose
    gradient ``X^T (m - y)/n``, ``m_i = E[y'_i]``, comes from the marginals (Algorithm 6, as the
    reverse pass of Algorithm 5). ``f`` is ``||X||^2/mu``-smooth (the Hessian in the scores is
    ``Cov(y')/(n mu) <= I/mu``) and ``Psi = lam/2 ||w||^2`` is ``lam``-strongly convex, so AGM
    converges linearly on the smoothed problem.

    ``alpha(w)`` is the smoothed maximiser, a distribution over labellings; the certificate needs
    it only through ``(m, E[Delta])`` (an ``(n+1)``-vector, linear in the distribution, so the
    AGM average is exact). The gap reported is that of the *unsmoothed* problem:
    ``J(w) - D(p)`` with ``J`` from :func:`f1_loss_max` and
    ``D(p) = E_p[Delta] - ||X^T (m - y)||^2/(2 lam n^2)`` (the adjoint (39) of (43)).
    Memory is O(n_+ n_-) (the ``(b, c)`` grid): meant for small and medium ``n``.
    """

    A: eqx.Module
    y: jax.Array
    pos: jax.Array
    neg: jax.Array
    lam: jax.Array
    mu: jax.Array
    n_pos: int = eqx.field(static=True)

    def __init__(self, X, y, lam, mu):
        if not concrete(y):
            raise TypeError("F1SVM needs concrete labels (the split into positives and negatives "
                            "fixes the shapes of the dynamic programme)")
        A = data_operator(X)
        pos, neg = _split(label_vector(y, A.shape[0], np.float64))  # NumPy: concrete under jit
        y = jnp.asarray(y, A.dtype)
        if pos.shape[0] == 0:
            raise ValueError("the F1 loss needs at least one positive example")
        self.A, self.y = A, y
        self.pos, self.neg, self.n_pos = jnp.asarray(pos), jnp.asarray(neg), int(pos.shape[0])
        self.lam = positive_leaf(lam, "lam", A.dtype, why=" (the dual divides by lam)")
        self.mu = positive_leaf(mu, "mu", A.dtype, why=": F1SVM is solved by smoothing (scheme 5.1.1)")

    @property
    def n(self):
        return self.A.shape[0]

    def with_lam(self, lam):
        """A copy with strength ``lam`` (an array leaf of the data's dtype)."""
        return eqx.tree_at(lambda m: m.lam, self, leaf(lam, "lam", self.A.dtype))

    def _logz(self, s, t=1.0):
        return _f1_logz(s, self.pos, self.neg, self.n_pos, self.mu, lambda b, c, p: t * f1_delta(b, c, p))

    def objective(self, w):
        """The unsmoothed ``J(w)``."""
        return 0.5 * self.lam * jnp.vdot(w, w) + _f1_max(self.A.mv(w), self.pos, self.neg, self.n_pos, f1_delta)

    def dual_objective(self, alpha):
        """``D(p) = E_p[Delta] - ||X^T (m - y)||^2/(2 lam n^2)`` with ``alpha = (m, E_p Delta)``."""
        v = self.A.rmv(alpha[:-1] - self.y) / self.n
        return alpha[-1] - jnp.vdot(v, v) / (2.0 * self.lam)

    # ---------------------------------------------------------------- AGM model interface
    def strong_convexity(self, geom):
        z = jnp.zeros((), self.A.dtype)
        return z, self.lam + z

    def lipschitz(self, geom):
        return self.A.spectral_norm_sq() / self.mu

    def x0(self, geom, init):
        return jnp.zeros((self.A.shape[1],), self.A.dtype) if init is None else jnp.asarray(init, self.A.dtype)

    def lin(self, x):
        return self.A.mv(x)

    def f_value(self, x, ax):
        return (self.mu / self.n) * (self._logz(ax) - jnp.vdot(self.y, ax) / self.mu + jnp.log(self.n))

    def f_grad(self, x, ax):
        """Value, gradient ``X^T (m - y)/n`` and ``alpha = (m, E[Delta])``: ``m = mu grad_s log Z``,
        ``E[Delta] = (mu/n) d log Z/dt`` for the loss scaled by ``t`` at ``t = 1``."""
        logz, (gs, gt) = jax.value_and_grad(self._logz, argnums=(0, 1))(ax, jnp.ones((), ax.dtype))
        m = self.mu * gs
        f = (self.mu / self.n) * (logz - jnp.vdot(self.y, ax) / self.mu + jnp.log(self.n))
        g = self.A.rmv(m - self.y) / self.n
        return f, g, jnp.concatenate([m, (self.mu / self.n) * gt[None]])

    def psi(self, x):
        return 0.5 * self.lam * jnp.vdot(x, x)

    def breg_prox(self, geom, kappa, theta, beta):
        return theta / (kappa + beta * self.lam)

    def certificate(self, x, ax, abar):
        prim = self.objective(x)
        dual = self.dual_objective(abar)
        return prim, dual, prim - dual

    def residual(self, w):
        """Prox-gradient fixed point of the smoothed problem, ``lam w + grad f(w)``."""
        return self.lam * w + self.f_grad(w, self.A.mv(w))[1]
