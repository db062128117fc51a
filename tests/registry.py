"""The suite's registry of (solver, problem) cases, shared by the property tests.

The solvers come from :func:`jaxprox.capabilities.public_solvers` (derived from the solver classes),
so a new public solver is tested by the conformance suite without an edit here: it gets the
:func:`derived_case`, the first example problem (:data:`FAMILIES`) its declared requirements accept,
at ``tol = 1e-10`` with its default budget and the contract's default tolerances. :data:`TUNED`
holds the cases whose settings were chosen per solver (a method that stops at ``max_steps``, a
derivative as accurate as a first-order iterate, a solver run on several problems).

Each problem has a tight independent reference (:func:`reference`): cvxpy + Clarabel for ERM and
the SVM with bias, the interior-point solver for DRSVM (itself checked against Clarabel in
tests/test_drsvm_barrier.py).

``python tests/registry.py`` writes the solver x problem matrix of docs/solvers.md from the
declarations (tests/test_conformance.py checks that it is current).
"""
from __future__ import annotations

import dataclasses
import functools
import os
import pathlib
from typing import Callable

import cvxpy as cp
import jax
import numpy as np

# as tests/conftest.py: the cases are built in float64; a process started with x64 off (the float32
# children of tests/test_float32.py, benchmarks/perf/bench_float32.py) keeps it off
if os.environ.get("JAX_ENABLE_X64", "").lower() not in ("0", "false"):
    jax.config.update("jax_enable_x64", True)

import jaxprox as jp  # noqa: E402
from jaxprox import capabilities, losses, penalties  # noqa: E402
from jaxprox.constraints import L1Ball  # noqa: E402

N, D = 40, 5


@functools.lru_cache(maxsize=None)
def data(dtype=np.float64):
    rng = np.random.default_rng(0)
    X = rng.standard_normal((N, D))
    y = np.where(X @ rng.standard_normal(D) + 0.8 * rng.standard_normal(N) > 0, 1.0, -1.0)
    return X.astype(dtype), y.astype(dtype)


# ---------------------------------------------------------------- problems (name -> factory)
def logreg_l1(X, y, lam=0.02):
    return jp.ERM(X, y, losses.Logistic(), penalties.L1(lam))


def logreg_ridge(X, y, lam=0.05):
    return jp.ERM(X, y, losses.Logistic(), penalties.SquaredL2(lam))


def svm_l2(X, y, lam=0.05):
    return jp.ERM(X, y, losses.Hinge(), penalties.SquaredL2(lam))


def svm_l1(X, y, lam=0.05):
    return jp.ERM(X, y, losses.Hinge(), penalties.L1(lam))


def fw_ball(X, y, lam=0.1):
    return jp.ERM(X, y, losses.SmoothedHinge(1.0), penalties.SquaredL2(lam), constraint=L1Ball(1.0))


def drsvm(X, y, eps=0.1):
    """c > 0 makes w* unique and smooth in epsilon (at c = 0 the LP's w* is piecewise constant)."""
    return jp.DRSVM(X, y, norm="l1", kappa=1.0, epsilon=eps, c=0.5)


def bias_svm(X, y, lam=0.05):
    return jp.BiasSVM(X, y, lam)


#: every example problem with the hyperparameter at which the checks run, in the order in which a
#: derived case picks its problem; the names are the columns of the docs matrix
FAMILIES = {"l1-logistic": (logreg_l1, 0.02), "ridge-logistic": (logreg_ridge, 0.05),
            "SVM (hinge + l2)": (svm_l2, 0.05), "smooth + l2 over l1-ball": (fw_ball, 0.1),
            "DRSVM": (drsvm, 0.1), "BiasSVM": (bias_svm, 0.05), "1-norm SVM (hinge + l1)": (svm_l1, 0.05)}


def set_value(problem, value):
    """The hyperparameter each family varies: ``epsilon`` for DRSVM, ``lam`` otherwise."""
    return problem.with_epsilon(value) if isinstance(problem, jp.DRSVM) else problem.with_lam(value)


def weights(params):
    """The weight vector of a solution (DRSVM params are ``(w, lam)``)."""
    return params[0] if isinstance(params, tuple) else params


# ---------------------------------------------------------------- tight references
def _clarabel(objective, constraints=()):
    prob = cp.Problem(cp.Minimize(objective), list(constraints))
    prob.solve(solver=cp.CLARABEL, tol_gap_abs=1e-11, tol_gap_rel=1e-11, tol_feas=1e-11)
    return prob


