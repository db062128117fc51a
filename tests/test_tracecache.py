"""The cache of traced solves (:mod:`jaxprox._compile.tracecache`, issue 28): a stored solve returns the
plain solve's result bit for bit, in this process and in a later one; the key changes with
everything that changes the trace and nothing else; calls whose static parts it cannot describe
(a user's class, a closure) are not cached; a damaged file or an unexportable call falls back."""
import functools
import json
import os
import subprocess
import sys

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

import jaxprox as jp
from jaxprox import losses, penalties
from jaxprox._compile import tracecache


@pytest.fixture(scope="module")
def heart():
    X, y = jp.datasets.load("heart_scale")
    return jnp.asarray(X), jnp.asarray(y)


@pytest.fixture
def cache(tmp_path, monkeypatch):
    """The trace cache switched on in ``tmp_path`` for this test (the suite runs without it)."""
    monkeypatch.setattr(tracecache, "folder", lambda: str(tmp_path))
    monkeypatch.setattr(tracecache, "_MEMO", {})
    monkeypatch.setattr(tracecache, "STATS", dict.fromkeys(tracecache.STATS, 0))
    return tmp_path


def _leaves(sol):
    return [np.asarray(x) for x in jax.tree_util.tree_leaves(sol)]


def _same(a, b):
    assert jax.tree_util.tree_structure(a) == jax.tree_util.tree_structure(b)
    for x, y in zip(jax.tree_util.tree_leaves(a), jax.tree_util.tree_leaves(b)):
        assert x.dtype == y.dtype and getattr(x, "weak_type", False) == getattr(y, "weak_type", False)
        np.testing.assert_array_equal(np.asarray(x), np.asarray(y))


@pytest.mark.parametrize("kind", ["fista_l1", "agm_bias_svm"])
def test_a_stored_solve_returns_the_plain_solve_bit_for_bit(heart, cache, monkeypatch, kind):
    """Miss (export, store, run), hit (deserialise, run), a new lam (the same stored module): each
    returns exactly what the plain jitted solve returns; a damaged file is exported again."""
    X, y = heart

    def problem(lam):
        if kind == "fista_l1":
            return jp.ERM(X, y, losses.Logistic(), penalties.L1(lam)), jp.FISTA(tol=1e-8)
        return jp.BiasSVM(X, y, lam), jp.AGM(tol=1e-6)

    sol_miss = jp.solve(*problem(1e-2))
    assert tracecache.STATS == dict(hits=0, misses=1, writes=1, uncacheable=0, failed=0)
    [stored] = [p for p in cache.iterdir() if not p.name.startswith(".")]
    monkeypatch.setattr(tracecache, "_MEMO", {})  # as a new process: only the file is left
    sol_hit = jp.solve(*problem(1e-2))
    other = jp.solve(*problem(3e-3))
    assert tracecache.STATS["hits"] == 1 and tracecache.STATS["misses"] == 1
    with monkeypatch.context() as m:
        m.setattr(tracecache, "folder", lambda: None)
        plain, plain_other = jp.solve(*problem(1e-2)), jp.solve(*problem(3e-3))
    assert plain.status_name == other.status_name == "converged"
    _same(sol_miss, plain)
    _same(sol_hit, plain)
    _same(other, plain_other)
    stored.write_bytes(b"not a module")  # a damaged file: exported and stored again
    monkeypatch.setattr(tracecache, "_MEMO", {})
    _same(jp.solve(*problem(1e-2)), plain)
    assert tracecache.STATS["misses"] == 2 and stored.stat().st_size > 100


def test_an_eager_gradient_through_a_stored_solve(heart, cache, monkeypatch):
    """The forward solve of an eager ``jax.grad`` and the solution's Jacobian are cached top-level
    calls (stored by the first gradient, loaded by the next process); the gradient equals the one
    without the cache."""
    X, y = heart
    prob, sv = jp.ERM(X, y, losses.Logistic(), penalties.L1(1e-2)), jp.FISTA(tol=1e-12, max_steps=20_000)
    f = lambda lam: jnp.sum(jp.solve(prob.with_lam(lam), sv).params ** 2)  # noqa: E731
    jax.grad(f)(0.02)
    assert tracecache.STATS["misses"] == tracecache.STATS["writes"] == 2  # the solve, the Jacobian
    monkeypatch.setattr(tracecache, "_MEMO", {})
    g = jax.grad(f)(0.02)
    assert tracecache.STATS["hits"] == 2
    with monkeypatch.context() as m:
        m.setattr(tracecache, "folder", lambda: None)
        np.testing.assert_allclose(g, jax.grad(f)(0.02), rtol=1e-12)


