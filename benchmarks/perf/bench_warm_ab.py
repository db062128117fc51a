"""Warm solves of this tree against an earlier commit (issue "Start fast": no loss of speed in the
warm solves when a graph is cut for compile time): for each solver and dataset, the best of
``--reps`` warm ``jp.solve`` calls in one process (compiled once before), the two versions in
alternating fresh processes ``--repeat`` times, each figure the best over them; with the steps
and certified gaps of both, which must agree (a cut that changes the iterates is not a compile
cut). With ``--grad``: warm eager ``jax.grad`` calls of ``sum(w*(t)^2)`` in the case's
hyperparameter ``t`` (``lam``, DRSVM's ``epsilon``) instead, with both versions' gradients.

    python benchmarks/perf/bench_warm_ab.py --before 0e459a8 --data heart_scale a1a --repeat 2 --out warm
    python benchmarks/perf/bench_warm_ab.py --before 4da3276 --grad --solvers FISTA ISG DRSVMBarrier --out warm_grad
"""
from __future__ import annotations

import argparse
import os
import subprocess
import tempfile
import textwrap
from pathlib import Path

import sys
sys.path[:0] = [str(Path(__file__).resolve().parent), str(Path(__file__).resolve().parents[1])]  # this group, harness
import harness

ROOT = Path(__file__).resolve().parents[2]

#: solver name -> (problem builder, solver) in the child (X, y, n and the imports in scope)
CASES = textwrap.dedent('''
    cases = {
        "FISTA": lambda: (jp.ERM(X, y, losses.Logistic(), penalties.L1(1e-3)), jp.FISTA(tol=1e-8)),
        "ProxNewton": lambda: (jp.ERM(X, y, losses.Logistic(), penalties.L1(1e-3)), jp.ProxNewton(tol=1e-8)),
        "PDProx": lambda: (jp.ERM(X, y, losses.Hinge(), penalties.SquaredL2(1e-2)), jp.PDProx(tol=1e-6)),
        "PDBlockFW": lambda: (jp.ERM(X, y, losses.SmoothedHinge(1.0), penalties.SquaredL2(10.0 / n), L1Ball(1.0)),
                              jp.PDBlockFW(tol=1e-6)),
        "SDCA": lambda: (jp.ERM(X, y, losses.Logistic(), penalties.SquaredL2(1e-3)), jp.SDCA(tol=1e-8)),
        "DualAPPA": lambda: (jp.ERM(X, y, losses.Logistic(), penalties.SquaredL2(1e-3)), jp.DualAPPA(tol=1e-8)),
        "AGM (hinge ERM)": lambda: (jp.ERM(X, y, losses.Hinge(), penalties.SquaredL2(1.0 / n)), jp.AGM(tol=1e-6)),
        "AGM (BiasSVM)": lambda: (jp.BiasSVM(X, y, 1.0 / n), jp.AGM(tol=1e-6)),
        "DRSVMBarrier": lambda: (jp.DRSVM(X, y, epsilon=0.1), jp.DRSVMBarrier(tol=1e-8)),
        "ISG": lambda: (jp.DRSVM(X, y, epsilon=0.1), jp.ISG(max_steps=50)),
        "DRSVMPDHG": lambda: (jp.DRSVM(X, y, epsilon=0.1), jp.DRSVMPDHG(tol=1e-6)),
    }
''')

CHILD = textwrap.dedent('''
    import json, sys, time, warnings
    warnings.simplefilter("ignore")
    import jax
    jax.config.update("jax_enable_x64", True)
    import jaxprox as jp
    from jaxprox import losses, penalties
    from jaxprox.constraints import L1Ball
    reps, names, datasets = int(sys.argv[1]), sys.argv[2].split(","), sys.argv[3].split(",")
    grad = sys.argv[4] == "grad"
    for data in datasets:
        X, y = jp.datasets.load(data, dense=True)
        n = X.shape[0]
        #CASES
        for name in names:
            P, S = cases[name]()
            sol = jp.solve(P, S)
            call = lambda: jp.solve(P, S).params  # noqa: E731
            if grad:
                drsvm = isinstance(P, jp.DRSVM)
                def f(t):
                    w = jp.solve(P.with_epsilon(t) if drsvm else P.with_lam(t), S, warn=False).params
                    w = w[0] if isinstance(w, tuple) else w
                    return jax.numpy.sum(w * w)
                v0 = P.epsilon if drsvm else P.lam
                call = lambda: jax.grad(f)(v0)  # noqa: E731
            value = jax.block_until_ready(call())
            best = float("inf")
            for _ in range(reps):
                t = time.perf_counter()
                jax.block_until_ready(call())
                best = min(best, time.perf_counter() - t)
            print("RESULT" + json.dumps({"case": f"{name} / {data}", "s": best, "steps": int(sol.steps),
                                         "gap": float(sol.gap), "grad": float(value) if grad else None}),
                  flush=True)
''').replace("#CASES", CASES.strip().replace("\n", "\n    "))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--before", required=True, help="the commit to compare with (a temporary worktree)")
    ap.add_argument("--data", nargs="+", default=["heart_scale", "a1a"])
    ap.add_argument("--solvers", nargs="+", default=["FISTA", "ProxNewton", "PDProx", "PDBlockFW", "SDCA", "DualAPPA",
                                                     "AGM (hinge ERM)", "AGM (BiasSVM)", "DRSVMBarrier"])
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--grad", action="store_true", help="warm eager jax.grad calls instead of solves")
    ap.add_argument("--out", default="warm_ab")
    args = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="jaxprox-before-")
    subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", tmp, args.before], check=True,
                   capture_output=True)
    best: dict = {}
    try:
        for rep in range(args.repeat):
            for label, src in (("before", Path(tmp)), ("after", ROOT)):
                env = dict(os.environ, PYTHONPATH=str(src), JAXPROX_COMPILATION_CACHE="0")
                recs, err = harness.run_child(CHILD, args.reps, ",".join(args.solvers), ",".join(args.data),
                                              "grad" if args.grad else "solve", env=env, cwd=tempfile.gettempdir(), timeout=1800)
                if err:
                    raise SystemExit(f"{label}: {err}")
                for r in recs:
                    print(label, rep, r, flush=True)
                    old = best.get((label, r["case"]))
                    best[(label, r["case"])] = r if old is None or r["s"] < old["s"] else old
    finally:
        subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", tmp], capture_output=True)
    rows = []
    for case in dict.fromkeys(k for _, k in best):
        b, a = best[("before", case)], best[("after", case)]
        rows.append([case, f"{1e3 * b['s']:.2f}", f"{1e3 * a['s']:.2f}", f"{b['s'] / a['s']:.2f}",
                     f"{b['steps']} / {a['steps']}", f"{b['gap']:.4g} / {a['gap']:.4g}"]
                    + ([f"{b['grad']:.10g} / {a['grad']:.10g}"] if args.grad else []))
    what = "warm eager jax.grad calls" if args.grad else "warm solves"
    table = harness.markdown_table(["case", "before (ms)", "after (ms)", "before / after", "steps", "certified gap"]
                                   + (["gradient"] if args.grad else []), rows)
    harness.write_results(args.out, f"{what.capitalize()} against an earlier commit",
                          [(what.capitalize(), table)],
                          notes=(f"'before' is {args.before} in a temporary worktree. Each figure the best of "
                                 f"{args.reps} {what} in one process, best of {args.repeat} processes per "
                                 "version (interleaved). Run: python benchmarks/perf/bench_warm_ab.py"
                                 + (" --grad" if args.grad else "")))


if __name__ == "__main__":
    main()
