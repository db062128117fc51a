"""Tests of AGM-EF (paper 002): jaxprox.solvers.agm.AGM and the AGM models of jaxprox.problems.

References: scikit-learn SVC (libsvm keeps the bias unregularised; C = 1/(n lam), its objective
is J/lam), cvxpy + Clarabel, brute-force enumeration (F1 DP, min over b), finite differences.
"""
import itertools

import cvxpy as cp
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxprox as jp
from jaxprox import losses, penalties
from jaxprox.constraints import ElasticNetBall
from jaxprox.problems import BiasSVM, ERLPBoost, F1SVM
from jaxprox.problems.bias_svm import hinge_bias_risk
from jaxprox.problems.f1 import f1_delta, f1_log_partition, f1_loss_max, f1_loss_smoothed
from jaxprox.projections import capped_softmax, project_elastic_net_ball, q2_project
from jaxprox.components.geometry import Entropic, Euclidean
from jaxprox.solvers.agm import AGM


def _heart():
    return jp.datasets.load("heart_scale")


def _load(name):
    """Bundled data; australian is min-max scaled to [-1, 1] (LIBSVM's australian_scale)."""
    X, y = jp.datasets.load(name)
    if name == "australian":
        lo, hi = X.min(0), X.max(0)
        X = 2 * (X - lo) / np.where(hi > lo, hi - lo, 1.0) - 1
    return X, y


# The models' objectives, jitted: eagerly, every call of BiasSVM's (its exact minimisation over the
# bias, a while loop) and F1SVM's / ERLPBoost's was traced and compiled anew (~0.3-0.5 s each).
_objective = jax.jit(lambda m, p: m.objective(p))


def _svc_objective(X, y, lam):
    from sklearn.svm import SVC

    n = X.shape[0]
    svc = SVC(kernel="linear", C=1.0 / (n * lam), tol=1e-12, max_iter=10_000_000).fit(X, y)
    w, b = svc.coef_.ravel(), svc.intercept_[0]
    return 0.5 * lam * w @ w + np.mean(np.maximum(0.0, 1.0 - y * (X @ w + b)))


# ------------------------------------------------------------------------------------------
# helpers: exact min over b, capped softmax, elastic-net ball, F1 DP
# ------------------------------------------------------------------------------------------
def test_hinge_bias_risk_bruteforce():
    rng = np.random.default_rng(0)
    for _ in range(5):
        n = 30
        s = rng.normal(size=n)
        y = np.where(rng.random(n) < 0.4, 1.0, -1.0)
        r, b = hinge_bias_risk(jnp.asarray(s), jnp.asarray(y))
        kinks = y - s
        ref = min(np.mean(np.maximum(0, 1 - y * (s + t))) for t in kinks)
        assert abs(float(r) - ref) < 1e-14
        assert abs(np.mean(np.maximum(0, 1 - y * (s + float(b)))) - ref) < 1e-14
    # one class only: risk 0
    r, _ = hinge_bias_risk(jnp.asarray(s), jnp.ones(30))
    assert float(r) == 0.0


def test_q2_project_warm_newton_vs_sort():
    """The warm-started Newton projection onto Q2 = [0, 1/n]^n cap {y^T a = 0} equals the exact
    kink-sort projection (projections.box_hyperplane, method="sort") from any warm start,
    including duplicate kinks, and returns the KKT multiplier: a = clip(v + lam y, 0, 1/n)."""
    from jaxprox.projections import box_hyperplane

    rng = np.random.default_rng(7)
    proj = jax.jit(q2_project, static_argnums=2)
    for n in (9, 40):
        for trial in range(6):
            y = np.where(rng.random(n) < 0.4, 1.0, -1.0)
            y[:2] = (1.0, -1.0)
            v = rng.normal(size=n) / n * (0.3, 3.0, 30.0)[trial % 3]
            if trial >= 3:
                v = np.round(v * 4 * n) / (4 * n)  # duplicate kinks
            ref = np.asarray(box_hyperplane(jnp.asarray(v), 0.0, 1.0 / n, jnp.asarray(y), 0.0, method="sort"))
            for lam0 in (0.0, 1e3, rng.normal() / n):
                a, lam = proj(jnp.asarray(v), jnp.asarray(y), n, lam0)
                a = np.asarray(a)
                assert np.max(np.abs(a - ref)) <= 1e-14 / n
                assert abs(a @ y) <= 1e-15 and a.min() >= 0 and a.max() <= 1 / n
                assert np.max(np.abs(np.clip(v + float(lam) * y, 0, 1 / n) - a)) <= 1e-14 / n


