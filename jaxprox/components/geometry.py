"""Prox-functions ``d`` of the accelerated gradient method with estimate functions (AGM-EF; Zhang,
Saha and Vishwanathan, sections 2 and 3.1), passed as ``AGM(prox=...)``:

* :class:`Euclidean`: ``d(x) = 1/2 ||x||^2``, ``sigma = 1`` w.r.t. the l2 norm;
* :class:`Entropic`: ``d(x) = sum_i x_i log x_i``, ``sigma = 1`` w.r.t. the l1 norm on the simplex.

A geometry gives ``d``, ``grad d`` and the constant ``<grad d(x), x> - d(x)`` of the linearisation
of ``d`` at ``x``; a model (:class:`~jaxprox.problems.base.AGMModel`) names the geometries it
supports by :attr:`Geometry.name` and computes its Bregman prox in them.
"""
from __future__ import annotations

from typing import ClassVar

import equinox as eqx
import jax.numpy as jnp


class Geometry(eqx.Module):
    """A prox-function ``d``, ``sigma``-strongly convex w.r.t. its norm."""

    #: the key of this geometry in a model's ``geometries``
    name: ClassVar[str] = ""
    #: the strong convexity modulus of ``d`` w.r.t. its norm
    sigma: ClassVar[float] = 1.0

    def d(self, x):
        raise NotImplementedError

    def grad_d(self, x):
        raise NotImplementedError

    def dconj(self, x):
        """``<grad d(x), x> - d(x)``."""
        raise NotImplementedError


class Euclidean(Geometry):
    """``d(x) = 1/2 ||x||^2``."""

    name: ClassVar[str] = "euclidean"

    def d(self, x):
        return 0.5 * jnp.vdot(x, x)

    def grad_d(self, x):
        return x

    def dconj(self, x):
        return 0.5 * jnp.vdot(x, x)


def _xlogx(x):
    pos = x > 0
    return jnp.where(pos, x * jnp.log(jnp.where(pos, x, 1.0)), 0.0)


class Entropic(Geometry):
    """``d(x) = sum_i x_i log x_i`` (``0 log 0 = 0``)."""

    name: ClassVar[str] = "entropic"

    def d(self, x):
        return jnp.sum(_xlogx(x))

    def grad_d(self, x):
        """``1 + log x`` with ``log 0`` floored at ``log(tiny)`` (it only enters through ``lam1 > 0``
        terms and ``theta_0``)."""
        return 1.0 + jnp.log(jnp.maximum(x, jnp.finfo(x.dtype).tiny))

    def dconj(self, x):
        return jnp.sum(x)


GEOMETRIES = {g.name: g for g in (Euclidean(), Entropic())}


def as_geometry(value) -> Geometry | None:
    """Checks ``AGM(prox=...)``: a :class:`Geometry` or ``None`` (the model's first); a string is
    refused with a ``TypeError`` that names the object to pass."""
    if value is None or isinstance(value, Geometry):
        return value
    if isinstance(value, str) and value in GEOMETRIES:
        raise TypeError(f"prox={value!r} is no longer a string option: pass "
                        f"prox=jaxprox.geometry.{type(GEOMETRIES[value]).__name__}()")
    raise TypeError(f"prox must be None, jaxprox.geometry.Euclidean() or Entropic(), got {value!r}")
