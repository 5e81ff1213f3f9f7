"""Fake-quantized forwards and observer qparams, shared by :mod:`._observed` (QAT, static calibration) and
:mod:`._quantizer` (which builds those layers): a float layer's forward on its fake-quantized weight, and the
:class:`QParams` of an observer's range."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from .._quantization._fake import fake_quantize
from .._quantization._range import compute_qparams, compute_range
from .._quantization._scheme import QParams, QuantScheme
from ..nn import Conv1d, Conv2d, Embedding, Linear
from ..tensor import Tensor
from ..tensor import functional as M
from ._observers import Observer

__all__ = ["CONVS", "fake_weight", "observer_qparams", "weight_matrix"]

#: the conv layers, whose weight ``[c_out, c_in / groups, *kernel]`` is quantized as the matrix ``[c_out, fan_in]``
CONVS = (Conv1d, Conv2d)


def observer_qparams(observer: Observer, scheme: QuantScheme, device: Any) -> QParams:
    """The :class:`QParams` of an observer's range under ``scheme`` (per-tensor: scales of shape ``[1]``)."""
    lo, hi = observer.range()
    shape = [1] if lo.ndim == 0 else list(lo.shape)
    dev = getattr(device, "inner", device)
    lo_t = Tensor.from_data(np.asarray(lo, dtype=np.float32).reshape(shape), dev)
    hi_t = Tensor.from_data(np.asarray(hi, dtype=np.float32).reshape(shape), dev)
    qp = compute_qparams(scheme, lo_t, hi_t)
    if dev is device:
        return qp  # type: ignore[no-any-return]
    zp = None if qp.zero_point is None else Tensor.from_inner(qp.zero_point, device)
    return QParams(Tensor.from_inner(qp.scale, device), zp)


def weight_matrix(layer: Any, w: Tensor) -> Tensor:
    """A conv weight ``[c_out, c_in / groups, *kernel]`` as ``[c_out, fan_in]``; others unchanged."""
    if isinstance(layer, CONVS):
        return w.reshape([w.shape[0], math.prod(w.shape[1:])])
    return w


def fake_weight(layer: Any, scheme: QuantScheme) -> Callable[[Tensor], Tensor]:
    """``layer``'s forward with its weight fake-quantized under ``scheme`` (qparams from the weight's current
    min-max, detached), the gradient reaching the float weight through the straight-through estimator."""
    w = layer.weight.val()
    m = weight_matrix(layer, w)
    qp = compute_qparams(scheme, *compute_range(scheme, m.detach()))
    wq = fake_quantize(m, scheme, qp)
    if wq is not m:
        wq = wq.reshape(list(w.shape))
    if isinstance(layer, Linear):
        return lambda x: Linear.forward(_with_weight(layer, wq), x)
    if isinstance(layer, Embedding):
        return lambda idx: M.embedding(wq, idx)
    return lambda x: type(layer).forward(_with_weight(layer, wq), x)


def _with_weight(layer: Any, w: Tensor) -> Any:
    return layer.replace(weight=_Val(w))


class _Val:
    """A stand-in Param whose ``val()`` is a computed (tracked) tensor: the float layer's forward then runs on the
    fake-quantized weight without marking it as a new gradient leaf."""

    __slots__ = ("_t",)

    def __init__(self, t: Tensor) -> None:
        self._t = t

    def val(self) -> Tensor:
        return self._t
