"""Mini-batch SDCA / Dual APPA (the accelerator route of ``jaxprox.solvers.appa``, batch forced on
this CPU): same optimum as ProxNewton at a tight tolerance, monotone dual ascent (also with the
aggressive ``beta = 1``, where the step-length safeguard must act), ESO quantities against their
definitions, jit / vmap over lam / grad / float32, and ``batch="auto"`` is sequential on a CPU."""
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxprox as jp
from jaxprox.losses import Logistic, SmoothedHinge, Squared
from jaxprox.penalties import SquaredL2
from jaxprox.base import data_platform
from jaxprox.components.minibatch import auto_batch_size, eso_beta, row_normalised_sigma
from jaxprox.solvers.dual_appa import DualAPPA
from jaxprox.solvers.sdca import SDCA, sdca_minibatch_epoch

LOSSES = {"logistic": Logistic(), "squared": Squared(), "smoothed_hinge": SmoothedHinge(0.5)}
LAM = 1e-2


@pytest.fixture(scope="module")
def heart():
    X, y = jp.datasets.load("heart_scale")
    return jnp.asarray(X), jnp.asarray(y)


@pytest.fixture(scope="module")
def reference(heart):
    """ProxNewton optimum of each loss + SquaredL2(LAM), certified to a relative gap 1e-13."""
    out = {}
    for name, loss in LOSSES.items():
        sol = jp.solve(jp.ERM(*heart, loss, SquaredL2(LAM)), jp.ProxNewton(tol=1e-13, max_steps=200))
        assert bool(sol.converged)
        out[name] = float(sol.primal_value)
    return out


@pytest.mark.parametrize("name", list(LOSSES))
@pytest.mark.parametrize("cls,b", [(SDCA, 16), (SDCA, 64), (DualAPPA, 16), (DualAPPA, 64)])
def test_minibatch_reaches_the_optimum(heart, reference, name, cls, b):
    pr = jp.ERM(*heart, LOSSES[name], SquaredL2(LAM))
    sol = jp.solve(pr, cls(batch=b, tol=1e-11, max_steps=3000))
    assert bool(sol.converged)
    f = float(sol.primal_value)
    assert abs(f - reference[name]) <= 1e-8 * abs(reference[name])
    assert f - reference[name] <= float(sol.gap) + 1e-14   # the certificate bounds the true error
    assert np.all(np.isfinite(np.asarray(sol.params)))


def _epochs(pr):
    """The jitted mini-batch epoch of ``pr`` (SDCA: Lam = lam, centre 0), ``b`` static and ``beta``
    an argument: one compilation per batch size, shared by the runs with different ``beta``."""
    lam = pr.penalty.lam
    return jax.jit(lambda u, w, key, b, beta: sdca_minibatch_epoch(
        pr, u, w, lam, jax.random.permutation(key, pr.n).astype(jnp.int32), b, beta), static_argnums=3)


def _dual_values(pr, epoch, b, beta, epochs):
    """D(u) after each of ``epochs`` mini-batch epochs ``epoch = _epochs(pr)``."""
    lam = pr.penalty.lam
    u, w = jnp.zeros(pr.n), jnp.zeros(pr.d)
    vals = [float(pr.dual_objective(u))]
    for key in jax.random.split(jax.random.PRNGKey(1), epochs):
        u, w = epoch(u, w, key, b, beta)
        vals.append(float(pr.dual_objective(u)))
    np.testing.assert_allclose(np.asarray(w), np.asarray(-pr.A.rmv(u) / (pr.n * lam)), atol=1e-12)
    return np.array(vals)