def test_capped_softmax_kkt():
    rng = np.random.default_rng(1)
    for nu in (None, 0.3, 0.12):
        t = rng.normal(size=12) * 2
        x, lx = capped_softmax(jnp.asarray(t), nu)
        x = np.asarray(x)
        assert abs(x.sum() - 1) < 1e-13 and np.all(x >= 0)
        if nu is not None:
            assert np.all(x <= nu + 1e-15)
        # KKT (note 7.3): log x_i - t_i is constant on the uncapped entries, and capped entries
        # have t_i - tau >= log nu
        free = x < (nu if nu is not None else 2.0) * (1 - 1e-12)
        c = np.log(x[free]) - t[free]
        assert np.ptp(c) < 1e-12
        if nu is not None:
            assert np.all(t[~free] + c[0] >= np.log(nu) - 1e-12)
        # objective against cvxpy + Clarabel
        v = cp.Variable(12)
        cons = [cp.sum(v) == 1, v >= 0] + ([v <= nu] if nu is not None else [])
        ref = cp.Problem(cp.Minimize(-cp.sum(cp.entr(v)) - t @ v), cons).solve(solver=cp.CLARABEL)
        assert abs(np.sum(x * np.log(x)) - t @ x - ref) < 1e-7 * abs(ref)


def test_elastic_net_ball_projection():
    rng = np.random.default_rng(2)
    gamma, r = 0.7, 1.5
    for _ in range(4):
        g = rng.normal(size=20)
        w = np.asarray(project_elastic_net_ball(jnp.asarray(g), gamma, r))
        assert abs(gamma * np.abs(w).sum() + 0.5 * w @ w - r) < 1e-10
        assert np.all(np.sign(w) * np.sign(g) >= 0)
        v = cp.Variable(20)
        cp.Problem(cp.Minimize(cp.sum_squares(v - g)), [gamma * cp.norm1(v) + 0.5 * cp.sum_squares(v) <= r]).solve(
            solver=cp.CLARABEL)
        assert np.max(np.abs(w - v.value)) < 1e-6
    g = 0.01 * rng.normal(size=20)  # feasible: returned unchanged
    assert np.allclose(project_elastic_net_ball(jnp.asarray(g), gamma, r), g)
    # support function (used in the certificate) against cvxpy
    c = ElasticNetBall(gamma, r)
    v = rng.normal(size=20)
    z = cp.Variable(20)
    ref = cp.Problem(cp.Maximize(v @ z), [gamma * cp.norm1(z) + 0.5 * cp.sum_squares(z) <= r]).solve(
        solver=cp.CLARABEL)
    assert abs(float(c.support(jnp.asarray(v))) - ref) < 1e-6 * abs(ref)


def test_f1_dp_bruteforce():
    rng = np.random.default_rng(3)
    n = 8
    y = np.array([1, 1, 1, -1, -1, -1, -1, 1.0])
    s = rng.normal(size=n)
    mu = 0.7
    n_pos = (y > 0).sum()
    logs = []
    for yp in itertools.product((-1.0, 1.0), repeat=n):
        yp = np.array(yp)
        b = np.sum((y > 0) & (yp < 0))
        c = np.sum((y < 0) & (yp > 0))
        logs.append((yp @ s) / mu + n / mu * f1_delta(b, c, n_pos))
    ref = np.logaddexp.reduce(logs)
    assert abs(float(f1_log_partition(jnp.asarray(s), y, mu)) - ref) < 1e-12
    # gradient = -2 p(y'_i = -y_i) y_i (Algorithm 6 marginals, mass 1/n) against enumeration
    g = np.asarray(jax.grad(f1_loss_smoothed)(jnp.asarray(s), y, mu))
    p = np.exp(np.array(logs) - ref)
    marg = np.zeros(n)
    for pk, yp in zip(p, itertools.product((-1.0, 1.0), repeat=n)):
        marg += pk * (np.array(yp) != y)
    assert np.max(np.abs(g - (-2.0 * marg * y / n))) < 1e-12


def _f1_instance(n=9, d=3, seed=6):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    y = np.where(X[:, 0] + 0.7 * rng.normal(size=n) > 0.3, 1.0, -1.0)
    Y = np.array(list(itertools.product((-1.0, 1.0), repeat=n)))
    b = ((y > 0) & (Y < 0)).sum(1)
    c = ((y < 0) & (Y > 0)).sum(1)
    return X, y, Y, f1_delta(b, c, (y > 0).sum())


