"""jaxprox: fast, differentiable first-order solvers for non-smooth and constrained learning
problems in JAX.

    import jaxprox as jp
    problem = jp.ERM(X, y, loss=jp.losses.Logistic(), penalty=jp.penalties.L1(1e-3))
    sol = jp.solve(problem, jp.FISTA(tol=1e-8))
"""
from ._compile import import_lapack as _import_lapack, use_persistent_cache as _use_persistent_cache

_use_persistent_cache()
_import_lapack()

from . import (adjoint, base, baselines, capabilities, constraints, datasets, defaults, losses, loop,  # noqa: E402
               operators, penalties, problems, projections, restarts, roots, schedules, solver, solvers)
from .adjoint import ImplicitAdjoint, Unrolled  # noqa: E402
from .loop import ConvergenceWarning, Solution  # noqa: E402
from .solve import check, solve, solve_path  # noqa: E402
from .solver import Solver  # noqa: E402
from .problems import DRSVM, ERM, BiasSVM, ERLPBoost, F1SVM  # noqa: E402
from .components import geometry, sampling  # noqa: E402

#: the public solver classes (``jp.FISTA``, ``jp.AGM``, ...), from the registry, which imports
#: every module of ``jaxprox.solvers``: a new solver module is exported without an edit here
_SOLVERS = {cls.__name__: cls for cls in capabilities.exported_solvers()}
globals().update(_SOLVERS)

__version__ = "0.1.0"

#: problems, solvers, the entry points, what they return and how they differentiate; everything else lives in
#: its module (losses, penalties, constraints, projections, schedules, restarts, baselines, ...)
__all__ = [
    "ERM", "DRSVM", "BiasSVM", "ERLPBoost", "F1SVM",
    *_SOLVERS,
    "solve", "solve_path", "check", "Solution", "Solver", "ConvergenceWarning", "ImplicitAdjoint", "Unrolled",
]
