"""XLA:CPU's intra-op pool after ``import jaxprox`` (:func:`jaxprox._compile.widen_cpu_pool`):
with jaxlib 0.10, two batched LAPACK calls side by side on a pool of two threads (one per core of
a 2-core machine) wait on each other forever; the one-vs-rest fit below hung on every run there
before the pool was widened. Each check runs in a fresh process, where the backend starts after
the import, with a time limit instead of a hang."""
import collections
import os
import subprocess
import sys
from pathlib import Path

import jaxlib
import pytest

ROOT = Path(__file__).resolve().parents[1]
OLD_JAXLIB = tuple(int(p) for p in jaxlib.__version__.split(".")[:2]) < (0, 11)

CHILD = """
import collections, os, sys
import jax
jax.config.update("jax_enable_x64", True)
import jaxprox
import jax.numpy as jnp
jnp.ones(3).sum().block_until_ready()
names = collections.Counter(open(f"/proc/self/task/{t}/comm").read().strip() for t in os.listdir("/proc/self/task"))
print("pool", names["tf_XLAEigen"], os.environ.get("PJRT_NPROC"))
if sys.argv[1] == "fit":
    from sklearn.datasets import load_digits
    from jaxprox.sklearn import LogisticRegression
    X, y = load_digits(return_X_y=True)
    est = LogisticRegression(C=1.0, multi_class="ovr").fit(X / 16.0, y)
    print("fit", est.converged_, "x".join(map(str, est.coef_.shape)), est.score(X / 16.0, y))
"""


def _child(arg, **env):
    base = {k: v for k, v in os.environ.items() if k != "PJRT_NPROC"}
    base.update(env, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    r = subprocess.run([sys.executable, "-c", CHILD, arg], env=base, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    return dict((line.split()[0], line.split()[1:]) for line in r.stdout.splitlines())


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="counts the threads in /proc")
@pytest.mark.skipif(not OLD_JAXLIB, reason="jaxlib >= 0.11 has no parallel batched LAPACK path")
def test_the_pool_is_widened_and_a_batched_ovr_fit_returns():
    out = _child("fit")
    assert int(out["pool"][0]) >= 8 and int(out["pool"][1]) >= 8
    assert out["fit"][0] == "True" and out["fit"][1] == "10x64" and float(out["fit"][2]) > 0.95


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="counts the threads in /proc")
def test_a_pool_size_the_user_set_stands():
    out = _child("pool", PJRT_NPROC="3")
    assert out["pool"] == ["3", "3"]