@functools.lru_cache(maxsize=None)  # cases share (problem, value): logreg_l1 at 0.02 (and its +-h for
def reference(name, value) -> tuple[float, np.ndarray]:  # the derivatives) thrice, drsvm at 0.1 five times
    """``(P*, w*)`` of problem ``name`` at hyperparameter ``value`` (cached: ``w*`` is read-only)."""
    X, y = data()
    n = X.shape[0]
    if name == "drsvm":
        sol = jp.solve(drsvm(X, y, value), jp.DRSVMBarrier(tol=1e-10, max_steps=400))
        assert bool(sol.converged)
        return float(sol.primal_value), _read_only(sol.params[0])
    w = cp.Variable(D)
    m = cp.multiply(y, X @ w)
    if name == "logreg_l1":
        p = _clarabel(cp.sum(cp.logistic(-m)) / n + value * cp.norm1(w))
    elif name == "logreg_ridge":
        p = _clarabel(cp.sum(cp.logistic(-m)) / n + value / 2 * cp.sum_squares(w))
    elif name == "svm_l2":
        p = _clarabel(cp.sum(cp.pos(1 - m)) / n + value / 2 * cp.sum_squares(w))
    elif name == "svm_l1":
        p = _clarabel(cp.sum(cp.pos(1 - m)) / n + value * cp.norm1(w))
    elif name == "fw_ball":  # smoothed hinge, mu = 1: 0 for m >= 1, (1 - m)^2 / 2 on [0, 1], 1/2 - m below
        t = cp.Variable(n)   # Huber-type epigraph: h(m) = min_{t >= 0} (t^2/2 + pos(1 - m - t))
        s = cp.Variable(n)
        p = _clarabel(cp.sum(cp.square(t) / 2 + s) / n + value / 2 * cp.sum_squares(w),
                      [s >= 0, s >= 1 - m - t, t >= 0, t <= 1, cp.norm1(w) <= 1.0])
    elif name == "bias_svm":
        b = cp.Variable()
        p = _clarabel(cp.sum(cp.pos(1 - cp.multiply(y, X @ w + b))) / n + value / 2 * cp.sum_squares(w))
    else:
        raise KeyError(name)
    return float(p.value), _read_only(w.value)


def _read_only(a):
    a = np.array(a)
    a.flags.writeable = False
    return a


# ---------------------------------------------------------------- the cases
@dataclasses.dataclass(frozen=True)
class Case:
    solver: jp.Solver
    problem: Callable
    value: float  # the hyperparameter at which the checks run
    grad_rtol: float | None = 1e-4  # None: the solution map is not differentiable here
    f32_tol: float = 1e-4  # the relative tolerance float32 is asked for
    exact: bool = True  # the solver converges to tol (False: a method that stops at max_steps)

    @property
    def id(self):
        return f"{type(self.solver).__name__}-{self.problem.__name__}"


TUNED = [
    Case(jp.FISTA(tol=1e-10, max_steps=20_000), logreg_l1, 0.02),
    Case(jp.ProxNewton(tol=1e-10), logreg_l1, 0.02),
    Case(jp.PDProx(tol=1e-8, max_steps=200_000), svm_l2, 0.05, grad_rtol=1e-3),
    Case(jp.PDBlockFW(sparsity=5, tol=1e-9, max_steps=50_000), fw_ball, 0.1),
    Case(jp.AGM(tol=1e-9, max_steps=20_000), logreg_l1, 0.02),
    Case(jp.AGM(tol=1e-9, max_steps=20_000), bias_svm, 0.05),  # dual run: active-set KKT derivative
    Case(jp.AGM(tol=1e-9, max_steps=20_000), svm_l2, 0.05),    # the plain SVM through its dual
    Case(jp.SVRG(tol=1e-10, max_steps=2_000), logreg_ridge, 0.05),
    Case(jp.SDCA(tol=1e-10, max_steps=2_000), logreg_ridge, 0.05),
    Case(jp.APPA(tol=1e-10, max_steps=500), logreg_ridge, 0.05),
    Case(jp.DualAPPA(tol=1e-10, max_steps=500), logreg_ridge, 0.05),
    Case(jp.SVMNewton(tol=1e-10), svm_l2, 0.05),
    Case(jp.SVMNewton(tol=1e-10), svm_l1, 0.05),  # the 1-norm SVM: Huber-smoothed l1
    Case(jp.DRSVMPDHG(tol=1e-9, max_steps=200_000), drsvm, 0.1, grad_rtol=1e-3),
    Case(jp.DRSVMBarrier(tol=1e-11), drsvm, 0.1),
    Case(jp.ISG(max_steps=300), drsvm, 0.1, grad_rtol=None, f32_tol=1e-2, exact=False),
    Case(jp.IPPA(max_steps=300), drsvm, 0.1, grad_rtol=None, f32_tol=1e-2, exact=False),
    Case(jp.HybridISGIPPA(max_steps=300), drsvm, 0.1, grad_rtol=None, f32_tol=1e-2, exact=False),
]


def derived_case(cls) -> Case:
    """The case of a solver without a :data:`TUNED` one: the first example problem its declared
    requirements accept, ``tol = 1e-10``, its default budget for that problem."""
    X, y = data()
    for factory, value in FAMILIES.values():
        problem = factory(X, y)
        if not capabilities.missing(problem, cls):
            return Case(cls().with_options(tol=1e-10).budgeted(problem), factory, value)
    raise AssertionError(f"{cls.__name__} accepts none of the example problems: add one to FAMILIES")


def cases() -> list[Case]:
    """Every public solver's cases: its tuned ones, else its derived one."""
    tuned = {type(c.solver) for c in TUNED}
    return TUNED + [derived_case(cls) for cls in capabilities.public_solvers() if cls not in tuned]


CASES = cases()


def examples() -> dict:
    """The example problems by their column name in the docs matrix."""
    X, y = data()
    return {name: factory(X, y) for name, (factory, _) in FAMILIES.items()}


def write_docs_matrix(path=pathlib.Path(__file__).parents[1] / "docs" / "solvers.md") -> None:
    """Replace the matrix of ``path`` (the table whose header starts ``| solver | l1-logistic``) by
    the one generated from the declarations (:func:`jaxprox.capabilities.matrix`)."""
    lines = path.read_text().split("\n")
    start = next(i for i, line in enumerate(lines) if line.startswith("| solver | l1-logistic"))
    end = start
    while end < len(lines) and lines[end].startswith("|"):
        end += 1
    lines[start:end] = capabilities.matrix(examples()).rstrip("\n").split("\n")
    path.write_text("\n".join(lines))


if __name__ == "__main__":
    write_docs_matrix()
