"""Process-global caches keyed by the structure or the identity of arrays."""
from __future__ import annotations

import weakref

import equinox as eqx
import jax


def structure(tree):
    """A hashable description of ``tree`` as ``jax.jit``'s cache tells calls apart (the treedef,
    the arrays' shapes, dtypes and weak types, the other leaves), or ``None`` when a leaf is
    unhashable."""
    leaves, treedef = jax.tree_util.tree_flatten(tree)
    try:
        described = (treedef, tuple((x.shape, x.dtype, getattr(x, "weak_type", False)) if eqx.is_array(x)
                                    else (type(x), x) for x in leaves))
        hash(described)
    except TypeError:
        return None
    return described


_PER_DATA: dict = {}


def once_per_data(name: str, tree, compute, *extra):
    """``compute()``, computed once per identity of the arrays in ``tree`` (and the hashable
    ``extra``) and reused while they live: the host-side preparation that :func:`jaxprox.solve`
    repeats on every call for the same data (column ranges and scales, the column-scaled copy),
    which costs more than a warm solve on small data (milliseconds of eager dispatch and host
    passes; a device-to-host copy of the whole matrix on a GPU). Only immutable, concrete
    ``jax.Array`` leaves key it: with a NumPy or traced leaf (mutable, or no value), or an
    unhashable ``extra`` (NumPy scales), nothing is cached. An entry is dropped as soon as one of
    its arrays is garbage-collected, so the cache never keeps a user's data (or a scaled copy of
    it) alive: the value may share some of the key's arrays (a scaled sparse matrix keeps the
    index arrays) as long as not all of them."""
    leaves = jax.tree_util.tree_leaves(tree) + [x for x in extra if isinstance(x, jax.Array)]
    plain = tuple(x for x in extra if not isinstance(x, jax.Array))
    if not leaves or any(not isinstance(x, jax.Array) or isinstance(x, jax.core.Tracer) for x in leaves):
        return compute()
    try:  # an extra that is mutable or unhashable (a NumPy array of scales): nothing is cached
        hash(plain)
    except TypeError:
        return compute()
    key = (name, tuple(id(x) for x in leaves), plain)
    hit = _PER_DATA.get(key)
    if hit is not None and all(r() is x for r, x in zip(hit[0], leaves)):
        return hit[1]
    value = compute()
    _PER_DATA[key] = (tuple(weakref.ref(x) for x in leaves), value)
    for x in leaves:
        weakref.finalize(x, _PER_DATA.pop, key, None)
    return value
