"""Write the notebooks from plain Python cell lists (keeps them reviewable as code).

Each notebook reads ``JAXPROX_FAST`` (set by the test suite) to shrink iteration counts.

    python notebooks/make_notebooks.py            # write the notebooks (no outputs)
    python notebooks/make_notebooks.py --execute  # ... and execute them, storing outputs and figures

The shipped notebooks carry the outputs of an ``--execute`` run in fast mode (``JAXPROX_FAST=1``),
so they show their tables and figures as shipped; the test suite executes them again."""
import os
import sys
from pathlib import Path

import nbformat

HERE = Path(__file__).resolve().parent

PRELUDE = '''import os
FAST = os.environ.get("JAXPROX_FAST") == "1"
import jax, jax.numpy as jnp, numpy as np
jax.config.update("jax_enable_x64", True)
%matplotlib inline
import matplotlib.pyplot as plt
import jaxprox as jp
from jaxprox import losses, penalties, plot'''

NOTEBOOKS = {}

NOTEBOOKS["00_getting_started.ipynb"] = [
    ("md", "# Getting started with jaxprox\n\nSolve a sparse logistic regression on bundled real "
           "data (a1a), inside `jit`; a whole regularisation path with `vmap`; and the derivative "
           "of the solution with respect to lambda, checked against finite differences."),
    ("code", PRELUDE),
    ("code", '''X, y = jp.datasets.load("a1a")
problem = jp.ERM(X, y, loss=losses.Logistic(), penalty=penalties.L1(1e-3))
solver = jp.FISTA(tol=1e-9, max_steps=2_000 if FAST else 20_000)
sol = jax.jit(jp.solve)(problem, solver)
print(sol.status_name, "steps", int(sol.steps), "objective", float(sol.primal_value), "gap", float(sol.gap))
print("non-zeros:", int(jnp.sum(sol.params != 0)), "of", problem.d)'''),
    ("md", "The certificate is a duality gap: `primal - dual >= P(w) - P*`. The trace records it every "
           "`check_every` steps; `jaxprox.plot.trace` draws it."),
    ("code", '''plot.trace({"FISTA": sol});'''),
    ("md", "## A regularisation path with `vmap` (no recompilation: lambda is an array leaf)"),
    ("code", '''lams = jnp.logspace(-1, -4, 8 if FAST else 32)
path = jax.jit(jax.vmap(lambda l: jp.solve(problem.with_lam(l), solver)))(lams)
print("all converged:", bool(path.converged.all()), " non-zeros:", (path.params != 0).sum(1).tolist())
plot.path(path, lams);  # coefficients and certified gap against lambda'''),
    ("md", "A 100-lambda path warm-started by `jp.solve_path` with working sets and gap-safe screening "
           "(`jp.WorkingSet`, what `jp.solve_path(problem, lams=...)` picks for l1 models), with a progress bar "
           "(`progress=True` on any solver: steps and the certified gap for a solve, the lambdas done for a path)."),
    ("code", '''lams100 = jnp.logspace(-1, -4, 100)  # the default path solver for l1 (jp.WorkingSet), with a progress bar
path = jp.solve_path(problem, jp.WorkingSet(progress=True), lams100)
print("all converged:", bool(path.converged.all()), " non-zeros at the end:", int((path.params[-1] != 0).sum()))'''),
    ("md", "A 5-fold cross-validation of an l1-logistic model (`jaxprox.sklearn.LogisticRegressionCV`, "
           "each fold one certified path over `Cs`), with a bar of its fits."),
    ("code", '''from jaxprox.sklearn import LogisticRegressionCV
Xb, yb = jp.datasets.load("breast-cancer_scale")
cv = LogisticRegressionCV(Cs=8, cv=5, penalty="l1", progress=True).fit(Xb, yb)
print("chosen C:", cv.C_[0], " mean held-out accuracy:", cv.scores_.mean(axis=0).max().round(4))'''),
    ("md", "## The derivative of the solution, by implicit differentiation"),
    ("code", '''v = jnp.ones(problem.d)
f = jax.jit(lambda lam: jnp.vdot(v, jp.solve(problem.with_lam(lam), solver).params))
g = jax.grad(f)(1e-3)
fd = (f(1e-3 + 1e-7) - f(1e-3 - 1e-7)) / 2e-7
print("implicit grad", float(g), " finite difference", float(fd))
assert abs(g - fd) <= 1e-4 * abs(fd)'''),
]

