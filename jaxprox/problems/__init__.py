"""Problems: data + loss + penalty + constraint + hyperparameters, as pytrees; one module per
problem family (DESIGN.md): :mod:`.erm` (regularised empirical risk), :mod:`.drsvm`
(Wasserstein distributionally robust SVM)."""
from .drsvm import DRSVM
from .erm import ERM

__all__ = ["DRSVM", "ERM"]
