"""jaxprox.roots: bisection and the Dai--Fletcher secant agree with each other and with exact
roots (sort-based for the piecewise-linear threshold equation, closed form for smooth ones),
under vmap and jit; the implicit derivative matches finite differences in forward and reverse
mode; clamped roots follow their end point."""
import jax
import jax.numpy as jnp
import numpy as np
import pytest

jax.config.update("jax_enable_x64", True)

from jaxprox import roots  # noqa: E402
from jaxprox.projections import _threshold_sort  # noqa: E402

FINDERS = {"secant": roots.secant, "bisection": roots.bisection}


def thresh(t, v, c, r):
    """F(t) = sum (v - t)_+ - c t - r: decreasing, piecewise linear (l1 ball / l1 epigraph)."""
    return jnp.sum(jnp.maximum(v - t, 0.0)) - c * t - r


def cubic(t, a, b):
    """t^3 + a t - b: increasing for a > 0."""
    return t**3 + a * t - b


def random_threshold_problems(seed, k=200, n=40):
    rng = np.random.default_rng(seed)
    V = np.abs(rng.normal(size=(k, n)))
    V[::3] = rng.integers(0, 4, size=(len(V[::3]), n)) * 0.5  # repeated magnitudes
    C = (np.arange(k) % 2).astype(float)
    R = rng.uniform(0.0, 1.0, size=k) * V.sum(1)
    return jnp.asarray(V), jnp.asarray(C), jnp.asarray(R)


@pytest.fixture(scope="module")
def threshold_problems():
    V, C, R = random_threshold_problems(0)
    exact = jax.vmap(_threshold_sort)(V, C, R)
    return V, C, R, exact


def _solve_threshold(method, V, C, R):
    ftol = 64 * jnp.finfo(V.dtype).eps * (1 + V.sum(1))
    hi = jnp.max(V, axis=1)
    f = lambda v, c, r, ft, h: FINDERS[method](thresh, 0.0, h, (v, c, r), ftol=ft)
    return jax.jit(jax.vmap(f))(V, C, R, ftol, hi)


@pytest.mark.parametrize("method", sorted(FINDERS))
def test_threshold_roots_match_exact(method, threshold_problems):
    V, C, R, exact = threshold_problems
    t = _solve_threshold(method, V, C, R)
    # the residual is at rounding level and the root equals the sort-based one
    res = jax.vmap(thresh)(t, V, C, R)
    assert np.max(np.abs(res)) <= 1e-11
    np.testing.assert_allclose(t, exact, rtol=1e-9, atol=1e-12)


def test_secant_equals_bisection(threshold_problems):
    V, C, R, _ = threshold_problems
    np.testing.assert_allclose(_solve_threshold("secant", V, C, R), _solve_threshold("bisection", V, C, R), atol=1e-11)


def test_secant_iterations_few_on_piecewise_linear(threshold_problems):
    """The DRSVM note (3.7) reports 2--3 secant steps typically, 7--10 at the 90th percentile."""
    V, C, R, _ = threshold_problems
    ftol = 64 * jnp.finfo(V.dtype).eps * (1 + V.sum(1))
    its = jax.jit(jax.vmap(lambda v, c, r, ft: roots.iterations("secant", thresh, 0.0, jnp.max(v), (v, c, r), ftol=ft)))(
        V, C, R, ftol
    )
    its = np.asarray(its)
    assert np.median(its) <= 6 and np.percentile(its, 90) <= 12 and its.max() < 50


@pytest.mark.parametrize("method", sorted(FINDERS))
def test_smooth_roots_vmap(method):
    rng = np.random.default_rng(1)
    a = jnp.asarray(rng.uniform(0.1, 3.0, size=64))
    b = jnp.asarray(rng.normal(size=64) * 5)
    t = jax.jit(jax.vmap(lambda a, b: FINDERS[method](cubic, -10.0, 10.0, (a, b))))(a, b)
    exact = [np.real(r[np.abs(np.imag(r)) < 1e-9][0]) for r in (np.roots([1, 0, ai, -bi]) for ai, bi in zip(a, b))]
    np.testing.assert_allclose(t, exact, rtol=1e-10, atol=1e-12)
    # decreasing function: the direction is detected
    d = jax.vmap(lambda b: FINDERS[method](lambda t, b: b - jnp.exp(t), -5.0, 5.0, (b,)))(jnp.abs(b) + 0.1)
    np.testing.assert_allclose(d, np.log(np.abs(b) + 0.1), rtol=1e-10)


