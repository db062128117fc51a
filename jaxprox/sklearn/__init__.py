"""scikit-learn compatible estimators around jaxprox solvers (needs scikit-learn installed).

Scaling. Every estimator maps scikit-learn's scaling to the papers' ``(1/n) sum loss + lam R``:
scikit-learn minimises ``C sum_i loss_i + R(w)``, which is ``n C`` times
``(1/n) sum_i loss_i + lam R(w)`` with ``lam = 1 / (n C)``; both have the same minimiser.

Labels. Any labels (``classes_``). Two classes are one problem with labels in {-1, +1}; ``K > 2``
classes are, for ``LogisticRegression`` and ``LogisticRegressionCV``, one multinomial model
(``multi_class="auto"``) and otherwise ``K`` one-vs-rest problems (class ``k`` against the others)
solved in ONE batched call (``jax.vmap`` over the ``K`` label vectors, one compiled solve for all
classes).
An intercept, when asked for, is a constant feature of value ``intercept_scaling`` and is
penalised like the other weights (liblinear's convention).

Convergence. Each fit stops when its solver's certificate, a duality gap, satisfies
``gap <= tol |primal|`` (relative) for every class; ``converged_``, ``n_iter_`` (the solver's
steps, the most over the classes), ``gap_`` and ``objective_`` (one entry per one-vs-rest
problem) report it, and a fit that stops short raises scikit-learn's
:class:`sklearn.exceptions.ConvergenceWarning`.

Precision. The estimators never change JAX's global settings. They solve in the floating type JAX
allows: float64 when the user enabled ``jax_enable_x64``, float32 otherwise; in float32 the
relative tolerance is raised to at least :data:`FLOAT32_TOL` (a float32 duality gap is only
accurate to a few units of ``1e-6`` relative), and the coefficients are returned as float64
NumPy arrays in both cases.

Compilation. The solve of each estimator is one module-level compiled function, keyed on the
array shapes, the solver's settings and the problem's structure: ``C`` (and ``epsilon``,
``kappa``, ``radius``) are traced values, so refitting with a new ``C`` on data of the same shape
reuses the compiled code, and ``import jaxprox`` switches on JAX's persistent compilation cache
and the cache of traced solves (:mod:`jaxprox._compile.tracecache`), so worker processes (``n_jobs``) and
later processes load the solve from disk instead of tracing and compiling it again. The ERM
estimators (SVM, logistic, sparse) also pad the rows to a size bucket (:func:`jaxprox.sklearn._base._bucket`: 512 rows for
small data, at most 1/8 more rows above), so that the training folds of a cross-validation and
the final refit share one compiled solve. A padded row is zero, with label +1: it adds the constant
``l(0)`` to the sum of losses and nothing else, and at the dual point ``u = l'(0)`` nothing to the
gap (Fenchel-Young holds with equality). With ``N`` rows in all,

    (1/N) sum_{i <= N} l_i + lam' R  =  (n/N) [ (1/n) sum_{i <= n} l_i + lam R ] + (N-n)/N l(0),
    lam' = lam n / N,

so the padded problem has the same minimisers; its constant is removed by ``ERM(offset=...)``
and its objective and gap are rescaled by ``N/n`` when reported.
"""
from ._base import FLOAT32_TOL
from .logistic import LogisticRegression, LogisticRegressionCV
from .svm import DRSVMClassifier, SparseClassifier, SVMClassifier

__all__ = ["SVMClassifier", "LogisticRegression", "LogisticRegressionCV", "SparseClassifier", "DRSVMClassifier",
           "FLOAT32_TOL"]
