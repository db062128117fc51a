"""Issue 9: the derivative of a solution, one check per solver family, with respect to lambda AND
the data (two entries of X, one of y), in reverse mode (``jax.grad``) and forward mode
(``jax.jacfwd``), against central finite differences of tightly converged solves.

Every family is differentiated by the same driver mechanism (implicit function theorem on the
solver's fixed-point residual, ``jp.solve``); the test only supplies a problem at which the solution
map is differentiable (strict complementarity holds) and a solver configuration that converges to
machine precision, so that the finite differences are accurate to ~1e-8.

theta = (lam, X[i, j1], X[i, j2], y[i]);  f(theta) = <c, w*(theta)>, c fixed and random.

The data are heart's 13 real features with a continuous target (a fixed linear model plus noise):
a derivative with respect to a label needs a continuous label. For +-1 classification labels
d w*/d y is not defined (labels are discrete, and the exact dual coordinate steps of SDCA, for
instance, assume |y| = 1), so classification losses are differentiated in lam and X only
(tests/test_driver.py, test_pdprox.py, test_block_fw.py, test_agm.py, test_appa.py).
"""
import jax
import jax.flatten_util
import jax.numpy as jnp
import numpy as np
import pytest

import jaxprox as jp
from jaxprox import constraints, losses, penalties

_flat = lambda params: jax.flatten_util.ravel_pytree(params)[0]  # noqa: E731
H = 1e-4  # central-difference step, relative to each coordinate's scale (f is smooth: O(h^2) error)


@pytest.fixture(scope="module")
def heart():
    X, _ = jp.datasets.load("heart_scale", dense=True)
    X = np.asarray(X, float)
    rng = np.random.default_rng(0)
    return X, X @ rng.standard_normal(X.shape[1]) + 0.3 * rng.standard_normal(X.shape[0])


def _check(build, solver, X, y, lam0, rtol=1e-5, wrt_y=True, h=H):
    """build(X, y, lam) -> problem;  F(lam, X, y) = <c, w*(lam, X, y)>.

    The entries compared are lam, the two entries of X and the one of y with the largest reverse-mode
    derivative (entries the solution depends on: a sample in the flat part of a Huber or absolute
    loss, say, has d w*/d y_i = 0 exactly). Reverse mode (one ``jax.grad`` over all the data),
    forward mode (``jax.jvp`` with one-hot tangents) and central differences must all agree.
    The solver runs to machine precision (its duality gap below 1e-12 relative), so that the
    finite differences, whose error is ||w - w*|| / h, are accurate to ~1e-7."""
    X, y = jnp.asarray(X), jnp.asarray(y)
    solve_at = jax.jit(lambda lam, X, y: jp.solve(build(X, y, lam), solver))
    sol0 = solve_at(lam0, X, y)
    assert float(sol0.gap) <= 1e-12 * abs(float(sol0.primal_value)), (solver, float(sol0.gap))
    c = jnp.asarray(np.random.default_rng(0).standard_normal(_flat(sol0.params).size))

    def F(lam, X, y):
        return jnp.vdot(c, _flat(jp.solve(build(X, y, lam), solver).params))

    g_lam, g_X, g_y = jax.jit(jax.grad(F, argnums=(0, 1, 2)))(lam0, X, y)
    (i1, i2), (j1, j2) = np.unravel_index(np.argsort(-np.abs(np.asarray(g_X)).ravel())[:2], X.shape)
    i = int(np.argmax(np.abs(np.asarray(g_y))))
    g_rev = np.array([g_lam, g_X[i1, j1], g_X[i2, j2], g_y[i]])
    one_X = lambda a, b: jnp.zeros_like(X).at[a, b].set(1.0)  # noqa: E731
    tangents = [(1.0, jnp.zeros_like(X), jnp.zeros_like(y)), (0.0, one_X(i1, j1), jnp.zeros_like(y)),
                (0.0, one_X(i2, j2), jnp.zeros_like(y)), (0.0, jnp.zeros_like(X), jnp.zeros_like(y).at[i].set(1.0))]
    jvp = jax.jit(lambda t_lam, t_X, t_y: jax.jvp(F, (lam0, X, y), (t_lam, t_X, t_y))[1])
    g_fwd = np.array([float(jvp(jnp.asarray(t0, X.dtype), tX, ty)) for t0, tX, ty in tangents[:4 if wrt_y else 3]]
                     + [0.0] * (0 if wrt_y else 1))
    fd = np.zeros(4)
    base = (lam0, X[i1, j1], X[i2, j2], y[i])
    for k, (t_lam, t_X, t_y) in enumerate(tangents[:4 if wrt_y else 3]):
        hk = h * max(abs(float(base[k])), 1e-2)
        Fh = [float(jnp.vdot(c, _flat(solve_at(lam0 + s * hk * t_lam, X + s * hk * t_X, y + s * hk * t_y).params)))
              for s in (1.0, -1.0)]
        fd[k] = (Fh[0] - Fh[1]) / (2 * hk)
    if not wrt_y:  # +-1 labels: d w*/d y is not defined
        g_rev, g_fwd, fd = g_rev[:3], g_fwd[:3], fd[:3]
    assert np.all(np.isfinite(g_rev)) and np.all(np.isfinite(g_fwd))
    assert np.all(np.abs(fd) > 1e-6), f"degenerate test point: FD {fd}"
    msg = f"entries lam, X[{i1},{j1}], X[{i2},{j2}], y[{i}]: FD {fd}"
    np.testing.assert_allclose(g_rev, fd, rtol=rtol, err_msg="reverse mode, " + msg)
    np.testing.assert_allclose(g_fwd, fd, rtol=rtol, err_msg="forward mode, " + msg)


