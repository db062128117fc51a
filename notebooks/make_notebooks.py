"""Write the notebooks from plain Python cell lists (keeps them reviewable as code).

Each notebook reads ``JAXPROX_FAST`` (set by the test suite) to shrink iteration counts."""
from pathlib import Path

import nbformat

HERE = Path(__file__).resolve().parent

PRELUDE = '''import os
FAST = os.environ.get("JAXPROX_FAST") == "1"
import jax, jax.numpy as jnp, numpy as np
jax.config.update("jax_enable_x64", True)
import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt
import jaxprox as jp
from jaxprox import losses, penalties'''

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
    ("md", "The certificate is a duality gap: `primal - dual >= P(w) - P*`. The trace records it every `check_every` steps."),
    ("code", '''cnt = int(sol.trace.count)
plt.semilogy(sol.trace.steps[:cnt], sol.trace.gap[:cnt]); plt.xlabel("iteration"); plt.ylabel("duality gap")'''),
    ("md", "## A regularisation path with `vmap` (no recompilation: lambda is an array leaf)"),
    ("code", '''lams = jnp.logspace(-1, -4, 8 if FAST else 32)
path = jax.jit(jax.vmap(lambda l: jp.solve(problem.with_lam(l), solver)))(lams)
print("all converged:", bool(path.converged.all()))
plt.figure(); plt.semilogx(lams, (path.params != 0).sum(1), "o-"); plt.xlabel("lambda"); plt.ylabel("non-zeros")'''),
    ("md", "## The derivative of the solution, by implicit differentiation"),
    ("code", '''v = jnp.ones(problem.d)
f = lambda lam: jnp.vdot(v, jp.solve(problem.with_lam(lam), solver).params)
g = jax.grad(f)(1e-3)
fd = (f(1e-3 + 1e-7) - f(1e-3 - 1e-7)) / 2e-7
print("implicit grad", float(g), " finite difference", float(fd))
assert abs(g - fd) <= 1e-4 * abs(fd)'''),
]


def build(names=None):
    for name, cells in NOTEBOOKS.items():
        if names and name not in names:
            continue
        nb = nbformat.v4.new_notebook()
        nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
        nb.cells = [nbformat.v4.new_markdown_cell(src) if kind == "md" else nbformat.v4.new_code_cell(src)
                    for kind, src in cells]
        nbformat.write(nb, HERE / name)


if __name__ == "__main__":
    build()
