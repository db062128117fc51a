"""A cache of *traced* solves across processes (a warm start skips the tracing too).

JAX's persistent compilation cache (switched on by :mod:`jaxprox`) skips XLA's compile in a second
process, but not the Python tracing and lowering of the solve, which is most of what a warm first
solve costs (``benchmarks/results/latency.md``). This module keeps, next to JAX's cache, the
solve's lowered StableHLO serialised by :mod:`jax.export`: a later process with the same solve
deserialises it and runs it, its compile found in JAX's cache, without tracing.

A solve is cached only when every part of its key is known to determine its trace:

* every static (non-array) part of the arguments is a Python scalar, string, ``None``, a
  container of these, a dtype, or an object, class or module-level function defined by jaxprox
  (or a JAX / NumPy function); anything else (a user's loss class, a ``lambda``, a closure) makes
  the solve uncacheable, and it runs as before;
* the arrays' shapes, dtypes and weak types;
* the hash of jaxprox's source files, the JAX and jaxlib versions, the backend and device kind,
  ``jax_enable_x64`` and the other configuration that changes a trace, and the XLA options.

Only a call on concrete values at the top level is cached (a plain :func:`jaxprox.solve`, a
:func:`jaxprox.solve_path`, an estimator's fit, and the forward solve and solution Jacobian of an
eager ``jax.grad`` / ``jax.jacfwd``, the Jacobian prepared from its shapes by :func:`prepare`
while the solve compiles); inside a user's ``jit`` or ``vmap`` the user's transformation traces
as always, and under ``jax_disable_jit``, ``jax_debug_nans`` /
``jax_debug_infs`` or ``jax_enable_checks`` nothing is cached. A stored module returns the same
results as the plain compiled call, bit for bit (the same lowered computation).

The cache lives in ``jaxprox-traced/`` inside JAX's compilation cache folder, so it is on
exactly when that cache is (``JAXPROX_COMPILATION_CACHE=0`` turns both off), and
``JAXPROX_TRACE_CACHE=0`` turns off this one alone. Serialisation needs ``flatbuffers``; without
it nothing is cached. Files are written atomically and read only from the user's own cache
folder (their non-array parts are pickled, as JAX's own cache trusts its folder).
"""
from __future__ import annotations

import dataclasses
import enum
import functools
import hashlib
import os
import pickle
import types

import equinox as eqx
import jax
import numpy as np

from .options import rejects_option

#: what the cache did in this process (tests and benchmarks read it)
STATS = {"hits": 0, "misses": 0, "writes": 0, "uncacheable": 0, "failed": 0}

_FORMAT = 1
_OFF = ("0", "false", "off", "no")
_MEMO: dict = {}  # key -> (exported module, its jitted call, output skeleton), or False: run plainly
_LIBRARIES = ("jaxprox", "jax", "jaxlib", "numpy", "builtins", "math", "operator")
#: JAX settings under which nothing is cached (they debug the trace itself)
_DEBUGGING = ("jax_disable_jit", "jax_debug_nans", "jax_debug_infs", "jax_enable_checks")
#: JAX settings that change what a trace produces (the debugging ones are off whenever a key is made)
_CONFIG = ("jax_enable_x64", "jax_default_device", "jax_default_matmul_precision", "jax_numpy_dtype_promotion",
           "jax_numpy_rank_promotion", "jax_default_prng_impl")


class _Uncacheable(Exception):
    """A static part of the arguments whose effect on the trace the key cannot capture."""


@dataclasses.dataclass(frozen=True)
class _Slot:
    """Where an output array goes in the pickled skeleton of the outputs."""

    index: int


def folder() -> str | None:
    """The cache folder, or ``None`` when the cache is off (see the module docstring)."""
    if os.environ.get("JAXPROX_TRACE_CACHE", "1").lower() in _OFF:
        return None
    root = jax.config.jax_compilation_cache_dir
    if not root or not _can_serialise():
        return None
    return os.path.join(root, "jaxprox-traced")


@functools.lru_cache(maxsize=None)
def _can_serialise() -> bool:
    try:
        import flatbuffers  # noqa: F401  (jax.export's serialisation format)
    except ImportError:
        return False
    return hasattr(jax, "export") and hasattr(jax.export, "deserialize")


