"""Tests of paper 003: SDCA, SVRG, APPA (Alg. 1, 2), Dual APPA (Alg. 3 / §5.1), SGD.

References are independent: closed-form least squares / ridge (numpy), scikit-learn
LogisticRegression (newton-cg, tight tol; C = 1/(n lam), C = inf for the un-regularised problem),
scipy scalar minimisation for the coordinate steps, central finite differences for derivatives.
"""
import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy.optimize import minimize_scalar

import jaxprox as jp
from jaxprox.baselines.sgd import SGD
from jaxprox.losses import Logistic, SmoothedHinge, Squared
from jaxprox.penalties import SquaredL2
from jaxprox.certificates import suboptimality_bound
from jaxprox.solvers.appa import APPA, SDCA, SVRG, DualAPPA
from jaxprox.solvers.sdca import coordinate_update, sdca_epoch


@pytest.fixture(scope="module")
def heart():
    return jp.datasets.load("heart_scale")


def sk_logistic(X, y, lam):
    from sklearn.linear_model import LogisticRegression

    C = np.inf if lam == 0 else 1.0 / (X.shape[0] * lam)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m = LogisticRegression(C=C, fit_intercept=False, tol=1e-13, max_iter=100000,
                               solver="newton-cg").fit(X, y)
    w = m.coef_.ravel()
    return w, np.mean(np.logaddexp(0.0, -y * (X @ w))) + 0.5 * lam * w @ w


def ridge(X, y, lam):
    n, d = X.shape
    if lam == 0:
        w = np.linalg.lstsq(X, y, rcond=None)[0]
    else:
        w = np.linalg.solve(X.T @ X / n + lam * np.eye(d), X.T @ y / n)
    return w, 0.5 * np.mean((X @ w - y) ** 2) + 0.5 * lam * w @ w


def manual_gap(X, y, loss, lam, w, u):
    """P(w) - D(u) written out from the definitions (SDCA's dual, margin convention)."""
    z = X @ w
    n = X.shape[0]
    if loss == "squared":
        P = 0.5 * np.mean((z - y) ** 2)
        conj = 0.5 * u**2 + y * u
    elif loss == "logistic":
        P = np.mean(np.logaddexp(0.0, -y * z))
        p = np.clip(-y * u, 0, 1)
        with np.errstate(divide="ignore", invalid="ignore"):
            conj = np.where(p > 0, p * np.log(p), 0) + np.where(p < 1, (1 - p) * np.log(1 - p), 0)
    else:  # smoothed hinge mu = 0.5
        r = 1 - y * z
        P = np.mean(np.where(r <= 0, 0, np.where(r <= 0.5, r**2 / 1.0, r - 0.25)))
        p = -y * u
        conj = -p + 0.25 * p**2
    v = X.T @ u / n
    return P + 0.5 * lam * w @ w - (-np.mean(conj) - v @ v / (2 * lam))


# ------------------------------------------------------------------ coordinate steps (note §3)
@pytest.mark.parametrize("name", ["squared", "logistic", "smoothed_hinge"])
def test_coordinate_update_is_exact(name):
    loss = {"squared": Squared(), "logistic": Logistic(), "smoothed_hinge": SmoothedHinge(0.5)}[name]
    rng = np.random.default_rng(0)
    f = jax.jit(lambda u, z, y, q: coordinate_update(loss, u, z, y, q))
    for _ in range(20):
        y = float(rng.choice([-1.0, 1.0]))
        z = float(rng.normal() * 3)
        q = float(10 ** rng.uniform(-3, 3))
        u = -y * float(rng.uniform(0, 1)) if name != "squared" else float(rng.normal())
        v = float(f(u, z, y, q))
        conj = lambda t: float(loss.conjugate(jnp.asarray(t), jnp.asarray(y)))
        h = lambda t: conj(t) - (t - u) * z + 0.5 * q * (t - u) ** 2
        if name == "squared":
            ref = minimize_scalar(h, bracket=(u - 10, u + 10), tol=1e-12).x
        else:  # dual domain -y * [0, 1]
            lo, hi = sorted([0.0, -y])
            ref = minimize_scalar(h, bounds=(lo, hi), method="bounded", options={"xatol": 1e-12}).x
        assert h(v) <= h(ref) + 1e-10
        assert abs(v - ref) < 1e-5


