"""IPPA's single-sample proximal update (paper 004, eqs. (6)/(7) and (28)) against cvxpy + Clarabel
on ~30 instances per (q, c), q in {1, 2, inf}, c in {0, 0.3, 1}: Gaussian and binary 0/1 rows,
centres at the cone apex and in the polar cone, on the kinks w^T z = 1, kappa lam / 2,
kappa lam - 1, at the triple point lam = 2/kappa, and on the cone boundary.

The instance generator, the reference and the failure rule are those of
``benchmarks/papers/verify_drsvm_prox.py`` (1000 instances per case there): the jaxprox point is feasible,
its prox objective is not above Clarabel's, and it satisfies the strong-convexity certificate
phi(x_ref) - phi(x) >= ||x_ref - x||^2 / (2 alpha) (up to Clarabel's accuracy)."""
import importlib.util
from pathlib import Path

import numpy as np
import pytest

_spec = importlib.util.spec_from_file_location(
    "verify_drsvm_prox", Path(__file__).resolve().parents[1] / "benchmarks" / "papers" / "verify_drsvm_prox.py")
V = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(V)

KINDS = tuple(k for k in V.KINDS if k != "a1a")      # a1a rows (d = 123) only in the script


@pytest.fixture(scope="module")
def ref():
    return V.Reference()


@pytest.mark.parametrize("norm", ["l1", "l2", "linf"])
def test_ssppu_families_match_clarabel(norm, ref):
    for k, c in enumerate((0.0, 0.3, 1.0)):
        ins = V.make_instances(32, norm, seed=7 + 10 * k, kinds=KINDS, dims=(6,))
        rows = V.verify(norm, c, ins, ref)
        s = V.summarize(norm, c, rows)
        bad = [(r["kind"], r["obj_rel"], r["sol_rel"], r["viol"]) for r in rows if r["fail"]]
        assert s["fails"] == 0, (norm, c, bad)
        assert s["worst_jax_minus_ref"] <= 1e-8
        assert s["max_viol"] <= 1e-9
        assert s["binary"] >= 4
        # most points agree with Clarabel's to its accuracy; the objective values agree to 1e-6
        assert s["max_obj_rel"] <= 1e-6, s
        assert np.median([r["sol_rel"] for r in rows]) <= 1e-5
        if c == 0.0:
            assert s["apex"] >= 2          # the apex/polar families produce (0, 0) solutions
