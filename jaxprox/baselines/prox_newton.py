"""Proximal Newton for ``min_w f(w) + h(w)`` with a twice-differentiable risk and few features.

With ``f(w) = (1/n) sum_i l(a_i^T w, y_i)`` and ``h`` a penalty with a prox (and/or a constraint),
one step at ``w`` (Lee, Sun & Saunders 2014, "Proximal Newton-type methods", Alg. 1; the
second-order model of liblinear's newGLMNET, Yuan, Ho & Lin 2012) is

    g = A^T l'(A w) / n,   H = A^T diag(l''(A w)) A / n                       (d x d, dense)
    v = argmin_v  g^T (v - w) + 1/2 (v - w)^T H (v - w) + h(v)                (inner problem)
    w+ = w + t (v - w),   t = beta^j, the first with the Armijo decrease
         F(w + t d) <= F(w) + sigma t Delta,   Delta = g^T d + h(v) - h(w) <= -d^T H d / 2.

The inner problem is a d-dimensional composite quadratic; it is solved by FISTA with adaptive
restart and the step ``1 / L``, ``L = min(||H||_F, ||H||_inf) >= lambda_max(H)``, from ``v = w``, until its prox-gradient residual
is below ``eta`` times the outer one, with the forcing term ``eta = min(1/2, sqrt(r0))`` (inexact
proximal Newton, Lee et al. section 3.3: superlinear convergence). Each step costs one ``rmv``, one
``mv``, one weighted Gram ``A^T diag(c) A`` (``O(n d^2)`` dense, ``O(nnz * row length)`` sparse),
and ``O(d^2)`` per inner iteration: worth it when ``d`` is small (up to a
few thousand) and the problem is ill-conditioned, e.g. an l1-logistic path on a9a
(``benchmarks/results/paths.md``), where first-order methods need ~10^4 products and the Newton
model needs a few steps per lambda.

Not from the five papers: it is the second-order reference that issue 9's path benchmark measures
against (liblinear), written as a jaxprox solver so that it jits, vmaps, warm-starts along
:func:`jaxprox.solve_path` and is differentiated by the driver through the prox-gradient residual.
"""
from __future__ import annotations

import equinox as eqx
import jax
import jax.numpy as jnp
from jax import lax

from ..driver import Solver
from .fista import momentum


class ProxNewtonState(eqx.Module):
    w: jax.Array
    Aw: jax.Array
    inner: jax.Array    # inner FISTA iterations so far (diagnostic)
    t: jax.Array        # last accepted Armijo step length


