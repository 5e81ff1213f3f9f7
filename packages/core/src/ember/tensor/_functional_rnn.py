"""``lstm`` and ``lstm_stack``: the recurrent primitives as functions of tensors (re-exported by
:mod:`ember.tensor.functional`; used by :class:`~ember.nn.Lstm`, :class:`~ember.nn.BiLstm` and
:class:`~ember.nn.StackedLstm`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from .._errors import DeviceError, KindError, ShapeError
from .._kind import Float
from ._core import wrap

if TYPE_CHECKING:
    from ._tensor import Tensor

__all__ = ["lstm", "lstm_stack"]


def lstm(x: Tensor, h0: Tensor, c0: Tensor, w_x: Tensor, w_h: Tensor,
         bias: Tensor | None = None) -> tuple[Tensor, Tensor, Tensor]:
    """A single-layer, single-direction LSTM over a batch-first sequence: PyTorch's ``nn.LSTM`` formulas and gate
    order ``i, f, g, o`` (Hochreiter & Schmidhuber 1997; Burn's ``Lstm`` computes the same), with Ember's
    ``x @ W`` weight layout. For ``t = 0 .. seq_length - 1``, with ``z_t = x_t w_x + h_{t-1} w_h + bias`` split
    into four ``[batch, d]`` blocks::

        i = sigmoid(z_i),  f = sigmoid(z_f),  g = tanh(z_g),  o = sigmoid(z_o)
        c_t = f * c_{t-1} + i * g,  h_t = o * tanh(c_t)

    One primitive call (one ``Autodiff`` node) for the whole sequence; see :mod:`ember.backend._ops_rnn` for the
    backward.

    Args:
        x: Float ``[batch, seq_length, d_input]``, ``seq_length >= 1``.
        h0: the initial hidden state ``[batch, d]``.
        c0: the initial cell state ``[batch, d]``.
        w_x: ``[d_input, 4 d]``, the input weights of the gates ``i, f, g, o`` side by side (PyTorch's
            ``weight_ih_l0.T``).
        w_h: ``[d, 4 d]``, the hidden weights likewise (``weight_hh_l0.T``).
        bias: ``[4 d]`` or ``None`` (PyTorch's ``bias_ih_l0 + bias_hh_l0``).

    Returns:
        ``(y [batch, seq_length, d], h_n [batch, d], c_n [batch, d])``, all differentiable; ``y`` holds every
        ``h_t`` (so ``h_n`` is its last step), in ``x``'s dtype.

    Raises:
        KindError: a non-Float argument. DeviceError: arguments on different devices.
        ShapeError: ``x`` not of rank 3 or with ``seq_length`` 0, or another argument not of the shape above.
    """
    op = "lstm"
    n, _, d_in = _check_x(op, x)
    d = w_h.shape[0] if w_h.rank == 2 else -1
    want: dict[str, tuple[int, ...]] = {"h0": (n, d), "c0": (n, d), "w_x": (d_in, 4 * d), "w_h": (d, 4 * d)}
    params = {"h0": h0, "c0": c0, "w_x": w_x, "w_h": w_h}
    if bias is not None:
        want["bias"] = (4 * d,)
        params["bias"] = bias
    _check(op, x, params, want, "w_h.shape[0]", d)
    y, h, c, _ = x.ops.lstm(x.primitive, h0.primitive, c0.primitive, w_x.primitive, w_h.primitive,
                            None if bias is None else bias.primitive, False)
    return wrap(y, x, Float), wrap(h, x, Float), wrap(c, x, Float)


def lstm_stack(x: Tensor, h0: Tensor, c0: Tensor,
               weights: Sequence[tuple[Tensor, Tensor, Tensor | None]]) -> tuple[Tensor, Tensor, Tensor]:
    """``num_layers = len(weights)`` stacked single-direction LSTM layers over a batch-first sequence, PyTorch's
    ``nn.LSTM(num_layers=n, batch_first=True)`` without dropout between layers: layer ``k`` is :func:`lstm` over
    layer ``k - 1``'s output (layer 0 over ``x``), from the initial states ``h0[k]``, ``c0[k]``.

    One primitive call (one ``Autodiff`` node) for the whole stack; a backend may run it as one kernel (torch: one
    ``torch._VF.lstm`` call, which cuDNN overlaps across layers), the others chain their single-layer kernel.

    Args:
        x: Float ``[batch, seq_length, d_input]``, ``seq_length >= 1``.
        h0: the initial hidden states ``[num_layers, batch, d]`` (PyTorch's ``h_0`` layout).
        c0: the initial cell states ``[num_layers, batch, d]``.
        weights: one ``(w_x, w_h, bias)`` per layer (at least one), in Ember's layout as for :func:`lstm`:
            ``w_x [d_input, 4 d]`` for layer 0 and ``[d, 4 d]`` above (PyTorch's ``weight_ih_l{k}.T``),
            ``w_h [d, 4 d]`` (``weight_hh_l{k}.T``), ``bias [4 d]`` (``bias_ih_l{k} + bias_hh_l{k}``), given
            for every layer or for none.

    Returns:
        ``(y [batch, seq_length, d], h_n [num_layers, batch, d], c_n [num_layers, batch, d])``, all
        differentiable: the last layer's every ``h_t`` and every layer's final states, in ``x``'s dtype.

    Raises:
        KindError: a non-Float argument.
        DeviceError: arguments on different devices.
        ShapeError: ``x`` not of rank 3 or with ``seq_length`` 0, no layer, a bias given for some layers only, or
            another argument not of the shape above.
    """
    op = "lstm_stack"
    n, _, d_in = _check_x(op, x)
    if not weights or any(len(w) != 3 for w in weights):
        raise ShapeError(f"{op}: expected weights as a non-empty list of (w_x, w_h, bias) triples, one per layer, "
                         f"got {len(weights)} entries of lengths {[len(w) for w in weights]}.")
    layers = [(w[0], w[1], w[2]) for w in weights]
    if len({w[2] is None for w in layers}) > 1:
        raise ShapeError(f"{op}: give a bias for every layer or for none (PyTorch's nn.LSTM bias=True/False), got "
                         f"biases for layers {[k for k, w in enumerate(layers) if w[2] is not None]} of "
                         f"{len(layers)}.")
    w_h0 = layers[0][1]
    d = w_h0.shape[0] if w_h0.rank == 2 else -1
    num = len(layers)
    want: dict[str, tuple[int, ...]] = {"h0": (num, n, d), "c0": (num, n, d)}
    params: dict[str, Tensor] = {"h0": h0, "c0": c0}
    for k, (w_x, w_h, bias) in enumerate(layers):
        want[f"w_x of layer {k}"] = (d_in if k == 0 else d, 4 * d)
        want[f"w_h of layer {k}"] = (d, 4 * d)
        params[f"w_x of layer {k}"], params[f"w_h of layer {k}"] = w_x, w_h
        if bias is not None:
            want[f"bias of layer {k}"] = (4 * d,)
            params[f"bias of layer {k}"] = bias
    _check(op, x, params, want, "the first layer's w_h.shape[0]", d)
    y, h, c, _ = x.ops.lstm_stack(
        x.primitive, h0.primitive, c0.primitive,
        [(w_x.primitive, w_h.primitive, None if b is None else b.primitive) for w_x, w_h, b in layers], False)
    return wrap(y, x, Float), wrap(h, x, Float), wrap(c, x, Float)


def _check_x(op: str, x: Tensor) -> tuple[int, int, int]:
    if x.rank != 3 or x.shape[1] < 1:
        raise ShapeError(f"{op}: expected x of shape [batch, seq_length >= 1, d_input], got {list(x.shape)}.")
    n, seq, d_in = x.shape
    return n, seq, d_in


def _check(op: str, x: Tensor, params: dict[str, Tensor], want: dict[str, tuple[int, ...]], d_from: str,
           d: int) -> None:
    """Kinds, devices and shapes of ``x`` and ``params`` (``want``: name -> shape)."""
    for name, t in (("x", x), *params.items()):
        if t.kind is not Float:
            raise KindError(f"{op}: {name} must be a Float tensor, got {t.kind}; convert it with .float() first.")
        if t.device is not x.device:
            raise DeviceError(f"{op}: {name} lives on {t.device}, x on {x.device}; move it with .to_device().")
    for name, t in params.items():
        if t.shape != want[name]:
            raise ShapeError(f"{op}: {name} must have shape {list(want[name])} (x [batch, seq_length, d_input] = "
                             f"{list(x.shape)}, d = {d_from} = {d}), got {list(t.shape)}.")