NOTEBOOKS["01_pdprox.ipynb"] = [
    ("md", "# Pdprox (paper 000): non-smooth loss + non-smooth regulariser\n\nThe paper's headline "
           "comparison: Pdprox against subgradient descent, FOBOS and RDA on a hinge-loss, "
           "l1-regularised SVM (real data, a1a), objective against iterations, with the optimum "
           "from cvxpy + Clarabel."),
    ("code", PRELUDE + "\nimport cvxpy as cp\nfrom jaxprox.baselines import SubgradientDescent, FOBOS, RDA"),
    ("code", """X, y = jp.datasets.load("a1a")
if FAST:
    X, y = X[:400], y[:400]
n, lam = X.shape[0], 1e-3
problem = jp.ERM(X, y, losses.Hinge(), penalties.L1(lam))
w = cp.Variable(X.shape[1])
cp.Problem(cp.Minimize(cp.sum(cp.pos(1 - cp.multiply(y, X @ w))) / n + lam * cp.norm1(w))).solve(solver=cp.CLARABEL)
fstar = float(problem.objective(jnp.asarray(w.value)))
T = 500 if FAST else 5000
common = dict(max_steps=T, check_every=T // 50, tol=0.0)
solvers = {"Pdprox-dual (Alg. 1)": jp.PDProx("dual", restart=None, **common),  # the paper's algorithms
           "Pdprox-primal (Alg. 2)": jp.PDProx("primal", restart=None, **common),
           "Pdprox CP + restart": jp.PDProx("cp", restart=jp.restarts.FixedRestart(T // 5), **common),
           "subgradient": SubgradientDescent(**common), "FOBOS": FOBOS(**common), "RDA": RDA(**common)}
results = {k: jax.jit(jp.solve)(problem, s) for k, s in solvers.items()}
for k, sol in results.items():
    print(f"{k:24s} objective {float(sol.primal_value):.6f}  rel. subopt {(float(sol.primal_value) - fstar) / fstar:.2e}  gap {float(sol.gap):.2e}")
plot.trace(results, optimum=fstar);"""),
    ("code", """best = min(float(results[k].primal_value) for k in results if k.startswith("Pdprox"))
best_baseline = min(float(results[k].primal_value) for k in ("subgradient", "FOBOS", "RDA"))
assert best <= best_baseline + 1e-12, "Pdprox should beat the subgradient baselines\""""),
]

NOTEBOOKS["02_block_fw.ipynb"] = [
    ("md", "# Primal-dual block Frank-Wolfe (paper 001)\n\nSparse classification over an l1 ball: "
           "PDBFW against Frank-Wolfe and accelerated projected gradient (relative objective "
           "against iterations), and the recovered support against a certified optimum."),
    ("code", PRELUDE + "\nfrom jaxprox.baselines import FrankWolfe, AcceleratedPG"),
    ("code", """X, y = jp.datasets.load("heart_scale")
n = X.shape[0]
problem = jp.ERM(X, y, losses.SmoothedHinge(1.0), penalties.SquaredL2(10.0 / n), constraint=jp.constraints.L1Ball(1.0))
ref = jax.jit(jp.solve)(problem, AcceleratedPG(tol=1e-13, max_steps=50_000))
fstar = float(ref.primal_value)
T = 3000 if FAST else 20_000
results = {"PDBFW (s=8)": jax.jit(jp.solve)(problem, jp.PDBlockFW(sparsity=8, delta_scale=10.0, tol=1e-10, max_steps=T)),
           "Frank-Wolfe": jax.jit(jp.solve)(problem, FrankWolfe(tol=1e-10, max_steps=T)),
           "accelerated PG": jax.jit(jp.solve)(problem, AcceleratedPG(tol=1e-10, max_steps=T))}
for k, sol in results.items():
    print(f"{k:16s} rel. subopt {(float(sol.primal_value) - fstar) / fstar:.2e}  steps {int(sol.steps)}  nnz {int(jnp.sum(sol.params != 0))}")
plot.trace(results, optimum=fstar);"""),
    ("code", """supp = lambda w: set(np.flatnonzero(np.abs(np.asarray(w)) > 1e-6))
print("support of the optimum:", sorted(supp(ref.params)))
assert supp(results["PDBFW (s=8)"].params) == supp(ref.params)"""),
]

