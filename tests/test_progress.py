"""Progress at the checks (jaxprox.progress): a solve's bar reaches its steps, a warm-started
path's bar counts its lambdas, inside jit too; with progress off nothing is compiled in."""
import jax
import jax.numpy as jnp
import pytest

import jaxprox as jp
from jaxprox import progress


class Recorder:
    """A stand-in for the tqdm bar: what the display was told."""
    made = []

    def __init__(self, total, unit, desc):
        self.total, self.unit, self.desc, self.n, self.postfix, self.closed = total, unit, desc, 0, "", False
        Recorder.made.append(self)

    def update(self, k):
        self.n += k

    def set_postfix_str(self, text, refresh=True):
        self.postfix = text

    def close(self):
        self.closed = True


@pytest.fixture
def bars(monkeypatch):
    Recorder.made = []
    monkeypatch.setattr(progress, "_bar", Recorder)
    return Recorder.made


@pytest.fixture(scope="module")
def problem():
    X, y = jp.datasets.load("heart_scale")
    return jp.ERM(X, y, jp.losses.Logistic(), jp.penalties.L1(1e-2))


def test_a_solve_shows_its_steps_and_gap(problem, bars):
    sol = jp.solve(problem, jp.FISTA(tol=1e-9, progress=True))
    assert len(bars) == 1 and bars[0].closed and bars[0].unit == "steps"
    assert bars[0].n == int(sol.steps) and "target 1e-09" in bars[0].postfix
    sol = jax.jit(jp.solve)(problem, jp.FISTA(tol=1e-8, progress=True))
    assert len(bars) == 2 and bars[1].closed and bars[1].n == int(sol.steps)


def test_a_path_counts_its_lambdas(problem, bars):
    lams = jnp.logspace(-1, -3, 7)
    path = jp.solve_path(problem, jp.FISTA(tol=1e-8, progress=True), lams)
    assert bool(path.converged.all())
    assert len(bars) == 1 and bars[0].unit == "lambdas" and bars[0].total == 7 and bars[0].n == 7 and bars[0].closed
    jp.solve_path(problem, jp.FISTA(tol=1e-8, progress=True), lams, batched=True)  # lock-step: steps
    assert len(bars) == 2 and bars[1].unit == "steps" and bars[1].closed and bars[1].n > 0


def test_no_progress_compiles_no_callback(problem):
    def jaxpr(solver):
        return str(jax.make_jaxpr(lambda P: jp.solve(P, solver).params)(problem))

    assert "callback" not in jaxpr(jp.FISTA())
    assert "callback" in jaxpr(jp.FISTA(progress=True))
