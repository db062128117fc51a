"""A jaxprox solve inside an equinox model trained with optax (examples/solve_as_layer.py):
the jitted training loop runs, the loss decreases, and the gradient with respect to the
dictionary (through the implicit derivative of the Lasso code) matches finite differences."""
import importlib.util
import sys
from pathlib import Path

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

spec = importlib.util.spec_from_file_location(
    "solve_as_layer", Path(__file__).resolve().parent.parent / "examples" / "solve_as_layer.py")
layer = importlib.util.module_from_spec(spec)
sys.modules["solve_as_layer"] = layer  # dataclasses resolve annotations through sys.modules
spec.loader.exec_module(layer)


def test_training_decreases_loss():
    model, history, _ = layer.train(steps=15)
    assert np.all(np.isfinite(history))
    assert history[-1] < 0.8 * history[0]


def test_dictionary_gradient_matches_finite_differences():
    X, y = layer.make_data(jax.random.PRNGKey(0), n=16)
    d, k = X.shape[1], 6
    model = layer.SparseCodingClassifier(jax.random.normal(jax.random.PRNGKey(1), (d, k)) / jnp.sqrt(d),
                                         jnp.linspace(-1, 1, k), jnp.zeros(()))
    g = eqx.filter_jit(eqx.filter_grad(layer.loss_fn))(model, X, y).D

    @jax.jit
    def f(D):
        return layer.loss_fn(eqx.tree_at(lambda m: m.D, model, D), X, y)

    for (i, j) in [(0, 0), (3, 2), (7, 5)]:
        e = jnp.zeros_like(model.D).at[i, j].set(1e-6)
        fd = (f(model.D + e) - f(model.D - e)) / 2e-6
        assert abs(float(g[i, j]) - float(fd)) <= 1e-5 * max(abs(float(fd)), 1e-3), (i, j, g[i, j], fd)
