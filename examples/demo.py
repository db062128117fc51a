"""jaxprox demo: where jaxprox wins, and each paper's headline problem, every jaxprox run timed
against an independent reference solver in the same run (jaxprox compile time shown apart).

Where jaxprox wins:

* (a) batched regularisation paths on a1a: ``jp.solve_path`` with ``jp.ProxNewton`` over 64
  lambdas (lam_max down to lam_max / 1000) for l1-logistic regression, against liblinear looped
  over ``C = 1 / (n lam)``, and for the Lasso, against scikit-learn's ``lasso_path``;
* (b) the l1-DRSVM of Li, Chen and So ("Fast Epigraphical Projection-based Incremental
  Algorithms for Wasserstein Distributionally Robust Support Vector Machine") at scale
  (synthetic, n = 20,000, d = 50, seeded) by the interior-point ``jp.DRSVMBarrier``, against
  cvxpy + Clarabel on the same problem;
* (c) the derivative of a validation loss with respect to lam through a solve (``jax.grad``;
  implicit differentiation), against central finite differences of two liblinear solves, and the
  same derivative at 32 lambdas by one ``jax.jvp`` through ``jp.solve_path``, against 64
  liblinear solves.

Then each paper's headline problem on tiny bundled data, where the compiled C references are
often faster (these rows stay, honestly).

Accuracy is the same for both sides of a row: a path row times each method at the loosest
stopping tolerance of a sweep whose every solution on the path is within 1e-6 relative
suboptimality of the certified optimum (jp.ProxNewton at 1e-12, minus its gap); the sweep's
points are the curves of the picture.

Prints a table (values, relative difference, certificate gap, times, speed-up = reference time /
jaxprox time) and writes ``build/demo.png`` (git-ignored): certified relative suboptimality
against wall-clock time, with every reference drawn. ``JAXPROX_FAST=1`` (the test suite's mode)
shrinks every size.

Run with ``make demo`` (or ``python examples/demo.py [--out build/demo.png]``).
"""
from __future__ import annotations

import os

# One OpenBLAS thread: its idle workers otherwise contend with XLA's on a small machine
# (benchmarks/results/drsvm_ipm.md); liblinear, libsvm and Clarabel do not use BLAS threads. Set
# here for a script run; run() also limits BLAS libraries already loaded by a caller (a test).
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import argparse  # noqa: E402
import functools  # noqa: E402
import platform  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402
from dataclasses import dataclass  # noqa: E402
from typing import Callable  # noqa: E402

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

jax.config.update("jax_enable_x64", True)

import jaxprox as jp  # noqa: E402
from jaxprox import losses, penalties  # noqa: E402

FAST = os.environ.get("JAXPROX_FAST") == "1"
N_LAMS = 64                                              # lambdas per path
N_GRAD = 8 if FAST else 32                               # lambdas of the derivative path
DRSVM_N, DRSVM_D = (2_000, 20) if FAST else (20_000, 50)  # DRSVM at scale (Clarabel ~20 s at 20,000 x 50)
TARGET = 1e-6                                            # relative suboptimality every path point must reach
JP_TOLS = (1e-6,) if FAST else (1e-3, 1e-4, 1e-6, 1e-8)        # jaxprox's relative-gap tolerances
SK_TOLS = (1e-6,) if FAST else (1e-2, 1e-3, 1e-4, 1e-6, 1e-8)  # scikit-learn's stopping tolerances
REPEAT = 1 if FAST else 3                                # least number of timed calls (median)
FLOOR = 1e-16                                            # plotted floor of relative suboptimality


@dataclass
class Case:
    name: str          # the problem
    paper: str         # which paper's headline it stands for
    build: Callable    # () -> (problem, solver)
    reference: Callable  # () -> (objective value, reference label)


