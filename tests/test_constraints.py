"""jaxprox.constraints: validation, hyperparameters as array leaves (jit without recompiling,
vmap and grad over the radius), projection/LMO/support consistency and LMOs against closed
forms, numpy's SVD and cvxpy + Clarabel."""
import cvxpy as cp
import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest

jax.config.update("jax_enable_x64", True)

from jaxprox import constraints as C  # noqa: E402
from jaxprox.base import Constraint  # noqa: E402

N = 6
A6 = np.array([1.0, -1.0, 2.0, 0.5, -1.0, 1.0])


def make_sets():
    return {
        "box": C.Box(-np.linspace(0.1, 1, N), np.linspace(0.5, 2, N)),
        "simplex": C.Simplex(1.5),
        "capped": C.CappedSimplex(0.6, 2.0),
        "capped_eq": C.CappedSimplex(0.6, 2.0, equality=True),
        "box_hyp": C.BoxHyperplane(0.0, 1.0, A6, 0.7),
        "l1": C.L1Ball(1.3),
        "l1_sort": C.L1Ball(1.3, method="sort"),
        "l2": C.L2Ball(0.8),
        "linf": C.LinfBall(0.4),
        "l2_hyp": C.L2BallHyperplane(1.2, A6, 0.5),
    }


SETS = make_sets()
WITH_LMO = [k for k in SETS if k != "box_hyp"]


def test_all_are_constraints():
    for c in list(SETS.values()) + [C.TraceBall(1.0)]:
        assert isinstance(c, Constraint)


@pytest.mark.parametrize(
    "make, match",
    [
        (lambda: C.L1Ball(-1.0), "radius must be non-negative"),
        (lambda: C.L2Ball(-0.5), "radius must be non-negative"),
        (lambda: C.LinfBall(-2), "radius must be non-negative"),
        (lambda: C.TraceBall(-1.0), "radius must be non-negative"),
        (lambda: C.L2BallHyperplane(-1.0, A6, 0.0), "radius must be non-negative"),
        (lambda: C.L1Ball(float("nan")), "finite"),
        (lambda: C.Simplex(-1.0), "s must be non-negative"),
        (lambda: C.CappedSimplex(-0.1, 1.0), "cap must be non-negative"),
        (lambda: C.CappedSimplex(0.1, -1.0), "total must be non-negative"),
        (lambda: C.Box(1.0, 0.0), "lo <= hi"),
        (lambda: C.BoxHyperplane(0.0, 1.0, A6, 10.0), "empty"),
        (lambda: C.L2BallHyperplane(0.1, A6, 5.0), "empty"),
        (lambda: C.L1Ball(1.0, method="newton"), "method"),
        (lambda: C.TraceBall(1.0, power_iters=0), "power_iters"),
    ],
)
def test_validation(make, match):
    with pytest.raises(ValueError, match=match):
        make()


def test_radius_is_a_leaf_jit_vmap_grad():
    x = jnp.asarray(np.random.default_rng(0).normal(size=N)) * 2
    traces = []

    @eqx.filter_jit
    def proj(c, x):
        traces.append(1)
        return c.project(x)

    for r in (0.5, 1.0, 2.0):
        proj(C.L1Ball(r), x)
    assert len(traces) == 1  # no recompilation per radius
    leaves = jax.tree_util.tree_leaves(C.L1Ball(0.5))
    assert len(leaves) == 1 and leaves[0].dtype == jnp.float64
    # vmap over the radius (traced radius passes the constructor unchecked)
    rs = jnp.linspace(0.0, 3.0, 7)
    ys = jax.vmap(lambda r: C.L1Ball(r).project(x))(rs)
    for r, y in zip(rs, ys):
        np.testing.assert_allclose(y, C.L1Ball(float(r), method="sort").project(x), atol=1e-12)
    # grad w.r.t. the radius: d/dr of ||P(x)||_1 = 1 while the constraint is active
    g = jax.grad(lambda r: jnp.sum(jnp.abs(C.L1Ball(r).project(x))))(1.0)
    np.testing.assert_allclose(g, 1.0, atol=1e-12)
    g = jax.grad(lambda c: jnp.sum(c.project(x) ** 2))(C.L2Ball(0.5))
    np.testing.assert_allclose(g.radius, 2 * 0.5, atol=1e-12)


