"""The driver's contract: a solver config never carries one problem's data into another solve,
non-converged solves are loud, run options do not recompile, capabilities are checked first."""
import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxprox as jp
from jaxprox import losses, penalties
from jaxprox.constraints import L1Ball


def _pair(seed, n=60, d=8):
    """Two problems of the same shapes with different data."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    y = np.where(X @ rng.standard_normal(d) + 0.5 * rng.standard_normal(n) > 0, 1.0, -1.0)
    return X, y


@pytest.fixture(scope="module")
def AB():
    return _pair(0), _pair(1)


def _fresh_optimum(problem, solver):
    sol = jp.solve(problem, solver)
    assert bool(sol.converged)
    return sol


def test_prepared_block_fw_gives_the_new_problems_optimum(AB):
    (XA, yA), (XB, yB) = AB
    make = lambda X, y: jp.ERM(X, y, losses.SmoothedHinge(1.0), penalties.SquaredL2(0.1), L1Ball(1.0))  # noqa: E731
    PA, PB = make(XA, yA), make(XB, yB)
    # the paper's step (the layout of A^T with row access is what could go stale)
    solver = jp.PDBlockFW(sparsity=8, dual_step=jp.solvers.block_fw.Lipschitz(), tol=1e-9, max_steps=50_000)
    ref = _fresh_optimum(PB, solver)
    prepared = solver.prepare(PA).hoist(PA)  # a dense A's layout is built by hoist (inside a trace)
    assert prepared.layout is not None
    for sol in (jp.solve(PB, prepared), jax.jit(lambda P: jp.solve(P, prepared))(PB)):
        assert bool(sol.converged)
        np.testing.assert_allclose(sol.params, ref.params, atol=1e-6)
        assert float(sol.primal_value) == pytest.approx(float(ref.primal_value), rel=1e-8)


def test_hoisted_fista_and_prox_newton_give_the_new_problems_optimum(AB):
    (XA, yA), (XB, yB) = AB
    PA = jp.ERM(XA, yA, losses.Squared(), penalties.L1(0.01))
    PB = jp.ERM(100.0 * XB, yB, losses.Squared(), penalties.L1(0.01))  # a far larger Lipschitz constant
    for solver in (jp.FISTA(max_backtrack=0, tol=1e-9, max_steps=100_000), jp.ProxNewton(tol=1e-10)):
        ref = _fresh_optimum(PB, solver)
        sol = jp.solve(PB, solver.hoist(PA))
        assert bool(sol.converged), sol.status_name
        assert float(sol.primal_value) == pytest.approx(float(ref.primal_value), rel=1e-8)


def test_hoisted_barrier_gives_the_new_problems_optimum(AB):
    (XA, yA), (XB, yB) = AB
    DA, DB = jp.DRSVM(XA, yA, epsilon=0.1), jp.DRSVM(XB, yB, epsilon=0.1)
    solver = jp.DRSVMBarrier(tol=1e-9)
    ref = _fresh_optimum(DB, solver)
    sol = jp.solve(DB, solver.hoist(DA))
    np.testing.assert_allclose(sol.params[0], ref.params[0], atol=1e-7)
    assert float(sol.primal_value) == pytest.approx(float(ref.primal_value), rel=1e-8)


def test_stopping_short_warns_outside_jit_and_check_inside(AB):
    (X, y), _ = AB
    P = jp.ERM(X, y, losses.Logistic(), penalties.L1(1e-3))
    with pytest.warns(jp.ConvergenceWarning, match="max_steps"):
        jp.solve(P, jp.FISTA(tol=1e-14, max_steps=20))
    with pytest.warns(jp.ConvergenceWarning, match="2 of 2 solves"):
        jp.solve_path(P, jp.FISTA(tol=1e-14, max_steps=20), jnp.array([1e-2, 1e-3]))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        jp.solve(P, jp.FISTA(tol=1e-6))  # converges: silent
        jax.jit(lambda P: jp.solve(P, jp.FISTA(tol=1e-14, max_steps=20)))(P)  # traced: silent
    with pytest.warns(jp.ConvergenceWarning, match="did not converge"):  # jp.check warns at run time
        jax.block_until_ready(jax.jit(lambda P: jp.check(jp.solve(P, jp.FISTA(tol=1e-14, max_steps=20))).params)(P))
        jax.effects_barrier()
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # ... and only when the solve stopped short
        jax.block_until_ready(jax.jit(lambda P: jp.check(jp.solve(P, jp.FISTA(tol=1e-6))).params)(P))
        jax.effects_barrier()
    with pytest.raises(Exception, match="did not converge"):
        jax.block_until_ready(jax.jit(lambda P: jp.check(jp.solve(P, jp.FISTA(tol=1e-14, max_steps=20)), error=True))(P))


def test_incompatible_problem_raises_before_tracing(AB):
    (X, y), _ = AB
    hinge_l1 = jp.ERM(X, y, losses.Hinge(), penalties.L1(1e-3))
    with pytest.raises(TypeError, match=r"FISTA cannot solve ERM\(loss=Hinge.*smooth loss.*PDProx"):
        jp.solve(hinge_l1, jp.FISTA())
    with pytest.raises(TypeError, match="Wasserstein DRSVM"):
        jp.solve(hinge_l1, jp.ISG())
    with pytest.raises(TypeError, match="ERM problem"):
        jp.solve(jp.DRSVM(X, y), jp.PDProx())
    with pytest.raises(TypeError, match="SquaredL2"):
        jp.solve(jp.ERM(X, y, losses.Logistic(), penalties.L1(1e-3), L1Ball(1.0)), jp.PDBlockFW())


def test_trace_spans_the_whole_run_in_bounded_memory(AB):
    (X, y), _ = AB
    P = jp.ERM(X, y, losses.Logistic(), penalties.L1(1e-3))
    sol = jp.solve(P, jp.FISTA(tol=0.0, max_steps=1000, check_every=1, trace_size=16), warn=False)
    cnt = int(sol.trace.count)
    steps = np.asarray(sol.trace.steps[:cnt])
    assert cnt <= 16 and steps[0] == 0 and steps[-1] == 1000 == int(sol.steps)
    assert np.all(np.diff(steps[:-1]) == steps[1] - steps[0])  # evenly spaced, then the final check
    assert np.all(np.diff(steps) > 0)
    np.testing.assert_allclose(np.asarray(sol.trace.primal[:cnt] - sol.trace.dual[:cnt]),
                               np.asarray(sol.trace.gap[:cnt]), atol=1e-12)


def test_default_solver_per_problem_class(AB):
    """jp.solve(problem) without a solver picks the documented choice, and it converges."""
    (X, y), _ = AB
    cases = [
        (jp.ERM(X, y, losses.Logistic(), penalties.L1(1e-2)), "ProxNewton"),
        (jp.ERM(X, y, losses.Hinge(), penalties.L1(1e-2)), "SVMNewton"),
        (jp.ERM(X, y, losses.Huber(1.0), penalties.L1(1e-2)), "ProxNewton"),
        (jp.ERM(X, y, losses.Hinge(), penalties.GroupLasso(1e-2, groups=[[0, 1, 2], [3, 4, 5, 6, 7]])), "PDProx"),
        (jp.ERM(X, y, losses.Hinge(), penalties.SquaredL2(1e-2)), "SVMNewton"),
        (jp.DRSVM(X, y, epsilon=0.1), "DRSVMBarrier"),
        (jp.BiasSVM(X, y, 1e-2), "BiasSVMNewton"),
    ]
    for problem, name in cases:
        sol = jp.solve(problem)
        assert sol.method == name and bool(sol.converged), (name, sol.method, sol.status_name)


def test_tol_below_the_dtype_resolution_warns(AB):
    """A ``tol`` under the solution dtype's eps asks for a gap that is rounding of the objective values,
    not a bound: the solve warns whatever its status (float32 data; float64's eps is 2.2e-16)."""
    (X, y), _ = AB
    P32 = jp.ERM(jnp.asarray(X, jnp.float32), jnp.asarray(y, jnp.float32), losses.Logistic(), penalties.L1(1e-3))
    with pytest.warns(jp.ConvergenceWarning, match="below the resolution of float32"):
        sol = jp.solve(P32, jp.FISTA(tol=1e-9, max_steps=200))
    assert sol.params.dtype == jnp.float32
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert bool(jp.solve(P32, jp.FISTA(tol=1e-4)).converged)  # within float32's reach: silent
        jp.solve(jp.ERM(X, y, losses.Logistic(), penalties.L1(1e-3)), jp.FISTA(tol=1e-9))  # float64: silent


def _examples(X, y):
    """One problem of each family the solvers declare requirements against."""
    return [jp.ERM(X, y, losses.Logistic(), penalties.L1(1e-2)),
            jp.ERM(X, y, losses.Hinge(), penalties.SquaredL2(1e-2)),
            jp.ERM(X, y, losses.Logistic(), penalties.SquaredL2(1e-2), L1Ball(1.0)),
            jp.DRSVM(X, y, norm="l1", epsilon=0.1), jp.BiasSVM(X, y, 1e-2)]


def test_every_solver_declares_its_requirements():
    """The registry holds every public solver and baseline, and each states what it needs of a
    problem (without a declaration ``jp.solve`` would let any problem through to an AttributeError)."""
    from jaxprox import capabilities

    classes = capabilities.solver_classes()
    assert set(capabilities.public_solvers()) | set(capabilities.baseline_solvers()) <= set(classes)
    assert {c.__name__ for c in capabilities.baseline_solvers()} >= {
        "AGD", "AcceleratedPG", "FOBOS", "FrankWolfe", "GSADMM", "Pegasos", "ProjectedSVRG", "RDA", "SCGS", "SGD",
        "STORC", "SubgradientDescent"}
    assert not [c.__name__ for c in classes if not c.requires]


@pytest.mark.parametrize("cls", [c.__name__ for c in jp.capabilities.baseline_solvers()])
def test_baseline_on_a_problem_it_does_not_accept_raises_the_declared_type_error(AB, cls):
    """Each baseline refuses, before tracing, the first example problem it does not accept: the
    TypeError names the solver, what is missing and the public solvers that fit
    (``jp.solve(jp.DRSVM(X, y), SGD())`` raised ``AttributeError: 'DRSVM' object has no attribute 'loss'``)."""
    from jaxprox import capabilities

    (X, y), _ = AB
    solver_cls = getattr(jp.baselines, cls)
    problem = next(p for p in _examples(X, y) if capabilities.missing(p, solver_cls))
    missing = capabilities.missing(problem, solver_cls)
    fits = capabilities.accepting(problem)
    with pytest.raises(TypeError) as err:
        jp.solve(problem, solver_cls())
    msg = str(err.value)
    assert msg.startswith(f"{cls} cannot solve {capabilities.describe(problem)}: it needs {missing[0]}"), msg
    assert fits and f"Solvers that accept this problem: {', '.join(fits)}." in msg, msg


def test_sgd_on_drsvm_names_the_erm_requirement(AB):
    (X, y), _ = AB
    with pytest.raises(TypeError, match=r"SGD cannot solve DRSVM: it needs an ERM problem .*DRSVMBarrier"):
        jp.solve(jp.DRSVM(X, y), jp.baselines.SGD())


def test_a_solver_class_and_a_budget_below_check_every():
    """A solver class (not an instance) gets a message naming the fix; ``max_steps`` smaller than
    the default ``check_every`` runs exactly ``max_steps`` steps and reports why it stopped."""
    import warnings

    X, y = jp.datasets.load("heart_scale")
    P = jp.ERM(X, y, jp.losses.Logistic(), jp.penalties.L1(1e-2))
    with pytest.raises(TypeError, match=r"got the class FISTA; pass FISTA\(\)"):
        jp.solve(P, jp.FISTA)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        sol = jp.solve(P, jp.FISTA(max_steps=5))
    assert int(sol.steps) == 5 and sol.status_name == "max_steps"
    assert any(issubclass(w.category, jp.ConvergenceWarning) for w in caught)
    with pytest.raises(ValueError, match="max_steps >= 1"):
        jp.solve(P, jp.FISTA(max_steps=0))
