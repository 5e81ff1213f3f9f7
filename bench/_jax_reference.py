"""Raw ``jax.jit`` reference steps shared by the benchmarks (``jax_backend.py``, ``mnist_guide.py``).

Each reference is a whole training step written directly in jax, compiled once with ``jax.jit``, with its
parameters and optimizer state as pytrees carried from call to call (buffers donated, as a careful jax user
writes it). They are the "raw" side of the Ember-vs-raw ratios, written once here so both benchmarks time the
same code. Scripts in ``bench/`` import this module as ``_jax_reference`` (their folder is on ``sys.path``).

- :func:`xor_step`: the XOR MLP 2-16-16-2 (``bench/autodiff.py``'s model and loss) with Adam;
- :func:`guide_step`: the Burn guide's MNIST model (``examples/guide``) in NCHW with its three dropouts,
  cross-entropy and Adam.

Adam is written as Ember's rule (``ember.optim.adaptive_moment``, Burn's form)::

    m = b1 m + (1 - b1) g      v = b2 v + (1 - b2) g^2      t += 1
    p -= lr * m * (sqrt(1 - b2^t) / (1 - b1^t)) / (sqrt(v) + eps * sqrt(1 - b2^t))

which equals ``torch.optim.Adam``'s ``lr * m_hat / (sqrt(v_hat) + eps)``; Burn's defaults b1 0.9, b2 0.999,
eps 1e-5. A step returns the loss as an un-synchronized ``jax.Array``: the caller blocks on it
(``block_until_ready``) or reads it (``float``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

__all__ = ["adam", "adam_init", "xor_step", "guide_init", "guide_params_from_module", "guide_step", "GUIDE_PARAMS"]

#: the guide's parameters in order: name -> (shape, fan_in of PyTorch's default init)
GUIDE_PARAMS: dict[str, tuple[tuple[int, ...], int]] = {
    "w1": ((8, 1, 3, 3), 9), "b1": ((8,), 9),
    "w2": ((16, 8, 3, 3), 72), "b2": ((16,), 72),
    "l1": ((1024, 512), 1024), "c1": ((512,), 1024),
    "l2": ((512, 10), 512), "c2": ((10,), 512),
}


# ---------------------------------------------------------------------------------------------------- Adam
def adam_init(params: Any) -> dict[str, Any]:
    """Adam's zero state for the pytree ``params``: ``{"m", "v"}`` like ``params`` and the step count ``t``
    (float32 scalar 0)."""
    zeros = jax.tree_util.tree_map(jnp.zeros_like, params)
    return {"m": zeros, "v": jax.tree_util.tree_map(jnp.zeros_like, params), "t": jnp.zeros((), jnp.float32)}


def adam(params: Any, grads: Any, state: dict[str, Any], lr: float, beta_1: float = 0.9, beta_2: float = 0.999,
         epsilon: float = 1e-5) -> tuple[Any, dict[str, Any]]:
    """One Adam update of the pytree ``params`` (Ember's / Burn's formula, see the module docstring); traceable.

    Returns ``(new params, new state)``.
    """
    t = state["t"] + 1.0
    m = jax.tree_util.tree_map(lambda m, g: beta_1 * m + (1.0 - beta_1) * g, state["m"], grads)
    v = jax.tree_util.tree_map(lambda v, g: beta_2 * v + (1.0 - beta_2) * g * g, state["v"], grads)
    bc2_sqrt = jnp.sqrt(1.0 - beta_2**t)
    factor = bc2_sqrt / (1.0 - beta_1**t)
    new = jax.tree_util.tree_map(lambda p, m, v: p - lr * (m * factor) / (jnp.sqrt(v) + epsilon * bc2_sqrt),
                                 params, m, v)
    return new, {"m": m, "v": v, "t": t}


def _cross_entropy(logits: Any, y: Any) -> Any:
    """Mean ``-log softmax(logits)[y]`` over the batch (logits ``[batch, classes]``, y Int ``[batch]``)."""
    logp = jax.nn.log_softmax(logits, axis=1)
    return -jnp.take_along_axis(logp, y[:, None], axis=1).mean()


# ---------------------------------------------------------------------------------------------------- XOR MLP
def xor_loss(params: Sequence[Any], x: Any, y: Any) -> Any:
    """Cross-entropy of the MLP ``relu(relu(x W0 + b0) W1 + b1) W2 + b2`` (``params = [W0, b0, W1, b1, W2, b2]``,
    weights ``[in, out]``)."""
    w0, b0, w1, b1, w2, b2 = params
    h = jax.nn.relu(x @ w0 + b0)
    h = jax.nn.relu(h @ w1 + b1)
    return _cross_entropy(h @ w2 + b2, y)


def xor_step(params: Sequence[np.ndarray], x: np.ndarray, y: np.ndarray, lr: float = 1e-2,
             donate: bool = True) -> Callable[[], jax.Array]:
    """The XOR MLP training step (``value_and_grad`` + :func:`adam`) as one ``jax.jit`` function.

    Args:
        params: ``[W0, b0, W1, b1, W2, b2]`` float32 (shapes ``[2, 16], [16], [16, 16], [16], [16, 2], [2]``),
            e.g. ``bench/autodiff.py``'s ``data()``; copied.
        x: inputs float32 ``[batch, 2]``. y: labels ``[batch]`` (int, 0 or 1).
        lr: Adam's learning rate.
        donate: donate the parameter and state buffers to the compiled call.

    Returns:
        ``step()``: one training step on the held state; returns the loss (float32 scalar, not synchronized).
    """
    def train(p: Any, o: Any, xb: Any, yb: Any) -> Any:
        loss, g = jax.value_and_grad(xor_loss)(p, xb, yb)
        p, o = adam(p, g, o, lr)
        return p, o, loss

    jitted = jax.jit(train, donate_argnums=(0, 1) if donate else ())
    ps = [jnp.asarray(p, jnp.float32) for p in params]
    state = {"p": ps, "o": adam_init(ps)}
    xb, yb = jnp.asarray(x, jnp.float32), jnp.asarray(y.astype(np.int32))

    def step() -> jax.Array:
        state["p"], state["o"], loss = jitted(state["p"], state["o"], xb, yb)
        return loss

    step.jitted = jitted  # type: ignore[attr-defined]  # for lowering / op counts
    step.args = lambda: (state["p"], state["o"], xb, yb)  # type: ignore[attr-defined]
    return step


# ---------------------------------------------------------------------------------------------------- MNIST guide
def guide_init(seed: int = 42) -> dict[str, jax.Array]:
    """The guide's parameters (:data:`GUIDE_PARAMS`) with PyTorch's default init ``U(-1/sqrt(fan_in), ..)``."""
    keys = jax.random.split(jax.random.PRNGKey(seed), len(GUIDE_PARAMS))
    return {
        name: jax.random.uniform(k, shape, jnp.float32, -1.0 / np.sqrt(fan_in), 1.0 / np.sqrt(fan_in))
        for k, (name, (shape, fan_in)) in zip(keys, GUIDE_PARAMS.items(), strict=True)
    }


def guide_params_from_module(model: Any) -> dict[str, np.ndarray]:
    """The parameters of an Ember guide ``Model`` (``examples/guide``) as :data:`GUIDE_PARAMS` arrays (copies on
    the host; Ember's Conv2d is OIHW and Linear ``[in, out]``, the layouts used here)."""
    fields = {"w1": model.conv1.weight, "b1": model.conv1.bias, "w2": model.conv2.weight, "b2": model.conv2.bias,
              "l1": model.linear1.weight, "c1": model.linear1.bias, "l2": model.linear2.weight,
              "c2": model.linear2.bias}
    return {k: np.asarray(p.val().to_numpy(), np.float32) for k, p in fields.items()}


def _conv(x: Any, w: Any, b: Any) -> Any:
    y = jax.lax.conv_general_dilated(x, w, (1, 1), "VALID", dimension_numbers=("NCHW", "OIHW", "NCHW"))
    return y + b[None, :, None, None]


def guide_loss(p: dict[str, Any], x: Any, y: Any, key: Any, dropout: float) -> Any:
    """The guide's forward (dropout after conv1, conv2 and linear1, as Burn's guide) and cross-entropy.

    Shapes: ``x`` float32 ``[batch, 28, 28]``, ``y`` int ``[batch]``; ``dropout`` is the drop probability
    (static; 0 disables it)."""
    def drop(h: Any, k: Any) -> Any:
        if dropout == 0.0:
            return h
        return jnp.where(jax.random.bernoulli(k, 1.0 - dropout, h.shape), h * (1.0 / (1.0 - dropout)), 0.0)

    k1, k2, k3 = jax.random.split(key, 3)
    b = x.shape[0]
    h = x.reshape(b, 1, 28, 28)
    h = drop(_conv(h, p["w1"], p["b1"]), k1)
    h = jax.nn.relu(drop(_conv(h, p["w2"], p["b2"]), k2))
    h = h.reshape(b, 16, 8, 3, 8, 3).mean(axis=(3, 5)).reshape(b, 1024)  # adaptive average pool 24 -> 8
    h = jax.nn.relu(drop(h @ p["l1"] + p["c1"], k3))
    return _cross_entropy(h @ p["l2"] + p["c2"], y)


def guide_step(images: np.ndarray, targets: np.ndarray, params: dict[str, Any] | None = None,
               dropout: float = 0.5, lr: float = 1e-4, seed: int = 42) -> Callable[[], jax.Array]:
    """The guide's training step (forward with threefry dropout masks, backward, :func:`adam`) as one
    ``jax.jit`` function in NCHW, parameters, Adam state and PRNG key donated.

    Args:
        images: float32 ``[batch, 28, 28]``. targets: int ``[batch]``.
        params: initial :data:`GUIDE_PARAMS` arrays (copied), e.g. :func:`guide_params_from_module`; default
            :func:`guide_init` ``(seed)``.
        dropout: drop probability of the three dropouts (the guide's 0.5; 0 turns them off).
        lr: Adam's learning rate (the guide's 1e-4). seed: initial weights and the dropout key.

    Returns:
        ``step()``: one training step on the held state; returns the loss (float32 scalar, not synchronized).
    """
    def train(p: Any, o: Any, key: Any, x: Any, y: Any) -> Any:
        key, sub = jax.random.split(key)
        loss, g = jax.value_and_grad(guide_loss)(p, x, y, sub, dropout)
        p, o = adam(p, g, o, lr)
        return p, o, key, loss

    jitted = jax.jit(train, donate_argnums=(0, 1, 2))
    ps = guide_init(seed) if params is None else {k: jnp.array(v, jnp.float32) for k, v in params.items()}
    state = {"p": ps, "o": adam_init(ps), "k": jax.random.fold_in(jax.random.PRNGKey(seed), 1)}
    x, y = jnp.asarray(images, jnp.float32), jnp.asarray(targets.astype(np.int32))

    def step() -> jax.Array:
        state["p"], state["o"], state["k"], loss = jitted(state["p"], state["o"], state["k"], x, y)
        return loss

    step.jitted = jitted  # type: ignore[attr-defined]
    step.args = lambda: (state["p"], state["o"], state["k"], x, y)  # type: ignore[attr-defined]
    return step