def test_f1_loss_max_bruteforce():
    """The exact loss-augmented maximum of (43) (sorted prefix sums over the (b, c) grid)
    against enumeration of all 2^n labellings."""
    X, y, Y, D = _f1_instance()
    s = np.random.default_rng(7).normal(size=y.shape[0])
    ref = np.max(D + (Y - y) @ s / y.shape[0])
    assert abs(float(f1_loss_max(jnp.asarray(s), y)) - ref) < 1e-14


def test_f1svm_end_to_end_vs_clarabel():
    """Example 3 end to end: AGM on the entropy-smoothed F1 loss (gradient = DP marginals) gives
    a w whose *unsmoothed* objective is within the reported gap of the optimum of (43), solved by
    Clarabel as a QP with one constraint per labelling (2^9 of them)."""
    X, y, Y, D = _f1_instance()
    n, lam = y.shape[0], 0.1
    w = cp.Variable(X.shape[1])
    ref = cp.Problem(cp.Minimize(lam / 2 * cp.sum_squares(w) + cp.max(D + (Y - y) @ (X @ w) / n))).solve(
        solver=cp.CLARABEL)
    model = F1SVM(X, y, lam, mu=1e-3)
    sol = jax.jit(lambda m: jp.solve(m, AGM(tol=3e-4, max_steps=3000, check_every=50)))(model)
    J = float(_objective(model, sol.params))
    assert bool(sol.converged)
    assert float(sol.dual_value) <= ref + 1e-9 <= J + 2e-9  # weak duality, both sides
    assert J - ref <= float(sol.gap) + 1e-12
    assert J - ref <= 3e-4 * ref


# ------------------------------------------------------------------------------------------
# ERM problems (smooth loss + prox-able penalty)
# ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("memory", ["inf", "1"])
def test_erm_logistic_l1_vs_cvxpy(memory):
    X, y = _heart()
    n, lam = X.shape[0], 0.01
    prob = jp.ERM(X, y, losses.Logistic(), penalties.L1(lam))
    sol = jax.jit(lambda p: jp.solve(p, AGM(memory=memory, tol=1e-7, max_steps=10000, check_every=50)))(prob)
    w = cp.Variable(X.shape[1])
    ref = cp.Problem(cp.Minimize(cp.sum(cp.logistic(-cp.multiply(y, X @ w))) / n + lam * cp.norm1(w))).solve(
        solver=cp.CLARABEL, tol_gap_abs=1e-12, tol_gap_rel=1e-12, tol_feas=1e-12)
    assert bool(sol.converged)
    assert abs(float(prob.objective(sol.params)) - ref) <= 1e-6 * abs(ref)
    assert float(sol.gap) >= float(prob.objective(sol.params)) - ref - 1e-9


@pytest.mark.parametrize("memory", ["inf", "1"])
def test_float32_run_past_its_resolution_stays_finite(memory):
    """float32, asked for a gap below what float32 can certify: the adaptive rule's acceptance
    test allows the rounding of its float32 terms (they reach 1e7 in a long run), so the run ends
    finite at ``max_steps`` (or converged / stalled) near the float64 optimum. With a 1e-12 slack
    every trial failed once the iterate stopped moving, ``L`` grew until it overflowed and the
    iterate became NaN (step 400 of this case)."""
    rng = np.random.default_rng(0)
    X = rng.standard_normal((40, 5))
    y = np.where(X @ rng.standard_normal(5) + 0.8 * rng.standard_normal(40) > 0, 1.0, -1.0)
    p64 = jp.ERM(X, y, losses.Logistic(), penalties.L1(0.02))
    ref = jp.solve(p64, AGM(memory=memory, tol=1e-12, max_steps=20_000), warn=False)
    p32 = jp.ERM(X.astype(np.float32), y.astype(np.float32), losses.Logistic(), penalties.L1(0.02))
    sol = jp.solve(p32, AGM(memory=memory, tol=1e-9, max_steps=1500), warn=False)
    assert sol.status_name in ("max_steps", "stalled", "converged"), sol.status_name
    assert np.all(np.isfinite(np.asarray(sol.params))) and np.isfinite(float(sol.gap))
    assert float(p64.objective(np.asarray(sol.params, np.float64))) - float(ref.primal_value) <= 1e-5


