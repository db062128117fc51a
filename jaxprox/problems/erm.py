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

The certificate (the dual point, its honest rescaling, the curvature bound without a penalty,
the precision policy) is :mod:`jaxprox.certificates`; the dual methods here call it.

Validation (shapes, NaN/inf, labels, negative strengths) happens in the constructor, on concrete
values, so errors are raised before any tracing.
"""
from __future__ import annotations

import copy
import math

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import scipy.linalg

from .._compile import once_per_data
from .. import certificates as cert
from ..base import Constraint, Loss, Penalty, Problem, cast_floats
from ..certificates import certificate_dtype, certifying
from ..defaults import DENSE_TANGENT_MAX, RESCALE_RATIO, columns_in_different_units
from ..operators import LinearOperator, as_operator
from .validation import check_finite, check_numeric, concrete, data_operator, leaf


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


def _least_squares_factor(X: np.ndarray, y: np.ndarray):
    """``(R, Q^T y, ||y - Q Q^T y||^2 / 2n, X^T X / n)`` of the thin QR ``X = Q R`` (float64, on the
    host). Through the Cholesky factor of the Gram ``X^T X = R^T R`` (``Q^T y = R^{-T} X^T y``),
    several times faster than Householder QR for ``n >> d``, when ``R`` is well conditioned
    (smallest / largest pivot above ``1e-4``: the least-squares constant, a difference of two
    squares, then keeps about 8 of its digits); Householder QR otherwise (``X^T X / n`` is
    then ``None``: not needed)."""
    n = X.shape[0]
    G = X.T @ X
    try:
        L = np.linalg.cholesky(G)
        pivots = np.abs(np.diag(L))
        if pivots.min() > 1e-4 * pivots.max():
            Xty = X.T @ y
            qty = scipy.linalg.solve_triangular(L, Xty, lower=True)  # R^{-T} X^T y
            const = 0.5 * max(float(y @ y - qty @ qty), 0.0) / n
            return L.T, qty, const, G / n
    except np.linalg.LinAlgError:
        pass
    Q, R = np.linalg.qr(X, mode="reduced")
    qty = Q.T @ y
    resid = y - Q @ qty
    return R, qty, 0.5 * float(resid @ resid) / n, G / n


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

    A compressed problem also carries ``gram``, the risk's Hessian ``A^T A / n`` (``d x d``),
    which its solvers then need not form (``None`` otherwise).
    """

    A: LinearOperator
    y: jax.Array
    loss: Loss
    penalty: Penalty | None = None
    constraint: Constraint | None = None
    n_outputs: int | None = eqx.field(static=True, default=None)
    offset: jax.Array | float = 0.0
    gram: jax.Array | None = None

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
        gram = None
        if concrete(X) and concrete(y):
            # on the host, in float64 whatever the data's dtype (a float32 QR moves the optimum by
            # ~1e-4 relative on 20000 x 500), then R' and c rounded to the data's dtype
            R, qty, const, gram = _least_squares_factor(np.asarray(X, np.float64), np.asarray(y, np.float64))
        else:
            with jax.default_matmul_precision("highest"):
                Q, R = jnp.linalg.qr(X, mode="reduced")
                qty = Q.T @ y
                resid = y - Q @ qty
            const = 0.5 * (resid * resid).sum() / self.n
        scale = np.sqrt(self.d / self.n)
        out = eqx.tree_at(lambda p: (p.A, p.y, p.offset), self,
                          (as_operator(jnp.asarray(scale * R, dt)), jnp.asarray(scale * qty, dt),
                           self.offset + jnp.asarray(const, certificate_dtype(dt))))
        return out.with_gram(None if gram is None else jnp.asarray(gram, dt))

    def with_gram(self, gram) -> "ERM":
        """A copy carrying ``gram`` (``A^T A / n`` or ``None``; see the class docstring)."""
        out = copy.copy(self)  # tree_at cannot tell a None field from the other None leaves
        object.__setattr__(out, "gram", gram)
        return out

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

    def dual_objective(self, u):
        """``D(u) = -(1/n) sum_i l*(u_i) - h*(-A^T u / n)`` (``-inf`` outside the dual domain):
        :func:`jaxprox.certificates.dual_objective`."""
        return cert.dual_objective(self, u)

    def honest_dual(self, u):
        """The rescaling ``s u`` of a margin dual point ``u`` that makes the penalty term of the
        dual finite: :func:`jaxprox.certificates.honest_dual`."""
        return cert.honest_dual(self, u)

    def dual_value(self, u):
        """``D(s u)``, the dual objective at :meth:`honest_dual` ``(u)``, a lower bound on ``P*``:
        :func:`jaxprox.certificates.dual_value`."""
        return cert.dual_value(self, u)

    def best_dual(self, margins, *duals):
        """The best dual value of ``l'(margins)`` and the extra dual points ``duals``, each
        rescaled: :func:`jaxprox.certificates.best_dual`."""
        return cert.best_dual(self, margins, *duals)

    @certifying
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
        """Whether a certificate also uses the curvature bound:
        :func:`jaxprox.certificates.curvature_certified`."""
        return cert.curvature_certified(self)

    def lower_bound(self, w, p, d, margins=None, grad=None):
        """The best lower bound on ``inf P`` from a dual value ``d`` and, where
        :attr:`curvature_certified`, the curvature bound: :func:`jaxprox.certificates.lower_bound`."""
        return cert.lower_bound(self, w, p, d, margins, grad)

    @certifying
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
        (:func:`jaxprox.certificates.certificate_dtype`) or a constraint moves the scored point.
        With an l1 penalty below float64 the dual point corrected on the support of ``w``
        (:func:`jaxprox.certificates.support_corrected_dual`) is scored too: the solvers that
        call this (ProxNewton, and WorkingSet around it) then judge their subproblems and the
        whole problem by the same dual points."""
        if not self.loss.smooth or self.constraint is not None or certificate_dtype(self.A.dtype) != self.A.dtype:
            return self.certificate(w)
        u = self.loss.dual_point(margins, self.y)
        scale = cert.honest_scale(self, risk_grad)
        p, d = self._primal_at(w, margins), cert.fenchel_dual(self, scale * u, scale * risk_grad)
        if cert.support_correction_columns(self):
            d = jnp.maximum(d, cert.corrected_dual_value(self, w, margins))
        d = self.lower_bound(w, p, d, margins, risk_grad)
        return p, d, p - d

    @certifying
    def certificate(self, w, u=None):
        """``(P(w), D(u), P(w) - D(u))`` with ``u = dual_point(w)`` unless given."""
        w = self._scored(w)
        Aw = self.A.mv(w)
        p = self._primal_at(w, Aw)
        d = self.dual_value(self.loss.dual_point(Aw, self.y)) if u is None else self.dual_objective(u)
        d = self.lower_bound(w, p, d, Aw)
        return p, d, p - d
