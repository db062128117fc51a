"""Benchmark: the operator path for AGM on the SVM with bias (see bench_agm.py for the problem
and the scoring). On ijcnn1 (d = 22, about 13 non-zeros per row) the dense operator's products
are ~16x faster than the sparse (coordinate scatter) ones on this machine, so AGM is run with
X dense and with X sparse, against liblinear (sparse X, its natural input) in the same process.

Usage: python benchmarks/bench_agm_dense.py [datasets...]   (default: ijcnn1)
"""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import jax
import numpy as np

jax.config.update("jax_enable_x64", True)

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_agm as B  # noqa: E402
import harness  # noqa: E402

from jaxprox.problems import BiasSVM  # noqa: E402


def main(names):
    from sklearn.svm import LinearSVC

    rows = []
    for name in names:
        X, y, C, LB = B.load_with_reference(name)
        n, d = X.shape
        svc, t_lin = harness.time_call(
            lambda: LinearSVC(loss="hinge", dual=True, C=C, tol=1e-4, max_iter=100000, random_state=0).fit(X, y),
            repeat=3)
        sub_lin = float(harness.suboptimality(B.J_of(X, y, svc.coef_.ravel()), LB))
        rows.append((name, "liblinear tol 1e-4 (sparse, penalised b)", None, None, t_lin, None, None, 1.0, sub_lin))
        for op, Xop in (("dense", np.asarray(X.toarray())), ("sparse", X)):
            model = BiasSVM(Xop, y, B.LAM)
            for memory in ("inf", "1"):
                r = B.run_agm(model, LB, memory=memory)[0]
                r["t_true"] = None if r["s_true"] is None else r["s_true"] * r["time"] / r["steps"]
                print(name, op, memory, r, flush=True)
                rows.append((name, f"AGM-{memory} adaptive, X {op}", r["steps"], r["compile"], r["time"], r["gap"],
                             r["t_true"], r["time"] / t_lin, None if r["t_true"] is None else r["t_true"] / t_lin))
    load = subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()
    head = ["data", "method", "steps", "compile s", "time s (stop at certified 1e-4)", "certified rel. gap",
            "time to true rel. subopt 1e-4 s", "time / liblinear", "true-target time / liblinear (AGM) or liblinear rel. subopt"]
    notes = (f"Machine SHARED with other jobs (2 cores, ~7 agents); `uptime` at the end: {load}. "
             f"lam = {B.LAM}, float64; LB as in agm_svm_bias.md (same cache). One process, ratios within it.")
    harness.write_results("agm_svm_bias_dense", "AGM-EF SVM with bias: dense vs sparse operator, against liblinear",
                          [("Results", harness.markdown_table(head, rows))], notes)
    print((harness.RESULTS / "agm_svm_bias_dense.md").read_text())


if __name__ == "__main__":
    main(sys.argv[1:] or ["ijcnn1"])
