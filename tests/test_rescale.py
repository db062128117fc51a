"""Column rescaling (issue #27: defaults that converge on unscaled data). ``jp.solve`` solves a
badly scaled ERM in the variable ``v = w / c`` with Jacobi column scales ``c`` for the solvers whose
steps depend on the units of the features (``Solver.rescales``), and reports ``w``.

The change of variables must be exact: the scaled problem's objective, dual function and
certificate are the original's, its prox the scaled penalty's. References: ProxNewton to a 1e-12
certified gap (its own diagonal metric, no rescaling), finite differences for derivatives.
"""
import numpy as np
import pytest
import jax
import jax.numpy as jnp

import jaxprox as jp
from jaxprox.losses import Logistic
from jaxprox.penalties import L1, ColumnScaled, ElasticNet, SquaredL2


@pytest.fixture(scope="module")
def australian():
    X, y = jp.datasets.load("australian")  # unscaled: column ranges 1 .. 1e5
    return np.asarray(X, float), np.asarray(y, float)


def reference(P):
    ref = jp.solve(P, jp.ProxNewton(tol=1e-12, max_steps=2000, rescale=False), warn=False)
    assert bool(ref.converged)
    return ref


# ------------------------------------------------------------------ the change of variables
@pytest.mark.parametrize("pen", [L1(0.3), SquaredL2(0.7), ElasticNet(0.5, 0.3)])
def test_column_scaled_penalty_is_the_change_of_variables(pen):
    rng = np.random.default_rng(0)
    c = jnp.asarray(rng.uniform(0.01, 10.0, 6))
    h = ColumnScaled(pen, c)
    v, x = jnp.asarray(rng.normal(size=6)), jnp.asarray(rng.normal(size=6))
    np.testing.assert_allclose(float(h.value(v)), float(pen.value(c * v)), rtol=1e-13)
    # prox: the minimiser of 1/2 ||v - x||^2 + t h(c v), checked against perturbed points
    t = 0.37
    p = h.prox(x, t)
    F = lambda v_: 0.5 * jnp.sum((v_ - x) ** 2) + t * h.value(v_)  # noqa: E731
    for _ in range(20):
        assert float(F(p)) <= float(F(p + 1e-3 * jnp.asarray(rng.normal(size=6)))) + 1e-15
    # Fenchel-Young with equality at s in the subdifferential: s = (x - p) / t at v = p
    s = (x - p) / t
    np.testing.assert_allclose(float(h.value(p) + h.conjugate(s)), float(jnp.vdot(s, p)), rtol=1e-10, atol=1e-12)
    assert float(h.strong_convexity) == pytest.approx(float(pen.strong_convexity) * float(jnp.min(c)) ** 2)
    assert h.declares_strong_convexity == pen.declares_strong_convexity
    # with_lam acts on the wrapper
    np.testing.assert_allclose(float(h.with_lam(2 * pen.lam).value(v)), 2 * float(pen.value(c * v)), rtol=1e-13)


@pytest.mark.parametrize("pen", [L1(0.01), SquaredL2(0.01)])
def test_scaled_problem_has_the_same_values_and_certificate(australian, pen):
    X, y = australian
    P = jp.ERM(X, y, Logistic(), pen)
    c = P.column_scale()
    assert c is not None  # australian is badly scaled
    rms = np.sqrt((X**2).mean(0))
    np.testing.assert_allclose(np.asarray(c), 1.0 / rms, rtol=1e-12)
    S = P.column_scaled(c)
    np.testing.assert_allclose(np.linalg.norm(np.asarray(S.A.todense()), axis=0) / np.sqrt(X.shape[0]), 1.0,
                               rtol=1e-12)
    v = jnp.asarray(np.random.default_rng(1).normal(size=X.shape[1])) * 0.1
    np.testing.assert_allclose(float(S.objective(v)), float(P.objective(c * v)), rtol=1e-12)
    u = S.dual_point(v)
    np.testing.assert_allclose(float(S.dual_objective(u)), float(P.dual_objective(u)), rtol=1e-10)
    np.testing.assert_allclose(np.asarray(S.certificate(v)), np.asarray(P.certificate(c * v)), rtol=1e-10)


