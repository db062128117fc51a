"""The proximal sub-problems of APPA and Dual APPA (Frostig, Ge, Kakade and Sidford,
"Un-regularizing: approximate proximal point and faster stochastic algorithms for empirical risk
minimization"), eq. (3) in the library's averaged scaling:

    f_{s,lam}(w) = F(w) + (lam/2) ||w - s||^2
                 = (1/n) sum_i l(a_i^T w) + (Lam/2) ||w - c||^2 + const,   Lam = lam0 + lam,
                                                                         c   = lam s / Lam,

so every sub-problem is a ridge problem centred at ``c``: :class:`ProximalInner` is what a solver
offers to run its own epochs on one (SVRG and SDCA).
"""
from __future__ import annotations

from typing import ClassVar

import jax.numpy as jnp

from .sampling import Permutation, Sampling, smoothness_or_one
from ..certificates import ridge_strength


class ProximalInner:
    """A solver that :class:`jaxprox.APPA` can run on its sub-problems ``f_{s,lam}``: its own epochs
    on ``(1/n) sum_i l(a_i^T w) + (Lam/2)||w - c||^2`` (:meth:`proximal_epochs`)."""

    #: APPA's ``inner_epochs`` default around this solver
    default_inner_epochs: ClassVar[int] = 1

    def proximal_epochs(self, problem, start, Lam, c, key, epochs: int, rule: Sampling | None = None):
        """``epochs`` epochs from ``start`` on the centred ridge sub-problem, the key ``key``; ``rule``:
        the choice of an ``Auto()`` sampling of SDCA's law when known before tracing
        (:func:`sdca_auto_rule`)."""
        raise NotImplementedError

    def inner_prepared(self, problem):
        """This solver with its data-derived constants built for ``problem`` (APPA's prepare)."""
        return self


def quad_prox(Lam, c):
    """prox of ``(Lam/2)||. - c||^2``: ``(v + eta Lam c) / (1 + eta Lam)``."""
    return lambda v, eta: (v + eta * Lam * c) / (1.0 + eta * Lam)


def sdca_auto_rule(prox_lam) -> Sampling | None:
    """The choice of :class:`~jaxprox.components.sampling.Auto` for SDCA's law (:func:`sampling_law`
    with ``shift = n Lam``) in the sub-problems of APPA / Dual APPA, known before tracing: with the
    default proximal weight (:func:`default_prox_lam`) ``Lam = lam0 + lam >= L_max / n``, so

        max_i n q_i = (L_max + n Lam) / (L_avg + n Lam) <= 2 L_max / (L_avg + L_max) < 2

    (``L_avg > 0``; ``= 1`` for ``A = 0``): the law is never far from uniform and ``Auto()`` is a
    fresh permutation (``Permutation()``) per epoch on any data. With a given ``prox_lam`` (or for
    stand-alone SDCA, ``Lam = lam0``) the law can pay; ``None``: decided per epoch from the (possibly traced) ``Lam``."""
    return Permutation() if prox_lam is None else None


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
    sm = smoothness_or_one(problem.loss, problem.A.dtype)
    lam = 2.0 * jnp.min(ridge_strength(problem, diagonal=True)) + sm * jnp.max(problem.A.row_norms_sq()) / problem.n
    return jnp.where(lam > 0, lam, 1.0).astype(problem.A.dtype)


def proximal_weight(solver, problem):
    """The solver's ``prox_lam`` or, when it is ``None``, :func:`default_prox_lam`."""
    if solver.prox_lam is None:
        return default_prox_lam(problem)
    return jnp.asarray(solver.prox_lam, problem.A.dtype)


def proximal_objective(problem, x, center, lam):
    """``(F(x), f_{center,lam}(x))`` with ``f_{s,lam}(x) = F(x) + (lam/2)||x - s||^2`` (eq. (3))."""
    F = problem.objective(x)
    return F, F + 0.5 * lam * jnp.sum((x - center) ** 2)
