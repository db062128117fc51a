"""Scalar root finders for monotone functions on a bracket: bisection and the safeguarded
Dai--Fletcher secant method.

Both solve, for a monotone (non-increasing or non-decreasing) continuous ``f``,

    find t in [lo, hi] with f(t, *args) = 0,

and return the *clamped* root when the bracket does not contain a sign change: ``lo`` if the
root lies below the bracket, ``hi`` if it lies above (for a monotone ``f`` that is the end point
with the smaller ``|f|``). The direction of monotonicity is read off ``f(lo)`` and ``f(hi)``.

Each is one ``lax.while_loop`` with a tolerance and an iteration cap, with no Python control
flow on traced values, so it can be jitted and vmapped (every element of a batch runs until the
slowest one stops; finished elements are frozen by ``while_loop``'s batching rule).

Differentiation (forward and reverse) is by the implicit function theorem: at a root
``t*(args)`` with ``f(t*, args) = 0``,

    d t* / d args = - (df/dargs) / (df/dt),

implemented as a ``jax.custom_jvp`` whose tangent rule is linear in the tangents (so JAX can
transpose it for ``grad``). When the root is clamped to an end point, its derivative is that of
the end point. ``f`` must be a pure function of ``(t, *args)``: everything to be differentiated
must be passed through ``args``, not captured in a closure.

References: Dai & Fletcher (2006), "New algorithms for singly linearly constrained quadratic
programs subject to lower and upper bounds", Math. Program. 106; the DRSVM paper (Li, Chen, So,
NeurIPS 2020), Appendix, Algorithm 1 ("modified secant algorithm"), with these
corrections: ``min`` (not ``max``) in the ``r < 0`` branch, the
Dai--Fletcher 0.75/0.25 safeguard weights, every trial clamped to the bracket, and an iteration
cap.
"""
from __future__ import annotations

from functools import partial
from typing import Any, Callable

import jax
import jax.numpy as jnp
from jax import lax

from jaxprox._compile import compiled

__all__ = ["bisection", "secant"]

Array = Any


# --------------------------------------------------------------------------------------------
# shared helpers
# --------------------------------------------------------------------------------------------
def _bracket(f, lo, hi, args):
    """Evaluate the end points and orient the problem so that ``g = sign * f`` is
    non-decreasing. Returns ``(sign, g_lo, g_hi, dtype)``."""
    dtype = jnp.result_type(lo, hi, float)
    lo = jnp.asarray(lo, dtype)
    hi = jnp.asarray(hi, dtype)
    f_lo = jnp.asarray(f(lo, *args), dtype)
    f_hi = jnp.asarray(f(hi, *args), dtype)
    # f non-increasing  <=>  f(lo) >= f(hi); if f(lo) == f(hi) either orientation is fine.
    sign = jnp.where(f_lo > f_hi, -1.0, 1.0).astype(dtype)
    return lo, hi, sign, sign * f_lo, sign * f_hi


def _clamped(g_lo, g_hi):
    """Masks ``(at_lo, at_hi)``: the root of a non-decreasing g is at or below lo
    (``g(lo) >= 0``), or at or above hi (``g(hi) <= 0``)."""
    at_lo = g_lo >= 0
    at_hi = jnp.logical_and(~at_lo, g_hi <= 0)
    return at_lo, at_hi


def _default_tol(dtype, tol):
    return 4 * jnp.finfo(dtype).eps if tol is None else tol


def _chord(a, ga, b, gb):
    """Root of the chord through ``(a, ga)`` and ``(b, gb)``, with ``ga <= 0 <= gb``; the
    midpoint if the chord is flat."""
    den = gb - ga
    safe = jnp.where(den > 0, den, 1.0)
    return jnp.where(den > 0, b - gb * (b - a) / safe, 0.5 * (a + b))


# --------------------------------------------------------------------------------------------
# bisection
# --------------------------------------------------------------------------------------------
def _bisection_impl(f, tol, max_iter, lo, hi, ftol, args):
    lo, hi, sign, g_lo, g_hi = _bracket(f, lo, hi, args)
    at_lo, at_hi = _clamped(g_lo, g_hi)
    tol = _default_tol(lo.dtype, tol)
    width0 = hi - lo
    ftol = jnp.asarray(ftol, lo.dtype)

    def cond(c):
        a, ga, b, gb, it, done = c
        return jnp.logical_and(~done, it < max_iter)

    def body(c):
        a, ga, b, gb, it, _ = c
        m = 0.5 * (a + b)
        gm = sign * f(m, *args)
        neg = gm < 0
        a, ga = jnp.where(neg, m, a), jnp.where(neg, gm, ga)
        b, gb = jnp.where(neg, b, m), jnp.where(neg, gb, gm)
        done = jnp.logical_or(jnp.abs(gm) <= ftol, b - a <= tol * width0)
        # an exact zero at m: collapse the bracket onto it
        hit = gm == 0
        a, b = jnp.where(hit, m, a), jnp.where(hit, m, b)
        ga, gb = jnp.where(hit, 0.0, ga), jnp.where(hit, 0.0, gb)
        return a, ga, b, gb, it + 1, done

    done0 = jnp.logical_or(at_lo, at_hi)
    a, ga, b, gb, it, _ = lax.while_loop(cond, body, (lo, g_lo, hi, g_hi, jnp.asarray(0), done0))
    # final regula-falsi step: exact when f is affine on the last bracket (piecewise-linear f)
    t = jnp.clip(_chord(a, ga, b, gb), a, b)
    t = jnp.where(at_lo, lo, jnp.where(at_hi, hi, t))
    return t, it


