"""A jaxprox solve as a layer of an equinox model, trained end to end with optax.

Differentiable sparse coding: for an input ``x`` (``d`` values) the layer returns the Lasso code

    z*(x) = argmin_z  1/2 ||D z - x||^2 / d + lam ||z||_1

of ``x`` in a learnable dictionary ``D`` (``d x k``), computed by FISTA inside ``jp.solve``; a
linear head maps the code to a label. Gradients with respect to ``D`` flow through the solution
by implicit differentiation (no unrolling); the whole training step is jitted and vmapped over
the batch.

    python examples/solve_as_layer.py
"""
from __future__ import annotations

import equinox as eqx
import jax
import jax.numpy as jnp
import optax

import jaxprox as jp
from jaxprox import losses, penalties


class SparseCodingClassifier(eqx.Module):
    D: jax.Array        # dictionary, d x k
    head: jax.Array     # k
    bias: jax.Array
    lam: float = eqx.field(static=True, default=0.05)

    def code(self, x):
        problem = jp.ERM(self.D, x, losses.Squared(), penalties.L1(self.lam))
        return jp.solve(problem, jp.FISTA(tol=1e-10, max_steps=5000)).params

    def __call__(self, x):
        return self.code(x) @ self.head + self.bias


def make_data(key, n=64, d=12, k=6):
    kD, kz, ky = jax.random.split(key, 3)
    D_true = jax.random.normal(kD, (d, k))
    Z = jax.random.normal(kz, (n, k)) * (jax.random.uniform(ky, (n, k)) < 0.3)
    X = Z @ D_true.T
    y = jnp.where(Z[:, 0] - Z[:, 1] > 0, 1.0, -1.0)
    return X, y


def loss_fn(model, X, y):
    scores = jax.vmap(model)(X)
    return jnp.mean(jnp.logaddexp(0.0, -y * scores))


def train(steps=30, seed=0):
    key = jax.random.PRNGKey(seed)
    X, y = make_data(key)
    d, k = X.shape[1], 6
    model = SparseCodingClassifier(jax.random.normal(jax.random.PRNGKey(1), (d, k)) / jnp.sqrt(d),
                                   jnp.zeros(k), jnp.zeros(()))
    opt = optax.adam(5e-2)
    state = opt.init(eqx.filter(model, eqx.is_inexact_array))

    @eqx.filter_jit
    def step(model, state):
        loss, grads = eqx.filter_value_and_grad(loss_fn)(model, X, y)
        updates, state = opt.update(grads, state)
        return eqx.apply_updates(model, updates), state, loss

    history = []
    for _ in range(steps):
        model, state, loss = step(model, state)
        history.append(float(loss))
    return model, history, (X, y)


if __name__ == "__main__":
    jax.config.update("jax_enable_x64", True)
    model, history, _ = train()
    print("training loss:", " ".join(f"{v:.4f}" for v in history[::5]), f"... {history[-1]:.4f}")
