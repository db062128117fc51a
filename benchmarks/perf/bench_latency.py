"""Latency: what a user pays before the first answer (issue "Start fast").

For every public solver on a small bundled problem (heart, 270 x 13), each figure in a *fresh
process*:

* ``import``: ``import jaxprox`` after ``import jax``;
* ``trace`` / ``compile`` / ``run``: ``jax.jit(solve).lower(P)``, ``.compile()``, one warm run;
  ``HLO``: the size of the lowered module's text (what XLA has to compile); ``kernels``: the
  compiled module's fusions, dots, unfused reductions and reduce-windows, each compiled as a kernel of its own
  (XLA:CPU's compile time grows with their number, a few milliseconds each: a count that does not
  depend on the machine's speed or load);
* ``first``: the first ``jp.solve`` end to end with jaxprox's caches off
  (``JAXPROX_COMPILATION_CACHE=0``); ``first_empty``: the same with the caches on and empty (a
  user's very first run: it also stores the traced solve, :mod:`jaxprox.tracecache`); and
  ``cached``: the same in a later process that finds the caches filled (JAX's compilation cache
  and the traced solve);
* ``grad``: the first ``jax.grad`` of a function of the solution, in a fresh process; ``jacfwd``:
  the first ``jax.jacfwd`` of the solution itself (forward mode), in another.

With ``--repeat N`` every figure is the best of ``N`` fresh processes, the versions interleaved
(on a loaded host single first calls of one commit vary by 20%). With ``--before REV`` the same
child script runs on that commit (checked out in a temporary
worktree; its persistent cache switched on by hand through ``JAX_COMPILATION_CACHE_DIR``), so the
before / after ratio comes from one run on one machine.

    python benchmarks/perf/bench_latency.py [--before 6945f3c] [--only FISTA PDProx] [--repeat 2] [--out latency]
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import tempfile
import textwrap
from pathlib import Path

import sys
sys.path[:0] = [str(Path(__file__).resolve().parent), str(Path(__file__).resolve().parents[1])]  # this group, harness
import harness

ROOT = Path(__file__).resolve().parents[2]

# name -> (problem builder, solver expression, differentiable hyperparameter setter or None)
CASES = {
    "FISTA": ("erm_l1", "jp.FISTA(tol=1e-8)"),
    "ProxNewton": ("erm_l1", "jp.ProxNewton(tol=1e-8)"),
    "ProxNewton-ball": ("fw", "jp.ProxNewton(tol=1e-6)"),
    "PDProx": ("svm", "jp.PDProx(tol=1e-6)"),
    "SVMNewton": ("svm", "jp.SVMNewton(tol=1e-6)"),
    "PDProx-l1": ("svm_l1", "jp.PDProx(tol=1e-6)"),
    "SVMNewton-l1": ("svm_l1", "jp.SVMNewton(tol=1e-6)"),
    "PDBlockFW": ("fw", "jp.PDBlockFW(sparsity=13, tol=1e-6)"),
    "AGM": ("bias_svm", "jp.AGM(tol=1e-6)"),
    "BiasSVMNewton": ("bias_svm", "jp.BiasSVMNewton(tol=1e-6)"),
    "APPA": ("ridge", "jp.APPA(tol=1e-8)"),
    "DualAPPA": ("ridge", "jp.DualAPPA(tol=1e-8)"),
    "SVRG": ("ridge", "jp.SVRG(tol=1e-8)"),
    "SDCA": ("ridge", "jp.SDCA(tol=1e-8)"),
    "ISG": ("drsvm", "jp.ISG(max_steps=50)"),
    "IPPA": ("drsvm", "jp.IPPA(max_steps=50)"),
    "HybridISGIPPA": ("drsvm", "jp.HybridISGIPPA(max_steps=50)"),
    "DRSVMPDHG": ("drsvm", "jp.DRSVMPDHG(tol=1e-6)"),
    "DRSVMBarrier": ("drsvm", "jp.DRSVMBarrier(tol=1e-8)"),
}

#: the children's problems on heart (``X``, ``y``, ``n`` and the imports in scope): kind -> builder
#: (shared with bench_warm_trace_cache.py)
PROBLEMS = textwrap.dedent('''
    build = {
        "erm_l1": lambda: jp.ERM(X, y, losses.Logistic(), penalties.L1(1e-2)),
        "svm": lambda: jp.ERM(X, y, losses.Hinge(), penalties.SquaredL2(1.0 / n)),
        "svm_l1": lambda: jp.ERM(X, y, losses.Hinge(), penalties.L1(1e-2)),
        "fw": lambda: jp.ERM(X, y, losses.SmoothedHinge(1.0), penalties.SquaredL2(10.0 / n), L1Ball(1.0)),
        "bias_svm": lambda: jp.BiasSVM(X, y, 1.0 / n),
        "ridge": lambda: jp.ERM(X, y, losses.Logistic(), penalties.SquaredL2(1e-3)),
        "drsvm": lambda: jp.DRSVM(X, y, epsilon=0.1),
    }
''')

CHILD = textwrap.dedent('''
    import json, os, sys, time, warnings
    warnings.simplefilter("ignore")
    t0 = time.perf_counter(); import jax; t1 = time.perf_counter()
    jax.config.update("jax_enable_x64", True)
    import jax.numpy as jnp
    import jaxprox as jp
    t2 = time.perf_counter()
    from jaxprox import losses, penalties
    from jaxprox.constraints import L1Ball
    mode, kind, expr = sys.argv[1], sys.argv[2], sys.argv[3]
    X, y = jp.datasets.load("heart_scale", dense=True)
    n = X.shape[0]
    #PROBLEMS
    P = build[kind]()
    S = eval(expr)
    if hasattr(S, "budgeted"):  # max_steps=None: the budget jp.solve resolves (split mode's RunOptions)
        S = S.budgeted(P)
    out = {"import_jax": t1 - t0, "import_jaxprox": t2 - t1}
    block = jax.block_until_ready
    if mode == "first":
        t = time.perf_counter(); block(jp.solve(P, S).params); out["first"] = time.perf_counter() - t
    elif mode == "split":
        D = getattr(jp, "driver", None)
        if D is None:  # the driver split by job: the loop, the adjoint, the solver contract
            D = jp.adjoint
            args = (P, jp.loop._canonical(jp.solver.fresh(S, P)), None, jp.loop.RunOptions.of(S), jp.ImplicitAdjoint())
            f = lambda P: D._solve_compiled.top(*args)  # noqa: E731
            f.lower = lambda P: D._solve_compiled.top.lower(*args)
        elif hasattr(getattr(D._solve_compiled, "top", None), "lower"):  # what jp.solve compiles
            args = (P, D._canonical(D._fresh(S, P)), None, D.RunOptions.of(S))
            f = lambda P: D._solve_compiled.top(*args)  # noqa: E731
            f.lower = lambda P: D._solve_compiled.top.lower(*args)
        else:   # an older commit: jp.solve inside jax.jit
            args, f = None, jax.jit(lambda P: jp.solve(P, S).params)
        t = time.perf_counter(); low = f.lower(P); out["trace"] = time.perf_counter() - t
        out["hlo_kb"] = len(low.as_text()) / 1024
        t = time.perf_counter(); comp = low.compile(); out["compile"] = time.perf_counter() - t
        inner = getattr(comp, "compiled", comp)  # equinox wraps jax's Compiled
        if hasattr(inner, "as_text"):
            import re
            out["kernels"] = len(re.findall(r" (?:fusion|dot|reduce|reduce-window)\(", inner.as_text()))
        call = (lambda: comp(P)) if args is None else (lambda: comp(*args))
        block(call())
        t = time.perf_counter(); block(call()); out["run"] = time.perf_counter() - t
    elif mode in ("grad", "jacfwd"):
        is_drsvm = kind == "drsvm"
        setter = (lambda t: P.with_epsilon(t)) if is_drsvm else (lambda t: P.with_lam(t))
        v0 = P.epsilon if is_drsvm else P.lam
        def w_of(t):
            w = jp.solve(setter(t), S).params
            return w[0] if isinstance(w, tuple) else w
        f = (lambda t: jnp.sum(w_of(t) ** 2)) if mode == "grad" else w_of
        d = jax.grad if mode == "grad" else jax.jacfwd
        t = time.perf_counter(); block(d(f)(v0)); out[mode] = time.perf_counter() - t
    print("RESULT" + json.dumps(out))
''')
CHILD = CHILD.replace("#PROBLEMS\n", PROBLEMS.lstrip("\n"))


def _child(src: Path, mode: str, case: str, cache: str | None, old: bool) -> dict:
    kind, expr = CASES[case]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("JAX_COMPILATION", "JAXPROX_"))}
    env["PYTHONPATH"] = str(src)
    if cache is None:
        env["JAXPROX_COMPILATION_CACHE"] = "0"
    elif old:   # the old commit has no cache of its own: JAX's, switched on by hand
        env["JAX_COMPILATION_CACHE_DIR"] = cache
        env["JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS"] = "0.2"
    else:
        env["JAXPROX_CACHE_DIR"] = cache
    records, err = harness.run_child(CHILD, mode, kind, expr, env=env, cwd=tempfile.gettempdir())
    return records[0] if records else {"error": err}


def measure(src: Path, case: str, old: bool) -> dict:
    row = {}
    row.update(_child(src, "split", case, None, old))
    first = _child(src, "first", case, None, old)
    row["first"] = first.get("first", float("nan"))
    row["import_jaxprox"] = first.get("import_jaxprox", float("nan"))
    with tempfile.TemporaryDirectory() as cache:
        # the caches on and empty (what a user's very first run pays), then a process that finds them filled
        row["first_empty"] = _child(src, "first", case, cache, old).get("first", float("nan"))
        row["cached"] = _child(src, "first", case, cache, old).get("first", float("nan"))
    for mode in ("grad", "jacfwd"):
        row[mode] = _child(src, mode, case, None, old).get(mode, float("nan"))
    return row


def readme_ten_lines(src: Path) -> float:
    """The README's example (its first Python block, under "## Example" or, in older READMEs,
    "## Ten lines"), end to end in a fresh process with an empty compilation cache
    (``JAXPROX_COMPILATION_CACHE=0``), timed from before ``import jax``."""
    text = (src / "README.md").read_text()
    heading = "## Example" if "## Example" in text else "## Ten lines"
    block = text.split(heading, 1)[1].split("```python", 1)[1].split("```", 1)[0]
    code = ("import time, json; _t0 = time.perf_counter()\n" + textwrap.dedent(block)
            + "\njax.block_until_ready((sol.params, path.params, dw))"
            + "\nprint('RESULT' + json.dumps({'readme': time.perf_counter() - _t0}))\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("JAX_COMPILATION", "JAXPROX_"))}
    env.update(PYTHONPATH=str(src), JAXPROX_COMPILATION_CACHE="0")
    records, err = harness.run_child(code, env=env, cwd=tempfile.gettempdir())
    return records[0]["readme"] if records else float("nan")


def _fmt(v, spec=".2f"):
    return "-" if v is None or v != v else format(v, spec)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--before", default=None, help="a commit to measure in the same run")
    ap.add_argument("--only", nargs="*", default=None)
    ap.add_argument("--out", default="latency", help="the results file's name (benchmarks/results/OUT.md)")
    ap.add_argument("--repeat", type=int, default=1,
                    help="every figure the best of this many fresh processes (a loaded host)")
    args = ap.parse_args()
    cases = args.only or list(CASES)
    sources = [("after", ROOT, False)]
    tmp = None
    if args.before:
        tmp = tempfile.mkdtemp(prefix="jaxprox-before-")
        subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", tmp, args.before], check=True,
                       capture_output=True)
        sources.insert(0, ("before", Path(tmp), True))
    rows = {}
    try:
        for case in cases:
            for rep in range(args.repeat):  # the versions interleaved, each figure the best of the repeats
                for label, src, old in sources:
                    r = measure(src, case, old)
                    print(case, label, rep, json.dumps(r), flush=True)
                    best = rows.setdefault((case, label), r)
                    for k, v in r.items():
                        if isinstance(v, float) and v == v and not (best.get(k, v) <= v):
                            best[k] = v
        readme = [f"{label}: the README's ten lines end to end in a fresh process, empty cache: "
                  f"{_fmt(readme_ten_lines(src))} s" for label, src, _ in sources]
    finally:
        if tmp:
            subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", tmp], capture_output=True)
    head = ("| solver | version | first solve (s) | first solve, caches on and empty (s) | with warm cache (s) "
            "| trace (s) | compile (s) | run (s) | HLO (kB) | kernels | first grad (s) | grad / first solve "
            "| first jacfwd (s) | jacfwd / first solve |")
    lines = [head, "|---" * 14 + "|"]
    for case in cases:
        for label, _, _ in sources:
            r = rows[(case, label)]
            if "error" in r and "trace" not in r:
                lines.append(f"| {case} | {label} | error: {r['error']} |" + " |" * 11)
                continue
            ratio = r.get("grad", float("nan")) / r.get("first", float("nan"))
            fwd = r.get("jacfwd", float("nan")) / r.get("first", float("nan"))
            lines.append(f"| {case} | {label} | {_fmt(r.get('first'))} | {_fmt(r.get('first_empty'))} | "
                         f"{_fmt(r.get('cached'))} | "
                         f"{_fmt(r.get('trace'))} | {_fmt(r.get('compile'))} | {_fmt(r.get('run'), '.4f')} | "
                         f"{_fmt(r.get('hlo_kb'), '.0f')} | {_fmt(r.get('kernels'), '.0f')} | {_fmt(r.get('grad'))} | "
                         f"{_fmt(ratio)} | {_fmt(r.get('jacfwd'))} | {_fmt(fwd)} |")
    imports = readme + [f"{label}: import jaxprox {_fmt(rows[(cases[0], label)].get('import_jaxprox'))} s after import jax"
               for label, _, _ in sources]
    if args.before:
        for key, what in (("first", "first solve"), ("first_empty", "first solve with the caches on and empty"),
                          ("cached", "first solve with a warm cache")):
            ratios = []
            for case in cases:
                b, a = rows[(case, "before")].get(key), rows[(case, "after")].get(key)
                if b and a and a == a and b == b:
                    ratios.append(f"{case} {b / a:.2f}x")
            imports.append(f"{what}, before / after: " + ", ".join(ratios))
    harness.write_results(args.out, "Latency: first solve, warm cache, first gradient (fresh processes)",
                          [("Per solver (heart 270 x 13)", "\n".join(lines)), ("Import and ratios", "\n".join(imports))],
                          notes=(f"Every figure from a fresh Python process (bench_latency.py), the best of {args.repeat}. "
                                 + (f"'before' is the commit {args.before} in a temporary worktree." if args.before else "")))


if __name__ == "__main__":
    main()
