"""jaxprox demo: the headline problem of each paper on data bundled with the package, solved by
jaxprox and by an independent reference solver in the same run.

Prints a table (objective, reference objective, relative difference, certificate gap, solve time
with compile time excluded, reference time, speed ratio) and writes ``demo.png`` with the
convergence trace (duality gap per iteration) of every jaxprox run.

Run with ``make demo`` (or ``python examples/demo.py [--out demo.png]``).
"""
from __future__ import annotations

import argparse
import functools
import sys
import time
import warnings
from dataclasses import dataclass
from typing import Callable

import jax
import jax.numpy as jnp
import numpy as np

jax.config.update("jax_enable_x64", True)

import jaxprox as jp  # noqa: E402
from jaxprox import losses, penalties  # noqa: E402


@dataclass
class Case:
    name: str          # the problem
    paper: str         # which paper's headline it stands for
    build: Callable    # () -> (problem, solver, objective(params) -> float)
    reference: Callable  # () -> (objective value, reference label)


def _timed(fn, *args, repeat=3):
    t0 = time.perf_counter()
    out = jax.block_until_ready(fn(*args))
    first = time.perf_counter() - t0
    runs = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = jax.block_until_ready(fn(*args))
        runs.append(time.perf_counter() - t0)
    run = float(np.median(runs))
    return out, max(first - run, 0.0), run


def _ref_timed(fn, repeat=3):
    runs = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn()
        runs.append(time.perf_counter() - t0)
    return out, float(np.median(runs))


# ----------------------------------------------------------------------------- cases
def _a1a():
    return jp.datasets.load("a1a")


def lasso_case():
    X, y = _a1a()
    lam = 0.01

    def build():
        return jp.ERM(X, y, losses.Squared(), penalties.L1(lam)), jp.FISTA(tol=1e-10, max_steps=50_000)

    def reference():
        from sklearn.linear_model import Lasso

        m = Lasso(alpha=lam, fit_intercept=False, tol=1e-12, max_iter=1_000_000).fit(X, y)
        w = m.coef_
        return 0.5 * np.mean((X @ w - y) ** 2) + lam * np.abs(w).sum(), "sklearn Lasso (cd)"

    return Case("Lasso, a1a, lam=1e-2", "foundation (FISTA)", build, reference)


def logistic_l1_case():
    X, y = _a1a()
    n = X.shape[0]
    C = 0.5
    lam = 1.0 / (n * C)  # sklearn's C = 1 / (n lam)

    def build():
        return jp.ERM(X, y, losses.Logistic(), penalties.L1(lam)), jp.FISTA(tol=1e-10, max_steps=50_000)

    def reference():
        from sklearn.linear_model import LogisticRegression

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            m = LogisticRegression(penalty="l1", C=C, solver="liblinear", random_state=0, fit_intercept=False,
                                   tol=1e-12, max_iter=100_000).fit(X, y)
        w = m.coef_.ravel()
        return np.mean(np.logaddexp(0, -y * (X @ w))) + lam * np.abs(w).sum(), "liblinear"

    return Case("l1-logistic, a1a, C=0.5", "foundation (FISTA)", build, reference)


def _clarabel(objective, var):
    import cvxpy as cp

    prob = cp.Problem(cp.Minimize(objective))
    prob.solve(solver=cp.CLARABEL, tol_gap_abs=1e-10, tol_gap_rel=1e-10, tol_feas=1e-10)
    return var.value


def drsvm_case(interior=False):
    """Paper 004 headline: l1-DRSVM (kappa=1, eps=0.1, c=0) on a1a; published optimum 0.651090.
    ``interior=False``: the paper's ISG (900 steps; its own certificate stays
    loose); ``interior=True``: our interior-point ``jp.DRSVMBarrier``, which certifies 1e-9."""
    X, y = _a1a()

    def build():
        problem = jp.DRSVM(X, y, norm="l1", kappa=1.0, epsilon=0.1, c=0.0)
        if interior:
            return problem, jp.DRSVMBarrier(tol=1e-9)
        solver = jp.ISG(batch_size=32, step_size=jp.schedules.Geometric(1.0, 0.985), max_steps=900, check_every=100,
                        tol=0.0)  # the paper's ISG
        return problem, solver

    return Case("l1-DRSVM, a1a, eps=0.1", "DRSVM (interior point)" if interior else "DRSVM (ISG)", build,
                _drsvm_reference)