@pytest.mark.parametrize("name", list(LOSSES))
def test_dual_never_decreases(heart, name):
    """Monotone ascent with the ESO factor and with the naive ``beta = 1`` (sum of the b single-
    coordinate steps, which overshoots on correlated rows: the safeguard ``t = min(1, P/Q)``
    keeps it monotone); the ESO run ends higher than its start by a wide margin."""
    pr = jp.ERM(*heart, LOSSES[name], SquaredL2(1e-3))
    sigma = row_normalised_sigma(pr.A)
    epoch = _epochs(pr)
    for b, beta in ((16, eso_beta(16, sigma, pr.n)), (64, eso_beta(64, sigma, pr.n)), (64, jnp.ones(()))):
        d = _dual_values(pr, epoch, b, beta, 25)
        assert np.all(np.diff(d) >= -1e-13 * np.abs(d[1:])), (b, float(beta), np.diff(d).min())
        assert d[-1] > d[1] > d[0]


def test_eso_quantities(heart):
    """sigma against numpy's eigenvalue of the row-normalised Gram; beta_b's end points; the
    mini-batch inequality ``||A_S^T h||^2 <= b sum ||a_i||^2 h_i^2`` behind ``beta = b``; the
    automatic batch size."""
    X = np.asarray(heart[0])
    Xn = X / np.linalg.norm(X, axis=1, keepdims=True)
    sigma_np = np.linalg.eigvalsh(Xn @ Xn.T)[-1]
    pr = jp.ERM(*heart, Logistic(), SquaredL2(LAM))
    sigma = float(row_normalised_sigma(pr.A))
    assert abs(sigma - sigma_np) <= 1e-8 * sigma_np
    assert float(eso_beta(1, sigma, 270)) == 1.0 and abs(float(eso_beta(270, sigma, 270)) - sigma) < 1e-9
    rng = np.random.default_rng(0)
    S, h = rng.choice(270, 64, replace=False), rng.standard_normal(64)
    assert np.sum((X[S].T @ h) ** 2) <= 64 * np.sum(np.sum(X[S] ** 2, axis=1) * h**2)
    assert auto_batch_size(270, sigma) == 16          # beta_16 = 5.9 <= 8 < beta_32 = 11
    assert auto_batch_size(1000, None) == 8           # sigma unknown: worst case beta_b = b
    assert auto_batch_size(5, 1.0) == 4               # orthogonal rows: capped by n


def test_auto_is_sequential_on_cpu_and_bit_identical(heart):
    pr = jp.ERM(*heart, Logistic(), SquaredL2(LAM))
    assert data_platform(pr) == "cpu"
    for cls in (SDCA, DualAPPA):
        assert cls()._resolved(pr).batch == 1
        a = jp.solve(pr, cls(tol=1e-9))
        b = jp.solve(pr, cls(tol=1e-9, batch=1))
        assert np.array_equal(np.asarray(a.params), np.asarray(b.params)) and int(a.steps) == int(b.steps)
    with pytest.raises(ValueError, match="sequential-only"):
        jp.solve(pr, SDCA(batch=16, sampling=jp.sampling.Importance()))
    with pytest.raises(ValueError, match="batch must be"):
        jp.solve(pr, DualAPPA(batch=0))


def test_platform_of_a_traced_problem_follows_default_device(heart):
    """Inside the user's jit the data are traced: the platform is that of an enclosing
    ``jax.default_device`` (a host-CPU solve on a GPU machine ran the accelerator's lock-step path
    when it was read from ``jax.default_backend()``), else the default backend."""
    seen = {}

    def f(X, y):
        pr = jp.ERM(X, y, Logistic(), SquaredL2(LAM))
        seen["plain"] = data_platform(pr)
        with jax.default_device("gpu"):  # a platform name is enough: nothing is dispatched here
            seen["named"] = data_platform(pr)
        with jax.default_device(jax.devices("cpu")[0]):
            seen["device"] = data_platform(pr)
        return X.sum()

    jax.jit(f)(*heart)
    assert seen == {"plain": jax.default_backend(), "named": "gpu", "device": "cpu"}


