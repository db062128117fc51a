"""Penalties: proxes, dual norms and conjugates against cvxpy + Clarabel (204 instances per
penalty, sizes 1 to 500 with zeros, ties and threshold hits, batched by shape), Moreau
decomposition with independent dual-ball projections (hypothesis), the prox variational
inequality, derivatives (finite at zeros and ties, equal to central differences elsewhere),
dual rescaling and constructor validation."""
import jax

jax.config.update("jax_enable_x64", True)

import cvxpy as cp  # noqa: E402
import equinox as eqx  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from hypothesis.extra import numpy as hnp  # noqa: E402

from jaxprox import penalties as P  # noqa: E402

# few distinct shapes (each one is a compile), 204 instances per penalty
VEC_SHAPES = {(1,): 60, (7,): 50, (60,): 50, (500,): 44}
MAT_SHAPES = {(1, 1): 60, (1, 5): 50, (7, 4): 50, (50, 10): 44}
# the trace norm goes through SDPs in cvxpy: up to 120 entries
TRACE_SHAPES = {(1, 1): 60, (2, 1): 50, (4, 3): 50, (10, 6): 44}
_TOLS = (1e-12, 1e-10, 1e-8)


def _solve(prob):
    """Clarabel with tight tolerances (degenerate reference solutions at kinks are accurate to
    about sqrt(tol)); looser if it stalls."""
    for tol in _TOLS:
        try:
            prob.solve(solver=cp.CLARABEL, tol_gap_abs=tol, tol_gap_rel=tol, tol_feas=tol, tol_ktratio=tol * 100)
        except cp.error.SolverError:
            continue
        if prob.status == "optimal":
            return prob
    raise AssertionError(f"Clarabel failed: {prob.status}")


