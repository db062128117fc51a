"""Spectral norms from a small Gram matrix against the power iteration (issue "Start fast").

``operators.largest_eigenvalue`` (``spectral_norm_sq``, and DRSVMPDHG's ``saddle_norm``) takes the
largest eigenvalue of the smaller Gram matrix (a GEMM and a symmetric eigenvalue call) when its
side is at most ``operators.exact_eig_side(iters)``, instead of the power iteration's loop of two
matrix-vector products. Setting ``operators.EXACT_EIG_SIDE = 0`` restores the power iteration
everywhere, so both forms are measured in one process on the same problems:

* for each solver whose solve estimates a norm, the same solve lowered and compiled with each
  form (compile CPU and wall time, medians of ``--repeat`` compiles, the forms interleaved; the
  compiled module's kernels as ``bench_latency.py`` counts them), its warm run (best of 5), its
  steps and certified gap;
* the norm itself on larger data: its warm run time with each form and its error against
  NumPy's ``norm(X, 2)**2`` (the estimate is multiplied by ``1 + 1e-6`` in both forms).

    python benchmarks/perf/bench_spectral_norm.py [--data heart_scale a1a] [--repeat 3]
"""
from __future__ import annotations

import argparse
import os
import re
import statistics
import time
import warnings

import numpy as np

import sys
from pathlib import Path
sys.path[:0] = [str(Path(__file__).resolve().parent), str(Path(__file__).resolve().parents[1])]  # this group, harness
import harness
from bench_compile_options import cases, lowered

SOLVERS = ("FISTA", "PDProx", "PDBlockFW", "AGM", "DRSVMPDHG")
FORMS = {"Gram + eigh": 256, "power iteration": 0}


def compile_and_run(jp, P, S, salt):
    import jax

    from jaxprox._compile import COMPILER_OPTIONS

    jax.clear_caches()
    low, args = lowered(jp, P, S)
    opts = {**COMPILER_OPTIONS, "xla_cpu_parallel_codegen_split_count": 30 + salt}  # no in-process cache hit
    t, c = time.perf_counter(), time.process_time()
    exe = low.compile(compiler_options=opts)
    wall, cpu = time.perf_counter() - t, time.process_time() - c
    text = getattr(exe, "compiled", exe).as_text()
    kernels = len(re.findall(r" (?:fusion|dot|reduce|reduce-window)\(", text))
    sol = jax.block_until_ready(exe(*args))[0]
    runs = []
    for _ in range(5):
        t = time.perf_counter()
        jax.block_until_ready(exe(*args))
        runs.append(time.perf_counter() - t)
    return cpu, wall, min(runs), kernels, int(sol.steps), float(sol.gap)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", nargs="*", default=["heart_scale", "a1a"])
    ap.add_argument("--norm-data", nargs="*", default=["a9a", "w8a"])
    ap.add_argument("--repeat", type=int, default=3)
    a = ap.parse_args()
    warnings.simplefilter("ignore")
    os.environ["JAXPROX_COMPILATION_CACHE"] = "0"  # compile for real
    import jax

    jax.config.update("jax_enable_x64", True)
    import jaxprox as jp

    ops = jp.operators
    rows = []
    for name in a.data:
        X, y = jp.datasets.load(name, dense=True)
        for solver, (P, S) in cases(jp, X, y).items():
            if solver not in SOLVERS:
                continue
            res = {f: [] for f in FORMS}
            for rep in range(a.repeat):
                for form, side in FORMS.items():
                    ops.EXACT_EIG_SIDE = side
                    res[form].append(compile_and_run(jp, P, S, rep))
            ops.EXACT_EIG_SIDE = FORMS["Gram + eigh"]
            med = {f: [statistics.median(r[i] for r in v) for i in range(3)] for f, v in res.items()}
            g, p = med["Gram + eigh"], med["power iteration"]
            first_g, first_p = res["Gram + eigh"][0], res["power iteration"][0]
            rows.append([name, solver, round(g[0], 3), round(p[0], 3), round(p[0] / g[0], 2), round(g[1], 3),
                         round(p[1], 3), round(p[1] / g[1], 2), first_g[3], first_p[3], round(g[2] * 1e3, 2),
                         round(p[2] * 1e3, 2), f"{first_g[4]} / {first_p[4]}", f"{first_g[5]:.3e} / {first_p[5]:.3e}"])
            print(rows[-1], flush=True)
    norms = []
    for name in a.norm_data:
        X, _ = jp.datasets.load(name, dense=True)
        ref = float(np.linalg.norm(np.asarray(X, np.float64), 2) ** 2)
        A = ops.dense(X)
        out = {}
        for form, side in FORMS.items():
            ops.EXACT_EIG_SIDE = side
            jax.clear_caches()
            f = jax.jit(lambda A: A.spectral_norm_sq())
            est = float(f(A))
            ts = []
            for _ in range(5):
                t = time.perf_counter()
                jax.block_until_ready(f(A))
                ts.append(time.perf_counter() - t)
            out[form] = (min(ts), est / ref - 1.0)
        ops.EXACT_EIG_SIDE = FORMS["Gram + eigh"]
        g, p = out["Gram + eigh"], out["power iteration"]
        norms.append([f"{name} {X.shape[0]} x {X.shape[1]}", round(g[0] * 1e3, 1), round(p[0] * 1e3, 1),
                      round(p[0] / g[0], 2), f"{g[1]:.2e}", f"{p[1]:.2e}"])
        print(norms[-1], flush=True)
    head = ["data", "solver", "compile CPU s (Gram)", "(power)", "CPU power / Gram", "compile s (Gram)", "(power)",
            "wall power / Gram", "kernels (Gram)", "(power)", "run ms (Gram)", "(power)", "steps Gram / power",
            "gap Gram / power"]
    harness.write_results(
        "spectral_norm", "Spectral norms from a small Gram matrix against the power iteration",
        [("The same solve compiled with each form in one process (the forms interleaved)", harness.markdown_table(head, rows)),
         ("The norm itself (default 100 power iterations; warm run, best of 5)",
          harness.markdown_table(["data", "ms (Gram + eigh)", "ms (power)", "power / Gram",
                                  "rel. error (Gram), x (1 + 1e-6)", "rel. error (power), x (1 + 1e-6)"], norms))],
        notes=f"Compile figures: medians of {a.repeat} compiles (jaxprox's XLA options), the two forms interleaved "
              "in one process; kernels as bench_latency.py counts them. 'power iteration' is "
              "operators.EXACT_EIG_SIDE = 0 (the power iteration at every size). Run: python benchmarks/perf/bench_spectral_norm.py")


if __name__ == "__main__":
    main()
