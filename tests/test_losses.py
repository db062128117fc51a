"""Losses: conjugates and dual proxes against cvxpy + Clarabel, Fenchel--Young, the max-over-the-
dual-domain representation, prox optimality, derivatives (finite at kinks, equal to central
differences elsewhere) and label validation.

Elementwise losses are checked on batches of scalar instances (one cvxpy problem per loss, every
instance with its own hyperparameter and step); the budget hinge on vector instances of sizes
1 to 500, batched by size.
"""
import jax

jax.config.update("jax_enable_x64", True)

import cvxpy as cp  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from jaxprox import losses as L  # noqa: E402
from jaxprox.losses.classification import _logistic_dual_prox  # noqa: E402

# jitted entry points (eager calls of loops would recompile on every call)
_value = jax.jit(lambda loss, z, y: loss.value(z, y))
_conj = jax.jit(lambda loss, u, y: loss.conjugate(u, y))
_proj = jax.jit(lambda loss, u, y: loss.project_dual(u, y))
_prox = jax.jit(lambda loss, u, y, s: loss.prox_conjugate(u, y, s))
_dpt = jax.jit(lambda loss, z, y: loss.dual_point(z, y))

N = 240  # scalar instances per elementwise loss
# budget-hinge vector instances: size -> count (204 in all)
BUDGET = {1: 70, 7: 60, 60: 50, 500: 24}


_TOLS = (1e-12, 1e-10, 1e-8)


def _solve(prob):
    """Clarabel with tight tolerances (at kinks the reference solutions are degenerate -- no strict
    complementarity -- and interior-point accuracy is about sqrt(tol)); looser if it stalls."""
    for tol in _TOLS:
        try:
            prob.solve(solver=cp.CLARABEL, tol_gap_abs=tol, tol_gap_rel=tol, tol_feas=tol, tol_ktratio=tol * 100)
        except cp.error.SolverError:
            continue
        if prob.status == "optimal":
            return prob
    raise AssertionError(f"Clarabel failed: {prob.status}")


# --------------------------------------------------------------------------------------------
# catalogue: loss factory (per-instance hyperparameters), labels, cvxpy primal expression
# --------------------------------------------------------------------------------------------
def _pm1(rng, n):
    return rng.choice([-1.0, 1.0], n)


