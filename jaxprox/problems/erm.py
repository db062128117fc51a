"""Regularised empirical risk minimisation, the main problem family.

:class:`ERM` is regularised empirical risk minimisation in the papers' scaling

    P(w) = (1/n) sum_i l(a_i^T w, y_i) + lam R(w),        w in C (optional),

with ``A`` a :mod:`jaxprox.operators` operator. Its Fenchel dual, with per-sample dual variables
``u_i`` in the margin convention ``l(z) = sup_u u z - l*(u)``, is

    D(u) = -(1/n) sum_i l*(u_i, y_i) - h*(-A^T u / n),       h = lam R + I_C,

and ``P(w) >= D(u)`` for every ``w``, ``u``. The certificate evaluates ``D`` at the rescaled
subgradient ``u = s * l'(A w)`` with ``s = dual_scale`` chosen so that ``h*`` is finite (the
standard trick for norm penalties), so ``gap = P(w) - D(u)`` is an honest
upper bound on the suboptimality ``P(w) - P*`` (:meth:`ERM.honest_dual`, :meth:`ERM.dual_value`).

Precision policy of the certificate (``docs/precision.md``). A gap is only as honest as the
arithmetic that evaluates it: in float32 the dual scale ``s`` depends on ``A^T u / n``, a sum of
``n`` terms whose rounding (1e-5 relative on a 10^4-row problem with XLA:CPU's matrix-vector
product, 1e-3 with TF32 tensor cores) moves ``D`` by more than a 1e-5 gap. So every dual piece
(:meth:`ERM.certificate`, :meth:`ERM.best_certificate`, :meth:`ERM.dual_objective`,
:meth:`ERM.honest_dual`, :meth:`ERM.dual_point`) is evaluated

* with full-precision products (``jax.default_matmul_precision("highest")``: no TF32 on GPUs, no
  single-pass bfloat16 on TPUs),
* in float64 when JAX has it (``jax_enable_x64``) whatever the data's dtype
  (:func:`certificate_dtype`; float32 products are exact in float64), so the gap of a float32
  iterate is that of the float64 problem up to ~1e-16,
* and without float64, with ``A^T u`` accumulated in row blocks (:func:`blocked_rmv`), which cuts
  the accumulation error of a long float32 sum by the block count.

The iterates keep the dtype the user gave; only the certificate is promoted. The promotion
converts ``A`` to float64 at a check (XLA may keep the converted copy: up to twice the memory
of float32 data, and float64 products, slow on consumer GPUs); switch ``jax_enable_x64`` off for
float32 problems that fill the device.

Validation (shapes, NaN/inf, labels, negative strengths) happens in the constructor, on concrete
values, so errors are raised before any tracing.
"""
from __future__ import annotations

import functools
import math

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from .._compile import once_per_data
from ..base import Constraint, Loss, Penalty, Problem, best_of
from ..defaults import DENSE_TANGENT_MAX, RESCALE_RATIO, columns_in_different_units
from ..operators import LinearOperator, as_operator
from .validation import cast_floats, check_finite, check_numeric, concrete, data_operator, leaf


def certificate_dtype(dtype):
    """The dtype certificates are evaluated in: float64 when JAX has it (``jax_enable_x64``),
    otherwise ``dtype`` (the data's)."""
    return jnp.dtype(jnp.float64) if jax.config.jax_enable_x64 else jnp.dtype(dtype)


#: row blocks of :func:`blocked_rmv`
RMV_BLOCKS = 8


