"""DRSVM (paper 004, Li, Chen & So 2020) benchmarks against cvxpy + Clarabel.

Sub-commands (each writes its own results file under ``benchmarks/results/`` incrementally):

    python benchmarks/papers/bench_drsvm.py tables  [--data a1a a8a a9a ijcnn1] [--tables 2 3 4 7 8]
        Tables 2, 3, 4, 7, 8 of the paper: (q, c) = (1, 0), (2, 0), (inf, 0), (1, 1), (inf, 1),
        kappa = 1, epsilon = 0.1. For every jaxprox method: final objective, epochs and time to
        reach 1e-6 relative suboptimality w.r.t. the Clarabel optimum, and the ratio
        t_Clarabel / t_method measured in the same run; compile time reported apart.
        -> results/drsvm_tables.md
    python benchmarks/papers/bench_drsvm.py synthetic
        Fig. 1(a)-(d): ISG vs IPPA on the synthetic n = 1000, d = 100, sigma = 0.5 data
        (f - f* against epochs) and Fig. 1(e): ISG on a1a with batch 1 / 32 / 256 against time.
        -> results/drsvm_fig1.png, results/drsvm_fig1e.png, results/drsvm_fig1.md
    python benchmarks/papers/bench_drsvm.py large-ref     (slow: Clarabel on n = 200,000, d = 100, once)
    python benchmarks/papers/bench_drsvm.py large
        The large synthetic case; Clarabel's optimum and time are cached in
        ``benchmarks/cache/drsvm_large_*.json`` by ``large-ref``. -> results/drsvm_large.md

Timing protocol (all sub-commands). A jaxprox method is run twice, both jitted and warm:
(1) a ``lax.scan`` over epochs that records the objective after each epoch (the trace; the
first epoch ``k*`` with ``(f_k - f_ref) / f_ref <= 1e-6`` is read from it); (2) exactly ``k*``
epochs without any monitoring (``lax.fori_loop`` with a dynamic trip count, so one compilation
serves every ``k*``) -- that wall time is the "time to 1e-6". Compilation is timed apart (first
call minus a warm call). Clarabel is timed around ``problem.solve`` (cvxpy canonicalisation
included, as a user would see it), tolerances 1e-10, in the same process and the same run.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import jax

jax.config.update("jax_enable_x64", True)
import cvxpy as cp  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

sys.path[:0] = [str(Path(__file__).resolve().parent), str(Path(__file__).resolve().parents[1])]  # this group, harness
import harness  # noqa: E402
import jaxprox as jp  # noqa: E402

QS = {"l1": 1, "l2": 2, "linf": "inf"}
KAPPA, EPS = 1.0, 0.1
TARGET = 1e-6


# =============================================================================== references
def clarabel_drsvm(Z, norm, c, kappa=KAPPA, eps=EPS, tol=1e-10):
    """Problem (1) of the paper in cvxpy, solved by Clarabel. ``u = Z w`` is an explicit variable
    so that ``Z`` enters the conic form once. Returns ``(f*, seconds, w*, lam*)``."""
    prob, w, lam = drsvm_cvxpy(Z, norm, c, kappa, eps)
    t0 = time.perf_counter()
    prob.solve(solver=cp.CLARABEL, tol_gap_abs=tol, tol_gap_rel=tol, tol_feas=tol)
    sec = time.perf_counter() - t0
    if prob.status not in ("optimal", "optimal_inaccurate"):
        raise RuntimeError(f"Clarabel status {prob.status}")
    wv, lv = np.asarray(w.value), float(lam.value)
    return drsvm_value(Z, wv, lv, c, kappa, eps), sec, wv, lv, prob.status


def drsvm_cvxpy(Z, norm, c, kappa=KAPPA, eps=EPS):
    """Problem (1) as a cvxpy problem; returns ``(problem, w, lam)``."""
    n, d = Z.shape
    w, lam, u = cp.Variable(d), cp.Variable(), cp.Variable(n)
    h = cp.maximum(cp.maximum(1 - u, 1 + u - kappa * lam), 0)
    obj = eps * lam + cp.sum(h) / n + (c / 2) * cp.sum_squares(w)
    return cp.Problem(cp.Minimize(obj), [u == Z @ w, cp.norm(w, QS[norm]) <= lam]), w, lam


def drsvm_value(Z, wv, lv, c, kappa=KAPPA, eps=EPS):
    """The objective of (1) at a returned point, evaluated like the jaxprox objective."""
    m = Z @ wv
    return float(eps * lv + np.mean(np.maximum(np.maximum(1 - m, 1 + m - kappa * lv), 0)) + c / 2 * wv @ wv)


# =============================================================================== jaxprox timing
def _objective(problem, s):
    return problem.objective((s.w, s.lam))


def trace_run(problem, solver, epochs):
    """Objective after each of ``epochs`` epochs (jitted scan). Returns ``(f, compile_s, run_s)``."""
    @jax.jit
    def run(p):
        def body(s, _):
            s = solver.step(p, s)
            return s, _objective(p, s)
        return jax.lax.scan(body, solver.init(p), None, length=epochs)[1]

    f, tc, tr = harness.time_jax(run, problem, repeat=1)
    return np.asarray(f), tc, tr


def epochs_run(problem, solver):
    """Jitted ``k -> state after k epochs`` without monitoring (dynamic trip count)."""
    @jax.jit
    def run(p, k):
        s = jax.lax.fori_loop(0, k, lambda _, s: solver.step(p, s), solver.init(p))
        return s.w, s.lam
    return run


def time_to_target(problem, solver, f_ref, epochs, target=TARGET, repeat=3):
    """``dict`` with the final objective, best relative suboptimality, the first epoch ``k*`` with
    relative suboptimality <= target, the warm wall time of ``k*`` unmonitored epochs, the
    compile time and the time per monitored epoch."""
    f, tc, tr = trace_run(problem, solver, epochs)
    rel = (f - f_ref) / abs(f_ref)
    hit = np.nonzero(rel <= target)[0]
    out = dict(f_final=float(f[-1]), best_rel=float(np.nanmin(rel)), compile=tc,
               per_epoch=tr / epochs, epochs=None, time=None, trace=f)
    if len(hit):
        k = int(hit[0]) + 1
        run = epochs_run(problem, solver)
        (_, tc2, t) = harness.time_jax(run, problem, k, repeat=repeat)
        w, lam = run(problem, k)
        f_chk = float(problem.objective((w, lam)))
        out.update(epochs=k, time=t, compile=tc + tc2, f_hit=f_chk,
                   feasible=bool(problem.feasible((w, lam), 1e-9)))
    return out


def machine_line():
    info = harness.machine_info()
    load = os.getloadavg()
    return ("Machine: " + ", ".join(f"{k} {v}" for k, v in info.items())
            + f", cvxpy {cp.__version__}, load average at start {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}. "
            "**Shared machine**: 2 CPU cores used by ~7 agents at once, so absolute times are noisy; "
            "every ratio is measured in the same run, method and Clarabel back to back.")


# =============================================================================== tables
TABLES = {2: ("l1", 0.0), 3: ("l2", 0.0), 4: ("linf", 0.0), 7: ("l1", 1.0), 8: ("linf", 1.0)}
PUBLISHED = {  # Clarabel optima quoted in issue 4 (measured by the lead), for a cross-check
    ("a1a", "l1", 0.0): 0.6510903, ("a1a", "l2", 0.0): 0.6338804, ("a1a", "linf", 0.0): 0.6224299,
    ("a1a", "l1", 1.0): 0.7871424, ("a1a", "linf", 1.0): 0.7853248,
    ("a9a", "l1", 0.0): 0.6421854, ("a9a", "l2", 0.0): 0.6388586, ("a9a", "linf", 0.0): 0.6384386,
    ("a9a", "l1", 1.0): 0.7767095, ("a9a", "linf", 1.0): 0.7750632}


def incremental_methods(norm, c, n):
    """Step schedules of the incremental methods (our choice; the paper gives none, note 6.4).

    * M-ISG: batch 32 (the authors' Fig. 1(e) batch), geometric ``alpha_k = alpha0 rho^k`` (S1,
      Table 1: linear rate on sharp instances). ``alpha0 = 1``, ``rho = 0.985`` for q = 1 and for
      c = 1 (a1a/a8a reach 1e-6 with it, ``drsvm_partial.md``); the l2/linf c = 0 problems need a
      smaller start, ``alpha0 = 0.1``, same ``rho``.
    * IPPA: ``alpha_k = 1e-2 * 0.9^k`` (the authors use 1e-2 and 0.965-0.98; IPPA tolerates a more
      aggressive rho, Fig. 1(a)-(c)).
    * Hybrid: the M-ISG phase above for exactly ``max_isg`` epochs (``rol = 0``: the switch on a
      small objective change is disabled here so that the costly IPPA phase has a fixed length),
      then 10 IPPA epochs warm started with ``alpha = alpha_ISG / batch`` decayed by 0.9 per epoch.
    Epoch budgets scale down with n so that one table row stays within minutes on the shared
    machine (IPPA costs ~100x an M-ISG epoch: one prox with up to four secant searches per sample)."""
    a0 = 1.0 if (norm == "l1" or c > 0) else 0.1
    isg_step = jp.schedules.Geometric(a0, 0.985)
    big = n > 5000
    return {
        "M-ISG": (jp.ISG(batch_size=32, step_size=isg_step), 500 if big else 1200),
        "Hybrid": (jp.HybridISGIPPA(batch_size=32, isg_step=isg_step, ippa_rho=0.9, rol=0.0,
                                    max_isg=400 if big else 600), 410 if big else 610),
        "IPPA": (jp.IPPA(step_size=jp.schedules.Geometric(1e-2, 0.9)), 10 if big else 20),
    }


def driver_methods(norm, c, gsadmm=True):
    """Solvers run by ``jp.solve`` to their own certified 1e-6 relative duality gap."""
    out = {}
    if hasattr(jp, "DRSVMPDHG"):
        out["PDHG (restarted Halpern)"] = jp.DRSVMPDHG(tol=1e-6, max_steps=200_000, check_every=64)
    GSADMM = getattr(jp.baselines, "GSADMM", None)
    if GSADMM is not None and gsadmm and norm == "linf" and c == 0:
        out["GS-ADMM"] = GSADMM(tol=1e-6)
    return out


def time_driver(problem, solver, f_ref, repeat=3):
    run = jax.jit(lambda p: jp.solve(p, solver))
    sol, tc, t = harness.time_jax(run, problem, repeat=repeat)
    f = float(problem.objective(sol.params))
    return dict(f_final=f, best_rel=(f - f_ref) / abs(f_ref), compile=tc, time=t,
                epochs=int(sol.steps), status=str(int(sol.status)),
                certified=float(sol.gap) / abs(f), dual=float(sol.dual_value))


ROW_HEADS = ["data", "n", "table", "q", "c", "method", "f", "rel. subopt. (final)",
             "epochs/steps to 1e-6", "t to 1e-6 (s)", "t Clarabel / t method", "compile (s)",
             "s per monitored epoch"]


def cmd_tables(args):
    out = harness.RESULTS / f"{args.out or 'drsvm_tables'}.md"
    ref_rows, rows = [], []

    def write():
        text = ["# DRSVM (paper 004): Tables 2, 3, 4, 7, 8 -- jaxprox methods vs cvxpy + Clarabel", "",
                machine_line(), "",
                "kappa = 1, epsilon = 0.1; Table 2: q = 1, c = 0; 3: q = 2, c = 0; 4: q = inf, c = 0; "
                "7: q = 1, c = 1; 8: q = inf, c = 1 (q = the constraint norm, note 1.1). Data: LIBSVM "
                "training files from $JAXPROX_DATA, dense float64, no scaling (as the authors).", "",
                "Protocol (module docstring of `benchmarks/papers/bench_drsvm.py`): incremental methods "
                "(M-ISG, IPPA, Hybrid) run a fixed epoch budget with the objective recorded after "
                "every epoch; `epochs to 1e-6` is the first epoch with (f - f_Clarabel)/f_Clarabel <= "
                "1e-6 and `t to 1e-6` the warm wall time of exactly that many epochs without "
                "monitoring. Driver solvers (PDHG, GS-ADMM) stop on their own certified relative "
                "duality gap <= 1e-6; their time is the warm `jp.solve` time. `-` = target not "
                "reached within the budget (the final relative suboptimality is shown). Step "
                "schedules: `incremental_methods` docstring. Compile time is reported apart. "
                "Composition: every figure is the named method alone, its own iterate; no method "
                "is finished by PDHG (`jp.Finish` is not used), and PDHG is `jp.DRSVMPDHG` alone.", "",
                "## Clarabel references", "",
                harness.markdown_table(["data", "n", "q", "c", "f Clarabel", "published (issue 4)",
                                        "status", "t Clarabel (s)"], ref_rows), "",
                "## Methods", "", harness.markdown_table(ROW_HEADS, rows), ""]
        out.write_text("\n".join(text))

    for name in args.data:
        X, y = jp.datasets.load(name, dense=True)
        X = np.asarray(X)
        for tab in args.tables:
            norm, c = TABLES[tab]
            pr = jp.DRSVM(X, y, norm=norm, kappa=KAPPA, epsilon=EPS, c=c)
            Z = np.asarray(pr.Z)
            f_ref, t_ref, _, _, status = clarabel_drsvm(Z, norm, c)
            pub = PUBLISHED.get((name, norm, c))
            ref_rows.append([name, len(y), {1: "1", 2: "2"}.get(QS[norm], "inf"), c, f"{f_ref:.7f}",
                             "-" if pub is None else f"{pub:.7f}", status, t_ref])
            print(ref_rows[-1], flush=True)
            res = {}
            for label, sv in driver_methods(norm, c, not args.no_gsadmm).items():
                res[label] = time_driver(pr, sv, f_ref)
            for label, (sv, K) in incremental_methods(norm, c, len(y)).items():
                if label not in args.methods:
                    continue
                res[label] = time_to_target(pr, sv, f_ref, args.epochs or K)
            for label, r in res.items():
                hit = (r["best_rel"] <= TARGET) if "status" in r else (r["time"] is not None)
                rows.append([name, len(y), tab, {1: "1", 2: "2"}.get(QS[norm], "inf"), c, label,
                             f"{r['f_final']:.7f}", f"{(r['f_final'] - f_ref) / abs(f_ref):.1e}",
                             r["epochs"] if hit else None, r["time"] if hit else None,
                             t_ref / r["time"] if hit else None, r["compile"],
                             r.get("per_epoch")])
                print(rows[-1], flush=True)
            write()


# =============================================================================== Fig. 1
FIG1_PANELS = [("(a) q = 1, c = 0 (sharp)", "l1", 0.0), ("(b) q = inf, c = 0 (sharp)", "linf", 0.0),
               ("(c) q = 2, c = 0", "l2", 0.0), ("(d) q = 1, c = 1 (QG, not sharp)", "l1", 1.0)]


def fig1_methods(norm, c):
    """Fig. 1(a)-(d) settings: the authors' Fig. 1(a) script (note 4.2) -- ISG batch 1,
    ``1e-2 * 0.99^k``; IPPA ``1e-2 * 0.965^k`` -- plus one more aggressive rho for each, which
    shows the paper's point (IPPA tolerates a smaller rho than ISG)."""
    return {"ISG b=1, rho=0.99": (jp.ISG(batch_size=1, step_size=jp.schedules.Geometric(1e-2, 0.99)), 100),
            "ISG b=1, rho=0.95": (jp.ISG(batch_size=1, step_size=jp.schedules.Geometric(1e-2, 0.95)), 100),
            "IPPA rho=0.965": (jp.IPPA(step_size=jp.schedules.Geometric(1e-2, 0.965)), 25),
            "IPPA rho=0.9": (jp.IPPA(step_size=jp.schedules.Geometric(1e-2, 0.9)), 25)}


