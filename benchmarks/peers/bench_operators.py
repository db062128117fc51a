"""Sparse operator products against scipy.sparse (CSR) on a9a and w8a, and dense vs sparse.

For each dataset: time of ``A @ w`` and ``A.T @ u`` for jaxprox's padded-row ``Sparse`` operator
(jitted, warm), for jaxprox's ``Dense`` operator, and for scipy CSR, in one run; ratios are
jaxprox / scipy (below 1 = faster than scipy). Checks that all agree to 1e-12.
"""
from __future__ import annotations

import sys
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

sys.path[:0] = [str(Path(__file__).resolve().parent), str(Path(__file__).resolve().parents[1])]  # this group, harness
jax.config.update("jax_enable_x64", True)

import harness  # noqa: E402

import jaxprox as jp  # noqa: E402


_mv = jax.jit(lambda op, w: op.mv(w))
_rmv = jax.jit(lambda op, u: op.rmv(u))


def bench(name):
    X, y = jp.datasets.load(name)
    op_s = jp.operators.sparse(X)
    op_d = jp.operators.dense(X.toarray())
    rng = np.random.default_rng(0)
    w = rng.standard_normal(X.shape[1])
    u = rng.standard_normal(X.shape[0])
    wj, uj = jnp.asarray(w), jnp.asarray(u)
    Xt = X.T.tocsr()
    rows = []
    ref_mv, t_mv_sp = harness.time_call(lambda: X @ w, repeat=20)
    ref_rmv, t_rmv_sp = harness.time_call(lambda: Xt @ u, repeat=20)
    for label, op in (("jaxprox Sparse", op_s), ("jaxprox Dense", op_d)):
        mv, c_mv, t_mv = harness.time_jax(_mv, op, wj, repeat=20)
        rmv, c_rmv, t_rmv = harness.time_jax(_rmv, op, uj, repeat=20)
        assert np.allclose(mv, ref_mv, atol=1e-10) and np.allclose(rmv, ref_rmv, atol=1e-10)
        rows.append([label, t_mv * 1e3, t_mv / t_mv_sp, t_rmv * 1e3, t_rmv / t_rmv_sp,
                     (c_mv + c_rmv) * 1e3])
    rows.append(["scipy CSR (reference)", t_mv_sp * 1e3, 1.0, t_rmv_sp * 1e3, 1.0, None])
    head = f"{name}: n={X.shape[0]}, d={X.shape[1]}, nnz={X.nnz}, padded width={op_s.indices.shape[1]}"
    table = harness.markdown_table(
        ["operator", "mv ms", "mv ratio vs scipy", "rmv ms", "rmv ratio vs scipy", "compile ms"], rows)
    return head, table


def main():
    sections = [bench(name) for name in ("a9a", "w8a") if jp.datasets.available(name)]
    path = harness.write_results(
        "operators", "Sparse operator products vs scipy.sparse",
        sections,
        notes="Median of 20 warm runs; compile time separate. Ratio = jaxprox time / scipy time "
              "(< 1 means jaxprox is faster). jaxprox runs float64 on the CPU backend.")
    print(path.read_text())


if __name__ == "__main__":
    main()
