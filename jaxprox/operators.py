"""Data matrices as linear operators.

An operator ``A`` (``n x d``, rows are samples) exposes

* ``mv(w) = A @ w`` and ``rmv(u) = A.T @ u`` (``w`` may be ``(d,)`` or ``(d, K)``),
* ``shape``, ``rows(idx)`` (the sub-operator ``A[idx]``, same type, static shapes),
* ``row_norms_sq()`` and ``spectral_norm_sq()`` (exact from a small Gram matrix, else power
  iteration with a fixed key),
* ``rmv_add(u, w) = w + A.T @ u`` (an in-place scatter for sparse rows: ``O(nnz)``, not ``O(d)``).

:class:`Dense` wraps a 2-D array. :class:`Sparse` keeps a flat coordinate list for whole-matrix
products and the rows padded to the longest row length (``indices``, ``values`` of shape
``(n, p)``; padding has value 0 and index 0), so a row and a batch of rows have static shapes,
which incremental methods (ISG, IPPA, SVRG, SDCA) need under ``jit``. Dense and sparse give
identical results.

Operators know nothing about solvers (the column layouts of block Frank-Wolfe live with it,
:mod:`jaxprox.solvers.block_fw_layout`).
"""
from __future__ import annotations

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from ._compile import compiled
from .base import Array, probe_vector


GRAM_DENSE_LIMIT = 2**25  # sparse weighted Gram: densify when n d is at most this many entries
EXACT_EIG_SIDE = 256  # largest_eigenvalue: exact, from a Gram matrix, when its side is at most this


def exact_eig_side(iters: int) -> int:
    """The largest side of a Gram matrix whose eigenvalues replace ``iters`` power iterations:
    :data:`EXACT_EIG_SIDE` (the symmetric eigenvalue call costs ``O(side^3)``) or ``6 iters``
    if smaller, where forming the ``side x side`` Gram matrix (``n side^2`` multiply-adds in a
    GEMM, which runs at several times the flop rate of the memory-bound matrix-vector products)
    costs no more than the ``2 iters`` products it replaces."""
    return min(EXACT_EIG_SIDE, 6 * iters)


def linear_at(f, v: Array, zero: bool) -> Array:
    """``f(v)`` for a linear map ``f`` (``A.mv``, ``A.rmv``), or zeros of its output's shape and
    dtype, with no product, where ``v`` is known to be zero when the code is traced (a solver's
    start at the origin: no ``init`` given and nothing moved it). XLA does not fold a product with
    a zero vector (``0 * inf`` is NaN), so it would compile and run a matrix-vector kernel for it."""
    if zero:
        out = jax.eval_shape(f, v)
        return jnp.zeros(out.shape, out.dtype)
    return f(v)


