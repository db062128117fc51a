"""The entry points: :func:`solve`, :func:`solve_path` and :func:`check`.

A solve is four steps, each in its own module: validate (the solver's options, its requirements
on the problem: :mod:`jaxprox.capabilities`), apply the defaults (the default solver, the step
budget, the column rescaling: :mod:`jaxprox.defaults` and the problem's own
``column_scale``), run the certified loop (:mod:`jaxprox.loop`) the way the adjoint needs it
(:mod:`jaxprox.adjoint`), and outside ``jit`` warn when the solve stopped short
(:class:`~jaxprox.loop.ConvergenceWarning`; :func:`check` raises or warns on demand, also inside
``jit``).

Before tracing, :func:`solve` derives the solver's data-dependent constants afresh from this
problem (:meth:`~jaxprox.Solver.prepare`, :meth:`~jaxprox.Solver.hoist`): a solver config never
carries constants of other data into a solve.
"""
from __future__ import annotations

import dataclasses
import math
import warnings

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from . import capabilities, progress
from ._compile import compiled
from .adjoint import AbstractAdjoint, ImplicitAdjoint, Unrolled, _solve_compiled
from .base import by_rows, check_range, data_platform
from .defaults import columns_in_different_units, path_problem, rescale_ratio
from .loop import CONVERGED, RUNNING, STATUS_NAMES, ConvergenceWarning, RunOptions, Solution, _has_tracer, _stop_gradient
from .solver import Solver, fresh


def solve(problem, solver: Solver | None = None, *, adjoint: AbstractAdjoint | None = None, init=None,
          warn: bool = True) -> Solution:
    """Solve ``problem`` with ``solver``; returns a :class:`Solution`. Without a solver, the
    measured default for the problem's class and size
    (:func:`jaxprox.capabilities.default_solver`).

    Works under ``jax.jit``, ``jax.vmap`` (e.g. over ``problem.with_lam(lam)``) and
    ``jax.grad`` / ``jax.jvp`` of ``Solution.params``, differentiated as ``adjoint`` says
    (:class:`~jaxprox.ImplicitAdjoint` by default, :class:`~jaxprox.Unrolled` for a solver without
    a fixed-point residual; :mod:`jaxprox.adjoint`).
    Before tracing it checks that ``solver`` accepts ``problem`` (a ``TypeError`` names what is
    missing and which solvers fit) and derives the solver's data-dependent constants from this
    problem. Outside ``jit`` a solve that stops without converging warns
    (:class:`ConvergenceWarning`; ``warn=False`` turns it off); inside ``jit`` use
    :func:`check`.

    The solve is compiled once per problem structure, array shapes and solver configuration
    (``equinox.filter_jit``); ``lam``, ``tol``, ``atol`` and ``max_steps`` are traced values, so
    a new value reuses the compiled loop.
    """
    if solver is None:
        solver = capabilities.default_solver(problem)
    adjoint = _adjoint(solver, adjoint)
    _validate(problem, solver, adjoint)
    _check_init(problem, init)
    solver = solver.budgeted(problem)
    problem = _without_zero_penalty(problem, solver)
    problem, init, c = _rescaled(problem, solver, init)
    run, opts = adjoint.shared(fresh(solver, problem)), RunOptions.of(solver)
    sol = adjoint.solve(problem, run, init, opts)
    while not _has_tracer(sol) and bool(run.needs_room(problem, sol)):  # go on from here, with more room
        run = adjoint.shared(run.enlarged(problem))
        sol = adjoint.solve(problem, run, sol.params, opts)
    if c is not None:
        sol = _unscaled(sol, c)
    if warn:
        _warn(sol, solver, lambda: _short_reason(problem, solver, rescaled=c is not None))
    return sol


def check(sol: Solution, *, error: bool = False) -> Solution:
    """Make a non-converged solution loud, also inside ``jax.jit``: ``error=True`` raises (through
    ``equinox.error_if``: a runtime error under ``jit``), otherwise a :class:`ConvergenceWarning`
    is issued at run time (``jax.debug.callback``). Returns ``sol`` (use the returned value)."""
    bad = jnp.any(sol.status != CONVERGED)
    if error:
        params = eqx.error_if(sol.params, bad, f"jaxprox: {sol.method or 'the solve'} did not converge")
        return eqx.tree_at(lambda s: s.params, sol, params)

    def _cb(b, gap):
        if b:
            warnings.warn(f"jaxprox: {sol.method or 'the solve'} did not converge (certified gap "
                          f"{float(jnp.max(gap)):.3g})", ConvergenceWarning, stacklevel=2)

    jax.debug.callback(_cb, bad, sol.gap)
    return sol


