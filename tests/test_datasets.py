"""LIBSVM reader, bundled datasets, synthetic generators."""
import bz2
import gzip

import numpy as np
import pytest

import jaxprox as jp
from jaxprox import datasets


def test_bundled_shapes_and_labels():
    expect = {"heart_scale": (270, 13), "a1a": (1605, 123), "breast-cancer_scale": (683, 10),
              "australian": (690, 14), "german.numer": (1000, 24)}
    for name, shape in expect.items():
        X, y = datasets.load(name)
        assert X.shape == shape, name
        assert set(np.unique(y)) == {-1.0, 1.0}, name
        assert np.all(np.isfinite(X))
    X, y = datasets.load("heart_scale")
    assert (y == -1).sum() == 150 and (y == 1).sum() == 120


def test_reader_formats_and_mapping(tmp_path):
    text = "2 1:0.5 3:-1\n1 2:2 # comment\n\n2 3:4\n"
    plain = tmp_path / "toy"
    plain.write_text(text)
    with bz2.open(tmp_path / "toy.bz2", "wt") as f:
        f.write(text)
    with gzip.open(tmp_path / "toy.gz", "wt") as f:
        f.write(text)
    for p in (plain, tmp_path / "toy.bz2", tmp_path / "toy.gz"):
        X, y = datasets.load_libsvm(p, n_features=5)
        assert X.shape == (3, 5)
        np.testing.assert_array_equal(y, [1, -1, 1])
        np.testing.assert_allclose(X.toarray()[0], [0.5, 0, -1, 0, 0])
    X, y = datasets.load_libsvm(plain, binary=False)
    np.testing.assert_array_equal(y, [2, 1, 2])
    assert X.shape == (3, 3)


def test_reader_errors(tmp_path):
    with pytest.raises(FileNotFoundError):
        datasets.load_libsvm(tmp_path / "missing")
    bad = tmp_path / "bad"
    bad.write_text("1 1:0.5 x:2\n")
    with pytest.raises(ValueError, match="bad:1"):
        datasets.load_libsvm(bad)
    ok = tmp_path / "ok"
    ok.write_text("1 4:1\n-1 1:1\n")
    with pytest.raises(ValueError, match="exceeds n_features"):
        datasets.load_libsvm(ok, n_features=2)
    with pytest.raises(KeyError, match="unknown dataset"):
        datasets.load("no-such-data")


def test_compressed_bundled_dataset_matches_sklearn():
    """a9a ships bz2-compressed in the package: the reader agrees with scikit-learn's on it."""
    import bz2
    import hashlib

    from sklearn.datasets import load_svmlight_file

    path = datasets.find("a9a")
    assert path.suffix == ".bz2" and path.parent.name == "data"
    raw = bz2.open(path).read()
    assert hashlib.sha256(raw).hexdigest() == "f5d5ffd8d865ff41328e7ee043e4b020816914ff6843ff15b98905ddbedce906"
    X, y = datasets.load("a9a")
    Xs, ys = load_svmlight_file(bz2.open(path), n_features=123)
    assert X.shape == (32561, 123) and X.nnz == 451592
    assert abs(X - Xs).max() == 0
    np.testing.assert_array_equal(y, np.where(ys > 0, 1.0, -1.0))


@pytest.mark.parametrize("name, shape, labels", [("phishing", (11055, 68), (4898, 6157)),
                                                 ("mushrooms", (8124, 112), (3916, 4208)),
                                                 ("svmguide3", (1243, 21), (947, 296))])
def test_bundled_datasets_shapes_and_labels(name, shape, labels):
    X, y = datasets.load(name)
    assert X.shape == shape
    assert (int(np.sum(y == -1)), int(np.sum(y == 1))) == labels


def test_synthetic_generators():
    X, y, w = datasets.make_drsvm_synthetic(200, 10, sigma=0.5, seed=1)
    assert X.shape == (200, 10) and set(np.unique(y)) <= {-1.0, 1.0}
    assert np.mean(np.sign(X @ w) == y) > 0.8  # labels follow the planted model up to noise
    X2, *_ = datasets.make_drsvm_synthetic(200, 10, sigma=0.5, seed=1)
    np.testing.assert_array_equal(X, X2)

    Xg, yg, groups, wg = datasets.make_grouped_interactions(n=50, seed=0)
    assert Xg.shape == (50, 2604) and len(np.unique(groups)) == 63
    assert np.all(np.diff(Xg.indptr) == 63)  # one active feature per group
    np.testing.assert_allclose(Xg.data, 1 / np.sqrt(63))
    sizes = np.bincount(groups)
    assert sorted(set(sizes)) == [4, 16, 64]

    r, c, v, M = datasets.make_low_rank_completion(40, 30, rank=3, fraction=0.25, seed=0)
    assert len(r) == 300 and np.linalg.matrix_rank(M) == 3
    np.testing.assert_allclose(v, M[r, c])
    assert len(set(zip(r, c))) == 300
    with pytest.raises(ValueError):
        datasets.make_low_rank_completion(5, 5, rank=1)