def blocked_rmv(A: LinearOperator, u, blocks: int = RMV_BLOCKS):
    """``A^T u`` as ``sum_b A_b^T u_b`` over ``blocks`` contiguous row blocks: one product with the
    ``(n, blocks)`` block-diagonal matrix ``U[i, b] = u_i [i in block b]`` (the zeros add nothing,
    not even rounding), then a sum of ``blocks`` partial sums. A float32 sum of ``n`` terms
    accumulated in one running sum has error ``~ eps sqrt(n)`` relative to ``sum |a_ij u_i|``;
    each block sums ``n / blocks`` terms. Costs about ``blocks`` products (used by the certificate
    only, and only without float64)."""
    n = A.shape[0]
    size = -(-n // blocks)
    owner = jnp.arange(n) // size
    U = jnp.where(owner[:, None] == jnp.arange(blocks)[None, :], u[:, None], jnp.zeros((), u.dtype))
    return jnp.sum(A.rmv(U), axis=1)


def _certifying(method):
    """Evaluate an ERM dual piece by the precision policy of the module docstring: full-precision
    products, the problem and the arguments promoted to :func:`certificate_dtype`."""
    @functools.wraps(method)
    def wrapper(self, *args, **kwargs):
        with jax.default_matmul_precision("highest"):
            dt = certificate_dtype(self.A.dtype)
            if dt != self.A.dtype:
                self, args, kwargs = cast_floats((self, args, kwargs), dt)
            return method(self, *args, **kwargs)

    return wrapper


#: the curvature certificate (:func:`curvature_bound`) forms a dense Hessian (``d x d``) or, when
#: ``d > n`` and there is no ridge, the Gram matrix (``n x n``) of at most this order per check
CURVATURE_MAX = 2048


def hessian(problem, curv):
    """``A^T diag(curv) A / n`` as a dense ``d x d`` matrix (the operator's weighted Gram: one GEMM
    on the densified matrix when it is small, O(n p^2) scatter-adds for padded sparse rows)."""
    return problem.A.weighted_gram(curv) / problem.n


def curvature_bound(problem, z, g, lam0=None):
    """An honest upper bound on ``P(w) - inf P`` for the squared or logistic loss with at most a
    ridge ``(lam0/2) ||w||^2`` (``lam0`` a scalar or one value per coordinate, all zero or all
    positive; ``None``: no ridge), from ``z = A w`` and the gradient ``g = grad P(w)``:

        ||g||^2 e^{R r} / (2 mu_H),   mu_H = the smallest *positive* eigenvalue of hess P(w),

    where ``r`` must satisfy ``r >= 2 ||g|| e^{R r} / mu_H`` (then the minimiser lies in the ball
    ``B(w, r)`` on which ``P`` is ``mu_H e^{-R r}``-strongly convex, because the logistic curvature
    ``s(1-s)`` changes by at most ``e^{|dz|}`` and ``|dz| <= R r`` with ``R = max_i ||a_i||``);
    ``+inf`` when no such ``r`` is found. Without a ridge ``P`` is constant along ``null(A)`` and
    ``g`` lies in ``range(A^T)``, so only the positive eigenvalues matter. For the squared loss
    (constant Hessian, ``R = 0``) the bound is the exact ``g^T H^+ g / 2``.

    The eigenproblem is ``d x d`` (``hess P = A^T D A / n + diag(lam0)``) or, for ``d > n``
    without a ridge, ``n x n`` (``D^{1/2} A A^T D^{1/2} / n`` has the same positive eigenvalues;
    for the squared loss ``g^T H^+ g = r^T P_{range(A)} r / n`` with ``r = A w - y``; ``+inf``
    when the densified ``A`` would exceed ``4 CURVATURE_MAX^2`` entries). Cost per call: one
    weighted Gram product and a symmetric eigenproblem of that order."""
    dt = problem.A.dtype
    inf = jnp.asarray(jnp.inf, dt)
    squared = problem.loss.family == "squared"
    n, d = problem.n, problem.d
    gram = lam0 is None and d > n
    if gram and n * d > 4 * CURVATURE_MAX**2:
        return inf
    if squared:
        curv, R = jnp.ones_like(z), jnp.zeros((), dt)
    else:
        s = jax.nn.sigmoid(problem.y * z)
        curv = s * (1.0 - s)
        R = jnp.sqrt(jnp.max(problem.A.row_norms_sq()))
    gn = jnp.linalg.norm(g)
    if gram:
        B = jnp.sqrt(curv)[:, None] * problem.A.todense()
        ev, V = jnp.linalg.eigh(B @ B.T / n)
        pos = ev > 1e-10 * ev[-1]
        if squared:
            rc = V.T @ (z - problem.y)
            return 0.5 * jnp.sum(jnp.where(pos, rc**2, 0.0)) / n
    else:
        H = hessian(problem, curv)
        ev, V = jnp.linalg.eigh(H if lam0 is None else H + lam0 * jnp.eye(d, dtype=dt))
        # eigenvalues below 1e-10 * max count as zero
        pos = ev > 1e-10 * ev[-1]
        if squared:
            gc = V.T @ g
            return 0.5 * jnp.sum(jnp.where(pos, gc**2 / jnp.where(pos, ev, 1.0), 0.0))
    muH = jnp.min(jnp.where(pos, ev, jnp.inf)) * (1.0 - 1e-8)
    r = jax.lax.fori_loop(0, 30, lambda _, r: 2.0 * gn * jnp.exp(jnp.minimum(R * r, 50.0)) / muH,
                          jnp.zeros((), dt)) * 1.01
    ok = (r >= 2.0 * gn * jnp.exp(jnp.minimum(R * r, 50.0)) / muH) & (R * r < 50.0)
    return jnp.where(ok, gn**2 * jnp.exp(jnp.minimum(R * r, 50.0)) / (2.0 * muH), inf)


def _diagonal_ridge_pair(penalty, constraint) -> bool:
    """A diagonal ridge (:attr:`jaxprox.base.Penalty.ridge_diagonal`, not the plain one) with a
    constraint that projects in a diagonal metric (``project_metric``): the column-scaled ridge +
    l1 ball."""
    return (not penalty.quadratic and penalty.ridge_diagonal is not None
            and hasattr(constraint, "project_metric"))


def _vdot(a, b):
    return sum(jnp.vdot(x, y) for x, y in zip(jax.tree_util.tree_leaves(a), jax.tree_util.tree_leaves(b)))


def _check_well_posed(loss, penalty, constraint) -> None:
    """``ValueError`` for a non-smooth loss with neither a penalty of positive strength nor a
    constraint: the dual of ``(1/n) sum l(a_i^T w)`` alone asks ``A^T u = 0`` exactly, which no
    iterate meets, so no solver can certify such a problem (its gap stays infinite)."""
    multinomial = loss.family == "multinomial"  # shift-invariant across classes: no unique minimiser
    if (loss.smooth and not multinomial) or constraint is not None:
        return
    if penalty is None or (concrete(penalty.lam) and np.all(np.asarray(penalty.lam) == 0)):
        why = ("its minimisers are not unique (a constant added to every class's margins changes nothing) "
               "and need not exist (separable data)") if multinomial else (
               "its dual needs A^T u = 0 exactly, so no solver can certify it")
        raise ValueError(
            f"{type(loss).__name__} {'' if multinomial else 'is not smooth and '}needs a penalty of positive "
            f"strength or a constraint: {why}. Add a penalty with lam > 0 (e.g. jp.penalties.SquaredL2(1e-6)) "
            "or a norm-ball constraint.")


class ERM(Problem):
    """Regularised empirical risk minimisation ``(1/n) sum_i loss(a_i^T w, y_i) + penalty(w)``,
    optionally with ``w`` constrained to a set.

    Args:
        X: ``(n, d)`` data (dense array, scipy.sparse matrix or a jaxprox operator).
        y: labels ``(n,)`` (or ``(n, K)`` for multi-output losses).
        loss: a :class:`jaxprox.base.Loss`.
        penalty: a :class:`jaxprox.base.Penalty` (carries ``lam``), or ``None``.
        constraint: a :class:`jaxprox.base.Constraint`, or ``None``.
        n_outputs: ``K`` for matrix variables ``W`` of shape ``(d, K)`` (multi-task, multi-output);
            ``None`` for a vector ``w`` of shape ``(d,)``.
        offset: a constant added to the primal and the dual objective (default 0); set by
            :meth:`compressed`, so that a compressed problem reports the original objective.
    """

    A: LinearOperator
    y: jax.Array
    loss: Loss
    penalty: Penalty | None = None
    constraint: Constraint | None = None
    n_outputs: int | None = eqx.field(static=True, default=None)
    offset: jax.Array | float = 0.0

    def __init__(self, X, y, loss, penalty=None, constraint=None, n_outputs=None, *, offset=0.0):
        if not isinstance(loss, Loss):
            raise TypeError(f"loss must be a jaxprox.losses Loss, got {type(loss).__name__}")
        if penalty is not None and not isinstance(penalty, Penalty):
            raise TypeError(f"penalty must be a jaxprox.penalties Penalty, got {type(penalty).__name__}")
        if constraint is not None and not isinstance(constraint, Constraint):
            raise TypeError(f"constraint must be a jaxprox.constraints Constraint, got {type(constraint).__name__}")
        A = data_operator(X)
        n, d = A.shape
        check_numeric("y", y)
        y = jnp.asarray(y, dtype=A.dtype) if concrete(y) else y
        if y.shape[0] != n:
            raise ValueError(f"X has {n} samples but y has {y.shape[0]} labels")
        if n_outputs is None and y.ndim != 1:
            raise ValueError(f"y must be 1-D for a vector model, got shape {y.shape}; pass n_outputs "
                             "for multi-output problems")
        if n_outputs is not None and (y.ndim != 2 or y.shape[1] != n_outputs):
            raise ValueError(f"y must have shape (n, {n_outputs}), got {y.shape}")
        check_finite("y", y)
        if concrete(y):
            loss.check_labels(np.asarray(y))
        if penalty is not None and concrete(penalty.lam) and np.any(np.asarray(penalty.lam) < 0):
            raise ValueError(f"regularisation strength lam must be >= 0, got {penalty.lam}")
        _check_well_posed(loss, penalty, constraint)
        # one float dtype: the hyperparameters of the loss, penalty and constraint follow the data
        loss, penalty, constraint = cast_floats((loss, penalty, constraint), A.dtype)
        self.A, self.y, self.loss = A, y, loss
        self.penalty, self.constraint, self.n_outputs = penalty, constraint, n_outputs
        self.offset = offset

    # ----------------------------------------------------------------- hyperparameters
    @property
    def lam(self):
        return None if self.penalty is None else self.penalty.lam

    def with_lam(self, lam) -> "ERM":
        """A copy with regularisation strength ``lam`` (an array leaf: no recompilation)."""
        if self.penalty is None:
            raise ValueError("this problem has no penalty, so it has no lam")
        return eqx.tree_at(lambda p: p.penalty.lam, self, leaf(lam, "lam", self.A.dtype))

    def compressed(self) -> "ERM":
        """An equivalent problem with ``d`` rows instead of ``n`` (squared loss, ``n > d``): the
        sufficient statistics of least squares. With the thin QR factorisation ``X = Q R``,

            (1/2n) ||X w - y||^2 = (1/2d) ||R' w - c||^2 + (1/2n) ||y - Q Q^T y||^2,
            R' = sqrt(d/n) R,   c = sqrt(d/n) Q^T y,

        exactly, whatever the rank of ``X``. The returned ``ERM(R', c, Squared, ...)`` has the same
        penalty, constraint and minimisers, and ``offset`` = the constant term, so its objective,
        dual objective and duality gap are those of this problem (any dual point of the compressed
        problem gives a valid lower bound here). Every iteration then costs ``O(d^2)`` instead of
        ``O(n d)``: what makes a Lasso path with ``n >> d`` fast (``benchmarks/results/paths.md``).
        Differentiable in ``X`` and ``y`` where ``X`` has full column rank (the QR derivative)."""
        from ..losses import Squared

        if not isinstance(self.loss, Squared):
            raise ValueError(f"compressed() needs the squared loss, got {type(self.loss).__name__}")
        if self.n <= self.d:
            raise ValueError(f"compressed() helps only when n > d, got n={self.n}, d={self.d}")
        if tuple(self.A.param_shape) != (self.d,):
            raise ValueError("compressed() needs a plain data matrix (not a structured operator)")
        X, y, dt = self.A.todense(), self.y, self.A.dtype
        if concrete(X) and concrete(y) and jnp.finfo(dt).bits < 64:
            # float32 data: factor in float64 on the host (a float32 QR moves the optimum by
            # ~1e-4 relative on 20000 x 500), then round R' and c to the data's dtype
            X, y = np.asarray(X, np.float64), np.asarray(y, np.float64)
            Q, R = np.linalg.qr(X, mode="reduced")
            qty = Q.T @ y
            resid = y - Q @ qty
        else:
            with jax.default_matmul_precision("highest"):
                Q, R = jnp.linalg.qr(X, mode="reduced")
                qty = Q.T @ y
                resid = y - Q @ qty
        scale = np.sqrt(self.d / self.n)
        const = 0.5 * (resid * resid).sum() / self.n
        return eqx.tree_at(lambda p: (p.A, p.y, p.offset), self,
                           (as_operator(jnp.asarray(scale * R, dt)), jnp.asarray(scale * qty, dt),
                            self.offset + jnp.asarray(const, certificate_dtype(dt))))

    def column_scale(self, ratio: float | None = None):
        """Jacobi scales ``c_j = 1 / rms_j``, ``rms_j = ||A e_j|| / sqrt(n)``, that give every column
        of the data unit root-mean-square (``1`` for an empty column), for data whose columns are in
        different units: the largest column range ``max_i |A_ij|`` exceeds the smallest non-zero
        one by more than ``ratio`` (default :data:`jaxprox.defaults.RESCALE_RATIO`). ``None`` otherwise, and when the data are traced (no concrete
        value to decide on) or the problem cannot be rescaled exactly (a plain data matrix is
        needed, and the pairs of :meth:`_rescalable`).

        Why: a first-order method's step is set by the largest curvature (``||A||^2``, or the
        largest row norm), so where column ranges differ by orders of magnitude (``australian``:
        1 to 1e5) the coordinates of the small ones barely move. In the variable ``v = w / c`` the
        risk's Hessian ``A^T diag(l'') A / n`` has a diagonal of the same size in every coordinate
        (the diagonal, or Jacobi, preconditioner; within a factor ``d`` of the best diagonal
        scaling, van der Sluis 1969). Unit root-mean-square, not unit range: a heavy-tailed column
        (``australian``'s last: median 6, maximum 1e5) brought to range 1 keeps a tiny curvature.
        The test is on ranges, not on root-mean-squares: binary and one-hot columns (``a1a``,
        ``mushrooms``) share one range, while their root-mean-squares follow the features'
        frequencies, a spread that the solvers' own steps handle (rescaling them was measured to
        cost SVRG convergence: ``benchmarks/results/defaults.md``)."""
        if (not self._rescalable() or tuple(self.A.param_shape) != (self.d,)
                or not concrete(*jax.tree_util.tree_leaves(self.A))):
            return None
        return once_per_data("column_scale", self.A, lambda: self._jacobi_scales(ratio), ratio)

    def _jacobi_scales(self, ratio):
        """:meth:`column_scale`'s scales of concrete data (``None`` where no rescaling applies)."""
        try:  # on the host (NumPy), so also concrete inside the user's jit / vmap
            if not columns_in_different_units(self.A.column_max_abs(), RESCALE_RATIO if ratio is None else ratio):
                return None
            rms = np.sqrt(self.A.column_norms_sq() / self.n)
        except NotImplementedError:
            return None
        return jnp.asarray(np.where(rms > 0, 1.0 / np.where(rms > 0, rms, 1.0), 1.0), self.A.dtype)

    def column_scaled(self, c) -> "ERM":
        """The same problem in the variable ``v`` of ``w = c * v`` (``c > 0`` per coordinate): data
        ``A diag(c)``, penalty ``h(c * v)`` (:class:`jaxprox.penalties.ColumnScaled`, separable
        penalties) and an :class:`~jaxprox.constraints.L1Ball` ``||w||_1 <= r`` turned into the
        :class:`~jaxprox.constraints.WeightedL1Ball` ``sum_j c_j |v_j| <= r``. Its objective at
        ``v`` equals this problem's at ``c * v``, its dual function and dual points are this
        problem's (``A'^T u = c * A^T u``), so a duality gap certified there is one here."""
        from ..constraints import WeightedL1Ball
        from ..penalties import ColumnScaled

        if not self._rescalable():
            raise ValueError("column_scaled needs a separable penalty (or none) and no constraint, or "
                             "an L1Ball with SquaredL2 (or no penalty)")
        pen = None if self.penalty is None else ColumnScaled(self.penalty, c)
        con = None if self.constraint is None else WeightedL1Ball(self.constraint.radius, c)
        A = once_per_data("scale_columns", self.A, lambda: self.A.scale_columns(c), c)
        return eqx.tree_at(lambda p: (p.A, p.penalty, p.constraint), self, (A, pen, con),
                           is_leaf=lambda x: x is None)

    def _rescalable(self) -> bool:
        """A change of variables ``w = c * v`` keeps this problem in a form with an exact prox:
        a separable penalty (or none) without a constraint, or an :class:`~jaxprox.constraints.L1Ball`
        (it becomes a weighted l1 ball) with the ridge penalty or none."""
        from ..constraints import L1Ball

        if self.constraint is None:
            return self.penalty is None or self.penalty.separable
        return type(self.constraint) is L1Ball and (self.penalty is None or self.penalty.quadratic)

    # ----------------------------------------------------------------- shapes
    @property
    def n(self) -> int:
        return self.A.shape[0]

    @property
    def d(self) -> int:
        return self.A.shape[1]

    @property
    def param_shape(self) -> tuple:
        op_shape = tuple(self.A.param_shape)
        if op_shape != (self.d,):  # a structured operator fixes W's shape (operators.Structured)
            return op_shape
        return (self.d,) if self.n_outputs is None else (self.d, self.n_outputs)

    def zeros(self):
        return jnp.zeros(self.param_shape, dtype=self.A.dtype)

    # ----------------------------------------------------------------- primal pieces
    def margins(self, w):
        return self.A.mv(w)

    def risk(self, w):
        return self.loss.risk(self.A.mv(w), self.y)

    def regularizer(self, w):
        return jnp.zeros((), self.A.dtype) if self.penalty is None else self.penalty.value(w)

    def _scored(self, w):
        """The point a certificate scores: ``w`` brought into the constraint set
        (:meth:`~jaxprox.base.Constraint.feasible`, in the certificate's dtype), so ``P`` is
        evaluated at a feasible point and the gap bounds its suboptimality."""
        return w if self.constraint is None else self.constraint.feasible(w)

    def objective(self, w):
        """``P(w)`` (the constraint is not included; iterates are kept feasible by the solvers and
        certificates score :meth:`_scored` points)."""
        return self._primal_at(w, self.A.mv(w))

    def _primal_at(self, w, margins):
        """``P(w)`` from its margins ``A w``."""
        return self.loss.risk(margins, self.y) + self.regularizer(w) + self.offset

    def smooth_grad(self, w):
        """Gradient of the risk, ``A^T l'(A w) / n`` (smooth losses)."""
        return self.A.rmv(self.loss.grad(self.A.mv(w), self.y)) / self.n

    def value_and_smooth_grad(self, w):
        z = self.A.mv(w)
        return self.loss.risk(z, self.y), self.A.rmv(self.loss.grad(z, self.y)) / self.n

    def smoothness(self):
        """Lipschitz constant of the risk gradient, ``rho ||A||_2^2 / n`` (``A.spectral_norm_sq()``)."""
        return self.loss.smoothness * self.A.spectral_norm_sq() / self.n

    def prox(self, v, step):
        """``argmin_x 1/2||x - v||^2 + step * (lam R(x) + I_C(x))``.

        With both a penalty and a constraint this is exact for ``SquaredL2`` (then it is
        ``P_C(v / (1 + step lam))``); other pairs raise ``NotImplementedError``.
        """
        if self.constraint is None:
            return v if self.penalty is None else self.penalty.prox(v, step)
        if self.penalty is None:
            return self.constraint.project(v)
        if self.penalty.quadratic:
            return self.constraint.project(v / (1.0 + step * self.penalty.lam))
        if _diagonal_ridge_pair(self.penalty, self.constraint):  # a column-scaled ridge + l1 ball
            return self.constraint.project_metric(v, 1.0 + step * self.penalty.ridge_diagonal)
        raise NotImplementedError(
            f"prox of {type(self.penalty).__name__} + {type(self.constraint).__name__} is not available")

    @property
    def has_prox(self) -> bool:
        """Whether :meth:`prox` is available: a penalty alone, a constraint alone, ``SquaredL2``
        with a constraint, or a column-scaled ridge with a weighted l1 ball."""
        return (self.constraint is None or self.penalty is None or self.penalty.quadratic
                or _diagonal_ridge_pair(self.penalty, self.constraint))

    @property
    def prox_separable(self) -> bool:
        """Whether :meth:`prox` acts coordinate by coordinate (penalty and constraint both do)."""
        return ((self.penalty is None or self.penalty.separable)
                and (self.constraint is None or self.constraint.separable))

    def face(self, x, p):
        """The penalty's :meth:`~jaxprox.base.Penalty.face` (the identity without a penalty)."""
        return x if self.penalty is None else self.penalty.face(x, p)

    def residual_smoothness(self):
        """The smoothness bound that scales the fixed-point residuals of implicit differentiation
        (their zero set does not depend on it; gradient-stopped): ``rho ||A||_2^2 / n`` (power
        iteration) when the derivative's linear system is solved by GMRES (more than
        ``jaxprox.base.DENSE_TANGENT_MAX`` unknowns), whose convergence needs the tight scale;
        below it ``rho ||A||_F^2 / n`` (``||A||_F >= ||A||_2``: one pass over ``A``, no power
        iteration in the derivative's graph), since a dense least-squares solve is insensitive to
        that scale."""
        if math.prod(self.A.param_shape) <= DENSE_TANGENT_MAX:
            L = self.loss.smoothness * self.A.frobenius_sq() / self.n
        else:
            L = self.smoothness()
        return jax.lax.stop_gradient(L)

    def prox_grad_residual(self, w, step=None):
        """Fixed-point residual ``w - prox_{eta h}(w - eta grad f(w))``; zero exactly at a
        minimiser, for any step ``eta > 0`` (used for implicit differentiation); default step
        ``1 / residual_smoothness()``."""
        if step is None:
            step = 1.0 / jnp.maximum(self.residual_smoothness(), jnp.finfo(w.dtype).tiny)
        return w - self.prox(w - step * self.smooth_grad(w), step)

    def saddle_residual(self, z, tau, sigma):
        """Primal-dual fixed-point residual of ``min_w max_u (1/n) u^T A w - (1/n) sum l*(u) + h(w)``
        (Chambolle-Pock map): zero exactly at a saddle point ``z = (w, u)``."""
        w, u = z
        n = self.n
        rw = w - self.prox(w - tau * self.A.rmv(u) / n, tau)
        ru = u - self.loss.prox_conjugate(u + sigma * self.A.mv(w), self.y, sigma)
        return (rw, ru)

    # ----------------------------------------------------------------- dual pieces
    def conjugate_h(self, v):
        """``h*(v)`` for ``h = lam R + I_C``.

        Penalty alone: ``(lam R)*``; constraint alone: the support function ``sigma_C``;
        ``SquaredL2`` + constraint: ``h*(v) = sup_{w in C} <v, w> - lam/2 ||w||^2``, attained at
        ``w = P_C(v / lam)``. Other penalty + constraint pairs raise ``NotImplementedError``."""
        if self.constraint is None and self.penalty is None:
            return jnp.where(_vdot(v, v) > 0, jnp.inf, 0.0)
        if self.constraint is None:
            return self.penalty.conjugate(v)
        if self.penalty is None:
            return self.constraint.support(v)
        if self.penalty.quadratic:
            lam = jnp.maximum(self.penalty.lam, jnp.finfo(self.A.dtype).tiny)
            w = self.constraint.project_exact(jax.tree_util.tree_map(lambda a: a / lam, v))
            return _vdot(v, w) - self.penalty.value(w)
        if _diagonal_ridge_pair(self.penalty, self.constraint):
            # h_c(v) = h(c v) with h = ridge + l1 ball: h_c^*(s) = h^*(s / c), the formula above
            from ..constraints import L1Ball

            c = self.penalty.scale
            plain = eqx.tree_at(lambda p: (p.penalty, p.constraint), self,
                                (self.penalty.penalty.with_lam(self.penalty.lam), L1Ball(self.constraint.radius)))
            return plain.conjugate_h(jax.tree_util.tree_map(lambda a: a / c, v))
        raise NotImplementedError(
            f"dual of {type(self.penalty).__name__} + {type(self.constraint).__name__}: use the "
            "solver's own certificate")

    def _rmv_dual(self, u):
        """``A^T u`` for the dual: :func:`blocked_rmv` below float64 (vector models on a plain
        data matrix), the operator's product otherwise."""
        plain = jnp.ndim(u) == 1 and tuple(self.A.param_shape) == (self.d,)
        if plain and jnp.finfo(self.A.dtype).bits < 64:
            return blocked_rmv(self.A, u)
        return self.A.rmv(u)

    @_certifying
    def dual_objective(self, u):
        """``D(u) = -(1/n) sum_i l*(u_i) - h*(-A^T u / n)`` (``-inf`` outside the dual domain)."""
        return self._dual_at(u, self._rmv_dual(u) / self.n)

    def _dual_at(self, u, v):
        """``D(u)`` given ``v = A^T u / n``."""
        out = -self.loss.conjugate_risk(u, self.y) - self.conjugate_h(-v) + self.offset
        return jnp.where(jnp.isnan(out), -jnp.inf, out)

    @_certifying
    def honest_dual(self, u):
        """The rescaling ``s u`` of a margin dual point ``u`` (in the loss's dual domain) that
        makes the penalty term of the dual finite: for a penalty without a constraint,

            s = dual_scale(-A^T u / n) in (0, 1],   the largest s with h*(-s A^T u / n) < inf

        (for a norm ``R``: ``s = min(1, lam / R_*(A^T u / n))``; 1 for penalties whose conjugate
        is finite everywhere). With a constraint (``h* >= sigma_C`` finite) or no penalty ``u`` is
        returned as it is. The rescaled point stays in the loss's dual domain when that domain is
        star-shaped about 0 (every loss of :mod:`jaxprox.losses`), so ``D(s u)`` is a valid lower
        bound on ``P*`` (the "honest dual" of "An Efficient Primal Dual Prox Method for Non-Smooth
        Optimization"; standard for Lasso-type gaps)."""
        if not self._rescales_dual:
            return u
        return u * self._honest_scale(self._rmv_dual(u) / self.n)

    @property
    def _rescales_dual(self) -> bool:
        """Whether :meth:`honest_dual` rescales: a penalty without a constraint."""
        return self.penalty is not None and self.constraint is None

    def _honest_scale(self, v):
        """:meth:`honest_dual`'s ``s`` from ``v = A^T u / n``: ``dual_scale(-v)`` where it
        rescales, else 1."""
        return self.penalty.dual_scale(-v) if self._rescales_dual else 1.0

    @_certifying
    def dual_value(self, u):
        """``D(s u)``, the dual objective at :meth:`honest_dual` ``(u)``: a lower bound on ``P*``
        for every ``u`` in the loss's dual domain (``-inf`` if it is still infeasible). One
        product: ``A^T (s u) / n`` is taken as ``s v`` from the ``v = A^T u / n`` that fixed ``s``."""
        v = self._rmv_dual(u) / self.n
        s = self._honest_scale(v)
        return self._dual_at(s * u, s * v)

    def best_dual(self, margins, *duals):
        """``max(D(s u), D(s_k u_k))`` with ``u = l'(margins)`` (the dual point of the primal point
        whose margins ``A w`` these are) and the extra dual points ``u_k`` in the loss's dual
        domain, each rescaled by :meth:`dual_value`: every candidate is dual-feasible or scores
        ``-inf``, so the max is a lower bound on ``P*``. All candidates in one product
        ``A^T [u, u_1, ...]`` (:func:`jaxprox.base.best_of`)."""
        return best_of(self.dual_value, self.loss.dual_point(margins, self.y), *duals)

    @_certifying
    def dual_point(self, w):
        """A dual-feasible point built from ``w``: :meth:`honest_dual` of ``u = l'(A w)``."""
        return self.honest_dual(self.loss.dual_point(self.A.mv(w), self.y))

    def without_zero_penalty(self) -> "ERM":
        """This problem without its penalty when that penalty's ``lam`` is concretely zero and
        there is no constraint (the same objective, certified through :attr:`curvature_certified`
        instead of a dual that is ``-inf`` or ``0``); otherwise ``self``. :func:`jaxprox.solve`
        applies it on concrete data (not under ``jit`` / ``vmap`` / a derivative in ``lam``)."""
        pen = self.penalty
        if pen is None or self.constraint is not None or not hasattr(pen, "lam"):
            return self
        lam = pen.lam
        if isinstance(lam, jax.core.Tracer) or np.any(np.asarray(lam) != 0):
            return self
        return eqx.tree_at(lambda p: p.penalty, self, None, is_leaf=lambda x: x is None)

    @property
    def curvature_certified(self) -> bool:
        """Whether a certificate also uses :func:`curvature_bound`: no penalty and no constraint
        (the Fenchel dual is then feasible only on ``{A^T u = 0}``, which no rounded point meets,
        so every dual value is ``-inf``), a vector ``w``, the squared or logistic loss and
        ``min(n, d) <= CURVATURE_MAX``. (``solve`` drops a penalty whose ``lam`` is zero, so an
        ``L1(0.0)`` problem is certified the same way.)"""
        return (self.penalty is None and self.constraint is None and self.n_outputs is None
                and self.loss.family in ("squared", "logistic") and min(self.n, self.d) <= CURVATURE_MAX)

    def lower_bound(self, w, p, d, margins=None, grad=None):
        """The best lower bound on ``inf P`` from a dual value ``d`` and, where
        :attr:`curvature_certified`, ``P(w) - curvature_bound`` (``p = P(w)``; the margins ``A w``
        and the gradient ``A^T l'(A w) / n`` when the caller has them)."""
        if not self.curvature_certified:
            return d
        z = self.A.mv(w) if margins is None else margins
        g = self.A.rmv(self.loss.grad(z, self.y)) / self.n if grad is None else grad
        return jnp.maximum(d, p - curvature_bound(self, z, g))

    @_certifying
    def best_certificate(self, w, *duals):
        """``(P(w), D, P(w) - D)`` with ``D`` the best of ``D(dual_point(w))`` and ``D(s u)`` for
        each extra dual point ``u`` given (e.g. a solver's own dual iterate; :meth:`best_dual`).
        Every candidate is dual-feasible or scores ``-inf``, so the gap is an honest bound on
        ``P(w) - P*``."""
        w = self._scored(w)
        Aw = self.A.mv(w)
        p = self._primal_at(w, Aw)
        d = self.lower_bound(w, p, self.best_dual(Aw, *duals), Aw)
        return p, d, p - d

    def certificate_at(self, w, margins, risk_grad):
        """:meth:`certificate` ``(w)`` from the margins ``A w`` and, for a smooth loss, the risk
        gradient ``A^T l'(A w) / n`` that a solver has computed anyway (its next model's
        gradient): no product with ``A``. With the dual point ``u = l'(A w)``, ``A^T u / n`` is that
        gradient, so :meth:`honest_dual`'s scale and ``D(s u)`` follow from it. Exact when the
        arguments are (a solver passes ``A w`` recomputed, not accumulated); falls back to
        :meth:`certificate` where the certificate needs another precision than the data's
        (:func:`certificate_dtype`) or a constraint moves the scored point."""
        if not self.loss.smooth or self.constraint is not None or certificate_dtype(self.A.dtype) != self.A.dtype:
            return self.certificate(w)
        u = self.loss.dual_point(margins, self.y)
        scale = self._honest_scale(risk_grad)
        p, d = self._primal_at(w, margins), self._dual_at(scale * u, scale * risk_grad)
        d = self.lower_bound(w, p, d, margins, risk_grad)
        return p, d, p - d

    @_certifying
    def certificate(self, w, u=None):
        """``(P(w), D(u), P(w) - D(u))`` with ``u = dual_point(w)`` unless given."""
        w = self._scored(w)
        Aw = self.A.mv(w)
        p = self._primal_at(w, Aw)
        d = self.dual_value(self.loss.dual_point(Aw, self.y)) if u is None else self.dual_objective(u)
        d = self.lower_bound(w, p, d, Aw)
        return p, d, p - d
