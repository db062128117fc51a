"""The solve driver: jit, vmap over lambda, no recompilation, traces, status codes, implicit and
unrolled differentiation (forward and reverse) against finite differences (per-family derivatives in lam
and the data, and the kink case: tests/test_differentiation.py)."""
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxprox as jp
from jaxprox import losses, penalties
from jaxprox.loop import CONVERGED, MAX_STEPS, NONFINITE


@pytest.fixture(scope="module")
def heart():
    return jp.datasets.load("heart_scale")


def _lasso(heart, lam=0.01):
    X, y = heart
    return jp.ERM(X, y, losses.Squared(), penalties.L1(lam))


def _logreg(heart, lam=0.01):
    X, y = heart
    return jp.ERM(X, y, losses.Logistic(), penalties.L1(lam))


SOLVER = jp.FISTA(tol=1e-12, max_steps=20_000, check_every=10)


def _trace_reference(size, checks):
    """The documented thinning rule in plain Python: the first ``size`` checks are kept; when the
    record fills, every other entry is dropped and only checks at multiples of the doubled stride
    are kept from then on; the newest check is always the last entry (overwritten by the next
    one when it is off the stride)."""
    kept_entries, stride, pending = [], 1, False
    for b, value in enumerate(checks):
        if pending:
            kept_entries.pop()
        kept_entries.append(value)
        on = b % stride == 0
        if on and len(kept_entries) == size:
            kept_entries = kept_entries[0:size - 1:2] + [kept_entries[-1]]
            stride, pending = 2 * stride, True
        else:
            pending = not on
    return kept_entries, stride


@pytest.mark.parametrize("size", [4, 8, 256])
def test_trace_thinning_against_reference(size):
    """``Trace.record`` (one gather-and-select kernel per check) keeps exactly the entries of the
    thinning rule, over five times ``size`` checks."""
    record = jax.jit(jp.loop.Trace.record)
    trace = jp.loop.Trace.start(size, jnp.float64)
    checks = list(range(5 * size + 3))
    for b in checks:
        trace = record(trace, b, jnp.array(10 * b, jnp.int32), 1.0 + b, 0.5 * b, 1.0 / (b + 1))
    entries, stride = _trace_reference(size, checks)
    count = int(trace.count)
    assert count == len(entries) and int(trace.stride) == stride
    np.testing.assert_array_equal(np.asarray(trace.steps[:count]), [10 * b for b in entries])
    np.testing.assert_array_equal(np.asarray(trace.primal[:count]), [1.0 + b for b in entries])
    np.testing.assert_array_equal(np.asarray(trace.gap[:count]), [1.0 / (b + 1) for b in entries])
    assert np.all(np.isnan(np.asarray(trace.primal[count:]))) and np.all(np.asarray(trace.steps[count:]) == -1)


def test_trace_and_status(heart):
    prob = _lasso(heart)
    sol = jax.jit(jp.solve)(prob, SOLVER)
    assert int(sol.status) == CONVERGED and sol.status_name == "converged"
    cnt = int(sol.trace.count)
    steps = np.asarray(sol.trace.steps[:cnt])
    assert steps[0] == 0 and np.all(np.diff(steps) == SOLVER.check_every) and steps[-1] == int(sol.steps)
    gaps = np.asarray(sol.trace.gap[:cnt])
    assert gaps[-1] == pytest.approx(float(sol.gap))
    assert np.all(gaps >= -1e-12)  # weak duality along the run
    np.testing.assert_allclose(sol.trace.primal[:cnt] - sol.trace.dual[:cnt], gaps, atol=1e-12)
    assert np.all(np.isnan(np.asarray(sol.trace.primal[cnt:])))
    short = jp.solve(prob, jp.FISTA(tol=1e-14, max_steps=20, check_every=10))
    assert int(short.status) == MAX_STEPS and int(short.steps) == 20 and not bool(short.converged)


def test_nonfinite_is_reported_not_raised(heart):
    X, y = heart
    prob = jp.ERM(X, y, losses.Squared(), penalties.L1(0.01))
    # a wrong, far too small Lipschitz constant with backtracking disabled makes FISTA blow up
    sol = jax.jit(jp.solve)(prob, jp.FISTA(L0=1e-3, max_backtrack=0, max_steps=5000, check_every=50))
    assert int(sol.status) in (NONFINITE, jp.loop.DIVERGED)
    assert not bool(sol.converged)
    # no NaN reaches the certificate: the last finite check is reported, and its certificate is the
    # reported point's (its primal value is the objective there)
    assert np.all(np.isfinite(np.asarray(sol.params))) and np.isfinite(float(sol.gap))
    assert float(prob.objective(sol.params)) == pytest.approx(float(sol.primal_value), rel=1e-12)


