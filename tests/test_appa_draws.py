"""The random draws of the SDCA epochs (issue "Start fast": few kernels to compile) and the static
``sampling='auto'`` rule of Dual APPA (``jaxprox.solvers.appa``)."""
import jax
import jax.numpy as jnp
from jax import lax
import numpy as np
import pytest

import jaxprox as jp
from jaxprox.losses import Logistic
from jaxprox.penalties import SquaredL2
from jaxprox.components.proximal_point import default_prox_lam, sdca_auto_rule
from jaxprox.components.sampling import Permutation, permutation_and_key, sampling_law
from jaxprox.certificates import ridge_strength
from jaxprox.solvers.dual_appa import DualAPPA
from jaxprox.solvers.sdca import sdca_epoch


@pytest.mark.parametrize("n", [1, 7, 270, 2000])
def test_permutation_and_key(n):
    """A permutation of 0..n-1, the same for the same key, another for
    the next key; the next key is a new key; typed keys give typed keys."""
    draw = jax.jit(permutation_and_key, static_argnums=1)
    key = jax.random.PRNGKey(3)
    p, k2 = draw(key, n)
    np.testing.assert_array_equal(np.sort(np.asarray(p)), np.arange(n))
    np.testing.assert_array_equal(np.asarray(draw(key, n)[0]), np.asarray(p))
    assert k2.shape == key.shape and k2.dtype == key.dtype and not np.array_equal(k2, key)
    p2, k3 = draw(k2, n)
    np.testing.assert_array_equal(np.sort(np.asarray(p2)), np.arange(n))
    assert not np.array_equal(k3, k2)
    if n >= 7:
        assert not np.array_equal(np.asarray(p2), np.asarray(p))
    tp, tk = permutation_and_key(jax.random.key(3), n)
    np.testing.assert_array_equal(np.sort(np.asarray(tp)), np.arange(n))
    assert jnp.issubdtype(tk.dtype, jax.dtypes.prng_key)


def test_permutation_is_uniform_on_small_n():
    """All 6 orders of 3 items, each with frequency 1/6 (chi-square-sized tolerance)."""
    keys = jax.random.split(jax.random.PRNGKey(0), 6000)
    perms = np.asarray(jax.jit(jax.vmap(lambda k: permutation_and_key(k, 3)[0]))(keys))
    codes = perms[:, 0] * 9 + perms[:, 1] * 3 + perms[:, 2]
    counts = np.unique(codes, return_counts=True)[1]
    assert len(counts) == 6 and np.all(np.abs(counts / 6000 - 1 / 6) < 0.03)


def test_permutation_along_a_key_chain_is_uniform_and_cheap():
    """The solver's draws follow a chain of keys (each epoch's next key): over 4,000 epochs of
    n = 7 each item comes first with frequency 1/7 and each ordered pair of the first two places
    with frequency 1/42 (chi-square-sized tolerances), with no ties (the hash is a bijection of
    the counters); and the draw compiles to at most 4 kernels (threefry's bits alone were 7)."""
    import re

    from jaxprox._compile import COMPILER_OPTIONS
    from jaxprox.components.sampling import _mix32

    def chain(key):
        def body(k, _):
            p, k = permutation_and_key(k, 7)
            return k, p
        return lax.scan(body, key, None, length=4000)[1]

    perms = np.asarray(jax.jit(chain)(jax.random.PRNGKey(5)))
    first = np.bincount(perms[:, 0], minlength=7) / len(perms)
    assert np.all(np.abs(first - 1 / 7) < 0.02)
    pairs = np.bincount(perms[:, 0] * 7 + perms[:, 1], minlength=49).reshape(7, 7) / len(perms)
    assert np.all(np.diag(pairs) == 0) and np.all(np.abs(pairs[~np.eye(7, dtype=bool)] - 1 / 42) < 0.012)
    words = np.asarray(_mix32(jnp.arange(100_000, dtype=jnp.uint32)))
    assert len(np.unique(words)) == len(words)
    exe = jax.jit(lambda k: permutation_and_key(k, 270), compiler_options=COMPILER_OPTIONS).lower(
        jax.random.PRNGKey(0)).compile()
    assert len(re.findall(r" (?:fusion|dot|reduce|sort)\(", exe.as_text())) <= 4


@pytest.mark.parametrize("block", [256, 100, 270])
def test_distinct_epoch_is_the_sequential_algorithm(block):
    """``sdca_epoch(..., distinct=True)`` (no first-occurrence map, last block padded with indices
    of the first block) is the same run as the general layout, padded blocks included."""
    X, y = jp.datasets.load("heart_scale", dense=True)
    pr = jp.ERM(X, y, Logistic(), SquaredL2(1e-2))
    perm = jax.random.permutation(jax.random.PRNGKey(1), pr.n).astype(jnp.int32)
    u0 = jnp.zeros(pr.n)
    w0 = jnp.zeros(pr.d)
    run = jax.jit(lambda idx, distinct: sdca_epoch(pr, u0, w0, jnp.asarray(1e-2), idx, block=block,
                                                   distinct=distinct), static_argnums=1)
    ua, wa = run(perm, False)
    ub, wb = run(perm, True)
    np.testing.assert_allclose(np.asarray(ub), np.asarray(ua), rtol=0, atol=1e-15)
    np.testing.assert_allclose(np.asarray(wb), np.asarray(wa), rtol=0, atol=1e-15)


def test_dual_appa_auto_rule_is_a_permutation():
    """With the default prox_lam the SDCA law is never far from uniform, even for rows of very
    unequal norms (so 'auto' is a permutation, decided before tracing): the same run as
    sampling='permutation'; with a given prox_lam the rule is left to each epoch."""
    X, y = jp.datasets.load("heart_scale", dense=True)
    X = X * np.where(np.arange(X.shape[0]) < 3, 1e3, 1.0)[:, None]   # three rows 10^6 x heavier
    for lam0 in (0.0, 1e-3):
        pr = jp.ERM(X, y, Logistic(), SquaredL2(lam0)) if lam0 else jp.ERM(X, y, Logistic())
        Lam = ridge_strength(pr) + default_prox_lam(pr)
        assert float(jnp.max(sampling_law(pr, pr.n * Lam))) * pr.n < 2.0
    assert sdca_auto_rule(None) == Permutation() and sdca_auto_rule(0.1) is None
    pr = jp.ERM(X, y, Logistic(), SquaredL2(1e-3))
    a = jp.solve(pr, DualAPPA(max_steps=4, tol=0.0), warn=False)
    b = jp.solve(pr, DualAPPA(sampling=Permutation(), max_steps=4, tol=0.0), warn=False)
    np.testing.assert_array_equal(np.asarray(a.params), np.asarray(b.params))
    np.testing.assert_array_equal(np.asarray(a.dual), np.asarray(b.dual))
