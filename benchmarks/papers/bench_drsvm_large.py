"""DRSVM (paper 004): the large synthetic case, n = 200,000, d = 100 -- jp.DRSVMPDHG vs cvxpy + Clarabel.

    python benchmarks/papers/bench_drsvm_large.py ref  [--norm l1] [--c 0]     (slow: Clarabel once)
        cvxpy + Clarabel (tolerances 1e-8) on ``make_drsvm_synthetic(200000, 100, 0.5, seed=0)``;
        optimum, wall time of ``problem.solve`` (canonicalisation included), status and the load
        average are cached in ``benchmarks/cache/drsvm_large_*.json``.
    python benchmarks/papers/bench_drsvm_large.py trace [--norms l1] [--budget 480]
        PDHG in blocks of 64 iterations: objective, certified gap, wall time (cached, reported).
    python benchmarks/papers/bench_drsvm_large.py report [--clarabel-killed-after S --clarabel-cpu S]
        Rewrites results/drsvm_large.md from the caches.
    python benchmarks/papers/bench_drsvm_large.py run  [--norms l1 l2 linf] [--c 0]
        jp.DRSVMPDHG to a certified relative duality gap of 1e-6 (compile timed apart, warm
        runs timed), its objective against Clarabel's cached optimum, and the ratio
        t_Clarabel / t_PDHG. -> results/drsvm_large.md

Clarabel at this size takes ~10 minutes on an idle 2-core machine, so it is run once (``ref``, in
the background, on the same machine and day) and cached; the report says so and records the load
averages of both runs.
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
import numpy as np  # noqa: E402

sys.path[:0] = [str(Path(__file__).resolve().parent), str(Path(__file__).resolve().parents[1])]  # this group, harness
import harness  # noqa: E402
from bench_drsvm import EPS, KAPPA, clarabel_drsvm  # noqa: E402
import jaxprox as jp  # noqa: E402

N, D, SIGMA, SEED = 200_000, 100, 0.5, 0


def cache_path(norm, c):
    return harness.CACHE / f"drsvm_large_n{N}_d{D}_s{SIGMA}_seed{SEED}_{norm}_c{c:g}.json"


def data():
    X, y, _ = jp.datasets.make_drsvm_synthetic(N, D, SIGMA, SEED)
    return X, y


def cmd_ref(args):
    X, y = data()
    Z = y[:, None] * X
    load0, t0 = os.getloadavg(), time.time()
    f, sec, w, lam, status = clarabel_drsvm(Z, args.norm, args.c, tol=1e-8)
    harness.CACHE.mkdir(parents=True, exist_ok=True)
    cache_path(args.norm, args.c).write_text(json.dumps(dict(
        n=N, d=D, sigma=SIGMA, seed=SEED, norm=args.norm, c=args.c, f_star=f, seconds=sec,
        status=status, lam=lam, w=w.tolist(), load_at_start=load0, load_at_end=os.getloadavg(),
        date=time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(t0)),
        note="cvxpy + Clarabel tolerances 1e-8; seconds = wall time of problem.solve (cvxpy "
             "canonicalisation included) on the shared 2-core machine")))
    print(f"large ref {args.norm} c={args.c}: f* = {f:.10f}, {sec:.1f} s, {status}", flush=True)


def pdhg_path(norm, c):
    return harness.CACHE / f"drsvm_large_pdhg_{norm}_c{c:g}.json"


def cmd_run(args):
    """PDHG for each norm; results cached per norm, then the report is rewritten."""
    X, y = data()
    for norm in args.norms:
        load0 = os.getloadavg()
        pr = jp.DRSVM(X, y, norm=norm, kappa=KAPPA, epsilon=EPS, c=args.c)
        sv = jp.DRSVMPDHG(tol=args.tol, max_steps=args.max_steps, check_every=64)
        run = jax.jit(lambda p: jp.solve(p, sv))
        sol, t_comp, t_run = harness.time_jax(run, pr, repeat=args.repeat)
        f = float(pr.objective(sol.params))
        mv = harness.matvec_bound(pr.A, 1, 1, repeat=5)
        res = dict(norm=norm, c=args.c, f=f, gap_rel=float(sol.gap) / abs(f), steps=int(sol.steps),
                   status=sol.status_name, t_run=t_run, t_compile=t_comp, repeat=args.repeat,
                   t_iter_over_matvec=t_run / max(int(sol.steps), 1) / mv,
                   feasible=bool(pr.feasible(sol.params, 1e-9)), load_at_start=load0,
                   load_at_end=os.getloadavg(), date=time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()))
        harness.CACHE.mkdir(parents=True, exist_ok=True)
        pdhg_path(norm, args.c).write_text(json.dumps(res))
        print(res, flush=True)
        cmd_report(args)


def trace_path(norm, c):
    return harness.CACHE / f"drsvm_large_trace_{norm}_c{c:g}.json"


def cmd_trace(args):
    """PDHG in jitted blocks of 64 iterations until a certified relative gap <= tol or
    ``--budget`` seconds: objective, certified gap and wall time per block (the first block is
    run twice so that its compilation is excluded)."""
    X, y = data()
    norm = args.norms[0]
    pr = jp.DRSVM(X, y, norm=norm, kappa=KAPPA, epsilon=EPS, c=args.c)
    sv = jp.DRSVMPDHG(tol=args.tol)

    @jax.jit
    def block(st):
        st = jax.lax.fori_loop(0, args.block, lambda _, s: sv.step(pr, s), st)
        return (st,) + pr.certificate((st.w, st.lam), st.a)

    init = jax.jit(sv.init)
    t0 = time.perf_counter()
    jax.block_until_ready(block(init(pr)))
    t_first = time.perf_counter() - t0
    load0, rows = os.getloadavg(), []
    t0 = time.perf_counter()
    st = jax.block_until_ready(init(pr))
    for k in range(1, args.max_steps // args.block + 1):
        st, p, _, g = jax.block_until_ready(block(st))
        rows.append((args.block * k, float(p), float(g) / abs(float(p)), time.perf_counter() - t0))
        print(norm, rows[-1], flush=True)
        if rows[-1][2] <= args.tol or rows[-1][3] > args.budget:
            break
    res = dict(norm=norm, c=args.c, rows=rows, first_block_with_compile=t_first,
               t_block=rows[0][3], load_at_start=load0, load_at_end=os.getloadavg(),
               date=time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()))
    harness.CACHE.mkdir(parents=True, exist_ok=True)
    trace_path(norm, args.c).write_text(json.dumps(res))
    cmd_report(args)


def cmd_report(args):
    rows, notes = [], []
    for norm in ("l1", "l2", "linf"):
        p, r = pdhg_path(norm, args.c), cache_path(norm, args.c)
        if not p.exists():
            continue
        m = json.loads(p.read_text())
        ref = json.loads(r.read_text()) if r.exists() else None
        f_ref = ref["f_star"] if ref else None
        rows.append([norm, args.c, f"{m['f']:.10f}", f"{m['gap_rel']:.1e}", m["steps"], m["status"],
                     m["feasible"], f"{m['t_run']:.3g}", f"{m['t_compile']:.3g}",
                     f"{m['t_iter_over_matvec']:.2g}",
                     f"{f_ref:.10f}" if ref else None, ref["status"] if ref else None,
                     f"{(m['f'] - f_ref) / abs(f_ref):.1e}" if ref else None,
                     f"{ref['seconds']:.4g}" if ref else None,
                     f"{ref['seconds'] / m['t_run']:.3g}" if ref else None])
        notes.append(f"- q = {norm}: PDHG run {m['date']}, load average {m['load_at_start'][0]:.1f} at "
                     f"start, {m['load_at_end'][0]:.1f} at end (median of {m['repeat']} warm runs)."
                     + (f" Clarabel run {ref['date']}, load average {ref['load_at_start'][0]:.1f} at "
                        f"start, {ref['load_at_end'][0]:.1f} at end." if ref else
                        " Clarabel: not run for this q (time budget)."))
    heads = ["q", "c", "f PDHG", "certified rel. gap", "PDHG iterations", "status", "feasible",
             "t PDHG (s)", "PDHG compile (s)", "t/iter over (Zw + Z^T v) time", "f Clarabel",
             "Clarabel status", "rel. subopt. vs Clarabel", "t Clarabel (s)", "t Clarabel / t PDHG"]
    text = (f"Data `make_drsvm_synthetic({N}, {D}, {SIGMA}, seed={SEED})` (standard normal features, "
            f"sigma = 0.5: the paper's Fig. 1 setup at n = 200,000), kappa = {KAPPA}, eps = {EPS}, "
            "dense float64. `jp.DRSVMPDHG(tol=1e-6)` stops on its certified duality gap "
            "P - D <= 1e-6 |P|, so its relative suboptimality is <= 1e-6 whatever the reference; "
            "time = median of warm jitted runs, compile apart. Clarabel (cvxpy, tolerances 1e-8; wall "
            "time of `problem.solve` including canonicalisation) is run once by "
            "`bench_drsvm_large.py ref` and cached, because it takes ~10 min on an idle 2-core machine "
            "(677 s quoted in issue 4). **Shared machine**: 2 CPU cores shared with other agents; "
            "absolute times are noisy. " + args.note + "\n\n" + "\n".join(notes))
    sections = [("Time to a certified 1e-6 relative gap (full runs, when they finished)",
                 harness.markdown_table(heads, rows) if rows else "No full PDHG run finished.")]
    for norm in ("l1", "l2", "linf"):
        tp = trace_path(norm, args.c)
        if not tp.exists():
            continue
        tr = json.loads(tp.read_text())
        rr = tr["rows"]
        keep = sorted(set(list(range(0, len(rr), max(len(rr) // 12, 1))) + [len(rr) - 1]))
        body = harness.markdown_table(
            ["iterations", "f PDHG", "certified rel. gap", "wall (s, compile excluded)"],
            [[rr[i][0], f"{rr[i][1]:.10f}", f"{rr[i][2]:.1e}", f"{rr[i][3]:.1f}"] for i in keep])
        f_last = rr[-1][1]
        above = [i for i, r in enumerate(rr) if (r[1] - f_last) / abs(f_last) > 1e-6]
        est = rr[above[-1] + 1] if above else rr[0]
        cert = next((r for r in rr if r[2] <= 1e-5), None)
        body += (f"\n\nFrom iteration {est[0]} ({est[3]:.1f} s) on, every block has (f_k - f_last) / "
                 "f_last <= 1e-6: an *estimate* of reaching 1e-6 relative suboptimality, not "
                 "certified (f_last >= f*, and f* is known only to the final certified gap). "
                 f"Last block: certified gap {rr[-1][2]:.1e} after {rr[-1][3]:.0f} s"
                 + (f"; certified gap first <= 1e-5 at iteration {cert[0]} ({cert[3]:.0f} s)." if cert
                    else "."))
        body += (f"\n\nRun finished {tr['date']}, load average {tr['load_at_start'][0]:.1f} at start, "
                 f"{tr['load_at_end'][0]:.1f} at end; first block including compilation "
                 f"{tr['first_block_with_compile']:.1f} s, a warm 64-iteration block "
                 f"{tr['t_block']:.1f} s.")
        hit = next((r for r in rr if r[2] <= args.tol), None)
        if hit:
            body += (f"\n\n**Certified {args.tol:g} relative gap at iteration {hit[0]}, {hit[3]:.1f} s** "
                     "(wall, compile excluded). Against the issue's calibration of Clarabel on this "
                     f"instance, 677 s on 2 idle cores (*not* measured in the same run): 677 / "
                     f"{hit[3]:.1f} = {677 / hit[3]:.0f}x.")
        if args.clarabel_killed_after:
            body += (f" Clarabel (same machine and day, concurrent) had **not finished** after "
                     f"{args.clarabel_killed_after:.0f} s wall ({args.clarabel_cpu:.0f} s CPU) and "
                     "was stopped; so `t Clarabel / t PDHG` is at least "
                     f"{args.clarabel_killed_after:.0f} / t_PDHG, where t_PDHG is the wall time "
                     "at which the certified gap reaches 1e-6 (not reached in the budget when the "
                     "last row is above 1e-6). Against the last PDHG row (certified gap "
                     f"{rr[-1][2]:.1e}): t Clarabel / t PDHG >= {args.clarabel_killed_after:.0f} / "
                     f"{rr[-1][3]:.0f} = {args.clarabel_killed_after / rr[-1][3]:.1f}; against the "
                     f"uncertified 1e-6 estimate above: >= {args.clarabel_killed_after / est[3]:.0f}. "
                     "Issue 4 quotes Clarabel at 677 s on an idle machine for this size.")
        sections.append((f"PDHG trace, q = {norm}, c = {args.c:g} (certified gap per block of "
                         f"{tr['rows'][0][0]} iterations)", body))
    path = harness.write_results("drsvm_large", "DRSVM large synthetic case (n = 200,000, d = 100): "
                                 "restarted Halpern PDHG vs Clarabel", sections, text)
    print("wrote", path, flush=True)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("command", choices=["ref", "run", "trace", "report"])
    ap.add_argument("--norm", default="l1", help="ref: constraint norm")
    ap.add_argument("--norms", nargs="*", default=["l1"], help="run: constraint norms")
    ap.add_argument("--c", type=float, default=0.0)
    ap.add_argument("--tol", type=float, default=1e-6, help="run: certified relative gap")
    ap.add_argument("--max-steps", type=int, default=20000)
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--clarabel-killed-after", type=float, default=0.0,
                    help="report: wall seconds after which an unfinished Clarabel ref run was stopped")
    ap.add_argument("--clarabel-cpu", type=float, default=0.0, help="report: its CPU seconds")
    ap.add_argument("--budget", type=float, default=480.0, help="trace: wall-time budget (s)")
    ap.add_argument("--note", default="", help="report: a sentence on how Clarabel was run")
    ap.add_argument("--block", type=int, default=64, help="trace: iterations per certified block")
    args = ap.parse_args(argv)
    {"ref": cmd_ref, "run": cmd_run, "report": cmd_report, "trace": cmd_trace}[args.command](args)


if __name__ == "__main__":
    main()
