"""The shared driver: :func:`solve`, :class:`Solver` and :class:`Solution`.

``solve(problem, solver)`` runs ``solver.step`` inside a ``lax.fori_loop`` of ``check_every``
steps, itself inside one ``lax.while_loop`` over blocks. After each block it evaluates the
solver's certificate ``(primal, dual, gap)`` once, records it in a preallocated trace, and stops
when

    gap <= atol + tol * |primal|          (status CONVERGED)

or when ``max_steps`` is reached (MAX_STEPS), a value becomes NaN/inf (NONFINITE), the primal
value blows up or ends above its value at the start (DIVERGED), or, for a solver that opts in
(``Solver.stall_window > 0``), the best certified gap has not improved by a factor
``1 - stall_rtol`` for ``stall_window`` checks (STALLED). It never raises inside
``jit``; outside ``jit`` a solve that stops short warns (:class:`ConvergenceWarning`), and
:func:`check` raises or warns on demand, also inside ``jit``.

Run options (``tol``, ``atol``, ``max_steps``) enter the compiled loop as traced values, so a
new value does not recompile; ``check_every`` and ``trace_size`` fix array and loop shapes and
stay static. ``max_steps`` counts calls of ``Solver.step``: one iteration of the paper's
algorithm (an epoch for the incremental methods, an outer stage for APPA; each solver's
docstring says which).

Before tracing, :func:`solve` checks that the solver can solve the problem
(:mod:`jaxprox.capabilities`) and derives the solver's data-dependent constants afresh from this
problem (:meth:`Solver.prepare`, :meth:`Solver.hoist`): a solver config never carries constants
of other data into a solve.

Differentiation (DESIGN.md, "Differentiation"): with ``adjoint="implicit"`` (default) the
solution ``z*`` is defined as a root of the solver's fixed-point residual ``r(problem, z) = 0``
(e.g. the prox-gradient map ``w - prox(w - eta grad f(w))``, or the primal-dual map for saddle
problems). ``jax.lax.custom_root`` then gives ``dz* = -(d_z r)^{-1} d_theta r [dtheta]`` as a
JVP; the linear system is solved matrix-free by GMRES inside ``lax.custom_linear_solve`` so the
JVP is transposable and reverse mode works too. An eager ``jax.grad`` / ``jax.jvp`` /
``jax.jacfwd`` (outside any ``jit``) does not linearise the whole solve: the loop runs as the plain
solve's compiled computation on the concrete values and, when the system is small (at most
:data:`DENSE_TANGENT_MAX` unknowns and differentiated inputs), the solution's Jacobian
``dz*/dp`` is computed once, densely, on those values, so that only a product with it is
differentiated (:func:`_solve_eager`). With ``adjoint="unrolled"`` the loop runs as a
``lax.scan`` of ``max_steps // check_every`` blocks (states frozen once converged) and JAX
differentiates through the iterations.
"""
from __future__ import annotations

import abc
import copy
import dataclasses
import math
import warnings
from typing import Any, ClassVar

import equinox as eqx
import numpy as np
import jax
import jax.numpy as jnp
from jax import lax

from ._compile import Ahead, _top_level, at_eval_level, compiled, structure
from .base import by_rows, check_range, data_platform
from .defaults import DENSE_TANGENT_MAX

PyTree = Any

RUNNING = -1
CONVERGED = 0
MAX_STEPS = 1
NONFINITE = 2
DIVERGED = 3
STALLED = 4
#: column ranges (``max_i |A_ij|``) that differ by more than this factor are rescaled for a solver
#: that declares :attr:`Solver.rescales` (evidence: ``benchmarks/results/defaults.md``)
RESCALE_RATIO = 10.0
#: the work a stochastic solver with ``max_steps=None`` (SVRG, SDCA, APPA, Dual APPA) may do, in
#: sequential sample steps: ``max_steps = SAMPLE_STEP_BUDGET / (n * epochs per step)``, clipped to
#: ``[STEPS_FLOOR, STEPS_CAP]`` (:meth:`Solver.budget`): many more epochs than the floor on small
#: data, where one costs little (evidence and times: ``benchmarks/results/defaults.md``)
SAMPLE_STEP_BUDGET = 2_000_000
STEPS_FLOOR, STEPS_CAP = 200, 20_000
#: the work of a FISTA, AGM or DRSVMPDHG solve with ``max_steps=None``, in entries of the data read:
#: ``max_steps = ITERATION_WORK_BUDGET / size`` clipped to the solver's range
#: (:func:`iteration_budget`): more iterations where one costs little (evidence:
#: ``benchmarks/results/defaults.md``, e.g. the n < d microarray data at weak l1 penalties)
ITERATION_WORK_BUDGET = 30_000_000_000
STATUS_NAMES = {CONVERGED: "converged", MAX_STEPS: "max_steps", NONFINITE: "nonfinite", DIVERGED: "diverged",
                STALLED: "stalled"}


class ConvergenceWarning(UserWarning):
    """A solve stopped before its certified gap reached ``atol + tol * |primal|``."""