def _reals(rng, n):
    y = rng.normal(size=n) * 2
    y[: n // 10] = 0.0
    return y


def _envelope(base_expr, mu):
    """cvxpy Moreau envelope ``min_w l(w) + (z - w)^2/(2 mu)`` as (expr(z), aux var)."""

    def expr(z, y):
        w = cp.Variable(z.shape)
        return base_expr(w, y) + cp.multiply(1.0 / (2 * mu), cp.square(z - w))

    return expr


def _catalogue(rng, n):
    """name -> (loss, labels, cvxpy primal l(z, y), cvxpy conjugate l*(v, y) with its domain
    constraints, kind). Every instance has its own hyperparameter."""
    a = rng.uniform(1.0, 4.0, n)
    eps = rng.uniform(0.0, 1.0, n)
    mu = np.exp(rng.uniform(np.log(0.05), np.log(3.0), n))
    tau = rng.uniform(0.0, 1.0, n)
    if n >= 8:  # boundary hyperparameters
        eps[:5] = 0.0
        tau[:3] = [0.0, 1.0, 0.5]
    mul = cp.multiply
    hinge = lambda z, y: cp.pos(1 - mul(y, z))  # noqa: E731
    ghinge = lambda z, y: cp.maximum(0, 1 - mul(y, z), 1 - mul(a * y, z))  # noqa: E731
    absl = lambda z, y: cp.abs(z - y)  # noqa: E731
    epsl = lambda z, y: cp.pos(cp.abs(z - y) - eps)  # noqa: E731
    quant = lambda z, y: mul(tau, cp.pos(y - z)) + mul(1 - tau, cp.pos(z - y))  # noqa: E731
    # conjugates in cvxpy: (expression, constraints); s = -y v for classification
    c_hinge = lambda v, y: (mul(y, v), [-mul(y, v) >= 0, -mul(y, v) <= 1])  # noqa: E731
    c_ghinge = lambda v, y: (cp.maximum(mul(y, v), -1), [-mul(y, v) >= 0, -mul(y, v) <= a])  # noqa: E731
    c_abs = lambda v, y: (mul(y, v), [cp.abs(v) <= 1])  # noqa: E731
    c_eps = lambda v, y: (mul(y, v) + mul(eps, cp.abs(v)), [cp.abs(v) <= 1])  # noqa: E731
    c_quant = lambda v, y: (mul(y, v), [v >= -tau, v <= 1 - tau])  # noqa: E731

    def smooth(conj):
        def c(v, y):
            e, cons = conj(v, y)
            return e + mul(mu / 2, cp.square(v)), cons
        return c

    return {
        "hinge": (L.Hinge(), _pm1(rng, n), hinge, c_hinge, "cls"),
        "generalized_hinge": (L.GeneralizedHinge(a), _pm1(rng, n), ghinge, c_ghinge, "cls"),
        "smoothed_hinge": (L.SmoothedHinge(mu), _pm1(rng, n), _envelope(hinge, mu), smooth(c_hinge), "cls"),
        "squared_hinge": (L.SquaredHinge(), _pm1(rng, n), lambda z, y: cp.square(cp.pos(1 - mul(y, z))),
                          lambda v, y: (mul(y, v) + cp.square(v) / 4, [-mul(y, v) >= 0]), "cls"),
        "logistic": (L.Logistic(), _pm1(rng, n), lambda z, y: cp.logistic(-mul(y, z)),
                     lambda v, y: (-cp.entr(-mul(y, v)) - cp.entr(1 + mul(y, v)), []), "cls"),
        "absolute": (L.Absolute(), _reals(rng, n), absl, c_abs, "reg"),
        "huber": (L.Huber(mu), _reals(rng, n), _envelope(absl, mu), smooth(c_abs), "reg"),
        "eps_insensitive": (L.EpsilonInsensitive(eps), _reals(rng, n), epsl, c_eps, "reg"),
        "quantile": (L.Quantile(tau), _reals(rng, n), quant, c_quant, "reg"),
        "squared": (L.Squared(), _reals(rng, n), lambda z, y: 0.5 * cp.square(z - y),
                    lambda v, y: (cp.square(v) / 2 + mul(y, v), []), "reg"),
        "smoothed_eps": (L.EpsilonInsensitive(eps).smoothed(mu), _reals(rng, n), _envelope(epsl, mu), smooth(c_eps),
                         "reg"),
        "smoothed_quantile": (L.Quantile(tau).smoothed(mu), _reals(rng, n), _envelope(quant, mu), smooth(c_quant),
                              "reg"),
        "smoothed_ghinge": (L.GeneralizedHinge(a).smoothed(mu), _pm1(rng, n), _envelope(ghinge, mu),
                            smooth(c_ghinge), "cls"),
    }


NAMES = list(_catalogue(np.random.default_rng(0), 4).keys())


def _margins(rng, y, kind, loss):
    """Margins with kinks hit exactly (y z in {0, 1}, z = y, z = y +- eps)."""
    n = y.shape[0]
    z = rng.normal(size=n) * 2.5
    k = n // 6
    if kind == "cls":
        z[:k] = y[:k]  # y z = 1
        z[k:2 * k] = 0.0  # y z = 0
    else:
        z[:k] = y[:k]
        if isinstance(loss, L.EpsilonInsensitive):
            z[k:2 * k] = y[k:2 * k] + np.asarray(loss.eps)[k:2 * k]
    return z


def _domain_points(rng, loss, y):
    """Random points of dom l*: project a wide random draw (some land on the boundary)."""
    u = rng.normal(size=y.shape) * 1.5
    return np.asarray(_proj(loss, jnp.asarray(u), jnp.asarray(y)))


# --------------------------------------------------------------------------------------------
# cvxpy agreement
# --------------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", NAMES)
def test_conjugate_matches_cvxpy(name):
    """``l*(u) = sup_z u z - l(z)`` solved by Clarabel (z boxed to |z| <= 60, which contains the
    maximiser for the interior points drawn here)."""
    rng = np.random.default_rng(1)
    loss, y, expr, _, kind = _catalogue(rng, N)[name]
    u = _domain_points(rng, loss, y)
    if name == "logistic":  # the maximiser logit(s) is finite only inside (0, 1)
        s = np.clip(-y * u, 1e-3, 1 - 1e-3)
        u = -y * s
    z = cp.Variable(N)
    _solve(cp.Problem(cp.Maximize(cp.sum(cp.multiply(u, z) - expr(z, y))), [cp.abs(z) <= 60]))
    zs = z.value
    # per-instance value at the cvxpy maximiser, evaluated with an independent primal formula
    ours = np.asarray(_conj(loss, jnp.asarray(u), jnp.asarray(y)))
    ref = u * zs - np.asarray(_value(loss, jnp.asarray(zs), jnp.asarray(y)))
    assert np.all(np.isfinite(ours))
    np.testing.assert_allclose(ours, ref, atol=2e-6, rtol=1e-6)
    # and off the domain the conjugate is +inf (the sup is unbounded)
    if name != "squared":
        far_u = 50.0 * y if kind == "cls" else np.full(N, 50.0)  # s = -y u = -50, or |u| = 50
        assert np.all(np.isinf(np.asarray(_conj(loss, jnp.asarray(far_u), jnp.asarray(y)))))


@pytest.mark.parametrize("name", NAMES)
def test_prox_conjugate_matches_cvxpy(name):
    """``argmin_v s l*(v) + (v - u)^2 / 2`` solved by Clarabel with ``l*`` written in cvxpy (the
    conjugate formulas themselves are checked against ``sup_z`` above)."""
    rng = np.random.default_rng(2)
    loss, y, _, conj, kind = _catalogue(rng, N)[name]
    u = rng.normal(size=N) * 2
    s = np.exp(rng.uniform(np.log(0.05), np.log(20.0), N))
    u[:20] = (s * y)[:20] * (1.0 if kind == "cls" else 0.0)  # shifted point at 0 (a kink)
    s[20:25] = 0.0
    v = cp.Variable(N)
    expr, cons = conj(v, y)
    _solve(cp.Problem(cp.Minimize(cp.sum(cp.multiply(s, expr)) + cp.sum_squares(v - u) / 2), cons))
    ours = np.asarray(_prox(loss, jnp.asarray(u), jnp.asarray(y), jnp.asarray(s)))
    np.testing.assert_allclose(ours, v.value, atol=1e-5, rtol=1e-6)


def _budget_batches(rng):
    for n, B in BUDGET.items():
        y = _pm1(rng, B * n).reshape(B, n)
        z = rng.normal(size=(B, n))
        z[:, : max(1, n // 5)] = y[:, : max(1, n // 5)]  # hinge exactly 0 (kink)
        z[1] = 0.0  # all hinge values tied at 1
        m = rng.uniform(0, 1.3 * n, B)
        m[:4] = [0.0, 1.0, float(n), n + 2.5]
        m[4:8] = np.floor(m[4:8])
        yield n, y, z, m


def _topm_cvx(H, m, T):
    """``sum of the m largest entries of H[b]`` as ``min_t m t + sum (H - t)_+`` (t >= 0)."""
    B = H.shape[0]
    return cp.sum(cp.multiply(m, T)) + cp.sum(cp.pos(H - cp.reshape(T, (B, 1), order="C") @ np.ones((1, H.shape[1]))))


def test_budget_risk_conjugate_prox_match_cvxpy():
    """Budget hinge (204 instances, n = 1..500, fractional m, ties): risk, conjugate and dual prox."""
    rng = np.random.default_rng(3)
    risk = jax.jit(jax.vmap(lambda z, y, m: L.BudgetHinge(m).risk(z, y)))
    conj = jax.jit(jax.vmap(lambda u, y, m: jnp.sum(L.BudgetHinge(m).conjugate(u, y))))
    prox = jax.jit(jax.vmap(lambda u, y, m, s: L.BudgetHinge(m).prox_conjugate(u, y, s)))
    proj = lambda u, y, m: prox(u, y, m, np.zeros(len(m)))  # noqa: E731  (step 0: the projection)
    count = 0
    for n, y, z, m in _budget_batches(rng):
        B = y.shape[0]
        # risk: top-m hinge sum, against the LP
        Zc = cp.Variable((B, n))
        T = cp.Variable(B, nonneg=True)
        H = 1 - np.asarray(y * z)
        prob = _solve(cp.Problem(cp.Minimize(_topm_cvx(np.maximum(H, 0), m, T))))
        np.testing.assert_allclose(np.sum(risk(z, y, m)) * n, prob.value, rtol=1e-7, atol=1e-6)
        # conjugate: sup_z u.z - F(z), F = n risk
        u = np.asarray(proj(rng.normal(size=(B, n)), y, m))
        Hz = 1 - cp.multiply(y, Zc)
        prob = _solve(cp.Problem(cp.Maximize(cp.sum(cp.multiply(u, Zc)) - _topm_cvx(cp.pos(Hz), m, T)),
                                 [cp.abs(Zc) <= 30]))
        zs = Zc.value
        ref = np.sum(u * zs, axis=1) - n * np.asarray(risk(zs, y, m))
        np.testing.assert_allclose(conj(u, y, m), ref, atol=1e-5, rtol=1e-6)
        # dual prox: argmin s y.v + |v - u|^2/2 over {-y v in [0,1]^n, sum -y v <= m}
        u = rng.normal(size=(B, n)) * 1.5
        s = np.exp(rng.uniform(np.log(0.1), np.log(10.0), B))
        S = -cp.multiply(y, Zc)
        obj = cp.sum(cp.multiply(s[:, None] * y, Zc)) + cp.sum_squares(Zc - u) / 2
        _solve(cp.Problem(cp.Minimize(obj), [S >= 0, S <= 1, cp.sum(S, axis=1) <= m]))
        np.testing.assert_allclose(prox(u, y, m, s), Zc.value, atol=1e-5, rtol=1e-6)
        count += B
    assert count >= 200


def test_multioutput_matches_cvxpy():
    rng = np.random.default_rng(4)
    n, K = 220, 3
    loss = L.MultiOutputL2()
    Y = rng.normal(size=(n, K))
    Zv = cp.Variable((n, K))
    # conjugate
    U = np.asarray(_proj(loss, jnp.asarray(rng.normal(size=(n, K))), jnp.asarray(Y)))
    _solve(cp.Problem(cp.Maximize(cp.sum(cp.multiply(U, Zv)) - cp.sum(cp.norm(Zv - Y, 2, axis=1))),
                      [cp.abs(Zv) <= 30]))
    ref = np.sum(U * Zv.value, 1) - np.linalg.norm(Zv.value - Y, axis=1)
    np.testing.assert_allclose(_conj(loss, jnp.asarray(U), jnp.asarray(Y)), ref, atol=2e-6)
    # dual prox
    U = rng.normal(size=(n, K)) * 2
    U[:10] = Y[:10] * 0.3  # u - s y = 0 for s = 0.3 below
    s = np.exp(rng.uniform(np.log(0.1), np.log(10.0), n))
    s[:10] = 0.3
    _solve(cp.Problem(cp.Minimize(cp.sum(cp.multiply(s[:, None] * Y, Zv)) + cp.sum_squares(Zv - U) / 2),
                      [cp.norm(Zv, 2, axis=1) <= 1]))
    ref = Zv.value
    ours = _prox(loss, jnp.asarray(U), jnp.asarray(Y), jnp.asarray(s))
    np.testing.assert_allclose(ours, ref, atol=2e-6)
    # smoothed multi-output: gradient is the dual prox at z/mu
    sm = loss.smoothed(0.5)
    Z = rng.normal(size=(n, K))
    g = sm.grad(jnp.asarray(Z), jnp.asarray(Y))
    fd = jax.grad(lambda z: jnp.sum(sm.value(z, jnp.asarray(Y))))(jnp.asarray(Z))
    np.testing.assert_allclose(g, fd, atol=1e-10)


# --------------------------------------------------------------------------------------------
# identities
# --------------------------------------------------------------------------------------------
def _all_losses(rng, n):
    cat = {k: (v[0], v[1], v[4]) for k, v in _catalogue(rng, n).items()}
    cat["multi_output"] = (L.MultiOutputL2(), rng.normal(size=(n, 2)), "rows")
    return cat


ALL = NAMES + ["multi_output"]


def _pair(kind, u, z):
    return np.sum(u * z, -1) if kind == "rows" else u * z


@pytest.mark.parametrize("name", ALL)
def test_fenchel_young(name):
    """``l(z) + l*(u) >= u z`` on the domain, with equality at ``u = dual_point(z)``."""
    rng = np.random.default_rng(5)
    loss, y, kind = _all_losses(rng, N)[name]
    z = rng.normal(size=y.shape) * 2.5 if kind == "rows" else _margins(rng, y, kind, loss)
    if kind == "rows":
        z[:20] = y[:20]
    z, y = jnp.asarray(z), jnp.asarray(y)
    u = _dpt(loss, z, y)
    lz = np.asarray(_value(loss, z, y))
    gap = lz + np.asarray(_conj(loss, u, y)) - _pair(kind, np.asarray(u), np.asarray(z))
    np.testing.assert_allclose(gap, 0.0, atol=1e-12)
    np.testing.assert_allclose(_proj(loss, u, y), u, atol=1e-15)
    for _ in range(5):
        w = _domain_points(rng, loss, np.asarray(y))
        fy = lz + np.asarray(_conj(loss, jnp.asarray(w), y)) - _pair(kind, w, np.asarray(z))
        assert np.all(fy >= -1e-12)
    if loss.smooth:
        g = jax.grad(lambda z: jnp.sum(_value(loss, z, y)))(z)
        np.testing.assert_allclose(loss.grad(z, y), g, atol=1e-12)
        np.testing.assert_allclose(loss.grad(z, y), u, atol=1e-12)


@pytest.mark.parametrize("name", NAMES)
def test_max_over_dual_domain(name):
    """``l(z) = max_{u in dom} u z - l*(u)`` on a grid of ``project_dual`` images."""
    rng = np.random.default_rng(6)
    loss, y, kind = _all_losses(rng, N)[name]
    z = _margins(rng, y, kind, loss)
    lz = np.asarray(_value(loss, jnp.asarray(z), jnp.asarray(y)))
    R = 1.0 + np.max(np.abs(np.asarray(_dpt(loss, jnp.asarray(z), jnp.asarray(y)))))  # covers the domain or the maximiser
    grid = np.linspace(-R, R, 4001)
    U = np.asarray(_proj(loss, jnp.asarray(grid)[:, None] + 0 * jnp.asarray(y), jnp.asarray(y)[None, :]))
    vals = U * z - np.asarray(_conj(loss, jnp.asarray(U), jnp.asarray(y)[None, :]))
    best = vals.max(axis=0)
    assert np.all(best <= lz + 1e-12)
    assert np.all(np.abs(best - lz) <= 2 * (2 * R / 4000) * (1 + np.abs(z)))


def test_multioutput_max_over_dual_domain():
    rng = np.random.default_rng(7)
    loss = L.MultiOutputL2()
    y = rng.normal(size=(40, 2))
    z = rng.normal(size=(40, 2))
    ang = np.linspace(0, 2 * np.pi, 4001)
    U = np.stack([np.cos(ang), np.sin(ang)], -1) * 1.3
    vals = []
    for k in range(40):
        Uk = np.asarray(_proj(loss, jnp.asarray(U), jnp.asarray(y[k])[None]))
        vals.append(np.max(Uk @ z[k] - np.asarray(_conj(loss, jnp.asarray(Uk), jnp.asarray(y[k])[None]))))
    lz = np.asarray(_value(loss, jnp.asarray(z), jnp.asarray(y)))
    assert np.all(np.array(vals) <= lz + 1e-12)
    assert np.all(np.abs(np.array(vals) - lz) <= 1e-5 * (1 + lz))


@pytest.mark.parametrize("name", ALL + ["budget"])
def test_prox_conjugate_optimality(name):
    """``v = prox_{s l*}(u)``: ``s l*(w) >= s l*(v) + <u - v, w - v>`` for ``w`` in the domain."""
    rng = np.random.default_rng(8)
    if name == "budget":
        loss, y, kind = L.BudgetHinge(7.5), _pm1(rng, 40), "vec"
    else:
        loss, y, kind = _all_losses(rng, N)[name]
    y = jnp.asarray(y)
    for s in (0.03, 1.0, 40.0):
        u = jnp.asarray(rng.normal(size=y.shape) * 2)
        v = _prox(loss, u, y, s)
        cv = np.asarray(_conj(loss, v, y))
        assert np.all(np.isfinite(cv))
        for _ in range(4):
            w = jnp.asarray(_domain_points(rng, loss, np.asarray(y)))
            cw = np.asarray(_conj(loss, w, y))
            inner = np.asarray((u - v) * (w - v))
            if kind in ("rows",):
                inner = inner.sum(-1)
            if kind == "vec":
                lhs = s * (cw.sum() - cv.sum()) - inner.sum()
            else:
                lhs = s * (cw - cv) - inner
            assert np.all(lhs >= -1e-9), (s, np.min(lhs))


def test_budget_special_cases():
    rng = np.random.default_rng(9)
    n = 50
    y = jnp.asarray(_pm1(rng, n))
    z = jnp.asarray(rng.normal(size=n))
    hinge = jnp.maximum(0.0, 1 - y * z)
    np.testing.assert_allclose(L.BudgetHinge(n).risk(z, y), jnp.mean(hinge), rtol=1e-14)
    np.testing.assert_allclose(L.BudgetHinge(n + 3.7).risk(z, y), jnp.mean(hinge), rtol=1e-14)
    srt = np.sort(np.asarray(hinge))[::-1]
    np.testing.assert_allclose(L.BudgetHinge(3.25).risk(z, y), (srt[:3].sum() + 0.25 * srt[3]) / n, rtol=1e-14)
    np.testing.assert_allclose(L.BudgetHinge(0.0).risk(z, y), 0.0)
    # objective at w = 0 is min(m, n)/n (Pdprox note section 7, item 9)
    np.testing.assert_allclose(L.BudgetHinge(7.0).risk(jnp.zeros(n), y), 7.0 / n)
    # risk = mean(value) and Fenchel-Young for the whole vector
    for m in (0.0, 2.5, 12.0, 80.0):
        loss = L.BudgetHinge(m)
        u = _dpt(loss, z, y)
        np.testing.assert_allclose(jnp.mean(_value(loss, z, y)), loss.risk(z, y), atol=1e-14)
        np.testing.assert_allclose(loss.risk(z, y) + loss.conjugate_risk(u, y), jnp.mean(u * z), atol=1e-14)
    # d risk / d m is the (floor(m)+1)-th largest hinge value
    g = jax.grad(lambda m: L.BudgetHinge(m).risk(z, y))(3.25)
    np.testing.assert_allclose(g, srt[3] / n, rtol=1e-12)


# --------------------------------------------------------------------------------------------
# logistic dual prox: accuracy over extreme steps and inputs
# --------------------------------------------------------------------------------------------
def _logistic_ref(s0, step):
    """Bisection in logit space (400 halvings) on ``step t + sigmoid(t) = s0``."""
    from scipy.special import expit

    lo, hi = (s0 - 1) / step, s0 / step
    for _ in range(400):
        mid = 0.5 * (lo + hi)
        big = step * mid + expit(mid) - s0 > 0
        hi = np.where(big, mid, hi)
        lo = np.where(big, lo, mid)
    return expit(0.5 * (lo + hi))


def test_logistic_prox_extremes():
    rng = np.random.default_rng(10)
    s0 = np.concatenate([rng.uniform(-3, 4, 3000),
                         [0, 1e-300, 1e-12, 0.5, 1, 1 - 1e-12, 1 + 1e-10, -1e-300, 1e8, -1e8]])
    step = np.exp(rng.uniform(np.log(1e-12), np.log(1e12), s0.size))
    ours = np.asarray(jax.jit(_logistic_dual_prox)(s0, step))
    np.testing.assert_allclose(ours, _logistic_ref(s0, step), atol=1e-13, rtol=0)
    np.testing.assert_allclose(_logistic_dual_prox(jnp.asarray([-0.5, 0.3, 1.7]), 0.0), [0.0, 0.3, 1.0])


# --------------------------------------------------------------------------------------------
# derivatives
# --------------------------------------------------------------------------------------------
def _kink_inputs(name, loss, y, s):
    """Inputs ``u`` that put ``u - s y`` (or its analogue) exactly on a kink of the prox."""
    yy = np.asarray(y)
    if name in ("hinge", "logistic", "smoothed_hinge"):
        return np.concatenate([s * yy, s * yy - yy, np.zeros_like(yy)])  # s0 + s in {0, 1}
    if name == "generalized_hinge":
        return np.concatenate([s * yy, -yy, -yy * np.asarray(loss.a), np.zeros_like(yy)])
    if name in ("absolute", "eps_insensitive", "huber"):
        return np.concatenate([s * yy + 1, s * yy - 1, s * yy, np.zeros_like(yy)])
    return np.concatenate([s * yy, np.zeros_like(yy)])


@pytest.mark.parametrize("name", NAMES)
def test_prox_conjugate_derivatives(name):
    """JVPs of ``prox_conjugate`` in ``u`` and ``step`` are finite at kinks and zero, and equal
    central differences at random (non-kink) points."""
    rng = np.random.default_rng(11)
    loss, y, kind = _all_losses(rng, N)[name]
    s = 0.7
    yj = jnp.asarray(y)
    f = lambda u, st: loss.prox_conjugate(u, yj, st)  # noqa: E731
    jvp = jax.jit(lambda x, tx: jax.jvp(f, x, tx)[1])  # one forward and one reverse compile
    vjp = jax.jit(lambda x, ct: jax.vjp(f, *x)[1](ct))
    zero, one = jnp.zeros(()), jnp.ones(())
    # kinks: JVP / VJP finite (one family of kinks per row)
    for row in _kink_inputs(name, loss, y, s).reshape(-1, y.shape[0]):
        x = (jnp.asarray(row), jnp.asarray(s))
        outs = [jvp(x, (jnp.ones(N), zero)), jvp(x, (jnp.zeros(N), one)), *vjp(x, jnp.ones(N))]
        assert all(np.all(np.isfinite(np.asarray(a))) for a in outs)
    # random points: central differences
    u = jnp.asarray(rng.normal(size=y.shape) * 2)
    t = jnp.asarray(rng.normal(size=y.shape))
    x = (u, jnp.asarray(s))
    h = 1e-6
    du = jvp(x, (t, zero))
    fd = (_prox(loss, u + h * t, yj, s) - _prox(loss, u - h * t, yj, s)) / (2 * h)
    np.testing.assert_allclose(du, fd, atol=1e-6)
    ds = jvp(x, (jnp.zeros(N), one))
    fd = (_prox(loss, u, yj, s + h) - _prox(loss, u, yj, s - h)) / (2 * h)
    np.testing.assert_allclose(ds, fd, atol=1e-6)
    ct = jnp.asarray(rng.normal(size=y.shape))
    np.testing.assert_allclose(jnp.sum(vjp(x, ct)[0] * t), jnp.sum(ct * du), rtol=1e-9, atol=1e-12)


def test_value_and_grad_finite_at_kinks():
    rng = np.random.default_rng(12)
    for name, (loss, y, kind) in _all_losses(rng, N).items():
        if kind == "rows":
            z = jnp.asarray(y)  # r = 0
        else:
            z = jnp.asarray(_margins(rng, y, kind, loss))
        g = jax.grad(lambda z: jnp.sum(_value(loss, z, jnp.asarray(y))))(z)
        assert np.all(np.isfinite(g)), name
        assert np.all(np.isfinite(_dpt(loss, z, jnp.asarray(y)))), name


def test_vmap_jit_over_hyperparameters():
    z = jnp.linspace(-2, 2, 9)
    y = jnp.where(jnp.arange(9) % 2 == 0, 1.0, -1.0)
    mus = jnp.array([0.1, 0.5, 1.0])
    vals = jax.jit(jax.vmap(lambda mu: L.SmoothedHinge(mu).risk(z, y)))(mus)
    ref = [L.SmoothedHinge(float(m)).risk(z, y) for m in mus]
    np.testing.assert_allclose(vals, ref, rtol=1e-14)
    # smoothing is uniform: 0 <= hinge - smoothed hinge <= mu/2
    for m in (0.1, 1.0):
        d = L.Hinge().value(z, y) - L.Hinge().smoothed(m).value(z, y)
        assert np.all(d >= -1e-15) and np.all(d <= m / 2 + 1e-15)
    # d risk / d a for the generalized hinge
    g = jax.grad(lambda a: L.GeneralizedHinge(a).risk(z, y))(2.0)
    assert np.isfinite(g)


# --------------------------------------------------------------------------------------------
# validation
# --------------------------------------------------------------------------------------------
@pytest.mark.parametrize("cls", [L.Hinge, L.SquaredHinge, L.Logistic, lambda: L.GeneralizedHinge(2.0),
                                 lambda: L.SmoothedHinge(0.5), lambda: L.BudgetHinge(3.0)])
def test_labels_must_be_pm1(cls):
    loss = cls()
    loss.check_labels(np.array([1.0, -1.0, 1.0]))
    with pytest.raises(ValueError, match=r"\{-1, \+1\}.*0\.0.*2\.0"):
        loss.check_labels(np.array([1.0, 0.0, 2.0, -1.0]))


def test_regression_labels_and_hyperparameters():
    with pytest.raises(ValueError, match="finite"):
        L.Absolute().check_labels(np.array([1.0, np.nan]))
    with pytest.raises(ValueError, match="2 dimension"):
        L.MultiOutputL2().check_labels(np.ones(3))
    with pytest.raises(ValueError, match="a >= 1"):
        L.GeneralizedHinge(0.5)
    with pytest.raises(ValueError, match="tau"):
        L.Quantile(1.5)
    with pytest.raises(ValueError, match="mu must be positive"):
        L.SmoothedHinge(0.0)
    with pytest.raises(ValueError, match="non-negative"):
        L.EpsilonInsensitive(-0.1)
    with pytest.raises(ValueError, match="non-negative"):
        L.BudgetHinge(-1)


@settings(max_examples=60, deadline=None)
@given(st.floats(-5, 5), st.sampled_from([-1.0, 1.0]), st.floats(1e-3, 1e3), st.sampled_from(NAMES))
def test_prox_conjugate_moreau_property(z, y, s, name):
    """Moreau for the conjugate: ``prox_{s l*}(s z) / s`` is a subgradient at
    ``p = z - prox_{s l*}(s z) / s``, i.e. Fenchel--Young holds with equality at ``(p, v)``."""
    loss = _CAT1[name]
    yv = jnp.asarray([y])
    if _CAT1_KIND[name] == "reg":
        yv = yv * 0.7
    v = _prox(loss, jnp.asarray([s * z]), yv, s)
    p = jnp.asarray([z]) - v / s
    fy = _value(loss, p, yv) + _conj(loss, v, yv) - v * p
    assert abs(float(fy[0])) <= 1e-9 * (1 + abs(z) + s)


_c = _catalogue(np.random.default_rng(13), 1)
_CAT1 = {k: v[0] for k, v in _c.items()}
_CAT1_KIND = {k: v[4] for k, v in _c.items()}
