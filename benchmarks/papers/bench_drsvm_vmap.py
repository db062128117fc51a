"""DRSVM (paper 004): one ``jax.vmap`` over 32 Wasserstein radii epsilon against 32 separate
solves, same solver, same run.

    python benchmarks/papers/bench_drsvm_vmap.py [--data a1a] [--norm l1] [--c 0]

Solvers: ``jp.DRSVMPDHG(tol=1e-6)`` and ``jp.DRSVMBarrier(tol=1e-6)`` (stop on their certified
duality gap, so the radii need different iteration counts) and ``jp.ISG`` alone (its own
iterate, no PDHG finish) with a fixed budget of 100 epochs (the same work for every radius: the
ratio measures batching alone). The separate solves call
one jitted ``eps -> solve`` 32 times (one compilation); the batched run is ``jax.vmap`` of the
same function (one compilation; the while loop runs until the slowest radius has converged, the
finished ones are frozen). Both are timed warm (median of ``repeat`` runs); compile times are
reported apart. Answers are compared (max |w_vmap - w_single|, objective values). Throughput
ratio = t(32 separate) / t(vmap). Writes ``results/drsvm_vmap.md``.
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import jax

jax.config.update("jax_enable_x64", True)
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

sys.path[:0] = [str(Path(__file__).resolve().parent), str(Path(__file__).resolve().parents[1])]  # this group, harness
import harness  # noqa: E402
import jaxprox as jp  # noqa: E402


def measure(pr, sv, eps, repeat):
    """Time 32 separate jitted solves and one vmapped solve; compare the answers."""
    one = jax.jit(lambda e: jp.solve(pr.with_epsilon(e), sv))
    batched = jax.jit(jax.vmap(lambda e: jp.solve(pr.with_epsilon(e), sv)))
    t0 = time.perf_counter()
    jax.block_until_ready(one(eps[0]))
    comp_one = time.perf_counter() - t0
    sols, t_sep = harness.time_call(lambda: jax.block_until_ready([one(e) for e in eps]),
                                    repeat=repeat)
    comp_one -= t_sep / len(eps)
    bsol, comp_b, t_b = harness.time_jax(batched, eps, repeat=repeat)
    dw = max(float(jnp.max(jnp.abs(bsol.params[0][i] - s.params[0]))) for i, s in enumerate(sols))
    df = max(abs(float(bsol.primal_value[i] - s.primal_value)) / abs(float(s.primal_value))
             for i, s in enumerate(sols))
    steps = [int(s.steps) for s in sols]
    conv = int(jnp.sum(bsol.converged))
    return [len(eps), f"{t_sep:.3g}", f"{t_b:.3g}", f"{t_sep / t_b:.3g}", f"{min(steps)}-{max(steps)}",
            int(bsol.steps.max()), f"{conv}/{len(eps)}", f"{dw:.1e}", f"{df:.1e}", f"{comp_one:.3g}",
            f"{comp_b:.3g}"]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", default="a1a")
    ap.add_argument("--norm", default="l1")
    ap.add_argument("--c", type=float, default=0.0)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    load0 = os.getloadavg()
    X, y = jp.datasets.load(args.data)
    pr = jp.DRSVM(X, y, norm=args.norm, c=args.c)
    eps = jnp.linspace(0.01, 0.3, 32)
    rows = []
    solvers = [("DRSVMPDHG(tol=1e-6)", jp.DRSVMPDHG(tol=1e-6, max_steps=50_000, check_every=64)),
               ("DRSVMBarrier(tol=1e-6)", jp.DRSVMBarrier(tol=1e-6)),
               ("ISG alone (batch 32, 100 epochs, no PDHG finish)", jp.ISG(batch_size=32, step_size=jp.schedules.Geometric(1.0, 0.96),
                                                   max_steps=100, check_every=100, tol=0.0))]
    for label, sv in solvers:
        rows.append([args.data, args.norm, args.c, label] + measure(pr, sv, eps, args.repeat))
        print(rows[-1], flush=True)
    load1 = os.getloadavg()
    heads = ["data", "q", "c", "solver", "radii", "t 32 separate (s)", "t one vmap (s)",
             "throughput ratio separate/vmap", "iterations per radius (separate)",
             "iterations (vmap, slowest)", "vmap converged (tol > 0)", "max |w_vmap - w_single|",
             "max rel. objective diff", "compile single (s)", "compile vmap (s)"]
    notes = (f"eps = linspace(0.01, 0.3, 32), kappa = 1; float64; see the solver column. Load "
             f"average at start {load0[0]:.2f} {load0[1]:.2f} {load0[2]:.2f}, at end "
             f"{load1[0]:.2f} {load1[1]:.2f} {load1[2]:.2f}. **Shared machine**: 2 CPU cores "
             "used by ~7 agents at once; both variants measured back to back in one process.\n\n"
             + __doc__.split("\n\n", 1)[1])
    print(rows)
    harness.write_results("drsvm_vmap", "DRSVM: vmap over 32 radii vs 32 separate solves",
                          [("Throughput", harness.markdown_table(heads, rows))], notes)


if __name__ == "__main__":
    main()
