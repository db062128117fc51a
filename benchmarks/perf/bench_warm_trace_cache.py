"""Warm ``jp.solve`` through the cache of traced solves (issue "Start fast": no loss of speed in the
warm solves). With jaxprox's caches on (its default), a top-level solve runs through
:mod:`jaxprox._compile.tracecache` (the call's key looked up, the stored module run by ``jax.jit``); with
``JAXPROX_TRACE_CACHE=0`` through ``equinox.filter_jit``. For every
public solver on the latency benchmark's heart problems (``bench_latency.CASES``), in ONE process
(the variable is read at each call): both paths warmed, then blocks of 10 warm calls of each path
interleaved (``--blocks`` blocks; slow solvers fewer), medians and their ratio.

    python benchmarks/perf/bench_warm_trace_cache.py [--blocks 20]
"""
from __future__ import annotations

import argparse
import json
import os
import tempfile
import textwrap

import sys
from pathlib import Path
sys.path[:0] = [str(Path(__file__).resolve().parent), str(Path(__file__).resolve().parents[1])]  # this group, harness
import harness
from bench_latency import CASES, PROBLEMS

CHILD = textwrap.dedent('''
    import json, os, sys, time, warnings
    warnings.simplefilter("ignore")
    import jax, numpy as np
    jax.config.update("jax_enable_x64", True)
    import jax.numpy as jnp
    import jaxprox as jp
    from jaxprox import losses, penalties
    from jaxprox._compile import tracecache
    from jaxprox.constraints import L1Ball
    X, y = (jnp.asarray(a) for a in jp.datasets.load("heart_scale", dense=True))
    n = X.shape[0]
    #PROBLEMS
    PATHS = {"plain": "0", "cache": "1"}
    blocks = int(sys.argv[2])
    out = {}
    for name, (kind, expr) in json.loads(sys.argv[1]).items():
        P, S = build[kind](), eval(expr)
        times = {p: [] for p in PATHS}
        for p, flag in PATHS.items():
            os.environ["JAXPROX_TRACE_CACHE"] = flag
            for _ in range(2):
                jax.block_until_ready(jp.solve(P, S, warn=False).params)
        t0 = time.perf_counter()
        for b in range(blocks):
            for p, flag in PATHS.items():
                os.environ["JAXPROX_TRACE_CACHE"] = flag
                for _ in range(10):
                    t = time.perf_counter()
                    jax.block_until_ready(jp.solve(P, S, warn=False).params)
                    times[p].append(time.perf_counter() - t)
            if time.perf_counter() - t0 > 20 and b >= 1:
                break
        out[name] = {p: float(np.median(v)) for p, v in times.items()} | {"calls": len(times["plain"])}
    out["stats"] = tracecache.STATS
    print("RESULT" + json.dumps(out))
''')
CHILD = CHILD.replace("#PROBLEMS\n", PROBLEMS.lstrip("\n"))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--blocks", type=int, default=20)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as cache:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("JAX_COMPILATION", "JAXPROX_"))}
        env.update(JAXPROX_CACHE_DIR=cache)
        rec, err = harness.run_child(CHILD, json.dumps(CASES), str(args.blocks), env=env, timeout=1800)
    if err or not rec:
        raise SystemExit(err)
    stats = rec[0].pop("stats")
    rows = []
    for name in CASES:
        r = rec[0][name]
        rows.append([name, r["calls"], round(r["plain"] * 1e3, 3), round(r["cache"] * 1e3, 3),
                     round(r["plain"] / r["cache"], 3)])
    notes = ("One process; per solver both paths warmed, then blocks of 10 warm `jp.solve` calls of each path "
             f"interleaved (up to {args.blocks} blocks or 20 s); medians. 'plain': `JAXPROX_TRACE_CACHE=0` "
             "(equinox.filter_jit); 'cache': the default (the key looked up, "
             f"the stored module run by jax.jit). Trace-cache counters at the end: {stats}.")
    harness.write_results(
        "warm_trace_cache", "Warm jp.solve with and without the cache of traced solves (heart, one process)",
        [("Per solver", harness.markdown_table(
            ["solver", "calls per path", "plain (ms)", "through the cache (ms)", "plain / cache"], rows))], notes)


if __name__ == "__main__":
    main()