def test_sdca_one_example_exact():
    """n = 1, a = [1], b = 1, lam = 1: one step solves argmin (x-1)^2/2 + x^2/2 (note §3.2)."""
    pr = jp.ERM(np.ones((1, 1)), np.ones(1), Squared(), penalty=SquaredL2(1.0))
    u, w = sdca_epoch(pr, jnp.zeros(1), jnp.zeros(1), jnp.asarray(1.0), jnp.zeros(1, jnp.int32))
    np.testing.assert_allclose(np.asarray(w), [0.5], atol=1e-15)
    np.testing.assert_allclose(np.asarray(u), [-0.5], atol=1e-15)


# ------------------------------------------------------------------ SDCA / SVRG on ridge problems
@pytest.mark.parametrize("name", ["squared", "logistic", "smoothed_hinge"])
def test_sdca_svrg_regularised(heart, name):
    X, y = heart
    n = X.shape[0]
    lam = 1e-2
    loss = {"squared": Squared(), "logistic": Logistic(), "smoothed_hinge": SmoothedHinge(0.5)}[name]
    pr = jp.ERM(X, y, loss, penalty=SquaredL2(lam))
    sol = jp.solve(pr, SDCA(tol=1e-11, max_steps=400))
    assert bool(sol.converged)
    w, u = np.asarray(sol.params), np.asarray(sol.dual)
    # SDCA's gap matches its definition: P(x) - D at the reported x (the best w(u) seen), D the
    # larger dual value of the returned duals u and of l'(A x), written out here in numpy, and
    # equals the smaller of problem.certificate(x, u) and problem.certificate(x)
    z = X @ w
    r = 1 - y * z
    u_x = {"squared": lambda: z - y, "logistic": lambda: -y / (1 + np.exp(y * z)),
           "smoothed_hinge": lambda: -y * np.clip(r / 0.5, 0, 1)}[name]()
    manual = min(manual_gap(X, y, name, lam, w, u), manual_gap(X, y, name, lam, w, u_x))
    np.testing.assert_allclose(float(sol.gap), manual, rtol=1e-6, atol=1e-13)
    cert = min(float(pr.certificate(sol.params, sol.dual)[2]), float(pr.certificate(sol.params)[2]))
    np.testing.assert_allclose(cert, float(sol.gap), atol=1e-14)
    # the reported point is no worse than the primal point of the returned duals, w(u) = -A^T u/(n lam)
    assert float(pr.objective(w)) <= float(pr.objective(-X.T @ u / (n * lam))) + 1e-15
    ref = {"squared": lambda: ridge(X, y, lam)[1], "logistic": lambda: sk_logistic(X, y, lam)[1]}
    sv = jp.solve(pr, SVRG(tol=1e-11, max_steps=400))
    assert bool(sv.converged)
    F_ref = ref[name]() if name in ref else float(sv.primal_value)
    assert abs(float(sol.primal_value) - F_ref) <= 1e-6 * abs(F_ref)
    assert abs(float(sv.primal_value) - F_ref) <= 1e-6 * abs(F_ref)


def test_sdca_gap_midway_and_monotone_dual(heart):
    """Before convergence the reported gap still equals P(x) - D (x the best w(u) seen, D the larger
    dual value of u and l'(A x)); D increases along epochs. (Two epochs: with the Newton step of
    the reported point, newton_polish, the gap reaches rounding level in four.)"""
    X, y = heart
    lam = 1e-3
    pr = jp.ERM(X, y, Logistic(), penalty=SquaredL2(lam))
    sol = jp.solve(pr, SDCA(tol=0.0, max_steps=2), warn=False)
    u, x = np.asarray(sol.dual), np.asarray(sol.params)
    w_u = -X.T @ u / (X.shape[0] * lam)  # w(u), recomputed independently of the solver's running w
    assert float(pr.objective(x)) <= float(pr.objective(w_u)) + 1e-15  # the best point seen
    u_x = -y / (1 + np.exp(y * (X @ x)))
    manual = min(manual_gap(X, y, "logistic", lam, x, u), manual_gap(X, y, "logistic", lam, x, u_x))
    np.testing.assert_allclose(float(sol.gap), manual, rtol=1e-10)
    assert float(sol.gap) > 1e-6
    d = np.asarray(sol.trace.dual)[: int(sol.trace.count)]
    assert np.all(np.diff(d) >= -1e-14)


