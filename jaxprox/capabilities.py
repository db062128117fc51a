"""What a solver needs of a problem, declared and checked before tracing.

Each solver class states the structure it needs as a tuple of :class:`Requirement` (its class
attribute ``requires``); :func:`jaxprox.solve` calls :func:`check` before it traces anything and
raises a ``TypeError`` that says what is missing and which public solvers do accept the problem.
The predicates read typed properties only (``loss.smooth``, ``penalty.quadratic``,
``isinstance(constraint, NormBall)``, the problem's class): no class-name tests, no guessing of
attribute names.

    >>> jp.solve(jp.ERM(X, y, jp.losses.Hinge(), jp.penalties.L1(1e-3)), jp.FISTA())
    TypeError: FISTA cannot solve ERM(loss=Hinge, penalty=L1, constraint=None): it needs a smooth
    loss (loss.smooth; smooth a hinge-type loss with loss.smoothed(mu)). Solvers that accept this
    problem: PDProx.

:func:`matrix` builds the solver x problem compatibility table of the docs from the declarations.

The registry is derived from the classes themselves, not kept by hand: :func:`solver_classes`
imports every module of :mod:`jaxprox.solvers` and :mod:`jaxprox.baselines` and walks
``Solver.__subclasses__()``. A concrete class whose name has no leading underscore is *public*
when it lives in :mod:`jaxprox.solvers` or declares ``public = True`` in its own body (FISTA and
ProxNewton, which live beside the baselines), a *baseline* otherwise. :func:`exported_solvers`
(the solver names of ``jaxprox.__all__``), :func:`public_solvers` (the public solvers that are
built without arguments: the docs matrix, the error messages, the conformance suite) and
:func:`baseline_solvers` read it, so a new solver module is picked up without an edit elsewhere.
"""
from __future__ import annotations

import importlib
import inspect
import pkgutil
from typing import Any, Callable, NamedTuple


class Requirement(NamedTuple):
    """One thing a solver needs of a problem: ``holds(problem) -> bool`` and how to say it."""

    what: str
    holds: Callable[[Any], bool]

    def __call__(self, problem) -> bool:
        return bool(self.holds(problem))


def _erm(p) -> bool:
    from .problems import ERM

    return isinstance(p, ERM)


def _drsvm(p) -> bool:
    from .problems import DRSVM

    return isinstance(p, DRSVM)


def _agm_model(p) -> bool:
    from .problems import AGMModel

    return isinstance(p, AGMModel)


def _ball(p, norms) -> bool:
    from .base import NormBall

    return isinstance(p.constraint, NormBall) and p.constraint.norm in norms


def _vector(p) -> bool:
    return tuple(p.param_shape) == (p.d,) and p.y.ndim == 1


ERM_PROBLEM = Requirement("an ERM problem (jp.ERM)", _erm)
DRSVM_PROBLEM = Requirement("a Wasserstein DRSVM problem (jp.DRSVM)", _drsvm)
LINF_DRSVM = Requirement("norm='linf' (the box |w_j| <= lam)", lambda p: _drsvm(p) and p.norm == "linf")
AGM_MODEL = Requirement("an AGM-EF model (jp.BiasSVM, jp.ERLPBoost, jp.F1SVM)", _agm_model)
SMOOTH_LOSS = Requirement("a smooth loss (loss.smooth; smooth a hinge-type loss with loss.smoothed(mu))",
                          lambda p: _erm(p) and p.loss.smooth)
RIDGE = Requirement("penalty=SquaredL2(lam)", lambda p: _erm(p) and p.penalty is not None and p.penalty.quadratic)
RIDGE_OR_NONE = Requirement("penalty=None or SquaredL2(lam)",
                            lambda p: _erm(p) and (p.penalty is None or p.penalty.quadratic))
RIDGE_OR_NONE_OR_SCALED = Requirement(
    "penalty=None or SquaredL2(lam) (or its column-scaled form, see Solver.rescale)",
    lambda p: _erm(p) and (p.penalty is None or p.penalty.ridge_diagonal is not None))
NO_CONSTRAINT = Requirement("no constraint", lambda p: _erm(p) and p.constraint is None)
PROX = Requirement("a prox of penalty + constraint (a penalty alone, a constraint alone, or SquaredL2 with a "
                   "constraint)", lambda p: _erm(p) and p.has_prox)
