"""How jaxprox compiles and caches: the XLA options of everything it compiles itself
(:mod:`.options`), ``compiled`` (:mod:`.jit`), the level a call is traced at (:mod:`.levels`),
work run ahead in a thread while a compile runs (:mod:`.ahead`), process-global caches
(:mod:`.caches`) and the cache of traced solves across processes (:mod:`.tracecache`).

This package is the only part of jaxprox that reads JAX internals (``jax._src``); the rest of
the library uses the names below.
"""
from .ahead import Ahead
from .caches import once_per_data, structure
from .jit import compiled
from .levels import _top_level, at_eval_level
from .options import COMPILER_OPTIONS, import_lapack, rejects_option, use_persistent_cache

__all__ = ["Ahead", "COMPILER_OPTIONS", "_top_level", "at_eval_level", "compiled", "import_lapack",
           "once_per_data", "rejects_option", "structure", "use_persistent_cache"]