def _fd(f, x, eps):
    return (f(x + eps) - f(x - eps)) / (2 * eps)


@pytest.mark.parametrize("make", [_logreg])
def test_grad_wrt_lambda_matches_finite_differences(heart, make):
    prob = make(heart)
    v = jnp.asarray(np.random.default_rng(0).standard_normal(prob.d))

    def f(lam):
        return jnp.vdot(v, jp.solve(prob.with_lam(lam), SOLVER).params)

    lam = 0.01
    g_rev = jax.jit(jax.grad(f))(lam)
    _, g_fwd = jax.jit(lambda l: jax.jvp(f, (l,), (1.0,)))(lam)
    fd = _fd(jax.jit(f), lam, 1e-6)
    assert abs(float(g_rev) - float(fd)) <= 1e-5 * abs(float(fd))
    assert abs(float(g_fwd) - float(fd)) <= 1e-5 * abs(float(fd))


def test_unrolled_agrees_with_implicit(heart):
    prob = _logreg(heart)
    unrolled = jp.FISTA(tol=1e-12, max_steps=3000, check_every=50, max_backtrack=0)
    f_imp = lambda l: jnp.sum(jp.solve(prob.with_lam(l), SOLVER).params)
    f_unr = lambda l: jnp.sum(jp.solve(prob.with_lam(l), unrolled, adjoint=jp.Unrolled()).params)
    assert abs(float(f_imp(0.01)) - float(f_unr(0.01))) < 1e-9
    g_imp, g_unr = jax.jit(jax.grad(f_imp))(0.01), jax.jit(jax.grad(f_unr))(0.01)
    assert abs(float(g_imp) - float(g_unr)) <= 1e-4 * abs(float(g_imp))


def test_adjoint_objects_choose_the_linear_solve(heart):
    """``jp.ImplicitAdjoint(linear_solver=...)``: dense least squares and GMRES give the same
    derivative, eagerly (the solution's Jacobian, or the implicit root) and under ``jax.jit``; a
    linear solver that is not one, or ``jp.Unrolled()`` for a solver that cannot be unrolled, is
    refused before tracing."""
    prob = _logreg(heart)

    def grad(adjoint, jit=False):
        f = lambda lam: jnp.sum(jp.solve(prob.with_lam(lam), SOLVER, adjoint=adjoint).params ** 2)  # noqa: E731
        return float((jax.jit(jax.grad(f)) if jit else jax.grad(f))(0.01))

    ref = grad(jp.ImplicitAdjoint())
    for linear_solver in (jp.adjoint.LeastSquares(), jp.adjoint.GMRES()):
        for jit in (False, True):
            assert grad(jp.ImplicitAdjoint(linear_solver=linear_solver), jit) == pytest.approx(ref, rel=1e-7)
    with pytest.raises(ValueError, match="linear_solver"):
        jp.solve(prob, SOLVER, adjoint=jp.ImplicitAdjoint(linear_solver="dense"))
    with pytest.raises(ValueError, match="implicit"):
        jp.solve(prob, jp.ProxNewton(), adjoint=jp.Unrolled())


def test_solver_argument_errors(heart):
    prob = _lasso(heart)
    with pytest.raises(ValueError, match="check_every"):
        jp.solve(prob, jp.FISTA(check_every=0))
    # a budget below check_every is accepted: the check comes after max_steps steps
    assert int(jp.solve(prob, jp.FISTA(max_steps=5, check_every=10), warn=False).steps) == 5
    with pytest.raises(ValueError, match="adjoint"):
        jp.solve(prob, jp.FISTA(), adjoint="magic")
    with pytest.raises(TypeError, match="Solver"):
        jp.solve(prob, "fista")


