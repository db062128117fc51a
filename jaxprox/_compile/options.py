"""XLA options of everything jaxprox compiles itself, and JAX's persistent compilation cache."""
from __future__ import annotations

import os

import jax


def _compiler_options() -> dict:
    """XLA options for every function jaxprox compiles itself (the solve, the estimators' batched
    fits, eager projections and root finders), both for XLA:CPU's compile time at the same run time
    (``benchmarks/results/compile_options.md``):

    * its legacy LLVM emitter instead of the MLIR fusion emitters;
    * without its ``tree_reduction_rewriter`` pass, which splits every reduction over 33 to about
      8,000 elements into a ``reduce-window`` of 32-element partial sums and a second reduction.
      The ``reduce-window`` is a kernel of its own, compiled by LLVM apart from the loop that
      computes the terms, and a solve holds one per sum over the samples. Without the pass the sum
      is one vectorised loop inside that kernel; its rounding stays at the float32 resolution
      (the same file measures both), and longer reductions are not rewritten by XLA at all.

    GPU backends ignore both (their tree-reduction pass is ``tree-reduction-rewriter``).
    ``JAXPROX_FAST_COMPILE=0`` leaves XLA's defaults."""
    if os.environ.get("JAXPROX_FAST_COMPILE", "1").lower() in ("0", "false", "off", "no"):
        return {}
    return {"xla_cpu_use_fusion_emitters": False, "xla_disable_hlo_passes": "tree_reduction_rewriter"}


COMPILER_OPTIONS = _compiler_options()


def rejects_option(err: Exception, options: dict) -> bool:
    """Whether ``err`` is XLA refusing one of the compiler ``options`` (an XLA that does not know
    it): the caller then compiles with XLA's defaults."""
    return any(name in str(err) for name in options)


def use_persistent_cache() -> None:
    """Switch on JAX's persistent compilation cache in a per-user folder, so that a second process
    reuses the compiled solvers instead of compiling them again (``$JAXPROX_CACHE_DIR``, default
    ``$XDG_CACHE_HOME/jaxprox/xla`` or ``~/.cache/jaxprox/xla``); called once by ``import jaxprox``.
    Set ``JAXPROX_COMPILATION_CACHE=0`` to leave JAX's settings alone; a cache folder the user
    configured is never replaced. The traced solves (:mod:`jaxprox._compile.tracecache`) are kept
    in ``jaxprox-traced/`` inside that folder."""
    if os.environ.get("JAXPROX_COMPILATION_CACHE", "1").lower() in ("0", "false", "off", "no"):
        return
    if jax.config.jax_compilation_cache_dir:
        return
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    jax.config.update("jax_compilation_cache_dir",
                      os.environ.get("JAXPROX_CACHE_DIR") or os.path.join(base, "jaxprox", "xla"))
    if jax.config.jax_persistent_cache_min_compile_time_secs == 1.0:  # JAX's default: too coarse here
        jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.2)


def import_lapack() -> None:
    """Import ``scipy.linalg`` now: jaxlib reads its LAPACK routines from it the first time a
    LAPACK call (Cholesky, eigh, least squares: ProxNewton, DRSVMBarrier, AGM's and SDCA's
    polishes, Dual APPA's certificate, a derivative's solve) is lowered, and that import costs
    0.1-0.15 s more inside the first lowering than here (0.05 s; ``benchmarks/results/latency.md``)."""
    try:
        import scipy.linalg  # noqa: F401
    except ImportError:  # pragma: no cover - jax requires scipy
        pass
