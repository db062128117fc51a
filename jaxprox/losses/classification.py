"""Classification losses (labels in ``{-1, +1}``): the hinge family, smoothed and squared hinges,
the logistic loss and the budget hinge, with their conjugates (see :mod:`jaxprox.losses`)."""
from __future__ import annotations

from typing import ClassVar

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from jaxprox import projections
from jaxprox.base import Array, as_leaf

from ._common import NesterovSmoothed, _check_pm1, _concrete, _inside, _Loss, _positive, _restrict, _slack


# --------------------------------------------------------------------------------------------
# classification
# --------------------------------------------------------------------------------------------
class Hinge(_Loss):
    """Hinge loss ``max(0, 1 - y z)`` (Pdprox section 1.5).

    Dual: ``max_{s in [0,1]} s (1 - y z)``, so with ``u = -y s``: ``l*(u, y) = y u`` on
    ``-y u in [0, 1]``. ``l*`` is linear on its domain, hence
    ``prox_{step l*}(u) = P_dom(u - step y)`` (Pdprox section 3.1).
    """

    family = "hinge"

    def value(self, z, y):
        return jnp.maximum(0.0, 1.0 - y * z)

    def conjugate(self, u, y):
        s = -y * u
        return _restrict(_inside(s, 0.0, 1.0), -s)

    def project_dual(self, u, y):
        return -y * jnp.clip(-y * u, 0.0, 1.0)

    def prox_conjugate(self, u, y, step):
        return self.project_dual(u - step * y, y)

    def dual_point(self, z, y):
        """``u = -y 1[y z < 1]`` (``s = 0`` at the kink ``y z = 1``, where any ``s in [0,1]`` works)."""
        return -y * (y * z < 1.0).astype(jnp.result_type(z, y, float))

    @property
    def lipschitz(self):
        return 1.0

    def check_labels(self, y):
        _check_pm1(self, y)

    def smoothed(self, mu):
        """Nesterov smoothing: :class:`SmoothedHinge` ``(mu)`` (Zhang et al., AGM-EF)."""
        return SmoothedHinge(mu)


class ThresholdHinge(Hinge):
    """All-threshold hinge for ordinal labels (Pdprox section 5.3, max-margin matrix
    factorisation after Rennie & Srebro 2005): with thresholds
    ``theta_1 < ... < theta_R`` and a rating ``Y in {1, ..., R + 1}``,

        l(z, Y) = sum_r max(0, 1 - y_r (z - theta_r)),    y_r = +1 if r < Y else -1,

    i.e. the prediction ``z`` should lie at least 1 above every threshold below the rating and 1
    below every other. Margins and labels have shape ``(n, R)`` (one copy of ``z`` per threshold:
    ``operators.observed_entries(..., copies=R)``; labels from :meth:`labels`), each entry a
    hinge shifted by ``theta_r``: ``l_theta(z) = l(z - theta)`` so ``l_theta*(u) = l*(u) + theta u``
    and ``prox_{step l_theta*}(u) = prox_{step l*}(u - step theta)``. The risk averages over the
    ``n`` samples (``R`` terms each), the paper's 4-threshold loss with ``theta = (0, 3, 6, 9)``.
    """

    family = "generic"  # the hinge shifted by thresholds: no closed form is assumed

    thresholds: Array

    def __init__(self, thresholds=(0.0, 3.0, 6.0, 9.0)):
        th = jnp.asarray(thresholds, dtype=jnp.result_type(float))
        if th.ndim != 1 or th.size == 0:
            raise ValueError(f"thresholds must be a non-empty 1-D sequence, got {thresholds!r}")
        if _concrete(th) and not np.all(np.diff(np.asarray(th)) > 0):
            raise ValueError(f"thresholds must be strictly increasing, got {thresholds!r}")
        self.thresholds = th

    @staticmethod
    def labels(ratings, n_thresholds: int):
        """``(n, R)`` labels ``y[k, r] = +1`` if ``r + 1 < Y_k`` else ``-1`` (ratings ``1..R+1``)."""
        r = np.arange(1, n_thresholds + 1)
        return np.where(r[None, :] < np.asarray(ratings)[:, None], 1.0, -1.0)

    def value(self, z, y):
        return Hinge.value(self, z - self.thresholds, y)

    def conjugate(self, u, y):
        return Hinge.conjugate(self, u, y) + self.thresholds * u

    def prox_conjugate(self, u, y, step):
        return Hinge.prox_conjugate(self, u - step * self.thresholds, y, step)

    def dual_point(self, z, y):
        return Hinge.dual_point(self, z - self.thresholds, y)

    def check_labels(self, y):
        _check_pm1(self, y)
        if np.ndim(y) != 2 or np.shape(y)[1] != self.thresholds.shape[0]:
            raise ValueError(f"ThresholdHinge needs (n, {self.thresholds.shape[0]}) labels "
                             f"(ThresholdHinge.labels), got shape {np.shape(y)}")

    def smoothed(self, mu):
        return NesterovSmoothed(self, mu)


