"""Benchmark: scikit-learn SVC (libsvm, linear kernel; solves the unpenalised-bias SVM exactly,
like AGM's BiasSVM) on the large sets of bench_agm.py, which skips it there (n > 10000).

One fit per set at libsvm's default tol 1e-3 (cache_size 2000 MB), next to one liblinear fit
(tol 1e-4, penalised bias) in the same process; both scored by our objective J against the cached
reference lower bound LB of bench_agm.py (run that first). Usage:
python benchmarks/papers/bench_agm_svc.py [datasets...]
"""
from __future__ import annotations

import sys
import time
from pathlib import Path

import jax
import numpy as np

jax.config.update("jax_enable_x64", True)
sys.path[:0] = [str(Path(__file__).resolve().parent), str(Path(__file__).resolve().parents[1])]  # this group, harness
import harness  # noqa: E402
from bench_agm import LAM, J_of, load_with_reference  # noqa: E402


def main(names):
    from sklearn.svm import SVC, LinearSVC

    rows = []
    for name in names:
        X, y, C, LB = load_with_reference(name)
        n, d = X.shape
        t0 = time.perf_counter()
        lin = LinearSVC(loss="hinge", dual=True, C=C, tol=1e-4, max_iter=100000, random_state=0).fit(X, y)
        t_lin = time.perf_counter() - t0
        t0 = time.perf_counter()
        svc = SVC(kernel="linear", C=C, tol=1e-3, cache_size=2000).fit(X, y)
        t_svc = time.perf_counter() - t0
        w = svc.coef_.toarray().ravel() if hasattr(svc.coef_, "toarray") else svc.coef_.ravel()
        for key, t, ww in (("liblinear tol 1e-4 (penalised b)", t_lin, lin.coef_.ravel()),
                           ("libsvm SVC tol 1e-3", t_svc, w)):
            rows.append((name, n, d, key, t, t / t_lin, float(harness.suboptimality(J_of(X, y, ww), LB))))
            print(rows[-1], flush=True)
    harness.write_results(
        "agm_svm_bias_svc", "SVM with unregularised bias: libsvm SVC on the large sets",
        [("One fit each (same process)", harness.markdown_table(
            ["data", "n", "d", "method", "time s", "time / liblinear", "rel. subopt of J vs LB"], rows))],
        f"lam = {LAM} (C = 1/(n lam)). AGM's figures for the same sets: agm_svm_bias.md.")


if __name__ == "__main__":
    main(sys.argv[1:] or ["a9a", "ijcnn1", "w8a"])