# ------------------------------------------------------------------ jit / vmap / grad
# ------------------------------------------------------------------ un-regularised ERM
UNREG = [
    ("appa-svrg", lambda: APPA(prox_lam=0.1, inner=SVRG(), accelerated=False, tol=1e-9, max_steps=600)),
    ("appa-sdca", lambda: APPA(prox_lam=0.1, inner=SDCA(), accelerated=False, tol=1e-9, max_steps=600)),
    ("accel-appa-svrg", lambda: APPA(prox_lam=1.0, inner=SVRG(), accelerated=True, mu=1e-3, tol=1e-9,
                                     max_steps=600)),
    ("dual-appa", lambda: DualAPPA(prox_lam=0.1, tol=1e-9, max_steps=600)),
]


@pytest.mark.parametrize("name,make", UNREG, ids=[u[0] for u in UNREG])
def test_unregularised_logistic(heart, name, make):
    X, y = heart
    pr = jp.ERM(X, y, Logistic())
    sol = jp.solve(pr, make())
    _, F_ref = sk_logistic(X, y, 0.0)
    assert bool(sol.converged)
    assert abs(float(sol.primal_value) - F_ref) <= 1e-6 * F_ref
    # the certificate is honest: it bounds the true suboptimality
    assert float(sol.primal_value) - F_ref <= float(sol.gap) + 1e-13


LS = [
    ("accel-appa-svrg", lambda: APPA(prox_lam=1e-2, accelerated=True, mu=3e-4, tol=1e-7, max_steps=800)),
    ("dual-appa", lambda: DualAPPA(prox_lam=1e-2, tol=1e-8, max_steps=600)),
]


@pytest.mark.parametrize("name,make", LS, ids=[u[0] for u in LS])
def test_unregularised_least_squares(name, make):
    """a1a: rank-deficient design (one-hot groups), smallest positive eigenvalue of A^T A/n 3.4e-4
    (ill-conditioned); the least-squares value is still reached and certified."""
    X, y = jp.datasets.load("a1a")
    pr = jp.ERM(X, y, Squared())
    sol = jp.solve(pr, make())
    _, F_ref = ridge(np.asarray(X), y, 0.0)
    assert bool(sol.converged)
    assert abs(float(sol.primal_value) - F_ref) <= 1e-6 * F_ref
    assert float(sol.primal_value) - F_ref <= float(sol.gap) * (1 + 1e-6) + 1e-13


def test_lightly_regularised_logistic_without_attained_optimum():
    """a1a (the bundled slice of a9a): 25 features occur in one class only, so the un-regularised
    logistic infimum is not attained; with a light penalty (lam0/2)||w||^2 the optimum is finite
    and Dual APPA reaches it (reference: sklearn with C = 1/(n lam0)) to 1e-6, certified."""
    X, y = jp.datasets.load("a1a")
    one_class = [j for j in range(X.shape[1]) if (X[:, j] != 0).any() and len(np.unique(y[X[:, j] != 0])) == 1]
    assert len(one_class) > 0
    lam0 = 1e-4
    w_ref, F_ref = sk_logistic(X, y, lam0)
    pr = jp.ERM(X, y, Logistic(), penalty=SquaredL2(lam0))
    sol = jp.solve(pr, DualAPPA(prox_lam=1e-3, tol=1e-7, max_steps=200, check_every=5))
    assert bool(sol.converged)
    assert abs(float(sol.primal_value) - F_ref) <= 1e-6 * F_ref
    assert float(sol.primal_value) - F_ref <= float(sol.gap) + 1e-13
    np.testing.assert_allclose(np.asarray(sol.params), w_ref, atol=2e-2 * np.linalg.norm(w_ref))


def test_certificate_is_an_upper_bound(heart):
    X, y = heart
    w_star, F_log = sk_logistic(X, y, 0.0)
    ws, F_ls = ridge(X, y, 0.0)
    rng = np.random.default_rng(1)
    pl, ps = jp.ERM(X, y, Logistic()), jp.ERM(X, y, Squared())
    bl = jax.jit(lambda w: suboptimality_bound(pl, w))
    bs = jax.jit(lambda w: suboptimality_bound(ps, w))
    for scale in (1e-4, 1e-2, 1e-1, 1.0):
        dw = scale * rng.normal(size=X.shape[1])
        assert float(pl.objective(w_star + dw)) - F_log <= float(bl(w_star + dw)) * (1 + 1e-9) + 1e-14
        np.testing.assert_allclose(float(bs(ws + dw)), float(ps.objective(ws + dw)) - F_ls, rtol=1e-6)
    assert np.isinf(float(bl(jnp.zeros(X.shape[1]))))  # far away: nothing certified