class GeneralizedHinge(_Loss):
    """Generalized hinge (Bartlett--Wegkamp) ``max(0, 1 - y z, 1 - a y z)``, ``a >= 1``
    (Pdprox section 1.5: ``1 - a y z`` for ``y z <= 0``, ``1 - y z`` on ``(0, 1)``, 0 after).

    The paper's two dual variables (``alpha_1 + alpha_2 <= 1``) collapse in the margin to one:
    ``s = a alpha_1 + alpha_2 = -y u in [0, a]`` with ``l*(u, y) = -min(s, 1) = max(y u, -1)``.
    ``prox_{step l*}`` in ``s``: ``s+ = clip(s0 + step, 0, 1) + clip(s0 - 1, 0, a - 1)``
    (slope -1 on ``[0, 1]``, flat on ``[1, a]``), ``s0 = -y u``.
    """

    a: Array

    def __init__(self, a=2.0):
        self.a = as_leaf(a, "a")
        if _concrete(self.a) and np.any(np.asarray(self.a) < 1):
            raise ValueError(f"GeneralizedHinge needs a >= 1, got a={a!r}")

    def value(self, z, y):
        t = y * z
        return jnp.maximum(jnp.maximum(0.0, 1.0 - t), 1.0 - self.a * t)

    def conjugate(self, u, y):
        s = -y * u
        return _restrict(_inside(s, 0.0, self.a), -jnp.minimum(s, 1.0))

    def project_dual(self, u, y):
        return -y * jnp.clip(-y * u, 0.0, self.a)

    def prox_conjugate(self, u, y, step):
        s0 = -y * u
        s = jnp.clip(s0 + step, 0.0, 1.0) + jnp.clip(s0 - 1.0, 0.0, self.a - 1.0)
        return -y * s

    def dual_point(self, z, y):
        """``s = a`` if ``y z < 0``, ``1`` if ``0 <= y z < 1``, ``0`` otherwise."""
        t = y * z
        s = jnp.where(t < 0, self.a, jnp.where(t < 1, 1.0, 0.0))
        return -y * s

    @property
    def lipschitz(self):
        return self.a

    def check_labels(self, y):
        _check_pm1(self, y)


class SmoothedHinge(_Loss):
    """Nesterov-smoothed hinge (Zhang et al., AGM-EF; Frostig et al., "Un-regularizing"):

        h_mu(z, y) = max_{s in [0,1]} s r - mu s^2 / 2,   r = 1 - y z
                   = 0 (r <= 0),  r^2 / (2 mu) (0 <= r <= mu),  r - mu/2 (r >= mu).

    ``l*(u, y) = -s + mu s^2 / 2`` on ``s = -y u in [0, 1]``; gradient ``-y clip(r / mu, 0, 1)``;
    ``prox_{step l*}``: ``s = clip((s0 + step) / (1 + step mu), 0, 1)``. Requires ``mu > 0``.
    """

    family = "smoothed_hinge"

    mu: Array
    flat_outside_band: ClassVar[bool] = True
    smooth: bool = eqx.field(static=True, default=True, kw_only=True)

    def __init__(self, mu=1.0):
        self.mu = _positive(mu, "mu")

    def _s(self, z, y):
        return jnp.clip((1.0 - y * z) / self.mu, 0.0, 1.0)

    def value(self, z, y):
        s = self._s(z, y)
        return s * ((1.0 - y * z) - 0.5 * self.mu * s)

    def grad(self, z, y):
        return -y * self._s(z, y)

    def conjugate(self, u, y):
        s = -y * u
        return _restrict(_inside(s, 0.0, 1.0), -s + 0.5 * self.mu * s * s)

    def project_dual(self, u, y):
        return -y * jnp.clip(-y * u, 0.0, 1.0)

    def prox_conjugate(self, u, y, step):
        return -y * jnp.clip((-y * u + step) / (1.0 + step * self.mu), 0.0, 1.0)

    @property
    def lipschitz(self):
        return 1.0

    @property
    def smoothness(self):
        return 1.0 / self.mu

    def check_labels(self, y):
        _check_pm1(self, y)