NOTEBOOKS["03_agm.ipynb"] = [
    ("md", "# AGM-EF (paper 002)\n\nBinary SVM with an unpenalised bias, solved on its dual (box + "
           "one hyperplane) by AGM-EF with adaptive and fixed Lipschitz estimates; the duality gap "
           "certificate per iteration, and the objective against scikit-learn's SVC."),
    ("code", PRELUDE + "\nfrom sklearn.svm import SVC"),
    ("code", """X, y = jp.datasets.load("heart_scale")
n, lam = X.shape[0], 1e-2
model = jp.BiasSVM(X, y, lam)
T = 4000 if FAST else 20_000
results = {"inf-memory, adaptive L": jax.jit(jp.solve)(model, jp.AGM(memory="inf", tol=1e-6, max_steps=T, check_every=50)),
           "1-memory, adaptive L": jax.jit(jp.solve)(model, jp.AGM(memory="1", tol=1e-6, max_steps=T, check_every=50)),
           "inf-memory, fixed L": jax.jit(jp.solve)(model, jp.AGM(memory="inf", adaptive=False, tol=1e-6, max_steps=T, check_every=50))}
svc = SVC(kernel="linear", C=1.0 / (n * lam), tol=1e-12).fit(X, y)
w, b = svc.coef_.ravel(), svc.intercept_[0]
f_svc = np.mean(np.maximum(0, 1 - y * (X @ w + b))) + 0.5 * lam * w @ w
for k, sol in results.items():
    print(f"{k:24s} objective {float(model.objective(sol.params)):.8f} (SVC {f_svc:.8f})  gap {float(sol.gap):.1e}  steps {int(sol.steps)}")
plot.trace(results);"""),
    ("code", """J = float(model.objective(results["inf-memory, adaptive L"].params))
assert abs(J - f_svc) <= 1e-5 * f_svc"""),
]

NOTEBOOKS["04_appa.ipynb"] = [
    ("md", "# APPA and Dual APPA (paper 003)\n\nUn-regularised least squares on real data (a1a; heart_scale in fast mode): "
           "relative excess loss per outer step for Dual APPA and APPA (SVRG inside), and SDCA on an "
           "explicitly regularised problem, against the closed-form (min-norm) optimum."),
    ("code", PRELUDE),
    ("code", """X, y = jp.datasets.load("heart_scale" if FAST else "a1a")
fstar = 0.5 * np.mean((X @ np.linalg.lstsq(X, y, rcond=None)[0] - y) ** 2)
problem = jp.ERM(X, y, losses.Squared())
T = 100 if FAST else 800
runs = {"Dual APPA (lam=1e-2)": jp.DualAPPA(prox_lam=1e-2, tol=1e-9, max_steps=T, check_every=1),
        "APPA + SVRG (lam=1e-2)": jp.APPA(prox_lam=1e-2, inner=jp.SVRG(), tol=1e-9, max_steps=T, check_every=1)}
results = {k: jax.jit(jp.solve)(problem, s) for k, s in runs.items()}
sdca = jax.jit(jp.solve)(jp.ERM(X, y, losses.Squared(), penalties.SquaredL2(1e-4)), jp.SDCA(max_steps=T, check_every=1, tol=0.0))
plt.figure(figsize=(6, 4))
for k, sol in {**results, "SDCA on the lam=1e-4 ridge": sdca}.items():
    c = int(sol.trace.count)
    f = np.asarray(sol.trace.primal[:c])
    plt.semilogy(np.asarray(sol.trace.steps[:c]), np.maximum(f - fstar, 1e-16) / fstar, label=k)
plt.xlabel("outer steps (passes)"); plt.ylabel("relative excess loss"); plt.legend(); plt.grid(alpha=.3)
for k, sol in results.items():
    print(f"{k:24s} rel. excess {(float(sol.primal_value) - fstar) / fstar:.2e}  converged {bool(sol.converged)}")"""),
    ("code", """assert min((float(s.primal_value) - fstar) / fstar for s in results.values()) < (1e-3 if FAST else 1e-6)"""),
]