@pytest.mark.parametrize("name", sorted(SETS))
def test_projection_lmo_support_consistency(name):
    """P(x) is in C; <x - P(x), z - P(x)> <= 0 for z = P(.) in C; lmo(g) in C with
    <g, lmo(g)> <= <g, z>; support(v) = <v, lmo(-v)>; and the normal-cone identity
    sigma_C(x - P(x)) = <x - P(x), P(x)>."""
    c = SETS[name]
    rng = np.random.default_rng(sum(map(ord, name)))

    @jax.jit
    def quantities(c, x, g, z0):
        px = c.project(x)
        z = c.project(z0)
        out = dict(px=px, z=z, in_px=c.contains(px), in_z=c.contains(z))
        if name in WITH_LMO:
            s = c.lmo(g)
            out.update(s=s, in_s=c.contains(s), supp=c.support(-g), supp_n=c.support(x - px))
        return out

    for trial in range(15):
        x = jnp.asarray(rng.normal(size=N) * rng.choice([0.1, 1.0, 5.0]))
        if trial == 0:
            x = jnp.zeros(N)
        g = jnp.asarray(rng.integers(-2, 3, size=N) * 1.0 if trial % 3 == 0 else rng.normal(size=N))
        q = quantities(c, x, g, jnp.asarray(rng.normal(size=N) * 3))
        assert bool(q["in_px"]) and bool(q["in_z"])
        px, z = np.asarray(q["px"]), np.asarray(q["z"])
        assert np.dot(x - px, z - px) <= 1e-9
        np.testing.assert_allclose(c.project(px), px, atol=1e-10)
        if name in WITH_LMO:
            s = np.asarray(q["s"])
            assert bool(q["in_s"])
            assert np.dot(g, s) <= np.dot(g, z) + 1e-9 and np.dot(g, s) <= np.dot(g, px) + 1e-9
            np.testing.assert_allclose(q["supp"], -np.dot(g, s), atol=1e-9)
            np.testing.assert_allclose(q["supp_n"], np.dot(x - px, px), atol=1e-8)


def test_lmo_closed_forms():
    g = jnp.array([0.3, -2.0, 1.0, 2.0, 0.0, -0.5])
    assert float(jnp.dot(g, SETS["l1"].lmo(g))) == pytest.approx(-1.3 * 2.0)
    assert float(jnp.dot(g, SETS["l2"].lmo(g))) == pytest.approx(-0.8 * np.linalg.norm(g))
    assert float(jnp.dot(g, SETS["linf"].lmo(g))) == pytest.approx(-0.4 * np.abs(g).sum())
    assert float(jnp.dot(g, SETS["simplex"].lmo(g))) == pytest.approx(1.5 * -2.0)
    b = SETS["box"]
    assert float(jnp.dot(g, b.lmo(g))) == pytest.approx(np.sum(np.minimum(g * b.lo, g * b.hi)))
    # zero gradient: finite, feasible
    for k in WITH_LMO:
        s = SETS[k].lmo(jnp.zeros(N))
        assert bool(jnp.all(jnp.isfinite(s))) and bool(SETS[k].contains(s))


