"""``jp.solve(problem)`` (the default route, :func:`jaxprox.capabilities.default_solver`) certifies
the default tol of the data's precision where the defaults sweep found it stopping short in float32
(``benchmarks/results/defaults_default.md``), checked against float64 references: cvxpy + Clarabel
(tolerances 1e-10) for the l1-DRSVM, ProxNewton certified to 1e-12 for l1-logistic regression.
The float32 solves run with x64 off (as most JAX users run it) in one child process."""
import json
import os
import pathlib
import subprocess
import sys

import cvxpy as cp
import numpy as np

import jaxprox as jp

# the held-out "wide_sparse" set of the defaults sweep, l1-logistic at 1e-2 and 1e-3 lam_max
WIDE = r"""
def wide_sparse(dtype, strength=1e-2):  # 100 x 2000, 1% non-zeros, labels of a 20-sparse model, 10% flipped
    rng = np.random.default_rng(0)
    X = rng.standard_normal((100, 2000)) * (rng.random((100, 2000)) < 0.01)
    w = np.zeros(2000)
    w[rng.choice(2000, 20, replace=False)] = rng.standard_normal(20)
    y = np.where(X @ w + 1e-3 * rng.standard_normal(100) > 0, 1.0, -1.0)
    y = np.where(rng.random(100) < 0.1, -y, y)
    lam = strength * float(np.max(np.abs(X.T @ y)) / 200)
    return jp.ERM(X.astype(dtype), y.astype(dtype), jp.losses.Logistic(), jp.penalties.L1(lam))
"""
exec(WIDE)

#: the smoothed hinge with a ridge over an l1 ball on unscaled australian (the defaults sweep's
#: l1-ball family): in float32 ProxNewton's Newton point rounded to w (its prox-gradient steps
#: below the rounding of w) and the gap stayed at 2.7e-5 relative at an optimal point, 500 steps
BALL = r"""
def ball(dt, r):
    Xa, ya = jp.datasets.load("australian", dense=True)
    Xa, ya = np.asarray(Xa, dt), np.asarray(ya, dt)
    return jp.ERM(Xa, ya, jp.losses.SmoothedHinge(1.0), jp.penalties.SquaredL2(10.0 / Xa.shape[0]),
                  jp.constraints.L1Ball(r))
"""

CHILD = r"""
import json, warnings
warnings.simplefilter("error")  # a ConvergenceWarning fails the run
import jax, numpy as np
assert not jax.config.jax_enable_x64
import jaxprox as jp
from jaxprox.capabilities import default_solver
out = {}
X, y = jp.datasets.load("heart_scale")
Xs, ys = jp.datasets.load("splice")
Xs, ys = np.asarray(Xs.toarray(), np.float32)[:1000], np.asarray(ys, np.float32)[:1000]
lam_s = float(np.max(np.abs(Xs.T @ ys)) / (2 * Xs.shape[0]))
# BALL
# WIDE
for name, problem in (("l1_logistic_wide", wide_sparse(np.float32)),
                      ("l1_logistic_wide_0.001", wide_sparse(np.float32, 1e-3)),
                      ("drsvm_eps_0.01", jp.DRSVM(np.asarray(X, np.float32), np.asarray(y, np.float32), epsilon=0.01)),
                      ("l1_logistic_splice", jp.ERM(Xs, ys, jp.losses.Logistic(), jp.penalties.L1(1e-2 * lam_s))),
                      *((f"l1_ball_{r:g}_australian", ball(np.float32, r)) for r in (1.0, 10.0))):
    sol = jp.solve(problem)
    params = jax.tree.map(lambda v: np.asarray(v, np.float64).tolist(), sol.params)
    out[name] = dict(status=sol.status_name, gap=float(sol.gap), primal=float(sol.primal_value), params=params,
                     solver=type(default_solver(problem)).__name__, dtype=str(sol.primal_value.dtype))
# the default path (working sets around ProxNewton) on a1a, 20 lambdas down to lam_max / 1000
Xa, ya = (np.asarray(a, np.float32) for a in jp.datasets.load("a1a", dense=True))
lam_a = float(np.max(np.abs(Xa.T @ ya)) / (2 * Xa.shape[0]))
path = jp.solve_path(jp.ERM(Xa, ya, jp.losses.Logistic(), jp.penalties.L1(lam_a)),
                     lams=np.geomspace(lam_a, lam_a / 1000, 20).astype(np.float32))
out["path_a1a"] = dict(status=[int(v) for v in np.asarray(path.status)], gap=np.asarray(path.gap, float).tolist(),
                       primal=np.asarray(path.primal_value, float).tolist(), dtype=str(path.params.dtype),
                       W=np.asarray(path.params, np.float64).tolist())
print("RESULT" + json.dumps(out))
""".replace("# WIDE\n", WIDE).replace("# BALL\n", BALL)