def _erm(loss, penalty, constraint=None):
    return lambda X, y, lam: jp.ERM(X, y, loss, penalty(lam), constraint=constraint)  # noqa: E731


def test_fista_lasso(heart):
    solver = jp.FISTA(tol=0.0, atol=-1.0, max_steps=5_000, check_every=100)  # to machine precision
    _check(_erm(losses.Squared(), penalties.L1), solver, *heart, 0.05)


def test_pdprox_huber_l1(heart):
    solver = jp.PDProx("cp", scale=1.4, restart=jp.restarts.FixedRestart(1000), tol=0.0, atol=-1.0, max_steps=40_000, check_every=1000)
    _check(_erm(losses.Huber(1.0), penalties.L1), solver, *heart, 0.05)


def test_block_fw_least_squares_l1_ball(heart):
    # dual_step="curvature" reaches the rounding level of the gap (~1e-15 relative) within 1,000
    # steps (the default step: ~4,500); the default step's derivative is tested in test_block_fw.py
    solver = jp.PDBlockFW(sparsity=8, dual_step=jp.solvers.block_fw.Curvature(), tol=0.0, atol=-1.0, max_steps=1_500, check_every=500)
    _check(_erm(losses.Squared(), penalties.SquaredL2, constraints.L1Ball(3.0)), solver, *heart, 0.05)


def test_agm_huber_elastic_net(heart):
    # fixed L with function-value restart reaches machine precision in w; the adaptive L of
    # Algorithms 2/4 stalls near it (backtracking on rounding-level decreases inflates L_k)
    solver = jp.AGM(tol=0.0, atol=-1.0, max_steps=6_000, check_every=200, adaptive=False, value_restart=True)
    _check(_erm(losses.Huber(1.0), lambda lam: penalties.ElasticNet(lam, 0.5)), solver, *heart, 0.05)


def test_dual_appa_ridge(heart):
    # the APPA family (paper 003); APPA itself is differentiated in lam in tests/test_appa.py
    _check(_erm(losses.Squared(), penalties.SquaredL2), jp.DualAPPA(prox_lam=0.1, tol=1e-13, max_steps=400), *heart, 0.01)


def test_drsvm_incremental_finished():
    """ISG / IPPA (paper 004): a few incremental epochs, then the explicit PDHG finish
    (``Finish(ISG(...), DRSVMPDHG(...))``: restarted PDHG warm started from the epochs' (w, lam,
    averaged dual)) moves the iterate to a saddle point, where the implicit derivative through the
    saddle residual is exact (checked for ISG in eps and X; this also covers
    :class:`jaxprox.DRSVMPDHG`, whose residual and iteration the finish is, and which
    tests/test_drsvm.py differentiates in eps directly). IPPA shares the residual, and
    tests/test_drsvm.py finishes it end to end. Without the finish the averaged dual is not a
    root, so the implicit derivative of the method's own iterate is only approximate."""
    X, y = jp.datasets.load("heart_scale", dense=True)
    X, y = np.asarray(X, float), np.asarray(y, float)
    build = lambda X, y, eps: jp.DRSVM(X, y, norm="l2", kappa=1.0, epsilon=eps, c=0.1)  # noqa: E731
    opts = dict(max_steps=10, check_every=10, tol=0.0)
    solver = jp.Finish(jp.ISG(**opts), jp.DRSVMPDHG(tol=1e-15, max_steps=10_000, check_every=64))
    _check(build, solver, X, y, 0.05, wrt_y=False, h=1e-6)


def test_kink_is_finite(heart):
    """At lam_max = ||X^T y||_inf / n the Lasso solution is exactly zero: the solution map has a kink
    there. The derivative the driver returns must be finite (the least-squares fallback of the
    tangent solve), never NaN."""
    X, y = heart
    lam_max = float(np.max(np.abs(X.T @ y)) / len(y))
    prob = jp.ERM(X, y, losses.Squared(), penalties.L1(lam_max))
    for solver in (jp.FISTA(tol=1e-12, max_steps=2_000, check_every=20),
                   jp.PDProx("cp", tol=1e-10, max_steps=4_000, check_every=200)):
        g = jax.grad(lambda l: jnp.sum(jp.solve(prob.with_lam(l), solver).params))(lam_max)
        assert np.isfinite(float(g)), solver


