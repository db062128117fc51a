"""Abstract problem bases: :class:`~jaxprox.base.Problem` (re-exported) and :class:`AGMModel`,
the structure :class:`jaxprox.AGM` needs of a problem it solves directly.

An AGM model is a composite problem in the form (10) of "Regularized Risk Minimization by
Nesterov's Accelerated Gradient Methods: Algorithmic Extensions and Empirical Studies"
(Zhang, Saha, Vishwanathan):

    min_x  J(x) = f(x) + Psi(x),

``f`` convex and ``L``-smooth w.r.t. the norm of a prox-function ``d`` ("euclidean":
``d = 1/2 ||x||^2``; "entropic": ``d = sum x log x`` on the simplex), ``f`` ``lam1``-strongly and
``Psi`` ``lam2``-strongly convex w.r.t. ``d``, with ``f(x) = max_alpha phi(x, alpha)`` so that the
maximisers ``alpha(x)`` averaged by the method form a dual iterate (Theorems 10 and 18). The
model may be the dual of the problem the user posed (``dual_run``): then ``x`` is the dual
variable and the average of ``alpha(x)`` is the recovered primal.

The abstract methods are what every model states; the hooks below them have working defaults
that a model overrides only when it has something better (a warm start for its prox, a cheaper
Lipschitz estimate, a primal refinement). A model knows nothing of the solver's state.
"""
from __future__ import annotations

import abc
from typing import ClassVar

import equinox as eqx
import jax.numpy as jnp

from ..base import Array, Problem, PyTree, as_leaf

__all__ = ["AGMModel", "PrimalOrDualModel", "Problem"]


