"""The float32 precision policy (docs/precision.md): float32 FISTA certifies a 1e-5 relative gap
on real data and along a Lasso path with ``jax_enable_x64`` off, and its certificate is honest
against the float64 certificate of the same iterate; with x64 on, float32 iterates are certified
in float64. The x64-off runs are in a child process (the suite runs with x64 on, conftest.py)."""
import json
import os
import pathlib
import subprocess
import sys

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import scipy.sparse as sp
from scipy.special import expit, xlogy

import jaxprox as jp
from jaxprox.certificates import blocked_rmv

def _svmguide3():
    X, y = jp.datasets.load("svmguide3", dense=True)
    return np.asarray(X), np.asarray(y)


def _gap64(X, y, l1, lam, w):
    """Float64 duality gap of the logistic problem at ``w`` (numpy, independent of jaxprox)."""
    X, y, w = (np.asarray(a, np.float64) for a in (X, y, w))
    n = X.shape[0]
    z = X @ w
    p = np.mean(np.logaddexp(0, -y * z)) + (lam * np.abs(w).sum() if l1 else 0.5 * lam * w @ w)
    s = expit(-y * z)
    v = X.T @ (y * s) / n
    hstar = 0.0 if l1 else v @ v / (2 * lam)
    if l1:
        s = s * min(1.0, lam / np.abs(v).max())
    return p, -np.mean(xlogy(s, s) + xlogy(1 - s, 1 - s)) - hstar


CHILD = r"""
import json, sys, warnings
warnings.simplefilter("ignore")
import jax, jax.numpy as jnp, numpy as np
assert not jax.config.jax_enable_x64
import jaxprox as jp
arrays = np.load(sys.argv[1])
out = []
for i, case in enumerate(json.loads(sys.stdin.read())):
    X, y = arrays[f"X{i}"].astype(np.float32), arrays[f"y{i}"].astype(np.float32)
    pen = jp.penalties.L1 if case["l1"] else jp.penalties.SquaredL2
    sol = jp.solve(jp.ERM(X, y, jp.losses.Logistic(), pen(case["lam"])), jp.FISTA(tol=1e-5, max_steps=4000),
                   warn=False)
    out.append(dict(status=sol.status_name, dtype=str(sol.params.dtype), gap=float(sol.gap),
                    primal=float(sol.primal_value), w=np.asarray(sol.params, float).tolist()))
X, y, lams = (arrays[k] for k in ("lasso_X", "lasso_y", "lasso_lams"))
prob = jp.ERM(X, y, jp.losses.Squared(), jp.penalties.L1(1.0))
path = jax.jit(jax.vmap(lambda lam: jp.solve(prob.with_lam(lam), jp.FISTA(tol=1e-5, max_steps=3000), warn=False)))(lams)
lasso = dict(converged=np.asarray(path.converged).tolist(), gap=np.asarray(path.gap, float).tolist(),
             primal=np.asarray(path.primal_value, float).tolist(), W=np.asarray(path.params, float).tolist(),
             dtype=str(path.params.dtype))
print("RESULT" + json.dumps([out, lasso]))
"""


def _lasso(n=4000, d=200, m=8):
    rng = np.random.default_rng(0)
    X = rng.standard_normal((n, d)).astype(np.float32)
    w = np.zeros(d)
    w[rng.choice(d, 8, replace=False)] = rng.standard_normal(8)
    y = (X @ w + 0.5 * rng.standard_normal(n)).astype(np.float32)
    lam_max = float(np.max(np.abs(X.astype(float).T @ y)) / n)
    return X, y, (lam_max * np.logspace(0, -3, m)).astype(np.float32)


#: how far a float32 gap (x64 off) may fall below the float64 gap of the same iterate, relative to
#: |P|: P and D are each a float32 mean of n terms whose residuals cancel (at the smallest Lasso
#: lambda P is 1/40 of its value at w = 0), so each is rounded by up to ~8 ulps (1 ulp = 1.2e-7).
#: Measured: 1.1e-6 |P| on one host's AMD EPYC (the Lasso path's last lambda), under 1e-6 on others.
ROUNDING_32 = 2e-6


