"""The README's figures drawn by :mod:`jaxprox.plot`: the certified gap of three solvers on one
l1-logistic problem (a1a) against steps, and the warm-started path of the same problem.

    python examples/plots.py [--out docs/img]
"""
import argparse
import pathlib

import jax
import jax.numpy as jnp

jax.config.update("jax_enable_x64", True)
import matplotlib  # noqa: E402

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

import jaxprox as jp  # noqa: E402
from jaxprox import plot  # noqa: E402


def main(out: pathlib.Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    X, y = jp.datasets.load("a1a")
    problem = jp.ERM(X, y, jp.losses.Logistic(), jp.penalties.L1(1e-3))
    sols = {name: jp.solve(problem, solver) for name, solver in
            (("ProxNewton", jp.ProxNewton(tol=1e-10)), ("FISTA", jp.FISTA(tol=1e-10)),
             ("PDProx", jp.PDProx(tol=1e-6)))}
    ax = plot.trace(sols)
    ax.set_title("l1-logistic on a1a: certified relative gap")
    ax.figure.savefig(out / "trace.png", dpi=110, bbox_inches="tight")
    lams = jnp.logspace(-1, -4, 32)
    path = jp.solve_path(problem, jp.ProxNewton(tol=1e-8), lams)
    axes = plot.path(path, lams)
    axes[0].figure.savefig(out / "path.png", dpi=110, bbox_inches="tight")
    plt.close("all")
    print("wrote", out / "trace.png", out / "path.png")


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", type=pathlib.Path, default=pathlib.Path(__file__).resolve().parents[1] / "docs" / "img")
    main(ap.parse_args().out)
