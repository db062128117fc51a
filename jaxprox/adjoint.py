"""How a solve is differentiated: adjoint objects passed to :func:`jaxprox.solve`.

* :class:`ImplicitAdjoint` (default): the solution ``z*`` is a root of the solver's fixed-point
  residual ``r(problem, z) = 0`` (the prox-gradient map ``w - prox(w - eta grad f(w))``, or the
  primal-dual map for saddle problems), so by the implicit function theorem
  ``dz* = -(d_z r)^{-1} d_theta r [dtheta]``: a custom JVP whose linear system is solved by a
  :class:`LinearSolver` inside ``lax.custom_linear_solve``, so the JVP is transposable and
  reverse mode works too. An eager ``jax.grad`` / ``jax.jvp`` / ``jax.jacfwd`` (outside any
  ``jit``) does not linearise the whole solve: the loop runs as the plain solve's compiled
  computation on the concrete values and, when the system is small enough for a dense solve, the
  solution's Jacobian ``dz*/dp`` is computed once on those values, so that only a product with it
  is differentiated (:func:`_solve_eager`).
* :class:`Unrolled`: the loop runs as a ``lax.scan`` of ``max_steps // check_every`` blocks
  (states frozen once converged) and JAX differentiates through the iterations.

The model is optimistix's adjoints (``ImplicitAdjoint``, ``RecursiveCheckpointAdjoint``): the
solver says what optimality is (its residual), the adjoint how to differentiate through it.
"""
from __future__ import annotations

import abc
from typing import Callable

import equinox as eqx
import jax
import jax.numpy as jnp
from jax import lax

from ._compile import Ahead, at_eval_level, compiled, structure
from .defaults import DENSE_TANGENT_MAX
from .loop import (RunOptions, Solution, _all_finite, _canonical, _finish, _has_tracer, _polish, _run_scan, _run_while,
                   _same_types, _stop_gradient)
from .solver import Solver


class LinearSolver(eqx.Module):
    """How the tangent system ``J x = b`` of :class:`ImplicitAdjoint` is solved (``J = d_z r`` at
    the solution, applied matrix-free): :meth:`dense` says whether a system of ``size`` unknowns
    is solved densely (its Jacobian formed, and for an eager derivative the solution's Jacobian
    ``dz*/dp`` formed once), :meth:`solver` gives the solve ``(matvec, b) -> x``."""

    @abc.abstractmethod
    def dense(self, size: int) -> bool:
        ...

    def solver(self, size: int) -> Callable:
        return _dense_solve if self.dense(size) else self.iterative

    def iterative(self, matvec, b):
        raise NotImplementedError


class LeastSquares(LinearSolver):
    """``J`` formed column by column (one ``vmap`` of the JVP over the identity) and solved by
    least squares: exact when ``J`` is invertible, the minimum-norm solution at a kink of the
    solution map (where the derivative does not exist). For systems of up to a few thousand
    unknowns."""

    def dense(self, size: int) -> bool:
        return True


class GMRES(LinearSolver):
    """Restarted GMRES (matrix-free), falling back to the Tikhonov-regularised normal equations
    by CG when it breaks down (a singular ``J`` at a kink), so the derivative stays finite."""

    tol: float = eqx.field(static=True, default=1e-12)
    restart: int = eqx.field(static=True, default=50)
    maxiter: int = eqx.field(static=True, default=20)

    def dense(self, size: int) -> bool:
        return False

    def iterative(self, matvec, b):
        return _gmres_solve(matvec, b, self.tol, self.restart, self.maxiter)


class Auto(GMRES):
    """:class:`LeastSquares` up to ``dense_max`` unknowns (smaller to compile and faster than
    GMRES for the small systems of most solves), :class:`GMRES` above."""

    dense_max: int = eqx.field(static=True, default=DENSE_TANGENT_MAX)

    def dense(self, size: int) -> bool:
        return size <= self.dense_max


class AbstractAdjoint(eqx.Module):
    """How :func:`jaxprox.solve` runs the loop so that its solution can be differentiated."""

    @abc.abstractmethod
    def check(self, solver: Solver) -> None:
        """Raise ``ValueError`` before tracing when ``solver`` cannot be differentiated this way."""

    @abc.abstractmethod
    def shared(self, solver: Solver) -> Solver:
        """``solver`` with the run options fixed that the compiled loop does not take as values."""

    @abc.abstractmethod
    def traced(self, problem, solver: Solver, init, opts: RunOptions) -> Solution:
        """The solve as traced code (inside a ``jit``, a ``vmap``, a path)."""

    def solve(self, problem, solver: Solver, init, opts: RunOptions) -> Solution:
        """The solve from :func:`jaxprox.solve` (eager or traced)."""
        return _solve_compiled(problem, solver, init, opts, self)


