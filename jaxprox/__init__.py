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
    to leave JAX's settings alone; a cache folder the user configured is never replaced. The traced
    solves (:mod:`jaxprox.tracecache`) are kept in ``jaxprox-traced/`` inside that folder."""
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


def _lapack_ready() -> None:
    """Import ``scipy.linalg`` now: jaxlib reads its LAPACK routines from it the first time a
    LAPACK call (Cholesky, eigh, least squares: ProxNewton, DRSVMBarrier, AGM's and SDCA's
    polishes, Dual APPA's certificate, a derivative's solve) is lowered, and that import costs
    0.1-0.15 s more inside the first lowering than here (0.05 s; ``benchmarks/results/latency.md``)."""
    try:
        import scipy.linalg  # noqa: F401
    except ImportError:  # pragma: no cover - jax requires scipy
        pass


_lapack_ready()

from . import (base, baselines, capabilities, constraints, datasets, driver, losses, operators,  # noqa: E402
               penalties, problems, projections, restarts, roots, schedules, solvers)
from .baselines import FISTA, ProxNewton  # noqa: E402
from .driver import ConvergenceWarning, Solution, Solver, check, solve, solve_path  # noqa: E402
from .problems import DRSVM, ERM, BiasSVM, ERLPBoost, F1SVM  # noqa: E402
from .solvers.agm import AGM  # noqa: E402
from .components import geometry, sampling  # noqa: E402
from .solvers.appa import APPA  # noqa: E402
from .solvers.dual_appa import DualAPPA  # noqa: E402
from .solvers.sdca import SDCA  # noqa: E402
from .solvers.svrg import SVRG  # noqa: E402
from .solvers.block_fw import PDBlockFW  # noqa: E402
from .solvers.drsvm_ipm import DRSVMBarrier  # noqa: E402
from .solvers.drsvm_pd import DRSVMPDHG  # noqa: E402
from .solvers.incremental import IPPA, ISG, Finish, HybridISGIPPA  # noqa: E402
from .solvers.pdprox import PDProx  # noqa: E402

__version__ = "0.1.0"

#: problems, solvers, the driver's entry points and what they return; everything else lives in
#: its module (losses, penalties, constraints, projections, schedules, restarts, baselines, ...)
__all__ = [
    # problems
    "ERM", "DRSVM", "BiasSVM", "ERLPBoost", "F1SVM",
    # solvers
    "FISTA", "ProxNewton", "PDProx", "PDBlockFW", "AGM", "APPA", "DualAPPA", "SVRG", "SDCA",
    "ISG", "IPPA", "HybridISGIPPA", "DRSVMPDHG", "DRSVMBarrier", "Finish",
    # the driver
    "solve", "solve_path", "check", "Solution", "Solver", "ConvergenceWarning",
]
