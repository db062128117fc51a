"""Sampling of the stochastic solvers: how one epoch draws its ``n`` row indices.

A sampling is a small object passed as ``sampling=`` to :class:`jaxprox.SVRG`, :class:`jaxprox.SDCA`,
:class:`jaxprox.DualAPPA` and :class:`jaxprox.baselines.SGD` (and to the inner solver of
:class:`jaxprox.APPA`):

* :class:`Uniform`: ``n`` i.i.d. uniform draws;
* :class:`Permutation`: a fresh random permutation per epoch (random reshuffling);
* :class:`Importance`: ``n`` i.i.d. draws from the solver's law ``q`` (:func:`sampling_law`),
  with the gradient reweighted where the method needs it;
* :class:`Auto`: :class:`Importance` when ``q`` is far from uniform, ``max_i n q_i >= 2``, else
  :class:`Permutation`.

Random draws take an explicit PRNG key: the same key gives the same epoch.
"""
from __future__ import annotations

from typing import ClassVar

import equinox as eqx
import jax
import jax.numpy as jnp
from jax import lax

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
    ; a sampling order, not a cryptographic draw."""
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


class Sampling(eqx.Module):
    """How an epoch draws its ``n`` indices: :meth:`draw` returns them and the law they were drawn
    from (``None``: uniform in law, no reweighting)."""

    #: an epoch can be the order of a permutation (disjoint rows: the mini-batch route)
    disjoint: ClassVar[bool] = False

    def draw(self, key, n: int, law=None):
        raise NotImplementedError


class Uniform(Sampling):
    """``n`` i.i.d. uniform draws from ``0..n-1``."""

    def draw(self, key, n: int, law=None):
        return jax.random.randint(key, (n,), 0, n, dtype=jnp.int32), None


class Permutation(Sampling):
    """A fresh uniformly random permutation per epoch (:func:`permutation`)."""

    disjoint: ClassVar[bool] = True

    def draw(self, key, n: int, law=None):
        return permutation(key, n), None


def _by_law(key, n, law):
    if law is None:
        raise ValueError("importance sampling needs the solver's law q (sampling_law); this method has none: "
                         "use Uniform() or Permutation()")
    k1, k2 = jax.random.split(key)
    return jax.random.choice(k1, n, (n,), p=law).astype(jnp.int32), k2


class Importance(Sampling):
    """``n`` i.i.d. draws from the solver's law ``q`` (:func:`sampling_law`)."""

    def draw(self, key, n: int, law=None):
        return _by_law(key, n, law)[0], law


class Auto(Sampling):
    """The law ``q`` when it is far from uniform, ``max_i n q_i >= 2`` (for SDCA's law this is the
    speed-up factor ``(n Lam + L_max) / (n Lam + L_avg)`` itself; for Prox-SVRG's it means
    ``L_max >= 3 L_avg``), otherwise a fresh permutation (random reshuffling, better than i.i.d.
    draws when the rows are alike). Both are drawn and one is kept, per epoch, from the (possibly
    traced) law; :func:`resolved` fixes the choice before tracing where it is known."""

    disjoint: ClassVar[bool] = True

    def draw(self, key, n: int, law=None):
        idx, k2 = _by_law(key, n, law)
        use = jnp.max(law) * n >= 2.0  # the law is far from uniform: it pays (see sampling_law)
        return jnp.where(use, idx, permutation(k2, n)), jnp.where(use, law, 1.0 / n)


def resolved(sampling: Sampling, rule: Sampling | None) -> Sampling:
    """``sampling`` with :class:`Auto` replaced by ``rule``, the choice it would make, where that is
    known before tracing (``None``: unknown, decided per epoch)."""
    return rule if isinstance(sampling, Auto) and rule is not None else sampling


_NAMES = {"auto": "Auto", "importance": "Importance", "permutation": "Permutation", "uniform": "Uniform"}


def as_sampling(value) -> Sampling:
    """Checks a ``sampling=`` option: a :class:`Sampling` object; a string is refused with a
    ``TypeError`` that names the object to pass."""
    if isinstance(value, Sampling):
        return value
    if isinstance(value, str) and value in _NAMES:
        raise TypeError(f"sampling={value!r} is no longer a string option: pass "
                        f"sampling=jaxprox.sampling.{_NAMES[value]}()")
    raise TypeError(f"sampling must be a jaxprox.sampling object (Uniform(), Permutation(), Importance() "
                    f"or Auto()), got {value!r}")


def smoothness_or_one(loss, dtype):
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
    L = smoothness_or_one(problem.loss, problem.A.dtype) * problem.A.row_norms_sq()
    t = L + shift
    tot = jnp.sum(t)
    return jnp.where(tot > 0, t / jnp.where(tot > 0, tot, 1.0), 1.0 / problem.n)