# --------------------------------------------------------------------------------------------
# Dai--Fletcher modified secant (DRSVM Appendix, Algorithm 1, corrected)
# --------------------------------------------------------------------------------------------
def _secant_impl(f, tol, max_iter, lo, hi, ftol, args):
    lo, hi, sign, g_lo, g_hi = _bracket(f, lo, hi, args)
    at_lo, at_hi = _clamped(g_lo, g_hi)
    tol = _default_tol(lo.dtype, tol)
    width0 = hi - lo
    ftol = jnp.asarray(ftol, lo.dtype)
    g = lambda t: sign * f(t, *args)

    def safe_div(num, den):
        ok = den != 0
        return jnp.where(ok, num / jnp.where(ok, den, 1.0), jnp.inf)

    # First secant step: s = 1 - r_l / r_u, sigma = sigma_u - (sigma_u - sigma_l) / s.
    s0 = 1.0 - safe_div(g_lo, g_hi)
    t0 = jnp.clip(hi - safe_div(hi - lo, s0), lo, hi)
    t0 = jnp.where(jnp.isfinite(t0), t0, 0.5 * (lo + hi))
    r0 = g(t0)

    def cond(c):
        a, ra, b, rb, t, r, s, it = c
        active = jnp.logical_and(jnp.abs(r) > ftol, b - a > tol * width0)
        return jnp.logical_and(jnp.logical_and(active, it < max_iter), ~jnp.logical_or(at_lo, at_hi))

    def body(c):
        a, ra, b, rb, t, r, s, it = c
        pos = r > 0
        # --- r > 0: t becomes the new upper end ------------------------------------------
        #   s <= 2 (t in the left half): plain secant on the new bracket [a, t]
        #   s >  2 (t in the right half): auxiliary secant through (t, r) and (b, rb),
        #          safeguarded so that the next trial is >= 0.75 a + 0.25 t
        s_p = jnp.maximum(safe_div(rb, r) - 1.0, 0.1)
        aux_p = jnp.maximum(t - safe_div(b - t, s_p), 0.75 * a + 0.25 * t)
        sec_p = t - safe_div(t - a, 1.0 - safe_div(ra, r))
        next_p = jnp.where(s <= 2, sec_p, aux_p)
        # --- r < 0: t becomes the new lower end ------------------------------------------
        #   s >= 2 (t in the right half): plain secant on [t, b]
        #   s <  2 (t in the left half): auxiliary secant through (a, ra) and (t, r),
        #          safeguarded with min (the paper prints max)
        s_m = jnp.maximum(safe_div(ra, r) - 1.0, 0.1)
        aux_m = jnp.minimum(t + safe_div(t - a, s_m), 0.75 * b + 0.25 * t)
        sec_m = b - safe_div(b - t, 1.0 - safe_div(r, rb))
        next_m = jnp.where(s >= 2, sec_m, aux_m)

        a_new = jnp.where(pos, a, t)
        ra_new = jnp.where(pos, ra, r)
        b_new = jnp.where(pos, t, b)
        rb_new = jnp.where(pos, r, rb)
        t_new = jnp.where(pos, next_p, next_m)
        # clamp into the bracket; fall back to bisection if anything degenerated
        bad = ~jnp.isfinite(t_new) | (t_new <= a_new) | (t_new >= b_new)
        t_new = jnp.where(bad, 0.5 * (a_new + b_new), t_new)
        s_new = safe_div(b_new - a_new, b_new - t_new)
        r_new = g(t_new)
        return a_new, ra_new, b_new, rb_new, t_new, r_new, s_new, it + 1

    init = (lo, g_lo, hi, g_hi, t0, r0, s0, jnp.asarray(1))
    a, ra, b, rb, t, r, s, it = lax.while_loop(cond, body, init)
    # fold the last trial into the bracket, then answer with it or with the final chord
    pos = r > 0
    a, ra = jnp.where(pos, a, t), jnp.where(pos, ra, r)
    b, rb = jnp.where(pos, t, b), jnp.where(pos, r, rb)
    chord = jnp.clip(_chord(a, ra, b, rb), a, b)
    t = jnp.where(jnp.abs(r) <= ftol, t, chord)
    t = jnp.where(at_lo, lo, jnp.where(at_hi, hi, t))
    return t, it


# --------------------------------------------------------------------------------------------
# implicit differentiation
# --------------------------------------------------------------------------------------------
@partial(jax.custom_jvp, nondiff_argnums=(0, 1, 2, 3))
def _root(impl, f, tol, max_iter, lo, hi, ftol, args):
    return impl(f, tol, max_iter, lo, hi, ftol, args)[0]


