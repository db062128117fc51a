"""Datasets: a LIBSVM reader, small real datasets bundled with the package, larger ones found on
disk, and the synthetic generators the papers use.

Bundled (``jaxprox/data/``, see ``jaxprox/data/ATTRIBUTION.md`` for sources and licences):
``heart_scale``, ``a1a``, ``breast-cancer_scale``, ``australian``, ``german.numer``, and
(bz2-compressed) ``a9a``, ``phishing``, ``mushrooms``, ``splice``, ``svmguide3``.

Other datasets are looked up under ``$JAXPROX_DATA`` and then a ``shared/data`` folder beside the
current directory or the repository, with the LIBSVM file layout (``w8a/w8a``,
``ijcnn1/ijcnn1.bz2``, ...).
"""
from __future__ import annotations

import bz2
import gzip
import itertools
import os
from pathlib import Path

import numpy as np
import scipy.sparse as sp

# name -> (file under the package's data folder or a data root, n_features); a bundled file may
# be stored compressed (``<file>.bz2`` in ``jaxprox/data/``)
_FILES = {
    "heart_scale": ("heart_scale", 13),
    "heart": ("heart_scale", 13),
    "a1a": ("a1a", 123),
    "breast-cancer_scale": ("breast-cancer_scale", 10),
    "breast-cancer": ("breast-cancer_scale", 10),
    "australian": ("australian", 14),
    "german.numer": ("german.numer", 24),
    "a9a": ("a9a/a9a", 123),
    "a9a.t": ("a9a/a9a.t", 123),
    "a1a.t": ("adult_subsets/a1a.t", 123),
    "a8a": ("adult_subsets/a8a", 123),
    "a8a.t": ("adult_subsets/a8a.t", 123),
    "w8a": ("w8a/w8a", 300),
    "ijcnn1": ("ijcnn1/ijcnn1.bz2", 22),
    "ijcnn1.t": ("ijcnn1/ijcnn1.t.bz2", 22),
    "mushrooms": ("mushrooms/mushrooms", 112),
    "phishing": ("phishing/phishing", 68),
    "svmguide3": ("svmguide3/svmguide3.dense.csv", 21),
    "splice": ("splice/splice_train_then_test", 60),
    "svmguide1": ("svmguide1/svmguide1", 4),
    "heart_unscaled": ("heart/heart", 13),
    "australian_full": ("australian/australian", 14),
    "letter": ("letter/letter.scale", 16),
    "pendigits": ("pendigits/pendigits", 16),
    "sector": ("sector/sector.scale.bz2", 55197),
}
_PACKAGE_DATA = Path(__file__).resolve().parent / "data"
#: the small sets, loaded dense by default
SMALL = ("heart_scale", "a1a", "breast-cancer_scale", "australian", "german.numer")
#: the multiclass files, whose labels are kept as read
_MULTICLASS = ("letter", "pendigits", "sector")


def bundled(name: str) -> Path | None:
    """Path of a dataset shipped in ``jaxprox/data/`` (plain or ``.bz2``), or ``None``."""
    base = Path(_FILES[name][0]).name if name in _FILES else None
    for candidate in ((base, base + ".bz2") if base else ()):
        if (_PACKAGE_DATA / candidate).exists():
            return _PACKAGE_DATA / candidate
    return None


def _open(path: Path):
    s = str(path)
    if s.endswith(".bz2"):
        return bz2.open(s, "rt")
    if s.endswith(".gz"):
        return gzip.open(s, "rt")
    return open(s, "rt")


def one_hot(labels) -> tuple[np.ndarray, np.ndarray]:
    """``(Y, classes)``: the ``(n, K)`` one-hot rows of ``labels`` (any values; the classes sorted)
    for :class:`jaxprox.losses.Multinomial`, and the ``K`` class values."""
    classes, index = np.unique(np.asarray(labels), return_inverse=True)
    return np.eye(len(classes))[index.ravel()], classes


def map_binary_labels(y: np.ndarray) -> np.ndarray:
    """Map two distinct label values to {-1, +1} (the smaller to -1). Raises if not two-class."""
    vals = np.unique(y)
    if len(vals) != 2:
        raise ValueError(f"expected two classes, found {len(vals)} distinct labels: {vals[:10]}")
    return np.where(y == vals[1], 1.0, -1.0)


