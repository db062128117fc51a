"""Many lambdas at once on an accelerator (issue "Many lambdas at once on a GPU").

One script, one short call on a GPU machine (about 6 minutes at most; every solver loop is capped
with ``max_steps`` and an overall time budget skips the remaining rows and says so). It runs on
the CPU with the same code path; ``--small`` shrinks the sizes so that the whole script finishes in
about 3 minutes on 2 CPU cores. Each row measures jaxprox against its reference in the same run,
compile time apart from solve time (``harness.time_jax``: first call minus the median warm call),
and names the device.

Rows:
 1. Lasso 1800 x 200 (X ~ N(0,1), 8 nonzeros, noise 0.5, seed 0), 4096 lambdas
    ``lam_max * logspace(0, -3, 4096)``, each from zero, relative gap 1e-8: ``jax.vmap`` of
    ``jp.FISTA`` on ``ERM.compressed()`` (the QR is inside the timed, jitted call), and a lock-step
    variant ``jp.FISTA(max_backtrack=0)`` (one power-iteration Lipschitz estimate for every lane).
    References: scikit-learn ``lasso_path`` (warm, CPU) and a cold ``Lasso`` loop (a subset of the
    lambdas, extrapolated to 4096). Worst suboptimality against ``lasso_path`` at tol 1e-8.
    Published figure to beat: 0.044 s on an RTX 4090 (scm2cpp-learn).
 2. a9a Lasso (--small: a1a), 64 lambdas, tol 1e-6: vmap FISTA on the full (sparse) data and on
    ``ERM.compressed()`` against ``jp.solve_path(..., jp.ProxNewton(), lams)`` on the host CPU and
    scikit-learn ``lasso_path``.
 3. a9a l1-logistic (--small: a1a), 64 lambdas, tol 1e-6: vmap FISTA on the sparse operator, on the
    dense matrix, and lock-step on the dense matrix (``max_backtrack=0``), against a liblinear loop
    (``C = 1 / (n lam)``).
 4. Lasso 50000 x 1000 float32 (--small: 5000 x 200), x64 off (a subprocess with
    ``JAX_ENABLE_X64=0``), 64 lambdas, relative gap 1e-5: how many lambdas reach the gap within the cap.
 5. DRSVM (q = l1, c = 0) on a9a (--small: a1a), ``jax.vmap`` over 32 radii, tol 1e-6:
    ``jp.DRSVMPDHG`` against ``jp.DRSVMBarrier``.
 6. ``jp.DualAPPA`` on logistic + SquaredL2(1e-3), heart_scale: the default (``batch="auto"``: mini-batch
    SDCA epochs on an accelerator) and the forced mini-batch on this device, against the sequential
    run on the host CPU.
 7. ``jax.grad`` of a validation loss w.r.t. lam through a FISTA l1-logistic solve (a9a;
    --small: a1a): grad time / solve time.
When the device is not the CPU, the jaxprox runs of rows 1-3 are repeated under
``jax.default_device(jax.devices("cpu")[0])`` and the device/CPU ratios reported.

    python benchmarks/perf/bench_gpu.py [--small] [--budget SECONDS] [--rows 1,2,...] [--out gpu]
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
import warnings
from pathlib import Path

CHILD = "--row4-child" in sys.argv
import jax  # noqa: E402

if not CHILD:  # row 4 runs in a child process with JAX_ENABLE_X64=0
    jax.config.update("jax_enable_x64", True)
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

sys.path[:0] = [str(Path(__file__).resolve().parent), str(Path(__file__).resolve().parents[1])]  # this group, harness
import harness  # noqa: E402

import jaxprox as jp  # noqa: E402
from jaxprox import losses, penalties  # noqa: E402

RTX4090_S = 0.044  # scm2cpp-learn's published time for the 4096-lambda protocol
CPU = jax.devices("cpu")[0]


def dev_name(dev=None):
    dev = dev or jax.devices()[0]
    return f"{dev.platform}:{dev.device_kind}"


class Budget:
    """Overall wall-clock budget: ``ok(what)`` is False (and records the skip) once it is spent."""

    def __init__(self, seconds):
        self.t0, self.seconds, self.skipped = time.perf_counter(), seconds, []

    def left(self):
        return self.seconds - (time.perf_counter() - self.t0)

    def ok(self, what):
        if self.left() > 0:
            return True
        self.skipped.append(what)
        print(f"[budget] skipped: {what}", flush=True)
        return False


# --------------------------------------------------------------------------- helpers
def lasso_synth(n, d, k=8, noise=0.5, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    w = np.zeros(d)
    w[rng.choice(d, k, replace=False)] = rng.standard_normal(k)
    return X, X @ w + noise * rng.standard_normal(n)


def objectives(kind, X, y, W, lams):
    """Objective of every row of ``W`` (float64, numpy): (1/2n)||Xw - y||^2 or the mean logistic
    loss, plus lam ||w||_1."""
    W = np.asarray(W, float)
    Z = np.asarray(X @ W.T)  # n x m
    if kind == "lasso":
        risk = 0.5 * np.mean((Z - y[:, None]) ** 2, axis=0)
    else:
        risk = np.mean(np.logaddexp(0, -y[:, None] * Z), axis=0)
    return risk + np.asarray(lams) * np.abs(W).sum(axis=1)


def rel(f, f_ref):
    return float(np.max((f - f_ref) / np.abs(f_ref)))


def sk_lasso_path(X, y, lams, tol):
    from sklearn.linear_model import lasso_path  # imported (untimed) by main() before any row runs

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return lasso_path(X, y, alphas=lams, tol=tol, max_iter=100_000)[1].T


def vmap_solver(problem_fn, solver):
    """``jax.jit`` of ``jax.vmap`` over lambdas of ``jp.solve(problem_fn(data).with_lam(lam), solver)``;
    the problem is an argument (not a closure constant), built inside the call by ``problem_fn``."""
    def run(data, lams):
        pr = problem_fn(data)
        sol = jax.vmap(lambda l: jp.solve(pr.with_lam(l), solver))(lams)
        return sol.params, sol.converged, sol.steps, sol.gap
    return jax.jit(run)


def time_on(dev, fn, args, repeat):
    """``harness.time_jax`` with the arguments put on ``dev`` and ``dev`` the default device."""
    if dev.platform == "cpu" and jax.devices()[0].platform != "cpu":
        repeat = 1  # the host-CPU comparison runs on an accelerator machine: one warm call
    with jax.default_device(dev):
        args = jax.device_put(args, dev)
        out, comp, run = harness.time_jax(fn, *args, repeat=repeat)
    return jax.device_get(out), comp, run


def cap_on(cfg, dev, cap):
    """The step cap of a run: ``cap``, or ``cfg.cpu_cap`` for the host-CPU comparison runs made
    when the main device is an accelerator (their ratio is then per step)."""
    return min(cap, cfg.cpu_cap) if (dev.platform == "cpu" and jax.devices()[0].platform != "cpu") else cap


def keep_best(best, key, run, steps):
    """Fastest run per device platform, with its seconds per step (lock-step lanes: max steps)."""
    if run < best.get(key, (np.inf, 0))[0]:
        best[key] = (run, run / max(steps, 1))


# --------------------------------------------------------------------------- row 1
def row1(cfg, budget, devs):
    n, d, m = 1800, 200, cfg.lams1
    X, y = lasso_synth(n, d)
    lam_max = float(np.max(np.abs(X.T @ y)) / n)
    lams = lam_max * np.logspace(0, -3, m)
    rows, notes = [], []
    t0 = time.perf_counter()
    W_sk = sk_lasso_path(X, y, lams, 1e-8)
    t_path = time.perf_counter() - t0
    f_sk = objectives("lasso", X, y, W_sk, lams)
    base = lambda data: jp.ERM(data[0], data[1], losses.Squared(), penalties.L1(lam_max)).compressed()  # noqa: E731
    variants = [("vmap FISTA on compressed()", lambda cap: jp.FISTA(tol=1e-8, max_steps=cap, check_every=10)),
                ("vmap FISTA(max_backtrack=0), lock-step",
                 lambda cap: jp.FISTA(tol=1e-8, max_steps=cap, check_every=10, max_backtrack=0))]
    best = {}
    for label, mk in variants:
        for dev in devs:
            if not budget.ok(f"row 1 {label} on {dev_name(dev)}"):
                continue
            fn = vmap_solver(base, mk(cap_on(cfg, dev, cfg.cap1)))
            (W, conv, steps, _), comp, run = time_on(dev, fn, ((jnp.asarray(X), jnp.asarray(y)), jnp.asarray(lams)),
                                                     cfg.repeat)
            f = objectives("lasso", X, y, W, lams)
            with jax.default_device(dev):
                ops = harness.loop_ops(fn, (jnp.asarray(X), jnp.asarray(y)), jnp.asarray(lams))
            rows.append([label, dev_name(dev), m, f"{int(np.sum(conv))}/{m}", int(np.max(steps)),
                         " / ".join(str(v) for v in ops.values()), run, comp,
                         rel(f, f_sk), t_path / run, RTX4090_S / run])
            keep_best(best, dev.platform, run, int(np.max(steps)))
            print(rows[-1], flush=True)
    rows.append(["scikit-learn lasso_path (warm), tol 1e-8", "host cpu (numpy)", m, "-", "-", "-", t_path, 0.0, 0.0,
                 1.0, RTX4090_S / t_path])
    if budget.ok("row 1 scikit-learn Lasso loop"):
        from sklearn.linear_model import Lasso

        k = min(m, cfg.loop1)
        idx = np.unique(np.linspace(0, m - 1, k).astype(int))
        t0 = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            W_loop = np.array([Lasso(alpha=lams[i], fit_intercept=False, tol=1e-8, max_iter=100_000).fit(X, y).coef_
                               for i in idx])
        t_loop = (time.perf_counter() - t0) * m / len(idx)
        rows.append([f"scikit-learn Lasso loop, cold, tol 1e-8 ({len(idx)} of {m} lambdas, x{m / len(idx):.0f})",
                     "host cpu", m, "-", "-", "-", t_loop, 0.0, rel(objectives("lasso", X, y, W_loop, lams[idx]), f_sk[idx]),
                     t_path / t_loop, RTX4090_S / t_loop])
        if len(idx) < m:
            notes.append(f"- row 1: the Lasso loop ran {len(idx)} evenly spaced lambdas of {m}; its time is "
                         f"extrapolated (x{m / len(idx):.1f}).")
    notes.append(f"- row 1: lam_max = {lam_max:.4g}; sklearn lasso_path alpha = our lam for (1/2n)||Xw - y||^2 + "
                 "lam ||w||_1; suboptimality (f - f_sklearn) / |f_sklearn|, worst over the lambdas (negative: "
                 "better than lasso_path at tol 1e-8).")
    notes.append("- row 1: max steps (lane) is the number of dependent iterations of the lock-step loop; "
                 "instructions per iteration are those of each compiled while-loop body (block / step / "
                 "backtracking, `harness.loop_ops`): on a GPU, roughly the kernel launches of one iteration.")
    head = ["method", "device", "lambdas", "converged", "max steps (lane)", "instructions per iteration (loop bodies)",
            "solve s", "compile s",
            "worst rel. subopt. vs lasso_path", "speed-up vs lasso_path", "0.044 s / this (RTX 4090 figure)"]
    return head, rows, notes, best


# --------------------------------------------------------------------------- rows 2 and 3
def row2(cfg, budget, devs):
    name = cfg.data
    Xs, y = jp.datasets.load(name, dense=False)
    import scipy.sparse as sp

    Xs = sp.csr_matrix(Xs)
    X = Xs.toarray()
    y = y - y.mean()
    n = len(y)
    lam_max = float(np.max(np.abs(X.T @ y)) / n)
    lams = lam_max * np.logspace(0, -3, 64)
    rows, Ws, best = [], {}, {}
    sv = lambda cap: jp.FISTA(tol=1e-6, max_steps=cap, check_every=20, decrease=0.9)  # noqa: E731
    full = lambda data: jp.ERM(data[0], data[1], losses.Squared(), penalties.L1(lam_max))  # noqa: E731
    comp = lambda data: full(data).compressed()  # noqa: E731
    for label, mk, sparse, cap in (("vmap FISTA, full data (sparse operator)", full, True, cfg.cap2_full),
                                   ("vmap FISTA, compressed()", comp, False, cfg.cap2)):
        for dev in devs:
            if not budget.ok(f"row 2 {label} on {dev_name(dev)}"):
                continue
            fn = vmap_solver(mk, sv(cap_on(cfg, dev, cap)))
            with jax.default_device(dev):
                A = jp.operators.sparse(Xs) if sparse else jnp.asarray(X)
            (W, conv, steps, _), c, r = time_on(dev, fn, ((A, jnp.asarray(y)), jnp.asarray(lams)), cfg.repeat)
            Ws[(label, dev.platform)] = W
            rows.append([label, dev_name(dev), f"{int(np.sum(conv))}/64", int(np.max(steps)), r, c])
            keep_best(best, dev.platform, r, int(np.max(steps)))
            print(rows[-1], flush=True)
    if budget.ok("row 2 ProxNewton path on the host CPU"):
        pn = jax.jit(lambda data, L: (lambda s: (s.params, s.converged, s.steps, s.gap))(
            jp.solve_path(jp.ERM(data[0], data[1], losses.Squared(), penalties.L1(lam_max)).compressed(),
                          jp.ProxNewton(tol=1e-6), L)))
        (W, conv, steps, _), c, r = time_on(CPU, pn, ((jnp.asarray(X), jnp.asarray(y)), jnp.asarray(lams)),
                                            cfg.repeat)
        Ws[("pn", "cpu")] = W
        rows.append(["jp.solve_path, jp.ProxNewton() on compressed() (warm scan)", "host cpu",
                     f"{int(np.sum(conv))}/64", int(np.max(steps)), r, c])
        best["cpu-best"] = (r, None)
    t0 = time.perf_counter()
    Ws[("sk", "cpu")] = sk_lasso_path(X, y, lams, 1e-6)
    t_sk = time.perf_counter() - t0
    rows.append(["scikit-learn lasso_path (warm), tol 1e-6", "host cpu (numpy)", "-", "-", t_sk, 0.0])
    if t_sk < best.get("cpu-best", (np.inf,))[0]:
        best["cpu-best"] = (t_sk, None)
    return _finish_path(rows, Ws, "lasso", X, y, lams, best, t_sk)


def _finish_path(rows, Ws, kind, X, y, lams, best, t_ref):
    """Suboptimality of every method against the best objective any method reached, per lambda."""
    keys = list(Ws)
    F = {k: objectives(kind, X, y, Ws[k], lams) for k in keys}
    f_ref = np.min(np.stack([F[k] for k in keys]), axis=0)
    for r, k in zip(rows, keys):
        r += [rel(F[k], f_ref), t_ref / r[4]]
    return rows, best


def row3(cfg, budget, devs):
    name = cfg.data
    Xs, y = jp.datasets.load(name, dense=False)
    import scipy.sparse as sp

    Xs = sp.csr_matrix(Xs)
    n = len(y)
    lam_max = float(np.max(np.abs(Xs.T @ y)) / (2 * n))
    lams = lam_max * np.logspace(0, -3, 64)
    rows, Ws, best = [], {}, {}
    # the sparse operator (gathers and segment sums), and the same data as a dense matrix (one
    # batched matrix product per step: a9a is 32561 x 123, 32 MB in float64)
    # (the backtracking runs let L decrease by 0.9 before each search; the lock-step run keeps the
    # hoisted bound, which a decrease without the search would shrink every step)
    variants = (("vmap FISTA (sparse operator)", lambda: jp.operators.sparse(Xs), {"decrease": 0.9}),
                ("vmap FISTA (dense data)", lambda: jnp.asarray(Xs.toarray()), {"decrease": 0.9}),
                ("vmap FISTA(max_backtrack=0) (dense data), lock-step", lambda: jnp.asarray(Xs.toarray()),
                 {"max_backtrack": 0}))
    for label, make_A, extra in variants:
        for dev in devs:
            if not budget.ok(f"row 3 {label} on {dev_name(dev)}"):
                continue
            sv = jp.FISTA(tol=1e-6, max_steps=cap_on(cfg, dev, cfg.cap3), check_every=20, **extra)
            fn = vmap_solver(lambda data: jp.ERM(data[0], data[1], losses.Logistic(), penalties.L1(lam_max)), sv)
            with jax.default_device(dev):
                A = make_A()
            (W, conv, steps, _), c, r = time_on(dev, fn, ((A, jnp.asarray(y)), jnp.asarray(lams)), cfg.repeat)
            Ws[(label, dev.platform)] = W
            rows.append([label, dev_name(dev), f"{int(np.sum(conv))}/64", int(np.max(steps)), r, c])
            keep_best(best, dev.platform, r, int(np.max(steps)))
            print(rows[-1], flush=True)
    from sklearn.linear_model import LogisticRegression

    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        W = [LogisticRegression(penalty="l1", solver="liblinear", C=1.0 / (n * lam), fit_intercept=False, tol=1e-6,
                                max_iter=1000, random_state=0).fit(Xs, y).coef_.ravel() for lam in lams]
    t_ll = time.perf_counter() - t0
    Ws[("liblinear", "cpu")] = np.array(W)
    rows.append(["liblinear loop, tol 1e-6 (its own criterion)", "host cpu (numpy)", "-", "-", t_ll, 0.0])
    return _finish_path(rows, Ws, "logistic", Xs, y, lams, best, t_ll)


# --------------------------------------------------------------------------- row 4 (child process)
def row4_child(small):
    n, d = (5000, 200) if small else (50000, 1000)
    cap = 2000 if small else 5000
    X, y = lasso_synth(n, d)
    X, y = X.astype(np.float32), y.astype(np.float32)
    lam_max = float(np.max(np.abs(X.T @ y)) / n)
    lams = (lam_max * np.logspace(0, -3, 64)).astype(np.float32)
    out = []
    for label, compress in (("vmap FISTA, full data", False), ("vmap FISTA, compressed()", True)):
        sv = jp.FISTA(tol=1e-5, max_steps=cap, check_every=10)

        def mk(data, compress=compress):
            pr = jp.ERM(data[0], data[1], losses.Squared(), penalties.L1(lam_max))
            return pr.compressed() if compress else pr
        fn = vmap_solver(mk, sv)
        (W, conv, steps, gap), c, r = time_on(jax.devices()[0], fn, ((jnp.asarray(X), jnp.asarray(y)),
                                                                     jnp.asarray(lams)), 1)
        f64 = objectives("lasso", X.astype(float), y.astype(float), np.asarray(W, float), lams.astype(float))
        out.append(dict(label=label, n=n, d=d, dtype=str(W.dtype), x64=bool(jax.config.jax_enable_x64),
                        device=dev_name(), converged=int(np.sum(conv)), steps=int(np.max(steps)), cap=cap,
                        run=r, compile=c, gap_max=float(np.max(np.asarray(gap) / np.maximum(1e-30, f64)))))
    print("ROW4JSON " + json.dumps(out), flush=True)


def row4(cfg, budget):
    # the parent process already holds JAX's preallocated share of an accelerator's memory
    env = dict(os.environ, JAX_ENABLE_X64="0", XLA_PYTHON_CLIENT_PREALLOCATE="false")
    cmd = [sys.executable, str(Path(__file__).resolve()), "--row4-child"] + (["--small"] if cfg.small else [])
    try:
        p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=max(30.0, budget.left() + 60))
    except subprocess.TimeoutExpired:
        return None, "row 4: the child process ran past the budget and was stopped"
    line = [ln for ln in p.stdout.splitlines() if ln.startswith("ROW4JSON ")]
    if p.returncode != 0 or not line:
        return None, f"row 4: child failed (rc {p.returncode}): {p.stderr[-1500:]}"
    return json.loads(line[-1][9:]), None


# --------------------------------------------------------------------------- rows 5-7
def row5(cfg, budget):
    X, y = jp.datasets.load(cfg.data, dense=False)
    eps = jnp.linspace(0.01, 0.3, 32)
    rows = []
    for label, sv in (("DRSVMPDHG(tol=1e-6)", jp.DRSVMPDHG(tol=1e-6, max_steps=cfg.cap5, check_every=64)),
                      ("DRSVMBarrier(tol=1e-6)", jp.DRSVMBarrier(tol=1e-6, max_steps=100))):
        if not budget.ok(f"row 5 {label}"):
            continue
        pr = jp.DRSVM(X, y, norm="l1", c=0.0)
        fn = jax.jit(lambda pr, e, sv=sv: (lambda s: (s.primal_value, s.converged, s.steps))(
            jax.vmap(lambda ei: jp.solve(pr.with_epsilon(ei), sv))(e)))
        (f, conv, steps), c, r = harness.time_jax(fn, pr, eps, repeat=cfg.repeat)
        rows.append([label, dev_name(), 32, f"{int(np.sum(conv))}/32", int(np.max(steps)), r, c, np.asarray(f)])
        print(rows[-1][:-1], flush=True)
    if len(rows) == 2:
        d = float(np.max(np.abs(rows[0][-1] - rows[1][-1]) / np.abs(rows[1][-1])))
        for r in rows:
            r[-1] = d
    else:
        for r in rows:
            r[-1] = None
    return rows


def row6(cfg, budget):
    """DualAPPA with its default ``batch="auto"`` on this device (mini-batch SDCA epochs when the data
    live on an accelerator, sequential on a CPU), with the mini-batch forced (``auto_batch_size`` of
    the data), and the sequential run (``batch=1``) on the host CPU as the reference. ``jp.solve``
    is called outside a user ``jit`` (it compiles itself) so that ``"auto"`` sees the data's device."""
    from jaxprox.components.minibatch import auto_batch_size, row_normalised_sigma

    X, y = jp.datasets.load("heart_scale", dense=True)
    dev = jax.devices()[0]
    cases = [("DualAPPA() (batch='auto')", "auto", dev), ("DualAPPA(batch=b) forced mini-batch", None, dev)]
    if dev.platform != "cpu":  # on a CPU the default run is the sequential one
        cases.append(("DualAPPA(batch=1) sequential, host CPU reference", 1, CPU))
    rows = []
    for label, batch, d in cases:
        if not budget.ok(f"row 6 {label} on {dev_name(d)}"):
            continue
        with jax.default_device(d):
            pr = jp.ERM(jax.device_put(jnp.asarray(X), d), jax.device_put(jnp.asarray(y), d),
                        losses.Logistic(), penalties.SquaredL2(1e-3))
            if batch is None:
                batch = auto_batch_size(pr.n, float(row_normalised_sigma(pr.A)))
            sv = jp.DualAPPA(tol=1e-6, max_steps=400, batch=batch)
            b = sv.prepare(pr).batch
            fn = lambda pr, sv=sv: (lambda s: (s.primal_value, s.converged, s.steps))(jp.solve(pr, sv))  # noqa: E731
            (f, conv, steps), c, r = harness.time_jax(fn, pr, repeat=max(cfg.repeat, 3))
        rows.append([f"{label}, logistic + SquaredL2(1e-3), heart_scale", dev_name(d), b, bool(conv), int(steps),
                     float(f), r, c])
        print(rows[-1], flush=True)
    return rows