class SquaredHinge(_Loss):
    """Squared hinge (L2-SVM, sklearn ``squared_hinge``) ``max(0, 1 - y z)^2``.

    ``l*(u, y) = -s + s^2 / 4`` on ``s = -y u >= 0`` (maximiser ``s = 2 (1 - y z)_+``);
    ``prox_{step l*}``: ``s = max(0, (s0 + step) / (1 + step / 2))``. 2-smooth.
    """

    flat_outside_band: ClassVar[bool] = True
    smooth: bool = eqx.field(static=True, default=True, kw_only=True)

    def value(self, z, y):
        r = jnp.maximum(0.0, 1.0 - y * z)
        return r * r

    def grad(self, z, y):
        return -2.0 * y * jnp.maximum(0.0, 1.0 - y * z)

    def conjugate(self, u, y):
        s = -y * u
        return _restrict(_inside(s, 0.0, jnp.inf), -s + 0.25 * s * s)

    def project_dual(self, u, y):
        return -y * jnp.maximum(-y * u, 0.0)

    def prox_conjugate(self, u, y, step):
        return -y * jnp.maximum(0.0, (-y * u + step) / (1.0 + 0.5 * step))

    @property
    def smoothness(self):
        return 2.0

    def check_labels(self, y):
        _check_pm1(self, y)


def _logistic_dual_prox(s0, step, iters: int = 8):
    """``argmin_{s in [0,1]} step (s log s + (1-s) log(1-s)) + (s - s0)^2 / 2``.

    Stationarity in ``t = logit(s)``: ``h(t) = step t + sigmoid(t) - s0 = 0`` (``h' >= step``,
    unique root; Frostig et al., "Un-regularizing" in logit space). By the symmetry
    ``t*(s0) = -t*(1 - s0)`` we solve with ``q0 = min(s0, 1 - s0) <= 1/2``, so ``t* <= 0`` and
    ``t*`` lies in ``[max(logit q0, (q0 - 1/2)/step), min(0, q0/step)]``. Each of the ``iters``
    (static) steps shrinks that bracket with the sign of ``h`` and takes, of two Newton steps
    clipped to it -- on ``h`` and on ``k(t) = log sigmoid(t) - log(q0 - step t)`` (the same root;
    ``k`` is nearly linear where ``sigmoid`` dominates, ``h`` where ``step t`` does) -- the one
    with the smaller ``|h|``. Eight steps reach rounding level for ``step`` in ``[1e-12, 1e12]``
    and any ``s0`` (tested); the loop stops sooner, once every ``|h(t)|`` is at its rounding level
    ``4 eps (step |t| + 1)``. The iterate is then frozen and one last Newton step on ``h`` carries
    the implicit-function derivative ``dt = -(dh) / h'``. ``step = 0`` gives ``clip(s0, 0, 1)``.
    """
    dt = jnp.result_type(s0, step, float)
    s0 = jnp.asarray(s0, dt)
    step = jnp.asarray(step, dt)
    pos = step > 0
    st = jnp.where(pos, step, 1.0)
    flip = s0 > 0.5
    q0 = jnp.where(flip, 1.0 - s0, s0)
    tiny = jnp.finfo(dt).tiny

    def h(t, q0, st):
        return st * t + jax.nn.sigmoid(t) - q0

    q0_, st_ = lax.stop_gradient(q0), lax.stop_gradient(st)
    qpos = q0_ > 0
    qs = jnp.where(qpos, q0_, 0.25)
    lo = jnp.maximum(jnp.where(qpos, jnp.log(qs) - jnp.log1p(-qs), -jnp.inf), (q0_ - 0.5) / st_)
    hi = jnp.minimum(0.0, q0_ / st_)

    eps = jnp.finfo(dt).eps

    def unsettled(c):  # some |h(t)| above its rounding level, and steps left
        i, t, _, _, ht = c
        return (i < iters) & jnp.any(jnp.abs(ht) > 4.0 * eps * (st_ * jnp.abs(t) + 1.0))

    def body(c):
        i, t, lo, hi, ht = c
        lo = jnp.where(ht <= 0, jnp.maximum(lo, t), lo)
        hi = jnp.where(ht >= 0, jnp.minimum(hi, t), hi)
        sig = jax.nn.sigmoid(t)
        th = jnp.clip(t - ht / (st_ + sig * (1.0 - sig)), lo, hi)
        q = q0_ - st_ * t
        qsafe = jnp.maximum(q, tiny)
        k = jax.nn.log_sigmoid(t) - jnp.log(qsafe)
        tk = jnp.clip(t - k / (1.0 - sig + st_ / qsafe), lo, hi)
        tk = jnp.where(q > 0, tk, th)
        hk, hh = h(tk, q0_, st_), h(th, q0_, st_)
        better = jnp.abs(hk) < jnp.abs(hh)
        return i + 1, jnp.where(better, tk, th), lo, hi, jnp.where(better, hk, hh)

    _, t, _, _, _ = lax.while_loop(unsettled, body, (0, lo, lo, hi, h(lo, q0_, st_)))
    t = lax.stop_gradient(t)
    sig = jax.nn.sigmoid(t)
    t = t - h(t, q0, st) / (st + sig * (1.0 - sig))
    s = jax.nn.sigmoid(jnp.where(flip, -t, t))
    return jnp.where(pos, s, jnp.clip(s0, 0.0, 1.0))