def solve_path(problem, solver: Solver | None = None, lams=None, *, init=None, warn: bool = True,
               batched: bool | None = None, chunk: int | None = None,
               adjoint: AbstractAdjoint | None = None) -> Solution:
    """Solve ``problem.with_lam(lam)`` for every ``lam`` in ``lams``. Without a solver, the
    default for paths (:func:`jaxprox.capabilities.default_path_solver`: working sets with
    gap-safe screening for sparse ERM, :class:`~jaxprox.WorkingSet`). Least squares with ``n >= 2 d``
    is solved on its ``d x d`` sufficient statistics (:func:`jaxprox.defaults.path_problem`: the
    same objective values, minimisers and gaps). Two ways:

    * ``batched=False``: a warm-started path, ``lax.scan`` over ``lams`` in the order given (pass
      them from large to small), each solve started from the previous solution;
    * ``batched=True``: every lambda at once, in lock-step (``jax.vmap``, each from ``init`` or
      zero), with the solver's :meth:`Solver.lockstep` form (FISTA: the step ``1/L`` with the
      hoisted bound ``L`` shared by all lanes, no backtracking loop); ``chunk`` lanes per vmapped
      call (``lax.map`` over chunks) bounds the memory of very large batches;
    * ``batched=None`` (default): lock-step on an accelerator, the warm-started scan on a CPU (the
      device of the data, or of an enclosing ``jax.default_device``: :func:`jaxprox.base.data_platform`).

    Returns a :class:`Solution` whose leaves are stacked along a leading axis of ``len(lams)``.

    When to use which (see ``benchmarks/results/paths.md``, ``gpu.md``): lock-step runs all solves
    together, so it wins on accelerators and when every lambda needs about the same number of
    steps; the warm-started scan runs them one after another but each starts close to its solution,
    so it wins on a CPU and along long, finely spaced paths.
    """
    if lams is None:
        raise TypeError("solve_path needs lams, the regularisation values (from large to small)")
    problem = path_problem(problem)
    if solver is None:
        solver = capabilities.default_path_solver(problem)
    adjoint = _adjoint(solver, adjoint)
    _validate(problem, solver, adjoint)
    solver = solver.budgeted(problem)
    if chunk is not None and (isinstance(chunk, bool) or not isinstance(chunk, int) or chunk < 1):
        raise ValueError(f"chunk must be a positive int (lambdas per vmapped call) or None, got {chunk!r}")
    lams = jnp.asarray(lams)
    if lams.ndim != 1:
        raise ValueError(f"lams must be a 1-d array of regularisation values, got shape {lams.shape}")
    check_range("solve_path", "lams", lams, ">= 0")
    problem, init, c = _rescaled(problem, solver, init)
    x0 = problem.zeros() if init is None else init
    opts = RunOptions.of(solver)
    first = problem if _has_tracer(lams) else problem.with_lam(lams[0])  # constants at the path's start
    fixed = adjoint.shared(fresh(solver, first).hoist(_stop_gradient(problem)))
    if batched is None:
        batched = data_platform(problem) != "cpu"
    lanes = adjoint.shared(fixed.lockstep(problem)) if batched else fixed
    if solver.progress:  # a bar of the lambdas solved (jaxprox.progress)
        m = int(lams.shape[0])
        lanes = lanes.with_options(progress=(m, min(chunk or m, m) if batched else 1))
    sols = _path_compiled(problem, lanes, lams, x0, opts, bool(batched), chunk, adjoint,
                          type(solver).needs_room is not Solver.needs_room)
    if not batched:
        sols = _path_enlarged(problem, lanes, lams, x0, opts, adjoint, sols)
    if solver.progress and not _has_tracer(sols):
        progress.close()
    if c is not None:
        sols = _unscaled(sols, c, lead=1)
    if warn:
        _warn(sols, solver)
    return sols


