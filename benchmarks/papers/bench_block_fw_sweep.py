"""PDBlockFW off the benchmark's data: does each dual step converge, and is its certificate honest?

A sweep over the bundled LIBSVM sets (``jaxprox/data``: heart_scale, breast-cancer_scale, a1a,
german.numer and the unscaled australian), two losses (smoothed hinge, squared), three l1 radii
(0.3, 3, 30) and two ``mu`` (1/n, 100/n), with ``s = nnz(x*) + 2`` and ``max_steps = 10000`` (the
library default), for the three dual steps (``"lipschitz"``: the default; ``"curvature"`` and
``"newton"``: the extensions). Reference: ``AcceleratedPG`` to a duality gap of ``1e-12`` relative
(an independent algorithm with its own certificate; the Clarabel comparisons are in
``tests/test_block_fw.py``).

Per case we record whether ``sol.converged``, the steps, the true relative suboptimality of the
returned point, and two checks that must never fail: a converged run is within ``2e-6`` of ``P*``
("false converged"), and the reported gap bounds the true suboptimality ("dishonest gap").

    OPENBLAS_NUM_THREADS=1 python benchmarks/papers/bench_block_fw_sweep.py     # ~15 min on 2 cores
"""
from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np

sys.path[:0] = [str(Path(__file__).resolve().parent), str(Path(__file__).resolve().parents[1])]  # this group, harness

import harness  # noqa: E402
import jax  # noqa: E402

jax.config.update("jax_enable_x64", True)

import jaxprox as jp  # noqa: E402
from jaxprox.baselines.frank_wolfe import AcceleratedPG  # noqa: E402
from jaxprox.constraints import L1Ball  # noqa: E402
from jaxprox.losses import SmoothedHinge, Squared  # noqa: E402
from jaxprox.penalties import SquaredL2  # noqa: E402
from jaxprox.solvers import block_fw  # noqa: E402
from jaxprox.solvers.block_fw import PDBlockFW  # noqa: E402

DATA = ["heart_scale", "breast-cancer_scale", "a1a", "german.numer", "australian"]
LOSSES = {"smoothed hinge": SmoothedHinge(1.0), "squared": Squared()}
RADII = (0.3, 3.0, 30.0)
MUS = (1.0, 100.0)
STEPS = ("lipschitz", "curvature", "newton")


def run_case(prob, dual_step, s, pstar):
    t0 = time.perf_counter()
    sol = jp.solve(prob, PDBlockFW(sparsity=s, dual_step=getattr(block_fw, dual_step.title())()))
    t = time.perf_counter() - t0
    f = float(prob.objective(sol.params))
    rel = (f - pstar) / abs(pstar)
    conv = bool(sol.converged)
    return dict(conv=conv, steps=int(sol.steps), rel=rel, gap=float(sol.gap) / abs(pstar), t=t,
                false_conv=conv and not rel <= 2e-6,
                dishonest=not float(sol.gap) >= (f - pstar) - 1e-12 * abs(pstar),
                nan=not np.isfinite(rel))


def main():
    cases = []
    for name in DATA:
        X, y = jp.datasets.load(name)
        y = np.asarray(y, float)
        n = X.shape[0]
        for lname, loss in LOSSES.items():
            for r in RADII:
                for mu_n in MUS:
                    prob = jp.ERM(X, y, loss=loss, penalty=SquaredL2(mu_n / n), constraint=L1Ball(r))
                    ref = jp.solve(prob, AcceleratedPG(tol=1e-12, max_steps=400_000, check_every=50))
                    pstar = float(ref.primal_value)
                    xs = np.asarray(ref.params)
                    nnz = int(np.sum(np.abs(xs) > 1e-9 * max(np.abs(xs).max(), 1e-300)))
                    row = dict(data=name, loss=lname, r=r, mu_n=mu_n, nnz=nnz, d=X.shape[1],
                               ref_conv=bool(ref.converged), res={})
                    for st in STEPS:
                        row["res"][st] = run_case(prob, st, nnz + 2, pstar)
                    cases.append(row)
                    print(f"{name:20s} {lname:14s} r={r:4g} mu={mu_n:g}/n nnz={nnz:3d} "
                          + "  ".join(f"{st}: {'ok' if c['conv'] else '--'} {c['steps']:5d} {c['rel']:8.1e}"
                                      + (" FALSE" if c["false_conv"] else "") + (" DISHONEST" if c["dishonest"] else "")
                                      for st, c in row["res"].items()), flush=True)
    write(cases)


def write(cases):
    summary = []
    for st in STEPS:
        rs = [c["res"][st] for c in cases]
        conv = [r for r in rs if r["conv"]]
        by_mu = {m: sum(c["res"][st]["conv"] for c in cases if c["mu_n"] == m) for m in MUS}
        tot_mu = {m: sum(c["mu_n"] == m for c in cases) for m in MUS}
        blown = sum(r["rel"] > 1.0 or not np.isfinite(r["rel"]) for r in rs)
        summary.append([st, f"{len(conv)} / {len(rs)}", f"{by_mu[1.0]} / {tot_mu[1.0]}",
                        f"{by_mu[100.0]} / {tot_mu[100.0]}",
                        f"{int(np.median([r['steps'] for r in conv]))}" if conv else "-",
                        f"{blown}", f"{sum(r['false_conv'] for r in rs)}", f"{sum(r['dishonest'] for r in rs)}",
                        f"{sum(r['nan'] for r in rs)}"])
    table = harness.markdown_table(
        ["dual step", "converged", "at mu = 1/n", "at mu = 100/n", "median steps (converged)",
         "rel > 1 at the end (P > 2 P*)", "false converged", "dishonest gap", "NaN"], summary)
    rows = []
    for c in cases:
        rows.append([c["data"], c["loss"], f"{c['r']:g}", f"{c['mu_n']:g}/n", f"{c['nnz']} / {c['d']}"]
                    + [(f"{r['steps']}" if r["conv"] else f"no ({r['rel']:.1e})") for r in c["res"].values()])
    per_case = harness.markdown_table(["data", "loss", "r", "mu", "nnz(x*) / d"]
                                      + [f"{st}: steps (or rel. subopt. after 10000)" for st in STEPS], rows)
    notes = ("Every case: s = nnz(x*) + 2, default max_steps = 10000, tol = 1e-6 (the driver's relative gap). "
             "Reference: AcceleratedPG to a relative gap of 1e-12 (all references converged: "
             f"{all(c['ref_conv'] for c in cases)}).")
    path = harness.write_results("block_fw_sweep", "PDBlockFW across the bundled data sets: convergence and honesty",
                                 [("Summary", table), ("Per case", per_case)], notes)
    print(path)


if __name__ == "__main__":
    main()
