"""Budgets in epochs: the default ``max_steps`` of the stochastic solvers, whose step is one or more
passes over the data."""
from __future__ import annotations

from ..defaults import STEPS_CAP, STEPS_FLOOR


def epoch_budget(problem, epochs_per_step: int = 1) -> int:
    """The default ``max_steps`` of the stochastic solvers (``max_steps=None``): as many steps of
    ``epochs_per_step`` epochs as fit in :data:`jaxprox.defaults.SAMPLE_STEP_BUDGET` sequential
    sample steps, ``SAMPLE_STEP_BUDGET / (n * epochs_per_step)``, clipped to
    ``[STEPS_FLOOR, STEPS_CAP]`` (200 and 20,000): a budget in time rather than in passes, so that
    small data sets, whose epochs cost little, get the many epochs that weak regularisation needs,
    and large ones keep the floor. The budget is read from :mod:`jaxprox.defaults` at each call."""
    from .. import defaults

    SAMPLE_STEP_BUDGET, STEPS_CAP, STEPS_FLOOR = defaults.SAMPLE_STEP_BUDGET, defaults.STEPS_CAP, defaults.STEPS_FLOOR
    steps = SAMPLE_STEP_BUDGET // (max(int(problem.n), 1) * max(int(epochs_per_step), 1))
    return int(min(STEPS_CAP, max(STEPS_FLOOR, steps)))


class EpochBudget:
    """``max_steps=None`` for a stochastic solver: :func:`epoch_budget` of :attr:`epochs_per_step`
    epochs per step (1 for SDCA and SVRG; the inner epochs of APPA and Dual APPA)."""

    budget_range = f"{STEPS_FLOOR:,}-{STEPS_CAP:,} (from n)"
    epochs_per_step = 1

    def budget(self, problem) -> int:
        return epoch_budget(problem, self.epochs_per_step)