def test_solve_path_warm_scan_matches_separate_solves(heart):
    """jp.solve_path: a warm-started lax.scan from large to small lam (the solver's lam-independent
    constants hoisted once, Solver.hoist) gives the solutions of separate cold solves, each
    certified, and takes fewer steps in total."""
    prob = _lasso(heart)
    lams = jnp.logspace(-1, -3, 8)
    path = jax.jit(lambda ls: jp.solve_path(prob, SOLVER, ls))(lams)
    cold = jax.jit(jax.vmap(lambda l: jp.solve(prob.with_lam(l), SOLVER)))(lams)
    assert bool(jnp.all(path.converged)) and path.params.shape == (8, prob.d)
    np.testing.assert_allclose(path.params, cold.params, atol=1e-5)
    np.testing.assert_allclose(path.primal_value, cold.primal_value, rtol=1e-10)
    assert int(jnp.sum(path.steps)) < int(jnp.sum(cold.steps))
    auto = jp.solve_path(prob, SOLVER, lams)  # batched=None: the warm scan on a CPU
    np.testing.assert_array_equal(auto.steps, path.steps)


def test_solve_path_lockstep_batches(heart):
    """jp.solve_path(batched=True): every lambda at once in lock-step with the solver's lockstep
    form (FISTA: the fixed bound L, no backtracking loop), chunked or not; the same optima,
    certified, as separate solves."""
    prob = _lasso(heart)
    lams = jnp.logspace(-1, -3, 7)
    fista = jp.FISTA(tol=1e-9, max_steps=20_000)
    lanes = fista.hoist(prob).lockstep(prob)
    assert lanes.max_backtrack == 0 and float(lanes.L_est) > float(prob.smoothness())
    cold = jax.vmap(lambda l: jp.solve(prob.with_lam(l), fista))(lams)
    for chunk in (None, 3):
        sols = jax.jit(lambda ls: jp.solve_path(prob, fista, ls, batched=True, chunk=chunk))(lams)
        assert sols.params.shape == (7, prob.d) and bool(jnp.all(sols.converged))
        np.testing.assert_allclose(sols.primal_value, cold.primal_value, rtol=1e-8)
        assert bool(jnp.all(sols.gap <= 1e-9 * jnp.abs(sols.primal_value) + 1e-12))
    pn = jp.ProxNewton(tol=1e-9)  # no lockstep form: the solver itself, vmapped
    sols = jp.solve_path(prob, pn, lams, batched=True)
    np.testing.assert_allclose(sols.primal_value, cold.primal_value, rtol=1e-8)


def test_solve_path_called_again_does_not_recompile(heart):
    """An eager jp.solve_path compiles once per structure: a second call with new lambdas (same
    length) and a new tol reuses the compiled path (a compile counter, not a timing); the solve's
    top-level compilation also carries jaxprox's XLA options (jaxprox._compile.compiled)."""
    from jaxprox import _compile

    n = []
    jax.monitoring.register_event_duration_secs_listener(
        lambda event, _s, **_: n.append(1) if event == "/jax/core/compile/jaxpr_to_mlir_module_duration" else None)
    prob = _lasso(heart)
    sv = jp.FISTA(tol=1e-8, max_steps=5000)
    lams1, lams2 = jnp.logspace(-1, -3, 6), jnp.logspace(-1.5, -3.5, 6)
    first = jp.solve_path(prob, sv, lams1, batched=False)
    before = len(n)
    again = jp.solve_path(prob, jp.FISTA(tol=1e-9, max_steps=5000), lams2, batched=False)
    assert len(n) == before, "solve_path recompiled for new lambdas / tol"
    assert bool(jnp.all(first.converged)) and bool(jnp.all(again.converged))
    assert _compile._top_level() and not jax.jit(lambda: jnp.asarray(_compile._top_level()))()


