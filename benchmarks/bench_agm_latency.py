"""AGM's latency (issue "Start fast") and warm solve speed, before / after a commit, one run.

* Latency: bench_latency.py's fresh-process figures (first solve with an empty cache, with a warm
  persistent cache, trace / compile / run split, HLO size, first gradient) for the three AGM
  routes on heart (270 x 13): ``BiasSVM`` (dual run; bench_latency's ``AGM`` row), the plain SVM
  ``ERM(Hinge, SquaredL2)`` (``SVMDualModel``) and a smooth-loss ERM (logistic + SquaredL2).
* Warm speed: per data set, one process per version: a warm ``jp.solve`` (median of 3) of
  ``AGM(tol=1e-6)`` on ``BiasSVM(lam)`` and on the plain SVM, with steps and certified gap.

    python benchmarks/bench_agm_latency.py --before 0230643 [--datasets heart australian a1a]

Prints markdown tables (no results file is written: the lead merges them into latency.md).
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import tempfile
import textwrap
from pathlib import Path

import bench_latency
import harness

ROOT = Path(__file__).resolve().parents[1]
ROUTES = {
    "AGM": ("bias_svm", "jp.AGM(tol=1e-6)"),
    "AGM (plain SVM)": ("svm", "jp.AGM(tol=1e-6)"),
    "AGM (logistic, L2)": ("ridge", "jp.AGM(tol=1e-8)"),
}

WARM = textwrap.dedent('''
    import json, statistics, sys, time, warnings
    warnings.simplefilter("ignore")
    import jax
    jax.config.update("jax_enable_x64", True)
    import jaxprox as jp
    from jaxprox import losses, penalties
    name = sys.argv[1]
    X, y = jp.datasets.load(name)
    n = X.shape[0]
    for route, lam in (("BiasSVM", 1e-2), ("BiasSVM", 1e-4), ("plain SVM", 1e-2)):
        P = jp.BiasSVM(X, y, lam) if route == "BiasSVM" else jp.ERM(X, y, losses.Hinge(), penalties.SquaredL2(lam))
        S = jp.AGM(tol=1e-6, max_steps=20000)
        sol = jax.block_until_ready(jp.solve(P, S, warn=False))
        ts = []
        for _ in range(3):
            t = time.perf_counter(); jax.block_until_ready(jp.solve(P, S, warn=False).params); ts.append(time.perf_counter() - t)
        print("RESULT" + json.dumps({"route": route, "lam": lam, "warm": statistics.median(ts), "steps": int(sol.steps),
              "gap": float(sol.gap) / abs(float(sol.primal_value)), "converged": bool(sol.converged)}))
''')


def warm_rows(src: Path, name: str) -> list[dict]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("JAX_COMPILATION", "JAXPROX_"))}
    env["PYTHONPATH"] = str(src)
    records, err = harness.run_child(WARM, name, env=env, cwd=tempfile.gettempdir(), timeout=900)
    return records or [{"error": err}]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--before", required=True)
    ap.add_argument("--datasets", nargs="*", default=["heart_scale", "australian", "a1a", "breast-cancer_scale"])
    ap.add_argument("--skip-latency", action="store_true")
    args = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="jaxprox-before-")
    subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", tmp, args.before], check=True,
                   capture_output=True)
    sources = [("before", Path(tmp)), ("after", ROOT)]
    bench_latency.CASES.update(ROUTES)
    try:
        if not args.skip_latency:
            print("| route | version | first solve (s) | warm cache (s) | trace (s) | compile (s) | run (s) "
                  "| HLO (kB) | first grad (s) |")
            print("|---" * 9 + "|")
            for case in ROUTES:
                for label, src in sources:
                    r = bench_latency.measure(src, case, False)
                    f = bench_latency._fmt
                    print(f"| {case} | {label} | {f(r.get('first'))} | {f(r.get('cached'))} | {f(r.get('trace'))} | "
                          f"{f(r.get('compile'))} | {f(r.get('run'), '.4f')} | {f(r.get('hlo_kb'), '.0f')} | "
                          f"{f(r.get('grad'))} |", flush=True)
        print("\n| data | route | lam | version | warm solve (s) | steps | gap / P | converged |")
        print("|---" * 8 + "|")
        for name in args.datasets:
            for label, src in sources:
                for r in warm_rows(src, name):
                    if "error" in r:
                        print(f"| {name} | error: {r['error']} |", flush=True)
                        continue
                    print(f"| {name} | {r['route']} | {r['lam']:g} | {label} | {r['warm']:.4f} | {r['steps']} | "
                          f"{r['gap']:.1e} | {r['converged']} |", flush=True)
    finally:
        subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", tmp], capture_output=True)
    print("\n" + json.dumps(harness.machine_info()))


if __name__ == "__main__":
    main()
