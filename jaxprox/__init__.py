"""jaxprox: fast, differentiable first-order solvers for non-smooth and constrained learning
problems in JAX (DESIGN.md).

    import jaxprox as jp
    problem = jp.ERM(X, y, loss=jp.losses.Logistic(), penalty=jp.penalties.L1(1e-3))
    sol = jp.solve(problem, jp.FISTA(tol=1e-8))
"""
import os as _os

import jax as _jax


def _compilation_cache() -> None:
    """Switch on JAX's persistent compilation cache in a per-user folder, so that a second process
    reuses the compiled solvers instead of compiling them again (``$JAXPROX_CACHE_DIR``, default
    ``$XDG_CACHE_HOME/jaxprox/xla`` or ``~/.cache/jaxprox/xla``). Set ``JAXPROX_COMPILATION_CACHE=0``
    to leave JAX's settings alone; a cache folder the user configured is never replaced."""
    if _os.environ.get("JAXPROX_COMPILATION_CACHE", "1").lower() in ("0", "false", "off", "no"):
        return
    if _jax.config.jax_compilation_cache_dir:
        return
    base = _os.environ.get("XDG_CACHE_HOME") or _os.path.join(_os.path.expanduser("~"), ".cache")
    _jax.config.update("jax_compilation_cache_dir",
                       _os.environ.get("JAXPROX_CACHE_DIR") or _os.path.join(base, "jaxprox", "xla"))
    if _jax.config.jax_persistent_cache_min_compile_time_secs == 1.0:  # JAX's default: too coarse here
        _jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.2)


_compilation_cache()

from . import (base, baselines, capabilities, constraints, datasets, driver, losses, operators,  # noqa: E402
               penalties, problems, projections, roots, solvers)
from .baselines import FISTA, ProxNewton
from .drsvm import DRSVM
from .models_agm import BiasSVM, ElasticNetBall, ERLPBoost, F1SVM
from .driver import ConvergenceWarning, Solution, Solver, Trace, check, solve, solve_path
from .problems import ERM
from .solvers.agm import AGM
from .solvers.appa import APPA, SDCA, SVRG, DualAPPA
from .solvers.block_fw import PDBlockFW
from .solvers.incremental import IPPA, ISG, Constant, Geometric, HybridISGIPPA, InvK, InvSqrtK
from .solvers.drsvm_pd import DRSVMPDHG
from .solvers.drsvm_ipm import DRSVMBarrier
from .solvers.pdprox import PDProx

__version__ = "0.1.0"

__all__ = [
    "AGM", "APPA", "ConvergenceWarning", "check", "capabilities", "BiasSVM", "ElasticNetBall", "ERLPBoost", "F1SVM", "Constant", "DRSVM", "DRSVMBarrier", "DRSVMPDHG", "DualAPPA", "ERM", "FISTA", "Geometric", "HybridISGIPPA", "InvK",
    "InvSqrtK", "IPPA", "ISG", "PDBlockFW", "PDProx", "ProxNewton", "SDCA", "SVRG", "Solution", "Solver", "Trace",
    "base", "baselines", "constraints", "datasets", "driver", "losses", "operators", "penalties",
    "problems", "projections", "roots", "solve", "solve_path", "solvers",
]
