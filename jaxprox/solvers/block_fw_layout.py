"""Column access for the block Frank-Wolfe methods: ``A[:, idx] @ v`` and ``A[I][:, idx]`` for a
few columns ``idx`` at a time, from a layout of ``A^T`` built once per solve from the concrete data
(:func:`column_layout`): a dense transposed copy, padded compressed sparse columns, compressed
columns walked in chunks (:class:`SparseColumns`) or those plus a dense block of the heaviest
columns (:class:`HybridColumns`). Used by :class:`jaxprox.PDBlockFW` (Lei, Wu and Lin,
"Primal-dual block generalized Frank-Wolfe"), which changes a few coordinates of ``w`` per step
and maintains ``A w`` incrementally.
"""
from __future__ import annotations

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from ..base import Array
from ..operators import Dense, LinearOperator, SparseRows


def positions_in(I: Array, n: int) -> Array:
    """``(n,)`` table: the position of row ``i`` in ``I`` (distinct entries), ``len(I)`` for rows not in it."""
    k = I.shape[0]
    return jnp.full((n,), k, jnp.int32).at[I].set(jnp.arange(k, dtype=jnp.int32))


class SparseColumns(eqx.Module):
    """Compressed sparse columns of an ``n x d`` matrix: ``take_mv(idx, v) = A[:, idx] @ v`` for
    ``|idx| = s`` columns in ``O(sum of the selected columns' lengths)``. The stored entries of the
    selected columns are numbered ``0 .. total - 1`` and visited in chunks of ``chunk`` slots by a
    ``lax.while_loop`` with ``ceil(total / chunk)`` trips (under ``vmap``: the longest member's), so
    the work follows the columns actually selected, not the ``s`` longest of the matrix. For
    heavy-tailed column lengths (text, random-binning features), where padding every column to the
    longest one would explode."""

    indptr: Array
    rows: Array
    vals: Array
    n_rows: int = eqx.field(static=True)
    chunk: int = eqx.field(static=True)

    def _walk(self, idx, emit, out):
        """Visit the stored entries of the selected columns ``idx`` in chunks of ``chunk`` slots:
        ``out = emit(out, pos, j, ok)`` per chunk, with ``pos`` the positions in ``rows`` / ``vals``,
        ``j`` the selected column each belongs to and ``ok`` masking the unused slots."""
        lens = self.indptr[idx + 1] - self.indptr[idx]
        ends = jnp.cumsum(lens)
        offset = self.indptr[idx] - (ends - lens)  # position in rows / vals = offset[j] + slot number
        C = self.chunk
        o = jnp.arange(C)

        def body(carry):
            base, out = carry
            # slot base + o belongs to selected column j = #{ends <= base + o}: those already passed,
            # plus a prefix sum of marks at the ends inside this chunk (one pass; a searchsorted of
            # every slot costs log2(s) gather passes)
            marks = jnp.zeros((C + 1,), jnp.int32).at[jnp.clip(ends - base, 0, C)].add((ends > base).astype(jnp.int32))
            j = jnp.minimum(jnp.sum(ends <= base) + jnp.cumsum(marks[:-1]), idx.shape[0] - 1)
            m = base + o
            ok = m < ends[-1]
            return base + C, emit(out, jnp.where(ok, offset[j] + m, 0), j, ok)

        return lax.while_loop(lambda c: c[0] < ends[-1], body, (jnp.zeros((), ends.dtype), out))[1]

    def take_mv(self, idx, v):
        """``A[:, idx] @ v``."""
        def emit(out, pos, j, ok):
            return out.at[self.rows[pos]].add(jnp.where(ok, self.vals[pos] * v[j], 0.0))

        return self._walk(idx, emit, jnp.zeros((self.n_rows,), jnp.result_type(self.vals, v)))

    def take_block(self, idx, I):
        """``A[I][:, idx]`` (``k x s``, rows ``I`` distinct) through a row-position table: ``O(n)``
        plus the selected columns' entries."""
        k = I.shape[0]
        where_in_I = positions_in(I, self.n_rows)

        def emit(out, pos, j, ok):
            return out.at[where_in_I[self.rows[pos]], j].add(jnp.where(ok, self.vals[pos], 0.0))

        return self._walk(idx, emit, jnp.zeros((k + 1, idx.shape[0]), self.vals.dtype))[:k]  # row k: not in I


