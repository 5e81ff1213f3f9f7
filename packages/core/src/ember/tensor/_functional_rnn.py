"""``lstm``: the recurrent primitive as a function of tensors (re-exported by :mod:`ember.tensor.functional`; used by
:class:`~ember.nn.Lstm` and :class:`~ember.nn.BiLstm`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._errors import DeviceError, KindError, ShapeError
from .._kind import Float
from ._core import wrap

if TYPE_CHECKING:
    from ._tensor import Tensor

__all__ = ["lstm"]


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
    if x.rank != 3 or x.shape[1] < 1:
        raise ShapeError(f"{op}: expected x of shape [batch, seq_length >= 1, d_input], got {list(x.shape)}.")
    n, _, d_in = x.shape
    d = w_h.shape[0] if w_h.rank == 2 else -1
    want: dict[str, tuple[int, ...]] = {"h0": (n, d), "c0": (n, d), "w_x": (d_in, 4 * d), "w_h": (d, 4 * d)}
    params = {"h0": h0, "c0": c0, "w_x": w_x, "w_h": w_h}
    if bias is not None:
        want["bias"] = (4 * d,)
        params["bias"] = bias
    for name, t in (("x", x), *params.items()):
        if t.kind is not Float:
            raise KindError(f"{op}: {name} must be a Float tensor, got {t.kind}; convert it with .float() first.")
        if t.device is not x.device:
            raise DeviceError(f"{op}: {name} lives on {t.device}, x on {x.device}; move it with .to_device().")
    for name, t in params.items():
        if t.shape != want[name]:
            raise ShapeError(f"{op}: {name} must have shape {list(want[name])} (x [batch, seq_length, d_input] = "
                             f"{list(x.shape)}, d = w_h.shape[0] = {d}), got {list(t.shape)}.")
    y, h, c, _ = x.ops.lstm(x.primitive, h0.primitive, c0.primitive, w_x.primitive, w_h.primitive,
                            None if bias is None else bias.primitive, False)
    return wrap(y, x, Float), wrap(h, x, Float), wrap(c, x, Float)