class Logistic(_Loss):
    """Logistic loss ``log(1 + exp(-y z))`` (= ``softplus(-y z)``, stable for any ``z``).

    ``l*(u, y) = s log s + (1 - s) log(1 - s)`` on ``s = -y u in [0, 1]`` (``0 log 0 = 0``;
    Frostig et al., "Un-regularizing"); gradient ``-y sigmoid(-y z)``; 1/4-smooth. ``prox_{step l*}`` has
    no closed form: safeguarded Newton in logit space, see :func:`_logistic_dual_prox`.
    """

    family = "logistic"

    smooth: bool = eqx.field(static=True, default=True, kw_only=True)

    def value(self, z, y):
        return jax.nn.softplus(-y * z)

    def grad(self, z, y):
        return -y * jax.nn.sigmoid(-y * z)

    def conjugate(self, u, y):
        s = -y * u
        sc = jnp.clip(s, 0.0, 1.0)
        ent = jax.scipy.special.xlogy(sc, sc) + jax.scipy.special.xlogy(1.0 - sc, 1.0 - sc)
        return _restrict(_inside(s, 0.0, 1.0), ent)

    def project_dual(self, u, y):
        return -y * jnp.clip(-y * u, 0.0, 1.0)

    def prox_conjugate(self, u, y, step):
        return -y * _logistic_dual_prox(-y * u, step)

    @property
    def lipschitz(self):
        return 1.0

    @property
    def smoothness(self):
        return 0.25

    def check_labels(self, y):
        _check_pm1(self, y)


class BudgetHinge(_Loss):
    """Budget (sparse-dual) hinge, Pdprox section 5.5, eq. (19):

        risk(z) = max_{s in Q} (1/n) sum_i s_i (1 - y_i z_i),   Q = {s in [0,1]^n : sum s <= m},
                = (1/n) (sum of the m largest hinge values h_i = (1 - y_i z_i)_+),

    with fractional ``m`` interpolated: ``(1/n) sum_k clip(m - k, 0, 1) h_(k)`` over the hinge
    values sorted in decreasing order (``k = 0, 1, ...``). ``m >= n`` is the mean hinge.
    The risk is **not separable**: ``risk``, ``conjugate_risk``, ``project_dual`` and
    ``prox_conjugate`` act on the whole vector. With ``u = -y s``:
    ``sum_i l*(u_i) = sum_i y_i u_i`` on ``Q`` (``+inf`` off it); ``conjugate`` returns the
    per-sample terms ``y_i u_i`` (all ``+inf`` when ``sum s > m``); ``value`` returns the
    per-sample contributions ``s*_i h_i`` (their mean is the risk); ``project_dual`` is the
    capped-simplex projection (Lemma 13) and ``prox_{step l*}(u) = P_Q(u - step y)``.
    """

    m: Array

    def __init__(self, m=1.0):
        self.m = as_leaf(m, "m")

    def _weights(self, z, y):
        """Optimal ``s*``: ``clip(m - rank_i, 0, 1)`` by decreasing hinge value (ties by index),
        and 0 where ``1 - y z < 0``."""
        r = 1.0 - y * z
        order = jnp.argsort(-r, stable=True)
        rank = jnp.argsort(order, stable=True).astype(r.dtype)
        return jnp.where(r > 0, jnp.clip(self.m - rank, 0.0, 1.0), 0.0)

    def value(self, z, y):
        return lax.stop_gradient(self._weights(z, y)) * jnp.maximum(0.0, 1.0 - y * z)

    def risk(self, z, y):
        h = jnp.maximum(0.0, 1.0 - y * z)
        hs = -jnp.sort(-h)
        k = jnp.arange(h.shape[-1], dtype=hs.dtype)
        return jnp.sum(jnp.clip(self.m - k, 0.0, 1.0) * hs, axis=-1) / h.shape[-1]

    def conjugate(self, u, y):
        s = -y * u
        ok = jnp.all(_inside(s, 0.0, 1.0)) & (jnp.sum(s) <= self.m + _slack(s, self.m) * s.shape[-1])
        return _restrict(ok, -s)

    def project_dual(self, u, y):
        return -y * projections.capped_simplex(-y * u, 1.0, self.m)

    def prox_conjugate(self, u, y, step):
        return self.project_dual(u - step * y, y)

    def dual_point(self, z, y):
        return -y * self._weights(z, y)

    @property
    def lipschitz(self):
        return 1.0

    def check_labels(self, y):
        _check_pm1(self, y)