class ImplicitAdjoint(AbstractAdjoint):
    """Differentiate the solution by the implicit function theorem on the solver's fixed-point
    residual (:meth:`jaxprox.Solver.residual`); ``linear_solver`` solves the tangent system
    (default :class:`Auto`: dense least squares up to
    :data:`~jaxprox.defaults.DENSE_TANGENT_MAX` unknowns, GMRES above). The forward solve is the
    plain solve's while loop, with the solver's :meth:`~jaxprox.Solver.polish`."""

    linear_solver: LinearSolver = Auto()

    def check(self, solver: Solver) -> None:
        if not isinstance(self.linear_solver, LinearSolver):
            raise ValueError(f"ImplicitAdjoint: linear_solver must be a jaxprox.adjoint.LinearSolver "
                             f"(Auto(), LeastSquares(), GMRES()), got {self.linear_solver!r}")

    def shared(self, solver: Solver) -> Solver:
        return _canonical(solver)

    def traced(self, problem, solver: Solver, init, opts: RunOptions) -> Solution:
        return _iterate(problem, solver, init, opts, self.linear_solver)[0]

    def solve(self, problem, solver: Solver, init, opts: RunOptions) -> Solution:
        return _solve_eager(problem, solver, init, opts, self)


class Unrolled(AbstractAdjoint):
    """Differentiate through the iterations: the loop runs as a ``lax.scan`` of
    ``max_steps // check_every`` blocks (reverse-differentiable: static trip counts), the carry
    frozen once stopped. For comparison with :class:`ImplicitAdjoint`, and for solvers without a
    fixed-point residual (:attr:`jaxprox.Solver.has_residual`). ``max_steps`` fixes the scan's
    length, so a new value compiles a new loop."""

    def check(self, solver: Solver) -> None:
        if not type(solver).unrollable:
            raise ValueError(f"{type(solver).__name__} supports the implicit adjoint only "
                             "(jp.ImplicitAdjoint()): its loop cannot be unrolled")

    def shared(self, solver: Solver) -> Solver:
        out = _canonical(solver, keep_max_steps=True)
        object.__setattr__(out, "unrolled", True)  # a copy (with_options): the solver's form for a scan
        return out

    def traced(self, problem, solver: Solver, init, opts: RunOptions) -> Solution:
        solver = solver.hoist(problem)
        c = _run_scan(problem, solver, init, opts)
        return _finish(solver, c, solver.solution(c.state))