class LinearOperator(eqx.Module):
    """Common interface; see the module docstring."""

    @property
    def shape(self) -> tuple[int, int]:
        raise NotImplementedError

    def mv(self, w: Array) -> Array:
        raise NotImplementedError

    def rmv(self, u: Array) -> Array:
        raise NotImplementedError

    def rmv_add(self, u: Array, w: Array) -> Array:
        """``w + A.T @ u``."""
        return w + self.rmv(u)

    def rows(self, idx: Array) -> "LinearOperator":
        raise NotImplementedError

    def columns(self, idx: Array) -> "LinearOperator":
        """The columns ``idx`` (``k`` indices) as an ``(n, k)`` operator of the same kind: a working
        set's data (:class:`jaxprox.WorkingSet`)."""
        raise NotImplementedError(f"{type(self).__name__} has no column access")

    def scale_rows(self, c: Array) -> "LinearOperator":
        """``diag(c) A``: each row ``i`` times ``c_i`` (e.g. a 0/1 mask that turns rows into
        zero padding), in the same layout."""
        raise NotImplementedError(f"{type(self).__name__} has no row scaling")

    def scale_columns(self, c: Array) -> "LinearOperator":
        """``A diag(c)``: each column ``j`` times ``c_j`` (the data of ``w = c * v`` as a function
        of ``v``: :meth:`jaxprox.problems.erm.ERM.column_scaled`), in the same layout."""
        raise NotImplementedError(f"{type(self).__name__} has no column scaling")

    def column_max_abs(self) -> np.ndarray:
        """``max_i |A_ij|`` for each column ``j`` (0 for an empty column), of concrete data, as a
        NumPy array (computed on the host: a decision taken before tracing, at no device cost)."""
        raise NotImplementedError(f"{type(self).__name__} has no column maxima")

    def column_norms_sq(self) -> np.ndarray:
        """``||A e_j||^2`` for each column ``j``, of concrete data, as a NumPy array (host)."""
        raise NotImplementedError(f"{type(self).__name__} has no column norms")

    @property
    def param_shape(self) -> tuple:
        """Shape of the variable ``w`` that ``mv`` acts on: ``(d,)`` (a ``(d, K)`` matrix is
        ``K`` columns side by side); :class:`Structured` operators act on a matrix ``W``."""
        return (self.shape[1],)

    def row_norms_sq(self) -> Array:
        raise NotImplementedError

    def todense(self) -> Array:
        raise NotImplementedError

    def weighted_gram(self, c: Array, dtype=None) -> Array:
        """``A^T diag(c) A`` for weights ``c >= 0``, as a dense ``(d, d)`` array: a Newton model's
        Hessian. ``O(n d^2)`` as ``Y^T Y`` with ``Y = diag(sqrt(c)) A`` from the dense matrix;
        ``O(nnz * row length)`` for padded sparse rows. ``dtype`` (e.g. ``float32``, about twice as
        fast on a CPU) is the precision of the product; the result has the operator's dtype."""
        X = self.todense()
        Y = (X * jnp.sqrt(jnp.maximum(c, 0.0))[:, None]).astype(dtype or X.dtype)
        return (Y.T @ Y).astype(X.dtype)

    def weighted_gram_active(self, c: Array, max_rows: int, dtype=None) -> Array:
        """:meth:`weighted_gram` when few weights are non-zero: the rows with ``c_i > 0`` are
        gathered (:meth:`rows`, a static ``max_rows`` of them) and only their outer products are
        summed, ``O(max_rows d^2)`` instead of ``O(n d^2)``; with more than ``max_rows`` non-zero
        weights, the full product. (Under ``vmap`` both branches run: use it where the weights
        are usually sparse, e.g. the generalised Hessian of a smoothed hinge near its solution.)"""
        active = c > 0
        count = jnp.sum(active)
        idx = jnp.nonzero(active, size=max_rows, fill_value=0)[0]
        c_rows = jnp.where(jnp.arange(max_rows) < count, c[idx], 0.0)
        return lax.cond(count <= max_rows, lambda: self.rows(idx).weighted_gram(c_rows, dtype),
                        lambda: self.weighted_gram(c, dtype))

    def small_gram(self, c=None, side: int = EXACT_EIG_SIDE):
        """A symmetric matrix of side at most ``side`` with the non-zero eigenvalues of
        ``A^T diag(c) A`` (``c >= 0``, default all ones), or ``None`` when there is none that
        small: here ``A^T diag(c) A`` itself (:meth:`weighted_gram`) when ``d <= side`` and the
        variable is a vector of length ``d``."""
        if self.param_shape != (self.d,) or self.d > side:
            return None
        return self.weighted_gram(jnp.ones(self.n, self.dtype) if c is None else c)

    def squared(self) -> "LinearOperator":
        """The operator with entries ``a_ij^2``: ``A.squared().rmv(c)`` is the diagonal of
        ``A^T diag(c) A`` in one product (``O(nnz)`` for sparse rows)."""
        raise NotImplementedError(f"{type(self).__name__} has no squared-entries operator")

    def frobenius_sq(self) -> Array:
        """``||A||_F^2 >= ||A||_2^2``: a bound on the spectral norm in one pass over ``A``."""
        return jnp.sum(self.row_norms_sq())

    def spectral_norm_sq(self, iters: int = 100, key: int = 0) -> Array:
        """``||A||_2^2`` = largest eigenvalue of ``A.T A`` (:func:`largest_eigenvalue`): exact from a
        small Gram matrix when ``d`` (or, dense, ``n``) is at most :func:`exact_eig_side`, else by
        power iteration (static ``iters``, fixed start :func:`jaxprox.base.probe_vector`, so the
        estimate is deterministic; a lower bound that converges from below). It is multiplied by
        ``1 + 1e-6`` for use as a step-size constant.
        Compiled once per operator structure (an eager call, e.g. from a solver's ``prepare``,
        does not recompile the loop for new data of the same shape)."""
        return largest_eigenvalue(self, iters, key) * (1 + 1e-6)

    @property
    def dtype(self):
        raise NotImplementedError

    @property
    def n(self) -> int:
        return self.shape[0]

    @property
    def d(self) -> int:
        return self.shape[1]