class Solver(eqx.Module):
    """Base class of every algorithm: a static configuration plus pure ``init``/``step``.

    Subclasses implement

    * ``init(problem, init=None) -> state`` (``init``: optional warm start for the primal params),
    * ``step(problem, state) -> state`` (one iteration of the paper's algorithm),
    * ``certificate(problem, state) -> (primal, dual, gap)``,
    * ``params(state)`` (the primal solution reported), optionally ``dual(state)``,
    * for implicit differentiation, ``solution(state) -> z`` and ``residual(problem, z)`` with
      ``residual == 0`` exactly at an optimum, and ``unpack(z) -> (params, dual)``.

    A solver whose certificate can plateau above any useful ``tol`` (the incremental subgradient
    methods) sets ``stall_window`` (checks, ``0``: never) and ``stall_rtol``: the loop then stops
    with status STALLED once ``stall_window`` checks in a row bring the best gap no lower than
    ``(1 - stall_rtol)`` times its value at the last such gain; ``short_advice`` is added to the
    warning of a solve that stops short. ``unscaled_advice`` is added when such a solve's data
    have columns in different units (:func:`columns_in_different_units`) that :func:`solve` could
    not rescale for this solver (a method on the dual, whose conditioning does not change with the
    units of ``w``): what to do instead.
    """

    stall_window = 0
    stall_rtol = 0.1
    short_advice = ""
    unscaled_advice = ""

    tol: float = eqx.field(static=True, default=1e-6, kw_only=True)
    atol: float = eqx.field(static=True, default=0.0, kw_only=True)
    max_steps: int = eqx.field(static=True, default=10_000, kw_only=True)
    check_every: int = eqx.field(static=True, default=10, kw_only=True)
    verbose: bool = eqx.field(static=True, default=False, kw_only=True)
    adjoint: str = eqx.field(static=True, default="implicit", kw_only=True)
    trace_size: int = eqx.field(static=True, default=256, kw_only=True)
    #: solve in the variable ``v = w / c`` with Jacobi column scales ``c`` (columns of unit
    #: root-mean-square, :meth:`jaxprox.problems.erm.ERM.column_scale`): ``None`` (default) does so
    #: where the solver declares :attr:`rescales` and the column ranges ``max_i |A_ij|`` differ by
    #: more than :data:`RESCALE_RATIO`; ``True`` whenever they differ at all; ``False`` never. The
    #: reported solution is ``w``.
    rescale: bool | None = eqx.field(static=True, default=None, kw_only=True)

    #: ranges of the numeric options, checked on construction (:func:`jaxprox.base.check_range`;
    #: ``None`` and traced values pass): ``{option: "> 0" | ">= 1" | "(0, 1]" | ...}``
    option_ranges: ClassVar[dict] = {}

    def __check_init__(self):
        for name, spec in type(self).option_ranges.items():
            check_range(type(self).__name__, name, getattr(self, name), spec)

    #: the solver's steps depend on the units of the features (a step ``1/L`` with ``L`` from the
    #: largest column), so :func:`solve` rescales badly scaled columns for it (see ``rescale``); a
    #: solver whose answer depends on its configuration overrides it with a property (APPA)
    rescales: ClassVar[bool] = False
    #: what one step is, the unit of ``max_steps`` (and of ``Solution.steps``): ``"iterations"``
    #: for the first-order methods; ``"epochs"`` (passes over the data), ``"stages"`` (proximal-
    #: point outer iterations) or ``"Newton steps"`` where one step is much more work
    step_unit: ClassVar[str] = "iterations"
    #: ``(floor, cap)`` of the default budget from the data's size (:func:`iteration_budget`) of a
    #: solver whose ``max_steps`` defaults to ``None`` (FISTA, AGM, DRSVMPDHG); ``None``: see
    #: :meth:`budget`
    iteration_range: ClassVar[tuple[int, int] | None] = None
    #: the range of :meth:`budget` in words, for a solver whose ``max_steps`` defaults to ``None``
    #: (derived from :attr:`iteration_range` where that is set)
    budget_range: ClassVar[str] = ""
    #: what the solver needs of a problem (:mod:`jaxprox.capabilities`), checked by :func:`solve`
    requires: ClassVar[tuple] = ()
    #: fields holding constants derived from the data (set by :meth:`prepare` / :meth:`hoist`);
    #: :func:`solve` clears them on entry so that they are always those of the problem solved
    derived: ClassVar[tuple[str, ...]] = ()

    @abc.abstractmethod
    def init(self, problem, init=None):
        ...

    @abc.abstractmethod
    def step(self, problem, state):
        ...

    @abc.abstractmethod
    def certificate(self, problem, state):
        ...

    @abc.abstractmethod
    def params(self, state):
        ...

    def dual(self, state):
        return None

    def solution(self, state):
        """The variables ``z`` in which optimality is a root of :meth:`residual`."""
        return self.params(state)

    def residual(self, problem, z):
        """Fixed-point residual, zero exactly at an optimum (default: the problem's prox-gradient
        map, which needs a smooth loss)."""
        return problem.prox_grad_residual(z)

    def unpack(self, z):
        """Split ``solution`` into ``(params, dual)``; the default has no dual part."""
        return z, None

    def hoist(self, problem):
        """A copy of this solver with the constants that depend on the data but not on ``lam``
        (e.g. a Lipschitz estimate by power iteration) computed once, outside the iteration loop,
        in the fields named by :attr:`derived`. :func:`solve` and :func:`run` call it before
        their loop, :func:`solve_path` once before its scan (it returns ``self`` when the fields
        are already set; the public entry points clear them first, so they always belong to the
        problem being solved). Default: ``self``."""
        return self

    def prepare(self, problem):
        """Like :meth:`hoist`, for constants that can only be built from *concrete* data (index
        layouts computed with NumPy, e.g. the compressed-column copy of a sparse ``A``), called
        before anything is traced. When the data are traced (``jp.solve`` inside the user's own
        ``jax.jit``) it returns ``self`` and the solver takes its layout-free path. Default:
        ``self``."""
        return self

    def budget(self, problem) -> int:
        """The ``max_steps`` of a solve of ``problem`` when the solver was built with
        ``max_steps=None``: a number of steps that follows the data (see the stochastic solvers,
        :data:`SAMPLE_STEP_BUDGET`). Default: :func:`iteration_budget` within
        :attr:`iteration_range` where the class sets one, else the class's own ``max_steps``
        default."""
        if self.iteration_range is not None:
            return iteration_budget(problem, *self.iteration_range)
        from .capabilities import default_max_steps

        return default_max_steps(type(self))

    def budgeted(self, problem) -> "Solver":
        """This solver with ``max_steps`` fixed: its own, or :meth:`budget` where it is ``None``
        (and ``check_every`` at most that)."""
        if self.max_steps is not None:
            return self
        steps = int(self.budget(problem))
        return self.with_options(max_steps=steps, check_every=min(self.check_every, steps))

    def with_options(self, **options) -> "Solver":
        """A copy with new run options (``tol``, ``atol``, ``max_steps``, ``check_every``,
        ``verbose``, ``trace_size``); the algorithm's own settings are kept."""
        allowed = {"tol", "atol", "max_steps", "check_every", "verbose", "trace_size"}
        if not set(options) <= allowed:
            raise TypeError(f"with_options takes {sorted(allowed)}, got {sorted(set(options) - allowed)}")
        out = copy.copy(self)
        for k, v in options.items():
            object.__setattr__(out, k, v)
        return out

    def derivative_gap(self, problem) -> str | None:
        """``None`` when the implicit derivative of this solver's solution is exact; otherwise why
        not (then :func:`solve` raises ``NotImplementedError`` when a derivative is asked for,
        rather than return a wrong one). Default: ``None``."""
        return None

    def describe(self) -> str:
        """What produced a solution (``Solution.method``): the solver's class name by default."""
        return type(self).__name__

    def lockstep(self, problem) -> "Solver":
        """The form of this solver for many problems solved in lock-step (``jax.vmap``, as
        :func:`solve_path` with ``batched=True``): without inner loops whose trip count differs
        between lanes (under ``vmap`` a while loop runs until its slowest lane is done), where a
        known constant makes them unnecessary. Default: the solver itself."""
        return self

    def refine(self, problem, state):
        """Called at every check, after the block of steps and before :meth:`certificate`: a solver
        may update the point it *reports* from its state (e.g. keep the best of several candidate
        points, one of them an active-set polish of the iterate), so that the certificate and the
        reported solution are always those of the same point. It must not change the iteration
        itself. Default: ``state`` unchanged."""
        return state

    def polish(self, problem, state):
        """Post-process the final state before the solution is reported and differentiated
        (``adjoint="implicit"`` only). The default returns ``state`` unchanged. A solver whose
        iterates do not carry an exact root of :meth:`residual` (e.g. the incremental DRSVM
        methods, whose dual part is an average of per-sample selections) overrides it to move to
        one, so that the implicit derivative is exact; :func:`solve` then recomputes the
        certificate of the polished state."""
        return state


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
    """What :func:`solve` returns. ``method`` names what produced the answer (the solver's class,
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


def columns_in_different_units(ranges, ratio: float = RESCALE_RATIO) -> bool:
    """Whether the column ranges ``max_i |A_ij|`` (a NumPy array, computed on the host) of the
    non-empty columns differ by more than ``ratio``: the test of :meth:`jaxprox.ERM.column_scale`
    and of DRSVMPDHG's default column scaling."""
    nonzero = np.asarray(ranges)[np.asarray(ranges) > 0]
    return bool(nonzero.size) and bool(nonzero.max() > ratio * nonzero.min())