def _median_time(call, runs, least):
    """``(out, median seconds)`` over ``runs`` (earlier timings) and further calls: at least
    ``least`` in all, and more while they are quick (up to 7 calls or 0.5 s), so a spike on a
    shared machine does not decide a short timing."""
    out = None
    while len(runs) < least or (not FAST and len(runs) < 7 and sum(runs) < 0.5):
        t0 = time.perf_counter()
        out = call()
        runs.append(time.perf_counter() - t0)
    return out, float(np.median(runs))


def _timed(fn, *args):
    """``(out, compile_s, run_s)`` of a jitted call: the compile time is that of tracing and
    compiling it ahead of time (``fn.lower(*args).compile()``), the run time the median of calls
    of the compiled executable (so a slow solve is not run once more only to time its compile)."""
    t0 = time.perf_counter()
    call = fn.lower(*args).compile()
    compile_s = time.perf_counter() - t0
    out, run = _median_time(lambda: jax.block_until_ready(call(*args)), [], REPEAT)
    return out, compile_s, run


def _ref_timed(fn, quick=0.5):
    """A reference call, timed: once when it takes ``quick`` seconds or more, else the median of
    repeated calls (so a first call's imports and caches do not count against a fast reference)."""
    t0 = time.perf_counter()
    out = fn()
    first = time.perf_counter() - t0
    if first >= quick:
        return out, first
    again, t = _median_time(fn, [first], REPEAT)
    return (out if again is None else again), t


def _quiet(fn):
    """Call ``fn`` with scikit-learn's convergence warnings silenced (their tolerances are set)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fn()


def _trace_on_time(sol, run_s):
    """The run's certificate trace on a time axis: ``t = run_s * step / total steps`` (each step
    costs about the same), ``y = gap / |primal|`` (a certified bound on relative suboptimality)."""
    c = int(sol.trace.count)
    steps = np.asarray(sol.trace.steps[:c], float)
    rel = np.asarray(sol.trace.gap[:c]) / np.abs(np.asarray(sol.trace.primal[:c]))
    ok = np.isfinite(rel) & (steps > 0)
    return run_s * steps[ok] / max(int(sol.steps), 1), np.maximum(rel[ok], FLOOR)


def _row(group, problem, solver, reference, value, ref_value, rel_diff, gap, steps, status, compile_s, time_s,
         ref_time_s, honest=None, series=(), ref_curves=(), panel=None):
    """One table row. ``honest``: whether jaxprox's certified lower bound on the optimum
    (``primal - gap``) lies below the reference's objective (None where the row compares no
    objectives); ``series`` / ``ref_curves``: ``(label, times, relative suboptimality)`` of jaxprox
    and of the reference for the picture's ``panel``."""
    return dict(group=group, problem=problem, solver=solver, reference=reference, value=float(value),
                ref_value=float(ref_value), rel_diff=float(rel_diff), gap=float(gap), steps=int(steps),
                status=status, compile_s=compile_s, time_s=time_s, ref_time_s=ref_time_s,
                ratio=ref_time_s / time_s, honest=honest, series=list(series), ref_curves=list(ref_curves),
                panel=panel)


def _rel_above(f, lower):
    """``(f - lower) / |lower|``: a certified bound on the relative suboptimality of objective ``f``
    given a certified lower bound ``lower`` on the optimum (floored for a log axis)."""
    return np.maximum((np.asarray(f) - lower) / np.abs(lower), FLOOR)


def _honest(f_ref, lower):
    """The certified lower bound(s) lie below the reference's objective(s), up to roundoff."""
    return bool(np.all(np.asarray(lower) <= np.asarray(f_ref) + 1e-12 * np.abs(f_ref)))


@functools.lru_cache(maxsize=None)
def _a1a():
    return jp.datasets.load("a1a")


# ----------------------------------------------------------------------------- (a) paths
def _logistic_objective(X, y, w, lam):
    return float(np.mean(np.logaddexp(0, -y * (X @ w))) + lam * np.abs(w).sum())


def _lasso_objective(X, y, w, lam):
    return float(0.5 * np.mean((X @ w - y) ** 2) + lam * np.abs(w).sum())


