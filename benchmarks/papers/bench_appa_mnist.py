"""Paper 003 §5.2 on MNIST: digits {1,2,4,5,7} vs rest with random Fourier features.

Protocol (note §4.1-4.3): pixels / 255, the data matrix scaled by the inverse average l2 row norm
(one scalar, computed on the training set), then ``D`` random Fourier features of the Gaussian
kernel exp(-||x - x'||^2 / (2 sigma^2)) (Rahimi & Recht 2007),

    z(x) = sqrt(2/D) cos(W x + beta),   W_jk ~ N(0, 1/sigma^2),   beta_j ~ U[0, 2 pi],

with the bandwidth sigma by the median heuristic (median pairwise distance of 1000 random scaled
training points) and the same (W, beta) for train and test. Labels b = +1 for {1,2,4,5,7}, -1
otherwise. Objectives are the paper's averages: F(x) = (1/2n)||Ax - b||^2 (squared) and
F(x) = (1/n) sum log(1 + exp(-b_i a_i^T x)) (logistic), no regulariser.

Methods (each with its single parameter lambda on the grid 10^i, note §2.5): Dual APPA with SDCA
inner (prox weight lambda, one SDCA pass per stage, O(d) re-centring), SDCA on F + (lambda/2)||x||^2,
SVRG (step size lambda, epoch n; its snapshot pass is not counted, as in the paper) and SGD
(step lambda / sqrt(t)). All start at x = 0 and run 20 stages of n steps; every method is one
jitted program vmapped over the lambda grid, with the data passed as arguments (not constants).
After each stage: training objective F(x) and test error (sign(a^T x) != b).

Reported (benchmarks/results/appa_mnist.md + appa_mnist_*.png): per loss the best lambda of each
method (the run with the smallest final F, i.e. "best minimised the original ERM objective"), its
final excess loss F - F* (squared; F* by an eigendecomposition of A^T A/n in float64, checked by
its gradient) or final F (logistic), its test error, curves against passes for the best runs, and
the final value against lambda (Fig. 3). For the squared loss the dashed lines are the ERM values of
fully solved ridge problems ls(lambda) at lambda = 0 and at the best SDCA / Dual APPA lambdas.

Usage: python benchmarks/papers/bench_appa_mnist.py [--n 60000] [--features 2000] [--stages 20]
"""
from __future__ import annotations

import argparse
import gzip
import os
import sys
import time
from pathlib import Path

import jax

jax.config.update("jax_enable_x64", True)
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

sys.path[:0] = [str(Path(__file__).resolve().parent), str(Path(__file__).resolve().parents[1])]  # this group, harness
import harness  # noqa: E402

import jaxprox as jp  # noqa: E402
from jaxprox.baselines.sgd import SGD  # noqa: E402
from jaxprox.losses import Logistic, Squared  # noqa: E402
from jaxprox.penalties import SquaredL2  # noqa: E402
from jaxprox.solvers.appa import SDCA, SVRG, DualAPPA  # noqa: E402

POSITIVE = (1, 2, 4, 5, 7)


def mnist_dir() -> Path:
    for root in jp.datasets.data_roots():
        if (root / "mnist" / "train-images.idx3-ubyte.gz").exists():
            return root / "mnist"
    raise FileNotFoundError("MNIST not found under $JAXPROX_DATA/mnist")


def read_idx(path: Path, offset: int) -> np.ndarray:
    with gzip.open(path, "rb") as f:
        return np.frombuffer(f.read(), np.uint8, offset=offset)


def load_mnist():
    d = mnist_dir()
    Xtr = read_idx(d / "train-images.idx3-ubyte.gz", 16).reshape(-1, 784) / 255.0
    ytr = read_idx(d / "train-labels.idx1-ubyte.gz", 8)
    Xte = read_idx(d / "t10k-images.idx3-ubyte.gz", 16).reshape(-1, 784) / 255.0
    yte = read_idx(d / "t10k-labels.idx1-ubyte.gz", 8)
    to_pm = lambda lab: np.where(np.isin(lab, POSITIVE), 1.0, -1.0)
    return Xtr, to_pm(ytr), Xte, to_pm(yte)