@pytest.mark.parametrize("make", [lambda: jp.SDCA(tol=1e-11), lambda: jp.DualAPPA(tol=1e-11)], ids=["SDCA", "DualAPPA"])
def test_dual_coordinate_methods_differentiate_the_hinge_svm(make):
    """SDCA and Dual APPA on the hinge SVM (their papers' problem): the loss has no prox-gradient
    residual, so the reported pair ``(w, u)`` is differentiated through the Chambolle-Pock
    residual (it used to raise "Hinge is not smooth"). Reverse and forward mode against central
    differences of AGM solves to a 1e-12 gap (an independent method: its exact active-set polish)."""
    X, y = jp.datasets.load("heart_scale", dense=True)
    X, y = jnp.asarray(X, jnp.float64), jnp.asarray(y, jnp.float64)
    c = jnp.asarray(np.random.default_rng(1).standard_normal(X.shape[1]))
    svm = lambda lam: jp.ERM(X, y, losses.Hinge(), penalties.SquaredL2(lam))  # noqa: E731
    F = lambda lam, S: jnp.vdot(c, jp.solve(svm(lam), S, warn=False).params)  # noqa: E731
    lam0, h = 0.05, 1e-5
    ref = jp.AGM(tol=1e-12)
    fd = (float(F(lam0 + h, ref)) - float(F(lam0 - h, ref))) / (2 * h)
    g_agm = float(jax.grad(F)(lam0, ref))
    solver = make()
    g_rev = float(jax.grad(F)(lam0, solver))
    g_fwd = float(jax.jvp(lambda t: F(t, solver), (lam0,), (1.0,))[1])
    assert abs(fd) > 1e-3
    np.testing.assert_allclose([g_rev, g_fwd], [fd, fd], rtol=1e-4)      # finite differences
    np.testing.assert_allclose([g_rev, g_fwd], [g_agm, g_agm], rtol=1e-6)  # AGM's exact derivative


def test_optimal_value_is_differentiable():
    """``primal_value`` and ``dual_value`` of a solve differentiate as the optimal value
    ``V(theta) = P(w*(theta), theta)`` (the loop evaluates them on a gradient-stopped problem; the
    derivative is attached with the solution's): eager and jitted ``jax.grad``, ``jax.jvp`` and a
    path's ``jax.jacfwd``, against central differences of tightly converged solves. By the
    envelope theorem ``dV/dlam = ||w*||_1`` for the l1 penalty, checked too."""
    X, y = (np.asarray(a, float) for a in jp.datasets.load("heart_scale", dense=True))
    lam = 0.01 * float(np.max(np.abs(X.T @ y)) / (2 * X.shape[0]))
    l1 = lambda t: jp.ERM(X, y, losses.Logistic(), penalties.L1(t))  # noqa: E731
    tight = jp.ProxNewton(tol=1e-13, max_steps=500)
    V = lambda t: jp.solve(l1(t), tight).primal_value  # noqa: E731
    D = lambda t: jp.solve(l1(t), tight).dual_value  # noqa: E731
    h = 1e-4 * lam
    fd = (float(V(lam + h)) - float(V(lam - h))) / (2 * h)
    w1 = float(jnp.sum(jnp.abs(jp.solve(l1(lam), tight).params)))
    assert abs(fd - w1) <= 1e-6 * w1
    for got in (jax.grad(V)(lam), jax.grad(D)(lam), jax.jit(jax.grad(V))(lam), jax.jvp(V, (lam,), (1.0,))[1]):
        assert abs(float(got) - fd) <= 1e-6 * abs(fd), (float(got), fd)
    lams = jnp.asarray([2.0, 1.0]) * lam
    path = jax.jacfwd(lambda ls: jp.solve_path(l1(lam), tight, lams=ls).primal_value)(lams)
    assert abs(float(path[1, 1]) - fd) <= 1e-6 * abs(fd) and abs(float(path[0, 1])) == 0.0
    # a problem of another class, its default solver: the DRSVM's epsilon
    Vd = lambda e: jp.solve(jp.DRSVM(X, y, epsilon=e), jp.DRSVMBarrier(tol=1e-12)).primal_value  # noqa: E731
    fd_d = (float(Vd(0.1 + 1e-5)) - float(Vd(0.1 - 1e-5))) / 2e-5
    assert abs(float(jax.grad(Vd)(0.1)) - fd_d) <= 1e-5 * abs(fd_d), (float(jax.grad(Vd)(0.1)), fd_d)