def test_wide_data_certificate_without_the_d_by_d_eigenproblem():
    """d > n (the colon shape): the Hessian's smallest eigenvalue is the ridge lam0 (on null(A)),
    so the curvature bound is ||g||^2 / (2 lam0) -- an upper bound on the true suboptimality,
    against scikit-learn -- and with a zero ridge the eigenvalue route still runs (exact for least
    squares)."""
    rng = np.random.default_rng(3)
    n, d, lam = 30, 80, 1e-2
    X = rng.standard_normal((n, d))
    y = np.where(X[:, 0] + 0.5 * rng.standard_normal(n) > 0, 1.0, -1.0)
    w_star, F_star = sk_logistic(X, y, lam)
    pr = jp.ERM(X, y, Logistic(), SquaredL2(lam))
    bound = jax.jit(lambda w: suboptimality_bound(pr, w))
    for scale in (1e-3, 1e-1, 1.0):
        w = w_star + scale * rng.standard_normal(d)
        g = X.T @ (-y / (1 + np.exp(y * (X @ w)))) / n + lam * w
        b = float(bound(w))
        assert float(pr.objective(w)) - F_star <= b * (1 + 1e-9) + 1e-14
        # exactly the smaller of the duality gap and the cheap curvature bound (no eigenvalues)
        np.testing.assert_allclose(b, min(float(pr.certificate(jnp.asarray(w))[2]), g @ g / (2 * lam)), rtol=1e-9)
    sol = jp.solve(pr, APPA(tol=1e-8))
    assert sol.status_name == "converged" and abs(float(sol.primal_value) - F_star) <= 1e-7 * F_star
    zero = jp.ERM(X, y, Squared(), SquaredL2(0.0))    # lam0 = 0: the eigenvalue route, exact for
    w = rng.standard_normal(d)                          # least squares (F* = 0: d > n interpolates)
    np.testing.assert_allclose(float(suboptimality_bound(zero, jnp.asarray(w))), float(zero.objective(w)), rtol=1e-6)


