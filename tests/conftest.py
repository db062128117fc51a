import os

os.environ.setdefault("XLA_FLAGS", "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1")
# One BLAS thread per process: the suite runs two xdist workers on two cores, and the LAPACK calls
# (jaxlib's CPU kernels come from scipy's OpenBLAS) and the references' BLAS (cvxpy, scikit-learn,
# numpy) otherwise start a thread per core in each worker and spin against each other (a
# DRSVMBarrier solve measured 0.4 s alone took 8 s beside a busy worker after cvxpy's import).
for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")
try:  # numpy (and its BLAS) is loaded by pytest's plugins before this file: limit it at run time
    from threadpoolctl import threadpool_limits

    threadpool_limits(1)
except ImportError:  # scikit-learn brings threadpoolctl; without it the variables above still hold
    pass            # for the libraries loaded later (scipy's OpenBLAS, which jaxlib's LAPACK uses)

# The suite runs without JAX's persistent compilation cache (jaxprox switches it on at import
# unless JAXPROX_COMPILATION_CACHE=0): twice on this 2-core machine, under heavy load from other
# processes, a worker died inside JAX's cache (a segfault deserialising an entry, an abort
# serialising one; the same test both times, which passes alone with a cold and a warm cache). CI
# starts from an empty cache anyway. Set JAXPROX_COMPILATION_CACHE=1 to run with it.
os.environ.setdefault("JAXPROX_COMPILATION_CACHE", "0")

import jax  # noqa: E402

jax.config.update("jax_enable_x64", True)


import pytest  # noqa: E402


@pytest.fixture(autouse=True, scope="module")
def _release_compiled_executables():
    """Free the module's compiled executables when it ends: an xdist worker that kept every
    executable of the suite alive crashed late in its life inside XLA (compile or cache; a limit on
    live executables' mappings is the likely cause)."""
    yield
    jax.clear_caches()