class Dense(LinearOperator):
    """Dense data matrix ``X`` of shape ``(n, d)``."""

    X: Array

    @property
    def shape(self):
        return tuple(self.X.shape)

    @property
    def dtype(self):
        return self.X.dtype

    def mv(self, w):
        return self.X @ w

    def rmv(self, u):
        # ``u @ X`` rather than ``X.T @ u``: XLA:CPU runs the transposed GEMV several times slower.
        return u @ self.X if u.ndim == 1 else jnp.einsum("nd,nk->dk", self.X, u)

    def rows(self, idx):
        return Dense(self.X[idx])

    def columns(self, idx):
        return Dense(jnp.take(self.X, idx, axis=1))

    def scale_rows(self, c):
        return Dense(self.X * jnp.asarray(c, self.X.dtype)[:, None])

    def scale_columns(self, c):
        return Dense(self.X * jnp.asarray(c, self.X.dtype)[None, :])

    def column_max_abs(self):
        if _on_other_processes(self.X):
            return _reduced(lambda X: jnp.max(jnp.abs(X), axis=0), self.X)
        return np.max(np.abs(np.asarray(self.X)), axis=0, initial=0.0)

    def column_norms_sq(self):
        if _on_other_processes(self.X):
            return _reduced(lambda X: jnp.einsum("ij,ij->j", X, X), self.X).astype(np.float64)
        X = np.asarray(self.X, np.float64)
        return np.einsum("ij,ij->j", X, X)

    def row_norms_sq(self):
        return jnp.sum(self.X**2, axis=1)

    def todense(self):
        return self.X

    def small_gram(self, c=None, side: int = EXACT_EIG_SIDE):
        """``Y^T Y`` (``d x d``) or, for wide data, ``Y Y^T`` (``n x n``), ``Y = diag(sqrt(c)) X``,
        whichever is smaller, when its side is at most ``side`` (else ``None``)."""
        if min(self.shape) > side:
            return None
        Y = self.X if c is None else self.X * jnp.sqrt(jnp.maximum(jnp.asarray(c, self.dtype), 0.0))[:, None]
        return Y.T @ Y if self.d <= self.n else Y @ Y.T

    def squared(self):
        return Dense(self.X * self.X)