def test_scales_and_scaled_data_are_computed_once_per_data_and_dropped_with_it(australian):
    """``jp.solve`` prepares the rescaling on the host for every call; the scales and the scaled
    copy of the data are computed once per data array (:func:`jaxprox._compile.caches.once_per_data`) and
    the cache lets go of them when the data are garbage-collected."""
    import gc
    import weakref

    from jaxprox._compile import caches

    X, y = australian
    P = jp.ERM(X, y, Logistic(), L1(0.01))
    c = P.column_scale()
    assert P.column_scale() is c and P.with_lam(0.02).column_scale() is c  # same data, one computation
    assert P.column_scaled(c).A.X is P.with_lam(0.02).column_scaled(c).A.X
    assert jp.ERM(X, y, Logistic(), L1(0.01)).column_scale() is not c  # new arrays: computed again
    np.testing.assert_array_equal(np.asarray(jp.ERM(X, y, Logistic(), L1(0.01)).column_scale()), np.asarray(c))
    sol = jp.solve(P, jp.FISTA(tol=1e-8))
    assert sol.method.endswith("(columns scaled)") and bool(sol.converged)
    data, scaled = weakref.ref(P.A.X), weakref.ref(P.column_scaled(c).A.X)
    before = len(caches._PER_DATA)
    del P, c, sol
    gc.collect()
    assert data() is None and scaled() is None  # the cache kept neither the data nor its scaled copy
    assert len(caches._PER_DATA) < before
    # sparse data: the scaled copy shares the index arrays (keys of its entry), and is still let go
    import scipy.sparse as sps

    Xs = sps.csr_matrix(np.asarray(X[:200]))
    Ps = jp.ERM(Xs, y[:200], Logistic(), L1(0.01))
    Ss = Ps.column_scaled(Ps.column_scale())
    assert type(Ps.A).__name__ == "Sparse" and Ss.A.indices is Ps.A.indices
    leaves = [weakref.ref(x) for x in jax.tree_util.tree_leaves(Ps.A)]
    del Ps, Ss
    gc.collect()
    assert all(r() is None for r in leaves) and len(caches._PER_DATA) < before
    # a traced or NumPy leaf, or NumPy scales, are never a key: computed each time
    calls = []
    caches.once_per_data("t", np.ones(3), lambda: calls.append(1))
    caches.once_per_data("t", np.ones(3), lambda: calls.append(1))
    caches.once_per_data("t", jnp.ones(3), lambda: calls.append(1), np.ones(3))
    assert len(calls) == 3
    P = jp.ERM(X, y, Logistic(), L1(0.01))
    c = np.asarray(P.column_scale())
    np.testing.assert_allclose(np.asarray(P.column_scaled(c).A.X), np.asarray(X) * c, rtol=1e-15)


def test_well_scaled_data_and_other_problems_are_not_rescaled():
    X, y = jp.datasets.load("heart_scale")  # [-1, 1] columns
    assert jp.ERM(X, y, Logistic(), L1(0.01)).column_scale() is None
    A, yA = jp.datasets.load("a1a")  # one-hot: one range, root-mean-squares by frequency
    assert jp.ERM(A, yA, Logistic(), L1(0.01)).column_scale() is None
    Xb = np.array(X) * np.r_[1e3, np.ones(X.shape[1] - 1)]
    assert jp.ERM(Xb, y, Logistic(), L1(0.01)).column_scale() is not None
    # no exact prox after the change of variables, so not done: another constraint, l1 + a ball,
    # a non-separable penalty
    assert jp.ERM(Xb, y, Logistic(), SquaredL2(0.1), constraint=jp.constraints.L2Ball(1.0)).column_scale() is None
    assert jp.ERM(Xb, y, Logistic(), L1(0.1), constraint=jp.constraints.L1Ball(1.0)).column_scale() is None
    assert jp.ERM(Xb, y, Logistic(), jp.penalties.L2(0.1)).column_scale() is None
    assert jp.ERM(Xb, y, Logistic(), SquaredL2(0.1), constraint=jp.constraints.L1Ball(1.0)).column_scale() is not None


