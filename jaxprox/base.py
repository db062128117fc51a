"""Abstract contracts shared by every piece of jaxprox, and the small numeric helpers they use.

Everything is an :class:`equinox.Module` (a pytree). Hyperparameters (lambda, radii, epsilon,
kappa, ...) are *array leaves*, so ``jax.jit`` never recompiles when only their value changes and
``jax.vmap`` / ``jax.grad`` reach them. Structural choices (which variant, iteration counts) are
static fields.

Conventions:

* A **loss** acts elementwise on margins ``z = A @ w`` (shape ``(n,)``, or ``(n, K)`` for
  multi-output losses) with labels ``y``. Its Fenchel conjugate is taken in the margin:
  ``loss(z, y) = sup_u  u * z - conj(u, y)``. The empirical risk is ``(1/n) sum_i loss(z_i, y_i)``.
* A **penalty** carries its strength ``lam``: ``value(w) = lam * R(w)``;
  ``prox(v, step) = argmin_x 1/2 ||x - v||^2 + step * lam * R(x)``.
* A **constraint** is a closed convex set with a Euclidean projection and a linear minimization
  oracle.
* A **solver** is a static config with ``init / step / certificate / params`` (plus ``solution``
  and ``residual`` for implicit differentiation): :class:`jaxprox.solver.Solver`;
  :func:`jaxprox.solve` runs it.

How jaxprox compiles and caches (XLA options, the traced-solve cache, per-data caches) lives in
:mod:`jaxprox._compile`, not here.
"""
from __future__ import annotations

import abc
import functools
from typing import Any, ClassVar

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

Array = Any
PyTree = Any


def cast_floats(tree, dtype):
    """``tree`` with every floating-point array leaf cast to ``dtype`` (the data's): hyperparameter
    leaves of losses, penalties and constraints follow the data."""
    def cast(a):
        if isinstance(a, (jax.Array, np.ndarray)) and jnp.issubdtype(a.dtype, jnp.floating):
            return a.astype(dtype)
        return a

    return jax.tree_util.tree_map(cast, tree)


#: :func:`small_mv` writes products with a square matrix of at most this order as multiply-and-reduce
SMALL_MV = 128


def small_mv(M, v):
    """``M @ v`` for a small square ``M`` (the ``(d + 1)``-order systems of the polishes, applied
    a few times per check): up to order :data:`SMALL_MV` one multiply-and-reduce fusion, which
    XLA:CPU compiles in a fraction of the time of its GEMV kernel; the sum is in full
    precision. Not for products inside an
    iteration's hot loop: there the GEMV runs faster from ``d ~ 100`` on."""
    if M.shape[-1] <= SMALL_MV:
        return jnp.sum(M * v[..., None, :], axis=-1)
    return M @ v


def concrete_arrays(tree) -> list:
    """The concrete (not traced) arrays among the leaves of ``tree``."""
    import jax

    return [x for x in jax.tree_util.tree_leaves(tree)
            if isinstance(x, jax.Array) and not isinstance(x, jax.core.Tracer)]


def data_platform(problem) -> str:
    """Platform (``'cpu'``, ``'gpu'``, ``'tpu'``) where the problem is solved: the device holding
    its data matrix; when it is traced (inside the user's ``jax.jit``), the device of an enclosing
    ``jax.default_device(...)``, else ``jax.default_backend()`` (which alone would send a host-CPU
    solve on a machine with a GPU down the accelerator's route)."""
    import jax

    arrays = concrete_arrays(problem.A) or concrete_arrays(problem)
    if arrays:
        return next(iter(arrays[0].devices())).platform
    dev = jax.config.jax_default_device
    if dev is not None:
        return dev if isinstance(dev, str) else dev.platform
    return jax.default_backend()


@functools.lru_cache(maxsize=None)
def _parse_range(spec: str) -> tuple:
    """``(lo, hi, lo_open, hi_open)`` of a range ``"> a"``, ``">= a"``, ``"(a, b)"``, ``"[a, b]"``, ..."""
    s = spec.replace(" ", "")
    if s.startswith(">="):
        return float(s[2:]), float("inf"), False, True
    if s.startswith(">"):
        return float(s[1:]), float("inf"), True, True
    lo, hi = (float(t) for t in s[1:-1].split(","))
    return lo, hi, s[0] == "(", s[-1] == ")"


