"""The certified loop: blocks of steps, a certificate per block, a trace, a status.

``solver.step`` runs inside a ``lax.fori_loop`` of ``check_every`` steps, itself inside one
``lax.while_loop`` over blocks. After each block the solver's certificate ``(primal, dual, gap)``
is evaluated once, recorded in a preallocated :class:`Trace`, and the loop stops when

    gap <= atol + tol * |primal|          (status CONVERGED)

or when ``max_steps`` is reached (MAX_STEPS), a value becomes NaN/inf (NONFINITE: the solution
is then the last finite check, its point and its certificate, so no NaN reaches a gap), the primal
value blows up or ends above its value at the start (DIVERGED), or, for a solver that opts in
(``Solver.stall_window > 0``), the best certified gap has not improved by a factor
``1 - stall_rtol`` for ``stall_window`` checks (STALLED). It never raises inside ``jit``.

Run options (``tol``, ``atol``, ``max_steps``) enter the compiled loop as traced values
(:class:`RunOptions`), so a new value does not recompile; ``check_every`` and ``trace_size`` fix
array and loop shapes and stay static. ``max_steps`` counts calls of ``Solver.step``: one
iteration of the paper's algorithm (an epoch for the incremental methods, an outer stage for APPA;
each solver's docstring says which). The loop knows no algorithm and no derivative: how a solve is
differentiated is :mod:`jaxprox.adjoint`'s, what surrounds it (validation, defaults, warnings)
:mod:`jaxprox.solve`'s.
"""
from __future__ import annotations

import functools
from typing import Any

import equinox as eqx
import jax
import jax.numpy as jnp
from jax import lax

from . import progress
from ._compile import _top_level, compiled
from .solver import Solver, fresh

PyTree = Any

RUNNING = -1
CONVERGED = 0
MAX_STEPS = 1
NONFINITE = 2
DIVERGED = 3
STALLED = 4
STATUS_NAMES = {CONVERGED: "converged", MAX_STEPS: "max_steps", NONFINITE: "nonfinite", DIVERGED: "diverged",
                STALLED: "stalled"}


class ConvergenceWarning(UserWarning):
    """A solve stopped before its certified gap reached ``atol + tol * |primal|``."""


class Trace(eqx.Module):
    """Record of the run: ``steps[t], primal[t], dual[t], gap[t]`` for ``t < count`` (entries
    beyond ``count`` are NaN / -1). It holds at most ``Solver.trace_size`` checks: the first
    entries are every check; when the record fills, every other entry is dropped and from then on
    every second check is kept (then every fourth, ...), so the trace always spans the whole run
    in bounded memory. The last entry is always the final check."""

    rows: jax.Array  # (4, size): step, primal, dual, gap
    meta: jax.Array  # (3,) int32: count, stride (checks between kept entries), pending (1: the last
    #                  entry is the newest check, off the stride, overwritten next); one array, so
    #                  that a check updates them in one kernel

    steps = property(lambda self: self.rows[..., 0, :].astype(jnp.int32))
    primal = property(lambda self: self.rows[..., 1, :])
    dual = property(lambda self: self.rows[..., 2, :])
    gap = property(lambda self: self.rows[..., 3, :])
    count = property(lambda self: self.meta[..., 0])
    stride = property(lambda self: self.meta[..., 1])
    pending = property(lambda self: self.meta[..., 2] == 1)

    @staticmethod
    def _empty(size: int, dtype) -> jax.Array:
        return jnp.full((4, size), jnp.nan, dtype).at[0].set(-1)

    @staticmethod
    def start(size: int, dtype, first=None) -> "Trace":
        """An empty record, or one holding the check of the start ``first = (p, d, g)``."""
        empty = Trace(Trace._empty(size, dtype), jnp.array([0, 1, 0], jnp.int32))
        return empty if first is None else empty.record(0, jnp.array(0, jnp.int32), *first)

    def record(self, b, k, p, d, g) -> "Trace":
        """Add check number ``b`` (at step ``k``)."""
        size = self.rows.shape[-1]
        count, stride, pending = self.meta[0], self.meta[1], self.meta[2]
        idx = count - pending
        j = jnp.arange(size)
        col = jnp.stack([jnp.asarray(k, self.rows.dtype), p, d, g]).astype(self.rows.dtype)[:, None]
        rows = jnp.where(j == idx, col, self.rows)
        kept = (b & (stride - 1)) == 0  # b % stride == 0: the stride is a power of 2
        full = kept & (idx + 1 == size)
        # full: keep entries 0, 2, 4, ... (checks at multiples of 2 * stride) and the newest, pending;
        # one gather and selects (a single kernel with the write above), not slices and a concatenation
        half = size // 2
        thinned = rows[:, jnp.where(j < half, 2 * j, size - 1)]
        compact = jnp.where(j <= half, thinned, Trace._empty(size, rows.dtype))
        rows = jnp.where(full, compact, rows)
        meta = jnp.where(full, jnp.stack([half + 1, 2 * stride, 1]),
                         jnp.stack([idx + 1, stride, (~kept).astype(jnp.int32)]))
        return Trace(rows, meta.astype(jnp.int32))