@compiled(trace_cache=True)
def _path_compiled(problem, solver, lams, x0, opts, batched: bool, chunk: int | None, adjoint,
                   skipping: bool = False) -> Solution:
    """The body of :func:`solve_path`, compiled once per structure (a new ``lams`` of the same
    length, ``tol`` or ``max_steps`` reuses it). ``skipping``: the warm-started scan skips every
    lambda after one whose solve needs more room (:meth:`Solver.needs_room`), and NaN lambdas."""
    if batched:
        one = jax.vmap(lambda lam: _solve_compiled(problem.with_lam(lam), solver, x0, opts, adjoint))
        if chunk is None or chunk >= lams.shape[0]:
            return one(lams)
        m = lams.shape[0]
        k = -(-m // chunk)
        padded = jnp.concatenate([lams, jnp.repeat(lams[-1:], k * chunk - m)]).reshape(k, chunk)
        return jax.tree_util.tree_map(lambda a: a.reshape((k * chunk,) + a.shape[2:])[:m], lax.map(one, padded))

    one = lambda x, lam: _solve_compiled(problem.with_lam(lam), solver, x, opts, adjoint)  # noqa: E731
    if not skipping:
        return lax.scan(lambda x, lam: (lambda s: (s.params, s))(one(x, lam)), x0, lams)[1]
    # once a lambda runs out of room the rest are left RUNNING (skipped), for solve_path to
    # continue with the enlarged solver (_path_enlarged)
    skipped = jax.tree_util.tree_map(jnp.zeros_like, jax.eval_shape(one, x0, lams[0]))
    skipped = eqx.tree_at(lambda s: s.status, skipped, jnp.full((), RUNNING, jnp.int32))

    def body(carry, lam):  # a NaN lam pads a continued path (_path_enlarged): skipped too
        x, room = carry
        sol = lax.cond(room | jnp.isnan(lam), lambda: eqx.tree_at(lambda s: s.params, skipped, x), lambda: one(x, lam))
        return (sol.params, room | solver.needs_room(problem, sol)), sol

    return lax.scan(body, (x0, jnp.zeros((), bool)), lams)[1]


def _path_enlarged(problem, solver, lams, x0, opts, adjoint, sols) -> Solution:
    """The warm-started path with every lambda from the first whose solve asks for more room
    (:meth:`Solver.enlarged`) solved again by the larger solver, from the solution before it; the
    lambdas re-solved are padded with NaN (skipped) to the path's length, so each size compiles
    once; a progress bar goes back to lambda ``i`` and goes on."""
    if type(solver).needs_room is Solver.needs_room:
        return sols
    while not _has_tracer(sols):
        room = np.asarray(solver.needs_room(problem, sols))
        if not room.any():
            return sols
        i = int(np.argmax(room))
        bigger = solver.enlarged(problem)
        if solver.progress:
            bigger = bigger.with_options(progress=solver.progress)
            progress.rewind(i)
        solver = adjoint.shared(bigger.hoist(_stop_gradient(problem)))
        start = x0 if i == 0 else _row(sols.params, jnp.asarray(i - 1))
        host = np.asarray(lams)
        tail = jnp.asarray(np.concatenate([host[i:], np.full((i,), np.nan, host.dtype)]))
        again = dataclasses.replace(_path_compiled(problem, solver, tail, start, opts, False, None, adjoint, True),
                                    method=sols.method)
        sols = _spliced(sols, again, jnp.asarray(i))  # an array: filter_jit keeps a Python int static
    return sols


@eqx.filter_jit
def _row(tree, i):
    """Row ``i`` (traced: one compile whatever ``i``) of every leaf of ``tree``."""
    return jax.tree_util.tree_map(lambda a: lax.dynamic_index_in_dim(a, i, keepdims=False), tree)


@eqx.filter_jit
def _spliced(head: Solution, tail: Solution, i) -> Solution:
    """The path ``head[:i]`` followed by ``tail[:m - i]`` along the leading axis (``m`` lambdas),
    ``i`` traced: one compile for every split point (slicing at a concrete ``i`` compiled a gather
    and a concatenation per leaf and per ``i``: 2 s of a first 100-lambda Lasso path's 11 s)."""
    def one(a, b):
        k = jnp.arange(a.shape[0])
        shifted = jnp.take(b, jnp.maximum(k - i, 0), axis=0)  # shifted[k] = b[k - i]
        return jnp.where((k < i).reshape((-1,) + (1,) * (a.ndim - 1)), a, shifted)
    return jax.tree_util.tree_map(one, head, tail)


def _adjoint(solver, adjoint) -> AbstractAdjoint:
    """``adjoint``, or where it is ``None`` the default: :class:`~jaxprox.ImplicitAdjoint`, and
    :class:`~jaxprox.Unrolled` for a solver without a fixed-point residual
    (:attr:`jaxprox.Solver.has_residual`)."""
    if adjoint is not None:
        return adjoint
    return ImplicitAdjoint() if getattr(solver, "has_residual", True) else Unrolled()


def _validate(problem, solver, adjoint) -> None:
    """Checks on concrete Python values, before anything is traced."""
    if isinstance(solver, type) and issubclass(solver, Solver):
        raise TypeError(f"solver must be a jaxprox Solver instance, got the class {solver.__name__}; "
                        f"pass {solver.__name__}() (with its options)")
    if not isinstance(solver, Solver):
        raise TypeError(f"solver must be a jaxprox Solver, got {type(solver).__name__}")
    if solver.check_every < 1 or (solver.max_steps is not None and solver.max_steps < 1):
        raise ValueError(
            f"need check_every >= 1 and max_steps >= 1, got check_every={solver.check_every}, "
            f"max_steps={solver.max_steps}")
    if not isinstance(adjoint, AbstractAdjoint):
        raise ValueError(f"adjoint must be jp.ImplicitAdjoint(...) or jp.Unrolled(), got {adjoint!r}")
    adjoint.check(solver)
    if solver.trace_size < 2 or solver.trace_size % 2:
        raise ValueError(f"trace_size must be an even number >= 2, got {solver.trace_size}")
    capabilities.check(problem, solver)


def _check_init(problem, init) -> None:
    """A warm start whose leading arrays do not match the problem's parameters
    (``problem.zeros()``: ``w``, or ``(w, lam)`` for the DRSVM, which also takes ``(w, lam, a)``)
    is refused before anything is traced, naming both shapes (else a shape error deep inside the
    solver's first product)."""
    if init is None or not hasattr(problem, "zeros"):
        return
    want = jax.tree_util.tree_leaves(jax.eval_shape(problem.zeros))
    got = jax.tree_util.tree_leaves(init)
    if len(got) < len(want) or any(math.prod(jnp.shape(g)) != math.prod(w.shape) for g, w in zip(got, want)):
        raise ValueError(
            f"init has the shape(s) {[tuple(jnp.shape(g)) for g in got]}; this problem's parameters "
            f"have the shape(s) {[tuple(w.shape) for w in want]}")


def _without_zero_penalty(problem, solver):
    """``problem`` without a penalty whose ``lam`` is concretely zero
    (:meth:`jaxprox.problems.erm.ERM.without_zero_penalty`: the same objective, certified by its
    curvature), when ``solver`` accepts the unpenalised problem; otherwise ``problem``."""
    if not hasattr(problem, "without_zero_penalty"):
        return problem
    plain = problem.without_zero_penalty()
    if plain is problem or capabilities.missing(plain, type(solver)):
        return problem
    return plain


def _rescaled(problem, solver, init):
    """``(problem, init, c)`` as :func:`solve` runs them for ``solver`` (the policy:
    :func:`jaxprox.defaults.rescale_ratio`): the column-scaled problem, the warm start ``init / c``
    and the scales ``c`` (the problem's own :meth:`~jaxprox.problems.erm.ERM.column_scale` and
    :meth:`~jaxprox.problems.erm.ERM.column_scaled`); the inputs unchanged and ``c = None`` where
    no rescaling applies, the scaled problem is one the solver does not accept, or ``init`` is not
    a plain vector / matrix ``w``."""
    ratio = rescale_ratio(solver)
    if ratio is None or not hasattr(problem, "column_scale"):
        return problem, init, None
    if init is not None and jnp.shape(init) != tuple(problem.param_shape):
        return problem, init, None
    c = problem.column_scale(ratio)
    if c is None:
        return problem, init, None
    scaled = problem.column_scaled(c)
    if capabilities.missing(scaled, type(solver)):
        return problem, init, None
    return scaled, (None if init is None else by_rows(1.0 / c, init)), c


def _unscaled(sol: Solution, c, lead: int = 0) -> Solution:
    """``sol`` of the column-scaled problem reported in the original variable ``w = c * v`` (the
    dual point, objective values and gap are those of the original problem already)."""
    return dataclasses.replace(sol, params=by_rows(c, sol.params, lead), method=f"{sol.method} (columns scaled)")


def _warn(sol: Solution, solver, reason=None) -> None:
    """What :func:`solve` and :func:`solve_path` warn about after a solve: a short stop
    (:func:`_warn_short`) and a ``tol`` below the iterate's resolution (:func:`_warn_resolution`)."""
    _warn_short(sol, solver, reason)
    _warn_resolution(sol, solver)


def _warn_short(sol: Solution, solver, reason=None) -> None:
    """Warn when a concrete (not traced) solution did not converge; ``reason``: a callable giving
    the sentences on why (:func:`_short_reason`), called only for a short stop."""
    if isinstance(sol.status, jax.core.Tracer):
        return
    status = jax.device_get(sol.status)
    short = status != CONVERGED
    if not short.any():
        return
    names = sorted({STATUS_NAMES.get(int(v), "running") for v in np.ravel(status[short])})
    gap = np.max(np.ravel(jax.device_get(sol.gap))[np.ravel(short)])
    many = f"{int(short.sum())} of {short.size} solves" if np.ndim(status) else "the solve"
    stalled = (f" The certified gap stopped improving (no gain of {solver.stall_rtol:.0%} in "
               f"{solver.stall_window} checks)." if "stalled" in names else "")
    if "nonfinite" in names:
        stalled += (" The iteration produced NaN or inf (e.g. a step that overflowed in this precision); the "
                    "solution reported is its last finite check, with that check's gap.")
    if "diverged" in names:
        stalled += (" The objective ended above its value at the start (or blew up): the method moved away "
                    "from the solution, e.g. steps too large for the scale of the data.")
    if np.isposinf(gap):
        stalled += (" The gap is infinite: no dual point of this problem was feasible (an ERM without "
                    "a penalty is certified only for the squared and logistic losses, and unpenalised "
                    "logistic regression on separable data has no minimiser); a penalty or a constraint "
                    "makes it certifiable.")
    warnings.warn(
        f"{solver.describe()}: {many} stopped without converging ({', '.join(names)}; certified gap "
        f"{gap:.3g} > atol + tol |primal| with tol={solver.tol:g}, atol={solver.atol:g}, after at most "
        f"max_steps={solver.max_steps} {solver.step_unit}).{stalled}{reason() if reason else ''} "
        + (solver.short_advice or "Raise max_steps, loosen tol, or pick a solver that reaches this accuracy "
           "(docs: 'Which solver')."), ConvergenceWarning, stacklevel=3)


def _warn_resolution(sol: Solution, solver) -> None:
    """Warn when ``tol`` asks for a relative gap below the resolution of the iterate's dtype
    (``0 < tol < eps``: 1.2e-7 in float32): a gap that small is rounding of the primal and dual
    values, not a bound on the suboptimality (``docs/precision.md``), whatever the status says.
    A property of the configuration and the data's dtype, so it also warns while a ``jit`` traces
    the solve (once per trace)."""
    leaves = [x for x in jax.tree_util.tree_leaves(sol.params) if jnp.issubdtype(x.dtype, jnp.floating)]
    if not leaves or isinstance(solver.tol, jax.core.Tracer):
        return
    dtype = np.dtype(leaves[0].dtype)  # the iterate's precision (the objective may accumulate in float64)
    eps = float(np.finfo(dtype).eps)
    tol = float(np.max(np.asarray(solver.tol)))
    if 0 < tol < eps:
        warnings.warn(
            f"{solver.describe()}: tol={tol:g} is below the resolution of {dtype.name} (eps {eps:.3g}): a "
            f"certified gap under about eps |primal| is rounding of the objective values, not a bound on "
            f"the suboptimality. Ask for tol >= 1e-6 in float32 (docs/precision.md), or solve in float64 "
            f"(jax_enable_x64 and float64 data).", ConvergenceWarning, stacklevel=3)


def _short_reason(problem, solver, rescaled: bool) -> str:
    """The sentences a short stop's warning adds on why: columns in different units that
    :func:`solve` did not rescale for ``solver`` (:func:`_unscaled_reason`) and the problem's own
    :meth:`~jaxprox.base.Problem.short_stop_note`; ``""`` for traced data."""
    if _has_tracer(problem):
        return ""
    return ("" if rescaled else _unscaled_reason(problem, solver)) + problem.short_stop_note()


def _unscaled_reason(problem, solver) -> str:
    """The sentence a short stop's warning adds when ``solver`` has ``unscaled_advice`` and the
    concrete data of ``problem`` have columns in different units; ``""`` otherwise."""
    A = getattr(problem, "A", None)
    if not solver.unscaled_advice or not hasattr(A, "column_max_abs") or _has_tracer(A):
        return ""
    try:
        ranges = np.asarray(A.column_max_abs())
    except NotImplementedError:
        return ""
    if not columns_in_different_units(ranges):
        return ""
    nz = ranges[ranges > 0]
    return (f" The data's columns are in different units (ranges {nz.min():.3g} to {nz.max():.3g}): "
            + solver.unscaled_advice)