def check_range(owner: str, name: str, value, spec: str) -> None:
    """Raise ``ValueError`` unless every entry of ``value`` lies in ``spec``: ``"> a"``, ``">= a"``
    or an interval ``"(a, b)"``, ``"[a, b]"``, ``"(a, b]"``, ``"[a, b)"``. ``None`` (a default
    chosen later) and traced values (checked where they were concrete) pass. Cheap: it runs on
    every construction of a solver (a few microseconds for a Python number)."""
    if value is None or isinstance(value, (str, bool)):
        return
    lo, hi, lo_open, hi_open = _parse_range(spec)
    if isinstance(value, (int, float)):  # the common case, without NumPy
        ok = (value > lo if lo_open else value >= lo) and (value < hi if hi_open else value <= hi)
    else:
        import jax

        if isinstance(value, jax.core.Tracer):
            return
        try:
            v = np.asarray(value, dtype=float)
        except (TypeError, ValueError):
            return  # not a number (a schedule, a scheme): its own type checks it
        ok = np.all((v > lo if lo_open else v >= lo) & (v < hi if hi_open else v <= hi))
    if not ok:
        raise ValueError(f"{owner}: {name} must be {spec if spec.startswith('>') else 'in ' + spec}, got {value!r}")


def as_leaf(x, name: str = "hyperparameter", *, nonneg: bool = True):
    """Turn a Python/NumPy scalar hyperparameter into a float array leaf, validating it.

    Traced values (inside jit/vmap/grad) pass through unchecked: validation happens before
    tracing, on concrete inputs only.
    """
    import jax

    if isinstance(x, jax.core.Tracer):
        return x
    a = np.asarray(x, dtype=float)
    if not np.all(np.isfinite(a)):
        raise ValueError(f"{name} must be finite, got {x!r}")
    if nonneg and np.any(a < 0):
        raise ValueError(f"{name} must be non-negative, got {x!r}")
    return jnp.asarray(a, dtype=jnp.result_type(float))


def along_rows(c: Array, x: Array, lead: int = 0) -> Array:
    """``c`` (one value per row of ``x``: the axis after ``lead`` leading axes) shaped to broadcast
    against ``x``: a vector ``w``, a matrix ``W`` of shape ``(d, K)``, or a stack of them."""
    c = jnp.asarray(c)
    return jnp.reshape(c, (1,) * lead + c.shape + (1,) * (jnp.ndim(x) - lead - 1))


def by_rows(c: Array, x: Array, lead: int = 0) -> Array:
    """``x`` with its rows multiplied by ``c`` (:func:`along_rows`): a per-coordinate scale."""
    return x * along_rows(c, x, lead)


def sums(*xs: Array) -> Array:
    """``(sum x_1, ..., sum x_k)`` of arrays of one shape, as one reduction of their stack. XLA:CPU
    compiles every reduction as a kernel of its own (each several milliseconds of a first call's
    compile, ``benchmarks/results/latency.md``), so sums taken side by side over the same data are
    cheaper to compile as one."""
    return jnp.sum(jnp.stack(jnp.broadcast_arrays(*xs)).reshape(len(xs), -1), axis=1)


def mins(*xs: Array) -> Array:
    """``(min x_1, ..., min x_k)`` as one reduction (:func:`sums`); ``max x = -min(-x)``."""
    return jnp.min(jnp.stack(jnp.broadcast_arrays(*xs)).reshape(len(xs), -1), axis=1)