def test_float32_fista_certifies_1e5_without_x64(tmp_path):
    X, y = jp.datasets.load("phishing", dense=True)
    sets = [(np.asarray(X), np.asarray(y)), _svmguide3()]
    cases = []
    for X, y in sets:
        lam_max = np.abs(X.T @ (y / 2)).max() / X.shape[0]
        cases += [dict(X=X, y=y, l1=True, lam=float(0.1 * lam_max)), dict(X=X, y=y, l1=False, lam=1e-4)]
    # a weak penalty: the honest rescaling of l'(A w) alone certified 1.8e-4 after 39,910 steps; with the
    # support-corrected dual point (certificates.support_corrected_dual) it converges in about 1,600
    lam_max = np.abs(sets[0][0].T @ (sets[0][1] / 2)).max() / sets[0][0].shape[0]
    cases.append(dict(X=sets[0][0], y=sets[0][1], l1=True, lam=float(1e-3 * lam_max), weak=True))
    Xl, yl, lams = _lasso()
    arrays = tmp_path / "arrays.npz"  # the data go to the child as a file (as JSON text: 3 s of the test)
    np.savez(arrays, lasso_X=Xl, lasso_y=yl, lasso_lams=lams,
             **{f"{k}{i}": case[k] for i, case in enumerate(cases) for k in ("X", "y")})
    payload = json.dumps([dict(l1=case["l1"], lam=case["lam"]) for case in cases])
    tests = pathlib.Path(__file__).resolve().parent
    env = dict(os.environ, JAX_ENABLE_X64="0", PYTHONPATH=os.pathsep.join(
        [str(tests.parent), os.environ.get("PYTHONPATH", "")]))
    r = subprocess.run([sys.executable, "-c", CHILD, str(arrays)], input=payload, env=env, capture_output=True, text=True,
                       timeout=600)
    lines = [x for x in r.stdout.splitlines() if x.startswith("RESULT")]
    assert lines, r.stderr[-3000:]
    out, lasso = json.loads(lines[0][6:])
    for case, got in zip(cases, out):
        assert got["dtype"] == "float32" and got["status"] == "converged", (case["l1"], case["lam"], got["gap"])
        assert got["gap"] <= 1e-5 * abs(got["primal"])
        p64, d64 = _gap64(case["X"], case["y"], case["l1"], case["lam"], got["w"])
        if case["l1"]:  # its certificate may score another dual point than _gap64's (the support-corrected
            # one, certificates.support_corrected_dual): honest against the float64 optimum
            ref = jp.solve(jp.ERM(case["X"], case["y"], jp.losses.Logistic(), jp.penalties.L1(case["lam"])),
                           jp.ProxNewton(tol=1e-12, max_steps=500))
            assert ref.converged and got["gap"] >= p64 - float(ref.dual_value) - ROUNDING_32 * abs(p64)
            continue
        # honest: the float32 certificate is not below the float64 gap of the same iterate, up to
        # the rounding of two float32 objectives (ROUNDING_32 |P|)
        assert got["gap"] >= (p64 - d64) - ROUNDING_32 * abs(p64), (case["l1"], got["gap"], p64 - d64)
    # the Lasso path: every lambda certified to 1e-5, honest against float64
    assert lasso["dtype"] == "float32" and all(lasso["converged"]), lasso["gap"]
    X, y, W = Xl.astype(float), yl.astype(float), np.asarray(lasso["W"])
    R = X @ W.T - y[:, None]
    P = 0.5 * np.mean(R**2, 0) + lams * np.abs(W).sum(1)
    s = np.minimum(1.0, lams / np.abs(X.T @ R / len(y)).max(0))
    D = -np.mean(0.5 * (R * s) ** 2 + y[:, None] * R * s, 0)
    assert np.all(np.asarray(lasso["gap"]) <= 1e-5 * np.abs(lasso["primal"]))
    assert np.all(np.asarray(lasso["gap"]) >= (P - D) - ROUNDING_32 * P), (lasso["gap"], P - D)