def test_the_key_follows_the_trace(heart, cache):
    """Values (lam, the data's numbers) do not change the key; a static field, a class, a shape, a
    dtype, an XLA option do; a user's class, a closure or a traced argument make the call
    uncacheable (``None``); under JAX's debugging settings nothing goes through the cache."""
    X, y = heart
    key = lambda *args, options={}: tracecache.key("f", args, options)  # noqa: E731
    base = key(jp.ERM(X, y, losses.Logistic(), penalties.L1(1e-2)), jp.FISTA(check_every=10))
    assert base is not None
    assert key(jp.ERM(X * 2, y, losses.Logistic(), penalties.L1(5.0)), jp.FISTA(check_every=10)) == base
    changed = [
        key(jp.ERM(X, y, losses.Logistic(), penalties.L1(1e-2)), jp.FISTA(check_every=20)),
        key(jp.ERM(X, y, losses.Squared(), penalties.L1(1e-2)), jp.FISTA(check_every=10)),
        key(jp.ERM(X, y, losses.Logistic(), penalties.SquaredL2(1e-2)), jp.FISTA(check_every=10)),
        key(jp.ERM(X[:100], y[:100], losses.Logistic(), penalties.L1(1e-2)), jp.FISTA(check_every=10)),
        key(jp.ERM(X.astype(jnp.float32), y.astype(jnp.float32), losses.Logistic(), penalties.L1(1e-2)),
            jp.FISTA(check_every=10)),
        key(jp.ERM(X, y, losses.Logistic(), penalties.L1(1e-2)), jp.FISTA(check_every=10),
            options={"xla_cpu_use_fusion_emitters": True}),
    ]
    assert base not in changed and len(set(changed)) == len(changed)

    class MyLogistic(losses.Logistic):
        pass

    assert key(jp.ERM(X, y, MyLogistic(), penalties.L1(1e-2)), jp.FISTA()) is None
    drsvm = jp.DRSVM(X, y, epsilon=0.1)
    assert key(drsvm, jp.ISG()) is not None
    assert key(drsvm, jp.ISG(step_size=optax.exponential_decay(0.1, 10, 0.9))) is None  # a closure
    assert key(lambda x: x) is None and key(object()) is None
    assert key(functools.partial(jnp.sum, axis=0)) is not None
    assert jax.jit(lambda lam: jnp.asarray(key(penalties.L1(lam)) is None))(0.1)  # traced: not cached
    with jax.debug_nans(True):  # debugging the trace: run as written
        assert tracecache.call(None, "f", (jnp.ones(2),), {}, lambda x: "plain") == "plain"
    assert tracecache.STATS["misses"] == 0 and not list(cache.iterdir())


def test_an_unexportable_call_runs_plainly_and_is_remembered(cache, monkeypatch):
    """A call ``jax.export`` refuses (here a host callback) runs through the plain jitted function,
    and the refusal is stored, so a later process does not try again; a call that fails by itself
    raises its own error and stores nothing."""
    calls = []

    def fun(x):
        jax.debug.callback(lambda v: calls.append(1), x)
        return x * 2

    plain = jax.jit(fun)
    key = tracecache.key("t.fun", (jnp.ones(3),), {})
    out = tracecache.call(fun, "t.fun", (jnp.ones(3),), {}, plain)
    np.testing.assert_array_equal(out, 2 * np.ones(3))
    assert tracecache.STATS["failed"] == 1 and (cache / f"{key}.unexportable").exists()
    monkeypatch.setattr(tracecache, "_MEMO", {})
    out = tracecache.call(fun, "t.fun", (jnp.ones(3),), {}, plain)
    np.testing.assert_array_equal(out, 2 * np.ones(3))
    assert tracecache.STATS["failed"] == 1 and tracecache.STATS["misses"] == 1

    def wrong(x):  # the call's own error: raised as without the cache, and nothing is remembered
        raise ValueError("bad input")

    with pytest.raises(ValueError, match="bad input"):
        tracecache.call(wrong, "t.wrong", (jnp.ones(3),), {}, jax.jit(wrong))
    assert not (cache / f"{tracecache.key('t.wrong', (jnp.ones(3),), {})}.unexportable").exists()