def probe_vector(shape, dtype, seed: int = 0) -> Array:
    """A fixed start for power iterations: ``v_i = cos(phi (i + 1) + seed)`` with the golden angle
    ``phi``, normalised. Deterministic and independent of the data (so not orthogonal to a top
    singular vector except by coincidence, like a random start), and a handful of operations:
    a threefry ``jax.random.normal`` traces ~200, which every solve would compile."""
    import math

    size = math.prod(shape)
    if size <= 4096:  # a constant of the traced program (XLA:CPU would compile the formula as kernels)
        v = np.cos(2.399963229728653 * (np.arange(size, dtype=np.float64) + 1) + seed).reshape(shape)
        return jnp.asarray(v / np.linalg.norm(v), dtype)
    v = jnp.cos(2.399963229728653 * (jnp.arange(size, dtype=dtype) + 1) + seed).reshape(shape)
    return v / jnp.linalg.norm(v)


class Loss(eqx.Module):
    """A per-sample loss ``l(z, y)`` on margins ``z``.

    Subclasses implement ``value``, ``conjugate``, ``project_dual`` and ``dual_point``; smooth losses
    also ``grad``. ``prox_conjugate`` defaults to the projection of ``u - step * d conj`` for
    losses whose conjugate is linear on its domain and must be overridden otherwise.
    """

    smooth: bool = eqx.field(static=True, default=False, kw_only=True)
    #: which loss this is, for solvers with closed forms for particular losses (SDCA's
    #: coordinate step, APPA's curvature bounds, AGM's SVM dual): ``"squared"``, ``"logistic"``,
    #: ``"smoothed_hinge"``, ``"hinge"``, or ``"generic"`` (no closed form is assumed). A subclass
    #: that changes the loss's formula declares its own.
    family: ClassVar[str] = "generic"
    #: ``l''(z) = 0`` outside a band of margins (smoothed hinge, squared hinge, Huber): near a
    #: solution few rows carry curvature, so a Newton model's Gram ``A^T diag(l'') A`` can be
    #: formed from those rows alone (:meth:`jaxprox.operators.LinearOperator.weighted_gram_active`).
    flat_outside_band: ClassVar[bool] = False

    @abc.abstractmethod
    def value(self, z: Array, y: Array) -> Array:
        """Per-sample loss values, shape ``(n,)``."""

    def grad(self, z: Array, y: Array) -> Array:
        """Derivative of ``value`` in ``z`` (smooth losses only)."""
        raise NotImplementedError(f"{type(self).__name__} is not smooth; use dual_point")

    @abc.abstractmethod
    def conjugate(self, u: Array, y: Array) -> Array:
        """Per-sample ``l*(u, y) = sup_z u z - l(z, y)``; ``+inf`` outside the dual domain."""

    @abc.abstractmethod
    def project_dual(self, u: Array, y: Array) -> Array:
        """Euclidean projection of ``u`` onto ``dom l*(., y)`` (the whole vector at once)."""

    @abc.abstractmethod
    def prox_conjugate(self, u: Array, y: Array, step: Array) -> Array:
        """``argmin_v step * l*(v, y) + 1/2 ||v - u||^2`` (the dual step of primal-dual methods)."""

    @abc.abstractmethod
    def dual_point(self, z: Array, y: Array) -> Array:
        """An element of the subdifferential ``d l(z, y)`` (``= grad`` for smooth losses); it lies
        in the dual domain and attains Fenchel-Young with equality."""

    def grad_and_curvature(self, z: Array, y: Array) -> tuple[Array, Array]:
        """``(l'(z, y), l''(z, y))`` elementwise in the margins, in one forward-mode pass through
        ``grad`` (smooth losses; elementwise, so the tangent of ones gives the diagonal): the
        gradient and the weights of a Newton model's Hessian ``A^T diag(l'') A / n``."""
        import jax

        return jax.jvp(lambda m: self.grad(m, y), (z,), (jnp.ones_like(z),))

    def risk(self, z: Array, y: Array) -> Array:
        """Empirical risk ``(1/n) sum_i l(z_i, y_i)``; for margins of shape ``(n, K)`` and an
        elementwise loss (multi-task), ``(1/n) sum_i sum_k l(z_ik, y_ik)``."""
        return jnp.sum(self.value(z, y)) / z.shape[0]

    def conjugate_risk(self, u: Array, y: Array) -> Array:
        """``(1/n) sum_i l*(u_i, y_i)`` (enters the dual objective with a minus sign)."""
        return jnp.sum(self.conjugate(u, y)) / u.shape[0]

    @property
    def lipschitz(self) -> float:
        """Lipschitz constant ``G`` of ``l(., y)`` in ``z`` (``inf`` if unbounded)."""
        return float("inf")

    @property
    def smoothness(self) -> float:
        """Lipschitz constant of ``dl/dz`` (``inf`` for non-smooth losses)."""
        return float("inf")

    def check_labels(self, y) -> None:
        """Raise ``ValueError`` if labels are unsuitable (e.g. not in {-1,+1} for classification)."""


