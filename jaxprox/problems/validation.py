"""Input checks shared by the problem constructors (bad input gets a clear Python
error before tracing, never a silent NaN), and the one-dtype rule: a problem keeps every
floating-point leaf in the dtype of its data, so float32 data stay float32 under
``jax_enable_x64`` and the solvers' loop carries keep one type.

Every check acts on concrete values only; traced inputs (inside ``jit``/``vmap``/``grad``) pass
unchecked.
"""
from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from ..base import as_leaf
from ..operators import LinearOperator, Sparse, as_operator

__all__ = ["concrete", "at_least_float32", "local_values", "check_finite", "check_numeric", "data_operator", "label_vector",
           "check_pm1", "leaf", "positive_leaf", "check_smooth"]


def concrete(*xs) -> bool:
    """No argument is a tracer."""
    return not any(isinstance(x, jax.core.Tracer) for x in xs)


def local_values(arr) -> np.ndarray:
    """The entries of ``arr`` this process holds, flattened: all of them, or for an array that
    spans devices of other processes (rows sharded over hosts), its process-local shards."""
    if isinstance(arr, jax.Array) and not arr.is_fully_addressable:
        return np.concatenate([np.ravel(np.asarray(s.data)) for s in arr.addressable_shards])
    return np.asarray(arr)


def check_finite(name, arr):
    """``ValueError`` if the concrete ``arr`` holds NaN or infinite values (each process checks
    the entries it holds)."""
    if concrete(arr):
        a = local_values(arr)
        if not np.all(np.isfinite(a)):
            bad = int(np.size(a) - np.count_nonzero(np.isfinite(a)))
            raise ValueError(f"{name} contains {bad} NaN or infinite value(s)")


def check_numeric(name, x):
    """``TypeError`` for strings, objects or booleans where numbers are needed (NumPy's own
    message, "could not convert string to float", names neither the argument nor the fix)."""
    if isinstance(x, (LinearOperator, jax.Array)) or not concrete(x):
        return
    try:
        import scipy.sparse as sp

        if sp.issparse(x):
            x = x.data
    except ImportError:  # pragma: no cover
        pass
    kind = np.asarray(x).dtype.kind
    if kind not in "iuf":
        what = {"U": "strings", "S": "bytes", "O": "Python objects", "b": "booleans"}.get(kind, f"dtype kind {kind!r}")
        raise TypeError(f"{name} must be numeric, got {what}; encode it as numbers first (labels: "
                        "-1/+1 for binary classification)")


def at_least_float32(X):
    """``X`` with float16 / bfloat16 entries cast to float32 (the solvers and their certificates
    compute in float32 or float64); other inputs unchanged."""
    dt = getattr(X, "dtype", None)
    if isinstance(X, LinearOperator) or dt is None or not concrete(X):
        return X
    if jnp.issubdtype(dt, jnp.floating) and jnp.finfo(dt).bits < 32:
        return X.astype(np.float32)
    return X


def data_operator(X, name="X") -> LinearOperator:
    """``X`` as an operator with at least one row and one column and only finite entries;
    half-precision data are computed in float32 (:func:`at_least_float32`)."""
    check_numeric(name, X)
    on_host = isinstance(X, np.ndarray)
    if on_host:  # checked where it lies: the operator's copy would be copied back (70 ms for 80 MB)
        check_finite(name, X)
    A = as_operator(at_least_float32(X))
    n, d = A.shape
    if n == 0 or d == 0:
        raise ValueError(f"{name} must have at least one sample and one feature, got shape {(n, d)}")
    if not on_host or A.dtype != X.dtype:  # also the rounding to a narrower dtype (1e39 -> inf in float32)
        check_finite(name, A.values if isinstance(A, Sparse) else A.todense())
    return A


def label_vector(y, n, dtype, name="y"):
    """``y`` as a 1-D ``(n,)`` array of the data's ``dtype`` with finite entries (a NumPy array
    for ``dtype=np.float64``, which stays concrete under ``jit``)."""
    if not concrete(y):
        return y
    check_numeric(name, y)
    ya = np.asarray(y)
    if ya.shape != (n,):
        raise ValueError(f"{name} must have shape ({n},) to match X's {n} samples, got {ya.shape}")
    check_finite(name, ya)
    return ya.astype(np.float64) if dtype is np.float64 else jnp.asarray(ya, dtype)


def check_pm1(y, name="y"):
    """``ValueError`` unless every concrete label is -1 or +1."""
    if concrete(y):
        ya = np.asarray(y)
        if not np.all(np.isin(ya, (-1.0, 1.0))):
            bad = np.unique(ya[~np.isin(ya, (-1.0, 1.0))])[:5]
            raise ValueError(f"{name}: labels must be in {{-1, +1}}, got e.g. {bad.tolist()}")


def leaf(x, name, dtype, *, nonneg=True):
    """:func:`~jaxprox.base.as_leaf` (finite, non-negative) in the data's ``dtype``."""
    return jnp.asarray(as_leaf(x, name, nonneg=nonneg), dtype)


def positive_leaf(x, name, dtype, *, why=""):
    """:func:`leaf` that also rejects 0 (a strength the problem divides by)."""
    out = leaf(x, name, dtype)
    if concrete(out) and np.any(np.asarray(out) <= 0):
        raise ValueError(f"{name} must be > 0{why}, got {x!r}")
    return out


def check_smooth(problem, who):
    """A ``ValueError`` unless the problem's loss is smooth (``who``: the solver, for the message)."""
    if not problem.loss.smooth:
        raise ValueError(f"{who} needs a smooth loss; {type(problem.loss).__name__} is not")