class Solution(eqx.Module):
    """What :func:`jaxprox.solve` returns. ``method`` names what produced the answer (the solver's class,
    or a composition such as ``"ISG -> DRSVMPDHG"``)."""

    params: PyTree
    dual: PyTree
    primal_value: jax.Array
    dual_value: jax.Array
    gap: jax.Array
    steps: jax.Array
    converged: jax.Array
    status: jax.Array
    trace: Trace
    method: str = eqx.field(static=True, default="")

    @property
    def status_name(self) -> str:
        return STATUS_NAMES.get(int(self.status), "running")


class RunOptions(eqx.Module):
    """The run options of a solve as traced values (a new value does not recompile)."""

    tol: jax.Array
    atol: jax.Array
    max_steps: jax.Array

    @staticmethod
    def of(solver) -> "RunOptions":
        if not solver.tol >= 0:  # atol < 0 is allowed: it runs to max_steps
            raise ValueError(f"tol must be >= 0, got {solver.tol}")
        # NumPy scalars: a jnp conversion would compile a kernel per dtype in every fresh process
        import numpy as np

        ftype = jnp.result_type(float)
        return RunOptions(np.asarray(solver.tol, ftype), np.asarray(solver.atol, ftype),
                          np.asarray(solver.max_steps, np.int32))


class _Carry(eqx.Module):
    state: PyTree
    k: jax.Array
    t: jax.Array
    primal0: jax.Array
    primal: jax.Array
    dual: jax.Array
    gap: jax.Array
    status: jax.Array
    trace: Trace
    best: jax.Array   # the gap at the last gain of a factor (1 - stall_rtol) (STALLED)
    stale: jax.Array  # checks since that gain


def _stalled(solver, c: _Carry, gap):
    """``(best, stale, stalled)`` after a check with certified ``gap`` (see :class:`Solver`)."""
    gain = gap < (1.0 - solver.stall_rtol) * c.best
    best = jnp.where(gain, gap, c.best)
    stale = jnp.where(gain, 0, c.stale + 1)
    return best, stale, (solver.stall_window > 0) & (stale >= solver.stall_window)


def _status(opts: RunOptions, k, primal, dual, gap, primal0, state_ok, stalled=False):
    finite = jnp.isfinite(primal) & ~jnp.isnan(gap) & state_ok
    done = gap <= opts.atol + opts.tol * jnp.abs(primal)
    out = k >= opts.max_steps
    # blown up, or stopped (out of steps, or by the stall rule) with the objective worse than where
    # it started
    ends = out | stalled
    diverged = (primal > 1e8 * (1.0 + jnp.abs(primal0))) | (ends & (primal > primal0 + 1e-12 * jnp.abs(primal0)))
    s = jnp.where(out, MAX_STEPS, jnp.where(stalled, STALLED, RUNNING))
    s = jnp.where(diverged, DIVERGED, s)
    s = jnp.where(done, CONVERGED, s)
    return jnp.where(finite, s, NONFINITE).astype(jnp.int32)


def _all_finite(tree) -> jax.Array:
    leaves = [jnp.all(jnp.isfinite(x)) for x in jax.tree_util.tree_leaves(tree)
              if jnp.issubdtype(jnp.asarray(x).dtype, jnp.inexact)]
    return jnp.all(jnp.stack(leaves)) if leaves else jnp.array(True)