def _gmres_solve(matvec, b, tol: float = 1e-12, restart: int = 50, maxiter: int = 20):
    """GMRES on ``matvec(x) = b``; if it breaks down (a singular Jacobian at a kink of the
    solution map, where the derivative does not exist) fall back to the minimum-norm least-squares
    solution of the Tikhonov-regularised normal equations ``(J^T J + delta I) x = J^T b`` by CG, so
    the derivative returned is finite and documented rather than NaN."""
    x, _ = jax.scipy.sparse.linalg.gmres(matvec, b, tol=tol, atol=0.0, restart=restart, maxiter=maxiter,
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


#: XLA options of the solution's Jacobian, on top of :data:`jaxprox._compile.COMPILER_OPTIONS`: it is
#: computed once, and its run is library calls (the batched products, the least squares), so
#: without LLVM's optimisations it compiles in a third to a half of the time at the same run time
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


def _tangent_solve(g, y, linear_solver: "LinearSolver"):
    """Solve the linearised optimality system ``g(x) = y``, transposably, by
    ``linear_solver`` (by default densely up to :data:`~jaxprox.defaults.DENSE_TANGENT_MAX`
    unknowns, matrix-free by GMRES above: :class:`Auto`).

    The system is solved on one flat vector (``ravel_pytree``): a pytree right-hand side can have
    symbolically-zero blocks (e.g. the dual block of a saddle residual when only ``lam`` varies),
    which the transpose rule of ``lax.custom_linear_solve`` rejects."""
    from jax.flatten_util import ravel_pytree

    y_flat, unravel = ravel_pytree(y)
    g_flat = lambda x: ravel_pytree(g(unravel(x)))[0]
    solve = linear_solver.solver(y_flat.shape[0])
    x = lax.custom_linear_solve(g_flat, y_flat, solve=solve, transpose_solve=solve)
    return unravel(x)


def _iterate(problem, solver: Solver, init, opts: RunOptions, linear_solver=None, *, differentiable: bool = True):
    """The iterations (and polish) of an implicit-adjoint solve on a gradient-stopped copy of
    ``problem`` (a while_loop has no reverse rule): returns the :class:`Solution`, the fixed point
    ``z*`` and the solver with its hoisted constants (:meth:`Solver.hoist`). With
    ``differentiable``, ``params`` / ``dual`` are ``z*`` made differentiable in ``problem`` by the
    implicit function theorem (:func:`_implicit_root`)."""
    stopped = _stop_gradient(problem)
    solver = _stop_gradient(solver).hoist(stopped)  # constants built by prepare from the live data too
    c = _polish(stopped, solver, opts, _run_while(stopped, solver, init, opts))
    z_star = jax.lax.stop_gradient(solver.solution(c.state))
    if not differentiable:
        return _finish(solver, c, z_star), z_star, solver
    z = _implicit_root(problem, solver, z_star, linear_solver)
    return _with_value_derivative(problem, _finish(solver, c, z)), z_star, solver


@compiled(trace_cache=True)
def _solve_compiled(problem, solver: Solver, init, opts: RunOptions, adjoint: "AbstractAdjoint") -> Solution:
    """A whole solve as one computation, its derivative by ``adjoint``: inside a user's ``jit`` or
    ``vmap``, and :func:`jaxprox.solve_path`'s solves."""
    return adjoint.traced(problem, solver, init, opts)


@compiled(trace_cache=True)
def _iterate_compiled(problem, solver: Solver, init, opts: RunOptions):
    """:func:`_iterate` without a derivative, compiled at the top level (with
    :data:`jaxprox._compile.COMPILER_OPTIONS`): a plain solve, and the forward solve of an eager
    ``jax.grad`` / ``jax.jvp`` (:func:`_solve_eager`)."""
    return _iterate(problem, solver, init, opts, differentiable=False)


@eqx.filter_jit
def _attach_derivative(problem, solver: Solver, sol: Solution, z_star, linear_solver) -> Solution:
    """``sol`` with ``params`` / ``dual`` differentiable in ``problem`` (:func:`_implicit_root`
    at the given fixed point ``z_star``; ``solver`` as hoisted by :func:`_iterate`)."""
    return _with_solution(solver, sol, _implicit_root(problem, solver, z_star, linear_solver))


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


@eqx.filter_jit
def _objective(problem, params):
    """``P(params)`` as one compiled function: under an eager derivative its linearisation is one
    program, not one small compile per operation of the objective."""
    return problem.objective(params)


def _with_value_derivative(problem, sol: Solution) -> Solution:
    """``sol`` whose ``primal_value`` and ``dual_value`` carry the derivative of the optimal value
    ``V(p) = P(w*(p), p)`` (at an optimum ``D* = P*``): the loop computes both on a
    gradient-stopped copy of the problem, so ``f - stop_gradient(f)``, ``f = P(params)`` at the
    differentiable ``params``, is added (zero in value; nothing where ``f`` is not finite)."""
    f = _objective(problem, sol.params)
    delta = jnp.where(jnp.isfinite(f), f - lax.stop_gradient(f), 0.0)
    return eqx.tree_at(lambda s: (s.primal_value, s.dual_value), sol,
                       (sol.primal_value + delta.astype(sol.primal_value.dtype),
                        sol.dual_value + delta.astype(sol.dual_value.dtype)))


def _size(tree) -> int:
    return sum(x.size for x in jax.tree_util.tree_leaves(tree))


def _solve_eager(problem, solver: Solver, init, opts: RunOptions, adjoint: "ImplicitAdjoint") -> Solution:
    """A solve outside any ``jit``: the iterations compiled at the top level on concrete values,
    and, when ``problem`` carries the tracers of an eager ``jax.grad`` / ``jax.jvp`` /
    ``jax.jacfwd`` (whose gradient-stopped values are concrete), the derivative attached by a
    separate small computation. The forward solve of a derivative is then the plain solve's own
    compiled loop (compiled with the top-level options, or already in the cache), not a
    linearisation of the whole solve. Anything else (a ``jit``, a ``vmap``): :func:`_solve_compiled`."""
    traced = _has_tracer((problem, init, solver))
    stopped = _stop_gradient((problem, solver, init))
    if not _has_tracer(stopped):
        # a weakly-typed value (e.g. ``jax.grad`` of a Python float) would compile another loop
        stopped = jax.tree_util.tree_map(
            lambda x: lax.convert_element_type(x, x.dtype) if getattr(x, "weak_type", False) else x, stopped)
        wrt, live = _live_leaves(problem) if traced else ((), [])
        ahead = _jacobian_ahead(stopped, wrt, live, adjoint.linear_solver) if traced else None
        try:
            with at_eval_level():  # the plain solve's compiled loop, also under an eager derivative
                sol, z_star, hoisted = _iterate_compiled.at_top(*stopped, opts)
        except BaseException:
            if ahead is not None:
                ahead.finish()
            raise
        if not traced:
            return sol
        return _with_derivative(problem, stopped[0], hoisted, sol, z_star, wrt, live, adjoint.linear_solver, ahead)
    return _solve_compiled(problem, solver, init, opts, adjoint)


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


def _dense_jacobian(stopped, solver: Solver, wrt: tuple, live: list, z_star, linear_solver) -> bool:
    """Whether the derivative goes through the solution's dense Jacobian (:func:`_with_derivative`)."""
    return (bool(wrt) and linear_solver.dense(max(_size(z_star), _size(live)))
            and solver.derivative_gap(stopped) is None)


_AHEAD: set = set()  # the structures of the eager derivatives whose Jacobian was prepared ahead


def _jacobian_ahead(stopped: tuple, wrt: tuple, live: list, linear_solver) -> Ahead | None:
    """Trace and compile the solution's Jacobian (:func:`_solution_jacobian`) for an eager
    derivative in a thread while the solve compiles (:class:`jaxprox._compile.Ahead`): its arguments'
    shapes (the hoisted solver, ``z*``) follow from the solver's start without the solve's values.
    Once per structure in a process (a later derivative finds the Jacobian compiled); ``None``
    when there is nothing to prepare."""
    p, solver, init = stopped
    if not wrt or not linear_solver.dense(_size(live)):
        return None
    seen = structure((stopped, wrt, linear_solver))  # once per structure: a later derivative finds it compiled
    if seen is None or seen in _AHEAD:
        return None
    if len(_AHEAD) >= 4096:
        _AHEAD.clear()
    _AHEAD.add(seen)

    def work():
        hoisted, z = eqx.filter_eval_shape(_solution_shapes, p, solver, init)
        if _dense_jacobian(p, hoisted, wrt, live, z, linear_solver):
            _solution_jacobian.prepare(p, hoisted, z, wrt)

    return Ahead(work)


def _solution_shapes(problem, solver: Solver, init):
    """The hoisted solver and ``z*`` as :func:`_iterate` returns them (a loop keeps its state's
    types, so the start's ``z`` has the shapes of ``z*``); for :func:`jax.eval_shape`."""
    solver = solver.hoist(problem)
    return solver, solver.solution(solver.init(problem, init))


def _with_derivative(problem, stopped, solver: Solver, sol: Solution, z_star, wrt: tuple, live: list,
                     linear_solver, ahead: Ahead | None = None) -> Solution:
    """``sol`` made differentiable in the live leaves of ``problem`` (``stopped``: their values;
    ``wrt``, ``live``: :func:`_live_leaves`):
    through the solution's Jacobian, computed once on the concrete values, when it is small
    (:func:`_solution_jacobian`, :func:`_attach_jacobian`; traced and compiled ``ahead`` while the
    solve compiled), else by the implicit root (:func:`_attach_derivative`, GMRES for large
    systems)."""
    if ahead is not None:
        ahead.finish()
    if not _dense_jacobian(stopped, solver, wrt, live, z_star, linear_solver):
        return _with_value_derivative(problem, _attach_derivative(problem, solver, sol, z_star, linear_solver))
    with at_eval_level():
        jac = _solution_jacobian.at_top(stopped, solver, z_star, wrt)
    return _with_value_derivative(problem, _attach_jacobian(live, solver, sol, z_star, jac))


def _implicit_root(problem, solver, z_star, linear_solver):
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
                            jax.tree_util.tree_map(jnp.negative, dr), linear_solver)
        return z, dz

    return root(p_arr, s_arr, z_star)
