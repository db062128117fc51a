"""jaxprox: fast, differentiable first-order solvers for non-smooth and constrained learning
problems in JAX (DESIGN.md).

    import jaxprox as jp
    problem = jp.ERM(X, y, loss=jp.losses.Logistic(), penalty=jp.penalties.L1(1e-3))
    sol = jp.solve(problem, jp.FISTA(tol=1e-8))
"""
from . import (base, baselines, constraints, datasets, driver, losses, operators, penalties, problems,
               projections, roots, solvers)
from .baselines import FISTA, ProxNewton
from .constraints import ElasticNetBall
from .driver import Solution, Solver, Trace, solve, solve_path
from .problems import DRSVM, ERM, BiasSVM, ERLPBoost, F1SVM
from .solvers.agm import AGM
from .solvers.appa import APPA, SDCA, SVRG, DualAPPA
from .solvers.block_fw import PDBlockFW
from .solvers.incremental import IPPA, ISG, Constant, Geometric, HybridISGIPPA, InvK, InvSqrtK
from .solvers.drsvm_pd import DRSVMPDHG
from .solvers.drsvm_ipm import DRSVMBarrier
from .solvers.pdprox import PDProx

__version__ = "0.1.0"

__all__ = [
    "AGM", "APPA", "BiasSVM", "ElasticNetBall", "ERLPBoost", "F1SVM", "Constant", "DRSVM", "DRSVMBarrier", "DRSVMPDHG", "DualAPPA", "ERM", "FISTA", "Geometric", "HybridISGIPPA", "InvK",
    "InvSqrtK", "IPPA", "ISG", "PDBlockFW", "PDProx", "ProxNewton", "SDCA", "SVRG", "Solution", "Solver", "Trace",
    "base", "baselines", "constraints", "datasets", "driver", "losses", "operators", "penalties",
    "problems", "projections", "roots", "solve", "solve_path", "solvers",
]