class SparseRows(LinearOperator):
    """Sparse rows in padded-row (ELL) format: ``indices[i, k]``, ``values[i, k]`` hold the
    ``k``-th stored entry of row ``i``; shorter rows are padded with ``(index 0, value 0)``, which
    contributes nothing to any product. Static shapes, so a batch of rows can be drawn under
    ``jit`` (incremental methods); ``rmv_add`` is an ``O(nnz)`` scatter into ``w``."""

    indices: Array
    values: Array
    n_features: int = eqx.field(static=True)

    @property
    def shape(self):
        return (self.indices.shape[0], self.n_features)

    @property
    def dtype(self):
        return self.values.dtype

    def mv(self, w):
        w = jnp.asarray(w)
        g = w[self.indices]  # (n, p) or (n, p, K)
        if w.ndim == 1:
            return jnp.sum(self.values * g, axis=1)
        return jnp.einsum("np,npk->nk", self.values, g)

    def rmv(self, u):
        u = jnp.asarray(u)
        zeros = jnp.zeros((self.n_features,) + u.shape[1:], dtype=jnp.result_type(self.values, u))
        return self.rmv_add(u, zeros)

    def rmv_add(self, u, w):
        u, w = jnp.asarray(u), jnp.asarray(w)
        if u.ndim == 1:
            contrib = self.values * u[:, None]
        else:
            contrib = self.values[:, :, None] * u[:, None, :]
        return w.at[self.indices].add(contrib.astype(w.dtype))

    def rows(self, idx):
        return SparseRows(self.indices[idx], self.values[idx], self.n_features)

    def columns(self, idx):
        """The same padded rows re-indexed to the ``k`` columns ``idx`` (an entry of another column
        becomes a padding entry, index 0 and value 0): ``O(nnz)``, and products stay ``O(nnz)``."""
        k = idx.shape[0]
        place = jnp.full((self.n_features,), k, jnp.int32).at[idx].set(jnp.arange(k, dtype=jnp.int32))
        j = place[self.indices]
        inside = j < k
        return SparseRows(jnp.where(inside, j, 0), jnp.where(inside, self.values, 0), k)

    def scale_rows(self, c):
        c = jnp.asarray(c, self.values.dtype)
        out = eqx.tree_at(lambda o: o.values, self, self.values * c[:, None])
        if hasattr(self, "data"):  # Sparse: its coordinate list too
            out = eqx.tree_at(lambda o: o.data, out, self.data * c[self.row])
        return out

    def scale_columns(self, c):
        c = jnp.asarray(c, self.values.dtype)
        out = eqx.tree_at(lambda o: o.values, self, self.values * c[self.indices])
        if hasattr(self, "data"):  # Sparse: its coordinate list too
            out = eqx.tree_at(lambda o: o.data, out, self.data * c[self.col])
        return out

    def column_max_abs(self):
        out = np.zeros(self.n_features, np.asarray(self.values).dtype)
        np.maximum.at(out, np.asarray(self.indices).ravel(), np.abs(np.asarray(self.values)).ravel())
        return out

    def column_norms_sq(self):
        vals = np.asarray(self.values, np.float64).ravel()
        return np.bincount(np.asarray(self.indices).ravel(), weights=vals * vals, minlength=self.n_features)

    def row_norms_sq(self):
        return jnp.sum(self.values**2, axis=1)

    def weighted_gram(self, c, dtype=None):
        """``A^T diag(c) A = sum_i c_i a_i a_i^T``. When the dense matrix is small (``n d <=
        GRAM_DENSE_LIMIT`` entries) it is formed and multiplied (one GEMM, the fast route on a
        CPU); otherwise the outer products of the stored entries of each row are scatter-added
        (``n p^2`` terms for rows padded to ``p``)."""
        n, d = self.shape
        if n * d <= GRAM_DENSE_LIMIT:
            # Y^T = (diag(sqrt(c)) A)^T scattered in the product's dtype, then one GEMM Y^T (Y^T)^T
            # (no transposed copy of Y, no float64 dense copy of A: benchmarks/results/sklearn.md)
            vals = (self.values * jnp.sqrt(jnp.maximum(c, 0.0))[:, None]).astype(dtype or self.values.dtype)
            Yt = jnp.zeros((d, n), vals.dtype).at[self.indices, jnp.arange(n)[:, None]].add(vals)
            return lax.dot_general(Yt, Yt, (((1,), (1,)), ((), ()))).astype(self.values.dtype)
        vals = self.values.astype(dtype or self.values.dtype)
        v = vals * c[:, None].astype(vals.dtype)
        pair = self.indices[:, :, None] * d + self.indices[:, None, :]
        terms = v[:, :, None] * vals[:, None, :]
        out = jnp.zeros((d * d,), dtype=terms.dtype).at[pair.reshape(-1)].add(terms.reshape(-1))
        return out.reshape(d, d).astype(self.values.dtype)

    def squared(self):
        fields = [f for f in ("values", "data") if hasattr(self, f)]  # Sparse also keeps a coordinate list
        return eqx.tree_at(lambda o: [getattr(o, f) for f in fields], self, [getattr(self, f) ** 2 for f in fields])

    def todense(self):
        n = self.indices.shape[0]
        out = jnp.zeros((n, self.n_features), dtype=self.values.dtype)
        return out.at[jnp.arange(n)[:, None], self.indices].add(self.values)