@functools.lru_cache(maxsize=None)
def _source_hash() -> str:
    """Hash of every Python file of the installed jaxprox: a changed library never hits."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # the jaxprox package
    h = hashlib.sha256()
    for base, dirs, files in os.walk(root):
        dirs.sort()
        for name in sorted(files):
            if name.endswith(".py"):
                path = os.path.join(base, name)
                h.update(os.path.relpath(path, root).encode())
                with open(path, "rb") as f:
                    h.update(f.read())
    return h.hexdigest()


@functools.lru_cache(maxsize=None)
def _versions() -> tuple:
    import jaxlib

    return _FORMAT, _source_hash(), jax.__version__, jaxlib.__version__, eqx.__version__, np.__version__


def _environment(device, options: dict) -> str:
    """Everything outside the arguments that changes the trace or the compiled module."""
    config = tuple(str(getattr(jax.config, name, None)) for name in _CONFIG)
    return repr((_versions(), device.platform, getattr(device, "device_kind", ""), config, sorted(options.items())))


def _device(leaves: list):
    """The one device that holds the array arguments (the default device when none is a JAX
    array), or ``None`` when they sit on several devices (not cached)."""
    devices = set()
    for x in leaves:
        if isinstance(x, jax.Array):
            devices.update(x.devices())
    if len(devices) > 1:
        return None
    if devices:
        return devices.pop()
    default = jax.config.jax_default_device
    if default is None or isinstance(default, str):
        return jax.devices(default)[0] if default else jax.devices()[0]
    return default


def _named(obj) -> str:
    """``module.qualname`` of a class or function a library defines at module level."""
    module = getattr(obj, "__module__", None) or ""
    qualname = getattr(obj, "__qualname__", None) or ""
    if module.split(".")[0] not in _LIBRARIES or not qualname or "<" in qualname:
        raise _Uncacheable(repr(obj))
    return f"{module}.{qualname}"


def _token(obj, out: list) -> None:
    """Append a canonical description of a static value to ``out`` (raise when it has none)."""
    t = type(obj)
    if obj is None or t in (bool, int, float, complex, str, bytes):
        out.append(f"{t.__name__}:{obj!r}")
    elif isinstance(obj, _Aval):
        out.append(repr(obj))
    elif t in (tuple, list):
        out.append(f"{t.__name__}[")
        for item in obj:
            _token(item, out)
        out.append("]")
    elif t is dict:
        out.append("dict{")
        for k in sorted(obj, key=repr):
            _token(k, out)
            _token(obj[k], out)
        out.append("}")
    elif isinstance(obj, np.dtype) or (isinstance(obj, type) and issubclass(obj, np.generic)):
        out.append(f"dtype:{np.dtype(obj)}")
    elif isinstance(obj, np.generic):
        out.append(f"{obj.dtype}:{obj.item()!r}")
    elif isinstance(obj, (type, types.FunctionType, types.BuiltinFunctionType, np.ufunc)):
        out.append(_named(obj))
    elif isinstance(obj, functools.partial):
        out.append("partial(")
        _token((obj.func, obj.args, dict(obj.keywords)), out)
        out.append(")")
    elif isinstance(obj, enum.Enum):
        out.append(f"{_named(t)}.{obj.name}")
    elif isinstance(obj, eqx.Module) and t.__module__.split(".")[0] == "jaxprox":
        out.append(f"{_named(t)}(")
        for f in dataclasses.fields(obj):
            out.append(f"{f.name}=")
            _token(getattr(obj, f.name, None), out)
        out.append(")")
    else:
        raise _Uncacheable(f"{t.__module__}.{t.__qualname__}")


@dataclasses.dataclass(frozen=True)
class _Aval:
    """An array argument in the key: its shape, dtype and weak type."""

    shape: tuple
    dtype: np.dtype
    weak: bool


def _aval(x) -> _Aval:
    return _Aval(tuple(x.shape), np.dtype(x.dtype), bool(getattr(x, "weak_type", False)))


def _is_array(x) -> bool:
    """An array argument: a concrete array, or the shape of one (:func:`prepare`)."""
    return eqx.is_array(x) or isinstance(x, jax.ShapeDtypeStruct)


_KEYS: dict = {}  # in-process memo of key(): a call's structure (as jit's cache sees it) -> its key
_KEYS_MAX = 4096


def key(name: str, args: tuple, options: dict) -> str | None:
    """The cache key of ``name(*args)``, or ``None`` when the call cannot be cached. Computed once
    per structure in a process (the arguments' treedef, their non-array leaves and the arrays'
    shapes and dtypes, as ``jax.jit``'s own cache tells calls apart), so that a warm call pays a
    dictionary lookup, not the walk over its static parts."""
    leaves, treedef = jax.tree_util.tree_flatten(args)
    if any(isinstance(x, jax.core.Tracer) for x in leaves):
        return None
    device = _device(leaves)
    if device is None:
        return None
    try:
        seen = (name, treedef, tuple(_aval(x) if _is_array(x) else (type(x), x) for x in leaves), device,
                tuple(getattr(jax.config, c, None) for c in _CONFIG), tuple(sorted(options.items())))
        hash(seen)
    except TypeError:  # an unhashable leaf: describe the call every time
        seen = None
    if seen is not None and seen in _KEYS:
        return _KEYS[seen]
    skeleton = jax.tree_util.tree_unflatten(treedef, [_aval(x) if _is_array(x) else x for x in leaves])
    out = [name]
    try:
        _token(skeleton, out)
        out.append(_environment(device, options))
        k = hashlib.sha256("\x1f".join(out).encode()).hexdigest()
    except _Uncacheable:
        k = None
    if seen is not None:
        if len(_KEYS) >= _KEYS_MAX:
            _KEYS.clear()
        _KEYS[seen] = k
    return k


def _where_and_key(name: str, args: tuple, options: dict):
    """The cache folder and the call's key (``None`` when the cache is off or the call uncacheable)."""
    where = folder()
    if any(getattr(jax.config, setting, False) for setting in _DEBUGGING):
        where = None  # the user is debugging the trace: run it as written
    try:
        return where, key(name, args, options) if where else None
    except Exception:  # never let the cache break a solve (e.g. a JAX without one of the settings read)
        return where, None


def prepare(fun, name: str, args: tuple, options: dict) -> bool:
    """Make a later :func:`call` of ``fun`` on arrays shaped as ``args`` run at once: the stored
    module loaded, or ``fun`` exported and stored, and its runner compiled. ``args`` may hold
    ``jax.ShapeDtypeStruct`` leaves in place of arrays (the work is done before the values exist,
    e.g. in a thread while another computation compiles). Returns ``False`` when the call is not
    cached here (the caller prepares the plain call) or the export failed (the later call finds out
    again, and runs plainly)."""
    where, k = _where_and_key(name, args, options)
    entry = _entry(fun, args, options, where, k) if k is not None else None
    if not entry:
        return False
    entry[1].lower(*[jax.ShapeDtypeStruct(x.shape, x.dtype, weak_type=getattr(x, "weak_type", False))
                     for x in jax.tree_util.tree_leaves(args) if _is_array(x)]).compile()
    return True


def call(fun, name: str, args: tuple, options: dict, plain):
    """``fun(*args)`` through the cache: a deserialised module when one is stored for this key, else
    exported (traced once), stored and run; ``plain(*args)`` (the usual jitted call) when the call
    cannot be cached or the export fails."""
    where, k = _where_and_key(name, args, options)
    if k is None:
        if where:
            STATS["uncacheable"] += 1
        return plain(*args)
    entry = _entry(fun, args, options, where, k)
    if entry is None:
        out = plain(*args)  # raises the call's own error when that is why the export failed
        _write(where, k + ".unexportable", b"")  # else: remembered, not tried again
        _MEMO[k] = False
        return out
    if entry is False:
        return plain(*args)
    exported, run, skeleton = entry
    arrays = [x for x in jax.tree_util.tree_leaves(args) if eqx.is_array(x)]
    try:
        outs = run(*arrays)
    except Exception as err:
        if not rejects_option(err, options):
            raise
        # an XLA that does not know one of the options: its defaults
        run = _runner(exported, {}, _device(jax.tree_util.tree_leaves(args)))
        _MEMO[k] = exported, run, skeleton
        outs = run(*arrays)
    return jax.tree_util.tree_map(lambda s: outs[s.index] if isinstance(s, _Slot) else s, skeleton,
                                  is_leaf=lambda s: isinstance(s, _Slot))


def _entry(fun, args: tuple, options: dict, where: str, k: str):
    """The stored call of key ``k`` as ``(exported, runner, output skeleton)``, loaded or exported
    and stored, kept for this process; ``False`` when it is known not to be exportable, ``None``
    when its export failed just now."""
    entry = _MEMO.get(k)
    if entry is None:
        entry = _load(where, k, options, _device(jax.tree_util.tree_leaves(args)))
        if entry is None:
            entry = _export(fun, args, options, where, k)
            if entry is False:
                return None
        _MEMO[k] = entry
    return entry


def _runner(exported, options: dict, device):
    """The jitted call of a stored module with its inputs placed on ``device`` (the one device of
    the key): committed arrays (a solve's outputs) and uncommitted ones then lower to the same
    computation, which a call prepared from shapes (:func:`prepare`) has compiled."""
    from jax.sharding import SingleDeviceSharding

    return jax.jit(exported.call, in_shardings=SingleDeviceSharding(device), compiler_options=options or None)


def _load(where: str, k: str, options: dict, device):
    """The stored module's runner, ``None`` when nothing (readable) is stored, or ``False`` when an
    earlier process found that this call cannot be exported (run it plainly, do not try again)."""
    path = os.path.join(where, k)
    if os.path.exists(path + ".unexportable"):
        return False
    try:
        with open(path, "rb") as f:
            stored = pickle.load(f)
        exported = jax.export.deserialize(bytearray(stored["module"]))
    except Exception:  # nothing stored, or a truncated or foreign file: export again (and overwrite it)
        return None
    STATS["hits"] += 1
    return exported, _runner(exported, options, device), stored["skeleton"]


def _export(fun, args: tuple, options: dict, where: str, k: str):
    """Export ``fun`` at ``args`` (its arrays as the module's inputs), store it, return its runner."""
    STATS["misses"] += 1
    leaves, treedef = jax.tree_util.tree_flatten(args)
    where_arrays = [i for i, x in enumerate(leaves) if _is_array(x)]
    skeleton = []

    def flat(*arrays):
        full = list(leaves)
        for i, x in zip(where_arrays, arrays):
            full[i] = x
        out_leaves, out_tree = jax.tree_util.tree_flatten(fun(*jax.tree_util.tree_unflatten(treedef, full)))
        slots, outs = [], []
        for x in out_leaves:
            if getattr(x, "weak_type", False):  # an exported output is strongly typed: not the same call
                raise _Uncacheable("a weakly typed output")
            if eqx.is_array(x):
                slots.append(_Slot(len(outs)))
                outs.append(x)
            else:
                slots.append(x)
        skeleton.append(jax.tree_util.tree_unflatten(out_tree, slots))
        return outs

    try:
        arrays = [leaves[i] for i in where_arrays]
        exported = jax.export.export(jax.jit(flat), platforms=[_platform(_device(leaves))])(*arrays)
        blob = pickle.dumps({"module": bytes(exported.serialize()), "skeleton": skeleton[0]})
    except Exception:  # a host callback, a custom call jax.export does not keep stable, the call's own error
        STATS["failed"] += 1
        return False
    _write(where, k, blob)
    return exported, _runner(exported, options, _device(leaves)), skeleton[0]


def _platform(device) -> str:
    """The export platform of ``device`` (``'gpu'`` is ``'cuda'`` or ``'rocm'`` to ``jax.export``)."""
    try:
        from jax._src import xla_bridge

        return xla_bridge.canonicalize_platform(device.platform)
    except Exception:  # another JAX: the device's own name (an export that fails runs plainly)
        return device.platform


def _write(where: str, name: str, blob: bytes) -> None:
    """Write ``blob`` to ``where/name`` atomically (nothing on a read-only folder)."""
    try:
        os.makedirs(where, exist_ok=True)
        tmp = os.path.join(where, f".{name}.{os.getpid()}.tmp")
        with open(tmp, "wb") as f:
            f.write(blob)
        os.replace(tmp, os.path.join(where, name))
        STATS["writes"] += 1
    except OSError:
        pass