def load_libsvm(path, n_features: int | None = None, *, binary: bool | None = None, dense: bool = False,
                dtype=np.float64):
    """Read a LIBSVM/svmlight text file (plain, ``.bz2`` or ``.gz``).

    Returns ``(X, y)`` with ``X`` a ``scipy.sparse.csr_matrix`` (or a dense array if ``dense``) of
    shape ``(n, n_features)`` (default: the largest index seen) and ``y`` a float array. Labels of a
    two-class file are mapped to {-1, +1} (``binary=None`` does this whenever exactly two labels
    occur; ``binary=False`` keeps them as read). Indices are 1-based as in LIBSVM.
    """
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"no such LIBSVM file: {path}")
    labels, indptr, indices, data = [], [0], [], []
    with _open(path) as fh:
        for lineno, line in enumerate(fh, 1):
            line = line.split("#", 1)[0].strip()
            if not line:
                continue
            parts = line.split()
            try:
                labels.append(float(parts[0]))
                for tok in parts[1:]:
                    i, v = tok.split(":", 1)
                    indices.append(int(i) - 1)
                    data.append(float(v))
            except ValueError as e:
                raise ValueError(f"{path}:{lineno}: malformed LIBSVM line ({e})") from None
            indptr.append(len(indices))
    indices = np.asarray(indices, dtype=np.int64)
    if len(indices) and indices.min() < 0:
        raise ValueError(f"{path}: feature indices must be >= 1")
    seen = int(indices.max()) + 1 if len(indices) else 0
    d = seen if n_features is None else int(n_features)
    if seen > d:
        raise ValueError(f"{path}: feature index {seen} exceeds n_features={d}")
    X = sp.csr_matrix((np.asarray(data, dtype=dtype), indices, np.asarray(indptr)), shape=(len(labels), d))
    X.sum_duplicates()
    y = np.asarray(labels, dtype=dtype)
    if binary or (binary is None and len(np.unique(y)) == 2):
        y = map_binary_labels(y)
    return (X.toarray() if dense else X), y


def data_roots() -> list[Path]:
    """Folders searched for non-bundled datasets: ``$JAXPROX_DATA``, then ``shared/data`` beside the
    current directory or the repository."""
    roots = []
    if os.environ.get("JAXPROX_DATA"):
        roots.append(Path(os.environ["JAXPROX_DATA"]))
    here = Path(__file__).resolve().parent.parent
    for base in (Path.cwd(), here):
        for up in (base, *base.parents[:2]):
            roots.append(up / "shared" / "data")
            roots.append(up.parent / "shared" / "data")
    seen, out = set(), []
    for r in roots:
        if r not in seen and r.is_dir():
            seen.add(r)
            out.append(r)
    return out


def find(name: str) -> Path:
    """Path of a named dataset file (bundled first, then the data roots)."""
    if name not in _FILES:
        raise KeyError(f"unknown dataset {name!r}; known: {sorted(_FILES)}")
    path = bundled(name)
    if path is not None:
        return path
    rel = _FILES[name][0]
    for root in data_roots():
        if (root / rel).exists():
            return root / rel
    raise FileNotFoundError(
        f"dataset {name!r} ({rel}) not found; set JAXPROX_DATA to a folder containing {rel}")


def available(name: str) -> bool:
    try:
        find(name)
        return True
    except (FileNotFoundError, KeyError):
        return False


def _load_dense_csv(path: Path, dtype):
    """``label,f1,...,fd`` rows without a header (LIBSVM sets converted to CSV)."""
    with _open(path) as fh:
        a = np.loadtxt(fh, delimiter=",", dtype=dtype, ndmin=2)
    return sp.csr_matrix(a[:, 1:]), a[:, 0]


def load(name: str, *, dense: bool | None = None, dtype=np.float64):
    """Load a named dataset as ``(X, y)`` (labels in {-1,+1} for two-class data).

    ``dense=None`` returns a dense array for the small sets (:data:`SMALL`) and a CSR matrix
    otherwise.
    """
    path = find(name)
    d = _FILES[name][1]
    if ".csv" in path.name:
        X, y = _load_dense_csv(path, dtype)
        if len(np.unique(y)) == 2:
            y = map_binary_labels(y)
    else:
        X, y = load_libsvm(path, n_features=d, binary=False if name in _MULTICLASS else None, dtype=dtype)
    if dense is None:
        dense = _FILES[name][0] in SMALL
    return (X.toarray() if dense else X), y