# ------------------------------------------------------------------ the l1 ball becomes a weighted l1 ball
def test_weighted_l1_ball_projection_and_metric_prox_match_cvxpy():
    import cvxpy as cp

    rng = np.random.default_rng(4)
    d, r = 12, 0.8
    c, x, D = rng.uniform(0.05, 5.0, d), rng.normal(size=d) * 3, rng.uniform(1.0, 4.0, d)
    C = jp.constraints.WeightedL1Ball(r, jnp.asarray(c))
    for metric in (None, D):
        Dm = np.ones(d) if metric is None else metric
        y = cp.Variable(d)
        cp.Problem(cp.Minimize(0.5 * cp.sum(cp.multiply(Dm, cp.square(y))) - x @ y),
                   [cp.sum(cp.multiply(c, cp.abs(y))) <= r]).solve(solver=cp.CLARABEL, tol_gap_abs=1e-12,
                                                                  tol_gap_rel=1e-12, tol_feas=1e-12)
        got = C.project(jnp.asarray(x)) if metric is None else C.project_metric(jnp.asarray(x), jnp.asarray(D))
        np.testing.assert_allclose(np.asarray(got), y.value, atol=1e-7)
    inside = x * 1e-3
    np.testing.assert_allclose(np.asarray(C.project(jnp.asarray(inside))), inside)  # inside: unchanged
    g = jnp.asarray(rng.normal(size=d))
    v = C.lmo(g)
    assert float(jnp.vdot(g, v)) == pytest.approx(-float(C.support(g)))
    assert float(C.support(g)) == pytest.approx(r * float(jnp.max(jnp.abs(g) / c)))
    assert float(jnp.sum(c * jnp.abs(v))) == pytest.approx(r)


def test_l1_ball_problem_rescaled_exactly_and_solved(australian):
    """Smoothed hinge + ridge over the l1 ball (the sweep's l1-ball family) on australian: FISTA,
    SVRG, PDProx and AGM stopped at max_steps before (defaults.md); the scaled problem's
    certificate is the original's, and a default FISTA solve converges to the reference."""
    from jaxprox.losses import SmoothedHinge

    X, y = australian
    n = X.shape[0]
    P = jp.ERM(X, y, SmoothedHinge(1.0), SquaredL2(10.0 / n), constraint=jp.constraints.L1Ball(1.0))
    c = P.column_scale()
    S = P.column_scaled(c)
    v = S.constraint.project(jnp.asarray(np.random.default_rng(5).normal(size=X.shape[1])))
    np.testing.assert_allclose(np.asarray(S.certificate(v)), np.asarray(P.certificate(c * v)), rtol=1e-10)
    F_lo = float(reference(P).dual_value)
    sol = jp.solve(P, jp.FISTA(tol=1e-6))
    assert bool(sol.converged) and sol.method.endswith("(columns scaled)")
    f = float(P.objective(sol.params))
    assert float(jnp.sum(jnp.abs(sol.params))) <= 1.0 + 1e-9
    assert f - F_lo <= 1e-6 * F_lo and f - F_lo <= float(sol.gap) + 1e-13


def test_prox_newton_rescales_where_its_inner_solver_stalled():
    """heart with 3 columns x1000, smoothed hinge + ridge over the l1 ball of radius 1
    (``defaults_synthetic.md``): without rescaling ProxNewton's semismooth inner solver stalled
    (a 3e-2 gap after 500 Newton steps); it rescales like FISTA and converges to the Clarabel
    optimum with an honest gap."""
    cp = pytest.importorskip("cvxpy")
    from jaxprox.losses import SmoothedHinge

    X, y = jp.datasets.load("heart_scale", dense=True)
    X, y = np.asarray(X, float).copy(), np.asarray(y, float)
    X[:, :3] *= 1000.0
    n, d = X.shape
    P = jp.ERM(X, y, SmoothedHinge(1.0), SquaredL2(10.0 / n), constraint=jp.constraints.L1Ball(1.0))
    w = cp.Variable(d)
    m = cp.multiply(y, X @ w)
    ref = cp.Problem(cp.Minimize(cp.sum(cp.huber(cp.pos(1 - m), 1.0)) / (2 * n) + 5.0 / n * cp.sum_squares(w)),
                     [cp.norm1(w) <= 1.0])
    ref.solve(solver=cp.CLARABEL, tol_gap_abs=1e-10, tol_gap_rel=1e-10, tol_feas=1e-10)
    sol = jp.solve(P, jp.ProxNewton(tol=1e-6))
    assert bool(sol.converged) and sol.method.endswith("(columns scaled)")
    f = float(P.objective(sol.params))
    assert abs(f - ref.value) <= 1e-6 * ref.value
    assert f - ref.value <= float(sol.gap) + 1e-9 * ref.value
    assert float(jnp.sum(jnp.abs(sol.params))) <= 1.0 + 1e-9