def _float32_default_solves():
    root = pathlib.Path(__file__).resolve().parents[1]
    # XLA's default flags, as users run it (the suite runs at optimisation level 0)
    env = dict(os.environ, JAX_ENABLE_X64="0", PYTHONPATH=os.pathsep.join([str(root), os.environ.get("PYTHONPATH", "")]),
               XLA_FLAGS="--xla_cpu_multi_thread_eigen=false")
    r = subprocess.run([sys.executable, "-c", CHILD], env=env, capture_output=True, text=True, timeout=600)
    lines = [x for x in r.stdout.splitlines() if x.startswith("RESULT")]
    assert lines, r.stderr[-3000:]
    return json.loads(lines[0][6:])


def _drsvm_clarabel(X, y, eps):
    """P* of the l1-DRSVM (kappa = 1, c = 0): ``eps lam + mean max(1 - u, 1 + u - lam, 0)``,
    ``u = y x^T w``, over ``||w||_1 <= lam``."""
    w, lam = cp.Variable(X.shape[1]), cp.Variable()
    u = cp.multiply(y, X @ w)
    pr = cp.Problem(cp.Minimize(lam * eps + cp.sum(cp.maximum(cp.maximum(1 - u, 1 + u - lam), 0)) / X.shape[0]),
                    [cp.norm1(w) <= lam])
    pr.solve(solver=cp.CLARABEL, tol_gap_abs=1e-10, tol_gap_rel=1e-10, tol_feas=1e-10)
    return float(pr.value)


def test_default_route_certifies_float32_default_tol():
    out = _float32_default_solves()
    X, y = jp.datasets.load("heart_scale")
    X, y = np.asarray(X, np.float64), np.asarray(y, np.float64)
    Xs, ys = jp.datasets.load("splice")
    Xs, ys = np.asarray(Xs.toarray(), np.float64)[:1000], np.asarray(ys, np.float64)[:1000]
    lam_s = float(np.max(np.abs(Xs.T @ ys)) / (2 * Xs.shape[0]))
    l1s = jp.ERM(Xs, ys, jp.losses.Logistic(), jp.penalties.L1(1e-2 * lam_s))
    ref_s = jp.solve(l1s, jp.ProxNewton(tol=1e-12, max_steps=5000))
    assert ref_s.converged
    wide = wide_sparse(np.float64)
    ref_w = jp.solve(wide, jp.ProxNewton(tol=1e-12, max_steps=5000))
    wide3 = wide_sparse(np.float64, 1e-3)
    ref_w3 = jp.solve(wide3, jp.ProxNewton(tol=1e-12, max_steps=5000))
    assert ref_w.converged and ref_w3.converged
    drsvm = jp.DRSVM(X, y, epsilon=0.01)
    scope = {"jp": jp, "np": np}
    exec(BALL, scope)
    balls = {f"l1_ball_{r:g}_australian": scope["ball"](np.float64, r) for r in (1.0, 10.0)}
    refs = {k: jp.solve(b, jp.ProxNewton(tol=1e-12, max_steps=5000)) for k, b in balls.items()}
    assert all(bool(ref.converged) for ref in refs.values())
    cases = {**{k: (b, float(refs[k].dual_value), "ProxNewton") for k, b in balls.items()},
             "l1_logistic_wide": (wide, float(ref_w.dual_value), "ProxNewton"),
             "l1_logistic_wide_0.001": (wide3, float(ref_w3.dual_value), "ProxNewton"),
             "drsvm_eps_0.01": (drsvm, _drsvm_clarabel(X, y, 0.01), "DRSVMPDHG"),
             "l1_logistic_splice": (l1s, float(ref_s.dual_value), "ProxNewton")}
    for name, (problem, p_star, solver) in cases.items():
        got = out[name]
        # stopped short: FISTA on the wide data (2e-4); the barrier at its float32 gap floor (4e-5); ProxNewton at
        # 4e-5 on splice (its Newton point rounded to w: ProxNewton.support_newton_point) and at 2e-5 on the wide
        # data at 1e-3 at an optimal point (the honest rescaling of l'(A w): certificates.support_corrected_dual)
        assert got["status"] == "converged" and got["dtype"] == "float32" and got["solver"] == solver, (name, got)
        # at an optimal point a float32 gap may round below zero by a few ulps of P (the l1 balls)
        rounding = 4 * float(np.finfo(np.float32).eps) * abs(got["primal"])
        assert -rounding <= got["gap"] <= 1e-5 * abs(got["primal"]), (name, got)
        params = tuple(np.asarray(v) for v in got["params"]) if isinstance(got["params"][0], list) \
            else np.asarray(got["params"])
        f = float(problem.objective(params))  # the float32 point, in float64
        assert f - p_star <= got["gap"] + 1e-6 * abs(p_star), (name, f, p_star, got["gap"])
        assert abs(f - p_star) <= 1e-5 * abs(p_star), (name, f, p_star)
    # the float32 path: every lambda certified (its working sets' subproblems stopped against the
    # whole problem's certified gap, which scores the support-corrected dual point: with the screening's
    # gap alone 5 of these 20 stalled 1e-2 to 5e-2 short), honest against float64 solves
    got = out["path_a1a"]
    Xa, ya = (np.asarray(a, np.float64) for a in jp.datasets.load("a1a", dense=True))
    lam_a = float(np.max(np.abs(Xa.T.astype(np.float32) @ ya.astype(np.float32))) / (2 * Xa.shape[0]))
    lams = np.geomspace(lam_a, lam_a / 1000, 20).astype(np.float32)
    assert got["dtype"] == "float32" and got["status"] == [0] * 20, got["status"]
    refs = jp.solve_path(jp.ERM(Xa, ya, jp.losses.Logistic(), jp.penalties.L1(float(lams[0]))),
                         jp.ProxNewton(tol=1e-12, max_steps=500), lams.astype(np.float64))
    assert bool(np.all(np.asarray(refs.converged)))
    for lam, gap, primal, w, p_star in zip(lams, got["gap"], got["primal"], got["W"], np.asarray(refs.dual_value)):
        problem = jp.ERM(Xa, ya, jp.losses.Logistic(), jp.penalties.L1(float(lam)))
        assert -4 * float(np.finfo(np.float32).eps) * primal <= gap <= 1e-5 * primal, (lam, gap)
        assert float(problem.objective(np.asarray(w))) - p_star <= gap + 1e-6 * p_star, (lam, gap)