def _drsvm_reference():
    """Clarabel on the l1-DRSVM of :func:`drsvm_case` (timed in each of its rows)."""
    import cvxpy as cp

    X, y = _a1a()
    n, d = X.shape
    Z = y[:, None] * X
    w, lam, s = cp.Variable(d), cp.Variable(), cp.Variable(n)
    cons = [s >= 1 - Z @ w, s >= 1 + Z @ w - lam, s >= 0, cp.norm(w, 1) <= lam]  # norm="l1": q = 1
    prob = cp.Problem(cp.Minimize(0.1 * lam + cp.sum(s) / n), cons)
    prob.solve(solver=cp.CLARABEL, tol_gap_abs=1e-10, tol_gap_rel=1e-10, tol_feas=1e-10)
    return prob.value, "cvxpy + Clarabel"


def pdprox_case():
    """Paper 000 headline: hinge-loss SVM, lam/2 ||w||^2, vs liblinear (C = 1/(n lam))."""
    X, y = jp.datasets.load("breast-cancer_scale")
    n, lam = X.shape[0], 1e-2

    def build():
        problem = jp.ERM(X, y, losses.Hinge(), penalties.SquaredL2(lam))
        return problem, jp.PDProx("cp", scale=1.4, restart=jp.restarts.FixedRestart(2000), tol=1e-6, max_steps=60_000, check_every=200)

    def reference():
        from sklearn.svm import LinearSVC

        m = LinearSVC(loss="hinge", C=1.0 / (n * lam), fit_intercept=False, dual=True, tol=1e-12, random_state=0,
                      max_iter=1_000_000).fit(X, y)
        w = m.coef_.ravel()
        return np.mean(np.maximum(0, 1 - y * (X @ w))) + 0.5 * lam * w @ w, "liblinear (hinge)"

    return Case("hinge SVM, breast-cancer", "Pdprox (CP form)", build, reference)


def block_fw_case():
    """Paper 001 headline: smoothed hinge + (mu/2)||x||^2 over an l1 ball, sparse solution."""
    X, y = jp.datasets.load("heart_scale")
    n = X.shape[0]
    mu, r = 10.0 / n, 1.0

    def build():
        problem = jp.ERM(X, y, losses.SmoothedHinge(1.0), penalties.SquaredL2(mu),
                         constraint=jp.constraints.L1Ball(r))
        return problem, jp.PDBlockFW(sparsity=8, delta_scale=10.0, tol=1e-10, max_steps=20_000)

    def reference():
        import cvxpy as cp

        w = cp.Variable(X.shape[1])
        m = cp.multiply(y, X @ w)
        # smoothed hinge (mu=1): 0 if m >= 1; 1/2 - m if m <= 0; (1-m)^2/2 otherwise
        t = cp.pos(1 - m)
        huber_like = cp.sum(cp.huber(t, 1.0)) / 2 + 0 * cp.sum(m)
        prob = cp.Problem(cp.Minimize(huber_like / n + 0.5 * mu * cp.sum_squares(w)), [cp.norm1(w) <= r])
        prob.solve(solver=cp.CLARABEL, tol_gap_abs=1e-10, tol_gap_rel=1e-10, tol_feas=1e-10)
        ww = w.value
        z = y * (X @ ww)
        sh = np.where(z >= 1, 0.0, np.where(z <= 0, 0.5 - z, 0.5 * (1 - z) ** 2))
        return sh.mean() + 0.5 * mu * ww @ ww, "cvxpy + Clarabel"

    return Case("l1-ball smoothed-hinge, heart", "PDBlockFW (Alg. 1)", build, reference)


def appa_case():
    """Paper 003 headline: the un-regularised logistic optimum through APPA's proximal stages."""
    X, y = jp.datasets.load("heart_scale")

    def build():
        problem = jp.ERM(X, y, losses.Logistic())
        return problem, jp.DualAPPA(prox_lam=0.1, tol=1e-9, max_steps=600)

    def reference():
        from sklearn.linear_model import LogisticRegression

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            m = LogisticRegression(C=np.inf, fit_intercept=False, tol=1e-13, max_iter=100_000,
                                   solver="newton-cg").fit(X, y)
        w = m.coef_.ravel()
        return np.mean(np.logaddexp(0, -y * (X @ w))), "sklearn newton-cg"

    return Case("logistic (no penalty), heart", "Dual APPA", build, reference)


