"""The multinomial (softmax) loss on rows of ``(n, K)`` margins ``Z = A W`` and one-hot labels."""
from __future__ import annotations

from typing import ClassVar

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from ..projections import simplex
from ._common import _Loss, _concrete, _describe, _restrict, _slack


class Multinomial(_Loss):
    """Multinomial logistic loss (softmax cross-entropy) of a linear model with ``K`` classes,
    ``W`` of shape ``(d, K)``, margins ``z_i = W^T a_i`` and one-hot labels ``y_i``:

        l(z_i, y_i) = logsumexp(z_i) - <y_i, z_i>,      grad = softmax(z_i) - y_i,

    ``(1/2)``-smooth (the Hessian ``diag(p) - p p^T`` of ``logsumexp`` has norm at most ``1/2``).
    Its conjugate is the negative entropy of ``p = u_i + y_i`` on the probability simplex,

        l*(u_i, y_i) = sum_k p_k log p_k   if  p >= 0, sum_k p_k = 1,   else +inf,

    so the gradient ``u_i = softmax(z_i) - y_i`` is always a dual-feasible point, and so is any
    ``s u_i`` with ``0 <= s <= 1`` (``p = s softmax(z_i) + (1 - s) y_i``): the dual rescaling that
    makes a certificate honest keeps it feasible. Labels: one-hot rows (``jaxprox.sklearn``'s
    ``LogisticRegression`` builds them from any class labels). Its curvature ``diag(p) - p p^T``
    per row is not elementwise: :class:`jaxprox.ProxNewton` applies it through ``jax.linearize``
    of :meth:`grad` (Newton-CG, the default with the ridge penalty); with another penalty the
    default is :class:`jaxprox.AGM` (:class:`jaxprox.FISTA` also applies). Not available: the
    proximal map of ``l*`` (the primal-dual and dual coordinate methods).
    """

    _rows: ClassVar[bool] = True
    family = "multinomial"
    smooth: bool = eqx.field(static=True, default=True, kw_only=True)

    def value(self, z, y):
        return jax.nn.logsumexp(z, axis=-1) - jnp.sum(y * z, axis=-1)

    def grad(self, z, y):
        return jax.nn.softmax(z, axis=-1) - y

    def conjugate(self, u, y):
        p = u + y
        inside = jnp.all(p >= -_slack(p), axis=-1) & (jnp.abs(jnp.sum(p, axis=-1) - 1.0) <= _slack(p, 1.0) * p.shape[-1])
        pc = jnp.clip(p, 0.0, 1.0)
        return _restrict(inside, jnp.sum(jax.scipy.special.xlogy(pc, pc), axis=-1))

    def project_dual(self, u, y):
        """``P(u + y) - y`` row by row, ``P`` the Euclidean projection onto the simplex."""
        return jax.vmap(simplex)(u + y) - y

    def prox_conjugate(self, u, y, step):
        raise NotImplementedError("the proximal map of the multinomial conjugate is not implemented: "
                                  "solve a Multinomial problem with jp.ProxNewton() (ridge), jp.AGM() or jp.FISTA()")

    def grad_and_curvature(self, z, y):
        raise NotImplementedError("the multinomial Hessian is not elementwise: solve with jp.ProxNewton() "
                                  "(Newton-CG, ridge), jp.AGM() or jp.FISTA()")

    @property
    def lipschitz(self):
        return float(np.sqrt(2.0))

    @property
    def smoothness(self):
        return 0.5

    def check_labels(self, y):
        if not _concrete(y):
            return
        a = np.asarray(y)
        if a.ndim != 2:
            raise ValueError(f"Multinomial needs one-hot labels of shape (n, K), got shape {a.shape}")
        bad = a[(a != 0) & (a != 1)]
        if bad.size or not np.all(a.sum(axis=1) == 1):
            raise ValueError("Multinomial needs one-hot label rows (one 1 per row, zeros elsewhere)"
                             + (f"; got {_describe(bad)}" if bad.size else "")
                             + "; build them with jp.datasets.one_hot(labels)")