def test_default_solver_by_precision():
    X, y = jp.datasets.load("heart_scale")
    X, y = np.asarray(X), np.asarray(y)
    default = jp.capabilities.default_solver
    assert type(default(jp.DRSVM(X, y, epsilon=0.01))).__name__ == "DRSVMBarrier"
    assert type(default(jp.DRSVM(X.astype(np.float32), y.astype(np.float32), epsilon=0.01))).__name__ == "DRSVMPDHG"
    assert type(default(wide_sparse(np.float64))).__name__ == "FISTA"
    assert type(default(wide_sparse(np.float32))).__name__ == "ProxNewton"
    svm = lambda dt: jp.ERM(X.astype(dt), y.astype(dt), jp.losses.Hinge(), jp.penalties.SquaredL2(0.01))  # noqa: E731
    assert type(default(svm(np.float64))).__name__ == "SVMNewton"
    assert type(default(svm(np.float32))).__name__ == "SVMNewton"
    assert type(default(jp.BiasSVM(X, y, 0.01))).__name__ == "BiasSVMNewton"
    assert type(default(jp.BiasSVM(X, y, 0.01, space="primal", mu=1e-3, penalty="l1"))).__name__ == "AGM"
    # more features than the Newton systems are formed for (a d x d Hessian per step): the first-order routes
    Xw = np.tile(X[:20], (1, 316))  # 20 x 4108
    assert type(default(jp.BiasSVM(Xw, y[:20], 0.01))).__name__ == "AGM"
    assert type(default(jp.ERM(Xw, y[:20], jp.losses.Hinge(), jp.penalties.SquaredL2(0.01)))).__name__ == "PDProx"
    assert type(default(jp.BiasSVM(X.astype(np.float32), y.astype(np.float32), 0.01))).__name__ == "BiasSVMNewton"
    # the 1-norm SVM: SVMNewton in float64 on data with d <= n; PDProx in float32 and on wide data
    l1svm = lambda dt, A=X, b=y: jp.ERM(A.astype(dt), b.astype(dt), jp.losses.Hinge(), jp.penalties.L1(0.01))  # noqa: E731
    assert type(default(l1svm(np.float64))).__name__ == "SVMNewton"
    assert type(default(l1svm(np.float32))).__name__ == "PDProx"
    assert type(default(l1svm(np.float64, X[:10], y[:10]))).__name__ == "PDProx"
