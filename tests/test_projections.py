"""Projections of jaxprox.projections against cvxpy + Clarabel, algebraic identities
(hypothesis) and derivatives (finite differences; finite at zero and at ties).

cvxpy references: every projection is checked on 200 random instances (sizes 1 to 500), with
zeros, repeated magnitudes, binary features, points already inside and radius 0. Because a
projection is separable across instances, the instances of one size are stacked into *one*
cvxpy problem of independent blocks (the joint argmin is the tuple of the per-instance argmins),
solved once with Clarabel at tight tolerances; each instance is then compared separately.
"""
import warnings

import cvxpy as cp
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from hypothesis.extra import numpy as hnp

jax.config.update("jax_enable_x64", True)

from jaxprox import projections as P  # noqa: E402

# size -> number of instances; 200 in all
SIZES = {1: 40, 2: 40, 5: 40, 17: 40, 100: 30, 500: 10}
MAT_SHAPES = {(1, 1): 40, (2, 3): 40, (3, 3): 40, (4, 2): 40, (5, 4): 30, (8, 6): 10}
METHODS = ("secant", "bisection", "sort")
CLARABEL = dict(solver=cp.CLARABEL, tol_gap_abs=1e-13, tol_gap_rel=1e-13, tol_feas=1e-13, max_iter=200)
ATOL = 2e-6


