"""At which level of JAX's tracing a call runs: a top-level compile (where XLA options apply), or
inside a transformation that stages it."""
from __future__ import annotations

import contextlib


def _top_level() -> bool:
    """True when the call will be compiled as a top-level ``jit`` (JAX accepts XLA options only
    there): no transformation is tracing, or only eager ``vmap`` / forward-mode ``jvp`` ones
    (``jax.vmap``, ``jax.jacfwd`` called outside any ``jit``). Under a ``jit``, ``grad`` (a
    linearisation) or any other staging trace: False."""
    try:
        from jax._src import core

        if core.trace_state_clean():
            return True
        t = core.trace_ctx.trace
        while type(t).__name__ in ("BatchTrace", "JVPTrace"):
            t = t.parent_trace
        return isinstance(t, core.EvalTrace)
    except Exception:  # pragma: no cover - another JAX: the plain path
        return False


def at_eval_level():
    """A context in which JAX evaluates eagerly, outside any transformation in progress (no
    constant folding of traced code, unlike ``jax.ensure_compile_time_eval``): a compiled call on
    concrete values made inside an eager ``jax.jacfwd`` / ``jax.grad`` then finds the plain call's
    compiled executable instead of compiling again for the transformation's context. A no-op on a
    JAX without ``jax._src.core.eval_context``."""
    try:
        from jax._src.core import eval_context

        return eval_context()
    except Exception:  # pragma: no cover - another JAX
        return contextlib.nullcontext()
