"""Components: the small objects and shared pieces from which solvers are built (sampling laws,
mini-batches, epoch budgets, proximal-point sub-problems; the outer certificates are
:mod:`jaxprox.certificates`). A component knows
no solver class; a solver takes components as options instead of string flags."""