def iteration_budget(problem, floor: int = 10_000, cap: int = 200_000) -> int:
    """``ITERATION_WORK_BUDGET / size`` iterations, ``size`` the number of entries of the
    problem's largest array (the data: ``n d`` for a dense ``A``, the stored non-zeros of a sparse
    one), clipped to ``[floor, cap]``."""
    size = max((int(np.size(x)) for x in jax.tree_util.tree_leaves(problem) if hasattr(x, "shape")), default=1)
    return int(min(cap, max(floor, ITERATION_WORK_BUDGET // max(size, 1))))


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
    if solver.verbose:
        jax.debug.print("[jaxprox] step {k:6d}  primal {p:.10e}  dual {d:.10e}  gap {g:.3e}",
                        k=k, p=p, d=d, g=g)
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


def _gmres_solve(matvec, b):
    """GMRES on ``matvec(x) = b``; if it breaks down (a singular Jacobian at a kink of the
    solution map, where the derivative does not exist) fall back to the minimum-norm least-squares
    solution of the Tikhonov-regularised normal equations ``(J^T J + delta I) x = J^T b`` by CG, so
    the derivative returned is finite and documented rather than NaN."""
    x, _ = jax.scipy.sparse.linalg.gmres(matvec, b, tol=1e-12, atol=0.0, restart=50, maxiter=20,
                                         solve_method="batched")
    finite = _all_finite(x)

    def least_squares(_):
        (jt_b,) = jax.linear_transpose(matvec, b)(b)
        transpose = jax.linear_transpose(matvec, b)
        normal = lambda v: jax.tree_util.tree_map(lambda a, c: a + 1e-10 * c, transpose(matvec(v))[0], v)
        return jax.scipy.sparse.linalg.cg(normal, jt_b, tol=1e-12, maxiter=500)[0]

    return lax.cond(finite, lambda _: x, least_squares, None)


def _dense_solve(matvec, b):
    """``J x = b`` with ``J`` materialised column by column (one ``vmap`` of the JVP over the
    identity) and solved by least squares: exact when ``J`` is invertible, the minimum-norm
    least-squares solution at a kink of the solution map (where the derivative does not exist),
    so the derivative returned is finite and documented rather than NaN. Smaller to compile and
    faster than GMRES for the small systems of most solves."""
    J = jax.vmap(matvec, out_axes=1)(jnp.eye(b.shape[0], dtype=b.dtype))
    return jnp.linalg.lstsq(J, b)[0]


#: XLA options of the solution's Jacobian, on top of :data:`jaxprox.base.COMPILER_OPTIONS`: it is
#: computed once, and its run is library calls (the batched products, the least squares), so
#: without LLVM's optimisations it compiles in a third to a half of the time at the same run time
#: (``benchmarks/results/latency_session23_check.md``)
JACOBIAN_OPTIONS = {"xla_backend_optimization_level": 0}


@compiled(extra_options=JACOBIAN_OPTIONS, trace_cache=True)
def _solution_jacobian(problem, solver, z_star, wrt: tuple):
    """``dz*/dp = -(d_z r)^+ d_p r`` at ``z*`` as a dense ``(size z, size p)`` matrix, for ``p`` the
    leaves of ``problem`` numbered ``wrt`` (flattened): both blocks ``[d_z r, d_p r]`` of the
    residual's Jacobian from one batched JVP in ``(z, p)`` jointly (the residual's JVP traced and
    compiled once, not once per block) and one least-squares solve (minimum-norm at a kink of the
    solution map, as :func:`_dense_solve`). What an eager derivative computes once, on concrete
    values."""
    from jax.flatten_util import ravel_pytree

    leaves, treedef = jax.tree_util.tree_flatten(problem)
    z_flat, unravel_z = ravel_pytree(z_star)
    p_flat, unravel_p = ravel_pytree([leaves[i] for i in wrt])
    nz = z_flat.shape[0]

    def r_flat(zp):
        new = list(leaves)
        for i, leaf in zip(wrt, unravel_p(zp[nz:])):
            new[i] = leaf
        out = solver.residual(jax.tree_util.tree_unflatten(treedef, new), unravel_z(zp[:nz]))
        return ravel_pytree(_same_types(out, z_star))[0]

    zp = jnp.concatenate([z_flat, p_flat.astype(z_flat.dtype)])
    J = jax.vmap(lambda v: jax.jvp(r_flat, (zp,), (v,))[1], out_axes=1)(jnp.eye(zp.shape[0], dtype=zp.dtype))
    return jnp.linalg.lstsq(J[:, :nz], -J[:, nz:])[0]


def _tangent_solve(g, y):
    """Solve the linearised optimality system ``g(x) = y``, transposably: densely up to
    :data:`DENSE_TANGENT_MAX` unknowns, matrix-free by GMRES above.

    The system is solved on one flat vector (``ravel_pytree``): a pytree right-hand side can have
    symbolically-zero blocks (e.g. the dual block of a saddle residual when only ``lam`` varies),
    which the transpose rule of ``lax.custom_linear_solve`` rejects."""
    from jax.flatten_util import ravel_pytree

    y_flat, unravel = ravel_pytree(y)
    g_flat = lambda x: ravel_pytree(g(unravel(x)))[0]
    solve = _dense_solve if y_flat.shape[0] <= DENSE_TANGENT_MAX else _gmres_solve
    x = lax.custom_linear_solve(g_flat, y_flat, solve=solve, transpose_solve=solve)
    return unravel(x)


def _finish(solver, c: _Carry, z) -> Solution:
    params, dual = solver.unpack(z)
    if dual is None:
        dual = solver.dual(c.state)
    return Solution(
        params=params, dual=dual, primal_value=c.primal, dual_value=c.dual, gap=c.gap,
        steps=c.k, converged=c.status == CONVERGED, status=c.status, trace=c.trace,
        method=solver.describe(),
    )


def _validate(problem, solver) -> None:
    """Checks on concrete Python values, before anything is traced."""
    from . import capabilities

    if not isinstance(solver, Solver):
        raise TypeError(f"solver must be a jaxprox Solver, got {type(solver).__name__}")
    if solver.check_every < 1 or (solver.max_steps is not None and solver.max_steps < solver.check_every):
        raise ValueError(
            f"need 1 <= check_every <= max_steps, got check_every={solver.check_every}, "
            f"max_steps={solver.max_steps}")
    if solver.adjoint not in ("implicit", "unrolled"):
        raise ValueError(f"adjoint must be 'implicit' or 'unrolled', got {solver.adjoint!r}")
    if solver.trace_size < 2 or solver.trace_size % 2:
        raise ValueError(f"trace_size must be an even number >= 2, got {solver.trace_size}")
    capabilities.check(problem, solver)


def _fresh(solver, problem):
    """``solver`` with its :attr:`Solver.derived` constants cleared and prepared for ``problem``."""
    names = type(solver).derived
    if names:
        solver = copy.copy(solver)  # as with_options: no re-validation, no pytree rebuild
        for n in names:
            object.__setattr__(solver, n, None)
    return solver.prepare(problem)


def _canonical(solver):
    """``solver`` with its traced run options set to fixed values, so that the compiled loop is
    shared by every ``tol`` / ``atol`` / ``max_steps`` (they reach it through :class:`RunOptions`).
    ``adjoint="unrolled"`` keeps ``max_steps``: it fixes the length of its scan."""
    fixed = solver.with_options(tol=0.0, atol=0.0)
    return fixed.with_options(max_steps=0) if solver.adjoint == "implicit" else fixed


def solve(problem, solver: Solver | None = None, *, init=None, warn: bool = True) -> Solution:
    """Solve ``problem`` with ``solver``; returns a :class:`Solution`. Without a solver, the
    measured default for the problem's class and size
    (:func:`jaxprox.capabilities.default_solver`).

    Works under ``jax.jit``, ``jax.vmap`` (e.g. over ``problem.with_lam(lam)``) and
    ``jax.grad`` / ``jax.jvp`` of ``Solution.params`` (see the module docstring for the adjoint).
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
        from .capabilities import default_solver

        solver = default_solver(problem)
    _validate(problem, solver)
    _check_init(problem, init)
    solver = solver.budgeted(problem)
    problem = _without_zero_penalty(problem, solver)
    problem, init, c = _rescaled(problem, solver, init)
    sol = _solve_eager(problem, _canonical(_fresh(solver, problem)), init, RunOptions.of(solver))
    if c is not None:
        sol = _unscaled(sol, c)
    if warn:
        _warn(sol, solver, lambda: _short_reason(problem, solver, rescaled=c is not None))
    return sol


def _warn(sol: Solution, solver, reason=None) -> None:
    """What :func:`solve` and :func:`solve_path` warn about after a solve: a short stop
    (:func:`_warn_short`) and a ``tol`` below the iterate's resolution (:func:`_warn_resolution`)."""
    _warn_short(sol, solver, reason)
    _warn_resolution(sol, solver)


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
    from . import capabilities

    if not hasattr(problem, "without_zero_penalty"):
        return problem
    plain = problem.without_zero_penalty()
    if plain is problem or capabilities.missing(plain, type(solver)):
        return problem
    return plain


def _rescaled(problem, solver, init):
    """``(problem, init, c)`` as :func:`solve` runs them for ``solver`` (its ``rescale`` option):
    the column-scaled problem, the warm start ``init / c`` and the scales ``c``
    (:meth:`jaxprox.problems.erm.ERM.column_scale`); the inputs unchanged and ``c = None`` where no
    rescaling applies, the scaled problem is one the solver does not accept, or ``init`` is not a
    plain vector / matrix ``w``."""
    from . import capabilities

    on = solver.rescales if solver.rescale is None else solver.rescale
    if not on or not hasattr(problem, "column_scale"):
        return problem, init, None
    if init is not None and jnp.shape(init) != tuple(problem.param_shape):
        return problem, init, None
    c = problem.column_scale(RESCALE_RATIO if solver.rescale is None else 1.0)
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


def _iterate(problem, solver: Solver, init, opts: RunOptions, *, differentiable: bool = True):
    """The iterations (and polish) of an implicit-adjoint solve on a gradient-stopped copy of
    ``problem`` (a while_loop has no reverse rule): returns the :class:`Solution`, the fixed point
    ``z*`` and the solver with its hoisted constants (:meth:`Solver.hoist`). With
    ``differentiable``, ``params`` / ``dual`` are ``z*`` made differentiable in ``problem`` by the
    implicit function theorem (:func:`_implicit_root`)."""
    stopped = _stop_gradient(problem)
    solver = _stop_gradient(solver).hoist(stopped)  # constants built by prepare from the live data too
    c = _polish(stopped, solver, opts, _run_while(stopped, solver, init, opts))
    z_star = jax.lax.stop_gradient(solver.solution(c.state))
    z = _implicit_root(problem, solver, z_star) if differentiable else z_star
    return _finish(solver, c, z), z_star, solver


@compiled(trace_cache=True)
def _solve_compiled(problem, solver: Solver, init, opts: RunOptions) -> Solution:
    if solver.adjoint == "unrolled":
        solver = solver.hoist(problem)
        c = _run_scan(problem, solver, init, opts)
        return _finish(solver, c, solver.solution(c.state))
    return _iterate(problem, solver, init, opts)[0]


@compiled(trace_cache=True)
def _iterate_compiled(problem, solver: Solver, init, opts: RunOptions):
    """:func:`_iterate` without a derivative, compiled at the top level (with
    :data:`jaxprox.base.COMPILER_OPTIONS`): a plain solve, and the forward solve of an eager
    ``jax.grad`` / ``jax.jvp`` (:func:`_solve_eager`)."""
    return _iterate(problem, solver, init, opts, differentiable=False)


@eqx.filter_jit
def _attach_derivative(problem, solver: Solver, sol: Solution, z_star) -> Solution:
    """``sol`` with ``params`` / ``dual`` differentiable in ``problem`` (:func:`_implicit_root`
    at the given fixed point ``z_star``; ``solver`` as hoisted by :func:`_iterate`)."""
    return _with_solution(solver, sol, _implicit_root(problem, solver, z_star))


def _attach_jacobian(live: list, solver: Solver, sol: Solution, z_star, jac) -> Solution:
    """``sol`` with ``params`` / ``dual`` = ``z*`` whose derivative in the live leaves ``p`` is
    ``(dz*/dp) dp`` (``jac`` from :func:`_solution_jacobian`): a custom JVP whose tangent is one
    product, so an eager ``jax.grad`` compiles only that product transposed (``jax.jvp`` the
    product)."""

    @jax.custom_jvp
    def root(p):
        return z_star

    @root.defjvp
    def root_jvp(primals, tangents):
        return z_star, _jacobian_product(jac, tangents[0], z_star)

    return _with_solution(solver, sol, root(live))


@eqx.filter_jit
def _jacobian_product(jac, dlive: list, like):
    """``(dz*/dp) dp`` shaped as ``like`` (``z*``): one product, the only computation an eager
    derivative of a small solve compiles after the Jacobian (transposed, under ``jax.grad``)."""
    from jax.flatten_util import ravel_pytree

    dp = ravel_pytree(dlive)[0]
    unravel = ravel_pytree(like)[1]
    return unravel(jac @ dp.astype(jac.dtype))


def _with_solution(solver: Solver, sol: Solution, z) -> Solution:
    """``sol`` with ``params`` / ``dual`` unpacked from ``z`` (the dual kept when ``z`` has none)."""
    params, dual = solver.unpack(z)
    return eqx.tree_at(lambda s: (s.params, s.dual), sol, (params, sol.dual if dual is None else dual))


def _size(tree) -> int:
    return sum(x.size for x in jax.tree_util.tree_leaves(tree))


def _has_tracer(tree) -> bool:
    return any(isinstance(x, jax.core.Tracer) for x in jax.tree_util.tree_leaves(tree))


def _solve_eager(problem, solver: Solver, init, opts: RunOptions) -> Solution:
    """A solve outside any ``jit``: the iterations compiled at the top level on concrete values,
    and, when ``problem`` carries the tracers of an eager ``jax.grad`` / ``jax.jvp`` /
    ``jax.jacfwd`` (whose gradient-stopped values are concrete), the derivative attached by a
    separate small computation. The forward solve of a derivative is then the plain solve's own
    compiled loop (compiled with the top-level options, or already in the cache), not a
    linearisation of the whole solve. Anything else (a ``jit``, a ``vmap``): :func:`_solve_compiled`."""
    traced = _has_tracer((problem, init, solver))
    if solver.adjoint == "implicit":
        stopped = _stop_gradient((problem, solver, init))
        if not _has_tracer(stopped):
            # a weakly-typed value (e.g. ``jax.grad`` of a Python float) would compile another loop
            stopped = jax.tree_util.tree_map(
                lambda x: lax.convert_element_type(x, x.dtype) if getattr(x, "weak_type", False) else x, stopped)
            wrt, live = _live_leaves(problem) if traced else ((), [])
            ahead = _jacobian_ahead(stopped, wrt, live) if traced else None
            try:
                with at_eval_level():  # the plain solve's compiled loop, also under an eager derivative
                    sol, z_star, hoisted = _iterate_compiled.at_top(*stopped, opts)
            except BaseException:
                if ahead is not None:
                    ahead.finish()
                raise
            return _with_derivative(problem, stopped[0], hoisted, sol, z_star, wrt, live, ahead) if traced else sol
    return _solve_compiled(problem, solver, init, opts)


def _live_leaves(problem) -> tuple:
    """The positions ``wrt`` of the leaves of ``problem`` an eager derivative differentiates (traced
    inexact arrays), and those leaves; a derivative of a derivative is refused."""
    leaves = jax.tree_util.tree_leaves(problem)
    wrt = tuple(i for i, x in enumerate(leaves) if isinstance(x, jax.core.Tracer) and eqx.is_inexact_array(x))
    live = [leaves[i] for i in wrt]
    if any(isinstance(getattr(x, "primal", None), jax.core.Tracer) for x in live):
        raise NotImplementedError(
            "jaxprox: a derivative of a derivative of a solution (e.g. jax.hessian) is not supported: "
            "the implicit derivative dz*/dp is first order (differentiate it by finite differences)")
    return wrt, live


def _dense_jacobian(stopped, solver: Solver, wrt: tuple, live: list, z_star) -> bool:
    """Whether the derivative goes through the solution's dense Jacobian (:func:`_with_derivative`)."""
    return (bool(wrt) and max(_size(z_star), _size(live)) <= DENSE_TANGENT_MAX
            and solver.derivative_gap(stopped) is None)


_AHEAD: set = set()  # the structures of the eager derivatives whose Jacobian was prepared ahead


def _jacobian_ahead(stopped: tuple, wrt: tuple, live: list) -> Ahead | None:
    """Trace and compile the solution's Jacobian (:func:`_solution_jacobian`) for an eager
    derivative in a thread while the solve compiles (:class:`jaxprox.base.Ahead`): its arguments'
    shapes (the hoisted solver, ``z*``) follow from the solver's start without the solve's values.
    Once per structure in a process (a later derivative finds the Jacobian compiled); ``None``
    when there is nothing to prepare."""
    p, solver, init = stopped
    if not wrt or _size(live) > DENSE_TANGENT_MAX:
        return None
    seen = structure((stopped, wrt))  # once per structure: a later derivative finds it compiled
    if seen is None or seen in _AHEAD:
        return None
    if len(_AHEAD) >= 4096:
        _AHEAD.clear()
    _AHEAD.add(seen)

    def work():
        hoisted, z = eqx.filter_eval_shape(_solution_shapes, p, solver, init)
        if _dense_jacobian(p, hoisted, wrt, live, z):
            _solution_jacobian.prepare(p, hoisted, z, wrt)

    return Ahead(work)


def _solution_shapes(problem, solver: Solver, init):
    """The hoisted solver and ``z*`` as :func:`_iterate` returns them (a loop keeps its state's
    types, so the start's ``z`` has the shapes of ``z*``); for :func:`jax.eval_shape`."""
    solver = solver.hoist(problem)
    return solver, solver.solution(solver.init(problem, init))


def _with_derivative(problem, stopped, solver: Solver, sol: Solution, z_star, wrt: tuple, live: list,
                     ahead: Ahead | None = None) -> Solution:
    """``sol`` made differentiable in the live leaves of ``problem`` (``stopped``: their values;
    ``wrt``, ``live``: :func:`_live_leaves`):
    through the solution's Jacobian, computed once on the concrete values, when it is small
    (:func:`_solution_jacobian`, :func:`_attach_jacobian`; traced and compiled ``ahead`` while the
    solve compiled), else by the implicit root (:func:`_attach_derivative`, GMRES for large
    systems)."""
    if ahead is not None:
        ahead.finish()
    if not _dense_jacobian(stopped, solver, wrt, live, z_star):
        return _attach_derivative(problem, solver, sol, z_star)
    with at_eval_level():
        jac = _solution_jacobian.at_top(stopped, solver, z_star, wrt)
    return _attach_jacobian(live, solver, sol, z_star, jac)


def _implicit_root(problem, solver, z_star):
    """``z_star``, differentiable in ``problem`` as the root of ``r(problem, z) = 0`` (the
    solver's fixed-point residual): ``dz* = -(d_z r)^{-1} d_problem r [dproblem]`` by the implicit
    function theorem, a custom JVP whose linear solve (:func:`_tangent_solve`) is transposable, so
    reverse mode works too. The residual is traced only when a derivative is taken, so a plain
    solve does not pay for tracing it."""
    p_arr, p_static = eqx.partition(problem, eqx.is_inexact_array)
    s_arr, s_static = eqx.partition(solver, eqx.is_inexact_array)

    def residual(p, s, z):
        return _same_types(eqx.combine(s, s_static).residual(eqx.combine(p, p_static), z), z)

    @jax.custom_jvp
    def root(p, s, z):
        return z

    @root.defjvp
    def root_jvp(primals, tangents):
        why = solver.derivative_gap(problem)
        if why is not None:
            raise NotImplementedError(f"{solver.describe()}: no implicit derivative here: {why}")
        p, s, z = primals
        dp = tangents[0]  # solver constants and z* carry no derivative (both are stopped)
        _, dr = jax.jvp(lambda p_: residual(p_, s, z), (p,), (dp,))
        dz = _tangent_solve(lambda v: jax.jvp(lambda z_: residual(p, s, z_), (z,), (v,))[1],
                            jax.tree_util.tree_map(jnp.negative, dr))
        return z, dz

    return root(p_arr, s_arr, z_star)


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


def run(problem, solver: Solver, *, init=None):
    """Run ``solver`` on ``problem`` (no differentiation, no polish) and return its final state:
    the loop of :func:`solve` (with its :meth:`Solver.hoist`) for solvers that use another
    solver internally. Called eagerly, the loop is compiled once per structure, as :func:`solve`'s
    (a new ``tol`` or ``max_steps`` reuses it); inside a trace it is traced in place."""
    stopped = _stop_gradient(problem)
    solver = _fresh(solver.budgeted(problem), problem)
    opts = RunOptions.of(solver)
    if _top_level() and not _has_tracer((stopped, init, solver)):
        return _run_compiled(stopped, _canonical(solver), init, opts)
    return _run_while(stopped, _stop_gradient(solver).hoist(stopped), init, opts).state


@compiled(trace_cache=True)
def _run_compiled(problem, solver: Solver, init, opts: RunOptions):
    """:func:`run`'s loop, compiled at the top level (an eager ``lax.while_loop`` would be traced
    and compiled anew at every call)."""
    return _run_while(problem, solver.hoist(problem), init, opts).state


@compiled(trace_cache=True)
def _path_compiled(problem, solver, lams, x0, opts, batched: bool, chunk: int | None) -> Solution:
    """The body of :func:`solve_path`, compiled once per structure (a new ``lams`` of the same
    length, ``tol`` or ``max_steps`` reuses it)."""
    if batched:
        one = jax.vmap(lambda lam: _solve_compiled(problem.with_lam(lam), solver, x0, opts))
        if chunk is None or chunk >= lams.shape[0]:
            return one(lams)
        m = lams.shape[0]
        k = -(-m // chunk)
        padded = jnp.concatenate([lams, jnp.repeat(lams[-1:], k * chunk - m)]).reshape(k, chunk)
        return jax.tree_util.tree_map(lambda a: a.reshape((k * chunk,) + a.shape[2:])[:m], lax.map(one, padded))

    def body(x, lam):
        sol = _solve_compiled(problem.with_lam(lam), solver, x, opts)
        return sol.params, sol

    return lax.scan(body, x0, lams)[1]


def _stop_gradient(tree):
    return jax.tree_util.tree_map(
        lambda x: lax.stop_gradient(x) if eqx.is_inexact_array(x) else x, tree)


def solve_path(problem, solver: Solver, lams, *, init=None, warn: bool = True, batched: bool | None = None,
               chunk: int | None = None) -> Solution:
    """Solve ``problem.with_lam(lam)`` for every ``lam`` in ``lams``, in one of two ways:

    * ``batched=False``: a warm-started path, ``lax.scan`` over ``lams`` in the order given (pass
      them from large to small), each solve started from the previous solution;
    * ``batched=True``: every lambda at once, in lock-step (``jax.vmap``, each from ``init`` or
      zero), with the solver's :meth:`Solver.lockstep` form (FISTA: the step ``1/L`` with the
      hoisted bound ``L`` shared by all lanes, no backtracking loop); ``chunk`` lanes per vmapped
      call (``lax.map`` over chunks) bounds the memory of very large batches;
    * ``batched=None`` (default): lock-step on an accelerator, the warm-started scan on a CPU (the
      device of the data, or of an enclosing ``jax.default_device``: :func:`base.data_platform`).

    Returns a :class:`Solution` whose leaves are stacked along a leading axis of ``len(lams)``.

    When to use which (see ``benchmarks/results/paths.md``, ``gpu.md``): lock-step runs all solves
    together, so it wins on accelerators and when every lambda needs about the same number of
    steps; the warm-started scan runs them one after another but each starts close to its solution,
    so it wins on a CPU and along long, finely spaced paths.
    """
    _validate(problem, solver)
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
    fixed = _canonical(_fresh(solver, problem).hoist(_stop_gradient(problem)))
    if batched is None:
        batched = data_platform(problem) != "cpu"
    lanes = _canonical(fixed.lockstep(problem)) if batched else fixed
    sols = _path_compiled(problem, lanes, lams, x0, opts, bool(batched), chunk)
    if c is not None:
        sols = _unscaled(sols, c, lead=1)
    if warn:
        _warn(sols, solver)
    return sols