class Penalty(eqx.Module):
    """A regularizer ``lam * R(w)`` with a cheap proximal operator."""

    lam: Array
    #: the prox acts coordinate by coordinate (its Jacobian is diagonal); lets
    #: :class:`jaxprox.ProxNewton`'s semismooth Newton solve a symmetric system (Cholesky)
    separable: ClassVar[bool] = False
    #: ``lam R(w) = (lam / 2) ||w||^2`` exactly (ridge): strongly convex with modulus ``lam``, with
    #: the closed-form dual SDCA / APPA / PD block FW / Pegasos are written for
    quadratic: ClassVar[bool] = False
    #: ``R`` is a norm (``dual_norm`` and ``dual_scale`` are meaningful)
    is_norm: ClassVar[bool] = False

    @abc.abstractmethod
    def value(self, w: PyTree) -> Array:
        """``lam * R(w)``."""

    @abc.abstractmethod
    def prox(self, v: PyTree, step: Array) -> PyTree:
        """``argmin_x 1/2 ||x - v||^2 + step * lam * R(x)``."""

    @abc.abstractmethod
    def conjugate(self, u: PyTree) -> Array:
        """``(lam R)^*(u)``; ``+inf`` outside its domain (norm penalties: ``dual_norm(u) > lam``)."""

    @property
    def strong_convexity(self) -> Array:
        """The modulus ``m`` of strong convexity of ``lam R`` w.r.t. ``1/2 ||.||^2`` (``lam R -
        m/2 ||.||^2`` is convex): ``lam`` for ridge, ``lam (1 - l1_ratio)`` for the elastic net,
        0 by default (the safe value: every convex penalty is 0-strongly convex)."""
        return jnp.zeros_like(self.lam)

    @property
    def declares_strong_convexity(self) -> bool:
        """Whether the class states a modulus of strong convexity (overrides
        :attr:`strong_convexity`); ``False`` for penalties that have none (norms), whatever
        ``lam``: what :class:`jaxprox.AGM` reads to turn on its value restart."""
        return type(self).strong_convexity is not Penalty.strong_convexity

    @property
    def ridge_diagonal(self):
        """``m`` (a scalar or one value per coordinate) when ``lam R(w) = (1/2) sum_j m_j w_j^2``, a
        (diagonal) ridge; ``None`` otherwise. ``SquaredL2``: ``lam``;
        :class:`jaxprox.penalties.ColumnScaled` of it: ``lam c^2``."""
        return None

    def dual_norm(self, u: PyTree) -> Array:
        """Dual norm of ``R`` (norm penalties only)."""
        raise NotImplementedError(f"{type(self).__name__} is not a norm")

    def dual_scale(self, u: PyTree) -> Array:
        """Largest ``s in (0, 1]`` with ``conjugate(s * u)`` finite. Used to rescale a dual point
        so that the duality gap stays finite (Pdprox note; standard for Lasso-type gaps)."""
        return jnp.ones_like(self.lam)

    @property
    def l1_threshold(self):
        """``t`` (a scalar or one value per coordinate) such that a minimiser has ``w_j = 0``
        exactly when ``|grad_j f(w)| <= t_j`` there: the strength of the penalty's l1 part, the
        subdifferential ``[-t_j, t_j]`` at zero (``lam`` for l1, ``lam l1_ratio`` for the elastic
        net). What gap-safe screening and working sets score features by
        (:class:`jaxprox.WorkingSet`); ``None`` for a penalty without such a part (default)."""
        return None

    def restricted(self, idx: Array) -> "Penalty":
        """The penalty of the coordinates ``idx`` only (separable penalties): the same penalty
        where its parameters are one scalar (default), the per-coordinate ones gathered where not."""
        if not self.separable:
            raise ValueError(f"{type(self).__name__} is not separable: no restriction to coordinates")
        return self

    def face(self, x: PyTree, p: PyTree) -> PyTree:
        """Projection of ``x`` onto the closure of the face of ``R`` that contains ``p`` (the
        piece on which ``R`` is smooth there: for ``||.||_1``, the orthant of ``sign(p)`` with the
        zeros of ``p`` kept at zero). A semismooth Newton step linearises the prox on that piece
        (:class:`jaxprox.ProxNewton` with ``inner="ssn"``); projecting its trial point back keeps
        it consistent. The identity by default, which is always safe (the step is safeguarded)."""
        return x

    def with_lam(self, lam) -> "Penalty":
        return eqx.tree_at(lambda p: p.lam, self, as_leaf(lam, "lam"))