# ------------------------------------------------------------------ solves
@pytest.mark.parametrize("name", ["FISTA", "SVRG", "PDProx", "AGM", "APPA"])
def test_defaults_converge_on_unscaled_data(australian, name):
    """australian, ridge logistic at lam = 10/n: before (no rescaling) FISTA, SVRG, PDProx, AGM
    and APPA all stopped at max_steps, 0.6 .. 5e-5 above the optimum (defaults.md). Rescaled, each
    converges to the ProxNewton reference, with an honest gap, and says it rescaled."""
    X, y = australian
    P = jp.ERM(X, y, Logistic(), SquaredL2(10.0 / X.shape[0]))
    F_lo = float(reference(P).dual_value)
    sol = jp.solve(P, getattr(jp, name)(tol=1e-6))
    assert bool(sol.converged), sol.status_name
    assert sol.method.endswith("(columns scaled)")
    f = float(P.objective(sol.params))
    assert f - F_lo <= 1e-6 * F_lo
    assert f - F_lo <= float(sol.gap) + 1e-13
    np.testing.assert_allclose(float(sol.primal_value), f, rtol=1e-12)


def test_appa_around_sdca_is_not_rescaled(australian):
    """SDCA's dual-to-primal map needs the plain ridge: APPA(inner='sdca') solves as given."""
    X, y = australian
    P = jp.ERM(X, y, Logistic(), SquaredL2(10.0 / X.shape[0]))
    assert jp.APPA(inner=jp.SDCA()).rescales is False and jp.APPA().rescales is True
    sol = jp.solve(P, jp.APPA(inner=jp.SDCA(), max_steps=2), warn=False)
    assert sol.method == "APPA"


def test_rescale_false_and_warm_start_in_w(australian):
    X, y = australian
    P = jp.ERM(X, y, Logistic(), L1(1e-3))
    ref = reference(P)
    off = jp.solve(P, jp.FISTA(tol=1e-6, rescale=False, max_steps=200), warn=False)
    assert off.method == "FISTA" and not bool(off.converged)
    # a warm start is given and reported in w: started at the optimum, one check suffices
    warm = jp.solve(P, jp.FISTA(tol=1e-6), init=ref.params)
    assert bool(warm.converged) and int(warm.steps) <= 10
    np.testing.assert_allclose(np.asarray(warm.params), np.asarray(ref.params), atol=1e-5)


