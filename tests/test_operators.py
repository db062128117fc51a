"""Dense and sparse operators give identical products, rows, norms and spectral norms."""
import jax
import jax.numpy as jnp
import numpy as np
import pytest
import scipy.sparse as sp

import jaxprox as jp


def _pair(seed=0, n=37, d=23, density=0.2, ragged=True):
    rng = np.random.default_rng(seed)
    X = sp.random(n, d, density=density, random_state=seed, format="csr")
    if ragged:  # one long row so padding and COO layouts differ
        X = X.tolil()
        X[3, :] = rng.standard_normal(d)
        X = X.tocsr()
    return X, jp.operators.sparse(X), jp.operators.dense(X.toarray())


@pytest.mark.parametrize("ragged", [True, False])
def test_products_match_scipy(ragged):
    X, S, D = _pair(ragged=ragged)
    rng = np.random.default_rng(1)
    w, u = rng.standard_normal(X.shape[1]), rng.standard_normal(X.shape[0])
    W, U = rng.standard_normal((X.shape[1], 3)), rng.standard_normal((X.shape[0], 3))
    for op in (S, D):
        np.testing.assert_allclose(op.mv(w), X @ w, atol=1e-12)
        np.testing.assert_allclose(op.rmv(u), X.T @ u, atol=1e-12)
        np.testing.assert_allclose(op.mv(W), X @ W, atol=1e-12)
        np.testing.assert_allclose(op.rmv(U), X.T @ U, atol=1e-12)
        np.testing.assert_allclose(op.rmv_add(u, w), w + X.T @ u, atol=1e-12)
        np.testing.assert_allclose(op.row_norms_sq(), np.asarray(X.multiply(X).sum(1)).ravel(), atol=1e-12)
        np.testing.assert_allclose(op.todense(), X.toarray(), atol=0)
    assert S.shape == D.shape == X.shape


def test_weighted_gram_routes(monkeypatch):
    """``A^T diag(c) A``: dense GEMM, sparse densified, sparse scatter of row outer products."""
    X, S, D = _pair()
    c = np.random.default_rng(2).uniform(0.0, 2.0, X.shape[0])
    ref = X.T @ (X.multiply(c[:, None])).toarray()
    np.testing.assert_allclose(D.weighted_gram(c), ref, atol=1e-12)
    np.testing.assert_allclose(S.weighted_gram(c), ref, atol=1e-12)
    np.testing.assert_allclose(D.weighted_gram(c, "float32"), ref, rtol=1e-5, atol=1e-5)
    assert D.weighted_gram(c, "float32").dtype == D.dtype
    monkeypatch.setattr(jp.operators, "GRAM_DENSE_LIMIT", 0)
    np.testing.assert_allclose(S.weighted_gram(c), ref, atol=1e-12)
    np.testing.assert_allclose(S.weighted_gram(c, "float32"), ref, rtol=1e-5, atol=1e-5)


def test_rows_static_shapes_and_jit():
    X, S, D = _pair()
    idx = jnp.array([3, 0, 5, 3])
    w = jnp.arange(X.shape[1], dtype=jnp.float64)
    ref = X.toarray()[np.asarray(idx)] @ np.asarray(w)
    for op in (S, D):
        f = jax.jit(lambda op, i: op.rows(i).mv(w))
        np.testing.assert_allclose(f(op, idx), ref, atol=1e-12)
        u = jnp.array([1.0, -2.0, 0.5, 1.0])
        np.testing.assert_allclose(op.rows(idx).rmv_add(u, w), w + X.toarray()[np.asarray(idx)].T @ u, atol=1e-12)
    assert S.rows(idx).indices.shape == (4, S.indices.shape[1])


def test_spectral_norm():
    X, S, D = _pair(seed=3, n=60, d=30, density=0.5)
    ref = np.linalg.norm(X.toarray(), 2) ** 2
    for op in (S, D):
        est = float(op.spectral_norm_sq(iters=300))
        assert ref <= est <= ref * (1 + 1e-5)
    assert float(S.spectral_norm_sq()) == float(S.spectral_norm_sq())  # fixed key: deterministic