class HybridColumns(eqx.Module):
    """:class:`SparseColumns` for the light columns plus a dense block ``H`` (``h x n``) holding the
    ``h`` heaviest columns: ``take_mv(idx, v) = H[slot[idx]]^T v_heavy + light.take_mv(idx, v)``.
    On XLA:CPU a scattered entry costs ~30x a dense multiply-add, so a column with more than
    about ``n/16`` entries is cheaper as a dense row of ``H`` (random-binning data: the solution
    lives on the coarse, heavy bins)."""

    H: Array
    slot: Array  # (d,) row of H holding column j, or -1
    light: SparseColumns

    def take_mv(self, idx, v):
        return self._heavy_mv(idx, v) + self.light.take_mv(idx, v)  # heavy columns have length 0 in ``light``

    def _heavy_mv(self, idx, v, per_trip=4):
        """``H[slot[idx]]^T v`` over the selected heavy columns only (moved to the front), ``per_trip``
        rows of ``H`` added per trip of a ``while_loop``: each row is read once and the sum stays in
        cache (gathering the rows first writes and reads a ``s x n`` copy: 2x slower)."""
        sl = self.slot[idx]
        order = jnp.argsort(sl < 0, stable=True)
        sl, v = sl[order], jnp.where(sl >= 0, v, 0.0)[order]
        s, m = idx.shape[0], jnp.sum(sl >= 0)

        def body(carry):
            j, out = carry
            for u in range(per_trip):
                t = jnp.minimum(j + u, s - 1)
                row = lax.dynamic_index_in_dim(self.H, jnp.maximum(sl[t], 0), 0, keepdims=False)
                out = out + jnp.where(j + u < m, v[t], 0.0) * row
            return j + per_trip, out

        out = jnp.zeros((self.H.shape[1],), jnp.result_type(self.H, v))
        return lax.while_loop(lambda c: c[0] < m, body, (jnp.zeros((), m.dtype), out))[1]

    def take_block(self, idx, I):
        """``A[I][:, idx]`` (``k x s``): ``s k`` entries gathered from ``H`` plus the light columns."""
        sl = self.slot[idx]
        heavy = jnp.where(sl[None, :] >= 0, self.H[jnp.maximum(sl, 0)[None, :], I[:, None]], 0.0)
        return heavy + self.light.take_block(idx, I)


def _csc(rows, cols, vals, counts, n, s):
    """:class:`SparseColumns` of entries sorted by column, in chunks of at most ``CSC_CHUNK`` slots
    (fewer when the ``s`` longest columns hold fewer entries): a trip of the chunk loop costs a few
    microseconds, a chunk of 4096 scattered entries some tens."""
    top = int(np.sort(counts)[::-1][:s].sum())
    indptr = np.concatenate([[0], np.cumsum(counts)]).astype(np.int32)
    return SparseColumns(jnp.asarray(indptr), jnp.asarray(rows.astype(np.int32)), jnp.asarray(vals), int(n),
                         max(1, min(top, CSC_CHUNK)))


CSC_CHUNK = 4096


def take_columns_mv(layout, idx: Array, v: Array) -> Array:
    """``A[:, idx] @ v`` from ``layout = column_layout(A)``: ``O(n s)`` for a dense ``A^T`` (``s``
    rows of it), the selected columns' stored entries for the sparse layouts."""
    if isinstance(layout, (SparseColumns, HybridColumns)):
        return layout.take_mv(idx, v)
    return layout.rows(idx).rmv(v)  # Dense / SparseRows: rows idx of A^T


def take_columns_block(layout, idx: Array, I: Array) -> Array:
    """``A[I][:, idx]`` (``k x s``, rows ``I`` distinct) from ``layout = column_layout(A)``: ``s k``
    entries gathered from a dense ``A^T`` (or from the dense block of :class:`HybridColumns`), plus
    the selected sparse columns' stored entries seen through a position table of ``I`` (``O(n)``)."""
    if isinstance(layout, (SparseColumns, HybridColumns)):
        return layout.take_block(idx, I)
    if isinstance(layout, Dense):
        return layout.X[idx[None, :], I[:, None]]
    if isinstance(layout, SparseRows):  # padded CSC: the s columns' stored entries
        cols, k = layout.rows(idx), I.shape[0]
        out = jnp.zeros((k + 1, idx.shape[0]), cols.values.dtype)  # row k: entries in rows not in I
        return out.at[positions_in(I, layout.shape[1])[cols.indices], jnp.arange(idx.shape[0])[:, None]].add(
            cols.values)[:k]
    raise TypeError(f"not a column layout: {type(layout).__name__}")