L1_OR_TRACE_BALL = Requirement(
    "constraint=L1Ball(r) with a vector model, or TraceBall(r) with a matrix model (n_outputs=K)",
    lambda p: _erm(p) and ((_ball(p, ("l1",)) and p.n_outputs is None)
                           or (_ball(p, ("trace",)) and p.n_outputs is not None)))
PLAIN_SVM = Requirement("the SVM: hinge loss, penalty=SquaredL2(lam), no constraint, a vector model",
                        lambda p: _erm(p) and p.loss.family == "hinge" and p.constraint is None
                        and p.penalty is not None and p.penalty.quadratic and _vector(p))
LINEAR_SVM = Requirement("the linear SVM: hinge loss, penalty=SquaredL2(lam) or L1(lam), no constraint, a vector "
                         "model", lambda p: PLAIN_SVM(p) or (_erm(p) and p.loss.family == "hinge"
                                                              and p.constraint is None and _vector(p) and _l1(p)))


def _l1(p) -> bool:
    from .penalties import L1

    return type(p.penalty) is L1


def _bias_svm_l2(p) -> bool:
    from .problems import BiasSVM

    return isinstance(p, BiasSVM) and p.penalty == "l2"


BIAS_SVM_L2 = Requirement("an SVM with a bias (jp.BiasSVM) with penalty='l2'", _bias_svm_l2)
AGM_PROBLEM = Requirement(
    "an AGM-EF model (jp.BiasSVM, jp.ERLPBoost, jp.F1SVM), an ERM with a smooth loss and a prox, or "
    "the plain SVM (hinge + SquaredL2, solved through its dual)",
    lambda p: _agm_model(p) or (_erm(p) and p.loss.smooth and PROX(p)) or PLAIN_SVM(p))
VECTOR_MODEL = Requirement("a vector model w of shape (d,) with 1-D labels", lambda p: _erm(p) and _vector(p))


def describe(problem) -> str:
    """A short name of a problem's structure for error messages."""
    if _erm(problem):
        name = lambda o: "None" if o is None else type(o).__name__  # noqa: E731
        return (f"ERM(loss={name(problem.loss)}, penalty={name(problem.penalty)}, "
                f"constraint={name(problem.constraint)})")
    return type(problem).__name__


def missing(problem, solver_cls) -> list[str]:
    """The requirements of ``solver_cls`` that ``problem`` does not meet (checked in order: once the
    problem class is wrong the rest are not evaluated)."""
    out = []
    for req in solver_cls.requires:
        if not req(problem):
            out.append(req.what)
            if req in (ERM_PROBLEM, DRSVM_PROBLEM, AGM_MODEL, AGM_PROBLEM):
                break
    return out


# ---------------------------------------------------------------- the registry
SOLVER_PACKAGES = ("jaxprox.solvers", "jaxprox.baselines")


def _import_solver_modules() -> None:
    """Import every module of :data:`SOLVER_PACKAGES`, so that every solver class is defined."""
    for package in SOLVER_PACKAGES:
        for module in pkgutil.iter_modules(importlib.import_module(package).__path__):
            importlib.import_module(f"{package}.{module.name}")


def _subclasses(cls) -> list[type]:
    """Every subclass of ``cls``, depth first, each once."""
    out: list[type] = []
    for sub in cls.__subclasses__():
        for c in (sub, *_subclasses(sub)):
            if c not in out:
                out.append(c)
    return out


def solver_classes() -> list[type]:
    """Every concrete solver class of jaxprox (public and baselines), by name: the subclasses of
    :class:`~jaxprox.solver.Solver` defined in :data:`SOLVER_PACKAGES`, without abstract methods
    and without a leading underscore."""
    from .solver import Solver

    _import_solver_modules()
    return sorted((c for c in _subclasses(Solver)
                   if c.__module__.startswith(tuple(p + "." for p in SOLVER_PACKAGES))
                   and not c.__name__.startswith("_") and not inspect.isabstract(c)),
                  key=lambda c: c.__name__)


def is_public(cls) -> bool:
    """A class of :mod:`jaxprox.solvers`, or one that declares ``public = True`` in its own body."""
    return cls.__dict__.get("public", cls.__module__.startswith("jaxprox.solvers."))


def standalone(cls) -> bool:
    """Built without arguments (``cls()``): a solver, not a composition of solvers (``Finish``)."""
    return all(p.default is not p.empty or p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
               for p in inspect.signature(cls).parameters.values())


def exported_solvers() -> list[type]:
    """The solver classes of ``jaxprox.__all__``: every public class, compositions included."""
    return [c for c in solver_classes() if is_public(c)]


