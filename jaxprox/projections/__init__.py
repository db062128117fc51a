"""Euclidean projections as plain functions: boxes, simplices, norm balls, ball/box with a
hyperplane, the trace-norm ball, and the epigraphs (cones) of the l1, l2 and linf norms.

Every function computes an ``argmin_{y in C} 1/2 ||y - x||^2`` in closed form, by a sort, or
by a scalar root (:mod:`jaxprox.roots`) followed by an exact *polish*: once the multiplier
identifies the active set, the multiplier is recomputed from the (linear) optimality equation
on that set, so root-based answers are exact to rounding whatever the root tolerance. The
multiplier returned by the root finder is not differentiated (``stop_gradient``); derivatives
flow through the polish formula, which is the implicit-function derivative.

All functions are jit/vmap-safe (no Python control flow on traced values), NaN-free at zero
(guarded norms and divisions, double ``where``) and have finite derivatives at zero and at
ties (one-sided derivatives at the kinks).

Paper sections:

* l1 / simplex / capped simplex: the Pdprox paper (Lemma 13, Remark 14; Duchi et al. 2008);
* box + hyperplane: the AGM-EF paper, section 3.4 (Algorithms 7/8 and an exact sort version);
* epigraph projections, secant root, ball + hyperplane: the Wasserstein DRSVM paper (epigraph
  projections and the modified secant method).

The functions live in :mod:`~jaxprox.projections.norm_balls`, :mod:`~jaxprox.projections.epigraphs`
and :mod:`~jaxprox.projections.dual_sets`; they are documented and used as ``jaxprox.projections.f``.
"""
from __future__ import annotations

from ._common import (_METHODS, _safe_div, _safe_norm, _threshold_residual, _threshold_sort,  # noqa: F401
                      soft_threshold)  # the private names: used by jaxprox.constraints, tests and benchmarks
from .dual_sets import capped_softmax, project_elastic_net_ball, q2_project
from .epigraphs import epigraph_l1, epigraph_l2, epigraph_linf, epigraph_scaled, epigraph_weighted
from .norm_balls import (box, box_hyperplane, capped_simplex, l1_ball, l2_ball, l2_ball_hyperplane, linf_ball, simplex,
                         trace_ball, weighted_l1_ball)

__all__ = [
    "box",
    "simplex",
    "capped_simplex",
    "box_hyperplane",
    "l1_ball",
    "weighted_l1_ball",
    "l2_ball",
    "linf_ball",
    "trace_ball",
    "l2_ball_hyperplane",
    "epigraph_l2",
    "epigraph_l1",
    "epigraph_linf",
    "epigraph_scaled",
    "epigraph_weighted",
    "soft_threshold",
    "q2_project",
    "capped_softmax",
    "project_elastic_net_ball",
]

for _name in __all__:  # documented as jaxprox.projections.f (numpy's convention for re-exported names)
    try:
        globals()[_name].__module__ = __name__
    except (AttributeError, TypeError):  # a compiled function keeps its own
        pass
del _name