def path_row(kind):
    """(a) A path of ``N_LAMS`` lambdas, lam_max down to lam_max / 1000, solved by the warm-started
    ``jp.solve_path`` with ``jp.ProxNewton`` (l1-logistic: float32 model Hessian, float64 gap;
    Lasso: on ``ERM.compressed()``, the d x d sufficient statistics) against liblinear looped over
    ``C = 1 / (n lam)`` (l1-logistic) or scikit-learn's ``lasso_path`` (coordinate descent with
    warm starts). Each side is swept over its stopping tolerances; its time is that of the loosest
    one whose every solution is within ``TARGET`` of the certified optimum."""
    from sklearn.linear_model import LogisticRegression, lasso_path

    X, y = _a1a()
    n = X.shape[0]
    if kind == "lasso":
        y = y - y.mean()  # a regression target: the centred labels (no intercept is fitted)
        loss, objective, scale = losses.Squared(), _lasso_objective, 1.0
    else:
        loss, objective, scale = losses.Logistic(), _logistic_objective, 0.5
    lam_max = float(np.max(np.abs(X.T @ y))) * scale / n  # the smallest lam with w* = 0
    lams = np.logspace(np.log10(lam_max), np.log10(lam_max / 1000), N_LAMS)
    problem = jp.ERM(X, y, loss, penalties.L1(float(lams[0])))
    fast = problem.compressed() if kind == "lasso" else problem
    path = jax.jit(jp.solve_path)
    L = jnp.asarray(lams)

    certified = path(fast, jp.ProxNewton(tol=1e-12, max_steps=1000), L)
    assert bool(jnp.all(certified.converged)), "the certified reference path did not converge"
    lower = np.asarray(certified.primal_value) - np.asarray(certified.gap)  # <= the optimum, per lambda

    def worst(W):
        f = np.array([objective(X, y, np.asarray(w), lam) for w, lam in zip(W, lams)])
        return f, float(np.max((f - lower) / np.abs(lower)))

    hess = dict(hessian_dtype="float32") if kind == "logistic" else {}
    jp_pts, compile_s = [], None
    for tol in JP_TOLS:                       # tol is a traced value: one compilation for the sweep
        sol, c_s, t = _timed(path, fast, jp.ProxNewton(tol=tol, **hess), L)
        compile_s = c_s if compile_s is None else compile_s
        jp_pts.append((tol, t, sol) + worst(np.asarray(sol.params)))

    def reference(tol):
        if kind == "lasso":
            return lasso_path(X, y, alphas=lams, tol=tol, max_iter=1_000_000)[1].T
        return np.array([LogisticRegression(penalty="l1", C=1.0 / (n * lam), solver="liblinear", random_state=0,
                                            fit_intercept=False, tol=tol, max_iter=1_000_000).fit(X, y).coef_.ravel()
                         for lam in lams])

    sk_pts = []
    for tol in SK_TOLS:
        W, t = _ref_timed(lambda: _quiet(lambda: reference(tol)))
        sk_pts.append((tol, t, W) + worst(W))

    def first_on_target(points):  # the loosest tolerance reaching the target (else the tightest)
        return next((p for p in points if p[4] <= TARGET), points[-1])

    _, t_jp, sol, f_jp, _ = first_on_target(jp_pts)
    tol_sk, t_sk, _, f_sk, _ = first_on_target(sk_pts)
    label = ("liblinear loop" if kind == "logistic" else "sklearn lasso_path") + f" (tol {tol_sk:g})"
    name = f"{'l1-logistic' if kind == 'logistic' else 'Lasso'} path, a1a, {N_LAMS} lambdas"
    short = "l1-logistic" if kind == "logistic" else "Lasso"
    return _row("wins", name, "solve_path+ProxNewton", label, f_jp.mean(), f_sk.mean(),
                np.max(np.abs(f_jp - f_sk) / np.abs(f_sk)), np.max(np.asarray(sol.gap)), np.sum(np.asarray(sol.steps)),
                f"{int(np.sum(np.asarray(sol.converged)))}/{N_LAMS} conv.", compile_s, t_jp, t_sk,
                honest=_honest(f_sk, np.asarray(sol.primal_value) - np.asarray(sol.gap)),
                series=[(f"{short}: jaxprox", *_sweep_curve(jp_pts))],
                ref_curves=[(f"{short}: {label.split(' (')[0]}", *_sweep_curve(sk_pts))], panel="paths")


