"""Pdprox (paper 000): Algorithms 1-3 against cvxpy + Clarabel and liblinear on small real data,
iterate equivalences (Algorithm 3 == Chambolle-Pock, Algorithm 2 == eq. (21)), honest gaps,
jit / vmap over lambda, implicit derivatives against finite differences."""
import cvxpy as cp
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxprox as jp
from jaxprox import constraints, losses, penalties
from jaxprox.solvers.pdprox import PDProx

# Settings for 1e-6-accurate solves: adaptive restarts (the default), which make the LP-type
# problems converge linearly (the plain averaged iterate converges as O(1/T), Theorem 6); some
# tests add Chambolle-Pock steps (scale sqrt(2) of the Pdprox step is within CP's
# tau sigma ||K||^2 <= 1).
ACC = dict(tol=1e-9, max_steps=60_000, check_every=200)


def _data(name):
    X, y = jp.datasets.load(name)
    X = np.asarray(X.todense() if hasattr(X, "todense") else X, dtype=float)
    if name == "australian":  # "australian scaled": min-max to [-1, 1] as LIBSVM's australian_scale
        lo, hi = X.min(0), X.max(0)
        X = 2 * (X - lo) / np.where(hi > lo, hi - lo, 1.0) - 1
    return X, np.asarray(y, dtype=float)


def _clarabel(objective, var, problem, constraints=()):
    """Reference optimum: Clarabel's solution evaluated with the problem's own objective (so a
    slightly infeasible epigraph variable cannot make the reference too low)."""
    prob = cp.Problem(cp.Minimize(objective), list(constraints))
    prob.solve(solver=cp.CLARABEL, tol_gap_abs=1e-10, tol_gap_rel=1e-10, tol_feas=1e-10)
    return float(problem.objective(jnp.asarray(var.value)))


def _hinge(X, y, w):
    return cp.sum(cp.pos(1 - cp.multiply(y, X @ w))) / X.shape[0]


def _check(problem, sol, fstar, rtol=1e-6):
    f = float(problem.objective(sol.params))
    err = f - fstar
    print(f"steps {int(sol.steps)} status {sol.status_name} rel.err {err / abs(fstar):.2e} gap {float(sol.gap):.2e}")
    assert abs(err) <= rtol * abs(fstar), (f, fstar, err)
    # honest certificate: the reported gap bounds the true suboptimality (up to the reference's
    # own accuracy) and the dual value is below the optimum
    assert float(sol.gap) >= err - 1e-9 * abs(fstar)
    assert float(sol.dual_value) <= fstar + 1e-9 * abs(fstar)


# ------------------------------------------------------------------------------------ optima
@pytest.mark.parametrize("variant", ["dual", "primal", "cp"])
def test_hinge_l1_heart(variant):
    X, y = _data("heart_scale")
    lam = 0.01
    w = cp.Variable(X.shape[1])
    P = jp.ERM(X, y, losses.Hinge(), penalties.L1(lam))
    fstar = _clarabel(_hinge(X, y, w) + lam * cp.norm1(w), w, P)
    sol = jax.jit(lambda P: jp.solve(P, PDProx(variant, **ACC)))(P)
    _check(P, sol, fstar)


def test_hinge_squared_l2_vs_cvxpy_and_liblinear():
    from sklearn.svm import LinearSVC

    X, y = _data("breast-cancer_scale")
    n, lam = X.shape[0], 1e-2
    w = cp.Variable(X.shape[1])
    P = jp.ERM(X, y, losses.Hinge(), penalties.SquaredL2(lam))
    fstar = _clarabel(_hinge(X, y, w) + 0.5 * lam * cp.sum_squares(w), w, P)
    sol = jax.jit(lambda P: jp.solve(P, PDProx("cp", scale=1.4, **ACC)))(P)
    _check(P, sol, fstar)
    # liblinear: min 1/2||w||^2 + C sum hinge  <=>  C = 1/(n lam); loss="hinge" (not squared)
    svc = LinearSVC(loss="hinge", C=1.0 / (n * lam), fit_intercept=False, dual=True, tol=1e-12, random_state=0,
                    max_iter=1_000_000).fit(X, y)
    f_lib = float(P.objective(jnp.asarray(svc.coef_.ravel())))
    assert abs(f_lib - fstar) <= 1e-6 * fstar
    np.testing.assert_allclose(sol.params, svc.coef_.ravel(), atol=1e-4)