def random_fourier(Xtr, Xte, D, seed=0):
    """Average-row-norm scaling, median-heuristic bandwidth, D Gaussian random Fourier features."""
    rng = np.random.default_rng(seed)
    scale = 1.0 / np.mean(np.linalg.norm(Xtr, axis=1))
    Xtr, Xte = Xtr * scale, Xte * scale
    sub = Xtr[rng.choice(len(Xtr), 1000, replace=False)]
    sq = np.sum(sub**2, 1)
    dist = np.sqrt(np.maximum(sq[:, None] + sq[None, :] - 2 * sub @ sub.T, 0.0))
    sigma = float(np.median(dist[np.triu_indices(len(sub), 1)]))
    W = rng.normal(size=(Xtr.shape[1], D)) / sigma
    beta = rng.uniform(0, 2 * np.pi, size=D)
    feat = lambda X: np.sqrt(2.0 / D) * np.cos(X @ W + beta)
    return feat(Xtr), feat(Xte), sigma


def least_squares(A, b):
    """F* = min (1/2n)||Ax - b||^2 via the eigendecomposition of A^T A / n (pseudo-inverse), and
    ridge solutions x(lam) = (A^T A/n + lam I)^{-1} A^T b / n for the ls(lam) lines."""
    n = A.shape[0]
    G = A.T @ A / n
    c = A.T @ b / n
    ev, V = np.linalg.eigh(G)
    Vc = V.T @ c
    pos = ev > 1e-13 * ev[-1]

    def solve(lam):
        inv = np.where(pos, 1.0 / np.where(pos, ev, 1.0), 0.0) if lam == 0 else 1.0 / (ev + lam)
        x = V @ (inv * Vc)
        return x, 0.5 * np.mean((A @ x - b) ** 2)

    x, F = solve(0.0)
    g = A.T @ (A @ x - b) / n
    return F, float(np.linalg.norm(g)), solve, float(ev[pos].min()), float(ev[-1])


def methods():
    """name -> lam -> (solver, uses the ridge problem)."""
    return {
        "Dual APPA (SDCA)": lambda lam: (DualAPPA(prox_lam=lam), False),
        "SDCA": lambda lam: (SDCA(), True),
        "SVRG": lambda lam: (SVRG(step_size=lam), False),
        "SGD": lambda lam: (SGD(step0=lam), False),
    }


