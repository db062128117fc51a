"""Mini-batches of disjoint rows for the dual coordinate methods: the ESO factor of a batch
(Richtárik & Takáč, "Parallel coordinate descent methods for big data optimization"; Takáč,
Bijral, Richtárik & Srebro, "Mini-batch primal and dual methods for SVMs") and the automatic batch
size of :class:`jaxprox.solvers.sdca.SDCAEpochs` on an accelerator."""
from __future__ import annotations

import jax.numpy as jnp

from ..operators import largest_eigenvalue


def row_normalised_sigma(A, iters: int = 30):
    """``sigma = lambda_max(D^{-1/2} A A^T D^{-1/2})``, ``D = diag(||a_i||^2)`` (zero rows dropped):
    the squared spectral norm of the row-normalised data, ``1 <= sigma <= n`` (``1``: orthogonal
    rows, ``n``: all rows parallel), as the largest eigenvalue of ``A^T D^{-1} A``
    (:func:`jaxprox.operators.largest_eigenvalue`: exact from that Gram matrix for ``d <=``
    :func:`~jaxprox.operators.exact_eig_side` ``(iters)``, else ``iters`` power iterations, whose
    estimate converges from below);
    :func:`jaxprox.solvers.sdca.sdca_minibatch_epoch` is monotone for any value, an underestimate only makes its
    step-length safeguard act more often."""
    rn = A.row_norms_sq()
    inv = jnp.where(rn > 0, 1.0 / jnp.where(rn > 0, rn, 1.0), 0.0)
    return jnp.clip(largest_eigenvalue(A, iters, 0, inv), 1.0, A.n)


def eso_beta(batch: int, sigma, n: int):
    """ESO factor of ``batch``-nice sampling (Richtárik & Takáč, "Parallel coordinate descent
    methods for big data optimization"; Takáč et al., "Mini-batch primal and dual methods for
    SVMs", their ``beta_b``): ``1 + (b - 1)(sigma - 1)/(n - 1)``, between ``1`` (orthogonal rows)
    and ``b`` (parallel rows), so that ``E_S ||sum_{i in S} a_i h_i||^2 <= beta
    E_S sum_{i in S} ||a_i||^2 h_i^2`` over uniformly random batches ``S`` of size ``b``."""
    if batch <= 1 or n <= 1:
        return 1.0 + 0.0 * sigma
    return 1.0 + (batch - 1) * (sigma - 1.0) / (n - 1)


#: ``batch="auto"`` on an accelerator: the largest power of two ``b <= min(n, AUTO_MAX_BATCH)``
#: whose ESO factor is at most ``AUTO_BETA`` (:func:`auto_batch_size`)
AUTO_BETA = 8.0
AUTO_MAX_BATCH = 256


def auto_batch_size(n: int, sigma: float | None) -> int:
    """Largest power of two ``b <= min(n, AUTO_MAX_BATCH)`` with ``eso_beta(b, sigma, n) <=
    AUTO_BETA``; ``sigma = None`` (data traced, not measurable before tracing) is taken as its
    worst case ``n`` (then ``beta_b = b`` and ``b = 8``). ``AUTO_BETA = 8`` bounds the growth of the
    epoch count over the sequential method by about 8 in the worst (ill-conditioned) case while
    cutting the dependent steps per epoch from ``n`` to ``n / b`` (b = 8-64 on the datasets of
    the mini-batch benchmark, where the choice is measured)."""
    sigma = float(n) if sigma is None else float(sigma)
    b = 1
    while 2 * b <= min(n, AUTO_MAX_BATCH) and float(eso_beta(2 * b, sigma, n)) <= AUTO_BETA:
        b *= 2
    return b