@pytest.mark.parametrize("shape", [(60, 30), (12, 300), (400, 300)])
def test_largest_eigenvalue_exact_from_small_gram_else_power(shape):
    """Exact (eigenvalues of the smaller Gram matrix) when d, or n for dense data, is at most
    EXACT_EIG_SIDE, weighted too; otherwise the power iteration's estimate from below."""
    rng = np.random.default_rng(4)
    X = rng.standard_normal(shape) * rng.uniform(0.1, 3.0, shape[1])
    c = rng.uniform(0.0, 2.0, shape[0])
    D = jp.operators.dense(X)
    S = jp.operators.sparse(sp.csr_matrix(X))
    ref = np.linalg.norm(X, 2) ** 2
    ref_c = np.linalg.eigvalsh(X.T @ (c[:, None] * X))[-1]
    small = min(shape) <= jp.operators.EXACT_EIG_SIDE
    assert (D.small_gram() is not None) == small
    assert (S.small_gram() is not None) == (shape[1] <= jp.operators.EXACT_EIG_SIDE)
    for op in (D, S):
        exact = op.small_gram() is not None
        est = float(jp.operators.largest_eigenvalue(op))
        est_c = float(jp.operators.largest_eigenvalue(op, row_weights=jnp.asarray(c)))
        if exact:
            np.testing.assert_allclose(est, ref, rtol=1e-12)
            np.testing.assert_allclose(est_c, ref_c, rtol=1e-12)
        else:
            assert ref * (1 - 1e-2) <= est <= ref * (1 + 1e-12)
        assert float(op.spectral_norm_sq()) == pytest.approx(est * (1 + 1e-6), rel=1e-14)
        # the Gram form traces no loop (the power iteration's loop of matrix-vector kernels is
        # what made the norm dear to compile)
        hlo = jax.jit(lambda A: A.spectral_norm_sq()).lower(op).as_text()
        assert ("stablehlo.while" in hlo) == (not exact)
    if shape == (60, 30):  # 4 iterations cost less than a 30 x 30 Gram matrix: the power iteration
        assert D.small_gram(side=jp.operators.exact_eig_side(4)) is None
        assert float(jp.operators.largest_eigenvalue(D, iters=4)) <= ref * (1 + 1e-12)
    X32 = jp.operators.dense(X.astype(np.float32))
    assert X32.spectral_norm_sq().dtype == jnp.float32
    if small:
        np.testing.assert_allclose(float(X32.spectral_norm_sq()), ref, rtol=1e-5)


def test_vmap_over_operators_products():
    X, S, D = _pair()
    ws = jnp.asarray(np.random.default_rng(2).standard_normal((5, X.shape[1])))
    np.testing.assert_allclose(jax.vmap(S.mv)(ws), ws @ X.T.toarray(), atol=1e-12)


def test_bad_inputs():
    with pytest.raises(ValueError, match="2-D"):
        jp.operators.dense(np.ones(3))
    with pytest.raises(TypeError, match="scipy.sparse"):
        jp.operators.sparse(np.ones((3, 3)))


@pytest.mark.parametrize("ragged", [True, False])
def test_scale_rows_is_diag_c_times_A(ragged):
    """``scale_rows(c) = diag(c) A`` in each layout (both sparse layouts: padded rows and the
    coordinate list), e.g. a 0/1 mask turning rows into padding."""
    X, S, D = _pair(ragged=ragged)
    rng = np.random.default_rng(2)
    c = rng.standard_normal(X.shape[0]) * (rng.random(X.shape[0]) < 0.7)
    for op in (S, D):
        _assert_is_matrix(op.scale_rows(jnp.asarray(c)), type(op), sp.diags(c) @ X, rng)


def _assert_is_matrix(op, kind, ref, rng):
    """``op`` has layout ``kind`` and acts as the scipy matrix ``ref`` (products and dense form)."""
    assert type(op) is kind
    w, u = rng.standard_normal(ref.shape[1]), rng.standard_normal(ref.shape[0])
    np.testing.assert_allclose(op.mv(w), ref @ w, atol=1e-12)
    np.testing.assert_allclose(op.rmv(u), ref.T @ u, atol=1e-12)
    np.testing.assert_allclose(op.todense(), ref.toarray(), atol=1e-15)


