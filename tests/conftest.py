import os

# XLA's LLVM backend at optimisation level 0: most of the suite's time is compiling small solves
# that then run for milliseconds, and level 0 compiles them in about half the time (the same
# programs; the generated code is slower, and floating-point results can differ in the last bits:
# 1.4e-10 on an AGM solution, benchmarks/results/latency.md). The benchmarks, the demo and users
# get XLA's default level. JAXPROX_TEST_XLA_OPT=default runs the suite at the default level.
_flags = ["--xla_cpu_multi_thread_eigen=false"]
if os.environ.get("JAXPROX_TEST_XLA_OPT", "0") != "default":
    _flags.append("--xla_backend_optimization_level=0")
os.environ.setdefault("XLA_FLAGS", " ".join(_flags))
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


#: the files with the longest tests (8 s and more alone on the 2-core host; the longest first): they
#: run first, so that the two xdist workers end on short tests instead of one idling behind a long one
SLOW_FIRST = ("test_float32.py", "test_demo.py", "test_working_set.py", "test_block_fw.py",
              "test_closed_over_data.py", "test_multiprocess.py", "test_differentiation.py", "test_notebooks.py",
              "test_sklearn.py", "test_drsvm_barrier.py", "test_tracecache.py", "test_precision.py", "test_drsvm.py",
              "test_sharding.py", "test_prox_newton.py", "test_units_defaults.py")


def pytest_collection_modifyitems(config, items):
    """Move :data:`SLOW_FIRST` to the front, in its order; every file keeps its own order of tests
    (and its module-scoped fixtures run once per worker)."""
    rank = {name: i for i, name in enumerate(SLOW_FIRST)}
    items.sort(key=lambda item: rank.get(item.path.name, len(rank)))
