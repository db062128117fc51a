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
from .baselines import FISTA, ProxNewton  # noqa: E402
from .adjoint import ImplicitAdjoint, Unrolled  # noqa: E402
from .loop import ConvergenceWarning, Solution  # noqa: E402
from .solve import check, solve, solve_path  # noqa: E402
from .solver import Solver  # noqa: E402
from .problems import DRSVM, ERM, BiasSVM, ERLPBoost, F1SVM  # noqa: E402
from .solvers.agm import AGM  # noqa: E402
from .solvers.appa import APPA, SDCA, SVRG, DualAPPA  # noqa: E402
from .solvers.block_fw import PDBlockFW  # noqa: E402
from .solvers.drsvm_ipm import DRSVMBarrier  # noqa: E402
from .solvers.drsvm_pd import DRSVMPDHG  # noqa: E402
from .solvers.incremental import IPPA, ISG, Finish, HybridISGIPPA  # noqa: E402
from .solvers.pdprox import PDProx  # noqa: E402

__version__ = "0.1.0"

#: problems, solvers, the entry points, what they return and how they differentiate; everything else lives in
#: its module (losses, penalties, constraints, projections, schedules, restarts, baselines, ...)
__all__ = [
    # problems
    "ERM", "DRSVM", "BiasSVM", "ERLPBoost", "F1SVM",
    # solvers
    "FISTA", "ProxNewton", "PDProx", "PDBlockFW", "AGM", "APPA", "DualAPPA", "SVRG", "SDCA",
    "ISG", "IPPA", "HybridISGIPPA", "DRSVMPDHG", "DRSVMBarrier", "Finish",
    # solving and differentiating
    "solve", "solve_path", "check", "Solution", "Solver", "ConvergenceWarning", "ImplicitAdjoint", "Unrolled",
]