class Sparse(SparseRows):
    """Sparse data matrix: the padded rows of :class:`SparseRows` (for row access) plus the flat
    coordinate list ``(data, row, col)`` used for whole-matrix products, which cost ``O(nnz)``
    whatever the longest row (padding would cost ``n * max_row_length``). When rows have nearly
    equal lengths (padding adds at most 50%), the padded layout is used for products too: its
    gathers are contiguous and it runs faster."""

    data: Array
    row: Array
    col: Array
    padded_products: bool = eqx.field(static=True, default=False)

    def columns(self, idx):
        """The columns ``idx`` as a dense ``(n, k)`` matrix scattered from the coordinate list
        (``O(nnz)``, whatever the padding of the longest row) when it has at most
        ``GRAM_DENSE_LIMIT`` entries: a working set's products and Gram then cost ``O(n k)`` and one
        GEMM; otherwise the padded rows re-indexed (:meth:`SparseRows.columns`)."""
        k, n = idx.shape[0], self.indices.shape[0]
        if n * k > GRAM_DENSE_LIMIT:
            return SparseRows.columns(self, idx)
        place = jnp.full((self.n_features,), k, jnp.int32).at[idx].set(jnp.arange(k, dtype=jnp.int32))
        out = jnp.zeros((n, k + 1), self.data.dtype).at[self.row, place[self.col]].add(self.data)
        return Dense(out[:, :k])  # column k collected the entries of the other columns

    def mv(self, w):
        w = jnp.asarray(w)
        if self.padded_products:
            return SparseRows.mv(self, w)
        contrib = self.data * w[self.col] if w.ndim == 1 else self.data[:, None] * w[self.col]
        out = jnp.zeros((self.indices.shape[0],) + w.shape[1:], dtype=jnp.result_type(self.data, w))
        return out.at[self.row].add(contrib)

    def rmv_add(self, u, w):
        u, w = jnp.asarray(u), jnp.asarray(w)
        if self.padded_products:
            return SparseRows.rmv_add(self, u, w)
        contrib = self.data * u[self.row] if u.ndim == 1 else self.data[:, None] * u[self.row]
        return w.at[self.col].add(contrib.astype(w.dtype))


