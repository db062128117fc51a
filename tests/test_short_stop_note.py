"""A smoothed BiasSVM (mu > 0) that stops short says why: its run minimises an objective within
mu/(2n) of the SVM's, which the certificate measures; the bound holds against the exact SVM."""
import warnings

import jax
import numpy as np

import jaxprox as jp


def test_smoothed_bias_svm_short_stop_names_the_smoothing_and_its_bound_holds():
    X, y = jp.datasets.load("heart_scale", dense=True)
    n = X.shape[0]
    exact = jp.solve(jp.BiasSVM(X, y, 1.0 / n), jp.AGM(tol=1e-10))
    assert exact.converged
    mu = 0.5
    smoothed = jp.BiasSVM(X, y, 1.0 / n, mu=mu, space="primal")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        sol = jp.solve(smoothed, jp.AGM(tol=1e-12, max_steps=3000))
    msgs = [str(w.message) for w in caught if issubclass(w.category, jp.ConvergenceWarning)]
    assert len(msgs) == 1 and f"mu/(2n) = {mu / (2 * n):.3g}" in msgs[0], msgs
    # the smoothed run's point is within mu/(2n) of the SVM's optimum in the SVM's own objective
    above = float(sol.primal_value) - float(exact.primal_value)
    assert -1e-9 <= above <= mu / (2 * n), (above, mu / (2 * n))
    assert float(sol.gap) >= above - 1e-9
    # no note for the unsmoothed problem, nor when the solve converges
    assert jp.BiasSVM(X, y, 1.0 / n).short_stop_note() == ""
    with warnings.catch_warnings():
        warnings.simplefilter("error", jp.ConvergenceWarning)
        jp.solve(jp.BiasSVM(X, y, 1.0 / n, mu=0.01), jp.AGM(tol=1e-6))