def run_method(make, problem, ridge, Ate, bte, lams, stages):
    """All lambdas at once: (F after each stage, test error after each stage), compile and run s."""

    def one(lam, problem, ridge, Ate, bte):
        S, use_ridge = make(lam)
        pr = ridge.with_lam(lam) if use_ridge else problem
        st = S.init(pr)

        def body(st, _):
            st = S.step(pr, st)
            x = S.params(st)
            F = problem.objective(x)
            err = jnp.mean(jnp.where(Ate @ x * bte > 0, 0.0, 1.0))
            return st, (jnp.where(jnp.isfinite(F), F, jnp.inf), err)

        _, out = jax.lax.scan(body, st, None, length=stages)
        return out

    f = jax.jit(jax.vmap(one, in_axes=(0, None, None, None, None)))
    args = (lams, problem, ridge, Ate, bte)
    t0 = time.perf_counter()
    comp = f.lower(*args).compile()
    t_comp = time.perf_counter() - t0
    t0 = time.perf_counter()
    F, err = jax.block_until_ready(comp(*args))
    return np.asarray(F), np.asarray(err), t_comp, time.perf_counter() - t0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=60000, help="training samples used (first n)")
    ap.add_argument("--features", type=int, default=2000)
    ap.add_argument("--stages", type=int, default=20)
    ap.add_argument("--grid", nargs="+", type=int, default=list(range(-8, 5)))
    ap.add_argument("--losses", nargs="+", default=["squared", "logistic"])
    ap.add_argument("--methods", nargs="+", default=None, help="subset of the method names")
    ap.add_argument("--name", default="appa_mnist")
    args = ap.parse_args()
    load0 = os.getloadavg()
    t_all = time.perf_counter()
    Xtr, ytr, Xte, yte = load_mnist()
    Xtr, ytr = Xtr[: args.n], ytr[: args.n]
    t0 = time.perf_counter()
    Atr, Ate, sigma = random_fourier(Xtr, Xte, args.features)
    t_feat = time.perf_counter() - t0
    n, D = Atr.shape
    print(f"MNIST RFF: n={n} test={len(yte)} D={D} sigma={sigma:.4f} ({t_feat:.1f} s); "
          f"positives {np.mean(ytr > 0):.3f}", flush=True)
    lams = jnp.asarray([10.0**i for i in args.grid])
    Ate_j, bte_j = jnp.asarray(Ate), jnp.asarray(yte)
    sections, table_rows, lam_rows, figs = [], [], [], {}
    ref_lines = [f"* data: MNIST train first {n} of 60000 samples, test 10000; digits {POSITIVE} -> +1 "
                 f"(train fraction {np.mean(ytr > 0):.3f}); {D} random Fourier features, median-heuristic "
                 f"sigma = {sigma:.4f} after average-row-norm scaling (features {t_feat:.1f} s)"]
    for loss in args.losses:
        L = Squared() if loss == "squared" else Logistic()
        problem = jp.ERM(Atr, ytr, L)
        ridge = jp.ERM(Atr, ytr, L, penalty=SquaredL2(1.0))
        F_star, solve_ridge = None, None
        if loss == "squared":
            t0 = time.perf_counter()
            F_star, gnorm, solve_ridge, ev_min, ev_max = least_squares(Atr, ytr)
            ref_lines.append(f"* squared: F* = {F_star:.12g} (eigendecomposition of A^T A/n, float64, "
                             f"{time.perf_counter() - t0:.1f} s; |grad F(x*)| = {gnorm:.1e}; positive "
                             f"eigenvalues {ev_min:.2e} .. {ev_max:.2e})")
            print(ref_lines[-1], flush=True)
        res = {}
        for name, make in methods().items():
            if args.methods is not None and name not in args.methods:
                continue
            F, err, tc, tr = run_method(make, problem, ridge, Ate_j, bte_j, lams, args.stages)
            fin = np.where(np.isfinite(F[:, -1]), F[:, -1], np.inf)
            j = int(np.argmin(fin))
            res[name] = dict(F=F, err=err, j=j, tc=tc, tr=tr)
            print(f"  {loss} {name:18s} best lam={float(lams[j]):.0e} final F={F[j, -1]:.8g} "
                  f"test err={err[j, -1]:.4f}  compile {tc:.1f}s run {tr:.1f}s", flush=True)
            lam_rows.append([loss, name] + [float(v) if np.isfinite(v) else "diverged" for v in F[:, -1]])
        base = res["Dual APPA (SDCA)"]
        for name, r in res.items():
            j = r["j"]
            fF = float(r["F"][j, -1])
            row = [loss, name, f"{float(lams[j]):.0e}", fF]
            row.append(fF - F_star if F_star is not None else "-")
            row += [float(r["err"][j, -1]), float(r["err"][j].min()),
                    float((fF - F_star) / (float(base["F"][base["j"], -1]) - F_star)) if F_star is not None
                    else float(fF / float(base["F"][base["j"], -1])),
                    round(r["tc"], 1), round(r["tr"], 1)]
            table_rows.append(row)
        ls_lines = {}
        if solve_ridge is not None:
            for lab, lam in (("ls(0)", 0.0), (f"ls({float(lams[res['SDCA']['j']]):.0e}) (SDCA's)",
                                                float(lams[res["SDCA"]["j"]])),
                             (f"ls({float(lams[base['j']]):.0e}) (Dual APPA's)", float(lams[base["j"]]))):
                ls_lines[lab] = solve_ridge(lam)[1]
            ref_lines.append("* squared, ERM value of fully solved ridge problems (lower bounds for SDCA(lam)): "
                             + ", ".join(f"{k} = {v:.10g}" for k, v in ls_lines.items()))
        figs[loss] = (F_star, res, ls_lines)
    plot(figs, np.asarray(lams), args.name, args.stages)
    sections.append(("Data and references (same run)", "\n".join(ref_lines)))
    sections.append((f"Best run of each method after {args.stages} stages of n steps",
                     harness.markdown_table(
                         ["loss", "method", "best lambda", "final F", "final F - F*", "final test error",
                          "min test error over stages", "excess (squared) or F (logistic) / Dual APPA's",
                          "compile s", f"run s ({len(lams)} lambdas, vmapped)"], table_rows)))
    sections.append(("Final F after the budget vs lambda (Fig. 3)",
                     harness.markdown_table(["loss", "method"] + [f"1e{i}" for i in args.grid], lam_rows)))
    notes = (f"Command: `python benchmarks/papers/bench_appa_mnist.py {' '.join(sys.argv[1:])}`. Shared 2-core "
             f"machine, load average {load0[0]:.1f} at start and {os.getloadavg()[0]:.1f} at end; total "
             f"{time.perf_counter() - t_all:.0f} s; times only comparable within this run. float64. "
             "Passes counted as in the paper: one per SDCA epoch / Dual APPA stage / SVRG inner epoch "
             "(snapshot pass not counted) / SGD epoch. Best lambda = smallest final F. "
             f"Plots: benchmarks/results/{args.name}_curves.png, {args.name}_lambda.png.")
    path = harness.write_results(args.name, "Dual APPA vs SDCA, SVRG, SGD on MNIST {1,2,4,5,7} vs rest "
                                 "(random Fourier features; paper 003 §5.2)", sections, notes)
    print("wrote", path)