@pytest.mark.parametrize("method", sorted(FINDERS))
def test_clamped_roots_and_their_derivative(method):
    find = FINDERS[method]
    f = lambda t, c: t - c
    # root below / above / inside the bracket
    for c, want in ((-3.0, -1.0), (3.0, 2.0), (0.5, 0.5)):
        assert float(find(f, -1.0, 2.0, (c,))) == pytest.approx(want, abs=1e-12)
    # clamped: the root follows the end point; inside: d root / dc = 1
    g_lo = jax.grad(lambda lo: find(f, lo, 2.0, (-3.0,)))(-1.0)
    g_c = jax.grad(lambda c: find(f, -1.0, 2.0, (c,)))(-3.0)
    assert float(g_lo) == 1.0 and float(g_c) == 0.0
    assert float(jax.grad(lambda c: find(f, -1.0, 2.0, (c,)))(0.5)) == pytest.approx(1.0)
    # a root exactly at an end point
    assert float(find(f, 0.5, 2.0, (0.5,))) == 0.5


@pytest.mark.parametrize("method", sorted(FINDERS))
def test_implicit_derivative_matches_fd(method):
    find = FINDERS[method]
    h = 1e-6
    root = lambda a, b: find(cubic, -10.0, 10.0, (a, b))
    for a, b in ((1.0, 2.0), (0.3, -4.0), (2.5, 0.1)):
        t = root(a, b)
        # implicit function theorem in closed form: dt/da = -t/(3t^2+a), dt/db = 1/(3t^2+a)
        ga, gb = jax.grad(root, argnums=(0, 1))(a, b)
        np.testing.assert_allclose([ga, gb], [-t / (3 * t**2 + a), 1 / (3 * t**2 + a)], rtol=1e-9)
        fd_a = (root(a + h, b) - root(a - h, b)) / (2 * h)
        fd_b = (root(a, b + h) - root(a, b - h)) / (2 * h)
        np.testing.assert_allclose([ga, gb], [fd_a, fd_b], rtol=1e-6)
        _, tan = jax.jvp(root, (a, b), (0.3, -0.7))
        np.testing.assert_allclose(tan, 0.3 * ga - 0.7 * gb, rtol=1e-10)
    # vector args, piecewise linear, reverse mode under vmap and jit
    V, C, R = random_threshold_problems(2, k=8, n=10)
    f = lambda v, c, r: find(thresh, 0.0, jnp.max(v), (v, c, r), ftol=1e-13)
    gv, gr = jax.jit(jax.vmap(jax.grad(f, argnums=(0, 2))))(V, C, R)
    for i in range(8):
        t = f(V[i], C[i], R[i])
        act = np.asarray(V[i] > t, float)
        denom = act.sum() + float(C[i])
        np.testing.assert_allclose(gv[i], act / denom, atol=1e-10)
        np.testing.assert_allclose(gr[i], -1 / denom, atol=1e-10)
    # second order (forward over reverse) works through the custom JVP
    hess = jax.hessian(lambda b: root(1.0, b))(2.0)
    assert np.isfinite(float(hess))


def test_flat_function_and_zero_slope_are_finite():
    f = lambda t, c: jnp.maximum(t - 1.0, 0.0) * c  # zero on [lo, 1]: every t <= 1 is a root
    for find in FINDERS.values():
        t = find(f, -2.0, 3.0, (1.0,))
        assert float(f(t, 1.0)) == 0.0
        g = jax.grad(lambda c: find(f, -2.0, 3.0, (c,)))(1.0)
        assert np.isfinite(float(g))


def test_bad_arguments():
    with pytest.raises(ValueError, match="max_iter"):
        roots.secant(cubic, 0.0, 1.0, (1.0, 0.5), max_iter=0)
    with pytest.raises(ValueError, match="tol"):
        roots.bisection(cubic, 0.0, 1.0, (1.0, 0.5), tol=-1.0)


def test_float32():
    t = jax.jit(lambda b: roots.secant(cubic, jnp.float32(-10), jnp.float32(10), (jnp.float32(1), b)))(jnp.float32(2.0))
    assert t.dtype == jnp.float32 and abs(float(t) - 1.0) < 1e-5
