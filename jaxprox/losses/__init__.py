"""Per-sample losses on margins ``z = A w`` with their Fenchel conjugates (:class:`jaxprox.base.Loss`).

Convention (``jaxprox.base``): the conjugate is taken in the margin,

    l(z, y) = sup_u  u z - l*(u, y),        l*(u, y) = sup_z  u z - l(z, y)  (+inf off its domain),

and the empirical risk is ``(1/n) sum_i l(z_i, y_i)``. For classification losses (labels
``y in {-1, +1}``) the dual variable is written ``u = -y s``; ``s`` is the papers' dual variable
``alpha`` (Yang et al., Pdprox, Zhang et al., AGM-EF, Frostig et al., "Un-regularizing"), so
the domains below read as boxes in ``s``:

=========================  ================================  ====================================
loss ``l(z, y)``           ``l*(u, y)``                      domain of ``l*``
=========================  ================================  ====================================
hinge                      ``y u  (= -s)``                   ``s = -y u in [0, 1]``
generalized hinge(a)       ``max(y u, -1)  (= -min(s, 1))``  ``s in [0, a]``
absolute                   ``y u``                           ``|u| <= 1``
eps-insensitive            ``y u + eps |u|``                 ``|u| <= 1``
quantile(tau)              ``y u``                           ``u in [-tau, 1 - tau]``
smoothed hinge(mu)         ``-s + mu s^2 / 2``               ``s in [0, 1]``
Huber(mu)                  ``y u + mu u^2 / 2``              ``|u| <= 1``
squared hinge              ``-s + s^2 / 4``                  ``s >= 0``
squared                    ``u^2 / 2 + y u``                 ``R``
logistic                   ``s log s + (1-s) log(1-s)``      ``s in [0, 1]``
multi-output l2            ``<u_i, y_i>``                    ``||u_i||_2 <= 1`` per row
budget hinge(m)            ``y u`` summed                    ``s in [0,1]^n, sum s <= m``
=========================  ================================  ====================================

Every method is elementwise (rows for the multi-output loss), jit/vmap-safe and NaN-free at the
kinks. Domain membership is tested with a slack of a few ulps, so a point produced by
``project_dual`` always has a finite conjugate. Hyperparameters are array leaves (``as_leaf``).

The classes live in :mod:`~jaxprox.losses.classification` and :mod:`~jaxprox.losses.regression`
(Nesterov's smoothing of any loss in :mod:`~jaxprox.losses._common`);
they are documented and used as ``jaxprox.losses.X``.
"""
from __future__ import annotations

from .classification import BudgetHinge, GeneralizedHinge, Hinge, Logistic, SmoothedHinge, SquaredHinge, ThresholdHinge
from ._common import NesterovSmoothed
from .multiclass import Multinomial
from .regression import Absolute, EpsilonInsensitive, Huber, MultiOutputL2, Quantile, Squared

__all__ = [
    "Hinge",
    "GeneralizedHinge",
    "Absolute",
    "EpsilonInsensitive",
    "Quantile",
    "SmoothedHinge",
    "Huber",
    "SquaredHinge",
    "Squared",
    "Logistic",
    "MultiOutputL2",
    "Multinomial",
    "BudgetHinge",
    "ThresholdHinge",
    "NesterovSmoothed",
]

for _name in __all__:  # documented as jaxprox.losses.X (numpy's convention for re-exported names)
    globals()[_name].__module__ = __name__
del _name
