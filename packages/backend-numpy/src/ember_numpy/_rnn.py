"""The LSTM primitive as a dedicated numpy kernel (issue 22).

Forward: the input projection of every step in one gemm, then per step one ``[batch, d] @ [d, 4 d]`` gemm written
into the step's slice of a preallocated gate buffer and in-place ufuncs (``out=``) for the gate math. The
sigmoids are ``(1 + tanh(z / 2)) / 2`` (no overflow, so no floating-point warning) with the halving folded into
the weights of the ``i, f, o`` columns (exact: a power of two), so one ``tanh`` covers all four gates. Backward:
a loop over the steps in reverse with in-place gate gradients into one ``[seq_length, batch, 4 d]`` buffer and one
gemm per step for ``dh``; then the weight gradients as one gemm each over the stacked steps (``dW_h`` over the
stacked ``h_{t-1}``, not per step), ``grad_x`` one gemm. Buffers are time-major so every step is contiguous.
float16 goes to the contract's composites (float32 and float64 here). Formulas: :mod:`ember.backend._ops_rnn`.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ember.backend.contract import RnnOps

__all__ = ["NumpyRnnOps"]

_NATIVE = (np.dtype(np.float32), np.dtype(np.float64))


def _half_ifo(d: int, dtype: Any) -> np.ndarray:
    """``[4 d]`` scale: 0.5 on the ``i, f, o`` columns, 1 on ``g``."""
    s = np.full(4 * d, 0.5, dtype)
    s[2 * d:3 * d] = 1.0
    return s


def _forward(x: np.ndarray, h0: np.ndarray, c0: np.ndarray, w_x: np.ndarray, w_h: np.ndarray,
             bias: np.ndarray | None) -> tuple[np.ndarray, ...]:
    n, seq, d_in = x.shape
    d = h0.shape[1]
    s = _half_ifo(d, x.dtype)
    x_tm = np.ascontiguousarray(x.transpose(1, 0, 2)).reshape(seq * n, d_in)
    gates = np.matmul(x_tm, w_x * s).reshape(seq, n, 4 * d)  # gates[t] holds z_t, then the activated gates
    if bias is not None:
        gates += bias * s
    w_hs = w_h * s
    hs = np.empty((seq + 1, n, d), x.dtype)  # hs[t + 1] = h_t, hs[0] = h0
    hs[0] = h0
    cells = np.empty((seq, n, d), x.dtype)
    tanh_c = np.empty((seq, n, d), x.dtype)
    zt = np.empty((n, 4 * d), x.dtype)
    c_prev = c0
    for t in range(seq):
        z = gates[t]
        np.matmul(hs[t], w_hs, out=zt)
        z += zt
        np.tanh(z, out=z)
        for cols in (z[:, :2 * d], z[:, 3 * d:]):  # i, f and o: (1 + tanh(z / 2)) / 2
            cols *= 0.5
            cols += 0.5
        c = cells[t]
        np.multiply(z[:, d:2 * d], c_prev, out=c)
        ig = zt[:, :d]
        np.multiply(z[:, :d], z[:, 2 * d:3 * d], out=ig)
        c += ig
        np.tanh(c, out=tanh_c[t])
        np.multiply(z[:, 3 * d:], tanh_c[t], out=hs[t + 1])
        c_prev = c
    return x_tm, gates, cells, tanh_c, hs


def _backward(grad_y: np.ndarray | None, grad_h: np.ndarray | None, grad_c: np.ndarray | None, c0: np.ndarray,
              w_h: np.ndarray, res: tuple[np.ndarray, ...]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(dz [seq, batch, 4 d], grad_h0, grad_c0)``."""
    _, gates, cells, tanh_c, _ = res
    seq, n, d4 = gates.shape
    d = d4 // 4
    dt = gates.dtype
    dz_all = np.empty_like(gates)
    dh = np.zeros((n, d), dt) if grad_h is None else np.array(grad_h, dt)
    dc = np.zeros((n, d), dt) if grad_c is None else np.array(grad_c, dt)
    buf = np.empty((n, d), dt)
    w_hT = w_h.T
    for t in range(seq - 1, -1, -1):
        if grad_y is not None:
            dh += grad_y[:, t]
        gt, tc, dz = gates[t], tanh_c[t], dz_all[t]
        i, f, g, o = gt[:, :d], gt[:, d:2 * d], gt[:, 2 * d:3 * d], gt[:, 3 * d:]
        di, df, dg, do = dz[:, :d], dz[:, d:2 * d], dz[:, 2 * d:3 * d], dz[:, 3 * d:]
        np.multiply(tc, tc, out=buf)  # dc += dh * o * (1 - tanh(c)^2)
        np.subtract(1.0, buf, out=buf)
        buf *= o
        buf *= dh
        dc += buf
        np.subtract(1.0, o, out=do)  # dz_o = dh tanh(c) o (1 - o)
        do *= o
        do *= tc
        do *= dh
        np.subtract(1.0, i, out=di)  # dz_i = dc g i (1 - i)
        di *= i
        di *= g
        di *= dc
        np.subtract(1.0, f, out=df)  # dz_f = dc c_{t-1} f (1 - f)
        df *= f
        df *= c0 if t == 0 else cells[t - 1]
        df *= dc
        np.multiply(g, g, out=dg)  # dz_g = dc i (1 - g^2)
        np.subtract(1.0, dg, out=dg)
        dg *= i
        dg *= dc
        np.matmul(dz, w_hT, out=dh)
        dc *= f
    return dz_all, dh, dc


class NumpyRnnOps(RnnOps):
    """``lstm`` and ``lstm_backward`` as dedicated numpy loops."""

    def lstm(self, x: Any, h0: Any, c0: Any, w_x: Any, w_h: Any, bias: Any | None,
             residual: bool) -> tuple[Any, Any, Any, Any]:
        if x.dtype not in _NATIVE:
            return super().lstm(x, h0, c0, w_x, w_h, bias, residual)
        res = _forward(x, h0, c0, w_x, w_h, bias)
        hs = res[4]
        y = np.ascontiguousarray(hs[1:].transpose(1, 0, 2))
        # h_n and c_n copied out: views would keep the whole-sequence buffers alive as long as the final states
        return y, hs[-1].copy(), res[2][-1].copy(), (res if residual else None)

    def lstm_backward(self, grad_y: Any | None, grad_h: Any | None, grad_c: Any | None, x: Any, h0: Any, c0: Any,
                      w_x: Any, w_h: Any, bias: Any | None, y: Any, residual: Any) -> tuple[Any, ...]:
        if x.dtype not in _NATIVE:
            return super().lstm_backward(grad_y, grad_h, grad_c, x, h0, c0, w_x, w_h, bias, y, residual)
        dz_all, gh0, gc0 = _backward(grad_y, grad_h, grad_c, c0, w_h, residual)
        x_tm, hs = residual[0], residual[4]
        n, seq, d_in = x.shape
        d = h0.shape[1]
        dz2 = dz_all.reshape(seq * n, 4 * d)
        gx = np.ascontiguousarray(np.matmul(dz2, w_x.T).reshape(seq, n, d_in).transpose(1, 0, 2))
        gw_x = np.matmul(x_tm.T, dz2)
        gw_h = np.matmul(hs[:-1].reshape(seq * n, d).T, dz2)
        gb = None if bias is None else dz2.sum(0)
        return gx, gh0, gc0, gw_x, gw_h, gb
