"""What ``jp.solve`` costs around the compiled solve, warm (issue "Start fast": no loss of speed
in the warm solves): the host-side preparation of a call on columns in different units
(``australian``, l1-logistic, ProxNewton, which rescales: the Jacobi scales and the scaled copy of
the data, ``solve._rescaled``; the report in the original variable, ``solve._unscaled``; the
solver's data-dependent constants, ``solver.fresh``) and the whole warm call, medians of 300 (100
for the call) in one process, and the same solve with ``rescale=False`` (the problem as given;
its 2-5 ms against the default's are what the rescaling costs a warm call); with ``--before REV`` the same child on that commit (a temporary
worktree), the versions interleaved ``--repeat`` times, each figure the best.

    python benchmarks/bench_warm_overhead.py --before 62e305c --repeat 2
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

import harness

ROOT = Path(__file__).resolve().parents[1]

CHILD = textwrap.dedent('''
    import json, time, warnings
    warnings.simplefilter("ignore")
    import jax, numpy as np
    jax.config.update("jax_enable_x64", True)
    import jaxprox as jp
    from jaxprox import losses, penalties
    from jaxprox.solve import _rescaled, _unscaled
    from jaxprox.solver import fresh
    X, y = jp.datasets.load("australian", dense=True)
    P = jp.ERM(X, y, losses.Logistic(), penalties.L1(1e-3))
    S = jp.ProxNewton(tol=1e-8)
    sol = jp.solve(P, S)
    def med(f, k=300):
        f(); ts = []
        for _ in range(k):
            t = time.perf_counter(); f(); ts.append(time.perf_counter() - t)
        return 1e3 * float(np.median(ts))
    c = P.column_scale()
    S0 = jp.ProxNewton(tol=1e-8, rescale=False)
    jp.solve(P, S0)
    run = lambda s: (lambda: jax.block_until_ready(jp.solve(P, s).params))  # noqa: E731
    solve, plain = [], []
    for _ in range(3):  # interleaved: the host's drift hits both
        solve.append(med(run(S), 50)); plain.append(med(run(S0), 50))
    print(json.dumps({"_rescaled": med(lambda: _rescaled(P, S, None)), "_unscaled": med(lambda: _unscaled(sol, c)),
                      "_fresh": med(lambda: fresh(S, P)), "solve": min(solve), "solve, rescale=False": min(plain)}))
''')


def run(src: Path) -> dict:
    env = dict(os.environ, PYTHONPATH=str(src), JAXPROX_COMPILATION_CACHE="0")
    out = subprocess.run([sys.executable, "-c", CHILD], env=env, cwd=tempfile.gettempdir(), capture_output=True,
                         text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--before", default=None)
    ap.add_argument("--repeat", type=int, default=2)
    args = ap.parse_args()
    sources = [("after", ROOT)]
    tmp = None
    if args.before:
        tmp = tempfile.mkdtemp(prefix="jaxprox-before-")
        subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", tmp, args.before], check=True,
                       capture_output=True)
        sources.insert(0, ("before", Path(tmp)))
    best = {}
    try:
        for rep in range(args.repeat):
            for label, src in sources:
                r = run(src)
                print(label, rep, json.dumps(r), flush=True)
                for k, v in r.items():
                    best[(label, k)] = min(v, best.get((label, k), v))
    finally:
        if tmp:
            subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", tmp], capture_output=True)
    keys = ("_rescaled", "_unscaled", "_fresh", "solve", "solve, rescale=False")
    lines = ["| version | " + " | ".join(f"{k} (ms)" for k in keys) + " |", "|---" * (len(keys) + 1) + "|"]
    for label, _ in sources:
        lines.append(f"| {label} | " + " | ".join(f"{best[(label, k)]:.3f}" for k in keys) + " |")
    if args.before:
        lines.append("| before / after | " + " | ".join(f"{best[('before', k)] / best[('after', k)]:.2f}x"
                                                   for k in keys) + " |")
    harness.write_results("warm_overhead", "Warm jp.solve: the host-side work around the compiled solve",
                          [("ProxNewton, l1-logistic on australian (its columns rescaled)", "\n".join(lines))],
                          notes=(f"Medians in one process, best of {args.repeat} processes; 'before' is "
                                 f"{args.before} in a temporary worktree." if args.before else ""))


if __name__ == "__main__":
    main()