class ProxNewton(Solver):
    """Inexact proximal Newton with an Armijo line search (see the module docstring).

    Args:
        inner_steps: cap on the inner FISTA iterations per Newton step (static).
        sigma: Armijo sufficient-decrease constant.
        beta: backtracking factor of the line search.
        max_backtrack: cap on the line-search halvings (static).
        hessian_dtype: precision of the weighted Gram ``H`` (static; ``None``: the problem's).
            ``"float32"`` halves the dominant cost on a CPU; the model is then exact to ~1e-7
            relative, which turns the local rate from quadratic into linear with a tiny ratio, and
            the gradient, line search and certificate stay in the problem's precision.

    Needs a smooth loss (``l''`` by forward-mode differentiation of ``loss.grad``), a vector
    variable ``w`` of shape ``(d,)`` and ``d <= 4096`` (the model Hessian is a dense ``d x d``
    array). ``check_every`` defaults to 1: one Newton step is expensive and each one counts.
    Differentiation is implicit (the driver's prox-gradient residual); ``adjoint="unrolled"`` is
    not available (the inner loops are ``while_loop``s).
    """

    inner_steps: int = eqx.field(static=True, default=500)
    sigma: float = eqx.field(static=True, default=1e-4)
    beta: float = eqx.field(static=True, default=0.5)
    max_backtrack: int = eqx.field(static=True, default=30)
    hessian_dtype: str | None = eqx.field(static=True, default=None)
    check_every: int = eqx.field(static=True, default=1, kw_only=True)
    max_steps: int = eqx.field(static=True, default=500, kw_only=True)

    def init(self, problem, init=None):
        if not problem.loss.smooth:
            raise ValueError(f"ProxNewton needs a smooth loss; {type(problem.loss).__name__} is not "
                             "(use loss.smoothed(mu), or a primal-dual solver)")
        if tuple(problem.param_shape) != (problem.d,) or problem.y.ndim != 1:
            raise ValueError("ProxNewton needs a vector variable w of shape (d,) and 1-D labels")
        if problem.d > 4096:
            raise ValueError(f"ProxNewton forms a dense d x d Hessian; d = {problem.d} is too large "
                             "(use FISTA)")
        if self.adjoint != "implicit":
            raise ValueError("ProxNewton supports adjoint='implicit' only (its inner loops are while_loops)")
        w = problem.zeros() if init is None else jnp.asarray(init, problem.A.dtype)
        w = problem.prox(w, 0.0) if problem.constraint is not None else w
        one = jnp.ones((), w.dtype)
        return ProxNewtonState(w, problem.A.mv(w), jnp.zeros((), jnp.int32), one)

    def model(self, problem, s: ProxNewtonState):
        """Gradient ``g`` and Hessian ``H`` of the risk at ``w`` (second-order model)."""
        loss, y, n = problem.loss, problem.y, problem.n
        l1, l2 = jax.jvp(lambda z: loss.grad(z, y), (s.Aw,), (jnp.ones_like(s.Aw),))
        return problem.A.rmv(l1) / n, problem.A.weighted_gram(l2 / n, self.hessian_dtype)

    def newton_point(self, problem, w, g, H):
        """``v ~ argmin_v g^T (v - w) + 1/2 (v - w)^T H (v - w) + h(v)`` by FISTA with restart."""
        # an upper bound on lambda_max(H) without LAPACK (whose eigvalsh is ~100x slower on the
        # near-singular H of 0/1 features): min(||H||_F, ||H||_inf); ~3% above lambda_max on a9a
        L = jnp.minimum(jnp.linalg.norm(H), jnp.max(jnp.sum(jnp.abs(H), axis=1)))
        L = jnp.maximum(L, jnp.finfo(w.dtype).tiny)
        grad_q = lambda v: g + H @ (v - w)  # noqa: E731
        prox_step = lambda v: problem.prox(v - grad_q(v) / L, 1.0 / L)  # noqa: E731
        v1 = prox_step(w)
        r0 = L * jnp.linalg.norm(v1 - w)           # the outer prox-gradient residual (metric L)
        eta = jnp.minimum(0.5, jnp.sqrt(r0))

        def cond(c):
            _, _, _, k, r = c
            return (r > eta * r0) & (k < self.inner_steps)

        def body(c):
            x, yv, t, k, _ = c
            x_new = prox_step(yv)
            beta, t_new = momentum(t, yv, x_new, x)
            return x_new, x_new + beta * (x_new - x), t_new, k + 1, L * jnp.linalg.norm(x_new - yv)

        one = jnp.ones((), w.dtype)
        v, _, _, k, _ = lax.while_loop(cond, body, (v1, v1, one, jnp.ones((), jnp.int32), r0))
        return v, k

    def step(self, problem, s: ProxNewtonState) -> ProxNewtonState:
        loss, y = problem.loss, problem.y
        g, H = self.model(problem, s)
        v, k = self.newton_point(problem, s.w, g, H)
        d = v - s.w
        Ad = problem.A.mv(d)
        hw = problem.regularizer(s.w)
        F = loss.risk(s.Aw, y) + hw
        delta = jnp.minimum(jnp.vdot(g, d) + problem.regularizer(v) - hw, 0.0)
        slack = 1e-14 * (1.0 + jnp.abs(F))   # rounding of F near the optimum

        def decrease_ok(t):
            Ft = loss.risk(s.Aw + t * Ad, y) + problem.regularizer(s.w + t * d)
            return Ft <= F + self.sigma * t * delta + slack

        def cond(c):
            _, ok, j = c
            return (~ok) & (j < self.max_backtrack)

        def body(c):
            t = c[0] * self.beta
            return t, decrease_ok(t), c[2] + 1

        one = jnp.ones_like(F)
        t, ok, _ = lax.while_loop(cond, body, (one, decrease_ok(one), 0))
        t = jnp.where(ok, t, 0.0)                 # no decrease found: stay (the certificate decides)
        w = s.w + t * d
        if problem.constraint is not None:        # w, v feasible and C convex: w is; guard rounding
            w = problem.prox(w, 0.0)
        return ProxNewtonState(w, s.Aw + t * Ad, s.inner + k, t)

    def certificate(self, problem, s: ProxNewtonState):
        return problem.certificate(s.w)

    def params(self, s: ProxNewtonState):
        return s.w