def _sweep_curve(points):
    """A tolerance sweep, loosest first, as a curve: time against the worst relative
    suboptimality on the path."""
    return np.array([p[1] for p in points]), np.maximum([p[4] for p in points], FLOOR)


# ----------------------------------------------------------------------------- (b) DRSVM at scale
def _drsvm_clarabel(Z, epsilon=0.1, tol=1e-10):
    """The l1-DRSVM (kappa = 1, c = 0) in cvxpy, solved by Clarabel: problem (1) of Li, Chen and So
    with ``u = Z w`` an explicit variable so that ``Z`` enters the conic form once; the objective
    is evaluated at the returned point like jaxprox's."""
    import cvxpy as cp

    n, d = Z.shape
    w, lam, u = cp.Variable(d), cp.Variable(), cp.Variable(n)
    h = cp.maximum(cp.maximum(1 - u, 1 + u - lam), 0)
    prob = cp.Problem(cp.Minimize(epsilon * lam + cp.sum(h) / n), [u == Z @ w, cp.norm(w, 1) <= lam])
    prob.solve(solver=cp.CLARABEL, tol_gap_abs=tol, tol_gap_rel=tol, tol_feas=tol)
    m, lv = Z @ w.value, float(lam.value)
    return float(epsilon * lv + np.mean(np.maximum(np.maximum(1 - m, 1 + m - lv), 0)))


def drsvm_large_row():
    """(b) The l1-DRSVM (kappa = 1, eps = 0.1, c = 0) on the paper's synthetic data (§5.1, seeded),
    ``DRSVM_N x DRSVM_D``: ``jp.DRSVMBarrier`` to a certified relative gap of 1e-8 against Clarabel
    at tolerances 1e-8 (one run: it is the slow side)."""
    X, y, _ = jp.datasets.make_drsvm_synthetic(DRSVM_N, DRSVM_D, 0.5, seed=0)
    problem = jp.DRSVM(X, y, norm="l1", kappa=1.0, epsilon=0.1, c=0.0)
    solver = jp.DRSVMBarrier(tol=1e-8)
    sol, compile_s, run_s = _timed(jax.jit(jp.solve), problem, solver)
    f_ref, ref_s = _ref_timed(lambda: _drsvm_clarabel(y[:, None] * X, tol=1e-8))
    f, lower = float(sol.primal_value), float(sol.primal_value - sol.gap)
    return _row("wins", f"l1-DRSVM, synthetic {DRSVM_N:,} x {DRSVM_D}", "DRSVMBarrier", "cvxpy + Clarabel",
                f, f_ref, (f - f_ref) / abs(f_ref), sol.gap, sol.steps, sol.status_name, compile_s, run_s, ref_s,
                honest=_honest(f_ref, lower), series=[("DRSVMBarrier", *_trace_on_time(sol, run_s))],
                ref_curves=[("cvxpy + Clarabel", [ref_s], _rel_above([f_ref], lower))], panel="drsvm")


