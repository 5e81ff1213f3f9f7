"""Recurrent primitives (issue 22): a whole single-layer, single-direction LSTM over a sequence, forward and
backward, so that a backend runs the time loop as one kernel (torch: ``torch._VF.lstm``, the kernel ``nn.LSTM``
runs; numpy: preallocated buffers and one gemm per step; jax: ``lax.scan``) and ``Autodiff`` records one node per
layer call instead of a dozen per step.

Formulas and gate order are PyTorch's ``nn.LSTM`` (Hochreiter & Schmidhuber 1997; Burn's ``Lstm`` computes the
same), with Ember's ``x @ W`` weight layout: ``w_x [d_input, 4 d]``, ``w_h [d, 4 d]`` and ``bias [4 d]`` hold the
gates side by side in the order ``i, f, g, o`` (PyTorch's ``weight_ih_l0`` is ``w_x.T``, ``bias`` is
``bias_ih_l0 + bias_hh_l0``). For ``t = 0 .. seq_length - 1``::

    z_t = x_t w_x + h_{t-1} w_h + bias,  split into z_i, z_f, z_g, z_o ([batch, d] each)
    i = sigmoid(z_i),  f = sigmoid(z_f),  g = tanh(z_g),  o = sigmoid(z_o)
    c_t = f * c_{t-1} + i * g,  h_t = o * tanh(c_t)

and backward through time (``dh``/``dc`` flowing from step ``t`` to ``t - 1``, starting from ``grad_h``,
``grad_c``)::

    dh_t = grad_y_t + dh,  dc_t = dc + dh_t * o * (1 - tanh(c_t)^2)
    dz_i = dc_t g i (1 - i),  dz_f = dc_t c_{t-1} f (1 - f),  dz_g = dc_t i (1 - g^2),  dz_o = dh_t tanh(c_t) o (1 - o)
    dh = dz_t w_h^T,  dc = dc_t f
    grad_x = dz w_x^T,  grad_w_x = sum_t x_t^T dz_t,  grad_w_h = sum_t h_{t-1}^T dz_t,  grad_bias = sum dz

The defaults are composites of the shape, matmul and activation primitives; their residual is ``(gates,
cells)``: the activated gates ``[batch, seq_length, 4 d]`` (``i, f, g, o``) and the cell states ``c_t``
``[batch, seq_length, d]``. A backend's own kernels may use any residual (an opaque object that only its
:meth:`RnnOps.lstm_backward` reads).

``lstm_stack`` runs ``num_layers`` such layers stacked, as PyTorch's ``nn.LSTM(num_layers=n)`` (no dropout between
layers): layer ``k`` reads layer ``k - 1``'s ``y``, starts from ``h0[k]``, ``c0[k]`` (``[num_layers, batch, d]``,
PyTorch's layout) and the final states are stacked likewise. Its default chains :meth:`RnnOps.lstm` (and
:meth:`RnnOps.lstm_backward`, in reverse layer order) with a residual ``(ys, residuals)``: each layer's output and
residual. A backend may instead run the whole stack as one kernel (torch: one ``torch._VF.lstm`` call over all
layers, which cuDNN runs as a wavefront across layers).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

__all__ = ["RnnOps", "lstm_gate_grads"]


def _steps(t: int, n: int) -> tuple[slice, slice, slice]:
    return (slice(0, n, 1), slice(t, t + 1, 1), slice(None, None, 1))


def _at(B: Any, a: Any, t: int) -> Any:
    """Step ``t`` of a batch-first ``[batch, seq_length, k]`` primitive, as ``[batch, k]``."""
    n, _, k = B.shape(a)
    return B.reshape(B.slice(a, _steps(t, n)), (n, k))


def _cols(B: Any, a: Any, k: int, d: int) -> Any:
    """Columns ``[k d, (k + 1) d)`` of a ``[batch, 4 d]`` primitive: gate ``k``."""
    n = B.shape(a)[0]
    return B.slice(a, (slice(0, n, 1), slice(k * d, (k + 1) * d, 1)))


def _layer(B: Any, a: Any, k: int) -> Any:
    """Layer ``k`` of a ``[num_layers, batch, d]`` primitive, as ``[batch, d]``."""
    _, n, d = B.shape(a)
    return B.reshape(B.slice(a, (slice(k, k + 1, 1), slice(0, n, 1), slice(0, d, 1))), (n, d))


def lstm_gate_grads(B: Any, dh: Any, dc: Any, gates: Any, c_prev: Any, c: Any, d: int) -> tuple[Any, Any]:
    """One step of the backward through time, written with backend primitives: ``(dz [batch, 4 d], dc_t)`` from
    ``dh = dh_t`` and ``dc`` (the cell gradient from the later step), the step's activated ``gates [batch, 4 d]``,
    ``c_{t-1}`` and ``c_t`` (see the module docstring)."""
    i, f, g, o = (_cols(B, gates, k, d) for k in range(4))
    tc = B.tanh(c)
    dc = B.add(dc, B.tanh_backward(B.mul(dh, o), tc))
    dz = [B.sigmoid_backward(B.mul(dc, g), i), B.sigmoid_backward(B.mul(dc, c_prev), f),
          B.tanh_backward(B.mul(dc, i), g), B.sigmoid_backward(B.mul(dh, tc), o)]
    return B.cat(dz, 1), dc


class RnnOps:
    """Recurrent primitives; see the module docstring for the formulas.

    The defaults call primitives of the other op groups through ``B = self`` typed ``Any`` (the mixin only ever
    runs as part of a :class:`~ember.backend.Backend`).
    """

    def lstm(self, x: Any, h0: Any, c0: Any, w_x: Any, w_h: Any, bias: Any | None,
             residual: bool) -> tuple[Any, Any, Any, Any]:
        """A single-layer, single-direction LSTM over a batch-first sequence (PyTorch's ``nn.LSTM`` formulas).

        Args:
            x: ``[batch, seq_length, d_input]`` (``seq_length >= 1``). h0, c0: ``[batch, d]``.
            w_x: ``[d_input, 4 d]``; w_h: ``[d, 4 d]``; bias: ``[4 d]`` or ``None``; gates in the order ``i, f, g, o``.
            residual: whether to return what :meth:`lstm_backward` needs (``False``: ``None`` in its place).

        Returns:
            ``(y [batch, seq_length, d], h_n [batch, d], c_n [batch, d], residual)``: ``y`` holds every ``h_t``;
            the residual is opaque (the composite's is ``(gates, cells)``, see the module docstring).
        """
        B: Any = self
        n, seq, d_in = B.shape(x)
        d = B.shape(w_h)[0]
        xw = B.matmul(B.reshape(x, (n * seq, d_in)), w_x)
        if bias is not None:
            xw = B.add(xw, bias)
        xw = B.reshape(xw, (n, seq, 4 * d))
        h, c = h0, c0
        hs, cs, gs = [], [], []
        for t in range(seq):
            z = B.add(_at(B, xw, t), B.matmul(h, w_h))
            i, f, g, o = (_cols(B, z, k, d) for k in range(4))
            i, f, g, o = B.sigmoid(i), B.sigmoid(f), B.tanh(g), B.sigmoid(o)
            c = B.add(B.mul(f, c), B.mul(i, g))
            h = B.mul(o, B.tanh(c))
            hs.append(h)
            if residual:
                cs.append(c)
                gs.append(B.cat([i, f, g, o], 1))
        res = (B.stack(gs, 1), B.stack(cs, 1)) if residual else None
        return B.stack(hs, 1), h, c, res

    def lstm_backward(self, grad_y: Any | None, grad_h: Any | None, grad_c: Any | None, x: Any, h0: Any, c0: Any,
                      w_x: Any, w_h: Any, bias: Any | None, y: Any, residual: Any) -> tuple[Any, ...]:
        """Gradients of :meth:`lstm`'s outputs with respect to its inputs (backpropagation through time).

        Args:
            grad_y: the gradient of ``y`` ``[batch, seq_length, d]``; grad_h, grad_c: those of ``h_n``, ``c_n``
                ``[batch, d]``; each may be ``None`` (zero), not all three.
            x: the forward's argument, as are h0, c0, w_x, w_h and bias. y: its output. residual: what it
                returned with ``residual=True``.

        Returns:
            ``(grad_x, grad_h0, grad_c0, grad_w_x, grad_w_h, grad_bias)`` shaped like the arguments
            (``grad_bias`` is ``None`` when ``bias`` is).
        """
        B: Any = self
        gates, cells = residual
        n, seq, d_in = B.shape(x)
        d = B.shape(w_h)[0]
        w_hT = B.permute(w_h, (1, 0))
        like = h0 if grad_y is None else grad_y
        zero = B.zeros((n, d), B.dtype(like), B.device_handle(like))
        dh = zero if grad_h is None else grad_h
        dc = zero if grad_c is None else grad_c
        dzs: list[Any] = [None] * seq
        for t in range(seq - 1, -1, -1):
            if grad_y is not None:
                dh = B.add(dh, _at(B, grad_y, t))
            gt = _at(B, gates, t)
            dz, dc_t = lstm_gate_grads(B, dh, dc, gt, c0 if t == 0 else _at(B, cells, t - 1), _at(B, cells, t), d)
            dzs[t] = dz
            dh = B.matmul(dz, w_hT)
            dc = B.mul(dc_t, _cols(B, gt, 1, d))
        dz_all = B.reshape(B.stack(dzs, 1), (n * seq, 4 * d))
        h_prev = B.cat([B.reshape(h0, (n, 1, d)), B.slice(y, (slice(0, n, 1), slice(0, seq - 1, 1),
                                                                slice(0, d, 1)))], 1)
        x2 = B.reshape(x, (n * seq, d_in))
        gx = B.reshape(B.matmul(dz_all, B.permute(w_x, (1, 0))), (n, seq, d_in))
        gw_x = B.matmul(B.permute(x2, (1, 0)), dz_all)
        gw_h = B.matmul(B.permute(B.reshape(h_prev, (n * seq, d)), (1, 0)), dz_all)
        gb = None if bias is None else B.sum_dim(dz_all, 0)
        if gb is not None:
            gb = B.reshape(gb, (4 * d,))
        return gx, dh, dc, gw_x, gw_h, gb

    def lstm_stack(self, x: Any, h0: Any, c0: Any, weights: Sequence[tuple[Any, Any, Any | None]],
                   residual: bool) -> tuple[Any, Any, Any, Any]:
        """``num_layers = len(weights)`` stacked single-direction LSTM layers over a batch-first sequence
        (PyTorch's ``nn.LSTM(num_layers=n)`` without dropout): layer ``k`` runs :meth:`lstm` on layer ``k - 1``'s
        ``y`` (layer 0 on ``x``).

        Args:
            x: ``[batch, seq_length, d_input]`` (``seq_length >= 1``). h0, c0: ``[num_layers, batch, d]``.
            weights: per layer ``(w_x, w_h, bias)`` as for :meth:`lstm`: ``w_x`` ``[d_input, 4 d]`` for layer 0,
                ``[d, 4 d]`` above; ``w_h [d, 4 d]``; ``bias [4 d]`` or ``None``.
            residual: whether to return what :meth:`lstm_stack_backward` needs (``False``: ``None`` in its place).

        Returns:
            ``(y [batch, seq_length, d], h_n [num_layers, batch, d], c_n [num_layers, batch, d], residual)``:
            ``y`` is the last layer's output; the residual is opaque (the default's is ``(ys, residuals)``, each
            layer's output and :meth:`lstm` residual).
        """
        B: Any = self
        y, hs, cs, ys, res = x, [], [], [], []
        for k, (w_x, w_h, bias) in enumerate(weights):
            y, h, c, r = B.lstm(y, _layer(B, h0, k), _layer(B, c0, k), w_x, w_h, bias, residual)
            hs.append(h)
            cs.append(c)
            ys.append(y)
            res.append(r)
        return y, B.stack(hs, 0), B.stack(cs, 0), ((ys, res) if residual else None)

    def lstm_stack_backward(self, grad_y: Any | None, grad_h: Any | None, grad_c: Any | None, x: Any, h0: Any,
                            c0: Any, weights: Sequence[tuple[Any, Any, Any | None]], y: Any,
                            residual: Any) -> tuple[Any, Any, Any, list[tuple[Any, Any, Any | None]]]:
        """Gradients of :meth:`lstm_stack`'s outputs with respect to its inputs (backpropagation through time, the
        layers in reverse order: layer ``k``'s ``grad_x`` is layer ``k - 1``'s ``grad_y``).

        Args:
            grad_y: the gradient of ``y`` ``[batch, seq_length, d]``, or ``None`` (zero; not all three).
            grad_h: the gradient of ``h_n`` ``[num_layers, batch, d]``, or ``None``.
            grad_c: the gradient of ``c_n`` ``[num_layers, batch, d]``, or ``None``.
            x: the forward's input.
            h0: the forward's initial hidden states.
            c0: the forward's initial cell states.
            weights: the forward's per-layer ``(w_x, w_h, bias)``.
            y: the forward's output.
            residual: what the forward returned with ``residual=True``.

        Returns:
            ``(grad_x, grad_h0, grad_c0, grad_weights)``: the first three shaped like their arguments,
            ``grad_weights`` a list with one ``(grad_w_x, grad_w_h, grad_bias)`` per layer (``grad_bias`` is
            ``None`` where the layer's ``bias`` is).
        """
        B: Any = self
        ys, res = residual
        g = grad_y
        ghs: list[Any] = [None] * len(weights)
        gcs: list[Any] = [None] * len(weights)
        gws: list[Any] = [None] * len(weights)
        for k in range(len(weights) - 1, -1, -1):
            w_x, w_h, bias = weights[k]
            gh = None if grad_h is None else _layer(B, grad_h, k)
            gc = None if grad_c is None else _layer(B, grad_c, k)
            g, ghs[k], gcs[k], gwx, gwh, gb = B.lstm_backward(
                g, gh, gc, x if k == 0 else ys[k - 1], _layer(B, h0, k), _layer(B, c0, k), w_x, w_h, bias, ys[k],
                res[k])
            gws[k] = (gwx, gwh, gb)
        return g, B.stack(ghs, 0), B.stack(gcs, 0), gws
