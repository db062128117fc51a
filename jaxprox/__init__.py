"""jaxprox: fast, differentiable first-order solvers for non-smooth and constrained learning
problems in JAX (DESIGN.md).

    import jaxprox as jp
    problem = jp.ERM(X, y, loss=jp.losses.Logistic(), penalty=jp.penalties.L1(1e-3))
    sol = jp.solve(problem, jp.FISTA(tol=1e-8))
"""
from importlib import import_module as _imp

from . import base, datasets, driver, operators, problems
from .driver import Solution, Solver, Trace, solve, solve_path
from .problems import ERM

__version__ = "0.1.0"

# Submodules written by different parts of the library; each is imported when present so that
# the package stays importable while it grows.
for _name in ("losses", "penalties", "projections", "constraints", "roots", "baselines", "solvers"):
    try:
        globals()[_name] = _imp(f".{_name}", __name__)
    except ModuleNotFoundError as _e:  # pragma: no cover - only while a module is being written
        if _e.name != f"{__name__}.{_name}":
            raise

from .baselines import FISTA  # noqa: E402

__all__ = ["ERM", "FISTA", "Solution", "Solver", "Trace", "solve", "solve_path", "base", "datasets", "driver",
           "operators", "problems"]