@pytest.mark.parametrize("ragged", [False, True])
def test_scale_columns_is_A_diag_c_and_column_max_abs(ragged):
    """``scale_columns(c) = A diag(c)`` in each layout (the change of variables of column
    rescaling), and ``column_max_abs`` = ``max_i |A_ij|`` (0 for an empty column)."""
    X, S, D = _pair(ragged=ragged)
    X = X.tolil()
    X[:, 1] = 0.0  # an empty column
    X = X.tocsr()
    S, D = jp.operators.sparse(X), jp.operators.Dense(jnp.asarray(X.toarray()))
    rng = np.random.default_rng(3)
    c = rng.uniform(0.1, 10.0, X.shape[1])
    for op in (S, D):
        _assert_is_matrix(op.scale_columns(jnp.asarray(c)), type(op), X @ sp.diags(c), rng)
        np.testing.assert_allclose(op.column_max_abs(), np.abs(X.toarray()).max(0), rtol=1e-15)
        np.testing.assert_allclose(op.column_norms_sq(), (X.toarray() ** 2).sum(0), rtol=1e-13)
    assert S.column_max_abs()[1] == 0.0


def test_similar_sparse_matrices_share_shapes():
    """The coordinate list is padded with explicit zeros to ``rounded_size(nnz)``: matrices whose
    numbers of stored entries differ a little (cross-validation folds) have equal array shapes,
    hence one compiled solve, and the padding changes no product."""
    X = sp.random(400, 30, density=0.2, random_state=0, format="csr")
    S1, S2 = jp.operators.sparse(X[:380]), jp.operators.sparse(X[:379])
    assert X[:380].nnz != X[:379].nnz
    assert S1.data.shape == S2.data.shape == (jp.operators.rounded_size(X[:380].nnz),)
    assert jp.operators.rounded_size(1000) <= 1000 * 9 / 8
    u = np.random.default_rng(0).standard_normal(380)
    np.testing.assert_allclose(S1.rmv(u), X[:380].T @ u, atol=1e-12)


def test_linear_at_zero_start_has_no_product():
    """``linear_at(f, v, zero=True)`` is zeros of ``f(v)``'s shape and dtype with no product in
    the graph; ``zero=False`` is ``f(v)``."""
    from jaxprox.operators import linear_at

    X = np.random.default_rng(0).standard_normal((7, 3))
    A = jp.operators.as_operator(X)
    w = jnp.zeros(3)
    z = linear_at(A.mv, w, True)
    assert z.shape == (7,) and z.dtype == A.mv(w).dtype and not np.any(np.asarray(z))
    assert "dot_general" not in str(jax.make_jaxpr(lambda v: linear_at(A.mv, v, True))(w))
    v = jnp.arange(7.0)
    np.testing.assert_allclose(np.asarray(linear_at(A.rmv, v, False)), X.T @ np.arange(7.0), rtol=1e-12)


@pytest.mark.parametrize("m", [14, 200])
def test_small_mv_is_the_product(m):
    """``base.small_mv(M, v)`` is ``M @ v`` (batched too); up to order ``SMALL_MV`` it has no
    ``dot_general`` (a multiply-and-reduce, cheaper for XLA:CPU to compile), above it is the dot."""
    from jaxprox.base import SMALL_MV, small_mv

    rng = np.random.default_rng(5)
    M, v = rng.standard_normal((3, m, m)), rng.standard_normal((3, m))
    np.testing.assert_allclose(np.asarray(small_mv(jnp.asarray(M[0]), jnp.asarray(v[0]))), M[0] @ v[0], rtol=1e-12, atol=1e-12)
    got = jax.vmap(small_mv)(jnp.asarray(M), jnp.asarray(v))
    np.testing.assert_allclose(np.asarray(got), np.einsum("bij,bj->bi", M, v), rtol=1e-12, atol=1e-12)
    assert ("dot_general" in str(jax.make_jaxpr(small_mv)(M[0], v[0]))) == (m > SMALL_MV)