def test_absolute_l1_australian():
    X, y = _data("australian")
    lam = 1e-3
    w = cp.Variable(X.shape[1])
    P = jp.ERM(X, y, losses.Absolute(), penalties.L1(lam))
    fstar = _clarabel(cp.sum(cp.abs(X @ w - y)) / X.shape[0] + lam * cp.norm1(w), w, P)
    sol = jax.jit(lambda P: jp.solve(P, PDProx("cp", scale=1.4, **ACC)))(P)
    _check(P, sol, fstar)


def test_hinge_group_lasso_breast_cancer():
    X, y = _data("breast-cancer_scale")
    groups = np.array([0, 0, 0, 1, 1, 2, 2, 2, 2, 3])
    lam = 0.02
    w = cp.Variable(X.shape[1])
    reg = sum(np.sqrt((groups == g).sum()) * cp.norm(w[np.flatnonzero(groups == g)]) for g in range(4))
    P = jp.ERM(X, y, losses.Hinge(), penalties.GroupLasso(lam, groups=groups))
    fstar = _clarabel(_hinge(X, y, w) + lam * reg, w, P)
    # two step sizes, tau / sigma = 0.1 (paper section 5.7 tunes this ratio; 0.01 was its best)
    sol = jax.jit(lambda P: jp.solve(P, PDProx("cp", scale=1.4, ratio=0.1, **ACC)))(P)
    _check(P, sol, fstar)


def test_budget_hinge_heart():
    """Budget SVM, eq. (19): (1/n) (sum of the m largest hinge values) + lam/2 ||w||^2."""
    X, y = _data("heart_scale")
    n, m, lam = X.shape[0], 40.0, 1.0 / X.shape[0]
    w = cp.Variable(X.shape[1])
    P = jp.ERM(X, y, losses.BudgetHinge(m), penalties.SquaredL2(lam))
    fstar = _clarabel(cp.sum_largest(cp.pos(1 - cp.multiply(y, X @ w)), int(m)) / n
                      + 0.5 * lam * cp.sum_squares(w), w, P)
    sol = jax.jit(lambda P: jp.solve(P, PDProx("dual", **ACC)))(P)
    _check(P, sol, fstar)
    # the dual is sparse-ish: ||alpha||_1 <= m
    alpha = -y * np.asarray(sol.dual)
    assert alpha.min() >= -1e-12 and alpha.max() <= 1 + 1e-12 and alpha.sum() <= m + 1e-8


def test_constraint_and_matrix_variable():
    """Hinge + lam/2||w||^2 over an l2 ball (primal constraint), and a multi-output problem
    (matrix variable W, MultiOutputL2 loss + L21 penalty)."""
    X, y = _data("heart_scale")
    lam, r = 1e-3, 0.5
    w = cp.Variable(X.shape[1])
    P = jp.ERM(X, y, losses.Hinge(), penalties.SquaredL2(lam), constraints.L2Ball(r))
    fstar = _clarabel(_hinge(X, y, w) + 0.5 * lam * cp.sum_squares(w), w, P, [cp.norm(w) <= r])
    sol = jax.jit(lambda P: jp.solve(P, PDProx("primal", **ACC)))(P)
    assert float(jnp.linalg.norm(sol.params)) <= r * (1 + 1e-12)
    _check(P, sol, fstar)

    rng = np.random.default_rng(0)
    Y = X[:, :3] @ rng.standard_normal((3, 3)) + 0.1 * rng.standard_normal((X.shape[0], 3))
    lam = 0.05
    W = cp.Variable((X.shape[1], 3))
    P = jp.ERM(X, Y, losses.MultiOutputL2(), penalties.L21(lam), n_outputs=3)
    fstar = _clarabel(cp.sum(cp.norm(X @ W - Y, axis=1)) / X.shape[0] + lam * cp.sum(cp.norm(W, axis=1)),
                      W, P)
    sol = jax.jit(lambda P: jp.solve(P, PDProx("cp", scale=1.4, **ACC)))(P)
    assert sol.params.shape == (X.shape[1], 3)
    _check(P, sol, fstar)


