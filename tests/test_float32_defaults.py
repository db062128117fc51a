"""float32 as most JAX users run it (``jax_enable_x64`` off), with default settings: the default
``tol`` follows the data's precision (1e-5 in float32), so the defaults certify it; the SVM on
separable data (mushrooms) converges instead of returning a NaN gap; no JAX dtype warning. The
x64-off runs are in a child process (the suite runs with x64 on)."""
import json
import os
import pathlib
import subprocess
import sys

import jaxprox as jp

CHILD = r"""
import json, warnings
warnings.simplefilter("error")  # a ConvergenceWarning or JAX's dtype warning fails the run
import jax, numpy as np
assert not jax.config.jax_enable_x64
import jaxprox as jp
from jaxprox.sklearn import SVMClassifier
out = {}
X, y = jp.datasets.load("heart_scale")
for name, problem, solver in (("drsvm_default", jp.DRSVM(X, y), None),
                              ("fista_l1_logistic", jp.ERM(X, y, jp.losses.Logistic(), jp.penalties.L1(1e-2)), jp.FISTA()),
                              ("default_l1_logistic", jp.ERM(X, y, jp.losses.Logistic(), jp.penalties.L1(1e-2)), None)):
    sol = jp.solve(problem, solver)
    out[name] = dict(status=sol.status_name, gap=float(sol.gap), primal=float(sol.primal_value),
                     dtype=str(sol.primal_value.dtype), tol=jp.defaults.default_tol(problem))
Xm, ym = jp.datasets.load("mushrooms")
est = SVMClassifier(C=1).fit(Xm, ym)
out["svm_mushrooms"] = dict(converged=bool(est.converged_), gap=float(np.max(est.gap_)), accuracy=float(est.score(Xm, ym)))
print("RESULT" + json.dumps(out))
"""


def test_defaults_converge_in_float32_without_x64():
    root = pathlib.Path(__file__).resolve().parents[1]
    env = dict(os.environ, JAX_ENABLE_X64="0", PYTHONPATH=os.pathsep.join([str(root), os.environ.get("PYTHONPATH", "")]))
    r = subprocess.run([sys.executable, "-c", CHILD], env=env, capture_output=True, text=True, timeout=600)
    lines = [x for x in r.stdout.splitlines() if x.startswith("RESULT")]
    assert lines, r.stderr[-3000:]
    out = json.loads(lines[0][6:])
    for name in ("drsvm_default", "fista_l1_logistic", "default_l1_logistic"):
        got = out[name]
        assert got["status"] == "converged" and got["dtype"] == "float32" and got["tol"] == 1e-5, (name, got)
        # at an optimal point a float32 gap may round below zero by a few ulps of P (both P and D rounded)
        assert -4 * 1.2e-7 * abs(got["primal"]) <= got["gap"] <= 1e-5 * abs(got["primal"]), (name, got)
    svm = out["svm_mushrooms"]
    assert svm["converged"] and svm["accuracy"] >= 0.999, svm  # LinearSVC: 1.000


def test_default_tol_by_precision():
    import numpy as np

    X, y = jp.datasets.load("heart_scale")
    assert jp.defaults.default_tol(jp.ERM(X, y, jp.losses.Logistic())) == 1e-6
    assert jp.defaults.default_tol(jp.ERM(X.astype(np.float32), y, jp.losses.Logistic())) == 1e-5
    assert jp.FISTA().tol is None and jp.FISTA(tol=1e-8).budgeted(jp.ERM(X, y, jp.losses.Logistic())).tol == 1e-8