# ----------------------------------------------------------------------------- (c) gradients
@functools.lru_cache(maxsize=None)
def _tuning_split():
    """l1-logistic regression on a seeded 2/3 of a1a and its validation loss ``V(w)`` (the mean
    logistic loss) on the other third: ``(problem, V in jax, liblinear_V(lam) -> (V, support),
    lam_max)``, lam_max the smallest lam with ``w* = 0``."""
    from sklearn.linear_model import LogisticRegression

    X, y = _a1a()
    idx = np.random.default_rng(0).permutation(X.shape[0])
    tr, va = idx[: 2 * len(idx) // 3], idx[2 * len(idx) // 3:]
    problem = jp.ERM(X[tr], y[tr], losses.Logistic(), penalties.L1(1e-2))
    Xv, yv = jnp.asarray(X[va]), jnp.asarray(y[va])

    def validation_loss(w):
        return jnp.mean(jnp.logaddexp(0, -yv * (Xv @ w)))

    def liblinear_loss(lam):
        m = LogisticRegression(penalty="l1", C=1.0 / (len(tr) * lam), solver="liblinear", random_state=0,
                               fit_intercept=False, tol=1e-10, max_iter=1_000_000)
        w = _quiet(lambda: m.fit(X[tr], y[tr])).coef_.ravel()
        return np.mean(np.logaddexp(0, -y[va] * (X[va] @ w))), tuple(np.flatnonzero(w))

    lam_max = float(np.max(np.abs(X[tr].T @ y[tr]))) / (2 * len(tr))
    return problem, validation_loss, liblinear_loss, lam_max


def _central_difference(liblinear_loss, lam, rel_h=1e-3):
    """``(V(lam + h) - V(lam - h)) / 2h`` with ``h = rel_h lam``, and whether the support of the
    solution changes between the two ends (then the difference straddles a kink of ``V``)."""
    (v_hi, s_hi), (v_lo, s_lo) = liblinear_loss(lam * (1 + rel_h)), liblinear_loss(lam * (1 - rel_h))
    return (v_hi - v_lo) / (2 * rel_h * lam), s_hi != s_lo


def gradient_row(lam=1e-2):
    """(c) ``dV/dlam`` at ``lam``, ``V(lam)`` = the validation loss at the l1-logistic solution
    ``w*(lam)`` (:func:`_tuning_split`): ``jax.grad`` through ``jp.solve`` with ``jp.ProxNewton``
    (implicit differentiation of the optimality conditions: one solve and one linear solve),
    against the central difference of two liblinear solves at tol 1e-10, ``h = 1e-3 lam``."""
    problem, validation_loss, liblinear_loss, _ = _tuning_split()
    solver = jp.ProxNewton(tol=1e-10)

    def V(lam):
        sol = jp.solve(problem.with_lam(lam), solver)
        return validation_loss(sol.params), sol

    ((_, sol), g), compile_s, run_s = _timed(jax.jit(jax.value_and_grad(V, has_aux=True)), lam)
    (fd, kink), ref_s = _ref_timed(lambda: _central_difference(liblinear_loss, lam))
    assert not kink, "the central difference straddles a change of the support"
    return _row("wins", f"dV/dlam, l1-logistic, a1a, lam={lam:g}", "grad of ProxNewton",
                "central diff., 2 liblinear", g, fd, (float(g) - fd) / abs(fd), sol.gap, sol.steps, sol.status_name,
                compile_s, run_s, ref_s)


def gradient_path_row():
    """(c) ``dV/dlam`` at each of ``N_GRAD`` lambdas (lam_max / 3 down to lam_max / 1000, the range
    a search for lam scans): one ``jax.jvp`` through the warm-started ``jp.solve_path`` with a
    tangent of ones (each solution depends on its own lam only), against central differences of
    2 ``N_GRAD`` liblinear solves. Lambdas whose difference straddles a change of the support (a
    kink of ``V``, where the derivative jumps) are left out of the comparison and counted."""
    problem, validation_loss, liblinear_loss, lam_max = _tuning_split()
    lams = np.logspace(np.log10(lam_max / 3), np.log10(lam_max / 1000), N_GRAD)
    solver = jp.ProxNewton(tol=1e-10)

    def V(ls):
        sols = jp.solve_path(problem, solver, ls)
        return jax.vmap(validation_loss)(sols.params), sols

    def derivatives(ls):
        (v, sols), (dv, _) = jax.jvp(V, (ls,), (jnp.ones_like(ls),))
        return dv, sols

    (dv, sols), compile_s, run_s = _timed(jax.jit(derivatives), jnp.asarray(lams))
    fds, ref_s = _ref_timed(lambda: [_central_difference(liblinear_loss, lam) for lam in lams])
    fd = np.array([f for f, _ in fds])
    smooth = ~np.array([k for _, k in fds])
    dv = np.asarray(dv)
    rel = np.abs(dv - fd)[smooth] / np.abs(fd[smooth])
    worst = int(np.flatnonzero(smooth)[np.argmax(rel)])
    return _row("wins", f"dV/dlam at {N_GRAD} lambdas, l1-logistic, a1a", "jvp of solve_path",
                f"central diff., {2 * N_GRAD} liblinear ({N_GRAD - int(smooth.sum())} at kinks left out)",
                dv[worst], fd[worst], (dv[worst] - fd[worst]) / abs(fd[worst]), np.max(np.asarray(sols.gap)),
                np.sum(np.asarray(sols.steps)), f"{int(np.sum(np.asarray(sols.converged)))}/{N_GRAD} conv.",
                compile_s, run_s, ref_s)


# ----------------------------------------------------------------------------- each paper's headline
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
                        tol=0.0, stall_window=0)  # the paper's ISG: all 900 epochs
        return problem, solver

    return Case("l1-DRSVM, a1a, eps=0.1", "DRSVM (interior point)" if interior else "DRSVM (ISG)", build,
                _drsvm_reference)


