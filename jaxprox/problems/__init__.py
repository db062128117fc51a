"""Problems: data + loss + penalty + constraint + hyperparameters, as pytrees (one module per
problem family). A problem knows no solver; it declares its structure through the abstract
bases of :mod:`jaxprox.problems.base`.

* :mod:`~jaxprox.problems.erm`: :class:`ERM`, regularised empirical risk minimisation.
* :mod:`~jaxprox.problems.bias_svm`: :class:`BiasSVM`, the SVM with an unregularised bias.
* :mod:`~jaxprox.problems.boosting`: :class:`ERLPBoost`, entropy-regularised LPBoost.
* :mod:`~jaxprox.problems.f1`: :class:`F1SVM`, the F1-score multivariate loss.
* :mod:`~jaxprox.problems.drsvm`: :class:`DRSVM`, the Wasserstein distributionally robust SVM.
"""
from .drsvm import DRSVM
from .base import AGMModel, Problem
from .bias_svm import BiasSVM
from .boosting import ERLPBoost
from .erm import ERM
from .f1 import F1SVM

__all__ = ["AGMModel", "BiasSVM", "DRSVM", "ERLPBoost", "ERM", "F1SVM", "Problem"]