NOTEBOOKS["05_drsvm.ipynb"] = [
    ("md", "# Wasserstein DRSVM (paper 004)\n\nThe l1-DRSVM (kappa = 1, epsilon = 0.1, c = 0) on a1a "
           "(Table 2 of the paper, optimum 0.651090): ISG against the cvxpy + Clarabel optimum, "
           "suboptimality per epoch, and a path over the robustness radius epsilon with vmap."),
    ("code", PRELUDE + "\nimport cvxpy as cp"),
    ("code", """X, y = jp.datasets.load("a1a")
problem = jp.DRSVM(X, y, norm="l1", kappa=1.0, epsilon=0.1, c=0.0)
E = 900  # the paper-grade schedule: 1e-6 relative at 900 epochs
isg = jp.ISG(batch_size=32, step_size=jp.schedules.Geometric(1.0, 0.985), max_steps=E, check_every=10, tol=0.0,
             stall_window=0)  # the paper's ISG: all E epochs
sol = jax.jit(jp.solve)(problem, isg)
n, d = X.shape
Z = y[:, None] * X
w, lam = cp.Variable(d), cp.Variable()
h = cp.maximum(cp.maximum(1 - Z @ w, 1 + Z @ w - lam), 0)
ref = cp.Problem(cp.Minimize(0.1 * lam + cp.sum(h) / n), [cp.norm1(w) <= lam])
ref.solve(solver=cp.CLARABEL)
print("ISG objective", float(problem.objective(sol.params)), " Clarabel", ref.value, " published 0.651090")
c = int(sol.trace.count)
plt.semilogy(sol.trace.steps[:c], np.maximum(np.asarray(sol.trace.primal[:c]) - ref.value, 1e-12) / ref.value)
plt.xlabel("epoch"); plt.ylabel("relative suboptimality")"""),
    ("code", """eps = jnp.linspace(0.02, 0.2, 6)
objs = jax.jit(jax.vmap(lambda e: problem.with_epsilon(e).objective(jp.solve(problem.with_epsilon(e), isg).params)))(eps)
plt.figure(); plt.plot(eps, objs, "o-"); plt.xlabel("epsilon"); plt.ylabel("robust objective")
assert np.all(np.diff(np.asarray(objs)) >= -1e-4)   # the worst-case risk grows with the radius
assert abs(float(problem.objective(sol.params)) - ref.value) <= 1e-5 * ref.value"""),
]


NOTEBOOKS["06_tuning.ipynb"] = [
    ("md", "# Tuning hyperparameters by differentiating through a solve\n\n"
           "Two validation losses are minimised by gradient descent, the gradient coming from the "
           "implicit derivative of the solution (`jax.grad` of `jp.solve`):\n\n"
           "* lambda of an l1-SVM (smoothed hinge + lam ||w||_1, Pdprox; `examples/tune_lambda.py`),\n"
           "* the Wasserstein radius epsilon of a distributionally robust SVM (DRSVM with the l2 "
           "transport cost, restarted PDHG; `examples/tune_epsilon.py`).\n\n"
           "Each is compared with a grid search done in one `jax.vmap` call. (With the plain hinge, "
           "or the l1/linf DRSVM with c = 0, the problem is a linear programme and the solution is "
           "piecewise constant in the hyperparameter: the derivative is 0 and carries no signal.)"),
    ("code", PRELUDE + """
import sys
sys.path.insert(0, "../examples")
import tune_lambda, tune_epsilon
DATA = "heart_scale" if FAST else "a9a"
STEPS = 3 if FAST else 12
GRID = ["--grid", "3"] if FAST else []"""),
    ("code", """lam = tune_lambda.main(["--data", DATA if FAST else "a1a", "--steps", str(STEPS)] + GRID)
eps = tune_epsilon.main(["--data", DATA, "--steps", str(STEPS)] + GRID)"""),
    ("code", """fig, axes = plt.subplots(1, 2, figsize=(10, 4))
for ax, res, name in ((axes[0], lam, "lambda (l1-SVM, Pdprox)"), (axes[1], eps, "epsilon (DRSVM, PDHG)")):
    ax.semilogx(res.grid, res.grid_losses, "o-", label="grid (one vmap call)")
    p = np.array(res.path)
    ax.semilogx(p[:, 0], p[:, 1], "x--", label="gradient descent")
    ax.set_xlabel(name); ax.set_ylabel("validation loss"); ax.legend()
assert lam.loss < lam.path[0][1] and eps.loss < eps.path[0][1]   # the descent lowers both validation losses
print("lambda: tuned %.3e (V %.5f), grid best V %.5f" % (lam.value, lam.loss, lam.grid_best))
print("epsilon: tuned %.3e (V %.5f), grid best V %.5f" % (eps.value, eps.loss, eps.grid_best))"""),
]

def build(names=None, execute=False):
    for name, cells in NOTEBOOKS.items():
        if names and name not in names:
            continue
        nb = nbformat.v4.new_notebook()
        nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
        nb.cells = [nbformat.v4.new_markdown_cell(src) if kind == "md" else nbformat.v4.new_code_cell(src)
                    for kind, src in cells]
        if execute:
            from nbclient import NotebookClient

            os.environ["JAXPROX_FAST"] = "1"
            NotebookClient(nb, timeout=900, kernel_name="python3", resources={"metadata": {"path": str(HERE)}}).execute()
        nbformat.write(nb, HERE / name)


if __name__ == "__main__":
    build(execute="--execute" in sys.argv)
