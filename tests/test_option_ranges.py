"""Every solver refuses, at construction, a numeric option outside the range it declares
(``Solver.option_ranges``: a negative Lipschitz estimate, zero epochs, a batch of zero, a
backtracking factor of 1, ...), with a message naming the option, and accepts the range's edge.
Before, such options ran silently: to NaN (AGM's ``L0 = -1``), to a diverging run (SVRG's negative
step, DRSVMPDHG without power iterations) or to a run that never moved (zero inner epochs)."""
import jax
import pytest

import jaxprox as jp
from jaxprox.solver import Solver

SOLVERS = [getattr(jp, n) for n in dir(jp)
           if isinstance(getattr(jp, n), type) and issubclass(getattr(jp, n), Solver) and getattr(jp, n).option_ranges]
CASES = [(cls, name, spec) for cls in SOLVERS for name, spec in cls.option_ranges.items()]


def _outside_and_inside(spec: str):
    """A value just outside ``spec`` and one inside it (its closed edge where it has one)."""
    s = spec.replace(" ", "")
    if s.startswith(">="):
        a = float(s[2:])
        return (a - 1, a) if a == int(a) else (a - 0.5, a)
    if s.startswith(">"):
        a = float(s[1:])
        return a, a + 1
    lo, hi = (float(t) for t in s[1:-1].split(","))
    outside = hi if s[-1] == ")" else (lo if s[0] == "(" else hi + 1)
    inside = lo if s[0] == "[" else hi if s[-1] == "]" else (lo + hi) / 2
    return outside, inside


def test_every_public_solver_with_numeric_options_declares_their_ranges():
    names = {cls.__name__ for cls in SOLVERS}
    assert {"FISTA", "ProxNewton", "PDBlockFW", "AGM", "APPA", "DualAPPA", "SVRG", "SDCA", "ISG", "IPPA",
            "HybridISGIPPA", "DRSVMPDHG", "DRSVMBarrier"} <= names, names


@pytest.mark.parametrize("cls, name, spec", CASES, ids=[f"{c.__name__}-{n}" for c, n, _ in CASES])
def test_out_of_range_option_is_refused_and_the_edge_accepted(cls, name, spec):
    outside, inside = _outside_and_inside(spec)
    cast = int if isinstance(getattr(cls(), name), int) and not isinstance(getattr(cls(), name), bool) else float
    with pytest.raises(ValueError, match=f"{cls.__name__}: {name} must be"):
        cls(**{name: cast(outside)})
    assert getattr(cls(**{name: cast(inside)}), name) == cast(inside)


def test_traced_options_are_checked_where_they_are_concrete():
    """Inside the user's jit a value is traced: it passes construction (checked outside)."""
    assert float(jax.jit(lambda L: jp.FISTA(L0=L).L0)(-1.0)) == -1.0
