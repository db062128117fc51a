"""Methods the papers compare against: FISTA (foundation), subgradient
descent, FOBOS, RDA, Nesterov-smoothed AGD and Pegasos (Pdprox paper), Frank-Wolfe and
accelerated projected gradient (block FW paper), SGD (APPA paper), GS-ADMM (DRSVM paper); and
ProxNewton, the second-order reference of the path benchmarks (liblinear's model)."""
from .fista import FISTA
from .frank_wolfe import AcceleratedPG, FrankWolfe
from .gsadmm import GSADMM
from .prox_newton import ProxNewton
from .sgd import SGD
from .stochastic_cg import SCGS, STORC, ProjectedSVRG
from .subgradient import AGD, FOBOS, RDA, Pegasos, SubgradientDescent

__all__ = ["AGD", "AcceleratedPG", "FISTA", "FOBOS", "FrankWolfe", "GSADMM", "Pegasos", "ProxNewton", "RDA", "SGD",
           "SubgradientDescent"]
__all__ += ["ProjectedSVRG", "SCGS", "STORC"]  # the PD block Frank-Wolfe paper's stochastic baselines
