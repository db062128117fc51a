"""DRSVMBarrier: the primal-dual interior-point method for Wasserstein DRSVM (problem (1) of
paper 004), against the Clarabel optima quoted in issue 4 and cvxpy + Clarabel; jit, vmap over
epsilon, warm starts (the implicit derivative is tested with PDHG's in test_drsvm.py)."""
import jax
import jax.flatten_util
import jax.numpy as jnp
import numpy as np
import pytest

import jaxprox as jp
from jaxprox.problems.drsvm import DRSVM
from jaxprox.solvers.drsvm_pd import saddle_residual

# Clarabel's optima on a1a (kappa = 1, eps = 0.1), as quoted in issue 4 (7 digits)
A1A = {("l1", 0.0): 0.6510903, ("l2", 0.0): 0.6338804, ("linf", 0.0): 0.6224299,
       ("l1", 1.0): 0.7871424, ("linf", 1.0): 0.7853248}


@pytest.mark.parametrize("norm", ["l1", "l2", "linf"])
def test_a1a_matches_clarabel_with_a_certified_gap(norm):
    X, y = jp.datasets.load("a1a")
    # the default solver (two Gondzio correctors) for q = 1; correctors=0 elsewhere (faster compile)
    run = jax.jit(lambda p: jp.solve(p, jp.DRSVMBarrier(tol=1e-9, correctors=2 if norm == "l1" else 0)))
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
    # jp.solve hoists Z^T out of the loop once (Solver.hoist); hoisting again is a no-op
    hoisted = jp.DRSVMBarrier().hoist(pr)
    np.testing.assert_array_equal(np.asarray(hoisted.ZT), np.asarray(pr.Z).T)
    assert hoisted.hoist(pr) is hoisted


def test_vmap_over_epsilon_and_warm_start():
    """One ``jax.vmap`` over three radii gives the separate solves' values; a warm start works.
    (``correctors=0``: the smaller step graph compiles faster; the mechanism is the same.)"""
    X, y, _ = jp.datasets.make_drsvm_synthetic(150, 6, 0.5, seed=3)
    pr = DRSVM(X, y, norm="l2", c=1.0)   # c > 0: strict complementarity, a smooth solution map
    sv = jp.DRSVMBarrier(tol=1e-11, correctors=0)
    solve1 = jax.jit(lambda e, x0: jp.solve(pr.with_epsilon(e), sv, init=x0))
    eps = jnp.array([0.02, 0.1, 0.3])
    cold = (jnp.zeros(6), jnp.ones(()))
    batched = jax.jit(jax.vmap(lambda e: solve1(e, cold)))(eps)
    assert bool(jnp.all(batched.converged))
    single = solve1(eps[1], cold)
    assert float(batched.primal_value[1]) == pytest.approx(float(single.primal_value), rel=1e-10)
    assert np.all(np.diff(np.asarray(batched.primal_value)) > 0)      # non-decreasing in eps
    # the solution (w, lam, a) is a root of the saddle map through which jp.solve differentiates
    # (checked to 1e-5 against central differences for PDHG in test_drsvm.py); here the forward
    # derivative in eps against central differences of the compiled solve
    r = jax.flatten_util.ravel_pytree(saddle_residual(pr.with_epsilon(eps[1]), (*single.params, single.dual)))[0]
    assert float(jnp.max(jnp.abs(r))) <= 1e-8
    h = 1e-4
    fd = jax.tree.map(lambda a, b: (a - b) / (2 * h), solve1(eps[1] + h, cold).params, solve1(eps[1] - h, cold).params)
    jv = jax.jit(lambda e: jax.jvp(lambda e: solve1(e, cold).params, (e,), (jnp.ones_like(e),))[1])(eps[1])
    for a, b in zip(jax.tree.leaves(jv), jax.tree.leaves(fd)):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-7)
    assert float(jnp.max(jnp.abs(fd[0]))) > 1e-2                 # a non-trivial derivative
    # a warm start from the solution at another radius (moved strictly inside the cone by init)
    warm = solve1(eps[2], single.params)
    assert bool(warm.converged)
    assert float(warm.primal_value) == pytest.approx(float(batched.primal_value[2]), rel=1e-9)
    with pytest.raises(ValueError, match="implicit"):
        jp.solve(pr, jp.DRSVMBarrier(), adjoint=jp.Unrolled())
