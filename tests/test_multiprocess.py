"""One problem solved by two processes on JAX's own distributed runtime (``jax.distributed``, CPU
collectives over localhost): each process holds half of the rows of ``X``, the solve runs once
over both, and solution, certificate and derivative match the single-process solve to 1e-10.

This is the multi-host recipe of ``docs/multihost.md``: the same script runs unchanged on a GPU
cluster, one process per host."""
import json
import os
import socket
import subprocess
import sys
import textwrap

import jax
import numpy as np
import pytest

import jaxprox as jp
from jaxprox import losses, penalties

WORKER = textwrap.dedent(
    """
    import json, os, sys
    os.environ["JAX_PLATFORMS"] = "cpu"
    import jax
    jax.config.update("jax_enable_x64", True)
    rank, port = int(sys.argv[1]), sys.argv[2]
    jax.distributed.initialize(coordinator_address=f"127.0.0.1:{port}", num_processes=2, process_id=rank)
    import jax.numpy as jnp, numpy as np
    from jax.sharding import Mesh, NamedSharding, PartitionSpec as P
    import jaxprox as jp
    from jaxprox import losses, penalties

    X, y = jp.datasets.load("heart_scale")
    X, y = X[:268], y[:268]
    mesh = Mesh(np.array(jax.devices()), ("data",))
    half = X.shape[0] // 2
    mine = X[rank * half:(rank + 1) * half]  # the rows this process holds
    X_global = jax.make_array_from_process_local_data(NamedSharding(mesh, P("data", None)), mine, X.shape)
    assert not X_global.is_fully_addressable and len(X_global.sharding.device_set) == 2
    out = {}
    for name, solver, penalty in (("fista", jp.FISTA(tol=1e-11, max_steps=20000), penalties.L1(1e-2)),
                                  ("pdprox", jp.PDProx(tol=1e-9), penalties.SquaredL2(1e-2))):
        prob = jp.ERM(jp.operators.Dense(X_global), y, losses.Logistic(), penalty)
        sol = jax.jit(jp.solve)(prob, solver)
        out[name] = dict(value=float(sol.primal_value), gap=float(sol.gap), converged=bool(sol.converged),
                         params=np.asarray(sol.params).tolist())
    prob = jp.ERM(jp.operators.Dense(X_global), y, losses.Logistic(), penalties.L1(1e-2))
    solver = jp.FISTA(tol=1e-11, max_steps=20000)
    # data that spans processes is passed to jit as an argument (JAX refuses to close over it)
    grad = jax.jit(jax.grad(lambda l, p: jnp.sum(jp.solve(p.with_lam(l), solver).params ** 2)))(1e-2, prob)
    out["grad"] = float(grad)
    print("RESULT" + json.dumps(out), flush=True)
    jax.distributed.shutdown()
    """
)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _reference():
    X, y = jp.datasets.load("heart_scale")
    X, y = X[:268], y[:268]
    out = {}
    for name, solver, penalty in (("fista", jp.FISTA(tol=1e-11, max_steps=20000), penalties.L1(1e-2)),
                                  ("pdprox", jp.PDProx(tol=1e-9), penalties.SquaredL2(1e-2))):
        sol = jax.jit(jp.solve)(jp.ERM(X, y, losses.Logistic(), penalty), solver)
        out[name] = dict(value=float(sol.primal_value), gap=float(sol.gap), params=np.asarray(sol.params))
    prob = jp.ERM(X, y, losses.Logistic(), penalties.L1(1e-2))
    solver = jp.FISTA(tol=1e-11, max_steps=20000)
    out["grad"] = float(jax.grad(lambda l: jax.numpy.sum(jp.solve(prob.with_lam(l), solver).params ** 2))(1e-2))
    return out


@pytest.mark.slow
def test_two_processes_match_one():
    port = str(_free_port())
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [os.path.dirname(os.path.dirname(os.path.abspath(__file__))), os.environ.get("PYTHONPATH", "")]))
    env.pop("XLA_FLAGS", None)  # one CPU device per process
    procs = [subprocess.Popen([sys.executable, "-c", WORKER, str(rank), port], env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for rank in (0, 1)]
    results = []
    for p in procs:
        try:
            stdout, stderr = p.communicate(timeout=300)
        except subprocess.TimeoutExpired:
            for q in procs:
                q.kill()
            raise
        lines = [ln for ln in stdout.splitlines() if ln.startswith("RESULT")]
        assert p.returncode == 0 and lines, stderr[-3000:]
        results.append(json.loads(lines[0][len("RESULT"):]))
    ref = _reference()
    for got in results:  # both processes hold the same (replicated) solution
        for name in ("fista", "pdprox"):
            assert got[name]["converged"]
            assert abs(got[name]["value"] - ref[name]["value"]) <= 1e-10 * abs(ref[name]["value"])
            assert abs(got[name]["gap"] - ref[name]["gap"]) <= 1e-10
            np.testing.assert_allclose(np.asarray(got[name]["params"]), ref[name]["params"], rtol=0, atol=1e-10)
        assert abs(got["grad"] - ref["grad"]) <= 1e-10 * max(1.0, abs(ref["grad"]))