def public_solvers() -> list[type]:
    """Every public solver (``jp.*``) built without arguments, by name: the rows of
    :func:`matrix`, the alternatives an error names, the solvers of the conformance suite."""
    return [c for c in exported_solvers() if standalone(c)]


def baseline_solvers() -> list[type]:
    """The methods the papers compare against (:mod:`jaxprox.baselines`), by name."""
    return [c for c in solver_classes() if not is_public(c)]


def accepting(problem) -> list[str]:
    """Names of the public solvers whose requirements ``problem`` meets."""
    return [s.__name__ for s in public_solvers() if not missing(problem, s)]


def check(problem, solver) -> None:
    """Raise ``TypeError`` before tracing if ``solver`` cannot solve ``problem``: what is missing
    and which public solvers accept the problem instead."""
    gaps = missing(problem, type(solver))
    if not gaps:
        return
    fits = accepting(problem)
    alt = ", ".join(fits) if fits else "none of the public solvers"
    raise TypeError(f"{type(solver).__name__} cannot solve {describe(problem)}: it needs "
                    f"{'; '.join(gaps)}. Solvers that accept this problem: {alt}.")


def _factorisable(problem, d_max: int) -> bool:
    """A ``d x d`` factorisation per step pays off: ``d <= d_max`` and not wide (``d <= max(n, 512)``)."""
    return problem.d <= d_max and problem.d <= max(problem.n, 512)


#: the most features for which the SVM Newton solvers are the default (a ``d x d`` Hessian per step)
SVM_NEWTON_D = 4096


def _svm_newton_sized(problem) -> bool:
    """Few enough features for the ``d x d`` Newton systems of :class:`~jaxprox.SVMNewton` /
    :class:`~jaxprox.BiasSVMNewton`: ``d <= SVM_NEWTON_D``."""
    return problem.A.shape[1] <= SVM_NEWTON_D


def _single_precision(problem) -> bool:
    """The problem's data are float32 (:func:`jaxprox.defaults.default_tol` is the float32 one)."""
    from .defaults import DEFAULT_TOL, default_tol

    return default_tol(problem) == DEFAULT_TOL["float32"]


