"""``GateController``: the two linear transforms of one recurrent gate (Burn's
``nn::rnn::GateController``), used by :class:`~ember.nn.Lstm` and :class:`~ember.nn.Gru`."""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np

from .._tensor_data import TensorData
from ..backend._device import Device
from ..module import Module
from ..tensor import Tensor
from ._initializer import Initializer
from ._linear import Linear, LinearConfig

__all__ = ["GateController", "fuse_gate_record", "gate_copy", "init_fused"]


class GateController(Module):
    """One gate: ``input_transform`` (``Linear [d_input, d_output]``) applied to the input and
    ``hidden_transform`` (``Linear [d_output, d_output]``) applied to the hidden state; the gate's
    pre-activation is their sum (Burn's layout: ``x @ W_x + b_x + h @ W_h + b_h``).
    """

    input_transform: Linear
    hidden_transform: Linear

    @staticmethod
    def new(d_input: int, d_output: int, bias: bool, initializer: Initializer, device: Device) -> GateController:
        """A gate with both transforms drawn from ``initializer`` (fans as for ``Linear``)."""
        return GateController(
            input_transform=LinearConfig(d_input, d_output, bias, initializer).init(device),  # type: ignore[arg-type]
            hidden_transform=LinearConfig(d_output, d_output, bias, initializer).init(device),  # type: ignore[arg-type]
        )

    def gate_product(self, x: Tensor, h: Tensor) -> Tensor:
        """``x @ W_x + b_x + h @ W_h + b_h`` for ``x`` ``[batch, d_input]``, ``h`` ``[batch, d_output]``."""
        return self.input_transform.forward(x) + self.hidden_transform.forward(h)


def init_fused(initializer: Initializer, d_in: int, d: int, n: int, bias: bool, device: Device) -> tuple[Any, ...]:
    """Fused gate parameters drawn as ``n`` per-gate ``Linear`` s would be (same shapes and fans, so the same
    distribution as Burn's per-gate layout): ``(W_x [d_in, n d], W_h [d, n d], b_x [n d] | None, b_h [n d] |
    None)`` as :class:`~ember.module.Param` s."""
    from ..module import Param

    def block(rows: int) -> Param:
        return Param(Tensor.cat([initializer.init_with([rows, d], rows, d, device) for _ in range(n)], 1))

    wx, wh = block(d_in), block(d)
    if not bias:
        return wx, wh, None, None
    bx = Param(Tensor.cat([initializer.init_with([d], d_in, d, device) for _ in range(n)], 0))
    bh = Param(Tensor.cat([initializer.init_with([d], d, d, device) for _ in range(n)], 0))
    return wx, wh, bx, bh


#: fused record key -> (per-gate ``GateController`` transform, ``Linear`` field)
_FUSED_KEYS = (
    ("weight_ih", "input_transform", "weight"),
    ("weight_hh", "hidden_transform", "weight"),
    ("bias_ih", "input_transform", "bias"),
    ("bias_hh", "hidden_transform", "bias"),
)


def _leaf_bits(leaf: Any) -> TensorData | None:
    """The tensor of a record leaf (``{"id", "param"}`` node, ``TensorData``, ``Tensor`` or ``ndarray``)."""
    if isinstance(leaf, dict):
        leaf = leaf.get("param")
    if isinstance(leaf, Tensor):
        return leaf.to_data()  # type: ignore[no-any-return]
    if isinstance(leaf, np.ndarray):
        return TensorData(leaf)
    return leaf if isinstance(leaf, TensorData) else None


def fuse_gate_record(node: dict[str, Any], gates: Sequence[str]) -> dict[str, Any]:
    """A per-gate recurrent record (Burn's layout and Ember's before 0.x: one ``GateController`` per gate, each
    ``input_transform`` / ``hidden_transform`` ``Linear`` with ``weight [d_in, d]``, ``bias [d]``) rewritten in
    the fused layout: ``weight_ih [d_in, n d]``, ``weight_hh [d, n d]``, ``bias_ih`` / ``bias_hh [n d]``, the
    gates' blocks side by side in the order ``gates``. Lossless (concatenation of the stored bits); the
    parameters get new ids.

    A record that is not in the per-gate layout, or one with a gate or weight missing, is returned unchanged:
    loading then reports the missing and unused keys as for any record that does not fit.
    """
    if not all(isinstance(node.get(g), dict) for g in gates) or any(k in node for k, _, _ in _FUSED_KEYS):
        return node
    out = {k: v for k, v in node.items() if k not in gates}
    for key, transform, param in _FUSED_KEYS:
        parts = []
        for g in gates:
            lin = node[g].get(transform)
            parts.append(_leaf_bits(lin.get(param)) if isinstance(lin, dict) else None)
        if all(p is None for p in parts) and param == "bias":
            continue  # a layer without biases
        if any(p is None for p in parts) or len({(p.dtype, p.shape[:-1]) for p in parts}) != 1:  # type: ignore[union-attr]
            return node
        bits = np.concatenate([p.as_bits() for p in parts], axis=-1)  # type: ignore[union-attr]
        out[key] = {"param": TensorData.from_bits(bits, parts[0].dtype)}  # type: ignore[union-attr]
    return out


def gate_copy(layer: Any, k: int, cls: str, name: str) -> GateController:
    """Block ``k`` of a fused recurrent layer's parameters as a ``GateController`` (new ``Param`` s: a read-only
    copy), with the ``DeprecationWarning`` of the per-gate attributes (``Lstm.input_gate``, ``Gru.reset_gate``
    ...) the fused layout replaced."""
    warnings.warn(
        f"{cls}.{name} is deprecated: the gates are stored fused (weight_ih / weight_hh / bias_ih / "
        f"bias_hh); this is a read-only copy of gate block {k}.",
        DeprecationWarning,
        stacklevel=3,
    )
    from ..module import Param

    d = layer.d_hidden

    def lin(w: Any, b: Any) -> Linear:
        return Linear(
            weight=Param(w.val().narrow(1, k * d, d)), bias=None if b is None else Param(b.val().narrow(0, k * d, d))
        )

    return GateController(
        input_transform=lin(layer.weight_ih, layer.bias_ih), hidden_transform=lin(layer.weight_hh, layer.bias_hh)
    )