def test_eager_gradient_reuses_the_solve_and_matches_jit(heart, caplog):
    """An eager jax.grad / jax.jacfwd of a solution runs the plain solve's own compiled loop
    (concrete values, top-level compile options) and attaches the implicit derivative separately:
    after a plain solve, the gradient compiles no new loop (a compile counter on the loop), and
    the derivative equals the one traced inside jax.jit (the whole solve linearised) and central
    finite differences."""
    import logging

    from jaxprox import defaults

    prob = jp.ERM(heart[0], heart[1], jp.losses.Logistic(), jp.penalties.L1(1e-2))
    sv = jp.FISTA(tol=1e-12, max_steps=20_000)
    f = lambda lam: jnp.sum(jp.solve(prob.with_lam(lam), sv).params ** 2)  # noqa: E731
    f(0.02)  # lam a concrete float; under jax.grad a weakly-typed tracer: the same compiled loop
    caplog.set_level(logging.WARNING)
    with jax.log_compiles(True):
        g_eager = jax.grad(f)(0.02)
        j_fwd = jax.jacfwd(f)(0.02)  # vmap over a jvp: the loop is still the plain solve's
    compiled = [r.getMessage() for r in caplog.records if "Compiling" in r.getMessage()]
    assert compiled and not any("_iterate_compiled" in m or "_solve_compiled" in m for m in compiled), compiled
    g_jit = jax.jit(jax.grad(f))(0.02)
    h = 1e-5
    fd = (f(0.02 + h) - f(0.02 - h)) / (2 * h)
    np.testing.assert_allclose(g_eager, g_jit, rtol=1e-8)
    np.testing.assert_allclose(j_fwd, g_eager, rtol=1e-8)
    np.testing.assert_allclose(g_eager, fd, rtol=1e-5)
    # more than DENSE_TANGENT_MAX differentiated inputs (the data X): the implicit-root route
    fx = lambda X: jnp.sum(jp.solve(jp.ERM(X, heart[1], jp.losses.Logistic(), jp.penalties.L1(2e-2)), sv).params ** 2)  # noqa: E731
    X = jnp.asarray(heart[0])
    assert X.size > defaults.DENSE_TANGENT_MAX
    np.testing.assert_allclose(jax.grad(fx)(X), jax.jit(jax.grad(fx))(X), rtol=1e-7, atol=1e-10)
    with pytest.raises(NotImplementedError, match="first order"):  # not a silently wrong second derivative
        jax.hessian(f)(0.02)


@pytest.mark.parametrize("kind", ["fista_l1", "agm_bias_svm"])
def test_an_exported_solve_returns_what_solve_returns(heart, kind):
    """The recipe of docs/getting_started.md ("skip the tracing too"): ``jax.export`` of a jitted
    function around ``jp.solve`` (data and lam as arguments) traces without a host callback or an
    unexportable primitive, and the exported call, at a lam other than the one it was traced with,
    returns the plain solve's point, certified gap and status. (Its ``serialize`` needs the optional
    ``flatbuffers``; the round trip itself is JAX's.)"""
    X, y = (jnp.asarray(a) for a in heart)

    def build(X, y, lam):
        if kind == "fista_l1":
            return jp.ERM(X, y, losses.Logistic(), penalties.L1(lam)), jp.FISTA(tol=1e-8)
        return jp.BiasSVM(X, y, lam), jp.AGM(tol=1e-6)

    def fit(X, y, lam):
        sol = jp.solve(*build(X, y, lam), warn=False)
        return jax.tree_util.tree_leaves(sol.params), sol.gap, sol.status

    exported = jax.export.export(jax.jit(fit))(X, y, jnp.asarray(1e-2))
    lam = jnp.asarray(3e-3)
    leaves, gap, status = exported.call(X, y, lam)
    ref = jp.solve(*build(X, y, lam), warn=False)
    assert int(status) == int(ref.status) == CONVERGED
    problem = build(X, y, lam)[0]
    params = jax.tree_util.tree_unflatten(jax.tree_util.tree_structure(ref.params), leaves)
    p, p_ref = float(problem.objective(params)), float(ref.primal_value)
    assert 0 <= float(gap) <= 1e-6 * (1 + abs(p_ref))  # certified like the plain solve's
    assert abs(p - p_ref) <= float(gap) + float(ref.gap) + 1e-12  # both within their gaps of P*


def test_ahead_starts_at_the_callers_next_compile_or_is_skipped():
    """:class:`jaxprox._compile.Ahead` (the Jacobian of an eager derivative traced while the solve
    compiles): the work waits until the calling thread starts an XLA compile, and ``finish`` waits
    for it; work that has not started by ``finish`` (the caller compiled nothing), or that was
    asked for inside a thread-local JAX configuration the worker thread would not see, is skipped."""
    import threading
    import time

    from jaxprox._compile import Ahead

    ran = []
    ahead = Ahead(lambda: (time.sleep(0.05), ran.append(threading.current_thread().name)))
    time.sleep(0.05)
    assert ran == [] and not ahead._start.is_set()
    jax.jit(lambda x: jnp.cos(x) * 3.25 + 1.5)(jnp.ones(7))  # a new computation: compiled here
    assert ahead._start.is_set()
    ahead.finish()
    assert ran == ["jaxprox-ahead"]
    Ahead(lambda: ran.append("not started")).finish()
    with jax.default_device(jax.devices("cpu")[0]):
        ahead = Ahead(lambda: ran.append("another context"))
        jax.jit(lambda x: jnp.sin(x) * 1.75 - 0.5)(jnp.ones(5))
        ahead.finish()
    assert ran == ["jaxprox-ahead"]
