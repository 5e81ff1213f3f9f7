"""Per-layer conversions between PyTorch's parameter layout and Ember's (Burn's ``PyTorchToBurnAdapter``).

Each :class:`LayerRule` serves one Ember layer class and the PyTorch module it mirrors. ``to_ember`` takes the
PyTorch-convention tensors under the layer's dotted prefix out of a flat ``{key: TensorData}`` dict and writes
them, in Ember's names and layout, to another; ``to_torch`` does the reverse for export. Layers whose layout is
already PyTorch's (``Conv1d/2d/3d`` ``[channels_out, channels_in / groups, *kernel]``, ``ConvTranspose*``
``[channels_in, channels_out / groups, *kernel]``, ``Embedding`` ``[n_embedding, d_model]``) need no rule.

===========================  ===========================  =======================================================
Ember layer                  PyTorch module               conversion
===========================  ===========================  =======================================================
``Linear``                   ``nn.Linear``                ``weight [d_output, d_input]`` transposed
``BatchNorm``                ``nn.BatchNorm1d/2d/3d``     ``weight``/``bias`` -> ``gamma``/``beta``;
                                                          ``running_mean``/``running_var`` kept;
                                                          ``num_batches_tracked`` dropped (export: 0)
``LayerNorm``, ``GroupNorm``, ``nn.LayerNorm``, ``nn.GroupNorm``, ``weight``/``bias`` -> ``gamma``/``beta``
``InstanceNorm``, ``RmsNorm`` ``nn.InstanceNorm*d``, ``nn.RMSNorm``
``PRelu``                    ``nn.PReLU``                 ``weight`` -> ``alpha``
``Lstm``                     ``nn.LSTM`` (one layer)      ``weight_ih_l0 [4 d, d_input]`` / ``weight_hh_l0``
                                                          -> ``weight_ih`` / ``weight_hh`` (transposed; same
                                                          gate order ``i, f, g, o``); ``bias_ih_l0`` /
                                                          ``bias_hh_l0`` -> ``bias_ih`` / ``bias_hh``
``BiLstm``                   ``nn.LSTM(bidirectional)``   ``*_l0`` -> ``forward_lstm``, ``*_l0_reverse`` ->
                                                          ``reverse_lstm``
``StackedLstm``              ``nn.LSTM(num_layers=n)``    ``*_l{k}`` -> ``layers.{k}``, each as ``Lstm``
``Gru``                      ``nn.GRU`` (one layer)       as ``Lstm`` (gate order ``r, z, n`` on both sides)
``MultiHeadAttention``       ``nn.MultiheadAttention``    ``in_proj_weight [3 d, d]`` rows ``q, k, v`` ->
                                                          ``query``/``key``/``value`` (transposed; or
                                                          ``q/k/v_proj_weight``), ``out_proj`` -> ``output``
===========================  ===========================  =======================================================

Sources: PyTorch's ``torch/nn/modules`` (``linear.py``, ``batchnorm.py``, ``rnn.py``, ``activation.py``) for the
PyTorch layouts; Burn's ``burn-import`` ``adapter.rs`` and the Ember layers' docstrings for Ember's.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

import ember.nn as enn
from ember import TensorData

from ._errors import ModelImportError

__all__ = ["LayerRule", "RULES", "rule_for", "transpose", "split_rows", "cat_rows"]

Flat = dict[str, TensorData]
Emit = Callable[[str, TensorData], None]


def _join(prefix: str, key: str) -> str:
    return f"{prefix}.{key}" if prefix else key


def transpose(t: TensorData) -> TensorData:
    """A 2-D tensor transposed (on its bits: lossless for every dtype, bfloat16 included)."""
    if len(t.shape) != 2:
        raise ModelImportError(f"expected a 2-D weight to transpose, found shape {list(t.shape)}.")
    return TensorData.from_bits(np.ascontiguousarray(t.as_bits().T), t.dtype)


def split_rows(t: TensorData, n: int, what: str) -> list[TensorData]:
    """``t`` cut into ``n`` equal blocks along dim 0 (PyTorch's packed gates / projections)."""
    if not t.shape or t.shape[0] % n:
        raise ModelImportError(
            f"{what}: expected a tensor whose first dim is a multiple of {n} (packed gates or projections), "
            f"found shape {list(t.shape)}."
        )
    return [TensorData.from_bits(np.ascontiguousarray(a), t.dtype) for a in np.split(t.as_bits(), n, axis=0)]


def cat_rows(parts: list[TensorData]) -> TensorData:
    """The inverse of :func:`split_rows`."""
    return TensorData.from_bits(np.concatenate([p.as_bits() for p in parts], axis=0), parts[0].dtype)


def _data(param: Any) -> TensorData:
    return param.val().to_data()  # type: ignore[no-any-return]


class LayerRule:
    """The conversion for one Ember layer class (see the module docstring's table).

    Subclasses implement ``to_ember(module, prefix, src, out)`` (pop the PyTorch-convention tensors of
    ``module`` at ``prefix`` from ``src`` and put Ember's in ``out``; keys it does not know stay in ``src``)
    and ``to_torch(module, prefix, emit)`` (emit every tensor of the layer in PyTorch's convention).
    """

    torch_module: str = ""

    def to_ember(self, module: Any, prefix: str, src: Flat, out: Flat) -> None:
        raise NotImplementedError

    def to_torch(self, module: Any, prefix: str, emit: Emit) -> None:
        raise NotImplementedError


class LinearRule(LayerRule):
    """``nn.Linear``: ``weight [d_output, d_input]`` <-> Ember's ``[d_input, d_output]``; ``bias`` as is."""

    torch_module = "torch.nn.Linear"

    def to_ember(self, module: Any, prefix: str, src: Flat, out: Flat) -> None:
        k = _join(prefix, "weight")
        if k in src and len(src[k].shape) == 2:
            out[k] = transpose(src.pop(k))
        b = _join(prefix, "bias")
        if b in src:
            out[b] = src.pop(b)

    def to_torch(self, module: Any, prefix: str, emit: Emit) -> None:
        emit(_join(prefix, "weight"), transpose(_data(module.weight)))
        if module.bias is not None:
            emit(_join(prefix, "bias"), _data(module.bias))


class NormRule(LayerRule):
    """Norm layers: PyTorch's ``weight``/``bias`` are Ember's (Burn's) ``gamma``/``beta``.

    ``BatchNorm`` also has ``running_mean``/``running_var`` (same names and meaning; note PyTorch stores the
    unbiased batch variance in ``running_var`` while training, Ember/Burn the biased one: imported values are
    used as they are) and PyTorch's ``num_batches_tracked`` counter, which Ember has no field for: dropped on
    import, written as 0 on export.
    """

    def __init__(self, torch_module: str, batch: bool = False, beta: bool = True) -> None:
        self.torch_module = torch_module
        self.batch = batch
        self.beta = beta

    def to_ember(self, module: Any, prefix: str, src: Flat, out: Flat) -> None:
        names = [("weight", "gamma")] + ([("bias", "beta")] if self.beta else [])
        for theirs, ours in names:
            k = _join(prefix, theirs)
            if k in src and _join(prefix, ours) not in src:
                out[_join(prefix, ours)] = src.pop(k)
        if self.batch:
            src.pop(_join(prefix, "num_batches_tracked"), None)
            for name in ("running_mean", "running_var"):
                k = _join(prefix, name)
                if k in src:
                    out[k] = src.pop(k)

    def to_torch(self, module: Any, prefix: str, emit: Emit) -> None:
        if getattr(module, "gamma", None) is not None:
            emit(_join(prefix, "weight"), _data(module.gamma))
        if self.beta and getattr(module, "beta", None) is not None:
            emit(_join(prefix, "bias"), _data(module.beta))
        if self.batch:
            emit(_join(prefix, "running_mean"), module.running_mean.value().to_data())
            emit(_join(prefix, "running_var"), module.running_var.value().to_data())
            emit(_join(prefix, "num_batches_tracked"), TensorData(np.array(0, dtype=np.int64)))


class PReluRule(LayerRule):
    """``nn.PReLU``: ``weight [num_parameters]`` <-> Ember's ``alpha``."""

    torch_module = "torch.nn.PReLU"

    def to_ember(self, module: Any, prefix: str, src: Flat, out: Flat) -> None:
        k = _join(prefix, "weight")
        if k in src:
            out[_join(prefix, "alpha")] = src.pop(k)

    def to_torch(self, module: Any, prefix: str, emit: Emit) -> None:
        emit(_join(prefix, "weight"), _data(module.alpha))


class FusedRecurrentRule(LayerRule):
    """``nn.LSTM`` / ``nn.GRU`` (one layer, one direction) <-> Ember's fused ``Lstm`` / ``Gru``: the same gate
    order on both sides (LSTM ``i, f, g, o``, GRU ``r, z, n``), so ``weight_ih_l0 [n d_hidden, d_input]`` /
    ``weight_hh_l0 [n d_hidden, d_hidden]`` are Ember's ``weight_ih`` / ``weight_hh`` transposed, and
    ``bias_ih_l0`` / ``bias_hh_l0`` are ``bias_ih`` / ``bias_hh`` as they are."""

    def __init__(self, torch_module: str) -> None:
        self.torch_module = torch_module

    def to_ember(self, module: Any, prefix: str, src: Flat, out: Flat, suffix: str = "_l0") -> None:
        for name in ("weight_ih", "weight_hh", "bias_ih", "bias_hh"):
            k = _join(prefix, name + suffix)
            if k in src:
                t = src.pop(k)
                out[_join(prefix, name)] = transpose(t) if name.startswith("weight") else t

    def to_torch(self, module: Any, prefix: str, emit: Emit, suffix: str = "_l0") -> None:
        for name in ("weight_ih", "weight_hh", "bias_ih", "bias_hh"):
            p = getattr(module, name)
            if p is not None:
                emit(_join(prefix, name + suffix), transpose(_data(p)) if name.startswith("weight") else _data(p))


_LSTM = FusedRecurrentRule("torch.nn.LSTM")
_GRU = FusedRecurrentRule("torch.nn.GRU")


class BiLstmRule(LayerRule):
    """``nn.LSTM(bidirectional=True)`` (one layer): ``*_l0`` -> ``forward_lstm``, ``*_l0_reverse`` ->
    ``reverse_lstm``, each as :class:`RecurrentRule`."""

    torch_module = "torch.nn.LSTM(bidirectional=True)"

    def to_ember(self, module: Any, prefix: str, src: Flat, out: Flat) -> None:
        for suffix, sub in (("_l0", "forward_lstm"), ("_l0_reverse", "reverse_lstm")):
            part: Flat = {}
            _LSTM.to_ember(module, prefix, src, part, suffix)
            sub_prefix = _join(prefix, sub)
            for k, v in part.items():
                out[sub_prefix + k[len(prefix):] if prefix else f"{sub}.{k}"] = v

    def to_torch(self, module: Any, prefix: str, emit: Emit) -> None:
        _LSTM.to_torch(module.forward_lstm, prefix, emit, "_l0")
        _LSTM.to_torch(module.reverse_lstm, prefix, emit, "_l0_reverse")


class StackedLstmRule(LayerRule):
    """``nn.LSTM(num_layers=n)`` (one direction): ``weight_ih_l{k}`` ... -> ``layers.{k}.weight_ih`` ..., each layer
    as :class:`FusedRecurrentRule`. (A list of ``Lstm`` takes the same keys through ``_adapt._unstack``.)"""

    torch_module = "torch.nn.LSTM(num_layers=n)"

    def to_ember(self, module: Any, prefix: str, src: Flat, out: Flat) -> None:
        for k, layer in enumerate(module.layers):
            part: Flat = {}
            _LSTM.to_ember(layer, prefix, src, part, f"_l{k}")
            sub = _join(prefix, f"layers.{k}")
            for key, v in part.items():
                out[_join(sub, key[len(prefix) + 1:] if prefix else key)] = v

    def to_torch(self, module: Any, prefix: str, emit: Emit) -> None:
        for k, layer in enumerate(module.layers):
            _LSTM.to_torch(layer, prefix, emit, f"_l{k}")


class MhaRule(LayerRule):
    """``nn.MultiheadAttention``: ``in_proj_weight [3 d, d]`` (rows ``q, k, v``) and ``in_proj_bias [3 d]`` ->
    ``query``/``key``/``value`` ``Linear`` (weights transposed); ``q_proj_weight``/``k_proj_weight``/
    ``v_proj_weight`` (PyTorch's layout when ``kdim``/``vdim`` differ) likewise; ``out_proj`` -> ``output``.
    Export writes the packed ``in_proj_weight`` form (PyTorch's default, ``kdim == vdim == embed_dim``)."""

    torch_module = "torch.nn.MultiheadAttention"

    def to_ember(self, module: Any, prefix: str, src: Flat, out: Flat) -> None:
        names = ("query", "key", "value")
        k = _join(prefix, "in_proj_weight")
        if k in src:
            for name, part in zip(names, split_rows(src.pop(k), 3, f"{self.torch_module} {k!r}")):
                out[_join(prefix, f"{name}.weight")] = transpose(part)
        for name, short in zip(names, "qkv"):
            k = _join(prefix, f"{short}_proj_weight")
            if k in src:
                out[_join(prefix, f"{name}.weight")] = transpose(src.pop(k))
        k = _join(prefix, "in_proj_bias")
        if k in src:
            for name, part in zip(names, split_rows(src.pop(k), 3, f"{self.torch_module} {k!r}")):
                out[_join(prefix, f"{name}.bias")] = part
        for param in ("weight", "bias"):
            k = _join(prefix, f"out_proj.{param}")
            if k in src:
                t = src.pop(k)
                out[_join(prefix, f"output.{param}")] = transpose(t) if param == "weight" else t

    def to_torch(self, module: Any, prefix: str, emit: Emit) -> None:
        lins = (module.query, module.key, module.value)
        emit(_join(prefix, "in_proj_weight"), cat_rows([transpose(_data(lin.weight)) for lin in lins]))
        if all(lin.bias is not None for lin in lins):
            emit(_join(prefix, "in_proj_bias"), cat_rows([_data(lin.bias) for lin in lins]))
        emit(_join(prefix, "out_proj.weight"), transpose(_data(module.output.weight)))
        if module.output.bias is not None:
            emit(_join(prefix, "out_proj.bias"), _data(module.output.bias))


#: Ember layer class -> its rule (exact classes; subclasses inherit their base's rule via :func:`rule_for`).
RULES: dict[type, LayerRule] = {
    enn.Linear: LinearRule(),
    enn.BatchNorm: NormRule("torch.nn.BatchNorm1d/2d/3d", batch=True),
    enn.LayerNorm: NormRule("torch.nn.LayerNorm"),
    enn.GroupNorm: NormRule("torch.nn.GroupNorm"),
    enn.InstanceNorm: NormRule("torch.nn.InstanceNorm1d/2d/3d"),
    enn.RmsNorm: NormRule("torch.nn.RMSNorm", beta=False),
    enn.PRelu: PReluRule(),
    enn.Lstm: _LSTM,
    enn.Gru: _GRU,
    enn.BiLstm: BiLstmRule(),
    enn.StackedLstm: StackedLstmRule(),
    enn.MultiHeadAttention: MhaRule(),
}

#: Ember classes whose torch counterpart stacks layers as ``*_l{k}`` keys (``nn.LSTM(num_layers=k)``).
STACKED = (enn.Lstm, enn.Gru, enn.BiLstm)


def rule_for(module: Any) -> LayerRule | None:
    """The rule for ``module``'s class (or its nearest base with one), or None."""
    for cls in type(module).__mro__:
        r = RULES.get(cls)
        if r is not None:
            return r
    return None