def _drsvm_reference():
    """Clarabel on the l1-DRSVM of :func:`drsvm_case` (timed in each of its rows)."""
    X, y = _a1a()
    return _drsvm_clarabel(y[:, None] * X), "cvxpy + Clarabel"


def pdprox_case():
    """Paper 000 headline: hinge-loss SVM, lam/2 ||w||^2, vs liblinear (C = 1/(n lam))."""
    X, y = jp.datasets.load("breast-cancer_scale")
    n, lam = X.shape[0], 1e-2

    def build():
        problem = jp.ERM(X, y, losses.Hinge(), penalties.SquaredL2(lam))
        return problem, jp.PDProx("cp", scale=1.4, restart=jp.restarts.FixedRestart(2000), tol=1e-6, max_steps=60_000,
                                  check_every=200)

    def reference():
        from sklearn.svm import LinearSVC

        m = LinearSVC(loss="hinge", C=1.0 / (n * lam), fit_intercept=False, dual=True, tol=1e-12, random_state=0,
                      max_iter=1_000_000)
        m = _quiet(lambda: m.fit(X, y))
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


def paper_row(case):
    """One paper's headline problem: a jitted ``jp.solve`` against the case's reference."""
    problem, solver = case.build()
    sol, compile_s, run_s = _timed(jax.jit(jp.solve), problem, solver)
    (f_ref, ref_label), ref_s = _ref_timed(case.reference)
    f = float(sol.primal_value)
    name = type(solver).__name__
    row = _row("papers", case.name, name, ref_label, f, f_ref, (f - f_ref) / abs(f_ref), sol.gap, sol.steps,
               sol.status_name, compile_s, run_s, ref_s, honest=_honest(f_ref, f - float(sol.gap)),
               series=[(f"{case.name}: {name}", *_trace_on_time(sol, run_s))])
    row["lower"] = f - float(sol.gap)
    return row


def _place_paper_references(rows):
    """Each paper row's reference as a marker at (its time, its certified relative suboptimality),
    the latter against the best certified lower bound on the same problem among the rows; the
    rows are split over two panels."""
    papers = [r for r in rows if r["group"] == "papers"]
    for i, r in enumerate(papers):
        lower = max(q["lower"] for q in papers if q["problem"] == r["problem"])
        r["ref_curves"] = [(f"x {r['reference']}", [r["ref_time_s"]], _rel_above([r["ref_value"]], lower))]
        r["panel"] = "papers1" if i < (len(papers) + 1) // 2 else "papers2"


