"""Conformance suite: every public solver on every registered problem it accepts.

For each (solver, problem) pair of :data:`CASES` (the registry covers every public solver):

* jit: a new ``lam`` / ``tol`` / ``max_steps`` does not recompile (a compile counter);
* vmap over 4 hyperparameter values equals 4 separate solves;
* reverse (``jax.grad``) and forward (``jax.jvp``) derivatives of the solution against central
  differences of a tight reference solution map, where the map is differentiable;
* a float32 run does not crash, stays float32 and reports an honest status;
* NaN data raise a clear ``ValueError`` before tracing;
* the certified gap is at least the true suboptimality against a tight independent reference
  (cvxpy + Clarabel for ERM and the SVM with bias, the interior-point solver for DRSVM, itself
  checked against Clarabel in tests/test_drsvm_barrier.py).

A second test walks the whole solver x problem matrix: every incompatible pair raises the
declared ``TypeError`` before tracing, every compatible one is in the registry's reach.
"""
from __future__ import annotations

import dataclasses
import functools
import threading
from typing import Callable

import chex
import cvxpy as cp
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxprox as jp
from jaxprox import capabilities, losses, penalties
from jaxprox.constraints import L1Ball

N, D = 40, 5


@functools.lru_cache(maxsize=None)
def _data(dtype=np.float64):
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


def fw_ball(X, y, lam=0.1):
    return jp.ERM(X, y, losses.SmoothedHinge(1.0), penalties.SquaredL2(lam), constraint=L1Ball(1.0))


def drsvm(X, y, eps=0.1):
    """c > 0 makes w* unique and smooth in epsilon (at c = 0 the LP's w* is piecewise constant)."""
    return jp.DRSVM(X, y, norm="l1", kappa=1.0, epsilon=eps, c=0.5)


def bias_svm(X, y, lam=0.05):
    return jp.BiasSVM(X, y, lam)


def _set(problem, value):
    """The hyperparameter each family varies: ``epsilon`` for DRSVM, ``lam`` otherwise."""
    return problem.with_epsilon(value) if isinstance(problem, jp.DRSVM) else problem.with_lam(value)


def _w(params):
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
    X, y = _data()
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


# ---------------------------------------------------------------- the registry
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


CASES = [
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
    Case(jp.DRSVMPDHG(tol=1e-9, max_steps=200_000), drsvm, 0.1, grad_rtol=1e-3),
    Case(jp.DRSVMBarrier(tol=1e-11), drsvm, 0.1),
    Case(jp.ISG(max_steps=300), drsvm, 0.1, grad_rtol=None, f32_tol=1e-2, exact=False),
    Case(jp.IPPA(max_steps=300), drsvm, 0.1, grad_rtol=None, f32_tol=1e-2, exact=False),
    Case(jp.HybridISGIPPA(max_steps=300), drsvm, 0.1, grad_rtol=None, f32_tol=1e-2, exact=False),
]


def test_registry_covers_every_public_solver():
    covered = {type(c.solver) for c in CASES}
    assert set(capabilities.public_solvers()) <= covered


class _Compiles:
    """Counts compilations (JAX's lowering event, which fires on every new compilation even when
    the persistent cache then serves the executable), not time."""

    def __init__(self):
        self.n = 0
        self.names: list = []
        jax.monitoring.register_event_duration_secs_listener(self._on)

    def _on(self, event, _secs, fun_name="", **_):
        if event == "/jax/core/compile/jaxpr_to_mlir_module_duration":
            self.n += 1
            self.names.append((fun_name, threading.current_thread().name))


COMPILES = _Compiles()


def _solve(case, value, dtype=np.float64, **opts):
    X, y = _data(dtype)
    solver = case.solver.with_options(**opts)
    return jp.solve(_set(case.problem(X, y), value), solver, warn=False)


