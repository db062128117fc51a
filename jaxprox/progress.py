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

__all__ = ["report"]

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


def _bar(total: int, unit: str, desc: str):
    try:
        from tqdm.auto import tqdm
    except ImportError:
        return _Line(total, unit, desc)
    return tqdm(total=total, unit=unit, desc=desc, leave=True, dynamic_ncols=True)


def _relative(gap, primal) -> float:
    return float(gap) / max(abs(float(primal)), np.finfo(np.float64).tiny)


def report(solves, lanes, steps, max_steps, primal, gap, tol, running) -> None:
    """Host side of one check (called by the compiled loop through ``jax.debug.callback``; under
    ``vmap`` once per lane, in order). ``solves``: 1 for a solve, the number of lambdas of a path;
    ``lanes``: solves reported together per check (the lock-step path's batch), else 1."""
    solves, lanes, steps, max_steps = int(solves), int(lanes), int(steps), int(max_steps)
    running = bool(running)
    d = _ACTIVE.get("display")
    if d is None:
        unit = "steps" if solves == 1 else "lambdas"
        d = _ACTIVE["display"] = _bar(max_steps if solves == 1 else solves, unit,
                                      "jaxprox solve" if solves == 1 else "jaxprox path")
        _ACTIVE.update(done=0, seen=0, group_done=0, base=0)
    target = f"gap {_relative(gap, primal):.2e} (target {float(tol):.0e})"
    if solves == 1:
        d.set_postfix_str(f"relative {target}", refresh=False)
        d.update(max(steps - d.n, 0))
        if not running:
            _close()
        return
    if lanes == 1:  # the warm-started path: one solve after another
        d.set_postfix_str(f"lambda {_ACTIVE['done'] + 1}: step {steps}, relative {target}", refresh=False)
        if not running:
            _ACTIVE["done"] += 1
            d.update(1)
    else:  # lock-step: one report per lane and check, the lanes in order, chunk after chunk
        _ACTIVE["seen"] += 1
        _ACTIVE["group_done"] += 0 if running else 1
        if _ACTIVE["seen"] % lanes == 0:  # a check of every lane of the chunk
            done = _ACTIVE["base"] + _ACTIVE["group_done"]
            if _ACTIVE["group_done"] == lanes:  # the chunk is finished; the next one starts
                _ACTIVE["base"] += lanes
            _ACTIVE["group_done"] = 0
            d.set_postfix_str(f"step {steps}", refresh=False)
            d.update(max(min(done, solves) - d.n, 0))
    if d.n >= solves:
        _close()


def _close() -> None:
    d = _ACTIVE.pop("display", None)
    if d is not None:
        d.close()