def test_rescaled_solves_under_vmap_path_and_grad(australian):
    X, y = australian
    n = X.shape[0]
    P = jp.ERM(X, y, Logistic(), SquaredL2(10.0 / n))
    solver = jp.FISTA(tol=1e-10)
    lams = jnp.asarray([10.0 / n, 1.0 / n])
    one = [np.asarray(jp.solve(P.with_lam(l), solver).params) for l in lams]
    vm = jax.vmap(lambda l: jp.solve(P.with_lam(l), solver).params)(lams)
    path = jp.solve_path(P, solver, lams).params
    lock = jp.solve_path(P, solver, lams, batched=True)  # lock-step lanes: the same mapping back
    assert lock.method.endswith("(columns scaled)") and lock.params.shape == (2, X.shape[1])
    np.testing.assert_allclose(np.asarray(lock.params), np.asarray(path), rtol=1e-5, atol=1e-6)
    for k in range(2):
        np.testing.assert_allclose(np.asarray(vm[k]), one[k], rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(np.asarray(path[k]), one[k], rtol=1e-5, atol=1e-6)

    # d/dlam of a smooth function of the solution: implicit derivative through the rescaled solve
    g = lambda l: jnp.sum(jp.solve(P.with_lam(l), solver).params[:13] ** 2)  # noqa: E731
    lam0, h = 10.0 / n, 1e-6 / n
    fd = (float(g(lam0 + h)) - float(g(lam0 - h))) / (2 * h)
    np.testing.assert_allclose(float(jax.grad(g)(lam0)), fd, rtol=1e-4)


def test_traced_data_is_solved_without_rescaling(australian):
    """Inside the user's jit the data are traced: no concrete value to scale by, so the solve runs
    on the original variable (the same unscaled data are rescaled outside jit), and still returns
    the right answer where it converges."""
    X, y = australian
    solve = jax.jit(lambda X_, s: jp.solve(jp.ERM(X_, y, Logistic(), SquaredL2(0.01)), s), static_argnums=1)
    short = jp.FISTA(max_steps=20)
    assert solve(jnp.asarray(X), short).method == "FISTA"
    assert jp.solve(jp.ERM(X, y, Logistic(), SquaredL2(0.01)), short, warn=False).method == "FISTA (columns scaled)"
    Xs = X[:, :13] / np.abs(X[:, :13]).max(0)  # a well-conditioned part, so it converges unscaled
    w = solve(jnp.asarray(Xs), jp.FISTA(tol=1e-8)).params
    P = jp.ERM(Xs, y, Logistic(), SquaredL2(0.01))
    F_lo = float(reference(P).dual_value)
    assert 0 <= float(P.objective(w)) - F_lo <= 1e-8 * F_lo


def test_sparse_multioutput_and_float32_rescaled(australian):
    """The same change of variables for sparse data, a matrix model W (d, K) and float32."""
    import scipy.sparse as sps
    from jaxprox.losses import Squared

    X, y = australian
    n = X.shape[0]
    # sparse rows: the same problem, rescaled, to the same optimum as the dense one
    P = jp.ERM(sps.csr_matrix(X), y, Logistic(), L1(1e-3))
    sol = jp.solve(P, jp.FISTA(tol=1e-8))
    assert bool(sol.converged) and sol.method.endswith("(columns scaled)")
    F_lo = float(reference(jp.ERM(X, y, Logistic(), L1(1e-3))).dual_value)
    assert float(P.objective(sol.params)) - F_lo <= 1e-8 * F_lo

    # a matrix model: two outputs, each column of W scaled by the same c
    Y = np.stack([y, np.roll(y, 7)], axis=1)
    M = jp.ERM(X, Y, Squared(), SquaredL2(1e-2), n_outputs=2)
    solm = jp.solve(M, jp.FISTA(tol=1e-10))
    assert solm.params.shape == (X.shape[1], 2) and solm.method.endswith("(columns scaled)")
    Wref = np.linalg.solve(X.T @ X / n + 1e-2 * np.eye(X.shape[1]), X.T @ Y / n)  # closed form
    F_ref = float(M.objective(jnp.asarray(Wref)))
    assert 0 <= float(M.objective(solm.params)) - F_ref <= 1e-10 * F_ref + 1e-14
    np.testing.assert_allclose(np.asarray(solm.params), Wref, rtol=1e-3, atol=1e-6)

    # float32 data: rescaled, FISTA certifies 1e-3 (it stalls near 1e-4 in float32; without
    # rescaling its gap stays at 0.43, i.e. 100% of the objective)
    P32 = jp.ERM(X.astype(np.float32), y.astype(np.float32), Logistic(), SquaredL2(10.0 / n))
    s32 = jp.solve(P32, jp.FISTA(tol=1e-3))
    assert s32.params.dtype == jnp.float32 and bool(s32.converged)
    P64 = jp.ERM(X, y, Logistic(), SquaredL2(10.0 / n))
    F64 = float(reference(P64).dual_value)
    assert 0 <= float(P64.objective(np.asarray(s32.params, float))) - F64 <= 1e-3 * F64


def test_a_dual_method_on_unscaled_data_says_why(australian):
    """SDCA cannot be rescaled (its dual does not change with the units of ``w``): its short stop
    on australian (column ranges 1 .. 1e5) says so and names solvers that rescale; PDProx, which
    jp.solve rescales, does not get that sentence."""
    X, y = australian
    P = jp.ERM(X, y, jp.losses.Hinge(), SquaredL2(1e-2))
    with pytest.warns(jp.ConvergenceWarning, match="columns are in different units .* standardise the features"):
        jp.solve(P, jp.SDCA(max_steps=20))
    with pytest.warns(jp.ConvergenceWarning) as rec:
        jp.solve(P, jp.PDProx(max_steps=100))
    assert not any("different units" in str(r.message) for r in rec)