def test_default_value_restart_on_l1_only():
    """Default ``value_restart=None``: on for an ERM whose penalty is not strongly convex (l1 at a
    small lam converges in far fewer steps than without restarts, to the Clarabel optimum), off for
    ridge and for the SVM-with-bias model (their traces are unchanged)."""
    X, y = _heart()
    n = X.shape[0]
    lam = 1e-3 * float(np.max(np.abs(X.T @ y))) / (2 * n)
    prob = jp.ERM(X, y, losses.Logistic(), penalties.L1(lam))
    auto, plain = (jp.solve(prob, AGM(tol=1e-6, value_restart=v), warn=False) for v in (None, False))
    w = cp.Variable(X.shape[1])
    ref = cp.Problem(cp.Minimize(cp.sum(cp.logistic(-cp.multiply(y, X @ w))) / n + lam * cp.norm1(w))).solve(
        solver=cp.CLARABEL, tol_gap_abs=1e-12, tol_gap_rel=1e-12, tol_feas=1e-12)
    assert bool(auto.converged)
    assert 5 * int(auto.steps) <= int(plain.steps), (int(auto.steps), int(plain.steps))
    assert abs(float(prob.objective(auto.params)) - ref) <= 1e-6 * abs(ref)
    assert AGM()._restarting(jp.solvers.agm.as_agm_model(prob))
    ridge = jp.ERM(X, y, losses.Logistic(), penalties.SquaredL2(1e-3))
    assert not AGM()._restarting(jp.solvers.agm.as_agm_model(ridge))
    assert not AGM()._restarting(BiasSVM(X, y, 1.0 / n))


@pytest.mark.parametrize("constrained", [False, True])
def test_elastic_net_vs_cvxpy(constrained):
    X, y = _heart()
    n = X.shape[0]
    if constrained:
        gamma, r = 0.5, 0.3
        prob = jp.ERM(X, y, losses.Squared(), constraint=ElasticNetBall(gamma, r))
    else:
        lam, rho = 0.05, 0.5
        prob = jp.ERM(X, y, losses.Squared(), penalties.ElasticNet(lam, rho))
    sol = jax.jit(lambda p: jp.solve(p, AGM(tol=1e-7, max_steps=10000, check_every=50)))(prob)
    w = cp.Variable(X.shape[1])
    risk = cp.sum_squares(X @ w - y) / (2 * n)
    if constrained:
        ref = cp.Problem(cp.Minimize(risk), [gamma * cp.norm1(w) + 0.5 * cp.sum_squares(w) <= r]).solve(
            solver=cp.CLARABEL)
    else:
        ref = cp.Problem(cp.Minimize(risk + lam * (rho * cp.norm1(w) + 0.5 * (1 - rho) * cp.sum_squares(w)))).solve(
            solver=cp.CLARABEL)
    assert bool(sol.converged)
    assert abs(float(prob.objective(sol.params)) - ref) <= 1e-6 * abs(ref)
    assert float(sol.gap) >= float(prob.objective(sol.params)) - ref - 1e-9


def test_invariant_and_linear_gap_decay():
    """Invariant (15) ``J(x_k) <= psi_k(z_k)/A_k`` with fixed L (from the state) and the linear
    decay of the certified gap on a strongly convex problem (Theorem 10): the fitted slope of
    log(gap) per iteration is at least the theorem's rate ``2 log(1 + sqrt(lam/(4L)))``."""
    X, y = _heart()
    lam = 2e-3
    prob = jp.ERM(X, y, losses.Logistic(), penalties.SquaredL2(lam))
    solver = AGM(adaptive=False)
    step = jax.jit(lambda s: solver.step(prob, s))
    s = solver.init(prob)
    L = float(s.L)
    gaps, Js = [], []
    for k in range(150):
        s = step(s)
        J = float(prob.objective(s.x))
        Js.append(J)
        psi = float((s.inv_a) * Euclidean().d(s.z) - jnp.vdot(s.theta, s.z) + prob.regularizer(s.z) + s.const)
        assert J <= psi + 1e-12 * (1 + abs(J))
        gaps.append(float(solver.certificate(prob, s)[2]))
    gaps = np.array(gaps)
    # the certificate is a valid upper bound on J(x_k) - J* at every step (J* from Clarabel)
    w = cp.Variable(X.shape[1])
    ref = cp.Problem(cp.Minimize(cp.sum(cp.logistic(-cp.multiply(y, X @ w))) / X.shape[0]
                                 + lam / 2 * cp.sum_squares(w))).solve(solver=cp.CLARABEL)
    assert np.all(gaps >= np.array(Js) - ref - 1e-8)
    k = np.arange(len(gaps))
    keep = (k >= 10) & (gaps > 1e-11)
    assert keep.sum() >= 40 and np.all(gaps[gaps > 1e-11] > 0)
    slope = np.polyfit(k[keep], np.log(gaps[keep]), 1)[0]
    rate = 2 * np.log1p(np.sqrt(lam / (4 * L)))
    assert slope <= -rate, (slope, rate)


