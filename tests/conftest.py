import os

# The suite is compile-bound: XLA:CPU's LLVM backend at -O0 compiles about a third faster
# (tests/test_agm.py: 134 -> 94 s on 2 workers) and the tests' solves are small, so the slower
# code costs less than it saves. Results differ at most at rounding level (no fast-math either way).
os.environ.setdefault("XLA_FLAGS", "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1 "
                                   "--xla_backend_optimization_level=0")

import jax  # noqa: E402

jax.config.update("jax_enable_x64", True)