def run(out: str = "build/demo.png") -> list[dict]:
    from threadpoolctl import threadpool_limits  # a scikit-learn dependency

    with threadpool_limits(limits=1, user_api="blas"):
        return _run(out)


def _run(out):
    t_start = time.perf_counter()
    jobs = [("(a) l1-logistic path", functools.partial(path_row, "logistic")),
            ("(a) Lasso path", functools.partial(path_row, "lasso")),
            ("(b) DRSVM at scale", drsvm_large_row), ("(c) gradient of a solution", gradient_row),
            ("(c) gradients along a path", gradient_path_row)]
    jobs += [(f"{c.name} ({c.paper})", functools.partial(paper_row, c)) for c in (f() for f in CASES)]
    rows = []
    for i, (label, job) in enumerate(jobs, 1):
        print(f"[{i}/{len(jobs)}] {label} ...", flush=True)
        t0 = time.perf_counter()
        r = job()
        rows.append(r)
        print(f"      ({time.perf_counter() - t0:.1f} s) {r['solver']}: {r['value']:.10g} "
              f"(ref {r['ref_value']:.10g})  gap {r['gap']:.1e}  {r['time_s'] * 1e3:.1f} ms "
              f"(+{r['compile_s']:.2f} s compile)  {r['reference']} {r['ref_time_s'] * 1e3:.1f} ms", flush=True)
    _place_paper_references(rows)
    print_table(rows)
    plot(rows, out)
    load = os.getloadavg()
    print(f"demo wall time {time.perf_counter() - t_start:.0f} s; {platform.processor() or platform.machine()}, "
          f"{os.cpu_count()} cores, load average {load[0]:.2f}; jax {jax.__version__}, numpy {np.__version__}"
          + (" (JAXPROX_FAST=1: reduced sizes)" if FAST else ""))
    return rows


def print_table(rows):
    head = ["problem", "jaxprox", "reference", "value", "rel. diff", "gap", "steps", "status", "time ms",
            "ref ms", "speed-up", "compile s"]
    width = [max(len(h), *(len(r) for r in col)) for h, col in zip(head, zip(*(_cells(r) for r in rows)))]
    line = lambda cells: "  ".join(c.ljust(w) for c, w in zip(cells, width))  # noqa: E731
    for group, title in (("wins", "Where jaxprox wins"),
                         ("papers", "Each paper's headline problem on tiny bundled data (the honest rows)")):
        print(f"\n{title}\n")
        print(line(head))
        print(line(["-" * w for w in width]))
        for r in rows:
            if r["group"] == group:
                print(line(_cells(r)))
    print("""
speed-up = reference time / jaxprox time, both in this run (jaxprox compile time excluded, shown
apart; medians of 3 to 7 calls, a reference that takes 0.5 s or more is timed once).
value = the objective; on a path row, its mean over the lambdas, and rel. diff and gap the worst
lambda's (both sides at the loosest tolerance of their sweep that puts every lambda within 1e-6
of the certified optimum); on the gradient rows, dV/dlam against the central difference (along
a path: at the lambda that agrees worst, kinks of V left out).
rel. diff = (jaxprox - reference) / |reference|. gap = jaxprox's certificate, an upper bound on its
suboptimality (ISG's, after the paper's 900 steps without a polish, is loose; the interior-point
DRSVMBarrier certifies the same problem to 1e-9).""")
    if not all(r["honest"] in (None, True) for r in rows):
        print("WARNING: a certified lower bound lies above a reference objective:",
              [r["problem"] for r in rows if r["honest"] is False])