def test_adaptive_vs_fixed_and_memory():
    X, y = _heart()
    prob = jp.ERM(X, y, losses.Logistic(), penalties.SquaredL2(1e-3))
    res = {}
    for memory in ("inf", "1"):
        for adaptive in (True, False):
            sol = jp.solve(prob, AGM(memory=memory, adaptive=adaptive, tol=1e-10, max_steps=20000))
            assert bool(sol.converged)
            res[memory, adaptive] = (float(sol.primal_value), int(sol.steps))
    # function-value restart (ours) reaches the same optimum
    sol = jp.solve(prob, AGM(memory="inf", adaptive=False, value_restart=True, tol=1e-10, max_steps=20000))
    assert bool(sol.converged)
    res["inf", "restart"] = (float(sol.primal_value), int(sol.steps))
    vals = np.array([v[0] for v in res.values()])
    assert np.ptp(vals) <= 1e-9 * abs(vals[0])
    assert res["inf", True][1] < res["inf", False][1]
    # trials per iteration of the adaptive rule (paper: 2-3) and accepted L below the true L
    solver = AGM(adaptive=True)
    s = solver.init(prob)
    step = jax.jit(lambda s: solver.step(prob, s))
    for _ in range(200):
        s = step(s)
    assert int(s.fails) == 0
    assert float(s.trials) / 200 <= 3.0
    assert float(s.L) < 2.0 * float(prob.smoothness())


def test_grad_wrt_lam_finite_differences():
    X, y = _heart()
    prob = jp.ERM(X, y, losses.Logistic(), penalties.SquaredL2(1e-2))
    # run to machine precision in w (a gap of 1e-16 still leaves ||w - w*|| ~ 1e-8): atol < 0
    solver = AGM(tol=0.0, atol=-1.0, max_steps=600, check_every=100, gamma_d=2.0)

    @jax.jit
    def f(l):
        return jnp.sum(jp.solve(prob.with_lam(l), solver).params ** 2)

    g = jax.grad(f)(0.02)
    h = 1e-6  # the solution is exact to ~1e-14, f''' ~ 1e6: truncation and noise both ~1e-8
    fd = (f(0.02 + h) - f(0.02 - h)) / (2 * h)
    assert abs(float(g) - float(fd)) <= 1e-5 * abs(float(fd))


# ------------------------------------------------------------------------------------------
# SVM with bias (Example 1) against scikit-learn SVC
# ------------------------------------------------------------------------------------------
# (issue 7's three sets; AGM-inf on two, AGM-1 on heart: the suite is compile-bound)
@pytest.mark.parametrize("name,memory", [("heart_scale", "1"), ("australian", "inf"), ("a1a", "inf")])
def test_bias_svm_dual_vs_svc(name, memory):
    X, y = _load(name)
    lam = 1e-2
    model = BiasSVM(X, y, lam)
    sol = jax.jit(lambda m: jp.solve(m, AGM(memory=memory, tol=1e-6, max_steps=20000, check_every=50)))(model)
    ref = _svc_objective(X, y, lam)
    J = float(_objective(model, sol.params))
    assert bool(sol.converged)
    assert abs(J - ref) <= 1e-6 * ref, (J, ref)
    # dual feasibility of the AGM iterate (box within rounding, hyperplane)
    a = np.asarray(sol.dual)
    assert a.min() >= -1e-15 and a.max() <= 1 / X.shape[0] + 1e-15 and abs(a @ y) < 1e-12
    assert float(sol.gap) >= J - ref - 1e-9
    tr = sol.trace
    c = int(tr.count)
    assert np.all(np.asarray(tr.gap[:c]) >= np.asarray(tr.primal[:c]) - ref - 1e-9)
    # the projected-gradient dual points of the certificate are lower bounds on J* for any L
    for L in (1e-3, 1.0, 1e3, 1e6):
        assert float(_pg_dual_max(model, sol.dual, L)) <= ref * (1 + 1e-9)


# jitted with the model and L as arguments: one compilation per data set for the four L's (eagerly,
# every call re-traced and compiled the dual points' loops: ~1 s per L)
_pg_dual_max = jax.jit(lambda m, a, L: jnp.max(m.pg_dual(a, m.lin(a), L)))


_agm_default = jax.jit(lambda p: jp.solve(p, AGM()))  # one compilation for both lambdas (lam is traced)


