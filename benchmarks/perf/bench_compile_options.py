"""XLA options of jaxprox's top-level compilations (``jaxprox.base.COMPILER_OPTIONS``) against XLA's
defaults and against the legacy emitter alone, in one process:
for each solver and dataset the same lowered solve (what ``jp.solve`` compiles) is compiled with
each set of options and each executable is run warm.

Reports the compile time (wall and process CPU time: XLA:CPU compiles on several threads, so the
CPU time is the steadier figure on a shared machine; the median of ``--repeat`` compiles, the
option sets interleaved) and the warm run time (median of the per-compile bests), with the ratios
to jaxprox's options, and whether each executable returns the same bits as jaxprox's. The options
must cut compile time without slowing the solve.

A second table measures what leaving out XLA's ``tree_reduction_rewriter`` does to the rounding
of a float32 sum (relative error against the float64 sum of the same float32 terms, the worst of
20 random vectors per length).

    python benchmarks/perf/bench_compile_options.py [--data heart_scale a1a] [--repeat 3]
"""
from __future__ import annotations

import argparse
import os
import statistics
import time
import warnings

import numpy as np

import sys
from pathlib import Path
sys.path[:0] = [str(Path(__file__).resolve().parent), str(Path(__file__).resolve().parents[1])]  # this group, harness
import harness


def cases(jp, X, y):
    from jaxprox import losses, penalties
    from jaxprox.constraints import L1Ball

    n = X.shape[0]
    return {
        "FISTA": (jp.ERM(X, y, losses.Logistic(), penalties.L1(1e-3)), jp.FISTA(tol=1e-8)),
        "ProxNewton": (jp.ERM(X, y, losses.Logistic(), penalties.L1(1e-3)), jp.ProxNewton(tol=1e-8)),
        "PDProx": (jp.ERM(X, y, losses.Hinge(), penalties.SquaredL2(1e-2)), jp.PDProx(tol=1e-6)),
        "PDBlockFW": (jp.ERM(X, y, losses.SmoothedHinge(1.0), penalties.SquaredL2(10.0 / n), L1Ball(1.0)),
                      jp.PDBlockFW(tol=1e-6)),
        "AGM": (jp.BiasSVM(X, y, 1.0 / n), jp.AGM(tol=1e-6)),
        "SDCA": (jp.ERM(X, y, losses.Logistic(), penalties.SquaredL2(1e-3)), jp.SDCA(tol=1e-8)),
        "DualAPPA": (jp.ERM(X, y, losses.Logistic(), penalties.SquaredL2(1e-3)), jp.DualAPPA(tol=1e-8)),
        "ISG": (jp.DRSVM(X, y, epsilon=0.1), jp.ISG(max_steps=50)),
        "DRSVMPDHG": (jp.DRSVM(X, y, epsilon=0.1), jp.DRSVMPDHG(tol=1e-6)),
        "DRSVMBarrier": (jp.DRSVM(X, y, epsilon=0.1), jp.DRSVMBarrier(tol=1e-8)),
    }


def lowered(jp, P, S):
    """The lowered top-level solve of ``jp.solve(P, S)`` and its arguments."""
    from jaxprox.adjoint import _iterate_compiled
    from jaxprox.loop import RunOptions, _canonical
    from jaxprox.solve import _rescaled, _without_zero_penalty
    from jaxprox.solver import fresh

    S = S.budgeted(P)
    P = _without_zero_penalty(P, S)
    P, init, _ = _rescaled(P, S, None)
    args = (P, _canonical(fresh(S, P)), init, RunOptions.of(S))
    return _iterate_compiled.nested.lower(*args), args


def measure(low, args, options, salt):
    """Compile (``salt`` varies an option that does not change the code, so that JAX's in-process
    cache of executables does not answer a repeat) and run warm: wall s, CPU s, best run s, leaves."""
    import jax

    opts = {**options, "xla_cpu_parallel_codegen_split_count": 30 + salt}
    t, c = time.perf_counter(), time.process_time()
    exe = low.compile(compiler_options=opts)
    wall, cpu = time.perf_counter() - t, time.process_time() - c
    out = jax.block_until_ready(exe(*args))
    runs = []
    for _ in range(5):
        t = time.perf_counter()
        jax.block_until_ready(exe(*args))
        runs.append(time.perf_counter() - t)
    return wall, cpu, min(runs), [np.asarray(x) for x in jax.tree_util.tree_leaves(out)]