CHILD = """
import json, sys
import jax
jax.config.update("jax_enable_x64", True)
import jax.numpy as jnp, numpy as np
import jaxprox as jp
from jaxprox import losses, penalties
from jaxprox._compile import tracecache
X, y = (jnp.asarray(a) for a in jp.datasets.load("heart_scale"))
sol = jp.solve(jp.ERM(X, y, losses.Logistic(), penalties.L1(1e-2)), jp.FISTA(tol=1e-8))
print("RESULT" + json.dumps(dict(stats=tracecache.STATS, params=np.asarray(sol.params).tolist(),
                                 gap=float(sol.gap), status=sol.status_name)))
"""


def test_a_second_process_finds_the_stored_solve(tmp_path):
    """With jaxprox's default caches on: the first process exports and stores the solve, the
    second deserialises it (no trace) and returns the same numbers."""
    env = dict(os.environ, JAXPROX_COMPILATION_CACHE="1", JAXPROX_CACHE_DIR=str(tmp_path / "xla"))
    env.pop("JAXPROX_TRACE_CACHE", None)
    got = []
    for _ in range(2):
        r = subprocess.run([sys.executable, "-c", CHILD], env=env, capture_output=True, text=True, timeout=600)
        assert r.returncode == 0, r.stderr[-3000:]
        got.append(json.loads(r.stdout.split("RESULT")[-1]))
    assert got[0]["stats"]["misses"] == got[0]["stats"]["writes"] == 1
    assert got[1]["stats"]["hits"] == 1 and got[1]["stats"]["misses"] == 0
    assert got[0]["params"] == got[1]["params"] and got[0]["gap"] == got[1]["gap"]
    assert got[1]["status"] == "converged"
    assert (tmp_path / "xla" / "jaxprox-traced").is_dir()


def test_an_xla_option_the_backend_does_not_know_falls_back_to_its_defaults(cache):
    """As the plain path does (``jaxprox._compile.compiled``): an option XLA rejects is dropped, and
    the stored module runs with XLA's defaults."""
    fun = lambda x: jnp.sin(x) * 2  # noqa: E731
    options = {"xla_jaxprox_no_such_option": True}
    out = tracecache.call(fun, "t.sin", (jnp.ones(3),), options, jax.jit(fun))
    np.testing.assert_allclose(out, 2 * np.sin(np.ones(3)))
    assert tracecache.STATS["misses"] == tracecache.STATS["writes"] == 1


def test_a_call_prepared_from_shapes_compiles_nothing_more(cache):
    """``prepare`` from ``jax.ShapeDtypeStruct`` leaves (the work an eager derivative does ahead,
    :class:`jaxprox._compile.Ahead`) exports, stores and compiles; the later call on arrays of those
    shapes, uncommitted or committed to the device (a computation's outputs), compiles nothing and
    returns what the function returns."""
    fun = lambda x, y: jnp.sin(x) @ y  # noqa: E731
    x, y = jnp.linspace(0.0, 1.0, 12).reshape(4, 3), jnp.arange(3.0)
    shapes = tuple(jax.ShapeDtypeStruct(a.shape, a.dtype) for a in (x, y))
    assert tracecache.prepare(fun, "t.prepared", shapes, {})
    assert tracecache.STATS["misses"] == tracecache.STATS["writes"] == 1
    lowered = []
    listen = lambda event, _s, **_: lowered.append(event) if event.endswith("jaxpr_to_mlir_module_duration") else None  # noqa: E731
    jax.monitoring.register_event_duration_secs_listener(listen)
    try:
        outs = [tracecache.call(fun, "t.prepared", args, {}, jax.jit(fun))
                for args in [(x, y), (x, jax.device_put(y, jax.devices()[0]))]]
    finally:
        jax.monitoring.unregister_event_duration_listener(listen)
    assert lowered == []
    for out in outs:
        np.testing.assert_allclose(out, np.sin(np.asarray(x)) @ np.asarray(y), rtol=1e-14)
    assert tracecache.STATS["misses"] == 1