def _solve(prob):
    """Clarabel at tight tolerances; if it stops on its iteration limit there, again at the
    default-ish 1e-10 (the comparison tolerance is 2e-6)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            prob.solve(**CLARABEL)
        except cp.SolverError:
            pass
        if prob.status not in ("optimal", "optimal_inaccurate"):
            prob.solve(solver=cp.CLARABEL, tol_gap_abs=1e-10, tol_gap_rel=1e-10, tol_feas=1e-10)
    assert prob.status in ("optimal", "optimal_inaccurate"), prob.status


def make_vectors(rng, n, k):
    """k vectors of length n cycling through: gaussian at random scale, repeated magnitudes,
    zeros, tiny (inside), gaussian with its largest magnitude repeated, binary +-1/0."""
    out = np.empty((k, n))
    for i in range(k):
        kind = i % 6
        if kind == 0:
            v = rng.normal(size=n) * np.exp(rng.normal())
        elif kind == 1:
            v = rng.integers(-2, 3, size=n) * 0.5
        elif kind == 2:
            v = np.zeros(n)
        elif kind == 3:
            v = rng.normal(size=n) * 1e-3
        elif kind == 4:
            v = rng.normal(size=n)
            j = np.argmax(np.abs(v))
            v[rng.integers(0, n, size=max(1, n // 3))] = v[j] * rng.choice([-1, 1])
        else:
            v = rng.integers(-1, 2, size=n).astype(float)
        out[i] = v
    return out


def make_radii(rng, X, norm):
    """Radius 0, a fraction of the norm (projection active), or above it (inside)."""
    k = X.shape[0]
    nrm = norm(X)
    choice = np.arange(k) % 4
    frac = rng.uniform(0.05, 0.95, size=k)
    r = np.where(choice == 0, 0.0, np.where(choice == 3, 1.5 * nrm + 0.1, frac * nrm + 1e-3 * (nrm == 0)))
    r[1::7] = rng.uniform(0.1, 3.0, size=r[1::7].shape)
    return r


def batches(seed):
    rng = np.random.default_rng(seed)
    for n, k in SIZES.items():
        yield rng, n, make_vectors(rng, n, k)


FEAS_TOL = 1e-9


def assert_rows(ours, ref, X, name, feasible=None):
    """Instance i passes if ``ours[i]`` is within ``ATOL (1 + max|x_i|)`` of the cvxpy argmin,
    or, when the interior-point answer is less accurate than that (degenerate instances, e.g.
    x exactly on a bound with a zero multiplier), if ``ours[i]`` is feasible and its objective
    ``||y - x||^2`` is no larger than cvxpy's: a feasible point with an objective within ``d`` of
    the optimum is within ``sqrt(d)`` of the projection, so cvxpy cannot be the better answer."""
    ours, ref, X = np.asarray(ours), np.asarray(ref), np.asarray(X)
    err = np.max(np.abs(ours - ref), axis=1) if ours.shape[1] else np.zeros(len(ours))
    ok = err <= ATOL * (1 + np.max(np.abs(X), axis=1, initial=0.0))
    if feasible is not None and not ok.all():
        f_ours = np.sum((ours - X) ** 2, axis=1)
        f_ref = np.sum((ref - X) ** 2, axis=1)
        ok |= feasible(ours) & (f_ours <= f_ref + 1e-12 * (1 + f_ref))
    bad = np.flatnonzero(~ok)
    assert not len(bad), (
        f"{name}: {len(bad)} instances differ, first {bad[0]}: x={X[bad[0]]}, ours={ours[bad[0]]}, "
        f"ref={ref[bad[0]]}, err={err[bad[0]]}"
    )


# ---------------------------------------------------------------------------------------------
# cvxpy references (one stacked problem per size)
# ---------------------------------------------------------------------------------------------
def ref_ball(X, r, kind):
    Y = cp.Variable(X.shape)
    cons = {
        "l1": cp.sum(cp.abs(Y), axis=1) <= r,
        "l2": cp.norm(Y, 2, axis=1) <= r,
        "linf": cp.abs(Y) <= r[:, None] @ np.ones((1, X.shape[1])),
    }[kind]
    _solve(cp.Problem(cp.Minimize(cp.sum_squares(Y - X)), [cons]))
    return Y.value


def ref_box(X, lo, hi):
    Y = cp.Variable(X.shape)
    _solve(cp.Problem(cp.Minimize(cp.sum_squares(Y - X)), [Y >= lo, Y <= hi]))
    return Y.value


def ref_simplex(X, s):
    Y = cp.Variable(X.shape)
    _solve(cp.Problem(cp.Minimize(cp.sum_squares(Y - X)), [Y >= 0, cp.sum(Y, axis=1) == s]))
    return Y.value


def ref_capped(X, cap, total, equality):
    Y = cp.Variable(X.shape)
    sumc = cp.sum(Y, axis=1) == total if equality else cp.sum(Y, axis=1) <= total
    _solve(cp.Problem(cp.Minimize(cp.sum_squares(Y - X)), [Y >= 0, Y <= cap[:, None] @ np.ones((1, X.shape[1])), sumc]))
    return Y.value


def ref_box_hyperplane(X, lo, hi, A, b):
    Y = cp.Variable(X.shape)
    cons = [Y >= lo, Y <= hi, cp.sum(cp.multiply(A, Y), axis=1) == b]
    _solve(cp.Problem(cp.Minimize(cp.sum_squares(Y - X)), cons))
    return Y.value


def ref_l2_ball_hyperplane(X, r, A, b):
    Y = cp.Variable(X.shape)
    cons = [cp.norm(Y, 2, axis=1) <= r, cp.sum(cp.multiply(A, Y), axis=1) == b]
    _solve(cp.Problem(cp.Minimize(cp.sum_squares(Y - X)), cons))
    return Y.value


def ref_epigraph(X, t, kind):
    Y = cp.Variable(X.shape)
    s = cp.Variable(X.shape[0])
    cons = {
        "l1": cp.sum(cp.abs(Y), axis=1) <= s,
        "l2": cp.norm(Y, 2, axis=1) <= s,
        "linf": cp.abs(Y) <= s[:, None] @ np.ones((1, X.shape[1])),
    }[kind]
    _solve(cp.Problem(cp.Minimize(cp.sum_squares(Y - X) + cp.sum_squares(s - t)), [cons]))
    return Y.value, s.value


# ---------------------------------------------------------------------------------------------
# 200 instances per projection
#
# To keep compilation cheap (one compile per projection, not one per size) every instance is
# padded to length NPAD with *neutral* coordinates, chosen so that the padded projection is the
# original projection followed by the padding (zeros for balls and cones; a = 0, lo = hi = 0 for
# hyperplanes; entries below every threshold for the simplices); the padding is then removed and
# the instance compared with its unpadded cvxpy solution.
# ---------------------------------------------------------------------------------------------
NPAD = 500
NORMS = {
    "l1": lambda X: np.abs(X).sum(1),
    "l2": lambda X: np.linalg.norm(X, axis=1),
    "linf": lambda X: np.abs(X).max(1),
}


def pad(A, value=0.0):
    """Pad rows of A (k, n) to length NPAD with ``value`` (scalar or per-row)."""
    k, n = A.shape
    out = np.empty((k, NPAD))
    out[:, :n] = A
    out[:, n:] = np.broadcast_to(np.asarray(value, float).reshape(-1, 1), (k, NPAD - n)) if n < NPAD else 0
    return out


def all_methods(f, methods=METHODS):
    """One jitted, vmapped function evaluating ``f(*args, method)`` for every method."""
    return jax.jit(jax.vmap(lambda *a: tuple(f(*a, m) for m in methods)))


class Collector:
    """Gather (padded inputs, unpadded references) over the sizes, run once, compare."""

    def __init__(self, extra=0):
        self.inputs, self.items = [], []
        self.extra = extra  # trailing non-padded outputs (the s of an epigraph)

    def add(self, padded_inputs, ref, X, feasible):
        """``X``: the point projected (rows, in the layout of ``ref``); ``feasible(Y) -> (k,)``."""
        self.inputs.append(padded_inputs)
        self.items.append((ref, X, feasible))

    def check(self, fn, names):
        args = [np.concatenate(parts) for parts in zip(*self.inputs)]
        outs = fn(*args)
        outs = outs if isinstance(outs, tuple) else (outs,)
        for out, name in zip(outs, names):
            out = np.asarray(out)
            i0 = 0
            for ref, X, feasible in self.items:
                k, n = len(X), X.shape[1] - self.extra
                rows = out[i0 : i0 + k]
                assert np.all(rows[:, n:NPAD] == 0), f"{name}: padding moved"
                ours = np.concatenate([rows[:, :n], rows[:, NPAD:]], axis=1)
                assert_rows(ours, ref, X, f"{name} n={n}", feasible)
                i0 += k
        assert i0 >= 200
        return i0


def tol_of(*arrays):
    return FEAS_TOL * (1 + sum(np.abs(a).reshape(len(a), -1).max(1) for a in arrays))


@pytest.mark.parametrize("kind", ["l1", "l2", "linf"])
def test_balls_vs_cvxpy(kind):
    col = Collector()
    for rng, n, X in batches({"l1": 1, "l2": 2, "linf": 3}[kind]):
        r = make_radii(rng, X, NORMS[kind])
        col.add((pad(X), r), ref_ball(X, r, kind), X, lambda Y, r=r: NORMS[kind](Y) <= r + tol_of(r))
    if kind == "l1":
        col.check(all_methods(P.l1_ball), [f"l1_ball[{m}]" for m in METHODS])
    else:
        f = P.l2_ball if kind == "l2" else P.linf_ball
        col.check(jax.jit(jax.vmap(f)), [f"{kind}_ball"])


def test_box_vs_cvxpy():
    col = Collector()
    for rng, n, X in batches(4):
        lo = -rng.uniform(0, 1.5, size=X.shape)
        hi = lo + rng.uniform(0, 2, size=X.shape) * (rng.uniform(size=X.shape) > 0.1)  # some lo == hi
        feas = lambda Y, lo=lo, hi=hi: np.all((Y >= lo - FEAS_TOL) & (Y <= hi + FEAS_TOL), axis=1)
        col.add((pad(X), pad(lo), pad(hi)), ref_box(X, lo, hi), X, feas)
    col.check(jax.jit(jax.vmap(P.box)), ["box"])


def test_simplex_vs_cvxpy():
    col = Collector()
    for rng, n, X in batches(5):
        s = make_radii(rng, X, NORMS["l1"])
        feas = lambda Y, s=s: np.all(Y >= -FEAS_TOL, axis=1) & (np.abs(Y.sum(1) - s) <= tol_of(s))
        col.add((pad(X, X.min(1) - s - 1), s), ref_simplex(X, s), X, feas)
    col.check(all_methods(P.simplex), [f"simplex[{m}]" for m in METHODS])


@pytest.mark.parametrize("equality", [False, True])
def test_capped_simplex_vs_cvxpy(equality):
    col = Collector()
    for rng, n, X in batches(6 + equality):
        k = len(X)
        cap = rng.uniform(0.05, 1.5, size=k)
        cap[::9] = 0.0
        frac = np.where(np.arange(k) % 5 == 0, 0.0, rng.uniform(0, 1.2 if not equality else 1.0, size=k))
        totals = frac * n * cap
        xpad = np.minimum(X.min(1), 0.0) - cap - 1
        def feas(Y, cap=cap, totals=totals):
            ok = np.all((Y >= -FEAS_TOL) & (Y <= cap[:, None] + FEAS_TOL), axis=1)
            gap = Y.sum(1) - totals
            return ok & ((np.abs(gap) if equality else gap) <= tol_of(totals))

        col.add((pad(X, xpad), cap, totals), ref_capped(X, cap, totals, equality), X, feas)
    fn = all_methods(lambda x, c, t, m: P.capped_simplex(x, c, t, equality, m))
    col.check(fn, [f"capped_simplex[{m}, eq={equality}]" for m in METHODS])


def test_box_hyperplane_vs_cvxpy():
    col = Collector()
    for rng, n, X in batches(8):
        k = len(X)
        lo = np.where(rng.uniform(size=(k, 1)) < 0.5, 0.0, -rng.uniform(0, 1, size=(k, n)))
        hi = lo + rng.uniform(0.1, 2.0, size=(k, n))
        A = rng.choice([-1.0, 1.0], size=(k, n))  # labels (SVM with bias)
        gen = rng.uniform(size=k) < 0.4
        A = np.where(gen[:, None], rng.normal(size=(k, n)) * (rng.uniform(size=(k, n)) > 0.1), A)
        Z = lo + rng.uniform(size=(k, n)) * (hi - lo)  # feasible point
        Z[::5] = np.where(A[::5] > 0, hi[::5], lo[::5])  # b at the edge of the feasible range
        b = np.sum(A * Z, axis=1)
        def feas(Y, lo=lo, hi=hi, A=A, b=b):
            box_ok = np.all((Y >= lo - FEAS_TOL) & (Y <= hi + FEAS_TOL), axis=1)
            return box_ok & (np.abs(np.sum(A * Y, 1) - b) <= tol_of(A * hi, A * lo))

        col.add((pad(X), pad(lo), pad(hi), pad(A), b), ref_box_hyperplane(X, lo, hi, A, b), X, feas)
    fn = all_methods(lambda x, lo, hi, a, b, m: P.box_hyperplane(x, lo, hi, a, b, m))
    col.check(fn, [f"box_hyperplane[{m}]" for m in METHODS])


def test_l2_ball_hyperplane_vs_cvxpy():
    col = Collector()
    for rng, n, X in batches(9):
        k = len(X)
        r = rng.uniform(0.0, 2.0, size=k)
        r[::10] = 0.0
        A = rng.normal(size=(k, n))
        Z = rng.normal(size=(k, n))
        Z *= (r * rng.uniform(0, 1, size=k) / np.maximum(np.linalg.norm(Z, axis=1), 1e-300))[:, None]
        b = np.sum(A * Z, axis=1)
        def feas(Y, r=r, A=A, b=b):
            ball_ok = np.linalg.norm(Y, axis=1) <= r + tol_of(r)
            return ball_ok & (np.abs(np.sum(A * Y, 1) - b) <= tol_of(A) * (1 + r))

        col.add((pad(X), r, pad(A), b), ref_l2_ball_hyperplane(X, r, A, b), X, feas)
    col.check(jax.jit(jax.vmap(P.l2_ball_hyperplane)), ["l2_ball_hyperplane"])


@pytest.mark.parametrize("kind", ["l1", "l2", "linf"])
def test_epigraphs_vs_cvxpy(kind):
    col = Collector(extra=1)
    for rng, n, X in batches({"l1": 10, "l2": 11, "linf": 12}[kind]):
        k = len(X)
        nrm = NORMS[kind](X)
        t = rng.uniform(-1.5, 1.5, size=k) * (nrm + 0.1)
        t[::6] = 0.0
        t[1::6] = -NORMS[{"l1": "linf", "l2": "l2", "linf": "l1"}[kind]](X[1::6]) - 0.1  # polar cone
        t[2::6] = nrm[2::6] + 0.5  # inside
        Yr, sr = ref_epigraph(X, t, kind)
        # compare (y, s) as one vector: s is appended after the (unpadded) y
        feas = lambda Ys: NORMS[kind](Ys[:, :-1]) <= Ys[:, -1] + tol_of(Ys)
        XT = np.concatenate([X, t[:, None]], axis=1)
        col.add((pad(X), t), np.concatenate([Yr, sr[:, None]], axis=1), XT, feas)
    if kind == "l2":
        methods, f = (None,), lambda w, t, m: P.epigraph_l2(w, t)
    else:
        methods, f = METHODS, (P.epigraph_l1 if kind == "l1" else P.epigraph_linf)
    cat = lambda w, t, m: jnp.append(*f(w, t, m))
    col.check(all_methods(cat, methods), [f"epigraph_{kind}[{m}]" for m in methods])


def test_trace_ball_vs_cvxpy():
    rng = np.random.default_rng(13)
    inputs, refs = [], []
    for (m, n), k in MAT_SHAPES.items():
        Xs = make_vectors(rng, m * n, k).reshape(k, m, n)
        nuc = np.array([np.linalg.svd(x, compute_uv=False).sum() for x in Xs])
        r = make_radii(rng, Xs.reshape(k, -1), lambda _: nuc)
        Ys = [cp.Variable((m, n)) for _ in range(k)]
        obj = sum(cp.sum_squares(Y - x) for Y, x in zip(Ys, Xs))
        _solve(cp.Problem(cp.Minimize(obj), [cp.normNuc(Y) <= ri for Y, ri in zip(Ys, r)]))
        padded = np.zeros((k, 8, 6))  # zero padding is neutral for the nuclear norm
        padded[:, :m, :n] = Xs
        inputs.append((padded, r))
        refs.append((Xs, np.stack([Y.value for Y in Ys]), (m, n)))
    out = np.asarray(jax.jit(jax.vmap(P.trace_ball))(*[np.concatenate(p) for p in zip(*inputs)]))
    i0 = 0
    for Xs, ref, (m, n) in refs:
        k = len(Xs)
        ours = out[i0 : i0 + k]
        assert np.all(ours[:, m:, :] == 0) and np.all(ours[:, :, n:] == 0) or np.max(np.abs(ours[:, m:, :])) < 1e-12
        ours = ours[:, :m, :n]
        # SDP (not QP) reference: slightly looser
        bad = [i for i in range(k) if np.max(np.abs(ours[i] - ref[i])) > 2e-5 * (1 + np.abs(Xs[i]).max())]
        assert not bad, f"trace_ball {m}x{n}: {len(bad)} differ, first {bad[0]}"
        i0 += k
    assert i0 >= 200


# ---------------------------------------------------------------------------------------------
# exact worked values (DRSVM note 3.3 table) and the duplicate-magnitude case
# ---------------------------------------------------------------------------------------------
def test_epigraph_worked_values():
    """Zero-padded to length 4 (neutral for norm cones), so one compilation per method."""
    cases = [  # (kind, w, t, y, s)
        ("l2", (3, 4), 0.0, (1.5, 2), 2.5),
        ("l2", (3, 4), 1.0, (1.8, 2.4), 3.0),
        ("l2", (3, 4), 5.0, (3, 4), 5.0),
        ("l2", (3, 4), -5.0, (0, 0), 0.0),
        ("l1", (3, 1), 0.0, (1.5, 0), 1.5),
        ("l1", (3, -1, 2), 1.0, (5 / 3, 0, 2 / 3), 7 / 3),
        ("l1", (1, 1, 1, -1), 0.0, (0.2, 0.2, 0.2, -0.2), 0.8),  # the quick-select bug gives 0.5
        ("linf", (3, 1), 0.0, (1.5, 1), 1.5),
        ("linf", (3, -1, 2), 1.0, (2, -1, 2), 2.0),
    ]
    p4 = lambda v: np.pad(np.asarray(v, float), (0, 4 - len(v)))
    for kind, w, t, y, s in cases:
        for m in METHODS if kind != "l2" else (None,):
            f = {"l2": lambda w, t, m: P.epigraph_l2(w, t), "l1": P.epigraph_l1, "linf": P.epigraph_linf}[kind]
            yy, ss = f(p4(w), t, m)
            np.testing.assert_allclose(yy, p4(y), atol=1e-12, err_msg=f"{kind} {m} {w} {t}")
            np.testing.assert_allclose(ss, s, atol=1e-12)


def test_root_methods_equal_sort_exactly():
    """Root + polish is exact: equal to the sort version to rounding, also with ties."""
    rng = np.random.default_rng(14)
    X = make_vectors(rng, 64, 60)
    r = make_radii(rng, X, NORMS["l1"])
    t = rng.uniform(-1, 1, size=60) * NORMS["l1"](X)
    lo, hi = np.zeros((60, 64)), np.full((60, 64), 0.3)
    A = rng.choice([-1.0, 1.0], size=(60, 64))
    b = np.sum(A * rng.uniform(0, 0.3, size=(60, 64)), axis=1)

    def all3(x, r, t, lo, hi, a, b, m):
        return (P.l1_ball(x, r, m), *P.epigraph_l1(x, t, m), P.box_hyperplane(x, lo, hi, a, b, m))

    out = all_methods(all3)(X, r, t, lo, hi, A, b)
    sec, bis, srt = out[0:4], out[4:8], out[8:12]
    for a_, b_, c_ in zip(sec, bis, srt):
        np.testing.assert_allclose(a_, c_, atol=1e-12)
        np.testing.assert_allclose(b_, c_, atol=1e-12)


def test_small_sizes_unpadded():
    """n = 1 and n = 2 without padding (default method): against closed forms."""
    for m in ("secant",):
        np.testing.assert_allclose(P.l1_ball(jnp.array([-3.0]), 2.0, m), [-2.0])
        np.testing.assert_allclose(P.simplex(jnp.array([-3.0]), 2.0, m), [2.0])
        np.testing.assert_allclose(P.capped_simplex(jnp.array([3.0]), 0.5, 2.0, False, m), [0.5])
        np.testing.assert_allclose(P.box_hyperplane(jnp.array([3.0]), 0.0, 5.0, jnp.array([2.0]), 1.0, m), [0.5])
        np.testing.assert_allclose(P.simplex(jnp.array([1.0, 1.0]), 1.0, m), [0.5, 0.5])
        y, s = P.epigraph_l1(jnp.array([2.0]), 0.0, m)
        np.testing.assert_allclose([y[0], s], [1.0, 1.0])


def test_float32_and_jit():
    x = jnp.asarray(np.random.default_rng(0).normal(size=33), jnp.float32)
    for f in (lambda x: P.l1_ball(x, 1.0),):
        y = jax.jit(f)(x)
        assert y.dtype == jnp.float32 and bool(jnp.all(jnp.isfinite(y)))
    np.testing.assert_allclose(P.l1_ball(x, 1.0), P.l1_ball(x.astype(jnp.float64), 1.0, "sort"), atol=1e-5)


# ---------------------------------------------------------------------------------------------
# identities (hypothesis): idempotence, variational inequality, Moreau
# ---------------------------------------------------------------------------------------------
N = 7
# elements drawn from a small set (ties, zeros) or from floats
elems = st.one_of(st.sampled_from([0.0, 1.0, -1.0, 0.5, -0.5, 2.0]), st.floats(-5, 5, allow_nan=False, width=64))
vec = hnp.arrays(np.float64, N, elements=elems)
rad = st.one_of(st.just(0.0), st.floats(0.0, 6.0))
A_N = jnp.arange(1.0, N + 1)

SETS = {
    "l1": (lambda x, r: P.l1_ball(x, r), lambda y, r: np.abs(y).sum() <= r + 1e-9),
    "l2": (P.l2_ball, lambda y, r: np.linalg.norm(y) <= r + 1e-9),
    "linf": (P.linf_ball, lambda y, r: np.abs(y).max() <= r + 1e-9),
    "simplex": (lambda x, r: P.simplex(x, r), lambda y, r: (y >= -1e-12).all() and abs(y.sum() - r) <= 1e-9),
    "capped": (
        lambda x, r: P.capped_simplex(x, 0.7, r),
        lambda y, r: (y >= -1e-12).all() and (y <= 0.7 + 1e-12).all() and y.sum() <= r + 1e-9,
    ),
    "box_hyp": (
        lambda x, r: P.box_hyperplane(x, -1.0, 1.0, A_N, r),
        lambda y, r: (np.abs(y) <= 1 + 1e-12).all() and abs(y @ np.asarray(A_N) - r) <= 1e-9,
    ),
    "l2_hyp": (
        lambda x, r: P.l2_ball_hyperplane(x, r + 0.5, A_N, 0.3),
        lambda y, r: np.linalg.norm(y) <= r + 0.5 + 1e-9 and abs(y @ np.asarray(A_N) - 0.3) <= 1e-9,
    ),
}


@settings(max_examples=50, deadline=None)
@given(x=vec, z=vec, r=rad, name=st.sampled_from(sorted(SETS)))
def test_projection_identities(x, z, r, name):
    """Feasibility, idempotence P(P(x)) = P(x), and the variational inequality
    <x - P(x), z - P(x)> <= 0 for the feasible z = P(z0)."""
    proj, member = SETS[name]
    px = np.asarray(proj(x, r))
    assert np.all(np.isfinite(px))
    assert member(px, r)
    np.testing.assert_allclose(proj(px, r), px, atol=1e-9)
    pz = np.asarray(proj(z, r))
    assert np.dot(x - px, pz - px) <= 1e-9 * (1 + np.abs(x).sum() * (1 + np.abs(pz).sum()))


EPI = {
    # cone projection, polar-cone projection (the polar of the lq cone is minus the lp cone)
    "l1": (lambda w, t: P.epigraph_l1(w, t), lambda w, t: tuple(-a for a in P.epigraph_linf(-w, -t))),
    "l2": (P.epigraph_l2, lambda w, t: tuple(-a for a in P.epigraph_l2(-w, -t))),
    "linf": (lambda w, t: P.epigraph_linf(w, t), lambda w, t: tuple(-a for a in P.epigraph_l1(-w, -t, "sort"))),
}


@settings(max_examples=50, deadline=None)
@given(w=vec, t=st.floats(-10, 10), u=vec, name=st.sampled_from(sorted(EPI)))
def test_epigraph_moreau(w, t, u, name):
    """v = P_K(v) + P_{K°}(v), <P_K(v), P_{K°}(v)> = 0, idempotence, VI, homogeneity."""
    proj, polar = EPI[name]
    y, s = map(np.asarray, proj(w, t))
    py, ps = map(np.asarray, polar(w, t))
    np.testing.assert_allclose(y + py, w, atol=1e-9)
    np.testing.assert_allclose(s + ps, t, atol=1e-9)
    assert abs(y @ py + s * ps) <= 1e-9 * (1 + np.abs(w).sum() + abs(t)) ** 2
    y2, s2 = proj(y, s)
    np.testing.assert_allclose(y2, y, atol=1e-9)
    np.testing.assert_allclose(s2, s, atol=1e-9)
    uy, us = map(np.asarray, proj(u, 1.0))
    assert (w - y) @ (uy - y) + (t - s) * (us - s) <= 1e-9 * (1 + np.abs(w).sum() + abs(t)) ** 2
    y3, s3 = proj(2.5 * w, 2.5 * t)
    np.testing.assert_allclose(y3, 2.5 * y, atol=1e-9)


# ---------------------------------------------------------------------------------------------
# derivatives
# ---------------------------------------------------------------------------------------------
A6 = jnp.array([1.0, -1.0, 1.0, 1.0, -1.0, 1.0])
VEC_PROJ = {
    "l1_secant": lambda x, r: P.l1_ball(x, r, "secant"),
    "l1_bisection": lambda x, r: P.l1_ball(x, r, "bisection"),
    "l1_sort": lambda x, r: P.l1_ball(x, r, "sort"),
    "simplex": lambda x, r: P.simplex(x, r),
    "capped": lambda x, r: P.capped_simplex(x, 0.6, r),
    "capped_eq": lambda x, r: P.capped_simplex(x, 0.6, r, equality=True),
    "boxhyp": lambda x, r: P.box_hyperplane(x, 0.0, 1.0, A6, r - 1.0),
    "boxhyp_sort": lambda x, r: P.box_hyperplane(x, 0.0, 1.0, A6, r - 1.0, "sort"),
    "epi_l1": lambda x, r: jnp.append(*P.epigraph_l1(x, r - 1.0)),
    "epi_l1_sort": lambda x, r: jnp.append(*P.epigraph_l1(x, r - 1.0, "sort")),
    "epi_linf": lambda x, r: jnp.append(*P.epigraph_linf(x, r - 1.0)),
    "epi_l2": lambda x, r: jnp.append(*P.epigraph_l2(x, r - 1.0)),
    "l2": P.l2_ball,
    "linf": P.linf_ball,
    "box": lambda x, r: P.box(x, -r, r),
    "l2_hyp": lambda x, r: P.l2_ball_hyperplane(x, r + 1.0, A6, 0.3),
}
X_TIES = jnp.array([1.0, -1.0, 1.0, 0.5, 0.5, 0.0])
H = 1e-6


def _derivative_checker(f):
    """One compiled function: value at x +- h dx, the JVP, and <grad of <w, f>, (dx, dr)>."""

    def check(x, r, dx, dr, w):
        _, tan = jax.jvp(f, (x, r), (dx, dr))
        gx, gr = jax.grad(lambda x, r: jnp.dot(w, f(x, r)), argnums=(0, 1))(x, r)
        fd = (f(x + H * dx, r + H * dr) - f(x - H * dx, r - H * dr)) / (2 * H)
        return tan, fd, jnp.dot(gx, dx) + gr * dr, gx, gr

    return jax.jit(check)


@pytest.mark.parametrize("name", sorted(VEC_PROJ))
def test_derivatives(name):
    """JVP == central finite differences at generic points; VJP == JVP (reverse mode works);
    gradients and JVPs finite at x = 0 and at ties, for radius 0 and positive."""
    f = VEC_PROJ[name]
    check = _derivative_checker(f)
    rng = np.random.default_rng(sum(map(ord, name)))
    m = 7 if name.startswith("epi") else 6
    for trial in range(4):
        x = jnp.asarray(rng.normal(size=6) * 1.5)
        r = float(rng.uniform(0.3, 1.5))
        dx, dr, w = jnp.asarray(rng.normal(size=6)), float(rng.normal()), jnp.asarray(rng.normal(size=m))
        tan, fd, vjp_dot, _, _ = check(x, r, dx, dr, w)
        np.testing.assert_allclose(tan, fd, atol=1e-5, err_msg=name)
        np.testing.assert_allclose(vjp_dot, jnp.dot(w, tan), atol=1e-9, err_msg=name)
    for x in (jnp.zeros(6), X_TIES):
        for r in (0.0, 1.0, 2.0):
            out = check(x, r, jnp.ones(6), 1.0, jnp.linspace(-1, 1, m))
            for o in (out[0], out[3], out[4]):
                assert bool(jnp.all(jnp.isfinite(o))), (name, x, r)


def test_trace_ball_derivatives():
    rng = np.random.default_rng(5)

    def check(X, r, V, dr):
        f = lambda X, r: P.trace_ball(X, r)
        _, t = jax.jvp(f, (X, r), (V, dr))
        gX, gr = jax.grad(lambda X, r: jnp.sum(V * f(X, r)), argnums=(0, 1))(X, r)
        fd = (f(X + H * V, r + H * dr) - f(X - H * V, r - H * dr)) / (2 * H)
        return t, fd, jnp.sum(gX * V) + gr * dr, gX

    check = jax.jit(check)
    V = jnp.asarray(rng.normal(size=(4, 3)))
    for r in (0.5, 2.0, 100.0):
        X = jnp.asarray(rng.normal(size=(4, 3)))
        t, fd, vjp_dot, _ = check(X, r, V, 0.7)
        np.testing.assert_allclose(t, fd, atol=1e-6)
        np.testing.assert_allclose(vjp_dot, jnp.sum(V * t), atol=1e-9)
    # zero matrix and repeated singular values: finite (the SVD's own derivative is not)
    ties = [jnp.zeros((4, 3)), jnp.eye(4, 3), jnp.diag(jnp.array([2.0, 2.0, 0.0, 0.0]))[:, :3]]
    for X in ties:
        for r in (0.0, 1.0, 10.0):
            t, _, _, gX = check(X, r, V, 0.7)
            assert bool(jnp.all(jnp.isfinite(t))) and bool(jnp.all(jnp.isfinite(gX)))
        # inside the ball the projection is the identity, and so is its derivative (also at 0)
        t, *_ = check(X, 10.0, V, 0.7)
        np.testing.assert_allclose(t, V, atol=1e-12)