class AGMModel(Problem):
    """A problem in AGM-EF form ``min_x f(x) + Psi(x)`` (see the module docstring).

    Class-level declarations:

    * ``geometries``: the prox-functions ``d`` the model supports, the first being the default.
    * ``has_primal_refinement``: the model overrides :meth:`refine_primal` (a run on a dual then
      reports the refined point and scores it by the exact value :meth:`refine_primal` returns).

    ``dual_run`` (a property, False by default): ``x`` is a dual variable, and the solution's
    params are the recovered primal ``w``, the average of ``alpha(x)``.
    """

    geometries: ClassVar[tuple[str, ...]] = ("euclidean",)
    has_primal_refinement: ClassVar[bool] = False

    @property
    def dual_run(self) -> bool:
        """Whether the iterate ``x`` is a dual variable (default: no)."""
        return False

    # ---------------------------------------------------------------- the model (abstract)
    @abc.abstractmethod
    def strong_convexity(self, geom: str) -> tuple[Array, Array]:
        """``(lam1, lam2)``: the moduli of ``f`` and ``Psi`` w.r.t. ``d`` (Definition 1)."""

    @abc.abstractmethod
    def lipschitz(self, geom: str) -> Array:
        """``L``, the Lipschitz constant of ``grad f`` w.r.t. the norm of ``d``."""

    @abc.abstractmethod
    def x0(self, geom: str, init) -> Array:
        """A starting point in ``dom Psi`` (``init`` made feasible, or a default)."""

    @abc.abstractmethod
    def lin(self, x: Array) -> Array:
        """A linear image of ``x`` carried through the iterations (``A x``): the method forms
        the images of its convex combinations without a new product."""

    @abc.abstractmethod
    def f_value(self, x: Array, ax: Array) -> Array:
        """``f(x)`` given ``ax = lin(x)``."""

    @abc.abstractmethod
    def f_grad(self, x: Array, ax: Array) -> tuple[Array, Array, PyTree]:
        """``(f(x), grad f(x), alpha(x))`` with ``alpha(x)`` the maximiser of ``phi(x, .)``."""

    @abc.abstractmethod
    def psi(self, x: Array) -> Array:
        """``Psi(x)`` for feasible ``x``."""

    @abc.abstractmethod
    def breg_prox(self, geom: str, kappa: Array, theta: Array, beta: Array) -> Array:
        """``argmin_x kappa d(x) - <theta, x> + beta Psi(x)``."""

    @abc.abstractmethod
    def certificate(self, x: Array, ax: Array, alpha_avg: PyTree) -> tuple[Array, Array, Array]:
        """``(primal, dual, gap)`` of the *original* (unsmoothed) problem, given the iterate and
        the averaged ``alpha`` (a dual run: ``alpha_avg`` is the reported primal ``w``)."""

    @abc.abstractmethod
    def residual(self, z: PyTree) -> PyTree:
        """Zero exactly at the optimum (implicit differentiation): ``z = x*`` for a primal run,
        an ``AGMSolution(alpha*, w*)`` for a dual run (then a pair is returned)."""

    # ---------------------------------------------------------------- optional hooks
    def check_data(self) -> None:
        """Checks of concrete data that :class:`~jaxprox.AGM` runs once per solve, before tracing
        (``ValueError`` when the model cannot be solved); default: none."""

    def x0_is_origin(self, geom: str, init) -> bool:
        """Whether :meth:`x0` is the origin when the code is traced (then ``lin(x0)`` is taken as
        zeros, no product: :func:`jaxprox.operators.linear_at`); default: not known, False."""
        return False

    def lipschitz_estimate(self, geom: str) -> Array:
        """A cheap estimate of the scale of :meth:`lipschitz` (the adaptive rule starts at
        ``1e-3`` times it); default: :meth:`lipschitz` itself."""
        return self.lipschitz(geom)

    def prox_hint(self, x0: Array) -> Array:
        """The first warm start of :meth:`breg_prox_warm`; default: a scalar zero of ``x0``'s
        dtype (unused by the default :meth:`breg_prox_warm`)."""
        return jnp.zeros((), x0.dtype)

    def breg_prox_warm(self, geom: str, kappa: Array, theta: Array, beta: Array,
                       hint: Array) -> tuple[Array, Array]:
        """:meth:`breg_prox` and the warm start of the next call (the solver carries it in its
        state); default: no warm start, ``(breg_prox(...), hint)``."""
        return self.breg_prox(geom, kappa, theta, beta), hint

    def certificate_L(self, x: Array, ax: Array, alpha_avg: PyTree, L: Array,
                      prim: Array | None = None, dual: Array | None = None) -> tuple[Array, Array, Array]:
        """:meth:`certificate` given the current Lipschitz estimate ``L_k`` and, after a
        :meth:`refine_primal`, the exact primal value ``prim`` of ``alpha_avg`` and the dual point
        ``dual`` paired with it (a further lower bound); default: none of them is used (the primal
        value is recomputed)."""
        return self.certificate(x, ax, alpha_avg)

    #: a dual run whose reported primal is exact on its active set and paired by
    #: :meth:`refine_primal` with its exact dual point, so that :meth:`residual` (an active-set KKT
    #: system) gives exact derivatives; models that provide both override it
    kkt_exact: ClassVar[bool] = False

    def refine_primal(self, w: Array, x: Array, best: Array, jbest: Array, dbest: Array,
                      t: Array) -> tuple[Array, Array, Array]:
        """A run on a dual: the primal point to report after the ``t``-th check, its exact
        objective and the dual point to report with it, given the current average ``w``, the
        iterate ``x`` and the previous ``(best, jbest, dbest)``; default: no refinement,
        ``(w, jbest, x)``. A model that overrides it sets ``has_primal_refinement = True``."""
        return w, jbest, x


class PrimalOrDualModel(AGMModel):
    """An AGM model with a strength ``lam`` (an array leaf) that is solved either in its primal
    (``space="primal"``, smoothing the risk: scheme 5.1.1) or on its dual (``space="dual"``:
    schemes 5.1.2 and 5.3, then :attr:`dual_run`)."""

    lam: eqx.AbstractVar[Array]
    space: eqx.AbstractVar[str]

    @property
    def dual_run(self) -> bool:
        return self.space == "dual"

    def with_lam(self, lam) -> "PrimalOrDualModel":
        """A copy with strength ``lam`` (an array leaf of the current one's dtype: no
        recompilation)."""
        return eqx.tree_at(lambda m: m.lam, self, jnp.asarray(as_leaf(lam, "lam"), self.lam.dtype))
