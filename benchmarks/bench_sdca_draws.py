"""SDCA and Dual APPA steps and convergence over data, lam, loss and seeds (the comparison of two
random draws in benchmarks/results/sdca_draws.md: run it with PYTHONPATH at each commit, JAXPROX_DATA set)."""
import sys, warnings, json, time
warnings.simplefilter("ignore")
import jax, numpy as np
jax.config.update("jax_enable_x64", True)
import jaxprox as jp
from jaxprox import losses, penalties
out = []
for name in ["heart_scale", "breast-cancer_scale", "german.numer", "a1a", "mushrooms", "phishing"]:
    X, y = jp.datasets.load(name, dense=True)
    if X.shape[0] > 3000:
        r = np.random.default_rng(0).permutation(X.shape[0])[:3000]; X, y = X[r], y[r]
    for lam in (1e-3, 1e-5):
        for loss in ("logistic", "hinge"):
            P = jp.ERM(X, y, losses.Logistic() if loss == "logistic" else losses.Hinge(), penalties.SquaredL2(lam))
            for S in ("DualAPPA", "SDCA"):
                for seed in (0, 1, 2):
                    sol = jp.solve(P, getattr(jp, S)(tol=1e-8, seed=seed))
                    out.append((name, lam, loss, S, seed, int(sol.steps), bool(sol.converged)))
for o in out: print(json.dumps(o))