class Structured(Sparse):
    """A sparse ``n x (p q)`` matrix acting on a matrix variable ``W`` of shape ``param_shape =
    (p, q)`` through ``vec(W)`` (row-major): ``mv(W) = A vec(W)``, ``rmv(u) = mat(A^T u)``
    (Pdprox note section 3.5, "matrix/structured operators"). Built by :func:`task_indexed`
    (multi-task rows, margin ``x_i^T W[:, t_i]``) and :func:`observed_entries` (matrix completion,
    margin ``W[i_k, j_k]``).

    ``copies = R`` repeats every margin ``R`` times (``mv`` returns ``(n, R)``, ``rmv`` sums the
    ``R`` columns first): one sample with ``R`` dual variables, e.g. the ``R``-threshold hinge of
    ordinal matrix factorisation (Pdprox section 5.3); then ``||A||_2^2`` is ``R`` times that of
    the unrepeated matrix.
    """

    w_shape: tuple = eqx.field(static=True, default=())
    copies: int | None = eqx.field(static=True, default=None)

    @property
    def param_shape(self):
        return self.w_shape

    def mv(self, w):
        z = Sparse.mv(self, jnp.reshape(w, (-1,)))
        return z if self.copies is None else jnp.broadcast_to(z[:, None], z.shape + (self.copies,))

    def rmv(self, u):
        u = jnp.asarray(u)
        if self.copies is not None:
            u = jnp.sum(u, axis=-1)
        zeros = jnp.zeros((self.n_features,), dtype=jnp.result_type(self.values, u))
        return jnp.reshape(Sparse.rmv_add(self, u, zeros), self.w_shape)

    def rmv_add(self, u, w):
        return w + self.rmv(u)

    def rows(self, idx):
        ind, val = self.indices[idx], self.values[idx]
        row = jnp.repeat(jnp.arange(ind.shape[0], dtype=jnp.int32), ind.shape[1])
        return Structured(ind, val, self.n_features, val.ravel(), row, ind.ravel(), True, self.w_shape,
                          self.copies)

    def frobenius_sq(self):
        return Sparse.frobenius_sq(self) * (1 if self.copies is None else self.copies)

    def spectral_norm_sq(self, iters: int = 100, key: int = 0):
        s = Sparse(self.indices, self.values, self.n_features, self.data, self.row, self.col,
                   self.padded_products).spectral_norm_sq(iters, key)
        return s * (1 if self.copies is None else self.copies)


def _structured(X, w_shape, copies=None) -> Structured:
    op = sparse(X)
    return Structured(op.indices, op.values, op.n_features, op.data, op.row, op.col, op.padded_products,
                      tuple(int(s) for s in w_shape), copies)


def task_indexed(X, tasks, n_tasks: int | None = None) -> Structured:
    """Multi-task operator (Pdprox section 5.2, School): sample ``i`` belongs to task ``t_i`` and
    its margin is ``z_i = x_i^T W[:, t_i]`` with ``W`` of shape ``(d, T)``. As a matrix on
    ``vec(W)`` row ``i`` holds ``x_i`` in columns ``j T + t_i``, so ``A^T u`` puts
    ``sum_{i in task t} u_i x_i`` in column ``t`` of the ``(d, T)`` result, and ``||A||_2^2 =
    max_t ||X_t||_2^2``.

    Args:
        X: ``(n, d)`` features (dense or scipy.sparse).
        tasks: ``(n,)`` integer task ids in ``[0, n_tasks)``.
        n_tasks: ``T`` (default ``max(tasks) + 1``).
    """
    import scipy.sparse as sp

    X = sp.csr_matrix(X)
    tasks = np.asarray(tasks)
    n, d = X.shape
    if tasks.shape != (n,) or not np.issubdtype(tasks.dtype, np.integer):
        raise ValueError(f"tasks must be {n} integer task ids, got shape {tasks.shape}, dtype {tasks.dtype}")
    T = int(tasks.max()) + 1 if n_tasks is None else int(n_tasks)
    if n and (tasks.min() < 0 or tasks.max() >= T):
        raise ValueError(f"task ids must lie in [0, {T}), got range [{tasks.min()}, {tasks.max()}]")
    coo = X.tocoo()
    M = sp.csr_matrix((coo.data, (coo.row, coo.col * T + tasks[coo.row])), shape=(n, d * T))
    return _structured(M, (d, T))