@_root.defjvp
def _root_jvp(impl, f, tol, max_iter, primals, tangents):
    lo, hi, ftol, args = primals
    lo_dot, hi_dot, _, args_dot = tangents
    t = _root(impl, f, tol, max_iter, lo, hi, ftol, args)
    dtype = jnp.result_type(t)
    lo_a, hi_a, sign, g_lo, g_hi = _bracket(f, lo, hi, args)
    at_lo, at_hi = _clamped(g_lo, g_hi)
    # implicit function theorem: f(t*(args), args) = 0  =>  dt* = -(f_args . dargs) / f_t
    _, f_t = jax.jvp(lambda tt: f(tt, *args), (t,), (jnp.ones_like(t),))
    _, f_args_dot = jax.jvp(lambda *a: f(t, *a), tuple(args), tuple(args_dot))
    ok = f_t != 0
    t_dot = jnp.where(ok, -f_args_dot / jnp.where(ok, f_t, 1.0), 0.0).astype(dtype)
    lo_dot = jnp.asarray(lo_dot, dtype)
    hi_dot = jnp.asarray(hi_dot, dtype)
    t_dot = jnp.where(at_lo, lo_dot, jnp.where(at_hi, hi_dot, t_dot))
    return t, t_dot


# jit with the algorithm, the function and the tolerances static: eager calls with the same
# (module-level) f hit the compilation cache instead of re-tracing the while_loop each time.
_root_jit = compiled(_root, jax.jit, static_argnums=(0, 1, 2, 3))


def _check(tol, max_iter):
    if tol is not None and not (float(tol) >= 0):
        raise ValueError(f"tol must be a non-negative float, got {tol!r}")
    if int(max_iter) < 1:
        raise ValueError(f"max_iter must be >= 1, got {max_iter!r}")


def bisection(
    f: Callable[..., Array],
    lo: Array,
    hi: Array,
    args: tuple = (),
    *,
    tol: float | None = None,
    ftol: Array = 0.0,
    max_iter: int = 200,
) -> Array:
    """Root of a monotone scalar function by bisection on ``[lo, hi]``.

    Finds ``t in [lo, hi]`` with ``f(t, *args) = 0`` for continuous monotone ``f`` (either
    direction). Stops when ``|f(t)| <= ftol``, when the bracket is shorter than
    ``tol * (hi - lo)`` (default ``4 eps``), or after ``max_iter`` halvings. The answer is the
    root of the chord on the final bracket (exact when ``f`` is affine there, as for the
    piecewise-linear functions of projections). If ``f`` has no sign change on the bracket the
    clamped root (``lo`` or ``hi``) is returned.

    Differentiable in ``args`` (and ``lo``/``hi`` when clamped) by the implicit function
    theorem, ``dt/dargs = -(df/dargs)/(df/dt)``, in forward and reverse mode.
    """
    _check(tol, max_iter)
    tol = None if tol is None else float(tol)
    return _root_jit(_bisection_impl, f, tol, int(max_iter), lo, hi, ftol, tuple(args))


def secant(
    f: Callable[..., Array],
    lo: Array,
    hi: Array,
    args: tuple = (),
    *,
    tol: float | None = None,
    ftol: Array = 0.0,
    max_iter: int = 50,
) -> Array:
    """Root of a monotone scalar function by the safeguarded modified secant method of
    Dai & Fletcher (2006), DRSVM Appendix Algorithm 1.

    With ``r = g(sigma)`` (``g = +-f`` oriented non-decreasing) and a bracket
    ``[sigma_l, sigma_u]`` with ``r_l < 0 < r_u``: the first trial is the chord root
    ``sigma = sigma_u - (sigma_u - sigma_l)/s``, ``s = 1 - r_l/r_u``. At each step the trial
    replaces the end point of the same sign; if it fell in the half of the bracket far from
    that end point (poor progress) the next trial is an auxiliary secant step, safeguarded to
    ``max(., 0.75 sigma_l + 0.25 sigma_u)`` (``r > 0``) or ``min(., 0.75 sigma_u + 0.25 sigma_l)``
    (``r < 0``), otherwise the chord root of the new bracket. Every trial is clamped into the
    bracket (bisection if it degenerates).

    Stops when ``|f(t)| <= ftol``, the bracket is shorter than ``tol * (hi - lo)`` (default
    ``4 eps``), or after ``max_iter`` evaluations. On piecewise-linear ``f`` it typically
    terminates in 2--5 steps. Clamped root and derivatives as for :func:`bisection`.
    """
    _check(tol, max_iter)
    tol = None if tol is None else float(tol)
    return _root_jit(_secant_impl, f, tol, int(max_iter), lo, hi, ftol, tuple(args))


def iterations(method: str, f, lo, hi, args=(), *, tol=None, ftol=0.0, max_iter=None):
    """Number of loop iterations the root finder takes (diagnostics/benchmarks; not
    differentiable)."""
    impl = {"bisection": _bisection_impl, "secant": _secant_impl}[method]
    max_iter = {"bisection": 200, "secant": 50}[method] if max_iter is None else max_iter
    return impl(f, tol, int(max_iter), lo, hi, ftol, tuple(args))[1]