class Constraint(eqx.Module):
    """A closed convex set ``C``."""

    #: the projection acts coordinate by coordinate (a box)
    separable: ClassVar[bool] = False

    @abc.abstractmethod
    def project(self, x: PyTree) -> PyTree:
        """Euclidean projection onto ``C``."""

    @abc.abstractmethod
    def lmo(self, g: PyTree) -> PyTree:
        """Linear minimization oracle ``argmin_{s in C} <g, s>``."""

    def project_exact(self, x: PyTree) -> PyTree:
        """:meth:`project` by an exact, finite method, whatever method the iterations use: what
        a certificate's conjugate ``sup_{w in C} <v, w> - (lam/2) ||w||^2`` evaluates at (the
        maximiser ``P_C(v / lam)``). Default: :meth:`project`."""
        return self.project(x)

    def feasible(self, x: PyTree) -> PyTree:
        """A point of ``C`` at or next to ``x``, cheap to compute: what certificates score, so that
        an iterate a rounding error outside ``C`` (a float32 projection of a point far outside)
        cannot make the gap negative. Default: ``x`` itself (solvers keep iterates in ``C``)."""
        return x

    def support(self, v: PyTree) -> Array:
        """Support function ``sigma_C(v) = max_{x in C} <v, x>``."""
        import jax

        s = self.lmo(jax.tree_util.tree_map(lambda a: -a, v))
        return sum(jnp.vdot(a, b) for a, b in zip(jax.tree_util.tree_leaves(v), jax.tree_util.tree_leaves(s)))


class NormBall(Constraint):
    """A norm ball ``{x : ||x|| <= radius}``; ``norm`` names the norm (``"l1"``, ``"l2"``,
    ``"linf"``, ``"trace"``). Solvers that need a ball (PD block Frank-Wolfe) read ``radius``."""

    radius: Array
    norm: ClassVar[str] = ""

    def feasible(self, x):
        """``x`` scaled into the ball, ``x min(1, radius / ||x||)`` (l1, l2, linf; the trace norm
        would need an SVD per certificate: ``x`` itself)."""
        ords = {"l1": 1, "l2": 2, "linf": jnp.inf}
        if self.norm not in ords:
            return x
        nx = jnp.linalg.norm(jnp.ravel(x), ord=ords[self.norm])
        return x * jnp.where(nx > self.radius, self.radius / jnp.where(nx > 0, nx, 1.0), 1.0)


class Problem(eqx.Module):
    """Base of every problem: data and hyperparameters as array leaves, an objective, and the
    pieces its certificate needs. A problem knows no solver; solvers declare what they need of
    a problem (:mod:`jaxprox.capabilities`) and :func:`jaxprox.solve` checks it before tracing."""

    @abc.abstractmethod
    def objective(self, params: PyTree) -> Array:
        """The primal objective ``P(params)``."""

    def short_stop_note(self) -> str:
        """A sentence a short stop's warning adds about this problem (e.g. a smoothing that puts
        a floor under the certified gap); empty by default. Read on concrete values only."""
        return ""
