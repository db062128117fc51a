"""Conformance suite: every public solver on every registered problem it accepts, one test per
property, over the (solver, problem) cases of tests/registry.py (every public solver of the
registry has one):

* the certified gap is at least the true suboptimality against a tight independent reference, and
  the reported primal value is the objective at the reported point;
* jit: a new ``lam`` / ``tol`` / ``max_steps`` does not recompile (a compile counter);
* vmap over 4 hyperparameter values equals 4 separate solves;
* reverse (``jax.grad``) and forward (``jax.jvp``) derivatives of the solution against central
  differences of a tight reference solution map, where the map is differentiable; the first
  derivative of a new structure is compiled ahead, in the thread beside the solve's compilation;
* a float32 run does not crash, stays float32 and reports an honest status;
* NaN data raise a clear ``ValueError`` before tracing.

The whole solver x problem matrix: every incompatible pair raises the declared ``TypeError`` before
tracing, every compatible one is in the registry's reach; the docs carry the matrix.
"""
from __future__ import annotations

import pathlib
import threading

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxprox as jp
from jaxprox import capabilities
from registry import CASES, D, data, examples, reference, set_value, weights


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
    X, y = data(dtype)
    solver = case.solver.with_options(**opts)
    return jp.solve(set_value(case.problem(X, y), value), solver, warn=False)


# The objective is jitted: eagerly, BiasSVM's exact minimisation over the bias (a while loop) was
# traced and compiled anew at every call (~1 s for the three calls of its case).
_objective = jax.jit(lambda problem, params: problem.objective(params))


def _parametrize(cases):
    return pytest.mark.parametrize("case", cases, ids=lambda c: c.id)


@_parametrize(CASES)
def test_certificate_is_honest(case):
    """The gap bounds the true suboptimality; ``primal_value`` is the objective at ``params``."""
    X, y = data()
    problem = case.problem(X, y)
    v = case.value
    sol = _solve(case, v)
    p_star, _ = reference(case.problem.__name__, v)
    if case.exact:
        assert bool(sol.converged), (sol.status_name, float(sol.gap))
    true_sub = float(_objective(problem, sol.params)) - p_star
    assert float(sol.gap) >= true_sub - 1e-9 * (1 + abs(p_star)), (float(sol.gap), true_sub)
    assert float(sol.primal_value) == pytest.approx(float(_objective(set_value(problem, v), sol.params)), rel=1e-10, abs=1e-12)
    assert sol.method