def agm_case():
    """Paper 002 headline: binary SVM with an unpenalised bias, AGM-EF on its dual (box + one
    hyperplane), against scikit-learn SVC(kernel="linear", C = 1/(n lam))."""
    X, y = jp.datasets.load("heart_scale")
    n, lam = X.shape[0], 1e-2

    def build():
        return jp.BiasSVM(X, y, lam), jp.AGM(memory="inf", tol=1e-6, max_steps=20_000, check_every=50)

    def reference():
        from sklearn.svm import SVC

        m = SVC(kernel="linear", C=1.0 / (n * lam), tol=1e-12).fit(X, y)
        w, b = m.coef_.ravel(), m.intercept_[0]
        return np.mean(np.maximum(0, 1 - y * (X @ w + b))) + 0.5 * lam * w @ w, "sklearn SVC (libsvm)"

    return Case("SVM + bias, heart", "AGM-EF (dual)", build, reference)


CASES = [lasso_case, logistic_l1_case, pdprox_case, block_fw_case, agm_case, appa_case, drsvm_case,
         functools.partial(drsvm_case, interior=True)]


def run(out: str = "demo.png") -> list[dict]:
    rows = []
    traces = []
    cases = [c() for c in CASES]
    for i, case in enumerate(cases, 1):
        print(f"[{i}/{len(cases)}] {case.name} ({case.paper}) ...", flush=True)
        problem, solver = case.build()
        sol, compile_s, run_s = _timed(jax.jit(jp.solve), problem, solver)
        (f_ref, ref_label), ref_s = _ref_timed(case.reference, repeat=1)
        f = float(sol.primal_value)
        rows.append(dict(problem=case.name, solver=type(solver).__name__, reference=ref_label,
                         objective=f, ref_objective=float(f_ref), rel_diff=(f - f_ref) / abs(f_ref),
                         gap=float(sol.gap), steps=int(sol.steps), status=sol.status_name,
                         compile_s=compile_s, time_s=run_s, ref_time_s=ref_s, ratio=ref_s / run_s))
        cnt = int(sol.trace.count)
        traces.append((f"{case.name} ({type(solver).__name__})", np.asarray(sol.trace.steps[:cnt]), np.asarray(sol.trace.gap[:cnt])))
        print(f"      objective {f:.10g}  (ref {f_ref:.10g})  gap {float(sol.gap):.2e}  "
              f"{run_s * 1e3:.1f} ms (+{compile_s:.2f} s compile)  ref {ref_s * 1e3:.1f} ms", flush=True)
    print_table(rows)
    plot(traces, out)
    return rows


def print_table(rows):
    head = ["problem", "jaxprox", "reference", "objective", "rel. diff", "gap", "steps", "status", "time ms",
            "ref ms", "speed-up", "compile s"]
    table = [[r["problem"], r["solver"], r["reference"], f"{r['objective']:.8f}", f"{r['rel_diff']:+.1e}",
              f"{r['gap']:.1e}", str(r["steps"]), r["status"], f"{r['time_s'] * 1e3:.1f}",
              f"{r['ref_time_s'] * 1e3:.1f}", f"{r['ratio']:.3g}x", f"{r['compile_s']:.2f}"] for r in rows]
    widths = [max(len(h), *(len(t[i]) for t in table)) for i, h in enumerate(head)]
    line = lambda cells: "  ".join(c.ljust(w) for c, w in zip(cells, widths))
    print()
    print(line(head))
    print(line(["-" * w for w in widths]))
    for t in table:
        print(line(t))
    print("\nspeed-up = reference time / jaxprox time (jaxprox compile time excluded, shown apart); "
          "rel. diff = (jaxprox - reference) / |reference| in objective; gap = jaxprox's certificate "
          "(an upper bound on its suboptimality; ISG's, after the paper's 900 steps without a polish, is "
          "loose; the interior-point DRSVMBarrier certifies the same problem to 1e-9).")


def plot(traces, out):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4.5))
    for name, steps, gap in traces:
        ok = np.isfinite(gap) & (gap > 0)
        ax.semilogy(steps[ok], gap[ok], label=name)
    ax.set_xscale("symlog", linthresh=10)
    ax.set_xlabel("iteration")
    ax.set_ylabel("duality gap (certificate)")
    ax.set_title("jaxprox demo: convergence on bundled real data")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(out, dpi=120)
    print(f"\nwrote {out}")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default="demo.png")
    args = ap.parse_args(argv)
    run(args.out)


if __name__ == "__main__":
    sys.exit(main())