def observed_entries(rows, cols, shape, copies: int | None = None) -> Structured:
    """Matrix-completion operator (Pdprox section 5.3): the margin of observation ``k`` is
    ``z_k = W[i_k, j_k]`` (``W`` of shape ``shape = (m, p)``); ``A^T u`` scatters ``u_k`` into an
    ``(m, p)`` matrix (adding up repeated entries). ``||A||_2^2`` is the largest number of times
    an entry is observed (times ``copies``).

    Args:
        rows, cols: ``(k,)`` integer indices of the observed entries.
        shape: ``(m, p)``.
        copies: repeat each margin ``R`` times (``(k, R)`` margins; see :class:`Structured`).
    """
    import scipy.sparse as sp

    rows, cols = np.asarray(rows), np.asarray(cols)
    m, p = (int(s) for s in shape)
    if rows.shape != cols.shape or rows.ndim != 1:
        raise ValueError(f"rows and cols must be 1-D of equal length, got {rows.shape} and {cols.shape}")
    if rows.size and (rows.min() < 0 or rows.max() >= m or cols.min() < 0 or cols.max() >= p):
        raise ValueError(f"observed entries must lie inside a {m} x {p} matrix")
    if copies is not None and not int(copies) >= 1:
        raise ValueError(f"copies must be a positive integer, got {copies!r}")
    k = rows.size
    M = sp.csr_matrix((np.ones(k), (np.arange(k), rows.astype(np.int64) * p + cols)), shape=(k, m * p))
    return _structured(M, (m, p), None if copies is None else int(copies))


def _on_other_processes(x) -> bool:
    """``x`` spans devices of other processes (rows sharded over hosts): its column statistics are
    reduced by XLA across them rather than read on the host."""
    return isinstance(x, jax.Array) and not x.is_fully_addressable


def _reduced(f, x) -> np.ndarray:
    """``f(x)`` computed by XLA across the processes that hold ``x``, now (also while tracing a
    function that closes over ``x``), as a host array."""
    with jax.ensure_compile_time_eval():
        return np.asarray(jax.jit(f, out_shardings=None)(x))


def dense(X) -> Dense:
    """Wrap a dense ``(n, d)`` array (NumPy or JAX) as an operator."""
    X = jnp.asarray(X)
    if X.ndim != 2:
        raise ValueError(f"X must be a 2-D array (n_samples, n_features), got shape {X.shape}")
    if not jnp.issubdtype(X.dtype, jnp.floating):
        X = X.astype(jnp.result_type(float))
    return Dense(X)


def sparse(X, dtype=None) -> Sparse:
    """Convert a ``scipy.sparse`` matrix (any format) to a :class:`Sparse` operator."""
    import scipy.sparse as sp

    if not sp.issparse(X):
        raise TypeError(f"sparse() expects a scipy.sparse matrix, got {type(X).__name__}")
    X = sp.csr_matrix(X)
    X.sum_duplicates()
    X.sort_indices()
    n, d = X.shape
    lengths = np.diff(X.indptr)
    p = max(int(lengths.max()) if n else 0, 1)
    dtype = dtype or jnp.result_type(float)
    ind = np.zeros((n, p), dtype=np.int32)
    val = np.zeros((n, p), dtype=dtype)
    stored = np.arange(p)[None, :] < lengths[:, None]  # row-major, the CSR order of the entries
    ind[stored] = X.indices
    val[stored] = X.data
    # the coordinate list padded with explicit zeros (entry (0, 0), value 0: no product changes) to
    # a length with few significant bits, so that matrices of similar size (cross-validation folds)
    # have the same shapes and share their compiled solves
    extra = rounded_size(X.nnz) - X.nnz
    rows = np.concatenate([np.repeat(np.arange(n, dtype=np.int32), lengths), np.zeros(extra, np.int32)])
    cols = np.concatenate([np.asarray(X.indices, np.int32), np.zeros(extra, np.int32)])
    data = np.concatenate([X.data.astype(dtype), np.zeros(extra, dtype)])
    return Sparse(jnp.asarray(ind), jnp.asarray(val), int(d), jnp.asarray(data), jnp.asarray(rows), jnp.asarray(cols),
                  padded_products=bool(p * n <= 1.5 * max(X.nnz, 1)))


