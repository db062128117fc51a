"""Benchmark harness: run jaxprox solvers and reference solvers on the same problem in one process.

* :func:`time_jax` times a jitted callable: compile time (first call) separately from the median
  of ``repeat`` warm runs, with ``block_until_ready``.
* :func:`time_call` times a plain (reference) callable the same way.
* :func:`reference_optimum` caches a high-accuracy optimum (cvxpy + Clarabel or any callable) under
  ``benchmarks/cache/`` so every solver is measured against one common target.
* :func:`suboptimality` is the common relative suboptimality ``(f - f*) / max(|f*|, tiny)``.
* :func:`time_to_target` reads a trace and returns the first time (or step) where the relative
  suboptimality falls below a target.
* :func:`matvec_bound` measures the time of the matrix-vector products one iteration needs, so
  that time per iteration can be reported against it (how close a solver runs to the
  memory-bandwidth limit of its products).
* :func:`data_file` finds a dataset that is not bundled (the LIBSVM / UCI datasets) under
  ``$JAXPROX_DATA`` (the folders of ``jaxprox.datasets.data_roots``).
* :func:`machine_info` and :func:`write_results` write ``benchmarks/results/<name>.md`` with the
  machine, versions, date and tables of ratios.
"""
from __future__ import annotations

import datetime as _dt
import hashlib
import json
import os
import platform
import statistics
import time
from pathlib import Path

import numpy as np

RESULTS = Path(__file__).resolve().parent / "results"
CACHE = Path(__file__).resolve().parent / "cache"


def _block(x):
    import jax

    return jax.block_until_ready(x)


def time_jax(fn, *args, repeat: int = 5):
    """Return ``(result, compile_seconds, run_seconds)`` for a jitted ``fn``.

    ``compile_seconds`` is the first call minus a warm run (lowering + compilation); ``run_seconds``
    is the median of ``repeat`` warm calls.
    """
    t0 = time.perf_counter()
    out = _block(fn(*args))
    first = time.perf_counter() - t0
    runs = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = _block(fn(*args))
        runs.append(time.perf_counter() - t0)
    run = statistics.median(runs)
    return out, max(first - run, 0.0), run


def time_call(fn, *args, repeat: int = 3, **kw):
    """Median wall time of a plain callable; returns ``(result, seconds)``."""
    runs, out = [], None
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn(*args, **kw)
        runs.append(time.perf_counter() - t0)
    return out, statistics.median(runs)


def reference_optimum(key: str, compute, refresh: bool = False) -> float:
    """Cached optimal value: ``compute()`` is called once per ``key`` and stored as JSON."""
    CACHE.mkdir(parents=True, exist_ok=True)
    path = CACHE / (hashlib.sha1(key.encode()).hexdigest()[:16] + ".json")
    if path.exists() and not refresh:
        return json.loads(path.read_text())["value"]
    val = float(compute())
    path.write_text(json.dumps({"key": key, "value": val}))
    return val


def data_file(rel: str) -> Path:
    """The path of ``rel`` (e.g. ``"mnist/train-images-idx3-ubyte.gz"``) in the first data folder
    that holds it: ``$JAXPROX_DATA``, then the folders ``jaxprox.datasets.data_roots`` lists."""
    import jaxprox as jp

    for root in jp.datasets.data_roots():
        if (root / rel).exists():
            return root / rel
    raise FileNotFoundError(f"{rel}: set JAXPROX_DATA to a folder that holds it")


def suboptimality(f, f_star):
    f = np.asarray(f, dtype=float)
    return (f - f_star) / max(abs(f_star), 1e-300)


def time_to_target(trace_steps, trace_values, f_star, seconds_per_step, target=1e-6):
    """First step where the relative suboptimality is <= target, converted to seconds with
    ``seconds_per_step`` (the measured warm time of the whole run divided by its steps).
    Returns ``(steps, seconds)`` or ``(None, None)`` when the target is never reached."""
    steps = np.asarray(trace_steps)
    vals = np.asarray(trace_values, dtype=float)
    ok = (steps >= 0) & np.isfinite(vals)
    steps, vals = steps[ok], vals[ok]
    hit = np.nonzero(suboptimality(vals, f_star) <= target)[0]
    if len(hit) == 0:
        return None, None
    s = int(steps[hit[0]])
    return s, s * seconds_per_step