FIG1E = {"ISG b=1 (1e-2, 0.95)": (jp.ISG(batch_size=1, step_size=jp.schedules.Geometric(1e-2, 0.95)), 150),
         "ISG b=32 (0.1, 0.975)": (jp.ISG(batch_size=32, step_size=jp.schedules.Geometric(0.1, 0.975)), 500),
         "ISG b=256 (1, 0.998)": (jp.ISG(batch_size=256, step_size=jp.schedules.Geometric(1.0, 0.998)), 2000)}


FIG_CACHE = harness.CACHE / "drsvm_fig1_{}.json"


def _curve(pr, label, sv, K, f_ref, t_ref):
    f, tc, tr = trace_run(pr, sv, K)
    rel = (f - f_ref) / abs(f_ref)
    hit = np.nonzero(rel <= TARGET)[0]
    return dict(label=label, f=f.tolist(), f_ref=f_ref, t_ref=t_ref, per_epoch=tr / K,
                final_rel=float(rel[-1]), hit=int(hit[0]) + 1 if len(hit) else None)


def cmd_synthetic(args):
    """Compute the requested panels (``--panels a b c d e``), cache each one's curves as JSON in
    ``benchmarks/cache/drsvm_fig1_<panel>.json``, then draw every cached panel."""
    X, y, _ = jp.datasets.make_drsvm_synthetic(1000, 100, 0.5, seed=0)
    for key, (title, norm, c) in zip("abcd", FIG1_PANELS):
        if key not in args.panels:
            continue
        pr = jp.DRSVM(X, y, norm=norm, kappa=KAPPA, epsilon=EPS, c=c)
        f_ref, t_ref, w, lam, _ = clarabel_drsvm(np.asarray(pr.Z), norm, c)
        if norm == "l2":
            title += (f" (||w*|| = {np.linalg.norm(w):.3f} "
                      f"{'<' if np.linalg.norm(w) < lam - 1e-6 else '='} lam* = {lam:.3f})")
        curves = [_curve(pr, label, sv, args.epochs or K, f_ref, t_ref)
                  for label, (sv, K) in fig1_methods(norm, c).items()]
        FIG_CACHE.parent.mkdir(parents=True, exist_ok=True)
        Path(str(FIG_CACHE).format(key)).write_text(json.dumps(dict(title=title, curves=curves,
                                                                     machine=machine_line())))
        print(key, [(cv["label"], cv["final_rel"], cv["hit"]) for cv in curves], flush=True)
    if "e" in args.panels:
        X1, y1 = jp.datasets.load("a1a", dense=True)
        pr = jp.DRSVM(np.asarray(X1), y1, norm="l1", kappa=KAPPA, epsilon=EPS)
        f_ref, t_ref, *_ = clarabel_drsvm(np.asarray(pr.Z), "l1", 0.0)
        curves = []
        for label, (sv, K) in FIG1E.items():
            cv = _curve(pr, label, sv, K, f_ref, t_ref)
            _, _, t_plain = harness.time_jax(epochs_run(pr, sv), pr, K, repeat=1)
            cv["sec_per_epoch"] = t_plain / K
            curves.append(cv)
            print("e", label, cv["final_rel"], cv["hit"], flush=True)
        Path(str(FIG_CACHE).format("e")).write_text(json.dumps(dict(curves=curves, machine=machine_line())))
    render_fig1()