def _init_carry(problem, solver, init, opts, *, certify: bool = True):
    """The carry before the first block. ``certify=False`` leaves the certificate of the start
    to the loop's first pass (a block of zero steps), so that the certificate is traced once."""
    state = solver.init(problem, init)
    k = jnp.array(0, jnp.int32)
    if certify:
        p, d, g = solver.certificate(problem, state)
        status = _status(opts, k, p, d, g, p, _all_finite(solver.params(state)))
        trace = Trace.start(solver.trace_size, jnp.result_type(p), (p, d, g))
        return _Carry(state, k, jnp.array(1, jnp.int32), p, p, d, g, status, trace, g, jnp.array(0, jnp.int32))
    # the certificate's values are cast to this type where they enter the carry (``_block``): the
    # parameters' float type, at least JAX's default float (float64 under ``jax_enable_x64``, where
    # the ERM certificates are evaluated; exact for a float32 certificate), so the certificate
    # need not be traced once more for its type
    floats = [x.dtype for x in jax.tree_util.tree_leaves(solver.params(state)) if eqx.is_inexact_array(x)]
    ftype = jnp.promote_types(jnp.result_type(*floats, float), jnp.result_type(float))
    nan = jnp.full((), jnp.nan, ftype)
    trace = Trace.start(solver.trace_size, ftype)
    return _Carry(state, k, jnp.array(0, jnp.int32), nan, nan, nan, nan, jnp.array(RUNNING, jnp.int32), trace,
                  jnp.full((), jnp.inf, ftype), jnp.array(0, jnp.int32))


def _same_types(new, old):
    """``new`` cast to the dtypes of ``old``: a step that promotes a leaf (float32 data meeting a
    float64 constant with x64 on) must not change the loop carry's type."""
    return jax.tree_util.tree_map(lambda a, b: a.astype(b.dtype) if hasattr(b, "dtype") else a, new, old)


def _block(problem, solver, opts, c: _Carry, steps) -> _Carry:
    """``steps`` steps (``check_every``; 0 for the check of the start), :meth:`Solver.refine`, one
    certificate, one trace entry (check number ``c.t``)."""
    state = lax.fori_loop(0, steps, lambda _, s: _same_types(solver.step(problem, s), s), c.state)
    state = _same_types(solver.refine(problem, state), c.state)
    k = c.k + steps
    p, d, g = (jnp.asarray(v, c.primal.dtype) for v in solver.certificate(problem, state))
    primal0 = jnp.where(c.t == 0, p, c.primal0)
    best, stale, stalled = _stalled(solver, c, g)
    status = _status(opts, k, p, d, g, primal0, _all_finite(solver.params(state)), stalled)
    # NaN never reaches a certificate: a block that ends non-finite reports the last finite check
    # (its state and certificate; the status stays NONFINITE, so the solve stops and warns)
    back = (status == NONFINITE) & (c.t > 0) & jnp.isfinite(c.gap) & jnp.isfinite(c.primal)
    state, p, d, g = lax.cond(back, lambda: (c.state, c.primal, c.dual, c.gap), lambda: (state, p, d, g))
    if solver.verbose:
        jax.debug.print("[jaxprox] step {k:6d}  primal {p:.10e}  dual {d:.10e}  gap {g:.3e}",
                        k=k, p=p, d=d, g=g)
    if solver.progress:
        solves, lanes = solver.progress if isinstance(solver.progress, tuple) else (1, 1)
        jax.debug.callback(functools.partial(progress.report, solves, lanes), k, opts.max_steps, p, g, opts.tol,
                           status == RUNNING)
    trace = c.trace.record(c.t, k, p, d, g)
    return _Carry(state, k, c.t + 1, primal0, p, d, g, status, trace, best, stale)


def _run_while(problem, solver, init, opts) -> _Carry:
    """The loop: check 0 certifies the start (a block of no steps), every later check follows a
    block of ``check_every`` steps; it runs while the status is RUNNING."""
    c0 = _init_carry(problem, solver, init, opts, certify=False)
    body = lambda c: _block(problem, solver, opts, c, jnp.where(c.t == 0, 0, solver.check_every))  # noqa: E731
    return lax.while_loop(lambda c: c.status == RUNNING, body, c0)


