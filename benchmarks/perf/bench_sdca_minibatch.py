"""Mini-batch SDCA / Dual APPA against the sequential epoch, on this CPU (issue "Many lambdas at
once on a GPU": a GPU route for Dual APPA / SDCA).

For logistic + SquaredL2(lam) at two strengths on heart_scale (the demo's case), a1a and phishing,
``jp.SDCA`` and ``jp.DualAPPA`` run with ``batch`` forced to 1 (sequential, the CPU default) and to
mini-batches ``b``; each row gives the epochs (SDCA) or stages (Dual APPA, one epoch each) to the
relative gap ``tol``, the ESO factor ``beta_b``, the dependent steps per epoch ``ceil(n / b)`` and
per run (what decides the time on an accelerator, where every dependent step costs kernel
launches whatever its size), and the CPU wall time (one warm call after the compiling one).
The batch that ``batch="auto"`` would take on an accelerator is marked. No GPU figure is measured
here.

    python benchmarks/perf/bench_sdca_minibatch.py [--tol 1e-8] [--cap 1500] [--out sdca_minibatch]
"""
from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path

import jax

jax.config.update("jax_enable_x64", True)
import jax.numpy as jnp  # noqa: E402

sys.path[:0] = [str(Path(__file__).resolve().parent), str(Path(__file__).resolve().parents[1])]  # this group, harness
import harness  # noqa: E402

import jaxprox as jp  # noqa: E402
from jaxprox import losses, penalties  # noqa: E402
from jaxprox.components.minibatch import auto_batch_size, eso_beta, row_normalised_sigma  # noqa: E402

DATA = ("heart_scale", "a1a", "phishing")
LAMS = (1e-3, 1e-4)
BATCHES = (1, 8, 16, 64, 256)


def run_case(pr, solver):
    fn = jax.jit(lambda p: (lambda s: (s.primal_value, s.gap, s.steps, s.converged))(jp.solve(p, solver)))
    (f, gap, steps, conv), comp, run = harness.time_jax(fn, pr, repeat=1)
    return float(f), float(gap), int(steps), bool(conv), comp, run


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tol", type=float, default=1e-8)
    ap.add_argument("--cap", type=int, default=1500, help="max_steps (epochs / stages)")
    ap.add_argument("--data", default=",".join(DATA))
    ap.add_argument("--out", default="sdca_minibatch")
    cfg = ap.parse_args()
    head = ["data (n x d)", "lam", "solver", "b", "beta_b", "epochs", "converged", "steps / epoch",
            "dependent steps", "vs sequential", "CPU solve s", "compile s", "rel. objective diff"]
    rows = []
    t_all = time.perf_counter()
    for name in cfg.data.split(","):
        X, y = jp.datasets.load(name, dense=False)
        for lam in LAMS:
            pr = jp.ERM(X, jnp.asarray(y, float), losses.Logistic(), penalties.SquaredL2(lam))
            n = pr.n
            sigma = float(row_normalised_sigma(pr.A))
            auto = auto_batch_size(n, sigma)
            for cls in (jp.SDCA, jp.DualAPPA):
                seq = None
                for b in sorted(set(BATCHES) | {auto}):
                    if b > n:
                        continue
                    f, gap, steps, conv, comp, run = run_case(pr, cls(tol=cfg.tol, max_steps=cfg.cap, batch=b))
                    per = math.ceil(n / b)
                    dep = steps * per
                    if b == 1:
                        seq = (f, dep)
                    rows.append([f"{name} ({n} x {pr.d}, sigma {sigma:.0f})", lam, cls.__name__,
                                 f"{b}{' (auto on GPU)' if b == auto else ''}",
                                 f"{float(eso_beta(b, sigma, n)):.3g}", steps, conv, per, dep,
                                 f"{dep / seq[1]:.3g}", run, comp, abs(f - seq[0]) / abs(seq[0])])
                    print(rows[-1], flush=True)
    notes = (f"CPU only (no GPU in this run): the **GPU time is not measured**. "
             f"Relative duality gap tol {cfg.tol:g}, max_steps {cfg.cap} (epochs for SDCA, stages = one "
             "epoch each for DualAPPA); 'converged' False means the cap was reached. 'dependent steps' = "
             "epochs x ceil(n / b): the sequential (scan) steps of a run, each a handful of kernel launches on "
             "an accelerator (the sequential epoch's step also runs a 15-step Newton loop for the logistic "
             "loss, the mini-batch step an unrolled one); 'vs sequential' is its ratio to b = 1. 'rel. "
             "objective diff' against the b = 1 run. sigma = lambda_max of the row-normalised Gram "
             "(30 power iterations); beta_b = 1 + (b - 1)(sigma - 1)/(n - 1). CPU solve s: one warm call, "
             f"shared 2-core machine. Total wall time {time.perf_counter() - t_all:.0f} s.")
    print(harness.write_results(cfg.out, "Mini-batch SDCA / Dual APPA (CPU)",
                                [("Logistic + SquaredL2, sequential vs mini-batch epochs",
                                  harness.markdown_table(head, rows))], notes))


if __name__ == "__main__":
    main()