def render_fig1():
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    lines = ["# DRSVM (paper 004): Fig. 1 -- ISG vs IPPA on synthetic data; ISG batch sizes on a1a", "",
             "Fig. 1(a)-(d): `jp.datasets.make_drsvm_synthetic(1000, 100, 0.5, seed=0)` (w*, x_i ~ "
             "N(0, I), scalar noise sigma = 0.5), kappa = 1, eps = 0.1. The paper does not say which "
             "(q, c) each panel uses (note 4.6); ours: (a) q = 1, (b) q = inf, (c) q = 2, all c = 0, "
             "and (d) q = 1, c = 1 (quadratic growth, not sharp). f* = Clarabel's optimum (tolerance "
             "1e-10); f - f* floored at 1e-12 in the plot. Settings: `fig1_methods` docstring. Each "
             "panel was computed by `bench_drsvm.py synthetic --panels ...` (machine line per panel).",
             "", "On this data set the cone is inactive at the optimum for q = 2 and q = inf (||w*||_2 < lam*, "
             "so q = 2 satisfies BLR), hence panels (b) and (c) share f* and, since the iterates stay "
             "inside the cone too, the same curves (note 7.3, 'slack cone'). The epoch budgets (100 ISG, "
             "25 IPPA) were cut by the machine load (IPPA: 1-5 s per epoch of 1000 samples there), so the "
             "curves show only the first two or three decades; with alpha0 = 1e-2 the more aggressive "
             "rho is the better one for both methods at this horizon.", ""]
    panels = [(k, json.loads(Path(str(FIG_CACHE).format(k)).read_text())) for k in "abcd"
              if Path(str(FIG_CACHE).format(k)).exists()]
    rows = []
    if panels:
        fig, axes = plt.subplots(1, len(panels), figsize=(4.5 * len(panels), 4), squeeze=False)
        for ax, (k, P) in zip(axes[0], panels):
            for cv in P["curves"]:
                f = np.asarray(cv["f"])
                ax.semilogy(np.arange(1, len(f) + 1), np.maximum(f - cv["f_ref"], 1e-12), label=cv["label"])
                rows.append([P["title"], cv["label"], f"{cv['f_ref']:.8f}", len(f), f"{cv['final_rel']:.1e}",
                             cv["hit"], cv["per_epoch"], cv["t_ref"]])
            ax.set_title(P["title"], fontsize=8)
            ax.set_xlabel("epoch")
            ax.set_ylabel("f - f*")
            ax.legend(fontsize=7)
        fig.tight_layout()
        fig.savefig(harness.RESULTS / "drsvm_fig1.png", dpi=110)
        lines += [panels[0][1]["machine"], "",
                  harness.markdown_table(["panel", "method", "f* (Clarabel)", "epochs",
                                          "final rel. subopt.", "epochs to 1e-6",
                                          "s per monitored epoch", "t Clarabel (s)"], rows), "",
                  "![Fig. 1(a)-(d)](drsvm_fig1.png)", ""]
    pe = Path(str(FIG_CACHE).format("e"))
    if pe.exists():
        E = json.loads(pe.read_text())
        fig, ax = plt.subplots(figsize=(6, 4))
        rows = []
        for cv in E["curves"]:
            f = np.asarray(cv["f"])
            sec = np.arange(1, len(f) + 1) * cv["sec_per_epoch"]
            ax.semilogy(sec, np.maximum(f - cv["f_ref"], 1e-12), label=cv["label"])
            t_hit = sec[cv["hit"] - 1] if cv["hit"] else None
            rows.append([cv["label"], len(f), f"{cv['final_rel']:.1e}", cv["hit"], t_hit,
                         cv["sec_per_epoch"], cv["t_ref"] / t_hit if t_hit else None])
        t_ref = E["curves"][0]["t_ref"]
        ax.axvline(t_ref, color="k", ls=":", label=f"Clarabel ({t_ref:.1f} s, same run)")
        ax.set_xlabel("seconds (unmonitored epochs, compile excluded)")
        ax.set_ylabel("f - f*")
        ax.set_title("Fig. 1(e): ISG batch size, a1a, q = 1, c = 0", fontsize=9)
        ax.legend(fontsize=7)
        fig.tight_layout()
        fig.savefig(harness.RESULTS / "drsvm_fig1e.png", dpi=110)
        lines += ["## Fig. 1(e): ISG mini-batch size on a1a (q = 1, c = 0)", "", E["machine"], "",
                  "The authors' Fig. 1(e) settings (note 4.3): batch 1 with (alpha0, rho) = (1e-2, 0.95), "
                  "32 with (0.1, 0.975), 256 with (1, 0.998). Time axis = epoch x (warm time of the "
                  "whole unmonitored run / epochs).", "",
                  harness.markdown_table(["method", "epochs", "final rel. subopt.", "epochs to 1e-6",
                                          "t to 1e-6 (s)", "s per epoch", "t Clarabel / t ISG"], rows),
                  "", "![Fig. 1(e)](drsvm_fig1e.png)", ""]
    (harness.RESULTS / "drsvm_fig1.md").write_text("\n".join(lines))