def test_jit_and_vmap_over_lam_with_batch_forced(heart):
    pr = jp.ERM(*heart, Logistic(), SquaredL2(LAM))
    sv = DualAPPA(batch=16, tol=1e-11, max_steps=500)
    w = jp.solve(pr, sv).params
    np.testing.assert_allclose(jax.jit(lambda p: jp.solve(p, sv).params)(pr), w, rtol=1e-12, atol=1e-14)
    lams = jnp.array([1e-2, 3e-2, 1e-1])
    sdca = SDCA(batch=16, tol=1e-11, max_steps=3000)
    sols = jax.vmap(lambda lam: jp.solve(pr.with_lam(lam), sdca))(lams)
    assert bool(jnp.all(sols.converged))
    for k, lam in enumerate(lams):
        ref = float(jp.solve(pr.with_lam(lam), jp.ProxNewton(tol=1e-13)).primal_value)
        f = float(pr.with_lam(lam).objective(sols.params[k]))
        # both at the optimum to rounding (the Newton step of the reported point): f may be below ref by it
        assert -1e-15 * ref <= f - ref <= 1e-9 * ref and f - ref <= float(sols.gap[k]) + 1e-15


def test_grad_with_batch_forced(heart):
    pr = jp.ERM(*heart, Logistic(), SquaredL2(LAM))
    sv = DualAPPA(batch=16, tol=1e-12, max_steps=500)
    def val(lam):  # validation loss of the solution, d/dlam by the implicit adjoint
        w = jp.solve(pr.with_lam(lam), sv).params
        return jnp.mean(jax.nn.softplus(-heart[1][:50] * (heart[0][:50] @ w)))

    g = float(jax.grad(val)(LAM))
    h = 1e-5
    fd = (float(val(LAM + h)) - float(val(LAM - h))) / (2 * h)
    assert abs(g - fd) <= 1e-3 * abs(fd)   # central differences of solves to a gap of 1e-12


def test_float32_with_batch_forced(heart):
    X32, y32 = heart[0].astype(jnp.float32), heart[1].astype(jnp.float32)
    pr32 = jp.ERM(X32, y32, Logistic(), SquaredL2(LAM))
    pr64 = jp.ERM(*heart, Logistic(), SquaredL2(LAM))
    f_star = float(jp.solve(pr64, jp.ProxNewton(tol=1e-13)).primal_value)
    for sv in (SDCA(batch=16, tol=1e-5), DualAPPA(batch=64, tol=1e-5)):
        sol = jp.solve(pr32, sv)
        assert sol.params.dtype == jnp.float32 and bool(sol.converged)
        f = float(pr64.objective(sol.params.astype(jnp.float64)))
        assert 0 <= f - f_star <= float(sol.gap) + 1e-6 * f_star   # honest up to float32 rounding


def test_appa_runs_the_inner_sdca_own_minibatch_epochs(heart):
    """``APPA(inner=SDCA(batch=b))`` runs SDCA's own epochs, mini-batches included: the inner solver
    is prepared and hoisted with the problem (its ESO factor computed once) and the run reaches the
    optimum as the sequential inner solver does, along another path."""
    pr = jp.ERM(*heart, Logistic(), SquaredL2(1e-3))
    solver = jp.APPA(prox_lam=0.1, inner=SDCA(batch=8), tol=1e-9, max_steps=600)
    assert solver.prepare(pr).inner.batch == 8 and solver.prepare(pr).hoist(pr).inner.eso_sigma is not None
    ref = jp.solve(pr, jp.ProxNewton(tol=1e-12))
    a = jp.solve(pr, solver)
    b = jp.solve(pr, jp.APPA(prox_lam=0.1, inner=SDCA(batch=1), tol=1e-9, max_steps=600))
    assert bool(a.converged) and bool(b.converged)
    for s in (a, b):
        assert float(s.primal_value) - float(ref.primal_value) <= 1e-8 * abs(float(ref.primal_value))
    assert not np.array_equal(np.asarray(a.params), np.asarray(b.params))
