"""Row-sharded data on 4 (virtual CPU) devices gives the same answer as one device.

Runs in a subprocess because the device count must be set before JAX starts."""
import subprocess
import sys
import textwrap


SCRIPT = textwrap.dedent(
    """
    import os
    os.environ["XLA_FLAGS"] = "--xla_force_host_platform_device_count=4"
    os.environ["JAX_PLATFORMS"] = "cpu"  # the 4 virtual devices are CPUs, also on a GPU machine
    import jax, jax.numpy as jnp, numpy as np, scipy.sparse as sp
    jax.config.update("jax_enable_x64", True)
    import jaxprox as jp
    from jaxprox import losses, penalties
    assert len(jax.devices()) == 4
    X, y = jp.datasets.load("heart_scale")
    X, y = X[:268], y[:268]
    solver = jp.FISTA(tol=1e-11, max_steps=20000)
    for op in (jp.operators.dense(X), jp.operators.sparse(sp.csr_matrix(X))):
        ref = jax.jit(jp.solve)(jp.ERM(op, y, losses.Logistic(), penalties.L1(1e-2)), solver)
        sharded_op = jp.operators.shard_rows(op)
        leaf = sharded_op.X if hasattr(sharded_op, "X") else sharded_op.data
        assert len(leaf.sharding.device_set) == 4
        prob = jp.ERM(sharded_op, y, losses.Logistic(), penalties.L1(1e-2))
        out = jax.jit(jp.solve)(prob, solver)
        assert bool(out.converged)
        assert abs(float(out.primal_value) - float(ref.primal_value)) < 1e-12, (out.primal_value, ref.primal_value)
        assert np.abs(np.asarray(out.params) - np.asarray(ref.params)).max() < 1e-8
        if not hasattr(sharded_op, "X"):
            continue  # vmap and grad on sharded data: once (dense) is enough, they share the mechanism
        # vmap over lambda and grad work on sharded data too
        lams = jnp.array([1e-3, 1e-2])
        ps = jax.vmap(lambda l: jp.solve(prob.with_lam(l), solver).params)(lams)
        assert np.all(np.isfinite(np.asarray(ps)))
        g = jax.grad(lambda l: jnp.sum(jp.solve(prob.with_lam(l), solver).params))(1e-2)
        g1 = jax.grad(lambda l: jnp.sum(jp.solve(jp.ERM(op, y, losses.Logistic(), penalties.L1(l)), solver).params))(1e-2)
        assert abs(float(g) - float(g1)) < 1e-6 * abs(float(g1))
    try:
        jp.operators.shard_rows(jp.operators.dense(X[:267]))
    except ValueError as e:
        assert "evenly" in str(e)
    else:
        raise AssertionError("uneven dense split accepted")
    print("SHARDED-OK")
    """
)


def test_row_sharded_solve_matches_single_device():
    r = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=600)
    assert "SHARDED-OK" in r.stdout, r.stdout + r.stderr
