"""The models of ``bench/models.py`` as raw ``jax.jit`` training steps (NCHW, PyTorch's weight layouts).

Each model is a pure function of a parameter dict taken from the raw PyTorch model's ``state_dict``
(``_models_torch.build``), so its first loss equals raw PyTorch's: a check that both do the same work. The
whole step (forward, cross-entropy, ``value_and_grad``, ``_jax_reference.adam``, BatchNorm's running
statistics) is one ``jax.jit`` function with its parameters, Adam state and buffers donated. The guide CNN is
``_jax_reference.guide_step``. Scripts in ``bench/`` import this module as ``_models_jax``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from _jax_reference import _cross_entropy, adam, adam_init, guide_step
from _models_ember import SPECS

BN_MOMENTUM, EPS = 0.1, 1e-5


def _bn(p: dict[str, Any], b: dict[str, Any], name: str, x: Any) -> Any:
    """Training BatchNorm over NCHW: normalizes with the batch statistics and writes the running ones to ``b``."""
    mean = x.mean(axis=(0, 2, 3))
    var = x.var(axis=(0, 2, 3))
    n = x.size // x.shape[1]
    b[name + ".running_mean"] = (1 - BN_MOMENTUM) * b[name + ".running_mean"] + BN_MOMENTUM * mean
    b[name + ".running_var"] = (1 - BN_MOMENTUM) * b[name + ".running_var"] + BN_MOMENTUM * var * n / (n - 1)
    inv = jax.lax.rsqrt(var + EPS) * p[name + ".weight"]
    return (x - mean[None, :, None, None]) * inv[None, :, None, None] + p[name + ".bias"][None, :, None, None]


def _conv(x: Any, w: Any, stride: int, pad: int) -> Any:
    return jax.lax.conv_general_dilated(x, w, (stride, stride), [(pad, pad)] * 2,
                                        dimension_numbers=("NCHW", "OIHW", "NCHW"))


def resnet18(p: dict[str, Any], b: dict[str, Any], x: Any) -> tuple[Any, dict[str, Any]]:
    b = dict(b)
    h = jax.nn.relu(_bn(p, b, "bn1", _conv(x, p["conv1.weight"], 2, 3)))
    h = jax.lax.reduce_window(h, -jnp.inf, jax.lax.max, (1, 1, 3, 3), (1, 1, 2, 2), [(0, 0), (0, 0), (1, 1), (1, 1)])
    cin = 64
    for i, (cout, stride) in enumerate(((64, 1), (128, 2), (256, 2), (512, 2))):
        for j in range(2):
            s = stride if j == 0 else 1
            pre = f"layers.{i}.{j}."
            out = jax.nn.relu(_bn(p, b, pre + "bn1", _conv(h, p[pre + "conv1.weight"], s, 1)))
            out = _bn(p, b, pre + "bn2", _conv(out, p[pre + "conv2.weight"], 1, 1))
            if j == 0 and (s != 1 or cin != cout):
                h = _bn(p, b, pre + "downsample.1", _conv(h, p[pre + "downsample.0.weight"], s, 0))
            h = jax.nn.relu(out + h)
        cin = cout
    return h.mean(axis=(2, 3)) @ p["fc.weight"].T + p["fc.bias"], b


def _layer_norm(x: Any, w: Any, bias: Any) -> Any:
    mean = x.mean(-1, keepdims=True)
    var = ((x - mean) ** 2).mean(-1, keepdims=True)
    return (x - mean) * jax.lax.rsqrt(var + EPS) * w + bias


def transformer(p: dict[str, Any], b: dict[str, Any], tokens: Any) -> tuple[Any, dict[str, Any]]:
    e = SPECS["transformer"].extra
    heads = e["heads"]
    x = p["embedding.weight"][tokens] + p["positions"]
    n, t, d = x.shape
    for i in range(e["layers"]):
        pre = f"encoder.layers.{i}."
        qkv = x @ p[pre + "self_attn.in_proj_weight"].T + p[pre + "self_attn.in_proj_bias"]
        q, k, v = (a.reshape(n, t, heads, d // heads).transpose(0, 2, 1, 3) for a in jnp.split(qkv, 3, -1))
        att = jax.nn.softmax(q @ k.transpose(0, 1, 3, 2) / np.sqrt(d // heads), -1)
        ctx = (att @ v).transpose(0, 2, 1, 3).reshape(n, t, d)
        ctx = ctx @ p[pre + "self_attn.out_proj.weight"].T + p[pre + "self_attn.out_proj.bias"]
        x = _layer_norm(x + ctx, p[pre + "norm1.weight"], p[pre + "norm1.bias"])
        ff = jax.nn.gelu(x @ p[pre + "linear1.weight"].T + p[pre + "linear1.bias"], approximate=False)
        ff = ff @ p[pre + "linear2.weight"].T + p[pre + "linear2.bias"]
        x = _layer_norm(x + ff, p[pre + "norm2.weight"], p[pre + "norm2.bias"])
    return x.mean(1) @ p["head.weight"].T + p["head.bias"], b


def lstm(p: dict[str, Any], b: dict[str, Any], tokens: Any) -> tuple[Any, dict[str, Any]]:
    e = SPECS["lstm"].extra
    x = p["embedding.weight"][tokens].transpose(1, 0, 2)  # [seq, batch, d]
    for i in range(e["layers"]):
        w_ih, w_hh = p[f"lstm.weight_ih_l{i}"], p[f"lstm.weight_hh_l{i}"]
        bias = p[f"lstm.bias_ih_l{i}"] + p[f"lstm.bias_hh_l{i}"]
        xw = x @ w_ih.T + bias

        def cell(carry: Any, xt: Any, w_hh: Any = w_hh) -> Any:
            h, c = carry
            ig, fg, gg, og = jnp.split(xt + h @ w_hh.T, 4, -1)
            c = jax.nn.sigmoid(fg) * c + jax.nn.sigmoid(ig) * jnp.tanh(gg)
            h = jax.nn.sigmoid(og) * jnp.tanh(c)
            return (h, c), h

        zeros = jnp.zeros((x.shape[1], e["hidden"]), x.dtype)
        _, x = jax.lax.scan(cell, (zeros, zeros), xw)
    h = x.transpose(1, 0, 2).reshape(-1, e["hidden"])
    return h @ p["head.weight"].T + p["head.bias"], b


MODELS: dict[str, Callable[..., tuple[Any, dict[str, Any]]]] = {
    "resnet18": resnet18, "transformer": transformer, "lstm": lstm,
}


def step(name: str, state_dict: dict[str, np.ndarray], x: np.ndarray, y: np.ndarray, lr: float = 1e-4
         ) -> Callable[[], jax.Array]:
    """The jitted training step of model ``name`` starting from ``state_dict`` (numpy arrays of the raw PyTorch
    model: trainable ones become parameters, BatchNorm's running statistics buffers). ``step()`` returns the
    loss (un-synchronized)."""
    if name == "guide":
        return guide_step(x, y, dropout=0.5, lr=lr, seed=42)
    model = MODELS[name]

    def loss_fn(p: Any, bufs: Any, xb: Any, yb: Any) -> Any:
        logits, bufs = model(p, bufs, xb)
        return _cross_entropy(logits, yb), bufs

    def train(p: Any, o: Any, bufs: Any, xb: Any, yb: Any) -> Any:
        (loss, bufs), g = jax.value_and_grad(loss_fn, has_aux=True)(p, bufs, xb, yb)
        p, o = adam(p, g, o, lr)
        return p, o, bufs, loss

    jitted = jax.jit(train, donate_argnums=(0, 1, 2))
    is_buf = ("running_mean", "running_var", "num_batches_tracked")
    params = {k: jnp.asarray(v) for k, v in state_dict.items() if not k.endswith(is_buf)}
    bufs = {k: jnp.asarray(v) for k, v in state_dict.items() if k.endswith(("running_mean", "running_var"))}
    st = {"p": params, "o": adam_init(params), "b": bufs}
    xb = jnp.asarray(x) if x.dtype == np.float32 else jnp.asarray(x.astype(np.int32))
    yb = jnp.asarray(y.reshape(-1).astype(np.int32))

    def run() -> jax.Array:
        st["p"], st["o"], st["b"], loss = run.jitted(st["p"], st["o"], st["b"], xb, yb)  # type: ignore[attr-defined]
        return loss

    # for bench/jit_dispatch.py: the jitted function (wrapped there to time jax's dispatch) and the state
    run.jitted = jitted  # type: ignore[attr-defined]
    run.state = st  # type: ignore[attr-defined]
    return run
