"""Defaults that follow the data: step budgets, the rescaling policy, and when a derivative's
linear system is solved densely. (The default *solver* for a problem, which needs the solver
classes, is :func:`jaxprox.capabilities.default_solver`.)
"""
from __future__ import annotations

import jax
import numpy as np

#: up to this many unknowns the tangent system of implicit differentiation is solved densely (its
#: Jacobian by one batched JVP, a least-squares solve); matrix-free GMRES above
#: (:class:`jaxprox.adjoint.Auto`)
DENSE_TANGENT_MAX = 1024
#: column ranges (``max_i |A_ij|``) that differ by more than this factor are rescaled for a solver
#: that declares :attr:`jaxprox.Solver.rescales` (evidence: ``benchmarks/results/defaults.md``)
RESCALE_RATIO = 10.0
#: the work a stochastic solver with ``max_steps=None`` (SVRG, SDCA, APPA, Dual APPA) may do, in
#: sequential sample steps: ``max_steps = SAMPLE_STEP_BUDGET / (n * epochs per step)``, clipped to
#: ``[STEPS_FLOOR, STEPS_CAP]`` (:meth:`jaxprox.Solver.budget`): many more epochs than the floor on small
#: data, where one costs little (evidence and times: ``benchmarks/results/defaults.md``)
SAMPLE_STEP_BUDGET = 2_000_000
STEPS_FLOOR, STEPS_CAP = 200, 20_000
#: the work of a FISTA, AGM or DRSVMPDHG solve with ``max_steps=None``, in entries of the data read:
#: ``max_steps = ITERATION_WORK_BUDGET / size`` clipped to the solver's range
#: (:func:`iteration_budget`): more iterations where one costs little (evidence:
#: ``benchmarks/results/defaults.md``, e.g. the n < d microarray data at weak l1 penalties)
ITERATION_WORK_BUDGET = 30_000_000_000


#: the default relative tolerance (``tol=None``) by the precision of the data: a float32 solve's
#: certificate reliably reaches ``1e-5`` relative (its iterate is rounded to ~1e-7 relative and its
#: gap sums n such terms), a float64 one ``1e-6`` (scikit-learn's and liblinear's order)
DEFAULT_TOL = {"float64": 1e-6, "float32": 1e-5}


def default_tol(problem) -> float:
    """:data:`DEFAULT_TOL` of the problem's floating-point data (float32 below 64 bits)."""
    bits = max((np.dtype(x.dtype).itemsize * 8 for x in jax.tree_util.tree_leaves(problem)
                if hasattr(x, "dtype") and np.issubdtype(np.dtype(x.dtype), np.floating)), default=64)
    return DEFAULT_TOL["float64" if bits >= 64 else "float32"]


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


def rescale_ratio(solver) -> float | None:
    """The rescaling policy for ``solver`` (its ``rescale`` option): the column-range ratio above
    which :func:`jaxprox.solve` solves in column-scaled variables
    (:meth:`jaxprox.problems.erm.ERM.column_scale`), or ``None`` for no rescaling. ``rescale=None``
    (default): :data:`RESCALE_RATIO` where the solver declares :attr:`~jaxprox.Solver.rescales`;
    ``True``: ``1`` (whenever the ranges differ at all); ``False``: ``None``."""
    on = solver.rescales if solver.rescale is None else solver.rescale
    if not on:
        return None
    return RESCALE_RATIO if solver.rescale is None else 1.0


#: :func:`path_problem` compresses least squares when ``n >= COMPRESS_RATIO * d``
COMPRESS_RATIO = 2


def path_problem(problem):
    """The problem a default path solves (:func:`jaxprox.solve_path` without a solver): least
    squares on concrete dense data with ``n >= COMPRESS_RATIO * d`` as its ``d x d`` sufficient
    statistics (:meth:`jaxprox.problems.erm.ERM.compressed`: the same objective, minimisers and
    duality gaps; one ``O(n d^2)`` factorisation, then every product costs ``O(d^2)``); any other
    problem as it is."""
    from .losses import Squared
    from .operators import Dense
    from .problems.validation import concrete

    if (not isinstance(getattr(problem, "loss", None), Squared) or not isinstance(problem.A, Dense)
            or problem.n < COMPRESS_RATIO * problem.d or problem.n_outputs is not None
            or problem.constraint is not None or not concrete(problem.A.X, problem.y)):
        return problem
    return problem.compressed()