def test_lmo_capped_and_l2_hyperplane_vs_cvxpy():
    rng = np.random.default_rng(3)
    G = rng.normal(size=(20, N))
    G[::4] = rng.integers(-1, 2, size=(5, N))  # ties
    for name in ("capped", "capped_eq", "l2_hyp"):
        c = SETS[name]
        ours = np.asarray(jax.jit(jax.vmap(c.lmo))(jnp.asarray(G)))
        S = cp.Variable((20, N))
        if name == "l2_hyp":
            cons = [cp.norm(S, 2, axis=1) <= 1.2, S @ A6 == 0.5]
        else:
            sums = cp.sum(S, axis=1)
            cons = [S >= 0, S <= 0.6, (sums == 2.0) if name == "capped_eq" else (sums <= 2.0)]
        prob = cp.Problem(cp.Minimize(cp.sum(cp.multiply(G, S))), cons)
        prob.solve(solver=cp.CLARABEL)
        # LP solutions need not be unique under ties: compare optimal values
        np.testing.assert_allclose(np.sum(G * ours, 1), np.sum(G * S.value, 1), atol=1e-6)


def test_trace_ball():
    rng = np.random.default_rng(4)
    T = C.TraceBall(2.0)
    G = jnp.asarray(rng.normal(size=(7, 5)))
    U, s, Vt = np.linalg.svd(np.asarray(G))
    np.testing.assert_allclose(T.lmo(G), -2.0 * np.outer(U[:, 0], Vt[0]), atol=1e-6)
    np.testing.assert_allclose(T.support(G), 2.0 * s[0], rtol=1e-8)
    X = jnp.asarray(rng.normal(size=(7, 5)))
    P = T.project(X)
    assert bool(T.contains(P))
    np.testing.assert_allclose(np.linalg.svd(np.asarray(P), compute_uv=False).sum(), 2.0, atol=1e-10)
    # Frank-Wolfe optimality: <G, lmo(G)> <= <G, P> for the feasible P
    assert float(jnp.sum(G * T.lmo(G))) <= float(jnp.sum(G * P)) + 1e-9
    assert bool(jnp.all(jnp.isfinite(T.lmo(jnp.zeros((3, 2))))))
    # deterministic (fixed key), jit- and vmap-able
    np.testing.assert_array_equal(jax.jit(lambda T, G: T.lmo(G))(T, G), T.lmo(G))
    assert jax.vmap(T.lmo)(jnp.stack([G, -G])).shape == (2, 7, 5)


def test_contains_tolerance():
    c = C.L2Ball(1.0)
    assert bool(c.contains(jnp.array([1.0 + 1e-10, 0.0])))
    assert not bool(c.contains(jnp.array([1.0 + 1e-3, 0.0])))
    assert bool(c.contains(jnp.array([1.0 + 1e-3, 0.0]), tol=1e-2))


def test_box_hyperplane_lmo_not_implemented():
    with pytest.raises(NotImplementedError):
        SETS["box_hyp"].lmo(jnp.ones(N))


def test_certificate_conjugate_projects_exactly_by_sorting():
    """``L1Ball.project_exact`` is the projection (by sorting, whatever the ball's own method),
    and the ERM dual of ridge + l1 ball evaluates its conjugate with it: no root-finding loop in
    the dual's graph, the same value as with the secant projection."""
    import jax

    import jaxprox as jp
    from jaxprox import losses, penalties

    rng = np.random.default_rng(4)
    ball = C.L1Ball(1.3)
    for _ in range(20):
        x = 2.0 * rng.standard_normal(9)
        np.testing.assert_allclose(np.asarray(ball.project_exact(x)), np.asarray(ball.project(x)), rtol=1e-12, atol=1e-14)
    X, y = rng.standard_normal((40, 9)), np.sign(rng.standard_normal(40))
    prob = jp.ERM(X, y, losses.SmoothedHinge(1.0), penalties.SquaredL2(0.05), ball)
    u = prob.loss.dual_point(prob.A.mv(0.3 * rng.standard_normal(9)), prob.y)
    assert "while" not in str(jax.make_jaxpr(lambda u: prob.dual_objective(u))(u))
    v = -prob.A.rmv(u) / prob.n
    assert float(jnp.sum(jnp.abs(v / 0.05))) > 1.3  # outside the ball: the projection moves it
    w = ball.project(v / 0.05)
    conj = float(np.vdot(v, w) - 0.025 * np.vdot(w, w))
    np.testing.assert_allclose(float(prob.conjugate_h(v)), conj, rtol=1e-12)
