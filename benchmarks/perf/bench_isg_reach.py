"""How close the incremental DRSVM methods (ISG, IPPA) come to the optimum when given far more
epochs and slower step decays than their defaults: the evidence behind their default stop at a
warned ``"stalled"`` / ``"max_steps"`` rather than at ``tol = 1e-6`` (issue 27).

For the l1-DRSVM of the defaults sweep (``kappa = 1, c = 0``, ``epsilon`` = 0.01 and 0.1; the
largest radius 1.0 has the solution ``w = 0``, which the defaults already certify) on four
bundled datasets scaled to [-1, 1] (no unscaled columns: the paper's step sizes fit them), each
method is run with its default settings, then with geometric schedules ``alpha0 rho^k`` that decay
2.5-12x more slowly (``rho`` 0.99 / 0.998 against the defaults' 0.975 / 0.965) for 10-30x the
epochs, with the stall rule off (``stall_window=0``). The true relative suboptimality is against
the sweep's cvxpy + Clarabel optimum (``benchmarks/results/defaults_refs.json``); the certified
gap is the method's own.

    python benchmarks/perf/bench_isg_reach.py
"""
from __future__ import annotations

import json
import time
import warnings

import jax
import numpy as np

import sys
from pathlib import Path
sys.path[:0] = [str(Path(__file__).resolve().parent), str(Path(__file__).resolve().parents[1])]  # this group, harness
import harness
import sweep_problems

jax.config.update("jax_enable_x64", True)

import jaxprox as jp  # noqa: E402
from jaxprox.schedules import Geometric  # noqa: E402

REFS = json.loads((harness.RESULTS / "defaults_refs.json").read_text())
DATA = ("heart_scale", "breast-cancer_scale", "svmguide3", "a1a")
STRENGTHS = (0.01, 0.1)
RUNS = [  # (method, label, solver, datasets)
    ("ISG", "defaults (Geometric(0.1, 0.975), 100 epochs, stall rule)", lambda: jp.ISG(), DATA),
    ("ISG", "Geometric(0.1, 0.99), 1,000 epochs", lambda: jp.ISG(step_size=Geometric(0.1, 0.99), max_steps=1000,
                                                                  stall_window=0), DATA),
    ("ISG", "Geometric(1.0, 0.998), 3,000 epochs", lambda: jp.ISG(step_size=Geometric(1.0, 0.998), max_steps=3000,
                                                                   stall_window=0), DATA),
    ("IPPA", "defaults (Geometric(1e-2, 0.965), 10 epochs)", lambda: jp.IPPA(), DATA[:2]),
    ("IPPA", "Geometric(1e-2, 0.99), 200 epochs", lambda: jp.IPPA(step_size=Geometric(1e-2, 0.99), max_steps=200,
                                                                   stall_window=0), DATA[:2]),
]


def main():
    rows = []
    for name in DATA:
        X, y = sweep_problems.load(name)
        for s in STRENGTHS:
            P = sweep_problems.build("drsvm", X, y, s)
            fstar = REFS[f"drsvm|{name}|{s}"]["value"]
            for method, label, make, datasets in RUNS:
                if name not in datasets:
                    continue
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    t = time.perf_counter()
                    sol = jp.solve(P, make())
                    jax.block_until_ready(sol.params)
                    secs = time.perf_counter() - t
                f = float(sol.primal_value)
                rows.append([method, label, name, s, int(sol.steps), (f - fstar) / abs(fstar),
                             float(sol.gap) / abs(fstar), sol.status_name, round(secs, 2)])
                print(rows[-1], flush=True)
    best, cert = {}, {}
    for r in rows:
        best[r[0]] = min(best.get(r[0], np.inf), r[5])
        cert[r[0]] = min(cert.get(r[0], np.inf), r[6])
    notes = (
        "Every figure from one process (the first run of each method includes its compile). "
        "Closest iterate to the optimum over all runs: "
        + ", ".join(f"{m} {v:.2e}" for m, v in best.items())
        + " relative; smallest certified gap: "
        + ", ".join(f"{m} {v:.2e}" for m, v in cert.items())
        + " relative, against the requested 1e-6. Slower decays and 10-30x the epochs bring some "
        "iterates much closer (ISG's on a1a to the 1e-6 level), but the certificate, whose dual point is the "
        "average of the per-sample piece selections or the active-piece weights of the iterate, stays "
        "orders of magnitude above the true suboptimality on the degenerate DRSVM dual, so no such budget "
        "within the sweep's 60 s per (solver, data) triple makes these methods certify 1e-6; they stop with "
        "a warning that names `jp.Finish(jp.ISG(), jp.DRSVMBarrier())` and `jp.DRSVMBarrier()`.")
    harness.write_results(
        "isg_reach", "ISG and IPPA with longer budgets and slower step decay: how close they come",
        [("Runs", harness.markdown_table(
            ["method", "settings", "data", "epsilon", "epochs", "true rel. subopt.", "certified rel. gap", "status",
             "time (s)"], rows))], notes)


if __name__ == "__main__":
    main()
