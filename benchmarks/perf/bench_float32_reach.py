"""Which float32 misses of the default route could a float32 point certify at all?

For every float32 case of ``benchmarks/results/defaults_default.md`` that did not converge (the
default route, x64 off, tol 1e-5), the float64 problem is solved to a relative gap of 1e-11 by the
float64 default solver; its optimum ``(w*, dual*)`` and the data are rounded to float32, and the
certificate of that rounded point is evaluated exactly (float64 arithmetic on the float32 values):

    reach = (P(w32) - D(dual32)) / P(w32)          on the problem built from the float32 data.

A case with ``reach > 1e-5`` cannot be certified to the default float32 tol by the optimum itself
even with exact arithmetic (a float32 solver also rounds its sums): relative to a tiny optimum
(separable data, ``P*`` of 1e-4) or through the cancellation in ``X^T u`` (the l1 norm's dual
scale at a weak penalty), float32 cannot resolve the gap. The dual point of an SVM with a bias is
brought back into ``{y^T alpha = 0}`` after the rounding (:func:`q2_feasible`), that of the
l1-norm penalties rescaled as every certificate does.

    python benchmarks/perf/bench_float32_reach.py [--out float32_reach]
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import jax
import numpy as np

sys.path[:0] = [str(Path(__file__).resolve().parent), str(Path(__file__).resolve().parents[1])]
jax.config.update("jax_enable_x64", True)

import harness  # noqa: E402
import sweep_problems as sp  # noqa: E402

import jaxprox as jp  # noqa: E402
from jaxprox.problems.bias_svm import q2_feasible  # noqa: E402

TOL32 = 1e-5


def misses(path: Path) -> list[tuple[str, str, float]]:
    """``(family, data, strength)`` of the float32 rows that did not converge."""
    out = []
    for line in path.read_text().split("\n"):
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 14 and cells[0] == "default" and cells[12] == "float32" and cells[4] == "no":
            out.append((cells[1], cells[2], float(cells[3])))
    return out


def f32(a):
    """The float32 rounding of ``a``, as float64 values."""
    return jax.tree_util.tree_map(lambda x: np.asarray(np.asarray(x, np.float32), np.float64), a)


def reach(family: str, X, y, s: float) -> tuple[float, float, str]:
    """``(P*, reach, solver)``: the float64 optimum and the exact relative gap of its float32 rounding."""
    problem = sp.build(family, X, y, s)
    solver = jp.capabilities.default_solver(problem)
    newton = (solver.max_steps or 10**9) <= 500  # Newton-type solvers: a few hundred steps (None: from the data)
    solver = solver.with_options(tol=1e-11, max_steps=400 if newton else 100_000)
    sol = jp.solve(problem, solver, warn=False)
    rounded = sp.build(family, f32(X), y, s)
    params, dual = f32(sol.params), None if sol.dual is None else f32(sol.dual)
    if isinstance(rounded, jp.DRSVM):
        p, d, _ = rounded.certificate(params, dual, with_active=True)
    elif isinstance(rounded, jp.BiasSVM):
        n = X.shape[0]
        p, d = rounded.objective(params), rounded.dual_objective(q2_feasible(dual, y, n))
    else:
        p, d, _ = rounded.best_certificate(params, *(() if dual is None else (dual,)))
    return float(sol.primal_value), float((p - d) / abs(p)), type(solver).__name__


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default="float32_reach")
    args = ap.parse_args()
    cases = misses(harness.RESULTS / "defaults_default.md")
    rows, beyond, t0, loaded = [], 0, time.perf_counter(), {}
    for family, data, s in cases:
        if data not in loaded:
            loaded[data] = sp.load(data)
        X, y = loaded[data]
        p_star, r, solver = reach(family, X, y, s)
        beyond += r > TOL32
        rows.append(f"| {family} | {data} | {s:g} | {solver} | {p_star:.4g} | {r:.1e} | {'no' if r > TOL32 else 'yes'} |")
        print(rows[-1], flush=True)
    table = "\n".join(["| family | data | strength | float64 solver (tol 1e-11) | P* | reach: exact rel. gap of the "
                       "float32-rounded optimum | within 1e-5 |", "|---" * 7 + "|", *rows])
    total = 462
    summary = (f"{len(cases)} float32 misses of the default route; for {beyond} of them the float64 optimum "
               f"rounded to float32 does not certify 1e-5 even in exact arithmetic. Of the {total - beyond} "
               f"float32 cases whose rounded optimum can, the default route converged in {total - len(cases)} "
               f"({100 * (total - len(cases)) / (total - beyond):.1f}%).")
    harness.write_results(args.out, "float32: what the default route's misses could certify at all",
                          [("Summary", summary), ("Per case", table)],
                          notes="For every float32 case of `defaults_default.md` that did not converge (the default "
                                "route, x64 off, tol 1e-5): the float64 problem solved to a relative gap of 1e-11 by "
                                "the float64 default solver, its optimum and the data rounded to float32, and the "
                                "certificate of that rounded point evaluated in float64 arithmetic on the float32 "
                                "values (the relative gap `reach`; the dual point of the SVM with a bias brought back "
                                "into `y^T alpha = 0`, that of the l1 norm rescaled as every certificate does). A "
                                "case with reach above 1e-5 cannot be certified to the float32 default tol by the "
                                f"optimum itself. Total wall time {time.perf_counter() - t0:.0f} s.")


if __name__ == "__main__":
    main()
