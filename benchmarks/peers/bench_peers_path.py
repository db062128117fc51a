"""Regularisation paths against scikit-learn, celer and skglm (``benchmarks/results/peers.md``).

Rows:
  * ``lasso``: synthetic 10,000 x 1,000 (AR(1) columns, rho 0.6, 20 non-zeros, noise 0.5), 100
    log-spaced lambdas from lam_max to lam_max / 1000;
  * ``logistic-a9a``: l1-logistic regression on a9a (32,561 x 123, sparse), 100 lambdas from lam_max
    to lam_max / 1000 (``--n-lams``);
  * ``logistic-sector``: l1-logistic on sector (class 1 against the rest; 6,412 x 55,197, sparse),
    20 lambdas from lam_max to lam_max / 100 (needs the LIBSVM file, ``$JAXPROX_DATA``).

jaxprox runs its default path, ``jp.solve_path(problem, None, lams)`` (working sets with gap-safe
screening, on the compressed least-squares problem for the Lasso: the compression is included in
the time). The peers: scikit-learn (``lasso_path``; liblinear ``LogisticRegression`` looped with
warm starts), celer (``celer_path``) and skglm (``Lasso`` / ``SparseLogisticRegression`` looped
with ``warm_start``). Protocol: the target of every lambda is the optimum certified by jaxprox at
a relative duality gap of 1e-10; each library runs at the loosest tolerance of its grid that puts
every lambda within 1e-6 relative of it (the oracle), then is timed 3 times, interleaved with the
others, median reported; jaxprox's first call (compilation) is reported apart, with an empty
persistent compilation cache (``JAXPROX_CACHE_DIR`` set to a fresh folder).

    python benchmarks/peers/bench_peers_path.py [--rows lasso logistic-a9a] [--n-lams 100] [--small]
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
import warnings
from pathlib import Path

import jax
import numpy as np

sys.path[:0] = [str(Path(__file__).resolve().parents[1])]
os.environ["JAXPROX_CACHE_DIR"] = tempfile.mkdtemp(prefix="jaxprox-bench-peers-")  # first calls compile
jax.config.update("jax_enable_x64", True)

import harness  # noqa: E402

import jaxprox as jp  # noqa: E402
from jaxprox import losses, penalties  # noqa: E402

warnings.filterwarnings("ignore")
TOLS = (1e-2, 1e-3, 1e-4, 1e-5, 1e-6, 1e-8, 1e-10)


def lasso_data(n=10_000, d=1_000, seed=0):
    rng = np.random.default_rng(seed)
    Z = rng.standard_normal((n, d))
    X = np.empty_like(Z)
    X[:, 0] = Z[:, 0]
    for j in range(1, d):
        X[:, j] = 0.6 * X[:, j - 1] + 0.8 * Z[:, j]
    w = np.zeros(d)
    w[rng.choice(d, 20, replace=False)] = rng.standard_normal(20)
    return X, X @ w + 0.5 * rng.standard_normal(n)


def row_data(row, small):
    if row == "lasso":
        return ("squared",) + lasso_data(*((2_000, 200) if small else ()))
    import scipy.sparse as sps

    if row == "logistic-a9a":
        X, y = jp.datasets.load("a9a", dense=False)
    else:
        X, y = jp.datasets.load_libsvm(harness.data_file("sector/sector.scale.bz2"))
        y = np.where(y == 1, 1.0, -1.0)
    X = sps.csr_matrix(X)
    if small:
        X, y = X[:3000], y[:3000]
    return "logistic", X, np.asarray(y, float)


def lam_grid(kind, X, y, m, ratio):
    g0 = X.T @ y / len(y) if kind == "squared" else X.T @ y / (2 * len(y))
    lmax = float(np.max(np.abs(g0)))
    return np.logspace(np.log10(lmax), np.log10(lmax / ratio), m)


def objective(kind, X, y, w, lam):
    z = X @ w
    risk = 0.5 * np.mean((z - y) ** 2) if kind == "squared" else np.mean(np.logaddexp(0, -y * z))
    return risk + lam * np.abs(w).sum()


# ---------------------------------------------------------------- the methods: (X, y, lams, tol) -> W
def jaxprox_at(tol):
    def run(kind, X, y, lams):
        loss = losses.Squared() if kind == "squared" else losses.Logistic()
        prob = jp.ERM(X, y, loss, penalties.L1(lams[0]))
        sols = jp.solve_path(prob, jp.WorkingSet(tol=tol), lams, warn=False)
        return np.asarray(jax.block_until_ready(sols.params))
    return run


def sklearn_at(tol):
    def run(kind, X, y, lams):
        if kind == "squared":
            from sklearn.linear_model import lasso_path

            return lasso_path(X, y, alphas=lams, tol=tol, max_iter=100_000)[1].T
        from sklearn.linear_model import LogisticRegression

        n, W = X.shape[0], []
        clf = LogisticRegression(penalty="l1", solver="liblinear", fit_intercept=False, tol=tol, max_iter=10_000,
                                 warm_start=True)
        for lam in lams:
            clf.set_params(C=1.0 / (n * lam))
            W.append(clf.fit(X, y).coef_.ravel().copy())
        return np.array(W)
    return run


def celer_at(tol):
    def run(kind, X, y, lams):
        from celer import celer_path

        if kind == "squared":
            return celer_path(X, y, "lasso", alphas=lams, tol=tol)[1].T
        return celer_path(X, y, "logreg", alphas=lams * X.shape[0], tol=tol)[1].T  # celer: sum of losses
    return run


def skglm_at(tol):
    def run(kind, X, y, lams):
        from skglm import Lasso, SparseLogisticRegression

        est = (Lasso(alpha=lams[0], tol=tol, fit_intercept=False, warm_start=True, max_iter=1000) if kind == "squared"
               else SparseLogisticRegression(alpha=lams[0], tol=tol, fit_intercept=False, warm_start=True, max_iter=1000))
        W = []
        for lam in lams:
            est.set_params(alpha=lam)
            W.append(np.asarray(est.fit(X, y).coef_).ravel().copy())
        return np.array(W)
    return run


METHODS = {"jaxprox (default path)": jaxprox_at, "scikit-learn": sklearn_at, "celer": celer_at, "skglm": skglm_at}
OUR_TOLS = (1e-4, 1e-5, 1e-6, 1e-7, 1e-8)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", nargs="+", default=["lasso", "logistic-a9a"])
    ap.add_argument("--n-lams", type=int, default=100)
    ap.add_argument("--small", action="store_true", help="small sizes (a smoke test of the script)")
    ap.add_argument("--out", default="peers")
    ap.add_argument("--skip", nargs="*", default=[], help="methods left out (e.g. celer)")
    args = ap.parse_args()
    sections = []
    for row in args.rows:
        kind, X, y = row_data(row, args.small)
        m, ratio = (args.n_lams, 1000) if row != "logistic-sector" else (20, 100)
        lams = lam_grid(kind, X, y, m, ratio)
        loss = losses.Squared() if kind == "squared" else losses.Logistic()
        t0 = time.perf_counter()  # the process's first jaxprox path: compilation included
        ref = jp.solve_path(jp.ERM(X, y, loss, penalties.L1(lams[0])), jp.WorkingSet(tol=1e-10), lams, warn=False)
        first_call = time.perf_counter() - t0
        t0 = time.perf_counter()
        jp.solve_path(jp.ERM(X, y, loss, penalties.L1(lams[0])), jp.WorkingSet(tol=1e-10), lams, warn=False)
        compile_s = max(first_call - (time.perf_counter() - t0), 0.0)
        Xd = X  # objectives on the data as given
        f_star = np.array([objective(kind, Xd, y, w, lam) for w, lam in zip(np.asarray(ref.params), lams)])
        certified = bool(np.all(np.asarray(ref.status) == 0))
        chosen = {}
        for name, make in METHODS.items():  # the oracle: the loosest tolerance within 1e-6 everywhere
            if any(name.startswith(k) for k in args.skip):
                continue
            for tol in (OUR_TOLS if name.startswith("jaxprox") else TOLS):
                t0 = time.perf_counter()
                try:
                    W = make(tol)(kind, X, y, lams)
                except Exception as e:  # noqa: BLE001 - a peer that fails is reported, not fatal
                    print(f"{row} {name} tol {tol}: {type(e).__name__}: {e}", flush=True)
                    break
                sub = max((objective(kind, Xd, y, w, lam) - f) / abs(f) for w, lam, f in zip(W, lams, f_star))
                print(f"{row} {name} tol {tol:g}: worst rel. subopt {sub:.2e} ({time.perf_counter() - t0:.2f} s)",
                      flush=True)
                if sub <= 1e-6:
                    chosen[name] = (tol, sub)
                    break
        times = {name: [] for name in chosen}
        for _ in range(3):  # interleaved repeats
            for name, (tol, _) in chosen.items():
                t0 = time.perf_counter()
                METHODS[name](tol)(kind, X, y, lams)
                times[name].append(time.perf_counter() - t0)
                print(f"  timed {name}: {times[name][-1]:.2f} s", flush=True)
        med = {name: statistics.median(ts) for name, ts in times.items()}
        peers = [v for k, v in med.items() if not k.startswith("jaxprox")]
        ours = med.get("jaxprox (default path)")
        rows = []
        for name, (tol, sub) in chosen.items():
            ratio_txt = "" if ours is None else f"{med[name] / ours:.2f}"
            comp = f"{compile_s:.2f}" if name.startswith("jaxprox") else ""
            rows.append([name, f"{tol:g}", f"{sub:.1e}", f"{med[name]:.3f}", comp, ratio_txt])
        fastest = min(peers) if peers else None
        summary = ("" if ours is None or fastest is None else
                   f"\n\nFastest peer / jaxprox: **{fastest / ours:.2f}x** (jaxprox {ours:.3f} s, fastest peer "
                   f"{fastest:.3f} s). Reference certified at every lambda: {certified}.")
        shape = f"{X.shape[0]:,} x {X.shape[1]:,}"
        sections.append((f"{row}: {shape}, {len(lams)} lambdas down to lam_max / {ratio}",
                         harness.markdown_table(["method", "tol (oracle)", "worst rel. subopt.", "path s (median of 3)",
                                                 "compile s (first call)", "time / jaxprox time"], rows) + summary))
        print(sections[-1][1], flush=True)
    notes = __doc__.split("Protocol:")[1].split("    python")[0].strip().replace("\n", " ")
    if args.skip:
        notes += f" Left out of this run: {', '.join(args.skip)}."
    path = harness.write_results(args.out, "Paths against scikit-learn, celer and skglm", sections, notes=notes)
    print("wrote", path)


if __name__ == "__main__":
    main()