def plot(figs, lams, name, stages):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    k = len(figs)
    fig, axes = plt.subplots(k, 2, figsize=(9, 3.4 * k), squeeze=False)
    x = np.arange(1, stages + 1)
    for row, (loss, (F_star, res, ls_lines)) in zip(axes, figs.items()):
        for m, r in res.items():
            j = r["j"]
            lab = f"{m} ({float(lams[j]):.0e})"
            if F_star is not None:
                row[0].semilogy(x, np.maximum(r["F"][j] - F_star, 1e-16), label=lab)
            else:
                row[0].semilogy(x, r["F"][j], label=lab)
            row[1].plot(x, r["err"][j], label=lab)
        for lab, v in ls_lines.items():
            if lab != "ls(0)":
                row[0].axhline(v - F_star, ls="--", lw=0.8, color="gray")
                row[0].text(stages, v - F_star, lab, fontsize=6, ha="right", va="bottom")
        row[0].set_title(f"MNIST RFF, {loss}: " + ("excess train loss F - F*" if F_star is not None
                                                   else "train loss F"))
        row[1].set_title(f"MNIST RFF, {loss}: test error")
        for ax in row:
            ax.set_xlabel("# gradients / n (stages)")
            ax.legend(fontsize=6)
        row[1].set_ylim(0, 0.25)
    fig.tight_layout()
    fig.savefig(harness.RESULTS / f"{name}_curves.png", dpi=120)
    fig, axes = plt.subplots(1, k, figsize=(4.5 * k, 3.6), squeeze=False)
    for ax, (loss, (F_star, res, _)) in zip(axes[0], figs.items()):
        for m, r in res.items():
            fin = r["F"][:, -1]
            ax.loglog(lams, np.where(np.isfinite(fin), np.minimum(fin, 1e3), 1e3), marker="o", ms=3, label=m)
        ax.set_title(f"MNIST RFF, {loss}: final F vs lambda (diverged = 1e3)")
        ax.set_xlabel("lambda")
        ax.set_ylabel("final F")
        ax.legend(fontsize=6)
    fig.tight_layout()
    fig.savefig(harness.RESULTS / f"{name}_lambda.png", dpi=120)


if __name__ == "__main__":
    main()