def _run_scan(problem, solver, init, opts) -> _Carry:
    """Fixed number of blocks (reverse-differentiable: static trip counts); the carry is frozen
    once stopped."""
    c0 = _init_carry(problem, solver, init, opts)

    def body(c, _):
        new = _block(problem, solver, opts, c, solver.check_every)
        running = c.status == RUNNING
        return jax.tree_util.tree_map(lambda a, b: jnp.where(running, a, b), new, c), None

    c, _ = lax.scan(body, c0, None, length=solver.max_steps // solver.check_every)
    return c


def _polish(problem, solver, opts, c: _Carry) -> _Carry:
    """Apply :meth:`Solver.polish`, re-certify, and keep the polished state only where its certified
    gap is smaller than the loop's (the trace keeps the loop's record)."""
    if type(solver).polish is Solver.polish:
        return c
    state = solver.polish(problem, c.state)
    p, d, g = solver.certificate(problem, state)
    better = g < c.gap
    pick = lambda new, old: jnp.where(better, new, old)  # noqa: E731
    state = jax.tree_util.tree_map(pick, state, c.state)
    p, d, g = pick(p, c.primal), pick(d, c.dual), pick(g, c.gap)
    status = _status(opts, c.k, p, d, g, c.primal0, _all_finite(solver.params(state)))
    status = jnp.where((status == CONVERGED) | (status == NONFINITE), status, c.status)
    return _Carry(state, c.k, c.t, c.primal0, p, d, g, status, c.trace, c.best, c.stale)


def _finish(solver, c: _Carry, z) -> Solution:
    params, dual = solver.unpack(z)
    if dual is None:
        dual = solver.dual(c.state)
    return Solution(
        params=params, dual=dual, primal_value=c.primal, dual_value=c.dual, gap=c.gap,
        steps=c.k, converged=c.status == CONVERGED, status=c.status, trace=c.trace,
        method=solver.describe(),
    )


def _stop_gradient(tree):
    return jax.tree_util.tree_map(
        lambda x: lax.stop_gradient(x) if eqx.is_inexact_array(x) else x, tree)


def _has_tracer(tree) -> bool:
    return any(isinstance(x, jax.core.Tracer) for x in jax.tree_util.tree_leaves(tree))


def _canonical(solver: Solver, *, keep_max_steps: bool = False) -> Solver:
    """``solver`` with its traced run options set to fixed values, so that the compiled loop is
    shared by every ``tol`` / ``atol`` / ``max_steps`` (they reach it through :class:`RunOptions`).
    ``keep_max_steps``: for a loop whose length ``max_steps`` fixes (the scan of
    :class:`jaxprox.Unrolled`)."""
    fixed = solver.with_options(tol=0.0, atol=0.0)
    return fixed if keep_max_steps else fixed.with_options(max_steps=0)


def run(problem, solver: Solver, *, init=None):
    """Run ``solver`` on ``problem`` (no differentiation, no polish) and return its final state:
    the loop of :func:`jaxprox.solve` (with its :meth:`Solver.hoist`) for solvers that use another
    solver internally. Called eagerly, the loop is compiled once per structure, as :func:`jaxprox.solve`'s
    (a new ``tol`` or ``max_steps`` reuses it); inside a trace it is traced in place."""
    stopped = _stop_gradient(problem)
    solver = fresh(solver.budgeted(problem), problem)
    opts = RunOptions.of(solver)
    if _top_level() and not _has_tracer((stopped, init, solver)):
        return _run_compiled(stopped, _canonical(solver), init, opts)
    return _run_while(stopped, _stop_gradient(solver).hoist(stopped), init, opts).state


@compiled(trace_cache=True)
def _run_compiled(problem, solver: Solver, init, opts: RunOptions):
    """:func:`run`'s loop, compiled at the top level (an eager ``lax.while_loop`` would be traced
    and compiled anew at every call)."""
    return _run_while(problem, solver.hoist(problem), init, opts).state