@pytest.mark.parametrize("lam", [1e-2, 1e-3])
def test_agm_plain_svm_through_its_dual(lam):
    """AGM on ERM(hinge, SquaredL2) runs on the SVM dual (SVMDualModel): params are ERM's w,
    the dual is ERM's u, and the certificate is ERM's. Reference: liblinear's dual CD,
    ``LinearSVC(loss="hinge", C=1/(n lam), fit_intercept=False)`` minimises ``P/lam``."""
    from sklearn.svm import LinearSVC

    X, y = jp.datasets.load("heart")
    n = X.shape[0]
    prob = jp.ERM(X, y, losses.Hinge(), penalties.SquaredL2(lam))
    sol = _agm_default(prob)
    svc = LinearSVC(loss="hinge", C=1.0 / (n * lam), fit_intercept=False, tol=1e-10, max_iter=10**6).fit(X, y)
    ref = float(prob.objective(jnp.asarray(svc.coef_.ravel())))
    P = float(prob.objective(sol.params))
    assert bool(sol.converged) and sol.params.shape == (X.shape[1],)
    assert abs(P - ref) <= 1e-6 * ref, (P, ref)
    assert float(sol.primal_value) == pytest.approx(P, rel=1e-12)
    # an honest gap: at least the true suboptimality, and the dual value a lower bound on P*
    assert float(sol.gap) >= P - ref - 1e-9
    assert float(sol.dual_value) <= ref * (1 + 1e-9)
    u = np.asarray(sol.dual)  # ERM's dual variable: -y u in [0, 1], and D(u) <= P*
    assert np.all(-y * u >= -1e-15) and np.all(-y * u <= 1 + 1e-15)
    assert float(prob.dual_objective(jnp.asarray(u))) <= ref * (1 + 1e-9)


def test_agm_erm_nonsmooth_message():
    X, y = _heart()
    with pytest.raises(TypeError, match="AGM cannot solve ERM.*smooth loss.*plain SVM.*PDProx"):
        jp.solve(jp.ERM(X, y, losses.Hinge(), penalties.L1(1e-2)), AGM())


def test_bias_svm_nearly_separable_polish():
    """Nearly separable data (few margin violators, many ties on the margin): the average of the
    primal points recovered from the dual stalls far above 1e-6 (mushrooms: 4e-4 after 3000 steps,
    benchmarks/results/agm_svm_bias.md), but the active-set polish of ``refine_primal`` makes the
    reported point exact, so the default AGM certifies 1e-6 -- under ``vmap`` over lam, where the
    polish's row selection runs batched. The reported point is the certified one (its exact
    objective is ``primal_value``) and matches libsvm."""
    rng = np.random.default_rng(0)
    n, d = 400, 20
    y = np.where(rng.random(n) < 0.5, 1.0, -1.0)
    X = np.round(rng.normal(size=(n, d)) + 1.5 * y[:, None] * (np.arange(d) < 3), 1)
    lams = jnp.array([1e-3, 3e-3])
    model = BiasSVM(X, y, 1e-3)
    sols = jax.jit(jax.vmap(lambda l: jp.solve(model.with_lam(l), AGM(tol=1e-6, max_steps=1500))))(lams)
    for i, lam in enumerate(np.asarray(lams)):
        J = float(_objective(BiasSVM(X, y, lam), sols.params[i]))
        assert bool(sols.converged[i]) and float(sols.gap[i]) <= 1e-6 * J
        assert abs(J - float(sols.primal_value[i])) <= 1e-12 * J
        ref = _svc_objective(X, y, float(lam))
        assert J <= ref * (1 + 1e-6) and J >= float(sols.dual_value[i]) - 1e-15, (J, ref)


def test_bias_svm_schemes_certificates():
    """Primal smoothing (5.1.1) and dual smoothing (5.1.2): the reported gap is that of the
    unsmoothed problem, so it upper-bounds J(w) - J* at every check."""
    X, y = _heart()
    n, lam = X.shape[0], 1e-2
    ref = _svc_objective(X, y, lam)
    for model in (BiasSVM(X, y, lam, mu=1e-3 * n, space="primal"), BiasSVM(X, y, lam, mu=1e-4)):
        sol = jp.solve(model, AGM(tol=1e-4, max_steps=3000, check_every=20))
        tr = sol.trace
        c = int(tr.count)
        assert np.all(np.asarray(tr.gap[:c]) >= np.asarray(tr.primal[:c]) - ref - 1e-9)
        assert float(_objective(model, sol.params if model.space == "dual" else sol.params)) - ref <= float(sol.gap) + 1e-12
        assert float(sol.gap) <= 2e-3 * ref


