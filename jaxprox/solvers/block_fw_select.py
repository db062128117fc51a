"""Selections and sparse projections of the block Frank-Wolfe methods (Lei, Wu and Lin,
"Primal-dual block generalized Frank-Wolfe"): the top-``k`` entries of a vector without XLA:CPU's
sort-based ``lax.top_k`` (:func:`top_k_indices`), strided group maxima (:func:`grouped_argmax`)
and the projection onto the intersection of the l0 and l1 balls (:func:`project_l0_l1`).
"""
from __future__ import annotations

import jax
import jax.numpy as jnp
from jax import lax

from ..projections import l1_ball, trace_ball

Array = jax.Array


def l1_ball_sorted(v, r):
    """Projection onto the l1 ball of radius ``r`` by sorting (:func:`jaxprox.projections.l1_ball`)."""
    return l1_ball(v, r, method="sort")


def trace_ball_svd(V, r):
    """Projection onto the trace-norm ball of radius ``r`` (:func:`jaxprox.projections.trace_ball`)."""
    return trace_ball(V, r)


def top_k_indices(a: Array, k: int) -> Array:
    """Indices of the ``k`` largest entries of ``a >= 0`` (ties to the lower index), the same set as
    ``lax.top_k(a, k)[1]`` (as a set; the order is unspecified). XLA:CPU's ``top_k`` is
    sort-based (measured 17 ms at n = 50470 inside a loop, ``benchmarks/results/block_fw.md``), so:

    * small ``k / n`` (:func:`_top_k_blocked`): the top ``k`` entries lie in the ``k`` blocks of
      ``B`` consecutive entries with the largest maxima, so one ``O(n)`` block-max pass reduces the
      search to ``n / B`` block maxima and then to the ``k B`` entries of the chosen blocks
      (``B ~ sqrt(n / k)``); exact, ties included;
    * otherwise :func:`_top_k_bisect`: the ``k``-th largest value by bisection on the bit pattern
      (at most 63 counting passes in float64, fewer when a count hits k), then a prefix sum."""
    n = a.shape[0]
    if n <= _TOPK_SMALL or k >= n:
        return lax.top_k(a, k)[1].astype(jnp.int32)
    a = jnp.maximum(a, 0)
    B = max(2, int(round((n / k) ** 0.5)))
    if k * B <= n // 4:  # k <~ n / 16
        return _top_k_blocked(a, k, B)
    return _top_k_bisect(a, k)


def _top_k_blocked(a: Array, k: int, B: int) -> Array:
    """Exact top-``k`` through block maxima (see :func:`top_k_indices`). Correctness: every one of
    the top ``k`` entries sits in a block whose maximum is at least the ``k``-th value, and at most
    ``k`` blocks have such a maximum (ties: the lowest-indexed blocks are kept, which hold the
    lowest-indexed tied entries); the chosen blocks are gathered in increasing order, so the final
    selection breaks ties by the lower global index as ``lax.top_k`` does."""
    n = a.shape[0]
    nb = -(-n // B)
    blocks = jnp.pad(a, (0, nb * B - n)).reshape(nb, B)  # pad with 0 (>= no real entry's rank)
    top_blocks = top_k_indices(jnp.max(blocks, axis=1), k)
    if nb <= _TOPK_SMALL:  # lax.top_k orders by value; the other paths return increasing indices
        top_blocks = jnp.sort(top_blocks)
    cand = top_k_indices(blocks[top_blocks].reshape(-1), k)
    return (top_blocks[cand // B] * B + cand % B).astype(jnp.int32)


def _top_k_bisect(a: Array, k: int) -> Array:
    """Exact top-``k`` of ``a >= 0`` by bisection on the float bits (see :func:`top_k_indices`). The
    bracket starts at ``[min, max]`` (or at the minimum alone when fewer than ``k`` entries exceed
    it: ties at zero) and the loop stops as soon as exactly ``k`` entries lie at or above its lower
    end (43 halvings instead of 63 on the dual scores of ijcnn1-RB, where near-ties are common)."""
    ib = jnp.int64 if a.dtype == jnp.float64 else jnp.int32
    b = lax.bitcast_convert_type(a, ib)
    ct = jnp.float32 if a.shape[0] < 2**24 else jnp.int32  # float32 counts are exact below 2^24 and sum faster
    count = lambda t: jnp.sum(b >= t, dtype=ct)  # noqa: E731

    def halve(lohi):  # invariant: #{b >= lo} = c >= k > #{b >= hi}
        lo, hi, c = lohi
        mid = lo + (hi - lo) // 2
        cm = count(mid)
        ok = cm >= k
        return jnp.where(ok, mid, lo), jnp.where(ok, hi, mid), jnp.where(ok, cm, c)

    lo = jnp.min(b)
    hi = jnp.where(count(lo + 1) < k, lo + 1, jnp.max(b) + 1)
    c0 = jnp.asarray(a.shape[0], ct)
    kth, _, _ = lax.while_loop(lambda c: (c[2] != k) & (c[1] - c[0] > 1), halve, (lo, hi, c0))
    gt, eq = b > kth, b == kth
    need = k - jnp.sum(gt.astype(jnp.int32))
    take = gt | (eq & (lax.associative_scan(jnp.add, eq.astype(jnp.int32)) <= need))
    pos = lax.associative_scan(jnp.add, take.astype(jnp.int32))
    return jnp.searchsorted(pos, jnp.arange(1, k + 1, dtype=jnp.int32)).astype(jnp.int32)


_TOPK_SMALL = 512


def grouped_argmax(a: Array, k: int) -> Array:
    """One index per group: the argmax of ``a`` over each strided group ``{j, j + k, j + 2k, ...}``,
    ``j < k`` (``k`` indices, all distinct). A one-pass ``O(n)`` stand-in for the top-``k`` selection
    (greedy Gauss-Southwell-r within ``k`` fixed groups; **not in the paper**)."""
    n = a.shape[0]
    g = -(-n // k)
    blocks = jnp.pad(a, (0, g * k - n), constant_values=-jnp.inf).reshape(g, k)
    return (jnp.argmax(blocks, axis=0) * k + jnp.arange(k)).astype(jnp.int32)


def project_l0_l1(v: Array, s: int, r: Array):
    """``argmin_{||x||_0 <= s, ||x||_1 <= r} ||x - v||`` as ``(idx, vals)``: keep the ``s``
    largest magnitudes of ``v`` (:func:`top_k_indices`; ties to the lower index), then project those
    ``s`` entries onto the l1 ball of radius ``r``. Select first, project second (not equivalent the
    other way round)."""
    if s >= v.shape[0]:  # no l0 restriction: the l1-ball projection
        return jnp.arange(v.shape[0], dtype=jnp.int32), l1_ball_sorted(v, r)
    idx = top_k_indices(jnp.abs(v), s)
    return idx, l1_ball_sorted(v[idx], r)


def project_l0_l1_dense(v: Array, s: int, r: Array) -> Array:
    """:func:`project_l0_l1` as a vector of ``v``'s shape: the l1-ball projection itself where there
    is no l0 restriction (``s >= len(v)``: no scatter through the identity indices), else the
    ``s`` projected entries scattered into zeros."""
    if s >= v.shape[0]:
        return l1_ball_sorted(v, r)
    idx, vals = project_l0_l1(v, s, r)
    return jnp.zeros_like(v).at[idx].set(vals)
