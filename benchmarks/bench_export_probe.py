"""What an ahead-of-time cache of the *traced* solve would save (issue 28's 0.3 s warm-cache target):
a probe, not a feature of the library.

JAX's persistent compilation cache (on by default in jaxprox) skips XLA's compile in a second
process but not the tracing and lowering of the solve, which is most of what remains
(``latency.md``: 0.20-0.44 s of 0.29-0.57 s on heart). ``jax.export`` serialises the lowered
StableHLO of a jitted function; a second process that deserialises it skips tracing entirely. For
each of the issue's eight solvers on the latency benchmark's heart problems (``bench_latency.CASES``),
in fresh processes sharing one empty cache folder:

1. ``export``: ``jax.export.export(jax.jit(f))`` of ``f = lambda leaves: jp.solve(...)`` with the
   problem's arrays as arguments, serialised to a file, then called once (compiled, filling the
   persistent cache);
2. ``plain``: ``jp.solve`` as users call it, twice (the second finds its compiled solve in the
   persistent cache: today's warm-cache first solve);
3. ``load``: the serialised module deserialised and called (its compile found in the cache).

The ratio ``plain (warm cache) / load`` is what such a cache would save. Needs ``flatbuffers`` (JAX's
serialisation format; a jaxprox dependency since session 30's :mod:`jaxprox.tracecache`, which
does this for every top-level solve): without it the script says so and exits.

    python benchmarks/bench_export_probe.py
"""
from __future__ import annotations

import os
import tempfile
import textwrap

import harness
from bench_latency import CASES

TARGETS = ("FISTA", "PDProx", "AGM", "DRSVMPDHG", "DRSVMBarrier", "ISG", "PDBlockFW", "DualAPPA")

CHILD = textwrap.dedent('''
    import json, sys, time, warnings
    warnings.simplefilter("ignore")
    import jax
    jax.config.update("jax_enable_x64", True)
    import jax.numpy as jnp
    import jaxprox as jp
    from jaxprox import losses, penalties
    from jaxprox.constraints import L1Ball
    mode, kind, expr, path = sys.argv[1:5]
    X, y = jp.datasets.load("heart_scale", dense=True)
    X, y = jnp.asarray(X), jnp.asarray(y)
    n = X.shape[0]
    build = {
        "erm_l1": lambda X, y: jp.ERM(X, y, losses.Logistic(), penalties.L1(1e-2)),
        "svm": lambda X, y: jp.ERM(X, y, losses.Hinge(), penalties.SquaredL2(1.0 / n)),
        "fw": lambda X, y: jp.ERM(X, y, losses.SmoothedHinge(1.0), penalties.SquaredL2(10.0 / n), L1Ball(1.0)),
        "bias_svm": lambda X, y: jp.BiasSVM(X, y, 1.0 / n),
        "ridge": lambda X, y: jp.ERM(X, y, losses.Logistic(), penalties.SquaredL2(1e-3)),
        "drsvm": lambda X, y: jp.DRSVM(X, y, epsilon=0.1),
    }[kind]
    S = eval(expr)

    def f(X, y):
        sol = jp.solve(build(X, y), S, warn=False)
        return jax.tree_util.tree_leaves(sol.params), sol.gap

    t = time.perf_counter()
    if mode == "export":
        exp = jax.export.export(jax.jit(f))(X, y)
        open(path, "wb").write(exp.serialize())
        out = exp.call(X, y)
    elif mode == "load":
        exp = jax.export.deserialize(bytearray(open(path, "rb").read()))
        out = exp.call(X, y)
    else:
        sol = jp.solve(build(X, y), S, warn=False)
        out = (jax.tree_util.tree_leaves(sol.params), sol.gap)
    jax.block_until_ready(out)
    print("RESULT" + json.dumps(dict(seconds=time.perf_counter() - t, gap=float(out[1]))))
''')


def main():
    try:
        import flatbuffers  # noqa: F401
    except ImportError:
        print("flatbuffers is not installed: jax.export cannot serialise (pip install flatbuffers)")
        return
    rows = []
    for name in TARGETS:
        kind, expr = CASES[name]
        with tempfile.TemporaryDirectory() as tmp:
            # the library's own cache of traced solves (session 30, built from this probe) off: the
            # 'plain' figures stay those of JAX's compilation cache alone
            env = dict(os.environ, JAXPROX_CACHE_DIR=os.path.join(tmp, "xla"), JAXPROX_TRACE_CACHE="0")
            path = os.path.join(tmp, "solve.bin")
            got = {}
            for mode in ("export", "plain", "plain", "load", "load"):
                rec, err = harness.run_child(CHILD, mode, kind, expr, path, env=env, timeout=300)
                if err or not rec:
                    got.setdefault("error", f"{mode}: {err}")
                    break
                got.setdefault(mode, []).append(rec[0]["seconds"])
                got.setdefault("gaps", []).append(rec[0]["gap"])
        if "error" in got:
            rows.append([name, expr, None, None, None, None, None, got["error"]])
        else:
            warm, load = got["plain"][1], min(got["load"])
            rows.append([name, expr, round(got["export"][0], 3), round(got["plain"][0], 3), round(warm, 3),
                         round(load, 3), round(warm / load, 2),
                         "same gap" if len(set(got["gaps"])) == 1 else f"gaps {sorted(set(got['gaps']))}"])
        print(rows[-1], flush=True)
    notes = ("Each figure from its own fresh Python process (import not counted), the processes of a solver "
             "sharing one new persistent-cache folder: export (trace, lower, serialise, compile and run), plain "
             "`jp.solve` with an empty and then a warm cache, and the deserialised module called (best of 2). "
             "`gaps`: whether every process returned the same certified gap.")
    harness.write_results(
        "export_probe", "Probe: a second process that skips tracing (jax.export) against today's warm cache",
        [("Per solver (heart)", harness.markdown_table(
            ["solver", "call", "export process (s)", "plain, empty cache (s)", "plain, warm cache (s)",
             "deserialised call (s)", "warm cache / deserialised", "results"], rows))], notes)


if __name__ == "__main__":
    main()