def column_layout(op: LinearOperator, dense_limit: int = 2**26, s: int | None = None):
    """``A^T`` (``d x n``) as a row-accessible operator, so that ``A[:, idx] @ v`` is
    ``column_layout(A).rows(idx).rmv(v)`` and costs ``O(n |idx|)`` (dense) or
    ``O(|idx| p)`` (sparse, ``p`` = longest column) instead of a whole product.

    * :class:`Dense`: a transposed copy ``X.T`` (XLA:CPU gathers rows of a row-major array far
      faster than columns).
    * :class:`Sparse` / :class:`SparseRows`: the padded compressed-sparse-column layout, i.e. the
      padded rows of ``A^T`` (built with NumPy, so ``op`` must be concrete, not traced). When the
      longest column holds at least ``n/4`` entries and ``d n <= dense_limit``, a dense ``A^T``
      instead (XLA:CPU scatters are ~30x slower per entry than a dense gather + dot). When padding
      would more than quadruple the storage and ``s`` (the number of columns taken at once) is
      given, a :class:`SparseColumns` instead (work proportional to the selected columns' lengths), with the
      columns longer than ``n/16`` in a dense block (:class:`HybridColumns`) when there are any: the
      heaviest of them, as many as fit in ``dense_limit / 4`` entries (random-binning data with 300
      grids has ~1000 such columns, and its solution lives on the heaviest).

    Used by methods that change a few coordinates of ``w`` per step and maintain ``A w``
    incrementally (block Frank-Wolfe, the PD block Frank-Wolfe paper).
    """
    if isinstance(op, Dense):
        return Dense(jnp.transpose(op.X).copy())
    if isinstance(op, SparseRows):
        if isinstance(op.values, jax.core.Tracer):
            raise TypeError("column_layout of a sparse operator needs concrete data (call it outside jit)")
        ind, val = np.asarray(op.indices), np.asarray(op.values)
        n = ind.shape[0]
        keep = val != 0
        rows = np.broadcast_to(np.arange(n)[:, None], ind.shape)[keep]
        cols, vals = ind[keep], val[keep]
        order = np.lexsort((rows, cols))
        rows, cols, vals = rows[order], cols[order], vals[order]
        d = op.n_features
        counts = np.bincount(cols, minlength=d)
        p = max(int(counts.max()) if counts.size else 0, 1)
        if 4 * p >= n and d * n <= dense_limit:  # columns nearly dense: a dense A^T gathers faster
            At = np.zeros((d, n), val.dtype)
            np.add.at(At, (cols, rows), vals)
            return Dense(jnp.asarray(At))
        if s is not None and d * p > 4 * max(len(cols), 1):
            heavy = counts > max(n // 16, 1)
            h_max = dense_limit // 4 // n  # the dense block's memory cap, in columns
            heavy[np.argsort(-counts, kind="stable")[h_max:]] = False  # only the heaviest h_max (ties: lower index)
            h = int(heavy.sum())
            if h == 0:
                return _csc(rows, cols, vals, counts, n, s)
            slot = np.full(d, -1, np.int32)
            slot[heavy] = np.arange(h, dtype=np.int32)
            H = np.zeros((h, n), val.dtype)
            hv = heavy[cols]
            np.add.at(H, (slot[cols[hv]], rows[hv]), vals[hv])
            light = _csc(rows[~hv], cols[~hv], vals[~hv], np.where(heavy, 0, counts), n, s)
            return HybridColumns(jnp.asarray(H), jnp.asarray(slot), light)
        start = np.concatenate([[0], np.cumsum(counts)[:-1]])
        slot = np.arange(len(cols)) - start[cols]
        cind = np.zeros((d, p), np.int32)
        cval = np.zeros((d, p), val.dtype)
        cind[cols, slot] = rows
        cval[cols, slot] = vals
        return SparseRows(jnp.asarray(cind), jnp.asarray(cval), int(n))
    raise TypeError(f"no column layout for {type(op).__name__}")


def rows_on_support(rows, idx, d):
    """``A[I][:, idx]`` (``k x s``) from the ``k`` gathered rows: a slot table for padded sparse rows
    (``O(d + k p)``), a column gather for dense rows."""
    if isinstance(rows, SparseRows):
        ind = rows.indices
        k, s = ind.shape[0], idx.shape[0]
        out = jnp.zeros((k, s + 1), rows.values.dtype)  # column s: entries outside the support
        return out.at[jnp.arange(k)[:, None], positions_in(idx, d)[ind]].add(rows.values)[:, :s]
    return rows.todense()[:, idx]