# =============================================================================== large case
LARGE = dict(n=200_000, d=100, sigma=0.5, seed=0, norm="l1", c=0.0)
LARGE_CACHE = harness.CACHE / "drsvm_large_n200000_d100_s0.5_seed0_l1_c0.json"


def large_data():
    X, y, _ = jp.datasets.make_drsvm_synthetic(LARGE["n"], LARGE["d"], LARGE["sigma"], LARGE["seed"])
    return X, y


def cmd_large_ref(args):
    """Clarabel once on the large synthetic case; cache its optimum, time and solution."""
    X, y = large_data()
    Z = y[:, None] * X
    t0 = time.time()
    f, sec, w, lam, status = clarabel_drsvm(Z, LARGE["norm"], LARGE["c"], tol=1e-8)
    harness.CACHE.mkdir(parents=True, exist_ok=True)
    LARGE_CACHE.write_text(json.dumps(dict(
        LARGE, f_star=f, seconds=sec, status=status, lam=lam, w=w.tolist(),
        load_at_end=os.getloadavg(), date=time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(t0)),
        note="cvxpy + Clarabel tolerances 1e-8 (its defaults); seconds = wall time of problem.solve on the shared "
             "2-core machine")))
    print(f"large ref: f* = {f:.10f}, {sec:.1f} s, {status}")