def matvec_bound(op, n_mv: int = 1, n_rmv: int = 1, repeat: int = 20):
    """Seconds for ``n_mv`` products ``A w`` and ``n_rmv`` products ``A^T u`` (jitted, warm)."""
    import jax
    import jax.numpy as jnp

    w = jnp.ones(op.shape[1], op.dtype)
    u = jnp.ones(op.shape[0], op.dtype)
    fm = jax.jit(lambda op, w: op.mv(w))
    fr = jax.jit(lambda op, u: op.rmv(u))
    _block(fm(op, w)), _block(fr(op, u))
    tm = statistics.median([_t(fm, op, w) for _ in range(repeat)])
    tr = statistics.median([_t(fr, op, u) for _ in range(repeat)])
    return n_mv * tm + n_rmv * tr


def _t(f, *x):
    t0 = time.perf_counter()
    _block(f(*x))
    return time.perf_counter() - t0


def run_child(code: str, *args, tag: str = "RESULT", env=None, cwd=None, timeout: float = 600.0):
    """Run ``python -c code *args`` in a fresh process (what a user's first call costs, or a
    wall-clock limit a jitted call cannot be interrupted by). Returns ``(records, error)``: the
    JSON objects the child printed on lines ``tag + json``, and ``""`` or why it failed (the last
    line of its stderr, or the time limit)."""
    import subprocess
    import sys

    try:
        r = subprocess.run([sys.executable, "-c", code, *map(str, args)], env=env, cwd=cwd,
                           capture_output=True, text=True, timeout=timeout)
        out, err = r.stdout, "" if r.returncode == 0 else (r.stderr.strip().splitlines() or ["?"])[-1][:160]
    except subprocess.TimeoutExpired as e:
        out = e.stdout.decode() if isinstance(e.stdout, bytes) else (e.stdout or "")
        err = f"did not return within {timeout:g} s"
    return [json.loads(x[len(tag):]) for x in out.splitlines() if x.startswith(tag)], err


def machine_info() -> dict:
    import jax

    cpu = platform.processor() or ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    devs = jax.devices()
    return {
        "date": _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "cpu": cpu,
        "cores": os.cpu_count(),
        "device": f"{devs[0].platform}: {devs[0].device_kind} x{len(devs)}",
        "python": platform.python_version(),
        "jax": jax.__version__,
        "numpy": np.__version__,
    }


def markdown_table(headers, rows) -> str:
    def fmt(v):
        if isinstance(v, float):
            return f"{v:.4g}" if abs(v) >= 1e-3 or v == 0 else f"{v:.3e}"
        return "-" if v is None else str(v)

    out = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    out += ["| " + " | ".join(fmt(v) for v in r) + " |" for r in rows]
    return "\n".join(out)


def write_results(name: str, title: str, sections: list[tuple[str, str]], notes: str = "") -> Path:
    """Write ``benchmarks/results/<name>.md``: machine info, then ``(heading, body)`` sections."""
    RESULTS.mkdir(parents=True, exist_ok=True)
    info = machine_info()
    lines = [f"# {title}", "", "Machine: " + ", ".join(f"{k} {v}" for k, v in info.items()), ""]
    if notes:
        lines += [notes, ""]
    for head, body in sections:
        lines += [f"## {head}", "", body, ""]
    path = RESULTS / f"{name}.md"
    path.write_text("\n".join(lines))
    return path


def loop_ops(jitted, *args) -> dict:
    """What one iteration of the compiled while loops of ``jitted(*args)`` launches: the number of
    HLO instructions of each loop body (``name: count``, largest first), from the optimised module
    (``jitted.lower(*args).compile().as_text()``). On a GPU each instruction that is not fused
    into another is roughly one kernel launch per iteration of its loop, so ``instructions x
    dependent iterations`` estimates the launch-bound cost of a route without a device."""
    import re

    text = jitted.lower(*args).compile().as_text()
    bodies = set(re.findall(r"\bwhile\(.*?body=%?([\w.\-]+)", text))
    counts, current, n = {}, None, 0
    for line in text.splitlines():
        head = re.match(r"^(?:ENTRY\s+)?%?([\w.\-]+)\s.*\{\s*$", line)  # computations start unindented
        if head:
            current, n = head.group(1), 0
            continue
        if line.strip() == "}" and current is not None:
            if current in bodies:
                counts[current] = n
            current = None
            continue
        if current is not None and " = " in line:
            n += 1
    return dict(sorted(counts.items(), key=lambda kv: -kv[1]))