def default_solver(problem):
    """The solver :func:`jaxprox.solve` uses when none is given: the measured choice per problem
    class and size (docs: "Which solver", with the benchmark behind each row).

    * ERM with a smooth loss, a vector model and ``d <= 4096`` with ``d <= max(n, 512)``:
      :class:`~jaxprox.ProxNewton` (a d x d Newton model; the fastest on the scikit-learn
      comparisons and the paths, ``benchmarks/results/sklearn.md``, ``paths.md``); otherwise
      :class:`~jaxprox.FISTA` (on wide data, n < d, the Newton model costs more than it saves:
      the defaults sweep, ``defaults.md``), except in float32, where FISTA's certificate stops
      short of the default 1e-5 on wide data that ProxNewton certifies (l1-logistic on colon,
      62 x 2000: 0 of 3 against 3 of 3, ``defaults_default.md``).
    * The plain SVM (hinge + SquaredL2) with ``d <= SVM_NEWTON_D`` (4096): :class:`~jaxprox.SVMNewton`
      (smoothing with continuation and Newton steps; in the defaults sweep it converged in all 66
      float64 cases and 61 of 66 float32 ones, as PDProx did, in about a third of PDProx's time,
      ``defaults_default.md``).
    * The 1-norm SVM (hinge + L1) in float64 with ``d <= min(n, SVM_NEWTON_D)``:
      :class:`~jaxprox.SVMNewton` (the l1 norm Huber-smoothed). In float32, and on wide data
      (``d > n``), where its Newton steps stall, :class:`~jaxprox.PDProx` (docs: "Which solver",
      ``defaults_default.md``, ``defaults_svm_newton_l1.md``).
    * Any other ERM with a non-smooth loss: :class:`~jaxprox.PDProx` (the only solver for any loss
      with a prox of its conjugate).
    * DRSVM: :class:`~jaxprox.DRSVMBarrier` (the fastest to certified 1e-6 gaps, also under
      ``vmap``: ``drsvm_ipm.md``, ``drsvm_vmap.md``) when ``d <= 2048`` and ``d <= max(n, 512)``,
      :class:`~jaxprox.DRSVMPDHG` otherwise (the barrier factors a d x d matrix per step), and
      in float32, where the barrier's Newton systems round its certified gap to a floor of 1e-5
      to 1e-2 relative at small ``epsilon`` (``||w||_1 <= lam`` active) while PDHG certifies the
      default 1e-5 (``defaults_default.md``).
    * The multinomial ERM: :class:`~jaxprox.ProxNewton` (Newton-CG on the ``(d, K)`` matrix) with
      the ridge penalty (the estimator on digits: 2-3.5x fewer seconds than with AGM, within 2x of
      scikit-learn's lbfgs, ``benchmarks/results/multinomial.md``),
      :class:`~jaxprox.AGM` with any other penalty (several times fewer steps than FISTA).
    * The SVM with a bias (BiasSVM, ``penalty="l2"``) with ``d <= SVM_NEWTON_D``:
      :class:`~jaxprox.BiasSVMNewton` (in the
      defaults sweep 66 of 66 in float64 and 57 of 66 in float32, in about two thirds of the AGM's
      time; the AGM's dual converged in 61 of 66 in float64, missing on unscaled columns, and in
      11 of 66 in float32, where it needs ``lam >= 100 eps mean ||x_i||^2``,
      ``defaults_default.md``).
    * The other AGM-EF models (the L1-BiasSVM, ERLPBoost, F1SVM): :class:`~jaxprox.AGM`.
    """
    solver = {c.__name__: c for c in exported_solvers()}
    if _agm_model(problem):
        newton = not missing(problem, solver["BiasSVMNewton"]) and _svm_newton_sized(problem)
        return solver["BiasSVMNewton" if newton else "AGM"]()
    if _drsvm(problem):
        barrier = _factorisable(problem, 2048) and not _single_precision(problem)
        return solver["DRSVMBarrier" if barrier else "DRSVMPDHG"]()
    if _erm(problem) and PROX(problem):
        if problem.loss.family == "multinomial":  # Newton-CG for the ridge; else AGM's adaptive step
            return solver["ProxNewton" if not missing(problem, solver["ProxNewton"]) else "AGM"]()
        if problem.loss.smooth:
            newton = _vector(problem) and (_factorisable(problem, 4096)
                                           or (_single_precision(problem) and problem.d <= 4096))
            return solver["ProxNewton" if newton else "FISTA"]()
        newton = not missing(problem, solver["SVMNewton"]) and _svm_newton_sized(problem)
        if newton and _l1(problem):  # the 1-norm SVM: float64 and not wide
            newton = not _single_precision(problem) and problem.d <= problem.n
        return solver["SVMNewton" if newton else "PDProx"]()
    raise TypeError(f"no default solver for {describe(problem)}; pick one that accepts it: "
                    f"{', '.join(accepting(problem)) or 'none of the public solvers'}")


def default_path_solver(problem):
    """The solver :func:`jaxprox.solve_path` uses when none is given: :class:`~jaxprox.WorkingSet`
    (working sets with gap-safe screening around :class:`~jaxprox.ProxNewton`) for an ERM with a
    smooth loss and a separable penalty with an l1 part, the paths' common case
    (``benchmarks/results/peers.md``); otherwise :func:`default_solver`."""
    solver = {c.__name__: c for c in exported_solvers()}
    ws = solver["WorkingSet"]
    return ws() if not missing(problem, ws) else default_solver(problem)


def matrix(problems: dict[str, Any]) -> str:
    """A Markdown table: one row per public solver, one column per named example problem, a tick
    where the solver's declared requirements hold; what one step is (``Solver.step_unit``, the unit
    of ``max_steps``) with the default budget; and each solver's requirements in words."""
    names = list(problems)
    rows = ["| solver | " + " | ".join(names) + " | one step; default max_steps | needs |",
            "|---" * (len(names) + 3) + "|"]
    for s in public_solvers():
        ticks = " | ".join("yes" if not missing(problems[k], s) else "-" for k in names)
        steps = s.default_max_steps()
        if steps is not None:
            steps = f"{steps:,}"
        elif s.iteration_range is not None:
            steps = f"{s.iteration_range[0]:,}-{s.iteration_range[1]:,} (from the data's size)"
        else:
            steps = s.budget_range
        budget = f"{s.step_unit[:-1] if s.step_unit.endswith('s') else s.step_unit}; {steps}"
        rows.append(f"| `{s.__name__}` | {ticks} | {budget} | {'; '.join(r.what for r in s.requires)} |")
    return "\n".join(rows) + "\n"
