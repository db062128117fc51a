import os

os.environ.setdefault("XLA_FLAGS", "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1")

# One persistent compilation cache per xdist worker (jaxprox switches the cache on at import): the
# two workers would otherwise read and write one folder at once, and a worker once crashed
# (segfault) deserialising an entry of that shared folder while other processes compiled into it.
# Per worker, a second run of the suite on the same machine still finds its executables.
_worker = os.environ.get("PYTEST_XDIST_WORKER")
if _worker and not os.environ.get("JAXPROX_CACHE_DIR"):
    _base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    os.environ["JAXPROX_CACHE_DIR"] = os.path.join(_base, "jaxprox", f"xla-tests-{_worker}")

import jax  # noqa: E402

jax.config.update("jax_enable_x64", True)