def cmd_large(args):
    """Best jaxprox methods vs Clarabel on the n = 200,000 case. Clarabel's optimum and time come
    from the ``large-ref`` run (cached; re-running a 10+ minute interior-point solve on every
    benchmark run is not affordable). When no cached run finished, ``--clarabel-lower`` gives the
    wall time after which the Clarabel run was killed: the ratio is then a lower bound and the
    reference value is the PDHG's certified dual bound D <= f* (so ``(f - D)/D <= 1e-6`` implies
    relative suboptimality <= 1e-6)."""
    X, y = large_data()
    pr = jp.DRSVM(X, y, norm=LARGE["norm"], kappa=KAPPA, epsilon=EPS, c=LARGE["c"])
    res = {}
    f_ref = None
    if LARGE_CACHE.exists():
        ref = json.loads(LARGE_CACHE.read_text())
        f_ref, t_ref = ref["f_star"], ref["seconds"]
        ref_note = (f"Clarabel (tolerance 1e-8, cvxpy canonicalisation included) from the `large-ref` "
                    f"run of {ref['date']}: f* = {f_ref:.10f}, status {ref['status']}, {t_ref:.1f} s "
                    f"wall (load average at its end {ref['load_at_end'][0]:.1f}; cached in "
                    f"`benchmarks/cache/{LARGE_CACHE.name}`). It was not measured in the same run as "
                    "the jaxprox times (same machine and day, both under heavy shared load): the "
                    "ratio is indicative.")
    for label, sv in driver_methods(LARGE["norm"], LARGE["c"]).items():
        res[label] = time_driver(pr, sv, f_ref if f_ref is not None else 1.0, repeat=2)
        if f_ref is None:
            f_ref, t_ref = res[label]["dual"], args.clarabel_lower
            res[label]["best_rel"] = (res[label]["f_final"] - f_ref) / abs(f_ref)
            ref_note = (f"**Clarabel did not finish**: the `large-ref` run (cvxpy + Clarabel) was killed "
                        f"after {t_ref:.0f} s wall on the shared machine (load average ~20), so "
                        "`t Clarabel / t method` uses that time and is a **lower bound**. Reference "
                        f"value: the certified dual bound of {label}, D = {f_ref:.10f} <= f*.")
        print(label, {k: v for k, v in res[label].items() if k != "trace"}, flush=True)
    isg = jp.ISG(batch_size=32, step_size=jp.schedules.Geometric(0.3, 0.93))
    res["M-ISG b=32 (0.3, 0.93)"] = time_to_target(pr, isg, f_ref, args.epochs or 60, repeat=1)
    rows = []
    for label, r in res.items():
        hit = (r["best_rel"] <= TARGET) if "status" in r else (r["time"] is not None)
        rows.append([label, f"{r['f_final']:.8f}", f"{(r['f_final'] - f_ref) / abs(f_ref):.1e}",
                     r["epochs"] if hit else None, r["time"] if hit else None,
                     t_ref / r["time"] if hit else None, r["compile"]])
        print(rows[-1], flush=True)
    text = ["# DRSVM (paper 004): large synthetic case n = 200,000, d = 100", "", machine_line(), "",
            "Data `make_drsvm_synthetic(200000, 100, 0.5, seed=0)` (standard normal features, "
            "sigma = 0.5), q = 1, c = 0, kappa = 1, eps = 0.1, dense float64.", "", ref_note, "",
            harness.markdown_table(["method", "f", "rel. subopt. (final)", "steps/epochs to 1e-6",
                                    "t to 1e-6 (s)", "t Clarabel / t method", "compile (s)"], rows), ""]
    (harness.RESULTS / "drsvm_large.md").write_text("\n".join(text))


COMMANDS = {"large-ref": cmd_large_ref, "tables": cmd_tables, "synthetic": cmd_synthetic, "large": cmd_large}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("command", choices=sorted(COMMANDS))
    ap.add_argument("--data", nargs="*", default=["a1a"])
    ap.add_argument("--tables", nargs="*", type=int, default=[2, 3, 4, 7, 8])
    ap.add_argument("--epochs", type=int, default=0, help="override the epoch budget")
    ap.add_argument("--methods", nargs="*", default=["M-ISG", "IPPA", "Hybrid"],
                    help="incremental methods to run (driver solvers always run)")
    ap.add_argument("--panels", nargs="*", default=list("abcde"), help="synthetic: panels")
    ap.add_argument("--no-gsadmm", action="store_true", help="tables: skip GS-ADMM")
    ap.add_argument("--clarabel-lower", type=float, default=2400.0,
                    help="large: seconds after which an unfinished Clarabel run was killed")
    ap.add_argument("--out", default="", help="results file name (default drsvm_tables)")
    args = ap.parse_args(argv)
    COMMANDS[args.command](args)


if __name__ == "__main__":
    main()
