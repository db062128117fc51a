"""``Ahead``: work run in a background thread while the calling thread compiles."""
from __future__ import annotations

import threading

import jax


#: JAX's monitoring event recorded when an XLA compile starts (and, with its duration, when it ends)
_COMPILE_EVENT = "/jax/core/compile/backend_compile_duration"
_COMPILING: dict = {}  # thread id -> threading.Event, set when that thread starts an XLA compile


def _on_scalar_event(event, value, **kwargs):
    if event == _COMPILE_EVENT:
        started = _COMPILING.pop(threading.get_ident(), None)
        if started is not None:
            started.set()


class Ahead:
    """``work()`` run in a background thread from the moment the calling thread starts its next XLA
    compile: tracing and lowering, which hold the GIL, overlap the compile, which releases it and
    leaves a core idle through its serial passes. Used for the Jacobian an eager derivative needs
    after the solve (:class:`jaxprox.ImplicitAdjoint`), whose shapes are known before the solve
    runs. Best effort: ``work`` is skipped when the caller compiles nothing before :meth:`finish`
    (its computation was cached: the caller then does the work itself, on its values), when the
    caller is in a thread-local JAX configuration (a ``jax.enable_x64`` or ``jax.default_device``
    context) that the thread would not see, and any error in it is dropped (the later call does
    the work, and raises its own error)."""

    _listening = False
    _skip = False

    def __init__(self, work):
        try:
            from jax._src.config import trace_context

            context = trace_context()
        except Exception:  # pragma: no cover - another JAX: run nothing ahead
            trace_context, context = None, None
        self._start = threading.Event()
        if trace_context is not None and not Ahead._listening:
            jax.monitoring.register_scalar_listener(_on_scalar_event)
            Ahead._listening = True
        self._caller = threading.get_ident()
        _COMPILING[self._caller] = self._start

        def run():
            self._start.wait()
            try:
                if not self._skip and trace_context is not None and trace_context() == context:
                    work()
            except Exception:
                pass

        self._thread = threading.Thread(target=run, name="jaxprox-ahead", daemon=True)
        self._thread.start()

    def finish(self):
        """Wait for ``work`` if it has started; skip it if it has not."""
        self._skip = True
        if _COMPILING.get(self._caller) is self._start:
            _COMPILING.pop(self._caller, None)
        self._start.set()
        self._thread.join()