def test_float32_iterates_are_certified_in_float64_with_x64():
    assert jax.config.jax_enable_x64
    X, y = jp.datasets.load("heart_scale")
    X32, y32 = X.astype(np.float32), y.astype(np.float32)
    p32 = jp.ERM(X32, y32, jp.losses.Logistic(), jp.penalties.L1(1e-2))
    sol = jp.solve(p32, jp.FISTA(tol=1e-6))
    assert sol.params.dtype == jnp.float32 and sol.gap.dtype == jnp.float64
    # the same numbers as the float64 problem's certificate of the same (float32) iterate
    p64 = jp.ERM(X32.astype(float), y32.astype(float), jp.losses.Logistic(),
                 jp.penalties.L1(float(np.float32(1e-2))))  # the float32 problem's lam, exactly
    ref = p64.certificate(sol.params.astype(jnp.float64))
    np.testing.assert_allclose([float(v) for v in p32.certificate(sol.params)], [float(v) for v in ref],
                               rtol=1e-12, atol=1e-15)
    assert float(sol.gap) <= 1e-6 * abs(float(sol.primal_value))


@pytest.mark.parametrize("sparse", [False, True])
def test_blocked_rmv_is_rmv(sparse):
    rng = np.random.default_rng(1)
    X = rng.standard_normal((203, 17)) * (rng.random((203, 17)) < 0.3)
    u = rng.standard_normal(203)
    A = jp.operators.as_operator(sp.csr_matrix(X) if sparse else X)
    np.testing.assert_allclose(np.asarray(blocked_rmv(A, jnp.asarray(u))), X.T @ u, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("ridge", [None, 1e-3])
def test_outer_certificate_takes_full_precision_products(ridge):
    """APPA / Dual APPA / SVRG's outer certificate (the duality gap and the curvature bound of
    ``suboptimality_bound``) traces every matrix product at ``HIGHEST`` precision (no TF32 on a
    GPU), as the policy asks of every certificate piece."""
    import re

    from jaxprox import losses, penalties
    from jaxprox.certificates import outer_certificate as _outer_certificate

    X, y = jp.datasets.load("heart_scale", dense=True)
    P = jp.ERM(X, y, losses.Logistic(), None if ridge is None else penalties.SquaredL2(ridge))
    text = jax.jit(lambda w: _outer_certificate(P, w)).lower(np.zeros(X.shape[1])).as_text()
    dots = re.findall(r"stablehlo\.dot_general.*", text)
    assert dots and all("HIGHEST" in d for d in dots)


def test_compensated_rmv_is_exactly_rounded_where_float32_cancels():
    """``X^T u`` with a sum far smaller than its terms (the dual of an l1 penalty at a weak lam):
    float32 ``compensated_rmv`` agrees with the exact value to a few float32 ulps of the result,
    where the plain float32 product is off by hundreds of them."""
    from jaxprox.certificates import compensated_rmv

    rng = np.random.default_rng(3)
    X = rng.standard_normal((20_001, 6)).astype(np.float32)
    u = rng.standard_normal(20_001).astype(np.float32)
    u -= (X @ np.linalg.lstsq(X.astype(np.float64), u.astype(np.float64), rcond=None)[0]).astype(np.float32)
    exact = X.astype(np.float64).T @ u.astype(np.float64)  # float32 products are exact in float64
    scale = np.abs(X.astype(np.float64)).T @ np.abs(u.astype(np.float64))
    assert np.all(np.abs(exact) < 1e-3 * scale)  # heavy cancellation
    eps = np.finfo(np.float32).eps
    got = np.asarray(jax.jit(compensated_rmv)(jnp.asarray(X), jnp.asarray(u)), np.float64)
    plain = np.asarray(jnp.asarray(u) @ jnp.asarray(X), np.float64)
    assert np.all(np.abs(got - exact) <= 4 * eps * np.abs(exact) + 1e-12 * scale), (got - exact) / exact
    assert np.max(np.abs(plain - exact) / np.abs(exact)) > 100 * eps


CHILD_L1SVM = r"""
import json, sys, warnings
warnings.simplefilter("ignore")
import jax, jax.numpy as jnp, numpy as np
assert not jax.config.jax_enable_x64
import jaxprox as jp
a = np.load(sys.argv[1])
prob = jp.ERM(jnp.asarray(a["X"]), jnp.asarray(a["y"]), jp.losses.Hinge(), jp.penalties.L1(float(a["lam"])))
p, d, g = prob.best_certificate(jnp.asarray(a["w"]), jnp.asarray(a["u"]))
from jaxprox import certificates as cert
ds = max(float(cert.projected_dual_value(prob, u)) for u in cert.support_duals(prob, jnp.asarray(a["w"])))
# the default route (PDProx in float32) on german.numer at the same weak penalty
Xg, yg = (jnp.asarray(v, jnp.float32) for v in jp.datasets.load("german.numer", dense=True))
lam_g = 1e-3 * float(jnp.max(jnp.abs(Xg.T @ yg))) / Xg.shape[0]
sol = jp.solve(jp.ERM(Xg, yg, jp.losses.Hinge(), jp.penalties.L1(lam_g)), warn=False)
print(json.dumps(dict(primal=float(p), gap=float(g), dtype=str(p.dtype), support_gap=float(p) - ds,
                      route=type(jp.capabilities.default_solver(jp.ERM(Xg, yg, jp.losses.Hinge(),
                                                                       jp.penalties.L1(lam_g)))).__name__,
                      route_converged=bool(sol.converged), route_dtype=str(sol.params.dtype),
                      route_gap=float(sol.gap / sol.primal_value))))
"""


def test_float32_certificate_of_the_1norm_svm_optimum_without_x64(tmp_path):
    """The 1-norm SVM on heart at a weak penalty (1e-3 of the smallest lam with w* = 0): its float64
    optimum rounded to float32 certifies 1e-6 relative in exact arithmetic and 2e-6 in float32 with
    x64 off (the certificate's ``A^T u`` compensated: the row-blocked float32 product moves
    ``D(u)`` by 7e-6 relative here; the l1 dual scale 4 ulps short of the boundary, not 16), also
    with the dual points of its support alone; and the float32 route certifies german.numer."""
    X, y = (np.asarray(a, np.float64) for a in jp.datasets.load("heart_scale"))
    lam = 1e-3 * np.max(np.abs(X.T @ y)) / X.shape[0]
    problem = jp.ERM(X, y, jp.losses.Hinge(), jp.penalties.L1(lam))
    sol = jp.solve(problem, jp.SVMNewton(tol=1e-11, max_steps=400))
    assert sol.converged
    f32 = lambda a: np.asarray(a, np.float32)  # noqa: E731
    np.savez(tmp_path / "opt.npz", X=f32(X), y=f32(y), lam=f32(lam), w=f32(sol.params), u=f32(sol.dual))
    env = {k: v for k, v in os.environ.items() if k != "JAX_ENABLE_X64"}
    env["JAX_ENABLE_X64"] = "0"
    out = subprocess.run([sys.executable, "-c", CHILD_L1SVM, str(tmp_path / "opt.npz")], capture_output=True,
                         text=True, env=env, check=True)
    got = json.loads(out.stdout.strip().splitlines()[-1])
    exact = jp.ERM(f32(X).astype(np.float64), y, jp.losses.Hinge(), jp.penalties.L1(float(f32(lam))))
    _, _, g64 = exact.best_certificate(f32(sol.params).astype(np.float64), f32(sol.dual).astype(np.float64))
    assert float(g64) <= 1e-6 * got["primal"]  # what the rounded optimum certifies in exact arithmetic
    assert got["dtype"] == "float32" and 0 <= got["gap"] <= 2e-6 * got["primal"], got
    assert got["gap"] - float(g64) <= 1e-6 * got["primal"], (got, float(g64))
    # the dual points of w's support alone certify the rounded optimum as well (certificates.support_duals)
    assert 0 <= got["support_gap"] <= 2e-6 * got["primal"], got
    # and with them PDProx, the float32 route, certifies german.numer at 1e-3 (it stopped at its
    # 200,000-step cap 5e-3 short without them)
    assert got["route"] == "PDProx" and got["route_converged"] and got["route_dtype"] == "float32", got
    assert 0 <= got["route_gap"] <= 1e-5, got
