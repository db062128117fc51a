"""Python calls and file-to-file hops inside jaxprox during a first ``jp.solve`` (FISTA on heart,
logistic + l1), counted with ``sys.setprofile``: every Python function call whose code lives in a
jaxprox module, and every call whose file differs from its caller's jaxprox file."""
import os
import sys

os.environ.setdefault("JAXPROX_COMPILATION_CACHE", "0")
import jax

jax.config.update("jax_enable_x64", True)
import jaxprox as jp

ROOT = os.path.dirname(jp.__file__)
X, y = jp.datasets.load("heart_scale")
problem = jp.ERM(X, y, loss=jp.losses.Logistic(), penalty=jp.penalties.L1(1e-2))
calls, hops, files = 0, 0, set()


def prof(frame, event, arg):
    global calls, hops
    if event != "call":
        return
    f = frame.f_code.co_filename
    if not f.startswith(ROOT):
        return
    calls += 1
    files.add(os.path.relpath(f, ROOT))
    back = frame.f_back
    while back is not None and not back.f_code.co_filename.startswith(ROOT):
        back = back.f_back
    if back is not None and back.f_code.co_filename != f:
        hops += 1


sys.setprofile(prof)
sol = jp.solve(problem, jp.FISTA(tol=1e-8))
sys.setprofile(None)
print(f"converged={bool(sol.converged)} steps={int(sol.steps)}")
print(f"jaxprox Python calls: {calls}, file-to-file hops: {hops}, files: {len(files)}")
print(" ".join(sorted(files)))