def test_l1_svm_vs_clarabel():
    """Example 2 (L1-regularised SVM with an unpenalised bias, an LP) by primal smoothing
    (width 1e-4 per example): the unsmoothed objective is within the reported gap of the LP
    optimum (cvxpy + Clarabel) and within 1e-4 relative of it."""
    X, y = _heart()
    n, lam = X.shape[0], 1e-2
    w, b = cp.Variable(X.shape[1]), cp.Variable()
    ref = cp.Problem(cp.Minimize(cp.sum(cp.pos(1 - cp.multiply(y, X @ w + b))) / n + lam * cp.norm1(w))).solve(
        solver=cp.CLARABEL)
    model = BiasSVM(X, y, lam, mu=1e-4 * n, space="primal", penalty="l1")
    sol = jax.jit(lambda m: jp.solve(m, AGM(tol=1e-4, max_steps=6000, check_every=50)))(model)
    J = float(_objective(model, sol.params))
    assert float(sol.dual_value) <= ref + 1e-9
    assert J - ref <= float(sol.gap) + 1e-12
    assert J - ref <= 1e-4 * ref, (J, ref)


def test_bias_svm_grad_lam_smoothed():
    """d||w*||^2/dlam for the SVM with bias, by the implicit function theorem on the prox-gradient
    residual of the *primal smoothed* problem (scheme 5.1.1, width 0.1): it is lam-strongly convex
    and C^1 in w, so w*(lam) is differentiable and the derivative matches central differences.
    (On the unsmoothed dual, 5.3, the residual's Jacobian is that of a projection onto a
    degenerate face of Q2, ill-conditioned by ||X||^2/lam; the driver's GMRES solve does not
    return the derivative there, so differentiate the smoothed problem.)"""
    X, y = _heart()
    n = X.shape[0]
    solver = AGM(tol=0.0, atol=-1.0, max_steps=1000, check_every=250, gamma_d=2.0)

    @jax.jit
    def f(l):
        model = BiasSVM(X, y, l, mu=0.1 * n, space="primal", method="sort")
        return jnp.sum(jp.solve(model, solver).params ** 2)

    l0, h = 0.1, 1e-5
    g = jax.grad(f)(l0)
    fd = (f(l0 + h) - f(l0 - h)) / (2 * h)
    assert np.isfinite(float(g))
    assert abs(float(g) - float(fd)) <= 1e-3 * abs(float(fd)), (float(g), float(fd))


# ------------------------------------------------------------------------------------------
# ERLPBoost (Example 5) against cvxpy + Clarabel
# ------------------------------------------------------------------------------------------
def _lpboost_ref(U, lam, nu):
    t, n = U.shape
    w = cp.Variable(n)
    cons = [cp.sum(w) == 1, w >= 0] + ([w <= nu] if nu is not None else [])
    obj = lam * (-cp.sum(cp.entr(w)) + np.log(n)) + cp.max(U @ w)
    return cp.Problem(cp.Minimize(obj), cons).solve(solver=cp.CLARABEL)


@pytest.mark.parametrize("nu,prox,memory", [(None, Entropic(), "inf"), (0.05, Entropic(), "1"),
                                            (0.05, Euclidean(), "1")])
def test_erlpboost_dual_vs_cvxpy(nu, prox, memory):
    rng = np.random.default_rng(4)
    t, n = 15, 40
    U = np.sign(rng.normal(size=(t, n))) * rng.random((t, n))
    lam = 0.05
    model = ERLPBoost(U, lam, nu=nu)
    sol = jax.jit(lambda m: jp.solve(m, AGM(prox=prox, memory=memory, tol=1e-6, max_steps=20000,
                                            check_every=50)))(model)
    ref = _lpboost_ref(U, lam, nu)
    J = float(_objective(model, sol.params))
    assert bool(sol.converged)
    assert abs(J - ref) <= 1e-6 * abs(ref), (J, ref)
    w = np.asarray(sol.params)
    assert abs(w.sum() - 1) < 1e-12 and (nu is None or w.max() <= nu + 1e-12)


def test_erlpboost_primal_smoothed_linear():
    rng = np.random.default_rng(5)
    U = np.sign(rng.normal(size=(15, 40))) * rng.random((15, 40))
    lam = 0.05
    ref = _lpboost_ref(U, lam, 0.05)
    model = ERLPBoost(U, lam, mu=1e-3, nu=0.05, space="primal")
    sol = jp.solve(model, AGM(memory="1", tol=1e-6, max_steps=20000))
    J = float(_objective(model, sol.params))
    assert J - ref <= float(sol.gap) + 1e-12
    assert float(sol.gap) <= 1e-3 * np.log(15) + 1e-6  # smoothing bias mu log t bounds the gap floor