def sum_rounding(lengths=(33, 100, 270, 1000, 1605, 4000, 8192, 32561), trials=20):
    """Worst relative error of a float32 ``jnp.sum`` with and without the tree-reduction pass."""
    import jax
    import jax.numpy as jnp

    rng = np.random.default_rng(0)
    rows = []
    for n in lengths:
        low = jax.jit(lambda x: jnp.sum(jnp.sin(x))).lower(jax.ShapeDtypeStruct((n,), jnp.float32))
        with_pass, without = low.compile(), low.compile(
            compiler_options={"xla_disable_hlo_passes": "tree_reduction_rewriter"})
        rewritten = "reduce-window" in with_pass.as_text()
        e1 = e2 = 0.0
        for _ in range(trials):
            x = rng.uniform(-1.0, 2.0, n).astype(np.float32)
            truth = np.sum(np.sin(x.astype(np.float64)).astype(np.float32).astype(np.float64))
            scale = np.sum(np.abs(np.sin(x.astype(np.float64))))
            e1 = max(e1, abs(float(with_pass(x)) - truth) / scale)
            e2 = max(e2, abs(float(without(x)) - truth) / scale)
        rows.append([n, "yes" if rewritten else "no", f"{e1:.2e}", f"{e2:.2e}", round(e2 / max(e1, 1e-300), 2)])
        print(rows[-1], flush=True)
    return rows


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", nargs="*", default=["heart_scale", "a1a"])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--only", nargs="*", default=None)
    a = ap.parse_args()
    warnings.simplefilter("ignore")
    # compile for real: no persistent cache (a later run would load the executables instead)
    os.environ["JAXPROX_COMPILATION_CACHE"] = "0"
    import jax

    jax.config.update("jax_enable_x64", True)
    import jaxprox as jp
    from jaxprox._compile import COMPILER_OPTIONS

    sets = {"XLA": {}, "emitter": {"xla_cpu_use_fusion_emitters": False}, "jaxprox": dict(COMPILER_OPTIONS)}
    head = ["data", "solver"] + [f"compile CPU s ({k})" for k in sets] + ["compile s (jaxprox)"] \
        + [f"CPU ratio {k} / jaxprox" for k in sets if k != "jaxprox"] + [f"run ms ({k})" for k in sets] \
        + [f"run ratio {k} / jaxprox" for k in sets if k != "jaxprox"] + ["same bits as emitter"]
    rows = []
    for name in a.data:
        X, y = jp.datasets.load(name, dense=True)
        for solver, (P, S) in cases(jp, X, y).items():
            if a.only and solver not in a.only:
                continue
            low, args = lowered(jp, P, S)
            res = {k: [] for k in sets}
            for rep in range(a.repeat):
                for k, opts in sets.items():
                    res[k].append(measure(low, args, opts, rep))
            cpu = {k: statistics.median(r[1] for r in v) for k, v in res.items()}
            wall = statistics.median(r[0] for r in res["jaxprox"])
            run = {k: statistics.median(r[2] for r in v) for k, v in res.items()}
            same = all(np.array_equal(u, v, equal_nan=True)
                       for u, v in zip(res["jaxprox"][0][3], res["emitter"][0][3]))
            rows.append([name, solver] + [round(cpu[k], 3) for k in sets] + [round(wall, 3)]
                        + [round(cpu[k] / cpu["jaxprox"], 2) for k in sets if k != "jaxprox"]
                        + [round(run[k] * 1e3, 2) for k in sets]
                        + [round(run[k] / run["jaxprox"], 2) for k in sets if k != "jaxprox"] + [same])
            print(rows[-1], flush=True)
    sums = sum_rounding()
    harness.write_results(
        "compile_options", "XLA options of the top-level solve: compile and run time against XLA's defaults",
        [("Same lowered solve, compiled with each set of options in one process", harness.markdown_table(head, rows)),
         ("Rounding of a float32 sum with and without XLA's tree-reduction pass",
          harness.markdown_table(["terms", "rewritten by the pass", "worst rel. error with the pass",
                                  "without", "ratio without / with"], sums))],
        notes=f"Option sets: XLA = XLA's defaults; emitter = {{'xla_cpu_use_fusion_emitters': False}} (the legacy "
              f"emitter alone); jaxprox = {COMPILER_OPTIONS} (jaxprox.base.COMPILER_OPTIONS; "
              f"JAXPROX_FAST_COMPILE=0 turns them off). Compile CPU s: median of {a.repeat} compiles, the sets "
              "interleaved; run ms: median of the per-compile best of 5 warm runs. Sum errors are relative to "
              "sum |terms|. Run: python benchmarks/perf/bench_compile_options.py")


if __name__ == "__main__":
    main()