def row7(cfg, budget):
    X, y = jp.datasets.load(cfg.data, dense=True)
    X, y = np.asarray(X, float), np.asarray(y, float)
    m = int(0.8 * len(y))
    Xt, yt, Xv, yv = X[:m], y[:m], jnp.asarray(X[m:]), jnp.asarray(y[m:])
    sv = jp.FISTA(tol=1e-7, max_steps=cfg.cap7, check_every=20)
    base = jp.ERM(Xt, yt, losses.Logistic(), penalties.L1(1e-3))

    def val(lam, base):
        w = jp.solve(base.with_lam(lam), sv).params
        return jnp.mean(jax.nn.softplus(-yv * (Xv @ w)))

    steps = int(jax.jit(lambda b: jp.solve(b, sv).steps)(base))
    _, cf, tf = harness.time_jax(jax.jit(val), 1e-3, base, repeat=max(cfg.repeat, 3))
    g, cg, tg = harness.time_jax(jax.jit(jax.grad(val)), 1e-3, base, repeat=max(cfg.repeat, 3))
    return [["FISTA l1-logistic, lam 1e-3, 80/20 split", dev_name(), steps, tf, tg, tg / tf, cf, cg, float(g)]]


# --------------------------------------------------------------------------- main
def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--small", action="store_true", help="CPU-sized: a1a, 5000 x 200, fewer loop fits")
    ap.add_argument("--budget", type=float, default=None, help="overall seconds (default 330; --small 200)")
    ap.add_argument("--rows", default="1,2,3,4,5,6,7")
    ap.add_argument("--repeat", type=int, default=None, help="warm runs per timing (default 3; --small 1)")
    ap.add_argument("--lams1", type=int, default=None, help="lambdas of row 1 (the protocol: 4096; --small 1024)")
    ap.add_argument("--cpu-cap", type=int, default=200,
                    help="step cap of the host-CPU comparison runs on an accelerator machine (ratio per step)")
    ap.add_argument("--out", default="gpu")
    ap.add_argument("--row4-child", action="store_true", help=argparse.SUPPRESS)
    cfg = ap.parse_args()
    if cfg.row4_child:
        return row4_child(cfg.small)
    cfg.budget = cfg.budget or (200.0 if cfg.small else 330.0)
    cfg.repeat = cfg.repeat or (1 if cfg.small else 3)
    cfg.data = "a1a" if cfg.small else "a9a"
    if cfg.lams1 is None:
        cfg.lams1 = 1024 if cfg.small else 4096
    cfg.loop1 = 32 if cfg.small else 512          # cold scikit-learn Lasso fits actually run in row 1
    # step caps; --small caps the slow CPU full-data runs of rows 2-3 (their converged count says so)
    cfg.cap1, cfg.cap2, cfg.cap5, cfg.cap7 = 5000, 20_000, 20_000, 50_000
    cfg.cap2_full, cfg.cap3 = (500, 600) if cfg.small else (20_000, 20_000)
    want = set(cfg.rows.split(","))
    import sklearn.linear_model  # noqa: F401  (its first import, ~1.6 s, must not count in a reference's time)

    budget = Budget(cfg.budget)
    dev = jax.devices()[0]
    devs = [dev] + ([CPU] if dev.platform != "cpu" else [])
    on_cpu = dev.platform == "cpu"
    sections, summary, notes = [], [], []
    timings = {}

    def guarded(key, fn, *a):
        t0 = time.perf_counter()
        if key not in want or not budget.ok(f"row {key}"):
            return None
        try:
            return fn(*a)
        except Exception as e:  # record the crash, go on with the next row
            import traceback

            tb = traceback.format_exc()
            print(tb, flush=True)
            notes.append(f"- row {key} CRASHED: {type(e).__name__}: {str(e)[:400]}")
            return None
        finally:
            timings[key] = time.perf_counter() - t0

    def gpu_cpu(key, best):
        """Device / host-CPU ratio of the same jaxprox code (per step: the CPU runs may be capped)."""
        if on_cpu or dev.platform not in best or "cpu" not in best:
            return
        (tg, sg), (tc, sc) = best[dev.platform], best["cpu"]
        summary.append([key, "same jaxprox code on the host CPU (fastest variant)", "device faster",
                        f"{tg:.4g} s vs {tc:.4g} s", f"device/CPU time per step {sg / sc:.3g}"])

    r = guarded("1", row1, cfg, budget, devs)
    if r:
        head, rows, n1, best = r
        notes += n1
        sections.append((f"1. Lasso 1800 x 200, {cfg.lams1} lambdas from zero, relative gap 1e-8",
                         harness.markdown_table(head, rows)))
        t = best.get(dev.platform, (None,))[0]
        summary.append(["1", f"{cfg.lams1}-lambda Lasso protocol", "<= 0.044 s (RTX 4090, scm2cpp-learn)",
                        None if t is None else f"{t:.4g} s",
                        None if t is None else f"0.044 s / ours = {RTX4090_S / t:.3g}"])
        gpu_cpu("1", best)
    head23 = ["method", "device", "converged", "max steps", "path s", "compile s", "worst rel. subopt. vs best",
              "speed-up vs reference (last row)"]
    r = guarded("2", row2, cfg, budget, devs)
    if r:
        rows, best = r
        sections.append((f"2. {cfg.data} Lasso, 64 lambdas, tol 1e-6", harness.markdown_table(head23, rows)))
        t, cb = best.get(dev.platform, (None,))[0], best.get("cpu-best", (None,))[0]
        summary.append(["2", f"{cfg.data} Lasso path, fastest vmap FISTA vs best CPU method (ProxNewton path or "
                        "lasso_path)", "device faster than best CPU",
                        None if t is None else f"{t:.4g} s vs {cb:.4g} s",
                        None if t is None else f"best CPU s / ours = {cb / t:.3g}"])
        gpu_cpu("2", best)
    r = guarded("3", row3, cfg, budget, devs)
    if r:
        rows, best = r
        sections.append((f"3. {cfg.data} l1-logistic, 64 lambdas, tol 1e-6", harness.markdown_table(head23, rows)))
        t = best.get(dev.platform, (None,))[0]
        summary.append(["3", f"{cfg.data} l1-logistic vs liblinear loop", ">= 35x",
                        None if t is None else f"{t:.4g} s vs {rows[-1][4]:.4g} s",
                        None if t is None else f"liblinear s / ours = {rows[-1][4] / t:.3g}"])
        gpu_cpu("3", best)
    r = guarded("4", row4, cfg, budget)
    if r:
        res, err = r
        if err:
            notes.append("- " + err)
        else:
            head = ["method", "n x d", "dtype (x64)", "device", "converged (gap 1e-5)", "max steps / cap", "solve s",
                    "compile s", "max gap / f (float64 f)"]
            rows = [[o["label"], f"{o['n']} x {o['d']}", f"{o['dtype']} ({o['x64']})", o["device"],
                     f"{o['converged']}/64", f"{o['steps']}/{o['cap']}", o["run"], o["compile"], o["gap_max"]]
                    for o in res]
            sections.append(("4. float32 Lasso, 64 lambdas, relative gap 1e-5 (JAX_ENABLE_X64=0 subprocess)",
                             harness.markdown_table(head, rows)))
            summary.append(["4", f"float32 Lasso {res[0]['n']} x {res[0]['d']}", "64/64 to 1e-5",
                            ", ".join(f"{o['converged']}/64" for o in res), "full, compressed"])
    r = guarded("5", row5, cfg, budget)
    if r:
        head = ["solver", "device", "radii", "converged", "max steps", "solve s", "compile s",
                "max rel. objective diff PDHG vs Barrier"]
        sections.append((f"5. DRSVM (l1, c = 0) on {cfg.data}, vmap over 32 radii, tol 1e-6",
                         harness.markdown_table(head, r)))
        t = min(x[5] for x in r)
        summary.append(["5", "DRSVM 32 radii (best solver)", "<= 0.1 s", f"{t:.4g} s", ""])
    r = guarded("6", row6, cfg, budget)
    if r:
        head = ["case", "device", "batch (resolved)", "converged", "stages", "objective", "solve s", "compile s"]
        sections.append(("6. DualAPPA on heart_scale, this device (default and forced mini-batch) vs the host "
                         "CPU (sequential)", harness.markdown_table(head, r)))
        if on_cpu:
            summary.append(["6", "DualAPPA device/CPU", "device not slower", f"{r[0][6]:.4g} s",
                            "ratio 1 (the device IS the CPU)"])
        elif len(r) == 3:
            summary.append(["6", "DualAPPA default on the device vs sequential on the host CPU", "device not slower",
                            f"{r[0][6]:.4g} s vs {r[2][6]:.4g} s", f"device/CPU {r[0][6] / r[2][6]:.3g}"])
    r = guarded("7", row7, cfg, budget)
    if r:
        head = ["case", "device", "steps", "solve s", "grad s", "grad / solve", "compile solve s", "compile grad s",
                "d val / d lam"]
        sections.append((f"7. Gradient through a FISTA l1-logistic solve ({cfg.data})", harness.markdown_table(head, r)))
        summary.append(["7", "grad / solve", "<= 2", f"{r[0][5]:.3g}", ""])
    total = time.perf_counter() - budget.t0
    if cfg.small:
        notes.append(f"- --small: row 1 runs {cfg.lams1} lambdas (the protocol: 4096) and {cfg.loop1} cold Lasso fits; "
                     f"the full-data vmap FISTA runs of rows 2 and 3 are capped at {cfg.cap2_full} and {cfg.cap3} "
                     "steps (the converged column says how many lambdas finished; their time is a lower bound).")
    if not on_cpu:
        notes.append(f"- host-CPU comparison runs are capped at {cfg.cpu_cap} steps and timed on one warm call: "
                     "device/CPU ratios are per step.")
    notes.append(f"- timings: median of {cfg.repeat} warm call(s); 'compile s' = first call minus that median, "
                 "clipped at 0 (0 means the warm call was slower than the first: the machine was shared). "
                 "'worst rel. subopt. vs best' in rows 2-3 is against the lowest objective any method reached.")
    if budget.skipped:
        notes.append("- SKIPPED (overall budget of %.0f s spent): %s" % (cfg.budget, "; ".join(budget.skipped)))
    load = os.getloadavg()
    notes.append("- wall time per row (s): " + ", ".join(f"{k}: {v:.0f}" for k, v in timings.items())
                 + f"; total {total:.0f} s; load average at the end {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")
    head = ["row", "case", "target", "measured", "ratio"]
    sections.insert(0, ("Summary", harness.markdown_table(head, summary)))
    sections.append(("Notes", "\n".join(notes)))
    kind = ("**CPU fallback with --small sizes** (no GPU lent to this run): the same code path as on a GPU, "
            "smaller data (a1a for a9a, 5000 x 200 for row 4). " if cfg.small and on_cpu else
            "**CPU run** (no accelerator found). " if on_cpu else "")
    head_note = (f"{kind}Device: `{dev_name()}` (jax.devices()[0]). Command: "
                 f"`python benchmarks/perf/bench_gpu.py {' '.join(sys.argv[1:])}`.\n\n" + __doc__.split("\n\n")[1])
    print(harness.write_results(cfg.out, "Many lambdas at once on an accelerator", sections, head_note))
    print(f"total {total:.0f} s")


if __name__ == "__main__":
    main()
