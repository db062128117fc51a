"""A progress display for long solves and paths, in a terminal or a notebook.

``jp.solve(problem, jp.FISTA(progress=True))`` shows a bar of steps against ``max_steps`` with the
certified relative gap and its target; ``jp.solve_path(problem, solver.with_options(progress=True),
lams)`` shows a bar of the lambdas solved. The compiled loop reports at its checks through
``jax.debug.callback`` (so it also works inside ``jax.jit``); with ``progress=False`` (the default)
nothing is compiled in and nothing is reported. The bar is ``tqdm``'s (``tqdm.auto``: a widget in
Jupyter, text in a terminal) when it is installed (``pip install 'jaxprox[progress]'``), else a
line rewritten in place.
"""
from __future__ import annotations

import sys

import numpy as np

__all__ = ["bar", "report", "close"]

#: the display of the solve or path running now (one at a time: the loop reports sequentially)
_ACTIVE: dict = {}


class _Line:
    """The fallback display: one line rewritten in place (``\\r``)."""

    def __init__(self, total: int, unit: str, desc: str):
        self.total, self.unit, self.desc, self.n, self.postfix = total, unit, desc, 0, ""

    def update(self, k: int) -> None:
        self.n += k
        self._show("\r")

    def set_postfix_str(self, text: str, refresh: bool = True) -> None:
        self.postfix = text

    def _show(self, end: str) -> None:
        sys.stderr.write(f"{end}{self.desc}: {self.n}/{self.total} {self.unit} {self.postfix}")
        sys.stderr.flush()

    def close(self) -> None:
        self._show("\r")
        sys.stderr.write("\n")


def bar(total: int, unit: str, desc: str):
    """A progress bar of ``total`` units (tqdm's where installed), for loops run in Python (the
    folds of a cross-validation)."""
    return _bar(total, unit, desc)


def _bar(total: int, unit: str, desc: str):
    try:
        import ipywidgets  # noqa: F401  (a notebook widget where Jupyter's widgets are installed)
        from tqdm.auto import tqdm
    except ImportError:
        try:
            from tqdm import tqdm  # text, in a terminal or a notebook's output
        except ImportError:
            return _Line(total, unit, desc)
    return tqdm(total=total, unit=unit, desc=desc, leave=True, dynamic_ncols=True)


def _relative(gap, primal) -> float:
    return float(gap) / max(abs(float(primal)), np.finfo(np.float64).tiny)


def report(solves, lanes, steps, max_steps, primal, gap, tol, running) -> None:
    """Host side of one check (called by the compiled loop through ``jax.debug.callback``; under
    ``vmap`` once per lane). ``solves``: 1 for a solve, the number of lambdas of a path; ``lanes``:
    1 for a solve or a warm-started path, the lanes solved together for a lock-step path (whose
    bar then counts the steps of its lock-step loop)."""
    solves, lanes, steps, max_steps = int(solves), int(lanes), int(steps), int(max_steps)
    running = bool(running)
    kind = (solves, lanes)
    d = _ACTIVE.get("display")
    if d is not None and _ACTIVE["kind"] != kind:  # a display left open by an earlier solve
        close()
        d = None
    if d is None and solves == 1 and not running:  # a finished solve (frozen lanes of an unrolled loop)
        return
    if d is None:
        total, unit = (solves, "lambdas") if lanes == 1 and solves > 1 else (max_steps, "steps")
        d = _ACTIVE["display"] = _bar(total, unit, "jaxprox solve" if solves == 1 else "jaxprox path")
        _ACTIVE.update(kind=kind, done=0)
    target = f"relative gap {_relative(gap, primal):.2e} (target {float(tol):.0e})"
    if solves == 1:
        d.set_postfix_str(target, refresh=False)
        d.update(max(steps - d.n, 0))
        if not running:
            close()
    elif lanes == 1:  # the warm-started path: one solve after another
        d.set_postfix_str(f"lambda {_ACTIVE['done'] + 1}: step {steps}, {target}", refresh=False)
        if not running:
            _ACTIVE["done"] += 1
            d.update(1)
        if d.n >= solves:
            close()
    else:  # lock-step: the lanes' steps advance together
        d.set_postfix_str(f"{solves} lambdas in lock-step", refresh=False)
        d.update(max(min(steps, max_steps) - d.n, 0))


def rewind(done: int) -> None:
    """Set the open path display back to ``done`` lambdas (a path that goes on from there with a
    larger solver: :meth:`jaxprox.Solver.enlarged`)."""
    d = _ACTIVE.get("display")
    if d is None:
        return
    _ACTIVE["done"] = done
    d.n = done
    d.refresh()


def close() -> None:
    """Close the display of the solve or path that reported last (called when a path returns)."""
    d = _ACTIVE.pop("display", None)
    if d is not None:
        d.close()
