"""What relative gap each public solver certifies on float32 data, with jax_enable_x64 on and off,
and FISTA's float32 / float64 time ratio -> benchmarks/results/float32.md (docs/precision.md).

Every solver of the conformance registry (tests/registry.py: its problem, data and
strength) runs on float32 data with tol 1e-7 and at most 5000 steps, each x64 setting in its own
process; the table reports the certified gap / |primal| it ends with. The FISTA timing runs
l1-logistic on phishing (lam = 0.1 lam_max, tol 1e-5), float32 and float64 in one x64-on process,
median of 3 warm calls.

    python benchmarks/perf/bench_float32.py
"""
import json
import os
import pathlib
import platform
import subprocess
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parents[2]
CHILD = r"""
import json, sys, time, warnings
warnings.simplefilter("ignore")
sys.path.insert(0, sys.argv[1])
import jax, numpy as np
import registry as conf
import jaxprox as jp
assert jax.config.jax_enable_x64 == (sys.argv[2] == "1")
X, y = conf.data(np.float32)
out = {}
for case in conf.CASES:
    solver = case.solver.with_options(tol=1e-7, max_steps=min(case.solver.max_steps, 5000))
    sol = jp.solve(conf.set_value(case.problem(X, y), case.value), solver, warn=False)
    out[case.id] = dict(gap=float(sol.gap) / max(abs(float(sol.primal_value)), 1e-30), steps=int(sol.steps),
                        dtype=str(jax.tree_util.tree_leaves(sol.params)[0].dtype), gap_dtype=str(sol.gap.dtype))
if jax.config.jax_enable_x64:
    X, y = jp.datasets.load("phishing", dense=True)
    lam = 0.1 * np.abs(X.T @ (y / 2)).max() / X.shape[0]
    for dt in (np.float32, np.float64):
        P = jp.ERM(X.astype(dt), y.astype(dt), jp.losses.Logistic(), jp.penalties.L1(lam))
        sv = jp.FISTA(tol=1e-5, max_steps=3000)
        jax.block_until_ready(jp.solve(P, sv, warn=False).params)
        ts = []
        for _ in range(3):
            t = time.perf_counter(); s = jp.solve(P, sv, warn=False); jax.block_until_ready(s.params)
            ts.append(time.perf_counter() - t)
        out["fista_" + np.dtype(dt).name] = dict(time=sorted(ts)[1], steps=int(s.steps),
                                                 gap=float(s.gap) / abs(float(s.primal_value)))
print("RESULT" + json.dumps(out))
"""


def run(x64):
    env = dict(os.environ, JAX_ENABLE_X64="1" if x64 else "0", PYTHONPATH=str(ROOT))
    r = subprocess.run([sys.executable, "-c", CHILD, str(ROOT / "tests"), "1" if x64 else "0"], env=env, capture_output=True,
                       text=True, timeout=3000)
    line = [x for x in r.stdout.splitlines() if x.startswith("RESULT")]
    if not line:
        raise RuntimeError(r.stderr[-3000:])
    return json.loads(line[0][6:])


def main():
    import jax

    t0 = time.time()
    on, off = run(True), run(False)
    rows = ["| solver case | rel. gap, x64 on (steps) | rel. gap, x64 off (steps) | params dtype |",
            "|---|---|---|---|"]
    for k in on:
        if k.startswith("fista_"):
            continue
        a, b = on[k], off[k]
        rows.append(f"| {k} | {a['gap']:.1e} ({a['steps']}) | {b['gap']:.1e} ({b['steps']}) | {b['dtype']} |")
    f32, f64 = on["fista_float32"], on["fista_float64"]
    text = "\n".join([
        "# float32: the relative gap each solver certifies (benchmarks/perf/bench_float32.py)", "",
        f"Machine: {platform.machine()} {platform.processor() or ''}, {os.cpu_count()} cores (shared), CPU only; "
        f"python {platform.python_version()}, jax {jax.__version__}; date {time.strftime('%Y-%m-%d')}; "
        f"wall {time.time() - t0:.0f} s.", "",
        "Each conformance case (tests/registry.py: problem, data, strength) on float32 data, tol 1e-7, at "
        "most 5000 steps: the certified gap / |primal| it ends with. x64 on: the certificate is evaluated in "
        "float64 (docs/precision.md); x64 off: in float32.", "",
        *rows, "",
        "## FISTA float32 vs float64 (x64 on, phishing l1-logistic, lam = 0.1 lam_max, tol 1e-5, median of 3)", "",
        "| data dtype | steps | rel. gap | time s |", "|---|---|---|---|",
        f"| float32 | {f32['steps']} | {f32['gap']:.1e} | {f32['time']:.3f} |",
        f"| float64 | {f64['steps']} | {f64['gap']:.1e} | {f64['time']:.3f} |", "",
        f"float32 / float64 time ratio: {f32['time'] / f64['time']:.2f}", ""])
    out = ROOT / "benchmarks" / "results" / "float32.md"
    out.write_text(text)
    print(text)


if __name__ == "__main__":
    main()
