"""``compiled``: ``jit`` with jaxprox's XLA options at the top level, plain inside a user's
transformation, and through the cache of traced solves where asked."""
from __future__ import annotations

import functools

import equinox as eqx
import jax
import numpy as np

from . import tracecache
from .levels import _top_level
from .options import COMPILER_OPTIONS, rejects_option


#: concrete arrays of at least this many entries reach a call inside a user's ``jit`` as inputs
OPAQUE_SIZE = 1024


def _opaque(args):
    """``args`` with the concrete arrays of ``OPAQUE_SIZE`` entries or more passed through
    ``lax.optimization_barrier``: inside a user's ``jit`` that closes over the data, XLA then sees
    them as inputs of the solve rather than constants, and does not fold the solve's products of
    them at compile time (folding ``X^T X`` of a closed-over ``X`` took seconds to minutes and
    logged errors)."""
    leaves, treedef = jax.tree_util.tree_flatten(args)
    idx = [i for i, x in enumerate(leaves) if isinstance(x, (np.ndarray, jax.Array))
           and not isinstance(x, jax.core.Tracer) and np.size(x) >= OPAQUE_SIZE]
    if not idx:
        return args
    for i, x in zip(idx, jax.lax.optimization_barrier([leaves[i] for i in idx])):
        leaves[i] = x
    return jax.tree_util.tree_unflatten(treedef, leaves)


def compiled(fun=None, jit=None, *, extra_options=None, trace_cache=False, **jit_kwargs):
    """``jit(fun, **jit_kwargs)`` (default ``equinox.filter_jit``) compiled with
    :data:`COMPILER_OPTIONS` (and ``extra_options``, unless ``JAXPROX_FAST_COMPILE=0`` left XLA's
    defaults) when it is compiled as a top-level computation (a plain call, or under an eager
    ``jax.vmap`` / ``jax.jvp`` / ``jax.jacfwd``: :func:`_top_level`), and plain inside the
    user's own ``jit`` or a ``jax.grad`` (where the outer transformation compiles it). With
    ``trace_cache``, a top-level call on concrete values goes through :mod:`jaxprox._compile.tracecache`
    (a later process skips the tracing). Without ``fun``: a decorator with these settings."""
    if fun is None:
        return functools.partial(compiled, jit=jit, extra_options=extra_options, trace_cache=trace_cache,
                                 **jit_kwargs)
    jit = jit or eqx.filter_jit
    nested = jit(fun, **jit_kwargs)
    options = {**COMPILER_OPTIONS, **(extra_options or {})} if COMPILER_OPTIONS else {}
    try:
        top = jit(fun, compiler_options=options, **jit_kwargs) if options else nested
    except TypeError:  # a JAX whose jit takes no compiler options
        top = nested
    use = {"top": top}
    qualified = f"{fun.__module__}.{fun.__qualname__}"

    def at_top(*args, **kwargs):
        """Compile with the options: for a caller that knows the call is evaluated eagerly (concrete
        arguments under an eager ``jax.grad`` / ``jax.jvp``, which evaluate such a call directly)."""
        if trace_cache and not kwargs:
            return tracecache.call(fun, qualified, args, options if use["top"] is not nested else {}, plain_top)
        return plain_top(*args, **kwargs)

    def plain_top(*args, **kwargs):
        if use["top"] is not nested:
            try:
                return use["top"](*args, **kwargs)
            except Exception as err:
                if "compiler_options" in str(err):  # a trace that stages the call after all
                    return nested(*args, **kwargs)
                if not rejects_option(err, options):
                    raise
                use["top"] = nested  # an XLA that does not know an option: its defaults from now on
        return nested(*args, **kwargs)

    def prepare(*args):
        """Trace, lower and compile ``fun`` as :func:`at_top` would for arguments whose arrays may
        be ``jax.ShapeDtypeStruct`` leaves, so that a later ``at_top`` call on arrays of those
        shapes runs at once (its trace, lowering and compile found in JAX's caches or the trace
        cache): work done before the values exist (:class:`Ahead`)."""
        if trace_cache:
            if tracecache.prepare(fun, qualified, args, options if use["top"] is not nested else {}):
                return
        def lower_and_compile(shaped):  # the shapes as tracers: arrays to equinox's filter
            use["top"].lower(*eqx.combine(shaped, rest)).compile()

        shapes, rest = eqx.partition(args, lambda x: isinstance(x, jax.ShapeDtypeStruct))
        jax.eval_shape(lower_and_compile, shapes)

    @functools.wraps(fun)
    def call(*args, **kwargs):
        return at_top(*args, **kwargs) if _top_level() else nested(*_opaque(args), **kwargs)

    call.nested, call.top, call.at_top, call.prepare = nested, top, at_top, prepare
    return call
