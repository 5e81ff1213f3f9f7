"""Layers that watch their input: what :meth:`Quantizer.prepare` puts in place (``torch.ao``'s ``prepare``
inserts observers after each input in the same spirit), and the quantization-aware layers of
:meth:`Quantizer.prepare_qat` (``torch.ao.nn.qat``).

An observer is a plain (not recorded) field: it keeps its range on the host and is updated in eager mode, each
forward. Run calibration batches through the prepared model (:func:`ember.quantization.calibrate`), then
:meth:`Quantizer.convert` it.
"""

from __future__ import annotations

from typing import Any

from .._quantization._fake import fake_quantize
from .._quantization._scheme import QuantScheme
from ..module import Module
from ..tensor import Tensor
from ._fake_layer import fake_weight, observer_qparams
from ._observers import Observer

__all__ = ["Observed", "FakeQuantized"]


def _observe(observer: Observer, x: Tensor) -> None:
    backend = x.device.backend
    if backend.is_concrete(x.inner().primitive):  # never inside a compiled (traced) step: no values to read
        observer.update(x.detach())


class Observed(Module):
    """``layer`` with an :class:`Observer` of its input (``forward`` observes ``x``, then returns ``layer(x)``:
    the numbers are the float layer's)."""

    layer: Any
    observer: Observer

    def forward(self, x: Tensor) -> Tensor:
        _observe(self.observer, x)
        return self.layer(x)


class FakeQuantized(Module):
    """``layer`` trained with fake quantization (quantization-aware training, ``torch.ao.nn.qat``): its float
    weight is quantized and dequantized each forward with qparams from the weight's current range, and its input
    with the range of an :class:`Observer` (moving average by default, as ``torch.ao``'s ``FakeQuantize``), both
    through :func:`~ember.quantization.fake_quantize` (the straight-through gradient: the gradient passes
    unchanged inside the range and is zero outside it). The input observer learns only on an autodiff device
    (training); after ``.valid()`` the range is frozen, so validation computes what :meth:`Quantizer.convert`'s
    model will (``torch.ao`` calls ``disable_observer`` for that). ``weight_scheme`` is the layer-resolved scheme of the
    weight as :meth:`Quantizer.weight_scheme` gives it; ``input_scheme`` ``None`` leaves the input in float
    (weight-only QAT).

    The model keeps its class, so ``train_step`` / ``valid_step`` and the Learner work unchanged; the optimizer
    updates the float weight (``layer``'s parameters).
    """

    layer: Any
    weight_scheme: QuantScheme
    input_scheme: QuantScheme | None = None
    observer: Observer | None = None

    def forward(self, x: Tensor) -> Tensor:
        if self.input_scheme is not None and self.observer is not None:
            if x.device.backend.is_autodiff:  # training: the range follows the data; after .valid() it is frozen
                _observe(self.observer, x)
            x = _fake_input(x, self.input_scheme, self.observer)
        return fake_weight(self.layer, self.weight_scheme)(x)


def _fake_input(x: Tensor, scheme: QuantScheme, observer: Observer) -> Tensor:
    if observer.min is None:  # inside a compiled step before any eager call: no range yet
        return x
    return fake_quantize(x, scheme, observer_qparams(observer, scheme, x.device))  # type: ignore[no-any-return]