@pytest.mark.parametrize("lam", [1e12, 1e6])
def test_bias_svm_huge_lam_certificate_is_valid(lam):
    """At a huge lam the dual steps are of order lam / ||X||^2 and the Q2 projection misses the
    hyperplane in floating point; the certificate must still be a dual value of a feasible point
    (it once reported a gap of -0.19, 'converged'). Here w* = O(1/lam), so P* = J(0) to 1e-6 / lam
    scale: the minimal hinge risk of a constant, 2 min(n+, n-) / n."""
    X, y = jp.datasets.load("breast-cancer_scale")
    sol = jp.solve(BiasSVM(X, y, lam), AGM(tol=1e-6), warn=False)
    j0 = 2 * min(np.sum(y > 0), np.sum(y < 0)) / len(y)
    assert bool(sol.converged)
    assert float(sol.gap) >= 0.0
    assert float(sol.dual_value) <= j0 + 1e-12
    assert abs(float(sol.primal_value) - j0) <= 1e-6 * j0


def test_smoothed_bias_svm_dual_derivative_is_nan_not_wrong():
    """AGM on BiasSVM's smoothed dual (mu > 0) reports a polished hinge primal that solves no KKT
    system of the run, so its derivative is not available: NaN (mu is traced inside the solve),
    never the projected-gradient residual's wrong answer; mu = 0 matches central differences."""
    rng = np.random.default_rng(0)
    X = rng.standard_normal((60, 12))
    y = np.sign(X @ rng.standard_normal(12) + 0.3 * rng.standard_normal(60))

    def w(lam, mu):
        return jp.solve(jp.BiasSVM(X, y, lam, mu=mu), jp.AGM(tol=1e-10, max_steps=20000), warn=False).params

    h = 1e-6
    fd = (w(0.05 + h, 0.0) - w(0.05 - h, 0.0)) / (2 * h)
    np.testing.assert_allclose(jax.jacfwd(lambda l: w(l, 0.0))(0.05), fd, rtol=1e-3, atol=1e-4)
    assert bool(jnp.all(jnp.isnan(jax.jacfwd(lambda l: w(l, 0.05))(0.05))))


def test_eager_bias_svm_objective_compiles_its_bias_search_once():
    """``BiasSVM.objective`` / ``bias`` called eagerly (a user's evaluation, not a solve) run the
    exact minimisation over the bias (a while loop) from one compiled function: a second call with
    other weights compiles nothing (a compile counter; an eager loop was traced and compiled anew
    at every call, ~45 ms each), and the values are those of the traced path."""
    X, y = _load("heart_scale")
    model = BiasSVM(X, y, 1e-2)
    n = []
    jax.monitoring.register_event_duration_secs_listener(
        lambda event, _s, **_: n.append(1) if event == "/jax/core/compile/jaxpr_to_mlir_module_duration" else None)
    w1, w2 = jnp.asarray(np.full(X.shape[1], 0.01)), jnp.asarray(np.linspace(-0.1, 0.1, X.shape[1]))
    first = float(model.objective(w1)), float(model.bias(w1))
    before = len(n)
    second = float(model.objective(w2)), float(model.bias(w2))
    assert len(n) == before, "an eager BiasSVM.objective / bias compiled again"
    np.testing.assert_allclose([first, second], [[float(_objective(model, w)), float(jax.jit(lambda m, w: m.bias(w))(model, w))]
                                                 for w in (w1, w2)], rtol=1e-13)


def test_prox_is_a_geometry_object():
    """``AGM(prox=...)`` takes a geometry object; the old strings raise a TypeError naming it, and a
    geometry the model does not support is a ValueError naming the ones it does."""
    with pytest.raises(TypeError, match=r"prox=jaxprox.geometry.Entropic\(\)"):
        AGM(prox="entropic")
    with pytest.raises(TypeError, match=r"prox=jaxprox.geometry.Euclidean\(\)"):
        AGM(prox="euclidean")
    assert AGM(prox=jp.geometry.Entropic()).prox == Entropic()
    prob = jp.ERM(np.eye(3), np.ones(3), jp.losses.Logistic(), jp.penalties.SquaredL2(0.1))
    with pytest.raises(ValueError, match=r"Euclidean\(\)"):
        jp.solve(prob, AGM(prox=Entropic()))
