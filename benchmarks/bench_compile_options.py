"""XLA options of jaxprox's top-level compilations (``jaxprox.base.COMPILER_OPTIONS``) against XLA's
defaults, in one process: for each solver and dataset the same lowered solve is compiled twice,
once with each set of options, and each executable is run warm.

Reports the compile time (wall and process CPU time: XLA:CPU compiles on several threads, so the
CPU time is the steadier figure on a shared machine) and the warm run time (best of 5), with the
ratios default / jaxprox. The options must cut compile time without slowing the solve.

    python benchmarks/bench_compile_options.py [--data heart_scale a1a]
"""
from __future__ import annotations

import argparse
import time
import warnings

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
        "DRSVMPDHG": (jp.DRSVM(X, y, epsilon=0.1), jp.DRSVMPDHG(tol=1e-6)),
        "DRSVMBarrier": (jp.DRSVM(X, y, epsilon=0.1), jp.DRSVMBarrier(tol=1e-8)),
    }


def measure(low, args, options):
    import jax

    t, c = time.perf_counter(), time.process_time()
    exe = low.compile(compiler_options=options)
    wall, cpu = time.perf_counter() - t, time.process_time() - c
    jax.block_until_ready(exe(*args))
    runs = []
    for _ in range(5):
        t = time.perf_counter()
        jax.block_until_ready(exe(*args))
        runs.append(time.perf_counter() - t)
    return wall, cpu, min(runs)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", nargs="*", default=["heart_scale", "a1a"])
    a = ap.parse_args()
    warnings.simplefilter("ignore")
    import jax

    jax.config.update("jax_enable_x64", True)
    import jaxprox as jp
    from jaxprox import driver as D
    from jaxprox.base import COMPILER_OPTIONS

    head = ["data", "solver", "compile s (XLA default)", "compile s (jaxprox)", "compile CPU s (default)",
            "compile CPU s (jaxprox)", "CPU ratio default / jaxprox", "run ms (default)", "run ms (jaxprox)",
            "run ratio default / jaxprox"]
    rows = []
    for name in a.data:
        X, y = jp.datasets.load(name, dense=True)
        for solver, (P, S) in cases(jp, X, y).items():
            args = (P, D._canonical(D._fresh(S, P)), None, D.RunOptions.of(S))
            low = D._solve_compiled.nested.lower(*args)
            dw, dc, dr = measure(low, args, {})
            ow, oc, orun = measure(low, args, COMPILER_OPTIONS)
            rows.append([name, solver, round(dw, 3), round(ow, 3), round(dc, 3), round(oc, 3), round(dc / oc, 2),
                         round(dr * 1e3, 2), round(orun * 1e3, 2), round(dr / orun, 2)])
            print(rows[-1], flush=True)
    harness.write_results(
        "compile_options", "XLA options of the top-level solve: compile and run time against XLA's defaults",
        [("Same lowered solve, compiled both ways in one process", harness.markdown_table(head, rows))],
        notes=f"jaxprox's options: {COMPILER_OPTIONS} (jaxprox.base.COMPILER_OPTIONS; JAXPROX_FAST_COMPILE=0 "
              "turns them off). Run: python benchmarks/bench_compile_options.py")


if __name__ == "__main__":
    main()