# ------------------------------------------------------------------------------ equivalences
def _np_problem():
    X, y = _data("heart_scale")
    X, y = X[:60], y[:60]
    return X, y, 0.05


def test_algorithm3_is_chambolle_pock_and_algorithm2_is_eq21():
    """Algorithm 3 in its beta form (note 2.3) == our double-primal CP iterates; Algorithm 2 ==
    its double-dual form eq. (21); the paper's alpha = -y u. Hinge + lam/2 ||w||^2, numpy."""
    X, y, lam = _np_problem()
    n = X.shape[0]
    P = jp.ERM(X, y, losses.Hinge(), penalties.SquaredL2(lam))
    gamma = n / np.sqrt(2 * np.linalg.norm(X, 2) ** 2)
    proj = lambda a: np.clip(a, 0.0, 1.0)  # noqa: E731
    prox = lambda v: v / (1 + gamma * lam)  # noqa: E731
    G_alpha = lambda w: (1 - y * (X @ w)) / n  # noqa: E731
    G_w = lambda a: -X.T @ (a * y) / n  # noqa: E731
    T = 25

    def run(variant):
        s = PDProx(variant, step=gamma, average=False, restart=None)
        st = s.init(P)
        ws, us = [], []
        for _ in range(T):
            st = s.step(P, st)
            ws.append(np.asarray(st.w))
            us.append(-y * np.asarray(st.u))
        return ws, us

    # Algorithm 3 (beta form, beta not projected)
    w, beta = np.zeros(X.shape[1]), np.zeros(n)
    ws3, as3 = [], []
    for _ in range(T):
        a = proj(beta + gamma * G_alpha(w))
        w_new = prox(w - gamma * G_w(a))
        beta = a + gamma * (G_alpha(w_new) - G_alpha(w))
        w = w_new
        ws3.append(w)
        as3.append(a)
    ws, us = run("cp")
    np.testing.assert_allclose(ws, ws3, atol=1e-13)
    np.testing.assert_allclose(us, as3, atol=1e-13)

    # Algorithm 2 double-dual (21): w_t = prox(w_{t-1} - gamma G_w(2 a_{t-1} - a_{t-2}))
    w, a1, a2 = np.zeros(X.shape[1]), np.zeros(n), np.zeros(n)
    ws2, as2 = [], []
    for _ in range(T):
        w = prox(w - gamma * G_w(2 * a1 - a2))
        a = proj(a1 + gamma * G_alpha(w))
        a2, a1 = a1, a
        ws2.append(w)
        as2.append(a)
    ws, us = run("primal")
    np.testing.assert_allclose(ws, ws2, atol=1e-13)
    np.testing.assert_allclose(us, as2, atol=1e-13)

    # Algorithm 1 (dual): beta projected, iterates differ from Alg. 3 once the projection acts
    w, beta = np.zeros(X.shape[1]), np.zeros(n)
    ws1 = []
    for _ in range(T):
        a = proj(beta + gamma * G_alpha(w))
        w = prox(w - gamma * G_w(a))
        beta = proj(beta + gamma * G_alpha(w))
        ws1.append(w)
    ws, _ = run("dual")
    np.testing.assert_allclose(ws, ws1, atol=1e-13)


