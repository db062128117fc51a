"""DRSVMBarrier: the primal-dual interior-point method for Wasserstein DRSVM (problem (1) of
paper 004), against the Clarabel optima quoted in issue 4 and cvxpy + Clarabel; jit, vmap over
epsilon, implicit derivatives vs central differences."""
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxprox as jp
from jaxprox.drsvm import DRSVM

# Clarabel's optima on a1a (kappa = 1, eps = 0.1), as quoted in issue 4 (7 digits)
A1A = {("l1", 0.0): 0.6510903, ("l2", 0.0): 0.6338804, ("linf", 0.0): 0.6224299,
       ("l1", 1.0): 0.7871424, ("linf", 1.0): 0.7853248}


@pytest.mark.parametrize("norm", ["l1", "l2", "linf"])
def test_a1a_matches_clarabel_with_a_certified_gap(norm):
    X, y = jp.datasets.load("a1a")
    run = jax.jit(lambda p: jp.solve(p, jp.DRSVMBarrier(tol=1e-9)))
    for (q, c), f_ref in A1A.items():
        if q != norm:
            continue
        pr = DRSVM(X, y, norm=norm, c=c)
        sol = run(pr)
        f = float(pr.objective(sol.params))
        assert bool(sol.converged) and int(sol.steps) <= 40, (norm, c, int(sol.steps))
        assert bool(pr.feasible(sol.params, 0.0))                   # strictly inside the cone
        assert 0 <= float(sol.gap) <= 1e-9 * f
        assert abs(f - f_ref) <= 1.5e-7 * f_ref, (norm, c, f, f_ref)     # 7 quoted digits
        assert float(sol.dual_value) <= f_ref + 1e-7                  # an honest lower bound
        a = np.asarray(sol.dual)
        assert a.min() >= 0 and (a.sum(axis=1) <= 1 + 1e-12).all()


def test_vmap_over_epsilon_and_warm_start():
    X, y, _ = jp.datasets.make_drsvm_synthetic(300, 8, 0.5, seed=3)
    pr = DRSVM(X, y, norm="l2")
    sv = jp.DRSVMBarrier(tol=1e-10)
    solve1 = jax.jit(lambda e: jp.solve(pr.with_epsilon(e), sv))
    eps = jnp.array([0.02, 0.1, 0.3])
    batched = jax.jit(jax.vmap(solve1))(eps)
    assert bool(jnp.all(batched.converged))
    for i, e in enumerate(eps):
        single = solve1(e)
        assert float(batched.primal_value[i]) == pytest.approx(float(single.primal_value), rel=1e-10)
    assert np.all(np.diff(np.asarray(batched.primal_value)) > 0)      # non-decreasing in eps
    # a warm start from the solution at another radius (moved strictly inside the cone by init)
    warm = jax.jit(lambda p, x0: jp.solve(p, sv, init=x0))(pr.with_epsilon(0.3), solve1(0.1).params)
    assert bool(warm.converged)
    assert float(warm.primal_value) == pytest.approx(float(batched.primal_value[2]), rel=1e-9)
    with pytest.raises(ValueError, match="implicit"):
        jp.solve(pr, jp.DRSVMBarrier(adjoint="unrolled"))


def test_implicit_derivative_in_epsilon_matches_fd():
    """d (w*, lam*)/d eps through the saddle map (forward and reverse) vs central differences
    (q = 2, c = 1: strict complementarity, a differentiable solution map)."""
    X, y, _ = jp.datasets.make_drsvm_synthetic(60, 5, 0.5, seed=15)
    pr = DRSVM(X, y, norm="l2", c=1.0)
    sv = jp.DRSVMBarrier(tol=1e-10)
    f = lambda e: jp.solve(pr.with_epsilon(e), sv).params                  # noqa: E731
    e0, h = 0.1, 1e-4

    @jax.jit
    def derivs(e):
        pp = jax.vmap(f)(jnp.stack([e + h, e - h]))
        fd = jax.tree.map(lambda v: (v[0] - v[1]) / (2 * h), pp)
        jv = jax.jvp(f, (e,), (jnp.ones_like(e),))[1]
        g = jax.grad(lambda e: jnp.sum(f(e)[0]) + f(e)[1])(e)
        return fd, jv, g

    fd, jv, g = derivs(jnp.asarray(e0))
    for a, b in zip(jax.tree.leaves(jv), jax.tree.leaves(fd)):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-7)
    assert float(jnp.max(jnp.abs(fd[0]))) > 0.1
    assert float(g) == pytest.approx(float(jnp.sum(fd[0]) + fd[1]), rel=1e-5)
