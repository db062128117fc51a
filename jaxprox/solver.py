"""The :class:`Solver` contract: a static configuration with pure ``init`` / ``step`` /
``certificate`` / ``params``, run by the certified loop (:mod:`jaxprox.loop`) that
:func:`jaxprox.solve` drives."""
from __future__ import annotations

import abc
import copy
import inspect
from typing import ClassVar

import equinox as eqx
import jax.numpy as jnp

from .base import check_range
from .defaults import default_tol, iteration_budget


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
    have columns in different units (:func:`~jaxprox.defaults.columns_in_different_units`) that
    :func:`jaxprox.solve` could not rescale for this solver (a method on the dual, whose
    conditioning does not change with the units of ``w``): what to do instead.

    Optional hooks, each with a default that is right for most solvers (override where noted):

    ===================  ==========================================================================
    ``hoist``            constants from the (traced) data computed once before the loop: ``self``
    ``prepare``          constants that need *concrete* data (NumPy layouts): ``self``
    ``budget``           ``max_steps`` for ``max_steps=None``: :func:`~jaxprox.defaults.iteration_budget`
    ``refine``           the reported point updated at each check (best-of, polish): unchanged
    ``polish``           the final state moved to an exact root of ``residual``: unchanged
    ``lockstep``         the form for many problems in lock-step (``jax.vmap``): ``self``
    ``needs_room``       (traced) a solution stopped short for want of room: ``False``
    ``enlarged``         the larger configuration to continue such a solve with: ``None``
    ``derivative_gap``   why the implicit derivative is not exact here: ``None`` (it is)
    ``describe``         what produced a solution (``Solution.method``): the class name
    ===================  ==========================================================================

    and class attributes: :attr:`has_residual` (``False``: :func:`jaxprox.solve` differentiates
    by :class:`jaxprox.Unrolled` by default) and :attr:`unrollable` (``False``: its loop cannot be
    unrolled, :class:`jaxprox.ImplicitAdjoint` only).
    """

    stall_window = 0
    stall_rtol = 0.1
    short_advice = ""
    unscaled_advice = ""

    #: relative tolerance on the certified gap; ``None`` (default): by the data's precision,
    #: ``1e-6`` in float64 and ``1e-5`` in float32 (:data:`jaxprox.defaults.DEFAULT_TOL`)
    tol: float | None = eqx.field(static=True, default=None, kw_only=True)
    atol: float = eqx.field(static=True, default=0.0, kw_only=True)
    max_steps: int = eqx.field(static=True, default=10_000, kw_only=True)
    check_every: int = eqx.field(static=True, default=10, kw_only=True)
    verbose: bool = eqx.field(static=True, default=False, kw_only=True)
    #: a progress bar at the checks (:mod:`jaxprox.progress`); nothing is compiled in when False
    progress: bool = eqx.field(static=True, default=False, kw_only=True)
    trace_size: int = eqx.field(static=True, default=256, kw_only=True)
    #: solve in the variable ``v = w / c`` with Jacobi column scales ``c`` (columns of unit
    #: root-mean-square, :meth:`jaxprox.problems.erm.ERM.column_scale`): ``None`` (default) does so
    #: where the solver declares :attr:`rescales` and the column ranges ``max_i |A_ij|`` differ by
    #: more than :data:`jaxprox.defaults.RESCALE_RATIO`; ``True`` whenever they differ at all;
    #: ``False`` never (:func:`jaxprox.defaults.rescale_ratio`). The reported solution is ``w``.
    rescale: bool | None = eqx.field(static=True, default=None, kw_only=True)
    #: the loop runs as a fixed-length scan differentiated through (set by :class:`jaxprox.Unrolled`
    #: on the copy it runs; not an option)
    unrolled: bool = eqx.field(static=True, default=False, init=False, repr=False)

    #: ranges of the numeric options, checked on construction (:func:`jaxprox.base.check_range`;
    #: ``None`` and traced values pass): ``{option: "> 0" | ">= 1" | "(0, 1]" | ...}``
    option_ranges: ClassVar[dict] = {}

    def __check_init__(self):
        for name, spec in type(self).option_ranges.items():
            check_range(type(self).__name__, name, getattr(self, name), spec)

    #: the solver's steps depend on the units of the features (a step ``1/L`` with ``L`` from the
    #: largest column), so :func:`jaxprox.solve` rescales badly scaled columns for it (see ``rescale``); a
    #: solver whose answer depends on its configuration overrides it with a property (APPA)
    rescales: ClassVar[bool] = False
    #: what one step is, the unit of ``max_steps`` (and of ``Solution.steps``): ``"iterations"``
    #: for the first-order methods; ``"epochs"`` (passes over the data), ``"stages"`` (proximal-
    #: point outer iterations) or ``"Newton steps"`` where one step is much more work
    step_unit: ClassVar[str] = "iterations"
    #: ``(floor, cap)`` of the default budget from the data's size
    #: (:func:`~jaxprox.defaults.iteration_budget`) of a solver whose ``max_steps`` defaults to
    #: ``None`` (FISTA, AGM, DRSVMPDHG); ``None``: see :meth:`budget`
    iteration_range: ClassVar[tuple[int, int] | None] = None
    #: the range of :meth:`budget` in words, for a solver whose ``max_steps`` defaults to ``None``
    #: (derived from :attr:`iteration_range` where that is set)
    budget_range: ClassVar[str] = ""
    #: the iterates converge to a root of :meth:`residual` (the implicit adjoint applies); ``False``
    #: for a method without a fixed-point residual, which :func:`jaxprox.solve` differentiates by
    #: :class:`jaxprox.Unrolled` unless told otherwise
    has_residual: ClassVar[bool] = True
    #: the loop can run as a fixed-length ``lax.scan`` (:class:`jaxprox.Unrolled`); ``False`` for
    #: a solver whose steps hold while loops (no reverse-mode rule)
    unrollable: ClassVar[bool] = True
    #: what the solver needs of a problem (:mod:`jaxprox.capabilities`), checked by :func:`jaxprox.solve`
    requires: ClassVar[tuple] = ()
    #: fields holding constants derived from the data (set by :meth:`prepare` / :meth:`hoist`);
    #: :func:`jaxprox.solve` clears them on entry so that they are always those of the problem solved
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
        in the fields named by :attr:`derived`. :func:`jaxprox.solve` and :func:`jaxprox.loop.run` call it before
        their loop, :func:`jaxprox.solve_path` once before its scan (it returns ``self`` when the fields
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
        :data:`jaxprox.defaults.SAMPLE_STEP_BUDGET`). Default:
        :func:`~jaxprox.defaults.iteration_budget` within :attr:`iteration_range` where the class
        sets one, else the class's own ``max_steps`` default (:meth:`default_max_steps`)."""
        if self.iteration_range is not None:
            return iteration_budget(problem, *self.iteration_range)
        return type(self).default_max_steps()

    @classmethod
    def default_max_steps(cls) -> int | None:
        """The ``max_steps`` the class gets by default (its ``__init__``'s default where it has its
        own ``__init__``, else the field's); ``None`` where the budget follows the data
        (:meth:`budget`)."""
        param = inspect.signature(cls.__init__).parameters.get("max_steps")
        if param is not None and (param.default is None or isinstance(param.default, int)):
            return param.default
        return cls.__dataclass_fields__["max_steps"].default

    def budgeted(self, problem) -> "Solver":
        """This solver with its run options fixed for ``problem``: ``max_steps`` its own, or
        :meth:`budget` where it is ``None``; ``check_every`` at most that (a budget of 5 steps
        checks after 5); ``tol`` its own, or :func:`jaxprox.defaults.default_tol` where ``None``."""
        steps = int(self.budget(problem)) if self.max_steps is None else int(self.max_steps)
        tol = default_tol(problem) if self.tol is None else self.tol
        if steps == self.max_steps and self.check_every <= steps and tol == self.tol:
            return self
        return self.with_options(max_steps=steps, check_every=max(1, min(self.check_every, steps)), tol=tol)

    def with_options(self, **options) -> "Solver":
        """A copy with new run options (``tol``, ``atol``, ``max_steps``, ``check_every``,
        ``verbose``, ``progress``, ``trace_size``); the algorithm's own settings are kept."""
        allowed = {"tol", "atol", "max_steps", "check_every", "verbose", "progress", "trace_size"}
        if not set(options) <= allowed:
            raise TypeError(f"with_options takes {sorted(allowed)}, got {sorted(set(options) - allowed)}")
        out = copy.copy(self)
        for k, v in options.items():
            object.__setattr__(out, k, v)
        return out

    def derivative_gap(self, problem) -> str | None:
        """``None`` when the implicit derivative of this solver's solution is exact; otherwise why
        not (then :func:`jaxprox.solve` raises ``NotImplementedError`` when a derivative is asked for,
        rather than return a wrong one). Default: ``None``."""
        return None

    def describe(self) -> str:
        """What produced a solution (``Solution.method``): the solver's class name by default."""
        return type(self).__name__

    def lockstep(self, problem) -> "Solver":
        """The form of this solver for many problems solved in lock-step (``jax.vmap``, as
        :func:`jaxprox.solve_path` with ``batched=True``): without inner loops whose trip count differs
        between lanes (under ``vmap`` a while loop runs until its slowest lane is done), where a
        known constant makes them unnecessary. Default: the solver itself."""
        return self

    def needs_room(self, problem, sol):
        """Whether ``sol`` stopped short for want of room (e.g. a working set too small for the
        support, :class:`jaxprox.WorkingSet`): a boolean, or one per solution of a stack of them
        (a path's, leading axis), traced inside a path; then
        :func:`jaxprox.solve` and :func:`jaxprox.solve_path`, on concrete values, continue from
        ``sol.params`` with :meth:`enlarged`. Default: never."""
        return jnp.zeros((), bool)

    def enlarged(self, problem) -> "Solver":
        """The solver to continue with where :meth:`needs_room` (prepared for ``problem``)."""
        raise NotImplementedError(f"{type(self).__name__} never needs more room")

    def refine(self, problem, state):
        """Called at every check, after the block of steps and before :meth:`certificate`: a solver
        may update the point it *reports* from its state (e.g. keep the best of several candidate
        points, one of them an active-set polish of the iterate), so that the certificate and the
        reported solution are always those of the same point. It must not change the iteration
        itself. Default: ``state`` unchanged."""
        return state

    def polish(self, problem, state):
        """Post-process the final state before the solution is reported and differentiated
        (:class:`jaxprox.ImplicitAdjoint` only). The default returns ``state`` unchanged. A solver whose
        iterates do not carry an exact root of :meth:`residual` (e.g. the incremental DRSVM
        methods, whose dual part is an average of per-sample selections) overrides it to move to
        one, so that the implicit derivative is exact; :func:`jaxprox.solve` then recomputes the
        certificate of the polished state."""
        return state


def fresh(solver: Solver, problem) -> Solver:
    """``solver`` with its :attr:`Solver.derived` constants cleared and prepared for ``problem``."""
    names = type(solver).derived
    if names:
        solver = copy.copy(solver)  # as with_options: no re-validation, no pytree rebuild
        for n in names:
            object.__setattr__(solver, n, None)
    return solver.prepare(problem)