def rounded_size(k: int) -> int:
    """``k`` rounded up to a multiple of ``2^(floor(log2 k) - 3)``: at most 1/8 more, eight sizes
    per octave (array lengths that share compiled code: the padded coordinate list here, the
    estimators' padded rows, :mod:`jaxprox.sklearn`)."""
    step = 1 << max(int(k).bit_length() - 4, 0)
    return -(-int(k) // step) * step


def as_operator(X) -> LinearOperator:
    """Accept an operator, a dense array or a scipy.sparse matrix."""
    if isinstance(X, LinearOperator):
        return X
    try:
        import scipy.sparse as sp

        if sp.issparse(X):
            return sparse(X)
    except ImportError:  # pragma: no cover
        pass
    return dense(X)


def shard_rows(op: LinearOperator, mesh=None, axis: str = "data") -> LinearOperator:
    """Place an operator's data on several devices, split by samples.

    ``mv`` and ``rmv`` then run as sharded products: ``A w`` is computed where each block of rows
    lives and ``A^T u`` becomes a cross-device reduction, both inserted by XLA's SPMD partitioner,
    so every solver runs unchanged on the sharded operator.

    * :class:`Dense`: rows split evenly over the mesh axis (``n`` must be divisible by its size).
    * :class:`Sparse`: the coordinate list is split by non-zeros (padded with explicit zeros to a
      multiple of the mesh size, which changes no product); the padded rows used for row access
      stay replicated.

    ``mesh`` defaults to a 1-D mesh over all devices.
    """
    from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

    if mesh is None:
        mesh = Mesh(np.array(jax.devices()), (axis,))
    k = mesh.shape[axis]
    rows = NamedSharding(mesh, P(axis, None))
    flat = NamedSharding(mesh, P(axis))
    if isinstance(op, Dense):
        if op.X.shape[0] % k:
            raise ValueError(f"a dense operator with {op.X.shape[0]} rows cannot be split evenly over "
                             f"{k} devices; drop rows or use a sparse operator")
        return Dense(jax.device_put(op.X, rows))
    if isinstance(op, Sparse):
        pad = (-op.data.shape[0]) % k
        data = jnp.pad(op.data, (0, pad))
        row = jnp.pad(op.row, (0, pad))
        col = jnp.pad(op.col, (0, pad))
        return Sparse(op.indices, op.values, op.n_features, jax.device_put(data, flat),
                      jax.device_put(row, flat), jax.device_put(col, flat), padded_products=False)
    raise TypeError(f"cannot shard a {type(op).__name__}")


@compiled
def largest_eigenvalue(op, iters: int = 100, key: int = 0, row_weights=None):
    """The largest eigenvalue of ``A^T diag(c) A`` (``c = row_weights``, default all ones: ``||A||_2^2``).

    Exact when the operator has a Gram matrix with the same non-zero eigenvalues of side at most
    :func:`exact_eig_side` ``(iters)`` (:meth:`LinearOperator.small_gram`: ``d`` or, for dense
    data, ``n`` that small): one GEMM and a symmetric eigenvalue call (LAPACK on a CPU), in one
    pass over ``A`` and no dearer than the power iteration, and little for XLA to compile
    (the power iteration's loop of two matrix-vector kernels is several times dearer to
    compile). Otherwise ``iters`` power iterations from the fixed probe vector
    :func:`jaxprox.base.probe_vector` (deterministic; a lower bound converging from below).
    Compiled once per operator structure."""
    gram = op.small_gram(row_weights, exact_eig_side(iters))
    if gram is not None:
        return jnp.maximum(jnp.linalg.eigvalsh(gram)[-1], 0.0)
    c = 1.0 if row_weights is None else row_weights
    v0 = probe_vector(op.param_shape, op.dtype, key)

    def body(_, v):
        g = op.rmv(c * op.mv(v))
        return g / jnp.maximum(jnp.linalg.norm(g), jnp.finfo(g.dtype).tiny)

    v = jax.lax.fori_loop(0, iters, body, v0)
    return jnp.sum(c * op.mv(v) ** 2)