def test_theorem6_gap_bound_and_averaging():
    """Averaged output (paper): gap(w_hat_T, alpha_hat_T) <= (||w~||^2 + ||alpha~||^2) / (2 gamma T),
    with w~ = argmin_w F(w, alpha_hat), alpha~ = argmax_alpha F(w_hat, alpha) (hinge + l2^2)."""
    X, y, lam = _np_problem()
    n = X.shape[0]
    P = jp.ERM(X, y, losses.Hinge(), penalties.SquaredL2(lam))
    for variant in ["dual", "primal", "cp"]:
        s = PDProx(variant, average=True, restart=None)
        block = jax.jit(lambda st: jax.lax.fori_loop(0, 10, lambda _, st: s.step(P, st), st))
        st, T = s.init(P), 0
        for T_check in [10, 50, 200]:
            while T < T_check:
                st, T = block(st), T + 10
            gamma = float(st.tau)
            w_hat, a_hat = np.asarray(st.w_avg), -y * np.asarray(st.u_avg)
            primal = float(P.objective(w_hat))
            dual = np.mean(a_hat) - np.sum((X.T @ (a_hat * y)) ** 2) / (2 * lam * n**2)
            w_t = X.T @ (a_hat * y) / (lam * n)
            a_t = (1 - y * (X @ w_hat) > 0).astype(float)
            bound = (w_t @ w_t + a_t @ a_t) / (2 * gamma * T)
            assert 0 <= primal - dual <= bound
            p, d, g = s.certificate(P, st)
            assert float(g) <= primal - dual + 1e-12 and float(g) >= 0  # max of two dual values


# ------------------------------------------------------------------------------ jax transforms
def test_implicit_grad_matches_finite_differences():
    X, y = _data("heart_scale")
    P = jp.ERM(X, y, losses.Hinge(), penalties.SquaredL2(0.05))
    solver = PDProx("cp", scale=1.4, restart=jp.restarts.FixedRestart(1000), tol=1e-14, max_steps=100_000, check_every=500)
    c = jnp.asarray(np.random.default_rng(1).standard_normal(X.shape[1]))

    def f(lam):
        return jnp.vdot(c, jp.solve(P.with_lam(lam), solver).params)

    lam0, h = 0.05, 1e-4
    g = jax.grad(f)(lam0)
    fd = (jax.jit(f)(lam0 + h) - jax.jit(f)(lam0 - h)) / (2 * h)
    np.testing.assert_allclose(g, fd, rtol=1e-4, atol=1e-7)
    # forward mode of the same mechanism: tests/test_differentiation.py::test_pdprox_huber_l1


def test_bad_config():
    with pytest.raises(ValueError):
        PDProx("nope")
    with pytest.raises(ValueError):
        PDProx(ratio=0.0)
    with pytest.raises(ValueError):
        PDProx(step=-1.0)
    with pytest.raises(TypeError, match="restart"):
        PDProx(restart="sometimes")
    with pytest.raises(ValueError, match="check_every"):
        jp.restarts.AdaptiveRestart(check_every=0)
    with pytest.raises(ValueError, match="every"):
        jp.restarts.FixedRestart(0)