def test_stochastic_budget_follows_the_data(heart, monkeypatch):
    """max_steps=None (the default of SDCA, SVRG, APPA, Dual APPA): SAMPLE_STEP_BUDGET sequential
    sample steps, clipped to [200, 20,000] steps; an explicit max_steps is kept; the budget is the
    one the solve runs and reports."""
    from jaxprox.defaults import SAMPLE_STEP_BUDGET, STEPS_CAP, STEPS_FLOOR

    X, y = heart
    pr = jp.ERM(X, y, Logistic(), SquaredL2(1e-4))
    n = X.shape[0]
    assert SDCA().budgeted(pr).max_steps == SVRG().budgeted(pr).max_steps == SAMPLE_STEP_BUDGET // n
    assert APPA(inner=SDCA()).budgeted(pr).max_steps == SAMPLE_STEP_BUDGET // (3 * n)
    assert DualAPPA(inner_epochs=2).budgeted(pr).max_steps == SAMPLE_STEP_BUDGET // (2 * n)
    assert SDCA(max_steps=7).budgeted(pr).max_steps == 7
    big = jp.ERM(np.ones((SAMPLE_STEP_BUDGET // 100, 1)), np.ones(SAMPLE_STEP_BUDGET // 100), Logistic(),
                 SquaredL2(1.0))
    tiny = jp.ERM(X[:2], y[:2], Logistic(), SquaredL2(1.0))
    assert SVRG().budgeted(big).max_steps == STEPS_FLOOR and SVRG().budgeted(tiny).max_steps == STEPS_CAP
    assert jp.ProxNewton().budgeted(pr).max_steps == jp.ProxNewton(max_steps=None).budgeted(pr).max_steps == 500
    # FISTA: ITERATION_WORK_BUDGET entries of A read, clipped to [10,000, 200,000] iterations
    wide = jp.ERM(np.ones((60, 5000)), np.ones(60), Logistic(), SquaredL2(1.0))
    assert jp.FISTA().budgeted(pr).max_steps == 200_000
    assert jp.FISTA().budgeted(wide).max_steps == jp.defaults.ITERATION_WORK_BUDGET // (60 * 5000)
    assert jp.AGM().budgeted(pr).max_steps == 120_000
    monkeypatch.setattr(jp.defaults, "ITERATION_WORK_BUDGET", 1000 * n * X.shape[1])
    assert jp.FISTA().budgeted(pr).max_steps == 10_000
    monkeypatch.setattr(jp.defaults, "SAMPLE_STEP_BUDGET", 30 * n)   # a short run that stops at its budget
    monkeypatch.setattr(jp.defaults, "STEPS_FLOOR", 1)
    with pytest.warns(jp.ConvergenceWarning, match="max_steps=30 epochs"):
        sol = jp.solve(pr, SDCA(tol=0.0, atol=-1.0))
    assert int(sol.steps) == 30 and sol.status_name == "max_steps"


def test_dual_appa_invariants(heart):
    """After each stage x_t = x_{t-1} - A^T u_t/(n lam) and, after re-centring, w = 2 x_t - x_{t-1}
    = x_t - A^T u_t/(n lam) (note §7)."""
    X, y = heart
    n = X.shape[0]
    pr = jp.ERM(X, y, Logistic())
    S = DualAPPA(prox_lam=0.5)
    step = jax.jit(lambda s: S.step(pr, s))
    s = S.init(pr)
    for _ in range(3):
        s_new = step(s)
        x_prev, x, u = np.asarray(s.s), np.asarray(s_new.s), np.asarray(s_new.u)
        np.testing.assert_allclose(x, x_prev - X.T @ u / (n * 0.5), atol=1e-12)
        np.testing.assert_allclose(np.asarray(s_new.w), 2 * x - x_prev, atol=1e-12)
        s = s_new
    # same key, same run
    np.testing.assert_array_equal(np.asarray(step(S.init(pr)).w), np.asarray(step(S.init(pr)).w))


def test_appa_descent_and_grad_of_least_squares(heart):
    """APPA (SDCA oracle, safeguarded) never increases F; the implicit derivative of the
    least-squares solution w.r.t. the labels is pinv(X) (closed form)."""
    X, y = heart
    pr = jp.ERM(X, y, Squared())
    sol = jp.solve(pr, APPA(prox_lam=0.1, inner=SDCA(), accelerated=False, tol=1e-10, max_steps=300))
    P = np.asarray(sol.trace.primal)[: int(sol.trace.count)]
    assert np.all(np.diff(P) <= 1e-15)
    f = lambda yy: jp.solve(jp.ERM(X, yy, Squared()), DualAPPA(prox_lam=0.1, tol=1e-12, max_steps=500)).params
    v = np.random.default_rng(2).normal(size=y.shape)
    _, jv = jax.jit(lambda yy, vv: jax.jvp(f, (yy,), (vv,)))(jnp.asarray(y), jnp.asarray(v))
    np.testing.assert_allclose(np.asarray(jv), np.linalg.pinv(X) @ v, rtol=1e-6, atol=1e-8)


def test_sgd_runs_and_certifies(heart):
    X, y = heart
    pr = jp.ERM(X, y, Logistic(), penalty=SquaredL2(1e-2))
    sol = jp.solve(pr, SGD(step0=1.0, max_steps=30))
    _, F_ref = sk_logistic(X, y, 1e-2)
    assert float(sol.primal_value) - F_ref <= float(sol.gap) + 1e-14
    assert float(sol.primal_value) - F_ref < 1e-2


@pytest.mark.parametrize("solver", [SDCA, DualAPPA])
def test_plain_svm_reported_point_is_the_polished_exact_solution(solver):
    """Hinge + (lam/2)||w||^2 (the plain SVM): the dual coordinate methods report the active-set
    polish of their iterate once it identifies the support (refine), with its own dual point: an
    exact saddle pair (certified gap at rounding level, where SDCA alone stops at 1e-7 after twice
    the epochs), the Clarabel objective, and a dual point in the hinge's box that maps to x."""
    import cvxpy as cp

    from jaxprox.losses import Hinge

    X, y = (np.asarray(a, np.float64) for a in jp.datasets.load("breast-cancer_scale", dense=True))
    n, d = X.shape
    lam = 0.1 / n
    w = cp.Variable(d)
    ref = cp.Problem(cp.Minimize(cp.sum(cp.pos(1 - cp.multiply(y, X @ w))) / n + lam / 2 * cp.sum_squares(w)))
    ref.solve(solver=cp.CLARABEL, tol_gap_abs=1e-12, tol_gap_rel=1e-12, tol_feas=1e-12)
    pr = jp.ERM(X, y, Hinge(), penalty=SquaredL2(lam))
    sol = jp.solve(pr, solver(tol=1e-12, max_steps=1000))
    assert sol.converged and float(sol.gap) <= 1e-12 * abs(float(sol.primal_value))
    np.testing.assert_allclose(float(sol.primal_value), ref.value, rtol=1e-9)
    x, u = np.asarray(sol.params), np.asarray(sol.dual)
    assert np.all(-y * u >= -1e-15) and np.all(-y * u <= 1 + 1e-15)  # in the hinge's dual box
    np.testing.assert_allclose(x, -X.T @ u / (n * lam), atol=1e-9)  # the pair is a saddle point


@pytest.mark.parametrize("solver", [SDCA, DualAPPA])
def test_smooth_loss_reported_point_follows_newton_on_unscaled_columns(solver):
    """Logistic + (lam/2)||w||^2 on australian (columns in units 1 .. 1e5): the dual coordinate
    ascent alone ends 0.3 .. 0.9 relative above the optimum after thousands of epochs (its rate is
    set by A A^T, which no rescaling of w changes: dual_unscaled.md); the reported point takes a
    damped Newton step at every check (newton_polish), so the default solve converges to the
    scikit-learn optimum with an honest gap and the certificate of a smooth loss (x alone, the
    dual point l'(A x))."""
    X, y = (np.asarray(a, np.float64) for a in jp.datasets.load("australian", dense=True))
    n = X.shape[0]
    for lam in (10.0 / n, 0.1 / n):
        w_ref, F_ref = sk_logistic(X, y, lam)
        pr = jp.ERM(X, y, Logistic(), penalty=SquaredL2(lam))
        sol = jp.solve(pr, solver(tol=1e-9))
        assert bool(sol.converged) and int(sol.steps) <= 20
        F = float(pr.objective(sol.params))
        assert abs(F - F_ref) <= 1e-9 * F_ref and F - F_ref <= float(sol.gap) + 1e-12
        np.testing.assert_allclose(np.asarray(sol.params), w_ref, rtol=1e-5, atol=1e-8)


def test_suboptimality_bound_scores_extra_duals_in_its_gap(heart):
    """``suboptimality_bound(problem, w, duals=(u,))`` (Dual APPA's and SDCA's certificates pass
    their running duals) is ``min(max(P(w) - max(D(l'(A w)), D(u)), 0), curvature bound)``: the
    extra dual point tightens the duality gap, and the bound stays above the true ``P(w) - P*``."""
    from jaxprox.certificates import curvature_bound

    X, y = heart
    P = jp.ERM(X, y, Logistic(), SquaredL2(1e-2))
    sol = jp.solve(P, jp.FISTA(tol=1e-12))
    w = np.asarray(sol.params) + 0.05
    u = P.loss.dual_point(P.A.mv(np.asarray(sol.params)), P.y)  # nearly optimal: tighter than w's own
    Aw = P.A.mv(w)
    Pw = float(P.objective(w))
    d1, d2 = float(P.dual_value(P.loss.dual_point(Aw, P.y))), float(P.dual_value(u))
    assert d2 > d1
    g = P.A.rmv(P.loss.grad(Aw, P.y)) / P.n + 1e-2 * w
    curv = float(curvature_bound(P, Aw, g, jnp.asarray(1e-2)))
    got = float(suboptimality_bound(P, w, duals=(u,)))
    np.testing.assert_allclose(got, min(max(Pw - max(d1, d2), 0.0), curv), rtol=1e-10)
    assert got < float(suboptimality_bound(P, w)) and got >= Pw - float(sol.primal_value) - 1e-12


def test_string_options_are_refused_with_the_object_to_pass():
    """``inner=`` and ``sampling=`` take component objects; the old strings raise a TypeError naming
    the object to pass."""
    with pytest.raises(TypeError, match=r"inner=jaxprox.SDCA\(\)"):
        APPA(inner="sdca")
    with pytest.raises(TypeError, match=r"inner=jaxprox.SVRG\(\)"):
        APPA(inner="svrg")
    for cls in (SDCA, SVRG, DualAPPA, SGD):
        with pytest.raises(TypeError, match=r"sampling=jaxprox.sampling.Permutation\(\)"):
            cls(sampling="permutation")
    with pytest.raises(TypeError, match=r"jaxprox.sampling.Importance\(\)"):
        SVRG(sampling="importance")
    assert APPA(inner=SDCA(batch=1)).inner.batch == 1 and isinstance(APPA().inner, SVRG)