# The objective is jitted: eagerly, BiasSVM's exact minimisation over the bias (a while loop) was
# traced and compiled anew at every call (~1 s for the three calls of its case).
_objective = jax.jit(lambda problem, params: problem.objective(params))


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_conformance(case):
    X, y = _data()
    problem = case.problem(X, y)
    v = case.value
    # -- a first solve; the gap is an honest bound on the true suboptimality
    sol = _solve(case, v)
    p_star, w_star = reference(case.problem.__name__, v)
    if case.exact:
        assert bool(sol.converged), (sol.status_name, float(sol.gap))
    true_sub = float(_objective(problem, sol.params)) - p_star
    assert float(sol.gap) >= true_sub - 1e-9 * (1 + abs(p_star)), (float(sol.gap), true_sub)
    assert float(sol.primal_value) == pytest.approx(float(_objective(_set(problem, v), sol.params)), rel=1e-10, abs=1e-12)
    assert sol.method

    # -- a new hyperparameter value, tol or max_steps reuses the compiled loop
    before = COMPILES.n
    _solve(case, 1.5 * v)
    _solve(case, v, tol=case.solver.tol * 10, max_steps=case.solver.max_steps // 2)
    assert COMPILES.n == before, "a new lam / tol / max_steps recompiled"

    # -- vmap over 4 values equals 4 separate solves: the same point where both converged, the
    # same objective within the two certified gaps where a lane stopped at max_steps (its last
    # iterate then depends on rounding, which batching changes)
    vals = v * jnp.array([0.5, 0.8, 1.0, 1.6])
    batched = jax.vmap(lambda t: jp.solve(_set(problem, t), case.solver, warn=False))(vals)
    for i, t in enumerate(vals):
        one = _solve(case, float(t))
        if bool(batched.converged[i]) and bool(one.converged):
            chex.assert_trees_all_close(_w(batched.params)[i], _w(one.params), rtol=1e-7, atol=1e-8)
        else:
            slack = float(batched.gap[i]) + float(one.gap) + 1e-12 * (1 + abs(float(one.primal_value)))
            assert abs(float(batched.primal_value[i]) - float(one.primal_value)) <= slack

    # -- derivatives: reverse and forward mode against central differences of the exact map
    if case.grad_rtol is not None:
        g = jax.random.normal(jax.random.PRNGKey(1), (D,), dtype=jnp.float64)
        f = lambda t: jnp.vdot(g, _w(jp.solve(_set(problem, t), case.solver).params))  # noqa: E731
        h = 1e-4 * v
        fd = (np.vdot(g, reference(case.problem.__name__, v + h)[1])
              - np.vdot(g, reference(case.problem.__name__, v - h)[1])) / (2 * h)
        rev = float(jax.grad(f)(jnp.asarray(v)))
        fwd = float(jax.jvp(f, (jnp.asarray(v),), (jnp.asarray(1.0),))[1])
        scale = max(abs(fd), 1e-3)
        assert abs(rev - fd) <= case.grad_rtol * scale + 1e-6, (rev, fd)
        assert abs(fwd - fd) <= case.grad_rtol * scale + 1e-6, (fwd, fd)
        # the first derivative of a structure not solved before (one sample fewer): the solution's
        # Jacobian is traced and compiled in the thread that runs while the solve compiles, from
        # the solver's start (jaxprox.adjoint._jacobian_ahead), and not compiled again on the values
        seen = len(COMPILES.names)
        fewer = case.problem(X[:-1], y[:-1])
        jax.grad(lambda t: jnp.vdot(g, _w(jp.solve(_set(fewer, t), case.solver, warn=False).params)))(jnp.asarray(v))
        jacobians = [thread for name, thread in COMPILES.names[seen:] if "_solution_jacobian" in name]
        assert jacobians == ["jaxprox-ahead"], jacobians

    # -- float32 data: no crash, float32 out, an honest status
    s32 = _solve(case, v, dtype=np.float32, tol=case.f32_tol, max_steps=min(case.solver.max_steps, 5_000))
    chex.assert_type(jax.tree_util.tree_leaves(s32.params), jnp.float32)
    assert s32.status_name in ("converged", "max_steps", "stalled"), s32.status_name
    sub32 = float(_objective(problem, jax.tree_util.tree_map(lambda a: jnp.asarray(a, jnp.float64), s32.params))) - p_star
    assert float(s32.gap) >= sub32 - 1e-5 * (1 + abs(p_star)), (float(s32.gap), sub32)
    if case.exact:
        assert bool(s32.converged), (s32.status_name, float(s32.gap))

    # -- NaN data: a clear error before tracing
    Xn = X.copy()
    Xn[3, 1] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        case.problem(Xn, y)


def test_agm_dual_derivative_is_refused_not_wrong():
    """AGM on a dual model whose reported primal is not polished exactly (``polish=False``: the
    average of the dual recoveries) has no derivative available: asking for one raises instead of
    returning a wrong number (Solver.derivative_gap). The polished SVMs are differentiated (CASES)."""
    X, y = _data()
    f = lambda t: jnp.sum(jp.solve(jp.BiasSVM(X, y, t, polish=False), jp.AGM(tol=1e-6), warn=False).params)  # noqa: E731
    with pytest.raises(NotImplementedError, match="derivative is not available"):
        jax.grad(f)(0.05)


def _examples():
    X, y = _data()
    return {
        "l1-logistic": logreg_l1(X, y), "ridge-logistic": logreg_ridge(X, y), "SVM (hinge + l2)": svm_l2(X, y),
        "smooth + l2 over l1-ball": fw_ball(X, y), "DRSVM": drsvm(X, y), "BiasSVM": bias_svm(X, y),
    }


def test_incompatible_pairs_raise_declared_type_error():
    """The whole matrix: each public solver on each example problem either is accepted by its
    declared requirements or raises the TypeError before tracing (never a crash inside JAX)."""
    examples = _examples()
    accepted = 0
    for cls in capabilities.public_solvers():
        for name, problem in examples.items():
            missing = capabilities.missing(problem, cls)
            if not missing:
                accepted += 1
                continue
            with pytest.raises(TypeError) as err:
                jp.solve(problem, cls())
            msg = str(err.value)
            assert cls.__name__ in msg and missing[0] in msg and "Solvers that accept" in msg, msg
    assert accepted >= len(CASES)


def test_compatibility_matrix_in_docs_is_current():
    """docs/solvers.md carries the matrix generated from the declarations."""
    import pathlib

    doc = (pathlib.Path(__file__).parents[1] / "docs" / "solvers.md").read_text()
    assert capabilities.matrix(_examples()) in doc


if __name__ == "__main__":  # regenerate the table of docs/solvers.md
    jax.config.update("jax_enable_x64", True)
    print(capabilities.matrix(_examples()))