def _groups_for(n, rng):
    ids = rng.integers(0, max(1, n // 4), n) if n > 1 else np.zeros(1, int)
    _, ids = np.unique(ids, return_inverse=True)
    return ids.ravel()


def _with(pen, lam, rho=None):
    pen = eqx.tree_at(lambda p: p.lam, pen, lam)
    if rho is not None:
        pen = eqx.tree_at(lambda p: p.l1_ratio, pen, rho)
    return pen


# --------------------------------------------------------------------------------------------
# cvxpy expressions: R(X_b) for a batch X of shape (B, *shape) given as a list or a 2-D variable
# --------------------------------------------------------------------------------------------
def _cvx_rows(kind, X, pen, shape):
    """Vector of ``R(X_b)``, b = 1..B (for a vector penalty X is (B, n); else a list)."""
    if kind == "L1":
        return cp.norm(X, 1, axis=1)
    if kind == "L2":
        return cp.norm(X, 2, axis=1)
    if kind == "Linf":
        return cp.norm(X, "inf", axis=1)
    if kind == "GroupLasso":
        ids = np.asarray(pen.ids)
        w = np.asarray(pen.weights)
        return sum(w[g] * cp.norm(X[:, np.flatnonzero(ids == g)], 2, axis=1) for g in range(pen.num_groups))
    if kind in ("L21", "L1Inf"):  # X: rows of all instances stacked, (B d, K)
        B = X.shape[0] // shape[0]
        rows = cp.norm(X, 2, axis=1) if kind == "L21" else cp.max(cp.abs(X), axis=1)
        return cp.sum(cp.reshape(rows, (B, shape[0]), order="C"), axis=1)
    if kind == "Trace":
        return cp.hstack([cp.normNuc(x) for x in X])
    raise ValueError(kind)


NORMS = {
    "L1": (P.L1, VEC_SHAPES),
    "L2": (P.L2, VEC_SHAPES),
    "Linf": (P.Linf, VEC_SHAPES),
    "GroupLasso": (None, VEC_SHAPES),
    "L21": (P.L21, MAT_SHAPES),
    "L1Inf": (P.L1Inf, MAT_SHAPES),
    "Trace": (P.Trace, TRACE_SHAPES),
}


def _instances(kind, shape, B, rng):
    """Random prox inputs with the special cases first: v = 0, t = 0, ties, huge t, threshold hits."""
    V = rng.normal(size=(B, *shape)) * rng.uniform(0.1, 3, (B,) + (1,) * len(shape))
    t = np.exp(rng.uniform(np.log(0.01), np.log(3.0), B))
    V[0] = 0.0
    t[1] = 0.0
    signs = rng.choice([-1.0, 1.0], shape)
    V[2] = 1.3 * signs  # all |v_i| tied
    t[2] = 0.4
    t[3] = 1e3  # everything thresholded
    if kind == "L1":
        V[4].flat[0] = t[4]  # |v_i| = t exactly
    if kind == "Trace" and min(shape) >= 2:
        U, _, Wt = np.linalg.svd(rng.normal(size=shape), full_matrices=False)
        s = np.ones(min(shape)) * 2.0
        s[-1] = 0.0
        V[2] = (U * s) @ Wt  # repeated and zero singular values
        t[2] = 0.5
        V[5] = (U * np.linspace(1, 3, min(shape))) @ Wt
        t[5] = 2.0  # a singular value exactly at the threshold
    return V, t


def _check_prox(pen, V, t, ours, ref, what, batched=False):
    """Our prox is at least as good as Clarabel's on ``1/2 |x - v|^2 + t R(x)`` (to 1e-10), which
    by 1-strong convexity bounds its distance to the argmin; and the two argmins agree to 1e-4
    (Clarabel's accuracy on large batches with points at kinks, where the reference is
    degenerate)."""
    if batched:
        val = jax.vmap(lambda p, x: p.value(x))
        rv, ov = val(pen, jnp.asarray(ref)), val(pen, jnp.asarray(ours))
    else:
        val = jax.vmap(pen.value)
        rv, ov = val(jnp.asarray(ref)), val(jnp.asarray(ours))
    sq = lambda X: np.sum(((X - V) ** 2).reshape(len(V), -1), axis=1) / 2  # noqa: E731
    f_ours = sq(ours) + t * np.asarray(ov)
    f_ref = sq(ref) + t * np.asarray(rv)
    assert np.all(f_ours <= f_ref + 1e-10 * (1 + np.abs(f_ref))), (what, np.max(f_ours - f_ref))
    np.testing.assert_allclose(ours, ref, atol=1e-4, err_msg=what)


def _batch_prox(pen, V, t):
    f = jax.jit(jax.vmap(lambda v, s: pen.prox(v, s)))
    return np.asarray(f(jnp.asarray(V), jnp.asarray(t)))


@pytest.mark.parametrize("kind", list(NORMS))
def test_norm_prox_and_dual_norm_match_cvxpy(kind):
    """prox (lam = 1, t = step) and dual norm ``max <u, x> s.t. R(x) <= 1`` in one cvxpy problem
    per shape."""
    rng = np.random.default_rng(sum(map(ord, kind)))
    cls, shapes = NORMS[kind]
    count = 0
    for shape, B in shapes.items():
        pen = P.GroupLasso(1.0, _groups_for(shape[0], rng)) if kind == "GroupLasso" else cls(1.0)
        V, t = _instances(kind, shape, B, rng)
        U = rng.normal(size=(B, *shape))
        U[0] = 0.0
        ours = _batch_prox(pen, V, t)
        dn = np.asarray(jax.jit(jax.vmap(pen.dual_norm))(jnp.asarray(U)))
        if len(shape) == 1 or kind != "Trace":
            flat = (B * shape[0], shape[1]) if len(shape) == 2 else (B, shape[0])
            X, Y = cp.Variable(flat), cp.Variable(flat)
            quad = cp.sum_squares(X - V.reshape(flat)) / 2
            inner = cp.sum(cp.multiply(U.reshape(flat), Y))
        else:
            X = [cp.Variable(shape) for _ in range(B)]
            Y = [cp.Variable(shape) for _ in range(B)]
            quad = sum(cp.sum_squares(x - v) for x, v in zip(X, V)) / 2
            inner = sum(cp.sum(cp.multiply(u, y)) for u, y in zip(U, Y))
        obj = quad + t @ _cvx_rows(kind, X, pen, shape) - inner
        _solve(cp.Problem(cp.Minimize(obj), [_cvx_rows(kind, Y, pen, shape) <= 1]))
        stack = lambda Z: Z.value.reshape(B, *shape) if not isinstance(Z, list) else np.stack([z.value for z in Z])  # noqa: E731
        Xv, Yv = stack(X), stack(Y)
        _check_prox(pen, V, t, ours, Xv, f"{kind} {shape}")
        ref_dn = np.sum((U * Yv).reshape(B, -1), axis=1)
        np.testing.assert_allclose(dn, ref_dn, atol=1e-6, rtol=1e-6, err_msg=f"{kind} dual norm {shape}")
        count += B
    assert count >= 200


@pytest.mark.parametrize("kind", ["SquaredL2", "ElasticNet"])
def test_smooth_prox_and_conjugate_match_cvxpy(kind):
    rng = np.random.default_rng(7 if kind == "SquaredL2" else 8)
    count = 0
    for (n,), B in VEC_SHAPES.items():
        V, t = _instances(kind, (n,), B, rng)
        lam = np.exp(rng.uniform(np.log(0.05), np.log(3.0), B))
        lam[1] = 0.0
        rho = rng.uniform(0, 1, B)
        rho[:4] = [0.0, 1.0, 0.5, 1.0]
        if kind == "SquaredL2":
            make = lambda l, r: P.SquaredL2(l)  # noqa: E731
            R = lambda X, r: cp.sum_squares(X) / 2 if X.ndim == 1 else cp.sum(cp.square(X), axis=1) / 2  # noqa: E731
        else:
            make = lambda l, r: P.ElasticNet(l, r)  # noqa: E731
            R = lambda X, r: (cp.multiply(r, cp.norm(X, 1, axis=1))  # noqa: E731
                              + cp.multiply((1 - r) / 2, cp.sum(cp.square(X), axis=1)))
        base = make(1.0, 0.5)
        prox = jax.jit(jax.vmap(lambda v, s, l, r: _with(base, l, r if kind == "ElasticNet" else None).prox(v, s)))
        conj = jax.jit(jax.vmap(lambda u, l, r: _with(base, l, r if kind == "ElasticNet" else None).conjugate(u)))
        ours = np.asarray(prox(V, t, lam, rho))
        U = rng.normal(size=(B, n))
        cj = np.asarray(conj(U, lam, rho))
        X, Y = cp.Variable((B, n)), cp.Variable((B, n))
        # conjugate sup_x <u, x> - lam R(x): finite unless lam = 0 (or rho = 1 outside the box)
        finite = (lam > 0) & ((rho < 1) | (np.max(np.abs(U), axis=1) <= lam * rho)) if kind == "ElasticNet" else lam > 0
        assert np.all(np.isinf(cj[~finite]))
        obj = (cp.sum_squares(X - V) / 2 + cp.multiply(t * lam, R(X, rho)).sum()
               - cp.sum(cp.multiply(U[finite], Y[finite])) + cp.multiply(lam[finite], R(Y[finite], rho[finite])).sum())
        _solve(cp.Problem(cp.Minimize(obj)))
        _check_prox(jax.vmap(lambda l, r: _with(base, l, r if kind == "ElasticNet" else None))(lam, rho),
                    V, t, ours, X.value, kind, batched=True)
        Yf = Y.value[finite]
        val = jax.vmap(lambda y, l, r: _with(base, l, r if kind == "ElasticNet" else None).value(y))
        base_vals = np.asarray(val(Yf, lam[finite], rho[finite]))
        ref = np.sum(U[finite] * Yf, axis=1) - base_vals
        np.testing.assert_allclose(cj[finite], ref, atol=1e-5, rtol=1e-6)
        count += B
    assert count >= 200


# --------------------------------------------------------------------------------------------
# Moreau decomposition with independent dual-ball projections
# --------------------------------------------------------------------------------------------
def _l1_ball_np(x, r):
    """Projection onto {||y||_1 <= r} by bisection on the threshold (sort-free, 200 halvings)."""
    x = np.asarray(x, float)
    if np.abs(x).sum() <= r:
        return x
    lo, hi = 0.0, np.abs(x).max()
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if np.maximum(np.abs(x) - mid, 0).sum() > r:
            lo = mid
        else:
            hi = mid
    return np.sign(x) * np.maximum(np.abs(x) - 0.5 * (lo + hi), 0)


def _l2_ball_np(x, r):
    nx = np.linalg.norm(x)
    return x if nx <= r else x * (r / nx)


def _dual_ball(kind, v, t, pen):
    if kind == "L1":
        return np.clip(v, -t, t)
    if kind == "L2":
        return _l2_ball_np(v, t)
    if kind == "Linf":
        return _l1_ball_np(v, t)
    if kind == "GroupLasso":
        out = np.empty_like(v)
        ids, w = np.asarray(pen.ids), np.asarray(pen.weights)
        for g in range(pen.num_groups):
            m = ids == g
            out[m] = _l2_ball_np(v[m], t * w[g])
        return out
    if kind == "L21":
        return np.stack([_l2_ball_np(r, t) for r in v])
    if kind == "L1Inf":
        return np.stack([_l1_ball_np(r, t) for r in v])
    if kind == "Trace":
        U, s, Vt = np.linalg.svd(v, full_matrices=False)
        return (U * np.minimum(s, t)) @ Vt
    raise ValueError(kind)


_PROX = jax.jit(lambda pen, v, s: pen.prox(v, s))
_VAL = jax.jit(lambda pen, v: pen.value(v))


def _make(kind, lam, shape):
    if kind == "GroupLasso":
        ids = np.arange(shape[0]) % 3  # unequal sizes for most lengths
        return P.GroupLasso(lam, ids)
    return NORMS[kind][0](lam)


_elems = st.floats(-10, 10, allow_nan=False, width=64)


@settings(max_examples=150, deadline=None)
@given(st.sampled_from(list(NORMS)), st.floats(0.0, 5.0), st.floats(0.01, 3.0), st.data())
def test_moreau_decomposition(kind, lam, step, data):
    """``prox_{t R}(v) + P_{dual_norm <= t}(v) = v`` and the prox variational inequality
    ``t R(w) >= t R(p) + <v - p, w - p>`` for random ``w`` (one shape per penalty, so one compile;
    sizes vary in the cvxpy tests)."""
    shape = (11,) if NORMS[kind][1] is VEC_SHAPES else (5, 4)
    d, k = shape[0], shape[-1]
    v = data.draw(hnp.arrays(np.float64, shape, elements=_elems))
    if data.draw(st.booleans()):  # ties
        v = np.round(v)
    pen = _make(kind, lam, shape)
    p = np.asarray(_PROX(pen, jnp.asarray(v), step))
    proj = _dual_ball(kind, v, step * lam, pen)
    np.testing.assert_allclose(p + proj, v, atol=1e-9)
    rng = np.random.default_rng(d * 7 + k)
    for w in [rng.normal(size=shape) * 3, np.zeros(shape), v]:
        lhs = step * (float(_VAL(pen, jnp.asarray(w))) - float(_VAL(pen, jnp.asarray(p))))
        assert lhs >= np.sum((v - p) * (w - p)) - 1e-9


@settings(max_examples=40, deadline=None)
@given(hnp.arrays(np.float64, 17, elements=_elems), st.floats(0.0, 3.0), st.floats(0.0, 1.0),
       st.floats(0.01, 5.0))
def test_smooth_penalties_prox_optimality(v, lam, rho, step):
    """Stationarity ``v - p in step d(lam R)(p)`` for squared l2 and elastic net (coordinatewise)."""
    for pen in (P.SquaredL2(lam), P.ElasticNet(lam, rho)):
        p = np.asarray(_PROX(pen, jnp.asarray(v), step))
        g = (v - p) / step
        if isinstance(pen, P.SquaredL2):
            np.testing.assert_allclose(g, lam * p, atol=1e-9)
        else:
            smooth = g - lam * (1 - rho) * p
            nz = p != 0
            np.testing.assert_allclose(smooth[nz], lam * rho * np.sign(p[nz]), atol=1e-9)
            assert np.all(np.abs(smooth[~nz]) <= lam * rho + 1e-9)


# --------------------------------------------------------------------------------------------
# derivatives
# --------------------------------------------------------------------------------------------
ALL_KINDS = list(NORMS) + ["SquaredL2", "ElasticNet"]


def _pen_and_points(kind, rng):
    if kind in ("L21", "L1Inf", "Trace"):
        shape = (5, 3)
    else:
        shape = (9,)
    pen = P.SquaredL2(0.7) if kind == "SquaredL2" else P.ElasticNet(0.7, 0.6) if kind == "ElasticNet" else _make(kind, 0.7, shape)
    special = [np.zeros(shape), np.ones(shape), np.full(shape, 0.7)]  # zero, ties, at the threshold (step 1)
    if kind == "Trace":
        special.append(np.eye(5, 3) * 2.0)  # repeated singular values
    return pen, shape, special


@pytest.mark.parametrize("kind", ALL_KINDS)
def test_prox_derivatives(kind):
    rng = np.random.default_rng(11)
    pen, shape, special = _pen_and_points(kind, rng)

    def f(v, s, lam):
        return _with(pen, lam).prox(v, s)

    fj = jax.jit(f)
    one, zero = jnp.ones(()), jnp.zeros(())
    # one forward and one reverse signature (each is a compile)
    jvp = jax.jit(lambda x, tx: jax.jvp(f, x, tx)[1])
    vjp = jax.jit(lambda x, ct: jax.vjp(f, *x)[1](ct))
    lam0 = jnp.asarray(0.7)
    for v in special:
        x = (jnp.asarray(v), jnp.asarray(1.0), lam0)
        outs = [jvp(x, (jnp.ones(shape), zero, zero)), jvp(x, (jnp.zeros(shape), one, zero)),
                jvp(x, (jnp.zeros(shape), zero, one)), *vjp(x, jnp.ones(shape))]
        for a in outs:
            assert np.all(np.isfinite(np.asarray(a))), kind
    # generic point: JVPs in v, step and lam equal central differences
    v = jnp.asarray(rng.normal(size=shape) * 2)
    tv = jnp.asarray(rng.normal(size=shape))
    x = (v, jnp.asarray(0.8), lam0)
    h = 1e-6
    dv = jvp(x, (tv, zero, zero))
    np.testing.assert_allclose(dv, (fj(v + h * tv, 0.8, lam0) - fj(v - h * tv, 0.8, lam0)) / (2 * h), atol=1e-6)
    ds = jvp(x, (jnp.zeros(shape), one, zero))
    np.testing.assert_allclose(ds, (fj(v, 0.8 + h, lam0) - fj(v, 0.8 - h, lam0)) / (2 * h), atol=1e-6)
    dl = jvp(x, (jnp.zeros(shape), zero, one))
    np.testing.assert_allclose(dl, (fj(v, 0.8, lam0 + h) - fj(v, 0.8, lam0 - h)) / (2 * h), atol=1e-6)
    # reverse mode agrees with forward mode
    ct = jnp.asarray(rng.normal(size=shape))
    g = vjp(x, ct)[0]
    np.testing.assert_allclose(jnp.sum(g * tv), jnp.sum(ct * dv), rtol=1e-9, atol=1e-12)


def test_value_gradients_finite_at_zero():
    for kind in ALL_KINDS:
        pen, shape, _ = _pen_and_points(kind, None)
        if kind == "Trace":
            continue  # the nuclear norm has no gradient at rank-deficient points
        g = jax.grad(lambda w: pen.value(w))(jnp.zeros(shape))
        assert np.all(np.isfinite(g)), kind


# --------------------------------------------------------------------------------------------
# dual rescaling, vmap over lam, validation
# --------------------------------------------------------------------------------------------
@pytest.mark.parametrize("kind", list(NORMS))
def test_dual_scale(kind):
    rng = np.random.default_rng(12)
    shape = (6,) if NORMS[kind][1] is VEC_SHAPES else (6, 3)
    pen = _make(kind, 0.3, shape)
    for scale in (0.0, 0.01, 1.0, 50.0):
        u = jnp.asarray(rng.normal(size=shape) * scale)
        s = float(pen.dual_scale(u))
        assert 0 < s <= 1 or (scale == 0.0 and s == 1.0)
        assert np.isfinite(float(pen.conjugate(s * u)))
        if float(pen.dual_norm(u)) > 0.3 * (1 + 1e-9):
            np.testing.assert_allclose(float(pen.dual_norm(s * u)), 0.3, rtol=1e-12)
            assert np.isinf(float(pen.conjugate(u)))
    assert float(pen.dual_scale(jnp.zeros(shape))) == 1.0
    assert float(_make(kind, 0.0, shape).dual_scale(jnp.ones(shape))) == 0.0


def test_vmap_over_lam_and_with_lam():
    v = jnp.linspace(-2, 2, 11)
    lams = jnp.array([0.0, 0.1, 0.5, 3.0])
    out = jax.jit(jax.vmap(lambda l: P.L1(1.0).with_lam(l).prox(v, 1.0)))(lams)
    for l, o in zip(lams, out):
        np.testing.assert_allclose(o, np.sign(v) * np.maximum(np.abs(v) - float(l), 0), atol=1e-15)
    W = jnp.arange(12.0).reshape(4, 3) - 6
    np.testing.assert_allclose(P.L1Inf(2.0).value(W), 2.0 * np.abs(np.asarray(W)).max(1).sum())
    np.testing.assert_allclose(P.L21(2.0).value(W), 2.0 * np.linalg.norm(np.asarray(W), axis=1).sum())
    np.testing.assert_allclose(P.Trace(2.0).value(W), 2.0 * np.linalg.svd(np.asarray(W), compute_uv=False).sum())


def test_group_lasso_constructors():
    ids = np.array([3, 3, 7, 1, 7, 7])
    a = P.GroupLasso(0.5, ids)
    b = P.GroupLasso(0.5, (np.array([3]), np.array([0, 1]), np.array([2, 4, 5])))
    w = jnp.asarray(np.arange(6.0) - 2)
    np.testing.assert_allclose(a.value(w), b.value(w))
    expect = 0.5 * (np.sqrt(1) * 1.0 + np.sqrt(2) * np.hypot(2, 1) + np.sqrt(3) * np.linalg.norm([0, 2, 3]))
    np.testing.assert_allclose(a.value(w), expect)
    c = P.GroupLasso(0.5, ids, weights=[1.0, 0.0, 2.0])  # group 3 unpenalised
    np.testing.assert_allclose(c.prox(w, 1.0)[:2], w[:2])
    assert np.isinf(float(c.dual_norm(jnp.ones(6))))


@pytest.mark.parametrize("make", [P.L1, P.L2, P.Linf, P.L21, P.L1Inf, P.Trace, P.SquaredL2,
                                  lambda lam: P.ElasticNet(lam, 0.5), lambda lam: P.GroupLasso(lam, [0, 0, 1])])
def test_negative_lam_rejected(make):
    with pytest.raises(ValueError, match="lam must be non-negative"):
        make(-0.1)
    with pytest.raises(ValueError, match="finite"):
        make(float("nan"))


def test_other_validation():
    with pytest.raises(ValueError, match="l1_ratio"):
        P.ElasticNet(1.0, 1.5)
    with pytest.raises(ValueError, match="non-overlapping"):
        P.GroupLasso(1.0, (np.array([0, 1]), np.array([1, 2])))
    with pytest.raises(ValueError, match="integer"):
        P.GroupLasso(1.0, np.array([0.5, 1.0]))
    with pytest.raises(ValueError, match="needs groups"):
        P.GroupLasso(1.0)
    with pytest.raises(ValueError, match="one entry per group"):
        P.GroupLasso(1.0, [0, 1], weights=[1.0])
    with pytest.raises(ValueError, match="matrices"):
        P.L21(1.0).prox(jnp.ones(3), 1.0)


def test_trace_prox_gram_equals_svd(monkeypatch):
    """The Gram/eigh singular value thresholding (used from ``GRAM_MIN_DIM`` on) equals the SVD one
    on a rank-5-plus-noise 60 x 90 matrix, over thresholds in the spectrum and beyond it, under jit
    and vmap; the zero matrix gives zero, not NaN; ``Trace.prox`` dispatches to it when large."""
    rng = np.random.default_rng(0)
    X = rng.standard_normal((60, 5)) @ rng.standard_normal((5, 90)) + 0.05 * rng.standard_normal((60, 90))
    U, s, Vt = np.linalg.svd(X, full_matrices=False)
    ts = jnp.asarray([0.0, 0.5 * s[-1], s[4] * 0.9, 0.5 * (s[0] + s[4]), 2 * s[0]])
    gram = jax.jit(jax.vmap(lambda t: P._svt_gram(jnp.asarray(X).T, t).T))(ts)
    for t, G in zip(ts, gram):
        np.testing.assert_allclose(G, (U * np.maximum(s - float(t), 0.0)) @ Vt, atol=1e-10 * s[0])
    assert np.all(np.asarray(P._svt_gram(jnp.zeros((8, 5)), 0.1)) == 0.0)
    monkeypatch.setattr(P, "GRAM_MIN_DIM", 50)
    np.testing.assert_allclose(P.Trace(2.0).prox(jnp.asarray(X), float(ts[2]) / 2),
                               (U * np.maximum(s - float(ts[2]), 0.0)) @ Vt, atol=1e-10 * s[0])


def test_face_and_separable_flags():
    """``face(x, p)``: the closed face of the penalty at ``p`` (the orthant of ``sign(p)`` for the
    l1 part, zeros of ``p`` kept at zero); the identity where there is no kink (default, ridge);
    ``separable`` marks the coordinate-wise proxes."""
    x = jnp.array([1.0, -2.0, 3.0, -4.0, 5.0])
    p = jnp.array([2.0, 1.0, 0.0, -1.0, -3.0])
    np.testing.assert_array_equal(P.L1(0.3).face(x, p), [1.0, 0.0, 0.0, -4.0, 0.0])
    np.testing.assert_array_equal(P.ElasticNet(0.3, 0.5).face(x, p), [1.0, 0.0, 0.0, -4.0, 0.0])
    np.testing.assert_array_equal(P.ElasticNet(0.3, 0.0).face(x, p), x)   # pure ridge
    np.testing.assert_array_equal(P.SquaredL2(0.3).face(x, p), x)
    np.testing.assert_array_equal(P.L2(0.3).face(x, p), x)
    assert P.L1.separable and P.ElasticNet.separable and P.SquaredL2.separable
    assert not P.GroupLasso.separable and not P.L2.separable and not P.Trace.separable
