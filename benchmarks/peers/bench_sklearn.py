"""jaxprox's scikit-learn estimators against scikit-learn's own, in one process.

Pairs (same objective, same scaling ``lam = 1/(n C)``, penalised intercept as in liblinear for
ours; scikit-learn's lbfgs leaves its intercept unpenalised):
  * ``SVMClassifier`` (smoothing + Newton continuation in one compiled loop,
    ``jaxprox/solvers/svm_newton.py``) vs ``LinearSVC(loss="hinge")`` (liblinear dual coordinate
    descent),
  * ``LogisticRegression`` (proximal Newton) vs ``LogisticRegression`` (lbfgs),
  * ``LogisticRegression(penalty="l1")`` (proximal Newton; on >= 4096 rows a FISTA-inner phase
    first) vs ``LogisticRegression(penalty="l1", solver="liblinear")``,
on heart, australian (unscaled features), breast-cancer and a9a, all at default settings
(``C = 1``), on a stratified 70/30 split (accuracy on the 30%); the fits also on phishing,
mushrooms and ijcnn1 (LIBSVM sparse files: sparse input stays sparse for ours when that pays).

For each pair: the first jaxprox fit (tracing + compiling, with an empty persistent compilation
cache: ``JAXPROX_CACHE_DIR`` is set to a fresh folder), the median of 5 later fits of each
library (interleaved: ours, scikit-learn, ours, ...; after one warm-up fit of each), the ratio
sklearn / jaxprox of those medians, test accuracy, whether each fit
converged (scikit-learn: no ``ConvergenceWarning``) and, for the SVM and l1 pairs (the same
objective ``P``), how far scikit-learn's solution is above ours in ``P`` (ours is certified to
``tol`` relative: 1e-4 for the SVM, 1e-6 for logistic). A scikit-learn fit that stopped at its
``max_iter`` (a ``ConvergenceWarning``: LinearSVC on a9a) is timed again with ``max_iter`` 100
times larger, the fit that reaches the accuracy ours certifies, and that ratio is reported
beside the default one. Then ``GridSearchCV`` over 5 values of ``C``
(``logspace(-2, 2, 5)``) with 3-fold CV, serial and ``n_jobs=2`` (worker processes read the
compiled solves from the shared persistent cache), after the fits above (warm in-process
caches for the serial run). The grid on a9a leaves out the l1-logistic pair (its fit at C = 100
takes tens of seconds).

With ``--before REV`` each data set's fits are also timed, just before ours, in a subprocess that
imports jaxprox as it was at git revision ``REV`` (``git archive``), with its own scikit-learn
timings from the same minutes, so that "before" and "after" share the machine and its load.

    JAX_PLATFORMS=cpu .venv/bin/python benchmarks/peers/bench_sklearn.py [--before REV] [--fits-only | --no-cv]
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
import warnings

os.environ.setdefault("JAX_ENABLE_X64", "1")  # float64, like scikit-learn; also in the workers
os.environ["JAXPROX_CACHE_DIR"] = tempfile.mkdtemp(prefix="jaxprox-bench-sklearn-")

import numpy as np  # noqa: E402
from sklearn.exceptions import ConvergenceWarning  # noqa: E402
from sklearn.linear_model import LogisticRegression as SkLR  # noqa: E402
from sklearn.linear_model import LogisticRegressionCV as SkLRCV  # noqa: E402
from sklearn.model_selection import GridSearchCV, train_test_split  # noqa: E402
from sklearn.svm import LinearSVC  # noqa: E402

from pathlib import Path
sys.path[:0] = [str(Path(__file__).resolve().parent), str(Path(__file__).resolve().parents[1])]  # this group, harness
import harness  # noqa: E402

import jaxprox as jp  # noqa: E402
from jaxprox.sklearn import LogisticRegression, LogisticRegressionCV, SVMClassifier  # noqa: E402

DATASETS = ["heart_scale", "australian", "breast-cancer_scale", "a9a"]
EXTRA = ["phishing", "mushrooms", "ijcnn1"]
REPEATS = 5  # timed fits of each library per pair (median), after one warm-up fit each
#: seconds of rest before each timed fit: scikit-learn's BLAS threads keep spinning for a while after
#: a call and slow the next fit on a 2-core machine by 15-30% (measured on a9a), whichever library runs it
PAUSE = 0.2  # fits only (no grid): a check that the defaults are not tuned to a9a
PAIRS = {
    "SVM (hinge)": (lambda: SVMClassifier(), lambda: LinearSVC(loss="hinge")),
    "logistic l2": (lambda: LogisticRegression(), lambda: SkLR()),
    "logistic l1": (lambda: LogisticRegression(penalty="l1"),
                    lambda: SkLR(penalty="l1", solver="liblinear")),
}
GRID = {"C": np.logspace(-2, 2, 5)}
CV_PAIRS = {  # scikit-learn's defaults: Cs = logspace(-4, 4, 10), 5 stratified folds, accuracy
    "logistic l2": (lambda: LogisticRegressionCV(), lambda: SkLRCV()),
    "logistic l1": (lambda: LogisticRegressionCV(penalty="l1"), lambda: SkLRCV(penalty="l1", solver="liblinear")),
}


def timed_fit(make, X, y):
    """``(estimator, seconds, converged)``; converged = no ConvergenceWarning and, for ours,
    ``converged_``."""
    est = make()
    time.sleep(PAUSE)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        t0 = time.perf_counter()
        est.fit(X, y)
        sec = time.perf_counter() - t0
    warned = any(issubclass(w.category, ConvergenceWarning) for w in caught)
    return est, sec, (not warned) and getattr(est, "converged_", True)


def grid_seconds(make, X, y, n_jobs):
    gs = GridSearchCV(make(), GRID, cv=3, n_jobs=n_jobs)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t0 = time.perf_counter()
        gs.fit(X, y)
        return time.perf_counter() - t0, gs.best_params_["C"], gs.best_score_


def cv_data(name):
    """A bundled dataset, or scikit-learn's breast-cancer standardised (its l1 CV reaches C = 1e4 on
    nearly separable folds)."""
    if name.startswith("breast-cancer (scikit-learn"):
        from sklearn.datasets import load_breast_cancer
        from sklearn.preprocessing import StandardScaler

        X, y = load_breast_cancer(return_X_y=True)
        return StandardScaler().fit_transform(X), y
    return jp.datasets.load(name)


def cv_main():
    """``LogisticRegressionCV`` against scikit-learn's (10 values of C, 5 folds, refit): the whole
    search in one estimator, where ours solves every C of a fold in one batched call. Writes
    ``benchmarks/results/sklearn_cv.md``."""
    rows = []
    for name in DATASETS + ["breast-cancer (scikit-learn, standardised)"]:
        X, y = cv_data(name)
        Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.3, stratify=y, random_state=0)
        for pair, (ours, theirs) in CV_PAIRS.items():
            est, first, _ = timed_fit(ours, Xtr, ytr)
            runs = [timed_fit(ours, Xtr, ytr) for _ in range(3 if name != "a9a" else 1)]
            ref_runs = [timed_fit(theirs, Xtr, ytr) for _ in range(3 if name != "a9a" else 1)]
            t_ours, t_ref = (float(np.median([r[1] for r in rr])) for rr in (runs, ref_runs))
            est, ref = runs[-1][0], ref_runs[-1][0]
            rows.append([name, pair, first, t_ours, t_ref, t_ref / t_ours, f"{est.C_[0]:.3g}", f"{ref.C_[0]:.3g}",
                         est.score(Xte, yte), ref.score(Xte, yte), f"{runs[-1][2]} / {est.folds_converged_}",
                         str(ref_runs[-1][2])])
            print(rows[-1], flush=True)
    table = harness.markdown_table(
        ["data", "pair", "jaxprox first fit (s, compile incl.)", "jaxprox fit (s)", "sklearn fit (s)",
         "ratio sklearn/jaxprox", "jaxprox C_", "sklearn C_", "jaxprox acc", "sklearn acc",
         "jaxprox converged (final / every fold)", "sklearn converged"], rows)
    print(harness.write_results(
        "sklearn_cv", "LogisticRegressionCV: jaxprox vs scikit-learn",
        [("10 values of C, 5 folds, refit on the training split (median of 3 fits after one warm-up; a9a: 1)", table)],
        notes=("Same protocol as `sklearn.md` (stratified 70/30 split, accuracy on the 30%, first fit with an empty "
               "persistent compilation cache). jaxprox solves the 10 values of C of a fold in one compiled call, a "
               "proximal-Newton `solve_path` warm-started from large to small regularisation, each to a 1e-4 "
               "relative duality gap (the estimator's default), and penalises the intercept (liblinear's "
               "convention); scikit-learn's l2 path is lbfgs warm-started along C (tol 1e-4, "
               "unpenalised intercept), its l1 path liblinear.")))


def objective(pair, est, X, y, C=1.0):
    """``P(w)`` of a fitted estimator's ``(coef_, intercept_)`` in the papers' scaling (penalised
    intercept, liblinear's convention) for the SVM and l1 pairs; ``None`` for l2 (lbfgs leaves its
    intercept unpenalised: another objective)."""
    if pair == "logistic l2":
        return None
    Xa = np.hstack([X.toarray() if hasattr(X, "toarray") else np.asarray(X), np.ones((X.shape[0], 1))])
    w = np.r_[np.ravel(est.coef_), np.ravel(est.intercept_)]
    z = np.where(np.asarray(y) == est.classes_[1], 1.0, -1.0) * (Xa @ w)
    lam = 1.0 / (len(z) * C)
    if pair == "SVM (hinge)":
        return float(np.mean(np.maximum(0.0, 1.0 - z)) + 0.5 * lam * w @ w)
    return float(np.mean(np.logaddexp(0.0, -z)) + lam * np.abs(w).sum())


def fit_rows(name):
    """The fit protocol on one data set: per pair ``[first, ours, sklearn, ratio, our acc, sklearn acc,
    our converged (steps), sklearn converged]`` and the split."""
    X, y = jp.datasets.load(name)
    Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.3, stratify=y, random_state=0)
    rows = {}
    for pair, (ours, theirs) in PAIRS.items():
        est, first, _ = timed_fit(ours, Xtr, ytr)
        timed_fit(theirs, Xtr, ytr)  # scikit-learn's warm-up too
        runs, ref_runs = [], []
        for _ in range(REPEATS):  # interleaved, so that a change of the machine's load hits both
            runs.append(timed_fit(ours, Xtr, ytr))
            ref_runs.append(timed_fit(theirs, Xtr, ytr))
        t_ours = float(np.median([r[1] for r in runs]))
        t_ref = float(np.median([r[1] for r in ref_runs]))
        est, ref = runs[-1][0], ref_runs[-1][0]
        # a scikit-learn fit that stopped at its max_iter is also timed run to convergence (max_iter
        # x 100): that is the fit with the accuracy ours certifies
        t_conv, conv = t_ref, ref_runs[-1][2]
        if not conv:
            longer = lambda: theirs().set_params(max_iter=100 * theirs().max_iter)  # noqa: E731
            conv_runs = [timed_fit(longer, Xtr, ytr) for _ in range(REPEATS)]
            t_conv, conv = float(np.median([r[1] for r in conv_runs])), conv_runs[-1][2]
        p_ref = objective(pair, ref, Xtr, ytr)
        excess = None if p_ref is None else f"{p_ref / float(est.objective_[0]) - 1:.1e}"
        rows[pair] = [first, t_ours, t_ref, t_ref / t_ours, float(est.score(Xte, yte)), float(ref.score(Xte, yte)),
                      f"{runs[-1][2]} ({est.n_iter_})", str(ref_runs[-1][2]), excess,
                      t_conv if not ref_runs[-1][2] else None, (t_conv / t_ours) if not ref_runs[-1][2] else None,
                      None if ref_runs[-1][2] else str(conv)]
    return rows, (Xtr, ytr)


def before_rows(rev, name):
    """:func:`fit_rows` for ``name`` run by jaxprox at git revision ``rev``, in a subprocess."""
    root = str(Path(__file__).resolve().parents[2])
    src = os.path.join(tempfile.gettempdir(), f"jaxprox-bench-sklearn-{rev}")
    if not os.path.isdir(src):
        os.makedirs(src)
        archive = subprocess.run(["git", "-C", root, "archive", rev, "jaxprox"], check=True, capture_output=True).stdout
        subprocess.run(["tar", "-x", "-C", src], input=archive, check=True)
    env = dict(os.environ, PYTHONPATH=src)
    out = subprocess.run([sys.executable, os.path.abspath(__file__), "--rows-json", name], env=env, check=True,
                         capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def main(before=None, fits_only=False):
    fit_table, grid_rows = [], []
    for name in DATASETS + EXTRA:
        old = before_rows(before, name) if before else None
        rows, (Xtr, ytr) = fit_rows(name)
        for pair, (ours, theirs) in PAIRS.items():
            row = [name, pair, *rows[pair]]
            if old:
                row[6:6] = [old[pair][1], old[pair][2], old[pair][3]]  # after our ratio: before ours, sklearn, ratio
                row.append(old[pair][6])  # before: converged (steps)
            fit_table.append(row)
            print(row, flush=True)
            if fits_only or name in EXTRA or (name == "a9a" and pair == "logistic l1"):
                continue
            for n_jobs in (None, 2):
                s_ours, c_ours, acc_ours = grid_seconds(ours, Xtr, ytr, n_jobs)
                s_ref, c_ref, acc_ref = grid_seconds(theirs, Xtr, ytr, n_jobs)
                grid_rows.append([name, pair, n_jobs or 1, s_ours, s_ref, s_ref / s_ours,
                                  f"{c_ours:g} / {acc_ours:.3f}", f"{c_ref:g} / {acc_ref:.3f}"])
                print(grid_rows[-1], flush=True)

    heads = ["data", "pair", "jaxprox first fit (s, compile incl.)", "jaxprox fit (s)", "sklearn fit (s)",
             "ratio sklearn/jaxprox"]
    if before:
        heads += [f"before ({before}): jaxprox fit (s)", "before: sklearn fit (s)", "before: ratio"]
    heads += ["jaxprox acc", "sklearn acc", "jaxprox converged (steps)", "sklearn converged",
              "sklearn P(w) / jaxprox P(w) - 1", "sklearn fit run to convergence (s, max_iter x 100)",
              "ratio (converged sklearn)/jaxprox", "sklearn converged then"]
    if before:
        heads += ["before: jaxprox converged (steps)"]
    sections = [("Fits at C = 1 (median of 5 interleaved fits after one warm-up)", harness.markdown_table(heads, fit_table))]
    if not fits_only:
        sections.append(("GridSearchCV, 5 values of C, 3-fold", harness.markdown_table(
            ["data", "pair", "n_jobs", "jaxprox (s)", "sklearn (s)", "ratio sklearn/jaxprox",
             "jaxprox best C / CV acc", "sklearn best C / CV acc"], grid_rows)))
    notes = "\n\n".join(__doc__.split("\n\n")[1:4]).strip()
    path = harness.write_results("sklearn", "scikit-learn estimators: jaxprox vs scikit-learn", sections, notes=notes)
    print(path)


if __name__ == "__main__":
    if "--rows-json" in sys.argv:  # the subprocess of --before: one data set's fit rows as JSON
        print(json.dumps(fit_rows(sys.argv[sys.argv.index("--rows-json") + 1])[0]))
    elif "--cv-only" in sys.argv:
        cv_main()
    else:
        rev = sys.argv[sys.argv.index("--before") + 1] if "--before" in sys.argv else None
        main(before=rev, fits_only="--fits-only" in sys.argv)
        if "--fits-only" not in sys.argv and "--no-cv" not in sys.argv:
            cv_main()
