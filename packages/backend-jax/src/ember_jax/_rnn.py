"""The LSTM primitive as two compiled jax kernels (issue 22): the forward a ``lax.scan`` over the time-major
steps, the backward a reverse ``lax.scan`` (backpropagation through time, formulas of
:mod:`ember.backend._ops_rnn`) followed by one matmul each for ``grad_x``, ``grad_w_x`` and ``grad_w_h``. Under
``ember_jax.jit`` (or any outer ``jax.jit``) each is one loop in the compiled program, so a layer of 64 steps
traces and compiles as one small loop body instead of 64 unrolled steps. The residual is the activated gates
``[seq_length, batch, 4 d]`` and the cell states ``[seq_length, batch, d]``, time-major. float16 and bfloat16 go
to the contract's composites."""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
from jax import lax

from ember.backend.contract import RnnOps

from ._kernel import HALF, kernel

__all__ = ["JaxRnnOps"]


@kernel(6)
def _forward(x: Any, h0: Any, c0: Any, w_x: Any, w_h: Any, bias: Any, residual: bool) -> Any:
    n, seq, d_in = x.shape
    d = h0.shape[1]
    xw = (x.swapaxes(0, 1).reshape(seq * n, d_in) @ w_x).reshape(seq, n, 4 * d)
    if bias is not None:
        xw = xw + bias

    def step(carry: Any, z: Any) -> Any:
        h, c = carry
        z = z + h @ w_h
        i, f, o = (jax.nn.sigmoid(z[:, k * d:(k + 1) * d]) for k in (0, 1, 3))
        g = jnp.tanh(z[:, 2 * d:3 * d])
        c = f * c + i * g
        h = o * jnp.tanh(c)
        return (h, c), ((h, jnp.concatenate([i, f, g, o], 1), c) if residual else h)

    (h, c), outs = lax.scan(step, (h0, c0), xw)
    hs = outs[0] if residual else outs
    return hs.swapaxes(0, 1), h, c, ((outs[1], outs[2]) if residual else None)


@kernel()
def _backward(grad_y: Any, grad_h: Any, grad_c: Any, x: Any, h0: Any, c0: Any, w_x: Any, w_h: Any, bias: Any,
              y: Any, gates: Any, cells: Any) -> Any:
    n, seq, d_in = x.shape
    d = h0.shape[1]
    dh0 = jnp.zeros_like(h0) if grad_h is None else grad_h
    dc0 = jnp.zeros_like(c0) if grad_c is None else grad_c
    gy = jnp.zeros((seq, n, d), h0.dtype) if grad_y is None else grad_y.swapaxes(0, 1)
    c_prev = jnp.concatenate([c0[None], cells[:-1]], 0)

    def step(carry: Any, inp: Any) -> Any:
        dh, dc = carry
        gyt, gt, ct, cpt = inp
        dh = dh + gyt
        i, f, g, o = (gt[:, k * d:(k + 1) * d] for k in range(4))
        tc = jnp.tanh(ct)
        dc = dc + dh * o * (1 - tc * tc)
        dz = jnp.concatenate([dc * g * i * (1 - i), dc * cpt * f * (1 - f), dc * i * (1 - g * g),
                              dh * tc * o * (1 - o)], 1)
        return (dz @ w_h.T, dc * f), dz

    (dh, dc), dz = lax.scan(step, (dh0, dc0), (gy, gates, cells, c_prev), reverse=True)
    dz2 = dz.reshape(seq * n, 4 * d)
    gx = (dz2 @ w_x.T).reshape(seq, n, d_in).swapaxes(0, 1)
    gw_x = x.swapaxes(0, 1).reshape(seq * n, d_in).T @ dz2
    h_prev = jnp.concatenate([h0[None], y.swapaxes(0, 1)[:-1]], 0).reshape(seq * n, d)
    gb = None if bias is None else dz2.sum(0)
    return gx, dh, dc, gw_x, h_prev.T @ dz2, gb


class JaxRnnOps(RnnOps):
    """``lstm`` and ``lstm_backward`` as ``lax.scan`` loops."""

    def lstm(self, x: Any, h0: Any, c0: Any, w_x: Any, w_h: Any, bias: Any | None,
             residual: bool) -> tuple[Any, Any, Any, Any]:
        if x.dtype in HALF:
            return super().lstm(x, h0, c0, w_x, w_h, bias, residual)
        return _forward(x, h0, c0, w_x, w_h, bias, bool(residual))  # type: ignore[no-any-return]

    def lstm_backward(self, grad_y: Any | None, grad_h: Any | None, grad_c: Any | None, x: Any, h0: Any, c0: Any,
                      w_x: Any, w_h: Any, bias: Any | None, y: Any, residual: Any) -> tuple[Any, ...]:
        if x.dtype in HALF:
            return super().lstm_backward(grad_y, grad_h, grad_c, x, h0, c0, w_x, w_h, bias, y, residual)
        return _backward(grad_y, grad_h, grad_c, x, h0, c0, w_x, w_h, bias, y, *residual)  # type: ignore[no-any-return]