def _cells(r):
    return [r["problem"], r["solver"], r["reference"], f"{r['value']:.8g}", f"{r['rel_diff']:+.1e}", f"{r['gap']:.1e}",
            str(r["steps"]), r["status"], f"{r['time_s'] * 1e3:.1f}", f"{r['ref_time_s'] * 1e3:.1f}",
            f"{r['ratio']:.3g}x", f"{r['compile_s']:.2f}"]


PANELS = {"paths": f"(a) {N_LAMS}-lambda paths, a1a (a point per tolerance)",
          "drsvm": "(b) l1-DRSVM at scale",
          "papers1": "each paper's headline problem (1/2)",
          "papers2": "each paper's headline problem (2/2)"}


def plot(rows, out):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig = plt.figure(figsize=(16, 11))
    grid = fig.add_gridspec(2, 3, width_ratios=[1, 1, 0.9])
    axes = {"paths": fig.add_subplot(grid[0, 0]), "drsvm": fig.add_subplot(grid[0, 1]),
            "papers1": fig.add_subplot(grid[1, 0]), "papers2": fig.add_subplot(grid[1, 1])}
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for key, ax in axes.items():
        seen = set()
        for i, r in enumerate(q for q in rows if q["panel"] == key):
            c = colors[i % len(colors)]
            for label, t, v in r["series"]:
                ax.plot(t, v, "-", color=c, marker="o" if len(t) < 8 else None, ms=4, label=label)
            for label, t, v in r["ref_curves"]:
                ax.plot(t, v, "--" if len(t) > 1 else "none", color=c, marker="x", ms=8, mew=2,
                        label=None if label in seen else label)
                seen.add(label)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_title(PANELS[key] if key != "drsvm" else
                     f"{PANELS[key]}: synthetic n = {DRSVM_N:,}, d = {DRSVM_D}", fontsize=10)
        ax.set_xlabel("wall-clock time (s)")
        ax.set_ylabel("relative suboptimality (certified bound)")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=6.5, ncol=2, loc="upper center", bbox_to_anchor=(0.5, -0.14))
    bars = fig.add_subplot(grid[:, 2])
    labels = [f"{r['problem']} ({r['solver']})" for r in rows]
    ratios = np.array([r["ratio"] for r in rows])
    bars.barh(range(len(rows)), ratios, color=["tab:green" if x >= 1 else "tab:gray" for x in ratios])
    wins = sum(r["group"] == "wins" for r in rows)
    bars.axhline(wins - 0.5, color="k", ls=":", lw=0.8)  # where jaxprox wins | each paper's headline
    for i, x in enumerate(ratios):
        bars.text(x, i, f" {x:.2g}x", va="center", fontsize=8)
    bars.axvline(1.0, color="k", lw=0.8)
    bars.set_xscale("log")
    bars.set_yticks(range(len(rows)), labels, fontsize=8)
    bars.invert_yaxis()
    bars.set_xlabel("reference time / jaxprox time")
    bars.set_title("speed-up per row\n(green: jaxprox faster)", fontsize=10)
    fig.suptitle("jaxprox against its references, same run" + (" (fast mode)" if FAST else ""))
    fig.text(0.01, 0.005, "jaxprox runs: the certified gap / |objective| of the trace, placed on the time axis "
             "at t = solve time x step / total steps (each step costs about the same); paths: one point per "
             "stopping tolerance (the worst lambda against the certified optimum).\nReferences (x): their finish "
             "time and objective minus the best certified lower bound on the optimum (dashed: the same solver "
             "at several tolerances). Compile time excluded; values floored at 1e-16.\nSpeed-ups: above the "
             "dotted line, where jaxprox wins; below it, each paper's headline problem.", fontsize=8, va="bottom")
    fig.tight_layout(rect=(0, 0.06, 1, 0.97))
    os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
    fig.savefig(out, dpi=110)
    plt.close(fig)
    print(f"\nwrote {out}")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default="build/demo.png")
    args = ap.parse_args(argv)
    run(args.out)


if __name__ == "__main__":
    sys.exit(main())