# --------------------------------------------------------------------------- synthetic generators
def make_drsvm_synthetic(n: int = 1000, d: int = 100, sigma: float = 0.5, seed: int = 0):
    """DRSVM paper §5.1: ``w*, x_i ~ N(0, I_d)``, ``y_i = sign(<w*, x_i> + xi_i)`` with scalar noise
    ``xi_i ~ N(0, sigma^2)`` (the noise is scalar). Returns ``(X, y, w_star)``."""
    rng = np.random.default_rng(seed)
    w = rng.standard_normal(d)
    X = rng.standard_normal((n, d))
    s = X @ w + sigma * rng.standard_normal(n)
    y = np.where(s >= 0, 1.0, -1.0)
    return X, y, w


def interaction_groups(seq_len: int = 7, order: int = 3, alphabet: int = 4):
    """Group structure of one-hot interaction features of all position subsets of size <= order.

    For length-7 ACGT sequences and order 3 this is Pdprox §5.1's MEMset layout: 7 groups of 4,
    21 of 16 and 35 of 64, i.e. 63 groups and 2604 features. Returns ``(subsets, group_ids)``.
    """
    subsets = [c for k in range(1, order + 1) for c in itertools.combinations(range(seq_len), k)]
    group_ids = np.concatenate([np.full(alphabet ** len(c), g) for g, c in enumerate(subsets)])
    return subsets, group_ids


def make_grouped_interactions(n: int = 2000, seq_len: int = 7, order: int = 3, n_active: int = 8,
                              noise: float = 0.1, seed: int = 0, normalize: bool = True):
    """Random ACGT sequences encoded as Pdprox §5.1 interaction features, with labels from a planted
    group-sparse linear model (``n_active`` groups active) plus label noise.

    Returns ``(X, y, group_ids, w_star)``; each row has one non-zero per group (63 of 2604), equal
    to ``1/sqrt(#groups)`` after normalisation.
    """
    rng = np.random.default_rng(seed)
    alphabet = 4
    subsets, group_ids = interaction_groups(seq_len, order, alphabet)
    seqs = rng.integers(0, alphabet, size=(n, seq_len))
    offsets = np.concatenate([[0], np.cumsum([alphabet ** len(c) for c in subsets])[:-1]])
    cols = np.empty((n, len(subsets)), dtype=np.int64)
    for g, c in enumerate(subsets):
        code = np.zeros(n, dtype=np.int64)
        for pos in c:
            code = code * alphabet + seqs[:, pos]
        cols[:, g] = offsets[g] + code
    val = 1.0 / np.sqrt(len(subsets)) if normalize else 1.0
    X = sp.csr_matrix((np.full(cols.size, val), cols.ravel(), np.arange(0, cols.size + 1, len(subsets))),
                      shape=(n, len(group_ids)))
    w = np.zeros(len(group_ids))
    active = rng.choice(len(subsets), size=n_active, replace=False)
    for g in active:
        w[group_ids == g] = rng.standard_normal(np.sum(group_ids == g))
    s = X @ w
    s = s - np.median(s)
    y = np.where(s + noise * np.std(s) * rng.standard_normal(n) >= 0, 1.0, -1.0)
    return X, y, group_ids, w


def make_low_rank_completion(m: int = 943, n: int = 1682, rank: int = 10, n_observed: int | None = None,
                             fraction: float | None = None, noise: float = 0.0, seed: int = 0):
    """Low-rank matrix ``M = U V^T`` (``m x n``, entries of unit variance) observed on a random set
    of entries, chosen by ``n_observed`` or ``fraction``.

    Returns ``(rows, cols, values, M)`` with ``values = M[rows, cols] + noise * N(0, 1)``.
    """
    rng = np.random.default_rng(seed)
    if (n_observed is None) == (fraction is None):
        raise ValueError("give exactly one of n_observed and fraction")
    k = int(n_observed if n_observed is not None else round(fraction * m * n))
    if not 0 < k <= m * n:
        raise ValueError(f"number of observed entries must be in (0, {m * n}], got {k}")
    U = rng.standard_normal((m, rank)) / rank**0.25
    V = rng.standard_normal((n, rank)) / rank**0.25
    M = U @ V.T
    flat = rng.choice(m * n, size=k, replace=False)
    rows, cols = np.divmod(flat, n)
    vals = M[rows, cols] + noise * rng.standard_normal(k)
    return rows, cols, vals, M