@_parametrize(CASES)
def test_new_lam_tol_max_steps_do_not_recompile(case):
    """A new hyperparameter value, ``tol`` or ``max_steps`` reuses the compiled loop."""
    v = case.value
    _solve(case, v)  # compiled here, or by an earlier test
    before = COMPILES.n
    _solve(case, 1.5 * v)
    tol = case.solver.tol if case.solver.tol is not None else jp.defaults.DEFAULT_TOL["float64"]
    _solve(case, v, tol=tol * 10, max_steps=case.solver.max_steps // 2)
    assert COMPILES.n == before, "a new lam / tol / max_steps recompiled"


@_parametrize(CASES)
def test_vmap_over_lambda_equals_separate_solves(case):
    """vmap over 4 values equals 4 separate solves: the same point where both converged, the same
    objective within the two certified gaps where a lane stopped at max_steps (its last iterate
    then depends on rounding, which batching changes)."""
    X, y = data()
    problem = case.problem(X, y)
    vals = case.value * jnp.array([0.5, 0.8, 1.0, 1.6])
    batched = jax.vmap(lambda t: jp.solve(set_value(problem, t), case.solver, warn=False))(vals)
    for i, t in enumerate(vals):
        one = _solve(case, float(t))
        if bool(batched.converged[i]) and bool(one.converged):
            chex.assert_trees_all_close(weights(batched.params)[i], weights(one.params), rtol=1e-7, atol=1e-8)
        else:
            slack = float(batched.gap[i]) + float(one.gap) + 1e-12 * (1 + abs(float(one.primal_value)))
            assert abs(float(batched.primal_value[i]) - float(one.primal_value)) <= slack


DIFFERENTIABLE = [c for c in CASES if c.grad_rtol is not None]


def _direction():
    return jax.random.normal(jax.random.PRNGKey(1), (D,), dtype=jnp.float64)


@_parametrize(DIFFERENTIABLE)
def test_grad_and_jvp_match_central_differences(case):
    """Reverse and forward mode against central differences of the exact solution map."""
    X, y = data()
    problem = case.problem(X, y)
    v = case.value
    g = _direction()
    f = lambda t: jnp.vdot(g, weights(jp.solve(set_value(problem, t), case.solver).params))  # noqa: E731
    h = 1e-4 * v
    fd = (np.vdot(g, reference(case.problem.__name__, v + h)[1])
          - np.vdot(g, reference(case.problem.__name__, v - h)[1])) / (2 * h)
    rev = float(jax.grad(f)(jnp.asarray(v)))
    fwd = float(jax.jvp(f, (jnp.asarray(v),), (jnp.asarray(1.0),))[1])
    scale = max(abs(fd), 1e-3)
    assert abs(rev - fd) <= case.grad_rtol * scale + 1e-6, (rev, fd)
    assert abs(fwd - fd) <= case.grad_rtol * scale + 1e-6, (fwd, fd)


@_parametrize(DIFFERENTIABLE)
def test_first_derivative_is_compiled_ahead(case):
    """The first derivative of a structure not solved before (one sample fewer): the solution's
    Jacobian is traced and compiled in the thread that runs while the solve compiles, from the
    solver's start (jaxprox.adjoint._jacobian_ahead), and not compiled again on the values."""
    X, y = data()
    g = _direction()
    seen = len(COMPILES.names)
    fewer = case.problem(X[:-1], y[:-1])
    jax.grad(lambda t: jnp.vdot(g, weights(jp.solve(set_value(fewer, t), case.solver, warn=False).params)))(
        jnp.asarray(case.value))
    jacobians = [thread for name, thread in COMPILES.names[seen:] if "_solution_jacobian" in name]
    assert jacobians == ["jaxprox-ahead"], jacobians


@_parametrize(CASES)
def test_float32_stays_float32_with_an_honest_status(case):
    """float32 data: no crash, float32 out, an honest status and certificate."""
    X, y = data()
    problem = case.problem(X, y)
    v = case.value
    p_star, _ = reference(case.problem.__name__, v)
    s32 = _solve(case, v, dtype=np.float32, tol=case.f32_tol, max_steps=min(case.solver.max_steps, 5_000))
    chex.assert_type(jax.tree_util.tree_leaves(s32.params), jnp.float32)
    assert s32.status_name in ("converged", "max_steps", "stalled"), s32.status_name
    sub32 = float(_objective(problem, jax.tree_util.tree_map(lambda a: jnp.asarray(a, jnp.float64), s32.params))) - p_star
    assert float(s32.gap) >= sub32 - 1e-5 * (1 + abs(p_star)), (float(s32.gap), sub32)
    if case.exact:
        assert bool(s32.converged), (s32.status_name, float(s32.gap))


@_parametrize(CASES)
def test_nan_data_raise_before_tracing(case):
    X, y = data()
    Xn = X.copy()
    Xn[3, 1] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        case.problem(Xn, y)


def test_agm_dual_derivative_is_refused_not_wrong():
    """AGM on a dual model whose reported primal is not polished exactly (``polish=False``: the
    average of the dual recoveries) has no derivative available: asking for one raises instead of
    returning a wrong number (Solver.derivative_gap). The polished SVMs are differentiated (CASES)."""
    X, y = data()
    f = lambda t: jnp.sum(jp.solve(jp.BiasSVM(X, y, t, polish=False), jp.AGM(tol=1e-6), warn=False).params)  # noqa: E731
    with pytest.raises(NotImplementedError, match="derivative is not available"):
        jax.grad(f)(0.05)


def test_incompatible_pairs_raise_declared_type_error():
    """The whole matrix: each public solver on each example problem either is accepted by its
    declared requirements or raises the TypeError before tracing (never a crash inside JAX)."""
    accepted = 0
    for cls in capabilities.public_solvers():
        for name, problem in examples().items():
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
    """docs/solvers.md carries the matrix generated from the declarations (``python tests/registry.py``
    writes it)."""
    doc = (pathlib.Path(__file__).parents[1] / "docs" / "solvers.md").read_text()
    assert capabilities.matrix(examples()) in doc
