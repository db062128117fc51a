"""jaxprox.plot draws what the solutions hold: the certified gaps of the trace, a path's
coefficients and gaps, on a log scale."""
import jax.numpy as jnp
import matplotlib
import numpy as np
import pytest

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

import jaxprox as jp  # noqa: E402
from jaxprox import plot  # noqa: E402


@pytest.fixture(scope="module")
def heart_problem():
    X, y = jp.datasets.load("heart_scale")
    return jp.ERM(X, y, jp.losses.Logistic(), jp.penalties.L1(1e-2))


def test_trace_draws_the_certified_relative_gap(heart_problem):
    sols = {"FISTA": jp.solve(heart_problem, jp.FISTA(tol=1e-9)), "PDProx": jp.solve(heart_problem, jp.PDProx(tol=1e-6))}
    optimum = float(sols["FISTA"].primal_value)
    ax = plot.trace(sols, optimum=optimum)
    lines = ax.get_lines()
    assert len(lines) == 4  # a gap and a suboptimality line per solution
    for k, sol in enumerate(sols.values()):
        c = int(sol.trace.count)
        gap_line = lines[2 * k]
        np.testing.assert_array_equal(gap_line.get_xdata(), np.asarray(sol.trace.steps[:c], np.float64))
        want = np.asarray(sol.trace.gap[:c]) / np.abs(np.asarray(sol.trace.primal[:c]))
        got = gap_line.get_ydata()
        np.testing.assert_allclose(got[want > 0], want[want > 0], rtol=1e-12)
        # the certified gap bounds the suboptimality at every check
        sub = lines[2 * k + 1].get_ydata()
        ok = np.isfinite(sub) & np.isfinite(got)
        assert np.all(sub[ok] <= got[ok] * (1 + 1e-9) + 1e-15)
    assert ax.get_yscale() == "log" and ax.get_xlabel() == "steps"
    ax2 = plot.trace(sols["FISTA"], seconds=2.0)
    assert ax2.get_xlabel() == "seconds" and abs(ax2.get_lines()[0].get_xdata()[-1] - 2.0) < 1e-12
    plt.close("all")


def test_path_draws_coefficients_gaps_and_score(heart_problem):
    lams = jnp.logspace(-1, -3, 8)
    sols = jp.solve_path(heart_problem, jp.FISTA(tol=1e-8), lams)
    score = np.linspace(0.7, 0.8, 8)
    axes = plot.path(sols, lams, score=score)
    assert len(axes) == 3
    assert len(axes[0].get_lines()) == heart_problem.A.shape[1]  # one line per coefficient
    np.testing.assert_allclose(axes[0].get_lines()[3].get_ydata(), np.asarray(sols.params)[:, 3])
    np.testing.assert_allclose(axes[2].get_lines()[0].get_ydata(), score)
    with pytest.raises(ValueError, match="single solves"):
        plot.trace(sols)
    plt.close("all")
