"""What one kernel costs XLA:CPU to compile, by kind, and what the cheaper-to-compile forms of a
matrix-vector product cost at run time (issue "Start fast": a solve's compile time is a count of
kernels, ``latency.md``).

* Compile: a jitted function of ``K`` independent ops of one kind (each fed by a small elementwise
  op so that XLA cannot merge them), compiled with jaxprox's options, minus nothing: the figure is
  per op and includes its feeding elementwise kernel (the ``elementwise`` row is that alone).
  Forms of ``A @ w`` (``A`` 270 x 13, heart's shape): XLA's tiled GEMV (a dot with a vector
  operand, what ``A @ w`` lowers to), an Eigen GEMM with a second column (a library call, nothing
  to compile), and a multiply-and-reduce fusion; and a sum over 270 terms with and without XLA's
  tree-reduction pass (``jaxprox.base.COMPILER_OPTIONS`` leaves it out).
* Run: ``w <- w - 1e-3 A^T tanh(A w)`` in a ``fori_loop`` of 200 steps with each form of the two
  products, per step, on three sizes.

    python benchmarks/perf/bench_kernel_costs.py
"""
from __future__ import annotations

import os
import statistics
import time
import warnings

import numpy as np

import sys
from pathlib import Path
sys.path[:0] = [str(Path(__file__).resolve().parent), str(Path(__file__).resolve().parents[1])]  # this group, harness
import harness

K = 20


def main():
    warnings.simplefilter("ignore")
    # compile for real: no persistent cache (a later run would load the executables instead)
    os.environ["JAXPROX_COMPILATION_CACHE"] = "0"
    import jax
    import jax.numpy as jnp

    jax.config.update("jax_enable_x64", True)
    from jaxprox._compile import COMPILER_OPTIONS

    salt = [0]

    def compile_s(f, *args, options=None):
        low = jax.jit(f).lower(*args)
        best = float("inf")
        for _ in range(3):  # a different split count each time: no in-process cache hit
            salt[0] += 1
            opts = {**(COMPILER_OPTIONS if options is None else options),
                    "xla_cpu_parallel_codegen_split_count": 30 + salt[0] % 7}
            t = time.process_time()
            low.compile(compiler_options=opts)
            best = min(best, time.process_time() - t)
        return best

    rng = np.random.default_rng(0)
    A = jnp.asarray(rng.standard_normal((270, 13)))
    w, x = jnp.ones(13), jnp.ones(270)

    def chain(op):
        def f(v):
            s = 0.0
            for k in range(K):
                s = s + op(v * (1.0 + 1e-3 * k))[k % 3]
            return s
        return f

    with_tree = {k: v for k, v in COMPILER_OPTIONS.items() if k != "xla_disable_hlo_passes"}
    ops = [
        ("elementwise (the feeding kernel alone)", chain(lambda v: v), w, None),
        ("A @ w: tiled GEMV (XLA's lowering)", chain(lambda v: A @ v), w, None),
        ("A @ [w, w]: Eigen GEMM, first column", chain(lambda v: (A @ jnp.stack([v, v], 1))[:, 0]), w, None),
        ("sum(A * w, 1): multiply-and-reduce fusion", chain(lambda v: jnp.sum(A * v, 1)), w, None),
        ("u @ A: tiled GEMV", chain(lambda u: u @ A), x, None),
        ("sum over 270 terms, without the tree pass (jaxprox)", chain(lambda u: jnp.sum(u)[None] * u), x, None),
        ("sum over 270 terms, with XLA's tree pass", chain(lambda u: jnp.sum(u)[None] * u), x, with_tree),
    ]
    rows = []
    base = None
    for name, f, arg, opts in ops:
        c = compile_s(f, arg, options=opts) / K
        base = c if base is None else base
        rows.append([name, round(1e3 * c, 1), round(1e3 * (c - base), 1) if base is not c else "-"])
        print(rows[-1], flush=True)

    forms = {
        "tiled GEMV": (lambda X, v: X @ v, lambda X, u: u @ X),
        "Eigen GEMM (2 columns)": (lambda X, v: (X @ jnp.stack([v, v], 1))[:, 0],
                                   lambda X, u: (jnp.stack([u, u], 0) @ X)[0]),
        "multiply-and-reduce": (lambda X, v: jnp.sum(X * v, 1), lambda X, u: jnp.sum(X * u[:, None], 0)),
    }

    def per_step(mv, rmv, X, v, steps=200):
        def f(X, v):
            return jax.lax.fori_loop(0, steps, lambda i, v: v - 1e-3 * rmv(X, jnp.tanh(mv(X, v))), v)

        exe = jax.jit(f).lower(X, v).compile(compiler_options=COMPILER_OPTIONS)
        jax.block_until_ready(exe(X, v))
        runs = []
        for _ in range(5):
            t = time.perf_counter()
            jax.block_until_ready(exe(X, v))
            runs.append(time.perf_counter() - t)
        return statistics.median(runs) / steps

    run_rows = []
    for n, d in [(270, 13), (1605, 119), (20000, 50)]:
        X = jnp.asarray(rng.standard_normal((n, d)) / np.sqrt(d))
        v = jnp.full(d, 0.1)
        t = {k: per_step(*f, X, v) for k, f in forms.items()}
        g = t["tiled GEMV"]
        run_rows.append([f"{n} x {d}"] + [round(1e6 * t[k], 1) for k in forms]
                        + [round(t[k] / g, 2) for k in forms if k != "tiled GEMV"])
        print(run_rows[-1], flush=True)

    harness.write_results(
        "kernel_costs", "What a kernel costs XLA:CPU to compile, and the run time of cheaper-to-compile products",
        [(f"Compile CPU time per op (best of 3 compiles of {K} ops, float64, jaxprox's options)",
          harness.markdown_table(["op", "ms per op", "ms above the feeding kernel"], rows)),
         ("Run time per step of w <- w - 1e-3 A^T tanh(A w) (float64, median of 5 runs of 200 steps)",
          harness.markdown_table(["A", *[f"us ({k})" for k in forms],
                                  *[f"{k} / GEMV" for k in forms if k != "tiled GEMV"]], run_rows))],
        notes="A dot with a vector operand is emitted by XLA:CPU as a tiled GEMV kernel of its own (LLVM "
              "code per shape); a dot with two or more columns on each side is a call into Eigen at run time, "
              "with little to compile, but inside a loop the Eigen form runs "
              f"{min(r[4] for r in run_rows):.1f}-{max(r[4] for r in run_rows):.1f}x and the multiply-and-reduce "
              f"form {min(r[5] for r in run_rows):.1f}-{max(r[5] for r in run_rows):.1f}x the GEMV's time on "
              "these sizes, so jaxprox keeps the GEMV (no loss of speed in the warm solves). Run: python "
              "benchmarks/perf/bench_kernel_costs.py")


if __name__ == "__main__":
    main()