def test_restart_scheme_rules():
    """PDLP's three restart criteria and the clamped primal-weight update (jaxprox.restarts)."""
    rs = jp.restarts.AdaptiveRestart(check_every=8, omega_range=10.0)
    test = lambda r, r_prev, t: bool(rs.should_restart(jnp.asarray(r), 1.0, jnp.asarray(r_prev), t, 100))  # noqa: E731
    assert test(0.19, 0.1, 1)                 # sufficient decay
    assert test(0.5, 0.4, 1)                  # necessary decay, no progress since the last test
    assert not test(0.5, 0.6, 1)              # necessary decay but still progressing
    assert test(0.9, 0.6, 36)                 # artificial: 36 of 100 steps since the anchor
    assert not test(0.9, 0.6, 35)
    assert [bool(rs.is_check(k)) for k in (8, 12, 16)] == [True, False, True]
    # halfway in log scale towards ||dy|| / ||dx||, clamped to a factor 10 of the start
    assert float(rs.primal_weight(1.0, 1.0, 4.0, 1.0)) == pytest.approx(2.0)
    assert float(rs.primal_weight(1.0, 1.0, 1e6, 1.0)) == pytest.approx(10.0)
    assert float(rs.primal_weight(3.0, 0.0, 1.0, 1.0)) == 3.0        # an anchor did not move
    fixed = jp.restarts.FixedRestart(5)
    assert bool(fixed.should_restart(1.0, 1.0, 1.0, 1, 5)) and bool(fixed.is_check(10))
    assert float(fixed.primal_weight(3.0, 1.0, 4.0, 1.0)) == 3.0


def test_adaptive_restarts_and_primal_weight():
    """Default PDProx (adaptive restarts, PDLP-style): restarts happen only at the tests every
    ``restart.check_every`` steps, the primal-weight update changes tau / sigma but keeps tau sigma
    (Theorem 6's step condition), and the default solve reaches Clarabel's optimum (hinge + l1)."""
    X, y = _data("heart_scale")
    lam = 0.01
    P = jp.ERM(X, y, losses.Hinge(), penalties.L1(lam))
    s = PDProx()
    st0 = s.init(P)
    st = jax.jit(lambda st: jax.lax.fori_loop(0, 640, lambda _, st: s.step(P, st), st))(st0)
    assert int(st.restarts) >= 1
    assert int(st.k - st.t) % s.restart.check_every == 0          # the last restart was at a test step
    np.testing.assert_allclose(st.tau * st.sigma, st0.tau * st0.sigma, rtol=1e-12)
    assert abs(float(st.tau / st.sigma) - 1.0) > 1e-3       # the ratio moved from its start (1)
    w = cp.Variable(X.shape[1])
    fstar = _clarabel(_hinge(X, y, w) + lam * cp.norm1(w), w, P)
    _check(P, jax.jit(lambda P: jp.solve(P, s))(P), fstar)


# ------------------------------------------------------------------------------ baselines
def test_baselines_converge():
    """gd, FOBOS, RDA, agd on hinge + l1 (heart_scale), Pegasos on hinge + l2^2: each approaches
    the Clarabel optimum and reports an honest gap."""
    from jaxprox.baselines.subgradient import AGD, FOBOS, RDA, Pegasos, SubgradientDescent

    X, y = _data("heart_scale")
    w = cp.Variable(X.shape[1])
    P = jp.ERM(X, y, losses.Hinge(), penalties.L1(0.01))
    fstar = _clarabel(_hinge(X, y, w) + 0.01 * cp.norm1(w), w, P)
    for S, rtol in [(SubgradientDescent(max_steps=3000), 1e-3), (FOBOS(max_steps=3000), 1e-3),
                    (RDA(max_steps=3000), 1e-2), (AGD(mu=1e-3, max_steps=3000), 2e-4)]:
        sol = jp.solve(P, S)
        err = float(P.objective(sol.params)) - fstar
        assert -1e-9 <= err <= rtol * fstar, (type(S).__name__, err)
        assert float(sol.gap) >= err
    P2 = jp.ERM(X, y, losses.Hinge(), penalties.SquaredL2(0.05))
    fstar2 = _clarabel(_hinge(X, y, w) + 0.025 * cp.sum_squares(w), w, P2)
    for S, rtol in [(Pegasos(batch_size=1, max_steps=20000, check_every=100), 1e-2),
                    (Pegasos(batch_size=None, average=True, max_steps=3000), 1e-3)]:
        sol = jp.solve(P2, S)
        err = float(P2.objective(sol.params)) - fstar2
        assert -1e-9 <= err <= rtol * fstar2, err
        assert float(sol.gap) >= err
