"""Figures of what a solve returns (matplotlib, the optional extra ``jaxprox[plot]``).

* :func:`trace`: the certified gap (or the suboptimality against a known optimum) of one or several
  solutions against steps or wall-clock time, read from ``Solution.trace``.
* :func:`path`: a regularisation path from :func:`jaxprox.solve_path`: the coefficients, the
  certified gap and, when given, a validation score against lambda.

Both draw on a given ``matplotlib`` axis (or a new figure) and return the axes, so they compose with
the rest of a notebook's figure. Nothing here is imported by ``import jaxprox``.
"""
from __future__ import annotations

import numpy as np

__all__ = ["trace", "path"]


def _pyplot():
    try:
        import matplotlib.pyplot as plt
    except ImportError as err:  # pragma: no cover - the extra is documented
        raise ImportError("jaxprox.plot needs matplotlib: pip install 'jaxprox[plot]'") from err
    return plt


def _checks(sol):
    """``(steps, primal, gap)`` of the checks a (single) solution recorded."""
    tr = sol.trace
    if np.ndim(tr.count) != 0:
        raise ValueError("trace() draws single solves; index a path or a vmapped solution first (sol[i] "
                         "via jax.tree_util.tree_map(lambda a: a[i], sol))")
    c = int(tr.count)
    return (np.asarray(tr.steps[:c], np.float64), np.asarray(tr.primal[:c], np.float64),
            np.asarray(tr.gap[:c], np.float64))


def trace(solutions, *, optimum=None, seconds=None, relative=True, ax=None):
    """Certified gap against steps (or time) for one solution or a ``{label: solution}`` dict.

    Plots ``gap_t / |P_t|`` (``relative=True``) or ``gap_t`` at every recorded check ``t``; with
    ``optimum = P*`` it plots the suboptimality ``(P_t - P*) / |P*|`` instead, next to the certified
    gap, which bounds it from above. ``seconds`` (one wall-clock time per solution, the same keys)
    puts time on the x-axis, spread evenly over the steps (a solver's steps cost the same), else
    the x-axis counts steps.

    Returns the matplotlib axis.
    """
    plt = _pyplot()
    sols = solutions if isinstance(solutions, dict) else {getattr(solutions, "method", "") or "solve": solutions}
    if seconds is not None and not isinstance(seconds, dict):
        seconds = {next(iter(sols)): seconds}
    if ax is None:
        _, ax = plt.subplots(figsize=(6, 4))
    for label, sol in sols.items():
        steps, primal, gap = _checks(sol)
        x = steps if seconds is None else steps * float(seconds[label]) / max(steps[-1], 1.0)
        scale = np.maximum(np.abs(primal), np.finfo(np.float64).tiny) if relative else 1.0
        shown = np.isfinite(gap) & (gap > 0)  # a method without a finite certificate draws none
        (line,) = ax.semilogy(x, np.where(shown, gap / scale, np.nan), label=f"{label}: certified gap")
        if optimum is not None:
            sub = (primal - optimum) / (abs(optimum) if relative else 1.0)
            ax.semilogy(x, np.where(sub > 0, sub, np.nan), "--", color=line.get_color(),
                        label=f"{label}: suboptimality")
    ax.set_xlabel("steps" if seconds is None else "seconds")
    ax.set_ylabel("relative gap" if relative else "gap")
    ax.grid(alpha=0.3)
    ax.legend()
    return ax


def path(sols, lams, *, score=None, score_name="validation score", axes=None):
    """A regularisation path: coefficients, certified gap and (optionally) a score against lambda.

    ``sols`` is what :func:`jaxprox.solve_path` returns for ``lams`` (leaves stacked along the
    first axis); ``score`` is one number per lambda (e.g. a held-out accuracy). Draws two or three
    panels on a log lambda axis and returns them.
    """
    plt = _pyplot()
    lams = np.asarray(lams, np.float64)
    W = np.asarray(sols.params if not isinstance(sols.params, tuple) else sols.params[0], np.float64)
    W = W.reshape(len(lams), -1)
    panels = 3 if score is not None else 2
    if axes is None:
        fig, axes = plt.subplots(1, panels, figsize=(4.5 * panels, 3.6), layout="constrained")
    ax_w, ax_g = axes[0], axes[1]
    ax_w.semilogx(lams, W, lw=1)
    ax_w.set_xlabel("lambda")
    ax_w.set_ylabel("coefficients")
    gap = np.asarray(sols.gap, np.float64)
    rel = gap / np.maximum(np.abs(np.asarray(sols.primal_value, np.float64)), np.finfo(np.float64).tiny)
    ax_g.loglog(lams, np.where(rel > 0, rel, np.nan), "o-", ms=3)
    ax_g.set_xlabel("lambda")
    ax_g.set_ylabel("certified relative gap")
    if score is not None:
        axes[2].semilogx(lams, np.asarray(score, np.float64), "o-", ms=3)
        axes[2].set_xlabel("lambda")
        axes[2].set_ylabel(score_name)
    for ax in axes:
        ax.grid(alpha=0.3)
    return axes
