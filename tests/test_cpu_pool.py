"""No two batched LAPACK calls side by side in a vmapped solve: jaxlib 0.10 runs a batched
factorisation (a vmapped Cholesky or LU) as tasks on XLA:CPU's intra-op thread pool and blocks its
own pool thread until they are done, so when every thread of the pool (one per core) is inside
such a call none of the tasks runs and the computation never returns. A one-vs-rest
``LogisticRegression`` fit, whose vmapped ProxNewton step once factored the support step's LU
beside the Newton point's Cholesky, hung on every run on a pool of two threads. The fit runs here
in a fresh process with the pool set to two threads (``PJRT_NPROC``, read when the backend
starts), with a time limit instead of a hang."""
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

CHILD = """
import collections, os
import jax
jax.config.update("jax_enable_x64", True)
import jax.numpy as jnp
from sklearn.datasets import load_digits
from jaxprox.sklearn import LogisticRegression
jnp.ones(3).sum().block_until_ready()
names = collections.Counter(open(f"/proc/self/task/{t}/comm").read().strip() for t in os.listdir("/proc/self/task"))
print("pool", names["tf_XLAEigen"])
from sklearn.model_selection import train_test_split
X, y = load_digits(return_X_y=True)
Xtr, Xte, ytr, yte = train_test_split(X / 16.0, y, test_size=0.3, random_state=0, stratify=y)
est = LogisticRegression(C=1.0, multi_class="ovr").fit(Xtr, ytr)
print("fit", est.converged_, "x".join(map(str, est.coef_.shape)), est.score(Xte, yte))
"""


def test_a_batched_ovr_fit_returns_on_a_two_thread_pool():
    env = dict(os.environ, PJRT_NPROC="2", PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    r = subprocess.run([sys.executable, "-c", CHILD], env=env, capture_output=True, text=True, timeout=240)
    assert r.returncode == 0, r.stderr[-3000:]
    out = dict((line.split()[0], line.split()[1:]) for line in r.stdout.splitlines())
    if sys.platform.startswith("linux"):
        assert out["pool"] == ["2"]
    assert out["fit"][:2] == ["True", "10x64"] and float(out["fit"][2]) > 0.9
